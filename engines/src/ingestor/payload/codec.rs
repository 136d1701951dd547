//! Encoder and decoder of the whole ingestor payload: `HKIP` header ‖ `HKSP` FlatBuffers body.
//!
//! Owns the body layout rules (code object 16-byte aligned, launch values sorted by name) and
//! decoder checks 1–10 including 9b, in the documented order (reference `ingestor-payload.md`
//! §3, §6; upstream `serialization/IngestorPlanCodec.cpp`, final form of ROCm/rocm-libraries
//! #13315). It never consults a device, an archive or a dispatch handler.

use super::header::{BODY_ALIGNMENT, HEADER_SIZE, decode_header, encode_header};
use super::refusal::{damaged, encode_fault, incompatible, quote};
use crate::ingestor::kernel::{KernelArgument, KernelSourceKind};
use crate::ingestor::launch_values::{LaunchValue, LaunchValues};
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::flatbuffers::{self, FlatBufferBuilder, WIPOffset};
use hipdnn_schema::ingestor_plan as fb;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::ops::Range;

/// `FLATBUFFERS_MIN_BUFFER_SIZE`: the smallest body, in bytes (u32 + i32 + u16 + u16).
pub const FLATBUFFERS_MIN_BUFFER_SIZE: usize = 12;
/// `FLATBUFFERS_MAX_BUFFER_SIZE`: a body must be smaller than this many bytes (i32 max).
pub const FLATBUFFERS_MAX_BUFFER_SIZE: usize = 2_147_483_647;

/// Body size limits in bytes: `min <= size < max`. [`Default`] gives the FlatBuffers limits;
/// tests pass smaller ones so that no test needs a 2 GiB allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodySizeLimits {
    /// Smallest accepted body size.
    pub min: usize,
    /// Every body (and code object) must be smaller than this.
    pub max: usize,
}

impl Default for BodySizeLimits {
    fn default() -> Self {
        BodySizeLimits {
            min: FLATBUFFERS_MIN_BUFFER_SIZE,
            max: FLATBUFFERS_MAX_BUFFER_SIZE,
        }
    }
}

/// Everything an ingestor payload holds (format 1.0, kind `SINGLE_KERNEL_PLAN`).
#[derive(Debug, Clone, PartialEq)]
pub struct IngestorPlanPayload {
    /// The 16 bytes of the kernel descriptor UUID.
    pub kernel_descriptor_id: [u8; 16],
    /// Workspace of the saved plan, in bytes.
    pub workspace_bytes: u64,
    /// Runtime pass-by-value tensor UIDs; always empty on save, refused non-empty at load.
    pub runtime_pass_by_value_uids: Vec<i64>,
    /// The versioned dispatch name, e.g. `hipkernel.pointwise.dispatch.v1`.
    pub dispatch_symbol: String,
    /// Launch values (written sorted by name).
    pub launch_values: LaunchValues,
    /// Kernel source kind (KPACK on save).
    pub source_kind: KernelSourceKind,
    /// Undecorated `extern "C"` kernel symbol.
    pub symbol: String,
    /// Base arch of the saving device, e.g. `gfx90a` or `sm_90`.
    pub target: String,
    /// SHA-256 of `code_object`, 64 lowercase hex characters.
    pub sha256: String,
    /// The kernel's argument list.
    pub signature: Vec<KernelArgument>,
    /// The uncompressed code object (ELF, offload bundle, PTX or cubin).
    pub code_object: Vec<u8>,
    /// Version of the provider that saved the payload (diagnostics only).
    pub provider_version: String,
}

/// Whether `text` is 64 characters of `[0-9a-f]`.
pub fn is_lowercase_sha256_hex(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Header ‖ `body`: the payload for an already built body (48-byte header with its digest).
/// Used by the encoder and by tests that reseal a body they changed.
pub fn seal_body(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_SIZE + body.len());
    out.extend_from_slice(&encode_header(body));
    out.extend_from_slice(body);
    out
}

