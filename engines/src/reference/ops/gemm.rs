//! Deterministic tiled f32 GEMM of the CPU reference engine on the `gemm` crate (pure Rust,
//! runtime-dispatched AVX2/AVX-512/NEON micro-kernels), with a fused epilogue.
//!
//! Owns: cutting each output matrix C into tiles, scheduling the tiles on rayon, the one call
//! into `gemm` per tile, and the epilogue pass (bias, activation) on each tile right after its
//! GEMM, while it is in cache. It never reads bytes or graph attributes, and the GEMM never
//! starts threads of its own (`Parallelism::None`).
//!
//! # Determinism rule
//! The tiling is a function of the problem shape only (job count, M, N; never the thread
//! count); every tile is computed by one single-threaded `gemm` call over the whole reduction
//! dimension K; tiles are disjoint. The crate picks its blocking (`kc`, kernel) from the tile's
//! own (M, N, K) and the CPU, so each output element is summed in an order fixed by the shape:
//! outputs are bit-identical for 1 and N rayon threads (pinned by
//! `engines/tests/reference_threads.rs`). They may differ in the last bits between CPUs with
//! different vector units. Reductions that span several GEMM calls (conv wgrad over the batch)
//! are issued in a fixed order, accumulating into C.

use super::pointwise::{PointwiseParams, bias_res_relu, unary_slice};
use hipdnn_schema::graph::PointwiseMode;
use ndarray::{ArrayView1, ArrayView2, ArrayViewMut2, Axis, s};
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

/// Pointwise work fused into the GEMM output pass: `c = act((c + bias) + residual)`, in that
/// order (the residual is the job's [`Job::res`], when it has one), with the same f32
/// operations as the separate pointwise ADD and activation nodes (so fused and unfused results
/// are bit-identical).
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
    /// `row_base` into a per-row bias) and whose columns are `cols`; `res` is the same tile
    /// of the job's residual (added after the bias, before the activation).
    pub(crate) fn apply(
        &self,
        row_base: usize,
        rows: Range<usize>,
        cols: Range<usize>,
        res: Option<ArrayView2<'_, f32>>,
        c: &mut ArrayViewMut2<'_, f32>,
    ) {
        if self.is_none() && res.is_none() {
            return;
        }
        for (i, mut line) in c.outer_iter_mut().enumerate() {
            let r = row_base + rows.start + i;
            let res_line = res.as_ref().map(|t| t.row(i));
            match line.as_slice_mut() {
                Some(vals) => self.apply_row_res(r, cols.start, res_line, vals),
                None => {
                    let mut vals = line.to_vec();
                    self.apply_row_res(r, cols.start, res_line, &mut vals);
                    line.iter_mut().zip(vals).for_each(|(o, v)| *o = v);
                }
            }
        }
    }

    /// Applies the epilogue to `vals`, the columns `col0..col0 + vals.len()` of row `row` of
    /// C (row and column index a [`Bias::PerRow`] / [`Bias::PerCol`] bias). The same f32
    /// operations as [`Epilogue::apply`].
    pub(crate) fn apply_row(&self, row: usize, col0: usize, vals: &mut [f32]) {
        self.apply_row_res(row, col0, None, vals);
    }

    /// [`Epilogue::apply_row`] with the row's residual values, added after the bias.
    pub(crate) fn apply_row_res(
        &self,
        row: usize,
        col0: usize,
        res: Option<ArrayView1<'_, f32>>,
        vals: &mut [f32],
    ) {
        // The common case (per-row or no bias, contiguous or no residual, RELU or no
        // activation) in one vectorized loop: the same operations in the same order.
        let bias = match self.bias {
            Bias::None => Some(None),
            Bias::PerRow(b) => Some(Some(b[row])),
            Bias::PerCol(_) => None,
        };
        let res_slice = match &res {
            None => Some(None),
            Some(r) => r.as_slice().map(Some),
        };
        let relu = match &self.act {
            None => Some(None),
            Some(p) if p.mode == PointwiseMode::RELU_FWD => Some(Some(p)),
            Some(_) => None,
        };
        if let (Some(b), Some(r), Some(a)) = (bias, res_slice, relu) {
            bias_res_relu(b, r, a, vals);
            return;
        }
        match self.bias {
            Bias::None => {}
            Bias::PerRow(b) => {
                let b = b[row];
                vals.iter_mut().for_each(|v| *v += b);
            }
            Bias::PerCol(b) => vals.iter_mut().zip(&b[col0..]).for_each(|(v, b)| *v += b),
        }
        if let Some(r) = res {
            match r.as_slice() {
                Some(r) => vals.iter_mut().zip(r).for_each(|(v, r)| *v += r),
                None => vals.iter_mut().zip(r.iter()).for_each(|(v, r)| *v += r),
            }
        }
        if let Some(p) = &self.act {
            unary_slice(p, vals);
        }
    }
}

