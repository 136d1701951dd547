//! The epilogue fusion of the CPU reference engine's plan: folds `conv_fprop → ADD(bias) →
//! activation` chains of the step list into the conv step's [`ConvEpilogue`], so they run in
//! the GEMM output pass ([`super::nodes::conv`] runs it).
//!
//! A pass over the whole step list, so it lives above the nodes: it reads the conv and
//! pointwise step types and rewrites [`Step`]s; [`super::plan`] calls it once, after the
//! topological sort.

use super::dtype::Elem;
use super::nodes::conv::ConvEpilogue;
use super::step::{Op, Step};
use super::tensor::TensorDesc;
use hipdnn_schema::graph::PointwiseMode;
use std::collections::{HashMap, HashSet};

/// Folds `conv_fprop → pointwise ADD(bias) → unary pointwise` chains (either pointwise node
/// may be absent) into the conv step, so they run in the GEMM output pass. A node is folded
/// only when the result is bit-identical to running it alone: the tensor it reads from the
/// chain is virtual, FLOAT (no rounding between the nodes) and read by that node only; the
/// bias has dims `(1, K, 1…)` and is not written by any node (a bound or constant tensor);
/// the activation is a one-input mode other than GEN_INDEX; output dims equal y's. Steps stay
/// in their order (the folded step runs where the conv ran; its bias is ready from the
/// start and its output's readers come after the folded nodes).
pub(super) fn fuse_epilogues(steps: Vec<Step>, tensors: &HashMap<i64, TensorDesc>) -> Vec<Step> {
    let written: HashSet<i64> = steps.iter().flat_map(|s| s.op.outputs()).collect();
    let mut readers: HashMap<i64, Vec<usize>> = HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        for u in s.op.inputs() {
            readers.entry(u).or_default().push(i);
        }
    }
    // The one step that reads `u`, when `u` is a virtual FLOAT tensor read once.
    let sole_reader = |u: i64| -> Option<usize> {
        let t = &tensors[&u];
        match readers.get(&u).map(Vec::as_slice) {
            Some(&[i]) if t.is_virtual && t.elem == Elem::F32 => Some(i),
            _ => None,
        }
    };
    let mut steps = steps;
    let mut folded = vec![false; steps.len()];
    for i in 0..steps.len() {
        let Op::ConvFprop(c) = &steps[i].op else {
            continue;
        };
        let y_dims = &tensors[&c.y].dims;
        let k = tensors[&c.w].dims[0];
        let (mut cur, mut bias, mut act, mut fused) = (c.y, None, None, Vec::new());
        if let Some(j) = sole_reader(cur)
            && let Op::Pointwise(p) = &steps[j].op
            && p.p.mode == PointwiseMode::ADD
            && p.ins.len() == 2
            && tensors[&p.out].dims == *y_dims
        {
            let other = if p.ins[0] == cur { p.ins[1] } else { p.ins[0] };
            let bd = &tensors[&other].dims;
            let per_channel = bd.len() == y_dims.len()
                && bd[1] == k
                && bd.iter().enumerate().all(|(d, &v)| d == 1 || v == 1);
            if other != cur && !written.contains(&other) && per_channel {
                bias = Some(other);
                cur = p.out;
                fused.push(j);
            }
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
                act,
                out: cur,
            });
        }
    }
    steps
        .into_iter()
        .zip(folded)
        .filter(|(_, f)| !f)
        .map(|(s, _)| s)
        .collect()
}
