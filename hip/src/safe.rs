//! Safe RAII types over [`super::result`] (cudarc's `safe` layer).
//!
//! Ownership: [`GpuRuntime`] (the loaded driver, shared in an `Arc`) → [`Device`] (one GPU,
//! `Arc`, holds its primary context on NVIDIA) → [`DeviceBuffer`], [`PinnedHostBuffer`],
//! [`Module`], [`Stream`], [`Event`], each holding an `Arc<Device>` so the device outlives them; a [`Function`] holds its
//! module. Everything frees itself in `Drop` (errors on free are logged, never panicked on).
//!
//! Every operation first makes its device current on the calling thread
//! (`hipSetDevice` / `cuCtxSetCurrent`), so the types may be used from any thread.
//!
//! What is validated: kernel arguments against the recorded signature (count, kind, size,
//! offsets), buffer lengths on copies, buffers belonging to the launching device. What is not:
//! what a kernel does with its arguments. Device memory lies outside Rust's memory model; an
//! out-of-bounds device access is a kernel bug that the driver reports as an error from a later
//! call (launch, synchronize or copy), not host memory corruption.
//!
//! Copies are synchronous (`hipMemcpy` / `cuMemcpyHtoD`/`DtoH`) and ordered after work queued on
//! the device's blocking streams (legacy default-stream semantics); [`Stream::synchronize`] is
//! the explicit way to wait for launches.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use super::result::{self, DriverError, Platform};
use super::sys::{self, DevicePtr, Driver, OpaqueHandle};

/// No usable GPU runtime or device. `Display`: `no GPU: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no GPU: {reason}")]
pub struct NoGpu {
    /// Why: which libraries were tried, the driver's init error, or "0 devices".
    pub reason: String,
}

/// One enumerated device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Driver ordinal (0-based).
    pub ordinal: usize,
    /// Architecture: `gcnArchName` on AMD (e.g. `gfx942:sramecc+:xnack-`, features included),
    /// `sm_<major><minor>` on NVIDIA (e.g. `sm_90`).
    pub arch: String,
    /// Marketing name (e.g. `NVIDIA H200`).
    pub name: String,
}

/// The loaded driver (AMD HIP runtime or NVIDIA CUDA driver) and its device list.
pub struct GpuRuntime {
    driver: Box<dyn Driver>,
    platform: Platform,
    devices: Vec<DeviceInfo>,
    driver_version: Option<i32>,
}

impl std::fmt::Debug for GpuRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuRuntime")
            .field("library", &self.driver.library_name())
            .field("platform", &self.platform)
            .field("devices", &self.devices)
            .finish()
    }
}

impl GpuRuntime {
    /// Gets the driver ([`sys::load`]: loaded at run time, AMD libraries first, then NVIDIA's;
    /// or, with the cargo feature `hip-sys`, the HIP runtime linked at build time), initialises
    /// it and enumerates devices.
    ///
    /// Errors ([`NoGpu`]; its text always carries the driver's own error name, e.g.
    /// `no GPU: libamdhip64.so.5 loaded, but hipInit failed: hipErrorNoDevice: …`): no library
    /// could be opened or one lacked a symbol (the message lists every attempt);
    /// `hipInit`/`cuInit` or the device count failed (e.g. no kernel driver or no device); zero
    /// devices; a device's architecture could not be read.
    ///
    /// When both runtimes are installed, the first driver that reports a device wins; if none
    /// does, the reasons of all are joined with `; `.
    pub fn load() -> Result<Arc<GpuRuntime>, NoGpu> {
        let drivers = sys::load().map_err(|tried| NoGpu {
            reason: format!(
                "no HIP or CUDA driver library could be loaded ({})",
                tried.join("; ")
            ),
        })?;
        let mut reasons = Vec::new();
        for driver in drivers {
            match Self::with_driver(driver) {
                Ok(rt) => return Ok(rt),
                Err(e) => reasons.push(e.reason),
            }
        }
        Err(NoGpu {
            reason: reasons.join("; "),
        })
    }

    /// [`GpuRuntime::load`] over one given driver (e.g. one of [`sys::load_at_run_time`] in a
    /// build with the `hip-sys` feature). Errors as [`GpuRuntime::load`] after the library step.
    pub fn with_driver(driver: Box<dyn Driver>) -> Result<Arc<GpuRuntime>, NoGpu> {
        let d = driver.as_ref();
        let platform = d.platform();
        let nogpu = |e: DriverError| NoGpu {
            reason: format!("{} loaded, but {e}", d.library_name()),
        };
        result::init(d).map_err(nogpu)?;
        let count = result::device_count(d).map_err(nogpu)?;
        if count == 0 {
            return Err(NoGpu {
                reason: format!("{} loaded, but it reports 0 devices", d.library_name()),
            });
        }
        let mut devices = Vec::with_capacity(count);
        for ordinal in 0..count {
            let arch = result::device_arch(d, ordinal as i32).map_err(nogpu)?;
            let name = result::device_name(d, ordinal as i32).unwrap_or_default();
            devices.push(DeviceInfo {
                ordinal,
                arch,
                name,
            });
        }
        let driver_version = result::driver_version(d).ok();
        Ok(Arc::new(GpuRuntime {
            driver,
            platform,
            devices,
            driver_version,
        }))
    }

    /// The calling thread's current device ordinal ([`result::current_device`]: `hipGetDevice`
    /// on AMD, the device of the current context on NVIDIA; 0 for a thread that never chose
    /// one). Upstream hipDNN binds a new handle to this device (`hipdnnCreate`).
    ///
    /// Errors: the driver's.
    pub fn current_device(&self) -> Result<usize, DriverError> {
        result::current_device(self.driver.as_ref())
    }

    /// The platform in use.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// The driver's version number as the driver reports it (`hipDriverGetVersion` /
    /// `cuDriverGetVersion`, read once when the runtime was loaded; CUDA: `1000·major +
    /// 10·minor`, 12040 for 12.4); `None` when that call failed.
    pub fn driver_version(&self) -> Option<i32> {
        self.driver_version
    }

    /// [`Self::driver_version`] for messages: `CUDA driver 12.4 (12040)` on NVIDIA, `HIP driver
    /// version 60241134` on AMD, `driver version unknown` when the call failed.
    pub fn driver_version_text(&self) -> String {
        match (self.platform, self.driver_version) {
            (_, None) => "driver version unknown".to_string(),
            (Platform::Nvidia, Some(v)) => {
                format!("CUDA driver {}.{} ({v})", v / 1000, (v % 1000) / 10)
            }
            (Platform::Amd, Some(v)) => format!("HIP driver version {v}"),
        }
    }

    /// The library that was opened (e.g. `libcuda.so.1`).
    pub fn library_name(&self) -> &str {
        self.driver.library_name()
    }

    /// The enumerated devices, in ordinal order (never empty).
    pub fn devices(&self) -> &[DeviceInfo] {
        &self.devices
    }

    /// Opens device `ordinal` (retains its primary context on NVIDIA).
    ///
    /// Errors: `hipErrorInvalidDevice` (code -1, detected here) for an ordinal beyond
    /// [`GpuRuntime::devices`]; the driver's error from retaining/selecting the device.
    pub fn open_device(self: &Arc<Self>, ordinal: usize) -> Result<Arc<Device>, DriverError> {
        let Some(info) = self.devices.get(ordinal).cloned() else {
            return Err(result::local_error(
                self.driver.as_ref(),
                "hipSetDevice",
                "cuDeviceGet",
                "hipErrorInvalidDevice",
                format!(
                    "device ordinal {ordinal} is out of range (the runtime reports {} devices)",
                    self.devices.len()
                ),
            ));
        };
        let ctx = result::retain_device(self.driver.as_ref(), ordinal as i32)?;
        let dev = Device {
            rt: Arc::clone(self),
            info,
            ctx: OpaqueHandle(ctx),
        };
        dev.bind()?;
        Ok(Arc::new(dev))
    }
}

/// The devices one driver reports ([`visible_devices`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceList {
    /// The platform of the driver that was asked.
    pub platform: Platform,
    /// The library that was opened (e.g. `libcuda.so.1`).
    pub library: String,
    /// The devices, in ordinal order; empty when the driver loads but sees no device.
    pub devices: Vec<DeviceInfo>,
}

/// `hipErrorNoDevice` / `CUDA_ERROR_NO_DEVICE`: an init or count that sees no device.
const STATUS_NO_DEVICE: i32 = 100;

