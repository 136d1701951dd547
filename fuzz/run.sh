#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECS seconds (first argument, default 30), JOBS (default 2)
# at a time, from the committed seeds in fuzz/corpus/<target>/ (new inputs go to
# fuzz/runs/<target>/, crash inputs to fuzz/artifacts/<target>/, logs to fuzz/logs/).
# Builds once (`cargo +nightly fuzz build -O`), then runs the built binaries. Prints one line
# per target: executions, coverage (cov), features (ft), corpus size, result. Exits 1 if any
# target found a crash. Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -uo pipefail
cd "$(dirname "$0")"
SECS="${1:-30}"
JOBS="${JOBS:-2}"
cargo +nightly fuzz build -O || exit 1
BIN="$PWD/target/x86_64-unknown-linux-gnu/release"
TARGETS=$(cargo +nightly fuzz list)
mkdir -p runs logs artifacts
run_one() {
  t="$1"
  mkdir -p "runs/$t" "corpus/$t" "artifacts/$t"
  "$BIN/$t" "runs/$t" "corpus/$t" -max_total_time="$SECS" -rss_limit_mb=4096 -timeout=20 \
    -print_final_stats=1 -artifact_prefix="artifacts/$t/" > "logs/$t.log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "logs/$t.log" | tail -n 1 | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' "logs/$t.log" | tail -n 1 | grep -o '[0-9]*')
  corp=$(grep -o 'corp: [0-9]*' "logs/$t.log" | tail -n 1 | grep -o '[0-9]*')
  if [ $rc -eq 0 ]; then res=clean; else res="CRASH (rc $rc, see fuzz/logs/$t.log)"; fi
  printf '%-26s %4ss  execs %-9s cov %-6s ft %-6s corpus %-5s %s\n' \
    "$t" "$SECS" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$res"
  [ $rc -eq 0 ]
}
export -f run_one
export SECS BIN
printf '%s\n' $TARGETS | xargs -P "$JOBS" -I{} bash -c 'run_one {}'
