//! Convolution kernels (fprop, dgrad, wgrad) over dense row-major NC\[D\]HW arrays, 1 to 3
//! spatial dims, with pre/post padding, stride, dilation, groups and the CONVOLUTION
//! (flipped filter) mode, lowered to the tiled GEMM of [`super::gemm`].
//!
//! Logical layouts (whatever the tensors' strides; NHWC tensors arrive here already read into
//! this order by [`crate::reference::tensor`]): x and y `(N, C, spatial…)`, w
//! `(K, C/groups, filter spatial…)`. Groups = `x.C / w.C`.
//!
//! Lowering, per image n and group g (`crs` = C/g · filter taps, `P` = output positions):
//! - fprop: `y[n,g] (K/g, P) = w[g] (K/g, crs) · col (crs, P)`, where col is the im2col of
//!   x\[n\] (skipped for a 1×1, stride 1, unpadded filter: col is x\[n\] itself);
//! - dgrad: `dcol (crs, P) = w[g]ᵀ · dy[n,g]`, then col2im adds dcol into dx\[n\] (one rayon task
//!   per input channel, taps in order, so the adds are in a fixed order); a planar layer with
//!   at most 1024 im2col rows computes dcol block by block of output rows and adds each block
//!   while it is in cache (`dgrad_fused`); a 3×3 stride-1 layer Winograd serves runs as the
//!   forward convolution of dy with the transposed, rotated filter (`dgrad_winograd`);
//! - wgrad: `dw[g] (K/g, crs) += dy[n,g] · colᵀ`, images in increasing n (one GEMM per image,
//!   accumulating into dw); a small dw (≤ 16 Ki elements) over a long reduction is summed as
//!   partial products over runs of output positions instead (`wgrad_split`).
//!
//! Determinism: the GEMM's rule (tiling from the shape only, one fixed summation order per
//! element) and fixed-order im2col/col2im make results bit-identical for any thread count.
//! Owns only arithmetic; shapes were checked by the caller.

use super::gemm::{self, Epilogue, Job};
use super::recycle;
use super::winograd;
use ndarray::{ArrayD, ArrayView1, ArrayView2, ArrayViewD, ArrayViewMut2, Axis, IxDyn, s};
use rayon::prelude::*;
use std::borrow::Cow;
use std::cell::RefCell;

/// Geometry of one convolution (spatial vectors have one entry per spatial dim).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvGeometry {
    /// Padding before each spatial dim.
    pub pre: Vec<usize>,
    /// Padding after each spatial dim.
    pub post: Vec<usize>,
    /// Stride per spatial dim.
    pub stride: Vec<usize>,
    /// Dilation per spatial dim.
    pub dilation: Vec<usize>,
    /// True for `ConvMode::CONVOLUTION` (filter flipped in every spatial dim).
    pub flip: bool,
}

/// Whether the forward or data-gradient step of a convolution with this geometry, input
/// channels `c`, output channels `k`, `groups` groups and filter spatial dims `filter` may
/// run Winograd F(2×2, 3×3) ([`winograd`]): 2-D, 3×3, stride and dilation 1, one group, at
/// least `MIN_CHANNELS` (16) channels in and out. (The data gradient also needs padding
/// ≤ 2, so this may say yes where that step computes directly: a note, not a promise.)
pub fn may_use_winograd(
    geo: &ConvGeometry,
    c: usize,
    k: usize,
    groups: usize,
    filter: &[usize],
) -> bool {
    filter == [3, 3]
        && geo.stride.iter().all(|&s| s == 1)
        && geo.dilation.iter().all(|&d| d == 1)
        && groups == 1
        && c >= winograd::MIN_CHANNELS
        && k >= winograd::MIN_CHANNELS
}

/// 3-D view of the problem: every shape promoted to 3 spatial dims (leading 1s).
struct Geo3 {
    n: usize,
    c: usize,
    k: usize,
    cg: usize,
    groups: usize,
    i: [usize; 3],
    f: [usize; 3],
    o: [usize; 3],
    pre: [usize; 3],
    stride: [usize; 3],
    dil: [usize; 3],
}

fn pad3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    let off = 3 - v.len();
    out[off..].copy_from_slice(v);
    out
}

/// Output positions `o` in `0..out` whose input position `o·stride + tap·dil − pre` lies in
/// `0..inp`, as a range (possibly empty).
fn valid(
    out: usize,
    inp: usize,
    stride: usize,
    tap: usize,
    dil: usize,
    pre: usize,
) -> (usize, usize) {
    let off = (tap * dil) as isize - pre as isize;
    let s = stride as isize;
    // o·s + off ≥ 0  ⇔  o ≥ ceil(−off / s)
    let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
    // o·s + off ≤ inp − 1  ⇔  o ≤ floor((inp − 1 − off) / s)
    let top = inp as isize - 1 - off;
    let hi = if top < 0 { 0 } else { top / s + 1 };
    let (lo, hi) = (lo.clamp(0, out as isize), hi.clamp(0, out as isize));
    (lo as usize, hi.max(lo) as usize)
}

