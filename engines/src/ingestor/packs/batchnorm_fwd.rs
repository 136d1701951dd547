//! Batchnorm forward pack, contract `hipkernel.batchnorm_fwd.dispatch.v1`: batchnorm inference
//! and batchnorm training forward on the Triton kernels of
//! `engines/kernels/triton/batchnorm_fwd.py`; inference is ONE launch, training TWO launches of
//! one code object (a statistics launch into the workspace, then the normalize launch).
//!
//! Graphs served: one `batchnorm_inference` node (x, mean, inv_variance, scale, bias, y), one
//! `batchnorm_inference_variance_ext` node (x, mean, variance, scale, bias, epsilon, y) or one
//! `batchnorm` (training forward) node (x, scale, bias, epsilon, y, optional saved mean and
//! inv_variance, optional running statistics: prev running mean and variance, momentum, next
//! running mean and variance, all five or none; no peer statistics), with the CPU reference
//! engine's semantics (`reference/nodes/norm.rs`, `reference/ops/norm.rs`): x is `(N, C, …)`
//! with the channel axis 1; f32 arithmetic; training statistics per channel over N and the
//! spatial dims, population variance; `inv = 1/sqrt(var + epsilon)` (IEEE sqrt and division;
//! the variance form computes it from its variance tensor); `y = (x − mean)·inv·scale + bias`,
//! each product rounded (no FP contraction), so f32 inference gives the reference's bits;
//! running statistics `next_mean = (1 − momentum)·prev_mean + momentum·mean`, `next_var =
//! (1 − momentum)·prev_var + momentum·var·unbias`, `unbias = cnt/(cnt − 1)` in f32 (`cnt` =
//! N·spatial; 1 when cnt is 1). Every output is rounded to its tensor's type.
//!
//! Layout the pack needs (else `NOT_APPLICABLE` naming the tensor): x at least 2-D, y of x's
//! dims, each with its spatial axes (2..) collapsing to one stride (NCHW, NHWC, NCDHW, …,
//! any strides that do) and strides in [0, 2147483647]; when both x and y allow it (N = 1,
//! spatial volume 1, or the batch stride = spatial volume × spatial stride, as in NHWC), the
//! batch is merged into the positions, so the kernel sees `x[n, c, s]` with n < `n`, c < `c`,
//! s < `s`. scale, bias and the inference mean / variance tensors broadcast per channel (dims
//! right-aligned to x: 1 everywhere except x's channel axis, which is C or 1); the saved mean /
//! inv_variance and the four running tensors hold C values whose dims collapse to one stride.
//! x is f32, f16 or bf16; y and every per-channel tensor is of x's type or f32. epsilon and
//! momentum are scalars whose value the graph holds (pass-by-value, not runtime) of type
//! FLOAT, HALF or BFLOAT16 (the value rounded to that type, as the reference engine reads
//! it). The kernel's element offsets are int64; `n`, `c`, `s` and `n·s` must each be at most
//! [`MAX_EXTENT`] (2^30: its int32 position and channel counters stay below 2^31).
//!
//! Entries: `batchnorm_fwd_<dtype>_<spec|nchw|generic>_<bm>x<bn>x1_g1_w<w>_s1_sh<shared>_ws<warp>`,
//! `bm` the tile's length along the unit-stride axis, `bn` along the other (2048 elements a
//! tile). `spec` (kernel `hipdnn_batchnorm_fwd_cl`, channels-last): unit channel strides of x
//! and y, C and x's and y's other strides multiples of 16, 16-byte aligned x and y (checked at
//! execute, `BAD_PARAM`); `nchw` (kernel `hipdnn_batchnorm_fwd_cf`, channels-first): unit
//! spatial strides, the spatial size `s` and the other strides multiples of 16, 16-byte aligned
//! x and y; `generic` (kernel `hipdnn_batchnorm_fwd`): any strides, the channels-first path
//! (flags bit 32) when x and y have unit spatial strides and `s` > 1, else the channels-last
//! path. **Static rule**: spec, then nchw, then generic; the channels-last path takes the
//! 16×128 tile (16 channels); the channels-first path takes the longest of 1024, 256, 64 and 16
//! positions whose padding `cdiv(s, bm)·bm` stays within 4/3 of `s` (16 when none does): other
//! tiles are refused. `splits` (the programs along grid y): `min(cdiv(1024, channel blocks),
//! pairs)` and, for training, at most `max(1, isqrt(pairs·tp / 12))` (every normalize program
//! sums all the splits' partials; this keeps that below a quarter of its own x traffic), then
//! `cdiv(pairs, cdiv(pairs, splits))` so no split is empty (`pairs` = `n·cdiv(s, tp)`).
//!
//! Launch values (int unless said): `x.uid`, `scale.uid`, `bias.uid`, `y.uid`; `mean.uid` and
//! `var.uid` (the inv_variance or variance tensor) exactly when `flags` bit 1 is clear;
//! `saved_mean.uid` iff bit 4, `saved_inv.uid` iff bit 8; `running_mean.uid`,
//! `running_var.uid`, `next_mean.uid`, `next_var.uid` iff bit 16; `dtype` (1 f32, 2 f16, 3
//! bf16); `n c s` in [1, 2^30] with `n·s` ≤ 2^30; the element strides `sxn sxc sxs syn syc sys`
//! (x, y) and `ssc sbc smc svc ssm ssi snm snv` (scale, bias, the m slot: mean or running
//! mean, the v slot: var or running var, saved mean, saved inv, next mean, next var; 0 for an
//! absent tensor or one value) in [0, 2147483647]; `flags` in [0, 32767] (the kernel's: 1
//! training, 2 variance form, 4 saved mean, 8 saved inv, 16 running statistics, 32
//! channels-first path of the generic entry, then the f32 bits 64 scale, 128 bias, 256 y, 512
//! m, 1024 v, 2048 saved mean, 4096 saved inv, 8192 next mean, 16384 next var; bit 2 only
//! without bit 1, bits 4, 8, 16 only with it); `splits` in [1, min(65535, pairs)]; `epsilon`
//! (float, an f32 value) iff bit 1 or 2; `momentum` (float, an f32 value) iff bit 16; and
//! `spec` (0 generic, 1 spec, 2 nchw), `block_m` in [1, 4096], `block_n` in [1, 4096],
//! `num_warps` in [1, 16], `warp_size` (32 or 64), `shared_bytes` in [0, 262144].
//!
//! Launch: grid (cdiv(c, tc), splits, 1) with `tc` = `block_n` on the channels-first path
//! (nchw, or generic with bit 32) and `block_m` otherwise; block num_warps·warp_size; dynamic
//! shared memory `shared_bytes`; scratch pointers null. Workspace: 0 for inference; training
//! `(2·splits + 1)·c` f32 (4-byte aligned device memory, checked at execute), filled by the
//! prologue launch (`phase` 0, same grid) before the main launch (`phase` 2). Kernel
//! arguments: x, scale, bias, y, m, v, saved mean, saved inv, next mean, next var (null when
//! absent), the workspace (null for inference), `N C S`, the strides (`spec` drops `sxc syc`,
//! `nchw` drops `sxs sys`), `flags splits phase` (`by_value` 4), `eps momentum unbias`
//! (`by_value` 4, f32; 0 when unused), the two scratch pointers.

