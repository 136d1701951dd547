//! Restore checks in the final order (reference `ingestor-payload.md` §8–§10, §14 "Restore
//! order"), GPU-free with a fake device reporting `gfx90a:sramecc+:xnack-`.

#[path = "ingestor_support.rs"]
mod support;

use hipdnn_backend::SharedBytes;
use hipdnn_backend::engine::{BufferRef, ExecuteArgs, ExecutionContext, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginResult;
use hipdnn_backend::status::{PluginError, PluginStatus};
use hipdnn_engines::ingestor::device::{DeviceResolver, FixedDevice, IngestorDevice};
use hipdnn_engines::ingestor::dispatch::{DispatchHandler, DispatchRegistry, PreparedLaunch};
use hipdnn_engines::ingestor::kernel::KernelArgument;
use hipdnn_engines::ingestor::launch_values::{LaunchValue, LaunchValues};
use hipdnn_engines::ingestor::native::conv_fwd::ConvFwdV1Handler;
use hipdnn_engines::ingestor::payload::refusal::{DAMAGED_PREFIX, INCOMPATIBLE_PREFIX};
use hipdnn_engines::ingestor::payload::{
    HEADER_SIZE, IngestorPlanPayload, encode_payload, seal_body,
};
use hipdnn_engines::ingestor::plan::{IngestorExecutionContext, IngestorPlan};
use hipdnn_engines::ingestor::restore::{RestoreEnvironment, restore_plan, restore_plan_shared};
use hipdnn_schema::ingestor_plan as fb;
use std::sync::Arc;
use support::*;

const SAVED: &str = "saved kernel 21212121-2121-2121-2121-212121212121";

fn restore_with(
    bytes: &[u8],
    device: Option<Arc<dyn IngestorDevice>>,
    registry: &DispatchRegistry,
) -> PluginResult<hipdnn_engines::ingestor::plan::RestoredPlan> {
    let resolver = device.map(FixedDevice);
    let env = RestoreEnvironment {
        resolver: resolver.as_ref().map(|r| r as &dyn DeviceResolver),
        registry,
        limits: Default::default(),
    };
    restore_plan(bytes, &env)
}

fn gfx90a() -> Arc<dyn IngestorDevice> {
    FakeDevice::new("gfx90a:sramecc+:xnack-", 0)
}

fn restore(p: &IngestorPlanPayload) -> PluginResult<hipdnn_engines::ingestor::plan::RestoredPlan> {
    restore_with(
        &encode_payload(p).unwrap(),
        Some(gfx90a()),
        &hipdnn_engines::registry::native_packs(),
    )
}

fn err(r: PluginResult<hipdnn_engines::ingestor::plan::RestoredPlan>) -> PluginError {
    r.expect_err("restore must refuse")
}

fn assert_na(e: &PluginError, needle: &str) {
    assert_eq!(e.status, PluginStatus::NotApplicable, "{}", e.message);
    assert!(e.message.starts_with(INCOMPATIBLE_PREFIX), "{}", e.message);
    assert!(
        e.message.contains(needle),
        "expected '{needle}' in: {}",
        e.message
    );
}

/// The payload with its code object changed and the body digest resealed (check 9b fails).
fn with_changed_code(p: &IngestorPlanPayload) -> Vec<u8> {
    let bytes = encode_payload(p).unwrap();
    let mut body = bytes[HEADER_SIZE..].to_vec();
    let at = {
        let plan = fb::root_as_execution_plan(&body).unwrap();
        plan.kernel_image().code_object().bytes().as_ptr() as usize - body.as_ptr() as usize
    };
    body[at] ^= 0xFF;
    seal_body(&body)
}

/// A conv handler that neither saves nor restores.
struct NoRestore;
impl DispatchHandler for NoRestore {
    fn supports_saving(&self) -> bool {
        false
    }
    fn contract(&self) -> &str {
        "hipkernel.conv_fwd.dispatch.v1"
    }
    fn launch_signature(&self) -> Vec<KernelArgument> {
        ConvFwdV1Handler.launch_signature()
    }
    fn prepare(&self, _g: &OperationGraph) -> PluginResult<PreparedLaunch> {
        Err(PluginError::not_applicable("test handler"))
    }
}

fn no_restore_registry() -> DispatchRegistry {
    let mut r = DispatchRegistry::new();
    r.register(Arc::new(NoRestore)).unwrap();
    r
}

fn wrong_signature(p: &mut IngestorPlanPayload) {
    p.signature.pop();
}

fn missing_value(p: &mut IngestorPlanPayload) {
    p.launch_values.remove("n");
}

#[test]
fn admits_a_plan_saved_on_the_same_base_arch() {
    let plan = restore(&valid_conv_payload()).unwrap();
    assert_eq!(plan.target, "gfx90a");
    assert_eq!(plan.launch.geometry.grid, [1, 1, 1]); // 1*1*2*4 = 8 outputs, block 64
    assert_eq!(plan.launch.geometry.block, [64, 1, 1]);
    assert_eq!(
        plan.description(),
        "saved kernel 21212121-2121-2121-2121-212121212121 (dispatch 'hipkernel.conv_fwd.dispatch.v1')"
    );
    assert_eq!(plan.code.loaded_device_count(), 1);
}

#[test]
fn a_shared_restore_keeps_a_view_of_the_code_object_and_not_the_payload() {
    let p = valid_conv_payload();
    let shared = SharedBytes::copy_from_slice(&encode_payload(&p).unwrap());
    let registry = hipdnn_engines::registry::native_packs();
    let resolver = FixedDevice(gfx90a());
    let env = RestoreEnvironment {
        resolver: Some(&resolver),
        registry: &registry,
        limits: Default::default(),
    };
    let plan = restore_plan_shared(&shared, &env).unwrap();
    let code = plan.code.bytes();
    assert!(
        Arc::ptr_eq(code.buffer(), shared.buffer()),
        "a view, not a copy"
    );
    assert_eq!(&code[..], &p.code_object[..]);
    assert_eq!(Arc::strong_count(shared.buffer()), 2, "the code view only");
    assert_eq!(plan.code.loaded_device_count(), 1);
    assert_eq!(plan.target, "gfx90a");
    drop(plan);
    assert_eq!(Arc::strong_count(shared.buffer()), 1);
    // The borrowed restore copies the code object alone.
    let plan = restore(&p).unwrap();
    assert_eq!(plan.code.bytes().buffer().len(), p.code_object.len());
}

#[test]
fn a_shared_restore_refuses_in_the_same_order_and_keeps_nothing() {
    let mut p = valid_conv_payload();
    missing_value(&mut p);
    let bytes = encode_payload(&p).unwrap();
    let shared = SharedBytes::copy_from_slice(&bytes);
    let registry = hipdnn_engines::registry::native_packs();
    let device = FakeDevice::new("gfx90a:sramecc+:xnack-", 0);
    let resolver = FixedDevice(device.clone());
    let env = RestoreEnvironment {
        resolver: Some(&resolver),
        registry: &registry,
        limits: Default::default(),
    };
    let e = restore_plan_shared(&shared, &env).unwrap_err();
    let borrowed = err(restore_with(&bytes, Some(device.clone()), &registry));
    assert_eq!((e.status, &e.message), (borrowed.status, &borrowed.message));
    assert_na(&e, "needs launch value 'n'");
    assert_eq!(device.loads(), 0);
    assert_eq!(Arc::strong_count(shared.buffer()), 1);
}

#[test]
fn surfaces_an_unreadable_version() {
    let mut b = encode_payload(&valid_conv_payload()).unwrap();
    b[4] = 2;
    let e = err(restore_with(
        &b,
        Some(gfx90a()),
        &hipdnn_engines::registry::native_packs(),
    ));
    assert_na(&e, "payload format version 2.0 is not readable");
}

#[test]
fn runs_the_decoder_before_any_load_check() {
    let mut p = valid_conv_payload();
    p.target = "gfx942".into();
    p.dispatch_symbol = "hipkernel.conv_fwd.dispatch.v9".into();
    let mut b = encode_payload(&p).unwrap();
    let last = b.len() - 1;
    b[last] ^= 1;
    let e = err(restore_with(
        &b,
        None,
        &hipdnn_engines::registry::native_packs(),
    ));
    assert_eq!(e.status, PluginStatus::InvalidValue);
    assert!(
        e.message
            .starts_with(&format!("{DAMAGED_PREFIX}body digest mismatch")),
        "{}",
        e.message
    );
}

#[test]
fn refuses_when_the_handle_names_no_device() {
    let b = encode_payload(&valid_conv_payload()).unwrap();
    let e = err(restore_with(
        &b,
        None,
        &hipdnn_engines::registry::native_packs(),
    ));
    assert_eq!(e.status, PluginStatus::InternalError);
    let e = err(restore_with(
        &b,
        Some(FakeDevice::new("gfx90a", -1)),
        &hipdnn_engines::registry::native_packs(),
    ));
    assert_eq!(e.status, PluginStatus::InternalError);
    assert_eq!(
        e.message,
        format!("cannot resolve the handle's device to restore {SAVED}")
    );
}

#[test]
fn refuses_another_device_arch() {
    let b = encode_payload(&valid_conv_payload()).unwrap();
    for arch in ["gfx942", "sm_90", "gfx90", "gfx90a0"] {
        let e = err(restore_with(
            &b,
            Some(FakeDevice::new(arch, 0)),
            &hipdnn_engines::registry::native_packs(),
        ));
        assert_na(
            &e,
            &format!("{SAVED} was saved for target 'gfx90a', which device 0 ('{arch}') cannot run"),
        );
    }
}

#[test]
fn refuses_an_unknown_alias() {
    let mut p = valid_conv_payload();
    p.dispatch_symbol = "hipkernel.conv_fwd.dispatch.v9".into();
    let e = err(restore(&p));
    assert_na(
        &e,
        &format!(
            "no dispatch handler is registered under 'hipkernel.conv_fwd.dispatch.v9', which {SAVED} names"
        ),
    );
}

#[test]
fn refuses_an_unversioned_alias() {
    let mut p = valid_conv_payload();
    p.dispatch_symbol = "hipkernel.conv_fwd.dispatch".into();
    let e = err(restore(&p));
    assert_na(
        &e,
        "dispatch 'hipkernel.conv_fwd.dispatch' names no launch-value contract this provider reads; the handler reads the contract 'hipkernel.conv_fwd.dispatch.v1'",
    );
}

#[test]
fn refuses_a_handler_without_restore_support() {
    let b = encode_payload(&valid_conv_payload()).unwrap();
    let e = err(restore_with(&b, Some(gfx90a()), &no_restore_registry()));
    assert_na(
        &e,
        &format!(
            "the dispatch handler registered under 'hipkernel.conv_fwd.dispatch.v1' does not support restoring {SAVED}"
        ),
    );
}

#[test]
fn refuses_a_signature_the_pack_does_not_launch() {
    let mut p = valid_conv_payload();
    wrong_signature(&mut p);
    let e = err(restore(&p));
    assert_na(
        &e,
        "the saved kernel's arguments do not match what this provider launches: kpack kernel source for saved plan for kernel 21212121-2121-2121-2121-212121212121 (symbol 'conv_fwd_nchw', dispatch 'hipkernel.conv_fwd.dispatch.v1'): symbol 'conv_fwd_nchw' is packaged with arguments global_buffer:8@0 'x', ",
    );
    // The recorded list is payload text, so it is quoted (cut at 80 characters).
    assert!(
        e.message
            .contains("... (186 characters), but this pack launches it with global_buffer:8@0, "),
        "{}",
        e.message
    );
    assert!(e.message.ends_with("by_value:4@48"), "{}", e.message);
}

#[test]
fn a_signature_differing_only_in_offsets_or_one_sided_names_matches() {
    let mut p = valid_conv_payload();
    for a in &mut p.signature {
        a.offset += 100;
        a.name.clear();
    }
    assert!(restore(&p).is_ok());
}

#[test]
fn refuses_bytes_the_driver_rejects_at_restore() {
    let b = encode_payload(&valid_conv_payload()).unwrap();
    let mut d = FakeDevice::new("gfx90a:sramecc+:xnack-", 0);
    Arc::get_mut(&mut d).unwrap().refuse_load = true;
    let e = err(restore_with(
        &b,
        Some(d),
        &hipdnn_engines::registry::native_packs(),
    ));
    assert_eq!(e.status, PluginStatus::NotApplicable);
    assert!(e.message.contains("at stage MODULE_LOAD"), "{}", e.message);
    assert!(e.message.contains("hipModuleLoadData"), "{}", e.message);
}

#[test]
fn refuses_a_symbol_the_code_object_lacks() {
    let b = encode_payload(&valid_conv_payload()).unwrap();
    let mut d = FakeDevice::new("gfx90a:sramecc+:xnack-", 0);
    Arc::get_mut(&mut d).unwrap().symbols = Some(vec!["other".into()]);
    let e = err(restore_with(
        &b,
        Some(d),
        &hipdnn_engines::registry::native_packs(),
    ));
    assert!(
        e.message.contains("at stage SYMBOL_LOOKUP"),
        "{}",
        e.message
    );
    assert!(e.message.contains("hipModuleGetFunction"), "{}", e.message);
}

#[test]
fn refuses_an_empty_code_object_without_calling_the_driver() {
    let mut p = valid_conv_payload();
    p.code_object.clear();
    p.sha256 = hipdnn_engines::ingestor::payload::sha256_hex(&[]);
    let d = FakeDevice::new("gfx90a", 0);
    let e = err(restore_with(
        &encode_payload(&p).unwrap(),
        Some(d.clone()),
        &hipdnn_engines::registry::native_packs(),
    ));
    assert_na(
        &e,
        "hipModuleLoadData was not called for saved plan for kernel 21212121-2121-2121-2121-212121212121",
    );
    assert_eq!(d.loads(), 0);
}

// ---- ChecksRunInTheDocumentedOrder: each case breaks two adjacent checks ----

#[test]
fn order_kernel_digest_before_target() {
    let mut p = valid_conv_payload();
    p.target = "gfx942".into();
    let e = err(restore_with(
        &with_changed_code(&p),
        Some(gfx90a()),
        &hipdnn_engines::registry::native_packs(),
    ));
    assert_eq!(e.status, PluginStatus::InvalidValue);
    assert!(
        e.message.contains("does not match the code object"),
        "{}",
        e.message
    );
}

#[test]
fn order_device_resolver_before_target() {
    let mut p = valid_conv_payload();
    p.target = "gfx942".into();
    let e = err(restore_with(
        &encode_payload(&p).unwrap(),
        Some(FakeDevice::new("gfx90a", -1)),
        &hipdnn_engines::registry::native_packs(),
    ));
    assert_eq!(e.status, PluginStatus::InternalError);
}

#[test]
fn order_target_before_alias() {
    let mut p = valid_conv_payload();
    p.target = "gfx942".into();
    p.dispatch_symbol = "hipkernel.conv_fwd.dispatch.v9".into();
    assert_na(&err(restore(&p)), "was saved for target 'gfx942'");
}

#[test]
fn order_alias_before_restore_support() {
    let mut p = valid_conv_payload();
    p.dispatch_symbol = "hipkernel.conv_fwd.dispatch.v9".into();
    let e = err(restore_with(
        &encode_payload(&p).unwrap(),
        Some(gfx90a()),
        &no_restore_registry(),
    ));
    assert_na(&e, "no dispatch handler is registered under");
}

#[test]
fn order_restore_support_before_signature() {
    let mut p = valid_conv_payload();
    wrong_signature(&mut p);
    let e = err(restore_with(
        &encode_payload(&p).unwrap(),
        Some(gfx90a()),
        &no_restore_registry(),
    ));
    assert_na(&e, "does not support restoring");
}

#[test]
fn order_signature_before_launch_values() {
    let mut p = valid_conv_payload();
    wrong_signature(&mut p);
    missing_value(&mut p);
    assert_na(
        &err(restore(&p)),
        "the saved kernel's arguments do not match",
    );
}

#[test]
fn order_launch_values_before_module_load() {
    let mut p = valid_conv_payload();
    missing_value(&mut p);
    let mut d = FakeDevice::new("gfx90a:sramecc+:xnack-", 0);
    Arc::get_mut(&mut d).unwrap().refuse_load = true;
    let d2 = d.clone();
    let e = err(restore_with(
        &encode_payload(&p).unwrap(),
        Some(d),
        &hipdnn_engines::registry::native_packs(),
    ));
    assert_na(
        &e,
        "dispatch 'hipkernel.conv_fwd.dispatch.v1' needs launch value 'n' (int in [1, 2147483647]), and the plan has none",
    );
    assert_eq!(d2.loads(), 0);
}

// ---- execution of a restored plan ----

fn restored_context(
    resolver: Arc<SwitchResolver>,
    p: &IngestorPlanPayload,
) -> IngestorExecutionContext {
    let dev = resolver.current_device();
    let plan = restore_with(
        &encode_payload(p).unwrap(),
        dev,
        &hipdnn_engines::registry::native_packs(),
    )
    .unwrap();
    IngestorExecutionContext {
        plan: IngestorPlan::Restored(plan),
        resolver,
        overrides: None,
    }
}

fn bindings() -> Vec<TensorBinding<'static>> {
    (1..=3)
        .map(|uid| TensorBinding {
            uid,
            data: BufferRef::Device {
                addr: 0x1000 * uid as u64,
                len: 64,
            },
        })
        .collect()
}

