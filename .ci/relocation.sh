#!/usr/bin/env bash
# Relocation (issue 29): install to a temporary prefix (`xtask install --debug`), then run the C
# example (capi/tests/c/kernel_source.c, compiled against the installed header and .pc) and a
# Rust example (hipdnn-rs/examples/kernel_source.rs, copied to P/bin) with the checkout's
# engines/kernels/packed renamed away (restored on exit, failure included). Both must report
# the installed kernels P/lib/hipdnn/kernels, again after the whole prefix is moved; the Rust
# example copied outside any prefix must report the kernels compiled into it, and
# HIPDNN_KERNEL_DIR must win over both. No GPU needed: the location is logged before any GPU
# is looked for. Uses the debug build CI has already made (about a minute when warm).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
tmp="$(mktemp -d)"
tmp="$(cd "$tmp" && pwd -P)"
packed="$root/engines/kernels/packed"
away="$root/engines/kernels/packed.relocation-away"
restore() {
  if [ -d "$away" ] && [ ! -e "$packed" ]; then mv "$away" "$packed"; fi
  rm -rf "$tmp"
}
trap restore EXIT
trap 'exit 130' INT TERM # exit through the EXIT trap

cargo run -q -p xtask -- install --prefix "$tmp/p" --debug
cargo build -q -p hipdnn --example kernel_source
mkdir -p "$tmp/p/bin" "$tmp/elsewhere"
cp target/debug/examples/kernel_source "$tmp/p/bin/kernel_source"
cp target/debug/examples/kernel_source "$tmp/elsewhere/kernel_source"
export PKG_CONFIG_PATH="$tmp/p/lib/pkgconfig"
echo "pkg-config: $(pkg-config --modversion hipdnn_backend): $(pkg-config --cflags --libs hipdnn_backend)"
# shellcheck disable=SC2046 # pkg-config's flags are meant to split
cc -std=c11 -Wall -Werror -o "$tmp/p/bin/kernel_source_c" capi/tests/c/kernel_source.c \
  $(pkg-config --cflags --libs hipdnn_backend)

mv "$packed" "$away"
unset HIPDNN_KERNEL_DIR HIPDNN_RS_DEVICE
expect() { # expect <label> <wanted text> <command...>
  local label="$1" want="$2"; shift 2
  local out
  if ! out="$(cd / && "$@" 2>&1)"; then
    echo "$out"; echo "relocation: $label failed"; exit 1
  fi
  if ! grep -qF -- "$want" <<<"$out"; then
    echo "$out"; echo "relocation: $label did not report: $want"; exit 1
  fi
  echo "ok: $label: $(grep -F 'kernel source:' <<<"$out")"
}
for p in "$tmp/p" "$tmp/moved"; do
  if [ "$p" = "$tmp/moved" ]; then mv "$tmp/p" "$tmp/moved"; fi
  expect "C example in $p" "kernel source: $p/lib/hipdnn/kernels (installed, next to the library $p/lib/libhipdnn_backend.so." \
    env LD_LIBRARY_PATH="$p/lib" "$p/bin/kernel_source_c"
  expect "Rust example in $p" "kernel source: $p/lib/hipdnn/kernels (installed, next to the executable $p/bin/kernel_source)" \
    "$p/bin/kernel_source"
done
expect "Rust example outside a prefix" "kernel source: compiled into the binary (gfx90a, gfx942, gfx950, sm_80, sm_90)" \
  "$tmp/elsewhere/kernel_source"
expect "C example with HIPDNN_KERNEL_DIR" "kernel source: /nowhere (from HIPDNN_KERNEL_DIR)" \
  env LD_LIBRARY_PATH="$tmp/moved/lib" HIPDNN_KERNEL_DIR=/nowhere "$tmp/moved/bin/kernel_source_c"
ls "$tmp/moved/lib/hipdnn/kernels"
echo "relocation: ok"
