//! Host work per execute of a kernel-ingestor plan, on a device that does nothing (issue 29).
//!
//! Three rows on one restored conv plan (the payload of the `ingestor_*` tests) and a device
//! whose `launch` only reads its arguments:
//! - `raw_launch`: the device's `launch` called directly with the arguments, geometry and
//!   recorded signature of the plan (what a caller who resolved everything by hand pays);
//! - `context_execute`: the engine's `ExecutionContext::execute` (device resolution, checks,
//!   argument binding, launch);
//! - `plan_execute`: the backend's `ExecutionPlanDescriptor::execute` of the same plan loaded
//!   through a `BackendHandle` (the routing and variant-pack checks on top).
//!
//! The differences `context_execute − raw_launch` and `plan_execute − raw_launch` are the host
//! overhead the ingestor and the backend add per execute. The GPU counterpart (`Graph::execute`
//! against a raw `hip::safe` launch of the same kernel) is `hipdnn-bench overhead`.
//!
//! ```text
//! cargo bench -p hipdnn-engines --bench ingestor_execute
//! ```

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use hipdnn_backend::engine::{BufferRef, Engine, ExecuteArgs, ExecutionContext, TensorBinding};
use hipdnn_backend::{BackendHandle, ExecutionPlanDescriptor, VariantPackDescriptor};
use hipdnn_engines::ingestor::device::{
    DeviceError, FixedDevice, IngestorDevice, IngestorModule, KernelArgValue, KernelFunction,
    LaunchGeometry,
};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::kernel::{KernelArgument, KernelSourceKind};
use hipdnn_engines::ingestor::native::conv_fwd::ConvFwdLaunchInputs;
use hipdnn_engines::ingestor::payload::{IngestorPlanPayload, encode_payload, sha256_hex};
use hipdnn_engines::ingestor::plan::{IngestorExecutionContext, IngestorPlan};
use hipdnn_engines::ingestor::restore::{RestoreEnvironment, restore_plan};
use hipdnn_engines::ingestor::{CodeObjectReader, KpackCodeObjectReader};
use std::any::Any;
use std::sync::Arc;

struct NullFunction;
impl KernelFunction for NullFunction {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct NullModule;
impl IngestorModule for NullModule {
    fn get_function(&self, _symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError> {
        Ok(Arc::new(NullFunction))
    }
}

/// A device whose launch only reads its arguments.
struct NullDevice;
impl IngestorDevice for NullDevice {
    fn arch(&self) -> String {
        "gfx90a:sramecc+:xnack-".into()
    }
    fn ordinal(&self) -> i32 {
        0
    }
    fn load_module(&self, _code: &[u8]) -> Result<Arc<dyn IngestorModule>, DeviceError> {
        Ok(Arc::new(NullModule))
    }
    fn launch(
        &self,
        function: &dyn KernelFunction,
        geometry: LaunchGeometry,
        args: &[KernelArgValue],
        signature: &[KernelArgument],
        stream: u64,
    ) -> Result<(), DeviceError> {
        black_box((function, geometry, args, signature, stream));
        Ok(())
    }
    fn synchronize(&self, _stream: u64) -> Result<(), DeviceError> {
        Ok(())
    }
}

fn conv_payload() -> IngestorPlanPayload {
    let inputs = ConvFwdLaunchInputs {
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
    };
    let mut signature = vec![
        KernelArgument::named("global_buffer", 8, 0, "x"),
        KernelArgument::named("global_buffer", 8, 8, "w"),
        KernelArgument::named("global_buffer", 8, 16, "y"),
    ];
    for (i, n) in ["n", "c", "h", "width", "k", "r", "s"].iter().enumerate() {
        signature.push(KernelArgument::named("by_value", 4, 24 + 4 * i as u32, n));
    }
    let code = vec![0xAB; 256];
    IngestorPlanPayload {
        kernel_descriptor_id: [0x21; 16],
        workspace_bytes: 0,
        runtime_pass_by_value_uids: vec![],
        dispatch_symbol: "hipkernel.conv_fwd.dispatch.v1".into(),
        launch_values: inputs.to_values(),
        source_kind: KernelSourceKind::Kpack,
        symbol: "conv_fwd_nchw".into(),
        target: "gfx90a".into(),
        sha256: sha256_hex(&code),
        signature,
        code_object: code,
        provider_version: "bench".into(),
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

fn execute_overhead(c: &mut Criterion) {
    let dev: Arc<dyn IngestorDevice> = Arc::new(NullDevice);
    let payload = encode_payload(&conv_payload()).expect("payload encodes");
    let registry = Arc::new(hipdnn_engines::registry::native_packs());
    let resolver = FixedDevice(dev.clone());
    let env = RestoreEnvironment {
        resolver: Some(&resolver),
        registry: &registry,
        limits: Default::default(),
    };
    let restored = restore_plan(&payload, &env).expect("the plan restores");
    // What a caller who resolved everything by hand passes to the device.
    let function = restored.code.load_on(dev.as_ref()).expect("loads").function;
    let geometry = restored.launch.geometry;
    let signature = restored.signature.clone();
    let mut raw_args: Vec<KernelArgValue> = (1..=3u64)
        .map(|u| KernelArgValue::Pointer(0x1000 * u))
        .collect();
    raw_args.extend_from_slice(&restored.launch.scalar_args);
    let ctx = IngestorExecutionContext {
        plan: IngestorPlan::Restored(restored),
        resolver: Arc::new(resolver.clone()),
        overrides: None,
    };

    // The same plan through the backend: an ingestor engine on the null device, the plan
    // loaded from an envelope.
    let engine = Arc::new(IngestorEngine::new(
        "hipkernel:Bench",
        vec![],
        Arc::new(resolver.clone()),
        registry.clone(),
        Arc::new(KpackCodeObjectReader) as Arc<dyn CodeObjectReader>,
    ));
    let mut handle = BackendHandle::new();
    handle.register_engine(engine.clone()).expect("registers");
    let plan_bytes =
        hipdnn_backend::write_envelope(engine.id(), 0, &[1, 2, 3], &[16, 16, 16], false, &payload);
    let plan = ExecutionPlanDescriptor::from_bytes(&handle, &plan_bytes).expect("the plan loads");

    let mut g = c.benchmark_group("ingestor_execute");
    g.bench_function("raw_launch", |b| {
        b.iter(|| {
            dev.launch(
                function.as_ref(),
                geometry,
                black_box(&raw_args),
                &signature,
                0,
            )
            .unwrap()
        })
    });
    g.bench_function("context_execute", |b| {
        let mut t = bindings();
        b.iter(|| {
            ctx.execute(ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: black_box(&mut t),
            })
            .unwrap()
        })
    });
    g.bench_function("plan_execute", |b| {
        b.iter(|| {
            let mut pack = VariantPackDescriptor::new();
            for t in bindings() {
                pack.insert(t.uid, t.data);
            }
            plan.execute(&handle, black_box(pack)).unwrap()
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = execute_overhead
}
criterion_main!(benches);
