//! Operation descriptors through the C ABI: each supported operation is assembled from TENSOR
//! and operation descriptors, finalized into an operation graph, planned and executed on the
//! CPU through libhipdnn_backend.so. The graph the C ABI serializes must carry the intended
//! node and settings (read back with the SDK), and the C execution must equal the SDK's
//! execution of that graph bit for bit.

mod common;

use common::sym;
use hipdnn::{Buffer, Graph, Handle, Operation, VariantPack};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::ptr::null_mut;

type P = *mut c_void;

/// Thin wrappers over the exports (exact C signatures).
struct Api {
    create: unsafe extern "C" fn(i32, *mut P) -> i32,
    destroy: unsafe extern "C" fn(P) -> i32,
    set: unsafe extern "C" fn(P, i32, i32, i64, *const c_void) -> i32,
    get: unsafe extern "C" fn(P, i32, i32, i64, *mut i64, P) -> i32,
    finalize: unsafe extern "C" fn(P) -> i32,
    execute: unsafe extern "C" fn(P, P, P) -> i32,
    graph_bytes: unsafe extern "C" fn(P, usize, *mut usize, *mut u8) -> i32,
    handle_create: unsafe extern "C" fn(*mut P) -> i32,
    handle_destroy: unsafe extern "C" fn(P) -> i32,
    last_error: unsafe extern "C" fn(*mut i8, usize),
}

fn api() -> Api {
    // SAFETY: the types are the exports' C signatures (header).
    unsafe {
        Api {
            create: sym("hipdnnBackendCreateDescriptor"),
            destroy: sym("hipdnnBackendDestroyDescriptor"),
            set: sym("hipdnnBackendSetAttribute"),
            get: sym("hipdnnBackendGetAttribute"),
            finalize: sym("hipdnnBackendFinalize"),
            execute: sym("hipdnnBackendExecute"),
            graph_bytes: sym("hipdnnBackendGetSerializedBinaryGraph_ext"),
            handle_create: sym("hipdnnCreate"),
            handle_destroy: sym("hipdnnDestroy"),
            last_error: sym("hipdnnGetLastErrorString"),
        }
    }
}

/// An attribute value as the C caller passes it.
enum V {
    T(u32),
    I(Vec<i64>),
    F(f32),
    B(bool),
    E(i32, i32),
    D(i32),
}

struct T {
    uid: i64,
    dims: Vec<i64>,
    is_virtual: bool,
    /// A baked f32 scalar (TENSOR_VALUE_EXT); such a tensor takes no buffer.
    value: Option<f32>,
    /// A runtime pass-by-value scalar (IS_RUNTIME_PASS_BY_VALUE_EXT): a host pointer.
    runtime: bool,
}

fn packed(dims: &[i64]) -> Vec<i64> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

impl Api {
    #[track_caller]
    fn ok(&self, s: i32, what: &str) {
        if s != 0 {
            let mut b = vec![0i8; 2048];
            // SAFETY: 2048-byte buffer.
            unsafe { (self.last_error)(b.as_mut_ptr(), b.len()) };
            // SAFETY: NUL-terminated by the library.
            let m = unsafe { std::ffi::CStr::from_ptr(b.as_ptr()) };
            panic!("{what}: status {s}: {m:?}");
        }
    }

    fn desc(&self, t: i32) -> P {
        let mut d = null_mut();
        // SAFETY: valid output pointer.
        self.ok(unsafe { (self.create)(t, &mut d) }, "create");
        d
    }

    fn set(&self, d: P, name: i32, ty: i32, n: usize, p: *const c_void) {
        // SAFETY: `p` points to `n` elements of the C type of `ty`.
        self.ok(
            unsafe { (self.set)(d, name, ty, n as i64, p) },
            &format!("set {name}"),
        );
    }

