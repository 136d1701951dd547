//! Autotuning (upstream hipDNN RFC 0013): time every way the handle's engines can run a graph
//! on the caller's tensors, keep the fastest as the graph's plan, and persist the winner in an
//! engine-override file that later builds read ([`hipdnn_backend::heur_config`]), so a new
//! process gets the tuned plan from [`Graph::build`] without timing anything.
//!
//! Candidates are the engine configs the heuristic offers for the graph, each expanded into the
//! engine's variants ([`hipdnn_backend::Engine::variants`]; for the GPU kernel-ingestor engine,
//! one per kernel that serves the graph, selected by the `hipkernel.kernel` knob), or the plan
//! specs given in [`AutotuneConfig::candidates`]. The graph's engine filters and the handle's
//! deterministic-only mode bar candidates as they bar builds; a barred candidate is still
//! reported, as a failed result naming the filter.

use crate::buffer::{Bind, Buffer, VariantPack};
use crate::handle::{Handle, backend_error};
use crate::{Error, ErrorCode, Graph, Result};
use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_backend::heur_config::{self, CURRENT_VERSION, MatchKey};
use hipdnn_backend::{EngineConfig, ExecutionPlanDescriptor, OperationGraph};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How candidates are prepared before they are timed (RFC 0013 `TuneMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TuneMode {
    /// Build each candidate and time it.
    #[default]
    Standard,
    /// First build and execute once a temporary priming plan with the engine's benchmarking
    /// knob (for engines that have one: `supports_exhaustive`), then build and time as
    /// `Standard`.
    Exhaustive,
}

/// How many timed executes a candidate gets (RFC 0013 `AutotuneStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutotuneStrategy {
    /// One timed execute.
    SingleShot,
    /// [`AutotuneConfig::timed_iterations`] timed executes.
    FixedAverage,
    /// Timed executes until the coefficient of variation of the last
    /// [`AutotuneConfig::window_size`] is below [`AutotuneConfig::stability_threshold`], at most
    /// [`AutotuneConfig::max_iterations`].
    #[default]
    RunUntilStable,
}

/// What to do when an `Exhaustive` priming plan fails (RFC 0013 `PrimingFailurePolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrimingFailurePolicy {
    /// Stop the autotune with the error.
    #[default]
    Abort,
    /// Time the candidate unprimed (`ran_exhaustive` false, the reason in
    /// `exhaustive_not_run_reason`).
    BenchmarkUnprimed,
}

/// An engine id with knob choices: one autotune candidate (RFC 0013 plan spec).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanSpec {
    /// Engine id ([`hipdnn_backend::engine_id_from_name`] of its name).
    pub engine_id: i64,
    /// Knob choices as `(knob type, value)`.
    pub knob_choices: Vec<(i64, i64)>,
}

/// Autotune settings (RFC 0013 `AutotuneConfig`; defaults as upstream).
#[derive(Debug, Clone, PartialEq)]
pub struct AutotuneConfig {
    /// Standard or exhaustive.
    pub mode: TuneMode,
    /// Timing strategy.
    pub strategy: AutotuneStrategy,
    /// Untimed executes before each candidate's timed ones (default 1).
    pub warmup_iterations: u32,
    /// `FixedAverage` executes (default 10).
    pub timed_iterations: u32,
    /// `RunUntilStable` cap (default 100; at least `window_size`).
    pub max_iterations: u32,
    /// `RunUntilStable` window (default 3; at least 2).
    pub window_size: u32,
    /// `RunUntilStable` coefficient-of-variation threshold, in (0, 1) (default 0.05).
    pub stability_threshold: f32,
    /// Engine ids to time ([`crate::engine_id_from_name`]); empty = all. A candidate whose
    /// engine is not listed is reported as failed ("excluded by engineIdFilter"); a listed id
    /// that no candidate has is not an error by itself, but when the filter leaves no
    /// candidate at all, autotune fails with `INVALID_VALUE` (RFC 0013).
    pub engine_id_filter: Vec<i64>,
    /// Explicit candidates; empty = every variant of every engine that serves the graph.
    pub candidates: Vec<PlanSpec>,
    /// Exhaustive mode's priming failure policy.
    pub priming_failure_policy: PrimingFailurePolicy,
}

impl Default for AutotuneConfig {
    fn default() -> Self {
        AutotuneConfig {
            mode: TuneMode::Standard,
            strategy: AutotuneStrategy::RunUntilStable,
            warmup_iterations: 1,
            timed_iterations: 10,
            max_iterations: 100,
            window_size: 3,
            stability_threshold: 0.05,
            engine_id_filter: Vec::new(),
            candidates: Vec::new(),
            priming_failure_policy: PrimingFailurePolicy::Abort,
        }
    }
}

