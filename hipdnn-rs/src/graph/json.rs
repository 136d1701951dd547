//! The graph's JSON form: upstream hipDNN's JSON graph format ([`Graph::to_json`] /
//! [`Graph::from_json`]), the one the C ABI's `hipdnnBackendGetSerializedJsonGraph_ext` /
//! `hipdnnBackendCreateAndDeserializeJsonGraph_ext` exchange too (same function, same text).
//!
//! Writer: nlohmann `dump()` text — compact, object keys sorted bytewise, floats widened to
//! double and printed with nlohmann's rules (`1.0`, `0.10000000149011612`, `1e-07`,
//! `1e+16`), nodes grouped into `inputs` / `outputs` / `parameters` / `attributes` per op as
//! upstream's per-op JSON converters do, enum spellings as upstream's tables. The same graph
//! gives the same text; [`Graph::to_json_pretty`] gives the same document indented (nlohmann
//! `dump(4)`). Reader: stricter than upstream where upstream is silent or lenient —
//! an unknown enum spelling, an unknown node `type`, a duplicate key or an int32 / byte
//! value out of range (upstream wraps it) is refused (`InvalidValue`) with a message naming
//! the key and value; unknown keys are accepted (forward compatibility).
//!
//! Scope: all 23 node kinds, as upstream's per-op JSON converters
//! (`flatbuffers_sdk/include/hipdnn_flatbuffers_sdk/utilities/json/<Table>.hpp`) write them:
//! conv fprop/dgrad/wgrad, pointwise, matmul, batchnorm inference, inference-variance,
//! training and backward, layernorm and rmsnorm with their backward forms, reduction,
//! resample forward and backward, SDPA forward and backward, block-scale quantize and
//! dequantize, custom op, MoE grouped matmul and its backward. The legacy format
//! ([`Graph::to_flatbuffer_json`], module `flatbuffer_json`) is a field-for-field image of the
//! schema instead.

use super::error::{Error, ErrorCode, Result};
use super::tensor::{TensorId, TensorValue};
use super::types::DataType;
use super::{Graph, Operation};
use std::collections::BTreeMap;

/// A JSON value (objects keep keys sorted bytewise, as nlohmann's default `json`).
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    /// `null`.
    Null,
    /// `true` / `false`.
    B(bool),
    /// An integer.
    I(i64),
    /// A floating-point number.
    F(f64),
    /// A string.
    S(String),
    /// An array.
    A(Vec<J>),
    /// An object.
    O(BTreeMap<String, J>),
}

/// A double as nlohmann's `dump()` prints it (widened float, round-trip digits, `e+NN`).
pub fn fmt_f64(x: f64) -> String {
    if !x.is_finite() {
        return "null".into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Shortest round-trip digits d1..dk and exponent: value = 0.d1..dk × 10^n.
    let e = format!("{:e}", x.abs());
    let (mant, exp) = e.split_once('e').expect("{:e} has an exponent");
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let k = digits.len() as i32;
    let n = exp.parse::<i32>().expect("integer exponent") + 1;
    let mut s = String::new();
    if x < 0.0 {
        s.push('-');
    }
    if k <= n && n <= 15 {
        s.push_str(digits);
        s.push_str(&"0".repeat((n - k) as usize));
        s.push_str(".0");
    } else if 0 < n && n <= 15 {
        s.push_str(&digits[..n as usize]);
        s.push('.');
        s.push_str(&digits[n as usize..]);
    } else if -4 < n && n <= 0 {
        s.push_str("0.");
        s.push_str(&"0".repeat((-n) as usize));
        s.push_str(digits);
    } else {
        s.push_str(&digits[..1]);
        if k > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let e = n - 1;
        s.push('e');
        s.push(if e < 0 { '-' } else { '+' });
        s.push_str(&format!("{:02}", e.abs()));
    }
    s
}

fn esc(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Compact text of `j` (nlohmann `dump()`).
pub fn dump(j: &J) -> String {
    let mut out = String::new();
    emit(j, &mut out);
    out
}

fn emit(j: &J, out: &mut String) {
    match j {
        J::Null => out.push_str("null"),
        J::B(b) => out.push_str(if *b { "true" } else { "false" }),
        J::I(i) => out.push_str(&i.to_string()),
        J::F(f) => out.push_str(&fmt_f64(*f)),
        J::S(s) => esc(s, out),
        J::A(v) => {
            out.push('[');
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                emit(x, out);
            }
            out.push(']');
        }
        J::O(m) => {
            out.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                esc(k, out);
                out.push(':');
                emit(v, out);
            }
            out.push('}');
        }
    }
}

/// Indented text of `j`, as nlohmann's `dump(indent)`: one member or element a line,
/// `indent` spaces a level, `": "` after keys, `{}` / `[]` for empty containers, scalars as
/// [`dump`] prints them, no trailing newline.
pub fn dump_pretty(j: &J, indent: usize) -> String {
    let mut out = String::new();
    emit_pretty(j, indent, 0, &mut out);
    out
}

fn emit_pretty(j: &J, indent: usize, level: usize, out: &mut String) {
    let pad = |out: &mut String, l: usize| out.push_str(&" ".repeat(indent * l));
    match j {
        J::A(v) if !v.is_empty() => {
            out.push_str("[\n");
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                pad(out, level + 1);
                emit_pretty(x, indent, level + 1, out);
            }
            out.push('\n');
            pad(out, level);
            out.push(']');
        }
        J::O(m) if !m.is_empty() => {
            out.push_str("{\n");
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                pad(out, level + 1);
                esc(k, out);
                out.push_str(": ");
                emit_pretty(v, indent, level + 1, out);
            }
            out.push('\n');
            pad(out, level);
            out.push('}');
        }
        scalar_or_empty => emit(scalar_or_empty, out),
    }
}

fn lower(s: &str) -> J {
    J::S(s.to_ascii_lowercase())
}

fn upper(s: &str) -> J {
    J::S(s.to_string())
}

fn dt(d: DataType) -> J {
    lower(d.schema_name())
}

fn ints(v: &[i64]) -> J {
    J::A(v.iter().map(|x| J::I(*x)).collect())
}

fn opt_f(v: Option<f32>) -> J {
    v.map_or(J::Null, |x| J::F(f64::from(x)))
}

