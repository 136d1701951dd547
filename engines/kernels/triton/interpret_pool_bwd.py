"""CPU check of pool_bwd.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no torch.

Usage: TRITON_INTERPRET=1 python interpret_pool_bwd.py   (needs triton==3.9.0 and numpy, as
interpret_pool_fwd.py)

Runs the kernel on small random cases (max pooling through an INT32 or INT64 index, average
pooling with padding included and excluded; overlapping 3x3 stride-2 windows with padding,
2x2 stride 2, a window larger than its stride in one axis only, 1-D, 2-D and 3-D; NCHW and
NHWC element orders; f32, f16 and bf16) against a float64 numpy transcription of the CPU
reference engine's `pool_backward` (each dy element scattered to its window), and prints the
largest error per case. Not part of the build.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pool_bwd  # noqa: E402
import triton.language as tl  # noqa: E402
from interpret_norm_fwd import Arr, from_bf16_bits, to_bf16_bits  # noqa: E402


def out_extent(i, w, pre, post, s):
    return (i + pre + post - w) // s + 1


def reference(dy, idx, mode, ind, win, stride, pre):
    """float64 dx (N, C, D, H, W) of dy (N, C, OD, OH, OW): the reference's scatter."""
    n, c, od_, oh_, ow_ = dy.shape
    dx = np.zeros((n, c) + tuple(ind))
    vol = win[0] * win[1] * win[2]
    for o in np.ndindex(od_, oh_, ow_):
        first = [o[a] * stride[a] - pre[a] for a in range(3)]
        lo = [min(max(-first[a], 0), win[a]) for a in range(3)]
        hi = [max(min(ind[a] - first[a], win[a]), lo[a]) for a in range(3)]
        g = dy[:, :, o[0], o[1], o[2]]
        if mode < 2:
            t = idx[:, :, o[0], o[1], o[2]]
            for ni in range(n):
                for ci in range(c):
                    tt = int(t[ni, ci])
                    tap = [tt // (win[1] * win[2]), tt // win[2] % win[1], tt % win[2]]
                    p = [first[a] + tap[a] for a in range(3)]
                    if all(0 <= p[a] < ind[a] for a in range(3)):
                        dx[ni, ci, p[0], p[1], p[2]] += g[ni, ci]
        else:
            cnt = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2])
            if cnt == 0:
                continue
            div = vol if mode == 2 else cnt
            sl = tuple(slice(first[a] + lo[a], first[a] + hi[a]) for a in range(3))
            dx[(slice(None), slice(None)) + sl] += (g / div)[:, :, None, None, None]
    return dx