/// Where the winner is written (RFC 0013 `AutotuneStorageConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutotuneStorage {
    /// The engine-override file.
    pub path: PathBuf,
    /// Start the file empty instead of replacing only the entry with the same match key.
    pub delete_all_existing_content: bool,
}

impl AutotuneStorage {
    /// Appends to (or creates) the file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        AutotuneStorage {
            path: path.into(),
            delete_all_existing_content: false,
        }
    }
}

/// One candidate's outcome (RFC 0013 `AutotuneResult`). Times are milliseconds per execute:
/// device events on a GPU handle, the wall clock on the CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct AutotuneResult {
    /// Engine id.
    pub engine_id: i64,
    /// Engine name.
    pub engine_name: String,
    /// What the candidate runs (the engine variant's label, e.g. the kernel); empty for an
    /// engine's only variant.
    pub variant: String,
    /// Knob choices of the candidate as `(knob type, value)`.
    pub knob_choices: Vec<(i64, i64)>,
    /// Fastest timed execute.
    pub min_time_ms: f64,
    /// Mean of the timed executes.
    pub avg_time_ms: f64,
    /// Population standard deviation of the timed executes (0 for one).
    pub stddev_ms: f64,
    /// Timed executes run.
    pub iterations_run: u32,
    /// True when the timing finished as the strategy asks (`RunUntilStable`: stable within
    /// the cap); false on failure.
    pub converged: bool,
    /// 0 = fastest; -1 for failed candidates (placed after the others).
    pub rank: i32,
    /// True when the candidate was built and timed.
    pub succeeded: bool,
    /// Why not, when not: "Plan barred: …", "engineIdFilter", "failed compile: …",
    /// "failed execute: …".
    pub error_message: String,
    /// Workspace bytes of the built plan; -1 when never built.
    pub workspace_size: i64,
    /// The mode used.
    pub mode_used: TuneMode,
    /// True when the engine has a benchmarking knob.
    pub supports_exhaustive: bool,
    /// True when a priming plan ran first.
    pub ran_exhaustive: bool,
    /// Why priming did not run under `Exhaustive`; empty otherwise.
    pub exhaustive_not_run_reason: String,
    /// The strategy used.
    pub strategy_used: AutotuneStrategy,
}

/// What [`Graph::write_autotune_results`] did (upstream's
/// `hipdnnAutotuneCacheWriteOutcome_ext_t` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The winner's entry was written.
    Written,
    /// No result succeeded: nothing to write.
    DeclinedNoEngines,
    /// The graph has no node an engine-override rule can key (block-scale, MoE, custom ops).
    DeclinedUnkeyable,
}

/// The timings of one candidate.
struct Timing {
    min: f64,
    avg: f64,
    stddev: f64,
    n: u32,
    converged: bool,
}

fn stats(times: &[f64]) -> (f64, f64, f64) {
    let n = times.len() as f64;
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let avg = times.iter().sum::<f64>() / n;
    let var = times.iter().map(|t| (t - avg) * (t - avg)).sum::<f64>() / n;
    (min, avg, var.sqrt())
}

/// Coefficient of variation of `window` (population); 0 when the mean is 0.
fn cov(window: &[f64]) -> f64 {
    let (_, avg, sd) = stats(window);
    if avg == 0.0 { 0.0 } else { sd / avg }
}

impl AutotuneConfig {
    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::new(ErrorCode::InvalidValue, m));
        if self.strategy == AutotuneStrategy::RunUntilStable {
            if self.window_size < 2 {
                return bad(format!(
                    "autotune: window_size {} must be at least 2",
                    self.window_size
                ));
            }
            if self.max_iterations < self.window_size {
                return bad(format!(
                    "autotune: max_iterations {} must be at least window_size {}",
                    self.max_iterations, self.window_size
                ));
            }
            if !(self.stability_threshold > 0.0 && self.stability_threshold < 1.0) {
                return bad(format!(
                    "autotune: stability_threshold {} must be in (0, 1)",
                    self.stability_threshold
                ));
            }
        }
        if self.strategy == AutotuneStrategy::FixedAverage && self.timed_iterations == 0 {
            return bad("autotune: timed_iterations must be at least 1".into());
        }
        Ok(())
    }

    /// Runs the strategy with `time_one` (milliseconds of one execute).
    fn time(&self, mut time_one: impl FnMut() -> Result<f64>) -> Result<Timing> {
        let mut times = Vec::new();
        let converged = match self.strategy {
            AutotuneStrategy::SingleShot => {
                times.push(time_one()?);
                true
            }
            AutotuneStrategy::FixedAverage => {
                for _ in 0..self.timed_iterations {
                    times.push(time_one()?);
                }
                true
            }
            AutotuneStrategy::RunUntilStable => {
                let w = self.window_size as usize;
                loop {
                    times.push(time_one()?);
                    if times.len() >= w
                        && cov(&times[times.len() - w..]) < f64::from(self.stability_threshold)
                    {
                        break true;
                    }
                    if times.len() >= self.max_iterations as usize {
                        break false;
                    }
                }
            }
        };
        let (min, avg, stddev) = stats(&times);
        Ok(Timing {
            min,
            avg,
            stddev,
            n: times.len() as u32,
            converged,
        })
    }
}