fn obj(pairs: Vec<(&str, J)>) -> J {
    J::O(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// Upstream's JSON text of `g` (tensors without a UID get the UIDs
/// [`Graph::assign_uids`] would give them; the graph is unchanged).
///
/// # Errors
/// `InvalidValue` for duplicate UIDs.
pub fn write(g: &Graph) -> Result<String> {
    let uids = g.checked_uids()?;
    let uid = |t: TensorId| uids[t.index()];
    let u = |t: Option<TensorId>| t.map_or(J::Null, |t| J::I(uid(t)));
    let mut tensors = Vec::new();
    for (ti, t) in g.tensors() {
        let id = uid(ti);
        let mut m = vec![
            ("alignment", J::I(t.alignment)),
            ("data_type", dt(t.data_type)),
            ("dims", ints(&t.dims)),
            ("is_runtime_pass_by_value", J::B(t.is_runtime_pass_by_value)),
            ("name", J::S(t.name.clone())),
            ("strides", ints(&t.strides)),
            ("uid", J::I(id)),
            ("virtual", J::B(t.is_virtual)),
        ];
        if let Some(r) = t.ragged_offset {
            m.push(("ragged_offset_tensor_uid", J::I(uid(r))));
        }
        if let Some(v) = t.value {
            let (ty, val) = match v {
                TensorValue::Float32(x) => ("Float32Value", J::F(f64::from(x))),
                TensorValue::Float16(x) => ("Float16Value", J::F(f64::from(x))),
                TensorValue::BFloat16(x) => ("BFloat16Value", J::F(f64::from(x))),
                TensorValue::Float8(x) => ("Float8Value", J::I(i64::from(x))),
                TensorValue::Int32(x) => ("Int32Value", J::I(i64::from(x))),
                TensorValue::Float64(x) => ("Float64Value", J::F(x)),
                TensorValue::Int64(x) => ("Int64Value", J::I(x)),
                TensorValue::Bool(x) => ("BoolValue", J::B(x)),
            };
            m.push(("value_type", J::S(ty.into())));
            m.push(("value", val));
        }
        tensors.push(obj(m));
    }
    let mut nodes = Vec::new();
    for (_, op) in g.nodes() {
        let (ty, mut m): (&str, Vec<(&str, J)>) = match op {
            Operation::ConvFprop(a) => (
                "ConvolutionFwdAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![("x_tensor_uid", u(a.x)), ("w_tensor_uid", u(a.w))]),
                    ),
                    ("outputs", obj(vec![("y_tensor_uid", u(a.y))])),
                    (
                        "parameters",
                        conv_params(
                            &a.pre_padding,
                            &a.post_padding,
                            &a.stride,
                            &a.dilation,
                            a.conv_mode,
                        ),
                    ),
                ],
            ),
            Operation::ConvDgrad(a) => (
                "ConvolutionBwdAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![("dy_tensor_uid", u(a.dy)), ("w_tensor_uid", u(a.w))]),
                    ),
                    ("outputs", obj(vec![("dx_tensor_uid", u(a.dx))])),
                    (
                        "parameters",
                        conv_params(
                            &a.pre_padding,
                            &a.post_padding,
                            &a.stride,
                            &a.dilation,
                            a.conv_mode,
                        ),
                    ),
                ],
            ),
            Operation::ConvWgrad(a) => (
                "ConvolutionWrwAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![("x_tensor_uid", u(a.x)), ("dy_tensor_uid", u(a.dy))]),
                    ),
                    ("outputs", obj(vec![("dw_tensor_uid", u(a.dw))])),
                    (
                        "parameters",
                        conv_params(
                            &a.pre_padding,
                            &a.post_padding,
                            &a.stride,
                            &a.dilation,
                            a.conv_mode,
                        ),
                    ),
                ],
            ),
            Operation::Pointwise(a) => (
                "PointwiseAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("operation", lower(a.mode.schema_name())),
                            ("relu_lower_clip", opt_f(a.relu_lower_clip)),
                            ("relu_upper_clip", opt_f(a.relu_upper_clip)),
                            ("relu_lower_clip_slope", opt_f(a.relu_lower_clip_slope)),
                            ("axis_tensor_uid", a.axis.map_or(J::Null, J::I)),
                            ("in_0_tensor_uid", u(a.in_0)),
                            ("in_1_tensor_uid", u(a.in_1)),
                            ("in_2_tensor_uid", u(a.in_2)),
                            ("swish_beta", opt_f(a.swish_beta)),
                            ("elu_alpha", opt_f(a.elu_alpha)),
                            ("softplus_beta", opt_f(a.softplus_beta)),
                        ]),
                    ),
                    ("outputs", obj(vec![("out_0_tensor_uid", u(a.out_0))])),
                ],
            ),
            Operation::Matmul(a) => (
                "MatmulAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![("a_tensor_uid", u(a.a)), ("b_tensor_uid", u(a.b))]),
                    ),
                    ("outputs", obj(vec![("c_tensor_uid", u(a.c))])),
                ],
            ),
            Operation::BatchnormInference(a) => (
                "BatchnormInferenceAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("x_tensor_uid", u(a.x)),
                            ("mean_tensor_uid", u(a.mean)),
                            ("scale_tensor_uid", u(a.scale)),
                            ("inv_variance_tensor_uid", u(a.inv_variance)),
                            ("bias_tensor_uid", u(a.bias)),
                        ]),
                    ),
                    ("outputs", obj(vec![("y_tensor_uid", u(a.y))])),
                ],
            ),
            Operation::BatchnormInferenceVarianceExt(a) => (
                "BatchnormInferenceAttributesVarianceExt",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("x_tensor_uid", u(a.x)),
                            ("mean_tensor_uid", u(a.mean)),
                            ("scale_tensor_uid", u(a.scale)),
                            ("variance_tensor_uid", u(a.variance)),
                            ("bias_tensor_uid", u(a.bias)),
                            ("epsilon_tensor_uid", u(a.epsilon)),
                        ]),
                    ),
                    ("outputs", obj(vec![("y_tensor_uid", u(a.y))])),
                ],
            ),
            Operation::Layernorm(a) => (
                "LayernormAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("x_tensor_uid", u(a.x)),
                            ("scale_tensor_uid", u(a.scale)),
                            ("bias_tensor_uid", u(a.bias)),
                            ("epsilon_tensor_uid", u(a.epsilon)),
                        ]),
                    ),
                    (
                        "outputs",
                        obj(vec![
                            ("y_tensor_uid", u(a.y)),
                            ("mean_tensor_uid", u(a.mean)),
                            ("inv_variance_tensor_uid", u(a.inv_variance)),
                        ]),
                    ),
                    ("normalized_dim_count", J::I(a.normalized_dim_count)),
                    (
                        "forward_phase",
                        J::I(i64::from(a.forward_phase.schema_value())),
                    ),
                ],
            ),
            Operation::Batchnorm(a) => (
                "BatchnormAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("x_tensor_uid", u(a.x)),
                            ("scale_tensor_uid", u(a.scale)),
                            ("bias_tensor_uid", u(a.bias)),
                            ("epsilon_tensor_uid", u(a.epsilon)),
                            (
                                "peer_stats_tensor_uid",
                                J::A(a.peer_stats.iter().map(|t| J::I(uid(*t))).collect()),
                            ),
                            ("prev_running_mean_tensor_uid", u(a.prev_running_mean)),
                            (
                                "prev_running_variance_tensor_uid",
                                u(a.prev_running_variance),
                            ),
                            ("momentum_tensor_uid", u(a.momentum)),
                        ]),
                    ),
                    (
                        "outputs",
                        obj(vec![
                            ("y_tensor_uid", u(a.y)),
                            ("mean_tensor_uid", u(a.mean)),
                            ("inv_variance_tensor_uid", u(a.inv_variance)),
                            ("next_running_mean_tensor_uid", u(a.next_running_mean)),
                            (
                                "next_running_variance_tensor_uid",
                                u(a.next_running_variance),
                            ),
                        ]),
                    ),
                ],
            ),
            Operation::BatchnormBackward(a) => (
                "BatchnormBackwardAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("dy_tensor_uid", u(a.dy)),
                            ("x_tensor_uid", u(a.x)),
                            ("mean_tensor_uid", u(a.mean)),
                            ("inv_variance_tensor_uid", u(a.inv_variance)),
                            ("scale_tensor_uid", u(a.scale)),
                            (
                                "peer_stats_tensor_uid",
                                J::A(a.peer_stats.iter().map(|t| J::I(uid(*t))).collect()),
                            ),
                        ]),
                    ),
                    (
                        "outputs",
                        obj(vec![
                            ("dbias_tensor_uid", u(a.dbias)),
                            ("dscale_tensor_uid", u(a.dscale)),
                            ("dx_tensor_uid", u(a.dx)),
                        ]),
                    ),
                ],
            ),
            Operation::LayernormBackward(a) => (
                "LayernormBackwardAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("dy_tensor_uid", u(a.dy)),
                            ("x_tensor_uid", u(a.x)),
                            ("scale_tensor_uid", u(a.scale)),
                            ("mean_tensor_uid", u(a.mean)),
                            ("inv_variance_tensor_uid", u(a.inv_variance)),
                            ("epsilon_tensor_uid", u(a.epsilon)),
                        ]),
                    ),
                    (
                        "outputs",
                        obj(vec![
                            ("dx_tensor_uid", u(a.dx)),
                            ("dscale_tensor_uid", u(a.dscale)),
                            ("dbias_tensor_uid", u(a.dbias)),
                        ]),
                    ),
                    ("normalized_dim_count", J::I(a.normalized_dim_count)),
                ],
            ),
            Operation::RmsNormBackward(a) => {
                let mut outputs = vec![
                    ("dx_tensor_uid", u(a.dx)),
                    ("dscale_tensor_uid", u(a.dscale)),
                ];
                if a.dbias.is_some() {
                    outputs.push(("dbias_tensor_uid", u(a.dbias)));
                }
                (
                    "RMSNormBackwardAttributes",
                    vec![
                        (
                            "inputs",
                            obj(vec![
                                ("dy_tensor_uid", u(a.dy)),
                                ("x_tensor_uid", u(a.x)),
                                ("scale_tensor_uid", u(a.scale)),
                                ("inv_rms_tensor_uid", u(a.inv_rms)),
                            ]),
                        ),
                        ("outputs", obj(outputs)),
                    ],
                )
            }
            Operation::RmsNorm(a) => {
                let mut inputs = vec![
                    ("x_tensor_uid", u(a.x)),
                    ("scale_tensor_uid", u(a.scale)),
                    ("epsilon_tensor_uid", u(a.epsilon)),
                ];
                if a.bias.is_some() {
                    inputs.push(("bias_tensor_uid", u(a.bias)));
                }
                let mut outputs = vec![("y_tensor_uid", u(a.y))];
                if a.inv_rms.is_some() {
                    outputs.push(("inv_rms_tensor_uid", u(a.inv_rms)));
                }
                let mut m = vec![("inputs", obj(inputs)), ("outputs", obj(outputs))];
                if a.forward_phase != super::NormFwdPhase::NotSet {
                    m.push(("forward_phase", upper(a.forward_phase.schema_name())));
                }
                ("RMSNormAttributes", m)
            }
            Operation::Reduction(a) => {
                let mode = match a.mode {
                    super::ReductionMode::MinOp => J::S("min".into()),
                    super::ReductionMode::MaxOp => J::S("max".into()),
                    m => lower(m.schema_name()),
                };
                (
                    "ReductionAttributes",
                    vec![
                        ("mode", mode),
                        ("in_tensor_uid", u(a.x)),
                        ("out_tensor_uid", u(a.y)),
                        ("is_deterministic", J::B(a.is_deterministic)),
                    ],
                )
            }
            Operation::ResampleFwd(a) => {
                let mut m = vec![
                    ("x_tensor_uid", u(a.x)),
                    ("y_tensor_uid", u(a.y)),
                    ("pre_padding", ints(&a.pre_padding)),
                    ("post_padding", ints(&a.post_padding)),
                    ("stride", ints(&a.stride)),
                    ("window", ints(&a.window)),
                    ("resample_mode", lower(a.resample_mode.schema_name())),
                    ("padding_mode", lower(a.padding_mode.schema_name())),
                ];
                if a.index.is_some() {
                    m.push(("index_tensor_uid", u(a.index)));
                }
                if let Some(b) = a.generate_index {
                    m.push(("generate_index", J::B(b)));
                }
                ("ResampleFwdAttributes", m)
            }
            Operation::Sdpa(a) => (
                "SdpaAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("q_tensor_uid", u(a.q)),
                            ("k_tensor_uid", u(a.k)),
                            ("v_tensor_uid", u(a.v)),
                            ("attn_mask_tensor_uid", u(a.attn_mask)),
                            ("scale_tensor_uid", u(a.scale)),
                            ("seq_len_q_tensor_uid", u(a.seq_len_q)),
                            ("seq_len_kv_tensor_uid", u(a.seq_len_kv)),
                            ("seed_tensor_uid", u(a.seed)),
                            ("offset_tensor_uid", u(a.offset)),
                            ("dropout_mask_tensor_uid", u(a.dropout_mask)),
                            ("dropout_scale_tensor_uid", u(a.dropout_scale)),
                            ("page_table_k_tensor_uid", u(a.page_table_k)),
                            ("page_table_v_tensor_uid", u(a.page_table_v)),
                            ("block_mask_tensor_uid", u(a.block_mask)),
                            ("sink_token_tensor_uid", u(a.sink_token)),
                            ("descale_q_tensor_uid", u(a.descale_q)),
                            ("descale_k_tensor_uid", u(a.descale_k)),
                            ("descale_v_tensor_uid", u(a.descale_v)),
                            ("descale_s_tensor_uid", u(a.descale_s)),
                            ("scale_s_tensor_uid", u(a.scale_s)),
                            ("scale_o_tensor_uid", u(a.scale_o)),
                        ]),
                    ),
                    (
                        "outputs",
                        obj(vec![
                            ("o_tensor_uid", u(a.o)),
                            ("stats_tensor_uid", u(a.stats)),
                            ("max_tensor_uid", u(a.max)),
                            ("sum_exp_tensor_uid", u(a.sum_exp)),
                            ("rng_dump_tensor_uid", u(a.rng_dump)),
                            ("amax_s_tensor_uid", u(a.amax_s)),
                            ("amax_o_tensor_uid", u(a.amax_o)),
                        ]),
                    ),
                    (
                        "attributes",
                        obj(vec![
                            ("generate_stats", a.generate_stats.map_or(J::Null, J::B)),
                            ("alibi_mask", J::B(a.alibi_mask)),
                            ("padding_mask", J::B(a.padding_mask)),
                            ("causal_mask", J::B(a.causal_mask)),
                            ("causal_mask_bottom_right", J::B(a.causal_mask_bottom_right)),
                            ("dropout_probability", opt_f(a.dropout_probability)),
                            ("attn_scale_value", opt_f(a.attn_scale_value)),
                            ("left_bound", a.left_bound.map_or(J::Null, J::I)),
                            ("right_bound", a.right_bound.map_or(J::Null, J::I)),
                            (
                                "max_seq_len_kv",
                                a.max_seq_len_kv.map_or(J::Null, |x| J::I(i64::from(x))),
                            ),
                            (
                                "diagonal_alignment",
                                upper(a.diagonal_alignment.schema_name()),
                            ),
                            ("mma_core_mode", dt(a.mma_core_mode)),
                            ("implementation", upper(a.implementation.schema_name())),
                        ]),
                    ),
                ],
            ),
            // SdpaBackwardAttributes.hpp `to_json`: three groups, the third named
            // `parameters`; optional uids and scalars written as `null` when absent.
            Operation::SdpaBackward(a) => (
                "SdpaBackwardAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("q_tensor_uid", u(a.q)),
                            ("k_tensor_uid", u(a.k)),
                            ("v_tensor_uid", u(a.v)),
                            ("o_tensor_uid", u(a.o)),
                            ("do_tensor_uid", u(a.d_o)),
                            ("stats_tensor_uid", u(a.stats)),
                            ("scale_tensor_uid", u(a.scale)),
                            ("attn_mask_tensor_uid", u(a.attn_mask)),
                            ("seq_len_q_tensor_uid", u(a.seq_len_q)),
                            ("seq_len_kv_tensor_uid", u(a.seq_len_kv)),
                            ("seed_tensor_uid", u(a.seed)),
                            ("offset_tensor_uid", u(a.offset)),
                            ("dropout_mask_tensor_uid", u(a.dropout_mask)),
                            ("dropout_scale_tensor_uid", u(a.dropout_scale)),
                            ("dropout_scale_inv_tensor_uid", u(a.dropout_scale_inv)),
                        ]),
                    ),
                    (
                        "outputs",
                        obj(vec![
                            ("dq_tensor_uid", u(a.dq)),
                            ("dk_tensor_uid", u(a.dk)),
                            ("dv_tensor_uid", u(a.dv)),
                            ("dbias_tensor_uid", u(a.dbias)),
                        ]),
                    ),
                    (
                        "parameters",
                        obj(vec![
                            ("alibi_mask", J::B(a.alibi_mask)),
                            ("padding_mask", J::B(a.padding_mask)),
                            ("causal_mask", J::B(a.causal_mask)),
                            ("causal_mask_bottom_right", J::B(a.causal_mask_bottom_right)),
                            ("dropout_probability", opt_f(a.dropout_probability)),
                            ("attn_scale_value", opt_f(a.attn_scale_value)),
                            ("left_bound", a.left_bound.map_or(J::Null, J::I)),
                            ("right_bound", a.right_bound.map_or(J::Null, J::I)),
                            (
                                "diagonal_alignment",
                                upper(a.diagonal_alignment.schema_name()),
                            ),
                        ]),
                    ),
                ],
            ),
            // BlockScaleDequantizeAttributes.hpp `to_json`: `block_size` (int32 array) and
            // `is_negative_scale` always written, beside the groups.
            Operation::BlockScaleDequantize(a) => (
                "BlockScaleDequantizeAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("x_tensor_uid", u(a.x)),
                            ("scale_tensor_uid", u(a.scale)),
                        ]),
                    ),
                    ("outputs", obj(vec![("y_tensor_uid", u(a.y))])),
                    (
                        "block_size",
                        J::A(a.block_size.iter().map(|x| J::I(i64::from(*x))).collect()),
                    ),
                    ("is_negative_scale", J::B(a.is_negative_scale)),
                ],
            ),
            // BlockScaleQuantizeAttributes.hpp `to_json`: `block_size` omitted when 0,
            // `axis` omitted when absent, `transpose` always written.
            Operation::BlockScaleQuantize(a) => {
                let mut m = vec![
                    ("inputs", obj(vec![("x_tensor_uid", u(a.x))])),
                    (
                        "outputs",
                        obj(vec![
                            ("y_tensor_uid", u(a.y)),
                            ("scale_tensor_uid", u(a.scale)),
                        ]),
                    ),
                    ("transpose", J::B(a.transpose)),
                ];
                if a.block_size != 0 {
                    m.push(("block_size", J::I(i64::from(a.block_size))));
                }
                if let Some(axis) = a.axis {
                    m.push(("axis", J::I(axis)));
                }
                ("BlockScaleQuantizeAttributes", m)
            }
            // CustomOpAttributes.hpp `to_json`: flat; `data` as integers 0-255. An absent
            // `custom_op_id` (upstream's writer would dereference null) is written as "".
            Operation::CustomOp(a) => (
                "CustomOpAttributes",
                vec![
                    ("custom_op_id", J::S(a.custom_op_id.clone())),
                    (
                        "input_tensor_uids",
                        J::A(a.inputs.iter().map(|t| J::I(uid(*t))).collect()),
                    ),
                    (
                        "output_tensor_uids",
                        J::A(a.outputs.iter().map(|t| J::I(uid(*t))).collect()),
                    ),
                    (
                        "data",
                        J::A(a.data.iter().map(|b| J::I(i64::from(*b))).collect()),
                    ),
                ],
            ),
            // ResampleBwdAttributes.hpp `to_json`: flat, as resample forward without
            // `generate_index`; `index_tensor_uid` omitted when absent.
            Operation::ResampleBwd(a) => {
                let mut m = vec![
                    ("dy_tensor_uid", u(a.dy)),
                    ("dx_tensor_uid", u(a.dx)),
                    ("pre_padding", ints(&a.pre_padding)),
                    ("post_padding", ints(&a.post_padding)),
                    ("stride", ints(&a.stride)),
                    ("window", ints(&a.window)),
                    ("resample_mode", lower(a.resample_mode.schema_name())),
                    ("padding_mode", lower(a.padding_mode.schema_name())),
                ];
                if a.index.is_some() {
                    m.push(("index_tensor_uid", u(a.index)));
                }
                ("ResampleBwdAttributes", m)
            }
            // MoeGroupedMatmulAttributes.hpp `to_json`: `token_index_tensor_uid` and
            // `token_ks_tensor_uid` omitted when absent; `mode` lowercase; `top_k` int32.
            Operation::MoeGroupedMatmul(a) => {
                let mut inputs = vec![
                    ("token_tensor_uid", u(a.token)),
                    ("weight_tensor_uid", u(a.weight)),
                    ("first_token_offset_tensor_uid", u(a.first_token_offset)),
                ];
                if a.token_index.is_some() {
                    inputs.push(("token_index_tensor_uid", u(a.token_index)));
                }
                if a.token_ks.is_some() {
                    inputs.push(("token_ks_tensor_uid", u(a.token_ks)));
                }
                (
                    "MoeGroupedMatmulAttributes",
                    vec![
                        ("inputs", obj(inputs)),
                        ("outputs", obj(vec![("output_tensor_uid", u(a.output))])),
                        ("mode", lower(a.mode.schema_name())),
                        ("top_k", J::I(i64::from(a.top_k))),
                    ],
                )
            }
            // MoeGroupedMatmulBwdAttributes.hpp `to_json`.
            Operation::MoeGroupedMatmulBwd(a) => (
                "MoeGroupedMatmulBwdAttributes",
                vec![
                    (
                        "inputs",
                        obj(vec![
                            ("doutput_tensor_uid", u(a.doutput)),
                            ("token_tensor_uid", u(a.token)),
                            ("first_token_offset_tensor_uid", u(a.first_token_offset)),
                        ]),
                    ),
                    ("outputs", obj(vec![("dweight_tensor_uid", u(a.dweight))])),
                ],
            ),
        };
        m.push(("compute_data_type", dt(op.compute_data_type())));
        m.push(("name", J::S(op.name().to_string())));
        m.push(("type", J::S(ty.into())));
        nodes.push(obj(m));
    }
    let mut top = vec![
        ("compute_data_type", dt(g.compute_data_type())),
        ("intermediate_data_type", dt(g.intermediate_data_type())),
        ("io_data_type", dt(g.io_data_type())),
        (
            "is_override_shape_enabled",
            J::B(g.is_override_shape_enabled()),
        ),
        ("name", J::S(g.name().to_string())),
        ("nodes", J::A(nodes)),
        ("tensors", J::A(tensors)),
    ];
    if let Some(id) = g.id() {
        top.push(("id", J::S(uuid_text(&id))));
    }
    if let Some(v) = g.min_required_engine_api_version() {
        top.push((
            "min_required_engine_api_version",
            obj(vec![
                ("major", J::I(i64::from(v.major))),
                ("minor", J::I(i64::from(v.minor))),
                ("patch", J::I(i64::from(v.patch))),
            ]),
        ));
    }
    if let Some(p) = g.preferred_engine_id() {
        top.push(("preferred_engine_id", J::I(p)));
    }
    Ok(dump(&obj(top)))
}

