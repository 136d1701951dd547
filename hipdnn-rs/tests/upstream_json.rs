//! Upstream's JSON graph format for the 7 node kinds added in issue 35 (deliverable 3):
//! SDPA backward, block-scale dequantize and quantize, custom op, resample backward, MoE
//! grouped matmul and its backward.
//!
//! Each fixture under `tests/upstream_json/` is the text upstream's writer emits for the graph
//! the test builds, assembled by `tests/upstream_json/make.py` (independent of the Rust writer)
//! from the key list of upstream's per-op `to_json` in
//! `projects/hipdnn/flatbuffers_sdk/include/hipdnn_flatbuffers_sdk/utilities/json/<Table>.hpp`
//! (ROCm/rocm-libraries; the stored copies are named at each test). For every fixture:
//! JSON → graph gives the graph built here; that graph → JSON is the fixture byte for byte;
//! and graph → binary → graph → JSON is the fixture again. A graph holding all 23 node kinds
//! round-trips the same ways.

mod common;

use hipdnn::*;
use serde_json::Value;
use std::collections::BTreeSet;

const SDPA_BACKWARD: &str = include_str!("upstream_json/sdpa_backward.json");
const BLOCK_SCALE_DEQUANTIZE: &str = include_str!("upstream_json/block_scale_dequantize.json");
const BLOCK_SCALE_QUANTIZE: &str = include_str!("upstream_json/block_scale_quantize.json");
const CUSTOM_OP: &str = include_str!("upstream_json/custom_op.json");
const RESAMPLE_BWD: &str = include_str!("upstream_json/resample_bwd.json");
const MOE_GROUPED_MATMUL: &str = include_str!("upstream_json/moe_grouped_matmul.json");
const MOE_GROUPED_MATMUL_BWD: &str = include_str!("upstream_json/moe_grouped_matmul_bwd.json");

/// A graph with the fixtures' settings: compute and intermediate float, I/O `io`.
fn graph(name: &str, io: DataType) -> Graph {
    let mut g = Graph::new();
    g.set_name(name)
        .set_compute_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_io_data_type(io);
    g
}

/// A non-virtual tensor with packed row-major strides and the default alignment.
fn t(g: &mut Graph, uid: i64, name: &str, dims: &[i64], dt: DataType) -> TensorId {
    g.tensor(
        TensorAttributes::new(name)
            .uid(uid)
            .data_type(dt)
            .dims(dims.to_vec()),
    )
}

/// JSON → graph is `want`; `want` → JSON is `fixture` byte for byte; JSON → graph → JSON and
/// graph → binary → graph → JSON give the fixture again.
fn assert_fixture(fixture: &str, want: &Graph) {
    assert!(
        !fixture.ends_with('\n'),
        "nlohmann dump() ends without a newline"
    );
    let read = Graph::from_json(fixture).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&read, want, "graph read from the fixture");
    assert_eq!(want.to_json().unwrap(), fixture, "writer vs fixture");
    assert_eq!(read.to_json().unwrap(), fixture, "JSON → graph → JSON");
    let bytes = read.to_graph_bytes().unwrap();
    let back = Graph::from_graph_bytes(&bytes).unwrap();
    assert_eq!(
        back.to_json().unwrap(),
        fixture,
        "graph → binary → graph → JSON"
    );
}

