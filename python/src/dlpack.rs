//! The DLPack boundary: a minimal `#[repr(C)]` image of `dlpack.h` (v0.8, the unversioned
//! `DLManagedTensor` that `__dlpack__()` returns in a capsule named `"dltensor"`), the capsule
//! protocol, and the checks that turn an exported tensor (host memory, or device memory of the
//! handle's GPU) into an SDK binding without a copy.
//!
//! Protocol (DLPack's Python specification): the consumer takes the `DLManagedTensor*` out of
//! the capsule, renames the capsule `"used_dltensor"` (so the capsule's own destructor no longer
//! frees it) and calls the tensor's `deleter` once it is done with the memory. [`Imported`]
//! does the last step on drop, with the GIL held (the producers' deleters release Python
//! objects).
//!
//! Streams: a device tensor is exported with `__dlpack__(stream=1)` (CUDA) or
//! `__dlpack__(stream=0)` (ROCm), the values the array-API standard gives for the legacy
//! default stream, which is where the handle's executes run (the device's null stream): the
//! producer (torch) makes that stream wait for the work it queued on its current stream. A
//! plain torch CUDA tensor is read without a capsule while torch's current stream is its
//! default stream, where no wait is needed ([`import`]'s fast path).

use std::ffi::{CStr, c_void};
use std::os::raw::c_char;
use std::sync::Arc;

use hipdnn::{DataType, Error, Handle, TensorAttributes};
use hipdnn_backend::BufferRef;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::device::DeviceMemory;

/// `DLDeviceType::kDLCPU`.
pub const KDL_CPU: i32 = 1;
/// `DLDeviceType::kDLCUDA`.
pub const KDL_CUDA: i32 = 2;
/// `DLDeviceType::kDLROCM`.
pub const KDL_ROCM: i32 = 10;

/// Where a handle executes, as DLPack names devices.
#[derive(Debug, Clone)]
pub enum Place {
    /// A CPU handle: host memory only.
    Cpu,
    /// A GPU handle: DLPack device type [`KDL_CUDA`] (NVIDIA) or [`KDL_ROCM`] (AMD), the
    /// driver ordinal (the `device_id` torch gives for `cuda:<n>`), the architecture.
    Gpu {
        /// DLPack device type of the handle's platform.
        device_type: i32,
        /// Device ordinal.
        ordinal: i32,
        /// Architecture (`sm_90`, `gfx942`).
        arch: String,
    },
}

impl Place {
    /// The place of `handle`.
    pub fn of(handle: &Handle) -> Place {
        match handle.gpu_device() {
            None => Place::Cpu,
            Some(dev) => Place::Gpu {
                device_type: match dev.runtime().platform() {
                    hipdnn_hip::Platform::Nvidia => KDL_CUDA,
                    hipdnn_hip::Platform::Amd => KDL_ROCM,
                },
                ordinal: dev.info().ordinal as i32,
                arch: dev.info().arch.clone(),
            },
        }
    }

    /// How an error message names the handle's device.
    pub fn describe(&self) -> String {
        match self {
            Place::Cpu => "a CPU handle".into(),
            Place::Gpu {
                device_type,
                ordinal,
                arch,
            } => format!(
                "a GPU handle on {} (DLPack device type {device_type}, id {ordinal}, {arch})",
                describe_device(*device_type, *ordinal)
            ),
        }
    }
}

/// How an error message names a DLPack device.
pub fn describe_device(device_type: i32, id: i32) -> String {
    match device_type {
        KDL_CPU => "the CPU".into(),
        KDL_CUDA => format!("CUDA device {id}"),
        3 => "CUDA pinned host memory".into(),
        KDL_ROCM => format!("ROCm device {id}"),
        11 => "ROCm pinned host memory".into(),
        _ => format!("a device of another kind ({device_type})"),
    }
}

/// Whether a tensor on DLPack device `(device_type, id)` can be bound on `place`: `Ok(false)`
/// for host memory (bound as host bytes; on a GPU handle the engine decides whether it takes
/// them), `Ok(true)` for device memory of the handle's GPU, else INVALID_VALUE naming the
/// tensor's device and the handle's.
pub fn check_device(uid: i64, device_type: i32, id: i32, place: &Place) -> Result<bool, Error> {
    if device_type == KDL_CPU {
        return Ok(false);
    }
    if let Place::Gpu {
        device_type: want,
        ordinal,
        ..
    } = place
        && device_type == *want
        && id == *ordinal
    {
        return Ok(true);
    }
    let binds = match place {
        Place::Cpu => "CPU tensors (device type 1) only".to_string(),
        Place::Gpu {
            device_type: want,
            ordinal,
            ..
        } => format!(
            "CPU tensors (device type 1) and tensors on {} (device type {want}, id {ordinal})",
            describe_device(*want, *ordinal)
        ),
    };
    Err(bad(
        uid,
        format!(
            "the tensor is on {} (DLPack device type {device_type}, id {id}) but execute runs \
             on {}, which binds {binds}",
            describe_device(device_type, id),
            place.describe()
        ),
    ))
}

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

