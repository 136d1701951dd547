//! The handle: the engines a graph can be built for and the device they run on.
//!
//! [`Handle::new`] picks a GPU when one is usable (a HIP or CUDA driver, a device, and kernel
//! archives for its architecture) and otherwise the CPU; [`Handle::cpu`] always gives the CPU.
//! Every handle registers the CPU reference engine (`hipdnn.reference.cpu`), so every graph the
//! reference engine supports can be built, executed, saved and loaded anywhere. On a GPU handle
//! the kernel-ingestor engines are registered first, so the heuristic ranks them before the CPU
//! engine. Which device a handle uses is logged at INFO and shown by `Debug`.

use crate::Error;
use hipdnn_backend::BackendError;
use hipdnn_hip::AllocationLease;
use std::sync::{Arc, Mutex, PoisonError};

/// The device a handle executes on ([`Handle::device`]).
///
/// ```
/// use hipdnn::{ExecutionDevice, Handle};
/// let handle = Handle::new()?; // the GPU when one is usable, else the CPU
/// match handle.device() {
///     ExecutionDevice::Cpu => assert!(!handle.is_gpu()),
///     ExecutionDevice::Gpu { arch, .. } => println!("running on {arch}"),
/// }
/// assert_eq!(Handle::cpu()?.device(), &ExecutionDevice::Cpu);
/// # Ok::<(), hipdnn::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecutionDevice {
    /// Host memory and the CPU reference engine.
    Cpu,
    /// A GPU, by platform and architecture name (`sm_90`, `gfx942:sramecc+:xnack-`, …).
    Gpu {
        /// Device ordinal.
        ordinal: usize,
        /// Device name reported by the driver.
        name: String,
        /// Architecture name (decorated on AMD).
        arch: String,
    },
}