/// Encodes `payload` with the FlatBuffers limits; see [`encode_payload_with_limits`].
///
/// # Errors
/// As [`encode_payload_with_limits`].
pub fn encode_payload(payload: &IngestorPlanPayload) -> PluginResult<Vec<u8>> {
    encode_payload_with_limits(payload, BodySizeLimits::default())
}

/// Encodes `payload` as header ‖ body. The code object's data is 16-byte aligned in the body
/// and, the body starting at offset 48, in the payload.
///
/// # Errors
/// `INTERNAL_ERROR` with prefix `cannot encode the ingestor plan: ` for `the provider version
/// is empty`, `the kernel symbol is empty`, `the dispatch symbol is empty`, `the kernel digest
/// '<text>' is not 64 lowercase hex characters`, a body of `limits.max` bytes or more, or a
/// code object the builder failed to align. A code object of `limits.max` bytes or more is
/// `NOT_APPLICABLE` with the *load* prefix: `the code object holds <n> bytes, and the payload
/// format holds less than <max>`. (Upstream's `source kind <n> is not a known kernel source
/// kind` cannot happen: [`KernelSourceKind`] has known kinds only.)
pub fn encode_payload_with_limits(
    payload: &IngestorPlanPayload,
    limits: BodySizeLimits,
) -> PluginResult<Vec<u8>> {
    if payload.provider_version.is_empty() {
        return Err(encode_fault("the provider version is empty"));
    }
    if payload.symbol.is_empty() {
        return Err(encode_fault("the kernel symbol is empty"));
    }
    if payload.dispatch_symbol.is_empty() {
        return Err(encode_fault("the dispatch symbol is empty"));
    }
    if !is_lowercase_sha256_hex(&payload.sha256) {
        return Err(encode_fault(format!(
            "the kernel digest '{}' is not 64 lowercase hex characters",
            quote(&payload.sha256)
        )));
    }
    if payload.code_object.len() >= limits.max {
        return Err(incompatible(format!(
            "the code object holds {} bytes, and the payload format holds less than {}",
            payload.code_object.len(),
            limits.max
        )));
    }
    let body = build_body(payload);
    if body.len() >= limits.max {
        return Err(encode_fault(format!(
            "the body holds {} bytes, and FlatBuffers holds less than {}",
            body.len(),
            limits.max
        )));
    }
    // The builder was steered to put the code at a 16-byte boundary; prove it.
    let code_at = fb::root_as_execution_plan(&body)
        .map(|plan| {
            let code = plan.kernel_image().code_object().bytes();
            code.as_ptr() as usize - body.as_ptr() as usize
        })
        .map_err(|e| encode_fault(format!("the encoded body does not verify: {e}")))?;
    if code_at % BODY_ALIGNMENT != 0 || body.len() % BODY_ALIGNMENT != 0 {
        return Err(encode_fault(format!(
            "the code object landed at body offset {code_at}, which is not {BODY_ALIGNMENT}-byte aligned"
        )));
    }
    Ok(seal_body(&body))
}

fn pad_to(fbb: &mut FlatBufferBuilder<'_>, extra: usize) {
    // Bytes between objects are unreferenced; the verifier ignores them.
    let used = fbb.unfinished_data().len();
    let pad = (BODY_ALIGNMENT - (used + extra) % BODY_ALIGNMENT) % BODY_ALIGNMENT;
    for _ in 0..pad {
        fbb.push(0u8);
    }
}

