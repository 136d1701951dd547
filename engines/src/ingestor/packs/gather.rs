//! Gather pack, contract `hipkernel.gather.dispatch.v1`: the row gather (embedding lookup)
//! custom op `hipdnn_rs.gather` ([`hipdnn_backend::ops::gather`]) on the Triton kernel of
//! `engines/kernels/triton/gather.py`, ONE launch per node.
//!
//! Graphs served: one `custom_op` node with `custom_op_id` `hipdnn_rs.gather`, inputs
//! `[table, index]`, one output `y` and empty `data`, with the CPU reference engine's
//! semantics (`reference/nodes/gather.rs`): `y[r, :] = table[index[r], :]`, a copy of the
//! table's element bits, a row of zeros for an index outside `[0, V)`.
//!
//! Layout the pack needs (else `NOT_APPLICABLE` naming the tensor): the table f32, f16 or bf16
//! of dims `(V, H)` (leading dims of 1 allowed) with any element strides; the index INT32 or
//! INT64 whose dims collapse to one element stride (dense, or every other element, …); y of the
//! table's type and dims `index.dims ++ [H]`, its leading axes collapsing to one row stride.
//! Every extent and stride at most 2147483647 (element offsets are int64 in the kernel).
//!
//! Entries: `gather_<dtype>_<spec|generic>_<bm>x<bn>x1_g1_w<w>_s1_sh<shared>_ws<warp>`: `bm`
//! rows of `bn` columns per program. `spec` = unit column strides of the table and y, `H` and
//! the row strides of the table and y multiples of 16, 16-byte aligned table and y (checked at
//! execute, `BAD_PARAM`); `generic` = anything else. Static rule: the first applicable entry in
//! pack order (spec before generic) whose column tile fits the row: the 128-column tile for
//! rows of more than 64 elements, the 32-column tile otherwise.
//!
//! Launch values (int): `table.uid`, `index.uid`, `y.uid`, `dtype` (the table's `DataType`
//! value: 1 f32, 2 f16, 3 bf16), `idx64` (0 INT32, 1 INT64 index), `rows` (index elements N)
//! and `cols` (H) in [1, 2147483647], `vocab` (V) in [1, 2147483647], the element strides
//! `stv sth si syr syc` in [0, 2147483647], and the config values `spec` (0 generic, 1 spec),
//! `block_m` in [1, 1024], `block_n` in [16, 1024], `num_warps` in [1, 16], `warp_size` (32 or
//! 64), `shared_bytes` in [0, 262144]. Launch: grid (cdiv(rows, block_m), cdiv(cols, block_n),
//! 1), block num_warps·warp_size, dynamic shared memory `shared_bytes`, workspace 0, scratch
//! pointers null. Kernel arguments: table, index, y, rows, cols, vocab, stv, sth, si, syr, syc,
//! idx64 (`by_value` 4; spec drops sth and syc), the two scratch pointers.

use super::matmul::{TritonConfig, is_spec};
use super::norm_fwd::collapse;
use super::pointwise_v2::dims_strides;
use super::tensor;
use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops::gather::{GATHER_OP_ID, output_dims, table_rows_cols};
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::{DataType, Node};

/// The versioned contract name.
pub const GATHER_V1: &str = "hipkernel.gather.dispatch.v1";

/// Shape value names, in kernel order (after the pointers).
const SHAPE: [&str; 3] = ["rows", "cols", "vocab"];
/// Stride value names, in kernel order.
const STRIDES: [&str; 5] = ["stv", "sth", "si", "syr", "syc"];
/// Strides the spec variant holds constant 1 (indices into [`STRIDES`]).
const SPEC_ONE: [usize; 2] = [1, 4];
/// Config value names.
const CONFIG: [&str; 6] = [
    "spec",
    "block_m",
    "block_n",
    "num_warps",
    "warp_size",
    "shared_bytes",
];

/// Every value name of the contract (sorted).
pub fn value_names() -> Vec<&'static str> {
    let mut v = vec!["table.uid", "index.uid", "y.uid", "dtype", "idx64"];
    v.extend(SHAPE);
    v.extend(STRIDES);
    v.extend(CONFIG);
    v.sort_unstable();
    v
}

