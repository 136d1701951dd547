//! The Triton kernel families: one module per family of `engines/kernels/triton/`, each the
//! dispatch handler of its launch-value contract (`hipkernel.<family>.dispatch.v<N>`).
//!
//! Each family module owns one contract version: its value names, types and ranges, the kernel
//! arguments it passes and how it derives grid and block. A larger-tensor kernel needs a new
//! version (`.v2`) in a new handler registered beside v1 with
//! [`crate::ingestor::dispatch::DispatchRegistry::register_versioned_only`]; v1 never changes.
//! What families share lives in [`crate::ingestor::framework`]; no family imports another.

pub mod batchnorm_fwd;
pub mod bn_bwd;
pub mod conv_dgrad;
pub mod conv_fprop;
pub mod conv_wgrad;
pub mod gather;
pub mod matmul;
pub mod norm_bwd;
pub mod norm_fwd;
pub mod pointwise_v3;
pub mod pool_bwd;
pub mod pool_fwd;
pub mod reduce_fwd;
pub mod sdpa_bwd;
pub mod sdpa_fwd;
