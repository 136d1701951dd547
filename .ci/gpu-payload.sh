#!/usr/bin/env bash
# Builds what a GPU machine without a Rust toolchain needs to run the GPU tests and the bench:
# the release test binaries of the named GPU tests (engines and SDK crates) and hipdnn-bench,
# stripped, in target/gpu-payload/pay.tgz (~13 MB; with the checkout it must stay under the 64 MiB a device
# call carries), plus .ci/gpu-run.sh's copy beside it.
# Carry `target/gpu-payload` to the machine (the checkout travels with it: the kernel
# archives under engines/kernels/packed are read through HIPDNN_KERNEL_DIR) and run
#   bash target/gpu-payload/gpu-run.sh
# there. TESTS (engines tests) and SDK_TESTS (hipdnn tests) override the lists below.
set -euo pipefail
cd "$(dirname "$0")/.."
tests="${TESTS:-gpu_sdpa_bwd gpu_pool_bwd gpu_conv_grouped gpu_sdpa gpu_determinism}"
sdk_tests="${SDK_TESTS:-gpu_ingestor}"
out=target/gpu-payload
rm -rf "$out" && mkdir -p "$out/bin"
log=$(mktemp)
args=()
for t in $tests; do args+=(--test "$t"); done
cargo test --release -p hipdnn-engines --no-default-features "${args[@]}" --no-run 2>&1 | tee "$log"
args=()
for t in $sdk_tests; do args+=(--test "$t"); done
cargo test --release -p hipdnn --no-default-features "${args[@]}" --no-run 2>&1 | tee -a "$log"
cargo build --release -p hipdnn-bench --no-default-features
grep -o 'Executable tests/[a-z0-9_]*\.rs ([^)]*)' "$log" | sed 's/.*(\(.*\))/\1/' | while read -r f; do
  cp "$f" "$out/bin/$(basename "$f" | sed 's/-[0-9a-f]*$//')"
done
cp target/release/hipdnn-bench "$out/bin/"
strip "$out"/bin/*
tar czf "$out/pay.tgz" -C "$out" bin && rm -rf "$out/bin"
cp .ci/gpu-run.sh "$out/"
ls -la "$out"
