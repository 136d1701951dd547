//! Matmul pack, contract `hipkernel.matmul.dispatch.v2`: batched C = A·B with a fused
//! epilogue (scale, bias[n], residual, activation; [`super::epilogue`]) on the Triton kernels
//! of `engines/kernels/triton/matmul.py` (gpu-toolchain.md §12), ONE launch.
//! (`hipkernel.matmul.dispatch.v1` — bias and ReLU only, no residual or scale pointers — is
//! still restored from plans saved before v2; new builds use v2.)
//!
//! Graphs served: `matmul` followed by up to five pointwise nodes that form the epilogue
//! (`MUL(scale)`, `ADD(bias)`, `ADD(residual)`, one of RELU_FWD / GELU_FWD /
//! GELU_APPROX_TANH_FWD / SIGMOID_FWD / TANH_FWD / SWISH_FWD, `ADD(residual)`, in that order,
//! each at most once). A is `[..batch, M, K]`, B `[..batch, K, N]`, C `[..batch, M, N]`, any
//! strides (row- or column-major per operand) whose batch dims collapse to one (count, stride)
//! per operand (an operand whose batch dims are all 1 broadcasts with stride 0); f16, bf16
//! (f32 accumulate) or f32 (IEEE; the `tf32` entries, TF32 products, only behind the
//! engine's `KNOB_TF32`), one data type for every tensor. The bias has dims `[1, .., 1, N]`
//! with unit stride on N; the residual has C's dims (any strides that collapse like C's); the scale has dims all 1; intermediates must be virtual.
//!
//! Kernel entries (descriptor `name`, written by `xtask pack-kernels`):
//! `matmul_<dtype>_<variant>_<bm>x<bn>x<bk>_g<group>_w<warps>_s<stages>_sh<shared>_ws<warp>`.
//! `variant` is `spec` (pointers 16-byte aligned; M, N, K, the leading and batch strides
//! multiples of 16; unit strides of A's K, B's N, C's N and the residual's N constant 1),
//! `bcol` (the same with B column-major: B's K stride constant 1 and its N stride a multiple of
//! 16 — a `(N, K)` row-major weight used as B = Wᵀ, PyTorch's `Linear` layout; v2 only) or
//! `generic` (no hints).
//!
//! **Static rule** (no benchmarking): entries are tried in pack order (spec and bcol before
//! generic, larger tiles first); a spec or bcol entry serves a graph whose shape satisfies its
//! hints (never both: their unit strides exclude each other), except that a tile larger than
//! 64×128 is refused when it would give fewer than [`MIN_TILES`] tiles (the device would be
//! under-filled), and for f32 (IEEE products on CUDA cores, not `tf32`) when K is at most
//! [`F32_SHORT_K`]; the generic entry serves every graph. Pointer alignment is only known at
//! execute: a plan on a spec or bcol entry refuses (BAD_PARAM) tensors that are not 16-byte
//! aligned.
//!
//! | launch value | type | range |
//! |---|---|---|
//! | `a.uid`, `b.uid`, `c.uid` | int | any; `bias.uid` present iff `epilogue` bit 0, `res.uid` iff bit 4 or 5, `scale.uid` iff bit 6 |
//! | `dtype` | int | `DataType` FLOAT 1, HALF 2, BFLOAT16 3 |
//! | `batch` | int | [1, 65535] |
//! | `m`, `n`, `k` | int | [1, 2147483647] |
//! | `stride_ab`, `stride_am`, `stride_ak`, `stride_bb`, `stride_bk`, `stride_bn`, `stride_cb`, `stride_cm`, `stride_cn`, `stride_rb`, `stride_rm`, `stride_rn` | int | [0, 2147483647] (elements; the residual's are C's without one) |
//! | `epilogue` | int | [0, 127], [`super::epilogue`]'s code (v1: [0, 3], bit 0 bias, bit 1 ReLU) |
//! | `spec` | int | 0 generic, 1 spec, 4 bcol (v2 only); spec and bcol need their unit strides to be 1 |
//! | `block_m`, `block_n`, `block_k` | int | [16, 256] |
//! | `group_m` | int | [1, 64] |
//! | `num_warps` | int | [1, 16]; `warp_size` 32 or 64; num_warps·warp_size ≤ 1024 |
//! | `shared_bytes` | int | [0, 262144] |
//!
//! Launch: grid (cdiv(m, block_m)·cdiv(n, block_n), batch, 1), block (num_warps·warp_size,
//! 1, 1), dynamic shared memory `shared_bytes` (the device raises the function's limit above
//! 48 KiB), workspace 0 (every packed entry has zero global and profile scratch, so both
//! trailing scratch pointers are null). Kernel arguments, named as the descriptor's parameter
//! list: a_ptr, b_ptr, c_ptr, bias_ptr, res_ptr, scale_ptr (null when absent), M, N, K,
//! stride_ab, stride_am, [stride_ak,] stride_bb, stride_bk, [stride_bn,] stride_cb, stride_cm,
//! [stride_cn,] stride_rb, stride_rm, [stride_rn,] epilogue, global_scratch, profile_scratch
//! (bracketed ones only in the generic variant — the bcol variant drops stride_bk instead of
//! stride_bn; v1 has no res/scale pointers or residual strides).

