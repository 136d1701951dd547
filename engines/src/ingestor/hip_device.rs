//! [`crate::ingestor::device::IngestorDevice`] implemented over [`hipdnn_hip::safe`]: the seam through which
//! the ingestor engine loads code objects and launches kernels on a real GPU.
//!
//! - `load_module` → [`Device::load_module`] (`hipModuleLoadData` / `cuModuleLoadData`, PTX
//!   copied with a NUL).
//! - `get_function` → [`Module::function`] with an empty signature; `bind_signature` attaches
//!   the kernel's *recorded* signature (the kernel descriptor's or saved payload's `signature`:
//!   kind, size, kernarg offset) with [`Function::with_signature`] once, when the plan loads its
//!   module, and [`Function::launch`] checks the argument values against it (count, kind, size)
//!   and writes each at its recorded offset. The check never derives the signature from the
//!   values. A function without a bound signature gets the one `launch` is given, per launch.
//! - Pointers are variant-pack device addresses, passed with the `unsafe`
//!   [`KernelArg::device_ptr`] (see its `SAFETY` note).
//! - `memset_async` → [`Stream::memset_raw`] (`hipMemsetAsync` / `cuMemsetD8Async`) on the
//!   execute's stream, for the workspace prefix a launch contract needs zeroed (the second
//!   `unsafe` block).
//! - Streams: `0` is the device's default stream; any other value is the handle's stream
//!   (`hipdnnSetStream`, `BackendHandle::set_stream`), borrowed for the call
//!   ([`Stream::borrowed`], the third `unsafe` block). Launches, fills and timing events go to
//!   it, so an execute on a capturing stream is recorded into the caller's graph.
//!
//! Errors become [`DeviceError`] with `call` = `hipX (cuX)` and `message` = `<name>: <text>`.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

use crate::ingestor::device::{
    DeviceError, IngestorDevice, IngestorModule, KernelArgValue, KernelFunction, LaunchGeometry,
    PackedKernelArgs, ScratchMemory, timing_failed,
};
use crate::ingestor::kernel::KernelArgument;
use hipdnn_backend::status::PluginResult;
use hipdnn_hip::DriverError;
use hipdnn_hip::safe::{
    ArgKind, ArgSpec, Device, DeviceBuffer, Event, Function, KernelArg, LaunchConfig, LaunchError,
    Module, PackedArgs, Stream,
};
use smallvec::SmallVec;

fn device_error(e: DriverError) -> DeviceError {
    let call = match e.platform_call {
        Some(p) => format!("{} ({p})", e.call),
        None => e.call.to_string(),
    };
    DeviceError::new(call, format!("{}: {}", e.name, e.text))
}

fn launch_error(e: LaunchError) -> DeviceError {
    match e {
        LaunchError::Driver(d) => device_error(d),
        LaunchError::Signature { .. } => DeviceError::new("hipModuleLaunchKernel", e.to_string()),
    }
}

/// The recorded signature as [`ArgSpec`]s; a kind this layer cannot pass (e.g. `hidden_*`) is
/// refused as `hipModuleLaunchKernel: kernel '<symbol>': recorded signature entry <i> has kind …`.
fn recorded_specs(kernel: &str, signature: &[KernelArgument]) -> Result<Vec<ArgSpec>, DeviceError> {
    signature
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let kind = ArgKind::parse(&a.kind).ok_or_else(|| {
                DeviceError::new(
                    "hipModuleLaunchKernel",
                    format!(
                        "kernel '{kernel}': recorded signature entry {i} has kind '{}', which cannot be passed",
                        a.kind
                    ),
                )
            })?;
            Ok(ArgSpec {
                kind,
                size: a.size,
                offset: a.offset,
            })
        })
        .collect()
}

/// `a` as a launch argument on device `ordinal`.
fn to_arg(a: &KernelArgValue, ordinal: usize) -> KernelArg<'static> {
    match *a {
        // SAFETY: `p` is a variant-pack address for this execute on the handle's device
        // (`ordinal`), or null for an absent optional tensor (or, in packed arguments, an
        // address each launch replaces); the execute contract (hipdnnBackendExecute, the SDK's
        // typed buffers) requires a bound address to be a live device allocation of that
        // device, large enough for the tensor the recorded signature gives this argument,
        // until the work on the stream completes. Nothing else here can check it.
        KernelArgValue::Pointer(p) => unsafe { KernelArg::device_ptr(p, ordinal) },
        KernelArgValue::I32(v) => v.into(),
        KernelArgValue::U32(v) => v.into(),
        KernelArgValue::I64(v) => v.into(),
        KernelArgValue::F32(v) => v.into(),
    }
}

/// The launch configuration of `geometry`.
fn config_of(geometry: LaunchGeometry) -> LaunchConfig {
    LaunchConfig {
        grid: (geometry.grid[0], geometry.grid[1], geometry.grid[2]),
        block: (geometry.block[0], geometry.block[1], geometry.block[2]),
        shared_bytes: geometry.shared_mem_bytes,
    }
}

/// Arguments packed by [`Function::pack`] for one of this device's functions.
struct HipPackedArgs(PackedArgs);

