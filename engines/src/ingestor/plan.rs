//! Ingestor plans and their execution context: a single-kernel plan built from a graph, a
//! benchmarking plan that picks its winner on first execute, and a plan restored from a
//! payload.
//!
//! Upstream: `KIE/KernelIngestorEngine.hpp` plan types and `KIE/IngestorKernelCode.hpp`
//! (reference `ingestor-payload.md` §8 "Result", §9 per-launch rule, §10). This module owns
//! launching through the [`Device`] seam and the per-launch device checks; it never encodes or
//! decodes payloads.
//!
//! [`Device`]: super::device::IngestorDevice

use super::arg_template::ArgTemplate;
use super::descriptor::KernelDescriptor;
use super::device::{
    DeviceResolver, IngestorDevice, KernelArgValue, KernelCode, LoadFailure, LoadStage,
    LoadedKernel, PackedKernelArgs,
};
use super::dispatch::{DispatchHandler, PreparedLaunch};
use super::kernel::{
    KernelArgument, KernelSourceKind, is_code_object_target_compatible, strip_arch_features,
};
use hipdnn_backend::engine::{BufferRef, ExecuteArgs, ExecutionContext};
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_backend::{OperationGraph, ShapeOverride};
use once_cell::sync::OnceCell;
use smallvec::SmallVec;
use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Weak};
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
    /// The launch as resolved when the plan was built ([`SingleKernelPlan::new`]).
    pub resolved: Arc<ResolvedLaunch>,
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
    /// The launch as resolved at restore (label `saved kernel <uuid>`, the saved target, the
    /// restoring device as its home device).
    pub resolved: ResolvedLaunch,
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
// A plan is made once per build or load and never moved on the execute path: boxing the
// larger variants would only add a pointer chase to every execute.
#[allow(clippy::large_enum_variant)]
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
    /// Set for a plan built from a graph with the override-shape flag, or restored together
    /// with such a graph (an `HDGP` container): what serves execute-time shape overrides
    /// ([`ShapeOverrides`]). `None` for other plans and for plans restored from a payload
    /// alone (it keeps the launch, not the graph).
    pub overrides: Option<Arc<ShapeOverrides>>,
}

/// What a plan built for a graph with the override-shape flag keeps to serve execute-time
/// shape overrides (upstream RFC 0008 phase 1): the built graph, and the plan's kernel with its
/// launch prepared again at each distinct set of overrides (kept, at most
/// [`crate::reference::OVERRIDE_PLANS`], most recently used last).
///
/// The shapes of every tensor at an override set are derived as the CPU reference engine
/// derives them ([`crate::reference::shapes_at`]: the RFC's checks against the built shapes,
/// virtual tensors node by node), the graph is rewritten with them
/// ([`OperationGraph::with_tensor_shapes`]) and the same kernel's dispatch handler prepares
/// its launch for it ([`DispatchHandler::prepare_kernel`]): launch values, grid and scalar
/// arguments at the new extents. A kernel whose entry does not serve the new shapes (a spec
/// entry whose alignment or divisibility the smaller shape breaks, a handler that refuses
/// them) is refused by name before anything is launched.
pub struct ShapeOverrides {
    graph: OperationGraph,
    plans: crate::reference::KeptAtShapes<SingleKernelPlan>,
    /// For a plan restored together with its graph: the saved kernel as a plan of a stand-in
    /// descriptor ([`ShapeOverrides::for_restored`]), the base every override set is prepared
    /// from. `None` for built plans (their own kernel is the base).
    restored_base: Option<SingleKernelPlan>,
}

impl fmt::Debug for ShapeOverrides {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShapeOverrides").finish_non_exhaustive()
    }
}

impl ShapeOverrides {
    /// Override support over the built `graph`.
    pub fn new(graph: OperationGraph) -> Self {
        ShapeOverrides {
            graph,
            plans: Default::default(),
            restored_base: None,
        }
    }