impl Geo3 {
    fn new(x_dims: &[usize], w_dims: &[usize], y_dims: &[usize], g: &ConvGeometry) -> Geo3 {
        let cg = w_dims[1];
        let c = x_dims[1];
        Geo3 {
            n: x_dims[0],
            c,
            k: w_dims[0],
            cg,
            groups: c / cg,
            i: pad3(&x_dims[2..], 1),
            f: pad3(&w_dims[2..], 1),
            o: pad3(&y_dims[2..], 1),
            pre: pad3(&g.pre, 0),
            stride: pad3(&g.stride, 1),
            dil: pad3(&g.dilation, 1),
        }
    }
    fn taps(&self) -> usize {
        self.f.iter().product()
    }
    fn ivol(&self) -> usize {
        self.i.iter().product()
    }
    fn ovol(&self) -> usize {
        self.o.iter().product()
    }
    /// A 1×1 filter, stride 1, no padding: the im2col matrix is the input itself.
    fn is_pointwise(&self) -> bool {
        self.taps() == 1 && self.stride == [1; 3] && self.i == self.o && self.pre == [0; 3]
    }
    /// A 1×1 filter without leading padding, every output inside the input (trailing padding
    /// never read), and an output that is not the input itself (a stride, or an output
    /// smaller than the input): each output reads exactly one input.
    fn is_subsample(&self) -> bool {
        let inside = (0..3).all(|d| self.o[d] == 0 || (self.o[d] - 1) * self.stride[d] < self.i[d]);
        self.taps() == 1 && self.pre == [0; 3] && inside && !self.is_pointwise()
    }
    /// The adjoint of [`Geo3::subsample`] for one image: `dcol` `(C, out…)` packed, written
    /// into the inputs it came from in the zeroed `dx` `(C, in…)` (each input receives at
    /// most one value, so no sums: the order cannot matter). Planes in parallel.
    fn scatter_subsample(&self, dcol: &[f32], dx: &mut [f32]) {
        let (ivol, ovol) = (self.ivol(), self.ovol());
        if ivol == 0 || ovol == 0 {
            return;
        }
        let [sd, sh, sw] = self.stride;
        dx.par_chunks_mut(ivol)
            .zip(dcol.par_chunks(ovol))
            .for_each(|(dst, src)| {
                for (q, line) in src.chunks(self.o[2]).enumerate() {
                    let (od, oh) = (q / self.o[1], q % self.o[1]);
                    let row = &mut dst[(od * sd * self.i[1] + oh * sh) * self.i[2]..];
                    for (d, v) in row.iter_mut().step_by(sw).zip(line) {
                        *d = *v;
                    }
                }
            });
    }
    /// When [`Geo3::is_subsample`]: the inputs the filter reads from the planes of `x` (all
    /// images `(N, C, in…)`, or one image `(C, in…)`), packed as `(planes, out…)`, one pass
    /// over the output volume (planes in parallel). None otherwise.
    fn subsample(&self, x: &[f32]) -> Option<Vec<f32>> {
        if !self.is_subsample() {
            return None;
        }
        let (ivol, ovol) = (self.ivol(), self.ovol());
        let mut sub = vec![0f32; x.len() / ivol.max(1) * ovol];
        if ovol == 0 {
            return Some(sub);
        }
        let [sd, sh, sw] = self.stride;
        sub.par_chunks_mut(ovol)
            .zip(x.par_chunks(ivol.max(1)))
            .for_each(|(dst, src)| {
                for (q, line) in dst.chunks_mut(self.o[2]).enumerate() {
                    let (od, oh) = (q / self.o[1], q % self.o[1]);
                    let row = &src[(od * sd * self.i[1] + oh * sh) * self.i[2]..];
                    for (v, x) in line.iter_mut().zip(row.iter().step_by(sw)) {
                        *v = *x;
                    }
                }
            });
        Some(sub)
    }
    /// The F(2×2, 3×3) shape when [`winograd`] serves this problem: 2-D, 3×3 filter, stride
    /// and dilation 1, one group, at least [`winograd::MIN_CHANNELS`] input and output
    /// channels.
    fn winograd(&self) -> Option<winograd::Shape> {
        let planar = self.i[0] == 1 && self.o[0] == 1 && self.f[0] == 1;
        let fits = planar
            && self.f[1..] == [3, 3]
            && self.stride == [1; 3]
            && self.dil == [1; 3]
            && self.groups == 1
            && self.c >= winograd::MIN_CHANNELS
            && self.k >= winograd::MIN_CHANNELS;
        fits.then_some(winograd::Shape {
            n: self.n,
            c: self.c,
            k: self.k,
            h: self.i[1],
            w: self.i[2],
            oh: self.o[1],
            ow: self.o[2],
            ph: self.pre[1],
            pw: self.pre[2],
        })
    }
    /// Tap index `t` → filter coordinates.
    fn tap(&self, t: usize) -> [usize; 3] {
        [
            t / (self.f[1] * self.f[2]),
            (t / self.f[2]) % self.f[1],
            t % self.f[2],
        ]
    }
    /// Calls `f(output row offset, input row offset, ow range, input column of ow = 0)` for
    /// every output row `q = od·out_h + oh` in `qs` that tap `t` reads inside the input, in
    /// increasing q; rows in the padding are skipped. The input column of `ow` is
    /// `ow·stride_w + first`.
    fn rows(
        &self,
        t: usize,
        qs: std::ops::Range<usize>,
        mut f: impl FnMut(usize, usize, (usize, usize), isize),
    ) {
        let tp = self.tap(t);
        let v: [(usize, usize); 3] = std::array::from_fn(|d| {
            valid(
                self.o[d],
                self.i[d],
                self.stride[d],
                tp[d],
                self.dil[d],
                self.pre[d],
            )
        });
        if v[2].0 >= v[2].1 {
            return;
        }
        let first = (tp[2] * self.dil[2]) as isize - self.pre[2] as isize;
        for q in qs {
            let (od, oh) = (q / self.o[1], q % self.o[1]);
            if od < v[0].0 || od >= v[0].1 || oh < v[1].0 || oh >= v[1].1 {
                continue;
            }
            let id = od * self.stride[0] + tp[0] * self.dil[0] - self.pre[0];
            let ih = oh * self.stride[1] + tp[1] * self.dil[1] - self.pre[1];
            f(
                q * self.o[2],
                (id * self.i[1] + ih) * self.i[2],
                v[2],
                first,
            );
        }
    }
    /// Output rows `q = od·out_h + oh` of the whole output.
    fn all_rows(&self) -> std::ops::Range<usize> {
        0..self.o[0] * self.o[1]
    }
    /// im2col of output positions `p0..p0 + w` of channels `c0..c0 + cn` of one image (read
    /// through `x`, see [`Planes`]) into `dst` `(cn·taps, w)`, sequentially (one tile's
    /// columns). Tap by tap, output row by output row: the tap's valid range and input row
    /// are worked out once and then applied to every channel (a zero fill, one contiguous
    /// copy and a zero fill per channel); every element of `dst` is written once. Fewer than 8
    /// channels go row by row ([`Geo3::im2col_range_by_row`]), where the per-tap work would
    /// not be shared.
    fn im2col_range(
        &self,
        x: &Planes<'_>,
        c0: usize,
        cn: usize,
        p0: usize,
        w: usize,
        dst: &mut [f32],
    ) {
        if cn < 8 {
            return self.im2col_range_by_row(x, c0, cn, p0, w, dst);
        }
        let taps = self.taps();
        let sw = self.stride[2];
        let o2 = self.o[2].max(1);
        let qs = p0 / o2..(p0 + w).div_ceil(o2);
        for t in 0..taps {
            let tp = self.tap(t);
            let v: [(usize, usize); 3] = std::array::from_fn(|d| {
                valid(
                    self.o[d],
                    self.i[d],
                    self.stride[d],
                    tp[d],
                    self.dil[d],
                    self.pre[d],
                )
            });
            let first = (tp[2] * self.dil[2]) as isize - self.pre[2] as isize;
            for q in qs.clone() {
                let o0 = q * o2;
                let (a, b) = (o0.max(p0), (o0 + o2).min(p0 + w));
                if a >= b {
                    continue;
                }
                let (od, oh) = (q / self.o[1], q % self.o[1]);
                let (ow_a, ow_b) = (a - o0, b - o0);
                let (lo, hi) = (v[2].0.clamp(ow_a, ow_b), v[2].1.clamp(ow_a, ow_b));
                let inside =
                    (v[0].0..v[0].1).contains(&od) && (v[1].0..v[1].1).contains(&oh) && lo < hi;
                let row = if inside {
                    let id = od * self.stride[0] + tp[0] * self.dil[0] - self.pre[0];
                    let ih = oh * self.stride[1] + tp[1] * self.dil[1] - self.pre[1];
                    id * self.i[1] + ih
                } else {
                    0
                };
                let col = ((lo * sw) as isize + first).max(0) as usize;
                for c in 0..cn {
                    let seg = &mut dst[(c * taps + t) * w..][a - p0..b - p0];
                    if !inside {
                        seg.fill(0.0);
                        continue;
                    }
                    seg[..lo - ow_a].fill(0.0);
                    seg[lo - ow_a..hi - ow_a].copy_from_slice(x.row_run(c0 + c, row, col, hi - lo));
                    seg[hi - ow_a..].fill(0.0);
                }
            }
        }
    }
    /// [`Geo3::im2col_range`] for few channels (a stem layer: 3 channels, 49 taps): one
    /// `dst` row (channel, tap) at a time, zero-filling only between the copied segments.
    fn im2col_range_by_row(
        &self,
        x: &Planes<'_>,
        c0: usize,
        cn: usize,
        p0: usize,
        w: usize,
        dst: &mut [f32],
    ) {
        let taps = self.taps();
        let sw = self.stride[2];
        let o2 = self.o[2].max(1);
        let qs = p0 / o2..(p0 + w).div_ceil(o2);
        for (row, d) in dst.chunks_mut(w).enumerate().take(cn * taps) {
            let (c, t) = (c0 + row / taps, row % taps);
            // Segments arrive in increasing position order: zero only the gaps between them.
            let mut done = 0;
            self.rows(t, qs.clone(), |o0, i0, (lo, hi), first| {
                let (a, b) = ((o0 + lo).max(p0), (o0 + hi).min(p0 + w));
                if a >= b {
                    return;
                }
                d[done..a - p0].fill(0.0);
                done = b - p0;
                let col = ((a - o0) * sw) as isize + first;
                d[a - p0..b - p0].copy_from_slice(x.run(c, i0, col as usize, b - a));
            });
            d[done..].fill(0.0);
        }
    }
    /// im2col of the images `x` (each read through its [`Planes`]) into `col`
    /// `(C·taps, images·P)`, image i in columns `i·P..(i + 1)·P`; rows in parallel.
    fn im2col(&self, x: &[Planes<'_>], col: &mut [f32]) {
        let (taps, ovol) = (self.taps(), self.ovol());
        let sw = self.stride[2];
        if ovol == 0 {
            return;
        }
        col.par_chunks_mut(ovol * x.len())
            .enumerate()
            .for_each(|(row, line)| {
                let (c, t) = (row / taps, row % taps);
                for (img, dst) in x.iter().zip(line.chunks_mut(ovol)) {
                    dst.fill(0.0);
                    self.rows(t, self.all_rows(), |o0, i0, (lo, hi), first| {
                        let col = (lo * sw) as isize + first;
                        dst[o0 + lo..o0 + hi].copy_from_slice(img.run(
                            c,
                            i0,
                            col as usize,
                            hi - lo,
                        ));
                    });
                }
            });
    }
    /// col2im: adds `dcol` `(C·taps, P)` into one image `dx` `(C, in…)`. One task per
    /// (channel, block of input rows); each element receives its adds in increasing tap order
    /// whatever the blocks, so the result does not depend on them or on the thread count.
    /// With stride_w > 1 the adds go into the phase layout of [`Planes`] (contiguous runs,
    /// not a strided scatter), which is then interleaved into `dx` (a copy: the same sums).
    fn col2im(&self, dcol: &[f32], dx: &mut [f32]) {
        let (taps, ivol, ovol) = (self.taps(), self.ivol(), self.ovol());
        if ivol == 0 {
            return;
        }
        let (sw, row) = (self.stride[2], self.i[2]);
        let wq = row.div_ceil(sw);
        let rl = sw * wq;
        let rows = self.i[0] * self.i[1];
        let mut phased = if sw > 1 {
            vec![0f32; self.c * rows * rl]
        } else {
            Vec::new()
        };
        let (target, plane): (&mut [f32], usize) = if sw > 1 {
            (&mut phased, rows * rl)
        } else {
            (&mut *dx, ivol)
        };
        let blk = (4096 / rl).max(1) * rl;
        target
            .par_chunks_mut(plane)
            .enumerate()
            .flat_map(|(c, dst)| {
                dst.par_chunks_mut(blk)
                    .enumerate()
                    .map(move |(b, d)| (c, b * blk, d))
            })
            .for_each(|(c, base, dst)| {
                for t in 0..taps {
                    let src = &dcol[(c * taps + t) * ovol..][..ovol];
                    self.rows(t, self.all_rows(), |o0, i0, (lo, hi), first| {
                        let r0 = i0 / row * rl;
                        if r0 < base || r0 >= base + dst.len() {
                            return;
                        }
                        let s = &src[o0 + lo..o0 + hi];
                        let col = ((lo * sw) as isize + first) as usize;
                        let at = r0 - base + (col % sw) * wq + col / sw;
                        for (d, v) in dst[at..at + s.len()].iter_mut().zip(s) {
                            *d += v;
                        }
                    });
                }
            });
        if sw > 1 {
            dx.par_chunks_mut(ivol)
                .zip(phased.par_chunks(rows * rl))
                .for_each(|(out, src)| {
                    for (line, ph) in out.chunks_mut(row).zip(src.chunks(rl)) {
                        for (w, v) in line.iter_mut().enumerate() {
                            *v = ph[(w % sw) * wq + w / sw];
                        }
                    }
                });
        }
    }
}

/// The filter flipped in every spatial dim (dims `(K, C/g, spatial…)`).
pub fn flip_filter(w: &ArrayD<f32>) -> ArrayD<f32> {
    flip_view(w.view())
}

/// [`flip_filter`] of a view (any strides).
fn flip_view(v: ArrayViewD<'_, f32>) -> ArrayD<f32> {
    // Reversing every spatial axis of a dense row-major filter block reverses its elements.
    if let Some(s) = v.as_slice() {
        let taps: usize = v.shape()[2.min(v.ndim())..].iter().product();
        let mut out = s.to_vec();
        if taps > 0 {
            out.chunks_mut(taps).for_each(<[f32]>::reverse);
        }
        return ArrayD::from_shape_vec(v.raw_dim(), out).expect("w volume");
    }
    let mut v = v;
    for ax in 2..v.ndim() {
        v.invert_axis(ndarray::Axis(ax));
    }
    v.as_standard_layout().into_owned()
}

fn dense(a: &ArrayD<f32>) -> Cow<'_, [f32]> {
    match a.as_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(a.iter().copied().collect()),
    }
}

