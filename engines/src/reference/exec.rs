//! Execution of a [`Plan`] on host buffers: binds UIDs to the variant pack, checks every
//! bound buffer, runs the steps in order keeping virtual tensors in host memory, and writes
//! outputs at their strided positions.
//!
//! Owns the buffer rules: device buffers are refused, every buffer's length is checked
//! against its dims/strides before anything is written, virtual tensors are rounded to their
//! declared data type (so a fused graph equals running its nodes one at a time).

use super::ops::{conv, matmul, norm, pointwise, reduce, resample, sdpa};
use super::plan::{BnStats, Op, Plan, Scalar};
use super::tensor::TensorDesc;
use hipdnn_backend::{BufferRef, PluginError, PluginResult, TensorBinding};
use ndarray::{ArrayD, IxDyn};
use std::collections::{HashMap, HashSet};

struct Env<'p, 'a, 'b> {
    plan: &'p Plan,
    bindings: &'a mut [TensorBinding<'b>],
    index: HashMap<i64, usize>,
    values: HashMap<i64, ArrayD<f32>>,
}

fn reshape(a: ArrayD<f32>, dims: &[usize]) -> ArrayD<f32> {
    if a.shape() == dims {
        return a;
    }
    let v: Vec<f32> = a.iter().copied().collect();
    ArrayD::from_shape_vec(IxDyn(dims), v).expect("volume checked at plan time")
}

