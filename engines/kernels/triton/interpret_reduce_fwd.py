"""CPU check of reduce_fwd.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no torch.

Usage: TRITON_INTERPRET=1 python interpret_reduce_fwd.py   (needs triton==3.9.0 and numpy; e.g.
`PYTHONPATH=target/triton-venv/lib/python3.11/site-packages python3 interpret_reduce_fwd.py`
with a system python 3.11 that has numpy)

Runs the kernel on random tensors viewed as (kept outer, kept inner, reduced outer, reduced
inner) groups with permuted (non-contiguous) layouts and dense ones, every op (the nine
reductions, softmax, log-softmax), every tile config of the family (so the one-chunk softmax
and the online two-pass softmax both run), f32/f16/bf16 x with x-typed or f32 y, against a
float64 numpy reference of the CPU reference engine's formulas. Prints the largest error per
case against its tolerance:
  sums (ADD, AVG, NORM1):   |d| <= 1e-6 * (1 + sum |x|) (AVG: divided by the count),
  NORM2:                     |d| <= 1e-6 * (1 + |r|),
  products:                  |d| <= 2e-7 * n * |r| + 1e-30,
  MIN, MAX, AMAX:            exact,
  softmax, log-softmax:      |d| <= 1e-5 * (1 + |r|),
plus, for 16-bit y, the output rounding: 2^-10 (f16) or 2^-7 (bf16) times (1 + |r|).
The interpreter runs programs one after the other on the host: it checks indexing, masking,
the chunk loops and the op/type handling, not the device code generation. Not part of the
build.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import reduce_fwd as rf  # noqa: E402
from interpret_norm_fwd import Arr, make, read  # noqa: E402

BF16 = "bf16"
ROUND = {"f32": 0.0, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}


def ptr(a, dt):
    """a (bytes of y) announced with x's element type dt."""
    if dt == BF16:
        return Arr(a.view(np.uint16), dtype=tl.bfloat16)
    return Arr(a.view(np.float16) if dt == "f16" else a.view(np.float32))