    fn tensor(&self, t: &T) -> P {
        let d = self.desc(14);
        let f32_c = 0i32;
        self.set(d, 1300, 3, 1, (&t.uid as *const i64).cast());
        self.set(d, 1302, 1, 1, (&f32_c as *const i32).cast());
        self.set(d, 1303, 3, t.dims.len(), t.dims.as_ptr().cast());
        let s = packed(&t.dims);
        self.set(d, 1304, 3, s.len(), s.as_ptr().cast());
        let v = u8::from(t.is_virtual);
        self.set(d, 1305, 2, 1, (&v as *const u8).cast());
        if let Some(x) = t.value {
            let b = x.to_le_bytes();
            self.set(d, 1306, 19, 4, b.as_ptr().cast());
        }
        if t.runtime {
            let one = 1u8;
            self.set(d, 1308, 2, 1, (&one as *const u8).cast());
        }
        // SAFETY: live descriptor.
        self.ok(unsafe { (self.finalize)(d) }, "finalize tensor");
        d
    }

    /// Builds, plans and executes one operation; returns the graph bytes and the outputs by
    /// uid.
    fn run_op(
        &self,
        dtype: i32,
        tensors: &[T],
        attrs: &[(i32, V)],
        inputs: &BTreeMap<i64, Vec<f32>>,
    ) -> (Vec<u8>, BTreeMap<i64, Vec<u8>>) {
        let td: Vec<P> = tensors.iter().map(|t| self.tensor(t)).collect();
        let op = self.desc(dtype);
        for (name, v) in attrs {
            match v {
                V::T(i) => self.set(op, *name, 13, 1, (&td[*i as usize] as *const P).cast()),
                V::I(v) => self.set(op, *name, 3, v.len(), v.as_ptr().cast()),
                V::F(x) => self.set(op, *name, 4, 1, (x as *const f32).cast()),
                V::B(b) => {
                    let u = u8::from(*b);
                    self.set(op, *name, 2, 1, (&u as *const u8).cast())
                }
                V::E(ty, e) => self.set(op, *name, *ty, 1, (e as *const i32).cast()),
                V::D(c) => self.set(op, *name, 1, 1, (c as *const i32).cast()),
            }
        }
        // SAFETY: live descriptors and valid pointers throughout.
        unsafe {
            self.ok((self.finalize)(op), "finalize op");
            let mut h: P = null_mut();
            self.ok((self.handle_create)(&mut h), "handle");
            let g = self.desc(10);
            self.set(g, 600, 0, 1, (&h as *const P).cast());
            self.set(g, 601, 13, 1, (&op as *const P).cast());
            self.ok((self.finalize)(g), "finalize graph");
            let mut n = 0usize;
            self.ok((self.graph_bytes)(g, 0, &mut n, null_mut()), "graph size");
            let mut bytes = vec![0u8; n];
            self.ok(
                (self.graph_bytes)(g, n, &mut n, bytes.as_mut_ptr()),
                "graph bytes",
            );
            let heur = self.desc(3);
            self.set(heur, 101, 13, 1, (&g as *const P).cast());
            let mode = 0i32;
            self.set(heur, 100, 7, 1, (&mode as *const i32).cast());
            self.ok((self.finalize)(heur), "finalize heur");
            let cfg = self.desc(2);
            let mut cnt = 0i64;
            self.ok(
                (self.get)(heur, 102, 13, 1, &mut cnt, (&cfg as *const P) as P),
                "results",
            );
            let plan = self.desc(4);
            self.set(plan, 301, 13, 1, (&cfg as *const P).cast());
            self.ok((self.finalize)(plan), "finalize plan");
            let mut bufs: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
            for t in tensors
                .iter()
                .filter(|t| !t.is_virtual && t.value.is_none())
            {
                let len: i64 = t.dims.iter().product();
                let data = match inputs.get(&t.uid) {
                    Some(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    None => vec![0xAB; len as usize * 4],
                };
                bufs.insert(t.uid, data);
            }
            let uids: Vec<i64> = bufs.keys().copied().collect();
            let ptrs: Vec<P> = bufs.values_mut().map(|b| b.as_mut_ptr().cast()).collect();
            let pack = self.desc(11);
            self.set(pack, 700, 3, uids.len(), uids.as_ptr().cast());
            self.set(pack, 701, 6, ptrs.len(), ptrs.as_ptr().cast());
            self.ok((self.finalize)(pack), "finalize pack");
            self.ok((self.execute)(h, plan, pack), "execute");
            for d in td.into_iter().chain([op, g, heur, cfg, plan, pack]) {
                self.ok((self.destroy)(d), "destroy");
            }
            self.ok((self.handle_destroy)(h), "destroy handle");
            bufs.retain(|u, _| !inputs.contains_key(u));
            (bytes, bufs)
        }
    }
}

/// The SDK's execution of graph `bytes` with the same inputs.
fn sdk_outputs(bytes: &[u8], inputs: &BTreeMap<i64, Vec<f32>>) -> BTreeMap<i64, Vec<u8>> {
    let h = Handle::cpu().unwrap();
    let mut g = Graph::from_graph_bytes(bytes).unwrap();
    g.build(&h).unwrap();
    let ins: Vec<(i64, Buffer<f32>)> = inputs
        .iter()
        .map(|(u, v)| (*u, Buffer::from_slice(v)))
        .collect();
    let mut outs: Vec<(i64, Buffer<f32>)> = g
        .tensors()
        .filter(|(_, t)| {
            !t.is_virtual && t.value.is_none() && !inputs.contains_key(&t.uid.unwrap())
        })
        .map(|(_, t)| (t.uid.unwrap(), Buffer::zeros(t.volume() as usize)))
        .collect();
    let pack = ins
        .iter()
        .fold(VariantPack::new(), |p, (u, b)| p.with(*u, b));
    let pack = outs.iter_mut().fold(pack, |p, (u, b)| p.with(*u, b));
    g.execute(&h, pack, None).unwrap();
    outs.into_iter()
        .map(|(u, b)| {
            (
                u,
                b.to_vec()
                    .unwrap()
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect(),
            )
        })
        .collect()
}

fn vals(n: i64, seed: i64) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7 + seed * 3) % 11) as f32 - 5.0) / 4.0)
        .collect()
}

