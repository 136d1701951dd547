//! One JSON format (issue 11 point 4): the C ABI's `hipdnnBackendGetSerializedJsonGraph_ext`
//! gives, for a graph loaded through `hipdnnBackendCreateAndDeserializeGraph_ext`, exactly the
//! text of the SDK's `Graph::to_json` for the same graph; the SDK's text read back through
//! `hipdnnBackendCreateAndDeserializeJsonGraph_ext` gives the SDK's graph bytes; the node kinds
//! added in issue 35 (custom op here) go through the C ABI as through the SDK: upstream-format
//! text reads and is written back byte for byte.

mod common;

use common::sym;
use hipdnn::*;
use std::ffi::{c_char, c_void};
use std::ptr::null_mut;

type P = *mut c_void;

const SUCCESS: i32 = 0;

struct Api {
    from_bytes: unsafe extern "C" fn(*mut P, *const u8, usize) -> i32,
    from_json: unsafe extern "C" fn(*mut P, *const c_char, usize) -> i32,
    json: unsafe extern "C" fn(P, usize, *mut usize, *mut c_char) -> i32,
    bytes: unsafe extern "C" fn(P, usize, *mut usize, *mut u8) -> i32,
    destroy: unsafe extern "C" fn(P) -> i32,
    last_error: unsafe extern "C" fn(*mut c_char, usize),
}

fn api() -> Api {
    // SAFETY: the types are the exports' C signatures (header).
    unsafe {
        Api {
            from_bytes: sym("hipdnnBackendCreateAndDeserializeGraph_ext"),
            from_json: sym("hipdnnBackendCreateAndDeserializeJsonGraph_ext"),
            json: sym("hipdnnBackendGetSerializedJsonGraph_ext"),
            bytes: sym("hipdnnBackendGetSerializedBinaryGraph_ext"),
            destroy: sym("hipdnnBackendDestroyDescriptor"),
            last_error: sym("hipdnnGetLastErrorString"),
        }
    }
}

impl Api {
    /// An OPERATIONGRAPH descriptor from the SDK's graph bytes.
    fn load(&self, g: &Graph) -> P {
        let b = g.to_graph_bytes().unwrap();
        let mut d: P = null_mut();
        // SAFETY: valid output pointer and buffer.
        let s = unsafe { (self.from_bytes)(&mut d, b.as_ptr(), b.len()) };
        assert_eq!(s, SUCCESS, "{}", self.error());
        d
    }

    /// The C ABI's JSON of `d` (two-call), without the NUL; or the status.
    fn json_of(&self, d: P) -> Result<String, i32> {
        let mut n = 0usize;
        // SAFETY: size query with a valid size pointer and no buffer.
        let s = unsafe { (self.json)(d, 0, &mut n, null_mut()) };
        if s != SUCCESS {
            return Err(s);
        }
        let mut buf = vec![0u8; n];
        // SAFETY: the buffer holds n bytes.
        let s = unsafe { (self.json)(d, n, &mut n, buf.as_mut_ptr().cast()) };
        assert_eq!(s, SUCCESS, "{}", self.error());
        assert_eq!(buf.pop(), Some(0), "NUL-terminated");
        Ok(String::from_utf8(buf).unwrap())
    }

    fn bytes_of(&self, d: P) -> Vec<u8> {
        let mut n = 0usize;
        // SAFETY: size query, then a buffer of n bytes.
        unsafe {
            assert_eq!((self.bytes)(d, 0, &mut n, null_mut()), SUCCESS);
            let mut buf = vec![0u8; n];
            assert_eq!((self.bytes)(d, n, &mut n, buf.as_mut_ptr()), SUCCESS);
            buf
        }
    }

    fn error(&self) -> String {
        let mut buf = vec![0 as c_char; 2048];
        // SAFETY: the buffer holds 2048 bytes.
        unsafe { (self.last_error)(buf.as_mut_ptr(), buf.len()) };
        // SAFETY: the export NUL-terminates within the buffer.
        unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }
}

fn t(g: &mut Graph, name: &str, dt: DataType, dims: &[i64]) -> TensorId {
    g.tensor(
        TensorAttributes::new(name)
            .data_type(dt)
            .dims(dims.to_vec()),
    )
}