use crate::ingestor::framework::prelude::*;

/// The versioned contract name.
pub const BATCHNORM_FWD_V1: &str = "hipkernel.batchnorm_fwd.dispatch.v1";

/// `flags` bit: training forward (statistics from x; two launches).
pub const FLAG_TRAINING: i64 = 1;
/// `flags` bit: inference variance form (`inv = 1/sqrt(variance + epsilon)`).
pub const FLAG_VARIANCE: i64 = 2;
/// `flags` bit: the saved mean is written (training).
pub const FLAG_SAVED_MEAN: i64 = 4;
/// `flags` bit: the saved inv_variance is written (training).
pub const FLAG_SAVED_INV: i64 = 8;
/// `flags` bit: running statistics are read and written (training).
pub const FLAG_RUNNING: i64 = 16;
/// `flags` bit: the generic entry's channels-first path (unit spatial strides of x and y).
pub const FLAG_CHANNELS_FIRST: i64 = 32;
/// `flags` bit: the scale is f32 (else x's type).
pub const FLAG_SCALE_F32: i64 = 64;
/// `flags` bit: the bias is f32.
pub const FLAG_BIAS_F32: i64 = 128;
/// `flags` bit: y is f32.
pub const FLAG_Y_F32: i64 = 256;
/// `flags` bit: the m slot (inference mean or prev running mean) is f32.
pub const FLAG_M_F32: i64 = 512;
/// `flags` bit: the v slot (inference inv_variance / variance or prev running variance) is f32.
pub const FLAG_V_F32: i64 = 1024;
/// `flags` bit: the saved mean is f32.
pub const FLAG_SAVED_MEAN_F32: i64 = 2048;
/// `flags` bit: the saved inv_variance is f32.
pub const FLAG_SAVED_INV_F32: i64 = 4096;
/// `flags` bit: the next running mean is f32.
pub const FLAG_NEXT_MEAN_F32: i64 = 8192;
/// `flags` bit: the next running variance is f32.
pub const FLAG_NEXT_VAR_F32: i64 = 16384;

pub use crate::ingestor::framework::channels::{
    MAX_EXTENT, TARGET_PROGRAMS, TILES, rule_block_m, rule_splits,
};