/// The visible devices: the first driver (in [`sys::load`]'s order) that reports a device, or,
/// when a driver loads but none reports a device, an empty list of the first driver that
/// initialised or answered "no device" (`hipErrorNoDevice` / `CUDA_ERROR_NO_DEVICE`).
/// Unlike [`GpuRuntime::load`], zero devices is not an error.
///
/// Errors ([`NoGpu`]): no driver library could be loaded (the attempts are listed); every
/// driver that loaded failed to initialise or count for another reason than "no device", or
/// a device's architecture could not be read (the driver's error names are joined with `; `).
pub fn visible_devices() -> Result<DeviceList, NoGpu> {
    let drivers = sys::load().map_err(|tried| NoGpu {
        reason: format!(
            "no HIP or CUDA driver library could be loaded ({})",
            tried.join("; ")
        ),
    })?;
    let mut empty = None;
    let mut reasons = Vec::new();
    for driver in drivers {
        let (platform, library) = (driver.platform(), driver.library_name().to_string());
        let list = |devices| DeviceList {
            platform,
            library: library.clone(),
            devices,
        };
        let nogpu = |e: DriverError| format!("{library} loaded, but {e}");
        let d = driver.as_ref();
        let counted = result::init(d).and_then(|()| result::device_count(d));
        match counted {
            Ok(0) => {
                empty.get_or_insert(list(Vec::new()));
            }
            Err(e) if e.code == STATUS_NO_DEVICE => {
                empty.get_or_insert(list(Vec::new()));
            }
            Err(e) => reasons.push(nogpu(e)),
            Ok(_) => match GpuRuntime::with_driver(driver) {
                Ok(rt) => return Ok(list(rt.devices().to_vec())),
                Err(e) => reasons.push(e.reason),
            },
        }
    }
    empty.ok_or_else(|| NoGpu {
        reason: reasons.join("; "),
    })
}

/// One opened GPU. Create with [`GpuRuntime::open_device`].
#[derive(Debug)]
pub struct Device {
    rt: Arc<GpuRuntime>,
    info: DeviceInfo,
    ctx: OpaqueHandle,
}

impl Device {
    /// Ordinal, architecture and name.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Identity of the context this device's modules live in: `(platform, ordinal, context
    /// handle)`. Two `Device`s of this process (opened through any [`GpuRuntime`]) with equal
    /// identities can launch one another's [`Module`]s: on NVIDIA the handle is the
    /// ordinal's primary context, which every open of that ordinal retains; on AMD modules
    /// belong to the process-wide per-device state and the handle is whatever the runtime
    /// returned when the device was opened.
    pub fn context_identity(&self) -> (Platform, usize, usize) {
        (self.rt.platform, self.info.ordinal, self.ctx.0 as usize)
    }

    /// Architecture name (see [`DeviceInfo::arch`]).
    pub fn arch(&self) -> &str {
        &self.info.arch
    }

    /// The runtime this device belongs to.
    pub fn runtime(&self) -> &Arc<GpuRuntime> {
        &self.rt
    }

    fn api(&self) -> &dyn Driver {
        self.rt.driver.as_ref()
    }

    /// Makes this device current on the calling thread. Called by every operation; public for
    /// callers that mix in their own driver calls.
    pub fn bind(&self) -> Result<(), DriverError> {
        // SAFETY: `ctx` was retained in `open_device` and is released only in `Drop`.
        unsafe { result::set_device(self.api(), self.info.ordinal as i32, self.ctx.0) }
    }

    /// `len` elements of `T` in bytes; `hipErrorOutOfMemory` (reported as `call` / `pcall`)
    /// when that overflows `usize`.
    fn byte_len<T>(
        &self,
        len: usize,
        call: &'static str,
        pcall: &'static str,
    ) -> Result<usize, DriverError> {
        len.checked_mul(size_of::<T>()).ok_or_else(|| {
            result::local_error(
                self.api(),
                call,
                pcall,
                "hipErrorOutOfMemory",
                format!("{len} elements of {} bytes overflow usize", size_of::<T>()),
            )
        })
    }

    /// Allocates `len` elements of `T` (contents unspecified; at least 1 byte is allocated so a
    /// zero-length buffer still has a distinct address).
    pub fn alloc<T: DeviceCopy>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<DeviceBuffer<T>, DriverError> {
        self.bind()?;
        let bytes = self.byte_len::<T>(len, "hipMalloc", "cuMemAlloc")?;
        let ptr = result::malloc(self.api(), bytes.max(1))?;
        Ok(DeviceBuffer {
            dev: Arc::clone(self),
            ptr,
            len,
            memory: Arc::new(Allocation {
                dev: Arc::clone(self),
                ptr,
            }),
            _t: PhantomData,
        })
    }

    /// Allocates `len` zero-filled elements of `T` (`hipMalloc` + `hipMemsetAsync` on the null
    /// stream + `hipStreamSynchronize`; CUDA: `cuMemAlloc`, `cuMemsetD8Async`,
    /// `cuStreamSynchronize`): no host staging buffer and no host-to-device copy.
    pub fn alloc_zeroed<T: DeviceCopy>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<DeviceBuffer<T>, DriverError> {
        let b = self.alloc::<T>(len)?;
        let bytes = (len * size_of::<T>()).max(1);
        // SAFETY: `b` is a live allocation of at least `bytes` bytes on this device (bound by
        // `alloc`), owned here until the synchronize below has waited for the fill; the null
        // stream is always valid.
        unsafe {
            result::memset_d8_async(self.api(), b.ptr, 0, bytes, std::ptr::null_mut())?;
            result::stream_synchronize(self.api(), std::ptr::null_mut())?;
        }
        Ok(b)
    }

