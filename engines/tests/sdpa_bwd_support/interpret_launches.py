"""Runs the sdpa_bwd launches that the Rust pack makes for the cases of gpu_sdpa_bwd.rs (both
launches of a plan: phase 0, delta and dq, then phase 1, dk and dv) through
engines/kernels/triton/sdpa_bwd.py under Triton's interpreter (TRITON_INTERPRET=1, no GPU) and
compares the gradients with the CPU reference engine's, with its backward tolerances
(|d| <= tol * (1 + |r|): f32 1e-4, f16 1e-2, bf16 2e-2).

Usage (what `triton_sdpa_bwd.rs`'s interpreter test does, with a temporary file):
  HIPDNN_SDPA_BWD_LAUNCHES=/tmp/l.json cargo test -p hipdnn-engines --test triton_sdpa_bwd \
      -- --ignored dump
  python3 engines/tests/sdpa_bwd_support/interpret_launches.py /tmp/l.json
(needs triton==3.9.0 and numpy, as interpret_norm_fwd.py). The replay and the comparison are
`engines/tests/launch_replay.py`'s.

The JSON holds per case the kernel arguments of each launch by parameter name as the fake
device recorded them (pointers as tensor UIDs, 0 = null, the workspace marked), the grids and
entry, each tensor's layout and input bytes, and the reference outputs. Each pointer is passed
with its compiled element type (`sdpa_bwd.pointer_type`: the statistics, scale and workspace
f32, the rest the entry's type); a null pointer gets a dummy buffer the kernel must not need;
outputs and the workspace start as all-ones bytes (NaN in every float type), so an unwritten
element fails. What this checks: the pack's shape, strides, band, scale and launches against
the kernel's parameters, and the kernel's arithmetic against the reference engine; not the
device code generation.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from launch_replay import replay  # noqa: E402

import sdpa_bwd  # noqa: E402


def call(c, grid, kw):
    """The entry's kernel with the spec variant's constant strides and the tile."""
    if c["spec"]:
        for n in sdpa_bwd.SPEC_ONE:
            assert n not in kw, n
            kw[n] = 1
    sdpa_bwd.KERNEL[grid](**kw, BLOCK_M=c["block_m"], BLOCK_N=c["block_n"],
                          BLOCK_K=c["block_k"], INPUT_PRECISION="ieee")


def ptr_type(name, c):
    """The statistics, scale and workspace pointers are f32, the mask bytes i8 (other mask
    types are read through a cast); the rest the entry's type."""
    t = sdpa_bwd.pointer_type(name, "x")
    return {"fp32": "f32", "i8": "i8"}.get(t, c["dtype"])


if __name__ == "__main__":
    sys.exit(replay(sys.argv[1], call, ptr_type))
