//! SDPA backward pack, contract `hipkernel.sdpa_bwd.dispatch.v1`: dq, dk and dv as flash
//! attention backward on the Triton kernel of `engines/kernels/triton/sdpa_bwd.py`, TWO
//! launches of one code object, deterministic (no atomics; every sum in a fixed order).
//!
//! Graphs served: one `sdpa_backward` node with the CPU reference engine's semantics
//! (`crate::reference::ops::sdpa::sdpa_backward`): Q, dO, dQ `[B, H, S_q, D]`, K, V, dK, dV
//! `[B, H_kv, S_kv, D]` (H a multiple of H_kv: grouped-query heads; each key/value head sums
//! its query heads' gradients in head order), O `[B, H, S_q, D]`, the forward's logsumexp
//! `stats` f32 `[B, H, S_q, 1]` (a row whose stats is −∞, every key masked, gets zero
//! gradients), any non-negative element strides; f16, bf16 (f32 accumulate) or f32 (IEEE
//! products), one data type for the eight data tensors; D in [1, 128] (head-dim buckets 32,
//! 64, 128 as the forward). Scale: `attn_scale_value`, a scale tensor holding a constant, or
//! an f32 device tensor read at execute (its first element), default 1. Masks: causal (top-left
//! or bottom-right) and `left_bound`/`right_bound` bands with either diagonal alignment, and an
//! attention mask tensor that broadcasts to `[B, H, S_q, S_kv]` (rank ≤ 4; BOOLEAN: 0 masks the
//! score; FLOAT, HALF or BFLOAT16: added to the scaled score), as the forward. Refused
//! (`NOT_APPLICABLE`, by name; the CPU reference engine serves dbias): dbias, dropout and its
//! tensors, sequence-length tensors, ALiBi, the padding mask, D_v ≠ D, D > 128, B·H > 65535,
//! sequences longer than 2^28, element offsets beyond 2^31 − 1.
//!
//! Entries: `sdpa_bwd_<dtype>_<spec|generic>_<bm>x<bn>x<d>_g1_w<w>_s<s>_sh<shared>_ws<warp>`:
//! a program owns `bn` query rows (phase 0) or keys (phase 1) and walks the other side in
//! steps of `bm`; `d` the head-dim bucket. `spec`: D a multiple of 16, unit head-dim strides,
//! the batch, head and row strides of the eight data tensors multiples of 16, the eight
//! 16-byte aligned (checked at execute, `BAD_PARAM`); `generic`: anything else. **Static
//! rule**: the first applicable entry in pack order whose head-dim bucket is the graph's; a
//! tile of more than 64 keys is refused when phase 1 would run fewer than 128 programs
//! (`… tiles under-fill the device …`).
//!
//! | launch value | type | range |
//! |---|---|---|
//! | `q.uid` `k.uid` `v.uid` `o.uid` `do.uid` `stats.uid` `dq.uid` `dk.uid` `dv.uid` | int | any |
//! | `dtype` | int | `DataType` FLOAT 1, HALF 2, BFLOAT16 3 |
//! | `b`, `h`, `rep`, `d` | int | [1, 2147483647]; `sq`, `skv` [1, 2^28]; `rep` divides `h`; `d` ≤ `block_k`; `b`·`h` ≤ 65535 |
//! | the 39 strides of [`STRIDES`] | int | [0, 2147483647] (elements; mask strides 0 on broadcast axes) |
//! | `scale_bits` | int | the f32 bits of the scale (0 when read from `scale.uid`) |
//! | `mask_kind` | int | 0 none, 1 BOOLEAN, 2 FLOAT, 3 HALF, 4 BFLOAT16 additive |
//! | `flags` | int | [0, 25]: bit 0 scale tensor, bit 3 right bound, bit 4 left bound |
//! | `shift` | int | [−2^28, 2^28]: diagonal shift (0 or S_kv − S_q) |
//! | `right`, `left` | int | [−2^29, 2^29]: band bounds (0 when absent) |
//! | `scale.uid` | int | present iff `flags` bit 0 |
//! | `mask.uid` | int | present iff `mask_kind` ≠ 0 |
//! | `spec`, `block_m`, `block_n`, `block_k`, `group_m`, `num_warps`, `shared_bytes`, `warp_size` | int | as the matmul contract |
//!
//! Launches, on the launch stream in order: phase 0 (delta = rowsum(dO ∘ O) into the
//! workspace, and dQ) on grid (cdiv(sq, block_n), b·h, 1), then phase 1 (dK, dV) on grid
//! (cdiv(skv, block_n), b·h / rep, 1); block num_warps·warp_size, dynamic shared memory
//! `shared_bytes`. Workspace: `b·h·sq` f32 (delta), every element phase 1 reads written by
//! phase 0 first, so nothing is zeroed. Kernel arguments: q, k, v, o, do, stats, dq, dk, dv,
//! scale, mask (null when absent), the workspace, H, REP, SQ, SKV, D, the strides (spec drops
//! the eight head-dim strides), scale_bits, mask_kind, flags, shift, right, left, phase
//! (`by_value` 4), the two scratch pointers. With a mask tensor every block runs masked.

