//! Pool forward pack, contract `hipkernel.resample_fwd.dispatch.v1`: one resample forward
//! (pooling) node as ONE launch of the Triton kernel of `engines/kernels/triton/pool_fwd.py`
//! (family `pool_fwd`; the contract is named after the graph operation it serves).
//!
//! Graphs served (else `NOT_APPLICABLE` naming why): one `resample_fwd` node x → y (and the
//! max-pool index), with the CPU reference engine's semantics (`reference/nodes/resample.rs`,
//! `reference/ops/resample.rs`):
//! - modes MAXPOOL (padding skipped, or taking part as +0.0 with `PaddingMode::ZERO_PAD`; any
//!   other padding mode skips it, as the reference does), AVGPOOL_INCLUDE_PADDING (the sum over
//!   the window / the window volume) and AVGPOOL_EXCLUDE_PADDING (the sum / the count of
//!   inputs in the window, 0 when none);
//! - the window scanned in row-major order; for max the first maximum wins (`!found || v >
//!   best`: a later equal value does not replace it, a NaN stays only when it is the first
//!   value scanned, a window without inputs gives −inf and index 0); the index (INT32 or
//!   INT64, y's dims, any strides) is the maximum's row-major position in the window; sums in
//!   f32 in scan order and IEEE division, so every output equals the reference's bit for bit;
//! - x of rank 3, 4 or 5 (1-D, 2-D or 3-D pooling; channels are axis 1), f32, f16 or bf16;
//!   y of x's type or FLOAT, rounded to nearest even; `window`, `stride`, `pre_padding`,
//!   `post_padding` with one entry per spatial dim (windows ≥ 1, strides ≥ 1, paddings ≥ 0;
//!   absent lists the defaults 1, 1, 0, 0), y's spatial dims
//!   `floor((in + pre + post − window) / stride) + 1`; an index only with MAXPOOL, and
//!   `generate_index` only with an index tensor;
//! - x, y and the index in memory (not virtual), any element strides in [0, 2147483647]
//!   (strides of extent-1 axes are taken as 0).
//!
//! Layout and limits: a program computes `block_m × block_n` outputs. With `cl` = 1
//! (channels-last tile order) the rows are the output positions (n, od, oh, ow) and the
//! columns the channels; with `cl` = 0 the rows are (n, c, od, oh) and the columns ow. The
//! pack takes `cl` = 0 when the output has more than one column and x's w stride is below its
//! channel stride or there is one channel (NCHW), else `cl` = 1 (NHWC, and a 1-wide output).
//! Offsets are int64 in the kernel, coordinates int32: every extent, window, stride and
//! padding at most 2147483647, `in + pre + post` at most 2147483647 per spatial dim, a window
//! of at most 16777216 positions (index and divisor exact in f32, as the reference holds
//! them), at most 1073741824 rows and columns and at most 2147483647 programs.
//!
//! Entries: `pool_fwd_<dtype>_<spec|generic>_<bm>x<bn>x1_g1_w4_s1_sh<shared>_ws<warp>`, 1024
//! outputs per program. `spec` = `cl` 1, unit channel strides of x, y and the index (`sxc`,
//! `syc`, `sic`), the channel count and every other stride of x, y and the index multiples of
//! 16, and x, y and the index 16-byte aligned (checked at execute, `BAD_PARAM`): a row's
//! channels are whole aligned 16-byte vectors (NHWC with C % 16 == 0). `generic` = anything
//! else (either tile order).
//!
//! Static rule (`build` without benchmarking): the first applicable entry in pack order (spec
//! before generic), where an entry is applicable only when its `bn` is the column count (the
//! channels with `cl` 1, ow with `cl` 0) rounded up to a power of two and clamped to [16, 128]
//! (a narrower tile wastes no lanes, a wider one no programs): 64 channels take the 16×64
//! tile, 3 channels or an ow of 7 the 64×16 tile, 256 channels the 8×128 tile. With
//! `KNOB_BENCHMARK` the spec and generic entries of that tile are the candidates.
//!
//! Launch values (int): `x.uid`, `y.uid`, `index.uid` (iff `op` bit 4), `dtype` (x's
//! `DataType` value: 1 f32, 2 f16, 3 bf16), `op` in [0, 31] (the kernel's: bits 0–1 the mode, 0
//! MAXPOOL, 1 MAXPOOL with ZERO_PAD, 2 AVGPOOL_INCLUDE_PADDING, 3 AVGPOOL_EXCLUDE_PADDING; 4
//! index written (modes 0 and 1 only); 8 INT64 index (with 4); 16 y is f32 behind 16-bit x),
//! `cl` (0 or 1), `batch channels in_d in_h in_w out_d out_h out_w` in [1, 2147483647], `win_d
//! win_h win_w str_d str_h str_w` in [1, 2147483647], `pad_d pad_h pad_w` (pre-padding) in [0,
//! 2147483647] (a 2-D graph has d extents, window and stride 1 and pad 0; a 1-D graph the h axis
//! too), the element strides `sxn sxc sxd sxh sxw syn syc syd syh syw sin sic sid sih siw` in
//! [0, 2147483647] (an absent axis or index: 0), and the config values `spec` (0 generic, 1
//! spec), `block_m` in [1, 64], `block_n` in [16, 128], `num_warps` in [1, 16], `warp_size` (32
//! or 64), `shared_bytes` in [0, 262144]. Launch: grid (cdiv(rows, block_m) · cdiv(cols,
//! block_n), 1, 1), block num_warps·warp_size, dynamic shared memory `shared_bytes`, workspace
//! 0, scratch pointers null. Kernel arguments: x, y, index (null when absent), batch, channels,
//! in_d, in_h, in_w, out_d, out_h, out_w, win_d, win_h, win_w, str_d, str_h, str_w, pad_d,
//! pad_h, pad_w, the 15 strides, cl, op (`by_value` 4; spec drops sxc, syc, sic and cl), the
//! two scratch pointers.

