//! The host values of one execution of the CPU reference engine: [`Env`], what one node's run
//! (in [`super::nodes`]) reads and writes — bound buffers by UID, constants, and the arrays
//! computed so far — with the buffer rules of reading (f32 or exact integers) and storing
//! (rounded to the tensor's data type, written at its strided positions when bound).
//!
//! A leaf below the nodes: it knows tensors and bindings, not steps or plans; which buffers
//! are bound and checked is decided by [`super::exec`] before it builds one.

use super::tensor::TensorDesc;
use hipdnn_backend::{BufferRef, PluginError, PluginResult, TensorBinding};
use ndarray::{ArrayD, IxDyn};
use std::collections::HashMap;

/// Host values of one execution: bound buffers by UID and the arrays computed so far.
pub(super) struct Env<'p, 'a, 'b> {
    tensors: &'p HashMap<i64, TensorDesc>,
    bindings: &'a mut [TensorBinding<'b>],
    index: HashMap<i64, usize>,
    values: HashMap<i64, ArrayD<f32>>,
}

/// `a` with `dims` (same volume), copied only when the shape differs.
pub(super) fn reshape(a: ArrayD<f32>, dims: &[usize]) -> ArrayD<f32> {
    if a.shape() == dims {
        return a;
    }
    let v: Vec<f32> = a.iter().copied().collect();
    ArrayD::from_shape_vec(IxDyn(dims), v).expect("volume checked at plan time")
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
    pub(super) fn desc(&self, uid: i64) -> &TensorDesc {
        &self.tensors[&uid]
    }

    /// The value of `uid` (bound buffer, constant or computed), as f32.
    pub(super) fn get(&mut self, uid: i64) -> PluginResult<ArrayD<f32>> {
        if let Some(v) = self.values.get(&uid) {
            return Ok(v.clone());
        }
        let d = self.desc(uid).clone();
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
        self.values.insert(uid, v.clone());
        Ok(v)
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

    /// Stores `v` as `uid`: rounded to its data type, written to its buffer when bound.
    pub(super) fn put(&mut self, uid: i64, v: ArrayD<f32>) -> PluginResult<()> {
        let d = self.desc(uid).clone();
        let v = reshape(v, &d.dims).mapv(|x| d.elem.quantize(x));
        if let Some(&i) = self.index.get(&uid) {
            match &mut self.bindings[i].data {
                BufferRef::HostMut(s) => d.store(&v, s)?,
                _ => unreachable!("checked before execution"),
            }
        }
        self.values.insert(uid, v);
        Ok(())
    }
}
