//! Backend descriptors: create, destroy, set/get attribute, finalize, and execute.
//!
//! A descriptor is a [`crate::state::DescObj`] in the [`DESCS`] registry: its C
//! type number and its state behind a mutex. References between descriptors (an op's
//! tensors, a graph's ops, a plan's engine config, …) are taken as **snapshots of finalized
//! descriptors** when set, as upstream's shared pointers to finalized objects: later changes
//! to the referenced descriptor do not reach the referrer, and destroying it does not
//! invalidate the referrer. So no two descriptor locks are ever held at once.
//!
//! Rules common to every type: a set after finalize → NOT_INITIALIZED; a get before finalize
//! (where the value is produced by finalize) → NOT_INITIALIZED; a second finalize → BAD_PARAM;
//! a referenced descriptor of the wrong type → BAD_PARAM, not finalized →
//! BAD_PARAM_NOT_FINALIZED; any attribute or descriptor type not listed in docs/c-api.md →
//! NOT_SUPPORTED naming it.

use crate::abi::{self, dt, ty};
use crate::attr::{In, Out};
use crate::error::{Ffi, entry, err, non_null};
use crate::handle::{HipdnnHandle, handle};
use crate::state::{
    CfgData, DESCS, Desc, EngineData, FinalGraph, FinalPlan, GraphDesc, HipdnnBackendDescriptor,
    OpData, OverrideAttrs, Val, data_type_in, data_type_out, desc, fill, fill_slot, final_graph,
    referenced, register, type_name,
};
use hipdnn::{DataType, Graph, TensorAttributes, TensorId};
use hipdnn_backend::{
    BufferRef, EngineConfig, ExecutionPlanDescriptor, HeuristicMode, OperationGraph, ShapeOverride,
    Status, VariantPackDescriptor, tensor_size,
};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

fn is_op(t: i32) -> bool {
    dt::OPS.contains(&t)
}

/// A fresh state for a descriptor of type `t`.
///
/// # Errors
/// NOT_SUPPORTED naming the type for every type not implemented (docs/c-api.md).
pub fn new_state(t: i32) -> Ffi<Desc> {
    Ok(match t {
        dt::TENSOR => Desc::Tensor {
            t: TensorAttributes::default(),
            raw: None,
            fin: None,
        },
        _ if is_op(t) => Desc::Op {
            attrs: HashMap::new(),
            fin: None,
        },
        dt::OPERATIONGRAPH => Desc::Graph(Box::default()),
        dt::ENGINEHEUR => Desc::Heur {
            graph: None,
            fin: None,
        },
        dt::ENGINE => Desc::Engine {
            graph: None,
            id: None,
            fin: None,
        },
        dt::ENGINECFG => Desc::Cfg {
            engine: None,
            knobs: vec![],
            fin: None,
        },
        dt::KNOB_CHOICE => Desc::KnobChoice {
            knob_type: None,
            value: None,
            fin: false,
        },
        dt::KNOB_INFO => Desc::KnobInfo {
            info: None,
            fin: false,
        },
        dt::EXECUTION_PLAN => Desc::Plan {
            handle: None,
            cfg: None,
            fin: None,
        },
        dt::VARIANT_PACK => Desc::Pack {
            uids: vec![],
            ptrs: vec![],
            workspace: 0,
            overrides: Default::default(),
            fin: false,
        },
        _ => {
            return Err(err(
                Status::NotSupported,
                format!(
                    "descriptor type {t} ({}) is not supported by hipdnn-rs",
                    type_name(t)
                ),
            ));
        }
    })
}

fn is_finalized(d: &Desc) -> bool {
    match d {
        Desc::Tensor { fin, .. } => fin.is_some(),
        Desc::Op { fin, .. } => fin.is_some(),
        Desc::Graph(g) => g.fin.is_some(),
        Desc::Heur { fin, .. } => fin.is_some(),
        Desc::Engine { fin, .. } => fin.is_some(),
        Desc::Cfg { fin, .. } => fin.is_some(),
        Desc::KnobChoice { fin, .. } | Desc::KnobInfo { fin, .. } | Desc::Pack { fin, .. } => *fin,
        Desc::Plan { fin, .. } => fin.is_some(),
    }
}

fn finalized_error(t: i32) -> crate::error::BackendErrorAlias {
    err(
        Status::NotInitialized,
        format!(
            "the {} descriptor is finalized; it cannot change",
            type_name(t)
        ),
    )
}

fn not_finalized_error(t: i32) -> crate::error::BackendErrorAlias {
    err(
        Status::NotInitialized,
        format!("the {} descriptor is not finalized", type_name(t)),
    )
}

// ---------------------------------------------------------------- set