use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::framework::graph::{dims_strides, na};
use crate::ingestor::framework::triton::packed_triton_handler_methods;
use crate::ingestor::framework::triton::{TritonConfig, is_spec};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops::conv::SpatialAttr;
use hipdnn_backend::ops::resample as table;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::{DataType, Node, PaddingMode, ResampleMode, TensorAttributes};

/// The versioned contract name.
pub const RESAMPLE_FWD_V1: &str = "hipkernel.resample_fwd.dispatch.v1";

/// `op` mode: MAXPOOL, padding skipped.
pub const MODE_MAX: i64 = 0;
/// `op` mode: MAXPOOL, padding taking part as +0.0 (`PaddingMode::ZERO_PAD`).
pub const MODE_MAX_ZERO_PAD: i64 = 1;
/// `op` mode: AVGPOOL_INCLUDE_PADDING.
pub const MODE_AVG_INCLUDE: i64 = 2;
/// `op` mode: AVGPOOL_EXCLUDE_PADDING.
pub const MODE_AVG_EXCLUDE: i64 = 3;
/// `op` bit: the index of each maximum is written.
pub const OP_INDEX: i64 = 4;
/// `op` bit: the index is INT64 (else INT32).
pub const OP_INDEX_I64: i64 = 8;
/// `op` bit: y is f32 (else x's type).
pub const OP_Y_F32: i64 = 16;

/// Shape value names, in kernel order (after the pointers).
const SHAPE: [&str; 8] = [
    "batch", "channels", "in_d", "in_h", "in_w", "out_d", "out_h", "out_w",
];
/// Window value names, in kernel order: window extents, strides, pre-paddings.
const WINDOW: [&str; 9] = [
    "win_d", "win_h", "win_w", "str_d", "str_h", "str_w", "pad_d", "pad_h", "pad_w",
];
/// Stride value names, in kernel order: x, y, index (n, c, d, h, w each).
const STRIDES: [&str; 15] = [
    "sxn", "sxc", "sxd", "sxh", "sxw", "syn", "syc", "syd", "syh", "syw", "sin", "sic", "sid",
    "sih", "siw",
];
/// Strides the spec variant holds constant 1 (indices into [`STRIDES`]): the channel strides.
const SPEC_ONE: [usize; 3] = [1, 6, 11];
/// Config value names.
const CONFIG: [&str; 6] = [
    "spec",
    "block_m",
    "block_n",
    "num_warps",
    "warp_size",
    "shared_bytes",
];
/// The largest window volume (the index and the divisor are exact in f32 up to it).
const MAX_WINDOW: i64 = 1 << 24;
/// The largest row or column count of a launch (int32 coordinates with a tile's overhang).
const MAX_ROWS: i64 = 1 << 30;
/// The narrowest and widest column tile of the family.
const TILE_N: (i64, i64) = (16, 128);

