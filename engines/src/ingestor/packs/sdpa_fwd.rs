//! SDPA forward pack, contract `hipkernel.sdpa_fwd.dispatch.v1`: scaled dot-product attention
//! as flash attention on the Triton kernels of `engines/kernels/triton/sdpa_fwd.py`, ONE launch.
//!
//! Graphs served: one `sdpa` (forward) node with the CPU reference engine's semantics
//! (`crate::reference::ops::sdpa`): Q `[B, H, S_q, D]`, K `[B, H_kv, S_kv, D]`, V `[B, H_kv,
//! S_kv, D]`, O `[B, H, S_q, D]` (H a multiple of H_kv: grouped-query heads; the value head
//! dim must equal D), any non-negative element strides; f16, bf16 (f32 accumulate) or f32
//! (IEEE products), one data type for Q, K, V and O; D in [1, 128] (the entry whose head-dim
//! bucket `block_k` is max(32, D rounded up to a power of two) serves it). Scale: the
//! `attn_scale_value` attribute, a scale tensor holding a constant value, or an f32 device
//! tensor read at execute (its first element), default 1. Masks: causal (top-left or
//! bottom-right), `left_bound`/`right_bound` bands with either diagonal alignment, and an
//! attention mask tensor that broadcasts to `[B, H, S_q, S_kv]` (rank ≤ 4; BOOLEAN: 0 masks
//! the score; FLOAT, HALF or BFLOAT16: added to the scaled score). Statistics: `stats`
//! (logsumexp), `max` and `sum_exp` outputs, each f32 `[B, H, S_q, 1]`, all present ones with
//! the same strides. A row whose scores are all masked gives O = 0, stats = max = −∞,
//! sum_exp = 0. Refused (NOT_APPLICABLE, texts below): dropout, ALiBi, the padding-mask
//! attribute with sequence-length tensors, paged K/V, block masks, sink tokens, FP8
//! scaling tensors, D_v ≠ D, D > 128, B·H > 65535, sequences longer than 2^28, element offsets beyond 2^31 − 1.
//!
//! Entries: `sdpa_fwd_<dtype>_<spec|generic>_<bm>x<bn>x<d>_g<g>_w<w>_s<s>_sh<shared>_ws<warp>`
//! (`block_k` = the head-dim bucket 32, 64 or 128). `spec`: D a multiple of 16, Q/K/V/O
//! batch, head and row strides multiples of 16, unit head-dim strides, 16-byte aligned
//! Q/K/V/O (checked at execute, BAD_PARAM); `generic`: anything else. Group `g` 1: the kernel
//! with the mask-tensor code; group 2: the same tile built without it, for graphs without a
//! mask tensor (every spec tile is packed in both groups; generic entries are group 1 only);
//! group 4 (f16/bf16, one 16-row spec tile per bucket): the query heads
//! that share a key/value head packed into the tile's rows (row r = query r / rep of head
//! h_kv·rep + r mod rep), with the mask-tensor code.
//! **Static rule**: first applicable entry in pack order (spec before generic, larger tiles
//! first); an entry is applicable when its data type and head-dim bucket match and, for spec,
//! the hints hold; a group-4 entry serves only graphs with `rep` > 1 and S_q ≤
//! [`PACKED_MAX_SQ`] (decode), and takes every such 16-bit graph the spec hints admit (the
//! other spec entries refuse it); a group-2 entry is refused for a graph with a mask tensor (`kernel <k> is
//! built without the mask-tensor code (group 2); this graph has a mask tensor`) and a group-1
//! spec entry for a graph without one (`static rule: a graph without a mask tensor takes the
//! group-2 twin of this tile …`: the mask path's registers took the spec tiles to 255
//! registers with spills on sm_90, its twin has 128–178); on warp-32 (CUDA) targets a spec
//! entry of more than 64 query rows is refused for a banded graph (causal, or a left/right
//! bound) in the head-dim buckets 64 and 128, which pack a 64-row spec tile beside it
//! (`static rule: a banded (causal) graph …; a 64-row tile serves this graph`). The CUDA spec
//! tiles, from a benchmarking build of every candidate against PyTorch flash on an H200 (b8
//! h16, s 1024 / 4096, f16 and bf16, same run, `docs/PERFORMANCE.md`, group-2 timings): d64
//! 128×64 w4 s3 without a band (1.28–1.31×) and 64×64 w4 s3 with one (1.18–1.25×); d128
//! 128×64 w8 s3 without a band (1.17–1.40×) and 64×64 w4 s3 with one (1.13–1.31×); d32 one
//! 128×64 w4 s3 tile (MiniLM's f32 attention takes the generic entry). With `KNOB_BENCHMARK`
//! every entry the rule admits is a candidate.
//!
//! | launch value | type | range |
//! |---|---|---|
//! | `q.uid`, `k.uid`, `v.uid`, `o.uid` | int | any |
//! | `scale.uid` | int | present iff `flags` bit 0 |
//! | `mask.uid` | int | present iff `mask_kind` ≠ 0 |
//! | `stats.uid`, `max.uid`, `sum_exp.uid` | int | present iff `flags` bit 5, 6, 7 |
//! | `dtype` | int | `DataType` FLOAT 1, HALF 2, BFLOAT16 3 |
//! | `b`, `h`, `rep`, `d` | int | [1, 2147483647]; `sq`, `skv` [1, 2^28]; `rep` divides `h`; `d` ≤ `block_k`; `b`·`h` ≤ 65535 |
//! | `sqb sqh sqs sqd skb skh sks skd svb svh svs svd sob soh sos sod smb smh sms smk stb sth sts` | int | [0, 2147483647] (elements; mask strides 0 on broadcast dims) |
//! | `scale_bits` | int | [−2147483648, 2147483647]: the f32 bits of the scale (0 when read from `scale.uid`) |
//! | `mask_kind` | int | 0 none, 1 BOOLEAN, 2 FLOAT, 3 HALF, 4 BFLOAT16 additive |
//! | `flags` | int | [0, 255] without bits 1 and 2: bit 0 scale tensor, bit 3 right bound, bit 4 left bound, bits 5–7 stats/max/sum_exp |
//! | `shift` | int | [−2^28, 2^28]: diagonal shift (0 or S_kv − S_q) |
//! | `right`, `left` | int | [−2^29, 2^29]: band bounds (0 when absent; graph bounds beyond are clamped, which keeps their meaning) |
//! | `spec`, `block_m`, `block_n`, `block_k`, `group_m`, `num_warps`, `warp_size`, `shared_bytes` | int | as the matmul contract |
//!
//! Launch: grid (cdiv(sq, block_m), b·h, 1) (group 4: (cdiv(sq·rep, block_m), b·h/rep, 1)), block num_warps·warp_size, dynamic shared memory
//! `shared_bytes`, workspace 0. Kernel arguments: q, k, v, o, scale, mask, stats, max, sum_exp
//! pointers (null when absent), H, REP, SQ, SKV, D, the strides (spec drops sqd, skd, svd,
//! sod), scale_bits, mask_kind, flags, shift, right, left, two null scratch pointers.

