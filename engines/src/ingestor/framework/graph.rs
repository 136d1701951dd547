//! Reading a graph the way every pack does: its nodes and tensors, dims and strides, and the
//! `NOT_APPLICABLE` refusal every matcher returns.

use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::{DataType, Node, TensorAttributes};
use hipdnn_schema::tensor_value::{TensorValue, read_tensor_value};

/// A `NOT_APPLICABLE` refusal with `msg` (what the pack does not serve).
pub(crate) fn na(msg: impl Into<String>) -> PluginError {
    PluginError::not_applicable(msg.into())
}

/// The only node of `graph`.
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack serves graphs of one node; this graph has <n>`.
pub(crate) fn single_node<'a>(graph: &'a OperationGraph, pack: &str) -> PluginResult<Node<'a>> {
    let g = graph.graph();
    let nodes = g.nodes().map(|n| n.len()).unwrap_or(0);
    match g.nodes() {
        Some(n) if n.len() == 1 => Ok(n.get(0)),
        _ => Err(PluginError::not_applicable(format!(
            "the {pack} pack serves graphs of one node; this graph has {nodes}"
        ))),
    }
}

/// The only node of `graph`, for a pack that names the node kind it serves.
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack serves graphs of one <kind> node; this graph has <n>
/// nodes`.
pub(crate) fn one_node<'a>(
    graph: &'a OperationGraph,
    pack: &str,
    kind: &str,
) -> PluginResult<Node<'a>> {
    let nodes = graph.graph().nodes();
    match nodes.map(|n| n.len()).unwrap_or(0) {
        1 => Ok(nodes
            .map(|n| n.get(0))
            .unwrap_or_else(|| unreachable!("one node"))),
        n => Err(na(format!(
            "the {pack} pack serves graphs of one {kind} node; this graph has {n} nodes"
        ))),
    }
}

/// The tensor with `uid` in `graph`.
///
/// # Errors
/// `NOT_APPLICABLE` when the graph has no tensor with that UID.
pub(crate) fn tensor<'a>(
    graph: &'a OperationGraph,
    uid: i64,
) -> PluginResult<TensorAttributes<'a>> {
    graph
        .graph()
        .tensors()
        .and_then(|ts| ts.iter().find(|t| t.uid() == uid))
        .ok_or_else(|| {
            PluginError::not_applicable(format!("the graph has no tensor with UID {uid}"))
        })
}

/// The value of the graph's scalar `t` (`what`: epsilon, momentum), rounded to the tensor's
/// data type as the reference engine reads it (FLOAT, HALF or BFLOAT16 tensors with a float
/// value the graph holds, not a runtime one).
///
/// # Errors
/// `INVALID_VALUE` `tensor uid <u>: <why>` for an unreadable value; `NOT_APPLICABLE` `the
/// <pack> pack needs <what> (tensor uid <u>) as a FLOAT, HALF or BFLOAT16 scalar with a float
/// value the graph holds (pass-by-value, not runtime), not <dtype> <how>`.
pub(crate) fn scalar_value(t: &TensorAttributes<'_>, pack: &str, what: &str) -> PluginResult<f32> {
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
            "the {pack} pack needs {what} (tensor uid {uid}) as a FLOAT, HALF or BFLOAT16 scalar with a float value the graph holds (pass-by-value, not runtime), not {dt:?} {}",
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

/// Dims of a tensor (empty when absent).
pub(crate) fn dims(t: &TensorAttributes<'_>) -> Vec<i64> {
    t.dims().map(|d| d.iter().collect()).unwrap_or_default()
}

/// Dims and strides of a tensor (strides packed row-major when absent).
pub(crate) fn dims_strides(t: &TensorAttributes<'_>) -> (Vec<i64>, Vec<i64>) {
    let dims: Vec<i64> = t.dims().map(|d| d.iter().collect()).unwrap_or_default();
    let strides: Vec<i64> = match t.strides() {
        Some(s) if s.len() == dims.len() => s.iter().collect(),
        _ => packed_strides(&dims),
    };
    (dims, strides)
}

/// Row-major packed strides of `dims`.
pub(crate) fn packed_strides(dims: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(dims[i + 1].max(1));
    }
    s
}

