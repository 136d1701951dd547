//! GPU-written plans: a pointwise graph built by the kernel ingestor on a GPU handle, saved as
//! an HDGP container and plan-only; `hipdnn-plan` inspects and verifies both without a device
//! and refuses a damaged copy with the text the GPU handle's own loader gives.
//!
//! Without a GPU the test prints `skipped: no GPU: …` and passes. `HIPDNN_PLAN_BIN` overrides
//! the binary's path (for a test binary run on another machine).

use std::io::Write as _;

use hipdnn::{DataType, Graph, Handle, PointwiseAttributes, PointwiseMode};
use hipdnn::{ExecutionDevice, TensorAttributes};
use hipdnn_engines::gpu::GPU_ENGINE_NAME;
use serde_json::Value;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let bin = std::env::var("HIPDNN_PLAN_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_hipdnn-plan").to_string());
    let o = Command::new(bin)
        .args(args)
        .output()
        .expect("the binary runs");
    (
        o.status.code().expect("exited"),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

#[test]
fn gpu_saved_plans_inspect_and_verify_without_a_device() {
    let h = match Handle::gpu() {
        Ok(h) => h,
        Err(e) => {
            drop(writeln!(std::io::stderr(), "skipped: {}", e.message));
            return;
        }
    };
    let ExecutionDevice::Gpu { arch, .. } = h.device().clone() else {
        unreachable!("a GPU handle")
    };
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .dims([1, 2, 4, 4])
            .packed_nchw(),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(2)
            .dims([1, 2, 4, 4])
            .packed_nchw(),
    );
    let y = g.pointwise(a, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.set_output(y, true).set_uid(y, 4);
    g.build(&h).expect("build");
    assert_eq!(g.engine_name().unwrap(), GPU_ENGINE_NAME);
    let container = g.to_binary().unwrap();
    let plan = g.to_compiled_plan_binary().unwrap();

    let dir = tempfile::tempdir().unwrap();
    for (name, bytes, form) in [
        ("c.bin", &container, "hdgp-container"),
        ("p.bin", &plan, "plan"),
    ] {
        let f = dir.path().join(name);
        std::fs::write(&f, bytes).unwrap();
        let f = f.to_str().unwrap();
        let (code, out, err) = run(&["inspect", f, "--json"]);
        assert_eq!(code, 0, "{name}: {out}{err}");
        let d: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(d["form"], form);
        assert_eq!(d["envelope"]["engine_name"], GPU_ENGINE_NAME);
        let p = &d["payload"];
        assert_eq!(p["kind"], "ingestor-plan");
        let target = p["kernel"]["kpack_target"].as_str().unwrap();
        assert!(arch.starts_with(target), "{target} vs device {arch}");
        assert!(p["kernel"]["code_object_bytes"].as_u64().unwrap() > 0);
        assert_eq!(
            p["kernel"]["code_object_sha256"],
            p["kernel"]["code_object_sha256_recorded"]
        );
        assert_eq!(d["validation"]["ok"], true);
        let (code, out, _) = run(&["verify", f]);
        assert_eq!(code, 0);
        assert!(out.contains("not checked (needs a device): "), "{out}");
    }

    // A flipped byte near the end of the payload: the tool and the GPU handle say the same.
    let mut bad = plan.clone();
    let n = bad.len();
    bad[n - 64] ^= 0x5A;
    let sdk = match Graph::from_compiled_plan_binary(&h, &bad) {
        Ok(_) => panic!("the GPU handle loads a damaged plan"),
        Err(e) => e.to_string(),
    };
    let f = dir.path().join("bad.bin");
    std::fs::write(&f, &bad).unwrap();
    let (code, _, err) = run(&["verify", f.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(err, format!("FAILED from_compiled_plan_binary: {sdk}\n"));
    println!("gpu plan verified on {arch}: {sdk}");
}
