"""CPU check of batchnorm_fwd.py under Triton's interpreter (TRITON_INTERPRET=1), no GPU, no
torch.

Usage: TRITON_INTERPRET=1 python interpret_batchnorm_fwd.py   (needs triton==3.9.0 and numpy;
the pack venv has no numpy, so e.g. `PYTHONPATH=target/triton-venv/lib/python3.11/site-packages
python3 interpret_batchnorm_fwd.py` with a python 3.11 that has numpy). Run by
`engines/tests/triton_batchnorm.rs` when such a python is found.

Runs the three kernels (spec channels-last, nchw channels-first, generic with both paths) on
random x of odd and even channel counts and spatial sizes, batch 1 included, NCHW and NHWC,
inference with inv_variance and with variance + epsilon, and training with and without saved
statistics and running statistics (the two launches: statistics into the workspace, then
normalize), f32/f16/bf16 x with f32 or x-typed per-channel tensors and y, every tile of the
family and several splits. Launch values as the Rust pack (batchnorm_fwd.rs) derives them:
the tile per path, the split count. Checks against numpy: inference f32 y bit-exact with the
reference engine's f32 formula ((x - mean) * inv * scale + bias, each op rounded; IEEE sqrt
and division), everything else against a float64 transcription within the stated tolerance;
and two runs of every training case bit-identical. The interpreter runs the programs one after
the other on the host: it checks indexing, masking, the split and merge, the flag and type
handling, not the device code generation. Prints one line per case and `all ok` at the end.
"""
import os
import sys

import numpy as np

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import batchnorm_fwd as bn  # noqa: E402

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


def storage(dt):
    return {"f32": np.float32, "f16": np.float16, BF16: np.uint16}[dt]


def make(values, dt):
    """Device-side array of `values` in type dt and its values as f32 (what the kernel reads)."""
    if dt == "f32":
        a = values.astype(np.float32)
        return a, a.copy()
    if dt == "f16":
        a = values.astype(np.float16)
        return a, a.astype(np.float32)
    a = to_bf16_bits(values)
    return a, from_bf16_bits(a)


def read(a, dt):
    if dt == BF16:
        return from_bf16_bits(a)
    return a.astype(np.float32)


def quantize(v, dt):
    """f32 -> dt -> f32 (round to nearest even)."""
    v = np.asarray(v, dtype=np.float32)
    if dt == "f32":
        return v
    if dt == "f16":
        return v.astype(np.float16).astype(np.float32)
    return from_bf16_bits(to_bf16_bits(v))


def ptr(a, entry_dt):
    """The kernel argument for array `a`: the pointer has the entry's element type; f32 data
    behind a 16-bit entry is announced by the flags."""
    if entry_dt == BF16:
        return Arr(a.view(np.uint16), dtype=tl.bfloat16)
    if entry_dt == "f16":
        return Arr(a.view(np.float16))
    return Arr(a.view(np.float32))


def tol(dt):
    return {"f32": 2e-5, "f16": 2e-3, BF16: 1.6e-2}[dt]


