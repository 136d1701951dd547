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
//! Launch values (int unless said): `x.uid`, `scale.uid`, `bias.uid` (iff `flags` bit 2),
//! `y.uid`, `mean.uid` (iff bit 4), `inv.uid` (iff bit 8), `dtype` (x's `DataType` value: 1
//! f32, 2 f16, 3 bf16), `rows`, `cols` in [1, 2147483647], the element strides `sxr sxc syr
//! syc ssc sbc smr sir` in [0, 2147483647] (an absent tensor's stride 0), `flags` in [0, 255]
//! (the kernel's: 1 rmsnorm, 2 bias, 4 mean, 8 inv, 16 scale f32, 32 bias f32, 64 y f32, 128
//! statistics f32; rmsnorm has no mean), `epsilon` (float, an f32 value), and the config values
//! `spec` (0 generic, 1 spec), `block_m` in [1, 64], `block_n` in [16, 8192], `num_warps` in
//! [1, 16], `warp_size` (32 or 64), `shared_bytes` in [0, 262144]. Launch: grid
//! (cdiv(rows, block_m), 1, 1), block num_warps·warp_size, dynamic shared memory
//! `shared_bytes`, workspace 0, scratch pointers null. Kernel arguments: x, scale, bias (null
//! when absent), y, mean, inv (null when absent), rows, cols, sxr, sxc, syr, syc, ssc, sbc, smr,
//! sir, flags (`by_value` 4; spec drops sxc, syc, ssc, sbc), epsilon (`by_value` 4, f32), the
//! two scratch pointers.

use crate::ingestor::descriptor::KernelDescriptor;
use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::framework::graph::tensor;
use crate::ingestor::framework::graph::{collapse, dims_strides, na};
use crate::ingestor::framework::triton::packed_triton_handler_methods;
use crate::ingestor::framework::triton::{TritonConfig, is_spec};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::{DataType, Node, TensorAttributes};
use hipdnn_schema::tensor_value::{TensorValue, read_tensor_value};

/// The versioned contract name.
pub const NORM_FWD_V1: &str = "hipkernel.norm_fwd.dispatch.v1";

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

/// Shape value names, in kernel order (after the pointers).
const SHAPE: [&str; 2] = ["rows", "cols"];
/// Stride value names, in kernel order.
const STRIDES: [&str; 8] = ["sxr", "sxc", "syr", "syc", "ssc", "sbc", "smr", "sir"];
/// Strides the spec variant holds constant 1 (indices into [`STRIDES`]).
const SPEC_ONE: [usize; 4] = [1, 3, 4, 5];
/// Config value names.
const CONFIG: [&str; 6] = [
    "spec",
    "block_m",
    "block_n",
    "num_warps",
    "warp_size",
    "shared_bytes",
];
/// Optional tensor value names with the `flags` bit that makes each present.
const OPTIONAL: [(&str, i64); 3] = [
    ("bias.uid", FLAG_BIAS),
    ("mean.uid", FLAG_MEAN),
    ("inv.uid", FLAG_INV),
];

/// Every value name of the contract (sorted).
pub fn value_names() -> Vec<&'static str> {
    let mut v = vec![
        "x.uid",
        "scale.uid",
        "bias.uid",
        "y.uid",
        "mean.uid",
        "inv.uid",
        "dtype",
        "flags",
        "epsilon",
    ];
    v.extend(SHAPE);
    v.extend(STRIDES);
    v.extend(CONFIG);
    v.sort_unstable();
    v
}

/// The kernel parameter names of a variant, in order (with the two scratch pointers).
pub fn param_names(spec: bool) -> Vec<&'static str> {
    let mut v = vec![
        "x_ptr",
        "scale_ptr",
        "bias_ptr",
        "y_ptr",
        "mean_ptr",
        "inv_ptr",
        "rows",
        "cols",
    ];
    v.extend(
        STRIDES
            .iter()
            .enumerate()
            .filter(|(i, _)| !(spec && SPEC_ONE.contains(i)))
            .map(|(_, n)| *n),
    );
    v.extend(["flags", "eps", "global_scratch", "profile_scratch"]);
    v
}

