//! Tensor attributes (upstream `TensorAttributes.hpp`) and arena handles.
//!
//! A tensor is identified at execute time by its int64 UID; inside a [`crate::Graph`] it is
//! addressed by a [`TensorId`], a `Copy` index into the graph's tensor arena.

/// The value of a pass-by-value scalar tensor ([`TensorAttributes::scalar`],
/// [`TensorAttributes::runtime_parameter_with_default`]); its variant decides the tensor's
/// data type.
///
/// ```
/// use hipdnn::{DataType, TensorAttributes, TensorValue};
/// let eps = TensorAttributes::scalar(TensorValue::Float32(1e-5));
/// assert_eq!(eps.data_type, DataType::Float);
/// assert_eq!(TensorAttributes::scalar(TensorValue::Int64(3)).data_type, DataType::Int64);
/// ```
pub use hipdnn_schema::tensor_value::TensorValue;

use super::error::{Error, Result};
use super::types::DataType;

/// Handle of a tensor in one [`crate::Graph`]'s arena (insertion index). Only meaningful for
/// the graph that returned it.
///
/// ```
/// use hipdnn::{Graph, TensorAttributes, TensorId};
/// let mut g = Graph::new();
/// let a = g.tensor(TensorAttributes::new("a").dims([2]));
/// let b = g.tensor(TensorAttributes::new("b").dims([2]));
/// assert_eq!((a.index(), b.index()), (0, 1));
/// assert_eq!(TensorId::from_index(1), b);
/// assert_eq!(g.tensor_attributes(b).name, "b");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub(crate) u32);