/// The elements of `a` in row-major order: borrowed when it is in standard layout (a bound
/// buffer read in place), else copied.
fn dense_view<'a>(a: &ArrayViewD<'a, f32>) -> Cow<'a, [f32]> {
    match a.to_slice() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(a.iter().copied().collect()),
    }
}

/// One image `(C, in…)` as im2col reads it. With stride_w 1 the planes are the image itself;
/// with stride_w `s` > 1 each input row of width W is stored as its `s` phases (columns
/// `ph, ph + s, ph + 2s, …`, each `ceil(W / s)` long, zero-filled at the end), so the
/// input columns a strided tap reads for consecutive outputs are one contiguous run (a copy,
/// not a gather). Built once per image: one pass over the input.
struct Planes<'a> {
    data: Cow<'a, [f32]>,
    /// Horizontal stride (phases per row).
    sw: usize,
    /// Phase length, elements.
    wq: usize,
    /// Input row width W, elements.
    row: usize,
    /// Elements per channel plane.
    plane: usize,
}

impl<'a> Planes<'a> {
    /// The planes of image `x` `(C, in…)` for `geo`'s horizontal stride.
    fn new(geo: &Geo3, x: &'a [f32]) -> Planes<'a> {
        let (sw, row, ivol) = (geo.stride[2], geo.i[2], geo.ivol());
        if sw == 1 || row == 0 {
            return Planes {
                data: Cow::Borrowed(x),
                sw: 1,
                wq: row,
                row,
                plane: ivol,
            };
        }
        let wq = row.div_ceil(sw);
        let rows = geo.i[0] * geo.i[1];
        let plane = rows * sw * wq;
        let mut data = vec![0f32; geo.c * plane];
        data.par_chunks_mut(plane).enumerate().for_each(|(c, dst)| {
            let src = &x[c * ivol..(c + 1) * ivol];
            for (line, out) in src.chunks(row).zip(dst.chunks_mut(sw * wq)) {
                for (ph, o) in out.chunks_mut(wq).enumerate() {
                    for (v, x) in o.iter_mut().zip(line[ph.min(row)..].iter().step_by(sw)) {
                        *v = *x;
                    }
                }
            }
        });
        Planes {
            data: Cow::Owned(data),
            sw,
            wq,
            row,
            plane,
        }
    }
    /// `len` inputs of channel `c`, input row at plane offset `i0` (a multiple of W), columns
    /// `col, col + sw, …` (all inside the row).
    fn run(&self, c: usize, i0: usize, col: usize, len: usize) -> &[f32] {
        self.row_run(c, i0 / self.row.max(1), col, len)
    }
    /// As [`Planes::run`], with the input row given by its index `r` (`id·H + ih`).
    fn row_run(&self, c: usize, r: usize, col: usize, len: usize) -> &[f32] {
        let at = c * self.plane + r * self.sw * self.wq + (col % self.sw) * self.wq + col / self.sw;
        &self.data[at..at + len]
    }
}

thread_local! {
    /// Per-thread im2col scratch of the fused fprop path, kept between calls (grows to the
    /// largest tile seen on that thread).
    static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Largest scratch (in floats, 16 MiB) a thread keeps between calls; larger tiles use a
/// buffer freed after the tile.
const SCRATCH_KEEP: usize = 4 << 20;

/// Runs `f` on `len` floats of this thread's scratch buffer (contents unspecified).
fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    if len > SCRATCH_KEEP {
        return f(&mut vec![0f32; len]);
    }
    SCRATCH.with(|s| {
        let mut v = s.borrow_mut();
        if v.len() < len {
            v.resize(len, 0.0);
        }
        f(&mut v[..len])
    })
}

fn mat(rows: usize, cols: usize, v: &[f32]) -> ArrayView2<'_, f32> {
    ArrayView2::from_shape((rows, cols), &v[..rows * cols]).expect("matrix")
}

