//! The f32 exponential of the CPU reference engine: [`exp`], written so a loop over a slice
//! vectorizes (no branch, no table, no call), used by the pointwise EXP op, the fused softmax
//! ([`super::softmax`]) and SDPA's softmax, so every path that exponentiates gives the same
//! bits.
//!
//! Owns only element math.

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split for Cody–Waite reduction: `LN2_HI` has 9 significant bits (355 / 512), so
/// `n · LN2_HI` is exact for every `|n| < 2^15`.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// 1.5 · 2^23: adding it rounds an f32 of magnitude below 2^22 to an integer (round to
/// nearest even), which then sits in the low mantissa bits.
const SHIFTER: f32 = 12_582_912.0;
/// Inputs are clamped to [`LO`, `HI`] before reduction: `exp(LO)` rounds to +0 and `exp(HI)`
/// overflows to +inf, so the clamp changes no result and keeps the exponent arithmetic in range.
const LO: f32 = -110.0;
const HI: f32 = 90.0;

/// `e^x` in f32, branch-free so that a loop over a slice vectorizes.
///
/// Method: `n = round(x · log2 e)`, `r = x − n·ln2` (Cody–Waite, two constants, the first
/// product exact), `e^r ≈ 1 + r + r²·P(r)` with Cephes' degree-5 minimax `P` on
/// `|r| ≤ ln2/2`, then `· 2^⌊n/2⌋ · 2^(n−⌊n/2⌋)` (two exact power-of-two scalings, so results
/// down in the subnormal range are rounded once). Only `+ − ×` and bit operations, no fused
/// multiply-add: the bits are the same on every x86-64 / AArch64 build, scalar or vector.
///
/// Accuracy, measured against f64 `exp` (not rounded to f32) over all 2³² f32 inputs (the
/// `--ignored` test `exp_is_within_two_ulp_everywhere_exhaustive`, 527 s in release): worst error 0.990 ulp (at x = 70.4031), the ulp being the f32 spacing at the exact
/// value and 2⁻¹⁴⁹ for subnormal results; so within 1 ulp everywhere, not correctly rounded
/// (libm's `expf` is, to 0.5 ulp). The default test checks ≤ 2 ulp on a sweep of every 997th
/// input and around 0, the subnormal edge and overflow. Special values: `exp(±0) = 1` exactly, `exp(+inf) = +inf`,
/// `exp(−inf) = +0`, `exp(NaN)` is NaN, `x > 88.72284` gives +inf (overflow) and
/// `x < −103.97208` gives +0 (underflow), as correctly rounded `expf` does.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // Comparisons, not `max`/`min`: a NaN fails both and flows through to the result.
    let x = if x < LO { LO } else { x };
    let x = if x > HI { HI } else { x };
    let t = x * LOG2E + SHIFTER;
    let n = t - SHIFTER;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let z = r * r;
    let p = 1.987_569_2e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5; // Cephes: 5.0000001201e-1, which rounds to 0.5 in f32
    let er = (p * z + r) + 1.0;
    // n as an integer, from the low mantissa bits of t (any bits for a NaN input: the NaN
    // wins the products below).
    let ni = (t.to_bits() as i32).wrapping_sub(SHIFTER.to_bits() as i32);
    let n1 = ni >> 1;
    let n2 = ni.wrapping_sub(n1);
    let pow2 = |k: i32| f32::from_bits((k.wrapping_add(127) as u32) << 23);
    er * pow2(n1) * pow2(n2)
}

/// `out[i] = exp(x[i] − shift)` over two slices of one length (the loop the pointwise EXP op
/// and the softmax run; it vectorizes).
#[inline(always)]
pub fn exp_shifted(out: &mut [f32], x: &[f32], shift: f32) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = exp(v - shift);
    }
}

#[cfg(test)]
mod tests {
    use super::exp;

    /// The error of `exp(x)` in units in the last place of the exact result (f64 `exp`), the
    /// ulp being the f32 spacing at the exact value (2⁻¹⁴⁹ below the normal range); overflow
    /// is an error of 0 when the exact value rounds to +inf.
    fn ulp_err(x: f32) -> f64 {
        let exact = f64::from(x).exp();
        let got = f64::from(exp(x));
        if exact >= f64::from(f32::MAX) + f64::from(f32::MAX) * 2f64.powi(-25) {
            return if got.is_infinite() {
                0.0
            } else {
                f64::INFINITY
            };
        }
        let e = ((exact.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let ulp = 2f64.powi(e.max(-126) - 23);
        (got - exact).abs() / ulp
    }

    /// Every `step`-th f32 bit pattern of both signs over the whole range (±0 … ±inf).
    fn worst(step: usize) -> (f64, f32) {
        let mut w = (0.0, 0.0);
        for bits in (0..0x7f80_0000u32).step_by(step).chain([0x7f80_0000]) {
            for x in [f32::from_bits(bits), -f32::from_bits(bits)] {
                let e = ulp_err(x);
                if e > w.0 {
                    w = (e, x);
                }
            }
        }
        w
    }

    #[test]
    fn exp_is_within_two_ulp_everywhere() {
        let (e, x) = worst(997);
        assert!(e <= 2.0, "exp({x:e}) is {e} ulp off f64 exp");
        // Every input around the interesting points: 0, the subnormal edge, overflow.
        for c in [
            0.0f32, 1.0, -87.33655, -103.972, 88.72284, 0.34657, -0.34657,
        ] {
            let b = c.to_bits();
            for bits in b.saturating_sub(2000)..b + 2000 {
                let x = f32::from_bits(bits);
                assert!(ulp_err(x) <= 2.0, "exp({x:e}) is {} ulp off", ulp_err(x));
            }
        }
    }

    #[test]
    #[ignore = "exhaustive (2^32 inputs): run with --release -- --ignored"]
    fn exp_is_within_two_ulp_everywhere_exhaustive() {
        let (e, x) = worst(1);
        println!("worst: {e} ulp at exp({x:e})");
        assert!(e <= 2.0, "exp({x:e}) is {e} ulp off f64 exp");
    }

    #[test]
    fn exp_special_values() {
        assert_eq!(exp(0.0).to_bits(), 1f32.to_bits());
        assert_eq!(exp(-0.0).to_bits(), 1f32.to_bits());
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY).to_bits(), 0f32.to_bits());
        assert!(exp(f32::NAN).is_nan());
        assert!(exp(-f32::NAN).is_nan());
        assert_eq!(exp(88.8), f32::INFINITY);
        assert_eq!(exp(f32::MAX), f32::INFINITY);
        assert_eq!(exp(-104.0).to_bits(), 0f32.to_bits());
        assert_eq!(exp(f32::MIN).to_bits(), 0f32.to_bits());
        // The largest finite and the smallest subnormal results.
        assert!(exp(88.72283).is_finite() && exp(88.72283) > 3.4e38);
        assert_eq!(
            exp(-103.9).to_bits(),
            1,
            "exp(-103.9) = 1.1e-45 is the least subnormal"
        );
    }
}
