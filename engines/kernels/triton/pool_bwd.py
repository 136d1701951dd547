"""Pool backward family (resample backward): dx of max pooling (through the forward's index)
and of average pooling (padding included in or excluded from the divisor), 1-D, 2-D and 3-D
windows, over f16/bf16/f32 with f32 arithmetic, ONE launch per node, deterministic: each dx
element gathers the dy elements whose windows cover it, in a fixed order (no atomics).

Every graph is seen as 3-D pooling, as pool_fwd.py: dx[n, c, d, h, w] at
  dx_ptr[n * sxn + c * sxc + d * sxd + h * sxh + w * sxw]
(a 2-D graph has in_d = out_d = win_d = str_d = 1, pad_d = 0, sxd = 0; a 1-D graph also the h
axis so), dy[n, c, od, oh, ow] and the index at their own strides (syn..syw, sin..siw).

Semantics (the CPU reference engine's, `engines/src/reference/ops/resample.rs`
`pool_backward`): output (od, oh, ow)'s window covers the input positions (od*str_d - pad_d +
kd, oh*str_h - pad_h + kh, ow*str_w - pad_w + kw); `op` bits 0-1, the mode:
  0, 1  MAXPOOL: dy goes to the window position the index names (its row-major position in the
        window, (kd * win_h + kh) * win_w + kw; INT32, or INT64 with bit 3 (8)); a position in
        the padding takes nothing (so ZERO_PAD, mode 1, is the same);
  2     AVGPOOL_INCLUDE_PADDING: dy / (win_d * win_h * win_w) to every input position of the
        window;
  3     AVGPOOL_EXCLUDE_PADDING: dy / (the count of input positions in the window).
Each dx element sums its shares in f32, over the covering outputs in the order kd, kh, kw of
(od, oh, ow) = ((d + pad) // str - kd, ...) (the reference sums in output order: the same
terms, another order, within the backward tolerances). An index naming no position of its
window (the reference refuses it at execute) adds nothing.
`cl` (1 channels-last, 0 channels-first): a program computes BLOCK_M dx elements, consecutive
in (n, d, h, w, c) order with cl = 1 (NHWC: neighbouring lanes read neighbouring channels), in
(n, c, d, h, w) order with cl = 0.

Launch contract: `hipkernel.resample_bwd.dispatch.v1` (engines/src/ingestor/packs/pool_bwd.rs).
Grid: (cdiv(batch * channels * in_d * in_h * in_w, BLOCK_M), 1, 1).

Read by build.py at pack time (and by interpret_pool_bwd.py under the interpreter) only.
"""
import triton
import triton.language as tl


@triton.jit
def _covering(i, pad, stride, win, out, k):
    """The output coordinate whose window covers input coordinate `i` at window step `k`
    (o = (i + pad) // stride - k), whether it exists and covers i, and i's tap in it."""
    o = (i + pad) // stride - k
    tap = i + pad - o * stride
    ok = (o >= 0) & (o < out) & (tap < win)
    return o, tap, ok


@triton.jit
def _count(o, stride, pad, win, extent):
    """How many input positions the window of output `o` holds along one axis."""
    s = o * stride - pad
    return tl.minimum(s + win, extent) - tl.maximum(s, 0)