impl Env<'_, '_, '_> {
    fn desc(&self, uid: i64) -> &TensorDesc {
        &self.plan.tensors[&uid]
    }

    fn get(&mut self, uid: i64) -> PluginResult<ArrayD<f32>> {
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

    fn scalar(&mut self, uid: i64) -> PluginResult<f32> {
        let v = self.get(uid)?;
        v.iter()
            .next()
            .copied()
            .ok_or_else(|| PluginError::bad_param(format!("tensor uid {uid} is empty")))
    }

    fn put(&mut self, uid: i64, v: ArrayD<f32>) -> PluginResult<()> {
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
/// an output, or when a needed tensor is missing from the variant pack; nothing is written
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
            let needs_buffer = !d.is_virtual && (d.value.is_none() || outputs.contains(&u));
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

fn run_step(env: &mut Env<'_, '_, '_>, name: &str, op: &Op) -> PluginResult<()> {
    let e = msg(name);
    match op {
        Op::Pointwise { p, ins, out } => {
            let vals = ins
                .iter()
                .map(|&u| env.get(u))
                .collect::<PluginResult<Vec<_>>>()?;
            let refs: Vec<&ArrayD<f32>> = vals.iter().collect();
            let dims = env.desc(*out).dims.clone();
            let r = pointwise::pointwise(p, &refs, &dims).map_err(e)?;
            env.put(*out, r)
        }
        Op::ConvFprop { x, w, y, geo } => {
            let (xv, wv) = (env.get(*x)?, env.get(*w)?);
            let dims = env.desc(*y).dims.clone();
            env.put(*y, conv::conv_fprop(&xv, &wv, &dims, geo))
        }
        Op::ConvDgrad { dy, w, dx, geo } => {
            let (dyv, wv) = (env.get(*dy)?, env.get(*w)?);
            let dims = env.desc(*dx).dims.clone();
            env.put(*dx, conv::conv_dgrad(&dyv, &wv, &dims, geo))
        }
        Op::ConvWgrad { x, dy, dw, geo } => {
            let (xv, dyv) = (env.get(*x)?, env.get(*dy)?);
            let dims = env.desc(*dw).dims.clone();
            env.put(*dw, conv::conv_wgrad(&xv, &dyv, &dims, geo))
        }
        Op::Matmul { a, b, c } => {
            let (av, bv) = (env.get(*a)?, env.get(*b)?);
            let dims = env.desc(*c).dims.clone();
            env.put(*c, matmul::matmul(&av, &bv, &dims).map_err(e)?)
        }
        Op::BnInference {
            x,
            mean,
            stats,
            scale,
            bias,
            y,
        } => {
            let (xv, mv, sv, bv) = (
                env.get(*x)?,
                env.get(*mean)?,
                env.get(*scale)?,
                env.get(*bias)?,
            );
            let inv = match stats {
                BnStats::InvVariance(u) => env.get(*u)?,
                BnStats::Variance(u, eps) => {
                    let eps = env.scalar(*eps)?;
                    norm::inv_std(&env.get(*u)?, eps)
                }
            };
            env.put(
                *y,
                norm::batchnorm_inference(&xv, &mv, &inv, &sv, &bv).map_err(e)?,
            )
        }
        Op::BnTraining {
            x,
            scale,
            bias,
            eps,
            y,
            mean,
            inv_var,
            running,
        } => {
            let (xv, sv, bv) = (env.get(*x)?, env.get(*scale)?, env.get(*bias)?);
            let epsv = env.scalar(*eps)?;
            let mut sd = vec![1; xv.ndim()];
            sd[1] = xv.shape()[1];
            let (m, var, cnt) = norm::moments(&xv, &sd);
            let inv = norm::inv_std(&var, epsv);
            let yv = norm::normalize(&xv, Some(&m), &inv, &sv, Some(&bv)).map_err(&e)?;
            env.put(*y, yv)?;
            if let Some(u) = mean {
                env.put(*u, m.clone())?;
            }
            if let Some(u) = inv_var {
                env.put(*u, inv.clone())?;
            }
            if let Some((pm, pv, mo, nm, nv)) = running {
                let (pmv, pvv, mom) = (env.get(*pm)?, env.get(*pv)?, env.scalar(*mo)?);
                let pmv = reshape(pmv, &sd);
                let pvv = reshape(pvv, &sd);
                let unbias = if cnt > 1 {
                    cnt as f32 / (cnt - 1) as f32
                } else {
                    1.0
                };
                let nmv = ndarray::Zip::from(&pmv)
                    .and(&m)
                    .map_collect(|&p, &c| (1.0 - mom) * p + mom * c);
                let nvv = ndarray::Zip::from(&pvv)
                    .and(&var)
                    .map_collect(|&p, &c| (1.0 - mom) * p + mom * c * unbias);
                env.put(*nm, nmv)?;
                env.put(*nv, nvv)?;
            }
            Ok(())
        }
        Op::Layernorm {
            x,
            scale,
            bias,
            eps,
            y,
            stat_dims,
            mean,
            inv_var,
        } => {
            let (xv, sv, bv) = (env.get(*x)?, env.get(*scale)?, env.get(*bias)?);
            let epsv = env.scalar(*eps)?;
            let (m, var, _) = norm::moments(&xv, stat_dims);
            let inv = norm::inv_std(&var, epsv);
            env.put(
                *y,
                norm::normalize(&xv, Some(&m), &inv, &sv, Some(&bv)).map_err(e)?,
            )?;
            if let Some(u) = mean {
                env.put(*u, m)?;
            }
            if let Some(u) = inv_var {
                env.put(*u, inv)?;
            }
            Ok(())
        }
        Op::Rmsnorm {
            x,
            scale,
            bias,
            eps,
            y,
            stat_dims,
            inv_rms,
        } => {
            let (xv, sv) = (env.get(*x)?, env.get(*scale)?);
            let bv = match bias {
                Some(b) => Some(env.get(*b)?),
                None => None,
            };
            let epsv = env.scalar(*eps)?;
            let inv = norm::inv_rms(&xv, stat_dims, epsv);
            env.put(
                *y,
                norm::normalize(&xv, None, &inv, &sv, bv.as_ref()).map_err(e)?,
            )?;
            if let Some(u) = inv_rms {
                env.put(*u, inv)?;
            }
            Ok(())
        }
        Op::Reduction { mode, x, y } => {
            let xv = env.get(*x)?;
            let dims = env.desc(*y).dims.clone();
            env.put(*y, reduce::reduce(*mode, &xv, &dims))
        }
        Op::Resample {
            x,
            y,
            index,
            kind,
            geo,
        } => {
            let xv = env.get(*x)?;
            let dims = env.desc(*y).dims.clone();
            let (yv, iv) = resample::pool(&xv, &dims, *kind, geo);
            env.put(*y, yv)?;
            if let Some(u) = index {
                env.put(*u, iv)?;
            }
            Ok(())
        }
        Op::Sdpa {
            q,
            k,
            v,
            o,
            mask,
            scale,
            band,
            stats,
            max,
            sum_exp,
        } => {
            let (qv, kv, vv) = (env.get(*q)?, env.get(*k)?, env.get(*v)?);
            let s = match scale {
                Scalar::Value(s) => *s,
                Scalar::Tensor(u) => env.scalar(*u)?,
            };
            let mv = match mask {
                Some(u) => Some((env.get(*u)?, env.desc(*u).elem == super::dtype::Elem::Bool)),
                None => None,
            };
            let r = sdpa::sdpa(&qv, &kv, &vv, s, mv.as_ref().map(|(a, b)| (a, *b)), *band)
                .map_err(e)?;
            env.put(*o, r.o)?;
            for (u, val) in [(stats, r.stats), (max, r.max), (sum_exp, r.sum_exp)] {
                if let Some(u) = u {
                    env.put(*u, val)?;
                }
            }
            Ok(())
        }
    }
}