/// The kernel signature of a variant (natural layout, named): pointers `global_buffer` 8,
/// integers and epsilon `by_value` 4.
pub fn signature(spec: bool) -> Vec<KernelArgument> {
    crate::ingestor::framework::triton::natural_signature(param_names(spec))
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

impl NormFwdInputs {
    /// Whether the launch satisfies the spec hints (alignment is checked at execute).
    pub fn fits_spec(&self) -> bool {
        let s = self.strides;
        s[1] == 1
            && s[3] == 1
            && s[4] == 1
            && (self.bias_uid.is_none() || s[5] == 1)
            && self.cols % 16 == 0
            && s[0] % 16 == 0
            && s[2] % 16 == 0
    }

    /// The launch values.
    pub fn to_values(&self) -> LaunchValues {
        let mut v = LaunchValues::new();
        let mut put = |n: &str, x: i64| {
            v.insert(n.to_string(), LaunchValue::Int(x));
        };
        put("x.uid", self.uids[0]);
        put("scale.uid", self.uids[1]);
        put("y.uid", self.uids[2]);
        for (n, u) in [
            ("bias.uid", self.bias_uid),
            ("mean.uid", self.mean_uid),
            ("inv.uid", self.inv_uid),
        ] {
            if let Some(u) = u {
                put(n, u);
            }
        }
        put("dtype", i64::from(self.dtype));
        put("rows", self.rows);
        put("cols", self.cols);
        for (n, x) in STRIDES.iter().zip(self.strides) {
            put(n, x);
        }
        put("flags", self.flags);
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
        v.insert(
            "epsilon".to_string(),
            LaunchValue::Float(f64::from(self.epsilon)),
        );
        v
    }

    /// Reads values saved under `dispatch` and checks them.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix): the reader texts; `launch value '<n>' of dispatch '<d>'
    /// must be present exactly when 'flags' bit <b> is set; flags is <f>`; `launch values of
    /// dispatch '<d>' name rmsnorm (flags bit 1) with a mean`; `launch value 'epsilon' of
    /// dispatch '<d>' must be a float that f32 holds exactly, and the plan holds <v>`;
    /// `launch values of dispatch '<d>' name the spec variant, whose 'sxc', 'syc', 'ssc' and
    /// 'sbc' must be 1`; the geometry texts.
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let names = value_names();
        let r = ContractReader::new(dispatch, NORM_FWD_V1, &names, values)?;
        let d = quote(dispatch);
        let max = i64::from(i32::MAX);
        let uid = |n: &str| r.int(n, i64::MIN, i64::MAX);
        let flags = r.int("flags", 0, 255)?;
        let mut opt = [None; 3];
        for (i, (n, bit)) in OPTIONAL.iter().enumerate() {
            let present = values.contains_key(*n);
            if present != (flags & bit != 0) {
                return Err(incompatible(format!(
                    "launch value '{n}' of dispatch '{d}' must be present exactly when 'flags' bit {bit} is set; flags is {flags}"
                )));
            }
            if present {
                opt[i] = Some(uid(n)?);
            }
        }
        if flags & FLAG_RMS != 0 && flags & FLAG_MEAN != 0 {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name rmsnorm (flags bit 1) with a mean"
            )));
        }
        let mut strides = [0i64; 8];
        for (i, n) in STRIDES.iter().enumerate() {
            strides[i] = r.int(n, 0, max)?;
        }
        let epsilon = match values.get("epsilon") {
            Some(LaunchValue::Float(v)) if f64::from(*v as f32) == *v => *v as f32,
            Some(LaunchValue::Float(v)) => {
                return Err(incompatible(format!(
                    "launch value 'epsilon' of dispatch '{d}' must be a float that f32 holds exactly, and the plan holds {v}"
                )));
            }
            Some(o) => {
                return Err(incompatible(format!(
                    "launch value 'epsilon' of dispatch '{d}' must be a float that f32 holds exactly, and the plan holds {}",
                    o.type_name()
                )));
            }
            None => {
                return Err(incompatible(format!(
                    "dispatch '{d}' needs launch value 'epsilon' (float), and the plan has none"
                )));
            }
        };
        let config = TritonConfig {
            family: "norm_fwd".into(),
            dtype: String::new(),
            spec: r.int("spec", 0, 1)? == 1,
            channels_first: false,
            transposing: false,
            b_col: false,
            block: [r.int("block_m", 1, 64)?, r.int("block_n", 16, 8192)?, 1],
            group_m: 1,
            num_warps: r.int("num_warps", 1, 16)?,
            num_stages: 0,
            shared_bytes: r.int("shared_bytes", 0, 262_144)?,
            warp_size: r.int("warp_size", 32, 64)?,
        };
        let inputs = NormFwdInputs {
            uids: [uid("x.uid")?, uid("scale.uid")?, uid("y.uid")?],
            bias_uid: opt[0],
            mean_uid: opt[1],
            inv_uid: opt[2],
            dtype: r.int("dtype", 1, 3)? as i8,
            rows: r.int("rows", 1, max)?,
            cols: r.int("cols", 1, max)?,
            strides,
            flags,
            epsilon,
            config,
        };
        if inputs.config.spec
            && (strides[1] != 1
                || strides[3] != 1
                || strides[4] != 1
                || (flags & FLAG_BIAS != 0 && strides[5] != 1))
        {
            return Err(incompatible(format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'sxc', 'syc', 'ssc' and 'sbc' must be 1"
            )));
        }
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    /// Grid, block and shared memory (shared by build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'warp_size' and 'num_warps' of dispatch '<d>' give <t>
    /// threads per block; the contract takes warp size 32 or 64 and at most 1024 threads`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let c = &self.config;
        let threads = c.threads_per_block(dispatch)?;
        Ok(LaunchGeometry {
            grid: [((self.rows + c.block[0] - 1) / c.block[0]) as u32, 1, 1],
            block: [threads as u32, 1, 1],
            shared_mem_bytes: c.shared_bytes as u32,
        })
    }

    /// The prepared launch: `pointer_uids` x, scale, [bias], y, [mean], [inv]; `scalar_args`
    /// the variant's integers in kernel order, then epsilon.
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let spec = self.config.spec;
        let mut pointer_uids = vec![self.uids[0], self.uids[1]];
        pointer_uids.extend(self.bias_uid);
        pointer_uids.push(self.uids[2]);
        pointer_uids.extend(self.mean_uid);
        pointer_uids.extend(self.inv_uid);
        let mut ints = vec![self.rows, self.cols];
        ints.extend(
            self.strides
                .iter()
                .enumerate()
                .filter(|(i, _)| !(spec && SPEC_ONE.contains(i)))
                .map(|(_, v)| *v),
        );
        ints.push(self.flags);
        let mut scalar_args: Vec<KernelArgValue> = ints
            .into_iter()
            .map(|v| KernelArgValue::I32(v as i32))
            .collect();
        scalar_args.push(KernelArgValue::F32(self.epsilon));
        Ok(PreparedLaunch {
            dispatch: NORM_FWD_V1.to_string(),
            launch_values: self.to_values(),
            geometry: self.geometry_for(NORM_FWD_V1)?,
            workspace_bytes: 0,
            pointer_uids,
            scalar_args,
        })
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

