//! Graph API behaviour: naming, shape inference, UIDs, validation messages, and the
//! upstream TestGraphSerialization checklist items that need no backend.

mod common;

use common::assert_round_trips;
use hipdnn::*;

fn t(g: &mut Graph, name: &str, uid: i64, dims: &[i64]) -> TensorId {
    g.tensor(
        TensorAttributes::new(name)
            .uid(uid)
            .data_type(DataType::Float)
            .dims(dims.to_vec())
            .packed_nchw(),
    )
}

fn conv_relu() -> (Graph, TensorId, TensorId) {
    let mut g = Graph::new();
    g.set_name("conv_relu")
        .set_io_data_type(DataType::Half)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = t(&mut g, "x", 1, &[1, 3, 8, 8]);
    let w = t(&mut g, "w", 2, &[4, 3, 3, 3]);
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    let r = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.set_output(r, true).set_uid(r, 4);
    g.assign_uids();
    (g, y, r)
}

#[test]
fn unnamed_ops_and_outputs_get_upstream_names() {
    let (g, y, r) = conv_relu();
    let names: Vec<&str> = g.nodes().map(|(_, n)| n.name()).collect();
    assert_eq!(names, ["ConvFprop_0", "Pointwise_1"]);
    assert_eq!(g.tensor_attributes(y).name, "ConvFprop_0::Y");
    assert_eq!(g.tensor_attributes(r).name, "Pointwise_1::OUT_0");
    assert!(g.tensor_attributes(y).is_virtual);
    assert!(!g.tensor_attributes(r).is_virtual);
    assert_eq!(
        g.tensor_attributes(y).data_type,
        DataType::Float,
        "intermediate type"
    );
}

#[test]
fn conv_relu_has_four_tensors_one_virtual_and_keeps_settings() {
    let (mut g, _, _) = conv_relu();
    g.set_preferred_engine_id(Some(42));
    assert_eq!(g.tensor_count(), 4);
    assert_eq!(g.tensors().filter(|(_, t)| t.is_virtual).count(), 1);
    let (_, json) = assert_round_trips(&g);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["preferred_engine_id"], 42);
    assert_eq!(v["name"], "conv_relu");
    assert_eq!(v["io_data_type"], "HALF");
    assert_eq!(v["intermediate_data_type"], "FLOAT");
    assert_eq!(v["json_version"], JSON_VERSION);
    assert_eq!(v["hipdnn_frontend_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["tensors"][0]["dims"], serde_json::json!([1, 3, 8, 8]));
    assert_eq!(
        v["tensors"][0]["strides"],
        serde_json::json!([192, 64, 8, 1])
    );
    assert_eq!(v["nodes"][0]["attributes_type"], "ConvolutionFwdAttributes");
    assert_eq!(v["nodes"][0]["attributes"]["x_tensor_uid"], 1);
    assert_eq!(
        v["nodes"][0]["attributes"]["conv_mode"],
        "CROSS_CORRELATION"
    );
    let back = Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap();
    assert_eq!(back.preferred_engine_id(), Some(42));
    assert_eq!(back.name(), "conv_relu");
    assert_eq!(back.io_data_type(), DataType::Half);
}

#[test]
fn conv_output_dims_follow_the_upstream_formula() {
    let mut g = Graph::new();
    let x = t(&mut g, "x", 1, &[1, 3, 10, 12]);
    let w = t(&mut g, "w", 2, &[4, 3, 3, 5]);
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .pre_padding([1, 2])
            .post_padding([0, 1])
            .stride([2, 3])
            .dilation([1, 2]),
    );
    // h: floor((10+1+0-1*2-1)/2)+1 = 5; w: floor((12+2+1-2*4-1)/3)+1 = 3
    assert_eq!(g.tensor_attributes(y).dims, vec![1, 4, 5, 3]);
    assert_eq!(g.tensor_attributes(y).strides, vec![60, 15, 3, 1]);
}

#[test]
fn outputs_take_the_layout_of_the_first_input() {
    let mut g = Graph::new();
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .data_type(DataType::Float)
            .dims([1, 3, 8, 8])
            .packed_nhwc(),
    );
    assert_eq!(g.tensor_attributes(x).strides, vec![192, 1, 24, 3]);
    let w = t(&mut g, "w", 2, &[4, 3, 3, 3]);
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    assert_eq!(g.tensor_attributes(y).dims, vec![1, 4, 8, 8]);
    assert_eq!(g.tensor_attributes(y).strides, vec![256, 1, 32, 4]);
}

