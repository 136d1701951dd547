"""Reduce forward family: one reduction node (every ReductionMode), and the softmax /
log-softmax graph patterns, over f16/bf16/f32 x with f32 arithmetic, ONE launch each.

The graph's tensor is seen as x[m, j] with a kept index m < rows and a reduced index
j = ro * rin + ri (ro < rout, ri < rin), both split in at most two collapsed axis groups:
  x[m, ro, ri] = x_ptr[(m // kin) * sxo + (m % kin) * sxi + ro * sxro + ri * sxri]
(kept axes: an outer group of rows / kin elements and an inner group of kin elements; reduced
axes: an outer group of rout and an inner group of rin elements; strides in elements, offsets
computed in int64). The Rust pack (engines/src/ingestor/packs/reduce_fwd.rs) makes the groups.

`op` (run time): bits 0-4 the operation, bit 5 (32) y is f32 (else x's type).
  1..9  a reduction, the schema's ReductionMode values: ADD sum, MUL product, MIN_OP min,
        MAX_OP max, AMAX max |x| (from 0), AVG sum / (rout * rin), NORM1 sum |x|, NORM2
        sqrt(sum x^2), MUL_NO_ZEROS product of the non-zero values (1 when none);
        y[m] = y_ptr[(m // kin) * syo + (m % kin) * syi].
  16    softmax over the reduced axes:  y = exp(x - max) / sum(exp(x - max));
  17    log-softmax:                    y = (x - max) - log(sum(exp(x - max)));
        y[m, ro, ri] at (m // kin) * syo + (m % kin) * syi + ro * syro + ri * syri.
`yal` (1 only in spec launches of softmax with syo, syi, syro multiples of 16): y's row
offsets may be taken as multiples of 16 elements (vector stores).
Sums and products are kept per lane of a [BLOCK_M, BLOCK_N] tile and folded by a tree at the
end (the CPU reference engine sums in 16 lanes in order: the results differ in rounding only).
Softmax: when the reduced axes fit one chunk (rout == 1, rin <= BLOCK_N) the row is read
once and held in registers; longer rows take an online pass (per row running max and rescaled
sum, chunk by chunk) and a second pass that writes y. exp/log are Triton's (exp2/log2 based);
the division is a multiplication by the row's IEEE reciprocal 1 / sum.
NaN inputs are not part of the contract (min/max fold with the hardware min/max).

Launch contract: `hipkernel.reduce_fwd.dispatch.v1` (engines/src/ingestor/packs/reduce_fwd.rs).
Grid: (cdiv(rows, BLOCK_M), 1, 1); BLOCK_M kept rows per program, the reduced axes walked in
BLOCK_N-element chunks.

Read by build.py at pack time (and by interpret_reduce_fwd.py under the interpreter) only.
"""
import os

import triton
import triton.language as tl

