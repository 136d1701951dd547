//! The device seam of the ingestor: what the engine needs from a GPU runtime, as traits.
//!
//! A HIP/CUDA layer (`hip/src/`) implements [`IngestorDevice`], [`IngestorModule`] and
//! [`KernelFunction`]; GPU-free tests implement them with fakes. This module owns the shapes of
//! those calls and the per-device module memo ([`KernelCode`]) that loads a code object at most
//! once per device; it never calls a runtime itself.
//!
//! Upstream: `HKP/src/compilation/CodeObjectLoad.cpp`, `KIE/IngestorKernelCode.hpp`
//! (reference `ingestor-payload.md` §10).

use super::kernel::{CodeObjectIdentity, KernelArgument, code_object_identity};
use hipdnn_backend::SharedBytes;
use hipdnn_backend::status::{PluginError, PluginResult};
use once_cell::sync::OnceCell;
use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

/// A failed device call, with the runtime call that failed and its text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call}: {message}")]
pub struct DeviceError {
    /// The runtime call, e.g. `hipModuleLoadData (cuModuleLoadData)`.
    pub call: String,
    /// The runtime's error text.
    pub message: String,
}

impl DeviceError {
    /// Builds an error for `call`.
    pub fn new(call: impl Into<String>, message: impl Into<String>) -> Self {
        DeviceError {
            call: call.into(),
            message: message.into(),
        }
    }
}

/// A kernel function looked up in a loaded module (upstream `hipFunction_t`).
pub trait KernelFunction: Send + Sync + Any {
    /// Downcasting support: a device implementation recognises its own functions in
    /// [`IngestorDevice::launch`].
    fn as_any(&self) -> &dyn Any;
}

/// A function's kernel arguments packed once by the device that launches them
/// ([`IngestorDevice::pack_args`]), for launches that replace only pointer arguments
/// ([`IngestorDevice::launch_packed`]).
pub trait PackedKernelArgs: Send + Sync + Any {
    /// Downcasting support: a device recognises its own packed arguments.
    fn as_any(&self) -> &dyn Any;
}

/// A loaded code object (upstream `hipModule_t`); unloads itself when dropped.
pub trait IngestorModule: Send + Sync {
    /// Looks up an `extern "C"` kernel symbol (upstream `hipModuleGetFunction`).
    ///
    /// # Errors
    /// The runtime's refusal, e.g. a symbol the code object lacks.
    fn get_function(&self, symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError>;
}

/// One kernel argument value, in the order the kernel declares its arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelArgValue {
    /// A device pointer (`global_buffer`, 8 bytes).
    Pointer(u64),
    /// A 32-bit signed integer (`by_value`, 4 bytes).
    I32(i32),
    /// A 32-bit unsigned integer (`by_value`, 4 bytes).
    U32(u32),
    /// A 64-bit signed integer (`by_value`, 8 bytes).
    I64(i64),
    /// A 32-bit float (`by_value`, 4 bytes).
    F32(f32),
}

impl KernelArgValue {
    /// Size in bytes.
    pub fn size(&self) -> usize {
        match self {
            KernelArgValue::Pointer(_) | KernelArgValue::I64(_) => 8,
            _ => 4,
        }
    }
    /// Little-endian bytes of the value.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match *self {
            KernelArgValue::Pointer(v) => v.to_le_bytes().to_vec(),
            KernelArgValue::I32(v) => v.to_le_bytes().to_vec(),
            KernelArgValue::U32(v) => v.to_le_bytes().to_vec(),
            KernelArgValue::I64(v) => v.to_le_bytes().to_vec(),
            KernelArgValue::F32(v) => v.to_le_bytes().to_vec(),
        }
    }
}

/// Packs arguments into a kernel-argument buffer, each at its natural alignment (the layout
/// `hipModuleLaunchKernel`'s `HIP_LAUNCH_PARAM_BUFFER_POINTER` and `cuLaunchKernel`'s `extra`
/// expect).
pub fn pack_kernel_args(args: &[KernelArgValue]) -> Vec<u8> {
    let mut out = Vec::new();
    for a in args {
        let size = a.size();
        while out.len() % size != 0 {
            out.push(0);
        }
        out.extend_from_slice(&a.to_le_bytes());
    }
    out
}

