//! Autotune with persisted winners (issue 35, deliverable 1; upstream RFC 0013) on the CPU:
//! candidates and ranking, the engine-override file autotune writes (upstream's version-2
//! format), later builds that read it (`Handle::set_engine_override_file`,
//! `HIPDNN_HEUR_CONFIG_PATH`) and pick the winner with its knobs without timing anything,
//! damaged, legacy and foreign files, and concurrent writers.
//!
//! The test engine `test.delay` is the CPU reference engine with a knob `test.delay`
//! (milliseconds slept per execute) and two variants (5 ms, then 1 ms), counting its builds
//! and executes so a test can see that a build timed nothing.

use hipdnn::*;
use hipdnn_backend::engine::{
    BehaviorNote, Engine, EngineConfig, EngineVariant, ExecuteArgs, ExecutionContext, KnobInfo,
};
use hipdnn_backend::{OperationGraph, PluginError, PluginResult};
use hipdnn_engines::reference::ReferenceEngine;
use serde_json::{Value, json};
use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const CPU: &str = "hipdnn.reference.cpu";
const DELAY: &str = "test.delay";
const DELAY_KNOB: i64 = 7;

static RECORDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        RECORDS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{} {}", r.level(), r.args()));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture;

fn capture_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        log::set_logger(&CAPTURE).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Debug);
    });
}

/// Log lines that mention `needle` (each test uses its own file path as the needle).
fn records_with(needle: &str) -> Vec<String> {
    RECORDS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|r| r.contains(needle))
        .cloned()
        .collect()
}

/// The reference engine with a delay knob; counts what it built and ran.
struct Delay {
    inner: ReferenceEngine,
    /// Delay of the last context built (-1 before any).
    built: Arc<AtomicI64>,
    runs: Arc<AtomicUsize>,
}

struct DelayContext {
    inner: Box<dyn ExecutionContext>,
    ms: u64,
    runs: Arc<AtomicUsize>,
}

impl ExecutionContext for DelayContext {
    fn workspace_size(&self) -> usize {
        0
    }
    fn execute(&self, args: ExecuteArgs<'_, '_>) -> PluginResult<()> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(self.ms));
        self.inner.execute(args)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Engine for Delay {
    fn name(&self) -> &str {
        DELAY
    }
    fn check_applicable(&self, graph: &OperationGraph) -> PluginResult<()> {
        self.inner.check_applicable(graph)
    }
    fn behavior_notes(&self, _graph: &OperationGraph) -> Vec<BehaviorNote> {
        Vec::new()
    }
    fn knobs(&self, _graph: &OperationGraph) -> Vec<KnobInfo> {
        vec![KnobInfo {
            knob_type: DELAY_KNOB,
            name: DELAY.into(),
            description: "milliseconds slept per execute".into(),
            min: 0,
            max: 10,
            default: 5,
        }]
    }
    fn variants(&self, _graph: &OperationGraph, _c: &EngineConfig) -> Vec<EngineVariant> {
        [5, 1]
            .into_iter()
            .map(|ms| EngineVariant {
                knob_choices: vec![(DELAY_KNOB, ms)],
                label: format!("delay {ms} ms"),
            })
            .collect()
    }
    fn create_execution_context(
        &self,
        config: &EngineConfig,
        graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        let ms = config
            .knob_choices
            .iter()
            .find(|(t, _)| *t == DELAY_KNOB)
            .map_or(5, |&(_, v)| v);
        if !(0..=10).contains(&ms) {
            return Err(PluginError::not_applicable(format!("delay {ms}")));
        }
        let inner = self.inner.create_execution_context(
            &EngineConfig {
                engine_id: self.inner.id(),
                knob_choices: vec![],
            },
            graph,
        )?;
        self.built.store(ms, Ordering::SeqCst);
        Ok(Box::new(DelayContext {
            inner,
            ms: ms as u64,
            runs: self.runs.clone(),
        }))
    }
}

