//! Tensor descriptions and the strided byte ↔ dense `f32` conversion of the CPU reference
//! engine.
//!
//! Owns: the engine's copy of a `TensorAttributes` (dims, strides in elements, data type,
//! virtual / pass-by-value state) and the conversion of a bound host buffer into a dense
//! row-major [`ArrayD<f32>`] over the logical dims and back. It never interprets operations.

use super::dtype::Elem;
use hipdnn_backend::{PluginError, PluginResult};
use hipdnn_schema::tensor_value::TensorValue;
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};

/// The engine's copy of one graph tensor.
#[derive(Debug, Clone)]
pub struct TensorDesc {
    /// Tensor UID.
    pub uid: i64,
    /// Tensor name (for messages).
    pub name: String,
    /// Element codec.
    pub elem: Elem,
    /// Logical dims (NCHW order for conv/norm tensors whatever the layout).
    pub dims: Vec<usize>,
    /// Strides in elements, parallel to `dims`.
    pub strides: Vec<usize>,
    /// Virtual (intermediate) tensor: lives in engine host memory, never bound.
    pub is_virtual: bool,
    /// Runtime pass-by-value scalar: read from the bound host buffer.
    pub runtime_pass_by_value: bool,
    /// Baked value (compile-time constant, or the default of a runtime scalar).
    pub value: Option<f32>,
}

impl TensorDesc {
    /// Number of logical elements (product of dims). A plan checks at parse
    /// ([`Self::check_extents`]) that this does not overflow; saturates otherwise.
    pub fn volume(&self) -> usize {
        self.checked_volume().unwrap_or(usize::MAX)
    }