/// Stride value names, in kernel order.
const STRIDES: [&str; 14] = [
    "sxn", "sxc", "sxs", "syn", "syc", "sys", "ssc", "sbc", "smc", "svc", "ssm", "ssi", "snm",
    "snv",
];
/// Optional UID value names, the `flags` bit that governs each and whether the value is
/// present when the bit is set (true) or clear (false).
const FLAGGED: [(&str, i64, bool); 8] = [
    ("mean.uid", FLAG_TRAINING, false),
    ("var.uid", FLAG_TRAINING, false),
    ("saved_mean.uid", FLAG_SAVED_MEAN, true),
    ("saved_inv.uid", FLAG_SAVED_INV, true),
    ("running_mean.uid", FLAG_RUNNING, true),
    ("running_var.uid", FLAG_RUNNING, true),
    ("next_mean.uid", FLAG_RUNNING, true),
    ("next_var.uid", FLAG_RUNNING, true),
];
/// The kernel's tensor pointers, each with the launch values that may give its UID.
const POINTERS: [(&str, &[&str]); 10] = [
    ("x_ptr", &["x.uid"]),
    ("scale_ptr", &["scale.uid"]),
    ("bias_ptr", &["bias.uid"]),
    ("y_ptr", &["y.uid"]),
    ("m_ptr", &["mean.uid", "running_mean.uid"]),
    ("v_ptr", &["var.uid", "running_var.uid"]),
    ("sm_ptr", &["saved_mean.uid"]),
    ("si_ptr", &["saved_inv.uid"]),
    ("nm_ptr", &["next_mean.uid"]),
    ("nv_ptr", &["next_var.uid"]),
];

/// Whether stride `i` (an index into the stride names) is a kernel argument of `variant` (0
/// generic, 1 spec: drops `sxc syc`, 2 nchw: drops `sxs sys`).
fn takes_stride(variant: i64, i: usize) -> bool {
    !(variant == 1 && (i == 1 || i == 4) || variant == 2 && (i == 2 || i == 5))
}

/// The kernel parameter names of `variant` (the `spec` launch value: 0 generic, 1 spec, 2
/// nchw), in order (with the two scratch pointers).
pub fn param_names(variant: i64) -> Vec<&'static str> {
    let mut v: Vec<&str> = POINTERS.iter().map(|p| p.0).collect();
    v.extend(["ws_ptr", "N", "C", "S"]);
    v.extend(
        STRIDES
            .iter()
            .enumerate()
            .filter(|(i, _)| takes_stride(variant, *i))
            .map(|(_, n)| *n),
    );
    v.extend([
        "flags",
        "splits",
        "phase",
        "eps",
        "momentum",
        "unbias",
        "global_scratch",
        "profile_scratch",
    ]);
    v
}

/// The kernel signature of `variant` (natural layout, named): pointers `global_buffer` 8,
/// integers and floats `by_value` 4.
pub fn signature(variant: i64) -> Vec<KernelArgument> {
    natural_signature(param_names(variant))
}