/// Every value name of the contract (sorted).
pub fn value_names() -> Vec<&'static str> {
    let mut v = vec!["x.uid", "y.uid", "index.uid", "dtype", "op", "cl"];
    v.extend(SHAPE);
    v.extend(WINDOW);
    v.extend(STRIDES);
    v.extend(CONFIG);
    v.sort_unstable();
    v
}

/// The kernel parameter names of a variant, in order (with the two scratch pointers).
pub fn param_names(spec: bool) -> Vec<&'static str> {
    let mut v = vec!["x_ptr", "y_ptr", "i_ptr"];
    v.extend(SHAPE);
    v.extend(WINDOW);
    v.extend(
        STRIDES
            .iter()
            .enumerate()
            .filter(|(i, _)| !(spec && SPEC_ONE.contains(i)))
            .map(|(_, n)| *n),
    );
    if !spec {
        v.push("cl");
    }
    v.extend(["op", "global_scratch", "profile_scratch"]);
    v
}

/// The kernel signature of a variant (natural layout, named): pointers `global_buffer` 8,
/// integers `by_value` 4.
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    crate::ingestor::framework::triton::natural_signature(param_names(spec))
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolFwdInputs {
    /// UIDs of x and y.
    pub uids: [i64; 2],
    /// UID of the index (`op` bit 4).
    pub index_uid: Option<i64>,
    /// x's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// The kernel's op code (module docs).
    pub op: i64,
    /// The tile order: true = channels-last (rows are positions, columns channels).
    pub cl: bool,
    /// batch, channels, in_d, in_h, in_w, out_d, out_h, out_w.
    pub shape: [i64; 8],
    /// win_d, win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w.
    pub window: [i64; 9],
    /// sxn sxc sxd sxh sxw, syn syc syd syh syw, sin sic sid sih siw (elements; 0 for an
    /// absent axis or index).
    pub strides: [i64; 15],
    /// Kernel configuration (`block[0]` rows per program, `block[1]` columns).
    pub config: TritonConfig,
}

impl PoolFwdInputs {
    /// Rows and columns of the launch (module docs: the tile order).
    /// Products saturate at `i64::MAX` (refused by the row limit).
    pub fn rows_cols(&self) -> (i64, i64) {
        let [n, c, _, _, _, od, oh, ow] = self.shape;
        let prod = |v: [i64; 4]| v.iter().fold(1i64, |a, b| a.saturating_mul(*b));
        if self.cl {
            (prod([n, od, oh, ow]), c)
        } else {
            (prod([n, c, od, oh]), ow)
        }
    }

    /// Whether the launch satisfies the spec hints (alignment is checked at execute).
    pub fn fits_spec(&self) -> bool {
        let s = self.strides;
        let index = self.index_uid.is_some();
        self.cl
            && s[1] == 1
            && s[6] == 1
            && (!index || s[11] == 1)
            && self.shape[1] % 16 == 0
            && s.iter()
                .enumerate()
                .filter(|(i, _)| !SPEC_ONE.contains(i))
                .all(|(_, v)| v % 16 == 0)
    }

