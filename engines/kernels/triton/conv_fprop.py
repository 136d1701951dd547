"""Conv fprop family: 2-D convolution forward as an implicit GEMM (+ fused epilogue),
f16/bf16 with f32 accumulation and f32 (IEEE; `tf32` entries: TF32 products, chosen only behind
the engine's TF32 knob). Any layout the strides give (NCHW, NHWC,
KCRS, KRSC, ...), padding, stride, dilation, groups.

GEMM view per group g: rows = output pixels (n, p, q) (N*P*Q), columns = the group's output
channels (K/groups), reduction = (r, s, c) with c over the group's C/groups channels.
Launch contract: `hipkernel.conv_fprop.dispatch.v2` (engines/src/ingestor/packs/conv_fprop.rs).
Grid: (cdiv(N*P*Q, BLOCK_M) * cdiv(K/groups, BLOCK_N), groups, 1); block: num_warps x warp size.
Epilogue (`epilogue`, run-time; epilogue.py): scale, + bias[k], + residual[n, k, p, q] (its own
strides), activation, + residual after it.
Index math is int32: the contract refuses tensors whose element offsets exceed 2^31 - 1.
Variants: `grouped` (direct, few channels per group, channels-last: hipdnn_conv_fprop_dg;
grid cdiv(N*P*Q, BLOCK_M) * cdiv(K, BLOCK_N)), `spec` (channels-last, hipdnn_conv_fprop),
`nchwt` (NCHW through a layout pass into the workspace: two launches of hipdnn_conv_fprop_nt,
`phase` 0 then 1), `nchw` (channels-first in place, hipdnn_conv_fprop_cf: no workspace, any
groups), `generic` (any strides, hipdnn_conv_fprop_g: with the flattened small-channel
reduction).

Read by build.py at pack time only.
"""
import triton
import triton.language as tl
from epilogue import apply_epilogue


