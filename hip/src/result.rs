//! Checked calls: one thin function per driver call, each returning
//! `Result<_, DriverError>` (cudarc's `result` layer). Every function calls the
//! platform-neutral [`super::sys::Driver`] and checks the [`super::sys::Call`] it returns;
//! nothing here depends on the platform. Messages carry the HIP name and, on NVIDIA, the CUDA driver call that HIP's NVIDIA
//! platform maps it to (both named by `sys`), e.g.
//! `hipModuleLoadData (cuModuleLoadData) failed: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed`.
//!
//! Functions whose arguments the driver cannot validate (device addresses, host pointers,
//! kernel parameter blocks, handles that must still be alive) are `unsafe fn` with a
//! `# Safety` section; the RAII types in [`super::safe`] uphold those conditions.

use std::ffi::{CString, c_int, c_void};

pub use super::sys::Platform;
use super::sys::{
    Call, DevicePtr, Driver, RawContext, RawEvent, RawFunction, RawGraph, RawGraphExec, RawModule,
    RawStream,
};

/// A driver call failed.
///
/// `Display`: `<hip call>[ (<platform call>)] failed: <error name>: <error text>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call}{platform} failed: {name}: {text}", platform = platform_suffix(self))]
pub struct DriverError {
    /// The HIP API name of the call (`hipModuleLoadData`, …), kept on both platforms.
    pub call: &'static str,
    /// The CUDA driver call it maps to on NVIDIA (`cuModuleLoadData`), `None` on AMD.
    pub platform_call: Option<&'static str>,
    /// The raw status code (`hipError_t` or `CUresult`); for failures detected on the Rust
    /// side (e.g. a malformed architecture name) the code is -1.
    pub code: i32,
    /// The driver's error name (`hipErrorInvalidImage`, `CUDA_ERROR_INVALID_PTX`, …).
    pub name: String,
    /// The driver's error description.
    pub text: String,
}

fn platform_suffix(e: &DriverError) -> String {
    e.platform_call
        .map(|p| format!(" ({p})"))
        .unwrap_or_default()
}

/// `Ok` for a successful [`Call`], else a [`DriverError`] with the driver's name and text of
/// the status.
fn check(d: &dyn Driver, c: Call) -> Result<(), DriverError> {
    if c.status == 0 {
        return Ok(());
    }
    let (name, text) = d.error_name_and_text(c.status);
    Err(DriverError {
        call: c.hip,
        platform_call: c.platform,
        code: c.status,
        name,
        text,
    })
}

/// A failure detected on the Rust side of a call (code -1), reported under the HIP name `call`
/// and, on NVIDIA, the CUDA call `cuda_call`.
pub(crate) fn local_error(
    d: &dyn Driver,
    call: &'static str,
    cuda_call: &'static str,
    name: &str,
    text: String,
) -> DriverError {
    DriverError {
        call,
        platform_call: d.platform_call(cuda_call),
        code: -1,
        name: name.into(),
        text,
    }
}

/// `hipInit(0)` / `cuInit(0)`.
pub fn init(d: &dyn Driver) -> Result<(), DriverError> {
    check(d, d.init())
}

/// `hipGetDeviceCount` / `cuDeviceGetCount`: number of visible devices.
pub fn device_count(d: &dyn Driver) -> Result<usize, DriverError> {
    let mut n: c_int = 0;
    check(d, d.device_count(&mut n))?;
    Ok(n.max(0) as usize)
}

/// The architecture name of device `ordinal`: `gcnArchName` on AMD (e.g.
/// `gfx942:sramecc+:xnack-`), `sm_<major><minor>` from the compute capability on NVIDIA.
///
/// Errors: the driver's, or a name that starts with neither `gfx` nor `sm_`
/// (`hipErrorUnknownLayout`, code -1: on AMD this would mean an unexpected `hipDeviceProp_t`
/// layout, see [`super::sys`]).
pub fn device_arch(d: &dyn Driver, ordinal: i32) -> Result<String, DriverError> {
    let mut name = String::new();
    let c = d.device_arch(ordinal, &mut name);
    check(d, c)?;
    if !(name.starts_with("gfx") || name.starts_with("sm_")) {
        return Err(DriverError {
            call: c.hip,
            platform_call: c.platform,
            code: -1,
            name: "hipErrorUnknownLayout".into(),
            text: format!("the architecture name reads {name:?}, not a gfx or sm_ architecture"),
        });
    }
    Ok(name)
}

