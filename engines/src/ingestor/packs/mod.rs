//! The native packs: dispatch handlers with their launch-value contracts.
//!
//! Each pack module owns one contract version (`…dispatch.v1`): its value names, types and
//! ranges, the kernel arguments it passes and how it derives grid and block. A larger-tensor
//! kernel needs a new version (`.v2`) in a new handler registered beside v1 with
//! [`crate::ingestor::dispatch::DispatchRegistry::register_versioned_only`]; v1 never changes.

pub mod conv_dgrad;
pub mod conv_fprop;
pub mod conv_fwd;
pub mod conv_fwd_v2;
pub mod conv_wgrad;
pub mod epilogue;
pub mod matmul;
pub mod norm_fwd;
pub mod pointwise;
pub mod pointwise_v2;
pub mod pointwise_v3;
pub mod reduce_fwd;
pub mod sdpa_fwd;

use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::{Node, TensorAttributes};

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

/// Dims of a tensor (empty when absent).
pub(crate) fn dims(t: &TensorAttributes<'_>) -> Vec<i64> {
    t.dims().map(|d| d.iter().collect()).unwrap_or_default()
}
