//! Pointwise pack, contract `hipkernel.pointwise.dispatch.v2`: one pointwise node of any of
//! the 14 modes the packed kernels implement, f32/f16/bf16, numpy broadcasting up to 5-D.
//!
//! Kernels: `hipdnn_pw_<op>_<t>` of `engines/kernels/pointwise.cu` (ABI in
//! `engines/kernels/README.md`). Registered beside v1 with
//! [`crate::ingestor::dispatch::DispatchRegistry::register_versioned_only`]; v1 is unchanged.
//!
//! | launch value | type | range |
//! |---|---|---|
//! | `a.uid`, `y.uid` | int | any int64 |
//! | `b.uid` | int | any int64; present iff the mode is binary |
//! | `mode` | int | a `PointwiseMode` value of [`POINTWISE_V2_MODES`] |
//! | `dtype` | int | `DataType` FLOAT (1), HALF (2) or BFLOAT16 (3) |
//! | `d0`..`d4` | int | [1, 2147483647] — output dims right-aligned to 5-D |
//! | `sa0`..`sa4` | int | [0, 2147483647] — element strides of input a, 0 on broadcast dims |
//! | `sb0`..`sb4` | int | [0, 2147483647] — input b; present iff the mode is binary |
//! | `block_size` | int | [1, 1024] |
//!
//! Extra checks (build and restore, one function [`PointwiseV2Inputs::geometry_for`]):
//! `total = d0·…·d4` (checked), the largest element offset of each input
//! `Σ (d_i − 1)·s_i` ≤ 2^63 − 1, `ceil(total / block_size) ≤ 4294967295`. Launch: block
//! (block_size,1,1), grid (ceil(total/block_size),1,1), no shared memory, workspace 0. Kernel
//! arguments: unary `(x, y, d0..d4, sx0..sx4)` = 2 `global_buffer` 8 + 10 `by_value` 4; binary
//! `(a, b, y, d0..d4, sa0..sa4, sb0..sb4)` = 3 + 15. The output is packed (row-major).
//!
//! Matcher scope (else NOT_APPLICABLE, so the CPU engine serves the graph): one pointwise node;
//! modes in [`POINTWISE_V2_MODES`] (`GELU_APPROX_TANH_FWD` only — the kernel computes the tanh
//! form, so exact `GELU_FWD` is refused); RELU without clip or slope attributes; every tensor of
//! one data type among f32/f16/bf16; rank ≤ 5; input dims equal to the output's or 1; a packed
//! output; non-negative strides.

use super::contract::{
    NativeContract, checked_product, grid_1d, int_values, native_handler, native_launch,
    native_signature, read_ints,
};
use crate::ingestor::device::LaunchGeometry;
use crate::ingestor::dispatch::PreparedLaunch;
use crate::ingestor::framework::family::{I32_MAX, IntValue, int, uid};
use crate::ingestor::framework::graph::{dims_strides, is_packed, na, single_node, tensor};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{LaunchValue, LaunchValues};
use crate::ingestor::payload::refusal::{incompatible, quote};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops;
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::{DataType, PointwiseMode};

/// The versioned contract name.
pub const POINTWISE_V2: &str = "hipkernel.pointwise.dispatch.v2";
/// Block size this pack builds with, in threads.
pub const POINTWISE_V2_BLOCK_SIZE: u32 = 256;
/// The launch values of the v2 contract with their ranges, in the order a restore reads them:
/// `mode`, `dtype`, then per dim `d<i>`, `sa<i>`, `sb<i>` (the `sb*` and `b.uid` only for a
/// binary mode), then the UIDs and `block_size`.
#[rustfmt::skip]
pub const POINTWISE_V2_VALUES: [IntValue; 21] = [
    int("mode", 0, I32_MAX), int("dtype", 1, 3),
    int("d0", 1, I32_MAX), int("sa0", 0, I32_MAX), int("sb0", 0, I32_MAX),
    int("d1", 1, I32_MAX), int("sa1", 0, I32_MAX), int("sb1", 0, I32_MAX),
    int("d2", 1, I32_MAX), int("sa2", 0, I32_MAX), int("sb2", 0, I32_MAX),
    int("d3", 1, I32_MAX), int("sa3", 0, I32_MAX), int("sb3", 0, I32_MAX),
    int("d4", 1, I32_MAX), int("sa4", 0, I32_MAX), int("sb4", 0, I32_MAX),
    uid("a.uid"), uid("b.uid"), uid("y.uid"), int("block_size", 1, 1024),
];

