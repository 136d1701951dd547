//! `Graph::from_graph_bytes` and the backend's `OperationGraph::from_bytes` on any bytes: an
//! error or a graph, never a panic; a graph that loads saves and loads again.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = hipdnn::Graph::from_graph_bytes(data)
        && let Ok(b) = g.to_graph_bytes()
    {
        hipdnn::Graph::from_graph_bytes(&b).expect("a saved graph loads");
    }
    let _ = hipdnn_backend::OperationGraph::from_bytes(data);
});