/// Key order of `SdpaBackwardAttributes.hpp` `to_json` (tfalders/rocm-libraries @f6b59e29):
/// `inputs` (q, k, v, o, do, stats, then nullable scale, attn_mask, seq_len_q, seq_len_kv,
/// seed, offset, dropout_mask, dropout_scale, dropout_scale_inv), `outputs` (dq, dk, dv,
/// nullable dbias), `parameters` (alibi_mask, padding_mask, causal_mask,
/// causal_mask_bottom_right, nullable dropout_probability, attn_scale_value, left_bound,
/// right_bound, diagonal_alignment as `TOP_LEFT`/`BOTTOM_RIGHT`); nlohmann sorts them.
#[test]
fn sdpa_backward_fixture_reads_and_rewrites_byte_identically() {
    let mut g = graph("sdpa_backward", DataType::Half);
    let qd = [1, 2, 8, 16];
    let h = DataType::Half;
    let [q, k, v, o, d_o] =
        [(1, "q"), (2, "k"), (3, "v"), (4, "o"), (5, "do")].map(|(u, n)| t(&mut g, u, n, &qd, h));
    let stats = t(&mut g, 6, "stats", &[1, 2, 8, 1], DataType::Float);
    let [dq, dk, dv] = [(7, "dq"), (8, "dk"), (9, "dv")].map(|(u, n)| t(&mut g, u, n, &qd, h));
    let one = [1, 1, 1, 1];
    let scale = t(&mut g, 10, "scale", &one, DataType::Float);
    let mask = t(&mut g, 11, "attn_mask", &[1, 1, 8, 8], h);
    let slq = t(&mut g, 12, "seq_len_q", &one, DataType::Int32);
    let slkv = t(&mut g, 13, "seq_len_kv", &one, DataType::Int32);
    let seed = t(&mut g, 14, "seed", &one, DataType::Int64);
    let offset = t(&mut g, 15, "offset", &one, DataType::Int64);
    let dmask = t(&mut g, 16, "dropout_mask", &[1, 1, 8, 8], h);
    let dscale = t(&mut g, 17, "dropout_scale", &one, DataType::Float);
    let dscale_inv = t(&mut g, 18, "dropout_scale_inv", &one, DataType::Float);
    let dbias = t(&mut g, 19, "dbias", &[1, 1, 8, 8], h);
    let [dq2, dk2, dv2] =
        [(20, "dq2"), (21, "dk2"), (22, "dv2")].map(|(u, n)| t(&mut g, u, n, &qd, h));
    let base = |name: &str| {
        let mut a = SdpaBackwardAttributes::new()
            .name(name)
            .compute_data_type(DataType::Float);
        (a.q, a.k, a.v, a.o, a.d_o, a.stats) =
            (Some(q), Some(k), Some(v), Some(o), Some(d_o), Some(stats));
        a
    };
    let mut a = base("sdpa_bwd_full");
    (a.dq, a.dk, a.dv, a.dbias) = (Some(dq), Some(dk), Some(dv), Some(dbias));
    (a.scale, a.attn_mask, a.seq_len_q, a.seq_len_kv) =
        (Some(scale), Some(mask), Some(slq), Some(slkv));
    (a.seed, a.offset, a.dropout_mask) = (Some(seed), Some(offset), Some(dmask));
    (a.dropout_scale, a.dropout_scale_inv) = (Some(dscale), Some(dscale_inv));
    (a.alibi_mask, a.padding_mask, a.causal_mask_bottom_right) = (true, true, true);
    (a.dropout_probability, a.attn_scale_value) = (Some(0.125), Some(0.25));
    (a.left_bound, a.right_bound) = (Some(-3), Some(0));
    a.diagonal_alignment = DiagonalAlignment::BottomRight;
    g.add_node(a);
    let mut a = base("sdpa_bwd_plain");
    (a.dq, a.dk, a.dv) = (Some(dq2), Some(dk2), Some(dv2));
    g.add_node(a);
    assert_fixture(SDPA_BACKWARD, &g);
}