impl TensorId {
    /// The handle of the tensor at `index` in a graph's tensor list (see [`TensorId::index`]).
    /// Methods given a handle the graph does not have panic.
    pub fn from_index(index: usize) -> TensorId {
        TensorId(u32::try_from(index).expect("tensor index exceeds u32"))
    }
    /// Position of the tensor in the graph's tensor list (0-based insertion order).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Handle of a node (operation) in one [`crate::Graph`]'s arena (insertion index).
///
/// ```
/// use hipdnn::{Graph, NodeId, PointwiseAttributes, PointwiseMode, TensorAttributes};
/// let mut g = Graph::new();
/// let x = g.tensor(TensorAttributes::new("x").dims([2]));
/// let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::Neg));
/// let node: NodeId = g.producer(y).expect("y is written by the NEG node");
/// assert_eq!((node.index(), g.node(node).name()), (0, "Pointwise_0"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The handle of the node at `index` in a graph's node list.
    pub fn from_index(index: usize) -> NodeId {
        NodeId(u32::try_from(index).expect("node index exceeds u32"))
    }
    /// Position of the node in the graph's node list (0-based insertion order).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Default byte alignment of a tensor's buffer (schema default of `alignment`).
pub const DEFAULT_ALIGNMENT: i64 = 16;

/// Description of one tensor: a field-for-field image of the schema's `TensorAttributes`
/// table, plus "UID not yet assigned" (`uid == None`).
///
/// Dims are logical (NCHW / NCDHW order for convolutions, `(..batch, M, K)` for matmul,
/// `(B, H, S, D)` for SDPA); the memory layout is given only by `strides` (in elements).
/// Builder methods consume and return `self`.
///
/// Pass-by-value scalars (RFC16) are described by (`is_runtime_pass_by_value`, `value`):
/// compile-time constant (false, Some), runtime with default (true, Some), runtime
/// user-supplied (true, None).
///
/// What a tensor needs by the time the graph is validated:
///
/// | field | required | default | notes |
/// |---|---|---|---|
/// | `dims` | yes | none | every dim > 0 |
/// | `strides` | yes | [`Graph::tensor`](crate::Graph::tensor) fills packed row-major strides when only dims are given | one per dim, in elements |
/// | `data_type` | yes, unless the graph's io / intermediate type is set | `Unset` | which types each engine runs: README's "Which ops run where" (CPU: f32, f16, bf16, f64, the integers, bool; GPU kernels: f16, bf16, f32) |
/// | `uid` | for every tensor bound at execute | auto-assigned at build | the key of the [`VariantPack`](crate::VariantPack) |
/// | `name` | no | empty | names in messages and [`Graph::tensors_by_name`](crate::Graph::tensors_by_name) |
/// | `is_virtual` | no | false for tensors you add, true for op outputs | a virtual tensor has no buffer |
/// | `alignment` | no | 16 bytes | every [`Buffer`](crate::Buffer) is 64-byte aligned |
///
/// ```
/// use hipdnn::{DataType, Graph, TensorAttributes, TensorValue};
/// let x = TensorAttributes::new("x")
///     .uid(1)
///     .data_type(DataType::Half)
///     .dims([8, 3, 32, 32])
///     .packed_nhwc(); // channels-last: strides [3072, 1, 96, 3]
/// assert_eq!(x.strides, [3072, 1, 96, 3]);
/// assert_eq!(x.volume(), 8 * 3 * 32 * 32);
/// let eps = TensorAttributes::scalar(TensorValue::Float32(1e-5)); // FLOAT, dims [1]
/// assert_eq!((eps.data_type, eps.dims.as_slice()), (DataType::Float, &[1][..]));
///
/// let mut g = Graph::new();
/// let t = g.tensor(x);
/// assert!(g.tensor_attributes(t).validate("x").is_ok());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TensorAttributes {
    /// Unique id used in the variant pack; `None` until set or auto-assigned.
    pub uid: Option<i64>,
    /// Name (may be empty; empty is written as an absent string).
    pub name: String,
    /// Element type.
    pub data_type: DataType,
    /// Logical extents, outermost first. Must be non-empty and all > 0 to validate.
    pub dims: Vec<i64>,
    /// Strides in elements, one per dim.
    pub strides: Vec<i64>,
    /// Virtual (no buffer; an intermediate). Op outputs start virtual.
    pub is_virtual: bool,
    /// Baked scalar value (`TensorValue` union).
    pub value: Option<TensorValue>,
    /// The scalar is passed at execute time (host pointer in the variant pack).
    pub is_runtime_pass_by_value: bool,
    /// Tensor holding ragged offsets for this one (schema `ragged_offset_tensor_uid`).
    pub ragged_offset: Option<TensorId>,
    /// Required buffer alignment in bytes (default 16, must be >= 1).
    pub alignment: i64,
}

impl Default for TensorAttributes {
    fn default() -> Self {
        TensorAttributes {
            uid: None,
            name: String::new(),
            data_type: DataType::Unset,
            dims: Vec::new(),
            strides: Vec::new(),
            is_virtual: false,
            value: None,
            is_runtime_pass_by_value: false,
            ragged_offset: None,
            alignment: DEFAULT_ALIGNMENT,
        }
    }
}

/// Packed (contiguous) strides for `dims` with dimensions laid out in `order`, given from
/// the outermost to the innermost dim index. Example: dims `[N, C, H, W]`, order
/// `[0, 2, 3, 1]` (NHWC) gives strides `[H*W*C, 1, W*C, C]`.
///
/// `order` must be a permutation of `0..dims.len()`; otherwise row-major order is used.
pub fn packed_strides(dims: &[i64], order: &[usize]) -> Vec<i64> {
    let n = dims.len();
    let mut seen = vec![false; n];
    let valid = order.len() == n
        && order
            .iter()
            .all(|&i| i < n && !std::mem::replace(&mut seen[i], true));
    let row_major: Vec<usize> = (0..n).collect();
    let order = if valid { order } else { &row_major };
    let mut strides = vec![0i64; n];
    let mut acc: i64 = 1;
    for &d in order.iter().rev() {
        strides[d] = acc;
        acc = acc.saturating_mul(dims[d].max(1));
    }
    strides
}

