//! The size of a strided tensor's buffer: bytes per element of a data type and the byte
//! extent of dims and strides. One rule for the SDK and the C ABI.
//!
//! Rules: the extent is `1 + Σ (dim − 1) · stride` elements, the span from the first element
//! to the last one plus one; a tensor with any zero dim has **zero elements and zero bytes**
//! (it has no last element, so nothing is addressed, whatever the strides); a negative dim or
//! stride, or a step that overflows `i64` or `usize`, is an error (`None`). Dims pair with
//! strides in order (callers check that the ranks match). Sub-byte types count one byte per
//! element.

/// Bytes per element of a data type in a buffer, by its Graph-schema number (`DataType : byte`
/// of `graph.fbs`): 8 for DOUBLE and INT64, 4 for FLOAT and INT32, 2 for HALF and BFLOAT16, 1
/// for every other type (8-bit types, BOOLEAN, and the sub-byte FP4/FP6/INT4, stored one per
/// byte).
pub fn element_size(schema_data_type: i8) -> usize {
    use hipdnn_schema::graph::DataType as D;
    match D(schema_data_type) {
        D::DOUBLE | D::INT64 => 8,
        D::FLOAT | D::INT32 => 4,
        D::HALF | D::BFLOAT16 => 2,
        _ => 1,
    }
}

/// Elements a buffer must span for a tensor of `dims` and `strides`: `1 + Σ (dim − 1) ·
/// stride`, 0 when any dim is 0; `None` for a negative dim or stride or an overflow.
pub fn element_extent(dims: &[i64], strides: &[i64]) -> Option<usize> {
    if dims.contains(&0) {
        return Some(0);
    }
    let mut span: i64 = 0;
    for (d, s) in dims.iter().zip(strides) {
        if *d < 0 || *s < 0 {
            return None;
        }
        span = span.checked_add((d - 1).checked_mul(*s)?)?;
    }
    usize::try_from(span.checked_add(1)?).ok()
}

/// Bytes a buffer must hold for a tensor of `dims` and `strides` with `element_size`-byte
/// elements: [`element_extent`] × `element_size`; 0 when any dim is 0; `None` for a negative
/// dim or stride or an overflow.
pub fn byte_extent(dims: &[i64], strides: &[i64], element_size: usize) -> Option<usize> {
    element_extent(dims, strides)?.checked_mul(element_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_and_strided_extents() {
        assert_eq!(byte_extent(&[2, 3], &[3, 1], 4), Some(24));
        // A padded row: the last element is at 1·8 + 2·1.
        assert_eq!(element_extent(&[2, 3], &[8, 1]), Some(11));
        // Broadcast (stride 0) spans one element per broadcast dim.
        assert_eq!(element_extent(&[4, 5], &[0, 1]), Some(5));
        assert_eq!(element_extent(&[], &[]), Some(1));
    }

    #[test]
    fn a_zero_dim_is_zero_elements_and_zero_bytes() {
        assert_eq!(element_extent(&[0], &[1]), Some(0));
        assert_eq!(byte_extent(&[4, 0, 3], &[3, 3, 1], 8), Some(0));
        // Whatever the other dims and strides.
        assert_eq!(
            byte_extent(&[0, i64::MAX], &[i64::MAX, i64::MAX], 8),
            Some(0)
        );
    }

    #[test]
    fn negative_values_and_overflow_are_errors() {
        assert_eq!(element_extent(&[-1], &[1]), None);
        assert_eq!(element_extent(&[2], &[-1]), None);
        assert_eq!(element_extent(&[i64::MAX, 3], &[2, 1]), None);
        assert_eq!(element_extent(&[2, 2], &[i64::MAX, 1]), None);
        assert_eq!(byte_extent(&[1 << 62], &[1], 8), None);
    }

    #[test]
    fn element_sizes_by_schema_number() {
        use hipdnn_schema::graph::DataType as D;
        let size = |d: D| element_size(d.0);
        assert_eq!(size(D::DOUBLE), 8);
        assert_eq!(size(D::INT64), 8);
        assert_eq!(size(D::FLOAT), 4);
        assert_eq!(size(D::INT32), 4);
        assert_eq!(size(D::HALF), 2);
        assert_eq!(size(D::BFLOAT16), 2);
        assert_eq!(size(D::INT8), 1);
        assert_eq!(size(D::FP4_E2M1), 1);
        assert_eq!(size(D::UNSET), 1);
    }
}