@triton.jit
def _conv_tile(pid, g, x_ptr, w_ptr, y_ptr, bias_ptr, res_ptr, scale_ptr,
               N, C, H, W, K, P, Q, R, S,
               pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups,
               sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syp, syq,
               srn, srk, srp, srq, epilogue,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr,
               PIXEL_RUNS: tl.constexpr, FLAT_TAPS: tl.constexpr):
    """One output tile (program `pid` of group `g`) of the implicit GEMM + epilogue, for any
    strides of x, w, y and the residual (channels-last strides vectorize the loads).
    PIXEL_RUNS: y is channels-first (unit q stride): its pixel offsets are declared runs of
    BLOCK_M (tl.max_contiguous) so that a warp's threads walk pixels and the stores coalesce
    (without it the store layout walks channels: 4x slower on the batch-32 ResNet-50 layers).
    The alignment stays unknown, so every store remains a scalar one and a broken run (image
    and row ends) stays correct. Not applied to the residual load: with the declaration, the
    conv + bias + add + ReLU check of an NCHW 2x48x5x5 output failed on the H200 (Triton 3.9
    build), so that load keeps the channel-walking layout.
    FLAT_TAPS: compile the flattened (r, s, c) reduction for few channels per group (the
    generic entries, hipdnn_conv_fprop_g; compiled into the spec kernel as a run-time branch
    it cost the batch-32 stride-2 and 1x1 ResNet-50 layers 30-100 % on an H100, though it
    never ran there)."""
    cg = C // groups
    kg = K // groups
    m_total = N * P * Q
    num_pid_m = tl.cdiv(m_total, BLOCK_M)
    num_pid_n = tl.cdiv(kg, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_mask = offs_m < m_total
    n_mask = offs_n < kg
    pq = P * Q
    n_idx = offs_m // pq
    rem = offs_m % pq
    p = rem // Q
    q = rem % Q
    kch = g * kg + offs_n
    offs_c = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    x_n = n_idx * sxn + (g * cg) * sxc
    w_k = kch * swk
    ih0 = p * stride_h - pad_h
    iw0 = q * stride_w - pad_w
    if FLAT_TAPS and cg * 4 <= BLOCK_K and R * S > 1:
        # Few channels per group (the RGB stem: C = 3 over 7x7 taps): one block per tap would
        # leave most of each BLOCK_K-deep product idle, so the reduction runs over the
        # flattened (r, s, c), several taps per block.
        crs = R * S * cg
        for k0 in range(0, crs, BLOCK_K):
            kk = k0 + offs_c
            k_ok = kk < crs
            c = kk % cg
            rs = kk // cg
            r = rs // S
            s = rs - r * S
            ih = ih0[:, None] + (r * dil_h)[None, :]
            iw = iw0[:, None] + (s * dil_w)[None, :]
            ok = (m_mask[:, None] & k_ok[None, :] & (ih >= 0) & (ih < H) & (iw >= 0)
                  & (iw < W))
            a = tl.load(x_ptr + (x_n[:, None] + ih * sxh + iw * sxw + (c * sxc)[None, :]),
                        mask=ok, other=0.0)
            b = tl.load(w_ptr + (w_k[None, :] + (r * swr + s * sws + c * swc)[:, None]),
                        mask=k_ok[:, None] & n_mask[None, :], other=0.0)
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    elif cg <= BLOCK_K:
        # One channel block per tap: a flat loop over the taps, so the software pipeline
        # spans them (a loop nest pipelines only its inner loop, here of a single trip).
        for rs in range(0, R * S):
            r = rs // S
            s = rs - r * S
            ih = ih0 + r * dil_h
            iw = iw0 + s * dil_w
            in_ok = m_mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x_base = x_n + ih * sxh + iw * sxw
            w_base = w_k + r * swr + s * sws
            c_ok = offs_c < cg
            a = tl.load(x_ptr + (x_base[:, None] + offs_c[None, :] * sxc),
                        mask=in_ok[:, None] & c_ok[None, :], other=0.0)
            b = tl.load(w_ptr + (w_base[None, :] + offs_c[:, None] * swc),
                        mask=c_ok[:, None] & n_mask[None, :], other=0.0)
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    else:
        # Several channel blocks per tap: the tap's rows and masks once, the blocks pipelined.
        for rs in range(0, R * S):
            r = rs // S
            s = rs - r * S
            ih = ih0 + r * dil_h
            iw = iw0 + s * dil_w
            in_ok = m_mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x_base = x_n + ih * sxh + iw * sxw
            w_base = w_k + r * swr + s * sws
            for c0 in range(0, cg, BLOCK_K):
                cc = c0 + offs_c
                c_ok = cc < cg
                a = tl.load(x_ptr + (x_base[:, None] + cc[None, :] * sxc),
                            mask=in_ok[:, None] & c_ok[None, :], other=0.0)
                b = tl.load(w_ptr + (w_base[None, :] + cc[:, None] * swc),
                            mask=c_ok[:, None] & n_mask[None, :], other=0.0)
                acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    out_mask = m_mask[:, None] & n_mask[None, :]
    if epilogue != 0:
        res = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if (epilogue & 48) != 0:
            r_rows = n_idx * srn + p * srp + q * srq
            r_ptrs = res_ptr + (r_rows[:, None] + kch[None, :] * srk)
            res = tl.load(r_ptrs, mask=out_mask, other=0.0).to(tl.float32)
        acc = apply_epilogue(acc, epilogue, bias_ptr, kch, n_mask, scale_ptr, res)
    y_rows = n_idx * syn + p * syp + q * syq
    if PIXEL_RUNS:
        y_rows = tl.max_contiguous(y_rows, BLOCK_M)
    y_ptrs = y_ptr + (y_rows[:, None] + kch[None, :] * syk)
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=out_mask)




