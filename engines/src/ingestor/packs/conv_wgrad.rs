//! Conv wgrad pack, contract `hipkernel.conv_wgrad.dispatch.v1`: 2-D convolution backward
//! filter as an implicit GEMM on the Triton kernels of `engines/kernels/triton/conv_wgrad.py`,
//! ONE launch, with a deterministic split of the reduction over the workspace.
//!
//! Graphs served: one `conv_wgrad` node (dy `[N, K, P, Q]`, x `[N, C, H, W]`, dw
//! `[K, C/groups, R, S]`, any strides, cross-correlation, padding, stride, dilation, groups;
//! f16, bf16 (f32 accumulate, dw stored in the tensors' type) or f32 (IEEE), one data type).
//!
//! GEMM per group: rows = the group's output channels (K/groups), columns = (r, s, c) with c
//! fastest over C/groups (contiguous x loads and dw stores in channels-last), reduction =
//! (n, p, q), N·P·Q long.
//!
//! Entries: `conv_wgrad_<dtype>_<variant>_…` as for conv_fprop; `spec` = channels-last (dy's
//! K stride, x's C stride, dw's C stride 1, groups 1, C, K and the other strides multiples of
//! 16, dy, x and dw 16-byte aligned), `generic` = anything else.
//!
//! **Static rule** (no benchmarking): entries in pack order (spec before generic, larger tiles
//! first); a spec entry serves a graph that satisfies its hints, except that a spec tile
//! larger than 64×64 is refused when it gives fewer than [`MIN_TILES`] tiles (several
//! programs per tile then share the reduction anyway, and the last one's sum of the partial
//! tiles grows with the tile), and a spec entry whose reduction step (`block_k`) is deeper
//! than 64 serves only C/groups ≤ 64 (measured: it wins there and loses above). Then the split: with `t` tiles (all groups),
//! `split = 1` when `t ≥` [`TARGET_PROGRAMS`], else
//! `min(cdiv(TARGET_PROGRAMS, t), max(1, N·P·Q / `[`MIN_SPLIT_LEN`]`), `[`MAX_SPLIT`]`)`
//! (about two programs per SM of a 132-SM H200, each summing at least 512 (n, p, q) terms).
//! The split is a launch value: a saved plan keeps it.
//!
//! | launch value | type | range |
//! |---|---|---|
//! | `dy.uid`, `x.uid`, `dw.uid` | int | any |
//! | `dtype` | int | `DataType` FLOAT 1, HALF 2, BFLOAT16 3 |
//! | `n c h width k p q r s stride_h stride_w dil_h dil_w groups` | int | [1, 2147483647]; `groups` divides `c` and `k` |
//! | `pad_h`, `pad_w` | int | [0, 2147483647] |
//! | `split` | int | [1, 65535] |
//! | `sdyn sdyk sdyp sdyq sxn sxc sxh sxw swk swc swr sws` | int | [0, 2147483647] (elements) |
//! | `spec` | int | 0 generic, 1 spec (then `groups`, `sdyk`, `sxc`, `swc` must be 1) |
//! | `block_m`, `block_n`, `block_k`, `group_m`, `num_warps`, `warp_size`, `shared_bytes` | int | as conv_fprop |
//!
//! Launch: grid (cdiv(k/groups, block_m)·r·s·cdiv(c/groups, block_n), split, groups), block
//! num_warps·warp_size, dynamic shared memory `shared_bytes`. Workspace: 0 when split is 1;
//! else a counter region of cdiv(t, 64)·64 int32 (t = tiles of all groups; 256-byte
//! multiple) followed by t·split f32 partial tiles of block_m·block_n, i.e.
//! `4·(cdiv(t, 64)·64 + t·split·block_m·block_n)` bytes. The counter region is zeroed on the
//! launch stream before every launch ([`DispatchHandler::zeroed_workspace_bytes`]); the
//! program that brings a tile's counter to split sums the partials in split order 0, 1, …
//! (fixed order: repeated executes give identical bits; no float atomics) and resets the
//! counter. Kernel arguments: dy, x, dw, the workspace (null when split is 1), the integers
//! in the order of `conv_wgrad.py` (spec drops `groups`, `sdyk`, `sxc`, `swc`), the two null
//! scratch pointers.

use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::framework::graph::{dims_strides, na};
use crate::ingestor::framework::triton::packed_triton_handler_methods;
use crate::ingestor::framework::triton::{MIN_TILES, TritonConfig, is_spec, triton_kernel_args};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::TensorBinding;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops::conv::{Window, output_extent};
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::{ConvMode, DataType, Node};

