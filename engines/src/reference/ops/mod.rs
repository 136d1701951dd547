//! Numeric kernels of the CPU reference engine over dense row-major `ndarray` arrays of `f32`.
//!
//! Each kernel owns only arithmetic: shapes arrive checked, bytes are converted by
//! [`super::tensor`]. Every kernel fixes its summation order, so outputs are bit-identical for
//! any rayon thread count.

pub mod conv;
pub mod exp;
pub mod gemm;
pub mod matmul;
pub mod norm;
pub mod pointwise;
pub(crate) mod recycle;
pub mod reduce;
pub mod resample;
pub mod sdpa;
pub mod small_gemm;
pub mod softmax;
pub mod winograd;

/// Fewest elements of elementwise or row-wise work one parallel task takes (64 KiB of f32):
/// smaller work runs on the thread that has it. A task boundary never changes a result (each
/// element or row is computed alone), and a tiny plan run on the calling thread
/// (`Plan::inline`) is not handed to the pool by a loop that would split a few kilobytes.
pub const PAR_MIN_ELEMS: usize = 16 * 1024;
