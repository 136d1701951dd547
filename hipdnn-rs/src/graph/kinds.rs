//! Field codecs: one module per kind of schema field (tensor UID in/out, optional scalars,
//! vectors, enums), each giving the Rust type of the field, its builder argument, and its
//! FlatBuffers and JSON encodings. The op tables in [`super::ops`] are declared as lists of
//! `(field, wire name, kind)` and get their codecs from here.
//!
//! Never panics on foreign input: every read returns a typed [`Error`].

use std::collections::HashMap;

use flatbuffers::{Allocator, FlatBufferBuilder, Vector, WIPOffset};
use serde_json::Value;

use super::error::{Error, Result};
use super::tensor::TensorId;
use super::types::SchemaEnum;

/// Context while writing one node: UID of every tensor (by arena index) and the node label.
pub(crate) struct Wctx<'a> {
    pub uids: &'a [i64],
    pub label: &'a str,
}

impl Wctx<'_> {
    fn uid(&self, t: TensorId, f: &str) -> Result<i64> {
        self.uids.get(t.index()).copied().ok_or_else(|| {
            Error::invalid(format!(
                "{}: attribute '{f}' refers to tensor #{} which is not in this graph",
                self.label,
                t.index()
            ))
        })
    }
    fn required(&self, t: Option<TensorId>, f: &str) -> Result<i64> {
        match t {
            Some(t) => self.uid(t, f),
            None => Err(Error::not_set(format!(
                "{}: attribute '{f}' is not set",
                self.label
            ))),
        }
    }
}

/// Context while reading one node: UID → tensor map and the node label.
pub(crate) struct Rctx<'a> {
    pub by_uid: &'a HashMap<i64, TensorId>,
    pub label: &'a str,
}

impl Rctx<'_> {
    fn tensor(&self, uid: i64, f: &str) -> Result<TensorId> {
        self.by_uid.get(&uid).copied().ok_or_else(|| {
            Error::invalid(format!(
                "{}: attribute '{f}' references UID {uid} which no tensor of the graph has",
                self.label
            ))
        })
    }
    fn bad(&self, f: &str, what: &str) -> Error {
        Error::invalid(format!(
            "{}: JSON attribute '{f}': expected {what}",
            self.label
        ))
    }
}

// ---- JSON scalar helpers (shared with json.rs) ----

pub(crate) fn f32_to_json(v: f32) -> Value {
    if v.is_nan() {
        Value::from("nan")
    } else if v.is_infinite() {
        Value::from(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        // Shortest decimal that round-trips the f32, then as an f64 number.
        let d: f64 = format!("{v}").parse().unwrap_or(f64::from(v));
        serde_json::Number::from_f64(d).map_or(Value::Null, Value::Number)
    }
}

pub(crate) fn json_to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "nan" | "+nan" | "-nan" => Some(f64::NAN),
            "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
            "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn f64_to_json(v: f64) -> Value {
    if v.is_finite() {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    } else if v.is_nan() {
        Value::from("nan")
    } else {
        Value::from(if v > 0.0 { "inf" } else { "-inf" })
    }
}

pub(crate) fn json_i64(v: &Value) -> Option<i64> {
    v.as_i64()
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn i64_list<'v>(v: &'v Value) -> Option<impl Iterator<Item = Option<i64>> + 'v> {
    v.as_array().map(|a| a.iter().map(json_i64))
}

// ---- tensor kinds ----

macro_rules! tensor_kind {
    ($name:ident, $dir:literal) => {
        pub(crate) mod $name {
            use super::*;
            pub type T = Option<TensorId>;
            pub type Arg = TensorId;
            pub fn set(a: Arg) -> T {
                Some(a)
            }
            pub fn write<'a, A: Allocator + 'a>(
                v: &T,
                _: &mut FlatBufferBuilder<'a, A>,
                c: &Wctx,
                f: &str,
            ) -> Result<i64> {
                c.required(*v, f)
            }
            pub fn read(w: i64, c: &Rctx, f: &str) -> Result<T> {
                c.tensor(w, f).map(Some)
            }
            pub fn to_json(v: &T, c: &Wctx, f: &str) -> Result<Value> {
                c.required(*v, f).map(Value::from)
            }
            pub fn from_json(v: Option<&Value>, c: &Rctx, f: &str) -> Result<T> {
                let uid = match present(v) {
                    None => 0,
                    Some(v) => json_i64(v).ok_or_else(|| c.bad(f, "an integer UID"))?,
                };
                read(uid, c, f)
            }
            pub fn visit(v: &T, ins: &mut Vec<TensorId>, outs: &mut Vec<TensorId>) {
                if let Some(t) = v {
                    if $dir { ins.push(*t) } else { outs.push(*t) }
                }
            }
        }
    };
}
tensor_kind!(tin, true);
tensor_kind!(tout, false);