/// A broadcast input (stride 0) carries no layout: the output of an elementwise op on it is
/// row-major, so its bytes read back in the order a user expects (issue 32 item 1: it used to
/// come out column-major, `[0,0,0,0,0,0,5,5]`).
#[test]
fn an_elementwise_op_on_a_broadcast_input_writes_row_major() {
    let mut g = Graph::new();
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .data_type(DataType::Float)
            .dims([2, 4])
            .strides([0, 1]),
    );
    let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.set_output(y, true).set_uid(y, 2);
    assert_eq!(g.tensor_attributes(y).strides, vec![4, 1]);
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let xb = Buffer::from_slice(&[-1.0f32, 0.0, -2.0, 5.0]);
    let mut yb = Buffer::<f32>::zeros(8);
    g.execute(
        &handle,
        VariantPack::new().input(1, &xb).output(2, &mut yb),
        None,
    )
    .unwrap();
    assert_eq!(
        yb.to_vec().unwrap(),
        vec![0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 5.0]
    );
}

/// The product of a transposed view (`hᵀ·d`, the weight gradient of a linear layer) is
/// row-major, as `torch.matmul`'s: it used to take a's column-major layout.
#[test]
fn a_matmul_of_a_transposed_view_writes_row_major() {
    let (b, f, k) = (5i64, 3i64, 2i64);
    let mut g = Graph::new();
    let ht = g.tensor(
        TensorAttributes::new("h_t")
            .uid(1)
            .data_type(DataType::Float)
            .dims([f, b])
            .strides([1, f]),
    );
    let d = t(&mut g, "d", 2, &[b, k]);
    let y = g.matmul(ht, d, MatmulAttributes::new());
    g.set_output(y, true).set_uid(y, 3);
    assert_eq!(g.tensor_attributes(y).strides, vec![k, 1]);
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let h: Vec<f32> = (0..b * f).map(|i| i as f32).collect(); // (b, f) row-major
    let dv: Vec<f32> = (0..b * k).map(|i| (i % 3) as f32).collect();
    let (hb, db) = (Buffer::from_slice(&h), Buffer::from_slice(&dv));
    let mut yb = Buffer::<f32>::zeros((f * k) as usize);
    g.execute(
        &handle,
        VariantPack::new()
            .input(1, &hb)
            .input(2, &db)
            .output(3, &mut yb),
        None,
    )
    .unwrap();
    let (bu, fu, ku) = (b as usize, f as usize, k as usize);
    let want: Vec<f32> = (0..fu * ku)
        .map(|e| {
            (0..bu)
                .map(|n| h[n * fu + e / ku] * dv[n * ku + e % ku])
                .sum()
        })
        .collect();
    assert_eq!(yb.to_vec().unwrap(), want);
}

#[test]
fn matmul_and_pointwise_broadcast() {
    let mut g = Graph::new();
    let a = t(&mut g, "a", 1, &[2, 1, 4, 8]);
    let b = t(&mut g, "b", 2, &[3, 8, 5]);
    let c = g.matmul(a, b, MatmulAttributes::new());
    assert_eq!(g.tensor_attributes(c).dims, vec![2, 3, 4, 5]);
    let p = t(&mut g, "p", 3, &[4, 1]);
    let q = t(&mut g, "q", 4, &[1, 5]);
    let s = g.pointwise(p, q, PointwiseAttributes::with_mode(PointwiseMode::Add));
    assert_eq!(g.tensor_attributes(s).dims, vec![4, 5]);
    let bias = t(&mut g, "bias", 5, &[3, 1, 1]);
    let s2 = g.pointwise(c, bias, PointwiseAttributes::with_mode(PointwiseMode::Mul));
    assert_eq!(g.tensor_attributes(s2).dims, vec![2, 3, 4, 5]);
}

#[test]
fn resample_dims_and_max_pool_index() {
    let mut g = Graph::new();
    let x = t(&mut g, "x", 1, &[1, 2, 9, 9]);
    let (y, idx) = g.resample(
        x,
        ResampleFwdAttributes::new()
            .window([3, 3])
            .stride([2, 2])
            .pre_padding([1, 1])
            .post_padding([1, 1])
            .resample_mode(ResampleMode::MaxPool)
            .generate_index(true),
    );
    assert_eq!(g.tensor_attributes(y).dims, vec![1, 2, 5, 5]);
    let idx = idx.expect("index output");
    assert_eq!(g.tensor_attributes(idx).data_type, DataType::Int32);
    assert_eq!(g.tensor_attributes(idx).name, "ResampleFwd_0::INDEX");
}

