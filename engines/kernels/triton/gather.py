"""Gather family: row gather (embedding lookup), the `hipdnn_rs.gather` custom op, ONE launch
per node.

Semantics (the CPU reference engine's, engines/src/reference/nodes/gather.rs): for every row r
in [0, N) with index value i = index[r],
    y[r, c] = table[i, c]   for c in [0, H) when 0 <= i < V,
    y[r, c] = 0             when i < 0 or i >= V (a row outside the table reads nothing),
a copy of the table's element bits (y has the table's type). The index is INT32, or INT64
read through a cast pointer when `idx64` is 1. Offsets are int64.

Arguments: table `t_ptr[i * stv + c * sth]`, index `i_ptr[r * si]`, output
`y_ptr[r * syr + c * syc]`; N rows, H columns, V table rows. Grid:
(cdiv(N, BLOCK_M), cdiv(H, BLOCK_N), 1).
Launch contract: `hipkernel.gather.dispatch.v1` (engines/src/ingestor/packs/gather.rs).

Read by build.py at pack time (and by interpret_gather.py under the interpreter) only.
"""
import triton
import triton.language as tl


@triton.jit
def hipdnn_gather(t_ptr, i_ptr, y_ptr, N, H, V, stv, sth, si, syr, syc, idx64,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    r_ok = rows < N
    c_ok = cols < H
    roff = rows.to(tl.int64)
    if idx64 != 0:
        idx = tl.load(i_ptr.to(tl.pointer_type(tl.int64), bitcast=True) + roff * si, mask=r_ok,
                      other=-1)
    else:
        idx = tl.load(i_ptr + roff * si, mask=r_ok, other=-1).to(tl.int64)
    hit = (idx >= 0) & (idx < V)
    coff = cols.to(tl.int64)
    v = tl.load(t_ptr + idx[:, None] * stv + coff[None, :] * sth,
                mask=hit[:, None] & c_ok[None, :], other=0.0)
    tl.store(y_ptr + roff[:, None] * syr + coff[None, :] * syc, v,
             mask=r_ok[:, None] & c_ok[None, :])


KERNEL = hipdnn_gather
FAMILY = "gather"
POINTERS = ["t_ptr", "i_ptr", "y_ptr"]
INTS = ["N", "H", "V", "stv", "sth", "si", "syr", "syc", "idx64"]
# Specialized variant ("spec"): unit column strides (sth, syc constant 1), H and the row strides
# of the table and y multiples of 16, table and y 16-byte aligned: each row is whole aligned
# 16-byte vectors. Everything else: "generic".
SPEC_DIV16 = ["t_ptr", "y_ptr", "H", "stv", "syr"]
SPEC_ONE = ["sth", "syc"]
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}


def pointer_type(name, ty):
    """The index is INT32 (an INT64 index is read through a cast pointer)."""
    return "i32" if name == "i_ptr" else ty


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, 1, 1, num_warps, num_stages) per variant: BLOCK_M rows of BLOCK_N
    columns per program; the static rule in gather.rs takes the 128-column entry for rows of
    more than 64 columns, else the 32-column one."""
    cfgs = [(8, 128, 1, 1, 4, 1), (32, 32, 1, 1, 4, 1)]
    return {"spec": cfgs, "generic": cfgs}
