//! The operation descriptors: which attributes each supported operation takes (name → kind),
//! which are required at finalize, and how a finalized operation becomes a node of the SDK
//! graph.
//!
//! Supported (descriptor type → SDK node): CONVOLUTION_FORWARD / _BACKWARD_DATA /
//! _BACKWARD_FILTER → conv fprop/dgrad/wgrad; POINTWISE; MATMUL; BATCHNORM_INFERENCE,
//! BATCHNORM_INFERENCE_VARIANCE, BATCHNORM (training), BATCHNORM_BACKWARD; RMSNORM,
//! RMSNORM_BACKWARD; LAYERNORM, LAYERNORM_BACKWARD; REDUCTION; RESAMPLE_FWD; SDPA_FWD. Every
//! other operation type is refused at create with NOT_SUPPORTED (docs/c-api.md). Attribute
//! numbers and kinds follow upstream's HipdnnBackendAttributeName.h; value enums are checked
//! against the C enumerators and translated by name (upstream's DataTypeConversion).

use crate::attr::{In, Out, ty};
use crate::desc::{Val, data_type_in, data_type_out, dt_fill_tensor, final_tensor, type_name};
use crate::enums;
use crate::error::{Ffi, err};
use hipdnn::{
    AttentionImplementation, DataType, DiagonalAlignment, Graph, NormFwdPhase, PaddingMode,
    ReductionMode, ResampleMode, TensorAttributes, TensorId,
};
use hipdnn_backend::Status;
use std::collections::HashMap;
use std::sync::Arc;

/// Operation descriptor types (`hipdnnBackendDescriptorType_t`).
#[allow(missing_docs)]
pub mod op {
    pub const CONV_FWD: i32 = 15;
    pub const CONV_BWD_FILTER: i32 = 16;
    pub const BN_INFERENCE: i32 = 17;
    pub const POINTWISE: i32 = 18;
    pub const CONV_BWD_DATA: i32 = 19;
    pub const BN_BACKWARD: i32 = 20;
    pub const BN_INFERENCE_VARIANCE: i32 = 21;
    pub const MATMUL: i32 = 22;
    pub const RMSNORM: i32 = 23;
    pub const SDPA_FWD: i32 = 24;
    pub const LAYERNORM: i32 = 25;
    pub const BATCHNORM: i32 = 27;
    pub const REDUCTION: i32 = 31;
    pub const RESAMPLE_FWD: i32 = 32;
    pub const RMSNORM_BACKWARD: i32 = 33;
    pub const LAYERNORM_BACKWARD: i32 = 35;
}

/// True for the operation descriptor types implemented here.
pub fn is_op(t: i32) -> bool {
    matches!(t, 15..=25 | 27 | 31..=33 | 35)
}

/// The kind of an operation attribute.
#[derive(Clone, Copy)]
pub enum OpAttr {
    /// One TENSOR descriptor (finalized).
    Tensor,
    /// An array of TENSOR descriptors (peer statistics).
    Tensors,
    /// INT64 array.
    I64s,
    /// One INT64.
    Int,
    /// One FLOAT (or DOUBLE).
    Float,
    /// One BOOLEAN.
    Bool,
    /// One DATA_TYPE.
    Data,
    /// One C value enum of this attribute type.
    Enum(i32),
    /// CHAR text.
    Text,
}

