"""CPU check of sdpa_bwd.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no torch.

Usage: TRITON_INTERPRET=1 python interpret_sdpa_bwd.py   (needs triton==3.9.0 and numpy, as
interpret_sdpa_fwd.py)

Runs both launches of the kernel (phase 0: delta and dq; phase 1: dk and dv) on small random
cases (odd sequence lengths, s_q != s_kv, head dims 32/64/128 and a masked 80 in the 128 bucket,
causal top-left and bottom-right, a sliding window, rows whose every key is masked, boolean
and additive (f32, f16) mask tensors that broadcast,
grouped-query and multi-query heads, permuted strides, a runtime scale read from memory, more
than one block of rows and keys) against a float64 numpy transcription of the CPU reference
engine's SDPA backward (engines/src/reference/ops/sdpa.rs), the statistics taken from the
float64 forward, and prints the largest error of dq, dk and dv per case. The interpreter
computes the dots in the inputs' precision with numpy, so this checks indexing, masking, block
skipping, the head-group walk and the arithmetic, not the GPU's rounding. Not part of the build.
"""
import os
import struct
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_bwd  # noqa: E402
from interpret_sdpa_fwd import Arr, reference, strided  # noqa: E402


def reference_bwd(q, k, v, do, scale, shift, right, left, mask=None, mask_bool=False):
    """float64 dq, dk, dv (PyTorch's formulas, ops/sdpa.rs), and o and stats of the forward."""
    o, st, _mx, _se = reference(q, k, v, scale, mask, mask_bool, shift, right, left)
    B, H, SQ, D = q.shape
    HK, SKV = k.shape[1], k.shape[2]
    rep = H // HK
    q64, k64, v64, do64 = (x.astype(np.float64) for x in (q, k, v, do))
    dq = np.zeros(q.shape)
    dk = np.zeros(k.shape)
    dv = np.zeros(v.shape)
    i = np.arange(SQ)[:, None]
    j = np.arange(SKV)[None, :]
    keep = np.ones((SQ, SKV), dtype=bool)
    if right is not None:
        keep &= j <= i + shift + right
    if left is not None:
        keep &= j > i + shift - left
    m = None if mask is None else np.broadcast_to(mask.astype(np.float64), (B, H, SQ, SKV))
    for b in range(B):
        for h in range(H):
            hk = h // rep
            kp = keep.copy()
            s = float(scale) * (q64[b, h] @ k64[b, hk].T)
            if m is not None:
                if mask_bool:
                    kp &= m[b, h] != 0
                else:
                    s = s + m[b, h]
            s = np.where(kp, s, -np.inf)
            lse = st[b, h][:, None]
            p = np.where(np.isinf(lse), 0.0, np.exp(s - np.where(np.isinf(lse), 0.0, lse)))
            dv[b, hk] += p.T @ do64[b, h]
            dp = do64[b, h] @ v64[b, hk].T
            delta = (do64[b, h] * o[b, h]).sum(axis=1, keepdims=True)
            ds = p * (dp - delta)
            dq[b, h] = float(scale) * ds @ k64[b, hk]
            dk[b, hk] += float(scale) * ds.T @ q64[b, h]
    return o, st, dq, dk, dv