use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::framework::epilogue::match_epilogue;
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::framework::graph::{dims_strides, na};
use crate::ingestor::framework::triton::{MIN_TILES, TritonConfig, triton_kernel_args};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::TensorBinding;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::{DataType, Node};

/// Contract v1 (bias and ReLU epilogue; no residual or scale pointers): restored from plans
/// saved before v2, never chosen for a new build.
pub const MATMUL_V1: &str = "hipkernel.matmul.dispatch.v1";
/// Contract v2: the kernel takes residual and scale pointers and residual strides, and the
/// epilogue is [`super::epilogue`]'s code.
pub const MATMUL_V2: &str = "hipkernel.matmul.dispatch.v2";
/// Largest K at which the static rule refuses an f32 (IEEE; not `tf32`) spec or bcol tile
/// larger than 64×128: over a short reduction the big tile's pipeline fill and 8-warp
/// epilogue are not amortized. From a benchmarking build on an H200 (2026-12-04, Triton 3.9
/// entries, MiniLM's Linear layers, `docs/PERFORMANCE.md`): at M 4096, N 1536, K 384 the
/// 64×64×32 tile ran in 0.126 ms against 0.140 ms for 128×128; 2048³ and 4096³ keep the
/// 128×128 tile (issue 10's f32 rows).
pub const F32_SHORT_K: i64 = 512;
/// Epilogue bit: add bias[n].
pub const EPILOGUE_BIAS: i64 = 1;
/// Epilogue code of ReLU after the bias (activation 1 in bits 1–3).
pub const EPILOGUE_RELU: i64 = 2;

/// Value names of contract v1 (sorted).
pub const MATMUL_V1_NAMES: [&str; 27] = [
    "a.uid",
    "b.uid",
    "batch",
    "bias.uid",
    "block_k",
    "block_m",
    "block_n",
    "c.uid",
    "dtype",
    "epilogue",
    "group_m",
    "k",
    "m",
    "n",
    "num_warps",
    "shared_bytes",
    "spec",
    "stride_ab",
    "stride_ak",
    "stride_am",
    "stride_bb",
    "stride_bk",
    "stride_bn",
    "stride_cb",
    "stride_cm",
    "stride_cn",
    "warp_size",
];

/// Value names v2 adds to [`MATMUL_V1_NAMES`].
pub const MATMUL_V2_EXTRA: [&str; 5] = [
    "res.uid",
    "scale.uid",
    "stride_rb",
    "stride_rm",
    "stride_rn",
];

/// The value names of contract `version` (1 or 2), sorted.
pub fn value_names(version: u8) -> Vec<&'static str> {
    let mut v = MATMUL_V1_NAMES.to_vec();
    if version >= 2 {
        v.extend(MATMUL_V2_EXTRA);
        v.sort_unstable();
    }
    v
}

const STRIDE_NAMES: [&str; 9] = [
    "stride_ab",
    "stride_am",
    "stride_ak",
    "stride_bb",
    "stride_bk",
    "stride_bn",
    "stride_cb",
    "stride_cm",
    "stride_cn",
];