/// The dim order (outermost first) implied by `strides`: indices sorted by decreasing stride,
/// ties keeping the lower index outer. [`Graph::set_dims`](crate::Graph::set_dims) keeps a
/// tensor's layout with it.
pub fn stride_order(strides: &[i64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..strides.len()).collect();
    idx.sort_by(|&a, &b| strides[b].cmp(&strides[a]).then(a.cmp(&b)));
    idx
}

/// The dim order (outermost first) of the dense layout `strides` describes for `dims`, with
/// broadcast axes (stride 0) and axes of extent 1 kept where they are: they carry no layout,
/// so they are never compared (PyTorch's rule for the outputs of elementwise ops). The other
/// axes are ordered by decreasing stride, ties keeping the lower index outer. Op outputs use
/// it to tell a channels-last input from the rest (their outputs are channels-last or
/// row-major): `dims [2, 4]` with `strides [0, 1]` (a broadcast row) gives `[0, 1]`, row-major,
/// where [`stride_order`] gives `[1, 0]`, column-major.
///
/// ```
/// use hipdnn::layout_order;
/// assert_eq!(layout_order(&[2, 4], &[0, 1]), vec![0, 1]);
/// assert_eq!(layout_order(&[2, 3, 4, 5], &[60, 1, 15, 3]), vec![0, 2, 3, 1]); // NHWC
/// assert_eq!(layout_order(&[4, 1, 3], &[1, 1, 4]), vec![2, 1, 0]); // column-major, a 1 between
/// ```
pub fn layout_order(dims: &[i64], strides: &[i64]) -> Vec<usize> {
    let n = dims.len().min(strides.len());
    let real = |a: usize| dims[a] != 1 && strides[a] != 0;
    // +1: `a` (now outer) should go inside `b`; -1: keep; 0: no layout to compare.
    let cmp = |a: usize, b: usize| -> i8 {
        if !real(a) || !real(b) {
            0
        } else if strides[a] < strides[b] {
            1
        } else {
            -1
        }
    };
    let mut order: Vec<usize> = (0..n).collect();
    for i in 1..n {
        let mut cur = i;
        for j in (0..i).rev() {
            match cmp(order[j], order[cur]) {
                1 => {
                    order.swap(j, cur);
                    cur = j;
                }
                -1 => break,
                _ => {}
            }
        }
    }
    order
}

impl TensorAttributes {
    /// A tensor named `name` with every other attribute at its default.
    pub fn new(name: impl Into<String>) -> Self {
        TensorAttributes {
            name: name.into(),
            ..Default::default()
        }
    }

    /// A compile-time-constant scalar (`TensorAttributes(v)` upstream): dims = strides = `[1]`,
    /// data type from the value (Float32 → FLOAT, Float16 → HALF, BFloat16 → BFLOAT16,
    /// Float8 → FP8_E4M3, Int32 → INT32, Float64 → DOUBLE, Int64 → INT64, Bool → BOOLEAN).
    pub fn scalar(value: TensorValue) -> Self {
        let data_type = match value {
            TensorValue::Float32(_) => DataType::Float,
            TensorValue::Float16(_) => DataType::Half,
            TensorValue::BFloat16(_) => DataType::BFloat16,
            TensorValue::Float8(_) => DataType::Fp8E4m3,
            TensorValue::Int32(_) => DataType::Int32,
            TensorValue::Float64(_) => DataType::Double,
            TensorValue::Int64(_) => DataType::Int64,
            TensorValue::Bool(_) => DataType::Boolean,
        };
        TensorAttributes {
            data_type,
            dims: vec![1],
            strides: vec![1],
            value: Some(value),
            ..Default::default()
        }
    }

