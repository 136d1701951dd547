//! Batchnorm backward pack, contract `hipkernel.bn_bwd.dispatch.v1`: dx, dscale and dbias of a
//! `batchnorm_backward` node, with an optional fused ReLU backward in front, on the Triton
//! kernels of `engines/kernels/triton/bn_bwd.py`: TWO launches of one code object (per-split
//! partial sums of dy and dy·x̂ into the workspace, then a fixed-order merge into dscale and
//! dbias and dx). Nothing else: the node semantics are the CPU reference engine's, which serves
//! every graph this pack refuses.
//!
//! Graphs served: one `batchnorm_backward` node (dy, x, scale, the saved mean and
//! inv_variance, dx, dscale, dbias; no peer statistics), or `RELU_BWD(dy_in, r) → dy` (one
//! pointwise node with the default clips: lower clip 0, no upper clip, slope 0) feeding the
//! node's dy as a virtual intermediate. Semantics (`reference/nodes/norm.rs`
//! `parse_batchnorm_backward`, `reference/ops/norm.rs` `norm_backward`): per channel over the
//! M = N·spatial values, `x̂ = (x − mean)·inv`, `dbias = Σdy`, `dscale = Σdy·x̂`, `dx =
//! scale·inv·(dy − dbias/M − x̂·dscale/M)`; the fused ReLU backward makes `dy = dy_in·d`, `d` 0
//! where `r ≤ 0` (or `r ≥ f32::MAX`), else 1 (`reference/ops/pointwise.rs` `binary`). The
//! kernel sums in f32 (the reference in f64): the GPU test holds it to the reference engine's
//! backward tolerances.
//!
//! Refused by name (`NOT_APPLICABLE`; the CPU reference engine serves them): peer statistics;
//! a node without the saved mean or inv_variance; a scale (or dscale, dbias) that is not one
//! value per channel (a scale of one value for every channel sums dscale over everything); a
//! RELU_BWD with other clips or slope, over a stored (not virtual) intermediate, whose
//! intermediate rounds (16-bit while dy_in is f32); any other second node. Layout (from
//! `Channels`, as batchnorm_fwd's): x at least 2-D `(N, C, spatial…)`, dy, dx, dy_in and r
//! of x's dims, each with its spatial axes collapsing to one stride; the batch merged into the
//! positions when all allow it. x is f32, f16 or bf16; every other tensor of x's type or f32.
//!
//! Entries: `bn_bwd_<dtype>_<spec|nchw|generic>_<bm>x<bn>x1_g1_w4_s1_sh<shared>_ws<warp>`
//! with batchnorm_fwd's tiles. `spec` (kernel `hipdnn_bn_bwd_cl`, channels-last): unit channel
//! strides of dy, x, dx (and r), C and their batch and spatial strides multiples of 16;
//! `nchw` (kernel `hipdnn_bn_bwd_cf`, channels-first): unit spatial strides, the spatial size
//! and the batch and channel strides multiples of 16; both need 16-byte aligned dy, x and dx
//! (`BAD_PARAM` at execute); `generic` (kernel `hipdnn_bn_bwd`): any strides, the
//! channels-first path (flags bit 2) when every such tensor has unit spatial strides and more
//! than one position. **Static rule**: batchnorm_fwd's ([`rule_block_m`]: 16×128 channels-last, the
//! channels-first tile by the spatial size); `splits` = [`rule_splits`] with the merge bound
//! (every phase-1 program sums all the partials).
//!
//! Launch values (int): `flags` in [0, 1023] (the kernel's: 1 fused ReLU backward, 2
//! channels-first path of the generic entry, then the f32 bits 4 scale, 8 mean, 16 inv, 32 dy,
//! 64 dx, 128 dscale, 256 dbias, 512 r); `r.uid` exactly when bit 1 is set; the 17 element
//! strides `sdyn sdyc sdys sxn sxc sxs srn src srs sdxn sdxc sdxs ssc smc sic sdsc sdbc` (r's
//! 0 without bit 1) in [0, 2147483647]; `n c s` in [1, 2^30] with `n·s` ≤ 2^30; `spec` (0
//! generic, 1 spec, 2 nchw), `block_m`, `block_n` in [1, 4096], `num_warps`, `shared_bytes`,
//! `warp_size`; `dy.uid x.uid scale.uid mean.uid inv.uid dx.uid dscale.uid dbias.uid` (dy.uid
//! is dy_in's with bit 1), `dtype` (1 f32, 2 f16, 3 bf16); `splits` in [1, min(65535,
//! pairs)]. Launches, on the launch stream in order, both on grid (cdiv(c, tc), splits, 1)
//! (`tc` = `block_n` on the channels-first path, else `block_m`): phase 0 (the prologue) and
//! phase 1 (the main launch); block num_warps·warp_size, dynamic shared memory
//! `shared_bytes`. Workspace: `2·splits·c` f32 ([`BnBwdInputs::workspace_bytes`]), every byte
//! written by phase 0 before phase 1 reads it (nothing zeroed). Kernel arguments: dy, x, r
//! (null without bit 1), scale, mean, inv, dx, dscale, dbias, the workspace, `N C S`, the
//! variant's strides (`spec` drops the channel strides of dy, x, r, dx; `nchw` their spatial
//! strides), `flags splits phase` (`by_value` 4), the two scratch pointers.

