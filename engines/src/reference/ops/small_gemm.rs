//! Small-problem f32 GEMM of the CPU reference engine: a register-blocked micro-kernel written
//! with `pulp` (run-time dispatch to AVX-512 / AVX2 / NEON / scalar), for matmuls whose A has
//! few rows (batch 1 × a few tokens) and whose B is column-major (a PyTorch `Linear` weight
//! bound as it lies), where the `gemm` crate repacks the strided B on every call. Row-major B
//! and attention's per-head blocks measured no faster here than on the crate (docs/PERFORMANCE.md),
//! so they stay there.
//!
//! Owns: the micro-kernel and the column-panel scheduling of [`run`] on rayon; B is read as it
//! lies (row- or column-major), never packed. It never reads bytes or graph attributes, and
//! never keeps anything between calls (no cached packed weights: a variant pack may change a
//! weight between executes).
//!
//! # Determinism rule
//! Every output element is one chain of fused multiply-adds over the reduction index in
//! increasing order, `c = fma(a[i][p], b[p][j], c)` for `p = 0, 1, …, K − 1`, starting from 0
//! (or from C when accumulating). The chain does not depend on the tiling, on the vector width
//! (every lane and the scalar tail use the same correctly rounded FMA) or on the thread count,
//! so outputs are bit-identical for 1 and N rayon threads (pinned by
//! `engines/tests/reference_threads.rs`) and between AVX-512, AVX2 and scalar builds.

use super::gemm::{Epilogue, Job};
use ndarray::{ArrayView2, ArrayViewMut2, Axis, CowArray, s};
use pulp::Simd;
use rayon::prelude::*;

/// Largest M (rows of C) that [`fits`] sends here.
pub const MAX_M: usize = 32;
/// Rows of A per micro-kernel call.
const MR: usize = 8;
/// Vectors of columns per micro-kernel call.
const NV: usize = 3;
/// Reduction block: a `KC × 48` block of B (24 KiB) stays in L1 for every row block.
const KC: usize = 128;
/// Fewest column panels [`run`] aims for (so 2…8 threads have work), when N allows.
const MIN_TASKS: usize = 8;
/// Panel widths are multiples of this many columns (3 AVX-512 vectors).
const PANEL_STEP: usize = 48;

/// Whether [`run`] serves a product with `m` rows of C: `1 ≤ m ≤ `[`MAX_M`].
pub fn fits(m: usize) -> bool {
    (1..=MAX_M).contains(&m)
}

/// `C = A · B` (`accumulate`: `C += A · B`) on dense row-major slices, single-threaded: A is
/// `(m, k)` with row stride `lda`, B `(k, n)` with row stride `ldb`, C `(m, n)` with row stride
/// `ldc` (unit column strides). See the module's determinism rule for the summation order.
///
/// # Panics
/// When a slice is too short for its dims and row stride.
#[allow(clippy::too_many_arguments)]
pub fn gemm_dense(
    arch: pulp::Arch,
    (m, n, k): (usize, usize, usize),
    a: &[f32],
    lda: usize,
    b: &[f32],
    ldb: usize,
    c: &mut [f32],
    ldc: usize,
    accumulate: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(a.len() >= (m - 1) * lda + k, "a too short");
    assert!(k == 0 || b.len() >= (k - 1) * ldb + n, "b too short");
    assert!(c.len() >= (m - 1) * ldc + n, "c too short");
    arch.dispatch(Dense {
        dims: (m, n, k),
        a,
        lda,
        b,
        ldb,
        c,
        ldc,
        accumulate,
    });
}

/// One dense product, run under [`pulp::Arch::dispatch`].
struct Dense<'a> {
    dims: (usize, usize, usize),
    a: &'a [f32],
    lda: usize,
    b: &'a [f32],
    ldb: usize,
    c: &'a mut [f32],
    ldc: usize,
    accumulate: bool,
}

impl pulp::WithSimd for Dense<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Dense {
            dims: (m, n, k),
            a,
            lda,
            b,
            ldb,
            c,
            ldc,
            accumulate,
        } = self;
        let lanes = S::F32_LANES;
        let w = NV * lanes;
        let mut j = 0;
        while j + w <= n {
            rows::<S, NV>(simd, (m, k), (a, lda), (b, ldb), (c, ldc), j, accumulate);
            j += w;
        }
        match (n - j) / lanes {
            2 => rows::<S, 2>(simd, (m, k), (a, lda), (b, ldb), (c, ldc), j, accumulate),
            1 => rows::<S, 1>(simd, (m, k), (a, lda), (b, ldb), (c, ldc), j, accumulate),
            _ => {}
        }
        j += (n - j) / lanes * lanes;
        // Columns past the last whole vector: the same FMA chain, one element at a time.
        for i in 0..m {
            let ar = &a[i * lda..][..k];
            for jj in j..n {
                let cv = &mut c[i * ldc + jj];
                let mut acc = if accumulate { *cv } else { 0.0 };
                for (p, &av) in ar.iter().enumerate() {
                    acc = av.mul_add(b[p * ldb + jj], acc);
                }
                *cv = acc;
            }
        }
    }
}

