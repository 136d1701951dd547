//! Hand-written reader and writer for the `TensorAttributes.value` union (`TensorValue`).
//!
//! Upstream's `TensorValue` union (tensor_attributes.fbs) has **struct** members, which
//! `flatc --rust` refuses to generate. On the wire such a union is two table fields: the type
//! byte `value_type` (field id 6, vtable slot 16) and a `uoffset` (field id 7, vtable slot 18)
//! pointing at the struct, which is stored out of line like a table would be. This module reads
//! and writes exactly that, so our bytes equal what flatc's C++ builder and `flatc -b` produce.
//!
//! This module owns only the union; it never touches other fields. It is safe Rust: every read
//! is bounds- and alignment-checked against the buffer, so damaged bytes give a
//! [`TensorValueError`], never a panic. The generated verifier skips these two fields (they are
//! `deprecated` placeholders in the Rust-generation copy of the schema), so callers that decode
//! untrusted bytes must call [`read_tensor_value`] and treat its error as a verification failure.

use crate::graph::{
    BFloat16Value, BoolValue, Float8Value, Float16Value, Float32Value, Float64Value, Int32Value,
    Int64Value, TensorAttributes,
};
use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, VOffsetT, WIPOffset};

/// vtable slot of `TensorAttributes.value_type` (field id 6).
pub const VT_VALUE_TYPE: VOffsetT = 16;
/// vtable slot of `TensorAttributes.value` (field id 7).
pub const VT_VALUE: VOffsetT = 18;

/// A pass-by-value scalar as stored in the `TensorValue` union.
///
/// Union member numbers (the `value_type` byte): Float32Value 1, Float16Value 2,
/// BFloat16Value 3, Float8Value 4, Int32Value 5, Float64Value 6, Int64Value 7, BoolValue 8.
/// 16-bit floats are widened to `f32` on the wire (upstream rule); FP4/FP6 values cannot be
/// represented.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TensorValue {
    /// `Float32Value { value: float }` (member 1).
    Float32(f32),
    /// `Float16Value { value: float }` (member 2): a half value widened to f32.
    Float16(f32),
    /// `BFloat16Value { value: float }` (member 3): a bfloat16 value widened to f32.
    BFloat16(f32),
    /// `Float8Value { value: ubyte }` (member 4): raw fp8 bits.
    Float8(u8),
    /// `Int32Value { value: int }` (member 5).
    Int32(i32),
    /// `Float64Value { value: double }` (member 6).
    Float64(f64),
    /// `Int64Value { value: long }` (member 7).
    Int64(i64),
    /// `BoolValue { value: bool }` (member 8).
    Bool(bool),
}

impl TensorValue {
    /// The union's type byte for this member (1..=8).
    pub fn type_code(&self) -> u8 {
        match self {
            TensorValue::Float32(_) => 1,
            TensorValue::Float16(_) => 2,
            TensorValue::BFloat16(_) => 3,
            TensorValue::Float8(_) => 4,
            TensorValue::Int32(_) => 5,
            TensorValue::Float64(_) => 6,
            TensorValue::Int64(_) => 7,
            TensorValue::Bool(_) => 8,
        }
    }

    /// Size in bytes and alignment of the member struct on the wire.
    fn layout(type_code: u8) -> Option<(usize, usize)> {
        match type_code {
            1..=3 | 5 => Some((4, 4)),
            4 | 8 => Some((1, 1)),
            6 | 7 => Some((8, 8)),
            _ => None,
        }
    }
}

/// Why a `TensorValue` union could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TensorValueError {
    /// The type byte names no member of `TensorValue`.
    #[error("TensorValue type {0} is not a member of the union (valid: 0..=8)")]
    UnknownType(u8),
    /// The type byte names a member but the value offset is absent.
    #[error("TensorValue type {0} is set but the value field is absent")]
    MissingValue(u8),
    /// A value offset is present with type NONE.
    #[error("TensorValue has a value but its type is NONE")]
    ValueWithoutType,
    /// The offset or the struct it points to lies outside the buffer.
    #[error("TensorValue field or struct lies outside the {len}-byte buffer (at {at})")]
    OutOfBounds {
        /// Position that did not fit.
        at: usize,
        /// Buffer length in bytes.
        len: usize,
    },
    /// The struct is not aligned as its member type requires (relative to the buffer start).
    #[error("TensorValue struct at {at} is not {align}-byte aligned")]
    Misaligned {
        /// Position of the struct.
        at: usize,
        /// Required alignment in bytes.
        align: usize,
    },
}

fn read_array<const N: usize>(buf: &[u8], at: usize) -> Result<[u8; N], TensorValueError> {
    let end = at
        .checked_add(N)
        .ok_or(TensorValueError::OutOfBounds { at, len: buf.len() })?;
    buf.get(at..end)
        .and_then(|s| s.try_into().ok())
        .ok_or(TensorValueError::OutOfBounds { at, len: buf.len() })
}

