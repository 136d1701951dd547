//! Raw driver calls behind one platform-neutral interface, the [`Driver`] trait.
//!
//! This is the only module where AMD and NVIDIA differ. Three sources implement [`Driver`]:
//! - **AMD, loaded at run time** ([`load_at_run_time`], the default): `libamdhip64`
//!   (`libamdhip64.so`, `.so.7`, `.so.6`, `.so.5`, `/opt/rocm/lib/libamdhip64.so`), HIP runtime
//!   API, opened with `libloading`.
//! - **NVIDIA, loaded at run time**: HIP's NVIDIA platform maps the same calls onto the CUDA
//!   driver API in `libcuda.so.1` / `libcuda.so` (`hipModuleLoadData` → `cuModuleLoadData`, …).
//! - **AMD, linked at build time** (`linked`, cargo feature `hip-sys`): the same HIP calls,
//!   bound through the `hip-sys` crate (`hip_sys::hiprt`), whose build script links
//!   `libamdhip64` (found through `HIP_PATH`, `ROCM_PATH`, `hipconfig -p` or `/opt/rocm`). With
//!   the feature, [`load`] returns this driver and nothing is opened at run time (so there is no
//!   NVIDIA path in that build).
//!
//! Every [`Driver`] method performs one HIP call (or the platform call HIP maps it to) and
//! returns a [`Call`]: the raw status plus the HIP and platform call names, so that
//! [`super::result`] turns it into a `Result` without knowing the platform. Handles are opaque
//! pointers (`*mut c_void`) on both platforms and device memory is a 64-bit address
//! ([`DevicePtr`]), so `result` and `safe` are platform-independent.
//!
//! ## Why the linked driver calls through `Status`-typed pointers
//! `hip-sys` declares `hipError_t` as a Rust `enum`; a status the bindings do not list (a newer
//! runtime's code) would be an invalid enum value, which is undefined behaviour in Rust. The
//! linked driver therefore takes each symbol's address from `hip-sys` (so the linker, not
//! `dlopen`, resolves it) and calls it through the same C-ABI-identical function-pointer types
//! as the loaded driver, returning a plain `c_int`.
//!
//! ## `gcnArchName` on AMD
//! HIP has no device attribute for the architecture name, so the AMD driver calls
//! `hipGetDeviceProperties` into an oversized, zeroed, 8-byte aligned buffer
//! ([`HIP_PROP_BUFFER_SIZE`]) and reads only the NUL-terminated string at the offset of
//! `gcnArchName` in the struct layout that this symbol fills:
//! - `hipGetDevicePropertiesR0600` (the symbol ROCm 6/7 headers map `hipGetDeviceProperties`
//!   to; `hipDeviceProp_tR0600`, 1472 bytes): offset [`HIP_PROP_R0600_GCN_ARCH_NAME_OFFSET`];
//! - otherwise `hipGetDeviceProperties` (ROCm 5.x, e.g. Debian 12's `libamdhip64-5` 5.2.3, and
//!   the compatibility symbol of ROCm 6/7; `hipDeviceProp_t`, 792 bytes): offset
//!   [`HIP_PROP_R0000_GCN_ARCH_NAME_OFFSET`] (the linked driver takes it from `hip-sys`'s struct).
//!
//! The rest of the struct is not read, so a layout change elsewhere cannot be misread;
//! `result` checks that the name looks like an architecture.

#![allow(non_camel_case_types)]

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

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
/// Opaque context handle (`CUcontext`; null on AMD).
pub type RawContext = *mut c_void;
/// Opaque graph handle (`hipGraph_t` / `CUgraph`): launches recorded by a stream capture.
pub type RawGraph = *mut c_void;
/// Opaque executable graph (`hipGraphExec_t` / `CUgraphExec`): an instantiated [`RawGraph`].
pub type RawGraphExec = *mut c_void;
/// `hipStreamCaptureModeRelaxed` / `CU_STREAM_CAPTURE_MODE_RELAXED`: other threads may make
/// calls that are unsafe during a capture (allocations) without invalidating it.
pub const STREAM_CAPTURE_MODE_RELAXED: c_int = 2;
/// `hipStreamNonBlocking` / `CU_STREAM_NON_BLOCKING`: no implicit synchronization with the
/// default (null) stream.
pub const STREAM_NON_BLOCKING: c_uint = 1;
/// `hipErrorNotSupported` / `CUDA_ERROR_NOT_SUPPORTED` (801 on both): the status a graph call
/// returns when the loaded library lacks the graph API (its symbols did not resolve).
pub const STATUS_NOT_SUPPORTED: Status = 801;

/// Byte offset of `gcnArchName[256]` in ROCm 6/7 `hipDeviceProp_tR0600` (size 1472, align 8).
pub const HIP_PROP_R0600_GCN_ARCH_NAME_OFFSET: usize = 1160;
/// Byte offset of `gcnArchName[256]` in the ROCm 5.x `hipDeviceProp_t` (size 792, align 8),
/// which `hipGetDeviceProperties` fills (checked against Debian 12's 5.2.3 header).
pub const HIP_PROP_R0000_GCN_ARCH_NAME_OFFSET: usize = 396;
/// Length of the `gcnArchName` field.
pub const HIP_PROP_GCN_ARCH_NAME_LEN: usize = 256;
/// Size of the zeroed buffer handed to `hipGetDeviceProperties*` (larger than either layout).
pub const HIP_PROP_BUFFER_SIZE: usize = 4096;
/// `hipMemcpyHostToDevice`.
pub const HIP_MEMCPY_HOST_TO_DEVICE: c_int = 1;
/// `hipMemcpyDeviceToHost`.
pub const HIP_MEMCPY_DEVICE_TO_HOST: c_int = 2;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;

/// Which platform a [`Driver`] drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// AMD GPUs through libamdhip64 (loaded or linked).
    Amd,
    /// NVIDIA GPUs through the CUDA driver (libcuda), HIP's NVIDIA platform.
    Nvidia,
}

/// The outcome of one raw call: its status and the names to report it under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The HIP API name (`hipModuleLoadData`), on every platform.
    pub hip: &'static str,
    /// The platform call HIP maps it to (`cuModuleLoadData`); `None` on AMD, where the HIP
    /// call is the platform call.
    pub platform: Option<&'static str>,
    /// The raw status (0 = success).
    pub status: Status,
}

