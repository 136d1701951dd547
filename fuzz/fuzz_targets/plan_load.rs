//! The SDK's two loaders on any bytes with a CPU handle: `from_binary` (container or graph)
//! and `from_compiled_plan_binary` (bare plan or container), then a re-save of what loads.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn handle() -> &'static hipdnn::Handle {
    static H: OnceLock<hipdnn::Handle> = OnceLock::new();
    H.get_or_init(|| hipdnn::Handle::cpu().expect("a CPU handle"))
}

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = hipdnn::Graph::from_binary(handle(), data) {
        let _ = g.to_binary();
    }
    if let Ok(g) = hipdnn::Graph::from_compiled_plan_binary(handle(), data) {
        g.to_compiled_plan_binary().expect("a loaded plan re-saves");
    }
});
