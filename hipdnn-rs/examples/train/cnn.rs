//! The small CNN of the `train` example as hipdnn graphs: every piece of the training step —
//! forward with saved statistics, softmax cross-entropy loss, backward, SGD with momentum — is
//! a graph the engine runs; the host only moves buffers between plans, counts correct argmaxes
//! for the accuracy line, and draws batches.
//!
//! Model (NCHW, f32, batch `B`):
//! ```text
//! x (B,1,8,8) → conv 3×3 pad 1 (8) → batchnorm → ReLU → max pool 2×2 → (B,8,4,4)
//!             → conv 3×3 pad 1 (16) → batchnorm → ReLU → max pool 2×2 → (B,16,2,2) = h (B,64)
//!             → linear (64 → 10) → logits;  loss = mean over the batch of −log softmax[label]
//! ```
//! Plans (one graph each, [`plan_files`]): `features` (the convolutional forward in training
//! mode: batch statistics, running statistics updated, every tensor backward needs written),
//! `head` (linear, loss, and the head's backward: dW, db and dh from `softmax − onehot`),
//! `features_backward` (max-pool backward through the saved index, ReLU backward, batchnorm
//! backward, conv wgrad / dgrad), `sgd` or `adamw` (the update of every parameter,
//! `optim.rs`), and the inference pair `eval_features` (batchnorm from running statistics) / `eval_head`.

#![allow(dead_code)] // the test and the example use different parts

use crate::data::{self, Rng};
use crate::optim::{self, GRAD, Opt, OptState, PARAM};
use hipdnn::{
    BatchnormAttributes, BatchnormBackwardAttributes, BatchnormInferenceVarianceExtAttributes,
    Buffer, ConvDgradAttributes, ConvFpropAttributes, ConvWgradAttributes, DataType, Graph, Handle,
    MatmulAttributes, PointwiseAttributes, PointwiseMode as PM, ReductionAttributes, ReductionMode,
    ResampleBwdAttributes, ResampleFwdAttributes, ResampleMode, TensorAttributes as T, TensorId,
    TensorValue, VariantPack,
};

/// Channels of the two conv layers.
pub const C1: i64 = 8;
/// Channels of the second conv layer.
pub const C2: i64 = 16;
/// Classes.
pub const K: i64 = 10;
/// Features after the second pool (C2 · 2 · 2).
pub const FEAT: i64 = C2 * 4;
/// Batchnorm epsilon and momentum (PyTorch's defaults).
pub const BN_EPS: f32 = 1e-5;
pub const BN_MOMENTUM: f32 = 0.1;

/// File names of the saved plans, in [`Plan`] order (`sgd.hdgp` or `adamw.hdgp` fourth).
pub fn plan_files(opt: Opt) -> [&'static str; 6] {
    [
        "features.hdgp",
        "head.hdgp",
        "features_backward.hdgp",
        opt.plan_file(),
        "eval_features.hdgp",
        "eval_head.hdgp",
    ]
}

/// The plans, indices into [`Plans::graphs`].
#[derive(Debug, Clone, Copy)]
#[repr(usize)]
pub enum Plan {
    Features,
    Head,
    FeaturesBackward,
    Update,
    EvalFeatures,
    EvalHead,
}

// Tensor UIDs, one per role, shared by every graph that binds the role.
const X: i64 = 1;
const C1OUT: i64 = 2;
const A1: i64 = 3;
const MEAN1: i64 = 4;
const IV1: i64 = 5;
const P1: i64 = 6;
const IDX1: i64 = 7;
const C2OUT: i64 = 8;
const A2: i64 = 9;
const MEAN2: i64 = 10;
const IV2: i64 = 11;
const P2: i64 = 12;
const IDX2: i64 = 13;
const H: i64 = 14;
const HT: i64 = 15;
const ONEHOT: i64 = 16;
const LOGITS: i64 = 17;
const LOSS: i64 = 18;
const DH: i64 = 19;
const WFCT: i64 = 20;
const EPS: i64 = 21;
const MOMENTUM: i64 = 22;
const NEG_INV_B: i64 = 23;
const INV_B: i64 = 24;
// Parameters and gradients: `optim::PARAM + i`, `optim::GRAD + i`.
/// Running statistics: mean1, var1, mean2, var2 at `RUN + i`, their updates at `RUN_OUT + i`.
const RUN: i64 = 600;
const RUN_OUT: i64 = 700;

