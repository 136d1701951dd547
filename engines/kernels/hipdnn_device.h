// hipdnn_device.h — the one device header of hipdnn-rs kernels (design D9,
// gpu-toolchain.md §4-§6). Lets one .cu source compile with Debian clang for AMDGPU
// (-x hip --offload-arch=gfx9xx -nogpulib -nogpuinc) and NVPTX (-x cuda -nocudainc
// -nocudalib) without vendor headers or device libraries.
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __host__ __attribute__((host))
#define HD_INLINE __device__ static inline __attribute__((always_inline))

typedef unsigned short hd_u16;
typedef unsigned int hd_u32;
typedef long long hd_i64;

#if defined(__AMDGCN__)
HD_INLINE hd_u32 hd_thread_x(void) { return __builtin_amdgcn_workitem_id_x(); }
HD_INLINE hd_u32 hd_block_x(void) { return __builtin_amdgcn_workgroup_id_x(); }
HD_INLINE hd_u32 hd_block_dim_x(void) { return __builtin_amdgcn_workgroup_size_x(); }
HD_INLINE void hd_barrier(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// v_exp_f32 (LLVM adds range scaling for denormal results).
HD_INLINE float hd_exp2f(float x) { return __builtin_exp2f(x); }
#elif defined(__NVPTX__)
HD_INLINE hd_u32 hd_thread_x(void) { return __nvvm_read_ptx_sreg_tid_x(); }
HD_INLINE hd_u32 hd_block_x(void) { return __nvvm_read_ptx_sreg_ctaid_x(); }
HD_INLINE hd_u32 hd_block_dim_x(void) { return __nvvm_read_ptx_sreg_ntid_x(); }
HD_INLINE void hd_barrier(void) { __syncthreads(); }
// ex2.approx.f32: no libdevice needed (gpu-toolchain.md §6).
HD_INLINE float hd_exp2f(float x) { return __nvvm_ex2_approx_f(x); }
#else
// Host pass (only reached without --cuda-device-only): stubs so the source still parses.
HD_INLINE hd_u32 hd_thread_x(void) { return 0; }
HD_INLINE hd_u32 hd_block_x(void) { return 0; }
HD_INLINE hd_u32 hd_block_dim_x(void) { return 1; }
HD_INLINE void hd_barrier(void) {}
HD_INLINE float hd_exp2f(float x) { return x; }
#endif

// Global linear thread index.
HD_INLINE hd_i64 hd_global_id(void) {
  return (hd_i64)hd_block_x() * (hd_i64)hd_block_dim_x() + (hd_i64)hd_thread_x();
}

// ---- math from exp2 (portable; no device libraries) ----
#define HD_LOG2E 1.4426950408889634f
HD_INLINE float hd_fabsf(float x) { return __builtin_fabsf(x); }
HD_INLINE float hd_expf(float x) { return hd_exp2f(x * HD_LOG2E); }
// tanh: odd polynomial near 0 (no cancellation), (1-e)/(1+e) with e = exp(-2|x|) elsewhere.
HD_INLINE float hd_tanhf(float x) {
  float a = hd_fabsf(x);
  float r;
  if (a < 0.0625f) {
    float x2 = x * x;
    return x * (1.0f + x2 * (-0.33333333f + x2 * (0.13333333f + x2 * -0.05396825f)));
  }
  float e = hd_expf(-2.0f * a);
  r = (1.0f - e) / (1.0f + e);
  return x < 0.0f ? -r : r;
}
HD_INLINE float hd_sigmoidf(float x) { return 1.0f / (1.0f + hd_expf(-x)); }
// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
HD_INLINE float hd_gelu_tanhf(float x) {
  return 0.5f * x * (1.0f + hd_tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

// ---- 16-bit float storage (bit-exact software conversions, identical on both targets) ----
HD_INLINE float hd_bits_to_f32(hd_u32 u) { return __builtin_bit_cast(float, u); }
HD_INLINE hd_u32 hd_f32_to_bits(float f) { return __builtin_bit_cast(hd_u32, f); }

HD_INLINE float hd_bf16_to_f32(hd_u16 h) { return hd_bits_to_f32(((hd_u32)h) << 16); }
// Round to nearest even; NaN stays a quiet NaN.
HD_INLINE hd_u16 hd_f32_to_bf16(float f) {
  hd_u32 u = hd_f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (hd_u16)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (hd_u16)(u >> 16);
}

HD_INLINE float hd_f16_to_f32(hd_u16 h) {
  hd_u32 sign = ((hd_u32)h & 0x8000u) << 16;
  hd_u32 exp = ((hd_u32)h >> 10) & 0x1fu;
  hd_u32 man = (hd_u32)h & 0x3ffu;
  if (exp == 0x1fu) return hd_bits_to_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    // zero or subnormal: man * 2^-24
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return hd_bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}
// Round to nearest even, overflow to infinity, NaN stays a quiet NaN.
HD_INLINE hd_u16 hd_f32_to_f16(float f) {
  hd_u32 u = hd_f32_to_bits(f);
  hd_u32 sign = (u >> 16) & 0x8000u;
  hd_u32 a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (hd_u16)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (hd_u16)(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (a < 0x38800000u) {
    // result is subnormal or zero: value / 2^-24, rounded to nearest even
    if (a < 0x33000000u) return (hd_u16)sign;  // < 2^-25: rounds to 0
    hd_u32 e = a >> 23;
    hd_u32 m = (a & 0x7fffffu) | 0x800000u;
    hd_u32 shift = 126u - e;  // 14..24
    hd_u32 r = m >> shift;
    hd_u32 rem = m & ((1u << shift) - 1u);
    hd_u32 half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) r += 1u;
    return (hd_u16)(sign | r);
  }
  hd_u32 r = a - 0x38000000u;  // rebias exponent 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);
  return (hd_u16)(sign | (r >> 13));
}
