//! Capture (save hook): a built ingestor plan into payload bytes, with the save rules in
//! order (reference `ingestor-payload.md` §7; upstream `captureIngestorPlan`).
//!
//! Rules: 1 not an ingestor plan → 2 restored plan → 3 benchmarking plan without a winner →
//! 4 multi-launch kernel → 5 source kind not kpack → 6 handler saves nothing → 7 alias
//! registered to another handler → 8 no kernel code → 9 re-read and verify the code object
//! from its archive with the decorated build-device arch → 10 fill (target = base arch) →
//! 11 encode and hand over last. A refusal returns an error and produces no bytes.

use super::dispatch::DispatchRegistry;
use super::kernel::{KernelSourceKind, strip_arch_features};
use super::payload::refusal::{save_damaged, save_refused};
use super::payload::{BodySizeLimits, IngestorPlanPayload, encode_payload_with_limits};
use super::plan::{IngestorExecutionContext, IngestorPlan, SingleKernelPlan};
use hipdnn_backend::engine::ExecutionContext;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_kpack::{KpackLoadStage, KpackReadError};
use std::path::Path;
use std::sync::Arc;

/// This provider's version string, recorded in every payload (diagnostics only).
pub const PROVIDER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Text of the rule-1 refusal (also rule 3').
pub const NOT_AN_INGESTOR_PLAN: &str = "this plan was not built by an ingestor engine; its engine does not support saving execution plans";

/// Reads a verified code object from a kpack archive (reference `kpack.md` §5). The default
/// [`Self::read`] (all of [`KpackCodeObjectReader`]) calls
/// [`hipdnn_kpack::read_verified_code_object`]; tests fake it by overriding [`Self::read`].
pub trait CodeObjectReader: Send + Sync {
    /// The bytes of `toc_key` for `device_arch` (decorated) in `archive`, checked against
    /// `sha256`. The default reads the archive with `hipdnn_kpack`.
    ///
    /// # Errors
    /// The kpack stage and message of the failed step.
    fn read(
        &self,
        archive: &Path,
        toc_key: &str,
        device_arch: &str,
        sha256: &str,
    ) -> Result<Vec<u8>, KpackReadError> {
        hipdnn_kpack::read_verified_code_object(archive, toc_key, device_arch, sha256)
            .map(|v| v.bytes)
    }
}

/// The real reader over `hipdnn_kpack` (the default [`CodeObjectReader::read`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct KpackCodeObjectReader;

impl CodeObjectReader for KpackCodeObjectReader {}

/// Upper-case stage name used in messages (`OPEN_ARCHIVE`, …, `DIGEST_MISMATCH`).
fn stage_name(stage: KpackLoadStage) -> &'static str {
    stage.name()
}

/// What a capture needs besides the context.
#[derive(Clone, Copy)]
pub struct CaptureEnvironment<'a> {
    /// Dispatch handlers by name (rule 7).
    pub registry: &'a DispatchRegistry,
    /// Code-object reader (rule 9).
    pub reader: &'a dyn CodeObjectReader,
    /// Provider version to record.
    pub provider_version: &'a str,
    /// Body size limits.
    pub limits: BodySizeLimits,
}

/// Saves `ctx` as payload bytes.
///
/// # Errors
/// `NOT_APPLICABLE` with prefix `cannot save this plan here: ` for rules 1–6 and non-digest
/// read failures; `INVALID_VALUE` with prefix `cannot save this plan: its kernel source does
/// not match its descriptor: ` for a `DIGEST_MISMATCH`; `INTERNAL_ERROR` for rules 7, 8, a
/// missing archive path; the encoder's errors.
pub fn capture_plan(
    ctx: &dyn ExecutionContext,
    env: &CaptureEnvironment<'_>,
) -> PluginResult<Vec<u8>> {
    let ctx = ctx
        .as_any()
        .downcast_ref::<IngestorExecutionContext>()
        .ok_or_else(|| save_refused(NOT_AN_INGESTOR_PLAN))?;
    let plan: &SingleKernelPlan = match &ctx.plan {
        IngestorPlan::Restored(_) => {
            return Err(save_refused(
                "this plan was loaded from a saved payload; hipDNN saves a loaded plan from the plan bytes it was loaded from and never calls this hook for it, so a direct re-save is refused",
            ));
        }
        IngestorPlan::Benchmark(b) => b.winner().ok_or_else(|| {
            save_refused(
                "the plan has not chosen a kernel yet; execute it once, or build it with benchmarking off, then save",
            )
        })?,
        IngestorPlan::Single(p) => p,
    };
    capture_single(plan, env)
}