    /// Allocates `len` zero-filled elements of `T` in page-locked host memory
    /// (`hipHostMalloc` / `cuMemAllocHost`; at least 1 byte): host memory the device's copy
    /// engine reads and writes directly, so a [`DeviceBuffer::copy_from_host`] or
    /// [`DeviceBuffer::copy_to_host`] with it as the host side needs no staging copy (on an
    /// H200 a 6.3 MB upload takes ~0.13 ms from page-locked memory against ~0.36 ms from
    /// pageable memory). Page-locked memory is a scarce system resource: keep such buffers
    /// for data copied often, and reuse them.
    ///
    /// # Errors
    /// `hipErrorOutOfMemory`-class [`DriverError`] when `len` elements overflow `usize` or
    /// the driver cannot lock that much memory.
    pub fn alloc_pinned<T: DeviceCopy>(
        self: &Arc<Self>,
        len: usize,
    ) -> Result<PinnedHostBuffer<T>, DriverError> {
        self.bind()?;
        let bytes = self.byte_len::<T>(len, "hipHostMalloc", "cuMemAllocHost")?;
        let ptr = result::host_malloc(self.api(), bytes.max(1))?;
        if ptr.is_null() {
            return Err(result::local_error(
                self.api(),
                "hipHostMalloc",
                "cuMemAllocHost",
                "hipErrorOutOfMemory",
                format!("the driver returned a null pointer for {bytes} bytes"),
            ));
        }
        // SAFETY: `ptr` is a fresh allocation of at least `bytes` bytes, owned here; zeroing
        // it makes every element a valid `T` (`DeviceCopy`: all bit patterns are values).
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, bytes) };
        Ok(PinnedHostBuffer {
            dev: Arc::clone(self),
            ptr: ptr.cast::<T>(),
            len,
            pending: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Allocates a buffer and copies `data` into it.
    pub fn htod<T: DeviceCopy>(
        self: &Arc<Self>,
        data: &[T],
    ) -> Result<DeviceBuffer<T>, DriverError> {
        let mut b = self.alloc(data.len())?;
        b.copy_from_host(data)?;
        Ok(b)
    }

    /// Loads a code object (`hipModuleLoadData` / `cuModuleLoadData`): HSACO on AMD, cubin or
    /// PTX text (no NUL needed; a NUL-terminated copy is made) on NVIDIA. The bytes are not
    /// retained.
    pub fn load_module(self: &Arc<Self>, image: &[u8]) -> Result<Module, DriverError> {
        self.bind()?;
        let m = result::module_load_data(self.api(), image)?;
        Ok(Module {
            inner: Arc::new(ModuleInner {
                dev: Arc::clone(self),
                raw: OpaqueHandle(m),
            }),
        })
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: every object created in this context holds an `Arc<Device>`, so they are all
        // gone; this balances the retain in `open_device`.
        if let Err(e) = unsafe { result::release_device(self.api(), self.info.ordinal as i32) } {
            log::warn!("releasing device {}: {e}", self.info.ordinal);
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Plain element types that may be copied to and from device memory byte for byte: every bit
/// pattern is a valid value and there is no padding. Sealed; implemented for the integer and
/// float primitives and for `half::f16` and `half::bf16`.
pub trait DeviceCopy: Copy + Send + Sync + 'static + sealed::Sealed {}
macro_rules! device_copy {
    ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl DeviceCopy for $t {})* };
}
device_copy!(
    u8,
    i8,
    u16,
    i16,
    u32,
    i32,
    u64,
    i64,
    f32,
    f64,
    half::f16,
    half::bf16
);

fn as_bytes<T: DeviceCopy>(s: &[T]) -> &[u8] {
    let n = std::mem::size_of_val(s);
    // SAFETY: `T: DeviceCopy` is a padding-free primitive; the byte view covers exactly the slice.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), n) }
}

fn as_bytes_mut<T: DeviceCopy>(s: &mut [T]) -> &mut [u8] {
    let n = std::mem::size_of_val(s);
    // SAFETY: as above, and every byte pattern is a valid `T`, so writes through the view are sound.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), n) }
}

/// `len` elements of `T` in device memory; freed (`hipFree` / `cuMemFree`) once the buffer
/// and every [`AllocationLease`] of it are dropped.
#[derive(Debug)]
pub struct DeviceBuffer<T: DeviceCopy> {
    dev: Arc<Device>,
    ptr: DevicePtr,
    len: usize,
    memory: Arc<Allocation>,
    _t: PhantomData<T>,
}

/// One `hipMalloc` / `cuMemAlloc` allocation, freed on drop.
#[derive(Debug)]
struct Allocation {
    dev: Arc<Device>,
    ptr: DevicePtr,
}

impl Drop for Allocation {
    fn drop(&mut self) {
        let r = self.dev.bind().and_then(|()| {
            // SAFETY: `ptr` came from `malloc` on this device and is freed once, here, when
            // the buffer and every lease are gone. Both hipFree and cuMemFree wait for
            // outstanding work on the device before freeing, so a launch still using the
            // memory completes first.
            unsafe { result::free(self.dev.api(), self.ptr) }
        });
        if let Err(e) = r {
            log::warn!("freeing a device buffer: {e}");
        }
    }
}

/// Keeps a [`DeviceBuffer`]'s memory allocated after the buffer is dropped, until the lease
/// is dropped too: what a replayable [`GraphExec`]'s owner holds for every buffer its
/// recorded launches use, so that no replay can reach freed memory. Gives no access to the
/// memory.
#[derive(Debug, Clone)]
pub struct AllocationLease {
    _memory: Arc<Allocation>,
}

/// Length mismatch in a host↔device copy.
fn len_error(
    dev: &Device,
    call: &'static str,
    pcall: &'static str,
    host: usize,
    device: usize,
) -> DriverError {
    result::local_error(
        dev.api(),
        call,
        pcall,
        "hipErrorInvalidValue",
        format!("host slice has {host} elements, device buffer has {device}"),
    )
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address (for launch arguments and diagnostics).
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// The owning device.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// A lease that keeps this buffer's memory allocated until it is dropped, even after the
    /// buffer is (see [`AllocationLease`]).
    pub fn lease(&self) -> AllocationLease {
        AllocationLease {
            _memory: Arc::clone(&self.memory),
        }
    }

    /// Copies `src` (exactly [`len`](Self::len) elements, else `hipErrorInvalidValue`) to the device.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<(), DriverError> {
        if src.len() != self.len {
            return Err(len_error(
                &self.dev,
                "hipMemcpy",
                "cuMemcpyHtoD",
                src.len(),
                self.len,
            ));
        }
        self.copy_from_host_at(0, src)
    }

    /// Copies `src` into elements `offset..offset + src.len()` (else `hipErrorInvalidValue`,
    /// nothing copied): refilling part of a buffer, e.g. one chunk of a pipelined upload.
    pub fn copy_from_host_at(&mut self, offset: usize, src: &[T]) -> Result<(), DriverError> {
        if offset
            .checked_add(src.len())
            .is_none_or(|end| end > self.len)
        {
            return Err(result::local_error(
                self.dev.api(),
                "hipMemcpy",
                "cuMemcpyHtoD",
                "hipErrorInvalidValue",
                format!(
                    "{} elements at offset {offset} overrun a device buffer of {}",
                    src.len(),
                    self.len
                ),
            ));
        }
        if src.is_empty() {
            return Ok(());
        }
        self.dev.bind()?;
        // SAFETY: `ptr + offset * size_of::<T>()` lies in this buffer's live allocation with
        // at least `src.len() * size_of::<T>()` bytes after it (checked above), on the (now
        // current) device.
        unsafe {
            result::memcpy_htod(
                self.dev.api(),
                self.ptr + (offset * size_of::<T>()) as u64,
                as_bytes(src),
            )
        }
    }

    /// Queues a copy of `src[range]` into elements `offset..offset + range.len()` on
    /// `stream` (`hipMemcpyHtoDAsync` / `cuMemcpyHtoDAsync`) and returns before it runs: the
    /// copy engine reads the page-locked memory while the host goes on. Work queued on
    /// `stream` after it (and, on the null stream, every later synchronous copy) sees the
    /// data. An event recorded after the copy makes `src`'s next mutable access and its drop
    /// wait for it.
    ///
    /// # Errors
    /// `hipErrorInvalidValue` when `range` is not inside `src` or the destination range not
    /// inside this buffer; `hipErrorInvalidHandle` when `src` or `stream` belongs to another
    /// device; the driver's errors of the copy and of the event (nothing is queued when a
    /// check fails).
    pub fn copy_from_pinned_async(
        &mut self,
        offset: usize,
        src: &PinnedHostBuffer<T>,
        range: std::ops::Range<usize>,
        stream: &Stream,
    ) -> Result<(), DriverError> {
        let invalid = |what: String| {
            result::local_error(
                self.dev.api(),
                "hipMemcpyHtoDAsync",
                "cuMemcpyHtoDAsync",
                "hipErrorInvalidValue",
                what,
            )
        };
        if range.start > range.end || range.end > src.len {
            return Err(invalid(format!(
                "source range {range:?} is not inside a page-locked buffer of {}",
                src.len
            )));
        }
        let n = range.end - range.start;
        if offset.checked_add(n).is_none_or(|end| end > self.len) {
            return Err(invalid(format!(
                "{n} elements at offset {offset} overrun a device buffer of {}",
                self.len
            )));
        }
        if !Arc::ptr_eq(&src.dev, &self.dev) || !Arc::ptr_eq(&stream.dev, &self.dev) {
            return Err(result::local_error(
                self.dev.api(),
                "hipMemcpyHtoDAsync",
                "cuMemcpyHtoDAsync",
                "hipErrorInvalidHandle",
                "the page-locked buffer, the stream and the device buffer must belong to one device".into(),
            ));
        }
        if n == 0 {
            return Ok(());
        }
        let event = Event::new(&self.dev)?;
        self.dev.bind()?;
        // SAFETY: the destination lies inside this buffer's live allocation (checked above);
        // the source is `n` elements inside `src`'s page-locked allocation, which is not
        // written (`DerefMut` waits for the event recorded below) nor freed (its drop waits
        // too) until the copy has run; `stream` is a live stream of this device.
        unsafe {
            result::memcpy_htod_async(
                self.dev.api(),
                self.ptr + (offset * size_of::<T>()) as u64,
                src.ptr.add(range.start).cast::<c_void>().cast_const(),
                n * size_of::<T>(),
                stream.raw.0,
            )?;
        }
        // Recorded after the copy on the same stream: complete once the copy has read `src`.
        // Should recording fail, wait for the stream instead, so no copy outlives its guard.
        if let Err(e) = event.record(stream) {
            stream.synchronize()?;
            return Err(e);
        }
        src.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
        Ok(())
    }

    /// Copies the buffer into `dst` (exactly [`len`](Self::len) elements, else `hipErrorInvalidValue`).
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<(), DriverError> {
        if dst.len() != self.len {
            return Err(len_error(
                &self.dev,
                "hipMemcpy",
                "cuMemcpyDtoH",
                dst.len(),
                self.len,
            ));
        }
        self.dev.bind()?;
        // SAFETY: as in `copy_from_host`, in the other direction.
        unsafe { result::memcpy_dtoh(self.dev.api(), as_bytes_mut(dst), self.ptr) }
    }

    /// Copies the buffer into a new `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>, DriverError>
    where
        T: Default,
    {
        let mut v = vec![T::default(); self.len];
        self.copy_to_host(&mut v)?;
        Ok(v)
    }
}

/// `len` elements of `T` in page-locked host memory ([`Device::alloc_pinned`]); dereferences
/// to `[T]` and is freed (`hipHostFree` / `cuMemFreeHost`) on drop. Synchronous copies
/// ([`DeviceBuffer::copy_from_host`]) return after the copy engine is done with it; an
/// asynchronous one ([`DeviceBuffer::copy_from_pinned_async`]) records an event, and every
/// mutable access ([`DerefMut`](std::ops::DerefMut)), [`PinnedHostBuffer::synchronize`] and
/// the drop wait for those events first, so the host never writes or frees memory a queued
/// copy still reads.
pub struct PinnedHostBuffer<T: DeviceCopy> {
    dev: Arc<Device>,
    ptr: *mut T,
    len: usize,
    /// Events recorded after the asynchronous copies that read this buffer.
    pending: std::sync::Mutex<Vec<Event>>,
}

// SAFETY: the buffer owns its allocation exclusively (like a `Vec<T>`), and `T: DeviceCopy` is
// `Send + Sync`; the driver calls that free it may be made from any thread (the device is
// bound first).
unsafe impl<T: DeviceCopy> Send for PinnedHostBuffer<T> {}
// SAFETY: shared access only reads through `&[T]`.
unsafe impl<T: DeviceCopy> Sync for PinnedHostBuffer<T> {}

impl<T: DeviceCopy> std::fmt::Debug for PinnedHostBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PinnedHostBuffer({} × {} bytes)",
            self.len,
            size_of::<T>()
        )
    }
}