struct Rig {
    handle: Handle,
    built: Arc<AtomicI64>,
    runs: Arc<AtomicUsize>,
}

/// A CPU handle with `test.delay` registered after the reference engine.
fn rig() -> Rig {
    let mut handle = Handle::cpu().unwrap();
    let built = Arc::new(AtomicI64::new(-1));
    let runs = Arc::new(AtomicUsize::new(0));
    handle
        .backend_mut()
        .register_engine(Arc::new(Delay {
            inner: ReferenceEngine::new(),
            built: built.clone(),
            runs: runs.clone(),
        }))
        .unwrap();
    Rig {
        handle,
        built,
        runs,
    }
}

/// `a (m, k) · b (k, n)` in f32, uids 1, 2, 3.
fn matmul(m: i64, k: i64, n: i64) -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(TensorAttributes::new("a").uid(1).dims([m, k]));
    let b = g.tensor(TensorAttributes::new("b").uid(2).dims([k, n]));
    let c = g.matmul(a, b, MatmulAttributes::new());
    g.set_output(c, true).set_uid(c, 3);
    g
}

/// Autotunes `g` on `h` with fresh tensors (a = 1, b = 2) and checks the winner's output.
fn tune(
    g: &mut Graph,
    h: &Handle,
    config: &AutotuneConfig,
    storage: Option<&AutotuneStorage>,
) -> Result<Vec<AutotuneResult>> {
    let (m, k, n) = dims(g);
    let a = Buffer::from_slice_on(h, &vec![1f32; (m * k) as usize])?;
    let b = Buffer::from_slice_on(h, &vec![2f32; (k * n) as usize])?;
    let mut c = Buffer::from_slice_on(h, &vec![0f32; (m * n) as usize])?;
    let r = g.autotune(
        h,
        VariantPack::new()
            .input(1, &a)
            .input(2, &b)
            .output(3, &mut c),
        config,
        storage,
    )?;
    assert_eq!(c.to_vec()?, vec![2.0 * k as f32; (m * n) as usize]);
    Ok(r)
}

fn dims(g: &Graph) -> (i64, i64, i64) {
    let d = |uid| {
        g.tensor_attributes(g.tensor_by_uid(uid).unwrap())
            .dims
            .clone()
    };
    let (a, b) = (d(1), d(2));
    (a[0], a[1], b[1])
}

