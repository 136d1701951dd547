//! The one-block transformer of the `train` example as hipdnn graphs: forward (keeping what
//! backward reads), softmax cross-entropy loss, backward and the optimizer update are plans;
//! the host builds one-hot inputs, moves buffers between plans and counts correct argmaxes.
//! It never computes a gradient, a statistic or an update itself.
//!
//! Model (f32, batch `B`, [`SEQ`] = 16 tokens from a vocabulary of [`VOCAB`] = 16, width
//! [`D`] = 32, [`NH`] = 2 heads of [`DH`] = 16, MLP [`F`] = 128; every activation
//! `(B, 1, T, ·)`, every parameter 4-D):
//! ```text
//! x0 = onehot(tokens)·E + P                                    (B,1,T,V)·(1,1,V,D) + (1,1,T,D)
//! h  = layernorm(x0)                                           over D, eps 1e-5
//! q  = h·Wq + bq  (per head: (B,1,T,D)·(1,NH,D,DH) → (B,NH,T,DH)); k, v alike
//! o  = sdpa(q, k, v)                                           scale 1/√DH, no mask; stats kept
//! x1 = x0 + Σ_heads o·Wo + bo                                  (B,NH,T,DH)·(1,NH,DH,D), summed
//! x2 = x1 + gelu(layernorm(x1)·W1 + b1)·W2 + b2                erf GELU
//! logits = (pool·x2)·Wc + bc                                   pool = (1,1,1,T) of 1/T: the mean
//! loss = mean over the batch of −log softmax(logits)[label]
//! ```
//! Per-head projection weights `(1, NH, D, DH)` (the columns of a `D × D` matrix, head by
//! head) let the head split be a broadcast matmul, so no graph needs a reshape; the mean over
//! tokens is a product with the pooling weights (their transpose spreads the gradient back).
//! Weight gradients are `Σ_batch aᵀ·dy`: a matmul of a transposed view of the saved activation
//! `a` by `dy`, then a reduction over the batch dim.
//!
//! Plans ([`PLAN_FILES`] with the optimizer's file): `forward` (writes logits and every tensor
//! backward reads; also the evaluation forward, there is no train/eval difference), `loss`
//! (loss and `dlogits = (softmax − onehot)/B`), `backward` (every gradient: matmul
//! transposed views, GELU_BWD, layernorm backward with the saved statistics, SDPA backward
//! with the saved logsumexp) and the update (`optim.rs`).

#![allow(dead_code)] // the test and the example use different parts

use crate::data::{self, Rng, SEQ, VOCAB};
use crate::optim::{self, GRAD, Opt, OptState, PARAM};
use hipdnn::{
    Buffer, DataType, Graph, Handle, LayernormAttributes, LayernormBackwardAttributes,
    MatmulAttributes, NormFwdPhase, PointwiseAttributes, PointwiseMode as PM, ReductionAttributes,
    ReductionMode, SdpaAttributes, SdpaBackwardAttributes, TensorAttributes as T, TensorId,
    TensorValue, VariantPack,
};

const TT: i64 = SEQ as i64;
const VV: i64 = VOCAB as i64;
/// Model width, heads, head width, MLP width, classes (the label is a token).
pub const D: i64 = 32;
pub const NH: i64 = 2;
pub const DH: i64 = D / NH;
pub const F: i64 = 4 * D;
pub const C: i64 = VV;
/// Layernorm epsilon (PyTorch's default).
pub const LN_EPS: f32 = 1e-5;
/// The attention scale 1/√DH.
pub const SCALE: f32 = 0.25;

/// File names of the saved plans, in [`Plan`] order; the update plan's name is
/// [`Opt::plan_file`].
pub const PLAN_FILES: [&str; 3] = ["forward.hdgp", "loss.hdgp", "backward.hdgp"];

/// The plans, indices into [`Plans::graphs`].
#[derive(Debug, Clone, Copy)]
#[repr(usize)]
pub enum Plan {
    Forward,
    Loss,
    Backward,
    Update,
}