/// One platform's raw calls. Each method makes exactly the driver call its name says (on
/// NVIDIA, the CUDA driver call HIP maps it to; a few also call `cuDeviceGet` first and report
/// that call if it fails) and returns its [`Call`]; out-values are written only on success.
///
/// Methods whose arguments the driver cannot validate are `unsafe fn` with a `# Safety`
/// section; the others take only out-references and plain values.
pub trait Driver: Send + Sync {
    /// The platform.
    fn platform(&self) -> Platform;
    /// The library opened (`libcuda.so.1`), or `libamdhip64 (linked by hip-sys)`.
    fn library_name(&self) -> &str;
    /// The name under which a platform call is reported next to its HIP name: `Some(cuda)` on
    /// NVIDIA, `None` on AMD. Used for failures detected before any call is made.
    fn platform_call(&self, cuda: &'static str) -> Option<&'static str>;
    /// The driver's name and description of `status` (`hipGetErrorName`/`String`,
    /// `cuGetErrorName`/`String`; `CUresult <n>` / `unknown error` for codes CUDA does not know).
    fn error_name_and_text(&self, status: Status) -> (String, String);

    /// `hipInit(0)` / `cuInit(0)`.
    fn init(&self) -> Call;
    /// `hipGetDeviceCount` / `cuDeviceGetCount`.
    fn device_count(&self, out: &mut c_int) -> Call;
    /// `hipDriverGetVersion` / `cuDriverGetVersion`: the driver's version number (CUDA:
    /// `1000·major + 10·minor`, e.g. 12040 for 12.4; HIP: the runtime's encoding).
    fn driver_version(&self, out: &mut c_int) -> Call;
    /// The architecture name of device `ordinal`: `gcnArchName` from `hipGetDeviceProperties`
    /// on AMD (e.g. `gfx942:sramecc+:xnack-`); `sm_<major><minor>` from
    /// `cuDeviceGetAttribute` on NVIDIA.
    fn device_arch(&self, ordinal: c_int, out: &mut String) -> Call;
    /// `hipDeviceGetName` / `cuDeviceGetName`.
    fn device_name(&self, ordinal: c_int, out: &mut String) -> Call;
    /// Prepares device `ordinal`: NVIDIA retains its primary context
    /// (`cuDevicePrimaryCtxRetain`, reported as `hipSetDevice`); AMD writes null and makes no
    /// call.
    fn retain_device(&self, ordinal: c_int, out: &mut RawContext) -> Call;
    /// Releases what [`Driver::retain_device`] retained (NVIDIA
    /// `cuDevicePrimaryCtxRelease_v2`; AMD: nothing).
    ///
    /// # Safety
    /// Once per successful retain, after every object made in that context is destroyed.
    unsafe fn release_device(&self, ordinal: c_int) -> Call;
    /// `hipSetDevice(ordinal)` / `cuCtxSetCurrent(ctx)`.
    ///
    /// # Safety
    /// On NVIDIA `ctx` is a context from [`Driver::retain_device`] that is still retained.
    unsafe fn set_device(&self, ordinal: c_int, ctx: RawContext) -> Call;
    /// The calling thread's current device: `hipGetDevice` on AMD; `cuCtxGetDevice` (the
    /// device of the current context) on NVIDIA, which fails with `CUDA_ERROR_INVALID_CONTEXT`
    /// when the thread has no current context.
    fn current_device(&self, out: &mut c_int) -> Call;
    /// `hipMalloc` / `cuMemAlloc_v2` of `bytes` on the current device.
    fn malloc(&self, out: &mut DevicePtr, bytes: usize) -> Call;
    /// `hipFree` / `cuMemFree_v2`.
    ///
    /// # Safety
    /// `p` came from [`Driver::malloc`] on the current device, is freed once and not used after.
    unsafe fn free(&self, p: DevicePtr) -> Call;
    /// `hipHostMalloc(flags 0)` / `cuMemAllocHost_v2`: `bytes` bytes of page-locked host
    /// memory, usable by copies of the current device without a staging buffer.
    fn host_malloc(&self, out: &mut *mut c_void, bytes: usize) -> Call;
    /// `hipHostFree` / `cuMemFreeHost`.
    ///
    /// # Safety
    /// `p` came from [`Driver::host_malloc`], is freed once and not used after.
    unsafe fn host_free(&self, p: *mut c_void) -> Call;
    /// Synchronous host → device copy (`hipMemcpy` / `cuMemcpyHtoD_v2`).
    ///
    /// # Safety
    /// `dst` is an allocation of the current device with at least `src.len()` bytes.
    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Call;
    /// Asynchronous host → device copy of `bytes` bytes queued on `stream`
    /// (`hipMemcpyHtoDAsync` / `cuMemcpyHtoDAsync_v2`); returns before the copy runs.
    ///
    /// # Safety
    /// `dst` is an allocation of the current device with at least `bytes` bytes; `src` is
    /// page-locked host memory ([`Driver::host_malloc`]) of at least `bytes` bytes that is
    /// neither written nor freed until the copy completes; `stream` is null or a live stream
    /// of the device.
    unsafe fn memcpy_htod_async(
        &self,
        dst: DevicePtr,
        src: *const c_void,
        bytes: usize,
        stream: RawStream,
    ) -> Call;
    /// Synchronous device → host copy (`hipMemcpy` / `cuMemcpyDtoH_v2`).
    ///
    /// # Safety
    /// `src` is an allocation of the current device with at least `dst.len()` bytes.
    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Call;
    /// Asynchronous byte fill of `bytes` bytes at `dst` with `value`, queued on `stream`
    /// (`hipMemsetAsync` / `cuMemsetD8Async`).
    ///
    /// # Safety
    /// `dst` is a device allocation of the current device with at least `bytes` bytes that
    /// stays allocated until the fill completes; `stream` is null or live on that device.
    unsafe fn memset_d8_async(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: usize,
        stream: RawStream,
    ) -> Call;
    /// `hipModuleLoadData` / `cuModuleLoadData` of a complete code object (HSACO on AMD;
    /// cubin ELF or PTX text on NVIDIA, where text is passed as a NUL-terminated copy).
    fn module_load_data(&self, out: &mut RawModule, image: &[u8]) -> Call;
    /// `hipModuleUnload` / `cuModuleUnload`.
    ///
    /// # Safety
    /// `m` is a loaded module, unloaded once; none of its functions is used afterwards.
    unsafe fn module_unload(&self, m: RawModule) -> Call;
    /// `hipModuleGetFunction` / `cuModuleGetFunction`.
    ///
    /// # Safety
    /// `m` is a module that is still loaded.
    unsafe fn module_get_function(&self, out: &mut RawFunction, m: RawModule, name: &CStr) -> Call;
    /// `hipModuleLaunchKernel` / `cuLaunchKernel` with `extra` null.
    ///
    /// # Safety
    /// As [`super::result::launch_kernel`]: `f` is a function of a loaded module of the
    /// current device, `stream` null or live on it, `params` one pointer per explicit argument
    /// to a value of its exact size, and every device address among them stays allocated
    /// until the kernel completes.
    unsafe fn launch_kernel(
        &self,
        f: RawFunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_bytes: u32,
        stream: RawStream,
        params: &mut [*mut c_void],
    ) -> Call;
    /// `hipFuncSetAttribute(f, hipFuncAttributeMaxDynamicSharedMemorySize (8), bytes)` /
    /// `cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8), bytes)`:
    /// lets launches of `f` use more than 48 KiB of dynamic shared memory.
    ///
    /// # Safety
    /// `f` is a function of a module that is still loaded.
    unsafe fn func_set_max_dynamic_shared(&self, f: RawFunction, bytes: c_int) -> Call;
    /// `hipStreamCreate` / `cuStreamCreate(flags 0)`.
    fn stream_create(&self, out: &mut RawStream) -> Call;
    /// `hipStreamSynchronize` / `cuStreamSynchronize`.
    ///
    /// # Safety
    /// `s` is null or a live stream.
    unsafe fn stream_synchronize(&self, s: RawStream) -> Call;
    /// `hipStreamDestroy` / `cuStreamDestroy_v2`.
    ///
    /// # Safety
    /// `s` came from [`Driver::stream_create`], is destroyed once and not used afterwards.
    unsafe fn stream_destroy(&self, s: RawStream) -> Call;
    /// `hipEventCreate` / `cuEventCreate(flags 0)`.
    fn event_create(&self, out: &mut RawEvent) -> Call;
    /// `hipEventRecord` / `cuEventRecord`.
    ///
    /// # Safety
    /// `e` is a live event and `s` null or a live stream, of the same device.
    unsafe fn event_record(&self, e: RawEvent, s: RawStream) -> Call;
    /// `hipEventSynchronize` / `cuEventSynchronize`.
    ///
    /// # Safety
    /// `e` is a live event.
    unsafe fn event_synchronize(&self, e: RawEvent) -> Call;
    /// `hipEventElapsedTime` / `cuEventElapsedTime` in milliseconds.
    ///
    /// # Safety
    /// `start` and `end` are live events of the same device.
    unsafe fn event_elapsed_time(&self, out: &mut f32, start: RawEvent, end: RawEvent) -> Call;
    /// `hipEventDestroy` / `cuEventDestroy_v2`.
    ///
    /// # Safety
    /// `e` came from [`Driver::event_create`], is destroyed once and not used afterwards.
    unsafe fn event_destroy(&self, e: RawEvent) -> Call;

    // Graph capture. A library without these symbols still loads; each call then returns
    // [`STATUS_NOT_SUPPORTED`] and makes no call.

    /// `hipStreamCreateWithFlags(hipStreamNonBlocking)` /
    /// `cuStreamCreate(CU_STREAM_NON_BLOCKING)`: a stream a capture can run on.
    fn stream_create_non_blocking(&self, out: &mut RawStream) -> Call;
    /// `hipStreamBeginCapture` / `cuStreamBeginCapture_v2` in relaxed mode
    /// ([`STREAM_CAPTURE_MODE_RELAXED`]): work queued on `s` is recorded, not run.
    ///
    /// # Safety
    /// `s` is a live stream that is not the null stream and not capturing.
    unsafe fn stream_begin_capture(&self, s: RawStream) -> Call;
    /// `hipStreamEndCapture` / `cuStreamEndCapture`: ends the capture on `s` and writes the
    /// recorded graph (which the caller then owns).
    ///
    /// # Safety
    /// `s` is a live stream on which this thread began a capture.
    unsafe fn stream_end_capture(&self, s: RawStream, out: &mut RawGraph) -> Call;
    /// `hipGraphInstantiateWithFlags(flags 0)` / `cuGraphInstantiateWithFlags(flags 0)`.
    ///
    /// # Safety
    /// `g` is a live graph.
    unsafe fn graph_instantiate(&self, out: &mut RawGraphExec, g: RawGraph) -> Call;
    /// `hipGraphLaunch` / `cuGraphLaunch`: queues one replay of `e` on `s`.
    ///
    /// # Safety
    /// `e` is a live executable graph of the current device and `s` null or a live stream of
    /// it; every device address recorded in `e` is live until the replay completes.
    unsafe fn graph_launch(&self, e: RawGraphExec, s: RawStream) -> Call;
    /// `hipGraphExecUpdate` / `cuGraphExecUpdate_v2`: gives `e` the node parameters of `g`
    /// (same topology); writes the update result code (`hipGraphExecUpdateResult` /
    /// `CUgraphExecUpdateResult`: 0 success, 2 topology changed, 3 node type changed,
    /// 4 function changed, 5 parameters changed, 6 not supported, …).
    ///
    /// # Safety
    /// `e` and `g` are live and no replay of `e` is being queued concurrently.
    unsafe fn graph_exec_update(&self, e: RawGraphExec, g: RawGraph, result: &mut c_int) -> Call;
    /// `hipGraphGetNodes(g, NULL, &n)` / `cuGraphGetNodes(g, NULL, &n)`: the node count.
    ///
    /// # Safety
    /// `g` is a live graph.
    unsafe fn graph_node_count(&self, g: RawGraph, out: &mut usize) -> Call;
    /// `hipGraphDestroy` / `cuGraphDestroy`.
    ///
    /// # Safety
    /// `g` came from [`Driver::stream_end_capture`], is destroyed once and not used afterwards.
    unsafe fn graph_destroy(&self, g: RawGraph) -> Call;
    /// `hipGraphExecDestroy` / `cuGraphExecDestroy`.
    ///
    /// # Safety
    /// `e` came from [`Driver::graph_instantiate`], is destroyed once, not used afterwards,
    /// and no replay of it is queued.
    unsafe fn graph_exec_destroy(&self, e: RawGraphExec) -> Call;
}

impl std::fmt::Debug for dyn Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("platform", &self.platform())
            .field("library", &self.library_name())
            .finish()
    }
}

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

