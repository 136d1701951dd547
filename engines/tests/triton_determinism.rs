//! Issue 37, class 10 without a device: the enumeration half of `gpu_determinism.rs`. On a fake
//! device of every packed arch, every shipped Triton entry (each entry of `triton.json`, the
//! archive's table of contents) gets a graph of the candidate pool that it serves
//! (`determinism_support::assign`), builds with knob `hipkernel.kernel` naming it, and its plan
//! launches that entry's code object (symbol and SHA-256 as recorded by the fake device). A new
//! entry no candidate reaches fails here, naming it, before the GPU sweep could skip it.

#[path = "ingestor_support.rs"]
mod support;

mod batch_rows_support;
mod batchnorm_support;
mod bn_bwd_support;
mod determinism_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_bwd_support;
mod pool_support;
mod reduce_support;
mod sdpa_bwd_support;

use determinism_support::{assign, candidates, config_for};
use hipdnn_backend::engine::Engine;
use std::path::PathBuf;

const ARCHES: [&str; 5] = ["gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"];

/// The number of entries in `<arch>/triton.json`.
fn packed_entries(arch: &str) -> usize {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("kernels/packed")
        .join(arch)
        .join("triton.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["kernels"].as_array().unwrap().len()
}

#[test]
fn every_packed_triton_entry_of_every_arch_gets_a_graph_it_serves_and_launches() {
    let pool = candidates();
    for arch in ARCHES {
        let (e, dev) = support::fake_gpu_engine(arch);
        let assigned = assign(&e, &pool);
        assert_eq!(assigned.len(), packed_entries(arch), "{arch}");
        let missing: Vec<&str> = assigned
            .iter()
            .filter(|(_, c)| c.is_none())
            .map(|(k, _)| k.name.as_str())
            .collect();
        assert!(
            missing.is_empty(),
            "{arch}: {} entries have no graph in the determinism pool: {missing:?}",
            missing.len()
        );
        for (k, c) in &assigned {
            let c = &pool[c.unwrap()];
            let b = (c.build)();
            let uids: Vec<(i64, usize)> = c
                .inputs
                .iter()
                .map(|(u, _)| *u)
                .chain(c.outputs.iter().copied())
                .map(|u| (u, b.spec(u).bytes_len()))
                .collect();
            let ctx = e
                .create_execution_context(&config_for(&e, k), &c.graph())
                .unwrap_or_else(|err| panic!("{arch} {}: {}: {}", k.name, c.label, err.message));
            support::fake_execute(ctx.as_ref(), &uids)
                .unwrap_or_else(|err| panic!("{arch} {}: execute: {}", k.name, err.message));
            let (symbol, sha) = dev.functions.lock().unwrap().last().cloned().unwrap();
            let src = k.single_source().unwrap();
            assert_eq!(symbol, src.symbol, "{arch} {}", k.name);
            assert_eq!(
                sha, src.sha256,
                "{arch} {}: another code object ran",
                k.name
            );
        }
        println!(
            "{arch}: {} entries, each with a graph it serves",
            assigned.len()
        );
    }
}
