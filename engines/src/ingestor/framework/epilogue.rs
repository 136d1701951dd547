//! The fused epilogue of the Triton matmul and conv fprop contracts (v2): the pointwise nodes
//! after a matmul or convolution that run inside its one launch
//! (`engines/kernels/triton/epilogue.py`).
//!
//! The kernel's `epilogue` argument (a launch value, saved in plans) encodes, from bit 0:
//!
//! | bits | meaning |
//! |---|---|
//! | 0 (1) | `+ bias[col]`: a vector over the output columns (matmul N, conv K) |
//! | 1–3 (`>> 1 & 7`) | activation: 0 none, 1 ReLU, 2 GELU (erf), 3 GELU (tanh approximation), 4 sigmoid, 5 tanh, 6 SiLU (swish, beta 1) |
//! | 4 (16) | `+ residual[row, col]` before the activation |
//! | 5 (32) | `+ residual[row, col]` after the activation |
//! | 6 (64) | `* scale[0]` first (a tensor whose dims are all 1) |
//!
//! Values 0–3 mean what contract v1's epilogue meant (bias, ReLU). The kernel applies the terms
//! in the order scale, bias, residual (bit 4), activation, residual (bit 5), all in f32 on the
//! f32 accumulator, and rounds once at the store. Graphs may list the nodes in that order
//! only, each at most once; bits 4 and 5 exclude each other.
//!
//! Accuracy of the activations (the kernel builds them on `exp`: tanh(x) = 2σ(2x) − 1, GELU's
//! erf by Abramowitz & Stegun 7.1.26): absolute error ≤ 3e-7 before the output rounding,
//! against the CPU reference engine's f32 `erf`/`tanh`.

use crate::ingestor::framework::graph::dims_strides;
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::launch_values::{ContractReader, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::{DataType, Node, PointwiseMode};

/// Epilogue bit: `+ bias[col]`.
pub const BIAS: i64 = 1;
/// Epilogue bit: `+ residual` before the activation.
pub const RESIDUAL_BEFORE: i64 = 16;
/// Epilogue bit: `+ residual` after the activation.
pub const RESIDUAL_AFTER: i64 = 32;
/// Epilogue bit: `* scale[0]` first.
pub const SCALE: i64 = 64;
/// Largest epilogue value of contract v2.
pub const MAX_V2: i64 = 127;

/// The activation field (bits 1–3).
pub fn activation(code: i64) -> i64 {
    (code >> 1) & 7
}

/// `None` when `code` is a valid v2 epilogue, else why not.
pub fn invalid_reason(code: i64) -> Option<String> {
    if !(0..=MAX_V2).contains(&code) {
        Some(format!("epilogue {code} is outside [0, {MAX_V2}]"))
    } else if activation(code) > 6 {
        Some(format!(
            "epilogue {code} names activation {}, the contract knows 0 to 6",
            activation(code)
        ))
    } else if code & RESIDUAL_BEFORE != 0 && code & RESIDUAL_AFTER != 0 {
        Some(format!(
            "epilogue {code} adds the residual both before and after the activation"
        ))
    } else {
        None
    }
}

/// The activation code of a pointwise mode the epilogue fuses, or `None`.
fn activation_of(node: &hipdnn_schema::graph::PointwiseAttributes<'_>) -> Option<i64> {
    let code = match node.operation() {
        PointwiseMode::RELU_FWD => {
            let plain = node.relu_lower_clip().is_none_or(|v| v == 0.0)
                && node.relu_upper_clip().is_none()
                && node.relu_lower_clip_slope().is_none_or(|v| v == 0.0);
            return plain.then_some(1);
        }
        PointwiseMode::GELU_FWD => 2,
        PointwiseMode::GELU_APPROX_TANH_FWD => 3,
        PointwiseMode::SIGMOID_FWD => 4,
        PointwiseMode::TANH_FWD => 5,
        PointwiseMode::SWISH_FWD => {
            return node.swish_beta().is_none_or(|b| b == 1.0).then_some(6);
        }
        _ => return None,
    };
    Some(code)
}

/// The fused epilogue of a graph: its code and the tensors it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FusedEpilogue {
    /// The `epilogue` value (module docs).
    pub code: i64,
    /// UID of the bias vector (bit 0).
    pub bias: Option<i64>,
    /// UID of the residual (bit 4 or 5): dims equal to the output's.
    pub residual: Option<i64>,
    /// UID of the one-element scale (bit 6).
    pub scale: Option<i64>,
    /// UID of the graph's output (the last node's output, or `start` without epilogue nodes).
    pub out: i64,
}

