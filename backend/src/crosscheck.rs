//! Load-time cross-checks: a loaded plan's parts must agree with each other (envelope vs the
//! engine's restored context) and with the graph they are loaded with (a container's graph).
//!
//! Rule (issue 12): a load either proves the parts agree — tensor UIDs, alignments, shapes,
//! strides, data types, virtual flags, op kinds, workspace — or refuses naming the first
//! disagreement. This module only compares; it never parses an envelope or a payload (the
//! envelope codec and the engines do) and never decides routing.

use crate::engine::ExecutionContext;
use crate::graph::OperationGraph;
use crate::status::{BackendError, BackendResult, Status};
use hipdnn_schema::graph::Graph;

/// Message prefix of a plan whose parts disagree (`BAD_PARAM`).
pub const PLAN_PARTS_DISAGREE: &str = "Serialized execution plan parts disagree: ";

/// Message prefix of a plan loaded with a graph it was not built for (`BAD_PARAM`; the SDK
/// reports it as `INVALID_VALUE`).
pub const PLAN_NOT_OF_GRAPH: &str = "the execution plan does not belong to the graph: ";

fn bad(prefix: &str, m: impl std::fmt::Display) -> BackendError {
    BackendError::new(Status::BadParam, format!("{prefix}{m}"))
}

/// The first position where `a` and `b` differ, in words (`None` when they are equal).
fn first_difference(
    what: &str,
    a_name: &str,
    a: &[i64],
    b_name: &str,
    b: &[i64],
) -> Option<String> {
    if let Some(i) = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]) {
        return Some(format!(
            "{what} differ at position {i}: {} in the {a_name}, {} in the {b_name}",
            a[i], b[i]
        ));
    }
    (a.len() != b.len()).then(|| {
        format!(
            "the {a_name} lists {} {what}, the {b_name} {}",
            a.len(),
            b.len()
        )
    })
}

/// Checks a freshly restored context against the envelope it came in: the recorded workspace
/// covers what the context needs, the envelope's tensor UIDs equal those of the graph the
/// context runs (when it keeps one), and every UID the context binds is listed.
///
/// # Errors
/// `BAD_PARAM` [`PLAN_PARTS_DISAGREE`] followed by the first disagreement.
pub fn check_restored(
    workspace_size: i64,
    tensor_uids: &[i64],
    context: &dyn ExecutionContext,
) -> BackendResult<()> {
    let need = context.workspace_size();
    if u64::try_from(workspace_size).unwrap_or(0) < need as u64 {
        return Err(bad(
            PLAN_PARTS_DISAGREE,
            format!(
                "the envelope records a workspace of {workspace_size} bytes, but the engine's \
                 restored plan needs {need} bytes"
            ),
        ));
    }
    if let Some(src) = context.source_graph() {
        let g = flatbuffers::root::<Graph>(src).map_err(|e| {
            bad(
                PLAN_PARTS_DISAGREE,
                format!("the payload's graph is invalid: {e}"),
            )
        })?;
        let payload_uids: Vec<i64> = g
            .tensors()
            .map(|ts| ts.iter().map(|t| t.uid()).collect())
            .unwrap_or_default();
        if let Some(d) = first_difference(
            "tensor UIDs",
            "envelope",
            tensor_uids,
            "payload's graph",
            &payload_uids,
        ) {
            return Err(bad(PLAN_PARTS_DISAGREE, d));
        }
    }
    if let Some(bound) = context.bound_tensor_uids()
        && let Some(u) = bound.iter().find(|u| !tensor_uids.contains(u))
    {
        return Err(bad(
            PLAN_PARTS_DISAGREE,
            format!(
                "the payload binds tensor UID {u}, which the envelope's tensor UIDs \
                 {tensor_uids:?} do not list"
            ),
        ));
    }
    Ok(())
}

