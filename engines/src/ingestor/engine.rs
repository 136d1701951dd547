//! The ingestor engine: an [`Engine`] over a set of kernel descriptors, a device resolver, the
//! dispatch registry and a code-object reader, with the three serialization hooks.
//!
//! Upstream: `KIE/KernelIngestorEngine.{hpp,cpp}`, `HKP/src/core/PluginSerialization.cpp`,
//! behavior-note rule of reference `ingestor-payload.md` §12. The engine selects a kernel by
//! asking each descriptor's handler to prepare the graph; it never interprets bytes of a
//! payload itself (see [`super::capture`] and [`super::restore`]).

use super::capture::{CaptureEnvironment, CodeObjectReader, PROVIDER_VERSION, capture_plan};
use super::descriptor::KernelDescriptor;
use super::device::{DeviceResolver, KernelCode};
use super::dispatch::{DispatchHandler, DispatchRegistry};
use super::kernel::{KernelSourceKind, format_signature, signatures_match};
use super::payload::BodySizeLimits;
use super::plan::{
    BenchmarkPlan, IngestorExecutionContext, IngestorPlan, ShapeOverrides, SingleKernelPlan,
    load_failure_message,
};
use super::restore::{RestoreEnvironment, restore_plan, restore_plan_shared};
use hipdnn_backend::SharedBytes;
use hipdnn_backend::engine::{
    BehaviorNote, BufferRef, Engine, EngineConfig, EngineVariant, ExecuteArgs, ExecutionContext,
    KnobInfo, NumericalNote, PlanSerialization, TensorBinding, engine_id_from_name,
};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult, PluginStatus};
use std::sync::Arc;

/// Knob type of the benchmarking switch: 0 = the static rule's kernel (the first applicable
/// one), 1 = benchmark every applicable kernel and keep the fastest: at build, on scratch
/// tensors the engine allocates on the device ([`IngestorEngine::benchmark`]); where the
/// device cannot allocate, on the first execute with the caller's tensors.
pub const KNOB_BENCHMARK: i64 = 1;

/// Knob type of TF32 math for f32 graphs: 0 = IEEE f32 (the default; TF32 entries are never
/// chosen), 1 = the Triton entries built with TF32 inputs (`<family>_tf32_…`: f32 tensors,
/// tensor-core products of operands rounded to 10-bit mantissas, f32 accumulation) are
/// preferred where they serve the graph.
pub const KNOB_TF32: i64 = 2;

/// Knob type of the kernel choice (name `hipkernel.kernel`): 0 (the default) = the static
/// rule, or with [`KNOB_BENCHMARK`] = 1 the benchmark, picks the kernel; any other value =
/// build exactly the kernel whose [`kernel_knob_value`] it is, with no benchmark even when
/// [`KNOB_BENCHMARK`] is also set. A value that names no kernel of the engine, or a kernel that
/// does not serve the graph, is refused with `NOT_APPLICABLE`, and so is a TF32 entry without
/// [`KNOB_TF32`] = 1. A fallback dispatch ([`FALLBACK_DISPATCHES`]) may be chosen this way
/// even where a generated kernel serves the graph. [`Engine::variants`] lists the values
/// that serve a graph; the value is stable across processes, so an engine-override file can
/// name it.
pub const KNOB_KERNEL: i64 = 3;

/// The [`KNOB_KERNEL`] value that selects `kernel`: 64-bit FNV-1a
/// ([`engine_id_from_name`]) of the kernel's UUID in its hyphenated lowercase form (the
/// descriptor id, which also names the kernel in saved plans; the GPU engine derives it from
/// the kernel's name, so it is the same in every process and on every arch). Never 0 (0 maps to
/// 1), since 0 means "no choice".
pub fn kernel_knob_value(kernel: &KernelDescriptor) -> i64 {
    match engine_id_from_name(&kernel.id.hyphenated().to_string()) {
        0 => 1,
        v => v,
    }
}

