//! Two descriptions compared: first at graph level ([`graph_differences`]: graph fields and
//! data types, tensors added, removed or changed by UID, nodes changed by position, the plan's
//! engine, workspace and kernel), then the first differing field (structure-aware: the
//! descriptions' key order is form, container, envelope, graph, payload; within them fields,
//! tensors and nodes in file order), then the raw bytes when every described field is equal.

use crate::render::inline;
use serde_json::{Map, Value};

/// One difference: the field's path (`graph.tensors[1].dims[0]`) and both values (`None` when
/// the field is absent on that side).
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// Dotted path of the field.
    pub path: String,
    /// Value in the first file.
    pub a: Option<Value>,
    /// Value in the second file.
    pub b: Option<Value>,
}

/// Keys not compared field by field (the file size follows from the fields; the raw bytes
/// are compared last).
const SKIPPED: &[&str] = &["size_bytes"];

/// The first difference between `a` and `b` (descriptions of two files whose bytes are
/// `bytes_a` and `bytes_b`), `None` when the files are byte-identical.
pub fn first_difference(
    a: &Value,
    b: &Value,
    bytes_a: &[u8],
    bytes_b: &[u8],
) -> Option<Difference> {
    if let Some(d) = walk("", a, b) {
        return Some(d);
    }
    if bytes_a == bytes_b {
        return None;
    }
    let at = bytes_a
        .iter()
        .zip(bytes_b)
        .position(|(x, y)| x != y)
        .unwrap_or(bytes_a.len().min(bytes_b.len()));
    Some(Difference {
        path: format!("bytes (the described fields are equal; first difference at offset {at})"),
        a: Some(Value::from(bytes_a.len())),
        b: Some(Value::from(bytes_b.len())),
    })
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The graph of a description: the file's own graph, else the one a CPU plan carries.
fn graph_of(doc: &Value) -> Option<&Value> {
    doc.get("graph").or_else(|| doc.pointer("/payload/graph"))
}

fn tensors_by_uid(g: &Value) -> Vec<(i64, &Map<String, Value>)> {
    g.get("tensors")
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .filter_map(|t| {
                    let t = t.as_object()?;
                    Some((t.get("uid").and_then(Value::as_i64)?, t))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn find<'a>(v: &[(i64, &'a Map<String, Value>)], uid: i64) -> Option<&'a Map<String, Value>> {
    v.iter().find(|(u, _)| *u == uid).map(|(_, t)| *t)
}

fn tensor_label(uid: i64, t: &Map<String, Value>) -> String {
    format!(
        "uid {uid} {:?}",
        t.get("name").and_then(Value::as_str).unwrap_or("")
    )
}

fn tensor_facts(t: &Map<String, Value>) -> String {
    format!(
        "dims {} strides {} {}{}",
        inline(t.get("dims")),
        inline(t.get("strides")),
        inline(t.get("data_type")),
        if t.get("virtual") == Some(&Value::Bool(true)) {
            " virtual"
        } else {
            ""
        }
    )
}

/// A value on one line, an empty string as `""` (so that it shows).
fn shown(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) if s.is_empty() => "\"\"".into(),
        other => inline(other),
    }
}

/// `key a vs b` for every key of `a` or `b` (in `a`'s order, then `b`'s) whose values differ.
fn changed_keys(a: &Map<String, Value>, b: &Map<String, Value>, skip: &[&str]) -> Vec<String> {
    a.keys()
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .filter(|k| !skip.contains(&k.as_str()) && a.get(*k) != b.get(*k))
        .map(|k| format!("{k} {} vs {}", shown(a.get(k)), shown(b.get(k))))
        .collect()
}

fn node_label(i: usize, n: &Value) -> String {
    format!(
        "[{i}] {} {:?}",
        inline(n.get("op")),
        n.get("name").and_then(Value::as_str).unwrap_or("")
    )
}

/// The graph-level differences of two descriptions, one line each, in this order: graph
/// fields (name, data types, …); tensors removed (in `a` only), added (in `b` only) and changed
/// (same UID, the differing fields listed), by UID; nodes by position (op and name, then the
/// differing fields and attributes), removed, added; the plan's engine, workspace and kernel.
/// Empty when the graphs and plans agree (other fields may still differ).
pub fn graph_differences(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match (graph_of(a), graph_of(b)) {
        (Some(ga), Some(gb)) => graph_lines(&mut out, ga, gb),
        (Some(_), None) => out.push("graph: present vs none".to_string()),
        (None, Some(_)) => out.push("graph: none vs present".to_string()),
        (None, None) => {}
    }
    plan_lines(&mut out, a, b);
    out
}

