//! Deterministic tiled f32 GEMM of the CPU reference engine, on `matrixmultiply` (called
//! through ndarray's safe [`ndarray::linalg::general_mat_mul`]), with a fused epilogue.
//!
//! Owns: cutting each output matrix C into tiles, scheduling the tiles on rayon, and the
//! epilogue pass (bias, activation) on each tile right after its GEMM, while it is in cache.
//! It never reads bytes or graph attributes, and it never starts threads of its own.
//!
//! # Determinism rule
//! The tiling is a function of the problem shape only (batch count, M, N; never the thread
//! count); every tile is computed by one single-threaded `matrixmultiply::sgemm` call over the
//! whole reduction dimension K; tiles are disjoint. `matrixmultiply` sums each output element
//! over k in increasing order in blocks of its fixed `kc` (a constant of the crate, not of M,
//! N or threads), so every element's rounding depends only on K and the inputs: outputs are
//! bit-identical for 1 and N rayon threads (pinned by `engines/tests/reference_threads.rs`).
//! Reductions that span several GEMM calls (conv wgrad over the batch) are issued in a fixed
//! order with `beta = 1`.

use super::pointwise::{PointwiseParams, unary};
use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, Axis, s};
use rayon::prelude::*;
use std::ops::Range;

/// Fewest tiles the shape rule aims for (so 2…8 threads have work), when the matrices allow.
const MIN_TILES: usize = 8;
/// Largest tile height (rows of C).
const MAX_MB: usize = 256;
/// Largest tile width (columns of C).
const MAX_NB: usize = 512;

/// A bias added to C before the activation.
#[derive(Debug, Clone, Copy)]
pub enum Bias<'a> {
    /// No bias.
    None,
    /// One value per row of C (conv: per output channel), indexed by the job's `row_base` +
    /// the row.
    PerRow(&'a [f32]),
    /// One value per column of C (matmul: broadcast over the last dim), indexed by the column.
    PerCol(&'a [f32]),
}

/// Pointwise work fused into the GEMM output pass: `c = act(c + bias)`, in that order, with the
/// same f32 operations as the separate pointwise ADD and activation nodes (so fused and
/// unfused results are bit-identical).
#[derive(Debug, Clone, Copy)]
pub struct Epilogue<'a> {
    /// Bias added first.
    pub bias: Bias<'a>,
    /// Unary pointwise activation applied last (any unary [`PointwiseParams`] mode).
    pub act: Option<PointwiseParams>,
}

impl Epilogue<'_> {
    /// No epilogue: C is the bare product.
    pub const NONE: Epilogue<'static> = Epilogue {
        bias: Bias::None,
        act: None,
    };

    fn is_none(&self) -> bool {
        matches!(self.bias, Bias::None) && self.act.is_none()
    }

    /// Applies the epilogue to one tile whose rows are `rows` of the job (offset by
    /// `row_base` into a per-row bias) and whose columns are `cols`.
    fn apply(
        &self,
        row_base: usize,
        rows: Range<usize>,
        cols: Range<usize>,
        c: &mut ArrayViewMut2<'_, f32>,
    ) {
        if self.is_none() {
            return;
        }
        for (i, mut line) in c.outer_iter_mut().enumerate() {
            let r = row_base + rows.start + i;
            for (j, v) in line.iter_mut().enumerate() {
                let mut x = *v;
                match self.bias {
                    Bias::None => {}
                    Bias::PerRow(b) => x += b[r],
                    Bias::PerCol(b) => x += b[cols.start + j],
                }
                if let Some(p) = &self.act {
                    x = unary(p, x);
                }
                *v = x;
            }
        }
    }
}

/// One product `C = A · B + beta · C` (A `(M, K)`, B `(K, N)`, C `(M, N)`, any strides).
#[derive(Debug)]
pub struct Job<'a> {
    /// Left operand `(M, K)`.
    pub a: ArrayView2<'a, f32>,
    /// Right operand `(K, N)`.
    pub b: ArrayView2<'a, f32>,
    /// Output `(M, N)`.
    pub c: ArrayViewMut2<'a, f32>,
    /// Index of C's row 0 in a [`Bias::PerRow`] vector.
    pub row_base: usize,
}

/// Tile height and width for `jobs` products of `(m, n)` outputs: a function of the shape
/// only (see the module's determinism rule). Starts from 256 × 512 and halves the larger side
/// (not below 32 rows / 64 columns) until there are at least 8 tiles in all.
pub fn tile_shape(jobs: usize, m: usize, n: usize) -> (usize, usize) {
    let (mut mb, mut nb) = (m.clamp(1, MAX_MB), n.clamp(1, MAX_NB));
    let count = |mb: usize, nb: usize| jobs * m.div_ceil(mb) * n.div_ceil(nb);
    while count(mb, nb) < MIN_TILES {
        if nb > 64 && nb >= mb {
            nb = nb.div_ceil(2).next_multiple_of(16);
        } else if mb > 32 {
            mb = mb.div_ceil(2).next_multiple_of(8);
        } else {
            break;
        }
    }
    (mb, nb)
}

/// Splits a view into consecutive pieces of `size` along `axis` (the last may be shorter),
/// each with its start index.
fn pieces(
    mut v: ArrayViewMut2<'_, f32>,
    axis: Axis,
    size: usize,
) -> Vec<(usize, ArrayViewMut2<'_, f32>)> {
    let mut out = Vec::new();
    let mut start = 0;
    while v.len_of(axis) > size {
        let (head, tail) = v.split_at(axis, size);
        out.push((start, head));
        start += size;
        v = tail;
    }
    out.push((start, v));
    out
}

/// Runs every job: `C = A · B + beta · C`, then the epilogue on C, tile by tile on rayon.
/// All jobs must have the same `(M, N)` (the tiling is computed once from it).
///
/// # Panics
/// When a job's A, B and C dims do not agree (callers check shapes first).
pub fn run(jobs: Vec<Job<'_>>, beta: f32, epi: &Epilogue<'_>) {
    let Some(first) = jobs.first() else { return };
    let (m, n) = first.c.dim();
    if m == 0 || n == 0 {
        return;
    }
    let (mb, nb) = tile_shape(jobs.len(), m, n);
    let mut tiles = Vec::new();
    for job in jobs {
        let Job { a, b, c, row_base } = job;
        assert_eq!(c.dim(), (m, n), "gemm jobs differ in shape");
        for (r0, rows) in pieces(c, Axis(0), mb) {
            for (c0, tile) in pieces(rows, Axis(1), nb) {
                tiles.push((a, b, row_base, r0, c0, tile));
            }
        }
    }
    tiles
        .into_par_iter()
        .for_each(|(a, b, row_base, r0, c0, mut tile)| {
            let (h, w) = tile.dim();
            let at = a.slice(s![r0..r0 + h, ..]);
            let bt = b.slice(s![.., c0..c0 + w]);
            general_mat_mul(1.0, &at, &bt, beta, &mut tile);
            epi.apply(row_base, r0..r0 + h, c0..c0 + w, &mut tile);
        });
}
