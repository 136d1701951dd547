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

use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::framework::graph::dims_strides;
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::framework::graph::{collapse, na};
use crate::ingestor::framework::triton::TritonConfig;
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::{DataType, Node, TensorAttributes};
use hipdnn_schema::tensor_value::{TensorValue, read_tensor_value};

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

/// The largest `n`, `c`, `s` and `n·s` the kernel takes (2^30).
pub const MAX_EXTENT: i64 = 1 << 30;
/// Programs the static rule aims at per launch.
pub const TARGET_PROGRAMS: i64 = 1024;
/// The family's tiles (`block_m` along the unit-stride axis, `block_n` along the other),
/// longest `block_m` first.
pub const TILES: [(i64, i64); 4] = [(1024, 2), (256, 8), (64, 32), (16, 128)];

/// Shape value names (kernel `N C S`).
const SHAPE: [&str; 3] = ["n", "c", "s"];
/// Stride value names, in kernel order.
const STRIDES: [&str; 14] = [
    "sxn", "sxc", "sxs", "syn", "syc", "sys", "ssc", "sbc", "smc", "svc", "ssm", "ssi", "snm",
    "snv",
];
/// Config value names.
const CONFIG: [&str; 6] = [
    "spec",
    "block_m",
    "block_n",
    "num_warps",
    "warp_size",
    "shared_bytes",
];
/// Optional UID value names, the `flags` bit that governs each and whether the value is
/// present when the bit is set (true) or clear (false).
const OPTIONAL: [(&str, i64, bool); 8] = [
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

/// Every value name of the contract (sorted).
pub fn value_names() -> Vec<&'static str> {
    let mut v = vec![
        "x.uid",
        "scale.uid",
        "bias.uid",
        "y.uid",
        "dtype",
        "flags",
        "splits",
        "epsilon",
        "momentum",
    ];
    v.extend(OPTIONAL.iter().map(|o| o.0));
    v.extend(SHAPE);
    v.extend(STRIDES);
    v.extend(CONFIG);
    v.sort_unstable();
    v
}

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
    let mut off = 0u32;
    param_names(variant)
        .into_iter()
        .map(|n| {
            let (kind, size) = if n.ends_with("_ptr") || n.ends_with("scratch") {
                ("global_buffer", 8)
            } else {
                ("by_value", 4)
            };
            off = off.div_ceil(size) * size;
            let a = KernelArgument::named(kind, size, off, n);
            off += size;
            a
        })
        .collect()
}

