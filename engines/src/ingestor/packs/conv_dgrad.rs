//! Conv dgrad pack, contract `hipkernel.conv_dgrad.dispatch.v1`: 2-D convolution backward
//! data as an implicit GEMM on the Triton kernels of `engines/kernels/triton/conv_dgrad.py`, ONE
//! launch, no epilogue.
//!
//! Graphs served: one `conv_dgrad` node (dy `[N, K, P, Q]`, w `[K, C/groups, R, S]`, dx
//! `[N, C, H, W]`, any strides, cross-correlation, padding, stride, dilation, groups; f16, bf16
//! (f32 accumulate) or f32 (IEEE), one data type).
//!
//! Entries: `conv_dgrad_<dtype>_<variant>_…` as for conv_fprop; `spec` = channels-last (dy's K
//! stride, w's C stride, dx's C stride 1, groups 1, C, K and the other strides multiples of
//! 16, 16-byte aligned pointers), `generic` = anything else. Static rule as conv_fprop with the
//! roles of C and K exchanged (tile columns are dx channels).
//!
//! Launch values (all int): `dy.uid`, `w.uid`, `dx.uid`, `dtype`, `n c h width k p q r s`,
//! `pad_h pad_w`, `stride_h stride_w dil_h dil_w groups`, the 12 element strides `sdyn sdyk sdyp
//! sdyq swk swc swr sws sxn sxc sxh sxw`, and the config values of conv_fprop. Launch: grid
//! (cdiv(n·h·width, block_m)·cdiv(c/groups, block_n), groups, 1), block num_warps·warp_size,
//! dynamic shared memory `shared_bytes`, workspace 0, scratch pointers null. Kernel arguments:
//! dy, w, dx, the integers in the order of `conv_dgrad.py` (spec drops `groups`, `sdyk`,
//! `swc`, `sxc`), the two scratch pointers.

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
pub const CONV_DGRAD_V1: &str = "hipkernel.conv_dgrad.dispatch.v1";

