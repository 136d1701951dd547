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
            /// Sets the node name.
            pub fn name(mut self, name: impl Into<String>) -> Self {
                self.name = name.into();
                self
            }
            /// Sets the node's compute type.
            pub fn compute_data_type(mut self, t: DataType) -> Self {
                self.compute_data_type = t;
                self
            }
            $(
                $(#[$fm])*
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
    PointwiseAttributes {
        kind: Pointwise, method: "pointwise", wire: PointwiseAttributes,
        args: PointwiseAttributesArgs, as_fn: attributes_as_pointwise_attributes, defaults: {},
    }
    fields {
        /// The operation (schema field `operation`).
        mode / operation: pointwise_mode,
        /// RELU lower clip.
        relu_lower_clip / relu_lower_clip: opt_f32,
        /// RELU upper clip.
        relu_upper_clip / relu_upper_clip: opt_f32,
        /// RELU slope below the lower clip.
        relu_lower_clip_slope / relu_lower_clip_slope: opt_f32,
        /// Axis index for GEN_INDEX (a plain index stored in `axis_tensor_uid`, not a UID).
        axis / axis_tensor_uid: opt_i64,
        /// First input.
        in_0 / in_0_tensor_uid: tin,
        /// Second input (binary and ternary modes).
        in_1 / in_1_tensor_uid: opt_tin,
        /// Third input (BINARY_SELECT).
        in_2 / in_2_tensor_uid: opt_tin,
        /// Output.
        out_0 / out_0_tensor_uid: tout,
        /// Swish beta.
        swish_beta / swish_beta: opt_f32,
        /// ELU alpha.
        elu_alpha / elu_alpha: opt_f32,
        /// Softplus beta.
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
    /// Batchnorm backward (`BatchnormBackwardAttributes`).
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
    /// Batchnorm training forward (`BatchnormAttributes`).
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
                /// Padding before each spatial dim (elements), one entry per spatial dim.
                pre_padding / pre_padding: i64_list,
                /// Padding after each spatial dim.
                post_padding / post_padding: i64_list,
                /// Stride per spatial dim (> 0).
                stride / stride: i64_list,
                /// Dilation per spatial dim (> 0).
                dilation / dilation: i64_list,
                /// Convolution or cross-correlation.
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
    /// dilation*(k-1) - 1)/stride) + 1`.
    ConvFpropAttributes, ConvFprop, "conv_fprop", ConvolutionFwdAttributes, ConvolutionFwdAttributesArgs,
    attributes_as_convolution_fwd_attributes, x / x_tensor_uid: tin, w / w_tensor_uid: tin, y / y_tensor_uid: tout
);
conv_table!(
    /// Convolution backward data (`ConvolutionBwdAttributes`): dy and w give dx.
    ConvDgradAttributes, ConvDgrad, "conv_dgrad", ConvolutionBwdAttributes, ConvolutionBwdAttributesArgs,
    attributes_as_convolution_bwd_attributes, dy / dy_tensor_uid: tin, w / w_tensor_uid: tin, dx / dx_tensor_uid: tout
);
conv_table!(
    /// Convolution backward filter (`ConvolutionWrwAttributes`): x and dy give dw.
    ConvWgradAttributes, ConvWgrad, "conv_wgrad", ConvolutionWrwAttributes, ConvolutionWrwAttributesArgs,
    attributes_as_convolution_wrw_attributes, x / x_tensor_uid: tin, dy / dy_tensor_uid: tin, dw / dw_tensor_uid: tout
);

op_table! {
    /// Batchnorm inference from variance and epsilon (`BatchnormInferenceAttributesVarianceExt`).
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
    /// c (..broadcast batch, M, N).
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
    /// RMS normalization (`RMSNormAttributes`).
    RmsNormAttributes {
        kind: RmsNorm, method: "rmsnorm", wire: RMSNormAttributes, args: RMSNormAttributesArgs,
        as_fn: attributes_as_rmsnorm_attributes, defaults: {},
    }
    fields {
        /// Input x.
        x / x_tensor_uid: tin,
        /// Scale.
        scale / scale_tensor_uid: tin,
        /// Epsilon scalar tensor.
        epsilon / epsilon_tensor_uid: tin,
        /// Output y.
        y / y_tensor_uid: tout,
        /// Optional bias.
        bias / bias_tensor_uid: opt_tin,
        /// Inverse RMS output (TRAINING).
        inv_rms / inv_rms_tensor_uid: opt_tout,
        /// Forward phase.
        forward_phase / forward_phase: norm_phase,
    }
}

op_table! {
    /// Layer normalization (`LayernormAttributes`).
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
        /// Epsilon scalar tensor.
        epsilon / epsilon_tensor_uid: tin,
        /// Output y.
        y / y_tensor_uid: tout,
        /// Number of trailing normalized dims (upstream internal `set_normalized_dim_count`).
        normalized_dim_count / normalized_dim_count: i64_,
        /// Mean output (TRAINING).
        mean / mean_tensor_uid: opt_tout,
        /// Inverse variance output (TRAINING).
        inv_variance / inv_variance_tensor_uid: opt_tout,
        /// Forward phase.
        forward_phase / forward_phase: norm_phase,
    }
}

op_table! {
    /// Scaled dot-product attention forward (`SdpaAttributes`, 41 fields): q (B, H, Sq, D),
    /// k (B, Hk, Skv, D), v (B, Hk, Skv, Dv) → o (B, H, Sq, Dv), stats (B, H, Sq, 1) FLOAT.
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
        /// Attention mask / bias.
        attn_mask / attn_mask_tensor_uid: opt_tin,
        /// Attention scale tensor.
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
        /// Causal mask (deprecated upstream; kept on the wire).
        causal_mask / causal_mask: bool_,
        /// Bottom-right causal mask (deprecated upstream; kept on the wire).
        causal_mask_bottom_right / causal_mask_bottom_right: bool_,
        /// Dropout probability in [0, 1).
        dropout_probability / dropout_probability: opt_f32,
        /// Attention scale as a value.
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
    /// Block-scaled dequantization (`BlockScaleDequantizeAttributes`).
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
    /// scale (dims of x with the axis dim divided by block_size).
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
    /// Plugin-defined operation (`CustomOpAttributes`).
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
    /// RMS normalization backward (`RMSNormBackwardAttributes`).
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
    ReductionAttributes {
        kind: Reduction, method: "reduction", wire: ReductionAttributes, args: ReductionAttributesArgs,
        as_fn: attributes_as_reduction_attributes, defaults: {},
    }
    fields {
        /// Reduction operator.
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
        /// Resample mode.
        resample_mode / resample_mode: resample_mode,
        /// Padding mode.
        padding_mode / padding_mode: padding_mode,
        /// Whether the index output is produced.
        generate_index / generate_index: opt_bool,
    }
}

op_table! {
    /// Layer normalization backward (`LayernormBackwardAttributes`).
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
    /// Resample (pooling) backward (`ResampleBwdAttributes`).
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
    /// weight (E, K, N) → output (T, N).
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
    /// (`MoeGroupedMatmulBwdAttributes`).
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