fn cdiv(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// The static rule's `block_m` for a path: 16 for channels-last; for channels-first the
/// longest of [`TILES`] whose padding `cdiv(s, bm)·bm` stays within 4/3 of `s` (16 when none
/// does).
pub fn rule_block_m(channels_first: bool, s: i64) -> i64 {
    if !channels_first {
        return 16;
    }
    TILES
        .iter()
        .map(|t| t.0)
        .find(|&m| cdiv(s, m) * m * 3 <= 4 * s)
        .unwrap_or(16)
}

/// The static rule's `splits` for `pairs` (n, position block) pairs over `cblocks` channel
/// blocks of positions-per-tile `tp` (module docs).
pub fn rule_splits(pairs: i64, cblocks: i64, tp: i64, training: bool) -> i64 {
    let mut sp = cdiv(TARGET_PROGRAMS, cblocks).min(pairs);
    if training {
        sp = sp.min((pairs.saturating_mul(tp) / 12).isqrt());
    }
    let sp = sp.max(1);
    cdiv(pairs, cdiv(pairs, sp))
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
        let s = self.strides;
        s[1] == 1
            && s[4] == 1
            && self.shape[1] % 16 == 0
            && [s[0], s[2], s[3], s[5]].iter().all(|v| v % 16 == 0)
    }

    /// Whether the layout satisfies the nchw (channels-first) hints; alignment at execute.
    pub fn fits_nchw(&self) -> bool {
        let s = self.strides;
        s[2] == 1
            && s[5] == 1
            && self.shape[2] % 16 == 0
            && [s[0], s[1], s[3], s[4]].iter().all(|v| v % 16 == 0)
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

    /// The launch values.
    pub fn to_values(&self) -> LaunchValues {
        let mut v = LaunchValues::new();
        let mut put = |n: &str, x: i64| {
            v.insert(n.to_string(), LaunchValue::Int(x));
        };
        for (n, u) in ["x.uid", "scale.uid", "bias.uid", "y.uid"]
            .iter()
            .zip(self.uids)
        {
            put(n, u);
        }
        if let Some([m, s]) = self.stats_uids {
            put("mean.uid", m);
            put("var.uid", s);
        }
        if let Some(u) = self.saved_mean_uid {
            put("saved_mean.uid", u);
        }
        if let Some(u) = self.saved_inv_uid {
            put("saved_inv.uid", u);
        }
        if let Some(r) = self.running_uids {
            for (n, u) in [
                "running_mean.uid",
                "running_var.uid",
                "next_mean.uid",
                "next_var.uid",
            ]
            .iter()
            .zip(r)
            {
                put(n, u);
            }
        }
        put("dtype", i64::from(self.dtype));
        for (n, x) in SHAPE.iter().zip(self.shape) {
            put(n, x);
        }
        for (n, x) in STRIDES.iter().zip(self.strides) {
            put(n, x);
        }
        put("flags", self.flags);
        put("splits", self.splits);
        let c = &self.config;
        for (n, x) in CONFIG.iter().zip([
            c.variant_code(),
            c.block[0],
            c.block[1],
            c.num_warps,
            c.warp_size,
            c.shared_bytes,
        ]) {
            put(n, x);
        }
        for (n, x) in [("epsilon", self.epsilon), ("momentum", self.momentum)] {
            if let Some(x) = x {
                v.insert(n.to_string(), LaunchValue::Float(f64::from(x)));
            }
        }
        v
    }

    /// Reads values saved under `dispatch` and checks them.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix): the reader texts; `launch value '<n>' of dispatch '<d>'
    /// must be present exactly when 'flags' bit <b> is set|clear; flags is <f>`; `launch values
    /// of dispatch '<d>' hold flags <f>: bit 2 (variance form) needs bit 1 clear, bits 4, 8 and
    /// 16 need bit 1 set`; `launch value '<n>' of dispatch '<d>' must be a float that f32 holds
    /// exactly, and the plan holds <v>` (or `<type>`); `launch value '<n>' of dispatch '<d>'
    /// must be present exactly when 'flags' bit(s) <b> …; flags is <f>` (epsilon: bits 1 or
    /// 2; momentum: bit 16); `launch values of dispatch '<d>' give n·s = <v>, above
    /// 1073741824`; `launch values of dispatch '<d>' name the spec variant, whose 'sxc' and
    /// 'syc' must be 1`; `… the nchw variant, whose 'sxs' and 'sys' must be 1`; `… flags bit
    /// 32 (channels-first path), which needs the generic variant and 'sxs' = 'sys' = 1`;
    /// `launch value 'splits' of dispatch '<d>' must be int in [1, <max>], and the plan holds
    /// <v>` (max = min(65535, n·cdiv(s, tp))); the geometry texts.
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let names = value_names();
        let r = ContractReader::new(dispatch, BATCHNORM_FWD_V1, &names, values)?;
        let d = quote(dispatch);
        let max = i64::from(i32::MAX);
        let uid = |n: &str| r.int(n, i64::MIN, i64::MAX);
        let flags = r.int("flags", 0, 32767)?;
        let mut opt = [None; 8];
        for (i, (n, bit, when_set)) in OPTIONAL.iter().enumerate() {
            let present = values.contains_key(*n);
            if present != ((flags & bit != 0) == *when_set) {
                return Err(incompatible(format!(
                    "launch value '{n}' of dispatch '{d}' must be present exactly when 'flags' bit {bit} is {}; flags is {flags}",
                    if *when_set { "set" } else { "clear" }
                )));
            }
            if present {
                opt[i] = Some(uid(n)?);
            }
        }
        let training = flags & FLAG_TRAINING != 0;
        if (flags & FLAG_VARIANCE != 0 && training)
            || (flags & (FLAG_SAVED_MEAN | FLAG_SAVED_INV | FLAG_RUNNING) != 0 && !training)
        {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' hold flags {flags}: bit 2 (variance form) needs bit 1 clear, bits 4, 8 and 16 need bit 1 set"
            )));
        }
        let float = |n: &str, wanted: bool, bits: &str| -> PluginResult<Option<f32>> {
            match (values.get(n), wanted) {
                (None, false) => Ok(None),
                (Some(LaunchValue::Float(v)), true) if f64::from(*v as f32) == *v => {
                    Ok(Some(*v as f32))
                }
                (Some(LaunchValue::Float(v)), true) => Err(incompatible(format!(
                    "launch value '{n}' of dispatch '{d}' must be a float that f32 holds exactly, and the plan holds {v}"
                ))),
                (Some(o), true) => Err(incompatible(format!(
                    "launch value '{n}' of dispatch '{d}' must be a float that f32 holds exactly, and the plan holds {}",
                    o.type_name()
                ))),
                _ => Err(incompatible(format!(
                    "launch value '{n}' of dispatch '{d}' must be present exactly when 'flags' {bits}; flags is {flags}"
                ))),
            }
        };
        let epsilon = float(
            "epsilon",
            flags & (FLAG_TRAINING | FLAG_VARIANCE) != 0,
            "bit 1 or 2 is set",
        )?;
        let momentum = float("momentum", flags & FLAG_RUNNING != 0, "bit 16 is set")?;
        let mut shape = [0i64; 3];
        for (i, n) in SHAPE.iter().enumerate() {
            shape[i] = r.int(n, 1, MAX_EXTENT)?;
        }
        if shape[0] * shape[2] > MAX_EXTENT {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' give n·s = {}, above {MAX_EXTENT}",
                shape[0] * shape[2]
            )));
        }
        let mut strides = [0i64; 14];
        for (i, n) in STRIDES.iter().enumerate() {
            strides[i] = r.int(n, 0, max)?;
        }
        let variant = r.int("spec", 0, 2)?;
        let config = TritonConfig {
            family: "batchnorm_fwd".into(),
            dtype: String::new(),
            spec: variant == 1,
            channels_first: variant == 2,
            transposing: false,
            b_col: false,
            block: [r.int("block_m", 1, 4096)?, r.int("block_n", 1, 4096)?, 1],
            group_m: 1,
            num_warps: r.int("num_warps", 1, 16)?,
            num_stages: 0,
            shared_bytes: r.int("shared_bytes", 0, 262_144)?,
            warp_size: r.int("warp_size", 32, 64)?,
        };
        if variant == 1 && (strides[1] != 1 || strides[4] != 1) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'sxc' and 'syc' must be 1"
            )));
        }
        if variant == 2 && (strides[2] != 1 || strides[5] != 1) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the nchw variant, whose 'sxs' and 'sys' must be 1"
            )));
        }
        if flags & FLAG_CHANNELS_FIRST != 0 && (variant != 0 || strides[2] != 1 || strides[5] != 1)
        {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' set flags bit 32 (channels-first path), which needs the generic variant and 'sxs' = 'sys' = 1"
            )));
        }
        let mut inputs = BatchnormFwdInputs {
            uids: [
                uid("x.uid")?,
                uid("scale.uid")?,
                uid("bias.uid")?,
                uid("y.uid")?,
            ],
            stats_uids: opt[0].zip(opt[1]).map(|(a, b)| [a, b]),
            saved_mean_uid: opt[2],
            saved_inv_uid: opt[3],
            running_uids: match opt[4..] {
                [Some(a), Some(b), Some(c), Some(e)] => Some([a, b, c, e]),
                _ => None,
            },
            dtype: r.int("dtype", 1, 3)? as i8,
            shape,
            strides,
            flags,
            splits: 1,
            epsilon,
            momentum,
            config,
        };
        inputs.splits = r.int("splits", 1, inputs.pairs().min(65_535))?;
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    /// Grid, block and shared memory (shared by build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'warp_size' and 'num_warps' of dispatch '<d>' give <t>
    /// threads per block; the contract takes warp size 32 or 64 and at most 1024 threads`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        Ok(LaunchGeometry {
            grid: [self.channel_blocks() as u32, self.splits as u32, 1],
            block: [threads as u32, 1, 1],
            shared_mem_bytes: c.shared_bytes as u32,
        })
    }

    /// The prepared launch (the main, normalize launch: `phase` 2): `pointer_uids` the present
    /// tensors in kernel pointer order; `scalar_args` the variant's integers in kernel order
    /// (ending with `flags splits phase`), then `eps momentum unbias`; `workspace_bytes` as
    /// [`Self::workspace_bytes`].
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let values = self.to_values();
        let pointer_uids = POINTERS
            .iter()
            .filter_map(|(_, names)| {
                names.iter().find_map(|n| match values.get(*n) {
                    Some(LaunchValue::Int(u)) => Some(*u),
                    _ => None,
                })
            })
            .collect();
        let variant = self.config.variant_code();
        let mut ints: Vec<i64> = self.shape.to_vec();
        ints.extend(
            self.strides
                .iter()
                .enumerate()
                .filter(|(i, _)| takes_stride(variant, *i))
                .map(|(_, v)| *v),
        );
        ints.extend([self.flags, self.splits, 2]);
        let mut scalar_args: Vec<KernelArgValue> = ints
            .into_iter()
            .map(|v| KernelArgValue::I32(v as i32))
            .collect();
        scalar_args.extend([
            KernelArgValue::F32(self.epsilon.unwrap_or(0.0)),
            KernelArgValue::F32(self.momentum.unwrap_or(0.0)),
            KernelArgValue::F32(self.unbias()),
        ]);
        Ok(PreparedLaunch {
            dispatch: BATCHNORM_FWD_V1.to_string(),
            geometry: self.geometry_for(BATCHNORM_FWD_V1)?,
            launch_values: values,
            workspace_bytes: self.workspace_bytes(),
            pointer_uids,
            scalar_args,
        })
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
    if let Some(a) = node.attributes_as_batchnorm_inference_attributes() {
        return Ok(BnNode {
            x: a.x_tensor_uid(),
            scale: a.scale_tensor_uid(),
            bias: a.bias_tensor_uid(),
            y: a.y_tensor_uid(),
            stats: Some([a.mean_tensor_uid(), a.inv_variance_tensor_uid()]),
            variance: false,
            eps: None,
            saved_mean: None,
            saved_inv: None,
            running: None,
        });
    }
    if let Some(a) = node.attributes_as_batchnorm_inference_attributes_variance_ext() {
        return Ok(BnNode {
            x: a.x_tensor_uid(),
            scale: a.scale_tensor_uid(),
            bias: a.bias_tensor_uid(),
            y: a.y_tensor_uid(),
            stats: Some([a.mean_tensor_uid(), a.variance_tensor_uid()]),
            variance: true,
            eps: Some(a.epsilon_tensor_uid()),
            saved_mean: None,
            saved_inv: None,
            running: None,
        });
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

/// The value of the graph's scalar `t` (`what`: epsilon or momentum), rounded to the tensor's
/// data type as the reference engine reads it (FLOAT, HALF or BFLOAT16 tensors with a float
/// value the graph holds).
fn scalar_of(t: &TensorAttributes<'_>, what: &str) -> PluginResult<f32> {
    let uid = t.uid();
    let value = read_tensor_value(t)
        .map_err(|e| PluginError::invalid_value(format!("tensor uid {uid}: {e}")))?;
    let v = match value {
        Some(TensorValue::Float32(v) | TensorValue::Float16(v) | TensorValue::BFloat16(v)) => {
            Some(v)
        }
        _ => None,
    };
    let dt = t.data_type();
    match v {
        Some(v) if !t.is_runtime_pass_by_value() && dt == DataType::FLOAT => Ok(v),
        Some(v) if !t.is_runtime_pass_by_value() && dt == DataType::HALF => {
            Ok(half::f16::from_f32(v).to_f32())
        }
        Some(v) if !t.is_runtime_pass_by_value() && dt == DataType::BFLOAT16 => {
            Ok(half::bf16::from_f32(v).to_f32())
        }
        _ => Err(na(format!(
            "the batchnorm_fwd pack needs {what} (tensor uid {uid}) as a FLOAT, HALF or BFLOAT16 scalar with a float value the graph holds (pass-by-value, not runtime), not {dt:?} {}",
            if t.is_runtime_pass_by_value() {
                "bound at execute"
            } else if value.is_none() {
                "without a value"
            } else {
                "with a value of another kind"
            }
        ))),
    }
}

fn match_graph(graph: &OperationGraph) -> PluginResult<BatchnormFwdInputs> {
    let g = graph.graph();
    let nodes: Vec<Node<'_>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.len() != 1 {
        return Err(na(format!(
            "the batchnorm_fwd pack serves graphs of one batchnorm, batchnorm_inference or batchnorm_inference_variance_ext node; this graph has {} nodes",
            nodes.len()
        )));
    }
    let b = read_node(&nodes[0])?;
    let xt = tensor(graph, b.x)?;
    let dtype = xt.data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype) {
        return Err(na(format!(
            "the batchnorm_fwd pack serves f32, f16 and bf16 x, not {dtype:?}"
        )));
    }
    let (xd, _) = dims_strides(&xt);
    let r = xd.len();
    if r < 2 || xd.iter().any(|d| *d < 1) {
        return Err(na(format!(
            "the batchnorm_fwd pack needs x with at least 2 dims (N, C, …), each at least 1; x {xd:?}"
        )));
    }
    let max = i64::from(i32::MAX);
    let (n, c) = (xd[0], xd[1]);
    let s = xd[2..].iter().try_fold(1i64, |a, v| a.checked_mul(*v));
    let s = match (s, s.and_then(|s| s.checked_mul(n))) {
        (Some(s), Some(ns)) if n <= MAX_EXTENT && c <= MAX_EXTENT && ns <= MAX_EXTENT => s,
        _ => {
            return Err(na(format!(
                "the batchnorm_fwd pack needs N, C and N·spatial volume each at most {MAX_EXTENT}; x {xd:?}"
            )));
        }
    };
    let fits = |v: i64| (0..=max).contains(&v);
    // (batch, channel, spatial) strides of x or y.
    let ncs = |what: &str, t: &TensorAttributes<'_>| -> PluginResult<[i64; 3]> {
        let (d, st) = dims_strides(t);
        if d != xd {
            return Err(na(format!(
                "the batchnorm_fwd pack: {what} dims {d:?} differ from x {xd:?}"
            )));
        }
        match collapse(&d[2..], &st[2..]) {
            Some(ss) if st.iter().all(|v| fits(*v)) && fits(ss) => Ok([st[0], st[1], ss]),
            _ => Err(na(format!(
                "the batchnorm_fwd pack needs {what}'s strides in [0, 2147483647] and its spatial axes {:?} collapsing to one stride; strides {st:?}",
                &d[2..]
            ))),
        }
    };
    let yt = tensor(graph, b.y)?;
    let [mut sxn, sxc, mut sxs] = ncs("x", &xt)?;
    let [mut syn, syc, mut sys] = ncs("y", &yt)?;
    let (mut n_k, mut s_k) = (n, s);
    let mergeable = |bn: i64, bs: i64| n == 1 || s == 1 || bn == s * bs;
    if mergeable(sxn, sxs) && mergeable(syn, sys) {
        if s == 1 {
            sxs = sxn;
            sys = syn;
        }
        n_k = 1;
        s_k = n * s;
    }
    if n_k == 1 {
        sxn = 0;
        syn = 0;
    }
    if s_k == 1 {
        sxs = 0;
        sys = 0;
    }
    let typed = |what: &str, t: &TensorAttributes<'_>, bit: i64| -> PluginResult<i64> {
        match t.data_type() {
            dt if dt == DataType::FLOAT => Ok(bit),
            dt if dt == dtype => Ok(0),
            dt => Err(na(format!(
                "the batchnorm_fwd pack needs {what} of x's type ({dtype:?}) or FLOAT, not {dt:?}"
            ))),
        }
    };
    let mut flags = typed("y", &yt, FLAG_Y_F32)?;
    // A per-channel input: dims right-aligned to x, 1 everywhere but x's channel axis.
    let per_channel_in = |what: &str, u: i64, bit: i64| -> PluginResult<(i64, i64)> {
        let t = tensor(graph, u)?;
        let bit = typed(what, &t, bit)?;
        let (d, st) = dims_strides(&t);
        let o = r.checked_sub(d.len());
        let dim = |i: usize| match o {
            Some(o) if i >= o => d[i - o],
            _ => 1,
        };
        let ok = o.is_some() && (0..r).all(|i| dim(i) == 1 || (i == 1 && dim(i) == c));
        let stride = match o {
            Some(o) if o <= 1 && dim(1) > 1 => st[1 - o],
            _ => 0,
        };
        if !ok || !fits(stride) {
            return Err(na(format!(
                "the batchnorm_fwd pack needs {what} with one value per channel (dims right-aligned to x's, 1 except x's channel axis, which holds C = {c} or 1) and a stride in [0, 2147483647]; {what} dims {d:?} strides {st:?}, x {xd:?}"
            )));
        }
        Ok((stride, bit))
    };
    // A per-channel output or running tensor: C values whose dims collapse to one stride.
    let per_channel = |what: &str, u: i64, bit: i64| -> PluginResult<(i64, i64)> {
        let t = tensor(graph, u)?;
        let bit = typed(what, &t, bit)?;
        let (d, st) = dims_strides(&t);
        let vol = d.iter().try_fold(1i64, |a, v| a.checked_mul(*v));
        match (vol, collapse(&d, &st)) {
            (Some(v), Some(cs)) if v == c && fits(cs) => Ok((cs, bit)),
            _ => Err(na(format!(
                "the batchnorm_fwd pack needs {what} with C = {c} values whose dims collapse to one stride in [0, 2147483647]; dims {d:?} strides {st:?}"
            ))),
        }
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
            momentum = Some(scalar_of(&tensor(graph, mo)?, "momentum")?);
            running_uids = Some([pm, pv, nm, nv]);
        }
    }
    let epsilon = match b.eps {
        Some(u) => Some(scalar_of(&tensor(graph, u)?, "epsilon")?),
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

/// The v1 handler (saves and restores).
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchnormFwdHandler;

impl BatchnormFwdHandler {
    /// The inputs for `kernel` on `graph`, with the static rule applied (module docs).
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: the graph texts; `kernel <k> is not a packed batchnorm_fwd entry`;
    /// `kernel <k> is built for <dtype>, the graph is <dtype>`; `kernel <k> is the spec
    /// variant; …`; `kernel <k> is the nchw variant; …`; `kernel <k>: static rule: …`.
    pub fn inputs_for(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<BatchnormFwdInputs> {
        let mut inputs = match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, "batchnorm_fwd", inputs.dtype)?;
        if config.transposing || config.b_col {
            return Err(na(format!(
                "kernel {} is not a packed batchnorm_fwd entry",
                kernel.describe()
            )));
        }
        if config.spec && !inputs.fits_spec() {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's layout does not satisfy its hints (unit channel strides of x and y, C and their other strides multiples of 16)",
                kernel.describe()
            )));
        }
        if config.channels_first && !inputs.fits_nchw() {
            return Err(na(format!(
                "kernel {} is the nchw variant; the graph's layout does not satisfy its hints (unit spatial strides of x and y, the spatial size and their other strides multiples of 16)",
                kernel.describe()
            )));
        }
        let st = inputs.strides;
        if !config.spec && !config.channels_first && st[2] == 1 && st[5] == 1 && inputs.shape[2] > 1
        {
            inputs.flags |= FLAG_CHANNELS_FIRST;
        }
        inputs.config = config;
        let cf = inputs.channels_first();
        let want = rule_block_m(cf, inputs.shape[2]);
        if inputs.config.block[0] != want {
            let path = if cf {
                format!("channels-first path over {} positions", inputs.shape[2])
            } else {
                "channels-last path".to_string()
            };
            return Err(na(format!(
                "kernel {}: static rule: the {path} takes the tile {want} long on the unit-stride axis, not {}",
                kernel.describe(),
                inputs.config.block[0]
            )));
        }
        inputs.splits = rule_splits(
            inputs.pairs(),
            inputs.channel_blocks(),
            inputs.tile().1,
            inputs.training(),
        );
        Ok(inputs)
    }
}

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