/// Attribute `name` of operation type `dtype`, if supported.
pub fn attr_kind(dtype: i32, name: i32) -> Option<OpAttr> {
    use OpAttr as A;
    if name == 60300 {
        return Some(A::Text);
    }
    let conv = |t: std::ops::RangeInclusive<i32>| {
        if t.contains(&name) {
            return Some(A::Tensor);
        }
        match name {
            1500 => Some(A::Data),
            1501 => Some(A::Enum(ty::CONVOLUTION_MODE)),
            1502..=1505 => Some(A::I64s),
            _ => None,
        }
    };
    match dtype {
        op::CONV_FWD => conv(1400..=1402),
        op::CONV_BWD_FILTER => conv(1600..=1602),
        op::CONV_BWD_DATA => conv(1700..=1702),
        op::POINTWISE => match name {
            2200..=2203 => Some(A::Tensor),
            2300 => Some(A::Enum(ty::POINTWISE_MODE)),
            2301..=2306 => Some(A::Float),
            2307 => Some(A::Data),
            2308 => Some(A::Int),
            _ => None,
        },
        op::MATMUL => match name {
            2500..=2502 => Some(A::Tensor),
            2503 => Some(A::Data),
            _ => None,
        },
        op::BN_INFERENCE => match name {
            1800..=1805 => Some(A::Tensor),
            1806 => Some(A::Data),
            _ => None,
        },
        op::BN_INFERENCE_VARIANCE => match name {
            1900..=1906 => Some(A::Tensor),
            1907 => Some(A::Data),
            _ => None,
        },
        op::BN_BACKWARD => match name {
            2000..=2007 => Some(A::Tensor),
            2100 => Some(A::Data),
            2101 => Some(A::Tensors),
            _ => None,
        },
        op::BATCHNORM => match name {
            2900..=2911 => Some(A::Tensor),
            2912 => Some(A::Data),
            2913 => Some(A::Tensors),
            _ => None,
        },
        op::RMSNORM => match name {
            2400..=2405 => Some(A::Tensor),
            2406 => Some(A::Enum(ty::NORM_FWD_PHASE)),
            2407 => Some(A::Data),
            _ => None,
        },
        op::RMSNORM_BACKWARD => match name {
            3500..=3506 => Some(A::Tensor),
            3507 => Some(A::Data),
            _ => None,
        },
        op::LAYERNORM => match name {
            2700..=2706 => Some(A::Tensor),
            2707 => Some(A::Enum(ty::NORM_FWD_PHASE)),
            2708 => Some(A::Data),
            2709 => Some(A::Int),
            _ => None,
        },
        op::LAYERNORM_BACKWARD => match name {
            3600..=3608 => Some(A::Tensor),
            3609 => Some(A::Int),
            3610 => Some(A::Data),
            _ => None,
        },
        op::REDUCTION => match name {
            3200 | 3201 => Some(A::Tensor),
            3202 => Some(A::Enum(ty::REDUCTION_OPERATOR_TYPE)),
            3203 => Some(A::Data),
            3204 => Some(A::Bool),
            _ => None,
        },
        op::RESAMPLE_FWD => match name {
            3300..=3302 => Some(A::Tensor),
            3400 => Some(A::Enum(ty::RESAMPLE_MODE)),
            3401..=3404 => Some(A::I64s),
            3405 => Some(A::Enum(ty::PADDING_MODE)),
            3406 => Some(A::Bool),
            3407 => Some(A::Data),
            _ => None,
        },
        op::SDPA_FWD => match name {
            2600..=2627 => Some(A::Tensor),
            2628..=2632 => Some(A::Bool),
            2633 | 2634 => Some(A::Float),
            2635..=2637 => Some(A::Int),
            2638 => Some(A::Enum(ty::DIAGONAL_ALIGNMENT_EXT)),
            2639 | 2641 => Some(A::Data),
            2640 => Some(A::Enum(ty::ATTENTION_IMPLEMENTATION_EXT)),
            _ => None,
        },
        _ => None,
    }
}