fn fixed(n: u32) -> AutotuneConfig {
    AutotuneConfig {
        strategy: AutotuneStrategy::FixedAverage,
        timed_iterations: n,
        ..AutotuneConfig::default()
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hipdnn-autotune-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// How many entries the override file at `p` holds.
fn entry_count(p: &Path) -> usize {
    read_json(p)["engine_overrides"].as_array().unwrap().len()
}

/// The `<file>.corrupt-*` siblings of `p` (files moved aside by autotune).
fn corrupt_siblings(p: &Path) -> Vec<PathBuf> {
    let prefix = format!("{}.corrupt-", p.file_name().unwrap().to_string_lossy());
    std::fs::read_dir(p.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

fn delay_id() -> i64 {
    hipdnn_backend::engine_id_from_name(DELAY)
}

#[test]
fn autotune_ranks_every_variant_and_keeps_the_fastest_as_the_plan() {
    let r = rig();
    let mut g = matmul(4, 8, 4);
    let results = tune(&mut g, &r.handle, &fixed(3), None).unwrap();
    let summary: Vec<(String, String, i32, bool)> = results
        .iter()
        .map(|x| {
            (
                x.engine_name.clone(),
                x.variant.clone(),
                x.rank,
                x.succeeded,
            )
        })
        .collect();
    // The reference engine has one variant; test.delay two. 1 ms beats 5 ms; the reference
    // engine (no sleep) beats both.
    assert_eq!(
        summary,
        [
            (CPU.into(), String::new(), 0, true),
            (DELAY.into(), "delay 1 ms".into(), 1, true),
            (DELAY.into(), "delay 5 ms".into(), 2, true),
        ]
    );
    let slow = &results[2];
    assert!(slow.min_time_ms >= 5.0, "{slow:?}");
    assert_eq!(slow.iterations_run, 3);
    assert_eq!(slow.knob_choices, [(DELAY_KNOB, 5)]);
    assert!(slow.avg_time_ms >= slow.min_time_ms);
    assert_eq!(g.engine_name().unwrap(), CPU);
    // The winner's plan saves like a built one: it reloads on a new handle and re-saves
    // byte-identically.
    let saved = g.to_compiled_plan_binary().unwrap();
    let loaded = Graph::from_compiled_plan_binary(&Handle::cpu().unwrap(), &saved).unwrap();
    assert_eq!(loaded.to_compiled_plan_binary().unwrap(), saved);
}

#[test]
fn the_engine_id_filter_and_the_graph_filters_bar_candidates_by_name() {
    let r = rig();
    let mut g = matmul(2, 3, 2);
    let c = AutotuneConfig {
        engine_id_filter: vec![delay_id()],
        ..fixed(1)
    };
    let results = tune(&mut g, &r.handle, &c, None).unwrap();
    let last = results.last().unwrap();
    assert_eq!(
        (last.engine_name.as_str(), last.rank, last.succeeded),
        (CPU, -1, false)
    );
    assert_eq!(last.error_message, "excluded by engineIdFilter");
    assert_eq!(last.workspace_size, -1);
    assert_eq!(g.engine_name().unwrap(), DELAY);
    assert_eq!(r.built.load(Ordering::SeqCst), 1);

    g.deselect_engines([DELAY]);
    let e = tune(&mut g, &r.handle, &c, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "autotune: no candidate is left: hipdnn.reference.cpu: excluded by engineIdFilter; \
         test.delay: deselected by name (deselect_engines); \
         test.delay: deselected by name (deselect_engines)"
    );
}

#[test]
fn the_winner_is_written_in_upstreams_version_2_format_with_its_knobs() {
    let r = rig();
    let path = scratch("format.json");
    let mut g = matmul(3, 5, 2);
    let c = AutotuneConfig {
        engine_id_filter: vec![delay_id()],
        ..fixed(2)
    };
    tune(&mut g, &r.handle, &c, Some(&AutotuneStorage::new(&path))).unwrap();
    let mut file = read_json(&path);
    let meta = file["engine_overrides"][0]["autotune_metadata"]
        .as_object_mut()
        .unwrap();
    for k in ["min_time_ms", "avg_time_ms", "stddev_ms", "timestamp"] {
        assert!(meta.remove(k).is_some(), "{k}");
    }
    assert_eq!(
        file,
        json!({
            "version": 2,
            "engine_overrides": [{
                "op": "matmul",
                "engine_name": "test.delay",
                "device_arch": "cpu",
                "tensors": [
                    {"dim": [3, 5], "tensor_id": "a_tensor_uid", "stride": [5, 1], "data_type": "FLOAT"},
                    {"dim": [5, 2], "tensor_id": "b_tensor_uid", "stride": [2, 1], "data_type": "FLOAT"}
                ],
                "autotune_metadata": {
                    "iterations_run": 2,
                    "mode": "standard",
                    "strategy": "fixed_average",
                    "rank": 0,
                    "workspace_size": 0,
                    "supports_exhaustive": false,
                    "ran_exhaustive": false,
                    "exhaustive_not_run_reason": "",
                    "variant": "delay 1 ms",
                    "knobs": [{"knob_id": "test.delay", "type": "int", "value": 1}]
                }
            }]
        })
    );
}

#[test]
fn a_fresh_build_reads_the_file_and_builds_the_winner_with_its_knob_without_timing() {
    capture_logs();
    let path = scratch("reuse.json");
    {
        let r = rig();
        let mut g = matmul(4, 4, 4);
        let c = AutotuneConfig {
            engine_id_filter: vec![delay_id()],
            ..fixed(2)
        };
        tune(&mut g, &r.handle, &c, Some(&AutotuneStorage::new(&path))).unwrap();
    }
    // Without the file: the first engine, the reference one.
    let mut r = rig();
    r.handle.set_engine_override_file(None);
    let mut g = matmul(4, 4, 4);
    g.build(&r.handle).unwrap();
    assert_eq!(g.engine_name().unwrap(), CPU);
    // With it: test.delay with the winning knob (1 ms), built once, executed never.
    r.handle.set_engine_override_file(Some(path.clone()));
    g.build(&r.handle).unwrap();
    assert_eq!(g.engine_name().unwrap(), DELAY);
    assert_eq!(g.execution_plan_knob_choices().unwrap(), [(DELAY_KNOB, 1)]);
    assert_eq!(r.built.load(Ordering::SeqCst), 1);
    assert_eq!(r.runs.load(Ordering::SeqCst), 0);
    let logs = records_with(&path.display().to_string());
    assert!(
        logs.iter().any(|l| l.starts_with("INFO")
            && l.contains("rule engine_overrides[0] (matmul) picks engine \"test.delay\"")),
        "{logs:?}"
    );
    // Another shape does not match the rule.
    let mut other = matmul(4, 4, 8);
    other.build(&r.handle).unwrap();
    assert_eq!(other.engine_name().unwrap(), CPU);
    // The engine the file names decides (upstream's engine-flip check).
    let mut file = read_json(&path);
    file["engine_overrides"][0]["engine_name"] = json!(CPU);
    file["engine_overrides"][0]["autotune_metadata"]
        .as_object_mut()
        .unwrap()
        .remove("knobs");
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    r.handle.set_engine_override_file(Some(path.clone()));
    g.build(&r.handle).unwrap();
    assert_eq!(g.engine_name().unwrap(), CPU);
}

#[test]
fn a_rule_whose_knob_the_engine_lacks_is_not_applied_at_all() {
    capture_logs();
    for (knob, value, why) in [
        (
            "test.nope",
            json!(0),
            "knob \"test.nope\" is not a knob of engine \"test.delay\"",
        ),
        (
            "test.delay",
            json!(11),
            "knob \"test.delay\" = 11 (int) is not an int in [0, 10]",
        ),
    ] {
        let path = scratch(&format!("knob-{knob}-{value}.json"));
        let file = json!({"version": 2, "engine_overrides": [{
            "op": "matmul", "engine_name": DELAY,
            "tensors": [{"tensor_id": "a_tensor_uid", "dim": [2, 2]},
                        {"tensor_id": "b_tensor_uid", "dim": [2, 2]}],
            "autotune_metadata": {"knobs": [{"knob_id": knob, "type": "int", "value": value}]}}]});
        std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
        let mut r = rig();
        r.handle.set_engine_override_file(Some(path.clone()));
        let mut g = matmul(2, 2, 2);
        g.build(&r.handle).unwrap();
        assert_eq!(g.engine_name().unwrap(), CPU);
        assert_eq!(r.built.load(Ordering::SeqCst), -1);
        let logs = records_with(&path.display().to_string());
        assert_eq!(
            logs,
            [format!(
                "WARN hipdnn: engine-override file {}: rule engine_overrides[0] (matmul) not applied: {why}",
                path.display()
            )]
        );
    }
}

#[test]
fn a_damaged_file_is_ignored_with_one_warning_and_autotune_moves_it_aside() {
    capture_logs();
    let path = scratch("damaged.json");
    std::fs::write(&path, b"{\"version\": 2, \"engine_overrides\": [").unwrap();
    let mut r = rig();
    r.handle.set_engine_override_file(Some(path.clone()));
    let mut g = matmul(2, 2, 2);
    g.build(&r.handle).unwrap();
    g.build(&r.handle).unwrap();
    assert_eq!(g.engine_name().unwrap(), CPU);
    let logs = records_with(&path.display().to_string());
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(
        logs[0].starts_with(&format!(
            "WARN hipdnn: engine-override file {} ignored (HIPDNN_HEUR_CONFIG_PATH): not JSON: ",
            path.display()
        )),
        "{logs:?}"
    );
    // An entry without "op" damages the whole file too (never half-applied).
    let half = json!({"version": 2, "engine_overrides": [
        {"op": "matmul", "engine_name": DELAY, "tensors": []},
        {"engine_name": DELAY, "tensors": []}]});
    std::fs::write(&path, serde_json::to_vec(&half).unwrap()).unwrap();
    g.build(&r.handle).unwrap();
    let logs = records_with(&path.display().to_string());
    assert!(
        logs.last().unwrap().ends_with(
            "ignored (HIPDNN_HEUR_CONFIG_PATH): engine_overrides[1]: the \"op\" field is missing"
        ),
        "{logs:?}"
    );
    // Autotune into the damaged file: moved aside, a new file started.
    std::fs::write(&path, b"not json").unwrap();
    tune(
        &mut g,
        &r.handle,
        &fixed(1),
        Some(&AutotuneStorage::new(&path)),
    )
    .unwrap();
    assert_eq!(entry_count(&path), 1);
    let aside = corrupt_siblings(&path);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read(&aside[0]).unwrap(), b"not json");
}

#[test]
fn autotune_refuses_to_append_to_a_legacy_or_foreign_file_and_leaves_it_untouched() {
    let r = rig();
    for (name, text, why) in [
        (
            "legacy.json",
            r#"{"engine_overrides": []}"#,
            "it has no \"version\" (a version-1 file, whose rules builds still read by position; \
             autotune adds entries only to version-2 files, as upstream)",
        ),
        (
            "v3.json",
            r#"{"version": 3}"#,
            "its \"version\" is 3, not 2",
        ),
        (
            "v-string.json",
            r#"{"version": "2"}"#,
            "its \"version\" is not an integer",
        ),
        ("list.json", "[1, 2]", "it is not a JSON object"),
    ] {
        let path = scratch(name);
        std::fs::write(&path, text).unwrap();
        let mut g = matmul(2, 2, 2);
        let e = tune(
            &mut g,
            &r.handle,
            &fixed(1),
            Some(&AutotuneStorage::new(&path)),
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue);
        assert_eq!(
            e.message,
            format!(
                "autotune: refusing to update {}: {why}; write to another file or set delete_all_existing_content",
                path.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        // The graph still holds the winner.
        assert!(g.has_plan());
        // delete_all_existing_content starts the file over.
        let s = AutotuneStorage {
            path: path.clone(),
            delete_all_existing_content: true,
        };
        tune(&mut g, &r.handle, &fixed(1), Some(&s)).unwrap();
        assert_eq!(read_json(&path)["version"], json!(2));
    }
}

#[test]
fn appending_replaces_only_the_entry_with_the_same_key() {
    let r = rig();
    let path = scratch("append.json");
    let s = AutotuneStorage::new(&path);
    for (m, k, n) in [(2, 2, 2), (3, 2, 2), (2, 2, 2)] {
        let mut g = matmul(m, k, n);
        tune(&mut g, &r.handle, &fixed(1), Some(&s)).unwrap();
    }
    let file = read_json(&path);
    let dims: Vec<Value> = file["engine_overrides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["tensors"][0]["dim"].clone())
        .collect();
    assert_eq!(dims, [json!([3, 2]), json!([2, 2])]);
}

/// The child half of the process tests: runs only with `HIPDNN_AUTOTUNE_CHILD` set (by the
/// parent tests below), as a build or an autotune of a matmul of that many rows.
#[test]
fn child_process_entry() {
    let Ok(rows) = std::env::var("HIPDNN_AUTOTUNE_CHILD") else {
        return;
    };
    let rows: i64 = rows.parse().unwrap();
    let r = rig();
    let mut g = matmul(rows, 3, 2);
    match std::env::var("HIPDNN_AUTOTUNE_WRITE") {
        Ok(p) => {
            tune(&mut g, &r.handle, &fixed(1), Some(&AutotuneStorage::new(p))).unwrap();
        }
        Err(_) => {
            g.build(&r.handle).unwrap();
            println!(
                "CHILD engine={} built={} runs={}",
                g.engine_name().unwrap(),
                r.built.load(Ordering::SeqCst),
                r.runs.load(Ordering::SeqCst)
            );
        }
    }
}

fn child(rows: i64) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "child_process_entry",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("HIPDNN_AUTOTUNE_CHILD", rows.to_string())
    .env_remove("HIPDNN_HEUR_CONFIG_PATH")
    .env_remove("HIPDNN_AUTOTUNE_WRITE");
    c
}

#[test]
fn a_new_process_reads_the_file_hipdnn_heur_config_path_names() {
    let path = scratch("env.json");
    let r = rig();
    let mut g = matmul(6, 3, 2);
    let c = AutotuneConfig {
        engine_id_filter: vec![delay_id()],
        ..fixed(1)
    };
    tune(&mut g, &r.handle, &c, Some(&AutotuneStorage::new(&path))).unwrap();
    let run = |env: Option<&Path>| {
        let mut c = child(6);
        if let Some(p) = env {
            c.env("HIPDNN_HEUR_CONFIG_PATH", p);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .find_map(|l| l.split_once("CHILD ").map(|(_, v)| v.to_string()))
            .unwrap_or_else(|| panic!("no CHILD line in {text}"))
    };
    assert_eq!(run(Some(&path)), "engine=test.delay built=1 runs=0");
    assert_eq!(run(None), "engine=hipdnn.reference.cpu built=-1 runs=0");
}

#[test]
fn eight_processes_tuning_into_one_file_at_once_leave_a_whole_file_with_every_entry() {
    let path = scratch("concurrent.json");
    let children: Vec<_> = (1..=8)
        .map(|rows| {
            child(rows)
                .env("HIPDNN_AUTOTUNE_WRITE", &path)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let file = read_json(&path);
    let mut rows: Vec<i64> = file["engine_overrides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["tensors"][0]["dim"][0].as_i64().unwrap())
        .collect();
    rows.sort_unstable();
    assert_eq!(rows, [1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn deselected_candidates_are_reported_as_barred_and_the_rest_still_run() {
    // test.delay states no notes; the reference engine states none for a matmul: nothing barred.
    let mut r = rig();
    r.handle.set_deterministic_only(true);
    let mut g = matmul(2, 2, 2);
    let results = tune(&mut g, &r.handle, &fixed(1), None).unwrap();
    assert!(results.iter().all(|x| x.succeeded), "{results:?}");
    // Deselecting by behavior note bars nothing either; deselecting by name bars by name.
    g.deselect_engines([CPU]);
    let results = tune(&mut g, &r.handle, &fixed(1), None).unwrap();
    let barred: Vec<_> = results
        .iter()
        .filter(|x| !x.succeeded)
        .map(|x| (x.engine_name.as_str(), x.error_message.as_str()))
        .collect();
    assert_eq!(
        barred,
        [(CPU, "Plan barred: deselected by name (deselect_engines)")]
    );
}

/// On a GPU: the winner among the kernels of an f16 matmul, rebuilt by a new handle from the
/// file, is the same plan (byte-identical saved plan) and computes the same bits. Skips with
/// the reason where no GPU is usable.
#[test]
fn gpu_the_winner_kernel_is_rebuilt_from_the_file_as_the_same_plan() {
    let h = match Handle::gpu() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let path = scratch("gpu.json");
    let graph = || {
        let mut g = Graph::new();
        g.set_io_data_type(DataType::Half)
            .set_compute_data_type(DataType::Float);
        let a = g.tensor(TensorAttributes::new("a").uid(1).dims([256, 512]));
        let b = g.tensor(TensorAttributes::new("b").uid(2).dims([512, 128]));
        let c = g.matmul(a, b, MatmulAttributes::new());
        g.set_output(c, true).set_uid(c, 3);
        g
    };
    let fill = |n: usize| -> Vec<half::f16> {
        (0..n)
            .map(|i| half::f16::from_f32((i % 17) as f32 / 17.0 - 0.5))
            .collect()
    };
    let a = Buffer::from_slice_on(&h, &fill(256 * 512)).unwrap();
    let b = Buffer::from_slice_on(&h, &fill(512 * 128)).unwrap();
    let run = |g: &Graph, h: &Handle| -> Vec<half::f16> {
        let mut c = Buffer::<half::f16>::alloc(h, 256 * 128).unwrap();
        let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().unwrap()).unwrap();
        g.execute(
            h,
            VariantPack::new()
                .input(1, &a)
                .input(2, &b)
                .output(3, &mut c),
            Some(&mut ws),
        )
        .unwrap();
        c.to_vec().unwrap()
    };
    let mut tuned = graph();
    let mut c = Buffer::<half::f16>::alloc(&h, 256 * 128).unwrap();
    let results = tuned
        .autotune(
            &h,
            VariantPack::new()
                .input(1, &a)
                .input(2, &b)
                .output(3, &mut c),
            &fixed(5),
            Some(&AutotuneStorage::new(&path)),
        )
        .unwrap();
    let gpu: Vec<_> = results
        .iter()
        .filter(|r| r.engine_name == "hipkernel.ingestor.gpu")
        .collect();
    assert!(gpu.len() >= 2, "{results:#?}");
    // The CPU reference engine is barred, not run: the pack binds device buffers.
    let cpu = results
        .iter()
        .find(|r| r.engine_name == "hipdnn.reference.cpu")
        .expect("the CPU engine is listed");
    assert!(!cpu.succeeded && cpu.iterations_run == 0, "{cpu:#?}");
    assert_eq!(
        cpu.error_message,
        "Plan barred: the engine computes on host memory and the variant pack binds device buffers"
    );
    let winner = &results[0];
    eprintln!(
        "winner {} {} {:.4} ms of {} candidates",
        winner.engine_name,
        winner.variant,
        winner.min_time_ms,
        results.len()
    );
    let mut h2 = Handle::gpu().unwrap();
    h2.set_engine_override_file(Some(path.clone()));
    let mut rebuilt = graph();
    rebuilt.build(&h2).unwrap();
    assert_eq!(rebuilt.engine_name().unwrap(), winner.engine_name);
    assert_eq!(
        rebuilt.to_compiled_plan_binary().unwrap(),
        tuned.to_compiled_plan_binary().unwrap()
    );
    assert_eq!(run(&rebuilt, &h2), run(&tuned, &h));
}

/// Issue 37, class 7 (a cache key that misses a property): the parsed-file cache must see a
/// file rewritten in place with the same length at once (within one file-system timestamp
/// tick), so a build follows the new content.
#[test]
fn a_file_rewritten_in_place_with_the_same_length_is_read_again_at_once() {
    let path = scratch("same-length.json");
    let file = |ms: i64| {
        serde_json::to_vec(&json!({"version": 2, "engine_overrides": [{
            "op": "matmul", "engine_name": DELAY,
            "tensors": [{"tensor_id": "a_tensor_uid", "dim": [2, 3]},
                        {"tensor_id": "b_tensor_uid", "dim": [3, 2]}],
            "autotune_metadata": {"knobs": [{"knob_id": DELAY, "type": "int", "value": ms}]}}]}))
        .unwrap()
    };
    let (one, two) = (file(1), file(2));
    assert_eq!(one.len(), two.len());
    let mut r = rig();
    r.handle.set_engine_override_file(Some(path.clone()));
    let mut g = matmul(2, 3, 2);
    for (bytes, want) in [(&one, 1), (&two, 2), (&one, 1), (&two, 2)] {
        std::fs::write(&path, bytes).unwrap();
        g.build(&r.handle).unwrap();
        assert_eq!(r.built.load(Ordering::SeqCst), want);
    }
}

#[test]
fn a_pack_binding_a_tensor_outside_the_graph_is_refused_before_any_candidate_runs() {
    let r = rig();
    let mut g = matmul(2, 2, 2);
    let (a, b) = (
        Buffer::from_slice(&[1f32; 4]),
        Buffer::from_slice(&[1f32; 4]),
    );
    let (mut c, extra) = (Buffer::<f32>::zeros(4), Buffer::from_slice(&[0f32; 4]));
    let e = g
        .autotune(
            &r.handle,
            VariantPack::new()
                .input(1, &a)
                .input(2, &b)
                .output(3, &mut c)
                .input(99, &extra),
            &fixed(1),
            None,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "autotune: the variant pack binds uid 99, which is not a non-virtual tensor of the graph"
    );
    assert_eq!(r.runs.load(Ordering::SeqCst), 0);
    assert!(!g.has_plan());
}

#[test]
fn an_empty_file_is_no_rules_for_builds_and_a_new_file_for_autotune() {
    capture_logs();
    let path = scratch("empty.json");
    std::fs::write(&path, b"").unwrap();
    let mut r = rig();
    r.handle.set_engine_override_file(Some(path.clone()));
    let mut g = matmul(2, 2, 2);
    g.build(&r.handle).unwrap();
    assert!(
        records_with(&path.display().to_string())
            .iter()
            .all(|l| !l.starts_with("WARN")),
        "an empty file is not damaged"
    );
    tune(
        &mut g,
        &r.handle,
        &fixed(1),
        Some(&AutotuneStorage::new(&path)),
    )
    .unwrap();
    assert_eq!(entry_count(&path), 1);
    assert_eq!(
        corrupt_siblings(&path),
        Vec::<PathBuf>::new(),
        "an empty file is not moved aside"
    );
}

#[test]
fn an_unreadable_override_path_is_warned_about_once() {
    capture_logs();
    let dir = scratch("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let mut r = rig();
    r.handle.set_engine_override_file(Some(dir.clone()));
    let mut g = matmul(2, 2, 2);
    g.build(&r.handle).unwrap();
    g.build(&r.handle).unwrap();
    assert_eq!(g.engine_name().unwrap(), CPU);
    let logs = records_with(&dir.display().to_string());
    assert_eq!(
        logs,
        [format!(
            "WARN hipdnn: engine-override file {} ignored (HIPDNN_HEUR_CONFIG_PATH): cannot be read: Is a directory (os error 21)",
            dir.display()
        )]
    );
}

#[test]
fn exhaustive_mode_says_why_an_engine_without_a_benchmarking_knob_was_not_primed() {
    let r = rig();
    let mut g = matmul(2, 2, 2);
    let c = AutotuneConfig {
        mode: TuneMode::Exhaustive,
        ..fixed(1)
    };
    let results = tune(&mut g, &r.handle, &c, None).unwrap();
    for x in &results {
        assert_eq!(
            (x.mode_used, x.supports_exhaustive, x.ran_exhaustive),
            (TuneMode::Exhaustive, false, false)
        );
        assert_eq!(
            x.exhaustive_not_run_reason,
            "the engine has no benchmarking knob (nothing to prime)"
        );
    }
}