/// Modes of the v2 contract: graph mode and kernel op name (the number of inputs comes from
/// the op table, [`hipdnn_backend::ops::pointwise::arity`]).
pub const POINTWISE_V2_MODES: [(PointwiseMode, &str); 14] = [
    (PointwiseMode::IDENTITY, "identity"),
    (PointwiseMode::RELU_FWD, "relu_fwd"),
    (PointwiseMode::SIGMOID_FWD, "sigmoid_fwd"),
    (PointwiseMode::TANH_FWD, "tanh_fwd"),
    (PointwiseMode::GELU_APPROX_TANH_FWD, "gelu_fwd"),
    (PointwiseMode::EXP, "exp"),
    (PointwiseMode::NEG, "neg"),
    (PointwiseMode::ABS, "abs"),
    (PointwiseMode::ADD, "add"),
    (PointwiseMode::SUB, "sub"),
    (PointwiseMode::MUL, "mul"),
    (PointwiseMode::DIV, "div"),
    (PointwiseMode::MAX_OP, "max"),
    (PointwiseMode::MIN_OP, "min"),
];

/// Kernel-name suffix of a data type the GPU kernels serve (`f32`, `f16`, `bf16`).
pub fn dtype_suffix(t: DataType) -> Option<&'static str> {
    match t {
        DataType::FLOAT => Some("f32"),
        DataType::HALF => Some("f16"),
        DataType::BFLOAT16 => Some("bf16"),
        _ => None,
    }
}

/// The v2 mode with schema number `mode`: the mode, its kernel op name and its arity (from the
/// op table).
fn mode_entry(mode: i64) -> Option<(PointwiseMode, &'static str, u8)> {
    let (m, name) = POINTWISE_V2_MODES
        .iter()
        .copied()
        .find(|(m, _)| i64::from(m.0) == mode)?;
    let arity = u8::try_from(ops::pointwise::arity(m)?.inputs()).ok()?;
    Some((m, name, arity))
}

/// The launch inputs of contract v2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointwiseV2Inputs {
    /// UID of input a (x for unary modes).
    pub a_uid: i64,
    /// UID of input b (binary modes only).
    pub b_uid: Option<i64>,
    /// UID of the packed output.
    pub y_uid: i64,
    /// `PointwiseMode` value.
    pub mode: i32,
    /// `DataType` value (1, 2, 3).
    pub dtype: i8,
    /// Output dims right-aligned to 5-D.
    pub dims: [i32; 5],
    /// Element strides of a (0 on broadcast dims).
    pub sa: [i32; 5],
    /// Element strides of b (binary modes only).
    pub sb: Option<[i32; 5]>,
    /// Threads per block, [1, 1024].
    pub block_size: u32,
}

impl PointwiseV2Inputs {
    /// The kernel op name (`add`, `relu_fwd`, …) and arity of the mode.
    pub fn op(&self) -> Option<(&'static str, u8)> {
        mode_entry(i64::from(self.mode)).map(|(_, n, a)| (n, a))
    }

    /// The kernel symbol this launch needs (`hipdnn_pw_<op>_<t>`).
    pub fn symbol(&self) -> Option<String> {
        let (op, _) = self.op()?;
        let t = dtype_suffix(DataType(self.dtype))?;
        Some(format!("hipdnn_pw_{op}_{t}"))
    }

    /// The launch values (all INT; `b.uid` and `sb*` only for a binary mode).
    pub fn to_values(&self) -> LaunchValues {
        let sb = self.sb.unwrap_or_default();
        let mut ints = vec![i64::from(self.mode), i64::from(self.dtype)];
        for ((d, a), b) in self.dims.iter().zip(self.sa).zip(sb) {
            ints.extend([*d, a, b].map(i64::from));
        }
        ints.extend([self.a_uid, self.b_uid.unwrap_or(0), self.y_uid]);
        ints.push(i64::from(self.block_size));
        let binary = self.sb.is_some();
        let held = |n: &str| binary || !(n == "b.uid" || n.starts_with("sb"));
        int_values(&POINTWISE_V2_VALUES, &ints, held)
    }

    /// Grid and block (shared by build and restore).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `launch values 'd0'..'d4' and 'block_size' of dispatch '<d>' give a grid
    /// larger than 4294967295 blocks`, or `... an input offset beyond 2^63 − 1`.
    pub fn geometry_for(&self, dispatch: &str) -> PluginResult<LaunchGeometry> {
        let d = quote(dispatch);
        let too_big = || {
            incompatible(format!(
                "launch values 'd0'..'d4' and 'block_size' of dispatch '{d}' give a grid larger than 4294967295 blocks"
            ))
        };
        let total = checked_product(&self.dims.map(i64::from)).ok_or_else(too_big)?;
        for s in std::iter::once(self.sa).chain(self.sb) {
            let mut off = 0i64;
            for (dim, st) in self.dims.iter().zip(s) {
                off = i64::from(dim - 1)
                    .checked_mul(i64::from(st))
                    .and_then(|x| x.checked_add(off))
                    .ok_or_else(|| {
                        incompatible(format!(
                            "launch values of dispatch '{d}' give an input offset beyond 2^63 - 1"
                        ))
                    })?;
            }
        }
        grid_1d(total, self.block_size, too_big)
    }