impl<T: DeviceCopy> PinnedHostBuffer<T> {
    /// The device whose driver locked the memory.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// Waits until every asynchronous copy queued from this buffer has read it.
    ///
    /// # Errors
    /// The driver's error of `hipEventSynchronize` / `cuEventSynchronize` (the events not
    /// yet waited for are kept, so a later call waits again).
    pub fn synchronize(&self) -> Result<(), DriverError> {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(e) = pending.last() {
            e.synchronize()?;
            pending.pop();
        }
        Ok(())
    }
}

impl<T: DeviceCopy> std::ops::Deref for PinnedHostBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialized (zeroed at allocation) elements owned by
        // this buffer for its whole life.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: DeviceCopy> std::ops::DerefMut for PinnedHostBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        if let Err(e) = self.synchronize() {
            // The event could not be waited for (the context is broken); wait for the whole
            // device instead, so no copy can still be reading what the caller writes.
            log::warn!("waiting for copies from a page-locked host buffer: {e}");
            let _ = self.dev.bind().and_then(|()| {
                // SAFETY: the null stream is always valid.
                unsafe { result::stream_synchronize(self.dev.api(), std::ptr::null_mut()) }
            });
        }
        // SAFETY: as in `deref`; `&mut self` makes the host access exclusive, and no queued
        // copy reads the memory any more (waited for above).
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T: DeviceCopy> Drop for PinnedHostBuffer<T> {
    fn drop(&mut self) {
        if let Err(e) = self.synchronize() {
            log::warn!("waiting for copies from a page-locked host buffer: {e}");
        }
        let r = self.dev.bind().and_then(|()| {
            // SAFETY: `ptr` came from `host_malloc` and is freed once, here; copies that used
            // it were synchronous, so none is pending.
            unsafe { result::host_free(self.dev.api(), self.ptr.cast()) }
        });
        if let Err(e) = r {
            log::warn!("freeing a page-locked host buffer: {e}");
        }
    }
}

#[derive(Debug)]
struct ModuleInner {
    dev: Arc<Device>,
    raw: OpaqueHandle,
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        let r = self.dev.bind().and_then(|()| {
            // SAFETY: loaded in `load_module`, unloaded once; every `Function` holds this
            // `Arc<ModuleInner>`, so none is left.
            unsafe { result::module_unload(self.dev.api(), self.raw.0) }
        });
        if let Err(e) = r {
            log::warn!("unloading a module: {e}");
        }
    }
}

/// A loaded code object; unloaded when it and all its [`Function`]s are dropped.
#[derive(Debug, Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

/// The kind of one explicit kernel argument (AMDGPU `.value_kind`, verbatim spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// `global_buffer`: a device address (8 bytes).
    GlobalBuffer,
    /// `by_value`: a scalar or struct passed by value.
    ByValue,
}

impl ArgKind {
    /// The AMDGPU metadata spelling (`global_buffer`, `by_value`).
    pub fn as_str(self) -> &'static str {
        match self {
            ArgKind::GlobalBuffer => "global_buffer",
            ArgKind::ByValue => "by_value",
        }
    }

    /// Parses the AMDGPU spelling; `None` for kinds this layer cannot pass (e.g. `hidden_*`).
    pub fn parse(s: &str) -> Option<ArgKind> {
        match s {
            "global_buffer" => Some(ArgKind::GlobalBuffer),
            "by_value" => Some(ArgKind::ByValue),
            _ => None,
        }
    }
}

/// One entry of a recorded kernel signature (kernel descriptor `signature`, kpack.md §8):
/// kind, size in bytes and byte offset in the explicit kernarg segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgSpec {
    /// Argument kind.
    pub kind: ArgKind,
    /// Size in bytes (8 for `global_buffer`).
    pub size: u32,
    /// Byte offset in the kernarg segment (natural alignment).
    pub offset: u32,
}

impl ArgSpec {
    /// Lays out `(kind, size)` pairs at natural alignment (offset rounded up to
    /// `min(size, 8)`), the layout clang gives `extern "C"` kernel parameters.
    pub fn natural_layout(args: &[(ArgKind, u32)]) -> Vec<ArgSpec> {
        let mut off = 0u32;
        args.iter()
            .map(|&(kind, size)| {
                let align = size.clamp(1, 8);
                off = off.div_ceil(align) * align;
                let a = ArgSpec {
                    kind,
                    size,
                    offset: off,
                };
                off += size;
                a
            })
            .collect()
    }
}

/// A signature is invalid, or launch arguments do not match it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The driver refused the launch.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// Arguments and signature disagree (message names the kernel, argument index, both sides).
    #[error("kernel '{kernel}': {detail}")]
    Signature {
        /// Kernel symbol.
        kernel: String,
        /// What disagrees.
        detail: String,
    },
}

impl Module {
    /// Looks up kernel `name` (undecorated, no `.kd`) and attaches its recorded `signature`.
    ///
    /// Errors: [`LaunchError::Signature`] when the signature is malformed (a `global_buffer`
    /// that is not 8 bytes, a zero size, an offset not aligned to `min(size, 8)`, or offsets not
    /// strictly increasing without overlap); [`LaunchError::Driver`] from
    /// `hipModuleGetFunction` (e.g. `hipErrorNotFound` / `CUDA_ERROR_NOT_FOUND`).
    pub fn function(&self, name: &str, signature: &[ArgSpec]) -> Result<Function, LaunchError> {
        let end = check_signature(name, signature)?;
        let dev = &self.inner.dev;
        dev.bind()?;
        // SAFETY: the module is loaded for as long as `self.inner` lives.
        let f = unsafe { result::module_get_function(dev.api(), self.inner.raw.0, name) }?;
        Ok(Function {
            module: Arc::clone(&self.inner),
            raw: OpaqueHandle(f),
            name: name.into(),
            signature: signature.to_vec(),
            kernarg_size: end,
        })
    }
}