/// Every row of C for the `V` vectors of columns starting at `j`: the reduction in blocks of
/// [`KC`] (so each block of B is read from L1 by every [`MR`]-row block after the first), C
/// carrying the chain from one block to the next.
#[inline(always)]
fn rows<S: Simd, const V: usize>(
    simd: S,
    (m, k): (usize, usize),
    (a, lda): (&[f32], usize),
    (b, ldb): (&[f32], usize),
    (c, ldc): (&mut [f32], usize),
    j: usize,
    accumulate: bool,
) {
    let mut p0 = 0;
    loop {
        let kc = KC.min(k - p0);
        let carry = accumulate || p0 > 0;
        let ak = &a[p0.min(a.len())..];
        let bk = &b[(p0 * ldb).min(b.len())..];
        let mut i = 0;
        while i + MR <= m {
            let (ai, ci) = (&ak[i * lda..], &mut c[i * ldc..]);
            micro::<S, MR, V>(simd, kc, (ai, lda), (bk, ldb), (ci, ldc), j, carry);
            i += MR;
        }
        let (ia, ic) = ((i * lda).min(ak.len()), (i * ldc).min(c.len()));
        let (ai, ci) = ((&ak[ia..], lda), (&mut c[ic..], ldc));
        let bk = (bk, ldb);
        match m - i {
            7 => micro::<S, 7, V>(simd, kc, ai, bk, ci, j, carry),
            6 => micro::<S, 6, V>(simd, kc, ai, bk, ci, j, carry),
            5 => micro::<S, 5, V>(simd, kc, ai, bk, ci, j, carry),
            4 => micro::<S, 4, V>(simd, kc, ai, bk, ci, j, carry),
            3 => micro::<S, 3, V>(simd, kc, ai, bk, ci, j, carry),
            2 => micro::<S, 2, V>(simd, kc, ai, bk, ci, j, carry),
            1 => micro::<S, 1, V>(simd, kc, ai, bk, ci, j, carry),
            _ => {}
        }
        p0 += kc;
        if p0 >= k {
            break;
        }
    }
}

/// Reads one vector from the first lanes of `s`.
#[inline(always)]
fn load<S: Simd>(s: &[f32]) -> S::f32s {
    bytemuck::pod_read_unaligned(bytemuck::cast_slice(&s[..S::F32_LANES]))
}

/// Writes one vector to the first lanes of `s`.
#[inline(always)]
fn store<S: Simd>(s: &mut [f32], v: S::f32s) {
    bytemuck::cast_slice_mut::<f32, u8>(&mut s[..S::F32_LANES])
        .copy_from_slice(bytemuck::bytes_of(&v));
}

/// The micro-kernel: rows `0..R` of A and C (row strides `lda`, `ldc`), columns
/// `j..j + V·lanes` of B and C, the whole reduction in registers.
#[inline(always)]
fn micro<S: Simd, const R: usize, const V: usize>(
    simd: S,
    k: usize,
    (a, lda): (&[f32], usize),
    (b, ldb): (&[f32], usize),
    (c, ldc): (&mut [f32], usize),
    j: usize,
    accumulate: bool,
) {
    let lanes = S::F32_LANES;
    let ar: [&[f32]; R] = core::array::from_fn(|r| &a[r * lda..][..k]);
    let zero = simd.splat_f32s(0.0);
    let mut acc = [[zero; V]; R];
    if accumulate {
        for (r, accr) in acc.iter_mut().enumerate() {
            for (v, x) in accr.iter_mut().enumerate() {
                *x = load::<S>(&c[r * ldc + j + v * lanes..]);
            }
        }
    }
    for p in 0..k {
        let brow = &b[p * ldb + j..][..V * lanes];
        let bv: [S::f32s; V] = core::array::from_fn(|v| load::<S>(&brow[v * lanes..]));
        for r in 0..R {
            let av = simd.splat_f32s(ar[r][p]);
            for v in 0..V {
                acc[r][v] = simd.mul_add_f32s(av, bv[v], acc[r][v]);
            }
        }
    }
    for (r, accr) in acc.iter().enumerate() {
        for (v, &x) in accr.iter().enumerate() {
            store::<S>(&mut c[r * ldc + j + v * lanes..], x);
        }
    }
}