/// Key order of `BlockScaleDequantizeAttributes.hpp` `to_json` (tfalders @f6b59e29):
/// `inputs` (x, scale), `outputs` (y), `block_size` (int32 array, written even when empty),
/// `is_negative_scale` (always written).
#[test]
fn block_scale_dequantize_fixture_reads_and_rewrites_byte_identically() {
    let mut g = graph("block_scale_dequantize", DataType::Float);
    let x = t(&mut g, 1, "x", &[4, 64], DataType::Fp8E4m3);
    let s = t(&mut g, 2, "scale", &[4, 2], DataType::Fp8E8m0);
    let y = t(&mut g, 3, "y", &[4, 64], DataType::Float);
    let y2 = t(&mut g, 4, "y2", &[4, 64], DataType::Float);
    for (name, y, bs, neg) in [
        ("dequant", y, vec![1, 32], true),
        ("dequant_default", y2, vec![], false),
    ] {
        let mut a = BlockScaleDequantizeAttributes::new()
            .name(name)
            .compute_data_type(DataType::Float)
            .block_size(bs)
            .is_negative_scale(neg);
        (a.x, a.scale, a.y) = (Some(x), Some(s), Some(y));
        g.add_node(a);
    }
    assert_fixture(BLOCK_SCALE_DEQUANTIZE, &g);
}

/// Key order of `BlockScaleQuantizeAttributes.hpp` `to_json` (tfalders @f6b59e29): `inputs`
/// (x), `outputs` (y, scale), `block_size` (int32, only when non-zero), `axis` (only when
/// present), `transpose` (always).
#[test]
fn block_scale_quantize_fixture_reads_and_rewrites_byte_identically() {
    let mut g = graph("block_scale_quantize", DataType::Float);
    let x = t(&mut g, 1, "x", &[4, 64], DataType::Float);
    let y = t(&mut g, 2, "y", &[4, 64], DataType::Fp4E2m1);
    let s = t(&mut g, 3, "scale", &[4, 2], DataType::Fp8E8m0);
    let y2 = t(&mut g, 4, "y2", &[4, 64], DataType::Fp4E2m1);
    let s2 = t(&mut g, 5, "scale2", &[4, 2], DataType::Fp8E8m0);
    let mut a = BlockScaleQuantizeAttributes::new()
        .name("quant")
        .compute_data_type(DataType::Float)
        .block_size(32)
        .axis(1)
        .transpose(true);
    (a.x, a.y, a.scale) = (Some(x), Some(y), Some(s));
    g.add_node(a);
    let mut a = BlockScaleQuantizeAttributes::new()
        .name("quant_default")
        .compute_data_type(DataType::Float);
    (a.x, a.y, a.scale) = (Some(x), Some(y2), Some(s2));
    g.add_node(a);
    assert_fixture(BLOCK_SCALE_QUANTIZE, &g);
}

/// Key order of `CustomOpAttributes.hpp` `to_json` (tfalders @f6b59e29): flat
/// `custom_op_id`, `input_tensor_uids`, `output_tensor_uids`, `data` (integers 0–255).
#[test]
fn custom_op_fixture_reads_and_rewrites_byte_identically() {
    let mut g = graph("custom_op", DataType::Float);
    let table = t(&mut g, 1, "table", &[8, 4], DataType::Float);
    let ids = t(&mut g, 2, "ids", &[3], DataType::Int32);
    let rows = t(&mut g, 3, "rows", &[3, 4], DataType::Float);
    let count = t(&mut g, 4, "count", &[1], DataType::Int64);
    let out = t(&mut g, 5, "out", &[3, 4], DataType::Float);
    let mut a = CustomOpAttributes::new()
        .name("gather")
        .compute_data_type(DataType::Float)
        .custom_op_id("my_plugin.my_op")
        .data(vec![0, 1, 127, 128, 255]);
    (a.inputs, a.outputs) = (vec![table, ids], vec![rows, count]);
    g.add_node(a);
    let mut a = CustomOpAttributes::new()
        .name("no_data")
        .compute_data_type(DataType::Float)
        .custom_op_id("my_plugin.other_op");
    (a.inputs, a.outputs) = (vec![rows], vec![out]);
    g.add_node(a);
    assert_fixture(CUSTOM_OP, &g);
}

