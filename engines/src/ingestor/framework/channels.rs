//! The channel view of a batchnorm node that the batchnorm families share (`batchnorm_fwd`,
//! `bn_bwd`): x is `(N, C, spatial…)` with the channel axis 1 and the spatial axes collapsing
//! to one stride, seen by the kernels as `x[n, c, s]`; the tensors of x's dims (y, dy, dx, a
//! fused ReLU's operands) are read against the same view, per-channel operands as one value
//! per channel; and the tile / split rule of the kernels that walk (image, position block)
//! pairs per channel block. It never decides what a pack serves: every refusal is
//! `NOT_APPLICABLE` naming the pack, the tensor and its dims (the CPU reference engine serves
//! what a pack refuses).

use super::graph::{collapse, dims_strides, na};
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::TensorAttributes;

/// The largest `n`, `c`, `s` and `n·s` the batchnorm kernels take (2^30: their int32 position
/// and channel counters stay below 2^31).
pub const MAX_EXTENT: i64 = 1 << 30;
/// Programs the static rule aims at per launch.
pub const TARGET_PROGRAMS: i64 = 1024;
/// The batchnorm kernels' tiles (`block_m` along the unit-stride axis, `block_n` along the
/// other; 2048 elements a tile), longest `block_m` first.
pub const TILES: [(i64, i64); 4] = [(1024, 2), (256, 8), (64, 32), (16, 128)];

/// Largest stride a kernel argument holds (i32).
const MAX: i64 = i32::MAX as i64;

fn fits(v: i64) -> bool {
    (0..=MAX).contains(&v)
}