/// Matches the pointwise nodes `nodes` that follow the producer whose output is `start`.
///
/// `pack` names the pack in messages; `dtype` is the producer's data type (every fused tensor
/// must have it); `is_bias(dims, strides)` says whether a tensor is a bias vector of this
/// producer, described as `bias_text` in messages.
///
/// # Errors
/// `NOT_APPLICABLE`: `the <pack> pack fuses pointwise epilogue nodes only`; `… fuses an
/// epilogue only over virtual intermediates; tensor <u> is not virtual`; `… fuses ADD(<x>,
/// <t>) where <t> is <bias_text> or a non-virtual residual of the output's dims and data type;
/// tensor <u> has dims <d>, strides <s>`; `… fuses MUL by a scale tensor of dims all 1 as the first
/// epilogue node only`; `… fuses RELU_FWD without clip or slope attributes and SWISH_FWD with
/// beta 1 only`; `… fuses scale → bias → residual → activation → residual, each at most once;
/// cannot fuse <mode> here`.
pub fn match_epilogue(
    graph: &OperationGraph,
    nodes: &[Node<'_>],
    start: i64,
    pack: &str,
    dtype: DataType,
    is_bias: &dyn Fn(&[i64], &[i64]) -> bool,
    bias_text: &str,
) -> PluginResult<FusedEpilogue> {
    let na = |m: String| PluginError::not_applicable(m);
    let mut fused = FusedEpilogue {
        code: 0,
        bias: None,
        residual: None,
        scale: None,
        out: start,
    };
    // Stages: 0 scale, 1 bias, 2 residual before, 3 activation, 4 residual after.
    let mut stage = -1;
    let order = |mode: PointwiseMode| {
        na(format!(
            "the {pack} pack fuses scale → bias → residual → activation → residual, each at most once; cannot fuse {mode:?} here"
        ))
    };
    for node in nodes {
        let pw = node.attributes_as_pointwise_attributes().ok_or_else(|| {
            na(format!(
                "the {pack} pack fuses pointwise epilogue nodes only"
            ))
        })?;
        let cur = fused.out;
        let cur_t = tensor(graph, cur)?;
        if !cur_t.virtual_() {
            return Err(na(format!(
                "the {pack} pack fuses an epilogue only over virtual intermediates; tensor {cur} is not virtual"
            )));
        }
        let (i0, i1) = (pw.in_0_tensor_uid(), pw.in_1_tensor_uid());
        let other = match i1 {
            Some(b) if i0 == cur => Some(b),
            Some(b) if b == cur => Some(i0),
            _ => None,
        };
        let mode = pw.operation();
        match mode {
            PointwiseMode::ADD => {
                let other = other.ok_or_else(|| order(mode))?;
                let t = tensor(graph, other)?;
                let (d, s) = dims_strides(&t);
                let (cd, _) = dims_strides(&cur_t);
                let same_type = t.data_type() == dtype;
                let bias_shape = same_type && is_bias(&d, &s);
                let residual_shape = same_type && d == cd && !t.virtual_();
                if bias_shape && stage < 1 {
                    stage = 1;
                    fused.code |= BIAS;
                    fused.bias = Some(other);
                } else if residual_shape && fused.residual.is_none() {
                    let bit = if stage < 3 {
                        stage = 2;
                        RESIDUAL_BEFORE
                    } else {
                        stage = 4;
                        RESIDUAL_AFTER
                    };
                    fused.code |= bit;
                    fused.residual = Some(other);
                } else if bias_shape || residual_shape {
                    return Err(order(mode));
                } else {
                    return Err(na(format!(
                        "the {pack} pack fuses ADD(x, t) where t is {bias_text} or a non-virtual residual of the output's dims and data type; tensor {other} has dims {d:?}, strides {s:?}"
                    )));
                }
            }
            PointwiseMode::MUL => {
                let other = other.ok_or_else(|| order(mode))?;
                let t = tensor(graph, other)?;
                let (d, _) = dims_strides(&t);
                if stage >= 0 || t.data_type() != dtype || d.iter().any(|v| *v != 1) {
                    return Err(na(format!(
                        "the {pack} pack fuses MUL by a scale tensor of dims all 1 as the first epilogue node only; tensor {other} has dims {d:?}"
                    )));
                }
                stage = 0;
                fused.code |= SCALE;
                fused.scale = Some(other);
            }
            _ => {
                let act = match activation_of(&pw) {
                    Some(a) => a,
                    None if matches!(mode, PointwiseMode::RELU_FWD | PointwiseMode::SWISH_FWD) => {
                        return Err(na(format!(
                            "the {pack} pack fuses RELU_FWD without clip or slope attributes and SWISH_FWD with beta 1 only"
                        )));
                    }
                    None => return Err(order(mode)),
                };
                if stage >= 3 || i0 != cur {
                    return Err(order(mode));
                }
                stage = 3;
                fused.code |= act << 1;
            }
        }
        fused.out = pw.out_0_tensor_uid();
    }
    Ok(fused)
}

/// The epilogue part of saved launch values: the code and the tensors it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedEpilogue {
    /// The `epilogue` value.
    pub code: i64,
    /// `bias.uid`, present exactly when bit 0 is set.
    pub bias: Option<i64>,
    /// `res.uid`, present exactly when bit 4 or 5 is set (v2).
    pub residual: Option<i64>,
    /// `scale.uid`, present exactly when bit 6 is set (v2).
    pub scale: Option<i64>,
}