/// Dispatches of hand-written fallback kernels: they serve a graph only when no generated
/// kernel does (engine order puts them last) and join a benchmark only then. The direct conv
/// (`hipkernel.conv_fwd.dispatch.v2`, one thread per output, 64-bit flat index) is retired
/// wherever a Triton conv fprop entry serves the graph; it still covers packed NCHW f32/f16
/// graphs the Triton entries refuse (element offsets beyond 2^31 − 1).
pub const FALLBACK_DISPATCHES: [&str; 1] = ["hipkernel.conv_fwd.dispatch.v2"];

/// True for a kernel whose products use TF32 inputs (a Triton entry of dtype `tf32`).
/// The Triton families whose kernels compute their products with `tl.dot` (matrix units for
/// f16/bf16 and TF32 inputs; f32 entries run it in IEEE precision): the engine's
/// `TENSOR_CORE` note. A test checks the list against the kernel sources.
pub const TENSOR_CORE_FAMILIES: [&str; 6] = [
    "conv_dgrad",
    "conv_fprop",
    "conv_wgrad",
    "matmul",
    "sdpa_bwd",
    "sdpa_fwd",
];

fn is_tf32(kernel: &KernelDescriptor) -> bool {
    kernel.config.as_ref().is_some_and(|c| c.dtype == "tf32")
}

/// Whether `kernel` is a packed Triton entry of a specialized variant (spec, bcol, nchw,
/// nchwt, grouped), whose divisibility, unit-stride or layout hints hold for some shapes only.
fn is_hinted(kernel: &KernelDescriptor) -> bool {
    kernel
        .config
        .as_ref()
        .is_some_and(|c| c.spec || c.b_col || c.channels_first || c.transposing || c.grouped)
}

/// Launches per candidate of a build-time benchmark before timing (warm-up: module load,
/// caches, clocks).
pub const BENCH_WARMUP: usize = 2;
/// Timed rounds per candidate; the candidate's time is the median round.
pub const BENCH_ROUNDS: usize = 5;
/// Back-to-back launches per timed round (the round's time is divided by this).
pub const BENCH_LAUNCHES: usize = 3;

/// One candidate of a build-time benchmark and its measured time.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchmarkTiming {
    /// The kernel (`KernelDescriptor::describe`).
    pub kernel: String,
    /// Median over [`BENCH_ROUNDS`] rounds of the device time per launch, in milliseconds
    /// (events around [`BENCH_LAUNCHES`] launches).
    pub median_ms: f64,
}

/// A kernel-ingestor engine.
pub struct IngestorEngine {
    name: String,
    kernels: Vec<Arc<KernelDescriptor>>,
    resolver: Arc<dyn DeviceResolver>,
    registry: Arc<DispatchRegistry>,
    reader: Arc<dyn CodeObjectReader>,
    limits: BodySizeLimits,
}

impl std::fmt::Debug for IngestorEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "IngestorEngine({}, {} kernels)",
            self.name,
            self.kernels.len()
        )
    }
}

impl IngestorEngine {
    /// An engine named `name` (e.g. `hipkernel:Pointwise`) over `kernels`.
    ///
    /// `resolver` names the device of each build, execute and restore; `registry` holds the
    /// dispatch handlers ([`crate::registry::native_packs`] for the native ones);
    /// `reader` reads verified code objects from kpack archives
    /// ([`super::capture::KpackCodeObjectReader`] in production).
    pub fn new(
        name: &str,
        kernels: Vec<KernelDescriptor>,
        resolver: Arc<dyn DeviceResolver>,
        registry: Arc<DispatchRegistry>,
        reader: Arc<dyn CodeObjectReader>,
    ) -> Self {
        IngestorEngine {
            name: name.to_string(),
            kernels: kernels.into_iter().map(Arc::new).collect(),
            resolver,
            registry,
            reader,
            limits: BodySizeLimits::default(),
        }
    }

    /// The kernels of this engine.
    pub fn kernels(&self) -> &[Arc<KernelDescriptor>] {
        &self.kernels
    }

