//! Restore (load hook): a payload back into an executable plan, with the checks in the final
//! order of ROCm/rocm-libraries #13315 (reference `ingestor-payload.md` §8).
//!
//! Order: decoder 1–10 (incl. 9b) → device resolver → 11 target → 12 dispatch handler →
//! 13 handler restores → 14 signature → 15 launch values → 16 module load on the handle's
//! device. A failed restore creates nothing. No descriptor, archive, selection, benchmark or
//! compile is used. This module never saves, and the restored plan keeps neither the payload
//! nor a copy of the code object when the payload is shared ([`restore_plan_shared`]): its
//! code object is a view of the loaded plan's one copy of its bytes, from which the device
//! loads (and copies) the image.

use super::device::{DeviceResolver, KernelCode};
use super::dispatch::DispatchRegistry;
use super::kernel::{format_signature, is_code_object_target_compatible, signatures_match};
use super::payload::refusal::{incompatible, quote};
use super::payload::{BodySizeLimits, DecodedPayload, decode_payload_in_place};
use super::plan::{ResolvedLaunch, RestoredPlan, load_failure_message};
use hipdnn_backend::SharedBytes;
use hipdnn_backend::status::{PluginError, PluginResult};
use std::ops::Range;
use std::sync::Arc;

/// What a restore needs besides the bytes.
#[derive(Clone, Copy)]
pub struct RestoreEnvironment<'a> {
    /// Finds the handle's device; `None` = the environment lacks its resolver (INTERNAL).
    pub resolver: Option<&'a dyn DeviceResolver>,
    /// Dispatch handlers by name.
    pub registry: &'a DispatchRegistry,
    /// Body size limits (tests shrink them).
    pub limits: BodySizeLimits,
}

/// Restores a plan from `payload`, borrowed for this call only: the restored plan keeps its
/// own copy of the code object (it may load it on further devices later). Used by the
/// borrowed load hook; a loaded plan's bytes come through [`restore_plan_shared`].
///
/// # Errors
/// In order: the decoder's refusals (§6); `INTERNAL_ERROR` when the environment has no
/// resolver, or `cannot resolve the handle's device to restore saved kernel <uuid>`;
/// `NOT_APPLICABLE` (load prefix) for `saved kernel <uuid> was saved for target '<t>', which
/// device <n> ('<arch>') cannot run`; `no dispatch handler is registered under '<d>', which
/// saved kernel <uuid> names`; `the dispatch handler registered under '<d>' does not support
/// restoring saved kernel <uuid>`; `the saved kernel's arguments do not match what this
/// provider launches: ...`; the launch-value contract texts (§11); `INVALID_VALUE` (damaged
/// prefix) `saved kernel <uuid> records a workspace of N bytes, but its launch contract '<d>'
/// needs M bytes` (issue 12: never a launch with less workspace); the module-load texts
/// (`hipModuleLoadData` / `hipModuleGetFunction`).
pub fn restore_plan(payload: &[u8], env: &RestoreEnvironment<'_>) -> PluginResult<RestoredPlan> {
    restore(payload, env, |range| {
        Ok(SharedBytes::copy_from_slice(&payload[range]))
    })
}

/// Restores a plan from `payload`, a view of the loaded plan's one owned copy of its bytes:
/// the restored plan's code object is a view of `payload` (no copy is made); the payload itself
/// is not kept. Same checks, order and errors as [`restore_plan`].
///
/// # Errors
/// As [`restore_plan`].
pub fn restore_plan_shared(
    payload: &SharedBytes,
    env: &RestoreEnvironment<'_>,
) -> PluginResult<RestoredPlan> {
    restore(payload, env, |range| {
        payload.slice(range).ok_or_else(|| {
            PluginError::internal("the decoded code object does not lie inside the payload")
        })
    })
}

/// The restore checks in order; `code_of` gives the code object (its range in `payload`)
/// once every check before the module load passed.
fn restore(
    payload: &[u8],
    env: &RestoreEnvironment<'_>,
    code_of: impl FnOnce(Range<usize>) -> PluginResult<SharedBytes>,
) -> PluginResult<RestoredPlan> {
    let DecodedPayload {
        fields: p,
        code_object,
    } = decode_payload_in_place(payload, env.limits)?;
    let kernel_id = uuid::Uuid::from_bytes(p.kernel_descriptor_id);
    let saved = format!("saved kernel {kernel_id}");
    let resolver = env.resolver.ok_or_else(|| {
        PluginError::internal(format!(
            "the restore environment has no device resolver to restore {saved}"
        ))
    })?;
    let device = resolver
        .current_device()
        .filter(|d| d.ordinal() >= 0)
        .ok_or_else(|| {
            PluginError::internal(format!(
                "cannot resolve the handle's device to restore {saved}"
            ))
        })?;
    let arch = device.arch();
    if !is_code_object_target_compatible(p.source_kind, &p.target, &arch) {
        return Err(incompatible(format!(
            "{saved} was saved for target '{}', which device {} ('{arch}') cannot run",
            quote(&p.target),
            device.ordinal()
        )));
    }
    let d = quote(&p.dispatch_symbol);
    let handler = env.registry.resolve(&p.dispatch_symbol).ok_or_else(|| {
        incompatible(format!(
            "no dispatch handler is registered under '{d}', which {saved} names"
        ))
    })?;
    if !handler.supports_saving() {
        return Err(incompatible(format!(
            "the dispatch handler registered under '{d}' does not support restoring {saved}"
        )));
    }
    let label = format!(
        "saved plan for kernel {kernel_id} (symbol '{}', dispatch '{d}')",
        quote(&p.symbol)
    );
    let expected = handler.launch_signature_for(&p.launch_values);
    if !signatures_match(&p.signature, &expected) {
        return Err(incompatible(format!(
            "the saved kernel's arguments do not match what this provider launches: kpack kernel source for {label}: symbol '{}' is packaged with arguments {}, but this pack launches it with {}",
            quote(&p.symbol),
            quote(&format_signature(&p.signature)),
            format_signature(&expected)
        )));
    }
    let launch = handler.restore_launch(&p.dispatch_symbol, &p.launch_values)?;
    if p.workspace_bytes < launch.workspace_bytes {
        return Err(super::payload::refusal::damaged(format!(
            "{saved} records a workspace of {} bytes, but its launch contract '{d}' needs {} bytes",
            p.workspace_bytes, launch.workspace_bytes
        )));
    }
    let code = Arc::new(
        KernelCode::new(code_of(code_object)?, &p.symbol).with_signature(p.signature.clone()),
    );
    code.load_on(device.as_ref())
        .map_err(|f| incompatible(load_failure_message(&label, &f)))?;
    // The launch resolved once, on the restoring device (its module is loaded already).
    let resolved = ResolvedLaunch::new(
        saved,
        p.source_kind,
        p.target.clone(),
        p.workspace_bytes,
        handler.as_ref(),
        &launch,
        Some(&code),
        Some(&device),
    );
    Ok(RestoredPlan {
        kernel_id,
        symbol: p.symbol,
        target: p.target,
        source_kind: p.source_kind,
        workspace_bytes: p.workspace_bytes,
        handler,
        launch,
        code,
        signature: p.signature,
        resolved,
    })
}