/// Grid and block of one launch, in blocks and threads per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchGeometry {
    /// Grid size in blocks (x, y, z).
    pub grid: [u32; 3],
    /// Block size in threads (x, y, z).
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub shared_mem_bytes: u32,
}

/// A GPU as the ingestor uses it. Implemented by the HIP/CUDA runtime layer and by test fakes.
pub trait IngestorDevice: Send + Sync {
    /// Decorated architecture name: `gfx90a:sramecc+:xnack-`, `gfx942`, `sm_90`.
    fn arch(&self) -> String;

    /// Device ordinal (upstream: the HIP device id); negative = cannot be resolved.
    fn ordinal(&self) -> i32;

    /// The driver's version for messages (`CUDA driver 12.4 (12040)`), when the device knows
    /// it; the default knows nothing.
    fn driver_version_text(&self) -> Option<String> {
        None
    }

    /// Loads a code object on this device (upstream `hipModuleLoadData`; on NVIDIA
    /// `cuModuleLoadData`, with a NUL appended to PTX text in a copy).
    ///
    /// # Errors
    /// Device binding failure or the driver's refusal of the bytes.
    fn load_module(&self, code_object: &[u8]) -> Result<Arc<dyn IngestorModule>, DeviceError>;

    /// The module-sharing domain of this device: devices that return the same `Some(key)` (three words naming, e.g., platform, ordinal
    /// and context)
    /// can use one another's loaded modules (on HIP/CUDA: the same runtime, ordinal and
    /// context), so [`KernelCode::load_on`] reuses a module already resident in that domain
    /// for byte-identical code objects instead of loading them again (see
    /// [`resident_module_count`]). `None` (the default) shares nothing: every
    /// [`KernelCode`] loads its own module.
    fn module_share_key(&self) -> Option<[u64; 3]> {
        None
    }

    /// Launches `function` with `args` on `stream` (0 = default stream); asynchronous.
    ///
    /// `signature` is the kernel's recorded signature (the kernel descriptor's, or the saved
    /// payload's, `signature`: kind, size and kernarg offset per argument); a device checks
    /// `args` against it (count, kind, size) and places each value at its recorded offset.
    /// Pointer values are variant-pack device addresses of this device, which the execute
    /// contract requires to stay allocated until the work completes.
    ///
    /// # Errors
    /// Arguments that do not match `signature` (nothing is launched), or the runtime's launch
    /// failure.
    fn launch(
        &self,
        function: &dyn KernelFunction,
        geometry: LaunchGeometry,
        args: &[KernelArgValue],
        signature: &[KernelArgument],
        stream: u64,
    ) -> Result<(), DeviceError>;

    /// `function` prepared for launches with the recorded `signature`, once, when its module
    /// is loaded ([`KernelCode::load_on`] of a code object with a signature): a device that
    /// turns the recorded signature into its own form does it here instead of in every
    /// [`Self::launch`], and a launch of the returned function with that same `signature` skips
    /// the work. Infallible: a signature this device cannot prepare returns `function`
    /// unchanged, and its launches report the problem as before. The default returns
    /// `function`.
    fn bind_signature(
        &self,
        function: Arc<dyn KernelFunction>,
        signature: &[KernelArgument],
    ) -> Arc<dyn KernelFunction> {
        let _ = signature;
        function
    }

    /// `args` (a plan's kernel arguments as far as no execute changes them, pointer arguments
    /// that change per execute as null) checked against `signature` and packed once for
    /// `function`, when this device can launch packed arguments; `None` (the default) when it
    /// cannot or `args` do not fit `signature`: the plan then launches with [`Self::launch`].
    fn pack_args(
        &self,
        function: &dyn KernelFunction,
        args: &[KernelArgValue],
        signature: &[KernelArgument],
    ) -> Option<Arc<dyn PackedKernelArgs>> {
        let _ = (function, args, signature);
        None
    }

