//! Launch values: the named, typed inputs from which a dispatch handler computes a launch,
//! and the shared contract-reader rules.
//!
//! Upstream source: `KIE/IngestorLaunchRestore.hpp` (reference `ingestor-payload.md` §11). A
//! versioned dispatch name (`….dispatch.v1`) fixes the names, types and meanings of its values;
//! this module enforces the rules every contract shares and never derives a launch itself.

use super::payload::refusal::{incompatible, quote};
use hipdnn_backend::status::PluginResult;
use std::collections::BTreeMap;

/// One launch value (payload union `LaunchValueData`).
#[derive(Debug, Clone, PartialEq)]
pub enum LaunchValue {
    /// `BoolValue`.
    Bool(bool),
    /// `Int64Value`.
    Int(i64),
    /// `DoubleValue` (kept bit-exact).
    Float(f64),
    /// `StringValue`.
    String(String),
    /// `Int64ListValue`.
    IntList(Vec<i64>),
}

impl LaunchValue {
    /// Type spelling used in messages: `bool`, `int`, `float`, `string`, `int_list`.
    pub fn type_name(&self) -> &'static str {
        match self {
            LaunchValue::Bool(_) => "bool",
            LaunchValue::Int(_) => "int",
            LaunchValue::Float(_) => "float",
            LaunchValue::String(_) => "string",
            LaunchValue::IntList(_) => "int_list",
        }
    }
}

/// Launch values by name; the map order (by name) is the order the payload writer uses.
pub type LaunchValues = BTreeMap<String, LaunchValue>;

/// Reads launch values under one versioned contract, with the shared rules in order:
/// contract name, no extra names, then each value as the caller asks for it.
#[derive(Debug)]
pub struct ContractReader<'a> {
    dispatch: &'a str,
    values: &'a LaunchValues,
}

impl<'a> ContractReader<'a> {
    /// Starts reading `values` saved under `dispatch` against the contract `contract`
    /// (a versioned name) whose value names are `names`.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) `dispatch '<d>' names no launch-value contract this
    /// provider reads; the handler reads the contract '<contract>'` when `dispatch` differs
    /// from `contract` (the unversioned alias included); `launch value '<n>' is not part of
    /// the contract of dispatch '<d>'` for the first (by name) value not in `names`.
    pub fn new(
        dispatch: &'a str,
        contract: &str,
        names: &[&str],
        values: &'a LaunchValues,
    ) -> PluginResult<Self> {
        if dispatch != contract {
            return Err(incompatible(format!(
                "dispatch '{}' names no launch-value contract this provider reads; the handler reads the contract '{contract}'",
                quote(dispatch)
            )));
        }
        if let Some(extra) = values.keys().find(|k| !names.contains(&k.as_str())) {
            return Err(incompatible(format!(
                "launch value '{}' is not part of the contract of dispatch '{}'",
                quote(extra),
                quote(dispatch)
            )));
        }
        Ok(ContractReader { dispatch, values })
    }

    /// The INT value `name`, which must lie in `[lo, hi]`.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` `dispatch '<d>' needs launch value '<n>' (int in [lo, hi]), and the plan
    /// has none`, or `launch value '<n>' of dispatch '<d>' must be int in [lo, hi], and the plan
    /// holds <value or type>`.
    pub fn int(&self, name: &str, lo: i64, hi: i64) -> PluginResult<i64> {
        match self.values.get(name) {
            None => Err(incompatible(format!(
                "dispatch '{}' needs launch value '{name}' (int in [{lo}, {hi}]), and the plan has none",
                quote(self.dispatch)
            ))),
            Some(LaunchValue::Int(v)) if (lo..=hi).contains(v) => Ok(*v),
            Some(other) => {
                let held = match other {
                    LaunchValue::Int(v) => v.to_string(),
                    o => o.type_name().to_string(),
                };
                Err(incompatible(format!(
                    "launch value '{name}' of dispatch '{}' must be int in [{lo}, {hi}], and the plan holds {held}",
                    quote(self.dispatch)
                )))
            }
        }
    }
}