/// The launch inputs of contracts v1 and v2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatmulInputs {
    /// Contract version: 2 for new builds, 1 for plans saved before v2.
    pub version: u8,
    /// UIDs of A, B and C (C = the last node's output).
    pub uids: [i64; 3],
    /// UID of the bias, when epilogue bit 0 is set.
    pub bias_uid: Option<i64>,
    /// UID of the residual, when epilogue bit 4 or 5 is set (v2).
    pub residual_uid: Option<i64>,
    /// UID of the one-element scale, when epilogue bit 6 is set (v2).
    pub scale_uid: Option<i64>,
    /// `DataType` value.
    pub dtype: i8,
    /// Batch count.
    pub batch: i64,
    /// M, N, K.
    pub mnk: [i64; 3],
    /// stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn, stride_cb, stride_cm,
    /// stride_cn (elements).
    pub strides: [i64; 9],
    /// stride_rb, stride_rm, stride_rn of the residual (elements; C's strides without one).
    pub res_strides: [i64; 3],
    /// Epilogue code ([`super::epilogue`]).
    pub epilogue: i64,
    /// The kernel configuration (its `family`/`dtype` strings are not saved).
    pub config: TritonConfig,
}

impl MatmulInputs {
    /// The contract name of this launch's version.
    pub fn contract(&self) -> &'static str {
        if self.version >= 2 {
            MATMUL_V2
        } else {
            MATMUL_V1
        }
    }

    /// Whether the shape satisfies the spec variant's hints (pointer alignment is checked at
    /// execute): M, N, K, stride_ab/am/bb/bk/cb/cm (and stride_rb/rm) multiples of 16,
    /// stride_ak/bn/cn (and stride_rn) = 1.
    pub fn fits_spec(&self) -> bool {
        let s = self.strides;
        let r = self.res_strides;
        self.mnk.iter().all(|v| v % 16 == 0)
            && [s[0], s[1], s[3], s[4], s[6], s[7], r[0], r[1]]
                .iter()
                .all(|v| v % 16 == 0)
            && s[2] == 1
            && s[5] == 1
            && s[8] == 1
            && (self.version < 2 || r[2] == 1)
    }

    /// Whether the shape satisfies the bcol variant's hints (pointer alignment is checked at
    /// execute): those of [`Self::fits_spec`] with B column-major: stride_bn (not stride_bk)
    /// a multiple of 16 and stride_bk (not stride_bn) = 1.
    pub fn fits_bcol(&self) -> bool {
        let s = self.strides;
        let r = self.res_strides;
        self.version >= 2
            && self.mnk.iter().all(|v| v % 16 == 0)
            && [s[0], s[1], s[3], s[5], s[6], s[7], r[0], r[1]]
                .iter()
                .all(|v| v % 16 == 0)
            && s[2] == 1
            && s[4] == 1
            && s[8] == 1
            && r[2] == 1
    }

    /// The launch values.
    pub fn to_values(&self) -> LaunchValues {
        let mut v = LaunchValues::new();
        let mut put = |n: &str, x: i64| {
            v.insert(n.to_string(), LaunchValue::Int(x));
        };
        put("a.uid", self.uids[0]);
        put("b.uid", self.uids[1]);
        put("c.uid", self.uids[2]);
        if let Some(b) = self.bias_uid {
            put("bias.uid", b);
        }
        if let Some(u) = self.residual_uid {
            put("res.uid", u);
        }
        if let Some(u) = self.scale_uid {
            put("scale.uid", u);
        }
        if self.version >= 2 {
            for (n, x) in ["stride_rb", "stride_rm", "stride_rn"]
                .iter()
                .zip(self.res_strides)
            {
                put(n, x);
            }
        }
        put("dtype", i64::from(self.dtype));
        put("batch", self.batch);
        put("m", self.mnk[0]);
        put("n", self.mnk[1]);
        put("k", self.mnk[2]);
        for (n, x) in STRIDE_NAMES.iter().zip(self.strides) {
            put(n, x);
        }
        put("epilogue", self.epilogue);
        let c = &self.config;
        put("spec", c.variant_code());
        put("block_m", c.block[0]);
        put("block_n", c.block[1]);
        put("block_k", c.block[2]);
        put("group_m", c.group_m);
        put("num_warps", c.num_warps);
        put("warp_size", c.warp_size);
        put("shared_bytes", c.shared_bytes);
        v
    }

    /// Reads values saved under `dispatch` for contract `version` (1 or 2) and checks them.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) with the reader texts; `launch values of dispatch '<d>'
    /// hold epilogue <e>: <why>` (v2: [`crate::ingestor::framework::epilogue::invalid_reason`]); `launch value
    /// '<name>' of dispatch '<d>' must be present exactly when 'epilogue' <bits> is set;
    /// epilogue is <e>` (bias: bit 1 (v1) / bit 0 (v2); `res.uid`: bits 4/5; `scale.uid`: bit
    /// 6); `launch values of dispatch '<d>' name the spec variant, whose unit strides
    /// 'stride_ak', 'stride_bn' and 'stride_cn' (and 'stride_rn') must be 1`; the geometry
    /// texts.
    pub fn from_values(dispatch: &str, values: &LaunchValues, version: u8) -> PluginResult<Self> {
        let contract = if version >= 2 { MATMUL_V2 } else { MATMUL_V1 };
        let names = value_names(version);
        let r = ContractReader::new(dispatch, contract, &names, values)?;
        let max = i64::from(i32::MAX);
        let d = quote(dispatch);
        let crate::ingestor::framework::epilogue::SavedEpilogue {
            code: epilogue,
            bias: bias_uid,
            residual: residual_uid,
            scale: scale_uid,
        } = crate::ingestor::framework::epilogue::read_saved(&r, values, dispatch, version)?;
        let mut strides = [0i64; 9];
        for (i, n) in STRIDE_NAMES.iter().enumerate() {
            strides[i] = r.int(n, 0, max)?;
        }
        let dtype = r.int("dtype", 1, 3)? as i8;
        let spec = r.int("spec", 0, if version >= 2 { 4 } else { 1 })?;
        if !matches!(spec, 0 | 1 | 4) {
            return Err(incompatible(format!(
                "launch value 'spec' of dispatch '{d}' is {spec}; the matmul contract takes 0 (generic), 1 (spec) or 4 (bcol)"
            )));
        }
        let config = TritonConfig {
            family: "matmul".into(),
            dtype: match dtype {
                1 => "f32",
                2 => "f16",
                _ => "bf16",
            }
            .into(),
            spec: spec == 1,
            channels_first: false,
            transposing: false,
            b_col: spec == 4,
            block: [
                r.int("block_m", 16, 256)?,
                r.int("block_n", 16, 256)?,
                r.int("block_k", 16, 256)?,
            ],
            group_m: r.int("group_m", 1, 64)?,
            num_warps: r.int("num_warps", 1, 16)?,
            num_stages: 0,
            shared_bytes: r.int("shared_bytes", 0, 262_144)?,
            warp_size: r.int("warp_size", 32, 64)?,
        };
        let res_strides = if version >= 2 {
            [
                r.int("stride_rb", 0, max)?,
                r.int("stride_rm", 0, max)?,
                r.int("stride_rn", 0, max)?,
            ]
        } else {
            [strides[6], strides[7], strides[8]]
        };
        let inputs = MatmulInputs {
            version: version.clamp(1, 2),
            uids: [
                r.int("a.uid", i64::MIN, i64::MAX)?,
                r.int("b.uid", i64::MIN, i64::MAX)?,
                r.int("c.uid", i64::MIN, i64::MAX)?,
            ],
            bias_uid,
            residual_uid,
            scale_uid,
            dtype,
            batch: r.int("batch", 1, 65_535)?,
            mnk: [
                r.int("m", 1, max)?,
                r.int("n", 1, max)?,
                r.int("k", 1, max)?,
            ],
            strides,
            res_strides,
            epilogue,
            config,
        };
        if inputs.config.spec
            && ([strides[2], strides[5], strides[8]] != [1, 1, 1] || res_strides[2] != 1)
        {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose unit strides 'stride_ak', 'stride_bn' and 'stride_cn' (and 'stride_rn') must be 1"
            )));
        }
        if inputs.config.b_col
            && ([strides[2], strides[4], strides[8]] != [1, 1, 1] || res_strides[2] != 1)
        {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the bcol variant, whose unit strides 'stride_ak', 'stride_bk' and 'stride_cn' (and 'stride_rn') must be 1"
            )));
        }
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    /// Grid, block and shared memory (shared by build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'warp_size' and 'num_warps' of dispatch '<d>' give <t>
    /// threads per block; the contract takes warp size 32 or 64 and at most 1024 threads`;
    /// `launch values 'm', 'n', 'block_m' and 'block_n' of dispatch '<d>' give more than
    /// 2147483647 tiles`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let d = quote(dispatch);
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        let tiles = self.tiles();
        let tiles = u32::try_from(tiles)
            .ok()
            .filter(|t| *t <= i32::MAX as u32)
            .ok_or_else(|| {
                incompatible(format!(
                    "launch values 'm', 'n', 'block_m' and 'block_n' of dispatch '{d}' give more than 2147483647 tiles"
                ))
            })?;
        Ok(LaunchGeometry {
            grid: [tiles, self.batch as u32, 1],
            block: [threads as u32, 1, 1],
            shared_mem_bytes: c.shared_bytes as u32,
        })
    }

    /// Tiles per batch entry: cdiv(m, block_m)·cdiv(n, block_n).
    pub fn tiles(&self) -> i64 {
        let c = &self.config;
        ((self.mnk[0] + c.block[0] - 1) / c.block[0])
            * ((self.mnk[1] + c.block[1] - 1) / c.block[1])
    }

    /// The prepared launch: `pointer_uids` a, b, c[, bias][, residual][, scale]; `scalar_args`
    /// the integer parameters of the variant in order.
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let mut pointer_uids = self.uids.to_vec();
        pointer_uids.extend(self.bias_uid);
        pointer_uids.extend(self.residual_uid);
        pointer_uids.extend(self.scale_uid);
        let s = self.strides;
        let r = self.res_strides;
        let names = param_names(self.config.variant_code(), self.version);
        // The integer parameters the variant keeps, in its parameter order.
        let value = |n: &str| match n {
            "M" => Some(self.mnk[0]),
            "N" => Some(self.mnk[1]),
            "K" => Some(self.mnk[2]),
            "epilogue" => Some(self.epilogue),
            "stride_rb" => Some(r[0]),
            "stride_rm" => Some(r[1]),
            "stride_rn" => Some(r[2]),
            _ => STRIDE_NAMES.iter().position(|x| *x == n).map(|i| s[i]),
        };
        let ints: Vec<i64> = names.iter().filter_map(|n| value(n)).collect();
        Ok(PreparedLaunch {
            dispatch: self.contract().to_string(),
            launch_values: self.to_values(),
            geometry: self.geometry_for(self.contract())?,
            workspace_bytes: 0,
            pointer_uids,
            scalar_args: ints
                .into_iter()
                .map(|v| KernelArgValue::I32(v as i32))
                .collect(),
        })
    }
}

