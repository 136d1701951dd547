"""Batchnorm backward family: dx, dscale and dbias of a batchnorm (training) from the saved mean
and inv_variance, with an optional fused ReLU backward in front, f16/bf16/f32 inputs with f32
arithmetic.

The tensors are seen as batchnorm_fwd.py sees x: t[n, c, s] = t_ptr[n*stn + c*stc + s*sts]
for n < N, c < C (the channel axis), s < S (the spatial dims collapsed to one stride), each of
dy, x, dx and r (the ReLU operand) with its own strides. A program covers TC channels and a
contiguous range of (n, position block) pairs, each pair one image's TP consecutive positions;
the tile is [TC, TP] (channels-first, CF) or [TP, TC] (channels-last), BLOCK_M along the
unit-stride axis. The N*cdiv(S, TP) pairs are cut into `splits` chunks; grid (cdiv(C, TC),
splits, 1) for both launches.

Per channel, with M = N*S, x^ = (x - mean)*inv and g = dy*scale (the CPU reference engine's
semantics, engines/src/reference/ops/norm.rs `norm_backward`, which sums in f64):
  dbias = sum dy,  dscale = sum dy*x^,
  dx = scale*inv * (dy - dbias/M - x^*dscale/M)   (= inv*(g - sum(g)/M - x^*sum(g*x^)/M)).
Fused ReLU backward (flags bit 1): dy = dy_in * d, d = 0 where r <= 0 or r >= FLT_MAX, else 1
(`RELU_BWD` with the default clips, engines/src/reference/ops/pointwise.rs `binary`), applied
in both launches; dy_ptr then holds dy_in.

Two launches of this one kernel (`phase`), both on the same stream, no atomics:
  phase 0: per lane of its tile, every program sums dy and dy*x^ over its pairs, sums the lanes
    (a fixed tree) and stores the two f32 partials at ws[(2*sp + k)*C + c];
  phase 1: every program sums the `splits` partials of its channels (per lane over blocks of
    TP splits in split order, then a fixed tree: the same bits in every program); program
    sp = 0 writes dscale and dbias; each program writes dx for its own pairs.
  Workspace: 2*splits*C f32. Every summation order is fixed by the launch values: repeated
  launches give identical bits.

`flags` (run-time): 1 fused ReLU backward (r read), 2 channels-first path (generic entry only;
unit spatial strides assumed), then the f32 bits (an unset bit: the tensor has x's type) 4
scale, 8 mean, 16 inv, 32 dy, 64 dx, 128 dscale, 256 dbias, 512 r. Absent tensors' pointers may
be null. Offsets are int64.

Launch contract: `hipkernel.bn_bwd.dispatch.v1` (engines/src/ingestor/packs/bn_bwd.rs).
Kernels: `hipdnn_bn_bwd_cl` (spec: channels-last, unit channel strides), `hipdnn_bn_bwd_cf`
(nchw: channels-first, unit spatial strides), `hipdnn_bn_bwd` (generic: both paths, chosen by
flags bit 2).

Read by build.py at pack time only.
"""
import triton
import triton.language as tl

from batchnorm_fwd import TILES, _bc, _load_f32, _psum, _store_f32, _tile, _tmask

FLT_MAX = tl.constexpr(3.4028234663852886e38)


@triton.jit
def _dy(dy_ptr, r_ptr, n64, s64, sdyn, sdys, srn, srs, dyc, rc, mask, flags, CF: tl.constexpr):
    """dy over the tile as f32, the ReLU backward mask applied with flags bit 1."""
    dy = _load_f32(dy_ptr, _tile(dyc, n64 * sdyn + s64 * sdys, CF), mask, (flags & 32) != 0)
    if (flags & 1) != 0:
        r = _load_f32(r_ptr, _tile(rc, n64 * srn + s64 * srs, CF), mask, (flags & 512) != 0)
        d = tl.where((r <= 0.0) | (r >= FLT_MAX), 0.0, 1.0)
        dy = dy * d
    return dy