#[test]
fn uid_assignment_counts_up_in_insertion_order_skipping_used_values() {
    let mut g = Graph::new();
    let ids: Vec<TensorId> = [None, Some(1), None, Some(3), None]
        .into_iter()
        .map(|u| {
            let mut a = TensorAttributes::new("t");
            a.uid = u;
            g.tensor(a)
        })
        .collect();
    g.assign_uids();
    let uids: Vec<i64> = ids
        .iter()
        .map(|&i| g.tensor_attributes(i).uid.unwrap())
        .collect();
    assert_eq!(uids, [0, 1, 2, 3, 4]);
}

#[test]
fn duplicate_uids_are_rejected_everywhere() {
    let (mut g, y, _) = conv_relu();
    g.set_uid(y, 1);
    for e in [
        g.validate().unwrap_err(),
        g.to_graph_bytes().unwrap_err(),
        g.to_json().unwrap_err(),
    ] {
        assert_eq!(e.code, ErrorCode::InvalidValue);
        assert!(
            e.message
                .starts_with("Duplicate tensor UIDs found in the graph"),
            "{}",
            e.message
        );
    }
}

#[test]
fn unbuilt_graph_without_uids_validates_and_saves_with_the_uids_build_assigns() {
    let (mut g, y, _) = conv_relu();
    g.clear_uid(y);
    g.validate().unwrap();
    let bytes = g.to_graph_bytes().unwrap();
    let json = g.to_json().unwrap();
    // The graph itself is not changed.
    assert_eq!(g.tensor_attributes(y).uid, None);
    let mut assigned = g.clone();
    assigned.assign_uids();
    let uid = assigned.tensor_attributes(y).uid.unwrap();
    assert_eq!(uid, 0); // the lowest UID not in use
    assert_eq!(bytes, assigned.to_graph_bytes().unwrap());
    assert_eq!(json, assigned.to_json().unwrap());
    let back = Graph::from_graph_bytes(&bytes).unwrap();
    assert_eq!(back.tensor_attributes(y).uid, Some(uid));
}

#[test]
fn valid_graph_validates() {
    let (g, _, _) = conv_relu();
    g.validate().unwrap();
}

#[test]
fn conv_geometry_mismatch_names_node_and_attribute() {
    let mut g = Graph::new();
    let x = t(&mut g, "x", 1, &[1, 3, 8, 8]);
    let w = t(&mut g, "w", 2, &[4, 3, 3, 3]);
    g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1, 1])
            .dilation([1, 1]),
    );
    g.assign_uids();
    let e = g.validate().unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "conv_fprop 'ConvFprop_0': attribute 'stride' has 3 entries, x has 2 spatial dims"
    );
}

#[test]
fn conv_without_dilation_is_attribute_not_set() {
    let mut g = Graph::new();
    let x = t(&mut g, "x", 1, &[1, 3, 8, 8]);
    let w = t(&mut g, "w", 2, &[4, 3, 3, 3]);
    g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new().padding([1, 1]).stride([1, 1]),
    );
    g.assign_uids();
    let e = g.validate().unwrap_err();
    assert_eq!(e.code, ErrorCode::AttributeNotSet);
    assert_eq!(
        e.message,
        "conv_fprop 'ConvFprop_0': attribute 'dilation' is not set"
    );
}

#[test]
fn batchnorm_without_epsilon_is_attribute_not_set() {
    let mut g = Graph::new();
    let x = t(&mut g, "x", 1, &[2, 3, 4, 4]);
    let s = t(&mut g, "s", 2, &[1, 3, 1, 1]);
    let b = t(&mut g, "b", 3, &[1, 3, 1, 1]);
    let out = g.batchnorm(x, s, b, BatchnormAttributes::new());
    assert!(out.next_running_mean.is_none());
    g.assign_uids();
    let e = g.validate().unwrap_err();
    assert_eq!(e.code, ErrorCode::AttributeNotSet);
    assert_eq!(
        e.message,
        "batchnorm 'Batchnorm_0': attribute 'epsilon_tensor_uid' is not set"
    );
    let e = g.to_graph_bytes().unwrap_err();
    assert_eq!(e.code, ErrorCode::AttributeNotSet);
}

#[test]
fn pointwise_arity_must_match_the_mode() {
    let mut g = Graph::new();
    let x = t(&mut g, "x", 1, &[4]);
    g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.assign_uids();
    let e = g.validate().unwrap_err();
    assert_eq!(
        e.message,
        "pointwise 'Pointwise_0': mode ADD takes 2 input(s) but 1 are set"
    );
}

