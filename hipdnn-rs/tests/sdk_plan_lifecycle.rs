//! Plan lifecycle of the `hipdnn` SDK on the CPU reference engine: build → execute → save
//! (graph+plan container and plan alone) → load in a fresh handle → execute → re-save, for
//! several graph kinds; whole-container identity; and the exact refusals.
//!
//! Outputs of the built plan are checked against plain loops in this file (tolerance stated per
//! graph); every reloaded plan must give the same `f32` bits as the built one, and every re-save
//! the same bytes.

use hipdnn::{
    Buffer, ConvFpropAttributes, DataType, ErrorCode, Graph, Handle, LayernormAttributes,
    MatmulAttributes, NO_FINALIZED_PLAN_MESSAGE, NO_PLAN_MESSAGE, NormFwdPhase,
    PointwiseAttributes, PointwiseMode, TensorAttributes, TensorValue, VariantPack,
};
use hipdnn_backend::{PlanEnvelope, engine_id_from_name, hdgp};

const CPU_ENGINE: &str = "hipdnn.reference.cpu";

/// Deterministic inputs in about [-1, 1], with a per-tensor `seed`.
fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37 + seed * 11 + 5) % 23) as f32 / 11.0 - 1.0)
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A graph with its inputs, its output UIDs and sizes, and the plain-loop expected outputs.
struct Case {
    name: &'static str,
    graph: Graph,
    inputs: Vec<(i64, Vec<f32>)>,
    outputs: Vec<(i64, usize)>,
    expected: Vec<Vec<f32>>,
    /// Allowed |got − want| ≤ tol · (1 + |want|).
    tol: f32,
}

impl Case {
    /// Executes `g` on `h` with this case's inputs; outputs start as NaN so an unwritten
    /// element shows.
    fn run(&self, g: &Graph, h: &Handle) -> Vec<Vec<f32>> {
        let ins: Vec<(i64, Buffer<f32>)> = self
            .inputs
            .iter()
            .map(|(u, v)| (*u, Buffer::from_slice(v)))
            .collect();
        let mut outs: Vec<(i64, Buffer<f32>)> = self
            .outputs
            .iter()
            .map(|(u, n)| (*u, Buffer::filled(*n, f32::NAN)))
            .collect();
        let pack = ins
            .iter()
            .fold(VariantPack::new(), |p, (u, b)| p.with(*u, b));
        let pack = outs.iter_mut().fold(pack, |p, (u, b)| p.with(*u, b));
        let mut ws = Buffer::<u8>::zeros(g.workspace_size().unwrap());
        g.execute(h, pack, Some(&mut ws))
            .unwrap_or_else(|e| panic!("{}: execute failed: {e}", self.name));
        outs.iter().map(|(_, b)| b.to_vec().unwrap()).collect()
    }

    fn built(&mut self) -> Handle {
        let h = Handle::cpu().unwrap();
        self.graph.build(&h).unwrap();
        h
    }
}

fn assert_close(case: &str, got: &[Vec<f32>], want: &[Vec<f32>], tol: f32) {
    assert_eq!(got.len(), want.len());
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len(), "{case}: output {o} length");
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (a - b).abs() <= tol * (1.0 + b.abs()),
                "{case}: output {o}[{i}] = {a}, plain loop gives {b} (tolerance {tol})"
            );
        }
    }
}

fn assert_same_bits(case: &str, what: &str, got: &[Vec<f32>], want: &[Vec<f32>]) {
    assert_eq!(got.len(), want.len(), "{case}: {what}");
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            bits(g),
            bits(w),
            "{case}: {what}: output {o} is not bit-identical"
        );
    }
}

fn f32_graph(name: &str) -> Graph {
    let mut g = Graph::new();
    g.set_name(name)
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    g
}

