//! The graph: an arena of tensors and operation nodes with `Copy` handles.
//!
//! This module owns the in-memory model of a hipDNN graph (upstream
//! `hipdnn_frontend::graph::Graph`) and its wire forms: the bare `Graph` FlatBuffer
//! ([`Graph::to_graph_bytes`], [`Graph::from_graph_bytes`]) and JSON. It never talks to a
//! backend: lowering, plans and execution belong to other modules.
//!
//! # JSON: one format, and a legacy one
//!
//! - [`Graph::to_json`] / [`Graph::from_json`] speak **upstream hipDNN's JSON graph format**
//!   (nlohmann `dump()` text: compact, keys sorted bytewise, floats widened to double and
//!   spelled as nlohmann prints them, per-op `inputs` / `outputs` / `parameters` groups). The
//!   C ABI (`libhipdnn_backend.so`) calls these same functions, so both give the same text for
//!   the same graph. The reader refuses what upstream reads leniently (an unknown enum
//!   spelling or node `type`, a duplicate key) with a message naming the key and value, and
//!   accepts unknown keys. Every node kind is covered (the 23 of upstream's per-op JSON
//!   converters); non-finite floats are written as `null`, as upstream's writer does, and do
//!   not survive.
//! - [`Graph::to_flatbuffer_json`] / [`Graph::from_flatbuffer_json`] are the **legacy** format
//!   (this crate's earlier `to_json`): a field-for-field image of the schema in flatc's JSON
//!   conventions, for every node kind, with `json_version` [`JSON_VERSION`]. Kept for files
//!   written by earlier versions and for comparison with `flatc --json`.
//!
//! The model is a field-for-field image of the schema, so load → save reproduces the bytes (or
//! legacy JSON) this crate wrote: tensor order, node order, absent vs present optional fields,
//! the graph id and the minimum engine API version are all kept; upstream's JSON keeps them
//! too for the node kinds it covers.

mod build;
mod bytes;
pub mod error;
mod flatbuffer_json;
mod helpers;
mod json;
mod kinds;
pub mod ops;
mod shapes;
pub mod tensor;
pub mod types;
mod validate;

pub use build::BatchnormOutputs;
pub use bytes::NOT_A_GRAPH;
pub use error::{Cause, Error, ErrorCode, Result};
pub use flatbuffer_json::JSON_VERSION;
pub use helpers::Activation;
pub use ops::*;
pub use tensor::{
    NodeId, TensorAttributes, TensorId, TensorValue, layout_order, packed_strides, stride_order,
};
pub use types::{
    AttentionImplementation, ConvMode, DataType, DiagonalAlignment, EngineApiVersion,
    MoeGroupedMatmulMode, NormFwdPhase, PaddingMode, PointwiseMode, ReductionMode, ResampleMode,
};