/// The versioned contract name.
pub const CONV_WGRAD_V1: &str = "hipkernel.conv_wgrad.dispatch.v1";
/// Programs the static rule's split aims for (two per SM of a 132-SM H200).
pub const TARGET_PROGRAMS: i64 = 264;
/// Fewest reduction terms (n, p, q) per split the static rule gives.
pub const MIN_SPLIT_LEN: i64 = 512;
/// Most splits the static rule gives (bounds the last program's sum of partial tiles).
pub const MAX_SPLIT: i64 = 32;

/// Shape value names, in kernel order (after the pointers).
const SHAPE: [&str; 17] = [
    "n", "c", "h", "width", "k", "p", "q", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w",
    "dil_h", "dil_w", "groups", "split",
];
/// Stride value names, in kernel order.
const STRIDES: [&str; 12] = [
    "sdyn", "sdyk", "sdyp", "sdyq", "sxn", "sxc", "sxh", "sxw", "swk", "swc", "swr", "sws",
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
/// Index of `groups` and `split` in the shape values.
const GROUPS: usize = 15;
const SPLIT: usize = 16;
/// Stride indices constant 1 in the spec variant (`sdyk`, `sxc`, `swc`).
const SPEC_ONE: [usize; 3] = [1, 5, 9];

/// Every value name of the contract.
pub fn value_names() -> Vec<&'static str> {
    let mut v = vec!["dy.uid", "x.uid", "dw.uid", "dtype"];
    v.extend(SHAPE);
    v.extend(STRIDES);
    v.extend(CONFIG);
    v.sort_unstable();
    v
}

/// The kernel parameter names of a variant, in order (with the two scratch pointers).
pub fn param_names(spec: bool) -> Vec<&'static str> {
    let kernel_shape = [
        "N", "C", "H", "W", "K", "P", "Q", "R", "S", "pad_h", "pad_w", "stride_h", "stride_w",
        "dil_h", "dil_w", "groups", "split",
    ];
    let mut v = vec!["dy_ptr", "x_ptr", "dw_ptr", "ws_ptr"];
    v.extend(kernel_shape.iter().filter(|n| !(spec && **n == "groups")));
    v.extend(
        STRIDES
            .iter()
            .filter(|n| !(spec && ["sdyk", "sxc", "swc"].contains(n))),
    );
    v.extend(["global_scratch", "profile_scratch"]);
    v
}

/// The kernel signature of a variant (natural layout, named).
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    let mut off = 0u32;
    param_names(spec)
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

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvWgradV1Inputs {
    /// UIDs of dy, x and dw.
    pub uids: [i64; 3],
    /// `DataType` value.
    pub dtype: i8,
    /// n, c, h, width, k, p, q, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups,
    /// split.
    pub shape: [i64; 17],
    /// sdyn … sws (elements).
    pub strides: [i64; 12],
    /// Kernel configuration.
    pub config: TritonConfig,
}

impl ConvWgradV1Inputs {
    /// Whether the launch satisfies the spec (channels-last) hints; alignment at execute.
    pub fn fits_spec(&self) -> bool {
        let s = self.strides;
        self.shape[GROUPS] == 1
            && SPEC_ONE.iter().all(|i| s[*i] == 1)
            && self.shape[1] % 16 == 0
            && self.shape[4] % 16 == 0
            && [s[0], s[2], s[3], s[4], s[6], s[7], s[8], s[10], s[11]]
                .iter()
                .all(|v| v % 16 == 0)
    }

    /// Tiles per group: cdiv(k/groups, block_m)·r·s·cdiv(c/groups, block_n) (a column tile is
    /// one tap's block of channels).
    pub fn tiles(&self) -> i64 {
        let g = self.shape[GROUPS];
        let rows = self.shape[4] / g;
        let cg = self.shape[1] / g;
        let c = &self.config;
        ((rows + c.block[0] - 1) / c.block[0])
            * self.shape[7]
            * self.shape[8]
            * ((cg + c.block[1] - 1) / c.block[1])
    }

    /// Reduction length N·P·Q.
    pub fn reduction(&self) -> i64 {
        self.shape[0] * self.shape[5] * self.shape[6]
    }

    /// The static rule's split for these inputs (module docs).
    pub fn static_split(&self) -> i64 {
        let t = self.tiles() * self.shape[GROUPS];
        if t >= TARGET_PROGRAMS {
            return 1;
        }
        ((TARGET_PROGRAMS + t - 1) / t)
            .min((self.reduction() / MIN_SPLIT_LEN).max(1))
            .min(MAX_SPLIT)
    }

