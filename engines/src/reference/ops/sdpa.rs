//! Scaled dot-product attention forward over dense `(B, H, S, D)` arrays.
//!
//! `O = softmax(scale · Q·Kᵀ + mask) · V` per (batch, head); grouped-query attention when K/V
//! have fewer heads (head h reads K/V head `h / (H / H_kv)`). Masked scores are −∞; a row with
//! every score masked gives O = 0 and stats = −∞. Owns only arithmetic; each query row is
//! computed by one task (one head, in blocks of 64 query rows: `Q·Kᵀ` and `P·V` as
//! single-threaded GEMMs whose blocking depends on the shape only), so results are
//! bit-identical for any thread count. The softmax exponentiates with [`super::exp::exp`], the
//! engine's one f32 exponential.

use super::exp::exp;
use super::gemm::sgemm;
use super::reduce::{lane_max_slice, lane_sum_slice};
use ndarray::{Array2, ArrayD, ArrayView2, ArrayViewMut2, Ix4, IxDyn, s};
use rayon::prelude::*;

/// Which scores are kept, relative to the diagonal `j = i + shift` where `shift = 0`
/// (top-left alignment) or `S_kv − S_q` (bottom-right).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Band {
    /// Bottom-right diagonal alignment.
    pub bottom_right: bool,
    /// Keep `j ≤ i + shift + right` (`Some(0)` = causal).
    pub right: Option<i64>,
    /// Keep `j > i + shift − left` (sliding window of `left` keys).
    pub left: Option<i64>,
}

/// Results of one attention: O `(B, H, S_q, D_v)` and per-row softmax statistics
/// `(B, H, S_q, 1)`: logsumexp, max and Σexp(s − max).
pub struct SdpaOut {
    /// Attention output.
    pub o: ArrayD<f32>,
    /// logsumexp of the scaled, masked scores.
    pub stats: ArrayD<f32>,
    /// Row maximum of the scaled, masked scores.
    pub max: ArrayD<f32>,
    /// Σ exp(score − max).
    pub sum_exp: ArrayD<f32>,
}

