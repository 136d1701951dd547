"""Norm forward family: layernorm and rmsnorm over the trailing (normalized) axes of each row,
f16/bf16/f32 inputs with f32 statistics and arithmetic.

A row is one statistics element: x[r, c] = x_ptr[r * sxr + c * sxc] for r < rows, c < cols
(the graph's leading dims collapse to r, its normalized dims to c). Per row (two passes over
the row for the statistics, one for the output, each in BLOCK_N-element chunks, so any row
length works):
  layernorm: mean = sum(x) / cols; var = sum((x - mean)^2) / cols (population);
  rmsnorm:   mean = 0;             var = sum(x^2) / cols;
  inv = 1 / sqrt(var + eps)  (IEEE sqrt and division);
  y[r, c] = (x - mean) * inv * scale[c * ssc] (+ bias[c * sbc]).
The CPU reference engine (engines/src/reference/nodes/norm.rs) defines these semantics.
`flags` (run-time): 1 rmsnorm, 2 bias present, 4 write mean[r * smr], 8 write inv[r * sir]
(layernorm's inv_variance or rmsnorm's inv_rms), 16 scale is f32, 32 bias is f32, 64 y is f32,
128 the statistics are f32 (an unset type bit: the tensor has x's type; f32 entries ignore the
type bits). Absent tensors' pointers may be null. Offsets are computed in int64.

Launch contract: `hipkernel.norm_fwd.dispatch.v1` (engines/src/ingestor/packs/norm_fwd.rs).
Grid: (cdiv(rows, BLOCK_M), 1, 1); BLOCK_M rows per program.

Read by build.py at pack time only.
"""
import triton
import triton.language as tl


@triton.jit
def _load_f32(ptr, offs, mask, AS_F32):
    """Loads ptr[offs] as f32; AS_F32 (a run-time condition): the memory holds f32 although
    `ptr` has the entry's element type."""
    if AS_F32:
        v = tl.load(ptr.to(tl.pointer_type(tl.float32)) + offs, mask=mask, other=0.0)
    else:
        v = tl.load(ptr + offs, mask=mask, other=0.0).to(tl.float32)
    return v


@triton.jit
def _store_f32(ptr, offs, v, mask, AS_F32):
    """Stores the f32 `v` at ptr[offs] as f32 (AS_F32) or as the entry's element type."""
    if AS_F32:
        tl.store(ptr.to(tl.pointer_type(tl.float32)) + offs, v, mask=mask)
    else:
        tl.store(ptr + offs, v.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def hipdnn_norm_fwd(x_ptr, scale_ptr, bias_ptr, y_ptr, mean_ptr, inv_ptr,
                    rows, cols, sxr, sxc, syr, syc, ssc, sbc, smr, sir, flags, eps,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = offs_m < rows
    r64 = offs_m.to(tl.int64)
    x_row = r64 * sxr
    y_row = r64 * syr
    offs_n = tl.arange(0, BLOCK_N)
    n_f = cols.to(tl.float32)
    rms = (flags & 1) != 0
    # Pass 1 (layernorm only): the mean.
    mean = tl.zeros([BLOCK_M], dtype=tl.float32)
    if not rms:
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for c0 in range(0, cols, BLOCK_N):
            cc = c0 + offs_n
            mask = m_mask[:, None] & (cc < cols)[None, :]
            x = tl.load(x_ptr + (x_row[:, None] + cc.to(tl.int64)[None, :] * sxc), mask=mask,
                        other=0.0).to(tl.float32)
            acc += x
        mean = tl.div_rn(tl.sum(acc, axis=1), n_f)
    # Pass 2: sum of squared deviations (rmsnorm: of squares).
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for c0 in range(0, cols, BLOCK_N):
        cc = c0 + offs_n
        mask = m_mask[:, None] & (cc < cols)[None, :]
        x = tl.load(x_ptr + (x_row[:, None] + cc.to(tl.int64)[None, :] * sxc), mask=mask,
                    other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean[:, None], 0.0)
        acc += d * d
    var = tl.div_rn(tl.sum(acc, axis=1), n_f)
    inv = tl.div_rn(tl.full([BLOCK_M], 1.0, tl.float32), tl.sqrt_rn(var + eps))
    stats_f32 = (flags & 128) != 0
    if (flags & 4) != 0:
        _store_f32(mean_ptr, r64 * smr, mean, m_mask, stats_f32)
    if (flags & 8) != 0:
        _store_f32(inv_ptr, r64 * sir, inv, m_mask, stats_f32)
    # Pass 3: y.
    has_bias = (flags & 2) != 0
    scale_f32 = (flags & 16) != 0
    bias_f32 = (flags & 32) != 0
    y_f32 = (flags & 64) != 0
    for c0 in range(0, cols, BLOCK_N):
        cc = c0 + offs_n
        c_mask = cc < cols
        mask = m_mask[:, None] & c_mask[None, :]
        c64 = cc.to(tl.int64)
        x = tl.load(x_ptr + (x_row[:, None] + c64[None, :] * sxc), mask=mask,
                    other=0.0).to(tl.float32)
        s = _load_f32(scale_ptr, c64 * ssc, c_mask, scale_f32)
        y = (x - mean[:, None]) * inv[:, None] * s[None, :]
        if has_bias:
            b = _load_f32(bias_ptr, c64 * sbc, c_mask, bias_f32)
            y = y + b[None, :]
        _store_f32(y_ptr, y_row[:, None] + c64[None, :] * syc, y, mask, y_f32)


KERNEL = hipdnn_norm_fwd
FAMILY = "norm_fwd"
POINTERS = ["x_ptr", "scale_ptr", "bias_ptr", "y_ptr", "mean_ptr", "inv_ptr"]
INTS = ["rows", "cols", "sxr", "sxc", "syr", "syc", "ssc", "sbc", "smr", "sir", "flags"]
FLOATS = ["eps"]
# Specialized variant ("spec"): x, y, scale and bias 16-byte aligned (an absent bias's null
# pointer is), cols and the row strides multiples of 16, the column strides constant 1 (rows
# contiguous, scale and bias dense over the row). Everything else takes the "generic" variant.
SPEC_DIV16 = ["x_ptr", "scale_ptr", "bias_ptr", "y_ptr", "cols", "sxr", "syr"]
SPEC_ONE = ["sxc", "syc", "ssc", "sbc"]
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, 1, 1, num_warps, num_stages) per variant: rows per program, row
    chunk; larger tiles first (the static rule in norm_fwd.rs refuses a tile whose chunk is
    at least twice the row, except the smallest)."""
    cfgs = [(1, 2048, 1, 1, 8, 1), (2, 512, 1, 1, 4, 1), (8, 64, 1, 1, 4, 1)]
    return {"spec": cfgs, "generic": cfgs}
