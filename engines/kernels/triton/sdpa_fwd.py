"""SDPA forward family: scaled dot-product attention as flash attention (online softmax over
key blocks, f32 accumulation), f16/bf16 (and f32, IEEE products) with one head dim bucket per
entry (BLOCK_K = 32, 64 or 128; any D <= BLOCK_K is masked).

Semantics (the CPU reference engine's, engines/src/reference/ops/sdpa.rs): per (b, h, i)
    s[j]  = scale * (q[b, h, i, :] . k[b, h / REP, j, :]) (+ additive mask) ,
            -inf where the band, a boolean mask (0 = masked) or j >= SKV drops it,
    o     = sum_j softmax(s)[j] * v[b, h / REP, j, :],
    stats = logsumexp(s), max = max(s), sum_exp = sum_j exp(s[j] - max)  (natural log / exp),
    a row with every score masked gives o = 0, stats = max = -inf, sum_exp = 0.
Band (launch value `flags`): keep j <= i + shift + right (bit 3) and j > i + shift - left
(bit 4), shift = 0 (top-left) or SKV - SQ (bottom-right); causal = right 0. Key blocks wholly
outside the band are skipped. Scores are kept in the log2 domain (scale * log2(e) folded in,
exp2), converted back for the stats.

Arguments: q/k/v/o `[B, H(kv), S, D]` with element strides; `scale_ptr` (f32, read when flags
bit 0, else `scale_bits` holds the f32 bits of the scale); `mask_ptr` (`mask_kind` 1: bool
bytes, 2: f32, 3: f16, 4: bf16 additive; strides over (b, h, i, j), 0 = broadcast);
`stats_ptr`, `max_ptr`, `sum_ptr` (f32, written when flags bits 5, 6, 7; one set of strides
over (b, h, i)). Grid: (cdiv(SQ, BLOCK_M), B * H, 1); entries of GROUP_M 4 (query heads
packed): (cdiv(SQ * REP, BLOCK_M), B * H / REP, 1).
Launch contract: `hipkernel.sdpa_fwd.dispatch.v1` (engines/src/ingestor/packs/sdpa_fwd.rs).

Read by build.py at pack time (and by interpret_sdpa_fwd.py under the interpreter) only.
"""
import os