fn set(dtype: i32, s: &mut Desc, v: &In) -> Ffi {
    if is_finalized(s) {
        return Err(finalized_error(dtype));
    }
    let what = type_name(dtype);
    match s {
        Desc::Tensor { t, raw, .. } => match v.name {
            abi::TENSOR_UNIQUE_ID => t.uid = Some(v.i64()?),
            abi::TENSOR_VALUE_EXT => *raw = Some(v.bytes(ty::CHAR)?),
            abi::TENSOR_NAME_EXT => t.name = v.text()?,
            abi::TENSOR_DATA_TYPE => t.data_type = data_type_in(v)?,
            abi::TENSOR_DIMENSIONS => t.dims = v.i64s()?,
            abi::TENSOR_STRIDES => t.strides = v.i64s()?,
            abi::TENSOR_IS_VIRTUAL => t.is_virtual = v.bool()?,
            abi::TENSOR_IS_RUNTIME_PASS_BY_VALUE_EXT => t.is_runtime_pass_by_value = v.bool()?,
            abi::TENSOR_BYTE_ALIGNMENT => t.alignment = v.i64()?,
            _ => return Err(v.unsupported(what)),
        },
        Desc::Op { attrs, .. } => {
            let val = crate::ops::value(dtype, v)?;
            attrs.insert(v.name, val);
        }
        Desc::Graph(g) => {
            if g.loaded.is_some() && v.name != abi::OPERATIONGRAPH_HANDLE {
                return Err(err(
                    Status::NotSupported,
                    format!(
                        "attribute {} cannot be set on a deserialized OPERATIONGRAPH (only HANDLE)",
                        v.name
                    ),
                ));
            }
            match v.name {
                abi::OPERATIONGRAPH_HANDLE => {
                    let h = v.ptr(ty::HANDLE)?;
                    g.handle = Some(handle(h as *const HipdnnHandle)?);
                }
                abi::OPERATIONGRAPH_OPS => {
                    let ptrs = v.ptrs(ty::BACKEND_DESCRIPTOR)?;
                    let mut ops = Vec::with_capacity(ptrs.len());
                    for p in ptrs {
                        let d = desc(p as *const HipdnnBackendDescriptor)?;
                        if !is_op(d.dtype) {
                            return Err(err(
                                Status::BadParam,
                                format!(
                                    "OPS: descriptor of type {} is not an operation",
                                    type_name(d.dtype)
                                ),
                            ));
                        }
                        let s = d.lock();
                        let Desc::Op { fin: Some(f), .. } = &*s else {
                            return Err(err(
                                Status::BadParamNotFinalized,
                                format!(
                                    "OPS: the {} descriptor is not finalized",
                                    type_name(d.dtype)
                                ),
                            ));
                        };
                        ops.push(f.clone());
                    }
                    g.ops = ops;
                }
                abi::OPERATIONGRAPH_COMPUTE_DATA_TYPE_EXT => g.compute = Some(data_type_in(v)?),
                abi::OPERATIONGRAPH_INTERMEDIATE_DATA_TYPE_EXT => {
                    g.intermediate = Some(data_type_in(v)?)
                }
                abi::OPERATIONGRAPH_IO_DATA_TYPE_EXT => g.io = Some(data_type_in(v)?),
                abi::OPERATIONGRAPH_PREFERRED_ENGINE_ID_EXT => g.preferred = Some(v.i64()?),
                abi::OPERATIONGRAPH_NAME_EXT => g.name = Some(v.text()?),
                abi::OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED_EXT => {
                    g.override_shape = Some(v.bool()?)
                }
                _ => return Err(v.unsupported(what)),
            }
        }
        Desc::Heur { graph, .. } => match v.name {
            abi::ENGINEHEUR_MODE => {
                let m = v.enum32(ty::HEUR_MODE)?;
                if m != 0 {
                    return Err(err(
                        Status::BadParam,
                        format!("heuristic mode {m} is not a hipdnnBackendHeurMode_t"),
                    ));
                }
            }
            abi::ENGINEHEUR_OPERATION_GRAPH => {
                *graph = Some(final_graph(v.ptr(ty::BACKEND_DESCRIPTOR)?)?)
            }
            _ => return Err(v.unsupported(what)),
        },
        Desc::Engine { graph, id, .. } => match v.name {
            abi::ENGINE_OPERATION_GRAPH => {
                *graph = Some(final_graph(v.ptr(ty::BACKEND_DESCRIPTOR)?)?)
            }
            abi::ENGINE_GLOBAL_INDEX => *id = Some(v.i64()?),
            _ => return Err(v.unsupported(what)),
        },
        Desc::Cfg { engine, knobs, .. } => match v.name {
            abi::ENGINECFG_ENGINE => {
                *engine = Some(referenced(
                    v.ptr(ty::BACKEND_DESCRIPTOR)?,
                    dt::ENGINE,
                    |s| match s {
                        Desc::Engine { fin, .. } => fin.clone(),
                        _ => None,
                    },
                )?)
            }
            abi::ENGINECFG_KNOB_CHOICES => {
                let mut k = Vec::new();
                for p in v.ptrs(ty::BACKEND_DESCRIPTOR)? {
                    k.push(referenced(p, dt::KNOB_CHOICE, |s| match s {
                        Desc::KnobChoice {
                            knob_type: Some(t),
                            value: Some(x),
                            fin: true,
                        } => Some((*t, *x)),
                        _ => None,
                    })?);
                }
                *knobs = k;
            }
            _ => return Err(v.unsupported(what)),
        },
        Desc::KnobChoice {
            knob_type, value, ..
        } => match v.name {
            abi::KNOB_CHOICE_KNOB_TYPE => *knob_type = Some(i64::from(v.enum32(ty::KNOB_TYPE)?)),
            abi::KNOB_CHOICE_KNOB_VALUE => *value = Some(v.i64()?),
            _ => return Err(v.unsupported(what)),
        },
        Desc::KnobInfo { .. } => return Err(v.unsupported(what)),
        Desc::Plan { handle: h, cfg, .. } => match v.name {
            abi::EXECUTION_PLAN_HANDLE => {
                let p = v.ptr(ty::HANDLE)?;
                *h = Some(handle(p as *const HipdnnHandle)?);
            }
            abi::EXECUTION_PLAN_ENGINE_CONFIG => {
                *cfg = Some(referenced(
                    v.ptr(ty::BACKEND_DESCRIPTOR)?,
                    dt::ENGINECFG,
                    |s| match s {
                        Desc::Cfg { fin, .. } => fin.clone(),
                        _ => None,
                    },
                )?)
            }
            _ => return Err(v.unsupported(what)),
        },
        Desc::Pack {
            uids,
            ptrs,
            workspace,
            overrides,
            ..
        } => match v.name {
            abi::VARIANT_PACK_UNIQUE_IDS => *uids = v.i64s()?,
            abi::VARIANT_PACK_DATA_POINTERS => *ptrs = v.ptrs(ty::VOID_PTR)?,
            abi::VARIANT_PACK_WORKSPACE => *workspace = v.ptr(ty::VOID_PTR)?,
            abi::VARIANT_PACK_OVERRIDE_UNIQUE_IDS_EXT => overrides.uids = v.i64s()?,
            abi::VARIANT_PACK_OVERRIDE_SHAPES_EXT => overrides.shapes = v.i64s()?,
            abi::VARIANT_PACK_OVERRIDE_STRIDES_EXT => overrides.strides = v.i64s()?,
            abi::VARIANT_PACK_OVERRIDE_LENGTHS_EXT => overrides.lengths = v.i64s()?,
            _ => return Err(v.unsupported(what)),
        },
    }
    Ok(())
}

// ---------------------------------------------------------------- finalize