/// y = relu(conv(x, w; pad 1, stride 1) + b); x 1×2×5×5, w 3×2×3×3, b 1×3×1×1.
fn conv_bias_relu() -> Case {
    let (n, c, hh, ww, k) = (1usize, 2usize, 5usize, 5usize, 3usize);
    let mut g = f32_graph("conv_bias_relu");
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([1, 2, 5, 5])
            .packed_nchw(),
    );
    let w = g.tensor(
        TensorAttributes::new("w")
            .uid(2)
            .dims([3, 2, 3, 3])
            .packed_nchw(),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(3)
            .dims([1, 3, 1, 1])
            .packed_nchw(),
    );
    let conv = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    let biased = g.pointwise(conv, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y = g.pointwise_unary(
        biased,
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd),
    );
    g.set_output(y, true).set_uid(y, 4).set_tensor_name(y, "y");
    let (xv, wv, bv) = (data(n * c * hh * ww, 1), data(k * c * 9, 2), data(k, 3));
    let mut yv = vec![0f32; k * hh * ww];
    for o in 0..k {
        for r in 0..hh {
            for s in 0..ww {
                let mut acc = 0f64;
                for ci in 0..c {
                    for dr in 0..3 {
                        for ds in 0..3 {
                            let (ir, is) =
                                (r as isize + dr as isize - 1, s as isize + ds as isize - 1);
                            if ir < 0 || is < 0 || ir >= hh as isize || is >= ww as isize {
                                continue;
                            }
                            let xi = (ci * hh + ir as usize) * ww + is as usize;
                            let wi = ((o * c + ci) * 3 + dr) * 3 + ds;
                            acc += f64::from(xv[xi]) * f64::from(wv[wi]);
                        }
                    }
                }
                yv[(o * hh + r) * ww + s] = (acc as f32 + bv[o]).max(0.0);
            }
        }
    }
    assert!(
        yv.contains(&0.0) && yv.iter().any(|v| *v > 0.0),
        "relu must clip some"
    );
    Case {
        name: "conv_bias_relu",
        graph: g,
        inputs: vec![(1, xv), (2, wv), (3, bv)],
        outputs: vec![(4, k * hh * ww)],
        expected: vec![yv],
        tol: 1e-5,
    }
}

/// c = a × b, batched: a 2×3×4, b 2×4×5 → c 2×3×5.
fn matmul() -> Case {
    let (bt, m, kk, nn) = (2usize, 3usize, 4usize, 5usize);
    let mut g = f32_graph("matmul");
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(10)
            .dims([2, 3, 4])
            .packed_nchw(),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(11)
            .dims([2, 4, 5])
            .packed_nchw(),
    );
    let c = g.matmul(a, b, MatmulAttributes::new());
    g.set_output(c, true).set_uid(c, 12).set_tensor_name(c, "c");
    let (av, bv) = (data(bt * m * kk, 4), data(bt * kk * nn, 5));
    let mut cv = vec![0f32; bt * m * nn];
    for p in 0..bt {
        for i in 0..m {
            for j in 0..nn {
                let acc: f64 = (0..kk)
                    .map(|q| {
                        f64::from(av[(p * m + i) * kk + q]) * f64::from(bv[(p * kk + q) * nn + j])
                    })
                    .sum();
                cv[(p * m + i) * nn + j] = acc as f32;
            }
        }
    }
    Case {
        name: "matmul",
        graph: g,
        inputs: vec![(10, av), (11, bv)],
        outputs: vec![(12, bt * m * nn)],
        expected: vec![cv],
        tol: 1e-5,
    }
}

/// y = tanh(x · s − t) with s broadcast over 1×3×1×1; two outputs: y and u = x · s.
fn pointwise_chain() -> Case {
    let mut g = f32_graph("pointwise_chain");
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(20)
            .dims([2, 3, 2, 2])
            .packed_nchw(),
    );
    let s = g.tensor(
        TensorAttributes::new("s")
            .uid(21)
            .dims([1, 3, 1, 1])
            .packed_nchw(),
    );
    let t = g.tensor(
        TensorAttributes::new("t")
            .uid(22)
            .dims([2, 3, 2, 2])
            .packed_nchw(),
    );
    let u = g.pointwise(x, s, PointwiseAttributes::with_mode(PointwiseMode::Mul));
    let d = g.pointwise(u, t, PointwiseAttributes::with_mode(PointwiseMode::Sub));
    let y = g.pointwise_unary(d, PointwiseAttributes::with_mode(PointwiseMode::TanhFwd));
    g.set_output(u, true).set_uid(u, 23).set_tensor_name(u, "u");
    g.set_output(y, true).set_uid(y, 24).set_tensor_name(y, "y");
    let (xv, sv, tv) = (data(24, 6), data(3, 7), data(24, 8));
    let uv: Vec<f32> = (0..24).map(|i| xv[i] * sv[(i / 4) % 3]).collect();
    let yv: Vec<f32> = (0..24).map(|i| (uv[i] - tv[i]).tanh()).collect();
    Case {
        name: "pointwise_chain",
        graph: g,
        inputs: vec![(20, xv), (21, sv), (22, tv)],
        outputs: vec![(23, 24), (24, 24)],
        expected: vec![uv, yv],
        tol: 1e-6,
    }
}