/// The epsilon value of the graph's scalar `t`, rounded to the tensor's data type as the
/// reference engine reads it (FLOAT, HALF or BFLOAT16 tensors with a float value).
fn epsilon_of(t: &TensorAttributes<'_>) -> PluginResult<f32> {
    let uid = t.uid();
    let value = read_tensor_value(t)
        .map_err(|e| PluginError::invalid_value(format!("tensor uid {uid}: {e}")))?;
    let v = match value {
        Some(TensorValue::Float32(v) | TensorValue::Float16(v) | TensorValue::BFloat16(v)) => {
            Some(v)
        }
        _ => None,
    };
    let dt = t.data_type();
    match v {
        Some(v) if !t.is_runtime_pass_by_value() && dt == DataType::FLOAT => Ok(v),
        Some(v) if !t.is_runtime_pass_by_value() && dt == DataType::HALF => {
            Ok(half::f16::from_f32(v).to_f32())
        }
        Some(v) if !t.is_runtime_pass_by_value() && dt == DataType::BFLOAT16 => {
            Ok(half::bf16::from_f32(v).to_f32())
        }
        _ => Err(na(format!(
            "the norm_fwd pack needs epsilon (tensor uid {uid}) as a FLOAT, HALF or BFLOAT16 scalar with a float value the graph holds (pass-by-value, not runtime), not {dt:?} {}",
            if t.is_runtime_pass_by_value() {
                "bound at execute"
            } else if value.is_none() {
                "without a value"
            } else {
                "with a value of another kind"
            }
        ))),
    }
}

