"""SDPA backward family: flash attention backward (dq, dk, dv from q, k, v, o, do and the
forward's logsumexp statistics), f16/bf16 (f32 accumulate) and f32 (IEEE products), one head
dim bucket per entry (BLOCK_K = 32, 64 or 128; any D <= BLOCK_K is masked). Deterministic:
no atomics; every sum runs in a fixed order.

Semantics (the CPU reference engine's, engines/src/reference/ops/sdpa.rs `sdpa_backward`):
per (b, h, i, j), with hk = h / REP,
    s[i, j] = scale * (q[b, h, i, :] . k[b, hk, j, :]) (+ additive mask), -inf where the band
              or a boolean mask (0 = masked) drops (i, j),
    P       = exp(s - stats[b, h, i])          (0 where stats is -inf: a fully masked row),
    delta_i = sum_d do[b, h, i, d] * o[b, h, i, d],
    dS      = P * (do . v[b, hk, j, :] - delta_i),
    dq      = scale * dS . k,   dk = scale * sum_{h in hk's group} dS^T . q,
    dv      = sum_{h in hk's group} P^T . do.
Band (launch value `flags`): keep j <= i + shift + right (bit 3) and j > i + shift - left
(bit 4), shift = 0 (top-left) or SKV - SQ (bottom-right); causal = right 0. Blocks wholly
outside the band are skipped; blocks wholly inside the band and the sequences run without
per-score masking. Scores are kept in the log2 domain (scale * log2(e) folded in,
exp2).

Two launches of one code object (argument `phase`):
  phase 0, grid (cdiv(SQ, BLOCK_N), B * H): a program owns BLOCK_N query rows of one head;
    it writes delta for them into the workspace (f32 [B, H, SQ], contiguous) and dq, walking
    the key blocks of BLOCK_M keys in increasing order;
  phase 1, grid (cdiv(SKV, BLOCK_N), B * H / REP): a program owns BLOCK_N keys of one
    key/value head; it walks the REP query heads of its group in increasing order and, in
    each, the query blocks of BLOCK_M rows in increasing order, and writes dk and dv.
Phase 1 reads the delta phase 0 wrote (same stream, in order).

Arguments: q/k/v/o/do/dq/dk/dv `[B, H(kv), S, D]` with element strides; `stats_ptr` f32 with
strides over (b, h, i); `scale_ptr` (f32, read when flags bit 0, else `scale_bits` holds the
f32 bits of the scale); `mask_ptr` (`mask_kind` 1: bool bytes, 2: f32, 3: f16, 4: bf16
additive; strides smb, smh, sms, smk over (b, h, i, j), 0 = broadcast); `ws_ptr` the f32
workspace. With a mask tensor every block runs masked.
Launch contract: `hipkernel.sdpa_bwd.dispatch.v1` (engines/src/ingestor/packs/sdpa_bwd.rs).

Read by build.py at pack time (and by interpret_sdpa_bwd.py under the interpreter) only.
"""
import triton
import triton.language as tl


@triton.jit
def _mask_scores(s, mask_ptr, mp, mk, mask_kind):
    """The mask tensor applied to log2-domain scores `s` at element offsets `mp` (`mk`: which
    exist): `mask_kind` 1 BOOLEAN bytes (0 masks the score: -inf), 2 f32, 3 f16, 4 bf16 added
    (times log2(e))."""
    if mask_kind == 1:
        mb = tl.load(mask_ptr + mp, mask=mk, other=1).to(tl.float32)
        s = tl.where(mb != 0.0, s, float("-inf"))
    elif mask_kind == 2:
        s = s + tl.load(mask_ptr.to(tl.pointer_type(tl.float32), bitcast=True) + mp, mask=mk,
                        other=0.0) * 1.4426950408889634
    elif mask_kind == 3:
        s = s + tl.load(mask_ptr.to(tl.pointer_type(tl.float16), bitcast=True) + mp, mask=mk,
                        other=0.0).to(tl.float32) * 1.4426950408889634
    else:
        s = s + tl.load(mask_ptr.to(tl.pointer_type(tl.bfloat16), bitcast=True) + mp, mask=mk,
                        other=0.0).to(tl.float32) * 1.4426950408889634
    return s


