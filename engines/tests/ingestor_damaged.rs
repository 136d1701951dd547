//! Issue 12 for the kernel ingestor: a saved plan whose recorded workspace is below what its
//! launch contract needs is refused at load (the case file
//! `tests/cases/ingestor_plan_payload_workspace_zero.plan`), an envelope whose UIDs miss one the
//! payload binds is refused, and kernel-descriptor library paths are contained by resolved
//! paths (relative and absolute inputs alike).

#[path = "ingestor_support.rs"]
mod support;

use hipdnn_backend::{
    BackendHandle, ExecutionPlanDescriptor, PlanEnvelope, Status, write_envelope,
};
use hipdnn_engines::ingestor::IngestorEngine;
use hipdnn_engines::ingestor::descriptor::KernelDescriptor;
use hipdnn_engines::ingestor::device::FixedDevice;
use hipdnn_engines::ingestor::payload::decode_payload;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::*;

fn case() -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/cases/ingestor_plan_payload_workspace_zero.plan"),
    )
    .unwrap()
}

/// A handle with an ingestor engine named `hipkernel.ingestor.fake` on a fake device of the
/// payload's target arch.
fn handle_for(plan: &[u8]) -> (BackendHandle, Arc<FakeDevice>) {
    let env = PlanEnvelope::parse(plan).unwrap();
    let target = decode_payload(env.plugin_payload).unwrap().target;
    let device = FakeDevice::new(&target, 0);
    let engine = IngestorEngine::new(
        "hipkernel.ingestor.fake",
        vec![],
        Arc::new(FixedDevice(device.clone())),
        Arc::new(hipdnn_engines::registry::native_packs()),
        Arc::new(FakeReader::default()),
    );
    let mut h = BackendHandle::new();
    h.register_engine(Arc::new(engine)).unwrap();
    (h, device)
}

#[test]
fn a_recorded_workspace_below_the_contracts_need_is_refused_at_load() {
    let plan = case();
    let (h, device) = handle_for(&plan);
    let e = ExecutionPlanDescriptor::from_bytes(&h, &plan).unwrap_err();
    assert_eq!(e.status, Status::PluginError, "{}", e.message);
    assert!(
        e.message
            .contains("ingestor plan data is damaged: saved kernel "),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("records a workspace of 0 bytes, but its launch contract 'hipkernel.pointwise.dispatch.v1' needs 1024 bytes"),
        "{}",
        e.message
    );
    assert_eq!(device.loads(), 0, "no module is loaded for a refused plan");
    assert!(device.launches.lock().unwrap().is_empty());
    // The same refusal through the shared load.
    let e2 = ExecutionPlanDescriptor::from_copy(&h, &plan).unwrap_err();
    assert_eq!(e2.message, e.message);
}

#[test]
fn an_envelope_workspace_below_the_restored_plans_need_is_refused() {
    // Repair the payload's workspace (1024) by re-encoding it, then record 512 in the envelope.
    let plan = case();
    let env = PlanEnvelope::parse(&plan).unwrap();
    let mut p = decode_payload(env.plugin_payload).unwrap();
    p.workspace_bytes = 1024;
    let payload = hipdnn_engines::ingestor::payload::encode_payload(&p).unwrap();
    let aligns = env
        .tensor_alignments
        .clone()
        .unwrap_or_else(|| vec![0; env.tensor_uids.len()]);
    let rewrap = |ws: i64, uids: &[i64], aligns: &[i64]| {
        write_envelope(env.engine_id, ws, uids, aligns, false, &payload)
    };
    let (h, _) = handle_for(&plan);
    let e = ExecutionPlanDescriptor::from_bytes(&h, &rewrap(512, &env.tensor_uids, &aligns))
        .unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert_eq!(
        e.message,
        "Serialized execution plan parts disagree: the envelope records a workspace of 512 bytes, but the engine's restored plan needs 1024 bytes"
    );
    let ok =
        ExecutionPlanDescriptor::from_bytes(&h, &rewrap(1024, &env.tensor_uids, &aligns)).unwrap();
    assert_eq!(ok.workspace_size(), 1024);
    // A UID the payload binds but the envelope does not list.
    let fewer: Vec<i64> = env.tensor_uids[1..].to_vec();
    let e =
        ExecutionPlanDescriptor::from_bytes(&h, &rewrap(1024, &fewer, &aligns[1..])).unwrap_err();
    assert!(
        e.message
            .starts_with("Serialized execution plan parts disagree: the payload binds tensor UID"),
        "{}",
        e.message
    );
}

const DESCRIPTOR: &str = r#"{"id":"11111111-2222-3333-4444-555555555555","name":"k","dispatch":"hipkernel.pointwise.dispatch.v1",
 "kernel_source":{"kind":"kpack","library":"LIB","toc_key":"k","symbol":"k","sha256":"0000000000000000000000000000000000000000000000000000000000000000","signature":[]}}"#;

fn parse(root: &Path, descriptor: &Path, lib: &str) -> Result<KernelDescriptor, String> {
    KernelDescriptor::parse(root, descriptor, &DESCRIPTOR.replace("LIB", lib))
        .map_err(|e| e.message)
}

#[test]
fn library_containment_uses_resolved_paths_for_relative_and_absolute_inputs() {
    let cwd = std::env::current_dir().unwrap();
    let tmp = tempfile::tempdir_in(&cwd).unwrap();
    let abs_dir = tmp.path().to_path_buf();
    let rel_dir = abs_dir.strip_prefix(&cwd).unwrap().to_path_buf();
    std::fs::create_dir_all(abs_dir.join("sub")).unwrap();
    std::fs::write(abs_dir.join("sub/k.kpack"), b"x").unwrap();
    // The case: root ".", descriptor absolute, library climbing out of the tree.
    let e = parse(
        Path::new("."),
        &abs_dir.join("sub/d.json"),
        "../../../etc/hostname",
    );
    let deep = "../".repeat(abs_dir.components().count() + 2) + "etc/hostname";
    let e2 = parse(Path::new("."), &abs_dir.join("sub/d.json"), &deep);
    for e in [e, e2] {
        let m = e.expect_err("a library outside the tree must be refused");
        assert!(m.contains("which is outside the descriptor tree"), "{m}");
    }
    // Inside the tree: accepted with every mix of relative and absolute root and descriptor.
    for root in [abs_dir.clone(), rel_dir.clone()] {
        for d in [abs_dir.join("sub/d.json"), rel_dir.join("sub/d.json")] {
            parse(&root, &d, "k.kpack").unwrap_or_else(|m| panic!("{root:?} {d:?}: {m}"));
            parse(&root, &d, "./../sub/k.kpack").unwrap_or_else(|m| panic!("{root:?} {d:?}: {m}"));
            let m = parse(&root, &d, "../../k.kpack").unwrap_err();
            assert!(m.contains("outside the descriptor tree"), "{m}");
        }
    }
    // A sibling directory sharing the root's text prefix is outside.
    let sibling = PathBuf::from(format!("{}-evil", abs_dir.display()));
    let name = sibling.file_name().unwrap().to_str().unwrap().to_string();
    let m = parse(
        &abs_dir,
        &abs_dir.join("d.json"),
        &format!("../{name}/k.kpack"),
    )
    .unwrap_err();
    assert!(m.contains("outside the descriptor tree"), "{m}");
}