/// Key order of `ResampleBwdAttributes.hpp` `to_json` (tvy-amd/rocm-libraries @c1ceef0d):
/// flat `dy_tensor_uid`, `dx_tensor_uid`, `index_tensor_uid` (only when present),
/// `pre_padding`, `post_padding`, `stride`, `window`, `resample_mode`, `padding_mode`
/// (lowercase spellings). No `generate_index` (not in the schema).
#[test]
fn resample_bwd_fixture_reads_and_rewrites_byte_identically() {
    let mut g = graph("resample_bwd", DataType::Float);
    let dy = t(&mut g, 1, "dy", &[1, 8, 16, 16], DataType::Float);
    let index = t(&mut g, 2, "index", &[1, 8, 16, 16], DataType::Int32);
    let dx = t(&mut g, 3, "dx", &[1, 8, 32, 32], DataType::Float);
    let dx2 = t(&mut g, 4, "dx2", &[1, 8, 32, 32], DataType::Float);
    let mut a = ResampleBwdAttributes::new()
        .name("maxpool_bwd")
        .compute_data_type(DataType::Float)
        .pre_padding(vec![0, 0])
        .post_padding(vec![1, 1])
        .stride(vec![2, 2])
        .window(vec![2, 2])
        .resample_mode(ResampleMode::MaxPool)
        .padding_mode(PaddingMode::NegInfPad);
    (a.dy, a.dx, a.index) = (Some(dy), Some(dx), Some(index));
    g.add_node(a);
    let mut a = ResampleBwdAttributes::new()
        .name("avgpool_bwd")
        .compute_data_type(DataType::Float)
        .pre_padding(vec![0, 0])
        .post_padding(vec![0, 0])
        .stride(vec![2, 2])
        .window(vec![2, 2])
        .resample_mode(ResampleMode::AvgPoolExcludePadding)
        .padding_mode(PaddingMode::ZeroPad);
    (a.dy, a.dx) = (Some(dy), Some(dx2));
    g.add_node(a);
    assert_fixture(RESAMPLE_BWD, &g);
}

/// Key order of `MoeGroupedMatmulAttributes.hpp` `to_json` (tvy-amd @49cebce1): `inputs`
/// (token, weight, first_token_offset, token_index and token_ks only when present),
/// `outputs` (output), `mode` (`none`/`gather`/`scatter`), `top_k` (int32).
#[test]
fn moe_grouped_matmul_fixture_reads_and_rewrites_byte_identically() {
    let mut g = graph("moe_grouped_matmul", DataType::Half);
    let h = DataType::Half;
    let token = t(&mut g, 1, "token", &[10, 16], h);
    let weight = t(&mut g, 2, "weight", &[4, 16, 32], h);
    let fto = t(&mut g, 3, "first_token_offset", &[4], DataType::Int64);
    let ti = t(&mut g, 4, "token_index", &[10], DataType::Int32);
    let tk = t(&mut g, 5, "token_ks", &[10], DataType::Int32);
    let out = t(&mut g, 6, "output", &[10, 32], h);
    let out2 = t(&mut g, 7, "output2", &[10, 32], h);
    let mut a = MoeGroupedMatmulAttributes::new()
        .name("moe_gather")
        .compute_data_type(DataType::Float)
        .mode(MoeGroupedMatmulMode::Gather)
        .top_k(2);
    (a.token, a.weight, a.first_token_offset) = (Some(token), Some(weight), Some(fto));
    (a.token_index, a.token_ks, a.output) = (Some(ti), Some(tk), Some(out));
    g.add_node(a);
    let mut a = MoeGroupedMatmulAttributes::new()
        .name("moe_plain")
        .compute_data_type(DataType::Float)
        .top_k(1);
    (a.token, a.weight, a.first_token_offset) = (Some(token), Some(weight), Some(fto));
    a.output = Some(out2);
    g.add_node(a);
    assert_fixture(MOE_GROUPED_MATMUL, &g);
}