/// Attributes that must be set before an operation finalizes.
pub fn required(dtype: i32) -> &'static [i32] {
    match dtype {
        op::CONV_FWD => &[1400, 1401, 1402],
        op::CONV_BWD_FILTER => &[1600, 1601, 1602],
        op::CONV_BWD_DATA => &[1700, 1701, 1702],
        op::POINTWISE => &[2200, 2201, 2300],
        op::MATMUL => &[2500, 2501, 2502],
        op::BN_INFERENCE => &[1800, 1801, 1802, 1803, 1804, 1805],
        op::BN_INFERENCE_VARIANCE => &[1900, 1901, 1902, 1903, 1904, 1905, 1906],
        op::BN_BACKWARD => &[2000, 2001, 2002, 2003, 2004, 2005],
        op::BATCHNORM => &[2900, 2901, 2902, 2903, 2904],
        op::RMSNORM => &[2400, 2401, 2402, 2403],
        op::RMSNORM_BACKWARD => &[3500, 3501, 3502, 3503, 3504, 3505],
        op::LAYERNORM => &[2700, 2701, 2702, 2703, 2704],
        op::LAYERNORM_BACKWARD => &[3600, 3601, 3602, 3606, 3607, 3608],
        op::REDUCTION => &[3200, 3201, 3202],
        op::RESAMPLE_FWD => &[3300, 3301, 3400],
        op::SDPA_FWD => &[2600, 2601, 2602, 2603],
        _ => &[],
    }
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
        OpAttr::Tensor => Val::Tensor(final_tensor(v.ptr(ty::BACKEND_DESCRIPTOR)?)?),
        OpAttr::Tensors => Val::Tensors(
            v.ptrs(ty::BACKEND_DESCRIPTOR)?
                .into_iter()
                .map(final_tensor)
                .collect::<Ffi<_>>()?,
        ),
        OpAttr::I64s => Val::I64s(v.i64s()?),
        OpAttr::Int => Val::I64s(vec![v.i64()?]),
        OpAttr::Float => Val::F64(v.f64()?),
        OpAttr::Bool => Val::Bool(v.bool()?),
        OpAttr::Data => Val::Data(data_type_in(v)?),
        OpAttr::Enum(t) => {
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
        OpAttr::Text => Val::Text(v.text()?),
    })
}