fn t(uid: i64, dims: &[i64]) -> T {
    T {
        uid,
        dims: dims.to_vec(),
        is_virtual: false,
        value: None,
        runtime: false,
    }
}

#[track_caller]
fn check(dtype: i32, tensors: Vec<T>, attrs: Vec<(i32, V)>, inputs: &[(i64, Vec<f32>)]) -> Graph {
    let inputs: BTreeMap<i64, Vec<f32>> = inputs.iter().cloned().collect();
    let (bytes, c_out) = api().run_op(dtype, &tensors, &attrs, &inputs);
    let sdk = sdk_outputs(&bytes, &inputs);
    assert_eq!(c_out, sdk, "C ABI and SDK outputs differ");
    assert!(
        c_out.values().all(|b| b.chunks(4).any(|c| c != [0xAB; 4])),
        "an output was not written"
    );
    Graph::from_graph_bytes(&bytes).unwrap()
}

fn only_node(g: &Graph) -> Operation {
    assert_eq!(g.node_count(), 1);
    g.nodes().next().unwrap().1.clone()
}

const FLOAT: i32 = 0;

#[test]
fn batchnorm_inference_descriptor_executes_like_the_sdk() {
    let c = [1, 3, 1, 1];
    let g = check(
        17,
        vec![
            t(1, &[2, 3, 2, 2]),
            t(2, &c),
            t(3, &c),
            t(4, &c),
            t(5, &c),
            t(6, &[2, 3, 2, 2]),
        ],
        vec![
            (1800, V::T(0)),
            (1801, V::T(1)),
            (1802, V::T(2)),
            (1803, V::T(3)),
            (1804, V::T(4)),
            (1805, V::T(5)),
            (1806, V::D(FLOAT)),
        ],
        &[
            (1, vals(24, 1)),
            (2, vals(3, 2)),
            (3, vec![1.0, 0.5, 2.0]),
            (4, vals(3, 4)),
            (5, vals(3, 5)),
        ],
    );
    assert!(matches!(only_node(&g), Operation::BatchnormInference(_)));
}

