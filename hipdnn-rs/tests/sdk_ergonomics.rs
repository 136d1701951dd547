//! The SDK's short path (issue 13): `build(&handle)` / `build_with`, packed strides by default,
//! outputs bound `&mut`, arrays that carry their layout, `to_array` of a static rank, the
//! `hipdnn::ndarray` re-export, and one level of context in error messages.

use hipdnn::ndarray::{Array2, Ix2, Ix3, array};
use hipdnn::{
    Buffer, DataType, ErrorCode, Graph, Handle, HeuristicMode, MatmulAttributes,
    NO_FINALIZED_PLAN_MESSAGE, TensorAttributes, VariantPack,
};

/// `c = a · b` with a (2×3) and b (3×2) described by `ta`/`tb`, built on the CPU.
fn matmul_graph(ta: TensorAttributes, tb: TensorAttributes) -> (Graph, Handle) {
    let h = Handle::cpu().unwrap();
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(ta.uid(1));
    let b = g.tensor(tb.uid(2));
    let c = g.matmul(a, b, MatmulAttributes::new());
    g.set_output(c, true).set_uid(c, 3);
    g.build(&h).unwrap();
    (g, h)
}

#[test]
fn dims_alone_get_packed_row_major_strides() {
    let mut g = Graph::new();
    let t = g.tensor(TensorAttributes::new("t").dims([2, 3, 4]));
    assert_eq!(g.tensor_attributes(t).strides, vec![12, 4, 1]);
    // Given strides are kept.
    let u = g.tensor(TensorAttributes::new("u").dims([2, 3]).strides([1, 2]));
    assert_eq!(g.tensor_attributes(u).strides, vec![1, 2]);
}

#[test]
fn build_uses_the_default_mode_and_build_with_refuses_an_empty_mode_list() {
    let (g, _) = matmul_graph(
        TensorAttributes::new("a").dims([1, 2, 3]),
        TensorAttributes::new("b").dims([1, 3, 2]),
    );
    assert_eq!(g.engine_name().unwrap(), "hipdnn.reference.cpu");
    let h = Handle::cpu().unwrap();
    let mut g2 = g.clone();
    let e = g2.build_with(&h, &[]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(e.message, "build_with needs at least one heuristic mode");
    g2.build_with(&h, &[HeuristicMode::Fallback]).unwrap();
    assert_eq!(g2.to_binary().unwrap(), g.to_binary().unwrap());
}

#[test]
fn an_output_bound_read_only_is_refused_before_the_engine_runs() {
    let (g, h) = matmul_graph(
        TensorAttributes::new("a").dims([1, 2, 3]),
        TensorAttributes::new("b").dims([1, 3, 2]),
    );
    let (a, b) = (Buffer::<f32>::zeros(6), Buffer::<f32>::zeros(6));
    let c = Buffer::<f32>::filled(4, 7.0);
    let pack = VariantPack::new().input(1, &a).input(2, &b).with(3, &c);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message.starts_with("tensor 'Matmul_0::C' (uid 3) is an output of the graph but its buffer is bound read-only"),
        "{}",
        e.message
    );
    assert_eq!(c.to_vec().unwrap(), [7.0; 4]);
    let mut c = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .input(1, &a)
        .input(2, &b)
        .output(3, &mut c);
    g.execute(&h, pack, None).unwrap();
}

#[test]
fn arrays_carry_their_layout_and_to_array_returns_the_static_rank() {
    let a: Array2<f32> = array![[1., 2., 3.], [4., 5., 6.]];
    // b is given as the transpose of a 2×3 array: a column-major 3×2 view.
    let bt: Array2<f32> = array![[1., 0., 2.], [0., 1., 1.]];
    let b = bt.t();
    let a3 = a.view().insert_axis(hipdnn::ndarray::Axis(0));
    let b3 = b.insert_axis(hipdnn::ndarray::Axis(0));
    let ta = TensorAttributes::for_array("a", &a3);
    let tb = TensorAttributes::for_array("b", &b3);
    assert_eq!(ta.dims, vec![1, 2, 3]);
    assert_eq!(tb.dims, vec![1, 3, 2]);
    assert_eq!(tb.strides, vec![6, 1, 3]); // the transpose is honoured, not re-packed
    assert_eq!(tb.data_type, DataType::Float);
    let (abuf, bbuf) = (Buffer::from_array(&a3), Buffer::from_array(&b3));
    assert_eq!(bbuf.to_vec().unwrap(), [1., 0., 2., 0., 1., 1.]); // memory order of bt
    let (g, h) = matmul_graph(ta, tb);
    let mut c = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .input(1, &abuf)
        .input(2, &bbuf)
        .output(3, &mut c);
    g.execute(&h, pack, None).unwrap();
    let y = g.tensor_by_uid(3).unwrap();
    let out = c.to_array::<Ix3>(g.tensor_attributes(y)).unwrap();
    let want = a.dot(&b);
    assert_eq!(want, array![[7., 5.], [16., 11.]]);
    assert_eq!(out.index_axis(hipdnn::ndarray::Axis(0), 0), want);
    // The wrong rank or element type is refused.
    let e = c.to_array::<Ix2>(g.tensor_attributes(y)).unwrap_err();
    assert_eq!(
        e.message,
        "tensor 'Matmul_0::C' has 3 dims; to_array asked for rank 2"
    );
    let e = Buffer::<f64>::zeros(4)
        .to_array::<Ix3>(g.tensor_attributes(y))
        .unwrap_err();
    assert_eq!(
        e.message,
        "tensor 'Matmul_0::C' is FLOAT; to_array asked for DOUBLE elements"
    );
    // A reversed view is copied in row-major order with row-major strides.
    let rev = a.slice(hipdnn::ndarray::s![.., ..;-1]);
    let tr = TensorAttributes::for_array("r", &rev);
    assert_eq!(tr.strides, vec![3, 1]);
    assert_eq!(
        Buffer::from_array(&rev).to_vec().unwrap(),
        [3., 2., 1., 6., 5., 4.]
    );
}

#[test]
fn messages_name_one_type_spelling_and_one_level_of_context() {
    assert!(!NO_FINALIZED_PLAN_MESSAGE.contains("build_plans"));
    let (g, h) = matmul_graph(
        TensorAttributes::new("a").dims([1, 2, 3]),
        TensorAttributes::new("b").dims([1, 3, 2]),
    );
    let (a, b) = (Buffer::<f32>::zeros(6), Buffer::<f32>::zeros(6));
    let mut c = Buffer::<f32>::zeros(4);
    let extra = Buffer::<f32>::zeros(1);
    // A UID the plan does not know: refused by the backend at execute.
    let pack = VariantPack::new()
        .input(1, &a)
        .input(2, &b)
        .output(3, &mut c)
        .input(99, &extra);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::HipdnnBackendError);
    assert!(
        e.message.starts_with("Execution failed (HIPDNN_STATUS_"),
        "{e}"
    );
    assert!(!e.message.contains("Backend error"), "{e}");
    let wrong = Buffer::<f64>::zeros(6);
    let mut c = Buffer::<f32>::zeros(4);
    let pack = VariantPack::new()
        .input(1, &wrong)
        .input(2, &b)
        .output(3, &mut c);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(
        e.message,
        "buffer for tensor 'a' (uid 1) holds DOUBLE elements, but the tensor's data type is FLOAT"
    );
}
