//! Device graphs (issue 34, deliverable 2): plans' executes captured into a CUDA graph /
//! hipGraph with `Handle::capture`, replayed with `DeviceGraph::replay`, given new buffers with
//! `DeviceGraph::update`; refusals of what cannot be captured.
//!
//! The CPU tests run everywhere. Without a GPU every GPU test prints `skipped: no GPU: …` and
//! passes.
//!
//! Each replay is compared bit for bit with a plain execute of the same plans on the same
//! inputs (same kernels, so the same bits).

mod gpu_support;
use gpu_support::{HW, K, N, W_LEN, X_LEN, Y_LEN, conv_graph, gpu, lcg};
use hipdnn::{
    Buffer, DataType, DeviceGraph, ErrorCode, Graph, Handle, PointwiseAttributes, PointwiseMode,
    TensorAttributes as T, VariantPack,
};

/// Plan B: z (uid 5) = relu(y (uid 4)), over plan A's output shape.
fn relu_graph() -> Graph {
    let mut g = Graph::new();
    g.set_name("capture_relu")
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let y = g.tensor(T::new("y").uid(4).dims([N, K, HW, HW]).packed_nchw());
    let z = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.set_output(z, true).set_uid(z, 5);
    g
}

struct Pass {
    conv: Graph,
    relu: Graph,
    x: Buffer<f32>,
    w: Buffer<f32>,
    y: Buffer<f32>,
    z: Buffer<f32>,
    ws: Buffer<u8>,
}

impl Pass {
    fn new(h: &Handle, seed: u64) -> Pass {
        let (mut conv, mut relu) = (conv_graph("capture_conv"), relu_graph());
        conv.build(h).expect("build conv");
        relu.build(h).expect("build relu");
        assert_eq!(conv.engine_name().unwrap(), "hipkernel.ingestor.gpu");
        assert_eq!(relu.engine_name().unwrap(), "hipkernel.ingestor.gpu");
        let ws_len = conv
            .workspace_size()
            .unwrap()
            .max(relu.workspace_size().unwrap());
        Pass {
            x: Buffer::from_slice_on(h, &lcg(X_LEN, seed)).unwrap(),
            w: Buffer::from_slice_on(h, &lcg(W_LEN, seed + 1)).unwrap(),
            y: Buffer::filled(Y_LEN, f32::NAN).to_handle(h).unwrap(),
            z: Buffer::filled(Y_LEN, f32::NAN).to_handle(h).unwrap(),
            ws: Buffer::alloc(h, ws_len).unwrap(),
            conv,
            relu,
        }
    }

    /// Executes (or, inside a capture, records) conv then relu on the pass's buffers.
    fn run(
        h: &Handle,
        conv: &Graph,
        relu: &Graph,
        bufs: (
            &Buffer<f32>,
            &Buffer<f32>,
            &mut Buffer<f32>,
            &mut Buffer<f32>,
        ),
        ws: &mut Buffer<u8>,
    ) -> hipdnn::Result<()> {
        let (x, w, y, z) = bufs;
        conv.execute(
            h,
            VariantPack::new().input(1, x).input(2, w).output(3, y),
            Some(ws),
        )?;
        relu.execute(h, VariantPack::new().input(4, &*y).output(5, z), Some(ws))
    }

    fn execute(&mut self, h: &Handle) {
        let Pass {
            conv,
            relu,
            x,
            w,
            y,
            z,
            ws,
        } = self;
        Pass::run(h, conv, relu, (x, w, y, z), ws).expect("execute");
    }

    fn capture(&mut self, h: &mut Handle) -> hipdnn::Result<DeviceGraph> {
        let Pass {
            conv,
            relu,
            x,
            w,
            y,
            z,
            ws,
        } = self;
        h.capture(|h| Pass::run(h, conv, relu, (x, w, y, z), ws))
    }

    fn outputs(&self) -> (Vec<u32>, Vec<u32>) {
        let bits = |b: &Buffer<f32>| b.to_vec().unwrap().iter().map(|v| v.to_bits()).collect();
        (bits(&self.y), bits(&self.z))
    }

