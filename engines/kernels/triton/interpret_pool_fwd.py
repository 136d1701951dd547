"""CPU check of pool_fwd.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no torch.

Usage: TRITON_INTERPRET=1 python interpret_pool_fwd.py   (needs triton==3.9.0 and numpy; e.g.
`PYTHONPATH=target/triton-venv/lib/python3.11/site-packages python3 interpret_pool_fwd.py`
with a system python 3.11 that has numpy; engines/tests/triton_pool.rs runs it so)

Runs the kernel on random x of 1-D, 2-D and 3-D pooling graphs (odd extents, odd and
asymmetric paddings, strides below, equal to and above the window, a window wholly inside the
padding, batch 1), x and y in NCHW-like and NHWC-like layouts (also x and y in different
ones), both tile orders (cl 1 and 0), every mode (max with padding skipped / counted as zero,
average including / excluding padding), with and without the index (INT32 and INT64), f32,
f16 and bf16 x with x-typed or f32 y, every tile config of the family, and NaN / infinite
inputs for max pooling, against a numpy transcription of the CPU reference engine
(`engines/src/reference/ops/resample.rs`: window scanned in row-major order, `!found || v >
best`, f32 sums in scan order, IEEE division). Every output must be equal bit for bit (NaN
equal to NaN; a bf16 y is compared with the reference truncated, as the interpreter rounds f32
to bf16 toward zero), every index exactly. The interpreter runs the programs one after the other on
the host: it checks indexing, masking, the window loops and the op/type handling, not the
device code generation. Not part of the build.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import pool_fwd as pf  # noqa: E402
from interpret_norm_fwd import Arr, from_bf16_bits, make  # noqa: E402

BF16 = "bf16"


def reference(x, mode, win, st, pre, out):
    """(y, index) in f32 / int64 of x (N, C, D, H, W) f32, as the reference engine computes."""
    n, c, d, h, w = x.shape
    od, oh, ow = out
    shape = (n, c, od, oh, ow)
    best = np.full(shape, -np.inf, np.float32)
    bi = np.zeros(shape, np.int64)
    found = np.zeros(shape, bool)
    acc = np.zeros(shape, np.float32)
    cnt = np.zeros(shape, np.int64)
    zero_pad = mode == pf.MODE_MAX_ZERO_PAD
    wi = 0
    for kd in range(win[0]):
        zd = np.arange(od) * st[0] - pre[0] + kd
        for kh in range(win[1]):
            zh = np.arange(oh) * st[1] - pre[1] + kh
            for kw in range(win[2]):
                zw = np.arange(ow) * st[2] - pre[2] + kw
                ins = (((zd >= 0) & (zd < d))[:, None, None] & ((zh >= 0) & (zh < h))[None, :, None]
                       & ((zw >= 0) & (zw < w))[None, None, :])
                v = x[:, :, np.clip(zd, 0, d - 1)][:, :, :, np.clip(zh, 0, h - 1)][
                    :, :, :, :, np.clip(zw, 0, w - 1)]
                v = np.where(ins, v, np.float32(0.0)).astype(np.float32)
                if mode <= pf.MODE_MAX_ZERO_PAD:
                    part = np.broadcast_to(ins | zero_pad, shape)
                    with np.errstate(invalid="ignore"):
                        upd = part & (~found | (v > best))
                    best = np.where(upd, v, best)
                    bi = np.where(upd, wi, bi)
                    found = found | part
                else:
                    acc = (acc + v).astype(np.float32)
                    cnt = cnt + ins
                wi += 1
    if mode <= pf.MODE_MAX_ZERO_PAD:
        return best, bi
    if mode == pf.MODE_AVG_INCLUDE:
        return (acc / np.float32(win[0] * win[1] * win[2])).astype(np.float32), None
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(cnt == 0, np.float32(0.0), acc / cnt.astype(np.float32))
    return y.astype(np.float32), None


def layout(dims, order):
    """Element strides of logical dims (N, C, D, H, W) stored in `order` (outermost first)."""
    st = [0] * 5
    acc = 1
    for ax in reversed(order):
        st[ax] = acc
        acc *= dims[ax]
    return st, acc


NCHW = (0, 1, 2, 3, 4)
NHWC = (0, 2, 3, 4, 1)
NP = {"f32": np.float32, "f16": np.float16, BF16: np.uint16}


def as_arr(buf, dt):
    if dt == BF16:
        return Arr(buf.view(np.uint16), dtype=tl.bfloat16)
    return Arr(buf.view(NP[dt]))


def decode(buf, dt, dims, st):
    """Logical (N, C, D, H, W) f64 values of a strided buffer."""
    if dt == "f32":
        v = buf.view(np.float32).astype(np.float64)
    elif dt == "f16":
        v = buf.view(np.float16).astype(np.float64)
    elif dt == BF16:
        v = from_bf16_bits(buf.view(np.uint16)).astype(np.float64)
    elif dt == "i32":
        v = buf.view(np.int32).astype(np.int64)
    else:
        v = buf.view(np.int64)
    idx = np.zeros(dims, np.int64)
    for ax in range(5):
        shp = [1] * 5
        shp[ax] = dims[ax]
        idx = idx + (np.arange(dims[ax]) * st[ax]).reshape(shp)
    return v[idx]


def rounded(y, dt):
    """y (f32) rounded to dt as the interpreter rounds: f16 to nearest even (numpy), bf16
    toward zero (Triton 3.9's interpreter casts f32 to bf16 by dropping the low 16 bits; the
    device and the reference engine round to nearest even, which gpu_pool.rs checks)."""
    if dt == "f32":
        return y.astype(np.float64)
    if dt == "f16":
        return y.astype(np.float16).astype(np.float64)
    return from_bf16_bits((y.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16))


def same(a, b):
    return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def run_case(case):
    (dims, win, st, pre, post, mode, dt, y_f32, index, xo, yo, cl, cfg, special, seed) = case
    rng = np.random.default_rng(seed)
    n, c, d, h, w = dims
    out = [(e + p + q - k) // s + 1 for e, p, q, k, s in zip(dims[2:], pre, post, win, st)]
    xv = (rng.standard_normal(dims) * 2.0).astype(np.float32)
    if special:
        flat = xv.reshape(-1)
        flat[rng.integers(0, flat.size, max(1, flat.size // 13))] = np.nan
        flat[rng.integers(0, flat.size, max(1, flat.size // 17))] = np.inf
        flat[rng.integers(0, flat.size, max(1, flat.size // 19))] = -np.inf
    x_dev, x64 = make(xv, dt)
    xs, xn = layout(dims, xo)
    xbuf = np.zeros(xn, NP[dt])
    # Scatter the logical values into the strided buffer.
    lin = decode_index(dims, xs)
    xbuf[lin.reshape(-1)] = x_dev.reshape(-1)
    ydims = [n, c] + out
    y_dt = "f32" if (y_f32 or dt == "f32") else dt
    ys, yn = layout(ydims, yo)
    ybuf = np.full(yn * np.dtype(NP[y_dt]).itemsize, 0xFF, np.uint8)
    i_dt = index
    if index:
        ibuf = np.full(yn * (4 if index == "i32" else 8), 0xFF, np.uint8)
        is_ = ys
    else:
        ibuf = np.zeros(16, np.uint8)
        is_ = [0] * 5
    op = mode | (pf.OP_INDEX if index else 0) | (pf.OP_INDEX_I64 if index == "i64" else 0)
    op |= pf.OP_Y_F32 if (y_dt == "f32" and dt != "f32") else 0
    bm, bn = cfg[0], cfg[1]
    rows = n * out[0] * out[1] * out[2] if cl else n * c * out[0] * out[1]
    cols = c if cl else out[2]
    grid = (triton.cdiv(rows, bm) * triton.cdiv(cols, bn),)
    pf.KERNEL[grid](as_arr(xbuf.view(np.uint8), dt), as_arr(ybuf, dt), Arr(ibuf.view(np.int32)),
                    n, c, d, h, w, out[0], out[1], out[2], win[0], win[1], win[2],
                    st[0], st[1], st[2], pre[0], pre[1], pre[2], *xs, *ys, *is_, cl, op,
                    BLOCK_M=bm, BLOCK_N=bn)
    want_y, want_i = reference(x64.astype(np.float32), mode, win, st, pre, out)
    got_y = decode(ybuf, y_dt, ydims, ys)
    ok = same(got_y, rounded(want_y, y_dt))
    if index:
        got_i = decode(ibuf, i_dt, ydims, is_)
        ok = ok and bool(np.all(got_i == want_i))
    print(f"{'ok ' if ok else 'BAD'} mode={mode} {dt:4} y={y_dt:4} index={index or '-':3} "
          f"x{list(dims)} win{win} st{st} pre{pre} post{post} x{'NHWC' if xo == NHWC else 'NCHW'}"
          f" y{'NHWC' if yo == NHWC else 'NCHW'} cl={cl} tile={bm}x{bn}"
          f"{' nan/inf' if special else ''}")
    return ok


def decode_index(dims, st):
    idx = np.zeros(dims, np.int64)
    for ax in range(5):
        shp = [1] * 5
        shp[ax] = dims[ax]
        idx = idx + (np.arange(dims[ax]) * st[ax]).reshape(shp)
    return idx


def main():
    cfgs = pf.configs("cuda", "f32")["generic"]
    # (N, C, D, H, W), window, stride, pre, post (D/H axes of extent 1 for 1-D/2-D graphs).
    shapes = [
        ((2, 3, 1, 7, 9), (1, 3, 3), (1, 2, 2), (0, 1, 1), (0, 1, 0)),    # 2-D overlap
        ((1, 20, 1, 11, 6), (1, 2, 3), (1, 3, 4), (0, 0, 2), (0, 1, 1)),  # 2-D gaps, batch 1
        ((2, 5, 1, 1, 13), (1, 1, 4), (1, 1, 3), (0, 0, 2), (0, 0, 3)),   # 1-D
        ((1, 4, 5, 6, 7), (2, 3, 2), (2, 1, 2), (1, 1, 0), (0, 2, 1)),    # 3-D
        ((2, 33, 1, 5, 5), (1, 2, 2), (1, 1, 1), (0, 3, 3), (0, 3, 3)),   # windows inside padding
        ((1, 16, 1, 8, 8), (1, 8, 8), (1, 8, 8), (0, 0, 0), (0, 0, 0)),   # global
    ]
    modes = [pf.MODE_MAX, pf.MODE_MAX_ZERO_PAD, pf.MODE_AVG_INCLUDE, pf.MODE_AVG_EXCLUDE]
    cases = []
    seed = 0
    for dims, win, st, pre, post in shapes:
        for mode in modes:
            for cl in (1, 0):
                seed += 1
                dt = ["f32", "f16", BF16][seed % 3]
                xo = NHWC if (seed // 2) % 2 == 0 else NCHW
                yo = xo if seed % 5 else (NCHW if xo == NHWC else NHWC)
                index = None
                if mode <= pf.MODE_MAX_ZERO_PAD:
                    index = [None, "i32", "i64"][seed % 3]
                cfg = cfgs[seed % len(cfgs)]
                cases.append((dims, win, st, pre, post, mode, dt, seed % 4 == 1, index, xo, yo,
                              cl, cfg, False, seed))
    # NaN and infinities for max pooling (first NaN in scan order stays, later ones lose).
    for mode in (pf.MODE_MAX, pf.MODE_MAX_ZERO_PAD):
        for dt in ("f32", "f16", BF16):
            seed += 1
            cases.append((((2, 3, 1, 7, 9)), (1, 3, 3), (1, 2, 2), (0, 1, 1), (0, 1, 0), mode, dt,
                          False, "i32", NHWC, NHWC, 1, cfgs[0], True, seed))
    ok = all([run_case(c) for c in cases])
    print(f"{len(cases)} cases")
    print("all ok" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
