//! The convolution problem the conv backward families share: one `conv_dgrad` or `conv_wgrad`
//! node matched once into the implicit-GEMM shape (`n c h width k p q r s pad_h pad_w stride_h
//! stride_w dil_h dil_w groups`, x = the data tensor `[N, C, H, W]`, w = the filter
//! `[K, C/groups, R, S]`, y = dy `[N, K, P, Q]`), the channels-last (spec) hints, the contract
//! rules both check on restore, and the kernel's integer order.

use super::family::{I32_MAX, IntValue, TritonFamily, concat, int, uid};
use super::graph::{dims_strides, na, tensor};
use super::launch::{block_geometry, check_tiles, spec_hints};
use super::triton::{TritonConfig, triton_kernel_args};
use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::PreparedLaunch;
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::TensorBinding;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops::conv::{Window, output_extent};
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::{ConvMode, DataType};

/// Which convolution a family computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Backward data: dy, w → dx (`conv_dgrad`).
    BackwardData,
    /// Backward filter: dy, x → dw (`conv_wgrad`).
    BackwardFilter,
}

impl Direction {
    /// The family name (`conv_dgrad`, `conv_wgrad`).
    pub const fn family(self) -> &'static str {
        match self {
            Direction::BackwardData => "conv_dgrad",
            Direction::BackwardFilter => "conv_wgrad",
        }
    }

    /// The names of y, x and w in this direction's messages.
    fn names(self) -> [&'static str; 3] {
        match self {
            Direction::BackwardData => ["dy", "dx", "w"],
            Direction::BackwardFilter => ["dy", "x", "dw"],
        }
    }

    /// The tensors in the family's pointer order, as indices into (y, x, w): dgrad dy, w, dx;
    /// wgrad dy, x, dw.
    fn order(self) -> [usize; 3] {
        match self {
            Direction::BackwardData => [0, 2, 1],
            Direction::BackwardFilter => [0, 1, 2],
        }
    }

    /// The UID launch values, in pointer order.
    const fn pointers(self) -> &'static [&'static str] {
        match self {
            Direction::BackwardData => &["dy.uid", "w.uid", "dx.uid"],
            Direction::BackwardFilter => &["dy.uid", "x.uid", "dw.uid"],
        }
    }

    /// The stride value names, in kernel order (the tensors in pointer order, 4 each).
    const fn strides(self) -> [&'static str; 12] {
        let [y, x, w] = [
            ["sdyn", "sdyk", "sdyp", "sdyq"],
            ["sxn", "sxc", "sxh", "sxw"],
            ["swk", "swc", "swr", "sws"],
        ];
        let [a, b, c] = match self {
            Direction::BackwardData => [y, w, x],
            Direction::BackwardFilter => [y, x, w],
        };
        [
            a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], c[0], c[1], c[2], c[3],
        ]
    }

    /// The shape values after [`SHAPE`]: wgrad's `split`.
    const fn extra(self) -> &'static [IntValue] {
        match self {
            Direction::BackwardData => &[],
            Direction::BackwardFilter => &SPLIT,
        }
    }

    /// The kernel's pointer parameters (wgrad's workspace after the three tensors).
    fn params(self) -> &'static [&'static str] {
        match self {
            Direction::BackwardData => &["dy_ptr", "w_ptr", "dx_ptr"],
            Direction::BackwardFilter => &["dy_ptr", "x_ptr", "dw_ptr", "ws_ptr"],
        }
    }

    /// How the alignment refusals name the kernel and its three tensors.
    const fn aligned(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Direction::BackwardData => {
                ("conv dgrad", "dy, w and dx", "16-byte aligned dy, w and dx")
            }
            Direction::BackwardFilter => {
                ("conv wgrad", "dy, x and dw", "16-byte aligned dy, x and dw")
            }
        }
    }
}