fn build_body(p: &IngestorPlanPayload) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::with_capacity(p.code_object.len() + 1024);
    let provider_version = fbb.create_string(&p.provider_version);
    let symbol = fbb.create_string(&p.symbol);
    let target = fbb.create_string(&p.target);
    let sha256 = fbb.create_string(&p.sha256);
    let args: Vec<_> = p
        .signature
        .iter()
        .map(|a| {
            let kind = fbb.create_string(&a.kind);
            let name = (!a.name.is_empty()).then(|| fbb.create_string(&a.name));
            fb::KernelArgument::create(
                &mut fbb,
                &fb::KernelArgumentArgs {
                    kind: Some(kind),
                    size: a.size,
                    offset: a.offset,
                    name,
                },
            )
        })
        .collect();
    let signature = fbb.create_vector(&args);
    let values: Vec<_> = p
        .launch_values
        .iter()
        .map(|(name, value)| {
            let name = fbb.create_string(name);
            let (value_type, data) = match value {
                LaunchValue::Bool(v) => (
                    fb::LaunchValueData::BoolValue,
                    fb::BoolValue::create(&mut fbb, &fb::BoolValueArgs { value: *v })
                        .as_union_value(),
                ),
                LaunchValue::Int(v) => (
                    fb::LaunchValueData::Int64Value,
                    fb::Int64Value::create(&mut fbb, &fb::Int64ValueArgs { value: *v })
                        .as_union_value(),
                ),
                LaunchValue::Float(v) => {
                    // Force the value out even when it equals the default 0.0: -0.0 compares
                    // equal to 0.0 and would otherwise come back as +0.0.
                    fbb.force_defaults(true);
                    let t = fb::DoubleValue::create(&mut fbb, &fb::DoubleValueArgs { value: *v });
                    fbb.force_defaults(false);
                    (fb::LaunchValueData::DoubleValue, t.as_union_value())
                }
                LaunchValue::String(v) => {
                    let s = fbb.create_string(v);
                    (
                        fb::LaunchValueData::StringValue,
                        fb::StringValue::create(&mut fbb, &fb::StringValueArgs { value: Some(s) })
                            .as_union_value(),
                    )
                }
                LaunchValue::IntList(v) => {
                    let l = fbb.create_vector(v);
                    (
                        fb::LaunchValueData::Int64ListValue,
                        fb::Int64ListValue::create(
                            &mut fbb,
                            &fb::Int64ListValueArgs { values: Some(l) },
                        )
                        .as_union_value(),
                    )
                }
            };
            fb::LaunchValue::create(
                &mut fbb,
                &fb::LaunchValueArgs {
                    name: Some(name),
                    value_type,
                    value: Some(data),
                },
            )
        })
        .collect();
    let values = fbb.create_vector(&values);
    let dispatch_symbol = fbb.create_string(&p.dispatch_symbol);
    let dispatch = fb::DispatchData::create(
        &mut fbb,
        &fb::DispatchDataArgs {
            dispatch_symbol: Some(dispatch_symbol),
            values: Some(values),
        },
    );
    let uids = fbb.create_vector(&p.runtime_pass_by_value_uids);
    // The builder writes back to front: the code data ends `used` bytes before the end of the
    // final buffer. Pad so that its start lies a multiple of 16 bytes before the end; the final
    // length is padded to a multiple of 16 below, so the start is 16-aligned from the front.
    pad_to(&mut fbb, p.code_object.len());
    let code: WIPOffset<flatbuffers::Vector<'_, u8>> = fbb.create_vector(&p.code_object);
    let image = fb::KernelImage::create(
        &mut fbb,
        &fb::KernelImageArgs {
            source_kind: fb::SourceKind(p.source_kind.wire()),
            symbol: Some(symbol),
            target: Some(target),
            sha256: Some(sha256),
            signature: Some(signature),
            code_object: Some(code),
        },
    );
    let id = fb::Uuid(p.kernel_descriptor_id);
    let root = fb::ExecutionPlan::create(
        &mut fbb,
        &fb::ExecutionPlanArgs {
            kernel_descriptor_id: Some(&id),
            workspace_bytes: Some(p.workspace_bytes),
            runtime_pass_by_value_uids: Some(uids),
            dispatch_data: Some(dispatch),
            kernel_image: Some(image),
            provider_version: Some(provider_version),
        },
    );
    // finish() adds the root offset and the identifier (8 bytes) and aligns to at most 8.
    pad_to(&mut fbb, 8);
    fbb.finish(root, Some(fb::EXECUTION_PLAN_IDENTIFIER));
    fbb.finished_data().to_vec()
}

/// Decodes `payload` with the FlatBuffers limits; see [`decode_payload_with_limits`].
///
/// # Errors
/// As [`decode_payload_with_limits`].
pub fn decode_payload(payload: &[u8]) -> PluginResult<IngestorPlanPayload> {
    decode_payload_with_limits(payload, BodySizeLimits::default())
}

