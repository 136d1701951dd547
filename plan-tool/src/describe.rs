//! What a saved file is and what it holds, as an ordered JSON tree (the one model behind
//! `inspect`, its text rendering and `diff`).
//!
//! Reading here is wire-level only: each FlatBuffer passes its generated verifier and is then
//! shown field by field, so a file the SDK refuses (a UID that names no tensor, a digest that
//! does not match) is still shown. Whether it loads is decided by [`crate::verify`], which
//! calls the real loaders; this module never decides validity and never executes anything.
//!
//! Top-level keys, in the order `diff` compares them: `form`, `container`, `envelope`,
//! `graph`, `payload` (the engine's payload, with the CPU plan's graph inside it).
//!
//! Recognised besides the saved binaries: graph JSON in upstream's format
//! ([`hipdnn::Graph::from_json`]) and in the legacy field-for-field format
//! ([`hipdnn::Graph::from_flatbuffer_json`]), read through the SDK and shown as a graph; kpack
//! archives and bare GPU code objects, which are no saved graph or plan: [`Form::foreign`]
//! says what they are and where they are used.

use hipdnn_backend::engine_id_from_name;
use hipdnn_backend::hdgp::{
    CONTENT_EXECUTION_PLAN, CONTENT_GRAPH, GraphAndPlan, is_graph_and_plan_container,
};
use hipdnn_engines::gpu::GPU_ENGINE_NAME;
use hipdnn_engines::ingestor::payload::header::{
    BODY_ALIGNMENT, DIGEST_OFFSET, DIGEST_SIZE, FIXED_FIELDS_SIZE, MARKER as HKIP_MARKER,
};
use hipdnn_engines::reference::ENGINE_NAME as CPU_ENGINE_NAME;
use hipdnn_engines::reference::payload as cpu_payload;
use hipdnn_kpack::{ELF_MAGIC, KPACK_MAGIC, OFFLOAD_BUNDLE_MAGIC};
use hipdnn_schema::execution_plan::SerializedExecutionPlan;
use hipdnn_schema::graph as wire;
use hipdnn_schema::ingestor_plan as fb;
use hipdnn_schema::tensor_value::read_tensor_value;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::debug_json::debug_to_json;

/// The form of a saved file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// An `HDGP` graph-and-plan container (`to_binary` of a graph with a saveable plan).
    Container,
    /// A bare `Graph` FlatBuffer (`to_binary` without a plan).
    Graph,
    /// A plan-only `SerializedExecutionPlan` envelope (`to_compiled_plan_binary`).
    Plan,
    /// A bare kernel-ingestor payload (`HKIP` header ‖ `HKSP` body), as the engine writes it.
    IngestorPayload,
    /// A bare CPU reference plan payload (`HRCP` header ‖ Graph), as the engine writes it.
    CpuPayload,
    /// Graph JSON in upstream's format (`Graph::to_json`, the C ABI's JSON graph).
    GraphJson,
    /// Graph JSON in the legacy field-for-field format (`Graph::to_flatbuffer_json`; has the
    /// `json_version` / `hipdnn_frontend_version` keys).
    FlatbufferJson,
    /// A kpack kernel archive (`KPAK` magic): kernels, not a graph or plan.
    Kpack,
    /// A bare GPU code object (ELF or clang offload bundle): a kernel, not a graph or plan.
    CodeObject,
    /// None of the above verifies.
    Unknown,
}

