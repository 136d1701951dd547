//! Matmul pack, contract `hipkernel.matmul.dispatch.v2`: batched C = A·B with a fused
//! epilogue (scale, bias\[n\], residual, activation; [`crate::ingestor::framework::epilogue`]) on
//! the Triton kernels of `engines/kernels/triton/matmul.py` (gpu-toolchain.md §12), ONE launch.
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
//! `variant` is `spec` (pointers 16-byte aligned; N, K, the leading and batch strides
//! multiples of 16, M any (since issue 33: decode GEMMs); unit strides of A's K, B's N, C's N and the residual's N constant 1),
//! `bcol` (the same with B column-major: B's K stride constant 1 and its N stride a multiple of
//! 16 — a `(N, K)` row-major weight used as B = Wᵀ, PyTorch's `Linear` layout; v2 only) or
//! `generic` (no hints).
//!
//! **Static rule** (no benchmarking): entries are tried in pack order (spec and bcol before
//! generic, larger tiles first); a spec or bcol entry serves a graph whose shape satisfies its
//! hints (never both: their unit strides exclude each other), except that a tile larger than
//! 64×128 is refused when it would give fewer than [`crate::ingestor::framework::triton::MIN_TILES`] tiles (the device would be
//! under-filled), and for f32 (IEEE products on CUDA cores, not `tf32`) when K is at most
//! [`F32_SHORT_K`]. Every variant ends with a 16-row tile ([`SMALL_M_TILE`]); any taller tile
//! is refused when M fills at most half of its rows (decode GEMMs, a short sentence: the tall
//! tile would run fewer programs, mostly on padding), and the 16-row tile is refused above
//! M = [`SMALL_M_MAX`]; neither applies to a graph with the override-shape flag, whose kernel
//! is chosen at its largest shape. The generic entries together serve every graph. Pointer alignment is only known at
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
//! | `epilogue` | int | [0, 127], [`crate::ingestor::framework::epilogue`]'s code (v1: [0, 3], bit 0 bias, bit 1 ReLU) |
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
//! stride_ab, stride_am, \[stride_ak,\] stride_bb, stride_bk, \[stride_bn,\] stride_cb, stride_cm,
//! \[stride_cn,\] stride_rb, stride_rm, \[stride_rn,\] epilogue, global_scratch, profile_scratch
//! (bracketed ones only in the generic variant — the bcol variant drops stride_bk instead of
//! stride_bn; v1 has no res/scale pointers or residual strides).

use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::framework::gemm::{
    self, EpilogueGemm, GemmCommon, GemmGraph, GemmHandler, GemmReader, check_hints,
};
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::framework::graph::{dims_strides, na};
use crate::ingestor::framework::launch::{check_tiles, static_rule};
use crate::ingestor::framework::triton::TritonConfig;
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginResult;

/// Contract v1 (bias and ReLU epilogue; no residual or scale pointers): restored from plans
/// saved before v2, never chosen for a new build.
pub const MATMUL_V1: &str = "hipkernel.matmul.dispatch.v1";
/// Contract v2: the kernel takes residual and scale pointers and residual strides, and the
/// epilogue is [`crate::ingestor::framework::epilogue`]'s code.
pub const MATMUL_V2: &str = "hipkernel.matmul.dispatch.v2";
/// Largest K at which the static rule refuses an f32 (IEEE; not `tf32`) spec or bcol tile
/// larger than 64×128: over a short reduction the big tile's pipeline fill and 8-warp
/// epilogue are not amortized. From a benchmarking build on an H200 (2026-12-04, Triton 3.9
/// entries, MiniLM's Linear layers, `docs/PERFORMANCE.md`): at M 4096, N 1536, K 384 the
/// 64×64×32 tile ran in 0.126 ms against 0.140 ms for 128×128; 2048³ and 4096³ keep the
/// 128×128 tile (issue 10's f32 rows).
pub const F32_SHORT_K: i64 = 512;
/// Rows of the shortest tile every variant packs (issue 33's decode GEMMs, MiniLM at one short
/// sentence): a taller tile is refused by the static rule when M fills at most half of its
/// rows (it would spend most of its loads and products on padding rows, in fewer programs).
pub const SMALL_M_TILE: i64 = 16;
/// Largest M the 16-row tile is chosen for: above it the taller tiles serve (a benchmarking
/// build does not time the 16-row tile there).
pub const SMALL_M_MAX: i64 = 64;
/// Epilogue bit: add bias\[n\].
pub const EPILOGUE_BIAS: i64 = 1;
/// Epilogue code of ReLU after the bias (activation 1 in bits 1–3).
pub const EPILOGUE_RELU: i64 = 2;