    /// Product of dims, `None` on overflow.
    pub fn checked_volume(&self) -> Option<usize> {
        self.dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    /// Bytes a buffer must hold: `(Σ (dim-1)·stride + 1) · element size`. A plan checks at
    /// parse ([`Self::check_extents`]) that this does not overflow; saturates otherwise.
    pub fn required_bytes(&self) -> usize {
        self.checked_required_bytes().unwrap_or(usize::MAX)
    }

    /// [`Self::required_bytes`] with checked arithmetic, `None` on overflow.
    pub fn checked_required_bytes(&self) -> Option<usize> {
        if self.dims.contains(&0) {
            return Some(0);
        }
        let mut span = 0usize;
        for (d, s) in self.dims.iter().zip(&self.strides) {
            span = span.checked_add((d - 1).checked_mul(*s)?)?;
        }
        span.checked_add(1)?.checked_mul(self.elem.size())
    }

    /// Checks, with checked arithmetic, that every extent this engine computes for the tensor
    /// fits: the byte span of its buffer (largest byte offset + element size) and the bytes of
    /// its dense `f32` copy both at most `isize::MAX` (issue 12: no overflow at build, load or
    /// execute).
    ///
    /// # Errors
    /// `INVALID_VALUE` "tensor uid U ('name'): dims [..] strides [..] overflow the address
    /// space (…)".
    pub fn check_extents(&self) -> PluginResult<()> {
        let limit = isize::MAX as usize;
        let what = match (self.checked_required_bytes(), self.checked_volume()) {
            (None, _) => "the buffer's byte span overflows".to_string(),
            (Some(b), _) if b > limit => format!("the buffer's byte span {b} exceeds {limit}"),
            (_, None) => "the element count overflows".to_string(),
            (_, Some(v)) if v.checked_mul(4).is_none_or(|x| x > limit) => {
                format!("{v} elements exceed what one host array can hold")
            }
            _ => return Ok(()),
        };
        Err(PluginError::invalid_value(format!(
            "tensor uid {} ('{}'): dims {:?} strides {:?} overflow the address space ({what})",
            self.uid, self.name, self.dims, self.strides
        )))
    }

    /// True when the strides are the packed row-major ones of `dims` (dims of extent 1 may
    /// carry any stride): the buffer's first `volume` elements are the dense array in order.
    pub fn is_dense_row_major(&self) -> bool {
        let mut expected = 1usize;
        for (d, s) in self.dims.iter().zip(&self.strides).rev() {
            if *d != 1 && *s != expected {
                return false;
            }
            expected = expected.saturating_mul(*d);
        }
        true
    }

    /// Calls `f` with the byte offset of every logical element, row-major over `dims`: an
    /// odometer over the outer dims and a strided run along the last (no table, no per-element
    /// index product).
    fn for_each_offset(&self, mut f: impl FnMut(usize)) {
        let es = self.elem.size();
        let inner = self.dims.last().copied().unwrap_or(1);
        let step = self.strides.last().copied().unwrap_or(0) * es;
        self.for_each_row(|base| {
            for j in 0..inner {
                f(base * es + j * step);
            }
        });
    }

    /// Calls `f` with the element offset of the first element of every row (the last dim's
    /// run), rows in row-major order of the outer dims; nothing when the tensor is empty, once
    /// with 0 for a scalar.
    fn for_each_row(&self, mut f: impl FnMut(usize)) {
        if self.volume() == 0 {
            return;
        }
        let outer = &self.dims[..self.dims.len().saturating_sub(1)];
        let mut idx = vec![0usize; outer.len()];
        loop {
            f(idx
                .iter()
                .zip(&self.strides)
                .map(|(i, s)| i * s)
                .sum::<usize>());
            let mut d = outer.len();
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < outer[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// True when the last dim is unit-stride (each row a contiguous run).
    fn rows_contiguous(&self) -> bool {
        self.dims.len() > 1 && self.strides.last() == Some(&1)
    }

    /// The f32 tensor read in place from `bytes` with its strides (`None` unless F32, 4-byte
    /// aligned and long enough).
    fn f32_view<'b>(&self, bytes: &'b [u8]) -> Option<ArrayViewD<'b, f32>> {
        if self.elem != Elem::F32 {
            return None;
        }
        let data: &[f32] = bytemuck::try_cast_slice(bytes.get(..self.required_bytes())?).ok()?;
        ArrayViewD::from_shape(IxDyn(&self.dims).strides(IxDyn(&self.strides)), data).ok()
    }

    /// Reads `bytes` (laid out by `strides`) into a dense row-major array of `dims`.
    ///
    /// # Errors
    /// `BAD_PARAM` naming the UID when `bytes` is shorter than [`Self::required_bytes`].
    pub fn load(&self, bytes: &[u8]) -> PluginResult<ArrayD<f32>> {
        self.check_len(bytes.len())?;
        let es = self.elem.size();
        let dense = self.is_dense_row_major();
        let data: Vec<f32> = if dense
            && self.elem == Elem::F32
            && let Ok(f) = bytemuck::try_cast_slice::<u8, f32>(&bytes[..self.volume() * es])
        {
            // Aligned dense f32: one memcpy.
            f.to_vec()
        } else if dense {
            // One pass over the buffer in order: no per-element offset table.
            bytes[..self.volume() * es]
                .chunks_exact(es)
                .map(|c| self.elem.read(c))
                .collect()
        } else if self.elem == Elem::F32
            && self.rows_contiguous()
            && let Ok(f) = bytemuck::try_cast_slice::<u8, f32>(&bytes[..self.required_bytes()])
        {
            // Strided f32 with contiguous rows (a head view): one copy per row.
            let inner = self.dims[self.dims.len() - 1];
            let mut data = Vec::with_capacity(self.volume());
            self.for_each_row(|base| data.extend_from_slice(&f[base..base + inner]));
            data
        } else if let Some(v) = self.f32_view(bytes) {
            // Other strided f32: ndarray's strided copy, in logical (row-major) order.
            return Ok(v.as_standard_layout().into_owned());
        } else {
            let mut data = Vec::with_capacity(self.volume());
            self.for_each_offset(|o| data.push(self.elem.read(&bytes[o..o + es])));
            data
        };
        Ok(ArrayD::from_shape_vec(IxDyn(&self.dims), data).expect("volume matches dims"))
    }

    /// Reads an INT32 or INT64 tensor from `bytes` (laid out by `strides`) as its exact
    /// integer values in row-major order of `dims` (not through f32, so every INT64 value is
    /// kept); `None` for any other data type.
    ///
    /// # Errors
    /// `BAD_PARAM` naming the UID when `bytes` is shorter than [`Self::required_bytes`].
    pub fn load_ints(&self, bytes: &[u8]) -> PluginResult<Option<Vec<i64>>> {
        self.check_len(bytes.len())?;
        let read = |b: &[u8]| -> i64 {
            match self.elem {
                Elem::I32 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                _ => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            }
        };
        if !matches!(self.elem, Elem::I32 | Elem::I64) {
            return Ok(None);
        }
        let es = self.elem.size();
        Ok(Some(if self.is_dense_row_major() {
            bytes[..self.volume() * es]
                .chunks_exact(es)
                .map(read)
                .collect()
        } else {
            let mut v = Vec::with_capacity(self.volume());
            self.for_each_offset(|o| v.push(read(&bytes[o..o + es])));
            v
        }))
    }

    /// Writes the dense row-major `values` (of `dims`) into `bytes` at the strided positions,
    /// leaving bytes between elements untouched.
    ///
    /// # Errors
    /// `BAD_PARAM` naming the UID when `bytes` is shorter than [`Self::required_bytes`].
    pub fn store(&self, values: &ArrayD<f32>, bytes: &mut [u8]) -> PluginResult<()> {
        self.check_len(bytes.len())?;
        let es = self.elem.size();
        if self.is_dense_row_major() {
            let n = self.volume();
            let dst = &mut bytes[..n * es];
            match values.as_slice() {
                Some(vs) if self.elem == Elem::F32 => {
                    match bytemuck::try_cast_slice_mut::<u8, f32>(dst) {
                        // Aligned dense f32: one memcpy.
                        Ok(d) => d.copy_from_slice(vs),
                        Err(_) => dst
                            .chunks_exact_mut(es)
                            .zip(vs)
                            .for_each(|(c, v)| c.copy_from_slice(&v.to_le_bytes())),
                    }
                }
                Some(vs) => dst
                    .chunks_exact_mut(es)
                    .zip(vs)
                    .for_each(|(c, v)| self.elem.write(*v, c)),
                None => dst
                    .chunks_exact_mut(es)
                    .zip(values.iter())
                    .for_each(|(c, v)| self.elem.write(*v, c)),
            }
            return Ok(());
        }
        if self.elem == Elem::F32
            && self.rows_contiguous()
            && let Some(vs) = values.as_slice()
            && let Ok(d) =
                bytemuck::try_cast_slice_mut::<u8, f32>(&mut bytes[..self.required_bytes()])
        {
            // Strided f32 with contiguous rows (a head view): one copy per row.
            let inner = self.dims[self.dims.len() - 1];
            let mut rows = vs.chunks_exact(inner);
            self.for_each_row(|base| {
                if let Some(r) = rows.next() {
                    d[base..base + inner].copy_from_slice(r);
                }
            });
            return Ok(());
        }
        if self.elem == Elem::F32 {
            let need = self.required_bytes();
            if let Ok(data) = bytemuck::try_cast_slice_mut::<u8, f32>(&mut bytes[..need]) {
                let shape = IxDyn(&self.dims).strides(IxDyn(&self.strides));
                // Refused (Err) when the strides make elements overlap: then element by element.
                if let Ok(mut v) = ArrayViewMutD::from_shape(shape, data) {
                    v.assign(values);
                    return Ok(());
                }
            }
        }
        let mut vals = values.iter();
        self.for_each_offset(|o| {
            if let Some(v) = vals.next() {
                self.elem.write(*v, &mut bytes[o..o + es]);
            }
        });
        Ok(())
    }

    /// Checks a bound buffer's length.
    ///
    /// # Errors
    /// `BAD_PARAM` "tensor uid U ('name'): buffer holds N bytes, dims [..] strides [..] of
    /// TYPE need M".
    pub fn check_len(&self, len: usize) -> PluginResult<()> {
        let need = self.required_bytes();
        if len < need {
            return Err(PluginError::bad_param(format!(
                "tensor uid {} ('{}'): buffer holds {len} bytes, dims {:?} strides {:?} of {:?} need {need}",
                self.uid, self.name, self.dims, self.strides, self.elem
            )));
        }
        Ok(())
    }

    /// The dense array of a baked pass-by-value scalar (every element = the value).
    pub fn value_array(&self) -> Option<ArrayD<f32>> {
        self.value
            .map(|v| ArrayD::from_elem(IxDyn(&self.dims), self.elem.quantize(v)))
    }
}

/// A `TensorValue` widened to f32 (integers and f64 may round).
pub fn tensor_value_f32(v: TensorValue) -> f32 {
    match v {
        TensorValue::Float32(x) | TensorValue::Float16(x) | TensorValue::BFloat16(x) => x,
        TensorValue::Float8(b) => f32::from(b),
        TensorValue::Int32(i) => i as f32,
        TensorValue::Float64(d) => d as f32,
        TensorValue::Int64(i) => i as f32,
        TensorValue::Bool(b) => {
            if b {
                1.0
            } else {
                0.0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(dims: &[usize], strides: &[usize], elem: Elem) -> TensorDesc {
        TensorDesc {
            uid: 1,
            name: "t".into(),
            elem,
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            is_virtual: false,
            runtime_pass_by_value: false,
            value: None,
        }
    }

    #[test]
    fn dense_and_strided_layouts_load_and_store_the_same_logical_values() {
        assert!(desc(&[2, 3], &[3, 1], Elem::F32).is_dense_row_major());
        assert!(desc(&[2, 1, 3], &[3, 99, 1], Elem::F32).is_dense_row_major());
        assert!(!desc(&[2, 3], &[1, 2], Elem::F32).is_dense_row_major());
        assert!(!desc(&[2, 3], &[4, 1], Elem::F32).is_dense_row_major());
        // Logical [[1, 2, 3], [4, 5, 6]] as a dense f16 buffer and as a column-major one.
        let vals = [1f32, 2., 3., 4., 5., 6.];
        let bytes = |order: &[usize]| -> Vec<u8> {
            order
                .iter()
                .flat_map(|i| half::f16::from_f32(vals[*i]).to_le_bytes())
                .collect()
        };
        let dense = desc(&[2, 3], &[3, 1], Elem::F16);
        let cols = desc(&[2, 3], &[1, 2], Elem::F16);
        let a = dense.load(&bytes(&[0, 1, 2, 3, 4, 5])).unwrap();
        let b = cols.load(&bytes(&[0, 3, 1, 4, 2, 5])).unwrap();
        assert_eq!(a.as_slice().unwrap(), &vals);
        assert_eq!(a, b);
        // A store leaves the bytes past the tensor untouched.
        let mut out = vec![0xAAu8; 14];
        dense.store(&a, &mut out).unwrap();
        assert_eq!(&out[..12], &bytes(&[0, 1, 2, 3, 4, 5])[..]);
        assert_eq!(&out[12..], &[0xAA, 0xAA]);
        let mut out = vec![0u8; 12];
        cols.store(&b, &mut out).unwrap();
        assert_eq!(out, bytes(&[0, 3, 1, 4, 2, 5]));
    }

    /// Every f32 path (dense memcpy, contiguous-row head views, other strides through ndarray,
    /// a misaligned buffer element by element) gives the logical values, and a store writes
    /// only the tensor's own elements.
    #[test]
    fn f32_fast_paths_agree_with_the_element_by_element_layout() {
        // A (2, 3, 4) tensor as a head view of a (2, 4, 3·stride) buffer: rows of 4 contiguous
        // floats, row stride 8 (gaps of 4 untouched floats), batch stride 3·8 + 5.
        let (dims, strides) = ([2usize, 3, 4], [29usize, 8, 1]);
        let logical: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
        let pos = |i: usize| (i / 12) * 29 + ((i / 4) % 3) * 8 + i % 4;
        let head = desc(&dims, &strides, Elem::F32);
        let cols = desc(&[4, 6], &[1, 4], Elem::F32);
        let dense = desc(&dims, &[12, 4, 1], Elem::F32);
        for (d, at) in [
            (&head, &pos as &dyn Fn(usize) -> usize),
            (&cols, &|i: usize| (i % 6) * 4 + i / 6),
            (&dense, &|i: usize| i),
        ] {
            let n = d.required_bytes() / 4;
            // One extra leading float: offset 4 is aligned, offset 1 is not.
            for shift in [4usize, 1] {
                let mut raw = vec![0x5Au8; n * 4 + shift];
                for (i, v) in logical.iter().enumerate() {
                    raw[shift + at(i) * 4..][..4].copy_from_slice(&v.to_le_bytes());
                }
                let a = d.load(&raw[shift..]).unwrap();
                assert_eq!(
                    a.as_slice().unwrap(),
                    &logical[..],
                    "{:?} shift {shift}",
                    d.strides
                );
                let mut out = vec![0x5Au8; n * 4 + shift];
                d.store(&a, &mut out[shift..]).unwrap();
                assert_eq!(out, raw, "{:?} shift {shift}", d.strides);
            }
        }
    }
}
