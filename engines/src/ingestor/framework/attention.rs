//! What the attention families (`sdpa_fwd`, `sdpa_bwd`) read from an SDPA node the same way:
//! the scale (value, constant tensor or f32 device tensor), the band (causal top-left or
//! bottom-right, left/right bounds with a diagonal alignment), the limits they share and the
//! `flags` bits of both contracts.

use super::graph::{na, tensor};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::{DataType, DiagonalAlignment};
use hipdnn_schema::tensor_value::{TensorValue, read_tensor_value};

/// Longest query or key sequence the attention contracts take (2^28).
pub const SEQ_MAX: i64 = 1 << 28;
/// Band bounds are clamped to ±2^29 (beyond it a bound keeps or drops every key of a sequence
/// of at most [`SEQ_MAX`], and the kernels' i32 band arithmetic cannot overflow).
pub const BOUND_MAX: i64 = 1 << 29;
/// `flags` bit: the scale is read from the scale tensor's device memory.
pub const FLAG_SCALE_TENSOR: i64 = 1;
/// `flags` bit: keep `j ≤ i + shift + right`.
pub const FLAG_RIGHT: i64 = 8;
/// `flags` bit: keep `j > i + shift − left`.
pub const FLAG_LEFT: i64 = 16;

/// Largest element offset of a tensor of dims `d` and strides `s`, `None` on overflow.
pub fn span(d: &[i64], s: &[i64]) -> Option<i64> {
    d.iter().zip(s).try_fold(0i64, |acc, (d, s)| {
        acc.checked_add((d - 1).checked_mul(*s)?)
    })
}

/// How a launch gets its scale: `bits` the f32 bits of a known scale (0 when read from the
/// device), `tensor` the UID of an f32 device tensor read at execute (`flags` bit 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleArg {
    /// The f32 bits of the scale, as an i32 launch value (0 with `tensor`).
    pub bits: i64,
    /// The device scale tensor's UID.
    pub tensor: Option<i64>,
}

/// The scale of an SDPA node of `pack`: `attn_scale_value` when set, else the scale tensor's
/// constant value, else an f32 device tensor read at execute, else 1.
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack takes a floating-point scale value; tensor <u> holds
/// <v>`; `the <pack> pack reads a scale tensor of data type FLOAT from device memory; tensor
/// <u> is <dt>[, passed by value at run time]`.
pub fn read_scale(
    graph: &OperationGraph,
    pack: &str,
    value: Option<f32>,
    tensor_uid: Option<i64>,
) -> PluginResult<ScaleArg> {
    let known = |s: f32| ScaleArg {
        bits: i64::from(s.to_bits() as i32),
        tensor: None,
    };
    let (None, Some(u)) = (value, tensor_uid) else {
        return Ok(known(value.unwrap_or(1.0)));
    };
    let t = tensor(graph, u)?;
    match read_tensor_value(&t).ok().flatten() {
        Some(TensorValue::Float32(x) | TensorValue::Float16(x) | TensorValue::BFloat16(x)) => {
            Ok(known(x))
        }
        Some(TensorValue::Float64(x)) => Ok(known(x as f32)),
        Some(other) => Err(na(format!(
            "the {pack} pack takes a floating-point scale value; tensor {u} holds {other:?}"
        ))),
        None if t.is_runtime_pass_by_value() || t.data_type() != DataType::FLOAT => {
            Err(na(format!(
                "the {pack} pack reads a scale tensor of data type FLOAT from device memory; tensor {u} is {:?}{}",
                t.data_type(),
                if t.is_runtime_pass_by_value() {
                    ", passed by value at run time"
                } else {
                    ""
                }
            )))
        }
        None => Ok(ScaleArg {
            bits: 0,
            tensor: Some(u),
        }),
    }
}

/// The band of an SDPA node as launch values: (`flags` bits 3 and 4, shift, right, left).
/// Causal (top-left or bottom-right) caps `right` at 0 and sets the alignment; otherwise
/// `diagonal_alignment` sets it; shift = S_kv − S_q bottom-right, else 0; bounds clamped to
/// ±[`BOUND_MAX`]; an absent bound is 0 with its flag clear.
#[allow(clippy::too_many_arguments)]
pub fn read_band(
    causal: bool,
    causal_bottom_right: bool,
    alignment: DiagonalAlignment,
    left: Option<i64>,
    right: Option<i64>,
    sq: i64,
    skv: i64,
) -> (i64, i64, i64, i64) {
    let is_causal = causal || causal_bottom_right;
    let bottom_right = if is_causal {
        causal_bottom_right
    } else {
        alignment == DiagonalAlignment::BOTTOM_RIGHT
    };
    let right = if is_causal {
        Some(right.map_or(0, |r| r.min(0)))
    } else {
        right
    };
    let right = right.map(|x| x.clamp(-BOUND_MAX, BOUND_MAX));
    let left = left.map(|x| x.clamp(-BOUND_MAX, BOUND_MAX));
    let flags = right.map_or(0, |_| FLAG_RIGHT) | left.map_or(0, |_| FLAG_LEFT);
    let shift = if bottom_right { skv - sq } else { 0 };
    (flags, shift, right.unwrap_or(0), left.unwrap_or(0))
}