    /// A tensor named `name` laid out like `array`: dims = the array's shape, strides =
    /// [`crate::buffer::array_strides`] (the array's own strides when its elements fill one
    /// contiguous block, e.g. a transposed view; row-major otherwise), data type = `T`'s. Bind it
    /// to [`crate::Buffer::from_array`] of the same array, which uses the same layout.
    pub fn for_array<T, S, D>(name: impl Into<String>, array: &ndarray::ArrayBase<S, D>) -> Self
    where
        T: crate::Element,
        S: ndarray::Data<Elem = T>,
        D: ndarray::Dimension,
    {
        TensorAttributes {
            name: name.into(),
            data_type: T::DATA_TYPE,
            dims: array.shape().iter().map(|d| *d as i64).collect(),
            strides: crate::buffer::array_strides(array),
            ..Default::default()
        }
    }

    /// Sets the UID: the key that binds the tensor's buffer in a
    /// [`VariantPack`](crate::VariantPack). Optional: unset UIDs are auto-assigned at build
    /// (read them back with [`Graph::tensor_attributes`](crate::Graph::tensor_attributes));
    /// two tensors with one UID are refused at validation.
    pub fn uid(mut self, uid: i64) -> Self {
        self.uid = Some(uid);
        self
    }
    /// Sets the name. Optional (default empty); names appear in error messages and are looked
    /// up by [`Graph::tensors_by_name`](crate::Graph::tensors_by_name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
    /// Sets the element type. Required unless the graph supplies one (default `Unset`:
    /// [`Graph::set_io_data_type`](crate::Graph::set_io_data_type) for bound tensors,
    /// [`Graph::set_intermediate_data_type`](crate::Graph::set_intermediate_data_type) for
    /// virtual ones). The CPU engine stores FLOAT, HALF, BFLOAT16, DOUBLE, INT8, UINT8, INT32,
    /// INT64 and BOOLEAN (arithmetic in f32) and refuses FP8/FP6/FP4/INT4; the GPU kernels
    /// take HALF, BFLOAT16 and FLOAT (BOOLEAN for pointwise) and leave other types to the CPU.
    pub fn data_type(mut self, t: DataType) -> Self {
        self.data_type = t;
        self
    }
    /// Sets the logical dims (outermost first). Required; every dim > 0. The order is the
    /// op's logical order (NCHW for convolutions and pooling whatever the memory layout;
    /// `(…, M, K)` for matmul; `(B, H, S, D)` for SDPA); the layout is given by the strides.
    pub fn dims(mut self, dims: impl Into<Vec<i64>>) -> Self {
        self.dims = dims.into();
        self
    }
    /// Sets the strides (elements), one per dim. Required, but [`Graph::tensor`](crate::Graph::tensor)
    /// fills packed row-major strides when dims are given without strides. The CPU engine
    /// reads any strides (padded, transposed, broadcast stride 0); the GPU kernels take the
    /// layouts each family lists (docs/gpu.md) and leave others to the CPU.
    pub fn strides(mut self, strides: impl Into<Vec<i64>>) -> Self {
        self.strides = strides.into();
        self
    }
    /// Sets packed row-major strides for the current dims (NCHW for 4-D, NCDHW for 5-D).
    pub fn packed_nchw(mut self) -> Self {
        let order: Vec<usize> = (0..self.dims.len()).collect();
        self.strides = packed_strides(&self.dims, &order);
        self
    }
    /// Sets packed channels-last strides for the current dims (NHWC for 4-D, NDHWC for 5-D;
    /// row-major when rank < 3).
    pub fn packed_nhwc(mut self) -> Self {
        let n = self.dims.len();
        let order: Vec<usize> = if n < 3 {
            (0..n).collect()
        } else {
            std::iter::once(0)
                .chain(2..n)
                .chain(std::iter::once(1))
                .collect()
        };
        self.strides = packed_strides(&self.dims, &order);
        self
    }
    /// Marks the tensor virtual (no buffer; an intermediate between two nodes). Default `false`
    /// for tensors you add; op outputs start virtual (see [`TensorAttributes::output`]).
    pub fn is_virtual(mut self, v: bool) -> Self {
        self.is_virtual = v;
        self
    }
    /// `set_output(b)` upstream: an output is not virtual (`is_virtual = !b`). For op outputs,
    /// which the graph creates, use [`Graph::set_output`](crate::Graph::set_output).
    pub fn output(mut self, b: bool) -> Self {
        self.is_virtual = !b;
        self
    }
    /// Sets the buffer alignment in bytes. Optional (default 16, must be ≥ 1); every
    /// [`Buffer`](crate::Buffer) is 64-byte aligned, so values up to 64 always hold.
    pub fn alignment(mut self, bytes: i64) -> Self {
        self.alignment = bytes;
        self
    }
    /// Sets the tensor holding this tensor's ragged offsets. Optional (default none); no engine
    /// of this crate runs ragged tensors.
    pub fn ragged_offset(mut self, t: TensorId) -> Self {
        self.ragged_offset = Some(t);
        self
    }
    /// Compile-time constant scalar: stores `v`, clears the runtime flag.
    pub fn compile_time_constant(mut self, v: TensorValue) -> Self {
        self.value = Some(v);
        self.is_runtime_pass_by_value = false;
        self
    }
    /// Runtime pass-by-value scalar with a default value `v`
    /// (`ScalarType::RUNTIME_PARAM` upstream).
    pub fn runtime_parameter_with_default(mut self, v: TensorValue) -> Self {
        self.value = Some(v);
        self.is_runtime_pass_by_value = true;
        self
    }
    /// Runtime pass-by-value scalar supplied by the user at execute time
    /// (`set_as_runtime_parameter()` upstream): flag set, no value.
    pub fn runtime_parameter(mut self) -> Self {
        self.value = None;
        self.is_runtime_pass_by_value = true;
        self
    }

