//! The host values of one execution of the CPU reference engine: [`Env`], what one node's run
//! (in [`super::nodes`]) reads and writes — bound buffers by UID, constants, and the arrays
//! computed so far — with the buffer rules of reading (f32 or exact integers) and storing
//! (rounded to the tensor's data type, written at its strided positions when bound).
//!
//! A leaf below the nodes: it knows tensors and bindings, not steps or plans; which buffers
//! are bound and checked is decided by [`super::exec`] before it builds one.
//!
//! Values are shared, not copied: a bound input is converted to f32 once per execute (on its
//! first read) and kept behind an [`Arc`], so every later read is a reference count;
//! [`Env::view`] reads an aligned f32 host input in place, with its strides, converting
//! nothing; a stored value is rounded in place and kept without another copy.

use super::dtype::Elem;
use super::tensor::TensorDesc;
use hipdnn_backend::{BufferRef, PluginError, PluginResult, TensorBinding};
use ndarray::{ArrayD, ArrayViewD, IxDyn, ShapeBuilder};
use std::collections::HashMap;
use std::sync::Arc;

/// Host values of one execution: bound buffers by UID and the arrays computed so far.
pub(super) struct Env<'p, 'a, 'b> {
    tensors: &'p HashMap<i64, TensorDesc>,
    bindings: &'a mut [TensorBinding<'b>],
    index: HashMap<i64, usize>,
    values: HashMap<i64, Arc<ArrayD<f32>>>,
}

/// A read-only value from [`Env::view`]: the bound buffer itself, or a shared array.
pub(super) enum Val<'b> {
    /// An f32 host input read in place (its own strides; no copy).
    Buffer(ArrayViewD<'b, f32>),
    /// A converted input, constant or computed value (dense row-major).
    Shared(Arc<ArrayD<f32>>),
}

impl Val<'_> {
    /// The value as a view (strided for [`Val::Buffer`]).
    pub(super) fn view(&self) -> ArrayViewD<'_, f32> {
        match self {
            Val::Buffer(v) => v.view(),
            Val::Shared(a) => a.view(),
        }
    }
}

/// `a` with `dims` (same volume), copied only when the shape differs and `a` is not in
/// standard (row-major, contiguous) layout.
pub(super) fn reshape(a: ArrayD<f32>, dims: &[usize]) -> ArrayD<f32> {
    if a.shape() == dims {
        return a;
    }
    if a.is_standard_layout() {
        return a
            .into_shape_with_order(IxDyn(dims))
            .expect("volume checked at plan time");
    }
    let v: Vec<f32> = a.iter().copied().collect();
    ArrayD::from_shape_vec(IxDyn(dims), v).expect("volume checked at plan time")
}

/// The f32 elements of `bytes` in place when it is 4-byte aligned and holds whole elements,
/// else `None`.
fn f32s(bytes: &[u8]) -> Option<&[f32]> {
    bytemuck::try_cast_slice(bytes).ok()
}

/// The f32 tensor `d` read in place from `bytes` with its own strides, when `bytes` is 4-byte
/// aligned, holds whole elements and the strides give each element its own position (else
/// `None`: the caller converts).
fn in_place<'b>(d: &TensorDesc, bytes: &'b [u8]) -> Option<ArrayViewD<'b, f32>> {
    if d.elem != Elem::F32 || d.dims.contains(&0) {
        return None;
    }
    let need = d.required_bytes();
    let data = f32s(bytes.get(..need)?)?;
    ArrayViewD::from_shape(IxDyn(&d.dims).strides(IxDyn(&d.strides)), data).ok()
}