#[test]
fn layernorm_descriptor_carries_phase_and_epsilon_tensor() {
    let g = check(
        25,
        vec![
            t(1, &[2, 4]),
            t(2, &[1, 4]),
            t(3, &[1, 4]),
            t(4, &[1, 1]),
            t(5, &[2, 4]),
        ],
        vec![
            (2700, V::T(0)),
            (2701, V::T(1)),
            (2702, V::T(2)),
            (2703, V::T(3)),
            (2704, V::T(4)),
            (2707, V::E(22, 1)),
            (2708, V::D(FLOAT)),
        ],
        &[
            (1, vals(8, 1)),
            (2, vals(4, 2)),
            (3, vals(4, 3)),
            (4, vec![1e-5]),
        ],
    );
    let Operation::Layernorm(a) = only_node(&g) else {
        panic!("not a layernorm")
    };
    assert_eq!(a.forward_phase, hipdnn::NormFwdPhase::Inference);
}

#[test]
fn rmsnorm_descriptor_executes_like_the_sdk() {
    let g = check(
        23,
        vec![t(1, &[2, 4]), t(2, &[1, 4]), t(3, &[1, 1]), t(4, &[2, 4])],
        vec![
            (2400, V::T(0)),
            (2401, V::T(1)),
            (2402, V::T(2)),
            (2403, V::T(3)),
            (2406, V::E(22, 1)),
            (2407, V::D(FLOAT)),
        ],
        &[(1, vals(8, 1)), (2, vals(4, 2)), (3, vec![1e-5])],
    );
    assert!(matches!(only_node(&g), Operation::RmsNorm(_)));
}

#[test]
fn reduction_descriptor_translates_the_operator() {
    let g = check(
        31,
        vec![t(1, &[2, 3, 4]), t(2, &[2, 1, 4])],
        vec![
            (3200, V::T(0)),
            (3201, V::T(1)),
            (3202, V::E(28, 4)),
            (3203, V::D(FLOAT)),
        ],
        &[(1, vals(24, 1))],
    );
    let Operation::Reduction(a) = only_node(&g) else {
        panic!("not a reduction")
    };
    assert_eq!(
        a.mode,
        hipdnn::ReductionMode::MaxOp,
        "C HIPDNN_REDUCE_TENSOR_MAX (4)"
    );
}

#[test]
fn resample_descriptor_carries_window_and_mode() {
    let g = check(
        32,
        vec![t(1, &[1, 2, 4, 4]), t(2, &[1, 2, 2, 2])],
        vec![
            (3300, V::T(0)),
            (3301, V::T(1)),
            (3400, V::E(29, 1)),
            (3401, V::I(vec![0, 0])),
            (3402, V::I(vec![0, 0])),
            (3403, V::I(vec![2, 2])),
            (3404, V::I(vec![2, 2])),
            (3405, V::E(30, 1)),
            (3407, V::D(FLOAT)),
        ],
        &[(1, vals(32, 1))],
    );
    let Operation::ResampleFwd(a) = only_node(&g) else {
        panic!("not a resample")
    };
    assert_eq!(a.resample_mode, hipdnn::ResampleMode::MaxPool);
    assert_eq!(a.window, vec![2, 2]);
}

#[test]
fn matmul_and_pointwise_descriptors_execute_like_the_sdk() {
    let g = check(
        22,
        vec![t(1, &[1, 2, 3]), t(2, &[1, 3, 4]), t(3, &[1, 2, 4])],
        vec![
            (2500, V::T(0)),
            (2501, V::T(1)),
            (2502, V::T(2)),
            (2503, V::D(FLOAT)),
        ],
        &[(1, vals(6, 1)), (2, vals(12, 2))],
    );
    assert!(matches!(only_node(&g), Operation::Matmul(_)));
    let g = check(
        18,
        vec![t(1, &[2, 5]), t(2, &[2, 5])],
        vec![
            (2200, V::T(0)),
            (2201, V::T(1)),
            (2300, V::E(25, 34)),
            (2301, V::F(-0.25)),
            (2307, V::D(FLOAT)),
        ],
        &[(1, vals(10, 1))],
    );
    let Operation::Pointwise(a) = only_node(&g) else {
        panic!("not pointwise")
    };
    assert_eq!(a.mode, hipdnn::PointwiseMode::ReluFwd);
    assert_eq!(a.relu_lower_clip, Some(-0.25));
}

