//! The variant pack: the memory bound to a plan's tensors for one execute (upstream
//! `VARIANT_PACK` descriptor: `UNIQUE_IDS`, `DATA_POINTERS`, `WORKSPACE`).
//!
//! This module only collects `{uid, memory}` pairs and the workspace; the execution plan
//! descriptor checks them against the plan (§4.7 of `backend-c-api.md`).

use crate::engine::{BufferRef, TensorBinding};

/// Tensor memory by UID, plus the workspace, for one execute.
#[derive(Debug, Default)]
pub struct VariantPackDescriptor<'a> {
    tensors: Vec<TensorBinding<'a>>,
    workspace: Option<BufferRef<'a>>,
}

impl<'a> VariantPackDescriptor<'a> {
    /// An empty pack (no tensors, no workspace).
    pub fn new() -> Self {
        VariantPackDescriptor {
            tensors: Vec::new(),
            workspace: None,
        }
    }

    /// An empty pack with room for `tensors` bindings (no reallocation while they are
    /// inserted).
    pub fn with_capacity(tensors: usize) -> Self {
        VariantPackDescriptor {
            tensors: Vec::with_capacity(tensors),
            workspace: None,
        }
    }

    /// Binds `data` to tensor `uid` (builder form of [`VariantPackDescriptor::insert`]).
    pub fn with(mut self, uid: i64, data: BufferRef<'a>) -> Self {
        self.insert(uid, data);
        self
    }

    /// Binds `data` to tensor `uid`, after the bindings already there. A UID bound twice is
    /// refused at execute (`BAD_PARAM`).
    pub fn insert(&mut self, uid: i64, data: BufferRef<'a>) {
        self.tensors.push(TensorBinding { uid, data });
    }

    /// Sets the workspace (builder form).
    pub fn with_workspace(mut self, workspace: BufferRef<'a>) -> Self {
        self.workspace = Some(workspace);
        self
    }

    /// Sets the workspace; it must hold at least the plan's workspace size in bytes.
    pub fn set_workspace(&mut self, workspace: BufferRef<'a>) {
        self.workspace = Some(workspace);
    }

    /// The bindings in insertion order.
    pub fn tensors(&self) -> &[TensorBinding<'a>] {
        &self.tensors
    }

    /// The workspace, if set.
    pub fn workspace(&self) -> Option<&BufferRef<'a>> {
        self.workspace.as_ref()
    }

    /// Splits the pack into its bindings and workspace (what an engine's execute takes).
    pub fn into_parts(self) -> (Vec<TensorBinding<'a>>, Option<BufferRef<'a>>) {
        (self.tensors, self.workspace)
    }
}