def cdiv(a, b):
    return -(-a // b)


def tile_for(cf, S):
    """(TC, TP, BLOCK_M, BLOCK_N) as the Rust static rule picks them."""
    if not cf:
        return 16, 128, 16, 128
    bm = 16
    for m, _n in bn.TILES:
        if cdiv(S, m) * m * 3 <= 4 * S:
            bm = m
            break
    nn = 2048 // bm
    return nn, bm, bm, nn


def splits_for(N, C, S, tc, tp, training, force=None):
    pairs = N * cdiv(S, tp)
    sp = min(cdiv(1024, cdiv(C, tc)), pairs)
    if training:
        sp = min(sp, max(1, int(np.sqrt(pairs * tp // 12))))
    sp = max(1, sp) if force is None else min(force, pairs)
    return cdiv(pairs, cdiv(pairs, sp))


def run_case(N, C, spatial, layout, dt, form, aux_f32, variant, seed, force_splits=None):
    """form: 'inv', 'var', 'train', 'train_stats', 'train_running'."""
    rng = np.random.default_rng(seed)
    S = int(np.prod(spatial)) if spatial else 1
    xv = rng.standard_normal((N, C, S)) * 2.0 + rng.standard_normal((1, C, 1)) * 3.0
    x_dev, x32 = make(xv, dt)
    # Memory layout and the strides the pack passes (after its n/s merge).
    if layout == "nchw":
        store = x_dev.reshape(-1).copy()
        sxn, sxc, sxs = C * S, S, 1
    else:
        store = np.ascontiguousarray(x_dev.transpose(0, 2, 1)).reshape(-1)
        sxn, sxc, sxs = S * C, 1, C
    n_, s_ = N, S
    if N == 1 or S == 1 or sxn == S * sxs:
        # positions of all images in one run (the pack's merge)
        sxs_m = sxn if S == 1 else sxs
        n_, s_, sxn, sxs = 1, N * S, 0, sxs_m
    if n_ == 1:
        sxn = 0
    cf = variant == "nchw" or (variant == "generic" and sxs == 1 and s_ > 1)
    if variant == "spec":
        assert sxc == 1 and not cf
    tc, tp, bm, bnn = tile_for(cf, s_)
    training = form.startswith("train")
    splits = splits_for(n_, C, s_, tc, tp, training, force_splits)
    aux = "f32" if aux_f32 else dt
    sc_dev, sc32 = make(rng.uniform(0.5, 1.5, C), aux)
    bi_dev, bi32 = make(rng.uniform(-1, 1, C), aux)
    eps = np.float32(1e-3 if form == "var" else 1e-5)
    mom = np.float32(0.1)
    y_dt = "f32" if (aux_f32 and seed % 2 == 0) else dt
    y = np.zeros(N * C * S, dtype=storage(y_dt))
    flags = 0
    flags |= 64 | 128 if aux == "f32" else 0
    flags |= 256 if y_dt == "f32" else 0
    flags |= 32 if (cf and variant == "generic") else 0
    m_dev = v_dev = sm = si = nm = nv = None
    if form in ("inv", "var"):
        m_dev, m32 = make(rng.uniform(-1, 1, C), aux)
        if form == "var":
            v_dev, v32 = make(rng.uniform(0.5, 2.0, C), aux)
            flags |= 2
        else:
            v_dev, v32 = make(1.0 / np.sqrt(rng.uniform(0.5, 2.0, C)), aux)
        flags |= 512 | 1024 if aux == "f32" else 0
    else:
        flags |= 1
        if form in ("train_stats", "train_running"):
            sm = np.zeros(C, dtype=storage(aux))
            si = np.zeros(C, dtype=storage(aux))
            flags |= 4 | 8
            flags |= 2048 | 4096 if aux == "f32" else 0
        if form == "train_running":
            m_dev, m32 = make(rng.uniform(-1, 1, C), aux)
            v_dev, v32 = make(rng.uniform(0.5, 2.0, C), aux)
            nm = np.zeros(C, dtype=storage(aux))
            nv = np.zeros(C, dtype=storage(aux))
            flags |= 16
            flags |= 512 | 1024 | 8192 | 16384 if aux == "f32" else 0
    ws = np.zeros((2 * splits + 1) * C, dtype=np.float32)
    cnt = N * S
    unbias = np.float32(np.float32(cnt) / np.float32(cnt - 1)) if cnt > 1 else np.float32(1.0)
    null = Arr(np.zeros(1, dtype=storage(dt)), dtype=tl.bfloat16 if dt == BF16 else None)
    P = lambda a: null if a is None else ptr(a, dt)  # noqa: E731
    kernel = bn.kernel_for(variant)
    # y strides: y is stored in x's layout.
    syn, syc, sys_ = sxn, sxc, sxs
    ints = [n_, C, s_, sxn, sxc, sxs, syn, syc, sys_, 1, 1, 1, 1, 1, 1, 1, 1, flags, splits]
    grid = (cdiv(C, tc), splits)
    args = [ptr(store, dt), P(sc_dev), P(bi_dev), P(y), P(m_dev), P(v_dev), P(sm), P(si), P(nm),
            P(nv), Arr(ws)]

    def launch(phase):
        kernel[grid](*args, *ints, phase, float(eps), float(mom), float(unbias),
                     BLOCK_M=bm, BLOCK_N=bnn)

    if training:
        launch(0)
    launch(2)
    # Reference values (as f32 reads of the stored inputs).
    xr = x32.astype(np.float64)
    if training:
        m64 = xr.mean(axis=(0, 2))
        var64 = ((xr - m64[None, :, None]) ** 2).mean(axis=(0, 2))
        inv64 = 1.0 / np.sqrt(var64 + np.float64(eps))
    else:
        m64 = m32.astype(np.float64)
        inv64 = (1.0 / np.sqrt(v32.astype(np.float64) + np.float64(eps))) if form == "var" \
            else v32.astype(np.float64)
    want = (xr - m64[None, :, None]) * inv64[None, :, None] * sc32[None, :, None] \
        + bi32[None, :, None]
    got = read(y, y_dt)
    if layout == "nhwc":
        got = got.reshape(N, S, C).transpose(0, 2, 1)
    got = got.reshape(N, C, S).astype(np.float64)
    errs = {}
    ok = True
    errs["y"] = np.max(np.abs(got - want) / (1 + np.abs(want)))
    ok &= errs["y"] <= tol(y_dt)
    if not training and y_dt == "f32":
        # The reference engine's f32 formula, each op rounded: bit-exact.
        if form == "var":
            inv32 = np.float32(1.0) / np.sqrt(v32 + eps)
        else:
            inv32 = v32
        ref = (x32 - m32[None, :, None]) * inv32[None, :, None] * sc32[None, :, None] \
            + bi32[None, :, None]
        exact = np.array_equal(got.astype(np.float32).view(np.uint32),
                               ref.astype(np.float32).view(np.uint32))
        errs["exact"] = int(exact)
        ok &= exact
    if sm is not None:
        errs["mean"] = np.max(np.abs(read(sm, aux) - m64) / (1 + np.abs(m64)))
        errs["inv"] = np.max(np.abs(read(si, aux) - inv64) / (1 + np.abs(inv64)))
        ok &= errs["mean"] <= tol(aux) and errs["inv"] <= tol(aux)
    if nm is not None:
        ub = cnt / (cnt - 1) if cnt > 1 else 1.0
        wnm = 0.9 * m32.astype(np.float64) + 0.1 * m64
        wnv = 0.9 * v32.astype(np.float64) + 0.1 * var64 * ub
        errs["nm"] = np.max(np.abs(read(nm, aux) - wnm) / (1 + np.abs(wnm)))
        errs["nv"] = np.max(np.abs(read(nv, aux) - wnv) / (1 + np.abs(wnv)))
        ok &= errs["nm"] <= tol(aux) and errs["nv"] <= tol(aux)
    if training:
        # A second run gives identical bits.
        first = y.copy()
        y[:] = 0
        ws[:] = 0
        launch(0)
        launch(2)
        same = np.array_equal(first.view(np.uint8), y.view(np.uint8))
        errs["rerun"] = int(same)
        ok &= same
    desc = " ".join(f"{k}={v:.2e}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in errs.items())
    print(f"{'ok ' if ok else 'BAD'} {variant:7} {layout} {dt:4} aux={aux:4} y={y_dt:4} "
          f"{form:13} N={N} C={C} sp={spatial} tile={bm}x{bnn} splits={splits} {desc}")
    return ok


def main():
    cases = []
    seed = 0
    forms = ["inv", "var", "train", "train_stats", "train_running"]
    dts = ["f32", "f16", "bf16"]
    shapes = [(1, 3, (7, 7)), (2, 5, (3, 3)), (3, 16, (4, 4)), (2, 17, (13,)), (4, 6, ()),
              (2, 3, (2, 5, 3)), (2, 16, (8, 8))]
    for N, C, sp in shapes:
        S = int(np.prod(sp)) if sp else 1
        for layout in ["nchw", "nhwc"]:
            seed += 1
            dt = dts[seed % 3]
            form = forms[seed % len(forms)]
            aux_f32 = dt != "f32" and seed % 2 == 0
            variants = ["generic"]
            if layout == "nhwc" and C % 16 == 0:
                variants.append("spec")
            if layout == "nchw" and S % 16 == 0 and N > 1:
                variants.append("nchw")
            for v in variants:
                cases.append((N, C, sp, layout, dt, form, aux_f32, v, seed))
    # Every form on the generic channels-first path and on the spec entry.
    for form in forms:
        seed += 1
        dt = dts[seed % 3]
        cases.append((2, 9, (5, 11), "nchw", dt, form, seed % 2 == 0, "generic", seed))
        cases.append((3, 16, (6, 6), "nhwc", dt, form, False, "spec", seed))
    # Each tile of the nchw entry (the rule's choice for S), training with running statistics.
    for S in [16, 64, 256, 1024]:
        seed += 1
        cases.append((2, 3, (S,), "nchw", "f16", "train_running", True, "nchw", seed))
    # Forced splits: several programs' partials, merged over more than one block of splits.
    seed += 1
    cases.append((2, 3, (40,), "nchw", "f32", "train_stats", False, "generic", seed, 5))
    cases.append((1, 18, (300,), "nhwc", "f32", "train_stats", False, "generic", seed, 3))
    cases.append((1, 16, (20000,), "nhwc", "bf16", "train_running", True, "spec", seed, 1000))
    ok = all([run_case(*c) for c in cases])
    print("all ok" if ok else "FAILURES")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