@triton.jit
def _dq_blocks(dq, q, do, delta, lse, rows, r_ok, k_base, v_base, mask_ptr, m_row, lo, hi, offs_d,
               d_ok, SKV, sks, skd, svs, svd, smk, qk_scale, mask_kind, flags, shift, right, left,
               BLOCK_M: tl.constexpr, INPUT_PRECISION: tl.constexpr, MASKED: tl.constexpr):
    """dq += dS·K over the key blocks [lo, hi) of BLOCK_M keys, in order. MASKED = False: every
    key of every block exists and lies inside the band for every row of the tile, and there is
    no mask tensor (no per-score masking)."""
    for start_n in range(lo, hi, BLOCK_M):
        cols = start_n + tl.arange(0, BLOCK_M)
        if MASKED:
            c_ok = cols < SKV
            kt = tl.load(k_base + cols[None, :] * sks + offs_d[:, None] * skd,
                         mask=c_ok[None, :] & d_ok[:, None], other=0.0)
            vt = tl.load(v_base + cols[None, :] * svs + offs_d[:, None] * svd,
                         mask=c_ok[None, :] & d_ok[:, None], other=0.0)
        else:
            kt = tl.load(k_base + cols[None, :] * sks + offs_d[:, None] * skd,
                         mask=d_ok[:, None], other=0.0)
            vt = tl.load(v_base + cols[None, :] * svs + offs_d[:, None] * svd,
                         mask=d_ok[:, None], other=0.0)
        s = tl.dot(q, kt, input_precision=INPUT_PRECISION) * qk_scale
        if MASKED:
            if mask_kind != 0:
                mp = m_row[:, None] + cols[None, :] * smk
                mk = r_ok[:, None] & c_ok[None, :]
                s = _mask_scores(s, mask_ptr, mp, mk, mask_kind)
        p = tl.math.exp2(s - lse[:, None])
        if MASKED:
            keep = c_ok[None, :] & (rows[:, None] >= 0)
            if (flags & 8) != 0:
                keep = keep & (cols[None, :] <= rows[:, None] + shift + right)
            if (flags & 16) != 0:
                keep = keep & (cols[None, :] > rows[:, None] + shift - left)
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, vt, input_precision=INPUT_PRECISION)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(q.dtype), tl.trans(kt), dq, input_precision=INPUT_PRECISION)
    return dq


@triton.jit
def _dkdv_blocks(dk, dv, k, v, cols, c_ok, q_base, do_base, st_base, ws_base, mask_ptr, m_base,
                 lo, hi, offs_d, d_ok, SQ, sqs, sqd, sdos, sdod, sts, sms, smk, qk_scale,
                 mask_kind, flags, shift, right, left, BLOCK_M: tl.constexpr,
                 INPUT_PRECISION: tl.constexpr, MASKED: tl.constexpr):
    """dv += Pᵀ·dO and dk += dSᵀ·Q over the query blocks [lo, hi) of BLOCK_M rows of one query
    head, in order. MASKED = False: every row of every block exists, every (row, key) of the
    tile lies inside the band, and there is no mask tensor."""
    for start_m in range(lo, hi, BLOCK_M):
        rows = start_m + tl.arange(0, BLOCK_M)
        if MASKED:
            r_ok = rows < SQ
            qt = tl.load(q_base + rows[None, :] * sqs + offs_d[:, None] * sqd,
                         mask=r_ok[None, :] & d_ok[:, None], other=0.0)
            do = tl.load(do_base + rows[:, None] * sdos + offs_d[None, :] * sdod,
                         mask=r_ok[:, None] & d_ok[None, :], other=0.0)
            lse = tl.load(st_base + rows * sts, mask=r_ok, other=0.0) * 1.4426950408889634
            delta = tl.load(ws_base + rows, mask=r_ok, other=0.0)
        else:
            qt = tl.load(q_base + rows[None, :] * sqs + offs_d[:, None] * sqd,
                         mask=d_ok[:, None], other=0.0)
            do = tl.load(do_base + rows[:, None] * sdos + offs_d[None, :] * sdod,
                         mask=d_ok[None, :], other=0.0)
            lse = tl.load(st_base + rows * sts) * 1.4426950408889634
            delta = tl.load(ws_base + rows)
        lse = tl.where(lse == float("-inf"), float("inf"), lse)
        st = tl.dot(k, qt, input_precision=INPUT_PRECISION) * qk_scale
        if MASKED:
            if mask_kind != 0:
                mp = m_base + rows[None, :] * sms + cols[:, None] * smk
                mk = r_ok[None, :] & c_ok[:, None]
                st = _mask_scores(st, mask_ptr, mp, mk, mask_kind)
        pt = tl.math.exp2(st - lse[None, :])
        if MASKED:
            keep = r_ok[None, :] & (cols[:, None] >= 0)
            if (flags & 8) != 0:
                keep = keep & (cols[:, None] <= rows[None, :] + shift + right)
            if (flags & 16) != 0:
                keep = keep & (cols[:, None] > rows[None, :] + shift - left)
            pt = tl.where(keep, pt, 0.0)
        dv = tl.dot(pt.to(do.dtype), do, dv, input_precision=INPUT_PRECISION)
        dpt = tl.dot(v, tl.trans(do), input_precision=INPUT_PRECISION)
        dst = pt * (dpt - delta[None, :])
        dk = tl.dot(dst.to(qt.dtype), tl.trans(qt), dk, input_precision=INPUT_PRECISION)
    return dk, dv