fn cdiv(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// x's `(N, C, spatial…)` view, after the batch merge.
#[derive(Debug, Clone)]
pub(crate) struct Channels {
    /// The pack's name, for messages.
    pack: &'static str,
    /// x's dims.
    xd: Vec<i64>,
    /// `[n, c, s]` as the kernel sees them (the batch merged into the positions when every
    /// tensor of x's dims allows it).
    pub shape: [i64; 3],
}

impl Channels {
    /// The view of x and the `(batch, channel, spatial)` element strides of x and of each
    /// tensor of `like_x` (tensors of x's dims: y, dy, dx, …), in that order. When every one
    /// of them allows it (N = 1, spatial volume 1, or the batch stride = spatial volume ×
    /// spatial stride, as in NHWC), the batch is merged into the positions (`n` 1, `s` N·S);
    /// a batch stride of an `n` of 1 and a spatial stride of an `s` of 1 are 0.
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: x with fewer than 2 dims or a dim below 1 (`the <pack> pack needs x
    /// with at least 2 dims (N, C, …), each at least 1; x <dims>`); N, C or N·S above
    /// [`MAX_EXTENT`]; a tensor whose dims differ from x's (`the <pack> pack: <what> dims <d>
    /// differ from x <xd>`) or whose strides leave [0, 2147483647] or whose spatial axes do
    /// not collapse to one stride.
    pub(crate) fn read(
        pack: &'static str,
        x: &TensorAttributes<'_>,
        like_x: &[(&str, &TensorAttributes<'_>)],
    ) -> PluginResult<(Channels, Vec<[i64; 3]>)> {
        let (xd, _) = dims_strides(x);
        if xd.len() < 2 || xd.iter().any(|d| *d < 1) {
            return Err(na(format!(
                "the {pack} pack needs x with at least 2 dims (N, C, …), each at least 1; x {xd:?}"
            )));
        }
        let (n, c) = (xd[0], xd[1]);
        let s = xd[2..].iter().try_fold(1i64, |a, v| a.checked_mul(*v));
        let s = match (s, s.and_then(|s| s.checked_mul(n))) {
            (Some(s), Some(ns)) if n <= MAX_EXTENT && c <= MAX_EXTENT && ns <= MAX_EXTENT => s,
            _ => {
                return Err(na(format!(
                    "the {pack} pack needs N, C and N·spatial volume each at most {MAX_EXTENT}; x {xd:?}"
                )));
            }
        };
        let ncs = |what: &str, t: &TensorAttributes<'_>| -> PluginResult<[i64; 3]> {
            let (d, st) = dims_strides(t);
            if d != xd {
                return Err(na(format!(
                    "the {pack} pack: {what} dims {d:?} differ from x {xd:?}"
                )));
            }
            match collapse(&d[2..], &st[2..]) {
                Some(ss) if st.iter().all(|v| fits(*v)) && fits(ss) => Ok([st[0], st[1], ss]),
                _ => Err(na(format!(
                    "the {pack} pack needs {what}'s strides in [0, 2147483647] and its spatial axes {:?} collapsing to one stride; strides {st:?}",
                    &d[2..]
                ))),
            }
        };
        let mut all = vec![ncs("x", x)?];
        for (what, t) in like_x {
            all.push(ncs(what, t)?);
        }
        let mergeable = all
            .iter()
            .all(|[bn, _, bs]| n == 1 || s == 1 || *bn == s * bs);
        let (mut n_k, mut s_k) = (n, s);
        if mergeable {
            if s == 1 {
                for st in all.iter_mut() {
                    st[2] = st[0];
                }
            }
            n_k = 1;
            s_k = n * s;
        }
        for st in all.iter_mut() {
            if n_k == 1 {
                st[0] = 0;
            }
            if s_k == 1 {
                st[2] = 0;
            }
        }
        let view = Channels {
            pack,
            xd,
            shape: [n_k, c, s_k],
        };
        Ok((view, all))
    }

    /// The channel stride of a per-channel input `t` (scale, bias, inference statistics): dims
    /// right-aligned to x's, 1 everywhere but x's channel axis, which holds C or 1 (stride 0:
    /// one value for every channel unless `full`, which needs C values).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `the <pack> pack needs <what> with one value per channel (…); <what>
    /// dims <d> strides <s>, x <xd>`.
    pub(crate) fn per_channel_in(
        &self,
        what: &str,
        t: &TensorAttributes<'_>,
        full: bool,
    ) -> PluginResult<i64> {
        let (pack, xd) = (self.pack, &self.xd);
        let (r, c) = (xd.len(), xd[1]);
        let (d, st) = dims_strides(t);
        let o = r.checked_sub(d.len());
        let dim = |i: usize| match o {
            Some(o) if i >= o => d[i - o],
            _ => 1,
        };
        let ok = o.is_some()
            && (0..r).all(|i| dim(i) == 1 || (i == 1 && dim(i) == c))
            && (!full || dim(1) == c);
        let stride = match o {
            Some(o) if o <= 1 && dim(1) > 1 => st[1 - o],
            _ => 0,
        };
        if !ok || !fits(stride) {
            let holds = if full {
                format!("C = {c}")
            } else {
                format!("C = {c} or 1")
            };
            return Err(na(format!(
                "the {pack} pack needs {what} with one value per channel (dims right-aligned to x's, 1 except x's channel axis, which holds {holds}) and a stride in [0, 2147483647]; {what} dims {d:?} strides {st:?}, x {xd:?}"
            )));
        }
        Ok(stride)
    }

    /// The stride of a per-channel output or saved statistic `t`: C values whose dims
    /// collapse to one stride.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `the <pack> pack needs <what> with C = <c> values whose dims collapse
    /// to one stride in [0, 2147483647]; dims <d> strides <s>`.
    pub(crate) fn per_channel(&self, what: &str, t: &TensorAttributes<'_>) -> PluginResult<i64> {
        let (pack, c) = (self.pack, self.xd[1]);
        let (d, st) = dims_strides(t);
        let vol = d.iter().try_fold(1i64, |a, v| a.checked_mul(*v));
        match (vol, collapse(&d, &st)) {
            (Some(v), Some(cs)) if v == c && fits(cs) => Ok(cs),
            _ => Err(na(format!(
                "the {pack} pack needs {what} with C = {c} values whose dims collapse to one stride in [0, 2147483647]; dims {d:?} strides {st:?}"
            ))),
        }
    }
}

/// The static rule's `block_m` for a path: 16 for channels-last; for channels-first the
/// longest of [`TILES`] whose padding `cdiv(s, bm)·bm` stays within 4/3 of `s` (16 when none
/// does).
pub fn rule_block_m(channels_first: bool, s: i64) -> i64 {
    if !channels_first {
        return 16;
    }
    TILES
        .iter()
        .map(|t| t.0)
        .find(|&m| cdiv(s, m) * m * 3 <= 4 * s)
        .unwrap_or(16)
}

/// The static rule's `splits` for `pairs` (image, position block) pairs over `cblocks`
/// channel blocks of `tp` positions per tile: `min(cdiv(TARGET_PROGRAMS, cblocks), pairs)`
/// and, with `merged` (a launch whose every program sums all the splits' partials), at most
/// `max(1, isqrt(pairs·tp / 12))` (keeps that below a quarter of a program's own traffic);
/// then `cdiv(pairs, cdiv(pairs, splits))` so no split is empty.
pub fn rule_splits(pairs: i64, cblocks: i64, tp: i64, merged: bool) -> i64 {
    let mut sp = cdiv(TARGET_PROGRAMS, cblocks).min(pairs);
    if merged {
        sp = sp.min((pairs.saturating_mul(tp) / 12).isqrt());
    }
    let sp = sp.max(1);
    cdiv(pairs, cdiv(pairs, sp))
}
