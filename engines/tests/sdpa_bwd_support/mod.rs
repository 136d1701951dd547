//! SDPA backward graphs shared by the CPU reference test (`reference_sdpa_backward.rs`), the
//! sdpa_bwd Triton family's device-free test (`triton_sdpa_bwd.rs`) and its GPU test
//! (`gpu_sdpa_bwd.rs`): the case (dims, type, scale, band, mask, layout), its tensors and
//! graph, random inputs with o and stats from a float64 forward, and float64 gradients.
//! UIDs: q 1, k 2, v 3, o 4, do 5, stats 6, dq 7, dk 8, dv 9, mask 10, scale 11, dbias 12.
#![allow(dead_code)]

use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, random_values};
use hipdnn_schema::graph::{DataType as DT, DiagonalAlignment, SdpaBackwardAttributesArgs};
use hipdnn_schema::tensor_value::TensorValue;

pub const Q: i64 = 1;
pub const K: i64 = 2;
pub const V: i64 = 3;
pub const O: i64 = 4;
pub const DO: i64 = 5;
pub const ST: i64 = 6;
pub const DQ: i64 = 7;
pub const DK: i64 = 8;
pub const DV: i64 = 9;
pub const MASK: i64 = 10;
pub const SCALE: i64 = 11;
pub const DBIAS: i64 = 12;

#[derive(Debug, Clone, Copy)]
pub enum Scale {
    /// `attn_scale_value`.
    Value(f32),
    /// A constant scale tensor.
    Tensor(f32),
    /// Neither: 1.
    One,
}

impl Scale {
    pub fn value(self) -> f64 {
        match self {
            Scale::Value(s) | Scale::Tensor(s) => f64::from(s),
            Scale::One => 1.0,
        }
    }
}