    /// Queues `function` with the arguments `packed` ([`Self::pack_args`] of this device and
    /// function), the pointer arguments at the indices of `pointers` replaced by the given
    /// device addresses for this launch. The addresses obey [`Self::launch`]'s rules.
    ///
    /// # Errors
    /// The default refuses (`hipModuleLaunchKernel: this device cannot launch packed
    /// arguments`); a device reports a mismatch as [`Self::launch`] does, or the runtime's
    /// launch failure.
    fn launch_packed(
        &self,
        function: &dyn KernelFunction,
        packed: &dyn PackedKernelArgs,
        geometry: LaunchGeometry,
        pointers: &[(usize, u64)],
        stream: u64,
    ) -> Result<(), DeviceError> {
        let _ = (function, packed, geometry, pointers, stream);
        Err(DeviceError::new(
            "hipModuleLaunchKernel",
            "this device cannot launch packed arguments",
        ))
    }

    /// Queues a fill of `bytes` bytes at device address `addr` with `value` on `stream`,
    /// ordered before later launches on it (upstream `hipMemsetAsync`; on NVIDIA
    /// `cuMemsetD8Async`). The plan uses it to zero the workspace prefix a launch contract
    /// asks for ([`crate::ingestor::DispatchHandler::zeroed_workspace_bytes`]); `addr` is the
    /// execute's workspace, which the execute contract requires to stay allocated until the
    /// work on the stream completes. The default refuses: a device that cannot fill memory
    /// cannot run such launches.
    ///
    /// # Errors
    /// `hipMemsetAsync: this device cannot fill memory`, or the runtime's failure.
    fn memset_async(
        &self,
        addr: u64,
        value: u8,
        bytes: u64,
        stream: u64,
    ) -> Result<(), DeviceError> {
        let _ = (addr, value, bytes, stream);
        Err(DeviceError::new(
            "hipMemsetAsync",
            "this device cannot fill memory",
        ))
    }

    /// Waits until all work on `stream` has finished (used to time benchmark candidates).
    ///
    /// # Errors
    /// The runtime's failure.
    fn synchronize(&self, stream: u64) -> Result<(), DeviceError>;

    /// Allocates `bytes` of device memory (contents unspecified) for the ingestor's own use:
    /// the tensors and workspace a benchmarking build times its candidates on. Freed when the
    /// returned value drops. The default refuses (a device without allocation, such as a test
    /// fake); a benchmarking build then times on the first execute instead.
    ///
    /// # Errors
    /// The runtime's allocation failure, or the default's refusal (`hipMalloc`: `this device
    /// does not allocate scratch memory`).
    fn alloc_scratch(&self, bytes: usize) -> Result<Box<dyn ScratchMemory>, DeviceError> {
        let _ = bytes;
        Err(DeviceError::new(
            "hipMalloc",
            "this device does not allocate scratch memory",
        ))
    }

    /// Device time in milliseconds of the work `enqueue` puts on `stream`: events recorded
    /// before and after it (`hipEventRecord` / `cuEventRecord`, then `hipEventElapsedTime`).
    /// The default synchronizes before and after and reads the host clock.
    ///
    /// # Errors
    /// `enqueue`'s error, or the runtime's failure as `INTERNAL_ERROR` `timing on the device
    /// failed: <call>: <text>`.
    fn time_ms(
        &self,
        stream: u64,
        enqueue: &mut dyn FnMut() -> PluginResult<()>,
    ) -> PluginResult<f64> {
        self.synchronize(stream).map_err(timing_failed)?;
        let t0 = std::time::Instant::now();
        enqueue()?;
        self.synchronize(stream).map_err(timing_failed)?;
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    }
}

/// The `INTERNAL_ERROR` of a device call that failed while timing on the device
/// ([`IngestorDevice::time_ms`]): `timing on the device failed: <call>: <text>`.
pub fn timing_failed(e: DeviceError) -> PluginError {
    PluginError::internal(format!("timing on the device failed: {e}"))
}