@triton.jit
def hipdnn_conv_fprop(x_ptr, w_ptr, y_ptr, bias_ptr, res_ptr, scale_ptr,
                      N, C, H, W, K, P, Q, R, S,
                      pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups,
                      sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syp, syq,
                      srn, srk, srp, srq, epilogue,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    _conv_tile(tl.program_id(0), tl.program_id(1), x_ptr, w_ptr, y_ptr, bias_ptr, res_ptr,
               scale_ptr, N, C, H, W, K, P, Q, R, S, pad_h, pad_w, stride_h, stride_w, dil_h,
               dil_w, groups, sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syp, syq, srn,
               srk, srp, srq, epilogue, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, INPUT_PRECISION,
               False, False)


@triton.jit
def hipdnn_conv_fprop_g(x_ptr, w_ptr, y_ptr, bias_ptr, res_ptr, scale_ptr,
                        N, C, H, W, K, P, Q, R, S,
                        pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups,
                        sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syp, syq,
                        srn, srk, srp, srq, epilogue,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """Generic form (any strides): hipdnn_conv_fprop's tile with the flattened small-channel
    reduction compiled in (FLAT_TAPS; the RGB stem)."""
    _conv_tile(tl.program_id(0), tl.program_id(1), x_ptr, w_ptr, y_ptr, bias_ptr, res_ptr,
               scale_ptr, N, C, H, W, K, P, Q, R, S, pad_h, pad_w, stride_h, stride_w, dil_h,
               dil_w, groups, sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syp, syq, srn,
               srk, srp, srq, epilogue, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, INPUT_PRECISION,
               False, True)


@triton.jit
def _transpose_tile(src, dst, rb, cb, rows, cols, s_row, d_row, TB: tl.constexpr):
    """dst[c * d_row + r] = src[r * s_row + c] over the TB x TB tile (rb, cb) of a rows x cols
    matrix whose columns are contiguous in src; loads walk src's columns, stores dst's rows."""
    offs_r = rb * TB + tl.arange(0, TB)
    offs_c = cb * TB + tl.arange(0, TB)
    m = (offs_r < rows)[:, None] & (offs_c < cols)[None, :]
    t = tl.load(src + (offs_r[:, None] * s_row + offs_c[None, :]), mask=m)
    mt = (offs_c < cols)[:, None] & (offs_r < rows)[None, :]
    tl.store(dst + (offs_c[:, None] * d_row + offs_r[None, :]), tl.trans(t), mask=mt)


@triton.jit
def hipdnn_conv_fprop_nt(x_ptr, w_ptr, y_ptr, bias_ptr, res_ptr, scale_ptr, ws_ptr,
                         N, C, H, W, K, P, Q, R, S,
                         pad_h, pad_w, stride_h, stride_w, dil_h, dil_w,
                         sxn, sxc, swk, syn, syk, syp, syq, srn, srk, srp, srq, epilogue, phase,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """Transposing channels-first form ("nchwt" variant), two launches of this one kernel.
    x: NCHW with packed planes (x[n, c, h, w] at n*sxn + c*sxc + h*W + w); w: packed KCRS
    (w[k, c, r, s] at k*swk + (c*R + r)*S + s); groups 1; y and the residual: any batch and
    channel strides, unit q stride.
    phase 0 (layout pass; grid N*cdiv(C,T)*cdiv(H*W,T) + K*cdiv(C,T)*cdiv(R*S,T), T = 64): x into the workspace as packed NHWC at ws[0..), w as packed KRSC at
    ws[xw..) (xw = N*H*W*C rounded up to a multiple of 128 elements).
    phase 1 (grid cdiv(N*P*Q, BLOCK_M)*cdiv(K, BLOCK_N)): the channels-last implicit GEMM over
    the workspace copies (16-byte channel-vector loads), y stored through its own strides."""
    hw = H * W
    rs_n = R * S
    xw = tl.cdiv(N * hw * C, 128) * 128
    if phase == 0:
        pid = tl.program_id(0)
        ncb = tl.cdiv(C, 64)
        nlb = tl.cdiv(hw, 64)
        x_tiles = N * ncb * nlb
        if pid < x_tiles:
            b = pid // (ncb * nlb)
            t = pid - b * (ncb * nlb)
            _transpose_tile(x_ptr + b * sxn, ws_ptr + b * (hw * C), t // nlb, t % nlb, C, hw,
                            sxc, C, 64)
        else:
            u = pid - x_tiles
            nsb = tl.cdiv(rs_n, 64)
            b = u // (ncb * nsb)
            t = u - b * (ncb * nsb)
            _transpose_tile(w_ptr + b * swk, ws_ptr + xw + b * (rs_n * C), t // nsb, t % nsb,
                            C, rs_n, rs_n, C, 64)
    else:
        _conv_tile(tl.program_id(0), 0, ws_ptr, ws_ptr + xw, y_ptr, bias_ptr, res_ptr,
                   scale_ptr, N, C, H, W, K, P, Q, R, S, pad_h, pad_w, stride_h, stride_w,
                   dil_h, dil_w, 1, hw * C, 1, W * C, C, rs_n * C, 1, S * C, C, syn, syk, syp,
                   syq, srn, srk, srp, srq, epilogue, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                   INPUT_PRECISION, True, False)


@triton.jit
def hipdnn_conv_fprop_cf(x_ptr, w_ptr, y_ptr, bias_ptr, res_ptr, scale_ptr,
                         N, C, H, W, K, P, Q, R, S,
                         pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups,
                         sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syp, syq,
                         srn, srk, srp, srq, epilogue,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """Channels-first form ("nchw" variant): the reduction runs over the flattened (c, r, s)
    of a packed KCRS filter (w offset = k * swk + (c * R + r) * S + s, so weight loads are
    contiguous), and the x tile, the residual and y are handled as [channel, pixel] tiles so
    that a warp's threads walk the unit-stride pixel dimension (coalesced NCHW access)."""
    pid = tl.program_id(0)
    g = tl.program_id(1)
    cg = C // groups
    kg = K // groups
    m_total = N * P * Q
    num_pid_m = tl.cdiv(m_total, BLOCK_M)
    num_pid_n = tl.cdiv(kg, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_mask = offs_m < m_total
    n_mask = offs_n < kg
    pq = P * Q
    n_idx = offs_m // pq
    rem = offs_m % pq
    p = rem // Q
    q = rem % Q
    kch = g * kg + offs_n
    ih0 = p * stride_h - pad_h
    iw0 = q * stride_w - pad_w
    x_m = n_idx * sxn + (g * cg) * sxc + ih0 * sxh + iw0 * sxw
    w_n = kch * swk
    rs_n = R * S
    crs = cg * rs_n
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, crs, BLOCK_K):
        kk = k0 + offs_k
        k_ok = kk < crs
        c = kk // rs_n
        rs = kk % rs_n
        dh = (rs // S) * dil_h
        dw = (rs % S) * dil_w
        ih = ih0[None, :] + dh[:, None]
        iw = iw0[None, :] + dw[:, None]
        ok = (k_ok[:, None] & m_mask[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W))
        x_k = c * sxc + dh * sxh + dw * sxw
        at = tl.load(x_ptr + (x_k[:, None] + x_m[None, :]), mask=ok, other=0.0)
        b = tl.load(w_ptr + (kk[:, None] + w_n[None, :]),
                    mask=k_ok[:, None] & n_mask[None, :], other=0.0)
        acc = tl.dot(tl.trans(at), b, acc, input_precision=INPUT_PRECISION)
    out_mask_t = n_mask[:, None] & m_mask[None, :]
    if epilogue != 0:
        res = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if (epilogue & 48) != 0:
            r_cols = n_idx * srn + p * srp + q * srq
            rt = tl.load(res_ptr + (kch[:, None] * srk + r_cols[None, :]), mask=out_mask_t,
                         other=0.0)
            res = tl.trans(rt.to(tl.float32))
        acc = apply_epilogue(acc, epilogue, bias_ptr, kch, n_mask, scale_ptr, res)
    y_cols = n_idx * syn + p * syp + q * syq
    y_ptrs = y_ptr + (kch[:, None] * syk + y_cols[None, :])
    tl.store(y_ptrs, tl.trans(acc).to(y_ptr.dtype.element_ty), mask=out_mask_t)


@triton.jit
def _dg_tap(rs, S, ih0, iw0, dil_h, dil_w, H, W, m_mask, x_n, sxh, sxw):
    """Tap `rs` of the direct grouped kernel: its filter position (r, s), which output pixels
    read inside the image, and the element offsets of their x rows."""
    r = rs // S
    s = rs - r * S
    ih = ih0 + r * dil_h
    iw = iw0 + s * dil_w
    in_ok = m_mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    return r, s, in_ok, x_n + ih * sxh + iw * sxw


@triton.jit
def hipdnn_conv_fprop_dg(x_ptr, w_ptr, y_ptr, bias_ptr, res_ptr, scale_ptr,
                         N, C, H, W, K, P, Q, R, S,
                         pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups,
                         sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syp, syq,
                         srn, srk, srp, srq, epilogue,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """Direct grouped form ("grouped" variant) for few channels per group (depthwise,
    ResNeXt), where a per-group GEMM tile would leave most of its rows and columns idle.
    Program `pid` computes BLOCK_M output pixels x BLOCK_N output channels taken across
    groups (grid cdiv(N*P*Q, BLOCK_M) * cdiv(K, BLOCK_N)) by f32 multiply-adds: taps outer,
    the group's C/groups input channels inner, a fixed order (deterministic). x, y and the
    residual are channels-last (unit channel strides: their channel runs load and store as
    vectors); w has any strides. Depthwise (groups = C = K) reads x at the output channel;
    16-bit graphs with C/groups = K/groups dividing BLOCK_N take one block-diagonal product per
    tap on the matrix units."""
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(K, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    kch = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_mask = offs_m < N * P * Q
    n_mask = kch < K
    cg = C // groups
    kg = K // groups
    pq = P * Q
    n_idx = offs_m // pq
    rem = offs_m % pq
    p = rem // Q
    q = rem % Q
    ih0 = p * stride_h - pad_h
    iw0 = q * stride_w - pad_w
    x_n = n_idx * sxn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # Three forms, each a loop over the taps (_dg_tap: the tap's filter position, the rows of
    # x it reads and which pixels are inside the image).
    depthwise = cg == 1 and kg == 1
    block_diag = x_ptr.dtype.element_ty != tl.float32 and cg == kg and BLOCK_N % cg == 0
    if depthwise or block_diag:
        # Depthwise: x at the output channel times w[k, 0, r, s]. Block-diagonal (16-bit, as
        # many outputs as inputs per group, groups aligned with the channel tile: ResNeXt):
        # the tile's input channels are its output channels, and each tap is one product with
        # a block-diagonal [BLOCK_N, BLOCK_N] weight on the matrix units (zeros between groups)
        # instead of cg multiply-adds per output on the vector lanes.
        same = (kch // cg)[:, None] == (kch // cg)[None, :]
        w_bd = kch[None, :] * swk + (kch % cg)[:, None] * swc
        w_ok = same & n_mask[:, None] & n_mask[None, :]
        for rs in range(0, R * S):
            r, s, in_ok, x_row = _dg_tap(rs, S, ih0, iw0, dil_h, dil_w, H, W, m_mask, x_n, sxh,
                                         sxw)
            xv = tl.load(x_ptr + (x_row[:, None] + kch[None, :] * sxc),
                         mask=in_ok[:, None] & n_mask[None, :], other=0.0)
            if depthwise:
                wd = tl.load(w_ptr + (kch * swk + r * swr + s * sws), mask=n_mask, other=0.0)
                acc += xv.to(tl.float32) * wd.to(tl.float32)[None, :]
            else:
                wb = tl.load(w_ptr + (w_bd + r * swr + s * sws), mask=w_ok, other=0.0)
                acc = tl.dot(xv, wb, acc, input_precision=INPUT_PRECISION)
    else:
        cbase = (kch // kg) * cg
        for rs in range(0, R * S):
            r, s, in_ok, x_row = _dg_tap(rs, S, ih0, iw0, dil_h, dil_w, H, W, m_mask, x_n, sxh,
                                         sxw)
            w_tap = kch * swk + r * swr + s * sws
            for j in range(0, cg):
                xv = tl.load(x_ptr + (x_row[:, None] + (cbase + j)[None, :] * sxc),
                             mask=in_ok[:, None] & n_mask[None, :], other=0.0)
                wv = tl.load(w_ptr + (w_tap + j * swc), mask=n_mask, other=0.0)
                acc += xv.to(tl.float32) * wv.to(tl.float32)[None, :]
    out_mask = m_mask[:, None] & n_mask[None, :]
    if epilogue != 0:
        res = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if (epilogue & 48) != 0:
            r_rows = n_idx * srn + p * srp + q * srq
            res = tl.load(res_ptr + (r_rows[:, None] + kch[None, :] * srk), mask=out_mask,
                          other=0.0).to(tl.float32)
        acc = apply_epilogue(acc, epilogue, bias_ptr, kch, n_mask, scale_ptr, res)
    y_rows = n_idx * syn + p * syp + q * syq
    tl.store(y_ptr + (y_rows[:, None] + kch[None, :] * syk), acc.to(y_ptr.dtype.element_ty),
             mask=out_mask)


KERNEL = hipdnn_conv_fprop
FAMILY = "conv_fprop"
POINTERS = ["x_ptr", "w_ptr", "y_ptr", "bias_ptr", "res_ptr", "scale_ptr", "ws_ptr"]
INTS = ["N", "C", "H", "W", "K", "P", "Q", "R", "S", "pad_h", "pad_w", "stride_h", "stride_w",
        "dil_h", "dil_w", "groups", "sxn", "sxc", "sxh", "sxw", "swk", "swc", "swr", "sws",
        "syn", "syk", "syp", "syq", "srn", "srk", "srp", "srq", "epilogue", "phase"]
# Specialized variant ("spec", channels-last): x, w, y (and the residual) 16-byte aligned; C, K
# and the non-channel strides multiples of 16; channel strides and groups constant 1 (NHWC x,
# KRSC w, NHWC y and residual, groups = 1; a launch without a residual passes y's strides).
# Everything else takes the "generic" variant.
SPEC_DIV16 = ["x_ptr", "w_ptr", "y_ptr", "res_ptr", "C", "K", "sxn", "sxh", "sxw", "swk", "swr",
              "sws", "syn", "syp", "syq", "srn", "srp", "srq"]
SPEC_ONE = ["sxc", "swc", "syk", "srk", "groups"]
# Channels-first variant ("nchw", kernel hipdnn_conv_fprop_cf): x, w, y and the residual
# 16-byte aligned; unit pixel strides of x, y and the residual constant 1; w packed KCRS (the
# contract checks swc = R*S*sws... with sws = 1; the kernel reads w at k*swk + (c*R + r)*S + s).
CF_DIV16 = ["x_ptr", "w_ptr", "y_ptr", "res_ptr"]
CF_ONE = ["sxw", "syq", "srq"]
# Transposing channels-first variant ("nchwt", kernel hipdnn_conv_fprop_nt): x, w, y, the
# residual and the workspace 16-byte aligned; C and K multiples of 16; unit q strides of y and
# the residual constant 1 (the kernel takes no other x/w strides: packed planes, packed KCRS).
NT_DIV16 = ["x_ptr", "w_ptr", "y_ptr", "res_ptr", "ws_ptr", "C", "K"]
NT_ONE = ["syq", "srq"]
# Direct grouped variant ("grouped", kernel hipdnn_conv_fprop_dg): x, w, y and the residual
# 16-byte aligned; unit channel strides of x, y and the residual constant 1; their other strides
# multiples of 16 (channels-last with C and K multiples of 16); w any strides.
DG_DIV16 = ["x_ptr", "w_ptr", "y_ptr", "res_ptr", "sxn", "sxh", "sxw", "syn", "syp", "syq",
            "srn", "srp", "srq"]
DG_ONE = ["sxc", "syk", "srk"]
HINTS = {"spec": (SPEC_DIV16, SPEC_ONE), "nchw": (CF_DIV16, CF_ONE), "nchwt": (NT_DIV16, NT_ONE),
         "grouped": (DG_DIV16, DG_ONE)}


def kernel_for(variant):
    """The jit function of a variant."""
    return {"nchw": hipdnn_conv_fprop_cf, "nchwt": hipdnn_conv_fprop_nt,
            "grouped": hipdnn_conv_fprop_dg, "generic": hipdnn_conv_fprop_g}.get(variant,
                                                                               hipdnn_conv_fprop)


# `tf32`: f32 tensors with TF32 tensor-core products (INPUT_PRECISION "tf32"), CUDA targets
# only; the engine chooses these entries only behind its TF32 knob.
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "tf32": "fp32"}


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) per variant."""
    if dtype == "tf32" and vendor != "cuda":
        return {}
    if vendor == "cuda":
        if dtype == "tf32":
            return {"spec": [(128, 64, 32, 8, 4, 3)]}
        # Measured on an H200 with the benchmarking build (docs/PERFORMANCE.md): 256x64 and
        # 128x128 spec tiles never won a batch-32 ResNet-50 layer (128x64 did, or 64x64 where
        # 128-row tiles under-fill); 4-warp nchw tiles spill.
        # nchwt: one tile each, the fastest on the batch-8/32 ResNet-50 layers (H200, Triton
        # JIT sweep of 5 tiles; 128x64 was within 10 %).
        if dtype == "f32":
            spec = [(128, 64, 32, 8, 4, 3), (64, 64, 32, 8, 4, 3)]
            nchw = [(128, 64, 32, 8, 8, 3)]
            nchwt = [(128, 64, 32, 8, 4, 3)]
        else:
            spec = [(128, 64, 64, 8, 4, 3), (64, 64, 64, 8, 4, 3)]
            nchw = [(128, 128, 64, 8, 8, 3), (128, 64, 64, 8, 8, 3)]
            nchwt = [(64, 64, 64, 8, 4, 3)]
        gen = [(64, 64, 32, 8, 4, 2)]
    else:
        spec = [(128, 64, 32, 8, 4, 2)] if dtype == "f32" else [(128, 128, 64, 8, 8, 2), (64, 64, 64, 8, 4, 2)]
        gen = [(64, 64, 32, 8, 4, 2)]
        nchw = [(128, 64, 32, 8, 4, 2)] if dtype == "f32" else [(128, 128, 64, 8, 8, 2)]
        nchwt = [(128, 64, 32, 8, 4, 2)] if dtype == "f32" else [(64, 64, 64, 8, 4, 2)]
    # grouped: one tile of 64 pixels x 64 channels (CUDA-core multiply-adds, memory bound).
    grouped = [(64, 64, 16, 1, 4, 2)]
    out = {"grouped": grouped, "spec": spec, "nchwt": nchwt, "nchw": nchw, "generic": gen}
    return {k: v for k, v in out.items() if v}