impl Form {
    /// The name shown in output and accepted by `--as`.
    pub fn name(self) -> &'static str {
        match self {
            Form::Container => "hdgp-container",
            Form::Graph => "graph",
            Form::Plan => "plan",
            Form::IngestorPayload => "ingestor-payload",
            Form::CpuPayload => "cpu-plan-payload",
            Form::GraphJson => "graph-json",
            Form::FlatbufferJson => "flatbuffer-json",
            Form::Kpack => "kpack-archive",
            Form::CodeObject => "code-object",
            Form::Unknown => "unknown",
        }
    }

    /// For a file that is no saved graph or plan (a kpack archive, a code object): what it is
    /// and what reads it, as one sentence that follows `<file> is `. `None` for the forms the
    /// tool reads.
    pub fn foreign(self) -> Option<&'static str> {
        match self {
            Form::Kpack => Some(
                "a kpack kernel archive (magic \"KPAK\"), not a saved graph or plan: the GPU \
                 engine loads it from its kernel directory (HIPDNN_KERNEL_DIR, docs/install.md) \
                 and `cargo run -p xtask -- pack-kernels` writes it; hipdnn-plan reads what \
                 Graph::to_binary, Graph::to_compiled_plan_binary and Graph::to_json write",
            ),
            Form::CodeObject => Some(
                "a GPU code object (ELF or clang offload bundle), not a saved graph or plan: \
                 kpack archives carry code objects (`cargo run -p xtask -- pack-kernels`); \
                 hipdnn-plan reads what Graph::to_binary, Graph::to_compiled_plan_binary and \
                 Graph::to_json write",
            ),
            _ => None,
        }
    }
}

/// What `unknown` means, as one sentence that follows `<file> is `.
pub const UNKNOWN_FORM: &str = "none of the formats hipdnn-plan reads (HDGP container, Graph \
     FlatBuffer, plan envelope, HKIP or HRCP payload, graph JSON, legacy graph JSON; it also \
     names kpack archives and code objects)";

/// The text of `bytes` when, after leading whitespace (and a UTF-8 byte-order mark), it starts
/// with `{`: a JSON document.
fn json_text(bytes: &[u8]) -> Option<&str> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// True when the JSON text carries a key only the legacy format has (`json_version`,
/// `hipdnn_frontend_version`, or a node's `attributes_type`, which flatc's output has too).
fn is_legacy_json(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|v| {
        v.get("json_version").is_some()
            || v.get("hipdnn_frontend_version").is_some()
            || v.get("nodes")
                .and_then(Value::as_array)
                .is_some_and(|n| n.iter().any(|n| n.get("attributes_type").is_some()))
    })
}

/// The graph of a JSON file of `form`, through the SDK's reader, as a bare Graph FlatBuffer.
///
/// # Errors
/// The SDK reader's message (`JSON graph: …`, the legacy reader's `InvalidValue`), or the
/// writer's when the graph cannot be written as a FlatBuffer.
pub fn json_graph(bytes: &[u8], form: Form) -> Result<hipdnn::Graph, String> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| format!("the file is not UTF-8 text: {e}"))?;
    let g = if form == Form::FlatbufferJson {
        hipdnn::Graph::from_flatbuffer_json(text)
    } else {
        hipdnn::Graph::from_json(text)
    };
    g.map_err(|e| e.to_string())
}

/// The bare Graph FlatBuffer a file of `form` carries (the container's graph blob, the file
/// itself, the CPU plan's graph, a JSON graph written as a FlatBuffer); `None` when it carries
/// none or it cannot be read.
pub fn graph_blob(bytes: &[u8], form: Form) -> Option<Vec<u8>> {
    match form {
        Form::Container => GraphAndPlan::parse(bytes)
            .ok()?
            .graph_blob()
            .map(<[u8]>::to_vec),
        Form::Graph => Some(bytes.to_vec()),
        Form::Plan => {
            let env = flatbuffers::root::<SerializedExecutionPlan>(bytes).ok()?;
            cpu_graph(env.plugin_payload()?.bytes())
        }
        Form::CpuPayload => cpu_graph(bytes),
        Form::GraphJson | Form::FlatbufferJson => {
            json_graph(bytes, form).ok()?.to_graph_bytes().ok()
        }
        Form::IngestorPayload | Form::Kpack | Form::CodeObject | Form::Unknown => None,
    }
}

/// The graph body of a CPU reference plan payload.
fn cpu_graph(p: &[u8]) -> Option<Vec<u8>> {
    let h = cpu_payload::describe(p)?;
    p.get(usize::from(h.header_size)..).map(<[u8]>::to_vec)
}