/// The parameters, in UID order (`optim::PARAM + index`): name and dims.
pub const PARAMS: [(&str, [i64; 4]); 20] = [
    ("tok_emb", [1, 1, VV, D]),
    ("pos_emb", [1, 1, TT, D]),
    ("ln1.weight", [1, 1, 1, D]),
    ("ln1.bias", [1, 1, 1, D]),
    ("attn.q.weight", [1, NH, D, DH]),
    ("attn.q.bias", [1, NH, 1, DH]),
    ("attn.k.weight", [1, NH, D, DH]),
    ("attn.k.bias", [1, NH, 1, DH]),
    ("attn.v.weight", [1, NH, D, DH]),
    ("attn.v.bias", [1, NH, 1, DH]),
    ("attn.o.weight", [1, NH, DH, D]),
    ("attn.o.bias", [1, 1, 1, D]),
    ("ln2.weight", [1, 1, 1, D]),
    ("ln2.bias", [1, 1, 1, D]),
    ("mlp.fc1.weight", [1, 1, D, F]),
    ("mlp.fc1.bias", [1, 1, 1, F]),
    ("mlp.fc2.weight", [1, 1, F, D]),
    ("mlp.fc2.bias", [1, 1, 1, D]),
    ("head.weight", [1, 1, D, C]),
    ("head.bias", [1, 1, 1, C]),
];
const EMB: usize = 0;
const POS: usize = 1;
const LN1G: usize = 2;
const LN1B: usize = 3;
const WQ: usize = 4;
const BQ: usize = 5;
const WK: usize = 6;
const BK: usize = 7;
const WV: usize = 8;
const BV: usize = 9;
const WO: usize = 10;
const BO: usize = 11;
const LN2G: usize = 12;
const LN2B: usize = 13;
const W1: usize = 14;
const B1: usize = 15;
const W2: usize = 16;
const B2: usize = 17;
const WC: usize = 18;
const BC: usize = 19;

// Tensor UIDs, one per role, shared by every graph that binds the role (`*_T`: a transposed
// view of the same buffer). Transposed parameter views: `WT + index`.
const TOKENS: i64 = 1;
const TOKENS_T: i64 = 2;
const POOL_W: i64 = 3;
const POOL_WT: i64 = 4;
const X0: i64 = 5;
const LN1: i64 = 6;
const LN1_T: i64 = 7;
const MEAN1: i64 = 8;
const INV1: i64 = 9;
const Q: i64 = 10;
const K: i64 = 11;
const V: i64 = 12;
const O: i64 = 13;
const O_T: i64 = 14;
const STATS: i64 = 15;
const X1: i64 = 16;
const LN2: i64 = 17;
const LN2_T: i64 = 18;
const MEAN2: i64 = 19;
const INV2: i64 = 20;
const U: i64 = 21;
const GACT: i64 = 22;
const GACT_T: i64 = 23;
const POOLED: i64 = 24;
const POOLED_T: i64 = 25;
const LOGITS: i64 = 26;
const ONEHOT: i64 = 27;
const LOSS: i64 = 28;
const DLOGITS: i64 = 29;
const EPS: i64 = 30;
const NEG_INV_B: i64 = 31;
const INV_B: i64 = 32;
const WT: i64 = 600;