@triton.jit
def _bwd(dy_ptr, x_ptr, r_ptr, scale_ptr, mean_ptr, inv_ptr, dx_ptr, dscale_ptr, dbias_ptr,
         ws_ptr, N, C, S, sdyn, sdyc, sdys, sxn, sxc, sxs, srn, src, srs, sdxn, sdxc, sdxs,
         ssc, smc, sic, sdsc, sdbc, flags, splits, phase,
         CF: tl.constexpr, TC: tl.constexpr, TP: tl.constexpr):
    cb = tl.program_id(0)
    sp = tl.program_id(1)
    c = cb * TC + tl.arange(0, TC)
    cmask = c < C
    c64 = c.to(tl.int64)
    pos = tl.arange(0, TP)
    sb_count = tl.cdiv(S, TP)
    pairs = N * sb_count
    pps = tl.cdiv(pairs, splits)
    j0 = sp * pps
    j1 = tl.minimum(j0 + pps, pairs)
    dyc = c64 * sdyc
    xc = c64 * sxc
    rc = c64 * src
    mean = _load_f32(mean_ptr, c64 * smc, cmask, (flags & 8) != 0)
    inv = _load_f32(inv_ptr, c64 * sic, cmask, (flags & 16) != 0)
    mean_t = _bc(mean, CF)
    inv_t = _bc(inv, CF)
    if phase == 0:
        zero = tl.zeros([TC], tl.float32)
        acc1 = _tile(zero, tl.zeros([TP], tl.float32), CF)
        acc2 = _tile(zero, tl.zeros([TP], tl.float32), CF)
        n = j0 // sb_count
        sb = j0 - n * sb_count
        for _j in range(j0, j1):
            s = sb * TP + pos
            mask = _tmask(cmask, s < S, CF)
            n64 = n.to(tl.int64)
            s64 = s.to(tl.int64)
            dy = _dy(dy_ptr, r_ptr, n64, s64, sdyn, sdys, srn, srs, dyc, rc, mask, flags, CF)
            x = tl.load(x_ptr + _tile(xc, n64 * sxn + s64 * sxs, CF), mask=mask,
                        other=0.0).to(tl.float32)
            acc1 += dy
            acc2 += dy * ((x - mean_t) * inv_t)
            sb += 1
            w = (sb == sb_count).to(tl.int32)
            n += w
            sb -= w * sb_count
        w0 = (sp * 2).to(tl.int64) * C + c64
        tl.store(ws_ptr + w0, _psum(acc1, CF), mask=cmask)
        tl.store(ws_ptr + w0 + C, _psum(acc2, CF), mask=cmask)
    else:
        # Every split's partials of these channels: per lane over blocks of TP splits in split
        # order, then a fixed tree (the same bits in every program). The loop carries tiles,
        # as batchnorm_fwd.py's merge does (reproducible code object bytes).
        zero = tl.zeros([TC], tl.float32)
        t1 = _tile(zero, tl.zeros([TP], tl.float32), CF)
        t2 = _tile(zero, tl.zeros([TP], tl.float32), CF)
        for k0 in range(0, splits, TP):
            kk = k0 + pos
            kmask = _tmask(cmask, kk < splits, CF)
            off = _tile(c64, kk.to(tl.int64) * 2 * C, CF)
            t1 += tl.load(ws_ptr + off, mask=kmask, other=0.0)
            t2 += tl.load(ws_ptr + off + C, mask=kmask, other=0.0)
        db = _psum(t1, CF)
        ds = _psum(t2, CF)
        if sp == 0:
            _store_f32(dscale_ptr, c64 * sdsc, ds, cmask, (flags & 128) != 0)
            _store_f32(dbias_ptr, c64 * sdbc, db, cmask, (flags & 256) != 0)
        cnt = tl.full([TC], 1.0, tl.float32) * (N * S).to(tl.float32)
        scale = _load_f32(scale_ptr, c64 * ssc, cmask, (flags & 4) != 0)
        k_t = _bc(scale * inv, CF)
        a_t = _bc(tl.div_rn(db, cnt), CF)
        b_t = _bc(tl.div_rn(ds, cnt), CF)
        dxc = c64 * sdxc
        dx_f32 = (flags & 64) != 0
        n = j0 // sb_count
        sb = j0 - n * sb_count
        for _j in range(j0, j1):
            s = sb * TP + pos
            mask = _tmask(cmask, s < S, CF)
            n64 = n.to(tl.int64)
            s64 = s.to(tl.int64)
            dy = _dy(dy_ptr, r_ptr, n64, s64, sdyn, sdys, srn, srs, dyc, rc, mask, flags, CF)
            x = tl.load(x_ptr + _tile(xc, n64 * sxn + s64 * sxs, CF), mask=mask,
                        other=0.0).to(tl.float32)
            xh = (x - mean_t) * inv_t
            dx = k_t * (dy - a_t - xh * b_t)
            _store_f32(dx_ptr, _tile(dxc, n64 * sdxn + s64 * sdxs, CF), dx, mask, dx_f32)
            sb += 1
            w = (sb == sb_count).to(tl.int32)
            n += w
            sb -= w * sb_count