/// Device memory the ingestor allocated for itself ([`IngestorDevice::alloc_scratch`]).
pub trait ScratchMemory: Send + Sync {
    /// Device address of the first byte.
    fn addr(&self) -> u64;
}

/// Finds the device a handle's work goes to (upstream: the handle's device, `hipGetDevice`).
pub trait DeviceResolver: Send + Sync {
    /// The device of the calling thread's handle, `None` when there is none.
    fn current_device(&self) -> Option<Arc<dyn IngestorDevice>>;

    /// The device when this resolver always names the same one (borrowed: no reference count
    /// is touched per execute); `None` (the default) when the device must be resolved per
    /// call with [`Self::current_device`].
    fn fixed_device(&self) -> Option<&dyn IngestorDevice> {
        None
    }
}

/// A resolver that always names one device.
#[derive(Clone)]
pub struct FixedDevice(pub Arc<dyn IngestorDevice>);

impl fmt::Debug for FixedDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FixedDevice({} #{})", self.0.arch(), self.0.ordinal())
    }
}

impl DeviceResolver for FixedDevice {
    fn current_device(&self) -> Option<Arc<dyn IngestorDevice>> {
        Some(self.0.clone())
    }

    fn fixed_device(&self) -> Option<&dyn IngestorDevice> {
        Some(self.0.as_ref())
    }
}

/// A module and its kernel function, loaded on one device (the function prepared for the
/// code object's recorded signature, see [`IngestorDevice::bind_signature`]).
#[derive(Clone)]
pub struct LoadedKernel {
    /// The loaded module (kept alive as long as the function is used).
    pub module: Arc<dyn IngestorModule>,
    /// The kernel function.
    pub function: Arc<dyn KernelFunction>,
}

impl fmt::Debug for LoadedKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LoadedKernel")
    }
}

/// Where a load failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadStage {
    /// The code object is empty; the driver was not called.
    Empty,
    /// `hipModuleLoadData` refused the bytes.
    ModuleLoad,
    /// `hipModuleGetFunction` did not find the symbol.
    SymbolLookup,
    /// The code object's own header names another device than this one
    /// ([`CodeObjectIdentity::refusal`]); the driver was not called.
    Target,
}

/// A failed [`KernelCode::load_on`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailure {
    /// Stage that failed.
    pub stage: LoadStage,
    /// The runtime error (empty for [`LoadStage::Empty`] and [`LoadStage::Target`]).
    pub error: Option<DeviceError>,
    /// What the code object and the device are, when that explains the failure: for
    /// [`LoadStage::Target`] the code object's target against the device's arch; for a PTX
    /// code object the driver refused, the PTX's `.version` and `.target` against the device's
    /// arch and driver version.
    pub detail: Option<String>,
}

/// A device as [`KernelCode`]'s memo keys it: ordinal and sharing domain.
type DeviceKey = (i32, Option<[u64; 3]>);

/// A code object's bytes plus the kernel loaded from them, memoised per device (ordinal and
/// sharing domain): the per-(kernel, device) module cache. A module is never used on another
/// device than the one that loaded it.
///
/// The bytes live as long as this value; they may be a view of a loaded plan's one owned
/// copy of its bytes ([`SharedBytes`]), so a restored plan keeps no code-object copy of its
/// own. Each device loads its own module at most once,
/// even when many threads ask at the same time (one thread loads, the others wait); a failed
/// load stores nothing, so a later call tries again.
pub struct KernelCode {
    bytes: SharedBytes,
    symbol: String,
    signature: Option<Vec<KernelArgument>>,
    /// Per device: its ordinal and sharing domain ([`IngestorDevice::module_share_key`]), so
    /// that two devices with one ordinal (two runtimes, or test fakes) never share a module.
    per_device: Mutex<HashMap<DeviceKey, Arc<OnceCell<LoadedKernel>>>>,
}

impl fmt::Debug for KernelCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "KernelCode({} bytes, symbol '{}')",
            self.bytes.len(),
            self.symbol
        )
    }
}

