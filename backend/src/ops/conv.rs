//! Convolution facts (fprop, dgrad, wgrad): the spatial extent rules, the meaningful values of
//! the spatial list attributes and the channel-group rule.
//!
//! Rule (upstream `hipdnn_frontend` `ConvolutionFpropNode::infer_properties_node`, cuDNN):
//! per spatial dim, `out = floor((in + pre + post − dilation·(k − 1) − 1) / stride) + 1`. All
//! arithmetic is checked: an overflow of `i64` or a result that is not positive is a typed
//! [`ExtentError`], never a wrapped number. Users: SDK shape inference, the CPU reference
//! engine's shape checks, the GPU conv packs' matchers. Resampling (pooling) uses the same rule
//! with dilation 1 ([`super::resample`]).

/// Why an extent rule has no positive answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ExtentError {
    /// The stride is 0 or negative (the rule divides by it).
    #[error("stride {0} is not > 0")]
    NonPositiveStride(i64),
    /// The dilation is 0 or negative (the filter-extent rule divides by it).
    #[error("dilation {0} is not > 0")]
    NonPositiveDilation(i64),
    /// An intermediate value does not fit in `i64`.
    #[error("the extent arithmetic overflows i64")]
    Overflow,
    /// The rule's result is 0 or negative (e.g. the dilated filter does not fit the padded
    /// input); carries the value for shape inference that lets a later check report it.
    #[error("the extent is {0}, not > 0")]
    NonPositive(i64),
}

/// Geometry of one spatial dim: padding before and after (elements), stride, dilation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Padding before the dim (schema `pre_padding` entry).
    pub pre: i64,
    /// Padding after the dim (schema `post_padding` entry).
    pub post: i64,
    /// Stride (schema `stride` entry).
    pub stride: i64,
    /// Dilation (schema `dilation` entry; 1 for resampling).
    pub dilation: i64,
}

fn positive(v: i64) -> Result<i64, ExtentError> {
    if v > 0 {
        Ok(v)
    } else {
        Err(ExtentError::NonPositive(v))
    }
}

/// `dilation·(k − 1) + 1`, the extent the dilated filter covers.
fn span(filter: i64, dilation: i64) -> Result<i64, ExtentError> {
    dilation
        .checked_mul(filter.checked_sub(1).ok_or(ExtentError::Overflow)?)
        .and_then(|v| v.checked_add(1))
        .ok_or(ExtentError::Overflow)
}

/// Output extent of a forward convolution along one spatial dim:
/// `floor((input + pre + post − dilation·(filter − 1) − 1) / stride) + 1`.
///
/// `input` and `filter` are the spatial extents of x and w (elements). Dilation is taken as
/// given (check it with [`SpatialAttr::Dilation`]).
///
/// # Errors
/// [`ExtentError::NonPositiveStride`] when `stride <= 0`; [`ExtentError::Overflow`] when an
/// intermediate value overflows `i64`; [`ExtentError::NonPositive`] when the result is `<= 0`
/// (the dilated filter does not fit the padded input).
///
/// ```
/// use hipdnn_backend::ops::conv::{Window, output_extent};
/// let w = Window { pre: 1, post: 1, stride: 2, dilation: 1 };
/// assert_eq!(output_extent(7, 3, w), Ok(4));
/// ```
pub fn output_extent(input: i64, filter: i64, w: Window) -> Result<i64, ExtentError> {
    if w.stride <= 0 {
        return Err(ExtentError::NonPositiveStride(w.stride));
    }
    let padded = input
        .checked_add(w.pre)
        .and_then(|v| v.checked_add(w.post))
        .ok_or(ExtentError::Overflow)?;
    let room = padded
        .checked_sub(span(filter, w.dilation)?)
        .ok_or(ExtentError::Overflow)?;
    positive(
        room.div_euclid(w.stride)
            .checked_add(1)
            .ok_or(ExtentError::Overflow)?,
    )
}