@triton.jit
def hipdnn_pool_bwd(dx_ptr, dy_ptr, i_ptr, batch, channels, in_d, in_h, in_w, out_d, out_h,
                    out_w, win_d, win_h, win_w, str_d, str_h, str_w, pad_d, pad_h, pad_w,
                    sxn, sxc, sxd, sxh, sxw, syn, syc, syd, syh, syw, sin, sic, sid, sih, siw,
                    cl, op, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0)
    e = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    total = batch.to(tl.int64) * channels * in_d * in_h * in_w
    m = e < total
    if cl != 0:
        c = (e % channels).to(tl.int32)
        r = e // channels
        w = (r % in_w).to(tl.int32)
        r = r // in_w
        h = (r % in_h).to(tl.int32)
        r = r // in_h
        d = (r % in_d).to(tl.int32)
        n = (r // in_d).to(tl.int32)
    else:
        w = (e % in_w).to(tl.int32)
        r = e // in_w
        h = (r % in_h).to(tl.int32)
        r = r // in_h
        d = (r % in_d).to(tl.int32)
        r = r // in_d
        c = (r % channels).to(tl.int32)
        n = (r // channels).to(tl.int32)
    mode = op & 3
    ybase = n.to(tl.int64) * syn + c.to(tl.int64) * syc
    ibase = n.to(tl.int64) * sin + c.to(tl.int64) * sic
    kd_n = (win_d + str_d - 1) // str_d
    kh_n = (win_h + str_h - 1) // str_h
    kw_n = (win_w + str_w - 1) // str_w
    vol = (win_d * win_h * win_w).to(tl.float32)
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for kd in range(0, kd_n):
        od, td, okd = _covering(d, pad_d, str_d, win_d, out_d, kd)
        for kh in range(0, kh_n):
            oh, th, okh = _covering(h, pad_h, str_h, win_h, out_h, kh)
            for kw in range(0, kw_n):
                ow, tw, okw = _covering(w, pad_w, str_w, win_w, out_w, kw)
                ok = m & okd & okh & okw
                yoff = ybase + od.to(tl.int64) * syd + oh.to(tl.int64) * syh + ow.to(tl.int64) * syw
                g = tl.load(dy_ptr + yoff, mask=ok, other=0.0).to(tl.float32)
                if mode < 2:
                    ioff = ibase + od.to(tl.int64) * sid + oh.to(tl.int64) * sih \
                        + ow.to(tl.int64) * siw
                    if (op & 8) != 0:
                        t = tl.load(i_ptr.to(tl.pointer_type(tl.int64), bitcast=True) + ioff,
                                    mask=ok, other=-1)
                    else:
                        t = tl.load(i_ptr + ioff, mask=ok, other=-1).to(tl.int64)
                    pos = ((td * win_h + th) * win_w + tw).to(tl.int64)
                    acc += tl.where(ok & (t == pos), g, 0.0)
                elif mode == 2:
                    acc += tl.where(ok, g / vol, 0.0)
                else:
                    cnt = _count(od, str_d, pad_d, win_d, in_d) \
                        * _count(oh, str_h, pad_h, win_h, in_h) \
                        * _count(ow, str_w, pad_w, win_w, in_w)
                    acc += tl.where(ok, g / tl.maximum(cnt, 1).to(tl.float32), 0.0)
    xoff = n.to(tl.int64) * sxn + c.to(tl.int64) * sxc + d.to(tl.int64) * sxd \
        + h.to(tl.int64) * sxh + w.to(tl.int64) * sxw
    tl.store(dx_ptr + xoff, acc.to(dx_ptr.dtype.element_ty), mask=m)


KERNEL = hipdnn_pool_bwd
FAMILY = "pool_bwd"
POINTERS = ["dx_ptr", "dy_ptr", "i_ptr"]
INTS = ["batch", "channels", "in_d", "in_h", "in_w", "out_d", "out_h", "out_w",
        "win_d", "win_h", "win_w", "str_d", "str_h", "str_w", "pad_d", "pad_h", "pad_w",
        "sxn", "sxc", "sxd", "sxh", "sxw", "syn", "syc", "syd", "syh", "syw",
        "sin", "sic", "sid", "sih", "siw", "cl", "op"]
# One variant ("generic": any strides, either element order); the kernel is a gather whose
# loads are indexed per element, so hints would not vectorize it.
HINTS = {}
SPEC_DIV16 = []
SPEC_ONE = []
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}


def pointer_type(name, ty):
    """The index is INT32 (an INT64 index is read through a cast pointer)."""
    return "i32" if name == "i_ptr" else ty


def configs(vendor, dtype):
    """(BLOCK_M, 1, 1, 1, num_warps, num_stages): 1024 dx elements per program."""
    return {"generic": [(1024, 1, 1, 1, 4, 1)]}