/// A hipDNN handle: a backend handle with its registered engines, bound to one device.
///
/// Make one per process (or per device) and reuse it: [`Graph::build`](crate::Graph::build),
/// [`Graph::execute`](crate::Graph::execute), the loaders and the device-side [`Buffer`]
/// constructors take it by reference. [`Handle::cpu`] always works (the CPU reference engine
/// `hipdnn.reference.cpu`); [`Handle::new`] prefers a GPU and falls back to the CPU;
/// [`Handle::gpu`] insists on a GPU. A plan executes on the handle it was built or loaded
/// with; buffers for a GPU handle come from [`Buffer::alloc`] / [`Buffer::from_slice_on`].
///
/// [`Buffer`]: crate::Buffer
/// [`Buffer::alloc`]: crate::Buffer::alloc
/// [`Buffer::from_slice_on`]: crate::Buffer::from_slice_on
///
/// ```
/// use hipdnn::{Buffer, Handle};
/// let cpu = Handle::cpu()?;
/// assert!(!cpu.is_gpu());
/// assert_eq!(cpu.engine_names(), ["hipdnn.reference.cpu"]);
///
/// // Portable code: the best device available, with buffers made for it.
/// let handle = Handle::new()?;
/// let x = Buffer::from_slice_on(&handle, &[1f32, 2., 3.])?; // host memory on a CPU handle
/// assert_eq!(x.is_device(), handle.is_gpu());
/// assert_eq!(x.to_vec()?, [1., 2., 3.]);
/// assert_eq!(handle.engine_names().last().map(String::as_str), Some("hipdnn.reference.cpu"));
/// # Ok::<(), hipdnn::Error>(())
/// ```
pub struct Handle {
    backend: hipdnn_backend::BackendHandle,
    device: ExecutionDevice,
    gpu: Option<Arc<hipdnn_hip::safe::Device>>,
    /// Builds refuse engines noted `NONDETERMINISTIC` ([`Handle::set_deterministic_only`]).
    deterministic_only: bool,
    /// Set while [`Handle::capture`] records: executes check their plan and report to it.
    pub(crate) recorder: Option<Recorder>,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("device", &self.device)
            .field(
                "engines",
                &self
                    .backend
                    .engines()
                    .iter()
                    .map(|e| e.name().to_string())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A backend failure with the caller's context, one level deep: `HIPDNN_BACKEND_ERROR`
/// `"<context> (<STATUS>): <text>"` (a trailing `.` of `context` is dropped), with the
/// [`BackendError`] kept as the typed [`crate::Cause`] (match on its status, not the text).
pub(crate) fn backend_error(context: &str, e: BackendError) -> Error {
    let context = context.strip_suffix('.').unwrap_or(context);
    Error::new(
        crate::ErrorCode::HipdnnBackendError,
        format!("{context} ({}): {}", e.status.name(), e.message),
    )
    .with_cause(e)
}

/// Start of the no-GPU reason when no runtime library loads; the list of libraries tried that
/// follows it (one failure per candidate library) is logged at DEBUG, not INFO.
const NO_DRIVER_LIBRARY: &str = "no GPU: no HIP or CUDA driver library could be loaded";

/// One line saying why no GPU is usable: the [`GpuUnavailable`] text, except that the list of
/// driver libraries tried (one failure per candidate, hundreds of characters) is logged at
/// DEBUG and replaced by a pointer to it.
///
/// [`GpuUnavailable`]: hipdnn_engines::gpu::GpuUnavailable
fn no_gpu_reason(e: &hipdnn_engines::gpu::GpuUnavailable) -> String {
    let full = e.to_string();
    if full.starts_with(NO_DRIVER_LIBRARY) {
        log::debug!("hipdnn: {full}");
        format!("{NO_DRIVER_LIBRARY}; RUST_LOG=debug lists the libraries tried")
    } else {
        full
    }
}

/// The SDK error of a GPU handle that could not be made: `INVALID_VALUE` for an ordinal past
/// the device count, else `GRAPH_NOT_SUPPORTED`; the message is the reason, then the fix.
fn gpu_error(e: hipdnn_engines::gpu::GpuUnavailable) -> Error {
    use hipdnn_engines::gpu::GpuUnavailable as G;
    let fix = match &e {
        G::NoSuchDevice { .. } => "hipdnn::devices() lists the devices, or ",
        G::NoGpu(_) => "install the GPU driver (ROCm or CUDA), or ",
        G::NoKernels { .. } => {
            "set HIPDNN_KERNEL_DIR to the packed kernels of this GPU (docs/install.md), or "
        }
        _ => "",
    };
    let code = crate::graph::error::gpu_unavailable_code(&e);
    let reason = no_gpu_reason(&e);
    Error::new(
        code,
        format!("{reason}; {fix}use Handle::new() or Handle::cpu() to run on the CPU"),
    )
    .with_cause(e)
}

/// The module statistics of one GPU ([`Handle::module_stats`]).
pub use hipdnn_engines::ingestor::ModuleStats;

/// The GPU platform of a device ([`GpuInfo::platform`]): `Amd` (libamdhip64) or `Nvidia`
/// (HIP's NVIDIA platform over the CUDA driver).
pub use hipdnn_hip::Platform as GpuPlatform;

/// One GPU of this host, as [`devices`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    /// Ordinal, for [`Handle::gpu_on`] (0-based, the runtime's order; `HIP_VISIBLE_DEVICES` /
    /// `CUDA_VISIBLE_DEVICES` select and renumber them).
    pub ordinal: usize,
    /// Marketing name (`NVIDIA H100 80GB HBM3`, `AMD Instinct MI300X`); empty when the driver
    /// does not say.
    pub name: String,
    /// Architecture: `sm_90`, or on AMD `gcnArchName` with its features
    /// (`gfx942:sramecc+:xnack-`). Plans saved on one device load on another of the same base
    /// architecture (`sm_90`, `gfx942`); another architecture is refused by name.
    pub arch: String,
    /// The platform of the driver.
    pub platform: GpuPlatform,
}

/// The GPUs of this host, in ordinal order, from the first GPU runtime that loads (AMD's HIP
/// runtime, then the CUDA driver). A runtime that loads but sees no device gives an empty list,
/// not an error. Whether a device has kernels packed for its architecture is not checked here
/// ([`Handle::gpu_on`] says).
///
/// ```
/// match hipdnn::devices() {
///     Ok(list) => {
///         for d in &list {
///             println!("GPU {}: {} ({}, {:?})", d.ordinal, d.name, d.arch, d.platform);
///         }
///     }
///     Err(e) => assert!(e.is_gpu_unavailable(), "{e}"), // no GPU runtime on this machine
/// }
/// ```
///
/// # Errors
/// `GRAPH_NOT_SUPPORTED` "no GPU: …" with [`crate::Cause::GpuUnavailable`] as its cause
/// ([`Error::is_gpu_unavailable`]) when no GPU runtime library loads ("no GPU: no HIP or CUDA
/// driver library could be loaded; RUST_LOG=debug lists the libraries tried"), or when every
/// runtime that loads fails to initialise for another reason than having no device (the
/// driver's error name in the message).
pub fn devices() -> Result<Vec<GpuInfo>, Error> {
    let list = hipdnn_hip::visible_devices().map_err(|e| {
        let e = hipdnn_engines::gpu::GpuUnavailable::NoGpu(e);
        Error::new(crate::ErrorCode::GraphNotSupported, no_gpu_reason(&e)).with_cause(e)
    })?;
    Ok(list
        .devices
        .into_iter()
        .map(|d| GpuInfo {
            ordinal: d.ordinal,
            name: d.name,
            arch: d.arch,
            platform: list.platform,
        })
        .collect())
}

impl Handle {
    /// A handle on the GPU when one is usable, else on the CPU, logged at INFO as one line
    /// `hipdnn: using the CPU (<reason>)` (when no runtime library loads, the libraries tried are
    /// logged at DEBUG).
    ///
    /// # Errors
    /// `HIPDNN_BACKEND_ERROR` only if registering the CPU reference engine fails (it cannot
    /// in practice).
    pub fn new() -> Result<Self, Error> {
        match hipdnn_engines::gpu::open(0) {
            Ok(g) => Self::on_gpu(g),
            Err(e) => {
                let reason = no_gpu_reason(&e);
                log::info!("hipdnn: using the CPU ({reason})");
                let mut h = Self::cpu_handle()?;
                h.note_gpu_engine_absent(&reason);
                Ok(h)
            }
        }
    }

