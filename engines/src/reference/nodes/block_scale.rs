//! Block-scale quantize and dequantize nodes (`BlockScaleQuantizeAttributes`,
//! `BlockScaleDequantizeAttributes`) of the CPU reference engine: the MXFP8 recipe and its
//! kin, with cuDNN's documented arithmetic.
//!
//! Quantize, per block of `block_size` consecutive elements along `axis` (default the last
//! dim): `scale = round_up(amax(block) / max(y's type))` in the scale tensor's type, then
//! `y = round_to_nearest_even(x / scale)` in y's type (saturating, [`Fp8`]). `round_up` is the
//! smallest value of the scale type at or above the quotient (E8M0: the next power of two); an
//! all-zero block gets the smallest positive scale and zeros. The division is done in f32.
//!
//! Dequantize: `y = x · scale[i / block_size]`, one scale per block of `block_size[d]`
//! elements along each dim `d` (a `block_size` shorter than the rank applies to the trailing
//! dims, the leading ones taking blocks of 1).

use crate::reference::check::Cx;
use crate::reference::dtype::{Elem, Fp8};
use crate::reference::env::Env;
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::graph::Node;
use ndarray::{ArrayD, IxDyn};

/// A block-scale quantize step.
#[derive(Debug, Clone)]
pub struct QuantizeStep {
    /// Input UID (a float type).
    pub x: i64,
    /// Quantized output UID (FP8 E4M3 / E5M2 and FNUZ forms), dims of x.
    pub y: i64,
    /// Scale output UID (E8M0, E4M3 or f32), dims of x with the axis dim divided by the block.
    pub scale: i64,
    /// The quantization axis.
    pub axis: usize,
    /// Elements per block along the axis.
    pub block: usize,
    /// The largest finite value of y's type.
    pub vmax: f32,
    /// The scale's type.
    pub scale_elem: Elem,
}

/// A block-scale dequantize step.
#[derive(Debug, Clone)]
pub struct DequantizeStep {
    /// Quantized input UID.
    pub x: i64,
    /// Scale UID, dims of x divided by the block per dim.
    pub scale: i64,
    /// Output UID, dims of x.
    pub y: i64,
    /// Block extent per dim of x.
    pub blocks: Vec<usize>,
}

impl QuantizeStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.x]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.y, self.scale]
    }
}

impl DequantizeStep {
    /// UIDs read.
    pub fn inputs(&self) -> Vec<i64> {
        vec![self.x, self.scale]
    }
    /// UIDs written.
    pub fn outputs(&self) -> Vec<i64> {
        vec![self.y]
    }
}

