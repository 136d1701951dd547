//! The `HDGP` graph-and-plan container codec: one buffer carrying a serialized `Graph` and,
//! optionally, a serialized execution plan (envelope).
//!
//! A leaf codec (like wgpu-core's `validate_pipeline_cache`): it takes bytes and returns
//! borrowed views of the graph and plan blobs, read once ([`read_container`],
//! [`GraphAndPlan::parse`]), or takes blobs and writes a container
//! ([`write_graph_and_plan`], [`write_graph_and_plan_into`]). It owns detecting, verifying,
//! cutting and writing containers and the content-flags query; it never parses the inner blobs
//! (the graph and the plan loaders do), knows no descriptor or engine, and keeps no copies.
//!
//! Wire format (upstream `flatbuffers_sdk/schemas/serialized_graph_and_plan.fbs`, reference
//! `backend-c-api.md` §6): a FlatBuffer, root table `SerializedGraphAndPlan { graph_blob:[ubyte]
//! (id 0); plan_blob:[ubyte] (id 1); }`, file identifier `"HDGP"` at bytes 4..8. The writer
//! places both blobs' **data 8-byte aligned relative to the buffer start** (upstream
//! `ForceVectorAlignment(size, 1, 8)`), because each blob is later read in place as a FlatBuffer
//! root holding 8-byte fields. The reader does not require that alignment (each blob is
//! verified and read as its own buffer with unaligned-safe loads).
//!
//! Detection order (reference §6.4): check the `HDGP` marker first, then treat the bytes as a
//! bare plan or bare graph — never the other way round, since the envelope verifier also
//! accepts an `HDGP` container.

use crate::status::{BackendError, BackendResult, Status};
use hipdnn_schema::graph_and_plan::SerializedGraphAndPlan;

/// The container's file identifier, at bytes 4..8.
pub const HDGP_IDENTIFIER: &[u8; 4] = b"HDGP";

/// `HIPDNN_SERIALIZED_CONTENT_GRAPH` (1): the bytes carry a graph.
pub const CONTENT_GRAPH: i32 = 1;

/// `HIPDNN_SERIALIZED_CONTENT_EXECUTION_PLAN` (2): the bytes carry an execution plan.
pub const CONTENT_EXECUTION_PLAN: i32 = 2;

/// Message of the `BAD_PARAM` for an identified container the verifier refuses (upstream text).
pub const UNVERIFIABLE_CONTAINER_MESSAGE: &str =
    "unable to verify the serialized graph-and-plan container";

/// True when `bytes` is at least 8 bytes long and bytes 4..8 are `"HDGP"` (upstream
/// `isSerializedGraphContainer`). Never fails and does not verify.
pub fn is_graph_and_plan_container(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && &bytes[4..8] == HDGP_IDENTIFIER
}

/// A verified container: borrowed slices of its two blobs (an empty blob reads as `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphAndPlan<'a> {
    graph: Option<&'a [u8]>,
    plan: Option<&'a [u8]>,
}

impl<'a> GraphAndPlan<'a> {
    /// Verifies `bytes` as an `HDGP` container and returns its blobs as slices of `bytes`.
    ///
    /// # Errors
    /// `BAD_PARAM` "unable to verify the serialized graph-and-plan container" when the bytes do
    /// not carry the `HDGP` marker, the FlatBuffers verifier refuses them (the text goes on
    /// with "truncated: L of at least N bytes" when the input ends early), or more than
    /// padding follows the container's last byte ("N trailing bytes after the container …").
    pub fn parse(bytes: &'a [u8]) -> BackendResult<Self> {
        if !is_graph_and_plan_container(bytes) {
            return Err(BackendError::new(
                Status::BadParam,
                format!("{UNVERIFIABLE_CONTAINER_MESSAGE}: no HDGP identifier"),
            ));
        }
        let root = flatbuffers::root::<SerializedGraphAndPlan>(bytes).map_err(|e| {
            let plain = crate::extent::truncation(bytes.len(), &e)
                .map_or_else(String::new, |t| format!("{t}; "));
            BackendError::new(
                Status::BadParam,
                format!("{UNVERIFIABLE_CONTAINER_MESSAGE}: {plain}{e}"),
            )
        })?;
        crate::extent::check_no_trailing(bytes, |p| {
            flatbuffers::root::<SerializedGraphAndPlan>(p).is_ok()
        })
        .map_err(|n| {
            BackendError::new(
                Status::BadParam,
                format!(
                    "{UNVERIFIABLE_CONTAINER_MESSAGE}: {}",
                    crate::extent::trailing_message("container", n, bytes.len() - n)
                ),
            )
        })?;
        let non_empty =
            |v: Option<flatbuffers::Vector<'a, u8>>| v.map(|v| v.bytes()).filter(|b| !b.is_empty());
        Ok(GraphAndPlan {
            graph: non_empty(root.graph_blob()),
            plan: non_empty(root.plan_blob()),
        })
    }

