//! The row view of a normalization node that the norm families share (`norm_fwd`, `norm_bwd`):
//! x's leading axes are the rows, its trailing (normalized) axes the columns, each collapsing to
//! one stride; per-column operands (scale, bias and their gradients) and per-row statistics
//! (mean, inverse variance or RMS) are read against that view. Every refusal is
//! `NOT_APPLICABLE` naming the pack, the tensor and its dims (the CPU reference engine serves
//! what a pack refuses).

use super::graph::{collapse, dims_strides, na};
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::TensorAttributes;

/// Largest extent or stride a kernel argument holds (i32).
const MAX: i64 = i32::MAX as i64;

fn fits(v: i64) -> bool {
    (0..=MAX).contains(&v)
}

fn volume(d: &[i64]) -> Option<i64> {
    d.iter().try_fold(1i64, |a, v| a.checked_mul(*v))
}

/// x's dims split into rows (axes `..first`) and normalized columns (axes `first..`).
#[derive(Debug, Clone)]
pub(crate) struct NormRows {
    /// The pack's name, for messages (`norm_fwd`, `norm_bwd`).
    pack: &'static str,
    /// x's dims.
    xd: Vec<i64>,
    /// The first normalized axis.
    first: usize,
    /// Rows (volume of the leading axes), ≤ 2147483647.
    pub rows: i64,
    /// Columns (volume of the normalized axes), ≤ 2147483647.
    pub cols: i64,
}

impl NormRows {
    /// The row view of x for a node with `scale` and `normalized_dim_count` `ndc`: the
    /// normalized axes are the last `ndc`, or with `ndc` 0 (the reference engine's rule) those
    /// from the first axis after 0 where scale (aligned to x's trailing axes) is not 1.
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: x with no dims or a dim below 1; scale with more axes than x; `ndc`
    /// outside `[0, rank]`; rows or columns above 2147483647.
    pub(crate) fn read(
        pack: &'static str,
        x: &TensorAttributes<'_>,
        scale: &TensorAttributes<'_>,
        ndc: i64,
    ) -> PluginResult<NormRows> {
        let (xd, _) = dims_strides(x);
        let r = xd.len();
        if r == 0 || xd.iter().any(|d| *d < 1) {
            return Err(na(format!(
                "the {pack} pack needs x dims of at least 1; x {xd:?}"
            )));
        }
        let (sd, _) = dims_strides(scale);
        if sd.len() > r {
            return Err(na(format!(
                "the {pack} pack: scale dims {sd:?} have more axes than x {xd:?}"
            )));
        }
        let off = r - sd.len();
        let aligned = |i: usize| if i >= off { sd[i - off] } else { 1 };
        let first = if ndc == 0 {
            (1..r).find(|&i| aligned(i) != 1).unwrap_or(1).min(r)
        } else if ndc < 0 || ndc as usize > r {
            return Err(na(format!(
                "the {pack} pack: normalized_dim_count {ndc} is not in [0, {r}]"
            )));
        } else {
            r - ndc as usize
        };
        match (volume(&xd[..first]), volume(&xd[first..])) {
            (Some(rows), Some(cols)) if rows <= MAX && cols <= MAX => Ok(NormRows {
                pack,
                xd,
                first,
                rows,
                cols,
            }),
            _ => Err(na(format!(
                "the {pack} pack needs at most 2147483647 rows and columns; x {xd:?} normalized from axis {first}"
            ))),
        }
    }

    /// (row stride, column stride) of `t`, a tensor of x's dims (`what` names it).
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: dims other than x's; row or normalized axes that do not collapse to
    /// one stride in `[0, 2147483647]`.
    pub(crate) fn row_col(&self, what: &str, t: &TensorAttributes<'_>) -> PluginResult<(i64, i64)> {
        let (pack, xd, first) = (self.pack, &self.xd, self.first);
        let (d, s) = dims_strides(t);
        if d != *xd {
            return Err(na(format!(
                "the {pack} pack: {what} dims {d:?} differ from x {xd:?}"
            )));
        }
        match (
            collapse(&d[..first], &s[..first]),
            collapse(&d[first..], &s[first..]),
        ) {
            (Some(a), Some(b)) if fits(a) && fits(b) => Ok((a, b)),
            _ => Err(na(format!(
                "the {pack} pack needs {what}'s row axes {:?} and normalized axes {:?} each to collapse to one stride in [0, 2147483647]; strides {s:?}",
                &d[..first],
                &d[first..]
            ))),
        }
    }

    /// The column stride of a per-column operand `t` (scale, bias, their gradients): dim 1 on
    /// x's row axes, and on the normalized axes x's dims collapsing to one stride — or, where
    /// `broadcast` allows it, all 1 (stride 0: one value for every column).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming `what`, its dims and strides, x's dims and the first normalized
    /// axis.
    pub(crate) fn per_column(
        &self,
        what: &str,
        t: &TensorAttributes<'_>,
        broadcast: bool,
    ) -> PluginResult<i64> {
        let (pack, xd, first) = (self.pack, &self.xd, self.first);
        let r = xd.len();
        let (d, s) = dims_strides(t);
        if d.len() > r {
            return Err(na(format!(
                "the {pack} pack: {what} dims {d:?} have more axes than x {xd:?}"
            )));
        }
        let o = r - d.len();
        let dim = |i: usize| if i >= o { d[i - o] } else { 1 };
        let stride = |i: usize| if i >= o { s[i - o] } else { 0 };
        let rows_one = (0..first).all(|i| dim(i) == 1);
        let all_one = (first..r).all(|i| dim(i) == 1);
        let full = (first..r).all(|i| dim(i) == xd[i]);
        let st = if broadcast && rows_one && all_one {
            Some(0)
        } else if rows_one && full {
            let nd: Vec<i64> = (first..r).map(dim).collect();
            let ns: Vec<i64> = (first..r).map(stride).collect();
            collapse(&nd, &ns).filter(|v| fits(*v))
        } else {
            None
        };
        let on_normalized = if broadcast {
            "x's dims (collapsing to one stride) or 1 on the normalized axes"
        } else {
            "x's dims (collapsing to one stride) on the normalized axes (a scale broadcast over them is the CPU reference engine's)"
        };
        st.ok_or_else(|| {
            na(format!(
                "the {pack} pack needs {what} with dim 1 on x's row axes and {on_normalized}; {what} dims {d:?} strides {s:?}, x {xd:?}, normalized from axis {first}"
            ))
        })
    }

    /// The stride of a per-row statistic `t` (mean, inverse variance / RMS): `rows` values
    /// whose dims collapse to one stride.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming `what`, its dims and strides.
    pub(crate) fn per_row(&self, what: &str, t: &TensorAttributes<'_>) -> PluginResult<i64> {
        let (pack, rows) = (self.pack, self.rows);
        let (d, s) = dims_strides(t);
        match (volume(&d), collapse(&d, &s)) {
            (Some(v), Some(c)) if v == rows && fits(c) => Ok(c),
            _ => Err(na(format!(
                "the {pack} pack needs {what} with {rows} values whose dims collapse to one stride; dims {d:?} strides {s:?}"
            ))),
        }
    }
}
