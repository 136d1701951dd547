//! The default text of `inspect`: a summary of a description (what the file is, the graph as
//! one tensor table and one line per node, the plan and its engine payload), a few dozen lines
//! where the full dump (`--full`, [`crate::render`]) prints every field.
//!
//! It reads the description of [`crate::describe`] and, for the node inputs and outputs and the
//! tensor kinds, the graph as the SDK reads it ([`hipdnn::Graph::from_graph_bytes`] and
//! [`hipdnn::Operation::inputs_outputs`], the op definitions the SDK and engines share). When
//! the SDK cannot read the graph, the summary falls back to the wire fields and says why. It
//! never decides validity (that is [`crate::verify`]'s).

use crate::describe::{Form, UNKNOWN_FORM};
use crate::diff;
use crate::render::inline;
use hipdnn::Graph;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write;

/// One line per row, columns padded to their widest cell, two spaces apart, indented by two.
fn table(out: &mut String, rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, cell)| format!("{cell:<w$}", w = widths[c]))
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn ints(v: Option<&Value>) -> String {
    match v {
        Some(Value::Array(a)) => format!(
            "[{}]",
            a.iter()
                .map(|x| inline(Some(x)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => inline(other),
    }
}

/// The first line: the form and what the file holds.
fn form_line(out: &mut String, doc: &Value, form: Form) {
    let size = inline(doc.get("size_bytes"));
    let what = match form {
        Form::Container => match doc.get("container") {
            Some(c) if c.get("unreadable").is_some() => {
                format!("unreadable: {}", inline(c.get("unreadable")))
            }
            Some(c) => {
                let mut parts = vec![format!("graph {} bytes", inline(c.get("graph_blob_bytes")))];
                if c.get("plan_blob_bytes").and_then(Value::as_u64) != Some(0) {
                    parts.push(format!(
                        "execution plan {} bytes",
                        inline(c.get("plan_blob_bytes"))
                    ));
                } else {
                    parts.push("no execution plan".into());
                }
                format!("HDGP container: {}", parts.join(", "))
            }
            None => String::new(),
        },
        Form::Graph => "bare Graph FlatBuffer".into(),
        Form::Plan => "plan-only SerializedExecutionPlan envelope".into(),
        Form::IngestorPayload => "bare kernel-ingestor payload (HKIP)".into(),
        Form::CpuPayload => "bare CPU reference plan payload (HRCP)".into(),
        Form::GraphJson => "graph JSON in upstream's format (Graph::from_json)".into(),
        Form::FlatbufferJson => {
            "graph JSON in the legacy format (Graph::from_flatbuffer_json)".into()
        }
        Form::Kpack | Form::CodeObject => form.foreign().unwrap_or_default().into(),
        Form::Unknown => UNKNOWN_FORM.into(),
    };
    let _ = writeln!(out, "form: {}, {size} bytes; {what}", form.name());
}

/// The SDK's reading of the graph: per tensor UID its kind, per node its inputs and outputs
/// (as `name(uid)`) and the method that creates it.
struct Resolved {
    kinds: HashMap<i64, &'static str>,
    nodes: Vec<(&'static str, Vec<String>, Vec<String>)>,
}

fn resolve(g: &Graph) -> Resolved {
    let uid_of = |t| g.tensor_attributes(t).uid.unwrap_or(-1);
    let label = |t| {
        let a = g.tensor_attributes(t);
        format!("{}({})", a.name, a.uid.unwrap_or(-1))
    };
    let mut kinds = HashMap::new();
    for (t, a) in g.tensors() {
        let kind = if a.value.is_some() {
            "value"
        } else if a.is_virtual {
            "virtual"
        } else if g.producer(t).is_some() {
            "output"
        } else {
            "input"
        };
        kinds.insert(uid_of(t), kind);
    }
    let nodes = g
        .nodes()
        .map(|(_, n)| {
            let (ins, outs) = n.inputs_outputs();
            (
                n.method(),
                ins.into_iter().map(label).collect(),
                outs.into_iter().map(label).collect(),
            )
        })
        .collect();
    Resolved { kinds, nodes }
}

/// The graph: its data types, the tensor table and one line per node.
fn graph_lines(out: &mut String, g: &Value, sdk: &Result<Graph, String>) {
    if let Some(why) = g.get("unreadable") {
        let _ = writeln!(out, "graph: unreadable: {}", inline(Some(why)));
        return;
    }
    let empty = Vec::new();
    let tensors = g.get("tensors").and_then(Value::as_array).unwrap_or(&empty);
    let nodes = g.get("nodes").and_then(Value::as_array).unwrap_or(&empty);
    let name = match str_of(g, "name") {
        "" => "(unnamed)".to_string(),
        n => format!("{n:?}"),
    };
    let mut line = format!(
        "graph {name}: io {}, compute {}, intermediate {}; {} tensors, {} nodes",
        inline(g.get("io_data_type")),
        inline(g.get("compute_data_type")),
        inline(g.get("intermediate_data_type")),
        tensors.len(),
        nodes.len()
    );
    if let Some(id) = g.get("preferred_engine_id").filter(|v| !v.is_null()) {
        let _ = write!(line, "; preferred engine {}", inline(Some(id)));
    }
    let _ = writeln!(out, "{line}");
    let resolved = sdk.as_ref().ok().map(resolve);
    let mut rows = vec![vec![
        "uid".to_string(),
        "name".into(),
        "dims".into(),
        "strides".into(),
        "dtype".into(),
        "kind".into(),
    ]];
    for t in tensors {
        let uid = t.get("uid").and_then(Value::as_i64).unwrap_or(-1);
        let kind = match &resolved {
            Some(r) => r.kinds.get(&uid).copied().unwrap_or("?"),
            None if t.get("virtual") == Some(&Value::Bool(true)) => "virtual",
            None => "non-virtual",
        };
        rows.push(vec![
            uid.to_string(),
            str_of(t, "name").to_string(),
            ints(t.get("dims")),
            ints(t.get("strides")),
            inline(t.get("data_type")),
            kind.to_string(),
        ]);
    }
    let _ = writeln!(out, "tensors:");
    table(out, &rows);
    let _ = writeln!(out, "nodes:");
    if let Err(why) = sdk {
        let _ = writeln!(
            out,
            "  (inputs and outputs not resolved: the SDK cannot read this graph: {why})"
        );
    }
    for (i, n) in nodes.iter().enumerate() {
        let attrs = n.get("attributes");
        let mode = ["operation", "mode"]
            .iter()
            .find_map(|k| attrs.and_then(|a| a.get(*k)).and_then(Value::as_str))
            .map_or_else(String::new, |m| format!(" {m}"));
        let io = match resolved.as_ref().and_then(|r| r.nodes.get(i)) {
            Some((method, ins, outs)) => {
                format!(
                    "{method}{mode} {:?}: {} -> {}",
                    str_of(n, "name"),
                    ins.join(", "),
                    outs.join(", ")
                )
            }
            None => {
                let uids: Vec<String> = attrs
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .filter(|(k, v)| k.ends_with("_uid") && !v.is_null())
                            .map(|(k, v)| format!("{k}={}", inline(Some(v))))
                            .collect()
                    })
                    .unwrap_or_default();
                format!(
                    "{}{mode} {:?}: {}",
                    inline(n.get("op")),
                    str_of(n, "name"),
                    uids.join(" ")
                )
            }
        };
        let _ = writeln!(out, "  [{i}] {io}");
    }
}

/// The plan: engine, workspace, knobs, payload; for an ingestor plan its kernel.
fn plan_lines(out: &mut String, doc: &Value) {
    let payload = doc.get("payload");
    let kind = payload.map(|p| str_of(p, "kind")).unwrap_or("");
    if let Some(e) = doc.get("envelope") {
        if let Some(why) = e.get("unreadable") {
            let _ = writeln!(out, "plan: unreadable: {}", inline(Some(why)));
            return;
        }
        let knobs = match kind {
            "cpu-reference-plan" => "none (the CPU reference engine has none)",
            _ => "not saved (the kernel below is what they chose)",
        };
        let _ = writeln!(
            out,
            "plan: engine {} (id {}), envelope v{}, workspace {} bytes, knobs {knobs}, payload {} bytes",
            inline(e.get("engine_name")),
            inline(e.get("engine_id")),
            inline(e.get("version")),
            inline(e.get("workspace_size")),
            inline(e.get("plugin_payload_bytes")),
        );
    }
    let Some(p) = payload else { return };
    if let Some(why) = p.get("unreadable") {
        let _ = writeln!(out, "payload {kind}: unreadable: {}", inline(Some(why)));
        return;
    }
    match kind {
        "cpu-reference-plan" => {
            let same = match (doc.get("graph"), p.get("graph")) {
                (Some(a), Some(b)) => match diff::walk("graph", a, b) {
                    None => ", carries the graph above".to_string(),
                    Some(d) => format!(
                        ", carries a graph that differs from the container's at {}: {} vs {}",
                        d.path,
                        inline(d.a.as_ref()),
                        inline(d.b.as_ref())
                    ),
                },
                _ => String::new(),
            };
            let d = p.get("digests");
            let sums = match d {
                Some(d) if d.get("body_sha256_recorded") == d.get("body_sha256_actual") => {
                    "body SHA-256 matches"
                }
                _ => "body SHA-256 does NOT match",
            };
            let _ = writeln!(
                out,
                "payload: cpu-reference-plan {} ({} body bytes, {sums}){same}",
                inline(p.get("format_version")),
                inline(p.get("body_bytes_present")),
            );
        }
        "ingestor-plan" => {
            if let Some(why) = p.pointer("/body/unreadable") {
                let _ = writeln!(
                    out,
                    "payload: ingestor-plan {}, body unreadable: {}",
                    inline(p.get("format_version")),
                    inline(Some(why))
                );
                return;
            }
            let _ = writeln!(
                out,
                "payload: ingestor-plan {}, contract {}, workspace {} bytes, {} launch values",
                inline(p.get("format_version")),
                inline(p.get("launch_contract")),
                inline(p.get("workspace_bytes")),
                p.get("launch_values")
                    .and_then(Value::as_object)
                    .map_or(0, serde_json::Map::len),
            );
            if let Some(k) = p.get("kernel") {
                let _ = writeln!(
                    out,
                    "kernel: {} for {} ({}), code object {} bytes, sha256 {}",
                    inline(k.get("name")),
                    inline(k.get("kpack_target")),
                    inline(k.get("source_kind")),
                    inline(k.get("code_object_bytes")),
                    inline(k.get("code_object_sha256")),
                );
            }
        }
        _ => {
            let _ = writeln!(
                out,
                "payload: of no engine this build knows (sha256 {})",
                inline(p.get("sha256"))
            );
        }
    }
}

/// The summary text of `doc` (a description of a file of `form`, without `validation`);
/// `sdk` is the graph as the SDK reads it (or why it cannot).
pub fn text(doc: &Value, form: Form, sdk: &Result<Graph, String>) -> String {
    let mut out = String::new();
    form_line(&mut out, doc, form);
    if let Some(u) = doc.get("unreadable").and_then(Value::as_object) {
        for (k, label) in [
            ("graph_verifier", "as a Graph FlatBuffer"),
            ("execution_plan_verifier", "as a plan envelope"),
        ] {
            if let Some(v) = u.get(k) {
                let _ = writeln!(out, "  {label}: {}", inline(Some(v)).trim_end());
            }
        }
    }
    let graph = doc.get("graph").or_else(|| doc.pointer("/payload/graph"));
    if let Some(g) = graph {
        graph_lines(&mut out, g, sdk);
    }
    plan_lines(&mut out, doc);
    out
}