OP_ADD = 1
OP_MUL = 2
OP_MIN = 3
OP_MAX = 4
OP_AMAX = 5
OP_AVG = 6
OP_NORM1 = 7
OP_NORM2 = 8
OP_MUL_NO_ZEROS = 9
OP_SOFTMAX = 16
OP_LOG_SOFTMAX = 17
OP_Y_F32 = 32
# The same codes as constexpr globals, for the jit functions.
_OP_ADD = tl.constexpr(OP_ADD)
_OP_MUL = tl.constexpr(OP_MUL)
_OP_MIN = tl.constexpr(OP_MIN)
_OP_MAX = tl.constexpr(OP_MAX)
_OP_AMAX = tl.constexpr(OP_AMAX)
_OP_AVG = tl.constexpr(OP_AVG)
_OP_NORM1 = tl.constexpr(OP_NORM1)
_OP_NORM2 = tl.constexpr(OP_NORM2)
_OP_MUL_NO_ZEROS = tl.constexpr(OP_MUL_NO_ZEROS)
_OP_SOFTMAX = tl.constexpr(OP_SOFTMAX)
_OP_LOG_SOFTMAX = tl.constexpr(OP_LOG_SOFTMAX)
_OP_Y_F32 = tl.constexpr(OP_Y_F32)


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _store_f32(ptr, offs, v, mask, AS_F32):
    """Stores the f32 `v` at ptr[offs] as f32 (AS_F32) or as the entry's element type."""
    if AS_F32:
        tl.store(ptr.to(tl.pointer_type(tl.float32)) + offs, v, mask=mask)
    else:
        tl.store(ptr + offs, v.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def _fold(x_ptr, x_row, m_mask, rout, rin, sxro, sxri, absolute, square, negate, nonzero,
          KIND: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Per-row fold of t(x) over the reduced axes. KIND 0: sum, 1: product, 2: max.
    t(x) = |x| (absolute), x*x (square), -x (negate), x == 0 ? 1 : x (nonzero), else x."""
    offs_n = tl.arange(0, BLOCK_N)
    if KIND == 0:
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    elif KIND == 1:
        acc = tl.full([BLOCK_M, BLOCK_N], 1.0, tl.float32)
    else:
        acc = tl.full([BLOCK_M, BLOCK_N], float("-inf"), tl.float32)
    # One loop over (reduced outer index, chunk) pairs.
    nch = tl.cdiv(rin, BLOCK_N)
    for t in range(0, rout * nch):
        ro = t // nch
        c0 = (t - ro * nch) * BLOCK_N
        base = x_row + tl.cast(ro, tl.int64) * sxro
        cc = c0 + offs_n
        mask = m_mask[:, None] & (cc < rin)[None, :]
        v = tl.load(x_ptr + (base[:, None] + cc.to(tl.int64)[None, :] * sxri), mask=mask,
                    other=0.0).to(tl.float32)
        # The transforms as selects (no branch in the loop).
        v = tl.where(absolute, tl.abs(v), v)
        v = v * tl.where(square, v, 1.0)
        v = tl.where(negate, -v, v)
        v = tl.where(nonzero & (v == 0.0), 1.0, v)
        if KIND == 0:
            acc += v
        elif KIND == 1:
            acc = acc * tl.where(mask, v, 1.0)
        else:
            acc = tl.maximum(acc, tl.where(mask, v, float("-inf")))
    if KIND == 0:
        r = tl.sum(acc, axis=1)
    elif KIND == 1:
        r = tl.reduce(acc, 1, _mul)
    else:
        r = tl.max(acc, axis=1)
    return r


@triton.jit
def _softmax(x_ptr, y_ptr, x_row, y_row, m_mask, rout, rin, sxro, sxri, syro, syri, yal, log,
             y_f32, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    if yal == 1:
        # spec: y's row offsets are multiples of 16 elements (the pack checks syo, syi, syro).
        y_row = tl.multiple_of(y_row, 16)
    if (rout == 1) & (rin <= BLOCK_N):
        # The whole reduced extent in one chunk: read once, keep it in registers.
        cc = offs_n.to(tl.int64)
        mask = m_mask[:, None] & (offs_n < rin)[None, :]
        x = tl.load(x_ptr + (x_row[:, None] + cc[None, :] * sxri), mask=mask,
                    other=float("-inf")).to(tl.float32)
        mx = tl.max(x, axis=1)
        d = x - mx[:, None]
        e = tl.exp(d)
        s = tl.sum(tl.where(mask, e, 0.0), axis=1)
        if log:
            y = d - tl.log(s)[:, None]
        else:
            inv = tl.div_rn(tl.full([BLOCK_M], 1.0, tl.float32), s)
            y = e * inv[:, None]
        _store_f32(y_ptr, y_row[:, None] + cc[None, :] * syri, y, mask, y_f32)
    else:
        # Pass 1: per row running max and sum of exp(x - max), rescaled when the max grows.
        mx = tl.full([BLOCK_M], float("-inf"), tl.float32)
        s = tl.zeros([BLOCK_M], dtype=tl.float32)
        nch = tl.cdiv(rin, BLOCK_N)
        for t in range(0, rout * nch):
            ro = t // nch
            c0 = (t - ro * nch) * BLOCK_N
            base = x_row + tl.cast(ro, tl.int64) * sxro
            cc = c0 + offs_n
            mask = m_mask[:, None] & (cc < rin)[None, :]
            x = tl.load(x_ptr + (base[:, None] + cc.to(tl.int64)[None, :] * sxri),
                        mask=mask, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(mx, tl.max(x, axis=1))
            # A row with no value yet keeps max -inf: its scale and terms are 0, not NaN.
            seen = m_new != float("-inf")
            m_use = tl.where(seen, m_new, 0.0)
            alpha = tl.where(seen, tl.exp(mx - m_use), 0.0)
            p = tl.where(mask, tl.exp(x - m_use[:, None]), 0.0)
            s = s * alpha + tl.sum(p, axis=1)
            mx = m_new
        inv = tl.div_rn(tl.full([BLOCK_M], 1.0, tl.float32), s)
        ls = tl.log(s)
        # Pass 2: y.
        for t in range(0, rout * nch):
            ro = t // nch
            c0 = (t - ro * nch) * BLOCK_N
            base = x_row + tl.cast(ro, tl.int64) * sxro
            ybase = y_row + tl.cast(ro, tl.int64) * syro
            if yal == 1:
                ybase = tl.multiple_of(ybase, 16)
            cc = c0 + offs_n
            c64 = cc.to(tl.int64)
            mask = m_mask[:, None] & (cc < rin)[None, :]
            x = tl.load(x_ptr + (base[:, None] + c64[None, :] * sxri), mask=mask,
                        other=0.0).to(tl.float32)
            d = x - mx[:, None]
            if log:
                y = d - ls[:, None]
            else:
                y = tl.exp(d) * inv[:, None]
            _store_f32(y_ptr, ybase[:, None] + c64[None, :] * syri, y, mask, y_f32)


@triton.jit
def hipdnn_reduce_fwd(x_ptr, y_ptr, rows, kin, rout, rin, sxo, sxi, sxro, sxri, syo, syi,
                      syro, syri, yal, op, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = offs_m < rows
    m64 = offs_m.to(tl.int64)
    ko = m64 // kin
    ki = m64 - ko * kin
    x_row = ko * sxo + ki * sxi
    y_row = ko * syo + ki * syi
    y_f32 = (op & _OP_Y_F32) != 0
    code = op & 31
    if code >= _OP_SOFTMAX:
        _softmax(x_ptr, y_ptr, x_row, y_row, m_mask, rout, rin, sxro, sxri, syro, syri, yal,
                 code == _OP_LOG_SOFTMAX, y_f32, BLOCK_M, BLOCK_N)
    else:
        if (code == _OP_MUL) | (code == _OP_MUL_NO_ZEROS):
            r = _fold(x_ptr, x_row, m_mask, rout, rin, sxro, sxri, False, False, False,
                      code == _OP_MUL_NO_ZEROS, 1, BLOCK_M, BLOCK_N)
        elif (code == _OP_MIN) | (code == _OP_MAX) | (code == _OP_AMAX):
            r = _fold(x_ptr, x_row, m_mask, rout, rin, sxro, sxri, code == _OP_AMAX, False,
                      code == _OP_MIN, False, 2, BLOCK_M, BLOCK_N)
            if code == _OP_MIN:
                r = -r
        else:
            r = _fold(x_ptr, x_row, m_mask, rout, rin, sxro, sxri, code == _OP_NORM1,
                      code == _OP_NORM2, False, False, 0, BLOCK_M, BLOCK_N)
            if code == _OP_AVG:
                r = tl.div_rn(r, (rout * rin).to(tl.float32))
            elif code == _OP_NORM2:
                r = tl.sqrt_rn(r)
        _store_f32(y_ptr, y_row, r, m_mask, y_f32)


KERNEL = hipdnn_reduce_fwd
FAMILY = "reduce_fwd"
POINTERS = ["x_ptr", "y_ptr"]
INTS = ["rows", "kin", "rout", "rin", "sxo", "sxi", "sxro", "sxri", "syo", "syi", "syro",
        "syri", "yal", "op"]
# Specialized variant ("spec"): x and y 16-byte aligned, the inner reduced extent and x's
# other strides multiples of 16, the inner reduced strides constant 1 (x's reduced axes are
# contiguous, each chunk a run of whole 16-byte vectors; softmax's y rows contiguous). y's
# other strides carry no hint: a reduction's y (one value per kept row) is rarely a multiple
# of 16 apart; `yal` (constant 1 in spec, 0 in generic launches) tells the softmax path that
# y's row offsets are multiples of 16 elements (the pack checks syo, syi, syro for softmax).
# Everything else: "generic".
SPEC_DIV16 = ["x_ptr", "y_ptr", "rin", "sxo", "sxi", "sxro"]
SPEC_ONE = ["sxri", "syri", "yal"]
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, 1, 1, num_warps, num_stages) per variant: kept rows per program and
    the reduced chunk; larger chunks first (the static rule in reduce_fwd.rs refuses a chunk
    that is at least twice the inner reduced extent, except the last entry)."""
    # One row per program with 4 warps for the 1024 and 4096 chunks: in a benchmarking build
    # of the SWEEP configs on an H200 (2026-12-03, against PyTorch 2.11 in the same run) 1x1024
    # w4 ran softmax over 4096 rows of 1024 in 0.0095 ms (4x1024 w8: 0.0182) and the f16 sum
    # over 32768 rows of 4096 in 0.071 ms (0.149); 1x4096 w4 softmax over 32768 rows of 4096
    # in 0.166 ms f16 (1x4096 w8: 0.19), 0.260 ms f32 (0.258).
    # The generic entries keep the configs of before that sweep (not re-measured).
    cfgs = [(1, 8192, 1, 1, 16, 1), (1, 4096, 1, 1, 4, 1), (1, 1024, 1, 1, 4, 1),
            (8, 128, 1, 1, 4, 1)]
    generic = [(1, 8192, 1, 1, 16, 1), (1, 4096, 1, 1, 8, 1), (4, 1024, 1, 1, 8, 1),
               (8, 128, 1, 1, 4, 1)]
    if vendor == "cuda" and os.environ.get("HIPDNN_TRITON_SWEEP"):
        # Extra spec configs for a device sweep only (never in the committed archives; see
        # sdpa_fwd.SWEEP for the commands).
        return {"spec": cfgs + [c for c in SWEEP if c not in cfgs], "generic": generic}
    # AMD entries keep the configs of before (measured on no AMD device).
    return {"spec": cfgs if vendor == "cuda" else generic, "generic": generic}


SWEEP = [(bm, bn, 1, 1, w, 1) for bm, bn, w in
         [(1, 2048, 8), (2, 2048, 8), (1, 1024, 4), (1, 1024, 8), (2, 1024, 4), (2, 1024, 8),
          (4, 1024, 4), (8, 1024, 8), (8, 1024, 16), (4, 512, 4), (8, 512, 8), (16, 512, 8),
          (16, 256, 8), (2, 4096, 16), (1, 4096, 4), (1, 8192, 8)]]
