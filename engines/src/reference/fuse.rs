//! The fusions of the CPU reference engine's plan: [`fuse_epilogues`] folds `conv_fprop →
//! ADD(bias) → ADD(residual) → activation` chains of the step list into the conv step's
//! [`ConvEpilogue`] and
//! `matmul → ADD(bias) → ADD(residual) → activation` chains into the matmul step's
//! [`MatmulEpilogue`], so they run in the GEMM output pass ([`super::nodes::conv`] and
//! [`super::nodes::matmul`] run them); [`fuse_softmax`] replaces
//! the five (six) nodes of a softmax (log-softmax) by one [`SoftmaxStep`].
//!
//! Passes over the whole step list, so they live above the nodes: they read the step types and
//! rewrite [`Step`]s; [`super::plan`] calls them once, after the topological sort. Every
//! fusion is bit-identical to running its nodes one at a time.

use super::dtype::Elem;
use super::nodes::conv::ConvEpilogue;
use super::nodes::matmul::MatmulEpilogue;
use super::nodes::softmax::SoftmaxStep;
use super::step::{Op, Step};
use super::tensor::TensorDesc;
use hipdnn_schema::graph::{PointwiseMode, ReductionMode};
use std::collections::{HashMap, HashSet};

/// Folds `conv_fprop → pointwise ADD(bias) → pointwise ADD(residual) → unary pointwise`
/// chains (each pointwise node may be absent; a ResNet block's end) into the conv step, so
/// they run in the GEMM output pass. A node is folded only when the result is bit-identical
/// to running it alone: the tensor it reads from the chain is virtual, FLOAT (no rounding
/// between the nodes) and read by that node only; the bias has dims `(1, K, 1…)` and is not
/// written by any node (a bound or constant tensor); the residual has y's dims and is not
/// written by any node at or after the conv step (a bound, constant or earlier-computed
/// tensor); the activation is a one-input mode other than GEN_INDEX; output dims equal y's.
/// Steps stay in their order (the folded step runs where the conv ran; its bias and residual
/// are ready by then and its output's readers come after the folded nodes).
///
/// Matmul steps take `matmul → ADD(bias) → ADD(residual) → unary pointwise` chains (each node
/// may be absent) under the same rules, with a bias of dims `(1…, N)` (a per-column vector;
/// a full-shape operand of the first ADD is taken as the residual instead) and a residual
/// that broadcasts to c's dims and is not written by any node at or after the matmul step (a
/// bound, constant or earlier-computed tensor).
pub(super) fn fuse_epilogues(steps: Vec<Step>, tensors: &HashMap<i64, TensorDesc>) -> Vec<Step> {
    let steps = fuse_conv_epilogues(steps, tensors);
    fuse_matmul_epilogues(steps, tensors)
}

/// Who writes and who reads each tensor of a step list.
struct Uses {
    /// The step that writes each UID.
    writer: HashMap<i64, usize>,
    /// The steps that read each UID, in order.
    readers: HashMap<i64, Vec<usize>>,
}

impl Uses {
    fn new(steps: &[Step]) -> Uses {
        let mut uses = Uses {
            writer: HashMap::new(),
            readers: HashMap::new(),
        };
        for (i, s) in steps.iter().enumerate() {
            for u in s.op.outputs() {
                uses.writer.insert(u, i);
            }
            for u in s.op.inputs() {
                uses.readers.entry(u).or_default().push(i);
            }
        }
        uses
    }

    /// The one step that reads `u`, when `u` is a virtual FLOAT tensor read once.
    fn sole_reader(&self, u: i64, tensors: &HashMap<i64, TensorDesc>) -> Option<usize> {
        let t = &tensors[&u];
        match self.readers.get(&u).map(Vec::as_slice) {
            Some(&[i]) if t.is_virtual && t.elem == Elem::F32 => Some(i),
            _ => None,
        }
    }
}