import triton
import triton.language as tl

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def _attend(acc, m_i, l_i, q, k_base, v_base, mask_ptr, m_row, lo, hi, offs_n, offs_d, m_ok,
            d_ok, diag, SKV, sks, skd, svs, svd, smk, qk_scale, mask_kind, flags, right, left,
            BLOCK_N: tl.constexpr, INPUT_PRECISION: tl.constexpr, MASKED: tl.constexpr,
            MASK_TENSOR: tl.constexpr):
    """Online softmax over the key blocks [lo, hi) into (acc, m_i, l_i). MASKED = False: every
    key of every block exists, lies inside the band for every row of the tile and no mask
    tensor is set (no per-score masking at all). MASK_TENSOR = False: the code reading a mask
    tensor is left out (entries of GROUP_M 2, which serve graphs without one)."""
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        n_ok = cols < SKV
        if MASKED:
            kt = tl.load(k_base + cols[None, :] * sks + offs_d[:, None] * skd,
                         mask=n_ok[None, :] & d_ok[:, None], other=0.0)
        else:
            kt = tl.load(k_base + cols[None, :] * sks + offs_d[:, None] * skd,
                         mask=d_ok[:, None], other=0.0)
        s = tl.dot(q, kt, input_precision=INPUT_PRECISION) * qk_scale
        if MASKED:
            keep = m_ok[:, None] & n_ok[None, :]
            if (flags & 8) != 0:
                keep = keep & (cols[None, :] <= diag[:, None] + right)
            if (flags & 16) != 0:
                keep = keep & (cols[None, :] > diag[:, None] - left)
            if MASK_TENSOR:
                if mask_kind != 0:
                    mp = m_row[:, None] + cols[None, :] * smk
                    mk = m_ok[:, None] & n_ok[None, :]
                    if mask_kind == 1:
                        mb = tl.load(mask_ptr + mp, mask=mk, other=0).to(tl.float32)
                        s = s + tl.where(mb != 0.0, 0.0, float("-inf"))
                    elif mask_kind == 2:
                        s = s + tl.load(mask_ptr.to(tl.pointer_type(tl.float32), bitcast=True) + mp,
                                        mask=mk, other=0.0) * 1.4426950408889634
                    elif mask_kind == 3:
                        s = s + tl.load(mask_ptr.to(tl.pointer_type(tl.float16), bitcast=True) + mp,
                                        mask=mk, other=0.0).to(tl.float32) * 1.4426950408889634
                    else:
                        s = s + tl.load(mask_ptr.to(tl.pointer_type(tl.bfloat16), bitcast=True) + mp,
                                        mask=mk, other=0.0).to(tl.float32) * 1.4426950408889634
            s = tl.where(keep, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_use = m_new
        p = tl.math.exp2(s - m_use[:, None])
        alpha = tl.math.exp2(m_i - m_use)
        l_i = l_i * alpha + tl.sum(p, 1)
        if MASKED:
            v = tl.load(v_base + cols[:, None] * svs + offs_d[None, :] * svd,
                        mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        else:
            v = tl.load(v_base + cols[:, None] * svs + offs_d[None, :] * svd,
                        mask=d_ok[None, :], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=INPUT_PRECISION)
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _sdpa_heads_packed(q_ptr, k_ptr, v_ptr, o_ptr, scale_ptr, mask_ptr, stats_ptr, max_ptr,
                       sum_ptr, H, REP, SQ, SKV, D,
                       sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd,
                       sob, soh, sos, sod, smb, smh, sms, smk, stb, sth, sts,
                       scale_bits, mask_kind, flags, shift, right, left,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       INPUT_PRECISION: tl.constexpr):
    """GROUP_M 4 (heads packed): the REP query heads that share a key/value head run in one
    tile, row r = i * REP + j holding query i of head hk * REP + j; grid (cdiv(SQ * REP,
    BLOCK_M), B * H / REP, 1). Decode and short-query GQA/MQA read each key/value block once
    per group instead of once per query head. Same semantics and arguments as the other
    entries; the band's key range is that of the tile's queries [r0 / REP, (r1 - 1) / REP]."""
    pid_m = tl.program_id(0)
    bk = tl.program_id(1)
    hkv = H // REP
    b = bk // hkv
    hk = bk - b * hkv
    start_m = pid_m * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_K)
    qi = offs_m // REP
    hrow = (hk * REP + offs_m % REP).to(tl.int64)
    m_ok = offs_m < SQ * REP
    d_ok = offs_d < D

    if (flags & 1) != 0:
        scale = tl.load(scale_ptr)
    else:
        scale = scale_bits.to(tl.float32, bitcast=True)
    qk_scale = scale * 1.4426950408889634

    b64 = b.to(tl.int64)
    q_rows = b64 * sqb + hrow * sqh + qi * sqs
    k_base = k_ptr + b64 * skb + hk.to(tl.int64) * skh
    v_base = v_ptr + b64 * svb + hk.to(tl.int64) * svh
    q = tl.load(q_ptr + (q_rows[:, None] + offs_d[None, :] * sqd),
                mask=m_ok[:, None] & d_ok[None, :], other=0.0)

    # The tile's queries [q_first, q_end): the key range of the band and its full blocks, as
    # hipdnn_sdpa_fwd computes them for rows [start_m, start_m + BLOCK_M).
    q_first = start_m // REP
    q_end = (start_m + BLOCK_M - 1) // REP + 1
    lo = 0
    hi = SKV
    if (flags & 8) != 0:
        hi = tl.minimum(hi, q_end + shift + right)
    if (flags & 16) != 0:
        lo = tl.maximum(lo, q_first + shift - left + 1)
        lo = (lo // BLOCK_N) * BLOCK_N
    hi = tl.maximum(hi, lo)
    f_lo = lo
    f_hi = (SKV // BLOCK_N) * BLOCK_N
    if (flags & 8) != 0:
        f_hi = tl.minimum(f_hi, (tl.maximum(q_first + shift + right + 1, 0) // BLOCK_N) * BLOCK_N)
    if (flags & 16) != 0:
        f_lo = tl.maximum(f_lo, tl.cdiv(tl.maximum(q_end + shift - left, 0), BLOCK_N) * BLOCK_N)
    if mask_kind != 0:
        f_lo = hi
    f_lo = tl.minimum(f_lo, hi)
    f_hi = tl.maximum(tl.minimum(f_hi, hi), f_lo)
    diag = qi + shift

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    m_row = b64 * smb + hrow * smh + qi * sms
    acc, m_i, l_i = _attend(acc, m_i, l_i, q, k_base, v_base, mask_ptr, m_row, lo, f_lo, offs_n,
                            offs_d, m_ok, d_ok, diag, SKV, sks, skd, svs, svd, smk, qk_scale,
                            mask_kind, flags, right, left, BLOCK_N, INPUT_PRECISION, True, True)
    acc, m_i, l_i = _attend(acc, m_i, l_i, q, k_base, v_base, mask_ptr, m_row, f_lo, f_hi, offs_n,
                            offs_d, m_ok, d_ok, diag, SKV, sks, skd, svs, svd, smk, qk_scale,
                            mask_kind, flags, right, left, BLOCK_N, INPUT_PRECISION, False, True)
    acc, m_i, l_i = _attend(acc, m_i, l_i, q, k_base, v_base, mask_ptr, m_row, f_hi, hi, offs_n,
                            offs_d, m_ok, d_ok, diag, SKV, sks, skd, svs, svd, smk, qk_scale,
                            mask_kind, flags, right, left, BLOCK_N, INPUT_PRECISION, True, True)

    empty = l_i == 0.0
    inv = tl.where(empty, 0.0, 1.0 / tl.where(empty, 1.0, l_i))
    out = acc * inv[:, None]
    o_rows = b64 * sob + hrow * soh + qi * sos
    tl.store(o_ptr + (o_rows[:, None] + offs_d[None, :] * sod),
             out.to(o_ptr.dtype.element_ty), mask=m_ok[:, None] & d_ok[None, :])
    if (flags & 224) != 0:
        st = b64 * stb + hrow * sth + qi * sts
        mx = tl.where(empty, float("-inf"), m_i * 0.6931471805599453)
        if (flags & 32) != 0:
            lse = tl.where(empty, float("-inf"),
                           (m_i + tl.math.log2(tl.where(empty, 1.0, l_i))) * 0.6931471805599453)
            tl.store(stats_ptr + st, lse, mask=m_ok)
        if (flags & 64) != 0:
            tl.store(max_ptr + st, mx, mask=m_ok)
        if (flags & 128) != 0:
            tl.store(sum_ptr + st, l_i, mask=m_ok)


@triton.jit
def hipdnn_sdpa_fwd(q_ptr, k_ptr, v_ptr, o_ptr, scale_ptr, mask_ptr, stats_ptr, max_ptr, sum_ptr,
                    H, REP, SQ, SKV, D,
                    sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd,
                    sob, soh, sos, sod, smb, smh, sms, smk, stb, sth, sts,
                    scale_bits, mask_kind, flags, shift, right, left,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    if GROUP_M == 4:
        _sdpa_heads_packed(q_ptr, k_ptr, v_ptr, o_ptr, scale_ptr, mask_ptr, stats_ptr, max_ptr,
                           sum_ptr, H, REP, SQ, SKV, D, sqb, sqh, sqs, sqd, skb, skh, sks, skd,
                           svb, svh, svs, svd, sob, soh, sos, sod, smb, smh, sms, smk, stb, sth,
                           sts, scale_bits, mask_kind, flags, shift, right, left, BLOCK_M,
                           BLOCK_N, BLOCK_K, INPUT_PRECISION)
    else:
        pid_m = tl.program_id(0)
        bh = tl.program_id(1)
        b = bh // H
        h = bh - b * H
        hk = h // REP
        start_m = pid_m * BLOCK_M
        offs_m = start_m + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, BLOCK_K)
        m_ok = offs_m < SQ
        d_ok = offs_d < D

        if (flags & 1) != 0:
            scale = tl.load(scale_ptr)
        else:
            scale = scale_bits.to(tl.float32, bitcast=True)
        qk_scale = scale * 1.4426950408889634

        q_base = q_ptr + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh
        k_base = k_ptr + b.to(tl.int64) * skb + hk.to(tl.int64) * skh
        v_base = v_ptr + b.to(tl.int64) * svb + hk.to(tl.int64) * svh
        q = tl.load(q_base + offs_m[:, None] * sqs + offs_d[None, :] * sqd,
                    mask=m_ok[:, None] & d_ok[None, :], other=0.0)

        # Key range of the band for this tile of rows (whole blocks outside it are skipped).
        lo = 0
        hi = SKV
        if (flags & 8) != 0:
            hi = tl.minimum(hi, start_m + BLOCK_M + shift + right)
        if (flags & 16) != 0:
            lo = tl.maximum(lo, start_m + shift - left + 1)
            lo = (lo // BLOCK_N) * BLOCK_N
        hi = tl.maximum(hi, lo)
        # Full blocks [f_lo, f_hi): inside the sequence and the band for every row of the tile,
        # no mask tensor; they run without per-score masking. The others run masked.
        f_lo = lo
        f_hi = (SKV // BLOCK_N) * BLOCK_N
        if (flags & 8) != 0:
            f_hi = tl.minimum(f_hi, (tl.maximum(start_m + shift + right + 1, 0) // BLOCK_N) * BLOCK_N)
        if (flags & 16) != 0:
            f_lo = tl.maximum(f_lo, tl.cdiv(tl.maximum(start_m + BLOCK_M + shift - left, 0), BLOCK_N)
                              * BLOCK_N)
        if mask_kind != 0:
            f_lo = hi
        f_lo = tl.minimum(f_lo, hi)
        f_hi = tl.maximum(tl.minimum(f_hi, hi), f_lo)
        diag = offs_m + shift

        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
        m_row = b.to(tl.int64) * smb + h.to(tl.int64) * smh + offs_m * sms
        acc, m_i, l_i = _attend(acc, m_i, l_i, q, k_base, v_base, mask_ptr, m_row, lo, f_lo, offs_n,
                                offs_d, m_ok, d_ok, diag, SKV, sks, skd, svs, svd, smk, qk_scale,
                                mask_kind, flags, right, left, BLOCK_N, INPUT_PRECISION, True,
                                GROUP_M != 2)
        acc, m_i, l_i = _attend(acc, m_i, l_i, q, k_base, v_base, mask_ptr, m_row, f_lo, f_hi, offs_n,
                                offs_d, m_ok, d_ok, diag, SKV, sks, skd, svs, svd, smk, qk_scale,
                                mask_kind, flags, right, left, BLOCK_N, INPUT_PRECISION, False,
                                GROUP_M != 2)
        acc, m_i, l_i = _attend(acc, m_i, l_i, q, k_base, v_base, mask_ptr, m_row, f_hi, hi, offs_n,
                                offs_d, m_ok, d_ok, diag, SKV, sks, skd, svs, svd, smk, qk_scale,
                                mask_kind, flags, right, left, BLOCK_N, INPUT_PRECISION, True,
                                GROUP_M != 2)

        empty = l_i == 0.0
        inv = tl.where(empty, 0.0, 1.0 / tl.where(empty, 1.0, l_i))
        out = acc * inv[:, None]
        o_base = o_ptr + b.to(tl.int64) * sob + h.to(tl.int64) * soh
        tl.store(o_base + offs_m[:, None] * sos + offs_d[None, :] * sod,
                 out.to(o_ptr.dtype.element_ty), mask=m_ok[:, None] & d_ok[None, :])
        if (flags & 224) != 0:
            st = b.to(tl.int64) * stb + h.to(tl.int64) * sth + offs_m * sts
            mx = tl.where(empty, float("-inf"), m_i * 0.6931471805599453)
            if (flags & 32) != 0:
                lse = tl.where(empty, float("-inf"),
                               (m_i + tl.math.log2(tl.where(empty, 1.0, l_i))) * 0.6931471805599453)
                tl.store(stats_ptr + st, lse, mask=m_ok)
            if (flags & 64) != 0:
                tl.store(max_ptr + st, mx, mask=m_ok)
            if (flags & 128) != 0:
                tl.store(sum_ptr + st, l_i, mask=m_ok)


KERNEL = hipdnn_sdpa_fwd
FAMILY = "sdpa_fwd"
POINTERS = ["q_ptr", "k_ptr", "v_ptr", "o_ptr", "scale_ptr", "mask_ptr", "stats_ptr",
            "max_ptr", "sum_ptr"]
INTS = ["H", "REP", "SQ", "SKV", "D",
        "sqb", "sqh", "sqs", "sqd", "skb", "skh", "sks", "skd", "svb", "svh", "svs", "svd",
        "sob", "soh", "sos", "sod", "smb", "smh", "sms", "smk", "stb", "sth", "sts",
        "scale_bits", "mask_kind", "flags", "shift", "right", "left"]
# Specialized variant ("spec"): q, k, v, o 16-byte aligned, D and their batch, head and row
# strides multiples of 16, unit head-dim strides constant 1. Everything else: "generic".
SPEC_DIV16 = ["q_ptr", "k_ptr", "v_ptr", "o_ptr", "D", "sqb", "sqh", "sqs", "skb", "skh", "sks",
              "svb", "svh", "svs", "sob", "soh", "sos"]
SPEC_ONE = ["sqd", "skd", "svd", "sod"]
HINTS = {"spec": (SPEC_DIV16, SPEC_ONE)}
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}


def pointer_type(name, ty):
    """Element type of a pointer parameter: q/k/v/o the data type, the mask bytes (i8; other
    mask types are read through a cast), the scale and the statistics f32."""
    if name == "mask_ptr":
        return "i8"
    if name in ("scale_ptr", "stats_ptr", "max_ptr", "sum_ptr"):
        return "fp32"
    return ty


# Packed for every target. Until 2026-12-03 gfx950 was skipped: its entries came out different
# on repeated builds, which was build.py reusing worker processes (Triton 3.9's AMD code
# generator keeps state from one compile to the next); with one process per entry two builds
# of the gfx950 entries in a row, with 2 workers and with 1, gave the same bytes.
SKIP_ARCHES = ()


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K = head dim bucket, GROUP_M, num_warps, num_stages) per
    variant. GROUP_M 1: every graph (the mask-tensor code compiled in); GROUP_M 2: the same
    tile without the mask-tensor code, for graphs without a mask tensor; GROUP_M 4: the query
    heads of a key/value head packed into one 16-row tile (_sdpa_heads_packed), for decode (the mask path's
    registers took every spec tile to 255 registers with spills on sm_90; without it
    128-178). Every spec tile is packed in both forms. AMD tiles keep K and V blocks within
    gfx90a/gfx942's 64 KiB of LDS."""
    out = {"spec": [], "generic": []}
    for d in (32, 64, 128):
        if dtype == "f32":
            out["generic"].append((64, 32, d, 1, 4, 1))
            continue
        if vendor == "cuda":
            # From benchmarking builds of the SWEEP tiles below on an H200 against PyTorch 2.11
            # flash, b8 h16, s 1024 / 4096, f16 and bf16, same run (docs/PERFORMANCE.md). Since
            # 2026-12-04 with the group-2 twins (no mask-tensor code: 128-178 registers instead
            # of 255 with spills): d64 128x64 w4 s3 without a band (1.28-1.31x), 64x64 w4 s3
            # causal (1.18-1.25x); d128 128x64 w8 s3 without a band (1.17-1.40x), 64x64 w4 s3
            # causal (1.13-1.31x; 128x64 w8 s3 is 2% faster at causal s4096 but the static rule
            # gives banded graphs 64-row tiles). d32 (f16/bf16; MiniLM's f32 graph takes the
            # generic entry): 128x64 w4 s3 alone. d128 128x64 w8 s3 needs 160 KiB of shared
            # memory, within sm_80's 163 KiB.
            tiles = {32: [(128, 64, 4, 3)], 64: [(128, 64, 4, 3), (64, 64, 4, 3)],
                     128: [(128, 64, 8, 3), (64, 64, 4, 3)]}[d]
            out["spec"] += [(bm, bn, d, 1, w, st) for bm, bn, w, st in tiles]
        else:
            out["spec"].append((128, 64 if d < 128 else 32, d, 1, 4, 1))
        if vendor == "cuda" and d > 32 and os.environ.get("HIPDNN_TRITON_SWEEP"):
            out["spec"] += [t for t in SWEEP[d] if t not in out["spec"]]
        out["generic"].append((64, 64 if d < 128 else 32, d, 1, 4, 1 if vendor == "hip" else 2))
    out["spec"] = [t for c in out["spec"] for t in (c, c[:3] + (2,) + c[4:])]
    if dtype != "f32":
        # GROUP_M 4, first in pack order: query heads packed per key/value head (decode
        # GQA/MQA), 16 rows; the static rule gives them S_q <= 16 with REP > 1 only.
        out["spec"] = [(16, 64 if d < 128 or vendor == "cuda" else 32, d, 4, 4,
                        3 if vendor == "cuda" else 1) for d in (32, 64, 128)] + out["spec"]
    return out


# Extra CUDA spec tiles packed only when HIPDNN_TRITON_SWEEP is set (never in the committed
# archives): `cargo run -p xtask -- pack-kernels --only triton --arch sm_90 --family sdpa_fwd
# ... --out DIR`, then `HIPDNN_BENCH_SWEEP=1 hipdnn-bench triton --only sdpa` with
# HIPDNN_KERNEL_DIR=DIR times each in a benchmarking build, PyTorch flash in the same run.
SWEEP = {
    d: [(bm, bn, d, 1, w, st) for bm, bn, w, st in
        [(128, 64, 4, 3), (64, 64, 4, 3), (64, 64, 4, 4), (128, 32, 4, 3), (64, 32, 4, 3),
         (64, 32, 4, 4), (128, 64, 8, 3), (128, 32, 8, 3), (64, 64, 4, 2), (128, 64, 8, 2)]]
    for d in (64, 128)
}