/// Column-panel width for `jobs` products of `n` columns: a multiple of 48 columns (the whole
/// N when it is narrower), halved until there are at least [`MIN_TASKS`] panels in all. Any
/// width gives the same bits (the module's determinism rule); this only spreads the work.
fn panel_width(jobs: usize, n: usize) -> usize {
    let mut w = n.next_multiple_of(PANEL_STEP);
    while jobs * n.div_ceil(w) < MIN_TASKS && w > PANEL_STEP {
        w = (w / 2).next_multiple_of(PANEL_STEP);
    }
    w
}

/// Whether B `(k, n)` is read in place by [`run`] for `m` rows of C: row-major (dense rows),
/// or column-major (a PyTorch `Linear` weight bound as it is) when `m` is a multiple of 16.
pub fn reads_in_place(b: &ArrayView2<'_, f32>, m: usize) -> bool {
    b.is_standard_layout() || (m % 16 == 0 && b.t().is_standard_layout())
}

/// How one job's operands are read.
enum Operands<'a> {
    /// B row-major: A `(m, k)` dense, B's rows read as they lie.
    RowB(CowArray<'a, f32, ndarray::Ix2>, &'a [f32]),
    /// B column-major: Aᵀ `(k, m)` packed dense, Bᵀ `(n, k)` read as it lies; each panel
    /// computes Cᵀ = Bᵀ · Aᵀ (the same FMA chain per element) and writes it transposed.
    ColB(Vec<f32>, &'a [f32]),
}

/// Runs every job (`C = A · B`, then the epilogue on C) like [`super::gemm::run`], for
/// products with few rows ([`fits`]) and a B read in place ([`reads_in_place`]): one task per
/// column panel of one job, all rows of C, computed into a scratch tile, the epilogue applied
/// there, then copied into C. Nothing is packed but a column-major B's Aᵀ (m·k values).
///
/// # Panics
/// When the jobs differ in shape, a job's A, B and C dims do not agree (callers check shapes
/// first) or a B is not read in place.
pub fn run(jobs: Vec<Job<'_>>, epi: &Epilogue<'_>) {
    let Some(first) = jobs.first() else { return };
    let (m, n) = first.c.dim();
    if m == 0 || n == 0 {
        return;
    }
    let w = panel_width(jobs.len(), n);
    let arch = pulp::Arch::new();
    let mut ops = Vec::with_capacity(jobs.len());
    let mut rest = Vec::with_capacity(jobs.len());
    for job in jobs {
        let Job {
            a,
            b,
            c,
            row_base,
            res,
        } = job;
        let k = a.dim().1;
        assert!(
            c.dim() == (m, n) && a.dim().0 == m && b.dim() == (k, n),
            "gemm jobs differ in shape"
        );
        assert!(res.is_none_or(|r| r.dim() == (m, n)), "residual shape");
        let op = if let Some(bs) = b.to_slice() {
            Operands::RowB(
                if a.is_standard_layout() {
                    CowArray::from(a)
                } else {
                    CowArray::from(a.as_standard_layout().into_owned())
                },
                bs,
            )
        } else {
            assert!(reads_in_place(&b, m), "b is not read in place");
            let bts = b.reversed_axes().to_slice().expect("column-major b");
            let mut at = vec![0f32; k * m];
            ArrayViewMut2::from_shape((k, m), &mut at[..])
                .expect("dims")
                .assign(&a.t());
            Operands::ColB(at, bts)
        };
        ops.push(op);
        rest.push((c, row_base, res));
    }
    let mut tasks = Vec::new();
    for (op, (c, row_base, res)) in ops.iter().zip(rest) {
        for (j0, tile) in super::gemm::pieces(c, Axis(1), w) {
            tasks.push((op, res, row_base, j0, tile));
        }
    }
    tasks
        .into_par_iter()
        .for_each(|(op, res, row_base, j0, mut tile)| {
            let wt = tile.dim().1;
            let mut out = vec![0f32; m * wt];
            match op {
                Operands::RowB(a, bs) => {
                    let a = a.as_slice().expect("standard layout");
                    let k = a.len() / m;
                    let bs = &bs[j0.min(bs.len())..];
                    gemm_dense(arch, (m, wt, k), a, k, bs, n, &mut out, wt, false);
                }
                Operands::ColB(at, bts) => {
                    let k = at.len() / m;
                    let mut ct = vec![0f32; wt * m];
                    let bts = &bts[(j0 * k).min(bts.len())..];
                    gemm_dense(arch, (wt, m, k), bts, k, at, m, &mut ct, m, false);
                    for (jj, col) in ct.chunks_exact(m).enumerate() {
                        for (i, &v) in col.iter().enumerate() {
                            out[i * wt + jj] = v;
                        }
                    }
                }
            }
            let mut ov = ArrayViewMut2::from_shape((m, wt), &mut out[..]).expect("tile");
            let rt = res.map(|r| r.slice_move(s![.., j0..j0 + wt]));
            epi.apply(row_base, 0..m, j0..j0 + wt, rt, &mut ov);
            tile.assign(&ov);
        });
}
