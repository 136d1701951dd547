"""Runs the bn_bwd launches that the Rust pack makes for every case of gpu_bn_bwd.rs (both
launches of a plan: phase 0, the partials, then phase 1, dscale/dbias and dx) through
engines/kernels/triton/bn_bwd.py (the entry's kernel: _cl, _cf or generic) under Triton's
interpreter (TRITON_INTERPRET=1, no GPU) and
compares the outputs with the CPU reference engine's, with its backward tolerances
(|d| <= tol * (1 + |r|): f32 1e-4, f16 1e-2, bf16 2e-2).

Usage (what `triton_bn_bwd.rs`'s interpreter test does, with a temporary file):
  HIPDNN_BN_BWD_LAUNCHES=/tmp/l.json cargo test -p hipdnn-engines --test triton_bn_bwd \
      -- --ignored dump
  python3 engines/tests/bn_bwd_support/interpret_launches.py /tmp/l.json
(needs triton==3.9.0 and numpy; e.g. a system python 3.11 with numpy and
PYTHONPATH=target/triton-venv/lib/python3.11/site-packages).

The JSON holds per case the kernel arguments of each launch by parameter name as the fake
device recorded them (pointers as tensor UIDs, 0 = null, the workspace marked), the grids and
entry, each tensor's layout and input bytes, and the reference outputs. Every pointer is passed
with x's element type, as in the compiled entry (the workspace as f32); a null pointer gets a dummy buffer the kernel
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

import bn_bwd  # noqa: E402


def call(c, grid, kw):
    """The entry's kernel (_cl, _cf or generic) with its variant's constant strides."""
    variant = ["generic", "spec", "nchw"][c["variant"]]
    for n in bn_bwd.HINTS.get(variant, ([], []))[1]:
        assert n not in kw, n
        kw[n] = 1
    bn_bwd.kernel_for(variant)[grid](**kw, BLOCK_M=c["block_m"], BLOCK_N=c["block_n"])


if __name__ == "__main__":
    sys.exit(replay(sys.argv[1], call, lambda n, c: "f32" if n == "ws_ptr" else c["dtype"]))
