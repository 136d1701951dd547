//! Dispatch handlers and their registry: how a pack turns a graph (or saved launch values)
//! into a launch.
//!
//! Upstream: the plugin SDK's `IKernelDispatchHandler` with `supportsSaving`,
//! `saveLaunchInputs`, `restoreLaunch` (`SavedDispatch.hpp`), and `DispatchRegistry`
//! (`NativeHooks.hpp`); reference `ingestor-payload.md` §4, §11, §12. A handler is registered
//! under its versioned contract name (`hipkernel.<pack>.dispatch.v<N>`) and, for the pack's
//! default version, under the unversioned alias too (one handler, two names). Descriptors name
//! the unversioned alias (or a versioned name); payloads always carry the versioned one. A new
//! contract version (`.v2`) is a new handler registered beside the old one with
//! [`DispatchRegistry::register_versioned_only`]. This module never touches a device.

use super::descriptor::KernelDescriptor;
use super::device::{KernelArgValue, LaunchGeometry};
use super::kernel::KernelArgument;
use super::launch_values::LaunchValues;
use super::payload::refusal::{incompatible, quote};
use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// `hipkernel.<pack>.dispatch` — the unversioned alias of a pack.
pub fn dispatch_alias(pack: &str) -> String {
    format!("hipkernel.{pack}.dispatch")
}

/// `hipkernel.<pack>.dispatch.v<version>` — a versioned contract name.
pub fn dispatch_contract(pack: &str, version: u32) -> String {
    format!("hipkernel.{pack}.dispatch.v{version}")
}

/// The unversioned alias of a versioned name (`….dispatch.v1` → `….dispatch`), `None` when
/// `name` carries no `.v<digits>` suffix.
pub fn unversioned(name: &str) -> Option<&str> {
    let (base, v) = name.rsplit_once(".v")?;
    (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())).then_some(base)
}

/// A launch a handler prepared (from a graph at build, or from launch values at restore).
/// Build and restore go through the same geometry functions, so both give identical launches.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedLaunch {
    /// The versioned contract the launch follows, e.g. `hipkernel.pointwise.dispatch.v1`.
    pub dispatch: String,
    /// The launch inputs (what a save records).
    pub launch_values: LaunchValues,
    /// Grid, block and dynamic shared memory.
    pub geometry: LaunchGeometry,
    /// Workspace the launch needs, in bytes.
    pub workspace_bytes: u64,
    /// Tensor UIDs whose device pointers are the first kernel arguments, in order.
    pub pointer_uids: Vec<i64>,
    /// By-value kernel arguments after the pointers, in order.
    pub scalar_args: Vec<KernelArgValue>,
}

