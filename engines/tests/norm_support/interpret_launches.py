"""Runs the norm_fwd launches that the Rust pack makes for every case of gpu_norms.rs through
engines/kernels/triton/norm_fwd.py under Triton's interpreter (TRITON_INTERPRET=1, no GPU) and
compares the outputs with the CPU reference engine's, with gpu_norms.rs's tolerances
(|d| <= tol * (1 + |r|): f32 1e-5, f16 1e-2, bf16 2e-2).

Usage:
  HIPDNN_NORM_LAUNCHES=/tmp/l.json cargo test -p hipdnn-engines --test triton_norm -- --ignored
  python3 engines/tests/norm_support/interpret_launches.py /tmp/l.json
(needs triton==3.9.0 and numpy; the pack venv has no numpy, so e.g. a system python 3.11 with
numpy and PYTHONPATH=target/triton-venv/lib/python3.11/site-packages).

The JSON holds per case the kernel arguments by parameter name as the fake device recorded
them (pointers as tensor UIDs, 0 = null), the grid and entry, each tensor's layout and input
bytes, and the reference outputs. Every pointer is passed with x's element type, as in the
compiled entry; a null pointer gets a dummy buffer the kernel must not need (outputs start as
all-ones bytes, NaN in every float type, so an unwritten element fails). With
HIPDNN_INTERPRET_OUTPUTS set, the decoded outputs are also written to that JSON file as
{case index: {uid: values}} (triton_batch_rows.rs compares batched rows with them). What this checks: the
pack's rows/columns/strides/flags/epsilon and argument names against the kernel, and the
kernel's arithmetic against the reference engine; not the device code generation.
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "kernels", "triton"))
import triton.language as tl  # noqa: E402

import norm_fwd  # noqa: E402
from interpret_norm_fwd import Arr, from_bf16_bits  # noqa: E402

TOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 2e-2}


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
    worst, bad = {}, 0
    dump = {}
    for ci, c in enumerate(cases):
        bufs = {}
        for u, t in c["tensors"].items():
            if "input_hex" in t:
                bufs[int(u)] = np.frombuffer(bytes.fromhex(t["input_hex"]), np.uint8).copy()
            else:
                bufs[int(u)] = np.full(t["bytes_len"], 0xFF, dtype=np.uint8)
        dummy = np.zeros(64, dtype=np.uint8)
        kw = {}
        for n, a in c["args"].items():
            if n in ("global_scratch", "profile_scratch"):
                continue
            if "ptr" in a:
                kw[n] = as_ptr(bufs[a["ptr"]] if a["ptr"] else dummy, c["dtype"])
            elif "i32" in a:
                kw[n] = a["i32"]
            else:
                kw[n] = a["f32"]
        if c["spec"]:
            for n in norm_fwd.SPEC_ONE:
                assert n not in kw, n
                kw[n] = 1
        norm_fwd.KERNEL[tuple(c["grid"])](**kw, BLOCK_M=c["block_m"], BLOCK_N=c["block_n"])
        for u in c["outputs"]:
            t = c["tensors"][str(u)]
            got = decode(bufs[u], t)
            dump.setdefault(str(ci), {})[str(u)] = got.tolist()
            want = np.array(c["reference"][str(u)], dtype=np.float64)
            d = np.abs(got - want) / (1.0 + np.abs(want))
            ok = bool(np.all(d <= TOL[t["dt"]]))
            m = float(d.max()) if ok else float("inf")
            if not ok:
                bad += 1
                print(f"BAD case {ci} output uid {u} ({t['dt']}): {c['case']}")
            worst[t["dt"]] = max(worst.get(t["dt"], 0.0), m)
    print(f"{len(cases)} cases, {bad} outputs out of tolerance; worst |d|/(1+|r|) per output "
          f"type: " + ", ".join(f"{k} {v:.2e}" for k, v in sorted(worst.items())))
    if os.environ.get("HIPDNN_INTERPRET_OUTPUTS"):
        with open(os.environ["HIPDNN_INTERPRET_OUTPUTS"], "w") as f:
            json.dump(dump, f)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