/// Attention forward. `mask` (broadcastable to `(B, H, S_q, S_kv)`) is added to the scaled
/// scores; when `mask_is_bool` a zero entry masks the score instead.
///
/// # Errors
/// A message when the mask does not broadcast or head counts do not divide.
pub fn sdpa(
    q: &ArrayD<f32>,
    k: &ArrayD<f32>,
    v: &ArrayD<f32>,
    scale: f32,
    mask: Option<(&ArrayD<f32>, bool)>,
    band: Band,
) -> Result<SdpaOut, String> {
    let (b, h, sq, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    let (hk, skv, dv) = (k.shape()[1], k.shape()[2], v.shape()[3]);
    if !hipdnn_backend::ops::sdpa::heads_compatible(h as i64, hk as i64)
        || v.shape()[1] != hk
        || k.shape()[3] != d
        || v.shape()[2] != skv
    {
        return Err(format!(
            "sdpa dims do not agree: q {:?}, k {:?}, v {:?}",
            q.shape(),
            k.shape(),
            v.shape()
        ));
    }
    let rep = h / hk;
    let qs = q.as_standard_layout();
    let ks = k.as_standard_layout();
    let vs = v.as_standard_layout();
    let (qs, ks, vs) = (
        qs.as_slice().unwrap(),
        ks.as_slice().unwrap(),
        vs.as_slice().unwrap(),
    );
    let sd = [b, h, sq, skv];
    // Broadcast, never materialized: each row reads its own mask row through the strides.
    let mview = match mask {
        Some((m, _)) => Some(
            m.broadcast(IxDyn(&sd))
                .ok_or_else(|| {
                    format!("attn_mask dims {:?} do not broadcast to {sd:?}", m.shape())
                })?
                .into_dimensionality::<Ix4>()
                .expect("4 dims"),
        ),
        None => None,
    };
    let mask_bool = mask.is_some_and(|m| m.1);
    let shift = if band.bottom_right {
        skv as i64 - sq as i64
    } else {
        0
    };
    // One task per (batch, head): blocks of QB query rows, each S = Q_blk·Kᵀ and O = P·V on
    // the tiled GEMM's single-threaded `sgemm` (the block shape depends on the problem only,
    // so every element's summation order, and the result, is the same for any thread count),
    // written straight into the head's rows of O and of the statistics.
    const QB: usize = 64;
    let arch = pulp::Arch::new();
    let mut o = vec![0f32; b * h * sq * dv];
    let (mut lse_v, mut max_v, mut sum_v) = (
        vec![0f32; b * h * sq],
        vec![0f32; b * h * sq],
        vec![0f32; b * h * sq],
    );
    if sq > 0 && dv > 0 {
        o.par_chunks_mut(sq * dv)
            .zip(lse_v.par_chunks_mut(sq))
            .zip(max_v.par_chunks_mut(sq))
            .zip(sum_v.par_chunks_mut(sq))
            .enumerate()
            .for_each(|(bh, (((oh, lse_h), max_h), sum_h))| {
                let (bi, hi) = (bh / h, bh % h);
                let kvh = bi * hk + hi / rep;
                let km = ArrayView2::from_shape((skv, d), &ks[kvh * skv * d..][..skv * d])
                    .expect("k matrix");
                let vm = ArrayView2::from_shape((skv, dv), &vs[kvh * skv * dv..][..skv * dv])
                    .expect("v matrix");
                let mut sc = Array2::<f32>::zeros((QB.min(sq), skv));
                let mut mrow_buf = Vec::new();
                for i0 in (0..sq).step_by(QB) {
                    let qb = QB.min(sq - i0);
                    let qm = ArrayView2::from_shape((qb, d), &qs[(bh * sq + i0) * d..][..qb * d])
                        .expect("q block");
                    let mut scb = sc.slice_mut(s![..qb, ..]);
                    sgemm(&qm, &km.t(), false, &mut scb);
                    for (ii, mut srow) in scb.outer_iter_mut().enumerate() {
                        let i = i0 + ii;
                        let diag = i as i64 + shift;
                        // The kept keys of this row are start..end (the band); the others are −∞.
                        let clamp = |j: i64| j.clamp(0, skv as i64) as usize;
                        let end = band.right.map_or(skv, |rb| clamp(diag + rb + 1));
                        let start = band.left.map_or(0, |lb| clamp(diag - lb + 1)).min(end);
                        let mrow: Option<&[f32]> = mview.as_ref().map(|m| {
                            let r = m.slice(s![bi, hi, i, ..]);
                            match r.to_slice() {
                                Some(sl) => sl,
                                None => {
                                    mrow_buf.clear();
                                    mrow_buf.extend(r.iter().copied());
                                    &mrow_buf[..]
                                }
                            }
                        });
                        let row = srow.as_slice_mut().expect("score rows are contiguous");
                        let task = ScoreRow {
                            row,
                            start,
                            end,
                            scale,
                            mask: mrow,
                            mask_bool,
                        };
                        (lse_h[i], max_h[i], sum_h[i]) = arch.dispatch(task);
                    }
                    let ob = &mut oh[i0 * dv..(i0 + qb) * dv];
                    let mut obv = ArrayViewMut2::from_shape((qb, dv), &mut *ob).expect("o block");
                    sgemm(&scb.view(), &vm, false, &mut obv);
                    for (ii, orow) in ob.chunks_exact_mut(dv).enumerate() {
                        let (mx, sum) = (max_h[i0 + ii], sum_h[i0 + ii]);
                        if mx == f32::NEG_INFINITY {
                            orow.fill(0.0);
                        } else {
                            orow.iter_mut().for_each(|x| *x /= sum);
                        }
                    }
                }
            });
    }
    let sdims = [b, h, sq, 1];
    let col = |v: Vec<f32>| ArrayD::from_shape_vec(IxDyn(&sdims), v).expect("dims");
    Ok(SdpaOut {
        o: ArrayD::from_shape_vec(IxDyn(&[b, h, sq, dv]), o).expect("dims"),
        stats: col(lse_v),
        max: col(max_v),
        sum_exp: col(sum_v),
    })
}

/// One row of scores, turned into `exp(s − max)` in place: the scale, the band (keys outside
/// `start..end` are −∞) and the mask (boolean: zero masks; else added), then the row's max,
/// the exponentials and their sum — one loop each, compiled for the CPU's vector unit.
/// Returns (logsumexp, max, Σexp); a row with every key masked becomes zeros with
/// (−∞, −∞, 0).
struct ScoreRow<'a> {
    row: &'a mut [f32],
    start: usize,
    end: usize,
    scale: f32,
    mask: Option<&'a [f32]>,
    mask_bool: bool,
}

impl pulp::WithSimd for ScoreRow<'_> {
    type Output = (f32, f32, f32);

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> (f32, f32, f32) {
        let ScoreRow {
            row,
            start,
            end,
            scale,
            mask,
            mask_bool,
        } = self;
        row[..start].fill(f32::NEG_INFINITY);
        row[end..].fill(f32::NEG_INFINITY);
        let kept = &mut row[start..end];
        match mask {
            None => kept.iter_mut().for_each(|v| *v *= scale),
            Some(m) if mask_bool => kept.iter_mut().zip(&m[start..end]).for_each(|(v, &m)| {
                *v = if m == 0.0 {
                    f32::NEG_INFINITY
                } else {
                    *v * scale
                };
            }),
            Some(m) => kept
                .iter_mut()
                .zip(&m[start..end])
                .for_each(|(v, &m)| *v = *v * scale + m),
        }
        let mx = lane_max_slice(row);
        if mx == f32::NEG_INFINITY {
            row.fill(0.0);
            return (f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0);
        }
        row.iter_mut().for_each(|v| *v = exp(*v - mx));
        let sum = lane_sum_slice(row, |v| v);
        (mx + sum.ln(), mx, sum)
    }
}