    /// Override support for a plan restored from saved bytes together with the `graph` it was
    /// saved with (an `HDGP` container's graph part). The saved kernel becomes the base of
    /// every override set through a stand-in descriptor: its id, symbol, target, source kind
    /// and signature as saved, and the Triton configuration its launch values hold
    /// ([`DispatchHandler::saved_config`]), so its dispatch handler prepares the same code
    /// object at other shapes exactly as for a built plan of that kernel. `home` is the device
    /// that restored it (its module is loaded there already).
    pub fn for_restored(
        graph: OperationGraph,
        restored: &RestoredPlan,
        home: Option<&Arc<dyn IngestorDevice>>,
    ) -> Self {
        let launch = &restored.launch;
        let source = super::descriptor::KernelSource {
            kind: restored.source_kind,
            library: None,
            toc_key: String::new(),
            symbol: restored.symbol.clone(),
            sha256: String::new(),
            signature: restored.signature.clone(),
        };
        let kernel = KernelDescriptor {
            id: restored.kernel_id,
            name: restored.symbol.clone(),
            dispatch: launch.dispatch.clone(),
            archs: vec![restored.target.clone()],
            sources: [("main".to_string(), source)].into_iter().collect(),
            config: restored
                .handler
                .saved_config(&launch.dispatch, &launch.launch_values),
        };
        let base = SingleKernelPlan::new(
            Arc::new(kernel),
            Arc::clone(&restored.handler),
            launch.clone(),
            Some(Arc::clone(&restored.code)),
            restored.target.clone(),
            home,
        );
        ShapeOverrides {
            restored_base: Some(base),
            ..ShapeOverrides::new(graph)
        }
    }

    /// The base plan of a restored plan's overrides ([`Self::for_restored`]); `None` for a
    /// built plan's.
    pub fn restored_base(&self) -> Option<&SingleKernelPlan> {
        self.restored_base.as_ref()
    }

    /// `base`'s kernel with its launch prepared at the shapes `overrides` give (once per
    /// distinct set); `home` is the device that loads its code now.
    ///
    /// # Errors
    /// `BAD_PARAM` "shape override: …" for an override that breaks a rule or shapes the graph
    /// does not run at ([`crate::reference::shapes_at`]), and "shape override: kernel K does
    /// not serve these shapes: …" when its handler refuses them, their launch needs another
    /// signature, or more workspace than the plan has.
    pub fn plan_at(
        &self,
        base: &SingleKernelPlan,
        overrides: &[ShapeOverride],
        home: Option<&Arc<dyn IngestorDevice>>,
    ) -> PluginResult<Arc<SingleKernelPlan>> {
        self.plans
            .get_or_make(overrides, || self.prepare_at(base, overrides, home))
    }

    /// [`Self::plan_at`]'s derivation, uncached.
    fn prepare_at(
        &self,
        base: &SingleKernelPlan,
        overrides: &[ShapeOverride],
        home: Option<&Arc<dyn IngestorDevice>>,
    ) -> PluginResult<SingleKernelPlan> {
        let shapes = crate::reference::shapes_at(&self.graph.graph(), overrides)?;
        let graph = self
            .graph
            .with_tensor_shapes(&shapes)
            .map_err(|e| PluginError::bad_param(e.message))?;
        let not_serving = |why: String| {
            PluginError::bad_param(format!(
                "shape override: kernel {} does not serve these shapes: {why}",
                base.kernel.describe()
            ))
        };
        let launch = base
            .handler
            .prepare_kernel(&base.kernel, &graph)
            .map_err(|e| not_serving(e.message))?;
        let (was, now) = (
            base.handler
                .launch_signature_for(&base.launch.launch_values),
            base.handler.launch_signature_for(&launch.launch_values),
        );
        if was != now {
            return Err(not_serving(
                "its launch at these shapes passes other kernel arguments".into(),
            ));
        }
        if launch.workspace_bytes > base.launch.workspace_bytes {
            return Err(not_serving(format!(
                "it needs {} workspace bytes at these shapes, more than the plan's {}",
                launch.workspace_bytes, base.launch.workspace_bytes
            )));
        }
        Ok(SingleKernelPlan::new(
            Arc::clone(&base.kernel),
            Arc::clone(&base.handler),
            launch,
            base.code.clone(),
            base.build_device_arch.clone(),
            home,
        ))
    }
}