/// A re-borrow of one binding for one execute (the pack's bindings stay the caller's).
fn reborrow<'s>(b: &'s mut BufferRef<'_>) -> BufferRef<'s> {
    match b {
        BufferRef::Host(s) => BufferRef::Host(s),
        BufferRef::HostMut(s) => BufferRef::HostMut(s),
        BufferRef::Device { addr, len } => BufferRef::Device {
            addr: *addr,
            len: *len,
        },
    }
}

/// Times executes of plans on one handle: device events on a GPU, the wall clock on the CPU.
struct Timer<'h> {
    handle: &'h Handle,
    events: Option<(
        hipdnn_hip::safe::Stream,
        hipdnn_hip::safe::Event,
        hipdnn_hip::safe::Event,
    )>,
}

impl<'h> Timer<'h> {
    fn new(handle: &'h Handle) -> Result<Self> {
        let driver = |e: hipdnn_hip::DriverError| {
            Error::new(
                ErrorCode::HipdnnBackendError,
                format!("autotune: cannot create timing events: {e}"),
            )
        };
        let events = match handle.gpu_device() {
            Some(dev) => Some((
                hipdnn_hip::safe::Stream::default_stream(dev),
                hipdnn_hip::safe::Event::new(dev).map_err(driver)?,
                hipdnn_hip::safe::Event::new(dev).map_err(driver)?,
            )),
            None => None,
        };
        Ok(Timer { handle, events })
    }