/// Whether `strides` are the packed row-major strides of `dims` (size-1 dims ignored).
pub(crate) fn is_packed(dims: &[i64], strides: &[i64]) -> bool {
    let p = packed_strides(dims);
    dims.iter()
        .zip(strides.iter().zip(&p))
        .all(|(d, (s, ps))| *d == 1 || s == ps)
}

/// The one element stride that walks `dims` in row-major order (dims of 1 skipped; 0 when
/// every dim is 1), `None` when the strides do not collapse.
pub(crate) fn collapse(dims: &[i64], strides: &[i64]) -> Option<i64> {
    let mut run: Option<(i64, i64)> = None; // (stride, extent so far)
    for (&d, &s) in dims.iter().zip(strides).rev() {
        if d == 1 {
            continue;
        }
        run = match run {
            None => Some((s, d)),
            Some((st, ext)) if s == st.checked_mul(ext)? => Some((st, ext.checked_mul(d)?)),
            Some(_) => return None,
        };
    }
    Some(run.map_or(0, |r| r.0))
}

/// The one custom op node of `graph` with `custom_op_id` `op_id`: its input UIDs, output UIDs
/// and the length of its `data` in bytes.
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack serves graphs of one <op_id> node; this graph has <n>
/// nodes`, `the <pack> pack serves a <op_id> custom op node`, `the <pack> pack serves
/// custom_op_id '<op_id>', not '<id>'`.
pub(crate) fn custom_op_node(
    graph: &OperationGraph,
    pack: &str,
    op_id: &str,
) -> PluginResult<(Vec<i64>, Vec<i64>, usize)> {
    let nodes = graph.graph().nodes();
    let n = nodes.map(|n| n.len()).unwrap_or(0);
    let Some(node) = nodes.filter(|_| n == 1).map(|n| n.get(0)) else {
        return Err(na(format!(
            "the {pack} pack serves graphs of one {op_id} node; this graph has {n} nodes"
        )));
    };
    let Some(a) = node.attributes_as_custom_op_attributes() else {
        return Err(na(format!(
            "the {pack} pack serves a {op_id} custom op node"
        )));
    };
    let id = a.custom_op_id().unwrap_or("");
    if id != op_id {
        return Err(na(format!(
            "the {pack} pack serves custom_op_id '{op_id}', not '{id}'"
        )));
    }
    let uids =
        |v: Option<flatbuffers::Vector<'_, i64>>| v.map(|v| v.iter().collect()).unwrap_or_default();
    Ok((
        uids(a.input_tensor_uids()),
        uids(a.output_tensor_uids()),
        a.data().map(|d| d.len()).unwrap_or(0),
    ))
}

/// The data type of `t`, a pack's input `what` that must be FLOAT, HALF or BFLOAT16.
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack serves f32, f16 and bf16 <what>, not <dtype>`.
pub(crate) fn float_dtype(
    t: &TensorAttributes<'_>,
    pack: &str,
    what: &str,
) -> PluginResult<DataType> {
    let dtype = t.data_type();
    if ![DataType::FLOAT, DataType::HALF, DataType::BFLOAT16].contains(&dtype) {
        return Err(na(format!(
            "the {pack} pack serves f32, f16 and bf16 {what}, not {dtype:?}"
        )));
    }
    Ok(dtype)
}

/// `bit` when `t` (a pack's tensor `what`) is FLOAT, 0 when it is of x's type `dtype`.
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack needs <what> of x's type (<dtype>) or FLOAT, not <dt>`.
pub(crate) fn f32_bit(
    t: &TensorAttributes<'_>,
    dtype: DataType,
    pack: &str,
    what: &str,
    bit: i64,
) -> PluginResult<i64> {
    match t.data_type() {
        dt if dt == DataType::FLOAT => Ok(bit),
        dt if dt == dtype => Ok(0),
        dt => Err(na(format!(
            "the {pack} pack needs {what} of x's type ({dtype:?}) or FLOAT, not {dt:?}"
        ))),
    }
}