/// The parameter list (names in order) of variant `variant` (the `spec` launch value: 0
/// generic, 1 spec, 4 bcol) of contract `version`: what `xtask pack-kernels` records (v2) or
/// recorded (v1). spec drops the unit strides stride_ak, stride_bn, stride_cn, stride_rn
/// (constexpr 1 in its kernel); bcol drops stride_ak, stride_bk, stride_cn, stride_rn.
pub fn param_names(variant: i64, version: u8) -> Vec<&'static str> {
    let unit: &[&str] = match variant {
        1 => &["stride_ak", "stride_bn", "stride_cn", "stride_rn"],
        4 => &["stride_ak", "stride_bk", "stride_cn", "stride_rn"],
        _ => &[],
    };
    let mut v = vec!["a_ptr", "b_ptr", "c_ptr", "bias_ptr"];
    if version >= 2 {
        v.extend(["res_ptr", "scale_ptr"]);
    }
    v.extend(["M", "N", "K", "stride_ab", "stride_am", "stride_ak"]);
    v.extend(["stride_bb", "stride_bk", "stride_bn"]);
    v.extend(["stride_cb", "stride_cm", "stride_cn"]);
    if version >= 2 {
        v.extend(["stride_rb", "stride_rm", "stride_rn"]);
    }
    v.retain(|n| !unit.contains(n));
    v.extend(["epilogue", "global_scratch", "profile_scratch"]);
    v
}

