//! Pooling (resample forward): max pooling with an optional index output, average pooling
//! including or excluding padding; 1 to 3 spatial dims over dense `(N, C, spatial…)` arrays.
//! And its backward ([`pool_backward`]): the input gradient through the max-pool index or the
//! average's divisor.
//!
//! Owns only arithmetic. Each output element is computed by one scan of its window in row-major
//! order (first maximum wins), one rayon task per `(n, c)` plane, so results are bit-identical
//! for any thread count; the backward writes each `(n, c)` plane of dx from one task, in a
//! fixed order.

use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;

/// Pooling kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    /// Max over the window. `zero_pad`: padded positions count as 0 (`ZERO_PAD`), else they
    /// are skipped (`NEG_INF_PAD` / unset).
    Max {
        /// Padded positions take part as zeros.
        zero_pad: bool,
    },
    /// Mean over the window divided by the full window volume.
    AvgIncludePadding,
    /// Mean over the in-bounds positions of the window.
    AvgExcludePadding,
}

/// Pooling geometry (one entry per spatial dim).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolGeometry {
    /// Window size.
    pub window: Vec<usize>,
    /// Stride.
    pub stride: Vec<usize>,
    /// Padding before.
    pub pre: Vec<usize>,
    /// Padding after.
    pub post: Vec<usize>,
}

/// Pools x `(N, C, in…)` into `(N, C, out…)` = `y_dims`; returns y and the index of each
/// maximum as its row-major position inside the window (0 for average pooling).
pub fn pool(
    x: &ArrayD<f32>,
    y_dims: &[usize],
    kind: PoolKind,
    g: &PoolGeometry,
) -> (ArrayD<f32>, ArrayD<f32>) {
    let (y, i) = pool_with(x, y_dims, kind, g, true);
    (y, i.expect("index asked for"))
}

fn pad3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[3 - v.len()..].copy_from_slice(v);
    out
}