/// Validates a signature (see [`Module::function`]); returns the end of its kernarg block.
fn check_signature(name: &str, signature: &[ArgSpec]) -> Result<u32, LaunchError> {
    let bad = |detail: String| LaunchError::Signature {
        kernel: name.into(),
        detail,
    };
    let mut end = 0u32;
    for (i, a) in signature.iter().enumerate() {
        if a.size == 0 || (a.kind == ArgKind::GlobalBuffer && a.size != 8) {
            return Err(bad(format!(
                "signature entry {i} is {} of {} bytes",
                a.kind.as_str(),
                a.size
            )));
        }
        if a.offset % a.size.min(8) != 0 || a.offset < end {
            return Err(bad(format!(
                "signature entry {i} has offset {} (previous argument ends at {end}, alignment {})",
                a.offset,
                a.size.min(8)
            )));
        }
        end = a.offset + a.size;
    }
    Ok(end)
}

/// One launch argument. Build with `From`: `(&buffer).into()`, `7i32.into()`, `1.5f32.into()`;
/// a raw device address only through the `unsafe` [`KernelArg::device_ptr`].
///
/// The variant is private: a buffer argument can only come from a borrowed [`DeviceBuffer`]
/// (its address, its device, and a borrow that keeps it alive) or from the caller's `unsafe`
/// promise, so [`Function::launch`] can stay safe.
#[derive(Debug, Clone, Copy)]
pub struct KernelArg<'a>(Arg<'a>);

#[derive(Debug, Clone, Copy)]
enum Arg<'a> {
    /// A device buffer (`global_buffer`, 8 bytes): its address and owning device ordinal.
    Buffer {
        ptr: u64,
        device: usize,
        _buf: PhantomData<&'a ()>,
    },
    /// A by-value scalar of 1, 2, 4 or 8 bytes, little-endian in the low bytes.
    Value { size: u32, bits: u64 },
}

impl KernelArg<'_> {
    /// The argument's size in bytes (8 for a buffer).
    pub fn size(&self) -> u32 {
        match self.0 {
            Arg::Buffer { .. } => 8,
            Arg::Value { size, .. } => size,
        }
    }

    /// Whether this is a buffer (`global_buffer`) argument.
    pub fn is_buffer(&self) -> bool {
        matches!(self.0, Arg::Buffer { .. })
    }
}

impl KernelArg<'static> {
    /// A `global_buffer` argument from a raw device address on device `device` (e.g. a
    /// variant-pack pointer the caller does not own as a [`DeviceBuffer`]). [`Function::launch`]
    /// checks only that the argument is a buffer where the signature records one and that
    /// `device` is the launching device; it cannot check the address.
    ///
    /// # Safety
    /// `ptr` is the start of (or an address inside) a live allocation of device `device` made by
    /// this process's driver, large enough for every access the kernel makes through this
    /// argument, and it stays allocated, and not written by anything else the kernel does not
    /// expect, until the launch has completed (synchronize the stream before freeing it); when
    /// the launch is recorded by a [`Stream::capture`], until every replay of a [`GraphExec`]
    /// made from that recording has completed (e.g. by holding an [`AllocationLease`] for as
    /// long as the executable graph can be launched). A wrong address makes the kernel read or
    /// write memory it does not own, which the device may report only later (or not at all,
    /// when the address belongs to another allocation).
    pub unsafe fn device_ptr(ptr: u64, device: usize) -> KernelArg<'static> {
        KernelArg(Arg::Buffer {
            ptr,
            device,
            _buf: PhantomData,
        })
    }
}

impl<'a, T: DeviceCopy> From<&'a DeviceBuffer<T>> for KernelArg<'a> {
    fn from(b: &'a DeviceBuffer<T>) -> Self {
        KernelArg(Arg::Buffer {
            ptr: b.ptr,
            device: b.dev.info.ordinal,
            _buf: PhantomData,
        })
    }
}
macro_rules! value_arg {
    ($($t:ty => $size:expr, $bits:expr;)*) => {$(
        impl From<$t> for KernelArg<'_> {
            fn from(v: $t) -> Self {
                let bits: fn($t) -> u64 = $bits;
                KernelArg(Arg::Value { size: $size, bits: bits(v) })
            }
        }
    )*};
}
value_arg! {
    i32 => 4, |v| v as u32 as u64;
    u32 => 4, |v| v as u64;
    f32 => 4, |v| v.to_bits() as u64;
    i64 => 8, |v| v as u64;
    u64 => 8, |v| v;
}

/// Launch geometry: grid and block dimensions and dynamic shared memory in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in x, y, z (each ≥ 1).
    pub grid: (u32, u32, u32),
    /// Threads per block in x, y, z (each ≥ 1).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory bytes.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch covering `n` threads with `block` threads per block
    /// (grid = ceil(n / block), at least 1).
    pub fn linear(n: u64, block: u32) -> LaunchConfig {
        let grid = n.div_ceil(block.max(1) as u64).clamp(1, u32::MAX as u64) as u32;
        LaunchConfig {
            grid: (grid, 1, 1),
            block: (block.max(1), 1, 1),
            shared_bytes: 0,
        }
    }
}

/// A kernel with its recorded signature; keeps its module loaded.
#[derive(Debug, Clone)]
pub struct Function {
    module: Arc<ModuleInner>,
    raw: OpaqueHandle,
    name: String,
    signature: Vec<ArgSpec>,
    kernarg_size: u32,
}

impl Function {
    /// Kernel symbol.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The recorded signature.
    pub fn signature(&self) -> &[ArgSpec] {
        &self.signature
    }

    /// The same kernel with another recorded signature (validated as in [`Module::function`]),
    /// e.g. the kernel descriptor's `signature` of the launch at hand, so that
    /// [`Function::launch`] checks the arguments against that record.
    pub fn with_signature(&self, signature: &[ArgSpec]) -> Result<Function, LaunchError> {
        let end = check_signature(&self.name, signature)?;
        Ok(Function {
            signature: signature.to_vec(),
            kernarg_size: end,
            ..self.clone()
        })
    }

    /// Lets launches of this function use up to `bytes` of dynamic shared memory
    /// (`hipFuncSetAttribute` / `cuFuncSetAttribute`, max-dynamic-shared-size attribute);
    /// [`Function::launch`] calls it itself when a launch asks for more than
    /// [`STATIC_SHARED_LIMIT`] bytes.
    ///
    /// Errors: the driver's refusal, e.g. `bytes` above the device's opt-in limit.
    pub fn set_max_dynamic_shared_bytes(&self, bytes: u32) -> Result<(), DriverError> {
        let dev = &self.module.dev;
        dev.bind()?;
        // SAFETY: `raw` is a function of the module kept loaded by `self.module`.
        unsafe { result::func_set_max_dynamic_shared(dev.api(), self.raw.0, bytes) }
    }

    /// Queues the kernel on `stream` with `args` checked against the signature recorded at
    /// [`Module::function`] / [`Function::with_signature`] (never derived from `args`): same
    /// count; a buffer only for `global_buffer`, a value only for `by_value` of the same size;
    /// buffers and stream on this function's device. Each argument is written at its recorded
    /// offset. Returns when queued (asynchronous): borrowed buffers must stay alive until the
    /// stream is synchronized (dropping a buffer waits for the device, see [`DeviceBuffer`]).
    ///
    /// Safe because every buffer argument is either a borrowed [`DeviceBuffer`] of the right
    /// device or a raw address vouched for by the caller of the `unsafe`
    /// [`KernelArg::device_ptr`]. What a kernel does with its arguments (e.g. indexing past a
    /// buffer's end) is not checked.
    ///
    /// Errors: [`LaunchError::Signature`] for any mismatch (nothing is launched);
    /// [`LaunchError::Driver`] from `hipModuleLaunchKernel` / `cuLaunchKernel`.
    pub fn launch(
        &self,
        stream: &Stream,
        cfg: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), LaunchError> {
        let dev = &self.module.dev;
        self.check_stream(stream)?;
        let mut block = pack_kernargs(
            &self.name,
            &self.signature,
            self.kernarg_size,
            dev.info.ordinal,
            args,
        )?;
        let mut params = Vec::new();
        self.launch_block(stream, cfg, &mut block, &mut params)
    }

    /// `stream` is of this function's device, else [`LaunchError::Signature`] naming both.
    fn check_stream(&self, stream: &Stream) -> Result<(), LaunchError> {
        let dev = &self.module.dev;
        if !Arc::ptr_eq(&stream.dev, dev) && stream.dev.info.ordinal != dev.info.ordinal {
            return Err(LaunchError::Signature {
                kernel: self.name.clone(),
                detail: format!(
                    "stream belongs to device {}, the module to device {}",
                    stream.dev.info.ordinal, dev.info.ordinal
                ),
            });
        }
        Ok(())
    }

