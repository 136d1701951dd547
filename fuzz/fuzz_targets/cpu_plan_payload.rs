//! The CPU reference engine's plan payload (`HRCP` header + graph) on any bytes, then the
//! engine's load hook (which parses the graph into its execution DAG).
#![no_main]
use hipdnn_backend::PlanSerialization;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hipdnn_engines::reference::payload::decode(data);
    let engine = hipdnn_engines::reference::ReferenceEngine::new();
    let _ = engine.create_execution_context_from_serialized(data);
});
