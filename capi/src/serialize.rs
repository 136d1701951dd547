//! The serialization `_ext` functions: graph binary and JSON, execution plan, the `HDGP`
//! graph-and-plan container and its content flags, and the engine-ranking write.
//!
//! Everything is built on the SDK and backend codecs, so bytes written here load in Rust
//! (`hipdnn::Graph::from_binary`, `from_compiled_plan_binary`) and the reverse, and re-save
//! byte-identically: a deserialized graph keeps the exact bytes it came from, a loaded plan
//! returns its loaded bytes, and the container writer is the backend's
//! (`hdgp::write_graph_and_plan`), the one `Graph::to_binary` uses.

use crate::abi::dt;
use crate::desc::graph_and_bytes;
use crate::error::{Ffi, bytes_in, copy_out, entry, err, non_null};
use crate::handle::{HipdnnHandle, handle};
use crate::state::{
    Desc, FinalPlan, GraphDesc, HipdnnBackendDescriptor, desc, register, type_name,
};
use hipdnn::Graph;
use hipdnn_backend::{ExecutionPlanDescriptor, Status, hdgp};
use std::ffi::c_char;
use std::sync::Arc;

fn sdk_bad_param(what: &str, e: hipdnn::Error) -> crate::error::BackendErrorAlias {
    match e.cause.as_deref() {
        Some(hipdnn::Cause::Backend(b)) => err(b.status, format!("{what}: {}", b.message)),
        _ => err(Status::BadParam, format!("{what}: {e}")),
    }
}

/// The graph's bytes and SDK graph of the OPERATIONGRAPH at `d` (finalized or not).
/// An SDK JSON-codec error as the C ABI's: `GraphNotSupported` (a ragged-offset multiplier
/// other than 1) → NOT_SUPPORTED, anything else → BAD_PARAM; the message is the SDK's, unchanged.
fn json_error(e: hipdnn::Error) -> crate::error::BackendErrorAlias {
    let status = match e.code {
        hipdnn::ErrorCode::GraphNotSupported => Status::NotSupported,
        _ => Status::BadParam,
    };
    err(status, e.message)
}

/// The graph's bytes and SDK graph of the OPERATIONGRAPH at `d` (finalized or not).
fn graph_of(d: *const HipdnnBackendDescriptor) -> Ffi<(Graph, Vec<u8>)> {
    let obj = desc(d)?;
    if obj.dtype != dt::OPERATIONGRAPH {
        return Err(err(
            Status::BadParam,
            format!(
                "an OPERATIONGRAPH descriptor is needed, got {}",
                type_name(obj.dtype)
            ),
        ));
    }
    let s = obj.lock();
    let Desc::Graph(g) = &*s else {
        return Err(err(
            Status::InternalError,
            "OPERATIONGRAPH without graph state",
        ));
    };
    graph_and_bytes(g, false)
}

/// The finalized plan at `d`: invalid → NULL_POINTER, wrong type → BAD_PARAM, not finalized
/// → NOT_INITIALIZED.
fn plan_of(d: *const HipdnnBackendDescriptor) -> Ffi<Arc<FinalPlan>> {
    let obj = desc(d)?;
    if obj.dtype != dt::EXECUTION_PLAN {
        return Err(err(
            Status::BadParam,
            format!(
                "an EXECUTION_PLAN descriptor is needed, got {}",
                type_name(obj.dtype)
            ),
        ));
    }
    match &*obj.lock() {
        Desc::Plan { fin: Some(f), .. } => Ok(f.clone()),
        _ => Err(err(
            Status::NotInitialized,
            "the execution plan is not finalized",
        )),
    }
}

fn new_graph_desc(out: *mut *mut HipdnnBackendDescriptor, graph: Graph, bytes: Vec<u8>) {
    let addr = register(
        dt::OPERATIONGRAPH,
        Desc::Graph(Box::new(GraphDesc {
            loaded: Some((graph, bytes)),
            ..GraphDesc::default()
        })),
    );
    // SAFETY: `out` was checked non-null by the caller of this helper; valid for a write.
    unsafe { *out = addr as *mut HipdnnBackendDescriptor };
}