/// Layernorm (inference) over C×H×W of x 2×3×2×2, scale and bias 1×3×2×2, epsilon 1e-5 baked.
fn layernorm() -> Case {
    let mut g = f32_graph("layernorm");
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(30)
            .dims([2, 3, 2, 2])
            .packed_nchw(),
    );
    let s = g.tensor(
        TensorAttributes::new("scale")
            .uid(31)
            .dims([1, 3, 2, 2])
            .packed_nchw(),
    );
    let b = g.tensor(
        TensorAttributes::new("bias")
            .uid(32)
            .dims([1, 3, 2, 2])
            .packed_nchw(),
    );
    let e = g.tensor(
        TensorAttributes::scalar(TensorValue::Float32(1e-5))
            .name("eps")
            .uid(33),
    );
    let (y, mean, inv) = g.layernorm(
        x,
        s,
        b,
        LayernormAttributes::new()
            .epsilon(e)
            .forward_phase(NormFwdPhase::Inference),
    );
    assert!(mean.is_none() && inv.is_none());
    g.set_output(y, true).set_uid(y, 34).set_tensor_name(y, "y");
    let (xv, sv, bv) = (data(24, 9), data(12, 10), data(12, 11));
    let mut yv = vec![0f32; 24];
    for n in 0..2 {
        let row = &xv[n * 12..n * 12 + 12];
        let mean = row.iter().map(|v| f64::from(*v)).sum::<f64>() / 12.0;
        let var = row
            .iter()
            .map(|v| (f64::from(*v) - mean).powi(2))
            .sum::<f64>()
            / 12.0;
        let inv = 1.0 / (var + 1e-5).sqrt();
        for i in 0..12 {
            yv[n * 12 + i] =
                ((f64::from(row[i]) - mean) * inv * f64::from(sv[i]) + f64::from(bv[i])) as f32;
        }
    }
    Case {
        name: "layernorm",
        graph: g,
        inputs: vec![(30, xv), (31, sv), (32, bv)],
        outputs: vec![(34, 24)],
        expected: vec![yv],
        tol: 1e-5,
    }
}

fn all_cases() -> Vec<Case> {
    vec![conv_bias_relu(), matmul(), pointwise_chain(), layernorm()]
}