#[test]
fn launches_a_restored_plan_on_its_saved_base_arch_only() {
    let home = FakeDevice::new("gfx90a:sramecc+:xnack-", 0);
    let resolver = SwitchResolver::new(Some(home.clone()));
    let ctx = restored_context(resolver.clone(), &valid_conv_payload());
    let mut t = bindings();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap();
    let launches = home.launches.lock().unwrap().clone();
    assert_eq!(launches.len(), 1);
    assert_eq!(launches[0].0.grid, [1, 1, 1]);
    assert_eq!(launches[0].1.len(), 10);
    // Same base arch, other features: admitted, loads its own module.
    let other = FakeDevice::new("gfx90a:xnack+", 1);
    resolver.set(other.clone());
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap();
    assert_eq!(other.loads(), 1);
    // Another base arch: refused, names the saved target.
    resolver.set(FakeDevice::new("gfx942", 2));
    let e = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_err();
    assert_eq!(e.status, PluginStatus::InvalidValue);
    assert!(
        e.message
            .contains("was matched for architecture 'gfx90a', but device 2 reports 'gfx942'"),
        "{}",
        e.message
    );
}

/// The workspace is checked once, by the backend's plan (issue 29: one check, one message);
/// the restored context reports the saved size for that check and does not check it again.
#[test]
fn a_restored_plan_needing_workspace_is_refused_without_one_by_the_backend() {
    use hipdnn_backend::engine::Engine;
    use hipdnn_backend::{BackendHandle, ExecutionPlanDescriptor, Status, VariantPackDescriptor};
    let mut p = valid_conv_payload();
    p.workspace_bytes = 1024;
    let resolver = SwitchResolver::new(Some(gfx90a()));
    let ctx = restored_context(resolver.clone(), &p);
    assert_eq!(ctx.workspace_size(), 1024);
    let engine = Arc::new(hipdnn_engines::ingestor::IngestorEngine::new(
        "hipkernel:Restore",
        vec![],
        resolver,
        Arc::new(hipdnn_engines::registry::native_packs()),
        Arc::new(FakeReader::default()),
    ));
    let mut handle = BackendHandle::new();
    handle.register_engine(engine.clone()).unwrap();
    let bytes = hipdnn_backend::write_envelope(
        engine.id(),
        1024,
        &[1, 2, 3],
        &[16, 16, 16],
        false,
        &encode_payload(&p).unwrap(),
    );
    let plan = ExecutionPlanDescriptor::from_bytes(&handle, &bytes).unwrap();
    let pack = || {
        bindings()
            .into_iter()
            .fold(VariantPackDescriptor::new(), |v, t| v.with(t.uid, t.data))
    };
    let e = plan.execute(&handle, pack()).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert_eq!(
        e.message,
        "the plan needs a workspace of 1024 bytes; 0 bytes were given"
    );
    let mut ws = [0u8; 1024];
    let mut with_ws = pack();
    with_ws.set_workspace(BufferRef::HostMut(&mut ws));
    plan.execute(&handle, with_ws).unwrap();
}

