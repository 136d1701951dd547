//! Checked calls: one thin function per driver call, each returning
//! `Result<_, DriverError>` (cudarc's `result` layer). AMD and NVIDIA differ only in which
//! [`sys::Fns`] variant is called; messages always carry the HIP name and, on NVIDIA, the CUDA
//! driver call that HIP's NVIDIA platform maps it to, e.g.
//! `hipModuleLoadData (cuModuleLoadData) failed: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed`.
//!
//! Functions whose arguments the driver cannot validate (device addresses, host pointers,
//! kernel parameter blocks, handles that must still be alive) are `unsafe fn` with a
//! `# Safety` section; the RAII types in [`super::safe`] uphold those conditions.

use std::ffi::{CString, c_char, c_int, c_void};

use super::sys::{
    self, Api, DevicePtr, Fns, RawContext, RawEvent, RawFunction, RawModule, RawStream, Status,
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

/// Which platform an [`Api`] drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// AMD GPUs through libamdhip64.
    Amd,
    /// NVIDIA GPUs through the CUDA driver (libcuda), HIP's NVIDIA platform.
    Nvidia,
}

/// The platform of a loaded [`Api`].
pub fn platform(api: &Api) -> Platform {
    match api.fns {
        Fns::Hip(_) => Platform::Amd,
        Fns::Cuda(_) => Platform::Nvidia,
    }
}

fn error_text(api: &Api, code: Status) -> (String, String) {
    match &api.fns {
        Fns::Hip(h) => {
            // SAFETY: hipGetErrorName/String accept any code and return static strings.
            let (n, t) = unsafe { ((h.get_error_name)(code), (h.get_error_string)(code)) };
            // SAFETY: static NUL-terminated strings (or null) returned by the HIP runtime.
            unsafe { (sys::c_str_to_string(n), sys::c_str_to_string(t)) }
        }
        Fns::Cuda(c) => {
            let mut n: *const c_char = std::ptr::null();
            let mut t: *const c_char = std::ptr::null();
            // SAFETY: out-pointers are valid locals; unknown codes leave them null (checked).
            let (rn, rt) = unsafe {
                (
                    (c.get_error_name)(code, &mut n),
                    (c.get_error_string)(code, &mut t),
                )
            };
            let name = if rn == 0 {
                // SAFETY: on success the driver stores a static NUL-terminated string.
                unsafe { sys::c_str_to_string(n) }
            } else {
                format!("CUresult {code}")
            };
            let text = if rt == 0 {
                // SAFETY: as above.
                unsafe { sys::c_str_to_string(t) }
            } else {
                "unknown error".into()
            };
            (name, text)
        }
    }
}

fn check(
    api: &Api,
    call: &'static str,
    platform_call: &'static str,
    code: Status,
) -> Result<(), DriverError> {
    if code == 0 {
        return Ok(());
    }
    let (name, text) = error_text(api, code);
    Err(DriverError {
        call,
        platform_call: match api.fns {
            Fns::Hip(_) => None,
            Fns::Cuda(_) => Some(platform_call),
        },
        code,
        name,
        text,
    })
}

/// A failure detected on the Rust side of a call (code -1).
pub(crate) fn local_error(
    api: &Api,
    call: &'static str,
    platform_call: &'static str,
    name: &str,
    text: String,
) -> DriverError {
    DriverError {
        call,
        platform_call: match api.fns {
            Fns::Hip(_) => None,
            Fns::Cuda(_) => Some(platform_call),
        },
        code: -1,
        name: name.into(),
        text,
    }
}

/// `hipInit(0)` / `cuInit(0)`.
pub fn init(api: &Api) -> Result<(), DriverError> {
    // SAFETY: flags 0 is the only documented value; no pointers involved.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.init)(0),
            Fns::Cuda(c) => (c.init)(0),
        }
    };
    check(api, "hipInit", "cuInit", code)
}