    fn reset_outputs(&mut self, h: &Handle) {
        self.y = Buffer::filled(Y_LEN, f32::NAN).to_handle(h).unwrap();
        self.z = Buffer::filled(Y_LEN, f32::NAN).to_handle(h).unwrap();
    }
}

#[test]
fn a_cpu_handle_refuses_capture_naming_the_fix() {
    let mut h = Handle::cpu().unwrap();
    let e = h.capture(|_| Ok(())).expect_err("CPU capture");
    assert_eq!(e.code, ErrorCode::GraphNotSupported);
    assert!(
        e.message.starts_with(
            "graph capture: the handle runs on the CPU; device graphs need a GPU handle"
        ),
        "{e}"
    );
}

#[test]
fn gpu_a_replay_equals_execute_bit_for_bit_and_records_without_running() {
    let Some(mut h) = gpu() else { return };
    let mut p = Pass::new(&h, 7);
    p.execute(&h);
    let expected = p.outputs();
    assert!(expected.1.iter().all(|&b| !f32::from_bits(b).is_nan()));
    assert!(expected.1.iter().any(|&b| f32::from_bits(b) > 0.0));

    p.reset_outputs(&h);
    let graph = p.capture(&mut h).expect("capture");
    // Recorded, not run: the outputs still hold NaN.
    h.synchronize().unwrap();
    assert!(p.outputs().0.iter().all(|&b| f32::from_bits(b).is_nan()));
    assert!(p.outputs().1.iter().all(|&b| f32::from_bits(b).is_nan()));
    assert_eq!(graph.executes(), 2);
    assert!(graph.node_count() >= 2, "{} nodes", graph.node_count());
    assert_eq!(h.backend().stream(), 0, "the handle's stream is restored");

    graph.replay(&h).expect("replay");
    h.synchronize().unwrap();
    assert_eq!(p.outputs(), expected);

    // The graph leases what it was captured with: dropping z (replaced by a zero buffer)
    // keeps its memory for the replays, which write there, not into the new buffer.
    p.z = Buffer::filled(Y_LEN, 0f32).to_handle(&h).unwrap();
    graph
        .replay(&h)
        .expect("replay after the buffer was dropped");
    h.synchronize()
        .expect("no fault: the memory is still allocated");
    assert!(p.z.to_vec().unwrap().iter().all(|&v| v == 0.0));
}

#[test]
fn gpu_update_gives_the_graph_new_buffers() {
    let Some(mut h) = gpu() else { return };
    let mut first = Pass::new(&h, 11);
    let mut second = Pass::new(&h, 12);
    second.execute(&h);
    let expected = second.outputs();
    second.reset_outputs(&h);

    let mut graph = first.capture(&mut h).expect("capture");
    let nodes = graph.node_count();
    let Pass { x, w, y, z, ws, .. } = &mut second;
    let (conv, relu) = (&first.conv, &first.relu);
    graph
        .update(&mut h, |h| Pass::run(h, conv, relu, (x, w, y, z), ws))
        .expect("update");
    assert_eq!((graph.executes(), graph.node_count()), (2, nodes));
    graph.replay(&h).expect("replay");
    h.synchronize().unwrap();
    assert_eq!(second.outputs(), expected);
    // The first pass's buffers were not written.
    assert!(
        first
            .outputs()
            .1
            .iter()
            .all(|&b| f32::from_bits(b).is_nan())
    );
}

#[test]
fn gpu_an_update_with_other_executes_is_refused_and_the_graph_kept() {
    let Some(mut h) = gpu() else { return };
    let mut p = Pass::new(&h, 21);
    p.execute(&h);
    let expected = p.outputs();
    p.reset_outputs(&h);
    let mut graph = p.capture(&mut h).expect("capture");
    let nodes = graph.node_count();
    let Pass {
        conv, x, w, y, ws, ..
    } = &mut p;
    let e = graph
        .update(&mut h, |h| {
            conv.execute(
                h,
                VariantPack::new().input(1, &*x).input(2, &*w).output(3, y),
                Some(ws),
            )
        })
        .expect_err("one execute instead of two");
    assert_eq!(e.code, ErrorCode::InvalidValue);
    let want = format!(
        "graph capture: the update's executes do not match the captured graph (2 executes, \
         {nodes} nodes captured; 1 executes, "
    );
    assert!(e.message.starts_with(&want), "{e}");
    assert_eq!(graph.executes(), 2);
    graph.replay(&h).expect("the old graph still replays");
    h.synchronize().unwrap();
    assert_eq!(p.outputs(), expected);
}

