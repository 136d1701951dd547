"""Checks bn_bwd.py on the CPU under Triton's interpreter (TRITON_INTERPRET=1, no GPU): both
launches (phase 0, the partials; phase 1, dscale/dbias and dx) of each kernel (channels-last
spec, channels-first nchw, generic on both paths) against float64 numpy, with and without the
fused ReLU backward, f32/f16/bf16, odd N*S and C, batch 1; and repeated launches give identical
bits. Needs numpy and triton==3.9.0 (the pack venv's site-packages on PYTHONPATH).

Usage: python3 engines/kernels/triton/interpret_bn_bwd.py  (prints one line per case, exits 1
on a mismatch).
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bn_bwd  # noqa: E402
from interpret_norm_fwd import Arr, from_bf16_bits, to_bf16_bits  # noqa: E402

TOL = {"f32": 1e-4, "f16": 1e-2, "bf16": 2e-2}


def dev(v, dt):
    """(device array, its values as f64) of f32 values `v` stored as `dt`."""
    v = np.ascontiguousarray(v, dtype=np.float32)
    if dt == "f32":
        return Arr(v.copy()), v.astype(np.float64)
    if dt == "f16":
        h = v.astype(np.float16)
        return Arr(h), h.astype(np.float64)
    b = to_bf16_bits(v)
    import triton.language as tl
    return Arr(b, dtype=tl.bfloat16), from_bf16_bits(b).astype(np.float64)


def back(arr, dt):
    if dt == "bf16":
        return from_bf16_bits(arr.a).astype(np.float64)
    return arr.a.astype(np.float64)


def run(n, c, s, dt, layout, relu, seed):
    """One case: x, dy (dy_in), r as (n, c, s) in `layout` ('cl': (n, s, c) memory, 'cf':
    (n, c, s)); returns the worst |d|/(1+|ref|) and whether a repeat gave the same bits."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 3, (n, c, s)).astype(np.float32)
    dy = rng.uniform(-1, 1, (n, c, s)).astype(np.float32)
    r = rng.uniform(-1, 1, (n, c, s)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, c).astype(np.float32)
    mean = x.astype(np.float64).mean(axis=(0, 2))
    var = x.astype(np.float64).var(axis=(0, 2))
    inv = (1.0 / np.sqrt(var + 1e-5)).astype(np.float32)
    mean = mean.astype(np.float32)
    perm = (0, 2, 1) if layout == "cl" else (0, 1, 2)
    mem = lambda a: np.ascontiguousarray(a.transpose(perm))  # noqa: E731
    xd, x64 = dev(mem(x), dt)
    dyd, dy64 = dev(mem(dy), dt)
    rd, r64 = dev(mem(r), dt)
    sd, s64 = dev(scale, dt)
    md, m64 = dev(mean, dt)
    idv, i64 = dev(inv, dt)
    # Reference in float64 from the rounded inputs (memory layout back to (n, c, s)).
    unperm = (0, 2, 1) if layout == "cl" else (0, 1, 2)
    X = x64.transpose(unperm)
    DY = dy64.transpose(unperm)
    if relu:
        DY = np.where(r64.transpose(unperm) > 0, DY, 0.0)
    xh = (X - m64[None, :, None]) * i64[None, :, None]
    db = DY.sum(axis=(0, 2))
    ds = (DY * xh).sum(axis=(0, 2))
    M = n * s
    dx = (s64 * i64)[None, :, None] * (DY - db[None, :, None] / M - xh * ds[None, :, None] / M)
    # Strides (elements) of (n, c, s) in memory.
    st = (c * s, 1, c) if layout == "cl" else (c * s, s, 1)
    flags = 1 if relu else 0
    if layout == "cl":
        kernel, variant, tc, tp, bm, bn = bn_bwd.hipdnn_bn_bwd_cl, "spec", 16, 128, 16, 128
    else:
        bm = next((m for m, _ in bn_bwd.TILES if -(-s // m) * m * 3 <= 4 * s), 16)
        bn = dict(bn_bwd.TILES)[bm]
        kernel, variant, tc, tp = bn_bwd.hipdnn_bn_bwd_cf, "nchw", bn, bm
    if seed % 2 == 1:
        # The generic entry on the same path.
        kernel = bn_bwd.hipdnn_bn_bwd
        variant = "generic"
        if layout == "cf":
            flags |= 2
    pairs = n * -(-s // tp)
    splits = max(1, min(pairs, 3))
    grid = (-(-c // tc), splits, 1)
    results = []
    for _rep in range(2):
        ws = Arr(np.full(2 * splits * c, np.nan, dtype=np.float32))
        dxd, _ = dev(np.full((n, c, s), np.nan, np.float32), dt)
        dsd, _ = dev(np.full(c, np.nan, np.float32), dt)
        dbd, _ = dev(np.full(c, np.nan, np.float32), dt)
        args = dict(dy_ptr=dyd, x_ptr=xd, r_ptr=rd, scale_ptr=sd, mean_ptr=md, inv_ptr=idv,
                    dx_ptr=dxd, dscale_ptr=dsd, dbias_ptr=dbd, ws_ptr=ws, N=n, C=c, S=s,
                    sdyn=st[0], sdyc=st[1], sdys=st[2], sxn=st[0], sxc=st[1], sxs=st[2],
                    srn=st[0], src=st[1], srs=st[2], sdxn=st[0], sdxc=st[1], sdxs=st[2],
                    ssc=1, smc=1, sic=1, sdsc=1, sdbc=1, flags=flags, splits=splits)
        for phase in (0, 1):
            kernel[grid](**args, phase=phase, BLOCK_M=bm, BLOCK_N=bn)
        results.append((back(dxd, dt).copy(), back(dsd, dt).copy(), back(dbd, dt).copy()))
    got_dx = results[0][0].reshape(mem(x).shape).transpose(unperm)
    worst = 0.0
    for got, want in ((got_dx, dx), (results[0][1], ds), (results[0][2], db)):
        d = np.abs(got - want) / (1.0 + np.abs(want))
        worst = max(worst, float(np.max(d)) if np.all(np.isfinite(d)) else float("inf"))
    same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(results[0], results[1]))
    return worst, same, variant


def main():
    bad = 0
    cases = [(1, 3, 7), (2, 5, 33), (3, 17, 1), (1, 40, 300), (4, 2, 1030)]
    k = 0
    for dt in ("f32", "f16", "bf16"):
        for n, c, s in cases:
            for layout in ("cl", "cf"):
                for relu in (False, True):
                    k += 1
                    worst, same, variant = run(n, c, s, dt, layout, relu, k)
                    ok = worst <= TOL[dt] and same
                    bad += not ok
                    print(f"{'ok ' if ok else 'BAD'} {dt} n={n} c={c} s={s} {layout} {variant} "
                          f"relu={relu}: worst {worst:.2e}, repeat identical {same}")
    print(f"{k} cases, {bad} bad")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
