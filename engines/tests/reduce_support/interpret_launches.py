"""Runs the reduce_fwd launches that the Rust pack makes for every case of gpu_reduce.rs through
engines/kernels/triton/reduce_fwd.py under Triton's interpreter (TRITON_INTERPRET=1, no GPU)
and compares y with the CPU reference engine's, element by element, with the tolerances
gpu_reduce.rs uses (the dump carries them).

Usage:
  HIPDNN_REDUCE_LAUNCHES=/tmp/r.json cargo test -p hipdnn-engines --test triton_reduce -- --ignored
  python3 engines/tests/reduce_support/interpret_launches.py /tmp/r.json
(needs triton==3.9.0 and numpy; e.g. a system python 3.11 with numpy and
PYTHONPATH=target/triton-venv/lib/python3.11/site-packages).

The JSON holds per case the kernel arguments by parameter name as the fake device recorded
them (pointers as tensor UIDs), the grid and entry, x's and y's layouts, x's bytes, the
reference y and the tolerances. Both pointers are passed with x's element type, as in the
compiled entry; y starts as all-ones bytes (NaN in every float type), so an unwritten element
fails. What this checks: the pack's groups/strides/op code and argument names against the
kernel, and the kernel's arithmetic against the reference engine; not the device code
generation. With HIPDNN_INTERPRET_OUTPUTS set, the decoded y of every case is also written to
that JSON file as {case index: {"2": values}} (triton_batch_rows.rs compares batched rows with
them).
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "kernels", "triton"))

import reduce_fwd  # noqa: E402
from interpret_norm_fwd import Arr, from_bf16_bits  # noqa: E402
import triton.language as tl  # noqa: E402


def as_ptr(buf, dt):
    """A byte buffer announced with the entry's element type."""
    if dt == "f32":
        return Arr(buf.view(np.float32))
    if dt == "f16":
        return Arr(buf.view(np.float16))
    return Arr(buf.view(np.uint16), dtype=tl.bfloat16)


def decode(buf, t):
    """Dense row-major float64 values of a strided tensor."""
    if t["dt"] == "f32":
        v = buf.view(np.float32).astype(np.float64)
    elif t["dt"] == "f16":
        v = buf.view(np.float16).astype(np.float64)
    else:
        v = from_bf16_bits(buf.view(np.uint16)).astype(np.float64)
    dims, st = t["dims"], t["strides"]
    flat = np.arange(int(np.prod(dims)), dtype=np.int64)
    idx = np.zeros_like(flat)
    for d in reversed(range(len(dims))):
        idx += (flat % dims[d]) * st[d]
        flat //= dims[d]
    return v[idx]


def main():
    cases = json.load(open(sys.argv[1]))
    bad, worst = 0, 0.0
    dump = {}
    for ci, c in enumerate(cases):
        x = np.frombuffer(bytes.fromhex(c["tensors"]["1"]["input_hex"]), np.uint8).copy()
        y = np.full(c["tensors"]["2"]["bytes_len"], 0xFF, dtype=np.uint8)
        bufs = {1: x, 2: y}
        kw = {}
        for n, a in c["args"].items():
            if n in ("global_scratch", "profile_scratch"):
                continue
            kw[n] = as_ptr(bufs[a["ptr"]], c["dtype"]) if "ptr" in a else a["i32"]
        if c["spec"]:
            for n in reduce_fwd.SPEC_ONE:
                assert n not in kw, n
                kw[n] = 1
        reduce_fwd.KERNEL[tuple(c["grid"])](**kw, BLOCK_M=c["block_m"], BLOCK_N=c["block_n"])
        got = decode(y, c["tensors"]["2"])
        dump[str(ci)] = {"2": got.tolist()}
        want = np.array(c["reference"], dtype=np.float64)
        tol = np.array(c["tolerance"], dtype=np.float64)
        d = np.abs(got - want)
        ok = bool(np.all(d <= tol))
        if not ok:
            bad += 1
            i = int(np.argmax(np.where(np.isnan(d), np.inf, d - tol)))
            print(f"BAD case {ci}: {c['case']}: element {i}: got {got[i]}, want {want[i]}, "
                  f"tol {tol[i]:.3e}")
        else:
            pos = tol > 0
            if pos.any():
                worst = max(worst, float((d[pos] / tol[pos]).max()))
    print(f"{len(cases)} cases, {bad} out of tolerance; worst |d|/tol {worst:.3f}")
    if os.environ.get("HIPDNN_INTERPRET_OUTPUTS"):
        with open(os.environ["HIPDNN_INTERPRET_OUTPUTS"], "w") as f:
            json.dump(dump, f)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
