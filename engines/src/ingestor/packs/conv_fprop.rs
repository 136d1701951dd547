//! Conv fprop pack, contract `hipkernel.conv_fprop.dispatch.v2`: 2-D convolution forward as
//! an implicit GEMM with a fused epilogue (scale, bias[k], residual, activation;
//! [`super::epilogue`]) on the Triton kernels of `engines/kernels/triton/conv_fprop.py`, ONE
//! launch. (`hipkernel.conv_fprop.dispatch.v1` — bias and ReLU only, no residual or scale
//! pointers — is still restored from plans saved before v2; new builds use v2.)
//!
//! Graphs served: `conv_fprop` followed by up to five pointwise nodes that form the epilogue
//! (`MUL(scale)`, `ADD(bias)`, `ADD(residual)`, one activation, `ADD(residual)`, in that
//! order, each at most once; ResNet's conv → bias → add → ReLU is one launch). x `[N, C, H,
//! W]`, w `[K, C/groups, R, S]`, y `[N, K, P, Q]` with any strides (NCHW, NHWC, KCRS, KRSC, …),
//! cross-correlation, padding, stride, dilation, groups; f16, bf16 (f32 accumulate) or f32
//! (IEEE; the `tf32` spec entry, TF32 products, only behind the engine's `KNOB_TF32`), one data
//! type. The bias has dims `[1, K, 1, 1]` with unit K stride; the residual
//! has y's dims (any strides); the scale has dims all 1; intermediates must be virtual.
//!
//! Entries: `conv_fprop_<dtype>_<variant>_<bm>x<bn>x<bk>_g<g>_w<w>_s<s>_sh<shared>_ws<warp>`;
//! `spec` = channels-last (x, w, y and residual channel strides 1, groups 1, C, K and the
//! other strides multiples of 16, pointers 16-byte aligned); `nchw` = channels-first (v2:
//! unit pixel strides of x, y and the residual, packed KCRS w, any groups, pointers 16-byte
//! aligned; kernel `hipdnn_conv_fprop_cf`, which reduces over the flattened (c, r, s) and
//! walks pixels with a warp's threads); `nchwt` = transposing channels-first (v2: x NCHW with
//! packed planes (`sxw` 1, `sxh` = W), packed KCRS w, unit q strides of y and the residual,
//! groups 1, C and K multiples of 16, pointers and workspace 16-byte aligned; kernel
//! `hipdnn_conv_fprop_nt`, launched twice per execute: `phase` 0 writes x as packed NHWC and
//! w as packed KRSC into the workspace, `phase` 1 runs the channels-last implicit GEMM on
//! those copies and stores y through its own strides); `generic` = anything else.
//!
//! **Static rule**: entries in pack order (spec, then nchwt, then nchw, then generic; larger
//! tiles first); an f16/bf16 spec entry with more than 64 rows is refused when C/groups needs
//! several reduction blocks per tap and R·S > 1 (the nested per-tap loop restarts its
//! pipeline every tap; on the H200 the 64×64 entry ran the batch-32 ResNet-50 c128 and c256
//! 3×3 layers 9–13 % faster); a spec, nchwt or nchw entry whose
//! tile is wider than 64 output channels is refused when K/groups is narrower than the tile,
//! and one larger than 64×64 when it gives fewer than [`crate::ingestor::framework::triton::MIN_TILES`] tiles; the
//! generic entry serves every graph. A spec or nchw plan refuses (BAD_PARAM) tensors that are
//! not 16-byte aligned at execute.
//!
//! Launch values (all int): `x.uid`, `w.uid`, `y.uid`, `bias.uid` (iff epilogue bit 0),
//! `res.uid` (iff bit 4 or 5), `scale.uid` (iff bit 6), `dtype` (1, 2, 3), `n c h width k p q
//! r s` [1, 2³¹−1], `pad_h pad_w` [0, 2³¹−1], `stride_h stride_w dil_h dil_w groups` [1,
//! 2³¹−1], the 12 element strides `sxn sxc sxh sxw swk swc swr sws syn syk syp syq` and (v2)
//! the residual's `srn srk srp srq` (y's without one) [0, 2³¹−1], `epilogue` [0, 127] (v1 [0,
//! 3]), `spec` [0, 3] (0 generic, 1 spec, 2 nchw, 3 nchwt; v1 [0, 1]), `block_m block_n block_k` [16, 256], `group_m` [1, 64], `num_warps` [1,
//! 16], `warp_size` 32/64, `shared_bytes` [0, 262144]. Launch: grid (cdiv(n·p·q,
//! block_m)·cdiv(k/groups, block_n), groups, 1), block (num_warps·warp_size), dynamic shared
//! memory `shared_bytes`, workspace 0 (nchwt: [`ConvFpropInputs::workspace_bytes`], after a
//! prologue launch of grid ([`ConvFpropInputs::layout_pass_programs`], 1, 1)), both scratch
//! pointers null. Kernel arguments: x, w, y,
//! bias, res, scale (null when absent; v1: x, w, y, bias), (nchwt: the workspace), the
//! integers in the order of `conv_fprop.py` (the spec variant drops `groups`, `sxc`, `swc`,
//! `syk`, `srk`; the nchw variant drops `sxw`, `syq`, `srq`; the nchwt variant takes `n c h
//! width k p q r s pad_h pad_w stride_h stride_w dil_h dil_w sxn sxc swk syn syk syp srn srk
//! srp epilogue phase`), then the two scratch pointers.

