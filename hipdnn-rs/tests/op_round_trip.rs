//! One test per operation: every attribute of the op's schema table set to a non-default
//! value, then bytes and JSON round trips must be identities and keep every value.

mod common;

use common::{Gen, NON_DEFAULT_ENUM_NAMES, assert_round_trips};
use hipdnn::*;
use serde_json::Value;

/// Field names of `table` in `schema/fbs/graph.fbs`, in declaration order (a union field
/// would appear once, without its `_type` twin; op tables have none).
fn schema_fields(table: &str) -> Vec<String> {
    let fbs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../schema/fbs/graph.fbs"
    ))
    .unwrap();
    let start = fbs
        .find(&format!("table {table} {{"))
        .unwrap_or_else(|| panic!("table {table} not in graph.fbs"));
    let body = &fbs[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.lines()
        .map(|l| l.split("//").next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(|l| l.split(':').next().unwrap().trim().to_owned())
        .collect()
}

/// Builds a graph holding one `op` node with every attribute non-default, round-trips it, and
/// checks (through the JSON image) that no attribute of the node is at its schema default and
/// that the node's JSON has exactly the schema's fields.
fn every_attribute(op: &str) -> Graph {
    let which = Gen::OPS.iter().position(|o| *o == op).unwrap();
    let mut g = Graph::new();
    g.set_name("every_attribute");
    Gen::new(&mut g, 7 + which as u64, true).add_op(which);
    assert_eq!(g.node_count(), 1);
    // Non-zero UIDs for the outputs (UID 0 is the schema default of a `*_tensor_uid`).
    let unset: Vec<TensorId> = g
        .tensors()
        .filter(|(_, t)| t.uid.is_none())
        .map(|(i, _)| i)
        .collect();
    for t in unset {
        g.set_uid(t, 1000 + t.index() as i64);
    }
    let (_, json) = assert_round_trips(&g);
    let v: Value = serde_json::from_str(&json).unwrap();
    let node = &v["nodes"][0];
    assert_ne!(node["compute_data_type"], "UNSET");
    let attrs = node["attributes"].as_object().unwrap();
    let table = node["attributes_type"].as_str().unwrap();
    assert_eq!(
        attrs.keys().cloned().collect::<Vec<String>>(),
        schema_fields(table),
        "{op}: JSON fields vs graph.fbs"
    );
    for (k, val) in attrs {
        let default = match val {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Array(a) => a.is_empty(),
            Value::String(s) => s.is_empty() || NON_DEFAULT_ENUM_NAMES.contains(&s.as_str()),
            Value::Object(_) => false,
        };
        // A unary/binary pointwise node has no in_1/in_2 by definition (the ternary test
        // covers them).
        let exempt = (op == "pointwise_unary"
            && (k == "in_1_tensor_uid" || k == "in_2_tensor_uid"))
            || (op == "pointwise_binary" && k == "in_2_tensor_uid");
        assert!(
            exempt || !default,
            "{op}: attribute '{k}' is at its default ({val})"
        );
    }
    g
}

#[test]
fn round_trip_pointwise_unary_every_attribute() {
    let g = every_attribute("pointwise_unary");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_pointwise_binary_every_attribute() {
    let g = every_attribute("pointwise_binary");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_pointwise_ternary_every_attribute() {
    let g = every_attribute("pointwise_ternary");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_conv_fprop_every_attribute() {
    let g = every_attribute("conv_fprop");
    let (_, node) = g.nodes().next().unwrap();
    let Operation::ConvFprop(a) = node else {
        panic!("not a conv")
    };
    let back = Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap();
    let Operation::ConvFprop(b) = back.node(NodeId::from_index(0)) else {
        panic!("not a conv")
    };
    assert_eq!(b.stride, a.stride);
    assert_eq!(b.stride.len(), 2);
    assert!(b.stride.iter().all(|&s| s >= 1));
    assert_ne!(b.conv_mode, ConvMode::Unset);
    assert_eq!(
        back.tensor_attributes(b.y.unwrap()).name,
        format!("{}::Y", b.name)
    );
}

#[test]
fn round_trip_conv_dgrad_every_attribute() {
    let g = every_attribute("conv_dgrad");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_conv_wgrad_every_attribute() {
    let g = every_attribute("conv_wgrad");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_matmul_every_attribute() {
    let g = every_attribute("matmul");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_batchnorm_every_attribute() {
    let g = every_attribute("batchnorm");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_batchnorm_backward_every_attribute() {
    let g = every_attribute("batchnorm_backward");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_batchnorm_inference_every_attribute() {
    let g = every_attribute("batchnorm_inference");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_batchnorm_inference_variance_ext_every_attribute() {
    let g = every_attribute("batchnorm_inference_variance_ext");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_layernorm_every_attribute() {
    let g = every_attribute("layernorm");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_layernorm_backward_every_attribute() {
    let g = every_attribute("layernorm_backward");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_rmsnorm_every_attribute() {
    let g = every_attribute("rmsnorm");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_rmsnorm_backward_every_attribute() {
    let g = every_attribute("rmsnorm_backward");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_sdpa_every_attribute() {
    let g = every_attribute("sdpa");
    let Operation::Sdpa(a) = g.node(NodeId::from_index(0)) else {
        panic!("not sdpa")
    };
    assert_eq!(a.generate_stats, Some(true));
    assert!(a.stats.is_some() && a.max.is_some() && a.amax_o.is_some());
    assert_eq!(g.tensor_attributes(a.o.unwrap()).dims, vec![1, 2, 16, 8]);
    assert_eq!(
        g.tensor_attributes(a.stats.unwrap()).dims,
        vec![1, 2, 16, 1]
    );
}

#[test]
fn round_trip_sdpa_backward_every_attribute() {
    let g = every_attribute("sdpa_backward");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_reduction_every_attribute() {
    let g = every_attribute("reduction");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_resample_every_attribute() {
    let g = every_attribute("resample");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_resample_bwd_every_attribute() {
    let g = every_attribute("resample_bwd");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_block_scale_quantize_every_attribute() {
    let g = every_attribute("block_scale_quantize");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_block_scale_dequantize_every_attribute() {
    let g = every_attribute("block_scale_dequantize");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_custom_op_every_attribute() {
    let g = every_attribute("custom_op");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_moe_grouped_matmul_every_attribute() {
    let g = every_attribute("moe_grouped_matmul");
    assert_eq!(g.node_count(), 1);
}

#[test]
fn round_trip_moe_grouped_matmul_bwd_every_attribute() {
    let g = every_attribute("moe_grouped_matmul_bwd");
    assert_eq!(g.node_count(), 1);
}
