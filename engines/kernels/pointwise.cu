// Pointwise kernels (hipdnn-rs, design D9). One thread per output element, 1-D grid:
// grid = ceil(total / block), any block size. Compute in f32; f16/bf16 are 16-bit storage
// converted with round-to-nearest-even.
//
// Broadcasting (numpy rules): the host right-aligns every tensor to 5-D (leading dims 1) and
// passes the OUTPUT dims d0..d4 plus per-input element strides s0..s4, with stride 0 on a
// broadcast dimension. The output is packed row-major over d0..d4 (d4 innermost).
//
//   unary : hipdnn_pw_<op>_<t>(const T* x, T* y, int d0..d4, int sx0..sx4)             12 args
//   binary: hipdnn_pw_<op>_<t>(const T* a, const T* b, T* y, int d0..d4,
//                              int sa0..sa4, int sb0..sb4)                                 18 args
//   <t> in f32, f16, bf16. Unary ops: identity relu_fwd sigmoid_fwd tanh_fwd gelu_fwd(tanh
//   form) exp neg abs. Binary ops: add sub mul div max min.
#include "hipdnn_device.h"

HD_INLINE float ld_f32(const float* p, hd_i64 i) { return p[i]; }
HD_INLINE void st_f32(float* p, hd_i64 i, float v) { p[i] = v; }
HD_INLINE float ld_f16(const hd_u16* p, hd_i64 i) { return hd_f16_to_f32(p[i]); }
HD_INLINE void st_f16(hd_u16* p, hd_i64 i, float v) { p[i] = hd_f32_to_f16(v); }
HD_INLINE float ld_bf16(const hd_u16* p, hd_i64 i) { return hd_bf16_to_f32(p[i]); }
HD_INLINE void st_bf16(hd_u16* p, hd_i64 i, float v) { p[i] = hd_f32_to_bf16(v); }

// Offset of output element `i` (packed over d) in a tensor with strides s.
HD_INLINE hd_i64 pw_offset(hd_i64 i, const int* d, const int* s) {
  hd_i64 off = 0;
  for (int k = 4; k >= 0; --k) {
    hd_i64 c = i % d[k];
    i /= d[k];
    off += c * (hd_i64)s[k];
  }
  return off;
}

HD_INLINE float op_identity(float x) { return x; }
HD_INLINE float op_relu_fwd(float x) { return x > 0.0f ? x : 0.0f; }
HD_INLINE float op_sigmoid_fwd(float x) { return hd_sigmoidf(x); }
HD_INLINE float op_tanh_fwd(float x) { return hd_tanhf(x); }
HD_INLINE float op_gelu_fwd(float x) { return hd_gelu_tanhf(x); }
HD_INLINE float op_exp(float x) { return hd_expf(x); }
HD_INLINE float op_neg(float x) { return -x; }
HD_INLINE float op_abs(float x) { return hd_fabsf(x); }

HD_INLINE float op_add(float a, float b) { return a + b; }
HD_INLINE float op_sub(float a, float b) { return a - b; }
HD_INLINE float op_mul(float a, float b) { return a * b; }
HD_INLINE float op_div(float a, float b) { return a / b; }
// NaN-propagating max/min (like torch.maximum/minimum).
HD_INLINE float op_max(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
HD_INLINE float op_min(float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }

#define PW_UNARY(OP, T, ST)                                                                   \
  extern "C" __global__ void hipdnn_pw_##OP##_##T(const ST* x, ST* y, int d0, int d1, int d2, \
                                                  int d3, int d4, int sx0, int sx1, int sx2,  \
                                                  int sx3, int sx4) {                         \
    const int d[5] = {d0, d1, d2, d3, d4};                                                    \
    const int sx[5] = {sx0, sx1, sx2, sx3, sx4};                                              \
    hd_i64 total = (hd_i64)d0 * d1 * d2 * d3 * d4;                                            \
    hd_i64 i = hd_global_id();                                                                \
    if (i >= total) return;                                                                   \
    st_##T(y, i, op_##OP(ld_##T(x, pw_offset(i, d, sx))));                                    \
  }

#define PW_BINARY(OP, T, ST)                                                                  \
  extern "C" __global__ void hipdnn_pw_##OP##_##T(                                            \
      const ST* a, const ST* b, ST* y, int d0, int d1, int d2, int d3, int d4, int sa0,       \
      int sa1, int sa2, int sa3, int sa4, int sb0, int sb1, int sb2, int sb3, int sb4) {      \
    const int d[5] = {d0, d1, d2, d3, d4};                                                    \
    const int sa[5] = {sa0, sa1, sa2, sa3, sa4};                                              \
    const int sb[5] = {sb0, sb1, sb2, sb3, sb4};                                              \
    hd_i64 total = (hd_i64)d0 * d1 * d2 * d3 * d4;                                            \
    hd_i64 i = hd_global_id();                                                                \
    if (i >= total) return;                                                                   \
    st_##T(y, i, op_##OP(ld_##T(a, pw_offset(i, d, sa)), ld_##T(b, pw_offset(i, d, sb))));    \
  }

#define PW_ALL_TYPES(M, OP) M(OP, f32, float) M(OP, f16, hd_u16) M(OP, bf16, hd_u16)

PW_ALL_TYPES(PW_UNARY, identity)
PW_ALL_TYPES(PW_UNARY, relu_fwd)
PW_ALL_TYPES(PW_UNARY, sigmoid_fwd)
PW_ALL_TYPES(PW_UNARY, tanh_fwd)
PW_ALL_TYPES(PW_UNARY, gelu_fwd)
PW_ALL_TYPES(PW_UNARY, exp)
PW_ALL_TYPES(PW_UNARY, neg)
PW_ALL_TYPES(PW_UNARY, abs)
PW_ALL_TYPES(PW_BINARY, add)
PW_ALL_TYPES(PW_BINARY, sub)
PW_ALL_TYPES(PW_BINARY, mul)
PW_ALL_TYPES(PW_BINARY, div)
PW_ALL_TYPES(PW_BINARY, max)
PW_ALL_TYPES(PW_BINARY, min)