def run_case(name, dims, win, stride, pre, post, mode, dt, nhwc=False, i64=False):
    rng = np.random.default_rng(sum(dims) * 31 + sum(win) + mode)
    n, c = dims[0], dims[1]
    sp = len(dims) - 2
    ind = [1] * (3 - sp) + list(dims[2:])
    w3 = [1] * (3 - sp) + list(win)
    s3 = [1] * (3 - sp) + list(stride)
    p3 = [0] * (3 - sp) + list(pre)
    q3 = [0] * (3 - sp) + list(post)
    outd = [out_extent(ind[a], w3[a], p3[a], q3[a], s3[a]) for a in range(3)]
    dy = rng.standard_normal((n, c) + tuple(outd))
    if dt == "f16":
        dy = dy.astype(np.float16).astype(np.float64)
    elif dt == "bf16":
        dy = from_bf16_bits(to_bf16_bits(dy.astype(np.float32))).astype(np.float64)
    vol = w3[0] * w3[1] * w3[2]
    idx = rng.integers(0, vol, size=(n, c) + tuple(outd))
    want = reference(dy, idx, mode, ind, w3, s3, p3)
    # Device layouts: dx and dy (N, C, D, H, W) or channels-last (N, D, H, W, C).
    perm = (0, 2, 3, 4, 1) if nhwc else (0, 1, 2, 3, 4)
    inv = np.argsort(perm)

    def store(a, kind):
        s = np.ascontiguousarray(a.transpose(perm))
        if kind == "f32":
            s = s.astype(np.float32)
        elif kind == "f16":
            s = s.astype(np.float16)
        elif kind == "bf16":
            s = to_bf16_bits(s.astype(np.float32))
        elif kind == "i32":
            s = s.astype(np.int32)
        else:
            s = s.astype(np.int64)
        el = s.itemsize
        strides = [s.strides[inv[a]] // el for a in range(5)]
        return s, strides

    dys, dyst = store(dy, dt)
    dxs, dxst = store(np.zeros((n, c) + tuple(ind)), dt)
    dxs.fill(0xFF if dt == "bf16" else np.nan)
    ist, ists = store(idx, "i64" if i64 else "i32")
    # Strides of extent-1 axes are 0, as the pack passes them.
    for st, ext in ((dxst, [n, c] + ind), (dyst, [n, c] + outd), (ists, [n, c] + outd)):
        for a in range(5):
            if ext[a] == 1:
                st[a] = 0
    ptr = (lambda a: Arr(a, dtype=tl.bfloat16)) if dt == "bf16" else Arr
    iarr = Arr(ist.view(np.int32))
    op = mode | (8 if i64 and mode < 2 else 0)
    total = n * c * ind[0] * ind[1] * ind[2]
    bm = 64
    pool_bwd.KERNEL[(-(-total // bm), 1, 1)](
        ptr(dxs), ptr(dys), iarr, n, c, *ind, *outd, *w3, *s3, *p3, *dxst, *dyst, *ists,
        1 if nhwc else 0, op, BLOCK_M=bm)
    got = dxs
    if dt == "bf16":
        got = from_bf16_bits(got)
    got = got.astype(np.float64).transpose(inv)
    tol = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}[dt]
    e = float((np.abs(got - want) / (1 + np.abs(want))).max())
    ok = e <= tol
    print(f"{'ok ' if ok else 'BAD'} {name}: dims {dims} win {win} stride {stride} pre {pre} "
          f"post {post} mode {mode} {dt}{' nhwc' if nhwc else ''}{' i64' if i64 else ''}: "
          f"max rel err {e:.2e}")
    return ok


def main():
    cases = [
        ("max 3x3 s2 p1", (2, 3, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1), 0, "f32"),
        ("max 3x3 s2 p1 nhwc i64", (2, 5, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1), 0, "f16", True,
         True),
        ("max zero-pad 2x2 s2", (1, 4, 6, 7), (2, 2), (2, 2), (0, 0), (0, 1), 1, "bf16"),
        ("avg include 3x3 s2 p1", (2, 3, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1), 2, "f32"),
        ("avg exclude 3x3 s2 p1 nhwc", (1, 6, 7, 9), (3, 3), (2, 2), (1, 1), (1, 1), 3, "f16",
         True),
        ("avg exclude 3x2 s1x2", (1, 2, 7, 9), (3, 2), (1, 2), (1, 0), (1, 1), 3, "bf16"),
        ("1-d max", (2, 3, 17), (4,), (3,), (1,), (2,), 0, "f32"),
        ("1-d avg include", (2, 3, 17), (4,), (3,), (1,), (2,), 2, "f16"),
        ("3-d max", (1, 2, 5, 6, 7), (2, 3, 2), (2, 2, 1), (0, 1, 1), (1, 1, 0), 0, "f32"),
        ("3-d avg exclude nhwc", (1, 4, 5, 6, 7), (2, 3, 2), (2, 2, 1), (0, 1, 1), (1, 1, 0), 3,
         "f32", True),
        ("global avg", (2, 8, 7, 7), (7, 7), (1, 1), (0, 0), (0, 0), 2, "f32", True),
    ]
    results = [run_case(*c) for c in cases]
    ok = all(results)
    print("all ok" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