/// Shape value names, in kernel order (after the pointers).
const SHAPE: [&str; 16] = [
    "n", "c", "h", "width", "k", "p", "q", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w",
    "dil_h", "dil_w", "groups",
];
/// Stride value names, in kernel order.
const STRIDES: [&str; 12] = [
    "sdyn", "sdyk", "sdyp", "sdyq", "swk", "swc", "swr", "sws", "sxn", "sxc", "sxh", "sxw",
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

/// Every value name of the contract.
pub fn value_names() -> Vec<&'static str> {
    let mut v = vec!["dy.uid", "w.uid", "dx.uid", "dtype"];
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
        "dil_h", "dil_w", "groups",
    ];
    let mut v = vec!["dy_ptr", "w_ptr", "dx_ptr"];
    v.extend(kernel_shape.iter().filter(|n| !(spec && **n == "groups")));
    v.extend(
        STRIDES
            .iter()
            .filter(|n| !(spec && ["sdyk", "swc", "sxc"].contains(n))),
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
pub struct ConvDgradV1Inputs {
    /// UIDs of dy, w and dx.
    pub uids: [i64; 3],
    /// `DataType` value.
    pub dtype: i8,
    /// n, c, h, width, k, p, q, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups.
    pub shape: [i64; 16],
    /// sdyn … sxw (elements).
    pub strides: [i64; 12],
    /// Kernel configuration.
    pub config: TritonConfig,
}

impl ConvDgradV1Inputs {
    /// Whether the launch satisfies the spec (channels-last) hints; alignment at execute.
    pub fn fits_spec(&self) -> bool {
        let s = self.strides;
        let groups = self.shape[15];
        groups == 1
            && s[1] == 1
            && s[5] == 1
            && s[9] == 1
            && self.shape[1] % 16 == 0
            && self.shape[4] % 16 == 0
            && [s[0], s[2], s[3], s[4], s[6], s[7], s[8], s[10], s[11]]
                .iter()
                .all(|v| v % 16 == 0)
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
        let _ = (k, p, q);
        let cg = self.shape[1] / self.shape[15];
        let c = &self.config;
        let rows = n * self.shape[2] * self.shape[3];
        ((rows + c.block[0] - 1) / c.block[0]) * ((cg + c.block[1] - 1) / c.block[1])
    }

    /// The launch values.
    pub fn to_values(&self) -> LaunchValues {
        let mut v = LaunchValues::new();
        let mut put = |n: &str, x: i64| {
            v.insert(n.to_string(), LaunchValue::Int(x));
        };
        put("dy.uid", self.uids[0]);
        put("w.uid", self.uids[1]);
        put("dx.uid", self.uids[2]);
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
    /// `NOT_APPLICABLE` (load prefix): the reader texts; `launch
    /// values of dispatch '<d>' name the spec variant, whose 'groups', 'sdyk', 'swc' and 'sxc'
    /// must be 1`; `launch values of dispatch '<d>': 'groups' must divide 'c' and 'k'`; the
    /// geometry texts.
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let names = value_names();
        let r = ContractReader::new(dispatch, CONV_DGRAD_V1, &names, values)?;
        let max = i64::from(i32::MAX);
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
            family: "conv_dgrad".into(),
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
        let inputs = ConvDgradV1Inputs {
            uids: [
                r.int("dy.uid", i64::MIN, i64::MAX)?,
                r.int("w.uid", i64::MIN, i64::MAX)?,
                r.int("dx.uid", i64::MIN, i64::MAX)?,
            ],
            dtype,
            shape,
            strides,
            config,
        };
        let d = quote(dispatch);
        if inputs.config.spec
            && (shape[15] != 1 || strides[1] != 1 || strides[5] != 1 || strides[9] != 1)
        {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'groups', 'sdyk', 'swc' and 'sxc' must be 1"
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
        let [n, h, w] = [self.shape[0], self.shape[2], self.shape[3]];
        let tiles = n
            .checked_mul(h)
            .and_then(|x| x.checked_mul(w))
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

    /// The prepared launch: `pointer_uids` dy, w, dx; `scalar_args` the variant's integers in
    /// kernel order.
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
            .filter(|(i, _)| !(spec && *i == 15))
            .map(|(_, v)| *v)
            .collect();
        ints.extend(
            self.strides
                .iter()
                .enumerate()
                .filter(|(i, _)| !(spec && [1, 5, 9].contains(i)))
                .map(|(_, v)| *v),
        );
        Ok(PreparedLaunch {
            dispatch: CONV_DGRAD_V1.to_string(),
            launch_values: self.to_values(),
            geometry: self.geometry_for(CONV_DGRAD_V1)?,
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

fn match_graph(graph: &OperationGraph) -> PluginResult<ConvDgradV1Inputs> {
    let g = graph.graph();
    let nodes: Vec<Node<'_>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.len() != 1 {
        return Err(na(format!(
            "the conv_dgrad pack serves graphs of one conv_dgrad node; this graph has {} nodes",
            nodes.len()
        )));
    }
    let a = nodes[0]
        .attributes_as_convolution_bwd_attributes()
        .ok_or_else(|| na("the conv_dgrad pack serves a convolution backward-data node"))?;
    if a.conv_mode() != ConvMode::CROSS_CORRELATION {
        return Err(na(format!(
            "the conv_dgrad pack serves cross-correlation only, not conv mode {:?}",
            a.conv_mode()
        )));
    }
    let dyt = tensor(graph, a.dy_tensor_uid())?;
    let wt = tensor(graph, a.w_tensor_uid())?;
    let dxt = tensor(graph, a.dx_tensor_uid())?;
    let dtype = dyt.data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype)
        || wt.data_type() != dtype
        || dxt.data_type() != dtype
    {
        return Err(na(format!(
            "the conv_dgrad pack serves f32, f16 and bf16 with dy, w and dx of one type, not {dtype:?}"
        )));
    }
    let (yd, ys) = dims_strides(&dyt);
    let (wd, ws) = dims_strides(&wt);
    let (xd, xs) = dims_strides(&dxt);
    if xd.len() != 4 || wd.len() != 4 || yd.len() != 4 {
        return Err(na(format!(
            "the conv_dgrad pack serves 2-D convolutions; dy {yd:?}, w {wd:?}, dx {xd:?}"
        )));
    }
    if wd[1] < 1 || xd[1] % wd[1] != 0 || wd[0] % (xd[1] / wd[1]).max(1) != 0 {
        return Err(na(format!(
            "the conv_dgrad pack needs C a multiple of w's per-group channels and K a multiple of the groups; dx {xd:?}, w {wd:?}"
        )));
    }
    let groups = xd[1] / wd[1];
    let pre = pair(a.pre_padding(), 0);
    let post = pair(a.post_padding(), 0);
    let stride = pair(a.stride(), 1);
    let dil = pair(a.dilation(), 1);
    if [&pre, &post, &stride, &dil].iter().any(|v| v.len() != 2) {
        return Err(na(
            "the conv_dgrad pack needs 2 spatial padding/stride/dilation values",
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
                "the conv_dgrad pack: dy dims {yd:?} disagree with dx {xd:?}, w {wd:?}, padding {pre:?}/{post:?}, stride {stride:?}, dilation {dil:?}"
            )));
        }
    }
    for (d, s, what) in [(&yd, &ys, "dy"), (&wd, &ws, "w"), (&xd, &xs, "dx")] {
        if s.iter().any(|v| *v < 0) || span(d, s).is_none_or(|v| v > i64::from(i32::MAX)) {
            return Err(na(format!(
                "the conv_dgrad pack needs non-negative strides and element offsets of {what} within 2147483647; dims {d:?}, strides {s:?}"
            )));
        }
    }
    let shape = [
        xd[0], xd[1], xd[2], xd[3], wd[0], yd[2], yd[3], wd[2], wd[3], pre[0], pre[1], stride[0],
        stride[1], dil[0], dil[1], groups,
    ];
    if shape.iter().any(|v| *v > i64::from(i32::MAX)) || xd.iter().any(|v| *v < 1) {
        return Err(na(format!(
            "the conv_dgrad pack needs extents in [1, 2147483647]; dx {xd:?}, w {wd:?}"
        )));
    }
    Ok(ConvDgradV1Inputs {
        uids: [a.dy_tensor_uid(), a.w_tensor_uid(), a.dx_tensor_uid()],
        dtype: dtype.0,
        shape,
        strides: [
            ys[0], ys[1], ys[2], ys[3], ws[0], ws[1], ws[2], ws[3], xs[0], xs[1], xs[2], xs[3],
        ],
        config: TritonConfig::parse("conv_dgrad_f32_generic_64x64x32_g8_w4_s2_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    })
}

/// The v1 handler (saves and restores).
#[derive(Debug, Clone, Copy, Default)]
pub struct ConvDgradV1Handler;

impl ConvDgradV1Handler {
    /// The inputs for `kernel` on `graph`, with the static rule applied (module docs).
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: the graph texts; `kernel <k> is not a packed conv_dgrad entry`;
    /// `kernel <k> is built for <dtype>, the graph is <dtype>`; `kernel <k> is the spec
    /// variant; …`; `kernel <k>: static rule: …`.
    pub fn inputs_for(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<ConvDgradV1Inputs> {
        let mut inputs = match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, "conv_dgrad", inputs.dtype)?;
        if config.spec && !inputs.fits_spec() {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's layout does not satisfy its hints (channels-last dy, w, dx, groups 1, C, K and the other strides multiples of 16)",
                kernel.describe()
            )));
        }
        inputs.config = config;
        let tiles = inputs.tiles() * inputs.shape[15];
        let c = &inputs.config;
        let cg = inputs.shape[1] / inputs.shape[15];
        if c.spec && c.block[1] > 64 && c.block[1] > cg {
            return Err(na(format!(
                "kernel {}: static rule: a {}-channel tile leaves columns idle for C/groups = {cg}; a narrower tile serves this graph",
                kernel.describe(),
                c.block[1]
            )));
        }
        if c.spec && c.block[0] * c.block[1] > 64 * 64 && tiles < MIN_TILES {
            return Err(na(format!(
                "kernel {}: static rule: {tiles} tiles under-fill the device (fewer than {MIN_TILES}); a smaller tile serves this graph",
                kernel.describe()
            )));
        }
        Ok(inputs)
    }
}

impl DispatchHandler for ConvDgradV1Handler {
    packed_triton_handler_methods!(CONV_DGRAD_V1, "conv_dgrad", ConvDgradV1Inputs);

    /// dy, w, dx, the integers, two null scratch pointers. A spec launch refuses (BAD_PARAM)
    /// addresses that are not 16-byte aligned.
    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        triton_kernel_args(launch, tensors, "conv dgrad", "dy, w and dx", &[])
    }
}