/// A hipDNN operation graph.
///
/// Tensors and nodes live in arenas and are addressed by [`TensorId`] / [`NodeId`] handles
/// (insertion indices). Methods taking a handle **panic** if the handle does not belong to this
/// graph (like slice indexing); everything reading external data returns [`Error`] instead.
///
/// The methods, by group:
/// - **Graph settings**: [`Graph::set_io_data_type`] (type of bound tensors left `Unset`),
///   [`Graph::set_intermediate_data_type`] (type of op outputs and other virtual tensors),
///   [`Graph::set_compute_data_type`] (nodes' arithmetic type), [`Graph::set_name`]. All
///   default to `Unset` / empty; a graph whose tensors all carry their own types needs none.
/// - **Tensors**: [`Graph::tensor`] adds one ([`TensorAttributes`] says which fields are
///   required), [`Graph::set_output`] / [`Graph::set_uid`] / [`Graph::set_dims`] /
///   [`Graph::set_strides`] / [`Graph::set_data_type`] change one, [`Graph::tensor_attributes`]
///   / [`Graph::tensors_by_name`] / [`Graph::tensor_by_uid`] read them.
/// - **Operations**: one method per node kind ([`Graph::conv_fprop`], [`Graph::matmul`],
///   [`Graph::pointwise`], [`Graph::layernorm`], [`Graph::sdpa`], [`Graph::reduction`],
///   [`Graph::resample`], …; README's "Which ops run where" says which engine runs what), each
///   taking the input handles and an attributes value (`*Attributes::new()` plus setters) and
///   returning the new output handles: virtual tensors with inferred dims, packed strides in
///   the first input's layout, and the intermediate (else the first input's) data type.
/// - **Checking and running**: [`Graph::validate`] (no handle needed), [`Graph::build`],
///   [`Graph::workspace_size`], [`Graph::execute`], [`Graph::engine_name`].
/// - **Saving**: [`Graph::to_binary`] / [`Graph::from_binary`], [`Graph::save_to_file`] /
///   [`Graph::load_from_file`], [`Graph::to_json`] / [`Graph::from_json`].
///
/// # Example: `relu(x + bias)` with a broadcast bias
/// ```
/// use hipdnn::{Buffer, DataType, Graph, Handle, PointwiseAttributes, PointwiseMode,
///              TensorAttributes, VariantPack};
/// # fn main() -> hipdnn::Result<()> {
/// let mut g = Graph::new();
/// g.set_name("bias_relu")
///     .set_io_data_type(DataType::Float)
///     .set_intermediate_data_type(DataType::Float)
///     .set_compute_data_type(DataType::Float);
/// // Dims without strides get packed row-major strides.
/// let x = g.tensor(TensorAttributes::new("x").uid(1).dims([2, 3]));
/// let bias = g.tensor(TensorAttributes::new("bias").uid(2).dims([1, 3])); // broadcast over rows
/// assert_eq!(g.tensor_attributes(x).strides, [3, 1]);
///
/// let sum = g.pointwise(x, bias, PointwiseAttributes::with_mode(PointwiseMode::Add));
/// let y = g.pointwise_unary(sum, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
/// // Op outputs are virtual until marked as outputs; they need a UID to be bound.
/// g.set_output(y, true).set_uid(y, 3);
/// let out = g.tensor_attributes(y);
/// assert_eq!((out.name.as_str(), &out.dims[..], &out.strides[..]), ("Pointwise_1::OUT_0", &[2, 3][..], &[3, 1][..]));
/// assert_eq!(g.tensors_by_name("bias"), [bias]);
/// g.validate()?;
///
/// let handle = Handle::cpu()?;
/// g.build(&handle)?;
/// assert_eq!(g.engine_name()?, "hipdnn.reference.cpu");
/// let xb = Buffer::from_slice(&[-1f32, 0., 1., 2., -3., 4.]);
/// let bb = Buffer::from_slice(&[1f32, -1., 0.5]);
/// let mut yb = Buffer::<f32>::zeros(6);
/// let mut ws = Buffer::<u8>::zeros(g.workspace_size()?);
/// let pack = VariantPack::new().input(1, &xb).input(2, &bb).output(3, &mut yb);
/// g.execute(&handle, pack, Some(&mut ws))?;
/// assert_eq!(yb.to_vec()?, [0., 0., 1.5, 3., 0., 4.5]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    name: String,
    compute_data_type: DataType,
    intermediate_data_type: DataType,
    io_data_type: DataType,
    tensors: Vec<TensorAttributes>,
    nodes: Vec<Operation>,
    preferred_engine_id: Option<i64>,
    override_shape_enabled: bool,
    min_required_engine_api_version: Option<EngineApiVersion>,
    id: Option<[u8; 16]>,
    /// The active execution plan (built or loaded); not part of graph equality.
    pub(crate) compiled: crate::persist::CompiledState,
    /// Engine filters of the next build; not part of graph equality.
    pub(crate) filter: crate::select::EngineFilter,
}