fn finalize(dtype: i32, s: &mut Desc) -> Ffi {
    if is_finalized(s) {
        return Err(err(
            Status::BadParam,
            format!("the {} descriptor is already finalized", type_name(dtype)),
        ));
    }
    match s {
        Desc::Tensor { t, raw, fin } => {
            if let Some(b) = raw {
                t.value = Some(crate::value::from_bytes(t.data_type, b)?);
            }
            if t.uid.is_none() {
                return Err(err(Status::BadParam, "TENSOR: UNIQUE_ID is not set"));
            }
            if t.dims.is_empty() || t.dims.len() != t.strides.len() {
                return Err(err(
                    Status::BadParam,
                    format!(
                        "TENSOR: {} dimensions and {} strides (both needed, equal counts)",
                        t.dims.len(),
                        t.strides.len()
                    ),
                ));
            }
            if t.data_type == DataType::Unset {
                return Err(err(Status::BadParam, "TENSOR: DATA_TYPE is not set"));
            }
            *fin = Some(Arc::new(t.clone()));
        }
        Desc::Op { attrs, fin } => {
            if let Some(m) = abi::required_on(dtype).find(|a| !attrs.contains_key(a)) {
                return Err(err(
                    Status::BadParam,
                    format!("{}: attribute {m} is not set", type_name(dtype)),
                ));
            }
            *fin = Some(Arc::new(OpData {
                dtype,
                attrs: attrs.clone(),
            }));
        }
        Desc::Graph(g) => {
            let h = g
                .handle
                .clone()
                .ok_or_else(|| err(Status::BadParam, "OPERATIONGRAPH: HANDLE is not set"))?;
            let (graph, bytes) = graph_and_bytes(g, true)?;
            let op = OperationGraph::from_bytes(&bytes)?;
            g.fin = Some(Arc::new(FinalGraph {
                handle: h,
                graph,
                bytes,
                op,
            }));
        }
        Desc::Heur { graph, fin } => {
            let g = graph
                .clone()
                .ok_or_else(|| err(Status::BadParam, "ENGINEHEUR: OPERATION_GRAPH is not set"))?;
            let sdk = g.handle.sdk.read().unwrap_or_else(|p| p.into_inner());
            let mut ids: Vec<i64> = sdk
                .backend()
                .engine_configs(&g.op, HeuristicMode::Fallback)?
                .into_iter()
                .map(|c| c.engine_id)
                .collect();
            if let Some(rank) = g
                .handle
                .rankings
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&g.bytes)
            {
                ids.sort_by_key(|id| rank.iter().position(|r| r == id).unwrap_or(usize::MAX));
            }
            *fin = Some(ids);
        }
        Desc::Engine { graph, id, fin } => {
            let g = graph
                .clone()
                .ok_or_else(|| err(Status::BadParam, "ENGINE: OPERATION_GRAPH is not set"))?;
            let id = id.ok_or_else(|| err(Status::BadParam, "ENGINE: GLOBAL_INDEX is not set"))?;
            let engine = {
                let sdk = g.handle.sdk.read().unwrap_or_else(|p| p.into_inner());
                sdk.backend().engine(id).cloned().ok_or_else(|| {
                    err(
                        Status::NotSupported,
                        format!("ENGINE: no engine has global index {id}"),
                    )
                })?
            };
            engine.check_applicable(&g.op).map_err(|e| {
                err(
                    Status::NotSupported,
                    format!(
                        "ENGINE: engine {} does not support the graph: {}",
                        engine.name(),
                        e.message
                    ),
                )
            })?;
            *fin = Some(Arc::new(EngineData {
                graph: g,
                id,
                engine,
            }));
        }
        Desc::Cfg { engine, knobs, fin } => {
            let e = engine
                .clone()
                .ok_or_else(|| err(Status::BadParam, "ENGINECFG: ENGINE is not set"))?;
            *fin = Some(Arc::new(CfgData {
                engine: e,
                knobs: knobs.clone(),
            }));
        }
        Desc::KnobChoice {
            knob_type,
            value,
            fin,
        } => {
            if knob_type.is_none() || value.is_none() {
                return Err(err(
                    Status::BadParam,
                    "KNOB_CHOICE: KNOB_TYPE and KNOB_VALUE must be set",
                ));
            }
            *fin = true;
        }
        Desc::KnobInfo { info, fin } => {
            if info.is_none() {
                return Err(err(
                    Status::BadParam,
                    "KNOB_INFO is filled by ENGINE_KNOB_INFO, not finalized by the caller",
                ));
            }
            *fin = true;
        }
        Desc::Plan {
            handle: h,
            cfg,
            fin,
        } => {
            let c = cfg
                .clone()
                .ok_or_else(|| err(Status::BadParam, "EXECUTION_PLAN: ENGINE_CONFIG is not set"))?;
            let g = c.engine.graph.clone();
            let h = h.clone().unwrap_or_else(|| g.handle.clone());
            let sdk = h.sdk.read().unwrap_or_else(|p| p.into_inner());
            let plan = ExecutionPlanDescriptor::finalize(
                sdk.backend(),
                &EngineConfig {
                    engine_id: c.engine.id,
                    knob_choices: c.knobs.clone(),
                },
                &g.op,
            )?;
            *fin = Some(Arc::new(FinalPlan {
                plan: Arc::new(plan),
                graph: Some(g),
                cfg: Some(c),
            }));
        }
        Desc::Pack {
            uids, ptrs, fin, ..
        } => {
            if uids.len() != ptrs.len() {
                return Err(err(
                    Status::BadParam,
                    format!(
                        "VARIANT_PACK: {} unique ids but {} data pointers",
                        uids.len(),
                        ptrs.len()
                    ),
                ));
            }
            *fin = true;
        }
    }
    Ok(())
}

fn sdk_error(e: hipdnn::Error) -> crate::error::BackendErrorAlias {
    match e.cause.as_deref() {
        Some(hipdnn::Cause::Backend(b)) => err(b.status, e.message),
        _ => err(Status::BadParam, e.to_string()),
    }
}

/// The SDK graph and serialized bytes of an OPERATIONGRAPH: its finalized form, else the
/// deserialized graph and its original bytes, else a graph assembled from OPS (validated when
/// `validate`).
pub fn graph_and_bytes(g: &GraphDesc, validate: bool) -> Ffi<(Graph, Vec<u8>)> {
    if let Some(f) = &g.fin {
        return Ok((f.graph.clone(), f.bytes.clone()));
    }
    if let Some((graph, bytes)) = &g.loaded {
        return Ok((graph.clone(), bytes.clone()));
    }
    let graph = build_graph(g)?;
    if validate {
        graph.validate().map_err(sdk_error)?;
    }
    let bytes = graph.to_graph_bytes().map_err(sdk_error)?;
    Ok((graph, bytes))
}

fn build_graph(gd: &GraphDesc) -> Ffi<Graph> {
    if gd.ops.is_empty() {
        return Err(err(Status::BadParam, "OPERATIONGRAPH: OPS is not set"));
    }
    let mut g = Graph::new();
    if let Some(n) = &gd.name {
        g.set_name(n.clone());
    }
    let first_compute = gd.ops.iter().find_map(|o| {
        o.attrs.values().find_map(|v| match v {
            Val::Data(d) => Some(*d),
            _ => None,
        })
    });
    if let Some(c) = gd.compute.or(first_compute) {
        g.set_compute_data_type(c);
    }
    if let Some(t) = gd.intermediate {
        g.set_intermediate_data_type(t);
    }
    if let Some(t) = gd.io {
        g.set_io_data_type(t);
    }
    g.set_preferred_engine_id(gd.preferred);
    if let Some(o) = gd.override_shape {
        g.set_override_shape_enabled(o);
    }
    let mut by_uid: HashMap<i64, TensorId> = HashMap::new();
    let mut tid = |g: &mut Graph, t: &Arc<TensorAttributes>| -> Ffi<TensorId> {
        let uid = t.uid.unwrap_or_default();
        if let Some(id) = by_uid.get(&uid) {
            if g.tensor_attributes(*id) != t.as_ref() {
                return Err(err(
                    Status::BadParam,
                    format!("two different TENSOR descriptors share unique id {uid}"),
                ));
            }
            return Ok(*id);
        }
        let id = g.tensor(t.as_ref().clone());
        by_uid.insert(uid, id);
        Ok(id)
    };
    for op in &gd.ops {
        crate::ops::add_node(&mut g, op.dtype, &op.attrs, &mut tid)?;
    }
    Ok(g)
}

// ---------------------------------------------------------------- get

