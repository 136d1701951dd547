"""Replays the launches a Rust pack recorded on the fake device (a test's JSON: per case the
kernel arguments of each launch by parameter name, pointers as tensor UIDs, 0 = null, the
workspace marked; the grids; each tensor's layout and input bytes; the CPU reference engine's
outputs) through a Triton kernel under the interpreter (TRITON_INTERPRET=1, no GPU), and
compares the outputs with the reference: |d| <= tol * (1 + |r|), tol f32 1e-4, f16 1e-2, bf16
2e-2 (the reference engine's backward tolerances). Shared by the families'
`*_support/interpret_launches.py` scripts, which say how their kernel is called.

Outputs and the workspace start as all-ones bytes (NaN in every float type), so an unwritten
element fails; a null pointer gets a dummy buffer the kernel must not need.
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "kernels", "triton"))
import triton.language as tl  # noqa: E402

from interpret_norm_fwd import Arr, from_bf16_bits  # noqa: E402

TOL = {"f32": 1e-4, "f16": 1e-2, "bf16": 2e-2}


def as_ptr(buf, dt):
    """A byte buffer announced with element type `dt` ('f32', 'f16', 'bf16', 'i32', 'i8')."""
    if dt == "i8":
        return Arr(buf.view(np.int8))
    if dt == "i32":
        return Arr(buf.view(np.int32))
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


def replay(path, call, ptr_type):
    """Runs every case of the JSON at `path`: each launch's arguments by name (`ptr_type(name,
    case)` gives each pointer's element type), handed to `call(case, grid, kwargs)`, which
    adds the constexprs and launches the kernel; then compares the outputs. Prints one summary
    line (`<n> cases, <b> outputs out of tolerance; …`) and a `BAD` line per miss; returns the
    process exit status (1 when any output misses)."""
    cases = json.load(open(path))
    worst, bad = {}, 0
    for ci, c in enumerate(cases):
        bufs = {}
        for u, t in c["tensors"].items():
            if "input_hex" in t:
                bufs[int(u)] = np.frombuffer(bytes.fromhex(t["input_hex"]), np.uint8).copy()
            else:
                bufs[int(u)] = np.full(t["bytes_len"], 0xFF, dtype=np.uint8)
        ws = np.full(max(c["workspace"], 4), 0xFF, dtype=np.uint8)
        dummy = np.zeros(64, dtype=np.uint8)
        for launch in c["launches"]:
            kw = {}
            for n, a in launch["args"].items():
                if n in ("global_scratch", "profile_scratch"):
                    continue
                if "ws" in a:
                    kw[n] = as_ptr(ws, ptr_type(n, c))
                elif "ptr" in a:
                    kw[n] = as_ptr(bufs[a["ptr"]] if a["ptr"] else dummy, ptr_type(n, c))
                else:
                    kw[n] = a["i32"]
            call(c, tuple(launch["grid"]), kw)
        for u in c["outputs"]:
            t = c["tensors"][str(u)]
            got = decode(bufs[u], t)
            want = np.array(c["reference"][str(u)], dtype=np.float64)
            d = np.abs(got - want) / (1.0 + np.abs(want))
            ok = bool(np.all(d <= TOL[t["dt"]]))
            m = float(d.max()) if ok else float("inf")
            if not ok:
                bad += 1
                print(f"BAD case {ci} output uid {u} ({t['dt']}): {c['case']} "
                      f"max {np.nanmax(d) if np.any(np.isfinite(d)) else 'nan'}")
            worst[t["dt"]] = max(worst.get(t["dt"], 0.0), m)
    print(f"{len(cases)} cases, {bad} outputs out of tolerance; worst |d|/(1+|r|) per output "
          f"type: " + ", ".join(f"{k} {v:.2e}" for k, v in sorted(worst.items())))
    return 1 if bad else 0