/// `hipGetDeviceCount` / `cuDeviceGetCount`: number of visible devices.
pub fn device_count(api: &Api) -> Result<usize, DriverError> {
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid out-pointer.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.get_device_count)(&mut n),
            Fns::Cuda(c) => (c.device_get_count)(&mut n),
        }
    };
    check(api, "hipGetDeviceCount", "cuDeviceGetCount", code)?;
    Ok(n.max(0) as usize)
}

/// The architecture name of device `ordinal`: `gcnArchName` on AMD (e.g.
/// `gfx942:sramecc+:xnack-`), `sm_<major><minor>` from the compute capability on NVIDIA.
///
/// Errors: the driver's, or (AMD) a `gcnArchName` that does not start with `gfx`
/// (`hipErrorUnknownLayout`, which would mean an unexpected `hipDeviceProp_t` layout).
pub fn device_arch(api: &Api, ordinal: i32) -> Result<String, DriverError> {
    match &api.fns {
        Fns::Hip(h) => {
            let mut buf = vec![0u64; sys::HIP_PROP_BUFFER_SIZE / 8];
            // SAFETY: `buf` is zeroed, 8-aligned and 4096 bytes, larger than
            // hipDeviceProp_tR0600 (1472 bytes), so the runtime writes inside it.
            let code = unsafe { (h.get_device_properties)(buf.as_mut_ptr().cast(), ordinal) };
            check(
                api,
                "hipGetDeviceProperties",
                "hipGetDeviceProperties",
                code,
            )?;
            let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
            let field = &bytes[sys::HIP_PROP_GCN_ARCH_NAME_OFFSET
                ..sys::HIP_PROP_GCN_ARCH_NAME_OFFSET + sys::HIP_PROP_GCN_ARCH_NAME_LEN];
            let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
            let name = String::from_utf8_lossy(&field[..end]).into_owned();
            if !name.starts_with("gfx") {
                return Err(local_error(
                    api,
                    "hipGetDeviceProperties",
                    "hipGetDeviceProperties",
                    "hipErrorUnknownLayout",
                    format!(
                        "gcnArchName at offset {} reads {name:?}, not a gfx architecture",
                        sys::HIP_PROP_GCN_ARCH_NAME_OFFSET
                    ),
                ));
            }
            Ok(name)
        }
        Fns::Cuda(c) => {
            let dev = cu_device(api, ordinal)?;
            let (mut major, mut minor): (c_int, c_int) = (0, 0);
            // SAFETY: valid out-pointers, a device handle from cuDeviceGet, documented attributes.
            let code = unsafe {
                (c.device_get_attribute)(
                    &mut major,
                    sys::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                    dev,
                )
            };
            check(api, "hipDeviceGetAttribute", "cuDeviceGetAttribute", code)?;
            // SAFETY: as above.
            let code = unsafe {
                (c.device_get_attribute)(
                    &mut minor,
                    sys::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                    dev,
                )
            };
            check(api, "hipDeviceGetAttribute", "cuDeviceGetAttribute", code)?;
            Ok(format!("sm_{major}{minor}"))
        }
    }
}

/// The marketing name of device `ordinal` (`hipDeviceGetName` / `cuDeviceGetName`).
pub fn device_name(api: &Api, ordinal: i32) -> Result<String, DriverError> {
    let mut buf = [0 as c_char; 256];
    let code = match &api.fns {
        // SAFETY: `buf` is writable for 256 bytes and the length says so.
        Fns::Hip(h) => unsafe { (h.device_get_name)(buf.as_mut_ptr(), 256, ordinal) },
        Fns::Cuda(c) => {
            let dev = cu_device(api, ordinal)?;
            // SAFETY: as above; `dev` from cuDeviceGet.
            unsafe { (c.device_get_name)(buf.as_mut_ptr(), 256, dev) }
        }
    };
    check(api, "hipDeviceGetName", "cuDeviceGetName", code)?;
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as u8)
        .collect();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn cu_device(api: &Api, ordinal: i32) -> Result<c_int, DriverError> {
    let Fns::Cuda(c) = &api.fns else {
        return Ok(ordinal);
    };
    let mut dev: c_int = 0;
    // SAFETY: valid out-pointer; the driver validates the ordinal.
    let code = unsafe { (c.device_get)(&mut dev, ordinal) };
    check(api, "hipDeviceGet", "cuDeviceGet", code)?;
    Ok(dev)
}