use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::framework::epilogue::{SavedEpilogue, match_epilogue, read_saved};
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::framework::graph::{dims_strides, na};
use crate::ingestor::framework::triton::{MIN_TILES, TritonConfig, triton_kernel_args};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::TensorBinding;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops::conv::{Window, output_extent};
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::{ConvMode, DataType, Node};

/// Contract v1 (bias and ReLU epilogue; no residual or scale pointers): restored from plans
/// saved before v2, never chosen for a new build.
pub const CONV_FPROP_V1: &str = "hipkernel.conv_fprop.dispatch.v1";
/// Contract v2: residual and scale pointers, residual strides, [`super::epilogue`]'s code.
pub const CONV_FPROP_V2: &str = "hipkernel.conv_fprop.dispatch.v2";

/// Shape value names, in kernel order (after the pointers).
const SHAPE: [&str; 16] = [
    "n", "c", "h", "width", "k", "p", "q", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w",
    "dil_h", "dil_w", "groups",
];
/// Residual stride value names (v2), in kernel order.
const RES_STRIDES: [&str; 4] = ["srn", "srk", "srp", "srq"];
/// Stride value names, in kernel order.
const STRIDES: [&str; 12] = [
    "sxn", "sxc", "sxh", "sxw", "swk", "swc", "swr", "sws", "syn", "syk", "syp", "syq",
];
/// Config value names.
const CONFIG: [&str; 8] = [
    "spec",
    "block_m",
    "block_n",
    "block_k",
    "group_m",
    "num_warps",
    "warp_size",
    "shared_bytes",
];

/// Every value name of contract `version` (1 or 2), sorted.
pub fn value_names(version: u8) -> Vec<&'static str> {
    let mut v = vec!["x.uid", "w.uid", "y.uid", "bias.uid", "dtype", "epilogue"];
    v.extend(SHAPE);
    v.extend(STRIDES);
    v.extend(CONFIG);
    if version >= 2 {
        v.extend(["res.uid", "scale.uid"]);
        v.extend(RES_STRIDES);
    }
    v.sort_unstable();
    v
}

/// The kernel parameter names of variant `variant` (0 generic, 1 spec, 2 nchw, 3 nchwt (v2
/// only): the `spec` launch value) of contract `version`, in order (with the two scratch
/// pointers).
pub fn param_names(variant: i64, version: u8) -> Vec<&'static str> {
    if variant == 3 {
        let mut v = vec![
            "x_ptr",
            "w_ptr",
            "y_ptr",
            "bias_ptr",
            "res_ptr",
            "scale_ptr",
            "ws_ptr",
        ];
        v.extend([
            "N", "C", "H", "W", "K", "P", "Q", "R", "S", "pad_h", "pad_w", "stride_h", "stride_w",
            "dil_h", "dil_w", "sxn", "sxc", "swk", "syn", "syk", "syp", "srn", "srk", "srp",
            "epilogue", "phase",
        ]);
        v.extend(["global_scratch", "profile_scratch"]);
        return v;
    }
    let spec = variant == 1;
    let cf = variant == 2;
    let kernel_shape = [
        "N", "C", "H", "W", "K", "P", "Q", "R", "S", "pad_h", "pad_w", "stride_h", "stride_w",
        "dil_h", "dil_w", "groups",
    ];
    let mut v = vec!["x_ptr", "w_ptr", "y_ptr", "bias_ptr"];
    if version >= 2 {
        v.extend(["res_ptr", "scale_ptr"]);
    }
    v.extend(kernel_shape.iter().filter(|n| !(spec && **n == "groups")));
    v.extend(STRIDES.iter().filter(|n| {
        !(spec && ["sxc", "swc", "syk"].contains(n) || cf && ["sxw", "syq"].contains(n))
    }));
    if version >= 2 {
        v.extend(
            RES_STRIDES
                .iter()
                .filter(|n| !(spec && **n == "srk" || cf && **n == "srq")),
        );
    }
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