/// The launch values of `dir`'s contract, in restore order: [`SHAPE`] (and wgrad's `split`),
/// the 12 strides in [0, 2147483647], `dtype` (`DataType` FLOAT 1, HALF 2, BFLOAT16 3),
/// [`CONFIG`], the three UIDs in pointer order (`N` must be their count: 40 dgrad, 41 wgrad).
pub const fn values<const N: usize>(dir: Direction) -> [IntValue; N] {
    let names = dir.strides();
    let mut strides = [int("", 0, 0); 12];
    let mut i = 0;
    while i < 12 {
        strides[i] = int(names[i], 0, I32_MAX);
        i += 1;
    }
    let p = dir.pointers();
    let uids = [uid(p[0]), uid(p[1]), uid(p[2])];
    concat(&[
        &SHAPE,
        dir.extra(),
        &strides,
        &[int("dtype", 1, 3)],
        &CONFIG,
        &uids,
    ])
}

/// The shape launch values of both backward contracts, in kernel and restore order.
#[rustfmt::skip]
pub const SHAPE: [IntValue; 16] = [
    int("n", 1, I32_MAX), int("c", 1, I32_MAX), int("h", 1, I32_MAX), int("width", 1, I32_MAX),
    int("k", 1, I32_MAX), int("p", 1, I32_MAX), int("q", 1, I32_MAX), int("r", 1, I32_MAX),
    int("s", 1, I32_MAX), int("pad_h", 0, I32_MAX), int("pad_w", 0, I32_MAX),
    int("stride_h", 1, I32_MAX), int("stride_w", 1, I32_MAX), int("dil_h", 1, I32_MAX),
    int("dil_w", 1, I32_MAX), int("groups", 1, I32_MAX),
];
/// wgrad's shape value after [`SHAPE`].
const SPLIT: [IntValue; 1] = [int("split", 1, 65_535)];
/// Index of `groups` in [`SHAPE`].
pub const GROUPS: usize = 15;
/// The config launch values, in restore order.
#[rustfmt::skip]
pub const CONFIG: [IntValue; 8] = [
    int("spec", 0, 1), int("block_m", 16, 256), int("block_n", 16, 256), int("block_k", 16, 256),
    int("group_m", 1, 64), int("num_warps", 1, 16), int("shared_bytes", 0, 262_144),
    int("warp_size", 32, 64),
];
/// The kernel's names of the shape values.
const KERNEL_SHAPE: [&str; 16] = [
    "N", "C", "H", "W", "K", "P", "Q", "R", "S", "pad_h", "pad_w", "stride_h", "stride_w", "dil_h",
    "dil_w", "groups",
];
/// Stride indices the spec variant holds constant 1 (the channel stride of each tensor).
pub const SPEC_ONE: [usize; 3] = [1, 5, 9];

/// The launch inputs of a backward conv contract: one node matched into the shared problem,
/// with `S` shape values ([`SHAPE`], then wgrad's `split`: dgrad's inputs are
/// `ConvInputs<16>`, wgrad's `ConvInputs<17>`) and the kernel config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvInputs<const S: usize> {
    /// UIDs in the family's pointer order (dgrad dy, w, dx; wgrad dy, x, dw).
    pub uids: [i64; 3],
    /// `DataType` value.
    pub dtype: i8,
    /// The [`SHAPE`] values, then the family's own (wgrad's `split`).
    pub shape: [i64; S],
    /// Element strides of the three tensors in the family's pointer order, 4 each.
    pub strides: [i64; 12],
    /// Kernel configuration.
    pub config: TritonConfig,
}

/// The two spatial values of a padding, stride or dilation attribute (`default` twice when the
/// node has none).
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

