//! Reductions (all `ReductionMode` values) and the axis bookkeeping shared with the norms.
//!
//! An output dim of 1 where the input dim is larger marks a reduced axis. Each output element
//! is reduced by one task in row-major order of the reduced elements, so results are
//! bit-identical for any thread count. Owns only arithmetic.

use hipdnn_schema::graph::ReductionMode as R;
use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;

/// Splits a dense row-major array into `(outer index → reduced values)` groups: returns, for
/// each output element (row-major over `out_dims`), the input flat indices it reduces, in
/// row-major order.
pub fn groups(in_dims: &[usize], out_dims: &[usize]) -> Vec<Vec<usize>> {
    let nout: usize = out_dims.iter().product();
    let mut groups = vec![Vec::new(); nout];
    let rank = in_dims.len();
    let mut idx = vec![0usize; rank];
    let total: usize = in_dims.iter().product();
    for flat in 0..total {
        let mut o = 0usize;
        for d in 0..rank {
            let oi = if out_dims[d] == 1 { 0 } else { idx[d] };
            o = o * out_dims[d] + oi;
        }
        groups[o].push(flat);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < in_dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    groups
}

/// Reduces `x` to `out_dims` (same rank; 1 marks a reduced axis).
///
/// ADD sum, MUL product, MIN_OP/MAX_OP, AMAX max |x|, AVG mean, NORM1 Σ|x|, NORM2 √Σx²,
/// MUL_NO_ZEROS product of the non-zero values (1 when all are zero).
pub fn reduce(mode: R, x: &ArrayD<f32>, out_dims: &[usize]) -> ArrayD<f32> {
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard");
    let g = groups(x.shape(), out_dims);
    let out: Vec<f32> = g
        .par_iter()
        .map(|idx| {
            let it = idx.iter().map(|&i| xs[i]);
            match mode {
                R::ADD => it.fold(0.0, |a, v| a + v),
                R::MUL => it.fold(1.0, |a, v| a * v),
                R::MIN_OP => it.fold(f32::INFINITY, f32::min),
                R::MAX_OP => it.fold(f32::NEG_INFINITY, f32::max),
                R::AMAX => it.fold(0.0, |a: f32, v| a.max(v.abs())),
                R::AVG => it.fold(0.0, |a, v| a + v) / idx.len() as f32,
                R::NORM1 => it.fold(0.0, |a, v| a + v.abs()),
                R::NORM2 => it.fold(0.0, |a, v| a + v * v).sqrt(),
                R::MUL_NO_ZEROS => it.fold(1.0, |a, v| if v != 0.0 { a * v } else { a }),
                _ => f32::NAN,
            }
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(out_dims), out).expect("out volume")
}