/// Decodes and checks `payload` (decoder checks 1–10 of reference §6, in order), copying the
/// code object into the result. A caller that can keep the code object in place (the restore
/// of a loaded plan) uses [`decode_payload_in_place`] instead.
///
/// # Errors
/// Damage → `INVALID_VALUE`, prefix `ingestor plan data is damaged: `; incompatibility →
/// `NOT_APPLICABLE`, prefix `ingestor plan is valid but cannot be saved or loaded here: `.
/// 1–5 header ([`decode_header`]); 6 body size outside `[limits.min, limits.max)` (`body size
/// <n> is outside the FlatBuffers limits: ...`); 7 `body digest mismatch: ...`; 8 verifier or
/// identifier (`the FlatBuffers verifier rejects the payload body, ...`); 9 structure
/// (workspace_bytes present; provider version, kernel symbol and dispatch symbol non-empty, as
/// the writer requires: `the provider version is empty` …; source kind known, digest text 64
/// lowercase hex, each launch value
/// named, unique, typed and carrying data); 9b kernel digest vs code object; 10 a non-empty
/// runtime pass-by-value list (`NOT_APPLICABLE`). Quoted payload text is cut at 80 characters.
pub fn decode_payload_with_limits(
    payload: &[u8],
    limits: BodySizeLimits,
) -> PluginResult<IngestorPlanPayload> {
    let DecodedPayload {
        mut fields,
        code_object,
    } = decode_payload_in_place(payload, limits)?;
    fields.code_object = payload[code_object].to_vec();
    Ok(fields)
}

/// A decoded and checked payload whose code object stays in the input bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedPayload {
    /// Every field of the payload except the code object: `fields.code_object` is empty.
    pub fields: IngestorPlanPayload,
    /// Byte range of the code object within the decoded input (it passed check 9b).
    pub code_object: Range<usize>,
}

