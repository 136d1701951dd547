//! Test support, public so other crates' tests can reuse it: a small builder that writes a
//! `Graph` FlatBuffer from tensor specs and node closures, and byte codecs for host buffers.
//!
//! `TensorAttributes` is written by hand (`start_table`/`push_slot`) because the generated
//! builder cannot add the `value` union (see `hipdnn_schema::tensor_value`). Nodes are closures
//! that write their attribute table into the same builder. Owns no engine logic.

use super::dtype::Elem;
use super::ops::conv::ConvGeometry;
use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, WIPOffset};
use hipdnn_schema::graph::{
    ConvMode, ConvolutionFwdAttributes, ConvolutionFwdAttributesArgs, DataType, Graph, GraphArgs,
    MatmulAttributes, MatmulAttributesArgs, Node, NodeArgs, NodeAttributes, PointwiseAttributes,
    PointwiseAttributesArgs, PointwiseMode, TensorAttributes,
};
use hipdnn_schema::tensor_value::{TensorValue, add_tensor_value, push_tensor_value};

/// Row-major packed strides (NCHW-style) for `dims`, in elements.
pub fn packed_strides(dims: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// Channels-last strides (NHWC / NDHWC) for logical dims `(N, C, spatial…)`, in elements.
pub fn channels_last_strides(dims: &[i64]) -> Vec<i64> {
    let r = dims.len();
    if r < 3 {
        return packed_strides(dims);
    }
    // Memory order: N, spatial…, C.
    let mut order: Vec<usize> = vec![0];
    order.extend(2..r);
    order.push(1);
    let mut s = vec![0i64; r];
    let mut acc = 1i64;
    for &ax in order.iter().rev() {
        s[ax] = acc;
        acc *= dims[ax];
    }
    s
}

/// One tensor of a test graph.
#[derive(Debug, Clone)]
pub struct TensorSpec {
    /// UID.
    pub uid: i64,
    /// Name.
    pub name: String,
    /// Data type.
    pub data_type: DataType,
    /// Logical dims.
    pub dims: Vec<i64>,
    /// Strides in elements.
    pub strides: Vec<i64>,
    /// Virtual tensor.
    pub is_virtual: bool,
    /// Baked pass-by-value value.
    pub value: Option<TensorValue>,
    /// Runtime pass-by-value flag.
    pub runtime: bool,
}

impl TensorSpec {
    /// A packed (row-major) tensor.
    pub fn new(uid: i64, name: &str, data_type: DataType, dims: &[i64]) -> Self {
        TensorSpec {
            uid,
            name: name.to_string(),
            data_type,
            dims: dims.to_vec(),
            strides: packed_strides(dims),
            is_virtual: false,
            value: None,
            runtime: false,
        }
    }
    /// A compile-time constant scalar (dims = strides = `[1]`).
    pub fn scalar(uid: i64, name: &str, value: TensorValue) -> Self {
        let dt = match value {
            TensorValue::Float32(_) => DataType::FLOAT,
            TensorValue::Float16(_) => DataType::HALF,
            TensorValue::BFloat16(_) => DataType::BFLOAT16,
            TensorValue::Float8(_) => DataType::UINT8,
            TensorValue::Int32(_) => DataType::INT32,
            TensorValue::Float64(_) => DataType::DOUBLE,
            TensorValue::Int64(_) => DataType::INT64,
            TensorValue::Bool(_) => DataType::BOOLEAN,
        };
        let mut t = TensorSpec::new(uid, name, dt, &[1]);
        t.value = Some(value);
        t
    }
    /// Sets explicit strides.
    pub fn strides(mut self, s: &[i64]) -> Self {
        self.strides = s.to_vec();
        self
    }
    /// Channels-last strides.
    pub fn channels_last(mut self) -> Self {
        self.strides = channels_last_strides(&self.dims);
        self
    }
    /// Marks the tensor virtual.
    pub fn virtual_(mut self) -> Self {
        self.is_virtual = true;
        self
    }
    /// Marks the tensor a runtime pass-by-value scalar.
    pub fn runtime(mut self) -> Self {
        self.runtime = true;
        self
    }
    /// Element codec of the tensor's type.
    ///
    /// # Panics
    /// When the CPU reference engine does not support the type.
    pub fn elem(&self) -> Elem {
        Elem::from_data_type(self.data_type).expect("supported data type")
    }
    /// Buffer bytes needed: `(Σ (dim-1)·stride + 1) · element size`.
    pub fn bytes_len(&self) -> usize {
        let span: i64 = self
            .dims
            .iter()
            .zip(&self.strides)
            .map(|(d, s)| (d - 1) * s)
            .sum();
        (span as usize + 1) * self.elem().size()
    }
    /// Byte offset of each logical element, row-major over dims.
    pub fn offsets(&self) -> Vec<usize> {
        let n: i64 = self.dims.iter().product();
        let es = self.elem().size();
        (0..n)
            .map(|mut flat| {
                let mut off = 0i64;
                for d in (0..self.dims.len()).rev() {
                    off += (flat % self.dims[d]) * self.strides[d];
                    flat /= self.dims[d];
                }
                off as usize * es
            })
            .collect()
    }
    /// Encodes dense row-major `values` into a buffer laid out by the strides (gaps zero).
    pub fn encode(&self, values: &[f32]) -> Vec<u8> {
        let mut b = vec![0u8; self.bytes_len()];
        let es = self.elem().size();
        for (o, v) in self.offsets().into_iter().zip(values) {
            self.elem().write(*v, &mut b[o..o + es]);
        }
        b
    }
    /// Decodes a strided buffer into dense row-major values.
    pub fn decode(&self, bytes: &[u8]) -> Vec<f32> {
        let es = self.elem().size();
        self.offsets()
            .into_iter()
            .map(|o| self.elem().read(&bytes[o..o + es]))
            .collect()
    }
    /// `values` rounded to the tensor's type (what a round trip through a buffer gives).
    pub fn quantize(&self, values: &[f32]) -> Vec<f32> {
        values.iter().map(|&v| self.elem().quantize(v)).collect()
    }
}

/// Writes one node's attribute table; returns the union type and offset.
pub type NodeWriter =
    Box<dyn FnOnce(&mut FlatBufferBuilder<'static>) -> (NodeAttributes, WIPOffset<UnionWIPOffset>)>;

/// Builds a `Graph` FlatBuffer.
pub struct GraphBuilder {
    name: String,
    tensors: Vec<TensorSpec>,
    nodes: Vec<(String, NodeWriter)>,
    override_shape_enabled: bool,
}

impl GraphBuilder {
    /// An empty graph named `name` (io/compute/intermediate types FLOAT).
    pub fn new(name: &str) -> Self {
        GraphBuilder {
            name: name.to_string(),
            tensors: Vec::new(),
            nodes: Vec::new(),
            override_shape_enabled: false,
        }
    }
    /// Sets the graph's override-shape flag (execute-time shape overrides, RFC 0008).
    pub fn override_shape_enabled(&mut self, on: bool) -> &mut Self {
        self.override_shape_enabled = on;
        self
    }
    /// Adds a tensor.
    pub fn tensor(&mut self, t: TensorSpec) -> &mut Self {
        self.tensors.push(t);
        self
    }
    /// Adds a node written by `w`.
    pub fn node(&mut self, name: &str, w: NodeWriter) -> &mut Self {
        self.nodes.push((name.to_string(), w));
        self
    }
    /// Adds a matmul node `c = a · b` (UIDs).
    pub fn matmul(&mut self, name: &str, a: i64, b: i64, c: i64) -> &mut Self {
        self.node(
            name,
            Box::new(move |fbb| {
                (
                    NodeAttributes::MatmulAttributes,
                    MatmulAttributes::create(
                        fbb,
                        &MatmulAttributesArgs {
                            a_tensor_uid: a,
                            b_tensor_uid: b,
                            c_tensor_uid: c,
                        },
                    )
                    .as_union_value(),
                )
            }),
        )
    }
    /// Adds a pointwise node.
    pub fn pointwise(&mut self, name: &str, args: PointwiseAttributesArgs) -> &mut Self {
        self.node(
            name,
            Box::new(move |fbb| {
                (
                    NodeAttributes::PointwiseAttributes,
                    PointwiseAttributes::create(fbb, &args).as_union_value(),
                )
            }),
        )
    }
    /// Adds a custom-op node `custom_op_id(ins) → outs` carrying `data` (no data vector when
    /// empty), e.g. the `hipdnn_rs.gather` row gather.
    pub fn custom_op(
        &mut self,
        name: &str,
        id: &'static str,
        ins: &[i64],
        outs: &[i64],
        data: &'static [u8],
    ) -> &mut Self {
        use hipdnn_schema::graph::{CustomOpAttributes, CustomOpAttributesArgs};
        let (ins, outs) = (ins.to_vec(), outs.to_vec());
        self.node(
            name,
            Box::new(move |fbb| {
                let args = CustomOpAttributesArgs {
                    custom_op_id: Some(fbb.create_string(id)),
                    input_tensor_uids: Some(fbb.create_vector(&ins)),
                    output_tensor_uids: Some(fbb.create_vector(&outs)),
                    data: (!data.is_empty()).then(|| fbb.create_vector(data)),
                };
                (
                    NodeAttributes::CustomOpAttributes,
                    CustomOpAttributes::create(fbb, &args).as_union_value(),
                )
            }),
        )
    }
    /// Adds a convolution forward node `x, w → y` with the padding, stride, dilation and mode
    /// of `geo` (the engine's own parsed form of those attributes).
    pub fn conv_fprop(
        &mut self,
        name: &str,
        x: i64,
        w: i64,
        y: i64,
        geo: &ConvGeometry,
    ) -> &mut Self {
        let i64s = |v: &[usize]| v.iter().map(|&e| e as i64).collect::<Vec<_>>();
        let (pre_v, post_v) = (i64s(&geo.pre), i64s(&geo.post));
        let (stride_v, dil_v) = (i64s(&geo.stride), i64s(&geo.dilation));
        let mode = if geo.flip {
            ConvMode::CONVOLUTION
        } else {
            ConvMode::CROSS_CORRELATION
        };
        self.node(
            name,
            Box::new(move |fbb| {
                let (pre, post) = (fbb.create_vector(&pre_v), fbb.create_vector(&post_v));
                let (stride, dil) = (fbb.create_vector(&stride_v), fbb.create_vector(&dil_v));
                let args = ConvolutionFwdAttributesArgs {
                    x_tensor_uid: x,
                    w_tensor_uid: w,
                    y_tensor_uid: y,
                    pre_padding: Some(pre),
                    post_padding: Some(post),
                    stride: Some(stride),
                    dilation: Some(dil),
                    conv_mode: mode,
                };
                (
                    NodeAttributes::ConvolutionFwdAttributes,
                    ConvolutionFwdAttributes::create(fbb, &args).as_union_value(),
                )
            }),
        )
    }
    /// The tensor spec with `uid`.
    ///
    /// # Panics
    /// When no tensor has that UID.
    pub fn spec(&self, uid: i64) -> &TensorSpec {
        self.tensors
            .iter()
            .find(|t| t.uid == uid)
            .expect("uid present")
    }
    /// Serializes the graph.
    pub fn build(self) -> Vec<u8> {
        let mut fbb: FlatBufferBuilder<'static> = FlatBufferBuilder::new();
        let mut toffs = Vec::new();
        for t in &self.tensors {
            let name = fbb.create_string(&t.name);
            let strides = fbb.create_vector(&t.strides);
            let dims = fbb.create_vector(&t.dims);
            let value = t.value.map(|v| push_tensor_value(&mut fbb, v));
            let start = fbb.start_table();
            fbb.push_slot::<i64>(TensorAttributes::VT_UID, t.uid, 0);
            fbb.push_slot_always(TensorAttributes::VT_NAME, name);
            fbb.push_slot_always(TensorAttributes::VT_STRIDES, strides);
            fbb.push_slot_always(TensorAttributes::VT_DIMS, dims);
            if let Some(v) = value {
                add_tensor_value(&mut fbb, v);
            }
            fbb.push_slot::<i64>(TensorAttributes::VT_ALIGNMENT, 16, 16);
            fbb.push_slot::<DataType>(TensorAttributes::VT_DATA_TYPE, t.data_type, DataType::UNSET);
            fbb.push_slot::<bool>(TensorAttributes::VT_VIRTUAL_, t.is_virtual, false);
            fbb.push_slot::<bool>(
                TensorAttributes::VT_IS_RUNTIME_PASS_BY_VALUE,
                t.runtime,
                false,
            );
            let end = fbb.end_table(start);
            toffs.push(WIPOffset::<TensorAttributes>::new(end.value()));
        }
        let tensors = fbb.create_vector(&toffs);
        let mut noffs = Vec::new();
        for (name, w) in self.nodes {
            let (ty, off) = w(&mut fbb);
            let name = fbb.create_string(&name);
            noffs.push(Node::create(
                &mut fbb,
                &NodeArgs {
                    name: Some(name),
                    compute_data_type: DataType::FLOAT,
                    attributes_type: ty,
                    attributes: Some(off),
                },
            ));
        }
        let nodes = fbb.create_vector(&noffs);
        let name = fbb.create_string(&self.name);
        let g = Graph::create(
            &mut fbb,
            &GraphArgs {
                name: Some(name),
                compute_data_type: DataType::FLOAT,
                intermediate_data_type: DataType::FLOAT,
                io_data_type: DataType::FLOAT,
                tensors: Some(tensors),
                nodes: Some(nodes),
                is_override_shape_enabled: self.override_shape_enabled,
                ..Default::default()
            },
        );
        fbb.finish_minimal(g);
        fbb.finished_data().to_vec()
    }
}

/// Absolute/relative tolerances per data type, the one place tests take them from:
/// f32 `1e-5` for elementwise ops and `1e-4` for sums (conv, matmul, norms, reductions,
/// SDPA); f16 `1e-2`; bf16 `2e-2`; integer and boolean types exact.
pub fn tolerance(dt: DataType, accumulates: bool) -> f32 {
    match dt {
        DataType::FLOAT | DataType::DOUBLE => {
            if accumulates {
                1e-4
            } else {
                1e-5
            }
        }
        DataType::HALF => 1e-2,
        DataType::BFLOAT16 => 2e-2,
        _ => 0.0,
    }
}

/// Asserts `|got − want| ≤ tol · (1 + |want|)` elementwise (NaN equals NaN, infinities must
/// match exactly).
///
/// # Panics
/// On a length mismatch or the first element out of tolerance, naming `what` and the index.
pub fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if g.is_nan() && w.is_nan() || g == w {
            continue;
        }
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i}: got {g}, want {w} (tol {tol})"
        );
    }
}

