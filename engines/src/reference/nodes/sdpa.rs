//! Scaled dot-product attention (forward) nodes of the CPU reference engine: parse (refused
//! extensions, q/k/v/o dims, mask, band) and run ([`crate::reference::ops::sdpa`]).

use crate::reference::check::Cx;
use crate::reference::env::Env;
use crate::reference::ops::sdpa::{self as kernel, Band};
use hipdnn_backend::ops::sdpa as table;
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::DiagonalAlignment;
use hipdnn_schema::graph::Node;

/// Source of a scalar operand: a constant or a tensor read at execute time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A constant.
    Value(f32),
    /// The first element of a tensor.
    Tensor(i64),
}

/// An SDPA forward step.
#[derive(Debug, Clone)]
pub struct SdpaStep {
    /// Query UID `(B, H, S_q, D)`.
    pub q: i64,
    /// Key UID `(B, H_kv, S_kv, D)`.
    pub k: i64,
    /// Value UID `(B, H_kv, S_kv, D_v)`.
    pub v: i64,
    /// Output UID `(B, H, S_q, D_v)`.
    pub o: i64,
    /// Additive or boolean mask UID.
    pub mask: Option<i64>,
    /// Attention scale.
    pub scale: Scalar,
    /// Causal / band mask.
    pub band: Band,
    /// Stats output UID.
    pub stats: Option<i64>,
    /// Row max output UID.
    pub max: Option<i64>,
    /// Row sum-of-exp output UID.
    pub sum_exp: Option<i64>,
}

impl SdpaStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        let mut r = vec![self.q, self.k, self.v];
        r.extend(self.mask);
        if let Scalar::Tensor(u) = self.scale {
            r.push(u);
        }
        r
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        let mut v = vec![self.o];
        v.extend(self.stats.iter().chain(&self.max).chain(&self.sum_exp));
        v
    }
}

