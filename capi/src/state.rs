//! Descriptor states and the live-descriptor registry, below [`crate::desc`] (set, get,
//! finalize, the exports) and [`crate::ops`] (the operation descriptors): the state types,
//! registering and looking descriptors up, and handing descriptors out through a caller's
//! array. See [`crate::desc`] for the rules common to every descriptor type.

use crate::abi::{dt, ty};
use crate::attr::{In, Out};
use crate::enums;
use crate::error::{Ffi, err, non_null};
use crate::handle::HandleObj;
use crate::registry::Registry;
use hipdnn::{DataType, Graph, TensorAttributes};
use hipdnn_backend::{Engine, ExecutionPlanDescriptor, OperationGraph, Status};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Opaque C type behind `hipdnnBackendDescriptor_t`.
#[repr(C)]
pub struct HipdnnBackendDescriptor {
    _private: [u8; 0],
}

/// A live descriptor.
pub struct DescObj {
    /// `hipdnnBackendDescriptorType_t` it was created with.
    pub dtype: i32,
    state: Mutex<Desc>,
}

impl DescObj {
    /// Locks the state (a poisoned lock is still consistent: states are replaced whole).
    pub fn lock(&self) -> MutexGuard<'_, Desc> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Live descriptors.
pub static DESCS: Registry<DescObj> = Registry::new();

/// The live descriptor at `d`.
///
/// # Errors
/// `BAD_PARAM_NULL_POINTER` for a null, foreign or destroyed descriptor.
pub fn desc(d: *const HipdnnBackendDescriptor) -> Ffi<Arc<DescObj>> {
    non_null(d, "the descriptor")?;
    DESCS.get(d as usize).ok_or_else(|| {
        err(
            Status::BadParamNullPointer,
            format!("descriptor {d:p} is not a live hipdnnBackendDescriptor_t"),
        )
    })
}

/// Registers a new descriptor with `state` and returns its address.
pub fn register(dtype: i32, state: Desc) -> usize {
    DESCS.insert(Arc::new(DescObj {
        dtype,
        state: Mutex::new(state),
    }))
}

/// A finalized operation graph: the SDK graph, its serialized bytes, the backend's verified
/// operation graph, and the handle it belongs to (if one was set).
pub struct FinalGraph {
    /// The handle (HANDLE attribute).
    pub handle: Arc<HandleObj>,
    /// The SDK graph.
    pub graph: Graph,
    /// Serialized `Graph` FlatBuffer (for a deserialized graph, the bytes it came from).
    pub bytes: Vec<u8>,
    /// The backend's view.
    pub op: OperationGraph,
}

/// A finalized operation descriptor.
#[derive(Clone)]
pub struct OpData {
    /// Descriptor type (which operation).
    pub dtype: i32,
    /// Attribute values by attribute name.
    pub attrs: HashMap<i32, Val>,
}

/// A stored attribute value of an operation descriptor.
#[derive(Clone)]
pub enum Val {
    /// A finalized tensor.
    Tensor(Arc<TensorAttributes>),
    /// Finalized tensors (peer statistics).
    Tensors(Vec<Arc<TensorAttributes>>),
    /// INT64 array.
    I64s(Vec<i64>),
    /// BOOLEAN.
    Bool(bool),
    /// FLOAT/DOUBLE.
    F64(f64),
    /// A C enum value (already checked to be an enumerator).
    Enum(i32),
    /// A data type (schema numbering).
    Data(DataType),
    /// Text.
    Text(String),
}

/// Engine data of a finalized ENGINE descriptor.
pub struct EngineData {
    /// The graph it was created for.
    pub graph: Arc<FinalGraph>,
    /// The engine id (GLOBAL_INDEX).
    pub id: i64,
    /// The engine.
    pub engine: Arc<dyn Engine>,
}

/// A finalized engine config.
pub struct CfgData {
    /// The engine.
    pub engine: Arc<EngineData>,
    /// Knob choices `(type, value)`.
    pub knobs: Vec<(i64, i64)>,
}

/// A finalized plan.
pub struct FinalPlan {
    /// The backend plan.
    pub plan: Arc<ExecutionPlanDescriptor>,
    /// The graph it was built from (`None` for a plan loaded from bytes).
    pub graph: Option<Arc<FinalGraph>>,
    /// The config it was built from (`None` for a loaded plan).
    pub cfg: Option<Arc<CfgData>>,
}

/// The state of a descriptor, by type.
pub enum Desc {
    /// TENSOR.
    Tensor {
        /// Attributes being set.
        t: TensorAttributes,
        /// VALUE_EXT as given (raw scalar bytes of the tensor's data type), converted at
        /// finalize.
        raw: Option<Vec<u8>>,
        /// Finalized snapshot.
        fin: Option<Arc<TensorAttributes>>,
    },
    /// An operation descriptor.
    Op {
        /// Attributes being set.
        attrs: HashMap<i32, Val>,
        /// Finalized snapshot.
        fin: Option<Arc<OpData>>,
    },
    /// OPERATIONGRAPH.
    Graph(Box<GraphDesc>),
    /// ENGINEHEUR.
    Heur {
        /// Graph.
        graph: Option<Arc<FinalGraph>>,
        /// Ranked engine ids after finalize.
        fin: Option<Vec<i64>>,
    },
    /// ENGINE.
    Engine {
        /// Graph.
        graph: Option<Arc<FinalGraph>>,
        /// GLOBAL_INDEX.
        id: Option<i64>,
        /// Finalized.
        fin: Option<Arc<EngineData>>,
    },
    /// ENGINECFG.
    Cfg {
        /// ENGINE.
        engine: Option<Arc<EngineData>>,
        /// KNOB_CHOICES.
        knobs: Vec<(i64, i64)>,
        /// Finalized.
        fin: Option<Arc<CfgData>>,
    },
    /// KNOB_CHOICE.
    KnobChoice {
        /// KNOB_TYPE.
        knob_type: Option<i64>,
        /// KNOB_VALUE.
        value: Option<i64>,
        /// Finalized.
        fin: bool,
    },
    /// KNOB_INFO (filled by ENGINE_KNOB_INFO).
    KnobInfo {
        /// The knob.
        info: Option<hipdnn_backend::KnobInfo>,
        /// Finalized.
        fin: bool,
    },
    /// EXECUTION_PLAN.
    Plan {
        /// HANDLE.
        handle: Option<Arc<HandleObj>>,
        /// ENGINE_CONFIG.
        cfg: Option<Arc<CfgData>>,
        /// Finalized.
        fin: Option<Arc<FinalPlan>>,
    },
    /// VARIANT_PACK.
    Pack {
        /// UNIQUE_IDS.
        uids: Vec<i64>,
        /// DATA_POINTERS.
        ptrs: Vec<usize>,
        /// WORKSPACE.
        workspace: usize,
        /// Shape overrides (RFC 0008): OVERRIDE_UNIQUE_IDS_EXT, OVERRIDE_SHAPES_EXT (flat),
        /// OVERRIDE_STRIDES_EXT (flat), OVERRIDE_LENGTHS_EXT (rank per UID).
        overrides: OverrideAttrs,
        /// Finalized.
        fin: bool,
    },
}

/// OPERATIONGRAPH state.
#[derive(Default)]
pub struct GraphDesc {
    /// HANDLE.
    pub handle: Option<Arc<HandleObj>>,
    /// OPS.
    pub ops: Vec<Arc<OpData>>,
    /// A deserialized graph and the bytes it came from.
    pub loaded: Option<(Graph, Vec<u8>)>,
    /// NAME_EXT.
    pub name: Option<String>,
    /// COMPUTE_DATA_TYPE_EXT.
    pub compute: Option<DataType>,
    /// INTERMEDIATE_DATA_TYPE_EXT.
    pub intermediate: Option<DataType>,
    /// IO_DATA_TYPE_EXT.
    pub io: Option<DataType>,
    /// PREFERRED_ENGINE_ID_EXT.
    pub preferred: Option<i64>,
    /// IS_OVERRIDE_SHAPE_ENABLED_EXT.
    pub override_shape: Option<bool>,
    /// Finalized.
    pub fin: Option<Arc<FinalGraph>>,
}

/// Upstream's name of a descriptor type, for messages.
pub fn type_name(t: i32) -> &'static str {
    const NAMES: [&str; 39] = [
        "INVALID_TYPE_EXT",
        "ENGINE",
        "ENGINECFG",
        "ENGINEHEUR",
        "EXECUTION_PLAN",
        "INTERMEDIATE_INFO",
        "KNOB_CHOICE",
        "KNOB_INFO",
        "LAYOUT_INFO",
        "OPERATION_GEN_STATS",
        "OPERATIONGRAPH",
        "VARIANT_PACK",
        "KERNEL_CACHE",
        "OPERATION_PAGED_CACHE_LOAD",
        "TENSOR",
        "OPERATION_CONVOLUTION_FORWARD",
        "OPERATION_CONVOLUTION_BACKWARD_FILTER",
        "OPERATION_BATCHNORM_INFERENCE",
        "OPERATION_POINTWISE",
        "OPERATION_CONVOLUTION_BACKWARD_DATA",
        "OPERATION_BATCHNORM_BACKWARD",
        "OPERATION_BATCHNORM_INFERENCE_VARIANCE",
        "OPERATION_MATMUL",
        "OPERATION_RMSNORM",
        "OPERATION_SDPA_FWD",
        "OPERATION_LAYERNORM",
        "OPERATION_BLOCK_SCALE_QUANTIZE",
        "OPERATION_BATCHNORM",
        "OPERATION_BLOCK_SCALE_DEQUANTIZE",
        "OPERATION_CUSTOM_OP",
        "OPERATION_SDPA_BWD",
        "OPERATION_REDUCTION",
        "OPERATION_RESAMPLE_FWD",
        "OPERATION_RMSNORM_BACKWARD",
        "PROFILING_CONTROL_EXT",
        "OPERATION_LAYERNORM_BACKWARD",
        "OPERATION_RESAMPLE_BWD",
        "OPERATION_MOE_GROUPED_MATMUL",
        "OPERATION_MOE_GROUPED_MATMUL_BWD",
    ];
    usize::try_from(t)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("unknown")
}
/// The referenced descriptor at `addr`, checked for type `want` (BAD_PARAM) and finalization
/// (BAD_PARAM_NOT_FINALIZED), and `pick` applied to its state.
pub(crate) fn referenced<T>(
    addr: usize,
    want: i32,
    pick: impl FnOnce(&Desc) -> Option<T>,
) -> Ffi<T> {
    let d = desc(addr as *const HipdnnBackendDescriptor)?;
    if d.dtype != want {
        return Err(err(
            Status::BadParam,
            format!(
                "descriptor of type {} given where {} is expected",
                type_name(d.dtype),
                type_name(want)
            ),
        ));
    }
    let s = d.lock();
    pick(&s).ok_or_else(|| {
        err(
            Status::BadParamNotFinalized,
            format!("the {} descriptor is not finalized", type_name(want)),
        )
    })
}

