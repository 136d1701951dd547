//! The `hipdnn-plan` binary on files the SDK writes (graph only, HDGP container, plan-only; CPU
//! plans), on the committed ingestor samples (bare and in an envelope), and on damaged copies:
//! exact exit codes, and refusals carrying the loader's own message for the same bytes.

use hipdnn::{
    ConvFpropAttributes, DataType, Graph, Handle, LayernormAttributes, MatmulAttributes,
    NormFwdPhase, PointwiseAttributes, PointwiseMode, ReductionAttributes, ReductionMode,
    TensorAttributes, TensorValue,
};
use hipdnn_backend::{engine_id_from_name, write_envelope};
use hipdnn_engines::gpu::GPU_ENGINE_NAME;
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_schema::graph as wire;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_hipdnn-plan"))
        .args(args)
        .output()
        .expect("the binary runs");
    Run {
        code: status.code().expect("exited"),
        stdout: String::from_utf8(stdout).unwrap(),
        stderr: String::from_utf8(stderr).unwrap(),
    }
}

fn json_of(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engines/tests/samples")
}

/// The SDK's conv example graph (x 1x3x8x8, w 4x3x3x3, y 1x4x8x8), `xw` = x's width.
fn conv_graph(xw: i64) -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([1, 3, 8, xw])
            .packed_nchw(),
    );
    let w = g.tensor(
        TensorAttributes::new("w")
            .uid(2)
            .dims([4, 3, 3, 3])
            .packed_nchw(),
    );
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    g.set_output(y, true).set_uid(y, 3);
    g
}

/// (graph only, container, plan-only) bytes of the conv graph, saved by the SDK on the CPU.
fn sdk_files(xw: i64) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let h = Handle::cpu().unwrap();
    let mut g = conv_graph(xw);
    g.fill_from_context().validate().unwrap();
    let graph_only = g.to_binary().unwrap();
    g.build(&h).unwrap();
    (
        graph_only,
        g.to_binary().unwrap(),
        g.to_compiled_plan_binary().unwrap(),
    )
}

/// An 11-node MLP block: x 1x4x8 → matmul w1 (8x16) + b1 → relu → matmul w2 (16x8) + b2 →
/// layernorm (scale, bias, epsilon 1e-5) → softmax over the last dim (max, sub, exp, sum, div).
fn mlp_graph() -> Graph {
    let mut g = Graph::new();
    g.set_name("mlp")
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let t = |g: &mut Graph, name: &str, uid: i64, dims: [i64; 3]| {
        let strides = [dims[1] * dims[2], dims[2], 1];
        g.tensor(
            TensorAttributes::new(name)
                .uid(uid)
                .dims(dims)
                .strides(strides),
        )
    };
    let x = t(&mut g, "x", 1, [1, 4, 8]);
    let w1 = t(&mut g, "w1", 2, [1, 8, 16]);
    let b1 = t(&mut g, "b1", 3, [1, 1, 16]);
    let w2 = t(&mut g, "w2", 4, [1, 16, 8]);
    let b2 = t(&mut g, "b2", 5, [1, 1, 8]);
    let scale = t(&mut g, "scale", 6, [1, 1, 8]);
    let bias = t(&mut g, "bias", 7, [1, 1, 8]);
    let eps = g.tensor(
        TensorAttributes::scalar(TensorValue::Float32(1e-5))
            .name("eps")
            .uid(8),
    );
    let pw = PointwiseAttributes::with_mode;
    let h = g.matmul(x, w1, MatmulAttributes::new().name("fc1"));
    let h = g.pointwise(h, b1, pw(PointwiseMode::Add).name("fc1_bias"));
    let h = g.pointwise_unary(h, pw(PointwiseMode::ReluFwd).name("relu"));
    let h = g.matmul(h, w2, MatmulAttributes::new().name("fc2"));
    let h = g.pointwise(h, b2, pw(PointwiseMode::Add).name("fc2_bias"));
    let (h, _, _) = g.layernorm(
        h,
        scale,
        bias,
        LayernormAttributes::new()
            .name("ln")
            .epsilon(eps)
            .forward_phase(NormFwdPhase::Inference),
    );
    let red = |mode| ReductionAttributes::new().mode(mode);
    let m = g.reduction(h, [1, 4, 1], red(ReductionMode::MaxOp).name("row_max"));
    let d = g.pointwise(h, m, pw(PointwiseMode::Sub).name("shift"));
    let e = g.pointwise_unary(d, pw(PointwiseMode::Exp).name("exp"));
    let s = g.reduction(e, [1, 4, 1], red(ReductionMode::Add).name("row_sum"));
    let y = g.pointwise(e, s, pw(PointwiseMode::Div).name("softmax"));
    g.set_output(y, true).set_uid(y, 20).set_tensor_name(y, "y");
    g
}

/// (graph only, container) bytes of the MLP graph, built on the CPU.
fn mlp_files() -> (Vec<u8>, Vec<u8>) {
    let h = Handle::cpu().unwrap();
    let mut g = mlp_graph();
    g.fill_from_context().validate().unwrap();
    let graph_only = g.to_binary().unwrap();
    g.build(&h).unwrap();
    (graph_only, g.to_binary().unwrap())
}

/// What the SDK loader says for `bytes` (`None` when it loads them).
fn sdk_from_binary(bytes: &[u8]) -> Option<String> {
    Graph::from_binary(&Handle::cpu().unwrap(), bytes)
        .err()
        .map(|e| e.to_string())
}

fn sdk_from_plan(bytes: &[u8]) -> Option<String> {
    Graph::from_compiled_plan_binary(&Handle::cpu().unwrap(), bytes)
        .err()
        .map(|e| e.to_string())
}

