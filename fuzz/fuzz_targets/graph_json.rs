//! `Graph::from_json` (upstream's format) and `Graph::from_flatbuffer_json` (the legacy
//! field-for-field form) on any text: an error or a graph, never a panic; a graph that loads
//! writes JSON that loads again.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(g) = hipdnn::Graph::from_json(text)
        && let Ok(j) = g.to_json()
    {
        let _ = hipdnn::Graph::from_json(&j);
    }
    // The legacy field-for-field reader sees the same text.
    if let Ok(g) = hipdnn::Graph::from_flatbuffer_json(text)
        && let Ok(j) = g.to_flatbuffer_json()
    {
        let _ = hipdnn::Graph::from_flatbuffer_json(&j);
    }
});