#[test]
fn sixteen_concurrent_first_launches_on_a_new_device_load_the_module_once() {
    for _repeat in 0..20 {
        let home = FakeDevice::new("gfx90a:sramecc+:xnack-", 0);
        let resolver = SwitchResolver::new(Some(home.clone()));
        let ctx = Arc::new(restored_context(resolver.clone(), &valid_conv_payload()));
        assert_eq!(home.loads(), 1);
        let fresh = FakeDevice::new("gfx90a:sramecc+:xnack-", 3);
        resolver.set(fresh.clone());
        let barrier = Arc::new(std::sync::Barrier::new(16));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let ctx = ctx.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let mut t = bindings();
                    barrier.wait();
                    ctx.execute(ExecuteArgs {
                        stream: 0,
                        workspace: None,
                        tensors: &mut t,
                    })
                    .unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(fresh.loads(), 1);
        assert_eq!(fresh.launches.lock().unwrap().len(), 16);
        assert_eq!(home.loads(), 1);
    }
}

#[test]
fn restored_launch_values_hold_what_was_saved() {
    let plan = restore(&valid_conv_payload()).unwrap();
    let mut expected = LaunchValues::new();
    for (k, v) in [
        ("x.uid", 1),
        ("w.uid", 2),
        ("y.uid", 3),
        ("n", 1),
        ("c", 1),
        ("h", 3),
        ("width", 5),
        ("k", 1),
        ("r", 2),
        ("s", 2),
        ("block_size", 64),
    ] {
        expected.insert(k.into(), LaunchValue::Int(v));
    }
    assert_eq!(plan.launch.launch_values, expected);
}
