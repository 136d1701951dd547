//! Execute-time shape overrides (upstream RFC 0008 phase 1): a graph built with the
//! override-shape flag declares each tensor's largest shape; an execute may give some of its
//! non-virtual tensors smaller dims and rescaled strides without a rebuild.
//!
//! This module owns the one set of rules every engine applies to an override before anything
//! runs ([`check_overrides`]); engines own how they serve the shapes. It never reads buffers.

/// New dims and strides for one tensor of a plan, for one execute (upstream
/// `VARIANT_PACK_OVERRIDE_UNIQUE_IDS_EXT` / `…_SHAPES_EXT` / `…_STRIDES_EXT`, one entry of each).
/// Dims and strides are in elements, in the tensor's dim order, as many as its rank.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShapeOverride {
    /// UID of a non-virtual tensor of the plan (bound in the same variant pack).
    pub uid: i64,
    /// Dims, each `1 ..=` the built dim.
    pub dims: Vec<i64>,
    /// Strides in elements, each `> 0`, in the same relative order as the built strides.
    pub strides: Vec<i64>,
}

impl ShapeOverride {
    /// An override of tensor `uid` to `dims` with `strides`.
    pub fn new(uid: i64, dims: impl Into<Vec<i64>>, strides: impl Into<Vec<i64>>) -> Self {
        ShapeOverride {
            uid,
            dims: dims.into(),
            strides: strides.into(),
        }
    }
}

/// What [`check_overrides`] knows of one tensor of the plan: its built (maximum) dims and
/// strides and whether it is virtual.
#[derive(Debug, Clone, Copy)]
pub struct BuiltShape<'a> {
    /// Dims at build (the largest an override may give).
    pub dims: &'a [i64],
    /// Strides at build (their order is the layout an override keeps).
    pub strides: &'a [i64],
    /// A virtual tensor (never overridden: the engine derives its shape).
    pub is_virtual: bool,
}

/// Checks `overrides` against the plan's tensors (`built(uid)`, `None` for a UID the plan does
/// not have), the rules of RFC 0008 §4.2.1 in order, first failure reported.
///
/// # Errors
/// A message starting `shape override` for: a UID given twice; a UID that is not a tensor of
/// the plan, or a virtual one; dims or strides not as many as the tensor's rank; a dim `<= 0`
/// or larger than the built dim; a stride `<= 0`; strides that reorder the built layout (where
/// the built stride of dim `i` is larger than that of dim `j`, the override's must not be
/// smaller).
pub fn check_overrides<'a>(
    overrides: &[ShapeOverride],
    built: impl Fn(i64) -> Option<BuiltShape<'a>>,
) -> Result<(), String> {
    for (k, o) in overrides.iter().enumerate() {
        let uid = o.uid;
        if overrides[..k].iter().any(|p| p.uid == uid) {
            return Err(format!("shape override of tensor uid {uid} is given twice"));
        }
        let Some(b) = built(uid) else {
            return Err(format!(
                "shape override names tensor uid {uid}, which is not a tensor of the plan"
            ));
        };
        if b.is_virtual {
            return Err(format!(
                "shape override of tensor uid {uid}: the tensor is virtual; only tensors bound \
                 in the variant pack take overrides (the engine derives virtual shapes)"
            ));
        }
        let rank = b.dims.len();
        if o.dims.len() != rank || o.strides.len() != rank {
            return Err(format!(
                "shape override of tensor uid {uid}: {} dims and {} strides for a tensor of rank \
                 {rank}",
                o.dims.len(),
                o.strides.len()
            ));
        }
        for (d, (&v, &max)) in o.dims.iter().zip(b.dims).enumerate() {
            if v <= 0 {
                return Err(format!(
                    "shape override of tensor uid {uid}: dim {d} is {v}; dims must be positive"
                ));
            }
            if v > max {
                return Err(format!(
                    "shape override of tensor uid {uid}: dim {d} is {v}, larger than the built \
                     maximum {max} (build the graph at the largest shape it serves)"
                ));
            }
        }
        if let Some((d, &v)) = o.strides.iter().enumerate().find(|(_, s)| **s <= 0) {
            return Err(format!(
                "shape override of tensor uid {uid}: stride {d} is {v}; strides must be positive"
            ));
        }
        for i in 0..rank {
            for j in 0..rank {
                if b.strides[i] > b.strides[j] && o.strides[i] < o.strides[j] {
                    return Err(format!(
                        "shape override of tensor uid {uid}: strides {:?} reorder the built \
                         layout (strides {:?}); an override may shrink dims and rescale strides, \
                         not transpose",
                        o.strides, b.strides
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIMS: [i64; 3] = [4, 8, 16];
    const STRIDES: [i64; 3] = [128, 16, 1];

    fn built(uid: i64) -> Option<BuiltShape<'static>> {
        match uid {
            1 => Some(BuiltShape {
                dims: &DIMS,
                strides: &STRIDES,
                is_virtual: false,
            }),
            2 => Some(BuiltShape {
                dims: &DIMS,
                strides: &STRIDES,
                is_virtual: true,
            }),
            _ => None,
        }
    }

    fn check(o: &[ShapeOverride]) -> String {
        check_overrides(o, built).err().unwrap_or_default()
    }

    #[test]
    fn smaller_dims_with_packed_or_kept_strides_pass() {
        let ok = [ShapeOverride::new(1, [2, 8, 3], [24, 3, 1])];
        assert_eq!(check_overrides(&ok, built), Ok(()));
        let kept = [ShapeOverride::new(1, [1, 1, 1], STRIDES)];
        assert_eq!(check_overrides(&kept, built), Ok(()));
        assert_eq!(check_overrides(&[], built), Ok(()));
    }

    #[test]
    fn each_rule_is_refused_with_its_message() {
        let o = |uid, d: [i64; 3], s: [i64; 3]| ShapeOverride::new(uid, d, s);
        assert_eq!(
            check(&[o(1, DIMS, STRIDES), o(1, DIMS, STRIDES)]),
            "shape override of tensor uid 1 is given twice"
        );
        assert_eq!(
            check(&[o(7, DIMS, STRIDES)]),
            "shape override names tensor uid 7, which is not a tensor of the plan"
        );
        assert!(check(&[o(2, DIMS, STRIDES)]).starts_with(
            "shape override of tensor uid 2: the tensor is virtual; only tensors bound"
        ));
        assert_eq!(
            check(&[ShapeOverride::new(1, [4, 8], [8, 1])]),
            "shape override of tensor uid 1: 2 dims and 2 strides for a tensor of rank 3"
        );
        assert_eq!(
            check(&[o(1, [4, 0, 16], STRIDES)]),
            "shape override of tensor uid 1: dim 1 is 0; dims must be positive"
        );
        assert!(check(&[o(1, [4, 8, 17], STRIDES)]).starts_with(
            "shape override of tensor uid 1: dim 2 is 17, larger than the built maximum 16"
        ));
        assert_eq!(
            check(&[o(1, DIMS, [128, 0, 1])]),
            "shape override of tensor uid 1: stride 1 is 0; strides must be positive"
        );
        assert!(check(&[o(1, [4, 8, 8], [64, 1, 8])]).starts_with(
            "shape override of tensor uid 1: strides [64, 1, 8] reorder the built layout"
        ));
    }
}
