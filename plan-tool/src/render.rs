//! Plain-text rendering of a description: one `key: value` line per field, nested objects
//! indented, an array of flat objects (tensors, launch arguments) one entry per line.

use serde_json::Value;
use std::fmt::Write;

/// A value on one line: strings bare, `-` for an absent value, JSON otherwise.
pub fn inline(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

fn is_flat(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().all(|x| !x.is_object() && !is_nested_array(x)),
        _ => true,
    }
}

fn is_nested_array(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.iter().any(|x| x.is_object() || x.is_array()))
}

fn flat_line(v: &Value) -> String {
    match v {
        Value::Object(m) => m
            .iter()
            .filter(|(_, x)| !x.is_null())
            .map(|(k, x)| format!("{k}={}", inline(Some(x))))
            .collect::<Vec<_>>()
            .join(" "),
        other => inline(Some(other)),
    }
}

fn object(out: &mut String, m: &serde_json::Map<String, Value>, indent: usize) {
    let pad = "  ".repeat(indent);
    for (k, v) in m {
        match v {
            Value::Object(inner) if !inner.is_empty() => {
                let _ = writeln!(out, "{pad}{k}:");
                object(out, inner, indent + 1);
            }
            Value::Array(items) if items.iter().any(|x| x.is_object() || x.is_array()) => {
                let _ = writeln!(out, "{pad}{k}: {} entries", items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::Object(inner) if !is_flat(item) => {
                            let _ = writeln!(out, "{pad}  [{i}]");
                            object(out, inner, indent + 2);
                        }
                        _ => {
                            let _ = writeln!(out, "{pad}  [{i}] {}", flat_line(item));
                        }
                    }
                }
            }
            _ => {
                let _ = writeln!(out, "{pad}{k}: {}", inline(Some(v)));
            }
        }
    }
}

/// The text of a whole description.
pub fn text(doc: &Value) -> String {
    let mut out = String::new();
    match doc {
        Value::Object(m) => object(&mut out, m, 0),
        other => out.push_str(&inline(Some(other))),
    }
    out
}