    /// Number of elements (product of dims; 1 for an empty dims list).
    pub fn volume(&self) -> i64 {
        self.dims.iter().product()
    }

    /// Whether the tensor is a pass-by-value scalar (has a value or the runtime flag).
    pub fn is_pass_by_value(&self) -> bool {
        self.value.is_some() || self.is_runtime_pass_by_value
    }

    /// Upstream `TensorAttributes::validate()`, naming the tensor `label`.
    ///
    /// # Errors
    /// `AttributeNotSet` if the data type is `Unset` or dims are empty; `InvalidValue` if the
    /// tensor is virtual and pass-by-value (runtime flag or value), if dims and strides differ
    /// in length, if a dim is <= 0, or if alignment < 1.
    pub fn validate(&self, label: &str) -> Result<()> {
        if self.data_type == DataType::Unset {
            return Err(Error::not_set(format!(
                "tensor {label}: data type is not set"
            )));
        }
        if self.is_virtual && self.is_runtime_pass_by_value {
            return Err(Error::invalid(format!(
                "tensor {label}: a virtual tensor cannot be runtime pass-by-value"
            )));
        }
        if self.is_virtual && self.value.is_some() {
            return Err(Error::invalid(format!(
                "tensor {label}: a virtual tensor cannot have a value"
            )));
        }
        if self.dims.is_empty() {
            return Err(Error::not_set(format!("tensor {label}: dims are not set")));
        }
        if self.dims.len() != self.strides.len() {
            return Err(Error::invalid(format!(
                "tensor {label}: {} dims but {} strides",
                self.dims.len(),
                self.strides.len()
            )));
        }
        if let Some(d) = self.dims.iter().find(|&&d| d <= 0) {
            return Err(Error::invalid(format!(
                "tensor {label}: dim {d} is not > 0 (dims {:?})",
                self.dims
            )));
        }
        if self.alignment < 1 {
            return Err(Error::invalid(format!(
                "tensor {label}: alignment {} is not >= 1",
                self.alignment
            )));
        }
        Ok(())
    }
}
