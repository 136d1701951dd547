//! What the pooling families (`pool_fwd`, `pool_bwd`) read from a resample node the same way:
//! the window lists, the input/output dims they must agree with, and the launch's view of both
//! tensors as 3-D pooling over (n, c, d, h, w).

use super::family::{I32_MAX, IntValue, int};
use super::graph::{dims_strides, na};
use hipdnn_backend::ops::conv::SpatialAttr;
use hipdnn_backend::ops::resample as table;
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::TensorAttributes;

/// The shape and window launch values, which the kernels take by the same names and in this
/// order after their pointers.
#[rustfmt::skip]
pub const SHAPE_WINDOW: [IntValue; 17] = [
    int("batch", 1, I32_MAX), int("channels", 1, I32_MAX), int("in_d", 1, I32_MAX),
    int("in_h", 1, I32_MAX), int("in_w", 1, I32_MAX), int("out_d", 1, I32_MAX),
    int("out_h", 1, I32_MAX), int("out_w", 1, I32_MAX),
    int("win_d", 1, I32_MAX), int("win_h", 1, I32_MAX), int("win_w", 1, I32_MAX),
    int("str_d", 1, I32_MAX), int("str_h", 1, I32_MAX), int("str_w", 1, I32_MAX),
    int("pad_d", 0, I32_MAX), int("pad_h", 0, I32_MAX), int("pad_w", 0, I32_MAX),
];
/// The largest window volume (the index and the divisor are exact in f32 up to it).
pub const MAX_WINDOW: i64 = 1 << 24;

/// The window attribute lists of a resample node, as flatbuffers vectors.
pub struct WindowAttrs<'a> {
    /// `window`.
    pub window: Option<flatbuffers::Vector<'a, i64>>,
    /// `stride`.
    pub stride: Option<flatbuffers::Vector<'a, i64>>,
    /// `pre_padding`.
    pub pre_padding: Option<flatbuffers::Vector<'a, i64>>,
    /// `post_padding`.
    pub post_padding: Option<flatbuffers::Vector<'a, i64>>,
}

/// A pooling launch's view of the input-side tensor `x` (x, or dx of a backward) and the
/// output-side `y` (y, or dy): dims and strides as (n, c, d, h, w) and the window as
/// (win, stride, pre-padding) per d, h, w.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolView {
    /// batch, channels, in_d, in_h, in_w, out_d, out_h, out_w.
    pub shape: [i64; 8],
    /// win_d, win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w.
    pub window: [i64; 9],
    /// x's strides over (n, c, d, h, w) (0 on extent-1 axes).
    pub sx: [i64; 5],
    /// y's strides over (n, c, d, h, w) (0 on extent-1 axes).
    pub sy: [i64; 5],
}

