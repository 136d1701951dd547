"""Runs the norm_bwd launches that the Rust pack makes for every case of gpu_norm_bwd.rs (both
launches of a plan: phase 0, dx and the partials, then phase 1, the merge) through
engines/kernels/triton/norm_bwd.py under Triton's interpreter (TRITON_INTERPRET=1, no GPU) and
compares the outputs with the CPU reference engine's, with its backward tolerances
(|d| <= tol * (1 + |r|): f32 1e-4, f16 1e-2, bf16 2e-2).

Usage (what `triton_norm_bwd.rs`'s interpreter test does, with a temporary file):
  HIPDNN_NORM_BWD_LAUNCHES=/tmp/l.json cargo test -p hipdnn-engines --test triton_norm_bwd \
      -- --ignored dump
  python3 engines/tests/norm_bwd_support/interpret_launches.py /tmp/l.json
(needs triton==3.9.0 and numpy; e.g. a system python 3.11 with numpy and
PYTHONPATH=target/triton-venv/lib/python3.11/site-packages).

The JSON holds per case the kernel arguments of each launch by parameter name as the fake
device recorded them (pointers as tensor UIDs, 0 = null, the workspace marked), the grids and
entry, each tensor's layout and input bytes, and the reference outputs. Every pointer is passed
with x's element type, as in the compiled entry; a null pointer gets a dummy buffer the kernel
must not need; outputs and the workspace start as all-ones bytes (NaN in every float type), so
an unwritten element fails. What this checks: the pack's rows/columns/strides/flags/splits, its
two launches and argument names against the kernel, and the kernel's arithmetic against the
reference engine; not the device code generation.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from launch_replay import replay  # noqa: E402

import norm_bwd  # noqa: E402


def call(c, grid, kw):
    """The kernel with the spec variant's constant strides and the tile."""
    if c["spec"]:
        for n in norm_bwd.SPEC_ONE:
            assert n not in kw, n
            kw[n] = 1
    norm_bwd.KERNEL[grid](**kw, BLOCK_M=c["block_m"], BLOCK_N=c["block_n"])


if __name__ == "__main__":
    sys.exit(replay(sys.argv[1], call, lambda _name, c: c["dtype"]))