    /// Bytes of the zeroed counter region (0 when split is 1).
    pub fn counter_bytes(&self) -> u64 {
        if self.shape[SPLIT] == 1 {
            return 0;
        }
        let t = (self.tiles() * self.shape[GROUPS]) as u64;
        t.div_ceil(64) * 64 * 4
    }

    /// Workspace bytes: the counter region plus the f32 partial tiles (0 when split is 1).
    pub fn workspace_bytes(&self) -> u64 {
        if self.shape[SPLIT] == 1 {
            return 0;
        }
        let t = (self.tiles() * self.shape[GROUPS]) as u64;
        let c = &self.config;
        self.counter_bytes() + t * self.shape[SPLIT] as u64 * (c.block[0] * c.block[1]) as u64 * 4
    }

    /// The launch values.
    pub fn to_values(&self) -> LaunchValues {
        let mut v = LaunchValues::new();
        let mut put = |n: &str, x: i64| {
            v.insert(n.to_string(), LaunchValue::Int(x));
        };
        put("dy.uid", self.uids[0]);
        put("x.uid", self.uids[1]);
        put("dw.uid", self.uids[2]);
        put("dtype", i64::from(self.dtype));
        for (n, x) in SHAPE.iter().zip(self.shape) {
            put(n, x);
        }
        for (n, x) in STRIDES.iter().zip(self.strides) {
            put(n, x);
        }
        let c = &self.config;
        for (n, x) in CONFIG.iter().zip([
            i64::from(c.spec),
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

    /// Reads values saved under `dispatch` and checks them.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix): the reader texts; `launch values of dispatch '<d>' name
    /// the spec variant, whose 'groups', 'sdyk', 'sxc' and 'swc' must be 1`; `launch values of
    /// dispatch '<d>': 'groups' must divide 'c' and 'k'`; the geometry texts.
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let names = value_names();
        let r = ContractReader::new(dispatch, CONV_WGRAD_V1, &names, values)?;
        let max = i64::from(i32::MAX);
        let mut shape = [0i64; 17];
        for (i, n) in SHAPE.iter().enumerate() {
            let lo = if n.starts_with("pad") { 0 } else { 1 };
            let hi = if *n == "split" { 65_535 } else { max };
            shape[i] = r.int(n, lo, hi)?;
        }
        let mut strides = [0i64; 12];
        for (i, n) in STRIDES.iter().enumerate() {
            strides[i] = r.int(n, 0, max)?;
        }
        let dtype = r.int("dtype", 1, 3)? as i8;
        let config = TritonConfig {
            family: "conv_wgrad".into(),
            dtype: String::new(),
            spec: r.int("spec", 0, 1)? == 1,
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
        let inputs = ConvWgradV1Inputs {
            uids: [
                r.int("dy.uid", i64::MIN, i64::MAX)?,
                r.int("x.uid", i64::MIN, i64::MAX)?,
                r.int("dw.uid", i64::MIN, i64::MAX)?,
            ],
            dtype,
            shape,
            strides,
            config,
        };
        let d = quote(dispatch);
        if inputs.config.spec && (shape[GROUPS] != 1 || SPEC_ONE.iter().any(|i| strides[*i] != 1)) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'groups', 'sdyk', 'sxc' and 'swc' must be 1"
            )));
        }
        if shape[1] % shape[GROUPS] != 0 || shape[4] % shape[GROUPS] != 0 {
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
    /// threads per block; …`, `launch values of dispatch '<d>' give more than 2147483647 tiles,
    /// reduction terms or workspace floats, or more than 65535 groups`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let d = quote(dispatch);
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        let max = i64::from(i32::MAX);
        let [n, k, p, q, r, s, groups, split] =
            [0, 4, 5, 6, 7, 8, GROUPS, SPLIT].map(|i| self.shape[i]);
        let cols = r
            .checked_mul(s)
            .and_then(|x| x.checked_mul(self.shape[1] / groups));
        let red = n.checked_mul(p).and_then(|x| x.checked_mul(q));
        let fits = cols.is_some_and(|x| x <= max)
            && red.is_some_and(|x| x <= max)
            && k <= max
            && groups <= 65_535;
        let tiles = fits.then(|| self.tiles()).filter(|t| {
            let floats = (t * groups)
                .checked_mul(split)
                .and_then(|x| x.checked_mul(c.block[0] * c.block[1]))
                .and_then(|x| x.checked_add((t * groups + 63) / 64 * 64));
            t * groups <= max && floats.is_some_and(|f| f <= max)
        });
        let tiles = tiles.ok_or_else(|| {
            incompatible(format!(
                "launch values of dispatch '{d}' give more than 2147483647 tiles, reduction terms or workspace floats, or more than 65535 groups"
            ))
        })?;
        Ok(LaunchGeometry {
            grid: [tiles as u32, split as u32, groups as u32],
            block: [threads as u32, 1, 1],
            shared_mem_bytes: c.shared_bytes as u32,
        })
    }

