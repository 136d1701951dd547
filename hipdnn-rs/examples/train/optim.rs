//! The `train` example's optimizers, one pointwise graph per model: SGD with momentum and
//! AdamW, over any list of parameters. This module owns the parameter, gradient and
//! optimizer-state UIDs every model's graphs share, the optimizer's state (its per-parameter
//! slots and scalars) and the execution of the update; it never computes an update on the host.
//!
//! AdamW is PyTorch's `torch.optim.AdamW` (`foreach`/`fused` agree) with bias correction:
//! ```text
//! w  ← w · (1 − lr·wd)                          decoupled weight decay, before the Adam step
//! m  ← β1·m + (1 − β1)·g                        (exp_avg)
//! v  ← β2·v + (1 − β2)·g²                       (exp_avg_sq)
//! p1 ← p1·β1,  p2 ← p2·β2                       β^t carried as state (1 at t = 0): no pow
//! w  ← w − m / (√v / √(1 − p2) + ε) · (lr · 1/(1 − p1))
//! ```
//! The step count enters only through `beta1_power` / `beta2_power`, two one-element state
//! tensors the graph itself multiplies by β each step (PyTorch computes `β^t` on the host; here
//! no scalar of the step is computed on the host at all).

#![allow(dead_code)] // the test and the example use different parts

use hipdnn::{
    Buffer, DataType, Graph, Handle, PointwiseAttributes, PointwiseMode as PM,
    TensorAttributes as T, TensorId, TensorValue, VariantPack,
};

/// Parameters: UID `PARAM + i`; their gradients `GRAD + i`; optimizer slot 0 (SGD velocity,
/// AdamW exp_avg) `SLOT0 + i`; updated parameters `PARAM_OUT + i`; updated slot 0
/// `SLOT0_OUT + i`; AdamW's exp_avg_sq `SLOT1 + i` and `SLOT1_OUT + i`. Models keep their own
/// UIDs below 100 and in 600..800.
pub const PARAM: i64 = 100;
pub const GRAD: i64 = 200;
pub const SLOT0: i64 = 300;
pub const PARAM_OUT: i64 = 400;
pub const SLOT0_OUT: i64 = 500;
pub const SLOT1: i64 = 800;
pub const SLOT1_OUT: i64 = 900;
/// AdamW's β1^t and β2^t (one element each) and their updates.
const BETA_POW: [i64; 2] = [1000, 1001];
const BETA_POW_OUT: [i64; 2] = [1002, 1003];
// Compile-time constants of the update graphs.
const LR: i64 = 25;
const MU: i64 = 26;
const DECAY: i64 = 27;
const BETA: [i64; 2] = [28, 29];
const ONE_MINUS_BETA: [i64; 2] = [30, 31];
const ONE: i64 = 32;
const ADAM_EPS: i64 = 33;

/// An optimizer and its hyperparameters (baked into the update plan).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Opt {
    /// PyTorch's SGD with momentum (no dampening, no weight decay, not Nesterov).
    Sgd { lr: f32, momentum: f32 },
    /// PyTorch's AdamW (amsgrad off).
    AdamW {
        lr: f32,
        betas: (f32, f32),
        eps: f32,
        weight_decay: f32,
    },
}

impl Opt {
    /// AdamW with PyTorch's defaults but `lr`: betas (0.9, 0.999), eps 1e-8, weight decay 0.01.
    pub fn adamw(lr: f32) -> Opt {
        Opt::AdamW {
            lr,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.01,
        }
    }

    /// `sgd` or `adamw`.
    pub fn name(&self) -> &'static str {
        match self {
            Opt::Sgd { .. } => "sgd",
            Opt::AdamW { .. } => "adamw",
        }
    }

    /// The saved plan's file name.
    pub fn plan_file(&self) -> &'static str {
        match self {
            Opt::Sgd { .. } => "sgd.hdgp",
            Opt::AdamW { .. } => "adamw.hdgp",
        }
    }

    /// The per-parameter state tensors' name prefixes in the state file.
    pub fn slot_names(&self) -> &'static [&'static str] {
        match self {
            Opt::Sgd { .. } => &["v"],
            Opt::AdamW { .. } => &["exp_avg", "exp_avg_sq"],
        }
    }

    /// The one-element state scalars' names and initial values.
    pub fn scalar_names(&self) -> &'static [(&'static str, f32)] {
        match self {
            Opt::Sgd { .. } => &[],
            Opt::AdamW { .. } => &[("beta1_power", 1.0), ("beta2_power", 1.0)],
        }
    }
}

/// The optimizer's state: `slots[s][i]` is slot `s` (see [`Opt::slot_names`]) of parameter
/// `i`; `scalars` as [`Opt::scalar_names`].
#[derive(Debug, Clone, PartialEq)]
pub struct OptState {
    pub slots: Vec<Vec<Vec<f32>>>,
    pub scalars: Vec<f32>,
}

