//! Ingestor plans and their execution context: a single-kernel plan built from a graph, a
//! benchmarking plan that picks its winner on first execute, and a plan restored from a
//! payload.
//!
//! Upstream: `KIE/KernelIngestorEngine.hpp` plan types and `KIE/IngestorKernelCode.hpp`
//! (reference `ingestor-payload.md` §8 "Result", §9 per-launch rule, §10). This module owns
//! launching through the [`Device`] seam and the per-launch device checks; it never encodes or
//! decodes payloads.

use super::descriptor::KernelDescriptor;
use super::device::{DeviceResolver, IngestorDevice, KernelCode, LoadFailure, LoadStage};
use super::dispatch::{DispatchHandler, PreparedLaunch};
use super::kernel::{
    KernelArgument, KernelSourceKind, is_code_object_target_compatible, strip_arch_features,
};
use hipdnn_backend::engine::{BufferRef, ExecuteArgs, ExecutionContext};
use hipdnn_backend::status::{PluginError, PluginResult};
use once_cell::sync::OnceCell;
use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// A plan of one kernel and one prepared launch, built by an ingestor engine.
#[derive(Clone)]
pub struct SingleKernelPlan {
    /// The kernel's descriptor.
    pub kernel: Arc<KernelDescriptor>,
    /// The handler that prepared the launch.
    pub handler: Arc<dyn DispatchHandler>,
    /// The prepared launch.
    pub launch: PreparedLaunch,
    /// The verified code object and its per-device modules; `None` when the plan's dispatch
    /// exposes no kernel code.
    pub code: Option<Arc<KernelCode>>,
    /// Decorated arch of the device the plan was built on, e.g. `gfx90a:sramecc+:xnack-`.
    pub build_device_arch: String,
}

impl fmt::Debug for SingleKernelPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SingleKernelPlan({}, {})",
            self.kernel.describe(),
            self.launch.dispatch
        )
    }
}

/// A benchmarking plan: several candidates; the first execute times each and keeps the fastest.
pub struct BenchmarkPlan {
    /// Candidates in engine order.
    pub candidates: Vec<SingleKernelPlan>,
    winner: OnceCell<usize>,
}

impl fmt::Debug for BenchmarkPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BenchmarkPlan({} candidates, winner {:?})",
            self.candidates.len(),
            self.winner.get()
        )
    }
}

impl BenchmarkPlan {
    /// A plan over `candidates` with no winner yet.
    pub fn new(candidates: Vec<SingleKernelPlan>) -> Self {
        BenchmarkPlan {
            candidates,
            winner: OnceCell::new(),
        }
    }
    /// The chosen candidate, once the first execute chose one.
    pub fn winner(&self) -> Option<&SingleKernelPlan> {
        self.winner.get().map(|i| &self.candidates[*i])
    }
    /// Chooses `index` as the winner (no-op when one is chosen already); used by the first
    /// execute and by tests.
    pub fn choose(&self, index: usize) {
        let _ = self
            .winner
            .set(index.min(self.candidates.len().saturating_sub(1)));
    }
}

/// A plan restored from a saved payload.
pub struct RestoredPlan {
    /// Kernel descriptor id of the saved kernel.
    pub kernel_id: uuid::Uuid,
    /// Saved kernel symbol.
    pub symbol: String,
    /// Saved target (base arch of the saving device).
    pub target: String,
    /// Saved source kind.
    pub source_kind: KernelSourceKind,
    /// Saved workspace in bytes.
    pub workspace_bytes: u64,
    /// The handler and the restored launch.
    pub handler: Arc<dyn DispatchHandler>,
    /// The restored launch.
    pub launch: PreparedLaunch,
    /// The code object (for a plan loaded through the backend, a view of the plan's one copy
    /// of its loaded bytes); its module is loaded on the restoring device already. The payload
    /// itself is not kept: a re-save of a loaded plan returns the backend's plan bytes and
    /// never reaches this engine.
    pub code: Arc<KernelCode>,
    /// The saved kernel's recorded signature (launches are checked against it).
    pub signature: Vec<KernelArgument>,
}

impl fmt::Debug for RestoredPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description())
    }
}

impl RestoredPlan {
    /// `saved kernel <uuid> (dispatch '<d>')`.
    pub fn description(&self) -> String {
        format!(
            "saved kernel {} (dispatch '{}')",
            self.kernel_id, self.launch.dispatch
        )
    }
}

