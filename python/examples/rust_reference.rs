//! The Rust side of the Python bindings' tests (python/tests/): the same graphs built with the
//! SDK directly, on the same inputs, so that pytest compares two implementations' output bytes.
//!
//! ```text
//! rust_reference ops                 # "<case> <sha256 of each output's bytes>" per case
//! rust_reference save <case> <file>  # the case's built plan, Graph::to_binary
//! rust_reference save_file <case> graph|plan <file>  # Graph::save_to_file of the built case
//! rust_reference resave <in> <out>   # Graph::from_binary on a CPU handle, execute, to_binary
//! rust_reference json                # "<case>\t<Graph::to_json of the unbuilt graph>" per case
//! rust_reference binary              # "<case> <sha256 of Graph::to_binary of the unbuilt graph>"
//! rust_reference settings            # "<key>\t<outcome>" of engine filters and settings
//! rust_reference autotune <variant>  # autotune results of the matmul case (times left out)
//! rust_reference errors              # "<case>\t<Display of the SDK error>" per error case
//! rust_reference overhead <cpu|gpu> <elements> <calls> <rounds>  # one JSON line: per-call
//!                                    # time of Graph::execute of a FLOAT ADD (overhead.py's twin)
//! ```
//!
//! Inputs: element `i` of the input with UID `u` is `((i·7919 + u·104729) mod 2003 − 1001) / 1000`
//! rounded to f32; INT32 inputs take `trunc(that · 1000) mod 4`, BOOLEAN inputs `i mod 3 == 0`
//! (python/tests/common.py computes the same numbers with NumPy).

use hipdnn::{
    Activation, BatchnormAttributes, BatchnormBackwardAttributes, BatchnormInferenceAttributes,
    BatchnormInferenceVarianceExtAttributes, BlockScaleDequantizeAttributes,
    BlockScaleQuantizeAttributes, Buffer, ConvDgradAttributes, ConvFpropAttributes,
    ConvWgradAttributes, CustomOpAttributes, DataType, Graph, Handle, LayernormAttributes,
    LayernormBackwardAttributes, MatmulAttributes, MoeGroupedMatmulAttributes,
    MoeGroupedMatmulBwdAttributes, NormFwdPhase, PointwiseAttributes, PointwiseMode,
    ReductionAttributes, ReductionMode, ResampleBwdAttributes, ResampleFwdAttributes, ResampleMode,
    RmsNormAttributes, RmsNormBackwardAttributes, SdpaAttributes, SdpaBackwardAttributes,
    TensorAttributes, TensorId, TensorValue, VariantPack,
};
use sha2::{Digest, Sha256};
use std::process::ExitCode;

/// The deterministic input values (see the module docs).
fn values(n: usize, seed: i64) -> Vec<f32> {
    (0..n as i64)
        .map(|i| ((i * 7919 + seed * 104729).rem_euclid(2003) - 1001) as f32 / 1000.0)
        .collect()
}

/// A FLOAT graph with io/intermediate/compute types set, as the Python tests make them.
fn graph() -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    g
}

/// Adds input `uid` (FLOAT, packed) with `dims`.
fn input(g: &mut Graph, name: &str, uid: i64, dims: &[i64]) -> TensorId {
    g.tensor(TensorAttributes::new(name).uid(uid).dims(dims.to_vec()))
}

/// Marks `t` an output with UID `uid`.
fn out(g: &mut Graph, t: TensorId, uid: i64) {
    g.set_output(t, true).set_uid(t, uid);
}