use crate::ingestor::framework::attention::{
    batch_heads, check_bucket, check_heads, read_band, read_mask, read_scale, span,
};
use crate::ingestor::framework::conv::CONFIG;
use crate::ingestor::framework::family;
use crate::ingestor::framework::prelude::*;

/// The versioned contract name.
pub const SDPA_FWD_V1: &str = "hipkernel.sdpa_fwd.dispatch.v1";

pub use crate::ingestor::framework::attention::{
    BOUND_MAX, FLAG_LEFT, FLAG_RIGHT, FLAG_SCALE_TENSOR, SEQ_MAX,
};
/// `flags` bit: write logsumexp to `stats.uid`.
pub const FLAG_STATS: i64 = 32;
/// `flags` bit: write the row max to `max.uid`.
pub const FLAG_MAX: i64 = 64;
/// `flags` bit: write Σexp(s − max) to `sum_exp.uid`.
pub const FLAG_SUM_EXP: i64 = 128;

/// Stride value names, in kernel order.
const STRIDES: [&str; 23] = [
    "sqb", "sqh", "sqs", "sqd", "skb", "skh", "sks", "skd", "svb", "svh", "svs", "svd", "sob",
    "soh", "sos", "sod", "smb", "smh", "sms", "smk", "stb", "sth", "sts",
];
/// Indices in [`STRIDES`] of the unit strides the spec variant takes as constant 1.
const SPEC_UNIT: [usize; 4] = [3, 7, 11, 15];
/// Indices in [`STRIDES`] of the strides the spec variant needs multiples of 16.
const SPEC_DIV16: [usize; 12] = [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14];
/// The pointers' UID values, in kernel order: q, k, v and o (16-byte aligned for a spec
/// entry), then the optional tensors ([`OPTIONAL`]).
#[rustfmt::skip]
const POINTER_UIDS: [&str; 9] = [
    "q.uid", "k.uid", "v.uid", "o.uid", "scale.uid", "mask.uid", "stats.uid", "max.uid",
    "sum_exp.uid",
];
/// Optional tensor value names, in kernel pointer order after q, k, v, o.
const OPTIONAL: &[&str] = POINTER_UIDS.split_at(4).1;
/// Index in `VALUES` of the first stride, of `scale_bits` (then mask_kind, flags, shift,
/// right, left: kernel order) and of the first optional UID.
const STRIDE0: usize = 11;
const MISC0: usize = 34;
const OPT0: usize = 40;
/// The largest query tile the static rule gives a banded graph on a warp-32 (CUDA) target
/// with head dim bucket 64 or 128 (module docs).
const BANDED_MAX_ROWS: i64 = 64;

