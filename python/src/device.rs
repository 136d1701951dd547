//! Outputs on a GPU handle: [`DeviceArray`], device memory this module allocated for an output
//! the caller left out of `execute`, handed to consumers (torch) through DLPack without a copy.
//!
//! Lifetime: the memory is an `Arc<DeviceMemory>` shared by the `DeviceArray` and by every
//! DLPack export of it; the export's deleter drops its `Arc` without touching Python (no GIL
//! needed: torch may run deleters on any thread, without the GIL), and the last owner frees the
//! memory (the driver waits for outstanding work on the device before freeing).

use std::ffi::c_void;
use std::os::raw::c_char;
use std::sync::Arc;

use hipdnn::{Buffer, DataType, Error, Handle};
use hipdnn_backend::BufferRef;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::dlpack::{
    DLDataType, DLDevice, DLManagedTensor, DLTENSOR, DLTensor, Place, describe_device,
};

/// Device memory allocated for one output on a GPU handle (`Buffer::<u8>::alloc`).
pub struct DeviceMemory {
    buf: Buffer<u8>,
    addr: u64,
    dev: Arc<hipdnn_hip::Device>,
}

impl DeviceMemory {
    /// `bytes` zero-filled bytes on `handle`'s GPU.
    ///
    /// # Errors
    /// INVALID_VALUE on a CPU handle; the SDK's allocation error.
    pub fn alloc(handle: &Handle, bytes: usize) -> Result<Arc<Self>, Error> {
        let dev = handle
            .gpu_device()
            .ok_or_else(|| Error::invalid_value("device memory needs a GPU handle"))?
            .clone();
        let buf = Buffer::<u8>::alloc(handle, bytes)?;
        let BufferRef::Device { addr, .. } = hipdnn::Bind::bind(&buf) else {
            return Err(Error::invalid_value(
                "Buffer::alloc on a GPU handle gave host memory",
            ));
        };
        Ok(Arc::new(DeviceMemory { buf, addr, dev }))
    }

    /// Device address of the first byte.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Waits for the work queued on the device's default stream (the stream executes run on).
    fn synchronize(&self) -> Result<(), Error> {
        hipdnn_hip::Stream::default_stream(&self.dev)
            .synchronize()
            .map_err(|e| {
                Error::new(
                    hipdnn::ErrorCode::HipdnnBackendError,
                    format!("Stream synchronize failed: {e}"),
                )
            })
    }
}

/// The DLPack element type of an SDK data type.
fn dl_type_of(dt: DataType) -> Option<DLDataType> {
    let (code, bits) = match dt {
        DataType::Int8 => (0, 8),
        DataType::Int32 => (0, 32),
        DataType::Int64 => (0, 64),
        DataType::Uint8 => (1, 8),
        DataType::Half => (2, 16),
        DataType::Float => (2, 32),
        DataType::Double => (2, 64),
        DataType::BFloat16 => (4, 16),
        DataType::Boolean => (6, 8),
        _ => return None,
    };
    Some(DLDataType {
        code,
        bits,
        lanes: 1,
    })
}

/// Bytes per element of `dt`, when DLPack can carry it.
pub fn element_bytes(dt: DataType) -> Option<usize> {
    dl_type_of(dt).map(|t| usize::from(t.bits / 8))
}

/// A tensor in GPU memory that `execute` allocated for an output the caller left out (GPU
/// handles only). A DLPack producer: `torch.from_dlpack(a)` views it without a copy.
#[pyclass(name = "DeviceArray", module = "hipdnn_rs", frozen)]
pub struct DeviceArray {
    mem: Arc<DeviceMemory>,
    shape: Vec<i64>,
    strides: Vec<i64>,
    data_type: DataType,
    device_type: i32,
    ordinal: i32,
}