/// The three plan types.
#[derive(Debug)]
pub enum IngestorPlan {
    /// Built with one kernel.
    Single(SingleKernelPlan),
    /// Built with benchmarking over several kernels.
    Benchmark(BenchmarkPlan),
    /// Restored from a payload.
    Restored(RestoredPlan),
}

/// The execution context an ingestor engine hands to the backend.
pub struct IngestorExecutionContext {
    /// The plan.
    pub plan: IngestorPlan,
    /// Finds the device of each execute.
    pub resolver: Arc<dyn DeviceResolver>,
}

impl fmt::Debug for IngestorExecutionContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IngestorExecutionContext({:?})", self.plan)
    }
}

/// Message for a failed [`KernelCode::load_on`] of `label` (restore check 16 texts).
pub fn load_failure_message(label: &str, f: &LoadFailure) -> String {
    match f.stage {
        LoadStage::Empty => {
            format!("hipModuleLoadData was not called for {label}: the code object is empty")
        }
        LoadStage::ModuleLoad => format!(
            "the driver refuses the code object of {label} at stage MODULE_LOAD: hipModuleLoadData failed: {}",
            f.error
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        ),
        LoadStage::SymbolLookup => format!(
            "the driver refuses the code object of {label} at stage SYMBOL_LOOKUP: hipModuleGetFunction failed: {}",
            f.error
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        ),
    }
}

pub(crate) struct Launchable<'p> {
    label: String,
    kind: KernelSourceKind,
    target: String,
    workspace_bytes: u64,
    handler: &'p Arc<dyn DispatchHandler>,
    launch: &'p PreparedLaunch,
    code: &'p KernelCode,
    signature: &'p [KernelArgument],
}

impl Launchable<'_> {
    fn check_device(&self, device: &dyn IngestorDevice) -> PluginResult<()> {
        let arch = device.arch();
        if strip_arch_features(&arch) != strip_arch_features(&self.target) {
            return Err(PluginError::invalid_value(format!(
                "{} was matched for architecture '{}', but device {} reports '{arch}'",
                self.label,
                strip_arch_features(&self.target),
                device.ordinal()
            )));
        }
        if !is_code_object_target_compatible(self.kind, &self.target, &arch) {
            return Err(PluginError::invalid_value(format!(
                "{} was saved for target '{}' but is being launched on device {}, which reports '{arch}'",
                self.label,
                self.target,
                device.ordinal()
            )));
        }
        Ok(())
    }

    pub(crate) fn run(
        &self,
        device: &dyn IngestorDevice,
        args: &ExecuteArgs<'_, '_>,
    ) -> PluginResult<()> {
        if self.workspace_bytes > 0 && args.workspace.is_none() {
            return Err(PluginError::invalid_value(format!(
                "{} requires {} workspace bytes but none was provided",
                self.label, self.workspace_bytes
            )));
        }
        // The workspace's device address (0 for none or host memory, which a launch that
        // reads its workspace cannot use: see the zeroing step below).
        let workspace = match &args.workspace {
            Some(BufferRef::Device { len, .. }) if (*len as u64) < self.workspace_bytes => {
                return Err(PluginError::invalid_value(format!(
                    "{} requires {} workspace bytes but {len} were provided",
                    self.label, self.workspace_bytes
                )));
            }
            Some(BufferRef::Device { addr, .. }) if self.workspace_bytes > 0 => *addr,
            _ => 0,
        };
        self.check_device(device)?;
        let kernel = self
            .code
            .load_on(device)
            .map_err(|f| PluginError::not_applicable(load_failure_message(&self.label, &f)))?;
        let kargs =
            self.handler
                .kernel_args_with_workspace(self.launch, args.tensors, workspace)?;
        let zeroed = self
            .handler
            .zeroed_workspace_bytes(self.launch)
            .min(self.workspace_bytes);
        if zeroed > 0 && workspace == 0 {
            return Err(PluginError::invalid_value(format!(
                "{} requires {} bytes of device workspace; host memory was provided",
                self.label, self.workspace_bytes
            )));
        }
        if zeroed > 0 {
            device
                .memset_async(workspace, 0, zeroed, args.stream)
                .map_err(|e| {
                    PluginError::internal(format!(
                        "zeroing {zeroed} workspace bytes for {} failed: {e}",
                        self.label
                    ))
                })?;
        }
        for (geometry, pargs) in self.handler.prologue_launches(self.launch, &kargs) {
            device
                .launch(
                    kernel.function.as_ref(),
                    geometry,
                    &pargs,
                    self.signature,
                    args.stream,
                )
                .map_err(|e| {
                    PluginError::internal(format!(
                        "launching the prologue of {} failed: {e}",
                        self.label
                    ))
                })?;
        }
        device
            .launch(
                kernel.function.as_ref(),
                self.launch.geometry,
                &kargs,
                self.signature,
                args.stream,
            )
            .map_err(|e| PluginError::internal(format!("launching {} failed: {e}", self.label)))
    }
}

