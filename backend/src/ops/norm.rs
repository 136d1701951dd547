//! Normalization facts (batchnorm, layernorm, rmsnorm): the shapes of per-channel statistics.
//!
//! Batchnorm statistics (mean, inverse variance, running mean and variance) and its scale and
//! bias are per channel: x `(N, C, …)` gives statistics of dims `(1, C, 1, …)` (upstream
//! `hipdnn_frontend` `BatchnormNode::infer_properties_node`).

/// Dims of batchnorm's per-channel statistics for an x of `x` dims: 1 everywhere except dim 1,
/// which keeps x's channel count `C`. An x of rank < 2 gives all ones.
///
/// Works over any integer dim type (`i64` graph dims, `usize` engine dims).
///
/// ```
/// use hipdnn_backend::ops::norm::channel_stats_dims;
/// assert_eq!(channel_stats_dims::<i64>(&[8, 3, 5, 5]), vec![1, 3, 1, 1]);
/// ```
pub fn channel_stats_dims<T: Copy + From<u8>>(x: &[T]) -> Vec<T> {
    x.iter()
        .enumerate()
        .map(|(i, &d)| if i == 1 { d } else { T::from(1) })
        .collect()
}
