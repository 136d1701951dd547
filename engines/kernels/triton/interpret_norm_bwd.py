"""CPU check of norm_bwd.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no torch.

Usage: TRITON_INTERPRET=1 python interpret_norm_bwd.py   (needs triton==3.9.0 and numpy; e.g.
`PYTHONPATH=target/triton-venv/lib/python3.11/site-packages python3 interpret_norm_bwd.py`
with a system python 3.11 that has numpy)

Runs both launches of the kernel (phase 0 on `splits` programs, phase 1 merging the partials)
on random rows (lengths 1, 7, 64, 384, 1000, 4097; rows 1..9), layernorm and rmsnorm (with and
without dbias), every tile config of the family, 1 to 4 splits (several row blocks per
program), strided (transposed) and dense layouts, f32/f16/bf16 x with f32 or x-typed dy, scale,
statistics and outputs, against a float64 numpy reference of the CPU reference engine's
`norm_backward` formulas. Prints the largest error per case relative to the stated tolerance
(|d| <= tol * (1 + |r|): f32 1e-4, f16 1e-2, bf16 2e-2, the reference engine's backward
tolerances), then checks that a second run gives the same bits. The interpreter runs the
programs one after the other on the host: it checks indexing, masking, the chunk and block
loops, the split merge and the flag/type handling, not the device code generation. Not part of
the build.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import norm_bwd  # noqa: E402
from interpret_norm_fwd import Arr, make, read  # noqa: E402

BF16 = "bf16"
TOL = {"f32": 1e-4, "f16": 1e-2, "bf16": 2e-2}
NP = {"f32": np.float32, "f16": np.float16, BF16: np.uint16}


def ptr(a, dt):
    """`a`'s memory announced with the entry's element type `dt` (f32 data behind a 16-bit
    entry's pointer is announced by the flags)."""
    b = a.view(np.uint8)
    if dt == "f32":
        return Arr(b.view(np.float32))
    if dt == "f16":
        return Arr(b.view(np.float16))
    return Arr(b.view(np.uint16), dtype=tl.bfloat16)


def splits_for(rows, bm, target):
    nb = -(-rows // bm)
    bpp = -(-nb // target)
    return -(-nb // bpp)


def run(rows, cols, rms, dbias, dt, cfg, types, transposed, target, seed):
    rng = np.random.default_rng(seed)
    bm, bn = cfg[0], cfg[1]
    t = {k: ("f32" if types.get(k) else dt) for k in
         ("dy", "scale", "mean", "inv", "dx", "dscale", "dbias")}
    xv = rng.standard_normal((rows, cols)) * 2.0 + 0.5
    x_dev, x64 = make(xv, dt)
    dy_dev, dy64 = make(rng.standard_normal((rows, cols)), t["dy"])
    if transposed:
        store = lambda a: np.ascontiguousarray(a.T).reshape(-1)
        sr, sc = 1, rows
    else:
        store = lambda a: a.reshape(-1).copy()
        sr, sc = cols, 1
    x_s, dy_s = store(x_dev), store(dy_dev)
    s_dev, s64 = make(rng.standard_normal(cols) * 0.5 + 1.0, t["scale"])
    # Statistics as a forward would save them (rounded to their type).
    m_true = np.zeros(rows) if rms else x64.mean(axis=1)
    var = ((x64 - m_true[:, None]) ** 2).mean(axis=1)
    m_dev, m64 = make(m_true, t["mean"])
    i_dev, i64 = make(1.0 / np.sqrt(var + 1e-5), t["inv"])
    if rms:
        m64 = np.zeros(rows)
    # Outputs start as NaN (all-ones bits for bf16), so an unwritten element fails.
    nan = lambda n, k: np.full(n, 0xFFFF if t[k] == BF16 else np.nan, dtype=NP[t[k]])
    dx, ds, db = nan(rows * cols, "dx"), nan(cols, "dscale"), nan(cols, "dbias")
    splits = splits_for(rows, bm, target)
    ws = np.full(2 * splits * cols, np.nan, dtype=np.float32)
    flags = (1 if rms else 0) | (2 if dbias else 0)
    for bit, k in ((4, "scale"), (8, "mean"), (16, "inv"), (32, "dy"), (64, "dx"),
                   (128, "dscale"), (256, "dbias")):
        if t[k] == "f32":
            flags |= bit
    dummy = np.zeros(16, dtype=np.float32)
    args = [ptr(dy_s, dt), ptr(x_s, dt), ptr(s_dev, dt),
            ptr(dummy if rms else m_dev, dt), ptr(i_dev, dt), ptr(dx, dt), ptr(ds, dt),
            ptr(db if dbias else dummy, dt), ptr(ws, dt)]
    ints = [rows, cols, sr, sc, sr, sc, sr, sc, 1, 1, 1, 1, 1, flags, splits]
    outs = []
    for _ in range(2):
        norm_bwd.KERNEL[(splits,)](*args, *ints, 0, BLOCK_M=bm, BLOCK_N=bn)
        norm_bwd.KERNEL[(triton.cdiv(cols, norm_bwd.RED_N.value),)](*args, *ints, 1,
                                                                      BLOCK_M=bm, BLOCK_N=bn)
        outs.append((dx.copy(), ds.copy(), db.copy()))
    same = all(np.array_equal(a.view(np.uint8), b.view(np.uint8))
               for a, b in zip(outs[0], outs[1]))
    # float64 reference of the reference engine's formulas.
    xh = (x64 - m64[:, None]) * i64[:, None]
    g = dy64 * s64[None, :]
    gbar = np.zeros(rows) if rms else g.mean(axis=1)
    c = (g * xh).mean(axis=1)
    want = {"dx": i64[:, None] * (g - gbar[:, None] - xh * c[:, None]),
            "dscale": (dy64 * xh).sum(axis=0), "dbias": dy64.sum(axis=0)}
    got_dx = read(dx, t["dx"])
    got_dx = got_dx.reshape(cols, rows).T if transposed else got_dx.reshape(rows, cols)
    got = {"dx": got_dx, "dscale": read(ds, t["dscale"]), "dbias": read(db, t["dbias"])}
    errs, ok = [], same
    for k in ("dx", "dscale", "dbias") if dbias else ("dx", "dscale"):
        d = np.abs(got[k] - want[k]) / (1.0 + np.abs(want[k]))
        e = float(d.max()) if np.all(np.isfinite(got[k])) else float("inf")
        ok = ok and e <= TOL[t[k]]
        errs.append(f"{k}={e:.1e}/{TOL[t[k]]:.0e}")
    print(f"{'ok ' if ok else 'BAD'} {'rms' if rms else 'ln '} dbias={int(dbias)} {dt:4} "
          f"f32={'+'.join(k for k in sorted(types) if types[k]) or '-':22} rows={rows} "
          f"cols={cols:5} tile={bm}x{bn:<4} splits={splits} T={int(transposed)} "
          f"{' '.join(errs)}{'' if same else ' NOT REPEATABLE'}")
    return ok


def main():
    cfgs = norm_bwd.configs("cuda", "f32")["generic"]
    keys = ["dy", "scale", "mean", "inv", "dx", "dscale", "dbias"]
    cases, seed = [], 0
    for cols, rows in [(1, 3), (7, 9), (64, 5), (384, 4), (1000, 3), (4097, 2)]:
        for cfg in cfgs:
            for dt in ["f32", "f16", "bf16"]:
                seed += 1
                rms = seed % 2 == 0
                dbias = (not rms) or seed % 3 == 0
                types = {k: (seed + i) % 4 == 0 for i, k in enumerate(keys)} if dt != "f32" \
                    else {}
                cases.append((rows, cols, rms, dbias, dt, cfg, types, seed % 5 == 1,
                              1 + seed % 4, seed))
    ok = all([run(*c) for c in cases])
    print("all ok" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
