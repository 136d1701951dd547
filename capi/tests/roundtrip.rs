//! The C++ round-trip program (tests/c/roundtrip.cpp) built with the `cc` crate against
//! libhipdnn_backend.so: conv fprop in fp32/fp16/bf16 × NCHW/NHWC through JSON, binary,
//! plan-only and container round trips, each output bit-identical to the first; the first
//! output equals the Rust SDK's bit for bit; containers written through the C ABI load with
//! `hipdnn::Graph::from_binary` and re-save byte-identically, and the SDK's containers do the
//! same through the C ABI.
//!
//! With `HIPDNN_CAPI_VALGRIND=1` the program runs under valgrind (memcheck: no invalid
//! reads/writes, no definite leaks; `.ci/run` sets it).

mod common;

use half::{bf16, f16};
use hipdnn::{Buffer, ConvFpropAttributes, DataType, Graph, Handle, TensorAttributes, VariantPack};
use std::path::Path;
use std::process::Command;

const CASES: [(&str, DataType, bool); 6] = [
    ("fp32_nchw", DataType::Float, false),
    ("fp32_nhwc", DataType::Float, true),
    ("fp16_nchw", DataType::Half, false),
    ("fp16_nhwc", DataType::Half, true),
    ("bf16_nchw", DataType::BFloat16, false),
    ("bf16_nhwc", DataType::BFloat16, true),
];

/// Exact in every type: k/8 for k in -6..=6.
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7 + seed * 5) % 13) as f32 - 6.0) / 8.0)
        .collect()
}

fn encode(v: &[f32], dt: DataType) -> Vec<u8> {
    match dt {
        DataType::Float => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DataType::Half => v
            .iter()
            .flat_map(|x| f16::from_f32(*x).to_le_bytes())
            .collect(),
        DataType::BFloat16 => v
            .iter()
            .flat_map(|x| bf16::from_f32(*x).to_le_bytes())
            .collect(),
        _ => unreachable!(),
    }
}

fn tensor(name: &str, uid: i64, dims: [i64; 4], dt: DataType, nhwc: bool) -> TensorAttributes {
    let t = TensorAttributes::new(name)
        .uid(uid)
        .dims(dims)
        .data_type(dt);
    if nhwc {
        t.packed_nhwc()
    } else {
        t.packed_nchw()
    }
}

/// The SDK's conv fprop graph, built on the CPU, and its output for `x`, `w`.
fn sdk_run(dt: DataType, nhwc: bool, x: &[f32], w: &[f32]) -> (Graph, Vec<u8>) {
    let h = Handle::cpu().unwrap();
    let mut g = Graph::new();
    g.set_io_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let xt = g.tensor(tensor("x", 1, [1, 3, 6, 6], dt, nhwc));
    let wt = g.tensor(tensor("w", 2, [4, 3, 3, 3], dt, nhwc));
    let y = g.conv_fprop(
        xt,
        wt,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1])
            .compute_data_type(DataType::Float),
    );
    g.set_output(y, true).set_uid(y, 3);
    let strides = tensor("y", 3, [1, 4, 6, 6], dt, nhwc).strides;
    g.set_strides(y, strides);
    g.build(&h).unwrap();
    let y = match dt {
        DataType::Float => execute_typed::<f32>(&g, &h, x, w, |x| x),
        DataType::Half => execute_typed::<f16>(&g, &h, x, w, f16::from_f32),
        DataType::BFloat16 => execute_typed::<bf16>(&g, &h, x, w, bf16::from_f32),
        _ => unreachable!(),
    };
    (g, y)
}

/// Executes `g` with typed buffers (the SDK checks that a buffer's element type is the
/// tensor's data type) and returns the output's little-endian bytes.
fn execute_typed<T: hipdnn::Element>(
    g: &Graph,
    h: &Handle,
    x: &[f32],
    w: &[f32],
    conv: fn(f32) -> T,
) -> Vec<u8> {
    let xv: Vec<T> = x.iter().map(|v| conv(*v)).collect();
    let wv: Vec<T> = w.iter().map(|v| conv(*v)).collect();
    let xb = Buffer::from_slice(&xv);
    let wb = Buffer::from_slice(&wv);
    let mut yb = Buffer::<T>::zeros(4 * 36);
    g.execute(
        h,
        VariantPack::new()
            .with(1, &xb)
            .with(2, &wb)
            .with(3, &mut yb),
        None,
    )
    .unwrap();
    let y = yb.to_vec().unwrap();
    let mut out = vec![0u8; y.len() * T::SIZE];
    for (v, o) in y.iter().zip(out.chunks_mut(T::SIZE)) {
        v.write_le(o);
    }
    out
}

fn run_program(dir: &Path) -> std::process::Output {
    let links = common::link_dir();
    let exe = dir.join("roundtrip");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/roundtrip.cpp");
    common::build_program(&src, &exe, true, links.path());
    let valgrind = std::env::var_os("HIPDNN_CAPI_VALGRIND").is_some_and(|v| v == "1");
    let mut cmd = if valgrind {
        let mut c = Command::new("valgrind");
        c.args([
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite",
        ]);
        c.arg(format!(
            "--suppressions={}",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/valgrind.supp")
                .display()
        ));
        c.arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    // Host buffers: the program's handles use the CPU even on a GPU machine.
    let out = cmd
        .env("HIPDNN_RS_DEVICE", "cpu")
        .arg(dir)
        .output()
        .expect("the program runs");
    drop(links);
    out
}

#[test]
fn cpp_round_trip_matches_the_sdk_bit_for_bit_and_containers_agree_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let h = Handle::cpu().unwrap();
    let mut sdk_outputs = Vec::new();
    for (tag, dt, nhwc) in CASES {
        let (xv, wv) = (values(3 * 36, 1), values(4 * 27, 2));
        std::fs::write(dir.path().join(format!("x_{tag}.bin")), encode(&xv, dt)).unwrap();
        std::fs::write(dir.path().join(format!("w_{tag}.bin")), encode(&wv, dt)).unwrap();
        let (g, y) = sdk_run(dt, nhwc, &xv, &wv);
        std::fs::write(
            dir.path().join(format!("sdk_container_{tag}.bin")),
            g.to_binary().unwrap(),
        )
        .unwrap();
        sdk_outputs.push(y);
    }

    let out = run_program(dir.path());
    assert!(
        out.status.success(),
        "roundtrip failed ({:?}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    for ((tag, _, _), sdk_y) in CASES.iter().zip(&sdk_outputs) {
        let c_y = std::fs::read(dir.path().join(format!("y_{tag}.bin"))).unwrap();
        assert_eq!(&c_y, sdk_y, "{tag}: C ABI output differs from the SDK's");
        assert!(c_y.iter().any(|b| *b != 0), "{tag}: output is all zero");
        // A container written through the C ABI loads in Rust, executes the same, and
        // re-saves byte-identically.
        let c = std::fs::read(dir.path().join(format!("container_{tag}.bin"))).unwrap();
        let g = Graph::from_binary(&h, &c).unwrap();
        assert!(g.has_plan(), "{tag}: the container's plan was not restored");
        assert_eq!(g.to_binary().unwrap(), c, "{tag}: re-save differs");
    }
}