/// The head-dim bucket (`block_k`) of an entry that serves head dim `d`: max(32, `d` rounded
/// up to a power of two).
pub fn bucket(d: i64) -> i64 {
    (d.max(1) as u64).next_power_of_two().max(32) as i64
}

/// Refuses `kernel`, built for head-dim bucket `block_k`, for a graph of head dim `d` in another
/// bucket ([`bucket`]).
///
/// # Errors
/// `NOT_APPLICABLE` `kernel <k> serves head dims in the bucket <b>; the graph's head dim <d>
/// takes bucket <b'>`.
pub fn check_bucket(
    kernel: &crate::ingestor::descriptor::KernelDescriptor,
    block_k: i64,
    d: i64,
) -> PluginResult<()> {
    let want = bucket(d);
    if block_k != want {
        return Err(na(format!(
            "kernel {} serves head dims in the bucket {block_k}; the graph's head dim {d} takes bucket {want}",
            kernel.describe()
        )));
    }
    Ok(())
}

/// The restore rule both attention contracts share on `h`, `rep`, `d` and the entry's
/// `block_k`.
///
/// # Errors
/// `NOT_APPLICABLE` (load prefix) `launch values of dispatch '<d>': 'rep' must divide 'h' and
/// 'd' must not exceed 'block_k'`.
pub fn check_heads(dispatch: &str, h: i64, rep: i64, d: i64, block_k: i64) -> PluginResult<()> {
    if rep < 1 || h % rep != 0 || d > block_k {
        return Err(incompatible(format!(
            "launch values of dispatch '{}': 'rep' must divide 'h' and 'd' must not exceed 'block_k'",
            quote(dispatch)
        )));
    }
    Ok(())
}

/// `b`·`h`, the grid's y extent of an attention launch.
///
/// # Errors
/// `NOT_APPLICABLE` (load prefix) `launch values 'b' and 'h' of dispatch '<d>' give <n>
/// batch-heads; the grid takes at most 65535`.
pub fn batch_heads(dispatch: &str, b: i64, h: i64) -> PluginResult<i64> {
    let bh = b.saturating_mul(h);
    if bh > 65_535 {
        return Err(incompatible(format!(
            "launch values 'b' and 'h' of dispatch '{}' give {bh} batch-heads; the grid takes at most 65535",
            quote(dispatch)
        )));
    }
    Ok(bh)
}

/// The attention mask tensor `u` of an SDPA node of `pack` as launch values: (`mask_kind`,
/// strides over (b, h, i, j) with 0 on broadcast axes); `mask_kind` 1 BOOLEAN (0 masks the
/// score), 2 FLOAT, 3 HALF, 4 BFLOAT16 (added to the scaled score). `full` is `[B, H, S_q,
/// S_kv]`.
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack takes a BOOLEAN, FLOAT, HALF or BFLOAT16 attn_mask; tensor
/// <u> is <dt>`; `the <pack> pack needs an attn_mask that broadcasts to [B, H, S_q, S_kv] =
/// <full> with non-negative strides and offsets within 2147483647; tensor <u> has dims <d>,
/// strides <s>`.
pub fn read_mask(
    graph: &OperationGraph,
    pack: &str,
    u: i64,
    full: [i64; 4],
) -> PluginResult<(i64, [i64; 4])> {
    let t = tensor(graph, u)?;
    let kind = match t.data_type() {
        DataType::BOOLEAN => 1,
        DataType::FLOAT => 2,
        DataType::HALF => 3,
        DataType::BFLOAT16 => 4,
        other => {
            return Err(na(format!(
                "the {pack} pack takes a BOOLEAN, FLOAT, HALF or BFLOAT16 attn_mask; tensor {u} is {other:?}"
            )));
        }
    };
    let (md, ms) = super::graph::dims_strides(&t);
    let fits = md.len() <= 4
        && md
            .iter()
            .rev()
            .zip(full.iter().rev())
            .all(|(m, f)| *m == 1 || m == f)
        && ms.iter().all(|s| *s >= 0)
        && span(&md, &ms).is_some_and(|x| x <= i64::from(i32::MAX));
    if !fits {
        return Err(na(format!(
            "the {pack} pack needs an attn_mask that broadcasts to [B, H, S_q, S_kv] = {full:?} with non-negative strides and offsets within 2147483647; tensor {u} has dims {md:?}, strides {ms:?}"
        )));
    }
    let mut strides = [0i64; 4];
    let off = 4 - md.len();
    for (i, (m, s)) in md.iter().zip(&ms).enumerate() {
        strides[off + i] = if *m == 1 { 0 } else { *s };
    }
    Ok((kind, strides))
}
