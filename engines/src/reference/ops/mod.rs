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