fn match_graph(graph: &OperationGraph) -> PluginResult<NormFwdInputs> {
    let g = graph.graph();
    let nodes: Vec<Node<'_>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.len() != 1 {
        return Err(na(format!(
            "the norm_fwd pack serves graphs of one layernorm or rmsnorm node; this graph has {} nodes",
            nodes.len()
        )));
    }
    let n = read_node(&nodes[0])?;
    let xt = tensor(graph, n.x)?;
    let dtype = xt.data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype) {
        return Err(na(format!(
            "the norm_fwd pack serves f32, f16 and bf16 x, not {dtype:?}"
        )));
    }
    let (xd, _) = dims_strides(&xt);
    let r = xd.len();
    if r == 0 || xd.iter().any(|d| *d < 1) {
        return Err(na(format!(
            "the norm_fwd pack needs x dims of at least 1; x {xd:?}"
        )));
    }
    let st = tensor(graph, n.scale)?;
    let (sd, _) = dims_strides(&st);
    if sd.len() > r {
        return Err(na(format!(
            "the norm_fwd pack: scale dims {sd:?} have more axes than x {xd:?}"
        )));
    }
    let off = r - sd.len();
    let aligned = |d: &[i64], i: usize| if i >= off { d[i - off] } else { 1 };
    // First normalized axis (the reference engine's rule).
    let first = if n.ndc == 0 {
        (1..r).find(|&i| aligned(&sd, i) != 1).unwrap_or(1).min(r)
    } else if n.ndc < 0 || n.ndc as usize > r {
        return Err(na(format!(
            "the norm_fwd pack: normalized_dim_count {} is not in [0, {r}]",
            n.ndc
        )));
    } else {
        r - n.ndc as usize
    };
    let max = i64::from(i32::MAX);
    let volume = |d: &[i64]| d.iter().try_fold(1i64, |a, v| a.checked_mul(*v));
    let (rows, cols) = match (volume(&xd[..first]), volume(&xd[first..])) {
        (Some(r), Some(c)) if r <= max && c <= max => (r, c),
        _ => {
            return Err(na(format!(
                "the norm_fwd pack needs at most 2147483647 rows and columns; x {xd:?} normalized from axis {first}"
            )));
        }
    };
    let fits = |v: i64| (0..=max).contains(&v);
    let row_col = |what: &str, t: &TensorAttributes<'_>| -> PluginResult<(i64, i64)> {
        let (d, s) = dims_strides(t);
        if d != xd {
            return Err(na(format!(
                "the norm_fwd pack: {what} dims {d:?} differ from x {xd:?}"
            )));
        }
        match (
            collapse(&d[..first], &s[..first]),
            collapse(&d[first..], &s[first..]),
        ) {
            (Some(a), Some(b)) if fits(a) && fits(b) => Ok((a, b)),
            _ => Err(na(format!(
                "the norm_fwd pack needs {what}'s row axes {:?} and normalized axes {:?} each to collapse to one stride in [0, 2147483647]; strides {s:?}",
                &d[..first],
                &d[first..]
            ))),
        }
    };
    let yt = tensor(graph, n.y)?;
    let (sxr, sxc) = row_col("x", &xt)?;
    let (syr, syc) = row_col("y", &yt)?;
    let mut flags = if n.rms { FLAG_RMS } else { 0 };
    let typed = |what: &str, t: &TensorAttributes<'_>, bit: i64| -> PluginResult<i64> {
        match t.data_type() {
            dt if dt == DataType::FLOAT => Ok(bit),
            dt if dt == dtype => Ok(0),
            dt => Err(na(format!(
                "the norm_fwd pack needs {what} of x's type ({dtype:?}) or FLOAT, not {dt:?}"
            ))),
        }
    };
    flags |= typed("y", &yt, FLAG_Y_F32)?;
    // scale and bias: dim 1 on the row axes; x's dims or all 1 on the normalized axes.
    let affine = |what: &str, t: &TensorAttributes<'_>| -> PluginResult<i64> {
        let (d, s) = dims_strides(t);
        if d.len() > r {
            return Err(na(format!(
                "the norm_fwd pack: {what} dims {d:?} have more axes than x {xd:?}"
            )));
        }
        let o = r - d.len();
        let dim = |i: usize| if i >= o { d[i - o] } else { 1 };
        let stride = |i: usize| if i >= o { s[i - o] } else { 0 };
        let rows_one = (0..first).all(|i| dim(i) == 1);
        let all_one = (first..r).all(|i| dim(i) == 1);
        let full = (first..r).all(|i| dim(i) == xd[i]);
        let st = if rows_one && all_one {
            Some(0)
        } else if rows_one && full {
            let nd: Vec<i64> = (first..r).map(dim).collect();
            let ns: Vec<i64> = (first..r).map(stride).collect();
            collapse(&nd, &ns).filter(|v| fits(*v))
        } else {
            None
        };
        st.ok_or_else(|| {
            na(format!(
                "the norm_fwd pack needs {what} with dim 1 on x's row axes and x's dims (collapsing to one stride) or 1 on the normalized axes; {what} dims {d:?} strides {s:?}, x {xd:?}, normalized from axis {first}"
            ))
        })
    };
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
        let (d, s) = dims_strides(&t);
        match (volume(&d), collapse(&d, &s)) {
            (Some(v), Some(c)) if v == rows && fits(c) => Ok((c, bit)),
            _ => Err(na(format!(
                "the norm_fwd pack needs {what} with {rows} values whose dims collapse to one stride; dims {d:?} strides {s:?}"
            ))),
        }
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
    let epsilon = epsilon_of(&tensor(graph, n.eps)?)?;
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