/// Key order of `MoeGroupedMatmulBwdAttributes.hpp` `to_json` (tvy-amd @2cd1715c): `inputs`
/// (doutput, token, first_token_offset), `outputs` (dweight).
#[test]
fn moe_grouped_matmul_bwd_fixture_reads_and_rewrites_byte_identically() {
    let mut g = graph("moe_grouped_matmul_bwd", DataType::Float);
    let d = t(&mut g, 1, "doutput", &[10, 32], DataType::Float);
    let token = t(&mut g, 2, "token", &[10, 16], DataType::Float);
    let fto = t(&mut g, 3, "first_token_offset", &[4], DataType::Int64);
    let dw = t(&mut g, 4, "dweight", &[4, 16, 32], DataType::Float);
    let mut a = MoeGroupedMatmulBwdAttributes::new()
        .name("moe_bwd")
        .compute_data_type(DataType::Float);
    (a.doutput, a.token, a.first_token_offset, a.dweight) =
        (Some(d), Some(token), Some(fto), Some(dw));
    g.add_node(a);
    assert_fixture(MOE_GROUPED_MATMUL_BWD, &g);
}

/// `text` with the first `from` replaced by `to`; `from` must occur.
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from} not in {text}");
    text.replacen(from, to, 1)
}

/// The reader takes what upstream's reader takes by default: the keys upstream reads with
/// `contains` (block scale `block_size`, `is_negative_scale`, `transpose`, `axis`) may be
/// missing and read as the schema defaults.
#[test]
fn keys_upstream_reads_as_optional_may_be_missing() {
    let text = edit(BLOCK_SCALE_DEQUANTIZE, "\"block_size\":[1,32],", "");
    let g = Graph::from_json(&edit(&text, ",\"is_negative_scale\":true", "")).unwrap();
    let (_, n) = g.nodes().next().unwrap();
    let Operation::BlockScaleDequantize(a) = n else {
        panic!("{n:?}")
    };
    assert_eq!(
        (a.block_size.as_slice(), a.is_negative_scale),
        (&[][..], false)
    );
    let text = edit(BLOCK_SCALE_QUANTIZE, "\"axis\":1,\"block_size\":32,", "");
    let g = Graph::from_json(&edit(&text, ",\"transpose\":true", "")).unwrap();
    let (_, n) = g.nodes().next().unwrap();
    let Operation::BlockScaleQuantize(a) = n else {
        panic!("{n:?}")
    };
    assert_eq!((a.block_size, a.axis, a.transpose), (0, None, false));
}