use crate::ingestor::framework::attention::{
    BOUND_MAX, FLAG_SCALE_TENSOR, SEQ_MAX, batch_heads, check_bucket, check_heads, read_band,
    read_mask, read_scale, span,
};
use crate::ingestor::framework::conv::CONFIG;
use crate::ingestor::framework::family;
use crate::ingestor::framework::launch::check_tiles;
use crate::ingestor::framework::prelude::*;

/// The versioned contract name.
pub const SDPA_BWD_V1: &str = "hipkernel.sdpa_bwd.dispatch.v1";

/// Stride value names, in kernel order: q, k, v, o, do, dq, dk, dv over (b, h, s, d), the
/// statistics over (b, h, s), the mask over (b, h, i, j) (0 on broadcast axes and without a
/// mask).
#[rustfmt::skip]
pub const STRIDES: [&str; 39] = [
    "sqb", "sqh", "sqs", "sqd", "skb", "skh", "sks", "skd", "svb", "svh", "svs", "svd",
    "sob", "soh", "sos", "sod", "sdob", "sdoh", "sdos", "sdod", "sdqb", "sdqh", "sdqs", "sdqd",
    "sdkb", "sdkh", "sdks", "sdkd", "sdvb", "sdvh", "sdvs", "sdvd", "stb", "sth", "sts",
    "smb", "smh", "sms", "smk",
];
/// Indices in [`STRIDES`] of the unit head-dim strides the spec variant takes as constant 1.
const SPEC_UNIT: [usize; 8] = [3, 7, 11, 15, 19, 23, 27, 31];
/// The pointers' UID values in kernel order (the workspace pointer follows them).
#[rustfmt::skip]
const POINTER_UIDS: [&str; 11] = [
    "q.uid", "k.uid", "v.uid", "o.uid", "do.uid", "stats.uid", "dq.uid", "dk.uid", "dv.uid",
    "scale.uid", "mask.uid",
];
/// The data tensors' UID values (16-byte aligned for a spec entry).
#[rustfmt::skip]
const DATA_UIDS: [&str; 8] = [
    "q.uid", "k.uid", "v.uid", "o.uid", "do.uid", "dq.uid", "dk.uid", "dv.uid",
];
/// Index in `VALUES` of the first stride, of `scale_bits` and of `scale.uid`.
const STRIDE0: usize = 16;
const MISC0: usize = STRIDE0 + 39;
const SCALE_UID: usize = MISC0 + 6;
const MASK_UID: usize = SCALE_UID + 1;
/// The largest key tile the static rule gives a graph whose phase 1 runs fewer than
/// `MIN_TILES` programs.
const SMALL_TILE: i64 = 64;

crate::triton_handler!(SdpaBwdHandler = SdpaBwdInputs);

/// Every value name of the contract, sorted.
pub fn value_names() -> Vec<&'static str> {
    family::value_names(SdpaBwdInputs::VALUES)
}

/// The kernel parameter names of a variant, in order (with the two scratch pointers).
pub fn param_names(spec: bool) -> Vec<&'static str> {
    <SdpaBwdInputs as TritonFamily>::param_names(spec)
}

/// The kernel signature of a variant (natural layout, named).
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    <SdpaBwdInputs as TritonFamily>::signature(spec)
}