/// The driver's version number (`hipDriverGetVersion` / `cuDriverGetVersion`; CUDA encodes
/// `1000·major + 10·minor`).
pub fn driver_version(d: &dyn Driver) -> Result<i32, DriverError> {
    let mut v = 0;
    check(d, d.driver_version(&mut v))?;
    Ok(v)
}

/// The marketing name of device `ordinal` (`hipDeviceGetName` / `cuDeviceGetName`).
pub fn device_name(d: &dyn Driver, ordinal: i32) -> Result<String, DriverError> {
    let mut name = String::new();
    check(d, d.device_name(ordinal, &mut name))?;
    Ok(name)
}

/// `CUDA_ERROR_INVALID_CONTEXT`: `cuCtxGetDevice` on a thread with no current context.
const CUDA_ERROR_INVALID_CONTEXT: i32 = 201;

/// The calling thread's current device ordinal (`hipGetDevice`; on NVIDIA `cuCtxGetDevice`).
/// A thread that never selected a device gets 0 on both platforms (HIP's default device; on
/// NVIDIA, a thread with no current context, which the CUDA runtime would bind to device 0 on
/// its first call).
///
/// Errors: the driver's.
pub fn current_device(d: &dyn Driver) -> Result<usize, DriverError> {
    let mut n: c_int = 0;
    let c = d.current_device(&mut n);
    if d.platform() == Platform::Nvidia && c.status == CUDA_ERROR_INVALID_CONTEXT {
        return Ok(0);
    }
    check(d, c)?;
    Ok(n.max(0) as usize)
}

/// Prepares device `ordinal` for use: on NVIDIA retains its primary context (returned, to be
/// released with [`release_device`]); on AMD returns null (nothing to retain).
pub fn retain_device(d: &dyn Driver, ordinal: i32) -> Result<RawContext, DriverError> {
    let mut ctx: RawContext = std::ptr::null_mut();
    check(d, d.retain_device(ordinal, &mut ctx))?;
    Ok(ctx)
}

/// Releases what [`retain_device`] retained (NVIDIA: `cuDevicePrimaryCtxRelease_v2`).
///
/// # Safety
/// Call once per successful [`retain_device`], after every object made in that context
/// (buffers, modules, streams, events) has been destroyed.
pub unsafe fn release_device(d: &dyn Driver, ordinal: i32) -> Result<(), DriverError> {
    // SAFETY: balanced with a retain, per the caller's contract.
    check(d, unsafe { d.release_device(ordinal) })
}

/// Makes the device current on the calling thread: `hipSetDevice(ordinal)` on AMD,
/// `cuCtxSetCurrent(ctx)` on NVIDIA (`ctx` from [`retain_device`]).
///
/// # Safety
/// On NVIDIA `ctx` must be a context returned by [`retain_device`] that is still retained.
pub unsafe fn set_device(d: &dyn Driver, ordinal: i32, ctx: RawContext) -> Result<(), DriverError> {
    // SAFETY: plain values; the context is alive per the caller's contract.
    check(d, unsafe { d.set_device(ordinal, ctx) })
}

/// `hipMalloc` / `cuMemAlloc`: `bytes` bytes of device memory on the current device.
pub fn malloc(d: &dyn Driver, bytes: usize) -> Result<DevicePtr, DriverError> {
    let mut p: DevicePtr = 0;
    check(d, d.malloc(&mut p, bytes))?;
    Ok(p)
}

/// `hipFree` / `cuMemFree`.
///
/// # Safety
/// `p` came from [`malloc`] in the current device/context, is freed once, and no pending or
/// future work uses it.
pub unsafe fn free(d: &dyn Driver, p: DevicePtr) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.free(p) })
}

/// `hipHostMalloc` / `cuMemAllocHost`: `bytes` bytes of page-locked host memory (contents
/// unspecified), for the current device's copies.
pub fn host_malloc(d: &dyn Driver, bytes: usize) -> Result<*mut std::ffi::c_void, DriverError> {
    let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
    check(d, d.host_malloc(&mut p, bytes))?;
    Ok(p)
}

/// `hipHostFree` / `cuMemFreeHost`.
///
/// # Safety
/// `p` came from [`host_malloc`], is freed once, and no pending copy reads or writes it.
pub unsafe fn host_free(d: &dyn Driver, p: *mut std::ffi::c_void) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.host_free(p) })
}