#[test]
fn gpu_a_cpu_plan_inside_a_capture_is_refused_by_name_and_nothing_recorded() {
    let Some(mut h) = gpu() else { return };
    let mut p = Pass::new(&h, 31);
    let mut cpu_relu = relu_graph();
    cpu_relu.deselect_engines(["hipkernel.ingestor.gpu"]);
    cpu_relu.build(&h).expect("build on the CPU engine");
    assert_eq!(cpu_relu.engine_name().unwrap(), "hipdnn.reference.cpu");
    let Pass { y, z, .. } = &mut p;
    let e = h
        .capture(|h| cpu_relu.execute(h, VariantPack::new().input(4, &*y).output(5, z), None))
        .expect_err("CPU plan");
    assert_eq!(e.code, ErrorCode::GraphNotSupported);
    assert!(
        e.message.starts_with(
            "graph capture: engine \"hipdnn.reference.cpu\": the CPU reference engine computes \
             on the host during execute"
        ),
        "{e}"
    );
    assert_eq!(h.backend().stream(), 0, "the handle's stream is restored");
    // Nothing executed, nothing recorded: a capture that executes nothing is refused too.
    let e = h.capture(|_| Ok(())).expect_err("empty capture");
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message.starts_with("graph capture: nothing was executed"),
        "{e}"
    );
    // The handle still executes plainly.
    p.execute(&h);
}

#[test]
fn gpu_plans_loaded_from_bytes_capture_and_replay_like_built_ones() {
    let Some(mut h) = gpu() else { return };
    let mut p = Pass::new(&h, 41);
    p.execute(&h);
    let expected = p.outputs();
    p.reset_outputs(&h);
    let conv_bytes = p.conv.to_binary().expect("save conv");
    let relu_bytes = p.relu.to_binary().expect("save relu");
    p.conv = Graph::from_binary(&h, &conv_bytes).expect("load conv");
    p.relu = Graph::from_binary(&h, &relu_bytes).expect("load relu");
    let graph = p.capture(&mut h).expect("capture loaded plans");
    graph.replay(&h).expect("replay");
    h.synchronize().unwrap();
    assert_eq!(p.outputs(), expected);
    assert_eq!(
        p.conv.to_binary().unwrap(),
        conv_bytes,
        "re-save byte-identical"
    );
}

#[test]
fn gpu_executes_on_a_stream_set_on_the_handle() {
    let Some(mut h) = gpu() else { return };
    let mut p = Pass::new(&h, 51);
    p.execute(&h);
    let expected = p.outputs();
    p.reset_outputs(&h);
    let dev = h.gpu_device().unwrap().clone();
    let stream = hipdnn_hip::Stream::new(&dev).expect("stream");
    h.backend_mut().set_stream(stream.handle_value());
    p.execute(&h);
    h.synchronize().expect("synchronize the handle's stream");
    h.backend_mut().set_stream(0);
    assert_eq!(p.outputs(), expected);
}

#[test]
fn gpu_a_panic_inside_a_capture_leaves_the_handle_usable() {
    let Some(mut h) = gpu() else { return };
    let mut p = Pass::new(&h, 61);
    p.execute(&h);
    let expected = p.outputs();
    p.reset_outputs(&h);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = h.capture(|_| panic!("inside the capture"));
    }));
    assert!(caught.is_err());
    assert_eq!(h.backend().stream(), 0, "the handle's stream is restored");
    let graph = p.capture(&mut h).expect("a capture after the panic");
    graph.replay(&h).expect("replay");
    h.synchronize().unwrap();
    assert_eq!(p.outputs(), expected);
}