fn conv_params(pre: &[i64], post: &[i64], stride: &[i64], dil: &[i64], mode: super::ConvMode) -> J {
    obj(vec![
        ("pre_padding", ints(pre)),
        ("post_padding", ints(post)),
        ("stride", ints(stride)),
        ("dilation", ints(dil)),
        ("conv_mode", upper(mode.schema_name())),
    ])
}

/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase (upstream's UUID text).
fn uuid_text(b: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, x) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{x:02x}"));
    }
    s
}

impl Graph {
    /// The graph as JSON in upstream's format (module docs): compact text, keys sorted,
    /// floats as upstream's writer prints them. Deterministic; for a graph whose floats are finite (a
    /// non-finite float is written as `null`, as upstream's writer does),
    /// `Graph::from_json(&s)?.to_json()? == s`. Tensors without a UID are written with the
    /// UIDs [`Graph::assign_uids`] would give them (the graph is unchanged).
    ///
    /// # Errors
    /// `InvalidValue` for duplicate UIDs.
    pub fn to_json(&self) -> Result<String> {
        write(self)
    }

    /// Loads a graph from JSON in upstream's format (module docs).
    ///
    /// # Errors
    /// `InvalidValue` with a message starting `JSON graph:` that names the key (and value)
    /// for malformed JSON, a duplicate key, a missing required key, a wrong value type, an
    /// unknown enum spelling or node `type`, a UID that names no tensor, or an int32 or byte
    /// value out of range; `GraphNotSupported` for a ragged-offset multiplier other than 1.
    pub fn from_json(json: &str) -> Result<Graph> {
        read(json)
    }
}

impl Graph {
    /// [`Graph::to_json`] indented for reading: the same document (same keys, order and
    /// numbers; [`Graph::from_json`] reads it back to the same graph) as nlohmann's `dump(4)`
    /// prints it — one member or element a line, four spaces a level, `": "` after keys,
    /// no trailing newline.
    ///
    /// # Errors
    /// As [`Graph::to_json`].
    ///
    /// # Example
    /// ```
    /// use hipdnn::{DataType, Graph, PointwiseAttributes, PointwiseMode, TensorAttributes};
    /// let mut g = Graph::new();
    /// g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
    /// let x = g.tensor(TensorAttributes::new("x").uid(1).dims([2, 3]).strides([3, 1]));
    /// let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    /// g.set_output(y, true).set_uid(y, 2);
    /// let pretty = g.to_json_pretty()?;
    /// assert!(pretty.starts_with("{\n    \"compute_data_type\": \"float\",\n"));
    /// let again = Graph::from_json(&pretty)?;
    /// assert_eq!(again.to_json()?, g.to_json()?);
    /// # Ok::<(), hipdnn::Error>(())
    /// ```
    pub fn to_json_pretty(&self) -> Result<String> {
        Ok(dump_pretty(&parse(&write(self)?)?, 4))
    }
}

// ---------------------------------------------------------------- reader

fn bad(msg: impl Into<String>) -> Error {
    Error::invalid(format!("JSON graph: {}", msg.into()))
}