def reference(op, x):
    """float64 reference over the last axis of x (rows, n)."""
    n = x.shape[1]
    if op == rf.OP_ADD:
        return x.sum(1)
    if op == rf.OP_MUL:
        return x.prod(1)
    if op == rf.OP_MIN:
        return x.min(1)
    if op == rf.OP_MAX:
        return x.max(1)
    if op == rf.OP_AMAX:
        return np.abs(x).max(1)
    if op == rf.OP_AVG:
        return x.sum(1) / n
    if op == rf.OP_NORM1:
        return np.abs(x).sum(1)
    if op == rf.OP_NORM2:
        return np.sqrt((x * x).sum(1))
    if op == rf.OP_MUL_NO_ZEROS:
        return np.where(x == 0.0, 1.0, x).prod(1)
    m = x.max(1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(1, keepdims=True)
    if op == rf.OP_SOFTMAX:
        return e / s
    return (x - m) - np.log(s)


def tolerance(op, x, r, y_dt):
    n = x.shape[1]
    a = np.abs(x).sum(1)
    if op in (rf.OP_ADD, rf.OP_NORM1):
        t = 1e-6 * (1.0 + a)
    elif op == rf.OP_AVG:
        t = 1e-6 * (1.0 + a / n)
    elif op == rf.OP_NORM2:
        t = 1e-6 * (1.0 + np.abs(r))
    elif op in (rf.OP_MUL, rf.OP_MUL_NO_ZEROS):
        t = 2e-7 * n * np.abs(r) + 1e-30
    elif op in (rf.OP_MIN, rf.OP_MAX, rf.OP_AMAX):
        t = np.zeros_like(r)
    else:
        t = 1e-5 * (1.0 + np.abs(r))
    if t.ndim == 1 and r.ndim == 2:
        t = t[:, None]
    return t + ROUND[y_dt] * (1.0 + np.abs(r))


def run_case(shape, perm, op, dt, y_f32, cfg, seed):
    """shape = (ko, ki, ro, ri) logical extents; perm: the storage order of the four axes
    (outermost first)."""
    rng = np.random.default_rng(seed)
    bm, bn = cfg[0], cfg[1]
    ko, ki, ro, ri = shape
    if op in (rf.OP_MUL, rf.OP_MUL_NO_ZEROS):
        xv = rng.uniform(0.9, 1.1, shape)
        if op == rf.OP_MUL_NO_ZEROS:
            xv = np.where(rng.random(shape) < 0.2, 0.0, xv)
    else:
        xv = rng.standard_normal(shape) * 3.0 + 0.5
    x_dev, x64 = make(xv, dt)
    # Store x with the axes in `perm` order: element (a, b, c, d) at sum idx * stride.
    stored = np.ascontiguousarray(np.transpose(x_dev, perm))
    st_elems = [s // stored.itemsize for s in stored.strides]
    strides = [0] * 4
    for pos, axis in enumerate(perm):
        strides[axis] = st_elems[pos]
    sxo, sxi, sxro, sxri = strides
    y_dt = "f32" if (y_f32 or dt == "f32") else dt
    ydt_np = np.uint16 if y_dt == BF16 else (np.float32 if y_dt == "f32" else np.float16)
    soft = op >= rf.OP_SOFTMAX
    if soft:
        # y in the same permuted layout as x.
        y = np.full(stored.size * np.dtype(ydt_np).itemsize, 0xFF, np.uint8).view(ydt_np)
        y = y.reshape(stored.shape)
        ys = strides
        syo, syi, syro, syri = ys
    else:
        y = np.full(ko * ki * np.dtype(ydt_np).itemsize, 0xFF, np.uint8).view(ydt_np)
        y = y.reshape(ko, ki)
        syo, syi, syro, syri = ki, 1, 0, 0
    rows = ko * ki
    code = op | (rf.OP_Y_F32 if y_dt == "f32" and dt != "f32" else 0)
    y_bytes = y.view(np.uint8).reshape(-1)
    grid = (triton.cdiv(rows, bm),)
    xarr = ptr(stored.view(np.uint8).reshape(-1), dt)
    rf.KERNEL[grid](xarr, ptr(y_bytes, dt), rows, ki, ro, ri, sxo, sxi, sxro, sxri,
                    syo, syi, syro, syri, 0, code, BLOCK_M=bm, BLOCK_N=bn)
    x2 = x64.reshape(rows, ro * ri)
    want = reference(op, x2)
    if soft:
        got = read(np.transpose(y.view(ydt_np), np.argsort(perm)), y_dt).reshape(rows, ro * ri)
    else:
        got = read(y.view(ydt_np), y_dt).reshape(rows)
    tol = tolerance(op, x2, want, y_dt)
    err = np.abs(got - want)
    ok = bool(np.all(err <= tol))
    worst = float(np.max(err / np.maximum(tol, 1e-300))) if tol.size else 0.0
    print(f"{'ok ' if ok else 'BAD'} op={op:2} {dt:4} y={y_dt:4} shape={shape} perm={perm} "
          f"tile={bm}x{bn:<5} max|d|={err.max():.2e} worst d/tol={worst:.2f}")
    return ok


def main():
    cfgs = rf.configs("cuda", "f32")["generic"]
    ops = [rf.OP_ADD, rf.OP_MUL, rf.OP_MIN, rf.OP_MAX, rf.OP_AMAX, rf.OP_AVG, rf.OP_NORM1,
           rf.OP_NORM2, rf.OP_MUL_NO_ZEROS, rf.OP_SOFTMAX, rf.OP_LOG_SOFTMAX]
    shapes = [((1, 3, 1, 7), (0, 1, 2, 3)), ((2, 3, 1, 130), (0, 1, 2, 3)),
              ((3, 1, 1, 1000), (0, 1, 2, 3)), ((1, 2, 3, 5), (2, 0, 3, 1)),
              ((2, 5, 1, 33), (3, 0, 1, 2)), ((1, 1, 1, 4097), (0, 1, 2, 3)),
              ((2, 2, 3, 700), (0, 2, 1, 3))]
    cases = []
    seed = 0
    for shape, perm in shapes:
        for op in ops:
            seed += 1
            dt = ["f32", "f16", "bf16"][seed % 3]
            cfg = cfgs[seed % len(cfgs)]
            if op >= rf.OP_SOFTMAX:
                # Both softmax paths on every shape: the largest chunk and the smallest.
                for c in (cfgs[0], cfgs[-1]):
                    cases.append((shape, perm, op, dt, seed % 2 == 0, c, seed))
            else:
                cases.append((shape, perm, op, dt, seed % 2 == 0, cfg, seed))
    ok = all([run_case(*c) for c in cases])
    print("all ok" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