    /// The launch values.
    pub fn to_values(&self) -> LaunchValues {
        let mut v = LaunchValues::new();
        let mut put = |n: &str, x: i64| {
            v.insert(n.to_string(), LaunchValue::Int(x));
        };
        put("x.uid", self.uids[0]);
        put("y.uid", self.uids[1]);
        if let Some(u) = self.index_uid {
            put("index.uid", u);
        }
        put("dtype", i64::from(self.dtype));
        put("op", self.op);
        put("cl", i64::from(self.cl));
        for (n, x) in SHAPE.iter().zip(self.shape) {
            put(n, x);
        }
        for (n, x) in WINDOW.iter().zip(self.window) {
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
    /// `NOT_APPLICABLE` (load prefix): the reader texts (missing, extra or mistyped values,
    /// values out of range); `launch value 'op' of dispatch '<d>' must be a mode 0..3 with bit
    /// 4 (index, modes 0 and 1 only), bit 8 (INT64 index, with bit 4) and bit 16 (f32 y); the
    /// plan holds <op>`; `launch value 'index.uid' of dispatch '<d>' must be present exactly
    /// when 'op' bit 4 is set; op is <op>`; `launch values of dispatch '<d>' name no index,
    /// whose strides 'sin', 'sic', 'sid', 'sih', 'siw' must be 0`; `launch values of dispatch
    /// '<d>' name the spec variant, whose 'cl' must be 1, 'sxc', 'syc' (and with an index
    /// 'sic') 1, 'channels' and the other strides multiples of 16`; `launch values of dispatch
    /// '<d>' give a window of <v> positions; the contract takes at most 16777216`; `launch
    /// values of dispatch '<d>' give (out − 1)·stride + window = <v> on spatial axis <a>; the
    /// contract takes at most 2147483647`; the geometry texts.
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let names = value_names();
        let r = ContractReader::new(dispatch, RESAMPLE_FWD_V1, &names, values)?;
        let d = quote(dispatch);
        let max = i64::from(i32::MAX);
        let uid = |n: &str| r.int(n, i64::MIN, i64::MAX);
        let op = r.int("op", 0, 31)?;
        let index = op & OP_INDEX != 0;
        if (index && op & 3 >= MODE_AVG_INCLUDE) || (!index && op & OP_INDEX_I64 != 0) {
            return Err(incompatible(format!(
                "launch value 'op' of dispatch '{d}' must be a mode 0..3 with bit 4 (index, modes 0 and 1 only), bit 8 (INT64 index, with bit 4) and bit 16 (f32 y); the plan holds {op}"
            )));
        }
        if values.contains_key("index.uid") != index {
            return Err(incompatible(format!(
                "launch value 'index.uid' of dispatch '{d}' must be present exactly when 'op' bit 4 is set; op is {op}"
            )));
        }
        let index_uid = if index { Some(uid("index.uid")?) } else { None };
        let mut shape = [0i64; 8];
        for (i, n) in SHAPE.iter().enumerate() {
            shape[i] = r.int(n, 1, max)?;
        }
        let mut window = [0i64; 9];
        for (i, n) in WINDOW.iter().enumerate() {
            window[i] = r.int(n, if i < 6 { 1 } else { 0 }, max)?;
        }
        let mut strides = [0i64; 15];
        for (i, n) in STRIDES.iter().enumerate() {
            strides[i] = r.int(n, 0, max)?;
        }
        if !index && strides[10..].iter().any(|s| *s != 0) {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name no index, whose strides 'sin', 'sic', 'sid', 'sih', 'siw' must be 0"
            )));
        }
        let config = TritonConfig {
            family: "pool_fwd".into(),
            dtype: String::new(),
            spec: r.int("spec", 0, 1)? == 1,
            channels_first: false,
            transposing: false,
            b_col: false,
            block: [r.int("block_m", 1, 64)?, r.int("block_n", 16, 128)?, 1],
            group_m: 1,
            num_warps: r.int("num_warps", 1, 16)?,
            num_stages: 0,
            shared_bytes: r.int("shared_bytes", 0, 262_144)?,
            warp_size: r.int("warp_size", 32, 64)?,
        };
        let inputs = PoolFwdInputs {
            uids: [uid("x.uid")?, uid("y.uid")?],
            index_uid,
            dtype: r.int("dtype", 1, 3)? as i8,
            op,
            cl: r.int("cl", 0, 1)? == 1,
            shape,
            window,
            strides,
            config,
        };
        if inputs.config.spec && !inputs.fits_spec() {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'cl' must be 1, 'sxc', 'syc' (and with an index 'sic') 1, 'channels' and the other strides multiples of 16"
            )));
        }
        let vol = window[..3].iter().fold(1i64, |a, b| a.saturating_mul(*b));
        if vol > MAX_WINDOW {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' give a window of {vol} positions; the contract takes at most {MAX_WINDOW}"
            )));
        }
        for a in 0..3 {
            let reach = (shape[5 + a] - 1) * window[3 + a] + window[a];
            if reach > max {
                return Err(incompatible(format!(
                    "launch values of dispatch '{d}' give (out − 1)·stride + window = {reach} on spatial axis {a}; the contract takes at most {max}"
                )));
            }
        }
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    /// Grid, block and shared memory (shared by build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'warp_size' and 'num_warps' of dispatch '<d>' give <t>
    /// threads per block; the contract takes warp size 32 or 64 and at most 1024 threads`;
    /// `launch values of dispatch '<d>' give <r> rows and <c> columns in <p> programs; the
    /// contract takes at most 1073741824 rows and columns and 2147483647 programs`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        let (rows, cols) = self.rows_cols();
        let programs = ((rows + c.block[0] - 1) / c.block[0])
            .checked_mul((cols + c.block[1] - 1) / c.block[1])
            .unwrap_or(i64::MAX);
        if rows > MAX_ROWS || cols > MAX_ROWS || programs > i64::from(i32::MAX) {
            return Err(incompatible(format!(
                "launch values of dispatch '{}' give {rows} rows and {cols} columns in {programs} programs; the contract takes at most {MAX_ROWS} rows and columns and {} programs",
                quote(dispatch),
                i32::MAX
            )));
        }
        Ok(LaunchGeometry {
            grid: [programs as u32, 1, 1],
            block: [threads as u32, 1, 1],
            shared_mem_bytes: c.shared_bytes as u32,
        })
    }

    /// The prepared launch: `pointer_uids` x, y (and the index); `scalar_args` the variant's
    /// integers in kernel order.
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let spec = self.config.spec;
        let mut ints = self.shape.to_vec();
        ints.extend(self.window);
        ints.extend(
            self.strides
                .iter()
                .enumerate()
                .filter(|(i, _)| !(spec && SPEC_ONE.contains(i)))
                .map(|(_, v)| *v),
        );
        if !spec {
            ints.push(i64::from(self.cl));
        }
        ints.push(self.op);
        let mut pointer_uids = self.uids.to_vec();
        pointer_uids.extend(self.index_uid);
        Ok(PreparedLaunch {
            dispatch: RESAMPLE_FWD_V1.to_string(),
            launch_values: self.to_values(),
            geometry: self.geometry_for(RESAMPLE_FWD_V1)?,
            workspace_bytes: 0,
            pointer_uids,
            scalar_args: ints
                .into_iter()
                .map(|v| KernelArgValue::I32(v as i32))
                .collect(),
        })
    }
}