/// A strict JSON parser: duplicate keys are refused (naming the key), integers and floats
/// stay distinct, nesting is limited to 128 levels.
struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn fail<T>(&self, what: &str) -> Result<T> {
        Err(bad(format!("{what} at byte {}", self.i)))
    }

    fn value(&mut self) -> Result<J> {
        self.ws();
        let Some(&c) = self.b.get(self.i) else {
            return self.fail("unexpected end of text");
        };
        match c {
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth > 128 {
                    return self.fail("nesting deeper than 128 levels");
                }
                let v = if c == b'{' {
                    self.object()
                } else {
                    self.array()
                };
                self.depth -= 1;
                v
            }
            b'"' => self.string().map(J::S),
            b't' => self.word("true", J::B(true)),
            b'f' => self.word("false", J::B(false)),
            b'n' => self.word("null", J::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.fail("unexpected character"),
        }
    }

    fn word(&mut self, w: &str, v: J) -> Result<J> {
        if self.b[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            self.fail("invalid literal")
        }
    }

    fn number(&mut self) -> Result<J> {
        let start = self.i;
        let mut float = false;
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'0'..=b'9' | b'-' | b'+' => {}
                b'.' | b'e' | b'E' => float = true,
                _ => break,
            }
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
        if float {
            text.parse::<f64>()
                .map(J::F)
                .or_else(|_| self.fail("invalid number"))
        } else {
            text.parse::<i64>()
                .map(J::I)
                .or_else(|_| self.fail("invalid or out-of-range integer"))
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let h = self
            .b
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok());
        let v = h.and_then(|h| u32::from_str_radix(h, 16).ok());
        match v {
            Some(v) => {
                self.i += 4;
                Ok(v)
            }
            None => self.fail("invalid \\u escape"),
        }
    }

    fn string(&mut self) -> Result<String> {
        self.i += 1; // opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.b.get(self.i) else {
                return self.fail("unterminated string");
            };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.b.get(self.i) else {
                        return self.fail("unterminated escape");
                    };
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if !self.b[self.i..].starts_with(b"\\u") {
                                    return self.fail("unpaired surrogate");
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return self.fail("invalid low surrogate");
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            match char::from_u32(cp) {
                                Some(c) => c,
                                None => return self.fail("invalid code point"),
                            }
                        }
                        _ => return self.fail("invalid escape"),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c if c < 0x20 => return self.fail("control character in string"),
                c => out.push(c),
            }
        }
        String::from_utf8(out).or_else(|_| self.fail("string is not UTF-8"))
    }

    fn array(&mut self) -> Result<J> {
        self.i += 1;
        let mut v = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(J::A(v));
        }
        loop {
            v.push(self.value()?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(J::A(v));
                }
                _ => return self.fail("expected ',' or ']'"),
            }
        }
    }

    fn object(&mut self) -> Result<J> {
        self.i += 1;
        let mut m = BTreeMap::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(J::O(m));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return self.fail("expected a key");
            }
            let k = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return self.fail("expected ':'");
            }
            self.i += 1;
            let v = self.value()?;
            if m.insert(k.clone(), v).is_some() {
                return Err(bad(format!("duplicate key '{k}'")));
            }
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(J::O(m));
                }
                _ => return self.fail("expected ',' or '}'"),
            }
        }
    }
}

/// Parses JSON text strictly: a duplicate key is refused naming it, integers and floats stay
/// distinct, nesting is limited to 128 levels.
pub fn parse(text: &str) -> Result<J> {
    let mut p = Parser {
        b: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.i != p.b.len() {
        return p.fail("trailing characters");
    }
    Ok(v)
}

type Obj = BTreeMap<String, J>;

fn as_obj<'a>(v: &'a J, at: &str) -> Result<&'a Obj> {
    match v {
        J::O(m) => Ok(m),
        _ => Err(bad(format!("'{at}' must be an object"))),
    }
}

fn req<'a>(o: &'a Obj, k: &str, at: &str) -> Result<&'a J> {
    o.get(k)
        .ok_or_else(|| bad(format!("{at}: key '{k}' is missing")))
}

fn int(v: &J, at: &str) -> Result<i64> {
    match v {
        J::I(i) => Ok(*i),
        _ => Err(bad(format!("'{at}' must be an integer"))),
    }
}

fn float(v: &J, at: &str) -> Result<f64> {
    match v {
        J::I(i) => Ok(*i as f64),
        J::F(f) => Ok(*f),
        _ => Err(bad(format!("'{at}' must be a number"))),
    }
}

fn boolean(v: &J, at: &str) -> Result<bool> {
    match v {
        J::B(b) => Ok(*b),
        _ => Err(bad(format!("'{at}' must be true or false"))),
    }
}

fn text<'a>(v: &'a J, at: &str) -> Result<&'a str> {
    match v {
        J::S(s) => Ok(s),
        _ => Err(bad(format!("'{at}' must be a string"))),
    }
}

/// A resample node's window: `(pre_padding, post_padding, stride, window)`.
type Window = (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>);

/// A resample node's window geometry (forward and backward share it): `pre_padding`,
/// `post_padding`, `stride`, `window`, each required.
fn resample_window(n: &Obj, at: &str) -> Result<Window> {
    let list = |key: &str| ints_of(req(n, key, at)?, key);
    Ok((
        list("pre_padding")?,
        list("post_padding")?,
        list("stride")?,
        list("window")?,
    ))
}

/// A resample node's `resample_mode` and `padding_mode`, spelled in lower case.
fn resample_modes(n: &Obj, at: &str) -> Result<(super::ResampleMode, super::PaddingMode)> {
    Ok((
        spelled(
            super::ResampleMode::ALL,
            |m| m.schema_name().to_ascii_lowercase(),
            req(n, "resample_mode", at)?,
            &format!("{at}.resample_mode"),
        )?,
        spelled(
            super::PaddingMode::ALL,
            |m| m.schema_name().to_ascii_lowercase(),
            req(n, "padding_mode", at)?,
            &format!("{at}.padding_mode"),
        )?,
    ))
}

fn ints_of(v: &J, at: &str) -> Result<Vec<i64>> {
    match v {
        J::A(a) => a.iter().map(|x| int(x, at)).collect(),
        _ => Err(bad(format!("'{at}' must be an array of integers"))),
    }
}

/// An enum by its JSON spelling; an unknown spelling is refused, naming key and value.
fn spelled<E: Copy>(all: &[E], spell: impl Fn(E) -> String, v: &J, at: &str) -> Result<E> {
    let s = text(v, at)?;
    all.iter()
        .copied()
        .find(|e| spell(*e) == s)
        .ok_or_else(|| bad(format!("'{at}': \"{s}\" is not a known spelling")))
}

fn data_type(v: &J, at: &str) -> Result<DataType> {
    spelled(
        DataType::ALL,
        |d| d.schema_name().to_ascii_lowercase(),
        v,
        at,
    )
}

/// Reads upstream's JSON text into a graph.
///
/// # Errors
/// BAD_PARAM naming the key (and value) for malformed JSON, a duplicate key, a missing
/// required key, a wrong type, an unknown enum spelling or node `type`, a uid that names no
/// tensor, or an int32 or byte value out of range; NOT_SUPPORTED for a ragged-offset
/// multiplier other than 1.
pub fn read(json: &str) -> Result<Graph> {
    let root = parse(json)?;
    let top = as_obj(&root, "graph")?;
    let mut g = Graph::new();
    g.set_compute_data_type(data_type(
        req(top, "compute_data_type", "graph")?,
        "compute_data_type",
    )?)
    .set_intermediate_data_type(data_type(
        req(top, "intermediate_data_type", "graph")?,
        "intermediate_data_type",
    )?)
    .set_io_data_type(data_type(
        req(top, "io_data_type", "graph")?,
        "io_data_type",
    )?)
    .set_name(text(req(top, "name", "graph")?, "name")?);
    if let Some(v) = top.get("is_override_shape_enabled") {
        g.set_override_shape_enabled(boolean(v, "is_override_shape_enabled")?);
    }
    if let Some(v) = top.get("preferred_engine_id") {
        g.set_preferred_engine_id(Some(int(v, "preferred_engine_id")?));
    }
    if let Some(v) = top.get("id") {
        g.set_id(Some(uuid_parse(text(v, "id")?)?));
    }
    if let Some(v) = top.get("min_required_engine_api_version") {
        let o = as_obj(v, "min_required_engine_api_version")?;
        let part = |k: &str| -> Result<u32> {
            let x = int(req(o, k, "min_required_engine_api_version")?, k)?;
            u32::try_from(x).map_err(|_| bad(format!("'{k}': {x} is not an unsigned 32-bit value")))
        };
        g.set_min_required_engine_api_version(Some(super::EngineApiVersion {
            major: part("major")?,
            minor: part("minor")?,
            patch: part("patch")?,
        }));
    }
    let tensors = match req(top, "tensors", "graph")? {
        J::A(a) => a,
        _ => return Err(bad("'tensors' must be an array")),
    };
    let mut by_uid: BTreeMap<i64, TensorId> = BTreeMap::new();
    let mut ragged: Vec<(TensorId, i64)> = Vec::new();
    for (i, tv) in tensors.iter().enumerate() {
        let at = format!("tensors[{i}]");
        let o = as_obj(tv, &at)?;
        let uid = int(req(o, "uid", &at)?, "uid")?;
        let dt = data_type(req(o, "data_type", &at)?, &format!("{at}.data_type"))?;
        let mut t = super::TensorAttributes::new(text(req(o, "name", &at)?, "name")?)
            .uid(uid)
            .data_type(dt)
            .dims(ints_of(req(o, "dims", &at)?, "dims")?)
            .strides(ints_of(req(o, "strides", &at)?, "strides")?)
            .is_virtual(boolean(req(o, "virtual", &at)?, "virtual")?);
        if let Some(v) = o.get("alignment") {
            t = t.alignment(int(v, "alignment")?);
        }
        if let Some(v) = o.get("is_runtime_pass_by_value") {
            t.is_runtime_pass_by_value = boolean(v, "is_runtime_pass_by_value")?;
        }
        if let Some(v) = o.get("ragged_offset_multiplier")
            && int(v, "ragged_offset_multiplier")? != 1
        {
            return Err(Error::new(
                ErrorCode::GraphNotSupported,
                format!("JSON graph: {at}: ragged_offset_multiplier other than 1 is not supported"),
            ));
        }
        if let Some(ty) = o.get("value_type") {
            let ty = text(ty, "value_type")?;
            let v = req(o, "value", &at)?;
            t.value = Some(match ty {
                "Float32Value" => TensorValue::Float32(float(v, "value")? as f32),
                "Float16Value" => TensorValue::Float16(float(v, "value")? as f32),
                "BFloat16Value" => TensorValue::BFloat16(float(v, "value")? as f32),
                "Float8Value" => TensorValue::Float8(
                    u8::try_from(int(v, "value")?)
                        .map_err(|_| bad(format!("{at}: Float8Value out of range")))?,
                ),
                "Int32Value" => TensorValue::Int32(
                    i32::try_from(int(v, "value")?)
                        .map_err(|_| bad(format!("{at}: Int32Value out of range")))?,
                ),
                "Int64Value" => TensorValue::Int64(int(v, "value")?),
                "Float64Value" => TensorValue::Float64(float(v, "value")?),
                "BoolValue" => TensorValue::Bool(boolean(v, "value")?),
                other => {
                    return Err(bad(format!(
                        "'{at}.value_type': \"{other}\" is not a known spelling"
                    )));
                }
            });
        }
        let id = g.tensor(t);
        if by_uid.insert(uid, id).is_some() {
            return Err(bad(format!("{at}: uid {uid} is used twice")));
        }
        if let Some(r) = o.get("ragged_offset_tensor_uid") {
            ragged.push((id, int(r, "ragged_offset_tensor_uid")?));
        }
    }
    for (id, r) in ragged {
        let rid = *by_uid
            .get(&r)
            .ok_or_else(|| bad(format!("ragged_offset_tensor_uid {r} names no tensor")))?;
        g.tensor_attributes_mut(id).ragged_offset = Some(rid);
    }
    let nodes = match req(top, "nodes", "graph")? {
        J::A(a) => a,
        _ => return Err(bad("'nodes' must be an array")),
    };
    for (i, nv) in nodes.iter().enumerate() {
        let at = format!("nodes[{i}]");
        let n = as_obj(nv, &at)?;
        let op = read_node(n, &at, &by_uid)?;
        g.add_node(op);
    }
    Ok(g)
}

/// Tensor-uid readers of one node: required, N (key required, null allowed), O (key
/// optional, null rejected).
struct Uids<'a> {
    by_uid: &'a BTreeMap<i64, TensorId>,
    at: &'a str,
}