fn get(dtype: i32, s: &Desc, o: &Out) -> Ffi {
    let what = type_name(dtype);
    match s {
        Desc::Tensor { t, fin, .. } => {
            let t = fin.as_deref().unwrap_or(t);
            match o.name {
                abi::TENSOR_VALUE_EXT => match t.value {
                    Some(v) => o.put(ty::CHAR, &crate::value::to_bytes(v)),
                    None => o.put::<u8>(ty::CHAR, &[]),
                },
                abi::TENSOR_UNIQUE_ID => o.put(ty::INT64, &[t.uid.unwrap_or_default()]),
                abi::TENSOR_NAME_EXT => o.put_text(&t.name),
                abi::TENSOR_DATA_TYPE => data_type_out(o, t.data_type),
                abi::TENSOR_DIMENSIONS => o.put(ty::INT64, &t.dims),
                abi::TENSOR_STRIDES => o.put(ty::INT64, &t.strides),
                abi::TENSOR_IS_VIRTUAL => o.put(ty::BOOLEAN, &[u8::from(t.is_virtual)]),
                abi::TENSOR_IS_BY_VALUE => o.put(ty::BOOLEAN, &[u8::from(t.value.is_some())]),
                abi::TENSOR_IS_RUNTIME_PASS_BY_VALUE_EXT => {
                    o.put(ty::BOOLEAN, &[u8::from(t.is_runtime_pass_by_value)])
                }
                abi::TENSOR_BYTE_ALIGNMENT => o.put(ty::INT64, &[t.alignment]),
                _ => Err(o.unsupported(what)),
            }
        }
        Desc::Op { attrs, fin } => {
            let attrs = fin.as_ref().map_or(attrs, |f| &f.attrs);
            crate::ops::get(dtype, attrs, o)
        }
        Desc::Graph(g) => {
            match o.name {
                abi::OPERATIONGRAPH_HANDLE => {
                    let h = g.handle.as_ref().ok_or_else(|| {
                        err(Status::BadParam, "OPERATIONGRAPH: HANDLE is not set")
                    })?;
                    o.put(ty::HANDLE, &[Arc::as_ptr(h) as usize])
                }
                abi::OPERATIONGRAPH_OPS => {
                    let (graph, _) = graph_and_bytes(g, false)?;
                    let ops = graph
                        .nodes()
                        .map(|(_, n)| crate::ops::from_node(&graph, n))
                        .collect::<Ffi<Vec<_>>>()?;
                    if o.begin(ty::BACKEND_DESCRIPTOR, ops.len())?.is_some() {
                        for (i, (t, attrs)) in ops.into_iter().enumerate() {
                            let fin = Some(Arc::new(OpData {
                                dtype: t,
                                attrs: attrs.clone(),
                            }));
                            // SAFETY: the caller's array holds `requested >= ops.len()` slots.
                            unsafe {
                                fill_slot((o.ptr as *mut usize).add(i), t, Desc::Op { attrs, fin })?
                            };
                        }
                        if !o.count.is_null() {
                            // SAFETY: non-null, valid for a write.
                            unsafe { *o.count = graph.node_count() as i64 };
                        }
                    }
                    Ok(())
                }
                abi::OPERATIONGRAPH_ENGINE_GLOBAL_COUNT => {
                    let h = g.handle.clone().ok_or_else(|| {
                        err(Status::BadParam, "OPERATIONGRAPH: HANDLE is not set")
                    })?;
                    let n = h
                        .sdk
                        .read()
                        .unwrap_or_else(|p| p.into_inner())
                        .backend()
                        .engines()
                        .len() as i64;
                    o.put(ty::INT64, &[n])
                }
                abi::OPERATIONGRAPH_NAME_EXT => {
                    let (graph, _) = graph_and_bytes(g, false)?;
                    o.put_text(graph.name())
                }
                abi::OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED_EXT => {
                    let (graph, _) = graph_and_bytes(g, false)?;
                    o.put(ty::BOOLEAN, &[u8::from(graph.is_override_shape_enabled())])
                }
                _ => Err(o.unsupported(what)),
            }
        }
        Desc::Heur { graph, fin } => match o.name {
            abi::ENGINEHEUR_RESULTS => {
                let ids = fin.as_ref().ok_or_else(|| not_finalized_error(dtype))?;
                let g = graph.clone().expect("finalized heuristic has a graph");
                if o.ty != ty::BACKEND_DESCRIPTOR {
                    return Err(err(
                        Status::BadParam,
                        "ENGINEHEUR_RESULTS has type BACKEND_DESCRIPTOR",
                    ));
                }
                if o.ptr.is_null() || o.requested == 0 {
                    return o.put::<usize>(ty::BACKEND_DESCRIPTOR, &vec![0; ids.len()]);
                }
                let n = usize::try_from(o.requested)
                    .map_err(|_| err(Status::BadParam, "negative requested count"))?
                    .min(ids.len());
                let sdk = g.handle.sdk.read().unwrap_or_else(|p| p.into_inner());
                for (i, id) in ids.iter().take(n).enumerate() {
                    // SAFETY: the array holds `requested >= n` descriptor handles.
                    let target = unsafe { *(o.ptr as *const usize).add(i) };
                    let engine = sdk.backend().engine(*id).cloned().ok_or_else(|| {
                        err(Status::InternalError, format!("Invalid engine ID: {id}"))
                    })?;
                    let e = Arc::new(EngineData {
                        graph: g.clone(),
                        id: *id,
                        engine,
                    });
                    fill(
                        target,
                        dt::ENGINECFG,
                        Desc::Cfg {
                            engine: Some(e.clone()),
                            knobs: vec![],
                            fin: Some(Arc::new(CfgData {
                                engine: e,
                                knobs: vec![],
                            })),
                        },
                    )?;
                }
                if !o.count.is_null() {
                    // SAFETY: non-null, valid for a write.
                    unsafe { *o.count = n as i64 };
                }
                Ok(())
            }
            abi::ENGINEHEUR_MODE => o.put(ty::HEUR_MODE, &[0i32]),
            _ => Err(o.unsupported(what)),
        },
        Desc::Engine { fin, .. } => {
            let e = fin.as_ref().ok_or_else(|| not_finalized_error(dtype))?;
            match o.name {
                abi::ENGINE_GLOBAL_INDEX => o.put(ty::INT64, &[e.id]),
                abi::ENGINE_BEHAVIOR_NOTE => {
                    let notes: Vec<i32> = e
                        .engine
                        .behavior_notes(&e.graph.op)
                        .into_iter()
                        .map(|n| n as i32)
                        .collect();
                    o.put(ty::BEHAVIOR_NOTE, &notes)
                }
                abi::ENGINE_NUMERICAL_NOTE => {
                    // cuDNN's `cudnnBackendNumericalNote_t` values (upstream's header names the
                    // type, 10, but no values), for the engine's default knobs.
                    let config = hipdnn_backend::EngineConfig {
                        engine_id: e.id,
                        knob_choices: Vec::new(),
                    };
                    let notes: Vec<i32> = e
                        .engine
                        .numerical_notes(&e.graph.op, &config)
                        .into_iter()
                        .map(|n| n as i32)
                        .collect();
                    o.put(ty::NUMERICAL_NOTE, &notes)
                }
                abi::ENGINE_NAME_EXT => o.put_text(e.engine.name()),
                abi::ENGINE_OPERATION_GRAPH => {
                    if o.begin(ty::BACKEND_DESCRIPTOR, 1)?.is_some() {
                        let state = Desc::Graph(Box::new(GraphDesc {
                            handle: Some(e.graph.handle.clone()),
                            fin: Some(e.graph.clone()),
                            ..GraphDesc::default()
                        }));
                        // SAFETY: the caller's array holds at least one slot.
                        unsafe { fill_slot(o.ptr as *mut usize, dt::OPERATIONGRAPH, state)? };
                        if !o.count.is_null() {
                            // SAFETY: non-null, valid for a write.
                            unsafe { *o.count = 1 };
                        }
                    }
                    Ok(())
                }
                abi::ENGINE_KNOB_INFO => {
                    let knobs = e.engine.knobs(&e.graph.op);
                    if o.ty != ty::BACKEND_DESCRIPTOR {
                        return Err(err(
                            Status::BadParam,
                            "ENGINE_KNOB_INFO has type BACKEND_DESCRIPTOR",
                        ));
                    }
                    if o.begin(ty::BACKEND_DESCRIPTOR, knobs.len())?.is_some() {
                        for (i, k) in knobs.iter().enumerate() {
                            // SAFETY: the array holds `requested >= knobs.len()` handles.
                            let target = unsafe { *(o.ptr as *const usize).add(i) };
                            fill(
                                target,
                                dt::KNOB_INFO,
                                Desc::KnobInfo {
                                    info: Some(k.clone()),
                                    fin: true,
                                },
                            )?;
                        }
                        if !o.count.is_null() {
                            // SAFETY: non-null, valid for a write.
                            unsafe { *o.count = knobs.len() as i64 };
                        }
                    }
                    Ok(())
                }
                _ => Err(o.unsupported(what)),
            }
        }
        Desc::Cfg { fin, .. } => {
            let c = fin.as_ref().ok_or_else(|| not_finalized_error(dtype))?;
            match o.name {
                abi::ENGINECFG_ENGINE => {
                    if o.begin(ty::BACKEND_DESCRIPTOR, 1)?.is_some() {
                        // SAFETY: the array holds at least one handle.
                        let target = unsafe { *(o.ptr as *const usize) };
                        fill(
                            target,
                            dt::ENGINE,
                            Desc::Engine {
                                graph: Some(c.engine.graph.clone()),
                                id: Some(c.engine.id),
                                fin: Some(c.engine.clone()),
                            },
                        )?;
                        if !o.count.is_null() {
                            // SAFETY: non-null, valid for a write.
                            unsafe { *o.count = 1 };
                        }
                    }
                    Ok(())
                }
                _ => Err(o.unsupported(what)),
            }
        }
        Desc::KnobChoice {
            knob_type, value, ..
        } => match o.name {
            abi::KNOB_CHOICE_KNOB_TYPE => {
                o.put(ty::KNOB_TYPE, &[knob_type.unwrap_or_default() as i32])
            }
            abi::KNOB_CHOICE_KNOB_VALUE => o.put(ty::INT64, &[value.unwrap_or_default()]),
            _ => Err(o.unsupported(what)),
        },
        Desc::KnobInfo { info, .. } => {
            let k = info.as_ref().ok_or_else(|| not_finalized_error(dtype))?;
            match o.name {
                abi::KNOB_INFO_TYPE => o.put(ty::KNOB_TYPE, &[k.knob_type as i32]),
                abi::KNOB_INFO_MAXIMUM_VALUE => o.put(ty::INT64, &[k.max]),
                abi::KNOB_INFO_MINIMUM_VALUE => o.put(ty::INT64, &[k.min]),
                abi::KNOB_INFO_STRIDE => o.put(ty::INT64, &[1i64]),
                abi::KNOB_INFO_DESCRIPTION => o.put_text(&k.description),
                abi::KNOB_INFO_DEFAULT_VALUE => o.put(ty::INT64, &[k.default]),
                _ => Err(o.unsupported(what)),
            }
        }
        Desc::Plan { fin, .. } => {
            let p = fin.as_ref().ok_or_else(|| not_finalized_error(dtype))?;
            match o.name {
                abi::EXECUTION_PLAN_WORKSPACE_SIZE => {
                    if o.ty != ty::INT64 || o.requested != 1 {
                        return Err(err(
                            Status::BadParam,
                            "EXECUTION_PLAN_WORKSPACE_SIZE is one INT64",
                        ));
                    }
                    non_null(o.ptr, "the element array")?;
                    o.write(&[p.plan.workspace_size() as i64]);
                    Ok(())
                }
                abi::EXECUTION_PLAN_ENGINE_CONFIG => {
                    let Some(c) = &p.cfg else {
                        return Err(err(
                            Status::BadParamNullPointer,
                            "a loaded execution plan has no engine config",
                        ));
                    };
                    if o.ty != ty::BACKEND_DESCRIPTOR || o.requested != 1 {
                        return Err(err(
                            Status::BadParam,
                            "ENGINE_CONFIG is one BACKEND_DESCRIPTOR",
                        ));
                    }
                    non_null(o.ptr, "the element array")?;
                    // SAFETY: non-null array of at least one handle.
                    let target = unsafe { *(o.ptr as *const usize) };
                    fill(
                        target,
                        dt::ENGINECFG,
                        Desc::Cfg {
                            engine: Some(c.engine.clone()),
                            knobs: c.knobs.clone(),
                            fin: Some(c.clone()),
                        },
                    )?;
                    if !o.count.is_null() {
                        // SAFETY: non-null, valid for a write.
                        unsafe { *o.count = 1 };
                    }
                    Ok(())
                }
                abi::EXECUTION_PLAN_TENSOR_UIDS_EXT => o.put(ty::INT64, p.plan.tensor_uids()),
                abi::EXECUTION_PLAN_ENGINE_GLOBAL_INDEX_EXT => {
                    o.put(ty::INT64, &[p.plan.engine_id()])
                }
                abi::EXECUTION_PLAN_IS_OVERRIDE_SHAPE_ENABLED_EXT => {
                    o.put(ty::BOOLEAN, &[u8::from(p.plan.is_override_shape_enabled())])
                }
                _ => Err(o.unsupported(what)),
            }
        }
        Desc::Pack {
            uids,
            ptrs,
            workspace,
            overrides,
            ..
        } => match o.name {
            abi::VARIANT_PACK_UNIQUE_IDS => o.put(ty::INT64, uids),
            abi::VARIANT_PACK_DATA_POINTERS => o.put(ty::VOID_PTR, ptrs),
            abi::VARIANT_PACK_WORKSPACE => o.put(ty::VOID_PTR, &[*workspace]),
            abi::VARIANT_PACK_OVERRIDE_UNIQUE_IDS_EXT => o.put(ty::INT64, &overrides.uids),
            abi::VARIANT_PACK_OVERRIDE_SHAPES_EXT => o.put(ty::INT64, &overrides.shapes),
            abi::VARIANT_PACK_OVERRIDE_STRIDES_EXT => o.put(ty::INT64, &overrides.strides),
            abi::VARIANT_PACK_OVERRIDE_LENGTHS_EXT => o.put(ty::INT64, &overrides.lengths),
            _ => Err(o.unsupported(what)),
        },
    }
}