    /// Executes `plan` once on `bindings` and returns its milliseconds.
    fn run(
        &self,
        plan: &ExecutionPlanDescriptor,
        bindings: &mut [TensorBinding<'_>],
        workspace: &mut Option<Buffer<u8>>,
    ) -> Result<f64> {
        let driver = |e: hipdnn_hip::DriverError| {
            Error::new(ErrorCode::HipdnnBackendError, format!("failed timing: {e}"))
        };
        let mut b: Vec<TensorBinding<'_>> = bindings
            .iter_mut()
            .map(|t| TensorBinding {
                uid: t.uid,
                data: reborrow(&mut t.data),
            })
            .collect();
        let ws = workspace.as_mut().map(|w| w.bind());
        let start = Instant::now();
        if let Some((stream, e0, _)) = &self.events {
            e0.record(stream).map_err(driver)?;
        }
        plan.execute_bindings(self.handle.backend(), &mut b, ws)
            .map_err(|e| backend_error("failed execute", e))?;
        match &self.events {
            Some((stream, e0, e1)) => {
                e1.record(stream).map_err(driver)?;
                e1.synchronize().map_err(driver)?;
                Ok(f64::from(e0.elapsed_ms(e1).map_err(driver)?))
            }
            None => Ok(start.elapsed().as_secs_f64() * 1e3),
        }
    }
}

/// `engine` or `engine [variant]` for logs and messages.
fn who(engine: &str, variant: &str) -> String {
    if variant.is_empty() {
        engine.to_string()
    } else {
        format!("{engine} [{variant}]")
    }
}

/// The name of the engine's knob of type `t`, for the file.
fn knob_name(handle: &Handle, op: &OperationGraph, engine_id: i64, t: i64) -> String {
    handle
        .backend()
        .engine(engine_id)
        .and_then(|e| e.knobs(op).into_iter().find(|k| k.knob_type == t))
        .map_or_else(|| t.to_string(), |k| k.name)
}

impl Graph {
    /// Autotunes the graph on `handle` with the tensors of `pack` (RFC 0013 `autotune`):
    /// builds every candidate (see the [module docs](crate::autotune)), executes each
    /// `warmup_iterations` times, then times it by `config.strategy`, ranks the successful
    /// ones by their fastest execute and makes the winner this graph's plan (as
    /// [`Graph::build`] would; save it, execute it). With `storage`, the winner is written to
    /// that engine-override file ([`Graph::write_autotune_results`]).
    ///
    /// Returns one result per candidate: successful ones by rank, then the failed ones
    /// (`rank` -1) with the reason. Workspace is allocated here, as each candidate needs;
    /// outputs of `pack` are overwritten many times (the graph must not read its outputs).
    ///
    /// # Errors
    /// `INVALID_VALUE` for a strategy setting out of range, a pack that does not bind the
    /// graph's tensors (as [`Graph::execute`]), or when no candidate is left after the filters
    /// ("autotune: no candidate is left: …", naming each exclusion); `GRAPH_NOT_SUPPORTED`
    /// when no engine serves the graph; `HIPDNN_BACKEND_ERROR` "autotune: every candidate
    /// failed: …" when none could be built and timed, or for a failed priming under
    /// [`PrimingFailurePolicy::Abort`]; the errors of [`Graph::write_autotune_results`] (the
    /// graph then already holds the winner, but the results are not returned: to keep them
    /// whatever the write does, pass `storage = None` and call
    /// [`Graph::write_autotune_results`] yourself). On error before the ranking the graph's
    /// plan is unchanged.
    pub fn autotune(
        &mut self,
        handle: &Handle,
        mut pack: VariantPack<'_>,
        config: &AutotuneConfig,
        storage: Option<&AutotuneStorage>,
    ) -> Result<Vec<AutotuneResult>> {
        config.check()?;
        let op = self.lower()?;
        let rules = crate::persist::pack_rules(self);
        pack.resolve(self)?;
        Graph::check_pack_rules(&rules, &pack)?;
        if let Some(b) = pack
            .bindings
            .iter()
            .find(|b| !rules.iter().any(|r| r.uid == b.uid))
        {
            return Err(Error::new(
                ErrorCode::InvalidValue,
                format!(
                    "autotune: the variant pack binds uid {}, which is not a non-virtual tensor of the graph",
                    b.uid
                ),
            ));
        }
        let backend = handle.backend();
        let specs: Vec<(PlanSpec, String)> = if config.candidates.is_empty() {
            let configs = backend.applicable_engine_configs(&op).map_err(|e| {
                Error::new(
                    ErrorCode::GraphNotSupported,
                    format!("No engine supports the graph: {}", e.message),
                )
            })?;
            let mut specs = Vec::new();
            for c in configs {
                let Some(engine) = backend.engine(c.engine_id) else {
                    continue;
                };
                let variants = engine.variants(&op, &c);
                if variants.is_empty() {
                    specs.push((
                        PlanSpec {
                            engine_id: c.engine_id,
                            knob_choices: c.knob_choices.clone(),
                        },
                        String::new(),
                    ));
                }
                for v in variants {
                    let mut knobs = c.knob_choices.clone();
                    knobs.extend(v.knob_choices);
                    specs.push((
                        PlanSpec {
                            engine_id: c.engine_id,
                            knob_choices: knobs,
                        },
                        v.label,
                    ));
                }
            }
            specs
        } else {
            let mut specs: Vec<(PlanSpec, String)> = Vec::new();
            for s in &config.candidates {
                if !specs.iter().any(|(t, _)| t == s) {
                    specs.push((s.clone(), String::new()));
                }
            }
            specs
        };
        log::info!(
            "autotune: {} candidate(s), mode {:?}, strategy {:?}",
            specs.len(),
            config.mode,
            config.strategy
        );
        let timer = Timer::new(handle)?;
        let VariantPack { mut bindings, .. } = pack;
        let mut results = Vec::with_capacity(specs.len());
        let mut plans: Vec<(usize, ExecutionPlanDescriptor, EngineConfig)> = Vec::new();
        let mut excluded = Vec::new();
        let binds_device = bindings
            .iter()
            .any(|b| matches!(b.data, BufferRef::Device { .. }));
        for (spec, label) in specs {
            let engine = backend.engine(spec.engine_id);
            let engine_name =
                engine.map_or_else(|| spec.engine_id.to_string(), |e| e.name().into());
            let bench_knob = engine.and_then(|e| {
                e.knobs(&op)
                    .into_iter()
                    .find(|k| k.name.ends_with(".benchmark"))
                    .map(|k| k.knob_type)
            });
            let mut r = AutotuneResult {
                engine_id: spec.engine_id,
                engine_name: engine_name.clone(),
                variant: label,
                knob_choices: spec.knob_choices.clone(),
                min_time_ms: 0.0,
                avg_time_ms: 0.0,
                stddev_ms: 0.0,
                iterations_run: 0,
                converged: false,
                rank: -1,
                succeeded: false,
                error_message: String::new(),
                workspace_size: -1,
                mode_used: config.mode,
                supports_exhaustive: bench_knob.is_some(),
                ran_exhaustive: false,
                exhaustive_not_run_reason: String::new(),
                strategy_used: config.strategy,
            };
            let cfg = EngineConfig {
                engine_id: spec.engine_id,
                knob_choices: spec.knob_choices.clone(),
            };
            if !config.engine_id_filter.is_empty()
                && !config.engine_id_filter.contains(&spec.engine_id)
            {
                r.error_message = "excluded by engineIdFilter".into();
                excluded.push(format!("{engine_name}: excluded by engineIdFilter"));
                results.push(r);
                continue;
            }
            if engine.is_some_and(|e| e.needs_host_memory()) && binds_device {
                let why = "the engine computes on host memory and the variant pack binds device \
                           buffers";
                r.error_message = format!("Plan barred: {why}");
                excluded.push(format!("{engine_name}: {why}"));
                results.push(r);
                continue;
            }
            if let Some(e) = engine
                && let Some(why) = self.filter.refuse_before_build(
                    e.as_ref(),
                    &cfg,
                    &op,
                    handle.deterministic_only(),
                )
            {
                r.error_message = format!("Plan barred: {why}");
                excluded.push(format!("{engine_name}: {why}"));
                results.push(r);
                continue;
            }
            if config.mode == TuneMode::Exhaustive && bench_knob.is_none() {
                r.exhaustive_not_run_reason =
                    "the engine has no benchmarking knob (nothing to prime)".into();
            }
            if config.mode == TuneMode::Exhaustive
                && let Some(k) = bench_knob
            {
                let mut prime = cfg.clone();
                prime.knob_choices.push((k, 1));
                match self.prime(handle, &op, &prime, &timer, &mut bindings) {
                    Ok(()) => r.ran_exhaustive = true,
                    Err(e) if config.priming_failure_policy == PrimingFailurePolicy::Abort => {
                        return Err(Error::new(
                            ErrorCode::HipdnnBackendError,
                            format!("autotune: priming {engine_name} failed: {}", e.message),
                        ));
                    }
                    Err(e) => {
                        r.exhaustive_not_run_reason = format!("priming failed: {}", e.message)
                    }
                }
            }
            let plan = match ExecutionPlanDescriptor::finalize(backend, &cfg, &op) {
                Ok(p) => p,
                Err(e) => {
                    r.error_message = format!("failed compile: {}: {}", e.status.name(), e.message);
                    log::warn!(
                        "autotune: {}: {}",
                        who(&engine_name, &r.variant),
                        r.error_message
                    );
                    results.push(r);
                    continue;
                }
            };
            r.workspace_size = plan.workspace_size() as i64;
            if let Some(why) = self.filter.refuse_after_build(plan.workspace_size()) {
                r.error_message = format!("Plan barred: {why}");
                excluded.push(format!("{engine_name}: {why}"));
                results.push(r);
                continue;
            }
            let mut workspace = match plan.workspace_size() {
                0 => None,
                n => Some(Buffer::<u8>::alloc(handle, n)?),
            };
            let timed = (|| {
                for _ in 0..config.warmup_iterations {
                    timer.run(&plan, &mut bindings, &mut workspace)?;
                }
                config.time(|| timer.run(&plan, &mut bindings, &mut workspace))
            })();
            match timed {
                Ok(t) => {
                    log::info!(
                        "autotune: {}: min {:.4} ms, avg {:.4} ms over {} runs{}",
                        who(&engine_name, &r.variant),
                        t.min,
                        t.avg,
                        t.n,
                        if t.converged { "" } else { " (not converged)" }
                    );
                    r.min_time_ms = t.min;
                    r.avg_time_ms = t.avg;
                    r.stddev_ms = t.stddev;
                    r.iterations_run = t.n;
                    r.converged = t.converged;
                    r.succeeded = true;
                    plans.push((results.len(), plan, cfg));
                }
                Err(e) => {
                    r.error_message = e.message;
                    log::warn!(
                        "autotune: {}: {}",
                        who(&engine_name, &r.variant),
                        r.error_message
                    );
                }
            }
            results.push(r);
        }
        if plans.is_empty() {
            if results.iter().all(|r| {
                r.error_message.starts_with("Plan barred")
                    || r.error_message.contains("engineIdFilter")
            }) {
                return Err(Error::new(
                    ErrorCode::InvalidValue,
                    format!("autotune: no candidate is left: {}", excluded.join("; ")),
                ));
            }
            let why: Vec<String> = results
                .iter()
                .map(|r| format!("{}: {}", who(&r.engine_name, &r.variant), r.error_message))
                .collect();
            return Err(Error::new(
                ErrorCode::HipdnnBackendError,
                format!("autotune: every candidate failed: {}", why.join("; ")),
            ));
        }
        // Rank: successful by fastest execute (ties keep candidate order), then the failed.
        plans.sort_by(|a, b| {
            results[a.0]
                .min_time_ms
                .total_cmp(&results[b.0].min_time_ms)
        });
        let (_, plan, cfg) = plans.swap_remove(0);
        let mut order: Vec<usize> = (0..results.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (&results[a], &results[b]);
            rb.succeeded
                .cmp(&ra.succeeded)
                .then(ra.min_time_ms.total_cmp(&rb.min_time_ms))
                .then(a.cmp(&b))
        });
        let mut ranked: Vec<AutotuneResult> = order.iter().map(|&i| results[i].clone()).collect();
        for (i, r) in ranked.iter_mut().enumerate() {
            r.rank = if r.succeeded { i as i32 } else { -1 };
        }
        log::info!(
            "autotune: winner {} ({:.4} ms); {} of {} candidate(s) timed",
            who(&ranked[0].engine_name, &ranked[0].variant),
            ranked[0].min_time_ms,
            ranked.iter().filter(|r| r.succeeded).count(),
            ranked.len()
        );
        self.install_plan(plan, &op, &cfg);
        if let Some(s) = storage {
            write_winner(handle, &op, &ranked, s)?;
        }
        Ok(ranked)
    }