/// The kernel signature of variant `variant` (as [`param_names`]) of contract `version`
/// (natural layout, named).
pub fn signature(variant: i64, version: u8) -> Vec<KernelArgument> {
    let mut off = 0u32;
    param_names(variant, version)
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

/// One operand's matrix view: batch dims collapsed to (count, stride), the two matrix strides.
fn operand(
    dims: &[i64],
    strides: &[i64],
    batch_dims: &[i64],
    what: &str,
) -> PluginResult<(i64, i64, i64)> {
    let r = dims.len();
    let lead = &dims[..r - 2];
    let ls = &strides[..r - 2];
    // Broadcast (all batch dims 1) → stride 0.
    if lead.iter().all(|d| *d == 1) {
        return Ok((0, strides[r - 2], strides[r - 1]));
    }
    if lead != batch_dims {
        return Err(na(format!(
            "the matmul pack (dispatch v1) broadcasts an operand's batch only when all its batch dims are 1; {what} has batch dims {lead:?}, the output {batch_dims:?}"
        )));
    }
    // Collapse: each non-1 dim's stride = next non-1 dim's stride × its extent.
    let nz: Vec<usize> = (0..lead.len()).filter(|i| lead[*i] != 1).collect();
    for w in nz.windows(2) {
        if ls[w[0]] != ls[w[1]] * lead[w[1]] {
            return Err(na(format!(
                "the matmul pack (dispatch v1) needs batch dims that collapse to one stride; {what} has dims {dims:?}, strides {strides:?}"
            )));
        }
    }
    let last = *nz.last().unwrap_or(&0);
    Ok((ls[last], strides[r - 2], strides[r - 1]))
}

fn fits_i32(v: i64, what: &str) -> PluginResult<i64> {
    if (0..=i64::from(i32::MAX)).contains(&v) {
        Ok(v)
    } else {
        Err(na(format!(
            "the matmul pack (dispatch v1) needs {what} in [0, 2147483647], not {v}"
        )))
    }
}

/// Matches the matmul (+ epilogue) graph for contract v2; the config is filled in by the
/// caller.
fn match_graph(graph: &OperationGraph) -> PluginResult<MatmulInputs> {
    let g = graph.graph();
    let nodes: Vec<Node<'_>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.is_empty() || nodes.len() > 6 {
        return Err(na(format!(
            "the matmul pack serves matmul with up to five epilogue nodes; this graph has {} nodes",
            nodes.len()
        )));
    }
    let a = nodes[0]
        .attributes_as_matmul_attributes()
        .ok_or_else(|| na("the matmul pack serves graphs that start with a matmul node"))?;
    let at = tensor(graph, a.a_tensor_uid())?;
    let bt = tensor(graph, a.b_tensor_uid())?;
    let dtype = at.data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype)
        || bt.data_type() != dtype
    {
        return Err(na(format!(
            "the matmul pack serves f32, f16 and bf16 with A and B of one type, not {dtype:?} × {:?}",
            bt.data_type()
        )));
    }
    let (ad, as_) = dims_strides(&at);
    let (bd, bs) = dims_strides(&bt);
    let n_out = *bd.last().unwrap_or(&0);
    let is_bias = |d: &[i64], s: &[i64]| {
        !d.is_empty()
            && d[..d.len() - 1].iter().all(|v| *v == 1)
            && d[d.len() - 1] == n_out
            && (n_out == 1 || s[s.len() - 1] == 1)
    };
    let fused = match_epilogue(
        graph,
        &nodes[1..],
        a.c_tensor_uid(),
        "matmul",
        dtype,
        &is_bias,
        "a bias of dims [1, .., N] with unit N stride",
    )?;
    let cur = fused.out;
    let cur_t = tensor(graph, cur)?;
    let (cd, cs) = dims_strides(&cur_t);
    if cur_t.data_type() != dtype {
        return Err(na(format!(
            "the matmul pack (dispatch v1) writes C in the inputs' data type; C is {:?}",
            cur_t.data_type()
        )));
    }
    let r = cd.len();
    if r < 2 || ad.len() != r || bd.len() != r {
        return Err(na(format!(
            "the matmul pack (dispatch v1) needs A, B and C of one rank ≥ 2; A {ad:?}, B {bd:?}, C {cd:?}"
        )));
    }
    let (m, k, n) = (ad[r - 2], ad[r - 1], bd[r - 1]);
    if bd[r - 2] != k || cd[r - 2] != m || cd[r - 1] != n {
        return Err(na(format!(
            "the matmul pack (dispatch v1): dims disagree: A {ad:?}, B {bd:?}, C {cd:?}"
        )));
    }
    let batch_dims = cd[..r - 2].to_vec();
    let batch: i64 = batch_dims.iter().product();
    if !(1..=65_535).contains(&batch) {
        return Err(na(format!(
            "the matmul pack (dispatch v1) serves batch counts in [1, 65535], not {batch}"
        )));
    }
    let (sab, sam, sak) = operand(&ad, &as_, &batch_dims, "A")?;
    let (sbb, sbk, sbn) = operand(&bd, &bs, &batch_dims, "B")?;
    let (scb, scm, scn) = operand(&cd, &cs, &batch_dims, "C")?;
    let (srb, srm, srn) = match fused.residual {
        Some(u) => {
            let (rd, rs) = dims_strides(&tensor(graph, u)?);
            operand(&rd, &rs, &batch_dims, "the residual")?
        }
        None => (scb, scm, scn),
    };
    if batch > 1 && scb == 0 {
        return Err(na(
            "the matmul pack (dispatch v1) cannot write a broadcast C",
        ));
    }
    // In-kernel offsets within one matrix are int32.
    for (rows, cols, sr, sc, what) in [
        (m, k, sam, sak, "A"),
        (k, n, sbk, sbn, "B"),
        (m, n, scm, scn, "C"),
        (m, n, srm, srn, "residual"),
    ] {
        let span = (rows - 1)
            .checked_mul(sr)
            .and_then(|x| x.checked_add((cols - 1).checked_mul(sc)?))
            .unwrap_or(i64::MAX);
        fits_i32(
            span,
            &format!("the largest element offset of one {what} matrix"),
        )?;
    }
    Ok(MatmulInputs {
        version: 2,
        uids: [a.a_tensor_uid(), a.b_tensor_uid(), cur],
        bias_uid: fused.bias,
        residual_uid: fused.residual,
        scale_uid: fused.scale,
        dtype: dtype.0,
        batch,
        mnk: [
            fits_i32(m, "M")?.max(1),
            fits_i32(n, "N")?.max(1),
            fits_i32(k, "K")?.max(1),
        ],
        strides: [
            fits_i32(sab, "A's batch stride")?,
            fits_i32(sam, "A's M stride")?,
            fits_i32(sak, "A's K stride")?,
            fits_i32(sbb, "B's batch stride")?,
            fits_i32(sbk, "B's K stride")?,
            fits_i32(sbn, "B's N stride")?,
            fits_i32(scb, "C's batch stride")?,
            fits_i32(scm, "C's M stride")?,
            fits_i32(scn, "C's N stride")?,
        ],
        res_strides: [
            fits_i32(srb, "the residual's batch stride")?,
            fits_i32(srm, "the residual's M stride")?,
            fits_i32(srn, "the residual's N stride")?,
        ],
        epilogue: fused.code,
        config: TritonConfig {
            family: String::new(),
            dtype: String::new(),
            spec: false,
            channels_first: false,
            transposing: false,
            b_col: false,
            block: [16, 16, 16],
            group_m: 1,
            num_warps: 1,
            num_stages: 0,
            shared_bytes: 0,
            warp_size: 32,
        },
    })
}

