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
}

impl Elem {
    /// The codec for a schema data type, `None` for types the engine does not support
    /// (UNSET, FP8, FP6, FP4, INT4).
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
            _ => return None,
        })
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Elem::F32 | Elem::I32 => 4,
            Elem::F16 | Elem::Bf16 => 2,
            Elem::F64 | Elem::I64 => 8,
            Elem::I8 | Elem::U8 | Elem::Bool => 1,
        }
    }

    /// True for the floating-point types (F32, F16, BF16, F64).
    pub fn is_float(self) -> bool {
        matches!(self, Elem::F32 | Elem::F16 | Elem::Bf16 | Elem::F64)
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
        }
    }

    /// Writes `v` into `b` (exactly [`Elem::size`] bytes, little-endian).
    ///
    /// Floats round to nearest even; integers truncate toward zero and saturate (NaN → 0);
    /// booleans store 1 for any non-zero value (NaN included), else 0.
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