/// The device address the variant pack binds to tensor `uid`.
///
/// # Errors
/// `BAD_PARAM` `the variant pack binds no memory to tensor UID <u>`; `tensor UID <u> is bound
/// to host memory; the ingestor launches on device memory`.
pub fn device_addr(tensors: &[TensorBinding<'_>], uid: i64) -> PluginResult<u64> {
    let t = tensors.iter().find(|t| t.uid == uid).ok_or_else(|| {
        PluginError::bad_param(format!(
            "the variant pack binds no memory to tensor UID {uid}"
        ))
    })?;
    match t.data {
        BufferRef::Device { addr, .. } => Ok(addr),
        _ => Err(PluginError::bad_param(format!(
            "tensor UID {uid} is bound to host memory; the ingestor launches on device memory"
        ))),
    }
}

/// Kernel arguments of `launch`: one pointer per `pointer_uids` entry (looked up by UID in
/// `tensors`), then `scalar_args`.
///
/// # Errors
/// `BAD_PARAM` when a UID is not bound, or bound to host memory.
pub fn default_kernel_args(
    launch: &PreparedLaunch,
    tensors: &[TensorBinding<'_>],
) -> PluginResult<Vec<KernelArgValue>> {
    let mut args = Vec::with_capacity(launch.pointer_uids.len() + launch.scalar_args.len());
    for uid in &launch.pointer_uids {
        args.push(KernelArgValue::Pointer(device_addr(tensors, *uid)?));
    }
    args.extend_from_slice(&launch.scalar_args);
    Ok(args)
}

/// A pack's dispatch handler for one contract version.
pub trait DispatchHandler: Send + Sync {
    /// The versioned contract name this handler reads and writes (`hipkernel.<pack>.dispatch.v<N>`).
    fn contract(&self) -> &str;

    /// The kernel arguments this handler's launch passes (order, kinds, sizes); the recorded
    /// signature of a kernel must match it.
    fn launch_signature(&self) -> Vec<KernelArgument>;

    /// Prepares a launch for `graph`.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming what the pack does not serve.
    fn prepare(&self, graph: &OperationGraph) -> PluginResult<PreparedLaunch>;

    /// Prepares a launch of `kernel` for `graph`. A handler whose kernels differ per graph
    /// (one symbol per op and data type) checks here that `kernel` is the one the graph needs;
    /// the default ignores `kernel` and calls [`Self::prepare`].
    ///
    /// # Errors
    /// `NOT_APPLICABLE` naming what the pack or this kernel does not serve.
    fn prepare_kernel(
        &self,
        _kernel: &KernelDescriptor,
        graph: &OperationGraph,
    ) -> PluginResult<PreparedLaunch> {
        self.prepare(graph)
    }

    /// The kernel arguments a launch with `values` passes; for contracts whose argument list
    /// depends on a launch value (e.g. unary vs binary pointwise). Build compares a kernel's
    /// recorded signature with this for the prepared launch's values, restore with the saved
    /// values. The default is [`Self::launch_signature`].
    fn launch_signature_for(&self, _values: &LaunchValues) -> Vec<KernelArgument> {
        self.launch_signature()
    }

    /// Whether this handler saves launch inputs *and* restores launches. Every pack here
    /// does, so the default is `true` (upstream's SDK defaults to `false`); a handler that
    /// cannot restore overrides this with `false` and keeps the refusing
    /// [`Self::restore_launch`].
    fn supports_saving(&self) -> bool {
        true
    }

    /// The launch inputs to record for `launch`, `None` when this handler does not save. The
    /// default records the prepared launch's own launch values when [`Self::supports_saving`].
    fn save_launch_inputs(&self, launch: &PreparedLaunch) -> Option<LaunchValues> {
        self.supports_saving().then(|| launch.launch_values.clone())
    }

    /// A launch from launch values saved under `dispatch`.
    ///
    /// # Errors
    /// `NOT_APPLICABLE` (load prefix) for every contract rule the values break (§11); the
    /// default refuses because the handler does not restore.
    fn restore_launch(
        &self,
        dispatch: &str,
        _values: &LaunchValues,
    ) -> PluginResult<PreparedLaunch> {
        Err(incompatible(format!(
            "the dispatch handler registered under '{}' does not support restoring launches",
            quote(dispatch)
        )))
    }

    /// The packed Triton configuration (tile, warps, variant, …) that launch values saved
    /// under `dispatch` were prepared with, `None` for a contract without one (hand-written
    /// kernels) or values it does not restore. A restored plan's stand-in descriptor carries it
    /// so that [`Self::prepare_kernel`] can prepare the same kernel at other shapes (shape
    /// overrides of a plan loaded with its graph). The data type is not saved: the
    /// configuration's is empty and the graph's is taken ([`super::kernel::TritonConfig`]).
    fn saved_config(
        &self,
        dispatch: &str,
        values: &LaunchValues,
    ) -> Option<super::kernel::TritonConfig> {
        let _ = (dispatch, values);
        None
    }

    /// The kernel arguments of `launch` for the bound tensors.
    ///
    /// # Errors
    /// As [`default_kernel_args`].
    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> PluginResult<Vec<KernelArgValue>> {
        default_kernel_args(launch, tensors)
    }

    /// The kernel arguments of `launch` for the bound tensors and the execute's workspace
    /// (its device address, 0 when the launch needs none); for contracts whose kernel takes
    /// the workspace as an argument. The default ignores `workspace` and calls
    /// [`Self::kernel_args`].
    ///
    /// # Errors
    /// As [`Self::kernel_args`].
    fn kernel_args_with_workspace(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
        workspace: u64,
    ) -> PluginResult<Vec<KernelArgValue>> {
        let _ = workspace;
        self.kernel_args(launch, tensors)
    }

    /// Launches of the same kernel queued on the launch stream before the main one (after the
    /// workspace fill), each as (geometry, kernel arguments), built from the main launch's
    /// arguments `args` (as [`Self::kernel_args_with_workspace`] gives them); e.g. a layout
    /// pass that writes transposed copies of the inputs into the workspace. Default none.
    fn prologue_launches(
        &self,
        launch: &PreparedLaunch,
        args: &[KernelArgValue],
    ) -> Vec<(LaunchGeometry, Vec<KernelArgValue>)> {
        let _ = (launch, args);
        Vec::new()
    }

    /// How many leading bytes of the workspace must read as zero when the kernel starts
    /// (e.g. counters the kernel's programs count on); the plan queues a fill of that prefix
    /// on the launch stream right before every launch. At most `launch.workspace_bytes`;
    /// default 0 (nothing is filled).
    fn zeroed_workspace_bytes(&self, launch: &PreparedLaunch) -> u64 {
        let _ = launch;
        0
    }
}

/// Dispatch handlers by name (versioned names and unversioned aliases).
#[derive(Default, Clone)]
pub struct DispatchRegistry {
    handlers: HashMap<String, Arc<dyn DispatchHandler>>,
}

impl fmt::Debug for DispatchRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.handlers.keys().collect();
        names.sort();
        f.debug_struct("DispatchRegistry")
            .field("names", &names)
            .finish()
    }
}