/// The finalized OPERATIONGRAPH at `addr` (see [`referenced`]).
pub(crate) fn final_graph(addr: usize) -> Ffi<Arc<FinalGraph>> {
    referenced(addr, dt::OPERATIONGRAPH, |s| match s {
        Desc::Graph(g) => g.fin.clone(),
        _ => None,
    })
}

/// The finalized TENSOR at `addr` (see [`referenced`]).
pub(crate) fn final_tensor(addr: usize) -> Ffi<Arc<TensorAttributes>> {
    referenced(addr, dt::TENSOR, |s| match s {
        Desc::Tensor { fin, .. } => fin.clone(),
        _ => None,
    })
}

/// Replaces the state of the caller-created descriptor at `addr` (type `want`) with `state`:
/// how GetAttribute hands out descriptors (the caller creates them, we fill them).
pub(crate) fn fill(addr: usize, want: i32, state: Desc) -> Ffi {
    let d = desc(addr as *const HipdnnBackendDescriptor)?;
    if d.dtype != want {
        return Err(err(
            Status::BadParam,
            format!(
                "descriptor of type {} given to be filled as {}",
                type_name(d.dtype),
                type_name(want)
            ),
        ));
    }
    *d.lock() = state;
    Ok(())
}

/// A DATA_TYPE value in (BAD_PARAM for a number that is not a `hipdnnDataType_t`).
pub(crate) fn data_type_in(v: &In) -> Ffi<DataType> {
    let c = v.enum32(ty::DATA_TYPE)?;
    enums::data_type_from_c(c).ok_or_else(|| {
        err(
            Status::BadParam,
            format!("attribute {}: {c} is not a hipdnnDataType_t", v.name),
        )
    })
}

