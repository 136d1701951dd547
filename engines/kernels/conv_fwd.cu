// Convolution forward (cross-correlation), hipdnn-rs (design D9). NCHW input x[n][c][h][w],
// KCRS weights w[k][c][r][s], NKPQ output y[n][k][p][q], all packed; groups = 1.
// One thread per output element, 1-D grid: grid = ceil(n*k*p*q / block). Accumulates in f32.
//
//   hipdnn_conv_fwd_<t>(const T* x, const T* w, const T* bias, T* y,
//       int n, int c, int h, int wd, int k, int r, int s, int p, int q,
//       int pad_h, int pad_w, int stride_h, int stride_w, int dil_h, int dil_w, int epilogue)
//   20 args; <t> in f32, f16. epilogue bits: 1 = add bias[k] (bias may be null otherwise),
//   2 = relu after the bias. p and q are given by the host:
//   p = (h + 2 pad_h - dil_h (r-1) - 1) / stride_h + 1, q likewise.
//
//   hipdnn_conv_fwd_v1_<t>(const T* x, const T* w, T* y, int n, int c, int h, int width,
//       int k, int r, int s)
//   10 args: the launch-value contract hipkernel.conv_fwd.dispatch.v1 (ingestor-payload.md
//   §11): stride 1, dilation 1, padding 0, p = h - r + 1, q = width - s + 1.
#include "hipdnn_device.h"

HD_INLINE float cv_ld_f32(const float* p, hd_i64 i) { return p[i]; }
HD_INLINE void cv_st_f32(float* p, hd_i64 i, float v) { p[i] = v; }
HD_INLINE float cv_ld_f16(const hd_u16* p, hd_i64 i) { return hd_f16_to_f32(p[i]); }
HD_INLINE void cv_st_f16(hd_u16* p, hd_i64 i, float v) { p[i] = hd_f32_to_f16(v); }

#define CONV_FWD(T, ST)                                                                        \
  HD_INLINE void conv_fwd_body_##T(const ST* x, const ST* w, const ST* bias, ST* y, int n,     \
                                   int c, int h, int wd, int k, int r, int s, int p, int q,    \
                                   int pad_h, int pad_w, int stride_h, int stride_w,           \
                                   int dil_h, int dil_w, int epilogue) {                       \
    hd_i64 total = (hd_i64)n * k * p * q;                                                      \
    hd_i64 i = hd_global_id();                                                                 \
    if (i >= total) return;                                                                    \
    int oq = (int)(i % q);                                                                     \
    int op = (int)((i / q) % p);                                                               \
    int ok = (int)((i / ((hd_i64)q * p)) % k);                                                 \
    hd_i64 on = i / ((hd_i64)q * p * k);                                                       \
    float acc = 0.0f;                                                                          \
    for (int ic = 0; ic < c; ++ic) {                                                           \
      for (int fr = 0; fr < r; ++fr) {                                                         \
        int ih = op * stride_h - pad_h + fr * dil_h;                                           \
        if (ih < 0 || ih >= h) continue;                                                       \
        for (int fs = 0; fs < s; ++fs) {                                                       \
          int iw = oq * stride_w - pad_w + fs * dil_w;                                         \
          if (iw < 0 || iw >= wd) continue;                                                    \
          float xv = cv_ld_##T(x, ((on * c + ic) * h + ih) * (hd_i64)wd + iw);                 \
          float wv = cv_ld_##T(w, (((hd_i64)ok * c + ic) * r + fr) * (hd_i64)s + fs);          \
          acc = __builtin_fmaf(xv, wv, acc);                                                   \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    if (epilogue & 1) acc += cv_ld_##T(bias, ok);                                              \
    if ((epilogue & 2) && !(acc > 0.0f)) acc = acc != acc ? acc : 0.0f;                        \
    cv_st_##T(y, i, acc);                                                                      \
  }                                                                                            \
  extern "C" __global__ void hipdnn_conv_fwd_##T(                                              \
      const ST* x, const ST* w, const ST* bias, ST* y, int n, int c, int h, int wd, int k,     \
      int r, int s, int p, int q, int pad_h, int pad_w, int stride_h, int stride_w, int dil_h, \
      int dil_w, int epilogue) {                                                               \
    conv_fwd_body_##T(x, w, bias, y, n, c, h, wd, k, r, s, p, q, pad_h, pad_w, stride_h,       \
                      stride_w, dil_h, dil_w, epilogue);                                       \
  }                                                                                            \
  extern "C" __global__ void hipdnn_conv_fwd_v1_##T(const ST* x, const ST* w, ST* y, int n,    \
                                                    int c, int h, int width, int k, int r,     \
                                                    int s) {                                   \
    conv_fwd_body_##T(x, w, (const ST*)0, y, n, c, h, width, k, r, s, h - r + 1,               \
                      width - s + 1, 0, 0, 1, 1, 1, 1, 0);                                     \
  }

CONV_FWD(f32, float)
CONV_FWD(f16, hd_u16)