fn mat_mut(rows: usize, cols: usize, v: &mut [f32]) -> ArrayViewMut2<'_, f32> {
    ArrayViewMut2::from_shape((rows, cols), &mut v[..rows * cols]).expect("matrix")
}

/// Output positions per image below which fprop puts every image's columns into one GEMM
/// (a GEMM over 49 or 196 columns per image runs far below one over 8× as many).
const BATCH_BELOW: usize = 256;

/// Forward convolution: y `(N, K, out…)` = x `(N, C, in…)` ⋆ w `(K, C/g, f…)`.
pub fn conv_fprop(
    x: &ArrayD<f32>,
    w: &ArrayD<f32>,
    y_dims: &[usize],
    g: &ConvGeometry,
) -> ArrayD<f32> {
    conv_fprop_with(x, w, y_dims, g, &Epilogue::NONE)
}

/// [`conv_fprop`] with an [`Epilogue`] fused into the GEMM output pass: `y = act(conv + bias)`
/// (a [`gemm::Bias::PerRow`] bias has K values, one per output channel).
pub fn conv_fprop_with(
    x: &ArrayD<f32>,
    w: &ArrayD<f32>,
    y_dims: &[usize],
    g: &ConvGeometry,
    epi: &Epilogue<'_>,
) -> ArrayD<f32> {
    conv_fprop_views(x.view(), w.view(), None, y_dims, g, epi)
}