/// Deterministic pseudo-random values uniform in `[lo, hi)` (xorshift64*, seeded).
pub fn random_values(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let r = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32;
            lo + (hi - lo) * r
        })
        .collect()
}

/// Builds, plans and executes `graph` on the CPU reference engine: `inputs` are dense
/// row-major values per UID (encoded by the tensor's strides and type), `outputs` the UIDs to
/// return (decoded to dense row-major f32).
///
/// # Errors
/// Any error of `OperationGraph::from_bytes` (as `BAD_PARAM`), `create_execution_context` or
/// `execute`.
pub fn run_graph(
    builder: GraphBuilder,
    inputs: &[(i64, Vec<f32>)],
    outputs: &[i64],
) -> hipdnn_backend::PluginResult<Vec<Vec<f32>>> {
    use hipdnn_backend::{
        BufferRef, Engine, EngineConfig, ExecuteArgs, OperationGraph, PluginError, TensorBinding,
    };
    let specs: Vec<TensorSpec> = builder.tensors.clone();
    let spec = |u: i64| {
        specs
            .iter()
            .find(|t| t.uid == u)
            .expect("uid present")
            .clone()
    };
    let bytes = builder.build();
    let graph =
        OperationGraph::from_bytes(&bytes).map_err(|e| PluginError::bad_param(e.message))?;
    let engine = super::ReferenceEngine::new();
    let ctx = engine.create_execution_context(
        &EngineConfig {
            engine_id: engine.id(),
            knob_choices: vec![],
        },
        &graph,
    )?;
    let in_bufs: Vec<(i64, Vec<u8>)> = inputs
        .iter()
        .map(|(u, v)| (*u, spec(*u).encode(v)))
        .collect();
    let mut out_bufs: Vec<(i64, Vec<u8>)> = outputs
        .iter()
        .map(|&u| (u, vec![0u8; spec(u).bytes_len()]))
        .collect();
    let mut bindings: Vec<TensorBinding<'_>> = in_bufs
        .iter()
        .map(|(u, b)| TensorBinding {
            uid: *u,
            data: BufferRef::Host(b),
        })
        .chain(out_bufs.iter_mut().map(|(u, b)| TensorBinding {
            uid: *u,
            data: BufferRef::HostMut(b),
        }))
        .collect();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut bindings,
    })?;
    drop(bindings);
    Ok(out_bufs.iter().map(|(u, b)| spec(*u).decode(b)).collect())
}