use crate::ingestor::framework::channels::{MAX_EXTENT, rule_block_m, rule_splits};
use crate::ingestor::framework::prelude::*;
use hipdnn_schema::graph::PointwiseMode;

/// The versioned contract name.
pub const BN_BWD_V1: &str = "hipkernel.bn_bwd.dispatch.v1";
crate::triton_handler!(BnBwdHandler = BnBwdInputs);

/// `flags` bit: the fused ReLU backward (r read).
pub const FLAG_RELU: i64 = 1;
/// `flags` bit: the generic entry's channels-first path.
pub const FLAG_CHANNELS_FIRST: i64 = 2;
/// `flags` bit: the scale is f32 (else x's type).
pub const FLAG_SCALE_F32: i64 = 4;
/// `flags` bit: the saved mean is f32.
pub const FLAG_MEAN_F32: i64 = 8;
/// `flags` bit: the saved inv_variance is f32.
pub const FLAG_INV_F32: i64 = 16;
/// `flags` bit: dy (dy_in with the ReLU) is f32.
pub const FLAG_DY_F32: i64 = 32;
/// `flags` bit: dx is f32.
pub const FLAG_DX_F32: i64 = 64;
/// `flags` bit: dscale is f32.
pub const FLAG_DSCALE_F32: i64 = 128;
/// `flags` bit: dbias is f32.
pub const FLAG_DBIAS_F32: i64 = 256;
/// `flags` bit: r (the ReLU operand) is f32.
pub const FLAG_R_F32: i64 = 512;

/// Stride value names, in kernel order.
const STRIDES: [&str; 17] = [
    "sdyn", "sdyc", "sdys", "sxn", "sxc", "sxs", "srn", "src", "srs", "sdxn", "sdxc", "sdxs",
    "ssc", "smc", "sic", "sdsc", "sdbc",
];
/// The tensors' UID values and the kernel's pointer parameters, in kernel order (the
/// workspace pointer follows them).
const TENSORS: ([&str; 9], [&str; 9]) =
    crate::tensor_pointers!(dy, x, r, scale, mean, inv, dx, dscale, dbias);
/// Indices into [`STRIDES`] of the (batch, channel, spatial) strides of dy, x, r, dx.
const NCS: [usize; 4] = [0, 3, 6, 9];

fn cdiv(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// Whether stride `i` is a kernel argument of `variant` (0 generic, 1 spec: drops the channel
/// strides of dy, x, r, dx; 2 nchw: drops their spatial strides).
fn takes_stride(variant: i64, i: usize) -> bool {
    let inner = match variant {
        1 => 1,
        2 => 2,
        _ => return true,
    };
    !NCS.iter().any(|&b| i == b + inner)
}

/// The kernel parameter names of `variant` (the `spec` value), in order (with the two scratch
/// pointers).
pub fn param_names(variant: i64) -> Vec<&'static str> {
    let mut v = TENSORS.1.to_vec();
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
        "global_scratch",
        "profile_scratch",
    ]);
    v
}