/// The launch inputs of contracts v1 and v2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvFpropInputs {
    /// Contract version: 2 for new builds, 1 for plans saved before v2.
    pub version: u8,
    /// UIDs of x, w and y (y = the last node's output).
    pub uids: [i64; 3],
    /// UID of the bias, when epilogue bit 0 is set.
    pub bias_uid: Option<i64>,
    /// UID of the residual, when epilogue bit 4 or 5 is set (v2).
    pub residual_uid: Option<i64>,
    /// UID of the one-element scale, when epilogue bit 6 is set (v2).
    pub scale_uid: Option<i64>,
    /// `DataType` value.
    pub dtype: i8,
    /// n, c, h, width, k, p, q, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups.
    pub shape: [i64; 16],
    /// sxn … syq (elements).
    pub strides: [i64; 12],
    /// srn, srk, srp, srq of the residual (elements; y's strides without one).
    pub res_strides: [i64; 4],
    /// Epilogue code ([`super::epilogue`]).
    pub epilogue: i64,
    /// Kernel configuration.
    pub config: TritonConfig,
}

impl ConvFpropInputs {
    /// The contract name of this launch's version.
    pub fn contract(&self) -> &'static str {
        if self.version >= 2 {
            CONV_FPROP_V2
        } else {
            CONV_FPROP_V1
        }
    }

    /// Whether the launch satisfies the spec (channels-last) hints; alignment at execute.
    pub fn fits_spec(&self) -> bool {
        let s = self.strides;
        let r = self.res_strides;
        let groups = self.shape[15];
        groups == 1
            && s[1] == 1
            && s[5] == 1
            && s[9] == 1
            && (self.version < 2 || r[1] == 1)
            && self.shape[1] % 16 == 0
            && self.shape[4] % 16 == 0
            && [
                s[0], s[2], s[3], s[4], s[6], s[7], s[8], s[10], s[11], r[0], r[2], r[3],
            ]
            .iter()
            .all(|v| v % 16 == 0)
    }

    /// Whether the launch satisfies the channels-first (`nchw`) variant's hints (v2 only;
    /// alignment at execute): unit pixel strides of x, y and the residual (`sxw`, `syq`,
    /// `srq` = 1) and a packed KCRS filter (`sws` = 1, `swr` = S, `swc` = R·S), any groups.
    pub fn fits_nchw(&self) -> bool {
        let s = self.strides;
        let (r, sz) = (self.shape[7], self.shape[8]);
        self.version >= 2
            && s[3] == 1
            && s[11] == 1
            && self.res_strides[3] == 1
            && s[7] == 1
            && s[6] == sz
            && s[5] == r * sz
    }

    /// Whether the launch satisfies the transposing channels-first (`nchwt`) variant's hints
    /// (v2 only; alignment at execute): x NCHW with packed planes (`sxw` 1, `sxh` = W), a
    /// packed KCRS filter (`sws` 1, `swr` = S, `swc` = R·S), unit q strides of y and the
    /// residual, groups 1, C and K multiples of 16, and a workspace of at most 2³¹−1 elements.
    pub fn fits_nchwt(&self) -> bool {
        let s = self.strides;
        let [c, w, r, sz, groups] = [
            self.shape[1],
            self.shape[3],
            self.shape[7],
            self.shape[8],
            self.shape[15],
        ];
        self.version >= 2
            && groups == 1
            && c % 16 == 0
            && self.shape[4] % 16 == 0
            && s[3] == 1
            && s[2] == w
            && s[7] == 1
            && s[6] == sz
            && s[5] == r * sz
            && s[11] == 1
            && self.res_strides[3] == 1
            && self
                .workspace_elements()
                .is_some_and(|e| e <= i64::from(i32::MAX))
    }

    /// Elements of the nchwt workspace: x as packed NHWC (N·H·W·C, rounded up to a multiple
    /// of 128) then w as packed KRSC (K·R·S·C); `None` on overflow.
    pub fn workspace_elements(&self) -> Option<i64> {
        let [n, c, h, w, k, r, s] = [
            self.shape[0],
            self.shape[1],
            self.shape[2],
            self.shape[3],
            self.shape[4],
            self.shape[7],
            self.shape[8],
        ];
        let x = n.checked_mul(h)?.checked_mul(w)?.checked_mul(c)?;
        let x = x.checked_add(127)? / 128 * 128;
        x.checked_add(k.checked_mul(r)?.checked_mul(s)?.checked_mul(c)?)
    }

    /// Workspace bytes of the launch: the nchwt variant's [`Self::workspace_elements`] times
    /// the element size (4 for f32, 2 for f16/bf16); 0 for the other variants.
    pub fn workspace_bytes(&self) -> u64 {
        if !self.config.transposing {
            return 0;
        }
        let elem = if self.dtype == DataType::FLOAT.0 {
            4
        } else {
            2
        };
        self.workspace_elements()
            .map_or(u64::MAX, |e| e as u64 * elem)
    }

    /// Programs of the nchwt layout pass (`phase` 0): one per 64×64 tile of each image's
    /// [C, H·W] plane and of each output channel's [C, R·S] filter,
    /// N·cdiv(C, 64)·cdiv(H·W, 64) + K·cdiv(C, 64)·cdiv(R·S, 64).
    pub fn layout_pass_programs(&self) -> i64 {
        let sh = self.shape;
        layout_pass_programs([sh[0], sh[1], sh[2], sh[3], sh[4], sh[7], sh[8]])
    }

    /// Tiles per group.
    pub fn tiles(&self) -> i64 {
        let [n, _c, _h, _w, k, p, q] = [
            self.shape[0],
            self.shape[1],
            self.shape[2],
            self.shape[3],
            self.shape[4],
            self.shape[5],
            self.shape[6],
        ];
        let kg = k / self.shape[15];
        let c = &self.config;
        ((n * p * q + c.block[0] - 1) / c.block[0]) * ((kg + c.block[1] - 1) / c.block[1])
    }

    /// The launch values.
    pub fn to_values(&self) -> LaunchValues {
        let mut v = LaunchValues::new();
        let mut put = |n: &str, x: i64| {
            v.insert(n.to_string(), LaunchValue::Int(x));
        };
        put("x.uid", self.uids[0]);
        put("w.uid", self.uids[1]);
        put("y.uid", self.uids[2]);
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
            for (n, x) in RES_STRIDES.iter().zip(self.res_strides) {
                put(n, x);
            }
        }
        put("dtype", i64::from(self.dtype));
        put("epilogue", self.epilogue);
        for (n, x) in SHAPE.iter().zip(self.shape) {
            put(n, x);
        }
        for (n, x) in STRIDES.iter().zip(self.strides) {
            put(n, x);
        }
        let c = &self.config;
        for (n, x) in CONFIG.iter().zip([
            c.variant_code(),
            c.block[0],
            c.block[1],
            c.block[2],
            c.group_m,
            c.num_warps,
            c.warp_size,
            c.shared_bytes,
        ]) {
            put(n, x);
        }
        v
    }

    /// Reads values saved under `dispatch` for contract `version` (1 or 2) and checks them.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix): the reader texts; `launch values of dispatch '<d>' hold
    /// epilogue <e>: <why>` (v2); `launch value '<name>' of dispatch '<d>' must be present
    /// exactly when 'epilogue' <bits> is set; epilogue is <e>` (bias: bit 1 (v1) / bit 0
    /// (v2); `res.uid`: bit 4 or 5; `scale.uid`: bit 6); `launch values of dispatch '<d>' name
    /// the spec variant, whose 'groups', 'sxc', 'swc' and 'syk' (and 'srk') must be 1`;
    /// `launch values of dispatch '<d>' name the nchw variant, whose 'sxw', 'syq', 'srq' and
    /// 'sws' must be 1, 'swr' = 's' and 'swc' = 'r'·'s'`; `launch values of dispatch '<d>'
    /// name the nchwt variant, whose 'groups', 'sxw', 'sws', 'syq' and 'srq' must be 1, …`;
    /// `launch values of dispatch '<d>': 'groups' must divide 'c' and 'k'`; the geometry
    /// texts.
    pub fn from_values(dispatch: &str, values: &LaunchValues, version: u8) -> PluginResult<Self> {
        let contract = if version >= 2 {
            CONV_FPROP_V2
        } else {
            CONV_FPROP_V1
        };
        let names = value_names(version);
        let r = ContractReader::new(dispatch, contract, &names, values)?;
        let max = i64::from(i32::MAX);
        let d = quote(dispatch);
        let SavedEpilogue {
            code: epilogue,
            bias: bias_uid,
            residual: residual_uid,
            scale: scale_uid,
        } = read_saved(&r, values, dispatch, version)?;
        let mut shape = [0i64; 16];
        for (i, n) in SHAPE.iter().enumerate() {
            let lo = if n.starts_with("pad") { 0 } else { 1 };
            shape[i] = r.int(n, lo, max)?;
        }
        let mut strides = [0i64; 12];
        for (i, n) in STRIDES.iter().enumerate() {
            strides[i] = r.int(n, 0, max)?;
        }
        let dtype = r.int("dtype", 1, 3)? as i8;
        let config = TritonConfig {
            family: "conv_fprop".into(),
            dtype: String::new(),
            spec: false,
            channels_first: false,
            transposing: false,
            b_col: false,
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
        let variant = r.int("spec", 0, if version >= 2 { 3 } else { 1 })?;
        let mut config = config;
        config.spec = variant == 1;
        config.channels_first = variant == 2;
        config.transposing = variant == 3;
        let res_strides = if version >= 2 {
            let mut v = [0i64; 4];
            for (i, n) in RES_STRIDES.iter().enumerate() {
                v[i] = r.int(n, 0, max)?;
            }
            v
        } else {
            [strides[8], strides[9], strides[10], strides[11]]
        };
        let inputs = ConvFpropInputs {
            version: version.clamp(1, 2),
            uids: [
                r.int("x.uid", i64::MIN, i64::MAX)?,
                r.int("w.uid", i64::MIN, i64::MAX)?,
                r.int("y.uid", i64::MIN, i64::MAX)?,
            ],
            bias_uid,
            residual_uid,
            scale_uid,
            dtype,
            shape,
            strides,
            res_strides,
            epilogue,
            config,
        };
        if inputs.config.spec
            && (shape[15] != 1
                || strides[1] != 1
                || strides[5] != 1
                || strides[9] != 1
                || res_strides[1] != 1)
        {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'groups', 'sxc', 'swc' and 'syk' (and 'srk') must be 1"
            )));
        }
        if inputs.config.channels_first && !inputs.fits_nchw() {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the nchw variant, whose 'sxw', 'syq', 'srq' and 'sws' must be 1, 'swr' = 's' and 'swc' = 'r'·'s'"
            )));
        }
        if inputs.config.transposing && !inputs.fits_nchwt() {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the nchwt variant, whose 'groups', 'sxw', 'sws', 'syq' and 'srq' must be 1, 'sxh' = 'width', 'swr' = 's', 'swc' = 'r'·'s', 'c' and 'k' multiples of 16 and the workspace at most 2147483647 elements"
            )));
        }
        if shape[1] % shape[15] != 0 || shape[4] % shape[15] != 0 {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}': 'groups' must divide 'c' and 'k'"
            )));
        }
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    /// Grid, block and shared memory (shared by build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'warp_size' and 'num_warps' of dispatch '<d>' give <t>
    /// threads per block; …`, `launch values of dispatch '<d>' give more than 2147483647 tiles
    /// or 65535 groups`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let d = quote(dispatch);
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        let [n, p, q] = [self.shape[0], self.shape[5], self.shape[6]];
        let tiles = n
            .checked_mul(p)
            .and_then(|x| x.checked_mul(q))
            .filter(|x| *x <= i64::from(i32::MAX))
            .map(|_| self.tiles())
            .filter(|t| *t <= i64::from(i32::MAX) && self.shape[15] <= 65_535)
            .ok_or_else(|| {
                incompatible(format!(
                    "launch values of dispatch '{d}' give more than 2147483647 tiles or 65535 groups"
                ))
            })?;
        Ok(LaunchGeometry {
            grid: [tiles as u32, self.shape[15] as u32, 1],
            block: [threads as u32, 1, 1],
            shared_mem_bytes: c.shared_bytes as u32,
        })
    }

    /// The prepared launch: `pointer_uids` x, w, y[, bias][, residual][, scale];
    /// `scalar_args` the variant's integers in kernel order (nchwt: ending with `phase` 1, the
    /// main launch); `workspace_bytes` as [`Self::workspace_bytes`].
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let mut pointer_uids = self.uids.to_vec();
        pointer_uids.extend(self.bias_uid);
        pointer_uids.extend(self.residual_uid);
        pointer_uids.extend(self.scale_uid);
        let spec = self.config.spec;
        let cf = self.config.channels_first;
        if self.config.transposing {
            let s = self.strides;
            let r = self.res_strides;
            let mut ints: Vec<i64> = self.shape[..15].to_vec();
            ints.extend([s[0], s[1], s[4], s[8], s[9], s[10], r[0], r[1], r[2]]);
            ints.extend([self.epilogue, 1]);
            return Ok(PreparedLaunch {
                dispatch: self.contract().to_string(),
                launch_values: self.to_values(),
                geometry: self.geometry_for(self.contract())?,
                workspace_bytes: self.workspace_bytes(),
                pointer_uids,
                scalar_args: ints
                    .into_iter()
                    .map(|v| KernelArgValue::I32(v as i32))
                    .collect(),
            });
        }
        let mut ints: Vec<i64> = self
            .shape
            .iter()
            .enumerate()
            .filter(|(i, _)| !(spec && *i == 15))
            .map(|(_, v)| *v)
            .collect();
        ints.extend(
            self.strides
                .iter()
                .enumerate()
                .filter(|(i, _)| !(spec && [1, 5, 9].contains(i) || cf && [3, 11].contains(i)))
                .map(|(_, v)| *v),
        );
        if self.version >= 2 {
            ints.extend(
                self.res_strides
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !(spec && *i == 1 || cf && *i == 3))
                    .map(|(_, v)| *v),
            );
        }
        ints.push(self.epilogue);
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

