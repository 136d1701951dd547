//! Issue 12: damaged and hostile inputs (`tests/cases/`, one file per case of the issue's
//! damaged-and-hostile list) and each class beyond its example: load cross-checks,
//! trailing bytes, checked arithmetic, strict readers, typed buffers, atomic files.

use hipdnn::{
    Buffer, DataType, ErrorCode, Form, Graph, Handle, NOT_A_GRAPH, NOT_A_GRAPH_OR_CONTAINER,
    PLAN_ONLY_FILE, PointwiseAttributes, PointwiseMode, TensorAttributes, VariantPack,
};
use hipdnn_backend::{PlanEnvelope, hdgp, write_envelope};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn case(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cases")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `y = a <mode> b` on f32 tensors of `dims` (packed), UIDs 1, 2, 3.
fn binary(dims: &[i64], mode: PointwiseMode, dt: DataType) -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let strides = hipdnn::packed_strides(dims, &(0..dims.len()).collect::<Vec<_>>());
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .dims(dims.to_vec())
            .strides(strides.clone()),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(2)
            .dims(dims.to_vec())
            .strides(strides),
    );
    let y = g.pointwise(a, b, PointwiseAttributes::with_mode(mode));
    g.set_output(y, true).set_uid(y, 3);
    g
}

fn built(mut g: Graph) -> (Graph, Handle) {
    let h = Handle::cpu().unwrap();
    g.build(&h).unwrap();
    (g, h)
}

fn add44() -> (Graph, Handle) {
    built(binary(&[4, 4], PointwiseMode::Add, DataType::Float))
}

fn err_text(r: hipdnn::Result<Graph>) -> (ErrorCode, String) {
    let e = r.expect_err("must be refused");
    (e.code, e.message)
}

// ---- class 1: cross-checks at load ----

#[test]
fn a_container_whose_plan_was_built_for_another_shape_is_refused() {
    let h = Handle::cpu().unwrap();
    let (code, m) = err_text(Graph::from_binary(
        &h,
        &case("container_graph_4x4_plan_3x3.hdgp"),
    ));
    assert_eq!(code, ErrorCode::InvalidValue, "{m}");
    assert!(
        m.starts_with(
            "Cannot load the container: the execution plan does not belong to the graph: "
        ),
        "{m}"
    );
    assert!(
        m.contains("dims [4, 4] in the graph, [3, 3] in the plan"),
        "{m}"
    );
}

/// A container made of `graph`'s bytes and `plan_of`'s plan.
fn spliced(graph: &Graph, plan_of: &Graph) -> Vec<u8> {
    hdgp::write_graph_and_plan(
        &graph.to_graph_bytes().unwrap(),
        Some(&plan_of.to_compiled_plan_binary().unwrap()),
    )
}

#[test]
fn a_container_whose_plan_runs_another_op_or_type_is_refused() {
    let (add, h) = add44();
    let (mul, _) = built(binary(&[4, 4], PointwiseMode::Mul, DataType::Float));
    let (_, m) = err_text(Graph::from_binary(&h, &spliced(&add, &mul)));
    assert!(m.contains("node #0 ('"), "{m}");
    assert!(
        m.contains("the PointwiseAttributes attributes differ between the graph and the plan"),
        "{m}"
    );
    let (half, _) = built(binary(&[4, 4], PointwiseMode::Add, DataType::Half));
    let (_, m) = err_text(Graph::from_binary(&h, &spliced(&add, &half)));
    assert!(
        m.contains("tensor uid 1 ('a'): data type FLOAT in the graph, HALF in the plan"),
        "{m}"
    );
    // Strides: same dims, column-major plan.
    let mut cm = Graph::new();
    cm.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let a = cm.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .dims([4, 4])
            .strides([1, 4]),
    );
    let b = cm.tensor(
        TensorAttributes::new("b")
            .uid(2)
            .dims([4, 4])
            .strides([4, 1]),
    );
    let y = cm.pointwise(a, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    cm.set_output(y, true).set_uid(y, 3);
    let (cm, _) = built(cm);
    let (_, m) = err_text(Graph::from_binary(&h, &spliced(&add, &cm)));
    assert!(
        m.contains("tensor uid 1 ('a'): strides [4, 1] in the graph, [1, 4] in the plan"),
        "{m}"
    );
    // The matching container still loads and re-saves byte-identically.
    let bytes = add.to_binary().unwrap();
    assert_eq!(
        Graph::from_binary(&h, &bytes).unwrap().to_binary().unwrap(),
        bytes
    );
}