/// `hipdnnBackendCreateAndDeserializeGraph_ext`: an **unfinalized** OPERATIONGRAPH from a bare
/// `Graph` FlatBuffer or an `HDGP` container (its graph part; the plan part is ignored). The
/// descriptor keeps the exact graph bytes, so they serialize back unchanged. Null output or
/// bytes → NULL_POINTER; size 0, a damaged container, a container without a graph, or bytes
/// that do not verify as a Graph (e.g. a bare plan) → BAD_PARAM, and `*descriptor` is
/// untouched.
///
/// # Safety
/// `out` null or valid for a write; `bytes` null or valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendCreateAndDeserializeGraph_ext(
    out: *mut *mut HipdnnBackendDescriptor,
    bytes: *const u8,
    len: usize,
) -> Status {
    entry("hipdnnBackendCreateAndDeserializeGraph_ext", || {
        non_null(out, "the descriptor output pointer")?;
        // SAFETY: caller contract.
        let b = unsafe { bytes_in(bytes, len, "serializedGraph")? };
        if b.is_empty() {
            return Err(err(Status::BadParam, "graphByteSize is 0"));
        }
        let blob = hdgp::graph_part(b)?;
        let graph = Graph::from_graph_bytes(blob).map_err(|e| sdk_bad_param("graph", e))?;
        new_graph_desc(out, graph, blob.to_vec());
        Ok(())
    })
}

/// `hipdnnBackendGetSerializedBinaryGraph_ext`: the bare `Graph` FlatBuffer, two-call (the
/// graph need not be finalized). Invalid descriptor or null size → NULL_POINTER; not an
/// OPERATIONGRAPH → BAD_PARAM; short buffer → BAD_PARAM_SIZE_INSUFFICIENT.
///
/// # Safety
/// `size` null or valid; `out` null or valid for `requested` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendGetSerializedBinaryGraph_ext(
    d: *mut HipdnnBackendDescriptor,
    requested: usize,
    size: *mut usize,
    out: *mut u8,
) -> Status {
    entry("hipdnnBackendGetSerializedBinaryGraph_ext", || {
        let (_, bytes) = graph_of(d)?;
        // SAFETY: caller contract.
        unsafe { copy_out(&bytes, requested, size, out) }
    })
}

/// `hipdnnBackendGetSerializedJsonGraph_ext`: the graph as JSON in upstream's format
/// ([`hipdnn::Graph::to_json`], the SDK's writer: byte-identical to upstream's), two-call; the
/// size includes the NUL terminator. Every node kind is covered; duplicate UIDs → BAD_PARAM.
///
/// # Safety
/// `size` null or valid; `out` null or valid for `requested` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendGetSerializedJsonGraph_ext(
    d: *mut HipdnnBackendDescriptor,
    requested: usize,
    size: *mut usize,
    out: *mut c_char,
) -> Status {
    entry("hipdnnBackendGetSerializedJsonGraph_ext", || {
        let (graph, _) = graph_of(d)?;
        let mut json = graph.to_json().map_err(json_error)?.into_bytes();
        json.push(0);
        // SAFETY: caller contract.
        unsafe { copy_out(&json, requested, size, out.cast::<u8>()) }
    })
}

/// `hipdnnBackendCreateAndDeserializeJsonGraph_ext`: an unfinalized OPERATIONGRAPH from JSON in
/// upstream's format ([`hipdnn::Graph::from_json`], the SDK's reader: unknown keys accepted; unknown enum spellings,
/// node types and duplicate keys refused naming them); `jsonByteSize` may include the NUL or
/// not. Null → NULL_POINTER; size 0 or refused JSON → BAD_PARAM; `*descriptor` untouched on
/// failure.
///
/// # Safety
/// `out` null or valid for a write; `json` null or valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendCreateAndDeserializeJsonGraph_ext(
    out: *mut *mut HipdnnBackendDescriptor,
    json: *const c_char,
    len: usize,
) -> Status {
    entry("hipdnnBackendCreateAndDeserializeJsonGraph_ext", || {
        non_null(out, "the descriptor output pointer")?;
        // SAFETY: caller contract.
        let b = unsafe { bytes_in(json.cast::<u8>(), len, "jsonGraph")? };
        if b.is_empty() {
            return Err(err(Status::BadParam, "jsonByteSize is 0"));
        }
        let b = b.strip_suffix(&[0]).unwrap_or(b);
        let text = std::str::from_utf8(b)
            .map_err(|_| err(Status::BadParam, "the JSON graph is not UTF-8"))?;
        let graph = Graph::from_json(text).map_err(json_error)?;
        let bytes = graph
            .to_graph_bytes()
            .map_err(|e| sdk_bad_param("JSON graph", e))?;
        new_graph_desc(out, graph, bytes);
        Ok(())
    })
}