/// True when `bytes` verify as a `Graph` with at least one node.
fn looks_like_graph(bytes: &[u8]) -> bool {
    flatbuffers::root::<wire::Graph>(bytes).is_ok_and(|g| g.nodes().is_some_and(|n| !n.is_empty()))
}

/// True when `bytes` verify as an envelope carrying a non-empty payload.
fn looks_like_plan(bytes: &[u8]) -> Option<bool> {
    let env = flatbuffers::root::<SerializedExecutionPlan>(bytes).ok()?;
    let payload = env.plugin_payload().filter(|p| !p.is_empty())?;
    let b = payload.bytes();
    Some(b.starts_with(&cpu_payload::MAGIC) || b.starts_with(&HKIP_MARKER))
}

/// The form of `bytes`: the `HDGP` marker first (as the loaders do), then the engine payload
/// magics, the kpack and code-object magics, JSON text (a `{` first), then whichever of the Graph and envelope verifiers accepts the bytes (neither format
/// has an identifier; when both accept, a payload with a known magic decides for the plan).
pub fn sniff(bytes: &[u8]) -> Form {
    if is_graph_and_plan_container(bytes) {
        return Form::Container;
    }
    if bytes.starts_with(&HKIP_MARKER) {
        return Form::IngestorPayload;
    }
    if bytes.starts_with(&cpu_payload::MAGIC) {
        return Form::CpuPayload;
    }
    if bytes.starts_with(&KPACK_MAGIC) {
        return Form::Kpack;
    }
    if bytes.starts_with(ELF_MAGIC) || bytes.starts_with(OFFLOAD_BUNDLE_MAGIC) {
        return Form::CodeObject;
    }
    if let Some(text) = json_text(bytes) {
        return if is_legacy_json(text) {
            Form::FlatbufferJson
        } else {
            Form::GraphJson
        };
    }
    match (looks_like_graph(bytes), looks_like_plan(bytes)) {
        (_, Some(true)) => Form::Plan,
        (true, _) => Form::Graph,
        (false, Some(false)) => Form::Plan,
        (false, None) => Form::Unknown,
    }
}

/// The engine name for an engine id, when it is one this build knows.
pub fn engine_name(id: i64) -> Option<&'static str> {
    [CPU_ENGINE_NAME, GPU_ENGINE_NAME]
        .into_iter()
        .find(|n| engine_id_from_name(n) == id)
}

/// Describes `bytes` read as `form` (see the module docs for the keys).
pub fn describe(bytes: &[u8], form: Form) -> Value {
    let mut doc = Map::new();
    doc.insert("form".into(), json!(form.name()));
    doc.insert("size_bytes".into(), json!(bytes.len()));
    match form {
        Form::Container => match GraphAndPlan::parse(bytes) {
            Ok(c) => {
                let flags = c.content_flags();
                let mut content = Vec::new();
                if flags & CONTENT_GRAPH != 0 {
                    content.push("graph");
                }
                if flags & CONTENT_EXECUTION_PLAN != 0 {
                    content.push("execution_plan");
                }
                doc.insert(
                    "container".into(),
                    json!({
                        "content_flags": flags,
                        "content": content,
                        "graph_blob_bytes": c.graph_blob().map_or(0, <[u8]>::len),
                        "plan_blob_bytes": c.plan_blob().map_or(0, <[u8]>::len),
                    }),
                );
                if let Some(plan) = c.plan_blob() {
                    describe_envelope(plan, &mut doc);
                }
                if let Some(graph) = c.graph_blob() {
                    doc.insert("graph".into(), describe_graph(graph));
                }
                // Keep the documented key order: payload after graph.
                if let Some(p) = doc.remove("payload") {
                    doc.insert("payload".into(), p);
                }
            }
            Err(e) => {
                doc.insert("container".into(), json!({ "unreadable": e.message }));
            }
        },
        Form::Graph => {
            doc.insert("graph".into(), describe_graph(bytes));
        }
        Form::Plan => describe_envelope(bytes, &mut doc),
        Form::IngestorPayload => {
            doc.insert("payload".into(), describe_ingestor(bytes));
        }
        Form::CpuPayload => {
            doc.insert("payload".into(), describe_cpu(bytes));
        }
        Form::GraphJson | Form::FlatbufferJson => {
            let graph = json_graph(bytes, form).and_then(|g| {
                g.to_graph_bytes()
                    .map_err(|e| format!("the graph cannot be written as a FlatBuffer: {e}"))
            });
            doc.insert(
                "graph".into(),
                match graph {
                    Ok(b) => describe_graph(&b),
                    Err(m) => json!({ "unreadable": m }),
                },
            );
        }
        Form::Kpack | Form::CodeObject => {
            doc.insert("not_a_plan".into(), json!(form.foreign()));
        }
        Form::Unknown => {
            let why = |r: Result<(), flatbuffers::InvalidFlatbuffer>| match r {
                Ok(()) => json!("verifies, but carries no nodes / no plugin payload"),
                Err(e) => json!(e.to_string()),
            };
            doc.insert(
                "unreadable".into(),
                json!({
                    "graph_verifier": why(flatbuffers::root::<wire::Graph>(bytes).map(drop)),
                    "execution_plan_verifier": why(
                        flatbuffers::root::<SerializedExecutionPlan>(bytes).map(drop)
                    ),
                }),
            );
        }
    }
    Value::Object(doc)
}