/// `plan` re-wrapped with other tensor UIDs (alignments kept parallel).
fn with_uids(plan: &[u8], uids: &[i64]) -> Vec<u8> {
    let env = PlanEnvelope::parse(plan).unwrap();
    write_envelope(
        env.engine_id,
        env.workspace_size,
        uids,
        &vec![16; uids.len()],
        env.is_override_shape_enabled,
        env.plugin_payload,
    )
}

#[test]
fn envelope_tensor_uids_must_equal_the_payloads() {
    let (g, h) = add44();
    let plan = g.to_compiled_plan_binary().unwrap();
    let (_, m) = err_text(Graph::from_compiled_plan_binary(
        &h,
        &with_uids(&plan, &[1, 1, 3]),
    ));
    assert!(
        m.contains("Serialized execution plan lists tensor UID 1 twice."),
        "{m}"
    );
    let (_, m) = err_text(Graph::from_compiled_plan_binary(
        &h,
        &with_uids(&plan, &[1, 2, 4]),
    ));
    assert!(
        m.contains("Serialized execution plan parts disagree: tensor UIDs differ at position 2: 4 in the envelope, 3 in the payload's graph"),
        "{m}"
    );
    let (_, m) = err_text(Graph::from_compiled_plan_binary(
        &h,
        &with_uids(&plan, &[1, 2]),
    ));
    assert!(
        m.contains("the envelope lists 2 tensor UIDs, the payload's graph 3"),
        "{m}"
    );
    assert!(Graph::from_compiled_plan_binary(&h, &with_uids(&plan, &[1, 2, 3])).is_ok());
}

// ---- class 2: trailing bytes ----

fn junk(mut b: Vec<u8>) -> Vec<u8> {
    b.extend_from_slice(&[0xA5; 8]);
    b
}

#[test]
fn every_reader_refuses_trailing_bytes() {
    let (g, h) = add44();
    let plan = g.to_compiled_plan_binary().unwrap();
    let (_, m) = err_text(Graph::from_compiled_plan_binary(&h, &junk(plan.clone())));
    assert!(m.contains("Serialized execution plan is followed by other bytes: 8 trailing bytes after the serialized execution plan of"), "{m}");
    let container = g.to_binary().unwrap();
    let (_, m) = err_text(Graph::from_binary(&h, &junk(container.clone())));
    assert!(m.contains("8 trailing bytes after the container of"), "{m}");
    let (_, m) = err_text(Graph::from_compiled_plan_binary(&h, &junk(container)));
    assert!(m.contains("8 trailing bytes after the container of"), "{m}");
    let graph = g.to_graph_bytes().unwrap();
    let (code, m) = err_text(Graph::from_graph_bytes(&junk(graph.clone())));
    assert_eq!(code, ErrorCode::InvalidValue);
    // The graph builder pads its output by 2 bytes; those count once junk follows them.
    assert!(
        m.contains("graph bytes are followed by other bytes: 10 trailing bytes after the graph of"),
        "{m}"
    );
    // A container whose plan blob carries junk after the envelope.
    let (_, m) = err_text(Graph::from_binary(
        &h,
        &hdgp::write_graph_and_plan(&graph, Some(&junk(plan.clone()))),
    ));
    assert!(
        m.contains("8 trailing bytes after the serialized execution plan"),
        "{m}"
    );
    // A container whose graph blob carries junk.
    let (_, m) = err_text(Graph::from_binary(
        &h,
        &hdgp::write_graph_and_plan(&junk(graph.clone()), Some(&plan)),
    ));
    assert!(m.contains("10 trailing bytes after the graph of"), "{m}");
    // Exact lengths load.
    assert!(Graph::from_compiled_plan_binary(&h, &plan).is_ok());
    assert!(Graph::from_graph_bytes(&graph).is_ok());
}

// ---- class 3: checked arithmetic ----