/// Graphs in upstream's JSON scope: conv + relu (half I/O), matmul + scalar bias + swish with
/// float parameters, batchnorm inference.
fn graphs() -> Vec<Graph> {
    let mut out = Vec::new();

    let mut g = Graph::new();
    g.set_name("conv_relu")
        .set_io_data_type(DataType::Half)
        .set_compute_data_type(DataType::Float);
    let x = t(&mut g, "x", DataType::Half, &[1, 3, 8, 8]);
    let w = t(&mut g, "w", DataType::Half, &[4, 3, 3, 3]);
    let y = g.conv_fprop(x, w, ConvFpropAttributes::new().padding([1, 1]));
    let r = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.set_output(r, true);
    g.assign_uids();
    out.push(g);

    let mut g = Graph::new();
    g.set_name("matmul_bias_swish")
        .set_preferred_engine_id(Some(3));
    let a = t(&mut g, "a", DataType::Float, &[1, 4, 8]);
    let b = t(&mut g, "b", DataType::Float, &[1, 8, 2]);
    let bias = g.tensor(TensorAttributes::scalar(TensorValue::Float32(0.1)));
    let c = g.matmul(a, b, MatmulAttributes::new());
    let c = g.pointwise(c, bias, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let s = g.pointwise_unary(
        c,
        PointwiseAttributes::with_mode(PointwiseMode::SwishFwd).swish_beta(1e-5),
    );
    g.set_output(s, true);
    g.assign_uids();
    out.push(g);

    let mut g = Graph::new();
    g.set_name("bn_inference");
    let x = t(&mut g, "x", DataType::Float, &[2, 4, 3, 3]);
    let ch: Vec<TensorId> = ["mean", "inv_var", "scale", "bias"]
        .iter()
        .map(|n| t(&mut g, n, DataType::Float, &[1, 4, 1, 1]))
        .collect();
    let y = g.batchnorm_inference(
        x,
        ch[0],
        ch[1],
        ch[2],
        ch[3],
        BatchnormInferenceAttributes::new(),
    );
    g.set_output(y, true);
    g.assign_uids();
    out.push(g);
    out
}

#[test]
fn c_abi_json_is_the_sdk_json_and_reads_back_to_the_sdk_bytes() {
    let api = api();
    for g in graphs() {
        let sdk = g.to_json().unwrap();
        let d = api.load(&g);
        let c = api
            .json_of(d)
            .unwrap_or_else(|s| panic!("status {s}: {}", api.error()));
        assert_eq!(c, sdk, "{}: C ABI JSON vs SDK JSON", g.name());
        // SAFETY: a descriptor this test created.
        assert_eq!(unsafe { (api.destroy)(d) }, SUCCESS);

        // The SDK's text through the C ABI's reader: the SDK's bytes and the same text again.
        let mut d: P = null_mut();
        // SAFETY: valid output pointer and buffer (no NUL; the size excludes it).
        let s = unsafe { (api.from_json)(&mut d, sdk.as_ptr().cast(), sdk.len()) };
        assert_eq!(s, SUCCESS, "{}", api.error());
        assert_eq!(api.bytes_of(d), g.to_graph_bytes().unwrap(), "{}", g.name());
        assert_eq!(api.json_of(d).unwrap(), sdk);
        // SAFETY: a descriptor this test created.
        assert_eq!(unsafe { (api.destroy)(d) }, SUCCESS);
        assert_eq!(Graph::from_json(&sdk).unwrap(), g);
    }
}

/// Upstream-format JSON of two custom-op nodes (the SDK's fixture, built as upstream's
/// `CustomOpAttributes.hpp` writer emits it; formerly refused NOT_SUPPORTED): read through the
/// C ABI, it gives the SDK's graph bytes and is written back byte for byte.
#[test]
fn custom_op_json_reads_and_rewrites_byte_identically_through_the_c_abi() {
    const FIXTURE: &str = include_str!("../../hipdnn-rs/tests/upstream_json/custom_op.json");
    let api = api();
    let g = Graph::from_json(FIXTURE).unwrap();
    let mut d: P = null_mut();
    // SAFETY: valid output pointer and buffer (the size excludes the NUL).
    let s = unsafe { (api.from_json)(&mut d, FIXTURE.as_ptr().cast(), FIXTURE.len()) };
    assert_eq!(s, SUCCESS, "{}", api.error());
    assert_eq!(api.bytes_of(d), g.to_graph_bytes().unwrap());
    assert_eq!(api.json_of(d).unwrap(), FIXTURE);
    // SAFETY: a descriptor this test created.
    assert_eq!(unsafe { (api.destroy)(d) }, SUCCESS);

    // A graph built with the SDK's builder: the C ABI's text is the SDK's.
    let mut g = Graph::new();
    let x = t(&mut g, "x", DataType::Float, &[2, 3]);
    let outs = g.custom_op(
        &[x],
        1,
        CustomOpAttributes::new()
            .custom_op_id("my_plugin.my_op")
            .data(vec![7, 0, 255]),
    );
    g.set_dims(outs[0], [2, 3]).set_output(outs[0], true);
    g.assign_uids();
    let d = api.load(&g);
    assert_eq!(api.json_of(d).unwrap(), g.to_json().unwrap());
    // SAFETY: a descriptor this test created.
    assert_eq!(unsafe { (api.destroy)(d) }, SUCCESS);
}