/// The attributes of a pointwise node `mode(ins…) → out` with every optional attribute at its
/// default (`ins`: 1–3 input UIDs).
pub fn pw_args(mode: PointwiseMode, ins: &[i64], out: i64) -> PointwiseAttributesArgs {
    PointwiseAttributesArgs {
        operation: mode,
        in_0_tensor_uid: ins[0],
        in_1_tensor_uid: ins.get(1).copied(),
        in_2_tensor_uid: ins.get(2).copied(),
        out_0_tensor_uid: out,
        ..Default::default()
    }
}

/// The kinds of the steps the CPU reference engine's plan runs for `builder`'s graph, in
/// order (`"Reduction"`, `"Pointwise"`, `"Softmax"`, …: the [`super::step::Op`] variant
/// names), after its fusions, so a test can tell whether a pattern was fused.
///
/// # Errors
/// As [`run_graph`]'s planning.
pub fn plan_steps(builder: GraphBuilder) -> hipdnn_backend::PluginResult<Vec<String>> {
    let bytes = builder.build();
    let graph = hipdnn_backend::OperationGraph::from_bytes(&bytes)
        .map_err(|e| hipdnn_backend::PluginError::bad_param(e.message))?;
    let plan = super::plan::Plan::from_graph(&graph.graph())?;
    Ok(plan
        .steps
        .iter()
        .map(|s| {
            let d = format!("{:?}", s.op);
            d[..d.find('(').unwrap_or(d.len())].to_string()
        })
        .collect())
}