/// The parameters, in UID order (`PARAM + index`): name and dims.
pub const PARAMS: [(&str, [i64; 4]); 8] = [
    ("conv1.weight", [C1, 1, 3, 3]),
    ("bn1.weight", [1, C1, 1, 1]),
    ("bn1.bias", [1, C1, 1, 1]),
    ("conv2.weight", [C2, C1, 3, 3]),
    ("bn2.weight", [1, C2, 1, 1]),
    ("bn2.bias", [1, C2, 1, 1]),
    ("fc.weight", [1, 1, FEAT, K]),
    ("fc.bias", [1, 1, 1, K]),
];
const W1: usize = 0;
const G1: usize = 1;
const B1: usize = 2;
const W2: usize = 3;
const G2: usize = 4;
const B2: usize = 5;
const WFC: usize = 6;
const BFC: usize = 7;

/// The running statistics, in UID order (`RUN + index`).
pub const RUNNING: [(&str, i64); 4] = [
    ("bn1.running_mean", C1),
    ("bn1.running_var", C1),
    ("bn2.running_mean", C2),
    ("bn2.running_var", C2),
];

fn volume(d: &[i64]) -> usize {
    d.iter().product::<i64>() as usize
}

fn packed(d: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; d.len()];
    for i in (0..d.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * d[i + 1];
    }
    s
}