impl<'p, 'a, 'b> Env<'p, 'a, 'b> {
    /// An environment over the plan's `tensors` and the variant pack's `bindings`, `index`
    /// giving each bound UID's position in `bindings` (checked by the caller), with no value
    /// computed yet.
    pub(super) fn new(
        tensors: &'p HashMap<i64, TensorDesc>,
        bindings: &'a mut [TensorBinding<'b>],
        index: HashMap<i64, usize>,
    ) -> Self {
        Env {
            tensors,
            bindings,
            index,
            values: HashMap::new(),
        }
    }

    /// The descriptor of `uid`.
    pub(super) fn desc(&self, uid: i64) -> &'p TensorDesc {
        &self.tensors[&uid]
    }

    /// The value of `uid` (bound buffer, constant or computed), as a dense row-major f32
    /// array shared with the environment: converted on the first read, a reference count
    /// after.
    pub(super) fn get(&mut self, uid: i64) -> PluginResult<Arc<ArrayD<f32>>> {
        if let Some(v) = self.values.get(&uid) {
            return Ok(Arc::clone(v));
        }
        let d = self.desc(uid);
        let v = if let Some(&i) = self.index.get(&uid) {
            match &self.bindings[i].data {
                BufferRef::Host(s) => d.load(s)?,
                BufferRef::HostMut(s) => d.load(s)?,
                BufferRef::Device { .. } => unreachable!("refused before execution"),
            }
        } else if let Some(v) = d.value_array() {
            v
        } else {
            return Err(PluginError::bad_param(format!(
                "tensor uid {uid} ('{}') is not in the variant pack",
                d.name
            )));
        };
        let v = Arc::new(v);
        self.values.insert(uid, Arc::clone(&v));
        Ok(v)
    }

    /// The value of `uid` for a reader that takes any strides: an f32 input bound read-only in
    /// host memory ([`BufferRef::Host`], 4-byte aligned) is read in place, converting and
    /// copying nothing; anything else is [`Env::get`]'s shared array.
    ///
    /// # Errors
    /// As [`Env::get`].
    pub(super) fn view(&mut self, uid: i64) -> PluginResult<Val<'b>> {
        if !self.values.contains_key(&uid) {
            if let Some(&i) = self.index.get(&uid) {
                if let BufferRef::Host(s) = &self.bindings[i].data {
                    let s: &'b [u8] = s;
                    if let Some(v) = in_place(self.desc(uid), s) {
                        return Ok(Val::Buffer(v));
                    }
                }
            }
        }
        Ok(Val::Shared(self.get(uid)?))
    }

    /// The bound host bytes of `uid` and its descriptor, `None` when `uid` is not bound or
    /// already has a value in the environment (a computed value wins over the buffer).
    pub(super) fn bound_bytes(&self, uid: i64) -> Option<(&TensorDesc, &[u8])> {
        if self.values.contains_key(&uid) {
            return None;
        }
        let &i = self.index.get(&uid)?;
        let bytes: &[u8] = match &self.bindings[i].data {
            BufferRef::Host(s) => s,
            BufferRef::HostMut(s) => s,
            BufferRef::Device { .. } => unreachable!("refused before execution"),
        };
        Some((self.desc(uid), bytes))
    }

    /// The read-only bound host bytes of `uid` ([`BufferRef::Host`]) and its descriptor, for
    /// the whole execute (a later [`Env::dense_f32_output`] may be taken while they are
    /// held); `None` when `uid` is not bound read-only or already has a value.
    pub(super) fn bound_input_bytes(&self, uid: i64) -> Option<(&'p TensorDesc, &'b [u8])> {
        if self.values.contains_key(&uid) {
            return None;
        }
        let &i = self.index.get(&uid)?;
        match &self.bindings[i].data {
            BufferRef::Host(s) => Some((self.desc(uid), s)),
            _ => None,
        }
    }

    /// The bound output buffer of `uid` as its f32 elements in row-major order, when it is a
    /// writable host buffer of an F32 tensor in dense row-major layout, 4-byte aligned, with
    /// no value computed yet: a kernel writes its result there directly (no array allocated,
    /// zeroed and copied). `None` otherwise (the caller computes an array and [`Env::put`]s
    /// it). A later read of `uid` loads the buffer.
    pub(super) fn dense_f32_output(&mut self, uid: i64) -> Option<&mut [f32]> {
        if self.values.contains_key(&uid) {
            return None;
        }
        let d: &'p TensorDesc = self.tensors.get(&uid)?;
        if d.elem != Elem::F32 || !d.is_dense_row_major() {
            return None;
        }
        let &i = self.index.get(&uid)?;
        match &mut self.bindings[i].data {
            BufferRef::HostMut(s) => {
                bytemuck::try_cast_slice_mut(s.get_mut(..d.volume() * 4)?).ok()
            }
            _ => None,
        }
    }

    /// The exact integer values of the INT32 / INT64 tensor `uid` in row-major order: read
    /// from its bound buffer without going through f32; a computed (virtual) or constant
    /// tensor, which the engine holds as f32, is converted back.
    ///
    /// # Errors
    /// As [`Env::get`]; `BAD_PARAM` when `uid` is not an integer tensor.
    pub(super) fn get_ints(&mut self, uid: i64) -> PluginResult<Vec<i64>> {
        if !self.values.contains_key(&uid) {
            if let Some(&i) = self.index.get(&uid) {
                let d = self.desc(uid);
                let ints = match &self.bindings[i].data {
                    BufferRef::Host(s) => d.load_ints(s)?,
                    BufferRef::HostMut(s) => d.load_ints(s)?,
                    BufferRef::Device { .. } => unreachable!("refused before execution"),
                };
                return ints.ok_or_else(|| {
                    PluginError::bad_param(format!(
                        "tensor uid {uid} ('{}') is {:?}, not an integer tensor",
                        d.name, d.elem
                    ))
                });
            }
        }
        Ok(self.get(uid)?.iter().map(|&v| v as i64).collect())
    }

    /// The first element of `uid`.
    pub(super) fn scalar(&mut self, uid: i64) -> PluginResult<f32> {
        let v = self.get(uid)?;
        v.iter()
            .next()
            .copied()
            .ok_or_else(|| PluginError::bad_param(format!("tensor uid {uid} is empty")))
    }

    /// Removes and returns the environment's value of `uid` (after its last reader: its memory
    /// is freed or recycled for a later value); a later read would convert the bound buffer
    /// again or fail.
    pub(super) fn release(&mut self, uid: i64) -> Option<Arc<ArrayD<f32>>> {
        self.values.remove(&uid)
    }

    /// Stores `v` as `uid`: rounded to its data type in place (f32 values are kept as they
    /// are), written to its buffer when bound, and kept without another copy.
    pub(super) fn put(&mut self, uid: i64, v: ArrayD<f32>) -> PluginResult<()> {
        let d = self.desc(uid);
        let mut v = reshape(v, &d.dims);
        if d.elem != Elem::F32 {
            v.mapv_inplace(|x| d.elem.quantize(x));
        }
        if let Some(&i) = self.index.get(&uid) {
            match &mut self.bindings[i].data {
                BufferRef::HostMut(s) => d.store(&v, s)?,
                _ => unreachable!("checked before execution"),
            }
        }
        self.values.insert(uid, Arc::new(v));
        Ok(())
    }
}