impl Uids<'_> {
    fn id(&self, v: &J, k: &str) -> Result<TensorId> {
        let u = int(v, &format!("{}.{k}", self.at))?;
        self.by_uid
            .get(&u)
            .copied()
            .ok_or_else(|| bad(format!("{}.{k}: uid {u} names no tensor", self.at)))
    }
    fn req(&self, o: &Obj, k: &str) -> Result<Option<TensorId>> {
        self.id(req(o, k, self.at)?, k).map(Some)
    }
    fn n(&self, o: &Obj, k: &str) -> Result<Option<TensorId>> {
        match req(o, k, self.at)? {
            J::Null => Ok(None),
            v => self.id(v, k).map(Some),
        }
    }
    fn o(&self, o: &Obj, k: &str) -> Result<Option<TensorId>> {
        o.get(k).map(|v| self.id(v, k)).transpose()
    }
    fn list(&self, o: &Obj, k: &str) -> Result<Vec<TensorId>> {
        match req(o, k, self.at)? {
            J::A(a) => a.iter().map(|v| self.id(v, k)).collect(),
            _ => Err(bad(format!("{}.{k} must be an array of uids", self.at))),
        }
    }
}

fn opt_float_n(o: &Obj, k: &str, at: &str) -> Result<Option<f32>> {
    match req(o, k, at)? {
        J::Null => Ok(None),
        v => Ok(Some(float(v, k)? as f32)),
    }
}

fn opt_int_n(o: &Obj, k: &str, at: &str) -> Result<Option<i64>> {
    match req(o, k, at)? {
        J::Null => Ok(None),
        v => int(v, k).map(Some),
    }
}

/// `x` as a 32-bit integer (upstream's int32 fields: `block_size`, `top_k`); out of range is
/// refused naming the key (upstream wraps).
fn int32(x: i64, at: &str, k: &str) -> Result<i32> {
    i32::try_from(x).map_err(|_| bad(format!("{at}: {k} {x} is outside the 32-bit range")))
}

fn group<'a>(n: &'a Obj, k: &str, at: &str) -> Result<&'a Obj> {
    as_obj(req(n, k, at)?, &format!("{at}.{k}"))
}

/// `(pre_padding, post_padding, stride, dilation, conv_mode)` of a convolution node.
type ConvParams = (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>, super::ConvMode);