#[test]
fn a_cpu_plan_whose_strides_overflow_is_refused_at_load() {
    let h = Handle::cpu().unwrap();
    let (_, m) = err_text(Graph::from_compiled_plan_binary(
        &h,
        &case("cpu_plan_stride_2pow62.plan"),
    ));
    assert!(m.contains("cpu reference plan data is damaged: "), "{m}");
    assert!(m.contains("tensor uid 1 ('a'): dims [2, 2] strides [4611686018427387904, 1] overflow the address space"), "{m}");
}

fn huge(dims: [i64; 2], strides: [i64; 2]) -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .dims(dims)
            .strides(strides),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(2)
            .dims(dims)
            .strides(strides),
    );
    let y = g.pointwise(a, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.set_output(y, true)
        .set_uid(y, 3)
        .set_dims(y, dims.to_vec())
        .set_strides(y, strides.to_vec());
    g
}

/// Dims and strides near `i64::MAX` go through build, save, load and execute without a panic
/// (this test runs in the debug profile, where overflow panics).
#[test]
fn dims_and_strides_near_i64_max_never_panic() {
    let h = Handle::cpu().unwrap();
    let cases = [
        ([2, 2], [1i64 << 62, 1]),
        ([i64::MAX, 1], [1, 1]),
        ([2, 2], [i64::MAX, 1]),
        ([i64::MAX / 2, 3], [3, 1]),
        ([1 << 32, 1 << 32], [1 << 32, 1]),
    ];
    for (dims, strides) in cases {
        let mut g = huge(dims, strides);
        let e = g.build(&h).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue, "{dims:?} {strides:?}: {e}");
        assert!(
            e.message.starts_with(&format!(
                "tensor 'a' (uid 1): dims {dims:?} strides {strides:?} overflow the address space"
            )),
            "{e}"
        );
        // Save a graph anyway and load it: the reader refuses nothing structural, the engine
        // refuses the plan.
        let bytes = g.to_graph_bytes().unwrap();
        let mut back = Graph::from_graph_bytes(&bytes).unwrap();
        assert!(back.build(&h).is_err());
        // A plan made for [2, 2] run with the hostile graph's buffers: refused, no panic.
        let (ok, _) = add44();
        let mut a = Buffer::<f32>::zeros(4);
        let x = Buffer::<f32>::zeros(4);
        let pack = VariantPack::new().with(1, &x).with(2, &x).with(3, &mut a);
        let e = g.execute(&h, pack, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue, "{}", e.message);
        let _ = ok;
    }
}

// ---- class 4: strict readers ----

#[test]
fn an_empty_or_rootless_buffer_is_not_a_graph() {
    let h = Handle::cpu().unwrap();
    for bytes in [
        &[][..],
        &[0, 0, 0, 0][..],
        &[0u8; 12][..],
        &[8, 0, 0, 0, 4, 0, 4, 0, 4, 0, 0, 0][..],
    ] {
        let (code, m) = err_text(Graph::from_graph_bytes(bytes));
        assert_eq!(code, ErrorCode::InvalidValue);
        assert!(m.starts_with(NOT_A_GRAPH), "{bytes:?}: {m}");
        let (_, m) = err_text(Graph::from_binary(&h, bytes));
        assert!(m.starts_with(NOT_A_GRAPH_OR_CONTAINER), "{bytes:?}: {m}");
    }
    let (g, _) = add44();
    let (_, m) = err_text(Graph::from_binary(
        &h,
        &g.to_compiled_plan_binary().unwrap(),
    ));
    assert!(m.starts_with(PLAN_ONLY_FILE), "{m}");
    let mut cut = g.to_binary().unwrap();
    let full = cut.len();
    cut.truncate(full / 2);
    let (_, m) = err_text(Graph::from_binary(&h, &cut));
    assert!(
        m.contains(&format!("truncated: {} of at least", full / 2)),
        "{m}"
    );
    // A graph with no nodes still round-trips (it has a root with tensors and nodes vectors).
    let empty = Graph::new().to_graph_bytes().unwrap();
    assert!(Graph::from_graph_bytes(&empty).is_ok());
}

