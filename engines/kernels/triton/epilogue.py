"""Fused epilogue shared by the matmul and conv fprop families (contracts v2).

`epilogue` is a run-time int (uniform per launch, so its branches cost no divergence):
  bit 0 (1)      + bias[col] (a vector over the output columns / channels)
  bits 1-3 (>>1) activation: 0 none, 1 ReLU, 2 GELU (erf), 3 GELU (tanh approximation),
                 4 sigmoid, 5 tanh, 6 SiLU (swish, beta 1)
  bit 4 (16)     + residual[row, col] before the activation
  bit 5 (32)     + residual[row, col] after the activation
  bit 6 (64)     * scale[0] first (a one-element tensor)
Order: scale, bias, residual (bit 4), activation, residual (bit 5). `res` is the residual tile
(f32, the accumulator's shape), loaded by the caller in the layout that coalesces for it (zeros
without bits 4/5). All math in f32 on the
f32 accumulator; the caller casts once at the store. Transcendentals are built on exp only
(sigmoid; tanh(x) = 2 sigmoid(2x) - 1; erf by Abramowitz & Stegun 7.1.26), so the code stays
small: absolute error of the activation <= 3e-7 (erf) / about 1e-7 (others) before rounding. Values 0-3 mean what contract v1's
epilogue meant (bias, ReLU).

Read by build.py at pack time only.
"""
import triton
import triton.language as tl


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): small code where libdevice's erf and
    # tanh, unrolled over a tile's per-thread elements, grew a code object tenfold.
    a = tl.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                     + t * 1.061405429))))
    r = 1.0 - y * tl.exp(-a * a)
    return tl.where(x < 0.0, -r, r)


@triton.jit
def apply_epilogue(acc, epilogue, bias_ptr, bias_offs, col_mask, scale_ptr, res):
    if (epilogue & 64) != 0:
        acc = acc * tl.load(scale_ptr).to(tl.float32)
    if (epilogue & 1) != 0:
        bias = tl.load(bias_ptr + bias_offs, mask=col_mask, other=0.0)
        acc = acc + bias.to(tl.float32)[None, :]
    if (epilogue & 16) != 0:
        acc = acc + res
    act = (epilogue >> 1) & 7
    if act == 1:
        acc = tl.maximum(acc, 0.0)
    elif act == 2:
        acc = 0.5 * acc * (1.0 + _erf(acc * 0.7071067811865476))
    elif act != 0:
        # One sigmoid path for the rest (scalar coefficients, so one unrolled copy):
        # out = base * q * sigmoid(b * (x + c3 * x^3)) + c, base = x or 1.
        # sigmoid: 1 * sigmoid(x); tanh: 2 * sigmoid(2x) - 1; SiLU: x * sigmoid(x);
        # GELU-tanh: x * sigmoid(2 * 0.79788456 * (x + 0.044715 x^3)) = 0.5 x (1 + tanh(..)).
        b = tl.where(act == 5, 2.0, tl.where(act == 3, 1.5957691216057308, 1.0))
        q = tl.where(act == 5, 2.0, 1.0)
        c = tl.where(act == 5, -1.0, 0.0)
        u = acc
        if act == 3:
            u = acc + 0.044715 * acc * acc * acc
        base = tl.where((act == 3) | (act == 6), acc, 1.0)
        acc = base * (q * _sigmoid(b * u)) + c
    if (epilogue & 32) != 0:
        acc = acc + res
    return acc
