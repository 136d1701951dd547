//! The `SerializedExecutionPlan` envelope reader (v1/v2) on any bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = hipdnn_backend::PlanEnvelope::parse(data);
});