fn read_node(n: &Obj, at: &str, by_uid: &BTreeMap<i64, TensorId>) -> Result<Operation> {
    let ty = text(req(n, "type", at)?, "type")?;
    let name = text(req(n, "name", at)?, "name")?.to_string();
    let compute = data_type(
        req(n, "compute_data_type", at)?,
        &format!("{at}.compute_data_type"),
    )?;
    // Tensor references name the node by position and name: "nodes[0] 'Pointwise_0'".
    let named = format!("{at} '{name}'");
    let u = Uids { by_uid, at: &named };
    let conv = |n: &Obj| -> Result<ConvParams> {
        let p = group(n, "parameters", at)?;
        Ok((
            ints_of(req(p, "pre_padding", at)?, "pre_padding")?,
            ints_of(req(p, "post_padding", at)?, "post_padding")?,
            ints_of(req(p, "stride", at)?, "stride")?,
            ints_of(req(p, "dilation", at)?, "dilation")?,
            spelled(
                super::ConvMode::ALL,
                |m| m.schema_name().to_string(),
                req(p, "conv_mode", at)?,
                &format!("{at}.parameters.conv_mode"),
            )?,
        ))
    };
    let op: Operation = match ty {
        "ConvolutionFwdAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let (pre, post, stride, dil, mode) = conv(n)?;
            let mut a = super::ConvFpropAttributes::new();
            a.x = u.req(i, "x_tensor_uid")?;
            a.w = u.req(i, "w_tensor_uid")?;
            a.y = u.req(o, "y_tensor_uid")?;
            (
                a.pre_padding,
                a.post_padding,
                a.stride,
                a.dilation,
                a.conv_mode,
            ) = (pre, post, stride, dil, mode);
            a.into()
        }
        "ConvolutionBwdAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let (pre, post, stride, dil, mode) = conv(n)?;
            let mut a = super::ConvDgradAttributes::new();
            a.dy = u.req(i, "dy_tensor_uid")?;
            a.w = u.req(i, "w_tensor_uid")?;
            a.dx = u.req(o, "dx_tensor_uid")?;
            (
                a.pre_padding,
                a.post_padding,
                a.stride,
                a.dilation,
                a.conv_mode,
            ) = (pre, post, stride, dil, mode);
            a.into()
        }
        "ConvolutionWrwAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let (pre, post, stride, dil, mode) = conv(n)?;
            let mut a = super::ConvWgradAttributes::new();
            a.x = u.req(i, "x_tensor_uid")?;
            a.dy = u.req(i, "dy_tensor_uid")?;
            a.dw = u.req(o, "dw_tensor_uid")?;
            (
                a.pre_padding,
                a.post_padding,
                a.stride,
                a.dilation,
                a.conv_mode,
            ) = (pre, post, stride, dil, mode);
            a.into()
        }
        "PointwiseAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mode = spelled(
                super::PointwiseMode::ALL,
                |m| m.schema_name().to_ascii_lowercase(),
                req(i, "operation", at)?,
                &format!("{at}.inputs.operation"),
            )?;
            let mut a = super::PointwiseAttributes::with_mode(mode);
            a.relu_lower_clip = opt_float_n(i, "relu_lower_clip", at)?;
            a.relu_upper_clip = opt_float_n(i, "relu_upper_clip", at)?;
            a.relu_lower_clip_slope = opt_float_n(i, "relu_lower_clip_slope", at)?;
            a.axis = opt_int_n(i, "axis_tensor_uid", at)?;
            a.in_0 = u.req(i, "in_0_tensor_uid")?;
            a.in_1 = u.n(i, "in_1_tensor_uid")?;
            a.in_2 = u.n(i, "in_2_tensor_uid")?;
            a.swish_beta = opt_float_n(i, "swish_beta", at)?;
            a.elu_alpha = opt_float_n(i, "elu_alpha", at)?;
            a.softplus_beta = opt_float_n(i, "softplus_beta", at)?;
            a.out_0 = u.req(o, "out_0_tensor_uid")?;
            a.into()
        }
        "MatmulAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::MatmulAttributes::new();
            a.a = u.req(i, "a_tensor_uid")?;
            a.b = u.req(i, "b_tensor_uid")?;
            a.c = u.req(o, "c_tensor_uid")?;
            a.into()
        }
        "BatchnormInferenceAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::BatchnormInferenceAttributes::new();
            a.x = u.req(i, "x_tensor_uid")?;
            a.mean = u.req(i, "mean_tensor_uid")?;
            a.scale = u.req(i, "scale_tensor_uid")?;
            a.inv_variance = u.req(i, "inv_variance_tensor_uid")?;
            a.bias = u.req(i, "bias_tensor_uid")?;
            a.y = u.req(o, "y_tensor_uid")?;
            a.into()
        }
        "BatchnormInferenceAttributesVarianceExt" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::BatchnormInferenceVarianceExtAttributes::new();
            a.x = u.req(i, "x_tensor_uid")?;
            a.mean = u.req(i, "mean_tensor_uid")?;
            a.scale = u.req(i, "scale_tensor_uid")?;
            a.variance = u.req(i, "variance_tensor_uid")?;
            a.bias = u.req(i, "bias_tensor_uid")?;
            a.epsilon = u.req(i, "epsilon_tensor_uid")?;
            a.y = u.req(o, "y_tensor_uid")?;
            a.into()
        }
        "LayernormAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::LayernormAttributes::new();
            a.x = u.req(i, "x_tensor_uid")?;
            a.scale = u.req(i, "scale_tensor_uid")?;
            a.bias = u.req(i, "bias_tensor_uid")?;
            a.epsilon = u.req(i, "epsilon_tensor_uid")?;
            a.y = u.req(o, "y_tensor_uid")?;
            a.mean = u.n(o, "mean_tensor_uid")?;
            a.inv_variance = u.n(o, "inv_variance_tensor_uid")?;
            a.normalized_dim_count =
                int(req(n, "normalized_dim_count", at)?, "normalized_dim_count")?;
            if let Some(v) = n.get("forward_phase") {
                let p = int(v, "forward_phase")?;
                a.forward_phase = super::NormFwdPhase::ALL
                    .iter()
                    .copied()
                    .find(|x| i64::from(x.schema_value()) == p)
                    .ok_or_else(|| {
                        bad(format!("'{at}.forward_phase': {p} is not a NormFwdPhase"))
                    })?;
            }
            a.into()
        }
        "BatchnormAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::BatchnormAttributes::new();
            a.x = u.req(i, "x_tensor_uid")?;
            a.scale = u.req(i, "scale_tensor_uid")?;
            a.bias = u.req(i, "bias_tensor_uid")?;
            a.epsilon = u.req(i, "epsilon_tensor_uid")?;
            a.peer_stats = u.list(i, "peer_stats_tensor_uid")?;
            a.prev_running_mean = u.n(i, "prev_running_mean_tensor_uid")?;
            a.prev_running_variance = u.n(i, "prev_running_variance_tensor_uid")?;
            a.momentum = u.n(i, "momentum_tensor_uid")?;
            a.y = u.req(o, "y_tensor_uid")?;
            a.mean = u.n(o, "mean_tensor_uid")?;
            a.inv_variance = u.n(o, "inv_variance_tensor_uid")?;
            a.next_running_mean = u.n(o, "next_running_mean_tensor_uid")?;
            a.next_running_variance = u.n(o, "next_running_variance_tensor_uid")?;
            a.into()
        }
        "BatchnormBackwardAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::BatchnormBackwardAttributes::new();
            a.dy = u.req(i, "dy_tensor_uid")?;
            a.x = u.req(i, "x_tensor_uid")?;
            a.mean = u.n(i, "mean_tensor_uid")?;
            a.inv_variance = u.n(i, "inv_variance_tensor_uid")?;
            a.scale = u.req(i, "scale_tensor_uid")?;
            a.peer_stats = u.list(i, "peer_stats_tensor_uid")?;
            a.dbias = u.req(o, "dbias_tensor_uid")?;
            a.dscale = u.req(o, "dscale_tensor_uid")?;
            a.dx = u.req(o, "dx_tensor_uid")?;
            a.into()
        }
        "LayernormBackwardAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::LayernormBackwardAttributes::new();
            a.dy = u.req(i, "dy_tensor_uid")?;
            a.x = u.req(i, "x_tensor_uid")?;
            a.scale = u.req(i, "scale_tensor_uid")?;
            a.mean = u.n(i, "mean_tensor_uid")?;
            a.inv_variance = u.n(i, "inv_variance_tensor_uid")?;
            a.epsilon = u.n(i, "epsilon_tensor_uid")?;
            a.dx = u.req(o, "dx_tensor_uid")?;
            a.dscale = u.req(o, "dscale_tensor_uid")?;
            a.dbias = u.req(o, "dbias_tensor_uid")?;
            a.normalized_dim_count =
                int(req(n, "normalized_dim_count", at)?, "normalized_dim_count")?;
            a.into()
        }
        "RMSNormBackwardAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::RmsNormBackwardAttributes::new();
            a.dy = u.req(i, "dy_tensor_uid")?;
            a.x = u.req(i, "x_tensor_uid")?;
            a.scale = u.req(i, "scale_tensor_uid")?;
            a.inv_rms = u.req(i, "inv_rms_tensor_uid")?;
            a.dx = u.req(o, "dx_tensor_uid")?;
            a.dscale = u.req(o, "dscale_tensor_uid")?;
            a.dbias = u.o(o, "dbias_tensor_uid")?;
            a.into()
        }
        "RMSNormAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::RmsNormAttributes::new();
            a.x = u.req(i, "x_tensor_uid")?;
            a.scale = u.req(i, "scale_tensor_uid")?;
            a.epsilon = u.req(i, "epsilon_tensor_uid")?;
            a.bias = u.o(i, "bias_tensor_uid")?;
            a.y = u.req(o, "y_tensor_uid")?;
            a.inv_rms = u.o(o, "inv_rms_tensor_uid")?;
            if let Some(v) = n.get("forward_phase") {
                a.forward_phase = spelled(
                    &[
                        super::NormFwdPhase::Inference,
                        super::NormFwdPhase::Training,
                    ],
                    |m| m.schema_name().to_string(),
                    v,
                    &format!("{at}.forward_phase"),
                )?;
            }
            a.into()
        }
        "ReductionAttributes" => {
            let mut a = super::ReductionAttributes::new();
            a.mode = spelled(
                super::ReductionMode::ALL,
                |m| match m {
                    super::ReductionMode::MinOp => "min".into(),
                    super::ReductionMode::MaxOp => "max".into(),
                    m => m.schema_name().to_ascii_lowercase(),
                },
                req(n, "mode", at)?,
                &format!("{at}.mode"),
            )?;
            a.x = u.req(n, "in_tensor_uid")?;
            a.y = u.req(n, "out_tensor_uid")?;
            if let Some(v) = n.get("is_deterministic") {
                a.is_deterministic = boolean(v, "is_deterministic")?;
            }
            a.into()
        }
        "ResampleFwdAttributes" => {
            let mut a = super::ResampleFwdAttributes::new();
            a.x = u.req(n, "x_tensor_uid")?;
            a.y = u.req(n, "y_tensor_uid")?;
            a.index = u.o(n, "index_tensor_uid")?;
            (a.pre_padding, a.post_padding, a.stride, a.window) = resample_window(n, at)?;
            (a.resample_mode, a.padding_mode) = resample_modes(n, at)?;
            a.generate_index = n
                .get("generate_index")
                .map(|v| boolean(v, "generate_index"))
                .transpose()?;
            a.into()
        }
        "SdpaAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let p = group(n, "attributes", at)?;
            let mut a = super::SdpaAttributes::new();
            a.q = u.req(i, "q_tensor_uid")?;
            a.k = u.req(i, "k_tensor_uid")?;
            a.v = u.req(i, "v_tensor_uid")?;
            a.attn_mask = u.n(i, "attn_mask_tensor_uid")?;
            a.scale = u.n(i, "scale_tensor_uid")?;
            a.seq_len_q = u.n(i, "seq_len_q_tensor_uid")?;
            a.seq_len_kv = u.n(i, "seq_len_kv_tensor_uid")?;
            a.seed = u.n(i, "seed_tensor_uid")?;
            a.offset = u.n(i, "offset_tensor_uid")?;
            a.dropout_mask = u.n(i, "dropout_mask_tensor_uid")?;
            a.dropout_scale = u.n(i, "dropout_scale_tensor_uid")?;
            a.page_table_k = u.n(i, "page_table_k_tensor_uid")?;
            a.page_table_v = u.n(i, "page_table_v_tensor_uid")?;
            a.block_mask = u.n(i, "block_mask_tensor_uid")?;
            a.sink_token = u.n(i, "sink_token_tensor_uid")?;
            a.descale_q = u.n(i, "descale_q_tensor_uid")?;
            a.descale_k = u.n(i, "descale_k_tensor_uid")?;
            a.descale_v = u.n(i, "descale_v_tensor_uid")?;
            a.descale_s = u.n(i, "descale_s_tensor_uid")?;
            a.scale_s = u.n(i, "scale_s_tensor_uid")?;
            a.scale_o = u.n(i, "scale_o_tensor_uid")?;
            a.o = u.req(o, "o_tensor_uid")?;
            a.stats = u.n(o, "stats_tensor_uid")?;
            a.max = u.n(o, "max_tensor_uid")?;
            a.sum_exp = u.n(o, "sum_exp_tensor_uid")?;
            a.rng_dump = u.n(o, "rng_dump_tensor_uid")?;
            a.amax_s = u.n(o, "amax_s_tensor_uid")?;
            a.amax_o = u.n(o, "amax_o_tensor_uid")?;
            a.generate_stats = match req(p, "generate_stats", at)? {
                J::Null => None,
                v => Some(boolean(v, "generate_stats")?),
            };
            a.alibi_mask = boolean(req(p, "alibi_mask", at)?, "alibi_mask")?;
            a.padding_mask = boolean(req(p, "padding_mask", at)?, "padding_mask")?;
            a.causal_mask = boolean(req(p, "causal_mask", at)?, "causal_mask")?;
            a.causal_mask_bottom_right = boolean(
                req(p, "causal_mask_bottom_right", at)?,
                "causal_mask_bottom_right",
            )?;
            a.dropout_probability = opt_float_n(p, "dropout_probability", at)?;
            a.attn_scale_value = opt_float_n(p, "attn_scale_value", at)?;
            a.left_bound = opt_int_n(p, "left_bound", at)?;
            a.right_bound = opt_int_n(p, "right_bound", at)?;
            a.max_seq_len_kv = opt_int_n(p, "max_seq_len_kv", at)?
                .map(|x| {
                    i32::try_from(x).map_err(|_| bad(format!("{at}: max_seq_len_kv out of range")))
                })
                .transpose()?;
            a.diagonal_alignment = spelled(
                super::DiagonalAlignment::ALL,
                |m| m.schema_name().to_string(),
                req(p, "diagonal_alignment", at)?,
                &format!("{at}.attributes.diagonal_alignment"),
            )?;
            a.mma_core_mode = data_type(
                req(p, "mma_core_mode", at)?,
                &format!("{at}.attributes.mma_core_mode"),
            )?;
            a.implementation = spelled(
                super::AttentionImplementation::ALL,
                |m| m.schema_name().to_string(),
                req(p, "implementation", at)?,
                &format!("{at}.attributes.implementation"),
            )?;
            a.into()
        }
        "SdpaBackwardAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let p = group(n, "parameters", at)?;
            let mut a = super::SdpaBackwardAttributes::new();
            a.q = u.req(i, "q_tensor_uid")?;
            a.k = u.req(i, "k_tensor_uid")?;
            a.v = u.req(i, "v_tensor_uid")?;
            a.o = u.req(i, "o_tensor_uid")?;
            a.d_o = u.req(i, "do_tensor_uid")?;
            a.stats = u.req(i, "stats_tensor_uid")?;
            a.scale = u.n(i, "scale_tensor_uid")?;
            a.attn_mask = u.n(i, "attn_mask_tensor_uid")?;
            a.seq_len_q = u.n(i, "seq_len_q_tensor_uid")?;
            a.seq_len_kv = u.n(i, "seq_len_kv_tensor_uid")?;
            a.seed = u.n(i, "seed_tensor_uid")?;
            a.offset = u.n(i, "offset_tensor_uid")?;
            a.dropout_mask = u.n(i, "dropout_mask_tensor_uid")?;
            a.dropout_scale = u.n(i, "dropout_scale_tensor_uid")?;
            a.dropout_scale_inv = u.n(i, "dropout_scale_inv_tensor_uid")?;
            a.dq = u.req(o, "dq_tensor_uid")?;
            a.dk = u.req(o, "dk_tensor_uid")?;
            a.dv = u.req(o, "dv_tensor_uid")?;
            a.dbias = u.n(o, "dbias_tensor_uid")?;
            a.alibi_mask = boolean(req(p, "alibi_mask", at)?, "alibi_mask")?;
            a.padding_mask = boolean(req(p, "padding_mask", at)?, "padding_mask")?;
            a.causal_mask = boolean(req(p, "causal_mask", at)?, "causal_mask")?;
            a.causal_mask_bottom_right = boolean(
                req(p, "causal_mask_bottom_right", at)?,
                "causal_mask_bottom_right",
            )?;
            a.dropout_probability = opt_float_n(p, "dropout_probability", at)?;
            a.attn_scale_value = opt_float_n(p, "attn_scale_value", at)?;
            a.left_bound = opt_int_n(p, "left_bound", at)?;
            a.right_bound = opt_int_n(p, "right_bound", at)?;
            a.diagonal_alignment = spelled(
                super::DiagonalAlignment::ALL,
                |m| m.schema_name().to_string(),
                req(p, "diagonal_alignment", at)?,
                &format!("{at}.parameters.diagonal_alignment"),
            )?;
            a.into()
        }
        "BlockScaleDequantizeAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::BlockScaleDequantizeAttributes::new();
            a.x = u.req(i, "x_tensor_uid")?;
            a.scale = u.req(i, "scale_tensor_uid")?;
            a.y = u.req(o, "y_tensor_uid")?;
            if let Some(v) = n.get("block_size") {
                a.block_size = ints_of(v, "block_size")?
                    .into_iter()
                    .map(|x| int32(x, at, "block_size"))
                    .collect::<Result<_>>()?;
            }
            if let Some(v) = n.get("is_negative_scale") {
                a.is_negative_scale = boolean(v, "is_negative_scale")?;
            }
            a.into()
        }
        "BlockScaleQuantizeAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::BlockScaleQuantizeAttributes::new();
            a.x = u.req(i, "x_tensor_uid")?;
            a.y = u.req(o, "y_tensor_uid")?;
            a.scale = u.req(o, "scale_tensor_uid")?;
            if let Some(v) = n.get("block_size") {
                a.block_size = int32(int(v, "block_size")?, at, "block_size")?;
            }
            a.axis = n.get("axis").map(|v| int(v, "axis")).transpose()?;
            if let Some(v) = n.get("transpose") {
                a.transpose = boolean(v, "transpose")?;
            }
            a.into()
        }
        "CustomOpAttributes" => {
            let mut a = super::CustomOpAttributes::new();
            a.custom_op_id = text(req(n, "custom_op_id", at)?, "custom_op_id")?.to_string();
            a.inputs = u.list(n, "input_tensor_uids")?;
            a.outputs = u.list(n, "output_tensor_uids")?;
            a.data = ints_of(req(n, "data", at)?, "data")?
                .into_iter()
                .map(|x| {
                    u8::try_from(x)
                        .map_err(|_| bad(format!("{at}: data byte {x} is outside 0..=255")))
                })
                .collect::<Result<_>>()?;
            a.into()
        }
        "ResampleBwdAttributes" => {
            let mut a = super::ResampleBwdAttributes::new();
            a.dy = u.req(n, "dy_tensor_uid")?;
            a.dx = u.req(n, "dx_tensor_uid")?;
            a.index = u.o(n, "index_tensor_uid")?;
            (a.pre_padding, a.post_padding, a.stride, a.window) = resample_window(n, at)?;
            (a.resample_mode, a.padding_mode) = resample_modes(n, at)?;
            a.into()
        }
        "MoeGroupedMatmulAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::MoeGroupedMatmulAttributes::new();
            a.token = u.req(i, "token_tensor_uid")?;
            a.weight = u.req(i, "weight_tensor_uid")?;
            a.first_token_offset = u.req(i, "first_token_offset_tensor_uid")?;
            a.token_index = u.o(i, "token_index_tensor_uid")?;
            a.token_ks = u.o(i, "token_ks_tensor_uid")?;
            a.output = u.req(o, "output_tensor_uid")?;
            a.mode = spelled(
                super::MoeGroupedMatmulMode::ALL,
                |m| m.schema_name().to_ascii_lowercase(),
                req(n, "mode", at)?,
                &format!("{at}.mode"),
            )?;
            a.top_k = int32(int(req(n, "top_k", at)?, "top_k")?, at, "top_k")?;
            a.into()
        }
        "MoeGroupedMatmulBwdAttributes" => {
            let (i, o) = (group(n, "inputs", at)?, group(n, "outputs", at)?);
            let mut a = super::MoeGroupedMatmulBwdAttributes::new();
            a.doutput = u.req(i, "doutput_tensor_uid")?;
            a.token = u.req(i, "token_tensor_uid")?;
            a.first_token_offset = u.req(i, "first_token_offset_tensor_uid")?;
            a.dweight = u.req(o, "dweight_tensor_uid")?;
            a.into()
        }
        other => return Err(bad(format!("'{at}.type': \"{other}\" is not a node type"))),
    };
    let mut op = op;
    *op.name_mut() = name;
    *op.compute_data_type_mut() = compute;
    Ok(op)
}