/// [`conv_fprop_with`] on views of any strides (x and w are read in place when they are in
/// standard layout: a bound weight buffer is not copied), with an optional residual `res` of
/// y's dims added by the epilogue after the bias and before the activation: `y = act((conv +
/// bias) + res)`, the same f32 operations as the separate ADD and activation nodes.
pub fn conv_fprop_views(
    x: ArrayViewD<'_, f32>,
    w: ArrayViewD<'_, f32>,
    res: Option<ArrayViewD<'_, f32>>,
    y_dims: &[usize],
    g: &ConvGeometry,
    epi: &Epilogue<'_>,
) -> ArrayD<f32> {
    let w_dims = w.shape().to_vec();
    let ws: Cow<'_, [f32]> = if g.flip {
        Cow::Owned(flip_view(w).into_raw_vec_and_offset().0)
    } else {
        dense_view(&w)
    };
    let res = res.map(|r| dense_view(&r));
    let rs = res.as_deref();
    let mut geo = Geo3::new(x.shape(), &w_dims, y_dims, g);
    let mut xs = dense_view(&x);
    if let Some(sub) = geo.subsample(&xs) {
        // A strided unpadded 1×1 filter reads one input per output: those inputs, packed,
        // are the GEMM's right operand as is (the 1×1 stride-1 case below).
        (xs, geo.i, geo.stride) = (Cow::Owned(sub), geo.o, [1; 3]);
    }
    let (ivol, ovol) = (geo.ivol(), geo.ovol());
    let kg = geo.k / geo.groups;
    let crs = geo.cg * geo.taps();
    // Every element is written below (each path overwrites all of y).
    let mut y = recycle::take(geo.n * geo.k * ovol);
    // With a residual, the paths that write y in a layout of their own run bare and the
    // epilogue is one pass over y afterwards (the same f32 operations, in the same order).
    let late = |y: &mut [f32], rs: &[f32]| {
        y.par_chunks_mut(ovol.max(1))
            .zip(rs.par_chunks(ovol.max(1)))
            .enumerate()
            .for_each(|(nk, (dst, r))| {
                epi.apply_row_res(nk % geo.k, 0, Some(ArrayView1::from(r)), dst);
            });
    };
    if let Some(s) = geo.winograd() {
        match rs {
            None => winograd::fprop(&s, &xs, &ws, epi, &mut y),
            Some(rs) => {
                winograd::fprop(&s, &xs, &ws, &Epilogue::NONE, &mut y);
                late(&mut y, rs);
            }
        }
        return ArrayD::from_shape_vec(IxDyn(y_dims), y).expect("y volume");
    }
    let direct = geo.is_pointwise();
    if geo.n > 1 && ovol > 0 && ovol < BATCH_BELOW {
        // Few output positions per image: all images' columns in one GEMM per group,
        // `Y' (K, N·P) = w · col (C·taps, N·P)`, then Y' is unpacked into y (N, K, P).
        let np = geo.n * ovol;
        let mut col = recycle::take(geo.c * geo.taps() * np);
        if direct {
            col.par_chunks_mut(np).enumerate().for_each(|(c, line)| {
                for (n, dst) in line.chunks_mut(ovol).enumerate() {
                    dst.copy_from_slice(&xs[(n * geo.c + c) * ivol..][..ovol]);
                }
            });
        } else {
            let planes: Vec<Planes<'_>> = (0..geo.n)
                .map(|n| Planes::new(&geo, &xs[n * geo.c * ivol..(n + 1) * geo.c * ivol]))
                .collect();
            geo.im2col(&planes, &mut col);
        }
        let mut yt = recycle::take(geo.k * np);
        let jobs = yt
            .chunks_mut(kg * np)
            .enumerate()
            .take(geo.groups)
            .map(|(grp, yg)| Job {
                a: mat(kg, crs, &ws[grp * kg * crs..]),
                b: mat(crs, np, &col[grp * crs * np..]),
                c: mat_mut(kg, np, yg),
                row_base: grp * kg,
                res: None,
            })
            .collect();
        gemm::run(
            jobs,
            false,
            if rs.is_some() { &Epilogue::NONE } else { epi },
        );
        y.par_chunks_mut(ovol).enumerate().for_each(|(nk, dst)| {
            let (n, k) = (nk / geo.k, nk % geo.k);
            dst.copy_from_slice(&yt[k * np + n * ovol..][..ovol]);
        });
        if let Some(rs) = rs {
            late(&mut y, rs);
        }
        return ArrayD::from_shape_vec(IxDyn(y_dims), y).expect("y volume");
    }
    // One row tile per group (the usual case): each tile builds the im2col of its own columns
    // in a per-thread scratch buffer right before its GEMM (no whole-image col pass). The tile
    // shape is the one `gemm::run` would pick, so the bits are the same either way.
    let (mb, nb) = gemm::tile_shape(geo.groups, kg, ovol);
    if !direct && mb >= kg && ovol > 0 {
        // Every image's tiles in one parallel pass (no barrier between images); the planes
        // of all images are built first (for stride_w > 1 that is one copy of x).
        let planes: Vec<Planes<'_>> = (0..geo.n)
            .map(|n| Planes::new(&geo, &xs[n * geo.c * ivol..(n + 1) * geo.c * ivol]))
            .collect();
        let mut tiles = Vec::new();
        for (n, yn) in y.chunks_mut(geo.k * ovol).enumerate().take(geo.n) {
            for (grp, yg) in yn.chunks_mut(kg * ovol).enumerate().take(geo.groups) {
                for (c0, tile) in gemm::pieces(mat_mut(kg, ovol, yg), Axis(1), nb) {
                    tiles.push((n, grp, c0, tile));
                }
            }
        }
        tiles.into_par_iter().for_each(|(n, grp, c0, mut tile)| {
            let w_cols = tile.dim().1;
            with_scratch(crs * w_cols, |buf| {
                geo.im2col_range(&planes[n], grp * geo.cg, geo.cg, c0, w_cols, buf);
                let a = mat(kg, crs, &ws[grp * kg * crs..]);
                gemm::sgemm(&a, &mat(crs, w_cols, buf), false, &mut tile);
            });
            let rt = rs.map(|r| {
                mat(kg, ovol, &r[(n * geo.k + grp * kg) * ovol..])
                    .slice_move(s![.., c0..c0 + w_cols])
            });
            epi.apply(grp * kg, 0..kg, c0..c0 + w_cols, rt, &mut tile);
        });
        return ArrayD::from_shape_vec(IxDyn(y_dims), y).expect("y volume");
    }
    let mut col = vec![0f32; if direct { 0 } else { geo.c * geo.taps() * ovol }];
    for (n, yn) in y.chunks_mut(geo.k * ovol.max(1)).enumerate().take(geo.n) {
        let xn = &xs[n * geo.c * ivol..(n + 1) * geo.c * ivol];
        let cols: &[f32] = if direct {
            xn
        } else {
            geo.im2col(&[Planes::new(&geo, xn)], &mut col);
            &col
        };
        let jobs = yn
            .chunks_mut(kg * ovol.max(1))
            .enumerate()
            .take(geo.groups)
            .map(|(grp, yg)| Job {
                a: mat(kg, crs, &ws[grp * kg * crs..]),
                b: mat(crs, ovol, &cols[grp * crs * ovol..]),
                c: mat_mut(kg, ovol, yg),
                row_base: grp * kg,
                res: rs.map(|r| mat(kg, ovol, &r[(n * geo.k + grp * kg) * ovol..])),
            })
            .collect();
        gemm::run(jobs, false, epi);
    }
    ArrayD::from_shape_vec(IxDyn(y_dims), y).expect("y volume")
}

