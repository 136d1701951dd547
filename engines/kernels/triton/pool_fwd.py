"""Pool forward family (resample forward): max pooling (padding skipped or counted as zeros,
with the optional index of each maximum) and average pooling (padding included in or excluded
from the divisor), 1-D, 2-D and 3-D windows, over f16/bf16/f32 x with f32 arithmetic, ONE
launch per node.

Every graph is seen as 3-D pooling: x[n, c, d, h, w] at
  x_ptr[n * sxn + c * sxc + d * sxd + h * sxh + w * sxw]
(a 2-D graph has in_d = out_d = win_d = str_d = 1, pad_d = 0, sxd = 0; a 1-D graph also the h
axis so), y[n, c, od, oh, ow] and the index at their own strides (syn..syw, sin..siw);
offsets are computed in int64, coordinates in int32. The Rust pack
(engines/src/ingestor/packs/pool_fwd.rs) maps the graph onto these arguments.

Semantics (the CPU reference engine's, `engines/src/reference/ops/resample.rs`): the window
of output (od, oh, ow) covers the input positions (od*str_d - pad_d + kd, oh*str_h - pad_h +
kh, ow*str_w - pad_w + kw), scanned in row-major order (kd, then kh, then kw fastest); a
position outside the input is padding.
  `op` bits 0-1, the mode:
  0  MAXPOOL, padding skipped: the first maximum in scan order wins (a later equal value does
     not replace it; a NaN replaces nothing and is replaced by nothing, so a NaN stays only
     when it is the first value scanned); -inf and index 0 when the window holds no input;
  1  MAXPOOL with ZERO_PAD: padding takes part as +0.0, in scan order;
  2  AVGPOOL_INCLUDE_PADDING: the sum of the inputs / (win_d * win_h * win_w);
  3  AVGPOOL_EXCLUDE_PADDING: the sum of the inputs / their count, 0 when none;
  the sum is accumulated in f32 in scan order (padding adds +0.0, which changes no f32 sum) and
  divided with IEEE division, as the reference does: bit-identical results.
  bit 2 (4): the index of each maximum is written: its row-major position in the window,
  (kd * win_h + kh) * win_w + kw; bit 3 (8): the index is INT64 (else INT32);
  bit 4 (16): y is f32 (else x's type; rounded to nearest even).
`cl` (1 channels-last tile order, 0 channels-first): a program computes BLOCK_M x BLOCK_N
outputs; with cl = 1 the rows are the positions (n, od, oh, ow) and the columns the channels
(NHWC: contiguous, vector loads in the spec entries), with cl = 0 the rows are (n, c, od, oh)
and the columns ow (NCHW: neighbouring lanes read neighbouring inputs).

Launch contract: `hipkernel.resample_fwd.dispatch.v1` (engines/src/ingestor/packs/pool_fwd.rs).
Grid: (cdiv(rows, BLOCK_M) * cdiv(cols, BLOCK_N), 1, 1), the column blocks of a row block
adjacent.

Read by build.py at pack time (and by interpret_pool_fwd.py under the interpreter) only.
"""
import triton
import triton.language as tl

MODE_MAX = 0
MODE_MAX_ZERO_PAD = 1
MODE_AVG_INCLUDE = 2
MODE_AVG_EXCLUDE = 3
OP_INDEX = 4
OP_INDEX_I64 = 8
OP_Y_F32 = 16
_MODE_AVG_INCLUDE = tl.constexpr(MODE_AVG_INCLUDE)
_OP_INDEX = tl.constexpr(OP_INDEX)
_OP_INDEX_I64 = tl.constexpr(OP_INDEX_I64)
_OP_Y_F32 = tl.constexpr(OP_Y_F32)


