//! Numpy broadcasting rules shared by pointwise, matmul batch dims and normalization operands
//! (upstream `hipdnn_sdk` CPU reference and frontend shape inference).
//!
//! Owns only the shape arithmetic; it never reads tensors or reports errors in words.

/// Whether `from` broadcasts to `to` by numpy rules: shapes are right-aligned, `from` has no
/// more dims than `to`, and every aligned dim of `from` equals the one of `to` or is 1.
///
/// Works over any integer dim type (`i64` graph dims, `usize` engine dims).
///
/// ```
/// use hipdnn_backend::ops::broadcast::broadcasts_to;
/// assert!(broadcasts_to::<i64>(&[3, 1], &[2, 3, 4]));
/// assert!(!broadcasts_to::<i64>(&[2, 3, 4], &[3, 4]));
/// ```
pub fn broadcasts_to<T: Copy + PartialEq + From<u8>>(from: &[T], to: &[T]) -> bool {
    let one = T::from(1);
    from.len() <= to.len()
        && from
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(&f, &t)| f == t || f == one)
}

/// The broadcast shape of several shapes, as the SDK infers an output: right-aligned, rank =
/// the largest rank, a 1 stretches to the other size. Conflicting sizes (neither is 1) take the
/// larger one; the result is an inference, and whoever checks the graph reports the conflict
/// (use [`broadcasts_to`] for the check). No shapes give `[]`.
///
/// ```
/// use hipdnn_backend::ops::broadcast::broadcast_shape;
/// assert_eq!(broadcast_shape(&[&[4, 1, 3], &[5, 1]]), vec![4, 5, 3]);
/// ```
pub fn broadcast_shape(shapes: &[&[i64]]) -> Vec<i64> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..rank)
        .map(|i| {
            shapes
                .iter()
                .filter_map(|s| (i + s.len()).checked_sub(rank).map(|j| s[j]))
                .fold(1, |acc, d| {
                    if acc == 1 {
                        d
                    } else if d == 1 {
                        acc
                    } else {
                        acc.max(d)
                    }
                })
        })
        .collect()
}