/// Whether the CPU reference engine's plan for `builder`'s graph runs its steps on the calling
/// thread (its work is at most `INLINE_WORK`, 32 Ki elements or multiply-adds) instead of
/// handing them to the rayon pool.
///
/// # Errors
/// As [`run_graph`]'s planning.
pub fn plan_runs_inline(builder: GraphBuilder) -> hipdnn_backend::PluginResult<bool> {
    let bytes = builder.build();
    let graph = hipdnn_backend::OperationGraph::from_bytes(&bytes)
        .map_err(|e| hipdnn_backend::PluginError::bad_param(e.message))?;
    Ok(super::plan::Plan::from_graph(&graph.graph())?.inline)
}

/// The pooling attributes of a test resample node: the engine's own parsed geometry, the mode
/// and the padding mode.
#[derive(Debug, Clone)]
pub struct PoolSpec {
    /// Window, stride, pre and post padding.
    pub geo: super::ops::resample::PoolGeometry,
    /// `MAXPOOL`, `AVGPOOL_INCLUDE_PADDING`, `AVGPOOL_EXCLUDE_PADDING` (or any other, to test
    /// refusals).
    pub mode: hipdnn_schema::graph::ResampleMode,
    /// Padding mode.
    pub padding: hipdnn_schema::graph::PaddingMode,
}