#[test]
fn sdpa_forward_descriptor_executes_like_the_sdk() {
    let d = [1, 1, 3, 4];
    let g = check(
        24,
        vec![t(1, &d), t(2, &d), t(3, &d), t(4, &d)],
        vec![
            (2600, V::T(0)),
            (2601, V::T(1)),
            (2602, V::T(2)),
            (2603, V::T(3)),
            (2631, V::B(true)),
            (2634, V::F(0.5)),
            (2641, V::D(FLOAT)),
        ],
        &[(1, vals(12, 1)), (2, vals(12, 2)), (3, vals(12, 3))],
    );
    let Operation::Sdpa(a) = only_node(&g) else {
        panic!("not sdpa")
    };
    assert!(a.causal_mask);
    assert_eq!(a.attn_scale_value, Some(0.5));
}

#[test]
fn conv_backward_descriptors_execute_like_the_sdk() {
    let conv = |dy: i32, w: i32, dx: i32| {
        vec![
            (dy, V::T(0)),
            (w, V::T(1)),
            (dx, V::T(2)),
            (1500, V::D(FLOAT)),
            (1501, V::E(24, 1)),
            (1502, V::I(vec![1, 1])),
            (1503, V::I(vec![1, 1])),
            (1504, V::I(vec![0, 0])),
            (1505, V::I(vec![0, 0])),
        ]
    };
    // dgrad: dy (1,2,3,3), w (2,3,2,2) → dx (1,3,4,4).
    let g = check(
        19,
        vec![
            t(1, &[1, 2, 3, 3]),
            t(2, &[2, 3, 2, 2]),
            t(3, &[1, 3, 4, 4]),
        ],
        conv(1700, 1701, 1702),
        &[(1, vals(18, 1)), (2, vals(24, 2))],
    );
    let Operation::ConvDgrad(a) = only_node(&g) else {
        panic!("not dgrad")
    };
    assert_eq!(
        a.conv_mode,
        hipdnn::ConvMode::CrossCorrelation,
        "C 1 → schema 2"
    );
    // wgrad: x (1,3,4,4), dy (1,2,3,3) → dw (2,3,2,2).
    let g = check(
        16,
        vec![
            t(1, &[1, 3, 4, 4]),
            t(2, &[1, 2, 3, 3]),
            t(3, &[2, 3, 2, 2]),
        ],
        conv(1600, 1601, 1602),
        &[(1, vals(48, 1)), (2, vals(18, 2))],
    );
    assert!(matches!(only_node(&g), Operation::ConvWgrad(_)));
}

#[test]
fn a_baked_scalar_goes_through_tensor_value_ext() {
    let mut eps = t(4, &[1, 1]);
    eps.value = Some(1e-5);
    let g = check(
        25,
        vec![
            t(1, &[2, 4]),
            t(2, &[1, 4]),
            t(3, &[1, 4]),
            eps,
            t(5, &[2, 4]),
        ],
        vec![
            (2700, V::T(0)),
            (2701, V::T(1)),
            (2702, V::T(2)),
            (2703, V::T(3)),
            (2704, V::T(4)),
            (2707, V::E(22, 1)),
            (2708, V::D(FLOAT)),
        ],
        &[(1, vals(8, 1)), (2, vals(4, 2)), (3, vals(4, 3))],
    );
    let e = g.tensor_by_uid(4).unwrap();
    assert_eq!(
        g.tensor_attributes(e).value,
        Some(hipdnn::TensorValue::Float32(1e-5))
    );
}