/// Prepares device `ordinal` for use: on NVIDIA retains its primary context (returned, to be
/// released with [`release_device`]); on AMD returns null (nothing to retain).
pub fn retain_device(api: &Api, ordinal: i32) -> Result<RawContext, DriverError> {
    match &api.fns {
        Fns::Hip(_) => Ok(std::ptr::null_mut()),
        Fns::Cuda(c) => {
            let dev = cu_device(api, ordinal)?;
            let mut ctx: RawContext = std::ptr::null_mut();
            // SAFETY: valid out-pointer and device handle.
            let code = unsafe { (c.primary_ctx_retain)(&mut ctx, dev) };
            check(api, "hipSetDevice", "cuDevicePrimaryCtxRetain", code)?;
            Ok(ctx)
        }
    }
}

/// Releases what [`retain_device`] retained (NVIDIA: `cuDevicePrimaryCtxRelease_v2`).
///
/// # Safety
/// Call once per successful [`retain_device`], after every object made in that context
/// (buffers, modules, streams, events) has been destroyed.
pub unsafe fn release_device(api: &Api, ordinal: i32) -> Result<(), DriverError> {
    match &api.fns {
        Fns::Hip(_) => Ok(()),
        Fns::Cuda(c) => {
            let dev = cu_device(api, ordinal)?;
            // SAFETY: balanced with a retain, per the caller's contract.
            let code = unsafe { (c.primary_ctx_release)(dev) };
            check(api, "hipDeviceReset", "cuDevicePrimaryCtxRelease", code)
        }
    }
}

/// Makes the device current on the calling thread: `hipSetDevice(ordinal)` on AMD,
/// `cuCtxSetCurrent(ctx)` on NVIDIA (`ctx` from [`retain_device`]).
///
/// # Safety
/// On NVIDIA `ctx` must be a context returned by [`retain_device`] that is still retained.
pub unsafe fn set_device(api: &Api, ordinal: i32, ctx: RawContext) -> Result<(), DriverError> {
    // SAFETY: plain values; the context is alive per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.set_device)(ordinal),
            Fns::Cuda(c) => (c.ctx_set_current)(ctx),
        }
    };
    check(api, "hipSetDevice", "cuCtxSetCurrent", code)
}

/// `hipMalloc` / `cuMemAlloc`: `bytes` bytes of device memory on the current device.
pub fn malloc(api: &Api, bytes: usize) -> Result<DevicePtr, DriverError> {
    let mut p: DevicePtr = 0;
    // SAFETY: valid out-pointer.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.malloc)(&mut p, bytes),
            Fns::Cuda(c) => (c.mem_alloc)(&mut p, bytes),
        }
    };
    check(api, "hipMalloc", "cuMemAlloc", code)?;
    Ok(p)
}

/// `hipFree` / `cuMemFree`.
///
/// # Safety
/// `p` came from [`malloc`] in the current device/context, is freed once, and no pending or
/// future work uses it.
pub unsafe fn free(api: &Api, p: DevicePtr) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.free)(p),
            Fns::Cuda(c) => (c.mem_free)(p),
        }
    };
    check(api, "hipFree", "cuMemFree", code)
}

/// Synchronous host → device copy of `src` to `dst`.
///
/// # Safety
/// `dst` is a device allocation of the current device with at least `src.len()` bytes.
pub unsafe fn memcpy_htod(api: &Api, dst: DevicePtr, src: &[u8]) -> Result<(), DriverError> {
    // SAFETY: `src` is a live slice; `dst` is large enough per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.memcpy)(
                dst as *mut c_void,
                src.as_ptr().cast(),
                src.len(),
                sys::HIP_MEMCPY_HOST_TO_DEVICE,
            ),
            Fns::Cuda(c) => (c.memcpy_htod)(dst, src.as_ptr().cast(), src.len()),
        }
    };
    check(api, "hipMemcpy", "cuMemcpyHtoD", code)
}