fn cdiv(a: i64, b: i64) -> i64 {
    (a + b - 1) / b.max(1)
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdpaBwdInputs {
    /// UIDs of q, k, v, o, do, stats, dq, dk and dv.
    pub uids: [i64; 9],
    /// UID of the device scale tensor (`flags` bit 0).
    pub scale_uid: Option<i64>,
    /// UID of the mask tensor (`mask_kind` ≠ 0).
    pub mask_uid: Option<i64>,
    /// `DataType` value of the eight data tensors.
    pub dtype: i8,
    /// b, h, rep (= H / H_kv), sq, skv, d.
    pub shape: [i64; 6],
    /// The 39 element strides in [`STRIDES`] order.
    pub strides: [i64; 39],
    /// scale_bits, mask_kind, flags, shift, right, left.
    pub misc: [i64; 6],
    /// Kernel configuration.
    pub config: TritonConfig,
}

impl SdpaBwdInputs {
    /// Workspace bytes: `b·h·sq` f32 (delta).
    pub fn workspace_bytes(&self) -> u64 {
        (self.shape[0] * self.shape[1] * self.shape[3]) as u64 * 4
    }
}

impl TritonFamily for SdpaBwdInputs {
    const FAMILY: &'static str = "sdpa_bwd";
    const CONTRACT: &'static str = SDPA_BWD_V1;
    #[rustfmt::skip]
    const VALUES: &'static [IntValue] = &concat::<71>(&[
        &[uid("q.uid"), uid("k.uid"), uid("v.uid"), uid("o.uid"), uid("do.uid")],
        &[uid("stats.uid"), uid("dq.uid"), uid("dk.uid"), uid("dv.uid"), int("dtype", 1, 3)],
        &[int("b", 1, I32_MAX), int("h", 1, I32_MAX), int("rep", 1, I32_MAX)],
        &[int("sq", 1, SEQ_MAX), int("skv", 1, SEQ_MAX), int("d", 1, I32_MAX)],
        &strides(STRIDES),
        &[int("scale_bits", i32::MIN as i64, I32_MAX), int("mask_kind", 0, 4)],
        &[int("flags", 0, 25), int("shift", -SEQ_MAX, SEQ_MAX)],
        &[int("right", -BOUND_MAX, BOUND_MAX), int("left", -BOUND_MAX, BOUND_MAX)],
        &[uid("scale.uid"), uid("mask.uid")],
        &CONFIG,
    ]);
    const POINTERS: &'static [&'static str] = &POINTER_UIDS;
    const ALIGNED: &'static [&'static str] = &DATA_UIDS;
    const ALIGNED_TEXT: &'static str = "16-byte aligned q, k, v, o, do, dq, dk and dv";
    const OPTIONAL: &'static [&'static str] = &["scale.uid", "mask.uid"];
    const SPEC_HINTS: &'static str = "head dim a multiple of 16, unit head-dim strides, the batch, head and row strides of q, k, v, o, do, dq, dk and dv multiples of 16";

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        read_graph(graph)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    fn fits_spec(&self) -> bool {
        self.shape[5] % 16 == 0
            && SPEC_UNIT.iter().all(|&i| self.strides[i] == 1)
            && (0..32)
                .filter(|i| !SPEC_UNIT.contains(i))
                .all(|i| self.strides[i] % 16 == 0)
    }

    /// The head-dim bucket, the spec hints, then the static rule (module docs): `kernel <k>
    /// serves head dims in the bucket <b>; the graph's head dim <d> takes bucket <b'>`;
    /// `kernel <k> is the spec variant; …`; `kernel <k>: static rule: <t> tiles under-fill the
    /// device …`.
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        check_bucket(kernel, config.block[2], self.shape[5])?;
        spec_hints(kernel, &config, self.fits_spec(), Self::SPEC_HINTS)?;
        let programs =
            cdiv(self.shape[4], config.block[1]) * self.shape[0] * self.shape[1] / self.shape[2];
        check_tiles(kernel, config.block[1] > SMALL_TILE, programs)?;
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
        v.push(self.scale_uid.unwrap_or(0));
        v.push(self.mask_uid.unwrap_or(0));
        v.extend([
            c.variant_code(),
            c.block[0],
            c.block[1],
            c.block[2],
            c.group_m,
            c.num_warps,
            c.shared_bytes,
            c.warp_size,
        ]);
        v
    }

    fn from_ints(v: &[i64]) -> Self {
        let c = &v[MASK_UID + 1..];
        let mut config =
            TritonConfig::restored("sdpa_bwd", c[0], [c[1], c[2], c[3]], c[4], c[5], c[6], c[7]);
        config.dtype = ["f32", "f16", "bf16"][(v[9] - 1) as usize].into();
        SdpaBwdInputs {
            uids: std::array::from_fn(|i| v[i]),
            scale_uid: Some(v[SCALE_UID]).filter(|_| v[MISC0 + 2] & FLAG_SCALE_TENSOR != 0),
            mask_uid: Some(v[MASK_UID]).filter(|_| v[MISC0 + 1] != 0),
            dtype: v[9] as i8,
            shape: std::array::from_fn(|i| v[10 + i]),
            strides: std::array::from_fn(|i| v[STRIDE0 + i]),
            misc: std::array::from_fn(|i| v[MISC0 + i]),
            config,
        }
    }

    /// `flags` bits 1 and 2 clear (`launch values of dispatch '<d>': 'flags' has bits 1 or 2
    /// set (<f>)`); `scale.uid` present exactly when `flags` bit 0 is set and `mask.uid`
    /// exactly when `mask_kind` is not 0 (`launch values of dispatch '<d>': '<name>' is
    /// present iff <condition>`).
    fn read_value(r: &ValueReader<'_>, read: &[i64], i: usize) -> PluginResult<i64> {
        if i != SCALE_UID && i != MASK_UID {
            return r.read(i);
        }
        let (d, kind, flags) = (r.dispatch(), read[MISC0 + 1], read[MISC0 + 2]);
        if flags & 6 != 0 {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}': 'flags' has bits 1 or 2 set ({flags})"
            )));
        }
        let (name, want, cond) = if i == SCALE_UID {
            ("scale.uid", flags & FLAG_SCALE_TENSOR != 0, "'flags' bit 0")
        } else {
            ("mask.uid", kind != 0, "'mask_kind' is not 0")
        };
        let has = r.has(name);
        if has != want {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}': '{name}' is present iff {cond}"
            )));
        }
        if has { r.read(i) } else { Ok(0) }
    }

    fn present(&self, name: &str) -> bool {
        match name {
            "scale.uid" => self.scale_uid.is_some(),
            _ => self.mask_uid.is_some(),
        }
    }

    /// `launch values of dispatch '<d>': 'rep' must divide 'h' and 'd' must not exceed
    /// 'block_k'`; `launch values of dispatch '<d>' name the spec variant, whose head-dim
    /// strides must be 1`; the geometry texts.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        let d = quote(dispatch);
        let shape = self.shape;
        check_heads(dispatch, shape[1], shape[2], shape[5], self.config.block[2])?;
        if self.config.spec && SPEC_UNIT.iter().any(|&i| self.strides[i] != 1) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose head-dim strides must be 1"
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
            "do_ptr",
            "stats_ptr",
            "dq_ptr",
            "dk_ptr",
            "dv_ptr",
            "scale_ptr",
            "mask_ptr",
            "ws_ptr",
            "H",
            "REP",
            "SQ",
            "SKV",
            "D",
        ];
        v.extend(spec_kept(&STRIDES, spec, &SPEC_UNIT));
        v.extend([
            "scale_bits",
            "mask_kind",
            "flags",
            "shift",
            "right",
            "left",
            "phase",
        ]);
        v.extend(["global_scratch", "profile_scratch"]);
        v
    }

    /// H, REP, SQ, SKV, D, the variant's strides, the scale and band values, `phase` 1 (the
    /// main launch).
    fn scalars(&self) -> Vec<i64> {
        let mut ints: Vec<i64> = self.shape[1..].to_vec();
        ints.extend(spec_kept(&self.strides, self.config.spec, &SPEC_UNIT));
        ints.extend(self.misc);
        ints.push(1);
        ints
    }

    /// The main launch (phase 1): grid (cdiv(skv, block_n), b·h / rep, 1). Errors:
    /// `NOT_APPLICABLE` [`TritonConfig::threads_per_block`]'s text; `launch values 'b' and
    /// 'h' of dispatch '<d>' give <n> batch-heads; the grid takes at most 65535`.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        let bh = batch_heads(dispatch, self.shape[0], self.shape[1])?;
        let keys = cdiv(self.shape[4], c.block[1]);
        let grid = [keys as u32, (bh / self.shape[2].max(1)) as u32, 1];
        Ok(block_geometry(c, grid, threads))
    }

    fn workspace_bytes(&self) -> u64 {
        SdpaBwdInputs::workspace_bytes(self)
    }

    /// A spec launch refuses (BAD_PARAM) a data tensor bound to an address that is not
    /// 16-byte aligned before any binding refusal; then [`pointer_args`] (the scale pointer
    /// null when absent) with the workspace after the scale.
    ///
    /// # Errors
    /// `BAD_PARAM` as [`pointer_args`]; `the workspace is at <addr>; this plan runs sdpa_bwd,
    /// whose delta rows need a 4-byte aligned device workspace` (also for none bound).
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        check_aligned::<Self>(launch, tensors)?;
        let mut out = pointer_args::<Self>(launch, tensors)?;
        let ws = workspace.unwrap_or(0);
        if ws == 0 || ws % 4 != 0 {
            return Err(PluginError::bad_param(format!(
                "the workspace is at {ws:#x}; this plan runs sdpa_bwd, whose delta rows need a 4-byte aligned device workspace"
            )));
        }
        out.insert(POINTER_UIDS.len(), KernelArgValue::Pointer(ws));
        Ok(out)
    }

    /// Phase 0 (delta and dQ): the same arguments with `phase` 0 on grid (cdiv(sq, block_n),
    /// b·h, 1); none when `args` does not end with `phase` 1 and the two scratch pointers.
    fn prologue_launches(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
        let get = |n: &str| match launch.launch_values.get(n) {
            Some(LaunchValue::Int(v)) => *v,
            _ => 0,
        };
        // `phase` is the last integer, before the two scratch pointers (param_names).
        let Some(phase) = args.len().checked_sub(3) else {
            return Vec::new();
        };
        if args[phase] != KernelArgValue::I32(1) {
            return Vec::new();
        }
        let mut pargs = args.to_vec();
        pargs[phase] = KernelArgValue::I32(0);
        let mut geometry = launch.geometry;
        let rows = cdiv(get("sq"), get("block_n"));
        geometry.grid = [rows as u32, (get("b") * get("h")) as u32, 1];
        vec![(geometry, pargs)]
    }
}

