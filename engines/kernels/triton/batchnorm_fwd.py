"""Batchnorm forward family: batchnorm inference (mean + inv_variance, or mean + variance +
epsilon) and batchnorm training forward (batch statistics, optional saved mean / inv_variance
and running-statistics update), f16/bf16/f32 x with f32 statistics and arithmetic.

x is seen as x[n, c, s] = x_ptr[n*sxn + c*sxc + s*sxs] for n < N, c < C (the channel axis,
dim 1 of the graph's x), s < S (the spatial dims, collapsed to one stride); y likewise with its
own strides. A program covers TC channels and a contiguous range of (n, position block)
pairs, each pair one image's TP consecutive positions. The tile is [TC, TP] (channels-first,
CF: the positions are the unit-stride axis) or [TP, TC] (channels-last: the channels are):
  CF: TC = BLOCK_N, TP = BLOCK_M;  channels-last: TC = BLOCK_M, TP = BLOCK_N
(BLOCK_M is always the length along the unit-stride axis). The N*cdiv(S, TP) pairs are cut
into `splits` chunks of cdiv(pairs, splits); grid (cdiv(C, TC), splits, 1).

Per channel (the CPU reference engine's semantics, engines/src/reference/ops/norm.rs):
  inference:  inv = inv_variance, or 1/sqrt(variance + eps) (IEEE sqrt and division);
  training:   mean, population variance var over the N*S values, inv = 1/sqrt(var + eps);
  y = (x - mean) * inv * scale + bias, in that order, every product rounded (no FP
  contraction, OPTIONS), so inference gives the reference's bits for f32.
  running statistics: next_mean = (1 - momentum)*prev_mean + momentum*mean,
  next_var = (1 - momentum)*prev_var + momentum*var*unbias, unbias = cnt/(cnt - 1) in f32
  (1 when cnt = N*S is 1), computed by the launcher.

Training is two launches of the same kernel (`phase`):
  phase 0 (statistics): every program computes the channels' shift, the mean of the first tile
    (image 0, positions 0..TP; the same bits in every program; program sp = 0 stores it at
    ws[2*splits*C + c]), accumulates per lane of its tile x - shift and (x - shift)^2 over its
    pairs, sums the lanes (a fixed tree) and stores the two f32 sums at ws[(2*sp + k)*C + c];
  phase 2 (normalize): every program sums the `splits` partials of its channels (per lane over
    blocks of TP splits in split order, then a fixed tree, so every program holds the same
    bits): mean = shift + S1/cnt, var = max(S2 - S1*(S1/cnt), 0)/cnt (cnt = N*S, population
    variance); program sp = 0 writes the saved mean / inv and the running statistics; each
    program normalizes its own pairs.
  Workspace: (2*splits + 1)*C f32. The split and every summation order are fixed by the launch
  values: repeated launches give identical bits; no atomics. Inference is one launch of phase 2
  (the workspace is not used).

`flags` (run-time): 1 training, 2 variance form (inference), 4 write the saved mean, 8 write
the saved inv_variance, 16 running statistics, 32 channels-first path (generic entry only;
the unit spatial stride is then assumed), and the f32 bits of the tensors that may be f32
behind 16-bit x: 64 scale, 128 bias, 256 y, 512 m (inference mean / prev running mean), 1024
v (inference inv_variance or variance / prev running variance), 2048 saved mean, 4096 saved
inv, 8192 next running mean, 16384 next running variance. m_ptr/v_ptr are the inference
statistics or (training) the previous running statistics; per-channel tensors are read at
c * stride (stride 0: one value). Absent tensors' pointers may be null. Offsets are int64.

Launch contract: `hipkernel.batchnorm_fwd.dispatch.v1` (engines/src/ingestor/packs/
batchnorm_fwd.rs). Kernels: `hipdnn_batchnorm_fwd_cl` (spec: channels-last, unit channel
strides), `hipdnn_batchnorm_fwd_cf` (nchw: channels-first, unit spatial strides),
`hipdnn_batchnorm_fwd` (generic: both paths, chosen by flags bit 32).

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
def _tile(cv, pv, CF: tl.constexpr):
    """The tile of a channel vector and a position vector: [TC, TP] (CF) or [TP, TC]."""
    if CF:
        return cv[:, None] + pv[None, :]
    else:
        return pv[:, None] + cv[None, :]


@triton.jit
def _tmask(cm, pm, CF: tl.constexpr):
    if CF:
        return cm[:, None] & pm[None, :]
    else:
        return pm[:, None] & cm[None, :]


@triton.jit
def _bc(v, CF: tl.constexpr):
    """A per-channel vector broadcast over the tile's positions."""
    if CF:
        return v[:, None]
    else:
        return v[None, :]