/// Reads and checks one block-scale quantize node.
///
/// # Errors
/// `NOT_APPLICABLE`: `transpose true`; an axis outside x's rank; a block size below 1 or not
/// dividing the axis extent; x not a float type; y not an FP8 type with a mantissa (E4M3,
/// E5M2 or their FNUZ forms; FP4 is not an element type of this engine); the scale not E8M0,
/// E4M3 or f32; y or the scale of other dims than the op's.
pub fn parse_quantize(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<QuantizeStep> {
    let a = node
        .attributes_as_block_scale_quantize_attributes()
        .expect("type checked");
    if a.transpose() {
        return Err(cx.refuse("transpose", "true"));
    }
    let x = cx.float("x", a.x_tensor_uid())?;
    let y = cx.t("y", a.y_tensor_uid())?;
    let scale = cx.t("scale", a.scale_tensor_uid())?;
    let rank = x.dims.len();
    let axis = match a.axis() {
        None => rank - 1,
        Some(ax) if (0..rank as i64).contains(&ax) => ax as usize,
        Some(ax) => return Err(cx.bad(format!("axis {ax} is outside x's {rank} dims"))),
    };
    let block = a.block_size();
    if block < 1 || x.dims[axis] % block as usize != 0 {
        return Err(cx.bad(format!(
            "block_size {block} does not divide x's axis-{axis} extent {}",
            x.dims[axis]
        )));
    }
    let vmax = match y.elem {
        Elem::Fp8(f) if f != Fp8::E8M0 => f.max() as f32,
        other => {
            return Err(cx.refuse(
                &format!("y (uid {}) data_type", y.uid),
                format!("{other:?}"),
            ));
        }
    };
    if !matches!(scale.elem, Elem::Fp8(Fp8::E8M0 | Fp8::E4M3) | Elem::F32) {
        return Err(cx.refuse(
            &format!("scale (uid {}) data_type", scale.uid),
            format!("{:?}", scale.elem),
        ));
    }
    cx.dims_eq("y", y, &x.dims)?;
    let mut sd = x.dims.clone();
    sd[axis] /= block as usize;
    cx.dims_eq("scale", scale, &sd)?;
    Ok(QuantizeStep {
        x: x.uid,
        y: y.uid,
        scale: scale.uid,
        axis,
        block: block as usize,
        vmax,
        scale_elem: scale.elem,
    })
}

/// Reads and checks one block-scale dequantize node.
///
/// # Errors
/// `NOT_APPLICABLE`: `is_negative_scale true`; x not an FP8 type with a mantissa (the
/// quantized data); a `block_size` longer than x's rank, with an
/// entry below 1 or not dividing its dim; y not a float type or not of x's dims; the scale of
/// other dims than x's divided by the blocks.
pub fn parse_dequantize(node: &Node<'_>, cx: &Cx<'_>) -> PluginResult<DequantizeStep> {
    let a = node
        .attributes_as_block_scale_dequantize_attributes()
        .expect("type checked");
    if a.is_negative_scale() {
        return Err(cx.refuse("is_negative_scale", "true"));
    }
    let x = cx.t("x", a.x_tensor_uid())?;
    if !matches!(x.elem, Elem::Fp8(f) if f != Fp8::E8M0) {
        return Err(cx.refuse(
            &format!("x (uid {}) data_type", x.uid),
            format!("{:?}", x.elem),
        ));
    }
    let scale = cx.t("scale", a.scale_tensor_uid())?;
    let y = cx.float("y", a.y_tensor_uid())?;
    let bs: Vec<i32> = a
        .block_size()
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let rank = x.dims.len();
    if bs.len() > rank {
        return Err(cx.bad(format!(
            "block_size {bs:?} has more entries than x's {rank} dims"
        )));
    }
    let mut blocks = vec![1usize; rank - bs.len()];
    for (i, &b) in bs.iter().enumerate() {
        let d = x.dims[rank - bs.len() + i];
        if b < 1 || d % b as usize != 0 {
            return Err(cx.bad(format!(
                "block_size {bs:?} does not divide x's dims {:?}",
                x.dims
            )));
        }
        blocks.push(b as usize);
    }
    cx.dims_eq("y", y, &x.dims)?;
    let sd: Vec<usize> = x.dims.iter().zip(&blocks).map(|(d, b)| d / b).collect();
    cx.dims_eq("scale", scale, &sd)?;
    Ok(DequantizeStep {
        x: x.uid,
        scale: scale.uid,
        y: y.uid,
        blocks,
    })
}

/// The smallest value of `elem` at or above `v` (`v` ≥ 0; NaN stays NaN), and the smallest
/// positive value of `elem` for 0.
fn round_up(elem: Elem, v: f32) -> f32 {
    match elem {
        Elem::Fp8(Fp8::E8M0) => Fp8::E8M0.decode(Fp8::E8M0.encode(v.max(f32::from_bits(1)))),
        Elem::Fp8(f) => {
            let b = f.encode(v);
            let r = f.decode(b);
            // Positive codes increase with the byte; a value past the largest finite one
            // stays saturated.
            if r < v && f.decode(b + 1).is_finite() {
                f.decode(b + 1)
            } else if r == 0.0 {
                f.decode(1)
            } else {
                r
            }
        }
        _ => {
            if v == 0.0 {
                f32::from_bits(1)
            } else {
                v
            }
        }
    }
}

/// Runs one quantize step: x's blocks along the axis, each scaled by its own scale.
pub fn run_quantize(
    s: &QuantizeStep,
    env: &mut Env<'_, '_, '_>,
    _e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let x = env.get(s.x)?;
    let dims = x.shape().to_vec();
    let xs = x
        .as_slice()
        .expect("the engine's arrays are dense row-major");
    // Row-major: index = (outer · extent + a) · inner + inner_index along the axis.
    let extent = dims[s.axis];
    let inner: usize = dims[s.axis + 1..].iter().product();
    let outer: usize = dims[..s.axis].iter().product();
    let nb = extent / s.block;
    let mut y = vec![0f32; xs.len()];
    let mut sc = vec![0f32; outer * nb * inner];
    for o in 0..outer {
        for j in 0..nb {
            for i in 0..inner {
                let at = |t: usize| (o * extent + j * s.block + t) * inner + i;
                let amax = (0..s.block).fold(0f32, |m, t| m.max(xs[at(t)].abs()));
                let scale = round_up(s.scale_elem, amax / s.vmax);
                sc[(o * nb + j) * inner + i] = scale;
                for t in 0..s.block {
                    y[at(t)] = xs[at(t)] / scale;
                }
            }
        }
    }
    let mut sdims = dims.clone();
    sdims[s.axis] = nb;
    env.put(
        s.y,
        ArrayD::from_shape_vec(IxDyn(&dims), y).expect("dims of x"),
    )?;
    env.put(
        s.scale,
        ArrayD::from_shape_vec(IxDyn(&sdims), sc).expect("scale dims checked at parse"),
    )
}

/// Runs one dequantize step: every element times its block's scale.
pub fn run_dequantize(
    s: &DequantizeStep,
    env: &mut Env<'_, '_, '_>,
    _e: &impl Fn(String) -> PluginError,
) -> PluginResult<()> {
    let x = env.get(s.x)?;
    let scale = env.get(s.scale)?;
    let sc = scale
        .as_slice()
        .expect("the engine's arrays are dense row-major");
    // Row-major strides of the scale array: element ix reads scale[Σ (ix[d] / block[d]) · st[d]].
    let mut st = vec![1usize; s.blocks.len()];
    for d in (0..st.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * scale.shape()[d + 1];
    }
    let y = ArrayD::from_shape_fn(x.raw_dim(), |ix| {
        let at: usize = (0..st.len()).map(|d| ix[d] / s.blocks[d] * st[d]).sum();
        x[&ix] * sc[at]
    });
    env.put(s.y, y)
}
