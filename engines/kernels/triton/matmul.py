"""Matmul family: batched C[b] = A[b] @ B[b] (+ fused epilogue), f16/bf16 with f32
accumulation and f32 (IEEE; `tf32` entries: TF32 products, chosen only behind the engine's TF32
knob).

Launch contract: `hipkernel.matmul.dispatch.v2` (engines/src/ingestor/packs/matmul.rs).
Grid: (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), batch, 1); block: num_warps x warp size.
Layout comes from the strides (row- or column-major per operand, element units).
Epilogue (`epilogue`, a run-time argument; epilogue.py): scale, + bias[n] (a length-N vector,
unit stride), + residual[b, m, n] (its own strides), activation (ReLU, GELU, GELU-tanh,
sigmoid, tanh, SiLU), + residual after it. Pointers of absent terms are ignored (may be null).

This file is read by build.py at pack time only; nothing imports it at run time.
"""
import triton
import triton.language as tl
from epilogue import apply_epilogue


@triton.jit
def hipdnn_matmul(a_ptr, b_ptr, c_ptr, bias_ptr, res_ptr, scale_ptr, M, N, K,
                  stride_ab, stride_am, stride_ak,
                  stride_bb, stride_bk, stride_bn,
                  stride_cb, stride_cm, stride_cn,
                  stride_rb, stride_rm, stride_rn, epilogue,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr,
                  INPUT_PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    bid = tl.program_id(1).to(tl.int64)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    a_ptr += bid * stride_ab
    b_ptr += bid * stride_bb
    c_ptr += bid * stride_cb
    res_ptr += bid * stride_rb
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    if epilogue != 0:
        res = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if (epilogue & 48) != 0:
            r_ptrs = res_ptr + stride_rm * offs_cm[:, None] + stride_rn * offs_cn[None, :]
            res = tl.load(r_ptrs, mask=c_mask, other=0.0).to(tl.float32)
        acc = apply_epilogue(acc, epilogue, bias_ptr, offs_cn, offs_cn < N, scale_ptr, res)
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=c_mask)


KERNEL = hipdnn_matmul
FAMILY = "matmul"
POINTERS = ["a_ptr", "b_ptr", "c_ptr", "bias_ptr", "res_ptr", "scale_ptr"]
INTS = ["M", "N", "K", "stride_ab", "stride_am", "stride_ak", "stride_bb", "stride_bk",
        "stride_bn", "stride_cb", "stride_cm", "stride_cn", "stride_rb", "stride_rm",
        "stride_rn", "epilogue"]
# Specialized variant ("spec"): A, B, C (and the residual) 16-byte aligned, these integers
# multiples of 16, and the unit strides constant 1 (A, B, C and the residual row-major; a launch
# without a residual passes C's strides). Others take the "generic" variant. M carries no hint
# (rows are only masked, never vectorized), so decode GEMMs (M = 1, 8) take these entries too.
SPEC_DIV16 = ["a_ptr", "b_ptr", "c_ptr", "res_ptr", "N", "K", "stride_ab", "stride_am",
              "stride_bb", "stride_bk", "stride_cb", "stride_cm", "stride_rb", "stride_rm"]
SPEC_ONE = ["stride_ak", "stride_bn", "stride_cn", "stride_rn"]
# "bcol": the spec hints with B column-major (stride_bk = 1, stride_bn a multiple of 16): a
# weight stored (N, K) row-major, as PyTorch's `Linear` keeps it, used as B = Wᵀ.
BCOL_DIV16 = ["a_ptr", "b_ptr", "c_ptr", "res_ptr", "N", "K", "stride_ab", "stride_am",
              "stride_bb", "stride_bn", "stride_cb", "stride_cm", "stride_rb", "stride_rm"]
BCOL_ONE = ["stride_ak", "stride_bk", "stride_cn", "stride_rn"]
HINTS = {"spec": (SPEC_DIV16, SPEC_ONE), "bcol": (BCOL_DIV16, BCOL_ONE)}
# `tf32`: f32 tensors with TF32 tensor-core products (INPUT_PRECISION "tf32"), CUDA targets
# only; the engine chooses these entries only behind its TF32 knob.
DTYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "tf32": "fp32"}


def configs(vendor, dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) per variant.

    Every variant ends with a 16-row tile (`small`) for few rows (LLM decode, a short
    sentence): the static rule refuses a taller tile that leaves half its rows idle, and the
    16-row tile above 64 rows (engines/src/ingestor/packs/matmul.rs).
    """
    if dtype == "tf32" and vendor != "cuda":
        return {}
    if vendor == "cuda":
        if dtype == "tf32":
            tf32 = [(128, 128, 32, 8, 8, 3), (128, 64, 32, 8, 4, 3), (16, 32, 32, 1, 4, 3)]
            return {"spec": tf32, "bcol": tf32}
        if dtype == "f32":
            small = (16, 32, 64, 1, 2, 3)
            spec = [(128, 128, 32, 8, 8, 3), (64, 64, 32, 8, 4, 3), small]
        else:
            small = (16, 32, 128, 1, 4, 3)
            spec = [(128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4), (64, 128, 64, 8, 4, 4),
                    small]
        gen = [(64, 64, 32, 8, 4, 2), small]
    else:
        small = (16, 32, 64, 1, 2, 2)
        if dtype == "f32":
            spec = [(128, 128, 32, 8, 8, 2), small]
        else:
            spec = [(256, 256, 64, 8, 8, 2), (128, 128, 64, 8, 4, 2), small]
        gen = [(64, 64, 32, 8, 4, 2), small]
    # bcol: the spec tiles (same loop; only B's unit stride moves from N to K).
    return {"spec": spec, "bcol": spec, "generic": gen}
