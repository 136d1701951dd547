//! Normalizations over dense row-major arrays: batchnorm inference (mean/inv_variance and
//! variance+epsilon forms) and training forward, layernorm and rmsnorm, and their backward
//! ([`norm_backward`], one formula for the three, summed in f64).
//!
//! Statistics are two-pass (mean, then Σ(x−mean)²), population variance, each group summed by
//! one task in the fixed order of [`super::reduce::lane_sum`] (16 interleaved partial sums):
//! bit-identical for any thread count. Owns only arithmetic.

use super::PAR_MIN_ELEMS;
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

/// A normalization's output and statistics: `(y, mean, inv)`.
pub type Normalized = (ArrayD<f32>, ArrayD<f32>, ArrayD<f32>);

/// Layernorm forward: per group of x reduced to `stat_dims`, `mean`, population variance and
/// `inv = 1 / sqrt(var + eps)`, then `y = (x − mean) · inv · scale + bias` → `(y, mean, inv)`.
/// When the groups are x's rows (`stat_dims` = x's leading dims, then 1s; x dense) and scale
/// and bias vary over the trailing dims only, each row is done in one task while it is in
/// cache (statistics and output in one sweep over x); otherwise [`moments`], [`inv_std`] and
/// [`normalize`]. Both paths do the same f32 operations in the same order: the same bits.
///
/// # Errors
/// A message when scale or bias does not broadcast to x.
pub fn layernorm(
    x: &ArrayD<f32>,
    stat_dims: &[usize],
    scale: &ArrayD<f32>,
    bias: &ArrayD<f32>,
    eps: f32,
) -> Result<Normalized, String> {
    let mut y = vec![0f32; x.len()];
    let (mean, inv) = layernorm_into(x, stat_dims, scale, bias, eps, &mut y)?;
    let y = ArrayD::from_shape_vec(IxDyn(x.shape()), y).expect("x volume");
    Ok((y, mean, inv))
}