/// Matches `graph` (one node of `dir`'s kind, cross-correlation, 2-D, f32/f16/bf16 of one type,
/// groups dividing C and K, dy's dims those of the window, non-negative strides, element
/// offsets and extents within 2147483647), with the shape values after [`SHAPE`] 1 and a
/// placeholder config.
///
/// # Errors
/// `NOT_APPLICABLE` `the <family> pack …` naming the first rule the graph breaks.
pub fn match_conv<const S: usize>(
    graph: &OperationGraph,
    dir: Direction,
) -> PluginResult<ConvInputs<S>> {
    let f = dir.family();
    let [yn, xn, wn] = dir.names();
    let nodes = graph.graph().nodes().map(|n| n.len()).unwrap_or(0);
    let node = graph
        .graph()
        .nodes()
        .filter(|_| nodes == 1)
        .map(|n| n.get(0));
    let Some(node) = node else {
        return Err(na(format!(
            "the {f} pack serves graphs of one {f} node; this graph has {nodes} nodes"
        )));
    };
    let attrs = match dir {
        Direction::BackwardData => node.attributes_as_convolution_bwd_attributes().map(|a| {
            let u = [a.dy_tensor_uid(), a.dx_tensor_uid(), a.w_tensor_uid()];
            (
                u,
                a.conv_mode(),
                [a.pre_padding(), a.post_padding(), a.stride(), a.dilation()],
            )
        }),
        Direction::BackwardFilter => node.attributes_as_convolution_wrw_attributes().map(|a| {
            let u = [a.dy_tensor_uid(), a.x_tensor_uid(), a.dw_tensor_uid()];
            (
                u,
                a.conv_mode(),
                [a.pre_padding(), a.post_padding(), a.stride(), a.dilation()],
            )
        }),
    };
    let kind = match dir {
        Direction::BackwardData => "backward-data",
        Direction::BackwardFilter => "backward-filter",
    };
    let (uids, mode, [pre, post, stride, dil]) =
        attrs.ok_or_else(|| na(format!("the {f} pack serves a convolution {kind} node")))?;
    if mode != ConvMode::CROSS_CORRELATION {
        return Err(na(format!(
            "the {f} pack serves cross-correlation only, not conv mode {mode:?}"
        )));
    }
    let [o0, o1, o2] = dir.order();
    let mut found = [None; 3];
    for i in dir.order() {
        found[i] = Some(tensor(graph, uids[i])?);
    }
    let t = found.map(|t| t.unwrap_or_else(|| unreachable!("every tensor was looked up")));
    let dtype = t[0].data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype)
        || t[o1].data_type() != dtype
        || t[o2].data_type() != dtype
    {
        let n = dir.order().map(|i| dir.names()[i]);
        return Err(na(format!(
            "the {f} pack serves f32, f16 and bf16 with {}, {} and {} of one type, not {dtype:?}",
            n[0], n[1], n[2]
        )));
    }
    let [(yd, ys), (xd, xs), (wd, ws)] = t.each_ref().map(dims_strides);
    let named = |i: usize| [(&yd, yn), (&xd, xn), (&wd, wn)][i];
    if xd.len() != 4 || wd.len() != 4 || yd.len() != 4 {
        let [a, b, c] = [named(o0), named(o1), named(o2)];
        return Err(na(format!(
            "the {f} pack serves 2-D convolutions; {} {:?}, {} {:?}, {} {:?}",
            a.1, a.0, b.1, b.0, c.1, c.0
        )));
    }
    if wd[1] < 1 || xd[1] % wd[1] != 0 || wd[0] % (xd[1] / wd[1]).max(1) != 0 {
        return Err(na(format!(
            "the {f} pack needs C a multiple of {wn}'s per-group channels and K a multiple of the groups; {xn} {xd:?}, {wn} {wd:?}"
        )));
    }
    let groups = xd[1] / wd[1];
    let Some([pre, post, stride, dil]) = spatial([pre, post, stride, dil]) else {
        return Err(na(format!(
            "the {f} pack needs 2 spatial padding/stride/dilation values"
        )));
    };
    if !dims_agree(&xd, &wd, &yd, [&pre, &post, &stride, &dil]) {
        return Err(na(format!(
            "the {f} pack: dy dims {yd:?} disagree with {xn} {xd:?}, {wn} {wd:?}, padding {pre:?}/{post:?}, stride {stride:?}, dilation {dil:?}"
        )));
    }
    let all = [(&yd, &ys, yn), (&xd, &xs, xn), (&wd, &ws, wn)];
    check_offsets(f, dir.order().map(|i| all[i]))?;
    let shape = [
        xd[0], xd[1], xd[2], xd[3], wd[0], yd[2], yd[3], wd[2], wd[3], pre[0], pre[1], stride[0],
        stride[1], dil[0], dil[1], groups,
    ];
    let too_big = shape.iter().any(|v| *v > I32_MAX);
    match dir {
        Direction::BackwardData if too_big || xd.iter().any(|v| *v < 1) => Err(na(format!(
            "the {f} pack needs extents in [1, 2147483647]; dx {xd:?}, w {wd:?}"
        ))),
        Direction::BackwardFilter if too_big || xd.iter().chain(&yd).chain(&wd).any(|v| *v < 1) => {
            Err(na(format!(
                "the {f} pack needs extents in [1, 2147483647]; dy {yd:?}, x {xd:?}, dw {wd:?}"
            )))
        }
        _ => {
            let s = dir.order().map(|i| [&ys, &xs, &ws][i]);
            Ok(ConvInputs {
                uids: dir.order().map(|i| uids[i]),
                dtype: dtype.0,
                shape: std::array::from_fn(|i| shape.get(i).copied().unwrap_or(1)),
                strides: std::array::from_fn(|j| s[j / 4][j % 4]),
                config: TritonConfig::restored(f, 0, [64, 64, 32], 8, 4, 0, 32),
            })
        }
    }
}