    /// The serialized `Graph` bytes, `None` when the blob is absent or empty.
    pub fn graph_blob(&self) -> Option<&'a [u8]> {
        self.graph
    }

    /// The serialized execution plan (envelope) bytes, `None` when absent or empty.
    pub fn plan_blob(&self) -> Option<&'a [u8]> {
        self.plan
    }

    /// The graph blob for a graph load.
    ///
    /// # Errors
    /// `BAD_PARAM` "container carries no graph" when the blob is absent or empty.
    pub fn require_graph(&self) -> BackendResult<&'a [u8]> {
        self.graph
            .ok_or_else(|| BackendError::new(Status::BadParam, "container carries no graph"))
    }

    /// The plan blob for a plan load.
    ///
    /// # Errors
    /// `BAD_PARAM` "container carries no execution plan …" when the blob is absent or empty.
    pub fn require_plan(&self) -> BackendResult<&'a [u8]> {
        self.plan.ok_or_else(|| {
            BackendError::new(
                Status::BadParam,
                "container carries no execution plan (it was saved from a graph without a plan)",
            )
        })
    }

    /// Content flags: [`CONTENT_GRAPH`] if the graph blob is non-empty, OR
    /// [`CONTENT_EXECUTION_PLAN`] if the plan blob is non-empty (0 when both are empty).
    pub fn content_flags(&self) -> i32 {
        let mut f = 0;
        if self.graph.is_some() {
            f |= CONTENT_GRAPH;
        }
        if self.plan.is_some() {
            f |= CONTENT_EXECUTION_PLAN;
        }
        f
    }
}

/// Reads `bytes` once as a possible container (reference §6.4, marker first): `Ok(None)` when
/// it is not an `HDGP` container (a bare graph or bare plan, left to its own loader), else the
/// verified container's blob views.
///
/// # Errors
/// `BAD_PARAM` [`UNVERIFIABLE_CONTAINER_MESSAGE`] for an identified but damaged container.
pub fn read_container(bytes: &[u8]) -> BackendResult<Option<GraphAndPlan<'_>>> {
    if !is_graph_and_plan_container(bytes) {
        return Ok(None);
    }
    GraphAndPlan::parse(bytes).map(Some)
}

/// The plan part of `bytes` for a plan load (reference §6.4): the container's plan blob, or
/// `bytes` itself when it is not a container (a bare plan passes through).
///
/// # Errors
/// `BAD_PARAM` [`UNVERIFIABLE_CONTAINER_MESSAGE`] for an identified but damaged container;
/// `BAD_PARAM` "container carries no execution plan" for a container with an absent or empty
/// plan blob.
pub fn plan_part(bytes: &[u8]) -> BackendResult<&[u8]> {
    match read_container(bytes)? {
        None => Ok(bytes),
        Some(c) => c.require_plan(),
    }
}

/// The graph part of `bytes` for a graph load (reference §6.4): the container's graph blob, or
/// `bytes` itself when it is not a container (a bare graph passes through; the graph verifier
/// decides).
///
/// # Errors
/// `BAD_PARAM` [`UNVERIFIABLE_CONTAINER_MESSAGE`] for an identified but damaged container;
/// `BAD_PARAM` "container carries no graph" for a container with an absent or empty graph blob.
pub fn graph_part(bytes: &[u8]) -> BackendResult<&[u8]> {
    match read_container(bytes)? {
        None => Ok(bytes),
        Some(c) => c.require_graph(),
    }
}