/// Reads `epilogue`, `bias.uid`, `res.uid` and `scale.uid` saved under `dispatch` for
/// contract `version` of the matmul or conv fprop pack (`values` are the reader's values).
/// Version 1 takes epilogue [0, 3] (bit 0 bias, bit 1 ReLU) and no residual or scale.
///
/// # Errors
/// `NOT_APPLICABLE` (load prefix): the reader texts; `launch values of dispatch '<d>' hold
/// epilogue <e>: <why>` (v2, [`invalid_reason`]); `launch value '<name>' of dispatch '<d>'
/// must be present exactly when 'epilogue' <bits> is set; epilogue is <e>` (bias: `bit 1` in
/// v1's wording, `bit 0` in v2's; `res.uid`: `bit 4 or 5`; `scale.uid`: `bit 6`).
pub(crate) fn read_saved(
    r: &ContractReader<'_>,
    values: &LaunchValues,
    dispatch: &str,
    version: u8,
) -> PluginResult<SavedEpilogue> {
    let d = quote(dispatch);
    let code = if version >= 2 {
        let e = r.int("epilogue", 0, MAX_V2)?;
        if let Some(why) = invalid_reason(e) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' hold epilogue {e}: {why}"
            )));
        }
        e
    } else {
        r.int("epilogue", 0, 3)?
    };
    let optional = |name: &str, present: bool, bits: &str| -> PluginResult<Option<i64>> {
        if present {
            Ok(Some(r.int(name, i64::MIN, i64::MAX)?))
        } else if values.contains_key(name) {
            Err(incompatible(format!(
                "launch value '{name}' of dispatch '{d}' must be present exactly when 'epilogue' {bits} is set; epilogue is {code}"
            )))
        } else {
            Ok(None)
        }
    };
    let bias_bits = if version >= 2 { "bit 0" } else { "bit 1" };
    Ok(SavedEpilogue {
        code,
        bias: optional("bias.uid", code & BIAS != 0, bias_bits)?,
        residual: optional(
            "res.uid",
            code & (RESIDUAL_BEFORE | RESIDUAL_AFTER) != 0,
            "bit 4 or 5",
        )?,
        scale: optional("scale.uid", code & SCALE != 0, "bit 6")?,
    })
}