    /// Whether plans of this engine can be saved (§12): at least one kernel, and for every
    /// kernel every launch is kpack, its dispatch resolves, and the handler supports saving.
    pub fn supports_plan_serialization(&self) -> bool {
        !self.kernels.is_empty()
            && self.kernels.iter().all(|k| {
                k.sources
                    .values()
                    .all(|s| s.kind == KernelSourceKind::Kpack)
                    && self
                        .registry
                        .resolve(&k.dispatch)
                        .is_some_and(|h| h.supports_saving())
            })
    }

    /// Builds a single-kernel plan of `kernel` for `graph` on the resolver's device: prepare,
    /// signature match, verified code-object read, module load.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` when the kernel does not serve the graph or the device; `INVALID_VALUE`
    /// for a digest mismatch; `INTERNAL_ERROR` without a device.
    pub fn build_plan(
        &self,
        kernel: &Arc<KernelDescriptor>,
        graph: &OperationGraph,
    ) -> PluginResult<SingleKernelPlan> {
        let handler = self.handler(kernel)?;
        let source = kernel.single_source().ok_or_else(|| {
            PluginError::not_applicable(format!(
                "kernel {} has several launches; this engine builds single-launch kernels",
                kernel.describe()
            ))
        })?;
        let launch = handler.prepare_kernel(kernel, graph)?;
        let expected = handler.launch_signature_for(&launch.launch_values);
        if !signatures_match(&source.signature, &expected) {
            return Err(PluginError::not_applicable(format!(
                "kernel {}: symbol '{}' is packaged with arguments {}, but this pack launches it with {}",
                kernel.describe(),
                source.symbol,
                format_signature(&source.signature),
                format_signature(&expected)
            )));
        }
        let device = self
            .resolver
            .current_device()
            .filter(|d| d.ordinal() >= 0)
            .ok_or_else(|| {
                PluginError::internal("cannot resolve the handle's device to build a plan")
            })?;
        let arch = device.arch();
        let code = match (&source.kind, &source.library) {
            (KernelSourceKind::Kpack, Some(lib)) => {
                let bytes = self.reader.read(lib, &source.toc_key, &arch, &source.sha256).map_err(|e| {
                    let text = format!(
                        "kpack kernel source for kernel {}, symbol '{}': cannot read its code object at stage {}: {}",
                        kernel.describe(),
                        source.symbol,
                        e.stage.name(),
                        e.message
                    );
                    if e.stage == hipdnn_kpack::KpackLoadStage::DigestMismatch {
                        PluginError::invalid_value(text)
                    } else {
                        PluginError::not_applicable(text)
                    }
                })?;
                let code = Arc::new(
                    KernelCode::new(Arc::from(bytes), &source.symbol)
                        .with_signature(source.signature.clone()),
                );
                let label = format!("kernel {}", kernel.describe());
                code.load_on(device.as_ref())
                    .map_err(|f| PluginError::not_applicable(load_failure_message(&label, &f)))?;
                Some(code)
            }
            _ => None,
        };
        Ok(SingleKernelPlan::new(
            kernel.clone(),
            handler,
            launch,
            code,
            arch,
            Some(&device),
        ))
    }