/// The envelope's fields into `doc["envelope"]` and its payload into `doc["payload"]`.
fn describe_envelope(bytes: &[u8], doc: &mut Map<String, Value>) {
    let env = match flatbuffers::root::<SerializedExecutionPlan>(bytes) {
        Ok(e) => e,
        Err(e) => {
            doc.insert(
                "envelope".into(),
                json!({ "unreadable": format!("Serialized execution plan FlatBuffer is invalid. ({e})") }),
            );
            return;
        }
    };
    let payload = env.plugin_payload().map(|p| p.bytes()).unwrap_or_default();
    doc.insert(
        "envelope".into(),
        json!({
            "version": env.version(),
            "engine_id": env.engine_id(),
            "engine_name": engine_name(env.engine_id()),
            "workspace_size": env.workspace_size(),
            "tensor_uids": env.tensor_uids().map(|v| v.iter().collect::<Vec<_>>()),
            "tensor_alignments": env.tensor_alignments().map(|v| v.iter().collect::<Vec<_>>()),
            "is_override_shape_enabled": env.is_override_shape_enabled(),
            "plugin_payload_bytes": payload.len(),
        }),
    );
    let described = if payload.starts_with(&cpu_payload::MAGIC) {
        describe_cpu(payload)
    } else if payload.starts_with(&HKIP_MARKER) {
        describe_ingestor(payload)
    } else {
        json!({
            "kind": "unknown",
            "sha256": hex::encode(Sha256::digest(payload)),
        })
    };
    doc.insert("payload".into(), described);
}

fn enum_name(name: Option<&'static str>, raw: impl std::fmt::Display) -> Value {
    name.map_or_else(|| json!(format!("<unknown {raw}>")), |n| json!(n))
}

/// A `Graph` FlatBuffer: graph fields, tensors and nodes (attributes from the generated tables).
pub fn describe_graph(bytes: &[u8]) -> Value {
    let g = match flatbuffers::root::<wire::Graph>(bytes) {
        Ok(g) => g,
        Err(e) => {
            return json!({
                "unreadable": format!("graph bytes failed FlatBuffers verification: {e}")
            });
        }
    };
    let tensors: Vec<Value> = g
        .tensors()
        .map(|v| v.iter().map(describe_tensor).collect())
        .unwrap_or_default();
    let nodes: Vec<Value> = g
        .nodes()
        .map(|v| v.iter().map(describe_node).collect())
        .unwrap_or_default();
    json!({
        "name": g.name(),
        "io_data_type": enum_name(g.io_data_type().variant_name(), g.io_data_type().0),
        "compute_data_type": enum_name(g.compute_data_type().variant_name(), g.compute_data_type().0),
        "intermediate_data_type": enum_name(
            g.intermediate_data_type().variant_name(),
            g.intermediate_data_type().0
        ),
        "preferred_engine_id": g.preferred_engine_id(),
        "is_override_shape_enabled": g.is_override_shape_enabled(),
        "min_required_engine_api_version": g
            .min_required_engine_api_version()
            .map(|v| debug_to_json(&format!("{v:?}"))),
        "id": g.id().map(|v| debug_to_json(&format!("{v:?}"))),
        "tensors": tensors,
        "nodes": nodes,
    })
}

