//! Pool backward pack, contract `hipkernel.resample_bwd.dispatch.v1`: one resample backward
//! (pooling backward) node as ONE launch of the Triton kernel of
//! `engines/kernels/triton/pool_bwd.py` (family `pool_bwd`; the contract is named after the
//! graph operation it serves), deterministic (each dx element gathers its shares in a fixed
//! order; no atomics).
//!
//! Graphs served (else `NOT_APPLICABLE` naming why): one `resample_bwd` node dy → dx with the
//! CPU reference engine's semantics (`reference/ops/resample.rs` `pool_backward`): MAXPOOL
//! through the forward's index (INT32 or INT64, dy's dims, any strides; dy goes to the window
//! position the index names, a position in the padding takes nothing; `padding_mode` changes
//! nothing), AVGPOOL_INCLUDE_PADDING (dy ÷ the window volume to every input position of the
//! window) and AVGPOOL_EXCLUDE_PADDING (dy ÷ the count of input positions); dx of rank 3, 4 or
//! 5 (1-D to 3-D pooling), f32, f16 or bf16, dy of dx's type with the forward's output dims;
//! dx, dy and the index in memory, any element strides in [0, 2147483647]. Each dx element
//! sums its shares in f32 in another order than the reference (the GPU test holds it to the
//! backward tolerances). Refused: MAXPOOL without an index (the node carries no x; the CPU
//! engine refuses it too), an index with average pooling, other modes. An index element that
//! names no position of its window (the CPU engine's `BAD_PARAM` at execute) adds nothing here.
//! Window limits as the forward pack's ([`crate::ingestor::framework::pool`]); at most
//! 2147483647 dx elements.
//!
//! Entries: `pool_bwd_<dtype>_generic_1024x1x1_g1_w4_s1_sh<shared>_ws<warp>`: 1024 dx
//! elements per program, in (n, d, h, w, c) order when `cl` is 1 (the pack's choice when dx's
//! channel stride is below its w stride, or w is 1), else (n, c, d, h, w). One entry per data
//! type: the static rule takes it.
//!
//! Launch values: [`PoolBwdInputs`]'s `VALUES` (`op`: bits 0–1 the mode, 0 MAXPOOL, 2
//! AVGPOOL_INCLUDE_PADDING, 3 AVGPOOL_EXCLUDE_PADDING; bit 3 (8) INT64 index; `index.uid`
//! present iff the mode is 0; a 2-D graph has d extents, window and stride 1 and pad 0, a 1-D
//! graph the h axis too; the strides of extent-1 axes and of an absent index 0). Launch: grid
//! (cdiv(elements, block_m), 1, 1), block num_warps·warp_size, dynamic shared memory
//! `shared_bytes`, workspace 0. Kernel arguments: dx, dy, index (null when absent), the 17
//! shape and window values, the 15 strides (dx, dy, index over n, c, d, h, w), cl, op
//! (`by_value` 4), the two scratch pointers.

use crate::ingestor::framework::pool::{SHAPE_WINDOW, WindowAttrs, five, read_pool};
use crate::ingestor::framework::prelude::*;
use hipdnn_schema::graph::ResampleMode;

/// The versioned contract name.
pub const RESAMPLE_BWD_V1: &str = "hipkernel.resample_bwd.dispatch.v1";
crate::triton_handler!(PoolBwdHandler = PoolBwdInputs);

/// `op` mode: MAXPOOL through the index.
pub const MODE_MAX: i64 = 0;
/// `op` mode: AVGPOOL_INCLUDE_PADDING.
pub const MODE_AVG_INCLUDE: i64 = 2;
/// `op` mode: AVGPOOL_EXCLUDE_PADDING.
pub const MODE_AVG_EXCLUDE: i64 = 3;
/// `op` bit: the index is INT64 (else INT32).
pub const OP_INDEX_I64: i64 = 8;

/// Stride value names, in kernel order: dx, dy, index (n, c, d, h, w each).
const STRIDES: [&str; 15] = [
    "sxn", "sxc", "sxd", "sxh", "sxw", "syn", "syc", "syd", "syh", "syw", "sin", "sic", "sid",
    "sih", "siw",
];