    fn restore_environment(&self) -> RestoreEnvironment<'_> {
        RestoreEnvironment {
            resolver: Some(self.resolver.as_ref()),
            registry: &self.registry,
            limits: self.limits,
        }
    }

    /// Times every candidate of `plans` on the resolver's device and returns the index of the
    /// fastest with every candidate's timing (in `plans` order): scratch device memory for
    /// each tensor the candidates bind (its byte span from the graph's dims, strides and data
    /// type; contents unspecified) and for the largest workspace, [`BENCH_WARMUP`] launches,
    /// then [`BENCH_ROUNDS`] rounds of [`BENCH_LAUNCHES`] launches between device events; the
    /// median round decides, ties to the earlier candidate (the static rule's order). A
    /// candidate whose warm-up launch fails is dropped (its timing is `f64::INFINITY`). `None`
    /// when the device cannot allocate scratch memory (the plan then benchmarks on its first
    /// execute). Scratch memory is freed before returning.
    ///
    /// # Errors
    /// `INTERNAL_ERROR` without a device or on a timing failure; the first candidate's launch
    /// error when every candidate's warm-up launch fails; the graph's tensor lookup errors.
    pub fn benchmark(
        &self,
        graph: &OperationGraph,
        plans: &[SingleKernelPlan],
    ) -> PluginResult<Option<(usize, Vec<BenchmarkTiming>)>> {
        let device = self
            .resolver
            .current_device()
            .ok_or_else(|| PluginError::internal("cannot resolve the device to benchmark on"))?;
        let mut uids: Vec<i64> = plans
            .iter()
            .flat_map(|p| p.launch.pointer_uids.iter().copied())
            .collect();
        uids.sort_unstable();
        uids.dedup();
        let mut scratch = Vec::with_capacity(uids.len() + 1);
        let mut tensors = Vec::with_capacity(uids.len());
        for uid in uids {
            let t = super::framework::graph::tensor(graph, uid)?;
            let elem = crate::reference::dtype::Elem::from_data_type(t.data_type())
                .map_or(4, |e| e.size());
            let dims: Vec<i64> = t.dims().map(|d| d.iter().collect()).unwrap_or_default();
            let strides: Vec<i64> = t.strides().map(|d| d.iter().collect()).unwrap_or_default();
            let span = dims
                .iter()
                .zip(&strides)
                .map(|(d, s)| (d - 1).max(0) * s.max(&0))
                .sum::<i64>()
                + 1;
            let len = usize::try_from(span)
                .unwrap_or(usize::MAX)
                .saturating_mul(elem);
            let Ok(mem) = device.alloc_scratch(len) else {
                return Ok(None);
            };
            tensors.push(TensorBinding {
                uid,
                data: BufferRef::Device {
                    addr: mem.addr(),
                    len,
                },
            });
            scratch.push(mem);
        }
        let ws_len = plans
            .iter()
            .map(|p| p.launch.workspace_bytes)
            .max()
            .unwrap_or(0);
        let workspace = if ws_len > 0 {
            let len = usize::try_from(ws_len).unwrap_or(usize::MAX);
            let Ok(mem) = device.alloc_scratch(len) else {
                return Ok(None);
            };
            let w = (mem.addr(), len);
            scratch.push(mem);
            Some(w)
        } else {
            None
        };
        let mut timings = Vec::with_capacity(plans.len());
        let mut best: Option<(usize, f64)> = None;
        let mut first_failure: Option<PluginError> = None;
        for (i, plan) in plans.iter().enumerate() {
            plan.kernel_code()?;
            let mut run = |n: usize| -> PluginResult<()> {
                for _ in 0..n {
                    plan.run(
                        device.as_ref(),
                        &ExecuteArgs {
                            stream: 0,
                            workspace: workspace.map(|(addr, len)| BufferRef::Device { addr, len }),
                            tensors: &mut tensors,
                        },
                    )?;
                }
                Ok(())
            };
            // A candidate whose warm-up launch fails (say, more shared memory than this device
            // gives a block) is dropped, not fatal: the others still compete.
            if let Err(e) = run(BENCH_WARMUP) {
                log::info!(
                    "hipdnn benchmark: kernel {}: dropped, its launch failed: {}",
                    plan.kernel.describe(),
                    e.message
                );
                timings.push(BenchmarkTiming {
                    kernel: plan.kernel.describe(),
                    median_ms: f64::INFINITY,
                });
                first_failure.get_or_insert(e);
                continue;
            }
            let mut rounds = Vec::with_capacity(BENCH_ROUNDS);
            for _ in 0..BENCH_ROUNDS {
                let ms = device.time_ms(0, &mut || run(BENCH_LAUNCHES))?;
                rounds.push(ms / BENCH_LAUNCHES as f64);
            }
            rounds.sort_by(f64::total_cmp);
            let median = rounds[rounds.len() / 2];
            log::info!(
                "hipdnn benchmark: kernel {}: {median:.4} ms",
                plan.kernel.describe()
            );
            timings.push(BenchmarkTiming {
                kernel: plan.kernel.describe(),
                median_ms: median,
            });
            if best.is_none_or(|(_, b)| median < b) {
                best = Some((i, median));
            }
        }
        drop(scratch);
        match (best, first_failure) {
            (Some((i, _)), _) => Ok(Some((i, timings))),
            (None, Some(e)) => Err(e),
            (None, None) => Ok(None),
        }
    }

    /// The kernels in engine order under the TF32 knob: with `tf32`, the TF32 entries first;
    /// without, none of them.
    fn ordered_kernels(&self, tf32: bool) -> Vec<&Arc<KernelDescriptor>> {
        let (tf, rest): (Vec<_>, Vec<_>) = self.kernels.iter().partition(|k| is_tf32(k));
        if tf32 {
            tf.into_iter().chain(rest).collect()
        } else {
            rest
        }
    }

    /// Whether `kernel` serves `graph`, decided as [`Engine::check_applicable`] does (its
    /// dispatch handler resolves and prepares the launch), without loading code.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming the missing handler, or the handler's refusal.
    fn serves(&self, kernel: &KernelDescriptor, graph: &OperationGraph) -> PluginResult<()> {
        self.handler(kernel)?
            .prepare_kernel(kernel, graph)
            .map(|_| ())
    }

    /// The dispatch handler `kernel` names.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming the handler when none is registered under that name.
    fn handler(&self, kernel: &KernelDescriptor) -> PluginResult<Arc<dyn DispatchHandler>> {
        self.registry.resolve(&kernel.dispatch).ok_or_else(|| {
            PluginError::not_applicable(format!(
                "no dispatch handler is registered under '{}', which kernel {} names",
                kernel.dispatch,
                kernel.describe()
            ))
        })
    }

    /// The kernel [`KNOB_KERNEL`] chooses in `config` (its last choice), checked against
    /// `graph`: `None` when the knob is 0 or absent.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` when the value names no kernel of this engine, names a TF32 entry
    /// without [`KNOB_TF32`] = 1, or names a kernel that does not serve `graph`.
    fn chosen_kernel(
        &self,
        graph: &OperationGraph,
        config: &EngineConfig,
    ) -> PluginResult<Option<&Arc<KernelDescriptor>>> {
        let Some(value) = knob_value(config, KNOB_KERNEL).filter(|v| *v != 0) else {
            return Ok(None);
        };
        let kernel = self
            .kernels
            .iter()
            .find(|k| kernel_knob_value(k) == value)
            .ok_or_else(|| {
                PluginError::not_applicable(format!(
                    "knob hipkernel.kernel = {value} names no kernel of engine {}",
                    self.name
                ))
            })?;
        if is_tf32(kernel) && !knob_set(config, KNOB_TF32) {
            return Err(PluginError::not_applicable(format!(
                "knob hipkernel.kernel = {value} names kernel {}, a TF32 entry, which runs only with knob hipkernel.tf32 = 1",
                kernel.describe()
            )));
        }
        self.serves(kernel, graph)
            .map_err(|e| not_serving(value, kernel, &e))?;
        Ok(Some(kernel))
    }

    /// The plans of the kernels that serve `graph`, in engine order (with `tf32`, the TF32
    /// entries first; without, none of them); only the first unless `all`.
    ///
    /// A graph with the override-shape flag serves every shape up to its built one, so its
    /// plan takes an entry without shape hints (a generic variant, or a hand-written kernel)
    /// when one serves it: the hinted (spec, bcol, nchw, nchwt) entries come after them, and
    /// with `all` they are dropped when a hint-free plan exists. Only when no hint-free entry
    /// serves the graph does a hinted one run it; overrides that break its hints are then
    /// refused by name ([`ShapeOverrides::plan_at`]).
    fn applicable_plans(
        &self,
        graph: &OperationGraph,
        all: bool,
        tf32: bool,
    ) -> PluginResult<Vec<SingleKernelPlan>> {
        let mut plans = Vec::new();
        let mut last = None;
        let mut kernels = self.ordered_kernels(tf32);
        let flagged = graph.is_override_shape_enabled();
        if flagged {
            // Stable: the engine order holds within each group.
            kernels.sort_by_key(|k| is_hinted(k));
        }
        for k in kernels {
            if !plans.is_empty() && FALLBACK_DISPATCHES.contains(&k.dispatch.as_str()) {
                continue;
            }
            match self.build_plan(k, graph) {
                Ok(p) => {
                    plans.push(p);
                    if !all {
                        break;
                    }
                }
                Err(e) => last = Some(e),
            }
        }
        if plans.is_empty() {
            return Err(last.unwrap_or_else(|| {
                PluginError::not_applicable(format!("engine {} has no kernels", self.name))
            }));
        }
        if flagged && plans.iter().any(|p| !is_hinted(&p.kernel)) {
            plans.retain(|p| !is_hinted(&p.kernel));
        }
        Ok(plans)
    }
}

