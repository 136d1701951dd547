//! Agreement with the reference FlatBuffers compiler (flatc 25.12.19):
//! - committed vectors made by `flatc -b` (see `vectors/make.sh`) load through our API with the
//!   exact values of their JSON sources, and the flatc-style JSON sources load to the same graph;
//! - flatc decodes our bytes (`flatc --json --raw-binary --strict-json`) into JSON that loads
//!   back to the very graph we wrote, and prints the values we expect.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hipdnn::*;

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

fn schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/fbs/graph.fbs")
}

fn load_vector(name: &str) -> (Graph, Graph) {
    let bin = std::fs::read(vectors().join(format!("{name}.bin"))).unwrap();
    let json = std::fs::read_to_string(vectors().join(format!("{name}.json"))).unwrap();
    let from_bin = Graph::from_graph_bytes(&bin).unwrap();
    let from_json = Graph::from_flatbuffer_json(&json).unwrap();
    (from_bin, from_json)
}

fn by_uid(g: &Graph, uid: i64) -> &TensorAttributes {
    g.tensor_attributes(g.tensor_by_uid(uid).unwrap())
}

#[test]
fn flatc_conv_relu_vector_loads_with_exact_values() {
    let (g, from_json) = load_vector("conv_relu");
    assert_eq!(
        g, from_json,
        "flatc bytes and flatc JSON describe the same graph"
    );
    assert_eq!(g.name(), "flatc_conv_relu");
    assert_eq!(
        (
            g.compute_data_type(),
            g.intermediate_data_type(),
            g.io_data_type()
        ),
        (DataType::Float, DataType::Float, DataType::Half)
    );
    assert_eq!(g.preferred_engine_id(), Some(42));
    assert!(g.is_override_shape_enabled());
    assert_eq!(
        g.min_required_engine_api_version(),
        Some(EngineApiVersion {
            major: 1,
            minor: 2,
            patch: 3
        })
    );
    assert_eq!(g.id().unwrap()[15], 255);
    assert_eq!(g.id().unwrap()[1], 17);
    assert_eq!(g.tensor_count(), 6);
    assert_eq!(by_uid(&g, 1).dims, vec![1, 3, 8, 8]);
    assert_eq!(by_uid(&g, 1).strides, vec![192, 64, 8, 1]);
    assert_eq!(by_uid(&g, 1).alignment, 16);
    assert_eq!(by_uid(&g, 2).alignment, 64);
    assert!(by_uid(&g, 3).is_virtual && !by_uid(&g, 1).is_virtual);
    assert_eq!(by_uid(&g, 4).value, Some(TensorValue::Float32(0.25)));
    assert!(!by_uid(&g, 4).is_runtime_pass_by_value);
    assert_eq!(by_uid(&g, 5).ragged_offset, g.tensor_by_uid(6));
    assert_eq!(
        by_uid(&g, 6).value,
        Some(TensorValue::Int64(-9_000_000_000))
    );
    assert!(by_uid(&g, 6).is_runtime_pass_by_value);
    assert_eq!(by_uid(&g, 6).data_type, DataType::Int32);
    let Operation::ConvFprop(c) = g.node(NodeId::from_index(0)) else {
        panic!("node 0 is not a conv")
    };
    assert_eq!(c.name, "conv");
    assert_eq!(c.compute_data_type, DataType::Float);
    assert_eq!(
        (c.x, c.w, c.y),
        (g.tensor_by_uid(1), g.tensor_by_uid(2), g.tensor_by_uid(3))
    );
    assert_eq!(
        (c.pre_padding.clone(), c.post_padding.clone()),
        (vec![1, 1], vec![1, 2])
    );
    assert_eq!(c.conv_mode, ConvMode::CrossCorrelation);
    let Operation::Pointwise(p) = g.node(NodeId::from_index(1)) else {
        panic!("node 1 is not pointwise")
    };
    assert_eq!(p.mode, PointwiseMode::ReluFwd);
    assert_eq!(p.relu_lower_clip, Some(0.0));
    assert_eq!(p.relu_upper_clip, None);
    assert_eq!(p.relu_lower_clip_slope, Some(0.25));
    assert_eq!(p.in_1, g.tensor_by_uid(4));
    assert_eq!(p.in_2, None);
    // Our re-encoding carries the same information.
    assert_eq!(
        Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap(),
        g
    );
}

#[test]
fn flatc_sdpa_vector_keeps_optional_fields_and_every_value_member() {
    let (g, from_json) = load_vector("sdpa_optional");
    assert_eq!(g, from_json);
    assert_eq!(g.compute_data_type(), DataType::Unset);
    assert_eq!(g.preferred_engine_id(), None);
    assert_eq!(g.min_required_engine_api_version(), None);
    assert_eq!(g.id(), None);
    assert_eq!(by_uid(&g, 14).value, Some(TensorValue::Float16(0.125)));
    assert_eq!(by_uid(&g, 15).value, Some(TensorValue::Bool(true)));
    assert_eq!(by_uid(&g, 16).value, Some(TensorValue::Float8(200)));
    assert_eq!(by_uid(&g, 17).value, Some(TensorValue::Float64(3.5)));
    let Operation::Sdpa(a) = g.node(NodeId::from_index(0)) else {
        panic!("not sdpa")
    };
    assert_eq!(a.compute_data_type, DataType::Unset);
    assert_eq!(
        a.generate_stats,
        Some(false),
        "present-with-default stays present"
    );
    assert!(a.causal_mask && !a.alibi_mask);
    assert_eq!(a.dropout_probability, Some(0.5));
    assert_eq!(a.attn_scale_value, None);
    assert_eq!((a.left_bound, a.right_bound), (Some(0), Some(-1)));
    assert_eq!(a.max_seq_len_kv, Some(4096));
    assert_eq!(a.diagonal_alignment, DiagonalAlignment::BottomRight);
    assert_eq!(a.mma_core_mode, DataType::Fp8E5m2Fnuz);
    assert_eq!(a.implementation, AttentionImplementation::Unified);
    assert_eq!(a.stats, None);
    assert_eq!(
        (a.scale, a.seed, a.offset, a.sink_token),
        (
            g.tensor_by_uid(14),
            g.tensor_by_uid(15),
            g.tensor_by_uid(16),
            g.tensor_by_uid(17)
        )
    );
    assert_eq!(
        Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap(),
        g
    );
}