/// Synchronous host → device copy of `src` to `dst`.
///
/// # Safety
/// `dst` is a device allocation of the current device with at least `src.len()` bytes.
pub unsafe fn memcpy_htod(d: &dyn Driver, dst: DevicePtr, src: &[u8]) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.memcpy_htod(dst, src) })
}

/// Queues a host → device copy of `bytes` bytes from page-locked `src` to `dst` on `stream`
/// (`hipMemcpyHtoDAsync` / `cuMemcpyHtoDAsync`); returns before the copy runs.
///
/// # Safety
/// As [`Driver::memcpy_htod_async`]: `dst` a device allocation of the current device with at
/// least `bytes` bytes; `src` page-locked memory of at least `bytes` bytes, not written or
/// freed until the copy completes; `stream` null or a live stream of that device.
pub unsafe fn memcpy_htod_async(
    d: &dyn Driver,
    dst: DevicePtr,
    src: *const std::ffi::c_void,
    bytes: usize,
    stream: RawStream,
) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.memcpy_htod_async(dst, src, bytes, stream) })
}

/// Synchronous device → host copy of `dst.len()` bytes from `src`.
///
/// # Safety
/// `src` is a device allocation of the current device with at least `dst.len()` bytes.
pub unsafe fn memcpy_dtoh(
    d: &dyn Driver,
    dst: &mut [u8],
    src: DevicePtr,
) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.memcpy_dtoh(dst, src) })
}

/// Queues a fill of `bytes` bytes at `dst` with `value` on `stream` (`hipMemsetAsync` /
/// `cuMemsetD8Async`); returns before the fill runs.
///
/// # Safety
/// `dst` is a device allocation of the current device with at least `bytes` bytes that stays
/// allocated until the fill completes; `stream` is null or a live stream of that device.
pub unsafe fn memset_d8_async(
    d: &dyn Driver,
    dst: DevicePtr,
    value: u8,
    bytes: usize,
    stream: RawStream,
) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.memset_d8_async(dst, value, bytes, stream) })
}

/// `hipModuleLoadData` / `cuModuleLoadData` on the current device. `image` is an HSACO ELF
/// (AMD), or a cubin ELF or PTX text (NVIDIA; `sys` passes text as a NUL-terminated copy).
pub fn module_load_data(d: &dyn Driver, image: &[u8]) -> Result<RawModule, DriverError> {
    let mut m: RawModule = std::ptr::null_mut();
    check(d, d.module_load_data(&mut m, image))?;
    Ok(m)
}

/// `hipModuleUnload` / `cuModuleUnload`.
///
/// # Safety
/// `m` came from [`module_load_data`], is unloaded once, and no function of it is used
/// afterwards (including by pending launches: synchronize first).
pub unsafe fn module_unload(d: &dyn Driver, m: RawModule) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.module_unload(m) })
}

/// `hipModuleGetFunction` / `cuModuleGetFunction`: kernel `name` (no `.kd` suffix) in `m`.
///
/// Errors: `hipErrorInvalidValue` (code -1) for a name containing a NUL byte; the driver's
/// (e.g. `hipErrorNotFound` / `CUDA_ERROR_NOT_FOUND`).
///
/// # Safety
/// `m` is a module from [`module_load_data`] that is still loaded.
pub unsafe fn module_get_function(
    d: &dyn Driver,
    m: RawModule,
    name: &str,
) -> Result<RawFunction, DriverError> {
    let cname = CString::new(name).map_err(|_| {
        local_error(
            d,
            "hipModuleGetFunction",
            "cuModuleGetFunction",
            "hipErrorInvalidValue",
            format!("kernel name {name:?} contains a NUL byte"),
        )
    })?;
    let mut f: RawFunction = std::ptr::null_mut();
    // SAFETY: `m` alive per the caller's contract.
    check(d, unsafe { d.module_get_function(&mut f, m, &cname) })?;
    Ok(f)
}

/// `hipModuleLaunchKernel` / `cuLaunchKernel` with `shared_bytes` of dynamic shared memory.
///
/// # Safety
/// `f` is a function of a loaded module of the current device; `stream` is null or a live
/// stream of that device; `params` holds one pointer per explicit kernel argument, in order,
/// each pointing to a value of the argument's exact size, valid for the duration of the call;
/// every device address among the values stays allocated until the launch has completed.
pub unsafe fn launch_kernel(
    d: &dyn Driver,
    f: RawFunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_bytes: u32,
    stream: RawStream,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe {
        d.launch_kernel(f, grid, block, shared_bytes, stream, params)
    })
}

