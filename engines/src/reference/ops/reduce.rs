//! Reductions (all `ReductionMode` values) and the axis bookkeeping shared with the norms.
//!
//! An output dim of 1 where the input dim is larger marks a reduced axis. Each output element
//! is reduced by one task over the reduced elements in row-major order — sums in the fixed
//! 16-partial-sum order of [`lane_sum`], maxima (MAX_OP) in the same 16 lanes ([`lane_max`],
//! which the fused softmax shares), products and minima one after another — so results are
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
            Some(v) if mode == R::ADD => lane_sum_slice(v, |x| x),
            Some(v) if mode == R::AVG => lane_sum_slice(v, |x| x) / n as f32,
            Some(v) if mode == R::NORM1 => lane_sum_slice(v, f32::abs),
            Some(v) if mode == R::NORM2 => lane_sum_slice(v, |x| x * x).sqrt(),
            Some(v) if mode == R::MAX_OP => lane_max_slice(v),
            Some(v) => fold(mode, v.iter().copied(), n),
            None => fold(mode, g.offsets().iter().map(|&i| xs[g.base(o) + i]), n),
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(out_dims), out).expect("out volume")
}

/// One group's reduction. Sums (ADD, AVG, NORM1, NORM2) go through [`lane_sum`], maxima
/// through [`lane_max`]; products and minima fold in iteration order.
fn fold(mode: R, it: impl Iterator<Item = f32>, n: usize) -> f32 {
    match mode {
        R::ADD => lane_sum(it, |v| v),
        R::MUL => it.fold(1.0, |a, v| a * v),
        R::MIN_OP => it.fold(f32::INFINITY, f32::min),
        R::MAX_OP => lane_max(it),
        R::AMAX => it.fold(0.0, |a: f32, v| a.max(v.abs())),
        R::AVG => lane_sum(it, |v| v) / n as f32,
        R::NORM1 => lane_sum(it, f32::abs),
        R::NORM2 => lane_sum(it, |v| v * v).sqrt(),
        R::MUL_NO_ZEROS => it.fold(1.0, |a, v| if v != 0.0 { a * v } else { a }),
        _ => f32::NAN,
    }
}

/// Partial sums [`lane_sum`] keeps.
pub const LANES: usize = 16;

/// `Σ f(v)` in the fixed order every CPU sum of the engine's reductions and statistics uses:
/// element `i` goes to partial sum `i mod 16`, each partial sum adds its elements in order
/// (starting from +0.0), and the 16 partial sums are combined pairwise (`s[i] += s[i + w]`
/// for w = 8, 4, 2, 1). The order depends on the element count only, so the result is the
/// same for any thread count and for a contiguous or strided group; independent partial
/// sums also let the compiler vectorise (a single running sum waits on each add's latency).
pub fn lane_sum(it: impl Iterator<Item = f32>, f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    for (i, v) in it.enumerate() {
        acc[i % LANES] += f(v);
    }
    combine(acc)
}

/// [`lane_sum`] of a slice (the same bits), in whole blocks of [`LANES`].
#[inline(always)]
pub fn lane_sum_slice(v: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let mut blocks = v.chunks_exact(LANES);
    for b in &mut blocks {
        for (a, &x) in acc.iter_mut().zip(b) {
            *a += f(x);
        }
    }
    for (a, &x) in acc.iter_mut().zip(blocks.remainder()) {
        *a += f(x);
    }
    combine(acc)
}

/// `out[i] = f(x[i])` for every `i`, returning [`lane_sum_slice`]`(out, |v| v)` (the same
/// bits) from the same sweep: one pass over the elements where a map then a sum takes two.
///
/// # Panics
/// When `out` and `x` differ in length.
#[inline(always)]
pub fn lane_sum_map_into(out: &mut [f32], x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    assert_eq!(out.len(), x.len(), "lengths");
    let mut acc = [0f32; LANES];
    let mut o = out.chunks_exact_mut(LANES);
    let mut i = x.chunks_exact(LANES);
    for (ob, ib) in (&mut o).zip(&mut i) {
        // A whole block through a fixed-size array, so the 16 lanes stay in vector registers
        // (with a lane loop over the slices the compiler kept `acc` on the stack: a store and
        // reload per block); the same operations per lane, so the same bits.
        let mut e = [0f32; LANES];
        for j in 0..LANES {
            e[j] = f(ib[j]);
        }
        ob.copy_from_slice(&e);
        for j in 0..LANES {
            acc[j] += e[j];
        }
    }
    for ((a, o), &x) in acc.iter_mut().zip(o.into_remainder()).zip(i.remainder()) {
        *o = f(x);
        *a += *o;
    }
    combine(acc)
}

#[inline(always)]
fn combine(mut acc: [f32; LANES]) -> f32 {
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for i in 0..w {
            acc[i] += acc[i + w];
        }
    }
    acc[0]
}

/// `max v` (`f32::max`: a NaN loses to any number; −inf for no element or only NaNs) in the
/// same 16 lanes as [`lane_sum`]: element `i` goes to lane `i mod 16` (each from −inf), the
/// lanes combined pairwise (w = 8, 4, 2, 1). The value is the maximum whatever the order; the
/// fixed order pins the one thing order can change, the sign of a zero maximum (`f32::max` of
/// +0 and −0 may give either), so a contiguous or strided group, the MAX_OP reduction and the
/// fused softmax agree bit for bit. Independent lanes also let the compiler vectorise.
pub fn lane_max(it: impl Iterator<Item = f32>) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    for (i, v) in it.enumerate() {
        acc[i % LANES] = acc[i % LANES].max(v);
    }
    combine_max(acc)
}

/// [`lane_max`] of a slice (the same bits), in whole blocks of [`LANES`].
#[inline(always)]
pub fn lane_max_slice(v: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut blocks = v.chunks_exact(LANES);
    for b in &mut blocks {
        for (a, &x) in acc.iter_mut().zip(b) {
            *a = a.max(x);
        }
    }
    for (a, &x) in acc.iter_mut().zip(blocks.remainder()) {
        *a = a.max(x);
    }
    combine_max(acc)
}

#[inline(always)]
fn combine_max(mut acc: [f32; LANES]) -> f32 {
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for i in 0..w {
            acc[i] = acc[i].max(acc[i + w]);
        }
    }
    acc[0]
}

#[cfg(test)]
mod tests {
    use super::{lane_sum_map_into, lane_sum_slice};

    /// The one-sweep map-and-sum gives the map's elements and the bits of the two-pass sum,
    /// for lengths around whole blocks of lanes (remainders 0..16).
    #[test]
    fn lane_sum_map_into_is_the_map_then_the_lane_sum() {
        for n in 0..50usize {
            let x: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 97) as f32 * 0.37 - 11.0)
                .collect();
            let f = |v: f32| v * 1.001 + 0.3;
            let mut out = vec![f32::NAN; n];
            let s = lane_sum_map_into(&mut out, &x, f);
            let mapped: Vec<f32> = x.iter().map(|&v| f(v)).collect();
            assert_eq!(out, mapped, "n {n}");
            assert_eq!(
                s.to_bits(),
                lane_sum_slice(&mapped, |v| v).to_bits(),
                "n {n}"
            );
        }
    }
}