fn uuid_parse(s: &str) -> Result<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return Err(bad(
            "UUID must use xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx format",
        ));
    }
    let hex: Vec<u8> = b.iter().copied().filter(|c| *c != b'-').collect();
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        let t = std::str::from_utf8(pair).unwrap_or("zz");
        out[i] = u8::from_str_radix(t, 16)
            .map_err(|_| bad("UUID contains a non-hexadecimal character"))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::*;

    #[test]
    fn doubles_print_as_nlohmann_does() {
        let cases: [(f64, &str); 16] = [
            (1.0, "1.0"),
            (100.0, "100.0"),
            (123456792.0, "123456792.0"),
            (999999986991104.0, "999999986991104.0"),
            (1.5, "1.5"),
            (123.456, "123.456"),
            (f64::from(0.0025f32), "0.0024999999441206455"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (f64::from(1e-5f32), "9.999999747378752e-06"),
            (1e16, "1e+16"),
            (1e21, "1e+21"),
            (1e-7, "1e-07"),
            (f64::from(f32::MAX), "3.4028234663852886e+38"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (f64::NAN, "null"),
        ];
        for (x, want) in cases {
            assert_eq!(fmt_f64(x), want, "{x:e}");
        }
        assert_eq!(fmt_f64(1e15), "1e+15");
        assert_eq!(fmt_f64(f64::from(1e16f32)), "1.0000000272564224e+16");
        assert_eq!(
            fmt_f64(f64::from(f32::from_bits(1))),
            "1.401298464324817e-45"
        );
        assert_eq!(fmt_f64(-2.5), "-2.5");
    }

    #[test]
    fn strings_escape_as_nlohmann_does() {
        assert_eq!(
            dump(&J::S("a\"b\\c\u{1}\n/\u{7f}é".into())),
            "\"a\\\"b\\\\c\\u0001\\n/\u{7f}é\""
        );
    }

    fn t(name: &str, uid: i64, dt: DataType, dims: &[i64]) -> TensorAttributes {
        TensorAttributes::new(name)
            .uid(uid)
            .data_type(dt)
            .dims(dims.to_vec())
            .packed_nchw()
    }

    /// The conv → bias → relu example of upstream's format (cross-checked against upstream's
    /// writer), byte for byte.
    #[test]
    fn worked_example_conv_bias_relu_is_byte_identical() {
        let mut g = Graph::new();
        g.set_name("conv_bias_relu")
            .set_compute_data_type(DataType::Float)
            .set_intermediate_data_type(DataType::Float)
            .set_io_data_type(DataType::Half)
            .set_id(Some([
                0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x46, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
                0xee, 0xff,
            ]))
            .set_min_required_engine_api_version(Some(EngineApiVersion {
                major: 1,
                minor: 0,
                patch: 0,
            }));
        let x = g.tensor(t("x", 1, DataType::Half, &[1, 16, 32, 32]));
        let w = g.tensor(t("w", 2, DataType::Half, &[32, 16, 3, 3]));
        let c = g.tensor(t("conv_out", 3, DataType::Float, &[1, 32, 32, 32]).is_virtual(true));
        let b = g.tensor(t("b", 4, DataType::Half, &[1, 32, 1, 1]));
        let bo = g.tensor(t("bias_out", 5, DataType::Float, &[1, 32, 32, 32]).is_virtual(true));
        let y = g.tensor(t("y", 6, DataType::Half, &[1, 32, 32, 32]));
        let mut conv = ConvFpropAttributes::new()
            .name("conv")
            .compute_data_type(DataType::Float)
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]);
        conv.x = Some(x);
        conv.w = Some(w);
        conv.y = Some(c);
        g.add_node(conv);
        let mut add = PointwiseAttributes::with_mode(PointwiseMode::Add)
            .name("bias")
            .compute_data_type(DataType::Float);
        add.in_0 = Some(c);
        add.in_1 = Some(b);
        add.out_0 = Some(bo);
        g.add_node(add);
        let mut relu = PointwiseAttributes::with_mode(PointwiseMode::ReluFwd)
            .name("relu")
            .compute_data_type(DataType::Float);
        relu.in_0 = Some(bo);
        relu.out_0 = Some(y);
        g.add_node(relu);
        let want = r#"{"compute_data_type":"float","id":"00112233-4455-4677-8899-aabbccddeeff","intermediate_data_type":"float","io_data_type":"half","is_override_shape_enabled":false,"min_required_engine_api_version":{"major":1,"minor":0,"patch":0},"name":"conv_bias_relu","nodes":[{"compute_data_type":"float","inputs":{"w_tensor_uid":2,"x_tensor_uid":1},"name":"conv","outputs":{"y_tensor_uid":3},"parameters":{"conv_mode":"CROSS_CORRELATION","dilation":[1,1],"post_padding":[1,1],"pre_padding":[1,1],"stride":[1,1]},"type":"ConvolutionFwdAttributes"},{"compute_data_type":"float","inputs":{"axis_tensor_uid":null,"elu_alpha":null,"in_0_tensor_uid":3,"in_1_tensor_uid":4,"in_2_tensor_uid":null,"operation":"add","relu_lower_clip":null,"relu_lower_clip_slope":null,"relu_upper_clip":null,"softplus_beta":null,"swish_beta":null},"name":"bias","outputs":{"out_0_tensor_uid":5},"type":"PointwiseAttributes"},{"compute_data_type":"float","inputs":{"axis_tensor_uid":null,"elu_alpha":null,"in_0_tensor_uid":5,"in_1_tensor_uid":null,"in_2_tensor_uid":null,"operation":"relu_fwd","relu_lower_clip":null,"relu_lower_clip_slope":null,"relu_upper_clip":null,"softplus_beta":null,"swish_beta":null},"name":"relu","outputs":{"out_0_tensor_uid":6},"type":"PointwiseAttributes"}],"tensors":[{"alignment":16,"data_type":"half","dims":[1,16,32,32],"is_runtime_pass_by_value":false,"name":"x","strides":[16384,1024,32,1],"uid":1,"virtual":false},{"alignment":16,"data_type":"half","dims":[32,16,3,3],"is_runtime_pass_by_value":false,"name":"w","strides":[144,9,3,1],"uid":2,"virtual":false},{"alignment":16,"data_type":"float","dims":[1,32,32,32],"is_runtime_pass_by_value":false,"name":"conv_out","strides":[32768,1024,32,1],"uid":3,"virtual":true},{"alignment":16,"data_type":"half","dims":[1,32,1,1],"is_runtime_pass_by_value":false,"name":"b","strides":[32,1,1,1],"uid":4,"virtual":false},{"alignment":16,"data_type":"float","dims":[1,32,32,32],"is_runtime_pass_by_value":false,"name":"bias_out","strides":[32768,1024,32,1],"uid":5,"virtual":true},{"alignment":16,"data_type":"half","dims":[1,32,32,32],"is_runtime_pass_by_value":false,"name":"y","strides":[32768,1024,32,1],"uid":6,"virtual":false}]}"#;
        assert_eq!(want.len(), 2168);
        assert_eq!(write(&g).unwrap(), want);
    }

    /// The pointwise-chain example of upstream's format (a constant and a runtime scalar),
    /// byte for byte.
    #[test]
    fn worked_example_pointwise_chain_is_byte_identical() {
        let mut g = Graph::new();
        g.set_name("pw_chain")
            .set_compute_data_type(DataType::Float)
            .set_intermediate_data_type(DataType::Float)
            .set_io_data_type(DataType::Float)
            .set_preferred_engine_id(Some(7));
        let f = DataType::Float;
        let x = g.tensor(t("x", 10, f, &[4, 8]));
        let s = g.tensor(t("scale", 11, f, &[1]).compile_time_constant(TensorValue::Float32(0.1)));
        let tt = g.tensor(t("t", 12, f, &[4, 8]).is_virtual(true));
        let b = g.tensor(t("bias", 13, f, &[1]).runtime_parameter());
        let y = g.tensor(t("y", 14, f, &[4, 8]));
        let mut mul = PointwiseAttributes::with_mode(PointwiseMode::Mul)
            .name("scale_mul")
            .compute_data_type(f);
        mul.in_0 = Some(x);
        mul.in_1 = Some(s);
        mul.out_0 = Some(tt);
        g.add_node(mul);
        let mut add = PointwiseAttributes::with_mode(PointwiseMode::Add)
            .name("shift")
            .compute_data_type(f);
        add.in_0 = Some(tt);
        add.in_1 = Some(b);
        add.out_0 = Some(y);
        g.add_node(add);
        let want = r#"{"compute_data_type":"float","intermediate_data_type":"float","io_data_type":"float","is_override_shape_enabled":false,"name":"pw_chain","nodes":[{"compute_data_type":"float","inputs":{"axis_tensor_uid":null,"elu_alpha":null,"in_0_tensor_uid":10,"in_1_tensor_uid":11,"in_2_tensor_uid":null,"operation":"mul","relu_lower_clip":null,"relu_lower_clip_slope":null,"relu_upper_clip":null,"softplus_beta":null,"swish_beta":null},"name":"scale_mul","outputs":{"out_0_tensor_uid":12},"type":"PointwiseAttributes"},{"compute_data_type":"float","inputs":{"axis_tensor_uid":null,"elu_alpha":null,"in_0_tensor_uid":12,"in_1_tensor_uid":13,"in_2_tensor_uid":null,"operation":"add","relu_lower_clip":null,"relu_lower_clip_slope":null,"relu_upper_clip":null,"softplus_beta":null,"swish_beta":null},"name":"shift","outputs":{"out_0_tensor_uid":14},"type":"PointwiseAttributes"}],"preferred_engine_id":7,"tensors":[{"alignment":16,"data_type":"float","dims":[4,8],"is_runtime_pass_by_value":false,"name":"x","strides":[8,1],"uid":10,"virtual":false},{"alignment":16,"data_type":"float","dims":[1],"is_runtime_pass_by_value":false,"name":"scale","strides":[1],"uid":11,"value":0.10000000149011612,"value_type":"Float32Value","virtual":false},{"alignment":16,"data_type":"float","dims":[4,8],"is_runtime_pass_by_value":false,"name":"t","strides":[8,1],"uid":12,"virtual":true},{"alignment":16,"data_type":"float","dims":[1],"is_runtime_pass_by_value":true,"name":"bias","strides":[1],"uid":13,"virtual":false},{"alignment":16,"data_type":"float","dims":[4,8],"is_runtime_pass_by_value":false,"name":"y","strides":[8,1],"uid":14,"virtual":false}]}"#;
        assert_eq!(want.len(), 1627);
        assert_eq!(write(&g).unwrap(), want);
    }

    const PW_CHAIN: &str = r#"{"compute_data_type":"float","intermediate_data_type":"float","io_data_type":"float","is_override_shape_enabled":false,"name":"pw_chain","nodes":[{"compute_data_type":"float","inputs":{"axis_tensor_uid":null,"elu_alpha":null,"in_0_tensor_uid":10,"in_1_tensor_uid":11,"in_2_tensor_uid":null,"operation":"mul","relu_lower_clip":null,"relu_lower_clip_slope":null,"relu_upper_clip":null,"softplus_beta":null,"swish_beta":null},"name":"scale_mul","outputs":{"out_0_tensor_uid":12},"type":"PointwiseAttributes"},{"compute_data_type":"float","inputs":{"axis_tensor_uid":null,"elu_alpha":null,"in_0_tensor_uid":12,"in_1_tensor_uid":13,"in_2_tensor_uid":null,"operation":"add","relu_lower_clip":null,"relu_lower_clip_slope":null,"relu_upper_clip":null,"softplus_beta":null,"swish_beta":null},"name":"shift","outputs":{"out_0_tensor_uid":14},"type":"PointwiseAttributes"}],"preferred_engine_id":7,"tensors":[{"alignment":16,"data_type":"float","dims":[4,8],"is_runtime_pass_by_value":false,"name":"x","strides":[8,1],"uid":10,"virtual":false},{"alignment":16,"data_type":"float","dims":[1],"is_runtime_pass_by_value":false,"name":"scale","strides":[1],"uid":11,"value":0.10000000149011612,"value_type":"Float32Value","virtual":false},{"alignment":16,"data_type":"float","dims":[4,8],"is_runtime_pass_by_value":false,"name":"t","strides":[8,1],"uid":12,"virtual":true},{"alignment":16,"data_type":"float","dims":[1],"is_runtime_pass_by_value":true,"name":"bias","strides":[1],"uid":13,"virtual":false},{"alignment":16,"data_type":"float","dims":[4,8],"is_runtime_pass_by_value":false,"name":"y","strides":[8,1],"uid":14,"virtual":false}]}"#;

    #[test]
    fn reading_the_worked_example_writes_it_back_identically() {
        let g = read(PW_CHAIN).unwrap();
        assert_eq!(write(&g).unwrap(), PW_CHAIN);
        let s = g.tensor_by_uid(11).unwrap();
        assert_eq!(
            g.tensor_attributes(s).value,
            Some(TensorValue::Float32(0.1))
        );
        // Key order and whitespace of the input do not matter; unknown keys are accepted.
        let spaced = PW_CHAIN.replacen(
            "{\"compute_data_type\"",
            "{ \"future_key\": [1, {\"x\": null}],\n \"compute_data_type\"",
            1,
        );
        assert_eq!(write(&read(&spaced).unwrap()).unwrap(), PW_CHAIN);
    }

    fn refusal(json: &str) -> String {
        let e = read(json).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue, "{}", e.message);
        e.message
    }

    #[test]
    fn what_upstream_reads_leniently_is_refused_naming_key_and_value() {
        let e = refusal(&PW_CHAIN.replace("\"operation\":\"mul\"", "\"operation\":\"multiply\""));
        assert!(
            e.contains("nodes[0].inputs.operation") && e.contains("\"multiply\""),
            "{e}"
        );
        let e = refusal(&PW_CHAIN.replacen("\"PointwiseAttributes\"", "\"PointwiseAttrs\"", 1));
        assert!(
            e.contains("nodes[0].type") && e.contains("\"PointwiseAttrs\""),
            "{e}"
        );
        let e = refusal(&PW_CHAIN.replacen(
            "{\"compute_data_type\":\"float\",",
            "{\"compute_data_type\":\"float\",\"name\":\"a\",",
            1,
        ));
        assert!(e.contains("duplicate key 'name'"), "{e}");
        let e =
            refusal(&PW_CHAIN.replacen("\"data_type\":\"float\"", "\"data_type\":\"FLOAT\"", 1));
        assert!(
            e.contains("tensors[0].data_type") && e.contains("\"FLOAT\""),
            "{e}"
        );
        let e = refusal(&PW_CHAIN.replacen("\"in_2_tensor_uid\":null,", "", 1));
        assert_eq!(
            e,
            "JSON graph: nodes[0] 'scale_mul': key 'in_2_tensor_uid' is missing"
        );
        let e = refusal(&PW_CHAIN.replacen("\"in_1_tensor_uid\":11", "\"in_1_tensor_uid\":99", 1));
        assert_eq!(
            e,
            "JSON graph: nodes[0] 'scale_mul'.in_1_tensor_uid: uid 99 names no tensor"
        );
        let e = refusal(&PW_CHAIN.replacen(
            "\"preferred_engine_id\":7",
            "\"preferred_engine_id\":null",
            1,
        ));
        assert!(e.contains("preferred_engine_id"), "{e}");
        let e = refusal("{\"a\":1} x");
        assert!(e.contains("trailing characters"), "{e}");
        let e = refusal(&"[".repeat(200));
        assert!(e.contains("nesting"), "{e}");
    }

    /// Every node kind in scope, with every optional field set somewhere, survives
    /// write → read → write unchanged, and the graph read back equals the original.
    #[test]
    fn every_node_kind_in_scope_round_trips() {
        use super::*;
        let mut g = Graph::new();
        g.set_name("all ops \"quoted\"\n")
            .set_compute_data_type(DataType::Float)
            .set_io_data_type(DataType::Half)
            .set_override_shape_enabled(true);
        let f = DataType::Float;
        let ts: Vec<TensorId> = (1..=30)
            .map(|u| {
                let mut a = t(&format!("t{u}"), u, f, &[1, 2, 3, 4]);
                if u == 29 {
                    a = a.compile_time_constant(TensorValue::Float64(1e-300));
                }
                if u == 30 {
                    a = a.runtime_parameter_with_default(TensorValue::Int64(-9000000000));
                }
                a.alignment = 64;
                g.tensor(a)
            })
            .collect();
        g.tensor_attributes_mut(ts[0]).ragged_offset = Some(ts[1]);
        let s = |i: usize| Some(ts[i]);
        let mut c = ConvWgradAttributes::new()
            .name("wgrad")
            .padding([0, 1])
            .stride([2, 2])
            .dilation([1, 1]);
        (c.x, c.dy, c.dw, c.conv_mode) = (s(0), s(1), s(2), ConvMode::Convolution);
        g.add_node(c);
        let mut c = ConvDgradAttributes::new()
            .name("dgrad")
            .padding([1, 1])
            .stride([1, 1])
            .dilation([2, 2]);
        (c.dy, c.w, c.dx) = (s(0), s(1), s(2));
        g.add_node(c);
        let mut p = PointwiseAttributes::with_mode(PointwiseMode::BinarySelect)
            .compute_data_type(DataType::Half);
        (p.in_0, p.in_1, p.in_2, p.out_0, p.axis) = (s(0), s(1), s(2), s(3), Some(2));
        (
            p.relu_lower_clip,
            p.relu_upper_clip,
            p.relu_lower_clip_slope,
        ) = (Some(0.1), Some(6.0), Some(-1e-7));
        (p.swish_beta, p.elu_alpha, p.softplus_beta) = (Some(1.5), Some(f32::MAX), Some(1e-45));
        g.add_node(p);
        let mut b = BatchnormAttributes::new();
        (b.x, b.scale, b.bias, b.epsilon, b.y, b.momentum, b.mean) =
            (s(0), s(1), s(2), s(3), s(4), s(5), s(6));
        b.peer_stats = vec![ts[7], ts[8]];
        g.add_node(b);
        let mut b = BatchnormBackwardAttributes::new();
        (b.dy, b.x, b.scale, b.dx, b.dscale, b.dbias, b.inv_variance) =
            (s(0), s(1), s(2), s(3), s(4), s(5), s(6));
        g.add_node(b);
        let mut b = BatchnormInferenceVarianceExtAttributes::new();
        (b.x, b.mean, b.variance, b.scale, b.bias, b.epsilon, b.y) =
            (s(0), s(1), s(2), s(3), s(4), s(5), s(6));
        g.add_node(b);
        let mut l = LayernormAttributes::new();
        (l.x, l.scale, l.bias, l.epsilon, l.y, l.inv_variance) =
            (s(0), s(1), s(2), s(3), s(4), s(5));
        (l.normalized_dim_count, l.forward_phase) = (3, NormFwdPhase::Training);
        g.add_node(l);
        let mut l = LayernormBackwardAttributes::new();
        (l.dy, l.x, l.scale, l.mean, l.dx, l.dscale, l.dbias) =
            (s(0), s(1), s(2), s(3), s(4), s(5), s(6));
        l.normalized_dim_count = 2;
        g.add_node(l);
        let mut r = RmsNormAttributes::new();
        (r.x, r.scale, r.epsilon, r.y, r.bias, r.forward_phase) =
            (s(0), s(1), s(2), s(3), s(4), NormFwdPhase::Inference);
        g.add_node(r);
        let mut r = RmsNormBackwardAttributes::new();
        (r.dy, r.x, r.scale, r.inv_rms, r.dx, r.dscale, r.dbias) =
            (s(0), s(1), s(2), s(3), s(4), s(5), s(6));
        g.add_node(r);
        let mut r = ReductionAttributes::new();
        (r.x, r.y, r.mode, r.is_deterministic) = (s(0), s(1), ReductionMode::MinOp, true);
        g.add_node(r);
        let mut r = ResampleFwdAttributes::new();
        (r.x, r.y, r.index, r.generate_index) = (s(0), s(1), s(2), Some(true));
        (r.window, r.stride, r.pre_padding, r.post_padding) =
            (vec![2, 2], vec![2, 2], vec![0, 0], vec![1, 1]);
        (r.resample_mode, r.padding_mode) =
            (ResampleMode::AvgPoolIncludePadding, PaddingMode::ZeroPad);
        g.add_node(r);
        let mut q = SdpaAttributes::new();
        (q.q, q.k, q.v, q.o, q.attn_mask, q.stats, q.scale_o) =
            (s(0), s(1), s(2), s(3), s(4), s(5), s(6));
        (
            q.generate_stats,
            q.causal_mask,
            q.dropout_probability,
            q.left_bound,
            q.max_seq_len_kv,
        ) = (Some(false), true, Some(0.25), Some(-3), Some(77));
        (q.diagonal_alignment, q.implementation, q.mma_core_mode) = (
            DiagonalAlignment::BottomRight,
            AttentionImplementation::Unified,
            DataType::BFloat16,
        );
        g.add_node(q);
        let mut m = MatmulAttributes::new();
        (m.a, m.b, m.c) = (s(0), s(1), s(2));
        g.add_node(m);
        let text = write(&g).unwrap();
        let back = read(&text).unwrap();
        assert_eq!(write(&back).unwrap(), text);
        assert_eq!(back, g);
    }
}
