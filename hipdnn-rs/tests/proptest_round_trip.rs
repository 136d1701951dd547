//! Random graphs (every op kind, random optional fields, names, UIDs, scalars, graph settings)
//! survive bytes and JSON round trips exactly.

mod common;

use common::{assert_round_trips, random_graph};
use hipdnn::*;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_graph_bytes_and_json_round_trip(seed in any::<u64>(), nodes in 0usize..40) {
        let g = random_graph(seed, nodes);
        prop_assert_eq!(g.node_count(), nodes);
        assert_round_trips(&g);
    }

    #[test]
    fn json_loaded_graph_writes_the_same_bytes(seed in any::<u64>(), nodes in 1usize..20) {
        let g = random_graph(seed, nodes);
        let from_json = Graph::from_json(&g.to_json().unwrap()).unwrap();
        prop_assert_eq!(from_json.to_graph_bytes().unwrap(), g.to_graph_bytes().unwrap());
    }
}
