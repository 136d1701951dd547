//! Issue 37, class 8 through the real driver (TensorRT and ONNX Runtime shipped engines that
//! failed with raw driver codes on another compute capability or an older driver): on device
//! 0, a saved plan of the GPU engine (the generic f32 matmul) whose code object is swapped
//! (SHA-256 recomputed, so the payload verifies) for
//! - PTX declaring `.version 99.0` (newer than any driver) for the device's own target: the
//!   driver refuses it at `hipModuleLoadData`; the restore fails with `NOT_APPLICABLE` whose text
//!   names the PTX's `.version` and `.target` and the device's arch and driver version;
//! - the packed code object of every other arch (`sm_80` cubin on `sm_90`, AMD gfx code objects
//!   on NVIDIA, another gfx on AMD, NVIDIA cubins on AMD): refused before the driver is called,
//!   naming the code object's target (its ELF header) and the device's arch. The raw driver's
//!   own answer to the same bytes (`Device::load_module`) is printed and must be a refusal too.
//!
//! Nothing is launched: each refusal comes from the restore. Without a GPU runtime, device or
//! packed kernels for the device's architecture every test prints `skipped: …` and passes.

mod code_object_support;

use code_object_support::{doctored, generic_matmul_entry, matmul_graph, packed_code, ptx};
use hipdnn_backend::engine::{Engine, EngineConfig};
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::gpu::{self, GpuEngines};
use hipdnn_engines::ingestor::payload::decode_payload;

const ARCHES: [&str; 5] = ["gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"];

/// Prints `skipped: <why>` on the test process's stderr directly (the harness captures
/// `println!` of a passing test; a direct write shows in plain `cargo test` output).
fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

fn open() -> Option<GpuEngines> {
    match gpu::open(0) {
        Ok(g) => Some(g),
        Err(e) => {
            skipped(&e.to_string());
            None
        }
    }
}

/// The saved plan of the generic f32 matmul on device 0.
fn saved_plan(g: &GpuEngines) -> Vec<u8> {
    let e = &g.engines[0];
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &matmul_graph(),
        )
        .expect("build the matmul");
    e.serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .expect("save")
}

/// The restore refusal of `saved` with its code object swapped for `code`.
fn refusal(g: &GpuEngines, saved: &[u8], code: Vec<u8>) -> hipdnn_backend::status::PluginError {
    match g.engines[0]
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&doctored(saved, code))
    {
        Ok(_) => panic!("a plan carrying foreign code restored"),
        Err(e) => e,
    }
}

#[test]
fn ptx_newer_than_the_driver_is_refused_at_restore_naming_its_version_and_the_driver() {
    let Some(g) = open() else { return };
    let arch = g.device.arch().to_string();
    println!(
        "device 0: {} ({arch}), {}",
        g.device.info().name,
        g.device.runtime().driver_version_text()
    );
    let saved = saved_plan(&g);
    let symbol = decode_payload(&saved).unwrap().symbol;
    let target = if g.arch.starts_with("sm_") {
        g.arch.clone()
    } else {
        "sm_90".to_string()
    };
    let code = ptx("99.0", &target, &symbol);
    if g.arch.starts_with("sm_") {
        let raw = g.device.load_module(&code);
        println!("the raw driver on this PTX: {:?}", raw.as_ref().err());
        assert!(raw.is_err(), "the driver loaded PTX .version 99.0");
    }
    let e = refusal(&g, &saved, code);
    println!("refusal: {}", e.message);
    assert_eq!(e.status, PluginStatus::NotApplicable, "{}", e.message);
    if g.arch.starts_with("sm_") {
        assert!(
            e.message
                .contains("at stage MODULE_LOAD: hipModuleLoadData failed: hipModuleLoadData (cuModuleLoadData): CUDA_ERROR_UNSUPPORTED_PTX_VERSION: "),
            "{}",
            e.message
        );
        let want = format!(
            "(the PTX declares .version 99.0 for .target {target}; device 0 ('{arch}') runs {})",
            g.device.runtime().driver_version_text()
        );
        assert!(e.message.ends_with(&want), "{}\nwant …{want}", e.message);
        assert!(e.message.contains("CUDA driver "), "{}", e.message);
    } else {
        assert!(
            e.message.ends_with(&format!(
                ": the code object is PTX (.version 99.0) for .target sm_90, which needs an NVIDIA device at or above it; device 0 is '{arch}'"
            )),
            "{}",
            e.message
        );
    }
}

#[test]
fn code_objects_of_every_other_arch_are_refused_before_the_driver_naming_both() {
    let Some(g) = open() else { return };
    let arch = g.device.arch().to_string();
    let saved = saved_plan(&g);
    let mut tried = 0;
    for other in ARCHES.iter().filter(|a| **a != g.arch) {
        let code = packed_code(other, &generic_matmul_entry(other));
        let raw = g.device.load_module(&code);
        println!(
            "{other} code object on {arch}, raw driver: {}",
            match &raw {
                Ok(_) => "loaded".to_string(),
                Err(e) => e.to_string(),
            }
        );
        let e = refusal(&g, &saved, code);
        println!("  refusal: {}", e.message);
        assert_eq!(e.status, PluginStatus::NotApplicable, "{}", e.message);
        assert!(
            e.message.starts_with(
                "ingestor plan is valid but cannot be saved or loaded here: hipModuleLoadData was not called for saved plan for kernel "
            ),
            "{}",
            e.message
        );
        let names = if other.starts_with("sm_") {
            format!("is a CUDA cubin for {other} (its ELF header)")
        } else {
            format!("is an AMDGPU code object for {other} (its ELF header)")
        };
        assert!(e.message.contains(&names), "{}", e.message);
        assert!(
            e.message.ends_with(&format!("; device 0 is '{arch}'")),
            "{}",
            e.message
        );
        tried += 1;
    }
    assert_eq!(tried, 4);
}