fn graph(name: &str) -> Graph {
    let mut g = Graph::new();
    g.set_name(name);
    g.set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    g
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

fn strided(g: &mut Graph, name: &str, uid: i64, dims: &[i64], strides: &[i64]) -> TensorId {
    g.tensor(
        T::new(name)
            .uid(uid)
            .data_type(DataType::Float)
            .dims(dims.to_vec())
            .strides(strides.to_vec()),
    )
}

fn scalar(g: &mut Graph, name: &str, uid: i64, v: f32) -> TensorId {
    g.tensor(T::scalar(TensorValue::Float32(v)).name(name).uid(uid))
}

/// Marks `t` as an output with `uid` and `name`, packed row-major (stated, not left to the
/// SDK's inference, since the host reads these buffers row-major).
fn out(g: &mut Graph, t: TensorId, uid: i64, name: &str) {
    let strides = packed(&g.tensor_attributes(t).dims);
    g.set_output(t, true)
        .set_uid(t, uid)
        .set_tensor_name(t, name)
        .set_strides(t, strides);
}

fn param(g: &mut Graph, i: usize) -> TensorId {
    t(g, PARAMS[i].0, PARAM + i as i64, &PARAMS[i].1)
}

fn pw(mode: PM) -> PointwiseAttributes {
    PointwiseAttributes::with_mode(mode)
}

fn conv() -> ConvFpropAttributes {
    ConvFpropAttributes::new()
        .padding([1, 1])
        .stride([1, 1])
        .dilation([1, 1])
}

fn pool() -> ResampleFwdAttributes {
    ResampleFwdAttributes::new()
        .resample_mode(ResampleMode::MaxPool)
        .window([2, 2])
        .stride([2, 2])
        .pre_padding([0, 0])
        .post_padding([0, 0])
}

fn pool_bwd() -> ResampleBwdAttributes {
    ResampleBwdAttributes::new()
        .resample_mode(ResampleMode::MaxPool)
        .window([2, 2])
        .stride([2, 2])
        .pre_padding([0, 0])
        .post_padding([0, 0])
}

fn reduce(mode: ReductionMode) -> ReductionAttributes {
    ReductionAttributes::new().mode(mode)
}

/// One conv → batchnorm (training) → ReLU → max pool block; writes the conv output, the
/// batchnorm output, its saved statistics and running statistics, the pool output and index.
#[allow(clippy::too_many_arguments)]
fn train_block(
    g: &mut Graph,
    x: TensorId,
    (w, gamma, beta): (usize, usize, usize),
    eps: TensorId,
    momentum: TensorId,
    run: i64,
    uids: [i64; 6],
    c: i64,
) -> TensorId {
    let [c_out, a_out, mean, iv, p_out, idx] = uids;
    let w = param(g, w);
    let y = g.conv_fprop(x, w, conv());
    out(g, y, c_out, "conv");
    let (gamma, beta) = (param(g, gamma), param(g, beta));
    let rm = t(g, "running_mean", RUN + run, &[1, c, 1, 1]);
    let rv = t(g, "running_var", RUN + run + 1, &[1, c, 1, 1]);
    let bn = g.batchnorm(
        y,
        gamma,
        beta,
        BatchnormAttributes::new()
            .epsilon(eps)
            .prev_running_mean(rm)
            .prev_running_variance(rv)
            .momentum(momentum),
    );
    out(g, bn.y, a_out, "bn");
    out(g, bn.mean, mean, "mean");
    out(g, bn.inv_variance, iv, "inv_variance");
    let (nm, nv) = (
        bn.next_running_mean.expect("running"),
        bn.next_running_variance.expect("running"),
    );
    out(g, nm, RUN_OUT + run, "next_running_mean");
    out(g, nv, RUN_OUT + run + 1, "next_running_var");
    let r = g.pointwise_unary(bn.y, pw(PM::ReluFwd));
    let (p, index) = g.resample(r, pool().generate_index(true));
    out(g, p, p_out, "pool");
    let index = index.expect("index");
    g.set_output(index, true)
        .set_uid(index, idx)
        .set_tensor_name(index, "pool_index");
    p
}

/// `features`: x → two training blocks → p2, with everything backward reads.
fn features_graph(b: i64) -> Graph {
    let mut g = graph("train_features");
    let x = t(&mut g, "x", X, &[b, 1, 8, 8]);
    let eps = scalar(&mut g, "epsilon", EPS, BN_EPS);
    let momentum = scalar(&mut g, "momentum", MOMENTUM, BN_MOMENTUM);
    let p1 = train_block(
        &mut g,
        x,
        (W1, G1, B1),
        eps,
        momentum,
        0,
        [C1OUT, A1, MEAN1, IV1, P1, IDX1],
        C1,
    );
    train_block(
        &mut g,
        p1,
        (W2, G2, B2),
        eps,
        momentum,
        2,
        [C2OUT, A2, MEAN2, IV2, P2, IDX2],
        C2,
    );
    g
}

/// `head`: logits = h·W + b; loss = −Σ onehot·log_softmax(logits) / B; dlogits = (softmax −
/// onehot) / B; dW = hᵀ·dlogits, db = Σ_batch dlogits, dh = dlogits·Wᵀ.
fn head_graph(b: i64) -> Graph {
    let mut g = graph("train_head");
    let h = t(&mut g, "h", H, &[1, b, FEAT]);
    let ht = strided(&mut g, "h_t", HT, &[1, FEAT, b], &[b * FEAT, 1, FEAT]);
    let w = t(&mut g, PARAMS[WFC].0, PARAM + WFC as i64, &[1, FEAT, K]);
    let wt = strided(
        &mut g,
        "fc.weight_t",
        WFCT,
        &[1, K, FEAT],
        &[FEAT * K, 1, K],
    );
    let bias = t(&mut g, PARAMS[BFC].0, PARAM + BFC as i64, &[1, 1, K]);
    let onehot = t(&mut g, "onehot", ONEHOT, &[1, b, K]);
    let neg_inv_b = scalar(&mut g, "neg_inv_batch", NEG_INV_B, -1.0 / b as f32);
    let inv_b = scalar(&mut g, "inv_batch", INV_B, 1.0 / b as f32);
    let z = g.matmul(h, w, MatmulAttributes::new());
    let logits = g.pointwise(z, bias, pw(PM::Add));
    out(&mut g, logits, LOGITS, "logits");
    // log-softmax and softmax over the classes (the reduction pattern the engines fuse).
    let m = g.reduction(logits, [1, b, 1], reduce(ReductionMode::MaxOp));
    let d = g.pointwise(logits, m, pw(PM::Sub));
    let e = g.pointwise_unary(d, pw(PM::Exp));
    let s = g.reduction(e, [1, b, 1], reduce(ReductionMode::Add));
    let ls = g.pointwise_unary(s, pw(PM::Log));
    let logp = g.pointwise(d, ls, pw(PM::Sub));
    let p = g.pointwise(e, s, pw(PM::Div));
    let picked = g.pointwise(onehot, logp, pw(PM::Mul));
    let total = g.reduction(picked, [1, 1, 1], reduce(ReductionMode::Add));
    let loss = g.pointwise(total, neg_inv_b, pw(PM::Mul));
    out(&mut g, loss, LOSS, "loss");
    let diff = g.pointwise(p, onehot, pw(PM::Sub));
    let dlogits = g.pointwise(diff, inv_b, pw(PM::Mul));
    let dw = g.matmul(ht, dlogits, MatmulAttributes::new());
    out(&mut g, dw, GRAD + WFC as i64, "d_fc.weight");
    let db = g.reduction(dlogits, [1, 1, K], reduce(ReductionMode::Add));
    out(&mut g, db, GRAD + BFC as i64, "d_fc.bias");
    let dh = g.matmul(dlogits, wt, MatmulAttributes::new());
    out(&mut g, dh, DH, "dh");
    g
}

/// One block's backward: max-pool backward through the index, ReLU backward, batchnorm
/// backward (writes dgamma, dbeta), conv wgrad (writes dW); returns dconv for the dgrad.
#[allow(clippy::too_many_arguments)]
fn block_backward(
    g: &mut Graph,
    dp: TensorId,
    x: TensorId,
    (w, gamma, beta): (usize, usize, usize),
    [c_out, a_out, mean, iv, idx]: [i64; 5],
    dims: [i64; 4],
    pooled: [i64; 4],
) -> TensorId {
    let index = g.tensor(
        T::new("pool_index")
            .uid(idx)
            .data_type(DataType::Int32)
            .dims(pooled.to_vec())
            .strides(packed(&pooled)),
    );
    let dr = g.resample_bwd(dp, Some(index), pool_bwd());
    let a = t(g, "bn", a_out, &dims);
    let da = g.pointwise(dr, a, pw(PM::ReluBwd));
    let c = t(g, "conv", c_out, &dims);
    let ch = [1, dims[1], 1, 1];
    let gamma_t = param(g, gamma);
    let mean = t(g, "mean", mean, &ch);
    let iv = t(g, "inv_variance", iv, &ch);
    let [dc, dgamma, dbeta] = g.batchnorm_backward(
        da,
        c,
        gamma_t,
        BatchnormBackwardAttributes::new()
            .mean(mean)
            .inv_variance(iv),
    );
    out(g, dgamma, GRAD + gamma as i64, "d_gamma");
    out(g, dbeta, GRAD + beta as i64, "d_beta");
    let dw = g.conv_wgrad(
        dc,
        x,
        ConvWgradAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    out(g, dw, GRAD + w as i64, "d_weight");
    dc
}

/// `features_backward`: dh (as (B,16,2,2)) → block 2 backward → conv2 dgrad → block 1
/// backward; writes the gradients of conv1, bn1, conv2, bn2.
fn features_backward_graph(b: i64) -> Graph {
    let mut g = graph("train_features_backward");
    let dp2 = t(&mut g, "dh", DH, &[b, C2, 2, 2]);
    let p1 = t(&mut g, "pool1", P1, &[b, C1, 4, 4]);
    let dc2 = block_backward(
        &mut g,
        dp2,
        p1,
        (W2, G2, B2),
        [C2OUT, A2, MEAN2, IV2, IDX2],
        [b, C2, 4, 4],
        [b, C2, 2, 2],
    );
    let w2 = param(&mut g, W2);
    let dp1 = g.conv_dgrad(
        dc2,
        w2,
        ConvDgradAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    let x = t(&mut g, "x", X, &[b, 1, 8, 8]);
    block_backward(
        &mut g,
        dp1,
        x,
        (W1, G1, B1),
        [C1OUT, A1, MEAN1, IV1, IDX1],
        [b, C1, 8, 8],
        [b, C1, 4, 4],
    );
    g
}

/// One inference block: conv → batchnorm from running statistics → ReLU → max pool.
fn eval_block(
    g: &mut Graph,
    x: TensorId,
    (w, gamma, beta): (usize, usize, usize),
    run: i64,
    c: i64,
    eps: TensorId,
) -> TensorId {
    let w = param(g, w);
    let y = g.conv_fprop(x, w, conv());
    let rm = t(g, "running_mean", RUN + run, &[1, c, 1, 1]);
    let rv = t(g, "running_var", RUN + run + 1, &[1, c, 1, 1]);
    let (gamma, beta) = (param(g, gamma), param(g, beta));
    let a = g.batchnorm_inference_variance_ext(
        y,
        rm,
        rv,
        gamma,
        beta,
        eps,
        BatchnormInferenceVarianceExtAttributes::new(),
    );
    let r = g.pointwise_unary(a, pw(PM::ReluFwd));
    g.resample_fwd(r, pool())
}

fn eval_features_graph(b: i64) -> Graph {
    let mut g = graph("eval_features");
    let x = t(&mut g, "x", X, &[b, 1, 8, 8]);
    let eps = scalar(&mut g, "epsilon", EPS, BN_EPS);
    let p1 = eval_block(&mut g, x, (W1, G1, B1), 0, C1, eps);
    let p2 = eval_block(&mut g, p1, (W2, G2, B2), 2, C2, eps);
    out(&mut g, p2, P2, "pool2");
    g
}

fn eval_head_graph(b: i64) -> Graph {
    let mut g = graph("eval_head");
    let h = t(&mut g, "h", H, &[1, b, FEAT]);
    let w = t(&mut g, PARAMS[WFC].0, PARAM + WFC as i64, &[1, FEAT, K]);
    let bias = t(&mut g, PARAMS[BFC].0, PARAM + BFC as i64, &[1, 1, K]);
    let z = g.matmul(h, w, MatmulAttributes::new());
    let logits = g.pointwise(z, bias, pw(PM::Add));
    out(&mut g, logits, LOGITS, "logits");
    g
}

/// Hyperparameters baked into the plans.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hyper {
    /// Batch size (training and evaluation).
    pub batch: usize,
    /// The optimizer.
    pub opt: Opt,
}

/// The six built (or loaded) plans.
pub struct Plans {
    pub graphs: Vec<Graph>,
}

impl Plans {
    /// The graphs of every plan for `hyper`, unbuilt, in plan order.
    pub fn graphs(hyper: Hyper) -> Vec<Graph> {
        let b = hyper.batch as i64;
        vec![
            features_graph(b),
            head_graph(b),
            features_backward_graph(b),
            optim::graph(hyper.opt, &PARAMS),
            eval_features_graph(b),
            eval_head_graph(b),
        ]
    }

    /// Builds every plan for `hyper` on `handle`.
    pub fn build(handle: &Handle, hyper: Hyper) -> hipdnn::Result<Plans> {
        let graphs = data::build_graphs(handle, Self::graphs(hyper))?;
        Ok(Plans { graphs })
    }

    /// Loads saved plans (`to_binary` bytes, [`plan_files`] order).
    pub fn load(handle: &Handle, bins: &[Vec<u8>]) -> hipdnn::Result<Plans> {
        let graphs = data::load_graphs(handle, bins)?;
        Ok(Plans { graphs })
    }

    /// Every plan's `to_binary` bytes.
    pub fn save(&self) -> hipdnn::Result<Vec<Vec<u8>>> {
        data::save_graphs(&self.graphs)
    }

    fn get(&self, p: Plan) -> &Graph {
        &self.graphs[p as usize]
    }

    /// The batch size the plans were built for (dims of x).
    pub fn batch(&self) -> usize {
        let g = self.get(Plan::Features);
        g.tensor_by_uid(X)
            .map(|t| g.tensor_attributes(t).dims[0] as usize)
            .unwrap_or(0)
    }
}

/// Everything that changes during training: parameters, the optimizer's state, running
/// statistics, and the number of steps taken.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    pub params: Vec<Vec<f32>>,
    pub opt: OptState,
    pub running: Vec<Vec<f32>>,
    pub step: usize,
}

impl State {
    /// PyTorch's default initialisation scheme (uniform ±1/√fan_in for conv and linear
    /// weights and the linear bias; batchnorm weight 1, bias 0; running mean 0, variance 1),
    /// drawn from [`Rng`] seeded with `seed`; the optimizer's state from [`OptState::init`].
    pub fn init(seed: u64, opt: Opt) -> State {
        let mut rng = Rng(seed);
        let params: Vec<Vec<f32>> = PARAMS
            .iter()
            .enumerate()
            .map(|(i, (_, d))| {
                let n = volume(d);
                let fan_in = match i {
                    W1 => 9.0,
                    W2 => (C1 * 9) as f32,
                    WFC | BFC => FEAT as f32,
                    _ => 0.0,
                };
                match i {
                    G1 | G2 => vec![1.0; n],
                    B1 | B2 => vec![0.0; n],
                    _ => {
                        let bound = 1.0 / fan_in.sqrt();
                        (0..n).map(|_| (2.0 * rng.unit() - 1.0) * bound).collect()
                    }
                }
            })
            .collect();
        let sizes: Vec<usize> = params.iter().map(Vec::len).collect();
        let running = RUNNING
            .iter()
            .enumerate()
            .map(|(i, &(_, c))| vec![if i % 2 == 0 { 0.0 } else { 1.0 }; c as usize])
            .collect();
        State {
            params,
            opt: OptState::init(opt, &sizes),
            running,
            step: 0,
        }
    }

    /// The state file's tensors for `opt`: name, element count (with [`Self::to_bytes`]'s dims).
    fn layout(opt: Opt) -> Vec<(String, Vec<usize>)> {
        let dims = |d: &[i64]| d.iter().map(|&x| x as usize).collect::<Vec<_>>();
        let mut v: Vec<(String, Vec<usize>)> = PARAMS
            .iter()
            .map(|(n, d)| (n.to_string(), dims(d)))
            .collect();
        for slot in opt.slot_names() {
            v.extend(PARAMS.iter().map(|(n, d)| (format!("{slot}.{n}"), dims(d))));
        }
        v.extend(
            opt.scalar_names()
                .iter()
                .map(|(n, _)| (n.to_string(), vec![1])),
        );
        v.extend(
            RUNNING
                .iter()
                .map(|(n, c)| (n.to_string(), vec![*c as usize])),
        );
        v
    }

    /// The state as safetensors (`data::write_state`): every parameter, the optimizer's
    /// slots (`v.<name>` for SGD; `exp_avg.<name>`, `exp_avg_sq.<name>`, `beta1_power`,
    /// `beta2_power` for AdamW), the running statistics and `step`.
    pub fn to_bytes(&self, opt: Opt) -> Vec<u8> {
        let values = self
            .params
            .iter()
            .chain(self.opt.slots.iter().flatten())
            .map(Vec::as_slice)
            .chain(self.opt.scalars.iter().map(std::slice::from_ref))
            .chain(self.running.iter().map(Vec::as_slice));
        let named: Vec<data::Named<'_>> = Self::layout(opt)
            .into_iter()
            .zip(values)
            .map(|((n, d), v)| (n, d, v))
            .collect();
        data::write_state(&named, self.step)
    }

    /// Reads [`Self::to_bytes`]'s bytes.
    ///
    /// # Errors
    /// Not safetensors, or a tensor missing or of the wrong size.
    pub fn from_bytes(bytes: &[u8], opt: Opt) -> Result<State, String> {
        let want: Vec<(String, usize)> = Self::layout(opt)
            .into_iter()
            .map(|(n, d)| (n, d.iter().product()))
            .collect();
        let (mut t, step) = data::read_state(bytes, &want)?;
        let np = PARAMS.len();
        let running = t.split_off(t.len() - RUNNING.len());
        let scalars: Vec<f32> = t
            .split_off(t.len() - opt.scalar_names().len())
            .into_iter()
            .map(|v| v[0])
            .collect();
        let slots_flat = t.split_off(np);
        let slots = slots_flat.chunks(np).map(<[Vec<f32>]>::to_vec).collect();
        Ok(State {
            params: t,
            opt: OptState { slots, scalars },
            running,
            step,
        })
    }
}

/// A batch: images (B·64 values in [0, 1]) and labels.
pub struct Batch<'a> {
    pub x: &'a [f32],
    pub labels: &'a [u8],
}

