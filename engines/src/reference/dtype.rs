//! Element codecs: how the CPU reference engine reads and writes one element of each data type
//! it supports, as little-endian bytes, widened to / narrowed from `f32`.
//!
//! This module owns only the element encoding; it never looks at shapes or strides.

use hipdnn_schema::graph::DataType;

/// A data type the CPU reference engine can read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    /// `FLOAT` (IEEE binary32).
    F32,
    /// `HALF` (IEEE binary16).
    F16,
    /// `BFLOAT16`.
    Bf16,
    /// `DOUBLE` (IEEE binary64; computed in f32).
    F64,
    /// `INT32`.
    I32,
    /// `INT8`.
    I8,
    /// `UINT8`.
    U8,
    /// `INT64` (values beyond 2^24 lose precision through f32).
    I64,
    /// `BOOLEAN` (one byte, 0 or 1).
    Bool,
    /// An 8-bit float ([`Fp8`]): `FP8_E4M3`, `FP8_E5M2`, `FP8_E4M3_FNUZ`, `FP8_E5M2_FNUZ` or
    /// the exponent-only scale type `FP8_E8M0`.
    Fp8(Fp8),
}

/// The 8-bit float formats, decoded exactly and encoded round-to-nearest-even with saturation
/// to the largest finite value (NVIDIA's `satfinite`: an overflow or an infinity becomes ±max,
/// NaN stays NaN).
///
/// | format | exponent bias | largest finite | smallest subnormal | infinity | NaN |
/// |---|---|---|---|---|---|
/// | `E4M3` (OCP E4M3FN) | 7 | 448 | 2⁻⁹ | none | `S.1111.111` |
/// | `E5M2` (OCP) | 15 | 57 344 | 2⁻¹⁶ | `S.11111.00` | `S.11111.{01,10,11}` |
/// | `E4M3Fnuz` (AMD gfx942) | 8 | 240 | 2⁻¹⁰ | none | `0x80` (no −0) |
/// | `E5M2Fnuz` (AMD gfx942) | 16 | 57 344 | 2⁻¹⁷ | none | `0x80` (no −0) |
/// | `E8M0` (MX block scale) | 127 | 2¹²⁷ | 2⁻¹²⁷ (no zero, no sign) | none | `0xFF` |
///
/// `E8M0` stores powers of two only: a write rounds a positive value *up* to the next power of
/// two (the MX scale rule, `quantize_round_up`), clamped to [2⁻¹²⁷, 2¹²⁷]; zero, negative
/// values and NaN are written as NaN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fp8 {
    /// `FP8_E4M3`: OCP E4M3FN.
    E4M3,
    /// `FP8_E5M2`: OCP E5M2.
    E5M2,
    /// `FP8_E4M3_FNUZ`.
    E4M3Fnuz,
    /// `FP8_E5M2_FNUZ`.
    E5M2Fnuz,
    /// `FP8_E8M0`.
    E8M0,
}

impl Fp8 {
    /// (exponent bits, mantissa bits, bias) of the sign-exponent-mantissa formats.
    fn layout(self) -> (u32, u32, i32) {
        match self {
            Fp8::E4M3 => (4, 3, 7),
            Fp8::E5M2 => (5, 2, 15),
            Fp8::E4M3Fnuz => (4, 3, 8),
            Fp8::E5M2Fnuz => (5, 2, 16),
            Fp8::E8M0 => (8, 0, 127),
        }
    }

    /// The largest finite value.
    pub fn max(self) -> f64 {
        match self {
            Fp8::E4M3 => 448.0,
            Fp8::E5M2 | Fp8::E5M2Fnuz => 57344.0,
            Fp8::E4M3Fnuz => 240.0,
            Fp8::E8M0 => 2f64.powi(127),
        }
    }

    /// The value of one byte (exact in f32 for every format).
    pub fn decode(self, b: u8) -> f32 {
        if self == Fp8::E8M0 {
            return if b == 0xFF {
                f32::NAN
            } else {
                2f32.powi(i32::from(b) - 127)
            };
        }
        let (eb, mb, bias) = self.layout();
        let fnuz = matches!(self, Fp8::E4M3Fnuz | Fp8::E5M2Fnuz);
        if fnuz && b == 0x80 {
            return f32::NAN;
        }
        let sign: f64 = if b & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = i32::from((b >> mb) & ((1 << eb) - 1) as u8);
        let f = i32::from(b & ((1 << mb) - 1) as u8);
        let emax = (1 << eb) - 1;
        match self {
            Fp8::E4M3 if e == emax && f == (1 << mb) - 1 => return f32::NAN,
            Fp8::E5M2 if e == emax => {
                return if f == 0 {
                    (sign * f64::INFINITY) as f32
                } else {
                    f32::NAN
                };
            }
            _ => {}
        }
        let v = if e == 0 {
            f64::from(f) * 2f64.powi(1 - bias - mb as i32)
        } else {
            (1.0 + f64::from(f) / f64::from(1 << mb)) * 2f64.powi(e - bias)
        };
        (sign * v) as f32
    }