/// The name of an unconsumed legacy capsule.
pub(crate) const DLTENSOR: &CStr = c"dltensor";
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
    /// The producer's tensor; null for memory this module allocated (`owned`).
    managed: *mut DLManagedTensor,
    /// Device memory this module allocated for an output (kept alive by the `DeviceArray`
    /// returned for it too).
    _owned: Option<Arc<DeviceMemory>>,
    /// A torch CUDA tensor read without a capsule ([`torch_cuda`]): held so that its memory
    /// outlives the execute.
    _held: Option<Py<PyAny>>,
    /// True for device memory of the handle's GPU (bound as `BufferRef::Device`).
    pub device: bool,
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
        // deleters (NumPy, torch) need to release their Python references. A null `managed`
        // is memory of our own (`owned`), released by the Arc.
        unsafe {
            if self.managed.is_null() {
                return;
            }
            if let Some(deleter) = (*self.managed).deleter {
                deleter(self.managed);
            }
        }
    }
}

impl Imported {
    /// An output allocated here on the handle's device, bound writable.
    pub fn owned(uid: i64, memory: Arc<DeviceMemory>, data_type: DataType) -> Imported {
        Imported {
            managed: std::ptr::null_mut(),
            device: true,
            uid,
            ptr: memory.addr() as usize as *mut u8,
            len: memory.len(),
            _owned: Some(memory),
            _held: None,
            data_type,
            writable: true,
        }
    }