@triton.jit
def hipdnn_sdpa_bwd(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, stats_ptr, dq_ptr, dk_ptr, dv_ptr,
                    scale_ptr, mask_ptr, ws_ptr,
                    H, REP, SQ, SKV, D,
                    sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd,
                    sob, soh, sos, sod, sdob, sdoh, sdos, sdod,
                    sdqb, sdqh, sdqs, sdqd, sdkb, sdkh, sdks, sdkd, sdvb, sdvh, sdvs, sdvd,
                    stb, sth, sts, smb, smh, sms, smk,
                    scale_bits, mask_kind, flags, shift, right, left, phase,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    INPUT_PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    offs_d = tl.arange(0, BLOCK_K)
    d_ok = offs_d < D
    if (flags & 1) != 0:
        scale = tl.load(scale_ptr)
    else:
        scale = scale_bits.to(tl.float32, bitcast=True)
    qk_scale = scale * 1.4426950408889634
    HK = H // REP

    if phase == 0:
        # dq and delta for BLOCK_N query rows of head h.
        b = bh // H
        h = bh - b * H
        hk = h // REP
        start = pid * BLOCK_N
        rows = start + tl.arange(0, BLOCK_N)
        r_ok = rows < SQ
        io = r_ok[:, None] & d_ok[None, :]
        q = tl.load(q_ptr + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh
                    + rows[:, None] * sqs + offs_d[None, :] * sqd, mask=io, other=0.0)
        do = tl.load(do_ptr + b.to(tl.int64) * sdob + h.to(tl.int64) * sdoh
                     + rows[:, None] * sdos + offs_d[None, :] * sdod, mask=io, other=0.0)
        o = tl.load(o_ptr + b.to(tl.int64) * sob + h.to(tl.int64) * soh
                    + rows[:, None] * sos + offs_d[None, :] * sod, mask=io, other=0.0)
        delta = tl.sum(do.to(tl.float32) * o.to(tl.float32), 1)
        tl.store(ws_ptr + bh.to(tl.int64) * SQ + rows, delta, mask=r_ok)
        lse = tl.load(stats_ptr + b.to(tl.int64) * stb + h.to(tl.int64) * sth + rows * sts,
                      mask=r_ok, other=0.0) * 1.4426950408889634
        lse = tl.where(lse == float("-inf"), float("inf"), lse)
        k_base = k_ptr + b.to(tl.int64) * skb + hk.to(tl.int64) * skh
        v_base = v_ptr + b.to(tl.int64) * svb + hk.to(tl.int64) * svh
        # Key range of the band for these rows.
        lo = 0
        hi = SKV
        if (flags & 8) != 0:
            hi = tl.minimum(hi, start + BLOCK_N + shift + right)
        if (flags & 16) != 0:
            lo = tl.maximum(lo, start + shift - left + 1)
            lo = (lo // BLOCK_M) * BLOCK_M
        hi = tl.maximum(hi, lo)
        # Full key blocks [f_lo, f_hi): inside the sequence and the band for every row.
        f_lo = lo
        f_hi = (SKV // BLOCK_M) * BLOCK_M
        if (flags & 8) != 0:
            f_hi = tl.minimum(f_hi, (tl.maximum(start + shift + right + 1, 0) // BLOCK_M) * BLOCK_M)
        if (flags & 16) != 0:
            f_lo = tl.maximum(f_lo, tl.cdiv(tl.maximum(start + BLOCK_N + shift - left, 0),
                                            BLOCK_M) * BLOCK_M)
        if mask_kind != 0:
            f_lo = hi
        f_lo = tl.minimum(f_lo, hi)
        f_hi = tl.maximum(tl.minimum(f_hi, hi), f_lo)
        m_row = b.to(tl.int64) * smb + h.to(tl.int64) * smh + rows.to(tl.int64) * sms
        dq = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        dq = _dq_blocks(dq, q, do, delta, lse, rows, r_ok, k_base, v_base, mask_ptr, m_row, lo, f_lo,
                        offs_d, d_ok, SKV, sks, skd, svs, svd, smk, qk_scale, mask_kind, flags,
                        shift, right, left, BLOCK_M, INPUT_PRECISION, True)
        dq = _dq_blocks(dq, q, do, delta, lse, rows, r_ok, k_base, v_base, mask_ptr, m_row, f_lo, f_hi,
                        offs_d, d_ok, SKV, sks, skd, svs, svd, smk, qk_scale, mask_kind, flags,
                        shift, right, left, BLOCK_M, INPUT_PRECISION, False)
        dq = _dq_blocks(dq, q, do, delta, lse, rows, r_ok, k_base, v_base, mask_ptr, m_row, f_hi, hi,
                        offs_d, d_ok, SKV, sks, skd, svs, svd, smk, qk_scale, mask_kind, flags,
                        shift, right, left, BLOCK_M, INPUT_PRECISION, True)
        dq = dq * scale
        tl.store(dq_ptr + b.to(tl.int64) * sdqb + h.to(tl.int64) * sdqh
                 + rows[:, None] * sdqs + offs_d[None, :] * sdqd,
                 dq.to(dq_ptr.dtype.element_ty), mask=io)
    else:
        # dk and dv for BLOCK_N keys of key/value head hk.
        b = bh // HK
        hk = bh - b * HK
        start = pid * BLOCK_N
        cols = start + tl.arange(0, BLOCK_N)
        c_ok = cols < SKV
        io = c_ok[:, None] & d_ok[None, :]
        k = tl.load(k_ptr + b.to(tl.int64) * skb + hk.to(tl.int64) * skh
                    + cols[:, None] * sks + offs_d[None, :] * skd, mask=io, other=0.0)
        v = tl.load(v_ptr + b.to(tl.int64) * svb + hk.to(tl.int64) * svh
                    + cols[:, None] * svs + offs_d[None, :] * svd, mask=io, other=0.0)
        # Query range of the band for these keys: j <= i + shift + right gives
        # i >= start - shift - right; j > i + shift - left gives i < start + BLOCK_N - shift + left.
        lo = 0
        hi = SQ
        if (flags & 8) != 0:
            lo = tl.maximum(lo, start - shift - right)
            lo = (lo // BLOCK_M) * BLOCK_M
        if (flags & 16) != 0:
            hi = tl.minimum(hi, start + BLOCK_N - shift + left)
        hi = tl.maximum(hi, lo)
        # Full query blocks [f_lo, f_hi): inside the sequence and the band for every key.
        f_lo = lo
        f_hi = (SQ // BLOCK_M) * BLOCK_M
        if (flags & 8) != 0:
            f_lo = tl.maximum(f_lo, tl.cdiv(tl.maximum(start + BLOCK_N - 1 - shift - right, 0),
                                            BLOCK_M) * BLOCK_M)
        if (flags & 16) != 0:
            f_hi = tl.minimum(f_hi, (tl.maximum(start - shift + left, 0) // BLOCK_M) * BLOCK_M)
        if mask_kind != 0:
            f_lo = hi
        f_lo = tl.minimum(f_lo, hi)
        f_hi = tl.maximum(tl.minimum(f_hi, hi), f_lo)
        dk = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        dv = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        for r in range(0, REP):
            h = hk * REP + r
            q_base = q_ptr + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh
            do_base = do_ptr + b.to(tl.int64) * sdob + h.to(tl.int64) * sdoh
            st_base = stats_ptr + b.to(tl.int64) * stb + h.to(tl.int64) * sth
            ws_base = ws_ptr + (b * H + h).to(tl.int64) * SQ
            m_base = b.to(tl.int64) * smb + h.to(tl.int64) * smh
            dk, dv = _dkdv_blocks(dk, dv, k, v, cols, c_ok, q_base, do_base, st_base, ws_base,
                                  mask_ptr, m_base, lo, f_lo, offs_d, d_ok, SQ, sqs, sqd, sdos,
                                  sdod, sts, sms, smk, qk_scale, mask_kind, flags, shift, right,
                                  left, BLOCK_M, INPUT_PRECISION, True)
            dk, dv = _dkdv_blocks(dk, dv, k, v, cols, c_ok, q_base, do_base, st_base, ws_base,
                                  mask_ptr, m_base, f_lo, f_hi, offs_d, d_ok, SQ, sqs, sqd, sdos,
                                  sdod, sts, sms, smk, qk_scale, mask_kind, flags, shift, right,
                                  left, BLOCK_M, INPUT_PRECISION, False)
            dk, dv = _dkdv_blocks(dk, dv, k, v, cols, c_ok, q_base, do_base, st_base, ws_base,
                                  mask_ptr, m_base, f_hi, hi, offs_d, d_ok, SQ, sqs, sqd, sdos,
                                  sdod, sts, sms, smk, qk_scale, mask_kind, flags, shift, right,
                                  left, BLOCK_M, INPUT_PRECISION, True)
        dk = dk * scale
        tl.store(dk_ptr + b.to(tl.int64) * sdkb + hk.to(tl.int64) * sdkh
                 + cols[:, None] * sdks + offs_d[None, :] * sdkd,
                 dk.to(dk_ptr.dtype.element_ty), mask=io)
        tl.store(dv_ptr + b.to(tl.int64) * sdvb + hk.to(tl.int64) * sdvh
                 + cols[:, None] * sdvs + offs_d[None, :] * sdvd,
                 dv.to(dv_ptr.dtype.element_ty), mask=io)


KERNEL = hipdnn_sdpa_bwd
FAMILY = "sdpa_bwd"
POINTERS = ["q_ptr", "k_ptr", "v_ptr", "o_ptr", "do_ptr", "stats_ptr", "dq_ptr", "dk_ptr",
            "dv_ptr", "scale_ptr", "mask_ptr", "ws_ptr"]
INTS = ["H", "REP", "SQ", "SKV", "D",
        "sqb", "sqh", "sqs", "sqd", "skb", "skh", "sks", "skd", "svb", "svh", "svs", "svd",
        "sob", "soh", "sos", "sod", "sdob", "sdoh", "sdos", "sdod",
        "sdqb", "sdqh", "sdqs", "sdqd", "sdkb", "sdkh", "sdks", "sdkd", "sdvb", "sdvh", "sdvs",
        "sdvd", "stb", "sth", "sts", "smb", "smh", "sms", "smk",
        "scale_bits", "mask_kind", "flags", "shift", "right", "left", "phase"]
# Specialized variant ("spec"): the eight data tensors 16-byte aligned, D and their batch, head
# and row strides multiples of 16, unit head-dim strides constant 1. Everything else: "generic".
SPEC_DIV16 = ["q_ptr", "k_ptr", "v_ptr", "o_ptr", "do_ptr", "dq_ptr", "dk_ptr", "dv_ptr", "D",
              "sqb", "sqh", "sqs", "skb", "skh", "sks", "svb", "svh", "svs", "sob", "soh", "sos",
              "sdob", "sdoh", "sdos", "sdqb", "sdqh", "sdqs", "sdkb", "sdkh", "sdks", "sdvb",
              "sdvh", "sdvs"]
SPEC_ONE = ["sqd", "skd", "svd", "sod", "sdod", "sdqd", "sdkd", "sdvd"]
HINTS = {"spec": (SPEC_DIV16, SPEC_ONE)}
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}
SKIP_ARCHES = ()


def pointer_type(name, ty):
    """Element type of a pointer parameter: the mask bytes (i8; other mask types are read
    through a cast), the statistics, the scale and the workspace f32, the rest the data type."""
    if name == "mask_ptr":
        return "i8"
    if name in ("stats_ptr", "scale_ptr", "ws_ptr"):
        return "fp32"
    return ty


def configs(vendor, dtype):
    """(BLOCK_M = the step of the inner loop, BLOCK_N = the rows or keys a program owns,
    BLOCK_K = head dim bucket, GROUP_M 1, num_warps, num_stages) per variant, in static-rule
    order (the first applicable entry serves)."""
    out = {"spec": [], "generic": []}
    for d in (32, 64, 128):
        if dtype == "f32":
            out["generic"].append((16, 64, d, 1, 4, 1))
            continue
        if vendor == "cuda":
            out["spec"].append((32, 128, d, 1, 8 if d == 128 else 4, 2))
            out["spec"].append((32, 64, d, 1, 4, 2))
            out["generic"].append((32, 64, d, 1, 4, 2))
        else:
            out["spec"].append((32, 64, d, 1, 4, 1))
            out["generic"].append((32, 64 if d < 128 else 32, d, 1, 4, 1))
    return out
