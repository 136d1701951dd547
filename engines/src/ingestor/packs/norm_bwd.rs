//! Norm backward pack, contract `hipkernel.norm_bwd.dispatch.v1`: layernorm and rmsnorm backward
//! (dx, dscale, dbias) on the Triton kernel of `engines/kernels/triton/norm_bwd.py`, TWO
//! launches of one code object (dx and per-program partial sums into the workspace, then a
//! fixed-order merge of the partials into dscale and dbias). Nothing else: the node semantics
//! are the CPU reference engine's, which serves every graph this pack refuses.
//!
//! Graphs served: one `layernorm_backward` node with the saved mean and inv_variance (dy, x,
//! scale, mean, inv_variance, dx, dscale, dbias) or one `rmsnorm_backward` node (dy, x, scale,
//! inv_rms, dx, dscale, optional dbias), with the reference engine's semantics
//! (`reference/nodes/norm.rs` `NormBackwardStep`, `reference/ops/norm.rs` `norm_backward`): the
//! normalized axes are the trailing axes from `x.dims.len() − normalized_dim_count`
//! (layernorm with a count ≥ 1) or from the first axis ≥ 1 where the scale's dim is not 1
//! (layernorm with count 0, rmsnorm); with `x̂ = (x − mean)·inv` (rmsnorm: mean 0), `g =
//! dy·scale` and per row of N elements `ḡ = Σg/N` (0 for rmsnorm) and `c = Σ(g·x̂)/N`: `dx =
//! inv·(g − ḡ − x̂·c)`, `dscale = Σ_rows dy·x̂`, `dbias = Σ_rows dy`. The kernel sums in f32
//! (the reference in f64): the GPU test holds it to the reference engine's backward
//! tolerances.
//!
//! Refused by name (`NOT_APPLICABLE`; the CPU reference engine serves them): a layernorm
//! backward without the saved statistics (recomputed from x with epsilon); a scale broadcast
//! over the normalized axes (one value for several columns, whose dscale sums everything);
//! layouts whose row or normalized axes do not collapse to one stride. Layout the pack needs:
//! the leading (row) axes of dy, x and dx collapse to one element stride each, and so do the
//! normalized (column) axes; scale, dscale and dbias have dim 1 on every row axis and x's
//! dims on every normalized axis (collapsing to one stride); mean and inv hold `rows` values
//! whose dims collapse to one stride; x is f32, f16 or bf16; dy, dx, scale, the statistics,
//! dscale and dbias are each of x's type or f32. Every extent and stride must be at most
//! 2147483647 (the kernel's offsets are int64).
//!
//! Entries: `norm_bwd_<dtype>_<spec|generic>_<bm>x<bn>x1_g1_w<w>_s1_sh<shared>_ws<warp>`: `bm`
//! rows per block, the row walked in `bn`-element chunks. `spec` = unit column strides of dy,
//! x, dx, scale, dscale and dbias, `cols` and the row strides of dy, x and dx multiples of 16,
//! 16-byte aligned dy, x, scale and dx (checked at execute, `BAD_PARAM`); `generic` = anything
//! else. Static rule: as norm_fwd's, the first applicable entry in pack order (spec before
//! generic, larger tiles first) where an entry whose chunk `bn` is larger than 64 and at least
//! twice the row length is refused: rows above 1024 elements take the 2048 chunk, rows of
//! 257..=1024 the 512 chunk with 2 rows per block, shorter rows the 64 chunk with 8 rows per
//! block. `splits` (phase 0's programs): [`rule_splits`], at most [`TARGET_SPLITS`], each
//! program owning the same number of row blocks (the last fewer), none empty.
//!
//! Launch values: [`NormBwdInputs`]'s `VALUES` (in restore order); `mean.uid` is present
//! exactly when `flags` bit 1 (rmsnorm) is clear and `dbias.uid` exactly when bit 2 is set;
//! `dtype` is x's `DataType` value (1 f32, 2 f16, 3 bf16); an absent tensor's stride is 0;
//! `flags` are the kernel's (1 rmsnorm, 2 dbias, then f32 bits 4 scale, 8 mean, 16 inv, 32 dy,
//! 64 dx, 128 dscale, 256 dbias); `splits` in [1, min(65535, cdiv(rows, block_m))]. Launches,
//! on the launch stream in order: phase 0 (the prologue) on grid (splits, 1, 1), then phase 1
//! (the main launch) on grid (cdiv(cols, [`RED_N`]), 1, 1); block num_warps·warp_size, dynamic
//! shared memory `shared_bytes`. Workspace: `splits·cols` f32 partials of dscale, and as many
//! of dbias with bit 2 ([`NormBwdInputs::workspace_bytes`]); every byte the merge reads is
//! written by phase 0 first, so nothing is zeroed. Kernel arguments: dy, x, scale, mean (null
//! for rmsnorm), inv, dx, dscale, dbias (null when absent), the workspace, rows, cols, sdyr,
//! sdyc, sxr, sxc, sdxr, sdxc, ssc, sdsc, sdbc, smr, sir (`spec` drops sdyc, sxc, sdxc, ssc,
//! sdsc, sdbc), flags, splits, phase (`by_value` 4), the two scratch pointers.