/// `steps` without those marked in `folded`, in order.
fn without(steps: Vec<Step>, folded: &[bool]) -> Vec<Step> {
    steps
        .into_iter()
        .zip(folded)
        .filter(|(_, f)| !**f)
        .map(|(s, _)| s)
        .collect()
}

/// The conv half of [`fuse_epilogues`].
fn fuse_conv_epilogues(steps: Vec<Step>, tensors: &HashMap<i64, TensorDesc>) -> Vec<Step> {
    let written: HashSet<i64> = steps.iter().flat_map(|s| s.op.outputs()).collect();
    let uses = Uses::new(&steps);
    let sole_reader = |u: i64| uses.sole_reader(u, tensors);
    let mut steps = steps;
    let mut folded = vec![false; steps.len()];
    for i in 0..steps.len() {
        let Op::ConvFprop(c) = &steps[i].op else {
            continue;
        };
        let y_dims = &tensors[&c.y].dims;
        let k = tensors[&c.w].dims[0];
        // Ready when the conv step runs: bound, constant, or written before it.
        let ready = |u: i64| uses.writer.get(&u).is_none_or(|&w| w < i);
        let (mut cur, mut bias, mut residual, mut act, mut fused) =
            (c.y, None, None, None, Vec::new());
        for _ in 0..2 {
            let Some(j) = sole_reader(cur) else { break };
            let Op::Pointwise(p) = &steps[j].op else {
                break;
            };
            if p.p.mode != PointwiseMode::ADD || p.ins.len() != 2 || tensors[&p.out].dims != *y_dims
            {
                break;
            }
            let other = if p.ins[0] == cur { p.ins[1] } else { p.ins[0] };
            if other == cur {
                break;
            }
            let bd = &tensors[&other].dims;
            let per_channel = bd.len() == y_dims.len()
                && bd[1] == k
                && bd.iter().enumerate().all(|(d, &v)| d == 1 || v == 1);
            if bias.is_none() && residual.is_none() && !written.contains(&other) && per_channel {
                bias = Some(other);
            } else if residual.is_none() && bd == y_dims && ready(other) {
                residual = Some(other);
            } else {
                break;
            }
            cur = p.out;
            fused.push(j);
        }
        if let Some(j) = sole_reader(cur)
            && let Op::Pointwise(p) = &steps[j].op
            && p.ins.len() == 1
            && p.p.mode != PointwiseMode::GEN_INDEX
            && tensors[&p.out].dims == *y_dims
        {
            act = Some(p.p);
            cur = p.out;
            fused.push(j);
        }
        if fused.is_empty() {
            continue;
        }
        for j in fused {
            folded[j] = true;
        }
        if let Op::ConvFprop(c) = &mut steps[i].op {
            c.epilogue = Some(ConvEpilogue {
                bias,
                residual,
                act,
                out: cur,
            });
        }
    }
    without(steps, &folded)
}

