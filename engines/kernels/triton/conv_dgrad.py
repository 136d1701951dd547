"""Conv dgrad family: 2-D convolution backward data as an implicit GEMM, f16/bf16 with f32
accumulation and f32 (IEEE); any layout the strides give, padding, stride, dilation, groups.

dx[n, c, h, w] = sum over (r, s, k) of dy[n, k, p, q] * w[k, c, r, s] where
h + pad_h - r*dil_h = p*stride_h (and the same for w/q), 0 <= p < P, 0 <= q < Q.
GEMM view per group g: rows = input pixels (n, h, w) (N*H*W), columns = the group's input
channels (C/groups), reduction = (r, s, k) with k over the group's K/groups channels. Taps whose
output position is not on the stride grid are masked (correct for any stride; strided layers
do stride_h*stride_w times the useful work).
Launch contract: `hipkernel.conv_dgrad.dispatch.v1` (engines/src/ingestor/packs/conv_dgrad.rs).
Grid: (cdiv(N*H*W, BLOCK_M) * cdiv(C/groups, BLOCK_N), groups, 1).

Read by build.py at pack time only.
"""
import triton
import triton.language as tl


@triton.jit
def _taps(acc, dy_ptr, w_ptr, ih, iw, m_mask, n_mask, dy_n, w_c, offs_k, kg, R, S, P, Q,
          pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, sdyk, sdyp, sdyq, swk, swr, sws,
          BLOCK_K: tl.constexpr, INPUT_PRECISION: tl.constexpr, UNIT: tl.constexpr,
          FLAT: tl.constexpr):
    """The reduction over (tap, k block) into `acc`; UNIT: stride 1 (no division); FLAT: one
    k block per tap (kg <= BLOCK_K)."""
    nk = 1 if FLAT else tl.cdiv(kg, BLOCK_K)
    for it in range(0, R * S * nk):
        if FLAT:
            rs = it
            k0 = 0
        else:
            rs = it // nk
            k0 = (it - rs * nk) * BLOCK_K
        r = rs // S
        s = rs - r * S
        ph = ih + pad_h - r * dil_h
        pw = iw + pad_w - s * dil_w
        if UNIT:
            ok = m_mask & (ph >= 0) & (pw >= 0) & (ph < P) & (pw < Q)
            dy_base = dy_n + ph * sdyp + pw * sdyq
        else:
            ok = m_mask & (ph >= 0) & (pw >= 0)
            phc = tl.where(ok, ph, 0)
            pwc = tl.where(ok, pw, 0)
            p = phc // stride_h
            q = pwc // stride_w
            ok = ok & (p * stride_h == phc) & (q * stride_w == pwc) & (p < P) & (q < Q)
            dy_base = dy_n + p * sdyp + q * sdyq
        w_base = w_c + r * swr + s * sws
        kk = k0 + offs_k
        k_ok = kk < kg
        a = tl.load(dy_ptr + (dy_base[:, None] + kk[None, :] * sdyk),
                    mask=ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptr + (w_base[None, :] + kk[:, None] * swk),
                    mask=k_ok[:, None] & n_mask[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    return acc


@triton.jit
def hipdnn_conv_dgrad(dy_ptr, w_ptr, dx_ptr,
                      N, C, H, W, K, P, Q, R, S,
                      pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups,
                      sdyn, sdyk, sdyp, sdyq, swk, swc, swr, sws, sxn, sxc, sxh, sxw,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    g = tl.program_id(1)
    cg = C // groups
    kg = K // groups
    m_total = N * H * W
    num_pid_m = tl.cdiv(m_total, BLOCK_M)
    num_pid_n = tl.cdiv(cg, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_mask = offs_m < m_total
    n_mask = offs_n < cg
    hw = H * W
    n_idx = offs_m // hw
    rem = offs_m % hw
    ih = rem // W
    iw = rem % W
    cch = g * cg + offs_n
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    dy_n = n_idx * sdyn + (g * kg) * sdyk
    w_c = cch * swc + (g * kg) * swk
    # Four instances of one loop: unit stride (no division, no stride-grid test: the dgrad is
    # then a correlation with the flipped filter, as cheap as fprop) or not; one channel block
    # per tap (a flat loop over the taps, pipelined across them; see conv_fprop.py) or several.
    # Sibling (not nested) branches, so their pipeline buffers share one shared-memory range.
    mode = ((stride_h == 1) & (stride_w == 1)).to(tl.int32) * 2 + (kg <= BLOCK_K).to(tl.int32)
    if mode == 3:
        acc = _taps(acc, dy_ptr, w_ptr, ih, iw, m_mask, n_mask, dy_n, w_c, offs_k, kg, R, S, P,
                    Q, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, sdyk, sdyp, sdyq, swk,
                    swr, sws, BLOCK_K, INPUT_PRECISION, True, True)
    if mode == 2:
        acc = _taps(acc, dy_ptr, w_ptr, ih, iw, m_mask, n_mask, dy_n, w_c, offs_k, kg, R, S, P,
                    Q, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, sdyk, sdyp, sdyq, swk,
                    swr, sws, BLOCK_K, INPUT_PRECISION, True, False)
    if mode == 1:
        acc = _taps(acc, dy_ptr, w_ptr, ih, iw, m_mask, n_mask, dy_n, w_c, offs_k, kg, R, S, P,
                    Q, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, sdyk, sdyp, sdyq, swk,
                    swr, sws, BLOCK_K, INPUT_PRECISION, False, True)
    if mode == 0:
        acc = _taps(acc, dy_ptr, w_ptr, ih, iw, m_mask, n_mask, dy_n, w_c, offs_k, kg, R, S, P,
                    Q, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, sdyk, sdyp, sdyq, swk,
                    swr, sws, BLOCK_K, INPUT_PRECISION, False, False)
    x_rows = n_idx * sxn + ih * sxh + iw * sxw
    dx_ptrs = dx_ptr + (x_rows[:, None] + cch[None, :] * sxc)
    tl.store(dx_ptrs, acc.to(dx_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


KERNEL = hipdnn_conv_dgrad
FAMILY = "conv_dgrad"
POINTERS = ["dy_ptr", "w_ptr", "dx_ptr"]
INTS = ["N", "C", "H", "W", "K", "P", "Q", "R", "S", "pad_h", "pad_w", "stride_h", "stride_w",
        "dil_h", "dil_w", "groups", "sdyn", "sdyk", "sdyp", "sdyq", "swk", "swc", "swr", "sws",
        "sxn", "sxc", "sxh", "sxw"]
# Specialized variant ("spec", channels-last): pointers 16-byte aligned; C, K and the
# non-channel strides multiples of 16; dy's K stride, w's C stride, dx's C stride and groups
# constant 1. Everything else takes the "generic" variant.
SPEC_DIV16 = ["dy_ptr", "w_ptr", "dx_ptr", "C", "K", "sdyn", "sdyp", "sdyq", "swk", "swr",
              "sws", "sxn", "sxh", "sxw"]
SPEC_ONE = ["sdyk", "swc", "sxc", "groups"]
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) per variant."""
    if vendor == "cuda":
        if dtype == "f32":
            spec = [(128, 64, 32, 8, 4, 3), (64, 64, 32, 8, 4, 3)]
        else:
            spec = [(128, 128, 64, 8, 8, 3), (128, 64, 64, 8, 4, 3), (64, 64, 64, 8, 4, 3)]
        gen = [(64, 64, 32, 8, 4, 2)]
    else:
        spec = [(128, 64, 32, 8, 4, 2)] if dtype == "f32" else [(128, 128, 64, 8, 8, 2), (64, 64, 64, 8, 4, 2)]
        gen = [(64, 64, 32, 8, 4, 2)]
    return {"spec": spec, "generic": gen}
