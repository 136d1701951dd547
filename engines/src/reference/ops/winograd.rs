//! Winograd F(2×2, 3×3) forward convolution of the CPU reference engine: 2-D, 3×3 filter,
//! stride 1, dilation 1, one group, any padding, with the fused [`Epilogue`].
//!
//! Algorithm (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016): the
//! output is cut into 2×2 tiles; each tile reads a 4×4 input patch `d` (rows `2·ty − pad_h +
//! 0..4`, columns `2·tx − pad_w + 0..4`, zero outside the input) and
//! `y_tile = Aᵀ [ Σ_c (G g_kc Gᵀ) ⊙ (Bᵀ d_c B) ] A`, with
//! `Bᵀ = [[1,0,−1,0],[0,1,1,0],[0,−1,1,0],[0,1,0,−1]]`, `G = [[1,0,0],[½,½,½],[½,−½,½],[0,0,1]]`,
//! `Aᵀ = [[1,1,1,0],[0,1,−1,−1]]`. The sum over input channels is 16 GEMMs (one per element
//! ξ of the 4×4 transformed tile): `M[ξ] (K, tiles) = U[ξ] (K, C) · V[ξ] (C, tiles)` on the
//! tiled `gemm` crate ([`super::gemm::sgemm`]). That is 2.25× fewer multiplications than the
//! direct sum (16 per 4 outputs and channel pair instead of 36), and no im2col matrix.
//!
//! Blocks: each image's tile rows are cut into blocks of about `TILE_TARGET` tiles (whole
//! tile rows), or, for images of at most half that many tiles, whole images are grouped into
//! blocks of at most that many (a function of the shape only); a block transforms its input patches, runs its
//! 16 GEMMs and writes its output rows, so its transformed data stays in cache. Blocks,
//! channels, the 16 GEMMs and output channels run on rayon.
//!
//! # Numerics and determinism
//! Each output is the same finite sum of products as the direct convolution, reassociated:
//! results differ from im2col + GEMM in the last bits (relative differences of order 1e-6 for
//! f32 data of one scale; the transforms' coefficients are 0, ±1 and ±½, so F(2×2, 3×3) is
//! the most accurate Winograd form). Block shapes depend on the problem shape only and every
//! GEMM is single-threaded over its whole reduction, so outputs are bit-identical for any
//! rayon thread count (pinned by `engines/tests/reference_threads.rs`).

use super::gemm::{Epilogue, sgemm};
use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};
use rayon::prelude::*;
use std::sync::Mutex;

/// Tiles one transform step handles together (the width of its vectorized loops).
const LW: usize = 16;
/// Tiles a block aims for (whole tile rows; fewer when an image has fewer).
const TILE_TARGET: usize = 256;
/// Smallest input and output channel counts served (below, the transforms cost more than
/// the multiplications they save; im2col + GEMM serves those).
pub(crate) const MIN_CHANNELS: usize = 16;

/// Shape of one F(2×2, 3×3) problem: x `(n, c, h, w)`, filter `(k, c, 3, 3)`, y `(n, k, oh,
/// ow)`, all dense row-major; `ph`/`pw` the padding before rows/columns (padding after is
/// whatever `oh`/`ow` imply: reads past the input are zeros).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub n: usize,
    pub c: usize,
    pub k: usize,
    pub h: usize,
    pub w: usize,
    pub oh: usize,
    pub ow: usize,
    pub ph: usize,
    pub pw: usize,
}

/// Tile rows `ty0..ty1` of image `n`, whose first tile is tile `j0` of its block.
#[derive(Debug, Clone, Copy)]
struct Seg {
    n: usize,
    ty0: usize,
    ty1: usize,
    j0: usize,
}

/// Scratch buffers reused between blocks and calls (contents unspecified; every element a
/// block reads was written by it first). Not thread-local: blocks nest rayon work, so one
/// thread may interleave several blocks.
static POOL: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());

fn take(len: usize) -> Vec<f32> {
    let mut v = POOL
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop()
        .unwrap_or_default();
    v.resize(len, 0.0);
    v.truncate(len);
    v
}

fn give(v: Vec<f32>) {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if pool.len() < 8 {
        pool.push(v);
    }
}

/// `U[k][ξ][c] = (G g_kc Gᵀ)[ξ]` for every filter `g_kc` of `w` `(k, c, 3, 3)` (output
/// channels in parallel).
fn filter_transform(s: &Shape, w: &[f32]) -> Vec<f32> {
    // Every element is written below (16 MiB for a 512 × 512 layer, every execute).
    let mut u = super::recycle::take(16 * s.k * s.c);
    u.par_chunks_mut(16 * s.c)
        .zip(w.par_chunks(9 * s.c))
        .for_each(|(uk, wk)| {
            for (c, g) in wk.chunks_exact(9).enumerate() {
                // T = G g (4×3), then U = T Gᵀ (4×4).
                let mut t = [[0f32; 3]; 4];
                for col in 0..3 {
                    let (g0, g1, g2) = (g[col], g[3 + col], g[6 + col]);
                    t[0][col] = g0;
                    t[1][col] = 0.5 * (g0 + g1 + g2);
                    t[2][col] = 0.5 * (g0 - g1 + g2);
                    t[3][col] = g2;
                }
                for (r, [a, b, cc]) in t.into_iter().enumerate() {
                    let out = [a, 0.5 * (a + b + cc), 0.5 * (a - b + cc), cc];
                    for (j, v) in out.into_iter().enumerate() {
                        uk[(4 * r + j) * s.c + c] = v;
                    }
                }
            }
        });
    u
}