/// What the forward writes and backward reads: UID and elements per sequence.
const SAVED: [(i64, i64); 17] = [
    (X0, TT * D),
    (LN1, TT * D),
    (MEAN1, TT),
    (INV1, TT),
    (Q, TT * D),
    (K, TT * D),
    (V, TT * D),
    (O, TT * D),
    (STATS, NH * TT),
    (X1, TT * D),
    (LN2, TT * D),
    (MEAN2, TT),
    (INV2, TT),
    (U, TT * F),
    (GACT, TT * F),
    (POOLED, D),
    (LOGITS, C),
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

fn strided(g: &mut Graph, name: &str, uid: i64, dims: &[i64], strides: &[i64]) -> TensorId {
    g.tensor(
        T::new(name)
            .uid(uid)
            .data_type(DataType::Float)
            .dims(dims.to_vec())
            .strides(strides.to_vec()),
    )
}

fn t(g: &mut Graph, name: &str, uid: i64, dims: &[i64]) -> TensorId {
    strided(g, name, uid, dims, &packed(dims))
}

/// The transposed view (last two dims swapped) of a packed `dims` buffer.
fn tview(g: &mut Graph, name: &str, uid: i64, dims: [i64; 4]) -> TensorId {
    let s = packed(&dims);
    strided(
        g,
        name,
        uid,
        &[dims[0], dims[1], dims[3], dims[2]],
        &[s[0], s[1], 1, dims[3]],
    )
}

fn scalar(g: &mut Graph, name: &str, uid: i64, v: f32) -> TensorId {
    g.tensor(T::scalar(TensorValue::Float32(v)).name(name).uid(uid))
}

fn param(g: &mut Graph, i: usize) -> TensorId {
    t(g, PARAMS[i].0, PARAM + i as i64, &PARAMS[i].1)
}

fn param_t(g: &mut Graph, i: usize) -> TensorId {
    tview(g, &format!("{}_t", PARAMS[i].0), WT + i as i64, PARAMS[i].1)
}

/// Packed row-major strides on `t` (stated, not left to the SDK's inference, since the host
/// and the next plan read these buffers row-major).
fn pack(g: &mut Graph, t: TensorId) -> TensorId {
    let strides = packed(&g.tensor_attributes(t).dims);
    g.set_strides(t, strides);
    t
}

/// Marks `t` as an output with `uid` and `name`, packed row-major.
fn out(g: &mut Graph, t: TensorId, uid: i64, name: &str) {
    pack(g, t);
    g.set_output(t, true)
        .set_uid(t, uid)
        .set_tensor_name(t, name);
}

fn mm(g: &mut Graph, a: TensorId, b: TensorId) -> TensorId {
    let c = g.matmul(a, b, MatmulAttributes::new());
    pack(g, c)
}

fn op(g: &mut Graph, a: TensorId, b: TensorId, mode: PM) -> TensorId {
    let c = g.pointwise(a, b, PointwiseAttributes::with_mode(mode));
    pack(g, c)
}

fn reduce(g: &mut Graph, x: TensorId, dims: [i64; 4], mode: ReductionMode) -> TensorId {
    let y = g.reduction(x, dims, ReductionAttributes::new().mode(mode));
    pack(g, y)
}

fn sum_to(g: &mut Graph, x: TensorId, dims: [i64; 4]) -> TensorId {
    reduce(g, x, dims, ReductionMode::Add)
}

/// `forward`: tokens → logits, writing every [`SAVED`] tensor.
fn forward_graph(b: i64) -> Graph {
    let mut graph_ = graph("transformer_forward");
    let g = &mut graph_;
    let x = t(g, "tokens_onehot", TOKENS, &[b, 1, TT, VV]);
    let pool = t(g, "pool_weights", POOL_W, &[1, 1, 1, TT]);
    let eps = scalar(g, "epsilon", EPS, LN_EPS);
    let p: Vec<TensorId> = (0..PARAMS.len()).map(|i| param(g, i)).collect();
    let e = mm(g, x, p[EMB]);
    let x0 = op(g, e, p[POS], PM::Add);
    out(g, x0, X0, "x0");
    let ln = |g: &mut Graph,
              x: TensorId,
              gamma: TensorId,
              beta: TensorId,
              [y_uid, m_uid, i_uid]: [i64; 3]| {
        let attrs = LayernormAttributes::new()
            .epsilon(eps)
            .forward_phase(NormFwdPhase::Training);
        let (y, m, iv) = g.layernorm(x, gamma, beta, attrs);
        out(g, y, y_uid, "layernorm");
        out(g, m.expect("training"), m_uid, "mean");
        out(g, iv.expect("training"), i_uid, "inv_variance");
        y
    };
    let h = ln(g, x0, p[LN1G], p[LN1B], [LN1, MEAN1, INV1]);
    let mut qkv = [x0; 3];
    for (j, (w, bias, uid, name)) in [(WQ, BQ, Q, "q"), (WK, BK, K, "k"), (WV, BV, V, "v")]
        .into_iter()
        .enumerate()
    {
        let y = mm(g, h, p[w]);
        qkv[j] = op(g, y, p[bias], PM::Add);
        out(g, qkv[j], uid, name);
    }
    let (o, stats) = g.sdpa(
        qkv[0],
        qkv[1],
        qkv[2],
        SdpaAttributes::new()
            .attn_scale_value(SCALE)
            .generate_stats(true),
    );
    out(g, o, O, "o");
    out(g, stats.expect("stats"), STATS, "stats");
    let heads = mm(g, o, p[WO]);
    let attn = sum_to(g, heads, [b, 1, TT, D]);
    let r = op(g, x0, attn, PM::Add);
    let x1 = op(g, r, p[BO], PM::Add);
    out(g, x1, X1, "x1");
    let h2 = ln(g, x1, p[LN2G], p[LN2B], [LN2, MEAN2, INV2]);
    let y = mm(g, h2, p[W1]);
    let u = op(g, y, p[B1], PM::Add);
    out(g, u, U, "fc1");
    let gact = g.pointwise_unary(u, PointwiseAttributes::with_mode(PM::GeluFwd));
    out(g, gact, GACT, "gelu");
    let y = mm(g, gact, p[W2]);
    let y = op(g, y, p[B2], PM::Add);
    let x2 = op(g, x1, y, PM::Add);
    let pooled = mm(g, pool, x2);
    out(g, pooled, POOLED, "pooled");
    let z = mm(g, pooled, p[WC]);
    let logits = op(g, z, p[BC], PM::Add);
    out(g, logits, LOGITS, "logits");
    graph_
}

/// `loss`: loss = −Σ onehot·log_softmax(logits) / B; dlogits = (softmax − onehot) / B.
fn loss_graph(b: i64) -> Graph {
    let mut graph_ = graph("transformer_loss");
    let g = &mut graph_;
    let logits = t(g, "logits", LOGITS, &[b, 1, 1, C]);
    let onehot = t(g, "onehot", ONEHOT, &[b, 1, 1, C]);
    let neg_inv_b = scalar(g, "neg_inv_batch", NEG_INV_B, -1.0 / b as f32);
    let inv_b = scalar(g, "inv_batch", INV_B, 1.0 / b as f32);
    let rows = [b, 1, 1, 1];
    let m = reduce(g, logits, rows, ReductionMode::MaxOp);
    let d = op(g, logits, m, PM::Sub);
    let e = g.pointwise_unary(d, PointwiseAttributes::with_mode(PM::Exp));
    let s = sum_to(g, e, rows);
    let ls = g.pointwise_unary(s, PointwiseAttributes::with_mode(PM::Log));
    let logp = op(g, d, ls, PM::Sub);
    let p = op(g, e, s, PM::Div);
    let picked = op(g, onehot, logp, PM::Mul);
    let total = sum_to(g, picked, [1, 1, 1, 1]);
    let loss = op(g, total, neg_inv_b, PM::Mul);
    out(g, loss, LOSS, "loss");
    let diff = op(g, p, onehot, PM::Sub);
    let dlogits = op(g, diff, inv_b, PM::Mul);
    out(g, dlogits, DLOGITS, "dlogits");
    graph_
}

/// `backward`: dlogits → every parameter's gradient (`optim::GRAD + index`).
fn backward_graph(b: i64) -> Graph {
    let mut graph_ = graph("transformer_backward");
    let g = &mut graph_;
    let grad = |g: &mut Graph, t: TensorId, i: usize| {
        out(g, t, GRAD + i as i64, &format!("d_{}", PARAMS[i].0));
    };
    // Σ_batch aᵀ·dy into a parameter's dims.
    let wgrad = |g: &mut Graph, a_t: TensorId, dy: TensorId, i: usize| {
        let y = mm(g, a_t, dy);
        let s = sum_to(g, y, PARAMS[i].1);
        grad(g, s, i);
    };
    let bgrad = |g: &mut Graph, dy: TensorId, i: usize| {
        let s = sum_to(g, dy, PARAMS[i].1);
        grad(g, s, i);
    };
    let act = [b, 1, TT, D];
    // head and mean pool
    let dl = t(g, "dlogits", DLOGITS, &[b, 1, 1, C]);
    let pooled_t = tview(g, "pooled_t", POOLED_T, [b, 1, 1, D]);
    wgrad(g, pooled_t, dl, WC);
    bgrad(g, dl, BC);
    let wc_t = param_t(g, WC);
    let dpooled = mm(g, dl, wc_t);
    let pool_t = t(g, "pool_weights_t", POOL_WT, &[1, 1, TT, 1]);
    let dx2 = mm(g, pool_t, dpooled);
    // MLP
    let gact_t = tview(g, "gelu_t", GACT_T, [b, 1, TT, F]);
    wgrad(g, gact_t, dx2, W2);
    bgrad(g, dx2, B2);
    let w2_t = param_t(g, W2);
    let dgact = mm(g, dx2, w2_t);
    let u = t(g, "fc1", U, &[b, 1, TT, F]);
    let du = op(g, dgact, u, PM::GeluBwd);
    let ln2_t = tview(g, "layernorm2_t", LN2_T, act);
    wgrad(g, ln2_t, du, W1);
    bgrad(g, du, B1);
    let w1_t = param_t(g, W1);
    let dln2 = mm(g, du, w1_t);
    let ln_bwd = |g: &mut Graph, dy: TensorId, [x_uid, m_uid, i_uid]: [i64; 3], gamma: usize| {
        let x = t(g, "x", x_uid, &act);
        let m = t(g, "mean", m_uid, &[b, 1, TT, 1]);
        let iv = t(g, "inv_variance", i_uid, &[b, 1, TT, 1]);
        let scale = param(g, gamma);
        let [dx, dscale, dbias] = g.layernorm_backward(
            dy,
            x,
            scale,
            LayernormBackwardAttributes::new().mean(m).inv_variance(iv),
        );
        grad(g, dscale, gamma);
        grad(g, dbias, gamma + 1);
        pack(g, dx)
    };
    let dx1_ln = ln_bwd(g, dln2, [X1, MEAN2, INV2], LN2G);
    let dx1 = op(g, dx2, dx1_ln, PM::Add);
    // attention
    bgrad(g, dx1, BO);
    let o_t = tview(g, "o_t", O_T, [b, NH, TT, DH]);
    wgrad(g, o_t, dx1, WO);
    let wo_t = param_t(g, WO);
    let d_o = mm(g, dx1, wo_t);
    let heads = [b, NH, TT, DH];
    let [q, k, v, o] = [(Q, "q"), (K, "k"), (V, "v"), (O, "o")].map(|(u, n)| t(g, n, u, &heads));
    let stats = t(g, "stats", STATS, &[b, NH, TT, 1]);
    let [dq, dk, dv] = g.sdpa_backward(
        q,
        k,
        v,
        o,
        d_o,
        stats,
        SdpaBackwardAttributes::new().attn_scale_value(SCALE),
    );
    let ln1_t = tview(g, "layernorm1_t", LN1_T, act);
    let mut dln1 = None;
    for (dp, w, bias) in [(dq, WQ, BQ), (dk, WK, BK), (dv, WV, BV)] {
        let dp = pack(g, dp);
        wgrad(g, ln1_t, dp, w);
        bgrad(g, dp, bias);
        let w_t = param_t(g, w);
        let per_head = mm(g, dp, w_t);
        let dh = sum_to(g, per_head, act);
        dln1 = Some(match dln1 {
            None => dh,
            Some(acc) => op(g, acc, dh, PM::Add),
        });
    }
    let dx0_ln = ln_bwd(g, dln1.expect("three"), [X0, MEAN1, INV1], LN1G);
    let dx0 = op(g, dx1, dx0_ln, PM::Add);
    // embeddings
    bgrad(g, dx0, POS);
    let tok_t = tview(g, "tokens_onehot_t", TOKENS_T, [b, 1, TT, VV]);
    wgrad(g, tok_t, dx0, EMB);
    graph_
}

/// Hyperparameters baked into the plans.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hyper {
    /// Batch size (training and evaluation).
    pub batch: usize,
    /// The optimizer.
    pub opt: Opt,
}