// ---------------------------------------------------------------- exports

/// `hipdnnBackendCreateDescriptor`: a new descriptor of `descriptorType`. Null output →
/// NULL_POINTER; an unsupported type → NOT_SUPPORTED naming it; on failure `*descriptor` is
/// untouched. Destroy it with `hipdnnBackendDestroyDescriptor`.
///
/// # Safety
/// `out` null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendCreateDescriptor(
    descriptor_type: i32,
    out: *mut *mut HipdnnBackendDescriptor,
) -> Status {
    entry("hipdnnBackendCreateDescriptor", || {
        non_null(out, "the descriptor output pointer")?;
        let state = new_state(descriptor_type)?;
        let addr = register(descriptor_type, state);
        // SAFETY: non-null, valid for a write.
        unsafe { *out = addr as *mut HipdnnBackendDescriptor };
        Ok(())
    })
}

/// `hipdnnBackendDestroyDescriptor`: invalid → NULL_POINTER.
///
/// # Safety
/// Any value is safe (looked up, never dereferenced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendDestroyDescriptor(d: *mut HipdnnBackendDescriptor) -> Status {
    entry("hipdnnBackendDestroyDescriptor", || {
        desc(d)?;
        DESCS.remove(d as usize);
        Ok(())
    })
}

/// `hipdnnBackendSetAttribute`.
///
/// # Safety
/// `array` null or valid for `count` elements of the C type of `attr_type`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendSetAttribute(
    d: *mut HipdnnBackendDescriptor,
    name: i32,
    attr_type: i32,
    count: i64,
    array: *const c_void,
) -> Status {
    entry("hipdnnBackendSetAttribute", || {
        let obj = desc(d)?;
        let v = In {
            name,
            ty: attr_type,
            count,
            ptr: array,
        };
        let mut s = obj.lock();
        set(obj.dtype, &mut s, &v)
    })
}