impl SingleKernelPlan {
    pub(crate) fn launchable(&self) -> PluginResult<Launchable<'_>> {
        let code = self.code.as_deref().ok_or_else(|| {
            PluginError::internal(format!(
                "prepared dispatch exposes no kernel code for {}",
                self.kernel.describe()
            ))
        })?;
        let source = self.kernel.single_source();
        let kind = source.map(|s| s.kind).unwrap_or(KernelSourceKind::Kpack);
        Ok(Launchable {
            label: format!("kernel {}", self.kernel.describe()),
            kind,
            target: strip_arch_features(&self.build_device_arch).to_string(),
            workspace_bytes: self.launch.workspace_bytes,
            handler: &self.handler,
            launch: &self.launch,
            code,
            signature: source.map(|s| &s.signature[..]).unwrap_or(&[]),
        })
    }
}

impl IngestorExecutionContext {
    fn device(&self) -> PluginResult<Arc<dyn IngestorDevice>> {
        self.resolver
            .current_device()
            .filter(|d| d.ordinal() >= 0)
            .ok_or_else(|| {
                PluginError::internal("cannot resolve the handle's device for this execute")
            })
    }

    fn run_single(
        plan: &SingleKernelPlan,
        device: &dyn IngestorDevice,
        args: &ExecuteArgs<'_, '_>,
    ) -> PluginResult<()> {
        plan.launchable()?.run(device, args)
    }
}

impl ExecutionContext for IngestorExecutionContext {
    fn workspace_size(&self) -> usize {
        let w = match &self.plan {
            IngestorPlan::Single(p) => p.launch.workspace_bytes,
            IngestorPlan::Benchmark(b) => b
                .candidates
                .iter()
                .map(|c| c.launch.workspace_bytes)
                .max()
                .unwrap_or(0),
            IngestorPlan::Restored(r) => r.workspace_bytes,
        };
        usize::try_from(w).unwrap_or(usize::MAX)
    }

    fn execute(&self, args: ExecuteArgs<'_, '_>) -> PluginResult<()> {
        let device = self.device()?;
        match &self.plan {
            IngestorPlan::Single(p) => Self::run_single(p, device.as_ref(), &args),
            IngestorPlan::Restored(r) => Launchable {
                label: format!("saved kernel {}", r.kernel_id),
                kind: r.source_kind,
                target: r.target.clone(),
                workspace_bytes: r.workspace_bytes,
                handler: &r.handler,
                launch: &r.launch,
                code: &r.code,
                signature: &r.signature,
            }
            .run(device.as_ref(), &args),
            IngestorPlan::Benchmark(b) => {
                if let Some(w) = b.winner() {
                    return Self::run_single(w, device.as_ref(), &args);
                }
                let mut best: Option<(usize, std::time::Duration)> = None;
                for (i, c) in b.candidates.iter().enumerate() {
                    let t0 = Instant::now();
                    Self::run_single(c, device.as_ref(), &args)?;
                    device.synchronize(args.stream).map_err(|e| {
                        PluginError::internal(format!("benchmark synchronize failed: {e}"))
                    })?;
                    let dt = t0.elapsed();
                    if best.is_none_or(|(_, d)| dt < d) {
                        best = Some((i, dt));
                    }
                }
                let (i, _) = best
                    .ok_or_else(|| PluginError::internal("benchmarking plan has no candidates"))?;
                b.choose(i);
                // Run the winner last so the outputs are the winner's.
                match b.winner() {
                    Some(w) => Self::run_single(w, device.as_ref(), &args),
                    None => Ok(()),
                }
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn bound_tensor_uids(&self) -> Option<Vec<i64>> {
        match &self.plan {
            IngestorPlan::Restored(r) => Some(r.launch.pointer_uids.clone()),
            _ => None,
        }
    }
}
