//! Execution of a [`Plan`] on host buffers: binds UIDs to the variant pack, checks every
//! bound buffer, runs the steps in order keeping virtual tensors in host memory, and writes
//! outputs at their strided positions.
//!
//! Owns the buffer rules: device buffers are refused, every buffer's length is checked
//! against its dims/strides before anything is written, virtual tensors are rounded to their
//! declared data type (so a fused graph equals running its nodes one at a time).

use super::nodes::{conv, gather, matmul, norm, pointwise, reduction, resample, sdpa};
use super::plan::{Op, Plan};
use super::tensor::TensorDesc;
use hipdnn_backend::{BufferRef, PluginError, PluginResult, TensorBinding};
use ndarray::{ArrayD, IxDyn};
use std::collections::{HashMap, HashSet};

/// Host values of one execution: bound buffers by UID and the arrays computed so far.
pub(super) struct Env<'p, 'a, 'b> {
    plan: &'p Plan,
    bindings: &'a mut [TensorBinding<'b>],
    index: HashMap<i64, usize>,
    values: HashMap<i64, ArrayD<f32>>,
}

/// `a` with `dims` (same volume), copied only when the shape differs.
pub(super) fn reshape(a: ArrayD<f32>, dims: &[usize]) -> ArrayD<f32> {
    if a.shape() == dims {
        return a;
    }
    let v: Vec<f32> = a.iter().copied().collect();
    ArrayD::from_shape_vec(IxDyn(dims), v).expect("volume checked at plan time")
}

impl Env<'_, '_, '_> {
    /// The descriptor of `uid`.
    pub(super) fn desc(&self, uid: i64) -> &TensorDesc {
        &self.plan.tensors[&uid]
    }

    /// The value of `uid` (bound buffer, constant or computed), as f32.
    pub(super) fn get(&mut self, uid: i64) -> PluginResult<ArrayD<f32>> {
        if let Some(v) = self.values.get(&uid) {
            return Ok(v.clone());
        }
        let d = self.desc(uid).clone();
        let v = if let Some(&i) = self.index.get(&uid) {
            match &self.bindings[i].data {
                BufferRef::Host(s) => d.load(s)?,
                BufferRef::HostMut(s) => d.load(s)?,
                BufferRef::Device { .. } => unreachable!("refused before execution"),
            }
        } else if let Some(v) = d.value_array() {
            v
        } else {
            return Err(PluginError::bad_param(format!(
                "tensor uid {uid} ('{}') is not in the variant pack",
                d.name
            )));
        };
        self.values.insert(uid, v.clone());
        Ok(v)
    }

    /// The exact integer values of the INT32 / INT64 tensor `uid` in row-major order: read
    /// from its bound buffer without going through f32; a computed (virtual) or constant
    /// tensor, which the engine holds as f32, is converted back.
    ///
    /// # Errors
    /// As [`Env::get`]; `BAD_PARAM` when `uid` is not an integer tensor.
    pub(super) fn get_ints(&mut self, uid: i64) -> PluginResult<Vec<i64>> {
        if !self.values.contains_key(&uid) {
            if let Some(&i) = self.index.get(&uid) {
                let d = self.desc(uid);
                let ints = match &self.bindings[i].data {
                    BufferRef::Host(s) => d.load_ints(s)?,
                    BufferRef::HostMut(s) => d.load_ints(s)?,
                    BufferRef::Device { .. } => unreachable!("refused before execution"),
                };
                return ints.ok_or_else(|| {
                    PluginError::bad_param(format!(
                        "tensor uid {uid} ('{}') is {:?}, not an integer tensor",
                        d.name, d.elem
                    ))
                });
            }
        }
        Ok(self.get(uid)?.iter().map(|&v| v as i64).collect())
    }

    /// The first element of `uid`.
    pub(super) fn scalar(&mut self, uid: i64) -> PluginResult<f32> {
        let v = self.get(uid)?;
        v.iter()
            .next()
            .copied()
            .ok_or_else(|| PluginError::bad_param(format!("tensor uid {uid} is empty")))
    }

    /// Stores `v` as `uid`: rounded to its data type, written to its buffer when bound.
    pub(super) fn put(&mut self, uid: i64, v: ArrayD<f32>) -> PluginResult<()> {
        let d = self.desc(uid).clone();
        let v = reshape(v, &d.dims).mapv(|x| d.elem.quantize(x));
        if let Some(&i) = self.index.get(&uid) {
            match &mut self.bindings[i].data {
                BufferRef::HostMut(s) => d.store(&v, s)?,
                _ => unreachable!("checked before execution"),
            }
        }
        self.values.insert(uid, v);
        Ok(())
    }
}

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
    let mut index = HashMap::new();
    let outputs: HashSet<i64> = plan.steps.iter().flat_map(|s| s.op.outputs()).collect();
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
            BufferRef::Host(_) if outputs.contains(&b.uid) => {
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
    for s in &plan.steps {
        for u in s.op.inputs().into_iter().chain(s.op.outputs()) {
            let d = &plan.tensors[&u];
            // A runtime pass-by-value scalar is bound at every execute, default or not: the
            // same rule as the SDK's built graph (issue 12: one rule for built and loaded plans).
            let needs_buffer = !d.is_virtual
                && (d.value.is_none() || d.runtime_pass_by_value || outputs.contains(&u));
            if needs_buffer && !index.contains_key(&u) {
                return Err(PluginError::bad_param(format!(
                    "tensor uid {u} ('{}') is not in the variant pack",
                    d.name
                )));
            }
        }
    }
    let mut env = Env {
        plan,
        bindings,
        index,
        values: HashMap::new(),
    };
    for s in &plan.steps {
        run_step(&mut env, &s.name, &s.op)?;
    }
    Ok(())
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
        Op::Reduction(s) => reduction::run(s, env, &e),
        Op::Resample(s) => resample::run(s, env, &e),
        Op::Sdpa(s) => sdpa::run(s, env, &e),
        Op::Gather(s) => gather::run(s, env, &e),
    }
}