use crate::ingestor::framework::prelude::*;

/// The versioned contract name.
pub const NORM_BWD_V1: &str = "hipkernel.norm_bwd.dispatch.v1";
crate::triton_handler!(NormBwdHandler = NormBwdInputs);

/// `flags` bit: rmsnorm (no mean; ḡ = 0).
pub const FLAG_RMS: i64 = 1;
/// `flags` bit: dbias is written.
pub const FLAG_DBIAS: i64 = 2;
/// `flags` bit: the scale is f32 (else x's type).
pub const FLAG_SCALE_F32: i64 = 4;
/// `flags` bit: the saved mean is f32.
pub const FLAG_MEAN_F32: i64 = 8;
/// `flags` bit: the saved inv_variance / inv_rms is f32.
pub const FLAG_INV_F32: i64 = 16;
/// `flags` bit: dy is f32.
pub const FLAG_DY_F32: i64 = 32;
/// `flags` bit: dx is f32.
pub const FLAG_DX_F32: i64 = 64;
/// `flags` bit: dscale is f32.
pub const FLAG_DSCALE_F32: i64 = 128;
/// `flags` bit: dbias is f32.
pub const FLAG_DBIAS_F32: i64 = 256;

/// Phase 0's program count the static rule aims at (bounds the workspace to
/// `TARGET_SPLITS·cols` f32 per output).
pub const TARGET_SPLITS: i64 = 512;
/// Columns per program of the merge launch (phase 1; `RED_N` of norm_bwd.py).
pub const RED_N: i64 = 64;

/// Stride value names, in kernel order.
const STRIDES: [&str; 11] = [
    "sdyr", "sdyc", "sxr", "sxc", "sdxr", "sdxc", "ssc", "sdsc", "sdbc", "smr", "sir",
];
/// The tensors' UID values and the kernel's pointer parameters, in kernel order (the
/// workspace pointer follows them).
const TENSORS: ([&str; 8], [&str; 8]) =
    crate::tensor_pointers!(dy, x, scale, mean, inv, dx, dscale, dbias);
/// Strides the spec variant holds constant 1 (indices into [`STRIDES`]).
const SPEC_ONE: [usize; 6] = [1, 3, 5, 6, 7, 8];