/// The stride value names of A, B and C: (batch, row, column) each, in kernel order.
#[rustfmt::skip]
const STRIDES: [&str; 9] = [
    "stride_ab", "stride_am", "stride_ak",
    "stride_bb", "stride_bk", "stride_bn",
    "stride_cb", "stride_cm", "stride_cn",
];
/// The residual's stride value names (v2), in kernel order.
const RES_STRIDES: [&str; 3] = ["stride_rb", "stride_rm", "stride_rn"];

/// The value names of contract `version` (1 or 2), sorted.
pub fn value_names(version: u8) -> Vec<&'static str> {
    let shape = [&["batch", "m", "n", "k"][..], &STRIDES].concat();
    gemm::value_names::<MatmulInputs>(version, &shape)
}

/// The launch inputs of contracts v1 and v2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatmulInputs {
    /// What every epilogue GEMM launch holds: the version, the UIDs of A, B and C, the
    /// epilogue's tensors and code, the data type and the config.
    pub common: GemmCommon,
    /// Batch count.
    pub batch: i64,
    /// M, N, K.
    pub mnk: [i64; 3],
    /// stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn, stride_cb, stride_cm,
    /// stride_cn (elements).
    pub strides: [i64; 9],
    /// stride_rb, stride_rm, stride_rn of the residual (elements; C's strides without one).
    pub res_strides: [i64; 3],
    /// The graph carries the override-shape flag: its kernel, chosen at the built (largest)
    /// shape, serves every smaller one, so the static rule's small-M refusal (a choice for
    /// one shape) does not apply. False for launch values read back from a saved plan.
    pub serves_overrides: bool,
}

impl MatmulInputs {
    /// Whether the shape satisfies the spec variant's hints (pointer alignment is checked at
    /// execute): N, K, stride_ab/am/bb/bk/cb/cm (and stride_rb/rm) multiples of 16 (M takes
    /// any value: rows are masked, never vectorized),
    /// stride_ak/bn/cn (and stride_rn) = 1.
    pub fn fits_spec(&self) -> bool {
        self.fits_unit(5) && (self.common.version < 2 || self.res_strides[2] == 1)
    }

    /// Whether the shape satisfies the bcol variant's hints (pointer alignment is checked at
    /// execute): those of [`Self::fits_spec`] with B column-major: stride_bn (not stride_bk)
    /// a multiple of 16 and stride_bk (not stride_bn) = 1.
    pub fn fits_bcol(&self) -> bool {
        self.common.version >= 2 && self.fits_unit(4) && self.res_strides[2] == 1
    }

    /// The hints spec and bcol share, with B's unit stride at `b_unit` (index into
    /// [`Self::strides`]: 5 stride_bn, 4 stride_bk) and its other matrix stride a multiple of
    /// 16: N, K, the batch and leading strides multiples of 16, stride_ak and stride_cn 1.
    fn fits_unit(&self, b_unit: usize) -> bool {
        let s = self.strides;
        let r = self.res_strides;
        self.mnk[1..].iter().all(|v| v % 16 == 0)
            && [s[0], s[1], s[3], s[9 - b_unit], s[6], s[7], r[0], r[1]]
                .iter()
                .all(|v| v % 16 == 0)
            && s[2] == 1
            && s[b_unit] == 1
            && s[8] == 1
    }

    /// Tiles per batch entry: cdiv(m, block_m)·cdiv(n, block_n).
    pub fn tiles(&self) -> i64 {
        let c = &self.common.config;
        ((self.mnk[0] + c.block[0] - 1) / c.block[0])
            * ((self.mnk[1] + c.block[1] - 1) / c.block[1])
    }
}

impl EpilogueGemm for MatmulInputs {
    const FAMILY: &'static str = "matmul";
    const CONTRACTS: [&'static str; 2] = [MATMUL_V1, MATMUL_V2];
    const UIDS: [&'static str; 3] = ["a.uid", "b.uid", "c.uid"];
    const KERNEL: &'static str = "matmul";
    const OPERANDS: &'static str = "A, B and C";
    const RES_STRIDES: &'static [&'static str] = &RES_STRIDES;

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        match_graph(graph)
    }