    /// A handle on the CPU with the CPU reference engine (`hipdnn.reference.cpu`): host
    /// buffers, every op of README's "Which ops run where" CPU column, saveable plans.
    ///
    /// ```
    /// let handle = hipdnn::Handle::cpu()?;
    /// assert_eq!(handle.device(), &hipdnn::ExecutionDevice::Cpu);
    /// # Ok::<(), hipdnn::Error>(())
    /// ```
    ///
    /// The handle knows that it lacks the GPU engine: loading a GPU plan on it
    /// ([`crate::Graph::from_binary`], [`crate::Graph::from_compiled_plan_binary`]) fails with
    /// `NOT_SUPPORTED` "Invalid engine ID: N: the plan was saved by engine
    /// "hipkernel.ingestor.gpu", which this handle does not have …", naming the fix.
    ///
    /// # Errors
    /// `HIPDNN_BACKEND_ERROR` if registering the engine fails.
    pub fn cpu() -> Result<Self, Error> {
        let mut h = Self::cpu_handle()?;
        h.note_gpu_engine_absent("this handle is on the CPU");
        Ok(h)
    }

    /// Notes the GPU engine as absent (why: `why`), so that loading a GPU plan here names it
    /// and the fix ([`hipdnn_backend::BackendHandle::engine_for_plan`]).
    fn note_gpu_engine_absent(&mut self, why: &str) {
        self.backend.note_absent_engine(
            hipdnn_engines::gpu::GPU_ENGINE_NAME,
            format!(
                "{why}. Load the plan with Handle::gpu() on a machine with the GPU it was built \
                 for, or build the graph again on this handle"
            ),
        );
    }

