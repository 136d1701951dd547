//! Execution of a [`Plan`] on host buffers: binds UIDs to the variant pack, checks every
//! bound buffer, runs the steps in order keeping virtual tensors in host memory, and writes
//! outputs at their strided positions.
//!
//! Owns the buffer rules: device buffers are refused, every buffer's length is checked
//! against its dims/strides before anything is written, virtual tensors are rounded to their
//! declared data type (so a fused graph equals running its nodes one at a time).

use super::env::Env;
use super::nodes::{
    block_scale, conv, gather, matmul, norm, pointwise, reduction, resample, sdpa, softmax,
};
use super::ops::recycle;
use super::plan::{INLINE_WORK, Plan};
use super::step::Op;
use hipdnn_backend::{BufferRef, PluginError, PluginResult, TensorBinding};
use std::collections::HashMap;
use std::sync::Arc;

// An inline plan's values are never kept by `recycle` (see `execute`).
const _: () = assert!(INLINE_WORK < recycle::MIN_FLOATS);

fn msg(step: &str) -> impl Fn(String) -> PluginError + '_ {
    move |m| PluginError::bad_param(format!("node '{step}': {m}"))
}

/// Runs `plan` on `bindings`.
///
/// # Errors
/// `BAD_PARAM` naming the UID when a bound buffer is device memory, too small, read-only for
/// an output, or when a needed tensor is missing from the variant pack (a runtime
/// pass-by-value scalar always needs its buffer, even with a default value); nothing is written
/// when any of these checks fails.
pub fn execute(plan: &Plan, bindings: &mut [TensorBinding<'_>]) -> PluginResult<()> {
    let mut index = HashMap::with_capacity(bindings.len());
    for (i, b) in bindings.iter().enumerate() {
        let Some(d) = plan.tensors.get(&b.uid) else {
            continue;
        };
        if d.is_virtual {
            continue;
        }
        match &b.data {
            BufferRef::Device { .. } => {
                return Err(PluginError::bad_param(format!(
                    "tensor uid {} ('{}'): the CPU reference engine needs host memory, got a device buffer",
                    b.uid, d.name
                )));
            }
            BufferRef::Host(_) if plan.outputs.binary_search(&b.uid).is_ok() => {
                return Err(PluginError::bad_param(format!(
                    "tensor uid {} ('{}') is an output but its buffer is read-only",
                    b.uid, d.name
                )));
            }
            _ => {}
        }
        d.check_len(b.data.len())?;
        index.insert(b.uid, i);
    }
    // Decided at plan build (`Plan::needed`): a runtime pass-by-value scalar is bound at every
    // execute, default or not (issue 12: one rule for built and loaded plans).
    if let Some(&u) = plan.needed.iter().find(|u| !index.contains_key(u)) {
        return Err(PluginError::bad_param(format!(
            "tensor uid {u} ('{}') is not in the variant pack",
            plan.tensors[&u].name
        )));
    }
    let mut env = Env::new(&plan.tensors, bindings, index);
    let mut run = || -> PluginResult<()> {
        // Each value is dropped after its last use (decided at plan build, `Plan::last_use`).
        for (s, done) in plan.steps.iter().zip(&plan.last_use) {
            run_step(&mut env, &s.name, &s.op)?;
            for &u in done {
                // The last reference (no step holds it now): its memory is recycled.
                if let Some(Ok(a)) = env.release(u).map(Arc::try_unwrap) {
                    recycle::give(a.into_raw_vec_and_offset().0);
                }
            }
        }
        Ok(())
    };
    if plan.inline {
        // Small work (decided by the plan's shapes, `Plan::inline`): the calling thread runs
        // the steps; handing them to a pool thread and waiting to be woken would cost more.
        // Its values are too small for `recycle` to keep (every value's volume is part of its
        // step's work), so the shared pool is left alone.
        return run();
    }
    // The steps run on one of the pool's worker threads (the caller's, when it is one), so a
    // step's parallel loop starts as local work the other workers steal, not as a job handed
    // from this thread to the pool and waited for: one hand-off per execute, not one per
    // parallel loop (which costs two thread wake-ups each, more than a small step's work).
    let r = rayon::scope(|_| run());
    // Nothing recycled outlives the execute.
    recycle::clear();
    r
}

/// Runs one step: a short dispatcher to the op's file in [`super::nodes`].
fn run_step(env: &mut Env<'_, '_, '_>, name: &str, op: &Op) -> PluginResult<()> {
    let e = msg(name);
    match op {
        Op::Pointwise(s) => pointwise::run(s, env, &e),
        Op::ConvFprop(s) => conv::run_fprop(s, env, &e),
        Op::ConvDgrad(s) => conv::run_dgrad(s, env, &e),
        Op::ConvWgrad(s) => conv::run_wgrad(s, env, &e),
        Op::Matmul(s) => matmul::run(s, env, &e),
        Op::BnInference(s) => norm::run_batchnorm_inference(s, env, &e),
        Op::BnTraining(s) => norm::run_batchnorm(s, env, &e),
        Op::Layernorm(s) => norm::run_layernorm(s, env, &e),
        Op::Rmsnorm(s) => norm::run_rmsnorm(s, env, &e),
        Op::NormBackward(s) => norm::run_norm_backward(s, env, &e),
        Op::Reduction(s) => reduction::run(s, env, &e),
        Op::Resample(s) => resample::run(s, env, &e),
        Op::ResampleBwd(s) => resample::run_bwd(s, env, &e),
        Op::Sdpa(s) => sdpa::run(s, env, &e),
        Op::SdpaBackward(s) => sdpa::run_backward(s, env, &e),
        Op::Gather(s) => gather::run(s, env, &e),
        Op::BlockQuantize(s) => block_scale::run_quantize(s, env, &e),
        Op::BlockDequantize(s) => block_scale::run_dequantize(s, env, &e),
        Op::Softmax(s) => softmax::run(s, env, &e),
    }
}