/// `hipdnnBackendGetAttribute`.
///
/// # Safety
/// `count` null or valid; `array` null or valid for `requested` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendGetAttribute(
    d: *mut HipdnnBackendDescriptor,
    name: i32,
    attr_type: i32,
    requested: i64,
    count: *mut i64,
    array: *mut c_void,
) -> Status {
    entry("hipdnnBackendGetAttribute", || {
        let obj = desc(d)?;
        let o = Out {
            name,
            ty: attr_type,
            requested,
            count,
            ptr: array,
        };
        // Descriptors this call fills are other descriptors (the caller's); filling this one
        // would deadlock, so reject it first.
        if !array.is_null() && attr_type == ty::BACKEND_DESCRIPTOR && requested > 0 {
            // SAFETY: the array holds at least one handle.
            let first = unsafe { *(array as *const usize) };
            if first == d as usize {
                return Err(err(
                    Status::BadParam,
                    "a descriptor cannot be filled into itself",
                ));
            }
        }
        let s = obj.lock();
        get(obj.dtype, &s, &o)
    })
}

/// `hipdnnBackendFinalize`.
///
/// # Safety
/// Any value is safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendFinalize(d: *mut HipdnnBackendDescriptor) -> Status {
    entry("hipdnnBackendFinalize", || {
        let obj = desc(d)?;
        let mut s = obj.lock();
        finalize(obj.dtype, &mut s)
    })
}

/// Bytes a tensor's buffer spans, by the backend's rule
/// ([`hipdnn_backend::tensor_size::byte_extent`], as the SDK): `(1 + Σ (dim−1)·stride)`
/// elements of its type (sub-byte types count 1 byte per element), **0 when a dim is 0**.
///
/// # Errors
/// BAD_PARAM for a negative dim or stride or an extent that overflows.
fn tensor_bytes(t: &TensorAttributes) -> Ffi<usize> {
    let elem = tensor_size::element_size(t.data_type.schema_value());
    tensor_size::byte_extent(&t.dims, &t.strides, elem).ok_or_else(|| {
        err(
            Status::BadParam,
            format!(
                "tensor uid {}: the extent of dims {:?} strides {:?} overflows or is negative",
                t.uid.unwrap_or_default(),
                t.dims,
                t.strides
            ),
        )
    })
}

/// What a plan's variant pack must hold, from its graph ([`buffer_lengths`]).
struct PlanBuffers {
    /// Buffer length per tensor UID, with [`SCALAR_MARK`] set for runtime pass-by-value
    /// scalars.
    lens: HashMap<i64, usize>,
    /// The tensors every execute must bind, `(uid, name)` in tensor order: the non-virtual
    /// ones that are not baked scalars (the SDK's variant-pack rule).
    required: Vec<(i64, String)>,
    /// Built shape per UID (shape overrides are checked against them and their extents
    /// computed with them); filled only for a pack with overrides.
    shapes: HashMap<i64, BuiltTensor>,
}

/// A plan tensor's built dims, strides, virtual flag and element size in bytes.
type BuiltTensor = (Vec<i64>, Vec<i64>, bool, usize);

/// Buffer length per tensor UID for a plan, with [`SCALAR_MARK`] set for runtime
/// pass-by-value scalars, and the tensors a pack must bind: from its graph, or for a loaded
/// plan of the CPU reference engine from the graph its context carries (neither for a plan
/// without a graph: its engine checks the pack). With `with_shapes` (a pack with shape
/// overrides), also every tensor's built shape.
///
/// # Errors
/// [`tensor_bytes`]'s.
fn buffer_lengths(p: &FinalPlan, with_shapes: bool) -> Ffi<PlanBuffers> {
    let graph = match &p.graph {
        Some(g) => Some(g.graph.clone()),
        None => p
            .plan
            .execution_context()
            .as_any()
            .downcast_ref::<hipdnn_engines::reference::ReferenceContext>()
            .and_then(|c| Graph::from_graph_bytes(c.graph_bytes()).ok()),
    };
    let mut out = PlanBuffers {
        lens: HashMap::new(),
        required: Vec::new(),
        shapes: HashMap::new(),
    };
    let Some(g) = graph else {
        return Ok(out);
    };
    for (_, t) in g.tensors() {
        let Some(uid) = t.uid else { continue };
        let len = if t.is_runtime_pass_by_value {
            // A runtime scalar: a host pointer to one element, on any device.
            SCALAR_MARK | tensor_bytes(t)?
        } else {
            tensor_bytes(t)?
        };
        out.lens.insert(uid, len);
        if with_shapes {
            let elem = tensor_size::element_size(t.data_type.schema_value());
            out.shapes
                .insert(uid, (t.dims.clone(), t.strides.clone(), t.is_virtual, elem));
        }
        let baked = t.value.is_some() && !t.is_runtime_pass_by_value;
        if !t.is_virtual && !baked {
            out.required.push((uid, t.name.clone()));
        }
    }
    Ok(out)
}