fn cdiv(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// The static rule's `splits` for `rows` rows in blocks of `block_m`: `nb = cdiv(rows,
/// block_m)` blocks, `bpp = cdiv(nb, TARGET_SPLITS)` blocks per program, `cdiv(nb, bpp)`
/// programs (so none is empty).
pub fn rule_splits(rows: i64, block_m: i64) -> i64 {
    let nb = cdiv(rows, block_m.max(1));
    cdiv(nb, cdiv(nb, TARGET_SPLITS))
}

/// The kernel signature of a variant (natural layout, named): pointers `global_buffer` 8,
/// integers `by_value` 4.
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    <NormBwdInputs as TritonFamily>::signature(spec)
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct NormBwdInputs {
    /// UIDs of dy, x, scale, inv (inv_variance or inv_rms), dx and dscale.
    pub uids: [i64; 6],
    /// UID of the saved mean (layernorm: flags bit 1 clear).
    pub mean_uid: Option<i64>,
    /// UID of dbias (flags bit 2).
    pub dbias_uid: Option<i64>,
    /// x's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// Rows (statistics elements).
    pub rows: i64,
    /// Elements per row.
    pub cols: i64,
    /// sdyr sdyc sxr sxc sdxr sdxc ssc sdsc sdbc smr sir (elements; 0 for an absent tensor).
    pub strides: [i64; 11],
    /// The kernel's flags (module docs).
    pub flags: i64,
    /// Phase 0's programs.
    pub splits: i64,
    /// Kernel configuration (`block[0]` rows per block, `block[1]` the row chunk).
    pub config: TritonConfig,
}

impl NormBwdInputs {
    /// Workspace bytes: `splits·cols` f32, twice that with dbias.
    pub fn workspace_bytes(&self) -> u64 {
        let outputs = if self.flags & FLAG_DBIAS != 0 { 2 } else { 1 };
        outputs * self.splits as u64 * self.cols as u64 * 4
    }
}

impl TritonFamily for NormBwdInputs {
    const FAMILY: &'static str = "norm_bwd";
    const CONTRACT: &'static str = NORM_BWD_V1;
    const VALUES: &'static [IntValue] = &concat::<30>(&[
        &[int("flags", 0, 511), uid("mean.uid"), uid("dbias.uid")],
        &strides(STRIDES),
        &tile_config(1, (1, 64), (16, 8192)),
        &[
            uid("dy.uid"),
            uid("x.uid"),
            uid("scale.uid"),
            uid("inv.uid"),
            uid("dx.uid"),
            uid("dscale.uid"),
            int("dtype", 1, 3),
        ],
        &[
            int("rows", 1, I32_MAX),
            int("cols", 1, I32_MAX),
            int("splits", 1, 65_535),
        ],
    ]);
    const POINTERS: &'static [&'static str] = &TENSORS.0;
    const ALIGNED: &'static [&'static str] = &["dy.uid", "x.uid", "scale.uid", "dx.uid"];
    const ALIGNED_TEXT: &'static str = "16-byte aligned dy, x, scale and dx";
    const OPTIONAL: &'static [&'static str] = &["mean.uid", "dbias.uid"];
    const SPEC_HINTS: &'static str = "unit column strides of dy, x, dx, scale, dscale and dbias, cols and the row strides of dy, x and dx multiples of 16";

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        read_graph(graph)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    fn fits_spec(&self) -> bool {
        let s = self.strides;
        SPEC_ONE
            .iter()
            .all(|&i| s[i] == 1 || (i == 8 && self.dbias_uid.is_none()))
            && self.cols % 16 == 0
            && [0, 2, 4].iter().all(|&i| s[i] % 16 == 0)
    }

    /// The static rule (module docs): the chunk by row length, then `splits`.
    fn rule(&mut self, kernel: &KernelDescriptor) -> PluginResult<()> {
        chunk_rule(kernel, self.config.block[1], 64, self.cols, "the row")?;
        self.splits = rule_splits(self.rows, self.config.block[0]);
        Ok(())
    }

    fn ints(&self) -> Vec<i64> {
        let (u, opt) = (self.uids, |o: Option<i64>| o.unwrap_or(0));
        let mut v = vec![self.flags, opt(self.mean_uid), opt(self.dbias_uid)];
        v.extend(self.strides);
        v.extend(tile_config_ints(&self.config));
        v.extend(u);
        v.extend([self.dtype.into(), self.rows, self.cols, self.splits]);
        v
    }

    fn from_ints(v: &[i64]) -> Self {
        let flags = v[0];
        let mut strides = [0i64; 11];
        strides.copy_from_slice(&v[3..14]);
        NormBwdInputs {
            uids: [v[20], v[21], v[22], v[23], v[24], v[25]],
            mean_uid: Some(v[1]).filter(|_| flags & FLAG_RMS == 0),
            dbias_uid: Some(v[2]).filter(|_| flags & FLAG_DBIAS != 0),
            dtype: v[26] as i8,
            rows: v[27],
            cols: v[28],
            strides,
            flags,
            splits: v[29],
            config: tile_config_of(Self::FAMILY, &v[14..20]),
        }
    }

    /// `mean.uid` present exactly when `flags` bit 1 is clear and `dbias.uid` exactly when
    /// bit 2 is set (`launch value '<n>' of dispatch '<d>' must be present exactly when
    /// 'flags' bit <b> is clear|set; flags is <f>`); `splits` in [1, min(65535, cdiv(rows,
    /// block_m))].
    fn read_value(r: &ValueReader<'_>, read: &[i64], i: usize) -> PluginResult<i64> {
        let (name, flags) = (Self::VALUES[i].name, read.first().copied().unwrap_or(0));
        let flagged = match name {
            "mean.uid" => Some((FLAG_RMS, false)),
            "dbias.uid" => Some((FLAG_DBIAS, true)),
            _ => None,
        };
        if let Some((bit, when_set)) = flagged {
            let present = r.has(name);
            if present != ((flags & bit != 0) == when_set) {
                let state = if when_set { "set" } else { "clear" };
                return Err(incompatible(format!(
                    "launch value '{name}' of dispatch '{}' must be present exactly when 'flags' bit {bit} is {state}; flags is {flags}",
                    r.dispatch()
                )));
            }
            return if present { r.read(i) } else { Ok(0) };
        }
        if name == "splits" {
            let most = cdiv(read[27], read[15].max(1)).min(65_535);
            return r.int(name, 1, most);
        }
        r.read(i)
    }

    fn present(&self, name: &str) -> bool {
        match name {
            "mean.uid" => self.mean_uid.is_some(),
            _ => self.dbias_uid.is_some(),
        }
    }

    /// `launch values of dispatch '<d>' name the spec variant, whose 'sdyc', 'sxc', 'sdxc',
    /// 'ssc', 'sdsc' and 'sdbc' must be 1`, then the geometry.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        let s = self.strides;
        let dbias = self.flags & FLAG_DBIAS != 0;
        if self.config.spec && !SPEC_ONE.iter().all(|&i| s[i] == 1 || (i == 8 && !dbias)) {
            return Err(incompatible(format!(
                "launch values of dispatch '{}' name the spec variant, whose 'sdyc', 'sxc', 'sdxc', 'ssc', 'sdsc' and 'sdbc' must be 1",
                quote(dispatch)
            )));
        }
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        let mut v = TENSORS.1.to_vec();
        v.extend(["ws_ptr", "rows", "cols"]);
        v.extend(spec_kept(&STRIDES, spec, &SPEC_ONE));
        v.extend([
            "flags",
            "splits",
            "phase",
            "global_scratch",
            "profile_scratch",
        ]);
        v
    }

    /// `rows cols`, the variant's strides, `flags splits phase` (the main launch: phase 1).
    fn scalars(&self) -> Vec<i64> {
        let mut ints = vec![self.rows, self.cols];
        ints.extend(spec_kept(&self.strides, self.config.spec, &SPEC_ONE));
        ints.extend([self.flags, self.splits, 1]);
        ints
    }

    /// The main launch (phase 1, the merge): grid (cdiv(cols, RED_N), 1, 1); `NOT_APPLICABLE`
    /// [`TritonConfig::threads_per_block`]'s text.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        Ok(block_geometry(
            c,
            [cdiv(self.cols, RED_N) as u32, 1, 1],
            threads,
        ))
    }

    fn workspace_bytes(&self) -> u64 {
        NormBwdInputs::workspace_bytes(self)
    }

    /// dy, x, scale, mean, inv, dx, dscale, dbias (null when absent), the workspace, the
    /// integers, two null scratch pointers.
    ///
    /// # Errors
    /// `BAD_PARAM` as [`pointer_args`]; `the workspace is at <addr>; this plan runs norm_bwd,
    /// whose partial sums need a 4-byte aligned device workspace` (also for none bound).
    fn kernel_args(
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: Option<u64>,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let mut out = pointer_args::<Self>(launch, tensors)?;
        let ws = workspace.unwrap_or(0);
        if ws == 0 || ws % 4 != 0 {
            return Err(PluginError::bad_param(format!(
                "the workspace is at {ws:#x}; this plan runs norm_bwd, whose partial sums need a 4-byte aligned device workspace"
            )));
        }
        out.insert(TENSORS.0.len(), KernelArgValue::Pointer(ws));
        Ok(out)
    }

    /// Phase 0 (dx and the partials): the same arguments with `phase` 0 on grid (splits, 1,
    /// 1).
    fn prologue_launches(
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
        let names = Self::param_names(is_spec_values(&launch.launch_values));
        let (Some(phase), Some(LaunchValue::Int(splits))) = (
            names.iter().position(|n| *n == "phase"),
            launch.launch_values.get("splits"),
        ) else {
            return Vec::new();
        };
        if args.len() != names.len() {
            return Vec::new();
        }
        let mut pargs = args.to_vec();
        pargs[phase] = KernelArgValue::I32(0);
        let mut geometry = launch.geometry;
        geometry.grid = [*splits as u32, 1, 1];
        vec![(geometry, pargs)]
    }
}