crate::triton_handler!(SdpaFwdHandler = SdpaFwdInputs);

/// Every value name of the contract, sorted.
pub fn value_names() -> Vec<&'static str> {
    family::value_names(SdpaFwdInputs::VALUES)
}

/// The kernel parameter names of a variant, in order (with the two scratch pointers).
pub fn param_names(spec: bool) -> Vec<&'static str> {
    <SdpaFwdInputs as TritonFamily>::param_names(spec)
}

/// The kernel signature of a variant (natural layout, named).
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    <SdpaFwdInputs as TritonFamily>::signature(spec)
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdpaFwdInputs {
    /// UIDs of q, k, v and o.
    pub uids: [i64; 4],
    /// UIDs of scale, mask, stats, max and sum_exp, each present as the module table says.
    pub optional: [Option<i64>; 5],
    /// `DataType` value of q, k, v, o.
    pub dtype: i8,
    /// b, h, rep (= H / H_kv), sq, skv, d.
    pub shape: [i64; 6],
    /// The 23 element strides in `STRIDES` order.
    pub strides: [i64; 23],
    /// scale_bits, mask_kind, flags, shift, right, left.
    pub misc: [i64; 6],
    /// Kernel configuration.
    pub config: TritonConfig,
}

/// `group_m` of the packed-heads entries: the `rep` query heads that share a key/value head
/// run in one tile (rows = (query, head) pairs), so decode GQA/MQA reads each K/V block once
/// per group.
pub const PACKED_GROUP: i64 = 4;
/// The longest query sequence the packed-heads entries serve (static rule).
pub const PACKED_MAX_SQ: i64 = 16;

impl SdpaFwdInputs {
    /// Whether the launch satisfies the spec hints (alignment is checked at execute).
    pub fn fits_spec(&self) -> bool {
        self.shape[5] % 16 == 0
            && SPEC_UNIT.iter().all(|&i| self.strides[i] == 1)
            && SPEC_DIV16.iter().all(|&i| self.strides[i] % 16 == 0)
    }

    /// The head-dim bucket (`block_k`) that serves head dim `d`: max(32, next power of two).
    pub fn bucket(d: i64) -> i64 {
        crate::ingestor::framework::attention::bucket(d)
    }
}