/// A spatial list attribute as the reference engine reads it: `n` entries, each at least the
/// table's minimum; the default entry for every dim when absent.
fn spatial(
    attr: SpatialAttr,
    v: Option<flatbuffers::Vector<'_, i64>>,
    n: usize,
) -> PluginResult<Vec<i64>> {
    let Some(v) = v else {
        return Ok(vec![attr.default_entry(); n]);
    };
    let vals: Vec<i64> = v.iter().collect();
    if vals.len() != n || attr.first_bad_entry(&vals).is_some() {
        return Err(na(format!(
            "the pool_fwd pack needs {} with {n} entries (one per spatial dim), each at least {}; the node has {vals:?}",
            attr.name(),
            attr.min()
        )));
    }
    Ok(vals)
}

/// Dims and strides of `t` padded to 5 axes (n, c, d, h, w): missing spatial axes extent 1;
/// the strides of extent-1 axes 0.
fn five(t: &TensorAttributes<'_>) -> ([i64; 5], [i64; 5]) {
    let (d, s) = dims_strides(t);
    let mut dims = [1i64; 5];
    let mut strides = [0i64; 5];
    let lead = 5 - d.len().min(5);
    for (i, (&e, &st)) in d.iter().zip(&s).enumerate().take(5) {
        let a = if i < 2 { i } else { i + lead };
        dims[a] = e;
        strides[a] = if e == 1 { 0 } else { st };
    }
    (dims, strides)
}

