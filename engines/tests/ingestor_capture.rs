//! Capture (save) rules in order with their statuses and prefixes (reference
//! `ingestor-payload.md` §7, §9, §12, §14 "Capture"), GPU-free.

#[path = "ingestor_support.rs"]
mod support;

use hipdnn_backend::SharedBytes;
use hipdnn_backend::engine::{Engine, ExecuteArgs, ExecutionContext, PlanSerialization};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult, PluginStatus};
use hipdnn_engines::ingestor::capture::{
    CaptureEnvironment, CodeObjectReader, NOT_AN_INGESTOR_PLAN, capture_plan,
};
use hipdnn_engines::ingestor::descriptor::KernelDescriptor;
use hipdnn_engines::ingestor::device::{FixedDevice, IngestorDevice, KernelCode};
use hipdnn_engines::ingestor::dispatch::{DispatchHandler, DispatchRegistry, PreparedLaunch};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::kernel::KernelArgument;
use hipdnn_engines::ingestor::native::conv_fwd::ConvFwdLaunchInputs;
use hipdnn_engines::ingestor::native::pointwise::{PointwiseLaunchInputs, PointwiseV1Handler};
use hipdnn_engines::ingestor::payload::refusal::{SAVE_DAMAGED_PREFIX, SAVE_REFUSED_PREFIX};
use hipdnn_engines::ingestor::payload::{decode_payload, sha256_hex};
use hipdnn_engines::ingestor::plan::{
    BenchmarkPlan, IngestorExecutionContext, IngestorPlan, SingleKernelPlan,
};
use hipdnn_kpack::KpackLoadStage;
use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use support::*;

const POINTWISE_CODE: &[u8] = b"\x7fELF pointwise code object";

