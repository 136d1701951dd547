//! The bare `Graph` FlatBuffer (schema `graph.fbs`, root `Graph`, no file identifier).
//!
//! Writer: tensors in arena order, nodes in (stable) topological order, empty strings absent,
//! vectors always present, optional (`= null`) fields present exactly when `Some`, plain scalars
//! omitted when equal to their schema default (flatc's rule). Reader: FlatBuffers verifier
//! first, then the hand-written `TensorValue` check, then UID resolution; any failure is an
//! `InvalidValue` error and no graph is returned.

use std::collections::HashMap;

use flatbuffers::{FlatBufferBuilder, WIPOffset};
use hipdnn_schema::graph as wire;
use hipdnn_schema::tensor_value::{add_tensor_value, push_tensor_value, read_tensor_value};

use super::error::{Error, Result};
use super::kinds::{Rctx, Wctx, enum_read};
use super::tensor::{TensorAttributes, TensorId};
use super::types::{EngineApiVersion, SchemaEnum};
use super::{Graph, Operation};

/// Message prefix of bytes that are not a `Graph` FlatBuffer at all (empty, too short, or a
/// root table with neither `tensors` nor `nodes`, which every writer emits).
pub const NOT_A_GRAPH: &str = "not a hipDNN graph";

/// Fewest bytes of a `Graph` FlatBuffer: root offset, vtable header and an empty table.
const MIN_GRAPH_LEN: usize = 12;

impl Graph {
    /// Serializes the graph as a bare `Graph` FlatBuffer (the graph part of
    /// upstream `to_binary()` and of the HDGP container).
    ///
    /// Layout: tensors in insertion order; nodes in topological order (stable: among ready
    /// nodes the earliest inserted first, so an already-ordered graph keeps its order). The
    /// output is deterministic: the same graph always gives the same bytes, and
    /// `Graph::from_graph_bytes(&b)?.to_graph_bytes()? == b`.
    ///
    /// This does **not** run [`Graph::validate`] (a graph can be saved before its shapes are
    /// complete); it checks only what the wire format needs.
    ///
    /// A tensor without a UID is written with the one [`Graph::assign_uids`] would give it
    /// (deterministic, as `build` assigns; the graph is not changed).
    ///
    /// # Errors
    /// `AttributeNotSet` if a node lacks a required tensor; `InvalidValue` for duplicate UIDs
    /// ("Duplicate tensor UIDs found in the graph"), a handle from another graph, or a cycle.
    pub fn to_graph_bytes(&self) -> Result<Vec<u8>> {
        let uids = self.checked_uids()?;
        let order = self.topological_order()?;
        let mut fbb =
            FlatBufferBuilder::with_capacity(1024 + 160 * (self.tensors.len() + self.nodes.len()));

        let mut tensor_offsets = Vec::with_capacity(self.tensors.len());
        for (i, t) in self.tensors.iter().enumerate() {
            tensor_offsets.push(write_tensor(&mut fbb, t, &uids, i)?);
        }
        let mut node_offsets = Vec::with_capacity(order.len());
        for n in order {
            let op = &self.nodes[n.index()];
            let label = format!("{} '{}'", op.method(), op.name());
            let c = Wctx {
                uids: &uids,
                label: &label,
            };
            let (attributes_type, attributes) = op.wire_write(&mut fbb, &c)?;
            let name = (!op.name().is_empty()).then(|| fbb.create_string(op.name()));
            node_offsets.push(wire::Node::create(
                &mut fbb,
                &wire::NodeArgs {
                    name,
                    compute_data_type: op.compute_data_type().to_wire(),
                    attributes_type,
                    attributes: Some(attributes),
                },
            ));
        }
        let name = (!self.name.is_empty()).then(|| fbb.create_string(&self.name));
        let tensors = fbb.create_vector(&tensor_offsets);
        let nodes = fbb.create_vector(&node_offsets);
        let version = self
            .min_required_engine_api_version
            .map(|v| wire::EngineApiVersion::new(v.major, v.minor, v.patch));
        let id = self.id.map(|b| wire::Uuid::new(&b));
        let root = wire::Graph::create(
            &mut fbb,
            &wire::GraphArgs {
                name,
                compute_data_type: self.compute_data_type.to_wire(),
                intermediate_data_type: self.intermediate_data_type.to_wire(),
                io_data_type: self.io_data_type.to_wire(),
                tensors: Some(tensors),
                nodes: Some(nodes),
                preferred_engine_id: self.preferred_engine_id,
                is_override_shape_enabled: self.override_shape_enabled,
                min_required_engine_api_version: version.as_ref(),
                id: id.as_ref(),
            },
        );
        fbb.finish(root, None);
        Ok(fbb.finished_data().to_vec())
    }