fn match_graph(graph: &OperationGraph) -> PluginResult<PoolFwdInputs> {
    let g = graph.graph();
    let nodes: Vec<Node<'_>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.len() != 1 {
        return Err(na(format!(
            "the pool_fwd pack serves graphs of one resample forward node; this graph has {} nodes",
            nodes.len()
        )));
    }
    let Some(a) = nodes[0].attributes_as_resample_fwd_attributes() else {
        return Err(na(format!(
            "the pool_fwd pack serves a resample forward (pooling) node; node '{}' is a {:?} node",
            nodes[0].name().unwrap_or(""),
            nodes[0].attributes_type()
        )));
    };
    let mode = match a.resample_mode() {
        ResampleMode::MAXPOOL if a.padding_mode() == PaddingMode::ZERO_PAD => MODE_MAX_ZERO_PAD,
        ResampleMode::MAXPOOL => MODE_MAX,
        ResampleMode::AVGPOOL_INCLUDE_PADDING => MODE_AVG_INCLUDE,
        ResampleMode::AVGPOOL_EXCLUDE_PADDING => MODE_AVG_EXCLUDE,
        m => {
            return Err(na(format!(
                "the pool_fwd pack serves the resample modes MAXPOOL, AVGPOOL_INCLUDE_PADDING and AVGPOOL_EXCLUDE_PADDING, not {m:?}"
            )));
        }
    };
    let xt = tensor(graph, a.x_tensor_uid())?;
    let yt = tensor(graph, a.y_tensor_uid())?;
    let it = match a.index_tensor_uid() {
        Some(u) => Some(tensor(graph, u)?),
        None => None,
    };
    if a.generate_index() == Some(true) && it.is_none() {
        return Err(na(
            "the pool_fwd pack: generate_index is set but index_tensor_uid is absent",
        ));
    }
    if it.is_some() && mode >= MODE_AVG_INCLUDE {
        return Err(na(format!(
            "the pool_fwd pack writes an index for MAXPOOL only; this node has an index tensor with {:?}",
            a.resample_mode()
        )));
    }
    let dtype = xt.data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype) {
        return Err(na(format!(
            "the pool_fwd pack serves f32, f16 and bf16 x, not {dtype:?}"
        )));
    }
    let mut op = mode;
    match yt.data_type() {
        dt if dt == DataType::FLOAT => {
            if dtype != DataType::FLOAT {
                op |= OP_Y_F32;
            }
        }
        dt if dt == dtype => {}
        dt => {
            return Err(na(format!(
                "the pool_fwd pack needs y of x's type ({dtype:?}) or FLOAT, not {dt:?}"
            )));
        }
    }
    if let Some(t) = &it {
        op |= OP_INDEX;
        match t.data_type() {
            DataType::INT32 => {}
            DataType::INT64 => op |= OP_INDEX_I64,
            dt => {
                return Err(na(format!(
                    "the pool_fwd pack needs an INT32 or INT64 index, not {dt:?}"
                )));
            }
        }
    }
    for t in [Some(&xt), Some(&yt), it.as_ref()].into_iter().flatten() {
        if t.virtual_() {
            return Err(na(format!(
                "the pool_fwd pack needs x, y and the index in memory; tensor uid {} is virtual",
                t.uid()
            )));
        }
    }
    let (xd, xs) = dims_strides(&xt);
    let (yd, ys) = dims_strides(&yt);
    let r = xd.len();
    if !(3..=5).contains(&r) || yd.len() != r {
        return Err(na(format!(
            "the pool_fwd pack serves x and y of rank 3, 4 or 5 (1-D, 2-D or 3-D pooling); x dims {xd:?}, y dims {yd:?}"
        )));
    }
    if xd.iter().any(|d| *d < 1) {
        return Err(na(format!(
            "the pool_fwd pack needs x dims of at least 1; x {xd:?}"
        )));
    }
    let sp = r - 2;
    let win = spatial(SpatialAttr::Window, a.window(), sp)?;
    let stride = spatial(SpatialAttr::Stride, a.stride(), sp)?;
    let pre = spatial(SpatialAttr::PrePadding, a.pre_padding(), sp)?;
    let post = spatial(SpatialAttr::PostPadding, a.post_padding(), sp)?;
    let max = i64::from(i32::MAX);
    let fits = |v: &i64| (0..=max).contains(v);
    if !(xd
        .iter()
        .chain(&win)
        .chain(&stride)
        .chain(&pre)
        .chain(&post))
    .all(fits)
    {
        return Err(na(format!(
            "the pool_fwd pack needs extents, windows, strides and paddings of at most {max}; x {xd:?}, window {win:?}, stride {stride:?}, pre_padding {pre:?}, post_padding {post:?}"
        )));
    }
    if (0..sp).any(|i| xd[i + 2] + pre[i] + post[i] > max) {
        return Err(na(format!(
            "the pool_fwd pack needs in + pre_padding + post_padding at most {max} per spatial dim (int32 coordinates); x {xd:?}, pre_padding {pre:?}, post_padding {post:?}"
        )));
    }
    let vol = win.iter().fold(1i64, |a, b| a.saturating_mul(*b));
    if vol > MAX_WINDOW {
        return Err(na(format!(
            "the pool_fwd pack needs a window of at most {MAX_WINDOW} positions (the index and the divisor exact in f32), not {vol}"
        )));
    }
    let mut want = vec![xd[0], xd[1]];
    for i in 0..sp {
        let o = table::output_extent(xd[i + 2], win[i], pre[i], post[i], stride[i]).map_err(
            |e| {
                na(format!(
                    "the pool_fwd pack: the window does not fit the padded input along spatial dim {i} (in {}, window {}, pre_padding {}, post_padding {}, stride {}): {e}",
                    xd[i + 2],
                    win[i],
                    pre[i],
                    post[i],
                    stride[i]
                ))
            },
        )?;
        want.push(o);
    }
    if yd != want {
        return Err(na(format!(
            "the pool_fwd pack needs y dims {want:?} (floor((in + pre + post − window) / stride) + 1 per spatial dim), not {yd:?}"
        )));
    }
    let idx = match &it {
        Some(t) => {
            let (id, is) = dims_strides(t);
            if id != yd {
                return Err(na(format!(
                    "the pool_fwd pack needs the index with y's dims {yd:?}, not {id:?}"
                )));
            }
            Some(is)
        }
        None => None,
    };
    let all_strides = xs.iter().chain(&ys).chain(idx.iter().flatten());
    if !all_strides.clone().all(fits) {
        return Err(na(format!(
            "the pool_fwd pack needs element strides in [0, {max}]; x strides {xs:?}, y strides {ys:?}{}",
            idx.as_ref()
                .map(|s| format!(", index strides {s:?}"))
                .unwrap_or_default()
        )));
    }
    let (x5, sx) = five(&xt);
    let (y5, sy) = five(&yt);
    let si = it.as_ref().map(|t| five(t).1).unwrap_or([0; 5]);
    let lead = 3 - sp;
    let pad3 = |v: &[i64], fill: i64| -> [i64; 3] {
        let mut o = [fill; 3];
        o[lead..].copy_from_slice(v);
        o
    };
    let (w3, s3, p3) = (pad3(&win, 1), pad3(&stride, 1), pad3(&pre, 0));
    let shape = [x5[0], x5[1], x5[2], x5[3], x5[4], y5[2], y5[3], y5[4]];
    // Channels-first order when the output has more than one column and x's w axis is nearer
    // than its channels (NCHW) or there is one channel.
    let cl = !(shape[7] > 1 && (shape[1] == 1 || sx[4] < sx[1]));
    let mut strides = [0i64; 15];
    strides[..5].copy_from_slice(&sx);
    strides[5..10].copy_from_slice(&sy);
    strides[10..].copy_from_slice(&si);
    let inputs = PoolFwdInputs {
        uids: [a.x_tensor_uid(), a.y_tensor_uid()],
        index_uid: a.index_tensor_uid(),
        dtype: dtype.0,
        op,
        cl,
        shape,
        window: [
            w3[0], w3[1], w3[2], s3[0], s3[1], s3[2], p3[0], p3[1], p3[2],
        ],
        strides,
        config: TritonConfig::parse("pool_fwd_f32_generic_64x16x1_g1_w4_s1_sh0_ws32")
            .unwrap_or_else(|| unreachable!("a valid config name")),
    };
    let (rows, cols) = inputs.rows_cols();
    if rows > MAX_ROWS || cols > MAX_ROWS {
        return Err(na(format!(
            "the pool_fwd pack needs at most {MAX_ROWS} rows and columns; {rows} rows × {cols} columns (x {xd:?}, y {yd:?})"
        )));
    }
    Ok(inputs)
}