/// Whether the shape and strides satisfy the spec (channels-last) hints: groups 1, the
/// [`SPEC_ONE`] strides 1, C, K and every other stride multiples of 16 (alignment is checked
/// at execute).
pub fn fits_spec(shape: &[i64], strides: &[i64; 12]) -> bool {
    shape[GROUPS] == 1
        && SPEC_ONE.iter().all(|i| strides[*i] == 1)
        && shape[1] % 16 == 0
        && shape[4] % 16 == 0
        && (0..12)
            .filter(|i| !SPEC_ONE.contains(i))
            .all(|i| strides[i] % 16 == 0)
}

/// The rules both backward contracts check on restore: the spec variant's unit values, and
/// groups dividing C and K.
///
/// # Errors
/// `NOT_APPLICABLE` `launch values of dispatch '<d>' name the spec variant, whose 'groups',
/// '<s1>', '<s5>' and '<s9>' must be 1`; `launch values of dispatch '<d>': 'groups' must
/// divide 'c' and 'k'`.
pub fn check_restored(
    dispatch: &str,
    spec: bool,
    shape: &[i64],
    strides: &[i64; 12],
    stride_names: &[&str; 12],
) -> PluginResult<()> {
    let d = quote(dispatch);
    if spec && (shape[GROUPS] != 1 || SPEC_ONE.iter().any(|i| strides[*i] != 1)) {
        let [a, b, c] = SPEC_ONE.map(|i| stride_names[i]);
        return Err(incompatible(format!(
            "launch values of dispatch '{d}' name the spec variant, whose 'groups', '{a}', '{b}' and '{c}' must be 1"
        )));
    }
    if shape[1] % shape[GROUPS] != 0 || shape[4] % shape[GROUPS] != 0 {
        return Err(incompatible(format!(
            "launch values of dispatch '{d}': 'groups' must divide 'c' and 'k'"
        )));
    }
    Ok(())
}

