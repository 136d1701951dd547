//! The native packs: dispatch handlers with their launch-value contracts.
//!
//! Each pack module owns one contract version (`…dispatch.v1`): its value names, types and
//! ranges, the kernel arguments it passes and how it derives grid and block. A larger-tensor
//! kernel needs a new version (`.v2`) in a new handler registered beside v1 with
//! [`crate::ingestor::dispatch::DispatchRegistry::register_versioned_only`]; v1 never changes.

/// The [`crate::ingestor::dispatch::DispatchHandler`] methods every packed-entry-only Triton
/// pack shares, inside its `impl DispatchHandler for <Handler>` (before its own
/// `kernel_args`): `contract` = `$contract`; `launch_signature` / `launch_signature_for` from
/// the module's `signature(spec)` (the spec variant read from the saved `spec` value);
/// `prepare` refuses (NOT_APPLICABLE) with the graph matcher's reason, else `the <family> pack
/// launches packed entries only; prepare a kernel`; `prepare_kernel` =
/// `self.inputs_for(kernel, graph)?.to_launch()` (launch errors as NOT_APPLICABLE);
/// plans are saveable, their launch values saved as they are and restored through
/// `$inputs::from_values(dispatch, values)?.to_launch()`. The module must have `match_graph`,
/// `na`, `signature` and `is_spec` in scope.
macro_rules! packed_triton_handler_methods {
    ($contract:expr, $family:literal, $inputs:ty) => {
        fn contract(&self) -> &str {
            $contract
        }

        fn launch_signature(&self) -> Vec<KernelArgument> {
            signature(false)
        }

        fn launch_signature_for(&self, values: &LaunchValues) -> Vec<KernelArgument> {
            signature(is_spec(values))
        }

        fn prepare(&self, graph: &OperationGraph) -> PluginResult<PreparedLaunch> {
            Err(match_graph(graph).err().unwrap_or_else(|| {
                na(concat!(
                    "the ",
                    $family,
                    " pack launches packed entries only; prepare a kernel"
                ))
            }))
        }

        fn prepare_kernel(
            &self,
            kernel: &KernelDescriptor,
            graph: &OperationGraph,
        ) -> PluginResult<PreparedLaunch> {
            self.inputs_for(kernel, graph)?
                .to_launch()
                .map_err(|e| na(e.message))
        }

        fn supports_saving(&self) -> bool {
            true
        }

        fn save_launch_inputs(&self, launch: &PreparedLaunch) -> Option<LaunchValues> {
            Some(launch.launch_values.clone())
        }

        fn restore_launch(
            &self,
            dispatch: &str,
            values: &LaunchValues,
        ) -> PluginResult<PreparedLaunch> {
            <$inputs>::from_values(dispatch, values)?.to_launch()
        }
    };
}

pub mod batchnorm_fwd;
pub mod conv_dgrad;
pub mod conv_fprop;
pub mod conv_fwd;
pub mod conv_fwd_v2;
pub mod conv_wgrad;
pub mod epilogue;
pub mod gather;
pub mod matmul;
pub mod norm_fwd;
pub mod pointwise;
pub mod pointwise_v2;
pub mod pointwise_v3;
pub mod pool_fwd;
pub mod reduce_fwd;
pub mod sdpa_fwd;

use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::{Node, TensorAttributes};

/// The kernel signature of a Triton parameter list in its natural layout, named: parameters
/// ending in `_ptr` or `scratch` are pointers (`global_buffer`, 8 bytes, 8-byte aligned), every
/// other one a 32-bit value (`by_value`, 4 bytes), each at the next offset its alignment allows.
pub(crate) fn natural_signature(
    names: Vec<&'static str>,
) -> Vec<crate::ingestor::kernel::KernelArgument> {
    let mut off = 0u32;
    names
        .into_iter()
        .map(|n| {
            let (kind, size) = if n.ends_with("_ptr") || n.ends_with("scratch") {
                ("global_buffer", 8)
            } else {
                ("by_value", 4)
            };
            off = off.div_ceil(size) * size;
            let a = crate::ingestor::kernel::KernelArgument::named(kind, size, off, n);
            off += size;
            a
        })
        .collect()
}

/// The only node of `graph`.
///
/// # Errors
/// `NOT_APPLICABLE` `the <pack> pack serves graphs of one node; this graph has <n>`.
pub(crate) fn single_node<'a>(graph: &'a OperationGraph, pack: &str) -> PluginResult<Node<'a>> {
    let g = graph.graph();
    let nodes = g.nodes().map(|n| n.len()).unwrap_or(0);
    match g.nodes() {
        Some(n) if n.len() == 1 => Ok(n.get(0)),
        _ => Err(PluginError::not_applicable(format!(
            "the {pack} pack serves graphs of one node; this graph has {nodes}"
        ))),
    }
}

/// The tensor with `uid` in `graph`.
///
/// # Errors
/// `NOT_APPLICABLE` when the graph has no tensor with that UID.
pub(crate) fn tensor<'a>(
    graph: &'a OperationGraph,
    uid: i64,
) -> PluginResult<TensorAttributes<'a>> {
    graph
        .graph()
        .tensors()
        .and_then(|ts| ts.iter().find(|t| t.uid() == uid))
        .ok_or_else(|| {
            PluginError::not_applicable(format!("the graph has no tensor with UID {uid}"))
        })
}

/// Dims of a tensor (empty when absent).
pub(crate) fn dims(t: &TensorAttributes<'_>) -> Vec<i64> {
    t.dims().map(|d| d.iter().collect()).unwrap_or_default()
}