    /// Builds a priming plan from `prime` and executes it once.
    fn prime(
        &self,
        handle: &Handle,
        op: &OperationGraph,
        prime: &EngineConfig,
        timer: &Timer<'_>,
        bindings: &mut [TensorBinding<'_>],
    ) -> Result<()> {
        let plan = ExecutionPlanDescriptor::finalize(handle.backend(), prime, op)
            .map_err(|e| backend_error("failed compile", e))?;
        let mut workspace = match plan.workspace_size() {
            0 => None,
            n => Some(Buffer::<u8>::alloc(handle, n)?),
        };
        timer.run(&plan, bindings, &mut workspace).map(|_| ())
    }

    /// Writes the winner of `results` (the first that succeeded) to the engine-override file of
    /// `storage`, in upstream's version-2 format (RFC 0013 § 6.5) with hipdnn-rs's additions
    /// (`device_arch`, each tensor's `data_type`, the winner's knobs by name): the entry whose
    /// match key (op, criteria, tensors by `tensor_id`, device arch) equals this graph's is
    /// replaced, others are kept (all are dropped with `delete_all_existing_content`).
    ///
    /// The read-modify-write holds an exclusive lock on `<path>.lock` (created next to the
    /// file and left there), so concurrent writers, threads or processes, each add their entry;
    /// the file is replaced atomically ([`crate::write_atomically`]), so a reader sees the old
    /// or the new file, never a part. An existing file that is not JSON is moved aside to
    /// `<path>.corrupt-<unix seconds>` (a WARN says so) and a new file is started.
    ///
    /// # Errors
    /// `INVALID_VALUE` "autotune: refusing to update …" when the existing file is JSON but not
    /// a version-2 engine-override file (a legacy or foreign file is left untouched);
    /// `HIPDNN_BACKEND_ERROR` "autotune: cannot write …" with the I/O error (the file keeps its
    /// content). Nothing is written, and `Ok` says why, when no result succeeded or the graph
    /// has no keyable node.
    pub fn write_autotune_results(
        &mut self,
        handle: &Handle,
        results: &[AutotuneResult],
        storage: &AutotuneStorage,
    ) -> Result<WriteOutcome> {
        write_winner(handle, &self.lower()?, results, storage)
    }
}

/// [`Graph::write_autotune_results`] for the graph lowered to `op` (autotune passes the
/// lowering it already has).
fn write_winner(
    handle: &Handle,
    op: &OperationGraph,
    results: &[AutotuneResult],
    storage: &AutotuneStorage,
) -> Result<WriteOutcome> {
    let Some(winner) = results.iter().find(|r| r.succeeded) else {
        log::warn!("autotune: no successful results to write");
        return Ok(WriteOutcome::DeclinedNoEngines);
    };
    let Some(key) = heur_config::match_keys(op).into_iter().next() else {
        log::warn!(
            "autotune: the graph has no node an engine-override rule can match; {} not written",
            storage.path.display()
        );
        return Ok(WriteOutcome::DeclinedUnkeyable);
    };
    let knobs: Vec<(String, i64)> = winner
        .knob_choices
        .iter()
        .map(|&(t, v)| (knob_name(handle, op, winner.engine_id, t), v))
        .collect();
    let entry = override_entry(winner, &key, handle.device_arch(), &knobs);
    update_file(&storage.path, storage.delete_all_existing_content, entry)?;
    log::info!(
        "autotune: wrote the winner for {} to {}",
        key.op,
        storage.path.display()
    );
    Ok(WriteOutcome::Written)
}

/// `YYYY-MM-DDTHH:MM:SSZ` of now (UTC).
fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn mode_name(m: TuneMode) -> &'static str {
    match m {
        TuneMode::Standard => "standard",
        TuneMode::Exhaustive => "exhaustive",
    }
}

