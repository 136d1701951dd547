//! Conv fprop pack, contract `hipkernel.conv_fprop.dispatch.v2`: 2-D convolution forward as
//! an implicit GEMM with a fused epilogue (scale, bias\[k\], residual, activation;
//! [`crate::ingestor::framework::epilogue`]) on the Triton kernels of
//! `engines/kernels/triton/conv_fprop.py`, ONE launch. (`hipkernel.conv_fprop.dispatch.v1` —
//! bias and ReLU only, no residual or scale pointers — is still restored from plans saved
//! before v2; new builds use v2.)
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
//! those copies and stores y through its own strides); `grouped` = direct grouped (v2: unit
//! channel strides of x, y and the residual, their other strides multiples of 16, w any
//! strides, pointers 16-byte aligned; kernel `hipdnn_conv_fprop_dg`, which computes a tile of
//! pixels × output channels across groups: f32 multiply-adds over the taps and the group's
//! channels, or for 16-bit groups with C/groups = K/groups dividing `block_n` one
//! block-diagonal product per tap; for depthwise and ResNeXt-style convolutions); `generic` =
//! anything else (kernel `hipdnn_conv_fprop_g`: the spec kernel's tile over any strides, which
//! reduces over the flattened (r, s, c) when a group has at most a quarter of `block_k`
//! channels and the filter several taps: the RGB stem).
//!
//! **Static rule**: entries in pack order (grouped, spec, then nchwt, then nchw, then generic;
//! larger tiles first); the grouped entry serves groups > 1 with at most [`MAX_DIRECT_CG`]
//! channels per group only; an f16/bf16 spec entry with more than 64 rows is refused when C/groups needs
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
//! 3]), `spec` [0, 5] without 4 (0 generic, 1 spec, 2 nchw, 3 nchwt, 5 grouped; v1 [0, 1]), `block_m block_n block_k` [16, 256], `group_m` [1, 64], `num_warps` [1,
//! 16], `warp_size` 32/64, `shared_bytes` [0, 262144]. Launch: grid (cdiv(n·p·q,
//! block_m)·cdiv(k/groups, block_n), groups, 1) (grouped: (cdiv(n·p·q, block_m)·cdiv(k,
//! block_n), 1, 1)), block (num_warps·warp_size), dynamic shared
//! memory `shared_bytes`, workspace 0 (nchwt: [`ConvFpropInputs::workspace_bytes`], after a
//! prologue launch of grid ([`ConvFpropInputs::layout_pass_programs`], 1, 1)), both scratch
//! pointers null. Kernel arguments: x, w, y,
//! bias, res, scale (null when absent; v1: x, w, y, bias), (nchwt: the workspace), the
//! integers in the order of `conv_fprop.py` (the spec variant drops `groups`, `sxc`, `swc`,
//! `syk`, `srk`; the nchw variant drops `sxw`, `syq`, `srq`; the grouped variant drops `sxc`,
//! `syk`, `srk`; the nchwt variant takes `n c h
//! width k p q r s pad_h pad_w stride_h stride_w dil_h dil_w sxn sxc swk syn syk syp srn srk
//! srp epilogue phase`), then the two scratch pointers.

use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::PreparedLaunch;
use crate::ingestor::framework::conv::{
    self, SHAPE, check_offsets, check_restored, dims_agree, spatial,
};
use crate::ingestor::framework::gemm::{
    self, EpilogueGemm, GemmCommon, GemmGraph, GemmHandler, GemmReader, check_hints,
};
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::framework::graph::{dims_strides, na};
use crate::ingestor::framework::head::conv_fwd_head;
use crate::ingestor::framework::launch::{check_tiles, static_rule};
use crate::ingestor::framework::triton::TritonConfig;
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::LaunchValue;
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::DataType;