/// The matmul half of [`fuse_epilogues`].
fn fuse_matmul_epilogues(steps: Vec<Step>, tensors: &HashMap<i64, TensorDesc>) -> Vec<Step> {
    let uses = Uses::new(&steps);
    let sole_reader = |u: i64| uses.sole_reader(u, tensors);
    // The other operand of the two-input ADD step `j` that reads `cur` and writes a tensor of
    // `dims`, with that output.
    let add_operand = |j: usize, cur: i64, dims: &[usize]| -> Option<(i64, i64)> {
        let Op::Pointwise(p) = &steps[j].op else {
            return None;
        };
        if p.p.mode != PointwiseMode::ADD || p.ins.len() != 2 || tensors[&p.out].dims != dims {
            return None;
        }
        let other = if p.ins[0] == cur { p.ins[1] } else { p.ins[0] };
        (other != cur).then_some((other, p.out))
    };
    let mut found: Vec<(usize, MatmulEpilogue, Vec<usize>)> = Vec::new();
    for i in 0..steps.len() {
        let Op::Matmul(m) = &steps[i].op else {
            continue;
        };
        let c_dims = tensors[&m.c].dims.clone();
        let n = *c_dims.last().expect("matmul c has 2+ dims");
        // Ready when the matmul step runs: bound, constant, or written before it.
        let ready = |u: i64| uses.writer.get(&u).is_none_or(|&w| w < i);
        let is_bias = |u: i64| {
            let d = &tensors[&u].dims;
            d.len() <= c_dims.len()
                && d.last() == Some(&n)
                && d[..d.len() - 1].iter().all(|&v| v == 1)
                && n != 1
        };
        let broadcasts = |u: i64| {
            let d = &tensors[&u].dims;
            d.len() <= c_dims.len()
                && d.iter()
                    .rev()
                    .zip(c_dims.iter().rev())
                    .all(|(&a, &b)| a == b || a == 1)
        };
        let (mut cur, mut bias, mut residual, mut act, mut fused) =
            (m.c, None, None, None, Vec::new());
        for _ in 0..2 {
            let Some(j) = sole_reader(cur) else { break };
            let Some((other, out)) = add_operand(j, cur, &c_dims) else {
                break;
            };
            if !ready(other) {
                break;
            }
            if bias.is_none() && residual.is_none() && is_bias(other) {
                bias = Some(other);
            } else if residual.is_none() && broadcasts(other) {
                residual = Some(other);
            } else {
                break;
            }
            cur = out;
            fused.push(j);
        }
        if let Some(j) = sole_reader(cur)
            && let Op::Pointwise(p) = &steps[j].op
            && p.ins.len() == 1
            && p.p.mode != PointwiseMode::GEN_INDEX
            && tensors[&p.out].dims == c_dims
        {
            act = Some(p.p);
            cur = p.out;
            fused.push(j);
        }
        if !fused.is_empty() {
            let ep = MatmulEpilogue {
                bias,
                residual,
                act,
                out: cur,
            };
            found.push((i, ep, fused));
        }
    }
    let mut steps = steps;
    let mut folded = vec![false; steps.len()];
    for (i, ep, fused) in found {
        // A node is folded into one matmul only (readiness already keeps two chains from
        // sharing an ADD; this keeps it true whatever the rules become).
        if fused.iter().any(|&j| folded[j]) {
            continue;
        }
        for j in fused {
            folded[j] = true;
        }
        if let Op::Matmul(m) = &mut steps[i].op {
            m.epilogue = Some(ep);
        }
    }
    without(steps, &folded)
}