/// [`pool`], computing the index output only when `index` is set. One rayon task per
/// `(n, c)` plane, outputs in row-major order, each window scanned in row-major order (so the
/// same comparisons and sums, in the same order, as one task per output): no allocation
/// besides the outputs.
pub fn pool_with(
    x: &ArrayD<f32>,
    y_dims: &[usize],
    kind: PoolKind,
    g: &PoolGeometry,
    index: bool,
) -> (ArrayD<f32>, Option<ArrayD<f32>>) {
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard");
    // Every shape promoted to 3 spatial dims (leading window 1, stride 1, no padding).
    let ind = pad3(&x.shape()[2..], 1);
    let outd = pad3(&y_dims[2..], 1);
    let (win, stride, pre) = (pad3(&g.window, 1), pad3(&g.stride, 1), pad3(&g.pre, 0));
    let ivol: usize = ind.iter().product();
    let ovol: usize = outd.iter().product();
    let wvol: usize = win.iter().product();
    let nc = y_dims[0] * y_dims[1];
    let mut y = vec![0f32; nc * ovol];
    let mut iv = vec![0f32; if index { nc * ovol } else { 0 }];
    // Input coordinate of output `o`, window tap `t` along dim `d` (None in the padding).
    let at = |d: usize, o: usize, t: usize| -> Option<usize> {
        let v = (o * stride[d] + t) as isize - pre[d] as isize;
        (v >= 0 && v < ind[d] as isize).then_some(v as usize)
    };
    // Outputs whose whole window lies inside the input, per dim: `lo..hi`.
    let inner: [(usize, usize); 3] = std::array::from_fn(|d| {
        let lo = pre[d].div_ceil(stride[d]);
        let hi = if ind[d] + pre[d] >= win[d] {
            ((ind[d] + pre[d] - win[d]) / stride[d] + 1).min(outd[d])
        } else {
            0
        };
        (lo, hi.max(lo))
    });
    let plane = |src: &[f32], yp: &mut [f32], mut ip: Option<&mut [f32]>| {
        // A row's outputs `a..b` (whole windows inside the input) are scanned together, tap
        // by tap in window order, each output keeping its own maximum / sum (one allocation per
        // plane); the others one by one with the padding checks.
        let (a, b) = inner[2];
        let is_max = matches!(kind, PoolKind::Max { .. });
        let (mut best, mut best_i, mut sum) =
            (vec![0f32; b - a], vec![0u32; b - a], vec![0f32; b - a]);
        let mut q = 0;
        for od in 0..outd[0] {
            for oh in 0..outd[1] {
                let rows_inside = (inner[0].0..inner[0].1).contains(&od)
                    && (inner[1].0..inner[1].1).contains(&oh);
                if rows_inside && a < b {
                    let r0 = (od * stride[0] - pre[0]) * ind[1] + oh * stride[1] - pre[1];
                    let mut t = 0u32;
                    for wd in 0..win[0] {
                        for wh in 0..win[1] {
                            let row = &src[(r0 + wd * ind[1] + wh) * ind[2]..][..ind[2]];
                            for ww in 0..win[2] {
                                let taps =
                                    row[a * stride[2] + ww - pre[2]..].iter().step_by(stride[2]);
                                if !is_max {
                                    if t == 0 {
                                        sum.fill(0.0);
                                    }
                                    sum.iter_mut().zip(taps).for_each(|(s, &v)| *s += v);
                                } else if t == 0 {
                                    best.iter_mut().zip(taps).for_each(|(m, &v)| *m = v);
                                    best_i.fill(0);
                                } else {
                                    for ((m, i), &v) in best.iter_mut().zip(&mut best_i).zip(taps) {
                                        let gt = v > *m;
                                        *m = if gt { v } else { *m };
                                        *i = if gt { t } else { *i };
                                    }
                                }
                                t += 1;
                            }
                        }
                    }
                    let out = &mut yp[q + a..q + b];
                    if is_max {
                        out.copy_from_slice(&best);
                    } else {
                        out.iter_mut()
                            .zip(&sum)
                            .for_each(|(o, s)| *o = s / wvol as f32);
                    }
                    if let Some(ip) = ip.as_deref_mut() {
                        ip[q + a..q + b]
                            .iter_mut()
                            .zip(&best_i)
                            .for_each(|(o, &i)| *o = if is_max { i as f32 } else { 0.0 });
                    }
                }
                for ow in 0..outd[2] {
                    if rows_inside && (a..b).contains(&ow) {
                        continue;
                    }
                    let mut best = f32::NEG_INFINITY;
                    let mut best_i = 0usize;
                    let mut found = false;
                    let mut sum = 0f32;
                    let mut cnt = 0usize;
                    let mut wflat = 0;
                    for wd in 0..win[0] {
                        let id = at(0, od, wd);
                        for wh in 0..win[1] {
                            let ih = at(1, oh, wh);
                            for ww in 0..win[2] {
                                let iw = at(2, ow, ww);
                                let val = match (id, ih, iw) {
                                    (Some(a), Some(b), Some(c)) => {
                                        Some(src[(a * ind[1] + b) * ind[2] + c])
                                    }
                                    _ => None,
                                };
                                match kind {
                                    PoolKind::Max { zero_pad } => {
                                        let v = match val {
                                            Some(v) => Some(v),
                                            None if zero_pad => Some(0.0),
                                            None => None,
                                        };
                                        if let Some(v) = v
                                            && (!found || v > best)
                                        {
                                            best = v;
                                            best_i = wflat;
                                            found = true;
                                        }
                                    }
                                    _ => {
                                        if let Some(v) = val {
                                            sum += v;
                                            cnt += 1;
                                        }
                                    }
                                }
                                wflat += 1;
                            }
                        }
                    }
                    yp[q + ow] = match kind {
                        PoolKind::Max { .. } => best,
                        PoolKind::AvgIncludePadding => sum / wvol as f32,
                        PoolKind::AvgExcludePadding => {
                            if cnt == 0 {
                                0.0
                            } else {
                                sum / cnt as f32
                            }
                        }
                    };
                    if let Some(ip) = ip.as_deref_mut() {
                        ip[q + ow] = match kind {
                            PoolKind::Max { .. } => best_i as f32,
                            _ => 0.0,
                        };
                    }
                }
                q += outd[2];
            }
        }
    };
    if ovol > 0 {
        let src = |i: usize| &xs[i * ivol..][..ivol];
        if index {
            y.par_chunks_mut(ovol)
                .zip(iv.par_chunks_mut(ovol))
                .enumerate()
                .for_each(|(i, (yp, ip))| plane(src(i), yp, Some(ip)));
        } else {
            y.par_chunks_mut(ovol)
                .enumerate()
                .for_each(|(i, yp)| plane(src(i), yp, None));
        }
    }
    let y = ArrayD::from_shape_vec(IxDyn(y_dims), y).expect("dims");
    let i = index.then(|| ArrayD::from_shape_vec(IxDyn(y_dims), iv).expect("dims"));
    (y, i)
}

/// What resample backward routes each output gradient through (the forward's [`PoolKind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolGrad<'a> {
    /// Max pooling: each `dy` element goes whole to the input at its window position, the
    /// forward's index (row-major position inside the window, as [`pool`] writes it), one per
    /// `dy` element in dense row-major `(N, C, out…)` order; a position in the padding (a
    /// zero-padded maximum, or a window with no input inside) sends its gradient nowhere.
    Max(&'a [u32]),
    /// Average including padding: each `dy` element divided by the window volume goes to every
    /// in-bounds position of its window.
    AvgIncludePadding,
    /// Average excluding padding: each `dy` element divided by its window's in-bounds count
    /// goes to every in-bounds position of its window (nothing when the count is 0).
    AvgExcludePadding,
}

/// The number of positions of a pooling window (the product of `g.window`): a max-pool index
/// is valid when it is below this.
pub fn window_volume(g: &PoolGeometry) -> usize {
    g.window.iter().product()
}

