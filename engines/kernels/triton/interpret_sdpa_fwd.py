"""CPU check of sdpa_fwd.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no torch.

Usage: TRITON_INTERPRET=1 python interpret_sdpa_fwd.py   (needs triton==3.9.0 and numpy; with
the pack venv and a system numpy of the same Python:
PYTHONPATH=target/triton-venv/lib/python3.11/site-packages python3 interpret_sdpa_fwd.py)

Runs the kernel on small random cases (odd sequence lengths, s_q != s_kv, head dims 32/64/128
and a masked 80 in the 128 bucket, causal top-left and bottom-right, a sliding window,
grouped-query heads (and the group-4 entries, query heads packed per key/value head),
permuted strides, boolean and additive masks that broadcast, a runtime
scale read from memory, fully masked rows; and the group-2 entries, built without the
mask-tensor code, on graphs without a mask) against a float64 numpy transcription of the CPU
reference engine's semantics (engines/src/reference/ops/sdpa.rs), and prints the largest
error of O, stats (logsumexp), max and sum_exp per case. The interpreter computes the dots
in the inputs' precision with numpy, so it checks indexing, masking, block skipping and the
online-softmax arithmetic, not the GPU's rounding. Not part of the build.
"""
import os
import struct
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_fwd  # noqa: E402


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