/// Reads and checks one sdpa node into a [`SdpaStep`].
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for anything the engine cannot run.
pub fn parse(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<SdpaStep> {
    let a = node.attributes_as_sdpa_attributes().expect("type checked");
    if let Some(p) = a.dropout_probability().filter(|&p| p != 0.0) {
        return Err(cx.refuse("dropout_probability", p));
    }
    for (attr, u) in [
        ("seq_len_q_tensor_uid", a.seq_len_q_tensor_uid()),
        ("seq_len_kv_tensor_uid", a.seq_len_kv_tensor_uid()),
        ("seed_tensor_uid", a.seed_tensor_uid()),
        ("offset_tensor_uid", a.offset_tensor_uid()),
        ("dropout_mask_tensor_uid", a.dropout_mask_tensor_uid()),
        ("dropout_scale_tensor_uid", a.dropout_scale_tensor_uid()),
        ("page_table_k_tensor_uid", a.page_table_k_tensor_uid()),
        ("page_table_v_tensor_uid", a.page_table_v_tensor_uid()),
        ("block_mask_tensor_uid", a.block_mask_tensor_uid()),
        ("sink_token_tensor_uid", a.sink_token_tensor_uid()),
        ("descale_q_tensor_uid", a.descale_q_tensor_uid()),
        ("descale_k_tensor_uid", a.descale_k_tensor_uid()),
        ("descale_v_tensor_uid", a.descale_v_tensor_uid()),
        ("descale_s_tensor_uid", a.descale_s_tensor_uid()),
        ("scale_s_tensor_uid", a.scale_s_tensor_uid()),
        ("scale_o_tensor_uid", a.scale_o_tensor_uid()),
        ("rng_dump_tensor_uid", a.rng_dump_tensor_uid()),
        ("amax_s_tensor_uid", a.amax_s_tensor_uid()),
        ("amax_o_tensor_uid", a.amax_o_tensor_uid()),
    ] {
        cx.refuse_set(attr, u)?;
    }
    if a.alibi_mask() {
        return Err(cx.refuse("alibi_mask", true));
    }
    if a.padding_mask() {
        return Err(cx.refuse("padding_mask", true));
    }
    let (q, k, v, o) = (
        cx.float("q_tensor_uid", a.q_tensor_uid())?,
        cx.float("k_tensor_uid", a.k_tensor_uid())?,
        cx.float("v_tensor_uid", a.v_tensor_uid())?,
        cx.float("o_tensor_uid", a.o_tensor_uid())?,
    );
    if [q, k, v, o].iter().any(|t| t.dims.len() != table::RANK) {
        return Err(cx.bad("q, k, v and o must have 4 dims (B, H, S, D)"));
    }
    let (b, h, sq, d) = (q.dims[0], q.dims[1], q.dims[2], q.dims[3]);
    let (hk, skv) = (k.dims[1], k.dims[2]);
    if k.dims[0] != b
        || v.dims[0] != b
        || k.dims[3] != d
        || v.dims[1] != hk
        || v.dims[2] != skv
        || !table::heads_compatible(h as i64, hk as i64)
    {
        return Err(cx.bad(format!(
            "dims do not agree: q {:?}, k {:?}, v {:?}",
            q.dims, k.dims, v.dims
        )));
    }
    cx.dims_eq("o_tensor_uid", o, &table::output_dims(&q.dims, &v.dims))?;
    let mask = cx.opt("attn_mask_tensor_uid", a.attn_mask_tensor_uid())?;
    if let Some(u) = mask {
        cx.bcast("attn_mask_tensor_uid", &cx.tensors[&u], &[b, h, sq, skv])?;
    }
    let scale = match (a.attn_scale_value(), a.scale_tensor_uid()) {
        (Some(s), _) => Scalar::Value(s),
        (None, Some(u)) => {
            cx.t("scale_tensor_uid", u)?;
            Scalar::Tensor(u)
        }
        (None, None) => Scalar::Value(1.0),
    };
    let br = a.diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT;
    let mut band = Band {
        bottom_right: br,
        right: a.right_bound(),
        left: a.left_bound(),
    };
    if a.causal_mask() || a.causal_mask_bottom_right() {
        if a.causal_mask() && a.causal_mask_bottom_right() {
            return Err(cx.bad("causal_mask and causal_mask_bottom_right are both set"));
        }
        band.bottom_right = a.causal_mask_bottom_right();
        band.right = Some(band.right.map_or(0, |r| r.min(0)));
    }
    let stats = cx.opt("stats_tensor_uid", a.stats_tensor_uid())?;
    if a.generate_stats() == Some(true) && stats.is_none() {
        return Err(cx.bad("generate_stats is set but stats_tensor_uid is absent"));
    }
    let max = cx.opt("max_tensor_uid", a.max_tensor_uid())?;
    let sum_exp = cx.opt("sum_exp_tensor_uid", a.sum_exp_tensor_uid())?;
    for u in stats.iter().chain(&max).chain(&sum_exp) {
        cx.dims_eq(
            "statistics tensor",
            &cx.tensors[u],
            &table::stats_dims(&q.dims),
        )?;
    }
    Ok(SdpaStep {
        q: q.uid,
        k: k.uid,
        v: v.uid,
        o: o.uid,
        mask,
        scale,
        band,
        stats,
        max,
        sum_exp,
    })
}

/// Runs one sdpa step on host arrays.
pub fn run(
    s: &SdpaStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let SdpaStep {
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
    } = s;
    let (qv, kv, vv) = (env.get(*q)?, env.get(*k)?, env.get(*v)?);
    let s = match scale {
        Scalar::Value(s) => *s,
        Scalar::Tensor(u) => env.scalar(*u)?,
    };
    let mv = match mask {
        Some(u) => Some((
            env.get(*u)?,
            env.desc(*u).elem == crate::reference::dtype::Elem::Bool,
        )),
        None => None,
    };
    let r = kernel::sdpa(
        &qv,
        &kv,
        &vv,
        s,
        mv.as_ref().map(|(a, b)| (&**a, *b)),
        *band,
    )
    .map_err(e)?;
    env.put(*o, r.o)?;
    for (u, val) in [(stats, r.stats), (max, r.max), (sum_exp, r.sum_exp)] {
        if let Some(u) = u {
            env.put(*u, val)?;
        }
    }
    Ok(())
}
