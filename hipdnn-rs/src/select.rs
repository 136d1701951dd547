//! Engine filters of a build (cuDNN frontend's `deselect_engines`,
//! `deselect_workspace_greater_than`, `select_numeric_notes`, `deselect_numeric_notes`,
//! `deselect_behavior_notes`) and the handle's deterministic-only mode: which engine configs
//! the heuristic offers are tried, and why each skipped one was skipped.
//!
//! Owns only the decision; the build loop (`persist.rs`) asks it before and after finalizing a
//! plan.

use crate::Graph;
use hipdnn_backend::{BehaviorNote, Engine, EngineConfig, NumericalNote, OperationGraph};

/// The filters set on a graph; none by default. Not part of the graph's content: not saved,
/// not compared by `==`.
#[derive(Debug, Clone, Default)]
pub(crate) struct EngineFilter {
    deselected_engines: Vec<String>,
    max_workspace: Option<usize>,
    required_numeric: Vec<NumericalNote>,
    refused_numeric: Vec<NumericalNote>,
    refused_behavior: Vec<BehaviorNote>,
}

impl PartialEq for EngineFilter {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

fn names<T: Copy>(v: &[T], name: impl Fn(T) -> String) -> String {
    v.iter().map(|&n| name(n)).collect::<Vec<_>>().join(", ")
}

impl EngineFilter {
    /// Why `engine` (with `config`) may not build `op`: `Some(reason)` names the filter, or
    /// `None` when every filter set before the build passes.
    pub(crate) fn refuse_before_build(
        &self,
        engine: &dyn Engine,
        config: &EngineConfig,
        op: &OperationGraph,
        deterministic_only: bool,
    ) -> Option<String> {
        let name = engine.name();
        if self.deselected_engines.iter().any(|d| d == name) {
            return Some("deselected by name (deselect_engines)".into());
        }
        let notes = engine.numerical_notes(op, config);
        if deterministic_only && notes.contains(&NumericalNote::Nondeterministic) {
            return Some(
                "noted NONDETERMINISTIC and the handle is deterministic-only \
                 (Handle::set_deterministic_only)"
                    .into(),
            );
        }
        let refused: Vec<_> = self
            .refused_numeric
            .iter()
            .copied()
            .filter(|n| notes.contains(n))
            .collect();
        if !refused.is_empty() {
            return Some(format!(
                "noted {} (deselect_numeric_notes)",
                names(&refused, |n| n.name().to_string())
            ));
        }
        let missing: Vec<_> = self
            .required_numeric
            .iter()
            .copied()
            .filter(|n| !notes.contains(n))
            .collect();
        if !missing.is_empty() {
            return Some(format!(
                "not noted {} (select_numeric_notes)",
                names(&missing, |n| n.name().to_string())
            ));
        }
        let behavior = engine.behavior_notes(op);
        let refused: Vec<_> = self
            .refused_behavior
            .iter()
            .copied()
            .filter(|n| behavior.contains(n))
            .collect();
        if !refused.is_empty() {
            return Some(format!(
                "noted {} (deselect_behavior_notes)",
                names(&refused, |n| format!("{n:?}"))
            ));
        }
        None
    }

    /// Why a finalized plan needing `workspace` bytes is refused, or `None`.
    pub(crate) fn refuse_after_build(&self, workspace: usize) -> Option<String> {
        match self.max_workspace {
            Some(max) if workspace > max => Some(format!(
                "its plan needs a workspace of {workspace} bytes, more than {max} \
                 (deselect_workspace_greater_than)"
            )),
            _ => None,
        }
    }
}

/// Engine filters (cuDNN frontend's names), applied by the next [`Graph::build`] (and
/// `build_with`, `build_with_knobs`, `build_benchmarked`): an engine config the heuristic
/// offers is skipped when a filter refuses it, and when every config is skipped or fails, the
/// build error (`GRAPH_NOT_SUPPORTED`, "No engine is left after the engine filters: …") names
/// each engine with the filter that refused it. Filters stay set for later builds; they are
/// not saved with the graph and do not take part in `==`.
///
/// ```
/// # use hipdnn::*;
/// let mut g = Graph::new();
/// let x = g.tensor(TensorAttributes::new("x").uid(1).dims([2, 3]).data_type(DataType::Float));
/// let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
/// g.set_output(y, true).set_uid(y, 2);
/// let handle = Handle::cpu()?;
/// g.deselect_engines(["hipdnn.reference.cpu"]);
/// let err = g.build(&handle).unwrap_err();
/// assert_eq!(err.code, ErrorCode::GraphNotSupported);
/// assert!(err.message.contains("hipdnn.reference.cpu: deselected by name (deselect_engines)"));
/// g.clear_engine_filters().build(&handle)?;
/// # Ok::<(), hipdnn::Error>(())
/// ```
impl Graph {
    /// Skips the engines with these names (see [`crate::Handle::engine_names`]).
    pub fn deselect_engines<S: Into<String>>(
        &mut self,
        names: impl IntoIterator<Item = S>,
    ) -> &mut Self {
        self.filter
            .deselected_engines
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Skips plans whose workspace is larger than `bytes` (checked on the finalized plan, so a
    /// larger plan is built and dropped; `0` keeps only plans that need no workspace).
    pub fn deselect_workspace_greater_than(&mut self, bytes: usize) -> &mut Self {
        self.filter.max_workspace = Some(bytes);
        self
    }

    /// Keeps only engines whose numerical notes for this graph include every note listed
    /// ([`hipdnn_backend::Engine::numerical_notes`]).
    pub fn select_numeric_notes(
        &mut self,
        notes: impl IntoIterator<Item = NumericalNote>,
    ) -> &mut Self {
        self.filter.required_numeric.extend(notes);
        self
    }

    /// Skips engines whose numerical notes for this graph include any note listed (for
    /// example [`NumericalNote::Nondeterministic`], [`NumericalNote::DownConvertInputs`]).
    pub fn deselect_numeric_notes(
        &mut self,
        notes: impl IntoIterator<Item = NumericalNote>,
    ) -> &mut Self {
        self.filter.refused_numeric.extend(notes);
        self
    }

    /// Skips engines whose behavior notes for this graph include any note listed.
    pub fn deselect_behavior_notes(
        &mut self,
        notes: impl IntoIterator<Item = BehaviorNote>,
    ) -> &mut Self {
        self.filter.refused_behavior.extend(notes);
        self
    }

    /// Removes every engine filter set on this graph.
    pub fn clear_engine_filters(&mut self) -> &mut Self {
        self.filter = EngineFilter::default();
        self
    }
}