macro_rules! opt_tensor_kind {
    ($name:ident, $dir:literal) => {
        pub(crate) mod $name {
            use super::*;
            pub type T = Option<TensorId>;
            pub type Arg = TensorId;
            pub fn set(a: Arg) -> T {
                Some(a)
            }
            pub fn write<'a, A: Allocator + 'a>(
                v: &T,
                _: &mut FlatBufferBuilder<'a, A>,
                c: &Wctx,
                f: &str,
            ) -> Result<Option<i64>> {
                v.map(|t| c.uid(t, f)).transpose()
            }
            pub fn read(w: Option<i64>, c: &Rctx, f: &str) -> Result<T> {
                w.map(|u| c.tensor(u, f)).transpose()
            }
            pub fn to_json(v: &T, c: &Wctx, f: &str) -> Result<Value> {
                Ok(write_json(v.map(|t| c.uid(t, f)).transpose()?))
            }
            fn write_json(u: Option<i64>) -> Value {
                u.map_or(Value::Null, Value::from)
            }
            pub fn from_json(v: Option<&Value>, c: &Rctx, f: &str) -> Result<T> {
                match present(v) {
                    None => Ok(None),
                    Some(v) => read(
                        Some(json_i64(v).ok_or_else(|| c.bad(f, "an integer UID or null"))?),
                        c,
                        f,
                    ),
                }
            }
            pub fn visit(v: &T, ins: &mut Vec<TensorId>, outs: &mut Vec<TensorId>) {
                if let Some(t) = v {
                    if $dir { ins.push(*t) } else { outs.push(*t) }
                }
            }
        }
    };
}
opt_tensor_kind!(opt_tin, true);
opt_tensor_kind!(opt_tout, false);

macro_rules! tensor_list_kind {
    ($name:ident, $dir:literal) => {
        pub(crate) mod $name {
            use super::*;
            pub type T = Vec<TensorId>;
            pub type Arg = Vec<TensorId>;
            pub fn set(a: Arg) -> T {
                a
            }
            pub fn write<'a, A: Allocator + 'a>(
                v: &T,
                fbb: &mut FlatBufferBuilder<'a, A>,
                c: &Wctx,
                f: &str,
            ) -> Result<Option<WIPOffset<Vector<'a, i64>>>> {
                let uids = v
                    .iter()
                    .map(|&t| c.uid(t, f))
                    .collect::<Result<Vec<i64>>>()?;
                Ok(Some(fbb.create_vector(&uids)))
            }
            pub fn read(w: Option<Vector<'_, i64>>, c: &Rctx, f: &str) -> Result<T> {
                w.map(|v| v.iter().map(|u| c.tensor(u, f)).collect())
                    .unwrap_or(Ok(Vec::new()))
            }
            pub fn to_json(v: &T, c: &Wctx, f: &str) -> Result<Value> {
                Ok(Value::Array(
                    v.iter()
                        .map(|&t| c.uid(t, f).map(Value::from))
                        .collect::<Result<_>>()?,
                ))
            }
            pub fn from_json(v: Option<&Value>, c: &Rctx, f: &str) -> Result<T> {
                match present(v) {
                    None => Ok(Vec::new()),
                    Some(v) => i64_list(v)
                        .ok_or_else(|| c.bad(f, "an array of UIDs"))?
                        .map(|u| c.tensor(u.ok_or_else(|| c.bad(f, "an array of UIDs"))?, f))
                        .collect(),
                }
            }
            pub fn visit(v: &T, ins: &mut Vec<TensorId>, outs: &mut Vec<TensorId>) {
                if $dir {
                    ins.extend_from_slice(v)
                } else {
                    outs.extend_from_slice(v)
                }
            }
        }
    };
}
tensor_list_kind!(tins, true);
tensor_list_kind!(touts, false);

// ---- plain and optional scalars ----