@triton.jit
def _psum(t, CF: tl.constexpr):
    """Sum over the tile's positions axis."""
    if CF:
        return tl.sum(t, axis=1)
    else:
        return tl.sum(t, axis=0)


@triton.jit
def _bn(x_ptr, scale_ptr, bias_ptr, y_ptr, m_ptr, v_ptr, sm_ptr, si_ptr, nm_ptr, nv_ptr, ws_ptr,
        N, C, S, sxn, sxc, sxs, syn, syc, sys, ssc, sbc, smc, svc, ssm, ssi, snm, snv,
        flags, splits, phase, eps, momentum, unbias,
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
    xc = c64 * sxc
    if phase == 0:
        # The shift, per channel: the mean of the channel's first tile (image 0, positions
        # 0..TP), the same bits in every program; program sp = 0 stores it for phase 2.
        p0 = _tmask(cmask, pos < S, CF)
        x0 = tl.load(x_ptr + _tile(xc, pos.to(tl.int64) * sxs, CF), mask=p0,
                     other=0.0).to(tl.float32)
        cnt0 = tl.full([TC], 1.0, tl.float32) * tl.minimum(S, TP).to(tl.float32)
        shift = tl.div_rn(_psum(x0, CF), cnt0)
        wsh = (2 * splits).to(tl.int64) * C + c64
        if sp == 0:
            tl.store(ws_ptr + wsh, shift, mask=cmask)
        # Per lane: sums of x - shift and (x - shift)^2 over this program's pairs.
        acc1 = tl.zeros_like(x0)
        acc2 = tl.zeros_like(x0)
        n = j0 // sb_count
        sb = j0 - n * sb_count
        for _j in range(j0, j1):
            s = sb * TP + pos
            mask = _tmask(cmask, s < S, CF)
            x = tl.load(x_ptr + _tile(xc, n.to(tl.int64) * sxn + s.to(tl.int64) * sxs, CF),
                        mask=mask, other=0.0).to(tl.float32)
            d = tl.where(mask, x - _bc(shift, CF), 0.0)
            acc1 += d
            acc2 += d * d
            sb += 1
            w = (sb == sb_count).to(tl.int32)
            n += w
            sb -= w * sb_count
        w0 = (sp * 2).to(tl.int64) * C + c64
        tl.store(ws_ptr + w0, _psum(acc1, CF), mask=cmask)
        tl.store(ws_ptr + w0 + C, _psum(acc2, CF), mask=cmask)
    else:
        if (flags & 1) != 0:
            # Sum every split's partials of these channels: per lane over blocks of TP splits
            # in split order, then a fixed tree (the same bits in every program). The loop
            # carries tiles, not reduced vectors: Triton 3.9 orders the loop's reduced-layout
            # carried values differently from one compile to the next (same arithmetic, other
            # code object bytes), which the byte-compared pack cannot take.
            zero = tl.zeros([TC], tl.float32)
            t1 = _tile(zero, tl.zeros([TP], tl.float32), CF)
            t2 = _tile(zero, tl.zeros([TP], tl.float32), CF)
            for k0 in range(0, splits, TP):
                kk = k0 + pos
                kmask = _tmask(cmask, kk < splits, CF)
                off = _tile(c64, kk.to(tl.int64) * 2 * C, CF)
                t1 += tl.load(ws_ptr + off, mask=kmask, other=0.0)
                t2 += tl.load(ws_ptr + off + C, mask=kmask, other=0.0)
            a1 = _psum(t1, CF)
            a2 = _psum(t2, CF)
            shift = tl.load(ws_ptr + (2 * splits).to(tl.int64) * C + c64, mask=cmask, other=0.0)
            cnt_all = tl.full([TC], 1.0, tl.float32) * (N * S).to(tl.float32)
            a = tl.div_rn(a1, cnt_all)
            mean = shift + a
            var = tl.div_rn(tl.maximum(a2 - a1 * a, 0.0), cnt_all)
            inv = tl.div_rn(tl.full([TC], 1.0, tl.float32), tl.sqrt_rn(var + eps))
            if sp == 0:
                if (flags & 4) != 0:
                    _store_f32(sm_ptr, c64 * ssm, mean, cmask, (flags & 2048) != 0)
                if (flags & 8) != 0:
                    _store_f32(si_ptr, c64 * ssi, inv, cmask, (flags & 4096) != 0)
                if (flags & 16) != 0:
                    pm = _load_f32(m_ptr, c64 * smc, cmask, (flags & 512) != 0)
                    pv = _load_f32(v_ptr, c64 * svc, cmask, (flags & 1024) != 0)
                    om = 1.0 - momentum
                    _store_f32(nm_ptr, c64 * snm, om * pm + momentum * mean, cmask,
                               (flags & 8192) != 0)
                    _store_f32(nv_ptr, c64 * snv, om * pv + momentum * var * unbias, cmask,
                               (flags & 16384) != 0)
        else:
            mean = _load_f32(m_ptr, c64 * smc, cmask, (flags & 512) != 0)
            inv = _load_f32(v_ptr, c64 * svc, cmask, (flags & 1024) != 0)
            if (flags & 2) != 0:
                inv = tl.div_rn(tl.full([TC], 1.0, tl.float32), tl.sqrt_rn(inv + eps))
        scale = _load_f32(scale_ptr, c64 * ssc, cmask, (flags & 64) != 0)
        bias = _load_f32(bias_ptr, c64 * sbc, cmask, (flags & 128) != 0)
        mean_t = _bc(mean, CF)
        inv_t = _bc(inv, CF)
        scale_t = _bc(scale, CF)
        bias_t = _bc(bias, CF)
        yc = c64 * syc
        y_f32 = (flags & 256) != 0
        n = j0 // sb_count
        sb = j0 - n * sb_count
        for _j in range(j0, j1):
            s = sb * TP + pos
            mask = _tmask(cmask, s < S, CF)
            n64 = n.to(tl.int64)
            s64 = s.to(tl.int64)
            x = tl.load(x_ptr + _tile(xc, n64 * sxn + s64 * sxs, CF), mask=mask,
                        other=0.0).to(tl.float32)
            y = (x - mean_t) * inv_t * scale_t + bias_t
            _store_f32(y_ptr, _tile(yc, n64 * syn + s64 * sys, CF), y, mask, y_f32)
            sb += 1
            w = (sb == sb_count).to(tl.int32)
            n += w
            sb -= w * sb_count


@triton.jit
def hipdnn_batchnorm_fwd_cl(x_ptr, scale_ptr, bias_ptr, y_ptr, m_ptr, v_ptr, sm_ptr, si_ptr,
                            nm_ptr, nv_ptr, ws_ptr, N, C, S, sxn, sxc, sxs, syn, syc, sys,
                            ssc, sbc, smc, svc, ssm, ssi, snm, snv, flags, splits, phase,
                            eps, momentum, unbias,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Spec entry (channels-last: sxc = syc = 1 constexpr)."""
    _bn(x_ptr, scale_ptr, bias_ptr, y_ptr, m_ptr, v_ptr, sm_ptr, si_ptr, nm_ptr, nv_ptr, ws_ptr,
        N, C, S, sxn, sxc, sxs, syn, syc, sys, ssc, sbc, smc, svc, ssm, ssi, snm, snv,
        flags, splits, phase, eps, momentum, unbias, False, BLOCK_M, BLOCK_N)


@triton.jit
def hipdnn_batchnorm_fwd_cf(x_ptr, scale_ptr, bias_ptr, y_ptr, m_ptr, v_ptr, sm_ptr, si_ptr,
                            nm_ptr, nv_ptr, ws_ptr, N, C, S, sxn, sxc, sxs, syn, syc, sys,
                            ssc, sbc, smc, svc, ssm, ssi, snm, snv, flags, splits, phase,
                            eps, momentum, unbias,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """nchw entry (channels-first: sxs = sys = 1 constexpr)."""
    _bn(x_ptr, scale_ptr, bias_ptr, y_ptr, m_ptr, v_ptr, sm_ptr, si_ptr, nm_ptr, nv_ptr, ws_ptr,
        N, C, S, sxn, sxc, sxs, syn, syc, sys, ssc, sbc, smc, svc, ssm, ssi, snm, snv,
        flags, splits, phase, eps, momentum, unbias, True, BLOCK_N, BLOCK_M)


@triton.jit
def hipdnn_batchnorm_fwd(x_ptr, scale_ptr, bias_ptr, y_ptr, m_ptr, v_ptr, sm_ptr, si_ptr,
                         nm_ptr, nv_ptr, ws_ptr, N, C, S, sxn, sxc, sxs, syn, syc, sys,
                         ssc, sbc, smc, svc, ssm, ssi, snm, snv, flags, splits, phase,
                         eps, momentum, unbias,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Generic entry: flags bit 32 takes the channels-first path with unit spatial strides
    (sxs and sys are not read), else the channels-last path with every stride."""
    if (flags & 32) != 0:
        _bn(x_ptr, scale_ptr, bias_ptr, y_ptr, m_ptr, v_ptr, sm_ptr, si_ptr, nm_ptr, nv_ptr,
            ws_ptr, N, C, S, sxn, sxc, 1, syn, syc, 1, ssc, sbc, smc, svc, ssm, ssi, snm, snv,
            flags, splits, phase, eps, momentum, unbias, True, BLOCK_N, BLOCK_M)
    else:
        _bn(x_ptr, scale_ptr, bias_ptr, y_ptr, m_ptr, v_ptr, sm_ptr, si_ptr, nm_ptr, nv_ptr,
            ws_ptr, N, C, S, sxn, sxc, sxs, syn, syc, sys, ssc, sbc, smc, svc, ssm, ssi, snm,
            snv, flags, splits, phase, eps, momentum, unbias, False, BLOCK_M, BLOCK_N)


def kernel_for(variant):
    """The jit function of a variant."""
    return {"spec": hipdnn_batchnorm_fwd_cl, "nchw": hipdnn_batchnorm_fwd_cf}.get(
        variant, hipdnn_batchnorm_fwd)


KERNEL = hipdnn_batchnorm_fwd
FAMILY = "batchnorm_fwd"
POINTERS = ["x_ptr", "scale_ptr", "bias_ptr", "y_ptr", "m_ptr", "v_ptr", "sm_ptr", "si_ptr",
            "nm_ptr", "nv_ptr", "ws_ptr"]
INTS = ["N", "C", "S", "sxn", "sxc", "sxs", "syn", "syc", "sys", "ssc", "sbc", "smc", "svc",
        "ssm", "ssi", "snm", "snv", "flags", "splits", "phase"]
FLOATS = ["eps", "momentum", "unbias"]
# spec (channels-last): x and y 16-byte aligned, C and the other strides of x and y multiples
# of 16, unit channel strides constant 1. nchw (channels-first): x and y 16-byte aligned, S and
# the other strides of x and y multiples of 16, unit spatial strides constant 1. The workspace
# and the per-channel tensors carry no hint. generic: no hints.
SPEC_DIV16 = ["x_ptr", "y_ptr", "C", "sxn", "sxs", "syn", "sys"]
SPEC_ONE = ["sxc", "syc"]
CF_DIV16 = ["x_ptr", "y_ptr", "S", "sxn", "sxc", "syn", "syc"]
CF_ONE = ["sxs", "sys"]
HINTS = {"spec": (SPEC_DIV16, SPEC_ONE), "nchw": (CF_DIV16, CF_ONE)}
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}
# Compiled without FP contraction: the reference engine rounds every product.
OPTIONS = {"enable_fp_fusion": False}


def pointer_type(name, ty):
    """The workspace holds f32 partials."""
    return "fp32" if name == "ws_ptr" else ty


# (BLOCK_M, BLOCK_N): BLOCK_M along the unit-stride axis, BLOCK_N along the other; 2048
# elements a tile. The static rule in batchnorm_fwd.rs takes 16x128 for the channels-last
# path and, for channels-first, the longest BLOCK_M whose padding of S stays within 4/3.
TILES = [(1024, 2), (256, 8), (64, 32), (16, 128)]


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, 1, 1, num_warps, num_stages) per variant."""
    cf = [(m, n, 1, 1, 4, 1) for m, n in TILES]
    return {"spec": [(16, 128, 1, 1, 4, 1)], "nchw": cf, "generic": cf}