impl GraphBuilder {
    /// Adds a resample forward node `x → y` (and the max-pool `index` when given, with
    /// `generate_index` set) with the attributes of `p`.
    pub fn resample_fwd(
        &mut self,
        name: &str,
        x: i64,
        y: i64,
        index: Option<i64>,
        p: &PoolSpec,
    ) -> &mut Self {
        use hipdnn_schema::graph::{ResampleFwdAttributes, ResampleFwdAttributesArgs};
        let p = p.clone();
        self.node(
            name,
            Box::new(move |fbb| {
                let [window, stride, pre, post] = pool_vectors(fbb, &p.geo);
                let args = ResampleFwdAttributesArgs {
                    x_tensor_uid: x,
                    y_tensor_uid: y,
                    index_tensor_uid: index,
                    pre_padding: Some(pre),
                    post_padding: Some(post),
                    stride: Some(stride),
                    window: Some(window),
                    resample_mode: p.mode,
                    padding_mode: p.padding,
                    generate_index: Some(index.is_some()),
                };
                (
                    NodeAttributes::ResampleFwdAttributes,
                    ResampleFwdAttributes::create(fbb, &args).as_union_value(),
                )
            }),
        )
    }

    /// Adds a resample backward node `dy (, index) → dx` with the attributes of `p`.
    pub fn resample_bwd(
        &mut self,
        name: &str,
        dy: i64,
        index: Option<i64>,
        dx: i64,
        p: &PoolSpec,
    ) -> &mut Self {
        use hipdnn_schema::graph::{ResampleBwdAttributes, ResampleBwdAttributesArgs};
        let p = p.clone();
        self.node(
            name,
            Box::new(move |fbb| {
                let [window, stride, pre, post] = pool_vectors(fbb, &p.geo);
                let args = ResampleBwdAttributesArgs {
                    dy_tensor_uid: dy,
                    dx_tensor_uid: dx,
                    index_tensor_uid: index,
                    pre_padding: Some(pre),
                    post_padding: Some(post),
                    stride: Some(stride),
                    window: Some(window),
                    resample_mode: p.mode,
                    padding_mode: p.padding,
                };
                (
                    NodeAttributes::ResampleBwdAttributes,
                    ResampleBwdAttributes::create(fbb, &args).as_union_value(),
                )
            }),
        )
    }
}