fn pair(v: Option<hipdnn_schema::flatbuffers::Vector<'_, i64>>, default: i64) -> Vec<i64> {
    v.map(|v| v.iter().collect())
        .unwrap_or_else(|| vec![default, default])
}

/// Largest element offset of a tensor, `None` on overflow.
fn span(d: &[i64], s: &[i64]) -> Option<i64> {
    d.iter().zip(s).try_fold(0i64, |acc, (d, s)| {
        acc.checked_add((d - 1).checked_mul(*s)?)
    })
}

fn match_graph(graph: &OperationGraph) -> PluginResult<ConvFpropInputs> {
    let g = graph.graph();
    let nodes: Vec<Node<'_>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.is_empty() || nodes.len() > 6 {
        return Err(na(format!(
            "the conv_fprop pack serves conv_fprop with up to five epilogue nodes; this graph has {} nodes",
            nodes.len()
        )));
    }
    let a = nodes[0]
        .attributes_as_convolution_fwd_attributes()
        .ok_or_else(|| {
            na("the conv_fprop pack serves graphs that start with a convolution forward node")
        })?;
    if a.conv_mode() != ConvMode::CROSS_CORRELATION {
        return Err(na(format!(
            "the conv_fprop pack serves cross-correlation only, not conv mode {:?}",
            a.conv_mode()
        )));
    }
    let xt = tensor(graph, a.x_tensor_uid())?;
    let wt = tensor(graph, a.w_tensor_uid())?;
    let dtype = xt.data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype)
        || wt.data_type() != dtype
    {
        return Err(na(format!(
            "the conv_fprop pack serves f32, f16 and bf16 with x and w of one type, not {dtype:?} × {:?}",
            wt.data_type()
        )));
    }
    let (xd, xs) = dims_strides(&xt);
    let (wd, ws) = dims_strides(&wt);
    if xd.len() != 4 || wd.len() != 4 {
        return Err(na(format!(
            "the conv_fprop pack serves 2-D convolutions (4-D x and w); x {xd:?}, w {wd:?}"
        )));
    }
    if wd[1] < 1 || xd[1] % wd[1] != 0 || wd[0] % (xd[1] / wd[1]).max(1) != 0 {
        return Err(na(format!(
            "the conv_fprop pack needs C a multiple of w's per-group channels and K a multiple of the groups; x {xd:?}, w {wd:?}"
        )));
    }
    let groups = xd[1] / wd[1];
    let k_out = wd[0];
    let is_bias = |d: &[i64], s: &[i64]| {
        d.len() == 4
            && d[0] == 1
            && d[1] == k_out
            && d[2] == 1
            && d[3] == 1
            && (d[1] == 1 || s[1] == 1)
    };
    let fused = match_epilogue(
        graph,
        &nodes[1..],
        a.y_tensor_uid(),
        "conv_fprop",
        dtype,
        &is_bias,
        "a bias of dims [1, K, 1, 1] with unit K stride",
    )?;
    let cur = fused.out;
    let cur_t = tensor(graph, cur)?;
    let (yd, ys) = dims_strides(&cur_t);
    if yd.len() != 4 || cur_t.data_type() != dtype {
        return Err(na(format!(
            "the conv_fprop pack writes a 4-D y of the inputs' data type; y dims {yd:?}"
        )));
    }
    let pre = pair(a.pre_padding(), 0);
    let post = pair(a.post_padding(), 0);
    let stride = pair(a.stride(), 1);
    let dil = pair(a.dilation(), 1);
    if [&pre, &post, &stride, &dil].iter().any(|v| v.len() != 2) {
        return Err(na(
            "the conv_fprop pack needs 2 spatial padding/stride/dilation values",
        ));
    }
    for (i, (hw, f)) in [(xd[2], wd[2]), (xd[3], wd[3])].into_iter().enumerate() {
        let window = Window {
            pre: pre[i],
            post: post[i],
            stride: stride[i],
            dilation: dil[i],
        };
        let want = (dil[i] >= 1 && stride[i] >= 1 && pre[i] >= 0)
            .then(|| output_extent(hw, f, window).ok())
            .flatten();
        if want != Some(yd[2 + i]) || yd[0] != xd[0] || yd[1] != wd[0] {
            return Err(na(format!(
                "the conv_fprop pack: output dims {yd:?} disagree with x {xd:?}, w {wd:?}, padding {pre:?}/{post:?}, stride {stride:?}, dilation {dil:?}"
            )));
        }
    }
    let (rd, rs) = match fused.residual {
        Some(u) => dims_strides(&tensor(graph, u)?),
        None => (yd.clone(), ys.clone()),
    };
    for (d, s, what) in [
        (&xd, &xs, "x"),
        (&wd, &ws, "w"),
        (&yd, &ys, "y"),
        (&rd, &rs, "the residual"),
    ] {
        if s.iter().any(|v| *v < 0) || span(d, s).is_none_or(|v| v > i64::from(i32::MAX)) {
            return Err(na(format!(
                "the conv_fprop pack needs non-negative strides and element offsets of {what} within 2147483647; dims {d:?}, strides {s:?}"
            )));
        }
    }
    let shape = [
        xd[0], xd[1], xd[2], xd[3], wd[0], yd[2], yd[3], wd[2], wd[3], pre[0], pre[1], stride[0],
        stride[1], dil[0], dil[1], groups,
    ];
    if shape.iter().any(|v| *v > i64::from(i32::MAX)) || xd.iter().any(|v| *v < 1) {
        return Err(na(format!(
            "the conv_fprop pack needs extents in [1, 2147483647]; x {xd:?}, w {wd:?}"
        )));
    }
    Ok(ConvFpropInputs {
        version: 2,
        uids: [a.x_tensor_uid(), a.w_tensor_uid(), cur],
        bias_uid: fused.bias,
        residual_uid: fused.residual,
        scale_uid: fused.scale,
        dtype: dtype.0,
        shape,
        strides: [
            xs[0], xs[1], xs[2], xs[3], ws[0], ws[1], ws[2], ws[3], ys[0], ys[1], ys[2], ys[3],
        ],
        res_strides: [rs[0], rs[1], rs[2], rs[3]],
        epilogue: fused.code,
        config: TritonConfig::restored("conv_fprop", 0, [64, 64, 32], 8, 4, 0, 32),
    })
}