/// The transformed patches `Bᵀ d B` of one channel plane `xc` `(h, w)` for the tile rows
/// of `seg` into `vc` `(16, tb)` (ξ-major; tile j = seg.j0 + (ty − seg.ty0)·tw + tx).
fn input_transform(s: &Shape, xc: &[f32], seg: &Seg, tw: usize, tb: usize, vc: &mut [f32]) {
    for ty in seg.ty0..seg.ty1 {
        let jrow = seg.j0 + (ty - seg.ty0) * tw;
        for tx0 in (0..tw).step_by(LW) {
            let l = LW.min(tw - tx0);
            // p[b][r][u] = x[2·ty + r − ph][2·(tx0 + u) + b − pw] (zero outside), so patch
            // element (r, s) of tile tx0 + t is p[s % 2][r][t + s / 2]: contiguous in t.
            let mut p = [[[0f32; LW + 1]; 4]; 2];
            for r in 0..4 {
                let ih = (2 * ty + r) as isize - s.ph as isize;
                if ih < 0 || ih >= s.h as isize {
                    continue;
                }
                let row = &xc[ih as usize * s.w..][..s.w];
                for u in 0..=l {
                    for (b, pb) in p.iter_mut().enumerate() {
                        let iw = (2 * (tx0 + u) + b) as isize - s.pw as isize;
                        if iw >= 0 && iw < s.w as isize {
                            pb[r][u] = row[iw as usize];
                        }
                    }
                }
            }
            let mut v = [[0f32; LW]; 16];
            for t in 0..LW {
                let d = |r: usize, c: usize| p[c & 1][r][t + (c >> 1)];
                // Q = Bᵀ d (over rows), then V = Q B (over columns).
                let mut q = [[0f32; 4]; 4];
                // Index form on purpose: it reads as the transform's matrix formula.
                #[allow(clippy::needless_range_loop)]
                for c in 0..4 {
                    let (d0, d1, d2, d3) = (d(0, c), d(1, c), d(2, c), d(3, c));
                    q[0][c] = d0 - d2;
                    q[1][c] = d1 + d2;
                    q[2][c] = d2 - d1;
                    q[3][c] = d1 - d3;
                }
                for (i, [a0, a1, a2, a3]) in q.into_iter().enumerate() {
                    v[4 * i][t] = a0 - a2;
                    v[4 * i + 1][t] = a1 + a2;
                    v[4 * i + 2][t] = a2 - a1;
                    v[4 * i + 3][t] = a1 - a3;
                }
            }
            for (xi, vx) in v.iter().enumerate() {
                vc[xi * tb + jrow + tx0..][..l].copy_from_slice(&vx[..l]);
            }
        }
    }
}

/// `Aᵀ M A` for output channel `k` of the tile rows of `seg` (M `(16, K, tb)`), written into
/// `out` (output rows `2·seg.ty0..` of that channel's plane, `ow` wide), then the epilogue
/// with row index `k`.
#[allow(clippy::too_many_arguments)]
fn output_transform(
    s: &Shape,
    m: &[f32],
    k: usize,
    seg: &Seg,
    tw: usize,
    tb: usize,
    out: &mut [f32],
    epi: &Epilogue<'_>,
) {
    let (ty0, kt) = (seg.ty0, s.k * tb);
    for ty in seg.ty0..seg.ty1 {
        let jrow = seg.j0 + (ty - ty0) * tw;
        for tx0 in (0..tw).step_by(LW) {
            let l = LW.min(tw - tx0);
            let mut mm = [[0f32; LW]; 16];
            for (xi, mx) in mm.iter_mut().enumerate() {
                mx[..l].copy_from_slice(&m[xi * kt + k * tb + jrow + tx0..][..l]);
            }
            let mut o = [[0f32; LW]; 4];
            for t in 0..LW {
                // S = Aᵀ M (over rows), then Y = S A (over columns).
                let e = |i: usize, j: usize| mm[4 * i + j][t];
                let mut srow = [[0f32; 4]; 2];
                // Index form on purpose: it reads as the transform's matrix formula.
                #[allow(clippy::needless_range_loop)]
                for j in 0..4 {
                    srow[0][j] = e(0, j) + e(1, j) + e(2, j);
                    srow[1][j] = e(1, j) - e(2, j) - e(3, j);
                }
                for (a, [s0, s1, s2, s3]) in srow.into_iter().enumerate() {
                    o[2 * a][t] = s0 + s1 + s2;
                    o[2 * a + 1][t] = s1 - s2 - s3;
                }
            }
            for a in 0..2 {
                let oh = 2 * ty + a;
                if oh >= s.oh {
                    continue;
                }
                let line = &mut out[(oh - 2 * ty0) * s.ow..][..s.ow];
                // Index form on purpose: it reads as the transform's matrix formula.
                #[allow(clippy::needless_range_loop)]
                for t in 0..l {
                    for b in 0..2 {
                        let ow = 2 * (tx0 + t) + b;
                        if ow < s.ow {
                            line[ow] = o[2 * a + b][t];
                        }
                    }
                }
            }
        }
    }
    // `out` holds output positions 2·ty0·ow.. of the channel's plane (C's columns).
    epi.apply_row(k, 2 * ty0 * s.ow, out);
}