    /// The byte nearest `v` (ties to even), saturated to ±[`Fp8::max`]; NaN → the NaN code.
    /// `E8M0`: the next power of two at or above `v` (see the type's docs).
    pub fn encode(self, v: f32) -> u8 {
        let nan = match self {
            Fp8::E4M3 | Fp8::E5M2 => 0x7F,
            Fp8::E4M3Fnuz | Fp8::E5M2Fnuz => 0x80,
            Fp8::E8M0 => 0xFF,
        };
        if v.is_nan() {
            return nan;
        }
        if self == Fp8::E8M0 {
            if v <= 0.0 {
                return nan;
            }
            // The exponent of the smallest power of two ≥ v (v is an f32, so its own exponent
            // and mantissa say it exactly).
            let bits = f64::from(v).to_bits();
            let exp = ((bits >> 52) & 0x7ff) as i32 - 1023;
            let up = exp + i32::from(bits & ((1u64 << 52) - 1) != 0);
            return (up.clamp(-127, 127) + 127) as u8;
        }
        let (_, mb, bias) = self.layout();
        let neg = v.is_sign_negative();
        let a = f64::from(v).abs().min(self.max());
        // Quantum at a's binade (subnormal binade below the smallest normal exponent).
        let r = if a == 0.0 {
            0.0
        } else {
            let exp = (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(1 - bias);
            let q = 2f64.powi(exp - mb as i32);
            ((a / q).round_ties_even() * q).min(self.max())
        };
        let mag = if r == 0.0 {
            0u8
        } else {
            let exp = ((r.to_bits() >> 52) & 0x7ff) as i32 - 1023;
            if exp < 1 - bias {
                (r / 2f64.powi(1 - bias - mb as i32)) as u8
            } else {
                let f = ((r / 2f64.powi(exp) - 1.0) * f64::from(1 << mb)) as u8;
                (((exp + bias) as u8) << mb) | f
            }
        };
        let fnuz = matches!(self, Fp8::E4M3Fnuz | Fp8::E5M2Fnuz);
        if neg && !(fnuz && mag == 0) {
            mag | 0x80
        } else {
            mag
        }
    }
}

impl Elem {
    /// The codec for a schema data type, `None` for types the engine does not support
    /// (UNSET, FP6, FP4, INT4).
    pub fn from_data_type(dt: DataType) -> Option<Elem> {
        Some(match dt {
            DataType::FLOAT => Elem::F32,
            DataType::HALF => Elem::F16,
            DataType::BFLOAT16 => Elem::Bf16,
            DataType::DOUBLE => Elem::F64,
            DataType::INT32 => Elem::I32,
            DataType::INT8 => Elem::I8,
            DataType::UINT8 => Elem::U8,
            DataType::INT64 => Elem::I64,
            DataType::BOOLEAN => Elem::Bool,
            DataType::FP8_E4M3 => Elem::Fp8(Fp8::E4M3),
            DataType::FP8_E5M2 => Elem::Fp8(Fp8::E5M2),
            DataType::FP8_E4M3_FNUZ => Elem::Fp8(Fp8::E4M3Fnuz),
            DataType::FP8_E5M2_FNUZ => Elem::Fp8(Fp8::E5M2Fnuz),
            DataType::FP8_E8M0 => Elem::Fp8(Fp8::E8M0),
            _ => return None,
        })
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Elem::F32 | Elem::I32 => 4,
            Elem::F16 | Elem::Bf16 => 2,
            Elem::F64 | Elem::I64 => 8,
            Elem::I8 | Elem::U8 | Elem::Bool | Elem::Fp8(_) => 1,
        }
    }

    /// True for the floating-point types (F32, F16, BF16, F64 and the FP8 formats with a
    /// mantissa; not the exponent-only scale type `E8M0`).
    pub fn is_float(self) -> bool {
        match self {
            Elem::F32 | Elem::F16 | Elem::Bf16 | Elem::F64 => true,
            Elem::Fp8(f) => f != Fp8::E8M0,
            _ => false,
        }
    }