    /// Queues the kernel with the kernarg block `block` (written for this function's
    /// signature: by `pack_kernargs` from checked arguments, plus checked buffer
    /// replacements), `params` being scratch for the per-argument pointers into it. The stream
    /// was checked to be of this function's device.
    fn launch_block(
        &self,
        stream: &Stream,
        cfg: LaunchConfig,
        block: &mut [u64],
        params: &mut Vec<*mut c_void>,
    ) -> Result<(), LaunchError> {
        let dev = &self.module.dev;
        let base = block.as_mut_ptr().cast::<u8>();
        params.clear();
        params.extend(
            self.signature
                .iter()
                .map(|s| base.wrapping_add(s.offset as usize).cast::<c_void>()),
        );
        if cfg.shared_bytes > STATIC_SHARED_LIMIT {
            self.set_max_dynamic_shared_bytes(cfg.shared_bytes)?;
        }
        dev.bind()?;
        // SAFETY: `raw` is a function of the module kept loaded by `self.module`, on `dev`
        // (current); the stream is a live stream of the same device (checked by the callers);
        // `params` holds one pointer per explicit argument into `block`, each to `spec.size`
        // bytes the callers wrote from arguments checked against this signature, alive until
        // this call returns; buffer addresses come from live `DeviceBuffer`s of the same device
        // borrowed for the caller's `'_`, or from `KernelArg::device_ptr`, whose caller
        // promised a live allocation of this device until the launch completes.
        unsafe {
            result::launch_kernel(
                dev.api(),
                self.raw.0,
                cfg.grid,
                cfg.block,
                cfg.shared_bytes,
                stream.raw.0,
                params,
            )?;
        }
        Ok(())
    }
}

/// A function's kernel arguments checked and packed once ([`Function::pack`]), for launches
/// that replace only buffer addresses ([`Function::launch_packed`]): what a plan launches many
/// times with the same scalars pays the per-argument checks and packing once.
#[derive(Debug, Clone)]
pub struct PackedArgs {
    /// The function the block was packed for (its driver handle, compared at launch).
    function: OpaqueHandle,
    /// The kernarg block, as [`Function::launch`] builds it.
    block: Vec<u64>,
}