/// Synchronous device → host copy of `dst.len()` bytes from `src`.
///
/// # Safety
/// `src` is a device allocation of the current device with at least `dst.len()` bytes.
pub unsafe fn memcpy_dtoh(api: &Api, dst: &mut [u8], src: DevicePtr) -> Result<(), DriverError> {
    // SAFETY: `dst` is a live mutable slice; `src` is large enough per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.memcpy)(
                dst.as_mut_ptr().cast(),
                src as *const c_void,
                dst.len(),
                sys::HIP_MEMCPY_DEVICE_TO_HOST,
            ),
            Fns::Cuda(c) => (c.memcpy_dtoh)(dst.as_mut_ptr().cast(), src, dst.len()),
        }
    };
    check(api, "hipMemcpy", "cuMemcpyDtoH", code)
}

/// `hipModuleLoadData` / `cuModuleLoadData` on the current device. `image` is an HSACO ELF
/// (AMD), or a cubin ELF or PTX text (NVIDIA). PTX is passed as a NUL-terminated copy (the
/// CUDA driver reads text up to the NUL); ELF images are passed as they are.
pub fn module_load_data(api: &Api, image: &[u8]) -> Result<RawModule, DriverError> {
    let is_elf = image.starts_with(b"\x7fELF");
    let mut owned;
    let data: &[u8] = if is_elf || matches!(api.fns, Fns::Hip(_)) {
        image
    } else {
        owned = image.to_vec();
        owned.push(0);
        &owned
    };
    let mut m: RawModule = std::ptr::null_mut();
    // SAFETY: valid out-pointer; `data` lives across the call and is either a complete ELF
    // image (the driver parses its headers, which give the sizes) or NUL-terminated text.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.module_load_data)(&mut m, data.as_ptr().cast()),
            Fns::Cuda(c) => (c.module_load_data)(&mut m, data.as_ptr().cast()),
        }
    };
    check(api, "hipModuleLoadData", "cuModuleLoadData", code)?;
    Ok(m)
}

/// `hipModuleUnload` / `cuModuleUnload`.
///
/// # Safety
/// `m` came from [`module_load_data`], is unloaded once, and no function of it is used
/// afterwards (including by pending launches: synchronize first).
pub unsafe fn module_unload(api: &Api, m: RawModule) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.module_unload)(m),
            Fns::Cuda(c) => (c.module_unload)(m),
        }
    };
    check(api, "hipModuleUnload", "cuModuleUnload", code)
}

/// `hipModuleGetFunction` / `cuModuleGetFunction`: kernel `name` (no `.kd` suffix) in `m`.
///
/// # Safety
/// `m` is a module from [`module_load_data`] that is still loaded.
pub unsafe fn module_get_function(
    api: &Api,
    m: RawModule,
    name: &str,
) -> Result<RawFunction, DriverError> {
    let cname = CString::new(name).map_err(|_| {
        local_error(
            api,
            "hipModuleGetFunction",
            "cuModuleGetFunction",
            "hipErrorInvalidValue",
            format!("kernel name {name:?} contains a NUL byte"),
        )
    })?;
    let mut f: RawFunction = std::ptr::null_mut();
    // SAFETY: valid out-pointer and C string; `m` alive per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.module_get_function)(&mut f, m, cname.as_ptr()),
            Fns::Cuda(c) => (c.module_get_function)(&mut f, m, cname.as_ptr()),
        }
    };
    check(api, "hipModuleGetFunction", "cuModuleGetFunction", code)?;
    Ok(f)
}

