//! Raw driver symbols, loaded at run time with `libloading` (design D7). Nothing is linked at
//! build time.
//!
//! Two platforms, as HIP itself has:
//! - **AMD**: `libamdhip64` (`libamdhip64.so`, `.so.7`, `.so.6`, `/opt/rocm/lib/libamdhip64.so`),
//!   HIP runtime API.
//! - **NVIDIA**: HIP's NVIDIA platform maps the same calls onto the CUDA driver API in
//!   `libcuda.so.1` / `libcuda.so` (`hipModuleLoadData` → `cuModuleLoadData`, …).
//!
//! This module only declares function-pointer types and resolves them; the checked calls live in
//! [`super::result`]. Handles are opaque pointers (`*mut c_void`) on both platforms and device
//! memory is a 64-bit address ([`DevicePtr`]), so `result` and `safe` are platform-independent.
//!
//! ## `gcnArchName` on AMD
//! HIP has no device attribute for the architecture name, so [`HipFns::get_device_properties`]
//! resolves `hipGetDevicePropertiesR0600` (the symbol ROCm 6/7 headers map
//! `hipGetDeviceProperties` to) and the caller reads only the NUL-terminated string at
//! [`HIP_PROP_GCN_ARCH_NAME_OFFSET`] in an oversized, zeroed, 8-byte aligned buffer
//! ([`HIP_PROP_BUFFER_SIZE`]). The rest of `hipDeviceProp_tR0600` is not declared, so a layout
//! change elsewhere in the struct cannot be misread; `result` checks the name starts with `gfx`.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void};

use libloading::Library;

/// Driver status code (`hipError_t` on AMD, `CUresult` on NVIDIA); 0 is success on both.
pub type Status = c_int;
/// A device address (`hipDeviceptr_t` / `CUdeviceptr`), 64 bits on every supported platform.
pub type DevicePtr = u64;
/// Opaque module handle (`hipModule_t` / `CUmodule`).
pub type RawModule = *mut c_void;
/// Opaque kernel handle (`hipFunction_t` / `CUfunction`).
pub type RawFunction = *mut c_void;
/// Opaque stream handle (`hipStream_t` / `CUstream`); null is the default stream.
pub type RawStream = *mut c_void;
/// Opaque event handle (`hipEvent_t` / `CUevent`).
pub type RawEvent = *mut c_void;
/// Opaque context handle (`CUcontext`; unused on AMD).
pub type RawContext = *mut c_void;

/// Byte offset of `gcnArchName[256]` in ROCm 6/7 `hipDeviceProp_tR0600` (size 1472, align 8).
pub const HIP_PROP_GCN_ARCH_NAME_OFFSET: usize = 1160;
/// Length of the `gcnArchName` field.
pub const HIP_PROP_GCN_ARCH_NAME_LEN: usize = 256;
/// Size of the zeroed buffer handed to `hipGetDevicePropertiesR0600` (> 1472 for safety).
pub const HIP_PROP_BUFFER_SIZE: usize = 4096;
/// `hipMemcpyHostToDevice`.
pub const HIP_MEMCPY_HOST_TO_DEVICE: c_int = 1;
/// `hipMemcpyDeviceToHost`.
pub const HIP_MEMCPY_DEVICE_TO_HOST: c_int = 2;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;