    /// The SDK binding of the memory: `Device` for device memory, else `HostMut` when
    /// writable, `Host` otherwise.
    pub fn binding(&mut self) -> DlBinding<'_> {
        let bytes = if self.device {
            // Device memory is an address (valid on the handle's device until `self` drops:
            // the producer's deleter has not run, or `owned` holds our allocation).
            BufferRef::Device {
                addr: self.ptr as usize as u64,
                len: self.len,
            }
        } else if self.len == 0 {
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
/// one and against the handle's `place` (device type and ordinal); `writable` says how it will
/// be bound.
///
/// When `obj` has `__dlpack_device__`, the device is checked before `__dlpack__` is called, so
/// a refused tensor's capsule is never made (nor consumed). A device tensor is exported with
/// the stream argument of the legacy default stream (module docs).
pub fn import(
    obj: &Bound<'_, PyAny>,
    uid: i64,
    expect: Option<(&TensorAttributes, DataType)>,
    writable: bool,
    place: &Place,
) -> PyResult<Result<Imported, Error>> {
    let py = obj.py();
    if let Some(fast) = torch_cuda(obj, uid, expect, writable, place)? {
        return Ok(fast);
    }
    let mut stream = None;
    if obj.hasattr("__dlpack_device__")? {
        let (device_type, id): (i32, i32) = obj.call_method0("__dlpack_device__")?.extract()?;
        if let Err(e) = check_device(uid, device_type, id, place) {
            return Ok(Err(e));
        }
        // The array-API values for the legacy default stream: 1 on CUDA, 0 on ROCm.
        stream = match device_type {
            KDL_CUDA => Some(1),
            KDL_ROCM => Some(0),
            _ => None,
        };
    }
    let capsule = match stream {
        None => obj.call_method0("__dlpack__")?,
        Some(s) => {
            let kwargs = PyDict::new(py);
            kwargs.set_item("stream", s)?;
            obj.call_method("__dlpack__", (), Some(&kwargs))?
        }
    };
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
        _owned: None,
        _held: None,
        device: false,
        uid,
        ptr: std::ptr::null_mut(),
        len: 0,
        data_type: DataType::Unset,
        writable,
    };
    // SAFETY: `managed` points to the producer's DLManagedTensor, alive until its deleter
    // runs (when `imported` drops); we only read it.
    let t = unsafe { &(*managed).dl_tensor };
    // Checked again on the exported tensor (a producer without `__dlpack_device__`, or one
    // whose capsule disagrees with it).
    match check_device(uid, t.device.device_type, t.device.device_id, place) {
        Ok(device) => imported.device = device,
        Err(e) => return Ok(Err(e)),
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
    let first = (t.data as *mut u8).wrapping_add(t.byte_offset as usize);
    let size = usize::from(t.dtype.bits / 8);
    Ok(finish(
        imported,
        first,
        (dt, size),
        &shape,
        &strides,
        expect,
    ))
}

/// The checks shared by both imports, then the binding's extent: the data type, dims and
/// strides (on the axes of extent > 1) against the graph's tensor `expect`, no negative
/// stride; `first` is the first element's address, `dt` the element type and its bytes.
fn finish(
    mut imported: Imported,
    first: *mut u8,
    (dt, size): (DataType, usize),
    shape: &[i64],
    strides: &[i64],
    expect: Option<(&TensorAttributes, DataType)>,
) -> Result<Imported, Error> {
    let uid = imported.uid;
    let ndim = shape.len();
    if let Some((attrs, want)) = expect {
        // The SDK's rule: bytes (uint8) carry a type without an element type (FP8, ...).
        if dt != want && (dt != DataType::Uint8 || want.has_element_type()) {
            return Err(bad(
                uid,
                format!(
                    "data type {} does not match the graph tensor '{}' ({})",
                    dt.schema_name(),
                    attrs.name,
                    want.schema_name()
                ),
            ));
        }
        if shape != attrs.dims.as_slice() {
            return Err(bad(
                uid,
                format!(
                    "dims {shape:?} do not match the graph tensor '{}' (dims {:?})",
                    attrs.name, attrs.dims
                ),
            ));
        }
        let differs = (0..ndim).any(|i| shape[i] > 1 && strides[i] != attrs.strides[i]);
        if differs {
            return Err(bad(
                uid,
                format!(
                    "strides {strides:?} (elements) do not match the graph tensor '{}' (strides \
                     {:?}); pass an array in the graph's layout (e.g. numpy.ascontiguousarray) \
                     or give the tensor these strides",
                    attrs.name, attrs.strides
                ),
            ));
        }
    }
    if let Some((i, s)) = strides.iter().enumerate().find(|(_, s)| **s < 0) {
        return Err(bad(
            uid,
            format!("stride {s} of axis {i} is negative; pass a copy with positive strides"),
        ));
    }
    let extent = if shape.contains(&0) {
        0
    } else {
        1 + shape
            .iter()
            .zip(strides)
            .map(|(d, s)| (d - 1) * s)
            .sum::<i64>()
    };
    imported.ptr = first;
    imported.len = extent as usize * size;
    imported.data_type = dt;
    Ok(imported)
}

/// The fast path for a torch CUDA tensor on a GPU handle: its address, sizes, strides and
/// element type read through torch's own accessors (`data_ptr()`, `shape`, `stride()`,
/// `dtype`) instead of a DLPack capsule, whose export costs torch 13–20 µs per tensor (measured
/// on an H100). Taken only where the capsule would change nothing: a plain `torch.Tensor` (or
/// `Parameter`) on the handle's CUDA device that does not require grad, of an element type the
/// SDK has, while torch's current stream on that device is its default (the legacy default
/// stream the executes run on, so no wait is needed). Anything else returns `None` and goes
/// through `__dlpack__` (which then raises torch's own errors or makes the streams wait).
/// Every check of the capsule path applies (`finish`).
fn torch_cuda(
    obj: &Bound<'_, PyAny>,
    uid: i64,
    expect: Option<(&TensorAttributes, DataType)>,
    writable: bool,
    place: &Place,
) -> PyResult<Option<Result<Imported, Error>>> {
    let Place::Gpu {
        device_type: KDL_CUDA,
        ordinal,
        ..
    } = place
    else {
        return Ok(None);
    };
    let ty = obj.get_type();
    let (name, module) = (ty.name()?, ty.module()?);
    let plain = matches!(
        (
            name.extract::<String>()?.as_str(),
            module.extract::<String>()?.as_str()
        ),
        ("Tensor", "torch") | ("Parameter", "torch.nn.parameter")
    );
    if !plain
        || !obj.getattr("is_cuda")?.extract::<bool>()?
        || obj.getattr("requires_grad")?.extract::<bool>()?
    {
        return Ok(None);
    }
    let device: i32 = obj.call_method0("get_device")?.extract()?;
    if device != *ordinal {
        return Ok(None);
    }
    let dt = match obj.getattr("dtype")?.str()?.extract::<String>()?.as_str() {
        "torch.float32" => (DataType::Float, 4),
        "torch.float16" => (DataType::Half, 2),
        "torch.bfloat16" => (DataType::BFloat16, 2),
        "torch.float64" => (DataType::Double, 8),
        "torch.int8" => (DataType::Int8, 1),
        "torch.uint8" => (DataType::Uint8, 1),
        "torch.int32" => (DataType::Int32, 4),
        "torch.int64" => (DataType::Int64, 8),
        "torch.bool" => (DataType::Boolean, 1),
        _ => return Ok(None),
    };
    let py = obj.py();
    let cuda = py.import("torch.cuda")?;
    let stream = cuda.call_method1("current_stream", (device,))?;
    if stream.getattr("cuda_stream")?.extract::<u64>()? != 0 {
        return Ok(None);
    }
    let shape: Vec<i64> = obj.getattr("shape")?.extract()?;
    let strides: Vec<i64> = obj.call_method0("stride")?.extract()?;
    let ptr: u64 = obj.call_method0("data_ptr")?.extract()?;
    let imported = Imported {
        managed: std::ptr::null_mut(),
        _owned: None,
        _held: Some(obj.clone().unbind()),
        device: true,
        uid,
        ptr: std::ptr::null_mut(),
        len: 0,
        data_type: DataType::Unset,
        writable,
    };
    Ok(Some(finish(
        imported,
        ptr as usize as *mut u8,
        dt,
        &shape,
        &strides,
        expect,
    )))
}