@triton.jit
def hipdnn_bn_bwd_cl(dy_ptr, x_ptr, r_ptr, scale_ptr, mean_ptr, inv_ptr, dx_ptr, dscale_ptr,
                     dbias_ptr, ws_ptr, N, C, S, sdyn, sdyc, sdys, sxn, sxc, sxs, srn, src, srs,
                     sdxn, sdxc, sdxs, ssc, smc, sic, sdsc, sdbc, flags, splits, phase,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Spec entry (channels-last: sdyc = sxc = src = sdxc = 1 constexpr)."""
    _bwd(dy_ptr, x_ptr, r_ptr, scale_ptr, mean_ptr, inv_ptr, dx_ptr, dscale_ptr, dbias_ptr,
         ws_ptr, N, C, S, sdyn, sdyc, sdys, sxn, sxc, sxs, srn, src, srs, sdxn, sdxc, sdxs,
         ssc, smc, sic, sdsc, sdbc, flags, splits, phase, False, BLOCK_M, BLOCK_N)


@triton.jit
def hipdnn_bn_bwd_cf(dy_ptr, x_ptr, r_ptr, scale_ptr, mean_ptr, inv_ptr, dx_ptr, dscale_ptr,
                     dbias_ptr, ws_ptr, N, C, S, sdyn, sdyc, sdys, sxn, sxc, sxs, srn, src, srs,
                     sdxn, sdxc, sdxs, ssc, smc, sic, sdsc, sdbc, flags, splits, phase,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """nchw entry (channels-first: sdys = sxs = srs = sdxs = 1 constexpr)."""
    _bwd(dy_ptr, x_ptr, r_ptr, scale_ptr, mean_ptr, inv_ptr, dx_ptr, dscale_ptr, dbias_ptr,
         ws_ptr, N, C, S, sdyn, sdyc, sdys, sxn, sxc, sxs, srn, src, srs, sdxn, sdxc, sdxs,
         ssc, smc, sic, sdsc, sdbc, flags, splits, phase, True, BLOCK_N, BLOCK_M)


@triton.jit
def hipdnn_bn_bwd(dy_ptr, x_ptr, r_ptr, scale_ptr, mean_ptr, inv_ptr, dx_ptr, dscale_ptr,
                  dbias_ptr, ws_ptr, N, C, S, sdyn, sdyc, sdys, sxn, sxc, sxs, srn, src, srs,
                  sdxn, sdxc, sdxs, ssc, smc, sic, sdsc, sdbc, flags, splits, phase,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Generic entry: flags bit 2 takes the channels-first path with unit spatial strides (the
    spatial strides are not read), else the channels-last path with every stride."""
    if (flags & 2) != 0:
        _bwd(dy_ptr, x_ptr, r_ptr, scale_ptr, mean_ptr, inv_ptr, dx_ptr, dscale_ptr, dbias_ptr,
             ws_ptr, N, C, S, sdyn, sdyc, 1, sxn, sxc, 1, srn, src, 1, sdxn, sdxc, 1,
             ssc, smc, sic, sdsc, sdbc, flags, splits, phase, True, BLOCK_N, BLOCK_M)
    else:
        _bwd(dy_ptr, x_ptr, r_ptr, scale_ptr, mean_ptr, inv_ptr, dx_ptr, dscale_ptr, dbias_ptr,
             ws_ptr, N, C, S, sdyn, sdyc, sdys, sxn, sxc, sxs, srn, src, srs, sdxn, sdxc, sdxs,
             ssc, smc, sic, sdsc, sdbc, flags, splits, phase, False, BLOCK_M, BLOCK_N)


def kernel_for(variant):
    """The jit function of a variant."""
    return {"spec": hipdnn_bn_bwd_cl, "nchw": hipdnn_bn_bwd_cf}.get(variant, hipdnn_bn_bwd)


KERNEL = hipdnn_bn_bwd
FAMILY = "bn_bwd"
POINTERS = ["dy_ptr", "x_ptr", "r_ptr", "scale_ptr", "mean_ptr", "inv_ptr", "dx_ptr",
            "dscale_ptr", "dbias_ptr", "ws_ptr"]
INTS = ["N", "C", "S", "sdyn", "sdyc", "sdys", "sxn", "sxc", "sxs", "srn", "src", "srs", "sdxn",
        "sdxc", "sdxs", "ssc", "smc", "sic", "sdsc", "sdbc", "flags", "splits", "phase"]
# spec (channels-last): dy, x, dx 16-byte aligned, C and the other strides of dy, x, r and dx
# multiples of 16, unit channel strides constant 1. nchw (channels-first): the same with S and
# unit spatial strides. r (the fused ReLU operand, possibly absent), the workspace and the
# per-channel tensors carry no alignment hint. generic: no hints.
SPEC_DIV16 = ["dy_ptr", "x_ptr", "dx_ptr", "C", "sdyn", "sdys", "sxn", "sxs", "sdxn", "sdxs"]
SPEC_ONE = ["sdyc", "sxc", "src", "sdxc"]
CF_DIV16 = ["dy_ptr", "x_ptr", "dx_ptr", "S", "sdyn", "sdyc", "sxn", "sxc", "sdxn", "sdxc"]
CF_ONE = ["sdys", "sxs", "srs", "sdxs"]
HINTS = {"spec": (SPEC_DIV16, SPEC_ONE), "nchw": (CF_DIV16, CF_ONE)}
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}


def pointer_type(name, ty):
    """The workspace holds f32 partials."""
    return "fp32" if name == "ws_ptr" else ty


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, 1, 1, num_warps, num_stages) per variant: batchnorm_fwd.py's tiles
    (the static rule in bn_bwd.rs is batchnorm_fwd's: 16x128 channels-last, the channels-first
    tile by the spatial size)."""
    cf = [(m, n, 1, 1, 4, 1) for m, n in TILES]
    return {"spec": [(16, 128, 1, 1, 4, 1)], "nchw": cf, "generic": cf}