/// Marks a runtime pass-by-value scalar in [`buffer_lengths`] (host memory on every device).
const SCALAR_MARK: usize = 1 << (usize::BITS - 1);

/// `hipdnnBackendExecute`: runs a finalized plan on a finalized variant pack. Wrong descriptor
/// types or unfinalized descriptors → BAD_PARAM. When the plan's graph is known (a plan
/// finalized here, or a loaded CPU plan), a non-virtual tensor that is not a baked scalar and
/// has no buffer in the pack → BAD_PARAM "the variant pack has no buffer for tensor uid N
/// ('name') …" before the engine runs (as the SDK checks; the engine would refuse it as a
/// PLUGIN_ERROR). On a CPU handle the pointers are host memory
/// whose extents come from the plan's graph; two bound buffers must not overlap (BAD_PARAM).
/// On a GPU handle they are device addresses (a plan of the CPU reference engine then fails
/// with BAD_PARAM: it needs host memory). Runtime pass-by-value scalars are host pointers to
/// one element on every device.
///
/// # Safety
/// Every pointer in the pack must be valid for its tensor's extent (and the workspace for the
/// plan's workspace size) for the duration of the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendExecute(
    h: *mut HipdnnHandle,
    plan: *mut HipdnnBackendDescriptor,
    pack: *mut HipdnnBackendDescriptor,
) -> Status {
    entry("hipdnnBackendExecute", || {
        let h = handle(h)?;
        let p = desc(plan)?;
        let k = desc(pack)?;
        if p.dtype != dt::EXECUTION_PLAN || k.dtype != dt::VARIANT_PACK {
            return Err(err(
                Status::BadParam,
                format!(
                    "execute takes an EXECUTION_PLAN and a VARIANT_PACK, got {} and {}",
                    type_name(p.dtype),
                    type_name(k.dtype)
                ),
            ));
        }
        let fp = match &*p.lock() {
            Desc::Plan { fin: Some(f), .. } => f.clone(),
            _ => return Err(err(Status::BadParam, "the execution plan is not finalized")),
        };
        let (uids, ptrs, workspace, ov) = match &*k.lock() {
            Desc::Pack {
                uids,
                ptrs,
                workspace,
                overrides,
                fin: true,
            } => (uids.clone(), ptrs.clone(), *workspace, overrides.clone()),
            _ => return Err(err(Status::BadParam, "the variant pack is not finalized")),
        };
        let overrides = shape_overrides(&ov)?;
        // Host memory only on a CPU handle: on a GPU handle every pointer is a device address
        // (the CPU reference engine then refuses with BAD_PARAM instead of reading device
        // memory; HIPDNN_RS_DEVICE=cpu gives CPU handles for host buffers).
        let host = !h.sdk.read().unwrap_or_else(|p| p.into_inner()).is_gpu();
        let PlanBuffers {
            mut lens,
            required,
            shapes,
        } = buffer_lengths(&fp, !overrides.is_empty())?;
        if !overrides.is_empty() {
            override_lengths(&fp, &shapes, &overrides, &mut lens)?;
        }
        if let Some((uid, name)) = required.iter().find(|(u, _)| !uids.contains(u)) {
            return Err(err(
                Status::BadParam,
                format!(
                    "the variant pack has no buffer for tensor uid {uid} ('{name}'), a \
                     non-virtual tensor of the plan; add it to VARIANT_PACK_UNIQUE_IDS and \
                     VARIANT_PACK_DATA_POINTERS"
                ),
            ));
        }
        let mut ranges: Vec<(usize, usize, i64)> = Vec::new();
        let mut vp = VariantPackDescriptor::new();
        for (uid, ptr) in uids.iter().zip(&ptrs) {
            let marked = lens.get(uid).copied().unwrap_or(0);
            let scalar = marked & SCALAR_MARK != 0;
            let len = marked & !SCALAR_MARK;
            if !host && !scalar {
                vp.insert(
                    *uid,
                    BufferRef::Device {
                        addr: *ptr as u64,
                        len,
                    },
                );
                continue;
            }
            if *ptr == 0 {
                return Err(err(
                    Status::BadParamNullPointer,
                    format!("variant pack data pointer of uid {uid} is null"),
                ));
            }
            if let Some((_, _, other)) = ranges
                .iter()
                .find(|(s, l, _)| *ptr < s + l && *s < ptr + len)
            {
                return Err(err(
                    Status::BadParam,
                    format!("variant pack buffers of uid {other} and uid {uid} overlap"),
                ));
            }
            ranges.push((*ptr, len, *uid));
            if scalar {
                // SAFETY: a runtime pass-by-value scalar is a host pointer to one element of
                // its type (as upstream's frontend passes it), valid for this call; it overlaps no
                // other bound buffer (checked above).
                let s = unsafe { std::slice::from_raw_parts(*ptr as *const u8, len) };
                vp.insert(*uid, BufferRef::Host(s));
                continue;
            }
            // SAFETY: the caller guarantees the pointer is valid for the tensor's extent
            // (`len` bytes) for this call; ranges were checked not to overlap, so the mutable
            // slices do not alias.
            let s = unsafe { std::slice::from_raw_parts_mut(*ptr as *mut u8, len) };
            vp.insert(*uid, BufferRef::HostMut(s));
        }
        let ws = fp.plan.workspace_size();
        if workspace != 0 && ws > 0 {
            if host {
                // SAFETY: the caller guarantees the workspace holds the plan's workspace size.
                let s = unsafe { std::slice::from_raw_parts_mut(workspace as *mut u8, ws) };
                vp.set_workspace(BufferRef::HostMut(s));
            } else {
                vp.set_workspace(BufferRef::Device {
                    addr: workspace as u64,
                    len: ws,
                });
            }
        }
        let sdk = h.sdk.read().unwrap_or_else(|p| p.into_inner());
        let (mut tensors, workspace) = vp.into_parts();
        fp.plan
            .execute_bindings_with_overrides(sdk.backend(), &mut tensors, workspace, &overrides)
    })
}

