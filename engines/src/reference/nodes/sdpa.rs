//! Scaled dot-product attention nodes of the CPU reference engine, forward and backward:
//! parse (refused extensions, q/k/v/o dims, mask, band; the backward's do, stats and
//! gradients) and run ([`crate::reference::ops::sdpa`]).

use crate::reference::check::Cx;
use crate::reference::dtype::Elem;
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
    let band = band_of(
        cx,
        (a.causal_mask(), a.causal_mask_bottom_right()),
        a.diagonal_alignment(),
        a.left_bound(),
        a.right_bound(),
    )?;
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

/// The band of an sdpa node (forward or backward): `diagonal_alignment` with its bounds, then
/// a causal flag (`causal`: top-left, `causal_bottom_right`) sets the alignment and caps the
/// right bound at 0.
///
/// # Errors
/// `NOT_APPLICABLE` when both causal flags are set.
fn band_of(
    cx: &Cx<'_>,
    (causal, causal_bottom_right): (bool, bool),
    alignment: DiagonalAlignment,
    left: Option<i64>,
    right: Option<i64>,
) -> PluginResult<Band> {
    let mut band = Band {
        bottom_right: alignment == DiagonalAlignment::BOTTOM_RIGHT,
        right,
        left,
    };
    if causal || causal_bottom_right {
        if causal && causal_bottom_right {
            return Err(cx.bad("causal_mask and causal_mask_bottom_right are both set"));
        }
        band.bottom_right = causal_bottom_right;
        band.right = Some(band.right.map_or(0, |r| r.min(0)));
    }
    Ok(band)
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

/// An SDPA backward step: dq, dk, dv (and optionally the mask's gradient) from the forward's
/// operands, output, logsumexp and the gradient of the output.
#[derive(Debug, Clone)]
pub struct SdpaBackwardStep {
    /// Query UID `(B, H, S_q, D)`.
    pub q: i64,
    /// Key UID `(B, H_kv, S_kv, D)`.
    pub k: i64,
    /// Value UID `(B, H_kv, S_kv, D_v)`.
    pub v: i64,
    /// Forward output UID `(B, H, S_q, D_v)`.
    pub o: i64,
    /// Output gradient UID `(B, H, S_q, D_v)`.
    pub d_o: i64,
    /// Forward logsumexp UID `(B, H, S_q, 1)`.
    pub stats: i64,
    /// Query gradient UID (dims of q).
    pub dq: i64,
    /// Key gradient UID (dims of k).
    pub dk: i64,
    /// Value gradient UID (dims of v).
    pub dv: i64,
    /// Additive or boolean mask UID.
    pub mask: Option<i64>,
    /// Attention scale.
    pub scale: Scalar,
    /// Causal / band mask.
    pub band: Band,
    /// Gradient of the additive mask (dims of the mask).
    pub dbias: Option<i64>,
}

impl SdpaBackwardStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        let mut r = vec![self.q, self.k, self.v, self.o, self.d_o, self.stats];
        r.extend(self.mask);
        if let Scalar::Tensor(u) = self.scale {
            r.push(u);
        }
        r
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        let mut r = vec![self.dq, self.dk, self.dv];
        r.extend(self.dbias);
        r
    }
}

