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

Read by build.py at pack time only.
"""
import triton
import triton.language as tl
from epilogue import apply_epilogue


@triton.jit
def hipdnn_conv_fprop(x_ptr, w_ptr, y_ptr, bias_ptr, res_ptr, scale_ptr,
                      N, C, H, W, K, P, Q, R, S,
                      pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups,
                      sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syp, syq,
                      srn, srk, srp, srq, epilogue,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
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
    offs_c = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    x_n = n_idx * sxn + (g * cg) * sxc
    w_k = kch * swk
    ih0 = p * stride_h - pad_h
    iw0 = q * stride_w - pad_w
    if cg <= BLOCK_K:
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
    y_ptrs = y_ptr + (y_rows[:, None] + kch[None, :] * syk)
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


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


KERNEL = hipdnn_conv_fprop
FAMILY = "conv_fprop"
POINTERS = ["x_ptr", "w_ptr", "y_ptr", "bias_ptr", "res_ptr", "scale_ptr"]
INTS = ["N", "C", "H", "W", "K", "P", "Q", "R", "S", "pad_h", "pad_w", "stride_h", "stride_w",
        "dil_h", "dil_w", "groups", "sxn", "sxc", "sxh", "sxw", "swk", "swc", "swr", "sws",
        "syn", "syk", "syp", "syq", "srn", "srk", "srp", "srq", "epilogue"]
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
HINTS = {"spec": (SPEC_DIV16, SPEC_ONE), "nchw": (CF_DIV16, CF_ONE)}


def kernel_for(variant):
    """The jit function of a variant."""
    return hipdnn_conv_fprop_cf if variant == "nchw" else hipdnn_conv_fprop


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
        if dtype == "f32":
            spec = [(128, 64, 32, 8, 4, 3), (64, 64, 32, 8, 4, 3)]
            nchw = [(128, 64, 32, 8, 8, 3)]
        else:
            spec = [(128, 64, 64, 8, 4, 3), (64, 64, 64, 8, 4, 3)]
            nchw = [(128, 128, 64, 8, 8, 3), (128, 64, 64, 8, 8, 3)]
        gen = [(64, 64, 32, 8, 4, 2)]
    else:
        spec = [(128, 64, 32, 8, 4, 2)] if dtype == "f32" else [(128, 128, 64, 8, 8, 2), (64, 64, 64, 8, 4, 2)]
        gen = [(64, 64, 32, 8, 4, 2)]
        nchw = [(128, 64, 32, 8, 4, 2)] if dtype == "f32" else [(128, 128, 64, 8, 8, 2)]
    return {"spec": spec, "nchw": nchw, "generic": gen}
