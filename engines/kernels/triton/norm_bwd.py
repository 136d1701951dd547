"""Norm backward family: layernorm and rmsnorm backward (dx, dscale and the optional dbias)
over the trailing (normalized) axes of each row, f16/bf16/f32 inputs with f32 arithmetic.

A row is one statistics element: x[r, c] = x_ptr[r * sxr + c * sxc] for r < rows, c < cols
(the graph's leading dims collapse to r, its normalized dims to c); dy and dx likewise with
their own strides. With the saved statistics mean[r * smr] (layernorm; 0 for rmsnorm) and
inv[r * sir] (inv_variance / inv_rms), x^ = (x - mean) * inv, g = dy * scale[c * ssc] and, per
row of N = cols elements, gbar = sum(g) / N (0 for rmsnorm) and c = sum(g * x^) / N:
  dx = inv * (g - gbar - x^ * c),
  dscale[c] = sum over rows of dy * x^,  dbias[c] = sum over rows of dy.
The CPU reference engine (engines/src/reference/ops/norm.rs `norm_backward`) defines these
semantics (it sums in f64; this kernel in f32).

Two launches of this one kernel (`phase`), both on the same stream, no atomics:
  phase 0, grid (splits, 1, 1): program p owns the row blocks [p * bpp, (p + 1) * bpp) of
    BLOCK_M rows (bpp = cdiv(cdiv(rows, BLOCK_M), splits)); for each block it computes the
    rows' sums (one pass over the row in BLOCK_N chunks) and writes dx (a second pass); then,
    chunk by chunk, it sums dy * x^ and dy over its rows (in block order) and writes the
    per-program partials to the f32 workspace: ws[p * cols + c] (dscale) and
    ws[(splits + p) * cols + c] (dbias, flags bit 2);
  phase 1, grid (cdiv(cols, RED_N), 1, 1): program q sums the `splits` partials of its RED_N
    columns in a fixed order (RED_M partial rows at a time, then the tile's fixed reduction
    tree) into dscale[c * sdsc] and dbias[c * sdbc].
The order of every sum depends only on rows, cols, splits and the entry, so repeated launches
give identical bits.
`flags` (run-time): 1 rmsnorm (no mean, gbar = 0), 2 dbias written, then the f32 bits (an unset
bit: the tensor has x's type; f32 entries ignore them): 4 scale, 8 mean, 16 inv, 32 dy, 64 dx,
128 dscale, 256 dbias. Absent tensors' pointers may be null. Offsets are computed in int64.

Launch contract: `hipkernel.norm_bwd.dispatch.v1` (engines/src/ingestor/packs/norm_bwd.rs).

Read by build.py at pack time only.
"""
import triton
import triton.language as tl

# The merge phase's tile: RED_M partial rows by RED_N columns (norm_bwd.rs `RED_N`).
RED_M = tl.constexpr(32)
RED_N = tl.constexpr(64)


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
def _stats(mean_ptr, inv_ptr, r64, m_mask, smr, sir, flags, BLOCK_M: tl.constexpr):
    """(mean, inv) of the rows r64 as f32; mean 0 for rmsnorm."""
    mean = tl.zeros([BLOCK_M], dtype=tl.float32)
    if (flags & 1) == 0:
        mean = _load_f32(mean_ptr, r64 * smr, m_mask, (flags & 8) != 0)
    inv = _load_f32(inv_ptr, r64 * sir, m_mask, (flags & 16) != 0)
    return mean, inv