/// A DATA_TYPE value out (a never-set type answers a count of 0).
pub(crate) fn data_type_out(o: &Out, d: DataType) -> Ffi {
    match enums::data_type_to_c(d) {
        Some(c) => o.put(ty::DATA_TYPE, &[c]),
        // Never-set data type: answers a count of 0 (as upstream).
        None => o.put::<i32>(ty::DATA_TYPE, &[]),
    }
}

/// Hands out a descriptor of type `want` holding `state` through the caller's array slot:
/// a null slot receives a new descriptor (owned by the caller, released with
/// `hipdnnBackendDestroyDescriptor`); a non-null slot must be a caller-created descriptor of
/// type `want`, which is filled.
///
/// # Safety
/// `slot` must be valid for a read and a write.
pub(crate) unsafe fn fill_slot(slot: *mut usize, want: i32, state: Desc) -> Ffi {
    // SAFETY: caller contract.
    let cur = unsafe { *slot };
    if cur == 0 {
        let addr = register(want, state);
        // SAFETY: caller contract.
        unsafe { *slot = addr };
        Ok(())
    } else {
        fill(cur, want, state)
    }
}

/// Hands out the finalized tensor `t` through the caller's array slot (see [`fill_slot`]).
///
/// # Safety
/// `slot` must be valid for a read and a write.
pub(crate) unsafe fn dt_fill_tensor(slot: *mut usize, t: &Arc<TensorAttributes>) -> Ffi {
    // SAFETY: caller contract.
    unsafe {
        fill_slot(
            slot,
            dt::TENSOR,
            Desc::Tensor {
                t: t.as_ref().clone(),
                raw: None,
                fin: Some(t.clone()),
            },
        )
    }
}

/// The shape-override attributes of a variant pack, as set (checked at execute).
#[derive(Debug, Default, Clone)]
pub struct OverrideAttrs {
    /// `VARIANT_PACK_OVERRIDE_UNIQUE_IDS_EXT`.
    pub uids: Vec<i64>,
    /// `VARIANT_PACK_OVERRIDE_SHAPES_EXT`: every UID's dims, concatenated.
    pub shapes: Vec<i64>,
    /// `VARIANT_PACK_OVERRIDE_STRIDES_EXT`: every UID's strides, concatenated.
    pub strides: Vec<i64>,
    /// `VARIANT_PACK_OVERRIDE_LENGTHS_EXT`: each UID's rank, parallel to `uids`.
    pub lengths: Vec<i64>,
}
