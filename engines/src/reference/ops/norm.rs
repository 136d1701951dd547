//! Normalizations over dense row-major arrays: batchnorm inference (mean/inv_variance and
//! variance+epsilon forms) and training forward, layernorm and rmsnorm.
//!
//! Statistics are two-pass (mean, then Σ(x−mean)²), population variance, each group summed by
//! one task in the fixed order of [`super::reduce::lane_sum`] (16 interleaved partial sums):
//! bit-identical for any thread count. Owns only arithmetic.

use super::reduce::{Groups, lane_sum, lane_sum_slice};
use ndarray::{ArrayD, IxDyn, Zip};
use rayon::prelude::*;

fn bcast<'a>(
    a: &'a ArrayD<f32>,
    dims: &[usize],
    what: &str,
) -> Result<ndarray::ArrayViewD<'a, f32>, String> {
    a.broadcast(IxDyn(dims))
        .ok_or_else(|| format!("{what} dims {:?} do not broadcast to {dims:?}", a.shape()))
}

/// Batchnorm inference: `y = (x − mean) · inv_variance · scale + bias`, statistics and
/// affine tensors `(1, C, 1…)` broadcast over x `(N, C, …)`.
///
/// # Errors
/// A message when a tensor does not broadcast to x.
pub fn batchnorm_inference(
    x: &ArrayD<f32>,
    mean: &ArrayD<f32>,
    inv_var: &ArrayD<f32>,
    scale: &ArrayD<f32>,
    bias: &ArrayD<f32>,
) -> Result<ArrayD<f32>, String> {
    let d = x.shape().to_vec();
    let mut y = ArrayD::zeros(IxDyn(&d));
    Zip::from(&mut y)
        .and(x)
        .and(&bcast(mean, &d, "mean")?)
        .and(&bcast(inv_var, &d, "inv_variance")?)
        .and(&bcast(scale, &d, "scale")?)
        .and(&bcast(bias, &d, "bias")?)
        .par_for_each(|y, &x, &m, &iv, &s, &b| *y = (x - m) * iv * s + b);
    Ok(y)
}

/// `1 / sqrt(variance + epsilon)` elementwise.
pub fn inv_std(var: &ArrayD<f32>, eps: f32) -> ArrayD<f32> {
    var.mapv(|v| 1.0 / (v + eps).sqrt())
}

/// Mean and population variance of each group of `x` reduced to `stat_dims`.
pub fn moments(x: &ArrayD<f32>, stat_dims: &[usize]) -> (ArrayD<f32>, ArrayD<f32>, usize) {
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard");
    let g = Groups::new(x.shape(), stat_dims);
    let cnt = g.count();
    let mv: Vec<(f32, f32)> = (0..g.len())
        .into_par_iter()
        .map(|o| {
            let n = cnt as f32;
            let vals = g.slice(xs, o).map_or_else(
                || std::borrow::Cow::Owned(g.values(xs, o)),
                std::borrow::Cow::Borrowed,
            );
            let mean = lane_sum_slice(&vals, |v| v) / n;
            let var = lane_sum_slice(&vals, |v| {
                let d = v - mean;
                d * d
            }) / n;
            (mean, var)
        })
        .collect();
    let mean =
        ArrayD::from_shape_vec(IxDyn(stat_dims), mv.iter().map(|p| p.0).collect()).expect("dims");
    let var =
        ArrayD::from_shape_vec(IxDyn(stat_dims), mv.iter().map(|p| p.1).collect()).expect("dims");
    (mean, var, cnt)
}

/// `(x − mean) · inv · scale (+ bias)` with every operand broadcast to x.
///
/// # Errors
/// A message when a tensor does not broadcast to x.
pub fn normalize(
    x: &ArrayD<f32>,
    mean: Option<&ArrayD<f32>>,
    inv: &ArrayD<f32>,
    scale: &ArrayD<f32>,
    bias: Option<&ArrayD<f32>>,
) -> Result<ArrayD<f32>, String> {
    let d = x.shape().to_vec();
    let zero = ArrayD::zeros(IxDyn(&[1]));
    let mean = mean.unwrap_or(&zero);
    let bias = bias.unwrap_or(&zero);
    if let Some(y) = normalize_rows(x, mean, inv, scale, bias)? {
        return Ok(y);
    }
    let mut y = ArrayD::zeros(IxDyn(&d));
    Zip::from(&mut y)
        .and(x)
        .and(&bcast(mean, &d, "mean")?)
        .and(&bcast(inv, &d, "statistics")?)
        .and(&bcast(scale, &d, "scale")?)
        .and(&bcast(bias, &d, "bias")?)
        .par_for_each(|y, &x, &m, &iv, &s, &b| *y = (x - m) * iv * s + b);
    Ok(y)
}

