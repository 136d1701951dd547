//! Resampling (pooling) facts: the spatial extent rules of resample forward and backward.
//!
//! Rule (upstream `hipdnn_frontend` resample node, cuDNN pooling): per spatial dim,
//! `out = floor((in + pre + post − window) / stride) + 1` — the convolution rule
//! ([`super::conv::output_extent`]) with the window as the filter and dilation 1. The
//! attributes `window`, `stride`, `pre_padding`, `post_padding` follow
//! [`super::conv::SpatialAttr`].

use super::conv::{ExtentError, Window};

fn window(pre: i64, post: i64, stride: i64) -> Window {
    Window {
        pre,
        post,
        stride,
        dilation: 1,
    }
}

/// Output extent of a resample forward along one spatial dim:
/// `floor((input + pre + post − window) / stride) + 1`.
///
/// # Errors
/// As [`super::conv::output_extent`]: non-positive stride, `i64` overflow, result `<= 0`.
///
/// ```
/// use hipdnn_backend::ops::resample::output_extent;
/// assert_eq!(output_extent(7, 3, 1, 1, 2), Ok(4));
/// ```
pub fn output_extent(
    input: i64,
    window_extent: i64,
    pre: i64,
    post: i64,
    stride: i64,
) -> Result<i64, ExtentError> {
    super::conv::output_extent(input, window_extent, window(pre, post, stride))
}

/// The input extent resample backward infers for dx: `(output − 1)·stride + window − pre −
/// post` (the smallest input that pools to `output`).
///
/// # Errors
/// As [`super::conv::data_grad_extent`]: `i64` overflow, result `<= 0`.
pub fn input_extent(
    output: i64,
    window_extent: i64,
    pre: i64,
    post: i64,
    stride: i64,
) -> Result<i64, ExtentError> {
    super::conv::data_grad_extent(output, window_extent, window(pre, post, stride))
}
