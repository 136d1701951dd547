//! Batched matrix multiply `C (…, M, N) = A (…, M, K) · B (…, K, N)` with numpy broadcasting of
//! the batch dims, over arrays of any strides (broadcast and transposed views are read in
//! place, never copied), on the tiled GEMM of [`super::gemm`], or on [`super::small_gemm`]
//! when C has few rows ([`super::small_gemm::fits`]) and B is column-major.
//!
//! Determinism: see [`super::gemm`] — the tiling depends on the shape only and each element is
//! summed in one fixed order, so results are bit-identical for any thread count. Owns only
//! arithmetic.

use super::gemm::{self, Epilogue, Job};
use super::small_gemm;
use ndarray::{ArrayD, ArrayView2, ArrayViewD, ArrayViewMut2, Axis, Ix2, IxDyn};

/// `C = A · B`; `c_dims` = broadcast batch dims + `[M, N]`.
///
/// # Errors
/// A message when A or B does not broadcast to the batch dims of C or the inner dims differ.
pub fn matmul(a: &ArrayD<f32>, b: &ArrayD<f32>, c_dims: &[usize]) -> Result<ArrayD<f32>, String> {
    matmul_with(a, b, c_dims, &Epilogue::NONE)
}

/// The 2-D matrices of a `(batch…, R, C)` view, batch-major (views, no copies).
fn matrices<'a>(v: ArrayViewD<'a, f32>, out: &mut Vec<ArrayView2<'a, f32>>) {
    if v.ndim() == 2 {
        out.push(v.into_dimensionality::<Ix2>().expect("2 dims"));
    } else {
        for i in 0..v.len_of(Axis(0)) {
            matrices(v.clone().index_axis_move(Axis(0), i), out);
        }
    }
}

/// `C = act(A · B + bias)`: [`matmul`] with an [`Epilogue`] fused into the GEMM output pass (a
/// [`gemm::Bias::PerCol`] bias has N values, broadcast over rows and batches).
///
/// # Errors
/// As [`matmul`].
pub fn matmul_with(
    a: &ArrayD<f32>,
    b: &ArrayD<f32>,
    c_dims: &[usize],
    epi: &Epilogue<'_>,
) -> Result<ArrayD<f32>, String> {
    matmul_views_res(a.view(), b.view(), None, c_dims, epi)
}

/// [`matmul_with`] on views of any strides (a bound buffer read in place, a column-major B:
/// the GEMM reads them as they lie, with the same tiles and sums as for dense arrays), with an
/// optional residual: `C = act((A · B + bias) + res)`, `res` broadcast to `c_dims` (numpy
/// rules) and added in the epilogue after the bias, before the activation — the f32
/// operations of the separate ADD nodes, so bit-identical to them.
///
/// # Errors
/// As [`matmul`]; also when `res` does not broadcast to `c_dims`.
pub fn matmul_views_res(
    a: ArrayViewD<'_, f32>,
    b: ArrayViewD<'_, f32>,
    res: Option<ArrayViewD<'_, f32>>,
    c_dims: &[usize],
    epi: &Epilogue<'_>,
) -> Result<ArrayD<f32>, String> {
    let mut c = vec![0f32; c_dims.iter().product()];
    matmul_into(a, b, res, c_dims, epi, &mut c)?;
    Ok(ArrayD::from_shape_vec(IxDyn(c_dims), c).expect("c volume"))
}

/// [`matmul_views_res`] with C written into `c` (`c_dims`' volume, row-major: a bound output
/// buffer, so no array is allocated, zeroed and copied); the same bits.
///
/// # Errors
/// As [`matmul_views_res`].
///
/// # Panics
/// When `c` does not hold exactly `c_dims`' volume.
pub fn matmul_into(
    a: ArrayViewD<'_, f32>,
    b: ArrayViewD<'_, f32>,
    res: Option<ArrayViewD<'_, f32>>,
    c_dims: &[usize],
    epi: &Epilogue<'_>,
    c: &mut [f32],
) -> Result<(), String> {
    assert_eq!(c.len(), c_dims.iter().product::<usize>(), "c volume");
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
    let rv =
        match &res {
            Some(r) => Some(r.broadcast(IxDyn(c_dims)).ok_or_else(|| {
                format!("residual {:?} does not broadcast to {c_dims:?}", r.shape())
            })?),
            None => None,
        };
    let nb: usize = batch.iter().product();
    if m * n > 0 {
        let (mut am, mut bm) = (Vec::with_capacity(nb), Vec::with_capacity(nb));
        matrices(av, &mut am);
        matrices(bv, &mut bm);
        let mut rm = Vec::with_capacity(if rv.is_some() { nb } else { 0 });
        if let Some(rv) = rv {
            matrices(rv, &mut rm);
        }
        let mut rm = rm.into_iter();
        // Column-major B (a `Linear` weight bound as it is) at few rows: the small GEMM reads
        // it in place; row-major B stays on the tiled `gemm`-crate path (as fast there).
        let small = small_gemm::fits(m)
            && bm
                .iter()
                .all(|b| !b.is_standard_layout() && small_gemm::reads_in_place(b, m));
        let jobs = c
            .chunks_mut(m * n)
            .zip(am.into_iter().zip(bm))
            .map(|(cm, (a, b))| Job {
                a,
                b,
                c: ArrayViewMut2::from_shape((m, n), cm).expect("c block"),
                row_base: 0,
                res: rm.next(),
            })
            .collect();
        if small {
            small_gemm::run(jobs, epi);
        } else {
            gemm::run(jobs, false, epi);
        }
    }
    Ok(())
}