/// The max-pool index `v` (integers, as read from the index tensor) as window positions, or
/// the position in `v` of the first value outside `0..window_volume` (a damaged index: the
/// caller refuses it, so [`pool_backward`] never routes a gradient outside the window).
///
/// # Errors
/// `Err(i)`: `v[i]` is negative or at least `window_volume`.
pub fn window_positions(v: &[i64], window_volume: usize) -> Result<Vec<u32>, usize> {
    v.iter()
        .enumerate()
        .map(|(i, &t)| match u32::try_from(t) {
            Ok(t) if (t as usize) < window_volume => Ok(t),
            _ => Err(i),
        })
        .collect()
}

/// Resample (pooling) backward: the input gradient `dx` `(N, C, in…)` = `x_dims` from the
/// output gradient `dy` `(N, C, out…)` of a forward with geometry `g` (1 to 3 spatial dims,
/// `out` the forward's output extents of `in`), as PyTorch's max / average pooling backward.
///
/// Overlapping windows accumulate. One rayon task per `(n, c)` plane writes that plane of `dx`
/// alone, visiting the outputs in row-major order and each window's positions in row-major
/// order (sums in f32, in that fixed order), so the result is bit-identical for any thread
/// count. An average's share is `dy / divisor`, computed once per output.
///
/// # Panics
/// When `dy` is not `(N, C, out…)` of `x_dims` under `g`, when a [`PoolGrad::Max`] index
/// does not have one entry per `dy` element, or an entry is outside the window (callers check
/// with [`window_positions`]).
pub fn pool_backward(
    dy: &ArrayD<f32>,
    x_dims: &[usize],
    grad: PoolGrad<'_>,
    g: &PoolGeometry,
) -> ArrayD<f32> {
    let dys = dy.as_standard_layout();
    let dys = dys.as_slice().expect("standard");
    let ind = pad3(&x_dims[2..], 1);
    let outd = pad3(&dy.shape()[2..], 1);
    let (win, stride, pre) = (pad3(&g.window, 1), pad3(&g.stride, 1), pad3(&g.pre, 0));
    let ivol: usize = ind.iter().product();
    let ovol: usize = outd.iter().product();
    let wvol: usize = win.iter().product();
    let nc = x_dims[0] * x_dims[1];
    assert_eq!(dys.len(), nc * ovol, "dy is (N, C, out…) of x");
    if let PoolGrad::Max(idx) = grad {
        assert_eq!(idx.len(), dys.len(), "one index per dy element");
    }
    // Input coordinate of window position 0 of output `o` along dim `d` (may be negative).
    let first = |d: usize, o: usize| (o * stride[d]) as isize - pre[d] as isize;
    // The window positions of output `o` along `d` that land inside the input: `lo..hi`.
    let inside = |d: usize, o: usize| -> (usize, usize) {
        let s = first(d, o);
        let lo = (-s).clamp(0, win[d] as isize) as usize;
        let hi = (ind[d] as isize - s).clamp(0, win[d] as isize) as usize;
        (lo, hi.max(lo))
    };
    let plane = |i: usize, dxp: &mut [f32]| {
        let dyp = &dys[i * ovol..][..ovol];
        let mut q = 0;
        for od in 0..outd[0] {
            for oh in 0..outd[1] {
                for ow in 0..outd[2] {
                    let o = [od, oh, ow];
                    let gv = dyp[q];
                    match grad {
                        PoolGrad::Max(idx) => {
                            let t = idx[i * ovol + q] as usize;
                            assert!(t < wvol, "max-pool index {t} outside the window");
                            let tap = [t / (win[1] * win[2]), t / win[2] % win[1], t % win[2]];
                            let mut pos = 0usize;
                            let mut within = true;
                            for d in 0..3 {
                                let v = first(d, o[d]) + tap[d] as isize;
                                within &= v >= 0 && v < ind[d] as isize;
                                pos = pos * ind[d] + v.max(0) as usize;
                            }
                            if within {
                                dxp[pos] += gv;
                            }
                        }
                        PoolGrad::AvgIncludePadding | PoolGrad::AvgExcludePadding => {
                            let r: [(usize, usize); 3] = std::array::from_fn(|d| inside(d, o[d]));
                            let cnt: usize = r.iter().map(|(lo, hi)| hi - lo).product();
                            if cnt > 0 {
                                let div = if grad == PoolGrad::AvgIncludePadding {
                                    wvol
                                } else {
                                    cnt
                                };
                                let share = gv / div as f32;
                                let at =
                                    |d: usize, t: usize| (first(d, o[d]) + t as isize) as usize;
                                for td in r[0].0..r[0].1 {
                                    for th in r[1].0..r[1].1 {
                                        let row = (at(0, td) * ind[1] + at(1, th)) * ind[2];
                                        let row =
                                            &mut dxp[row + at(2, r[2].0)..][..r[2].1 - r[2].0];
                                        row.iter_mut().for_each(|v| *v += share);
                                    }
                                }
                            }
                        }
                    }
                    q += 1;
                }
            }
        }
    };
    let mut dx = vec![0f32; nc * ivol];
    if ivol > 0 {
        dx.par_chunks_mut(ivol)
            .enumerate()
            .for_each(|(i, p)| plane(i, p));
    }
    ArrayD::from_shape_vec(IxDyn(x_dims), dx).expect("dims")
}