fn describe_tensor(t: wire::TensorAttributes<'_>) -> Value {
    let value = match read_tensor_value(&t) {
        Ok(v) => v.map(|v| debug_to_json(&format!("{v:?}"))),
        Err(e) => Some(json!({ "unreadable": e.to_string() })),
    };
    json!({
        "uid": t.uid(),
        "name": t.name(),
        "data_type": enum_name(t.data_type().variant_name(), t.data_type().0),
        "dims": t.dims().map(|v| v.iter().collect::<Vec<_>>()),
        "strides": t.strides().map(|v| v.iter().collect::<Vec<_>>()),
        "virtual": t.virtual_(),
        "is_runtime_pass_by_value": t.is_runtime_pass_by_value(),
        "ragged_offset_tensor_uid": t.ragged_offset_tensor_uid(),
        "alignment": t.alignment(),
        "value": value,
    })
}

fn describe_node(n: wire::Node<'_>) -> Value {
    let whole = debug_to_json(&format!("{n:?}"));
    let attributes = whole.get("attributes").cloned().unwrap_or(Value::Null);
    json!({
        "name": n.name(),
        "op": enum_name(n.attributes_type().variant_name(), n.attributes_type().0),
        "compute_data_type": enum_name(n.compute_data_type().variant_name(), n.compute_data_type().0),
        "attributes": attributes,
    })
}

/// The CPU reference plan payload: its header as recorded and the graph it carries.
fn describe_cpu(p: &[u8]) -> Value {
    let Some(h) = cpu_payload::describe(p) else {
        return json!({
            "kind": "cpu-reference-plan",
            "unreadable": format!("header truncated: {} of {} bytes", p.len(), cpu_payload::HEADER_SIZE),
        });
    };
    let body = p.get(usize::from(h.header_size)..).unwrap_or_default();
    json!({
        "kind": "cpu-reference-plan",
        "engine": CPU_ENGINE_NAME,
        "magic": String::from_utf8_lossy(&h.magic),
        "format_version": format!("{}.{}", h.major, h.minor),
        "header_size": h.header_size,
        "reserved": h.reserved,
        "body_bytes_recorded": h.body_len,
        "body_bytes_present": body.len(),
        "graph": describe_graph(body),
        "digests": {
            "body_sha256_recorded": hex::encode(h.body_sha256),
            "body_sha256_actual": hex::encode(Sha256::digest(body)),
        },
    })
}

/// A 16-byte aligned copy of `body` (the HKSP body is read with 16-byte alignment).
fn aligned(body: &[u8]) -> (Vec<u8>, usize) {
    let mut storage = vec![0u8; body.len() + BODY_ALIGNMENT];
    let skip = (BODY_ALIGNMENT - storage.as_ptr() as usize % BODY_ALIGNMENT) % BODY_ALIGNMENT;
    storage[skip..skip + body.len()].copy_from_slice(body);
    (storage, skip)
}