impl OptState {
    /// Zero slots and the initial scalars for parameters of `sizes` elements.
    pub fn init(opt: Opt, sizes: &[usize]) -> OptState {
        OptState {
            slots: opt
                .slot_names()
                .iter()
                .map(|_| sizes.iter().map(|&n| vec![0.0; n]).collect())
                .collect(),
            scalars: opt.scalar_names().iter().map(|&(_, v)| v).collect(),
        }
    }
}

fn packed(d: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; d.len()];
    for i in (0..d.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * d[i + 1];
    }
    s
}

fn t(g: &mut Graph, name: &str, uid: i64, dims: &[i64]) -> TensorId {
    g.tensor(
        T::new(name)
            .uid(uid)
            .data_type(DataType::Float)
            .dims(dims.to_vec())
            .strides(packed(dims)),
    )
}

fn scalar(g: &mut Graph, name: &str, uid: i64, v: f32) -> TensorId {
    g.tensor(T::scalar(TensorValue::Float32(v)).name(name).uid(uid))
}

fn out(g: &mut Graph, t: TensorId, uid: i64, name: &str) {
    let strides = packed(&g.tensor_attributes(t).dims);
    g.set_output(t, true)
        .set_uid(t, uid)
        .set_tensor_name(t, name)
        .set_strides(t, strides);
}

fn pw(g: &mut Graph, a: TensorId, b: TensorId, mode: PM) -> TensorId {
    g.pointwise(a, b, PointwiseAttributes::with_mode(mode))
}

/// The update graph of `opt` over `params` (name, dims; parameter `i` at UID `PARAM + i`).
pub fn graph(opt: Opt, params: &[(&str, [i64; 4])]) -> Graph {
    let mut g = Graph::new();
    g.set_name(match opt {
        Opt::Sgd { .. } => "train_sgd",
        Opt::AdamW { .. } => "train_adamw",
    });
    g.set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    match opt {
        Opt::Sgd { lr, momentum } => sgd(&mut g, lr, momentum, params),
        Opt::AdamW {
            lr,
            betas,
            eps,
            weight_decay,
        } => adamw(&mut g, lr, [betas.0, betas.1], eps, weight_decay, params),
    }
    g
}

/// `v' = μ·v + g`, `w' = w − lr·v'` for every parameter.
fn sgd(g: &mut Graph, lr: f32, mu: f32, params: &[(&str, [i64; 4])]) {
    let lr = scalar(g, "lr", LR, lr);
    let mu = scalar(g, "momentum", MU, mu);
    for (i, (name, dims)) in params.iter().enumerate() {
        let i = i as i64;
        let w = t(g, name, PARAM + i, dims);
        let grad = t(g, &format!("d_{name}"), GRAD + i, dims);
        let v = t(g, &format!("v_{name}"), SLOT0 + i, dims);
        let mv = pw(g, v, mu, PM::Mul);
        let v2 = pw(g, mv, grad, PM::Add);
        out(g, v2, SLOT0_OUT + i, &format!("next_v_{name}"));
        let step = pw(g, v2, lr, PM::Mul);
        let w2 = pw(g, w, step, PM::Sub);
        out(g, w2, PARAM_OUT + i, &format!("next_{name}"));
    }
}