    /// The prepared launch of these inputs.
    ///
    /// # Errors
    /// As [`Self::geometry_for`].
    pub fn to_launch(&self) -> PluginResult<PreparedLaunch> {
        let mut pointer_uids = vec![self.a_uid];
        pointer_uids.extend(self.b_uid);
        pointer_uids.push(self.y_uid);
        let mut scalars: Vec<i32> = self.dims.to_vec();
        scalars.extend(self.sa);
        scalars.extend(self.sb.iter().flatten());
        let geometry = self.geometry_for(POINTWISE_V2)?;
        Ok(native_launch(
            POINTWISE_V2,
            self.to_values(),
            geometry,
            pointer_uids,
            scalars,
        ))
    }
}

/// The signature of a pointwise kernel with `inputs` inputs (1 or 2): `inputs + 1` pointers,
/// then `5 · (inputs + 1)` ints.
pub fn pointwise_v2_signature(inputs: u32) -> Vec<KernelArgument> {
    native_signature(inputs + 1, 5 * (inputs + 1))
}

fn to_i32(v: i64, what: &str) -> PluginResult<i32> {
    i32::try_from(v).map_err(|_| {
        na(format!(
            "the pointwise pack (dispatch v2) needs {what} in [0, 2147483647], not {v}"
        ))
    })
}

native_handler!(PointwiseV2Handler, PointwiseV2Inputs, "v2");

/// The v2 launch inputs for one pointwise node of `graph`.
///
/// # Errors
/// `NOT_APPLICABLE` for everything outside the matcher scope (module docs).
pub(crate) fn pointwise_inputs(
    graph: &OperationGraph,
    a: &hipdnn_schema::graph::PointwiseAttributes<'_>,
) -> PluginResult<PointwiseV2Inputs> {
    let mode = a.operation();
    let (_, _, arity) = mode_entry(i64::from(mode.0)).ok_or_else(|| {
        na(format!(
            "the pointwise pack (dispatch v2) has no GPU kernel for mode {mode:?}"
        ))
    })?;
    if mode == PointwiseMode::RELU_FWD
        && (a.relu_lower_clip().is_some_and(|v| v != 0.0)
            || a.relu_upper_clip().is_some()
            || a.relu_lower_clip_slope().is_some_and(|v| v != 0.0))
    {
        return Err(na(
            "the pointwise pack (dispatch v2) serves RELU_FWD without clip or slope attributes",
        ));
    }
    let b_uid = match (arity, a.in_1_tensor_uid()) {
        (2, Some(b)) => Some(b),
        (2, None) => {
            return Err(na(format!(
                "pointwise mode {mode:?} needs two inputs; in_1 is absent"
            )));
        }
        _ => None,
    };
    let y = tensor(graph, a.out_0_tensor_uid())?;
    let dtype = y.data_type();
    dtype_suffix(dtype).ok_or_else(|| {
        na(format!(
            "the pointwise pack (dispatch v2) serves f32, f16 and bf16, not {dtype:?}"
        ))
    })?;
    let (yd, ys) = dims_strides(&y);
    if yd.is_empty() || yd.len() > 5 {
        return Err(na(format!(
            "the pointwise pack (dispatch v2) serves rank 1 to 5, not output dims {yd:?}"
        )));
    }
    if !is_packed(&yd, &ys) {
        return Err(na(format!(
            "the pointwise pack (dispatch v2) writes packed row-major outputs; output strides {ys:?} for dims {yd:?}"
        )));
    }
    let off = 5 - yd.len();
    let mut dims = [1i32; 5];
    for (i, d) in yd.iter().enumerate() {
        dims[off + i] = i32::try_from(*d).ok().filter(|x| *x >= 1).ok_or_else(|| {
            na(format!(
                "the pointwise pack (dispatch v2) needs dims in [1, 2147483647]; output dims {yd:?}"
            ))
        })?;
    }
    let in_strides = |uid: i64| -> PluginResult<[i32; 5]> {
        let t = tensor(graph, uid)?;
        if t.data_type() != dtype {
            return Err(na(format!(
                "the pointwise pack (dispatch v2) needs one data type; tensor {uid} is {:?}, the output {dtype:?}",
                t.data_type()
            )));
        }
        let (d, s) = dims_strides(&t);
        if d.len() > yd.len() {
            return Err(na(format!(
                "the pointwise pack (dispatch v2): input {uid} has more dims than the output"
            )));
        }
        let o = 5 - d.len();
        let mut out = [0i32; 5];
        for i in 0..d.len() {
            if d[i] == 1 && i64::from(dims[o + i]) != 1 {
                out[o + i] = 0;
            } else if d[i] == i64::from(dims[o + i]) {
                if s[i] < 0 {
                    return Err(na(format!(
                        "the pointwise pack (dispatch v2) needs non-negative strides; tensor {uid} has {s:?}"
                    )));
                }
                out[o + i] = to_i32(s[i], "strides")?;
            } else {
                return Err(na(format!(
                    "tensor {uid} dims {d:?} do not broadcast to the output dims {yd:?}"
                )));
            }
        }
        Ok(out)
    };
    let sa = in_strides(a.in_0_tensor_uid())?;
    let sb = b_uid.map(in_strides).transpose()?;
    let inputs = PointwiseV2Inputs {
        a_uid: a.in_0_tensor_uid(),
        b_uid,
        y_uid: a.out_0_tensor_uid(),
        mode: i32::from(mode.0),
        dtype: dtype.0,
        dims,
        sa,
        sb,
        block_size: POINTWISE_V2_BLOCK_SIZE,
    };
    inputs
        .geometry_for(POINTWISE_V2)
        .map_err(|e| na(e.message))?;
    Ok(inputs)
}

