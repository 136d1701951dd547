#!/usr/bin/env bash
# Packaging (issue 29): every library crate of the workspace packages (`cargo package`, the
# workspace's path dependencies resolved together) and each packaged .crate is at most 10 MB,
# crates.io's limit. --no-verify: the packaged sources are not rebuilt here (the workspace
# build above compiles the same files); `cargo package --workspace` without it is the full check.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf target/package
cargo package --workspace --no-verify --allow-dirty --exclude xtask --exclude hipdnn-bench -q
limit=10000000
fail=0
for c in target/package/*.crate; do
  size=$(stat -c %s "$c")
  echo "package: $(basename "$c") $size bytes"
  if [ "$size" -gt "$limit" ]; then echo "package: $(basename "$c") is over $limit bytes"; fail=1; fi
done
[ "$fail" = 0 ] && echo "package: ok ($(ls target/package/*.crate | wc -l) crates)"
exit "$fail"