/// The v1 handler (saves and restores).
#[derive(Debug, Clone, Copy, Default)]
pub struct NormFwdHandler;

impl NormFwdHandler {
    /// The inputs for `kernel` on `graph`, with the static rule applied (module docs).
    ///
    /// # Errors
    /// `NOT_APPLICABLE`: the graph texts; `kernel <k> is not a packed norm_fwd entry`;
    /// `kernel <k> is built for <dtype>, the graph is <dtype>`; `kernel <k> is the spec
    /// variant; …`; `kernel <k>: static rule: …`.
    pub fn inputs_for(
        &self,
        kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<NormFwdInputs> {
        let mut inputs = match_graph(graph)?;
        let config = TritonConfig::for_kernel(kernel, "norm_fwd", inputs.dtype)?;
        if config.spec && !inputs.fits_spec() {
            return Err(na(format!(
                "kernel {} is the spec variant; the graph's layout does not satisfy its hints (unit column strides of x, y, scale and bias, cols and the row strides of x and y multiples of 16)",
                kernel.describe()
            )));
        }
        let bn = config.block[1];
        if bn > 64 && inputs.cols * 2 <= bn {
            return Err(na(format!(
                "kernel {}: static rule: a {bn}-element chunk is at least twice the row of {} elements; a narrower chunk serves this graph",
                kernel.describe(),
                inputs.cols
            )));
        }
        inputs.config = config;
        Ok(inputs)
    }
}

impl DispatchHandler for NormFwdHandler {
    packed_triton_handler_methods!(NORM_FWD_V1, "norm_fwd", NormFwdInputs);

    /// x, scale, bias (null when absent), y, mean, inv (null when absent), the integers,
    /// epsilon, two null scratch pointers. A spec launch refuses (BAD_PARAM) x, scale, bias
    /// or y addresses that are not 16-byte aligned.
    ///
    /// # Errors
    /// `BAD_PARAM` `tensor UID <u> is at <addr>; this plan runs the specialized norm_fwd
    /// kernel, which needs 16-byte aligned x, scale, bias and y`; `the variant pack binds no
    /// memory to tensor UID <u>`; `tensor UID <u> is bound to host memory; the ingestor
    /// launches on device memory`.
    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        let uid_of = |name: &str| match launch.launch_values.get(name) {
            Some(LaunchValue::Int(u)) => Some(*u),
            _ => None,
        };
        let spec = is_spec(&launch.launch_values);
        let mut out = Vec::with_capacity(launch.scalar_args.len() + 8);
        for name in [
            "x.uid",
            "scale.uid",
            "bias.uid",
            "y.uid",
            "mean.uid",
            "inv.uid",
        ] {
            let Some(uid) = uid_of(name) else {
                out.push(KernelArgValue::Pointer(0));
                continue;
            };
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
            if spec && !name.starts_with("mean") && !name.starts_with("inv") && addr % 16 != 0 {
                return Err(PluginError::bad_param(format!(
                    "tensor UID {uid} is at {addr:#x}; this plan runs the specialized norm_fwd kernel, which needs 16-byte aligned x, scale, bias and y"
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