/// The matmul handler of one contract version: v2 builds, saves and restores; v1 only
/// restores plans saved before v2 (its kernels take no residual or scale).
#[derive(Debug, Clone, Copy)]
pub struct MatmulHandler {
    /// 1 or 2.
    pub version: u8,
}

impl MatmulHandler {
    /// The v1 handler (restore only).
    pub const V1: MatmulHandler = MatmulHandler { version: 1 };
    /// The v2 handler.
    pub const V2: MatmulHandler = MatmulHandler { version: 2 };

    /// The inputs for `kernel` on `graph`, with the static rule applied (module docs).
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: the graph (see [`match_graph`]'s texts), `the matmul pack builds new
    /// plans on contract v2 only` (v1 handler), `kernel <k> is not a packed matmul entry`,
    /// `kernel <k> is built for <dtype>, the graph is <dtype>`, `kernel <k> is the spec
    /// variant; the graph's shape does not satisfy its hints`, `kernel <k>: static rule: <t>
    /// tiles under-fill the device (fewer than 128); a smaller tile serves this graph`.
    pub fn inputs_for(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<MatmulInputs> {
        if self.version < 2 {
            return Err(na("the matmul pack builds new plans on contract v2 only"));
        }
        let mut inputs = match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, "matmul", inputs.dtype)?;
        if config.spec && !inputs.fits_spec() {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's shape does not satisfy its hints (M, N, K, leading and batch strides multiples of 16, unit strides 1)",
                kernel.describe()
            )));
        }
        if config.b_col && !inputs.fits_bcol() {
            return Err(na(format!(
                "kernel {} is the bcol variant; the graph's shape does not satisfy its hints (M, N, K, leading and batch strides multiples of 16, B column-major: unit strides of A's K, B's K, C's N and the residual's N)",
                kernel.describe()
            )));
        }
        inputs.config = config;
        let tiles = inputs.tiles() * inputs.batch;
        let c = &inputs.config;
        let big = (c.spec || c.b_col) && c.block[0] * c.block[1] > 64 * 128;
        if big && tiles < MIN_TILES {
            return Err(na(format!(
                "kernel {}: static rule: {tiles} tiles under-fill the device (fewer than {MIN_TILES}); a smaller tile serves this graph",
                kernel.describe()
            )));
        }
        if big && c.dtype == "f32" && inputs.mnk[2] <= F32_SHORT_K {
            return Err(na(format!(
                "kernel {}: static rule: an f32 reduction of K = {} (at most {F32_SHORT_K}) runs faster on a 64×64 tile",
                kernel.describe(),
                inputs.mnk[2]
            )));
        }
        Ok(inputs)
    }
}

