//! Errors and logs as a user meets them (issue 32 points 2 and 6): a GPU plan loaded where
//! there is no GPU engine names the engine, the cause and the fix with NOT_SUPPORTED;
//! `Handle::gpu()` without a GPU answers one line and logs the libraries tried at DEBUG;
//! everything goes through the `log` facade, so a logger the application installs sees it.

use std::path::Path;
use std::sync::Mutex;

use hipdnn::{Cause, ErrorCode, Graph, Handle};
use hipdnn_backend::Status;

/// Every log record of this test binary, as `LEVEL target: message`.
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
            .push(format!("{} {}: {}", r.level(), r.target(), r.args()));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture;

/// Installs the capturing logger once (as an application installs `env_logger`).
fn capture_logs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        log::set_logger(&CAPTURE).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Debug);
    });
}

fn records() -> Vec<String> {
    RECORDS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The GPU engine's id (FNV-1a of "hipkernel.ingestor.gpu"), which its saved plans carry.
const GPU_ID: i64 = -1884736383226708858;

#[test]
fn a_gpu_plan_loaded_on_a_cpu_handle_names_the_engine_the_cause_and_the_fix() {
    assert_eq!(
        hipdnn_backend::engine_id_from_name(hipdnn_engines::gpu::GPU_ENGINE_NAME),
        GPU_ID
    );
    let golden =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gpu_plans/matmul_bias_relu.hdgp");
    let bytes = std::fs::read(golden).unwrap();
    let want = format!(
        "Invalid engine ID: {GPU_ID}: the plan was saved by engine \"hipkernel.ingestor.gpu\", \
         which this handle does not have (it has \"hipdnn.reference.cpu\"); this handle is on \
         the CPU. Load the plan with Handle::gpu() on a machine with the GPU it was built for, \
         or build the graph again on this handle"
    );
    let h = Handle::cpu().unwrap();
    let e = Graph::from_binary(&h, &bytes).unwrap_err();
    assert_eq!(e.code, ErrorCode::HipdnnBackendError);
    assert_eq!(
        e.message,
        format!("Cannot load the execution plan (HIPDNN_STATUS_NOT_SUPPORTED): {want}")
    );
    match e.cause() {
        Some(Cause::Backend(b)) => assert_eq!(b.status, Status::NotSupported),
        other => panic!("cause {other:?}"),
    }

    // The plan part alone: the same status and text.
    let plan = hipdnn_backend::hdgp::plan_part(&bytes).unwrap();
    let e = Graph::from_compiled_plan_binary(&h, plan).unwrap_err();
    assert_eq!(
        e.message,
        format!("Cannot load the execution plan (HIPDNN_STATUS_NOT_SUPPORTED): {want}")
    );
}

#[test]
fn handle_gpu_without_a_gpu_is_one_line_with_the_fix_and_the_library_list_at_debug() {
    capture_logs();
    let e = match Handle::gpu() {
        Ok(h) => {
            println!("skipped: this machine has a usable GPU ({:?})", h.device());
            return;
        }
        Err(e) => e,
    };
    assert_eq!(e.code, ErrorCode::GraphNotSupported);
    assert!(e.is_gpu_unavailable());
    let full = match e.cause() {
        Some(Cause::GpuUnavailable(g)) => g.to_string(),
        other => panic!("cause {other:?}"),
    };
    const FIX: &str = "install the GPU driver (ROCm or CUDA), or use Handle::new() or \
                       Handle::cpu() to run on the CPU";
    // One line, the reason then the fix, whatever this machine lacks.
    assert!(e.message.starts_with("no GPU: "), "{}", e.message);
    assert!(e.message.ends_with(FIX), "{}", e.message);
    assert!(!e.message.contains('\n'));
    assert!(e.message.len() <= 300, "{} characters", e.message.len());
    if !full.starts_with("no GPU: no HIP or CUDA driver library could be loaded") {
        // A runtime loads but finds no device (this machine: hipInit fails): its reason, as is.
        assert_eq!(e.message, format!("{full}; {FIX}"));
        return;
    }
    assert_eq!(
        e.message,
        format!(
            "no GPU: no HIP or CUDA driver library could be loaded; RUST_LOG=debug lists the \
             libraries tried; {FIX}"
        )
    );
    // The list of libraries tried is in the cause and at DEBUG, not in the message.
    assert!(full.len() > e.message.len());
    let debug = format!("DEBUG hipdnn::handle: hipdnn: {full}");
    assert!(
        records().contains(&debug),
        "no {debug:?} in {:?}",
        records()
    );
}

#[test]
fn handle_new_logs_its_device_choice_through_the_log_facade() {
    capture_logs();
    let h = Handle::new().unwrap();
    let info: Vec<String> = records()
        .into_iter()
        .filter(|r| r.starts_with("INFO hipdnn::handle: "))
        .collect();
    if h.is_gpu() {
        assert!(
            info.iter().any(|r| r.contains("hipdnn: handle on GPU")),
            "{info:?}"
        );
    } else {
        assert!(
            info.iter()
                .any(|r| r.contains("hipdnn: using the CPU (no GPU: ")),
            "{info:?}"
        );
        assert!(
            info.iter().any(|r| r
                == "INFO hipdnn::handle: hipdnn: handle on the CPU (engine hipdnn.reference.cpu)"),
            "{info:?}"
        );
    }
}