/// The kernel parameter names of a variant, in order (with the two scratch pointers).
pub fn param_names(spec: bool) -> Vec<&'static str> {
    let mut v = vec!["t_ptr", "i_ptr", "y_ptr", "N", "H", "V"];
    v.extend(
        STRIDES
            .iter()
            .enumerate()
            .filter(|(i, _)| !(spec && SPEC_ONE.contains(i)))
            .map(|(_, n)| *n),
    );
    v.extend(["idx64", "global_scratch", "profile_scratch"]);
    v
}

/// The kernel signature of a variant (natural layout, named): pointers `global_buffer` 8,
/// integers `by_value` 4.
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    super::natural_signature(param_names(spec))
}

/// The launch inputs of contract v1.
#[derive(Debug, Clone, PartialEq)]
pub struct GatherInputs {
    /// UIDs of the table, the index and y.
    pub uids: [i64; 3],
    /// The table's `DataType` value (1 f32, 2 f16, 3 bf16).
    pub dtype: i8,
    /// Whether the index is INT64 (else INT32).
    pub idx64: bool,
    /// Index elements N (rows of y).
    pub rows: i64,
    /// Row length H (elements).
    pub cols: i64,
    /// Table rows V.
    pub vocab: i64,
    /// stv, sth, si, syr, syc (elements).
    pub strides: [i64; 5],
    /// Kernel configuration (`block[0]` rows, `block[1]` columns per program).
    pub config: TritonConfig,
}

impl GatherInputs {
    /// Whether the launch satisfies the spec hints (alignment is checked at execute).
    pub fn fits_spec(&self) -> bool {
        let s = self.strides;
        s[1] == 1 && s[4] == 1 && self.cols % 16 == 0 && s[0] % 16 == 0 && s[3] % 16 == 0
    }

    /// The launch values.
    pub fn to_values(&self) -> LaunchValues {
        let mut v = LaunchValues::new();
        let mut put = |n: &str, x: i64| {
            v.insert(n.to_string(), LaunchValue::Int(x));
        };
        put("table.uid", self.uids[0]);
        put("index.uid", self.uids[1]);
        put("y.uid", self.uids[2]);
        put("dtype", i64::from(self.dtype));
        put("idx64", i64::from(self.idx64));
        put("rows", self.rows);
        put("cols", self.cols);
        put("vocab", self.vocab);
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
    /// `NOT_APPLICABLE` (load prefix): the reader texts; `launch values of dispatch '<d>' name
    /// the spec variant, whose 'sth' and 'syc' must be 1`; the geometry texts.
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let names = value_names();
        let r = ContractReader::new(dispatch, GATHER_V1, &names, values)?;
        let max = i64::from(i32::MAX);
        let uid = |n: &str| r.int(n, i64::MIN, i64::MAX);
        let mut strides = [0i64; 5];
        for (i, n) in STRIDES.iter().enumerate() {
            strides[i] = r.int(n, 0, max)?;
        }
        let config = TritonConfig {
            family: "gather".into(),
            dtype: String::new(),
            spec: r.int("spec", 0, 1)? == 1,
            channels_first: false,
            transposing: false,
            b_col: false,
            block: [r.int("block_m", 1, 1024)?, r.int("block_n", 16, 1024)?, 1],
            group_m: 1,
            num_warps: r.int("num_warps", 1, 16)?,
            num_stages: 0,
            shared_bytes: r.int("shared_bytes", 0, 262_144)?,
            warp_size: r.int("warp_size", 32, 64)?,
        };
        let inputs = GatherInputs {
            uids: [uid("table.uid")?, uid("index.uid")?, uid("y.uid")?],
            dtype: r.int("dtype", 1, 3)? as i8,
            idx64: r.int("idx64", 0, 1)? == 1,
            rows: r.int("rows", 1, max)?,
            cols: r.int("cols", 1, max)?,
            vocab: r.int("vocab", 1, max)?,
            strides,
            config,
        };
        if inputs.config.spec && (strides[1] != 1 || strides[4] != 1) {
            return Err(incompatible(format!(
                "launch values of dispatch '{}' name the spec variant, whose 'sth' and 'syc' must be 1",
                quote(dispatch)
            )));
        }
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    /// Grid, block and shared memory (shared by build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'warp_size' and 'num_warps' of dispatch '<d>' give <t>
    /// threads per block; the contract takes warp size 32 or 64 and at most 1024 threads`;
    /// `launch values 'cols' and 'block_n' of dispatch '<d>' give <n> column blocks; the grid
    /// takes at most 65535`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.num_warps * c.warp_size;
        if !(c.warp_size == 32 || c.warp_size == 64) || threads > 1024 {
            return Err(incompatible(format!(
                "launch values 'warp_size' and 'num_warps' of dispatch '{}' give {threads} threads per block; the contract takes warp size 32 or 64 and at most 1024 threads",
                quote(dispatch)
            )));
        }
        let col_blocks = (self.cols + c.block[1] - 1) / c.block[1];
        if col_blocks > 65_535 {
            return Err(incompatible(format!(
                "launch values 'cols' and 'block_n' of dispatch '{}' give {col_blocks} column blocks; the grid takes at most 65535",
                quote(dispatch)
            )));
        }
        Ok(LaunchGeometry {
            grid: [
                ((self.rows + c.block[0] - 1) / c.block[0]) as u32,
                col_blocks as u32,
                1,
            ],
            block: [threads as u32, 1, 1],
            shared_mem_bytes: c.shared_bytes as u32,
        })
    }

