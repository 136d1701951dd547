//! Norm forward pack, contract `hipkernel.norm_fwd.dispatch.v1`: layernorm and rmsnorm forward
//! on the Triton kernel of `engines/kernels/triton/norm_fwd.py`, ONE launch per node.
//!
//! Graphs served: one `layernorm` node (x, scale, bias, epsilon, y, optional mean and
//! inv_variance: training phase) or one `rmsnorm` node (x, scale, epsilon, y, optional bias and
//! inv_rms), with the CPU reference engine's semantics (`reference/nodes/norm.rs`): the
//! normalized axes are the trailing axes from `x.dims.len() − normalized_dim_count` (layernorm
//! with a count ≥ 1) or from the first axis ≥ 1 where the scale's dim is not 1 (layernorm with
//! count 0, rmsnorm); statistics are f32 (two-pass mean and population variance; rmsnorm the
//! mean of squares), `inv = 1/sqrt(var + epsilon)`, `y = (x − mean)·inv·scale (+ bias)`.
//!
//! Layout the pack needs (else `NOT_APPLICABLE` naming the tensor): the leading (row) axes of
//! x and y collapse to one element stride each, and so do the normalized (column) axes (any
//! strides that do: dense row-major, a transposed 2-D view, …); scale and bias have dim 1 on
//! every row axis and either x's dims on every normalized axis (collapsing to one stride) or
//! dim 1 on all of them (one value, stride 0); the statistics tensors hold `rows` values whose
//! dims collapse to one stride; epsilon is a scalar whose value the graph holds (a
//! pass-by-value tensor, not a runtime one) of type FLOAT, HALF or BFLOAT16 (its value rounded
//! to that type, as the reference engine reads it); x is f32, f16 or bf16; y, scale,
//! bias and the statistics are each of x's type or f32. Element offsets are int64 in the
//! kernel; every extent and stride must be at most 2147483647.
//!
//! Entries: `norm_fwd_<dtype>_<spec|generic>_<bm>x<bn>x1_g1_w<w>_s1_sh<shared>_ws<warp>`: `bm`
//! rows per program, the row walked in `bn`-element chunks. `spec` = unit column strides
//! for x, y, scale and the bias, `cols` and the row strides of x and y multiples of 16, 16-byte
//! aligned x, y, scale and bias (checked at execute, `BAD_PARAM`); `generic` = anything else.
//! Static rule: the first applicable entry in pack order (spec before generic, larger tiles
//! first), where an entry whose chunk `bn` is larger than 64 and at least twice the row length
//! is refused (a narrower chunk serves the graph): rows above 1024 elements take the 2048
//! chunk, rows of 257..=1024 (MiniLM's 384) the 512 chunk with 2 rows per program, shorter rows
//! the 64 chunk with 8 rows per program.
//!
//! Launch values: [`NormFwdInputs`]'s `VALUES` (in restore order); `bias.uid`, `mean.uid` and
//! `inv.uid` are present exactly when `flags` bit 2, 4, 8 is set; `dtype` is x's `DataType`
//! value (1 f32, 2 f16, 3 bf16); an absent tensor's stride is 0; `flags` are the kernel's (1
//! rmsnorm, 2 bias, 4 mean, 8 inv, 16 scale f32, 32 bias f32, 64 y f32, 128 statistics f32;
//! rmsnorm has no mean); `epsilon` is a float, an f32 value. Launch: grid (cdiv(rows,
//! block_m), 1, 1), block num_warps·warp_size, dynamic shared memory `shared_bytes`,
//! workspace 0, scratch pointers null. Kernel arguments: x, scale, bias (null when absent), y,
//! mean, inv (null when absent), rows, cols, sxr, sxc, syr, syc, ssc, sbc, smr, sir, flags
//! (`by_value` 4; spec drops sxc, syc, ssc, sbc), epsilon (`by_value` 4, f32), the two
//! scratch pointers.

use crate::ingestor::framework::prelude::*;

/// The versioned contract name.
pub const NORM_FWD_V1: &str = "hipkernel.norm_fwd.dispatch.v1";
crate::triton_handler!(NormFwdHandler = NormFwdInputs);

