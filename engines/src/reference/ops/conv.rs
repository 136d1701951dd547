//! Convolution kernels (fprop, dgrad, wgrad) over dense row-major NC[D]HW arrays, 1 to 3
//! spatial dims, with pre/post padding, stride, dilation, groups and the CONVOLUTION
//! (flipped filter) mode.
//!
//! Logical layouts (whatever the tensors' strides): x and y `(N, C, spatial…)`, w
//! `(K, C/groups, filter spatial…)`. Groups = `x.C / w.C`. Work is spread over rayon by
//! (batch, channel) slices; every output element is summed in one fixed order, so results are
//! bit-identical for any thread count. Owns only arithmetic; shapes were checked by the caller.

use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;

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
    /// For each tap and each output position: the input position, or `usize::MAX` in padding.
    fn tap_index(&self) -> Vec<usize> {
        let ovol = self.ovol();
        let mut out = vec![usize::MAX; self.taps() * ovol];
        let mut t = 0;
        for ft in 0..self.f[0] {
            for fr in 0..self.f[1] {
                for fs in 0..self.f[2] {
                    let tap = [ft, fr, fs];
                    let row = &mut out[t * ovol..(t + 1) * ovol];
                    let mut p = 0;
                    for od in 0..self.o[0] {
                        for oh in 0..self.o[1] {
                            for ow in 0..self.o[2] {
                                let o = [od, oh, ow];
                                let mut pos = 0usize;
                                let mut inside = true;
                                for d in 0..3 {
                                    let v = (o[d] * self.stride[d] + tap[d] * self.dil[d]) as isize
                                        - self.pre[d] as isize;
                                    if v < 0 || v >= self.i[d] as isize {
                                        inside = false;
                                    }
                                    pos = pos * self.i[d] + v.max(0) as usize;
                                }
                                row[p] = if inside { pos } else { usize::MAX };
                                p += 1;
                            }
                        }
                    }
                    t += 1;
                }
            }
        }
        out
    }
}

/// The filter flipped in every spatial dim (dims `(K, C/g, spatial…)`).
pub fn flip_filter(w: &ArrayD<f32>) -> ArrayD<f32> {
    let mut v = w.view();
    for ax in 2..w.ndim() {
        v.invert_axis(ndarray::Axis(ax));
    }
    v.as_standard_layout().into_owned()
}

fn dense(a: &ArrayD<f32>) -> std::borrow::Cow<'_, [f32]> {
    match a.as_slice() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(a.iter().copied().collect()),
    }
}

/// Forward convolution: y `(N, K, out…)` = x `(N, C, in…)` ⋆ w `(K, C/g, f…)`.
/// im2col per (batch, group), then one row of `y` per output channel in parallel.
pub fn conv_fprop(
    x: &ArrayD<f32>,
    w: &ArrayD<f32>,
    y_dims: &[usize],
    g: &ConvGeometry,
) -> ArrayD<f32> {
    let w = if g.flip { flip_filter(w) } else { w.clone() };
    let geo = Geo3::new(x.shape(), w.shape(), y_dims, g);
    let (xs, ws) = (dense(x), dense(&w));
    let taps = geo.taps();
    let (ivol, ovol) = (geo.ivol(), geo.ovol());
    let idx = geo.tap_index();
    let kg = geo.k / geo.groups;
    let crs = geo.cg * taps;
    let mut y = vec![0f32; geo.n * geo.k * ovol];
    let mut col = vec![0f32; crs * ovol];
    for n in 0..geo.n {
        for grp in 0..geo.groups {
            col.par_chunks_mut(ovol).enumerate().for_each(|(row, dst)| {
                let (c, t) = (row / taps, row % taps);
                let src = &xs[(n * geo.c + grp * geo.cg + c) * ivol..][..ivol];
                for (d, &i) in dst.iter_mut().zip(&idx[t * ovol..(t + 1) * ovol]) {
                    *d = if i == usize::MAX { 0.0 } else { src[i] };
                }
            });
            let ybase = (n * geo.k + grp * kg) * ovol;
            y[ybase..ybase + kg * ovol]
                .par_chunks_mut(ovol)
                .enumerate()
                .for_each(|(kk, yrow)| {
                    let wrow = &ws[(grp * kg + kk) * crs..][..crs];
                    for (r, &wv) in wrow.iter().enumerate() {
                        let crow = &col[r * ovol..(r + 1) * ovol];
                        for (o, &cv) in yrow.iter_mut().zip(crow) {
                            *o += wv * cv;
                        }
                    }
                });
        }
    }
    ArrayD::from_shape_vec(IxDyn(y_dims), y).expect("y volume")
}

