//! Reductions (all `ReductionMode` values) and the axis bookkeeping shared with the norms.
//!
//! An output dim of 1 where the input dim is larger marks a reduced axis. Each output element
//! is reduced by one task in row-major order of the reduced elements, so results are
//! bit-identical for any thread count. Owns only arithmetic.

use hipdnn_schema::graph::ReductionMode as R;
use ndarray::{ArrayD, IxDyn};
use rayon::prelude::*;

/// The groups of a reduction of a dense row-major array `in_dims` to `out_dims` (same rank;
/// an output dim of 1 over a larger input dim marks a reduced axis): output element `o`
/// (row-major over `out_dims`) reduces the input flat indices `base(o) + off` for each `off`
/// of [`Groups::offsets`], in row-major order of the reduced axes (that is, increasing flat
/// index). Two small tables (one entry per output element, one per reduced element) instead
/// of one index per input element.
#[derive(Debug, Clone)]
pub struct Groups {
    bases: Vec<usize>,
    offsets: Vec<usize>,
    contiguous: bool,
}

impl Groups {
    /// The groups of `in_dims` reduced to `out_dims`.
    pub fn new(in_dims: &[usize], out_dims: &[usize]) -> Groups {
        let rank = in_dims.len();
        let mut strides = vec![1usize; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * in_dims[d + 1];
        }
        let reduced = |d: usize| out_dims[d] == 1 && in_dims[d] != 1;
        // Row-major enumeration of the flat offsets over the axes `keep(d)`.
        let walk = |keep: &dyn Fn(usize) -> bool| -> Vec<usize> {
            let axes: Vec<usize> = (0..rank).filter(|&d| keep(d)).collect();
            let count: usize = axes.iter().map(|&d| in_dims[d]).product();
            let mut out = Vec::with_capacity(count);
            let mut idx = vec![0usize; axes.len()];
            for _ in 0..count {
                out.push(axes.iter().zip(&idx).map(|(&d, &i)| i * strides[d]).sum());
                for a in (0..axes.len()).rev() {
                    idx[a] += 1;
                    if idx[a] < in_dims[axes[a]] {
                        break;
                    }
                    idx[a] = 0;
                }
            }
            out
        };
        let offsets = walk(&|d| reduced(d));
        let bases = if in_dims.iter().product::<usize>() == 0 {
            vec![0; out_dims.iter().product()]
        } else {
            walk(&|d| !reduced(d))
        };
        let contiguous = offsets.iter().enumerate().all(|(i, &o)| i == o);
        Groups {
            bases,
            offsets,
            contiguous,
        }
    }
    /// Number of groups (output elements).
    pub fn len(&self) -> usize {
        self.bases.len()
    }
    /// True when there are no groups.
    pub fn is_empty(&self) -> bool {
        self.bases.is_empty()
    }
    /// Elements per group.
    pub fn count(&self) -> usize {
        self.offsets.len()
    }
    /// Flat offsets of a group's elements from its base, in reduction order.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
    /// Flat index of group `o`'s first element.
    pub fn base(&self, o: usize) -> usize {
        self.bases[o]
    }
    /// Group `o`'s values as a slice, when the group is contiguous.
    pub fn slice<'a>(&self, xs: &'a [f32], o: usize) -> Option<&'a [f32]> {
        let base = self.bases[o];
        self.contiguous
            .then(|| &xs[base..base + self.offsets.len()])
    }
    /// Group `o`'s values in reduction order, copied.
    pub fn values(&self, xs: &[f32], o: usize) -> Vec<f32> {
        match self.slice(xs, o) {
            Some(s) => s.to_vec(),
            None => self
                .offsets
                .iter()
                .map(|&i| xs[self.bases[o] + i])
                .collect(),
        }
    }
}

/// Reduces `x` to `out_dims` (same rank; 1 marks a reduced axis).
///
/// ADD sum, MUL product, MIN_OP/MAX_OP, AMAX max |x|, AVG mean, NORM1 Σ|x|, NORM2 √Σx²,
/// MUL_NO_ZEROS product of the non-zero values (1 when all are zero).
pub fn reduce(mode: R, x: &ArrayD<f32>, out_dims: &[usize]) -> ArrayD<f32> {
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard");
    let g = Groups::new(x.shape(), out_dims);
    let n = g.count();
    let out: Vec<f32> = (0..g.len())
        .into_par_iter()
        .map(|o| match g.slice(xs, o) {
            Some(v) => fold(mode, v.iter().copied(), n),
            None => fold(mode, g.offsets().iter().map(|&i| xs[g.base(o) + i]), n),
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(out_dims), out).expect("out volume")
}

/// One group's reduction, in iteration order.
fn fold(mode: R, it: impl Iterator<Item = f32>, n: usize) -> f32 {
    match mode {
        R::ADD => it.fold(0.0, |a, v| a + v),
        R::MUL => it.fold(1.0, |a, v| a * v),
        R::MIN_OP => it.fold(f32::INFINITY, f32::min),
        R::MAX_OP => it.fold(f32::NEG_INFINITY, f32::max),
        R::AMAX => it.fold(0.0, |a: f32, v| a.max(v.abs())),
        R::AVG => it.fold(0.0, |a, v| a + v) / n as f32,
        R::NORM1 => it.fold(0.0, |a, v| a + v.abs()),
        R::NORM2 => it.fold(0.0, |a, v| a + v * v).sqrt(),
        R::MUL_NO_ZEROS => it.fold(1.0, |a, v| if v != 0.0 { a * v } else { a }),
        _ => f32::NAN,
    }
}