/// The whole lifecycle of one case, both save forms, two load generations.
fn lifecycle(mut case: Case) {
    let name = case.name;
    let h0 = case.built();
    let g0 = std::mem::take(&mut case.graph);
    assert_eq!(g0.engine_name().unwrap(), CPU_ENGINE, "{name}");
    assert_eq!(
        g0.execution_plan_engine_id().unwrap(),
        engine_id_from_name(CPU_ENGINE)
    );
    assert_eq!(
        g0.workspace_size().unwrap(),
        0,
        "{name}: the CPU engine needs no workspace"
    );
    let y0 = case.run(&g0, &h0);
    assert_close(name, &y0, &case.expected, case.tol);
    assert_same_bits(
        name,
        "second execute of the built plan",
        &case.run(&g0, &h0),
        &y0,
    );

    // Graph + plan container.
    let bin = g0.to_binary().unwrap();
    assert!(
        hdgp::is_graph_and_plan_container(&bin),
        "{name}: to_binary must give HDGP"
    );
    assert_eq!(
        hdgp::serialized_contents(&bin).unwrap(),
        hdgp::CONTENT_GRAPH | hdgp::CONTENT_EXECUTION_PLAN
    );
    assert_eq!(
        hdgp::graph_part(&bin).unwrap(),
        g0.to_graph_bytes().unwrap().as_slice()
    );
    assert_eq!(
        g0.to_binary().unwrap(),
        bin,
        "{name}: saving a built plan twice"
    );
    let h1 = Handle::cpu().unwrap();
    let g1 = Graph::from_binary(&h1, &bin).unwrap();
    assert!(g1.has_plan());
    assert_eq!(g1.engine_name().unwrap(), CPU_ENGINE);
    assert_eq!(g1, g0, "{name}: loaded graph equals the built graph");
    assert_same_bits(name, "from_binary plan", &case.run(&g1, &h1), &y0);
    let resaved = g1.to_binary().unwrap();
    assert_eq!(resaved, bin, "{name}: re-saved container");

    // Plan alone.
    let plan = g0.to_compiled_plan_binary().unwrap();
    assert!(!hdgp::is_graph_and_plan_container(&plan));
    assert_eq!(
        hdgp::plan_part(&bin).unwrap(),
        plan.as_slice(),
        "{name}: plan inside the container"
    );
    assert_eq!(
        g1.to_compiled_plan_binary().unwrap(),
        plan,
        "{name}: to_compiled_plan_binary of a graph loaded from a container gives the plan part"
    );
    let env = PlanEnvelope::parse(&plan).unwrap();
    assert_eq!(env.engine_id, engine_id_from_name(CPU_ENGINE));
    assert_eq!(env.workspace_size, 0);
    let h2 = Handle::cpu().unwrap();
    let g2 = Graph::from_compiled_plan_binary(&h2, &plan).unwrap();
    assert_eq!(g2.node_count(), 0, "{name}: a plan-only load has no graph");
    assert_eq!(g2.engine_name().unwrap(), CPU_ENGINE);
    assert_same_bits(
        name,
        "from_compiled_plan_binary plan",
        &case.run(&g2, &h2),
        &y0,
    );
    let plan_resaved = g2.to_compiled_plan_binary().unwrap();
    assert_eq!(plan_resaved, plan, "{name}: re-saved plan");
    // The container also loads as a plan; only its plan part is kept.
    let g2c = Graph::from_compiled_plan_binary(&h2, &bin).unwrap();
    assert_eq!(g2c.to_compiled_plan_binary().unwrap(), plan);
    assert_same_bits(
        name,
        "container loaded as a plan",
        &case.run(&g2c, &h2),
        &y0,
    );

    // Second generation: load the re-saved bytes in yet other handles.
    let h3 = Handle::cpu().unwrap();
    let g3 = Graph::from_binary(&h3, &resaved).unwrap();
    assert_same_bits(
        name,
        "second-generation from_binary",
        &case.run(&g3, &h3),
        &y0,
    );
    assert_eq!(g3.to_binary().unwrap(), bin);
    assert_eq!(g3.to_compiled_plan_binary().unwrap(), plan);
    let h4 = Handle::cpu().unwrap();
    let g4 = Graph::from_compiled_plan_binary(&h4, &plan_resaved).unwrap();
    assert_same_bits(
        name,
        "second-generation plan load",
        &case.run(&g4, &h4),
        &y0,
    );
    assert_eq!(g4.to_compiled_plan_binary().unwrap(), plan);
}

#[test]
fn conv_bias_relu_plan_round_trips_bit_identically() {
    lifecycle(conv_bias_relu());
}

#[test]
fn matmul_plan_round_trips_bit_identically() {
    lifecycle(matmul());
}

#[test]
fn pointwise_chain_plan_round_trips_bit_identically() {
    lifecycle(pointwise_chain());
}

#[test]
fn layernorm_plan_round_trips_bit_identically() {
    lifecycle(layernorm());
}

#[test]
fn a_plan_loaded_in_one_handle_runs_the_other_graph_kinds_side_by_side() {
    // Several plans of different graphs loaded in one handle keep their own outputs.
    let mut cases = all_cases();
    let saved: Vec<(Vec<u8>, Vec<Vec<f32>>)> = cases
        .iter_mut()
        .map(|c| {
            let h = c.built();
            (c.graph.to_binary().unwrap(), c.run(&c.graph, &h))
        })
        .collect();
    let h = Handle::cpu().unwrap();
    let loaded: Vec<Graph> = saved
        .iter()
        .map(|(b, _)| Graph::from_binary(&h, b).unwrap())
        .collect();
    for ((c, g), (_, y)) in cases.iter().zip(&loaded).zip(&saved) {
        assert_same_bits(c.name, "shared handle", &c.run(g, &h), y);
    }
}

/// A container of the same blobs written by another producer: the generated FlatBuffers
/// builder, plan vector created first, no forced alignment.
fn other_producer_container(graph: &[u8], plan: &[u8]) -> Vec<u8> {
    use hipdnn_schema::graph_and_plan::{SerializedGraphAndPlan, SerializedGraphAndPlanArgs};
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let p = fbb.create_vector(plan);
    let g = fbb.create_vector(graph);
    let root = SerializedGraphAndPlan::create(
        &mut fbb,
        &SerializedGraphAndPlanArgs {
            graph_blob: Some(g),
            plan_blob: Some(p),
        },
    );
    fbb.finish(root, Some("HDGP"));
    fbb.finished_data().to_vec()
}

