//! One file per op kind of the CPU reference engine. Each file owns its step type (the UIDs
//! and parameters one node needs), its `parse` — graph node → checked step, refusing with
//! `NOT_APPLICABLE` through [`super::check::Cx`] what the engine cannot run, using the op
//! facts of [`hipdnn_backend::ops`] — and its `run` — host arrays in, outputs stored through
//! the environment [`super::env::Env`], arithmetic in [`super::ops`].
//!
//! `softmax` is the one step no graph node parses to: [`super::fuse`] makes it from a
//! softmax pattern of reduction and pointwise nodes.
//!
//! [`super::plan`] and [`super::exec`] only dispatch here ([`super::step::Op`] wraps the step
//! types); nothing in this folder imports them, reads bytes or touches bindings directly.

pub(super) mod block_scale;
pub(super) mod conv;
pub(super) mod gather;
pub(super) mod matmul;
pub(super) mod norm;
pub(super) mod pointwise;
pub(super) mod reduction;
pub(super) mod resample;
pub(super) mod sdpa;
pub(super) mod softmax;