@triton.jit
def _max_window(x_ptr, xrow, xcol, od, oh, ow, mask, in_d, in_h, in_w, win_d, win_h, win_w,
                str_d, str_h, str_w, pad_d, pad_h, pad_w, sxd, sxh, sxw, zero_pad,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """(max, its window index) of each output; the reference's rule `!found || v > best`, with
    `found` held as bi >= 0 (bi starts at -1, so the first value taking part always wins; 0
    when none does). One loop-carried layout with the loads: no layout change in the loop."""
    best = tl.full([BLOCK_M, BLOCK_N], float("-inf"), tl.float32)
    bi = tl.full([BLOCK_M, BLOCK_N], -1, tl.int32)
    for kd in range(0, win_d):
        zd = od * str_d - pad_d + kd
        ind = (zd >= 0) & (zd < in_d)
        rd = xrow + zd.to(tl.int64) * sxd
        for kh in range(0, win_h):
            zh = oh * str_h - pad_h + kh
            inh = ind & (zh >= 0) & (zh < in_h)
            rh = rd + zh.to(tl.int64) * sxh
            wbase = (kd * win_h + kh) * win_w
            for kw in range(0, win_w):
                zw = ow * str_w - pad_w + kw
                inside = inh & (zw >= 0) & (zw < in_w)
                off = (rh + zw.to(tl.int64) * sxw) + xcol
                v = tl.load(x_ptr + off, mask=mask & inside, other=0.0).to(tl.float32)
                upd = (inside | zero_pad) & ((bi < 0) | (v > best))
                best = tl.where(upd, v, best)
                bi = tl.where(upd, wbase + kw, bi)
    return best, tl.maximum(bi, 0)


@triton.jit
def _inside(o, stride, pad, win, extent):
    """How many of the window positions o*stride - pad + k (k < win) lie in [0, extent)."""
    lo = o * stride - pad
    return tl.maximum(tl.minimum(lo + win, extent) - tl.maximum(lo, 0), 0)


@triton.jit
def _avg_window(x_ptr, xrow, xcol, od, oh, ow, mask, in_d, in_h, in_w, win_d, win_h, win_w,
                str_d, str_h, str_w, pad_d, pad_h, pad_w, sxd, sxh, sxw, include,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The average of each output window (f32 sum in scan order, IEEE division); the count of
    inputs (AVGPOOL_EXCLUDE_PADDING) is the product of the in-bounds counts per axis."""
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kd in range(0, win_d):
        zd = od * str_d - pad_d + kd
        ind = (zd >= 0) & (zd < in_d)
        rd = xrow + zd.to(tl.int64) * sxd
        for kh in range(0, win_h):
            zh = oh * str_h - pad_h + kh
            inh = ind & (zh >= 0) & (zh < in_h)
            rh = rd + zh.to(tl.int64) * sxh
            for kw in range(0, win_w):
                zw = ow * str_w - pad_w + kw
                inside = inh & (zw >= 0) & (zw < in_w)
                off = (rh + zw.to(tl.int64) * sxw) + xcol
                acc += tl.load(x_ptr + off, mask=mask & inside, other=0.0).to(tl.float32)
    if include:
        r = tl.div_rn(acc, (win_d * win_h * win_w).to(tl.float32))
    else:
        cnt = (_inside(od, str_d, pad_d, win_d, in_d) * _inside(oh, str_h, pad_h, win_h, in_h)
               * _inside(ow, str_w, pad_w, win_w, in_w))
        r = tl.where(cnt == 0, 0.0, tl.div_rn(acc, tl.maximum(cnt, 1).to(tl.float32)))
    return r


@triton.jit
def _pool(x_ptr, y_ptr, i_ptr, batch, channels, in_d, in_h, in_w, out_d, out_h, out_w,
          win_d, win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w,
          sxn, sxc, sxd, sxh, sxw, syn, syc, syd, syh, syw, sin, sic, sid, sih, siw, op,
          CL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    if CL:
        rows = batch * out_d * out_h * out_w
        cols = channels
    else:
        rows = batch * channels * out_d * out_h
        cols = out_w
    nbn = tl.cdiv(cols, BLOCK_N)
    pid = tl.program_id(0)
    pid_m = pid // nbn
    pid_n = pid - pid_m * nbn
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m < rows)[:, None] & (offs_n < cols)[None, :]
    # Coordinates as [BLOCK_M, 1] (rows) and [1, BLOCK_N] (columns) tensors; the parts of each
    # offset that vary along rows (xrow, yrow, irow) and along columns (xcol, ycol, icol).
    if CL:
        t = offs_m
        ow = (t % out_w)[:, None]
        t = t // out_w
        oh = (t % out_h)[:, None]
        t = t // out_h
        od = (t % out_d)[:, None]
        n = (t // out_d).to(tl.int64)[:, None]
        c = offs_n.to(tl.int64)[None, :]
        xrow = n * sxn
        xcol = c * sxc
        yrow = n * syn + od.to(tl.int64) * syd + oh.to(tl.int64) * syh + ow.to(tl.int64) * syw
        ycol = c * syc
        irow = n * sin + od.to(tl.int64) * sid + oh.to(tl.int64) * sih + ow.to(tl.int64) * siw
        icol = c * sic
    else:
        t = offs_m
        oh = (t % out_h)[:, None]
        t = t // out_h
        od = (t % out_d)[:, None]
        t = t // out_d
        c = (t % channels).to(tl.int64)[:, None]
        n = (t // channels).to(tl.int64)[:, None]
        ow = offs_n[None, :]
        xrow = n * sxn + c * sxc
        xcol = tl.zeros([1, BLOCK_N], dtype=tl.int64)
        yrow = n * syn + c * syc + od.to(tl.int64) * syd + oh.to(tl.int64) * syh
        ycol = ow.to(tl.int64) * syw
        irow = n * sin + c * sic + od.to(tl.int64) * sid + oh.to(tl.int64) * sih
        icol = ow.to(tl.int64) * siw
    mode = op & 3
    if mode < _MODE_AVG_INCLUDE:
        r, bi = _max_window(x_ptr, xrow, xcol, od, oh, ow, mask, in_d, in_h, in_w, win_d,
                            win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w, sxd, sxh,
                            sxw, mode == 1, BLOCK_M, BLOCK_N)
        if (op & _OP_INDEX) != 0:
            ioff = irow + icol
            if (op & _OP_INDEX_I64) != 0:
                tl.store(i_ptr.to(tl.pointer_type(tl.int64)) + ioff, bi.to(tl.int64), mask=mask)
            else:
                tl.store(i_ptr + ioff, bi, mask=mask)
    else:
        r = _avg_window(x_ptr, xrow, xcol, od, oh, ow, mask, in_d, in_h, in_w, win_d, win_h,
                        win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w, sxd, sxh, sxw,
                        mode == _MODE_AVG_INCLUDE, BLOCK_M, BLOCK_N)
    yoff = yrow + ycol
    if (op & _OP_Y_F32) != 0:
        tl.store(y_ptr.to(tl.pointer_type(tl.float32)) + yoff, r, mask=mask)
    else:
        tl.store(y_ptr + yoff, r.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def hipdnn_pool_fwd(x_ptr, y_ptr, i_ptr, batch, channels, in_d, in_h, in_w, out_d, out_h, out_w,
                    win_d, win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w,
                    sxn, sxc, sxd, sxh, sxw, syn, syc, syd, syh, syw, sin, sic, sid, sih, siw,
                    cl, op, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    if cl == 1:
        _pool(x_ptr, y_ptr, i_ptr, batch, channels, in_d, in_h, in_w, out_d, out_h, out_w,
              win_d, win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w,
              sxn, sxc, sxd, sxh, sxw, syn, syc, syd, syh, syw, sin, sic, sid, sih, siw, op,
              True, BLOCK_M, BLOCK_N)
    else:
        _pool(x_ptr, y_ptr, i_ptr, batch, channels, in_d, in_h, in_w, out_d, out_h, out_w,
              win_d, win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w,
              sxn, sxc, sxd, sxh, sxw, syn, syc, syd, syh, syw, sin, sic, sid, sih, siw, op,
              False, BLOCK_M, BLOCK_N)


KERNEL = hipdnn_pool_fwd
FAMILY = "pool_fwd"
POINTERS = ["x_ptr", "y_ptr", "i_ptr"]
INTS = ["batch", "channels", "in_d", "in_h", "in_w", "out_d", "out_h", "out_w",
        "win_d", "win_h", "win_w", "str_d", "str_h", "str_w", "pad_d", "pad_h", "pad_w",
        "sxn", "sxc", "sxd", "sxh", "sxw", "syn", "syc", "syd", "syh", "syw",
        "sin", "sic", "sid", "sih", "siw", "cl", "op"]
# Specialized variant ("spec"): channels-last tile order (cl constant 1) over unit channel
# strides (sxc, syc, sic constant 1), the channel count and every other stride of x, y and the
# index multiples of 16, the three pointers 16-byte aligned: each row's channels are whole,
# aligned 16-byte vectors (NHWC / NDHWC / NWC with C % 16 == 0). Everything else: "generic"
# (either tile order, any strides).
SPEC_DIV16 = ["x_ptr", "y_ptr", "i_ptr", "channels", "sxn", "sxd", "sxh", "sxw",
              "syn", "syd", "syh", "syw", "sin", "sid", "sih", "siw"]
SPEC_ONE = ["sxc", "syc", "sic", "cl"]
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}


def pointer_type(name, ty):
    """The index is INT32 (an INT64 index is stored through a cast pointer)."""
    return "i32" if name == "i_ptr" else ty


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, 1, 1, num_warps, num_stages) per variant: 1024 outputs per program,
    BLOCK_N columns (channels or ow) by BLOCK_M rows; the static rule in pool_fwd.rs takes the
    entry whose BLOCK_N is the column extent rounded up to a power of two, within [16, 128]."""
    cfgs = [(8, 128, 1, 1, 4, 1), (16, 64, 1, 1, 4, 1), (32, 32, 1, 1, 4, 1),
            (64, 16, 1, 1, 4, 1)]
    return {"spec": cfgs, "generic": cfgs}