/// [`normalize`] when x `(rows…, cols…)` is dense and the statistics vary over the leading
/// dims only and scale/bias over the trailing dims only (layernorm's form): one task per
/// block of rows over contiguous slices, the same f32 operations in the same order (so the
/// same bits) as the general path. `None` when the operands are not in that form.
fn normalize_rows(
    x: &ArrayD<f32>,
    mean: &ArrayD<f32>,
    inv: &ArrayD<f32>,
    scale: &ArrayD<f32>,
    bias: &ArrayD<f32>,
) -> Result<Option<ArrayD<f32>>, String> {
    let d = x.shape();
    let r = d.len();
    let Some(xs) = x.as_slice() else {
        return Ok(None);
    };
    let stats = [mean, inv];
    let affine = [scale, bias];
    let full_rank = |a: &ArrayD<f32>| a.ndim() == r || a.len() == 1;
    if !stats.iter().chain(&affine).all(|a| full_rank(a)) {
        return Ok(None);
    }
    let dim = |a: &ArrayD<f32>, i: usize| if a.ndim() == r { a.shape()[i] } else { 1 };
    // Rows end after the last dim where a statistic varies.
    let split = stats
        .iter()
        .flat_map(|a| (0..r).filter(move |&i| dim(a, i) > 1).map(|i| i + 1))
        .max()
        .unwrap_or(0);
    let rows_ok = stats
        .iter()
        .all(|a| a.len() == 1 || (0..split).all(|i| dim(a, i) == d[i]));
    let cols_ok = affine.iter().all(|a| (0..split).all(|i| dim(a, i) == 1));
    if !rows_ok || !cols_ok {
        return Ok(None);
    }
    let (rows, cols) = (
        d[..split].iter().product::<usize>(),
        d[split..].iter().product::<usize>(),
    );
    let per_row = |a: &ArrayD<f32>, what: &str| -> Result<Vec<f32>, String> {
        Ok(bcast(
            a,
            &d[..split]
                .iter()
                .copied()
                .chain(std::iter::repeat_n(1, r - split))
                .collect::<Vec<_>>(),
            what,
        )?
        .iter()
        .copied()
        .collect())
    };
    let per_col = |a: &ArrayD<f32>, what: &str| -> Result<Vec<f32>, String> {
        let mut cd = vec![1usize; split];
        cd.extend_from_slice(&d[split..]);
        Ok(bcast(a, &cd, what)?.iter().copied().collect())
    };
    let (m, iv) = (per_row(mean, "mean")?, per_row(inv, "statistics")?);
    let (sc, bi) = (per_col(scale, "scale")?, per_col(bias, "bias")?);
    let mut y = vec![0f32; xs.len()];
    if cols > 0 {
        y.par_chunks_mut(cols)
            .zip(xs.par_chunks(cols))
            .enumerate()
            .for_each(|(i, (yr, xr))| {
                let (m, iv) = (m[i], iv[i]);
                for (((y, &x), &s), &b) in yr.iter_mut().zip(xr).zip(&sc).zip(&bi) {
                    *y = (x - m) * iv * s + b;
                }
            });
    }
    debug_assert_eq!(rows * cols, xs.len());
    Ok(Some(ArrayD::from_shape_vec(IxDyn(d), y).expect("x volume")))
}

/// Root mean square statistics: `inv_rms = 1 / sqrt(mean(x²) + eps)` per group of
/// `stat_dims`.
pub fn inv_rms(x: &ArrayD<f32>, stat_dims: &[usize], eps: f32) -> ArrayD<f32> {
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard");
    let g = Groups::new(x.shape(), stat_dims);
    let cnt = g.count();
    let v: Vec<f32> = (0..g.len())
        .into_par_iter()
        .map(|o| {
            let ss = match g.slice(xs, o) {
                Some(v) => lane_sum_slice(v, |x| x * x),
                None => lane_sum(g.offsets().iter().map(|&i| xs[g.base(o) + i]), |x| x * x),
            };
            let ms = ss / cnt as f32;
            1.0 / (ms + eps).sqrt()
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(stat_dims), v).expect("dims")
}