impl Graph {
    /// An empty graph (no name, all data types `Unset`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Graph name (empty when unnamed).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Sets the graph name.
    pub fn set_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.name = name.into();
        self
    }
    /// Default compute type of the nodes.
    pub fn compute_data_type(&self) -> DataType {
        self.compute_data_type
    }
    /// Sets the default compute type of the nodes.
    pub fn set_compute_data_type(&mut self, t: DataType) -> &mut Self {
        self.compute_data_type = t;
        self
    }
    /// Type of virtual (intermediate) tensors whose type is unset.
    pub fn intermediate_data_type(&self) -> DataType {
        self.intermediate_data_type
    }
    /// Sets the type of virtual tensors whose type is unset; also used for new op outputs.
    pub fn set_intermediate_data_type(&mut self, t: DataType) -> &mut Self {
        self.intermediate_data_type = t;
        self
    }
    /// Type of non-virtual tensors whose type is unset.
    pub fn io_data_type(&self) -> DataType {
        self.io_data_type
    }
    /// Sets the type of non-virtual tensors whose type is unset.
    pub fn set_io_data_type(&mut self, t: DataType) -> &mut Self {
        self.io_data_type = t;
        self
    }
    /// Preferred engine id (`set_preferred_engine_id_ext`); `None` when unset.
    pub fn preferred_engine_id(&self) -> Option<i64> {
        self.preferred_engine_id
    }
    /// Sets or clears the preferred engine id.
    pub fn set_preferred_engine_id(&mut self, id: Option<i64>) -> &mut Self {
        self.preferred_engine_id = id;
        self
    }
    /// Whether execute-time shape overrides are enabled.
    pub fn is_override_shape_enabled(&self) -> bool {
        self.override_shape_enabled
    }
    /// Enables or disables execute-time shape overrides (must be set before build): the
    /// graph's dims are then the largest each tensor takes, and
    /// [`VariantPack::override_shape`](crate::VariantPack::override_shape) runs smaller ones
    /// on the same plan (upstream RFC 0008 phase 1). Engines that do not execute overrides are
    /// not offered the graph.
    pub fn set_override_shape_enabled(&mut self, on: bool) -> &mut Self {
        self.override_shape_enabled = on;
        self
    }

    /// The shape overrides that run this graph (built at its largest shape) at the shape of
    /// `at`, the same graph made for a smaller shape (tensors with the same UIDs; it need not
    /// be built): one [`ShapeOverride`](crate::ShapeOverride) for every non-virtual tensor of
    /// `at` whose dims or strides differ from this graph's, in `at`'s tensor order. Give them
    /// to [`VariantPack::override_shape`](crate::VariantPack::override_shape).
    ///
    /// # Errors
    /// `INVALID_VALUE` naming the tensor when a non-virtual tensor of `at` has no UID or no
    /// tensor of this graph has its UID.
    ///
    /// # Example
    /// ```
    /// use hipdnn::{DataType, Graph, MatmulAttributes, ShapeOverride, TensorAttributes as T};
    /// let linear = |rows: i64| {
    ///     let mut g = Graph::new();
    ///     g.set_io_data_type(DataType::Float);
    ///     let x = g.tensor(T::new("x").uid(1).dims([rows, 4]));
    ///     let w = g.tensor(T::new("w").uid(2).dims([4, 2]));
    ///     let y = g.matmul(x, w, MatmulAttributes::new());
    ///     g.set_output(y, true).set_uid(y, 3);
    ///     g
    /// };
    /// let (max, three) = (linear(8), linear(3));
    /// assert_eq!(
    ///     max.shape_overrides_for(&three)?,
    ///     [ShapeOverride::new(1, [3, 4], [4, 1]), ShapeOverride::new(3, [3, 2], [2, 1])]
    /// );
    /// # Ok::<(), hipdnn::Error>(())
    /// ```
    pub fn shape_overrides_for(&self, at: &Graph) -> crate::Result<Vec<crate::ShapeOverride>> {
        let mut out = Vec::new();
        for (_, t) in at.tensors().filter(|(_, t)| !t.is_virtual) {
            let missing = || {
                crate::Error::new(
                    crate::ErrorCode::InvalidValue,
                    format!(
                        "tensor '{}' ({}) of the smaller graph is not a tensor of this graph",
                        t.name,
                        t.uid.map_or("no uid".into(), |u| format!("uid {u}"))
                    ),
                )
            };
            let uid = t.uid.ok_or_else(missing)?;
            let m = self.tensor_attributes(self.tensor_by_uid(uid).ok_or_else(missing)?);
            if (&m.dims, &m.strides) != (&t.dims, &t.strides) {
                out.push(crate::ShapeOverride::new(
                    uid,
                    t.dims.clone(),
                    t.strides.clone(),
                ));
            }
        }
        Ok(out)
    }
    /// Minimum engine API version recorded in the graph (`None`: absent, meaning 1.0.0).
    pub fn min_required_engine_api_version(&self) -> Option<EngineApiVersion> {
        self.min_required_engine_api_version
    }
    /// Sets or clears the recorded minimum engine API version.
    pub fn set_min_required_engine_api_version(
        &mut self,
        v: Option<EngineApiVersion>,
    ) -> &mut Self {
        self.min_required_engine_api_version = v;
        self
    }
    /// The graph's 128-bit id (schema `Uuid`; minted at finalization upstream), if any.
    pub fn id(&self) -> Option<[u8; 16]> {
        self.id
    }
    /// Sets or clears the graph id. Any 128-bit value is kept as is.
    pub fn set_id(&mut self, id: Option<[u8; 16]>) -> &mut Self {
        self.id = id;
        self
    }

    // ---- tensors ----

    /// Adds a tensor (a copy of `attrs`, UID kept) and returns its handle. A tensor given dims
    /// but no strides gets packed row-major strides (`[6, 3, 1]` for dims `[2, 2, 3]`).
    pub fn tensor(&mut self, mut attrs: TensorAttributes) -> TensorId {
        if attrs.strides.is_empty() && !attrs.dims.is_empty() {
            let order: Vec<usize> = (0..attrs.dims.len()).collect();
            attrs.strides = packed_strides(&attrs.dims, &order);
        }
        let id = TensorId(u32::try_from(self.tensors.len()).expect("more than 2^32 tensors"));
        self.tensors.push(attrs);
        id
    }
    /// Adds a copy of tensor `like` with its UID cleared and its name replaced by `name`
    /// (upstream `tensor_like`).
    pub fn tensor_like(&mut self, like: TensorId, name: impl Into<String>) -> TensorId {
        let mut t = self.tensors[like.index()].clone();
        t.uid = None;
        t.name = name.into();
        self.tensor(t)
    }
    /// Attributes of tensor `t`. Panics if `t` is not from this graph.
    pub fn tensor_attributes(&self, t: TensorId) -> &TensorAttributes {
        &self.tensors[t.index()]
    }
    /// Mutable attributes of tensor `t`. Panics if `t` is not from this graph.
    pub fn tensor_attributes_mut(&mut self, t: TensorId) -> &mut TensorAttributes {
        &mut self.tensors[t.index()]
    }
    /// Number of tensors.
    pub fn tensor_count(&self) -> usize {
        self.tensors.len()
    }
    /// Every tensor with its handle, in insertion order.
    pub fn tensors(&self) -> impl Iterator<Item = (TensorId, &TensorAttributes)> {
        self.tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (TensorId(i as u32), t))
    }
    /// Marks `t` an output (`is_virtual = !output`). Panics if `t` is not from this graph.
    pub fn set_output(&mut self, t: TensorId, output: bool) -> &mut Self {
        self.tensors[t.index()].is_virtual = !output;
        self
    }
    /// Sets the UID of `t`.
    pub fn set_uid(&mut self, t: TensorId, uid: i64) -> &mut Self {
        self.tensors[t.index()].uid = Some(uid);
        self
    }
    /// Clears the UID of `t` (it will be auto-assigned).
    pub fn clear_uid(&mut self, t: TensorId) -> &mut Self {
        self.tensors[t.index()].uid = None;
        self
    }
    /// Renames tensor `t`.
    pub fn set_tensor_name(&mut self, t: TensorId, name: impl Into<String>) -> &mut Self {
        self.tensors[t.index()].name = name.into();
        self
    }
    /// Sets the data type of `t`.
    pub fn set_data_type(&mut self, t: TensorId, dt: DataType) -> &mut Self {
        self.tensors[t.index()].data_type = dt;
        self
    }
    /// Sets the dims of `t` (and packed strides in its current layout when the rank changes
    /// or strides are unset).
    pub fn set_dims(&mut self, t: TensorId, dims: impl Into<Vec<i64>>) -> &mut Self {
        let tensor = &mut self.tensors[t.index()];
        let dims = dims.into();
        let order = if tensor.strides.len() == dims.len() {
            stride_order(&tensor.strides)
        } else {
            (0..dims.len()).collect()
        };
        tensor.strides = packed_strides(&dims, &order);
        tensor.dims = dims;
        self
    }
    /// Sets the strides of `t` (elements).
    pub fn set_strides(&mut self, t: TensorId, strides: impl Into<Vec<i64>>) -> &mut Self {
        self.tensors[t.index()].strides = strides.into();
        self
    }
    /// Handles of the tensors named `name`, in insertion order (names need not be unique).
    pub fn tensors_by_name(&self, name: &str) -> Vec<TensorId> {
        self.tensors()
            .filter(|(_, t)| t.name == name)
            .map(|(i, _)| i)
            .collect()
    }
    /// Handle of the (first) tensor with UID `uid`.
    pub fn tensor_by_uid(&self, uid: i64) -> Option<TensorId> {
        self.tensors()
            .find(|(_, t)| t.uid == Some(uid))
            .map(|(i, _)| i)
    }

    // ---- nodes ----

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
    /// Every node with its handle, in insertion order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Operation)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (NodeId(i as u32), n))
    }
    /// Node `n`. Panics if `n` is not from this graph.
    pub fn node(&self, n: NodeId) -> &Operation {
        &self.nodes[n.index()]
    }
    /// Mutable node `n`. Panics if `n` is not from this graph.
    pub fn node_mut(&mut self, n: NodeId) -> &mut Operation {
        &mut self.nodes[n.index()]
    }
    /// The node that writes tensor `t`, if any (the first one in insertion order).
    pub fn producer(&self, t: TensorId) -> Option<NodeId> {
        self.nodes()
            .find(|(_, n)| n.inputs_outputs().1.contains(&t))
            .map(|(i, _)| i)
    }

    /// Appends a node exactly as given (no naming, no output creation) and returns its handle.
    /// Used by the loaders and for hand-assembled graphs; the op methods ([`Graph::conv_fprop`],
    /// ...) are the usual way to add nodes.
    pub fn add_node(&mut self, op: impl Into<Operation>) -> NodeId {
        let id = NodeId(u32::try_from(self.nodes.len()).expect("more than 2^32 nodes"));
        self.nodes.push(op.into());
        id
    }
}
