//! The operation descriptors: which attributes each supported operation takes (name → kind),
//! which are required at finalize, and how a finalized operation becomes a node of the SDK
//! graph.
//!
//! Supported (descriptor type → SDK node): CONVOLUTION_FORWARD / _BACKWARD_DATA /
//! _BACKWARD_FILTER → conv fprop/dgrad/wgrad; POINTWISE; MATMUL; BATCHNORM_INFERENCE,
//! BATCHNORM_INFERENCE_VARIANCE, BATCHNORM (training), BATCHNORM_BACKWARD; RMSNORM,
//! RMSNORM_BACKWARD; LAYERNORM, LAYERNORM_BACKWARD; REDUCTION; RESAMPLE_FWD; SDPA_FWD. Every
//! other operation type is refused at create with NOT_SUPPORTED (docs/c-api.md). Which
//! attributes an operation takes, their kinds and which are required come from the attribute
//! table ([`crate::abi::ATTRIBUTES`], pinned against the header); value enums are checked
//! against the C enumerators and translated by name (upstream's DataTypeConversion).

use crate::abi::{self, Kind, dt, ty};
use crate::attr::{In, Out};
use crate::enums;
use crate::error::{Ffi, err};
use crate::state::{Val, data_type_in, data_type_out, dt_fill_tensor, final_tensor, type_name};
use hipdnn::{
    AttentionImplementation, DataType, DiagonalAlignment, Graph, NormFwdPhase, PaddingMode,
    ReductionMode, ResampleMode, TensorAttributes, TensorId,
};
use hipdnn_backend::Status;
use std::collections::HashMap;
use std::sync::Arc;

/// The kind of operation attribute `name` on operation type `dtype`, if the operation takes
/// it through SetAttribute (from [`abi::ATTRIBUTES`]).
pub fn attr_kind(dtype: i32, name: i32) -> Option<Kind> {
    abi::attribute_on(dtype, name)
        .filter(|a| a.access.settable())
        .map(|a| a.kind)
}

/// True when `v` is an enumerator of the C enum carried by attribute type `t`.
fn valid_c_enum(t: i32, v: i32) -> bool {
    match t {
        ty::CONVOLUTION_MODE => enums::conv_mode_from_c(v).is_some(),
        ty::POINTWISE_MODE => enums::pointwise_mode_from_c(v).is_some(),
        ty::NORM_FWD_PHASE => matches!(v, 1 | 2),
        ty::DIAGONAL_ALIGNMENT_EXT => matches!(v, 0 | 1),
        ty::ATTENTION_IMPLEMENTATION_EXT => matches!(v, 0..=2),
        ty::REDUCTION_OPERATOR_TYPE => matches!(v, 1..=9),
        ty::RESAMPLE_MODE => matches!(v, 1..=3),
        ty::PADDING_MODE => matches!(v, 1 | 2),
        _ => false,
    }
}

/// Reads a SetAttribute value for operation `dtype`.
///
/// # Errors
/// NOT_SUPPORTED for an attribute the operation does not take; the [`In`] errors; BAD_PARAM
/// for a number that is not an enumerator of the C enum; a referenced tensor of the wrong type
/// → BAD_PARAM, not finalized → BAD_PARAM_NOT_FINALIZED.
pub fn value(dtype: i32, v: &In) -> Ffi<Val> {
    let Some(kind) = attr_kind(dtype, v.name) else {
        return Err(v.unsupported(type_name(dtype)));
    };
    Ok(match kind {
        Kind::Unsupported
        | Kind::Descriptor
        | Kind::Descriptors
        | Kind::Enums(_)
        | Kind::Bytes
        | Kind::Handle
        | Kind::VoidPtr
        | Kind::VoidPtrs => return Err(v.unsupported(type_name(dtype))),
        Kind::Tensor => Val::Tensor(final_tensor(v.ptr(ty::BACKEND_DESCRIPTOR)?)?),
        Kind::Tensors => Val::Tensors(
            v.ptrs(ty::BACKEND_DESCRIPTOR)?
                .into_iter()
                .map(final_tensor)
                .collect::<Ffi<_>>()?,
        ),
        Kind::I64s => Val::I64s(v.i64s()?),
        Kind::Int => Val::I64s(vec![v.i64()?]),
        Kind::Float => Val::F64(v.f64()?),
        Kind::Bool => Val::Bool(v.bool()?),
        Kind::Data => Val::Data(data_type_in(v)?),
        Kind::Enum(t) => {
            let c = v.enum32(t)?;
            if !valid_c_enum(t, c) {
                return Err(err(
                    Status::BadParam,
                    format!(
                        "attribute {}: {c} is not an enumerator of the C enum of attribute type {t}",
                        v.name
                    ),
                ));
            }
            Val::Enum(c)
        }
        Kind::Text => Val::Text(v.text()?),
    })
}

/// GetAttribute on an operation descriptor of type `dtype` holding `attrs`.
///
/// # Errors
/// NOT_SUPPORTED for an attribute the operation does not take; BAD_PARAM when it was never
/// set, or for a wrong attribute type; the [`Out`] errors.
pub fn get(dtype: i32, attrs: &HashMap<i32, Val>, o: &Out) -> Ffi {
    let what = type_name(dtype);
    if o.name == abi::OPERATION_TYPE_EXT {
        let c = enums::operation_type_of_descriptor(dtype).unwrap_or(0);
        return o.put(ty::OPERATION_TYPE_EXT, &[c]);
    }
    let Some(kind) = abi::attribute_on(dtype, o.name)
        .filter(|a| a.access.gettable())
        .map(|a| a.kind)
    else {
        return Err(o.unsupported(what));
    };
    let Some(val) = attrs.get(&o.name) else {
        if let Kind::Data = kind {
            return data_type_out(o, DataType::Unset);
        }
        return Err(err(
            Status::BadParam,
            format!("{what}: attribute {} has not been set", o.name),
        ));
    };
    match (kind, val) {
        (Kind::Tensor, Val::Tensor(t)) => put_tensors(o, std::slice::from_ref(t)),
        (Kind::Tensors, Val::Tensors(ts)) => put_tensors(o, ts),
        (Kind::I64s | Kind::Int, Val::I64s(v)) => o.put(ty::INT64, v),
        (Kind::Float, Val::F64(v)) => {
            if o.ty == ty::DOUBLE {
                o.put(ty::DOUBLE, &[*v])
            } else {
                o.put(ty::FLOAT, &[*v as f32])
            }
        }
        (Kind::Bool, Val::Bool(b)) => o.put(ty::BOOLEAN, &[u8::from(*b)]),
        (Kind::Data, Val::Data(d)) => data_type_out(o, *d),
        (Kind::Enum(t), Val::Enum(e)) => o.put(t, &[*e]),
        (Kind::Text, Val::Text(t)) => o.put_text(t),
        _ => Err(err(
            Status::InternalError,
            "stored attribute has the wrong kind",
        )),
    }
}