/// Reads the `value` union of a tensor.
///
/// Returns `Ok(None)` when both fields are absent (or type NONE with no value). The table
/// itself must come from a buffer that passed the generated verifier; this function checks
/// everything the verifier skipped (field positions, the offset, the struct's bounds and
/// alignment relative to the buffer start, the member number).
///
/// # Errors
/// [`TensorValueError`] for an unknown type byte, a type without value, a value without type,
/// or an offset/struct outside the buffer or misaligned.
pub fn read_tensor_value(
    tensor: &TensorAttributes<'_>,
) -> Result<Option<TensorValue>, TensorValueError> {
    let tab = &tensor._tab;
    let buf = tab.buf();
    let loc = tab.loc();
    let vt = tab.vtable();
    let type_field = vt.get(VT_VALUE_TYPE) as usize;
    let value_field = vt.get(VT_VALUE) as usize;
    let type_code = if type_field == 0 {
        0
    } else {
        read_array::<1>(buf, loc + type_field)?[0]
    };
    if value_field == 0 {
        return match type_code {
            0 => Ok(None),
            t if TensorValue::layout(t).is_none() => Err(TensorValueError::UnknownType(t)),
            t => Err(TensorValueError::MissingValue(t)),
        };
    }
    if type_code == 0 {
        return Err(TensorValueError::ValueWithoutType);
    }
    let (size, align) =
        TensorValue::layout(type_code).ok_or(TensorValueError::UnknownType(type_code))?;
    let field_at = loc + value_field;
    if field_at % 4 != 0 {
        return Err(TensorValueError::Misaligned {
            at: field_at,
            align: 4,
        });
    }
    let rel = u32::from_le_bytes(read_array::<4>(buf, field_at)?) as usize;
    let at = field_at
        .checked_add(rel)
        .ok_or(TensorValueError::OutOfBounds {
            at: field_at,
            len: buf.len(),
        })?;
    if at.checked_add(size).is_none_or(|end| end > buf.len()) {
        return Err(TensorValueError::OutOfBounds { at, len: buf.len() });
    }
    if at % align != 0 {
        return Err(TensorValueError::Misaligned { at, align });
    }
    let v = match type_code {
        1 => TensorValue::Float32(f32::from_le_bytes(read_array(buf, at)?)),
        2 => TensorValue::Float16(f32::from_le_bytes(read_array(buf, at)?)),
        3 => TensorValue::BFloat16(f32::from_le_bytes(read_array(buf, at)?)),
        4 => TensorValue::Float8(read_array::<1>(buf, at)?[0]),
        5 => TensorValue::Int32(i32::from_le_bytes(read_array(buf, at)?)),
        6 => TensorValue::Float64(f64::from_le_bytes(read_array(buf, at)?)),
        7 => TensorValue::Int64(i64::from_le_bytes(read_array(buf, at)?)),
        8 => TensorValue::Bool(read_array::<1>(buf, at)?[0] != 0),
        t => return Err(TensorValueError::UnknownType(t)),
    };
    Ok(Some(v))
}

/// Pushes the member struct of `value` into `fbb` and returns `(type byte, offset)`.
///
/// Call it **before** `start_table` of the tensor (a struct referenced by offset is stored
/// out of line), then add both slots with [`add_tensor_value`].
pub fn push_tensor_value<'a, A: flatbuffers::Allocator + 'a>(
    fbb: &mut FlatBufferBuilder<'a, A>,
    value: TensorValue,
) -> (u8, WIPOffset<UnionWIPOffset>) {
    let off = match value {
        TensorValue::Float32(v) => fbb.push(Float32Value::new(v)).as_union_value(),
        TensorValue::Float16(v) => fbb.push(Float16Value::new(v)).as_union_value(),
        TensorValue::BFloat16(v) => fbb.push(BFloat16Value::new(v)).as_union_value(),
        TensorValue::Float8(v) => fbb.push(Float8Value::new(v)).as_union_value(),
        TensorValue::Int32(v) => fbb.push(Int32Value::new(v)).as_union_value(),
        TensorValue::Float64(v) => fbb.push(Float64Value::new(v)).as_union_value(),
        TensorValue::Int64(v) => fbb.push(Int64Value::new(v)).as_union_value(),
        TensorValue::Bool(v) => fbb.push(BoolValue::new(v)).as_union_value(),
    };
    (value.type_code(), off)
}

/// Adds the two union slots to the table being built (between `start_table` and `end_table`).
///
/// Slot order matches what flatc's C++ builder emits for a union field (offset then type).
pub fn add_tensor_value<'a, A: flatbuffers::Allocator + 'a>(
    fbb: &mut FlatBufferBuilder<'a, A>,
    pushed: (u8, WIPOffset<UnionWIPOffset>),
) {
    fbb.push_slot_always::<WIPOffset<_>>(VT_VALUE, pushed.1);
    fbb.push_slot::<u8>(VT_VALUE_TYPE, pushed.0, 0);
}