/// `hipdnnBackendGetSerializedExecutionPlan_ext`: the plan's `SerializedExecutionPlan`
/// envelope, two-call (a loaded plan returns the bytes it was loaded from). Invalid descriptor
/// → NULL_POINTER; not a plan → BAD_PARAM; not finalized → NOT_INITIALIZED; null size →
/// NULL_POINTER; engine without serialization → NOT_SUPPORTED; short buffer →
/// SIZE_INSUFFICIENT.
///
/// # Safety
/// `size` null or valid; `out` null or valid for `requested` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendGetSerializedExecutionPlan_ext(
    d: *mut HipdnnBackendDescriptor,
    requested: usize,
    size: *mut usize,
    out: *mut u8,
) -> Status {
    entry("hipdnnBackendGetSerializedExecutionPlan_ext", || {
        let p = plan_of(d)?;
        non_null(size, "planByteSize")?;
        let bytes = p.plan.serialized_bytes()?;
        // SAFETY: caller contract.
        unsafe { copy_out(&bytes, requested, size, out) }
    })
}

/// `hipdnnBackendCreateAndDeserializeExecutionPlan_ext`: a **finalized** plan on `handle` from
/// a bare envelope or an `HDGP` container (its plan part). Null handle, output or bytes →
/// NULL_POINTER; size 0 or damaged bytes → BAD_PARAM; unknown envelope version →
/// NOT_SUPPORTED; an engine id the handle does not serve → NOT_SUPPORTED "Invalid engine ID:
/// N: …" (naming the engine when known, and the handle's engines; upstream says
/// INTERNAL_ERROR); engine refusal → PLUGIN_ERROR. On failure `*descriptor` is untouched.
///
/// # Safety
/// `out` null or valid for a write; `bytes` null or valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendCreateAndDeserializeExecutionPlan_ext(
    h: *mut HipdnnHandle,
    out: *mut *mut HipdnnBackendDescriptor,
    bytes: *const u8,
    len: usize,
) -> Status {
    entry("hipdnnBackendCreateAndDeserializeExecutionPlan_ext", || {
        let h = handle(h)?;
        non_null(out, "the descriptor output pointer")?;
        // SAFETY: caller contract.
        let b = unsafe { bytes_in(bytes, len, "serializedPlan")? };
        let plan = {
            let sdk = h.sdk.read().unwrap_or_else(|p| p.into_inner());
            ExecutionPlanDescriptor::from_bytes(sdk.backend(), b)?
        };
        let addr = register(
            dt::EXECUTION_PLAN,
            Desc::Plan {
                handle: Some(h),
                cfg: None,
                fin: Some(Arc::new(FinalPlan {
                    plan: Arc::new(plan),
                    graph: None,
                    cfg: None,
                })),
            },
        );
        // SAFETY: non-null, valid for a write.
        unsafe { *out = addr as *mut HipdnnBackendDescriptor };
        Ok(())
    })
}

/// `hipdnnBackendGetSerializedBinaryGraphAndPlan_ext`: an `HDGP` container of the graph and,
/// when `plan` is non-null, its serialized plan (a null plan gives a graph-only container),
/// two-call. Invalid graph descriptor or null size → NULL_POINTER; a non-null plan that is
/// invalid → NULL_POINTER, not finalized → NOT_INITIALIZED; plan errors pass through.
///
/// # Safety
/// `size` null or valid; `out` null or valid for `requested` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(
    graph: *mut HipdnnBackendDescriptor,
    plan: *mut HipdnnBackendDescriptor,
    requested: usize,
    size: *mut usize,
    out: *mut u8,
) -> Status {
    entry("hipdnnBackendGetSerializedBinaryGraphAndPlan_ext", || {
        desc(graph)?;
        non_null(size, "blobByteSize")?;
        let (_, graph_bytes) = graph_of(graph)?;
        let plan_bytes = if plan.is_null() {
            None
        } else {
            Some(plan_of(plan)?.plan.serialized_bytes()?)
        };
        let blob = hdgp::write_graph_and_plan(&graph_bytes, plan_bytes.as_deref());
        // SAFETY: caller contract.
        unsafe { copy_out(&blob, requested, size, out) }
    })
}