    fn cpu_handle() -> Result<Self, Error> {
        let mut backend = hipdnn_backend::BackendHandle::new();
        backend
            .register_engine(Arc::new(hipdnn_engines::reference::ReferenceEngine::new()))
            .map_err(|e| backend_error("Cannot register the CPU reference engine.", e))?;
        backend.set_device_arch(hipdnn_backend::heur_config::CPU_ARCH);
        log::info!("hipdnn: handle on the CPU (engine hipdnn.reference.cpu)");
        Ok(Handle {
            backend,
            device: ExecutionDevice::Cpu,
            gpu: None,
            deterministic_only: false,
            recorder: None,
        })
    }

    /// A handle on the first usable GPU, with the kernel-ingestor engines ranked before the CPU
    /// reference engine.
    ///
    /// # Errors
    /// `GRAPH_NOT_SUPPORTED` "no GPU: …" with [`crate::Cause::GpuUnavailable`] as its cause
    /// ([`Error::is_gpu_unavailable`]) when no driver, no device, or no kernel archive for the
    /// device's architecture is found. The message is one line: the reason, then the fix,
    /// ending "use Handle::new() or Handle::cpu() to run on the CPU". When no driver library
    /// loads it reads "no GPU: no HIP or CUDA driver library could be loaded; RUST_LOG=debug
    /// lists the libraries tried; install the GPU driver (ROCm or CUDA), or use Handle::new()
    /// or Handle::cpu() to run on the CPU": the libraries tried are logged at DEBUG and kept in
    /// the cause, not in the message.
    ///
    /// The GPU is device 0 of the HIP runtime (or the CUDA driver on NVIDIA); its kernels come
    /// from `HIPDNN_KERNEL_DIR/<arch>`, an install location, or the kernels compiled into the
    /// binary, in that order (see [`hipdnn_engines::kernel_location`]). The engine `hipkernel.ingestor.gpu` is registered first, then
    /// `hipdnn.reference.cpu`, which serves what the GPU kernels refuse.
    ///
    /// ```
    /// match hipdnn::Handle::gpu() {
    ///     Ok(h) => assert!(h.is_gpu()),
    ///     Err(e) => assert!(e.is_gpu_unavailable(), "{e}"), // e.g. no driver on this machine
    /// }
    /// ```
    pub fn gpu() -> Result<Self, Error> {
        Self::gpu_on(0)
    }

    /// A handle on GPU `ordinal` (0-based, in the runtime's order: [`devices`] lists them),
    /// with that device's kernels (those packed for its architecture) and its own stream.
    /// Each thread that drives a GPU of a multi-GPU host makes its own handle with this; plans
    /// built or loaded on the handle execute on that device only, and buffers for it come from
    /// [`crate::Buffer::alloc`] / [`crate::Buffer::from_slice_on`] with this handle. Handles on
    /// one device share the modules their plans load ([`Handle::module_stats`]); handles on
    /// different devices share nothing.
    ///
    /// ```
    /// match hipdnn::Handle::gpu_on(0) {
    ///     Ok(h) => assert!(matches!(h.device(), hipdnn::ExecutionDevice::Gpu { ordinal: 0, .. })),
    ///     Err(e) => assert!(e.is_gpu_unavailable(), "{e}"), // e.g. no driver on this machine
    /// }
    /// ```
    ///
    /// # Errors
    /// `INVALID_VALUE` "no GPU: device ordinal N is out of range: the runtime reports C devices
    /// (ordinals 0..C)" for an ordinal past the count ([`Error::is_gpu_unavailable`] is true
    /// and the cause is [`GpuUnavailable::NoSuchDevice`]); otherwise as [`Handle::gpu`]
    /// (`GRAPH_NOT_SUPPORTED` "no GPU: …" without a driver, a device or kernels for its
    /// architecture).
    ///
    /// [`GpuUnavailable::NoSuchDevice`]: hipdnn_engines::gpu::GpuUnavailable::NoSuchDevice
    pub fn gpu_on(ordinal: usize) -> Result<Self, Error> {
        match hipdnn_engines::gpu::open(ordinal) {
            Ok(g) => Self::on_gpu(g),
            Err(e) => Err(gpu_error(e)),
        }
    }

