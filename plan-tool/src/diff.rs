//! The first differing field of two descriptions (structure-aware: the descriptions' key order
//! is form, container, envelope, graph, payload; within them fields, tensors and nodes in file
//! order), then the raw bytes when every described field is equal.

use serde_json::Value;

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

fn walk(path: &str, a: &Value, b: &Value) -> Option<Difference> {
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