/// Largest im2col height (C · taps) of the fused planar dgrad ([`dgrad_fused`]).
const DGRAD_FUSE_ROWS: usize = 1024;
/// dcol floats per block of [`dgrad_fused`] (512 KiB: the block stays in L2 for its col2im).
const DGRAD_BLOCK_FLOATS: usize = 128 * 1024;

/// Data gradient of a planar (2-D or 1-D) layer with at most [`DGRAD_FUSE_ROWS`] im2col rows
/// (the 7×7 stem: 147), blocked so dcol never leaves the cache: the output rows are cut into
/// blocks of `R` rows (`R·W_out·C·taps ≤ DGRAD_BLOCK_FLOATS`, and at least the smallest `R`
/// for which blocks two apart read disjoint input rows); each block (a rayon task) computes
/// its dcol `(C·taps, R·W_out)` into its scratch with one single-threaded GEMM per group and
/// adds it at once into the input rows it reads. Even blocks of every image run in one
/// parallel pass, then odd blocks: each dx element receives its adds block by block (even
/// before odd), channel plane by plane, taps in order, so the sums do not depend on the
/// thread count. Returns false (dx untouched) when the layer is not of that kind.
fn dgrad_fused(geo: &Geo3, dys: &[f32], ws: &[f32], dx: &mut [f32]) -> bool {
    let taps = geo.taps();
    let ctaps = geo.c * taps;
    let (ivol, ovol) = (geo.ivol(), geo.ovol());
    let planar = geo.i[0] == 1 && geo.o[0] == 1 && geo.f[0] == 1;
    if !planar || ctaps > DGRAD_FUSE_ROWS || ovol == 0 || ivol == 0 || ctaps == 0 {
        return false;
    }
    let (oh_n, ow, ih_n, iw_n) = (geo.o[1], geo.o[2], geo.i[1], geo.i[2]);
    let (sh, sw, dh, dw, ph, pw) = (
        geo.stride[1],
        geo.stride[2],
        geo.dil[1],
        geo.dil[2],
        geo.pre[1],
        geo.pre[2],
    );
    let (fh, fw) = (geo.f[1], geo.f[2]);
    let mut rmin = 1;
    while rmin * sh + sh <= (fh - 1) * dh {
        rmin += 1;
    }
    let r = (DGRAD_BLOCK_FLOATS / (ctaps * ow)).max(rmin).min(oh_n);
    let blocks = oh_n.div_ceil(r);
    // Input rows [lo, hi) that block b reads.
    let rows_of = |b: usize| {
        let (r0, r1) = (b * r, ((b + 1) * r).min(oh_n));
        let hi = ((r1 - 1) * sh + (fh - 1) * dh + 1)
            .saturating_sub(ph)
            .min(ih_n);
        let lo = (r0 * sh).saturating_sub(ph).min(hi);
        (lo, hi)
    };
    let kg = geo.k / geo.groups;
    let crs = geo.cg * taps;
    for parity in 0..2 {
        let mine: Vec<usize> = (parity..blocks).step_by(2).collect();
        let mut tasks = Vec::new();
        for (n, dxn) in dx.chunks_mut(geo.c * ivol).enumerate().take(geo.n) {
            let mut per_block: Vec<Vec<&mut [f32]>> = mine.iter().map(|_| Vec::new()).collect();
            for plane in dxn.chunks_mut(ivol) {
                let (mut rest, mut done) = (plane, 0);
                for (j, &b) in mine.iter().enumerate() {
                    let (lo, hi) = rows_of(b);
                    if lo >= hi {
                        per_block[j].push(&mut []);
                        continue;
                    }
                    let tail = std::mem::take(&mut rest);
                    let (_, tail) = tail.split_at_mut((lo - done) * iw_n);
                    let (block, tail) = tail.split_at_mut((hi - lo) * iw_n);
                    per_block[j].push(block);
                    (rest, done) = (tail, hi);
                }
            }
            for (j, planes) in per_block.into_iter().enumerate() {
                tasks.push((n, mine[j], planes));
            }
        }
        tasks.into_par_iter().for_each(|(n, b, mut planes)| {
            let (r0, r1) = (b * r, ((b + 1) * r).min(oh_n));
            let lo = rows_of(b).0;
            let pb = (r1 - r0) * ow;
            with_scratch(ctaps * pb, |buf| {
                for grp in 0..geo.groups {
                    let a = mat(kg, crs, &ws[grp * kg * crs..]).reversed_axes();
                    let dyg = mat(kg, ovol, &dys[(n * geo.k + grp * kg) * ovol..]);
                    let bm = dyg.slice(ndarray::s![.., r0 * ow..r1 * ow]);
                    let mut c = mat_mut(crs, pb, &mut buf[grp * crs * pb..]);
                    gemm::sgemm(&a, &bm, false, &mut c);
                }
                for (c, dst) in planes.iter_mut().enumerate() {
                    for t in 0..taps {
                        let (th, tw) = (t / fw, t % fw);
                        let (wlo, whi) = valid(ow, iw_n, sw, tw, dw, pw);
                        if wlo >= whi {
                            continue;
                        }
                        let iw0 = wlo * sw + tw * dw - pw;
                        let src = &buf[(c * taps + t) * pb..][..pb];
                        for oh in r0..r1 {
                            let ih = oh * sh + th * dh;
                            if ih < ph || ih - ph >= ih_n {
                                continue;
                            }
                            let row = &mut dst[(ih - ph - lo) * iw_n..][..iw_n];
                            let s = &src[(oh - r0) * ow + wlo..(oh - r0) * ow + whi];
                            if sw == 1 {
                                for (d, v) in row[iw0..iw0 + s.len()].iter_mut().zip(s) {
                                    *d += v;
                                }
                            } else {
                                for (d, v) in row[iw0..].iter_mut().step_by(sw).zip(s) {
                                    *d += v;
                                }
                            }
                        }
                    }
                }
            });
        });
    }
    true
}