/// HIP runtime API entry points (AMD platform), whether loaded or linked.
#[derive(Debug, Clone, Copy)]
pub struct HipFns {
    /// `hipInit(flags)`.
    pub init: unsafe extern "C" fn(c_uint) -> Status,
    /// `hipGetDeviceCount(int*)`.
    pub get_device_count: unsafe extern "C" fn(*mut c_int) -> Status,
    /// `hipDriverGetVersion(int*)`.
    pub driver_get_version: unsafe extern "C" fn(*mut c_int) -> Status,
    /// `hipGetDevicePropertiesR0600` or `hipGetDeviceProperties(props*, int)`; see the module
    /// docs and [`HipFns::gcn_arch_name_offset`].
    pub get_device_properties: unsafe extern "C" fn(*mut c_void, c_int) -> Status,
    /// Offset of `gcnArchName` in the struct that `get_device_properties` fills.
    pub gcn_arch_name_offset: usize,
    /// `hipDeviceGetName(char*, int len, int device)`.
    pub device_get_name: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> Status,
    /// `hipSetDevice(int)`.
    pub set_device: unsafe extern "C" fn(c_int) -> Status,
    /// `hipGetDevice(int*)`: the calling thread's current device.
    pub get_device: unsafe extern "C" fn(*mut c_int) -> Status,
    /// `hipMalloc(void**, size_t)`.
    pub malloc: unsafe extern "C" fn(*mut DevicePtr, usize) -> Status,
    /// `hipFree(void*)`.
    pub free: unsafe extern "C" fn(DevicePtr) -> Status,
    /// `hipHostMalloc(void**, size_t, unsigned flags)`.
    pub host_malloc: unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> Status,
    /// `hipHostFree(void*)`.
    pub host_free: unsafe extern "C" fn(*mut c_void) -> Status,
    /// `hipMemcpy(dst, src, size, kind)`; pointers passed as raw addresses.
    pub memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> Status,
    /// `hipMemcpyHtoDAsync(hipDeviceptr_t dst, void* src, size_t, hipStream_t)`.
    pub memcpy_htod_async:
        unsafe extern "C" fn(DevicePtr, *const c_void, usize, RawStream) -> Status,
    /// `hipMemsetAsync(void* dst, int value, size_t, hipStream_t)`.
    pub memset_async: unsafe extern "C" fn(DevicePtr, c_int, usize, RawStream) -> Status,
    /// `hipModuleLoadData(hipModule_t*, const void*)`.
    pub module_load_data: unsafe extern "C" fn(*mut RawModule, *const c_void) -> Status,
    /// `hipModuleUnload(hipModule_t)`.
    pub module_unload: unsafe extern "C" fn(RawModule) -> Status,
    /// `hipModuleGetFunction(hipFunction_t*, hipModule_t, const char*)`.
    pub module_get_function:
        unsafe extern "C" fn(*mut RawFunction, RawModule, *const c_char) -> Status,
    /// `hipModuleLaunchKernel`.
    pub launch: LaunchFn,
    /// `hipFuncSetAttribute(const void* func, hipFuncAttribute, int value)`.
    pub func_set_attribute: unsafe extern "C" fn(RawFunction, c_int, c_int) -> Status,
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
    /// `cuDriverGetVersion(int*)`.
    pub driver_get_version: unsafe extern "C" fn(*mut c_int) -> Status,
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
    /// `cuCtxGetDevice(CUdevice*)`: the device of the calling thread's current context.
    pub ctx_get_device: unsafe extern "C" fn(*mut c_int) -> Status,
    /// `cuMemAlloc_v2(CUdeviceptr*, size_t)`.
    pub mem_alloc: unsafe extern "C" fn(*mut DevicePtr, usize) -> Status,
    /// `cuMemFree_v2(CUdeviceptr)`.
    pub mem_free: unsafe extern "C" fn(DevicePtr) -> Status,
    /// `cuMemAllocHost_v2(void**, size_t)`.
    pub mem_alloc_host: unsafe extern "C" fn(*mut *mut c_void, usize) -> Status,
    /// `cuMemFreeHost(void*)`.
    pub mem_free_host: unsafe extern "C" fn(*mut c_void) -> Status,
    /// `cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t)`.
    pub memcpy_htod: unsafe extern "C" fn(DevicePtr, *const c_void, usize) -> Status,
    /// `cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t, CUstream)`.
    pub memcpy_htod_async:
        unsafe extern "C" fn(DevicePtr, *const c_void, usize, RawStream) -> Status,
    /// `cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t)`.
    pub memcpy_dtoh: unsafe extern "C" fn(*mut c_void, DevicePtr, usize) -> Status,
    /// `cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream)`.
    pub memset_d8_async: unsafe extern "C" fn(DevicePtr, u8, usize, RawStream) -> Status,
    /// `cuModuleLoadData(CUmodule*, const void*)`.
    pub module_load_data: unsafe extern "C" fn(*mut RawModule, *const c_void) -> Status,
    /// `cuModuleUnload(CUmodule)`.
    pub module_unload: unsafe extern "C" fn(RawModule) -> Status,
    /// `cuModuleGetFunction(CUfunction*, CUmodule, const char*)`.
    pub module_get_function:
        unsafe extern "C" fn(*mut RawFunction, RawModule, *const c_char) -> Status,
    /// `cuLaunchKernel`.
    pub launch: LaunchFn,
    /// `cuFuncSetAttribute(CUfunction, CUfunction_attribute, int value)`.
    pub func_set_attribute: unsafe extern "C" fn(RawFunction, c_int, c_int) -> Status,
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

/// Graph-capture entry points of the HIP runtime (AMD), resolved separately from [`HipFns`]
/// so that a runtime without them still loads.
#[derive(Debug, Clone, Copy)]
pub struct HipGraphFns {
    /// `hipStreamCreateWithFlags(hipStream_t*, unsigned flags)`.
    pub stream_create_with_flags: unsafe extern "C" fn(*mut RawStream, c_uint) -> Status,
    /// `hipStreamBeginCapture(hipStream_t, hipStreamCaptureMode)`.
    pub stream_begin_capture: unsafe extern "C" fn(RawStream, c_int) -> Status,
    /// `hipStreamEndCapture(hipStream_t, hipGraph_t*)`.
    pub stream_end_capture: unsafe extern "C" fn(RawStream, *mut RawGraph) -> Status,
    /// `hipGraphInstantiateWithFlags(hipGraphExec_t*, hipGraph_t, unsigned long long)`.
    pub graph_instantiate_with_flags:
        unsafe extern "C" fn(*mut RawGraphExec, RawGraph, u64) -> Status,
    /// `hipGraphLaunch(hipGraphExec_t, hipStream_t)`.
    pub graph_launch: unsafe extern "C" fn(RawGraphExec, RawStream) -> Status,
    /// `hipGraphExecUpdate(hipGraphExec_t, hipGraph_t, hipGraphNode_t*, hipGraphExecUpdateResult*)`.
    pub graph_exec_update:
        unsafe extern "C" fn(RawGraphExec, RawGraph, *mut *mut c_void, *mut c_int) -> Status,
    /// `hipGraphGetNodes(hipGraph_t, hipGraphNode_t*, size_t*)`.
    pub graph_get_nodes: unsafe extern "C" fn(RawGraph, *mut *mut c_void, *mut usize) -> Status,
    /// `hipGraphDestroy(hipGraph_t)`.
    pub graph_destroy: unsafe extern "C" fn(RawGraph) -> Status,
    /// `hipGraphExecDestroy(hipGraphExec_t)`.
    pub graph_exec_destroy: unsafe extern "C" fn(RawGraphExec) -> Status,
}

/// `CUgraphExecUpdateResultInfo` (CUDA 12+), written by `cuGraphExecUpdate_v2`.
#[repr(C)]
#[derive(Debug)]
pub struct CuGraphExecUpdateResultInfo {
    /// `CUgraphExecUpdateResult`.
    pub result: c_int,
    /// `CUgraphNode errorNode`.
    pub error_node: *mut c_void,
    /// `CUgraphNode errorFromNode`.
    pub error_from_node: *mut c_void,
}

/// Graph-capture entry points of the CUDA driver (NVIDIA), resolved separately from
/// [`CudaFns`] so that a driver without them (before CUDA 12) still loads.
#[derive(Debug, Clone, Copy)]
pub struct CudaGraphFns {
    /// `cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode)`.
    pub stream_begin_capture: unsafe extern "C" fn(RawStream, c_int) -> Status,
    /// `cuStreamEndCapture(CUstream, CUgraph*)`.
    pub stream_end_capture: unsafe extern "C" fn(RawStream, *mut RawGraph) -> Status,
    /// `cuGraphInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long)`.
    pub graph_instantiate_with_flags:
        unsafe extern "C" fn(*mut RawGraphExec, RawGraph, u64) -> Status,
    /// `cuGraphLaunch(CUgraphExec, CUstream)`.
    pub graph_launch: unsafe extern "C" fn(RawGraphExec, RawStream) -> Status,
    /// `cuGraphExecUpdate_v2(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*)`.
    pub graph_exec_update:
        unsafe extern "C" fn(RawGraphExec, RawGraph, *mut CuGraphExecUpdateResultInfo) -> Status,
    /// `cuGraphGetNodes(CUgraph, CUgraphNode*, size_t*)`.
    pub graph_get_nodes: unsafe extern "C" fn(RawGraph, *mut *mut c_void, *mut usize) -> Status,
    /// `cuGraphDestroy(CUgraph)`.
    pub graph_destroy: unsafe extern "C" fn(RawGraph) -> Status,
    /// `cuGraphExecDestroy(CUgraphExec)`.
    pub graph_exec_destroy: unsafe extern "C" fn(RawGraphExec) -> Status,
}

/// Library names tried for the AMD platform, in order.
pub const HIP_LIBRARY_NAMES: &[&str] = &[
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
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
    // site); the pointer is copied out and only used while the driver keeps `lib` loaded.
    unsafe { lib.get::<T>(cname.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| format!("symbol {name} missing: {e}"))
}

fn load_hip(lib: &Library) -> Result<HipFns, String> {
    let (get_device_properties, gcn_arch_name_offset) =
        match sym(lib, "hipGetDevicePropertiesR0600") {
            Ok(f) => (f, HIP_PROP_R0600_GCN_ARCH_NAME_OFFSET),
            Err(_) => (
                sym(lib, "hipGetDeviceProperties")?,
                HIP_PROP_R0000_GCN_ARCH_NAME_OFFSET,
            ),
        };
    Ok(HipFns {
        init: sym(lib, "hipInit")?,
        get_device_count: sym(lib, "hipGetDeviceCount")?,
        driver_get_version: sym(lib, "hipDriverGetVersion")?,
        get_device_properties,
        gcn_arch_name_offset,
        device_get_name: sym(lib, "hipDeviceGetName")?,
        set_device: sym(lib, "hipSetDevice")?,
        get_device: sym(lib, "hipGetDevice")?,
        malloc: sym(lib, "hipMalloc")?,
        free: sym(lib, "hipFree")?,
        host_malloc: sym(lib, "hipHostMalloc")?,
        host_free: sym(lib, "hipHostFree")?,
        memcpy: sym(lib, "hipMemcpy")?,
        memcpy_htod_async: sym(lib, "hipMemcpyHtoDAsync")?,
        memset_async: sym(lib, "hipMemsetAsync")?,
        module_load_data: sym(lib, "hipModuleLoadData")?,
        module_unload: sym(lib, "hipModuleUnload")?,
        module_get_function: sym(lib, "hipModuleGetFunction")?,
        launch: sym(lib, "hipModuleLaunchKernel")?,
        func_set_attribute: sym(lib, "hipFuncSetAttribute")?,
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
        driver_get_version: sym(lib, "cuDriverGetVersion")?,
        device_get: sym(lib, "cuDeviceGet")?,
        device_get_attribute: sym(lib, "cuDeviceGetAttribute")?,
        device_get_name: sym(lib, "cuDeviceGetName")?,
        primary_ctx_retain: sym(lib, "cuDevicePrimaryCtxRetain")?,
        primary_ctx_release: sym(lib, "cuDevicePrimaryCtxRelease_v2")?,
        ctx_set_current: sym(lib, "cuCtxSetCurrent")?,
        ctx_get_device: sym(lib, "cuCtxGetDevice")?,
        mem_alloc: sym(lib, "cuMemAlloc_v2")?,
        mem_free: sym(lib, "cuMemFree_v2")?,
        mem_alloc_host: sym(lib, "cuMemAllocHost_v2")?,
        mem_free_host: sym(lib, "cuMemFreeHost")?,
        memcpy_htod: sym(lib, "cuMemcpyHtoD_v2")?,
        memcpy_htod_async: sym(lib, "cuMemcpyHtoDAsync_v2")?,
        memcpy_dtoh: sym(lib, "cuMemcpyDtoH_v2")?,
        memset_d8_async: sym(lib, "cuMemsetD8Async")?,
        module_load_data: sym(lib, "cuModuleLoadData")?,
        module_unload: sym(lib, "cuModuleUnload")?,
        module_get_function: sym(lib, "cuModuleGetFunction")?,
        launch: sym(lib, "cuLaunchKernel")?,
        func_set_attribute: sym(lib, "cuFuncSetAttribute")?,
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

/// The graph-capture symbols of a HIP runtime, or which one is missing.
fn load_hip_graph(lib: &Library) -> Result<HipGraphFns, String> {
    Ok(HipGraphFns {
        stream_create_with_flags: sym(lib, "hipStreamCreateWithFlags")?,
        stream_begin_capture: sym(lib, "hipStreamBeginCapture")?,
        stream_end_capture: sym(lib, "hipStreamEndCapture")?,
        graph_instantiate_with_flags: sym(lib, "hipGraphInstantiateWithFlags")?,
        graph_launch: sym(lib, "hipGraphLaunch")?,
        graph_exec_update: sym(lib, "hipGraphExecUpdate")?,
        graph_get_nodes: sym(lib, "hipGraphGetNodes")?,
        graph_destroy: sym(lib, "hipGraphDestroy")?,
        graph_exec_destroy: sym(lib, "hipGraphExecDestroy")?,
    })
}

/// The graph-capture symbols of a CUDA driver, or which one is missing.
fn load_cuda_graph(lib: &Library) -> Result<CudaGraphFns, String> {
    Ok(CudaGraphFns {
        stream_begin_capture: sym(lib, "cuStreamBeginCapture_v2")?,
        stream_end_capture: sym(lib, "cuStreamEndCapture")?,
        graph_instantiate_with_flags: sym(lib, "cuGraphInstantiateWithFlags")?,
        graph_launch: sym(lib, "cuGraphLaunch")?,
        graph_exec_update: sym(lib, "cuGraphExecUpdate_v2")?,
        graph_get_nodes: sym(lib, "cuGraphGetNodes")?,
        graph_destroy: sym(lib, "cuGraphDestroy")?,
        graph_exec_destroy: sym(lib, "cuGraphExecDestroy")?,
    })
}

/// The optional graph-capture calls: `None`, logged at INFO, when a symbol is missing (the
/// driver still loads; capture then reports 801).
fn optional_graph<T>(fns: Result<T, String>) -> Option<T> {
    fns.map_err(|e| log::info!("graph capture unavailable: {e}"))
        .ok()
}

/// Opens the first AMD library of [`HIP_LIBRARY_NAMES`] and the first NVIDIA library of
/// [`CUDA_LIBRARY_NAMES`] whose symbols all resolve, and returns a driver over each, AMD first
/// (a machine may have both runtimes installed but only one kind of GPU; the caller tries them
/// in order). `Err` lists every attempt (library missing, or which symbol was absent) when no
/// library loads.
pub fn load_at_run_time() -> Result<Vec<Box<dyn Driver>>, Vec<String>> {
    let mut tried = Vec::new();
    let mut drivers: Vec<Box<dyn Driver>> = Vec::new();
    for name in HIP_LIBRARY_NAMES {
        match open(name) {
            Ok(lib) => match load_hip(&lib) {
                Ok(fns) => {
                    drivers.push(Box::new(HipDriver {
                        fns,
                        graph: optional_graph(load_hip_graph(&lib)),
                        library_name: (*name).into(),
                        _lib: Some(lib),
                    }));
                    break;
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
                    drivers.push(Box::new(CudaDriver {
                        fns,
                        graph: optional_graph(load_cuda_graph(&lib)),
                        library_name: (*name).into(),
                        _lib: lib,
                    }));
                    break;
                }
                Err(e) => tried.push(format!("{name}: {e}")),
            },
            Err(e) => tried.push(e),
        }
    }
    if drivers.is_empty() {
        Err(tried)
    } else {
        Ok(drivers)
    }
}

/// The drivers this build uses, in the order to try them: `linked` alone with the cargo
/// feature `hip-sys`, else [`load_at_run_time`]. `Err` (run-time loading only) lists every
/// library attempt.
pub fn load() -> Result<Vec<Box<dyn Driver>>, Vec<String>> {
    #[cfg(feature = "hip-sys")]
    {
        Ok(vec![linked()])
    }
    #[cfg(not(feature = "hip-sys"))]
    {
        load_at_run_time()
    }
}

/// The HIP runtime linked at build time through `hip-sys` (see the module docs).
#[cfg(feature = "hip-sys")]
pub fn linked() -> Box<dyn Driver> {
    use hip_sys::hiprt;

    /// The address of a linked symbol as the `Status`-returning pointer type `T`.
    fn at<T: Copy>(symbol: *const ()) -> T {
        assert_eq!(size_of::<T>(), size_of::<*const ()>());
        // SAFETY: `symbol` is the address of a HIP function declared by hip-sys, and `T` (the
        // field type it is stored in) is that function's C signature with `hipError_t`,
        // `hipMemcpyKind`, `hipDevice_t` as `c_int` and `void*` device pointers as `u64`,
        // which pass identically under the C ABI of every 64-bit target HIP supports.
        unsafe { std::mem::transmute_copy::<*const (), T>(&symbol) }
    }
    let props = size_of::<hiprt::hipDeviceProp_t>();
    assert!(
        props <= HIP_PROP_BUFFER_SIZE,
        "hipDeviceProp_t is {props} bytes"
    );
    Box::new(HipDriver {
        fns: HipFns {
            init: at(hiprt::hipInit as *const ()),
            get_device_count: at(hiprt::hipGetDeviceCount as *const ()),
            driver_get_version: at(hiprt::hipDriverGetVersion as *const ()),
            get_device_properties: at(hiprt::hipGetDeviceProperties as *const ()),
            gcn_arch_name_offset: std::mem::offset_of!(hiprt::hipDeviceProp_t, gcnArchName),
            device_get_name: at(hiprt::hipDeviceGetName as *const ()),
            set_device: at(hiprt::hipSetDevice as *const ()),
            get_device: at(hiprt::hipGetDevice as *const ()),
            malloc: at(hiprt::hipMalloc as *const ()),
            free: at(hiprt::hipFree as *const ()),
            host_malloc: at(hiprt::hipHostMalloc as *const ()),
            host_free: at(hiprt::hipHostFree as *const ()),
            memcpy: at(hiprt::hipMemcpy as *const ()),
            memcpy_htod_async: at(hiprt::hipMemcpyHtoDAsync as *const ()),
            memset_async: at(hiprt::hipMemsetAsync as *const ()),
            module_load_data: at(hiprt::hipModuleLoadData as *const ()),
            module_unload: at(hiprt::hipModuleUnload as *const ()),
            module_get_function: at(hiprt::hipModuleGetFunction as *const ()),
            launch: at(hiprt::hipModuleLaunchKernel as *const ()),
            func_set_attribute: at(hiprt::hipFuncSetAttribute as *const ()),
            stream_create: at(hiprt::hipStreamCreate as *const ()),
            stream_synchronize: at(hiprt::hipStreamSynchronize as *const ()),
            stream_destroy: at(hiprt::hipStreamDestroy as *const ()),
            event_create: at(hiprt::hipEventCreate as *const ()),
            event_record: at(hiprt::hipEventRecord as *const ()),
            event_synchronize: at(hiprt::hipEventSynchronize as *const ()),
            event_elapsed_time: at(hiprt::hipEventElapsedTime as *const ()),
            event_destroy: at(hiprt::hipEventDestroy as *const ()),
            get_error_name: at(hiprt::hipGetErrorName as *const ()),
            get_error_string: at(hiprt::hipGetErrorString as *const ()),
        },
        graph: Some(HipGraphFns {
            stream_create_with_flags: at(hiprt::hipStreamCreateWithFlags as *const ()),
            stream_begin_capture: at(hiprt::hipStreamBeginCapture as *const ()),
            stream_end_capture: at(hiprt::hipStreamEndCapture as *const ()),
            graph_instantiate_with_flags: at(hiprt::hipGraphInstantiateWithFlags as *const ()),
            graph_launch: at(hiprt::hipGraphLaunch as *const ()),
            graph_exec_update: at(hiprt::hipGraphExecUpdate as *const ()),
            graph_get_nodes: at(hiprt::hipGraphGetNodes as *const ()),
            graph_destroy: at(hiprt::hipGraphDestroy as *const ()),
            graph_exec_destroy: at(hiprt::hipGraphExecDestroy as *const ()),
        }),
        library_name: "libamdhip64 (linked by hip-sys)".into(),
        _lib: None,
    })
}

/// The AMD platform: HIP runtime calls, from a loaded library or linked.
struct HipDriver {
    fns: HipFns,
    /// The graph-capture calls; `None` when the runtime lacks one of them.
    graph: Option<HipGraphFns>,
    library_name: String,
    /// The library the pointers point into (`None` when linked); never unloaded early.
    _lib: Option<Library>,
}

impl HipDriver {
    /// `f`'s status under the name `hip`, or [`STATUS_NOT_SUPPORTED`] (no call made) when the
    /// runtime lacks the graph API.
    fn graph_call(&self, hip: &'static str, f: impl FnOnce(&HipGraphFns) -> Status) -> Call {
        amd(hip, self.graph.as_ref().map_or(STATUS_NOT_SUPPORTED, f))
    }
}

fn amd(hip: &'static str, status: Status) -> Call {
    Call {
        hip,
        platform: None,
        status,
    }
}

fn nv(hip: &'static str, cuda: &'static str, status: Status) -> Call {
    Call {
        hip,
        platform: Some(cuda),
        status,
    }
}

/// Reads a NUL-terminated name out of a fixed-size buffer (lossy UTF-8).
fn name_from(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl Driver for HipDriver {
    fn platform(&self) -> Platform {
        Platform::Amd
    }
    fn library_name(&self) -> &str {
        &self.library_name
    }
    fn platform_call(&self, _cuda: &'static str) -> Option<&'static str> {
        None
    }
    fn error_name_and_text(&self, status: Status) -> (String, String) {
        // SAFETY: hipGetErrorName/String accept any code and return static strings.
        let (n, t) = unsafe {
            (
                (self.fns.get_error_name)(status),
                (self.fns.get_error_string)(status),
            )
        };
        // SAFETY: static NUL-terminated strings (or null) returned by the HIP runtime.
        unsafe { (c_str_to_string(n), c_str_to_string(t)) }
    }
    fn init(&self) -> Call {
        // SAFETY: flags 0 is the only documented value; no pointers involved.
        amd("hipInit", unsafe { (self.fns.init)(0) })
    }
    fn device_count(&self, out: &mut c_int) -> Call {
        // SAFETY: `out` is a valid out-pointer.
        amd("hipGetDeviceCount", unsafe {
            (self.fns.get_device_count)(out)
        })
    }
    fn driver_version(&self, out: &mut c_int) -> Call {
        // SAFETY: `out` is a valid out-pointer.
        amd("hipDriverGetVersion", unsafe {
            (self.fns.driver_get_version)(out)
        })
    }
    fn device_arch(&self, ordinal: c_int, out: &mut String) -> Call {
        let mut buf = vec![0u64; HIP_PROP_BUFFER_SIZE / 8];
        // SAFETY: `buf` is zeroed, 8-aligned and 4096 bytes, larger than both struct layouts
        // (1472 and 792 bytes), so the runtime writes inside it.
        let status = unsafe { (self.fns.get_device_properties)(buf.as_mut_ptr().cast(), ordinal) };
        if status == 0 {
            let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
            let o = self.fns.gcn_arch_name_offset;
            *out = name_from(&bytes[o..o + HIP_PROP_GCN_ARCH_NAME_LEN]);
        }
        amd("hipGetDeviceProperties", status)
    }
    fn device_name(&self, ordinal: c_int, out: &mut String) -> Call {
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is writable for 256 bytes and the length says so.
        let status = unsafe { (self.fns.device_get_name)(buf.as_mut_ptr().cast(), 256, ordinal) };
        if status == 0 {
            *out = name_from(&buf);
        }
        amd("hipDeviceGetName", status)
    }
    fn retain_device(&self, _ordinal: c_int, out: &mut RawContext) -> Call {
        *out = std::ptr::null_mut();
        amd("hipSetDevice", 0)
    }
    unsafe fn release_device(&self, _ordinal: c_int) -> Call {
        amd("hipDeviceReset", 0)
    }
    unsafe fn set_device(&self, ordinal: c_int, _ctx: RawContext) -> Call {
        // SAFETY: a plain ordinal, validated by the runtime.
        amd("hipSetDevice", unsafe { (self.fns.set_device)(ordinal) })
    }
    fn current_device(&self, out: &mut c_int) -> Call {
        // SAFETY: `out` is a valid out-pointer.
        amd("hipGetDevice", unsafe { (self.fns.get_device)(out) })
    }
    fn malloc(&self, out: &mut DevicePtr, bytes: usize) -> Call {
        // SAFETY: valid out-pointer.
        amd("hipMalloc", unsafe { (self.fns.malloc)(out, bytes) })
    }
    unsafe fn free(&self, p: DevicePtr) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipFree", unsafe { (self.fns.free)(p) })
    }
    fn host_malloc(&self, out: &mut *mut c_void, bytes: usize) -> Call {
        // SAFETY: valid out-pointer; flags 0 is hipHostMallocDefault.
        amd("hipHostMalloc", unsafe {
            (self.fns.host_malloc)(out, bytes, 0)
        })
    }
    unsafe fn host_free(&self, p: *mut c_void) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipHostFree", unsafe { (self.fns.host_free)(p) })
    }
    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Call {
        // SAFETY: `src` is a live slice; `dst` is large enough per the caller's contract.
        let status = unsafe {
            (self.fns.memcpy)(
                dst as *mut c_void,
                src.as_ptr().cast(),
                src.len(),
                HIP_MEMCPY_HOST_TO_DEVICE,
            )
        };
        amd("hipMemcpy", status)
    }
    unsafe fn memcpy_htod_async(
        &self,
        dst: DevicePtr,
        src: *const c_void,
        bytes: usize,
        stream: RawStream,
    ) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipMemcpyHtoDAsync", unsafe {
            (self.fns.memcpy_htod_async)(dst, src, bytes, stream)
        })
    }
    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Call {
        // SAFETY: `dst` is a live mutable slice; `src` is large enough per the caller's contract.
        let status = unsafe {
            (self.fns.memcpy)(
                dst.as_mut_ptr().cast(),
                src as *const c_void,
                dst.len(),
                HIP_MEMCPY_DEVICE_TO_HOST,
            )
        };
        amd("hipMemcpy", status)
    }
    unsafe fn memset_d8_async(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: usize,
        stream: RawStream,
    ) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipMemsetAsync", unsafe {
            (self.fns.memset_async)(dst, c_int::from(value), bytes, stream)
        })
    }
    fn module_load_data(&self, out: &mut RawModule, image: &[u8]) -> Call {
        // SAFETY: valid out-pointer; `image` lives across the call and is a complete code
        // object (the runtime parses its ELF headers, which give the sizes).
        amd("hipModuleLoadData", unsafe {
            (self.fns.module_load_data)(out, image.as_ptr().cast())
        })
    }
    unsafe fn module_unload(&self, m: RawModule) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipModuleUnload", unsafe { (self.fns.module_unload)(m) })
    }
    unsafe fn module_get_function(&self, out: &mut RawFunction, m: RawModule, name: &CStr) -> Call {
        // SAFETY: valid out-pointer and C string; `m` alive per the caller's contract.
        amd("hipModuleGetFunction", unsafe {
            (self.fns.module_get_function)(out, m, name.as_ptr())
        })
    }
    unsafe fn launch_kernel(
        &self,
        f: RawFunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_bytes: u32,
        stream: RawStream,
        params: &mut [*mut c_void],
    ) -> Call {
        // SAFETY: per the caller's contract; `extra` is null.
        let status = unsafe {
            (self.fns.launch)(
                f,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                shared_bytes,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        amd("hipModuleLaunchKernel", status)
    }
    unsafe fn func_set_max_dynamic_shared(&self, f: RawFunction, bytes: c_int) -> Call {
        // SAFETY: `f` is a loaded function per the caller's contract; attribute 8 is
        // hipFuncAttributeMaxDynamicSharedMemorySize.
        amd("hipFuncSetAttribute", unsafe {
            (self.fns.func_set_attribute)(f, 8, bytes)
        })
    }
    fn stream_create(&self, out: &mut RawStream) -> Call {
        // SAFETY: valid out-pointer.
        amd("hipStreamCreate", unsafe { (self.fns.stream_create)(out) })
    }
    unsafe fn stream_synchronize(&self, s: RawStream) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipStreamSynchronize", unsafe {
            (self.fns.stream_synchronize)(s)
        })
    }
    unsafe fn stream_destroy(&self, s: RawStream) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipStreamDestroy", unsafe { (self.fns.stream_destroy)(s) })
    }
    fn event_create(&self, out: &mut RawEvent) -> Call {
        // SAFETY: valid out-pointer.
        amd("hipEventCreate", unsafe { (self.fns.event_create)(out) })
    }
    unsafe fn event_record(&self, e: RawEvent, s: RawStream) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipEventRecord", unsafe { (self.fns.event_record)(e, s) })
    }
    unsafe fn event_synchronize(&self, e: RawEvent) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipEventSynchronize", unsafe {
            (self.fns.event_synchronize)(e)
        })
    }
    unsafe fn event_elapsed_time(&self, out: &mut f32, start: RawEvent, end: RawEvent) -> Call {
        // SAFETY: valid out-pointer; events alive per the caller's contract.
        amd("hipEventElapsedTime", unsafe {
            (self.fns.event_elapsed_time)(out, start, end)
        })
    }
    unsafe fn event_destroy(&self, e: RawEvent) -> Call {
        // SAFETY: per the caller's contract.
        amd("hipEventDestroy", unsafe { (self.fns.event_destroy)(e) })
    }

    fn stream_create_non_blocking(&self, out: &mut RawStream) -> Call {
        // SAFETY: valid out-pointer; hipStreamNonBlocking is a documented flag.
        self.graph_call("hipStreamCreateWithFlags", |g| unsafe {
            (g.stream_create_with_flags)(out, STREAM_NON_BLOCKING)
        })
    }
    unsafe fn stream_begin_capture(&self, s: RawStream) -> Call {
        // SAFETY: per the caller's contract; relaxed is a documented mode.
        self.graph_call("hipStreamBeginCapture", |g| unsafe {
            (g.stream_begin_capture)(s, STREAM_CAPTURE_MODE_RELAXED)
        })
    }
    unsafe fn stream_end_capture(&self, s: RawStream, out: &mut RawGraph) -> Call {
        // SAFETY: per the caller's contract; valid out-pointer.
        self.graph_call("hipStreamEndCapture", |g| unsafe {
            (g.stream_end_capture)(s, out)
        })
    }
    unsafe fn graph_instantiate(&self, out: &mut RawGraphExec, graph: RawGraph) -> Call {
        // SAFETY: per the caller's contract; valid out-pointer; flags 0.
        self.graph_call("hipGraphInstantiateWithFlags", |g| unsafe {
            (g.graph_instantiate_with_flags)(out, graph, 0)
        })
    }
    unsafe fn graph_launch(&self, e: RawGraphExec, s: RawStream) -> Call {
        // SAFETY: per the caller's contract.
        self.graph_call("hipGraphLaunch", |g| unsafe { (g.graph_launch)(e, s) })
    }
    unsafe fn graph_exec_update(
        &self,
        e: RawGraphExec,
        graph: RawGraph,
        result: &mut c_int,
    ) -> Call {
        let mut node: *mut c_void = std::ptr::null_mut();
        // SAFETY: per the caller's contract; both out-pointers are valid locals.
        self.graph_call("hipGraphExecUpdate", |g| unsafe {
            (g.graph_exec_update)(e, graph, &mut node, result)
        })
    }
    unsafe fn graph_node_count(&self, graph: RawGraph, out: &mut usize) -> Call {
        // SAFETY: per the caller's contract; a null node array asks for the count only.
        self.graph_call("hipGraphGetNodes", |g| unsafe {
            (g.graph_get_nodes)(graph, std::ptr::null_mut(), out)
        })
    }
    unsafe fn graph_destroy(&self, graph: RawGraph) -> Call {
        // SAFETY: per the caller's contract.
        self.graph_call("hipGraphDestroy", |g| unsafe { (g.graph_destroy)(graph) })
    }
    unsafe fn graph_exec_destroy(&self, e: RawGraphExec) -> Call {
        // SAFETY: per the caller's contract.
        self.graph_call("hipGraphExecDestroy", |g| unsafe {
            (g.graph_exec_destroy)(e)
        })
    }
}