thread_local! {
    /// This thread's kernarg block and parameter pointers for [`Function::launch_packed`],
    /// kept between launches so that a launch does not allocate.
    static PACKED_SCRATCH: std::cell::RefCell<(Vec<u64>, Vec<*mut c_void>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

impl Function {
    /// Checks `args` against the recorded signature as [`Function::launch`] does and packs
    /// them into a kernarg block for [`Function::launch_packed`]. The arguments are `'static`:
    /// values, and buffers from [`KernelArg::device_ptr`] (whose caller vouched for the
    /// address), since the block outlives this call.
    ///
    /// Errors: [`LaunchError::Signature`] as [`Function::launch`] (count, kinds, sizes, device).
    pub fn pack(&self, args: &[KernelArg<'static>]) -> Result<PackedArgs, LaunchError> {
        let block = pack_kernargs(
            &self.name,
            &self.signature,
            self.kernarg_size,
            self.module.dev.info.ordinal,
            args,
        )?;
        Ok(PackedArgs {
            function: OpaqueHandle(self.raw.0),
            block,
        })
    }

    /// Queues the kernel on `stream` with the arguments of `packed` (from [`Function::pack`] of
    /// this function), the buffer arguments at the indices of `buffers` replaced by the given
    /// buffers for this launch only (`packed` is not changed). Each replacement is checked as
    /// [`Function::launch`] checks a buffer (a `global_buffer` of the signature, on this
    /// function's device); the other arguments were checked by `pack`. No allocation: the
    /// block is copied into a buffer kept per thread. Asynchronous as [`Function::launch`], with
    /// the same rules for the buffers' lifetimes.
    ///
    /// Errors: [`LaunchError::Signature`] when `packed` was packed for another function, an
    /// index is outside the signature, a replacement is not a buffer of this device or its
    /// index is not a `global_buffer`, or the stream is another device's (nothing is
    /// launched); [`LaunchError::Driver`] from the launch.
    pub fn launch_packed(
        &self,
        stream: &Stream,
        cfg: LaunchConfig,
        packed: &PackedArgs,
        buffers: &[(usize, KernelArg<'_>)],
    ) -> Result<(), LaunchError> {
        let bad = |detail: String| LaunchError::Signature {
            kernel: self.name.clone(),
            detail,
        };
        let dev = &self.module.dev;
        if packed.function.0 != self.raw.0 {
            return Err(bad(
                "the packed arguments were packed for another function".to_string()
            ));
        }
        self.check_stream(stream)?;
        PACKED_SCRATCH.with(|cell| {
            let mut own = (Vec::new(), Vec::new());
            let mut kept = cell.try_borrow_mut();
            let (block, params) = match kept.as_deref_mut() {
                Ok((b, p)) => (b, p),
                Err(_) => (&mut own.0, &mut own.1),
            };
            block.clear();
            block.extend_from_slice(&packed.block);
            let bytes = as_bytes_mut(block);
            for (i, arg) in buffers {
                let spec = self.signature.get(*i).ok_or_else(|| {
                    bad(format!(
                        "argument {i} is outside the signature of {} arguments",
                        self.signature.len()
                    ))
                })?;
                let Arg::Buffer {
                    ptr, device: owner, ..
                } = arg.0
                else {
                    return Err(bad(format!(
                        "argument {i} is replaced by a value; only buffers can be replaced"
                    )));
                };
                if spec.kind != ArgKind::GlobalBuffer {
                    return Err(bad(format!(
                        "argument {i} is a buffer, the signature records by_value of {} bytes at offset {}",
                        spec.size, spec.offset
                    )));
                }
                if owner != dev.info.ordinal {
                    return Err(bad(format!(
                        "argument {i} is a buffer of device {owner}, the kernel runs on device {}",
                        dev.info.ordinal
                    )));
                }
                let o = spec.offset as usize;
                bytes[o..o + 8].copy_from_slice(&ptr.to_le_bytes());
            }
            self.launch_block(stream, cfg, block, params)
        })
    }
}

/// Dynamic shared memory a launch may use without raising the function's
/// max-dynamic-shared-size attribute: 48 KiB (the CUDA default; AMD allows 64 KiB).
pub const STATIC_SHARED_LIMIT: u32 = 48 * 1024;

/// Checks `args` against the recorded `signature` (same count; a buffer only for
/// `global_buffer`, and of device `device`; a value only for `by_value` of the same size) and
/// writes each at its recorded offset into a zeroed, 8-byte aligned kernarg block of
/// `kernarg_size` bytes (rounded up to whole `u64`s, at least one).
///
/// Errors: [`LaunchError::Signature`] naming `kernel`, the argument index and both sides.
fn pack_kernargs(
    kernel: &str,
    signature: &[ArgSpec],
    kernarg_size: u32,
    device: usize,
    args: &[KernelArg<'_>],
) -> Result<Vec<u64>, LaunchError> {
    let bad = |detail: String| LaunchError::Signature {
        kernel: kernel.into(),
        detail,
    };
    if args.len() != signature.len() {
        return Err(bad(format!(
            "{} arguments given, the signature has {}",
            args.len(),
            signature.len()
        )));
    }
    let mut block = vec![0u64; (kernarg_size as usize).div_ceil(8).max(1)];
    let bytes = as_bytes_mut(&mut block);
    for (i, (arg, spec)) in args.iter().zip(signature).enumerate() {
        let (size, bits) = match arg.0 {
            Arg::Buffer {
                ptr, device: owner, ..
            } => {
                if spec.kind != ArgKind::GlobalBuffer {
                    return Err(bad(format!(
                        "argument {i} is a buffer, the signature records by_value of {} bytes at offset {}",
                        spec.size, spec.offset
                    )));
                }
                if owner != device {
                    return Err(bad(format!(
                        "argument {i} is a buffer of device {owner}, the kernel runs on device {device}"
                    )));
                }
                (8u32, ptr)
            }
            Arg::Value { size, bits } => {
                if spec.kind != ArgKind::ByValue || spec.size != size {
                    return Err(bad(format!(
                        "argument {i} is a by_value of {size} bytes, the signature records {} of {} bytes at offset {}",
                        spec.kind.as_str(),
                        spec.size,
                        spec.offset
                    )));
                }
                (size, bits)
            }
        };
        let o = spec.offset as usize;
        bytes[o..o + size as usize].copy_from_slice(&bits.to_le_bytes()[..size as usize]);
    }
    Ok(block)
}

/// A stream: a blocking one made by [`Stream::new`] (`hipStreamCreate` / `cuStreamCreate(0)`)
/// or a non-blocking one by [`Stream::new_non_blocking`], destroyed on drop; the device's null
/// stream ([`Stream::default_stream`]); or a caller's stream ([`Stream::borrowed`]), never
/// destroyed here.
#[derive(Debug)]
pub struct Stream {
    dev: Arc<Device>,
    raw: OpaqueHandle,
    /// Whether drop destroys the stream (made here, not null, not borrowed).
    owned: bool,
}

impl Stream {
    /// Creates a stream on `dev`.
    pub fn new(dev: &Arc<Device>) -> Result<Stream, DriverError> {
        dev.bind()?;
        let s = result::stream_create(dev.api())?;
        Ok(Stream {
            dev: Arc::clone(dev),
            raw: OpaqueHandle(s),
            owned: true,
        })
    }

    /// Creates a non-blocking stream on `dev` (`hipStreamCreateWithFlags(hipStreamNonBlocking)`
    /// / `cuStreamCreate(CU_STREAM_NON_BLOCKING)`): it does not wait for the null stream nor
    /// the null stream for it, which is what [`Stream::capture`] needs.
    pub fn new_non_blocking(dev: &Arc<Device>) -> Result<Stream, DriverError> {
        dev.bind()?;
        let s = result::stream_create_non_blocking(dev.api())?;
        Ok(Stream {
            dev: Arc::clone(dev),
            raw: OpaqueHandle(s),
            owned: true,
        })
    }

    /// The device's default (null) stream; nothing is created or destroyed.
    pub fn default_stream(dev: &Arc<Device>) -> Stream {
        Stream {
            dev: Arc::clone(dev),
            raw: OpaqueHandle(std::ptr::null_mut()),
            owned: false,
        }
    }

    /// A stream the caller made (`hipStream_t` / `CUstream`, e.g. the value given to
    /// `hipdnnSetStream`), used but never destroyed here; null is the default stream.
    ///
    /// # Safety
    /// `raw` is null or a live stream of `dev` that stays alive as long as the returned value
    /// and any work queued through it.
    pub unsafe fn borrowed(dev: &Arc<Device>, raw: *mut c_void) -> Stream {
        Stream {
            dev: Arc::clone(dev),
            raw: OpaqueHandle(raw),
            owned: false,
        }
    }

    /// The stream as the 64-bit value a hipDNN handle stores (`hipdnnSetStream`'s
    /// `hipStream_t`; 0 for the default stream).
    pub fn handle_value(&self) -> u64 {
        self.raw.0 as u64
    }

    /// The owning device.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// Queues a fill of `bytes` bytes at device address `addr` with `value` on this stream
    /// (`hipMemsetAsync` / `cuMemsetD8Async`), ordered before later launches on it.
    ///
    /// # Safety
    /// `addr` is a live device allocation of this stream's device with at least `bytes`
    /// bytes (e.g. a variant-pack workspace the caller does not own as a
    /// [`DeviceBuffer`]) that stays allocated until the fill completes — when the fill is
    /// recorded by a [`Stream::capture`], until every replay of it has completed.
    pub unsafe fn memset_raw(&self, addr: u64, value: u8, bytes: usize) -> Result<(), DriverError> {
        self.dev.bind()?;
        // SAFETY: per the caller's contract; the stream lives as long as `self`.
        unsafe { result::memset_d8_async(self.dev.api(), addr, value, bytes, self.raw.0) }
    }

    /// Waits until all work queued on the stream has completed; reports kernel faults.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.dev.bind()?;
        // SAFETY: the stream lives as long as `self`.
        unsafe { result::stream_synchronize(self.dev.api(), self.raw.0) }
    }

    /// Records what `record` queues on this stream into a [`CapturedGraph`] instead of running
    /// it (`hipStreamBeginCapture` / `cuStreamBeginCapture` in relaxed mode, then
    /// `hipStreamEndCapture` / `cuStreamEndCapture`). The capture is ended whatever `record`
    /// returns, and if it panics; on `Err` from `record` the partial graph is dropped and the
    /// error returned.
    ///
    /// # Errors
    /// `hipErrorInvalidValue` (code -1, nothing called) on the null stream, which cannot be
    /// captured; the driver's error when the capture cannot begin or end (e.g.
    /// `hipErrorStreamCaptureInvalidated` after a synchronizing call during the capture, or
    /// `hipErrorNotSupported` (801) when the runtime lacks the graph API); else `record`'s.
    pub fn capture<T, E: From<DriverError>>(
        &self,
        record: impl FnOnce() -> Result<T, E>,
    ) -> Result<(CapturedGraph, T), E> {
        if self.raw.0.is_null() {
            return Err(result::local_error(
                self.dev.api(),
                "hipStreamBeginCapture",
                "cuStreamBeginCapture",
                "hipErrorInvalidValue",
                "the default (null) stream cannot be captured; capture on a stream of its own (Stream::new_non_blocking)".into(),
            )
            .into());
        }
        self.dev.bind()?;
        // SAFETY: the stream lives as long as `self` and is not the null stream; a capture
        // begun here is always ended below (or by the guard on unwind).
        unsafe { result::stream_begin_capture(self.dev.api(), self.raw.0) }?;
        /// Ends a capture left open by a panic in `record`, dropping its graph.
        struct Open<'a>(Option<&'a Stream>);
        impl Drop for Open<'_> {
            fn drop(&mut self) {
                if let Some(s) = self.0.take() {
                    let _ = s.end_capture();
                }
            }
        }
        let mut open = Open(Some(self));
        let recorded = record();
        open.0 = None;
        let graph = self.end_capture();
        let value = recorded?;
        Ok((graph?, value))
    }

    /// Ends this stream's capture and takes its graph.
    fn end_capture(&self) -> Result<CapturedGraph, DriverError> {
        self.dev.bind()?;
        // SAFETY: called only by `capture`, after it began a capture on this live stream.
        let g = unsafe { result::stream_end_capture(self.dev.api(), self.raw.0) }?;
        Ok(CapturedGraph {
            dev: Arc::clone(&self.dev),
            raw: OpaqueHandle(g),
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if !self.owned || self.raw.0.is_null() {
            return;
        }
        let r = self.dev.bind().and_then(|()| {
            // SAFETY: created in `new`/`new_non_blocking`, destroyed once here.
            unsafe { result::stream_destroy(self.dev.api(), self.raw.0) }
        });
        if let Err(e) = r {
            log::warn!("destroying a stream: {e}");
        }
    }
}

/// The launches one [`Stream::capture`] recorded (`hipGraph_t` / `CUgraph`), destroyed on
/// drop. Replayed through [`CapturedGraph::instantiate`].
#[derive(Debug)]
pub struct CapturedGraph {
    dev: Arc<Device>,
    raw: OpaqueHandle,
}

impl CapturedGraph {
    /// How many nodes (kernel launches, fills, copies) the graph holds.
    pub fn node_count(&self) -> Result<usize, DriverError> {
        self.dev.bind()?;
        // SAFETY: the graph lives as long as `self`.
        unsafe { result::graph_node_count(self.dev.api(), self.raw.0) }
    }

    /// An executable graph of this one (`hipGraphInstantiateWithFlags` /
    /// `cuGraphInstantiateWithFlags`, flags 0); independent of `self` afterwards.
    pub fn instantiate(&self) -> Result<GraphExec, DriverError> {
        self.dev.bind()?;
        // SAFETY: the graph lives as long as `self`.
        let e = unsafe { result::graph_instantiate(self.dev.api(), self.raw.0) }?;
        Ok(GraphExec {
            dev: Arc::clone(&self.dev),
            raw: OpaqueHandle(e),
        })
    }
}

impl Drop for CapturedGraph {
    fn drop(&mut self) {
        let r = self.dev.bind().and_then(|()| {
            // SAFETY: made by `end_capture`, destroyed once here.
            unsafe { result::graph_destroy(self.dev.api(), self.raw.0) }
        });
        if let Err(e) = r {
            log::warn!("destroying a graph: {e}");
        }
    }
}

/// An executable graph (`hipGraphExec_t` / `CUgraphExec`), destroyed on drop (after the
/// device finished the replays queued: the driver defers the release).
#[derive(Debug)]
pub struct GraphExec {
    dev: Arc<Device>,
    raw: OpaqueHandle,
}

impl GraphExec {
    /// Queues one replay on `stream` (`hipGraphLaunch` / `cuGraphLaunch`). The recorded
    /// launches use the device addresses they were captured (or last [updated](Self::update))
    /// with; keeping those allocated through every replay is the obligation of whoever made
    /// the launch arguments ([`KernelArg::device_ptr`], [`Stream::memset_raw`]: both `unsafe`,
    /// their contracts cover replays). Buffers of this crate's own launches
    /// ([`DeviceBuffer`] arguments) must be kept, or leased ([`DeviceBuffer::lease`]), as long
    /// as the graph may be launched.
    ///
    /// # Errors
    /// `hipErrorInvalidHandle` (code -1, nothing called) for a stream of another device; the
    /// driver's error.
    pub fn launch(&self, stream: &Stream) -> Result<(), DriverError> {
        if stream.dev.info.ordinal != self.dev.info.ordinal {
            return Err(result::local_error(
                self.dev.api(),
                "hipGraphLaunch",
                "cuGraphLaunch",
                "hipErrorInvalidHandle",
                format!(
                    "the graph belongs to device {}, the stream to device {}",
                    self.dev.info.ordinal, stream.dev.info.ordinal
                ),
            ));
        }
        self.dev.bind()?;
        // SAFETY: the executable graph and the stream are live (owned by `self` / `stream`,
        // same device, checked above). The addresses the replay uses were handed to the
        // recorded launches under the contracts of `KernelArg::device_ptr` and
        // `Stream::memset_raw`, which require them to stay allocated through every replay.
        unsafe { result::graph_launch(self.dev.api(), self.raw.0, stream.raw.0) }
    }

    /// Gives this executable graph the node parameters (kernel arguments: buffer addresses,
    /// fill targets) of `graph`, which must have the same topology (`hipGraphExecUpdate` /
    /// `cuGraphExecUpdate`).
    ///
    /// # Errors
    /// The driver's error with the update result appended (`…; update result 2: the topology
    /// changed …`); `self` is then unchanged where the driver leaves it so.
    pub fn update(&mut self, graph: &CapturedGraph) -> Result<(), DriverError> {
        self.dev.bind()?;
        // SAFETY: both live; `&mut self` keeps replays from being queued through this value
        // meanwhile.
        unsafe { result::graph_exec_update(self.dev.api(), self.raw.0, graph.raw.0) }
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        let r = self.dev.bind().and_then(|()| {
            // SAFETY: made by `instantiate`, destroyed once here; the driver releases it once
            // queued replays complete.
            unsafe { result::graph_exec_destroy(self.dev.api(), self.raw.0) }
        });
        if let Err(e) = r {
            log::warn!("destroying an executable graph: {e}");
        }
    }
}

/// A timing event (`hipEventCreate` / `cuEventCreate(0)`), destroyed on drop.
#[derive(Debug)]
pub struct Event {
    dev: Arc<Device>,
    raw: OpaqueHandle,
}

impl Event {
    /// Creates an event on `dev`.
    pub fn new(dev: &Arc<Device>) -> Result<Event, DriverError> {
        dev.bind()?;
        let e = result::event_create(dev.api())?;
        Ok(Event {
            dev: Arc::clone(dev),
            raw: OpaqueHandle(e),
        })
    }

    /// Records the event on `stream` (same device, else `hipErrorInvalidHandle`).
    pub fn record(&self, stream: &Stream) -> Result<(), DriverError> {
        if stream.dev.info.ordinal != self.dev.info.ordinal {
            return Err(result::local_error(
                self.dev.api(),
                "hipEventRecord",
                "cuEventRecord",
                "hipErrorInvalidHandle",
                "event and stream belong to different devices".into(),
            ));
        }
        self.dev.bind()?;
        // SAFETY: both live, same device.
        unsafe { result::event_record(self.dev.api(), self.raw.0, stream.raw.0) }
    }

    /// Waits for the event to complete.
    pub fn synchronize(&self) -> Result<(), DriverError> {
        self.dev.bind()?;
        // SAFETY: the event lives as long as `self`.
        unsafe { result::event_synchronize(self.dev.api(), self.raw.0) }
    }

    /// Milliseconds from `self` to `end`; both must have been recorded and completed
    /// (else `hipErrorNotReady` / `CUDA_ERROR_NOT_READY` or invalid-handle errors).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, DriverError> {
        self.dev.bind()?;
        // SAFETY: both events live as long as the borrows.
        unsafe { result::event_elapsed_ms(self.dev.api(), self.raw.0, end.raw.0) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let r = self.dev.bind().and_then(|()| {
            // SAFETY: created in `new`, destroyed once here.
            unsafe { result::event_destroy(self.dev.api(), self.raw.0) }
        });
        if let Err(e) = r {
            log::warn!("destroying an event: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_config_rounds_up() {
        assert_eq!(LaunchConfig::linear(1000, 256).grid, (4, 1, 1));
        assert_eq!(LaunchConfig::linear(0, 256).grid, (1, 1, 1));
        assert_eq!(LaunchConfig::linear(256, 256).grid, (1, 1, 1));
    }

    #[test]
    fn load_without_a_driver_reports_no_gpu_or_succeeds() {
        match GpuRuntime::load() {
            Ok(rt) => assert!(!rt.devices().is_empty()),
            Err(e) => assert_eq!(e.to_string(), format!("no GPU: {}", e.reason)),
        }
    }

    /// `[global_buffer@0, by_value 4@8, by_value 8@16]`, as a kernel descriptor records it.
    fn recorded() -> Vec<ArgSpec> {
        vec![
            ArgSpec {
                kind: ArgKind::GlobalBuffer,
                size: 8,
                offset: 0,
            },
            ArgSpec {
                kind: ArgKind::ByValue,
                size: 4,
                offset: 8,
            },
            ArgSpec {
                kind: ArgKind::ByValue,
                size: 8,
                offset: 16,
            },
        ]
    }

    #[test]
    fn arguments_are_written_at_their_recorded_offsets() {
        let sig = recorded();
        let end = check_signature("k", &sig).unwrap();
        assert_eq!(end, 24);
        // SAFETY: the address is never dereferenced: only packed into a block and compared.
        let ptr = unsafe { KernelArg::device_ptr(0x1122_3344_5566_7788, 0) };
        let block = pack_kernargs("k", &sig, end, 0, &[ptr, (-2i32).into(), 9u64.into()]).unwrap();
        assert_eq!(block, vec![0x1122_3344_5566_7788, 0xffff_fffe, 9]);
    }

    #[test]
    fn arguments_that_disagree_with_the_recorded_signature_are_refused() {
        let sig = recorded();
        // SAFETY: as above, never dereferenced.
        let ptr = unsafe { KernelArg::device_ptr(0x1000, 0) };
        let err = |args: &[KernelArg<'_>], device: usize| {
            pack_kernargs("k", &sig, 24, device, args)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&[ptr, 1i32.into()], 0),
            "kernel 'k': 2 arguments given, the signature has 3"
        );
        assert_eq!(
            err(&[1i32.into(), 1i32.into(), 1u64.into()], 0),
            "kernel 'k': argument 0 is a by_value of 4 bytes, the signature records global_buffer of 8 bytes at offset 0"
        );
        assert_eq!(
            err(&[ptr, ptr, 1u64.into()], 0),
            "kernel 'k': argument 1 is a buffer, the signature records by_value of 4 bytes at offset 8"
        );
        assert_eq!(
            err(&[ptr, 1i32.into(), 1i32.into()], 0),
            "kernel 'k': argument 2 is a by_value of 4 bytes, the signature records by_value of 8 bytes at offset 16"
        );
        assert_eq!(
            err(&[ptr, 1i32.into(), 1u64.into()], 1),
            "kernel 'k': argument 0 is a buffer of device 0, the kernel runs on device 1"
        );
    }

    #[test]
    fn arg_kinds_round_trip() {
        for k in [ArgKind::GlobalBuffer, ArgKind::ByValue] {
            assert_eq!(ArgKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(ArgKind::parse("hidden_block_count_x"), None);
    }
}
