//! The fused softmax and log-softmax of the CPU reference engine: one pass per row of a dense
//! row-major array, the same f32 operations in the same order as the five (six) nodes it
//! replaces — `m = `[`lane_max_slice`], `d = x − m`, `e = `[`super::exp::exp`]`(d)`,
//! `s = `[`super::reduce::lane_sum_slice`]`(e)` (the last two in one sweep,
//! [`lane_sum_map_into`]), then `e / s` (softmax) or `d − ln s` (log-softmax) — so its
//! output is bit-identical to running the nodes one at a time, for any thread count (each
//! row is one task).
//!
//! Owns only arithmetic: which graphs run it is decided by [`crate::reference`]'s plan.

use super::exp::exp;
use super::reduce::{lane_max_slice, lane_sum_map_into};
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use rayon::prelude::*;

/// Each task computes whole rows, about this many elements (at least one row); the split
/// does not change any bit: each row is computed alone.
const TASK_ELEMS: usize = 4096;

/// Softmax (`log = false`) or log-softmax (`log = true`) of `x` over its rows of `row`
/// elements (the trailing axes whose volume is `row`), as a dense array of `x`'s dims.
///
/// Each task's row loop runs under [`pulp::Arch::dispatch`], so it is compiled for and runs
/// with the widest vector unit the CPU has (AVX-512 / AVX2 / the baseline), chosen at run
/// time; only `+ − × ÷`, `max` and bit operations, so every choice gives the same bits.
///
/// # Panics
/// When `row` is 0 or does not divide `x`'s volume (checked at plan time).
pub fn softmax(x: &ArrayViewD<'_, f32>, row: usize, log: bool) -> ArrayD<f32> {
    let mut out = vec![0f32; x.len()];
    softmax_into(x, row, log, &mut out);
    ArrayD::from_shape_vec(IxDyn(x.shape()), out).expect("dims")
}

/// [`softmax`] written into `out` (x's elements in row-major order; a bound output buffer,
/// so no array is allocated, zeroed and copied), the same bits.
///
/// # Panics
/// As [`softmax`]; also when `out` does not hold exactly x's volume.
pub fn softmax_into(x: &ArrayViewD<'_, f32>, row: usize, log: bool, out: &mut [f32]) {
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard layout");
    assert!(row > 0 && xs.len() % row == 0, "rows of {row} elements");
    assert_eq!(out.len(), xs.len(), "output volume");
    let task = row * TASK_ELEMS.div_ceil(row);
    let arch = pulp::Arch::new();
    out.par_chunks_mut(task)
        .zip(xs.par_chunks(task))
        .for_each(|(y, x)| arch.dispatch(Rows { x, y, row, log }));
}

/// One task: whole rows of `x` into `y`.
struct Rows<'a> {
    x: &'a [f32],
    y: &'a mut [f32],
    row: usize,
    log: bool,
}

impl pulp::WithSimd for Rows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let Rows { x, y, row, log } = self;
        let mut scratch = if log { vec![0f32; row] } else { Vec::new() };
        for (y, x) in y.chunks_exact_mut(row).zip(x.chunks_exact(row)) {
            let m = lane_max_slice(x);
            if log {
                let l = lane_sum_map_into(&mut scratch, x, |v| exp(v - m)).ln();
                for (o, &v) in y.iter_mut().zip(x) {
                    *o = (v - m) - l;
                }
            } else {
                let s = lane_sum_map_into(y, x, |v| exp(v - m));
                for o in y.iter_mut() {
                    *o /= s;
                }
            }
        }
    }
}
