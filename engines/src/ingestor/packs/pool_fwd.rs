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
//! Launch values: [`PoolFwdInputs`]'s `VALUES` (`dtype` x's `DataType` value; `op` the
//! kernel's: bits 0–1 the mode, 0 MAXPOOL, 1 MAXPOOL with ZERO_PAD, 2 AVGPOOL_INCLUDE_PADDING,
//! 3 AVGPOOL_EXCLUDE_PADDING; 4 index written (modes 0 and 1 only); 8 INT64 index (with 4); 16
//! y is f32 behind 16-bit x; `index.uid` present iff `op` bit 4, both checked as soon as `op`
//! is read; `pad_*` the pre-paddings; a 2-D graph has d extents, window and stride 1 and pad
//! 0, a 1-D graph the h axis too; the element strides of an absent axis or index 0; `spec` 0
//! generic, 1 spec). Launch: grid (cdiv(rows, block_m) · cdiv(cols, block_n), 1, 1), block
//! num_warps·warp_size, dynamic shared memory `shared_bytes`, workspace 0, scratch pointers
//! null. Kernel arguments: x, y, index (null when absent), batch, channels, in_d, in_h, in_w,
//! out_d, out_h, out_w, win_d, win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w, the 15
//! strides, cl, op (`by_value` 4; spec drops sxc, syc, sic and cl), the two scratch pointers.

use crate::ingestor::framework::pool::{MAX_WINDOW, SHAPE_WINDOW, WindowAttrs, five, read_pool};
use crate::ingestor::framework::prelude::*;
use hipdnn_schema::graph::PaddingMode;
use hipdnn_schema::graph::ResampleMode;

/// The versioned contract name.
pub const RESAMPLE_FWD_V1: &str = "hipkernel.resample_fwd.dispatch.v1";
crate::triton_handler!(PoolFwdHandler = PoolFwdInputs);

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

/// Stride value names, in kernel order: x, y, index (n, c, d, h, w each).
const STRIDES: [&str; 15] = [
    "sxn", "sxc", "sxd", "sxh", "sxw", "syn", "syc", "syd", "syh", "syw", "sin", "sic", "sid",
    "sih", "siw",
];
/// The kernel arguments between the window and `op` the spec variant holds constant 1, as
/// indices into [`STRIDES`] followed by `cl`: the channel strides and `cl`.
const SPEC_ONE: [usize; 4] = [1, 6, 11, 15];
/// The largest row or column count of a launch (int32 coordinates with a tile's overhang).
const MAX_ROWS: i64 = 1 << 30;
/// The narrowest and widest column tile of the family.
const TILE_N: (i64, i64) = (16, 128);

/// The kernel signature of a variant (natural layout, named): pointers `global_buffer` 8,
/// integers `by_value` 4.
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    PoolFwdInputs::signature(spec)
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
}

