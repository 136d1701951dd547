//! Helpers for the patterns every user writes: softmax and log-softmax, global pooling, a
//! linear layer with its epilogue, and the normalizations with an `f32` epsilon.
//!
//! hipDNN has no softmax, global-pool or linear node. Each helper here appends the ordinary
//! nodes that express the pattern — in the exact form the engines recognise and fuse — and
//! returns the last output, so a graph built with a helper is node for node the graph a user
//! would build by hand (same nodes, names, tensors and inferred layouts). It never adds a node
//! kind of its own and never talks to a backend; it calls the op methods of `build.rs`.

use super::Graph;
use super::error::{Error, Result};
use super::ops::*;
use super::tensor::{TensorAttributes, TensorId, TensorValue};
use super::types::*;

/// The activation that ends a [`Graph::linear`] layer: one unary pointwise node, or none.
///
/// The CPU reference engine folds the activation into the matmul's output pass (with the
/// bias add), as the GPU matmul epilogue kernels do for the modes they list.
///
/// ```
/// use hipdnn::{Activation, PointwiseMode};
/// assert_eq!(Activation::Silu.mode(), Some(PointwiseMode::SwishFwd));
/// assert_eq!(Activation::default().mode(), None); // the layer ends with the bias add
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Activation {
    /// No activation: the layer ends with the bias add (or the matmul).
    #[default]
    None,
    /// `RELU_FWD`: `max(x, 0)`.
    Relu,
    /// `GELU_FWD`: the exact (erf) GELU, `x · Φ(x)` (PyTorch `gelu(approximate='none')`).
    Gelu,
    /// `GELU_APPROX_TANH_FWD`: the tanh approximation of GELU (PyTorch
    /// `gelu(approximate='tanh')`).
    GeluTanh,
    /// `SWISH_FWD` with the schema's default beta of 1: SiLU, `x · sigmoid(x)`.
    Silu,
    /// `SIGMOID_FWD`: `1 / (1 + e^-x)`.
    Sigmoid,
    /// `TANH_FWD`.
    Tanh,
}

impl Activation {
    /// The pointwise mode of the activation node; `None` for [`Activation::None`].
    pub fn mode(self) -> Option<PointwiseMode> {
        match self {
            Activation::None => None,
            Activation::Relu => Some(PointwiseMode::ReluFwd),
            Activation::Gelu => Some(PointwiseMode::GeluFwd),
            Activation::GeluTanh => Some(PointwiseMode::GeluApproxTanhFwd),
            Activation::Silu => Some(PointwiseMode::SwishFwd),
            Activation::Sigmoid => Some(PointwiseMode::SigmoidFwd),
            Activation::Tanh => Some(PointwiseMode::TanhFwd),
        }
    }
}

impl Graph {
    /// `x`'s dims with `axis` set to 1, or an `INVALID_VALUE` error naming `what`, the tensor
    /// and the valid range when `axis` is not an axis of `x`.
    fn reduced_dims(&self, what: &str, x: TensorId, axis: usize) -> Result<Vec<i64>> {
        let t = &self.tensors[x.index()];
        if axis >= t.dims.len() {
            return Err(Error::invalid_value(format!(
                "{what}: axis {axis} is not an axis of tensor '{}' (dims {:?}); pass an axis in 0..{}",
                t.name,
                t.dims,
                t.dims.len()
            )));
        }
        let mut dims = t.dims.clone();
        dims[axis] = 1;
        Ok(dims)
    }

    /// The shared start of softmax and log-softmax: `m = reduce MAX(x)`, `d = SUB(x, m)`,
    /// `e = EXP(d)`, `s = reduce ADD(e)`; returns `(d, e, s)`.
    fn softmax_start(
        &mut self,
        what: &str,
        x: TensorId,
        axis: usize,
    ) -> Result<(TensorId, TensorId, TensorId)> {
        let md = self.reduced_dims(what, x, axis)?;
        let reduce = |mode| ReductionAttributes::new().mode(mode);
        let m = self.reduction(x, md.clone(), reduce(ReductionMode::MaxOp));
        let d = self.pointwise(x, m, PointwiseAttributes::with_mode(PointwiseMode::Sub));
        let e = self.pointwise_unary(d, PointwiseAttributes::with_mode(PointwiseMode::Exp));
        let s = self.reduction(e, md, reduce(ReductionMode::Add));
        Ok((d, e, s))
    }

