//! The checking context of the CPU reference engine's plan: [`Cx`], what one node's parse
//! (in [`super::nodes`]) sees of the graph — its tensors by UID, the op's and the node's names
//! for messages — and the shared refusals it builds (`NOT_APPLICABLE`, naming the op, the
//! attribute and its value).
//!
//! A leaf below the nodes: it knows tensors and the op table's attribute rules, not steps,
//! plans or buffers.

use super::tensor::TensorDesc;
use hipdnn_backend::ops::broadcast::broadcasts_to;
use hipdnn_backend::ops::conv::SpatialAttr;
use hipdnn_backend::{PluginError, PluginResult};
use std::collections::HashMap;
use std::fmt::Display;

/// A `NOT_APPLICABLE` error with `msg`.
pub(super) fn na(msg: String) -> PluginError {
    PluginError::not_applicable(msg)
}

/// Checking context of one node: the graph's tensors, the op's name for messages (`conv_fprop`)
/// and the node's name. Every refusal it builds is `NOT_APPLICABLE`.
pub(super) struct Cx<'a> {
    /// Every graph tensor by UID.
    pub(super) tensors: &'a HashMap<i64, TensorDesc>,
    op: &'static str,
    name: String,
}

impl<'a> Cx<'a> {
    /// The context of node `name`, an op named `op` in messages, over the graph's `tensors`.
    pub(super) fn new(
        tensors: &'a HashMap<i64, TensorDesc>,
        op: &'static str,
        name: String,
    ) -> Self {
        Cx { tensors, op, name }
    }
    /// `<op> '<name>': <attr> <value> is not supported by the CPU reference engine`.
    pub(super) fn refuse(&self, attr: &str, value: impl Display) -> PluginError {
        na(format!(
            "{} '{}': {attr} {value} is not supported by the CPU reference engine",
            self.op, self.name
        ))
    }
    /// `<op> '<name>': <what>`.
    pub(super) fn bad(&self, what: impl Display) -> PluginError {
        na(format!("{} '{}': {what}", self.op, self.name))
    }
    /// The tensor `uid`, refused when the graph has none.
    pub(super) fn t(&self, attr: &str, uid: i64) -> PluginResult<&TensorDesc> {
        self.tensors
            .get(&uid)
            .ok_or_else(|| self.bad(format!("{attr} {uid} names no tensor of the graph")))
    }
    /// As [`Cx::t`], refused unless the tensor's data type is a float type.
    pub(super) fn float(&self, attr: &str, uid: i64) -> PluginResult<&TensorDesc> {
        let t = self.t(attr, uid)?;
        if !t.elem.is_float() {
            return Err(self.refuse(
                &format!("{attr} (uid {uid}) data_type"),
                format!("{:?}", t.elem),
            ));
        }
        Ok(t)
    }
    /// An optional tensor UID, checked when present.
    pub(super) fn opt(&self, attr: &str, uid: Option<i64>) -> PluginResult<Option<i64>> {
        match uid {
            Some(u) => self.t(attr, u).map(|_| Some(u)),
            None => Ok(None),
        }
    }
    /// Refuses an attribute the engine does not implement when it is set.
    pub(super) fn refuse_set(&self, attr: &str, uid: Option<i64>) -> PluginResult<()> {
        match uid {
            Some(u) => Err(self.refuse(attr, format!("(uid {u})"))),
            None => Ok(()),
        }
    }
    /// Refuses a tensor whose dims differ from `want`.
    pub(super) fn dims_eq(&self, attr: &str, t: &TensorDesc, want: &[usize]) -> PluginResult<()> {
        if t.dims != want {
            return Err(self.bad(format!(
                "{attr} (uid {}) dims {:?} differ from the expected {want:?}",
                t.uid, t.dims
            )));
        }
        Ok(())
    }
    /// Refuses a tensor whose dims do not broadcast to `to` (op table rule).
    pub(super) fn bcast(&self, attr: &str, t: &TensorDesc, to: &[usize]) -> PluginResult<()> {
        if !broadcasts_to(&t.dims, to) {
            return Err(self.bad(format!(
                "{attr} (uid {}) dims {:?} do not broadcast to {to:?}",
                t.uid, t.dims
            )));
        }
        Ok(())
    }
    /// A spatial list attribute: `n` entries, each at least the op table's minimum; the
    /// table's default entry for every dim when the list is absent.
    pub(super) fn spatial(
        &self,
        attr: SpatialAttr,
        v: Option<flatbuffers::Vector<'_, i64>>,
        n: usize,
    ) -> PluginResult<Vec<usize>> {
        let Some(v) = v else {
            return Ok(vec![attr.default_entry() as usize; n]);
        };
        let vals: Vec<i64> = v.iter().collect();
        if vals.len() != n {
            return Err(self.bad(format!(
                "{} {vals:?} has {} entries, expected {n} (one per spatial dim)",
                attr.name(),
                vals.len()
            )));
        }
        if attr.first_bad_entry(&vals).is_some() {
            return Err(self.refuse(attr.name(), format!("{vals:?}")));
        }
        Ok(vals.into_iter().map(|x| x as usize).collect())
    }
}