/// Whether saved launch values name the spec variant.
fn is_spec_values(values: &LaunchValues) -> bool {
    matches!(values.get("spec"), Some(LaunchValue::Int(1)))
}

/// The node's tensors as the pack reads them.
struct NormBwdNode {
    rms: bool,
    dy: i64,
    x: i64,
    scale: i64,
    mean: Option<i64>,
    inv: i64,
    dx: i64,
    dscale: i64,
    dbias: Option<i64>,
    /// `normalized_dim_count` (layernorm; 0 = from the scale).
    ndc: i64,
}

fn read_node(node: &Node<'_>) -> PluginResult<NormBwdNode> {
    if let Some(a) = node.attributes_as_layernorm_backward_attributes() {
        let (Some(mean), Some(inv)) = (a.mean_tensor_uid(), a.inv_variance_tensor_uid()) else {
            return Err(na(
                "the norm_bwd pack needs the layernorm backward's saved mean and inv_variance; statistics recomputed from x with epsilon are the CPU reference engine's",
            ));
        };
        return Ok(NormBwdNode {
            rms: false,
            dy: a.dy_tensor_uid(),
            x: a.x_tensor_uid(),
            scale: a.scale_tensor_uid(),
            mean: Some(mean),
            inv,
            dx: a.dx_tensor_uid(),
            dscale: a.dscale_tensor_uid(),
            dbias: Some(a.dbias_tensor_uid()),
            ndc: a.normalized_dim_count(),
        });
    }
    if let Some(a) = node.attributes_as_rmsnorm_backward_attributes() {
        return Ok(NormBwdNode {
            rms: true,
            dy: a.dy_tensor_uid(),
            x: a.x_tensor_uid(),
            scale: a.scale_tensor_uid(),
            mean: None,
            inv: a.inv_rms_tensor_uid(),
            dx: a.dx_tensor_uid(),
            dscale: a.dscale_tensor_uid(),
            dbias: a.dbias_tensor_uid(),
            ndc: 0,
        });
    }
    Err(na(
        "the norm_bwd pack serves a layernorm_backward or rmsnorm_backward node",
    ))
}

