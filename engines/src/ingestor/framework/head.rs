//! The head of a multi-node graph as the fusing packs read it (the Triton epilogue GEMM
//! families, the fused pointwise family and the native conv_fwd v2 contract): its node list
//! within a node count, and a first node that is a cross-correlation convolution forward.

use super::graph::na;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::graph::{ConvMode, ConvolutionFwdAttributes, Node};

/// The nodes of `graph` in order, at least one and at most `most`.
///
/// # Errors
/// `NOT_APPLICABLE` `<serves>; this graph has <n> nodes` (`serves` says what the pack serves,
/// e.g. `the conv_fwd pack (dispatch v2) serves conv_fprop with up to two epilogue nodes`).
pub fn head_nodes<'a>(
    graph: &'a OperationGraph,
    most: usize,
    serves: &str,
) -> PluginResult<Vec<Node<'a>>> {
    let g = graph.graph();
    let nodes: Vec<Node<'a>> = g.nodes().map(|n| n.iter().collect()).unwrap_or_default();
    if nodes.is_empty() || nodes.len() > most {
        return Err(na(format!(
            "{serves}; this graph has {} nodes",
            nodes.len()
        )));
    }
    Ok(nodes)
}

/// The attributes of `node`, a cross-correlation convolution forward that starts a graph of
/// the `pack` pack (`scope` names the pack in the conv-mode refusal, e.g. `the conv_fwd pack
/// (dispatch v2)`).
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack serves graphs that start with a convolution forward
/// node`; `<scope> serves cross-correlation only, not conv mode <m>`.
pub fn conv_fwd_head<'a>(
    node: &Node<'a>,
    pack: &str,
    scope: &str,
) -> PluginResult<ConvolutionFwdAttributes<'a>> {
    let a = node
        .attributes_as_convolution_fwd_attributes()
        .ok_or_else(|| {
            na(format!(
                "the {pack} pack serves graphs that start with a convolution forward node"
            ))
        })?;
    if a.conv_mode() != ConvMode::CROSS_CORRELATION {
        return Err(na(format!(
            "{scope} serves cross-correlation only, not conv mode {:?}",
            a.conv_mode()
        )));
    }
    Ok(a)
}