/// The last value `config` chooses for knob `knob_type`.
fn knob_value(config: &EngineConfig, knob_type: i64) -> Option<i64> {
    config
        .knob_choices
        .iter()
        .rev()
        .find(|(t, _)| *t == knob_type)
        .map(|(_, v)| *v)
}

/// Whether `config` sets knob `knob_type` to a nonzero value.
fn knob_set(config: &EngineConfig, knob_type: i64) -> bool {
    config
        .knob_choices
        .iter()
        .any(|(t, v)| *t == knob_type && *v != 0)
}

/// The `NOT_APPLICABLE` refusal of a [`KNOB_KERNEL`] choice whose kernel does not serve the
/// graph (`why`: the handler's refusal).
fn not_serving(value: i64, kernel: &KernelDescriptor, why: &PluginError) -> PluginError {
    PluginError::not_applicable(format!(
        "knob hipkernel.kernel = {value} names kernel {}, which does not serve this graph: {}",
        kernel.describe(),
        why.message
    ))
}

/// `(tensor cores, narrowed inputs)` of a kernel that serves a graph: a Triton entry of a
/// [`TENSOR_CORE_FAMILIES`] family on f16/bf16 (tensor cores) or TF32 (both).
fn kernel_notes(kernel: &KernelDescriptor) -> (bool, bool) {
    match kernel.config.as_ref() {
        Some(c) if TENSOR_CORE_FAMILIES.contains(&c.family.as_str()) => match c.dtype.as_str() {
            "f16" | "bf16" => (true, false),
            "tf32" => (true, true),
            _ => (false, false),
        },
        _ => (false, false),
    }
}