/// The smallest input extent of a convolution whose forward output extent is `output`, as
/// conv dgrad infers dx: `(output − 1)·stride − pre − post + dilation·(filter − 1) + 1`.
///
/// # Errors
/// [`ExtentError::Overflow`] on `i64` overflow; [`ExtentError::NonPositive`] when the result
/// is `<= 0`.
pub fn data_grad_extent(output: i64, filter: i64, w: Window) -> Result<i64, ExtentError> {
    let v = output
        .checked_sub(1)
        .and_then(|v| v.checked_mul(w.stride))
        .and_then(|v| v.checked_sub(w.pre))
        .and_then(|v| v.checked_sub(w.post))
        .ok_or(ExtentError::Overflow)?;
    positive(
        v.checked_add(span(filter, w.dilation)?)
            .ok_or(ExtentError::Overflow)?,
    )
}

/// The filter extent that maps an input extent `input` to the output extent `output`, as conv
/// wgrad infers dw: `floor(((input + pre + post − 1) − (output − 1)·stride) / dilation) + 1`.
///
/// # Errors
/// [`ExtentError::NonPositiveDilation`] when `dilation <= 0`; [`ExtentError::Overflow`] on
/// `i64` overflow; [`ExtentError::NonPositive`] when the result is `<= 0`.
pub fn filter_grad_extent(input: i64, output: i64, w: Window) -> Result<i64, ExtentError> {
    if w.dilation <= 0 {
        return Err(ExtentError::NonPositiveDilation(w.dilation));
    }
    let reach = output
        .checked_sub(1)
        .and_then(|v| v.checked_mul(w.stride))
        .ok_or(ExtentError::Overflow)?;
    let v = input
        .checked_add(w.pre)
        .and_then(|v| v.checked_add(w.post))
        .and_then(|v| v.checked_sub(1))
        .and_then(|v| v.checked_sub(reach))
        .ok_or(ExtentError::Overflow)?;
    positive(
        v.div_euclid(w.dilation)
            .checked_add(1)
            .ok_or(ExtentError::Overflow)?,
    )
}

/// A spatial list attribute of convolution and resampling nodes (one entry per spatial dim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpatialAttr {
    /// `pre_padding`: entries `>= 0`, default 0.
    PrePadding,
    /// `post_padding`: entries `>= 0`, default 0.
    PostPadding,
    /// `stride`: entries `>= 1`, default 1.
    Stride,
    /// `dilation` (convolution): entries `>= 1`, default 1.
    Dilation,
    /// `window` (resampling): entries `>= 1`, default 1.
    Window,
}

impl SpatialAttr {
    /// The schema field name (`pre_padding`, `stride`, …).
    pub const fn name(self) -> &'static str {
        match self {
            SpatialAttr::PrePadding => "pre_padding",
            SpatialAttr::PostPadding => "post_padding",
            SpatialAttr::Stride => "stride",
            SpatialAttr::Dilation => "dilation",
            SpatialAttr::Window => "window",
        }
    }

    /// The smallest meaningful entry: 0 for paddings, 1 otherwise.
    pub const fn min(self) -> i64 {
        match self {
            SpatialAttr::PrePadding | SpatialAttr::PostPadding => 0,
            _ => 1,
        }
    }

    /// The entry an engine assumes when the list is absent (equal to [`Self::min`]).
    pub const fn default_entry(self) -> i64 {
        self.min()
    }

    /// The first entry of `v` below [`Self::min`], if any.
    pub fn first_bad_entry(self, v: &[i64]) -> Option<i64> {
        v.iter().copied().find(|&x| x < self.min())
    }
}

/// The group count of a convolution from x's channels `c`, w's channels per group `c_per_group`
/// and the filter count `k`: `c / c_per_group` when `c_per_group` divides `c` and the groups
/// divide `k`; `None` otherwise (also for non-positive values).
///
/// ```
/// use hipdnn_backend::ops::conv::groups;
/// assert_eq!(groups(8, 2, 12), Some(4));
/// assert_eq!(groups(8, 3, 12), None);
/// ```
pub fn groups(c: i64, c_per_group: i64, k: i64) -> Option<i64> {
    if c <= 0 || c_per_group <= 0 || k <= 0 || c % c_per_group != 0 {
        return None;
    }
    let g = c / c_per_group;
    (k % g == 0).then_some(g)
}
