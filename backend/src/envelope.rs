//! The `SerializedExecutionPlan` envelope: hipDNN's wrapper around an engine's plugin payload.
//!
//! This module owns reading (versions 1 and 2, with upstream's ordered checks) and writing
//! (version 2) of the envelope. It never interprets the plugin payload (the engine that wrote
//! it does) and never routes to an engine (the plan descriptor does).
//!
//! Wire format (upstream `flatbuffers_sdk/schemas/execution_plan.fbs`, reference
//! `backend-c-api.md` §5): a FlatBuffer, root table `SerializedExecutionPlan`, **no** file
//! identifier, no size prefix.
//!
//! | id | field | type | since |
//! |---|---|---|---|
//! | 0 | version | uint | v1 |
//! | 1 | engine_id | long | v1 |
//! | 2 | workspace_size | long (bytes) | v1 |
//! | 3 | tensor_uids | \[long\] | v1 |
//! | 4 | plugin_payload | \[ubyte\] | v1 |
//! | 5 | is_override_shape_enabled | bool | v1 |
//! | 6 | tensor_alignments | \[long\] (bytes, parallel to tensor_uids) | v2 |

use crate::status::{BackendError, BackendResult, Status};
use hipdnn_schema::execution_plan::{SerializedExecutionPlan, SerializedExecutionPlanArgs};
use hipdnn_schema::pins::EXECUTION_PLAN_WRITE_VERSION;

/// First envelope version carrying `tensor_alignments` (upstream
/// `PLAN_VERSION_WITH_TENSOR_ALIGNMENTS`).
pub const PLAN_VERSION_WITH_TENSOR_ALIGNMENTS: u32 = 2;

/// Newest envelope version this crate reads (it reads 1 through this one).
pub const MAX_READ_PLAN_VERSION: u32 = 2;

/// Message of the `BAD_PARAM` for bytes the envelope verifier refuses (upstream text).
pub const INVALID_PLAN_MESSAGE: &str = "Serialized execution plan FlatBuffer is invalid.";

/// A checked, borrowed view of one envelope. The plugin payload borrows the input bytes (no
/// copy is made on read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanEnvelope<'a> {
    /// Envelope version (1 or 2).
    pub version: u32,
    /// Id of the engine that wrote the payload (64-bit FNV-1a of its name).
    pub engine_id: i64,
    /// Workspace in bytes every execute of the plan needs (never negative after parse).
    pub workspace_size: i64,
    /// Tensor UIDs of the plan in graph-buffer order (never empty after parse).
    pub tensor_uids: Vec<i64>,
    /// Byte alignment per UID (0 = not enforced); `None` for a version 1 envelope.
    pub tensor_alignments: Option<Vec<i64>>,
    /// The graph's override-shape flag at save time.
    pub is_override_shape_enabled: bool,
    /// The engine's payload, borrowed from the input (never empty after parse).
    pub plugin_payload: &'a [u8],
}

fn bad(message: impl Into<String>) -> BackendError {
    BackendError::new(Status::BadParam, message)
}