/// `flags` bit: rmsnorm (no mean subtraction).
pub const FLAG_RMS: i64 = 1;
/// `flags` bit: a bias is added.
pub const FLAG_BIAS: i64 = 2;
/// `flags` bit: the mean is written.
pub const FLAG_MEAN: i64 = 4;
/// `flags` bit: the inverse standard deviation (inv_variance / inv_rms) is written.
pub const FLAG_INV: i64 = 8;
/// `flags` bit: the scale is f32 (else x's type).
pub const FLAG_SCALE_F32: i64 = 16;
/// `flags` bit: the bias is f32 (else x's type).
pub const FLAG_BIAS_F32: i64 = 32;
/// `flags` bit: y is f32 (else x's type).
pub const FLAG_Y_F32: i64 = 64;
/// `flags` bit: the statistics are f32 (else x's type).
pub const FLAG_STATS_F32: i64 = 128;

/// Stride value names, in kernel order.
const STRIDES: [&str; 8] = ["sxr", "sxc", "syr", "syc", "ssc", "sbc", "smr", "sir"];
/// The tensors' UID values and the kernel's pointer parameters, in kernel order.
const TENSORS: ([&str; 6], [&str; 6]) = crate::tensor_pointers!(x, scale, bias, y, mean, inv);
/// Strides the spec variant holds constant 1 (indices into [`STRIDES`]).
const SPEC_ONE: [usize; 4] = [1, 3, 4, 5];
/// Optional tensor value names with the `flags` bit that makes each present.
const OPTIONAL: [(&str, i64); 3] = [
    ("bias.uid", FLAG_BIAS),
    ("mean.uid", FLAG_MEAN),
    ("inv.uid", FLAG_INV),
];

/// The kernel signature of a variant (natural layout, named): pointers `global_buffer` 8,
/// integers and epsilon `by_value` 4.
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    <NormFwdInputs as TritonFamily>::signature(spec)
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct NormFwdInputs {
    /// UIDs of x, scale and y.
    pub uids: [i64; 3],
    /// UID of the bias (flags bit 2).
    pub bias_uid: Option<i64>,
    /// UID of the saved mean (flags bit 4; layernorm only).
    pub mean_uid: Option<i64>,
    /// UID of the saved inverse standard deviation (flags bit 8).
    pub inv_uid: Option<i64>,
    /// x's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// Rows (statistics elements) and columns (elements normalized together).
    pub rows: i64,
    /// Elements per row.
    pub cols: i64,
    /// sxr, sxc, syr, syc, ssc, sbc, smr, sir (elements; 0 for an absent tensor).
    pub strides: [i64; 8],
    /// The kernel's flags (module docs).
    pub flags: i64,
    /// Epsilon (an f32 value).
    pub epsilon: f32,
    /// Kernel configuration (`block[0]` rows per program, `block[1]` the row chunk).
    pub config: TritonConfig,
}