/// Decodes and checks `payload` exactly as [`decode_payload_with_limits`] does (same checks,
/// order and errors) without copying the code object: its position in `payload` is returned
/// instead, so that a caller holding `payload` in shared memory can keep a view of it.
///
/// # Errors
/// As [`decode_payload_with_limits`].
pub fn decode_payload_in_place(
    payload: &[u8],
    limits: BodySizeLimits,
) -> PluginResult<DecodedPayload> {
    let header = decode_header(payload)?;
    let body = &payload[header.header_size..];
    if body.len() < limits.min || body.len() >= limits.max {
        return Err(damaged(format!(
            "body size {} is outside the FlatBuffers limits: at least {} and less than {}",
            body.len(),
            limits.min,
            limits.max
        )));
    }
    let got: [u8; 32] = Sha256::digest(body).into();
    if got != header.body_sha256 {
        return Err(damaged(format!(
            "body digest mismatch: the header records {}, and the body hashes to {}",
            hex::encode(header.body_sha256),
            hex::encode(got)
        )));
    }
    // A body not 16-byte aligned in memory is first copied to 16-byte aligned storage.
    let mut storage = Vec::new();
    let body: &[u8] = if body.as_ptr() as usize % BODY_ALIGNMENT == 0 {
        body
    } else {
        storage.resize(body.len() + BODY_ALIGNMENT, 0u8);
        let skip = (BODY_ALIGNMENT - storage.as_ptr() as usize % BODY_ALIGNMENT) % BODY_ALIGNMENT;
        storage[skip..skip + body.len()].copy_from_slice(body);
        &storage[skip..skip + body.len()]
    };
    let plan = match fb::root_as_execution_plan(body) {
        Ok(plan) if fb::execution_plan_buffer_has_identifier(body) => plan,
        _ => {
            return Err(damaged(
                "the FlatBuffers verifier rejects the payload body, or the body does not carry the HKSP file identifier",
            ));
        }
    };
    let workspace_bytes = plan
        .workspace_bytes()
        .ok_or_else(|| damaged("the required field workspace_bytes is missing"))?;
    // What the writer refuses to write is damage here: a decoded payload always re-encodes.
    for (text, what) in [
        (plan.provider_version(), "the provider version is empty"),
        (plan.kernel_image().symbol(), "the kernel symbol is empty"),
        (
            plan.dispatch_data().dispatch_symbol(),
            "the dispatch symbol is empty",
        ),
    ] {
        if text.is_empty() {
            return Err(damaged(what));
        }
    }
    let image = plan.kernel_image();
    let source_kind = KernelSourceKind::from_wire(image.source_kind().0).ok_or_else(|| {
        damaged(format!(
            "kernel source kind {} is unset or unknown",
            image.source_kind().0
        ))
    })?;
    let sha256 = image.sha256();
    if !is_lowercase_sha256_hex(sha256) {
        return Err(damaged(format!(
            "the kernel digest '{}' is not 64 lowercase hex characters",
            quote(sha256)
        )));
    }
    let dispatch = plan.dispatch_data();
    let mut launch_values = BTreeMap::new();
    for (i, v) in dispatch.values().iter().enumerate() {
        let name = v.name();
        if name.is_empty() {
            return Err(damaged(format!("launch value at index {i} has no name")));
        }
        if launch_values.contains_key(name) {
            return Err(damaged(format!(
                "launch value name '{}' occurs more than once",
                quote(name)
            )));
        }
        let t = v.value_type();
        let value = match t {
            fb::LaunchValueData::BoolValue => v
                .value_as_bool_value()
                .map(|x| LaunchValue::Bool(x.value())),
            fb::LaunchValueData::Int64Value => v
                .value_as_int_64_value()
                .map(|x| LaunchValue::Int(x.value())),
            fb::LaunchValueData::DoubleValue => v
                .value_as_double_value()
                .map(|x| LaunchValue::Float(x.value())),
            fb::LaunchValueData::StringValue => v
                .value_as_string_value()
                .map(|x| LaunchValue::String(x.value().to_string())),
            fb::LaunchValueData::Int64ListValue => v
                .value_as_int_64_list_value()
                .map(|x| LaunchValue::IntList(x.values().iter().collect())),
            _ => {
                return Err(damaged(format!(
                    "launch value '{}' has unknown value type {}",
                    quote(name),
                    t.0
                )));
            }
        };
        let value = value.ok_or_else(|| {
            damaged(format!(
                "launch value '{}' has a type but no data",
                quote(name)
            ))
        })?;
        launch_values.insert(name.to_string(), value);
    }
    let code_object = image.code_object().bytes();
    // The body may have been read from aligned storage: the offset within it is the same.
    let code_start = header.header_size + (code_object.as_ptr() as usize - body.as_ptr() as usize);
    let code_range = code_start..code_start + code_object.len();
    let code_hash = sha256_hex(code_object);
    if code_hash != sha256 {
        return Err(damaged(format!(
            "the kernel digest {sha256} does not match the code object, which hashes to {code_hash}"
        )));
    }
    let uids: Vec<i64> = plan.runtime_pass_by_value_uids().iter().collect();
    if !uids.is_empty() {
        let list = uids
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        return Err(incompatible(format!(
            "the plan takes runtime pass-by-value tensors (UIDs {}), which this provider does not support",
            quote(&list)
        )));
    }
    let fields = IngestorPlanPayload {
        kernel_descriptor_id: plan.kernel_descriptor_id().0,
        workspace_bytes,
        runtime_pass_by_value_uids: uids,
        dispatch_symbol: dispatch.dispatch_symbol().to_string(),
        launch_values,
        source_kind,
        symbol: image.symbol().to_string(),
        target: image.target().to_string(),
        sha256: sha256.to_string(),
        signature: image
            .signature()
            .iter()
            .map(|a| KernelArgument {
                kind: a.kind().to_string(),
                size: a.size(),
                offset: a.offset(),
                name: a.name().unwrap_or_default().to_string(),
            })
            .collect(),
        code_object: Vec::new(),
        provider_version: plan.provider_version().to_string(),
    };
    Ok(DecodedPayload {
        fields,
        code_object: code_range,
    })
}