/// Fills caller-created TENSOR descriptors with `ts`.
fn put_tensors(o: &Out, ts: &[Arc<TensorAttributes>]) -> Ffi {
    if o.begin(ty::BACKEND_DESCRIPTOR, ts.len())?.is_some() {
        for (i, t) in ts.iter().enumerate() {
            // SAFETY: the caller's array holds `requested >= ts.len()` descriptor slots.
            unsafe { dt_fill_tensor((o.ptr as *mut usize).add(i), t)? };
        }
        if !o.count.is_null() {
            // SAFETY: non-null, valid for a write.
            unsafe { *o.count = ts.len() as i64 };
        }
    }
    Ok(())
}

fn schema<E: Copy>(all: &[E], number: impl Fn(E) -> i8, c: i32) -> Option<E> {
    all.iter().copied().find(|e| i32::from(number(*e)) == c)
}

/// Adds the node of finalized operation `op` (descriptor type `dtype`, attributes `a`) to `g`;
/// `tid` maps a tensor to its graph handle (adding it on first use).
pub fn add_node(
    g: &mut Graph,
    dtype: i32,
    a: &HashMap<i32, Val>,
    tid: &mut dyn FnMut(&mut Graph, &Arc<TensorAttributes>) -> Ffi<TensorId>,
) -> Ffi {
    macro_rules! t {
        ($n:expr) => {
            match a.get(&$n) {
                Some(Val::Tensor(t)) => Some(tid(g, t)?),
                _ => None,
            }
        };
    }
    macro_rules! ts {
        ($n:expr) => {
            match a.get(&$n) {
                Some(Val::Tensors(v)) => v.iter().map(|t| tid(g, t)).collect::<Ffi<Vec<_>>>()?,
                _ => Vec::new(),
            }
        };
    }
    let i64s = |n: i32| match a.get(&n) {
        Some(Val::I64s(v)) => Some(v.clone()),
        _ => None,
    };
    let int = |n: i32| i64s(n).and_then(|v| v.first().copied());
    let f32v = |n: i32| match a.get(&n) {
        Some(Val::F64(v)) => Some(*v as f32),
        _ => None,
    };
    let boolv = |n: i32| match a.get(&n) {
        Some(Val::Bool(b)) => Some(*b),
        _ => None,
    };
    let data = |n: i32| match a.get(&n) {
        Some(Val::Data(d)) => *d,
        _ => DataType::Unset,
    };
    let en = |n: i32| match a.get(&n) {
        Some(Val::Enum(e)) => Some(*e),
        _ => None,
    };
    let name = match a.get(&abi::OPERATION_NAME_EXT) {
        Some(Val::Text(s)) => s.clone(),
        _ => String::new(),
    };
    let phase = |n: i32| {
        en(n)
            .and_then(|c| schema(NormFwdPhase::ALL, NormFwdPhase::schema_value, c))
            .unwrap_or_default()
    };
    let conv_mode = en(abi::CONVOLUTION_CONV_MODE)
        .and_then(enums::conv_mode_from_c)
        .unwrap_or(hipdnn::ConvMode::CrossCorrelation);
    macro_rules! conv {
        ($ty:ident, $a:ident = $an:expr, $b:ident = $bn:expr, $c:ident = $cn:expr) => {{
            let mut n = hipdnn::$ty::new()
                .name(name.clone())
                .compute_data_type(data(abi::CONVOLUTION_COMP_TYPE));
            n.$a = t!($an);
            n.$b = t!($bn);
            n.$c = t!($cn);
            n.pre_padding = i64s(abi::CONVOLUTION_PRE_PADDINGS).unwrap_or_default();
            n.post_padding = i64s(abi::CONVOLUTION_POST_PADDINGS).unwrap_or_default();
            n.stride = i64s(abi::CONVOLUTION_FILTER_STRIDES).unwrap_or_default();
            n.dilation = i64s(abi::CONVOLUTION_DILATIONS).unwrap_or_default();
            n.conv_mode = conv_mode;
            g.add_node(n);
        }};
    }
    match dtype {
        dt::CONV_FWD => conv!(
            ConvFpropAttributes,
            x = abi::OPERATION_CONVOLUTION_FORWARD_X,
            w = abi::OPERATION_CONVOLUTION_FORWARD_W,
            y = abi::OPERATION_CONVOLUTION_FORWARD_Y
        ),
        dt::CONV_BWD_DATA => conv!(
            ConvDgradAttributes,
            dy = abi::OPERATION_CONVOLUTION_BWD_DATA_DY,
            w = abi::OPERATION_CONVOLUTION_BWD_DATA_W,
            dx = abi::OPERATION_CONVOLUTION_BWD_DATA_DX
        ),
        dt::CONV_BWD_FILTER => conv!(
            ConvWgradAttributes,
            x = abi::OPERATION_CONVOLUTION_BWD_FILTER_X,
            dy = abi::OPERATION_CONVOLUTION_BWD_FILTER_DY,
            dw = abi::OPERATION_CONVOLUTION_BWD_FILTER_DW
        ),
        dt::POINTWISE => {
            let mode = en(abi::POINTWISE_MODE)
                .and_then(enums::pointwise_mode_from_c)
                .unwrap_or_default();
            let mut n = hipdnn::PointwiseAttributes::with_mode(mode)
                .name(name)
                .compute_data_type(data(abi::POINTWISE_MATH_PREC));
            n.in_0 = t!(abi::OPERATION_POINTWISE_IN_0_EXT);
            n.out_0 = t!(abi::OPERATION_POINTWISE_OUT_0_EXT);
            n.in_1 = t!(abi::OPERATION_POINTWISE_IN_1_EXT);
            n.in_2 = t!(abi::OPERATION_POINTWISE_IN_2_EXT);
            n.relu_lower_clip = f32v(abi::POINTWISE_RELU_LOWER_CLIP);
            n.relu_upper_clip = f32v(abi::POINTWISE_RELU_UPPER_CLIP);
            n.relu_lower_clip_slope = f32v(abi::POINTWISE_RELU_LOWER_CLIP_SLOPE);
            n.swish_beta = f32v(abi::POINTWISE_SWISH_BETA);
            n.elu_alpha = f32v(abi::POINTWISE_ELU_ALPHA);
            n.softplus_beta = f32v(abi::POINTWISE_SOFTPLUS_BETA);
            n.axis = int(abi::POINTWISE_AXIS);
            g.add_node(n);
        }
        dt::MATMUL => {
            let mut n = hipdnn::MatmulAttributes::new()
                .name(name)
                .compute_data_type(data(abi::MATMUL_COMP_TYPE));
            n.a = t!(abi::OPERATION_MATMUL_ADESC);
            n.b = t!(abi::OPERATION_MATMUL_BDESC);
            n.c = t!(abi::OPERATION_MATMUL_CDESC);
            g.add_node(n);
        }
        dt::BN_INFERENCE => {
            let mut n = hipdnn::BatchnormInferenceAttributes::new()
                .name(name)
                .compute_data_type(data(abi::BATCHNORM_INF_COMP_TYPE_EXT));
            n.x = t!(abi::OPERATION_BATCHNORM_INFERENCE_X_EXT);
            n.mean = t!(abi::OPERATION_BATCHNORM_INFERENCE_MEAN_EXT);
            n.inv_variance = t!(abi::OPERATION_BATCHNORM_INFERENCE_INV_VARIANCE_EXT);
            n.scale = t!(abi::OPERATION_BATCHNORM_INFERENCE_SCALE_EXT);
            n.bias = t!(abi::OPERATION_BATCHNORM_INFERENCE_BIAS_EXT);
            n.y = t!(abi::OPERATION_BATCHNORM_INFERENCE_Y_EXT);
            g.add_node(n);
        }
        dt::BN_INFERENCE_VARIANCE => {
            let mut n = hipdnn::BatchnormInferenceVarianceExtAttributes::new()
                .name(name)
                .compute_data_type(data(abi::BATCHNORM_INF_VAR_COMP_TYPE_EXT));
            n.x = t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_X_EXT);
            n.mean = t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_MEAN_EXT);
            n.variance = t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_VARIANCE_EXT);
            n.scale = t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_SCALE_EXT);
            n.bias = t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_BIAS_EXT);
            n.y = t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_Y_EXT);
            n.epsilon = t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_EPSILON_EXT);
            g.add_node(n);
        }
        dt::BN_BACKWARD => {
            let mut n = hipdnn::BatchnormBackwardAttributes::new()
                .name(name)
                .compute_data_type(data(abi::BATCHNORM_BACKWARD_COMP_TYPE_EXT));
            n.dy = t!(abi::OPERATION_BATCHNORM_BACKWARD_DY_EXT);
            n.x = t!(abi::OPERATION_BATCHNORM_BACKWARD_X_EXT);
            n.scale = t!(abi::OPERATION_BATCHNORM_BACKWARD_SCALE_EXT);
            n.dx = t!(abi::OPERATION_BATCHNORM_BACKWARD_DX_EXT);
            n.dscale = t!(abi::OPERATION_BATCHNORM_BACKWARD_DSCALE_EXT);
            n.dbias = t!(abi::OPERATION_BATCHNORM_BACKWARD_DBIAS_EXT);
            n.mean = t!(abi::OPERATION_BATCHNORM_BACKWARD_MEAN_EXT);
            n.inv_variance = t!(abi::OPERATION_BATCHNORM_BACKWARD_INV_VARIANCE_EXT);
            n.peer_stats = ts!(abi::OPERATION_BATCHNORM_BACKWARD_PEER_STATS_EXT);
            g.add_node(n);
        }
        dt::BATCHNORM => {
            let mut n = hipdnn::BatchnormAttributes::new()
                .name(name)
                .compute_data_type(data(abi::BATCHNORM_COMP_TYPE_EXT));
            n.x = t!(abi::OPERATION_BATCHNORM_X_EXT);
            n.scale = t!(abi::OPERATION_BATCHNORM_SCALE_EXT);
            n.bias = t!(abi::OPERATION_BATCHNORM_BIAS_EXT);
            n.epsilon = t!(abi::OPERATION_BATCHNORM_EPSILON_EXT);
            n.y = t!(abi::OPERATION_BATCHNORM_Y_EXT);
            n.prev_running_mean = t!(abi::OPERATION_BATCHNORM_PREV_RUNNING_MEAN_EXT);
            n.prev_running_variance = t!(abi::OPERATION_BATCHNORM_PREV_RUNNING_VARIANCE_EXT);
            n.momentum = t!(abi::OPERATION_BATCHNORM_MOMENTUM_EXT);
            n.mean = t!(abi::OPERATION_BATCHNORM_MEAN_EXT);
            n.inv_variance = t!(abi::OPERATION_BATCHNORM_INV_VARIANCE_EXT);
            n.next_running_mean = t!(abi::OPERATION_BATCHNORM_NEXT_RUNNING_MEAN_EXT);
            n.next_running_variance = t!(abi::OPERATION_BATCHNORM_NEXT_RUNNING_VARIANCE_EXT);
            n.peer_stats = ts!(abi::OPERATION_BATCHNORM_PEER_STATS_EXT);
            g.add_node(n);
        }
        dt::RMSNORM => {
            let mut n = hipdnn::RmsNormAttributes::new()
                .name(name)
                .compute_data_type(data(abi::RMSNORM_COMP_TYPE_EXT));
            n.x = t!(abi::OPERATION_RMSNORM_X_EXT);
            n.scale = t!(abi::OPERATION_RMSNORM_SCALE_EXT);
            n.epsilon = t!(abi::OPERATION_RMSNORM_EPSILON_EXT);
            n.y = t!(abi::OPERATION_RMSNORM_Y_EXT);
            n.bias = t!(abi::OPERATION_RMSNORM_BIAS_EXT);
            n.inv_rms = t!(abi::OPERATION_RMSNORM_INV_RMS_EXT);
            n.forward_phase = phase(abi::OPERATION_RMSNORM_FWD_PHASE_EXT);
            g.add_node(n);
        }
        dt::RMSNORM_BACKWARD => {
            let mut n = hipdnn::RmsNormBackwardAttributes::new()
                .name(name)
                .compute_data_type(data(abi::RMSNORM_BACKWARD_COMP_TYPE_EXT));
            n.dy = t!(abi::OPERATION_RMSNORM_BACKWARD_DY_EXT);
            n.x = t!(abi::OPERATION_RMSNORM_BACKWARD_X_EXT);
            n.scale = t!(abi::OPERATION_RMSNORM_BACKWARD_SCALE_EXT);
            n.inv_rms = t!(abi::OPERATION_RMSNORM_BACKWARD_INV_RMS_EXT);
            n.dx = t!(abi::OPERATION_RMSNORM_BACKWARD_DX_EXT);
            n.dscale = t!(abi::OPERATION_RMSNORM_BACKWARD_DSCALE_EXT);
            n.dbias = t!(abi::OPERATION_RMSNORM_BACKWARD_DBIAS_EXT);
            g.add_node(n);
        }
        dt::LAYERNORM => {
            let mut n = hipdnn::LayernormAttributes::new()
                .name(name)
                .compute_data_type(data(abi::LAYERNORM_COMP_TYPE_EXT));
            n.x = t!(abi::OPERATION_LAYERNORM_X_EXT);
            n.scale = t!(abi::OPERATION_LAYERNORM_SCALE_EXT);
            n.bias = t!(abi::OPERATION_LAYERNORM_BIAS_EXT);
            n.epsilon = t!(abi::OPERATION_LAYERNORM_EPSILON_EXT);
            n.y = t!(abi::OPERATION_LAYERNORM_Y_EXT);
            n.mean = t!(abi::OPERATION_LAYERNORM_MEAN_EXT);
            n.inv_variance = t!(abi::OPERATION_LAYERNORM_INV_VARIANCE_EXT);
            n.forward_phase = phase(abi::OPERATION_LAYERNORM_FWD_PHASE_EXT);
            if let Some(c) = int(abi::OPERATION_LAYERNORM_NORMALIZED_DIM_COUNT_EXT) {
                n.normalized_dim_count = c;
            }
            g.add_node(n);
        }
        dt::LAYERNORM_BACKWARD => {
            let mut n = hipdnn::LayernormBackwardAttributes::new()
                .name(name)
                .compute_data_type(data(abi::LAYERNORM_BACKWARD_COMP_TYPE_EXT));
            n.dy = t!(abi::OPERATION_LAYERNORM_BACKWARD_DY_EXT);
            n.x = t!(abi::OPERATION_LAYERNORM_BACKWARD_X_EXT);
            n.scale = t!(abi::OPERATION_LAYERNORM_BACKWARD_SCALE_EXT);
            n.mean = t!(abi::OPERATION_LAYERNORM_BACKWARD_MEAN_EXT);
            n.inv_variance = t!(abi::OPERATION_LAYERNORM_BACKWARD_INV_VARIANCE_EXT);
            n.epsilon = t!(abi::OPERATION_LAYERNORM_BACKWARD_EPSILON_EXT);
            n.dx = t!(abi::OPERATION_LAYERNORM_BACKWARD_DX_EXT);
            n.dscale = t!(abi::OPERATION_LAYERNORM_BACKWARD_DSCALE_EXT);
            n.dbias = t!(abi::OPERATION_LAYERNORM_BACKWARD_DBIAS_EXT);
            if let Some(c) = int(abi::LAYERNORM_BACKWARD_NORMALIZED_DIM_COUNT_EXT) {
                n.normalized_dim_count = c;
            }
            g.add_node(n);
        }
        dt::REDUCTION => {
            let mut n = hipdnn::ReductionAttributes::new()
                .name(name)
                .compute_data_type(data(abi::REDUCTION_COMP_TYPE));
            n.x = t!(abi::OPERATION_REDUCTION_XDESC);
            n.y = t!(abi::OPERATION_REDUCTION_YDESC);
            n.mode = en(abi::REDUCTION_OPERATOR)
                .and_then(|c| schema(ReductionMode::ALL, ReductionMode::schema_value, c))
                .unwrap_or_default();
            if let Some(b) = boolv(abi::REDUCTION_IS_DETERMINISTIC) {
                n.is_deterministic = b;
            }
            g.add_node(n);
        }
        dt::RESAMPLE_FWD => {
            let mut n = hipdnn::ResampleFwdAttributes::new()
                .name(name)
                .compute_data_type(data(abi::RESAMPLE_COMP_TYPE));
            n.x = t!(abi::OPERATION_RESAMPLE_FWD_XDESC);
            n.y = t!(abi::OPERATION_RESAMPLE_FWD_YDESC);
            n.index = t!(abi::OPERATION_RESAMPLE_FWD_IDXDESC);
            n.pre_padding = i64s(abi::RESAMPLE_PRE_PADDINGS).unwrap_or_default();
            n.post_padding = i64s(abi::RESAMPLE_POST_PADDINGS).unwrap_or_default();
            n.stride = i64s(abi::RESAMPLE_STRIDES).unwrap_or_default();
            n.window = i64s(abi::RESAMPLE_WINDOW_DIMS).unwrap_or_default();
            n.resample_mode = en(abi::RESAMPLE_MODE)
                .and_then(|c| schema(ResampleMode::ALL, ResampleMode::schema_value, c))
                .unwrap_or_default();
            if let Some(p) = en(abi::RESAMPLE_PADDING_MODE)
                .and_then(|c| schema(PaddingMode::ALL, PaddingMode::schema_value, c))
            {
                n.padding_mode = p;
            }
            n.generate_index = boolv(abi::RESAMPLE_GENERATE_INDEX_EXT);
            g.add_node(n);
        }
        dt::SDPA_FWD => {
            let mut n = hipdnn::SdpaAttributes::new()
                .name(name)
                .compute_data_type(data(abi::SDPA_FWD_COMP_TYPE_EXT));
            n.q = t!(abi::OPERATION_SDPA_FWD_QDESC);
            n.k = t!(abi::OPERATION_SDPA_FWD_KDESC);
            n.v = t!(abi::OPERATION_SDPA_FWD_VDESC);
            n.o = t!(abi::OPERATION_SDPA_FWD_ODESC);
            n.attn_mask = t!(abi::OPERATION_SDPA_FWD_ATTN_MASK_EXT);
            n.scale = t!(abi::OPERATION_SDPA_FWD_SCALEDESC);
            n.seq_len_q = t!(abi::OPERATION_SDPA_FWD_SEQ_LEN_QDESC);
            n.seq_len_kv = t!(abi::OPERATION_SDPA_FWD_SEQ_LEN_KVDESC);
            n.seed = t!(abi::OPERATION_SDPA_FWD_SEED_EXT);
            n.offset = t!(abi::OPERATION_SDPA_FWD_OFFSET_EXT);
            n.dropout_mask = t!(abi::OPERATION_SDPA_FWD_DROPOUT_MASK_EXT);
            n.dropout_scale = t!(abi::OPERATION_SDPA_FWD_DROPOUT_SCALE_EXT);
            n.page_table_k = t!(abi::OPERATION_SDPA_FWD_PAGE_TABLE_KDESC);
            n.page_table_v = t!(abi::OPERATION_SDPA_FWD_PAGE_TABLE_VDESC);
            n.sink_token = t!(abi::OPERATION_SDPA_FWD_SINK_TOKEN_EXT);
            n.descale_q = t!(abi::OPERATION_SDPA_FWD_DESCALE_Q_EXT);
            n.descale_k = t!(abi::OPERATION_SDPA_FWD_DESCALE_K_EXT);
            n.descale_v = t!(abi::OPERATION_SDPA_FWD_DESCALE_V_EXT);
            n.descale_s = t!(abi::OPERATION_SDPA_FWD_DESCALE_S_EXT);
            n.scale_s = t!(abi::OPERATION_SDPA_FWD_SCALE_S_EXT);
            n.scale_o = t!(abi::OPERATION_SDPA_FWD_SCALE_O_EXT);
            n.stats = t!(abi::OPERATION_SDPA_FWD_STATSDESC);
            n.max = t!(abi::OPERATION_SDPA_FWD_MAX_EXT);
            n.sum_exp = t!(abi::OPERATION_SDPA_FWD_SUM_EXP_EXT);
            n.rng_dump = t!(abi::OPERATION_SDPA_FWD_RNG_DUMP_EXT);
            n.amax_s = t!(abi::OPERATION_SDPA_FWD_AMAX_S_EXT);
            n.amax_o = t!(abi::OPERATION_SDPA_FWD_AMAX_O_EXT);
            n.generate_stats = boolv(abi::SDPA_FWD_GENERATE_STATS_EXT);
            n.alibi_mask = boolv(abi::SDPA_FWD_ALIBI_MASK_EXT).unwrap_or_default();
            n.padding_mask = boolv(abi::SDPA_FWD_PADDING_MASK_EXT).unwrap_or_default();
            n.causal_mask = boolv(abi::SDPA_FWD_CAUSAL_MASK_EXT).unwrap_or_default();
            n.causal_mask_bottom_right =
                boolv(abi::SDPA_FWD_CAUSAL_MASK_BOTTOM_RIGHT_EXT).unwrap_or_default();
            n.dropout_probability = f32v(abi::SDPA_FWD_DROPOUT_PROBABILITY_EXT);
            n.attn_scale_value = f32v(abi::SDPA_FWD_ATTN_SCALE_VALUE_EXT);
            n.left_bound = int(abi::SDPA_FWD_LEFT_BOUND_EXT);
            n.right_bound = int(abi::SDPA_FWD_RIGHT_BOUND_EXT);
            n.max_seq_len_kv = int(abi::SDPA_FWD_MAX_SEQ_LEN_KV_EXT).map(|v| v as i32);
            if let Some(d) = en(abi::SDPA_FWD_DIAGONAL_ALIGNMENT_EXT)
                .and_then(|c| schema(DiagonalAlignment::ALL, DiagonalAlignment::schema_value, c))
            {
                n.diagonal_alignment = d;
            }
            if data(abi::SDPA_FWD_MMA_CORE_MODE_EXT) != DataType::Unset {
                n.mma_core_mode = data(abi::SDPA_FWD_MMA_CORE_MODE_EXT);
            }
            if let Some(i) = en(abi::SDPA_FWD_IMPLEMENTATION_EXT).and_then(|c| {
                schema(
                    AttentionImplementation::ALL,
                    AttentionImplementation::schema_value,
                    c,
                )
            }) {
                n.implementation = i;
            }
            if a.contains_key(&abi::OPERATION_SDPA_FWD_BLOCK_MASK_DESC) {
                return Err(err(
                    Status::NotSupported,
                    format!(
                        "OPERATION_SDPA_FWD_BLOCK_MASK_DESC ({}) has no field in the Graph schema",
                        abi::OPERATION_SDPA_FWD_BLOCK_MASK_DESC
                    ),
                ));
            }
            g.add_node(n);
        }
        _ => {
            return Err(err(
                Status::NotSupported,
                format!("operation {} is not supported", type_name(dtype)),
            ));
        }
    }
    Ok(())
}

