//! Execute-time shape overrides in the CPU reference engine (upstream RFC 0008 phase 1): the
//! plan's tensors at the shapes one execute gives. Overridden tensors take the given dims and
//! strides; every virtual tensor is derived again, node by node in dependency order, by the op
//! table's rules ([`hipdnn_backend::ops`]); the plan is then parsed from these tensors as any
//! graph is, so its nodes check the shapes exactly as a build at those shapes would.
//!
//! Derived: pointwise (broadcast of the inputs), matmul, convolution fprop (the window's output
//! extent), gather, SDPA forward (output and statistics), and the ops whose outputs follow
//! their first input axis by axis (layernorm, rmsnorm, batchnorm inference and training,
//! softmax, reduction: an output dim equal to the input's built dim follows it, any other stays
//! as built). Convolution dgrad/wgrad, resample, the backward norms and SDPA backward keep their
//! built output shapes: a virtual output of one of them whose inputs changed is refused by name.
//!
//! Above [`super::step`] (reads the steps' UIDs), below [`super::plan`] (which calls it).

use super::step::{Op, Step};
use super::tensor::TensorDesc;
use hipdnn_backend::ops::{broadcast::broadcast_shape, conv, gather, matmul, sdpa};
use hipdnn_backend::{BuiltShape, PluginError, PluginResult, ShapeOverride, check_overrides};
use std::collections::HashMap;

fn refuse(msg: String) -> PluginError {
    PluginError::bad_param(format!("shape override: {msg}"))
}

/// Checks `overrides` against the built `tensors` (the rules of
/// [`hipdnn_backend::check_overrides`]).
///
/// # Errors
/// `BAD_PARAM` with the rule's message (starting `shape override`).
pub fn check(tensors: &HashMap<i64, TensorDesc>, overrides: &[ShapeOverride]) -> PluginResult<()> {
    let built: HashMap<i64, (Vec<i64>, Vec<i64>, bool)> = overrides
        .iter()
        .filter_map(|o| {
            let t = tensors.get(&o.uid)?;
            let dims = t.dims.iter().map(|&d| d as i64).collect();
            let strides = t.strides.iter().map(|&s| s as i64).collect();
            Some((o.uid, (dims, strides, t.is_virtual)))
        })
        .collect();
    check_overrides(overrides, |uid| {
        built.get(&uid).map(|(d, s, v)| BuiltShape {
            dims: d,
            strides: s,
            is_virtual: *v,
        })
    })
    .map_err(PluginError::bad_param)
}

/// Applies `overrides` to `tensors` (built shapes, checked by [`check`]) and derives every
/// virtual tensor again; `steps` are the graph's nodes parsed at the built shapes, in graph
/// order (unfused).
///
/// # Errors
/// `BAD_PARAM` "shape override: …" for an override whose extent overflows, a derived dim that
/// is not positive, or a virtual output of a node whose shapes this engine does not derive.
pub fn apply(
    steps: &[Step],
    tensors: &mut HashMap<i64, TensorDesc>,
    overrides: &[ShapeOverride],
) -> PluginResult<()> {
    let built: HashMap<i64, Vec<usize>> =
        tensors.iter().map(|(&u, t)| (u, t.dims.clone())).collect();
    for o in overrides {
        let t = tensors
            .get_mut(&o.uid)
            .ok_or_else(|| refuse(format!("tensor uid {} is not a tensor of the plan", o.uid)))?;
        t.dims = o.dims.iter().map(|&d| d as usize).collect();
        t.strides = o.strides.iter().map(|&s| s as usize).collect();
        t.check_extents()
            .map_err(|e| refuse(format!("tensor uid {}: {}", o.uid, e.message)))?;
    }
    // Dependency order: a node runs once every virtual tensor it reads is derived (the graph's
    // own order need not be topological; a cycle is the plan parser's to refuse).
    let mut done = vec![false; steps.len()];
    let mut derived: Vec<i64> = Vec::new();
    let is_ready = |s: &Step, derived: &[i64], tensors: &HashMap<i64, TensorDesc>| {
        s.op.inputs()
            .iter()
            .all(|u| tensors.get(u).is_none_or(|t| !t.is_virtual) || derived.contains(u))
    };
    loop {
        let mut progress = false;
        for (i, s) in steps.iter().enumerate() {
            if done[i] || !is_ready(s, &derived, tensors) {
                continue;
            }
            derive_outputs(s, tensors, &built)?;
            derived.extend(s.op.outputs());
            done[i] = true;
            progress = true;
        }
        if !progress {
            return Ok(());
        }
    }
}

/// Dims of `uid` now, as `i64`.
fn now(tensors: &HashMap<i64, TensorDesc>, uid: i64) -> Vec<i64> {
    tensors
        .get(&uid)
        .map(|t| t.dims.iter().map(|&d| d as i64).collect())
        .unwrap_or_default()
}