/// `hipdnnBackendGetSerializedBinaryContents_ext` (reference §6.5): for an `HDGP` container,
/// the flags of [`GraphAndPlan::content_flags`]; for anything else (including fewer than 8
/// bytes and bare plans) [`CONTENT_GRAPH`], unverified. Bare plans must not be routed here.
///
/// # Errors
/// `BAD_PARAM` [`UNVERIFIABLE_CONTAINER_MESSAGE`] for an identified but damaged container.
pub fn serialized_contents(bytes: &[u8]) -> BackendResult<i32> {
    Ok(read_container(bytes)?.map_or(CONTENT_GRAPH, |c| c.content_flags()))
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn pad_to(out: &mut Vec<u8>, pos: usize) {
    debug_assert!(out.len() <= pos);
    out.resize(pos, 0);
}

/// Writes an `HDGP` container holding `graph` and, when `plan` is `Some` and non-empty,
/// `plan` (otherwise a graph-only container, which still carries `"HDGP"`).
///
/// Layout (little-endian, offsets from the buffer start; a valid FlatBuffer that passes the
/// generated verifier and `flatc`):
///
/// | offset | content |
/// |---|---|
/// | 0 | root uoffset = 16 |
/// | 4 | `"HDGP"` |
/// | 8 | vtable: size 8, table size (8 or 12), graph field @4, plan field @8 or 0 (absent) |
/// | 16 | table: soffset 8 to the vtable, graph uoffset, \[plan uoffset\] |
/// | 28 | graph length (u32); graph data at 32 (8-aligned) |
/// | q | plan length at `q` with `(q + 4) % 8 == 0`; plan data at `q + 4` (8-aligned) |
///
/// Blob lengths must fit in `u32` (FlatBuffers' 2 GiB limit); the function panics otherwise.
pub fn write_graph_and_plan(graph: &[u8], plan: Option<&[u8]>) -> Vec<u8> {
    let plan = plan.filter(|p| !p.is_empty());
    let blob_len = |b: &[u8]| -> u32 {
        u32::try_from(b.len())
            .ok()
            .filter(|&l| l < i32::MAX as u32 - 64)
            .expect("a graph-and-plan blob must be smaller than 2 GiB")
    };
    let graph_len = blob_len(graph);
    let plan_len = plan.map(blob_len);
    let mut out = Vec::with_capacity(48 + graph.len() + plan.map_or(0, <[u8]>::len));
    // Root offset and identifier.
    put_u32(&mut out, 16);
    out.extend_from_slice(HDGP_IDENTIFIER);
    // vtable @8.
    out.extend_from_slice(&8u16.to_le_bytes());
    out.extend_from_slice(&(if plan.is_some() { 12u16 } else { 8u16 }).to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&(if plan.is_some() { 8u16 } else { 0u16 }).to_le_bytes());
    // table @16: soffset (table - vtable = 8).
    out.extend_from_slice(&8i32.to_le_bytes());
    let graph_field = out.len(); // 20
    put_u32(&mut out, 0); // patched below
    let plan_field = out.len(); // 24
    if plan.is_some() {
        put_u32(&mut out, 0); // patched below
    }
    // Graph vector: length @28, data @32.
    pad_to(&mut out, 28);
    let graph_vec = out.len();
    put_u32(&mut out, graph_len);
    out.extend_from_slice(graph);
    patch_uoffset(&mut out, graph_field, graph_vec);
    if let (Some(plan), Some(plan_len)) = (plan, plan_len) {
        let q = (out.len() + 4).next_multiple_of(8) - 4;
        pad_to(&mut out, q);
        put_u32(&mut out, plan_len);
        out.extend_from_slice(plan);
        patch_uoffset(&mut out, plan_field, q);
    }
    // Keep the total size a multiple of 4, as FlatBuffers builders do.
    let end = out.len().next_multiple_of(4);
    pad_to(&mut out, end);
    out
}

fn patch_uoffset(out: &mut [u8], field: usize, target: usize) {
    let off = u32::try_from(target - field).expect("offset fits in u32");
    out[field..field + 4].copy_from_slice(&off.to_le_bytes());
}

/// Two-call graph-and-plan save (upstream `hipdnnBackendGetSerializedBinaryGraphAndPlan_ext`,
/// reference §6.3): the container of the blobs `graph` and `plan` (for a plan, its serialized
/// bytes, e.g. `ExecutionPlanDescriptor::serialized_bytes`; for a loaded plan, the bytes it
/// was loaded from), as [`write_graph_and_plan`] writes it. `out == None` returns the size
/// only; `Some(buf)` writes the container into `buf[..size]`. Nothing is cached (the graph may
/// differ between calls).
///
/// # Errors
/// `BAD_PARAM_SIZE_INSUFFICIENT` with [`BackendError::required_size`] when `buf` is shorter
/// than the container (`buf` untouched).
pub fn write_graph_and_plan_into(
    graph: &[u8],
    plan: Option<&[u8]>,
    out: Option<&mut [u8]>,
) -> BackendResult<usize> {
    let container = write_graph_and_plan(graph, plan);
    if let Some(buf) = out {
        if buf.len() < container.len() {
            return Err(BackendError::size_insufficient(
                "serialized graph-and-plan container",
                buf.len(),
                container.len(),
            ));
        }
        buf[..container.len()].copy_from_slice(&container);
    }
    Ok(container.len())
}