#[test]
fn unchanged_loaded_graph_resaves_the_identical_container_even_from_another_producer() {
    let mut case = conv_bias_relu();
    let h = case.built();
    let y0 = case.run(&case.graph, &h);
    let ours = case.graph.to_binary().unwrap();
    let (graph, plan) = (
        case.graph.to_graph_bytes().unwrap(),
        case.graph.to_compiled_plan_binary().unwrap(),
    );

    let theirs = other_producer_container(&graph, &plan);
    assert_ne!(
        theirs, ours,
        "the other producer's layout must differ from ours"
    );
    // Issue 12: bytes after the container's end are refused (this test accepted 16 zero
    // bytes before); up to 7 zero bytes of builder padding still load.
    let mut padded = ours.clone();
    padded.extend_from_slice(&[0u8; 16]);
    let e = Graph::from_binary(&Handle::cpu().unwrap(), &padded).unwrap_err();
    assert!(
        e.message
            .contains("16 trailing bytes after the container of"),
        "{e}"
    );
    let mut padded = ours.clone();
    padded.extend_from_slice(&[0u8; 4]);
    for (what, bytes) in [
        ("generated builder", &theirs),
        ("ours + 4 padding bytes", &padded),
    ] {
        assert_eq!(hdgp::graph_part(bytes).unwrap(), graph.as_slice(), "{what}");
        assert_eq!(hdgp::plan_part(bytes).unwrap(), plan.as_slice(), "{what}");
        let h1 = Handle::cpu().unwrap();
        let g1 = Graph::from_binary(&h1, bytes).unwrap();
        assert_same_bits("conv_bias_relu", what, &case.run(&g1, &h1), &y0);
        assert_eq!(
            &g1.to_binary().unwrap(),
            bytes,
            "{what}: unchanged graph re-saves as loaded"
        );
        assert_eq!(g1.to_compiled_plan_binary().unwrap(), plan, "{what}");
        // Second generation keeps the other producer's bytes too.
        let g2 = Graph::from_binary(&Handle::cpu().unwrap(), &g1.to_binary().unwrap()).unwrap();
        assert_eq!(&g2.to_binary().unwrap(), bytes, "{what}: second generation");
    }
}

#[test]
fn changed_loaded_graph_writes_a_new_container_with_the_loaded_plan_part() {
    let mut case = conv_bias_relu();
    let h = case.built();
    let y0 = case.run(&case.graph, &h);
    let plan = case.graph.to_compiled_plan_binary().unwrap();
    let theirs = other_producer_container(&case.graph.to_graph_bytes().unwrap(), &plan);

    let h1 = Handle::cpu().unwrap();
    let mut g1 = Graph::from_binary(&h1, &theirs).unwrap();
    let x = g1.tensor_by_uid(1).unwrap();
    g1.set_tensor_name(x, "image");
    let renamed_graph = g1.to_graph_bytes().unwrap();
    let changed = g1.to_binary().unwrap();
    assert_ne!(changed, theirs);
    assert_eq!(
        changed,
        hdgp::write_graph_and_plan(&renamed_graph, Some(&plan)),
        "our writer's layout"
    );
    assert_eq!(
        hdgp::plan_part(&changed).unwrap(),
        plan.as_slice(),
        "plan part is the loaded plan"
    );
    assert_eq!(
        hdgp::graph_part(&changed).unwrap(),
        renamed_graph.as_slice()
    );
    let g2 = Graph::from_binary(&Handle::cpu().unwrap(), &changed).unwrap();
    assert_eq!(
        g2.tensor_attributes(g2.tensor_by_uid(1).unwrap()).name,
        "image"
    );
    assert_same_bits(
        "conv_bias_relu",
        "renamed reload",
        &case.run(&g2, &Handle::cpu().unwrap()),
        &y0,
    );

    // Renaming back makes the graph equal to the loaded one again: the loaded bytes return.
    g1.set_tensor_name(x, "x");
    assert_eq!(g1.to_binary().unwrap(), theirs);
}

