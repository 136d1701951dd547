//! Scaled dot-product attention forward and backward over dense `(B, H, S, D)` arrays.
//!
//! `O = softmax(scale · Q·Kᵀ + mask) · V` per (batch, head); grouped-query attention when K/V
//! have fewer heads (head h reads K/V head `h / (H / H_kv)`). Masked scores are −∞; a row with
//! every score masked gives O = 0 and stats = −∞. Owns only arithmetic; each query row is
//! computed by one task (one head, in blocks of 64 query rows: `Q·Kᵀ` and `P·V` as
//! single-threaded GEMMs whose blocking depends on the shape only), so results are
//! bit-identical for any thread count. The softmax exponentiates with [`super::exp::exp`], the
//! engine's one f32 exponential. The backward ([`sdpa_backward`]) recomputes P from the
//! forward's logsumexp with the same scale, band and mask, one task per (batch, query head).

use super::exp::exp;
use super::gemm::sgemm;
use super::reduce::{lane_max_slice, lane_sum, lane_sum_slice};
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

impl Band {
    /// The keys `start..end` a query row keeps among `skv` keys, `diag` being the row's
    /// diagonal key `i + shift`: `end = diag + right + 1` and `start = diag − left + 1`, each
    /// clamped to `0..=skv` (`start ≤ end`); every key without a bound.
    pub fn kept(&self, diag: i64, skv: usize) -> (usize, usize) {
        let clamp = |j: i64| j.clamp(0, skv as i64) as usize;
        let end = self.right.map_or(skv, |rb| clamp(diag + rb + 1));
        let start = self.left.map_or(0, |lb| clamp(diag - lb + 1)).min(end);
        (start, end)
    }
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
                        let (start, end) = band.kept(diag, skv);
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

/// The operands of [`sdpa_backward`], dense `(B, H, S, D)` arrays (any layout; read in
/// row-major order).
pub struct SdpaBwdInputs<'a> {
    /// Queries `(B, H, S_q, D)`.
    pub q: &'a ArrayD<f32>,
    /// Keys `(B, H_kv, S_kv, D)`.
    pub k: &'a ArrayD<f32>,
    /// Values `(B, H_kv, S_kv, D_v)`.
    pub v: &'a ArrayD<f32>,
    /// The forward's output `(B, H, S_q, D_v)`.
    pub o: &'a ArrayD<f32>,
    /// The gradient of o, `(B, H, S_q, D_v)`.
    pub d_o: &'a ArrayD<f32>,
    /// The forward's logsumexp of the scaled, masked scores, `(B, H, S_q, 1)` (−∞ for a row
    /// with every key masked, as [`sdpa`] writes it).
    pub stats: &'a ArrayD<f32>,
}

/// Gradients of one attention: dq, dk, dv in the dims of q, k, v, and the bias gradient when
/// asked for.
pub struct SdpaGrads {
    /// Gradient of q `(B, H, S_q, D)`.
    pub dq: ArrayD<f32>,
    /// Gradient of k `(B, H_kv, S_kv, D)`.
    pub dk: ArrayD<f32>,
    /// Gradient of v `(B, H_kv, S_kv, D_v)`.
    pub dv: ArrayD<f32>,
    /// Gradient of the additive mask, in the `dbias_dims` given (rank 4).
    pub dbias: Option<ArrayD<f32>>,
}

