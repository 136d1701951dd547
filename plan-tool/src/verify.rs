//! Load-time checks without a device: every check is the real loader's, called here, so its
//! messages are the loader's own and new loader checks apply here without a change.
//!
//! - Graph, container, plan: the SDK's [`hipdnn::Graph::from_binary`] /
//!   [`hipdnn::Graph::from_compiled_plan_binary`] on a CPU handle that also registers the
//!   kernel-ingestor engine (`hipkernel.ingestor.gpu`) over a stand-in device reporting the
//!   payload's recorded kpack target, so ingestor plans run the payload decode and the restore
//!   checks (target, dispatch handler, signature, launch values). The stand-in accepts any
//!   module load: the only check left out is loading the code object on a real device.
//! - Graph JSON: the SDK's [`hipdnn::Graph::from_json`] (upstream's format) or
//!   [`hipdnn::Graph::from_flatbuffer_json`] (the legacy format).
//! - Bare engine payloads: the ingestor's [`hipdnn_engines::ingestor::restore_plan`] with the
//!   same stand-in device; the CPU reference engine's
//!   [`hipdnn_engines::reference::payload::decode`].
//!
//! This module never re-implements a check and never launches anything.

use crate::describe::{self, Form};
use hipdnn::{Graph, Handle};
use hipdnn_engines::gpu::GPU_ENGINE_NAME;
use hipdnn_engines::ingestor::device::{
    DeviceError, FixedDevice, IngestorDevice, IngestorModule, KernelArgValue, KernelFunction,
    LaunchGeometry,
};
use hipdnn_engines::ingestor::kernel::KernelArgument;
use hipdnn_engines::ingestor::payload::BodySizeLimits;
use hipdnn_engines::ingestor::{IngestorEngine, KpackCodeObjectReader, RestoreEnvironment};
use hipdnn_engines::registry::pack_registry;
use std::any::Any;
use std::sync::Arc;

/// What `verify` found: the checks that passed, then the first failure, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Names of the checks that passed, in order.
    pub passed: Vec<String>,
    /// `(check, loader message)` of the failure; several entries only for a file of unknown
    /// form, which every loader refused.
    pub failures: Vec<(String, String)>,
    /// Checks that need a device and were not run.
    pub not_checked: Vec<String>,
}

impl Report {
    /// True when no check failed.
    pub fn ok(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Name of the module-load check a device-less verify cannot run.
const MODULE_LOAD: &str = "ingestor code object load on a device (hipModuleLoadData)";

struct NoFunction;
impl KernelFunction for NoFunction {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct NoModule;
impl IngestorModule for NoModule {
    fn get_function(&self, _symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError> {
        Ok(Arc::new(NoFunction))
    }
}

/// A device that reports `arch`, accepts every module load and refuses every launch.
struct StandInDevice {
    arch: String,
}

impl IngestorDevice for StandInDevice {
    fn arch(&self) -> String {
        self.arch.clone()
    }
    fn ordinal(&self) -> i32 {
        0
    }
    fn load_module(&self, _code_object: &[u8]) -> Result<Arc<dyn IngestorModule>, DeviceError> {
        Ok(Arc::new(NoModule))
    }
    fn launch(
        &self,
        _function: &dyn KernelFunction,
        _geometry: LaunchGeometry,
        _args: &[KernelArgValue],
        _signature: &[KernelArgument],
        _stream: u64,
    ) -> Result<(), DeviceError> {
        Err(DeviceError::new(
            "hipModuleLaunchKernel",
            "hipdnn-plan has no device",
        ))
    }
    fn synchronize(&self, _stream: u64) -> Result<(), DeviceError> {
        Ok(())
    }
}

fn stand_in(arch: Option<String>) -> Arc<dyn IngestorDevice> {
    Arc::new(StandInDevice {
        arch: arch.unwrap_or_else(|| "none".into()),
    })
}

/// A CPU handle with the ingestor engine over the stand-in device of `arch`.
fn handle(arch: Option<String>) -> Result<Handle, String> {
    let mut h = Handle::cpu().map_err(|e| e.to_string())?;
    let engine = IngestorEngine::new(
        GPU_ENGINE_NAME,
        Vec::new(),
        Arc::new(FixedDevice(stand_in(arch))),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    h.backend_mut()
        .register_engine(Arc::new(engine))
        .map_err(|e| e.to_string())?;
    Ok(h)
}

/// Runs the load-time checks of `form` on `bytes` (`doc` is its description, which gives the
/// recorded kpack target of an ingestor plan).
pub fn verify(bytes: &[u8], form: Form, doc: &serde_json::Value) -> Report {
    let target = describe::recorded_target(doc);
    let is_ingestor = target.is_some()
        || doc.pointer("/payload/kind").and_then(|k| k.as_str()) == Some("ingestor-plan");
    let mut report = Report {
        passed: Vec::new(),
        failures: Vec::new(),
        not_checked: Vec::new(),
    };
    let mut check = |name: &str, r: Result<(), String>| match r {
        Ok(()) => report.passed.push(name.to_string()),
        Err(m) => report.failures.push((name.to_string(), m)),
    };
    let h = match handle(target.clone()) {
        Ok(h) => h,
        Err(m) => {
            check("handle", Err(m));
            return report;
        }
    };
    let from_binary = || {
        Graph::from_binary(&h, bytes)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let from_plan = || {
        Graph::from_compiled_plan_binary(&h, bytes)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    match form {
        Form::Container | Form::Graph => check("from_binary", from_binary()),
        Form::Plan => check("from_compiled_plan_binary", from_plan()),
        Form::IngestorPayload => {
            let device = FixedDevice(stand_in(target));
            let registry = pack_registry();
            let env = RestoreEnvironment {
                resolver: Some(&device),
                registry: &registry,
                limits: BodySizeLimits::default(),
            };
            check(
                "ingestor restore",
                hipdnn_engines::ingestor::restore_plan(bytes, &env)
                    .map(drop)
                    .map_err(|e| e.to_string()),
            );
        }
        Form::GraphJson => check("from_json", describe::json_graph(bytes, form).map(drop)),
        Form::FlatbufferJson => check(
            "from_flatbuffer_json",
            describe::json_graph(bytes, form).map(drop),
        ),
        Form::Kpack | Form::CodeObject => check(
            "form",
            Err(format!(
                "the file is {}",
                form.foreign().unwrap_or_default()
            )),
        ),
        Form::CpuPayload => check(
            "cpu plan decode",
            hipdnn_engines::reference::payload::decode(bytes)
                .map(drop)
                .map_err(|e| e.to_string()),
        ),
        Form::Unknown => {
            if let (Err(a), Err(b)) = (from_binary(), from_plan()) {
                check("from_binary", Err(a));
                check("from_compiled_plan_binary", Err(b));
            } else {
                check("from_binary or from_compiled_plan_binary", Ok(()));
            }
        }
    }
    if is_ingestor && report.failures.is_empty() {
        report.not_checked.push(MODULE_LOAD.to_string());
    }
    report
}