/// AdamW as in the module doc, for every parameter.
fn adamw(g: &mut Graph, lr: f32, betas: [f32; 2], eps: f32, wd: f32, params: &[(&str, [i64; 4])]) {
    let lr_t = scalar(g, "lr", LR, lr);
    let decay = scalar(g, "one_minus_lr_weight_decay", DECAY, 1.0 - lr * wd);
    let one = scalar(g, "one", ONE, 1.0);
    let eps = scalar(g, "eps", ADAM_EPS, eps);
    // (1 − β^t) for both moments, β^t carried in the state.
    let mut bias_correction = [one; 2];
    let mut beta = [one; 2];
    let mut one_minus_beta = [one; 2];
    for j in 0..2 {
        beta[j] = scalar(g, &format!("beta{}", j + 1), BETA[j], betas[j]);
        one_minus_beta[j] = scalar(
            g,
            &format!("one_minus_beta{}", j + 1),
            ONE_MINUS_BETA[j],
            1.0 - betas[j],
        );
        let p = t(g, &format!("beta{}_power", j + 1), BETA_POW[j], &[1]);
        let p2 = pw(g, p, beta[j], PM::Mul);
        out(g, p2, BETA_POW_OUT[j], &format!("next_beta{}_power", j + 1));
        let neg = pw(g, p2, one, PM::Sub); // β^t − 1
        bias_correction[j] = g.pointwise_unary(neg, PointwiseAttributes::with_mode(PM::Neg));
    }
    // step size lr / (1 − β1^t); √(1 − β2^t)
    let inv_bc1 = g.pointwise_unary(
        bias_correction[0],
        PointwiseAttributes::with_mode(PM::Reciprocal),
    );
    let step_size = pw(g, inv_bc1, lr_t, PM::Mul);
    let sqrt_bc2 = g.pointwise_unary(bias_correction[1], PointwiseAttributes::with_mode(PM::Sqrt));
    for (i, (name, dims)) in params.iter().enumerate() {
        let i = i as i64;
        let w = t(g, name, PARAM + i, dims);
        let grad = t(g, &format!("d_{name}"), GRAD + i, dims);
        let m = t(g, &format!("exp_avg_{name}"), SLOT0 + i, dims);
        let v = t(g, &format!("exp_avg_sq_{name}"), SLOT1 + i, dims);
        let wd_w = pw(g, w, decay, PM::Mul);
        let bm = pw(g, m, beta[0], PM::Mul);
        let gm = pw(g, grad, one_minus_beta[0], PM::Mul);
        let m2 = pw(g, bm, gm, PM::Add);
        out(g, m2, SLOT0_OUT + i, &format!("next_exp_avg_{name}"));
        let bv = pw(g, v, beta[1], PM::Mul);
        let gg = pw(g, grad, grad, PM::Mul);
        let gv = pw(g, gg, one_minus_beta[1], PM::Mul);
        let v2 = pw(g, bv, gv, PM::Add);
        out(g, v2, SLOT1_OUT + i, &format!("next_exp_avg_sq_{name}"));
        let sv = g.pointwise_unary(v2, PointwiseAttributes::with_mode(PM::Sqrt));
        let sv = pw(g, sv, sqrt_bc2, PM::Div);
        let denom = pw(g, sv, eps, PM::Add);
        let ratio = pw(g, m2, denom, PM::Div);
        let step = pw(g, ratio, step_size, PM::Mul);
        let w2 = pw(g, wd_w, step, PM::Sub);
        out(g, w2, PARAM_OUT + i, &format!("next_{name}"));
    }
}

/// Runs the update plan `plan` (built by [`graph`]): `params` and `state` are
/// replaced by their updates from `grads` (one buffer per parameter, [`GRAD`] order).
///
/// # Errors
/// The plan's execute error.
pub fn update(
    plan: &Graph,
    handle: &Handle,
    params: &mut Vec<Vec<f32>>,
    grads: &[Buffer<f32>],
    state: &mut OptState,
) -> hipdnn::Result<()> {
    let p_in: Vec<Buffer<f32>> = params.iter().map(|p| Buffer::from_slice(p)).collect();
    let s_in: Vec<Vec<Buffer<f32>>> = state
        .slots
        .iter()
        .map(|s| s.iter().map(|v| Buffer::from_slice(v)).collect())
        .collect();
    let c_in: Vec<Buffer<f32>> = state
        .scalars
        .iter()
        .map(|&c| Buffer::from_slice(&[c]))
        .collect();
    let mut p_out: Vec<Buffer<f32>> = params.iter().map(|p| Buffer::zeros(p.len())).collect();
    let mut s_out: Vec<Vec<Buffer<f32>>> = state
        .slots
        .iter()
        .map(|s| s.iter().map(|v| Buffer::zeros(v.len())).collect())
        .collect();
    let mut c_out: Vec<Buffer<f32>> = state.scalars.iter().map(|_| Buffer::zeros(1)).collect();
    {
        let mut pack = VariantPack::new();
        for (i, (p, gr)) in p_in.iter().zip(grads).enumerate() {
            pack = pack.input(PARAM + i as i64, p).input(GRAD + i as i64, gr);
        }
        for (ins, base) in s_in.iter().zip([SLOT0, SLOT1]) {
            for (i, b) in ins.iter().enumerate() {
                pack = pack.input(base + i as i64, b);
            }
        }
        for (c, uid) in c_in.iter().zip(BETA_POW) {
            pack = pack.input(uid, c);
        }
        for (i, p) in p_out.iter_mut().enumerate() {
            pack = pack.output(PARAM_OUT + i as i64, p);
        }
        for (outs, base) in s_out.iter_mut().zip([SLOT0_OUT, SLOT1_OUT]) {
            for (i, b) in outs.iter_mut().enumerate() {
                pack = pack.output(base + i as i64, b);
            }
        }
        for (c, uid) in c_out.iter_mut().zip(BETA_POW_OUT) {
            pack = pack.output(uid, c);
        }
        plan.execute(handle, pack, None)?;
    }
    *params = p_out
        .iter()
        .map(Buffer::to_vec)
        .collect::<hipdnn::Result<_>>()?;
    state.slots = s_out
        .iter()
        .map(|s| s.iter().map(Buffer::to_vec).collect())
        .collect::<hipdnn::Result<_>>()?;
    state.scalars = c_out
        .iter()
        .map(|c| c.to_vec().map(|v| v[0]))
        .collect::<hipdnn::Result<_>>()?;
    Ok(())
}