/// GetAttribute on an operation descriptor of type `dtype` holding `attrs`.
///
/// # Errors
/// NOT_SUPPORTED for an attribute the operation does not take; BAD_PARAM when it was never
/// set, or for a wrong attribute type; the [`Out`] errors.
pub fn get(dtype: i32, attrs: &HashMap<i32, Val>, o: &Out) -> Ffi {
    let what = type_name(dtype);
    if o.name == 60200 {
        let c = enums::operation_type_of_descriptor(dtype).unwrap_or(0);
        return o.put(ty::OPERATION_TYPE_EXT, &[c]);
    }
    let Some(kind) = attr_kind(dtype, o.name) else {
        return Err(o.unsupported(what));
    };
    let Some(val) = attrs.get(&o.name) else {
        if let OpAttr::Data = kind {
            return data_type_out(o, DataType::Unset);
        }
        return Err(err(
            Status::BadParam,
            format!("{what}: attribute {} has not been set", o.name),
        ));
    };
    match (kind, val) {
        (OpAttr::Tensor, Val::Tensor(t)) => put_tensors(o, std::slice::from_ref(t)),
        (OpAttr::Tensors, Val::Tensors(ts)) => put_tensors(o, ts),
        (OpAttr::I64s | OpAttr::Int, Val::I64s(v)) => o.put(ty::INT64, v),
        (OpAttr::Float, Val::F64(v)) => {
            if o.ty == ty::DOUBLE {
                o.put(ty::DOUBLE, &[*v])
            } else {
                o.put(ty::FLOAT, &[*v as f32])
            }
        }
        (OpAttr::Bool, Val::Bool(b)) => o.put(ty::BOOLEAN, &[u8::from(*b)]),
        (OpAttr::Data, Val::Data(d)) => data_type_out(o, *d),
        (OpAttr::Enum(t), Val::Enum(e)) => o.put(t, &[*e]),
        (OpAttr::Text, Val::Text(t)) => o.put_text(t),
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
    let name = match a.get(&60300) {
        Some(Val::Text(s)) => s.clone(),
        _ => String::new(),
    };
    let phase = |n: i32| {
        en(n)
            .and_then(|c| schema(NormFwdPhase::ALL, NormFwdPhase::schema_value, c))
            .unwrap_or_default()
    };
    let conv_mode = en(1501)
        .and_then(enums::conv_mode_from_c)
        .unwrap_or(hipdnn::ConvMode::CrossCorrelation);
    macro_rules! conv {
        ($ty:ident, $a:ident = $an:expr, $b:ident = $bn:expr, $c:ident = $cn:expr) => {{
            let mut n = hipdnn::$ty::new()
                .name(name.clone())
                .compute_data_type(data(1500));
            n.$a = t!($an);
            n.$b = t!($bn);
            n.$c = t!($cn);
            n.pre_padding = i64s(1505).unwrap_or_default();
            n.post_padding = i64s(1504).unwrap_or_default();
            n.stride = i64s(1503).unwrap_or_default();
            n.dilation = i64s(1502).unwrap_or_default();
            n.conv_mode = conv_mode;
            g.add_node(n);
        }};
    }
    match dtype {
        op::CONV_FWD => conv!(ConvFpropAttributes, x = 1401, w = 1400, y = 1402),
        op::CONV_BWD_DATA => conv!(ConvDgradAttributes, dy = 1700, w = 1701, dx = 1702),
        op::CONV_BWD_FILTER => conv!(ConvWgradAttributes, x = 1600, dy = 1601, dw = 1602),
        op::POINTWISE => {
            let mode = en(2300)
                .and_then(enums::pointwise_mode_from_c)
                .unwrap_or_default();
            let mut n = hipdnn::PointwiseAttributes::with_mode(mode)
                .name(name)
                .compute_data_type(data(2307));
            n.in_0 = t!(2200);
            n.out_0 = t!(2201);
            n.in_1 = t!(2202);
            n.in_2 = t!(2203);
            n.relu_lower_clip = f32v(2301);
            n.relu_upper_clip = f32v(2302);
            n.relu_lower_clip_slope = f32v(2303);
            n.swish_beta = f32v(2304);
            n.elu_alpha = f32v(2305);
            n.softplus_beta = f32v(2306);
            n.axis = int(2308);
            g.add_node(n);
        }
        op::MATMUL => {
            let mut n = hipdnn::MatmulAttributes::new()
                .name(name)
                .compute_data_type(data(2503));
            n.a = t!(2500);
            n.b = t!(2501);
            n.c = t!(2502);
            g.add_node(n);
        }
        op::BN_INFERENCE => {
            let mut n = hipdnn::BatchnormInferenceAttributes::new()
                .name(name)
                .compute_data_type(data(1806));
            n.x = t!(1800);
            n.mean = t!(1801);
            n.inv_variance = t!(1802);
            n.scale = t!(1803);
            n.bias = t!(1804);
            n.y = t!(1805);
            g.add_node(n);
        }
        op::BN_INFERENCE_VARIANCE => {
            let mut n = hipdnn::BatchnormInferenceVarianceExtAttributes::new()
                .name(name)
                .compute_data_type(data(1907));
            n.x = t!(1900);
            n.mean = t!(1901);
            n.variance = t!(1902);
            n.scale = t!(1903);
            n.bias = t!(1904);
            n.y = t!(1905);
            n.epsilon = t!(1906);
            g.add_node(n);
        }
        op::BN_BACKWARD => {
            let mut n = hipdnn::BatchnormBackwardAttributes::new()
                .name(name)
                .compute_data_type(data(2100));
            n.dy = t!(2000);
            n.x = t!(2001);
            n.scale = t!(2002);
            n.dx = t!(2003);
            n.dscale = t!(2004);
            n.dbias = t!(2005);
            n.mean = t!(2006);
            n.inv_variance = t!(2007);
            n.peer_stats = ts!(2101);
            g.add_node(n);
        }
        op::BATCHNORM => {
            let mut n = hipdnn::BatchnormAttributes::new()
                .name(name)
                .compute_data_type(data(2912));
            n.x = t!(2900);
            n.scale = t!(2901);
            n.bias = t!(2902);
            n.epsilon = t!(2903);
            n.y = t!(2904);
            n.prev_running_mean = t!(2905);
            n.prev_running_variance = t!(2906);
            n.momentum = t!(2907);
            n.mean = t!(2908);
            n.inv_variance = t!(2909);
            n.next_running_mean = t!(2910);
            n.next_running_variance = t!(2911);
            n.peer_stats = ts!(2913);
            g.add_node(n);
        }
        op::RMSNORM => {
            let mut n = hipdnn::RmsNormAttributes::new()
                .name(name)
                .compute_data_type(data(2407));
            n.x = t!(2400);
            n.scale = t!(2401);
            n.epsilon = t!(2402);
            n.y = t!(2403);
            n.bias = t!(2404);
            n.inv_rms = t!(2405);
            n.forward_phase = phase(2406);
            g.add_node(n);
        }
        op::RMSNORM_BACKWARD => {
            let mut n = hipdnn::RmsNormBackwardAttributes::new()
                .name(name)
                .compute_data_type(data(3507));
            n.dy = t!(3500);
            n.x = t!(3501);
            n.scale = t!(3502);
            n.inv_rms = t!(3503);
            n.dx = t!(3504);
            n.dscale = t!(3505);
            n.dbias = t!(3506);
            g.add_node(n);
        }
        op::LAYERNORM => {
            let mut n = hipdnn::LayernormAttributes::new()
                .name(name)
                .compute_data_type(data(2708));
            n.x = t!(2700);
            n.scale = t!(2701);
            n.bias = t!(2702);
            n.epsilon = t!(2703);
            n.y = t!(2704);
            n.mean = t!(2705);
            n.inv_variance = t!(2706);
            n.forward_phase = phase(2707);
            if let Some(c) = int(2709) {
                n.normalized_dim_count = c;
            }
            g.add_node(n);
        }
        op::LAYERNORM_BACKWARD => {
            let mut n = hipdnn::LayernormBackwardAttributes::new()
                .name(name)
                .compute_data_type(data(3610));
            n.dy = t!(3600);
            n.x = t!(3601);
            n.scale = t!(3602);
            n.mean = t!(3603);
            n.inv_variance = t!(3604);
            n.epsilon = t!(3605);
            n.dx = t!(3606);
            n.dscale = t!(3607);
            n.dbias = t!(3608);
            if let Some(c) = int(3609) {
                n.normalized_dim_count = c;
            }
            g.add_node(n);
        }
        op::REDUCTION => {
            let mut n = hipdnn::ReductionAttributes::new()
                .name(name)
                .compute_data_type(data(3203));
            n.x = t!(3200);
            n.y = t!(3201);
            n.mode = en(3202)
                .and_then(|c| schema(ReductionMode::ALL, ReductionMode::schema_value, c))
                .unwrap_or_default();
            if let Some(b) = boolv(3204) {
                n.is_deterministic = b;
            }
            g.add_node(n);
        }
        op::RESAMPLE_FWD => {
            let mut n = hipdnn::ResampleFwdAttributes::new()
                .name(name)
                .compute_data_type(data(3407));
            n.x = t!(3300);
            n.y = t!(3301);
            n.index = t!(3302);
            n.pre_padding = i64s(3401).unwrap_or_default();
            n.post_padding = i64s(3402).unwrap_or_default();
            n.stride = i64s(3403).unwrap_or_default();
            n.window = i64s(3404).unwrap_or_default();
            n.resample_mode = en(3400)
                .and_then(|c| schema(ResampleMode::ALL, ResampleMode::schema_value, c))
                .unwrap_or_default();
            if let Some(p) =
                en(3405).and_then(|c| schema(PaddingMode::ALL, PaddingMode::schema_value, c))
            {
                n.padding_mode = p;
            }
            n.generate_index = boolv(3406);
            g.add_node(n);
        }
        op::SDPA_FWD => {
            let mut n = hipdnn::SdpaAttributes::new()
                .name(name)
                .compute_data_type(data(2641));
            n.q = t!(2600);
            n.k = t!(2601);
            n.v = t!(2602);
            n.o = t!(2603);
            n.attn_mask = t!(2604);
            n.scale = t!(2605);
            n.seq_len_q = t!(2606);
            n.seq_len_kv = t!(2607);
            n.seed = t!(2608);
            n.offset = t!(2609);
            n.dropout_mask = t!(2610);
            n.dropout_scale = t!(2611);
            n.page_table_k = t!(2612);
            n.page_table_v = t!(2613);
            n.sink_token = t!(2615);
            n.descale_q = t!(2616);
            n.descale_k = t!(2617);
            n.descale_v = t!(2618);
            n.descale_s = t!(2619);
            n.scale_s = t!(2620);
            n.scale_o = t!(2621);
            n.stats = t!(2622);
            n.max = t!(2623);
            n.sum_exp = t!(2624);
            n.rng_dump = t!(2625);
            n.amax_s = t!(2626);
            n.amax_o = t!(2627);
            n.generate_stats = boolv(2628);
            n.alibi_mask = boolv(2629).unwrap_or_default();
            n.padding_mask = boolv(2630).unwrap_or_default();
            n.causal_mask = boolv(2631).unwrap_or_default();
            n.causal_mask_bottom_right = boolv(2632).unwrap_or_default();
            n.dropout_probability = f32v(2633);
            n.attn_scale_value = f32v(2634);
            n.left_bound = int(2635);
            n.right_bound = int(2636);
            n.max_seq_len_kv = int(2637).map(|v| v as i32);
            if let Some(d) = en(2638)
                .and_then(|c| schema(DiagonalAlignment::ALL, DiagonalAlignment::schema_value, c))
            {
                n.diagonal_alignment = d;
            }
            if data(2639) != DataType::Unset {
                n.mma_core_mode = data(2639);
            }
            if let Some(i) = en(2640).and_then(|c| {
                schema(
                    AttentionImplementation::ALL,
                    AttentionImplementation::schema_value,
                    c,
                )
            }) {
                n.implementation = i;
            }
            if a.contains_key(&2614) {
                return Err(err(
                    Status::NotSupported,
                    "OPERATION_SDPA_FWD_BLOCK_MASK_DESC (2614) has no field in the Graph schema",
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
            t!(1401, n.x);
            t!(1400, n.w);
            t!(1402, n.y);
            conv_back(
                &mut a,
                &n.pre_padding,
                &n.post_padding,
                &n.stride,
                &n.dilation,
                n.conv_mode,
            );
            data(&mut a, 1500, n.compute_data_type);
            op::CONV_FWD
        }
        O::ConvDgrad(n) => {
            t!(1700, n.dy);
            t!(1701, n.w);
            t!(1702, n.dx);
            conv_back(
                &mut a,
                &n.pre_padding,
                &n.post_padding,
                &n.stride,
                &n.dilation,
                n.conv_mode,
            );
            data(&mut a, 1500, n.compute_data_type);
            op::CONV_BWD_DATA
        }
        O::ConvWgrad(n) => {
            t!(1600, n.x);
            t!(1601, n.dy);
            t!(1602, n.dw);
            conv_back(
                &mut a,
                &n.pre_padding,
                &n.post_padding,
                &n.stride,
                &n.dilation,
                n.conv_mode,
            );
            data(&mut a, 1500, n.compute_data_type);
            op::CONV_BWD_FILTER
        }
        O::Pointwise(n) => {
            t!(2200, n.in_0);
            t!(2201, n.out_0);
            t!(2202, n.in_1);
            t!(2203, n.in_2);
            if let Some(c) = enums::pointwise_mode_to_c(n.mode) {
                a.insert(2300, Val::Enum(c));
            }
            for (k, v) in [
                (2301, n.relu_lower_clip),
                (2302, n.relu_upper_clip),
                (2303, n.relu_lower_clip_slope),
                (2304, n.swish_beta),
                (2305, n.elu_alpha),
                (2306, n.softplus_beta),
            ] {
                if let Some(x) = v {
                    a.insert(k, Val::F64(f64::from(x)));
                }
            }
            if let Some(x) = n.axis {
                a.insert(2308, Val::I64s(vec![x]));
            }
            data(&mut a, 2307, n.compute_data_type);
            op::POINTWISE
        }
        O::Matmul(n) => {
            t!(2500, n.a);
            t!(2501, n.b);
            t!(2502, n.c);
            data(&mut a, 2503, n.compute_data_type);
            op::MATMUL
        }
        O::BatchnormInference(n) => {
            t!(1800, n.x);
            t!(1801, n.mean);
            t!(1802, n.inv_variance);
            t!(1803, n.scale);
            t!(1804, n.bias);
            t!(1805, n.y);
            data(&mut a, 1806, n.compute_data_type);
            op::BN_INFERENCE
        }
        O::BatchnormInferenceVarianceExt(n) => {
            t!(1900, n.x);
            t!(1901, n.mean);
            t!(1902, n.variance);
            t!(1903, n.scale);
            t!(1904, n.bias);
            t!(1905, n.y);
            t!(1906, n.epsilon);
            data(&mut a, 1907, n.compute_data_type);
            op::BN_INFERENCE_VARIANCE
        }
        O::BatchnormBackward(n) => {
            t!(2000, n.dy);
            t!(2001, n.x);
            t!(2002, n.scale);
            t!(2003, n.dx);
            t!(2004, n.dscale);
            t!(2005, n.dbias);
            t!(2006, n.mean);
            t!(2007, n.inv_variance);
            if !n.peer_stats.is_empty() {
                a.insert(
                    2101,
                    Val::Tensors(
                        n.peer_stats
                            .iter()
                            .map(|id| Arc::new(g.tensor_attributes(*id).clone()))
                            .collect(),
                    ),
                );
            }
            data(&mut a, 2100, n.compute_data_type);
            op::BN_BACKWARD
        }
        O::Batchnorm(n) => {
            t!(2900, n.x);
            t!(2901, n.scale);
            t!(2902, n.bias);
            t!(2903, n.epsilon);
            t!(2904, n.y);
            t!(2905, n.prev_running_mean);
            t!(2906, n.prev_running_variance);
            t!(2907, n.momentum);
            t!(2908, n.mean);
            t!(2909, n.inv_variance);
            t!(2910, n.next_running_mean);
            t!(2911, n.next_running_variance);
            if !n.peer_stats.is_empty() {
                a.insert(
                    2913,
                    Val::Tensors(
                        n.peer_stats
                            .iter()
                            .map(|id| Arc::new(g.tensor_attributes(*id).clone()))
                            .collect(),
                    ),
                );
            }
            data(&mut a, 2912, n.compute_data_type);
            op::BATCHNORM
        }
        O::RmsNorm(n) => {
            t!(2400, n.x);
            t!(2401, n.scale);
            t!(2402, n.epsilon);
            t!(2403, n.y);
            t!(2404, n.bias);
            t!(2405, n.inv_rms);
            phase_back(&mut a, 2406, n.forward_phase);
            data(&mut a, 2407, n.compute_data_type);
            op::RMSNORM
        }
        O::RmsNormBackward(n) => {
            t!(3500, n.dy);
            t!(3501, n.x);
            t!(3502, n.scale);
            t!(3503, n.inv_rms);
            t!(3504, n.dx);
            t!(3505, n.dscale);
            t!(3506, n.dbias);
            data(&mut a, 3507, n.compute_data_type);
            op::RMSNORM_BACKWARD
        }
        O::Layernorm(n) => {
            t!(2700, n.x);
            t!(2701, n.scale);
            t!(2702, n.bias);
            t!(2703, n.epsilon);
            t!(2704, n.y);
            t!(2705, n.mean);
            t!(2706, n.inv_variance);
            phase_back(&mut a, 2707, n.forward_phase);
            a.insert(2709, Val::I64s(vec![n.normalized_dim_count]));
            data(&mut a, 2708, n.compute_data_type);
            op::LAYERNORM
        }
        O::LayernormBackward(n) => {
            t!(3600, n.dy);
            t!(3601, n.x);
            t!(3602, n.scale);
            t!(3603, n.mean);
            t!(3604, n.inv_variance);
            t!(3605, n.epsilon);
            t!(3606, n.dx);
            t!(3607, n.dscale);
            t!(3608, n.dbias);
            a.insert(3609, Val::I64s(vec![n.normalized_dim_count]));
            data(&mut a, 3610, n.compute_data_type);
            op::LAYERNORM_BACKWARD
        }
        O::Reduction(n) => {
            t!(3200, n.x);
            t!(3201, n.y);
            let c = i32::from(n.mode.schema_value());
            if c != 0 {
                a.insert(3202, Val::Enum(c));
            }
            a.insert(3204, Val::Bool(n.is_deterministic));
            data(&mut a, 3203, n.compute_data_type);
            op::REDUCTION
        }
        O::ResampleFwd(n) => {
            t!(3300, n.x);
            t!(3301, n.y);
            t!(3302, n.index);
            a.insert(3401, Val::I64s(n.pre_padding.clone()));
            a.insert(3402, Val::I64s(n.post_padding.clone()));
            a.insert(3403, Val::I64s(n.stride.clone()));
            a.insert(3404, Val::I64s(n.window.clone()));
            for (k, c) in [
                (3400, i32::from(n.resample_mode.schema_value())),
                (3405, i32::from(n.padding_mode.schema_value())),
            ] {
                if c != 0 {
                    a.insert(k, Val::Enum(c));
                }
            }
            if let Some(b) = n.generate_index {
                a.insert(3406, Val::Bool(b));
            }
            data(&mut a, 3407, n.compute_data_type);
            op::RESAMPLE_FWD
        }
        O::Sdpa(n) => {
            for (k, v) in [
                (2600, n.q),
                (2601, n.k),
                (2602, n.v),
                (2603, n.o),
                (2604, n.attn_mask),
                (2605, n.scale),
                (2606, n.seq_len_q),
                (2607, n.seq_len_kv),
                (2608, n.seed),
                (2609, n.offset),
                (2610, n.dropout_mask),
                (2611, n.dropout_scale),
                (2612, n.page_table_k),
                (2613, n.page_table_v),
                (2615, n.sink_token),
                (2616, n.descale_q),
                (2617, n.descale_k),
                (2618, n.descale_v),
                (2619, n.descale_s),
                (2620, n.scale_s),
                (2621, n.scale_o),
                (2622, n.stats),
                (2623, n.max),
                (2624, n.sum_exp),
                (2625, n.rng_dump),
                (2626, n.amax_s),
                (2627, n.amax_o),
            ] {
                t!(k, v);
            }
            if let Some(b) = n.generate_stats {
                a.insert(2628, Val::Bool(b));
            }
            a.insert(2629, Val::Bool(n.alibi_mask));
            a.insert(2630, Val::Bool(n.padding_mask));
            a.insert(2631, Val::Bool(n.causal_mask));
            a.insert(2632, Val::Bool(n.causal_mask_bottom_right));
            if let Some(x) = n.dropout_probability {
                a.insert(2633, Val::F64(f64::from(x)));
            }
            if let Some(x) = n.attn_scale_value {
                a.insert(2634, Val::F64(f64::from(x)));
            }
            if let Some(x) = n.left_bound {
                a.insert(2635, Val::I64s(vec![x]));
            }
            if let Some(x) = n.right_bound {
                a.insert(2636, Val::I64s(vec![x]));
            }
            if let Some(x) = n.max_seq_len_kv {
                a.insert(2637, Val::I64s(vec![i64::from(x)]));
            }
            a.insert(
                2638,
                Val::Enum(i32::from(n.diagonal_alignment.schema_value())),
            );
            a.insert(2640, Val::Enum(i32::from(n.implementation.schema_value())));
            data(&mut a, 2639, n.mma_core_mode);
            data(&mut a, 2641, n.compute_data_type);
            op::SDPA_FWD
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
        a.insert(60300, Val::Text(node.name().to_string()));
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
    a.insert(1505, Val::I64s(pre.to_vec()));
    a.insert(1504, Val::I64s(post.to_vec()));
    a.insert(1503, Val::I64s(stride.to_vec()));
    a.insert(1502, Val::I64s(dilation.to_vec()));
    if let Some(c) = enums::conv_mode_to_c(mode) {
        a.insert(1501, Val::Enum(c));
    }
}

fn phase_back(a: &mut HashMap<i32, Val>, k: i32, p: NormFwdPhase) {
    let c = i32::from(p.schema_value());
    if c != 0 {
        a.insert(k, Val::Enum(c));
    }
}