/// The four built (or loaded) plans.
pub struct Plans {
    pub graphs: Vec<Graph>,
}

impl Plans {
    /// The graphs of every plan for `hyper`, unbuilt, in plan order.
    pub fn graphs(hyper: Hyper) -> Vec<Graph> {
        let b = hyper.batch as i64;
        vec![
            forward_graph(b),
            loss_graph(b),
            backward_graph(b),
            optim::graph(hyper.opt, &PARAMS),
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

    /// The batch size the plans were built for (dims of the tokens).
    pub fn batch(&self) -> usize {
        let g = self.get(Plan::Forward);
        g.tensor_by_uid(TOKENS)
            .map(|t| g.tensor_attributes(t).dims[0] as usize)
            .unwrap_or(0)
    }
}

/// File names of the saved plans for `opt`, in [`Plan`] order.
pub fn plan_files(opt: Opt) -> [&'static str; 4] {
    [PLAN_FILES[0], PLAN_FILES[1], PLAN_FILES[2], opt.plan_file()]
}

/// Everything that changes during training: parameters, the optimizer's state and the
/// number of steps taken.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    pub params: Vec<Vec<f32>>,
    pub opt: OptState,
    pub step: usize,
}

impl State {
    /// Drawn from [`Rng`] seeded with `seed`, parameter by parameter in [`PARAMS`] order:
    /// embeddings uniform in ±1, layernorm weight 1 and bias 0, every linear weight and bias
    /// uniform in ±1/√fan_in (PyTorch's `Linear` scheme; fan_in D, F for `mlp.fc2`).
    pub fn init(seed: u64, opt: Opt) -> State {
        let mut rng = Rng(seed);
        let params: Vec<Vec<f32>> = PARAMS
            .iter()
            .enumerate()
            .map(|(i, (_, d))| {
                let n = volume(d);
                let bound = match i {
                    EMB | POS => 1.0,
                    LN1G | LN2G => return vec![1.0; n],
                    LN1B | LN2B => return vec![0.0; n],
                    W2 | B2 => 1.0 / (F as f32).sqrt(),
                    _ => 1.0 / (D as f32).sqrt(),
                };
                (0..n).map(|_| (2.0 * rng.unit() - 1.0) * bound).collect()
            })
            .collect();
        let sizes: Vec<usize> = params.iter().map(Vec::len).collect();
        State {
            params,
            opt: OptState::init(opt, &sizes),
            step: 0,
        }
    }

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
        v
    }