impl TritonFamily for NormFwdInputs {
    const FAMILY: &'static str = "norm_fwd";
    const CONTRACT: &'static str = NORM_FWD_V1;
    const VALUES: &'static [IntValue] = &concat::<25>(&[
        &[
            int("flags", 0, 255),
            uid("bias.uid"),
            uid("mean.uid"),
            uid("inv.uid"),
        ],
        &strides(STRIDES),
        &[float("epsilon")],
        &tile_config(1, (1, 64), (16, 8192)),
        &[
            uid("x.uid"),
            uid("scale.uid"),
            uid("y.uid"),
            int("dtype", 1, 3),
        ],
        &[int("rows", 1, I32_MAX), int("cols", 1, I32_MAX)],
    ]);
    const POINTERS: &'static [&'static str] = &TENSORS.0;
    const ALIGNED: &'static [&'static str] = &["x.uid", "scale.uid", "bias.uid", "y.uid"];
    const ALIGNED_TEXT: &'static str = "16-byte aligned x, scale, bias and y";
    const OPTIONAL: &'static [&'static str] = &["bias.uid", "mean.uid", "inv.uid"];
    const SPEC_HINTS: &'static str = "unit column strides of x, y, scale and bias, cols and the row strides of x and y multiples of 16";

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        read_graph(graph)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    fn fits_spec(&self) -> bool {
        let s = self.strides;
        s[1] == 1
            && s[3] == 1
            && s[4] == 1
            && (self.bias_uid.is_none() || s[5] == 1)
            && self.cols % 16 == 0
            && s[0] % 16 == 0
            && s[2] % 16 == 0
    }

    /// The static rule (module docs).
    fn rule(&mut self, kernel: &KernelDescriptor) -> PluginResult<()> {
        chunk_rule(kernel, self.config.block[1], 64, self.cols, "the row")
    }

    fn ints(&self) -> Vec<i64> {
        let (u, opt) = (self.uids, |o: Option<i64>| o.unwrap_or(0));
        let mut v = vec![
            self.flags,
            opt(self.bias_uid),
            opt(self.mean_uid),
            opt(self.inv_uid),
        ];
        v.extend(self.strides);
        v.push(slot_of(self.epsilon));
        v.extend(tile_config_ints(&self.config));
        v.extend([u[0], u[1], u[2], self.dtype.into(), self.rows, self.cols]);
        v
    }

    fn from_ints(v: &[i64]) -> Self {
        let flags = v[0];
        let opt = |i: usize, bit: i64| Some(v[i]).filter(|_| flags & bit != 0);
        NormFwdInputs {
            uids: [v[19], v[20], v[21]],
            bias_uid: opt(1, FLAG_BIAS),
            mean_uid: opt(2, FLAG_MEAN),
            inv_uid: opt(3, FLAG_INV),
            dtype: v[22] as i8,
            rows: v[23],
            cols: v[24],
            strides: [v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]],
            flags,
            epsilon: f32_of(v[12]),
            config: tile_config_of(Self::FAMILY, &v[13..19]),
        }
    }

    /// The optional UIDs present exactly under their `flags` bit (`launch value '<n>' of
    /// dispatch '<d>' must be present exactly when 'flags' bit <b> is set; flags is <f>`), no
    /// mean with rmsnorm (`launch values of dispatch '<d>' name rmsnorm (flags bit 1) with a
    /// mean`, before the strides), epsilon a float that f32 holds exactly (NaN refused).
    fn read_value(r: &ValueReader<'_>, read: &[i64], i: usize) -> PluginResult<i64> {
        let (name, flags) = (Self::VALUES[i].name, read.first().copied().unwrap_or(0));
        if let Some((n, bit)) = OPTIONAL.iter().find(|(n, _)| *n == name) {
            let present = r.has(n);
            if present != (flags & bit != 0) {
                return Err(incompatible(format!(
                    "launch value '{n}' of dispatch '{}' must be present exactly when 'flags' bit {bit} is set; flags is {flags}",
                    r.dispatch()
                )));
            }
            return if present { r.read(i) } else { Ok(0) };
        }
        match name {
            "sxr" if flags & FLAG_RMS != 0 && flags & FLAG_MEAN != 0 => Err(incompatible(format!(
                "launch values of dispatch '{}' name rmsnorm (flags bit 1) with a mean",
                r.dispatch()
            ))),
            "epsilon" => r.f32(name, false).map(slot_of),
            _ => r.read(i),
        }
    }

    fn present(&self, name: &str) -> bool {
        match name {
            "bias.uid" => self.bias_uid.is_some(),
            "mean.uid" => self.mean_uid.is_some(),
            _ => self.inv_uid.is_some(),
        }
    }

    /// `launch values of dispatch '<d>' name the spec variant, whose 'sxc', 'syc', 'ssc' and
    /// 'sbc' must be 1`, then the geometry.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        let s = self.strides;
        if self.config.spec
            && (s[1] != 1 || s[3] != 1 || s[4] != 1 || (self.flags & FLAG_BIAS != 0 && s[5] != 1))
        {
            return Err(incompatible(format!(
                "launch values of dispatch '{}' name the spec variant, whose 'sxc', 'syc', 'ssc' and 'sbc' must be 1",
                quote(dispatch)
            )));
        }
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        let mut v = TENSORS.1.to_vec();
        v.extend(["rows", "cols"]);
        v.extend(spec_kept(&STRIDES, spec, &SPEC_ONE));
        v.extend(["flags", "eps", "global_scratch", "profile_scratch"]);
        v
    }

    fn scalars(&self) -> Vec<i64> {
        let mut ints = vec![self.rows, self.cols];
        ints.extend(spec_kept(&self.strides, self.config.spec, &SPEC_ONE));
        ints.push(self.flags);
        ints
    }

    fn float_scalars(&self) -> Vec<f32> {
        vec![self.epsilon]
    }

    /// Grid (cdiv(rows, block_m), 1, 1); `NOT_APPLICABLE`
    /// [`TritonConfig::threads_per_block`]'s text.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        Ok(block_geometry(
            c,
            [((self.rows + c.block[0] - 1) / c.block[0]) as u32, 1, 1],
            threads,
        ))
    }
}