impl PackedKernelArgs for HipPackedArgs {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

thread_local! {
    /// The kernel arguments of this thread's launches, kept between launches so that a launch
    /// does not allocate its argument list.
    static LAUNCH_ARGS: RefCell<Vec<KernelArg<'static>>> = const { RefCell::new(Vec::new()) };
}

/// A GPU seen through the ingestor's [`IngestorDevice`] trait.
#[derive(Debug)]
pub struct HipIngestorDevice {
    dev: Arc<Device>,
    stream: Stream,
}

impl HipIngestorDevice {
    /// Wraps an opened device; launches go to its default stream.
    pub fn new(dev: Arc<Device>) -> HipIngestorDevice {
        let stream = Stream::default_stream(&dev);
        HipIngestorDevice { dev, stream }
    }

    /// The wrapped device.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// Runs `f` on the stream an execute names ([`on_handle_stream`]).
    fn on_stream<R>(&self, stream: u64, f: impl FnOnce(&Stream) -> R) -> R {
        if stream == 0 {
            return f(&self.stream);
        }
        on_handle_stream(&self.dev, stream, f)
    }
}

/// Runs `f` on the stream a handle names for `dev`: the device's default stream for `0`, else
/// the stream the caller set on the handle (`hipdnnSetStream`, `BackendHandle::set_stream`),
/// borrowed for the call and never destroyed here. What executes launch on, and where the SDK
/// replays a captured device graph.
pub fn on_handle_stream<R>(dev: &Arc<Device>, stream: u64, f: impl FnOnce(&Stream) -> R) -> R {
    if stream == 0 {
        return f(&Stream::default_stream(dev));
    }
    // SAFETY: a non-zero stream is the one the caller set on the handle (hipdnnSetStream,
    // BackendHandle::set_stream); that contract requires a live stream of the handle's device
    // (`dev`) for as long as work is queued through the handle. It is only borrowed for this
    // call and never destroyed here.
    let s = unsafe { Stream::borrowed(dev, stream as usize as *mut std::ffi::c_void) };
    f(&s)
}

struct HipModule(Module);
struct HipScratch(DeviceBuffer<u8>);

impl ScratchMemory for HipScratch {
    fn addr(&self) -> u64 {
        self.0.device_ptr()
    }
}
/// A looked-up kernel; `bound` when [`IngestorDevice::bind_signature`] attached the recorded
/// signature its launches use (else `launch` attaches the one it is given).
struct HipFunction {
    function: Function,
    bound: bool,
}

impl KernelFunction for HipFunction {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl IngestorModule for HipModule {
    fn get_function(&self, symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError> {
        let function = self.0.function(symbol, &[]).map_err(launch_error)?;
        Ok(Arc::new(HipFunction {
            function,
            bound: false,
        }))
    }
}

/// The module-sharing domain of `dev` ([`IngestorDevice::module_share_key`] of a
/// [`HipIngestorDevice`] over it): [`Device::context_identity`] as three words. Every handle
/// opened on one GPU of this process has the same key; two GPUs never do. Pass it to
/// [`super::device::module_stats`] to read what that GPU has loaded.
pub fn share_key(dev: &Device) -> [u64; 3] {
    let (platform, ordinal, ctx) = dev.context_identity();
    [platform as u64, ordinal as u64, ctx as u64]
}

impl IngestorDevice for HipIngestorDevice {
    fn arch(&self) -> String {
        self.dev.arch().to_string()
    }

    fn ordinal(&self) -> i32 {
        self.dev.info().ordinal as i32
    }

    fn driver_version_text(&self) -> Option<String> {
        Some(self.dev.runtime().driver_version_text())
    }

    /// [`Device::context_identity`] as three words: handles opened on the same GPU share
    /// the modules their plans load (a plan loaded while another plan of the same kernel is
    /// alive reuses its module).
    fn module_share_key(&self) -> Option<[u64; 3]> {
        Some(share_key(&self.dev))
    }

    fn load_module(&self, code_object: &[u8]) -> Result<Arc<dyn IngestorModule>, DeviceError> {
        let m = self.dev.load_module(code_object).map_err(device_error)?;
        Ok(Arc::new(HipModule(m)))
    }

    fn launch(
        &self,
        function: &dyn KernelFunction,
        geometry: LaunchGeometry,
        args: &[KernelArgValue],
        signature: &[KernelArgument],
        stream: u64,
    ) -> Result<(), DeviceError> {
        let f = function
            .as_any()
            .downcast_ref::<HipFunction>()
            .ok_or_else(|| {
                DeviceError::new(
                    "hipModuleLaunchKernel",
                    "the function was not loaded by this device",
                )
            })?;
        let unbound;
        let f = if f.bound {
            &f.function
        } else {
            let recorded = recorded_specs(f.function.name(), signature)?;
            unbound = f.function.with_signature(&recorded).map_err(launch_error)?;
            &unbound
        };
        let ordinal = self.dev.info().ordinal;
        let cfg = config_of(geometry);
        // The argument list is rebuilt in this thread's buffer: no allocation per launch.
        LAUNCH_ARGS.with_borrow_mut(|kargs| {
            kargs.clear();
            kargs.extend(args.iter().map(|a| to_arg(a, ordinal)));
            self.on_stream(stream, |s| f.launch(s, cfg, kargs))
                .map_err(launch_error)
        })
    }