/// The kernel's integers: the shape values (spec drops `groups`), then the strides (spec drops
/// the [`SPEC_ONE`] ones).
pub fn scalars(spec: bool, shape: &[i64], strides: &[i64; 12]) -> Vec<i64> {
    let keep = |i: &usize, skip: &[usize]| !(spec && skip.contains(i));
    let mut v: Vec<i64> = (0..shape.len())
        .filter(|i| keep(i, &[GROUPS]))
        .map(|i| shape[i])
        .collect();
    v.extend((0..12).filter(|i| keep(i, &SPEC_ONE)).map(|i| strides[i]));
    v
}

/// The kernel parameter names: `pointers`, the shape names (spec drops `groups`) and `extra`
/// shape names, the stride names (spec drops the [`SPEC_ONE`] ones), the two scratch pointers.
pub fn param_names(
    spec: bool,
    pointers: &[&'static str],
    extra: &[&'static str],
    stride_names: &[&'static str; 12],
) -> Vec<&'static str> {
    let mut v = pointers.to_vec();
    v.extend(KERNEL_SHAPE.iter().filter(|n| !(spec && **n == "groups")));
    v.extend(extra);
    v.extend(
        (0..12)
            .filter(|i| !(spec && SPEC_ONE.contains(i)))
            .map(|i| stride_names[i]),
    );
    v.extend(["global_scratch", "profile_scratch"]);
    v
}

/// The [`CONFIG`] values of `c`, in that order.
pub fn config_ints(c: &TritonConfig) -> [i64; 8] {
    [
        c.variant_code(),
        c.block[0],
        c.block[1],
        c.block[2],
        c.group_m,
        c.num_warps,
        c.shared_bytes,
        c.warp_size,
    ]
}

/// The config of [`CONFIG`] values `v` (in that order).
pub fn config_of(family: &str, v: &[i64]) -> TritonConfig {
    TritonConfig::restored(family, v[0], [v[1], v[2], v[3]], v[4], v[5], v[6], v[7])
}

/// The static rule both backward families share: a spec tile larger than 64×64 is refused when
/// the graph gives fewer than [`super::triton::MIN_TILES`] tiles.
///
/// # Errors
/// `NOT_APPLICABLE` `kernel <k>: static rule: <t> tiles under-fill the device (fewer than
/// 128); a smaller tile serves this graph`.
pub fn min_tiles_rule(kernel: &KernelDescriptor, c: &TritonConfig, tiles: i64) -> PluginResult<()> {
    check_tiles(kernel, c.spec && c.block[0] * c.block[1] > 64 * 64, tiles)
}

/// Whether output dims `yd` `[N, K, P, Q]` are those of input `xd` `[N, C, H, W]` and filter
/// `wd` `[K, C/groups, R, S]` under `[pre, post, stride, dil]` (two spatial values each;
/// dilation and stride at least 1, padding non-negative).
pub fn dims_agree(
    xd: &[i64],
    wd: &[i64],
    yd: &[i64],
    [pre, post, stride, dil]: [&[i64]; 4],
) -> bool {
    let window = |i: usize| Window {
        pre: pre[i],
        post: post[i],
        stride: stride[i],
        dilation: dil[i],
    };
    let extent = |i: usize| {
        (dil[i] >= 1 && stride[i] >= 1 && pre[i] >= 0)
            .then(|| output_extent(xd[2 + i], wd[2 + i], window(i)).ok())
            .flatten()
    };
    (0..2).all(|i| extent(i) == Some(yd[2 + i])) && yd[0] == xd[0] && yd[1] == wd[0]
}

/// Whether a tensor of dims `d` and strides `s` has non-negative strides and element offsets
/// within 2147483647.
pub fn offsets_fit(d: &[i64], s: &[i64]) -> bool {
    !s.iter().any(|v| *v < 0) && span(d, s).is_some_and(|v| v <= I32_MAX)
}

/// The pre-padding, post-padding, stride and dilation attributes of a 2-D convolution node as
/// pairs (`pair`; padding defaults to 0, stride and dilation to 1); `None` unless each has
/// 2 spatial values.
pub fn spatial(
    [pre, post, stride, dil]: [Option<hipdnn_schema::flatbuffers::Vector<'_, i64>>; 4],
) -> Option<[Vec<i64>; 4]> {
    let v = [pair(pre, 0), pair(post, 0), pair(stride, 1), pair(dil, 1)];
    v.iter().all(|v| v.len() == 2).then_some(v)
}

/// What a backward conv family adds to the shared problem: its direction and contract, the
/// static rule beyond the spec hints, the grid, and the workspace (default none); the
/// [`TritonFamily`] of [`ConvInputs`] is the rest.
pub trait ConvFamily {
    /// The direction the family computes.
    const DIRECTION: Direction;
    /// The versioned contract name.
    const CONTRACT: &'static str;
    /// The contract's launch values ([`values`] of [`Self::DIRECTION`]).
    const VALUES: &'static [IntValue];

    /// The static rule on the selected config (after the spec hints), as
    /// [`TritonFamily::select`].
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `kernel <k>: static rule: …`.
    fn rule(&mut self, kernel: &KernelDescriptor) -> PluginResult<()>;
    /// The launch grid (after the threads per block are checked).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) naming the values and `dispatch`.
    fn grid(&self, dispatch: &str) -> PluginResult<[u32; 3]>;
    /// Workspace bytes the launch needs (default none).
    fn workspace(&self) -> u64 {
        0
    }
    /// Leading workspace bytes that must read as zero (default none).
    fn zeroed(launch: &PreparedLaunch) -> u64 {
        let _ = launch;
        0
    }
}

impl<const S: usize> ConvInputs<S> {
    /// Whether the launch satisfies the spec (channels-last) hints: groups 1, the
    /// [`SPEC_ONE`] strides 1, C, K and every other stride multiples of 16 (alignment is
    /// checked at execute).
    pub fn fits_spec(&self) -> bool {
        fits_spec(&self.shape, &self.strides)
    }
}

impl<const S: usize> TritonFamily for ConvInputs<S>
where
    ConvInputs<S>: ConvFamily + Clone + Send + Sync + 'static,
{
    const FAMILY: &'static str = <Self as ConvFamily>::DIRECTION.family();
    const CONTRACT: &'static str = <Self as ConvFamily>::CONTRACT;
    const VALUES: &'static [IntValue] = <Self as ConvFamily>::VALUES;
    const POINTERS: &'static [&'static str] = <Self as ConvFamily>::DIRECTION.pointers();
    const ALIGNED: &'static [&'static str] = <Self as ConvFamily>::DIRECTION.pointers();
    const ALIGNED_TEXT: &'static str = <Self as ConvFamily>::DIRECTION.aligned().2;

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        match_conv(graph, <Self as ConvFamily>::DIRECTION)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    /// The spec hints (channels-last tensors, groups 1, C, K and the other strides multiples
    /// of 16), then the family's static rule ([`ConvFamily::rule`]).
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        let dir = <Self as ConvFamily>::DIRECTION;
        let [a, b, c] = dir.order().map(|i| dir.names()[i]);
        let hints = format!(
            "channels-last {a}, {b}, {c}, groups 1, C, K and the other strides multiples of 16"
        );
        spec_hints(kernel, &config, self.fits_spec(), &hints)?;
        self.config = config;
        <Self as ConvFamily>::rule(self, kernel)
    }

    fn ints(&self) -> Vec<i64> {
        let kinds = [i64::from(self.dtype)];
        let config = config_ints(&self.config);
        [&self.shape[..], &self.strides, &kinds, &config, &self.uids].concat()
    }

    fn from_ints(v: &[i64]) -> Self {
        ConvInputs {
            shape: std::array::from_fn(|i| v[i]),
            strides: std::array::from_fn(|i| v[S + i]),
            dtype: v[S + 12] as i8,
            config: config_of(Self::FAMILY, &v[S + 13..S + 21]),
            uids: [v[S + 21], v[S + 22], v[S + 23]],
        }
    }

    fn check(&self, dispatch: &str) -> PluginResult<()> {
        let names = <Self as ConvFamily>::DIRECTION.strides();
        check_restored(
            dispatch,
            self.config.spec,
            &self.shape,
            &self.strides,
            &names,
        )?;
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        let dir = <Self as ConvFamily>::DIRECTION;
        let extra: Vec<&'static str> = dir.extra().iter().map(|v| v.name).collect();
        param_names(spec, dir.params(), &extra, &dir.strides())
    }

    fn scalars(&self) -> Vec<i64> {
        scalars(self.config.spec, &self.shape, &self.strides)
    }

    fn workspace_bytes(&self) -> u64 {
        self.workspace()
    }

    /// Grid ([`ConvFamily::grid`]), block num_warps·warp_size, dynamic shared memory.
    /// Errors: `NOT_APPLICABLE` [`TritonConfig::threads_per_block`]'s text, then the grid's.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let threads = self.config.threads_per_block(dispatch)?;
        let grid = self.grid(dispatch)?;
        Ok(block_geometry(&self.config, grid, threads))
    }

    /// The three tensors (wgrad then its workspace, null when the launch has none), the
    /// integers, two null scratch pointers; a spec launch refuses (BAD_PARAM) addresses that
    /// are not 16-byte aligned.
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let dir = <Self as ConvFamily>::DIRECTION;
        let (kernel, operands, _) = dir.aligned();
        let mut args = triton_kernel_args(launch, tensors, kernel, operands, &[])?;
        if dir == Direction::BackwardFilter {
            let ws = if launch.workspace_bytes > 0 {
                workspace.unwrap_or(0)
            } else {
                0
            };
            args.insert(3, KernelArgValue::Pointer(ws));
        }
        Ok(args)
    }

    fn zeroed_workspace_bytes(launch: &PreparedLaunch) -> u64 {
        <Self as ConvFamily>::zeroed(launch)
    }
}