/// The pack's override attributes as one [`ShapeOverride`] per UID: the UIDs, the per-UID
/// ranks (`OVERRIDE_LENGTHS_EXT`, narrowed to `u32` as upstream's dispatch does) and the flat
/// dims and strides cut at those ranks. None set: no overrides.
///
/// # Errors
/// `BAD_PARAM_OUT_OF_BOUND` for a rank outside `u32`; `BAD_PARAM` when the lengths are not
/// one per UID or the flat arrays do not hold exactly their sum.
fn shape_overrides(ov: &OverrideAttrs) -> Ffi<Vec<ShapeOverride>> {
    if ov.lengths.len() != ov.uids.len() {
        return Err(err(
            Status::BadParam,
            format!(
                "VARIANT_PACK: {} override unique ids but {} override lengths",
                ov.uids.len(),
                ov.lengths.len()
            ),
        ));
    }
    let mut ranks = Vec::with_capacity(ov.lengths.len());
    for &l in &ov.lengths {
        let r = u32::try_from(l).map_err(|_| {
            err(
                Status::BadParamOutOfBound,
                format!("VARIANT_PACK: override length {l} is outside 0..=4294967295"),
            )
        })?;
        ranks.push(r as usize);
    }
    let total: usize = ranks.iter().sum();
    if ov.shapes.len() != total || ov.strides.len() != total {
        return Err(err(
            Status::BadParam,
            format!(
                "VARIANT_PACK: override lengths sum to {total}, but {} override shape values and \
                 {} override stride values are set",
                ov.shapes.len(),
                ov.strides.len()
            ),
        ));
    }
    let mut at = 0;
    Ok(ov
        .uids
        .iter()
        .zip(&ranks)
        .map(|(&uid, &r)| {
            let o = ShapeOverride::new(uid, &ov.shapes[at..at + r], &ov.strides[at..at + r]);
            at += r;
            o
        })
        .collect())
}

/// For a pack with shape overrides: the plan's override flag (`NOT_SUPPORTED` without it,
/// before any memory is touched), the override rules against the plan's tensors
/// ([`hipdnn_backend::check_overrides`], `BAD_PARAM`), then each overridden host buffer's
/// length is its override extent (the caller's memory need only hold that).
fn override_lengths(
    fp: &FinalPlan,
    shapes: &HashMap<i64, BuiltTensor>,
    overrides: &[ShapeOverride],
    lens: &mut HashMap<i64, usize>,
) -> Ffi<()> {
    if !fp.plan.is_override_shape_enabled() {
        return Err(err(
            Status::NotSupported,
            "shape overrides need a plan whose graph was built with the override-shape flag \
             (OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED_EXT)",
        ));
    }
    if !shapes.is_empty() {
        hipdnn_backend::check_overrides(overrides, |uid| {
            shapes
                .get(&uid)
                .map(|(d, s, v, _)| hipdnn_backend::BuiltShape {
                    dims: d,
                    strides: s,
                    is_virtual: *v,
                })
        })
        .map_err(|m| err(Status::BadParam, m))?;
    }
    for o in overrides {
        let Some(&(_, _, _, elem)) = shapes.get(&o.uid) else {
            continue;
        };
        let marked = lens.get(&o.uid).copied().unwrap_or(0);
        let len = tensor_size::byte_extent(&o.dims, &o.strides, elem).ok_or_else(|| {
            err(
                Status::BadParam,
                format!(
                    "shape override of tensor uid {}: the extent of dims {:?} strides {:?} \
                     overflows",
                    o.uid, o.dims, o.strides
                ),
            )
        })?;
        lens.insert(o.uid, (marked & SCALAR_MARK) | len);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{ATTRIBUTES, attribute_on};

    /// The attribute type a SetAttribute/GetAttribute of `number` on `dtype` passes: the
    /// table's, else INT64.
    fn attr_type(dtype: i32, number: i32) -> i32 {
        attribute_on(dtype, number)
            .and_then(|a| a.kind.attribute_type())
            .unwrap_or(ty::INT64)
    }

    const NON_OPS: [i32; 9] = [
        dt::TENSOR,
        dt::OPERATIONGRAPH,
        dt::ENGINEHEUR,
        dt::ENGINE,
        dt::ENGINECFG,
        dt::KNOB_CHOICE,
        dt::KNOB_INFO,
        dt::EXECUTION_PLAN,
        dt::VARIANT_PACK,
    ];

    /// The extent rule is the SDK's (`hipdnn_backend::tensor_size`): a zero dim spans 0 bytes
    /// (this C ABI counted one element before), an overflow is BAD_PARAM (it was unchecked).
    #[test]
    fn tensor_bytes_follow_the_backend_rule() {
        let t = |dims: Vec<i64>, strides: Vec<i64>, data_type| TensorAttributes {
            uid: Some(7),
            dims,
            strides,
            data_type,
            ..TensorAttributes::default()
        };
        let bytes = |x| tensor_bytes(&x).map_err(|e| e.status);
        assert_eq!(bytes(t(vec![2, 3], vec![3, 1], DataType::Float)), Ok(24));
        assert_eq!(bytes(t(vec![2, 3], vec![8, 1], DataType::Half)), Ok(22));
        assert_eq!(
            bytes(t(vec![2, 0, 3], vec![3, 3, 1], DataType::Double)),
            Ok(0)
        );
        assert_eq!(
            bytes(t(vec![i64::MAX, 2], vec![2, 1], DataType::Float)),
            Err(Status::BadParam)
        );
    }

    /// SetAttribute refuses with NOT_SUPPORTED exactly the attributes the table does not mark
    /// settable on the descriptor type (a null array makes every accepted one fail otherwise).
    #[test]
    fn set_takes_exactly_the_tables_settable_attributes() {
        for dtype in NON_OPS.into_iter().chain(dt::OPS) {
            for a in ATTRIBUTES {
                let mut s = new_state(dtype).unwrap();
                let v = In {
                    name: a.number,
                    ty: attr_type(dtype, a.number),
                    count: 1,
                    ptr: std::ptr::null(),
                };
                let refused = set(dtype, &mut s, &v)
                    .err()
                    .is_some_and(|e| e.status == Status::NotSupported);
                let settable = attribute_on(dtype, a.number).is_some_and(|r| r.access.settable());
                assert_eq!(refused, !settable, "{} on {}", a.name, type_name(dtype));
            }
        }
    }

    /// GetAttribute refuses with NOT_SUPPORTED exactly the attributes the table does not mark
    /// gettable, on the descriptor types whose getter needs no finalize first.
    #[test]
    fn get_answers_exactly_the_tables_gettable_attributes() {
        let types = [
            dt::TENSOR,
            dt::OPERATIONGRAPH,
            dt::ENGINEHEUR,
            dt::KNOB_CHOICE,
            dt::VARIANT_PACK,
        ];
        for dtype in types.into_iter().chain(dt::OPS) {
            for a in ATTRIBUTES {
                let s = new_state(dtype).unwrap();
                let mut count = 0i64;
                let o = Out {
                    name: a.number,
                    ty: attr_type(dtype, a.number),
                    requested: 0,
                    count: &mut count,
                    ptr: std::ptr::null_mut(),
                };
                let refused = get(dtype, &s, &o)
                    .err()
                    .is_some_and(|e| e.status == Status::NotSupported);
                let gettable = attribute_on(dtype, a.number).is_some_and(|r| r.access.gettable());
                assert_eq!(refused, !gettable, "{} on {}", a.name, type_name(dtype));
            }
        }
    }
}