/// Replaces each softmax pattern of the step list — `m = reduce MAX(x)`, `d = SUB(x, m)`,
/// `e = EXP(d)`, `s = reduce ADD(e)`, `y = DIV(e, s)`; log-softmax: `l = LOG(s)` and
/// `y = SUB(d, l)` in place of the DIV (the patterns the GPU `reduce_fwd` pack serves, with
/// the operands in that order) — by one [`SoftmaxStep`] at the position of y's node.
///
/// A pattern is fused only when the result is bit-identical to its nodes (the fused kernel
/// does the same f32 operations in the same order): m, d, e, s (and l) are virtual and FLOAT
/// (no rounding between the nodes) and read by the pattern's nodes only (e by the ADD
/// reduction and the DIV, d by the EXP and for log-softmax the last SUB, the others by one
/// node); d, e and y have x's dims; s (and l) m's dims; and the reduced axes are x's trailing
/// axes (m's dims equal x's up to some axis and are 1 after it), so a row is contiguous.
/// Anything else runs node by node, as before. x and y may be of any type, bound or virtual.
pub(super) fn fuse_softmax(steps: Vec<Step>, tensors: &HashMap<i64, TensorDesc>) -> Vec<Step> {
    let mut readers: HashMap<i64, Vec<usize>> = HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        for u in s.op.inputs() {
            readers.entry(u).or_default().push(i);
        }
    }
    // The steps reading the virtual FLOAT tensor `u`, sorted (empty when u is not such).
    let read_by = |u: i64| -> Vec<usize> {
        let t = &tensors[&u];
        if !(t.is_virtual && t.elem == Elem::F32) {
            return Vec::new();
        }
        let mut r = readers.get(&u).cloned().unwrap_or_default();
        r.sort_unstable();
        r
    };
    let pw = |i: usize, mode: PointwiseMode, ins: &[i64]| -> Option<i64> {
        match &steps[i].op {
            Op::Pointwise(p) if p.p.mode == mode && p.ins == ins => Some(p.out),
            _ => None,
        }
    };
    let sorted = |mut v: Vec<usize>| {
        v.sort_unstable();
        v
    };
    let dims = |u: i64| &tensors[&u].dims;
    let mut fused: Vec<(usize, Vec<usize>, SoftmaxStep)> = Vec::new();
    for i in 0..steps.len() {
        let Op::Reduction(r) = &steps[i].op else {
            continue;
        };
        if r.mode != ReductionMode::MAX_OP {
            continue;
        }
        let (x, m) = (r.x, r.y);
        let (xd, md) = (dims(x), dims(m));
        // Reduced axes trailing: m = x's dims up to k, 1 after.
        let k = md.len() - md.iter().rev().take_while(|&&v| v == 1).count();
        if md.len() != xd.len() || md[..k] != xd[..k] {
            continue;
        }
        let row: usize = xd[k..].iter().product();
        let Some(&[j_sub]) = Some(read_by(m).as_slice()) else {
            continue;
        };
        let Some(d) = pw(j_sub, PointwiseMode::SUB, &[x, m]) else {
            continue;
        };
        let d_readers = read_by(d);
        let Some((j_exp, e)) = d_readers
            .iter()
            .find_map(|&j| pw(j, PointwiseMode::EXP, &[d]).map(|e| (j, e)))
        else {
            continue;
        };
        let e_readers = read_by(e);
        let Some(j_add) = e_readers.iter().copied().find(|&j| {
            matches!(&steps[j].op, Op::Reduction(r) if r.mode == ReductionMode::ADD && r.x == e)
        }) else {
            continue;
        };
        let Op::Reduction(add) = &steps[j_add].op else {
            unreachable!("matched above")
        };
        let s = add.y;
        if dims(d) != xd || dims(e) != xd || dims(s) != md {
            continue;
        }
        let Some(&[j_s]) = Some(read_by(s).as_slice()) else {
            continue;
        };
        let found = if let Some(y) = pw(j_s, PointwiseMode::DIV, &[e, s]) {
            // softmax: d read by the EXP only, e by the ADD reduction and the DIV.
            (d_readers == [j_exp] && e_readers == sorted(vec![j_add, j_s])).then_some((
                y,
                false,
                vec![i, j_sub, j_exp, j_add, j_s],
            ))
        } else if let Some(l) = pw(j_s, PointwiseMode::LOG, &[s]) {
            // log-softmax: e read by the ADD reduction only, d by the EXP and the last SUB.
            match read_by(l).as_slice() {
                &[j_y] if dims(l) == md && e_readers == [j_add] => {
                    pw(j_y, PointwiseMode::SUB, &[d, l])
                        .filter(|_| d_readers == sorted(vec![j_exp, j_y]))
                        .map(|y| (y, true, vec![i, j_sub, j_exp, j_add, j_s, j_y]))
                }
                _ => None,
            }
        } else {
            None
        };
        let Some((y, log, nodes)) = found else {
            continue;
        };
        if dims(y) != xd {
            continue;
        }
        let at = *nodes.last().expect("y's node");
        fused.push((at, nodes, SoftmaxStep { x, y, row, log }));
    }
    if fused.is_empty() {
        return steps;
    }
    let mut gone = vec![false; steps.len()];
    let mut at: HashMap<usize, SoftmaxStep> = HashMap::new();
    for (a, nodes, step) in fused {
        for n in nodes {
            gone[n] = true;
        }
        at.insert(a, step);
    }
    steps
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| match at.remove(&i) {
            Some(f) => Some(Step {
                name: s.name,
                op: Op::Softmax(f),
            }),
            None => (!gone[i]).then_some(s),
        })
        .collect()
}