/// The node's tensors as the pack reads them.
struct NormNode {
    rms: bool,
    x: i64,
    scale: i64,
    bias: Option<i64>,
    eps: i64,
    y: i64,
    mean: Option<i64>,
    inv: Option<i64>,
    /// `normalized_dim_count` (layernorm; 0 = from the scale).
    ndc: i64,
}

fn read_node(node: &Node<'_>) -> PluginResult<NormNode> {
    if let Some(a) = node.attributes_as_layernorm_attributes() {
        return Ok(NormNode {
            rms: false,
            x: a.x_tensor_uid(),
            scale: a.scale_tensor_uid(),
            bias: Some(a.bias_tensor_uid()),
            eps: a.epsilon_tensor_uid(),
            y: a.y_tensor_uid(),
            mean: a.mean_tensor_uid(),
            inv: a.inv_variance_tensor_uid(),
            ndc: a.normalized_dim_count(),
        });
    }
    if let Some(a) = node.attributes_as_rmsnorm_attributes() {
        return Ok(NormNode {
            rms: true,
            x: a.x_tensor_uid(),
            scale: a.scale_tensor_uid(),
            bias: a.bias_tensor_uid(),
            eps: a.epsilon_tensor_uid(),
            y: a.y_tensor_uid(),
            mean: None,
            inv: a.inv_rms_tensor_uid(),
            ndc: 0,
        });
    }
    Err(na(
        "the norm_fwd pack serves a layernorm or rmsnorm forward node",
    ))
}

/// Reads the graph (one layernorm or rmsnorm node) into launch inputs with a placeholder
/// config.
fn read_graph(graph: &OperationGraph) -> PluginResult<NormFwdInputs> {
    let n = read_node(&one_node(graph, "norm_fwd", "layernorm or rmsnorm")?)?;
    let xt = tensor(graph, n.x)?;
    let dtype = float_dtype(&xt, "norm_fwd", "x")?;
    let st = tensor(graph, n.scale)?;
    let view = NormRows::read("norm_fwd", &xt, &st, n.ndc)?;
    let (rows, cols) = (view.rows, view.cols);
    let row_col = |what: &str, t: &TensorAttributes<'_>| view.row_col(what, t);
    let yt = tensor(graph, n.y)?;
    let (sxr, sxc) = row_col("x", &xt)?;
    let (syr, syc) = row_col("y", &yt)?;
    let mut flags = if n.rms { FLAG_RMS } else { 0 };
    let typed =
        |what: &str, t: &TensorAttributes<'_>, bit| f32_bit(t, dtype, "norm_fwd", what, bit);
    flags |= typed("y", &yt, FLAG_Y_F32)?;
    // scale and bias: dim 1 on the row axes; x's dims or all 1 on the normalized axes.
    let affine = |what: &str, t: &TensorAttributes<'_>| view.per_column(what, t, true);
    flags |= typed("scale", &st, FLAG_SCALE_F32)?;
    let ssc = affine("scale", &st)?;
    let mut sbc = 0;
    if let Some(b) = n.bias {
        let bt = tensor(graph, b)?;
        flags |= FLAG_BIAS | typed("bias", &bt, FLAG_BIAS_F32)?;
        sbc = affine("bias", &bt)?;
    }
    let stat = |what: &str, u: i64| -> PluginResult<(i64, i64)> {
        let t = tensor(graph, u)?;
        let bit = typed(what, &t, FLAG_STATS_F32)?;
        Ok((view.per_row(what, &t)?, bit))
    };
    let (mut smr, mut sir) = (0, 0);
    if let Some(u) = n.mean {
        let (c, bit) = stat("mean", u)?;
        smr = c;
        flags |= FLAG_MEAN | bit;
    }
    if let Some(u) = n.inv {
        let what = if n.rms { "inv_rms" } else { "inv_variance" };
        let (c, bit) = stat(what, u)?;
        sir = c;
        flags |= FLAG_INV | bit;
    }
    let epsilon = scalar_value(&tensor(graph, n.eps)?, "norm_fwd", "epsilon")?;
    Ok(NormFwdInputs {
        uids: [n.x, n.scale, n.y],
        bias_uid: n.bias,
        mean_uid: n.mean,
        inv_uid: n.inv,
        dtype: dtype.0,
        rows,
        cols,
        strides: [sxr, sxc, syr, syc, ssc, sbc, smr, sir],
        flags,
        epsilon,
        config: TritonConfig::parse("norm_fwd_f32_generic_8x64x1_g1_w4_s1_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    })
}