/// Signature shared by `hipModuleLaunchKernel` and `cuLaunchKernel`:
/// function, grid x/y/z, block x/y/z, dynamic shared bytes, stream, kernel params, extra.
pub type LaunchFn = unsafe extern "C" fn(
    RawFunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    RawStream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> Status;

/// HIP runtime API entry points (AMD platform).
#[derive(Debug, Clone, Copy)]
pub struct HipFns {
    /// `hipInit(flags)`.
    pub init: unsafe extern "C" fn(c_uint) -> Status,
    /// `hipGetDeviceCount(int*)`.
    pub get_device_count: unsafe extern "C" fn(*mut c_int) -> Status,
    /// `hipGetDevicePropertiesR0600(hipDeviceProp_tR0600*, int)`; see the module docs.
    pub get_device_properties: unsafe extern "C" fn(*mut c_void, c_int) -> Status,
    /// `hipDeviceGetName(char*, int len, int device)`.
    pub device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> Status,
    /// `hipSetDevice(int)`.
    pub set_device: unsafe extern "C" fn(c_int) -> Status,
    /// `hipMalloc(void**, size_t)`.
    pub malloc: unsafe extern "C" fn(*mut DevicePtr, usize) -> Status,
    /// `hipFree(void*)`.
    pub free: unsafe extern "C" fn(DevicePtr) -> Status,
    /// `hipMemcpy(dst, src, size, kind)`; pointers passed as raw addresses.
    pub memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> Status,
    /// `hipModuleLoadData(hipModule_t*, const void*)`.
    pub module_load_data: unsafe extern "C" fn(*mut RawModule, *const c_void) -> Status,
    /// `hipModuleUnload(hipModule_t)`.
    pub module_unload: unsafe extern "C" fn(RawModule) -> Status,
    /// `hipModuleGetFunction(hipFunction_t*, hipModule_t, const char*)`.
    pub module_get_function:
        unsafe extern "C" fn(*mut RawFunction, RawModule, *const c_char) -> Status,
    /// `hipModuleLaunchKernel`.
    pub launch: LaunchFn,
    /// `hipStreamCreate(hipStream_t*)`.
    pub stream_create: unsafe extern "C" fn(*mut RawStream) -> Status,
    /// `hipStreamSynchronize(hipStream_t)`.
    pub stream_synchronize: unsafe extern "C" fn(RawStream) -> Status,
    /// `hipStreamDestroy(hipStream_t)`.
    pub stream_destroy: unsafe extern "C" fn(RawStream) -> Status,
    /// `hipEventCreate(hipEvent_t*)`.
    pub event_create: unsafe extern "C" fn(*mut RawEvent) -> Status,
    /// `hipEventRecord(hipEvent_t, hipStream_t)`.
    pub event_record: unsafe extern "C" fn(RawEvent, RawStream) -> Status,
    /// `hipEventSynchronize(hipEvent_t)`.
    pub event_synchronize: unsafe extern "C" fn(RawEvent) -> Status,
    /// `hipEventElapsedTime(float* ms, start, stop)`.
    pub event_elapsed_time: unsafe extern "C" fn(*mut f32, RawEvent, RawEvent) -> Status,
    /// `hipEventDestroy(hipEvent_t)`.
    pub event_destroy: unsafe extern "C" fn(RawEvent) -> Status,
    /// `hipGetErrorName(hipError_t)` → static C string.
    pub get_error_name: unsafe extern "C" fn(Status) -> *const c_char,
    /// `hipGetErrorString(hipError_t)` → static C string.
    pub get_error_string: unsafe extern "C" fn(Status) -> *const c_char,
}

/// CUDA driver API entry points (NVIDIA platform of HIP).
#[derive(Debug, Clone, Copy)]
pub struct CudaFns {
    /// `cuInit(flags)`.
    pub init: unsafe extern "C" fn(c_uint) -> Status,
    /// `cuDeviceGetCount(int*)`.
    pub device_get_count: unsafe extern "C" fn(*mut c_int) -> Status,
    /// `cuDeviceGet(CUdevice*, int ordinal)`.
    pub device_get: unsafe extern "C" fn(*mut c_int, c_int) -> Status,
    /// `cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice)`.
    pub device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, c_int) -> Status,
    /// `cuDeviceGetName(char*, int len, CUdevice)`.
    pub device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> Status,
    /// `cuDevicePrimaryCtxRetain(CUcontext*, CUdevice)`.
    pub primary_ctx_retain: unsafe extern "C" fn(*mut RawContext, c_int) -> Status,
    /// `cuDevicePrimaryCtxRelease_v2(CUdevice)`.
    pub primary_ctx_release: unsafe extern "C" fn(c_int) -> Status,
    /// `cuCtxSetCurrent(CUcontext)`.
    pub ctx_set_current: unsafe extern "C" fn(RawContext) -> Status,
    /// `cuMemAlloc_v2(CUdeviceptr*, size_t)`.
    pub mem_alloc: unsafe extern "C" fn(*mut DevicePtr, usize) -> Status,
    /// `cuMemFree_v2(CUdeviceptr)`.
    pub mem_free: unsafe extern "C" fn(DevicePtr) -> Status,
    /// `cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t)`.
    pub memcpy_htod: unsafe extern "C" fn(DevicePtr, *const c_void, usize) -> Status,
    /// `cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t)`.
    pub memcpy_dtoh: unsafe extern "C" fn(*mut c_void, DevicePtr, usize) -> Status,
    /// `cuModuleLoadData(CUmodule*, const void*)`.
    pub module_load_data: unsafe extern "C" fn(*mut RawModule, *const c_void) -> Status,
    /// `cuModuleUnload(CUmodule)`.
    pub module_unload: unsafe extern "C" fn(RawModule) -> Status,
    /// `cuModuleGetFunction(CUfunction*, CUmodule, const char*)`.
    pub module_get_function:
        unsafe extern "C" fn(*mut RawFunction, RawModule, *const c_char) -> Status,
    /// `cuLaunchKernel`.
    pub launch: LaunchFn,
    /// `cuStreamCreate(CUstream*, flags)`.
    pub stream_create: unsafe extern "C" fn(*mut RawStream, c_uint) -> Status,
    /// `cuStreamSynchronize(CUstream)`.
    pub stream_synchronize: unsafe extern "C" fn(RawStream) -> Status,
    /// `cuStreamDestroy_v2(CUstream)`.
    pub stream_destroy: unsafe extern "C" fn(RawStream) -> Status,
    /// `cuEventCreate(CUevent*, flags)`.
    pub event_create: unsafe extern "C" fn(*mut RawEvent, c_uint) -> Status,
    /// `cuEventRecord(CUevent, CUstream)`.
    pub event_record: unsafe extern "C" fn(RawEvent, RawStream) -> Status,
    /// `cuEventSynchronize(CUevent)`.
    pub event_synchronize: unsafe extern "C" fn(RawEvent) -> Status,
    /// `cuEventElapsedTime(float* ms, start, end)`.
    pub event_elapsed_time: unsafe extern "C" fn(*mut f32, RawEvent, RawEvent) -> Status,
    /// `cuEventDestroy_v2(CUevent)`.
    pub event_destroy: unsafe extern "C" fn(RawEvent) -> Status,
    /// `cuGetErrorName(CUresult, const char**)`.
    pub get_error_name: unsafe extern "C" fn(Status, *mut *const c_char) -> Status,
    /// `cuGetErrorString(CUresult, const char**)`.
    pub get_error_string: unsafe extern "C" fn(Status, *mut *const c_char) -> Status,
}