fn cdiv(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchnormFwdInputs {
    /// UIDs of x, scale, bias and y.
    pub uids: [i64; 4],
    /// Inference mean and inv_variance / variance UIDs (`flags` bit 1 clear).
    pub stats_uids: Option<[i64; 2]>,
    /// Saved mean UID (bit 4).
    pub saved_mean_uid: Option<i64>,
    /// Saved inv_variance UID (bit 8).
    pub saved_inv_uid: Option<i64>,
    /// prev running mean, prev running variance, next running mean, next running variance
    /// UIDs (bit 16).
    pub running_uids: Option<[i64; 4]>,
    /// x's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// n, c, s (after the batch merge).
    pub shape: [i64; 3],
    /// sxn sxc sxs syn syc sys ssc sbc smc svc ssm ssi snm snv (elements).
    pub strides: [i64; 14],
    /// The kernel's flags (module docs).
    pub flags: i64,
    /// Programs along grid y.
    pub splits: i64,
    /// Epsilon (bit 1 or 2).
    pub epsilon: Option<f32>,
    /// Momentum (bit 16).
    pub momentum: Option<f32>,
    /// Kernel configuration.
    pub config: TritonConfig,
}

impl BatchnormFwdInputs {
    /// Whether this is a training launch (two launches, a workspace).
    pub fn training(&self) -> bool {
        self.flags & FLAG_TRAINING != 0
    }

    /// Whether the kernel takes the channels-first path (nchw, or generic with bit 32).
    pub fn channels_first(&self) -> bool {
        self.config.channels_first || (!self.config.spec && self.flags & FLAG_CHANNELS_FIRST != 0)
    }

    /// (channels per tile, positions per tile).
    pub fn tile(&self) -> (i64, i64) {
        let [m, n, _] = self.config.block;
        if self.channels_first() {
            (n, m)
        } else {
            (m, n)
        }
    }

    /// Channel blocks (grid x).
    pub fn channel_blocks(&self) -> i64 {
        cdiv(self.shape[1], self.tile().0)
    }

    /// The (image, position block) pairs the splits cut: `n·cdiv(s, tp)`.
    pub fn pairs(&self) -> i64 {
        self.shape[0] * cdiv(self.shape[2], self.tile().1)
    }

    /// Whether the layout satisfies the spec (channels-last) hints; alignment at execute.
    pub fn fits_spec(&self) -> bool {
        self.fits_hints(1, [0, 2, 3, 5])
    }

    /// Whether the layout satisfies the nchw (channels-first) hints; alignment at execute.
    pub fn fits_nchw(&self) -> bool {
        self.fits_hints(2, [0, 1, 3, 4])
    }

    /// The hints of a variant whose inner axis is `inner` (1 channels, 2 positions): x's and
    /// y's strides of that axis 1, its extent and the `div16` strides multiples of 16.
    fn fits_hints(&self, inner: usize, div16: [usize; 4]) -> bool {
        let s = self.strides;
        s[inner] == 1
            && s[inner + 3] == 1
            && self.shape[inner] % 16 == 0
            && div16.iter().all(|&i| s[i] % 16 == 0)
    }

    /// Workspace bytes: `(2·splits + 1)·c·4` for training, else 0.
    pub fn workspace_bytes(&self) -> u64 {
        if !self.training() {
            return 0;
        }
        (2 * self.splits as u64 + 1) * self.shape[1] as u64 * 4
    }

    /// `cnt/(cnt − 1)` in f32 for `cnt = n·s` (1 when cnt is 1), as the reference engine
    /// computes it.
    pub fn unbias(&self) -> f32 {
        let cnt = self.shape[0] * self.shape[2];
        if cnt > 1 {
            cnt as f32 / (cnt - 1) as f32
        } else {
            1.0
        }
    }
}

/// The node's tensors as the pack reads them.
struct BnNode {
    x: i64,
    scale: i64,
    bias: i64,
    y: i64,
    /// Inference mean and inv_variance / variance.
    stats: Option<[i64; 2]>,
    /// The inference variance form.
    variance: bool,
    eps: Option<i64>,
    saved_mean: Option<i64>,
    saved_inv: Option<i64>,
    /// prev mean, prev variance, momentum, next mean, next variance.
    running: Option<[i64; 5]>,
}

fn read_node(node: &Node<'_>) -> PluginResult<BnNode> {
    // The two inference forms differ only in their variance tensor (inv_variance, or the
    // variance with an epsilon).
    macro_rules! inference {
        ($a:expr, $var:ident, $eps:expr) => {{
            let eps: Option<i64> = $eps;
            BnNode {
                x: $a.x_tensor_uid(),
                scale: $a.scale_tensor_uid(),
                bias: $a.bias_tensor_uid(),
                y: $a.y_tensor_uid(),
                stats: Some([$a.mean_tensor_uid(), $a.$var()]),
                variance: eps.is_some(),
                eps,
                saved_mean: None,
                saved_inv: None,
                running: None,
            }
        }};
    }
    if let Some(a) = node.attributes_as_batchnorm_inference_attributes() {
        return Ok(inference!(a, inv_variance_tensor_uid, None));
    }
    if let Some(a) = node.attributes_as_batchnorm_inference_attributes_variance_ext() {
        return Ok(inference!(
            a,
            variance_tensor_uid,
            Some(a.epsilon_tensor_uid())
        ));
    }
    if let Some(a) = node.attributes_as_batchnorm_attributes() {
        if let Some(p) = a.peer_stats_tensor_uid().filter(|p| !p.is_empty()) {
            return Err(na(format!(
                "the batchnorm_fwd pack does not serve peer statistics (peer_stats_tensor_uid {:?})",
                p.iter().collect::<Vec<_>>()
            )));
        }
        let r = [
            a.prev_running_mean_tensor_uid(),
            a.prev_running_variance_tensor_uid(),
            a.momentum_tensor_uid(),
            a.next_running_mean_tensor_uid(),
            a.next_running_variance_tensor_uid(),
        ];
        let running = match r {
            [None, None, None, None, None] => None,
            [Some(pm), Some(pv), Some(m), Some(nm), Some(nv)] => Some([pm, pv, m, nm, nv]),
            _ => {
                return Err(na(
                    "the batchnorm_fwd pack needs all or none of prev_running_mean, prev_running_variance, momentum, next_running_mean and next_running_variance",
                ));
            }
        };
        return Ok(BnNode {
            x: a.x_tensor_uid(),
            scale: a.scale_tensor_uid(),
            bias: a.bias_tensor_uid(),
            y: a.y_tensor_uid(),
            stats: None,
            variance: false,
            eps: Some(a.epsilon_tensor_uid()),
            saved_mean: a.mean_tensor_uid(),
            saved_inv: a.inv_variance_tensor_uid(),
            running,
        });
    }
    Err(na(
        "the batchnorm_fwd pack serves a batchnorm (training forward), batchnorm_inference or batchnorm_inference_variance_ext node",
    ))
}

fn read_graph(graph: &OperationGraph) -> PluginResult<BatchnormFwdInputs> {
    let node = one_node(
        graph,
        "batchnorm_fwd",
        "batchnorm, batchnorm_inference or batchnorm_inference_variance_ext",
    )?;
    let b = read_node(&node)?;
    let xt = tensor(graph, b.x)?;
    let dtype = float_dtype(&xt, "batchnorm_fwd", "x")?;
    let yt = tensor(graph, b.y)?;
    let (view, st) = Channels::read("batchnorm_fwd", &xt, &[("y", &yt)])?;
    let [[sxn, sxc, sxs], [syn, syc, sys]] = [st[0], st[1]];
    let [n_k, c, s_k] = view.shape;
    let typed =
        |what: &str, t: &TensorAttributes<'_>, bit| f32_bit(t, dtype, "batchnorm_fwd", what, bit);
    let mut flags = typed("y", &yt, FLAG_Y_F32)?;
    // A per-channel input: dims right-aligned to x, 1 everywhere but x's channel axis.
    let per_channel_in = |what: &str, u: i64, bit: i64| -> PluginResult<(i64, i64)> {
        let t = tensor(graph, u)?;
        let bit = typed(what, &t, bit)?;
        Ok((view.per_channel_in(what, &t, false)?, bit))
    };
    // A per-channel output or running tensor: C values whose dims collapse to one stride.
    let per_channel = |what: &str, u: i64, bit: i64| -> PluginResult<(i64, i64)> {
        let t = tensor(graph, u)?;
        let bit = typed(what, &t, bit)?;
        Ok((view.per_channel(what, &t)?, bit))
    };
    let (ssc, f) = per_channel_in("scale", b.scale, FLAG_SCALE_F32)?;
    flags |= f;
    let (sbc, f) = per_channel_in("bias", b.bias, FLAG_BIAS_F32)?;
    flags |= f;
    let [mut smc, mut svc, mut ssm, mut ssi, mut snm, mut snv] = [0i64; 6];
    let mut running_uids = None;
    let mut momentum = None;
    if let Some([m, v]) = b.stats {
        let (st, f) = per_channel_in("mean", m, FLAG_M_F32)?;
        smc = st;
        flags |= f;
        let what = if b.variance {
            "variance"
        } else {
            "inv_variance"
        };
        let (st, f) = per_channel_in(what, v, FLAG_V_F32)?;
        svc = st;
        flags |= f;
        if b.variance {
            flags |= FLAG_VARIANCE;
        }
    } else {
        flags |= FLAG_TRAINING;
        if let Some(u) = b.saved_mean {
            let (st, f) = per_channel("the saved mean", u, FLAG_SAVED_MEAN_F32)?;
            ssm = st;
            flags |= FLAG_SAVED_MEAN | f;
        }
        if let Some(u) = b.saved_inv {
            let (st, f) = per_channel("the saved inv_variance", u, FLAG_SAVED_INV_F32)?;
            ssi = st;
            flags |= FLAG_SAVED_INV | f;
        }
        if let Some([pm, pv, mo, nm, nv]) = b.running {
            let (st, f) = per_channel("prev_running_mean", pm, FLAG_M_F32)?;
            smc = st;
            flags |= f;
            let (st, f) = per_channel("prev_running_variance", pv, FLAG_V_F32)?;
            svc = st;
            flags |= f;
            let (st, f) = per_channel("next_running_mean", nm, FLAG_NEXT_MEAN_F32)?;
            snm = st;
            flags |= f;
            let (st, f) = per_channel("next_running_variance", nv, FLAG_NEXT_VAR_F32)?;
            snv = st;
            flags |= FLAG_RUNNING | f;
            momentum = Some(scalar_value(
                &tensor(graph, mo)?,
                "batchnorm_fwd",
                "momentum",
            )?);
            running_uids = Some([pm, pv, nm, nv]);
        }
    }
    let epsilon = match b.eps {
        Some(u) => Some(scalar_value(
            &tensor(graph, u)?,
            "batchnorm_fwd",
            "epsilon",
        )?),
        None => None,
    };
    Ok(BatchnormFwdInputs {
        uids: [b.x, b.scale, b.bias, b.y],
        stats_uids: b.stats,
        saved_mean_uid: b.saved_mean,
        saved_inv_uid: b.saved_inv,
        running_uids,
        dtype: dtype.0,
        shape: [n_k, c, s_k],
        strides: [
            sxn, sxc, sxs, syn, syc, sys, ssc, sbc, smc, svc, ssm, ssi, snm, snv,
        ],
        flags,
        splits: 1,
        epsilon,
        momentum,
        config: TritonConfig::parse("batchnorm_fwd_f32_generic_16x128x1_g1_w4_s1_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    })
}

crate::triton_handler!(BatchnormFwdHandler = BatchnormFwdInputs);

/// Whether saved launch values name a training launch (`flags` bit 1).
fn is_training(launch: &PreparedLaunch) -> bool {
    matches!(launch.launch_values.get("flags"), Some(LaunchValue::Int(f)) if f & FLAG_TRAINING != 0)
}

fn variant_of(values: &LaunchValues) -> i64 {
    match values.get("spec") {
        Some(LaunchValue::Int(v)) => *v,
        _ => 0,
    }
}

impl TritonFamily for BatchnormFwdInputs {
    const FAMILY: &'static str = "batchnorm_fwd";
    const CONTRACT: &'static str = BATCHNORM_FWD_V1;
    #[rustfmt::skip]
    const VALUES: &'static [IntValue] = &concat::<40>(&[
        &[int("flags", 0, 32767)],
        &[uid("mean.uid"), uid("var.uid"), uid("saved_mean.uid"), uid("saved_inv.uid")],
        &[uid("running_mean.uid"), uid("running_var.uid"), uid("next_mean.uid"), uid("next_var.uid")],
        &[float("epsilon"), float("momentum")],
        &[int("n", 1, MAX_EXTENT), int("c", 1, MAX_EXTENT), int("s", 1, MAX_EXTENT)],
        &strides(STRIDES),
        &tile_config(2, (1, 4096), (1, 4096)),
        &[uid("x.uid"), uid("scale.uid"), uid("bias.uid"), uid("y.uid"), int("dtype", 1, 3)],
        &[int("splits", 1, 65_535)],
    ]);
    /// Kernel order: the m slot (mean or running mean) and the v slot (var or running var)
    /// each hold one of their two values.
    const POINTERS: &'static [&'static str] = &[
        "x.uid",
        "scale.uid",
        "bias.uid",
        "y.uid",
        "mean.uid",
        "running_mean.uid",
        "var.uid",
        "running_var.uid",
        "saved_mean.uid",
        "saved_inv.uid",
        "next_mean.uid",
        "next_var.uid",
    ];
    const ALIGNED: &'static [&'static str] = &["x.uid", "y.uid"];
    const ALIGNED_TEXT: &'static str = "16-byte aligned x and y";
    const OPTIONAL: &'static [&'static str] = &[
        "mean.uid",
        "var.uid",
        "saved_mean.uid",
        "saved_inv.uid",
        "running_mean.uid",
        "running_var.uid",
        "next_mean.uid",
        "next_var.uid",
        "epsilon",
        "momentum",
    ];

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        read_graph(graph)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    /// The variant's hints, then the static rule (module docs): `kernel <k> is not a packed
    /// batchnorm_fwd entry`; `kernel <k> is the spec variant; …`; `kernel <k> is the nchw
    /// variant; …`; `kernel <k>: static rule: …`.
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        if config.transposing || config.b_col {
            return Err(na(format!(
                "kernel {} is not a packed batchnorm_fwd entry",
                kernel.describe()
            )));
        }
        spec_hints(
            kernel,
            &config,
            self.fits_spec(),
            "unit channel strides of x and y, C and their other strides multiples of 16",
        )?;
        if config.channels_first && !self.fits_nchw() {
            return Err(na(format!(
                "kernel {} is the nchw variant; the graph's layout does not satisfy its hints (unit spatial strides of x and y, the spatial size and their other strides multiples of 16)",
                kernel.describe()
            )));
        }
        let st = self.strides;
        if !config.spec && !config.channels_first && st[2] == 1 && st[5] == 1 && self.shape[2] > 1 {
            self.flags |= FLAG_CHANNELS_FIRST;
        }
        self.config = config;
        let cf = self.channels_first();
        let want = rule_block_m(cf, self.shape[2]);
        if self.config.block[0] != want {
            let path = if cf {
                format!("channels-first path over {} positions", self.shape[2])
            } else {
                "channels-last path".to_string()
            };
            return Err(na(format!(
                "kernel {}: static rule: the {path} takes the tile {want} long on the unit-stride axis, not {}",
                kernel.describe(),
                self.config.block[0]
            )));
        }
        self.splits = rule_splits(
            self.pairs(),
            self.channel_blocks(),
            self.tile().1,
            self.training(),
        );
        Ok(())
    }

    #[rustfmt::skip]
    fn ints(&self) -> Vec<i64> {
        let (c, u, sh, st) = (&self.config, self.uids, self.shape, self.strides);
        let opt = |o: Option<i64>| o.unwrap_or(0);
        let [m, v] = self.stats_uids.unwrap_or([0; 2]);
        let [rm, rv, nm, nv] = self.running_uids.unwrap_or([0; 4]);
        let mut out = vec![self.flags, m, v, opt(self.saved_mean_uid), opt(self.saved_inv_uid),
            rm, rv, nm, nv, slot_of(self.epsilon.unwrap_or(0.0)),
            slot_of(self.momentum.unwrap_or(0.0)), sh[0], sh[1], sh[2]];
        out.extend(st);
        out.extend(tile_config_ints(c));
        out.extend([u[0], u[1], u[2], u[3], self.dtype.into(), self.splits]);
        out
    }

    fn from_ints(v: &[i64]) -> Self {
        let flags = v[0];
        let has = |bit: i64| flags & bit != 0;
        let mut strides = [0i64; 14];
        strides.copy_from_slice(&v[14..28]);
        BatchnormFwdInputs {
            uids: [v[34], v[35], v[36], v[37]],
            stats_uids: Some([v[1], v[2]]).filter(|_| !has(FLAG_TRAINING)),
            saved_mean_uid: Some(v[3]).filter(|_| has(FLAG_SAVED_MEAN)),
            saved_inv_uid: Some(v[4]).filter(|_| has(FLAG_SAVED_INV)),
            running_uids: Some([v[5], v[6], v[7], v[8]]).filter(|_| has(FLAG_RUNNING)),
            dtype: v[38] as i8,
            shape: [v[11], v[12], v[13]],
            strides,
            flags,
            splits: v[39],
            epsilon: Some(f32_of(v[9])).filter(|_| has(FLAG_TRAINING | FLAG_VARIANCE)),
            momentum: Some(f32_of(v[10])).filter(|_| has(FLAG_RUNNING)),
            config: tile_config_of(Self::FAMILY, &v[28..34]),
        }
    }

    /// The optional UIDs present exactly under their `flags` bit (`launch value '<n>' of
    /// dispatch '<d>' must be present exactly when 'flags' bit <b> is set|clear; flags is
    /// <f>`); epsilon (bits 1 or 2) and momentum (bit 16) likewise, each a float that f32
    /// holds exactly; `splits` in [1, min(65535, n·cdiv(s, tp))].
    fn read_value(r: &ValueReader<'_>, read: &[i64], i: usize) -> PluginResult<i64> {
        let (name, flags) = (Self::VALUES[i].name, read.first().copied().unwrap_or(0));
        let (present, d) = (r.has(name), r.dispatch());
        if let Some((_, bit, when_set)) = FLAGGED.iter().find(|o| o.0 == name) {
            if present != ((flags & bit != 0) == *when_set) {
                let state = if *when_set { "set" } else { "clear" };
                return Err(incompatible(format!(
                    "launch value '{name}' of dispatch '{d}' must be present exactly when 'flags' bit {bit} is {state}; flags is {flags}"
                )));
            }
            return if present { r.read(i) } else { Ok(0) };
        }
        let (bits, text) = match name {
            "epsilon" => (FLAG_TRAINING | FLAG_VARIANCE, "bit 1 or 2 is set"),
            "momentum" => (FLAG_RUNNING, "bit 16 is set"),
            "splits" => {
                let mut v = read.to_vec();
                v.push(1);
                return r.int(name, 1, Self::from_ints(&v).pairs().min(65_535));
            }
            _ => return r.read(i),
        };
        match (present, flags & bits != 0) {
            (false, false) => Ok(0),
            (true, true) => r.f32(name, false).map(slot_of),
            _ => Err(incompatible(format!(
                "launch value '{name}' of dispatch '{d}' must be present exactly when 'flags' {text}; flags is {flags}"
            ))),
        }
    }

    /// After the optional UIDs: `launch values of dispatch '<d>' hold flags <f>: bit 2
    /// (variance form) needs bit 1 clear, bits 4, 8 and 16 need bit 1 set`; after the shape:
    /// `… give n·s = <v>, above 1073741824`; after the config: `… name the spec variant, whose
    /// 'sxc' and 'syc' must be 1`, `… the nchw variant, whose 'sxs' and 'sys' must be 1`, `… set
    /// flags bit 32 (channels-first path), which needs the generic variant and 'sxs' = 'sys' =
    /// 1`.
    fn check_read(dispatch: &str, values: &LaunchValues, read: &[i64]) -> PluginResult<()> {
        let _ = values;
        let (d, flags) = (quote(dispatch), read[0]);
        let refuse = |what: String| {
            Err(incompatible(format!(
                "launch values of dispatch '{d}' {what}"
            )))
        };
        match Self::VALUES[read.len() - 1].name {
            "next_var.uid" => {
                let training = flags & FLAG_TRAINING != 0;
                if (flags & FLAG_VARIANCE != 0 && training)
                    || (flags & (FLAG_SAVED_MEAN | FLAG_SAVED_INV | FLAG_RUNNING) != 0 && !training)
                {
                    return refuse(format!(
                        "hold flags {flags}: bit 2 (variance form) needs bit 1 clear, bits 4, 8 and 16 need bit 1 set"
                    ));
                }
            }
            "s" if read[11] * read[13] > MAX_EXTENT => {
                return refuse(format!(
                    "give n·s = {}, above {MAX_EXTENT}",
                    read[11] * read[13]
                ));
            }
            "warp_size" => {
                let (variant, st) = (read[28], &read[14..28]);
                if variant == 1 && (st[1] != 1 || st[4] != 1) {
                    return refuse(
                        "name the spec variant, whose 'sxc' and 'syc' must be 1".to_string(),
                    );
                }
                if variant == 2 && (st[2] != 1 || st[5] != 1) {
                    return refuse(
                        "name the nchw variant, whose 'sxs' and 'sys' must be 1".to_string(),
                    );
                }
                if flags & FLAG_CHANNELS_FIRST != 0 && (variant != 0 || st[2] != 1 || st[5] != 1) {
                    return refuse("set flags bit 32 (channels-first path), which needs the generic variant and 'sxs' = 'sys' = 1".to_string());
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn present(&self, name: &str) -> bool {
        match name {
            "mean.uid" | "var.uid" => self.stats_uids.is_some(),
            "saved_mean.uid" => self.saved_mean_uid.is_some(),
            "saved_inv.uid" => self.saved_inv_uid.is_some(),
            "epsilon" => self.epsilon.is_some(),
            "momentum" => self.momentum.is_some(),
            _ => self.running_uids.is_some(),
        }
    }

    /// The geometry texts.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        param_names(i64::from(spec))
    }

    /// `N C S`, the variant's strides, `flags splits phase` (the main launch: phase 2).
    fn scalars(&self) -> Vec<i64> {
        let variant = self.config.variant_code();
        let mut ints: Vec<i64> = self.shape.to_vec();
        let strides = self.strides.iter().enumerate();
        ints.extend(
            strides
                .filter(|(i, _)| takes_stride(variant, *i))
                .map(|(_, v)| *v),
        );
        ints.extend([self.flags, self.splits, 2]);
        ints
    }

    /// `eps momentum unbias` (0 when unused).
    fn float_scalars(&self) -> Vec<f32> {
        vec![
            self.epsilon.unwrap_or(0.0),
            self.momentum.unwrap_or(0.0),
            self.unbias(),
        ]
    }

    /// Grid (cdiv(c, tc), splits, 1); `NOT_APPLICABLE` `launch values 'warp_size' and
    /// 'num_warps' of dispatch '<d>' give <t> threads per block; …`.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        Ok(block_geometry(
            c,
            [self.channel_blocks() as u32, self.splits as u32, 1],
            threads,
        ))
    }

    fn workspace_bytes(&self) -> u64 {
        BatchnormFwdInputs::workspace_bytes(self)
    }

    fn signature_for(values: &LaunchValues) -> Vec<KernelArgument> {
        signature(variant_of(values))
    }

    /// x, scale, bias, y, m, v, saved mean, saved inv, next mean, next var (null when absent),
    /// the workspace (null for inference or without one), the integers and floats, two null
    /// scratch pointers. A spec or nchw launch refuses (BAD_PARAM) x or y addresses that are
    /// not 16-byte aligned; a training launch given a workspace refuses one that is null or
    /// not 4-byte aligned.
    ///
    /// # Errors
    /// `BAD_PARAM` `tensor UID <u> is at <addr>; this plan runs the specialized batchnorm_fwd
    /// kernel, which needs 16-byte aligned x and y`; `the variant pack binds no memory to
    /// tensor UID <u>`; `tensor UID <u> is bound to host memory; the ingestor launches on
    /// device memory`; `the workspace is at <addr>; this plan runs batchnorm training, whose
    /// statistics launch needs a 4-byte aligned device workspace`.
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let hinted = variant_of(&launch.launch_values) != 0;
        let mut out = Vec::with_capacity(launch.scalar_args.len() + 13);
        for (ptr, names) in POINTERS {
            let uid = names
                .iter()
                .find_map(|n| match launch.launch_values.get(*n) {
                    Some(LaunchValue::Int(u)) => Some(*u),
                    _ => None,
                });
            let Some(uid) = uid else {
                out.push(KernelArgValue::Pointer(0));
                continue;
            };
            let addr = crate::ingestor::dispatch::device_addr(tensors, uid)?;
            if hinted && (ptr == "x_ptr" || ptr == "y_ptr") && addr % 16 != 0 {
                return Err(PluginError::bad_param(format!(
                    "tensor UID {uid} is at {addr:#x}; this plan runs the specialized batchnorm_fwd kernel, which needs 16-byte aligned x and y"
                )));
            }
            out.push(KernelArgValue::Pointer(addr));
        }
        let ws = match workspace {
            Some(ws) if is_training(launch) => {
                if ws == 0 || ws % 4 != 0 {
                    return Err(PluginError::bad_param(format!(
                        "the workspace is at {ws:#x}; this plan runs batchnorm training, whose statistics launch needs a 4-byte aligned device workspace"
                    )));
                }
                ws
            }
            _ => 0,
        };
        out.push(KernelArgValue::Pointer(ws));
        out.extend_from_slice(&launch.scalar_args);
        out.push(KernelArgValue::Pointer(0));
        out.push(KernelArgValue::Pointer(0));
        Ok(out)
    }

    /// Training: the statistics launch, the same arguments with `phase` 0 on the main
    /// launch's geometry. Inference: none.
    fn prologue_launches(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
        if !is_training(launch) {
            return Vec::new();
        }
        let names = param_names(variant_of(&launch.launch_values));
        let Some(phase) = names.iter().position(|n| *n == "phase") else {
            return Vec::new();
        };
        if args.len() != names.len() {
            return Vec::new();
        }
        let mut pargs = args.to_vec();
        pargs[phase] = KernelArgValue::I32(0);
        vec![(launch.geometry, pargs)]
    }
}