impl DeviceArray {
    /// A zero-filled device array laid out as `dims`/`strides` (elements) of `data_type` on
    /// `handle`'s GPU, and its memory (to bind).
    ///
    /// # Errors
    /// INVALID_VALUE for a data type DLPack cannot carry, a CPU handle; allocation errors.
    pub fn alloc(
        handle: &Handle,
        dims: &[i64],
        strides: &[i64],
        data_type: DataType,
    ) -> Result<(DeviceArray, Arc<DeviceMemory>), Error> {
        let Place::Gpu {
            device_type,
            ordinal,
            ..
        } = Place::of(handle)
        else {
            return Err(Error::invalid_value("device arrays need a GPU handle"));
        };
        let size = element_bytes(data_type).ok_or_else(|| {
            Error::invalid_value(format!(
                "{} has no DLPack element type",
                data_type.schema_name()
            ))
        })?;
        let extent = if dims.contains(&0) {
            0
        } else {
            1 + dims
                .iter()
                .zip(strides)
                .map(|(d, s)| (d - 1) * s)
                .sum::<i64>()
        };
        let mem = DeviceMemory::alloc(handle, extent.max(0) as usize * size)?;
        Ok((
            DeviceArray {
                mem: mem.clone(),
                shape: dims.to_vec(),
                strides: strides.to_vec(),
                data_type,
                device_type,
                ordinal,
            },
            mem,
        ))
    }
}

/// What a DLPack export of a [`DeviceArray`] owns: the tensor header (first, so a
/// `*mut DLManagedTensor` is a `*mut Export`), its shape and strides, and a share of the memory.
#[repr(C)]
struct Export {
    managed: DLManagedTensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
    _mem: Arc<DeviceMemory>,
}