/// Sets the dims of each virtual output of `step` derived from its inputs' dims now.
fn derive_outputs(
    step: &Step,
    tensors: &mut HashMap<i64, TensorDesc>,
    built: &HashMap<i64, Vec<usize>>,
) -> PluginResult<()> {
    let d = |u| now(tensors, u);
    let follow = |x: i64, y: i64| -> Vec<i64> {
        let (bx, by, nx) = (&built[&x], &built[&y], now(tensors, x));
        by.iter()
            .enumerate()
            .map(|(i, &b)| match (bx.get(i), nx.get(i)) {
                (Some(&m), Some(&n)) if by.len() == bx.len() && b == m => n,
                _ => b as i64,
            })
            .collect()
    };
    let outs: Vec<(i64, Vec<i64>)> = match &step.op {
        Op::Pointwise(p) => {
            let ins: Vec<Vec<i64>> = p.ins.iter().map(|&u| d(u)).collect();
            let refs: Vec<&[i64]> = ins.iter().map(Vec::as_slice).collect();
            vec![(p.out, broadcast_shape(&refs))]
        }
        Op::Matmul(m) => vec![(m.c, matmul::output_dims(&d(m.a), &d(m.b)))],
        Op::ConvFprop(c) => {
            let (x, w) = (d(c.x), d(c.w));
            let mut y = vec![x[0], w[0]];
            for (i, (&xs, &ws)) in x[2..].iter().zip(&w[2..]).enumerate() {
                let win = conv::Window {
                    pre: c.geo.pre[i] as i64,
                    post: c.geo.post[i] as i64,
                    stride: c.geo.stride[i] as i64,
                    dilation: c.geo.dilation[i] as i64,
                };
                y.push(conv::output_extent(xs, ws, win).unwrap_or(0));
            }
            vec![(c.y, y)]
        }
        Op::Gather(g) => vec![(
            g.y,
            gather::output_dims(&d(g.index), &d(g.table)).unwrap_or_default(),
        )],
        Op::Sdpa(s) => {
            let (q, v) = (d(s.q), d(s.v));
            let stats = sdpa::stats_dims(&q);
            let mut outs = vec![(s.o, sdpa::output_dims(&q, &v))];
            outs.extend(
                [s.stats, s.max, s.sum_exp]
                    .into_iter()
                    .flatten()
                    .map(|u| (u, stats.clone())),
            );
            outs
        }
        Op::Layernorm(_)
        | Op::Rmsnorm(_)
        | Op::BnInference(_)
        | Op::BnTraining(_)
        | Op::Softmax(_)
        | Op::Reduction(_) => {
            let x = step.op.inputs()[0];
            step.op
                .outputs()
                .into_iter()
                .map(|y| (y, follow(x, y)))
                .collect()
        }
        Op::ConvDgrad(_)
        | Op::ConvWgrad(_)
        | Op::Resample(_)
        | Op::ResampleBwd(_)
        | Op::NormBackward(_)
        | Op::SdpaBackward(_)
        | Op::BlockQuantize(_)
        | Op::BlockDequantize(_) => {
            let changed = step
                .op
                .inputs()
                .into_iter()
                .any(|u| tensors.get(&u).is_some_and(|t| t.dims != built[&u]));
            let virtual_out = step
                .op
                .outputs()
                .into_iter()
                .find(|u| tensors.get(u).is_some_and(|t| t.is_virtual));
            if let (true, Some(u)) = (changed, virtual_out) {
                return Err(refuse(format!(
                    "node '{}' writes virtual tensor uid {u}, whose shape the CPU reference \
                     engine does not derive for this op; make it a graph output (and override \
                     it) or build the graph at this shape",
                    step.name
                )));
            }
            Vec::new()
        }
    };
    for (uid, dims) in outs {
        let Some(t) = tensors.get_mut(&uid) else {
            continue;
        };
        if !t.is_virtual {
            continue; // a bound output keeps the shape the pack gives; the node checks it
        }
        if dims.len() != t.dims.len() || dims.iter().any(|&v| v <= 0) {
            return Err(refuse(format!(
                "node '{}': the overridden inputs give its output uid {uid} the dims {dims:?}, \
                 which do not fit the built dims {:?}",
                step.name, t.dims
            )));
        }
        t.strides = packed_like(&t.strides, &dims);
        t.dims = dims.iter().map(|&v| v as usize).collect();
    }
    Ok(())
}

/// Packed strides for `dims` in the order of `like` (the largest stride outermost; ties keep
/// dim order).
fn packed_like(like: &[usize], dims: &[i64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..dims.len()).collect();
    order.sort_by(|&a, &b| like[b].cmp(&like[a]).then(a.cmp(&b)));
    let mut strides = vec![0usize; dims.len()];
    let mut s = 1usize;
    for &i in order.iter().rev() {
        strides[i] = s;
        s = s.saturating_mul(dims[i] as usize);
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::packed_like;

    #[test]
    fn packed_strides_keep_the_built_order() {
        assert_eq!(packed_like(&[24, 8, 1], &[2, 3, 8]), vec![24, 8, 1]);
        // NHWC built (C fastest): the same order at a smaller H, W.
        assert_eq!(
            packed_like(&[48, 1, 12, 3], &[1, 3, 2, 2]),
            vec![12, 1, 6, 3]
        );
    }
}