/// Attention backward, from the forward's operands, output and logsumexp (PyTorch's
/// formulas): `P = exp(scale·QKᵀ + mask − stats)` (the band and the mask exactly as
/// [`sdpa`]: keys outside the band and boolean-masked keys have P = 0, and a row whose stats
/// is −∞, every key masked, has P = 0 and so gives zero gradients), `dV = Pᵀ·dO`,
/// `dP = dO·Vᵀ`, `D = rowsum(dO ∘ O)`, `dS = P ∘ (dP − D)`, `dQ = scale·dS·K`,
/// `dK = scale·dSᵀ·Q`, and `dbias` = dS summed over the axes where `dbias_dims` is 1 (a
/// rank-4 shape broadcasting to `(B, H, S_q, S_kv)`).
///
/// Grouped-query attention: each K/V head's dk and dv are the sum of the per-query-head
/// gradients of its group, added in head order. Determinism: one task per (batch, query
/// head), blocks of 64 query rows in order, each product a single-threaded GEMM whose
/// blocking depends on the shape only, dk/dv accumulated over the blocks in order; the group
/// sums and the dbias reduction ([`super::reduce::reduce`]) have a fixed order. The result is
/// bit-identical for any thread count.
///
/// # Errors
/// A message when the dims do not agree (o, dO, stats with q, k, v; the mask or `dbias_dims`
/// not broadcasting to the scores) or head counts do not divide.
pub fn sdpa_backward(
    x: &SdpaBwdInputs<'_>,
    scale: f32,
    mask: Option<(&ArrayD<f32>, bool)>,
    band: Band,
    dbias_dims: Option<&[usize]>,
) -> Result<SdpaGrads, String> {
    let SdpaBwdInputs {
        q,
        k,
        v,
        o,
        d_o,
        stats,
    } = *x;
    let (b, h, sq, d) = (q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3]);
    let (hk, skv, dv) = (k.shape()[1], k.shape()[2], v.shape()[3]);
    let od = [b, h, sq, dv];
    if !hipdnn_backend::ops::sdpa::heads_compatible(h as i64, hk as i64)
        || k.shape() != [b, hk, skv, d]
        || v.shape() != [b, hk, skv, dv]
        || o.shape() != od
        || d_o.shape() != od
        || stats.len() != b * h * sq
    {
        return Err(format!(
            "sdpa backward dims do not agree: q {:?}, k {:?}, v {:?}, o {:?}, do {:?}, stats {:?}",
            q.shape(),
            k.shape(),
            v.shape(),
            o.shape(),
            d_o.shape(),
            stats.shape()
        ));
    }
    let sd = [b, h, sq, skv];
    if let Some(dd) = dbias_dims {
        if dd.len() != 4 || !hipdnn_backend::ops::broadcast::broadcasts_to(dd, &sd) {
            return Err(format!("dbias dims {dd:?} do not broadcast to {sd:?}"));
        }
    }
    let rep = h / hk;
    let (qa, ka, va) = (
        q.as_standard_layout(),
        k.as_standard_layout(),
        v.as_standard_layout(),
    );
    let (oa, doa, sta) = (
        o.as_standard_layout(),
        d_o.as_standard_layout(),
        stats.as_standard_layout(),
    );
    let (qs, ks, vs) = (
        qa.as_slice().unwrap(),
        ka.as_slice().unwrap(),
        va.as_slice().unwrap(),
    );
    let (os, dos, lse) = (
        oa.as_slice().unwrap(),
        doa.as_slice().unwrap(),
        sta.as_slice().unwrap(),
    );
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
    const QB: usize = 64;
    let mut dq = vec![0f32; b * h * sq * d];
    // Per query head: dk and dv of the head's K/V (summed over each group afterwards).
    let mut dkp = vec![0f32; b * h * skv * d];
    let mut dvp = vec![0f32; b * h * skv * dv];
    // dS of every (batch, head), kept only for the dbias reduction.
    let mut ds_all = vec![
        0f32;
        if dbias_dims.is_some() {
            b * h * sq * skv
        } else {
            0
        }
    ];
    let ds_rows: Vec<Option<&mut [f32]>> = if dbias_dims.is_some() {
        ds_all.chunks_mut(sq * skv).map(Some).collect()
    } else {
        (0..b * h).map(|_| None).collect()
    };
    dq.par_chunks_mut(sq * d)
        .zip(dkp.par_chunks_mut(skv * d))
        .zip(dvp.par_chunks_mut(skv * dv))
        .zip(ds_rows.into_par_iter())
        .enumerate()
        .for_each(|(bh, (((dq_h, dk_h), dv_h), mut ds_h))| {
            let (bi, hi) = (bh / h, bh % h);
            let kvh = bi * hk + hi / rep;
            let km = ArrayView2::from_shape((skv, d), &ks[kvh * skv * d..][..skv * d])
                .expect("k matrix");
            let vm = ArrayView2::from_shape((skv, dv), &vs[kvh * skv * dv..][..skv * dv])
                .expect("v matrix");
            let mut dkm = ArrayViewMut2::from_shape((skv, d), dk_h).expect("dk matrix");
            let mut dvm = ArrayViewMut2::from_shape((skv, dv), dv_h).expect("dv matrix");
            let mut p = Array2::<f32>::zeros((QB.min(sq), skv));
            let mut dp = Array2::<f32>::zeros((QB.min(sq), skv));
            let mut mrow_buf = Vec::new();
            for i0 in (0..sq).step_by(QB) {
                let qb = QB.min(sq - i0);
                let qm = ArrayView2::from_shape((qb, d), &qs[(bh * sq + i0) * d..][..qb * d])
                    .expect("q block");
                let rows = (bh * sq + i0) * dv..(bh * sq + i0 + qb) * dv;
                let dom = ArrayView2::from_shape((qb, dv), &dos[rows.clone()]).expect("do block");
                let mut pb = p.slice_mut(s![..qb, ..]);
                let mut dpb = dp.slice_mut(s![..qb, ..]);
                sgemm(&qm, &km.t(), false, &mut pb);
                sgemm(&dom, &vm.t(), false, &mut dpb);
                for (ii, (mut prow, mut dprow)) in
                    pb.outer_iter_mut().zip(dpb.outer_iter_mut()).enumerate()
                {
                    let i = i0 + ii;
                    let (start, end) = band.kept(i as i64 + shift, skv);
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
                    let orow = &os[rows.start + ii * dv..][..dv];
                    let dorow = &dos[rows.start + ii * dv..][..dv];
                    let dsum = lane_sum(dorow.iter().zip(orow).map(|(a, b)| a * b), |t| t);
                    let task = GradRow {
                        p: prow.as_slice_mut().expect("score rows are contiguous"),
                        ds: dprow.as_slice_mut().expect("score rows are contiguous"),
                        start,
                        end,
                        scale,
                        mask: mrow,
                        mask_bool,
                        lse: lse[bh * sq + i],
                        dsum,
                    };
                    task.run();
                    if let Some(ds_h) = ds_h.as_deref_mut() {
                        ds_h[i * skv..][..skv].copy_from_slice(dprow.as_slice().expect("row"));
                    }
                }
                let mut dqb = ArrayViewMut2::from_shape((qb, d), &mut dq_h[i0 * d..][..qb * d])
                    .expect("dq block");
                sgemm(&dpb.view(), &km, false, &mut dqb);
                dqb.mapv_inplace(|t| t * scale);
                sgemm(&pb.t(), &dom, i0 > 0, &mut dvm);
                sgemm(&dpb.t(), &qm, i0 > 0, &mut dkm);
            }
            dkm.mapv_inplace(|t| t * scale);
        });
    // Grouped heads: each K/V head sums its group's per-query-head gradients in head order.
    let group_sum = |part: Vec<f32>, n: usize| -> Vec<f32> {
        if rep == 1 {
            return part;
        }
        let mut out = vec![0f32; b * hk * n];
        out.par_chunks_mut(n).enumerate().for_each(|(g, o)| {
            let (bi, gi) = (g / hk, g % hk);
            for r in 0..rep {
                let src = &part[(bi * h + gi * rep + r) * n..][..n];
                o.iter_mut().zip(src).for_each(|(a, &s)| *a += s);
            }
        });
        out
    };
    let dk = group_sum(dkp, skv * d);
    let dv_g = group_sum(dvp, skv * dv);
    let dbias = dbias_dims.map(|dd| {
        let ds = ArrayD::from_shape_vec(IxDyn(&sd), ds_all).expect("dims");
        super::reduce::reduce(hipdnn_schema::graph::ReductionMode::ADD, &ds, dd)
    });
    let arr =
        |dims: [usize; 4], v: Vec<f32>| ArrayD::from_shape_vec(IxDyn(&dims), v).expect("dims");
    Ok(SdpaGrads {
        dq: arr([b, h, sq, d], dq),
        dk: arr([b, hk, skv, d], dk),
        dv: arr([b, hk, skv, dv], dv_g),
        dbias,
    })
}