impl TritonFamily for SdpaFwdInputs {
    const FAMILY: &'static str = "sdpa_fwd";
    const CONTRACT: &'static str = SDPA_FWD_V1;
    #[rustfmt::skip]
    const VALUES: &'static [IntValue] = &concat::<53>(&[
        &[uid("q.uid"), uid("k.uid"), uid("v.uid"), uid("o.uid"), int("dtype", 1, 3)],
        &[int("b", 1, I32_MAX), int("h", 1, I32_MAX), int("rep", 1, I32_MAX)],
        &[int("sq", 1, SEQ_MAX), int("skv", 1, SEQ_MAX), int("d", 1, I32_MAX)],
        &strides(STRIDES),
        &[int("scale_bits", i32::MIN as i64, I32_MAX), int("mask_kind", 0, 4), int("flags", 0, 255)],
        &[int("shift", -SEQ_MAX, SEQ_MAX), int("right", -BOUND_MAX, BOUND_MAX)],
        &[int("left", -BOUND_MAX, BOUND_MAX)],
        &[uid("scale.uid"), uid("mask.uid"), uid("stats.uid"), uid("max.uid"), uid("sum_exp.uid")],
        &CONFIG,
    ]);
    const POINTERS: &'static [&'static str] = &POINTER_UIDS;
    const ALIGNED: &'static [&'static str] = POINTER_UIDS.split_at(4).0;
    const ALIGNED_TEXT: &'static str = "16-byte aligned q, k, v and o";
    const OPTIONAL: &'static [&'static str] = OPTIONAL;

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        read_graph(graph)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    /// The head-dim bucket, the spec hints, the mask-tensor group, then the static rule
    /// (module docs): `kernel <k> serves head dims in the bucket <b>; the graph's head dim
    /// <d> takes bucket <b'>`; `kernel <k> is the spec variant; the graph's layout does not
    /// satisfy its hints (…)`; the group and static-rule texts.
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        check_bucket(kernel, config.block[2], self.shape[5])?;
        spec_hints(
            kernel,
            &config,
            self.fits_spec(),
            "head dim a multiple of 16, unit head-dim strides, q/k/v/o batch, head and row strides multiples of 16",
        )?;
        let has_mask = self.misc[1] != 0;
        if config.group_m == 2 && has_mask {
            return Err(na(format!(
                "kernel {} is built without the mask-tensor code (group 2); this graph has a mask tensor",
                kernel.describe()
            )));
        }
        let (rep, sq) = (self.shape[2], self.shape[3]);
        let decode = rep > 1 && sq <= PACKED_MAX_SQ;
        if config.group_m == PACKED_GROUP && !decode {
            return Err(na(format!(
                "kernel {}: static rule: the packed-heads entry (group {PACKED_GROUP}) serves decode-length queries of grouped heads (S_q <= {PACKED_MAX_SQ}, H/H_kv > 1); this graph has S_q {sq}, H/H_kv {rep}",
                kernel.describe()
            )));
        }
        // Every bucket of the 16-bit types packs a group-4 spec entry.
        if config.spec
            && config.group_m != PACKED_GROUP
            && decode
            && self.dtype != DataType::FLOAT.0
        {
            return Err(na(format!(
                "kernel {}: static rule: decode-length queries of grouped heads (S_q {sq} <= {PACKED_MAX_SQ}, H/H_kv {rep}) take the packed-heads entry (group {PACKED_GROUP}), which reads each key/value block once per group",
                kernel.describe()
            )));
        }
        if config.spec && config.group_m == 1 && !has_mask {
            return Err(na(format!(
                "kernel {}: static rule: a graph without a mask tensor takes the group-2 twin of this tile (built without the mask-tensor code: fewer registers)",
                kernel.describe()
            )));
        }
        let banded = self.misc[2] & (FLAG_RIGHT | FLAG_LEFT) != 0;
        if config.spec
            && banded
            && config.warp_size == 32
            && config.block[0] > BANDED_MAX_ROWS
            && config.block[2] >= 64
        {
            return Err(na(format!(
                "kernel {}: static rule: a banded (causal) graph skips most key blocks of a {}-row tile's later rows; a {BANDED_MAX_ROWS}-row tile serves this graph",
                kernel.describe(),
                config.block[0]
            )));
        }
        self.config = config;
        Ok(())
    }

    fn ints(&self) -> Vec<i64> {
        let c = &self.config;
        let mut v = self.uids.to_vec();
        v.push(self.dtype.into());
        v.extend(self.shape);
        v.extend(self.strides);
        v.extend(self.misc);
        v.extend(self.optional.map(|o| o.unwrap_or(0)));
        v.extend([
            c.variant_code(),
            c.block[0],
            c.block[1],
            c.block[2],
            c.group_m,
        ]);
        v.extend([c.num_warps, c.shared_bytes, c.warp_size]);
        v
    }

    fn from_ints(v: &[i64]) -> Self {
        let (flags, mask_kind) = (v[MISC0 + 2], v[MISC0 + 1]);
        let has = [
            flags & FLAG_SCALE_TENSOR != 0,
            mask_kind != 0,
            flags & FLAG_STATS != 0,
            flags & FLAG_MAX != 0,
            flags & FLAG_SUM_EXP != 0,
        ];
        let c = &v[OPT0 + 5..];
        let mut config =
            TritonConfig::restored("sdpa_fwd", c[0], [c[1], c[2], c[3]], c[4], c[5], c[6], c[7]);
        config.dtype = ["f32", "f16", "bf16"][(v[4] - 1) as usize].into();
        let mut optional = [None; 5];
        for (i, o) in optional.iter_mut().enumerate() {
            *o = Some(v[OPT0 + i]).filter(|_| has[i]);
        }
        SdpaFwdInputs {
            uids: [v[0], v[1], v[2], v[3]],
            optional,
            dtype: v[4] as i8,
            shape: std::array::from_fn(|i| v[5 + i]),
            strides: std::array::from_fn(|i| v[STRIDE0 + i]),
            misc: std::array::from_fn(|i| v[MISC0 + i]),
            config,
        }
    }

    /// Before the optional UIDs: `launch values of dispatch '<d>': 'flags' has bits 1 or 2
    /// set (<f>)`; each optional UID: `launch values of dispatch '<d>': '<name>' is present
    /// iff <condition>`.
    fn read_value(r: &ValueReader<'_>, read: &[i64], i: usize) -> PluginResult<i64> {
        if !(OPT0..OPT0 + 5).contains(&i) {
            return r.read(i);
        }
        let (d, mask_kind, flags) = (r.dispatch(), read[MISC0 + 1], read[MISC0 + 2]);
        if i == OPT0 && flags & 6 != 0 {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}': 'flags' has bits 1 or 2 set ({flags})"
            )));
        }
        let (want, cond) = [
            (flags & FLAG_SCALE_TENSOR != 0, "'flags' bit 0"),
            (mask_kind != 0, "'mask_kind' is not 0"),
            (flags & FLAG_STATS != 0, "'flags' bit 5"),
            (flags & FLAG_MAX != 0, "'flags' bit 6"),
            (flags & FLAG_SUM_EXP != 0, "'flags' bit 7"),
        ][i - OPT0];
        let n = OPTIONAL[i - OPT0];
        let has = r.has(n);
        if has != want {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}': '{n}' is present iff {cond}"
            )));
        }
        if has { r.read(i) } else { Ok(0) }
    }

    fn present(&self, name: &str) -> bool {
        let i = OPTIONAL.iter().position(|n| *n == name);
        i.is_some_and(|i| self.optional[i].is_some())
    }

    /// `launch values of dispatch '<d>': 'rep' must divide 'h' and 'd' must not exceed
    /// 'block_k'`; `launch values of dispatch '<d>' name the spec variant, whose 'sqd', 'skd',
    /// 'svd' and 'sod' must be 1`; the geometry texts.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        let d = quote(dispatch);
        let shape = self.shape;
        check_heads(dispatch, shape[1], shape[2], shape[5], self.config.block[2])?;
        if self.config.spec && SPEC_UNIT.iter().any(|&i| self.strides[i] != 1) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'sqd', 'skd', 'svd' and 'sod' must be 1"
            )));
        }
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        let mut v = vec![
            "q_ptr",
            "k_ptr",
            "v_ptr",
            "o_ptr",
            "scale_ptr",
            "mask_ptr",
            "stats_ptr",
            "max_ptr",
            "sum_ptr",
            "H",
            "REP",
            "SQ",
            "SKV",
            "D",
        ];
        v.extend(spec_kept(&STRIDES, spec, &SPEC_UNIT));
        v.extend(Self::VALUES[MISC0..OPT0].iter().map(|n| n.name));
        v.extend(["global_scratch", "profile_scratch"]);
        v
    }

    /// H, REP, SQ, SKV, D (`b` is not a kernel argument), the strides (spec drops the unit
    /// head-dim ones), the band and scale values.
    fn scalars(&self) -> Vec<i64> {
        let mut ints: Vec<i64> = self.shape[1..].to_vec();
        ints.extend(spec_kept(&self.strides, self.config.spec, &SPEC_UNIT));
        ints.extend(self.misc);
        ints
    }

    /// Grid (cdiv(sq, block_m), b·h, 1); group [`PACKED_GROUP`]: (cdiv(sq·rep, block_m),
    /// b·h / rep, 1). Errors: `NOT_APPLICABLE`
    /// [`TritonConfig::threads_per_block`]'s text; `launch values 'b' and 'h' of dispatch
    /// '<d>' give <n> batch-heads; the grid takes at most 65535`.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        let bh = batch_heads(dispatch, self.shape[0], self.shape[1])?;
        let (rows, bh) = if c.group_m == PACKED_GROUP {
            // The rows are (query, head of the group) pairs; one program row per K/V head.
            let r = self.shape[3] * self.shape[2];
            ((r + c.block[0] - 1) / c.block[0], bh / self.shape[2])
        } else {
            ((self.shape[3] + c.block[0] - 1) / c.block[0], bh)
        };
        Ok(block_geometry(c, [rows as u32, bh as u32, 1], threads))
    }

    /// A spec launch refuses (BAD_PARAM) q, k, v or o bound to an address that is not 16-byte
    /// aligned before any binding refusal; then [`pointer_args`] (the five optional pointers
    /// null when absent).
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        _workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        check_aligned::<Self>(launch, tensors)?;
        pointer_args::<Self>(launch, tensors)
    }
}