impl fmt::Debug for IngestorExecutionContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IngestorExecutionContext({:?})", self.plan)
    }
}

/// Message for a failed [`KernelCode::load_on`] of `label` (restore check 16 texts).
pub fn load_failure_message(label: &str, f: &LoadFailure) -> String {
    let (stage, call) = match f.stage {
        LoadStage::Empty => {
            return format!(
                "hipModuleLoadData was not called for {label}: the code object is empty"
            );
        }
        LoadStage::Target => {
            return format!(
                "hipModuleLoadData was not called for {label}: {}",
                f.detail
                    .as_deref()
                    .unwrap_or("the code object is for another device")
            );
        }
        LoadStage::ModuleLoad => ("MODULE_LOAD", "hipModuleLoadData"),
        LoadStage::SymbolLookup => ("SYMBOL_LOOKUP", "hipModuleGetFunction"),
    };
    let error = f
        .error
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let detail = f
        .detail
        .as_ref()
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    format!(
        "the driver refuses the code object of {label} at stage {stage}: {call} failed: {error}{detail}"
    )
}

/// What every launch of a plan's kernel needs that no execute changes, decided once when the
/// plan is built or restored (issue 29): the label its errors name, the target and source kind
/// the device check compares, the workspace prefix each launch zeroes, and the kernel as loaded
/// on the plan's home device (the device it was built or restored on; its function prepared
/// for the recorded signature, [`IngestorDevice::bind_signature`]). An execute on the home
/// device only binds addresses and launches; on another device it checks that device and
/// loads the code there (once per device), as before.
pub struct ResolvedLaunch {
    label: String,
    kind: KernelSourceKind,
    target: String,
    workspace_bytes: u64,
    zeroed_bytes: u64,
    home: Option<HomeKernel>,
    /// The kernel arguments as far as no execute changes them ([`ArgTemplate::probe`]);
    /// `None` when the handler builds them per execute.
    template: Option<ArgTemplate>,
}

thread_local! {
    /// The kernel arguments of this thread's executes, kept between executes so that an
    /// execute over an [`ArgTemplate`] does not allocate its argument list.
    static KERNEL_ARGS: RefCell<Vec<KernelArgValue>> = const { RefCell::new(Vec::new()) };
}

/// The kernel loaded on the home device. The device is held weakly: its allocation is not
/// reused while this lives, so an address comparison recognises it.
struct HomeKernel {
    device: Weak<dyn IngestorDevice>,
    kernel: LoadedKernel,
    /// The template's arguments packed by the home device for its function
    /// ([`IngestorDevice::pack_args`]), when the launch has a template and no prologue and the
    /// device packs arguments: an execute there only writes the addresses.
    packed: Option<Arc<dyn PackedKernelArgs>>,
}

impl fmt::Debug for ResolvedLaunch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResolvedLaunch({}, home device {})",
            self.label,
            if self.home.is_some() {
                "loaded"
            } else {
                "none"
            }
        )
    }
}