/// y `(n, k, oh, ow)` = F(2×2, 3×3) convolution of x `(n, c, h, w)` with w `(k, c, 3, 3)`
/// (cross-correlation: callers flip CONVOLUTION-mode filters first), then `epi` (a per-row
/// bias is per output channel). `y` is fully overwritten.
///
/// # Panics
/// When a slice is shorter than its shape says (callers check shapes first).
pub(crate) fn fprop(s: &Shape, x: &[f32], w: &[f32], epi: &Epilogue<'_>, y: &mut [f32]) {
    let (th, tw) = (s.oh.div_ceil(2), s.ow.div_ceil(2));
    let plane = s.oh * s.ow;
    if s.n == 0 || s.k == 0 || plane == 0 {
        return;
    }
    let u = filter_transform(s, w);
    let tiles_img = th * tw;
    // Blocks: whole images when an image has at most half the target tiles, else runs of
    // tile rows of one image; each with its output rows of every channel (seg-major).
    let mut blocks: Vec<(Vec<Seg>, Vec<&mut [f32]>)> = Vec::new();
    if 2 * tiles_img <= TILE_TARGET {
        let per = TILE_TARGET / tiles_img;
        for (n, yn) in y.chunks_mut(s.k * plane).enumerate().take(s.n) {
            if n % per == 0 {
                blocks.push((Vec::new(), Vec::new()));
            }
            let (segs, outs) = blocks.last_mut().expect("a block");
            let j0 = segs.len() * tiles_img;
            segs.push(Seg {
                n,
                ty0: 0,
                ty1: th,
                j0,
            });
            outs.extend(yn.chunks_mut(plane));
        }
    } else {
        let rows_per_block = TILE_TARGET.div_ceil(tw).clamp(1, th);
        for (n, yn) in y.chunks_mut(s.k * plane).enumerate().take(s.n) {
            let first = blocks.len();
            for ty0 in (0..th).step_by(rows_per_block) {
                let ty1 = (ty0 + rows_per_block).min(th);
                blocks.push((vec![Seg { n, ty0, ty1, j0: 0 }], Vec::with_capacity(s.k)));
            }
            for yk in yn.chunks_mut(plane) {
                let mut rest = yk;
                for (segs, outs) in &mut blocks[first..] {
                    let rows = (2 * segs[0].ty1).min(s.oh) - 2 * segs[0].ty0;
                    let (head, tail) = rest.split_at_mut(rows * s.ow);
                    outs.push(head);
                    rest = tail;
                }
            }
        }
    }
    let ivol = s.h * s.w;
    blocks.into_par_iter().for_each(|(segs, mut outs)| {
        let tb: usize = segs.iter().map(|g| (g.ty1 - g.ty0) * tw).sum();
        let mut v = take(s.c * 16 * tb);
        v.par_chunks_mut(16 * tb).enumerate().for_each(|(c, vc)| {
            for g in &segs {
                let xc = &x[(g.n * s.c + c) * ivol..][..ivol];
                input_transform(s, xc, g, tw, tb, vc);
            }
        });
        let mut m = take(16 * s.k * tb);
        m.par_chunks_mut(s.k * tb).enumerate().for_each(|(xi, mx)| {
            // U[ξ] (K, C): row k at k·16·C + ξ·C.
            let a = ArrayView2::from_shape(
                (s.k, s.c).strides((16 * s.c, 1)),
                &u[xi * s.c..][..(s.k - 1) * 16 * s.c + s.c],
            )
            .expect("U block");
            // V[ξ] (C, tb): row c at c·16·tb + ξ·tb.
            let b = ArrayView2::from_shape(
                (s.c, tb).strides((16 * tb, 1)),
                &v[xi * tb..][..(s.c - 1) * 16 * tb + tb],
            )
            .expect("V block");
            let mut c = ArrayViewMut2::from_shape((s.k, tb), mx).expect("M block");
            sgemm(&a, &b, false, &mut c);
        });
        give(v);
        outs.par_iter_mut().enumerate().for_each(|(i, out)| {
            let (g, k) = (&segs[i / s.k], i % s.k);
            output_transform(s, &m, k, g, tw, tb, out, epi);
        });
        give(m);
    });
}