/// The column tile the static rule takes for `cols` columns: `cols` rounded up to a power of
/// two, clamped to [16, 128].
pub fn static_block_n(cols: i64) -> i64 {
    let p = (cols.max(1) as u64).next_power_of_two() as i64;
    p.clamp(TILE_N.0, TILE_N.1)
}

/// The v1 handler (saves and restores).
#[derive(Debug, Clone, Copy, Default)]
pub struct PoolFwdHandler;

impl PoolFwdHandler {
    /// The inputs for `kernel` on `graph`, with the static rule applied (module docs).
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: the graph texts; `kernel <k> is not a packed pool_fwd entry`;
    /// `kernel <k> is built for <dtype>, the graph is <dtype>`; `kernel <k> is the spec
    /// variant; …`; `kernel <k>: static rule: …`.
    pub fn inputs_for(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<PoolFwdInputs> {
        let mut inputs = match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, "pool_fwd", inputs.dtype)?;
        if config.spec && !inputs.fits_spec() {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's layout does not satisfy its hints (channels-last order, unit channel strides, the channel count and the other strides of x, y and the index multiples of 16)",
                kernel.describe()
            )));
        }
        let (_, cols) = inputs.rows_cols();
        let want = static_block_n(cols);
        if config.block[1] != want {
            return Err(na(format!(
                "kernel {}: static rule: {cols} {} take the {want}-column tile, not {}",
                kernel.describe(),
                if inputs.cl {
                    "channels"
                } else {
                    "output columns"
                },
                config.block[1]
            )));
        }
        inputs.config = config;
        Ok(inputs)
    }
}