/// `hipFuncSetAttribute` / `cuFuncSetAttribute` with the max-dynamic-shared-memory attribute
/// (8 on both platforms): launches of `f` may then use up to `bytes` of dynamic shared memory
/// (needed above 48 KiB on NVIDIA). The driver refuses values above the device's opt-in limit.
///
/// # Safety
/// `f` is a function of a module that is still loaded.
pub unsafe fn func_set_max_dynamic_shared(
    d: &dyn Driver,
    f: RawFunction,
    bytes: u32,
) -> Result<(), DriverError> {
    let v = std::os::raw::c_int::try_from(bytes).unwrap_or(std::os::raw::c_int::MAX);
    // SAFETY: `f` alive per the caller's contract.
    check(d, unsafe { d.func_set_max_dynamic_shared(f, v) })
}

/// `hipStreamCreate` / `cuStreamCreate(flags 0)`: a blocking stream on the current device.
pub fn stream_create(d: &dyn Driver) -> Result<RawStream, DriverError> {
    let mut s: RawStream = std::ptr::null_mut();
    check(d, d.stream_create(&mut s))?;
    Ok(s)
}

/// `hipStreamSynchronize` / `cuStreamSynchronize`.
///
/// # Safety
/// `s` is null or a live stream.
pub unsafe fn stream_synchronize(d: &dyn Driver, s: RawStream) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.stream_synchronize(s) })
}

/// `hipStreamDestroy` / `cuStreamDestroy`.
///
/// # Safety
/// `s` came from [`stream_create`] and is destroyed once; it is not used afterwards.
pub unsafe fn stream_destroy(d: &dyn Driver, s: RawStream) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.stream_destroy(s) })
}

/// `hipEventCreate` / `cuEventCreate(flags 0)`: a timing-capable event.
pub fn event_create(d: &dyn Driver) -> Result<RawEvent, DriverError> {
    let mut e: RawEvent = std::ptr::null_mut();
    check(d, d.event_create(&mut e))?;
    Ok(e)
}

/// `hipEventRecord` / `cuEventRecord`.
///
/// # Safety
/// `e` is a live event and `s` null or a live stream, of the same device.
pub unsafe fn event_record(d: &dyn Driver, e: RawEvent, s: RawStream) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.event_record(e, s) })
}

/// `hipEventSynchronize` / `cuEventSynchronize`.
///
/// # Safety
/// `e` is a live event.
pub unsafe fn event_synchronize(d: &dyn Driver, e: RawEvent) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.event_synchronize(e) })
}

/// `hipEventElapsedTime` / `cuEventElapsedTime`: milliseconds between two completed events.
///
/// # Safety
/// `start` and `end` are live events of the same device.
pub unsafe fn event_elapsed_ms(
    d: &dyn Driver,
    start: RawEvent,
    end: RawEvent,
) -> Result<f32, DriverError> {
    let mut ms = 0f32;
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.event_elapsed_time(&mut ms, start, end) })?;
    Ok(ms)
}

/// `hipEventDestroy` / `cuEventDestroy`.
///
/// # Safety
/// `e` came from [`event_create`], is destroyed once and not used afterwards.
pub unsafe fn event_destroy(d: &dyn Driver, e: RawEvent) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.event_destroy(e) })
}

/// `hipStreamCreateWithFlags(hipStreamNonBlocking)` / `cuStreamCreate(CU_STREAM_NON_BLOCKING)`:
/// a stream on the current device that does not synchronize with the null stream.
pub fn stream_create_non_blocking(d: &dyn Driver) -> Result<RawStream, DriverError> {
    let mut s: RawStream = std::ptr::null_mut();
    check(d, d.stream_create_non_blocking(&mut s))?;
    Ok(s)
}

/// `hipStreamBeginCapture` / `cuStreamBeginCapture` (relaxed mode).
///
/// # Safety
/// `s` is a live stream, not the null stream, not capturing.
pub unsafe fn stream_begin_capture(d: &dyn Driver, s: RawStream) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.stream_begin_capture(s) })
}

/// `hipStreamEndCapture` / `cuStreamEndCapture`: the recorded graph, owned by the caller.
///
/// # Safety
/// `s` is a live stream on which this thread began a capture.
pub unsafe fn stream_end_capture(d: &dyn Driver, s: RawStream) -> Result<RawGraph, DriverError> {
    let mut g: RawGraph = std::ptr::null_mut();
    // SAFETY: per the caller's contract; valid out-pointer.
    check(d, unsafe { d.stream_end_capture(s, &mut g) })?;
    Ok(g)
}

