//! Operation attribute tables: one struct per `NodeAttributes` union member of `graph.fbs`
//! (`schema/fbs/graph.fbs`), each a field-for-field image of its schema table plus the node's `name`
//! and `compute_data_type`, and the [`Operation`] enum over them.
//!
//! Tensor fields hold [`TensorId`]s (the schema's `*_tensor_uid` longs are resolved through the
//! graph's tensors); `= null` fields are `Option`s so "absent" and "present with the default"
//! stay distinct. Setters chain (`ConvFpropAttributes::new().stride([1, 1])`); fields are public
//! for inspection. This module only describes data: shape inference lives in `build.rs`,
//! checks in `validate.rs`.

use flatbuffers::{Allocator, FlatBufferBuilder, UnionWIPOffset, WIPOffset};
use hipdnn_schema::graph as wire;
use serde_json::{Map, Value};

use super::error::{Error, Result};
use super::kinds::{self, Rctx, Wctx};
use super::tensor::TensorId;
use super::types::*;

/// The requirement and default a setter of field kind `$k` documents (appended to the field's
/// own doc on the setter): whether validation needs it and what an unset field means.
macro_rules! setter_note {
    (tin) => {
        "**Required** input tensor: [`Graph::validate`](crate::Graph::validate) fails with \
         `ATTRIBUTE_NOT_SET` `<node>: attribute '<field>' is not set` when absent. The graph \
         method sets the tensors it takes as arguments; set the others (e.g. an epsilon \
         scalar) here."
    };
    (tout) => {
        "Output tensor, **created by the graph method** (a virtual tensor with inferred dims); \
         set it only to write into a tensor you made yourself."
    };
    (opt_tin) => {
        "Optional input tensor (default: absent, the feature is off)."
    };
    (opt_tout) => {
        "Optional output tensor (default: absent, not computed)."
    };
    (tins) => {
        "List of input tensors (default: empty)."
    };
    (touts) => {
        "List of output tensors (default: empty)."
    };
    (i64_list) => {
        "List, one entry per spatial dim (default: empty)."
    };
    (i32_list) => {
        "List (default: empty)."
    };
    (u8_list) => {
        "Bytes (default: empty)."
    };
    (opt_f32) => {
        "Optional (default: absent, written as an absent field)."
    };
    (opt_i64) => {
        "Optional (default: absent)."
    };
    (opt_i32) => {
        "Optional (default: absent)."
    };
    (opt_bool) => {
        "Optional (default: absent, read as false)."
    };
    (bool_) => {
        "Default: `false`."
    };
    (i64_) => {
        "Default: 0."
    };
    (i32_) => {
        "Default: 0."
    };
    (string) => {
        "Default: empty."
    };
    ($enum_kind:ident) => {
        "Default: the enum's schema default (its 0 enumerator) unless the type's `new()` says \
         otherwise."
    };
}