    /// The prepared launch: `pointer_uids` dy, x, dw; `scalar_args` the variant's integers in
    /// kernel order; `workspace_bytes` as [`Self::workspace_bytes`].
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let pointer_uids = self.uids.to_vec();
        let spec = self.config.spec;
        let mut ints: Vec<i64> = self
            .shape
            .iter()
            .enumerate()
            .filter(|(i, _)| !(spec && *i == GROUPS))
            .map(|(_, v)| *v)
            .collect();
        ints.extend(
            self.strides
                .iter()
                .enumerate()
                .filter(|(i, _)| !(spec && SPEC_ONE.contains(i)))
                .map(|(_, v)| *v),
        );
        Ok(PreparedLaunch {
            dispatch: CONV_WGRAD_V1.to_string(),
            launch_values: self.to_values(),
            geometry: self.geometry_for(CONV_WGRAD_V1)?,
            workspace_bytes: self.workspace_bytes(),
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

fn match_graph(graph: &OperationGraph) -> PluginResult<ConvWgradV1Inputs> {
    let g = graph.graph();
    let nodes: Vec<Node<'_>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.len() != 1 {
        return Err(na(format!(
            "the conv_wgrad pack serves graphs of one conv_wgrad node; this graph has {} nodes",
            nodes.len()
        )));
    }
    let a = nodes[0]
        .attributes_as_convolution_wrw_attributes()
        .ok_or_else(|| na("the conv_wgrad pack serves a convolution backward-filter node"))?;
    if a.conv_mode() != ConvMode::CROSS_CORRELATION {
        return Err(na(format!(
            "the conv_wgrad pack serves cross-correlation only, not conv mode {:?}",
            a.conv_mode()
        )));
    }
    let dyt = tensor(graph, a.dy_tensor_uid())?;
    let xt = tensor(graph, a.x_tensor_uid())?;
    let dwt = tensor(graph, a.dw_tensor_uid())?;
    let dtype = dyt.data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype)
        || xt.data_type() != dtype
        || dwt.data_type() != dtype
    {
        return Err(na(format!(
            "the conv_wgrad pack serves f32, f16 and bf16 with dy, x and dw of one type, not {dtype:?}"
        )));
    }
    let (yd, ys) = dims_strides(&dyt);
    let (xd, xs) = dims_strides(&xt);
    let (wd, ws) = dims_strides(&dwt);
    if xd.len() != 4 || wd.len() != 4 || yd.len() != 4 {
        return Err(na(format!(
            "the conv_wgrad pack serves 2-D convolutions; dy {yd:?}, x {xd:?}, dw {wd:?}"
        )));
    }
    if wd[1] < 1 || xd[1] % wd[1] != 0 || wd[0] % (xd[1] / wd[1]).max(1) != 0 {
        return Err(na(format!(
            "the conv_wgrad pack needs C a multiple of dw's per-group channels and K a multiple of the groups; x {xd:?}, dw {wd:?}"
        )));
    }
    let groups = xd[1] / wd[1];
    let pre = pair(a.pre_padding(), 0);
    let post = pair(a.post_padding(), 0);
    let stride = pair(a.stride(), 1);
    let dil = pair(a.dilation(), 1);
    if [&pre, &post, &stride, &dil].iter().any(|v| v.len() != 2) {
        return Err(na(
            "the conv_wgrad pack needs 2 spatial padding/stride/dilation values",
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
                "the conv_wgrad pack: dy dims {yd:?} disagree with x {xd:?}, dw {wd:?}, padding {pre:?}/{post:?}, stride {stride:?}, dilation {dil:?}"
            )));
        }
    }
    for (d, s, what) in [(&yd, &ys, "dy"), (&xd, &xs, "x"), (&wd, &ws, "dw")] {
        if s.iter().any(|v| *v < 0) || span(d, s).is_none_or(|v| v > i64::from(i32::MAX)) {
            return Err(na(format!(
                "the conv_wgrad pack needs non-negative strides and element offsets of {what} within 2147483647; dims {d:?}, strides {s:?}"
            )));
        }
    }
    let shape = [
        xd[0], xd[1], xd[2], xd[3], wd[0], yd[2], yd[3], wd[2], wd[3], pre[0], pre[1], stride[0],
        stride[1], dil[0], dil[1], groups, 1,
    ];
    if shape.iter().any(|v| *v > i64::from(i32::MAX))
        || xd.iter().chain(&yd).chain(&wd).any(|v| *v < 1)
    {
        return Err(na(format!(
            "the conv_wgrad pack needs extents in [1, 2147483647]; dy {yd:?}, x {xd:?}, dw {wd:?}"
        )));
    }
    Ok(ConvWgradV1Inputs {
        uids: [a.dy_tensor_uid(), a.x_tensor_uid(), a.dw_tensor_uid()],
        dtype: dtype.0,
        shape,
        strides: [
            ys[0], ys[1], ys[2], ys[3], xs[0], xs[1], xs[2], xs[3], ws[0], ws[1], ws[2], ws[3],
        ],
        config: TritonConfig::parse("conv_wgrad_f32_generic_64x64x32_g8_w4_s2_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    })
}

/// The v1 handler (saves and restores).
#[derive(Debug, Clone, Copy, Default)]
pub struct ConvWgradV1Handler;

impl ConvWgradV1Handler {
    /// The inputs for `kernel` on `graph`, with the static rule applied (module docs),
    /// `split` included.
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: the graph texts; `kernel <k> is not a packed conv_wgrad entry`;
    /// `kernel <k> is built for <dtype>, the graph is <dtype>`; `kernel <k> is the spec
    /// variant; …`; `kernel <k>: static rule: …` (under-filling tile, or a reduction step
    /// deeper than 64 for C/groups > 64).
    pub fn inputs_for(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<ConvWgradV1Inputs> {
        let mut inputs = match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, "conv_wgrad", inputs.dtype)?;
        if config.spec && !inputs.fits_spec() {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's layout does not satisfy its hints (channels-last dy, x, dw, groups 1, C, K and the other strides multiples of 16)",
                kernel.describe()
            )));
        }
        inputs.config = config;
        let tiles = inputs.tiles() * inputs.shape[GROUPS];
        let c = &inputs.config;
        if c.spec && c.block[0] * c.block[1] > 64 * 64 && tiles < MIN_TILES {
            return Err(na(format!(
                "kernel {}: static rule: {tiles} tiles under-fill the device (fewer than {MIN_TILES}); a smaller tile serves this graph",
                kernel.describe()
            )));
        }
        let cg = inputs.shape[1] / inputs.shape[GROUPS];
        if c.spec && c.block[2] > 64 && cg > 64 {
            return Err(na(format!(
                "kernel {}: static rule: a {}-deep reduction step is for C/groups ≤ 64 (here {cg}); a 64-deep entry serves this graph",
                kernel.describe(),
                c.block[2]
            )));
        }
        inputs.shape[SPLIT] = inputs.static_split();
        Ok(inputs)
    }
}