/// What one training step reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// The batch's mean cross-entropy (before the update).
    pub loss: f32,
    /// Correct argmaxes in the batch.
    pub correct: usize,
}

fn argmax_hits(logits: &[f32], labels: &[u8]) -> usize {
    logits
        .chunks_exact(K as usize)
        .zip(labels)
        .filter(|&(row, &l)| {
            let best = row
                .iter()
                .enumerate()
                .fold(0, |b, (i, &v)| if v > row[b] { i } else { b });
            best == l as usize
        })
        .count()
}

fn buf(v: &[f32]) -> Buffer<f32> {
    Buffer::from_slice(v)
}

fn zeros(n: usize) -> Buffer<f32> {
    Buffer::zeros(n)
}

impl Plans {
    /// One training step on `batch`: features → head (loss, head gradients) → features backward
    /// → update. `state` is replaced by the updated parameters, optimizer state and running
    /// statistics.
    ///
    /// # Errors
    /// Any execute error of a plan.
    pub fn step(
        &self,
        handle: &Handle,
        state: &mut State,
        batch: &Batch<'_>,
    ) -> hipdnn::Result<StepReport> {
        let b = self.batch() as i64;
        let bu = b as usize;
        let x = buf(batch.x);
        let params: Vec<Buffer<f32>> = state.params.iter().map(|p| buf(p)).collect();
        let running: Vec<Buffer<f32>> = state.running.iter().map(|r| buf(r)).collect();
        let mut next_running: Vec<Buffer<f32>> =
            state.running.iter().map(|r| zeros(r.len())).collect();
        let size = |c: i64, s: i64| bu * (c * s * s) as usize;
        let (mut c1, mut a1, mut p1) = (zeros(size(C1, 8)), zeros(size(C1, 8)), zeros(size(C1, 4)));
        let (mut c2, mut a2, mut p2) = (zeros(size(C2, 4)), zeros(size(C2, 4)), zeros(size(C2, 2)));
        let (mut idx1, mut idx2) = (
            Buffer::<i32>::zeros(size(C1, 4)),
            Buffer::<i32>::zeros(size(C2, 2)),
        );
        let (mut m1, mut v1, mut m2, mut v2) = (
            zeros(C1 as usize),
            zeros(C1 as usize),
            zeros(C2 as usize),
            zeros(C2 as usize),
        );
        {
            let [nr0, nr1, nr2, nr3] = &mut next_running[..] else {
                unreachable!()
            };
            let mut pack = VariantPack::new().input(X, &x);
            for i in [W1, G1, B1, W2, G2, B2] {
                pack = pack.input(PARAM + i as i64, &params[i]);
            }
            for (i, r) in running.iter().enumerate() {
                pack = pack.input(RUN + i as i64, r);
            }
            let pack = pack
                .output(RUN_OUT, nr0)
                .output(RUN_OUT + 1, nr1)
                .output(RUN_OUT + 2, nr2)
                .output(RUN_OUT + 3, nr3)
                .output(C1OUT, &mut c1)
                .output(A1, &mut a1)
                .output(MEAN1, &mut m1)
                .output(IV1, &mut v1)
                .output(P1, &mut p1)
                .output(IDX1, &mut idx1)
                .output(C2OUT, &mut c2)
                .output(A2, &mut a2)
                .output(MEAN2, &mut m2)
                .output(IV2, &mut v2)
                .output(P2, &mut p2)
                .output(IDX2, &mut idx2);
            self.get(Plan::Features).execute(handle, pack, None)?;
        }
        let mut onehot = vec![0f32; bu * K as usize];
        for (r, &l) in batch.labels.iter().enumerate() {
            onehot[r * K as usize + l as usize] = 1.0;
        }
        let onehot = buf(&onehot);
        let (mut logits, mut loss, mut dh) =
            (zeros(bu * K as usize), zeros(1), zeros(bu * FEAT as usize));
        let mut grads: Vec<Buffer<f32>> = PARAMS.iter().map(|(_, d)| zeros(volume(d))).collect();
        {
            let [.., gw, gb] = &mut grads[..] else {
                unreachable!()
            };
            let pack = VariantPack::new()
                .input(H, &p2)
                .input(HT, &p2)
                .input(PARAM + WFC as i64, &params[WFC])
                .input(WFCT, &params[WFC])
                .input(PARAM + BFC as i64, &params[BFC])
                .input(ONEHOT, &onehot)
                .output(LOGITS, &mut logits)
                .output(LOSS, &mut loss)
                .output(GRAD + WFC as i64, gw)
                .output(GRAD + BFC as i64, gb)
                .output(DH, &mut dh);
            self.get(Plan::Head).execute(handle, pack, None)?;
        }
        {
            let [gw1, gg1, gb1, gw2, gg2, gb2, ..] = &mut grads[..] else {
                unreachable!()
            };
            let pack = VariantPack::new()
                .input(DH, &dh)
                .input(P1, &p1)
                .input(X, &x)
                .input(PARAM + W2 as i64, &params[W2])
                .input(PARAM + G1 as i64, &params[G1])
                .input(PARAM + G2 as i64, &params[G2])
                .input(C1OUT, &c1)
                .input(A1, &a1)
                .input(MEAN1, &m1)
                .input(IV1, &v1)
                .input(IDX1, &idx1)
                .input(C2OUT, &c2)
                .input(A2, &a2)
                .input(MEAN2, &m2)
                .input(IV2, &v2)
                .input(IDX2, &idx2)
                .output(GRAD + W1 as i64, gw1)
                .output(GRAD + G1 as i64, gg1)
                .output(GRAD + B1 as i64, gb1)
                .output(GRAD + W2 as i64, gw2)
                .output(GRAD + G2 as i64, gg2)
                .output(GRAD + B2 as i64, gb2);
            self.get(Plan::FeaturesBackward)
                .execute(handle, pack, None)?;
        }
        optim::update(
            self.get(Plan::Update),
            handle,
            &mut state.params,
            &grads,
            &mut state.opt,
        )?;
        state.running = next_running
            .iter()
            .map(|r| r.to_vec())
            .collect::<hipdnn::Result<_>>()?;
        state.step += 1;
        Ok(StepReport {
            loss: loss.to_vec()?[0],
            correct: argmax_hits(&logits.to_vec()?, batch.labels),
        })
    }