/// Reads the graph (one sdpa_backward node) into launch inputs with a placeholder config.
///
/// # Errors
/// `NOT_APPLICABLE` with the texts of the module docs' refusals, each naming the attribute,
/// tensor or value.
fn read_graph(graph: &OperationGraph) -> PluginResult<SdpaBwdInputs> {
    let a = one_node(graph, "sdpa_bwd", "sdpa_backward")?
        .attributes_as_sdpa_backward_attributes()
        .ok_or_else(|| na("the sdpa_bwd pack serves an sdpa_backward node"))?;
    if a.dropout_probability().is_some_and(|p| p != 0.0) {
        return Err(na(
            "the sdpa_bwd pack does not run dropout (dropout_probability ≠ 0)",
        ));
    }
    for (attr, u) in [
        ("dbias_tensor_uid", a.dbias_tensor_uid()),
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
        if let Some(u) = u {
            return Err(na(format!(
                "the sdpa_bwd pack does not serve {attr} (tensor {u}); the CPU reference engine does"
            )));
        }
    }
    if a.alibi_mask() {
        return Err(na("the sdpa_bwd pack does not serve alibi_mask"));
    }
    if a.padding_mask() {
        return Err(na(
            "the sdpa_bwd pack does not serve padding_mask (sequence-length tensors)",
        ));
    }
    if a.causal_mask() && a.causal_mask_bottom_right() {
        return Err(na(
            "the sdpa_bwd pack: causal_mask and causal_mask_bottom_right are both set",
        ));
    }
    let uids = [
        a.q_tensor_uid(),
        a.k_tensor_uid(),
        a.v_tensor_uid(),
        a.o_tensor_uid(),
        a.do_tensor_uid(),
        a.stats_tensor_uid(),
        a.dq_tensor_uid(),
        a.dk_tensor_uid(),
        a.dv_tensor_uid(),
    ];
    // The data tensors in stride order: q, k, v, o, do, dq, dk, dv.
    let data = [0, 1, 2, 3, 4, 6, 7, 8].map(|i| uids[i]);
    let ts = data
        .iter()
        .map(|u| tensor(graph, *u))
        .collect::<PluginResult<Vec<_>>>()?;
    let dtype = ts[0].data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype)
        || ts.iter().any(|t| t.data_type() != dtype)
    {
        let types: Vec<DataType> = ts.iter().map(|t| t.data_type()).collect();
        return Err(na(format!(
            "the sdpa_bwd pack serves f32, f16 and bf16 with q, k, v, o, do, dq, dk and dv of one type; they are {types:?}"
        )));
    }
    let ds: Vec<(Vec<i64>, Vec<i64>)> = ts.iter().map(dims_strides).collect();
    if ds.iter().any(|(d, _)| d.len() != 4) {
        let dims: Vec<&Vec<i64>> = ds.iter().map(|(d, _)| d).collect();
        return Err(na(format!(
            "the sdpa_bwd pack needs q, k, v, o, do, dq, dk and dv of 4 dims [B, H, S, D]; they are {dims:?}"
        )));
    }
    let (q, k, v) = (&ds[0].0, &ds[1].0, &ds[2].0);
    let (b, h, sq, dd) = (q[0], q[1], q[2], q[3]);
    let (hk, skv) = (k[1], k[2]);
    if v[3] != dd {
        return Err(na(format!(
            "the sdpa_bwd pack needs the value head dim equal to the query head dim; q {q:?}, v {v:?}"
        )));
    }
    let q_like = [b, h, sq, dd];
    let kv_like = [b, hk, skv, dd];
    if hk < 1
        || h % hk != 0
        || k.as_slice() != kv_like
        || v[..3] != kv_like[..3]
        || [3, 4, 5].iter().any(|&i| ds[i].0.as_slice() != q_like)
        || [6, 7].iter().any(|&i| ds[i].0.as_slice() != kv_like)
    {
        let dims: Vec<&Vec<i64>> = ds.iter().map(|(d, _)| d).collect();
        return Err(na(format!(
            "the sdpa_bwd pack: dims do not agree (q, k, v, o, do, dq, dk, dv): {dims:?}"
        )));
    }
    if sq > SEQ_MAX || skv > SEQ_MAX {
        return Err(na(format!(
            "the sdpa_bwd pack serves sequences of at most {SEQ_MAX}; q {q:?}, k {k:?}"
        )));
    }
    if !(1..=128).contains(&dd) {
        return Err(na(format!(
            "the sdpa_bwd pack serves head dims 1 to 128; q {q:?}"
        )));
    }
    let max = i64::from(i32::MAX);
    let names = ["q", "k", "v", "o", "do", "dq", "dk", "dv"];
    for ((d, s), what) in ds.iter().zip(names) {
        if d.iter().any(|x| *x < 1 || *x > max)
            || s.iter().any(|x| *x < 0)
            || span(d, s).is_none_or(|x| x > max)
        {
            return Err(na(format!(
                "the sdpa_bwd pack needs extents in [1, 2147483647], non-negative strides and element offsets of {what} within 2147483647; dims {d:?}, strides {s:?}"
            )));
        }
    }
    // Statistics.
    let stt = tensor(graph, uids[5])?;
    let (sd, ss) = dims_strides(&stt);
    if stt.data_type() != DataType::FLOAT || sd.as_slice() != [b, h, sq, 1] {
        return Err(na(format!(
            "the sdpa_bwd pack reads the forward's stats as FLOAT [B, H, S_q, 1] = [{b}, {h}, {sq}, 1]; tensor {} is {:?} {sd:?}",
            uids[5],
            stt.data_type()
        )));
    }
    if ss.iter().any(|s| *s < 0) || span(&sd, &ss).is_none_or(|x| x > max) {
        return Err(na(format!(
            "the sdpa_bwd pack needs non-negative stats strides with offsets within 2147483647; tensor {} has strides {ss:?}",
            uids[5]
        )));
    }
    let scale = read_scale(
        graph,
        "sdpa_bwd",
        a.attn_scale_value(),
        a.scale_tensor_uid(),
    )?;
    let (band, shift, right, left) = read_band(
        a.causal_mask(),
        a.causal_mask_bottom_right(),
        a.diagonal_alignment(),
        a.left_bound(),
        a.right_bound(),
        sq,
        skv,
    );
    let flags = band | scale.tensor.map_or(0, |_| FLAG_SCALE_TENSOR);
    let (mask_kind, mask_strides) = match a.attn_mask_tensor_uid() {
        Some(u) => read_mask(graph, "sdpa_bwd", u, [b, h, sq, skv])?,
        None => (0, [0; 4]),
    };
    let mut strides = [0i64; 39];
    let all = ds
        .iter()
        .flat_map(|(_, s)| s)
        .chain(&ss[..3])
        .chain(&mask_strides);
    for (i, x) in all.enumerate() {
        strides[i] = *x;
    }
    Ok(SdpaBwdInputs {
        uids,
        scale_uid: scale.tensor,
        mask_uid: a.attn_mask_tensor_uid(),
        dtype: dtype.0,
        shape: [b, h, h / hk, sq, skv, dd],
        strides,
        misc: [scale.bits, mask_kind, flags, shift, right, left],
        config: TritonConfig::parse("sdpa_bwd_f32_generic_16x64x32_g1_w4_s1_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    })
}