    /// The prepared launch: `pointer_uids` table, index, y; `scalar_args` the variant's
    /// integers in kernel order.
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let spec = self.config.spec;
        let mut ints = vec![self.rows, self.cols, self.vocab];
        ints.extend(
            self.strides
                .iter()
                .enumerate()
                .filter(|(i, _)| !(spec && SPEC_ONE.contains(i)))
                .map(|(_, v)| *v),
        );
        ints.push(i64::from(self.idx64));
        Ok(PreparedLaunch {
            dispatch: GATHER_V1.to_string(),
            launch_values: self.to_values(),
            geometry: self.geometry_for(GATHER_V1)?,
            workspace_bytes: 0,
            pointer_uids: self.uids.to_vec(),
            scalar_args: ints
                .into_iter()
                .map(|v| KernelArgValue::I32(v as i32))
                .collect(),
        })
    }
}

fn na(msg: impl Into<String>) -> PluginError {
    PluginError::not_applicable(msg.into())
}

fn match_graph(graph: &OperationGraph) -> PluginResult<GatherInputs> {
    let g = graph.graph();
    let nodes: Vec<Node<'_>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.len() != 1 {
        return Err(na(format!(
            "the gather pack serves graphs of one {GATHER_OP_ID} node; this graph has {} nodes",
            nodes.len()
        )));
    }
    let Some(a) = nodes[0].attributes_as_custom_op_attributes() else {
        return Err(na(format!(
            "the gather pack serves a {GATHER_OP_ID} custom op node"
        )));
    };
    let id = a.custom_op_id().unwrap_or("");
    if id != GATHER_OP_ID {
        return Err(na(format!(
            "the gather pack serves custom_op_id '{GATHER_OP_ID}', not '{id}'"
        )));
    }
    let ins: Vec<i64> = a
        .input_tensor_uids()
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let outs: Vec<i64> = a
        .output_tensor_uids()
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let data = a.data().map(|d| d.len()).unwrap_or(0);
    if ins.len() != 2 || outs.len() != 1 || data != 0 {
        return Err(na(format!(
            "the gather pack needs two inputs (table, index), one output and no data; the node has {} inputs, {} outputs and {data} bytes of data",
            ins.len(),
            outs.len()
        )));
    }
    let tt = tensor(graph, ins[0])?;
    let it = tensor(graph, ins[1])?;
    let yt = tensor(graph, outs[0])?;
    let dtype = tt.data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype) {
        return Err(na(format!(
            "the gather pack serves f32, f16 and bf16 tables, not {dtype:?}"
        )));
    }
    let idx64 = match it.data_type() {
        DataType::INT32 => false,
        DataType::INT64 => true,
        dt => {
            return Err(na(format!(
                "the gather pack needs an INT32 or INT64 index, not {dt:?}"
            )));
        }
    };
    if yt.data_type() != dtype {
        return Err(na(format!(
            "the gather pack needs y of the table's type ({dtype:?}), not {:?}",
            yt.data_type()
        )));
    }
    let (td, ts) = dims_strides(&tt);
    let (id, is) = dims_strides(&it);
    let (yd, ys) = dims_strides(&yt);
    let max = i64::from(i32::MAX);
    let fits = |v: i64| (0..=max).contains(&v);
    let (Some((vocab, cols)), Some(want)) = (table_rows_cols(&td), output_dims(&id, &td)) else {
        return Err(na(format!(
            "the gather pack needs table dims (V, H) (every leading dim 1); table {td:?}"
        )));
    };
    if yd != want {
        return Err(na(format!(
            "the gather pack needs y dims {want:?} (index dims, then H); y {yd:?}"
        )));
    }
    let rows = id.iter().try_fold(1i64, |a, v| a.checked_mul(*v));
    let (stv, sth) = (ts[ts.len() - 2], ts[ts.len() - 1]);
    let si = collapse(&id, &is);
    let r = yd.len();
    let syr = collapse(&yd[..r - 1], &ys[..r - 1]);
    match (rows, si, syr) {
        (Some(rows), Some(si), Some(syr))
            if (1..=max).contains(&rows)
                && (1..=max).contains(&cols)
                && (1..=max).contains(&vocab)
                && [stv, sth, si, syr, ys[r - 1]].iter().all(|v| fits(*v)) =>
        {
            Ok(GatherInputs {
                uids: [ins[0], ins[1], outs[0]],
                dtype: dtype.0,
                idx64,
                rows,
                cols,
                vocab,
                strides: [stv, sth, si, syr, ys[r - 1]],
                config: TritonConfig::parse("gather_f32_generic_8x128x1_g1_w4_s1_sh0_ws32")
                    .unwrap_or_else(|| unreachable!("a valid config name")),
            })
        }
        _ => Err(na(format!(
            "the gather pack needs the index dims to collapse to one stride and y's leading axes to one row stride, every extent in [1, 2147483647] and stride in [0, 2147483647]; index dims {id:?} strides {is:?}, y dims {yd:?} strides {ys:?}, table strides {ts:?}"
        ))),
    }
}