#[test]
fn tensor_rules() {
    let base = TensorAttributes::new("a")
        .data_type(DataType::Float)
        .dims([2, 2])
        .packed_nchw();
    base.validate("a").unwrap();
    let e = base
        .clone()
        .data_type(DataType::Unset)
        .validate("a")
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (ErrorCode::AttributeNotSet, "tensor a: data type is not set")
    );
    let e = base
        .clone()
        .is_virtual(true)
        .runtime_parameter()
        .validate("a")
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    let e = base
        .clone()
        .is_virtual(true)
        .compile_time_constant(TensorValue::Float32(1.0))
        .validate("a")
        .unwrap_err();
    assert_eq!(e.message, "tensor a: a virtual tensor cannot have a value");
    let e = base.clone().strides([1]).validate("a").unwrap_err();
    assert_eq!(e.message, "tensor a: 2 dims but 1 strides");
    let e = base
        .clone()
        .dims(Vec::<i64>::new())
        .strides(Vec::<i64>::new())
        .validate("a")
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::AttributeNotSet);
    let e = base.clone().dims([2, 0]).validate("a").unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    let e = base.clone().alignment(0).validate("a").unwrap_err();
    assert_eq!(e.message, "tensor a: alignment 0 is not >= 1");
}

#[test]
fn disconnected_graph_must_be_split() {
    let mut g = Graph::new();
    let a = t(&mut g, "a", 1, &[4]);
    let b = t(&mut g, "b", 2, &[4]);
    g.pointwise_unary(a, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.pointwise_unary(b, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.assign_uids();
    let e = g.validate().unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message.ends_with("please split the graph"),
        "{}",
        e.message
    );
    // Saving does not require connectivity.
    assert_round_trips(&g);
}

#[test]
fn cycle_is_rejected() {
    let mut g = Graph::new();
    let a = t(&mut g, "a", 1, &[4]);
    let b = t(&mut g, "b", 2, &[4]);
    g.add_node(
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd)
            .name("n0")
            .in_0(a)
            .out_0(b),
    );
    g.add_node(
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd)
            .name("n1")
            .in_0(b)
            .out_0(a),
    );
    let e = g.validate().unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message.starts_with("the graph has a cycle"),
        "{}",
        e.message
    );
    assert_eq!(
        g.to_graph_bytes().unwrap_err().code,
        ErrorCode::InvalidValue
    );
}

#[test]
fn nodes_are_written_in_topological_order() {
    let mut g = Graph::new();
    let a = t(&mut g, "a", 1, &[4]);
    let b = t(&mut g, "b", 2, &[4]);
    let c = t(&mut g, "c", 3, &[4]);
    g.add_node(
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd)
            .name("consumer")
            .in_0(b)
            .out_0(c),
    );
    g.add_node(
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd)
            .name("producer")
            .in_0(a)
            .out_0(b),
    );
    let back = Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap();
    let names: Vec<&str> = back.nodes().map(|(_, n)| n.name()).collect();
    assert_eq!(names, ["producer", "consumer"]);
    assert_round_trips(&back);
}