def reference(q, k, v, scale, mask, mask_bool, shift, right, left):
    """float64 transcription of ops/sdpa.rs: O, logsumexp, max, sum_exp."""
    B, H, SQ, D = q.shape
    HK, SKV = k.shape[1], k.shape[2]
    rep = H // HK
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    o = np.zeros((B, H, SQ, v.shape[3]))
    st = np.zeros((B, H, SQ))
    mx_ = np.zeros((B, H, SQ))
    se = np.zeros((B, H, SQ))
    m = None if mask is None else np.broadcast_to(mask.astype(np.float64), (B, H, SQ, SKV))
    i = np.arange(SQ)[:, None]
    j = np.arange(SKV)[None, :]
    keep = np.ones((SQ, SKV), dtype=bool)
    if right is not None:
        keep &= j <= i + shift + right
    if left is not None:
        keep &= j > i + shift - left
    for b in range(B):
        for h in range(H):
            s = scale * (q64[b, h] @ k64[b, h // rep].T)
            kp = keep.copy()
            if m is not None:
                if mask_bool:
                    kp &= m[b, h] != 0
                else:
                    s = s + m[b, h]
            s = np.where(kp, s, -np.inf)
            mx = s.max(axis=1)
            safe = np.where(np.isinf(mx), 0.0, mx)
            p = np.exp(s - safe[:, None])
            sm = p.sum(axis=1)
            empty = sm == 0
            o[b, h] = np.where(empty[:, None], 0.0, (p @ v64[b, h // rep]) / np.where(empty, 1, sm)[:, None])
            st[b, h] = np.where(empty, -np.inf, safe + np.log(np.where(empty, 1, sm)))
            mx_[b, h] = np.where(empty, -np.inf, mx)
            se[b, h] = sm
    return o, st, mx_, se


def strided(x, perm):
    """x (logical [B, H, S, D]) stored with its axes in `perm` order; returns (storage, strides
    of the logical axes in elements)."""
    store = np.ascontiguousarray(x.transpose(perm))
    el = store.itemsize
    inv = np.argsort(perm)
    strides = [store.strides[inv[a]] // el for a in range(4)]
    return store, strides


def err(got, want):
    both_inf = np.isinf(got) & np.isinf(want) & (np.sign(got) == np.sign(want))
    if np.any(np.isinf(got) != np.isinf(want)):
        return float("inf")
    d = np.where(both_inf, 0.0, np.abs(got.astype(np.float64) - np.where(both_inf, 0, want)))
    return float(d.max()) if d.size else 0.0


def run_case(name, B, H, HK, SQ, SKV, D, dtype, bucket, cfg, causal=None, window=None,
             mask=None, scale_mem=False, perm=(0, 1, 2, 3), stats=True):
    rng = np.random.default_rng(B * 7919 + SQ * 31 + SKV + D)
    q = rng.standard_normal((B, H, SQ, D)).astype(dtype)
    k = rng.standard_normal((B, HK, SKV, D)).astype(dtype)
    v = rng.standard_normal((B, HK, SKV, D)).astype(dtype)
    scale = 1.0 / np.sqrt(D) * 1.3
    shift = 0
    right = left = None
    if causal == "bottom_right":
        shift = SKV - SQ
    if causal:
        right = 0
    if window is not None:
        left = window
    mkind, mstore, mstr, mbool, mref = 0, np.zeros(1, np.int8), [0, 0, 0, 0], False, None
    if mask is not None:
        kind, mdims = mask
        if kind == "bool":
            mref = (rng.random(mdims) > 0.3).astype(np.int8)
            mref[..., 0] = 1 if mdims[-1] > 1 else mref[..., 0]
            mkind, mbool = 1, True
            mstore = mref
        else:
            mt = {"f32": np.float32, "f16": np.float16}[kind]
            mref = (rng.standard_normal(mdims) * 2).astype(mt)
            mkind = {"f32": 2, "f16": 3}[kind]
            mstore = mref
        full = [B, H, SQ, SKV]
        el = mstore.itemsize
        mstr = [0 if mdims[a] == 1 and full[a] != 1 else mstore.strides[a] // el for a in range(4)]
    qs, qst = strided(q, perm)
    ks, kst = strided(k, perm)
    vs, vst = strided(v, perm)
    o = np.full((B, H, SQ, D), 77.0, dtype=dtype)
    os_, ost = strided(o, perm)
    st = np.full((B, H, SQ), 5.0, np.float32)
    mx = np.full((B, H, SQ), 5.0, np.float32)
    se = np.full((B, H, SQ), 5.0, np.float32)
    sc = np.array([scale], np.float32)
    flags = (1 if scale_mem else 0) | (8 if right is not None else 0) | (16 if left is not None else 0)
    flags |= 224 if stats else 0
    bits = struct.unpack("<i", struct.pack("<f", np.float32(scale)))[0]
    bm, bn, _bk, gm, _w, _s = cfg
    # GROUP_M 4 packs the H / HK query heads of a key/value head into the tile's rows.
    grid = (-(-(SQ * (H // HK)) // bm), B * HK, 1) if gm == 4 else (-(-SQ // bm), B * H, 1)
    sdpa_fwd.KERNEL[grid](
        Arr(qs), Arr(ks), Arr(vs), Arr(os_), Arr(sc), Arr(mstore), Arr(st), Arr(mx), Arr(se),
        H, H // HK, SQ, SKV, D, *qst, *kst, *vst, *ost, *mstr, H * SQ, SQ, 1,
        0 if scale_mem else bits, mkind, flags, shift, right or 0, left or 0,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bucket, GROUP_M=gm, INPUT_PRECISION="ieee")
    got = os_.transpose(np.argsort(perm))
    want = reference(q, k, v, np.float32(scale), mref, mbool, shift, right, left)
    e = [err(got, want[0]), err(st, want[1]), err(mx, want[2]), err(se, want[3])]
    tol = {np.float32: 1e-4, np.float16: 4e-3}[dtype]
    tol_se = tol * max(1.0, float(np.abs(want[3]).max()))
    ok = e[0] <= tol and e[1] <= tol * 4 and e[2] <= tol * 4 and e[3] <= tol_se
    if not stats:
        ok = e[0] <= tol and (st == 5.0).all()
    print(f"{'ok ' if ok else 'BAD'} {name}: b{B} h{H}/{HK} sq{SQ} skv{SKV} d{D}/{bucket} "
          f"{np.dtype(dtype).name} tile {bm}x{bn} max err o {e[0]:.2e} lse {e[1]:.2e} "
          f"max {e[2]:.2e} sum_exp {e[3]:.2e}")
    return ok, e


def main():
    small = (16, 16, 0, 1, 4, 1)
    f32, f16 = np.float32, np.float16
    cases = [
        ("plain", 1, 2, 2, 17, 17, 32, f32, 32, small),
        ("plain odd", 2, 1, 1, 1, 77, 32, f16, 32, small),
        ("causal tl", 1, 2, 2, 33, 20, 64, f32, 64, small),
        ("causal br sq>skv", 1, 1, 1, 29, 13, 32, f32, 32, small, "bottom_right"),
        ("causal br sq<skv", 1, 2, 1, 17, 45, 32, f16, 32, small, "bottom_right"),
        ("causal tl sq>skv", 1, 1, 1, 40, 9, 32, f32, 32, small, "top_left"),
        ("window", 1, 1, 1, 37, 37, 32, f32, 32, small, "top_left", 5),
        ("gqa", 2, 4, 2, 19, 23, 64, f16, 64, small),
        ("d80 in 128", 1, 1, 1, 21, 18, 80, f32, 128, small),
        ("d128", 1, 1, 1, 18, 33, 128, f16, 128, (32, 16, 0, 1, 4, 1)),
        ("bshd strides", 2, 3, 3, 17, 22, 32, f32, 32, small, None, None, None, False, (0, 2, 1, 3)),
        ("bool key mask", 2, 2, 2, 13, 21, 32, f32, 32, small, None, None, ("bool", (2, 1, 1, 21))),
        ("bool mask causal", 1, 2, 2, 13, 21, 32, f16, 32, small, "bottom_right", None,
         ("bool", (1, 2, 13, 21))),
        ("f32 additive", 1, 2, 2, 15, 15, 32, f32, 32, small, None, None, ("f32", (1, 1, 15, 15))),
        ("f16 additive", 2, 1, 1, 9, 30, 32, f16, 32, small, None, None, ("f16", (2, 1, 1, 30))),
        ("scale in memory", 1, 1, 1, 17, 17, 32, f32, 32, small, "top_left", None, None, True),
        ("no stats", 1, 1, 1, 17, 5, 32, f32, 32, small, None, None, None, False, (0, 1, 2, 3), False),
        ("big tile", 1, 1, 1, 129, 129, 64, f16, 64, (64, 32, 0, 1, 4, 1), "top_left"),
        ("window 3 phases", 1, 1, 1, 100, 100, 32, f32, 32, small, "top_left", 40),
        ("window br", 1, 1, 1, 70, 130, 32, f16, 32, small, "bottom_right", 33),
        ("br long keys", 1, 2, 2, 40, 200, 64, f32, 64, (16, 32, 0, 1, 4, 1), "bottom_right"),
        # Group 2: the entries built without the mask-tensor code (graphs without a mask).
        ("g2 plain", 2, 2, 2, 37, 29, 64, f16, 64, (16, 16, 0, 2, 4, 1)),
        ("g2 causal", 1, 2, 2, 45, 45, 128, f16, 128, (32, 16, 0, 2, 4, 1), "top_left"),
        ("g2 window br", 1, 1, 1, 70, 130, 32, f32, 32, (16, 16, 0, 2, 4, 1), "bottom_right", 33),
        # Group 4: query heads packed per key/value head (decode GQA/MQA), rows i * REP + j.
        ("g4 decode gqa", 2, 8, 2, 1, 77, 64, f16, 64, (16, 16, 0, 4, 4, 1)),
        ("g4 mqa sq3", 1, 6, 1, 3, 40, 32, f32, 32, (16, 16, 0, 4, 4, 1)),
        ("g4 causal br", 1, 4, 2, 5, 37, 32, f16, 32, (16, 16, 0, 4, 4, 1), "bottom_right"),
        ("g4 window tl", 1, 8, 2, 9, 50, 32, f32, 32, (16, 16, 0, 4, 4, 1), "top_left", 6),
        ("g4 bool mask", 2, 4, 2, 2, 21, 32, f32, 32, (16, 16, 0, 4, 4, 1), None, None,
         ("bool", (2, 4, 2, 21))),
        ("g4 rep 1", 1, 2, 2, 7, 19, 64, f16, 64, (16, 16, 0, 4, 4, 1), "top_left"),
        ("g4 bshd d80", 1, 4, 1, 4, 33, 80, f32, 128, (16, 16, 0, 4, 4, 1), None, None, None,
         False, (0, 2, 1, 3)),
    ]
    results = [run_case(*c) for c in cases]
    worst = {}
    for (c, (_ok, e)) in zip(cases, results):
        if len(c) > 15 and c[15] is False:
            continue  # stats not written
        key = np.dtype(c[7]).name
        worst[key] = [max(a, b) for a, b in zip(worst.get(key, [0, 0, 0, 0]), e)]
    for key, e in worst.items():
        print(f"worst {key}: o {e[0]:.2e} lse {e[1]:.2e} max {e[2]:.2e} sum_exp {e[3]:.2e}")
    ok = all(r[0] for r in results)
    print("all ok" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