/// The data gradient of a 2-D 3×3 stride-1 undilated single-group layer with ≥
/// [`winograd::MIN_CHANNELS`] channels in and out and padding ≤ 2 on each side, as the
/// forward convolution it equals: `dx = fprop(dy, w')` with `w'[c, k, r, s] = w[k, c, 2 − r,
/// 2 − s]` and padding `2 − pre` / `2 − post`, which runs Winograd F(2×2, 3×3) like the
/// layer's own fprop. None (nothing computed) for any other layer. `w` is in
/// cross-correlation form (already flipped for the CONVOLUTION mode).
fn dgrad_winograd(
    geo: &Geo3,
    g: &ConvGeometry,
    dy: &ArrayD<f32>,
    w: &ArrayD<f32>,
    dx_dims: &[usize],
) -> Option<ArrayD<f32>> {
    let fits = dx_dims.len() == 4
        && geo.f == [1, 3, 3]
        && geo.stride == [1; 3]
        && geo.dil == [1; 3]
        && geo.groups == 1
        && geo.c >= winograd::MIN_CHANNELS
        && geo.k >= winograd::MIN_CHANNELS
        && g.pre.iter().chain(&g.post).all(|&p| p <= 2);
    if !fits {
        return None;
    }
    // The transposed filter `(C, K, 3, 3)`, rotated by 180° (what conv_fprop's CONVOLUTION
    // mode would do with the plain transpose): one pass, the same values, so the same bits.
    let (k, c, taps) = (w.shape()[0], w.shape()[1], 9);
    let ws = dense(w);
    let mut wt = vec![0f32; k * c * taps];
    wt.par_chunks_mut(k * taps)
        .enumerate()
        .for_each(|(ci, dst)| {
            for (ki, d) in dst.chunks_exact_mut(taps).enumerate() {
                let src = &ws[(ki * c + ci) * taps..][..taps];
                d.iter_mut()
                    .zip(src.iter().rev())
                    .for_each(|(o, &v)| *o = v);
            }
        });
    let wt = ArrayD::from_shape_vec(IxDyn(&[c, k, 3, 3]), wt).expect("filter volume");
    let gt = ConvGeometry {
        pre: g.pre.iter().map(|p| 2 - p).collect(),
        post: g.post.iter().map(|p| 2 - p).collect(),
        stride: vec![1; 2],
        dilation: vec![1; 2],
        flip: false,
    };
    Some(conv_fprop(dy, &wt, dx_dims, &gt))
}

/// Data gradient: dx `(N, C, in…)` from dy `(N, K, out…)` and w `(K, C/g, f…)`.
pub fn conv_dgrad(
    dy: &ArrayD<f32>,
    w: &ArrayD<f32>,
    dx_dims: &[usize],
    g: &ConvGeometry,
) -> ArrayD<f32> {
    let w = if g.flip {
        Cow::Owned(flip_filter(w))
    } else {
        Cow::Borrowed(w)
    };
    let geo = Geo3::new(dx_dims, w.shape(), dy.shape(), g);
    if let Some(dx) = dgrad_winograd(&geo, g, dy, &w, dx_dims) {
        return dx;
    }
    let (dys, ws) = (dense(dy), dense(&w));
    let (ivol, ovol) = (geo.ivol(), geo.ovol());
    let kg = geo.k / geo.groups;
    let crs = geo.cg * geo.taps();
    let mut dx = vec![0f32; geo.n * geo.c * ivol];
    let direct = geo.is_pointwise();
    if !direct && !geo.is_subsample() && dgrad_fused(&geo, &dys, &ws, &mut dx) {
        return ArrayD::from_shape_vec(IxDyn(dx_dims), dx).expect("dx volume");
    }
    let mut dcol = vec![0f32; if direct { 0 } else { geo.c * geo.taps() * ovol }];
    for (n, dxn) in dx.chunks_mut(geo.c * ivol.max(1)).enumerate().take(geo.n) {
        let dyn_ = &dys[n * geo.k * ovol..(n + 1) * geo.k * ovol];
        let out: &mut [f32] = if direct { dxn } else { &mut dcol };
        let jobs = out
            .chunks_mut(crs * ovol.max(1))
            .enumerate()
            .take(geo.groups)
            .map(|(grp, dst)| Job {
                a: mat(kg, crs, &ws[grp * kg * crs..]).reversed_axes(),
                b: mat(kg, ovol, &dyn_[grp * kg * ovol..]),
                c: mat_mut(crs, ovol, dst),
                row_base: 0,
                res: None,
            })
            .collect();
        gemm::run(jobs, false, &Epilogue::NONE);
        if geo.is_subsample() {
            geo.scatter_subsample(&dcol, dxn);
        } else if !direct {
            geo.col2im(&dcol, dxn);
        }
    }
    ArrayD::from_shape_vec(IxDyn(dx_dims), dx).expect("dx volume")
}