/// The resolved entry points of one platform.
#[derive(Debug, Clone, Copy)]
pub enum Fns {
    /// AMD: HIP runtime.
    Hip(HipFns),
    /// NVIDIA: CUDA driver API.
    Cuda(CudaFns),
}

/// A loaded driver library and its resolved entry points. The function pointers stay valid for
/// as long as this value lives (the `Library` is kept alongside them and never unloaded early).
pub struct Api {
    /// Resolved entry points.
    pub fns: Fns,
    /// Path or soname that was opened (for messages).
    pub library_name: String,
    _lib: Library,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("library_name", &self.library_name)
            .finish_non_exhaustive()
    }
}

/// Library names tried for the AMD platform, in order.
pub const HIP_LIBRARY_NAMES: &[&str] = &[
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "/opt/rocm/lib/libamdhip64.so",
];
/// Library names tried for the NVIDIA platform, in order.
pub const CUDA_LIBRARY_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];

/// Opens a library by name; `Err` carries the loader's message (never panics).
fn open(name: &str) -> Result<Library, String> {
    // SAFETY: loading a shared library runs its initialisers. The names are the vendor driver
    // libraries (libamdhip64, libcuda), whose initialisers are designed to run in any process.
    unsafe { Library::new(name) }.map_err(|e| format!("{name}: {e}"))
}