/// What upstream reads leniently or not at all is refused with `InvalidValue`, naming the
/// node and key: a missing required key, an unknown spelling, a value out of an int32 or
/// byte range (upstream wraps), `null` for a key upstream omits when absent.
#[test]
fn malformed_new_kind_nodes_are_refused_naming_node_and_key() {
    let refused = |text: String| {
        let e = Graph::from_json(&text).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue, "{e}");
        e.message
    };
    assert_eq!(
        refused(SDPA_BACKWARD.replacen("\"dropout_scale_inv_tensor_uid\":18,", "", 1)),
        "JSON graph: nodes[0] 'sdpa_bwd_full': key 'dropout_scale_inv_tensor_uid' is missing"
    );
    assert_eq!(
        refused(SDPA_BACKWARD.replacen("\"BOTTOM_RIGHT\"", "\"bottom_right\"", 1)),
        "JSON graph: 'nodes[0].parameters.diagonal_alignment': \"bottom_right\" is not a known spelling"
    );
    assert_eq!(
        refused(MOE_GROUPED_MATMUL.replacen("\"mode\":\"gather\"", "\"mode\":\"GATHER\"", 1)),
        "JSON graph: 'nodes[0].mode': \"GATHER\" is not a known spelling"
    );
    assert_eq!(
        refused(MOE_GROUPED_MATMUL.replacen("\"top_k\":2", "\"top_k\":4294967298", 1)),
        "JSON graph: nodes[0]: top_k 4294967298 is outside the 32-bit range"
    );
    assert_eq!(
        refused(MOE_GROUPED_MATMUL.replacen(
            "\"token_ks_tensor_uid\":5",
            "\"token_ks_tensor_uid\":55",
            1
        )),
        "JSON graph: nodes[0] 'moe_gather'.token_ks_tensor_uid: uid 55 names no tensor"
    );
    assert_eq!(
        refused(BLOCK_SCALE_DEQUANTIZE.replacen("[1,32]", "[1,-2147483649]", 1)),
        "JSON graph: nodes[0]: block_size -2147483649 is outside the 32-bit range"
    );
    assert_eq!(
        refused(BLOCK_SCALE_QUANTIZE.replacen("\"axis\":1", "\"axis\":null", 1)),
        "JSON graph: 'axis' must be an integer"
    );
    assert_eq!(
        refused(CUSTOM_OP.replacen("[0,1,127,128,255]", "[0,1,127,128,256]", 1)),
        "JSON graph: nodes[0]: data byte 256 is outside 0..=255"
    );
    assert_eq!(
        refused(CUSTOM_OP.replacen("\"input_tensor_uids\":[1,2]", "\"input_tensor_uids\":1", 1)),
        "JSON graph: nodes[0] 'gather'.input_tensor_uids must be an array of uids"
    );
    assert_eq!(
        refused(RESAMPLE_BWD.replacen("\"maxpool\"", "\"max_pool\"", 1)),
        "JSON graph: 'nodes[0].resample_mode': \"max_pool\" is not a known spelling"
    );
    assert_eq!(
        refused(MOE_GROUPED_MATMUL_BWD.replacen(",\"outputs\":{\"dweight_tensor_uid\":4}", "", 1)),
        "JSON graph: nodes[0]: key 'outputs' is missing"
    );
}

/// The key structure of a node object: keys, recursively into the groups.
fn shape(v: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Value::Object(m) = v {
        for (k, x) in m {
            out.insert(k.clone());
            for inner in shape(x) {
                out.insert(format!("{k}.{inner}"));
            }
        }
    }
    out
}

/// One node of every kind (`common::Gen` in full mode: every optional field present, every
/// value non-default) survives JSON → graph → JSON byte for byte and graph → binary → graph →
/// JSON; the 7 new kinds' node objects have the keys of their fixtures' first (fully set)
/// node.
#[test]
fn a_graph_with_all_23_node_kinds_round_trips() {
    let mut g = Graph::new();
    {
        let mut gn = common::Gen::new(&mut g, 35, true);
        for which in 0..common::Gen::OPS.len() {
            gn.add_op(which);
        }
    }
    g.set_name("all_23_kinds");
    g.assign_uids();
    let kinds: BTreeSet<&str> = g.nodes().map(|(_, n)| n.schema_table()).collect();
    assert_eq!(kinds.len(), 23, "{kinds:?}");

    let json = g.to_json().unwrap();
    let read = Graph::from_json(&json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read, g);
    assert_eq!(read.to_json().unwrap(), json, "JSON → graph → JSON");
    let back = Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap();
    assert_eq!(
        back.to_json().unwrap(),
        json,
        "graph → binary → graph → JSON"
    );

    let doc: Value = serde_json::from_str(&json).unwrap();
    let types: BTreeSet<&str> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, kinds, "every kind under its NodeAttributes spelling");
    for fixture in [
        SDPA_BACKWARD,
        BLOCK_SCALE_DEQUANTIZE,
        BLOCK_SCALE_QUANTIZE,
        CUSTOM_OP,
        RESAMPLE_BWD,
        MOE_GROUPED_MATMUL,
        MOE_GROUPED_MATMUL_BWD,
    ] {
        let f: Value = serde_json::from_str(fixture).unwrap();
        let want = &f["nodes"][0];
        let got = doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["type"] == want["type"])
            .unwrap();
        assert_eq!(shape(got), shape(want), "{}", want["type"]);
    }
}
