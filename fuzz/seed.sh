#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seed inputs: the tests' vectors and case files, and plans,
# containers, graphs and payloads written by hipdnn-rs/tests/damaged_and_hostile.rs
# (write_fuzz_seeds). Safe to re-run; libFuzzer adds what it finds to the same folders.
set -euo pipefail
cd "$(dirname "$0")/.."
C=fuzz/corpus
mkdir -p $C/{graph_bytes,graph_json,envelope,hdgp,cpu_plan_payload,ingestor_payload,kpack_archive,kernel_descriptor,plan_load,save_mutate_load_execute}
cp hipdnn-rs/tests/vectors/*.bin $C/graph_bytes/
cp hipdnn-rs/tests/vectors/*.json hipdnn-rs/tests/cases/*.json $C/graph_json/
cp hipdnn-rs/tests/cases/*.plan $C/envelope/
cp hipdnn-rs/tests/cases/*.plan hipdnn-rs/tests/cases/*.hdgp $C/plan_load/
cp hipdnn-rs/tests/cases/*.hdgp $C/hdgp/
cp engines/tests/samples/*.hkip $C/ingestor_payload/
cp kpack/tests/cases/*.kpack engines/kernels/packed/gfx90a/hipdnn_kernels-gfx90a.kpack $C/kpack_archive/
cat > $C/kernel_descriptor/kpack.json <<'JSON'
{"id":"11111111-2222-3333-4444-555555555555","name":"k","dispatch":"hipkernel.pointwise.dispatch.v1","archs":["gfx90a"],
 "kernel_source":{"kind":"kpack","library":"../k.kpack","toc_key":"k","symbol":"k","sha256":"0000000000000000000000000000000000000000000000000000000000000000","signature":[{"kind":"global_buffer","size":8,"offset":0,"name":"a"}]}}
JSON
HIPDNN_FUZZ_SEEDS="$PWD/$C" cargo test -q -p hipdnn --test damaged_and_hostile write_fuzz_seeds >/dev/null
