//! Pooling (resample forward): max pooling with an optional index output, average pooling
//! including or excluding padding; 1 to 3 spatial dims over dense `(N, C, spatial…)` arrays.
//!
//! Owns only arithmetic. Each output element is computed by one scan of its window in row-major
//! order (first maximum wins), one rayon task per `(n, c)` plane, so results are bit-identical
//! for any thread count.

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