/// The kernel signature of `variant` (natural layout, named): pointers `global_buffer` 8,
/// integers `by_value` 4.
pub fn signature(variant: i64) -> Vec<KernelArgument> {
    natural_signature(param_names(variant))
}

fn variant_of(values: &LaunchValues) -> i64 {
    match values.get("spec") {
        Some(LaunchValue::Int(v)) => *v,
        _ => 0,
    }
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct BnBwdInputs {
    /// UIDs of dy (dy_in with the ReLU), x, scale, mean, inv, dx, dscale, dbias.
    pub uids: [i64; 8],
    /// UID of r, the ReLU backward's operand (flags bit 1).
    pub r_uid: Option<i64>,
    /// x's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// n, c, s (after the batch merge).
    pub shape: [i64; 3],
    /// The strides of `STRIDES` (elements).
    pub strides: [i64; 17],
    /// The kernel's flags (module docs).
    pub flags: i64,
    /// Programs along grid y.
    pub splits: i64,
    /// Kernel configuration.
    pub config: TritonConfig,
}

impl BnBwdInputs {
    /// Whether the kernel takes the channels-first path (nchw, or generic with bit 2).
    pub fn channels_first(&self) -> bool {
        self.config.variant_code() == 2
            || (self.config.variant_code() == 0 && self.flags & FLAG_CHANNELS_FIRST != 0)
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

    /// The (image, position block) pairs the splits cut: `n·cdiv(s, tp)`.
    pub fn pairs(&self) -> i64 {
        self.shape[0] * cdiv(self.shape[2], self.tile().1)
    }

    /// Workspace bytes: `2·splits·c` f32.
    pub fn workspace_bytes(&self) -> u64 {
        2 * self.splits as u64 * self.shape[1] as u64 * 4
    }

    /// The (batch, channel, spatial) stride bases of the tensors the kernel reads or writes
    /// over x's dims (r only with the ReLU).
    fn ncs_bases(&self) -> Vec<usize> {
        let relu = self.flags & FLAG_RELU != 0;
        NCS.into_iter().filter(|&b| b != 6 || relu).collect()
    }

    /// Whether the layout satisfies a variant's hints (`inner` 1: channels-last, 2:
    /// channels-first): unit `inner` strides, that extent and the other strides of dy, x and
    /// dx multiples of 16. Alignment is checked at execute.
    fn fits_hints(&self, inner: usize) -> bool {
        let s = &self.strides;
        let ones = self.ncs_bases().iter().all(|&b| s[b + inner] == 1);
        let div = [0, 3, 9]
            .iter()
            .all(|&b| (0..3).all(|k| k == inner || s[b + k] % 16 == 0));
        ones && div && self.shape[inner] % 16 == 0
    }
}

/// The graph's tensors as the pack reads them.
struct BnBwdNode {
    dy: i64,
    x: i64,
    scale: i64,
    mean: i64,
    inv: i64,
    dx: i64,
    dscale: i64,
    dbias: i64,
    /// The fused ReLU backward's (dy_in, r).
    relu: Option<(i64, i64)>,
}

/// The node and the optional RELU_BWD in front of it.
fn read_nodes(graph: &OperationGraph) -> PluginResult<BnBwdNode> {
    let nodes: Vec<Node<'_>> = graph
        .graph()
        .nodes()
        .map(|n| n.iter().collect())
        .unwrap_or_default();
    let what = "the bn_bwd pack serves one batchnorm_backward node, alone or after one RELU_BWD pointwise node";
    let bn: Vec<&Node<'_>> = nodes
        .iter()
        .filter(|n| n.attributes_as_batchnorm_backward_attributes().is_some())
        .collect();
    if bn.len() != 1 || nodes.len() > 2 {
        return Err(na(format!("{what}; this graph has {} nodes", nodes.len())));
    }
    let a = bn[0]
        .attributes_as_batchnorm_backward_attributes()
        .unwrap_or_else(|| unreachable!("filtered"));
    if let Some(p) = a.peer_stats_tensor_uid().filter(|p| !p.is_empty()) {
        return Err(na(format!(
            "the bn_bwd pack does not serve peer statistics (peer_stats_tensor_uid {:?})",
            p.iter().collect::<Vec<_>>()
        )));
    }
    let (Some(mean), Some(inv)) = (a.mean_tensor_uid(), a.inv_variance_tensor_uid()) else {
        return Err(na(
            "the bn_bwd pack needs the batchnorm backward's saved mean and inv_variance (the CPU reference engine refuses the node without them too)",
        ));
    };
    let mut b = BnBwdNode {
        dy: a.dy_tensor_uid(),
        x: a.x_tensor_uid(),
        scale: a.scale_tensor_uid(),
        mean,
        inv,
        dx: a.dx_tensor_uid(),
        dscale: a.dscale_tensor_uid(),
        dbias: a.dbias_tensor_uid(),
        relu: None,
    };
    if nodes.len() == 2 {
        let pw = nodes
            .iter()
            .find_map(|n| n.attributes_as_pointwise_attributes())
            .ok_or_else(|| na(format!("{what}; the other node is not pointwise")))?;
        let plain = pw.relu_lower_clip().is_none_or(|v| v == 0.0)
            && pw.relu_upper_clip().is_none_or(|v| v == f32::MAX)
            && pw.relu_lower_clip_slope().is_none_or(|v| v == 0.0);
        let (mode, i1) = (pw.operation(), pw.in_1_tensor_uid());
        let Some(r) = i1.filter(|_| mode == PointwiseMode::RELU_BWD && plain) else {
            return Err(na(format!(
                "the bn_bwd pack fuses only a RELU_BWD with lower clip 0, no upper clip and slope 0 in front of the batchnorm backward; the graph has {mode:?}"
            )));
        };
        if pw.out_0_tensor_uid() != b.dy {
            return Err(na(
                "the bn_bwd pack fuses a RELU_BWD whose output is the batchnorm backward's dy",
            ));
        }
        if !tensor(graph, b.dy)?.virtual_() {
            return Err(na(format!(
                "the bn_bwd pack fuses the RELU_BWD only over a virtual dy; tensor {} is not virtual",
                b.dy
            )));
        }
        b.relu = Some((pw.in_0_tensor_uid(), r));
    }
    Ok(b)
}

/// Reads the graph into launch inputs with a placeholder config.
fn read_graph(graph: &OperationGraph) -> PluginResult<BnBwdInputs> {
    let b = read_nodes(graph)?;
    let xt = tensor(graph, b.x)?;
    let dtype = float_dtype(&xt, "bn_bwd", "x")?;
    let typed = |what: &str, u: i64, bit| -> PluginResult<(TensorAttributes<'_>, i64)> {
        let t = tensor(graph, u)?;
        let f = f32_bit(&t, dtype, "bn_bwd", what, bit)?;
        Ok((t, f))
    };
    let dy_src = b.relu.map_or(b.dy, |r| r.0);
    let (dyt, mut flags) = typed("dy", dy_src, FLAG_DY_F32)?;
    let (dxt, f) = typed("dx", b.dx, FLAG_DX_F32)?;
    flags |= f;
    let mut like_x = vec![("dy", dyt), ("dx", dxt)];
    if let Some((_, r)) = b.relu {
        let (rt, f) = typed("r", r, FLAG_R_F32)?;
        flags |= FLAG_RELU | f;
        // The intermediate holds dy_in·{0, 1} exactly unless it rounds a wider dy_in.
        let mid = tensor(graph, b.dy)?;
        let dy_in = tensor(graph, dy_src)?;
        if mid.data_type() != DataType::FLOAT && dy_in.data_type() == DataType::FLOAT {
            return Err(na(format!(
                "the bn_bwd pack fuses the RELU_BWD only where its output keeps dy_in's values; dy_in is FLOAT and the intermediate {:?}",
                mid.data_type()
            )));
        }
        let (md, _) = dims_strides(&mid);
        let (xd, _) = dims_strides(&xt);
        if md != xd {
            return Err(na(format!(
                "the bn_bwd pack: the RELU_BWD's output dims {md:?} differ from x {xd:?}"
            )));
        }
        like_x.push(("r", rt));
    }
    let refs: Vec<(&str, &TensorAttributes<'_>)> = like_x.iter().map(|(w, t)| (*w, t)).collect();
    let (view, st) = Channels::read("bn_bwd", &xt, &refs)?;
    let mut strides = [0i64; 17];
    let [sdy, sx, sdx] = [st[1], st[0], st[2]];
    strides[0..3].copy_from_slice(&sdy);
    strides[3..6].copy_from_slice(&sx);
    if b.relu.is_some() {
        strides[6..9].copy_from_slice(&st[3]);
    }
    strides[9..12].copy_from_slice(&sdx);
    let per_channel = |what: &str, u: i64, bit: i64, input: bool| -> PluginResult<(i64, i64)> {
        let (t, f) = typed(what, u, bit)?;
        let s = if input {
            view.per_channel_in(what, &t, true)?
        } else {
            view.per_channel(what, &t)?
        };
        Ok((s, f))
    };
    let per = [
        ("scale", b.scale, FLAG_SCALE_F32, true),
        ("the saved mean", b.mean, FLAG_MEAN_F32, false),
        ("the saved inv_variance", b.inv, FLAG_INV_F32, false),
        ("dscale", b.dscale, FLAG_DSCALE_F32, false),
        ("dbias", b.dbias, FLAG_DBIAS_F32, false),
    ];
    for (k, (what, u, bit, input)) in per.into_iter().enumerate() {
        let (s, f) = per_channel(what, u, bit, input)?;
        strides[12 + k] = s;
        flags |= f;
    }
    Ok(BnBwdInputs {
        uids: [dy_src, b.x, b.scale, b.mean, b.inv, b.dx, b.dscale, b.dbias],
        r_uid: b.relu.map(|r| r.1),
        dtype: dtype.0,
        shape: view.shape,
        strides,
        flags,
        splits: 1,
        config: TritonConfig::parse("bn_bwd_f32_generic_16x128x1_g1_w4_s1_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    })
}

impl TritonFamily for BnBwdInputs {
    const FAMILY: &'static str = "bn_bwd";
    const CONTRACT: &'static str = BN_BWD_V1;
    const VALUES: &'static [IntValue] = &concat::<38>(&[
        &[int("flags", 0, 1023), uid("r.uid")],
        &strides(STRIDES),
        &[
            int("n", 1, MAX_EXTENT),
            int("c", 1, MAX_EXTENT),
            int("s", 1, MAX_EXTENT),
        ],
        &tile_config(2, (1, 4096), (1, 4096)),
        &[
            uid("dy.uid"),
            uid("x.uid"),
            uid("scale.uid"),
            uid("mean.uid"),
            uid("inv.uid"),
            uid("dx.uid"),
            uid("dscale.uid"),
            uid("dbias.uid"),
            int("dtype", 1, 3),
        ],
        &[int("splits", 1, 65_535)],
    ]);
    const POINTERS: &'static [&'static str] = &TENSORS.0;
    const ALIGNED: &'static [&'static str] = &["dy.uid", "x.uid", "dx.uid"];
    const ALIGNED_TEXT: &'static str = "16-byte aligned dy, x and dx";
    const OPTIONAL: &'static [&'static str] = &["r.uid"];

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        read_graph(graph)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    /// The variant's hints, then the static rule (module docs): `kernel <k> is not a packed
    /// bn_bwd entry`; `kernel <k> is the spec variant; …`; `kernel <k> is the nchw variant;
    /// …`; `kernel <k>: static rule: …`.
    fn select(&mut self, kernel: &KernelDescriptor, config: TritonConfig) -> PluginResult<()> {
        if config.transposing || config.b_col {
            return Err(na(format!(
                "kernel {} is not a packed bn_bwd entry",
                kernel.describe()
            )));
        }
        spec_hints(
            kernel,
            &config,
            self.fits_hints(1),
            "unit channel strides of dy, x, dx and r, C and the other strides of dy, x and dx multiples of 16",
        )?;
        if config.channels_first && !self.fits_hints(2) {
            return Err(na(format!(
                "kernel {} is the nchw variant; the graph's layout does not satisfy its hints (unit spatial strides of dy, x, dx and r, the spatial size and the other strides of dy, x and dx multiples of 16)",
                kernel.describe()
            )));
        }
        self.flags &= !FLAG_CHANNELS_FIRST;
        let unit_spatial = self.ncs_bases().iter().all(|&b| self.strides[b + 2] == 1);
        if !config.spec && !config.channels_first && unit_spatial && self.shape[2] > 1 {
            self.flags |= FLAG_CHANNELS_FIRST;
        }
        self.config = config;
        let cf = self.channels_first();
        let want = rule_block_m(cf, self.shape[2]);
        if self.config.block[0] != want {
            let path = if cf {
                format!("channels-first path over {} positions", self.shape[2])
            } else {
                "channels-last path".to_string()
            };
            return Err(static_rule(
                kernel,
                format!(
                    "the {path} takes the tile {want} long on the unit-stride axis, not {}",
                    self.config.block[0]
                ),
            ));
        }
        self.splits = rule_splits(
            self.pairs(),
            cdiv(self.shape[1], self.tile().0),
            self.tile().1,
            true,
        );
        Ok(())
    }

    fn ints(&self) -> Vec<i64> {
        let mut v = vec![self.flags, self.r_uid.unwrap_or(0)];
        v.extend(self.strides);
        v.extend(self.shape);
        v.extend(tile_config_ints(&self.config));
        v.extend(self.uids);
        v.extend([self.dtype.into(), self.splits]);
        v
    }

    fn from_ints(v: &[i64]) -> Self {
        let flags = v[0];
        let mut strides = [0i64; 17];
        strides.copy_from_slice(&v[2..19]);
        let mut uids = [0i64; 8];
        uids.copy_from_slice(&v[28..36]);
        BnBwdInputs {
            uids,
            r_uid: Some(v[1]).filter(|_| flags & FLAG_RELU != 0),
            dtype: v[36] as i8,
            shape: [v[19], v[20], v[21]],
            strides,
            flags,
            splits: v[37],
            config: tile_config_of(Self::FAMILY, &v[22..28]),
        }
    }

    /// `r.uid` present exactly when `flags` bit 1 is set (`launch value 'r.uid' of dispatch
    /// '<d>' must be present exactly when 'flags' bit 1 is set; flags is <f>`).
    fn read_value(r: &ValueReader<'_>, read: &[i64], i: usize) -> PluginResult<i64> {
        let (name, flags) = (Self::VALUES[i].name, read.first().copied().unwrap_or(0));
        if name == "r.uid" {
            let present = r.has(name);
            if present != (flags & FLAG_RELU != 0) {
                return Err(incompatible(format!(
                    "launch value 'r.uid' of dispatch '{}' must be present exactly when 'flags' bit 1 is set; flags is {flags}",
                    r.dispatch()
                )));
            }
            return if present { r.read(i) } else { Ok(0) };
        }
        r.read(i)
    }

    fn present(&self, name: &str) -> bool {
        let _ = name;
        self.r_uid.is_some()
    }

    /// `launch values of dispatch '<d>' give n·s = <v>, above 1073741824`; `… name the spec
    /// variant, whose channel strides of dy, x, r and dx must be 1`; `… the nchw variant,
    /// whose spatial strides … must be 1`; `… set flags bit 2 (channels-first path), which
    /// needs the generic variant and unit spatial strides`; `… give splits <v>, above
    /// the <p> (image, position block) pairs`; then the geometry.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        let refuse = |what: String| {
            Err(incompatible(format!(
                "launch values of dispatch '{}' {what}",
                quote(dispatch)
            )))
        };
        let [n, _, s] = self.shape;
        if n * s > MAX_EXTENT {
            return refuse(format!("give n·s = {}, above {MAX_EXTENT}", n * s));
        }
        let variant = self.config.variant_code();
        let unit = |inner: usize| {
            self.ncs_bases()
                .iter()
                .all(|&b| self.strides[b + inner] == 1)
        };
        if variant == 1 && !unit(1) {
            return refuse(
                "name the spec variant, whose channel strides of dy, x, r and dx must be 1"
                    .to_string(),
            );
        }
        if variant == 2 && !unit(2) {
            return refuse(
                "name the nchw variant, whose spatial strides of dy, x, r and dx must be 1"
                    .to_string(),
            );
        }
        if self.flags & FLAG_CHANNELS_FIRST != 0 && (variant != 0 || !unit(2)) {
            return refuse("set flags bit 2 (channels-first path), which needs the generic variant and unit spatial strides".to_string());
        }
        if self.splits > self.pairs() {
            return refuse(format!(
                "give splits {}, above the {} (image, position block) pairs",
                self.splits,
                self.pairs()
            ));
        }
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        param_names(i64::from(spec))
    }

    /// `N C S`, the variant's strides, `flags splits phase` (the main launch: phase 1).
    fn scalars(&self) -> Vec<i64> {
        let variant = self.config.variant_code();
        let mut ints: Vec<i64> = self.shape.to_vec();
        let strides = self.strides.iter().enumerate();
        ints.extend(
            strides
                .filter(|(i, _)| takes_stride(variant, *i))
                .map(|(_, v)| *v),
        );
        ints.extend([self.flags, self.splits, 1]);
        ints
    }

    /// Grid (cdiv(c, tc), splits, 1); `NOT_APPLICABLE` [`TritonConfig::threads_per_block`]'s
    /// text.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        Ok(block_geometry(
            c,
            [
                cdiv(self.shape[1], self.tile().0) as u32,
                self.splits as u32,
                1,
            ],
            threads,
        ))
    }

    fn workspace_bytes(&self) -> u64 {
        BnBwdInputs::workspace_bytes(self)
    }

    fn signature_for(values: &LaunchValues) -> Vec<KernelArgument> {
        signature(variant_of(values))
    }

    /// dy, x, r (null without the ReLU), scale, mean, inv, dx, dscale, dbias, the workspace,
    /// the integers, two null scratch pointers.
    ///
    /// # Errors
    /// `BAD_PARAM`: `tensor UID <u> is at <addr>; this plan runs the specialized bn_bwd
    /// kernel, which needs 16-byte aligned dy, x and dx` (spec and nchw); [`pointer_args`]'
    /// binding texts; `the workspace is at <addr>; this plan runs bn_bwd, whose partial sums
    /// need a 4-byte aligned device workspace` (also for none bound).
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        if variant_of(&launch.launch_values) == 2 {
            // pointer_args checks the spec variant's alignment; nchw needs the same.
            let mut values = launch.launch_values.clone();
            values.insert("spec".to_string(), LaunchValue::Int(1));
            let probe = PreparedLaunch {
                launch_values: values,
                ..launch.clone()
            };
            check_aligned::<Self>(&probe, tensors)?;
        }
        let mut out = pointer_args::<Self>(launch, tensors)?;
        let ws = workspace.unwrap_or(0);
        if ws == 0 || ws % 4 != 0 {
            return Err(PluginError::bad_param(format!(
                "the workspace is at {ws:#x}; this plan runs bn_bwd, whose partial sums need a 4-byte aligned device workspace"
            )));
        }
        out.insert(TENSORS.0.len(), KernelArgValue::Pointer(ws));
        Ok(out)
    }

    /// Phase 0 (the partials): the same arguments with `phase` 0 on the main launch's
    /// geometry.
    fn prologue_launches(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
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