#[derive(Debug, Clone)]
pub enum Mask {
    None,
    /// Additive FLOAT mask with these dims.
    Add(Vec<usize>),
    /// BOOLEAN mask with these dims (zero masks).
    Bool(Vec<usize>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Layout {
    Packed,
    /// q, o, do and dq stored (B, S, H, D); k and dk channels-last (B, S, D, H).
    Bshd,
    /// k, v, dk and dv rows padded (row stride D + 3); v channels-last otherwise packed.
    Padded,
}

#[derive(Debug, Clone)]
pub struct Case {
    /// (B, H, H_kv, S_q, S_kv, D, D_v).
    pub dims: (usize, usize, usize, usize, usize, usize, usize),
    pub dt: DT,
    pub scale: Scale,
    pub causal: bool,
    pub causal_br: bool,
    pub align_br: bool,
    pub left: Option<i64>,
    pub right: Option<i64>,
    pub mask: Mask,
    pub dbias: bool,
    pub layout: Layout,
}

impl Case {
    pub fn base(dims: (usize, usize, usize, usize, usize, usize, usize)) -> Case {
        Case {
            dims,
            dt: DT::FLOAT,
            scale: Scale::One,
            causal: false,
            causal_br: false,
            align_br: false,
            left: None,
            right: None,
            mask: Mask::None,
            dbias: false,
            layout: Layout::Packed,
        }
    }
    pub fn qd(&self) -> [usize; 4] {
        let (b, h, _, sq, _, d, _) = self.dims;
        [b, h, sq, d]
    }
    pub fn kd(&self) -> [usize; 4] {
        let (b, _, hk, _, skv, d, _) = self.dims;
        [b, hk, skv, d]
    }
    pub fn vd(&self) -> [usize; 4] {
        let (b, _, hk, _, skv, _, dv) = self.dims;
        [b, hk, skv, dv]
    }
    pub fn od(&self) -> [usize; 4] {
        let (b, h, _, sq, _, _, dv) = self.dims;
        [b, h, sq, dv]
    }
    pub fn mask_dims(&self) -> Option<&[usize]> {
        match &self.mask {
            Mask::None => None,
            Mask::Add(d) | Mask::Bool(d) => Some(d),
        }
    }
    /// Whether key j is kept for query row i by the band (written from the documented rule:
    /// keep `j ≤ i + shift + right` and `j > i + shift − left`; causal caps right at 0 and sets
    /// the alignment).
    pub fn kept(&self, i: usize, j: usize) -> bool {
        let (_, _, _, sq, skv, _, _) = self.dims;
        let (mut br, mut right) = (self.align_br, self.right);
        if self.causal || self.causal_br {
            br = self.causal_br;
            right = Some(right.map_or(0, |r| r.min(0)));
        }
        let shift = if br { skv as i64 - sq as i64 } else { 0 };
        let (i, j) = (i as i64 + shift, j as i64);
        right.is_none_or(|r| j <= i + r) && self.left.is_none_or(|l| j > i - l)
    }
}

pub fn i64s(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&x| x as i64).collect()
}

/// Strides of dims `d` stored in memory order `order` (outermost first).
pub fn strides_in_order(d: &[usize], order: &[usize], pad_last: usize) -> Vec<i64> {
    let mut s = vec![0i64; d.len()];
    let mut acc = 1i64;
    for (n, &ax) in order.iter().rev().enumerate() {
        s[ax] = acc;
        acc *= d[ax] as i64 + if n == 0 { pad_last as i64 } else { 0 };
    }
    s
}

/// The row-major flat index into a tensor of `mdims` (right-aligned, broadcast) of score
/// element (b, h, i, j).
pub fn bcast_index(mdims: &[usize], idx: [usize; 4]) -> usize {
    let r = mdims.len();
    let mut flat = 0;
    for (x, &m) in mdims.iter().enumerate() {
        let i = idx[4 - r + x];
        flat = flat * m + if m == 1 { 0 } else { i };
    }
    flat
}

/// Inputs of one case, dense row-major and already rounded to their tensors' types.
pub struct Inputs {
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub o: Vec<f32>,
    pub d_o: Vec<f32>,
    pub stats: Vec<f32>,
    pub mask: Option<Vec<f32>>,
}

/// Float64 attention forward of a case: (o, logsumexp), −∞ stats and zero o for a row with
/// every key masked.
pub fn forward64(
    c: &Case,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    mask: Option<&[f32]>,
) -> (Vec<f64>, Vec<f64>) {
    let (b, h, hk, sq, skv, _, dv) = c.dims;
    let mut o = vec![0f64; b * h * sq * dv];
    let mut lse = vec![f64::NEG_INFINITY; b * h * sq];
    for bi in 0..b {
        for hi in 0..h {
            let kh = bi * hk + hi / (h / hk);
            for i in 0..sq {
                let r = (bi * h + hi) * sq + i;
                let s = scores64(c, q, k, mask, bi, hi, i);
                let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                if mx == f64::NEG_INFINITY {
                    continue;
                }
                let l = mx + s.iter().map(|x| (x - mx).exp()).sum::<f64>().ln();
                lse[r] = l;
                for e in 0..dv {
                    o[r * dv + e] = (0..skv)
                        .map(|j| (s[j] - l).exp() * f64::from(v[(kh * skv + j) * dv + e]))
                        .sum();
                }
            }
        }
    }
    (o, lse)
}

/// The scaled, masked scores of query row (bi, hi, i) in f64 (−∞ where masked).
pub fn scores64(
    c: &Case,
    q: &[f32],
    k: &[f32],
    mask: Option<&[f32]>,
    bi: usize,
    hi: usize,
    i: usize,
) -> Vec<f64> {
    let (_, h, hk, sq, skv, d, _) = c.dims;
    let kh = hi / (h / hk);
    (0..skv)
        .map(|j| {
            if !c.kept(i, j) {
                return f64::NEG_INFINITY;
            }
            let dot: f64 = (0..d)
                .map(|e| {
                    f64::from(q[((bi * h + hi) * sq + i) * d + e])
                        * f64::from(k[((bi * hk + kh) * skv + j) * d + e])
                })
                .sum();
            let s = dot * c.scale.value();
            match (&c.mask, mask) {
                (Mask::Add(md), Some(m)) => s + f64::from(m[bcast_index(md, [bi, hi, i, j])]),
                (Mask::Bool(md), Some(m)) if m[bcast_index(md, [bi, hi, i, j])] == 0.0 => {
                    f64::NEG_INFINITY
                }
                _ => s,
            }
        })
        .collect()
}

/// P of every row: `exp(score − stats)`, zero on a row whose stats is −∞.
pub fn probs64(c: &Case, q: &[f32], k: &[f32], mask: Option<&[f32]>, stats: &[f32]) -> Vec<f64> {
    let (b, h, _, sq, skv, _, _) = c.dims;
    let mut p = Vec::with_capacity(b * h * sq * skv);
    for bi in 0..b {
        for hi in 0..h {
            for i in 0..sq {
                let s = scores64(c, q, k, mask, bi, hi, i);
                let lse = f64::from(stats[(bi * h + hi) * sq + i]);
                p.extend(s.iter().map(|&x| {
                    if lse == f64::NEG_INFINITY {
                        0.0
                    } else {
                        (x - lse).exp()
                    }
                }));
            }
        }
    }
    p
}

/// Float64 gradients (dq, dk, dv, dbias in the mask's dims) from the same inputs the engine
/// reads: `P = exp(score − stats)`, `dV = Pᵀ·dO`, `dP = dO·Vᵀ`, `D = rowsum(dO ∘ O)`,
/// `dS = P ∘ (dP − D)`, `dQ = scale·dS·K`, `dK = scale·dSᵀ·Q` (K/V heads summing their
/// group), dbias = dS summed over the mask's broadcast axes.
pub fn backward64(c: &Case, x: &Inputs) -> [Vec<f64>; 4] {
    let (b, h, hk, sq, skv, d, dv) = c.dims;
    let sc = c.scale.value();
    let p = probs64(c, &x.q, &x.k, x.mask.as_deref(), &x.stats);
    let mut dq = vec![0f64; b * h * sq * d];
    let mut dk = vec![0f64; b * hk * skv * d];
    let mut dvv = vec![0f64; b * hk * skv * dv];
    let mut dbias = vec![0f64; c.mask_dims().map_or(0, |m| m.iter().product())];
    let f = |a: f32| f64::from(a);
    for bi in 0..b {
        for hi in 0..h {
            let kh = bi * hk + hi / (h / hk);
            for i in 0..sq {
                let r = (bi * h + hi) * sq + i;
                let dsum: f64 = (0..dv)
                    .map(|e| f(x.d_o[r * dv + e]) * f(x.o[r * dv + e]))
                    .sum();
                for j in 0..skv {
                    let pij = p[r * skv + j];
                    let dp: f64 = (0..dv)
                        .map(|e| f(x.d_o[r * dv + e]) * f(x.v[(kh * skv + j) * dv + e]))
                        .sum();
                    let ds = pij * (dp - dsum);
                    for e in 0..dv {
                        dvv[(kh * skv + j) * dv + e] += pij * f(x.d_o[r * dv + e]);
                    }
                    for e in 0..d {
                        dq[r * d + e] += sc * ds * f(x.k[(kh * skv + j) * d + e]);
                        dk[(kh * skv + j) * d + e] += sc * ds * f(x.q[r * d + e]);
                    }
                    if let (Mask::Add(md), true) = (&c.mask, c.dbias) {
                        dbias[bcast_index(md, [bi, hi, i, j])] += ds;
                    }
                }
            }
        }
    }
    [dq, dk, dvv, dbias]
}

/// The tensors of a case's backward graph (with its layouts and types).
pub fn specs(c: &Case) -> Vec<TensorSpec> {
    let t = |uid, name: &str, dt, d: &[usize]| TensorSpec::new(uid, name, dt, &i64s(d));
    let bshd = |s: TensorSpec| {
        let d: Vec<usize> = s.dims.iter().map(|&x| x as usize).collect();
        let st = strides_in_order(&d, &[0, 2, 1, 3], 0);
        s.strides(&st)
    };
    let padded = |s: TensorSpec| {
        let d: Vec<usize> = s.dims.iter().map(|&x| x as usize).collect();
        let st = strides_in_order(&d, &[0, 1, 2, 3], 3);
        s.strides(&st)
    };
    let (q, o, d_o, dq) = (
        t(Q, "q", c.dt, &c.qd()),
        t(O, "o", c.dt, &c.od()),
        t(DO, "do", c.dt, &c.od()),
        t(DQ, "dq", c.dt, &c.qd()),
    );
    let (k, v, dk, dv) = (
        t(K, "k", c.dt, &c.kd()),
        t(V, "v", c.dt, &c.vd()),
        t(DK, "dk", c.dt, &c.kd()),
        t(DV, "dv", c.dt, &c.vd()),
    );
    let mut out = match c.layout {
        Layout::Packed => vec![q, k, v, o, d_o, dq, dk, dv],
        Layout::Bshd => vec![
            bshd(q),
            k.channels_last(),
            v,
            bshd(o),
            bshd(d_o),
            bshd(dq),
            dk.channels_last(),
            dv,
        ],
        Layout::Padded => vec![
            q,
            padded(k),
            v.channels_last(),
            o,
            d_o,
            dq,
            padded(dk),
            padded(dv),
        ],
    };
    let (b, h, _, sq, _, _, _) = c.dims;
    out.push(t(ST, "stats", DT::FLOAT, &[b, h, sq, 1]));
    match &c.mask {
        Mask::None => {}
        Mask::Add(md) => out.push(t(MASK, "mask", DT::FLOAT, md)),
        Mask::Bool(md) => out.push(t(MASK, "mask", DT::BOOLEAN, md)),
    }
    if c.dbias {
        out.push(t(DBIAS, "dbias", DT::FLOAT, c.mask_dims().expect("mask")));
    }
    if let Scale::Tensor(s) = c.scale {
        out.push(TensorSpec::scalar(SCALE, "scale", TensorValue::Float32(s)));
    }
    out
}

pub fn bwd_args(c: &Case) -> SdpaBackwardAttributesArgs {
    SdpaBackwardAttributesArgs {
        q_tensor_uid: Q,
        k_tensor_uid: K,
        v_tensor_uid: V,
        o_tensor_uid: O,
        do_tensor_uid: DO,
        stats_tensor_uid: ST,
        dq_tensor_uid: DQ,
        dk_tensor_uid: DK,
        dv_tensor_uid: DV,
        attn_mask_tensor_uid: c.mask_dims().map(|_| MASK),
        dbias_tensor_uid: c.dbias.then_some(DBIAS),
        attn_scale_value: match c.scale {
            Scale::Value(s) => Some(s),
            _ => None,
        },
        scale_tensor_uid: matches!(c.scale, Scale::Tensor(_)).then_some(SCALE),
        causal_mask: c.causal,
        causal_mask_bottom_right: c.causal_br,
        diagonal_alignment: if c.align_br {
            DiagonalAlignment::BOTTOM_RIGHT
        } else {
            DiagonalAlignment::TOP_LEFT
        },
        left_bound: c.left,
        right_bound: c.right,
        ..Default::default()
    }
}

pub fn graph(c: &Case) -> GraphBuilder {
    let mut g = GraphBuilder::new("sdpa_bwd");
    for s in specs(c) {
        g.tensor(s);
    }
    g.sdpa_backward("SdpaBackward_0", bwd_args(c));
    g
}

pub fn spec_of(c: &Case, uid: i64) -> TensorSpec {
    specs(c).into_iter().find(|s| s.uid == uid).expect("uid")
}

/// Random inputs of a case (rounded to their types), o and stats from the float64 forward.
pub fn inputs(c: &Case, seed: u64) -> Inputs {
    let n = |d: [usize; 4]| d.iter().product::<usize>();
    let rq = |uid, vals: Vec<f32>| spec_of(c, uid).quantize(&vals);
    let q = rq(Q, random_values(n(c.qd()), seed, -1.0, 1.0));
    let k = rq(K, random_values(n(c.kd()), seed + 1, -1.0, 1.0));
    let v = rq(V, random_values(n(c.vd()), seed + 2, -1.0, 1.0));
    let d_o = rq(DO, random_values(n(c.od()), seed + 3, -1.0, 1.0));
    let mask = match &c.mask {
        Mask::None => None,
        Mask::Add(md) => Some(random_values(md.iter().product(), seed + 4, -1.0, 1.0)),
        Mask::Bool(md) => {
            let mut m: Vec<f32> = random_values(md.iter().product(), seed + 4, 0.0, 1.0)
                .into_iter()
                .map(|r| if r < 0.3 { 0.0 } else { 1.0 })
                .collect();
            // The first query row masks every key: its gradients are zero.
            let skv = md[md.len() - 1];
            m[..skv].fill(0.0);
            Some(m)
        }
    };
    let (o, lse) = forward64(c, &q, &k, &v, mask.as_deref());
    let o = rq(O, o.iter().map(|&x| x as f32).collect());
    let stats = lse.iter().map(|&x| x as f32).collect();
    Inputs {
        q,
        k,
        v,
        o,
        d_o,
        stats,
        mask,
    }
}

pub fn bound(x: &Inputs) -> Vec<(i64, Vec<f32>)> {
    let mut v = vec![
        (Q, x.q.clone()),
        (K, x.k.clone()),
        (V, x.v.clone()),
        (O, x.o.clone()),
        (DO, x.d_o.clone()),
        (ST, x.stats.clone()),
    ];
    if let Some(m) = &x.mask {
        v.push((MASK, m.clone()));
    }
    v
}

pub fn outs(c: &Case) -> Vec<i64> {
    let mut o = vec![DQ, DK, DV];
    if c.dbias {
        o.push(DBIAS);
    }
    o
}

/// The GPU test's matrix (`gpu_sdpa_bwd.rs`; built on a fake device and, the smaller ones, run
/// through the Triton interpreter by `triton_sdpa_bwd.rs`): odd sequence lengths, s_q ≠ s_kv,
/// batch 1, GQA and MQA, head dims 16, 32, 64, 80, 96 and 128, causal top-left and
/// bottom-right, a band, rows whose every key is masked, scale value / constant tensor / 1,
/// f32, f16 and bf16, BSHD and padded layouts, sequences over several tiles.
pub fn gpu_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let with = |dims, dt, f: &dyn Fn(&mut Case)| {
        let mut c = Case::base(dims);
        c.dt = dt;
        c.scale = Scale::Value(0.125);
        f(&mut c);
        c
    };
    for dt in [DT::HALF, DT::BFLOAT16, DT::FLOAT] {
        v.push(with((1, 2, 2, 17, 17, 32, 32), dt, &|_| {}));
        v.push(with((2, 4, 2, 77, 45, 64, 64), dt, &|c| c.causal = true));
        v.push(with((1, 3, 1, 130, 200, 128, 128), dt, &|c| {
            c.causal_br = true
        }));
        v.push(with((2, 2, 2, 61, 61, 80, 80), dt, &|c| {
            c.left = Some(9);
            c.right = Some(3);
        }));
    }
    // Rows with every key masked (bottom-right causal, s_q > s_kv): zero gradients.
    v.push(with((1, 2, 1, 40, 13, 64, 64), DT::HALF, &|c| {
        c.causal_br = true
    }));
    // Head dim 96 (bucket 128), scale tensor and 1.
    v.push(with((1, 2, 2, 33, 70, 96, 96), DT::BFLOAT16, &|c| {
        c.scale = Scale::Tensor(0.3)
    }));
    v.push(with((1, 1, 1, 5, 9, 16, 16), DT::FLOAT, &|c| {
        c.scale = Scale::One
    }));
    // Mask tensors: an additive key mask broadcast over heads and rows, a BOOLEAN mask of
    // every (head, row, key) with causal, a bf16-graph additive mask on a padded layout.
    v.push(with((2, 4, 2, 33, 47, 64, 64), DT::HALF, &|c| {
        c.mask = Mask::Add(vec![2, 1, 1, 47]);
    }));
    v.push(with((1, 2, 2, 29, 29, 32, 32), DT::FLOAT, &|c| {
        c.mask = Mask::Bool(vec![1, 2, 29, 29]);
        c.causal = true;
    }));
    v.push(with((1, 2, 1, 21, 40, 32, 32), DT::BFLOAT16, &|c| {
        c.mask = Mask::Add(vec![1, 1, 21, 40]);
        c.layout = Layout::Padded;
    }));
    // Head dim 72: not a multiple of 16, the generic entry of bucket 128.
    v.push(with((2, 2, 1, 23, 29, 72, 72), DT::HALF, &|c| {
        c.causal = true
    }));
    // Layouts: BSHD q/o/do/dq with channels-last k/dk (spec where the strides allow),
    // padded k rows (generic).
    v.push(with((2, 4, 4, 50, 64, 64, 64), DT::HALF, &|c| {
        c.layout = Layout::Bshd
    }));
    v.push(with((1, 2, 1, 31, 47, 32, 32), DT::HALF, &|c| {
        c.layout = Layout::Padded;
        c.causal = true;
    }));
    // Several key and row tiles in each program's loop, b·h programs > 128 (the 128-key tile).
    v.push(with((4, 16, 4, 512, 512, 64, 64), DT::HALF, &|c| {
        c.causal = true
    }));
    v.push(with((2, 16, 16, 384, 384, 128, 128), DT::BFLOAT16, &|_| {}));
    v
}