impl KernelCode {
    /// Code object `bytes` (an `Arc<[u8]>` or a [`SharedBytes`] view) holding the kernel
    /// `symbol`; nothing is loaded yet and no bytes are copied.
    pub fn new(bytes: impl Into<SharedBytes>, symbol: &str) -> Self {
        KernelCode {
            bytes: bytes.into(),
            symbol: symbol.to_string(),
            signature: None,
            per_device: Mutex::new(HashMap::new()),
        }
    }
    /// The same code with the kernel's recorded `signature`: each device's function is
    /// prepared for it once, when its module is loaded ([`IngestorDevice::bind_signature`]),
    /// so launches need not convert the signature again.
    pub fn with_signature(mut self, signature: Vec<KernelArgument>) -> Self {
        self.signature = Some(signature);
        self
    }

    /// The kernel's recorded signature, when the code carries one ([`Self::with_signature`]).
    pub fn signature(&self) -> Option<&[KernelArgument]> {
        self.signature.as_deref()
    }
    /// The code object bytes.
    pub fn bytes(&self) -> &SharedBytes {
        &self.bytes
    }
    /// The kernel symbol.
    pub fn symbol(&self) -> &str {
        &self.symbol
    }
    /// Number of devices with a loaded module.
    pub fn loaded_device_count(&self) -> usize {
        let map = self.per_device.lock().unwrap_or_else(|p| p.into_inner());
        map.values().filter(|c| c.get().is_some()).count()
    }
    /// The kernel on `device`, loading its module first when this device has none yet. A
    /// device with a [`IngestorDevice::module_share_key`] first reuses a resident module of
    /// byte-identical code loaded by any [`KernelCode`] in its sharing domain (a plan loaded
    /// while another plan of the same kernel is alive calls no `hipModuleLoadData`); threads
    /// loading the same new code on one device at once make one driver load between them
    /// ([`module_stats`] counts the loads per domain).
    ///
    /// # Errors
    /// [`LoadStage::Empty`] for empty bytes (the driver is not called), else the stage and
    /// runtime error of the failed `load_module` / `get_function`.
    pub fn load_on(&self, device: &dyn IngestorDevice) -> Result<LoadedKernel, LoadFailure> {
        if self.bytes.is_empty() {
            return Err(LoadFailure {
                stage: LoadStage::Empty,
                error: None,
                detail: None,
            });
        }
        let cell = {
            let mut map = self.per_device.lock().unwrap_or_else(|p| p.into_inner());
            map.entry((device.ordinal(), device.module_share_key()))
                .or_default()
                .clone()
        };
        cell.get_or_try_init(|| {
            let identity = code_object_identity(&self.bytes);
            let arch = device.arch();
            if let Some(why) = identity.refusal(&arch) {
                return Err(LoadFailure {
                    stage: LoadStage::Target,
                    error: None,
                    detail: Some(format!(
                        "the code object {why}; device {} is '{arch}'",
                        device.ordinal()
                    )),
                });
            }
            let module = load_shared(device, &self.bytes).map_err(|e| LoadFailure {
                stage: LoadStage::ModuleLoad,
                error: Some(e),
                detail: match &identity {
                    CodeObjectIdentity::Ptx { version, target } => Some(format!(
                        "the PTX declares .version {version} for .target {target}; device {} ('{arch}') runs {}",
                        device.ordinal(),
                        device
                            .driver_version_text()
                            .unwrap_or_else(|| "a driver of unknown version".into())
                    )),
                    _ => None,
                },
            })?;
            let function = module.get_function(&self.symbol).map_err(|e| LoadFailure {
                stage: LoadStage::SymbolLookup,
                error: Some(e),
                detail: None,
            })?;
            let function = match &self.signature {
                Some(signature) => device.bind_signature(function, signature),
                None => function,
            };
            Ok(LoadedKernel { module, function })
        })
        .cloned()
    }
}

/// One module resident in a sharing domain: a copy of its code object's bytes (compared in
/// full before reuse) and a weak reference (the entry dies with the last plan using it).
struct Resident {
    key: [u64; 3],
    bytes: Box<[u8]>,
    module: Weak<dyn IngestorModule>,
}

