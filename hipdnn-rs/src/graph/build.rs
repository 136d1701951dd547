//! Operation methods: each appends one node and creates its outputs as new virtual tensors
//! with inferred dims, strides and data type (upstream `Graph::conv_fprop` etc.).
//!
//! Naming (upstream rule): an unnamed op becomes `"<Kind>_<nodeIndex>"` (e.g. `ConvFprop_0`),
//! its outputs `"<opname>::<ROLE>"` (e.g. `ConvFprop_0::Y`). Outputs get packed strides in the
//! layout (stride order) of the op's first input when the ranks agree (for a binary or ternary
//! pointwise op, the first input that is not broadcast), row-major otherwise (and always for
//! matmul), and the graph's intermediate type when set, else the first input's type. Shape
//! inference only fills what it can; [`Graph::validate`] reports what is wrong. All methods
//! panic if a handle is not from this graph.

use super::ops::*;
use super::tensor::{TensorAttributes, TensorId, layout_order, packed_strides};
use super::types::*;
use super::{Graph, Operation};
use hipdnn_backend::ops::conv::{self as conv_rule, ExtentError, Window};
use hipdnn_backend::ops::gather as gather_rule;
use hipdnn_backend::ops::{
    broadcast::broadcast_shape, matmul, norm, resample as resample_rule, sdpa,
};

/// Outputs of [`Graph::batchnorm`].
///
/// ```
/// use hipdnn::{BatchnormAttributes, Graph, TensorAttributes, TensorValue};
/// let mut g = Graph::new();
/// let x = g.tensor(TensorAttributes::new("x").dims([8, 3, 4, 4]));
/// let [scale, bias, prev_mean, prev_var] = ["scale", "bias", "prev_mean", "prev_var"]
///     .map(|n| g.tensor(TensorAttributes::new(n).dims([1, 3, 1, 1])));
/// let eps = g.tensor(TensorAttributes::scalar(TensorValue::Float32(1e-5)));
/// let momentum = g.tensor(TensorAttributes::scalar(TensorValue::Float32(0.1)));
/// let attrs = BatchnormAttributes::new()
///     .epsilon(eps)
///     .prev_running_mean(prev_mean)
///     .prev_running_variance(prev_var)
///     .momentum(momentum);
/// let out = g.batchnorm(x, scale, bias, attrs);
/// assert_eq!(g.tensor_attributes(out.y).dims, [8, 3, 4, 4]);
/// let next_mean = out.next_running_mean.expect("all three running inputs are set");
/// assert_eq!(g.tensor_attributes(next_mean).dims, [1, 3, 1, 1]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchnormOutputs {
    /// Normalized output (dims of x).
    pub y: TensorId,
    /// Saved per-channel mean (1, C, 1, ..).
    pub mean: TensorId,
    /// Saved per-channel inverse variance (1, C, 1, ..).
    pub inv_variance: TensorId,
    /// Next running mean; only when prev running mean, variance and momentum are all set.
    pub next_running_mean: Option<TensorId>,
    /// Next running variance; same condition.
    pub next_running_variance: Option<TensorId>,
}

/// A dim inferred by an op table rule: the rule's value, also when it is not positive
/// (validation then reports the tensor's dims), and 0 when the rule has no value (stride
/// `<= 0`, `i64` overflow).
fn inferred(r: Result<i64, ExtentError>) -> i64 {
    match r {
        Ok(v) | Err(ExtentError::NonPositive(v)) => v,
        Err(_) => 0,
    }
}

fn at(v: &[i64], i: usize, default: i64) -> i64 {
    v.get(i).copied().unwrap_or(default)
}

/// The dim order (outermost first) of an op output laid out after an input with `dims` and
/// `strides`: the channels-last order `[0, 2, …, n−1, 1]` when the input's axes that carry a
/// layout ([`layout_order`]: not broadcast, extent > 1) are in channels-last order and not
/// also in row-major order, else row-major `[0, 1, …, n−1]`. Every other layout (transposed,
/// permuted, column-major) is read back row-major, the order `Buffer::to_vec` users expect.
fn reading_order(dims: &[i64], strides: &[i64]) -> Vec<usize> {
    let n = dims.len();
    let row_major: Vec<usize> = (0..n).collect();
    if n < 3 {
        return row_major;
    }
    let channels_last: Vec<usize> = std::iter::once(0)
        .chain(2..n)
        .chain(std::iter::once(1))
        .collect();
    let laid_out = |order: &[usize]| -> Vec<usize> {
        order
            .iter()
            .copied()
            .filter(|&a| dims[a] != 1 && strides[a] != 0)
            .collect()
    };
    let input = laid_out(&layout_order(dims, strides));
    if input == laid_out(&channels_last) && input != laid_out(&row_major) {
        channels_last
    } else {
        row_major
    }
}

impl Graph {
    fn dims_of(&self, t: TensorId) -> Vec<i64> {
        self.tensors[t.index()].dims.clone()
    }

    fn node_name(&self, given: &mut String, kind: &str) -> String {
        if given.is_empty() {
            *given = format!("{kind}_{}", self.nodes.len());
        }
        given.clone()
    }

    fn output_type(&self, first: TensorId) -> DataType {
        if self.intermediate_data_type != DataType::Unset {
            self.intermediate_data_type
        } else {
            self.tensors[first.index()].data_type
        }
    }