#[test]
fn a_buffer_of_another_element_type_is_refused_at_bind() {
    let (g, h) = add44();
    let x = Buffer::<f32>::zeros(16);
    let mut y = Buffer::<f32>::zeros(16);
    let d = Buffer::<f64>::zeros(16);
    let e = g
        .execute(
            &h,
            VariantPack::new().with(1, &d).with(2, &x).with(3, &mut y),
            None,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "buffer for tensor 'a' (uid 1) holds DOUBLE elements, but the tensor's data type is FLOAT"
    );
    let i = Buffer::<i32>::zeros(16);
    let e = g
        .execute(
            &h,
            VariantPack::new().with(1, &x).with(2, &i).with(3, &mut y),
            None,
        )
        .unwrap_err();
    assert!(
        e.message.contains("(uid 2) holds INT32 elements"),
        "{}",
        e.message
    );
    let mut o = Buffer::<F16>::zeros(16);
    let e = g
        .execute(
            &h,
            VariantPack::new().with(1, &x).with(2, &x).with(3, &mut o),
            None,
        )
        .unwrap_err();
    assert!(
        e.message.contains("(uid 3) holds HALF elements"),
        "{}",
        e.message
    );
    g.execute(
        &h,
        VariantPack::new().with(1, &x).with(2, &x).with(3, &mut y),
        None,
    )
    .unwrap();
}
type F16 = half::f16;

// ---- class 6: atomic files ----

#[test]
fn save_to_file_and_load_from_file_round_trip_both_forms() {
    let (g, h) = add44();
    let dir = TempDir::new();
    let p = dir.path().join("g.hdgp");
    g.save_to_file(&p, Form::GraphAndPlan).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), g.to_binary().unwrap());
    let back = Graph::load_from_file(&h, &p).unwrap();
    assert_eq!(back.to_binary().unwrap(), g.to_binary().unwrap());
    let q = dir.path().join("g.plan");
    g.save_to_file(&q, Form::PlanOnly).unwrap();
    let plan = Graph::load_from_file(&h, &q).unwrap();
    assert_eq!(
        plan.to_compiled_plan_binary().unwrap(),
        g.to_compiled_plan_binary().unwrap()
    );
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // A failed save leaves the destination untouched.
    let e = Graph::new().save_to_file(&p, Form::PlanOnly).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(std::fs::read(&p).unwrap(), g.to_binary().unwrap());
    let e = g
        .save_to_file(dir.path().join("missing/x"), Form::GraphAndPlan)
        .unwrap_err();
    assert!(e.message.starts_with("cannot save to '"), "{}", e.message);
}

const CHILD: &str = "HIPDNN_CONCURRENT_FILE_CHILD";

/// One of 8 processes: for about 2 s, save graph A or B (two different containers and their
/// plans) to the shared paths and load them back; every load must be one of the two, whole.
#[test]
fn concurrent_file_child() {
    let Ok(dir) = std::env::var(CHILD) else {
        return;
    };
    let id: usize = std::env::var("HIPDNN_CHILD_ID").unwrap().parse().unwrap();
    let (a, h) = add44();
    let (b, _) = built(binary(&[4, 4], PointwiseMode::Mul, DataType::Float));
    let want = [a.to_binary().unwrap(), b.to_binary().unwrap()];
    let want_plan = [
        a.to_compiled_plan_binary().unwrap(),
        b.to_compiled_plan_binary().unwrap(),
    ];
    let (c, p) = (
        PathBuf::from(&dir).join("shared.hdgp"),
        PathBuf::from(&dir).join("shared.plan"),
    );
    let t0 = Instant::now();
    let mut n = 0usize;
    while t0.elapsed() < Duration::from_secs(2) {
        let g = if (n + id) % 2 == 0 { &a } else { &b };
        g.save_to_file(&c, Form::GraphAndPlan).unwrap();
        g.save_to_file(&p, Form::PlanOnly).unwrap();
        let got = Graph::load_from_file(&h, &c).unwrap().to_binary().unwrap();
        assert!(want.contains(&got), "torn container loaded");
        let got = Graph::load_from_file(&h, &p)
            .unwrap()
            .to_compiled_plan_binary()
            .unwrap();
        assert!(want_plan.contains(&got), "torn plan loaded");
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn eight_processes_saving_and_loading_one_path_never_see_a_torn_file() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let dir = TempDir::new();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..8)
        .map(|i| {
            std::process::Command::new(&exe)
                .args(["--exact", "concurrent_file_child", "--test-threads=1"])
                .env(CHILD, dir.path())
                .env("HIPDNN_CHILD_ID", i.to_string())
                .output_async()
        })
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "child {i}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "child {i} did not run"
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "temporary files left: {left:?}");
}