impl DispatchHandler for PoolFwdHandler {
    packed_triton_handler_methods!(RESAMPLE_FWD_V1, "pool_fwd", PoolFwdInputs);

    /// x, y, the index (null when absent), the integers, two null scratch pointers. A spec
    /// launch refuses (BAD_PARAM) x, y or index addresses that are not 16-byte aligned.
    ///
    /// # Errors
    /// `BAD_PARAM` `tensor UID <u> is at <addr>; this plan runs the specialized pool_fwd
    /// kernel, which needs 16-byte aligned x, y and index`; `the variant pack binds no memory
    /// to tensor UID <u>`; `tensor UID <u> is bound to host memory; the ingestor launches on
    /// device memory`.
    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        let spec = is_spec(&launch.launch_values);
        let mut out = Vec::with_capacity(launch.scalar_args.len() + 5);
        for &uid in &launch.pointer_uids {
            let t = tensors.iter().find(|t| t.uid == uid).ok_or_else(|| {
                PluginError::bad_param(format!(
                    "the variant pack binds no memory to tensor UID {uid}"
                ))
            })?;
            let BufferRef::Device { addr, .. } = t.data else {
                return Err(PluginError::bad_param(format!(
                    "tensor UID {uid} is bound to host memory; the ingestor launches on device memory"
                )));
            };
            if spec && addr % 16 != 0 {
                return Err(PluginError::bad_param(format!(
                    "tensor UID {uid} is at {addr:#x}; this plan runs the specialized pool_fwd kernel, which needs 16-byte aligned x, y and index"
                )));
            }
            out.push(KernelArgValue::Pointer(addr));
        }
        if launch.pointer_uids.len() == 2 {
            out.push(KernelArgValue::Pointer(0));
        }
        out.extend_from_slice(&launch.scalar_args);
        out.push(KernelArgValue::Pointer(0));
        out.push(KernelArgValue::Pointer(0));
        Ok(out)
    }
}