    /// The arguments converted as [`Self::launch`] converts them and packed by
    /// [`Function::pack`] for the function's bound signature; `None` for a function not loaded
    /// here, not bound to `signature`, or arguments that do not fit it.
    fn pack_args(
        &self,
        function: &dyn KernelFunction,
        args: &[KernelArgValue],
        signature: &[KernelArgument],
    ) -> Option<Arc<dyn PackedKernelArgs>> {
        let f = function.as_any().downcast_ref::<HipFunction>()?;
        if !f.bound || recorded_specs(f.function.name(), signature).ok()? != f.function.signature()
        {
            return None;
        }
        let ordinal = self.dev.info().ordinal;
        let args: Vec<KernelArg<'static>> = args.iter().map(|a| to_arg(a, ordinal)).collect();
        let packed = f.function.pack(&args).ok()?;
        Some(Arc::new(HipPackedArgs(packed)))
    }

    fn launch_packed(
        &self,
        function: &dyn KernelFunction,
        packed: &dyn PackedKernelArgs,
        geometry: LaunchGeometry,
        pointers: &[(usize, u64)],
        stream: u64,
    ) -> Result<(), DeviceError> {
        let not_ours = |what: &str| {
            DeviceError::new(
                "hipModuleLaunchKernel",
                format!("the {what} was not made by this device"),
            )
        };
        let f = function
            .as_any()
            .downcast_ref::<HipFunction>()
            .ok_or_else(|| not_ours("function"))?;
        let packed = packed
            .as_any()
            .downcast_ref::<HipPackedArgs>()
            .ok_or_else(|| not_ours("packed argument list"))?;
        let ordinal = self.dev.info().ordinal;
        let mut replaced: SmallVec<[(usize, KernelArg<'static>); 8]> = SmallVec::new();
        replaced.extend(
            pointers
                .iter()
                .map(|&(i, p)| (i, to_arg(&KernelArgValue::Pointer(p), ordinal))),
        );
        self.on_stream(stream, |s| {
            f.function
                .launch_packed(s, config_of(geometry), &packed.0, &replaced)
        })
        .map_err(launch_error)
    }

    /// [`Function::with_signature`] with the recorded signature, once; `function` unchanged
    /// when it is not this device's or the signature cannot be attached (its launches then
    /// report why, as before).
    fn bind_signature(
        &self,
        function: Arc<dyn KernelFunction>,
        signature: &[KernelArgument],
    ) -> Arc<dyn KernelFunction> {
        let Some(f) = function.as_any().downcast_ref::<HipFunction>() else {
            return function;
        };
        let bound = recorded_specs(f.function.name(), signature)
            .ok()
            .and_then(|recorded| f.function.with_signature(&recorded).ok());
        match bound {
            Some(function) => Arc::new(HipFunction {
                function,
                bound: true,
            }),
            None => function,
        }
    }

    fn memset_async(
        &self,
        addr: u64,
        value: u8,
        bytes: u64,
        stream: u64,
    ) -> Result<(), DeviceError> {
        let bytes = usize::try_from(bytes)
            .map_err(|_| DeviceError::new("hipMemsetAsync", format!("{bytes} bytes")))?;
        self.on_stream(stream, |s| {
            // SAFETY: `addr` is the execute's workspace on the handle's device; the execute
            // contract (hipdnnBackendExecute, the SDK's typed buffers) requires it to be a live
            // device allocation of at least the plan's workspace size (the caller passes no
            // more bytes than that) until the work on the stream completes.
            unsafe { s.memset_raw(addr, value, bytes) }
        })
        .map_err(device_error)
    }

    fn synchronize(&self, stream: u64) -> Result<(), DeviceError> {
        self.on_stream(stream, |s| s.synchronize())
            .map_err(device_error)
    }

    fn alloc_scratch(&self, bytes: usize) -> Result<Box<dyn ScratchMemory>, DeviceError> {
        let b = self.dev.alloc::<u8>(bytes).map_err(device_error)?;
        Ok(Box::new(HipScratch(b)))
    }

    /// Events on the execute's stream around `enqueue`.
    fn time_ms(
        &self,
        stream: u64,
        enqueue: &mut dyn FnMut() -> PluginResult<()>,
    ) -> PluginResult<f64> {
        let ev = |r: Result<Event, hipdnn_hip::DriverError>| {
            r.map_err(device_error).map_err(timing_failed)
        };
        let (start, end) = (ev(Event::new(&self.dev))?, ev(Event::new(&self.dev))?);
        self.on_stream(stream, |s| start.record(s))
            .map_err(device_error)
            .map_err(timing_failed)?;
        enqueue()?;
        self.on_stream(stream, |s| end.record(s))
            .and_then(|()| end.synchronize())
            .and_then(|()| start.elapsed_ms(&end))
            .map(f64::from)
            .map_err(device_error)
            .map_err(timing_failed)
    }
}