/// The operation descriptor (type and attributes) of SDK node `node` of `g`: the reverse of
/// [`add_node`], used to read a graph's operations back (`OPERATIONGRAPH_OPS`).
///
/// # Errors
/// NOT_SUPPORTED for a node kind without an operation descriptor here (block scale, custom op,
/// SDPA backward, resample backward, MoE).
pub fn from_node(g: &Graph, node: &hipdnn::Operation) -> Ffi<(i32, HashMap<i32, Val>)> {
    use hipdnn::Operation as O;
    let mut a: HashMap<i32, Val> = HashMap::new();
    let tensor = |id: TensorId| Val::Tensor(Arc::new(g.tensor_attributes(id).clone()));
    macro_rules! t {
        ($n:expr, $v:expr) => {
            if let Some(id) = $v {
                a.insert($n, tensor(id));
            }
        };
    }
    let data = |a: &mut HashMap<i32, Val>, n: i32, d: DataType| {
        if d != DataType::Unset {
            a.insert(n, Val::Data(d));
        }
    };
    let dtype = match node {
        O::ConvFprop(n) => {
            t!(abi::OPERATION_CONVOLUTION_FORWARD_X, n.x);
            t!(abi::OPERATION_CONVOLUTION_FORWARD_W, n.w);
            t!(abi::OPERATION_CONVOLUTION_FORWARD_Y, n.y);
            conv_back(
                &mut a,
                &n.pre_padding,
                &n.post_padding,
                &n.stride,
                &n.dilation,
                n.conv_mode,
            );
            data(&mut a, abi::CONVOLUTION_COMP_TYPE, n.compute_data_type);
            dt::CONV_FWD
        }
        O::ConvDgrad(n) => {
            t!(abi::OPERATION_CONVOLUTION_BWD_DATA_DY, n.dy);
            t!(abi::OPERATION_CONVOLUTION_BWD_DATA_W, n.w);
            t!(abi::OPERATION_CONVOLUTION_BWD_DATA_DX, n.dx);
            conv_back(
                &mut a,
                &n.pre_padding,
                &n.post_padding,
                &n.stride,
                &n.dilation,
                n.conv_mode,
            );
            data(&mut a, abi::CONVOLUTION_COMP_TYPE, n.compute_data_type);
            dt::CONV_BWD_DATA
        }
        O::ConvWgrad(n) => {
            t!(abi::OPERATION_CONVOLUTION_BWD_FILTER_X, n.x);
            t!(abi::OPERATION_CONVOLUTION_BWD_FILTER_DY, n.dy);
            t!(abi::OPERATION_CONVOLUTION_BWD_FILTER_DW, n.dw);
            conv_back(
                &mut a,
                &n.pre_padding,
                &n.post_padding,
                &n.stride,
                &n.dilation,
                n.conv_mode,
            );
            data(&mut a, abi::CONVOLUTION_COMP_TYPE, n.compute_data_type);
            dt::CONV_BWD_FILTER
        }
        O::Pointwise(n) => {
            t!(abi::OPERATION_POINTWISE_IN_0_EXT, n.in_0);
            t!(abi::OPERATION_POINTWISE_OUT_0_EXT, n.out_0);
            t!(abi::OPERATION_POINTWISE_IN_1_EXT, n.in_1);
            t!(abi::OPERATION_POINTWISE_IN_2_EXT, n.in_2);
            if let Some(c) = enums::pointwise_mode_to_c(n.mode) {
                a.insert(abi::POINTWISE_MODE, Val::Enum(c));
            }
            for (k, v) in [
                (abi::POINTWISE_RELU_LOWER_CLIP, n.relu_lower_clip),
                (abi::POINTWISE_RELU_UPPER_CLIP, n.relu_upper_clip),
                (
                    abi::POINTWISE_RELU_LOWER_CLIP_SLOPE,
                    n.relu_lower_clip_slope,
                ),
                (abi::POINTWISE_SWISH_BETA, n.swish_beta),
                (abi::POINTWISE_ELU_ALPHA, n.elu_alpha),
                (abi::POINTWISE_SOFTPLUS_BETA, n.softplus_beta),
            ] {
                if let Some(x) = v {
                    a.insert(k, Val::F64(f64::from(x)));
                }
            }
            if let Some(x) = n.axis {
                a.insert(abi::POINTWISE_AXIS, Val::I64s(vec![x]));
            }
            data(&mut a, abi::POINTWISE_MATH_PREC, n.compute_data_type);
            dt::POINTWISE
        }
        O::Matmul(n) => {
            t!(abi::OPERATION_MATMUL_ADESC, n.a);
            t!(abi::OPERATION_MATMUL_BDESC, n.b);
            t!(abi::OPERATION_MATMUL_CDESC, n.c);
            data(&mut a, abi::MATMUL_COMP_TYPE, n.compute_data_type);
            dt::MATMUL
        }
        O::BatchnormInference(n) => {
            t!(abi::OPERATION_BATCHNORM_INFERENCE_X_EXT, n.x);
            t!(abi::OPERATION_BATCHNORM_INFERENCE_MEAN_EXT, n.mean);
            t!(
                abi::OPERATION_BATCHNORM_INFERENCE_INV_VARIANCE_EXT,
                n.inv_variance
            );
            t!(abi::OPERATION_BATCHNORM_INFERENCE_SCALE_EXT, n.scale);
            t!(abi::OPERATION_BATCHNORM_INFERENCE_BIAS_EXT, n.bias);
            t!(abi::OPERATION_BATCHNORM_INFERENCE_Y_EXT, n.y);
            data(
                &mut a,
                abi::BATCHNORM_INF_COMP_TYPE_EXT,
                n.compute_data_type,
            );
            dt::BN_INFERENCE
        }
        O::BatchnormInferenceVarianceExt(n) => {
            t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_X_EXT, n.x);
            t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_MEAN_EXT, n.mean);
            t!(
                abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_VARIANCE_EXT,
                n.variance
            );
            t!(
                abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_SCALE_EXT,
                n.scale
            );
            t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_BIAS_EXT, n.bias);
            t!(abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_Y_EXT, n.y);
            t!(
                abi::OPERATION_BATCHNORM_INFERENCE_VARIANCE_EPSILON_EXT,
                n.epsilon
            );
            data(
                &mut a,
                abi::BATCHNORM_INF_VAR_COMP_TYPE_EXT,
                n.compute_data_type,
            );
            dt::BN_INFERENCE_VARIANCE
        }
        O::BatchnormBackward(n) => {
            t!(abi::OPERATION_BATCHNORM_BACKWARD_DY_EXT, n.dy);
            t!(abi::OPERATION_BATCHNORM_BACKWARD_X_EXT, n.x);
            t!(abi::OPERATION_BATCHNORM_BACKWARD_SCALE_EXT, n.scale);
            t!(abi::OPERATION_BATCHNORM_BACKWARD_DX_EXT, n.dx);
            t!(abi::OPERATION_BATCHNORM_BACKWARD_DSCALE_EXT, n.dscale);
            t!(abi::OPERATION_BATCHNORM_BACKWARD_DBIAS_EXT, n.dbias);
            t!(abi::OPERATION_BATCHNORM_BACKWARD_MEAN_EXT, n.mean);
            t!(
                abi::OPERATION_BATCHNORM_BACKWARD_INV_VARIANCE_EXT,
                n.inv_variance
            );
            if !n.peer_stats.is_empty() {
                a.insert(
                    abi::OPERATION_BATCHNORM_BACKWARD_PEER_STATS_EXT,
                    Val::Tensors(
                        n.peer_stats
                            .iter()
                            .map(|id| Arc::new(g.tensor_attributes(*id).clone()))
                            .collect(),
                    ),
                );
            }
            data(
                &mut a,
                abi::BATCHNORM_BACKWARD_COMP_TYPE_EXT,
                n.compute_data_type,
            );
            dt::BN_BACKWARD
        }
        O::Batchnorm(n) => {
            t!(abi::OPERATION_BATCHNORM_X_EXT, n.x);
            t!(abi::OPERATION_BATCHNORM_SCALE_EXT, n.scale);
            t!(abi::OPERATION_BATCHNORM_BIAS_EXT, n.bias);
            t!(abi::OPERATION_BATCHNORM_EPSILON_EXT, n.epsilon);
            t!(abi::OPERATION_BATCHNORM_Y_EXT, n.y);
            t!(
                abi::OPERATION_BATCHNORM_PREV_RUNNING_MEAN_EXT,
                n.prev_running_mean
            );
            t!(
                abi::OPERATION_BATCHNORM_PREV_RUNNING_VARIANCE_EXT,
                n.prev_running_variance
            );
            t!(abi::OPERATION_BATCHNORM_MOMENTUM_EXT, n.momentum);
            t!(abi::OPERATION_BATCHNORM_MEAN_EXT, n.mean);
            t!(abi::OPERATION_BATCHNORM_INV_VARIANCE_EXT, n.inv_variance);
            t!(
                abi::OPERATION_BATCHNORM_NEXT_RUNNING_MEAN_EXT,
                n.next_running_mean
            );
            t!(
                abi::OPERATION_BATCHNORM_NEXT_RUNNING_VARIANCE_EXT,
                n.next_running_variance
            );
            if !n.peer_stats.is_empty() {
                a.insert(
                    abi::OPERATION_BATCHNORM_PEER_STATS_EXT,
                    Val::Tensors(
                        n.peer_stats
                            .iter()
                            .map(|id| Arc::new(g.tensor_attributes(*id).clone()))
                            .collect(),
                    ),
                );
            }
            data(&mut a, abi::BATCHNORM_COMP_TYPE_EXT, n.compute_data_type);
            dt::BATCHNORM
        }
        O::RmsNorm(n) => {
            t!(abi::OPERATION_RMSNORM_X_EXT, n.x);
            t!(abi::OPERATION_RMSNORM_SCALE_EXT, n.scale);
            t!(abi::OPERATION_RMSNORM_EPSILON_EXT, n.epsilon);
            t!(abi::OPERATION_RMSNORM_Y_EXT, n.y);
            t!(abi::OPERATION_RMSNORM_BIAS_EXT, n.bias);
            t!(abi::OPERATION_RMSNORM_INV_RMS_EXT, n.inv_rms);
            phase_back(
                &mut a,
                abi::OPERATION_RMSNORM_FWD_PHASE_EXT,
                n.forward_phase,
            );
            data(&mut a, abi::RMSNORM_COMP_TYPE_EXT, n.compute_data_type);
            dt::RMSNORM
        }
        O::RmsNormBackward(n) => {
            t!(abi::OPERATION_RMSNORM_BACKWARD_DY_EXT, n.dy);
            t!(abi::OPERATION_RMSNORM_BACKWARD_X_EXT, n.x);
            t!(abi::OPERATION_RMSNORM_BACKWARD_SCALE_EXT, n.scale);
            t!(abi::OPERATION_RMSNORM_BACKWARD_INV_RMS_EXT, n.inv_rms);
            t!(abi::OPERATION_RMSNORM_BACKWARD_DX_EXT, n.dx);
            t!(abi::OPERATION_RMSNORM_BACKWARD_DSCALE_EXT, n.dscale);
            t!(abi::OPERATION_RMSNORM_BACKWARD_DBIAS_EXT, n.dbias);
            data(
                &mut a,
                abi::RMSNORM_BACKWARD_COMP_TYPE_EXT,
                n.compute_data_type,
            );
            dt::RMSNORM_BACKWARD
        }
        O::Layernorm(n) => {
            t!(abi::OPERATION_LAYERNORM_X_EXT, n.x);
            t!(abi::OPERATION_LAYERNORM_SCALE_EXT, n.scale);
            t!(abi::OPERATION_LAYERNORM_BIAS_EXT, n.bias);
            t!(abi::OPERATION_LAYERNORM_EPSILON_EXT, n.epsilon);
            t!(abi::OPERATION_LAYERNORM_Y_EXT, n.y);
            t!(abi::OPERATION_LAYERNORM_MEAN_EXT, n.mean);
            t!(abi::OPERATION_LAYERNORM_INV_VARIANCE_EXT, n.inv_variance);
            phase_back(
                &mut a,
                abi::OPERATION_LAYERNORM_FWD_PHASE_EXT,
                n.forward_phase,
            );
            a.insert(
                abi::OPERATION_LAYERNORM_NORMALIZED_DIM_COUNT_EXT,
                Val::I64s(vec![n.normalized_dim_count]),
            );
            data(&mut a, abi::LAYERNORM_COMP_TYPE_EXT, n.compute_data_type);
            dt::LAYERNORM
        }
        O::LayernormBackward(n) => {
            t!(abi::OPERATION_LAYERNORM_BACKWARD_DY_EXT, n.dy);
            t!(abi::OPERATION_LAYERNORM_BACKWARD_X_EXT, n.x);
            t!(abi::OPERATION_LAYERNORM_BACKWARD_SCALE_EXT, n.scale);
            t!(abi::OPERATION_LAYERNORM_BACKWARD_MEAN_EXT, n.mean);
            t!(
                abi::OPERATION_LAYERNORM_BACKWARD_INV_VARIANCE_EXT,
                n.inv_variance
            );
            t!(abi::OPERATION_LAYERNORM_BACKWARD_EPSILON_EXT, n.epsilon);
            t!(abi::OPERATION_LAYERNORM_BACKWARD_DX_EXT, n.dx);
            t!(abi::OPERATION_LAYERNORM_BACKWARD_DSCALE_EXT, n.dscale);
            t!(abi::OPERATION_LAYERNORM_BACKWARD_DBIAS_EXT, n.dbias);
            a.insert(
                abi::LAYERNORM_BACKWARD_NORMALIZED_DIM_COUNT_EXT,
                Val::I64s(vec![n.normalized_dim_count]),
            );
            data(
                &mut a,
                abi::LAYERNORM_BACKWARD_COMP_TYPE_EXT,
                n.compute_data_type,
            );
            dt::LAYERNORM_BACKWARD
        }
        O::Reduction(n) => {
            t!(abi::OPERATION_REDUCTION_XDESC, n.x);
            t!(abi::OPERATION_REDUCTION_YDESC, n.y);
            let c = i32::from(n.mode.schema_value());
            if c != 0 {
                a.insert(abi::REDUCTION_OPERATOR, Val::Enum(c));
            }
            a.insert(
                abi::REDUCTION_IS_DETERMINISTIC,
                Val::Bool(n.is_deterministic),
            );
            data(&mut a, abi::REDUCTION_COMP_TYPE, n.compute_data_type);
            dt::REDUCTION
        }
        O::ResampleFwd(n) => {
            t!(abi::OPERATION_RESAMPLE_FWD_XDESC, n.x);
            t!(abi::OPERATION_RESAMPLE_FWD_YDESC, n.y);
            t!(abi::OPERATION_RESAMPLE_FWD_IDXDESC, n.index);
            a.insert(abi::RESAMPLE_PRE_PADDINGS, Val::I64s(n.pre_padding.clone()));
            a.insert(
                abi::RESAMPLE_POST_PADDINGS,
                Val::I64s(n.post_padding.clone()),
            );
            a.insert(abi::RESAMPLE_STRIDES, Val::I64s(n.stride.clone()));
            a.insert(abi::RESAMPLE_WINDOW_DIMS, Val::I64s(n.window.clone()));
            for (k, c) in [
                (
                    abi::RESAMPLE_MODE,
                    i32::from(n.resample_mode.schema_value()),
                ),
                (
                    abi::RESAMPLE_PADDING_MODE,
                    i32::from(n.padding_mode.schema_value()),
                ),
            ] {
                if c != 0 {
                    a.insert(k, Val::Enum(c));
                }
            }
            if let Some(b) = n.generate_index {
                a.insert(abi::RESAMPLE_GENERATE_INDEX_EXT, Val::Bool(b));
            }
            data(&mut a, abi::RESAMPLE_COMP_TYPE, n.compute_data_type);
            dt::RESAMPLE_FWD
        }
        O::Sdpa(n) => {
            for (k, v) in [
                (abi::OPERATION_SDPA_FWD_QDESC, n.q),
                (abi::OPERATION_SDPA_FWD_KDESC, n.k),
                (abi::OPERATION_SDPA_FWD_VDESC, n.v),
                (abi::OPERATION_SDPA_FWD_ODESC, n.o),
                (abi::OPERATION_SDPA_FWD_ATTN_MASK_EXT, n.attn_mask),
                (abi::OPERATION_SDPA_FWD_SCALEDESC, n.scale),
                (abi::OPERATION_SDPA_FWD_SEQ_LEN_QDESC, n.seq_len_q),
                (abi::OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, n.seq_len_kv),
                (abi::OPERATION_SDPA_FWD_SEED_EXT, n.seed),
                (abi::OPERATION_SDPA_FWD_OFFSET_EXT, n.offset),
                (abi::OPERATION_SDPA_FWD_DROPOUT_MASK_EXT, n.dropout_mask),
                (abi::OPERATION_SDPA_FWD_DROPOUT_SCALE_EXT, n.dropout_scale),
                (abi::OPERATION_SDPA_FWD_PAGE_TABLE_KDESC, n.page_table_k),
                (abi::OPERATION_SDPA_FWD_PAGE_TABLE_VDESC, n.page_table_v),
                (abi::OPERATION_SDPA_FWD_SINK_TOKEN_EXT, n.sink_token),
                (abi::OPERATION_SDPA_FWD_DESCALE_Q_EXT, n.descale_q),
                (abi::OPERATION_SDPA_FWD_DESCALE_K_EXT, n.descale_k),
                (abi::OPERATION_SDPA_FWD_DESCALE_V_EXT, n.descale_v),
                (abi::OPERATION_SDPA_FWD_DESCALE_S_EXT, n.descale_s),
                (abi::OPERATION_SDPA_FWD_SCALE_S_EXT, n.scale_s),
                (abi::OPERATION_SDPA_FWD_SCALE_O_EXT, n.scale_o),
                (abi::OPERATION_SDPA_FWD_STATSDESC, n.stats),
                (abi::OPERATION_SDPA_FWD_MAX_EXT, n.max),
                (abi::OPERATION_SDPA_FWD_SUM_EXP_EXT, n.sum_exp),
                (abi::OPERATION_SDPA_FWD_RNG_DUMP_EXT, n.rng_dump),
                (abi::OPERATION_SDPA_FWD_AMAX_S_EXT, n.amax_s),
                (abi::OPERATION_SDPA_FWD_AMAX_O_EXT, n.amax_o),
            ] {
                t!(k, v);
            }
            if let Some(b) = n.generate_stats {
                a.insert(abi::SDPA_FWD_GENERATE_STATS_EXT, Val::Bool(b));
            }
            a.insert(abi::SDPA_FWD_ALIBI_MASK_EXT, Val::Bool(n.alibi_mask));
            a.insert(abi::SDPA_FWD_PADDING_MASK_EXT, Val::Bool(n.padding_mask));
            a.insert(abi::SDPA_FWD_CAUSAL_MASK_EXT, Val::Bool(n.causal_mask));
            a.insert(
                abi::SDPA_FWD_CAUSAL_MASK_BOTTOM_RIGHT_EXT,
                Val::Bool(n.causal_mask_bottom_right),
            );
            if let Some(x) = n.dropout_probability {
                a.insert(
                    abi::SDPA_FWD_DROPOUT_PROBABILITY_EXT,
                    Val::F64(f64::from(x)),
                );
            }
            if let Some(x) = n.attn_scale_value {
                a.insert(abi::SDPA_FWD_ATTN_SCALE_VALUE_EXT, Val::F64(f64::from(x)));
            }
            if let Some(x) = n.left_bound {
                a.insert(abi::SDPA_FWD_LEFT_BOUND_EXT, Val::I64s(vec![x]));
            }
            if let Some(x) = n.right_bound {
                a.insert(abi::SDPA_FWD_RIGHT_BOUND_EXT, Val::I64s(vec![x]));
            }
            if let Some(x) = n.max_seq_len_kv {
                a.insert(
                    abi::SDPA_FWD_MAX_SEQ_LEN_KV_EXT,
                    Val::I64s(vec![i64::from(x)]),
                );
            }
            a.insert(
                abi::SDPA_FWD_DIAGONAL_ALIGNMENT_EXT,
                Val::Enum(i32::from(n.diagonal_alignment.schema_value())),
            );
            a.insert(
                abi::SDPA_FWD_IMPLEMENTATION_EXT,
                Val::Enum(i32::from(n.implementation.schema_value())),
            );
            data(&mut a, abi::SDPA_FWD_MMA_CORE_MODE_EXT, n.mma_core_mode);
            data(&mut a, abi::SDPA_FWD_COMP_TYPE_EXT, n.compute_data_type);
            dt::SDPA_FWD
        }
        other => {
            return Err(err(
                Status::NotSupported,
                format!(
                    "node kind {} has no operation descriptor in hipdnn-rs",
                    other.kind()
                ),
            ));
        }
    };
    if !node.name().is_empty() {
        a.insert(abi::OPERATION_NAME_EXT, Val::Text(node.name().to_string()));
    }
    Ok((dtype, a))
}

fn conv_back(
    a: &mut HashMap<i32, Val>,
    pre: &[i64],
    post: &[i64],
    stride: &[i64],
    dilation: &[i64],
    mode: hipdnn::ConvMode,
) {
    a.insert(abi::CONVOLUTION_PRE_PADDINGS, Val::I64s(pre.to_vec()));
    a.insert(abi::CONVOLUTION_POST_PADDINGS, Val::I64s(post.to_vec()));
    a.insert(abi::CONVOLUTION_FILTER_STRIDES, Val::I64s(stride.to_vec()));
    a.insert(abi::CONVOLUTION_DILATIONS, Val::I64s(dilation.to_vec()));
    if let Some(c) = enums::conv_mode_to_c(mode) {
        a.insert(abi::CONVOLUTION_CONV_MODE, Val::Enum(c));
    }
}

fn phase_back(a: &mut HashMap<i32, Val>, k: i32, p: NormFwdPhase) {
    let c = i32::from(p.schema_value());
    if c != 0 {
        a.insert(k, Val::Enum(c));
    }
}