@triton.jit
def hipdnn_norm_bwd(dy_ptr, x_ptr, scale_ptr, mean_ptr, inv_ptr, dx_ptr, dscale_ptr, dbias_ptr,
                    ws_ptr, rows, cols, sdyr, sdyc, sxr, sxc, sdxr, sdxc, ssc, sdsc, sdbc, smr,
                    sir, flags, splits, phase,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    ws = ws_ptr.to(tl.pointer_type(tl.float32))
    pid = tl.program_id(0)
    has_db = (flags & 2) != 0
    cols64 = cols.to(tl.int64)
    if phase == 0:
        rms = (flags & 1) != 0
        scale_f32 = (flags & 4) != 0
        dy_f32 = (flags & 32) != 0
        dx_f32 = (flags & 64) != 0
        nblocks = tl.cdiv(rows, BLOCK_M)
        bpp = tl.cdiv(nblocks, splits)
        b0 = pid * bpp
        b1 = tl.minimum(b0 + bpp, nblocks)
        offs_n = tl.arange(0, BLOCK_N)
        n_f = cols.to(tl.float32)
        # dx, one row block at a time.
        for b in range(b0, b1):
            offs_m = b * BLOCK_M + tl.arange(0, BLOCK_M)
            m_mask = offs_m < rows
            r64 = offs_m.to(tl.int64)
            mean, inv = _stats(mean_ptr, inv_ptr, r64, m_mask, smr, sir, flags, BLOCK_M)
            acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            acc_gx = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            for c0 in range(0, cols, BLOCK_N):
                cc = c0 + offs_n
                c_mask = cc < cols
                mask = m_mask[:, None] & c_mask[None, :]
                c64 = cc.to(tl.int64)
                dy = _load_f32(dy_ptr, r64[:, None] * sdyr + c64[None, :] * sdyc, mask, dy_f32)
                x = tl.load(x_ptr + (r64[:, None] * sxr + c64[None, :] * sxc), mask=mask,
                            other=0.0).to(tl.float32)
                s = _load_f32(scale_ptr, c64 * ssc, c_mask, scale_f32)
                g = dy * s[None, :]
                acc_g += g
                acc_gx += g * ((x - mean[:, None]) * inv[:, None])
            gbar = tl.zeros([BLOCK_M], dtype=tl.float32)
            if not rms:
                gbar = tl.div_rn(tl.sum(acc_g, axis=1), n_f)
            cm = tl.div_rn(tl.sum(acc_gx, axis=1), n_f)
            for c0 in range(0, cols, BLOCK_N):
                cc = c0 + offs_n
                c_mask = cc < cols
                mask = m_mask[:, None] & c_mask[None, :]
                c64 = cc.to(tl.int64)
                dy = _load_f32(dy_ptr, r64[:, None] * sdyr + c64[None, :] * sdyc, mask, dy_f32)
                x = tl.load(x_ptr + (r64[:, None] * sxr + c64[None, :] * sxc), mask=mask,
                            other=0.0).to(tl.float32)
                s = _load_f32(scale_ptr, c64 * ssc, c_mask, scale_f32)
                xh = (x - mean[:, None]) * inv[:, None]
                dx = inv[:, None] * (dy * s[None, :] - gbar[:, None] - xh * cm[:, None])
                _store_f32(dx_ptr, r64[:, None] * sdxr + c64[None, :] * sdxc, dx, mask, dx_f32)
        # This program's partial dscale / dbias, chunk by chunk over its rows.
        p64 = pid.to(tl.int64)
        for c0 in range(0, cols, BLOCK_N):
            cc = c0 + offs_n
            c_mask = cc < cols
            c64 = cc.to(tl.int64)
            acc_ds = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            acc_db = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            for b in range(b0, b1):
                offs_m = b * BLOCK_M + tl.arange(0, BLOCK_M)
                m_mask = offs_m < rows
                r64 = offs_m.to(tl.int64)
                mean, inv = _stats(mean_ptr, inv_ptr, r64, m_mask, smr, sir, flags, BLOCK_M)
                mask = m_mask[:, None] & c_mask[None, :]
                dy = _load_f32(dy_ptr, r64[:, None] * sdyr + c64[None, :] * sdyc, mask, dy_f32)
                x = tl.load(x_ptr + (r64[:, None] * sxr + c64[None, :] * sxc), mask=mask,
                            other=0.0).to(tl.float32)
                acc_ds += dy * ((x - mean[:, None]) * inv[:, None])
                acc_db += dy
            tl.store(ws + (p64 * cols64 + c64), tl.sum(acc_ds, axis=0), mask=c_mask)
            if has_db:
                tl.store(ws + ((splits + p64) * cols64 + c64), tl.sum(acc_db, axis=0),
                         mask=c_mask)
    else:
        cc = pid * RED_N + tl.arange(0, RED_N)
        c_mask = cc < cols
        c64 = cc.to(tl.int64)
        offs_s = tl.arange(0, RED_M)
        acc_ds = tl.zeros([RED_M, RED_N], dtype=tl.float32)
        acc_db = tl.zeros([RED_M, RED_N], dtype=tl.float32)
        for s0 in range(0, splits, RED_M):
            ss = (s0 + offs_s).to(tl.int64)
            mask = (ss < splits)[:, None] & c_mask[None, :]
            off = ss[:, None] * cols64 + c64[None, :]
            acc_ds += tl.load(ws + off, mask=mask, other=0.0)
            if has_db:
                acc_db += tl.load(ws + (splits * cols64 + off), mask=mask, other=0.0)
        _store_f32(dscale_ptr, c64 * sdsc, tl.sum(acc_ds, axis=0), c_mask, (flags & 128) != 0)
        if has_db:
            _store_f32(dbias_ptr, c64 * sdbc, tl.sum(acc_db, axis=0), c_mask, (flags & 256) != 0)


KERNEL = hipdnn_norm_bwd
FAMILY = "norm_bwd"
POINTERS = ["dy_ptr", "x_ptr", "scale_ptr", "mean_ptr", "inv_ptr", "dx_ptr", "dscale_ptr",
            "dbias_ptr", "ws_ptr"]
INTS = ["rows", "cols", "sdyr", "sdyc", "sxr", "sxc", "sdxr", "sdxc", "ssc", "sdsc", "sdbc",
        "smr", "sir", "flags", "splits", "phase"]
# Specialized variant ("spec"): dy, x, dx and scale 16-byte aligned, cols and the row strides
# of dy, x and dx multiples of 16, the column strides constant 1 (rows contiguous; scale,
# dscale and dbias dense over the row). Everything else takes the "generic" variant.
SPEC_DIV16 = ["dy_ptr", "x_ptr", "scale_ptr", "dx_ptr", "cols", "sdyr", "sxr", "sdxr"]
SPEC_ONE = ["sdyc", "sxc", "sdxc", "ssc", "sdsc", "sdbc"]
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, 1, 1, num_warps, num_stages) per variant: rows per block, row chunk;
    larger chunks first (the static rule in norm_bwd.rs refuses a tile whose chunk is at
    least twice the row, except the smallest)."""
    cfgs = [(1, 2048, 1, 1, 8, 1), (2, 512, 1, 1, 4, 1), (8, 64, 1, 1, 4, 1)]
    return {"spec": cfgs, "generic": cfgs}
