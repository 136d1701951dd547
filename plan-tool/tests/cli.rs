//! The `hipdnn-plan` binary on files the SDK writes (graph only, HDGP container, plan-only; CPU
//! plans), on the committed ingestor samples (bare and in an envelope), and on damaged copies:
//! exact exit codes, and refusals carrying the loader's own message for the same bytes.

use hipdnn::{ConvFpropAttributes, DataType, Graph, Handle, TensorAttributes};
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

    let text = run(&["inspect", &f]);
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
    let text = run(&["inspect", &f]);
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
    assert_eq!(r.stdout, "differ at graph.tensors[0].dims[3]: 8 vs 16\n");

    let r = run(&["diff", &c, &p, "--json"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        json_of(&r),
        json!({ "equal": false, "path": "form", "a": "hdgp-container", "b": "plan" })
    );

    let s = samples();
    let r = run(&[
        "diff",
        s.join("conv_fwd_v1.hkip").to_str().unwrap(),
        s.join("conv_fwd_v1_launchable.hkip").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stdout, "differ at payload.launch_values.h: 33 vs 40\n");
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
    let r = run(&["verify", &f]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "FAILED from_binary: {}\nFAILED from_compiled_plan_binary: {}\n",
            sdk_from_binary(&bytes).unwrap(),
            sdk_from_plan(&bytes).unwrap()
        )
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
}