impl Engine for IngestorEngine {
    fn name(&self) -> &str {
        &self.name
    }

    /// # Errors
    /// `NOT_APPLICABLE` with the most telling refusal of the engine's kernels: the first one
    /// of a family that takes the graph's pattern but not this graph (its text names what it
    /// refuses: a broadcast, a data type, a layout); else the first refusal of one packed
    /// entry (`kernel <k> …`: its type, its variant's hints, the static rule); else the last
    /// refusal (`the <family> pack serves …`: the pattern of another family); else `no kernel
    /// of engine <name> serves this graph`.
    fn check_applicable(&self, graph: &OperationGraph) -> PluginResult<()> {
        let (mut specific, mut entry, mut last) = (None, None, None);
        for k in self.kernels.iter().filter(|k| !is_tf32(k)) {
            match self
                .registry
                .resolve(&k.dispatch)
                .map(|h| h.prepare_kernel(k, graph))
            {
                Some(Ok(_)) => return Ok(()),
                Some(Err(e)) => {
                    if e.message.contains(" pack serves ") {
                        last = Some(e);
                    } else if e.message.starts_with("kernel ") {
                        entry = entry.or(Some(e));
                    } else {
                        specific = specific.or(Some(e));
                    }
                }
                None => {}
            }
        }
        Err(specific.or(entry).or(last).unwrap_or_else(|| {
            PluginError::not_applicable(format!(
                "no kernel of engine {} serves this graph",
                self.name
            ))
        }))
    }

    fn behavior_notes(&self, _graph: &OperationGraph) -> Vec<BehaviorNote> {
        if self.supports_plan_serialization() {
            vec![BehaviorNote::SupportsExecutionPlanSerialization]
        } else {
            Vec::new()
        }
    }