#[test]
fn shared_unnamed_and_duplicate_named_tensors_survive() {
    let mut g = Graph::new();
    let x = g.tensor(
        TensorAttributes::new("")
            .uid(7)
            .data_type(DataType::Float)
            .dims([4])
            .packed_nchw(),
    );
    let d1 = g.tensor(
        TensorAttributes::new("dup")
            .uid(8)
            .data_type(DataType::Float)
            .dims([4])
            .packed_nchw(),
    );
    let d2 = g.tensor(
        TensorAttributes::new("dup")
            .uid(9)
            .data_type(DataType::Float)
            .dims([4])
            .packed_nchw(),
    );
    let y1 = g.pointwise(x, d1, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y2 = g.pointwise(
        x,
        d2,
        PointwiseAttributes::with_mode(PointwiseMode::Mul).name("dup"),
    );
    g.pointwise(y1, y2, PointwiseAttributes::with_mode(PointwiseMode::Sub));
    g.assign_uids();
    g.validate().unwrap();
    assert_round_trips(&g);
    let back = Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap();
    assert_eq!(back.tensor_attributes(x).name, "");
    assert_eq!(back.tensors_by_name("dup"), vec![d1, d2]);
    let users: Vec<&str> = back
        .nodes()
        .filter(|(_, n)| n.inputs_outputs().0.contains(&x))
        .map(|(_, n)| n.name())
        .collect();
    assert_eq!(users, ["Pointwise_0", "dup"]);
}

#[test]
fn pass_by_value_states_survive() {
    let mut g = Graph::new();
    let x = t(&mut g, "x", 1, &[4]);
    let c = g.tensor(
        TensorAttributes::scalar(TensorValue::Float32(0.5))
            .name("const")
            .uid(2),
    );
    let d = g.tensor(
        TensorAttributes::scalar(TensorValue::Int64(-3))
            .runtime_parameter_with_default(TensorValue::Int64(-3))
            .name("rt_default")
            .uid(3),
    );
    let u = g.tensor(
        TensorAttributes::scalar(TensorValue::Float16(1.5))
            .runtime_parameter()
            .name("rt_user")
            .uid(4),
    );
    let y = g.pointwise(x, c, PointwiseAttributes::with_mode(PointwiseMode::Mul));
    let y = g.pointwise(y, d, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.pointwise(y, u, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.assign_uids();
    g.validate().unwrap();
    assert_round_trips(&g);
    let back = Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap();
    let ta = |t| back.tensor_attributes(t).clone();
    assert_eq!(
        (ta(c).value, ta(c).is_runtime_pass_by_value),
        (Some(TensorValue::Float32(0.5)), false)
    );
    assert_eq!(
        (ta(d).value, ta(d).is_runtime_pass_by_value),
        (Some(TensorValue::Int64(-3)), true)
    );
    assert_eq!((ta(u).value, ta(u).is_runtime_pass_by_value), (None, true));
    assert_eq!(ta(c).dims, vec![1]);
}

#[test]
fn optional_absent_and_present_with_default_stay_distinct() {
    let mut g = Graph::new();
    let x = t(&mut g, "x", 1, &[4]);
    g.pointwise_unary(
        x,
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd)
            .relu_lower_clip(0.0)
            .axis(0),
    );
    g.assign_uids();
    let back = Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap();
    let Operation::Pointwise(p) = back.node(NodeId::from_index(0)) else {
        panic!()
    };
    assert_eq!(p.relu_lower_clip, Some(0.0));
    assert_eq!(p.axis, Some(0));
    assert_eq!(p.relu_upper_clip, None);
    assert_eq!(p.in_1, None);
    let json = g.to_flatbuffer_json().unwrap();
    assert!(
        json.contains("\"relu_lower_clip\": 0.0") && json.contains("\"relu_upper_clip\": null"),
        "{json}"
    );
    // Upstream's format writes the same optional scalars (compact, nlohmann's float text).
    let json = g.to_json().unwrap();
    assert!(
        json.contains("\"relu_lower_clip\":0.0") && json.contains("\"relu_upper_clip\":null"),
        "{json}"
    );
}

#[test]
fn graph_id_and_min_engine_api_version_survive() {
    let (mut g, _, _) = conv_relu();
    let id: [u8; 16] = std::array::from_fn(|i| (i * 17) as u8);
    g.set_id(Some(id))
        .set_min_required_engine_api_version(Some(EngineApiVersion {
            major: 1,
            minor: 2,
            patch: 0,
        }));
    assert_round_trips(&g);
    let back = Graph::from_graph_bytes(&g.to_graph_bytes().unwrap()).unwrap();
    assert_eq!(back.id(), Some(id));
    assert_eq!(
        back.min_required_engine_api_version(),
        Some(EngineApiVersion {
            major: 1,
            minor: 2,
            patch: 0
        })
    );
}

#[test]
fn bad_input_gives_typed_errors() {
    // Issue 12: empty bytes are "not a hipDNN graph" (was "graph bytes failed FlatBuffers
    // verification" before the strict reader).
    let e = Graph::from_graph_bytes(&[]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message
            .starts_with("not a hipDNN graph: 0 bytes are too few for a Graph FlatBuffer"),
        "{}",
        e.message
    );
    let e = Graph::from_json("{").unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    let e = Graph::from_flatbuffer_json("{").unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    let (g, _, _) = conv_relu();
    // Legacy format (Graph::to_flatbuffer_json): its reader's messages.
    let json = g.to_flatbuffer_json().unwrap();
    let e =
        Graph::from_flatbuffer_json(&json.replace("\"x_tensor_uid\": 1", "\"x_tensor_uid\": 99"))
            .unwrap_err();
    assert_eq!(
        e.message,
        "node #0 'ConvFprop_0': attribute 'x_tensor_uid' references UID 99 which no tensor of the graph has"
    );
    let e = Graph::from_flatbuffer_json(
        &json.replace("\"json_version\": \"1.0\"", "\"json_version\": \"2.0\""),
    )
    .unwrap_err();
    assert!(
        e.message.contains("json_version '2.0' is not supported"),
        "{}",
        e.message
    );
    let e =
        Graph::from_flatbuffer_json(&json.replace("\"stride\"", "\"strides_typo\"")).unwrap_err();
    assert!(
        e.message
            .contains("'strides_typo' is not a field of ConvolutionFwdAttributes"),
        "{}",
        e.message
    );
    let e = Graph::from_flatbuffer_json(&json.replace("\"CROSS_CORRELATION\"", "\"SIDEWAYS\""))
        .unwrap_err();
    assert!(
        e.message.contains("unknown enumerator \"SIDEWAYS\""),
        "{}",
        e.message
    );
    // Upstream's format (Graph::to_json / from_json): refusals name the key and the value.
    let json = g.to_json().unwrap();
    assert!(json.contains("\"x_tensor_uid\":1}"), "{json}");
    let refused = |text: String| {
        let e = Graph::from_json(&text).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue, "{e}");
        e.message
    };
    let m = refused(json.replace("\"x_tensor_uid\":1}", "\"x_tensor_uid\":99}"));
    assert!(m.contains("uid 99 names no tensor"), "{m}");
    let m = refused(json.replace("\"CROSS_CORRELATION\"", "\"SIDEWAYS\""));
    assert!(
        m.contains("conv_mode") && m.contains("\"SIDEWAYS\" is not a known spelling"),
        "{m}"
    );
    let m = refused(json.replace("\"ConvolutionFwdAttributes\"", "\"ConvFwd\""));
    assert!(
        m.contains("nodes[0].type") && m.contains("\"ConvFwd\" is not a node type"),
        "{m}"
    );
    let m = refused(json.replacen("{", "{\"name\":\"x\",", 1));
    assert!(m.contains("'name'"), "{m}");
    // Unknown keys are accepted (forward compatibility).
    let g2 = Graph::from_json(&json.replacen("{", "{\"future_key\":[1],", 1)).unwrap();
    assert_eq!(g2.to_json().unwrap(), json);
}

#[test]
fn full_precision_and_non_finite_scalars_survive() {
    let mut g = Graph::new();
    let x = t(&mut g, "x", 1, &[4]);
    let d = g.tensor(TensorAttributes::scalar(TensorValue::Float64(0.1 + 0.2)).uid(2));
    let f =
        g.tensor(TensorAttributes::scalar(TensorValue::Float32(f32::MIN_POSITIVE / 3.0)).uid(3));
    let i = g.tensor(TensorAttributes::scalar(TensorValue::Float32(f32::NEG_INFINITY)).uid(4));
    let y = g.pointwise(
        x,
        d,
        PointwiseAttributes::with_mode(PointwiseMode::Add)
            .relu_upper_clip(f32::INFINITY)
            .relu_lower_clip(1.0e-45),
    );
    let y = g.pointwise(y, f, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.pointwise(y, i, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.assign_uids();
    let (_, json) = assert_round_trips(&g);
    let back = Graph::from_flatbuffer_json(&json).unwrap();
    assert_eq!(
        back.tensor_attributes(d).value,
        Some(TensorValue::Float64(0.30000000000000004))
    );
    assert_eq!(
        back.tensor_attributes(i).value,
        Some(TensorValue::Float32(f32::NEG_INFINITY))
    );
    assert!(json.contains("\"relu_upper_clip\": \"inf\""), "{json}");
    // Upstream's format prints doubles at full precision and non-finite values as `null`, as
    // upstream's writer does: they do not survive (a `null` scalar value is refused on read).
    let up = g.to_json().unwrap();
    assert!(up.contains("\"value\":0.30000000000000004,"), "{up}");
    assert!(up.contains("\"value\":3.9183149698404465e-39,"), "{up}");
    assert!(up.contains("\"relu_upper_clip\":null,"), "{up}");
    assert!(up.contains("\"value\":null,"), "{up}");
    let e = Graph::from_json(&up).unwrap_err();
    assert!(
        e.message.contains("'value' must be a number"),
        "{}",
        e.message
    );
}

/// The layout table of issue 32 item 1: the exact strides inferred for op outputs, per op and
/// input layout. Outputs are packed (no padding, no stride 0) in the order the user reads:
/// row-major over the output dims, or channels-last when the input that sets the layout is
/// channels-last. A permuted (transposed) input gives a row-major output, not the input's
/// order as PyTorch keeps it: `Buffer::to_vec` returns memory order, so the packed order is
/// what a user reads; matmul is always row-major. For a binary op the layout comes from
/// the first input that spans the output (a broadcast bias carries none).
#[test]
fn inferred_output_strides_follow_the_layout_table() {
    fn input(g: &mut Graph, name: &str, dims: &[i64], strides: &[i64]) -> TensorId {
        g.tensor(
            TensorAttributes::new(name)
                .data_type(DataType::Float)
                .dims(dims.to_vec())
                .strides(strides.to_vec()),
        )
    }
    let relu = || PointwiseAttributes::with_mode(PointwiseMode::ReluFwd);
    let add = || PointwiseAttributes::with_mode(PointwiseMode::Add);
    // (case, input dims, input strides, output strides) for a unary pointwise op.
    /// Dims or strides.
    type L = &'static [i64];
    let unary: &[(&str, L, L, L)] = &[
        ("row-major", &[2, 3], &[3, 1], &[3, 1]),
        ("broadcast row", &[2, 4], &[0, 1], &[4, 1]),
        ("broadcast column", &[2, 4], &[1, 0], &[4, 1]),
        ("broadcast middle", &[2, 3, 4], &[4, 0, 1], &[12, 4, 1]),
        ("transposed", &[3, 2], &[1, 3], &[2, 1]),
        ("padded rows", &[2, 3], &[8, 1], &[3, 1]),
        ("padded transposed", &[3, 2], &[1, 4], &[2, 1]),
        ("permuted 3-D", &[2, 3, 4], &[1, 8, 2], &[12, 4, 1]),
        (
            "column-major 4-D",
            &[2, 3, 4, 5],
            &[1, 2, 6, 24],
            &[60, 20, 5, 1],
        ),
        ("NCHW", &[2, 3, 4, 5], &[60, 20, 5, 1], &[60, 20, 5, 1]),
        (
            "NCHW padded W",
            &[1, 3, 4, 4],
            &[96, 32, 8, 1],
            &[48, 16, 4, 1],
        ),
        ("NHWC", &[2, 3, 4, 5], &[60, 1, 15, 3], &[60, 1, 15, 3]),
        (
            "NHWC padded C",
            &[1, 3, 2, 2],
            &[16, 1, 8, 4],
            &[12, 1, 6, 3],
        ),
        (
            "NHWC one channel",
            &[2, 1, 4, 5],
            &[20, 1, 5, 1],
            &[20, 20, 5, 1],
        ),
        (
            "NDHWC",
            &[1, 2, 2, 2, 2],
            &[16, 1, 8, 4, 2],
            &[16, 1, 8, 4, 2],
        ),
    ];
    for (case, dims, strides, want) in unary {
        let mut g = Graph::new();
        let x = input(&mut g, "x", dims, strides);
        let y = g.pointwise_unary(x, relu());
        assert_eq!(&g.tensor_attributes(y).strides, want, "pointwise {case}");
    }
    // Binary ops: (case, a, b, output strides).
    type T = (L, L);
    let binary: &[(&str, T, T, L)] = &[
        (
            "NHWC + bias",
            (&[2, 3, 2, 2], &[12, 1, 6, 3]),
            (&[1, 3, 1, 1], &[3, 1, 1, 1]),
            &[12, 1, 6, 3],
        ),
        (
            "bias + NHWC",
            (&[1, 3, 1, 1], &[3, 1, 1, 1]),
            (&[2, 3, 2, 2], &[12, 1, 6, 3]),
            &[12, 1, 6, 3],
        ),
        (
            "broadcast + transposed",
            (&[2, 4], &[0, 1]),
            (&[2, 4], &[1, 2]),
            &[4, 1],
        ),
        (
            "row + column vector",
            (&[4, 1], &[1, 1]),
            (&[1, 5], &[5, 1]),
            &[5, 1],
        ),
        (
            "padded + NCHW",
            (&[1, 2, 2, 2], &[16, 8, 4, 1]),
            (&[1, 2, 2, 2], &[4, 1, 4, 2]),
            &[8, 4, 2, 1],
        ),
    ];
    for (case, (ad, as_), (bd, bs), want) in binary {
        let mut g = Graph::new();
        let a = input(&mut g, "a", ad, as_);
        let b = input(&mut g, "b", bd, bs);
        let y = g.pointwise(a, b, add());
        assert_eq!(&g.tensor_attributes(y).strides, want, "pointwise {case}");
    }
    // Matmul: row-major whatever the operands' layouts.
    let matmul: &[(&str, T, T, L)] = &[
        (
            "transposed a",
            (&[3, 2], &[1, 3]),
            (&[2, 4], &[4, 1]),
            &[4, 1],
        ),
        (
            "transposed b",
            (&[3, 2], &[2, 1]),
            (&[2, 4], &[1, 2]),
            &[4, 1],
        ),
        (
            "broadcast batch",
            (&[2, 3, 2], &[0, 2, 1]),
            (&[2, 4], &[4, 1]),
            &[12, 4, 1],
        ),
        (
            "padded rows",
            (&[3, 2], &[8, 1]),
            (&[2, 4], &[8, 1]),
            &[4, 1],
        ),
    ];
    for (case, (ad, as_), (bd, bs), want) in matmul {
        let mut g = Graph::new();
        let a = input(&mut g, "a", ad, as_);
        let b = input(&mut g, "b", bd, bs);
        let y = g.matmul(a, b, MatmulAttributes::new());
        assert_eq!(&g.tensor_attributes(y).strides, want, "matmul {case}");
    }
    // Reductions (global pooling) and normalizations keep x's layout.
    let reduce: &[(&str, L, L, L, L)] = &[
        (
            "NCHW pool",
            &[2, 3, 4, 5],
            &[60, 20, 5, 1],
            &[2, 3, 1, 1],
            &[3, 1, 1, 1],
        ),
        (
            "NHWC pool",
            &[2, 3, 4, 5],
            &[60, 1, 15, 3],
            &[2, 3, 1, 1],
            &[3, 1, 3, 3],
        ),
        ("padded rows", &[2, 3], &[8, 1], &[2, 1], &[1, 1]),
        ("transposed rows", &[3, 2], &[1, 3], &[1, 2], &[2, 1]),
    ];
    for (case, dims, strides, out, want) in reduce {
        let mut g = Graph::new();
        let x = input(&mut g, "x", dims, strides);
        let y = g.reduction(
            x,
            out.to_vec(),
            ReductionAttributes::new().mode(ReductionMode::Add),
        );
        assert_eq!(&g.tensor_attributes(y).strides, want, "reduction {case}");
    }
    let mut g = Graph::new();
    let x = input(&mut g, "x", &[2, 3, 2, 2], &[12, 1, 6, 3]);
    let w = input(&mut g, "w", &[4, 3, 1, 1], &[3, 1, 3, 3]);
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([0, 0])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    assert_eq!(g.tensor_attributes(y).strides, [16, 1, 8, 4], "conv NHWC");
    let s = input(&mut g, "s", &[1, 3, 1, 1], &[3, 1, 1, 1]);
    let b = input(&mut g, "b", &[1, 3, 1, 1], &[3, 1, 1, 1]);
    let e = g.scalar("eps", TensorValue::Float32(1e-5));
    let attrs = LayernormAttributes::new()
        .epsilon(e)
        .forward_phase(NormFwdPhase::Inference);
    let (ln, _, _) = g.layernorm(x, s, b, attrs);
    assert_eq!(
        g.tensor_attributes(ln).strides,
        [12, 1, 6, 3],
        "layernorm NHWC"
    );
}

/// A per-channel bias added to a channels-last activation, bias first: the output is
/// channels-last like the activation (it used to take the bias's row-major order), and its
/// bytes are the activation's order plus the bias.
#[test]
fn a_bias_plus_a_channels_last_input_writes_channels_last() {
    let mut g = Graph::new();
    let bias = g.tensor(
        TensorAttributes::new("bias")
            .data_type(DataType::Float)
            .dims([1, 2, 1, 1]),
    );
    let x = g.tensor(
        TensorAttributes::new("x")
            .data_type(DataType::Float)
            .dims([1, 2, 1, 3])
            .packed_nhwc(),
    );
    let y = g.pointwise(bias, x, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.set_output(y, true);
    // Packed channels-last, N·H·W·C (H has extent 1).
    assert_eq!(g.tensor_attributes(y).strides, [6, 1, 6, 2]);
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    let bb = Buffer::from_slice(&[100.0f32, 200.0]);
    // NHWC memory: (w0: c0 c1) (w1: c0 c1) (w2: c0 c1).
    let xb = Buffer::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let mut yb = Buffer::<f32>::zeros(6);
    g.execute(
        &handle,
        VariantPack::new()
            .bind(bias, &bb)
            .bind(x, &xb)
            .bind(y, &mut yb),
        None,
    )
    .unwrap();
    assert_eq!(
        yb.to_vec().unwrap(),
        [101.0, 202.0, 103.0, 204.0, 105.0, 206.0]
    );
}

/// A transposed input (`[3, 2]` stored column-major) through an elementwise op: the output is
/// packed row-major, so `to_vec` reads it in the order the dims are written (issue 32 item 1).
#[test]
fn an_elementwise_op_on_a_transposed_input_reads_back_row_major() {
    let mut g = Graph::new();
    let x = g.tensor(
        TensorAttributes::new("x")
            .data_type(DataType::Float)
            .dims([3, 2])
            .strides([1, 3]),
    );
    let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::Identity));
    g.set_output(y, true);
    assert_eq!(g.tensor_attributes(y).strides, [2, 1]);
    let handle = Handle::cpu().unwrap();
    g.build(&handle).unwrap();
    // Column-major memory: x[i][j] = mem[i + 3·j].
    let xb = Buffer::from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let mut yb = Buffer::<f32>::zeros(6);
    g.execute(
        &handle,
        VariantPack::new().bind(x, &xb).bind(y, &mut yb),
        None,
    )
    .unwrap();
    assert_eq!(yb.to_vec().unwrap(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
}