/// Reads the graph (one layernorm or rmsnorm backward node) into launch inputs with a
/// placeholder config.
fn read_graph(graph: &OperationGraph) -> PluginResult<NormBwdInputs> {
    let n = read_node(&one_node(
        graph,
        "norm_bwd",
        "layernorm_backward or rmsnorm_backward",
    )?)?;
    let xt = tensor(graph, n.x)?;
    let dtype = float_dtype(&xt, "norm_bwd", "x")?;
    let st = tensor(graph, n.scale)?;
    let view = NormRows::read("norm_bwd", &xt, &st, n.ndc)?;
    let (rows, cols) = (view.rows, view.cols);
    let row_col = |what: &str, t: &TensorAttributes<'_>| view.row_col(what, t);
    let typed = |what: &str, u: i64, bit| -> PluginResult<(TensorAttributes<'_>, i64)> {
        let t = tensor(graph, u)?;
        let b = f32_bit(&t, dtype, "norm_bwd", what, bit)?;
        Ok((t, b))
    };
    let (dyt, f_dy) = typed("dy", n.dy, FLAG_DY_F32)?;
    let (dxt, f_dx) = typed("dx", n.dx, FLAG_DX_F32)?;
    let (sdyr, sdyc) = row_col("dy", &dyt)?;
    let (sxr, sxc) = row_col("x", &xt)?;
    let (sdxr, sdxc) = row_col("dx", &dxt)?;
    let mut flags = (if n.rms { FLAG_RMS } else { 0 }) | f_dy | f_dx;
    // scale, dscale and dbias: dim 1 on the row axes, x's dims on the normalized axes.
    let affine = |what: &str, t: &TensorAttributes<'_>| view.per_column(what, t, false);
    let (_, f) = typed("scale", n.scale, FLAG_SCALE_F32)?;
    flags |= f;
    let ssc = affine("scale", &st)?;
    let (dst, f) = typed("dscale", n.dscale, FLAG_DSCALE_F32)?;
    flags |= f;
    let sdsc = affine("dscale", &dst)?;
    let mut sdbc = 0;
    if let Some(b) = n.dbias {
        let (dbt, f) = typed("dbias", b, FLAG_DBIAS_F32)?;
        flags |= FLAG_DBIAS | f;
        sdbc = affine("dbias", &dbt)?;
    }
    let stat = |what: &str, u: i64, bit: i64| -> PluginResult<(i64, i64)> {
        let (t, bit) = typed(what, u, bit)?;
        Ok((view.per_row(what, &t)?, bit))
    };
    let mut smr = 0;
    if let Some(u) = n.mean {
        let (c, bit) = stat("mean", u, FLAG_MEAN_F32)?;
        smr = c;
        flags |= bit;
    }
    let what = if n.rms { "inv_rms" } else { "inv_variance" };
    let (sir, bit) = stat(what, n.inv, FLAG_INV_F32)?;
    flags |= bit;
    Ok(NormBwdInputs {
        uids: [n.dy, n.x, n.scale, n.inv, n.dx, n.dscale],
        mean_uid: n.mean,
        dbias_uid: n.dbias,
        dtype: dtype.0,
        rows,
        cols,
        strides: [sdyr, sdyc, sxr, sxc, sdxr, sdxc, ssc, sdsc, sdbc, smr, sir],
        flags,
        splits: 1,
        config: TritonConfig::parse("norm_bwd_f32_generic_8x64x1_g1_w4_s1_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    })
}