/// One row of the backward: on entry `p` holds the row's raw scores `q·kᵀ` and `ds` its
/// `dP = dO·Vᵀ`; on exit `p` holds `P = exp(score − lse)` (the scale, band and mask as in
/// [`ScoreRow`]; 0 outside the band, for masked keys, and on the whole row when `lse` is −∞)
/// and `ds` holds `dS = P ∘ (dP − dsum)`.
struct GradRow<'a> {
    p: &'a mut [f32],
    ds: &'a mut [f32],
    start: usize,
    end: usize,
    scale: f32,
    mask: Option<&'a [f32]>,
    mask_bool: bool,
    lse: f32,
    dsum: f32,
}

impl GradRow<'_> {
    fn run(self) {
        let GradRow {
            p,
            ds,
            start,
            end,
            scale,
            mask,
            mask_bool,
            lse,
            dsum,
        } = self;
        if lse == f32::NEG_INFINITY {
            p.fill(0.0);
            ds.fill(0.0);
            return;
        }
        for r in [&mut *p, &mut *ds] {
            r[..start].fill(0.0);
            r[end..].fill(0.0);
        }
        let (p, ds) = (&mut p[start..end], &mut ds[start..end]);
        match mask {
            None => p.iter_mut().for_each(|v| *v *= scale),
            Some(m) if mask_bool => p.iter_mut().zip(&m[start..end]).for_each(|(v, &m)| {
                *v = if m == 0.0 {
                    f32::NEG_INFINITY
                } else {
                    *v * scale
                };
            }),
            Some(m) => p
                .iter_mut()
                .zip(&m[start..end])
                .for_each(|(v, &m)| *v = *v * scale + m),
        }
        for (pv, dv) in p.iter_mut().zip(ds.iter_mut()) {
            *pv = exp(*pv - lse);
            *dv = *pv * (*dv - dsum);
        }
    }
}