/// Checks that a plan (its envelope UIDs and alignments, and the graph its context runs when
/// it keeps one) belongs to `graph`: equal tensor UIDs in order, equal alignments (when the
/// plan has them), and per tensor equal data type, dims, strides, virtual and pass-by-value
/// flags; equal node count and op kind per node.
///
/// # Errors
/// `BAD_PARAM` [`PLAN_NOT_OF_GRAPH`] followed by the first disagreement, e.g. "tensor uid 1
/// ('a'): dims [4, 4] in the graph, [3, 3] in the plan".
pub fn check_plan_matches_graph(
    plan_uids: &[i64],
    plan_alignments: &[i64],
    context: &dyn ExecutionContext,
    graph: &OperationGraph,
) -> BackendResult<()> {
    if let Some(d) = first_difference(
        "tensor UIDs",
        "graph",
        graph.tensor_uids(),
        "plan",
        plan_uids,
    ) {
        return Err(bad(PLAN_NOT_OF_GRAPH, d));
    }
    if !plan_alignments.is_empty()
        && let Some(d) = first_difference(
            "tensor alignments",
            "graph",
            graph.tensor_alignments(),
            "plan",
            plan_alignments,
        )
    {
        return Err(bad(PLAN_NOT_OF_GRAPH, d));
    }
    let Some(src) = context.source_graph() else {
        return Ok(());
    };
    if src == graph.bytes() {
        return Ok(());
    }
    let p = flatbuffers::root::<Graph>(src).map_err(|e| {
        bad(
            PLAN_NOT_OF_GRAPH,
            format!("the plan's graph is invalid: {e}"),
        )
    })?;
    let g = graph.graph();
    let gt: Vec<_> = g.tensors().map(|v| v.iter().collect()).unwrap_or_default();
    let pt: Vec<_> = p.tensors().map(|v| v.iter().collect()).unwrap_or_default();
    if gt.len() != pt.len() {
        return Err(bad(
            PLAN_NOT_OF_GRAPH,
            format!("the graph has {} tensors, the plan {}", gt.len(), pt.len()),
        ));
    }
    for (a, b) in gt.iter().zip(&pt) {
        let label = format!(
            "tensor uid {} ('{}')",
            a.uid(),
            a.name().unwrap_or_default()
        );
        let dims = |t: &hipdnn_schema::graph::TensorAttributes<'_>| -> Vec<i64> {
            t.dims().map(|v| v.iter().collect()).unwrap_or_default()
        };
        let strides = |t: &hipdnn_schema::graph::TensorAttributes<'_>| -> Vec<i64> {
            t.strides().map(|v| v.iter().collect()).unwrap_or_default()
        };
        let diff = if a.uid() != b.uid() {
            Some(format!(
                "uid {} in the graph, {} in the plan",
                a.uid(),
                b.uid()
            ))
        } else if a.data_type() != b.data_type() {
            Some(format!(
                "data type {:?} in the graph, {:?} in the plan",
                a.data_type(),
                b.data_type()
            ))
        } else if dims(a) != dims(b) {
            Some(format!(
                "dims {:?} in the graph, {:?} in the plan",
                dims(a),
                dims(b)
            ))
        } else if strides(a) != strides(b) {
            Some(format!(
                "strides {:?} in the graph, {:?} in the plan",
                strides(a),
                strides(b)
            ))
        } else if a.virtual_() != b.virtual_() {
            Some(format!(
                "virtual {} in the graph, {} in the plan",
                a.virtual_(),
                b.virtual_()
            ))
        } else if a.is_runtime_pass_by_value() != b.is_runtime_pass_by_value() {
            Some(format!(
                "runtime pass-by-value {} in the graph, {} in the plan",
                a.is_runtime_pass_by_value(),
                b.is_runtime_pass_by_value()
            ))
        } else {
            None
        };
        if let Some(d) = diff {
            return Err(bad(PLAN_NOT_OF_GRAPH, format!("{label}: {d}")));
        }
    }
    let gn: Vec<_> = g.nodes().map(|v| v.iter().collect()).unwrap_or_default();
    let pn: Vec<_> = p.nodes().map(|v| v.iter().collect()).unwrap_or_default();
    if gn.len() != pn.len() {
        return Err(bad(
            PLAN_NOT_OF_GRAPH,
            format!("the graph has {} nodes, the plan {}", gn.len(), pn.len()),
        ));
    }
    for (i, (a, b)) in gn.iter().zip(&pn).enumerate() {
        if a.attributes_type() != b.attributes_type() {
            return Err(bad(
                PLAN_NOT_OF_GRAPH,
                format!(
                    "node #{i} ('{}'): op {} in the graph, {} in the plan",
                    a.name().unwrap_or_default(),
                    a.attributes_type().variant_name().unwrap_or("NONE"),
                    b.attributes_type().variant_name().unwrap_or("NONE")
                ),
            ));
        }
        // Same op kind: the attribute tables (tensor UIDs, modes, geometry) must be equal
        // too; compare their bytes as the table spans the verifier accepted.
        if attribute_bytes(a) != attribute_bytes(b) {
            return Err(bad(
                PLAN_NOT_OF_GRAPH,
                format!(
                    "node #{i} ('{}'): the {} attributes differ between the graph and the plan",
                    a.name().unwrap_or_default(),
                    a.attributes_type().variant_name().unwrap_or("NONE")
                ),
            ));
        }
    }
    Ok(())
}

/// A comparable image of a node's attribute table: the debug text of the typed table (every
/// field, nested vectors included), independent of where the builder placed it.
fn attribute_bytes(n: &hipdnn_schema::graph::Node<'_>) -> String {
    format!("{:?}", n)
        .split_once(", attributes: ")
        .map_or_else(String::new, |(_, rest)| rest.to_string())
}
