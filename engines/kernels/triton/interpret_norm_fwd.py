"""CPU check of norm_fwd.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no torch.

Usage: TRITON_INTERPRET=1 python interpret_norm_fwd.py   (needs triton==3.9.0 and numpy; the
pack venv has no numpy, so e.g. `PYTHONPATH=target/triton-venv/lib/python3.11/site-packages
python3 interpret_norm_fwd.py` with a system python 3.11 that has numpy)

Runs the kernel on random rows (lengths 1, 7, 384, 1000, 4097 and 64, rows 1..5), layernorm
and rmsnorm (with and without bias), every tile config of the family, strided (transposed)
and dense layouts, f32/f16/bf16 x with f32 or x-typed scale/bias/y/statistics, against a
float64 numpy reference of the CPU reference engine's formulas (two-pass population variance,
inv = 1/sqrt(var + eps)). Prints the largest error per case relative to the stated tolerance.
The interpreter runs the programs one after the other on the host: it checks indexing,
masking, the chunk loop and the flag/type handling, not the device code generation. Not part
of the build.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import norm_fwd  # noqa: E402

BF16 = "bf16"


class Arr:
    """The few tensor methods the interpreter calls, over a numpy array (shared memory).
    `dtype` is what the interpreter takes the element type from; bf16 data is held as uint16
    and announced as triton's bfloat16."""

    def __init__(self, a, dtype=None):
        self.a = a
        self.dtype = dtype if dtype is not None else a.dtype

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


def to_bf16_bits(v):
    """Round-to-nearest-even f32 -> bf16 bits (uint16)."""
    b = np.asarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def make(values, dt):
    """Device-side array of `values` in type dt ('f32', 'f16', 'bf16') and its rounded f64."""
    if dt == "f32":
        a = values.astype(np.float32)
        return a, a.astype(np.float64)
    if dt == "f16":
        a = values.astype(np.float16)
        return a, a.astype(np.float64)
    a = to_bf16_bits(values)
    return a, from_bf16_bits(a).astype(np.float64)


def read(a, dt):
    if dt == BF16:
        return from_bf16_bits(a).astype(np.float64)
    return a.astype(np.float64)


def wrap(a, dt):
    if dt == BF16:
        return Arr(a, dtype=tl.bfloat16)
    return Arr(a)


def ulp_tol(dt):
    return {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}[dt]


def run_case(rows, cols, rms, bias, dt, cfg, aff_f32, out_f32, transposed, seed):
    rng = np.random.default_rng(seed)
    bm, bn = cfg[0], cfg[1]
    xv = rng.standard_normal((rows, cols)) * 3.0 + 1.5
    x_dev, x64 = make(xv, dt)
    if transposed:
        # x stored column-major: row r, column c at c * rows + r.
        x_store = np.ascontiguousarray(x_dev.T).reshape(-1)
        sxr, sxc = 1, rows
    else:
        x_store = x_dev.reshape(-1).copy()
        sxr, sxc = cols, 1
    aff_dt = "f32" if aff_f32 else dt
    s_dev, s64 = make(rng.standard_normal(cols), aff_dt)
    b_dev, b64 = make(rng.standard_normal(cols), aff_dt)
    y_dt = "f32" if out_f32 else dt
    st_dt = "f32" if out_f32 else dt
    y = np.zeros(rows * cols, dtype=np.uint16 if y_dt == BF16 else
                 (np.float32 if y_dt == "f32" else np.float16))
    mean = np.zeros(rows, dtype=np.uint16 if st_dt == BF16 else
                    (np.float32 if st_dt == "f32" else np.float16))
    inv = mean.copy()
    eps = 1e-5
    flags = (1 if rms else 0) | (2 if bias else 0) | 4 * (not rms) | 8
    flags |= (16 | 32) if aff_dt == "f32" else 0
    flags |= (64 | 128) if out_f32 else 0
    # The kernel's pointers have x's type; f32 data behind them is announced by the flags.
    ptr = lambda a, d: Arr(a.view(np.uint16), dtype=tl.bfloat16) if dt == BF16 else \
        Arr(a.view(np.float16) if dt == "f16" else a.view(np.float32))
    args = [wrap(x_store, dt)] + [ptr(a, None) if a.dtype == np.float32 and dt != "f32"
                                  else wrap(a, dt) for a in (s_dev, b_dev, y, mean, inv)]
    grid = (triton.cdiv(rows, bm),)
    norm_fwd.KERNEL[grid](*args, rows, cols, sxr, sxc, cols, 1, 1, 1, 1, 1, flags, eps,
                          BLOCK_M=bm, BLOCK_N=bn)
    # float64 reference of the CPU engine's formulas.
    m = np.zeros(rows) if rms else x64.mean(axis=1)
    var = ((x64 - m[:, None]) ** 2).mean(axis=1)
    iv = 1.0 / np.sqrt(var + eps)
    want = (x64 - m[:, None]) * iv[:, None] * s64[None, :] + (b64[None, :] if bias else 0.0)
    got = read(y, y_dt).reshape(rows, cols)
    err_y = np.abs(got - want).max()
    tol_y = ulp_tol(y_dt) * max(1.0, np.abs(want).max())
    err_iv = np.abs(read(inv, st_dt) - iv).max() / np.abs(iv).max()
    err_m = 0.0 if rms else np.abs(read(mean, st_dt) - m).max()
    tol_st = ulp_tol(st_dt) * 2
    ok = err_y <= tol_y and err_iv <= tol_st and err_m <= tol_st * max(1.0, np.abs(m).max())
    print(f"{'ok ' if ok else 'BAD'} {'rms' if rms else 'ln '} bias={int(bias)} {dt:4} "
          f"aff={aff_dt:4} y={y_dt:4} rows={rows} cols={cols:5} tile={bm}x{bn:<4} "
          f"T={int(transposed)} err y={err_y:.2e} (tol {tol_y:.1e}) mean={err_m:.2e} "
          f"inv(rel)={err_iv:.2e}")
    return ok


def main():
    cfgs = norm_fwd.configs("cuda", "f32")["generic"]
    cases = []
    seed = 0
    for cols, rows in [(1, 3), (7, 5), (64, 2), (384, 4), (1000, 3), (4097, 2)]:
        for cfg in cfgs:
            for dt in ["f32", "f16", "bf16"]:
                seed += 1
                rms = seed % 2 == 0
                bias = (not rms) or seed % 3 == 0
                cases.append((rows, cols, rms, bias, dt, cfg, seed % 4 == 1, seed % 5 == 2,
                              seed % 3 == 1, seed))
    ok = all([run_case(*c) for c in cases])
    print("all ok" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
