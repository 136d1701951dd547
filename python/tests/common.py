"""Shared helpers of the hipdnn_rs tests: the deterministic inputs and the Rust reference.

The Rust side is python/examples/rust_reference.rs, run through `cargo run` (or the binary
HIPDNN_PY_RUST_REFERENCE names): it builds the same graphs with the SDK directly.
"""

import hashlib
import os
import pathlib
import subprocess

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]


def values(n, uid):
    """Element i of the input with UID uid: ((i*7919 + uid*104729) mod 2003 - 1001) / 1000 in f32."""
    i = np.arange(n, dtype=np.int64)
    return ((i * 7919 + uid * 104729) % 2003 - 1001).astype(np.float32) / np.float32(1000)


def input_array(t):
    """The deterministic array for graph tensor t (the Rust reference's rule per data type)."""
    n = int(np.prod(t.dims))
    dt = t.context_data_type
    v = values(n, t.uid)
    if dt == "FLOAT":
        a = v
    elif dt == "INT32":
        a = (v * np.float32(1000)).astype(np.int32) % 4
    elif dt == "BOOLEAN":
        a = np.arange(n) % 3 == 0
    else:
        raise AssertionError(f"no input rule for {dt}")
    return a.reshape(t.dims)


def sha(a):
    """sha256 of an array's bytes in its (row-major) memory order."""
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def rust_reference(*args):
    """Runs the Rust reference with args; returns its stdout."""
    exe = os.environ.get("HIPDNN_PY_RUST_REFERENCE")
    cmd = [exe] if exe else ["cargo", "run", "--quiet", "-p", "hipdnn-py", "--example", "rust_reference", "--"]
    r = subprocess.run(cmd + list(args), cwd=ROOT, capture_output=True, text=True, check=False)
    assert r.returncode == 0, f"{cmd + list(args)} failed:\n{r.stderr}"
    return r.stdout