trait SpawnPiped {
    fn output_async(&mut self) -> std::process::Child;
}
impl SpawnPiped for std::process::Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);
impl TempDir {
    fn new() -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "hipdnn-issue12-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---- class 4: strict JSON (the SDK's field-for-field form, `from_flatbuffer_json`; the case file is in that form) ----

#[test]
fn graph_json_requires_keys_and_refuses_duplicates_and_wrong_types() {
    let text = String::from_utf8(case("json_node_missing_input_key.json")).unwrap();
    let e = Graph::from_flatbuffer_json(&text).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "JSON: node #0 'Pointwise_0': required key 'attributes.in_0_tensor_uid' is missing"
    );
    let (g, _) = add44();
    let json = g.to_flatbuffer_json().unwrap();
    assert!(Graph::from_flatbuffer_json(&json).is_ok());
    // Another node key: the output reference.
    let e = Graph::from_flatbuffer_json(&json.replace("\"out_0_tensor_uid\": 3,", "")).unwrap_err();
    assert!(
        e.message
            .ends_with("required key 'attributes.out_0_tensor_uid' is missing"),
        "{}",
        e.message
    );
    // A tensor without its uid.
    let e = Graph::from_flatbuffer_json(&json.replacen("\"uid\": 1,", "", 1)).unwrap_err();
    assert_eq!(e.message, "JSON: tensor #0: required key 'uid' is missing");
    // Duplicate keys, at the top and nested.
    let e =
        Graph::from_flatbuffer_json(&json.replacen("\"uid\": 1,", "\"uid\": 1, \"uid\": 2,", 1))
            .unwrap_err();
    assert_eq!(e.message, "JSON: an object holds the key 'uid' twice");
    let e = Graph::from_flatbuffer_json(&json.replacen("{", "{\"name\": \"x\",", 1)).unwrap_err();
    assert_eq!(e.message, "JSON: an object holds the key 'name' twice");
    // Wrong types.
    let e = Graph::from_flatbuffer_json(&json.replacen("\"uid\": 1,", "\"uid\": \"1\",", 1))
        .unwrap_err();
    assert!(
        e.message.contains("'uid': expected an integer"),
        "{}",
        e.message
    );
    let e = Graph::from_flatbuffer_json(
        &json.replace("\"in_0_tensor_uid\": 1", "\"in_0_tensor_uid\": true"),
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue, "{}", e.message);
}

/// Writes seed inputs for the cargo-fuzz targets (`fuzz/`) when `HIPDNN_FUZZ_SEEDS` names the
/// corpus root (`fuzz/seed.sh` runs it); does nothing otherwise.
#[test]
fn write_fuzz_seeds() {
    let Ok(root) = std::env::var("HIPDNN_FUZZ_SEEDS") else {
        return;
    };
    let root = PathBuf::from(root);
    let put = |target: &str, name: &str, bytes: &[u8]| {
        let d = root.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    };
    for (name, g) in [
        ("add44", add44().0),
        (
            "mul3",
            built(binary(&[3], PointwiseMode::Mul, DataType::Float)).0,
        ),
        (
            "half235",
            built(binary(&[2, 3, 5], PointwiseMode::Sub, DataType::Half)).0,
        ),
    ] {
        let container = g.to_binary().unwrap();
        let plan = g.to_compiled_plan_binary().unwrap();
        let graph = g.to_graph_bytes().unwrap();
        put("graph_bytes", name, &graph);
        put("graph_json", name, g.to_json().unwrap().as_bytes());
        put("envelope", name, &plan);
        put("hdgp", name, &container);
        put("plan_load", &format!("{name}.hdgp"), &container);
        put("plan_load", &format!("{name}.plan"), &plan);
        put(
            "cpu_plan_payload",
            name,
            PlanEnvelope::parse(&plan).unwrap().plugin_payload,
        );
    }
}

