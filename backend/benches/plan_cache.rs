//! Serialized-plan cache costs (`docs/plan-serialization.md`):
//! - re-save of a loaded plan (`to_bytes`, one copy of the cache under its lock) against a plain
//!   `to_vec` of the same bytes; the ratio is printed first;
//! - load of a plan whose plugin payload is 1 MiB (envelope checks, engine routing, a trivial
//!   engine's load hook, cache seeding).
//!
//! Run: `CARGO_TARGET_DIR=/work/target-backend cargo bench -p hipdnn-backend --bench plan_cache`.

use criterion::{Criterion, black_box};
use hipdnn_backend::{
    BackendHandle, BehaviorNote, Engine, EngineConfig, ExecuteArgs, ExecutionContext,
    ExecutionPlanDescriptor, OperationGraph, PlanSerialization, PluginError, PluginResult,
    SharedBytes, engine_id_from_name, write_envelope,
};
use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

const ENGINE: &str = "bench.trivial";
const PAYLOAD_BYTES: usize = 1 << 20;

struct TrivialContext;

impl ExecutionContext for TrivialContext {
    fn workspace_size(&self) -> usize {
        0
    }
    fn execute(&self, _args: ExecuteArgs<'_, '_>) -> PluginResult<()> {
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Accepts any non-empty payload without reading it.
struct TrivialEngine;

impl PlanSerialization for TrivialEngine {
    fn serialize_execution_context(
        &self,
        _engine_id: i64,
        _ctx: &dyn ExecutionContext,
    ) -> PluginResult<Vec<u8>> {
        Err(PluginError::not_applicable("bench engine never saves"))
    }
    fn create_execution_context_from_serialized(
        &self,
        payload: &[u8],
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        black_box(payload.len());
        Ok(Box::new(TrivialContext))
    }
}

impl Engine for TrivialEngine {
    fn name(&self) -> &str {
        ENGINE
    }
    fn check_applicable(&self, _graph: &OperationGraph) -> PluginResult<()> {
        Ok(())
    }
    fn behavior_notes(&self, _graph: &OperationGraph) -> Vec<BehaviorNote> {
        vec![BehaviorNote::SupportsExecutionPlanSerialization]
    }
    fn create_execution_context(
        &self,
        _config: &EngineConfig,
        _graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        Ok(Box::new(TrivialContext))
    }
    fn serialization(&self) -> Option<&dyn PlanSerialization> {
        Some(self)
    }
}

fn setup() -> (BackendHandle, Vec<u8>) {
    let mut handle = BackendHandle::new();
    handle.register_engine(Arc::new(TrivialEngine)).unwrap();
    let payload: Vec<u8> = (0..PAYLOAD_BYTES).map(|i| (i * 31 % 251) as u8).collect();
    let plan = write_envelope(
        engine_id_from_name(ENGINE),
        4096,
        &[1, 2, 3],
        &[16, 16, 16],
        false,
        &payload,
    );
    (handle, plan)
}

fn print_ratio(handle: &BackendHandle, plan_bytes: &[u8]) {
    let plan = ExecutionPlanDescriptor::from_bytes(handle, plan_bytes).unwrap();
    let iters = 2000;
    let t = Instant::now();
    for _ in 0..iters {
        black_box(plan.to_bytes().unwrap());
    }
    let resave = t.elapsed();
    let t = Instant::now();
    for _ in 0..iters {
        black_box(black_box(plan_bytes).to_vec());
    }
    let memcpy = t.elapsed();
    println!(
        "re-save of a loaded {} byte plan: {:?}/call, to_vec: {:?}/call, ratio {:.3}",
        plan_bytes.len(),
        resave / iters,
        memcpy / iters,
        resave.as_secs_f64() / memcpy.as_secs_f64()
    );
}

fn main() {
    let (handle, plan_bytes) = setup();
    print_ratio(&handle, &plan_bytes);
    let mut c = Criterion::default().configure_from_args();
    let plan = ExecutionPlanDescriptor::from_bytes(&handle, &plan_bytes).unwrap();
    let mut g = c.benchmark_group("plan_cache_1MiB");
    g.bench_function("resave_loaded_plan", |b| {
        b.iter(|| black_box(plan.to_bytes().unwrap()))
    });
    g.bench_function("to_vec_same_bytes", |b| {
        b.iter(|| black_box(black_box(&plan_bytes).to_vec()))
    });
    g.bench_function("load_plan_1MiB_payload", |b| {
        b.iter(|| black_box(ExecutionPlanDescriptor::from_bytes(&handle, &plan_bytes).unwrap()))
    });
    // The SDK's load: the caller's one owned copy is shared, nothing is copied.
    let shared = SharedBytes::copy_from_slice(&plan_bytes);
    g.bench_function("load_shared_plan_1MiB_payload", |b| {
        b.iter(|| black_box(ExecutionPlanDescriptor::from_shared(&handle, shared.clone()).unwrap()))
    });
    g.bench_function("serialized_bytes_view_of_loaded_plan", |b| {
        b.iter(|| black_box(plan.serialized_bytes().unwrap()))
    });
    g.finish();
    c.final_summary();
}