/// Filter gradients of at most this many elements (K · C/g · taps) whose im2col is not the
/// input itself are summed as partial products over runs of output positions
/// ([`wgrad_split`]): a small dw over a long reduction (the 7×7 stem: 64 × 147 over 12544
/// positions an image) otherwise splits into tiles that each repack the whole reduction.
const WGRAD_SPLIT_MAX: usize = 16 * 1024;
/// Most partial products of [`wgrad_split`].
const WGRAD_PARTS: usize = 32;
/// im2col floats per run of [`wgrad_split`] (512 KiB: the run's columns stay in L2).
const WGRAD_RUN_FLOATS: usize = 128 * 1024;

/// Filter gradient of a small dw over a long reduction: the output positions of every image
/// are cut into runs of `r = WGRAD_RUN_FLOATS / (C·taps)` positions (at least 64; a function
/// of the shape only); the runs, image by image in position order, are dealt into
/// `min(runs, WGRAD_PARTS)` consecutive parts; each part (a rayon task) builds each run's
/// im2col in its scratch and accumulates `dy[n, g, run] · colᵀ` into its own partial dw
/// with one single-threaded GEMM per group; dw is then the sum of the partials in part order.
/// Every element's summation order is fixed by the shape, so the result is bit-identical
/// for any thread count.
fn wgrad_split(geo: &Geo3, xs: &[f32], dys: &[f32], dw: &mut [f32]) {
    let (ivol, ovol) = (geo.ivol(), geo.ovol());
    let kg = geo.k / geo.groups;
    let crs = geo.cg * geo.taps();
    let ctaps = geo.c * geo.taps();
    let run = (WGRAD_RUN_FLOATS / ctaps).max(64).min(ovol);
    let runs: Vec<(usize, usize, usize)> = (0..geo.n)
        .flat_map(|n| {
            (0..ovol)
                .step_by(run)
                .map(move |p0| (n, p0, run.min(ovol - p0)))
        })
        .collect();
    let parts = runs.len().min(WGRAD_PARTS);
    let planes: Vec<Planes<'_>> = (0..geo.n)
        .map(|n| Planes::new(geo, &xs[n * geo.c * ivol..(n + 1) * geo.c * ivol]))
        .collect();
    let len = dw.len();
    let mut partial = vec![0f32; parts * len];
    partial
        .par_chunks_mut(len)
        .enumerate()
        .for_each(|(i, acc)| {
            let (lo, hi) = (i * runs.len() / parts, (i + 1) * runs.len() / parts);
            for (j, &(n, p0, w)) in runs[lo..hi].iter().enumerate() {
                with_scratch(ctaps * w, |buf| {
                    geo.im2col_range(&planes[n], 0, geo.c, p0, w, buf);
                    for grp in 0..geo.groups {
                        let dyg = mat(kg, ovol, &dys[(n * geo.k + grp * kg) * ovol..]);
                        let a = dyg.slice(ndarray::s![.., p0..p0 + w]);
                        let b = mat(crs, w, &buf[grp * crs * w..]).reversed_axes();
                        let mut c = mat_mut(kg, crs, &mut acc[grp * kg * crs..]);
                        gemm::sgemm(&a, &b, j > 0, &mut c);
                    }
                });
            }
        });
    dw.par_chunks_mut(4096).enumerate().for_each(|(b, d)| {
        for (e, v) in d.iter_mut().enumerate() {
            let at = b * 4096 + e;
            *v = (1..parts).fold(partial[at], |s, p| s + partial[p * len + at]);
        }
    });
}

/// Filter gradient: dw `(K, C/g, f…)` from x `(N, C, in…)` and dy `(N, K, out…)`.
pub fn conv_wgrad(
    x: &ArrayD<f32>,
    dy: &ArrayD<f32>,
    dw_dims: &[usize],
    g: &ConvGeometry,
) -> ArrayD<f32> {
    let geo = Geo3::new(x.shape(), dw_dims, dy.shape(), g);
    let (xs, dys) = (dense(x), dense(dy));
    let (ivol, ovol) = (geo.ivol(), geo.ovol());
    let kg = geo.k / geo.groups;
    let crs = geo.cg * geo.taps();
    let mut dw = vec![0f32; geo.k * crs];
    let direct = geo.is_pointwise();
    let packed = direct || geo.is_subsample();
    if !packed && geo.k * crs <= WGRAD_SPLIT_MAX && geo.n * ovol > 0 && crs > 0 {
        wgrad_split(&geo, &xs, &dys, &mut dw);
        let dw = ArrayD::from_shape_vec(IxDyn(dw_dims), dw).expect("dw volume");
        return if g.flip { flip_filter(&dw) } else { dw };
    }
    let mut col = vec![0f32; if packed { 0 } else { geo.c * geo.taps() * ovol }];
    for n in 0..geo.n {
        let xn = &xs[n * geo.c * ivol..(n + 1) * geo.c * ivol];
        let dyn_ = &dys[n * geo.k * ovol..(n + 1) * geo.k * ovol];
        let cols: &[f32] = if direct {
            xn
        } else if let Some(sub) = geo.subsample(xn) {
            // Strided unpadded 1×1: the im2col is the packed subsample.
            col = sub;
            &col
        } else {
            geo.im2col(&[Planes::new(&geo, xn)], &mut col);
            &col
        };
        let jobs = dw
            .chunks_mut(kg * crs.max(1))
            .enumerate()
            .take(geo.groups)
            .map(|(grp, dst)| Job {
                a: mat(kg, ovol, &dyn_[grp * kg * ovol..]),
                b: mat(crs, ovol, &cols[grp * crs * ovol..]).reversed_axes(),
                c: mat_mut(kg, crs, dst),
                row_base: 0,
                res: None,
            })
            .collect();
        gemm::run(jobs, n > 0, &Epilogue::NONE);
    }
    let dw = ArrayD::from_shape_vec(IxDyn(dw_dims), dw).expect("dw volume");
    if g.flip { flip_filter(&dw) } else { dw }
}