#[test]
fn inspect_shows_a_graph_only_file_tensor_by_tensor_and_node_by_node() {
    let dir = tempfile::tempdir().unwrap();
    let (graph, _, _) = sdk_files(8);
    let f = write(dir.path(), "g.bin", &graph);
    let r = run(&["inspect", &f, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = json_of(&r);
    assert_eq!(d["form"], "graph");
    assert_eq!(d["size_bytes"], graph.len());
    let t = &d["graph"]["tensors"];
    assert_eq!(t.as_array().unwrap().len(), 3);
    assert_eq!(t[0]["uid"], 1);
    assert_eq!(t[0]["name"], "x");
    assert_eq!(t[0]["data_type"], "FLOAT");
    assert_eq!(t[0]["dims"], json!([1, 3, 8, 8]));
    assert_eq!(t[0]["strides"], json!([192, 64, 8, 1]));
    assert_eq!(t[0]["virtual"], false);
    assert_eq!(t[2]["uid"], 3);
    assert_eq!(t[2]["dims"], json!([1, 4, 8, 8]));
    let n = &d["graph"]["nodes"][0];
    assert_eq!(n["op"], "ConvolutionFwdAttributes");
    assert_eq!(n["attributes"]["x_tensor_uid"], 1);
    assert_eq!(n["attributes"]["w_tensor_uid"], 2);
    assert_eq!(n["attributes"]["y_tensor_uid"], 3);
    assert_eq!(n["attributes"]["pre_padding"], json!([1, 1]));
    assert_eq!(n["attributes"]["stride"], json!([1, 1]));
    assert_eq!(d["validation"]["ok"], true);
    assert_eq!(d["validation"]["passed"], json!(["from_binary"]));
    assert!(d.get("envelope").is_none());

    let text = run(&["inspect", &f, "--full"]);
    assert_eq!(text.code, 0);
    assert!(text.stdout.starts_with("form: graph\n"), "{}", text.stdout);
    assert!(
        text.stdout
            .contains("[0] uid=1 name=x data_type=FLOAT dims=[1,3,8,8] strides=[192,64,8,1]"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.ends_with("\nvalidation: ok (from_binary)\n"),
        "{}",
        text.stdout
    );
}

#[test]
fn inspect_shows_a_container_with_its_flags_envelope_graph_and_cpu_payload() {
    let dir = tempfile::tempdir().unwrap();
    let (_, container, plan) = sdk_files(8);
    let f = write(dir.path(), "c.bin", &container);
    let r = run(&["inspect", &f, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = json_of(&r);
    assert_eq!(d["form"], "hdgp-container");
    assert_eq!(d["container"]["content_flags"], 3);
    assert_eq!(
        d["container"]["content"],
        json!(["graph", "execution_plan"])
    );
    assert_eq!(d["container"]["plan_blob_bytes"], plan.len());
    let e = &d["envelope"];
    assert_eq!(e["version"], 2);
    assert_eq!(e["engine_name"], "hipdnn.reference.cpu");
    assert_eq!(e["engine_id"], engine_id_from_name("hipdnn.reference.cpu"));
    assert_eq!(e["workspace_size"], 0);
    assert_eq!(e["tensor_uids"], json!([1, 2, 3]));
    assert_eq!(e["tensor_alignments"].as_array().unwrap().len(), 3);
    let p = &d["payload"];
    assert_eq!(p["kind"], "cpu-reference-plan");
    assert_eq!(p["magic"], "HRCP");
    assert_eq!(p["format_version"], "1.0");
    assert_eq!(p["header_size"], 52);
    assert_eq!(
        p["digests"]["body_sha256_recorded"],
        p["digests"]["body_sha256_actual"]
    );
    // The plan's graph is the saved graph.
    assert_eq!(p["graph"]["tensors"], d["graph"]["tensors"]);
    assert_eq!(d["validation"]["ok"], true);
    let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "form",
            "size_bytes",
            "container",
            "envelope",
            "graph",
            "payload",
            "validation"
        ]
    );
}

#[test]
fn inspect_and_verify_accept_a_plan_only_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, plan) = sdk_files(8);
    let f = write(dir.path(), "p.bin", &plan);
    let text = run(&["inspect", &f]).stdout;
    assert!(
        text.starts_with(
            "form: plan, 824 bytes; plan-only SerializedExecutionPlan envelope\n\
             graph (unnamed): io FLOAT, compute FLOAT, intermediate UNSET; 3 tensors, 1 nodes\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\n  [0] conv_fprop \"ConvFprop_0\": x(1), w(2) -> ConvFprop_0::Y(3)\n"),
        "{text}"
    );
    let d = json_of(&run(&["inspect", &f, "--json"]));
    assert_eq!(d["form"], "plan");
    assert_eq!(d["envelope"]["version"], 2);
    assert_eq!(d["envelope"]["engine_name"], "hipdnn.reference.cpu");
    assert_eq!(d["payload"]["kind"], "cpu-reference-plan");
    assert_eq!(
        d["payload"]["graph"]["nodes"][0]["op"],
        "ConvolutionFwdAttributes"
    );
    let r = run(&["verify", &f]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "ok: plan (from_compiled_plan_binary)\n");
    assert_eq!(r.stderr, "");
}

#[test]
fn verify_accepts_every_form_the_sdk_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (graph, container, plan) = sdk_files(8);
    for (name, bytes, form, check) in [
        ("g", &graph, "graph", "from_binary"),
        ("c", &container, "hdgp-container", "from_binary"),
        ("p", &plan, "plan", "from_compiled_plan_binary"),
    ] {
        let f = write(dir.path(), name, bytes);
        let r = run(&["verify", &f]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert_eq!(r.stdout, format!("ok: {form} ({check})\n"));
        let j = json_of(&run(&["verify", &f, "--json"]));
        assert_eq!(j["ok"], true);
        assert_eq!(j["form"], form);
        assert_eq!(j["failures"], json!([]));
    }
}

/// Damaged copies of `bytes`: truncated to half, one byte flipped at `flip`, 16 junk bytes
/// appended.
fn damaged(bytes: &[u8], flip: usize) -> Vec<(&'static str, Vec<u8>)> {
    let mut flipped = bytes.to_vec();
    flipped[flip] ^= 0x5A;
    let mut junk = bytes.to_vec();
    junk.extend_from_slice(&[0xEE; 16]);
    vec![
        ("truncated", bytes[..bytes.len() / 2].to_vec()),
        ("flipped", flipped),
        ("junk", junk),
    ]
}

/// `verify` on `bytes` agrees with the SDK loader `sdk` (named `check`): exit 0 when it loads
/// them, else exit 1 with `FAILED <check>: <the SDK's message>` on stderr. Returns whether the
/// SDK refused.
fn verify_agrees(dir: &Path, label: &str, bytes: &[u8], check: &str, sdk: Option<String>) -> bool {
    let f = write(dir, label, bytes);
    let r = run(&["verify", &f]);
    match &sdk {
        None => assert_eq!(
            r.code, 0,
            "{label}: the SDK loads it, the tool says {}",
            r.stderr
        ),
        Some(m) => {
            assert_eq!(
                r.code, 1,
                "{label}: the SDK says {m}; the tool: {}",
                r.stdout
            );
            // Loader messages may span lines (FlatBuffers verifier traces): kept verbatim.
            let line = format!("FAILED {check}: {m}\n");
            assert!(
                r.stderr.starts_with(&line) || r.stderr.contains(&format!("\n{line}")),
                "{label}: expected line {line:?} in {:?}",
                r.stderr
            );
        }
    }
    sdk.is_some()
}

#[test]
fn verify_refuses_damaged_sdk_files_with_the_loaders_messages() {
    let dir = tempfile::tempdir().unwrap();
    let (graph, container, plan) = sdk_files(8);
    let mut refused = Vec::new();
    for (name, bytes, flip) in [
        ("graph", &graph, 0),
        ("container", &container, container.len() - 40),
        ("plan", &plan, plan.len() - 40),
    ] {
        for (how, b) in damaged(bytes, flip) {
            let label = format!("{name}-{how}");
            let (check, sdk) = if name == "plan" {
                ("from_compiled_plan_binary", sdk_from_plan(&b))
            } else {
                ("from_binary", sdk_from_binary(&b))
            };
            if verify_agrees(dir.path(), &label, &b, check, sdk) {
                refused.push(label);
            }
        }
    }
    // Truncation and these flips are damage to every loader; trailing junk is whatever the
    // loaders decide (verify_agrees pinned the tool to the SDK either way).
    for must in [
        "graph-truncated",
        "graph-flipped",
        "container-truncated",
        "container-flipped",
        "plan-truncated",
        "plan-flipped",
    ] {
        assert!(refused.iter().any(|r| r == must), "{must} was accepted");
    }
    // The flipped plan byte lies in the CPU plan body: the engine's own checksum text.
    let mut b = plan.clone();
    b[plan.len() - 40] ^= 0x5A;
    let m = sdk_from_plan(&b).unwrap();
    assert!(m.contains("cpu reference plan data is damaged: "), "{m}");
}

#[test]
fn inspect_shows_a_wire_valid_graph_the_sdk_refuses_and_names_the_failure() {
    // A ragged-offset UID that names no tensor: wire-valid, refused by the SDK loader.
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let mut tensors = Vec::new();
    for (uid, name, ragged) in [(1, "x", Some(99)), (2, "y", None)] {
        let name = fbb.create_string(name);
        let dims = fbb.create_vector(&[4i64]);
        let strides = fbb.create_vector(&[1i64]);
        tensors.push(wire::TensorAttributes::create(
            &mut fbb,
            &wire::TensorAttributesArgs {
                uid,
                name: Some(name),
                data_type: wire::DataType::FLOAT,
                dims: Some(dims),
                strides: Some(strides),
                ragged_offset_tensor_uid: ragged,
                ..Default::default()
            },
        ));
    }
    let attrs = wire::PointwiseAttributes::create(
        &mut fbb,
        &wire::PointwiseAttributesArgs {
            operation: wire::PointwiseMode::RELU_FWD,
            in_0_tensor_uid: 1,
            out_0_tensor_uid: 2,
            ..Default::default()
        },
    );
    let node = wire::Node::create(
        &mut fbb,
        &wire::NodeArgs {
            name: None,
            compute_data_type: wire::DataType::FLOAT,
            attributes_type: wire::NodeAttributes::PointwiseAttributes,
            attributes: Some(attrs.as_union_value()),
        },
    );
    let tensors = fbb.create_vector(&tensors);
    let nodes = fbb.create_vector(&[node]);
    let root = wire::Graph::create(
        &mut fbb,
        &wire::GraphArgs {
            tensors: Some(tensors),
            nodes: Some(nodes),
            ..Default::default()
        },
    );
    fbb.finish(root, None);
    let bytes = fbb.finished_data().to_vec();
    let sdk = sdk_from_binary(&bytes).expect("the SDK refuses it");
    assert!(sdk.contains("references UID 99 which no tensor"), "{sdk}");

    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "ragged.bin", &bytes);
    let r = run(&["inspect", &f, "--json"]);
    assert_eq!(r.code, 1);
    let d = json_of(&r);
    assert_eq!(d["form"], "graph");
    assert_eq!(d["graph"]["tensors"][0]["ragged_offset_tensor_uid"], 99);
    assert_eq!(d["graph"]["nodes"][0]["op"], "PointwiseAttributes");
    assert_eq!(
        d["graph"]["nodes"][0]["attributes"]["operation"],
        "RELU_FWD"
    );
    assert_eq!(d["validation"]["ok"], false);
    assert_eq!(
        d["validation"]["failures"],
        json!([{ "check": "from_binary", "message": sdk }])
    );
    // The summary falls back to the wire fields and says why.
    let summary = run(&["inspect", &f]);
    assert_eq!(summary.code, 1);
    assert!(
        summary.stdout.contains(&format!(
            "\nnodes:\n  (inputs and outputs not resolved: the SDK cannot read this graph: {sdk})\n  \
             [0] PointwiseAttributes RELU_FWD \"\": in_0_tensor_uid=1 out_0_tensor_uid=2\n"
        )),
        "{}",
        summary.stdout
    );
    assert!(
        summary
            .stdout
            .contains("\n  1    x     [4]   [1]      FLOAT  non-virtual\n"),
        "{}",
        summary.stdout
    );
    let text = run(&["inspect", &f, "--full"]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout.contains("ragged_offset_tensor_uid=99"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .ends_with(&format!("\nvalidation: FAILED\n  from_binary: {sdk}\n")),
        "{}",
        text.stdout
    );
}

#[test]
fn inspect_shows_the_committed_ingestor_samples() {
    let f = samples().join("pointwise_v1.hkip");
    let r = run(&["inspect", f.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let d = json_of(&r);
    assert_eq!(d["form"], "ingestor-payload");
    let p = &d["payload"];
    assert_eq!(p["kind"], "ingestor-plan");
    assert_eq!(p["format_version"], "1.0");
    assert_eq!(p["launch_contract"], "hipkernel.pointwise.dispatch.v1");
    assert_eq!(p["workspace_bytes"], 1024);
    assert_eq!(p["launch_values"]["block_size"], 256);
    assert_eq!(p["launch_values"]["input_a.uid"], 11);
    assert_eq!(p["kernel"]["kpack_target"], "gfx90a");
    assert_eq!(p["kernel"]["name"], "pointwise_add");
    assert_eq!(p["kernel"]["source_kind"], "KPACK");
    let decoded = decode_payload(&std::fs::read(&f).unwrap()).unwrap();
    assert_eq!(p["kernel"]["code_object_bytes"], decoded.code_object.len());
    assert_eq!(p["kernel"]["code_object_sha256"], decoded.sha256);
    assert_eq!(
        p["kernel"]["signature"].as_array().unwrap().len(),
        decoded.signature.len()
    );
    assert_eq!(
        d["validation"]["not_checked"],
        json!(["ingestor code object load on a device (hipModuleLoadData)"])
    );
}

#[test]
fn verify_runs_the_ingestor_restore_checks_on_the_samples() {
    let ok = samples().join("conv_fwd_v1_launchable.hkip");
    let r = run(&["verify", ok.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "ok: ingestor-payload (ingestor restore)\n\
         not checked (needs a device): ingestor code object load on a device (hipModuleLoadData)\n"
    );
    // conv_fwd_v1.hkip decodes but its launch values do not fit the contract (r > h).
    let bad = samples().join("conv_fwd_v1.hkip");
    let r = run(&["verify", bad.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.starts_with(
            "FAILED ingestor restore: NotApplicable: ingestor plan is valid but cannot be saved or loaded here: launch values 'r' and 's'"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn verify_refuses_damaged_ingestor_samples_with_the_decoders_messages() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(samples().join("pointwise_v1.hkip")).unwrap();
    for (how, b) in damaged(&bytes, bytes.len() - 8) {
        let want = decode_payload(&b).unwrap_err().to_string();
        let f = write(dir.path(), how, &b);
        let r = run(&["verify", &f]);
        assert_eq!(r.code, 1, "{how}");
        assert_eq!(
            r.stderr,
            format!("FAILED ingestor restore: {want}\n"),
            "{how}"
        );
        assert!(want.contains("ingestor plan data is damaged: "), "{want}");
        // inspect still shows the header and names the same failure.
        let d = json_of(&run(&["inspect", &f, "--json"]));
        assert_eq!(d["payload"]["marker"], "HKIP");
        assert_eq!(d["validation"]["failures"][0]["message"], want);
    }
}

#[test]
fn verify_restores_an_ingestor_plan_in_an_envelope_on_a_stand_in_device() {
    let dir = tempfile::tempdir().unwrap();
    let payload = std::fs::read(samples().join("conv_fwd_v1_launchable.hkip")).unwrap();
    let id = engine_id_from_name(GPU_ENGINE_NAME);
    let env = write_envelope(id, 0, &[21, 22, 23], &[0, 0, 0], false, &payload);
    let f = write(dir.path(), "ingestor.plan", &env);
    let text = run(&["inspect", &f]).stdout;
    assert_eq!(
        text,
        "form: plan, 1456 bytes; plan-only SerializedExecutionPlan envelope\n\
         plan: engine hipkernel.ingestor.gpu (id -1884736383226708858), envelope v2, workspace 0 \
         bytes, knobs not saved (the kernel below is what they chose), payload 1328 bytes\n\
         payload: ingestor-plan 1.0, contract hipkernel.conv_fwd.dispatch.v1, workspace 0 bytes, \
         11 launch values\n\
         kernel: conv_fwd_nchw for gfx90a (KPACK), code object 58 bytes, sha256 \
         a3352828086cd02efcc1d095fd2e4f54d2afc50fa0b45a982581b1a0b863225f\n\
         validation: ok (from_compiled_plan_binary)\n  \
         not checked (needs a device): ingestor code object load on a device (hipModuleLoadData)\n"
    );
    let d = json_of(&run(&["inspect", &f, "--json"]));
    assert_eq!(d["form"], "plan");
    assert_eq!(d["envelope"]["engine_name"], GPU_ENGINE_NAME);
    assert_eq!(d["payload"]["kernel"]["name"], "conv_fwd_nchw");
    assert_eq!(d["validation"]["ok"], true, "{d}");
    // The CPU-only SDK handle cannot route it; the tool's handle has the ingestor engine.
    assert!(sdk_from_plan(&env).unwrap().contains("Invalid engine ID"));

    let mut payload = payload;
    let n = payload.len();
    payload[n - 8] ^= 0x5A;
    let want = decode_payload(&payload).unwrap_err().message;
    let env = write_envelope(id, 0, &[21, 22, 23], &[0, 0, 0], false, &payload);
    let f = write(dir.path(), "ingestor-flipped.plan", &env);
    let r = run(&["verify", &f]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.starts_with("FAILED from_compiled_plan_binary: "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(&want), "{} lacks {want}", r.stderr);
}

#[test]
fn diff_names_the_first_differing_field() {
    let dir = tempfile::tempdir().unwrap();
    let (g8, c8, p8) = sdk_files(8);
    let (g16, _, _) = sdk_files(16);
    let a = write(dir.path(), "g8", &g8);
    let b = write(dir.path(), "g16", &g16);
    let c = write(dir.path(), "c8", &c8);
    let p = write(dir.path(), "p8", &p8);

    let same = run(&["diff", &c, &c]);
    assert_eq!((same.code, same.stdout.as_str()), (0, "equal\n"));

    let r = run(&["diff", &a, &b]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stdout,
        "tensor changed: uid 1 \"x\": dims [1,3,8,8] vs [1,3,8,16]; \
         strides [192,64,8,1] vs [384,128,16,1]\n\
         tensor changed: uid 3 \"ConvFprop_0::Y\": dims [1,4,8,8] vs [1,4,8,16]; \
         strides [256,64,8,1] vs [512,128,16,1]\n\
         differ at graph.tensors[0].dims[3]: 8 vs 16\n"
    );

    let r = run(&["diff", &c, &p, "--json"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        json_of(&r),
        json!({ "equal": false, "graph": [], "path": "form", "a": "hdgp-container", "b": "plan" })
    );

    let s = samples();
    let r = run(&[
        "diff",
        s.join("conv_fwd_v1.hkip").to_str().unwrap(),
        s.join("conv_fwd_v1_launchable.hkip").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stdout, "differ at payload.launch_values.h: 33 vs 40\n");

    // A CPU plan against an ingestor plan: the graph and the engine are named first.
    let payload = std::fs::read(s.join("conv_fwd_v1_launchable.hkip")).unwrap();
    let env = write_envelope(
        engine_id_from_name(GPU_ENGINE_NAME),
        0,
        &[21, 22, 23],
        &[0, 0, 0],
        false,
        &payload,
    );
    let q = write(dir.path(), "ingestor.plan", &env);
    let r = run(&["diff", &p, &q]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stdout,
        "graph: present vs none\n\
         plan engine: hipdnn.reference.cpu vs hipkernel.ingestor.gpu\n\
         differ at envelope.engine_id: 7488299829507879281 vs -1884736383226708858\n"
    );
}

#[test]
fn unreadable_files_and_bad_arguments_exit_2() {
    let r = run(&["inspect", "/nonexistent/hipdnn-plan-file"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .starts_with("hipdnn-plan: cannot read /nonexistent/hipdnn-plan-file: ")
    );
    assert_eq!(run(&["verify"]).code, 2);
    assert_eq!(run(&["frobnicate", "x"]).code, 2);
}

#[test]
fn verify_as_forces_the_form() {
    let dir = tempfile::tempdir().unwrap();
    let (graph, _, _) = sdk_files(8);
    let f = write(dir.path(), "g.bin", &graph);
    let r = run(&["verify", &f, "--as", "plan"]);
    assert_eq!(r.code, 1);
    let want = sdk_from_plan(&graph).unwrap();
    assert_eq!(
        r.stderr,
        format!("FAILED from_compiled_plan_binary: {want}\n")
    );
}

/// An envelope of `version` around the CPU payload of `plan` (no alignments below v2).
fn envelope_of_version(plan: &[u8], version: u32) -> Vec<u8> {
    use hipdnn_schema::execution_plan::{SerializedExecutionPlan, SerializedExecutionPlanArgs};
    let env = hipdnn_backend::PlanEnvelope::parse(plan).unwrap();
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let payload = fbb.create_vector(env.plugin_payload);
    let uids = fbb.create_vector(&env.tensor_uids);
    let aligns =
        (version >= 2).then(|| fbb.create_vector(env.tensor_alignments.as_deref().unwrap()));
    let root = SerializedExecutionPlan::create(
        &mut fbb,
        &SerializedExecutionPlanArgs {
            version,
            engine_id: env.engine_id,
            workspace_size: env.workspace_size,
            tensor_uids: Some(uids),
            plugin_payload: Some(payload),
            is_override_shape_enabled: false,
            tensor_alignments: aligns,
        },
    );
    fbb.finish_minimal(root);
    fbb.finished_data().to_vec()
}

#[test]
fn inspect_and_verify_read_a_version_1_envelope_and_show_an_unsupported_version() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, plan) = sdk_files(8);
    let v1 = envelope_of_version(&plan, 1);
    assert_eq!(sdk_from_plan(&v1), None, "the SDK reads version 1");
    let f = write(dir.path(), "v1.plan", &v1);
    let r = run(&["inspect", &f, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let d = json_of(&r);
    assert_eq!(d["form"], "plan");
    assert_eq!(d["envelope"]["version"], 1);
    assert_eq!(d["envelope"]["tensor_alignments"], Value::Null);
    assert_eq!(d["envelope"]["tensor_uids"], json!([1, 2, 3]));
    assert_eq!(run(&["verify", &f]).code, 0);

    // Version 3: wire-valid, shown, and refused with the loader's NOT_SUPPORTED text.
    let v3 = envelope_of_version(&plan, 3);
    let want = sdk_from_plan(&v3).expect("the SDK refuses version 3");
    assert!(
        want.contains("Unsupported serialized execution plan version: 3"),
        "{want}"
    );
    let f = write(dir.path(), "v3.plan", &v3);
    let r = run(&["inspect", &f, "--json"]);
    assert_eq!(r.code, 1);
    let d = json_of(&r);
    assert_eq!(d["envelope"]["version"], 3);
    assert_eq!(d["payload"]["kind"], "cpu-reference-plan");
    assert_eq!(
        d["validation"]["failures"],
        json!([{ "check": "from_compiled_plan_binary", "message": want }])
    );
    let r = run(&["verify", &f]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!("FAILED from_compiled_plan_binary: {want}\n")
    );
}

#[test]
fn a_graph_only_container_shows_content_flag_graph_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    let (graph, _, _) = sdk_files(8);
    let c = hipdnn_backend::write_graph_and_plan(&graph, None);
    assert_eq!(sdk_from_binary(&c), None);
    let f = write(dir.path(), "gc.bin", &c);
    let r = run(&["inspect", &f, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let d = json_of(&r);
    assert_eq!(d["form"], "hdgp-container");
    assert_eq!(d["container"]["content_flags"], 1);
    assert_eq!(d["container"]["content"], json!(["graph"]));
    assert_eq!(d["container"]["plan_blob_bytes"], 0);
    assert!(d.get("envelope").is_none());
    assert_eq!(d["graph"]["tensors"][1]["name"], "w");
    // Read as a plan (--as), the SDK's plan loader refuses it: the container has no plan.
    let r = run(&["verify", &f, "--as", "plan"]);
    assert_eq!(r.code, 1);
    let want = sdk_from_plan(&c).unwrap();
    assert!(
        want.contains("container carries no execution plan"),
        "{want}"
    );
    assert_eq!(
        r.stderr,
        format!("FAILED from_compiled_plan_binary: {want}\n")
    );
}

#[test]
fn a_file_of_no_known_form_names_both_verifiers_and_both_loaders() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = [0xFFu8; 24];
    let f = write(dir.path(), "junk.bin", &bytes);
    let r = run(&["inspect", &f, "--json"]);
    assert_eq!(r.code, 1);
    let d = json_of(&r);
    assert_eq!(d["form"], "unknown");
    assert!(d["unreadable"]["graph_verifier"].is_string());
    assert!(d["unreadable"]["execution_plan_verifier"].is_string());
    let (fb, fp) = (
        sdk_from_binary(&bytes).unwrap(),
        sdk_from_plan(&bytes).unwrap(),
    );
    let r = run(&["verify", &f]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "hipdnn-plan: {f} is none of the formats hipdnn-plan reads (HDGP container, Graph \
             FlatBuffer, plan envelope, HKIP or HRCP payload, graph JSON, legacy graph JSON; it \
             also names kpack archives and code objects); the loaders say:\n\
             FAILED from_binary: {fb}\nFAILED from_compiled_plan_binary: {fp}\n"
        )
    );
    let r = run(&["inspect", &f]);
    assert_eq!(r.code, 1);
    let unaligned = "Type `i32` at position 4294967295 is unaligned.";
    assert!(
        r.stdout.starts_with(&format!(
            "form: unknown, 24 bytes; none of the formats hipdnn-plan reads (HDGP container, \
             Graph FlatBuffer, plan envelope, HKIP or HRCP payload, graph JSON, legacy graph \
             JSON; it also names kpack archives and code objects)\n  \
             as a Graph FlatBuffer: {unaligned}\n  \
             as a plan envelope: {unaligned}\n\
             validation: FAILED\n  from_binary: {fb}\n"
        )),
        "{}",
        r.stdout
    );
}

#[test]
fn a_container_whose_graph_and_plan_disagree_is_shown_and_refused_by_the_loaders_cross_check() {
    let dir = tempfile::tempdir().unwrap();
    let (g8, _, _) = sdk_files(8);
    let (_, _, p16) = sdk_files(16);
    // Wire-valid: the graph of x 1x3x8x8 with the plan built for x 1x3x8x16.
    let c = hipdnn_backend::write_graph_and_plan(&g8, Some(&p16));
    let want = sdk_from_binary(&c).expect("the SDK's container cross-check refuses it");
    let f = write(dir.path(), "mixed.bin", &c);
    let r = run(&["inspect", &f, "--json"]);
    assert_eq!(r.code, 1);
    let d = json_of(&r);
    assert_eq!(d["graph"]["tensors"][0]["dims"], json!([1, 3, 8, 8]));
    assert_eq!(
        d["payload"]["graph"]["tensors"][0]["dims"],
        json!([1, 3, 8, 16])
    );
    assert_eq!(
        d["validation"]["failures"],
        json!([{ "check": "from_binary", "message": want }])
    );
    let r = run(&["verify", &f]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr, format!("FAILED from_binary: {want}\n"));
    // The summary names where the CPU plan's graph departs from the container's.
    let r = run(&["inspect", &f]);
    assert!(
        r.stdout.contains(
            "\npayload: cpu-reference-plan 1.0 (648 body bytes, body SHA-256 matches), carries a \
             graph that differs from the container's at graph.tensors[0].dims[3]: 8 vs 16\n"
        ),
        "{}",
        r.stdout
    );
}

#[test]
fn inspect_summarizes_an_11_node_graph_in_a_few_lines_and_full_keeps_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let (_, container) = mlp_files();
    let f = write(dir.path(), "mlp.bin", &container);
    let r = run(&["inspect", &f]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 38, "{}", r.stdout);
    for (at, line) in [
        (
            0,
            "form: hdgp-container, 6536 bytes; HDGP container: graph 3032 bytes, execution plan \
             3464 bytes",
        ),
        (
            1,
            "graph \"mlp\": io FLOAT, compute FLOAT, intermediate FLOAT; 19 tensors, 11 nodes",
        ),
        (2, "tensors:"),
        (
            3,
            "  uid  name             dims      strides     dtype  kind",
        ),
        (
            4,
            "  1    x                [1,4,8]   [32,8,1]    FLOAT  input",
        ),
        (
            11,
            "  8    eps              [1]       [1]         FLOAT  value",
        ),
        (
            12,
            "  0    fc1::C           [1,4,16]  [64,16,1]   FLOAT  virtual",
        ),
        (
            22,
            "  20   y                [1,4,8]   [32,8,1]    FLOAT  output",
        ),
        (23, "nodes:"),
        (24, "  [0] matmul \"fc1\": x(1), w1(2) -> fc1::C(0)"),
        (
            29,
            "  [5] layernorm \"ln\": fc2_bias::OUT_0(12), scale(6), bias(7), eps(8) -> ln::Y(13)",
        ),
        (
            30,
            "  [6] reduction MAX_OP \"row_max\": ln::Y(13) -> row_max::Y(14)",
        ),
        (
            34,
            "  [10] pointwise DIV \"softmax\": exp::OUT_0(16), row_sum::Y(17) -> y(20)",
        ),
        (
            35,
            "plan: engine hipdnn.reference.cpu (id 7488299829507879281), envelope v2, workspace 0 \
             bytes, knobs none (the CPU reference engine has none), payload 3084 bytes",
        ),
        (
            36,
            "payload: cpu-reference-plan 1.0 (3032 body bytes, body SHA-256 matches), carries the \
             graph above",
        ),
    ] {
        assert_eq!(lines[at], line, "line {at}:\n{}", r.stdout);
    }
    assert!(r.stdout.ends_with("\nvalidation: ok (from_binary)\n"));

    let full = run(&["inspect", &f, "--full"]);
    assert_eq!(full.code, 0);
    // The whole description, as `inspect` printed it by default before the summary (the 411
    // lines of issue 32).
    assert_eq!(full.stdout.lines().count(), 411, "{}", full.stdout);
    assert!(full.stdout.starts_with("form: hdgp-container\n"));
    assert!(
        full.stdout.ends_with("\nvalidation: ok (from_binary)\n"),
        "{}",
        full.stdout
    );
}

#[test]
fn diff_of_two_unrelated_graphs_names_tensors_nodes_and_types_first() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mlp) = mlp_files();
    let (_, conv, _) = sdk_files(8);
    let a = write(dir.path(), "mlp.bin", &mlp);
    let b = write(dir.path(), "conv.bin", &conv);
    let r = run(&["diff", &a, &b]);
    assert_eq!(r.code, 1);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 33, "{}", r.stdout);
    for (at, line) in [
        (0, "graph name mlp vs -"),
        (1, "graph intermediate_data_type FLOAT vs UNSET"),
        (
            2,
            "tensor removed: uid 4 \"w2\" dims [1,16,8] strides [128,8,1] FLOAT",
        ),
        (
            7,
            "tensor removed: uid 0 \"fc1::C\" dims [1,4,16] strides [64,16,1] FLOAT virtual",
        ),
        (
            18,
            "tensor changed: uid 1 \"x\": dims [1,4,8] vs [1,3,8,8]; strides [32,8,1] vs \
             [192,64,8,1]",
        ),
        (
            19,
            "tensor changed: uid 2 \"w1\": name w1 vs w; dims [1,8,16] vs [4,3,3,3]; strides \
             [128,16,1] vs [27,9,3,1]",
        ),
        (
            21,
            "node changed: [0] MatmulAttributes \"fc1\" vs [0] ConvolutionFwdAttributes \
             \"ConvFprop_0\"",
        ),
        (22, "node removed: [1] PointwiseAttributes \"fc1_bias\""),
        (31, "node removed: [10] PointwiseAttributes \"softmax\""),
        (32, "differ at container.graph_blob_bytes: 3032 vs 648"),
    ] {
        assert_eq!(lines[at], line, "line {at}:\n{}", r.stdout);
    }
    // The same lines under "graph" in --json, before the first differing field.
    let j = json_of(&run(&["diff", &a, &b, "--json"]));
    assert_eq!(j["equal"], false);
    assert_eq!(j["graph"].as_array().unwrap().len(), 32);
    assert_eq!(j["path"], "container.graph_blob_bytes");
}

#[test]
fn inspect_and_verify_read_graph_json_in_both_formats_as_a_graph() {
    let dir = tempfile::tempdir().unwrap();
    let (graph, _) = mlp_files();
    let mut g = mlp_graph();
    g.fill_from_context().validate().unwrap();
    let upstream = write(dir.path(), "mlp.json", g.to_json().unwrap().as_bytes());
    let pretty = write(
        dir.path(),
        "mlp-pretty.json",
        g.to_json_pretty().unwrap().as_bytes(),
    );
    let legacy = write(
        dir.path(),
        "mlp-legacy.json",
        g.to_flatbuffer_json().unwrap().as_bytes(),
    );
    let bin = write(dir.path(), "mlp.bin", &graph);
    let bin_doc = json_of(&run(&["inspect", &bin, "--json"]));
    for (f, form, check) in [
        (&upstream, "graph-json", "from_json"),
        (&pretty, "graph-json", "from_json"),
        (&legacy, "flatbuffer-json", "from_flatbuffer_json"),
    ] {
        let r = run(&["verify", f]);
        assert_eq!(
            (r.code, r.stdout.clone()),
            (0, format!("ok: {form} ({check})\n")),
            "{}",
            r.stderr
        );
        let d = json_of(&run(&["inspect", f, "--json"]));
        assert_eq!(d["form"], form);
        assert_eq!(d["graph"], bin_doc["graph"], "{f}");
        let text = run(&["inspect", f]);
        assert_eq!(text.code, 0);
        let first = text.stdout.lines().next().unwrap();
        let size = std::fs::metadata(f).unwrap().len();
        let what = if form == "graph-json" {
            "graph JSON in upstream's format (Graph::from_json)"
        } else {
            "graph JSON in the legacy format (Graph::from_flatbuffer_json)"
        };
        assert_eq!(first, format!("form: {form}, {size} bytes; {what}"));
        assert!(
            text.stdout
                .contains("\n  [0] matmul \"fc1\": x(1), w1(2) -> fc1::C(0)\n"),
            "{}",
            text.stdout
        );
        assert!(
            text.stdout
                .ends_with(&format!("\nvalidation: ok ({check})\n")),
            "{}",
            text.stdout
        );
    }
    // A JSON file the SDK's reader refuses: named as graph JSON, with the reader's message.
    let bad = write(dir.path(), "bad.json", b"{\"tensors\": 1}");
    let want = Graph::from_json("{\"tensors\": 1}")
        .unwrap_err()
        .to_string();
    let r = run(&["verify", &bad]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr, format!("FAILED from_json: {want}\n"));
    let r = run(&["inspect", &bad]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stdout,
        format!(
            "form: graph-json, 14 bytes; graph JSON in upstream's format (Graph::from_json)\n\
             graph: unreadable: {want}\n\
             validation: FAILED\n  from_json: {want}\n"
        )
    );
}

#[test]
fn a_kpack_archive_or_a_code_object_is_named_with_the_command_that_takes_it() {
    let kpack = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../engines/kernels/packed/gfx90a/hipdnn_kernels-gfx90a.kpack");
    let kpack = kpack.to_str().unwrap();
    let want = format!(
        "hipdnn-plan: {kpack} is a kpack kernel archive (magic \"KPAK\"), not a saved graph or \
         plan: the GPU engine loads it from its kernel directory (HIPDNN_KERNEL_DIR, \
         docs/install.md) and `cargo run -p xtask -- pack-kernels` writes it; hipdnn-plan reads \
         what Graph::to_binary, Graph::to_compiled_plan_binary and Graph::to_json write\n"
    );
    for cmd in ["inspect", "verify"] {
        let r = run(&[cmd, kpack]);
        assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{cmd}");
        assert_eq!(r.stderr, want, "{cmd}");
    }
    let r = run(&["diff", kpack, kpack]);
    assert_eq!((r.code, r.stderr.as_str()), (2, want.as_str()));

    let dir = tempfile::tempdir().unwrap();
    let elf = write(
        dir.path(),
        "k.hsaco",
        b"\x7fELF\x02\x01\x01\x40rest-of-a-code-object",
    );
    let r = run(&["inspect", &elf]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        format!(
            "hipdnn-plan: {elf} is a GPU code object (ELF or clang offload bundle), not a saved \
             graph or plan: kpack archives carry code objects (`cargo run -p xtask -- \
             pack-kernels`); hipdnn-plan reads what Graph::to_binary, \
             Graph::to_compiled_plan_binary and Graph::to_json write\n"
        )
    );
}

#[test]
fn json_prints_the_graph_of_a_saved_file_compact_or_pretty() {
    let dir = tempfile::tempdir().unwrap();
    let (graph, container, _) = sdk_files(8);
    let mut g = conv_graph(8);
    g.fill_from_context().validate().unwrap();
    for bytes in [&graph, &container] {
        let f = write(dir.path(), "g.bin", bytes);
        let r = run(&["json", &f]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.stdout, format!("{}\n", g.to_json().unwrap()));
        let r = run(&["json", &f, "--pretty"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.stdout, format!("{}\n", g.to_json_pretty().unwrap()));
    }
    let pretty = g.to_json_pretty().unwrap();
    assert!(
        pretty.starts_with(
            "{\n    \"compute_data_type\": \"float\",\n    \"intermediate_data_type\": \"unset\",\n    \
             \"io_data_type\": \"float\",\n    \"is_override_shape_enabled\": false,\n    \
             \"name\": \"\",\n    \"nodes\": [\n        {\n            \"compute_data_type\": \"float\",\n"
        ),
        "{pretty}"
    );
    assert!(
        pretty.contains(
            "\"dilation\": [\n                    1,\n                    1\n                ],\n"
        ),
        "{pretty}"
    );
    assert!(pretty.ends_with("\n    ]\n}"), "{pretty}");
    assert_eq!(
        Graph::from_json(&pretty).unwrap().to_json().unwrap(),
        g.to_json().unwrap()
    );
    let samples = samples();
    let hkip = samples.join("pointwise_v1.hkip");
    let r = run(&["json", hkip.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "hipdnn-plan: no JSON for {}: a file of form ingestor-payload carries no graph\n",
            hkip.display()
        )
    );
}