/// Data gradient: dx `(N, C, in…)` from dy `(N, K, out…)` and w `(K, C/g, f…)`; each dx
/// (batch, channel) slice is accumulated by one task in (k, tap, output position) order.
pub fn conv_dgrad(
    dy: &ArrayD<f32>,
    w: &ArrayD<f32>,
    dx_dims: &[usize],
    g: &ConvGeometry,
) -> ArrayD<f32> {
    let w = if g.flip { flip_filter(w) } else { w.clone() };
    let geo = Geo3::new(dx_dims, w.shape(), dy.shape(), g);
    let (dys, ws) = (dense(dy), dense(&w));
    let taps = geo.taps();
    let (ivol, ovol) = (geo.ivol(), geo.ovol());
    let idx = geo.tap_index();
    let kg = geo.k / geo.groups;
    let mut dx = vec![0f32; geo.n * geo.c * ivol];
    dx.par_chunks_mut(ivol).enumerate().for_each(|(nc, dst)| {
        let (n, c) = (nc / geo.c, nc % geo.c);
        let (grp, cc) = (c / geo.cg, c % geo.cg);
        for kk in 0..kg {
            let k = grp * kg + kk;
            let dyrow = &dys[(n * geo.k + k) * ovol..][..ovol];
            for t in 0..taps {
                let wv = ws[(k * geo.cg + cc) * taps + t];
                for (&i, &d) in idx[t * ovol..(t + 1) * ovol].iter().zip(dyrow) {
                    if i != usize::MAX {
                        dst[i] += wv * d;
                    }
                }
            }
        }
    });
    ArrayD::from_shape_vec(IxDyn(dx_dims), dx).expect("dx volume")
}

/// Filter gradient: dw `(K, C/g, f…)` from x `(N, C, in…)` and dy `(N, K, out…)`; each dw
/// row (one output channel) is summed by one task in (n, c, tap, position) order.
pub fn conv_wgrad(
    x: &ArrayD<f32>,
    dy: &ArrayD<f32>,
    dw_dims: &[usize],
    g: &ConvGeometry,
) -> ArrayD<f32> {
    let geo = Geo3::new(x.shape(), dw_dims, dy.shape(), g);
    let (xs, dys) = (dense(x), dense(dy));
    let taps = geo.taps();
    let (ivol, ovol) = (geo.ivol(), geo.ovol());
    let idx = geo.tap_index();
    let kg = geo.k / geo.groups;
    let crs = geo.cg * taps;
    let mut dw = vec![0f32; geo.k * crs];
    dw.par_chunks_mut(crs).enumerate().for_each(|(k, dst)| {
        let grp = k / kg;
        for n in 0..geo.n {
            let dyrow = &dys[(n * geo.k + k) * ovol..][..ovol];
            for cc in 0..geo.cg {
                let src = &xs[(n * geo.c + grp * geo.cg + cc) * ivol..][..ivol];
                for t in 0..taps {
                    let mut acc = 0f32;
                    for (&i, &d) in idx[t * ovol..(t + 1) * ovol].iter().zip(dyrow) {
                        if i != usize::MAX {
                            acc += src[i] * d;
                        }
                    }
                    dst[cc * taps + t] += acc;
                }
            }
        }
    });
    let dw = ArrayD::from_shape_vec(IxDyn(dw_dims), dw).expect("dw volume");
    if g.flip { flip_filter(&dw) } else { dw }
}
