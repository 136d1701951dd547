#!/usr/bin/env bash
# Rebuilds engines/kernels into kpack archives + kernel descriptors and fails on any byte
# difference from the committed engines/kernels/packed/, then checks every code object
# structurally (llvm-readelf-19 on HSACO: AMDGPU HSA ELF, ABI v3, e_flags of the arch, symbol
# and .kd, metadata args == descriptor signature; PTX .version/.target/.entry; cubin EM_CUDA;
# SHA-256 == descriptor). Skipped when clang-19 is absent. gfx950 (clang-22) and cubins
# (ptxas from the PyPI wheel nvidia-cuda-nvcc-cu12) are carried over from the committed
# archives when their tools are missing; set PTXAS=/path/to/ptxas to use a specific one.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang++-19 >/dev/null 2>&1 || ! command -v ld.lld-19 >/dev/null 2>&1 \
   || ! command -v llvm-readelf-19 >/dev/null 2>&1; then
  echo "skipped: clang-19/lld-19/llvm-19 not installed; kernel archives not rebuilt"
  exit 0
fi
cargo run -q -p xtask -- pack-kernels --check