/// Refuses the first of `tensors` (dims, strides, name in the message) whose strides or
/// element offsets do not fit ([`offsets_fit`]), for the `family` pack.
///
/// # Errors
/// `NOT_APPLICABLE` `the <family> pack needs non-negative strides and element offsets of
/// <name> within 2147483647; dims <d>, strides <s>`.
pub fn check_offsets<'a>(
    family: &str,
    tensors: impl IntoIterator<Item = (&'a Vec<i64>, &'a Vec<i64>, &'a str)>,
) -> PluginResult<()> {
    for (d, s, what) in tensors {
        if !offsets_fit(d, s) {
            return Err(na(format!(
                "the {family} pack needs non-negative strides and element offsets of {what} within 2147483647; dims {d:?}, strides {s:?}"
            )));
        }
    }
    Ok(())
}

/// The grid (tiles, groups, 1) of an implicit-GEMM conv launch whose GEMM rows are the
/// `rows` pixels `[n, a, b]`: `tiles()` (tiles per group) when n·a·b and the tiles are at
/// most 2147483647 and `groups` at most 65535.
///
/// # Errors
/// `NOT_APPLICABLE` `launch values of dispatch '<d>' give more than 2147483647 tiles or 65535
/// groups`.
pub fn group_grid(
    dispatch: &str,
    [n, a, b]: [i64; 3],
    groups: i64,
    tiles: impl FnOnce() -> i64,
) -> PluginResult<[u32; 3]> {
    let tiles = n
        .checked_mul(a)
        .and_then(|x| x.checked_mul(b))
        .filter(|x| *x <= I32_MAX)
        .map(|_| tiles())
        .filter(|t| *t <= I32_MAX && groups <= 65_535)
        .ok_or_else(|| {
            incompatible(format!(
                "launch values of dispatch '{}' give more than 2147483647 tiles or 65535 groups",
                quote(dispatch)
            ))
        })?;
    Ok([tiles as u32, groups as u32, 1])
}