    /// Softmax of `x` along `axis`: `y = exp(x − max) / Σ exp(x − max)`, dims and layout of
    /// `x`.
    ///
    /// hipDNN has no softmax node: this appends the five nodes of the numerically stable
    /// pattern, in this order and with these operands —
    /// `m = reduction MAX_OP(x)`, `d = pointwise SUB(x, m)`, `e = pointwise EXP(d)`,
    /// `s = reduction ADD(e)`, `y = pointwise DIV(e, s)` — where `m` and `s` have `x`'s dims
    /// with `axis` set to 1. Node and tensor names are the op methods' defaults
    /// (`Reduction_<n>`, `Pointwise_<n>`, …); the intermediates are virtual and typed as any
    /// op output is (the graph's intermediate type, else `x`'s).
    ///
    /// The engines fuse the five nodes into one softmax pass when the reduced axis is the
    /// last one (more generally, when every axis after `axis` has extent 1) and the four
    /// intermediates are FLOAT: for a HALF or BFLOAT16 `x`, set
    /// `Graph::set_intermediate_data_type(DataType::Float)`. Any other axis runs node by
    /// node, with the same result.
    ///
    /// Returns `y`, virtual: mark it an output with [`Graph::set_output`] to bind it.
    ///
    /// # Errors
    /// `INVALID_VALUE` when `axis` is not an axis of `x`
    /// (`softmax: axis 2 is not an axis of tensor 'x' (dims [2, 3]); pass an axis in 0..2`);
    /// nothing is added then.
    ///
    /// # Panics
    /// When `x` is not a tensor of this graph.
    ///
    /// # Example
    /// ```
    /// use hipdnn::{Buffer, Graph, Handle, TensorAttributes, VariantPack};
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").data_type(hipdnn::DataType::Float).dims([2, 3]));
    /// let y = g.softmax(x, 1)?;
    /// g.set_output(y, true).set_tensor_name(y, "y");
    /// assert_eq!(g.node_count(), 5);
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// let xb = Buffer::from_slice(&[0.0f32, 0.0, 0.0, 1.0, 2.0, 3.0]);
    /// let mut yb = Buffer::<f32>::zeros(6);
    /// g.execute(&handle, VariantPack::new().bind(x, &xb).named("y", &mut yb), None)?;
    /// let y = yb.to_vec()?;
    /// assert!((y[0] - 1.0 / 3.0).abs() < 1e-6);
    /// assert!((y[5] - 0.665_240_9).abs() < 1e-6);
    /// # Ok(())
    /// # }
    /// ```
    pub fn softmax(&mut self, x: TensorId, axis: usize) -> Result<TensorId> {
        let (_, e, s) = self.softmax_start("softmax", x, axis)?;
        Ok(self.pointwise(e, s, PointwiseAttributes::with_mode(PointwiseMode::Div)))
    }

    /// Log-softmax of `x` along `axis`: `y = (x − max) − ln Σ exp(x − max)`, dims and layout
    /// of `x`.
    ///
    /// Appends the six nodes of the pattern: the first four of [`Graph::softmax`]
    /// (`m = reduction MAX_OP(x)`, `d = SUB(x, m)`, `e = EXP(d)`, `s = reduction ADD(e)`), then
    /// `l = pointwise LOG(s)` and `y = pointwise SUB(d, l)`. The engines fuse them under the
    /// same conditions as softmax's (trailing reduced axis, FLOAT intermediates).
    ///
    /// # Errors
    /// `INVALID_VALUE` when `axis` is not an axis of `x` (the message starts with
    /// `log_softmax: axis`); nothing is added then.
    ///
    /// # Panics
    /// When `x` is not a tensor of this graph.
    ///
    /// # Example
    /// ```
    /// use hipdnn::{Buffer, Graph, Handle, TensorAttributes, VariantPack};
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").data_type(hipdnn::DataType::Float).dims([1, 2]));
    /// let y = g.log_softmax(x, 1)?;
    /// g.set_output(y, true);
    /// assert_eq!(g.node_count(), 6);
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// let xb = Buffer::from_slice(&[1.0f32, 1.0]);
    /// let mut yb = Buffer::<f32>::zeros(2);
    /// g.execute(&handle, VariantPack::new().bind(x, &xb).bind(y, &mut yb), None)?;
    /// assert!(yb.to_vec()?.iter().all(|v| (v + std::f32::consts::LN_2).abs() < 1e-6));
    /// # Ok(())
    /// # }
    /// ```
    pub fn log_softmax(&mut self, x: TensorId, axis: usize) -> Result<TensorId> {
        let (d, _, s) = self.softmax_start("log_softmax", x, axis)?;
        let l = self.pointwise_unary(s, PointwiseAttributes::with_mode(PointwiseMode::Log));
        Ok(self.pointwise(d, l, PointwiseAttributes::with_mode(PointwiseMode::Sub)))
    }