#[test]
fn execute_and_save_without_a_plan_are_refused() {
    let case = conv_bias_relu();
    let h = Handle::cpu().unwrap();
    let g = &case.graph;
    assert!(!g.has_plan());
    let e = g.execute(&h, VariantPack::new(), None).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (ErrorCode::InvalidValue, NO_PLAN_MESSAGE)
    );
    let e = g.to_compiled_plan_binary().unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (ErrorCode::InvalidValue, NO_FINALIZED_PLAN_MESSAGE)
    );
    for e in [
        g.workspace_size().unwrap_err(),
        g.engine_name().unwrap_err(),
    ] {
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::InvalidValue, NO_PLAN_MESSAGE)
        );
    }
    // Without a plan, to_binary is the bare graph (once every tensor has a UID).
    let mut g = case.graph.clone();
    g.assign_uids();
    g.fill_from_context();
    let bare = g.to_binary().unwrap();
    assert!(!hdgp::is_graph_and_plan_container(&bare));
    assert_eq!(bare, g.to_graph_bytes().unwrap());
    let mut built = conv_bias_relu();
    built.built();
    assert!(
        built.graph.to_graph_bytes().unwrap() == bare,
        "build assigns the same UIDs and types"
    );
    // ... and it loads as a graph without a plan.
    let g2 = Graph::from_binary(&h, &bare).unwrap();
    assert!(!g2.has_plan());
}

#[test]
fn a_bare_plan_is_refused_by_from_binary() {
    let mut case = conv_bias_relu();
    case.built();
    let plan = case.graph.to_compiled_plan_binary().unwrap();
    let e = Graph::from_binary(&Handle::cpu().unwrap(), &plan).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue, "{e}");
    // Issue 12: plain words first (was "graph bytes failed FlatBuffers verification"), the
    // verifier's text follows.
    assert!(e.message.starts_with(hipdnn::PLAN_ONLY_FILE), "{e}");
    assert!(
        e.message
            .contains("(graph bytes failed FlatBuffers verification"),
        "{e}"
    );
}

#[test]
fn a_graph_without_a_plan_is_refused_by_from_compiled_plan_binary() {
    let mut case = conv_bias_relu();
    case.built();
    let graph = case.graph.to_graph_bytes().unwrap();
    let h = Handle::cpu().unwrap();
    let e = Graph::from_compiled_plan_binary(&h, &hdgp::write_graph_and_plan(&graph, None))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::HipdnnBackendError, "{e}");
    assert!(
        e.message.starts_with(
            "Cannot load the execution plan (HIPDNN_STATUS_BAD_PARAM): container carries no execution plan"
        ),
        "{e}"
    );
    let e = Graph::from_compiled_plan_binary(&h, &graph).unwrap_err();
    assert_eq!(e.code, ErrorCode::HipdnnBackendError, "{e}");
    assert!(
        e.message.starts_with(
            "Cannot load the execution plan (HIPDNN_STATUS_BAD_PARAM): \
             Serialized execution plan FlatBuffer is invalid."
        ),
        "{e}"
    );
}

#[test]
fn every_truncation_of_a_container_or_plan_is_an_error() {
    let mut case = pointwise_chain();
    case.built();
    let bin = case.graph.to_binary().unwrap();
    let plan = case.graph.to_compiled_plan_binary().unwrap();
    let h = Handle::cpu().unwrap();
    for len in 0..bin.len() {
        let cut = &bin[..len];
        assert!(
            Graph::from_binary(&h, cut).is_err(),
            "from_binary accepted {len} of {} bytes",
            bin.len()
        );
        assert!(
            Graph::from_compiled_plan_binary(&h, cut).is_err(),
            "from_compiled_plan_binary accepted {len} of {} container bytes",
            bin.len()
        );
    }
    for len in 0..plan.len() {
        let e = Graph::from_compiled_plan_binary(&h, &plan[..len]).unwrap_err();
        assert_eq!(e.code, ErrorCode::HipdnnBackendError, "{len}: {e}");
    }
}

