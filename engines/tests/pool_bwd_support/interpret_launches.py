"""Runs the pool_bwd launches that the Rust pack makes for the cases of gpu_pool_bwd.rs through
engines/kernels/triton/pool_bwd.py under Triton's interpreter (TRITON_INTERPRET=1, no GPU) and
compares dx with the CPU reference engine's (`engines/tests/launch_replay.py`: the replay, the
backward tolerances). The index pointer is INT32 (an INT64 index is read through a cast
pointer, as the compiled entry does); dx and dy have the entry's type.

Usage (what `triton_pool_bwd.rs`'s interpreter test does, with a temporary file):
  HIPDNN_POOL_BWD_LAUNCHES=/tmp/l.json cargo test -p hipdnn-engines --test triton_pool_bwd \
      -- --ignored dump
  python3 engines/tests/pool_bwd_support/interpret_launches.py /tmp/l.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from launch_replay import replay  # noqa: E402

import pool_bwd  # noqa: E402


def call(c, grid, kw):
    pool_bwd.KERNEL[grid](**kw, BLOCK_M=c["block_m"])


if __name__ == "__main__":
    sys.exit(replay(sys.argv[1], call, lambda n, c: "i32" if n == "i_ptr" else c["dtype"]))