    /// The output dims of a global pool of `x`: `(N, C, 1, …)`.
    fn pooled_dims(&self, what: &str, x: TensorId) -> Result<Vec<i64>> {
        let t = &self.tensors[x.index()];
        if t.dims.len() < 3 {
            return Err(Error::invalid_value(format!(
                "{what}: tensor '{}' has dims {:?}; a global pool needs (N, C, spatial…), at least 3 dims",
                t.name, t.dims
            )));
        }
        Ok(t.dims
            .iter()
            .enumerate()
            .map(|(i, &d)| if i < 2 { d } else { 1 })
            .collect())
    }

    /// Global average pooling: x `(N, C, spatial…)` → y `(N, C, 1, …)`, the mean over every
    /// spatial position. One node: `reduction AVG(x)` with those output dims (hipDNN's
    /// reduction has no axis list: the output's extent-1 dims are the reduced ones).
    ///
    /// Layout: y is packed in x's layout — row-major `(C, 1, 1)` strides for an NCHW x,
    /// channels-last `(C, 1, C, C)` for an NHWC x, so the C values of a sample are adjacent
    /// either way.
    ///
    /// # Errors
    /// `INVALID_VALUE` when x has fewer than 3 dims
    /// (`global_avg_pool: tensor 'x' has dims [2, 3]; a global pool needs (N, C, spatial…), at
    /// least 3 dims`); nothing is added then.
    ///
    /// # Panics
    /// When `x` is not a tensor of this graph.
    ///
    /// # Example
    /// ```
    /// use hipdnn::{Buffer, Graph, Handle, TensorAttributes, VariantPack};
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").data_type(hipdnn::DataType::Float).dims([1, 2, 2, 2]));
    /// let y = g.global_avg_pool(x)?;
    /// g.set_output(y, true);
    /// assert_eq!(g.tensor_attributes(y).dims, [1, 2, 1, 1]);
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// let xb = Buffer::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]);
    /// let mut yb = Buffer::<f32>::zeros(2);
    /// g.execute(&handle, VariantPack::new().bind(x, &xb).bind(y, &mut yb), None)?;
    /// assert_eq!(yb.to_vec()?, [2.5, 25.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn global_avg_pool(&mut self, x: TensorId) -> Result<TensorId> {
        let dims = self.pooled_dims("global_avg_pool", x)?;
        Ok(self.reduction(x, dims, ReductionAttributes::new().mode(ReductionMode::Avg)))
    }

    /// Global max pooling: x `(N, C, spatial…)` → y `(N, C, 1, …)`, the maximum over every
    /// spatial position. One node: `reduction MAX_OP(x)`; layout as [`Graph::global_avg_pool`].
    ///
    /// # Errors
    /// `INVALID_VALUE` when x has fewer than 3 dims (the message starts with
    /// `global_max_pool: tensor`); nothing is added then.
    ///
    /// # Panics
    /// When `x` is not a tensor of this graph.
    ///
    /// # Example
    /// ```
    /// use hipdnn::{Buffer, Graph, Handle, TensorAttributes, VariantPack};
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").data_type(hipdnn::DataType::Float).dims([1, 2, 3]));
    /// let y = g.global_max_pool(x)?;
    /// g.set_output(y, true);
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// let xb = Buffer::from_slice(&[1.0f32, 5.0, 3.0, -4.0, -2.0, -6.0]);
    /// let mut yb = Buffer::<f32>::zeros(2);
    /// g.execute(&handle, VariantPack::new().bind(x, &xb).bind(y, &mut yb), None)?;
    /// assert_eq!(yb.to_vec()?, [5.0, -2.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn global_max_pool(&mut self, x: TensorId) -> Result<TensorId> {
        let dims = self.pooled_dims("global_max_pool", x)?;
        Ok(self.reduction(
            x,
            dims,
            ReductionAttributes::new().mode(ReductionMode::MaxOp),
        ))
    }

    /// A linear layer: `y = act(x · w + bias)`.
    ///
    /// Shapes: x `(…batch, M, K)`, w `(…batch, K, N)` — the matmul's B operand, so a PyTorch
    /// `nn.Linear` weight `(N, K)` is described as its transpose, dims `[K, N]` strides
    /// `[1, K]` — and bias `(1…, N)` (a per-column vector of any rank up to y's). y is
    /// `(…batch, M, N)`, packed row-major.
    ///
    /// Appends `c = matmul(x, w)`, then `pointwise ADD(c, bias)` when `bias` is given, then
    /// one unary pointwise node for `act` unless it is [`Activation::None`] — the
    /// `matmul → ADD(bias) → activation` chain the engines fold into the matmul's output pass
    /// (the CPU engine when the intermediates are FLOAT; the GPU matmul epilogue kernels for
    /// the activations they list).
    ///
    /// Shape errors (inner dims that differ, a bias that does not broadcast) are reported by
    /// [`Graph::validate`] and `build`, as for the op methods.
    ///
    /// # Panics
    /// When a handle is not a tensor of this graph.
    ///
    /// # Example
    /// ```
    /// use hipdnn::{Activation, Buffer, Graph, Handle, TensorAttributes as T, VariantPack};
    /// use hipdnn::DataType::Float;
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// let x = g.tensor(T::new("x").data_type(Float).dims([1, 2]));
    /// let w = g.tensor(T::new("w").data_type(Float).dims([2, 2]));
    /// let b = g.tensor(T::new("b").data_type(Float).dims([1, 2]));
    /// let y = g.linear(x, w, Some(b), Activation::Relu);
    /// g.set_output(y, true).set_tensor_name(y, "y");
    /// assert_eq!(g.node_count(), 3);
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// let (xb, wb, bb) = (
    ///     Buffer::from_slice(&[1.0f32, 2.0]),
    ///     Buffer::from_slice(&[1.0f32, -1.0, 1.0, -1.0]),
    ///     Buffer::from_slice(&[0.5f32, 0.5]),
    /// );
    /// let mut yb = Buffer::<f32>::zeros(2);
    /// let pack = VariantPack::new().named("x", &xb).named("w", &wb).named("b", &bb);
    /// g.execute(&handle, pack.named("y", &mut yb), None)?;
    /// assert_eq!(yb.to_vec()?, [3.5, 0.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn linear(
        &mut self,
        x: TensorId,
        w: TensorId,
        bias: Option<TensorId>,
        act: Activation,
    ) -> TensorId {
        let mut y = self.matmul(x, w, MatmulAttributes::new());
        if let Some(b) = bias {
            y = self.pointwise(y, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
        }
        if let Some(mode) = act.mode() {
            y = self.pointwise_unary(y, PointwiseAttributes::with_mode(mode));
        }
        y
    }

    /// A compile-time-constant scalar tensor named `name` holding `value` (dims = strides =
    /// `[1]`, data type from the value: see [`TensorAttributes::scalar`]). It is baked into
    /// the graph: nothing is bound for it at execute time. Used for an epsilon, a scale or a
    /// clip value an op takes as a tensor.
    pub fn scalar(&mut self, name: impl Into<String>, value: TensorValue) -> TensorId {
        self.tensor(TensorAttributes::scalar(value).name(name))
    }

    /// Layer normalization for inference with an `f32` epsilon: `y = (x − mean) / √(var + ε)
    /// · scale + bias`, over the dims where `scale` has extent > 1 (upstream's rule: scale and
    /// bias `(1, …, D…)` select the normalized dims); y has x's dims and layout.
    ///
    /// Appends the epsilon as a FLOAT scalar constant named `Layernorm_<n>::EPSILON` (the
    /// schema takes epsilon as a tensor; see [`Graph::scalar`]) and one
    /// `layernorm` node (`forward_phase` `INFERENCE`, no saved statistics). For training,
    /// call [`Graph::layernorm`] with `epsilon(g.scalar(…))` and `NormFwdPhase::Training`.
    ///
    /// Shape errors are reported by [`Graph::validate`] and `build`.
    ///
    /// # Panics
    /// When a handle is not a tensor of this graph.
    ///
    /// # Example
    /// ```
    /// use hipdnn::{Buffer, Graph, Handle, TensorAttributes as T, VariantPack};
    /// use hipdnn::DataType::Float;
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// let x = g.tensor(T::new("x").data_type(Float).dims([1, 4]));
    /// let gamma = g.tensor(T::new("gamma").data_type(Float).dims([1, 4]));
    /// let beta = g.tensor(T::new("beta").data_type(Float).dims([1, 4]));
    /// let y = g.layernorm_inference(x, gamma, beta, 1e-5);
    /// g.set_output(y, true);
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// let xb = Buffer::from_slice(&[1.0f32, 2.0, 3.0, 4.0]);
    /// let (gb, bb) = (Buffer::from_slice(&[1.0f32; 4]), Buffer::from_slice(&[0.0f32; 4]));
    /// let mut yb = Buffer::<f32>::zeros(4);
    /// let pack = VariantPack::new().bind(x, &xb).bind(gamma, &gb).bind(beta, &bb);
    /// g.execute(&handle, pack.bind(y, &mut yb), None)?;
    /// let y = yb.to_vec()?; // mean 2.5, variance 1.25
    /// assert!((y[0] + 1.5 / 1.25_f32.sqrt()).abs() < 1e-4);
    /// # Ok(())
    /// # }
    /// ```
    pub fn layernorm_inference(
        &mut self,
        x: TensorId,
        scale: TensorId,
        bias: TensorId,
        epsilon: f32,
    ) -> TensorId {
        let name = format!("Layernorm_{}::EPSILON", self.nodes.len());
        let eps = self.scalar(name, TensorValue::Float32(epsilon));
        let attrs = LayernormAttributes::new()
            .epsilon(eps)
            .forward_phase(NormFwdPhase::Inference);
        self.layernorm(x, scale, bias, attrs).0
    }

    /// RMS normalization for inference with an `f32` epsilon: `y = x / √(mean(x²) + ε) ·
    /// scale`, over the dims where `scale` has extent > 1; y has x's dims and layout.
    ///
    /// Appends the epsilon as a FLOAT scalar constant named `RmsNorm_<n>::EPSILON` and one
    /// `rmsnorm` node (`forward_phase` `INFERENCE`, no bias, no saved statistics). For
    /// training or a bias, call [`Graph::rmsnorm`] with `epsilon(g.scalar(…))`.
    ///
    /// # Panics
    /// When a handle is not a tensor of this graph.
    ///
    /// # Example
    /// ```
    /// use hipdnn::{Buffer, Graph, Handle, TensorAttributes as T, VariantPack};
    /// use hipdnn::DataType::Float;
    /// # fn main() -> hipdnn::Result<()> {
    /// let mut g = Graph::new();
    /// let x = g.tensor(T::new("x").data_type(Float).dims([1, 2]));
    /// let gamma = g.tensor(T::new("gamma").data_type(Float).dims([1, 2]));
    /// let y = g.rmsnorm_inference(x, gamma, 1e-6);
    /// g.set_output(y, true);
    /// let handle = Handle::cpu()?;
    /// g.build(&handle)?;
    /// let (xb, gb) = (Buffer::from_slice(&[3.0f32, 4.0]), Buffer::from_slice(&[1.0f32, 2.0]));
    /// let mut yb = Buffer::<f32>::zeros(2);
    /// g.execute(&handle, VariantPack::new().bind(x, &xb).bind(gamma, &gb).bind(y, &mut yb), None)?;
    /// let y = yb.to_vec()?; // rms = √12.5
    /// assert!((y[0] - 3.0 / 12.5_f32.sqrt()).abs() < 1e-5);
    /// assert!((y[1] - 8.0 / 12.5_f32.sqrt()).abs() < 1e-5);
    /// # Ok(())
    /// # }
    /// ```
    pub fn rmsnorm_inference(&mut self, x: TensorId, scale: TensorId, epsilon: f32) -> TensorId {
        let name = format!("RmsNorm_{}::EPSILON", self.nodes.len());
        let eps = self.scalar(name, TensorValue::Float32(epsilon));
        let attrs = RmsNormAttributes::new()
            .epsilon(eps)
            .forward_phase(NormFwdPhase::Inference);
        self.rmsnorm(x, scale, attrs).0
    }
}