/// The conv fprop handler of one contract version: v2 builds, saves and restores; v1 only
/// restores plans saved before v2 (its kernels take no residual or scale).
#[derive(Debug, Clone, Copy)]
pub struct ConvFpropHandler {
    /// 1 or 2.
    pub version: u8,
}

impl ConvFpropHandler {
    /// The v1 handler (restore only).
    pub const V1: ConvFpropHandler = ConvFpropHandler { version: 1 };
    /// The v2 handler.
    pub const V2: ConvFpropHandler = ConvFpropHandler { version: 2 };

    /// The inputs for `kernel` on `graph`, with the static rule applied (module docs).
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: the graph texts; `the conv_fprop pack builds new plans on contract v2
    /// only` (v1 handler); `kernel <k> is not a packed conv_fprop entry`;
    /// `kernel <k> is built for <dtype>, the graph is <dtype>`; `kernel <k> is the spec
    /// variant; …`; `kernel <k> is the nchw variant; the graph's layout does not satisfy its
    /// hints (…)`; `kernel <k> is the nchwt variant; …`; `kernel <k>: static rule: …`.
    pub fn inputs_for(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<ConvFpropInputs> {
        if self.version < 2 {
            return Err(na(
                "the conv_fprop pack builds new plans on contract v2 only",
            ));
        }
        let mut inputs = match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, "conv_fprop", inputs.dtype)?;
        if config.spec && !inputs.fits_spec() {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's layout does not satisfy its hints (channels-last x, w, y, groups 1, C, K and the other strides multiples of 16)",
                kernel.describe()
            )));
        }
        if config.channels_first && !inputs.fits_nchw() {
            return Err(na(format!(
                "kernel {} is the nchw variant; the graph's layout does not satisfy its hints (unit pixel strides of x, y and the residual, packed KCRS w)",
                kernel.describe()
            )));
        }
        if config.transposing && !inputs.fits_nchwt() {
            return Err(na(format!(
                "kernel {} is the nchwt variant; the graph's layout does not satisfy its hints (NCHW x with packed planes, packed KCRS w, unit q strides of y and the residual, groups 1, C and K multiples of 16)",
                kernel.describe()
            )));
        }
        inputs.config = config;
        let tiles = inputs.tiles() * inputs.shape[15];
        let c = &inputs.config;
        let hinted = c.spec || c.channels_first || c.transposing;
        let kg = inputs.shape[4] / inputs.shape[15];
        if hinted && c.block[1] > 64 && c.block[1] > kg {
            return Err(na(format!(
                "kernel {}: static rule: a {}-channel tile leaves columns idle for K/groups = {kg}; a narrower tile serves this graph",
                kernel.describe(),
                c.block[1]
            )));
        }
        if hinted && c.block[0] * c.block[1] > 64 * 64 && tiles < MIN_TILES {
            return Err(na(format!(
                "kernel {}: static rule: {tiles} tiles under-fill the device (fewer than {MIN_TILES}); a smaller tile serves this graph",
                kernel.describe()
            )));
        }
        let taps = inputs.shape[7] * inputs.shape[8];
        let cg = inputs.shape[1] / inputs.shape[15];
        if c.spec
            && inputs.dtype != DataType::FLOAT.0
            && c.block[0] > 64
            && cg > c.block[2]
            && taps > 1
        {
            return Err(na(format!(
                "kernel {}: static rule: C/groups = {cg} takes several {}-deep channel blocks per tap over {taps} taps; a 64-row tile serves this graph",
                kernel.describe(),
                c.block[2]
            )));
        }
        Ok(inputs)
    }
}