fn pointwise_descriptor(kind: &str, sources: Option<&str>) -> KernelDescriptor {
    let sig = r#"[{"kind":"global_buffer","size":8,"offset":0,"name":"a"},{"kind":"global_buffer","size":8,"offset":8,"name":"b"},{"kind":"global_buffer","size":8,"offset":16,"name":"out"}]"#;
    let src = format!(
        r#"{{"kind":"{kind}","library":"kpack/pw.kpack","toc_key":"pw","symbol":"pointwise_add","sha256":"{}","signature":{sig}}}"#,
        sha256_hex(POINTWISE_CODE)
    );
    let body = match sources {
        None => format!(r#""kernel_source": {src}"#),
        Some(_) => format!(r#""sources": {{"a": {src}, "b": {src}}}"#),
    };
    let text = format!(
        r#"{{"id":"11111111-2222-3333-4444-555555555555","name":"pointwise_add_f32","dispatch":"hipkernel.pointwise.dispatch","archs":["gfx90a","gfx942","sm_90"],{body}}}"#
    );
    KernelDescriptor::parse(Path::new("/tree"), Path::new("/tree/pw.json"), &text).unwrap()
}

fn reader() -> FakeReader {
    let mut r = FakeReader::default();
    r.entries.insert(
        (PathBuf::from("/tree/kpack/pw.kpack"), "pw".into()),
        POINTWISE_CODE.to_vec(),
    );
    r
}

fn plan_with(
    desc: KernelDescriptor,
    handler: Arc<dyn DispatchHandler>,
    arch: &str,
) -> SingleKernelPlan {
    let inputs = PointwiseLaunchInputs {
        input_a_uid: 11,
        input_b_uid: 12,
        output_uid: 13,
        block_size: 256,
    };
    SingleKernelPlan::new(
        Arc::new(desc),
        handler,
        inputs.to_launch(),
        Some(Arc::new(KernelCode::new(
            Arc::from(POINTWISE_CODE),
            "pointwise_add",
        ))),
        arch.into(),
        None,
    )
}

fn ctx(plan: IngestorPlan) -> IngestorExecutionContext {
    IngestorExecutionContext {
        plan,
        resolver: Arc::new(FixedDevice(FakeDevice::new("gfx90a:sramecc+:xnack-", 0))),
        overrides: None,
    }
}

fn save(
    c: &dyn ExecutionContext,
    registry: &DispatchRegistry,
    reader: &dyn CodeObjectReader,
) -> PluginResult<Vec<u8>> {
    capture_plan(
        c,
        &CaptureEnvironment {
            registry,
            reader,
            provider_version: "0.1.0",
            limits: Default::default(),
        },
    )
}

fn native() -> DispatchRegistry {
    hipdnn_engines::registry::native_packs()
}

fn native_handler(r: &DispatchRegistry) -> Arc<dyn DispatchHandler> {
    r.resolve("hipkernel.pointwise.dispatch").unwrap()
}

fn refused(
    r: PluginResult<Vec<u8>>,
    status: PluginStatus,
    prefix: &str,
    needle: &str,
) -> PluginError {
    let e = r.expect_err("save must refuse");
    assert_eq!(e.status, status, "{}", e.message);
    assert!(e.message.starts_with(prefix), "{}", e.message);
    assert!(
        e.message.contains(needle),
        "expected '{needle}' in: {}",
        e.message
    );
    e
}

#[test]
fn captures_a_kpack_pointwise_plan() {
    let reg = native();
    let rd = reader();
    let c = ctx(IngestorPlan::Single(plan_with(
        pointwise_descriptor("kpack", None),
        native_handler(&reg),
        "gfx90a:sramecc+:xnack-",
    )));
    let bytes = save(&c, &reg, &rd).unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, "hipkernel.pointwise.dispatch.v1");
    assert_eq!(
        p.launch_values,
        PointwiseLaunchInputs {
            input_a_uid: 11,
            input_b_uid: 12,
            output_uid: 13,
            block_size: 256
        }
        .to_values()
    );
    assert_eq!(p.workspace_bytes, 1024);
    assert_eq!(p.target, "gfx90a");
    assert_eq!(p.sha256, sha256_hex(POINTWISE_CODE));
    assert_eq!(p.code_object, POINTWISE_CODE);
    assert_eq!(p.symbol, "pointwise_add");
    assert_eq!(p.signature.len(), 3);
    assert_eq!(
        p.kernel_descriptor_id,
        *uuid::Uuid::parse_str("11111111-2222-3333-4444-555555555555")
            .unwrap()
            .as_bytes()
    );
    assert!(p.runtime_pass_by_value_uids.is_empty());
    // The re-read used the decorated build-device arch.
    assert_eq!(*rd.last_arch.lock().unwrap(), "gfx90a:sramecc+:xnack-");
}

#[test]
fn a_capture_records_the_device_base_name() {
    let reg = native();
    for (arch, base) in [
        ("gfx942:sramecc+:xnack-", "gfx942"),
        ("gfx942", "gfx942"),
        ("sm_90", "sm_90"),
        ("gfx1151", "gfx1151"),
    ] {
        let c = ctx(IngestorPlan::Single(plan_with(
            pointwise_descriptor("kpack", None),
            native_handler(&reg),
            arch,
        )));
        let p = decode_payload(&save(&c, &reg, &reader()).unwrap()).unwrap();
        assert_eq!(p.target, base);
    }
}

#[test]
fn captures_the_benchmark_winners_own_workspace() {
    let reg = native();
    let mut a = plan_with(
        pointwise_descriptor("kpack", None),
        native_handler(&reg),
        "gfx90a",
    );
    let mut b = a.clone();
    a.launch.workspace_bytes = 1024;
    b.launch.workspace_bytes = 77;
    let bench = BenchmarkPlan::new(vec![a, b]);
    bench.choose(1);
    let c = ctx(IngestorPlan::Benchmark(bench));
    assert_eq!(c.workspace_size(), 1024);
    let p = decode_payload(&save(&c, &reg, &reader()).unwrap()).unwrap();
    assert_eq!(p.workspace_bytes, 77);
}

// ---- refusals, in rule order ----

struct Foreign;
impl ExecutionContext for Foreign {
    fn workspace_size(&self) -> usize {
        0
    }
    fn execute(&self, _a: ExecuteArgs<'_, '_>) -> PluginResult<()> {
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn refuses_a_plan_no_ingestor_engine_built() {
    let e = refused(
        save(&Foreign, &native(), &reader()),
        PluginStatus::NotApplicable,
        SAVE_REFUSED_PREFIX,
        NOT_AN_INGESTOR_PLAN,
    );
    assert_eq!(
        e.message,
        format!("{SAVE_REFUSED_PREFIX}{NOT_AN_INGESTOR_PLAN}")
    );
}

#[test]
fn refuses_a_plan_restored_from_a_payload() {
    let reg = native();
    let c = ctx(IngestorPlan::Single(plan_with(
        pointwise_descriptor("kpack", None),
        native_handler(&reg),
        "gfx90a",
    )));
    let bytes = save(&c, &reg, &reader()).unwrap();
    let engine = IngestorEngine::new(
        "hipkernel:Pointwise",
        vec![],
        Arc::new(FixedDevice(FakeDevice::new("gfx90a", 0))),
        Arc::new(reg),
        Arc::new(reader()),
    );
    let restored = engine
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    let e = engine
        .serialize_execution_context(engine.id(), restored.as_ref())
        .unwrap_err();
    assert_eq!(e.status, PluginStatus::NotApplicable);
    assert!(e.message.starts_with(SAVE_REFUSED_PREFIX), "{}", e.message);
    assert!(
        e.message.contains("loaded from a saved payload"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("hipDNN saves a loaded plan from the plan bytes"),
        "{}",
        e.message
    );
    // A borrowed load keeps no payload: only its own copy of the code object (it may load it
    // on another device later).
    let rc = restored
        .as_any()
        .downcast_ref::<IngestorExecutionContext>()
        .unwrap();
    match &rc.plan {
        IngestorPlan::Restored(r) => {
            assert_eq!(&r.code.bytes()[..], POINTWISE_CODE);
            assert_eq!(
                r.code.bytes().buffer().len(),
                POINTWISE_CODE.len(),
                "a copy of the code object alone, not of the payload"
            );
        }
        other => panic!("{other:?}"),
    }
    // A shared load (a loaded plan's one copy of its bytes): the code object is a view of the
    // payload buffer, nothing is copied, and the re-save hook still refuses.
    let shared = SharedBytes::copy_from_slice(&bytes);
    let restored = engine
        .create_execution_context_from_shared(&shared)
        .unwrap();
    assert_eq!(
        Arc::strong_count(shared.buffer()),
        2,
        "one view kept: the code"
    );
    match &restored
        .as_any()
        .downcast_ref::<IngestorExecutionContext>()
        .unwrap()
        .plan
    {
        IngestorPlan::Restored(r) => {
            assert!(Arc::ptr_eq(r.code.bytes().buffer(), shared.buffer()));
            assert_eq!(&r.code.bytes()[..], POINTWISE_CODE);
            assert!(r.code.bytes().len() < shared.len());
        }
        other => panic!("{other:?}"),
    }
    let e = engine
        .serialize_execution_context(engine.id(), restored.as_ref())
        .unwrap_err();
    assert!(
        e.message.contains("loaded from a saved payload"),
        "{}",
        e.message
    );
    drop(restored);
    assert_eq!(Arc::strong_count(shared.buffer()), 1);
}

#[test]
fn refuses_a_benchmark_plan_without_a_winner() {
    let reg = native();
    let a = plan_with(
        pointwise_descriptor("kpack", None),
        native_handler(&reg),
        "gfx90a",
    );
    let c = ctx(IngestorPlan::Benchmark(BenchmarkPlan::new(vec![a])));
    let e = refused(
        save(&c, &reg, &reader()),
        PluginStatus::NotApplicable,
        SAVE_REFUSED_PREFIX,
        "the plan has not chosen a kernel yet; execute it once, or build it with benchmarking off, then save",
    );
    assert!(!e.message.contains("not built by an ingestor engine"));
}

#[test]
fn refuses_a_multi_launch_kernel_before_the_source_kind_gate() {
    let reg = native();
    // embedded_source *and* multi-launch: the launch count wins and the kind is not named.
    let c = ctx(IngestorPlan::Single(plan_with(
        pointwise_descriptor("embedded_source", Some("multi")),
        native_handler(&reg),
        "gfx90a",
    )));
    let e = refused(
        save(&c, &reg, &reader()),
        PluginStatus::NotApplicable,
        SAVE_REFUSED_PREFIX,
        "has 2 launches",
    );
    assert!(!e.message.contains("embedded_source"), "{}", e.message);
    let c = ctx(IngestorPlan::Single(plan_with(
        pointwise_descriptor("kpack", Some("multi")),
        native_handler(&reg),
        "gfx90a",
    )));
    refused(
        save(&c, &reg, &reader()),
        PluginStatus::NotApplicable,
        SAVE_REFUSED_PREFIX,
        "has 2 launches",
    );
}

#[test]
fn applies_the_source_kind_gate() {
    let reg = native();
    let c = ctx(IngestorPlan::Single(plan_with(
        pointwise_descriptor("embedded_source", None),
        native_handler(&reg),
        "gfx90a",
    )));
    let e = refused(
        save(&c, &reg, &reader()),
        PluginStatus::NotApplicable,
        SAVE_REFUSED_PREFIX,
        "",
    );
    assert_eq!(
        e.message,
        format!(
            "{SAVE_REFUSED_PREFIX}kernel 'pointwise_add_f32' (11111111-2222-3333-4444-555555555555) has source kind 'embedded_source', which saving does not yet support"
        )
    );
}

/// A pointwise handler that does not save.
struct SavesNothing;
impl DispatchHandler for SavesNothing {
    fn supports_saving(&self) -> bool {
        false
    }
    fn contract(&self) -> &str {
        "hipkernel.pointwise.dispatch.v1"
    }
    fn launch_signature(&self) -> Vec<KernelArgument> {
        PointwiseV1Handler.launch_signature()
    }
    fn prepare(&self, g: &OperationGraph) -> PluginResult<PreparedLaunch> {
        PointwiseV1Handler.prepare(g)
    }
}

#[test]
fn refuses_a_handler_that_saves_nothing() {
    let mut reg = DispatchRegistry::new();
    let h: Arc<dyn DispatchHandler> = Arc::new(SavesNothing);
    reg.register(h.clone()).unwrap();
    // embedded_source would be refused first; kpack passes the gate and reaches the handler.
    let c = ctx(IngestorPlan::Single(plan_with(
        pointwise_descriptor("kpack", None),
        h,
        "gfx90a",
    )));
    refused(
        save(&c, &reg, &reader()),
        PluginStatus::NotApplicable,
        SAVE_REFUSED_PREFIX,
        "this dispatch handler does not support saving kernel 'pointwise_add_f32' (11111111-2222-3333-4444-555555555555)",
    );
}

#[test]
fn refuses_an_alias_that_is_not_registered_to_the_handler() {
    let reg = native();
    let stranger: Arc<dyn DispatchHandler> = Arc::new(PointwiseV1Handler);
    let c = ctx(IngestorPlan::Single(plan_with(
        pointwise_descriptor("kpack", None),
        stranger,
        "gfx90a",
    )));
    let e = save(&c, &reg, &reader()).unwrap_err();
    assert_eq!(e.status, PluginStatus::InternalError);
    assert!(e.message.starts_with("dispatch alias 'hipkernel.pointwise.dispatch.v1' is not registered to this handler, which saved kpack 'pointwise_add_f32'"), "{}", e.message);
}

#[test]
fn refuses_a_dispatch_that_exposes_no_kernel_code() {
    let reg = native();
    let mut p = plan_with(
        pointwise_descriptor("kpack", None),
        native_handler(&reg),
        "gfx90a",
    );
    p.code = None;
    let e = save(&ctx(IngestorPlan::Single(p)), &reg, &reader()).unwrap_err();
    assert_eq!(e.status, PluginStatus::InternalError);
    assert!(
        e.message
            .starts_with("prepared dispatch exposes no kernel code for kpack 'pointwise_add_f32'"),
        "{}",
        e.message
    );
}

#[test]
fn a_digest_mismatch_at_save_is_damage_and_other_stages_are_not_applicable() {
    let reg = native();
    let c = ctx(IngestorPlan::Single(plan_with(
        pointwise_descriptor("kpack", None),
        native_handler(&reg),
        "gfx90a",
    )));
    let mut rd = reader();
    rd.entries.insert(
        (PathBuf::from("/tree/kpack/pw.kpack"), "pw".into()),
        b"\x7fELF changed".to_vec(),
    );
    refused(
        save(&c, &reg, &rd),
        PluginStatus::InvalidValue,
        SAVE_DAMAGED_PREFIX,
        "kpack kernel source for kernel kpack 'pointwise_add_f32' (11111111-2222-3333-4444-555555555555), symbol 'pointwise_add': cannot read its code object at stage DIGEST_MISMATCH: ",
    );
    for stage in [
        KpackLoadStage::OpenArchive,
        KpackLoadStage::ArchLookup,
        KpackLoadStage::EntryLookup,
        KpackLoadStage::Decompress,
    ] {
        let mut rd = reader();
        rd.fail = Some(stage);
        refused(
            save(&c, &reg, &rd),
            PluginStatus::NotApplicable,
            SAVE_REFUSED_PREFIX,
            &format!("at stage {}: forced by the test", stage.name()),
        );
    }
}

#[test]
fn the_output_is_untouched_on_refusal() {
    // The hook returns either the whole payload or an error; a caller's buffer is only
    // assigned on success.
    let reg = native();
    let c = ctx(IngestorPlan::Single(plan_with(
        pointwise_descriptor("embedded_source", None),
        native_handler(&reg),
        "gfx90a",
    )));
    let mut out: Vec<u8> = b"caller bytes".to_vec();
    if let Ok(bytes) = save(&c, &reg, &reader()) {
        out = bytes;
    }
    assert_eq!(out, b"caller bytes");
}

// ---- behavior note (§12) ----

fn engine(kernels: Vec<KernelDescriptor>, reg: DispatchRegistry) -> IngestorEngine {
    let d: Arc<dyn IngestorDevice> = FakeDevice::new("gfx942", 0);
    IngestorEngine::new(
        "hipkernel:Test",
        kernels,
        Arc::new(FixedDevice(d)),
        Arc::new(reg),
        Arc::new(reader()),
    )
}

#[test]
fn reports_the_serialization_note_only_on_saveable_engines() {
    assert!(
        engine(vec![pointwise_descriptor("kpack", None)], native()).supports_plan_serialization()
    );
    assert!(!engine(vec![], native()).supports_plan_serialization());
    assert!(
        !engine(
            vec![
                pointwise_descriptor("kpack", None),
                pointwise_descriptor("embedded_source", None)
            ],
            native()
        )
        .supports_plan_serialization()
    );
    let mut reg = DispatchRegistry::new();
    reg.register(Arc::new(SavesNothing)).unwrap();
    assert!(
        !engine(vec![pointwise_descriptor("kpack", None)], reg).supports_plan_serialization(),
        "no note when a handler cannot save"
    );
    assert!(
        !engine(
            vec![pointwise_descriptor("kpack", None)],
            DispatchRegistry::new()
        )
        .supports_plan_serialization(),
        "no note without a resolvable dispatch"
    );
}

#[test]
fn every_native_handler_reports_supports_saving_exactly_when_it_saves_and_restores() {
    let reg = native();
    let handlers = reg.handlers();
    assert_eq!(handlers.len(), 2, "one entry per pack");
    for h in handlers {
        let launch = match h.contract() {
            "hipkernel.pointwise.dispatch.v1" => PointwiseLaunchInputs {
                input_a_uid: 1,
                input_b_uid: 2,
                output_uid: 3,
                block_size: 256,
            }
            .to_launch(),
            _ => ConvFwdLaunchInputs {
                x_uid: 1,
                w_uid: 2,
                y_uid: 3,
                n: 1,
                c: 1,
                h: 3,
                width: 5,
                k: 1,
                r: 2,
                s: 2,
                block_size: 64,
            }
            .to_launch()
            .unwrap(),
        };
        let saved = h.save_launch_inputs(&launch);
        let restored = saved.as_ref().map(|v| h.restore_launch(h.contract(), v));
        assert_eq!(
            h.supports_saving(),
            saved.is_some() && matches!(restored, Some(Ok(_))),
            "{}",
            h.contract()
        );
        assert_eq!(restored.unwrap().unwrap(), launch);
    }
    assert!(!SavesNothing.supports_saving());
    assert!(
        SavesNothing
            .save_launch_inputs(
                &PointwiseLaunchInputs {
                    input_a_uid: 1,
                    input_b_uid: 2,
                    output_uid: 3,
                    block_size: 1
                }
                .to_launch()
            )
            .is_none()
    );
}

// ---- device-graph capture (stream capture of executes), not the save capture above ----

#[test]
fn device_graph_capture_refuses_only_a_benchmark_plan_that_has_not_chosen() {
    let reg = native();
    let a = plan_with(
        pointwise_descriptor("kpack", None),
        native_handler(&reg),
        "gfx90a",
    );
    assert_eq!(ctx(IngestorPlan::Single(a.clone())).capture_refusal(), None);
    let bench = BenchmarkPlan::new(vec![a.clone(), a]);
    let c = ctx(IngestorPlan::Benchmark(bench));
    assert_eq!(
        c.capture_refusal().as_deref(),
        Some(
            "the plan benchmarks its candidate kernels on its first execute (it synchronizes \
             the stream to time them); execute it once before capturing"
        )
    );
    let IngestorPlan::Benchmark(b) = &c.plan else {
        unreachable!()
    };
    b.choose(0);
    assert_eq!(c.capture_refusal(), None);
}
