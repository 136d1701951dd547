//! The DLPack boundary: a minimal `#[repr(C)]` image of `dlpack.h` (v0.8, the unversioned
//! `DLManagedTensor` that `__dlpack__()` returns in a capsule named `"dltensor"`), the capsule
//! protocol, and the checks that turn an exported CPU tensor into an SDK binding without a copy.
//!
//! Protocol (DLPack's Python specification): the consumer takes the `DLManagedTensor*` out of
//! the capsule, renames the capsule `"used_dltensor"` (so the capsule's own destructor no longer
//! frees it) and calls the tensor's `deleter` once it is done with the memory. [`Imported`]
//! does the last step on drop, with the GIL held (the producers' deleters release Python
//! objects).

use std::ffi::{CStr, c_void};
use std::os::raw::c_char;

use hipdnn::{DataType, Error, TensorAttributes};
use hipdnn_backend::BufferRef;
use pyo3::ffi;
use pyo3::prelude::*;

/// `DLDeviceType::kDLCPU`.
pub const KDL_CPU: i32 = 1;

/// `DLDevice`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLDevice {
    /// `DLDeviceType` (1 = CPU, 2 = CUDA, 10 = ROCm, ...).
    pub device_type: i32,
    /// Device ordinal.
    pub device_id: i32,
}