/// The window, stride, pre and post padding vectors of `g`, written into `fbb`.
fn pool_vectors(
    fbb: &mut FlatBufferBuilder<'static>,
    g: &super::ops::resample::PoolGeometry,
) -> [WIPOffset<flatbuffers::Vector<'static, i64>>; 4] {
    let i64s = |v: &[usize]| v.iter().map(|&e| e as i64).collect::<Vec<_>>();
    [&g.window, &g.stride, &g.pre, &g.post].map(|v| fbb.create_vector(&i64s(v)))
}

/// SDPA node helpers (forward and backward).
impl GraphBuilder {
    /// Adds an SDPA forward node with attributes `args`.
    pub fn sdpa(
        &mut self,
        name: &str,
        args: hipdnn_schema::graph::SdpaAttributesArgs,
    ) -> &mut Self {
        self.node(
            name,
            Box::new(move |fbb| {
                (
                    NodeAttributes::SdpaAttributes,
                    hipdnn_schema::graph::SdpaAttributes::create(fbb, &args).as_union_value(),
                )
            }),
        )
    }
    /// Adds an SDPA backward node with attributes `args`.
    pub fn sdpa_backward(
        &mut self,
        name: &str,
        args: hipdnn_schema::graph::SdpaBackwardAttributesArgs,
    ) -> &mut Self {
        self.node(
            name,
            Box::new(move |fbb| {
                (
                    NodeAttributes::SdpaBackwardAttributes,
                    hipdnn_schema::graph::SdpaBackwardAttributes::create(fbb, &args)
                        .as_union_value(),
                )
            }),
        )
    }
}