    /// The state as safetensors (`data::write_state`): every parameter, the optimizer's
    /// slots (`exp_avg.<name>`, `exp_avg_sq.<name>`, `beta1_power`, `beta2_power` for AdamW;
    /// `v.<name>` for SGD) and `step`.
    pub fn to_bytes(&self, opt: Opt) -> Vec<u8> {
        let values = self
            .params
            .iter()
            .chain(self.opt.slots.iter().flatten())
            .map(Vec::as_slice)
            .chain(self.opt.scalars.iter().map(std::slice::from_ref));
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
        let scalars: Vec<f32> = t
            .split_off(t.len() - opt.scalar_names().len())
            .into_iter()
            .map(|v| v[0])
            .collect();
        let slots = t
            .split_off(np)
            .chunks(np)
            .map(<[Vec<f32>]>::to_vec)
            .collect();
        Ok(State {
            params: t,
            opt: OptState { slots, scalars },
            step,
        })
    }
}

/// A batch: `B·SEQ` tokens and `B` labels.
pub struct Batch<'a> {
    pub tokens: &'a [u8],
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
        .chunks_exact(C as usize)
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

fn onehot(ids: &[u8], n: usize) -> Buffer<f32> {
    let mut v = vec![0f32; ids.len() * n];
    for (r, &i) in ids.iter().enumerate() {
        v[r * n + i as usize] = 1.0;
    }
    Buffer::from_slice(&v)
}