def run_case(name, B, H, HK, SQ, SKV, D, dtype, bucket, cfg, causal=None, window=None,
             scale_mem=False, perm=(0, 1, 2, 3), mask=None):
    rng = np.random.default_rng(B * 7919 + SQ * 31 + SKV + D + H)
    q = rng.standard_normal((B, H, SQ, D)).astype(dtype)
    k = rng.standard_normal((B, HK, SKV, D)).astype(dtype)
    v = rng.standard_normal((B, HK, SKV, D)).astype(dtype)
    do = rng.standard_normal((B, H, SQ, D)).astype(dtype)
    scale = np.float32(1.0 / np.sqrt(D) * 1.3)
    shift = SKV - SQ if causal == "bottom_right" else 0
    right = 0 if causal else None
    left = window
    mkind, mstore, mstr, mbool, mref = 0, np.zeros(1, np.int8), [0, 0, 0, 0], False, None
    if mask is not None:
        kind, mdims = mask
        if kind == "bool":
            mref = (rng.random(mdims) > 0.3).astype(np.int8)
            mkind, mbool, mstore = 1, True, mref
        else:
            mt = {"f32": np.float32, "f16": np.float16}[kind]
            mref = (rng.standard_normal(mdims) * 2).astype(mt)
            mkind, mstore = {"f32": 2, "f16": 3}[kind], mref
        full = [B, H, SQ, SKV]
        el = mstore.itemsize
        mstr = [0 if mdims[a] == 1 and full[a] != 1 else mstore.strides[a] // el for a in range(4)]
    o, st, want_dq, want_dk, want_dv = reference_bwd(q, k, v, do, scale, shift, right, left,
                                                     mref, mbool)
    o = o.astype(dtype)
    st32 = st.astype(np.float32)
    qs, qst = strided(q, perm)
    ks, kst = strided(k, perm)
    vs, vst = strided(v, perm)
    os_, ost = strided(o, perm)
    dos, dost = strided(do, perm)
    dq = np.full((B, H, SQ, D), 77.0, dtype=dtype)
    dk = np.full((B, HK, SKV, D), 77.0, dtype=dtype)
    dv = np.full((B, HK, SKV, D), 77.0, dtype=dtype)
    dqs, dqst = strided(dq, perm)
    dks, dkst = strided(dk, perm)
    dvs, dvst = strided(dv, perm)
    ws = np.full((B * H * SQ,), 99.0, np.float32)
    sc = np.array([scale], np.float32)
    flags = (1 if scale_mem else 0) | (8 if right is not None else 0) | (16 if left is not None else 0)
    bits = struct.unpack("<i", struct.pack("<f", scale))[0]
    bm, bn, _bk, _g, _w, _s = cfg
    args = [Arr(qs), Arr(ks), Arr(vs), Arr(os_), Arr(dos), Arr(st32), Arr(dqs), Arr(dks),
            Arr(dvs), Arr(sc), Arr(mstore), Arr(ws), H, H // HK, SQ, SKV, D, *qst, *kst, *vst,
            *ost, *dost, *dqst, *dkst, *dvst, H * SQ, SQ, 1, *mstr, 0 if scale_mem else bits,
            mkind, flags, shift, right or 0, left or 0]
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bucket, INPUT_PRECISION="ieee")
    sdpa_bwd.KERNEL[(-(-SQ // bn), B * H, 1)](*args, 0, **meta)
    sdpa_bwd.KERNEL[(-(-SKV // bn), B * HK, 1)](*args, 1, **meta)
    back = np.argsort(perm)
    got = [x.transpose(back).astype(np.float64) for x in (dqs, dks, dvs)]
    want = [want_dq, want_dk, want_dv]
    e = [float((np.abs(g - w) / (1 + np.abs(w))).max()) for g, w in zip(got, want)]
    tol = {np.float32: 1e-4, np.float16: 1e-2}[dtype]
    ok = all(x <= tol for x in e) and all(np.isfinite(x) for x in e)
    empty = int(np.isinf(st).sum())
    print(f"{'ok ' if ok else 'BAD'} {name}: b{B} h{H}/{HK} sq{SQ} skv{SKV} d{D}/{bucket} "
          f"{np.dtype(dtype).name} tile {bm}x{bn} empty rows {empty} max rel err "
          f"dq {e[0]:.2e} dk {e[1]:.2e} dv {e[2]:.2e}")
    return ok, e


def main():
    small = (16, 16, 0, 1, 4, 1)
    f32, f16 = np.float32, np.float16
    cases = [
        ("plain", 1, 2, 2, 17, 17, 32, f32, 32, small),
        ("plain odd", 2, 1, 1, 1, 77, 32, f16, 32, small),
        ("causal tl", 1, 2, 2, 33, 20, 64, f32, 64, small, "top_left"),
        ("causal br sq>skv (empty rows)", 1, 1, 1, 29, 13, 32, f32, 32, small, "bottom_right"),
        ("causal br sq<skv", 1, 2, 1, 17, 45, 32, f16, 32, small, "bottom_right"),
        ("window", 1, 1, 1, 37, 37, 32, f32, 32, small, "top_left", 5),
        ("window br", 1, 1, 1, 40, 70, 32, f16, 32, small, "bottom_right", 9),
        ("gqa", 2, 4, 2, 19, 23, 64, f16, 64, small),
        ("mqa causal", 1, 3, 1, 21, 21, 32, f32, 32, small, "top_left"),
        ("d80 in 128", 1, 1, 1, 21, 18, 80, f32, 128, small),
        ("d128", 1, 1, 1, 18, 33, 128, f16, 128, (16, 32, 0, 1, 4, 1)),
        ("bshd strides", 2, 3, 3, 17, 22, 32, f32, 32, small, None, None, False, (0, 2, 1, 3)),
        ("scale in memory", 1, 1, 1, 17, 17, 32, f32, 32, small, "top_left", None, True),
        ("big tiles causal", 1, 2, 1, 100, 90, 64, f16, 64, (32, 64, 0, 1, 4, 1), "top_left"),
        ("window 3 blocks", 1, 1, 1, 100, 100, 32, f32, 32, small, "top_left", 40),
        ("bool key mask", 2, 2, 2, 13, 21, 32, f32, 32, small, None, None, False, (0, 1, 2, 3),
         ("bool", (2, 1, 1, 21))),
        ("bool mask causal gqa", 1, 4, 2, 19, 33, 32, f16, 32, small, "bottom_right", None, False,
         (0, 1, 2, 3), ("bool", (1, 4, 19, 33))),
        ("f32 additive", 1, 2, 2, 35, 35, 64, f32, 64, small, None, None, False, (0, 1, 2, 3),
         ("f32", (1, 1, 35, 35))),
        ("f16 additive bshd", 2, 1, 1, 9, 30, 32, f16, 32, small, None, None, False,
         (0, 2, 1, 3), ("f16", (2, 1, 1, 30))),
    ]
    results = [run_case(*c) for c in cases]
    ok = all(r[0] for r in results)
    print("all ok" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