    /// Loads a graph from a bare `Graph` FlatBuffer (as written by [`Graph::to_graph_bytes`],
    /// `flatc -b`, or upstream's packer).
    ///
    /// Runs the FlatBuffers verifier (`flatbuffers::root::<Graph>`) and the `TensorValue`
    /// check of every tensor before reading anything; never panics on damaged input. Tensor
    /// and node order are kept as stored. Semantic rules are not checked (call
    /// [`Graph::validate`]).
    ///
    /// # Errors
    /// `InvalidValue` "not a hipDNN graph: …" for fewer than 12 bytes or a root with neither
    /// tensors nor nodes (e.g. four zero bytes); "graph bytes failed FlatBuffers verification:
    /// …" (with "truncated: L of at least N bytes" first when the input ends early); "graph
    /// bytes are followed by other bytes: N trailing bytes after the graph of U bytes";
    /// `InvalidValue` when verification fails, a tensor value is malformed, an enum value or
    /// union type is unknown, two tensors share a UID ("Duplicate tensor UIDs found in the
    /// graph"), or a node / ragged offset references a UID no tensor has.
    pub fn from_graph_bytes(data: &[u8]) -> Result<Graph> {
        if data.len() < MIN_GRAPH_LEN {
            return Err(Error::invalid(format!(
                "{NOT_A_GRAPH}: {} bytes are too few for a Graph FlatBuffer",
                data.len()
            )));
        }
        let g = flatbuffers::root::<wire::Graph>(data).map_err(|e| {
            let plain = hipdnn_backend::extent::truncation(data.len(), &e)
                .map_or_else(String::new, |t| format!("{t}; "));
            Error::invalid(format!(
                "graph bytes failed FlatBuffers verification: {plain}{e}"
            ))
        })?;
        if g.tensors().is_none() && g.nodes().is_none() {
            return Err(Error::invalid(format!(
                "{NOT_A_GRAPH}: the Graph root has neither tensors nor nodes"
            )));
        }
        hipdnn_backend::graph::check_graph_length(data)
            .map_err(|m| Error::invalid(format!("graph bytes are followed by other bytes: {m}")))?;
        Self::from_verified(g)
    }