impl DispatchHandler for MatmulHandler {
    fn contract(&self) -> &str {
        if self.version >= 2 {
            MATMUL_V2
        } else {
            MATMUL_V1
        }
    }

    fn launch_signature(&self) -> Vec<KernelArgument> {
        signature(0, self.version)
    }

    fn launch_signature_for(&self, values: &LaunchValues) -> Vec<KernelArgument> {
        let variant = match values.get("spec") {
            Some(LaunchValue::Int(v)) => *v,
            _ => 0,
        };
        signature(variant, self.version)
    }

    fn prepare(&self, graph: &OperationGraph) -> PluginResult<PreparedLaunch> {
        Err(match_graph(graph).err().unwrap_or_else(|| {
            na("the matmul pack launches packed entries only; prepare a kernel")
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

    fn restore_launch(
        &self,
        dispatch: &str,
        values: &LaunchValues,
    ) -> PluginResult<PreparedLaunch> {
        MatmulInputs::from_values(dispatch, values, self.version)?.to_launch()
    }

    /// a, b, c, bias, residual and scale (null when absent; v1: bias only), the integers, two
    /// null scratch pointers. A spec launch refuses (BAD_PARAM) a tensor address that is not
    /// 16-byte aligned.
    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        let optional: &[&str] = if self.version >= 2 {
            &["bias.uid", "res.uid", "scale.uid"]
        } else {
            &["bias.uid"]
        };
        triton_kernel_args(launch, tensors, "matmul", "A, B and C", optional)
    }
}