impl NativeContract for PointwiseV2Inputs {
    const CONTRACT: &'static str = POINTWISE_V2;
    /// The binary form: a, b, y, then the dims and both inputs' strides.
    const ARGUMENTS: (u32, u32) = (3, 15);

    /// The signature of the mode's arity (the binary one, 18 arguments, without values or
    /// with a mode outside the contract).
    fn signature(values: Option<&LaunchValues>) -> Vec<KernelArgument> {
        let arity = match values.and_then(|v| v.get("mode")) {
            Some(LaunchValue::Int(m)) => mode_entry(*m).map(|e| e.2).unwrap_or(2),
            _ => 2,
        };
        pointwise_v2_signature(u32::from(arity))
    }

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
        let node = single_node(graph, "pointwise")?;
        let a = node
            .attributes_as_pointwise_attributes()
            .ok_or_else(|| na("the pointwise pack serves pointwise nodes only"))?;
        pointwise_inputs(graph, &a)
    }

    /// `hipdnn_pw_<op>_<t>` (empty for a mode or data type outside the contract).
    fn needed_symbol(&self) -> Option<String> {
        Some(self.symbol().unwrap_or_default())
    }

    /// Reads values saved under `dispatch`, then checks the geometry.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) with the §11 reader texts; `launch value 'mode' of
    /// dispatch '<d>' names no pointwise mode this pack launches: <m>`; `... 'b.uid' ...` when
    /// the presence of `b.uid`/`sb*` does not match the mode's arity; the geometry texts.
    fn read(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let d = quote(dispatch);
        let arity = |mode: i64| mode_entry(mode).map(|e| e.2);
        let rule = |name: &str, read: &[i64]| {
            let Some(&mode) = read.first() else {
                return Ok(true);
            };
            let Some(arity) = arity(mode) else {
                return Err(incompatible(format!(
                    "launch value 'mode' of dispatch '{d}' names no pointwise mode this pack launches: {mode}"
                )));
            };
            let binary = arity == 2;
            let has_b = ["b.uid", "sb0", "sb1", "sb2", "sb3", "sb4"]
                .iter()
                .filter(|n| values.contains_key(**n))
                .count();
            if name == "d0" && (binary && has_b != 6 || !binary && has_b != 0) {
                return Err(incompatible(format!(
                    "launch values 'b.uid' and 'sb0'..'sb4' of dispatch '{d}' must be present exactly for binary modes; mode {mode} takes {arity} input(s) and the plan holds {has_b} of them"
                )));
            }
            Ok(binary || !(name == "b.uid" || name.starts_with("sb")))
        };
        let v = read_ints(dispatch, POINTWISE_V2, &POINTWISE_V2_VALUES, values, rule)?;
        let binary = arity(v[0]) == Some(2);
        let at = |i: usize| v[i] as i32;
        let inputs = PointwiseV2Inputs {
            a_uid: v[17],
            b_uid: binary.then_some(v[18]),
            y_uid: v[19],
            mode: at(0),
            dtype: v[1] as i8,
            dims: std::array::from_fn(|i| at(2 + 3 * i)),
            sa: std::array::from_fn(|i| at(3 + 3 * i)),
            sb: binary.then(|| std::array::from_fn(|i| at(4 + 3 * i))),
            block_size: v[20] as u32,
        };
        inputs.geometry_for(dispatch)?;
        Ok(inputs)
    }

    fn launch(&self) -> PluginResult<PreparedLaunch> {
        self.to_launch()
    }
}