/// Reads the graph (one sdpa node) into launch inputs with a placeholder config.
///
/// # Errors
/// `NOT_APPLICABLE` with the texts of the module docs' refusals, each naming the attribute,
/// tensor or value.
fn read_graph(graph: &OperationGraph) -> PluginResult<SdpaFwdInputs> {
    let a = one_node(graph, "sdpa_fwd", "sdpa")?
        .attributes_as_sdpa_attributes()
        .ok_or_else(|| na("the sdpa_fwd pack serves an sdpa (forward) node"))?;
    if a.dropout_probability().is_some_and(|p| p != 0.0) {
        return Err(na(
            "the sdpa_fwd pack does not run dropout (dropout_probability ≠ 0)",
        ));
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
        if let Some(u) = u {
            return Err(na(format!(
                "the sdpa_fwd pack does not serve {attr} (tensor {u})"
            )));
        }
    }
    if a.alibi_mask() {
        return Err(na("the sdpa_fwd pack does not serve alibi_mask"));
    }
    if a.padding_mask() {
        return Err(na(
            "the sdpa_fwd pack does not serve padding_mask (sequence-length tensors); a BOOLEAN attn_mask [B, 1, 1, S_kv] masks padded keys",
        ));
    }
    if a.causal_mask() && a.causal_mask_bottom_right() {
        return Err(na(
            "the sdpa_fwd pack: causal_mask and causal_mask_bottom_right are both set",
        ));
    }
    let ts = [
        tensor(graph, a.q_tensor_uid())?,
        tensor(graph, a.k_tensor_uid())?,
        tensor(graph, a.v_tensor_uid())?,
        tensor(graph, a.o_tensor_uid())?,
    ];
    let dtype = ts[0].data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype)
        || ts.iter().any(|t| t.data_type() != dtype)
    {
        return Err(na(format!(
            "the sdpa_fwd pack serves f32, f16 and bf16 with q, k, v and o of one type; q is {dtype:?}, k {:?}, v {:?}, o {:?}",
            ts[1].data_type(),
            ts[2].data_type(),
            ts[3].data_type()
        )));
    }
    let ds: Vec<(Vec<i64>, Vec<i64>)> = ts.iter().map(dims_strides).collect();
    let (q, k, v, o) = (&ds[0].0, &ds[1].0, &ds[2].0, &ds[3].0);
    if ds.iter().any(|(d, _)| d.len() != 4) {
        return Err(na(format!(
            "the sdpa_fwd pack needs q, k, v and o of 4 dims [B, H, S, D]; q {q:?}, k {k:?}, v {v:?}, o {o:?}"
        )));
    }
    let (b, h, sq, dd) = (q[0], q[1], q[2], q[3]);
    let (hk, skv) = (k[1], k[2]);
    if hk < 1
        || k[0] != b
        || v[0] != b
        || k[3] != dd
        || v[1] != hk
        || v[2] != skv
        || h % hk != 0
        || o.as_slice() != [b, h, sq, v[3]]
    {
        return Err(na(format!(
            "the sdpa_fwd pack: dims do not agree: q {q:?}, k {k:?}, v {v:?}, o {o:?}"
        )));
    }
    if v[3] != dd {
        return Err(na(format!(
            "the sdpa_fwd pack needs the value head dim equal to the query head dim; q {q:?}, v {v:?}"
        )));
    }
    if sq > SEQ_MAX || skv > SEQ_MAX {
        return Err(na(format!(
            "the sdpa_fwd pack serves sequences of at most {SEQ_MAX}; q {q:?}, k {k:?}"
        )));
    }
    if !(1..=128).contains(&dd) {
        return Err(na(format!(
            "the sdpa_fwd pack serves head dims 1 to 128; q {q:?}"
        )));
    }
    let max = i64::from(i32::MAX);
    for ((d, s), what) in ds.iter().zip(["q", "k", "v", "o"]) {
        if d.iter().any(|x| *x < 1 || *x > max)
            || s.iter().any(|x| *x < 0)
            || span(d, s).is_none_or(|x| x > max)
        {
            return Err(na(format!(
                "the sdpa_fwd pack needs extents in [1, 2147483647], non-negative strides and element offsets of {what} within 2147483647; dims {d:?}, strides {s:?}"
            )));
        }
    }
    // Scale and band.
    let scale = read_scale(
        graph,
        "sdpa_fwd",
        a.attn_scale_value(),
        a.scale_tensor_uid(),
    )?;
    let mut optional = [None; 5];
    optional[0] = scale.tensor;
    let (mut flags, shift, right, left) = read_band(
        a.causal_mask(),
        a.causal_mask_bottom_right(),
        a.diagonal_alignment(),
        a.left_bound(),
        a.right_bound(),
        sq,
        skv,
    );
    if scale.tensor.is_some() {
        flags |= FLAG_SCALE_TENSOR;
    }
    // Mask.
    let mut mask_kind = 0;
    let mut mask_strides = [0i64; 4];
    if let Some(u) = a.attn_mask_tensor_uid() {
        (mask_kind, mask_strides) = read_mask(graph, "sdpa_fwd", u, [b, h, sq, skv])?;
        optional[1] = Some(u);
    }
    // Statistics.
    let mut stat_strides: Option<Vec<i64>> = None;
    for (i, (u, bit)) in [
        (a.stats_tensor_uid(), FLAG_STATS),
        (a.max_tensor_uid(), FLAG_MAX),
        (a.sum_exp_tensor_uid(), FLAG_SUM_EXP),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(u) = u else { continue };
        let t = tensor(graph, u)?;
        let (sd, ss) = dims_strides(&t);
        if t.data_type() != DataType::FLOAT || sd.as_slice() != [b, h, sq, 1] {
            return Err(na(format!(
                "the sdpa_fwd pack writes statistics as FLOAT [B, H, S_q, 1] = [{b}, {h}, {sq}, 1]; tensor {u} is {:?} {sd:?}",
                t.data_type()
            )));
        }
        let st = ss[..3].to_vec();
        if st.iter().any(|s| *s < 0) || span(&sd, &ss).is_none_or(|x| x > max) {
            return Err(na(format!(
                "the sdpa_fwd pack needs non-negative statistics strides with offsets within 2147483647; tensor {u} has strides {ss:?}"
            )));
        }
        if stat_strides.as_ref().is_some_and(|p| *p != st) {
            return Err(na(format!(
                "the sdpa_fwd pack writes stats, max and sum_exp with one set of strides; tensor {u} has strides {ss:?}"
            )));
        }
        stat_strides = Some(st);
        flags |= bit;
        optional[2 + i] = Some(u);
    }
    if a.generate_stats() == Some(true) && a.stats_tensor_uid().is_none() {
        return Err(na(
            "the sdpa_fwd pack: generate_stats is set but stats_tensor_uid is absent",
        ));
    }
    let st = stat_strides.unwrap_or_else(|| vec![0, 0, 0]);
    let s = |i: usize| &ds[i].1;
    let mut strides = [0i64; 23];
    for (i, x) in s(0)
        .iter()
        .chain(s(1))
        .chain(s(2))
        .chain(s(3))
        .chain(&mask_strides)
        .chain(&st)
        .enumerate()
    {
        strides[i] = *x;
    }
    Ok(SdpaFwdInputs {
        uids: [
            a.q_tensor_uid(),
            a.k_tensor_uid(),
            a.v_tensor_uid(),
            a.o_tensor_uid(),
        ],
        optional,
        dtype: dtype.0,
        shape: [b, h, h / hk, sq, skv, dd],
        strides,
        misc: [scale.bits, mask_kind, flags, shift, right, left],
        config: TritonConfig::parse("sdpa_fwd_f32_generic_64x32x32_g1_w4_s1_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    })
}
