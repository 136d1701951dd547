#!/usr/bin/env bash
# Runs on a GPU machine what .ci/gpu-payload.sh built: each test binary (one thread, output
# kept), the determinism sweep (HIPDNN_DETERMINISM_RUNS, default 20) and the bench sections
# ONLY (default sdpabwd,poolbwd,shapes,sdpa) into $OUT (default target/gpu-out). Prints each
# test's summary lines and the bench tables. NODET=1 skips the sweep; BT is the bench's time
# limit in seconds (default 300).
set -u
cd "$(dirname "$0")/../.."
here=target/gpu-payload
OUT="${OUT:-target/gpu-out}"
mkdir -p "$OUT"
tar xzf "$here/pay.tgz" -C "$here"
B=$PWD/$here/bin
export HIPDNN_KERNEL_DIR=$PWD/engines/kernels/packed
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || rocm-smi 2>/dev/null | head -5
t0=$(date +%s)
el() { echo "($(( $(date +%s) - t0 )) s)"; }
for t in $(ls "$B" | grep -v -e hipdnn-bench -e gpu_determinism); do
  echo "== $t $(el)"
  timeout 150 "$B/$t" --test-threads=1 --nocapture > "$OUT/$t.log" 2>&1; echo "rc=$?"
  grep -E "test result|FAILED|panicked|skipped|worst|rows bitwise,|chains served" "$OUT/$t.log" | head -8
done
if [ -z "${NODET:-}" ] && [ -x "$B/gpu_determinism" ]; then
  echo "== gpu_determinism $(el)"
  HIPDNN_DETERMINISM_RUNS=${HIPDNN_DETERMINISM_RUNS:-20} timeout 200 "$B/gpu_determinism" \
    --test-threads=1 --nocapture > "$OUT/gpu_determinism.log" 2>&1; echo "rc=$?"
  grep -E "test result|differ|panicked" "$OUT/gpu_determinism.log" | tail -4
fi
echo "== bench $(el)"
timeout "${BT:-300}" "$B/hipdnn-bench" triton --only "${ONLY:-sdpabwd,poolbwd,shapes,sdpa}" \
  --out "$OUT/bench.json" > "$OUT/bench.log" 2>&1; echo "rc=$?"
grep -E "^\| " "$OUT/bench.log" | cut -c1-220 | head -120
tail -3 "$OUT/bench.log"
echo "== end $(el)"