fn graph_lines(out: &mut Vec<String>, ga: &Value, gb: &Value) {
    let (Some(ma), Some(mb)) = (ga.as_object(), gb.as_object()) else {
        return;
    };
    if ma.contains_key("unreadable") || mb.contains_key("unreadable") {
        if ma.get("unreadable") != mb.get("unreadable") {
            out.push(format!(
                "graph: {} vs {}",
                inline(ma.get("unreadable").or(Some(&Value::from("readable")))),
                inline(mb.get("unreadable").or(Some(&Value::from("readable"))))
            ));
        }
        return;
    }
    for field in changed_keys(ma, mb, &["tensors", "nodes"]) {
        out.push(format!("graph {field}"));
    }
    let (ta, tb) = (tensors_by_uid(ga), tensors_by_uid(gb));
    for (uid, t) in &ta {
        if find(&tb, *uid).is_none() {
            out.push(format!(
                "tensor removed: {} {}",
                tensor_label(*uid, t),
                tensor_facts(t)
            ));
        }
    }
    for (uid, t) in &tb {
        if find(&ta, *uid).is_none() {
            out.push(format!(
                "tensor added: {} {}",
                tensor_label(*uid, t),
                tensor_facts(t)
            ));
        }
    }
    for (uid, t) in &ta {
        if let Some(u) = find(&tb, *uid) {
            let fields = changed_keys(t, u, &[]);
            if !fields.is_empty() {
                out.push(format!(
                    "tensor changed: {}: {}",
                    tensor_label(*uid, t),
                    fields.join("; ")
                ));
            }
        }
    }
    let empty = Vec::new();
    let na = ga.get("nodes").and_then(Value::as_array).unwrap_or(&empty);
    let nb = gb.get("nodes").and_then(Value::as_array).unwrap_or(&empty);
    for (i, (x, y)) in na.iter().zip(nb).enumerate() {
        if x == y {
            continue;
        }
        if x.get("op") != y.get("op") {
            out.push(format!(
                "node changed: {} vs {}",
                node_label(i, x),
                node_label(i, y)
            ));
            continue;
        }
        let (Some(mx), Some(my)) = (x.as_object(), y.as_object()) else {
            continue;
        };
        let mut fields = changed_keys(mx, my, &["attributes"]);
        if let (Some(ax), Some(ay)) = (
            x.get("attributes").and_then(Value::as_object),
            y.get("attributes").and_then(Value::as_object),
        ) {
            fields.extend(changed_keys(ax, ay, &[]));
        } else if x.get("attributes") != y.get("attributes") {
            fields.push("attributes differ".to_string());
        }
        out.push(format!(
            "node changed: {}: {}",
            node_label(i, x),
            fields.join("; ")
        ));
    }
    for (i, x) in na.iter().enumerate().skip(nb.len()) {
        out.push(format!("node removed: {}", node_label(i, x)));
    }
    for (i, y) in nb.iter().enumerate().skip(na.len()) {
        out.push(format!("node added: {}", node_label(i, y)));
    }
}

fn plan_lines(out: &mut Vec<String>, a: &Value, b: &Value) {
    let engine = |d: &Value| {
        d.get("envelope").map(|e| {
            e.get("engine_name").filter(|n| !n.is_null()).map_or_else(
                || format!("id {}", inline(e.get("engine_id"))),
                |n| inline(Some(n)),
            )
        })
    };
    let (ea, eb) = (engine(a), engine(b));
    if ea != eb {
        out.push(format!(
            "plan engine: {} vs {}",
            ea.as_deref().unwrap_or("none"),
            eb.as_deref().unwrap_or("none")
        ));
        return;
    }
    if ea.is_none() {
        return;
    }
    let field = |d: &Value, p: &str| d.pointer(p).cloned();
    for (label, pointer) in [
        ("plan workspace_size", "/envelope/workspace_size"),
        ("plan kernel", "/payload/kernel/name"),
        ("plan kpack_target", "/payload/kernel/kpack_target"),
    ] {
        let (x, y) = (field(a, pointer), field(b, pointer));
        if x != y {
            out.push(format!(
                "{label}: {} vs {}",
                inline(x.as_ref()),
                inline(y.as_ref())
            ));
        }
    }
}

/// The first difference between `a` and `b` below `path` (`None` when they are equal).
pub fn walk(path: &str, a: &Value, b: &Value) -> Option<Difference> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                if path.is_empty() && SKIPPED.contains(&k.as_str()) {
                    continue;
                }
                match y.get(k) {
                    Some(vb) => {
                        if let Some(d) = walk(&join(path, k), va, vb) {
                            return Some(d);
                        }
                    }
                    None => {
                        return Some(Difference {
                            path: join(path, k),
                            a: Some(va.clone()),
                            b: None,
                        });
                    }
                }
            }
            y.iter()
                .find(|(k, _)| !x.contains_key(*k))
                .map(|(k, vb)| Difference {
                    path: join(path, k),
                    a: None,
                    b: Some(vb.clone()),
                })
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = walk(&format!("{path}[{i}]"), va, vb) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| Difference {
                path: format!("{path} (entry count)"),
                a: Some(Value::from(x.len())),
                b: Some(Value::from(y.len())),
            })
        }
        _ => (a != b).then(|| Difference {
            path: path.to_string(),
            a: Some(a.clone()),
            b: Some(b.clone()),
        }),
    }
}