impl TritonFamily for PoolFwdInputs {
    const FAMILY: &'static str = "pool_fwd";
    const CONTRACT: &'static str = RESAMPLE_FWD_V1;
    /// `op`, `index.uid`; the shape and window values (in kernel order, the kernel's
    /// arguments of the same names: `SHAPE_WINDOW`); the strides; the tile config; the rest.
    const VALUES: &'static [IntValue] = &concat::<44>(&[
        &[int("op", 0, 31), uid("index.uid")],
        &SHAPE_WINDOW,
        &strides(STRIDES),
        &tile_config(1, (1, 64), (16, 128)),
        &[
            uid("x.uid"),
            uid("y.uid"),
            int("dtype", 1, 3),
            int("cl", 0, 1),
        ],
    ]);
    const POINTERS: &'static [&'static str] = &["x.uid", "y.uid", "index.uid"];
    const ALIGNED: &'static [&'static str] = &["x.uid", "y.uid", "index.uid"];
    const ALIGNED_TEXT: &'static str = "16-byte aligned x, y and index";
    const SPEC_HINTS: &'static str = "channels-last order, unit channel strides, the channel count and the other strides of x, y and the index multiples of 16";
    const OPTIONAL: &'static [&'static str] = &["index.uid"];

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
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
        let dtype = float_dtype(&xt, "pool_fwd", "x")?;
        // y of f32 behind f32 x is no conversion: the bit stays clear.
        let y_f32 = if dtype == DataType::FLOAT {
            0
        } else {
            OP_Y_F32
        };
        let mut op = mode | f32_bit(&yt, dtype, "pool_fwd", "y", y_f32)?;
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
        let view = read_pool(
            "pool_fwd",
            ("x", &xt),
            ("y", &yt),
            &WindowAttrs {
                window: a.window(),
                stride: a.stride(),
                pre_padding: a.pre_padding(),
                post_padding: a.post_padding(),
            },
        )?;
        let (xd, xs) = dims_strides(&xt);
        let (yd, ys) = dims_strides(&yt);
        let max = i64::from(i32::MAX);
        let fits = |v: &i64| (0..=max).contains(v);
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
        let si = it.as_ref().map(|t| five(t).1).unwrap_or([0; 5]);
        let (shape, sx, sy) = (view.shape, view.sx, view.sy);
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
            window: view.window,
            strides,
            config: TritonConfig::restored("pool_fwd", 0, [64, 16, 1], 1, 4, 0, 32),
        };
        let (rows, cols) = inputs.rows_cols();
        if rows > MAX_ROWS || cols > MAX_ROWS {
            return Err(na(format!(
                "the pool_fwd pack needs at most {MAX_ROWS} rows and columns; {rows} rows × {cols} columns (x {xd:?}, y {yd:?})"
            )));
        }
        Ok(inputs)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    fn fits_spec(&self) -> bool {
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

    /// The static rule (module docs).
    fn rule(&mut self, kernel: &KernelDescriptor) -> PluginResult<()> {
        let (_, cols) = self.rows_cols();
        let want = static_block_n(cols);
        let bn = self.config.block[1];
        if bn != want {
            let what = if self.cl {
                "channels"
            } else {
                "output columns"
            };
            return Err(static_rule(
                kernel,
                format_args!("{cols} {what} take the {want}-column tile, not {bn}"),
            ));
        }
        Ok(())
    }

    fn ints(&self) -> Vec<i64> {
        let c = &self.config;
        let mut v = vec![self.op, self.index_uid.unwrap_or(0)];
        v.extend(self.shape);
        v.extend(self.window);
        v.extend(self.strides);
        v.extend(tile_config_ints(c));
        v.extend([self.uids[0], self.uids[1]]);
        v.extend([i64::from(self.dtype), i64::from(self.cl)]);
        v
    }

    fn from_ints(v: &[i64]) -> Self {
        let config = tile_config_of(Self::FAMILY, &v[34..40]);
        let mut strides = [0; 15];
        strides.copy_from_slice(&v[19..34]);
        PoolFwdInputs {
            op: v[0],
            index_uid: (v[0] & OP_INDEX != 0).then_some(v[1]),
            shape: [v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]],
            window: [
                v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17], v[18],
            ],
            strides,
            config,
            uids: [v[40], v[41]],
            dtype: v[42] as i8,
            cl: v[43] == 1,
        }
    }

    fn present(&self, name: &str) -> bool {
        name != "index.uid" || self.index_uid.is_some()
    }

    /// Once `op` is read: `launch value 'op' of dispatch '<d>' must be a mode 0..3 with bit 4
    /// (index, modes 0 and 1 only), bit 8 (INT64 index, with bit 4) and bit 16 (f32 y); the
    /// plan holds <op>`; `launch value 'index.uid' of dispatch '<d>' must be present exactly
    /// when 'op' bit 4 is set; op is <op>`. Once the strides are read: `launch values of
    /// dispatch '<d>' name no index, whose strides 'sin', 'sic', 'sid', 'sih', 'siw' must be 0`.
    fn check_read(dispatch: &str, values: &LaunchValues, read: &[i64]) -> PluginResult<()> {
        let d = quote(dispatch);
        let index = read[0] & OP_INDEX != 0;
        match read {
            &[op]
                if (index && op & 3 >= MODE_AVG_INCLUDE) || (!index && op & OP_INDEX_I64 != 0) =>
            {
                Err(incompatible(format!(
                    "launch value 'op' of dispatch '{d}' must be a mode 0..3 with bit 4 (index, modes 0 and 1 only), bit 8 (INT64 index, with bit 4) and bit 16 (f32 y); the plan holds {op}"
                )))
            }
            &[op] if values.contains_key("index.uid") != index => Err(incompatible(format!(
                "launch value 'index.uid' of dispatch '{d}' must be present exactly when 'op' bit 4 is set; op is {op}"
            ))),
            r if r.len() == 34 && !index && r[29..].iter().any(|s| *s != 0) => {
                Err(incompatible(format!(
                    "launch values of dispatch '{d}' name no index, whose strides 'sin', 'sic', 'sid', 'sih', 'siw' must be 0"
                )))
            }
            _ => Ok(()),
        }
    }

    /// `launch values of dispatch '<d>' name the spec variant, whose 'cl' must be 1, 'sxc',
    /// 'syc' (and with an index 'sic') 1, 'channels' and the other strides multiples of 16`;
    /// `launch values of dispatch '<d>' give a window of <v> positions; the contract takes at
    /// most 16777216`; `launch values of dispatch '<d>' give (out − 1)·stride + window = <v> on
    /// spatial axis <a>; the contract takes at most 2147483647`; the geometry texts.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        let d = quote(dispatch);
        let (shape, window) = (self.shape, self.window);
        if self.config.spec && !self.fits_spec() {
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
            if reach > I32_MAX {
                return Err(incompatible(format!(
                    "launch values of dispatch '{d}' give (out − 1)·stride + window = {reach} on spatial axis {a}; the contract takes at most {I32_MAX}"
                )));
            }
        }
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(spec: bool) -> Vec<&'static str> {
        let mut v = vec!["x_ptr", "y_ptr", "i_ptr"];
        v.extend(SHAPE_WINDOW.iter().map(|d| d.name));
        let args = [&STRIDES[..], &["cl"]].concat();
        v.extend(spec_kept(&args, spec, &SPEC_ONE));
        v.extend(["op", "global_scratch", "profile_scratch"]);
        v
    }

    /// The shape, the window, the variant's strides, cl (generic only), op.
    fn scalars(&self) -> Vec<i64> {
        let mut v = self.shape.to_vec();
        v.extend(self.window);
        let args = [&self.strides[..], &[i64::from(self.cl)]].concat();
        v.extend(spec_kept(&args, self.config.spec, &SPEC_ONE));
        v.push(self.op);
        v
    }

    /// Grid (cdiv(rows, block_m) · cdiv(cols, block_n), 1, 1).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` [`TritonConfig::threads_per_block`]'s text; `launch values of dispatch
    /// '<d>' give <r> rows and <c> columns in <p> programs; the contract takes at most
    /// 1073741824 rows and columns and 2147483647 programs`.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
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
        Ok(block_geometry(c, [programs as u32, 1, 1], threads))
    }
}

/// The column tile the static rule takes for `cols` columns: `cols` rounded up to a power of
/// two, clamped to [16, 128].
pub fn static_block_n(cols: i64) -> i64 {
    let p = (cols.max(1) as u64).next_power_of_two() as i64;
    p.clamp(TILE_N.0, TILE_N.1)
}