    /// `TENSOR_CORE` when a kernel that may serve the graph computes its products with
    /// `tl.dot` on f16/bf16 inputs ([`TENSOR_CORE_FAMILIES`]); with the TF32 knob set, also
    /// `DOWN_CONVERT_INPUTS` when a TF32 entry serves it (f32 inputs rounded to 10-bit
    /// mantissas). With [`KNOB_KERNEL`] set, the notes of that kernel only (none when the
    /// choice would be refused). Never `NONDETERMINISTIC`: every family sums split reductions
    /// in a fixed order (no float atomics), so repeated launches give the same bits
    /// (`engines/kernels/README.md`).
    fn numerical_notes(&self, graph: &OperationGraph, config: &EngineConfig) -> Vec<NumericalNote> {
        let tf32 = knob_set(config, KNOB_TF32);
        // (tensor cores, narrowed inputs) found so far among the kernels that serve the graph.
        let (tc, down) = if knob_value(config, KNOB_KERNEL).is_some_and(|v| v != 0) {
            self.chosen_kernel(graph, config)
                .ok()
                .flatten()
                .map_or((false, false), |k| kernel_notes(k))
        } else {
            let (mut tc, mut down) = (false, false);
            for k in self.kernels.iter().filter(|k| tf32 || !is_tf32(k)) {
                let (k_tc, narrow) = kernel_notes(k);
                if !k_tc || down || (tc && !narrow) {
                    continue;
                }
                let serves = self.serves(k, graph).is_ok();
                tc |= serves;
                down |= serves && narrow;
            }
            (tc, down)
        };
        let mut notes = Vec::new();
        if tc {
            notes.push(NumericalNote::TensorCore);
        }
        if down {
            notes.push(NumericalNote::DownConvertInputs);
        }
        notes
    }

    fn knobs(&self, _graph: &OperationGraph) -> Vec<KnobInfo> {
        vec![
            KnobInfo {
                knob_type: KNOB_BENCHMARK,
                name: "hipkernel.benchmark".into(),
                description:
                    "benchmark every applicable kernel on the device at build and keep the fastest"
                        .into(),
                min: 0,
                max: 1,
                default: 0,
            },
            KnobInfo {
                knob_type: KNOB_TF32,
                name: "hipkernel.tf32".into(),
                description: "allow TF32 tensor-core products for f32 graphs (inputs rounded to 10-bit mantissas, f32 accumulation)".into(),
                min: 0,
                max: 1,
                default: 0,
            },
            KnobInfo {
                knob_type: KNOB_KERNEL,
                name: "hipkernel.kernel".into(),
                description: "run exactly the kernel with this id (listed by the engine's variants); 0 = the static rule or the benchmark decides".into(),
                min: i64::MIN,
                max: i64::MAX,
                default: 0,
            },
        ]
    }

    /// One variant per kernel that serves `graph` under `config`'s TF32 knob, in engine order
    /// (the TF32 entries first when the knob is set; a fallback dispatch only when nothing
    /// before it serves), each selecting its kernel with [`KNOB_KERNEL`] and labelled with
    /// [`KernelDescriptor::describe`]. "Serves" is decided as
    /// [`Engine::check_applicable`] does, without loading code. `config`'s own
    /// [`KNOB_KERNEL`] choice is ignored.
    fn variants(&self, graph: &OperationGraph, config: &EngineConfig) -> Vec<EngineVariant> {
        let mut out = Vec::new();
        for k in self.ordered_kernels(knob_set(config, KNOB_TF32)) {
            if !out.is_empty() && FALLBACK_DISPATCHES.contains(&k.dispatch.as_str()) {
                continue;
            }
            if self.serves(k, graph).is_ok() {
                out.push(EngineVariant {
                    knob_choices: vec![(KNOB_KERNEL, kernel_knob_value(k))],
                    label: k.describe(),
                });
            }
        }
        out
    }

    /// Plans built from a graph with the override-shape flag, or restored together with one
    /// (an `HDGP` container), re-prepare their kernel's launch at each execute's override
    /// shapes ([`ShapeOverrides`]); plans restored from a payload alone refuse overrides (it
    /// keeps the launch, not the graph).
    fn supports_shape_overrides(&self) -> bool {
        true
    }