/// The kernel-ingestor payload: header as recorded; body fields when the HKSP verifier
/// accepts the body.
fn describe_ingestor(p: &[u8]) -> Value {
    let mut d = Map::new();
    d.insert("kind".into(), json!("ingestor-plan"));
    d.insert("engine".into(), json!(GPU_ENGINE_NAME));
    if p.len() < FIXED_FIELDS_SIZE + DIGEST_SIZE {
        d.insert(
            "unreadable".into(),
            json!(format!(
                "header truncated: the payload holds {} bytes",
                p.len()
            )),
        );
        return Value::Object(d);
    }
    let u16_at = |at: usize| u16::from_le_bytes([p[at], p[at + 1]]);
    let header_size = usize::from(u16_at(10));
    let body = p.get(header_size..).unwrap_or_default();
    d.insert("marker".into(), json!(String::from_utf8_lossy(&p[..4])));
    d.insert(
        "format_version".into(),
        json!(format!("{}.{}", u16_at(4), u16_at(6))),
    );
    d.insert("payload_kind".into(), json!(u16_at(8)));
    d.insert("header_size".into(), json!(header_size));
    // Digests go last so that `diff` names a semantic field first.
    let digests = json!({
        "body_sha256_recorded": hex::encode(&p[DIGEST_OFFSET..DIGEST_OFFSET + DIGEST_SIZE]),
        "body_sha256_actual": hex::encode(Sha256::digest(body)),
    });
    let (storage, skip) = aligned(body);
    let body = &storage[skip..skip + body.len()];
    let plan = match fb::root_as_execution_plan(body) {
        Ok(plan) if fb::execution_plan_buffer_has_identifier(body) => plan,
        Ok(_) => {
            d.insert("body".into(), json!({ "unreadable": "no HKSP identifier" }));
            d.insert("digests".into(), digests);
            return Value::Object(d);
        }
        Err(e) => {
            d.insert(
                "body".into(),
                json!({ "unreadable": format!("HKSP verifier: {e}") }),
            );
            d.insert("digests".into(), digests);
            return Value::Object(d);
        }
    };
    let image = plan.kernel_image();
    let code = image.code_object().bytes();
    let mut values = Map::new();
    for v in plan.dispatch_data().values().iter() {
        let value = match v.value_type() {
            fb::LaunchValueData::BoolValue => v.value_as_bool_value().map(|x| json!(x.value())),
            fb::LaunchValueData::Int64Value => v.value_as_int_64_value().map(|x| json!(x.value())),
            fb::LaunchValueData::DoubleValue => v.value_as_double_value().map(|x| json!(x.value())),
            fb::LaunchValueData::StringValue => v.value_as_string_value().map(|x| json!(x.value())),
            fb::LaunchValueData::Int64ListValue => v
                .value_as_int_64_list_value()
                .map(|x| json!(x.values().iter().collect::<Vec<_>>())),
            t => Some(json!(format!("<unknown value type {}>", t.0))),
        };
        values.insert(v.name().to_string(), value.unwrap_or(Value::Null));
    }
    let signature: Vec<Value> = image
        .signature()
        .iter()
        .map(|a| json!({ "kind": a.kind(), "size": a.size(), "offset": a.offset(), "name": a.name() }))
        .collect();
    d.insert(
        "kernel_descriptor_id".into(),
        json!(uuid::Uuid::from_bytes(plan.kernel_descriptor_id().0).to_string()),
    );
    d.insert("workspace_bytes".into(), json!(plan.workspace_bytes()));
    d.insert(
        "runtime_pass_by_value_uids".into(),
        json!(plan.runtime_pass_by_value_uids().iter().collect::<Vec<_>>()),
    );
    d.insert("provider_version".into(), json!(plan.provider_version()));
    d.insert(
        "launch_contract".into(),
        json!(plan.dispatch_data().dispatch_symbol()),
    );
    d.insert("launch_values".into(), Value::Object(values));
    d.insert(
        "kernel".into(),
        json!({
            "source_kind": enum_name(image.source_kind().variant_name(), image.source_kind().0),
            "kpack_target": image.target(),
            "name": image.symbol(),
            "signature": signature,
            "code_object_bytes": code.len(),
            "code_object_sha256": hex::encode(Sha256::digest(code)),
            "code_object_sha256_recorded": image.sha256(),
        }),
    );
    d.insert("digests".into(), digests);
    Value::Object(d)
}

/// The kpack target recorded in an ingestor payload described by [`describe`], if any.
pub fn recorded_target(doc: &Value) -> Option<String> {
    doc.pointer("/payload/kernel/kpack_target")
        .and_then(Value::as_str)
        .map(str::to_string)
}
