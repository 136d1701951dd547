//! Reduction facts: which `ReductionMode` values are operators and the output-shape rule
//! (output dims equal the input dims except reduced axes, which are 1; upstream
//! `hipdnn_frontend` `ReductionNode`).

use hipdnn_schema::graph::ReductionMode as M;

/// The reduction operators, in schema order (`NOT_SET` is none).
pub const REDUCTION_OPERATORS: [M; 9] = [
    M::ADD,
    M::MUL,
    M::MIN_OP,
    M::MAX_OP,
    M::AMAX,
    M::AVG,
    M::NORM1,
    M::NORM2,
    M::MUL_NO_ZEROS,
];

/// Whether `mode` names a reduction operator (`false` for `NOT_SET` and numbers the schema does
/// not name).
pub fn is_operator(mode: M) -> bool {
    REDUCTION_OPERATORS.contains(&mode)
}

/// Whether `y` is a reduction output of `x`: same rank, and every dim of `y` equals the one of
/// `x` or is 1 (a reduced axis).
///
/// ```
/// use hipdnn_backend::ops::reduction::output_dims_ok;
/// assert!(output_dims_ok::<i64>(&[2, 3, 4], &[2, 1, 4]));
/// assert!(!output_dims_ok::<i64>(&[2, 3, 4], &[2, 4]));
/// ```
pub fn output_dims_ok<T: Copy + PartialEq + From<u8>>(x: &[T], y: &[T]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(&i, &o)| o == i || o == T::from(1))
}