fn capture_single(plan: &SingleKernelPlan, env: &CaptureEnvironment<'_>) -> PluginResult<Vec<u8>> {
    let k = &plan.kernel;
    if k.is_multi_launch() {
        return Err(save_refused(format!(
            "kernel '{}' ({}) has {} launches; saving supports single-launch kernels only",
            k.name,
            k.id,
            k.sources.len()
        )));
    }
    let source = k.single_source().ok_or_else(|| {
        PluginError::internal(format!("kernel '{}' ({}) has no source", k.name, k.id))
    })?;
    if source.kind != KernelSourceKind::Kpack {
        return Err(save_refused(format!(
            "kernel '{}' ({}) has source kind '{}', which saving does not yet support",
            k.name, k.id, source.kind
        )));
    }
    let values = plan
        .handler
        .save_launch_inputs(&plan.launch)
        .ok_or_else(|| {
            save_refused(format!(
                "this dispatch handler does not support saving kernel '{}' ({})",
                k.name, k.id
            ))
        })?;
    let dispatch = plan.handler.contract().to_string();
    match env.registry.resolve(&dispatch) {
        Some(h) if Arc::ptr_eq(&h, &plan.handler) => {}
        _ => {
            return Err(PluginError::internal(format!(
                "dispatch alias '{dispatch}' is not registered to this handler, which saved {}",
                k.describe()
            )));
        }
    }
    if plan.code.is_none() {
        return Err(PluginError::internal(format!(
            "prepared dispatch exposes no kernel code for {}",
            k.describe()
        )));
    }
    let archive = source.library.as_deref().ok_or_else(|| {
        PluginError::internal(format!(
            "the code bytes of this source kind are not exposed for {}",
            k.describe()
        ))
    })?;
    if archive.as_os_str().is_empty() {
        return Err(PluginError::internal(format!(
            "kernel {} has an empty archive path",
            k.describe()
        )));
    }
    let label = format!("kernel {}", k.describe());
    let code = env
        .reader
        .read(archive, &source.toc_key, &plan.build_device_arch, &source.sha256)
        .map_err(|e| {
            let text = format!(
                "kpack kernel source for {label}, symbol '{}': cannot read its code object at stage {}: {}",
                source.symbol,
                stage_name(e.stage),
                e.message
            );
            if e.stage == KpackLoadStage::DigestMismatch { save_damaged(text) } else { save_refused(text) }
        })?;
    let payload = IngestorPlanPayload {
        kernel_descriptor_id: *k.id.as_bytes(),
        workspace_bytes: plan.launch.workspace_bytes,
        runtime_pass_by_value_uids: Vec::new(),
        dispatch_symbol: dispatch,
        launch_values: values,
        source_kind: KernelSourceKind::Kpack,
        symbol: source.symbol.clone(),
        target: strip_arch_features(&plan.build_device_arch).to_string(),
        sha256: source.sha256.clone(),
        signature: source.signature.clone(),
        code_object: code,
        provider_version: env.provider_version.to_string(),
    };
    let bytes = encode_payload_with_limits(&payload, env.limits)?;
    log::debug!("saved {label} ({} payload bytes)", bytes.len());
    Ok(bytes)
}