impl DispatchHandler for ConvWgradV1Handler {
    packed_triton_handler_methods!(CONV_WGRAD_V1, "conv_wgrad", ConvWgradV1Inputs);

    /// dy, x, dw, a null workspace pointer (right for split 1 only; the plan calls
    /// [`Self::kernel_args_with_workspace`]), the integers, two null scratch pointers. A spec
    /// launch refuses (BAD_PARAM) addresses that are not 16-byte aligned.
    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        let mut args = triton_kernel_args(launch, tensors, "conv wgrad", "dy, x and dw", &[])?;
        args.insert(3, KernelArgValue::Pointer(0));
        Ok(args)
    }

    /// As [`Self::kernel_args`] with the workspace address in position 3 (null when the
    /// launch has no workspace, i.e. split 1).
    fn kernel_args_with_workspace(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: u64,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let mut args = self.kernel_args(launch, tensors)?;
        if launch.workspace_bytes > 0 {
            args[3] = KernelArgValue::Pointer(workspace);
        }
        Ok(args)
    }

    /// The counter region (module docs), from the geometry: with `t` = grid x · grid z tiles
    /// and split = grid y, `4·cdiv(t, 64)·64` bytes when split > 1, else 0.
    fn zeroed_workspace_bytes(&self, launch: &PreparedLaunch) -> u64 {
        let [tiles, split, groups] = launch.geometry.grid.map(u64::from);
        if split <= 1 {
            return 0;
        }
        (tiles * groups).div_ceil(64) * 64 * 4
    }
}