    /// Reads a graph the backend has verified already ([`hipdnn_backend::OperationGraph::
    /// graph`]: FlatBuffers verifier, `TensorValue` check, no trailing bytes, at least one
    /// node), so a load verifies its graph bytes once. The reading rules and errors after
    /// verification are those of [`Graph::from_graph_bytes`].
    ///
    /// # Errors
    /// As [`Graph::from_graph_bytes`] after its verification steps.
    pub(crate) fn from_verified(g: wire::Graph<'_>) -> Result<Graph> {
        let graph_label = "graph";
        let no_uids = HashMap::new();
        let gc = Rctx {
            by_uid: &no_uids,
            label: graph_label,
        };

        let wire_tensors: Vec<wire::TensorAttributes<'_>> =
            g.tensors().map(|v| v.iter().collect()).unwrap_or_default();
        let mut by_uid = HashMap::with_capacity(wire_tensors.len());
        for (i, t) in wire_tensors.iter().enumerate() {
            if by_uid.insert(t.uid(), TensorId(i as u32)).is_some() {
                return Err(Error::invalid(format!(
                    "Duplicate tensor UIDs found in the graph (UID {} at tensor #{i})",
                    t.uid()
                )));
            }
        }
        let mut tensors = Vec::with_capacity(wire_tensors.len());
        for (i, t) in wire_tensors.iter().enumerate() {
            let label = format!("tensor #{i} '{}'", t.name().unwrap_or_default());
            let c = Rctx {
                by_uid: &by_uid,
                label: &label,
            };
            let value =
                read_tensor_value(t).map_err(|e| Error::invalid(format!("{label}: value: {e}")))?;
            let ragged_offset = match t.ragged_offset_tensor_uid() {
                None => None,
                Some(u) => Some(*by_uid.get(&u).ok_or_else(|| {
                    Error::invalid(format!(
                        "{label}: attribute 'ragged_offset_tensor_uid' references UID {u} which no tensor of the graph has"
                    ))
                })?),
            };
            tensors.push(TensorAttributes {
                uid: Some(t.uid()),
                name: t.name().unwrap_or_default().to_owned(),
                data_type: enum_read(t.data_type(), &c, "data_type")?,
                dims: t.dims().map(|v| v.iter().collect()).unwrap_or_default(),
                strides: t.strides().map(|v| v.iter().collect()).unwrap_or_default(),
                is_virtual: t.virtual_(),
                value,
                is_runtime_pass_by_value: t.is_runtime_pass_by_value(),
                ragged_offset,
                alignment: t.alignment(),
            });
        }
        let mut nodes = Vec::new();
        if let Some(ns) = g.nodes() {
            nodes.reserve(ns.len());
            for (i, n) in ns.iter().enumerate() {
                let label = format!("node #{i} '{}'", n.name().unwrap_or_default());
                let c = Rctx {
                    by_uid: &by_uid,
                    label: &label,
                };
                nodes.push(Operation::wire_read(&n, &c)?);
            }
        }
        Ok(Graph {
            name: g.name().unwrap_or_default().to_owned(),
            compute_data_type: enum_read(g.compute_data_type(), &gc, "compute_data_type")?,
            intermediate_data_type: enum_read(
                g.intermediate_data_type(),
                &gc,
                "intermediate_data_type",
            )?,
            io_data_type: enum_read(g.io_data_type(), &gc, "io_data_type")?,
            tensors,
            nodes,
            preferred_engine_id: g.preferred_engine_id(),
            override_shape_enabled: g.is_override_shape_enabled(),
            min_required_engine_api_version: g.min_required_engine_api_version().map(|v| {
                EngineApiVersion {
                    major: v.major(),
                    minor: v.minor(),
                    patch: v.patch(),
                }
            }),
            id: g.id().map(|u| {
                let mut b = [0u8; 16];
                for (dst, src) in b.iter_mut().zip(u.bytes().iter()) {
                    *dst = src;
                }
                b
            }),
            compiled: Default::default(),
            filter: Default::default(),
        })
    }
}

/// Writes one `TensorAttributes` table by hand (the generated builder cannot add the
/// `TensorValue` union). Slot order mimics flatc's `Create` (widest first).
fn write_tensor<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    t: &TensorAttributes,
    uids: &[i64],
    index: usize,
) -> Result<WIPOffset<wire::TensorAttributes<'a>>> {
    type W<'x> = wire::TensorAttributes<'x>;
    let ragged = match t.ragged_offset {
        None => None,
        Some(r) => Some(*uids.get(r.index()).ok_or_else(|| {
            Error::invalid(format!(
                "tensor #{index} '{}': ragged offset refers to tensor #{} which is not in this graph",
                t.name,
                r.index()
            ))
        })?),
    };
    let value = t.value.map(|v| push_tensor_value(fbb, v));
    let name = (!t.name.is_empty()).then(|| fbb.create_string(&t.name));
    let dims = fbb.create_vector(&t.dims);
    let strides = fbb.create_vector(&t.strides);
    let start = fbb.start_table();
    fbb.push_slot::<i64>(
        W::VT_ALIGNMENT,
        t.alignment,
        super::tensor::DEFAULT_ALIGNMENT,
    );
    if let Some(r) = ragged {
        fbb.push_slot_always::<i64>(W::VT_RAGGED_OFFSET_TENSOR_UID, r);
    }
    fbb.push_slot::<i64>(W::VT_UID, uids[index], 0);
    if let Some(v) = value {
        add_tensor_value(fbb, v);
    }
    fbb.push_slot_always::<WIPOffset<_>>(W::VT_DIMS, dims);
    fbb.push_slot_always::<WIPOffset<_>>(W::VT_STRIDES, strides);
    if let Some(n) = name {
        fbb.push_slot_always::<WIPOffset<_>>(W::VT_NAME, n);
    }
    fbb.push_slot::<bool>(
        W::VT_IS_RUNTIME_PASS_BY_VALUE,
        t.is_runtime_pass_by_value,
        false,
    );
    fbb.push_slot::<bool>(W::VT_VIRTUAL_, t.is_virtual, false);
    fbb.push_slot::<wire::DataType>(
        W::VT_DATA_TYPE,
        t.data_type.to_wire(),
        wire::DataType::UNSET,
    );
    let end = fbb.end_table(start);
    Ok(WIPOffset::new(end.value()))
}