/// The NVIDIA platform: HIP calls mapped onto the CUDA driver API.
struct CudaDriver {
    fns: CudaFns,
    /// The graph-capture calls; `None` when the driver lacks one of them.
    graph: Option<CudaGraphFns>,
    library_name: String,
    /// The library the pointers point into; never unloaded early.
    _lib: Library,
}

impl CudaDriver {
    /// `f`'s status under the names `hip` / `cuda`, or [`STATUS_NOT_SUPPORTED`] (no call made)
    /// when the driver lacks the graph API.
    fn graph_call(
        &self,
        hip: &'static str,
        cuda: &'static str,
        f: impl FnOnce(&CudaGraphFns) -> Status,
    ) -> Call {
        nv(
            hip,
            cuda,
            self.graph.as_ref().map_or(STATUS_NOT_SUPPORTED, f),
        )
    }

    /// `cuDeviceGet(ordinal)`: the `CUdevice` for an ordinal, or the failed call.
    fn device(&self, ordinal: c_int) -> Result<c_int, Call> {
        let mut dev: c_int = 0;
        // SAFETY: valid out-pointer; the driver validates the ordinal.
        let status = unsafe { (self.fns.device_get)(&mut dev, ordinal) };
        if status == 0 {
            Ok(dev)
        } else {
            Err(nv("hipDeviceGet", "cuDeviceGet", status))
        }
    }
}

