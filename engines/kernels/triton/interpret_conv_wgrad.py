"""CPU check of conv_wgrad.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no torch.

Usage: TRITON_INTERPRET=1 python interpret_conv_wgrad.py   (needs triton==3.9.0 and numpy)

Runs the kernel on small random cases (NCHW/NHWC, KCRS/KRSC, padding, stride, dilation, groups,
sizes that are not multiples of 16, split 1 and split > 1) against a numpy loop reference, f32
and f16, and checks that a second launch on the same (dirty) workspace gives identical bits.
The interpreter runs programs one after the other, so it checks indexing, masking and the
split/counter protocol's arithmetic, not the GPU memory ordering. Not part of the build.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv_wgrad  # noqa: E402


class Arr:
    """The few tensor methods the interpreter calls, over a numpy array (shared memory)."""

    def __init__(self, a):
        self.a = a
        self.dtype = a.dtype

    def data_ptr(self):
        return self.a.ctypes.data

    def untyped_storage(self):
        return self

    def cpu(self):
        return self

    def new_empty(self, *_a, **_k):
        return self

    def set_(self, *_a):
        return self

    def storage_offset(self):
        return 0

    def size(self):
        return self.a.shape

    def stride(self):
        return self.a.strides

    def copy_(self, _other):
        return self


def reference(dy, x, groups, pad, stride, dil, R, S):
    N, K, P, Q = dy.shape
    _, C, H, W = x.shape
    cg, kg = C // groups, K // groups
    dw = np.zeros((K, cg, R, S), dtype=np.float64)
    for k in range(K):
        g = k // kg
        for c in range(cg):
            for r in range(R):
                for s in range(S):
                    acc = 0.0
                    for p in range(P):
                        ih = p * stride[0] - pad[0] + r * dil[0]
                        if ih < 0 or ih >= H:
                            continue
                        for q in range(Q):
                            iw = q * stride[1] - pad[1] + s * dil[1]
                            if iw < 0 or iw >= W:
                                continue
                            acc += float(np.dot(dy[:, k, p, q].astype(np.float64),
                                                x[:, g * cg + c, ih, iw].astype(np.float64)))
                    dw[k, c, r, s] = acc
    return dw


def run_case(N, C, H, W, K, R, S, pad, stride, dil, groups, nhwc, krsc, split, dtype, cfg):
    rng = np.random.default_rng(N * 1000 + C * 10 + K)
    P = (H + 2 * pad[0] - dil[0] * (R - 1) - 1) // stride[0] + 1
    Q = (W + 2 * pad[1] - dil[1] * (S - 1) - 1) // stride[1] + 1
    cg, kg = C // groups, K // groups
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    dy = rng.standard_normal((N, K, P, Q)).astype(dtype)
    # Physical layouts: channels-last copies viewed back as NCHW.
    if nhwc:
        xs = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        ys = np.ascontiguousarray(dy.transpose(0, 2, 3, 1))
        xst = (H * W * C, 1, W * C, C)
        yst = (P * Q * K, 1, Q * K, K)
    else:
        xs, ys = np.ascontiguousarray(x), np.ascontiguousarray(dy)
        xst = (C * H * W, H * W, W, 1)
        yst = (K * P * Q, P * Q, Q, 1)
    if krsc:
        dws = np.zeros((K, R, S, cg), dtype=dtype)
        wst = (R * S * cg, 1, S * cg, cg)
    else:
        dws = np.zeros((K, cg, R, S), dtype=dtype)
        wst = (cg * R * S, R * S, S, 1)
    bm, bn, bk, gm, _w, _s = cfg
    tiles = -(-kg // bm) * -(-(R * S * cg) // bn)
    ctr = -(-(tiles * groups) // 64) * 64
    ws = np.full(ctr + tiles * groups * split * bm * bn, 7.0, dtype=np.float32)
    ws[:ctr] = 0.0  # the launcher zeroes the counter region (0.0f is int 0)
    args = [Arr(ys), Arr(xs), Arr(dws), Arr(ws), N, C, H, W, K, P, Q, R, S, pad[0], pad[1],
            stride[0], stride[1], dil[0], dil[1], groups, split, *yst, *xst, *wst]
    grid = (tiles, split, groups)
    conv_wgrad.KERNEL[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
                            INPUT_PRECISION="ieee")
    first = dws.copy()
    assert not ws[:ctr].view(np.int32).any(), "counters not reset"
    conv_wgrad.KERNEL[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
                            INPUT_PRECISION="ieee")
    assert first.tobytes() == dws.tobytes(), "second launch differs"
    got = first.transpose(0, 3, 1, 2) if krsc else first
    want = reference(dy, x, groups, pad, stride, dil, R, S)
    err = np.abs(got.astype(np.float64) - want).max()
    tol = (2e-3 if dtype == np.float16 else 1e-4) * max(1.0, np.abs(want).max())
    ok = err <= tol
    print(f"{'ok ' if ok else 'BAD'} N{N} C{C} {H}x{W} K{K} {R}x{S} pad{pad} str{stride} dil{dil} "
          f"g{groups} nhwc={nhwc} krsc={krsc} split={split} {np.dtype(dtype).name} err={err:.2e}")
    return ok


def main():
    small = (16, 16, 16, 1, 4, 1)
    cases = [
        (2, 3, 5, 7, 5, 3, 3, (1, 1), (1, 1), (1, 1), 1, False, False, 1, np.float32),
        (2, 3, 5, 7, 5, 3, 3, (1, 1), (1, 1), (1, 1), 1, False, False, 3, np.float32),
        (1, 6, 7, 6, 4, 3, 2, (2, 0), (2, 3), (1, 2), 2, True, True, 4, np.float32),
        (3, 17, 6, 5, 19, 2, 3, (0, 1), (1, 2), (2, 1), 1, True, False, 5, np.float16),
        (2, 32, 6, 6, 32, 3, 3, (1, 1), (2, 2), (1, 1), 1, True, True, 2, np.float16),
        (1, 8, 4, 4, 12, 1, 1, (0, 0), (1, 1), (1, 1), 4, False, True, 7, np.float32),
    ]
    ok = all([run_case(*c, small) for c in cases])
    print("all ok" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