/// One rule for a runtime scalar with a default: it must be bound at every execute, in the
/// built graph (SDK check) and in the same plan loaded alone (CPU engine check).
#[test]
fn an_unbound_runtime_scalar_is_refused_built_and_loaded_alike() {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .dims([2, 2])
            .strides([2, 1]),
    );
    let s = g.tensor(
        TensorAttributes::new("s")
            .uid(2)
            .dims([1, 1])
            .strides([1, 1])
            .data_type(DataType::Float)
            .runtime_parameter_with_default(hipdnn::TensorValue::Float32(2.0)),
    );
    let y = g.pointwise(a, s, PointwiseAttributes::with_mode(PointwiseMode::Mul));
    g.set_output(y, true).set_uid(y, 3);
    let (g, h) = built(g);
    let x = Buffer::from_slice(&[1.0f32, 2.0, 3.0, 4.0]);
    let mut out = Buffer::<f32>::zeros(4);
    let e = g
        .execute(&h, VariantPack::new().with(1, &x).with(3, &mut out), None)
        .unwrap_err();
    assert_eq!(
        e.message,
        "the variant pack has no buffer for tensor 's' (uid 2)"
    );
    let alone =
        Graph::from_compiled_plan_binary(&h, &g.to_compiled_plan_binary().unwrap()).unwrap();
    let e = alone
        .execute(&h, VariantPack::new().with(1, &x).with(3, &mut out), None)
        .unwrap_err();
    assert_eq!(
        e.message,
        "the variant pack has no buffer for tensor 's' (uid 2)"
    );
    assert_eq!(out.to_vec().unwrap(), vec![0.0; 4], "nothing written");
    // Bound, both run and agree.
    let three = Buffer::from_slice(&[3.0f32]);
    for graph in [&g, &alone] {
        let mut o = Buffer::<f32>::zeros(4);
        graph
            .execute(
                &h,
                VariantPack::new()
                    .with(1, &x)
                    .with(2, &three)
                    .with(3, &mut o),
                None,
            )
            .unwrap();
        assert_eq!(o.to_vec().unwrap(), vec![3.0, 6.0, 9.0, 12.0]);
    }
}

/// A plan loaded alone is checked against the graph its CPU engine runs: element types and
/// sizes of the bound buffers, as for a built graph.
#[test]
fn a_plan_loaded_alone_checks_buffers_against_the_graph_it_runs() {
    let h = Handle::cpu().unwrap();
    let alone = Graph::from_compiled_plan_binary(
        &h,
        &built(binary(&[3, 3], PointwiseMode::Add, DataType::Float))
            .0
            .to_compiled_plan_binary()
            .unwrap(),
    )
    .unwrap();
    let x = Buffer::<f32>::zeros(9);
    let d = Buffer::<f64>::zeros(9);
    let mut y = Buffer::<f32>::zeros(9);
    let e = alone
        .execute(
            &h,
            VariantPack::new().with(1, &d).with(2, &x).with(3, &mut y),
            None,
        )
        .unwrap_err();
    assert_eq!(
        e.message,
        "buffer for tensor 'a' (uid 1) holds DOUBLE elements, but the tensor's data type is FLOAT"
    );
    let short = Buffer::<f32>::zeros(4);
    let e = alone
        .execute(
            &h,
            VariantPack::new()
                .with(1, &short)
                .with(2, &x)
                .with(3, &mut y),
            None,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message
            .starts_with("buffer for tensor 'a' (uid 1) holds 16 bytes; dims [3, 3]"),
        "{}",
        e.message
    );
    alone
        .execute(
            &h,
            VariantPack::new().with(1, &x).with(2, &x).with(3, &mut y),
            None,
        )
        .unwrap();
}

/// The missing-input-key case of `json_node_missing_input_key.json` in upstream's format (the
/// format of `Graph::to_json` / `from_json`): refused naming the node and the key; so are a
/// duplicate key and a wrong value type.
#[test]
fn upstream_graph_json_missing_input_key_is_refused_naming_node_and_key() {
    let (g, _) = add44();
    let json = g.to_json().unwrap();
    assert!(Graph::from_json(&json).is_ok());
    let missing = json.replacen("\"in_0_tensor_uid\":1,", "", 1);
    assert_ne!(missing, json);
    let e = Graph::from_json(&missing).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "JSON graph: nodes[0] 'Pointwise_0': key 'in_0_tensor_uid' is missing"
    );
    let e = Graph::from_json(&json.replacen("{", "{\"name\":\"x\",", 1)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(e.message.contains("'name'"), "{}", e.message);
    let e =
        Graph::from_json(&json.replacen("\"in_0_tensor_uid\":1", "\"in_0_tensor_uid\":true", 1))
            .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(e.message.contains("in_0_tensor_uid"), "{}", e.message);
}