/// One product `C = A · B` or `C += A · B` (A `(M, K)`, B `(K, N)`, C `(M, N)`, any strides).
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
    /// A residual `(M, N)` added to C by the epilogue (after the bias, before the
    /// activation); `None` for none.
    pub res: Option<ArrayView2<'a, f32>>,
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

/// `c = a · b` (`accumulate`: `c += a · b`) by one single-threaded `gemm` call; any strides.
///
/// # Panics
/// When the dims of `a` `(M, K)`, `b` `(K, N)` and `c` `(M, N)` do not agree.
pub fn sgemm(
    a: &ArrayView2<'_, f32>,
    b: &ArrayView2<'_, f32>,
    accumulate: bool,
    c: &mut ArrayViewMut2<'_, f32>,
) {
    let ((m, k), (k2, n)) = (a.dim(), b.dim());
    assert!(k == k2 && c.dim() == (m, n), "gemm dims do not agree");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            c.fill(0.0);
        }
        return;
    }
    let (sa, sb) = (a.strides(), b.strides());
    let (rs_c, cs_c) = (c.strides()[0], c.strides()[1]);
    // SAFETY: `gemm` reads `a` at `a_ptr + i·sa[0] + p·sa[1]` for i < M, p < K, `b` at
    // `b_ptr + p·sb[0] + j·sb[1]` for p < K, j < N, and writes `c` at `c_ptr + i·sc[0] + j·sc[1]`
    // (reading it first only when `accumulate`). Those are exactly the elements of the three
    // ndarray views, whose pointers, dims and element strides are passed unchanged, so every
    // access is in bounds of live memory. `c` is borrowed mutably for the call, so no other
    // reference aliases the written elements (a `&mut` view never overlaps itself: ndarray
    // forbids constructing mutable views with overlapping elements). `a` and `b` are only read.
    // `Parallelism::None`: the call runs on this thread and returns after its last access.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            cs_c,
            rs_c,
            accumulate,
            a.as_ptr(),
            sa[1],
            sa[0],
            b.as_ptr(),
            sb[1],
            sb[0],
            1.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Splits a view into consecutive pieces of `size` along `axis` (the last may be shorter),
/// each with its start index.
pub(crate) fn pieces(
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

/// Runs every job: `C = A · B` (`accumulate`: `C += A · B`), then the epilogue on C, tile by
/// tile on rayon.
/// All jobs must have the same `(M, N)` (the tiling is computed once from it).
///
/// # Panics
/// When a job's A, B and C dims do not agree (callers check shapes first).
pub fn run(jobs: Vec<Job<'_>>, accumulate: bool, epi: &Epilogue<'_>) {
    let Some(first) = jobs.first() else { return };
    let (m, n) = first.c.dim();
    if m == 0 || n == 0 {
        return;
    }
    let (mb, nb) = tile_shape(jobs.len(), m, n);
    let mut tiles = Vec::new();
    for job in jobs {
        let Job {
            a,
            b,
            c,
            row_base,
            res,
        } = job;
        assert_eq!(c.dim(), (m, n), "gemm jobs differ in shape");
        assert!(res.is_none_or(|r| r.dim() == (m, n)), "residual shape");
        for (r0, rows) in pieces(c, Axis(0), mb) {
            for (c0, tile) in pieces(rows, Axis(1), nb) {
                tiles.push((a, b, res, row_base, r0, c0, tile));
            }
        }
    }
    tiles
        .into_par_iter()
        .for_each(|(a, b, res, row_base, r0, c0, mut tile)| {
            let (h, w) = tile.dim();
            let at = a.slice(s![r0..r0 + h, ..]);
            let bt = b.slice(s![.., c0..c0 + w]);
            sgemm(&at, &bt, accumulate, &mut tile);
            let rt = res.map(|r| r.slice_move(s![r0..r0 + h, c0..c0 + w]));
            epi.apply(row_base, r0..r0 + h, c0..c0 + w, rt, &mut tile);
        });
}
