//! Binding a variant pack by `TensorId` and by tensor name (issue 32 item 5), as cuDNN frontend
//! binds by tensor object: resolved against the graph at execute time, with typed errors for
//! a handle outside the graph, an unknown or ambiguous name and a virtual tensor.

use hipdnn::*;

/// `y = relu(a + b)`: a and b `[4]` FLOAT with build-assigned UIDs, y named "y".
fn add_relu() -> (Graph, Handle, [TensorId; 4]) {
    let mut g = Graph::new();
    let a = g.tensor(
        TensorAttributes::new("a")
            .data_type(DataType::Float)
            .dims([4]),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .data_type(DataType::Float)
            .dims([4]),
    );
    let s = g.pointwise(a, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y = g.pointwise_unary(s, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.set_output(y, true).set_tensor_name(y, "y");
    let h = Handle::cpu().unwrap();
    g.build(&h).unwrap();
    (g, h, [a, b, s, y])
}

fn bufs() -> (Buffer<f32>, Buffer<f32>) {
    (
        Buffer::from_slice(&[1.0, -2.0, 3.0, -4.0]),
        Buffer::from_slice(&[0.5, 0.5, 0.5, 0.5]),
    )
}

const WANT: [f32; 4] = [1.5, 0.0, 3.5, 0.0];

#[test]
fn binding_by_tensor_id_by_name_and_by_uid_give_the_same_output() {
    let (g, h, [a, b, _, y]) = add_relu();
    let (ab, bb) = bufs();
    let mut y1 = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .bind(a, &ab)
        .bind(b, &bb)
        .bind(y, &mut y1);
    g.execute(&h, pack, None).unwrap();
    assert_eq!(y1.to_vec().unwrap(), WANT);

    let mut y2 = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .named("a", &ab)
        .named("b", &bb)
        .named("y", &mut y2);
    g.execute(&h, pack, None).unwrap();
    assert_eq!(y2.to_vec().unwrap(), WANT);

    let uid = |t| g.tensor_attributes(t).uid.unwrap();
    let mut y3 = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .input(uid(a), &ab)
        .named("b", &bb)
        .output(uid(y), &mut y3);
    g.execute(&h, pack, None).unwrap();
    assert_eq!(y3.to_vec().unwrap(), WANT);
}

#[test]
fn a_tensor_bound_twice_keeps_its_last_binding_whichever_way_it_was_named() {
    let (g, h, [a, b, _, y]) = add_relu();
    let (ab, bb) = bufs();
    let zeros = Buffer::<f32>::zeros(4);
    let uid_a = g.tensor_attributes(a).uid.unwrap();
    // id then UID: the UID binding is later and wins.
    let mut y1 = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .bind(a, &zeros)
        .input(uid_a, &ab)
        .bind(b, &bb)
        .bind(y, &mut y1);
    g.execute(&h, pack, None).unwrap();
    assert_eq!(y1.to_vec().unwrap(), WANT);
    // UID then name: the name binding is later and wins.
    let mut y2 = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .input(uid_a, &zeros)
        .named("a", &ab)
        .bind(b, &bb)
        .bind(y, &mut y2);
    assert_eq!(pack.len(), 4);
    assert_eq!(pack.uids(), [uid_a]);
    g.execute(&h, pack, None).unwrap();
    assert_eq!(y2.to_vec().unwrap(), WANT);
}

#[test]
fn an_unknown_name_is_refused_with_the_names_that_take_a_buffer() {
    let (g, h, [a, b, _, _]) = add_relu();
    let (ab, bb) = bufs();
    let mut yb = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .bind(a, &ab)
        .bind(b, &bb)
        .named("out", &mut yb);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "the variant pack binds tensor name 'out', but no tensor of the graph has that name; the tensors that take a buffer are 'a', 'b', 'y'"
    );
}

#[test]
fn an_ambiguous_name_is_refused_with_the_uids_it_names() {
    let (mut g, _, [a, b, _, y]) = add_relu();
    g.set_tensor_name(b, "a");
    let h = Handle::cpu().unwrap();
    g.build(&h).unwrap();
    let (ab, bb) = bufs();
    let mut yb = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .named("a", &ab)
        .bind(b, &bb)
        .bind(y, &mut yb);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    let (ua, ub) = (
        g.tensor_attributes(a).uid.unwrap(),
        g.tensor_attributes(b).uid.unwrap(),
    );
    assert_eq!(
        e.message,
        format!(
            "the variant pack binds tensor name 'a', which names 2 tensors of the graph (uid {ua}, uid {ub}); rename them (Graph::set_tensor_name) or bind by TensorId or UID"
        )
    );
}

#[test]
fn a_tensor_id_outside_the_graph_is_refused() {
    let (g, h, [a, b, _, y]) = add_relu();
    let (ab, bb) = bufs();
    let mut yb = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .bind(a, &ab)
        .bind(b, &bb)
        .bind(TensorId::from_index(9), &bb)
        .bind(y, &mut yb);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "the variant pack binds tensor #9, but the graph has 4 tensors; bind a TensorId this graph returned"
    );
}

#[test]
fn a_virtual_tensor_bound_by_id_or_name_is_refused() {
    let (g, h, [a, b, s, y]) = add_relu();
    let (ab, bb) = bufs();
    let mut sb = Buffer::<f32>::zeros(4);
    let mut yb = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .bind(a, &ab)
        .bind(b, &bb)
        .bind(s, &mut sb)
        .bind(y, &mut yb);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "the variant pack binds tensor 'Pointwise_0::OUT_0' (#2), which is virtual: an intermediate has no buffer; mark it an output with Graph::set_output before build, or do not bind it"
    );
    let pack = VariantPack::new()
        .bind(a, &ab)
        .bind(b, &bb)
        .named("Pointwise_0::OUT_0", &mut sb);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert!(
        e.message.starts_with(
            "the variant pack binds tensor 'Pointwise_0::OUT_0' (#2), which is virtual"
        ),
        "{}",
        e.message
    );
    assert_eq!(yb.to_vec().unwrap(), [0.0; 4], "nothing ran");
}

#[test]
fn names_and_ids_resolve_on_a_graph_loaded_from_its_saved_bytes() {
    let (g, h, [a, b, _, y]) = add_relu();
    let loaded = Graph::from_binary(&h, &g.to_binary().unwrap()).unwrap();
    let (ab, bb) = bufs();
    let mut yb = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .named("a", &ab)
        .bind(b, &bb)
        .named("y", &mut yb);
    loaded.execute(&h, pack, None).unwrap();
    assert_eq!(yb.to_vec().unwrap(), WANT);
    // A plan loaded without its graph has no tensors: bind by UID there.
    let plan_only =
        Graph::from_compiled_plan_binary(&h, &g.to_compiled_plan_binary().unwrap()).unwrap();
    let pack = VariantPack::new().bind(a, &ab).bind(y, &mut yb);
    let e = plan_only.execute(&h, pack, None).unwrap_err();
    assert_eq!(
        e.message,
        "the variant pack binds tensor #0, but the graph has 0 tensors; bind a TensorId this graph returned (a plan loaded without its graph binds by UID only)"
    );
}