/// Reads the pooling geometry of the `pack` pack: `xt` (named `x` in messages) of rank 3 to 5,
/// `yt` (`y`) of the same rank with the forward's output dims of `xt` under the window `a`.
///
/// # Errors
/// `NOT_APPLICABLE` naming the pack, the tensors and the attribute: ranks, dims below 1, a
/// window list with the wrong length or an entry below its minimum, extents, windows, strides
/// and paddings beyond 2147483647 (also `in + pre + post`), a window of more than
/// [`MAX_WINDOW`] positions, a window that does not fit the padded input, `y` dims other than
/// `floor((in + pre + post − window) / stride) + 1`.
pub fn read_pool(
    pack: &str,
    (x, xt): (&str, &TensorAttributes<'_>),
    (y, yt): (&str, &TensorAttributes<'_>),
    a: &WindowAttrs<'_>,
) -> PluginResult<PoolView> {
    let (xd, _) = dims_strides(xt);
    let (yd, _) = dims_strides(yt);
    let r = xd.len();
    if !(3..=5).contains(&r) || yd.len() != r {
        return Err(na(format!(
            "the {pack} pack serves {x} and {y} of rank 3, 4 or 5 (1-D, 2-D or 3-D pooling); {x} dims {xd:?}, {y} dims {yd:?}"
        )));
    }
    if xd.iter().any(|d| *d < 1) {
        return Err(na(format!(
            "the {pack} pack needs {x} dims of at least 1; {x} {xd:?}"
        )));
    }
    let sp = r - 2;
    let win = spatial(pack, SpatialAttr::Window, a.window, sp)?;
    let stride = spatial(pack, SpatialAttr::Stride, a.stride, sp)?;
    let pre = spatial(pack, SpatialAttr::PrePadding, a.pre_padding, sp)?;
    let post = spatial(pack, SpatialAttr::PostPadding, a.post_padding, sp)?;
    let max = i64::from(i32::MAX);
    let fits = |v: &i64| (0..=max).contains(v);
    if !(xd
        .iter()
        .chain(&win)
        .chain(&stride)
        .chain(&pre)
        .chain(&post))
    .all(fits)
    {
        return Err(na(format!(
            "the {pack} pack needs extents, windows, strides and paddings of at most {max}; {x} {xd:?}, window {win:?}, stride {stride:?}, pre_padding {pre:?}, post_padding {post:?}"
        )));
    }
    if (0..sp).any(|i| xd[i + 2] + pre[i] + post[i] > max) {
        return Err(na(format!(
            "the {pack} pack needs in + pre_padding + post_padding at most {max} per spatial dim (int32 coordinates); {x} {xd:?}, pre_padding {pre:?}, post_padding {post:?}"
        )));
    }
    let vol = win.iter().fold(1i64, |a, b| a.saturating_mul(*b));
    if vol > MAX_WINDOW {
        return Err(na(format!(
            "the {pack} pack needs a window of at most {MAX_WINDOW} positions (the index and the divisor exact in f32), not {vol}"
        )));
    }
    let mut want = vec![xd[0], xd[1]];
    for i in 0..sp {
        let o = table::output_extent(xd[i + 2], win[i], pre[i], post[i], stride[i]).map_err(
            |e| {
                na(format!(
                    "the {pack} pack: the window does not fit the padded input along spatial dim {i} (in {}, window {}, pre_padding {}, post_padding {}, stride {}): {e}",
                    xd[i + 2],
                    win[i],
                    pre[i],
                    post[i],
                    stride[i]
                ))
            },
        )?;
        want.push(o);
    }
    if yd != want {
        return Err(na(format!(
            "the {pack} pack needs {y} dims {want:?} (floor((in + pre + post − window) / stride) + 1 per spatial dim), not {yd:?}"
        )));
    }
    let (x5, sx) = five(xt);
    let (y5, sy) = five(yt);
    let lead = 3 - sp;
    let pad3 = |v: &[i64], fill: i64| -> [i64; 3] {
        let mut o = [fill; 3];
        o[lead..].copy_from_slice(v);
        o
    };
    let (w3, s3, p3) = (pad3(&win, 1), pad3(&stride, 1), pad3(&pre, 0));
    Ok(PoolView {
        shape: [x5[0], x5[1], x5[2], x5[3], x5[4], y5[2], y5[3], y5[4]],
        window: [
            w3[0], w3[1], w3[2], s3[0], s3[1], s3[2], p3[0], p3[1], p3[2],
        ],
        sx,
        sy,
    })
}

/// A spatial list attribute as the reference engine reads it: `n` entries, each at least the
/// table's minimum; the default entry for every dim when absent.
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack needs <attr> with <n> entries (one per spatial dim), each
/// at least <min>; the node has <v>`.
pub fn spatial(
    pack: &str,
    attr: SpatialAttr,
    v: Option<flatbuffers::Vector<'_, i64>>,
    n: usize,
) -> PluginResult<Vec<i64>> {
    let Some(v) = v else {
        return Ok(vec![attr.default_entry(); n]);
    };
    let vals: Vec<i64> = v.iter().collect();
    if vals.len() != n || attr.first_bad_entry(&vals).is_some() {
        return Err(na(format!(
            "the {pack} pack needs {} with {n} entries (one per spatial dim), each at least {}; the node has {vals:?}",
            attr.name(),
            attr.min()
        )));
    }
    Ok(vals)
}

/// Dims and strides of `t` padded to 5 axes (n, c, d, h, w): missing spatial axes extent 1;
/// the strides of extent-1 axes 0.
pub fn five(t: &TensorAttributes<'_>) -> ([i64; 5], [i64; 5]) {
    let (d, s) = dims_strides(t);
    let mut dims = [1i64; 5];
    let mut strides = [0i64; 5];
    let lead = 5 - d.len().min(5);
    for (i, (&e, &st)) in d.iter().zip(&s).enumerate().take(5) {
        let a = if i < 2 { i } else { i + lead };
        dims[a] = e;
        strides[a] = if e == 1 { 0 } else { st };
    }
    (dims, strides)
}