    /// Creates a virtual output tensor `<op>::<ROLE>` packed in the order a user reads:
    /// channels-last (`N, spatial…, C`) when `like` is channels-last, row-major otherwise
    /// (a transposed, permuted, padded or broadcast input gives a row-major output; see
    /// [`reading_order`]).
    fn output(
        &mut self,
        op: &str,
        role: &str,
        dims: Vec<i64>,
        like: TensorId,
        data_type: DataType,
    ) -> TensorId {
        let l = &self.tensors[like.index()];
        let order = if l.strides.len() == dims.len() && l.dims.len() == dims.len() {
            reading_order(&l.dims, &l.strides)
        } else {
            (0..dims.len()).collect()
        };
        self.output_in(op, role, dims, order, data_type)
    }

    /// Creates a virtual output tensor `<op>::<ROLE>` packed in dim `order` (outermost first).
    fn output_in(
        &mut self,
        op: &str,
        role: &str,
        dims: Vec<i64>,
        order: Vec<usize>,
        data_type: DataType,
    ) -> TensorId {
        let strides = packed_strides(&dims, &order);
        self.tensor(TensorAttributes {
            name: format!("{op}::{role}"),
            data_type,
            dims,
            strides,
            is_virtual: true,
            ..Default::default()
        })
    }

    /// The input whose layout an elementwise op's output takes: the first of `inputs` that
    /// spans the output (its dims are the output's and no axis of extent > 1 is broadcast),
    /// else the first input. A broadcast operand (a per-channel bias) carries no layout, so
    /// `bias + x` is laid out like `x`, as `x + bias` is.
    fn layout_source(&self, inputs: &[TensorId], dims: &[i64]) -> TensorId {
        inputs
            .iter()
            .copied()
            .find(|&t| {
                let a = &self.tensors[t.index()];
                a.dims == dims
                    && a.strides.len() == dims.len()
                    && a.dims
                        .iter()
                        .zip(&a.strides)
                        .all(|(&d, &s)| d == 1 || s != 0)
            })
            .unwrap_or(inputs[0])
    }

    fn push(&mut self, op: impl Into<Operation>) {
        self.add_node(op);
    }

    /// Unary pointwise op (`ABS`, `RELU_FWD`, ...): `out_0 = f(in_0)`, dims of x.
    pub fn pointwise_unary(&mut self, x: TensorId, mut attrs: PointwiseAttributes) -> TensorId {
        let name = self.node_name(&mut attrs.name, "Pointwise");
        let y = self.output(&name, "OUT_0", self.dims_of(x), x, self.output_type(x));
        attrs.in_0 = Some(x);
        attrs.out_0 = Some(y);
        self.push(attrs);
        y
    }