/// Contract v1 (bias and ReLU epilogue; no residual or scale pointers): restored from plans
/// saved before v2, never chosen for a new build.
pub const CONV_FPROP_V1: &str = "hipkernel.conv_fprop.dispatch.v1";
/// Contract v2: residual and scale pointers, residual strides,
/// [`crate::ingestor::framework::epilogue`]'s code.
pub const CONV_FPROP_V2: &str = "hipkernel.conv_fprop.dispatch.v2";

/// The most channels per group the direct grouped variant serves (static rule): its
/// multiply-adds run on CUDA cores / SIMD lanes, so wider groups go to the per-group implicit
/// GEMM on the matrix units.
pub const MAX_DIRECT_CG: i64 = 16;

/// Residual stride value names (v2), in kernel order.
const RES_STRIDES: [&str; 4] = ["srn", "srk", "srp", "srq"];
/// Stride value names, in kernel order.
const STRIDES: [&str; 12] = [
    "sxn", "sxc", "sxh", "sxw", "swk", "swc", "swr", "sws", "syn", "syk", "syp", "syq",
];

/// Every value name of contract `version` (1 or 2), sorted.
pub fn value_names(version: u8) -> Vec<&'static str> {
    let shape = [&SHAPE.map(|d| d.name)[..], &STRIDES].concat();
    gemm::value_names::<ConvFpropInputs>(version, &shape)
}

/// The kernel parameter names of variant `variant` (0 generic, 1 spec, 2 nchw, 3 nchwt (v2
/// only): the `spec` launch value) of contract `version`, in order (with the two scratch
/// pointers).
pub fn param_names(variant: i64, version: u8) -> Vec<&'static str> {
    let (spec, cf, nt, dg) = (variant == 1, variant == 2, variant == 3, variant == 5);
    let mut pointers = vec!["x_ptr", "w_ptr", "y_ptr", "bias_ptr"];
    if version >= 2 || nt {
        pointers.extend(["res_ptr", "scale_ptr"]);
    }
    if nt {
        pointers.push("ws_ptr");
        // The pointers and the shape values without `groups`, then nchwt's own list.
        let mut v = conv::param_names(true, &pointers, &[], &STRIDES);
        v.truncate(pointers.len() + 15);
        v.extend([
            "sxn", "sxc", "swk", "syn", "syk", "syp", "srn", "srk", "srp",
        ]);
        v.extend(["epilogue", "phase", "global_scratch", "profile_scratch"]);
        return v;
    }
    let mut v = conv::param_names(spec, &pointers, &[], &STRIDES);
    v.truncate(v.len() - 2);
    v.retain(|n| !(cf && ["sxw", "syq"].contains(n) || dg && ["sxc", "syk"].contains(n)));
    if version >= 2 {
        v.extend(
            RES_STRIDES
                .iter()
                .filter(|n| !((spec || dg) && **n == "srk" || cf && **n == "srq")),
        );
    }
    v.extend(["epilogue", "global_scratch", "profile_scratch"]);
    v
}

/// The kernel signature of variant `variant` (as [`param_names`]) of contract `version`
/// (natural layout, named).
pub fn signature(variant: i64, version: u8) -> Vec<KernelArgument> {
    gemm::signature::<ConvFpropInputs>(variant, version)
}

/// The launch inputs of contracts v1 and v2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvFpropInputs {
    /// What every epilogue GEMM launch holds: the version, the UIDs of x, w and y, the
    /// epilogue's tensors and code, the data type and the config.
    pub common: GemmCommon,
    /// n, c, h, width, k, p, q, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups.
    pub shape: [i64; 16],
    /// sxn … syq (elements).
    pub strides: [i64; 12],
    /// srn, srk, srp, srq of the residual (elements; y's strides without one).
    pub res_strides: [i64; 4],
}