impl DispatchHandler for ConvFpropHandler {
    fn contract(&self) -> &str {
        if self.version >= 2 {
            CONV_FPROP_V2
        } else {
            CONV_FPROP_V1
        }
    }

    fn launch_signature(&self) -> Vec<KernelArgument> {
        signature(0, self.version)
    }

    fn launch_signature_for(&self, values: &LaunchValues) -> Vec<KernelArgument> {
        let variant = match values.get("spec") {
            Some(crate::ingestor::launch_values::LaunchValue::Int(v)) => *v,
            _ => 0,
        };
        signature(variant, self.version)
    }

    fn prepare(&self, graph: &OperationGraph) -> PluginResult<PreparedLaunch> {
        Err(match_graph(graph).err().unwrap_or_else(|| {
            na("the conv_fprop pack launches packed entries only; prepare a kernel")
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
        ConvFpropInputs::from_values(dispatch, values, self.version)?.to_launch()
    }

    /// x, w, y, bias, residual and scale (null when absent; v1: bias only), the integers,
    /// two null scratch pointers. A spec launch refuses (BAD_PARAM) x, w, y or residual
    /// addresses that are not 16-byte aligned.
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
        triton_kernel_args(
            launch,
            tensors,
            "conv",
            "x, w, y and the residual",
            optional,
        )
    }

    /// As [`Self::kernel_args`]; an nchwt launch (`spec` 3) takes the workspace address after
    /// the six tensor pointers and refuses (BAD_PARAM) `the workspace is at <addr>; this plan
    /// runs the transposing channels-first conv kernel, which needs a 16-byte aligned
    /// workspace`.
    fn kernel_args_with_workspace(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: u64,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let mut args = self.kernel_args(launch, tensors)?;
        if is_transposing(launch) {
            if workspace % 16 != 0 {
                return Err(PluginError::bad_param(format!(
                    "the workspace is at {workspace:#x}; this plan runs the transposing channels-first conv kernel, which needs a 16-byte aligned workspace"
                )));
            }
            args.insert(6, KernelArgValue::Pointer(workspace));
        }
        Ok(args)
    }

    /// nchwt (`spec` 3): the layout pass, the same arguments with `phase` 0 (the last integer)
    /// on grid ([`ConvFpropInputs::layout_pass_programs`], 1, 1) and the main launch's block
    /// and shared memory. Other variants: none.
    fn prologue_launches(
        &self,
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
        if !is_transposing(launch) || args.len() < 3 {
            return Vec::new();
        }
        // The launch values were checked when the launch was prepared or restored.
        let int = |n: &str| match launch.launch_values.get(n) {
            Some(LaunchValue::Int(v)) => *v,
            _ => 0,
        };
        let programs = layout_pass_programs(["n", "c", "h", "width", "k", "r", "s"].map(int));
        let mut pargs = args.to_vec();
        let phase = pargs.len() - 3;
        pargs[phase] = KernelArgValue::I32(0);
        let geometry = LaunchGeometry {
            grid: [u32::try_from(programs).unwrap_or(u32::MAX), 1, 1],
            ..launch.geometry
        };
        vec![(geometry, pargs)]
    }
}

/// N·cdiv(C, 64)·cdiv(H·W, 64) + K·cdiv(C, 64)·cdiv(R·S, 64) for `[n, c, h, w, k, r, s]`.
fn layout_pass_programs([n, c, h, w, k, r, s]: [i64; 7]) -> i64 {
    let cb = (c + 63) / 64;
    n * cb * ((h * w + 63) / 64) + k * cb * ((r * s + 63) / 64)
}

/// Whether `launch` runs the nchwt variant (`spec` launch value 3).
fn is_transposing(launch: &PreparedLaunch) -> bool {
    matches!(launch.launch_values.get("spec"), Some(LaunchValue::Int(3)))
}