fn strategy_name(s: AutotuneStrategy) -> &'static str {
    match s {
        AutotuneStrategy::SingleShot => "single_shot",
        AutotuneStrategy::FixedAverage => "fixed_average",
        AutotuneStrategy::RunUntilStable => "run_until_stable",
    }
}

/// The `engine_overrides` entry of `winner` for `key`.
fn override_entry(
    winner: &AutotuneResult,
    key: &MatchKey,
    arch: &str,
    knobs: &[(String, i64)],
) -> Value {
    let mut e = Map::new();
    e.insert("op".into(), json!(key.op));
    if !key.criteria.is_empty() {
        let c: Map<String, Value> = key
            .criteria
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        e.insert("criteria".into(), Value::Object(c));
    }
    e.insert("engine_name".into(), json!(winner.engine_name));
    e.insert("device_arch".into(), json!(arch));
    let tensors: Vec<Value> = key
        .tensors
        .iter()
        .map(|t| {
            let mut m = Map::new();
            m.insert("dim".into(), json!(t.dims));
            m.insert("tensor_id".into(), json!(t.tensor_id));
            if !t.strides.is_empty() {
                m.insert("stride".into(), json!(t.strides));
            }
            m.insert("data_type".into(), json!(t.data_type));
            Value::Object(m)
        })
        .collect();
    e.insert("tensors".into(), Value::Array(tensors));
    let mut m = Map::new();
    m.insert("min_time_ms".into(), json!(winner.min_time_ms));
    m.insert("avg_time_ms".into(), json!(winner.avg_time_ms));
    m.insert("stddev_ms".into(), json!(winner.stddev_ms));
    m.insert("iterations_run".into(), json!(winner.iterations_run));
    m.insert("mode".into(), json!(mode_name(winner.mode_used)));
    m.insert(
        "strategy".into(),
        json!(strategy_name(winner.strategy_used)),
    );
    m.insert("rank".into(), json!(0));
    m.insert("workspace_size".into(), json!(winner.workspace_size));
    m.insert("timestamp".into(), json!(timestamp()));
    m.insert(
        "supports_exhaustive".into(),
        json!(winner.supports_exhaustive),
    );
    m.insert("ran_exhaustive".into(), json!(winner.ran_exhaustive));
    m.insert(
        "exhaustive_not_run_reason".into(),
        json!(winner.exhaustive_not_run_reason),
    );
    if winner.strategy_used == AutotuneStrategy::RunUntilStable {
        m.insert("converged".into(), json!(winner.converged));
    }
    if !winner.variant.is_empty() {
        m.insert("variant".into(), json!(winner.variant));
    }
    if !knobs.is_empty() {
        let k: Vec<Value> = knobs
            .iter()
            .map(|(n, v)| json!({"knob_id": n, "type": "int", "value": v}))
            .collect();
        m.insert("knobs".into(), Value::Array(k));
    }
    e.insert("autotune_metadata".into(), Value::Object(m));
    Value::Object(e)
}