    /// Reads one element from `b` (exactly [`Elem::size`] bytes, little-endian) as f32.
    pub fn read(self, b: &[u8]) -> f32 {
        match self {
            Elem::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            Elem::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
            Elem::Bf16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
            Elem::F64 => {
                f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32
            }
            Elem::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32,
            Elem::I8 => i8::from_le_bytes([b[0]]) as f32,
            Elem::U8 => f32::from(b[0]),
            Elem::I64 => {
                i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32
            }
            Elem::Bool => {
                if b[0] != 0 {
                    1.0
                } else {
                    0.0
                }
            }
            Elem::Fp8(f) => f.decode(b[0]),
        }
    }

    /// Writes `v` into `b` (exactly [`Elem::size`] bytes, little-endian).
    ///
    /// Floats round to nearest even (FP8: saturated to the largest finite value, [`Fp8`]);
    /// integers truncate toward zero and saturate (NaN → 0); booleans store 1 for any non-zero
    /// value (NaN included), else 0.
    pub fn write(self, v: f32, b: &mut [u8]) {
        match self {
            Elem::F32 => b.copy_from_slice(&v.to_le_bytes()),
            Elem::F16 => b.copy_from_slice(&half::f16::from_f32(v).to_le_bytes()),
            Elem::Bf16 => b.copy_from_slice(&half::bf16::from_f32(v).to_le_bytes()),
            Elem::F64 => b.copy_from_slice(&f64::from(v).to_le_bytes()),
            Elem::I32 => b.copy_from_slice(&(v as i32).to_le_bytes()),
            Elem::I8 => b.copy_from_slice(&(v as i8).to_le_bytes()),
            Elem::U8 => b[0] = v as u8,
            Elem::I64 => b.copy_from_slice(&(v as i64).to_le_bytes()),
            Elem::Bool => b[0] = u8::from(v != 0.0),
            Elem::Fp8(f) => b[0] = f.encode(v),
        }
    }

    /// `v` rounded to this type and widened back to f32 (what storing then loading gives).
    pub fn quantize(self, v: f32) -> f32 {
        let mut b = [0u8; 8];
        let n = self.size();
        self.write(v, &mut b[..n]);
        self.read(&b[..n])
    }
}

#[cfg(test)]
mod fp8_tests {
    use super::Fp8;

    const ALL: [Fp8; 5] = [
        Fp8::E4M3,
        Fp8::E5M2,
        Fp8::E4M3Fnuz,
        Fp8::E5M2Fnuz,
        Fp8::E8M0,
    ];
    const SIGNED: [Fp8; 4] = [Fp8::E4M3, Fp8::E5M2, Fp8::E4M3Fnuz, Fp8::E5M2Fnuz];

    /// Codes of the formats' specifications: smallest subnormal, smallest normal, largest
    /// finite, one, and the special codes.
    #[test]
    fn decode_gives_the_specified_values() {
        let p = |e: i32| 2f32.powi(e);
        let cases: [(Fp8, u8, f32); 23] = [
            (Fp8::E4M3, 0x01, p(-9)),
            (Fp8::E4M3, 0x08, p(-6)),
            (Fp8::E4M3, 0x38, 1.0),
            (Fp8::E4M3, 0x7E, 448.0),
            (Fp8::E4M3, 0xFE, -448.0),
            (Fp8::E4M3, 0x3C, 1.5),
            (Fp8::E5M2, 0x01, p(-16)),
            (Fp8::E5M2, 0x04, p(-14)),
            (Fp8::E5M2, 0x3C, 1.0),
            (Fp8::E5M2, 0x7B, 57344.0),
            (Fp8::E5M2, 0x7C, f32::INFINITY),
            (Fp8::E5M2, 0xFC, f32::NEG_INFINITY),
            (Fp8::E4M3Fnuz, 0x01, p(-10)),
            (Fp8::E4M3Fnuz, 0x08, p(-7)),
            (Fp8::E4M3Fnuz, 0x40, 1.0),
            (Fp8::E4M3Fnuz, 0x7F, 240.0),
            (Fp8::E5M2Fnuz, 0x01, p(-17)),
            (Fp8::E5M2Fnuz, 0x40, 1.0),
            (Fp8::E5M2Fnuz, 0x7F, 57344.0),
            (Fp8::E8M0, 0x00, p(-127)),
            (Fp8::E8M0, 0x7F, 1.0),
            (Fp8::E8M0, 0x80, 2.0),
            (Fp8::E8M0, 0xFE, p(127)),
        ];
        for (f, b, v) in cases {
            assert_eq!(f.decode(b), v, "{f:?} {b:#04x}");
        }
        for (f, b) in [
            (Fp8::E4M3, 0x7F),
            (Fp8::E4M3, 0xFF),
            (Fp8::E5M2, 0x7D),
            (Fp8::E5M2, 0xFF),
            (Fp8::E4M3Fnuz, 0x80),
            (Fp8::E5M2Fnuz, 0x80),
            (Fp8::E8M0, 0xFF),
        ] {
            assert!(f.decode(b).is_nan(), "{f:?} {b:#04x}");
        }
        assert!(Fp8::E4M3.decode(0x80).is_sign_negative() && Fp8::E4M3.decode(0x80) == 0.0);
        // Positive codes increase strictly up to the largest finite value.
        for f in ALL {
            let top = (0..=0xFFu8)
                .filter(|&b| f.decode(b) == f.max() as f32)
                .max()
                .unwrap();
            for b in 1..=top {
                assert!(f.decode(b) > f.decode(b - 1), "{f:?} {b:#04x}");
            }
        }
    }