/// Resolves `name` in `lib` as a value of function-pointer type `T`.
///
/// `T` must be the `unsafe extern "C" fn` type that matches the C declaration of `name`;
/// every call site below pairs a symbol with the signature from the vendor header.
fn sym<T: Copy>(lib: &Library, name: &str) -> Result<T, String> {
    let cname = format!("{name}\0");
    // SAFETY: `T` is the function-pointer type of the C declaration of `name` (see each call
    // site); the pointer is copied out and only used while `Api` keeps `lib` loaded.
    unsafe { lib.get::<T>(cname.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| format!("symbol {name} missing: {e}"))
}

fn load_hip(lib: &Library) -> Result<HipFns, String> {
    Ok(HipFns {
        init: sym(lib, "hipInit")?,
        get_device_count: sym(lib, "hipGetDeviceCount")?,
        get_device_properties: sym(lib, "hipGetDevicePropertiesR0600")?,
        device_get_name: sym(lib, "hipDeviceGetName")?,
        set_device: sym(lib, "hipSetDevice")?,
        malloc: sym(lib, "hipMalloc")?,
        free: sym(lib, "hipFree")?,
        memcpy: sym(lib, "hipMemcpy")?,
        module_load_data: sym(lib, "hipModuleLoadData")?,
        module_unload: sym(lib, "hipModuleUnload")?,
        module_get_function: sym(lib, "hipModuleGetFunction")?,
        launch: sym(lib, "hipModuleLaunchKernel")?,
        stream_create: sym(lib, "hipStreamCreate")?,
        stream_synchronize: sym(lib, "hipStreamSynchronize")?,
        stream_destroy: sym(lib, "hipStreamDestroy")?,
        event_create: sym(lib, "hipEventCreate")?,
        event_record: sym(lib, "hipEventRecord")?,
        event_synchronize: sym(lib, "hipEventSynchronize")?,
        event_elapsed_time: sym(lib, "hipEventElapsedTime")?,
        event_destroy: sym(lib, "hipEventDestroy")?,
        get_error_name: sym(lib, "hipGetErrorName")?,
        get_error_string: sym(lib, "hipGetErrorString")?,
    })
}

fn load_cuda(lib: &Library) -> Result<CudaFns, String> {
    Ok(CudaFns {
        init: sym(lib, "cuInit")?,
        device_get_count: sym(lib, "cuDeviceGetCount")?,
        device_get: sym(lib, "cuDeviceGet")?,
        device_get_attribute: sym(lib, "cuDeviceGetAttribute")?,
        device_get_name: sym(lib, "cuDeviceGetName")?,
        primary_ctx_retain: sym(lib, "cuDevicePrimaryCtxRetain")?,
        primary_ctx_release: sym(lib, "cuDevicePrimaryCtxRelease_v2")?,
        ctx_set_current: sym(lib, "cuCtxSetCurrent")?,
        mem_alloc: sym(lib, "cuMemAlloc_v2")?,
        mem_free: sym(lib, "cuMemFree_v2")?,
        memcpy_htod: sym(lib, "cuMemcpyHtoD_v2")?,
        memcpy_dtoh: sym(lib, "cuMemcpyDtoH_v2")?,
        module_load_data: sym(lib, "cuModuleLoadData")?,
        module_unload: sym(lib, "cuModuleUnload")?,
        module_get_function: sym(lib, "cuModuleGetFunction")?,
        launch: sym(lib, "cuLaunchKernel")?,
        stream_create: sym(lib, "cuStreamCreate")?,
        stream_synchronize: sym(lib, "cuStreamSynchronize")?,
        stream_destroy: sym(lib, "cuStreamDestroy_v2")?,
        event_create: sym(lib, "cuEventCreate")?,
        event_record: sym(lib, "cuEventRecord")?,
        event_synchronize: sym(lib, "cuEventSynchronize")?,
        event_elapsed_time: sym(lib, "cuEventElapsedTime")?,
        event_destroy: sym(lib, "cuEventDestroy_v2")?,
        get_error_name: sym(lib, "cuGetErrorName")?,
        get_error_string: sym(lib, "cuGetErrorString")?,
    })
}

impl Api {
    /// Tries the AMD libraries, then the NVIDIA ones, and returns the first whose symbols all
    /// resolve. `Err` lists every attempt (library missing, or which symbol was absent).
    pub fn load() -> Result<Api, Vec<String>> {
        let mut tried = Vec::new();
        for name in HIP_LIBRARY_NAMES {
            match open(name) {
                Ok(lib) => match load_hip(&lib) {
                    Ok(fns) => {
                        return Ok(Api {
                            fns: Fns::Hip(fns),
                            library_name: (*name).into(),
                            _lib: lib,
                        });
                    }
                    Err(e) => tried.push(format!("{name}: {e}")),
                },
                Err(e) => tried.push(e),
            }
        }
        for name in CUDA_LIBRARY_NAMES {
            match open(name) {
                Ok(lib) => match load_cuda(&lib) {
                    Ok(fns) => {
                        return Ok(Api {
                            fns: Fns::Cuda(fns),
                            library_name: (*name).into(),
                            _lib: lib,
                        });
                    }
                    Err(e) => tried.push(format!("{name}: {e}")),
                },
                Err(e) => tried.push(e),
            }
        }
        Err(tried)
    }
}

/// Marks an opaque driver handle as shareable between threads.
///
/// HIP and CUDA handles (modules, functions, streams, events, contexts) are process-wide
/// objects that the drivers document as usable from any thread; the wrapper only carries the
/// pointer value and never dereferences it on the Rust side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle(pub *mut c_void);

// SAFETY: see the type docs: the pointer is an opaque driver token, valid in every thread of
// the process, and Rust code never dereferences it.
unsafe impl Send for Handle {}
// SAFETY: as above; shared references only copy the token.
unsafe impl Sync for Handle {}

/// Reads a NUL-terminated C string returned by a driver into an owned `String`
/// (`"(null)"` for a null pointer).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that stays valid during the call (the
/// drivers return static strings from their error-name/-string functions).
pub unsafe fn c_str_to_string(p: *const c_char) -> String {
    if p.is_null() {
        return "(null)".into();
    }
    // SAFETY: guaranteed by the caller (non-null, NUL-terminated, valid for the call).
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}