/// Executes `plan` with every binding whose UID the plan has (the others are left out, so
/// one list serves every plan).
fn run(
    plan: &Graph,
    handle: &Handle,
    ins: &[(i64, &Buffer<f32>)],
    outs: Vec<(i64, &mut Buffer<f32>)>,
) -> hipdnn::Result<()> {
    let mut pack = VariantPack::new();
    for &(uid, b) in ins {
        if plan.tensor_by_uid(uid).is_some() {
            pack = pack.input(uid, b);
        }
    }
    for (uid, b) in outs {
        if plan.tensor_by_uid(uid).is_some() {
            pack = pack.output(uid, b);
        }
    }
    plan.execute(handle, pack, None)
}

impl Plans {
    /// The forward on `tokens` (`B·SEQ`): the [`SAVED`] buffers, logits last.
    fn forward(
        &self,
        handle: &Handle,
        params: &[Buffer<f32>],
        tokens: &Buffer<f32>,
        pool: &Buffer<f32>,
    ) -> hipdnn::Result<Vec<Buffer<f32>>> {
        let b = self.batch();
        let mut saved: Vec<Buffer<f32>> = SAVED
            .iter()
            .map(|&(_, n)| Buffer::zeros(b * n as usize))
            .collect();
        let mut ins = vec![(TOKENS, tokens), (POOL_W, pool)];
        ins.extend(
            params
                .iter()
                .enumerate()
                .map(|(i, p)| (PARAM + i as i64, p)),
        );
        let outs = SAVED.iter().map(|s| s.0).zip(saved.iter_mut()).collect();
        run(self.get(Plan::Forward), handle, &ins, outs)?;
        Ok(saved)
    }