/// Process-wide table of modules loaded through devices that share modules
/// ([`IngestorDevice::module_share_key`]). Holds no module alive.
static RESIDENT: Mutex<Vec<Resident>> = Mutex::new(Vec::new());

/// What one sharing domain has done: its driver module loads so far. Kept per domain for the
/// life of the process (a few words per device).
#[derive(Default)]
struct Domain {
    /// Serializes the look-up-then-load of this domain, so that two threads asking for the
    /// same new code object at once make one driver load; loads on other domains (other
    /// devices) run in parallel.
    load: Arc<Mutex<()>>,
    /// `load_module` calls that succeeded.
    loads: u64,
}

/// Sharing domains by key ([`IngestorDevice::module_share_key`]).
static DOMAINS: Mutex<Vec<([u64; 3], Domain)>> = Mutex::new(Vec::new());

/// The load lock of domain `key`, created on first use.
fn domain_lock(key: [u64; 3]) -> Arc<Mutex<()>> {
    let mut domains = DOMAINS.lock().unwrap_or_else(|p| p.into_inner());
    match domains.iter().find(|(k, _)| *k == key) {
        Some((_, d)) => Arc::clone(&d.load),
        None => {
            let d = Domain::default();
            let lock = Arc::clone(&d.load);
            domains.push((key, d));
            lock
        }
    }
}

/// What a module-sharing domain (one device of one runtime, [`IngestorDevice::module_share_key`])
/// has loaded: [`module_stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModuleStats {
    /// Driver module loads (`hipModuleLoadData` / `cuModuleLoadData` that succeeded) made
    /// through the domain since the process started; one per distinct code object while a
    /// plan holds its module, whatever the number of plans, handles or threads.
    pub loads: u64,
    /// Modules of the domain alive now (held by at least one plan).
    pub resident: usize,
}

/// The module statistics of sharing domain `key` ([`IngestorDevice::module_share_key`]);
/// zeros for a domain that never loaded a module.
pub fn module_stats(key: [u64; 3]) -> ModuleStats {
    let loads = DOMAINS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(0, |(_, d)| d.loads);
    let mut table = RESIDENT.lock().unwrap_or_else(|p| p.into_inner());
    table.retain(|r| r.module.strong_count() > 0);
    let resident = table.iter().filter(|r| r.key == key).count();
    ModuleStats { loads, resident }
}

/// Number of live modules in the process-wide sharing table (modules of devices without a
/// share key are not counted). Dead entries are dropped first.
pub fn resident_module_count() -> usize {
    let mut table = RESIDENT.lock().unwrap_or_else(|p| p.into_inner());
    table.retain(|r| r.module.strong_count() > 0);
    table.len()
}

/// The resident module of byte-identical code in domain `key`, if one is alive.
fn resident(key: [u64; 3], bytes: &[u8]) -> Option<Arc<dyn IngestorModule>> {
    let mut table = RESIDENT.lock().unwrap_or_else(|p| p.into_inner());
    table.retain(|r| r.module.strong_count() > 0);
    table
        .iter()
        .filter(|r| r.key == key && *r.bytes == *bytes)
        .find_map(|r| r.module.upgrade())
}

/// `device.load_module(bytes)`, or the resident module of byte-identical code in the device's
/// sharing domain. The look-up and the load hold the domain's load lock (not the table's), so
/// threads asking for the same new code on one device make one driver load between them, and
/// devices load in parallel.
fn load_shared(
    device: &dyn IngestorDevice,
    bytes: &[u8],
) -> Result<Arc<dyn IngestorModule>, DeviceError> {
    let Some(key) = device.module_share_key() else {
        return device.load_module(bytes);
    };
    let lock = domain_lock(key);
    let _loading = lock.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(m) = resident(key, bytes) {
        return Ok(m);
    }
    let module = device.load_module(bytes)?;
    if let Some((_, d)) = DOMAINS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter_mut()
        .find(|(k, _)| *k == key)
    {
        d.loads += 1;
    }
    RESIDENT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Resident {
            key,
            bytes: bytes.into(),
            module: Arc::downgrade(&module),
        });
    Ok(module)
}