impl<'a> PlanEnvelope<'a> {
    /// Verifies and checks `bytes` as an envelope, in upstream's order (reference §4.5
    /// steps 4–10); the first failing check decides the error.
    ///
    /// # Errors
    /// 1. empty input → `BAD_PARAM` "Serialized execution plan is empty."
    /// 2. FlatBuffers verifier fails → `BAD_PARAM` [`INVALID_PLAN_MESSAGE`] (followed by
    ///    "truncated: L of at least N bytes" when the input ends early, then the verifier's
    ///    text); more than padding after the envelope's last byte → `BAD_PARAM` "Serialized
    ///    execution plan is followed by other bytes: N trailing bytes after …"
    /// 3. `version == 0 || version > 2` → `NOT_SUPPORTED` "Unsupported serialized execution
    ///    plan version: N"
    /// 4. `plugin_payload` absent or empty → `BAD_PARAM` "Serialized execution plan has no
    ///    plugin payload."
    /// 5. `tensor_uids` absent or empty → `BAD_PARAM` "Serialized execution plan has no
    ///    tensor UIDs."
    /// 6. version ≥ 2: `tensor_alignments` absent → `BAD_PARAM` "Serialized execution plan
    ///    has no tensor alignments."; count ≠ UID count → `BAD_PARAM` "Serialized execution
    ///    plan tensor alignment count …"
    /// 7. `workspace_size < 0` → `BAD_PARAM` "Serialized execution plan has a negative
    ///    workspace size: N"
    /// 8. a tensor UID listed twice → `BAD_PARAM` "Serialized execution plan lists tensor UID
    ///    N twice."
    pub fn parse(bytes: &'a [u8]) -> BackendResult<Self> {
        if bytes.is_empty() {
            return Err(bad("Serialized execution plan is empty."));
        }
        let plan = flatbuffers::root::<SerializedExecutionPlan>(bytes).map_err(|e| {
            match crate::extent::truncation(bytes.len(), &e) {
                Some(t) => bad(format!("{INVALID_PLAN_MESSAGE} ({t}; {e})")),
                None => bad(format!("{INVALID_PLAN_MESSAGE} ({e})")),
            }
        })?;
        crate::extent::check_no_trailing(bytes, |p| {
            flatbuffers::root::<SerializedExecutionPlan>(p).is_ok()
        })
        .map_err(|n| {
            bad(format!(
                "Serialized execution plan is followed by other bytes: {}.",
                crate::extent::trailing_message("serialized execution plan", n, bytes.len() - n)
            ))
        })?;
        let version = plan.version();
        if version == 0 || version > MAX_READ_PLAN_VERSION {
            return Err(BackendError::new(
                Status::NotSupported,
                format!(
                    "Unsupported serialized execution plan version: {version} \
                     (this build reads 1 to {MAX_READ_PLAN_VERSION})"
                ),
            ));
        }
        let plugin_payload = match plan.plugin_payload() {
            Some(p) if !p.is_empty() => p.bytes(),
            _ => return Err(bad("Serialized execution plan has no plugin payload.")),
        };
        let tensor_uids: Vec<i64> = match plan.tensor_uids() {
            Some(u) if !u.is_empty() => u.iter().collect(),
            _ => return Err(bad("Serialized execution plan has no tensor UIDs.")),
        };
        let tensor_alignments = if version >= PLAN_VERSION_WITH_TENSOR_ALIGNMENTS {
            let Some(a) = plan.tensor_alignments() else {
                return Err(bad("Serialized execution plan has no tensor alignments."));
            };
            if a.len() != tensor_uids.len() {
                return Err(bad(format!(
                    "Serialized execution plan tensor alignment count ({}) does not match its \
                     tensor UID count ({}).",
                    a.len(),
                    tensor_uids.len()
                )));
            }
            Some(a.iter().collect())
        } else {
            None
        };
        let workspace_size = plan.workspace_size();
        if workspace_size < 0 {
            return Err(bad(format!(
                "Serialized execution plan has a negative workspace size: {workspace_size}"
            )));
        }
        let mut seen = std::collections::HashSet::with_capacity(tensor_uids.len());
        if let Some(u) = tensor_uids.iter().find(|&&u| !seen.insert(u)) {
            return Err(bad(format!(
                "Serialized execution plan lists tensor UID {u} twice."
            )));
        }
        Ok(PlanEnvelope {
            version,
            engine_id: plan.engine_id(),
            workspace_size,
            tensor_uids,
            tensor_alignments,
            is_override_shape_enabled: plan.is_override_shape_enabled(),
            plugin_payload,
        })
    }
}

/// Writes a version 2 envelope ([`EXECUTION_PLAN_WRITE_VERSION`]) as upstream's
/// `serializeBackendPlan` does (reference §4.4 step 5b): vectors created in the order
/// plugin_payload, tensor_uids, tensor_alignments; scalars equal to their default omitted; no
/// identifier, no size prefix.
///
/// `tensor_alignments` must be parallel to `tensor_uids` (the caller guarantees it; a reader
/// refuses a mismatch). `workspace_size` is in bytes.
pub fn write_envelope(
    engine_id: i64,
    workspace_size: i64,
    tensor_uids: &[i64],
    tensor_alignments: &[i64],
    is_override_shape_enabled: bool,
    plugin_payload: &[u8],
) -> Vec<u8> {
    let mut fbb = flatbuffers::FlatBufferBuilder::with_capacity(plugin_payload.len() + 256);
    let payload = fbb.create_vector(plugin_payload);
    let uids = fbb.create_vector(tensor_uids);
    let aligns = fbb.create_vector(tensor_alignments);
    let root = SerializedExecutionPlan::create(
        &mut fbb,
        &SerializedExecutionPlanArgs {
            version: EXECUTION_PLAN_WRITE_VERSION,
            engine_id,
            workspace_size,
            tensor_uids: Some(uids),
            plugin_payload: Some(payload),
            is_override_shape_enabled,
            tensor_alignments: Some(aligns),
        },
    );
    fbb.finish_minimal(root);
    fbb.finished_data().to_vec()
}
