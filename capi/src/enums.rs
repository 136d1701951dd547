//! Value enums across the C ABI (upstream's DataTypeConversion): the C numbering on the outside, the Graph
//! schema's numbering inside. Conversion is by name, never by cast; the three enums whose
//! numbers differ (data type, convolution mode, operation type) have explicit tables here.

use hipdnn::{ConvMode, DataType, PointwiseMode};

/// C `hipdnnDataType_t` value → schema [`DataType`] (upstream's C ↔ schema table). `None` for a number that is
/// not a C enumerator.
pub fn data_type_from_c(v: i32) -> Option<DataType> {
    use DataType as D;
    Some(match v {
        0 => D::Float,
        1 => D::Double,
        2 => D::Half,
        3 => D::Int8,
        4 => D::Int32,
        5 => D::Uint8,
        6 => D::BFloat16,
        7 => D::Fp8E4m3,
        8 => D::Fp8E5m2,
        9 => D::Fp8E8m0,
        10 => D::Fp4E2m1,
        11 => D::Int4,
        12 => D::Fp6E2m3,
        13 => D::Fp6E3m2,
        14 => D::Int64,
        15 => D::Boolean,
        16 => D::Fp8E4m3Fnuz,
        17 => D::Fp8E5m2Fnuz,
        _ => return None,
    })
}

/// Schema [`DataType`] → C value; `None` for `Unset` (no C enumerator).
pub fn data_type_to_c(d: DataType) -> Option<i32> {
    (0..=17).find(|&c| data_type_from_c(c) == Some(d))
}

/// C `hipdnnConvolutionMode_t` → schema [`ConvMode`]: 0 CONVOLUTION → 1, 1 CROSS_CORRELATION → 2.
pub fn conv_mode_from_c(v: i32) -> Option<ConvMode> {
    match v {
        0 => Some(ConvMode::Convolution),
        1 => Some(ConvMode::CrossCorrelation),
        _ => None,
    }
}

/// Schema [`ConvMode`] → C value; `None` for `Unset`.
pub fn conv_mode_to_c(m: ConvMode) -> Option<i32> {
    match m {
        ConvMode::Convolution => Some(0),
        ConvMode::CrossCorrelation => Some(1),
        _ => None,
    }
}

/// C `hipdnnPointwiseMode_t` → schema [`PointwiseMode`] (same numbers 1–47; C has no 0).
pub fn pointwise_mode_from_c(v: i32) -> Option<PointwiseMode> {
    if v == 0 {
        return None;
    }
    PointwiseMode::ALL
        .iter()
        .copied()
        .find(|m| i32::from(m.schema_value()) == v)
}

/// Schema [`PointwiseMode`] → C value; `None` for the schema-only 0.
pub fn pointwise_mode_to_c(m: PointwiseMode) -> Option<i32> {
    let v = i32::from(m.schema_value());
    (v != 0).then_some(v)
}

/// C `hipdnnOperationType_ext_t` of an operation descriptor type (`hipdnnBackendDescriptorType_t`).
pub fn operation_type_of_descriptor(desc_type: i32) -> Option<i32> {
    Some(match desc_type {
        15 => 1,  // conv forward
        19 => 2,  // conv backward data
        16 => 3,  // conv backward filter
        17 => 4,  // batchnorm inference
        20 => 5,  // batchnorm backward
        21 => 6,  // batchnorm inference variance
        27 => 7,  // batchnorm
        18 => 8,  // pointwise
        22 => 9,  // matmul
        23 => 10, // rmsnorm
        25 => 11, // layernorm
        24 => 12, // sdpa forward
        26 => 13, // block scale quantize
        30 => 14, // sdpa backward
        28 => 15, // block scale dequantize
        29 => 16, // custom op
        31 => 17, // reduction
        32 => 18, // resample forward
        33 => 19, // rmsnorm backward
        35 => 20, // layernorm backward
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_type_table_matches_upstreams() {
        // (C, schema) pairs of upstream's HipdnnDataType.h and the Graph schema.
        let pairs = [
            (0, 1),
            (1, 4),
            (2, 2),
            (3, 7),
            (4, 6),
            (5, 5),
            (6, 3),
            (7, 8),
            (8, 9),
            (9, 10),
            (10, 11),
            (11, 14),
            (12, 12),
            (13, 13),
            (14, 15),
            (15, 16),
            (16, 17),
            (17, 18),
        ];
        for (c, s) in pairs {
            let d = data_type_from_c(c).unwrap();
            assert_eq!(i32::from(d.schema_value()), s, "C data type {c}");
            assert_eq!(data_type_to_c(d), Some(c));
        }
        assert_eq!(data_type_from_c(18), None);
        assert_eq!(data_type_to_c(DataType::Unset), None);
    }

    #[test]
    fn conv_mode_is_translated_not_cast() {
        assert_eq!(conv_mode_from_c(0), Some(ConvMode::Convolution));
        assert_eq!(conv_mode_from_c(1), Some(ConvMode::CrossCorrelation));
        assert_eq!(conv_mode_from_c(2), None);
        assert_eq!(conv_mode_to_c(ConvMode::Unset), None);
        assert_eq!(pointwise_mode_from_c(0), None);
        assert_eq!(
            pointwise_mode_from_c(34).map(pointwise_mode_to_c),
            Some(Some(34))
        );
    }
}