    /// A handle on the calling thread's current GPU, as the GPU runtime reports it
    /// (`hipGetDevice`; on NVIDIA the device of the thread's current context; 0 for a thread
    /// that never chose one), falling back to the CPU as [`Handle::new`] does when no GPU is
    /// usable. Upstream hipDNN's `hipdnnCreate` binds a handle this way (the device current at
    /// creation), and the C ABI's `hipdnnCreate` calls this.
    ///
    /// # Errors
    /// As [`Handle::new`].
    pub fn on_current_device() -> Result<Self, Error> {
        let opened = hipdnn_engines::gpu::open_current();
        match opened {
            Ok(g) => Self::on_gpu(g),
            Err(e) => {
                let reason = no_gpu_reason(&e);
                log::info!("hipdnn: using the CPU ({reason})");
                let mut h = Self::cpu_handle()?;
                h.note_gpu_engine_absent(&reason);
                Ok(h)
            }
        }
    }

    fn on_gpu(g: hipdnn_engines::gpu::GpuEngines) -> Result<Self, Error> {
        let mut backend = hipdnn_backend::BackendHandle::new();
        for engine in &g.engines {
            backend
                .register_engine(engine.clone())
                .map_err(|e| backend_error("Cannot register the GPU ingestor engine.", e))?;
        }
        backend
            .register_engine(Arc::new(hipdnn_engines::reference::ReferenceEngine::new()))
            .map_err(|e| backend_error("Cannot register the CPU reference engine.", e))?;
        backend.set_device_arch(g.arch.clone());
        let device = ExecutionDevice::Gpu {
            ordinal: g.device.info().ordinal,
            name: g.device.info().name.clone(),
            arch: g.device.arch().to_string(),
        };
        log::info!(
            "hipdnn: handle on GPU {device:?} (kernels {}; engines {} then hipdnn.reference.cpu)",
            g.packed_dir.display(),
            hipdnn_engines::gpu::GPU_ENGINE_NAME
        );
        Ok(Handle {
            backend,
            device,
            gpu: Some(g.device),
            deterministic_only: false,
            recorder: None,
        })
    }

    /// What the handle's GPU has loaded: driver module loads made through any handle on this
    /// device since the process started, and the modules alive now
    /// ([`hipdnn_engines::ingestor::module_stats`]). Plans of one kernel on one device share
    /// one module (one load, however many plans, handles or threads), and plans on another
    /// device load their own. `None` on a CPU handle.
    ///
    /// ```
    /// assert_eq!(hipdnn::Handle::cpu()?.module_stats(), None);
    /// # Ok::<(), hipdnn::Error>(())
    /// ```
    pub fn module_stats(&self) -> Option<ModuleStats> {
        let dev = self.gpu.as_ref()?;
        Some(hipdnn_engines::ingestor::module_stats(
            hipdnn_engines::ingestor::hip_device::share_key(dev),
        ))
    }

    /// The device this handle executes on.
    pub fn device(&self) -> &ExecutionDevice {
        &self.device
    }

    /// True when the handle executes on a GPU (buffers it allocates live on the device).
    pub fn is_gpu(&self) -> bool {
        matches!(self.device, ExecutionDevice::Gpu { .. })
    }

    /// The GPU this handle executes on, if any (buffers made for the handle live there).
    pub fn gpu_device(&self) -> Option<&Arc<hipdnn_hip::safe::Device>> {
        self.gpu.as_ref()
    }

    /// Waits until the work queued on the handle's stream (executes, replays) has completed;
    /// reports a kernel fault. Nothing to wait for on a CPU handle (executes return when done).
    ///
    /// # Errors
    /// `HIPDNN_BACKEND_ERROR` `Stream synchronize failed: <driver error>`.
    pub fn synchronize(&self) -> Result<(), Error> {
        let Some(dev) = &self.gpu else {
            return Ok(());
        };
        hipdnn_engines::ingestor::hip_device::on_handle_stream(dev, self.backend.stream(), |s| {
            s.synchronize()
        })
        .map_err(|e| {
            Error::new(
                crate::ErrorCode::HipdnnBackendError,
                format!("Stream synchronize failed: {e}"),
            )
        })
    }