#[test]
fn operations_of_a_deserialized_graph_read_back_as_descriptors() {
    let api = api();
    // SAFETY: exact signature of the export.
    let deserialize: unsafe extern "C" fn(*mut P, *const u8, usize) -> i32 =
        unsafe { sym("hipdnnBackendCreateAndDeserializeGraph_ext") };
    let mut g = Graph::new();
    g.set_io_data_type(hipdnn::DataType::Float)
        .set_compute_data_type(hipdnn::DataType::Float);
    let x = g.tensor(
        hipdnn::TensorAttributes::new("x")
            .uid(1)
            .dims([1, 2, 5, 5])
            .packed_nchw(),
    );
    let w = g.tensor(
        hipdnn::TensorAttributes::new("w")
            .uid(2)
            .dims([3, 2, 3, 3])
            .packed_nchw(),
    );
    let y = g.conv_fprop(
        x,
        w,
        hipdnn::ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([2, 2])
            .dilation([1, 1]),
    );
    g.set_output(y, true).set_uid(y, 3);
    g.validate().unwrap();
    let bytes = g.to_graph_bytes().unwrap();
    // SAFETY: valid pointers throughout; created descriptors are destroyed at the end.
    unsafe {
        let mut gd: P = null_mut();
        api.ok(
            deserialize(&mut gd, bytes.as_ptr(), bytes.len()),
            "deserialize",
        );
        let mut n = 0i64;
        api.ok((api.get)(gd, 601, 13, 0, &mut n, null_mut()), "OPS count");
        assert_eq!(n, 1);
        let mut ops: [P; 1] = [null_mut()];
        api.ok(
            (api.get)(gd, 601, 13, 1, &mut n, ops.as_mut_ptr().cast()),
            "OPS",
        );
        assert!(!ops[0].is_null(), "a null slot receives a new descriptor");
        let mut ty = -1i32;
        api.ok(
            (api.get)(
                ops[0],
                60200,
                10001,
                1,
                &mut n,
                (&mut ty as *mut i32).cast(),
            ),
            "type",
        );
        assert_eq!(ty, 1, "HIPDNN_OPERATION_TYPE_CONVOLUTION_FORWARD_EXT");
        let mut strides = [0i64; 2];
        api.ok(
            (api.get)(ops[0], 1503, 3, 2, &mut n, strides.as_mut_ptr().cast()),
            "strides",
        );
        assert_eq!(strides, [2, 2]);
        let mut mode = -1i32;
        api.ok(
            (api.get)(ops[0], 1501, 24, 1, &mut n, (&mut mode as *mut i32).cast()),
            "mode",
        );
        assert_eq!(mode, 1, "HIPDNN_CROSS_CORRELATION (schema 2)");
        // The output tensor, into a caller-created descriptor.
        let yd = api.desc(14);
        let mut slot = [yd];
        api.ok(
            (api.get)(ops[0], 1402, 13, 1, &mut n, slot.as_mut_ptr().cast()),
            "Y",
        );
        assert_eq!(
            slot[0], yd,
            "a caller-created descriptor is filled in place"
        );
        let mut dims = [0i64; 4];
        api.ok(
            (api.get)(yd, 1303, 3, 4, &mut n, dims.as_mut_ptr().cast()),
            "Y dims",
        );
        assert_eq!(dims, [1, 3, 3, 3]);
        let mut uid = 0i64;
        api.ok(
            (api.get)(yd, 1300, 3, 1, &mut n, (&mut uid as *mut i64).cast()),
            "Y uid",
        );
        assert_eq!(uid, 3);
        for d in [ops[0], yd, gd] {
            api.ok((api.destroy)(d), "destroy");
        }
    }
}

#[test]
fn a_runtime_scalar_is_passed_as_a_host_pointer() {
    let mut eps = t(4, &[1, 1]);
    eps.runtime = true;
    let g = check(
        23,
        vec![
            t(1, &[2, 4]),
            t(2, &[1, 4]),
            t(3, &[1, 4]),
            eps,
            t(5, &[2, 4]),
        ],
        vec![
            (2400, V::T(0)),
            (2401, V::T(1)),
            (2404, V::T(2)),
            (2402, V::T(3)),
            (2403, V::T(4)),
            (2406, V::E(22, 1)),
            (2407, V::D(FLOAT)),
        ],
        &[
            (1, vals(8, 1)),
            (2, vals(4, 2)),
            (3, vals(4, 3)),
            (4, vec![0.5]),
        ],
    );
    let e = g.tensor_by_uid(4).unwrap();
    assert!(g.tensor_attributes(e).is_runtime_pass_by_value);
}