impl ResolvedLaunch {
    /// Resolves the launch of `code` for `launch`: `label`, source `kind` and `target` name it
    /// in errors and the device check; `workspace_bytes` is the plan's workspace. When `home`
    /// (the device of the build or restore) passes the device check and loads `code`, its
    /// loaded kernel is kept for the executes on it.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        label: String,
        kind: KernelSourceKind,
        target: String,
        workspace_bytes: u64,
        handler: &dyn DispatchHandler,
        launch: &PreparedLaunch,
        code: Option<&KernelCode>,
        home: Option<&Arc<dyn IngestorDevice>>,
    ) -> Self {
        let mut r = ResolvedLaunch {
            label,
            kind,
            target,
            workspace_bytes,
            zeroed_bytes: handler.zeroed_workspace_bytes(launch).min(workspace_bytes),
            home: None,
            template: ArgTemplate::probe(handler, launch, workspace_bytes),
        };
        if let (Some(code), Some(device)) = (code, home)
            && r.check_device(device.as_ref()).is_ok()
            && let Ok(kernel) = code.load_on(device.as_ref())
        {
            let packed = match (&r.template, code.signature()) {
                (Some(t), Some(signature))
                    if handler.prologue_launches(launch, t.args()).is_empty() =>
                {
                    device.pack_args(kernel.function.as_ref(), t.args(), signature)
                }
                _ => None,
            };
            r.home = Some(HomeKernel {
                device: Arc::downgrade(device),
                kernel,
                packed,
            });
        }
        r
    }

    /// The label errors name (`kernel <describe>`, `saved kernel <uuid>`).
    pub fn label(&self) -> &str {
        &self.label
    }

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

    /// One launch of `launch` (with `handler`'s arguments, prologue and zeroing) of `code` on
    /// `device`. The workspace's size was checked by the backend
    /// ([`hipdnn_backend::ExecutionPlanDescriptor::check_workspace`], the one workspace check);
    /// here only its kind matters: a launch that zeroes a workspace prefix needs device memory.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &self,
        handler: &dyn DispatchHandler,
        launch: &PreparedLaunch,
        code: &KernelCode,
        signature: &[KernelArgument],
        device: &dyn IngestorDevice,
        args: &ExecuteArgs<'_, '_>,
    ) -> PluginResult<()> {
        // The workspace's device address (0 for none or host memory, which a launch that
        // reads its workspace cannot use: see the zeroing step below).
        let workspace = match &args.workspace {
            Some(BufferRef::Device { addr, .. }) if self.workspace_bytes > 0 => *addr,
            _ => 0,
        };
        let loaded;
        let kernel = match &self.home {
            Some(h)
                if std::ptr::addr_eq(h.device.as_ptr(), device as *const dyn IngestorDevice) =>
            {
                // On the home device with packed arguments: only the addresses are written.
                if let (Some(packed), Some(t)) = (&h.packed, &self.template) {
                    let mut pointers: SmallVec<[(usize, u64); 8]> = SmallVec::new();
                    if t.addresses(args.tensors, workspace, |i, a| pointers.push((i, a))) {
                        self.zero_workspace(device, args, workspace)?;
                        return device
                            .launch_packed(
                                h.kernel.function.as_ref(),
                                packed.as_ref(),
                                launch.geometry,
                                &pointers,
                                args.stream,
                            )
                            .map_err(|e| {
                                PluginError::internal(format!(
                                    "launching {} failed: {e}",
                                    self.label
                                ))
                            });
                    }
                }
                &h.kernel
            }
            _ => {
                self.check_device(device)?;
                loaded = code.load_on(device).map_err(|f| {
                    PluginError::not_applicable(load_failure_message(&self.label, &f))
                })?;
                &loaded
            }
        };
        // The arguments from the template when it applies, else from the handler (which then
        // judges the bindings as always); in this thread's buffer either way.
        KERNEL_ARGS.with(|cell| {
            let mut own = Vec::new();
            let mut kept = cell.try_borrow_mut();
            let kargs = match kept.as_deref_mut() {
                Ok(buf) => buf,
                Err(_) => &mut own, // a launch inside a launch: a buffer of its own
            };
            if !self
                .template
                .as_ref()
                .is_some_and(|t| t.fill(args.tensors, workspace, kargs))
            {
                *kargs = handler.kernel_args_with_workspace(launch, args.tensors, workspace)?;
            }
            self.launch_with(
                handler, launch, kernel, signature, device, args, workspace, kargs,
            )
        })
    }

    /// The rest of [`Self::run`] once the kernel and its arguments `kargs` are known: the
    /// workspace fill, the prologue launches and the launch.
    #[allow(clippy::too_many_arguments)]
    fn launch_with(
        &self,
        handler: &dyn DispatchHandler,
        launch: &PreparedLaunch,
        kernel: &LoadedKernel,
        signature: &[KernelArgument],
        device: &dyn IngestorDevice,
        args: &ExecuteArgs<'_, '_>,
        workspace: u64,
        kargs: &[KernelArgValue],
    ) -> PluginResult<()> {
        self.zero_workspace(device, args, workspace)?;
        for (geometry, pargs) in handler.prologue_launches(launch, kargs) {
            device
                .launch(
                    kernel.function.as_ref(),
                    geometry,
                    &pargs,
                    signature,
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
                launch.geometry,
                kargs,
                signature,
                args.stream,
            )
            .map_err(|e| PluginError::internal(format!("launching {} failed: {e}", self.label)))
    }

    /// The workspace check and the fill of its zeroed prefix, before a launch.
    fn zero_workspace(
        &self,
        device: &dyn IngestorDevice,
        args: &ExecuteArgs<'_, '_>,
        workspace: u64,
    ) -> PluginResult<()> {
        let zeroed = self.zeroed_bytes;
        if zeroed > 0 && workspace == 0 {
            return Err(PluginError::invalid_value(format!(
                "{} requires {} bytes of device workspace; {} was provided",
                self.label,
                self.workspace_bytes,
                if args.workspace.is_some() {
                    "host memory"
                } else {
                    "no workspace"
                }
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
        Ok(())
    }
}

impl SingleKernelPlan {
    /// A plan of `kernel` with the launch `handler` prepared, built on a device of decorated
    /// arch `build_device_arch`; its launch is resolved now ([`ResolvedLaunch`]), with `home`
    /// (the build device, which has loaded `code` already) as its home device.
    pub fn new(
        kernel: Arc<KernelDescriptor>,
        handler: Arc<dyn DispatchHandler>,
        launch: PreparedLaunch,
        code: Option<Arc<KernelCode>>,
        build_device_arch: String,
        home: Option<&Arc<dyn IngestorDevice>>,
    ) -> Self {
        let kind = kernel
            .single_source()
            .map(|s| s.kind)
            .unwrap_or(KernelSourceKind::Kpack);
        let resolved = ResolvedLaunch::new(
            format!("kernel {}", kernel.describe()),
            kind,
            strip_arch_features(&build_device_arch).to_string(),
            launch.workspace_bytes,
            handler.as_ref(),
            &launch,
            code.as_deref(),
            home,
        );
        SingleKernelPlan {
            kernel,
            handler,
            launch,
            code,
            build_device_arch,
            resolved: Arc::new(resolved),
        }
    }

    /// The plan's kernel code.
    ///
    /// # Errors
    /// `INTERNAL_ERROR` "prepared dispatch exposes no kernel code for …" when it has none.
    pub(crate) fn kernel_code(&self) -> PluginResult<&KernelCode> {
        self.code.as_deref().ok_or_else(|| {
            PluginError::internal(format!(
                "prepared dispatch exposes no kernel code for {}",
                self.kernel.describe()
            ))
        })
    }

    /// One execute of this plan's kernel on `device`.
    ///
    /// # Errors
    /// `INTERNAL_ERROR` when the prepared dispatch exposes no kernel code; else as
    /// [`ResolvedLaunch::run`].
    pub(crate) fn run(
        &self,
        device: &dyn IngestorDevice,
        args: &ExecuteArgs<'_, '_>,
    ) -> PluginResult<()> {
        let code = self.kernel_code()?;
        let signature = self
            .kernel
            .single_source()
            .map(|s| &s.signature[..])
            .unwrap_or(&[]);
        self.resolved.run(
            self.handler.as_ref(),
            &self.launch,
            code,
            signature,
            device,
            args,
        )
    }
}

impl RestoredPlan {
    fn run(&self, device: &dyn IngestorDevice, args: &ExecuteArgs<'_, '_>) -> PluginResult<()> {
        self.resolved.run(
            self.handler.as_ref(),
            &self.launch,
            &self.code,
            &self.signature,
            device,
            args,
        )
    }
}

impl IngestorExecutionContext {
    /// Runs `f` on the handle's device: the resolver's fixed device when it has one (no
    /// reference count touched), else the one it resolves for this call.
    fn with_device<R>(
        &self,
        f: impl FnOnce(&dyn IngestorDevice) -> PluginResult<R>,
    ) -> PluginResult<R> {
        let missing =
            || PluginError::internal("cannot resolve the handle's device for this execute");
        if let Some(d) = self.resolver.fixed_device() {
            return if d.ordinal() >= 0 {
                f(d)
            } else {
                Err(missing())
            };
        }
        let d = self
            .resolver
            .current_device()
            .filter(|d| d.ordinal() >= 0)
            .ok_or_else(missing)?;
        f(d.as_ref())
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
        self.with_device(|device| self.execute_on(device, &args))
    }

    /// Runs the plan's kernel with its launch prepared at the shapes `overrides` give
    /// ([`ShapeOverrides::plan_at`]), on the bound buffers.
    ///
    /// # Errors
    /// `BAD_PARAM` "shape override: …" for a plan restored from a payload alone (no graph to
    /// prepare other shapes from), a benchmarking plan that has not chosen its kernel, and
    /// the refusals of [`ShapeOverrides::plan_at`]; otherwise as [`Self::execute`].
    fn execute_with_overrides(
        &self,
        args: ExecuteArgs<'_, '_>,
        overrides: &[ShapeOverride],
    ) -> PluginResult<()> {
        let support = self.overrides.as_ref().ok_or_else(|| {
            PluginError::bad_param(
                "shape override: this GPU plan was loaded without its graph (a plan-only file: \
                 from_compiled_plan_binary), and its saved bytes keep its launch, not its \
                 graph, so it runs only at its built shapes; save and load the graph with its \
                 plan (to_binary / from_binary) or build the graph with the override-shape \
                 flag on this handle to serve other shapes",
            )
        })?;
        let base = match &self.plan {
            IngestorPlan::Single(p) => p,
            IngestorPlan::Benchmark(b) => b.winner().ok_or_else(|| {
                PluginError::bad_param(
                    "shape override: the plan benchmarks its candidate kernels on its first \
                     execute; execute it once at its built shapes first",
                )
            })?,
            IngestorPlan::Restored(_) => support.restored_base().ok_or_else(|| {
                PluginError::internal("shape override: a restored plan without its saved kernel")
            })?,
        };
        let home = self.resolver.current_device();
        let plan = support.plan_at(base, overrides, home.as_ref())?;
        self.with_device(|device| plan.run(device, &args))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    /// `None` (capturable: an execute queues its fills and launches on the execute's stream)
    /// except for a benchmarking plan that has not chosen its kernel yet, whose first execute
    /// times every candidate with host synchronizations.
    fn capture_refusal(&self) -> Option<String> {
        match &self.plan {
            IngestorPlan::Benchmark(b) if b.winner().is_none() => Some(
                "the plan benchmarks its candidate kernels on its first execute (it synchronizes \
                 the stream to time them); execute it once before capturing"
                    .into(),
            ),
            _ => None,
        }
    }

    fn bound_tensor_uids(&self) -> Option<Vec<i64>> {
        match &self.plan {
            IngestorPlan::Restored(r) => Some(r.launch.pointer_uids.clone()),
            _ => None,
        }
    }
}

impl IngestorExecutionContext {
    /// One execute on `device` (the handle's).
    fn execute_on(
        &self,
        device: &dyn IngestorDevice,
        args: &ExecuteArgs<'_, '_>,
    ) -> PluginResult<()> {
        match &self.plan {
            IngestorPlan::Single(p) => p.run(device, args),
            IngestorPlan::Restored(r) => r.run(device, args),
            IngestorPlan::Benchmark(b) => {
                if let Some(w) = b.winner() {
                    return w.run(device, args);
                }
                let mut best: Option<(usize, std::time::Duration)> = None;
                for (i, c) in b.candidates.iter().enumerate() {
                    let t0 = Instant::now();
                    c.run(device, args)?;
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
                    Some(w) => w.run(device, args),
                    None => Ok(()),
                }
            }
        }
    }
}