impl ConvFpropInputs {
    /// Whether the launch satisfies the spec (channels-last) hints; alignment at execute:
    /// those of the backward convolutions ([`conv::fits_spec`]) and the residual's, its
    /// channel stride 1 (v2) and its other strides multiples of 16.
    pub fn fits_spec(&self) -> bool {
        let r = self.res_strides;
        conv::fits_spec(&self.shape, &self.strides)
            && (self.common.version < 2 || r[1] == 1)
            && [r[0], r[2], r[3]].iter().all(|v| v % 16 == 0)
    }

    /// Whether the launch satisfies the channels-first (`nchw`) variant's hints (v2 only;
    /// alignment at execute): unit pixel strides of x, y and the residual (`sxw`, `syq`,
    /// `srq` = 1) and a packed KCRS filter (`sws` = 1, `swr` = S, `swc` = R·S), any groups.
    pub fn fits_nchw(&self) -> bool {
        let s = self.strides;
        let (r, sz) = (self.shape[7], self.shape[8]);
        self.common.version >= 2
            && s[3] == 1
            && s[11] == 1
            && self.res_strides[3] == 1
            && s[7] == 1
            && s[6] == sz
            && s[5] == r * sz
    }

    /// Whether the launch satisfies the direct grouped (`grouped`) variant's hints (v2 only;
    /// alignment at execute): unit channel strides of x, y and the residual (`sxc`, `syk`,
    /// `srk` = 1) and their other strides multiples of 16; w any strides.
    pub fn fits_grouped(&self) -> bool {
        let (s, r) = (self.strides, self.res_strides);
        self.common.version >= 2
            && s[1] == 1
            && s[9] == 1
            && r[1] == 1
            && [s[0], s[2], s[3], s[8], s[10], s[11], r[0], r[2], r[3]]
                .iter()
                .all(|v| v % 16 == 0)
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
        self.common.version >= 2
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
        if !self.common.config.transposing {
            return 0;
        }
        let elem = if self.common.dtype == DataType::FLOAT.0 {
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

    /// Tiles per group (the grouped variant: tiles in all, its column tiles span K).
    pub fn tiles(&self) -> i64 {
        let [n, k, p, q] = [0, 4, 5, 6].map(|i| self.shape[i]);
        let c = &self.common.config;
        let cols = if c.grouped { k } else { k / self.shape[15] };
        ((n * p * q + c.block[0] - 1) / c.block[0]) * ((cols + c.block[1] - 1) / c.block[1])
    }
}

impl EpilogueGemm for ConvFpropInputs {
    const FAMILY: &'static str = "conv_fprop";
    const CONTRACTS: [&'static str; 2] = [CONV_FPROP_V1, CONV_FPROP_V2];
    const UIDS: [&'static str; 3] = ["x.uid", "w.uid", "y.uid"];
    const KERNEL: &'static str = "conv";
    const OPERANDS: &'static str = "x, w, y and the residual";
    const RES_STRIDES: &'static [&'static str] = &RES_STRIDES;

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        match_graph(graph)
    }

    /// The variant's hints, then the static rule (module docs).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `kernel <k> is the spec variant; the graph's layout does not satisfy
    /// its hints (…)` (likewise nchw, nchwt); `kernel <k>: static rule: …`.
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        check_hints(
            kernel,
            "layout",
            &[
                (
                    config.spec && !self.fits_spec(),
                    "spec",
                    "channels-last x, w, y, groups 1, C, K and the other strides multiples of 16",
                ),
                (
                    config.channels_first && !self.fits_nchw(),
                    "nchw",
                    "unit pixel strides of x, y and the residual, packed KCRS w",
                ),
                (
                    config.transposing && !self.fits_nchwt(),
                    "nchwt",
                    "NCHW x with packed planes, packed KCRS w, unit q strides of y and the residual, groups 1, C and K multiples of 16",
                ),
                (
                    config.grouped && !self.fits_grouped(),
                    "grouped",
                    "channels-last x, y and the residual, their other strides multiples of 16",
                ),
            ],
        )?;
        self.common.config = config;
        let groups = self.shape[15];
        let c = &self.common.config;
        if c.grouped {
            let cg = self.shape[1] / groups;
            return if groups == 1 {
                Err(static_rule(
                    kernel,
                    "the direct grouped kernel serves grouped convolutions; groups = 1 runs as an implicit GEMM",
                ))
            } else if cg > MAX_DIRECT_CG {
                Err(static_rule(
                    kernel,
                    format_args!(
                        "C/groups = {cg} is more than {MAX_DIRECT_CG} channels per group; the implicit GEMM per group serves this graph"
                    ),
                ))
            } else {
                Ok(())
            };
        }
        let hinted = c.spec || c.channels_first || c.transposing;
        let kg = self.shape[4] / groups;
        if hinted && c.block[1] > 64 && c.block[1] > kg {
            return Err(static_rule(
                kernel,
                format_args!(
                    "a {}-channel tile leaves columns idle for K/groups = {kg}; a narrower tile serves this graph",
                    c.block[1]
                ),
            ));
        }
        let big = hinted && c.block[0] * c.block[1] > 64 * 64;
        check_tiles(kernel, big, self.tiles() * groups)?;
        let taps = self.shape[7] * self.shape[8];
        let cg = self.shape[1] / groups;
        if c.spec
            && self.common.dtype != DataType::FLOAT.0
            && c.block[0] > 64
            && cg > c.block[2]
            && taps > 1
        {
            return Err(static_rule(
                kernel,
                format_args!(
                    "C/groups = {cg} takes several {}-deep channel blocks per tap over {taps} taps; a 64-row tile serves this graph",
                    c.block[2]
                ),
            ));
        }
        Ok(())
    }

    /// Reads the shape values, the strides, `dtype`, the config, `spec`, the residual's
    /// strides (v2) and the UIDs, then checks the variant's rules, the groups and the
    /// geometry.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix): the reader texts; `launch values of dispatch '<d>' name
    /// the spec variant, whose 'groups', 'sxc', 'swc' and 'syk' (and 'srk') must be 1`;
    /// `launch values of dispatch '<d>' name the nchw variant, whose 'sxw', 'syq', 'srq' and
    /// 'sws' must be 1, 'swr' = 's' and 'swc' = 'r'·'s'`; `launch values of dispatch '<d>'
    /// name the nchwt variant, whose 'groups', 'sxw', 'sws', 'syq' and 'srq' must be 1, …`;
    /// `launch values of dispatch '<d>': 'groups' must divide 'c' and 'k'`; the geometry
    /// texts.
    fn read_shape(r: &GemmReader<'_>) -> PluginResult<Self> {
        let (dispatch, version) = (r.dispatch, r.version);
        let d = quote(dispatch);
        let shape = r.values(&SHAPE)?;
        let strides = r.ints(&STRIDES, 0, i64::from(i32::MAX))?;
        let dtype = r.int("dtype", 1, 3)? as i8;
        let mut config = r.config("conv_fprop", 0)?;
        let variant = r.int("spec", 0, if version >= 2 { 5 } else { 1 })?;
        if variant == 4 {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name variant 4 (bcol), a matmul variant; conv fprop takes 0 generic, 1 spec, 2 nchw, 3 nchwt or 5 grouped"
            )));
        }
        config.set_variant(variant);
        let res_strides = r.res_strides(&RES_STRIDES, [8, 9, 10, 11].map(|i| strides[i]))?;
        let inputs = ConvFpropInputs {
            common: r.common::<Self>(dtype, config)?,
            shape,
            strides,
            res_strides,
        };
        let unit = [
            shape[15],
            strides[1],
            strides[5],
            strides[9],
            res_strides[1],
        ];
        if inputs.common.config.spec && unit != [1; 5] {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'groups', 'sxc', 'swc' and 'syk' (and 'srk') must be 1"
            )));
        }
        if inputs.common.config.channels_first && !inputs.fits_nchw() {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the nchw variant, whose 'sxw', 'syq', 'srq' and 'sws' must be 1, 'swr' = 's' and 'swc' = 'r'·'s'"
            )));
        }
        if inputs.common.config.transposing && !inputs.fits_nchwt() {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the nchwt variant, whose 'groups', 'sxw', 'sws', 'syq' and 'srq' must be 1, 'sxh' = 'width', 'swr' = 's', 'swc' = 'r'·'s', 'c' and 'k' multiples of 16 and the workspace at most 2147483647 elements"
            )));
        }
        if inputs.common.config.grouped && !inputs.fits_grouped() {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the grouped variant, whose 'sxc', 'syk' and 'srk' must be 1 and 'sxn', 'sxh', 'sxw', 'syn', 'syp', 'syq', 'srn', 'srp' and 'srq' multiples of 16"
            )));
        }
        check_restored(dispatch, false, &shape, &strides, &STRIDES)?;
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    fn common(&self) -> &GemmCommon {
        &self.common
    }

    fn shape_values(&self) -> Vec<(&'static str, i64)> {
        let mut v: Vec<_> = SHAPE.map(|d| d.name).into_iter().zip(self.shape).collect();
        v.extend(STRIDES.into_iter().zip(self.strides));
        v
    }

    fn res_strides(&self) -> &[i64] {
        &self.res_strides
    }

    /// The variant's integers in kernel order (nchwt: ending with `phase` 1, the main
    /// launch).
    fn scalars(&self) -> Vec<i64> {
        let s = self.strides;
        let r = self.res_strides;
        if self.common.config.transposing {
            let mut ints: Vec<i64> = self.shape[..15].to_vec();
            ints.extend([s[0], s[1], s[4], s[8], s[9], s[10], r[0], r[1], r[2]]);
            ints.extend([self.common.epilogue, 1]);
            return ints;
        }
        let c = &self.common.config;
        let (spec, cf, dg) = (c.spec, c.channels_first, c.grouped);
        // The values each variant's hints made constants: (spec, nchw, grouped) drops.
        let kept = |items: &[i64], drops: [&[usize]; 3]| {
            let dropped = |i: &usize| {
                spec && drops[0].contains(i)
                    || cf && drops[1].contains(i)
                    || dg && drops[2].contains(i)
            };
            let kept = items.iter().enumerate().filter(|(i, _)| !dropped(i));
            kept.map(|(_, v)| *v).collect::<Vec<i64>>()
        };
        let mut ints = kept(&self.shape, [&[15], &[], &[]]);
        ints.extend(kept(&s, [&[1, 5, 9], &[3, 11], &[1, 9]]));
        if self.common.version >= 2 {
            ints.extend(kept(&r, [&[1], &[3], &[1]]));
        }
        ints.push(self.common.epilogue);
        ints
    }

    /// (tiles, groups, 1); the grouped variant (tiles, 1, 1).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values of dispatch '<d>' give more than 2147483647 tiles or
    /// 65535 groups`.
    fn grid(&self, dispatch: &str) -> PluginResult<[u32; 3]> {
        let [n, p, q] = [self.shape[0], self.shape[5], self.shape[6]];
        let groups = if self.common.config.grouped {
            1
        } else {
            self.shape[15]
        };
        conv::group_grid(dispatch, [n, p, q], groups, || self.tiles())
    }

    fn param_names(variant: i64, version: u8) -> Vec<&'static str> {
        param_names(variant, version)
    }

    fn value_names(version: u8) -> Vec<&'static str> {
        value_names(version)
    }

    fn workspace_bytes(&self) -> u64 {
        ConvFpropInputs::workspace_bytes(self)
    }

    /// An nchwt launch (`spec` 3) takes the workspace address after the six tensor pointers
    /// and refuses (BAD_PARAM) `the workspace is at <addr>; this plan runs the transposing
    /// channels-first conv kernel, which needs a 16-byte aligned workspace`.
    fn with_workspace(
        launch: &PreparedLaunch,
        mut args: Vec<KernelArgValue>,
        workspace: u64,
    ) -> PluginResult<Vec<KernelArgValue>> {
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
    fn layout_pass(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Option<(LaunchGeometry, Vec<KernelArgValue>)> {
        if !is_transposing(launch) || args.len() < 3 {
            return None;
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
        Some((geometry, pargs))
    }
}

fn match_graph(graph: &OperationGraph) -> PluginResult<ConvFpropInputs> {
    let (head, a) = GemmGraph::new(
        graph,
        "conv_fprop",
        |node| {
            let a = conv_fwd_head(node, "conv_fprop", "the conv_fprop pack")?;
            Ok((a, [a.x_tensor_uid(), a.w_tensor_uid(), a.y_tensor_uid()]))
        },
        "x and w",
    )?;
    let dtype = head.dtype;
    let (xd, xs) = dims_strides(&head.inputs[0]);
    let (wd, ws) = dims_strides(&head.inputs[1]);
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
    let (fused, cur_t) = head.epilogue(
        graph,
        &is_bias,
        "a bias of dims [1, K, 1, 1] with unit K stride",
    )?;
    let (yd, ys) = dims_strides(&cur_t);
    if yd.len() != 4 || cur_t.data_type() != dtype {
        return Err(na(format!(
            "the conv_fprop pack writes a 4-D y of the inputs' data type; y dims {yd:?}"
        )));
    }
    let attrs = [a.pre_padding(), a.post_padding(), a.stride(), a.dilation()];
    let Some([pre, post, stride, dil]) = spatial(attrs) else {
        return Err(na(
            "the conv_fprop pack needs 2 spatial padding/stride/dilation values",
        ));
    };
    if !dims_agree(&xd, &wd, &yd, [&pre, &post, &stride, &dil]) {
        return Err(na(format!(
            "the conv_fprop pack: output dims {yd:?} disagree with x {xd:?}, w {wd:?}, padding {pre:?}/{post:?}, stride {stride:?}, dilation {dil:?}"
        )));
    }
    let (rd, rs) = match fused.residual {
        Some(u) => dims_strides(&tensor(graph, u)?),
        None => (yd.clone(), ys.clone()),
    };
    check_offsets(
        "conv_fprop",
        [
            (&xd, &xs, "x"),
            (&wd, &ws, "w"),
            (&yd, &ys, "y"),
            (&rd, &rs, "the residual"),
        ],
    )?;
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
        common: head.common(
            &fused,
            TritonConfig::restored("conv_fprop", 0, [64, 64, 32], 8, 4, 0, 32),
        ),
        shape,
        strides: [
            xs[0], xs[1], xs[2], xs[3], ws[0], ws[1], ws[2], ws[3], ys[0], ys[1], ys[2], ys[3],
        ],
        res_strides: [rs[0], rs[1], rs[2], rs[3]],
    })
}

/// The conv fprop handler of one contract version: v2 builds, saves and restores; v1 only
/// restores plans saved before v2 (its kernels take no residual or scale).
pub type ConvFpropHandler = GemmHandler<ConvFpropInputs>;

/// N·cdiv(C, 64)·cdiv(H·W, 64) + K·cdiv(C, 64)·cdiv(R·S, 64) for `[n, c, h, w, k, r, s]`.
fn layout_pass_programs([n, c, h, w, k, r, s]: [i64; 7]) -> i64 {
    let cb = (c + 63) / 64;
    n * cb * ((h * w + 63) / 64) + k * cb * ((r * s + 63) / 64)
}

/// Whether `launch` runs the nchwt variant (`spec` launch value 3).
fn is_transposing(launch: &PreparedLaunch) -> bool {
    matches!(launch.launch_values.get("spec"), Some(LaunchValue::Int(3)))
}