macro_rules! op_table {
    (
        $(#[$m:meta])*
        $name:ident {
            kind: $variant:ident, method: $method:literal, wire: $wire:ident, args: $args:ident,
            as_fn: $as_fn:ident, defaults: { $($df:ident : $dv:expr),* $(,)? } $(,)?
        }
        fields { $( $(#[$fm:meta])* $f:ident / $wf:ident : $k:ident ),* $(,)? }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            /// Node name; when empty, the graph names the node `"<Kind>_<nodeIndex>"`.
            pub name: String,
            /// Compute type of the node (`Unset`: taken from the graph's compute type).
            pub compute_data_type: DataType,
            $( $(#[$fm])* pub $f: kinds::$k::T, )*
        }

        impl Default for $name {
            /// Every field at its **schema** default (what an absent field reads as).
            fn default() -> Self {
                $name {
                    name: String::new(),
                    compute_data_type: DataType::Unset,
                    $( $f: Default::default(), )*
                }
            }
        }

        #[allow(clippy::needless_update)]
        impl $name {
            /// Schema field names of the table, in field-id order.
            pub const SCHEMA_FIELDS: &'static [&'static str] = &[$(stringify!($wf)),*];
            /// Attributes with upstream's builder defaults (schema defaults unless stated on
            /// the type).
            pub fn new() -> Self {
                $name { $($df: $dv,)* ..Self::default() }
            }
            /// Sets the node name. Optional: an empty name (the default) becomes
            /// `"<Kind>_<node index>"`, and the node's outputs are named `"<node>::<ROLE>"`.
            pub fn name(mut self, name: impl Into<String>) -> Self {
                self.name = name.into();
                self
            }
            /// Sets the node's compute (arithmetic) type. Optional: `Unset` (the default)
            /// takes the graph's compute type. The CPU engine computes in f32 whatever is
            /// set; the GPU kernels accumulate in f32.
            pub fn compute_data_type(mut self, t: DataType) -> Self {
                self.compute_data_type = t;
                self
            }
            $(
                $(#[$fm])*
                ///
                #[doc = setter_note!($k)]
                pub fn $f(mut self, v: impl Into<kinds::$k::Arg>) -> Self {
                    self.$f = kinds::$k::set(v.into());
                    self
                }
            )*

            pub(crate) fn wire_write<'a, A: Allocator + 'a>(
                &self,
                fbb: &mut FlatBufferBuilder<'a, A>,
                c: &Wctx,
            ) -> Result<WIPOffset<UnionWIPOffset>> {
                let args = wire::$args { $( $wf: kinds::$k::write(&self.$f, fbb, c, stringify!($wf))?, )* };
                Ok(wire::$wire::create(fbb, &args).as_union_value())
            }

            pub(crate) fn wire_read(node: &wire::Node<'_>, c: &Rctx) -> Result<Self> {
                let t = node.$as_fn().ok_or_else(|| {
                    Error::invalid(format!("{}: attributes table is absent", c.label))
                })?;
                let _ = &t;
                Ok($name {
                    name: node.name().unwrap_or_default().to_owned(),
                    compute_data_type: kinds::enum_read(node.compute_data_type(), c, "compute_data_type")?,
                    $( $f: kinds::$k::read(t.$wf(), c, stringify!($wf))?, )*
                })
            }

            pub(crate) fn json_write(&self, c: &Wctx) -> Result<Map<String, Value>> {
                let mut m = Map::new();
                let _ = c;
                $( m.insert(stringify!($wf).to_owned(), kinds::$k::to_json(&self.$f, c, stringify!($wf))?); )*
                Ok(m)
            }

            pub(crate) fn json_read(name: String, compute_data_type: DataType, obj: &Map<String, Value>, c: &Rctx) -> Result<Self> {
                if let Some(k) = obj.keys().find(|k| !Self::SCHEMA_FIELDS.contains(&k.as_str())) {
                    return Err(Error::invalid(format!(
                        "{}: JSON attribute '{k}' is not a field of {}", c.label, stringify!($wire)
                    )));
                }
                Ok($name {
                    name,
                    compute_data_type,
                    $( $f: kinds::$k::from_json(obj.get(stringify!($wf)), c, stringify!($wf))?, )*
                })
            }

            pub(crate) fn visit(&self, ins: &mut Vec<TensorId>, outs: &mut Vec<TensorId>) {
                let _ = (&ins, &outs);
                $( kinds::$k::visit(&self.$f, ins, outs); )*
            }
        }
    };
}

macro_rules! operations {
    ($( $(#[$m:meta])* $variant:ident($ty:ident, $method:literal, $wire:ident) ),* $(,)?) => {
        /// One node of a graph: the attributes of one operation.
        ///
        /// ```
        /// use hipdnn::{Graph, Operation, PointwiseAttributes, PointwiseMode, TensorAttributes};
        /// let mut g = Graph::new();
        /// let x = g.tensor(TensorAttributes::new("x").dims([3]));
        /// g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::Exp));
        /// for (_, node) in g.nodes() {
        ///     assert_eq!((node.kind(), node.method(), node.name()), ("Pointwise", "pointwise", "Pointwise_0"));
        ///     if let Operation::Pointwise(a) = node {
        ///         assert_eq!(a.mode, PointwiseMode::Exp);
        ///     }
        /// }
        /// ```
        #[derive(Debug, Clone, PartialEq)]
        pub enum Operation {
            $( $(#[$m])* $variant($ty), )*
        }

        $(
            impl From<$ty> for Operation {
                fn from(a: $ty) -> Self {
                    Operation::$variant(a)
                }
            }
        )*

        impl Operation {
            /// The node's name.
            pub fn name(&self) -> &str {
                match self { $(Operation::$variant(a) => &a.name),* }
            }
            /// Mutable access to the node's name.
            pub fn name_mut(&mut self) -> &mut String {
                match self { $(Operation::$variant(a) => &mut a.name),* }
            }
            /// The node's compute type.
            pub fn compute_data_type(&self) -> DataType {
                match self { $(Operation::$variant(a) => a.compute_data_type),* }
            }
            /// Mutable access to the node's compute type.
            pub fn compute_data_type_mut(&mut self) -> &mut DataType {
                match self { $(Operation::$variant(a) => &mut a.compute_data_type),* }
            }
            /// The kind, used in default node names (`"ConvFprop"`, `"Pointwise"`, ...).
            pub fn kind(&self) -> &'static str {
                match self { $(Operation::$variant(_) => stringify!($variant)),* }
            }
            /// The graph method that creates this kind of node (`"conv_fprop"`, ...).
            pub fn method(&self) -> &'static str {
                match self { $(Operation::$variant(_) => $method),* }
            }
            /// The schema table name (`NodeAttributes` union member, e.g. `"ConvolutionFwdAttributes"`).
            pub fn schema_table(&self) -> &'static str {
                match self { $(Operation::$variant(_) => stringify!($wire)),* }
            }
            /// Tensors the node reads and tensors it writes, in schema field order.
            pub fn inputs_outputs(&self) -> (Vec<TensorId>, Vec<TensorId>) {
                let (mut ins, mut outs) = (Vec::new(), Vec::new());
                match self { $(Operation::$variant(a) => a.visit(&mut ins, &mut outs)),* }
                (ins, outs)
            }

            pub(crate) fn wire_write<'a, A: Allocator + 'a>(
                &self,
                fbb: &mut FlatBufferBuilder<'a, A>,
                c: &Wctx,
            ) -> Result<(wire::NodeAttributes, WIPOffset<UnionWIPOffset>)> {
                match self {
                    $(Operation::$variant(a) => Ok((wire::NodeAttributes::$wire, a.wire_write(fbb, c)?)),)*
                }
            }

            pub(crate) fn wire_read(node: &wire::Node<'_>, c: &Rctx) -> Result<Self> {
                let t = node.attributes_type();
                $( if t == wire::NodeAttributes::$wire {
                    return $ty::wire_read(node, c).map(Operation::$variant);
                } )*
                Err(Error::invalid(format!(
                    "{}: attributes type {} is not a member of NodeAttributes (valid: 1..=23)", c.label, t.0
                )))
            }

            pub(crate) fn json_write(&self, c: &Wctx) -> Result<Map<String, Value>> {
                match self { $(Operation::$variant(a) => a.json_write(c)),* }
            }

            pub(crate) fn json_read(
                type_name: &str,
                name: String,
                compute: DataType,
                obj: &Map<String, Value>,
                c: &Rctx,
            ) -> Result<Self> {
                $( if type_name == stringify!($wire) {
                    return $ty::json_read(name, compute, obj, c).map(Operation::$variant);
                } )*
                Err(Error::invalid(format!(
                    "{}: attributes_type '{type_name}' is not a member of NodeAttributes", c.label
                )))
            }
        }
    };
}

operations! {
    /// `BatchnormInferenceAttributes` (1).
    BatchnormInference(BatchnormInferenceAttributes, "batchnorm_inference", BatchnormInferenceAttributes),
    /// `PointwiseAttributes` (2).
    Pointwise(PointwiseAttributes, "pointwise", PointwiseAttributes),
    /// `BatchnormBackwardAttributes` (3).
    BatchnormBackward(BatchnormBackwardAttributes, "batchnorm_backward", BatchnormBackwardAttributes),
    /// `BatchnormAttributes` (4).
    Batchnorm(BatchnormAttributes, "batchnorm", BatchnormAttributes),
    /// `ConvolutionFwdAttributes` (5).
    ConvFprop(ConvFpropAttributes, "conv_fprop", ConvolutionFwdAttributes),
    /// `ConvolutionBwdAttributes` (6).
    ConvDgrad(ConvDgradAttributes, "conv_dgrad", ConvolutionBwdAttributes),
    /// `ConvolutionWrwAttributes` (7).
    ConvWgrad(ConvWgradAttributes, "conv_wgrad", ConvolutionWrwAttributes),
    /// `BatchnormInferenceAttributesVarianceExt` (8).
    BatchnormInferenceVarianceExt(BatchnormInferenceVarianceExtAttributes, "batchnorm_inference_variance_ext", BatchnormInferenceAttributesVarianceExt),
    /// `MatmulAttributes` (9).
    Matmul(MatmulAttributes, "matmul", MatmulAttributes),
    /// `RMSNormAttributes` (10).
    RmsNorm(RmsNormAttributes, "rmsnorm", RMSNormAttributes),
    /// `LayernormAttributes` (11).
    Layernorm(LayernormAttributes, "layernorm", LayernormAttributes),
    /// `SdpaAttributes` (12).
    Sdpa(SdpaAttributes, "sdpa", SdpaAttributes),
    /// `BlockScaleDequantizeAttributes` (13).
    BlockScaleDequantize(BlockScaleDequantizeAttributes, "block_scale_dequantize", BlockScaleDequantizeAttributes),
    /// `BlockScaleQuantizeAttributes` (14).
    BlockScaleQuantize(BlockScaleQuantizeAttributes, "block_scale_quantize", BlockScaleQuantizeAttributes),
    /// `SdpaBackwardAttributes` (15).
    SdpaBackward(SdpaBackwardAttributes, "sdpa_backward", SdpaBackwardAttributes),
    /// `CustomOpAttributes` (16).
    CustomOp(CustomOpAttributes, "custom_op", CustomOpAttributes),
    /// `RMSNormBackwardAttributes` (17).
    RmsNormBackward(RmsNormBackwardAttributes, "rmsnorm_backward", RMSNormBackwardAttributes),
    /// `ReductionAttributes` (18).
    Reduction(ReductionAttributes, "reduction", ReductionAttributes),
    /// `ResampleFwdAttributes` (19).
    ResampleFwd(ResampleFwdAttributes, "resample", ResampleFwdAttributes),
    /// `LayernormBackwardAttributes` (20).
    LayernormBackward(LayernormBackwardAttributes, "layernorm_backward", LayernormBackwardAttributes),
    /// `ResampleBwdAttributes` (21).
    ResampleBwd(ResampleBwdAttributes, "resample_bwd", ResampleBwdAttributes),
    /// `MoeGroupedMatmulAttributes` (22).
    MoeGroupedMatmul(MoeGroupedMatmulAttributes, "moe_grouped_matmul", MoeGroupedMatmulAttributes),
    /// `MoeGroupedMatmulBwdAttributes` (23).
    MoeGroupedMatmulBwd(MoeGroupedMatmulBwdAttributes, "moe_grouped_matmul_bwd", MoeGroupedMatmulBwdAttributes),
}

op_table! {
    /// Batchnorm inference with inverse variance (`BatchnormInferenceAttributes`):
    /// `y = (x - mean) * inv_variance * scale + bias`; x is (N, C, ...), the others (1, C, 1, ...).
    /// Engines: CPU (float types), GPU (f16, bf16, f32).
    ///
    /// ```
    /// use hipdnn::{BatchnormInferenceAttributes, DataType, Graph, TensorAttributes};
    /// let mut g = Graph::new();
    /// g.set_io_data_type(DataType::Float);
    /// let x = g.tensor(TensorAttributes::new("x").dims([2, 3, 4, 4]));
    /// let [mean, inv_var, scale, bias] = ["mean", "inv_var", "scale", "bias"]
    ///     .map(|n| g.tensor(TensorAttributes::new(n).dims([1, 3, 1, 1])));
    /// let y = g.batchnorm_inference(x, mean, inv_var, scale, bias, BatchnormInferenceAttributes::new());
    /// assert_eq!(g.tensor_attributes(y).dims, [2, 3, 4, 4]);
    /// ```
    BatchnormInferenceAttributes {
        kind: BatchnormInference, method: "batchnorm_inference", wire: BatchnormInferenceAttributes,
        args: BatchnormInferenceAttributesArgs, as_fn: attributes_as_batchnorm_inference_attributes, defaults: {},
    }
    fields {
        /// Input x.
        x / x_tensor_uid: tin,
        /// Per-channel mean.
        mean / mean_tensor_uid: tin,
        /// Per-channel inverse variance.
        inv_variance / inv_variance_tensor_uid: tin,
        /// Per-channel scale.
        scale / scale_tensor_uid: tin,
        /// Per-channel bias.
        bias / bias_tensor_uid: tin,
        /// Output y (same dims as x).
        y / y_tensor_uid: tout,
    }
}

op_table! {
    /// Elementwise operation (`PointwiseAttributes`) with numpy broadcasting of the inputs.
    /// Binary select is `out = in2 ? in0 : in1` per current upstream docs (unconfirmed).
    ///
    /// `mode` is required; the number of inputs set must be its [`PointwiseMode::arity`]
    /// (`INVALID_VALUE` otherwise). Engines: the CPU engine runs every mode but `UNSET`
    /// (float, integer and bool storage); the GPU kernels run chains of 1–4 pointwise nodes in
    /// one launch (f16, bf16, f32, bool) and leave other graphs to the CPU.
    ///
    /// ```
    /// use hipdnn::{Graph, PointwiseAttributes, PointwiseMode, TensorAttributes};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([2, 3]));
    /// let leaky = PointwiseAttributes::with_mode(PointwiseMode::ReluFwd).relu_lower_clip_slope(0.1);
    /// let y = g.pointwise_unary(x, leaky);
    /// let bias = g.tensor(TensorAttributes::new("bias").dims([1, 3]));
    /// let z = g.pointwise(y, bias, PointwiseAttributes::with_mode(PointwiseMode::Add));
    /// assert_eq!(g.tensor_attributes(z).dims, [2, 3]); // bias broadcast over rows
    /// ```
    PointwiseAttributes {
        kind: Pointwise, method: "pointwise", wire: PointwiseAttributes,
        args: PointwiseAttributesArgs, as_fn: attributes_as_pointwise_attributes, defaults: {},
    }
    fields {
        /// The operation (schema field `operation`). **Required** (`UNSET`, the default, fails
        /// validation with `ATTRIBUTE_NOT_SET`); [`PointwiseAttributes::with_mode`] sets it.
        mode / operation: pointwise_mode,
        /// RELU lower clip (RELU modes; absent = 0).
        relu_lower_clip / relu_lower_clip: opt_f32,
        /// RELU upper clip (RELU modes; absent = no upper clip).
        relu_upper_clip / relu_upper_clip: opt_f32,
        /// RELU slope below the lower clip (RELU modes; absent = 0; 0.1 gives a leaky RELU).
        relu_lower_clip_slope / relu_lower_clip_slope: opt_f32,
        /// Axis index for GEN_INDEX (a plain index stored in `axis_tensor_uid`, not a UID);
        /// required by GEN_INDEX, ignored by other modes.
        axis / axis_tensor_uid: opt_i64,
        /// First input.
        in_0 / in_0_tensor_uid: tin,
        /// Second input (binary and ternary modes).
        in_1 / in_1_tensor_uid: opt_tin,
        /// Third input (BINARY_SELECT).
        in_2 / in_2_tensor_uid: opt_tin,
        /// Output.
        out_0 / out_0_tensor_uid: tout,
        /// Swish beta (SWISH modes; absent = 1).
        swish_beta / swish_beta: opt_f32,
        /// ELU alpha (ELU modes; absent = 1).
        elu_alpha / elu_alpha: opt_f32,
        /// Softplus beta (SOFTPLUS modes; absent = 1).
        softplus_beta / softplus_beta: opt_f32,
    }
}

impl PointwiseAttributes {
    /// Attributes for `mode` (shorthand for `new().mode(mode)`).
    pub fn with_mode(mode: PointwiseMode) -> Self {
        Self::new().mode(mode)
    }
}

op_table! {
    /// Batchnorm backward (`BatchnormBackwardAttributes`). Engines: CPU (float types, sums in
    /// f64) and GPU (f16, bf16, f32; NCHW or channels-last; a `RELU_BWD` node feeding dy is
    /// fused; deterministic split reduction); both require the saved `mean` and
    /// `inv_variance` and refuse peer stats.
    ///
    /// ```
    /// use hipdnn::{BatchnormBackwardAttributes, Graph, TensorAttributes};
    /// let mut g = Graph::new();
    /// let dy = g.tensor(TensorAttributes::new("dy").dims([2, 3, 4, 4]));
    /// let x = g.tensor(TensorAttributes::new("x").dims([2, 3, 4, 4]));
    /// let [scale, mean, inv_var] = ["scale", "mean", "inv_var"]
    ///     .map(|n| g.tensor(TensorAttributes::new(n).dims([1, 3, 1, 1])));
    /// let attrs = BatchnormBackwardAttributes::new().mean(mean).inv_variance(inv_var);
    /// let [dx, dscale, dbias] = g.batchnorm_backward(dy, x, scale, attrs);
    /// assert_eq!(g.tensor_attributes(dx).dims, [2, 3, 4, 4]);
    /// assert_eq!(g.tensor_attributes(dscale).dims, g.tensor_attributes(dbias).dims);
    /// ```
    BatchnormBackwardAttributes {
        kind: BatchnormBackward, method: "batchnorm_backward", wire: BatchnormBackwardAttributes,
        args: BatchnormBackwardAttributesArgs, as_fn: attributes_as_batchnorm_backward_attributes, defaults: {},
    }
    fields {
        /// Gradient of y.
        dy / dy_tensor_uid: tin,
        /// Forward input x.
        x / x_tensor_uid: tin,
        /// Saved mean (optional).
        mean / mean_tensor_uid: opt_tin,
        /// Saved inverse variance (optional).
        inv_variance / inv_variance_tensor_uid: opt_tin,
        /// Per-channel scale.
        scale / scale_tensor_uid: tin,
        /// Peer statistics tensors (multi-GPU).
        peer_stats / peer_stats_tensor_uid: tins,
        /// Gradient of x.
        dx / dx_tensor_uid: tout,
        /// Gradient of scale.
        dscale / dscale_tensor_uid: tout,
        /// Gradient of bias.
        dbias / dbias_tensor_uid: tout,
    }
}

op_table! {
    /// Batchnorm training forward (`BatchnormAttributes`). Engines: CPU (float types; peer
    /// stats refused), GPU (f16, bf16, f32). `epsilon` is a required scalar tensor; the three
    /// running-statistics inputs go together (all or none).
    ///
    /// ```
    /// use hipdnn::{BatchnormAttributes, Graph, TensorAttributes, TensorValue};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([8, 3, 4, 4]));
    /// let scale = g.tensor(TensorAttributes::new("scale").dims([1, 3, 1, 1]));
    /// let bias = g.tensor(TensorAttributes::new("bias").dims([1, 3, 1, 1]));
    /// let eps = g.tensor(TensorAttributes::scalar(TensorValue::Float32(1e-5)));
    /// let out = g.batchnorm(x, scale, bias, BatchnormAttributes::new().epsilon(eps));
    /// assert_eq!(g.tensor_attributes(out.mean).dims, [1, 3, 1, 1]);
    /// assert_eq!(out.next_running_mean, None); // no prev running stats and momentum given
    /// ```
    BatchnormAttributes {
        kind: Batchnorm, method: "batchnorm", wire: BatchnormAttributes,
        args: BatchnormAttributesArgs, as_fn: attributes_as_batchnorm_attributes, defaults: {},
    }
    fields {
        /// Input x (N, C, ...).
        x / x_tensor_uid: tin,
        /// Per-channel scale.
        scale / scale_tensor_uid: tin,
        /// Per-channel bias.
        bias / bias_tensor_uid: tin,
        /// Epsilon scalar tensor.
        epsilon / epsilon_tensor_uid: tin,
        /// Peer statistics tensors (multi-GPU).
        peer_stats / peer_stats_tensor_uid: tins,
        /// Previous running mean.
        prev_running_mean / prev_running_mean_tensor_uid: opt_tin,
        /// Previous running variance.
        prev_running_variance / prev_running_variance_tensor_uid: opt_tin,
        /// Momentum scalar tensor.
        momentum / momentum_tensor_uid: opt_tin,
        /// Output y.
        y / y_tensor_uid: tout,
        /// Saved mean output.
        mean / mean_tensor_uid: opt_tout,
        /// Saved inverse variance output.
        inv_variance / inv_variance_tensor_uid: opt_tout,
        /// Next running mean output.
        next_running_mean / next_running_mean_tensor_uid: opt_tout,
        /// Next running variance output.
        next_running_variance / next_running_variance_tensor_uid: opt_tout,
    }
}

macro_rules! conv_table {
    ($(#[$m:meta])* $name:ident, $variant:ident, $method:literal, $wire:ident, $args:ident, $as_fn:ident,
     $a:ident / $aw:ident : $ak:ident, $b:ident / $bw:ident : $bk:ident, $c:ident / $cw:ident : $ck:ident) => {
        op_table! {
            $(#[$m])*
            ///
            /// `new()` sets `conv_mode = CrossCorrelation` (upstream default); the schema default
            /// (what an absent field reads as) is `Unset`.
            $name {
                kind: $variant, method: $method, wire: $wire, args: $args, as_fn: $as_fn,
                defaults: { conv_mode: ConvMode::CrossCorrelation },
            }
            fields {
                /// First tensor (see the type doc for its role).
                $a / $aw: $ak,
                /// Second tensor (see the type doc for its role).
                $b / $bw: $bk,
                /// Third tensor (see the type doc for its role).
                $c / $cw: $ck,
                /// Padding before each spatial dim (elements, ≥ 0), one entry per spatial dim.
                /// **Required** (empty fails validation with `ATTRIBUTE_NOT_SET`; a wrong count
                /// with `INVALID_VALUE`); `padding` sets pre and post at once.
                pre_padding / pre_padding: i64_list,
                /// Padding after each spatial dim. **Required**, as `pre_padding`.
                post_padding / post_padding: i64_list,
                /// Stride per spatial dim (> 0). **Required**, one entry per spatial dim.
                stride / stride: i64_list,
                /// Dilation per spatial dim (> 0). **Required**, one entry per spatial dim.
                dilation / dilation: i64_list,
                /// Convolution (flipped filter) or cross-correlation. `new()` sets
                /// `CrossCorrelation`; `Unset` fails validation. The CPU engine runs both; the
                /// GPU kernels run cross-correlation.
                conv_mode / conv_mode: conv_mode,
            }
        }

        impl $name {
            /// Sets both pre- and post-padding to `p`.
            pub fn padding(self, p: impl Into<Vec<i64>>) -> Self {
                let p = p.into();
                self.pre_padding(p.clone()).post_padding(p)
            }
        }
    };
}

conv_table!(
    /// Convolution forward (`ConvolutionFwdAttributes`): x (N, C, spatial..) and w
    /// (K, C/groups, kernel..) give y (N, K, out..), `out = floor((in + pre + post -
    /// dilation*(k-1) - 1)/stride) + 1`. Engines: CPU 1–3 spatial dims (float types, groups,
    /// any layout); GPU 2-D (f16, bf16, f32, fused bias/activation epilogue). A grouped example
    /// is on [`Graph::conv_fprop`](crate::Graph::conv_fprop).
    ///
    /// ```
    /// use hipdnn::{ConvFpropAttributes, Graph, TensorAttributes};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([1, 3, 32, 32]).packed_nhwc());
    /// let w = g.tensor(TensorAttributes::new("w").dims([16, 3, 3, 3]).packed_nhwc());
    /// let conv = ConvFpropAttributes::new().padding([1, 1]).stride([2, 2]).dilation([1, 1]);
    /// let y = g.conv_fprop(x, w, conv);
    /// assert_eq!(g.tensor_attributes(y).dims, [1, 16, 16, 16]);
    /// assert_eq!(g.tensor_attributes(y).strides, [4096, 1, 256, 16]); // NHWC like x
    /// ```
    ConvFpropAttributes, ConvFprop, "conv_fprop", ConvolutionFwdAttributes, ConvolutionFwdAttributesArgs,
    attributes_as_convolution_fwd_attributes, x / x_tensor_uid: tin, w / w_tensor_uid: tin, y / y_tensor_uid: tout
);
conv_table!(
    /// Convolution backward data (`ConvolutionBwdAttributes`): dy and w give dx.
    /// Engines: CPU 1–3 spatial dims (float types); GPU 2-D (f16, bf16, f32).
    ///
    /// ```
    /// use hipdnn::{ConvDgradAttributes, Graph, TensorAttributes};
    /// let mut g = Graph::new();
    /// let dy = g.tensor(TensorAttributes::new("dy").dims([1, 16, 8, 8]));
    /// let w = g.tensor(TensorAttributes::new("w").dims([16, 3, 3, 3]));
    /// let attrs = ConvDgradAttributes::new().padding([1, 1]).stride([1, 1]).dilation([1, 1]);
    /// let dx = g.conv_dgrad(dy, w, attrs);
    /// assert_eq!(g.tensor_attributes(dx).dims, [1, 3, 8, 8]);
    /// ```
    ConvDgradAttributes, ConvDgrad, "conv_dgrad", ConvolutionBwdAttributes, ConvolutionBwdAttributesArgs,
    attributes_as_convolution_bwd_attributes, dy / dy_tensor_uid: tin, w / w_tensor_uid: tin, dx / dx_tensor_uid: tout
);
conv_table!(
    /// Convolution backward filter (`ConvolutionWrwAttributes`): x and dy give dw.
    /// Engines: CPU 1–3 spatial dims (float types); GPU 2-D (f16, bf16, f32).
    ///
    /// ```
    /// use hipdnn::{ConvWgradAttributes, Graph, TensorAttributes};
    /// let mut g = Graph::new();
    /// let dy = g.tensor(TensorAttributes::new("dy").dims([1, 16, 8, 8]));
    /// let x = g.tensor(TensorAttributes::new("x").dims([1, 3, 8, 8]));
    /// let attrs = ConvWgradAttributes::new().padding([1, 1]).stride([1, 1]).dilation([1, 1]);
    /// let dw = g.conv_wgrad(dy, x, attrs);
    /// assert_eq!(g.tensor_attributes(dw).dims, [16, 3, 3, 3]);
    /// ```
    ConvWgradAttributes, ConvWgrad, "conv_wgrad", ConvolutionWrwAttributes, ConvolutionWrwAttributesArgs,
    attributes_as_convolution_wrw_attributes, x / x_tensor_uid: tin, dy / dy_tensor_uid: tin, dw / dw_tensor_uid: tout
);

op_table! {
    /// Batchnorm inference from variance and epsilon (`BatchnormInferenceAttributesVarianceExt`):
    /// `y = (x − mean) / √(variance + ε) · scale + bias`. Engines: CPU (float types), GPU
    /// (f16, bf16, f32).
    ///
    /// ```
    /// use hipdnn::{BatchnormInferenceVarianceExtAttributes, Graph, TensorAttributes, TensorValue};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([2, 3, 4, 4]));
    /// let [mean, var, scale, bias] = ["mean", "var", "scale", "bias"]
    ///     .map(|n| g.tensor(TensorAttributes::new(n).dims([1, 3, 1, 1])));
    /// let eps = g.tensor(TensorAttributes::scalar(TensorValue::Float32(1e-5)));
    /// let attrs = BatchnormInferenceVarianceExtAttributes::new();
    /// let y = g.batchnorm_inference_variance_ext(x, mean, var, scale, bias, eps, attrs);
    /// assert_eq!(g.tensor_attributes(y).dims, [2, 3, 4, 4]);
    /// ```
    BatchnormInferenceVarianceExtAttributes {
        kind: BatchnormInferenceVarianceExt, method: "batchnorm_inference_variance_ext",
        wire: BatchnormInferenceAttributesVarianceExt, args: BatchnormInferenceAttributesVarianceExtArgs,
        as_fn: attributes_as_batchnorm_inference_attributes_variance_ext, defaults: {},
    }
    fields {
        /// Input x.
        x / x_tensor_uid: tin,
        /// Per-channel mean.
        mean / mean_tensor_uid: tin,
        /// Per-channel variance.
        variance / variance_tensor_uid: tin,
        /// Per-channel scale.
        scale / scale_tensor_uid: tin,
        /// Per-channel bias.
        bias / bias_tensor_uid: tin,
        /// Output y.
        y / y_tensor_uid: tout,
        /// Epsilon scalar tensor.
        epsilon / epsilon_tensor_uid: tin,
    }
}

op_table! {
    /// Batched matrix product (`MatmulAttributes`): a (..batch, M, K) × b (..batch, K, N) →
    /// c (..broadcast batch, M, N). No settings beyond the tensors. Engines: CPU (float types,
    /// any strides, f32 accumulation), GPU (f16, bf16, f32; a following bias / residual ADD
    /// and activation fuse into the kernel).
    ///
    /// ```
    /// use hipdnn::{Graph, MatmulAttributes, TensorAttributes};
    /// let mut g = Graph::new();
    /// let a = g.tensor(TensorAttributes::new("a").dims([4, 1, 8, 16])); // batch 4×1
    /// let b = g.tensor(TensorAttributes::new("b").dims([1, 2, 16, 32])); // batch 1×2
    /// let c = g.matmul(a, b, MatmulAttributes::new());
    /// assert_eq!(g.tensor_attributes(c).dims, [4, 2, 8, 32]);
    /// ```
    MatmulAttributes {
        kind: Matmul, method: "matmul", wire: MatmulAttributes, args: MatmulAttributesArgs,
        as_fn: attributes_as_matmul_attributes, defaults: {},
    }
    fields {
        /// Left operand.
        a / a_tensor_uid: tin,
        /// Right operand.
        b / b_tensor_uid: tin,
        /// Product.
        c / c_tensor_uid: tout,
    }
}

op_table! {
    /// RMS normalization (`RMSNormAttributes`): `y = x / √(mean(x²) + ε) · scale (+ bias)`,
    /// over the dims where scale is not 1 (as [`Graph::layernorm`](crate::Graph::layernorm)).
    /// `epsilon` (a scalar tensor) and `forward_phase` are required. Engines: CPU (float
    /// types), GPU (f16, bf16, f32).
    ///
    /// ```
    /// use hipdnn::{Graph, NormFwdPhase, RmsNormAttributes, TensorAttributes, TensorValue};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([2, 5, 64]));
    /// let scale = g.tensor(TensorAttributes::new("scale").dims([1, 1, 64]));
    /// let eps = g.tensor(TensorAttributes::scalar(TensorValue::Float32(1e-6)));
    /// let attrs = RmsNormAttributes::new().epsilon(eps).forward_phase(NormFwdPhase::Training);
    /// let (y, inv_rms) = g.rmsnorm(x, scale, attrs);
    /// assert_eq!(g.tensor_attributes(y).dims, [2, 5, 64]);
    /// assert_eq!(g.tensor_attributes(inv_rms.unwrap()).dims, [2, 5, 1]);
    /// ```
    RmsNormAttributes {
        kind: RmsNorm, method: "rmsnorm", wire: RMSNormAttributes, args: RMSNormAttributesArgs,
        as_fn: attributes_as_rmsnorm_attributes, defaults: {},
    }
    fields {
        /// Input x.
        x / x_tensor_uid: tin,
        /// Scale.
        scale / scale_tensor_uid: tin,
        /// Epsilon: a scalar tensor ([`TensorAttributes::scalar`](crate::TensorAttributes::scalar)).
        epsilon / epsilon_tensor_uid: tin,
        /// Output y.
        y / y_tensor_uid: tout,
        /// Optional bias (dims of scale).
        bias / bias_tensor_uid: opt_tin,
        /// Inverse RMS output (TRAINING).
        inv_rms / inv_rms_tensor_uid: opt_tout,
        /// Forward phase, **required** (`NotSet`, the default, fails validation):
        /// `Inference`, or `Training` to also write `inv_rms`.
        forward_phase / forward_phase: norm_phase,
    }
}

op_table! {
    /// Layer normalization (`LayernormAttributes`). `epsilon` (a scalar tensor) and
    /// `forward_phase` are required; a worked example is on
    /// [`Graph::layernorm`](crate::Graph::layernorm). Engines: CPU (float types), GPU (f16,
    /// bf16, f32; normalized dims trailing and packed).
    ///
    /// ```
    /// use hipdnn::{LayernormAttributes, NormFwdPhase};
    /// let a = LayernormAttributes::new().forward_phase(NormFwdPhase::Inference);
    /// assert_eq!((a.epsilon, a.normalized_dim_count), (None, 0)); // epsilon still to set
    /// ```
    LayernormAttributes {
        kind: Layernorm, method: "layernorm", wire: LayernormAttributes, args: LayernormAttributesArgs,
        as_fn: attributes_as_layernorm_attributes, defaults: {},
    }
    fields {
        /// Input x.
        x / x_tensor_uid: tin,
        /// Scale.
        scale / scale_tensor_uid: tin,
        /// Bias.
        bias / bias_tensor_uid: tin,
        /// Epsilon: a scalar tensor ([`TensorAttributes::scalar`](crate::TensorAttributes::scalar)).
        epsilon / epsilon_tensor_uid: tin,
        /// Output y.
        y / y_tensor_uid: tout,
        /// Number of trailing normalized dims (upstream internal `set_normalized_dim_count`);
        /// 0 (the default) normalizes from the first dim where scale is not 1 on.
        normalized_dim_count / normalized_dim_count: i64_,
        /// Mean output (TRAINING).
        mean / mean_tensor_uid: opt_tout,
        /// Inverse variance output (TRAINING).
        inv_variance / inv_variance_tensor_uid: opt_tout,
        /// Forward phase, **required** (`NotSet`, the default, fails validation):
        /// `Inference`, or `Training` to also write mean and inverse variance.
        forward_phase / forward_phase: norm_phase,
    }
}

op_table! {
    /// Scaled dot-product attention forward (`SdpaAttributes`, 41 fields): q (B, H, Sq, D),
    /// k (B, Hk, Skv, D), v (B, Hk, Skv, Dv) → o (B, H, Sq, Dv), stats (B, H, Sq, 1) FLOAT.
    ///
    /// Every field is optional. Engines: the CPU engine runs scale (value or tensor),
    /// attn_mask (additive or BOOLEAN), causal / bottom-right causal, band bounds with
    /// diagonal alignment, GQA/MQA and the stats / max / sum_exp outputs (float types), and
    /// refuses dropout, seeds, paged K/V, block mask, sink token, FP8 scales, alibi, padding
    /// mask and sequence lengths; the GPU kernel (flash attention, f16 / bf16 / f32, head dim
    /// ≤ 128) serves a subset and leaves the rest to the CPU. A masked example is on
    /// [`Graph::sdpa`](crate::Graph::sdpa).
    ///
    /// ```
    /// use hipdnn::{Graph, SdpaAttributes, TensorAttributes};
    /// let mut g = Graph::new();
    /// let q = g.tensor(TensorAttributes::new("q").dims([2, 8, 16, 64]));
    /// let k = g.tensor(TensorAttributes::new("k").dims([2, 2, 16, 64])); // 2 KV heads (GQA)
    /// let v = g.tensor(TensorAttributes::new("v").dims([2, 2, 16, 64]));
    /// let attrs = SdpaAttributes::new()
    ///     .attn_scale_value(0.125) // 1/√64
    ///     .causal_mask(true)
    ///     .generate_stats(true);
    /// let (o, stats) = g.sdpa(q, k, v, attrs);
    /// assert_eq!(g.tensor_attributes(o).dims, [2, 8, 16, 64]);
    /// assert_eq!(g.tensor_attributes(stats.unwrap()).dims, [2, 8, 16, 1]);
    /// ```
    SdpaAttributes {
        kind: Sdpa, method: "sdpa", wire: SdpaAttributes, args: SdpaAttributesArgs,
        as_fn: attributes_as_sdpa_attributes, defaults: {},
    }
    fields {
        /// Queries.
        q / q_tensor_uid: tin,
        /// Keys.
        k / k_tensor_uid: tin,
        /// Values.
        v / v_tensor_uid: tin,
        /// Output.
        o / o_tensor_uid: tout,
        /// Attention mask / bias, broadcast to (B, H, Sq, Skv): BOOLEAN keeps the `true`
        /// positions, a float mask is added to the scores.
        attn_mask / attn_mask_tensor_uid: opt_tin,
        /// Attention scale tensor (used when `attn_scale_value` is absent; neither: scale 1).
        scale / scale_tensor_uid: opt_tin,
        /// Per-batch query sequence lengths.
        seq_len_q / seq_len_q_tensor_uid: opt_tin,
        /// Per-batch key/value sequence lengths.
        seq_len_kv / seq_len_kv_tensor_uid: opt_tin,
        /// Dropout RNG seed.
        seed / seed_tensor_uid: opt_tin,
        /// Dropout RNG offset.
        offset / offset_tensor_uid: opt_tin,
        /// Dropout mask.
        dropout_mask / dropout_mask_tensor_uid: opt_tin,
        /// Dropout scale.
        dropout_scale / dropout_scale_tensor_uid: opt_tin,
        /// Paged K table.
        page_table_k / page_table_k_tensor_uid: opt_tin,
        /// Paged V table.
        page_table_v / page_table_v_tensor_uid: opt_tin,
        /// Block-sparse mask.
        block_mask / block_mask_tensor_uid: opt_tin,
        /// Attention sink token.
        sink_token / sink_token_tensor_uid: opt_tin,
        /// FP8 descale of q.
        descale_q / descale_q_tensor_uid: opt_tin,
        /// FP8 descale of k.
        descale_k / descale_k_tensor_uid: opt_tin,
        /// FP8 descale of v.
        descale_v / descale_v_tensor_uid: opt_tin,
        /// FP8 descale of s.
        descale_s / descale_s_tensor_uid: opt_tin,
        /// FP8 scale of s.
        scale_s / scale_s_tensor_uid: opt_tin,
        /// FP8 scale of o.
        scale_o / scale_o_tensor_uid: opt_tin,
        /// Softmax statistics output (created when `generate_stats == Some(true)`).
        stats / stats_tensor_uid: opt_tout,
        /// Row max output.
        max / max_tensor_uid: opt_tout,
        /// Row sum-of-exp output.
        sum_exp / sum_exp_tensor_uid: opt_tout,
        /// RNG dump output.
        rng_dump / rng_dump_tensor_uid: opt_tout,
        /// FP8 amax of s output.
        amax_s / amax_s_tensor_uid: opt_tout,
        /// FP8 amax of o output.
        amax_o / amax_o_tensor_uid: opt_tout,
        /// Whether stats are produced.
        generate_stats / generate_stats: opt_bool,
        /// ALiBi mask.
        alibi_mask / alibi_mask: bool_,
        /// Padding mask.
        padding_mask / padding_mask: bool_,
        /// Causal mask, top-left aligned (deprecated upstream in favour of `right_bound(0)`;
        /// kept on the wire). CPU and GPU.
        causal_mask / causal_mask: bool_,
        /// Bottom-right causal mask (deprecated upstream; kept on the wire). CPU.
        causal_mask_bottom_right / causal_mask_bottom_right: bool_,
        /// Dropout probability in [0, 1) (validation refuses other values); any value but 0
        /// is refused by the CPU engine.
        dropout_probability / dropout_probability: opt_f32,
        /// Attention scale as a value (usually `1/√D`); absent: the `scale` tensor, else 1.
        attn_scale_value / attn_scale_value: opt_f32,
        /// Band mask left bound.
        left_bound / left_bound: opt_i64,
        /// Band mask right bound.
        right_bound / right_bound: opt_i64,
        /// Maximum kv sequence length.
        max_seq_len_kv / max_seq_len_kv: opt_i32,
        /// Diagonal alignment of the band mask.
        diagonal_alignment / diagonal_alignment: diagonal_alignment,
        /// MMA core type.
        mma_core_mode / mma_core_mode: data_type,
        /// Implementation choice.
        implementation / implementation: attention_implementation,
    }
}

op_table! {
    /// Block-scaled dequantization (`BlockScaleDequantizeAttributes`): `y = x · scale` with one
    /// scale per block of `block_size[d]` elements along each (trailing) dim `d`. Engines: CPU
    /// (x FP8 E4M3 / E5M2 or FNUZ, y a float type; see `docs/engines.md`).
    ///
    /// ```
    /// use hipdnn::{BlockScaleDequantizeAttributes, Graph, TensorAttributes};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([4, 64]));
    /// let scale = g.tensor(TensorAttributes::new("scale").dims([4, 2]));
    /// let y = g.block_scale_dequantize(x, scale, BlockScaleDequantizeAttributes::new().block_size(vec![1, 32]));
    /// assert_eq!(g.tensor_attributes(y).dims, [4, 64]);
    /// ```
    BlockScaleDequantizeAttributes {
        kind: BlockScaleDequantize, method: "block_scale_dequantize", wire: BlockScaleDequantizeAttributes,
        args: BlockScaleDequantizeAttributesArgs, as_fn: attributes_as_block_scale_dequantize_attributes, defaults: {},
    }
    fields {
        /// Quantized input.
        x / x_tensor_uid: tin,
        /// Block scales.
        scale / scale_tensor_uid: tin,
        /// Dequantized output (dims of x).
        y / y_tensor_uid: tout,
        /// Block size per dim.
        block_size / block_size: i32_list,
        /// Scales are negative.
        is_negative_scale / is_negative_scale: bool_,
    }
}

op_table! {
    /// Block-scaled quantization (`BlockScaleQuantizeAttributes`): x → y (dims of x) and
    /// scale (dims of x with the axis dim divided by block_size). Engines: CPU (x a float
    /// type, y FP8 E4M3 / E5M2 or FNUZ, scale E8M0 / E4M3 / f32; cuDNN's formulas, see
    /// `docs/engines.md`).
    ///
    /// ```
    /// use hipdnn::{BlockScaleQuantizeAttributes, Graph, TensorAttributes};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([4, 64]));
    /// let (y, scale) = g.block_scale_quantize(x, BlockScaleQuantizeAttributes::new().block_size(32));
    /// assert_eq!(g.tensor_attributes(y).dims, [4, 64]);
    /// assert_eq!(g.tensor_attributes(scale).dims, [4, 2]);
    /// ```
    BlockScaleQuantizeAttributes {
        kind: BlockScaleQuantize, method: "block_scale_quantize", wire: BlockScaleQuantizeAttributes,
        args: BlockScaleQuantizeAttributesArgs, as_fn: attributes_as_block_scale_quantize_attributes, defaults: {},
    }
    fields {
        /// Input.
        x / x_tensor_uid: tin,
        /// Quantized output.
        y / y_tensor_uid: tout,
        /// Block scales output.
        scale / scale_tensor_uid: tout,
        /// Block size along `axis`.
        block_size / block_size: i32_,
        /// Quantization axis (default: last dim).
        axis / axis: opt_i64,
        /// Transposed layout.
        transpose / transpose: bool_,
    }
}

op_table! {
    /// Scaled dot-product attention backward (`SdpaBackwardAttributes`, 28 fields).
    /// Engines: the CPU engine (float types) runs what the forward takes (scale, masks, causal,
    /// bounds, GQA) and the optional `dbias`, and refuses dropout, sequence lengths, alibi and
    /// padding mask; the GPU kernel (flash attention backward, deterministic, f16 / bf16 / f32,
    /// head dim ≤ 128, causal and bands, mask tensors, GQA) serves graphs without dbias and
    /// leaves the rest to the CPU. `stats` is the forward's logsumexp output
    /// ([`SdpaAttributes::generate_stats`]).
    ///
    /// ```
    /// use hipdnn::{Graph, SdpaBackwardAttributes, TensorAttributes};
    /// let mut g = Graph::new();
    /// let [q, k, v, o, d_o] = ["q", "k", "v", "o", "do"]
    ///     .map(|n| g.tensor(TensorAttributes::new(n).dims([1, 2, 8, 16])));
    /// let stats = g.tensor(TensorAttributes::new("stats").dims([1, 2, 8, 1]));
    /// let attrs = SdpaBackwardAttributes::new().attn_scale_value(0.25);
    /// let [dq, dk, dv] = g.sdpa_backward(q, k, v, o, d_o, stats, attrs);
    /// assert_eq!(g.tensor_attributes(dq).dims, [1, 2, 8, 16]);
    /// # let _ = (dk, dv);
    /// ```
    SdpaBackwardAttributes {
        kind: SdpaBackward, method: "sdpa_backward", wire: SdpaBackwardAttributes,
        args: SdpaBackwardAttributesArgs, as_fn: attributes_as_sdpa_backward_attributes, defaults: {},
    }
    fields {
        /// Queries.
        q / q_tensor_uid: tin,
        /// Keys.
        k / k_tensor_uid: tin,
        /// Values.
        v / v_tensor_uid: tin,
        /// Forward output.
        o / o_tensor_uid: tin,
        /// Gradient of o (schema `do_tensor_uid`).
        d_o / do_tensor_uid: tin,
        /// Softmax statistics from the forward pass.
        stats / stats_tensor_uid: tin,
        /// Gradient of q.
        dq / dq_tensor_uid: tout,
        /// Gradient of k.
        dk / dk_tensor_uid: tout,
        /// Gradient of v.
        dv / dv_tensor_uid: tout,
        /// Attention scale tensor.
        scale / scale_tensor_uid: opt_tin,
        /// Attention mask / bias.
        attn_mask / attn_mask_tensor_uid: opt_tin,
        /// Query sequence lengths.
        seq_len_q / seq_len_q_tensor_uid: opt_tin,
        /// Key/value sequence lengths.
        seq_len_kv / seq_len_kv_tensor_uid: opt_tin,
        /// Dropout seed.
        seed / seed_tensor_uid: opt_tin,
        /// Dropout offset.
        offset / offset_tensor_uid: opt_tin,
        /// Dropout mask.
        dropout_mask / dropout_mask_tensor_uid: opt_tin,
        /// Dropout scale.
        dropout_scale / dropout_scale_tensor_uid: opt_tin,
        /// Inverse dropout scale.
        dropout_scale_inv / dropout_scale_inv_tensor_uid: opt_tin,
        /// Gradient of the attention bias (output).
        dbias / dbias_tensor_uid: opt_tout,
        /// ALiBi mask.
        alibi_mask / alibi_mask: bool_,
        /// Padding mask.
        padding_mask / padding_mask: bool_,
        /// Causal mask (deprecated upstream).
        causal_mask / causal_mask: bool_,
        /// Bottom-right causal mask (deprecated upstream).
        causal_mask_bottom_right / causal_mask_bottom_right: bool_,
        /// Dropout probability.
        dropout_probability / dropout_probability: opt_f32,
        /// Attention scale value.
        attn_scale_value / attn_scale_value: opt_f32,
        /// Band left bound.
        left_bound / left_bound: opt_i64,
        /// Band right bound.
        right_bound / right_bound: opt_i64,
        /// Diagonal alignment.
        diagonal_alignment / diagonal_alignment: diagonal_alignment,
    }
}

op_table! {
    /// Plugin-defined operation (`CustomOpAttributes`). `custom_op_id` is required
    /// (`"<plugin>.<operation>"`). Engines: the CPU and GPU engines serve one custom op, the
    /// row gather [`Graph::gather`](crate::Graph::gather) builds; the CPU engine refuses the
    /// others with `NOT_APPLICABLE`.
    ///
    /// ```
    /// use hipdnn::{CustomOpAttributes, Graph, TensorAttributes};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([4]));
    /// let outs = g.custom_op(&[x], 1, CustomOpAttributes::new().custom_op_id("my_plugin.my_op"));
    /// g.set_dims(outs[0], [4]); // the plugin defines the output dims
    /// assert_eq!(g.node(g.producer(outs[0]).unwrap()).kind(), "CustomOp");
    /// ```
    CustomOpAttributes {
        kind: CustomOp, method: "custom_op", wire: CustomOpAttributes, args: CustomOpAttributesArgs,
        as_fn: attributes_as_custom_op_attributes, defaults: {},
    }
    fields {
        /// `"<plugin>.<operation>"`.
        custom_op_id / custom_op_id: string,
        /// Inputs, in order.
        inputs / input_tensor_uids: tins,
        /// Outputs, in order.
        outputs / output_tensor_uids: touts,
        /// Opaque plugin data.
        data / data: u8_list,
    }
}

op_table! {
    /// RMS normalization backward (`RMSNormBackwardAttributes`). Engines: CPU (float types,
    /// f64 sums), GPU (f16, bf16, f32, from the saved `inv_rms`).
    ///
    /// ```
    /// use hipdnn::{Graph, RmsNormBackwardAttributes, TensorAttributes};
    /// let mut g = Graph::new();
    /// let dy = g.tensor(TensorAttributes::new("dy").dims([4, 64]));
    /// let x = g.tensor(TensorAttributes::new("x").dims([4, 64]));
    /// let scale = g.tensor(TensorAttributes::new("scale").dims([1, 64]));
    /// let inv_rms = g.tensor(TensorAttributes::new("inv_rms").dims([4, 1]));
    /// let (dx, dscale, dbias) =
    ///     g.rmsnorm_backward(dy, x, scale, inv_rms, false, RmsNormBackwardAttributes::new());
    /// assert_eq!((g.tensor_attributes(dx).dims.len(), g.tensor_attributes(dscale).dims[1], dbias), (2, 64, None));
    /// ```
    RmsNormBackwardAttributes {
        kind: RmsNormBackward, method: "rmsnorm_backward", wire: RMSNormBackwardAttributes,
        args: RMSNormBackwardAttributesArgs, as_fn: attributes_as_rmsnorm_backward_attributes, defaults: {},
    }
    fields {
        /// Gradient of y.
        dy / dy_tensor_uid: tin,
        /// Forward input.
        x / x_tensor_uid: tin,
        /// Scale.
        scale / scale_tensor_uid: tin,
        /// Saved inverse RMS.
        inv_rms / inv_rms_tensor_uid: tin,
        /// Gradient of x.
        dx / dx_tensor_uid: tout,
        /// Gradient of scale.
        dscale / dscale_tensor_uid: tout,
        /// Gradient of bias (when computed).
        dbias / dbias_tensor_uid: opt_tout,
    }
}

op_table! {
    /// Reduction (`ReductionAttributes`): the output dims say which dims are reduced (1).
    /// `mode` is required. Engines: CPU (every mode, float and integer types; a softmax /
    /// log-softmax pattern over trailing dims runs fused), GPU (f16, bf16, f32, one launch).
    ///
    /// ```
    /// use hipdnn::{Graph, ReductionAttributes, ReductionMode, TensorAttributes};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([8, 16, 7, 7]));
    /// // Global average pooling: reduce H and W.
    /// let y = g.reduction(x, [8, 16, 1, 1], ReductionAttributes::new().mode(ReductionMode::Avg));
    /// assert_eq!(g.tensor_attributes(y).dims, [8, 16, 1, 1]);
    /// ```
    ReductionAttributes {
        kind: Reduction, method: "reduction", wire: ReductionAttributes, args: ReductionAttributesArgs,
        as_fn: attributes_as_reduction_attributes, defaults: {},
    }
    fields {
        /// Reduction operator, **required** (`NotSet`, the default, fails validation).
        mode / mode: reduction_mode,
        /// Input (schema `in_tensor_uid`).
        x / in_tensor_uid: tin,
        /// Output (schema `out_tensor_uid`).
        y / out_tensor_uid: tout,
        /// Deterministic reduction order.
        is_deterministic / is_deterministic: bool_,
    }
}

op_table! {
    /// Resample (pooling) forward (`ResampleFwdAttributes`): x (N, C, spatial..) → y
    /// (N, C, out..), `out = floor((in + pre + post - window)/stride) + 1`; index (INT32,
    /// dims of y) when `generate_index == Some(true)` and mode is MAXPOOL.
    ///
    /// `resample_mode`, `pre_padding`, `post_padding`, `stride` and `window` are required
    /// (one entry per spatial dim). Engines: CPU 1–3 spatial dims (float types; an index
    /// with average pooling is refused), GPU (f16, bf16, f32).
    ///
    /// ```
    /// use hipdnn::{Graph, ResampleFwdAttributes, ResampleMode, TensorAttributes};
    /// let mut g = Graph::new();
    /// let x = g.tensor(TensorAttributes::new("x").dims([1, 8, 32, 32]));
    /// let pool = ResampleFwdAttributes::new()
    ///     .resample_mode(ResampleMode::MaxPool)
    ///     .window(vec![2, 2])
    ///     .stride(vec![2, 2])
    ///     .pre_padding(vec![0, 0])
    ///     .post_padding(vec![0, 0])
    ///     .generate_index(true);
    /// let (y, index) = g.resample(x, pool);
    /// assert_eq!(g.tensor_attributes(y).dims, [1, 8, 16, 16]);
    /// assert!(index.is_some());
    /// ```
    ResampleFwdAttributes {
        kind: ResampleFwd, method: "resample", wire: ResampleFwdAttributes, args: ResampleFwdAttributesArgs,
        as_fn: attributes_as_resample_fwd_attributes, defaults: {},
    }
    fields {
        /// Input.
        x / x_tensor_uid: tin,
        /// Output.
        y / y_tensor_uid: tout,
        /// Max-pool index output.
        index / index_tensor_uid: opt_tout,
        /// Padding before each spatial dim.
        pre_padding / pre_padding: i64_list,
        /// Padding after each spatial dim.
        post_padding / post_padding: i64_list,
        /// Stride per spatial dim.
        stride / stride: i64_list,
        /// Window per spatial dim.
        window / window: i64_list,
        /// Resample mode, **required** (`NotSet`, the default, fails validation).
        resample_mode / resample_mode: resample_mode,
        /// Padding mode: what MAXPOOL sees in the padding (`ZeroPad`: zeros; otherwise the
        /// padding is skipped).
        padding_mode / padding_mode: padding_mode,
        /// Whether the index output is produced (MAXPOOL only).
        generate_index / generate_index: opt_bool,
    }
}

op_table! {
    /// Layer normalization backward (`LayernormBackwardAttributes`). Engines: CPU (float
    /// types, f64 sums; saved mean and inv_variance together, or neither with epsilon), GPU
    /// (f16, bf16, f32, from the saved statistics).
    ///
    /// ```
    /// use hipdnn::{Graph, LayernormBackwardAttributes, TensorAttributes};
    /// let mut g = Graph::new();
    /// let dy = g.tensor(TensorAttributes::new("dy").dims([4, 64]));
    /// let x = g.tensor(TensorAttributes::new("x").dims([4, 64]));
    /// let scale = g.tensor(TensorAttributes::new("scale").dims([1, 64]));
    /// let mean = g.tensor(TensorAttributes::new("mean").dims([4, 1]));
    /// let inv_var = g.tensor(TensorAttributes::new("inv_var").dims([4, 1]));
    /// let attrs = LayernormBackwardAttributes::new().mean(mean).inv_variance(inv_var);
    /// let [dx, dscale, _dbias] = g.layernorm_backward(dy, x, scale, attrs);
    /// assert_eq!((g.tensor_attributes(dx).dims.as_slice(), g.tensor_attributes(dscale).dims.as_slice()), (&[4, 64][..], &[1, 64][..]));
    /// ```
    LayernormBackwardAttributes {
        kind: LayernormBackward, method: "layernorm_backward", wire: LayernormBackwardAttributes,
        args: LayernormBackwardAttributesArgs, as_fn: attributes_as_layernorm_backward_attributes, defaults: {},
    }
    fields {
        /// Gradient of y.
        dy / dy_tensor_uid: tin,
        /// Forward input.
        x / x_tensor_uid: tin,
        /// Scale.
        scale / scale_tensor_uid: tin,
        /// Saved mean.
        mean / mean_tensor_uid: opt_tin,
        /// Saved inverse variance.
        inv_variance / inv_variance_tensor_uid: opt_tin,
        /// Epsilon scalar tensor.
        epsilon / epsilon_tensor_uid: opt_tin,
        /// Gradient of x.
        dx / dx_tensor_uid: tout,
        /// Gradient of scale.
        dscale / dscale_tensor_uid: tout,
        /// Gradient of bias.
        dbias / dbias_tensor_uid: tout,
        /// Number of trailing normalized dims.
        normalized_dim_count / normalized_dim_count: i64_,
    }
}

op_table! {
    /// Resample (pooling) backward (`ResampleBwdAttributes`). Engines: CPU and GPU (1–3
    /// spatial dims, float types; MAXPOOL needs the forward's index; the GPU kernel needs dy of
    /// dx's type).
    ///
    /// ```
    /// use hipdnn::{Graph, ResampleBwdAttributes, ResampleMode, TensorAttributes};
    /// let mut g = Graph::new();
    /// let dy = g.tensor(TensorAttributes::new("dy").dims([1, 8, 16, 16]));
    /// let attrs = ResampleBwdAttributes::new()
    ///     .resample_mode(ResampleMode::AvgPoolIncludePadding)
    ///     .window(vec![2, 2])
    ///     .stride(vec![2, 2])
    ///     .pre_padding(vec![0, 0])
    ///     .post_padding(vec![0, 0]);
    /// let dx = g.resample_bwd(dy, None, attrs);
    /// assert_eq!(g.tensor_attributes(dx).dims, [1, 8, 32, 32]);
    /// ```
    ResampleBwdAttributes {
        kind: ResampleBwd, method: "resample_bwd", wire: ResampleBwdAttributes, args: ResampleBwdAttributesArgs,
        as_fn: attributes_as_resample_bwd_attributes, defaults: {},
    }
    fields {
        /// Gradient of y.
        dy / dy_tensor_uid: tin,
        /// Gradient of x.
        dx / dx_tensor_uid: tout,
        /// Max-pool index from the forward pass (input).
        index / index_tensor_uid: opt_tin,
        /// Padding before each spatial dim.
        pre_padding / pre_padding: i64_list,
        /// Padding after each spatial dim.
        post_padding / post_padding: i64_list,
        /// Stride per spatial dim.
        stride / stride: i64_list,
        /// Window per spatial dim.
        window / window: i64_list,
        /// Resample mode.
        resample_mode / resample_mode: resample_mode,
        /// Padding mode.
        padding_mode / padding_mode: padding_mode,
    }
}

op_table! {
    /// Mixture-of-experts grouped matmul (`MoeGroupedMatmulAttributes`): token (T, K) and
    /// weight (E, K, N) → output (T, N). No engine of this crate runs it (the CPU engine
    /// refuses it with `NOT_APPLICABLE`).
    ///
    /// ```
    /// use hipdnn::{Graph, MoeGroupedMatmulAttributes, TensorAttributes};
    /// let mut g = Graph::new();
    /// let token = g.tensor(TensorAttributes::new("token").dims([10, 16]));
    /// let weight = g.tensor(TensorAttributes::new("weight").dims([4, 16, 32]));
    /// let offsets = g.tensor(TensorAttributes::new("first_token_offset").dims([4]));
    /// let out = g.moe_grouped_matmul(token, weight, offsets, None, None, MoeGroupedMatmulAttributes::new());
    /// assert_eq!(g.tensor_attributes(out).dims, [10, 32]);
    /// ```
    MoeGroupedMatmulAttributes {
        kind: MoeGroupedMatmul, method: "moe_grouped_matmul", wire: MoeGroupedMatmulAttributes,
        args: MoeGroupedMatmulAttributesArgs, as_fn: attributes_as_moe_grouped_matmul_attributes, defaults: {},
    }
    fields {
        /// Tokens.
        token / token_tensor_uid: tin,
        /// Expert weights.
        weight / weight_tensor_uid: tin,
        /// First token offset per expert.
        first_token_offset / first_token_offset_tensor_uid: tin,
        /// Token index (gather/scatter).
        token_index / token_index_tensor_uid: opt_tin,
        /// Token ks.
        token_ks / token_ks_tensor_uid: opt_tin,
        /// Output.
        output / output_tensor_uid: tout,
        /// Gather/scatter mode.
        mode / mode: moe_mode,
        /// Experts per token.
        top_k / top_k: i32_,
    }
}

op_table! {
    /// Mixture-of-experts grouped matmul backward for the weights
    /// (`MoeGroupedMatmulBwdAttributes`). No engine of this crate runs it.
    ///
    /// ```
    /// use hipdnn::{Graph, MoeGroupedMatmulBwdAttributes, TensorAttributes};
    /// let mut g = Graph::new();
    /// let doutput = g.tensor(TensorAttributes::new("doutput").dims([10, 32]));
    /// let token = g.tensor(TensorAttributes::new("token").dims([10, 16]));
    /// let offsets = g.tensor(TensorAttributes::new("first_token_offset").dims([4]));
    /// let dw = g.moe_grouped_matmul_bwd(doutput, token, offsets, MoeGroupedMatmulBwdAttributes::new());
    /// assert_eq!(g.tensor_attributes(dw).dims, [4, 16, 32]);
    /// ```
    MoeGroupedMatmulBwdAttributes {
        kind: MoeGroupedMatmulBwd, method: "moe_grouped_matmul_bwd", wire: MoeGroupedMatmulBwdAttributes,
        args: MoeGroupedMatmulBwdAttributesArgs, as_fn: attributes_as_moe_grouped_matmul_bwd_attributes, defaults: {},
    }
    fields {
        /// Gradient of the output.
        doutput / doutput_tensor_uid: tin,
        /// Tokens.
        token / token_tensor_uid: tin,
        /// First token offset per expert.
        first_token_offset / first_token_offset_tensor_uid: tin,
        /// Gradient of the weights.
        dweight / dweight_tensor_uid: tout,
    }
}