#[test]
fn a_damaged_cpu_plan_payload_byte_is_a_plugin_error() {
    let mut case = matmul();
    case.built();
    let plan = case.graph.to_compiled_plan_binary().unwrap();
    let bin = case.graph.to_binary().unwrap();
    let env = PlanEnvelope::parse(&plan).unwrap();
    let payload_at = env.plugin_payload.as_ptr() as usize - plan.as_ptr() as usize;
    let payload_len = env.plugin_payload.len();
    // Flip a byte in the payload body (after the 52-byte header): the checksum catches it.
    let mut bad = plan.clone();
    bad[payload_at + 60] ^= 0x5a;
    let h = Handle::cpu().unwrap();
    let e = Graph::from_compiled_plan_binary(&h, &bad).unwrap_err();
    assert_eq!(e.code, ErrorCode::HipdnnBackendError, "{e}");
    assert!(
        e.message
            .starts_with("Cannot load the execution plan (HIPDNN_STATUS_PLUGIN_ERROR): "),
        "{e}"
    );
    assert!(
        e.message.contains("cpu reference plan data is damaged"),
        "{e}"
    );
    // The same damage inside a container refuses the whole load.
    let plan_in_bin = bin
        .windows(plan.len())
        .position(|w| w == plan.as_slice())
        .unwrap();
    let mut bad_bin = bin.clone();
    bad_bin[plan_in_bin + payload_at + 60] ^= 0x5a;
    let e = Graph::from_binary(&h, &bad_bin).unwrap_err();
    assert_eq!(e.code, ErrorCode::HipdnnBackendError, "{e}");
    assert!(e.message.contains("HIPDNN_STATUS_PLUGIN_ERROR"), "{e}");
    assert!(
        e.message.contains("cpu reference plan data is damaged"),
        "{e}"
    );
    // Every single-bit flip in the payload is refused as PLUGIN_ERROR, except in the minor
    // version (bytes 6..8: any minor of major 1 is read), and none panics.
    let mut accepted = Vec::new();
    for i in 0..payload_len {
        let mut b = plan.clone();
        b[payload_at + i] ^= 0x01;
        match Graph::from_compiled_plan_binary(&h, &b) {
            Ok(_) => accepted.push(i),
            Err(e) => assert!(
                e.message.contains("HIPDNN_STATUS_PLUGIN_ERROR"),
                "payload byte {i}: {e}"
            ),
        }
    }
    assert_eq!(accepted, vec![6, 7], "only the minor version may change");
}

#[test]
fn missing_and_short_buffers_are_refused_naming_the_uid() {
    let mut case = conv_bias_relu();
    let h = case.built();
    let g = &case.graph;
    let x = Buffer::from_slice(&case.inputs[0].1);
    let w = Buffer::from_slice(&case.inputs[1].1);
    let b = Buffer::from_slice(&case.inputs[2].1);
    let mut y = Buffer::<f32>::zeros(75);

    let e = g
        .execute(
            &h,
            VariantPack::new().with(1, &x).with(2, &w).with(4, &mut y),
            None,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "the variant pack has no buffer for tensor 'b' (uid 3)"
    );

    let short = Buffer::<f32>::zeros(49);
    let e = g
        .execute(
            &h,
            VariantPack::new()
                .with(1, &short)
                .with(2, &w)
                .with(3, &b)
                .with(4, &mut y),
            None,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message
            .starts_with("buffer for tensor 'x' (uid 1) holds 196 bytes;"),
        "{e}"
    );
    assert!(e.message.ends_with("need 200"), "{e}");

    let mut short_y = Buffer::<f32>::zeros(74);
    let e = g
        .execute(
            &h,
            VariantPack::new()
                .with(1, &x)
                .with(2, &w)
                .with(3, &b)
                .with(4, &mut short_y),
            None,
        )
        .unwrap_err();
    assert!(
        e.message
            .starts_with("buffer for tensor 'y' (uid 4) holds 296 bytes;"),
        "{e}"
    );

    // A UID that is not a tensor of the plan is refused by the backend.
    let extra = Buffer::<f32>::zeros(4);
    let e = g
        .execute(
            &h,
            VariantPack::new()
                .with(1, &x)
                .with(2, &w)
                .with(3, &b)
                .with(4, &mut y)
                .with(99, &extra),
            None,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::HipdnnBackendError, "{e}");
    assert!(e.message.contains("uid 99"), "{e}");

    // Issue 12: a plan loaded without a graph is checked against the graph its CPU engine runs,
    // as a built graph is (it was a backend error before): a missing output.
    let plan = g.to_compiled_plan_binary().unwrap();
    let g2 = Graph::from_compiled_plan_binary(&h, &plan).unwrap();
    let e = g2
        .execute(
            &h,
            VariantPack::new().with(1, &x).with(2, &w).with(3, &b),
            None,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue, "{e}");
    assert_eq!(
        e.message,
        "the variant pack has no buffer for tensor 'y' (uid 4)"
    );
}
