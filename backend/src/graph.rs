//! The backend's operation graph: a verified `Graph` FlatBuffer and the facts the backend needs
//! from it (tensor UIDs and alignments for plans, override-shape flag, preferred engine).
//!
//! Built from bytes, as upstream's `hipdnnBackendCreateAndDeserializeGraph_ext` does. This
//! module owns verification of untrusted graph bytes; it never interprets operations (engines
//! do, from [`OperationGraph::graph`]).

use crate::bytes::SharedBytes;
use crate::status::{BackendError, BackendResult, Status};
use hipdnn_schema::graph::Graph;
use hipdnn_schema::tensor_value::read_tensor_value;

/// Tensor UID → `(dims, strides)` in elements: the shapes
/// [`OperationGraph::with_tensor_shapes`] writes.
pub type TensorShapes = std::collections::HashMap<i64, (Vec<i64>, Vec<i64>)>;

/// A verified serialized graph.
///
/// Its bytes are a [`SharedBytes`] buffer: [`OperationGraph::from_bytes`] makes one copy of
/// borrowed input, [`OperationGraph::from_shared`] keeps a view of a buffer the caller owns
/// already (a loaded container's graph part, a graph serialized for this call) without
/// copying, and a clone shares the buffer.
#[derive(Debug, Clone)]
pub struct OperationGraph {
    bytes: SharedBytes,
    tensor_uids: Vec<i64>,
    tensor_alignments: Vec<i64>,
    is_override_shape_enabled: bool,
    preferred_engine_id: Option<i64>,
}

impl OperationGraph {
    /// Verifies `bytes` as a bare `Graph` FlatBuffer and keeps a copy. An `HDGP` container is
    /// cut by the container codec first ([`crate::hdgp::graph_part`]); a bare execution plan
    /// given here is refused because the Graph verifier or the no-nodes check refuses it
    /// (neither format has an identifier).
    ///
    /// Tensor identities are collected in buffer order: `uid`, and alignment `0` for a runtime
    /// pass-by-value tensor, else its `alignment` (reference `backend-c-api.md` §4.2 step 3).
    ///
    /// # Errors
    /// `BAD_PARAM` "serialized graph is invalid: …" when the FlatBuffers verifier (or the
    /// `TensorValue` union check) fails ("truncated: L of at least N bytes; …" when the input
    /// ends early), when the graph has no nodes, or when more than padding follows the graph's
    /// last byte ("N trailing bytes after the graph of U bytes").
    pub fn from_bytes(bytes: &[u8]) -> BackendResult<Self> {
        let facts = GraphFacts::read(bytes)?;
        Ok(facts.keeping(SharedBytes::copy_from_slice(bytes)))
    }

    /// [`Self::from_bytes`] for bytes the caller holds in a shared buffer (a view of a loaded
    /// container's graph part, a graph serialized for this call): the same checks and errors,
    /// and the graph keeps `bytes` itself (no copy).
    ///
    /// # Errors
    /// As [`Self::from_bytes`].
    pub fn from_shared(bytes: SharedBytes) -> BackendResult<Self> {
        let facts = GraphFacts::read(&bytes)?;
        Ok(facts.keeping(bytes))
    }