/// `hipModuleLaunchKernel` / `cuLaunchKernel` with no dynamic shared memory beyond `shared_bytes`.
///
/// # Safety
/// `f` is a function of a loaded module of the current device; `stream` is null or a live
/// stream of that device; `params` holds one pointer per explicit kernel argument, in order,
/// each pointing to a value of the argument's exact size, valid for the duration of the call;
/// every device address among the values stays allocated until the launch has completed.
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch_kernel(
    api: &Api,
    f: RawFunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_bytes: u32,
    stream: RawStream,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    let launch = match &api.fns {
        Fns::Hip(h) => h.launch,
        Fns::Cuda(c) => c.launch,
    };
    // SAFETY: per the caller's contract; `extra` is null.
    let code = unsafe {
        launch(
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
    check(api, "hipModuleLaunchKernel", "cuLaunchKernel", code)
}

/// `hipStreamCreate` / `cuStreamCreate(flags 0)`: a blocking stream on the current device.
pub fn stream_create(api: &Api) -> Result<RawStream, DriverError> {
    let mut s: RawStream = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.stream_create)(&mut s),
            Fns::Cuda(c) => (c.stream_create)(&mut s, 0),
        }
    };
    check(api, "hipStreamCreate", "cuStreamCreate", code)?;
    Ok(s)
}

/// `hipStreamSynchronize` / `cuStreamSynchronize`.
///
/// # Safety
/// `s` is null or a live stream.
pub unsafe fn stream_synchronize(api: &Api, s: RawStream) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.stream_synchronize)(s),
            Fns::Cuda(c) => (c.stream_synchronize)(s),
        }
    };
    check(api, "hipStreamSynchronize", "cuStreamSynchronize", code)
}

/// `hipStreamDestroy` / `cuStreamDestroy`.
///
/// # Safety
/// `s` came from [`stream_create`] and is destroyed once; it is not used afterwards.
pub unsafe fn stream_destroy(api: &Api, s: RawStream) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.stream_destroy)(s),
            Fns::Cuda(c) => (c.stream_destroy)(s),
        }
    };
    check(api, "hipStreamDestroy", "cuStreamDestroy", code)
}

/// `hipEventCreate` / `cuEventCreate(flags 0)`: a timing-capable event.
pub fn event_create(api: &Api) -> Result<RawEvent, DriverError> {
    let mut e: RawEvent = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.event_create)(&mut e),
            Fns::Cuda(c) => (c.event_create)(&mut e, 0),
        }
    };
    check(api, "hipEventCreate", "cuEventCreate", code)?;
    Ok(e)
}

/// `hipEventRecord` / `cuEventRecord`.
///
/// # Safety
/// `e` is a live event and `s` null or a live stream, of the same device.
pub unsafe fn event_record(api: &Api, e: RawEvent, s: RawStream) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.event_record)(e, s),
            Fns::Cuda(c) => (c.event_record)(e, s),
        }
    };
    check(api, "hipEventRecord", "cuEventRecord", code)
}

/// `hipEventSynchronize` / `cuEventSynchronize`.
///
/// # Safety
/// `e` is a live event.
pub unsafe fn event_synchronize(api: &Api, e: RawEvent) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.event_synchronize)(e),
            Fns::Cuda(c) => (c.event_synchronize)(e),
        }
    };
    check(api, "hipEventSynchronize", "cuEventSynchronize", code)
}

/// `hipEventElapsedTime` / `cuEventElapsedTime`: milliseconds between two completed events.
///
/// # Safety
/// `start` and `end` are live events of the same device.
pub unsafe fn event_elapsed_ms(
    api: &Api,
    start: RawEvent,
    end: RawEvent,
) -> Result<f32, DriverError> {
    let mut ms = 0f32;
    // SAFETY: valid out-pointer; events alive per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.event_elapsed_time)(&mut ms, start, end),
            Fns::Cuda(c) => (c.event_elapsed_time)(&mut ms, start, end),
        }
    };
    check(api, "hipEventElapsedTime", "cuEventElapsedTime", code)?;
    Ok(ms)
}

/// `hipEventDestroy` / `cuEventDestroy`.
///
/// # Safety
/// `e` came from [`event_create`], is destroyed once and not used afterwards.
pub unsafe fn event_destroy(api: &Api, e: RawEvent) -> Result<(), DriverError> {
    // SAFETY: per the caller's contract.
    let code = unsafe {
        match &api.fns {
            Fns::Hip(h) => (h.event_destroy)(e),
            Fns::Cuda(c) => (c.event_destroy)(e),
        }
    };
    check(api, "hipEventDestroy", "cuEventDestroy", code)
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