impl Driver for CudaDriver {
    fn platform(&self) -> Platform {
        Platform::Nvidia
    }
    fn library_name(&self) -> &str {
        &self.library_name
    }
    fn platform_call(&self, cuda: &'static str) -> Option<&'static str> {
        Some(cuda)
    }
    fn error_name_and_text(&self, status: Status) -> (String, String) {
        let mut n: *const c_char = std::ptr::null();
        let mut t: *const c_char = std::ptr::null();
        // SAFETY: out-pointers are valid locals; unknown codes leave them unset (checked).
        let (rn, rt) = unsafe {
            (
                (self.fns.get_error_name)(status, &mut n),
                (self.fns.get_error_string)(status, &mut t),
            )
        };
        let name = if rn == 0 {
            // SAFETY: on success the driver stores a static NUL-terminated string.
            unsafe { c_str_to_string(n) }
        } else {
            format!("CUresult {status}")
        };
        let text = if rt == 0 {
            // SAFETY: as above.
            unsafe { c_str_to_string(t) }
        } else {
            "unknown error".into()
        };
        (name, text)
    }
    fn init(&self) -> Call {
        // SAFETY: flags 0 is the only documented value.
        nv("hipInit", "cuInit", unsafe { (self.fns.init)(0) })
    }
    fn device_count(&self, out: &mut c_int) -> Call {
        // SAFETY: valid out-pointer.
        nv("hipGetDeviceCount", "cuDeviceGetCount", unsafe {
            (self.fns.device_get_count)(out)
        })
    }
    fn driver_version(&self, out: &mut c_int) -> Call {
        // SAFETY: valid out-pointer; the call needs no initialised driver or context.
        nv("hipDriverGetVersion", "cuDriverGetVersion", unsafe {
            (self.fns.driver_get_version)(out)
        })
    }
    fn device_arch(&self, ordinal: c_int, out: &mut String) -> Call {
        let dev = match self.device(ordinal) {
            Ok(d) => d,
            Err(c) => return c,
        };
        let (mut major, mut minor): (c_int, c_int) = (0, 0);
        for (value, attr) in [
            (&mut major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            (&mut minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        ] {
            // SAFETY: valid out-pointer, a device from cuDeviceGet, a documented attribute.
            let status = unsafe { (self.fns.device_get_attribute)(value, attr, dev) };
            if status != 0 {
                return nv("hipDeviceGetAttribute", "cuDeviceGetAttribute", status);
            }
        }
        *out = format!("sm_{major}{minor}");
        nv("hipDeviceGetAttribute", "cuDeviceGetAttribute", 0)
    }
    fn device_name(&self, ordinal: c_int, out: &mut String) -> Call {
        let dev = match self.device(ordinal) {
            Ok(d) => d,
            Err(c) => return c,
        };
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is writable for 256 bytes and the length says so; `dev` from cuDeviceGet.
        let status = unsafe { (self.fns.device_get_name)(buf.as_mut_ptr().cast(), 256, dev) };
        if status == 0 {
            *out = name_from(&buf);
        }
        nv("hipDeviceGetName", "cuDeviceGetName", status)
    }
    fn retain_device(&self, ordinal: c_int, out: &mut RawContext) -> Call {
        let dev = match self.device(ordinal) {
            Ok(d) => d,
            Err(c) => return c,
        };
        // SAFETY: valid out-pointer and device handle.
        nv("hipSetDevice", "cuDevicePrimaryCtxRetain", unsafe {
            (self.fns.primary_ctx_retain)(out, dev)
        })
    }
    unsafe fn release_device(&self, ordinal: c_int) -> Call {
        let dev = match self.device(ordinal) {
            Ok(d) => d,
            Err(c) => return c,
        };
        // SAFETY: balanced with a retain, per the caller's contract.
        nv("hipDeviceReset", "cuDevicePrimaryCtxRelease", unsafe {
            (self.fns.primary_ctx_release)(dev)
        })
    }
    unsafe fn set_device(&self, _ordinal: c_int, ctx: RawContext) -> Call {
        // SAFETY: the context is retained, per the caller's contract.
        nv("hipSetDevice", "cuCtxSetCurrent", unsafe {
            (self.fns.ctx_set_current)(ctx)
        })
    }
    fn current_device(&self, out: &mut c_int) -> Call {
        // SAFETY: `out` is a valid out-pointer.
        nv("hipGetDevice", "cuCtxGetDevice", unsafe {
            (self.fns.ctx_get_device)(out)
        })
    }
    fn malloc(&self, out: &mut DevicePtr, bytes: usize) -> Call {
        // SAFETY: valid out-pointer.
        nv("hipMalloc", "cuMemAlloc", unsafe {
            (self.fns.mem_alloc)(out, bytes)
        })
    }
    unsafe fn free(&self, p: DevicePtr) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipFree", "cuMemFree", unsafe { (self.fns.mem_free)(p) })
    }
    fn host_malloc(&self, out: &mut *mut c_void, bytes: usize) -> Call {
        // SAFETY: valid out-pointer.
        nv("hipHostMalloc", "cuMemAllocHost", unsafe {
            (self.fns.mem_alloc_host)(out, bytes)
        })
    }
    unsafe fn host_free(&self, p: *mut c_void) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipHostFree", "cuMemFreeHost", unsafe {
            (self.fns.mem_free_host)(p)
        })
    }
    unsafe fn memcpy_htod(&self, dst: DevicePtr, src: &[u8]) -> Call {
        // SAFETY: `src` is a live slice; `dst` is large enough per the caller's contract.
        nv("hipMemcpy", "cuMemcpyHtoD", unsafe {
            (self.fns.memcpy_htod)(dst, src.as_ptr().cast(), src.len())
        })
    }
    unsafe fn memcpy_htod_async(
        &self,
        dst: DevicePtr,
        src: *const c_void,
        bytes: usize,
        stream: RawStream,
    ) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipMemcpyHtoDAsync", "cuMemcpyHtoDAsync", unsafe {
            (self.fns.memcpy_htod_async)(dst, src, bytes, stream)
        })
    }
    unsafe fn memcpy_dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Call {
        // SAFETY: `dst` is a live mutable slice; `src` is large enough per the caller's contract.
        nv("hipMemcpy", "cuMemcpyDtoH", unsafe {
            (self.fns.memcpy_dtoh)(dst.as_mut_ptr().cast(), src, dst.len())
        })
    }
    unsafe fn memset_d8_async(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: usize,
        stream: RawStream,
    ) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipMemsetAsync", "cuMemsetD8Async", unsafe {
            (self.fns.memset_d8_async)(dst, value, bytes, stream)
        })
    }
    fn module_load_data(&self, out: &mut RawModule, image: &[u8]) -> Call {
        // The CUDA driver reads PTX text up to its NUL: pass a NUL-terminated copy.
        let owned;
        let data: &[u8] = if image.starts_with(b"\x7fELF") {
            image
        } else {
            let mut v = image.to_vec();
            v.push(0);
            owned = v;
            &owned
        };
        // SAFETY: valid out-pointer; `data` lives across the call and is either a complete ELF
        // image (the driver parses its headers, which give the sizes) or NUL-terminated text.
        nv("hipModuleLoadData", "cuModuleLoadData", unsafe {
            (self.fns.module_load_data)(out, data.as_ptr().cast())
        })
    }
    unsafe fn module_unload(&self, m: RawModule) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipModuleUnload", "cuModuleUnload", unsafe {
            (self.fns.module_unload)(m)
        })
    }
    unsafe fn module_get_function(&self, out: &mut RawFunction, m: RawModule, name: &CStr) -> Call {
        // SAFETY: valid out-pointer and C string; `m` alive per the caller's contract.
        nv("hipModuleGetFunction", "cuModuleGetFunction", unsafe {
            (self.fns.module_get_function)(out, m, name.as_ptr())
        })
    }
    unsafe fn launch_kernel(
        &self,
        f: RawFunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_bytes: u32,
        stream: RawStream,
        params: &mut [*mut c_void],
    ) -> Call {
        // SAFETY: per the caller's contract; `extra` is null.
        let status = unsafe {
            (self.fns.launch)(
                f,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                shared_bytes,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        nv("hipModuleLaunchKernel", "cuLaunchKernel", status)
    }
    unsafe fn func_set_max_dynamic_shared(&self, f: RawFunction, bytes: c_int) -> Call {
        // SAFETY: `f` is a loaded function per the caller's contract; attribute 8 is
        // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
        nv("hipFuncSetAttribute", "cuFuncSetAttribute", unsafe {
            (self.fns.func_set_attribute)(f, 8, bytes)
        })
    }
    fn stream_create(&self, out: &mut RawStream) -> Call {
        // SAFETY: valid out-pointer; flags 0 (blocking stream).
        nv("hipStreamCreate", "cuStreamCreate", unsafe {
            (self.fns.stream_create)(out, 0)
        })
    }
    unsafe fn stream_synchronize(&self, s: RawStream) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipStreamSynchronize", "cuStreamSynchronize", unsafe {
            (self.fns.stream_synchronize)(s)
        })
    }
    unsafe fn stream_destroy(&self, s: RawStream) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipStreamDestroy", "cuStreamDestroy", unsafe {
            (self.fns.stream_destroy)(s)
        })
    }
    fn event_create(&self, out: &mut RawEvent) -> Call {
        // SAFETY: valid out-pointer; flags 0 (timing-capable event).
        nv("hipEventCreate", "cuEventCreate", unsafe {
            (self.fns.event_create)(out, 0)
        })
    }
    unsafe fn event_record(&self, e: RawEvent, s: RawStream) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipEventRecord", "cuEventRecord", unsafe {
            (self.fns.event_record)(e, s)
        })
    }
    unsafe fn event_synchronize(&self, e: RawEvent) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipEventSynchronize", "cuEventSynchronize", unsafe {
            (self.fns.event_synchronize)(e)
        })
    }
    unsafe fn event_elapsed_time(&self, out: &mut f32, start: RawEvent, end: RawEvent) -> Call {
        // SAFETY: valid out-pointer; events alive per the caller's contract.
        nv("hipEventElapsedTime", "cuEventElapsedTime", unsafe {
            (self.fns.event_elapsed_time)(out, start, end)
        })
    }
    unsafe fn event_destroy(&self, e: RawEvent) -> Call {
        // SAFETY: per the caller's contract.
        nv("hipEventDestroy", "cuEventDestroy", unsafe {
            (self.fns.event_destroy)(e)
        })
    }

    fn stream_create_non_blocking(&self, out: &mut RawStream) -> Call {
        // SAFETY: valid out-pointer; CU_STREAM_NON_BLOCKING is a documented flag.
        nv("hipStreamCreateWithFlags", "cuStreamCreate", unsafe {
            (self.fns.stream_create)(out, STREAM_NON_BLOCKING)
        })
    }
    unsafe fn stream_begin_capture(&self, s: RawStream) -> Call {
        // SAFETY: per the caller's contract; relaxed is a documented mode.
        self.graph_call(
            "hipStreamBeginCapture",
            "cuStreamBeginCapture",
            |g| unsafe { (g.stream_begin_capture)(s, STREAM_CAPTURE_MODE_RELAXED) },
        )
    }
    unsafe fn stream_end_capture(&self, s: RawStream, out: &mut RawGraph) -> Call {
        // SAFETY: per the caller's contract; valid out-pointer.
        self.graph_call("hipStreamEndCapture", "cuStreamEndCapture", |g| unsafe {
            (g.stream_end_capture)(s, out)
        })
    }
    unsafe fn graph_instantiate(&self, out: &mut RawGraphExec, graph: RawGraph) -> Call {
        let call = (
            "hipGraphInstantiateWithFlags",
            "cuGraphInstantiateWithFlags",
        );
        // SAFETY: per the caller's contract; valid out-pointer; flags 0.
        self.graph_call(call.0, call.1, |g| unsafe {
            (g.graph_instantiate_with_flags)(out, graph, 0)
        })
    }
    unsafe fn graph_launch(&self, e: RawGraphExec, s: RawStream) -> Call {
        // SAFETY: per the caller's contract.
        self.graph_call("hipGraphLaunch", "cuGraphLaunch", |g| unsafe {
            (g.graph_launch)(e, s)
        })
    }
    unsafe fn graph_exec_update(
        &self,
        e: RawGraphExec,
        graph: RawGraph,
        result: &mut c_int,
    ) -> Call {
        let mut info = CuGraphExecUpdateResultInfo {
            result: 0,
            error_node: std::ptr::null_mut(),
            error_from_node: std::ptr::null_mut(),
        };
        // SAFETY: per the caller's contract; `info` is a valid local of the C layout.
        let call = self.graph_call("hipGraphExecUpdate", "cuGraphExecUpdate", |g| unsafe {
            (g.graph_exec_update)(e, graph, &mut info)
        });
        *result = info.result;
        call
    }
    unsafe fn graph_node_count(&self, graph: RawGraph, out: &mut usize) -> Call {
        // SAFETY: per the caller's contract; a null node array asks for the count only.
        self.graph_call("hipGraphGetNodes", "cuGraphGetNodes", |g| unsafe {
            (g.graph_get_nodes)(graph, std::ptr::null_mut(), out)
        })
    }
    unsafe fn graph_destroy(&self, graph: RawGraph) -> Call {
        // SAFETY: per the caller's contract.
        self.graph_call("hipGraphDestroy", "cuGraphDestroy", |g| unsafe {
            (g.graph_destroy)(graph)
        })
    }
    unsafe fn graph_exec_destroy(&self, e: RawGraphExec) -> Call {
        // SAFETY: per the caller's contract.
        self.graph_call("hipGraphExecDestroy", "cuGraphExecDestroy", |g| unsafe {
            (g.graph_exec_destroy)(e)
        })
    }
}

/// Marks an opaque driver handle as shareable between threads.
///
/// HIP and CUDA handles (modules, functions, streams, events, contexts) are process-wide
/// objects that the drivers document as usable from any thread; the wrapper only carries the
/// pointer value and never dereferences it on the Rust side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpaqueHandle(pub *mut c_void);

// SAFETY: see the type docs: the pointer is an opaque driver token, valid in every thread of
// the process, and Rust code never dereferences it.
unsafe impl Send for OpaqueHandle {}
// SAFETY: as above; shared references only copy the token.
unsafe impl Sync for OpaqueHandle {}

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
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