    /// The serialized `Graph` bytes, exactly as given.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Typed read access to the verified graph.
    pub fn graph(&self) -> Graph<'_> {
        // SAFETY: `self.bytes` passed `flatbuffers::root::<Graph>` (the verifier) in
        // `GraphFacts::read` before this value was built, and a `SharedBytes` view is never
        // mutated (it reads an immutable `Arc<[u8]>`).
        unsafe { flatbuffers::root_unchecked::<Graph>(&self.bytes) }
    }

    /// Tensor UIDs in buffer order.
    pub fn tensor_uids(&self) -> &[i64] {
        &self.tensor_uids
    }

    /// Tensor alignments (bytes) parallel to [`Self::tensor_uids`]; 0 = not enforced.
    pub fn tensor_alignments(&self) -> &[i64] {
        &self.tensor_alignments
    }

    /// The graph's `is_override_shape_enabled` flag.
    pub fn is_override_shape_enabled(&self) -> bool {
        self.is_override_shape_enabled
    }

    /// The graph's preferred engine id, when set.
    pub fn preferred_engine_id(&self) -> Option<i64> {
        self.preferred_engine_id
    }

    /// This graph with other dims and strides for some tensors, everything else byte for
    /// byte the same: `shapes` maps a tensor UID to its new `(dims, strides)` (in elements),
    /// each of the tensor's rank (what execute-time shape overrides keep, RFC 0008), so the
    /// values are rewritten in place in a copy of the bytes; the copy is verified again.
    ///
    /// # Errors
    /// `BAD_PARAM` "shape override: tensor uid N: …" for a UID the graph does not have, or
    /// whose new dims or strides have another length than its own.
    pub fn with_tensor_shapes(&self, shapes: &TensorShapes) -> BackendResult<OperationGraph> {
        let refuse = |uid: i64, m: String| {
            BackendError::new(
                Status::BadParam,
                format!("shape override: tensor uid {uid}: {m}"),
            )
        };
        let base = self.bytes.as_ptr() as usize;
        let mut out = self.bytes.to_vec();
        let mut found = 0usize;
        // Where each tensor's dims and strides lie: a writer may share one vector between
        // tensors (identical shapes), which an in-place rewrite would change for both.
        let mut ranges: std::collections::HashMap<usize, usize> = Default::default();
        for t in self.graph().tensors().into_iter().flatten() {
            for v in [t.dims(), t.strides()].into_iter().flatten() {
                *ranges.entry(v.bytes().as_ptr() as usize).or_default() += 1;
            }
        }
        for t in self.graph().tensors().into_iter().flatten() {
            let Some((dims, strides)) = shapes.get(&t.uid()) else {
                continue;
            };
            found += 1;
            for (what, old, new) in [("dims", t.dims(), dims), ("strides", t.strides(), strides)] {
                let old = old.map(|v| v.bytes()).unwrap_or_default();
                if old.len() != new.len() * 8 {
                    return Err(refuse(
                        t.uid(),
                        format!(
                            "{what} {new:?} have {} entries, the graph's tensor {}",
                            new.len(),
                            old.len() / 8
                        ),
                    ));
                }
                if old.is_empty() {
                    continue;
                }
                if ranges.get(&(old.as_ptr() as usize)).copied().unwrap_or(0) > 1 {
                    return Err(refuse(
                        t.uid(),
                        format!(
                            "its {what} share their storage with another tensor's in the \
                             serialized graph, so they cannot be rewritten alone"
                        ),
                    ));
                }
                // The vector's bytes lie inside `self.bytes` (the verified buffer they were
                // read from): their offset there is where the copy is rewritten.
                let at = old.as_ptr() as usize - base;
                for (i, v) in new.iter().enumerate() {
                    out[at + 8 * i..at + 8 * i + 8].copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        if found < shapes.len() {
            let missing = shapes
                .keys()
                .find(|u| !self.tensor_uids.contains(u))
                .copied()
                .unwrap_or(0);
            return Err(refuse(missing, "not a tensor of the graph".into()));
        }
        OperationGraph::from_bytes(&out)
    }
}

/// What [`OperationGraph`] reads from its bytes, verified once, before it keeps them.
struct GraphFacts {
    tensor_uids: Vec<i64>,
    tensor_alignments: Vec<i64>,
    is_override_shape_enabled: bool,
    preferred_engine_id: Option<i64>,
}

impl GraphFacts {
    /// The checks and errors of [`OperationGraph::from_bytes`].
    fn read(bytes: &[u8]) -> BackendResult<Self> {
        let invalid = |m: String| {
            BackendError::new(
                Status::BadParam,
                format!("serialized graph is invalid: {m}"),
            )
        };
        let graph = flatbuffers::root::<Graph>(bytes).map_err(|e| {
            invalid(match crate::extent::truncation(bytes.len(), &e) {
                Some(t) => format!("{t}; {e}"),
                None => e.to_string(),
            })
        })?;
        if graph.nodes().is_none_or(|n| n.is_empty()) {
            return Err(BackendError::new(
                Status::BadParam,
                "serialized graph is invalid: the graph has no nodes",
            ));
        }
        check_graph_length(bytes).map_err(invalid)?;
        let mut tensor_uids = Vec::new();
        let mut tensor_alignments = Vec::new();
        if let Some(tensors) = graph.tensors() {
            for t in tensors.iter() {
                read_tensor_value(&t).map_err(|e| {
                    BackendError::new(
                        Status::BadParam,
                        format!("serialized graph is invalid: tensor {}: {e}", t.uid()),
                    )
                })?;
                tensor_uids.push(t.uid());
                tensor_alignments.push(if t.is_runtime_pass_by_value() {
                    0
                } else {
                    t.alignment()
                });
            }
        }
        Ok(GraphFacts {
            tensor_uids,
            tensor_alignments,
            is_override_shape_enabled: graph.is_override_shape_enabled(),
            preferred_engine_id: graph.preferred_engine_id(),
        })
    }

    /// The graph of these facts, keeping `bytes` (the bytes they were read from).
    fn keeping(self, bytes: SharedBytes) -> OperationGraph {
        OperationGraph {
            bytes,
            tensor_uids: self.tensor_uids,
            tensor_alignments: self.tensor_alignments,
            is_override_shape_enabled: self.is_override_shape_enabled,
            preferred_engine_id: self.preferred_engine_id,
        }
    }
}

/// True when `bytes` verifies as a `Graph` and every tensor's `TensorValue` (which the
/// generated verifier skips) reads inside `bytes`.
pub fn graph_verifies(bytes: &[u8]) -> bool {
    flatbuffers::root::<Graph>(bytes).is_ok_and(|g| {
        g.tensors()
            .is_none_or(|ts| ts.iter().all(|t| read_tensor_value(&t).is_ok()))
    })
}

/// Refuses a verified `Graph` buffer followed by more than padding.
///
/// # Errors
/// "N trailing bytes after the graph of U bytes".
pub fn check_graph_length(bytes: &[u8]) -> Result<(), String> {
    crate::extent::check_no_trailing(bytes, graph_verifies)
        .map(|_| ())
        .map_err(|n| crate::extent::trailing_message("graph", n, bytes.len() - n))
}