/// The v1 handler (saves and restores).
#[derive(Debug, Clone, Copy, Default)]
pub struct GatherHandler;

impl GatherHandler {
    /// The inputs for `kernel` on `graph`, with the static rule applied (module docs).
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: the graph texts; `kernel <k> is not a packed gather entry`;
    /// `kernel <k> is built for <dtype>, the graph is <dtype>`; `kernel <k> is the spec
    /// variant; …`; `kernel <k>: static rule: …`.
    pub fn inputs_for(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<GatherInputs> {
        let mut inputs = match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, "gather", inputs.dtype)?;
        if config.spec && !inputs.fits_spec() {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's layout does not satisfy its hints (unit column strides of the table and y, H and their row strides multiples of 16)",
                kernel.describe()
            )));
        }
        let bn = config.block[1];
        if (bn > 64) != (inputs.cols > 64) {
            return Err(na(format!(
                "kernel {}: static rule: rows of {} elements take the {}-column tile, this entry has {bn} columns",
                kernel.describe(),
                inputs.cols,
                if inputs.cols > 64 { 128 } else { 32 }
            )));
        }
        inputs.config = config;
        Ok(inputs)
    }
}

impl DispatchHandler for GatherHandler {
    packed_triton_handler_methods!(GATHER_V1, "gather", GatherInputs);

    /// table, index, y, the integers, two null scratch pointers. A spec launch refuses
    /// (BAD_PARAM) table or y addresses that are not 16-byte aligned.
    ///
    /// # Errors
    /// `BAD_PARAM` `tensor UID <u> is at <addr>; this plan runs the specialized gather kernel,
    /// which needs a 16-byte aligned table and y`; `the variant pack binds no memory to tensor
    /// UID <u>`; `tensor UID <u> is bound to host memory; the ingestor launches on device
    /// memory`.
    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        let spec = is_spec(&launch.launch_values);
        let mut out = Vec::with_capacity(launch.scalar_args.len() + 5);
        for name in ["table.uid", "index.uid", "y.uid"] {
            let Some(LaunchValue::Int(uid)) = launch.launch_values.get(name) else {
                return Err(PluginError::bad_param(format!(
                    "the plan's launch values hold no '{name}'"
                )));
            };
            let uid = *uid;
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
            if spec && name != "index.uid" && addr % 16 != 0 {
                return Err(PluginError::bad_param(format!(
                    "tensor UID {uid} is at {addr:#x}; this plan runs the specialized gather kernel, which needs a 16-byte aligned table and y"
                )));
            }
            out.push(KernelArgValue::Pointer(addr));
        }
        out.extend_from_slice(&launch.scalar_args);
        out.push(KernelArgValue::Pointer(0));
        out.push(KernelArgValue::Pointer(0));
        Ok(out)
    }
}