/// `hipGraphInstantiateWithFlags` / `cuGraphInstantiateWithFlags` (flags 0).
///
/// # Safety
/// `g` is a live graph.
pub unsafe fn graph_instantiate(d: &dyn Driver, g: RawGraph) -> Result<RawGraphExec, DriverError> {
    let mut e: RawGraphExec = std::ptr::null_mut();
    // SAFETY: per the caller's contract; valid out-pointer.
    check(d, unsafe { d.graph_instantiate(&mut e, g) })?;
    Ok(e)
}

/// `hipGraphLaunch` / `cuGraphLaunch`.
///
/// # Safety
/// `e` is a live executable graph of the current device, `s` null or a live stream of it, and
/// every device address recorded in `e` stays allocated until the replay completes.
pub unsafe fn graph_launch(
    d: &dyn Driver,
    e: RawGraphExec,
    s: RawStream,
) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.graph_launch(e, s) })
}

/// `hipGraphExecUpdate` / `cuGraphExecUpdate`: `e` takes `g`'s node parameters. On failure the
/// error's text ends with the update result (`…; update result 2: the topology changed`).
///
/// # Safety
/// `e` and `g` are live; no replay of `e` is queued concurrently.
pub unsafe fn graph_exec_update(
    d: &dyn Driver,
    e: RawGraphExec,
    g: RawGraph,
) -> Result<(), DriverError> {
    let mut result: c_int = 0;
    // SAFETY: per the caller's contract; valid out-pointer.
    let r = check(d, unsafe { d.graph_exec_update(e, g, &mut result) });
    r.map_err(|mut err| {
        err.text = format!(
            "{}; update result {result}: {}",
            err.text,
            graph_update_result_text(result)
        );
        err
    })
}

/// What a `hipGraphExecUpdateResult` / `CUgraphExecUpdateResult` code means.
pub fn graph_update_result_text(result: c_int) -> &'static str {
    match result {
        0 => "success",
        1 => "the update failed for an unexpected reason",
        2 => "the topology changed (a different number or order of launches)",
        3 => "a node's type changed",
        4 => "a kernel node's function changed",
        5 => "a node's parameters changed in a way that cannot be updated",
        6 => "something about the node is not supported by the update",
        7 => "a kernel node's function changed in an unsupported way",
        8 => "a node's attributes changed in a way that cannot be updated",
        _ => "unknown update result",
    }
}

/// `hipGraphGetNodes` / `cuGraphGetNodes`: how many nodes `g` has.
///
/// # Safety
/// `g` is a live graph.
pub unsafe fn graph_node_count(d: &dyn Driver, g: RawGraph) -> Result<usize, DriverError> {
    let mut n = 0usize;
    // SAFETY: per the caller's contract; valid out-pointer.
    check(d, unsafe { d.graph_node_count(g, &mut n) })?;
    Ok(n)
}

/// `hipGraphDestroy` / `cuGraphDestroy`.
///
/// # Safety
/// `g` came from [`stream_end_capture`], is destroyed once and not used afterwards.
pub unsafe fn graph_destroy(d: &dyn Driver, g: RawGraph) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.graph_destroy(g) })
}

/// `hipGraphExecDestroy` / `cuGraphExecDestroy`.
///
/// # Safety
/// `e` came from [`graph_instantiate`], is destroyed once, not used afterwards, and no replay
/// of it is queued.
pub unsafe fn graph_exec_destroy(d: &dyn Driver, e: RawGraphExec) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    check(d, unsafe { d.graph_exec_destroy(e) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_keep_the_hip_name_and_add_the_platform_call() {
        let e = DriverError {
            call: "hipModuleLoadData",
            platform_call: Some("cuModuleLoadData"),
            code: 218,
            name: "CUDA_ERROR_INVALID_PTX".into(),
            text: "a PTX JIT compilation failed".into(),
        };
        assert_eq!(
            e.to_string(),
            "hipModuleLoadData (cuModuleLoadData) failed: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed"
        );
        let amd = DriverError {
            platform_call: None,
            name: "hipErrorInvalidImage".into(),
            text: "invalid image".into(),
            ..e
        };
        assert_eq!(
            amd.to_string(),
            "hipModuleLoadData failed: hipErrorInvalidImage: invalid image"
        );
    }
}
