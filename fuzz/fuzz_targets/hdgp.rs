//! The `HDGP` container codec on any bytes: read, cut both parts, content flags.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some(c)) = hipdnn_backend::read_container(data) {
        let _ = (c.require_graph(), c.require_plan(), c.content_flags());
    }
    let _ = hipdnn_backend::plan_part(data);
    let _ = hipdnn_backend::graph_part(data);
    let _ = hipdnn_backend::serialized_contents(data);
});