fn flatc_available() -> bool {
    Command::new("flatc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `flatc --json --raw-binary --strict-json graph.fbs -- our.bin` and returns its JSON.
/// flatc's JSON of `bytes`; `defaults` adds `--defaults-json` (fields at their default
/// printed too: the legacy reader requires `uid`, whose default 0 flatc otherwise omits).
fn flatc_decode(bytes: &[u8], tag: &str, defaults: bool) -> String {
    let dir = std::env::temp_dir().join(format!("hipdnn-flatc-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("our.bin");
    std::fs::write(&bin, bytes).unwrap();
    let out = Command::new("flatc")
        .args(["--json", "--raw-binary", "--strict-json"])
        .args(defaults.then_some("--defaults-json"))
        .arg("-o")
        .arg(&dir)
        .arg(schema())
        .arg("--")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "flatc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = std::fs::read_to_string(dir.join("our.json")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    json
}

/// Prints `skipped: <why>` on stderr directly (not through the harness-captured `println!`), so
/// the skip shows in plain `cargo test` output.
fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

#[test]
fn flatc_decodes_our_bytes_to_the_same_graph() {
    if !flatc_available() {
        skipped("flatc not installed");
        return;
    }
    let mut g = Graph::new();
    g.set_name("ours")
        .set_io_data_type(DataType::Half)
        .set_preferred_engine_id(Some(-5));
    g.set_id(Some([7; 16]))
        .set_min_required_engine_api_version(Some(EngineApiVersion {
            major: 1,
            minor: 2,
            patch: 0,
        }));
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .data_type(DataType::Half)
            .dims([1, 3, 8, 8])
            .packed_nhwc()
            .alignment(128),
    );
    let w = g.tensor(
        TensorAttributes::new("w")
            .uid(2)
            .data_type(DataType::Half)
            .dims([4, 3, 3, 3])
            .packed_nchw(),
    );
    let s = g.tensor(
        TensorAttributes::scalar(TensorValue::BFloat16(-2.5))
            .uid(3)
            .runtime_parameter_with_default(TensorValue::BFloat16(-2.5)),
    );
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .pre_padding([1, 0])
            .post_padding([2, 1])
            .stride([2, 1])
            .dilation([1, 3]),
    );
    let z = g.pointwise(
        y,
        s,
        PointwiseAttributes::with_mode(PointwiseMode::Mul)
            .swish_beta(1.5)
            .axis(0),
    );
    g.set_output(z, true);
    g.assign_uids();
    let bytes = g.to_graph_bytes().unwrap();
    let json = flatc_decode(&bytes, "fixed", false);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["name"], "ours");
    assert_eq!(v["io_data_type"], "HALF");
    assert_eq!(v["preferred_engine_id"], -5);
    assert_eq!(
        v["min_required_engine_api_version"],
        serde_json::json!({"major": 1, "minor": 2, "patch": 0})
    );
    assert_eq!(
        v["tensors"][0]["strides"],
        serde_json::json!([192, 1, 24, 3])
    );
    assert_eq!(v["tensors"][0]["alignment"], 128);
    assert_eq!(v["tensors"][2]["value_type"], "BFloat16Value");
    assert_eq!(v["tensors"][2]["value"]["value"], -2.5);
    assert_eq!(v["tensors"][2]["is_runtime_pass_by_value"], true);
    assert_eq!(v["nodes"][0]["attributes_type"], "ConvolutionFwdAttributes");
    assert_eq!(
        v["nodes"][0]["attributes"]["dilation"],
        serde_json::json!([1, 3])
    );
    assert_eq!(
        v["nodes"][0]["attributes"]["conv_mode"],
        "CROSS_CORRELATION"
    );
    assert_eq!(v["nodes"][1]["attributes"]["operation"], "MUL");
    assert_eq!(
        v["nodes"][1]["attributes"]["axis_tensor_uid"], 0,
        "optional present with 0 is printed"
    );
    assert_eq!(v["nodes"][1]["attributes"]["swish_beta"], 1.5);
    assert!(
        v["nodes"][1]["attributes"].get("elu_alpha").is_none(),
        "absent optional is not printed"
    );
    let json = flatc_decode(&bytes, "fixed-defaults", true);
    assert_eq!(Graph::from_flatbuffer_json(&json).unwrap(), g);
}

#[test]
fn flatc_decodes_random_graphs_to_the_same_graph() {
    if !flatc_available() {
        skipped("flatc not installed");
        return;
    }
    for seed in 0..6u64 {
        let g = common::random_graph(seed, 12);
        let json = flatc_decode(&g.to_graph_bytes().unwrap(), &seed.to_string(), true);
        let back = Graph::from_flatbuffer_json(&json)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{json}"));
        assert_eq!(back, g, "seed {seed}");
    }
}