    /// The backend handle (engine registry, stream).
    pub fn backend(&self) -> &hipdnn_backend::BackendHandle {
        &self.backend
    }

    /// Mutable backend handle (to register extra engines or set the stream).
    pub fn backend_mut(&mut self) -> &mut hipdnn_backend::BackendHandle {
        &mut self.backend
    }

    /// Deterministic-only mode (off by default): when on, [`crate::Graph::build`] and its
    /// variants skip every engine whose numerical notes for the graph include
    /// [`crate::NumericalNote::Nondeterministic`] (the skip and the engine's name are in the
    /// build error when no other engine is left), so every plan built on this handle gives the
    /// same bits on every execute with the same inputs. It applies to builds: a plan loaded
    /// with `from_compiled_plan_binary` runs the engine it was saved with. Every engine this crate ships is
    /// deterministic today (`docs/engines.md` lists each engine's notes), so the mode refuses
    /// only engines registered by the application.
    ///
    /// ```
    /// # use hipdnn::*;
    /// let mut handle = Handle::cpu()?;
    /// handle.set_deterministic_only(true);
    /// assert!(handle.deterministic_only());
    /// # Ok::<(), hipdnn::Error>(())
    /// ```
    pub fn set_deterministic_only(&mut self, on: bool) -> &mut Self {
        self.deterministic_only = on;
        self
    }

    /// Whether builds on this handle refuse nondeterministic engines
    /// ([`Handle::set_deterministic_only`]).
    pub fn deterministic_only(&self) -> bool {
        self.deterministic_only
    }

    /// Reads engine-override rules (and autotune winners) from `path` instead of the file
    /// `HIPDNN_HEUR_CONFIG_PATH` names; `None` turns the rules off for this handle. The rules
    /// reorder the engines of later builds ([`hipdnn_backend::heur_config`]); a missing file
    /// is no rule, a damaged one is ignored with a warning.
    pub fn set_engine_override_file(&mut self, path: Option<std::path::PathBuf>) -> &mut Self {
        use hipdnn_backend::heur_config::OverrideSource;
        self.backend.set_override_source(match path {
            Some(p) => OverrideSource::File(p),
            None => OverrideSource::Disabled,
        });
        self
    }

    /// The engine-override file builds on this handle read now, if any: the one set with
    /// [`Handle::set_engine_override_file`], else the one `HIPDNN_HEUR_CONFIG_PATH` names.
    pub fn engine_override_file(&self) -> Option<std::path::PathBuf> {
        self.backend.override_source().path()
    }

    /// Architecture of the device engines run on: `sm_90`, `gfx942`, … or `cpu`; the
    /// `device_arch` autotune writes and engine-override rules are matched against.
    pub fn device_arch(&self) -> &str {
        self.backend.device_arch().unwrap_or("cpu")
    }

    /// Names of the registered engines in heuristic order.
    pub fn engine_names(&self) -> Vec<String> {
        self.backend
            .engines()
            .iter()
            .map(|e| e.name().to_string())
            .collect()
    }
}

/// Message prefix of every capture error (`crate::capture`).
pub const CAPTURE: &str = "graph capture";

/// What one capture recorded besides the launches: the leases of the bound device buffers
/// and the number of executes.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    pub(crate) leases: Vec<AllocationLease>,
    pub(crate) executes: usize,
}

/// The recorder a capturing handle holds (`Handle::capture`, `crate::capture`); `Graph::execute`
/// reports to it.
#[derive(Debug, Default)]
pub(crate) struct Recorder(Mutex<Recording>);

impl Recorder {
    /// Notes one execute with the leases of its bound device buffers.
    pub(crate) fn record(&self, leases: impl IntoIterator<Item = AllocationLease>) {
        let mut r = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        r.leases.extend(leases);
        r.executes += 1;
    }

    pub(crate) fn into_recording(self) -> Recording {
        self.0.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}