impl DispatchHandler for BatchnormFwdHandler {
    fn contract(&self) -> &str {
        BATCHNORM_FWD_V1
    }

    fn launch_signature(&self) -> Vec<KernelArgument> {
        signature(0)
    }

    fn launch_signature_for(&self, values: &LaunchValues) -> Vec<KernelArgument> {
        signature(variant_of(values))
    }

    fn prepare(&self, graph: &OperationGraph) -> PluginResult<PreparedLaunch> {
        Err(match_graph(graph).err().unwrap_or_else(|| {
            na("the batchnorm_fwd pack launches packed entries only; prepare a kernel")
        }))
    }

    fn prepare_kernel(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<PreparedLaunch> {
        self.inputs_for(kernel, graph)?
            .to_launch()
            .map_err(|e| na(e.message))
    }

    fn supports_saving(&self) -> bool {
        true
    }

    fn save_launch_inputs(&self, launch: &PreparedLaunch) -> Option<LaunchValues> {
        Some(launch.launch_values.clone())
    }

    fn restore_launch(
        &self,
        dispatch: &str,
        values: &LaunchValues,
    ) -> PluginResult<PreparedLaunch> {
        BatchnormFwdInputs::from_values(dispatch, values)?.to_launch()
    }

    /// x, scale, bias, y, m, v, saved mean, saved inv, next mean, next var (null when absent),
    /// a null workspace pointer, the integers and floats, two null scratch pointers. A spec or
    /// nchw launch refuses (BAD_PARAM) x or y addresses that are not 16-byte aligned.
    ///
    /// # Errors
    /// `BAD_PARAM` `tensor UID <u> is at <addr>; this plan runs the specialized batchnorm_fwd
    /// kernel, which needs 16-byte aligned x and y`; `the variant pack binds no memory to
    /// tensor UID <u>`; `tensor UID <u> is bound to host memory; the ingestor launches on
    /// device memory`.
    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
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
            let t = tensors.iter().find(|t| t.uid == uid).ok_or_else(|| {
                PluginError::bad_param(format!(
                    "the variant pack binds no memory to tensor UID {uid}"
                ))
            })?;
            let BufferRef::Device { addr, .. } = t.data else {
                return Err(PluginError::bad_param(format!(
                    "tensor UID {uid} is bound to host memory; the ingestor launches on device memory"
                )));
            };
            if hinted && (ptr == "x_ptr" || ptr == "y_ptr") && addr % 16 != 0 {
                return Err(PluginError::bad_param(format!(
                    "tensor UID {uid} is at {addr:#x}; this plan runs the specialized batchnorm_fwd kernel, which needs 16-byte aligned x and y"
                )));
            }
            out.push(KernelArgValue::Pointer(addr));
        }
        out.push(KernelArgValue::Pointer(0));
        out.extend_from_slice(&launch.scalar_args);
        out.push(KernelArgValue::Pointer(0));
        out.push(KernelArgValue::Pointer(0));
        Ok(out)
    }

    /// As [`Self::kernel_args`]; a training launch takes the workspace address as its 11th
    /// argument.
    ///
    /// # Errors
    /// As [`Self::kernel_args`]; `BAD_PARAM` `the workspace is at <addr>; this plan runs
    /// batchnorm training, whose statistics launch needs a 4-byte aligned device workspace`
    /// (a null or host-memory workspace included).
    fn kernel_args_with_workspace(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: u64,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let mut args = self.kernel_args(launch, tensors)?;
        if is_training(launch) {
            if workspace == 0 || workspace % 4 != 0 {
                return Err(PluginError::bad_param(format!(
                    "the workspace is at {workspace:#x}; this plan runs batchnorm training, whose statistics launch needs a 4-byte aligned device workspace"
                )));
            }
            args[POINTERS.len()] = KernelArgValue::Pointer(workspace);
        }
        Ok(args)
    }

    /// Training: the statistics launch, the same arguments with `phase` 0 on the main
    /// launch's geometry. Inference: none.
    fn prologue_launches(
        &self,
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
