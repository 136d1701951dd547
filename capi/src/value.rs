//! `TENSOR_VALUE_EXT`: a pass-by-value scalar as raw bytes of the tensor's data type (CHAR,
//! count = the element size, as upstream's frontend lowers it), converted to and from the schema's
//! `TensorValue` union.

use crate::error::{Ffi, err};
use half::{bf16, f16};
use hipdnn::{DataType, TensorValue};
use hipdnn_backend::Status;

/// The `TensorValue` of the scalar `b` for a tensor of type `dt`.
///
/// # Errors
/// BAD_PARAM when `b` is not exactly one element of `dt`, or `dt` cannot carry a value
/// (unset, sub-byte and FP6 types).
pub fn from_bytes(dt: DataType, b: &[u8]) -> Ffi<TensorValue> {
    let want = match dt {
        DataType::Float | DataType::Int32 => 4,
        DataType::Half | DataType::BFloat16 => 2,
        DataType::Double | DataType::Int64 => 8,
        DataType::Boolean
        | DataType::Fp8E4m3
        | DataType::Fp8E5m2
        | DataType::Fp8E4m3Fnuz
        | DataType::Fp8E5m2Fnuz
        | DataType::Fp8E8m0 => 1,
        _ => {
            return Err(err(
                Status::BadParam,
                format!("TENSOR_VALUE_EXT: a {dt:?} tensor cannot carry a value"),
            ));
        }
    };
    if b.len() != want {
        return Err(err(
            Status::BadParam,
            format!(
                "TENSOR_VALUE_EXT: {} bytes given, a {dt:?} scalar has {want}",
                b.len()
            ),
        ));
    }
    let a = |n: usize| -> [u8; 8] {
        let mut x = [0u8; 8];
        x[..n].copy_from_slice(&b[..n]);
        x
    };
    Ok(match dt {
        DataType::Float => TensorValue::Float32(f32::from_le_bytes(a(4)[..4].try_into().unwrap())),
        DataType::Int32 => TensorValue::Int32(i32::from_le_bytes(a(4)[..4].try_into().unwrap())),
        DataType::Half => TensorValue::Float16(f16::from_le_bytes([b[0], b[1]]).to_f32()),
        DataType::BFloat16 => TensorValue::BFloat16(bf16::from_le_bytes([b[0], b[1]]).to_f32()),
        DataType::Double => TensorValue::Float64(f64::from_le_bytes(a(8))),
        DataType::Int64 => TensorValue::Int64(i64::from_le_bytes(a(8))),
        DataType::Boolean => TensorValue::Bool(b[0] != 0),
        _ => TensorValue::Float8(b[0]),
    })
}

/// The raw bytes of `v` (one element of its type, little-endian).
pub fn to_bytes(v: TensorValue) -> Vec<u8> {
    match v {
        TensorValue::Float32(x) => x.to_le_bytes().to_vec(),
        TensorValue::Float16(x) => f16::from_f32(x).to_le_bytes().to_vec(),
        TensorValue::BFloat16(x) => bf16::from_f32(x).to_le_bytes().to_vec(),
        TensorValue::Float8(x) => vec![x],
        TensorValue::Int32(x) => x.to_le_bytes().to_vec(),
        TensorValue::Float64(x) => x.to_le_bytes().to_vec(),
        TensorValue::Int64(x) => x.to_le_bytes().to_vec(),
        TensorValue::Bool(x) => vec![u8::from(x)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_round_trip_through_their_raw_bytes() {
        let cases = [
            (
                DataType::Float,
                1.5f32.to_le_bytes().to_vec(),
                TensorValue::Float32(1.5),
            ),
            (
                DataType::Half,
                f16::from_f32(-2.0).to_le_bytes().to_vec(),
                TensorValue::Float16(-2.0),
            ),
            (
                DataType::BFloat16,
                bf16::from_f32(0.25).to_le_bytes().to_vec(),
                TensorValue::BFloat16(0.25),
            ),
            (
                DataType::Double,
                1e-5f64.to_le_bytes().to_vec(),
                TensorValue::Float64(1e-5),
            ),
            (
                DataType::Int32,
                (-7i32).to_le_bytes().to_vec(),
                TensorValue::Int32(-7),
            ),
            (
                DataType::Int64,
                9i64.to_le_bytes().to_vec(),
                TensorValue::Int64(9),
            ),
            (DataType::Boolean, vec![1], TensorValue::Bool(true)),
        ];
        for (dt, bytes, value) in cases {
            assert_eq!(from_bytes(dt, &bytes).unwrap(), value, "{dt:?}");
            assert_eq!(to_bytes(value), bytes, "{dt:?}");
        }
        let e = from_bytes(DataType::Float, &[0, 0]).unwrap_err();
        assert_eq!(e.status, Status::BadParam);
        assert!(e.message.contains("2 bytes given"), "{}", e.message);
    }
}