    /// The variant's hints, then the static rule (module docs).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `kernel <k> is the spec variant; the graph's shape does not satisfy
    /// its hints (…)` (likewise bcol); `kernel <k>: static rule: <t> tiles under-fill the
    /// device (fewer than 128); a smaller tile serves this graph`; `kernel <k>: static rule: M =
    /// <m> leaves at least half of the <bm>-row tile idle; the 16-row tile serves this graph`;
    /// `kernel <k>: static rule: the 16-row tile is for M up to 64, this graph has M = <m>; a
    /// taller tile serves it`; `kernel <k>: static rule: an f32 reduction of K = <k> (at most
    /// 512) runs faster on a 64×64 tile`.
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        check_hints(
            kernel,
            "shape",
            &[
                (
                    config.spec && !self.fits_spec(),
                    "spec",
                    "N, K, leading and batch strides multiples of 16, unit strides 1",
                ),
                (
                    config.b_col && !self.fits_bcol(),
                    "bcol",
                    "N, K, leading and batch strides multiples of 16, B column-major: unit strides of A's K, B's K, C's N and the residual's N",
                ),
            ],
        )?;
        self.common.config = config;
        let c = &self.common.config;
        let big = (c.spec || c.b_col) && c.block[0] * c.block[1] > 64 * 128;
        check_tiles(kernel, big, self.tiles() * self.batch)?;
        let m = self.mnk[0];
        if !self.serves_overrides && c.block[0] > SMALL_M_TILE && 2 * m <= c.block[0] {
            return Err(static_rule(
                kernel,
                format_args!(
                    "M = {m} leaves at least half of the {}-row tile idle; the {SMALL_M_TILE}-row tile serves this graph",
                    c.block[0]
                ),
            ));
        }
        if !self.serves_overrides && c.block[0] <= SMALL_M_TILE && m > SMALL_M_MAX {
            return Err(static_rule(
                kernel,
                format_args!(
                    "the {}-row tile is for M up to {SMALL_M_MAX}, this graph has M = {m}; a taller tile serves it",
                    c.block[0]
                ),
            ));
        }
        if big && c.dtype == "f32" && self.mnk[2] <= F32_SHORT_K {
            return Err(static_rule(
                kernel,
                format_args!(
                    "an f32 reduction of K = {} (at most {F32_SHORT_K}) runs faster on a 64×64 tile",
                    self.mnk[2]
                ),
            ));
        }
        Ok(())
    }

    /// Reads the strides, `dtype`, `spec`, the config, the residual's strides (v2), the UIDs,
    /// `batch`, `m`, `n`, `k`, then checks the variant's unit strides and the geometry.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) with the reader texts; `launch value 'spec' of dispatch
    /// '<d>' is <s>; the matmul contract takes 0 (generic), 1 (spec) or 4 (bcol)`; `launch
    /// values of dispatch '<d>' name the spec variant, whose unit strides 'stride_ak',
    /// 'stride_bn' and 'stride_cn' (and 'stride_rn') must be 1` (likewise bcol with
    /// 'stride_bk'); the geometry texts.
    fn read_shape(r: &GemmReader<'_>) -> PluginResult<Self> {
        let (dispatch, version) = (r.dispatch, r.version);
        let max = i64::from(i32::MAX);
        let d = quote(dispatch);
        let strides = r.ints(&STRIDES, 0, max)?;
        let dtype = r.int("dtype", 1, 3)? as i8;
        let spec = r.int("spec", 0, if version >= 2 { 4 } else { 1 })?;
        if !matches!(spec, 0 | 1 | 4) {
            return Err(incompatible(format!(
                "launch value 'spec' of dispatch '{d}' is {spec}; the matmul contract takes 0 (generic), 1 (spec) or 4 (bcol)"
            )));
        }
        let mut config = r.config("matmul", spec)?;
        config.dtype = match dtype {
            1 => "f32",
            2 => "f16",
            _ => "bf16",
        }
        .into();
        let res_strides = r.res_strides(&RES_STRIDES, [6, 7, 8].map(|i| strides[i]))?;
        let inputs = MatmulInputs {
            common: r.common::<Self>(dtype, config)?,
            batch: r.int("batch", 1, 65_535)?,
            mnk: r.ints(&["m", "n", "k"], 1, max)?,
            strides,
            res_strides,
            serves_overrides: false,
        };
        let unit = [strides[2], strides[8], res_strides[2]];
        let broken = |s: bool, b: i64| s && ([unit[0], b, unit[1], unit[2]] != [1, 1, 1, 1]);
        if broken(inputs.common.config.spec, strides[5]) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose unit strides 'stride_ak', 'stride_bn' and 'stride_cn' (and 'stride_rn') must be 1"
            )));
        }
        if broken(inputs.common.config.b_col, strides[4]) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the bcol variant, whose unit strides 'stride_ak', 'stride_bk' and 'stride_cn' (and 'stride_rn') must be 1"
            )));
        }
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    fn common(&self) -> &GemmCommon {
        &self.common
    }

    fn shape_values(&self) -> Vec<(&'static str, i64)> {
        let mut v = vec![("batch", self.batch)];
        v.extend(["m", "n", "k"].into_iter().zip(self.mnk));
        v.extend(STRIDES.into_iter().zip(self.strides));
        v
    }

    fn res_strides(&self) -> &[i64] {
        &self.res_strides
    }

    /// The integer parameters the variant keeps, in its parameter order.
    fn scalars(&self) -> Vec<i64> {
        let s = self.strides;
        let r = self.res_strides;
        let value = |n: &str| match n {
            "M" => Some(self.mnk[0]),
            "N" => Some(self.mnk[1]),
            "K" => Some(self.mnk[2]),
            "epilogue" => Some(self.common.epilogue),
            _ => (STRIDES.iter().position(|x| *x == n).map(|i| s[i]))
                .or_else(|| RES_STRIDES.iter().position(|x| *x == n).map(|i| r[i])),
        };
        let names = param_names(self.common.config.variant_code(), self.common.version);
        names.iter().filter_map(|n| value(n)).collect()
    }

    /// (tiles, batch, 1).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'm', 'n', 'block_m' and 'block_n' of dispatch '<d>'
    /// give more than 2147483647 tiles`.
    fn grid(&self, dispatch: &str) -> PluginResult<[u32; 3]> {
        let tiles = u32::try_from(self.tiles())
            .ok()
            .filter(|t| *t <= i32::MAX as u32)
            .ok_or_else(|| {
                incompatible(format!(
                    "launch values 'm', 'n', 'block_m' and 'block_n' of dispatch '{}' give more than 2147483647 tiles",
                    quote(dispatch)
                ))
            })?;
        Ok([tiles, self.batch as u32, 1])
    }

    fn param_names(variant: i64, version: u8) -> Vec<&'static str> {
        param_names(variant, version)
    }

    fn value_names(version: u8) -> Vec<&'static str> {
        value_names(version)
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
    v.extend(["M", "N", "K"]);
    v.extend(STRIDES);
    if version >= 2 {
        v.extend(RES_STRIDES);
    }
    v.retain(|n| !unit.contains(n));
    v.extend(["epilogue", "global_scratch", "profile_scratch"]);
    v
}