/// [`layernorm`] with y written into `out` (x's elements in row-major order: a bound output
/// buffer, so no array is allocated, zeroed and copied) → `(mean, inv)`; the same bits.
///
/// # Errors
/// As [`layernorm`].
///
/// # Panics
/// When `out` does not hold exactly x's volume.
pub fn layernorm_into(
    x: &ArrayD<f32>,
    stat_dims: &[usize],
    scale: &ArrayD<f32>,
    bias: &ArrayD<f32>,
    eps: f32,
    y: &mut [f32],
) -> Result<(ArrayD<f32>, ArrayD<f32>), String> {
    assert_eq!(y.len(), x.len(), "output volume");
    let d = x.shape();
    let split = stat_dims.iter().rposition(|&v| v != 1).map_or(0, |i| i + 1);
    let rows_form = stat_dims.len() == d.len()
        && stat_dims[..split] == d[..split]
        && [scale, bias].iter().all(|a| {
            a.ndim() <= d.len() && {
                let lead = d.len() - a.ndim();
                (0..a.ndim()).all(|i| i + lead >= split || a.shape()[i] == 1)
            }
        });
    let (Some(xs), true) = (x.as_slice(), rows_form) else {
        let (m, var, _) = moments(x, stat_dims);
        let inv = inv_std(&var, eps);
        let out = normalize(x, Some(&m), &inv, scale, Some(bias))?;
        y.iter_mut().zip(out.iter()).for_each(|(o, v)| *o = *v);
        return Ok((m, inv));
    };
    let cols: usize = d[split..].iter().product();
    let mut cd = vec![1usize; split];
    cd.extend_from_slice(&d[split..]);
    let sc: Vec<f32> = bcast(scale, &cd, "scale")?.iter().copied().collect();
    let bi: Vec<f32> = bcast(bias, &cd, "bias")?.iter().copied().collect();
    let rows = xs.len().checked_div(cols).unwrap_or(0);
    let (mut mean, mut inv) = (vec![0f32; rows], vec![0f32; rows]);
    if cols > 0 {
        let n = cols as f32;
        y.par_chunks_mut(cols)
            .zip(xs.par_chunks(cols))
            .zip(mean.par_iter_mut().zip(inv.par_iter_mut()))
            .with_min_len(PAR_MIN_ELEMS.div_ceil(cols))
            .for_each(|((yr, xr), (mo, io))| {
                let m = lane_sum_slice(xr, |v| v) / n;
                let var = lane_sum_slice(xr, |v| {
                    let dv = v - m;
                    dv * dv
                }) / n;
                let iv = 1.0 / (var + eps).sqrt();
                for (((y, &x), &s), &b) in yr.iter_mut().zip(xr).zip(&sc).zip(&bi) {
                    *y = (x - m) * iv * s + b;
                }
                (*mo, *io) = (m, iv);
            });
    }
    let st = |v: Vec<f32>| ArrayD::from_shape_vec(IxDyn(stat_dims), v).expect("stat dims");
    Ok((st(mean), st(inv)))
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
            .with_min_len(PAR_MIN_ELEMS.div_ceil(cols))
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

/// The gradients of a normalization backward: `(dx, dscale, dbias)`; dbias only when asked.
#[derive(Debug, Clone)]
pub struct NormGrads {
    /// Gradient of x, x's dims (dense row-major).
    pub dx: ArrayD<f32>,
    /// Gradient of scale, scale's dims.
    pub dscale: ArrayD<f32>,
    /// Gradient of bias, scale's dims; `None` when not asked for.
    pub dbias: Option<ArrayD<f32>>,
}

/// Backward of `y = (x − mean) · inv · scale (+ bias)` with the statistics `mean` and `inv`
/// given (saved by the forward, or recomputed by the caller) and treated as functions of x —
/// the training-mode gradient of batchnorm, layernorm (PyTorch `native_batch_norm_backward`
/// / `native_layer_norm_backward`) and, with `mean` = `None` (statistics about 0, `inv` =
/// `1/√(mean(x²)+ε)`), rmsnorm. With `x̂ = (x − mean)·inv`, `g = dy·scale` and, per group of
/// `N` elements reduced to `stat_dims`, `ḡ = Σg/N` (0 for rmsnorm) and `c = Σ(g·x̂)/N`:
///
/// `dx = inv · (g − ḡ − x̂·c)`, `dscale = Σ dy·x̂`, `dbias = Σ dy` (the sums over the x dims
/// where scale is broadcast, giving scale's dims).
///
/// Shapes: `dy` and `x` the same dims; `mean` and `inv` `stat_dims` (x's dims with the
/// normalized axes set to 1); `scale` broadcasts to x (right-aligned). Accuracy: every sum
/// and every per-element expression is computed in f64 from the f32 inputs, rounded once to
/// f32 at the end (the sums cancel — `g − ḡ − x̂·c` is a difference of nearly equal terms
/// when dy is smooth — so f64 keeps dx within an f32 rounding of the exact value).
/// Determinism: each group's sum is one task adding its elements sequentially in increasing
/// flat index ([`Groups`] order), so the result does not depend on the thread count.
///
/// # Errors
/// A message when dy's dims differ from x's or a statistic or scale does not broadcast to x.
pub fn norm_backward(
    dy: &ArrayD<f32>,
    x: &ArrayD<f32>,
    mean: Option<&ArrayD<f32>>,
    inv: &ArrayD<f32>,
    scale: &ArrayD<f32>,
    stat_dims: &[usize],
    want_dbias: bool,
) -> Result<NormGrads, String> {
    let d = x.shape().to_vec();
    if dy.shape() != d.as_slice() {
        return Err(format!("dy dims {:?} differ from x dims {d:?}", dy.shape()));
    }
    let zero = ArrayD::zeros(IxDyn(&[1]));
    let centered = mean.is_some();
    let mean_b = bcast(mean.unwrap_or(&zero), &d, "mean")?;
    let inv_b = bcast(inv, &d, "statistics")?;
    let scale_b = bcast(scale, &d, "scale")?;
    // x̂ and g per element, in x's (row-major) order.
    let xg = Zip::from(x)
        .and(dy)
        .and(&mean_b)
        .and(&inv_b)
        .and(&scale_b)
        .par_map_collect(|&x, &dy, &m, &iv, &s| {
            let xh = (f64::from(x) - f64::from(m)) * f64::from(iv);
            (xh, f64::from(dy) * f64::from(s))
        });
    let xg = xg.as_standard_layout().into_owned();
    let xgs = xg.as_slice().expect("standard");
    let dys = dy.as_standard_layout();
    let dys = dys.as_slice().expect("standard");
    // Per statistics group: ḡ and c.
    let g = Groups::new(&d, stat_dims);
    let n = g.count() as f64;
    let invs: Vec<f32> = bcast(inv, stat_dims, "statistics")?
        .iter()
        .copied()
        .collect();
    let coef: Vec<(f64, f64, f64)> = (0..g.len())
        .into_par_iter()
        .map(|o| {
            let (mut sg, mut sgx) = (0f64, 0f64);
            for &i in g.offsets() {
                let (xh, gv) = xgs[g.base(o) + i];
                sg += gv;
                sgx += gv * xh;
            }
            let gbar = if centered { sg / n } else { 0.0 };
            (f64::from(invs[o]), gbar, sgx / n)
        })
        .collect();
    let coef = ArrayD::from_shape_vec(IxDyn(stat_dims), coef).expect("stat dims");
    let coef_b = coef
        .broadcast(IxDyn(&d))
        .ok_or_else(|| format!("statistics dims {stat_dims:?} do not broadcast to {d:?}"))?;
    let dx = Zip::from(&xg)
        .and(&coef_b)
        .par_map_collect(|&(xh, gv), &(iv, gbar, c)| (iv * (gv - gbar - xh * c)) as f32);
    // dscale and dbias: sums over the axes where scale is broadcast.
    let mut sfull = vec![1usize; d.len().saturating_sub(scale.ndim())];
    sfull.extend_from_slice(scale.shape());
    let sg = Groups::new(&d, &sfull);
    let sums: Vec<(f32, f32)> = (0..sg.len())
        .into_par_iter()
        .map(|o| {
            let (mut ds, mut db) = (0f64, 0f64);
            for &i in sg.offsets() {
                let k = sg.base(o) + i;
                let dyv = f64::from(dys[k]);
                ds += dyv * xgs[k].0;
                db += dyv;
            }
            (ds as f32, db as f32)
        })
        .collect();
    let st = |v: Vec<f32>| ArrayD::from_shape_vec(IxDyn(scale.shape()), v).expect("scale dims");
    Ok(NormGrads {
        dx: dx.as_standard_layout().into_owned(),
        dscale: st(sums.iter().map(|p| p.0).collect()),
        dbias: want_dbias.then(|| st(sums.iter().map(|p| p.1).collect())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array, ShapeBuilder};

    /// The one-sweep row path of [`layernorm`] gives the bits of the general path (a
    /// column-major x, which takes it), statistics included.
    #[test]
    fn layernorm_row_path_equals_the_general_path_bit_for_bit() {
        let (rows, cols) = (37usize, 300usize);
        let f = |(i, j): (usize, usize)| ((i * 131 + j * 17) % 97) as f32 / 13.0 - 3.0;
        let dense = Array::from_shape_fn((rows, cols), f).into_dyn();
        let colmajor = Array::from_shape_fn((rows, cols).f(), f).into_dyn();
        assert!(dense.as_slice().is_some() && colmajor.as_slice().is_none());
        let scale = Array::from_shape_fn((1, cols), |(_, j)| 0.5 + j as f32 / 100.0).into_dyn();
        let bias = Array::from_shape_fn((1, cols), |(_, j)| j as f32 / 50.0 - 2.0).into_dyn();
        let fast = layernorm(&dense, &[rows, 1], &scale, &bias, 1e-5).unwrap();
        let slow = layernorm(&colmajor, &[rows, 1], &scale, &bias, 1e-5).unwrap();
        let bits = |a: &ArrayD<f32>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fast.0), bits(&slow.0));
        assert_eq!(bits(&fast.1), bits(&slow.1));
        assert_eq!(bits(&fast.2), bits(&slow.2));
        // And it is a layernorm: row 0 against float64.
        let r: Vec<f64> = (0..cols).map(|j| f64::from(f((0, j)))).collect();
        let m = r.iter().sum::<f64>() / cols as f64;
        let v = r.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / cols as f64;
        for (j, &x) in r.iter().enumerate() {
            let want =
                (x - m) / (v + 1e-5).sqrt() * f64::from(scale[[0, j]]) + f64::from(bias[[0, j]]);
            assert!((f64::from(fast.0[[0, j]]) - want).abs() < 1e-5, "col {j}");
        }
    }
}