    /// Correct argmaxes of the inference plans (running statistics) over `x` / `labels`, in
    /// whole batches (a last partial batch is left out); returns (correct, counted).
    ///
    /// # Errors
    /// Any execute error of a plan.
    pub fn evaluate(
        &self,
        handle: &Handle,
        state: &State,
        x: &[f32],
        labels: &[u8],
    ) -> hipdnn::Result<(usize, usize)> {
        let bu = self.batch();
        let params: Vec<Buffer<f32>> = state.params.iter().map(|p| buf(p)).collect();
        let running: Vec<Buffer<f32>> = state.running.iter().map(|r| buf(r)).collect();
        let (mut correct, mut counted) = (0, 0);
        for (xs, ls) in x.chunks_exact(bu * 64).zip(labels.chunks_exact(bu)) {
            let xb = buf(xs);
            let mut p2 = zeros(bu * FEAT as usize);
            let mut pack = VariantPack::new().input(X, &xb);
            for i in [W1, G1, B1, W2, G2, B2] {
                pack = pack.input(PARAM + i as i64, &params[i]);
            }
            for (i, r) in running.iter().enumerate() {
                pack = pack.input(RUN + i as i64, r);
            }
            self.get(Plan::EvalFeatures)
                .execute(handle, pack.output(P2, &mut p2), None)?;
            let mut logits = zeros(bu * K as usize);
            let pack = VariantPack::new()
                .input(H, &p2)
                .input(PARAM + WFC as i64, &params[WFC])
                .input(PARAM + BFC as i64, &params[BFC])
                .output(LOGITS, &mut logits);
            self.get(Plan::EvalHead).execute(handle, pack, None)?;
            correct += argmax_hits(&logits.to_vec()?, ls);
            counted += bu;
        }
        Ok((correct, counted))
    }
}