/// The kernel signature of variant `variant` (as [`param_names`]) of contract `version`
/// (natural layout, named).
pub fn signature(variant: i64, version: u8) -> Vec<KernelArgument> {
    gemm::signature::<MatmulInputs>(variant, version)
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
    let (head, ()) = GemmGraph::new(
        graph,
        "matmul",
        |node| {
            let a = node
                .attributes_as_matmul_attributes()
                .ok_or_else(|| na("the matmul pack serves graphs that start with a matmul node"))?;
            Ok(((), [a.a_tensor_uid(), a.b_tensor_uid(), a.c_tensor_uid()]))
        },
        "A and B",
    )?;
    let dtype = head.dtype;
    let (ad, as_) = dims_strides(&head.inputs[0]);
    let (bd, bs) = dims_strides(&head.inputs[1]);
    let n_out = *bd.last().unwrap_or(&0);
    let is_bias = |d: &[i64], s: &[i64]| {
        !d.is_empty()
            && d[..d.len() - 1].iter().all(|v| *v == 1)
            && d[d.len() - 1] == n_out
            && (n_out == 1 || s[s.len() - 1] == 1)
    };
    let (fused, cur_t) = head.epilogue(
        graph,
        &is_bias,
        "a bias of dims [1, .., N] with unit N stride",
    )?;
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
        common: head.common(
            &fused,
            TritonConfig::restored("", 0, [16, 16, 16], 1, 1, 0, 32),
        ),
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
        serves_overrides: graph.is_override_shape_enabled(),
    })
}

/// The matmul handler of one contract version: v2 builds, saves and restores; v1 only
/// restores plans saved before v2 (its kernels take no residual or scale).
pub type MatmulHandler = GemmHandler<MatmulInputs>;