macro_rules! scalar_kind {
    ($name:ident, $t:ty, $default:expr, $to:expr, $from:expr, $what:literal) => {
        pub(crate) mod $name {
            use super::*;
            pub type T = $t;
            pub type Arg = $t;
            pub fn set(a: Arg) -> T {
                a
            }
            pub fn write<'a, A: Allocator + 'a>(
                v: &T,
                _: &mut FlatBufferBuilder<'a, A>,
                _: &Wctx,
                _: &str,
            ) -> Result<T> {
                Ok(*v)
            }
            pub fn read(w: T, _: &Rctx, _: &str) -> Result<T> {
                Ok(w)
            }
            pub fn to_json(v: &T, _: &Wctx, _: &str) -> Result<Value> {
                let to: fn($t) -> Value = $to;
                Ok(to(*v))
            }
            pub fn from_json(v: Option<&Value>, c: &Rctx, f: &str) -> Result<T> {
                let from: fn(&Value) -> Option<$t> = $from;
                match present(v) {
                    None => Ok($default),
                    Some(v) => from(v).ok_or_else(|| c.bad(f, $what)),
                }
            }
            pub fn visit(_: &T, _: &mut Vec<TensorId>, _: &mut Vec<TensorId>) {}
        }
    };
}
scalar_kind!(i64_, i64, 0, Value::from, json_i64, "an integer");
scalar_kind!(
    i32_,
    i32,
    0,
    Value::from,
    |v| v.as_i64().and_then(|x| i32::try_from(x).ok()),
    "a 32-bit integer"
);
scalar_kind!(bool_, bool, false, Value::from, Value::as_bool, "a boolean");

macro_rules! opt_scalar_kind {
    ($name:ident, $t:ty, $to:expr, $from:expr, $what:literal) => {
        pub(crate) mod $name {
            use super::*;
            pub type T = Option<$t>;
            pub type Arg = $t;
            pub fn set(a: Arg) -> T {
                Some(a)
            }
            pub fn write<'a, A: Allocator + 'a>(
                v: &T,
                _: &mut FlatBufferBuilder<'a, A>,
                _: &Wctx,
                _: &str,
            ) -> Result<T> {
                Ok(*v)
            }
            pub fn read(w: T, _: &Rctx, _: &str) -> Result<T> {
                Ok(w)
            }
            pub fn to_json(v: &T, _: &Wctx, _: &str) -> Result<Value> {
                let to: fn($t) -> Value = $to;
                Ok(v.map_or(Value::Null, to))
            }
            pub fn from_json(v: Option<&Value>, c: &Rctx, f: &str) -> Result<T> {
                let from: fn(&Value) -> Option<$t> = $from;
                match present(v) {
                    None => Ok(None),
                    Some(v) => from(v).map(Some).ok_or_else(|| c.bad(f, $what)),
                }
            }
            pub fn visit(_: &T, _: &mut Vec<TensorId>, _: &mut Vec<TensorId>) {}
        }
    };
}
opt_scalar_kind!(opt_i64, i64, Value::from, json_i64, "an integer or null");
opt_scalar_kind!(
    opt_i32,
    i32,
    Value::from,
    |v| v.as_i64().and_then(|x| i32::try_from(x).ok()),
    "a 32-bit integer or null"
);
opt_scalar_kind!(
    opt_bool,
    bool,
    Value::from,
    Value::as_bool,
    "a boolean or null"
);
opt_scalar_kind!(
    opt_f32,
    f32,
    f32_to_json,
    |v| json_to_f64(v).map(|x| x as f32),
    "a number or null"
);

// ---- vectors and strings ----

macro_rules! list_kind {
    ($name:ident, $t:ty, $from:expr, $what:literal) => {
        pub(crate) mod $name {
            use super::*;
            pub type T = Vec<$t>;
            pub type Arg = Vec<$t>;
            pub fn set(a: Arg) -> T {
                a
            }
            pub fn write<'a, A: Allocator + 'a>(
                v: &T,
                fbb: &mut FlatBufferBuilder<'a, A>,
                _: &Wctx,
                _: &str,
            ) -> Result<Option<WIPOffset<Vector<'a, $t>>>> {
                Ok(Some(fbb.create_vector(v)))
            }
            pub fn read(w: Option<Vector<'_, $t>>, _: &Rctx, _: &str) -> Result<T> {
                Ok(w.map(|v| v.iter().collect()).unwrap_or_default())
            }
            pub fn to_json(v: &T, _: &Wctx, _: &str) -> Result<Value> {
                Ok(Value::Array(v.iter().map(|&x| Value::from(x)).collect()))
            }
            pub fn from_json(v: Option<&Value>, c: &Rctx, f: &str) -> Result<T> {
                let from: fn(&Value) -> Option<$t> = $from;
                match present(v) {
                    None => Ok(Vec::new()),
                    Some(v) => v
                        .as_array()
                        .ok_or_else(|| c.bad(f, $what))?
                        .iter()
                        .map(|x| from(x).ok_or_else(|| c.bad(f, $what)))
                        .collect(),
                }
            }
            pub fn visit(_: &T, _: &mut Vec<TensorId>, _: &mut Vec<TensorId>) {}
        }
    };
}
list_kind!(i64_list, i64, json_i64, "an array of integers");
list_kind!(
    i32_list,
    i32,
    |v| v.as_i64().and_then(|x| i32::try_from(x).ok()),
    "an array of 32-bit integers"
);
list_kind!(
    u8_list,
    u8,
    |v| v.as_u64().and_then(|x| u8::try_from(x).ok()),
    "an array of bytes (0..=255)"
);