/// The export's deleter: frees the header and drops its share of the memory. Touches no
/// Python object, so it may run on any thread without the GIL.
unsafe extern "C" fn export_deleter(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` is the first field of an `Export` leaked by `DeviceArray::__dlpack__` with
    // `Box::into_raw` (repr(C): same address); DLPack calls the deleter exactly once, so the
    // box is reclaimed once.
    drop(unsafe { Box::from_raw(m.cast::<Export>()) });
}

/// The capsule's destructor (DLPack Python spec): runs the deleter only when the capsule was
/// never consumed (still named "dltensor"; a consumer renames it "used_dltensor" and calls
/// the deleter itself).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: Python calls this with the GIL held on the capsule being destroyed; IsValid and
    // GetPointer only read it (IsValid sets no error), and a valid "dltensor" capsule made by
    // `__dlpack__` holds a live `Export` nobody else will delete.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) != 1 {
            return;
        }
        let m = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr()).cast::<DLManagedTensor>();
        if let Some(deleter) = m.as_ref().and_then(|m| m.deleter) {
            deleter(m);
        }
    }
}

#[pymethods]
impl DeviceArray {
    /// Extents.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }
    /// Strides in elements (as torch's `stride()`).
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.strides)
    }
    /// Element type, by schema name (`"FLOAT"`, ...).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.data_type.schema_name()
    }
    /// `"cuda:<ordinal>"` (NVIDIA) or `"rocm:<ordinal>"` (AMD).
    #[getter]
    fn device(&self) -> String {
        let kind = if self.device_type == crate::dlpack::KDL_ROCM {
            "rocm"
        } else {
            "cuda"
        };
        format!("{kind}:{}", self.ordinal)
    }
    /// Bytes of device memory (the tensor's extent).
    #[getter]
    fn nbytes(&self) -> usize {
        self.mem.len()
    }
    /// Device address of the first element (as torch's `data_ptr()`).
    fn data_ptr(&self) -> u64 {
        self.mem.addr()
    }
    /// `(device_type, device_id)`: 2 (CUDA) or 10 (ROCm), and the ordinal.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (self.device_type, self.ordinal)
    }
    /// A legacy `"dltensor"` capsule viewing the memory (no copy). The device's default stream
    /// (where executes run) is synchronized first, so the data is ready for any consumer
    /// stream; `stream` is accepted and needs nothing more. `max_version` is accepted (the
    /// capsule is the unversioned one, which the spec allows); `dl_device` must be this
    /// array's device and `copy=True` is refused (BufferError), as the spec says.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<Bound<'py, PyAny>>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = (stream, max_version);
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "DeviceArray.__dlpack__: copy=True is not supported (the export is a view)",
            ));
        }
        if let Some(d) = dl_device
            && d != (self.device_type, self.ordinal)
        {
            return Err(PyBufferError::new_err(format!(
                "DeviceArray.__dlpack__: the array is on {}; cannot export to DLPack device \
                 {d:?}",
                describe_device(self.device_type, self.ordinal)
            )));
        }
        let mem = self.mem.clone();
        py.allow_threads(|| mem.synchronize()).map_err(crate::err)?;
        let ndim = self.shape.len() as i32;
        let dtype = dl_type_of(self.data_type).ok_or_else(|| {
            PyBufferError::new_err(format!(
                "{} has no DLPack element type",
                self.data_type.schema_name()
            ))
        })?;
        let export = Box::new(Export {
            managed: DLManagedTensor {
                dl_tensor: DLTensor {
                    data: self.mem.addr() as usize as *mut c_void,
                    device: DLDevice {
                        device_type: self.device_type,
                        device_id: self.ordinal,
                    },
                    ndim,
                    dtype,
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(export_deleter),
            },
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            _mem: self.mem.clone(),
        });
        let raw = Box::into_raw(export);
        // SAFETY: `raw` is the live box just leaked; the shape and strides vectors it owns
        // never reallocate, so these pointers stay valid until the deleter frees the box.
        unsafe {
            (*raw).managed.dl_tensor.shape = (*raw).shape.as_mut_ptr();
            (*raw).managed.dl_tensor.strides = (*raw).strides.as_mut_ptr();
            (*raw).managed.manager_ctx = raw.cast();
        }
        // SAFETY: `raw` (as its first field, a DLManagedTensor) is valid until its deleter
        // runs; the name is a static C string; the destructor follows the DLPack spec.
        let capsule = unsafe {
            ffi::PyCapsule_New(
                raw.cast(),
                DLTENSOR.as_ptr() as *const c_char,
                Some(capsule_destructor),
            )
        };
        if capsule.is_null() {
            // SAFETY: the capsule was not made, so nobody else holds `raw`.
            unsafe { export_deleter(raw.cast()) };
            return Err(PyErr::fetch(py));
        }
        // SAFETY: `capsule` is a new (owned) reference returned by PyCapsule_New.
        Ok(unsafe { Bound::from_owned_ptr(py, capsule) })
    }
    /// A host copy as a new NumPy array (after waiting for the device's default stream), for
    /// tests and debugging; HipdnnError INVALID_VALUE for a type NumPy lacks (BFLOAT16).
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let Some(dtype) = crate::numpy_dtype(self.data_type) else {
            return Err(crate::err(Error::invalid_value(format!(
                "DeviceArray.numpy: NumPy has no dtype for {}; use torch.from_dlpack",
                self.data_type.schema_name()
            ))));
        };
        let mem = self.mem.clone();
        py.allow_threads(|| mem.synchronize()).map_err(crate::err)?;
        let bytes = self.mem.buf.to_vec().map_err(crate::err)?;
        let np = py.import("numpy")?;
        let flat = np.call_method1("frombuffer", (PyBytes::new(py, &bytes), dtype))?;
        let itemsize: i64 = flat.getattr("itemsize")?.extract()?;
        let strides: Vec<i64> = self.strides.iter().map(|s| s * itemsize).collect();
        let view = py.import("numpy.lib.stride_tricks")?.call_method1(
            "as_strided",
            (
                flat,
                PyTuple::new(py, &self.shape)?,
                PyTuple::new(py, strides)?,
            ),
        )?;
        view.call_method0("copy")
    }
    fn __repr__(&self) -> String {
        format!(
            "DeviceArray(shape={:?}, strides={:?}, dtype={}, device={}, data_ptr={:#x})",
            self.shape,
            self.strides,
            self.data_type.schema_name(),
            self.device(),
            self.mem.addr()
        )
    }
}