/// `hipdnnBackendGetSerializedBinaryContents_ext`: `HIPDNN_SERIALIZED_CONTENT_*` flags of a
/// blob: for an `HDGP` container GRAPH (1) and/or EXECUTION_PLAN (2) as present (a damaged
/// container → BAD_PARAM); anything else → GRAPH, unverified. Null blob or flags →
/// NULL_POINTER.
///
/// # Safety
/// `blob` null or valid for `len` bytes; `flags` null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendGetSerializedBinaryContents_ext(
    blob: *const u8,
    len: usize,
    flags: *mut i32,
) -> Status {
    entry("hipdnnBackendGetSerializedBinaryContents_ext", || {
        // SAFETY: caller contract.
        let b = unsafe { bytes_in(blob, len, "serializedBlob")? };
        non_null(flags, "contentFlags")?;
        // SAFETY: non-null, valid for a write.
        unsafe { *flags = 0 };
        let f = hdgp::serialized_contents(b)?;
        // SAFETY: as above.
        unsafe { *flags = f };
        Ok(())
    })
}

/// `hipdnnAutotuneCacheWriteOutcome_ext_t` values.
#[allow(missing_docs)]
pub mod outcome {
    pub const WRITTEN: i32 = 0;
    pub const DECLINED_DISABLED: i32 = 1;
    pub const DECLINED_UNKEYABLE_OR_UNFINALIZED: i32 = 2;
    pub const DECLINED_NO_ENGINES: i32 = 3;
    pub const UNCHANGED: i32 = 4;
}

/// `hipdnnBackendWriteEngineRankingResults_ext`: stores a ranking of engine ids for the graph
/// (keyed by its serialized bytes, per handle); later ENGINEHEUR finalizations of the same
/// graph order their results by it. Fail-soft: only a null handle fails (NULL_POINTER); every
/// refusal returns SUCCESS with the reason in `*outcome` (which may be null), checked in this
/// order: unfinalized or non-graph descriptor → DECLINED_UNKEYABLE_OR_UNFINALIZED, null ids or
/// count 0 → DECLINED_NO_ENGINES, `HIPDNN_DISABLE_EXACT_ENGINE_CACHE` set →
/// DECLINED_DISABLED, same ranking already stored → UNCHANGED, else WRITTEN.
///
/// # Safety
/// `ids` null or valid for `count` elements; `out` null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendWriteEngineRankingResults_ext(
    h: *mut HipdnnHandle,
    graph: *mut HipdnnBackendDescriptor,
    ids: *const i64,
    count: usize,
    out: *mut i32,
) -> Status {
    entry("hipdnnBackendWriteEngineRankingResults_ext", || {
        let h = handle(h)?;
        let fin = desc(graph).ok().and_then(|d| match &*d.lock() {
            Desc::Graph(g) => g.fin.clone(),
            _ => None,
        });
        let result = if let Some(g) = fin {
            if ids.is_null() || count == 0 {
                outcome::DECLINED_NO_ENGINES
            } else if std::env::var_os("HIPDNN_DISABLE_EXACT_ENGINE_CACHE").is_some() {
                outcome::DECLINED_DISABLED
            } else {
                // SAFETY: non-null, valid for `count` elements (caller contract).
                let ranking = unsafe { std::slice::from_raw_parts(ids, count) }.to_vec();
                let mut map = h.rankings.lock().unwrap_or_else(|p| p.into_inner());
                if map.get(&g.bytes) == Some(&ranking) {
                    outcome::UNCHANGED
                } else {
                    map.insert(g.bytes.clone(), ranking);
                    outcome::WRITTEN
                }
            }
        } else {
            outcome::DECLINED_UNKEYABLE_OR_UNFINALIZED
        };
        if !out.is_null() {
            // SAFETY: non-null, valid for a write.
            unsafe { *out = result };
        }
        Ok(())
    })
}