/// `DLDataType`: type code, bits per lane, lanes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLDataType {
    /// `DLDataTypeCode` (0 int, 1 uint, 2 float, 4 bfloat, 6 bool, ...).
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`.
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    /// Base pointer (the data start is `data + byte_offset`).
    pub data: *mut c_void,
    /// Where the memory is.
    pub device: DLDevice,
    /// Number of dims.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or null for compact row-major.
    pub strides: *mut i64,
    /// Offset in bytes of the first element from `data`.
    pub byte_offset: u64,
}

/// `DLManagedTensor`.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// Producer context.
    pub manager_ctx: *mut c_void,
    /// Called by the consumer when done (may be null).
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";

/// The SDK data type of a DLPack element type, if the SDK has one.
pub fn data_type_of(t: DLDataType) -> Option<DataType> {
    if t.lanes != 1 {
        return None;
    }
    Some(match (t.code, t.bits) {
        (0, 8) => DataType::Int8,
        (0, 32) => DataType::Int32,
        (0, 64) => DataType::Int64,
        (1, 8) => DataType::Uint8,
        (2, 16) => DataType::Half,
        (2, 32) => DataType::Float,
        (2, 64) => DataType::Double,
        (4, 16) => DataType::BFloat16,
        (6, 8) => DataType::Boolean,
        _ => return None,
    })
}

/// A tensor taken from a DLPack capsule: its memory stays valid until this is dropped, which
/// calls the producer's deleter.
pub struct Imported {
    managed: *mut DLManagedTensor,
    /// The UID it is bound to.
    pub uid: i64,
    /// First byte of the tensor's extent.
    pub ptr: *mut u8,
    /// Bytes from `ptr` to the end of the last element.
    pub len: usize,
    /// Element type.
    pub data_type: DataType,
    /// Bound writable (`&mut [u8]`) rather than read-only.
    pub writable: bool,
}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: `managed` came out of a "dltensor" capsule that we renamed "used_dltensor",
        // so we own it and call its deleter exactly once (here); the caller holds the GIL
        // (Imported values only live inside a #[pymethods] call), which the producers'
        // deleters (NumPy, torch) need to release their Python references.
        unsafe {
            if let Some(deleter) = (*self.managed).deleter {
                deleter(self.managed);
            }
        }
    }
}

impl Imported {
    /// The SDK binding of the memory: `HostMut` when writable, `Host` otherwise.
    pub fn binding(&mut self) -> DlBinding<'_> {
        let bytes = if self.len == 0 {
            BufferRef::Host(&[])
        } else if self.writable {
            // SAFETY: `ptr..ptr+len` lies inside the producer's allocation (the extent computed
            // from the checked shape and strides, all non-negative), which stays alive until
            // `self` is dropped (the deleter has not run); the binding borrows `self`
            // mutably, so it cannot outlive it; `execute` checked that no other binding
            // overlaps a writable one, so this is the only reference to these bytes.
            BufferRef::HostMut(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
        } else {
            // SAFETY: as above; a read-only binding may overlap other read-only bindings.
            BufferRef::Host(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
        };
        DlBinding {
            bytes,
            data_type: self.data_type,
            writable: self.writable,
        }
    }
}

/// One imported tensor as an SDK binding ([`hipdnn::Bind`]).
pub struct DlBinding<'a> {
    bytes: BufferRef<'a>,
    data_type: DataType,
    writable: bool,
}

impl<'a> hipdnn::Bind<'a> for DlBinding<'a> {
    fn bind(self) -> BufferRef<'a> {
        self.bytes
    }
    fn element_type(&self) -> Option<DataType> {
        Some(self.data_type)
    }
    fn is_read_only(&self) -> bool {
        !self.writable
    }
}

fn bad(uid: i64, what: String) -> Error {
    Error::invalid_value(format!("execute: tensor uid {uid}: {what}"))
}

/// Takes the DLPack tensor out of `obj.__dlpack__()` and checks it against the graph's tensor
/// `expect` (dims, strides on the axes of extent > 1, data type `dtype`) when the graph has
/// one; `writable` says how it will be bound.
pub fn import(
    obj: &Bound<'_, PyAny>,
    uid: i64,
    expect: Option<(&TensorAttributes, DataType)>,
    writable: bool,
) -> PyResult<Result<Imported, Error>> {
    let capsule = obj.call_method0("__dlpack__")?;
    // SAFETY: `capsule` is a live Python object (we hold a reference and the GIL).
    let valid = unsafe { ffi::PyCapsule_IsValid(capsule.as_ptr(), DLTENSOR.as_ptr()) };
    if valid != 1 {
        return Ok(Err(bad(
            uid,
            "__dlpack__() did not return a capsule named \"dltensor\" (already consumed, or a \
             versioned capsule)"
                .into(),
        )));
    }
    // SAFETY: the capsule is valid and named "dltensor" (checked just above), so its pointer is
    // the producer's DLManagedTensor*.
    let managed = unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), DLTENSOR.as_ptr()) }
        as *mut DLManagedTensor;
    if managed.is_null() {
        return Err(PyErr::fetch(obj.py()));
    }
    // SAFETY: renaming a valid capsule; the name is a static C string (the capsule keeps the
    // pointer, not a copy). From here on the capsule's destructor leaves the tensor to us.
    let renamed = unsafe {
        ffi::PyCapsule_SetName(capsule.as_ptr(), USED_DLTENSOR.as_ptr() as *const c_char)
    };
    if renamed != 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    // `imported` owns the tensor from here: every return below drops it (the deleter runs).
    let mut imported = Imported {
        managed,
        uid,
        ptr: std::ptr::null_mut(),
        len: 0,
        data_type: DataType::Unset,
        writable,
    };
    // SAFETY: `managed` points to the producer's DLManagedTensor, alive until its deleter
    // runs (when `imported` drops); we only read it.
    let t = unsafe { &(*managed).dl_tensor };
    if t.device.device_type != KDL_CPU {
        return Ok(Err(bad(
            uid,
            format!(
                "the tensor is on DLPack device type {} (id {}); this round binds CPU memory only \
                 (device type 1)",
                t.device.device_type, t.device.device_id
            ),
        )));
    }
    let Some(dt) = data_type_of(t.dtype) else {
        return Ok(Err(bad(
            uid,
            format!(
                "DLPack element type (code {}, bits {}, lanes {}) has no hipDNN data type",
                t.dtype.code, t.dtype.bits, t.dtype.lanes
            ),
        )));
    };
    let ndim = usize::try_from(t.ndim).unwrap_or(0);
    let shape: Vec<i64> = if ndim == 0 {
        Vec::new()
    } else {
        // SAFETY: DLPack guarantees `shape` holds `ndim` extents.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec()
    };
    let strides: Vec<i64> = if t.strides.is_null() {
        let order: Vec<usize> = (0..ndim).collect();
        hipdnn::packed_strides(&shape, &order)
    } else {
        // SAFETY: non-null `strides` holds `ndim` strides (DLPack).
        unsafe { std::slice::from_raw_parts(t.strides, ndim) }.to_vec()
    };
    if let Some((attrs, want)) = expect {
        if dt != want {
            return Ok(Err(bad(
                uid,
                format!(
                    "data type {} does not match the graph tensor '{}' ({})",
                    dt.schema_name(),
                    attrs.name,
                    want.schema_name()
                ),
            )));
        }
        if shape != attrs.dims {
            return Ok(Err(bad(
                uid,
                format!(
                    "dims {shape:?} do not match the graph tensor '{}' (dims {:?})",
                    attrs.name, attrs.dims
                ),
            )));
        }
        let differs = (0..ndim).any(|i| shape[i] > 1 && strides[i] != attrs.strides[i]);
        if differs {
            return Ok(Err(bad(
                uid,
                format!(
                    "strides {strides:?} (elements) do not match the graph tensor '{}' (strides \
                     {:?}); pass an array in the graph's layout (e.g. numpy.ascontiguousarray) \
                     or give the tensor these strides",
                    attrs.name, attrs.strides
                ),
            )));
        }
    }
    if let Some((i, s)) = strides.iter().enumerate().find(|(_, s)| **s < 0) {
        return Ok(Err(bad(
            uid,
            format!("stride {s} of axis {i} is negative; pass a copy with positive strides"),
        )));
    }
    let size = usize::from(t.dtype.bits / 8);
    let extent = if shape.contains(&0) {
        0
    } else {
        1 + shape
            .iter()
            .zip(&strides)
            .map(|(d, s)| (d - 1) * s)
            .sum::<i64>()
    };
    imported.ptr = (t.data as *mut u8).wrapping_add(t.byte_offset as usize);
    imported.len = extent as usize * size;
    imported.data_type = dt;
    Ok(Ok(imported))
}