/// The kernel signature (natural layout, named): pointers `global_buffer` 8, integers
/// `by_value` 4.
pub fn signature() -> Vec<KernelArgument> {
    PoolBwdInputs::signature(false)
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolBwdInputs {
    /// UIDs of dx and dy.
    pub uids: [i64; 2],
    /// UID of the index (mode 0).
    pub index_uid: Option<i64>,
    /// dx's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// The kernel's op code (module docs).
    pub op: i64,
    /// The element order: true = (n, d, h, w, c).
    pub cl: bool,
    /// batch, channels, in_d, in_h, in_w, out_d, out_h, out_w (in = dx's, out = dy's).
    pub shape: [i64; 8],
    /// win_d, win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w.
    pub window: [i64; 9],
    /// sxn..sxw (dx), syn..syw (dy), sin..siw (index; 0 when absent).
    pub strides: [i64; 15],
    /// Kernel configuration (`block[0]` dx elements per program).
    pub config: TritonConfig,
}

impl PoolBwdInputs {
    /// dx elements (saturating).
    pub fn elements(&self) -> i64 {
        self.shape[..5]
            .iter()
            .fold(1i64, |a, b| a.saturating_mul(*b))
    }
}

impl TritonFamily for PoolBwdInputs {
    const FAMILY: &'static str = "pool_bwd";
    const CONTRACT: &'static str = RESAMPLE_BWD_V1;
    /// `op`, `index.uid`; the shape and window values (kernel order); the strides; the tile
    /// config; the rest.
    const VALUES: &'static [IntValue] = &concat::<44>(&[
        &[int("op", 0, 11), uid("index.uid")],
        &SHAPE_WINDOW,
        &strides(STRIDES),
        &tile_config(0, (1, 4096), (1, 1)),
        &[
            uid("dx.uid"),
            uid("dy.uid"),
            int("dtype", 1, 3),
            int("cl", 0, 1),
        ],
    ]);
    const POINTERS: &'static [&'static str] = &["dx.uid", "dy.uid", "index.uid"];
    const ALIGNED: &'static [&'static str] = &[];
    const ALIGNED_TEXT: &'static str = "";
    const OPTIONAL: &'static [&'static str] = &["index.uid"];

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        let n = one_node(graph, "pool_bwd", "resample backward")?;
        let Some(a) = n.attributes_as_resample_bwd_attributes() else {
            return Err(na(format!(
                "the pool_bwd pack serves a resample backward (pooling backward) node; node '{}' is a {:?} node",
                n.name().unwrap_or(""),
                n.attributes_type()
            )));
        };
        let mode = match a.resample_mode() {
            ResampleMode::MAXPOOL => MODE_MAX,
            ResampleMode::AVGPOOL_INCLUDE_PADDING => MODE_AVG_INCLUDE,
            ResampleMode::AVGPOOL_EXCLUDE_PADDING => MODE_AVG_EXCLUDE,
            m => {
                return Err(na(format!(
                    "the pool_bwd pack serves the resample modes MAXPOOL, AVGPOOL_INCLUDE_PADDING and AVGPOOL_EXCLUDE_PADDING, not {m:?}"
                )));
            }
        };
        let dxt = tensor(graph, a.dx_tensor_uid())?;
        let dyt = tensor(graph, a.dy_tensor_uid())?;
        let it = match a.index_tensor_uid() {
            Some(u) => Some(tensor(graph, u)?),
            None => None,
        };
        let mut op = mode;
        match (&it, mode) {
            (None, MODE_MAX) => {
                return Err(na(
                    "the pool_bwd pack needs the forward's index for MAXPOOL (the node carries no x)",
                ));
            }
            (Some(_), m) if m != MODE_MAX => {
                return Err(na(format!(
                    "the pool_bwd pack reads an index for MAXPOOL only; this node has an index tensor with {:?}",
                    a.resample_mode()
                )));
            }
            (Some(t), _) => match t.data_type() {
                DataType::INT32 => {}
                DataType::INT64 => op |= OP_INDEX_I64,
                dt => {
                    return Err(na(format!(
                        "the pool_bwd pack needs an INT32 or INT64 index, not {dt:?}"
                    )));
                }
            },
            _ => {}
        }
        let dtype = float_dtype(&dxt, "pool_bwd", "dx")?;
        if dyt.data_type() != dtype {
            return Err(na(format!(
                "the pool_bwd pack needs dy of dx's type ({dtype:?}), not {:?}",
                dyt.data_type()
            )));
        }
        for t in [Some(&dxt), Some(&dyt), it.as_ref()].into_iter().flatten() {
            if t.virtual_() {
                return Err(na(format!(
                    "the pool_bwd pack needs dx, dy and the index in memory; tensor uid {} is virtual",
                    t.uid()
                )));
            }
        }
        let view = read_pool(
            "pool_bwd",
            ("dx", &dxt),
            ("dy", &dyt),
            &WindowAttrs {
                window: a.window(),
                stride: a.stride(),
                pre_padding: a.pre_padding(),
                post_padding: a.post_padding(),
            },
        )?;
        let (yd, _) = dims_strides(&dyt);
        let si = match &it {
            Some(t) => {
                let (id, _) = dims_strides(t);
                if id != yd {
                    return Err(na(format!(
                        "the pool_bwd pack needs the index with dy's dims {yd:?}, not {id:?}"
                    )));
                }
                five(t).1
            }
            None => [0; 5],
        };
        let max = i64::from(i32::MAX);
        let all = view.sx.iter().chain(&view.sy).chain(&si);
        if !all.clone().all(|s| (0..=max).contains(s)) {
            return Err(na(format!(
                "the pool_bwd pack needs element strides in [0, {max}]; dx {:?}, dy {:?}, index {si:?} (n, c, d, h, w)",
                view.sx, view.sy
            )));
        }
        let mut strides = [0i64; 15];
        strides[..5].copy_from_slice(&view.sx);
        strides[5..10].copy_from_slice(&view.sy);
        strides[10..].copy_from_slice(&si);
        let (sx, shape) = (view.sx, view.shape);
        let inputs = PoolBwdInputs {
            uids: [a.dx_tensor_uid(), a.dy_tensor_uid()],
            index_uid: a.index_tensor_uid(),
            dtype: dtype.0,
            op,
            cl: shape[1] > 1 && (shape[4] == 1 || sx[1] < sx[4]),
            shape,
            window: view.window,
            strides,
            config: TritonConfig::restored("pool_bwd", 0, [1024, 1, 1], 1, 4, 0, 32),
        };
        if inputs.elements() > max {
            return Err(na(format!(
                "the pool_bwd pack needs at most {max} dx elements, not {}",
                inputs.elements()
            )));
        }
        Ok(inputs)
    }

    fn config_mut(&mut self) -> &mut TritonConfig {
        &mut self.config
    }

    fn ints(&self) -> Vec<i64> {
        let mut v = vec![self.op, self.index_uid.unwrap_or(0)];
        v.extend(self.shape);
        v.extend(self.window);
        v.extend(self.strides);
        v.extend(tile_config_ints(&self.config));
        v.extend([self.uids[0], self.uids[1]]);
        v.extend([i64::from(self.dtype), i64::from(self.cl)]);
        v
    }

    fn from_ints(v: &[i64]) -> Self {
        let mut strides = [0; 15];
        strides.copy_from_slice(&v[19..34]);
        PoolBwdInputs {
            op: v[0],
            index_uid: (v[0] & 3 == MODE_MAX).then_some(v[1]),
            shape: std::array::from_fn(|i| v[2 + i]),
            window: std::array::from_fn(|i| v[10 + i]),
            strides,
            config: tile_config_of(Self::FAMILY, &v[34..40]),
            uids: [v[40], v[41]],
            dtype: v[42] as i8,
            cl: v[43] == 1,
        }
    }

    fn present(&self, name: &str) -> bool {
        name != "index.uid" || self.index_uid.is_some()
    }

    /// Once `op` is read: `launch value 'op' of dispatch '<d>' must be a mode 0, 2 or 3 with
    /// bit 8 (INT64 index) only for mode 0; the plan holds <op>`; `launch value 'index.uid' of
    /// dispatch '<d>' must be present exactly when the mode is 0; op is <op>`.
    fn check_read(dispatch: &str, values: &LaunchValues, read: &[i64]) -> PluginResult<()> {
        let d = quote(dispatch);
        let &[op] = read else { return Ok(()) };
        let max = op & 3 == MODE_MAX;
        if op & 3 == 1 || op & 4 != 0 || (!max && op & OP_INDEX_I64 != 0) {
            return Err(incompatible(format!(
                "launch value 'op' of dispatch '{d}' must be a mode 0, 2 or 3 with bit 8 (INT64 index) only for mode 0; the plan holds {op}"
            )));
        }
        if values.contains_key("index.uid") != max {
            return Err(incompatible(format!(
                "launch value 'index.uid' of dispatch '{d}' must be present exactly when the mode is 0; op is {op}"
            )));
        }
        Ok(())
    }

    /// The geometry texts.
    fn check(&self, dispatch: &str) -> PluginResult<()> {
        self.geometry(dispatch).map(|_| ())
    }

    fn param_names(_spec: bool) -> Vec<&'static str> {
        let mut v = vec!["dx_ptr", "dy_ptr", "i_ptr"];
        v.extend(SHAPE_WINDOW.iter().map(|d| d.name));
        v.extend(STRIDES);
        v.extend(["cl", "op", "global_scratch", "profile_scratch"]);
        v
    }

    /// The shape, the window, the strides, cl, op.
    fn scalars(&self) -> Vec<i64> {
        let mut v = self.shape.to_vec();
        v.extend(self.window);
        v.extend(self.strides);
        v.extend([i64::from(self.cl), self.op]);
        v
    }

    /// Grid (cdiv(dx elements, block_m), 1, 1).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` [`TritonConfig::threads_per_block`]'s text; `launch values of dispatch
    /// '<d>' give <n> dx elements; the contract takes at most 2147483647`.
    fn geometry(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        let n = self.elements();
        if n > I32_MAX {
            return Err(incompatible(format!(
                "launch values of dispatch '{}' give {n} dx elements; the contract takes at most {I32_MAX}",
                quote(dispatch)
            )));
        }
        let programs = (n + c.block[0] - 1) / c.block[0];
        Ok(block_geometry(c, [programs as u32, 1, 1], threads))
    }
}