    /// The nearest finite code by search over all 256 (ties to the even code), saturating
    /// beyond the largest finite value: an oracle independent of `encode`'s arithmetic.
    fn nearest(f: Fp8, v: f32) -> u8 {
        let fnuz = matches!(f, Fp8::E4M3Fnuz | Fp8::E5M2Fnuz);
        let mut best: Option<(f64, u8)> = None;
        for b in 0..=0xFFu8 {
            let d = f.decode(b);
            if !d.is_finite() || (d.is_sign_negative() != v.is_sign_negative() && d != 0.0) {
                continue;
            }
            if d == 0.0 && d.is_sign_negative() != v.is_sign_negative() && !fnuz {
                continue;
            }
            let err = (f64::from(d) - f64::from(v).clamp(-f.max(), f.max())).abs();
            best = match best {
                Some((e, c)) if e < err || (e == err && c & 1 == 0) => Some((e, c)),
                _ => Some((err, b)),
            };
        }
        best.unwrap().1
    }

    #[test]
    fn encode_is_the_nearest_code_ties_to_even_and_saturates() {
        let mut tried = 0;
        for f in SIGNED {
            let mut inputs = vec![0.0f32, -0.0, 1e-30, -1e-30, 1e30, -1e30, f32::INFINITY];
            let vals: Vec<f32> = (0..=0xFFu8)
                .map(|b| f.decode(b))
                .filter(|d| d.is_finite())
                .collect();
            for &a in &vals {
                for &b in &vals {
                    if a < b && vals.iter().all(|&c| c <= a || c >= b) {
                        let mid = ((f64::from(a) + f64::from(b)) / 2.0) as f32;
                        inputs.extend([a, b, mid, mid.next_up(), mid.next_down()]);
                    }
                }
            }
            inputs.extend([
                f.max() as f32 * 1.03,
                f.max() as f32 * 1.1,
                -(f.max() as f32) * 7.0,
            ]);
            for v in inputs {
                let want = nearest(f, v);
                assert_eq!(f.encode(v), want, "{f:?} encode({v:e})");
                tried += 1;
            }
            // Every finite code reads back to itself (canonical zero for FNUZ).
            for b in 0..=0xFFu8 {
                let d = f.decode(b);
                if d.is_finite() {
                    assert_eq!(f.encode(d), b, "{f:?} {b:#04x} -> {d:e}");
                }
            }
            assert!(f.decode(f.encode(f32::NAN)).is_nan(), "{f:?}");
            assert_eq!(
                f.encode(f32::INFINITY),
                f.encode(f.max() as f32),
                "{f:?} satfinite"
            );
        }
        assert!(tried > 1000, "{tried}");
    }

    #[test]
    fn e8m0_rounds_up_to_a_power_of_two() {
        let f = Fp8::E8M0;
        assert_eq!(f.encode(1.0), 0x7F);
        assert_eq!(f.encode(1.0000001), 0x80);
        assert_eq!(f.encode(0.75), 0x7F);
        assert_eq!(f.encode(0.5), 0x7E);
        assert_eq!(f.encode(3.0), 0x81);
        assert_eq!(f.encode(f32::MAX), 0xFE);
        assert_eq!(f.encode(1e-45), 0x00);
        for v in [0.0, -1.0, f32::NAN] {
            assert_eq!(f.encode(v), 0xFF, "{v}");
        }
        for b in 0..0xFFu8 {
            assert_eq!(f.encode(f.decode(b)), b);
        }
    }
}