    fn create_execution_context(
        &self,
        config: &EngineConfig,
        graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        if let Some(kernel) = self.chosen_kernel(graph, config)? {
            let value = kernel_knob_value(kernel);
            let plan = self.build_plan(kernel, graph).map_err(|e| {
                if e.status == PluginStatus::NotApplicable {
                    not_serving(value, kernel, &e)
                } else {
                    e
                }
            })?;
            return Ok(Box::new(IngestorExecutionContext {
                plan: IngestorPlan::Single(plan),
                resolver: self.resolver.clone(),
                overrides: override_support(graph),
            }));
        }
        let bench = knob_set(config, KNOB_BENCHMARK);
        let tf32 = knob_set(config, KNOB_TF32);
        let mut plans = self.applicable_plans(graph, bench, tf32)?;
        let plan = if bench && plans.len() > 1 {
            match self.benchmark(graph, &plans)? {
                Some((i, _)) => IngestorPlan::Single(plans.swap_remove(i)),
                None => IngestorPlan::Benchmark(BenchmarkPlan::new(plans)),
            }
        } else {
            IngestorPlan::Single(plans.remove(0))
        };
        Ok(Box::new(IngestorExecutionContext {
            plan,
            resolver: self.resolver.clone(),
            overrides: override_support(graph),
        }))
    }

    fn serialization(&self) -> Option<&dyn PlanSerialization> {
        Some(self)
    }
}

impl PlanSerialization for IngestorEngine {
    fn serialize_execution_context(
        &self,
        _engine_id: i64,
        ctx: &dyn ExecutionContext,
    ) -> PluginResult<Vec<u8>> {
        capture_plan(
            ctx,
            &CaptureEnvironment {
                registry: &self.registry,
                reader: self.reader.as_ref(),
                provider_version: PROVIDER_VERSION,
                limits: self.limits,
            },
        )
    }

    fn create_execution_context_from_serialized(
        &self,
        payload: &[u8],
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        let plan = restore_plan(payload, &self.restore_environment())?;
        Ok(Box::new(IngestorExecutionContext {
            plan: IngestorPlan::Restored(plan),
            resolver: self.resolver.clone(),
            overrides: None,
        }))
    }

    /// The load hook of a loaded plan: the restored plan's code object is a view of `payload`
    /// (the plan's one owned copy of its bytes), so the engine keeps no copy of its own.
    fn create_execution_context_from_shared(
        &self,
        payload: &SharedBytes,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        let plan = restore_plan_shared(payload, &self.restore_environment())?;
        Ok(Box::new(IngestorExecutionContext {
            plan: IngestorPlan::Restored(plan),
            resolver: self.resolver.clone(),
            overrides: None,
        }))
    }

    /// As [`Self::create_execution_context_from_shared`]; when `graph` has the
    /// override-shape flag, the restored plan keeps it and serves shape overrides with its
    /// saved kernel ([`ShapeOverrides::for_restored`]).
    fn create_execution_context_with_graph(
        &self,
        payload: &SharedBytes,
        graph: &OperationGraph,
    ) -> PluginResult<Box<dyn ExecutionContext>> {
        let plan = restore_plan_shared(payload, &self.restore_environment())?;
        let overrides = graph.is_override_shape_enabled().then(|| {
            let home = self.resolver.current_device();
            Arc::new(ShapeOverrides::for_restored(
                graph.clone(),
                &plan,
                home.as_ref(),
            ))
        });
        Ok(Box::new(IngestorExecutionContext {
            plan: IngestorPlan::Restored(plan),
            resolver: self.resolver.clone(),
            overrides,
        }))
    }
}

/// Override support for a plan built from `graph`: `Some` when the graph has the
/// override-shape flag.
fn override_support(graph: &OperationGraph) -> Option<Arc<ShapeOverrides>> {
    graph
        .is_override_shape_enabled()
        .then(|| Arc::new(ShapeOverrides::new(graph.clone())))
}