/// True when entries `a` and `b` have the same match key: op, criteria, device arch and the
/// same tensors by `tensor_id` (order free).
fn same_key(a: &Value, b: &Value) -> bool {
    let tensors = |v: &Value| -> Option<Vec<(String, Value)>> {
        let mut out: Vec<(String, Value)> = v
            .get("tensors")?
            .as_array()?
            .iter()
            .map(|t| {
                let mut t = t.as_object()?.clone();
                let id = t.remove("tensor_id")?.as_str()?.to_string();
                Some((id, Value::Object(t)))
            })
            .collect::<Option<_>>()?;
        out.sort_by(|x, y| x.0.cmp(&y.0));
        Some(out)
    };
    let criteria = |v: &Value| v.get("criteria").cloned().unwrap_or(json!({}));
    a.get("op") == b.get("op")
        && criteria(a) == criteria(b)
        && a.get("device_arch") == b.get("device_arch")
        && tensors(a).is_some()
        && tensors(a) == tensors(b)
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::new(
        ErrorCode::HipdnnBackendError,
        format!("autotune: cannot write {}: {e}", path.display()),
    )
}

/// Replaces the entry with `entry`'s key in the file at `path` (or starts the file), under the
/// file's lock.
fn update_file(path: &Path, delete_all: bool, entry: Value) -> Result<()> {
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_name)
        .map_err(|e| io_error(path, e))?;
    lock.lock().map_err(|e| io_error(path, e))?;
    let mut entries = Vec::new();
    if !delete_all {
        match std::fs::read(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(path, e)),
            // An empty file (made by `touch` or a temp-file helper) is a new file.
            Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {}
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Err(e) => {
                    let secs = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    let mut aside = path.as_os_str().to_owned();
                    aside.push(format!(".corrupt-{secs}"));
                    match std::fs::rename(path, &aside) {
                        Ok(()) => log::warn!(
                            "autotune: {} is not JSON ({e}); moved aside to {} and starting a new file",
                            path.display(),
                            Path::new(&aside).display()
                        ),
                        Err(r) => log::error!(
                            "autotune: {} is not JSON ({e}) and could not be moved aside ({r}); overwriting it",
                            path.display()
                        ),
                    }
                }
                Ok(root) => {
                    let refuse = |why: &str| {
                        Err(Error::new(
                            ErrorCode::InvalidValue,
                            format!(
                                "autotune: refusing to update {}: {why}; write to another file or set delete_all_existing_content",
                                path.display()
                            ),
                        ))
                    };
                    let Some(obj) = root.as_object() else {
                        return refuse("it is not a JSON object");
                    };
                    match obj.get("version").map(Value::as_i64) {
                        None => {
                            return refuse(
                                "it has no \"version\" (a version-1 file, whose rules builds still read by position; autotune adds entries only to version-2 files, as upstream)",
                            );
                        }
                        Some(Some(CURRENT_VERSION)) => {}
                        Some(Some(v)) => return refuse(&format!("its \"version\" is {v}, not 2")),
                        Some(None) => return refuse("its \"version\" is not an integer"),
                    }
                    match obj.get("engine_overrides") {
                        None => {}
                        Some(Value::Array(list)) => entries.clone_from(list),
                        Some(_) => return refuse("\"engine_overrides\" is not a list"),
                    }
                }
            },
        }
    }
    entries.retain(|e| !same_key(e, &entry));
    entries.push(entry);
    let root = json!({"version": CURRENT_VERSION, "engine_overrides": entries});
    let mut text = serde_json::to_string_pretty(&root).map_err(|e| {
        Error::new(
            ErrorCode::HipdnnBackendError,
            format!("autotune: cannot encode the file: {e}"),
        )
    })?;
    text.push('\n');
    crate::file::write_atomically(path, text.as_bytes()).map_err(|e| io_error(path, e))?;
    drop(lock);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_population_and_cov_handles_zero() {
        let (min, avg, sd) = stats(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!((min, avg), (1.0, 2.5));
        assert_eq!(sd, 1.25f64.sqrt());
        assert_eq!(cov(&[0.0, 0.0]), 0.0);
        assert_eq!(stats(&[7.0]), (7.0, 7.0, 0.0));
    }

    #[test]
    fn run_until_stable_stops_at_a_stable_window_or_the_cap() {
        let c = AutotuneConfig::default();
        let mut seq = [5.0, 1.0, 3.0, 2.0, 2.0, 2.0, 9.0].into_iter();
        let t = c.time(|| Ok(seq.next().unwrap())).unwrap();
        assert_eq!((t.n, t.converged, t.min), (6, true, 1.0));
        let c = AutotuneConfig {
            max_iterations: 4,
            ..AutotuneConfig::default()
        };
        let mut seq = [1.0, 3.0, 1.0, 3.0, 1.0].into_iter();
        let t = c.time(|| Ok(seq.next().unwrap())).unwrap();
        assert_eq!((t.n, t.converged), (4, false));
    }

    #[test]
    fn strategy_settings_out_of_range_are_refused() {
        for (c, prefix) in [
            (
                AutotuneConfig {
                    window_size: 1,
                    ..Default::default()
                },
                "autotune: window_size 1 must be at least 2",
            ),
            (
                AutotuneConfig {
                    max_iterations: 2,
                    ..Default::default()
                },
                "autotune: max_iterations 2 must be at least window_size 3",
            ),
            (
                AutotuneConfig {
                    stability_threshold: 1.0,
                    ..Default::default()
                },
                "autotune: stability_threshold 1 must be in (0, 1)",
            ),
        ] {
            let e = c.check().unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidValue);
            assert_eq!(e.message, prefix);
        }
    }

    #[test]
    fn timestamps_are_iso_8601_utc() {
        let t = timestamp();
        assert_eq!(t.len(), 20, "{t}");
        assert!(
            t.starts_with("20") && t.ends_with('Z') && t.as_bytes()[10] == b'T',
            "{t}"
        );
    }
}