    /// One training step on `batch`: forward → loss → backward → update. `state` is replaced
    /// by the updated parameters and optimizer state.
    ///
    /// # Errors
    /// Any execute error of a plan.
    pub fn step(
        &self,
        handle: &Handle,
        state: &mut State,
        batch: &Batch<'_>,
    ) -> hipdnn::Result<StepReport> {
        let b = self.batch();
        let params: Vec<Buffer<f32>> = state.params.iter().map(|p| Buffer::from_slice(p)).collect();
        let tokens = onehot(batch.tokens, VOCAB);
        let pool = Buffer::from_slice(&[1.0 / TT as f32; SEQ]);
        let saved = self.forward(handle, &params, &tokens, &pool)?;
        let logits = &saved[SAVED.len() - 1];
        let labels = onehot(batch.labels, C as usize);
        let (mut loss, mut dlogits) = (Buffer::zeros(1), Buffer::zeros(b * C as usize));
        run(
            self.get(Plan::Loss),
            handle,
            &[(LOGITS, logits), (ONEHOT, &labels)],
            vec![(LOSS, &mut loss), (DLOGITS, &mut dlogits)],
        )?;
        let mut ins: Vec<(i64, &Buffer<f32>)> = SAVED.iter().map(|s| s.0).zip(&saved).collect();
        let find = |uid: i64| &saved[SAVED.iter().position(|s| s.0 == uid).expect("saved")];
        for (view, of) in [
            (LN1_T, LN1),
            (LN2_T, LN2),
            (O_T, O),
            (GACT_T, GACT),
            (POOLED_T, POOLED),
        ] {
            ins.push((view, find(of)));
        }
        ins.extend([(TOKENS_T, &tokens), (POOL_WT, &pool), (DLOGITS, &dlogits)]);
        for (i, p) in params.iter().enumerate() {
            ins.push((PARAM + i as i64, p));
            ins.push((WT + i as i64, p));
        }
        let mut grads: Vec<Buffer<f32>> = PARAMS
            .iter()
            .map(|(_, d)| Buffer::zeros(volume(d)))
            .collect();
        let outs = grads
            .iter_mut()
            .enumerate()
            .map(|(i, g)| (GRAD + i as i64, g))
            .collect();
        run(self.get(Plan::Backward), handle, &ins, outs)?;
        let correct = argmax_hits(&logits.to_vec()?, batch.labels);
        drop(ins);
        optim::update(
            self.get(Plan::Update),
            handle,
            &mut state.params,
            &grads,
            &mut state.opt,
        )?;
        state.step += 1;
        Ok(StepReport {
            loss: loss.to_vec()?[0],
            correct,
        })
    }

    /// Correct argmaxes of the forward plan over `tokens` / `labels`, in whole batches (a
    /// last partial batch is left out); returns (correct, counted).
    ///
    /// # Errors
    /// Any execute error of a plan.
    pub fn evaluate(
        &self,
        handle: &Handle,
        state: &State,
        tokens: &[u8],
        labels: &[u8],
    ) -> hipdnn::Result<(usize, usize)> {
        let bu = self.batch();
        let params: Vec<Buffer<f32>> = state.params.iter().map(|p| Buffer::from_slice(p)).collect();
        let pool = Buffer::from_slice(&[1.0 / TT as f32; SEQ]);
        let (mut correct, mut counted) = (0, 0);
        for (ts, ls) in tokens.chunks_exact(bu * SEQ).zip(labels.chunks_exact(bu)) {
            let saved = self.forward(handle, &params, &onehot(ts, VOCAB), &pool)?;
            correct += argmax_hits(&saved[SAVED.len() - 1].to_vec()?, ls);
            counted += bu;
        }
        Ok((correct, counted))
    }
}
