//! Normalizations over dense row-major arrays: batchnorm inference (mean/inv_variance and
//! variance+epsilon forms) and training forward, layernorm and rmsnorm.
//!
//! Statistics are two-pass (mean, then Σ(x−mean)²), population variance, each group summed by
//! one task in row-major order: bit-identical for any thread count. Owns only arithmetic.

use super::reduce::groups;
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
    let g = groups(x.shape(), stat_dims);
    let cnt = g.first().map_or(0, Vec::len);
    let mv: Vec<(f32, f32)> = g
        .par_iter()
        .map(|idx| {
            let n = idx.len() as f32;
            let mean = idx.iter().fold(0f32, |a, &i| a + xs[i]) / n;
            let var = idx.iter().fold(0f32, |a, &i| {
                let d = xs[i] - mean;
                a + d * d
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

/// Root mean square statistics: `inv_rms = 1 / sqrt(mean(x²) + eps)` per group of
/// `stat_dims`.
pub fn inv_rms(x: &ArrayD<f32>, stat_dims: &[usize], eps: f32) -> ArrayD<f32> {
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard");
    let g = groups(x.shape(), stat_dims);
    let v: Vec<f32> = g
        .par_iter()
        .map(|idx| {
            let ms = idx.iter().fold(0f32, |a, &i| a + xs[i] * xs[i]) / idx.len() as f32;
            1.0 / (ms + eps).sqrt()
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(stat_dims), v).expect("dims")
}