/// Builds `g` on the CPU (when `build`; else runs the plan it has), runs it with the deterministic inputs (input UID u gets seed u; an
/// INT32/INT64 input gets `values` mapped to indices in 0..4) and returns the sha256 of each
/// output's bytes, in UID order; an error is "ERR <CODE>".
fn run(mut g: Graph, build: bool) -> String {
    let h = Handle::cpu().expect("cpu handle");
    if build && let Err(e) = g.build(&h) {
        return format!("ERR {}", e.code.as_str());
    }
    let mut bufs: Vec<(i64, bool, Buf)> = Vec::new();
    for (id, t) in g.tensors() {
        let (Some(uid), false) = (t.uid, t.is_virtual) else {
            continue;
        };
        if t.value.is_some() && !t.is_runtime_pass_by_value {
            continue;
        }
        let n = 1 + t
            .dims
            .iter()
            .zip(&t.strides)
            .map(|(d, s)| (d - 1) * s)
            .sum::<i64>() as usize;
        let written = g.producer(id).is_some();
        let v = values(n, uid);
        let b = match (g.context_data_type(t), written) {
            (DataType::Float, true) => Buf::F(Buffer::zeros(n)),
            (DataType::Float, false) => Buf::F(Buffer::from_slice(&v)),
            (DataType::Int32, true) => Buf::I(Buffer::zeros(n)),
            (DataType::Int32, false) => Buf::I(Buffer::from_slice(
                &v.iter()
                    .map(|x| ((x * 1000.0) as i32).rem_euclid(4))
                    .collect::<Vec<_>>(),
            )),
            (DataType::Boolean, true) => Buf::B(Buffer::zeros(n)),
            (DataType::Fp8E4m3 | DataType::Fp8E8m0, true) => Buf::U(Buffer::zeros(n)),
            (DataType::Boolean, false) => Buf::B(Buffer::from_slice(
                &(0..n).map(|i| i % 3 == 0).collect::<Vec<_>>(),
            )),
            (dt, _) => return format!("ERR unsupported {}", dt.schema_name()),
        };
        bufs.push((uid, written, b));
    }
    let mut pack = VariantPack::new();
    for (uid, written, b) in bufs.iter_mut() {
        pack = match (b, *written) {
            (Buf::F(b), true) => pack.with(*uid, b),
            (Buf::F(b), false) => pack.with(*uid, &*b),
            (Buf::I(b), true) => pack.with(*uid, b),
            (Buf::I(b), false) => pack.with(*uid, &*b),
            (Buf::B(b), true) => pack.with(*uid, b),
            (Buf::B(b), false) => pack.with(*uid, &*b),
            (Buf::U(b), true) => pack.with(*uid, b),
            (Buf::U(b), false) => pack.with(*uid, &*b),
        };
    }
    let mut ws = Buffer::<u8>::zeros(g.workspace_size().expect("plan"));
    if let Err(e) = g.execute(&h, pack, Some(&mut ws)) {
        return format!("ERR {}", e.code.as_str());
    }
    bufs.sort_by_key(|(u, _, _)| *u);
    bufs.iter()
        .filter(|(_, written, _)| *written)
        .map(|(_, _, b)| hex(&Sha256::digest(b.bytes())))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A host buffer of one of the element types the cases use.
enum Buf {
    F(Buffer<f32>),
    I(Buffer<i32>),
    B(Buffer<bool>),
    /// The bytes of a type without a Rust element (FP8).
    U(Buffer<u8>),
}

impl Buf {
    /// The elements' little-endian bytes.
    fn bytes(&self) -> Vec<u8> {
        match self {
            Buf::F(b) => b
                .to_vec()
                .expect("host")
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
            Buf::I(b) => b
                .to_vec()
                .expect("host")
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
            Buf::B(b) => b
                .to_vec()
                .expect("host")
                .iter()
                .map(|x| u8::from(*x))
                .collect(),
            Buf::U(b) => b.to_vec().expect("host"),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Every case: a name and its graph (python/tests/test_ops.py builds each the same way).
fn cases() -> Vec<(String, Graph)> {
    let mut v: Vec<(String, Graph)> = Vec::new();
    let mut g = graph();
    let a = input(&mut g, "a", 1, &[2, 3, 4]);
    let b = input(&mut g, "b", 2, &[2, 4, 5]);
    let c = g.matmul(a, b, MatmulAttributes::new());
    out(&mut g, c, 3);
    v.push(("matmul".into(), g));

    let conv = || {
        ConvFpropAttributes::new()
            .pre_padding(vec![1, 1])
            .post_padding(vec![1, 1])
            .stride(vec![1, 1])
            .dilation(vec![1, 1])
    };
    let mut g = graph();
    let x = input(&mut g, "x", 1, &[1, 3, 8, 8]);
    let w = input(&mut g, "w", 2, &[4, 3, 3, 3]);
    let y = g.conv_fprop(x, w, conv());
    out(&mut g, y, 3);
    v.push(("conv_fprop".into(), g));

    let mut g = graph();
    let dy = input(&mut g, "dy", 1, &[1, 4, 8, 8]);
    let w = input(&mut g, "w", 2, &[4, 3, 3, 3]);
    let dx = g.conv_dgrad(
        dy,
        w,
        ConvDgradAttributes::new()
            .pre_padding(vec![1, 1])
            .post_padding(vec![1, 1])
            .stride(vec![1, 1])
            .dilation(vec![1, 1]),
    );
    g.set_dims(dx, [1, 3, 8, 8]);
    out(&mut g, dx, 3);
    v.push(("conv_dgrad".into(), g));

    let mut g = graph();
    let dy = input(&mut g, "dy", 1, &[1, 4, 8, 8]);
    let x = input(&mut g, "x", 2, &[1, 3, 8, 8]);
    let dw = g.conv_wgrad(
        dy,
        x,
        ConvWgradAttributes::new()
            .pre_padding(vec![1, 1])
            .post_padding(vec![1, 1])
            .stride(vec![1, 1])
            .dilation(vec![1, 1]),
    );
    g.set_dims(dw, [4, 3, 3, 3]);
    out(&mut g, dw, 3);
    v.push(("conv_wgrad".into(), g));

    for &m in PointwiseMode::ALL {
        let mut g = graph();
        let a = input(&mut g, "a", 1, &[2, 8]);
        let y = match m.arity() {
            1 => g.pointwise_unary(a, PointwiseAttributes::with_mode(m)),
            2 => {
                let b = input(&mut g, "b", 2, &[1, 8]);
                g.pointwise(a, b, PointwiseAttributes::with_mode(m))
            }
            3 => {
                let b = input(&mut g, "b", 2, &[2, 8]);
                let c = input(&mut g, "c", 4, &[2, 8]);
                g.set_data_type(c, DataType::Boolean);
                g.pointwise_ternary(a, b, c, PointwiseAttributes::with_mode(m))
            }
            _ => continue,
        };
        out(&mut g, y, 3);
        v.push((format!("pointwise_{}", m.schema_name()), g));
    }

    let mut g = graph();
    let x = input(&mut g, "x", 1, &[4, 16]);
    let s = input(&mut g, "scale", 2, &[1, 16]);
    let b = input(&mut g, "bias", 4, &[1, 16]);
    let eps = g.scalar("eps", TensorValue::Float32(1e-5));
    let (y, m, iv) = g.layernorm(
        x,
        s,
        b,
        LayernormAttributes::new()
            .epsilon(eps)
            .forward_phase(NormFwdPhase::Training),
    );
    out(&mut g, y, 5);
    out(&mut g, m.expect("mean"), 6);
    out(&mut g, iv.expect("inv_variance"), 7);
    v.push(("layernorm".into(), g));

    let mut g = graph();
    let x = input(&mut g, "x", 1, &[4, 16]);
    let s = input(&mut g, "scale", 2, &[1, 16]);
    let b = input(&mut g, "bias", 4, &[1, 16]);
    let y = g.layernorm_inference(x, s, b, 1e-5);
    out(&mut g, y, 5);
    v.push(("layernorm_inference".into(), g));

    let mut g = graph();
    let x = input(&mut g, "x", 1, &[4, 16]);
    let s = input(&mut g, "scale", 2, &[1, 16]);
    let eps = g.scalar("eps", TensorValue::Float32(1e-6));
    let (y, r) = g.rmsnorm(
        x,
        s,
        RmsNormAttributes::new()
            .epsilon(eps)
            .forward_phase(NormFwdPhase::Training),
    );
    out(&mut g, y, 5);
    out(&mut g, r.expect("inv_rms"), 6);
    v.push(("rmsnorm".into(), g));

    let mut g = graph();
    let x = input(&mut g, "x", 1, &[4, 16]);
    let s = input(&mut g, "scale", 2, &[1, 16]);
    let y = g.rmsnorm_inference(x, s, 1e-6);
    out(&mut g, y, 5);
    v.push(("rmsnorm_inference".into(), g));

    for (name, log) in [("softmax", false), ("log_softmax", true)] {
        let mut g = graph();
        let x = input(&mut g, "x", 1, &[3, 4, 10]);
        let y = if log {
            g.log_softmax(x, 2)
        } else {
            g.softmax(x, 2)
        }
        .expect("axis");
        out(&mut g, y, 2);
        v.push((name.into(), g));
    }

    for &m in ReductionMode::ALL {
        if m == ReductionMode::NotSet {
            continue;
        }
        let mut g = graph();
        let x = input(&mut g, "x", 1, &[3, 5, 7]);
        let y = g.reduction(x, [3, 1, 7], ReductionAttributes::new().mode(m));
        out(&mut g, y, 2);
        v.push((format!("reduction_{}", m.schema_name()), g));
    }

    for (name, max) in [("global_avg_pool", false), ("global_max_pool", true)] {
        let mut g = graph();
        let x = input(&mut g, "x", 1, &[2, 3, 5, 5]);
        let y = if max {
            g.global_max_pool(x)
        } else {
            g.global_avg_pool(x)
        }
        .expect("4-D");
        out(&mut g, y, 2);
        v.push((name.into(), g));
    }

    for causal in [false, true] {
        let mut g = graph();
        let q = input(&mut g, "q", 1, &[1, 2, 6, 8]);
        let k = input(&mut g, "k", 2, &[1, 2, 6, 8]);
        let vv = input(&mut g, "v", 4, &[1, 2, 6, 8]);
        let (o, _) = g.sdpa(
            q,
            k,
            vv,
            SdpaAttributes::new()
                .attn_scale_value(0.35)
                .causal_mask(causal),
        );
        out(&mut g, o, 5);
        v.push((format!("sdpa_causal_{causal}"), g));
    }

    let mut g = graph();
    let table = input(&mut g, "table", 1, &[10, 6]);
    let index = g.tensor(
        TensorAttributes::new("index")
            .uid(2)
            .dims([3, 4])
            .data_type(DataType::Int32),
    );
    let y = g.gather(table, index);
    out(&mut g, y, 3);
    v.push(("gather".into(), g));

    for (name, act) in [
        ("none", Activation::None),
        ("relu", Activation::Relu),
        ("gelu", Activation::Gelu),
        ("gelu_tanh", Activation::GeluTanh),
        ("silu", Activation::Silu),
        ("sigmoid", Activation::Sigmoid),
        ("tanh", Activation::Tanh),
    ] {
        let mut g = graph();
        let x = input(&mut g, "x", 1, &[4, 8]);
        let w = input(&mut g, "w", 2, &[8, 5]);
        let b = input(&mut g, "b", 4, &[1, 5]);
        let y = g.linear(x, w, Some(b), act);
        out(&mut g, y, 5);
        v.push((format!("linear_{name}"), g));
    }

    for (name, mode) in [
        ("maxpool", ResampleMode::MaxPool),
        ("avgpool", ResampleMode::AvgPoolIncludePadding),
    ] {
        let mut g = graph();
        let x = input(&mut g, "x", 1, &[1, 2, 6, 6]);
        let (y, _) = g.resample(
            x,
            ResampleFwdAttributes::new()
                .resample_mode(mode)
                .window(vec![2, 2])
                .stride(vec![2, 2])
                .pre_padding(vec![0, 0])
                .post_padding(vec![0, 0]),
        );
        out(&mut g, y, 2);
        v.push((format!("resample_{name}"), g));
    }

    let mut g = graph();
    let x = input(&mut g, "x", 1, &[2, 3, 4, 4]);
    let [m, iv, s, b] = [("mean", 2), ("inv_var", 4), ("scale", 5), ("bias", 6)]
        .map(|(n, u)| input(&mut g, n, u, &[1, 3, 1, 1]));
    let y = g.batchnorm_inference(x, m, iv, s, b, BatchnormInferenceAttributes::new());
    out(&mut g, y, 7);
    v.push(("batchnorm_inference".into(), g));

    // Training-side ops (odd sizes, batch 1).
    for running in [true, false] {
        let mut g = graph();
        let x = input(&mut g, "x", 1, &[1, 3, 5, 7]);
        let s = input(&mut g, "scale", 2, &[1, 3, 1, 1]);
        let b = input(&mut g, "bias", 4, &[1, 3, 1, 1]);
        let eps = g.scalar("eps", TensorValue::Float32(1e-5));
        let mut a = BatchnormAttributes::new().epsilon(eps);
        if running {
            let rm = input(&mut g, "prev_running_mean", 5, &[1, 3, 1, 1]);
            let rv = input(&mut g, "prev_running_variance", 6, &[1, 3, 1, 1]);
            let m = g.scalar("momentum", TensorValue::Float32(0.1));
            a = a
                .prev_running_mean(rm)
                .prev_running_variance(rv)
                .momentum(m);
        }
        let o = g.batchnorm(x, s, b, a);
        out(&mut g, o.y, 10);
        out(&mut g, o.mean, 11);
        out(&mut g, o.inv_variance, 12);
        if let (Some(nm), Some(nv)) = (o.next_running_mean, o.next_running_variance) {
            out(&mut g, nm, 13);
            out(&mut g, nv, 14);
        }
        v.push((format!("batchnorm_running_{running}"), g));
    }

    let mut g = graph();
    let dy = input(&mut g, "dy", 1, &[1, 3, 5, 7]);
    let x = input(&mut g, "x", 2, &[1, 3, 5, 7]);
    let [s, m, iv] = [("scale", 4), ("mean", 5), ("inv_variance", 6)]
        .map(|(n, u)| input(&mut g, n, u, &[1, 3, 1, 1]));
    let [dx, ds, db] = g.batchnorm_backward(
        dy,
        x,
        s,
        BatchnormBackwardAttributes::new().mean(m).inv_variance(iv),
    );
    out(&mut g, dx, 7);
    out(&mut g, ds, 8);
    out(&mut g, db, 9);
    v.push(("batchnorm_backward".into(), g));

    let mut g = graph();
    let x = input(&mut g, "x", 1, &[1, 3, 5, 7]);
    let [m, var, s, b] = [("mean", 2), ("variance", 4), ("scale", 5), ("bias", 6)]
        .map(|(n, u)| input(&mut g, n, u, &[1, 3, 1, 1]));
    let eps = g.scalar("eps", TensorValue::Float32(1.5));
    let y = g.batchnorm_inference_variance_ext(
        x,
        m,
        var,
        s,
        b,
        eps,
        BatchnormInferenceVarianceExtAttributes::new(),
    );
    out(&mut g, y, 7);
    v.push(("batchnorm_inference_variance_ext".into(), g));

    for saved in [true, false] {
        let mut g = graph();
        let dy = input(&mut g, "dy", 1, &[3, 13]);
        let x = input(&mut g, "x", 2, &[3, 13]);
        let s = input(&mut g, "scale", 4, &[1, 13]);
        let a = if saved {
            let m = input(&mut g, "mean", 5, &[3, 1]);
            let iv = input(&mut g, "inv_variance", 6, &[3, 1]);
            LayernormBackwardAttributes::new().mean(m).inv_variance(iv)
        } else {
            let eps = g.scalar("eps", TensorValue::Float32(1e-5));
            LayernormBackwardAttributes::new().epsilon(eps)
        };
        let [dx, ds, db] = g.layernorm_backward(dy, x, s, a);
        out(&mut g, dx, 7);
        out(&mut g, ds, 8);
        out(&mut g, db, 9);
        let name = if saved { "saved_stats" } else { "epsilon" };
        v.push((format!("layernorm_backward_{name}"), g));
    }

    for dbias in [true, false] {
        let mut g = graph();
        let dy = input(&mut g, "dy", 1, &[3, 13]);
        let x = input(&mut g, "x", 2, &[3, 13]);
        let s = input(&mut g, "scale", 4, &[1, 13]);
        let r = input(&mut g, "inv_rms", 5, &[3, 1]);
        let (dx, ds, db) = g.rmsnorm_backward(dy, x, s, r, dbias, RmsNormBackwardAttributes::new());
        out(&mut g, dx, 6);
        out(&mut g, ds, 7);
        if let Some(db) = db {
            out(&mut g, db, 8);
        }
        v.push((format!("rmsnorm_backward_dbias_{dbias}"), g));
    }

    for causal in [false, true] {
        let mut g = graph();
        let [q, k, vv, o, d_o] = [("q", 1), ("k", 2), ("v", 4), ("o", 5), ("do", 6)]
            .map(|(n, u)| input(&mut g, n, u, &[1, 2, 5, 7]));
        let stats = input(&mut g, "stats", 8, &[1, 2, 5, 1]);
        let [dq, dk, dv] = g.sdpa_backward(
            q,
            k,
            vv,
            o,
            d_o,
            stats,
            SdpaBackwardAttributes::new()
                .attn_scale_value(0.35)
                .causal_mask(causal),
        );
        out(&mut g, dq, 9);
        out(&mut g, dk, 10);
        out(&mut g, dv, 11);
        v.push((format!("sdpa_backward_causal_{causal}"), g));
    }

    let pool = |mode| {
        ResampleFwdAttributes::new()
            .resample_mode(mode)
            .window(vec![2, 2])
            .stride(vec![2, 2])
            .pre_padding(vec![0, 0])
            .post_padding(vec![0, 0])
    };
    let mut g = graph();
    let x = input(&mut g, "x", 1, &[1, 2, 7, 5]);
    let y = g.resample_fwd(x, pool(ResampleMode::MaxPool));
    out(&mut g, y, 2);
    v.push(("resample_fwd".into(), g));

    for (name, mode) in [
        ("maxpool", ResampleMode::MaxPool),
        ("avgpool", ResampleMode::AvgPoolIncludePadding),
    ] {
        let mut g = graph();
        let dy = input(&mut g, "dy", 1, &[1, 2, 3, 2]);
        let index = (mode == ResampleMode::MaxPool).then(|| {
            g.tensor(
                TensorAttributes::new("index")
                    .uid(2)
                    .dims([1, 2, 3, 2])
                    .data_type(DataType::Int32),
            )
        });
        let dx = g.resample_bwd(
            dy,
            index,
            ResampleBwdAttributes::new()
                .resample_mode(mode)
                .window(vec![2, 2])
                .stride(vec![2, 2])
                .pre_padding(vec![0, 0])
                .post_padding(vec![0, 0]),
        );
        g.set_dims(dx, [1, 2, 7, 5]);
        out(&mut g, dx, 3);
        v.push((format!("resample_bwd_{name}"), g));
    }

    let mut g = graph();
    let x = input(&mut g, "x", 1, &[3, 5]);
    let y = g.tensor_like(x, "y");
    g.set_uid(y, 2);
    let z = g.pointwise(x, y, PointwiseAttributes::with_mode(PointwiseMode::Sub));
    out(&mut g, z, 3);
    v.push(("tensor_like".into(), g));

    // MXFP8 on the CPU: f32 x quantized in blocks of 32 to E4M3 with E8M0 scales, then
    // dequantized to f32 (the FP8 outputs are bound as their bytes).
    let mut g = graph();
    let x = input(&mut g, "x", 1, &[4, 64]);
    let (y, s) = g.block_scale_quantize(x, BlockScaleQuantizeAttributes::new().block_size(32));
    out(&mut g, y, 2);
    out(&mut g, s, 3);
    g.set_data_type(y, DataType::Fp8E4m3)
        .set_data_type(s, DataType::Fp8E8m0);
    let d = g.block_scale_dequantize(
        y,
        s,
        BlockScaleDequantizeAttributes::new().block_size(vec![1, 32]),
    );
    out(&mut g, d, 4);
    v.push(("block_scale_mxfp8".into(), g));
    v
}

/// The ops no engine of this project runs on the CPU: built as graphs (JSON, binary) and their
/// build refusal compared (python/tests/test_ops.py builds each the same way).
fn graph_only_cases() -> Vec<(String, Graph)> {
    let mut v: Vec<(String, Graph)> = Vec::new();
    let mut g = graph();
    let x = input(&mut g, "x", 1, &[4, 32]);
    let (y, s) = g.block_scale_quantize(
        x,
        BlockScaleQuantizeAttributes::new().block_size(16).axis(1),
    );
    out(&mut g, y, 2);
    out(&mut g, s, 3);
    v.push(("block_scale_quantize".into(), g));

    let mut g = graph();
    let x = input(&mut g, "x", 1, &[4, 32]);
    let s = input(&mut g, "scale", 2, &[4, 2]);
    let y = g.block_scale_dequantize(
        x,
        s,
        BlockScaleDequantizeAttributes::new().block_size(vec![1, 16]),
    );
    out(&mut g, y, 3);
    v.push(("block_scale_dequantize".into(), g));

    let mut g = graph();
    let x = input(&mut g, "x", 1, &[3, 5]);
    let outs = g.custom_op(
        &[x],
        2,
        CustomOpAttributes::new()
            .custom_op_id("example.plugin_op".to_string())
            .data(vec![1u8, 2, 3]),
    );
    for (i, o) in outs.into_iter().enumerate() {
        g.set_dims(o, [3, 5]);
        out(&mut g, o, 2 + i as i64);
    }
    v.push(("custom_op".into(), g));

    let offsets = |g: &mut Graph| {
        g.tensor(
            TensorAttributes::new("first_token_offset")
                .uid(4)
                .dims([2])
                .data_type(DataType::Int32),
        )
    };
    let mut g = graph();
    let t = input(&mut g, "token", 1, &[6, 8]);
    let w = input(&mut g, "weight", 2, &[2, 8, 5]);
    let f = offsets(&mut g);
    let y = g.moe_grouped_matmul(t, w, f, None, None, MoeGroupedMatmulAttributes::new());
    out(&mut g, y, 5);
    v.push(("moe_grouped_matmul".into(), g));

    let mut g = graph();
    let d = input(&mut g, "doutput", 1, &[6, 5]);
    let t = input(&mut g, "token", 2, &[6, 8]);
    let f = offsets(&mut g);
    let dw = g.moe_grouped_matmul_bwd(d, t, f, MoeGroupedMatmulBwdAttributes::new());
    out(&mut g, dw, 5);
    v.push(("moe_grouped_matmul_bwd".into(), g));
    v
}

/// The SDK errors of the cases python/tests/test_errors.py provokes through the bindings.
fn errors() -> Vec<(String, hipdnn::Error)> {
    let h = Handle::cpu().expect("cpu");
    let matmul = || cases().into_iter().next().expect("matmul").1;
    let a = Buffer::from_slice(&values(24, 1));
    let b = Buffer::from_slice(&values(40, 2));
    let mut c = Buffer::<f32>::zeros(20);
    let mut v = Vec::new();
    let g = matmul();
    let pack = VariantPack::new().with(1, &a).with(2, &b).with(3, &mut c);
    v.push((
        "execute_unbuilt".into(),
        g.execute(&h, pack, None).unwrap_err(),
    ));
    let mut g = matmul();
    g.build(&h).expect("build");
    let pack = VariantPack::new().with(1, &a).with(3, &mut c);
    v.push((
        "execute_missing_input".into(),
        g.execute(&h, pack, None).unwrap_err(),
    ));
    let mut g = graph();
    let x = input(&mut g, "x", 1, &[3, 5]);
    let y = g.reduction(x, [3, 1], ReductionAttributes::new());
    out(&mut g, y, 2);
    v.push(("reduction_mode_not_set".into(), g.build(&h).unwrap_err()));
    v.push((
        "from_binary_garbage".into(),
        Graph::from_binary(&h, b"not a graph").unwrap_err(),
    ));
    v.push((
        "from_json_garbage".into(),
        Graph::from_json("{").unwrap_err(),
    ));
    let mut g = matmul();
    g.build(&h).expect("build");
    let plan = g.to_compiled_plan_binary().expect("plan");
    v.push((
        "from_binary_plan_only".into(),
        Graph::from_binary(&h, &plan).unwrap_err(),
    ));
    v.push((
        "load_from_file_missing".into(),
        Graph::load_from_file(&h, "/nonexistent/hipdnn-py/missing.hdgp").unwrap_err(),
    ));
    v.push((
        "save_to_file_bad_dir".into(),
        matmul()
            .save_to_file(
                "/nonexistent/hipdnn-py/out.hdgp",
                hipdnn::Form::GraphAndPlan,
            )
            .unwrap_err(),
    ));
    for (name, mut g) in graph_only_cases() {
        let e = g
            .build(&h)
            .expect_err("no CPU engine for a graph-only case");
        v.push((format!("build_{name}"), e));
    }
    v
}

/// The case named `name`, unbuilt.
fn case(name: &str) -> Graph {
    cases()
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("case")
        .1
}

/// "ok <engine> <workspace>" after a successful build, else the SDK error's Display.
fn outcome(r: hipdnn::Result<()>, g: &Graph) -> String {
    match r {
        Ok(()) => format!(
            "ok {} {}",
            g.engine_name().expect("plan"),
            g.workspace_size().expect("plan")
        ),
        Err(e) => e.to_string(),
    }
}

/// What the SDK does with the settings and engine choices python/tests/test_settings.py
/// exercises: "<key>\t<outcome>" lines (newlines escaped).
fn settings() -> Vec<(String, String)> {
    use hipdnn::{BehaviorNote, HeuristicMode, NumericalNote};
    let h = Handle::cpu().expect("cpu");
    let mut v: Vec<(String, String)> = Vec::new();
    let mut push = |k: &str, o: String| v.push((k.to_string(), o));

    let mut g = case("matmul");
    g.deselect_engines(["hipdnn.reference.cpu"]);
    let r = g.build(&h);
    push("deselect_engines", outcome(r, &g));
    g.clear_engine_filters();
    let r = g.build(&h);
    push("deselect_engines_cleared", outcome(r, &g));

    let mut g = case("matmul");
    g.deselect_workspace_greater_than(0);
    let r = g.build(&h);
    push("deselect_workspace_greater_than_0", outcome(r, &g));

    for c in ["conv_fprop", "matmul"] {
        let mut g = case(c);
        g.select_numeric_notes([NumericalNote::Winograd]);
        let r = g.build(&h);
        push(&format!("select_numeric_notes_{c}"), outcome(r, &g));
        let mut g = case(c);
        g.deselect_numeric_notes([NumericalNote::Winograd]);
        let r = g.build(&h);
        push(&format!("deselect_numeric_notes_{c}"), outcome(r, &g));
        let mut g = case(c);
        g.build(&h).expect("build");
        let notes: Vec<&str> = g
            .numerical_notes()
            .expect("notes")
            .iter()
            .map(|n| n.name())
            .collect();
        push(&format!("numerical_notes_{c}"), notes.join(","));
    }

    let mut g = case("matmul");
    g.deselect_behavior_notes([BehaviorNote::SupportsExecutionPlanSerialization]);
    let r = g.build(&h);
    push("deselect_behavior_notes", outcome(r, &g));

    let mut hd = Handle::cpu().expect("cpu");
    hd.set_deterministic_only(true);
    let mut g = case("matmul");
    let r = g.build(&hd);
    push("deterministic_only", outcome(r, &g));

    let g = case("matmul");
    push(
        "numerical_notes_unbuilt",
        g.numerical_notes().unwrap_err().to_string(),
    );
    push(
        "execution_plan_engine_id_unbuilt",
        g.execution_plan_engine_id().unwrap_err().to_string(),
    );
    let mut g = case("matmul");
    g.build(&h).expect("build");
    push(
        "execution_plan_engine_id",
        g.execution_plan_engine_id().expect("id").to_string(),
    );
    push(
        "execution_plan_knob_choices",
        format!("{:?}", g.execution_plan_knob_choices().expect("knobs")),
    );
    push(
        "engine_id_from_name",
        hipdnn::engine_id_from_name("hipdnn.reference.cpu").to_string(),
    );

    let mut g = case("matmul");
    let r = g.build_with(&h, &[HeuristicMode::Fallback]);
    push("build_with_fallback", outcome(r, &g));
    let mut g = case("matmul");
    let r = g.build_with(&h, &[]);
    push("build_with_empty", outcome(r, &g));
    let mut g = case("matmul");
    let r = g.build_with_knobs(&h, &[(1, 1)]);
    push("build_with_knobs", outcome(r, &g));

    let mut g = case("matmul");
    g.set_preferred_engine_id(Some(hipdnn::engine_id_from_name("hipdnn.reference.cpu")));
    let r = g.build(&h);
    push("preferred_engine_id", outcome(r, &g));

    let mut ho = Handle::cpu().expect("cpu");
    ho.set_engine_override_file(Some("/nonexistent/hipdnn-py-rules.json".into()));
    let mut g = case("matmul");
    let r = g.build(&ho);
    push("engine_override_file", outcome(r, &g));
    v
}

/// One autotune result without its times (python/tests/test_settings.py prints the same).
fn autotune_line(r: &hipdnn::AutotuneResult) -> String {
    format!(
        "engine_id={} engine_name={} variant={:?} knob_choices={:?} iterations_run={} \
         converged={} rank={} succeeded={} error_message={:?} workspace_size={} mode_used={:?} \
         supports_exhaustive={} ran_exhaustive={} exhaustive_not_run_reason={:?} \
         strategy_used={:?}",
        r.engine_id,
        r.engine_name,
        r.variant,
        r.knob_choices,
        r.iterations_run,
        r.converged,
        r.rank,
        r.succeeded,
        r.error_message,
        r.workspace_size,
        r.mode_used,
        r.supports_exhaustive,
        r.ran_exhaustive,
        r.exhaustive_not_run_reason,
        r.strategy_used,
    )
}

/// Autotune of `case` with `config` on the deterministic inputs: one line per result, then
/// "plan <engine>"; or the SDK error's Display.
fn autotune(case_name: &str, config: &hipdnn::AutotuneConfig) -> Vec<String> {
    let h = Handle::cpu().expect("cpu");
    let mut g = case(case_name);
    let a = Buffer::from_slice(&values(24, 1));
    let b = Buffer::from_slice(&values(40, 2));
    let mut c = Buffer::<f32>::zeros(30);
    let pack = VariantPack::new().with(1, &a).with(2, &b).with(3, &mut c);
    match g.autotune(&h, pack, config, None) {
        Ok(results) => {
            let mut v: Vec<String> = results.iter().map(autotune_line).collect();
            v.push(format!("plan {}", g.engine_name().expect("plan")));
            v
        }
        Err(e) => vec![e.to_string()],
    }
}

/// Per-call time of `Graph::execute` for `y = a + b` on `elements` FLOAT elements, the graph
/// python/examples/overhead.py times from Python: `rounds` rounds of `calls` executes (the
/// variant pack made anew each call, as Python does), the handle synchronized at the end of
/// each round; one JSON line with each round's per-call microseconds and their median.
fn overhead(device: &str, n: i64, calls: usize, rounds: usize) -> Result<String, hipdnn::Error> {
    let h = match device {
        "gpu" => Handle::gpu()?,
        _ => Handle::cpu()?,
    };
    let mut g = graph();
    let a = input(&mut g, "a", 1, &[n]);
    let b = input(&mut g, "b", 2, &[n]);
    let y = g.pointwise(a, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    out(&mut g, y, 3);
    g.build(&h)?;
    let av = Buffer::from_slice_on(&h, &values(n as usize, 1))?;
    let bv = Buffer::from_slice_on(&h, &values(n as usize, 2))?;
    let mut yv = Buffer::<f32>::alloc(&h, n as usize)?;
    let ws = g.workspace_size()?;
    let mut wsb = Buffer::<u8>::alloc(&h, ws)?;
    let mut run = |yv: &mut Buffer<f32>| -> Result<(), hipdnn::Error> {
        let pack = VariantPack::new().with(1, &av).with(2, &bv).with(3, yv);
        g.execute(&h, pack, if ws > 0 { Some(&mut wsb) } else { None })
    };
    for _ in 0..calls.min(100) {
        run(&mut yv)?; // warm-up
    }
    h.synchronize()?;
    let mut per_call = Vec::new();
    for _ in 0..rounds {
        let t = std::time::Instant::now();
        for _ in 0..calls {
            run(&mut yv)?;
        }
        h.synchronize()?;
        per_call.push(t.elapsed().as_secs_f64() * 1e6 / calls as f64);
    }
    let want: Vec<f32> = values(n as usize, 1)
        .iter()
        .zip(values(n as usize, 2))
        .map(|(x, y)| x + y)
        .collect();
    assert_eq!(yv.to_vec()?, want, "a + b");
    let mut sorted = per_call.clone();
    sorted.sort_by(f64::total_cmp);
    let rounded: Vec<String> = per_call.iter().map(|v| format!("{v:.3}")).collect();
    Ok(format!(
        "{{\"side\": \"rust\", \"device\": \"{}\", \"arch\": \"{}\", \"elements\": {n}, \
         \"calls\": {calls}, \"rounds\": {rounds}, \"per_call_us_median\": {:.3}, \
         \"per_call_us_rounds\": [{}]}}",
        device,
        h.device_arch(),
        sorted[sorted.len() / 2],
        rounded.join(", ")
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["ops"] => {
            for (name, g) in cases() {
                println!("{name} {}", run(g, true));
            }
        }
        ["json"] => {
            for (name, g) in cases().into_iter().chain(graph_only_cases()) {
                println!("{name}\t{}", g.to_json().expect("json"));
            }
        }
        ["settings"] => {
            for (k, o) in settings() {
                println!("{k}\t{}", o.replace('\\', "\\\\").replace('\n', "\\n"));
            }
        }
        ["autotune", strategy] => {
            use hipdnn::{AutotuneConfig, AutotuneStrategy};
            let mut config = AutotuneConfig {
                timed_iterations: 3,
                ..AutotuneConfig::default()
            };
            match *strategy {
                "fixed" => config.strategy = AutotuneStrategy::FixedAverage,
                "single" => config.strategy = AutotuneStrategy::SingleShot,
                "bad_threshold" => config.stability_threshold = 2.0,
                "no_candidate" => config.engine_id_filter = vec![12345],
                _ => {
                    eprintln!("autotune fixed | single | bad_threshold | no_candidate");
                    return ExitCode::FAILURE;
                }
            }
            for line in autotune("matmul", &config) {
                println!("{line}");
            }
        }
        ["binary"] => {
            for (name, g) in cases().into_iter().chain(graph_only_cases()) {
                let bytes = g.to_binary().expect("to_binary");
                println!("{name} {}", hex(&Sha256::digest(&bytes)));
            }
        }
        ["errors"] => {
            for (name, e) in errors() {
                // One line per error: backslashes and newlines escaped.
                let text = e.to_string().replace('\\', "\\\\").replace('\n', "\\n");
                println!("{name}\t{text}");
            }
        }
        ["save", case, file] => {
            let Some((_, mut g)) = cases().into_iter().find(|(n, _)| n == case) else {
                eprintln!("no case {case}");
                return ExitCode::FAILURE;
            };
            g.build(&Handle::cpu().expect("cpu")).expect("build");
            std::fs::write(file, g.to_binary().expect("save")).expect("write");
        }
        ["save_file", case, form, file] => {
            let Some((_, mut g)) = cases().into_iter().find(|(n, _)| n == case) else {
                eprintln!("no case {case}");
                return ExitCode::FAILURE;
            };
            g.build(&Handle::cpu().expect("cpu")).expect("build");
            let form = match *form {
                "plan" => hipdnn::Form::PlanOnly,
                _ => hipdnn::Form::GraphAndPlan,
            };
            g.save_to_file(file, form).expect("save_to_file");
        }
        ["resave", input, output] => {
            let bytes = std::fs::read(input).expect("read");
            let g = match Graph::from_binary(&Handle::cpu().expect("cpu"), &bytes) {
                Ok(g) => g,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            println!("{}", run(g.clone(), false));
            std::fs::write(output, g.to_binary().expect("save")).expect("write");
        }
        ["overhead", device, n, calls, rounds] => {
            let parse = |s: &str| s.parse::<usize>().ok().filter(|v| *v > 0);
            let (Some(n), Some(calls), Some(rounds)) = (parse(n), parse(calls), parse(rounds))
            else {
                eprintln!("overhead <cpu|gpu> <elements> <calls> <rounds> (positive integers)");
                return ExitCode::FAILURE;
            };
            match overhead(device, n as i64, calls, rounds) {
                Ok(line) => println!("{line}"),
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        _ => {
            eprintln!("usage: rust_reference ops | save <case> <file> | resave <in> <out>");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
