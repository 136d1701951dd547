//! Matmul facts: `c (…batch, M, N) = a (…batch, M, K) · b (…batch, K, N)` with numpy
//! broadcasting of the batch dims (upstream `hipdnn_frontend` `MatmulNode`).

use super::broadcast::broadcast_shape;

/// Whether a and b can be multiplied: both have rank `>= 2` and `a[-1] == b[-2]`.
pub fn inner_dims_agree(a: &[i64], b: &[i64]) -> bool {
    a.len() >= 2 && b.len() >= 2 && a[a.len() - 1] == b[b.len() - 2]
}

/// The output dims of a · b as the SDK infers them: the broadcast batch dims, then `M` (a's
/// second-to-last dim, 1 when absent) and `N` (b's last dim, 1 when absent). Conflicting batch
/// dims take the larger size (see [`broadcast_shape`]); check with [`inner_dims_agree`] and
/// [`super::broadcast::broadcasts_to`].
///
/// ```
/// use hipdnn_backend::ops::matmul::output_dims;
/// assert_eq!(output_dims(&[2, 1, 4, 8], &[3, 8, 5]), vec![2, 3, 4, 5]);
/// ```
pub fn output_dims(a: &[i64], b: &[i64]) -> Vec<i64> {
    let (ab, bb) = (
        &a[..a.len().saturating_sub(2)],
        &b[..b.len().saturating_sub(2)],
    );
    let mut dims = broadcast_shape(&[ab, bb]);
    dims.push(if a.len() >= 2 { a[a.len() - 2] } else { 1 });
    dims.push(b.last().copied().unwrap_or(1));
    dims
}
