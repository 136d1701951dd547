//! Pooling (resample forward): max pooling with an optional index output, average pooling
//! including or excluding padding; 1 to 3 spatial dims over dense `(N, C, spatial…)` arrays.
//!
//! Owns only arithmetic. Each output element is computed by one task scanning its window in
//! row-major order (first maximum wins), so results are bit-identical for any thread count.

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
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard");
    let sp = x.ndim() - 2;
    let ind: Vec<usize> = x.shape()[2..].to_vec();
    let outd: Vec<usize> = y_dims[2..].to_vec();
    let ivol: usize = ind.iter().product();
    let ovol: usize = outd.iter().product();
    let wvol: usize = g.window.iter().product();
    let nc = y_dims[0] * y_dims[1];
    let res: Vec<(f32, f32)> = (0..nc * ovol)
        .into_par_iter()
        .map(|flat| {
            let (ncix, mut o) = (flat / ovol, flat % ovol);
            let mut opos = vec![0usize; sp];
            for d in (0..sp).rev() {
                opos[d] = o % outd[d];
                o /= outd[d];
            }
            let src = &xs[ncix * ivol..][..ivol];
            let mut best = f32::NEG_INFINITY;
            let mut best_i = 0usize;
            let mut found = false;
            let mut sum = 0f32;
            let mut cnt = 0usize;
            for wflat in 0..wvol {
                let mut w = wflat;
                let mut pos = 0usize;
                let mut inside = true;
                let mut wpos = vec![0usize; sp];
                for d in (0..sp).rev() {
                    wpos[d] = w % g.window[d];
                    w /= g.window[d];
                }
                for d in 0..sp {
                    let v = (opos[d] * g.stride[d] + wpos[d]) as isize - g.pre[d] as isize;
                    if v < 0 || v >= ind[d] as isize {
                        inside = false;
                    }
                    pos = pos * ind[d] + v.max(0) as usize;
                }
                let val = if inside { Some(src[pos]) } else { None };
                match kind {
                    PoolKind::Max { zero_pad } => {
                        let v = match val {
                            Some(v) => v,
                            None if zero_pad => 0.0,
                            None => continue,
                        };
                        if !found || v > best {
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
            }
            match kind {
                PoolKind::Max { .. } => (best, best_i as f32),
                PoolKind::AvgIncludePadding => (sum / wvol as f32, 0.0),
                PoolKind::AvgExcludePadding => (if cnt == 0 { 0.0 } else { sum / cnt as f32 }, 0.0),
            }
        })
        .collect();
    let y = ArrayD::from_shape_vec(IxDyn(y_dims), res.iter().map(|r| r.0).collect()).expect("dims");
    let i = ArrayD::from_shape_vec(IxDyn(y_dims), res.iter().map(|r| r.1).collect()).expect("dims");
    (y, i)
}