/// Reads and checks one sdpa backward node into a [`SdpaBackwardStep`]: the forward's
/// operands and options (scale value / tensor / 1, causal and band, attn_mask additive or
/// BOOLEAN, grouped K/V heads), do and o `(B, H, S_q, D_v)`, stats `(B, H, S_q, 1)`, dq / dk /
/// dv in the dims of q / k / v, and dbias in the dims of an additive (non-BOOLEAN) attn_mask.
///
/// # Errors
/// `NOT_APPLICABLE` naming the attribute and value for what the engine cannot run — the
/// forward's refusals that the backward schema has (a non-zero dropout_probability, seq lens,
/// dropout seed / offset / mask / scale / inverse scale, alibi_mask, padding_mask) and a dbias
/// with a BOOLEAN mask — and for non-float operands, dims that do not agree, a dbias without an
/// attn_mask or with dims other than the mask's, and both causal flags set.
pub fn parse_backward(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<SdpaBackwardStep> {
    let a = node
        .attributes_as_sdpa_backward_attributes()
        .expect("type checked");
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
        (
            "dropout_scale_inv_tensor_uid",
            a.dropout_scale_inv_tensor_uid(),
        ),
    ] {
        cx.refuse_set(attr, u)?;
    }
    if a.alibi_mask() {
        return Err(cx.refuse("alibi_mask", true));
    }
    if a.padding_mask() {
        return Err(cx.refuse("padding_mask", true));
    }
    let f = |attr: &str, u: i64| cx.float(attr, u);
    let (q, k, v, o) = (
        f("q_tensor_uid", a.q_tensor_uid())?,
        f("k_tensor_uid", a.k_tensor_uid())?,
        f("v_tensor_uid", a.v_tensor_uid())?,
        f("o_tensor_uid", a.o_tensor_uid())?,
    );
    let (d_o, stats) = (
        f("do_tensor_uid", a.do_tensor_uid())?,
        f("stats_tensor_uid", a.stats_tensor_uid())?,
    );
    let (dq, dk, dv) = (
        f("dq_tensor_uid", a.dq_tensor_uid())?,
        f("dk_tensor_uid", a.dk_tensor_uid())?,
        f("dv_tensor_uid", a.dv_tensor_uid())?,
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
    let od = table::output_dims(&q.dims, &v.dims);
    cx.dims_eq("o_tensor_uid", o, &od)?;
    cx.dims_eq("do_tensor_uid", d_o, &od)?;
    cx.dims_eq("stats_tensor_uid", stats, &table::stats_dims(&q.dims))?;
    cx.dims_eq("dq_tensor_uid", dq, &q.dims)?;
    cx.dims_eq("dk_tensor_uid", dk, &k.dims)?;
    cx.dims_eq("dv_tensor_uid", dv, &v.dims)?;
    let mask = cx.opt("attn_mask_tensor_uid", a.attn_mask_tensor_uid())?;
    if let Some(u) = mask {
        cx.bcast("attn_mask_tensor_uid", &cx.tensors[&u], &[b, h, sq, skv])?;
    }
    let dbias = match (cx.opt("dbias_tensor_uid", a.dbias_tensor_uid())?, mask) {
        (None, _) => None,
        (Some(u), None) => {
            return Err(cx.bad(format!(
                "dbias_tensor_uid {u} is set but attn_mask_tensor_uid is absent"
            )));
        }
        (Some(u), Some(m)) => {
            let mt = &cx.tensors[&m];
            if mt.elem == Elem::Bool {
                return Err(cx.refuse(
                    "dbias_tensor_uid",
                    format!("(uid {u}) of a BOOLEAN attn_mask (uid {m})"),
                ));
            }
            let t = cx.float("dbias_tensor_uid", u)?;
            cx.dims_eq("dbias_tensor_uid", t, &mt.dims)?;
            Some(u)
        }
    };
    let scale = match (a.attn_scale_value(), a.scale_tensor_uid()) {
        (Some(s), _) => Scalar::Value(s),
        (None, Some(u)) => {
            cx.t("scale_tensor_uid", u)?;
            Scalar::Tensor(u)
        }
        (None, None) => Scalar::Value(1.0),
    };
    let band = band_of(
        cx,
        (a.causal_mask(), a.causal_mask_bottom_right()),
        a.diagonal_alignment(),
        a.left_bound(),
        a.right_bound(),
    )?;
    Ok(SdpaBackwardStep {
        q: q.uid,
        k: k.uid,
        v: v.uid,
        o: o.uid,
        d_o: d_o.uid,
        stats: stats.uid,
        dq: dq.uid,
        dk: dk.uid,
        dv: dv.uid,
        mask,
        scale,
        band,
        dbias,
    })
}

/// Runs one sdpa backward step on host arrays.
pub fn run_backward(
    s: &SdpaBackwardStep,
    env: &mut Env<'_, '_, '_>,
    e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let (q, k, v) = (env.get(s.q)?, env.get(s.k)?, env.get(s.v)?);
    let (o, d_o, stats) = (env.get(s.o)?, env.get(s.d_o)?, env.get(s.stats)?);
    let scale = match s.scale {
        Scalar::Value(v) => v,
        Scalar::Tensor(u) => env.scalar(u)?,
    };
    let mv = match s.mask {
        Some(u) => Some((env.get(u)?, env.desc(u).elem == Elem::Bool)),
        None => None,
    };
    // dbias in rank 4 (leading 1s): the reduction's output dims; stored in its own dims.
    let dbias_dims = s.dbias.map(|u| {
        let dd = &env.desc(u).dims;
        let mut d4 = vec![1usize; table::RANK.saturating_sub(dd.len())];
        d4.extend(dd);
        d4
    });
    let inputs = kernel::SdpaBwdInputs {
        q: &q,
        k: &k,
        v: &v,
        o: &o,
        d_o: &d_o,
        stats: &stats,
    };
    let r = kernel::sdpa_backward(
        &inputs,
        scale,
        mv.as_ref().map(|(a, b)| (&**a, *b)),
        s.band,
        dbias_dims.as_deref(),
    )
    .map_err(e)?;
    env.put(s.dq, r.dq)?;
    env.put(s.dk, r.dk)?;
    env.put(s.dv, r.dv)?;
    if let (Some(u), Some(db)) = (s.dbias, r.dbias) {
        env.put(u, db)?;
    }
    Ok(())
}