impl DispatchRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn insert_versioned(&mut self, handler: &Arc<dyn DispatchHandler>) -> PluginResult<String> {
        let name = handler.contract().to_string();
        if unversioned(&name).is_none() {
            return Err(PluginError::internal(format!(
                "dispatch contract '{name}' carries no version suffix '.v<N>'"
            )));
        }
        if self.handlers.contains_key(&name) {
            return Err(PluginError::internal(format!(
                "a dispatch handler is already registered under '{name}'"
            )));
        }
        self.handlers.insert(name.clone(), handler.clone());
        Ok(name)
    }

    /// Registers `handler` under its versioned contract name and under the unversioned alias
    /// (the alias keeps its first handler when already taken).
    ///
    /// # Errors
    /// `INTERNAL_ERROR` when the contract name has no `.v<N>` suffix or is already registered.
    pub fn register(&mut self, handler: Arc<dyn DispatchHandler>) -> PluginResult<()> {
        let name = self.insert_versioned(&handler)?;
        if let Some(alias) = unversioned(&name) {
            self.handlers.entry(alias.to_string()).or_insert(handler);
        }
        Ok(())
    }

    /// Registers `handler` under its versioned contract name only (a newer contract version
    /// beside the default one).
    ///
    /// # Errors
    /// As [`Self::register`].
    pub fn register_versioned_only(
        &mut self,
        handler: Arc<dyn DispatchHandler>,
    ) -> PluginResult<()> {
        self.insert_versioned(&handler).map(|_| ())
    }

    /// The handler registered under `name` (versioned or alias).
    pub fn resolve(&self, name: &str) -> Option<Arc<dyn DispatchHandler>> {
        self.handlers.get(name).cloned()
    }

    /// Every registered handler once (by contract name), sorted by contract name.
    pub fn handlers(&self) -> Vec<Arc<dyn DispatchHandler>> {
        let mut v: Vec<_> = self
            .handlers
            .iter()
            .filter(|(k, h)| h.contract() == k.as_str())
            .map(|(_, h)| h.clone())
            .collect();
        v.sort_by(|a, b| a.contract().cmp(b.contract()));
        v
    }
}
