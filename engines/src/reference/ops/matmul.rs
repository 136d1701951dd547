//! Batched matrix multiply `C (…, M, N) = A (…, M, K) · B (…, K, N)` with numpy broadcasting of
//! the batch dims, over dense row-major arrays.
//!
//! Rows of C are computed in parallel; each element is summed over k in increasing order, so
//! results are bit-identical for any thread count. Owns only arithmetic.

use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;

/// `C = A · B`; `c_dims` = broadcast batch dims + `[M, N]`.
///
/// # Errors
/// A message when A or B does not broadcast to the batch dims of C or the inner dims differ.
pub fn matmul(a: &ArrayD<f32>, b: &ArrayD<f32>, c_dims: &[usize]) -> Result<ArrayD<f32>, String> {
    let r = c_dims.len();
    if r < 2 || a.ndim() < 2 || b.ndim() < 2 {
        return Err("matmul tensors need at least 2 dims".into());
    }
    let (m, n) = (c_dims[r - 2], c_dims[r - 1]);
    let k = a.shape()[a.ndim() - 1];
    if a.shape()[a.ndim() - 2] != m || b.shape()[b.ndim() - 2] != k || b.shape()[b.ndim() - 1] != n
    {
        return Err(format!(
            "matmul dims do not agree: a {:?}, b {:?}, c {:?}",
            a.shape(),
            b.shape(),
            c_dims
        ));
    }
    let batch = &c_dims[..r - 2];
    let mut ad = batch.to_vec();
    ad.extend([m, k]);
    let mut bd = batch.to_vec();
    bd.extend([k, n]);
    let av = a
        .broadcast(IxDyn(&ad))
        .ok_or_else(|| format!("a {:?} does not broadcast to {ad:?}", a.shape()))?;
    let bv = b
        .broadcast(IxDyn(&bd))
        .ok_or_else(|| format!("b {:?} does not broadcast to {bd:?}", b.shape()))?;
    let av = av.as_standard_layout();
    let bv = bv.as_standard_layout();
    let (asl, bsl) = (
        av.as_slice().expect("standard"),
        bv.as_slice().expect("standard"),
    );
    let nb: usize = batch.iter().product();
    let mut c = vec![0f32; nb * m * n];
    if n > 0 {
        c.par_chunks_mut(n).enumerate().for_each(|(row, crow)| {
            let (bi, i) = (row / m.max(1), row % m.max(1));
            let arow = &asl[(bi * m + i) * k..][..k];
            let bmat = &bsl[bi * k * n..][..k * n];
            for (kk, &av) in arow.iter().enumerate() {
                for (o, &bv) in crow.iter_mut().zip(&bmat[kk * n..(kk + 1) * n]) {
                    *o += av * bv;
                }
            }
        });
    }
    Ok(ArrayD::from_shape_vec(IxDyn(c_dims), c).expect("c volume"))
}
