//! Random graphs (every op kind, random optional fields, names, UIDs, scalars, graph settings)
//! survive bytes and legacy-JSON round trips exactly, and `to_json` / `from_json` (upstream's
//! format, every node kind) exactly.

mod common;

use common::{Gen, assert_round_trips, random_graph};
use hipdnn::*;
use proptest::prelude::*;

/// A random graph of `nodes` nodes of every kind, with random optional fields and graph
/// settings (as [`random_graph`], without ragged offsets).
fn random_upstream_graph(seed: u64, nodes: usize) -> Graph {
    let mut g = Graph::new();
    {
        let mut gn = Gen::new(&mut g, seed, false);
        for _ in 0..nodes {
            let which = gn.r.below(Gen::OPS.len());
            gn.add_op(which);
        }
        let h = gn.r.next();
        let (a, b) = (gn.r.below(19), gn.r.coin());
        let g = &mut *gn.g;
        g.set_name(if b { "graph \u{1F600}" } else { "" });
        g.set_compute_data_type(DataType::ALL[a]);
        g.set_preferred_engine_id(b.then_some(h as i64 >> 3));
        g.set_override_shape_enabled(b);
        if h % 3 == 1 {
            g.set_min_required_engine_api_version(Some(EngineApiVersion {
                major: 1,
                minor: (h % 5) as u32,
                patch: 7,
            }));
            g.set_id(Some(h.to_le_bytes().repeat(2).try_into().unwrap()));
        }
    }
    g.assign_uids();
    g
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_graph_bytes_and_json_round_trip(seed in any::<u64>(), nodes in 0usize..40) {
        let g = random_graph(seed, nodes);
        prop_assert_eq!(g.node_count(), nodes);
        assert_round_trips(&g);
    }

    #[test]
    fn legacy_json_loaded_graph_writes_the_same_bytes(seed in any::<u64>(), nodes in 1usize..20) {
        let g = random_graph(seed, nodes);
        let from_json = Graph::from_flatbuffer_json(&g.to_flatbuffer_json().unwrap()).unwrap();
        prop_assert_eq!(from_json.to_graph_bytes().unwrap(), g.to_graph_bytes().unwrap());
    }

    #[test]
    fn upstream_json_round_trips_graph_text_and_bytes(seed in any::<u64>(), nodes in 0usize..30) {
        let g = random_upstream_graph(seed, nodes);
        prop_assert_eq!(g.node_count(), nodes);
        let json = g.to_json().unwrap();
        let back = Graph::from_json(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
        prop_assert_eq!(back.to_json().unwrap(), json);
        prop_assert_eq!(back.to_graph_bytes().unwrap(), g.to_graph_bytes().unwrap());
        prop_assert_eq!(&back, &g);
    }
}
