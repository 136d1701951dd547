//! [`crate::ingestor::device::Device`] implemented over [`hipdnn_hip::safe`]: the seam through which
//! the ingestor engine loads code objects and launches kernels on a real GPU.
//!
//! - `load_module` → [`Device::load_module`] (`hipModuleLoadData` / `cuModuleLoadData`, PTX
//!   copied with a NUL).
//! - `get_function` → [`Module::function`] with an empty signature; `launch` re-attaches the
//!   signature implied by the argument values at natural alignment
//!   ([`ArgSpec::natural_layout`]), because the ingestor has already matched the descriptor's
//!   recorded signature against the pack's arguments at plan build (kpack.md §8).
//! - Pointers are variant-pack device addresses ([`KernelArg::device_ptr`]).
//! - Streams: only the default stream (`0`) is supported; other values are refused with
//!   `hipModuleLaunchKernel` / `hipStreamSynchronize` errors naming the value.
//!
//! Errors become [`DeviceError`] with `call` = `hipX (cuX)` and `message` = `<name>: <text>`.

use std::any::Any;
use std::sync::Arc;

use crate::ingestor::device::{
    Device as IngestorDevice, DeviceError, KernelArgValue, KernelFunction, LaunchGeometry,
    Module as IngestorModule,
};
use hipdnn_hip::DriverError;
use hipdnn_hip::safe::{
    ArgKind, ArgSpec, Device, Function, KernelArg, LaunchConfig, LaunchError, Module, Stream,
};

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
}

struct HipModule(Module);
struct HipFunction(Function);

impl KernelFunction for HipFunction {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl IngestorModule for HipModule {
    fn get_function(&self, symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError> {
        let f = self.0.function(symbol, &[]).map_err(launch_error)?;
        Ok(Arc::new(HipFunction(f)))
    }
}

impl IngestorDevice for HipIngestorDevice {
    fn arch(&self) -> String {
        self.dev.arch().to_string()
    }

    fn ordinal(&self) -> i32 {
        self.dev.info().ordinal as i32
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
        stream: u64,
    ) -> Result<(), DeviceError> {
        if stream != 0 {
            return Err(DeviceError::new(
                "hipModuleLaunchKernel",
                format!("stream {stream:#x}: this device supports only the default stream (0)"),
            ));
        }
        let f = function
            .as_any()
            .downcast_ref::<HipFunction>()
            .ok_or_else(|| {
                DeviceError::new(
                    "hipModuleLaunchKernel",
                    "the function was not loaded by this device",
                )
            })?;
        let layout: Vec<(ArgKind, u32)> = args
            .iter()
            .map(|a| match a {
                KernelArgValue::Pointer(_) => (ArgKind::GlobalBuffer, 8),
                other => (ArgKind::ByValue, other.size() as u32),
            })
            .collect();
        let f =
            f.0.with_signature(&ArgSpec::natural_layout(&layout))
                .map_err(launch_error)?;
        let ordinal = self.dev.info().ordinal;
        let kargs: Vec<KernelArg<'static>> = args
            .iter()
            .map(|a| match *a {
                KernelArgValue::Pointer(p) => KernelArg::device_ptr(p, ordinal),
                KernelArgValue::I32(v) => v.into(),
                KernelArgValue::U32(v) => v.into(),
                KernelArgValue::I64(v) => v.into(),
                KernelArgValue::F32(v) => v.into(),
            })
            .collect();
        let cfg = LaunchConfig {
            grid: (geometry.grid[0], geometry.grid[1], geometry.grid[2]),
            block: (geometry.block[0], geometry.block[1], geometry.block[2]),
            shared_bytes: geometry.shared_mem_bytes,
        };
        f.launch(&self.stream, cfg, &kargs).map_err(launch_error)
    }

    fn synchronize(&self, stream: u64) -> Result<(), DeviceError> {
        if stream != 0 {
            return Err(DeviceError::new(
                "hipStreamSynchronize",
                format!("stream {stream:#x}: this device supports only the default stream (0)"),
            ));
        }
        self.stream.synchronize().map_err(device_error)
    }
}