    /// Binary pointwise op (`ADD`, `MUL`, ...): `out_0 = f(in_0, in_1)`, numpy-broadcast dims,
    /// packed in the layout of the first input that is not broadcast (`bias + x` is laid out
    /// like `x`), else of `a`.
    pub fn pointwise(
        &mut self,
        a: TensorId,
        b: TensorId,
        mut attrs: PointwiseAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "Pointwise");
        let dims = broadcast_shape(&[&self.dims_of(a), &self.dims_of(b)]);
        let like = self.layout_source(&[a, b], &dims);
        let y = self.output(&name, "OUT_0", dims, like, self.output_type(a));
        attrs.in_0 = Some(a);
        attrs.in_1 = Some(b);
        attrs.out_0 = Some(y);
        self.push(attrs);
        y
    }

    /// Ternary pointwise op (`BINARY_SELECT`), numpy-broadcast dims of the three inputs, laid
    /// out as [`Graph::pointwise`]'s output.
    pub fn pointwise_ternary(
        &mut self,
        a: TensorId,
        b: TensorId,
        c: TensorId,
        mut attrs: PointwiseAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "Pointwise");
        let dims = broadcast_shape(&[&self.dims_of(a), &self.dims_of(b), &self.dims_of(c)]);
        let like = self.layout_source(&[a, b, c], &dims);
        let y = self.output(&name, "OUT_0", dims, like, self.output_type(a));
        attrs.in_0 = Some(a);
        attrs.in_1 = Some(b);
        attrs.in_2 = Some(c);
        attrs.out_0 = Some(y);
        self.push(attrs);
        y
    }

    /// Convolution forward: x (N, C, spatial..), w (K, C/groups, kernel..) → y (N, K, out..)
    /// with `out = floor((in + pre + post - dilation*(k-1) - 1)/stride) + 1` (missing list
    /// entries count as pad 0, stride 1, dilation 1 for inference; validate requires them).
    ///
    /// There is no `groups` attribute: the group count is `C / w.C` (x's channels over the
    /// filter's input channels), and each group's `K / groups` output channels read only its
    /// own `w.C` input channels (depthwise: `w.C = 1`, `groups = C`). `pre_padding`,
    /// `post_padding`, `stride` and `dilation` are required, one entry per spatial dim
    /// ([`ConvFpropAttributes`]). y takes x's layout (NHWC in, NHWC out).
    ///
    /// # Example: a grouped 1×1 convolution (2 groups)
    /// ```
    /// use hipdnn::{Buffer, ConvFpropAttributes, DataType, Graph, Handle, TensorAttributes,
    ///              VariantPack};
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
    /// let x = g.tensor(TensorAttributes::new("x").uid(1).dims([1, 4, 2, 2])); // N C H W
    /// let w = g.tensor(TensorAttributes::new("w").uid(2).dims([2, 2, 1, 1])); // K C/groups R S
    /// let attrs = ConvFpropAttributes::new()
    ///     .padding([0, 0])
    ///     .stride([1, 1])
    ///     .dilation([1, 1]);
    /// let y = g.conv_fprop(x, w, attrs);
    /// assert_eq!(g.tensor_attributes(y).dims, [1, 2, 2, 2]);
    /// g.set_output(y, true).set_uid(y, 3);
    ///
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// // x channel c, pixel p = 10·c + p.
    /// let xs: Vec<f32> = (0..4).flat_map(|c| (0..4).map(move |p| (10 * c + p) as f32)).collect();
    /// let xb = Buffer::from_slice(&xs);
    /// // Group 0: y0 = x0 + x1; group 1: y1 = x2 − x3.
    /// let wb = Buffer::from_slice(&[1f32, 1., 1., -1.]);
    /// let mut yb = Buffer::<f32>::zeros(8);
    /// let mut ws = Buffer::<u8>::zeros(g.workspace_size()?);
    /// g.execute(&handle, VariantPack::new().input(1, &xb).input(2, &wb).output(3, &mut yb), Some(&mut ws))?;
    /// assert_eq!(yb.to_vec()?, [10., 12., 14., 16., -10., -10., -10., -10.]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn conv_fprop(
        &mut self,
        x: TensorId,
        w: TensorId,
        mut attrs: ConvFpropAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "ConvFprop");
        let (xd, wd) = (self.dims_of(x), self.dims_of(w));
        let mut dims = vec![at(&xd, 0, 1), at(&wd, 0, 1)];
        for i in 0..xd.len().saturating_sub(2) {
            let a = &attrs;
            dims.push(inferred(conv_rule::output_extent(
                xd[i + 2],
                at(&wd, i + 2, 1),
                Window {
                    pre: at(&a.pre_padding, i, 0),
                    post: at(&a.post_padding, i, 0),
                    stride: at(&a.stride, i, 1),
                    dilation: at(&a.dilation, i, 1),
                },
            )));
        }
        let y = self.output(&name, "Y", dims, x, self.output_type(x));
        attrs.x = Some(x);
        attrs.w = Some(w);
        attrs.y = Some(y);
        self.push(attrs);
        y
    }

    /// Convolution backward data: dy (N, K, out..), w (K, C, kernel..) → dx (N, C, in..) with
    /// `in = (out-1)*stride - pre - post + dilation*(k-1) + 1` (the smallest consistent input;
    /// set the real dims with [`Graph::set_dims`] when they differ, as upstream requires).
    pub fn conv_dgrad(
        &mut self,
        dy: TensorId,
        w: TensorId,
        mut attrs: ConvDgradAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "ConvDgrad");
        let (dd, wd) = (self.dims_of(dy), self.dims_of(w));
        let mut dims = vec![at(&dd, 0, 1), at(&wd, 1, 1)];
        for i in 0..dd.len().saturating_sub(2) {
            let a = &attrs;
            dims.push(inferred(conv_rule::data_grad_extent(
                dd[i + 2],
                at(&wd, i + 2, 1),
                Window {
                    pre: at(&a.pre_padding, i, 0),
                    post: at(&a.post_padding, i, 0),
                    stride: at(&a.stride, i, 1),
                    dilation: at(&a.dilation, i, 1),
                },
            )));
        }
        let dx = self.output(&name, "DX", dims, dy, self.output_type(dy));
        attrs.dy = Some(dy);
        attrs.w = Some(w);
        attrs.dx = Some(dx);
        self.push(attrs);
        dx
    }

    /// Convolution backward filter: dy (N, K, out..), x (N, C, in..) → dw (K, C, kernel..) with
    /// `k = ((in + pre + post - 1) - (out-1)*stride) / dilation + 1` (set the real dims with
    /// [`Graph::set_dims`] when they differ, as upstream requires).
    pub fn conv_wgrad(
        &mut self,
        dy: TensorId,
        x: TensorId,
        mut attrs: ConvWgradAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "ConvWgrad");
        let (dd, xd) = (self.dims_of(dy), self.dims_of(x));
        let mut dims = vec![at(&dd, 1, 1), at(&xd, 1, 1)];
        for i in 0..xd.len().saturating_sub(2) {
            let a = &attrs;
            // A dilation <= 0 counts as 1 here; validation reports it.
            dims.push(inferred(conv_rule::filter_grad_extent(
                xd[i + 2],
                at(&dd, i + 2, 1),
                Window {
                    pre: at(&a.pre_padding, i, 0),
                    post: at(&a.post_padding, i, 0),
                    stride: at(&a.stride, i, 1),
                    dilation: at(&a.dilation, i, 1).max(1),
                },
            )));
        }
        let dw = self.output(&name, "DW", dims, x, self.output_type(x));
        attrs.x = Some(x);
        attrs.dy = Some(dy);
        attrs.dw = Some(dw);
        self.push(attrs);
        dw
    }

    /// Matrix product: a (..batch, M, K) × b (..batch, K, N) → c (..broadcast batch, M, N),
    /// c packed row-major whatever the layouts of a and b (as `torch.matmul`: the product of a
    /// transposed view is not itself transposed).
    pub fn matmul(&mut self, a: TensorId, b: TensorId, mut attrs: MatmulAttributes) -> TensorId {
        let name = self.node_name(&mut attrs.name, "Matmul");
        let (ad, bd) = (self.dims_of(a), self.dims_of(b));
        let dims = matmul::output_dims(&ad, &bd);
        let order = (0..dims.len()).collect();
        let c = self.output_in(&name, "C", dims, order, self.output_type(a));
        attrs.a = Some(a);
        attrs.b = Some(b);
        attrs.c = Some(c);
        self.push(attrs);
        c
    }

    /// Batchnorm's per-channel statistics dims `(1, C, 1, …)` (op table rule).
    fn channel_dims(&self, x: TensorId) -> Vec<i64> {
        norm::channel_stats_dims(&self.dims_of(x))
    }

    /// Batchnorm training forward: x (N, C, ..), scale/bias (1, C, 1, ..); epsilon, and
    /// optionally prev running stats and momentum, are set on `attrs`. Outputs: y (dims of x),
    /// mean and inv_variance (1, C, 1, ..), next running mean/variance when prev mean, prev
    /// variance and momentum are all set.
    pub fn batchnorm(
        &mut self,
        x: TensorId,
        scale: TensorId,
        bias: TensorId,
        mut attrs: BatchnormAttributes,
    ) -> BatchnormOutputs {
        let name = self.node_name(&mut attrs.name, "Batchnorm");
        let dt = self.output_type(x);
        let ch = self.channel_dims(x);
        let y = self.output(&name, "Y", self.dims_of(x), x, dt);
        let mean = self.output(&name, "MEAN", ch.clone(), scale, dt);
        let inv_variance = self.output(&name, "INV_VARIANCE", ch.clone(), scale, dt);
        let running = attrs.prev_running_mean.is_some()
            && attrs.prev_running_variance.is_some()
            && attrs.momentum.is_some();
        let (nrm, nrv) = if running {
            (
                Some(self.output(&name, "NEXT_RUNNING_MEAN", ch.clone(), scale, dt)),
                Some(self.output(&name, "NEXT_RUNNING_VARIANCE", ch, scale, dt)),
            )
        } else {
            (None, None)
        };
        attrs.x = Some(x);
        attrs.scale = Some(scale);
        attrs.bias = Some(bias);
        attrs.y = Some(y);
        attrs.mean = Some(mean);
        attrs.inv_variance = Some(inv_variance);
        attrs.next_running_mean = nrm;
        attrs.next_running_variance = nrv;
        self.push(attrs);
        BatchnormOutputs {
            y,
            mean,
            inv_variance,
            next_running_mean: nrm,
            next_running_variance: nrv,
        }
    }

    /// Batchnorm backward: dy, x (N, C, ..), scale (1, C, 1, ..); saved mean / inv variance
    /// and peer stats on `attrs`. Returns `[dx, dscale, dbias]` (dims of x, scale, scale).
    pub fn batchnorm_backward(
        &mut self,
        dy: TensorId,
        x: TensorId,
        scale: TensorId,
        mut attrs: BatchnormBackwardAttributes,
    ) -> [TensorId; 3] {
        let name = self.node_name(&mut attrs.name, "BatchnormBackward");
        let dt = self.output_type(dy);
        let dx = self.output(&name, "DX", self.dims_of(x), x, dt);
        let dscale = self.output(&name, "DSCALE", self.dims_of(scale), scale, dt);
        let dbias = self.output(&name, "DBIAS", self.dims_of(scale), scale, dt);
        attrs.dy = Some(dy);
        attrs.x = Some(x);
        attrs.scale = Some(scale);
        attrs.dx = Some(dx);
        attrs.dscale = Some(dscale);
        attrs.dbias = Some(dbias);
        self.push(attrs);
        [dx, dscale, dbias]
    }

    /// Batchnorm inference `y = (x - mean) * inv_variance * scale + bias`; y has the dims of x.
    pub fn batchnorm_inference(
        &mut self,
        x: TensorId,
        mean: TensorId,
        inv_variance: TensorId,
        scale: TensorId,
        bias: TensorId,
        mut attrs: BatchnormInferenceAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "BatchnormInference");
        let y = self.output(&name, "Y", self.dims_of(x), x, self.output_type(x));
        attrs.x = Some(x);
        attrs.mean = Some(mean);
        attrs.inv_variance = Some(inv_variance);
        attrs.scale = Some(scale);
        attrs.bias = Some(bias);
        attrs.y = Some(y);
        self.push(attrs);
        y
    }

    /// Batchnorm inference from variance and an epsilon tensor; y has the dims of x.
    #[allow(clippy::too_many_arguments)]
    pub fn batchnorm_inference_variance_ext(
        &mut self,
        x: TensorId,
        mean: TensorId,
        variance: TensorId,
        scale: TensorId,
        bias: TensorId,
        epsilon: TensorId,
        mut attrs: BatchnormInferenceVarianceExtAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "BatchnormInferenceVarianceExt");
        let y = self.output(&name, "Y", self.dims_of(x), x, self.output_type(x));
        attrs.x = Some(x);
        attrs.mean = Some(mean);
        attrs.variance = Some(variance);
        attrs.scale = Some(scale);
        attrs.bias = Some(bias);
        attrs.epsilon = Some(epsilon);
        attrs.y = Some(y);
        self.push(attrs);
        y
    }

    /// Statistics dims of a normalization: x's dims where `scale` is 1, else 1.
    fn stats_dims(&self, x: TensorId, scale: TensorId) -> Vec<i64> {
        let (xd, sd) = (self.dims_of(x), self.dims_of(scale));
        xd.iter()
            .enumerate()
            .map(|(i, &d)| if at(&sd, i, 1) == 1 { d } else { 1 })
            .collect()
    }

    /// Layer normalization: x, scale, bias (epsilon on `attrs`). Returns `(y, mean,
    /// inv_variance)`; the statistics (x's dims with the normalized dims set to 1) exist only
    /// when `forward_phase` is `Training`.
    ///
    /// `y = (x − mean) / √(var + ε) · scale + bias`, the statistics taken over the normalized
    /// dims: scale and bias have x's rank with 1 on every dim that is not normalized and x's
    /// extent on every normalized (trailing) dim — `(1, …, 1, H)` to normalize each row of
    /// `(…, H)`. Epsilon is not a number but a **tensor**: a scalar
    /// ([`TensorAttributes::scalar`]) given with [`LayernormAttributes::epsilon`] (required),
    /// and [`LayernormAttributes::forward_phase`] is required too (`Inference`, or `Training`
    /// for the mean and inverse-variance outputs). y takes x's dims and layout.
    ///
    /// # Example: layernorm over the last dim, ε = 1e-5
    /// ```
    /// use hipdnn::{Buffer, DataType, Graph, Handle, LayernormAttributes, NormFwdPhase,
    ///              TensorAttributes, TensorValue, VariantPack};
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
    /// let x = g.tensor(TensorAttributes::new("x").uid(1).dims([2, 4]));
    /// let scale = g.tensor(TensorAttributes::new("scale").uid(2).dims([1, 4]));
    /// let bias = g.tensor(TensorAttributes::new("bias").uid(3).dims([1, 4]));
    /// // A compile-time constant: FLOAT, dims [1], not bound at execute.
    /// let eps = g.tensor(TensorAttributes::scalar(TensorValue::Float32(1e-5)).name("eps"));
    /// let attrs = LayernormAttributes::new()
    ///     .epsilon(eps)
    ///     .forward_phase(NormFwdPhase::Inference);
    /// let (y, mean, inv_variance) = g.layernorm(x, scale, bias, attrs);
    /// assert_eq!((mean, inv_variance), (None, None)); // Training would create them, dims [2, 1]
    /// g.set_output(y, true).set_uid(y, 4);
    ///
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// let xb = Buffer::from_slice(&[1f32, 3., 1., 3., 0., 0., 4., 4.]); // rows: var 1, var 4
    /// let sb = Buffer::from_slice(&[1f32, 2., 1., 2.]);
    /// let bb = Buffer::from_slice(&[0f32, 0., 10., 10.]);
    /// let mut yb = Buffer::<f32>::zeros(8);
    /// let mut ws = Buffer::<u8>::zeros(g.workspace_size()?);
    /// let pack = VariantPack::new().input(1, &xb).input(2, &sb).input(3, &bb).output(4, &mut yb);
    /// g.execute(&handle, pack, Some(&mut ws))?;
    /// let want = [-1f32, 2., 9., 12., -1., -2., 11., 12.];
    /// for (got, want) in yb.to_vec()?.iter().zip(want) {
    ///     assert!((got - want).abs() < 1e-4, "{got} vs {want}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn layernorm(
        &mut self,
        x: TensorId,
        scale: TensorId,
        bias: TensorId,
        mut attrs: LayernormAttributes,
    ) -> (TensorId, Option<TensorId>, Option<TensorId>) {
        let name = self.node_name(&mut attrs.name, "Layernorm");
        let dt = self.output_type(x);
        let y = self.output(&name, "Y", self.dims_of(x), x, dt);
        let (mut mean, mut inv) = (None, None);
        if attrs.forward_phase == NormFwdPhase::Training {
            let sd = self.stats_dims(x, scale);
            mean = Some(self.output(&name, "MEAN", sd.clone(), x, dt));
            inv = Some(self.output(&name, "INV_VARIANCE", sd, x, dt));
        }
        attrs.x = Some(x);
        attrs.scale = Some(scale);
        attrs.bias = Some(bias);
        attrs.y = Some(y);
        attrs.mean = mean;
        attrs.inv_variance = inv;
        self.push(attrs);
        (y, mean, inv)
    }

    /// Layer normalization backward. Returns `[dx, dscale, dbias]` (dims of x, scale, scale).
    pub fn layernorm_backward(
        &mut self,
        dy: TensorId,
        x: TensorId,
        scale: TensorId,
        mut attrs: LayernormBackwardAttributes,
    ) -> [TensorId; 3] {
        let name = self.node_name(&mut attrs.name, "LayernormBackward");
        let dt = self.output_type(dy);
        let dx = self.output(&name, "DX", self.dims_of(x), x, dt);
        let dscale = self.output(&name, "DSCALE", self.dims_of(scale), scale, dt);
        let dbias = self.output(&name, "DBIAS", self.dims_of(scale), scale, dt);
        attrs.dy = Some(dy);
        attrs.x = Some(x);
        attrs.scale = Some(scale);
        attrs.dx = Some(dx);
        attrs.dscale = Some(dscale);
        attrs.dbias = Some(dbias);
        self.push(attrs);
        [dx, dscale, dbias]
    }

    /// RMS normalization (epsilon, optional bias on `attrs`). Returns `(y, inv_rms)`; inv_rms
    /// exists only when `forward_phase` is `Training`.
    pub fn rmsnorm(
        &mut self,
        x: TensorId,
        scale: TensorId,
        mut attrs: RmsNormAttributes,
    ) -> (TensorId, Option<TensorId>) {
        let name = self.node_name(&mut attrs.name, "RmsNorm");
        let dt = self.output_type(x);
        let y = self.output(&name, "Y", self.dims_of(x), x, dt);
        let inv = (attrs.forward_phase == NormFwdPhase::Training).then(|| {
            let sd = self.stats_dims(x, scale);
            self.output(&name, "INV_RMS", sd, x, dt)
        });
        attrs.x = Some(x);
        attrs.scale = Some(scale);
        attrs.y = Some(y);
        attrs.inv_rms = inv;
        self.push(attrs);
        (y, inv)
    }

    /// RMS normalization backward. Returns `(dx, dscale, dbias)`; dbias only when
    /// `compute_dbias` (upstream `set_compute_dbias(true)`).
    pub fn rmsnorm_backward(
        &mut self,
        dy: TensorId,
        x: TensorId,
        scale: TensorId,
        inv_rms: TensorId,
        compute_dbias: bool,
        mut attrs: RmsNormBackwardAttributes,
    ) -> (TensorId, TensorId, Option<TensorId>) {
        let name = self.node_name(&mut attrs.name, "RmsNormBackward");
        let dt = self.output_type(dy);
        let dx = self.output(&name, "DX", self.dims_of(x), x, dt);
        let dscale = self.output(&name, "DSCALE", self.dims_of(scale), scale, dt);
        let dbias =
            compute_dbias.then(|| self.output(&name, "DBIAS", self.dims_of(scale), scale, dt));
        attrs.dy = Some(dy);
        attrs.x = Some(x);
        attrs.scale = Some(scale);
        attrs.inv_rms = Some(inv_rms);
        attrs.dx = Some(dx);
        attrs.dscale = Some(dscale);
        attrs.dbias = dbias;
        self.push(attrs);
        (dx, dscale, dbias)
    }

    /// Scaled dot-product attention: q (B, H, Sq, D), k (B, Hk, Skv, D), v (B, Hk, Skv, Dv) →
    /// `(o, stats)`: o (B, H, Sq, Dv); stats (B, H, Sq, 1) FLOAT when `generate_stats ==
    /// Some(true)` and `attrs.stats` is not already set. Masks, dropout, scales and the other
    /// optional tensors are set on `attrs`.
    ///
    /// `o = softmax(scale · q·kᵀ + mask) · v` per head; `Hk` divides `H` (grouped-query
    /// attention). The scale is [`SdpaAttributes::attn_scale_value`] (a number), else the
    /// [`SdpaAttributes::scale`] tensor, else 1 — set `1/√D` yourself. The mask
    /// ([`SdpaAttributes::attn_mask`]) broadcasts to (B, H, Sq, Skv): a BOOLEAN mask keeps the
    /// `true` positions (a padding mask `(B, 1, 1, Skv)` per key), a float mask is added to
    /// the scores. Causal masking is [`SdpaAttributes::causal_mask`].
    ///
    /// # Example: a key-padding mask
    /// ```
    /// use hipdnn::{Buffer, DataType, Graph, Handle, SdpaAttributes, TensorAttributes,
    ///              VariantPack};
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
    /// let q = g.tensor(TensorAttributes::new("q").uid(1).dims([1, 1, 2, 2])); // B H Sq D
    /// let k = g.tensor(TensorAttributes::new("k").uid(2).dims([1, 1, 3, 2])); // B H Skv D
    /// let v = g.tensor(TensorAttributes::new("v").uid(3).dims([1, 1, 3, 1])); // B H Skv Dv
    /// let mask = g.tensor(
    ///     TensorAttributes::new("key_mask").uid(4).data_type(DataType::Boolean).dims([1, 1, 1, 3]),
    /// );
    /// let attrs = SdpaAttributes::new().attn_mask(mask).attn_scale_value(1.0);
    /// let (o, stats) = g.sdpa(q, k, v, attrs);
    /// assert_eq!((g.tensor_attributes(o).dims.as_slice(), stats), (&[1, 1, 2, 1][..], None));
    /// g.set_output(o, true).set_uid(o, 5);
    ///
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// let ln3 = 3f32.ln();
    /// let qb = Buffer::from_slice(&[0f32, 0., 1., 0.]);
    /// let kb = Buffer::from_slice(&[0f32, 0., ln3, 0., 5., 0.]);
    /// let vb = Buffer::from_slice(&[1f32, 3., 100.]);
    /// let mb = Buffer::from_slice(&[true, true, false]); // the third key is padding
    /// let mut ob = Buffer::<f32>::zeros(2);
    /// let mut ws = Buffer::<u8>::zeros(g.workspace_size()?);
    /// let pack = VariantPack::new()
    ///     .input(1, &qb).input(2, &kb).input(3, &vb).input(4, &mb).output(5, &mut ob);
    /// g.execute(&handle, pack, Some(&mut ws))?;
    /// // Row 0: scores [0, 0, masked] → weights [1/2, 1/2]; row 1: [0, ln 3, masked] → [1/4, 3/4].
    /// let o = ob.to_vec()?;
    /// assert!((o[0] - 2.0).abs() < 1e-5 && (o[1] - 2.5).abs() < 1e-5, "{o:?}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn sdpa(
        &mut self,
        q: TensorId,
        k: TensorId,
        v: TensorId,
        mut attrs: SdpaAttributes,
    ) -> (TensorId, Option<TensorId>) {
        let name = self.node_name(&mut attrs.name, "Sdpa");
        let (qd, vd) = (self.dims_of(q), self.dims_of(v));
        let od = sdpa::output_dims(&qd, &vd);
        let o = self.output(&name, "O", od, q, self.output_type(q));
        if attrs.generate_stats == Some(true) && attrs.stats.is_none() {
            let sd = sdpa::stats_dims(&qd);
            attrs.stats = Some(self.output(&name, "STATS", sd, q, DataType::Float));
        }
        attrs.q = Some(q);
        attrs.k = Some(k);
        attrs.v = Some(v);
        attrs.o = Some(o);
        let stats = attrs.stats;
        self.push(attrs);
        (o, stats)
    }

    /// Scaled dot-product attention backward. Returns `[dq, dk, dv]` (dims of q, k, v).
    #[allow(clippy::too_many_arguments)]
    pub fn sdpa_backward(
        &mut self,
        q: TensorId,
        k: TensorId,
        v: TensorId,
        o: TensorId,
        d_o: TensorId,
        stats: TensorId,
        mut attrs: SdpaBackwardAttributes,
    ) -> [TensorId; 3] {
        let name = self.node_name(&mut attrs.name, "SdpaBackward");
        let dt = self.output_type(d_o);
        let dq = self.output(&name, "DQ", self.dims_of(q), q, dt);
        let dk = self.output(&name, "DK", self.dims_of(k), k, dt);
        let dv = self.output(&name, "DV", self.dims_of(v), v, dt);
        attrs.q = Some(q);
        attrs.k = Some(k);
        attrs.v = Some(v);
        attrs.o = Some(o);
        attrs.d_o = Some(d_o);
        attrs.stats = Some(stats);
        attrs.dq = Some(dq);
        attrs.dk = Some(dk);
        attrs.dv = Some(dv);
        self.push(attrs);
        [dq, dk, dv]
    }

    /// Reduction of x into a new tensor with dims `out_dims` (reduced dims are 1; the schema
    /// has no axis list, so the output dims define the reduction).
    pub fn reduction(
        &mut self,
        x: TensorId,
        out_dims: impl Into<Vec<i64>>,
        mut attrs: ReductionAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "Reduction");
        let y = self.output(&name, "Y", out_dims.into(), x, self.output_type(x));
        attrs.x = Some(x);
        attrs.y = Some(y);
        self.push(attrs);
        y
    }

    /// Resample forward: x (N, C, spatial..) → `(y, index)`, y (N, C, out..) with
    /// `out = floor((in + pre + post - window)/stride) + 1`; index (INT32, dims of y) when
    /// `generate_index == Some(true)` and the mode is `MaxPool`.
    pub fn resample(
        &mut self,
        x: TensorId,
        mut attrs: ResampleFwdAttributes,
    ) -> (TensorId, Option<TensorId>) {
        let name = self.node_name(&mut attrs.name, "ResampleFwd");
        let xd = self.dims_of(x);
        let mut dims: Vec<i64> = xd.iter().take(2).copied().collect();
        for i in 0..xd.len().saturating_sub(2) {
            let a = &attrs;
            dims.push(inferred(resample_rule::output_extent(
                xd[i + 2],
                at(&a.window, i, 1),
                at(&a.pre_padding, i, 0),
                at(&a.post_padding, i, 0),
                at(&a.stride, i, 1),
            )));
        }
        let y = self.output(&name, "Y", dims.clone(), x, self.output_type(x));
        let index = (attrs.generate_index == Some(true)
            && attrs.resample_mode == ResampleMode::MaxPool)
            .then(|| self.output(&name, "INDEX", dims, x, DataType::Int32));
        attrs.x = Some(x);
        attrs.y = Some(y);
        attrs.index = index;
        self.push(attrs);
        (y, index)
    }

    /// Resample forward without an index output (sets `generate_index = Some(false)`).
    pub fn resample_fwd(&mut self, x: TensorId, attrs: ResampleFwdAttributes) -> TensorId {
        self.resample(x, attrs.generate_index(false)).0
    }

    /// Resample backward: dy (N, C, out..) and optional max-pool `index` → dx (N, C, in..)
    /// with `in = (out-1)*stride + window - pre - post` (set real dims with [`Graph::set_dims`]
    /// when they differ).
    pub fn resample_bwd(
        &mut self,
        dy: TensorId,
        index: Option<TensorId>,
        mut attrs: ResampleBwdAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "ResampleBwd");
        let dd = self.dims_of(dy);
        let mut dims: Vec<i64> = dd.iter().take(2).copied().collect();
        for i in 0..dd.len().saturating_sub(2) {
            let a = &attrs;
            dims.push(inferred(resample_rule::input_extent(
                dd[i + 2],
                at(&a.window, i, 1),
                at(&a.pre_padding, i, 0),
                at(&a.post_padding, i, 0),
                at(&a.stride, i, 1),
            )));
        }
        let dx = self.output(&name, "DX", dims, dy, self.output_type(dy));
        attrs.dy = Some(dy);
        attrs.dx = Some(dx);
        attrs.index = index;
        self.push(attrs);
        dx
    }

    /// Block-scaled quantization: returns `(y, scale)`; y has x's dims and type (set the
    /// quantized type with [`Graph::set_data_type`]); scale has x's dims with the `axis` dim
    /// (default: last) divided by `block_size` (rounded up).
    pub fn block_scale_quantize(
        &mut self,
        x: TensorId,
        mut attrs: BlockScaleQuantizeAttributes,
    ) -> (TensorId, TensorId) {
        let name = self.node_name(&mut attrs.name, "BlockScaleQuantize");
        let xd = self.dims_of(x);
        let dt = self.output_type(x);
        let y = self.output(&name, "Y", xd.clone(), x, dt);
        let mut sd = xd.clone();
        let axis = attrs.axis.unwrap_or(xd.len() as i64 - 1);
        if let Some(d) = usize::try_from(axis).ok().and_then(|a| sd.get_mut(a)) {
            let b = i64::from(attrs.block_size.max(1));
            *d = (*d + b - 1) / b;
        }
        let scale = self.output(&name, "SCALE", sd, x, dt);
        attrs.x = Some(x);
        attrs.y = Some(y);
        attrs.scale = Some(scale);
        self.push(attrs);
        (y, scale)
    }

    /// Block-scaled dequantization: y has x's dims.
    pub fn block_scale_dequantize(
        &mut self,
        x: TensorId,
        scale: TensorId,
        mut attrs: BlockScaleDequantizeAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "BlockScaleDequantize");
        let y = self.output(&name, "Y", self.dims_of(x), x, self.output_type(x));
        attrs.x = Some(x);
        attrs.scale = Some(scale);
        attrs.y = Some(y);
        self.push(attrs);
        y
    }

    /// Plugin operation over `inputs` creating `num_outputs` outputs `OUT_<i>` with **empty
    /// dims** (the plugin defines them; set them with [`Graph::set_dims`]) and the type of the
    /// first input. Panics if `inputs` is empty.
    pub fn custom_op(
        &mut self,
        inputs: &[TensorId],
        num_outputs: usize,
        mut attrs: CustomOpAttributes,
    ) -> Vec<TensorId> {
        let name = self.node_name(&mut attrs.name, "CustomOp");
        let first = inputs[0];
        let dt = self.output_type(first);
        let outs: Vec<TensorId> = (0..num_outputs)
            .map(|i| self.output(&name, &format!("OUT_{i}"), Vec::new(), first, dt))
            .collect();
        attrs.inputs = inputs.to_vec();
        attrs.outputs = outs.clone();
        self.push(attrs);
        outs
    }

    /// Row gather (embedding lookup): `y[r, :] = table[index[r], :]`, the
    /// [`hipdnn_backend::ops::gather::GATHER_OP_ID`] (`hipdnn_rs.gather`) custom op that the
    /// CPU reference engine and the GPU engine serve (hipDNN has no gather operation).
    ///
    /// `table`: dims `(V, H)` (leading dims of 1 allowed), FLOAT, HALF or BFLOAT16; `index`:
    /// INT32 or INT64 of any dims. Returns the virtual output `<name>::OUT_0` of the table's
    /// data type, dims `index.dims ++ [H]`, packed row-major. An index value outside `[0, V)`
    /// gives a row of zeros at execute (no error). [`Graph::validate`] (and so `build`) refuses
    /// with `INVALID_VALUE`, naming the node and the tensor, a table that is not floating-point
    /// or not `(V, H)`, an index that is not INT32 / INT64, and an output whose type or dims
    /// were changed away from the rule.
    ///
    /// ```
    /// use hipdnn::{DataType, Graph, TensorAttributes};
    /// let mut g = Graph::new();
    /// let table = g.tensor(
    ///     TensorAttributes::new("word_embeddings")
    ///         .data_type(DataType::Float)
    ///         .dims([30522, 384])
    ///         .strides([384, 1]),
    /// );
    /// let ids = g.tensor(
    ///     TensorAttributes::new("input_ids")
    ///         .data_type(DataType::Int32)
    ///         .dims([32, 1, 128])
    ///         .strides([128, 128, 1]),
    /// );
    /// let rows = g.gather(table, ids);
    /// assert_eq!(g.tensor_attributes(rows).dims, vec![32, 1, 128, 384]);
    /// ```
    pub fn gather(&mut self, table: TensorId, index: TensorId) -> TensorId {
        let mut attrs = CustomOpAttributes::new().custom_op_id(gather_rule::GATHER_OP_ID);
        let name = self.node_name(&mut attrs.name, "Gather");
        let td = self.dims_of(table);
        let dims = gather_rule::output_dims(&self.dims_of(index), &td).unwrap_or_else(|| {
            // Not a (V, H) table: keep its last extent so the build's refusal names the table.
            let mut d = self.dims_of(index);
            d.extend(td.last());
            d
        });
        let dt = self.tensors[table.index()].data_type;
        let strides = packed_strides(&dims, &(0..dims.len()).collect::<Vec<_>>());
        let y = self.tensor(TensorAttributes {
            name: format!("{name}::OUT_0"),
            data_type: dt,
            dims,
            strides,
            is_virtual: true,
            ..Default::default()
        });
        attrs.inputs = vec![table, index];
        attrs.outputs = vec![y];
        self.push(attrs);
        y
    }

    /// MoE grouped matmul: token (T, K), weight (E, K, N), first_token_offset (E), optional
    /// token_index / token_ks → output (T, N).
    pub fn moe_grouped_matmul(
        &mut self,
        token: TensorId,
        weight: TensorId,
        first_token_offset: TensorId,
        token_index: Option<TensorId>,
        token_ks: Option<TensorId>,
        mut attrs: MoeGroupedMatmulAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "MoeGroupedMatmul");
        let (td, wd) = (self.dims_of(token), self.dims_of(weight));
        let dims = vec![at(&td, 0, 1), wd.last().copied().unwrap_or(1)];
        let out = self.output(&name, "OUTPUT", dims, token, self.output_type(token));
        attrs.token = Some(token);
        attrs.weight = Some(weight);
        attrs.first_token_offset = Some(first_token_offset);
        attrs.token_index = token_index;
        attrs.token_ks = token_ks;
        attrs.output = Some(out);
        self.push(attrs);
        out
    }

    /// MoE grouped matmul weight gradient: doutput (T, N), token (T, K), first_token_offset (E)
    /// → dweight (E, K, N).
    pub fn moe_grouped_matmul_bwd(
        &mut self,
        doutput: TensorId,
        token: TensorId,
        first_token_offset: TensorId,
        mut attrs: MoeGroupedMatmulBwdAttributes,
    ) -> TensorId {
        let name = self.node_name(&mut attrs.name, "MoeGroupedMatmulBwd");
        let (dd, td, fd) = (
            self.dims_of(doutput),
            self.dims_of(token),
            self.dims_of(first_token_offset),
        );
        let dims = vec![
            at(&fd, 0, 1),
            td.last().copied().unwrap_or(1),
            dd.last().copied().unwrap_or(1),
        ];
        let dw = self.output(&name, "DWEIGHT", dims, doutput, self.output_type(doutput));
        attrs.doutput = Some(doutput);
        attrs.token = Some(token);
        attrs.first_token_offset = Some(first_token_offset);
        attrs.dweight = Some(dw);
        self.push(attrs);
        dw
    }
}