pub(crate) mod string {
    use super::*;
    pub type T = String;
    pub type Arg = String;
    pub fn set(a: Arg) -> T {
        a
    }
    /// Empty strings are written as absent.
    pub fn write<'a, A: Allocator + 'a>(
        v: &T,
        fbb: &mut FlatBufferBuilder<'a, A>,
        _: &Wctx,
        _: &str,
    ) -> Result<Option<WIPOffset<&'a str>>> {
        Ok((!v.is_empty()).then(|| fbb.create_string(v)))
    }
    pub fn read(w: Option<&str>, _: &Rctx, _: &str) -> Result<T> {
        Ok(w.unwrap_or_default().to_owned())
    }
    pub fn to_json(v: &T, _: &Wctx, _: &str) -> Result<Value> {
        Ok(Value::from(v.as_str()))
    }
    pub fn from_json(v: Option<&Value>, c: &Rctx, f: &str) -> Result<T> {
        match present(v) {
            None => Ok(String::new()),
            Some(v) => v
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| c.bad(f, "a string")),
        }
    }
    pub fn visit(_: &T, _: &mut Vec<TensorId>, _: &mut Vec<TensorId>) {}
}

// ---- enums ----

pub(crate) fn enum_read<E: SchemaEnum>(w: E::Wire, c: &Rctx, f: &str) -> Result<E> {
    E::from_wire(w).ok_or_else(|| {
        Error::invalid(format!(
            "{}: attribute '{f}' has value {} which names no enumerator",
            c.label,
            E::wire_number(w)
        ))
    })
}

pub(crate) fn enum_to_json<E: SchemaEnum>(v: E) -> Value {
    Value::from(v.json_name())
}

pub(crate) fn enum_from_json<E: SchemaEnum>(v: Option<&Value>, label: &str, f: &str) -> Result<E> {
    match present(v) {
        None => Ok(E::default()),
        Some(Value::String(s)) => E::from_json_name(s).ok_or(()),
        Some(v) => v.as_i64().and_then(E::from_number).ok_or(()),
    }
    .map_err(|()| {
        Error::invalid(format!(
            "{label}: JSON attribute '{f}': unknown enumerator {}",
            v.unwrap_or(&Value::Null)
        ))
    })
}

macro_rules! enum_kind {
    ($name:ident, $t:ident) => {
        pub(crate) mod $name {
            use super::*;
            use crate::graph::types::$t as E;
            pub type T = E;
            pub type Arg = E;
            pub fn set(a: Arg) -> T {
                a
            }
            pub fn write<'a, A: Allocator + 'a>(
                v: &T,
                _: &mut FlatBufferBuilder<'a, A>,
                _: &Wctx,
                _: &str,
            ) -> Result<<E as SchemaEnum>::Wire> {
                Ok(v.to_wire())
            }
            pub fn read(w: <E as SchemaEnum>::Wire, c: &Rctx, f: &str) -> Result<T> {
                enum_read(w, c, f)
            }
            pub fn to_json(v: &T, _: &Wctx, _: &str) -> Result<Value> {
                Ok(enum_to_json(*v))
            }
            pub fn from_json(v: Option<&Value>, c: &Rctx, f: &str) -> Result<T> {
                enum_from_json(v, c.label, f)
            }
            pub fn visit(_: &T, _: &mut Vec<TensorId>, _: &mut Vec<TensorId>) {}
        }
    };
}
enum_kind!(data_type, DataType);
enum_kind!(pointwise_mode, PointwiseMode);
enum_kind!(conv_mode, ConvMode);
enum_kind!(norm_phase, NormFwdPhase);
enum_kind!(reduction_mode, ReductionMode);
enum_kind!(resample_mode, ResampleMode);
enum_kind!(padding_mode, PaddingMode);
enum_kind!(diagonal_alignment, DiagonalAlignment);
enum_kind!(attention_implementation, AttentionImplementation);
enum_kind!(moe_mode, MoeGroupedMatmulMode);
