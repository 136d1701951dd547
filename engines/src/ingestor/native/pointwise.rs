//! Pointwise pack, contract `hipkernel.pointwise.dispatch.v1`.
//!
//! Upstream: `KIE/packs/PointwiseLaunchValues.hpp`, `PointwiseNative.cpp`,
//! `PointwiseGeometry.hpp` (reference `ingestor-payload.md` §11).
//!
//! | launch value | type | range |
//! |---|---|---|
//! | `input_a.uid`, `input_b.uid`, `output.uid` | int | any int64 |
//! | `block_size` | int | [1, 4294967295] |
//!
//! Launch: block (block_size, 1, 1), grid (1, 1, 1), no dynamic shared memory. Kernel
//! arguments: three `global_buffer` of 8 bytes — A, B, output (device pointers looked up by UID
//! in the variant pack). Workspace: 1024 bytes when block_size = 256, else 0 (upstream pack rule;
//! a payload records the plan's own number). v1 serves single-element tensors only (every dim
//! 1, rank 4–5) and the ADD operation; a kernel covering larger tensors needs a new contract
//! version (e.g. `.v2` adding an element count and broadcast information).

use crate::ingestor::device::LaunchGeometry;
use crate::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use crate::ingestor::framework::graph::{dims, single_node, tensor};
use crate::ingestor::kernel::KernelArgument;
use crate::ingestor::launch_values::{ContractReader, LaunchValue, LaunchValues};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::PointwiseMode;

/// The versioned contract name.
pub const POINTWISE_V1: &str = "hipkernel.pointwise.dispatch.v1";
/// Block size this pack builds with, in threads.
pub const POINTWISE_BLOCK_SIZE: u32 = 256;
/// Value names of the v1 contract.
pub const POINTWISE_V1_NAMES: [&str; 4] =
    ["block_size", "input_a.uid", "input_b.uid", "output.uid"];

/// The launch inputs of contract v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointwiseLaunchInputs {
    /// UID of input A.
    pub input_a_uid: i64,
    /// UID of input B.
    pub input_b_uid: i64,
    /// UID of the output.
    pub output_uid: i64,
    /// Threads per block, [1, 4294967295].
    pub block_size: u32,
}

impl PointwiseLaunchInputs {
    /// The launch values (all INT).
    pub fn to_values(&self) -> LaunchValues {
        let mut v = LaunchValues::new();
        v.insert("input_a.uid".into(), LaunchValue::Int(self.input_a_uid));
        v.insert("input_b.uid".into(), LaunchValue::Int(self.input_b_uid));
        v.insert("output.uid".into(), LaunchValue::Int(self.output_uid));
        v.insert(
            "block_size".into(),
            LaunchValue::Int(i64::from(self.block_size)),
        );
        v
    }

    /// Reads values saved under `dispatch` (shared rules of [`ContractReader`], then each value).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` with the §11 texts (contract name, extra name, missing / wrong type /
    /// out of range).
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let r = ContractReader::new(dispatch, POINTWISE_V1, &POINTWISE_V1_NAMES, values)?;
        Ok(PointwiseLaunchInputs {
            input_a_uid: r.int("input_a.uid", i64::MIN, i64::MAX)?,
            input_b_uid: r.int("input_b.uid", i64::MIN, i64::MAX)?,
            output_uid: r.int("output.uid", i64::MIN, i64::MAX)?,
            block_size: r.int("block_size", 1, i64::from(u32::MAX))? as u32,
        })
    }

    /// Grid (1,1,1), block (block_size,1,1), no shared memory.
    pub fn geometry(&self) -> LaunchGeometry {
        LaunchGeometry {
            grid: [1, 1, 1],
            block: [self.block_size, 1, 1],
            shared_mem_bytes: 0,
        }
    }

    /// Workspace in bytes: 1024 when block_size = 256, else 0.
    pub fn workspace_bytes(&self) -> u64 {
        if self.block_size == 256 { 1024 } else { 0 }
    }

    /// The prepared launch of these inputs.
    pub fn to_launch(&self) -> PreparedLaunch {
        PreparedLaunch {
            dispatch: POINTWISE_V1.to_string(),
            launch_values: self.to_values(),
            geometry: self.geometry(),
            workspace_bytes: self.workspace_bytes(),
            pointer_uids: vec![self.input_a_uid, self.input_b_uid, self.output_uid],
            scalar_args: vec![],
        }
    }
}

/// The v1 handler (saves and restores).
#[derive(Debug, Clone, Copy, Default)]
pub struct PointwiseV1Handler;

impl DispatchHandler for PointwiseV1Handler {
    fn contract(&self) -> &str {
        POINTWISE_V1
    }

    fn launch_signature(&self) -> Vec<KernelArgument> {
        vec![
            KernelArgument::new("global_buffer", 8, 0),
            KernelArgument::new("global_buffer", 8, 8),
            KernelArgument::new("global_buffer", 8, 16),
        ]
    }

    fn prepare(&self, graph: &OperationGraph) -> PluginResult<PreparedLaunch> {
        let node = single_node(graph, "pointwise")?;
        let attrs = node.attributes_as_pointwise_attributes().ok_or_else(|| {
            PluginError::not_applicable("the pointwise pack serves pointwise nodes only")
        })?;
        if attrs.operation() != PointwiseMode::ADD {
            return Err(PluginError::not_applicable(format!(
                "the pointwise pack (dispatch v1) serves ADD only, not {:?}",
                attrs.operation()
            )));
        }
        let b = attrs.in_1_tensor_uid().ok_or_else(|| {
            PluginError::not_applicable("the pointwise pack needs two inputs; in_1 is absent")
        })?;
        let inputs = PointwiseLaunchInputs {
            input_a_uid: attrs.in_0_tensor_uid(),
            input_b_uid: b,
            output_uid: attrs.out_0_tensor_uid(),
            block_size: POINTWISE_BLOCK_SIZE,
        };
        for uid in [inputs.input_a_uid, inputs.input_b_uid, inputs.output_uid] {
            let d = dims(&tensor(graph, uid)?);
            if !(4..=5).contains(&d.len()) || d.iter().any(|x| *x != 1) {
                return Err(PluginError::not_applicable(format!(
                    "the pointwise pack (dispatch v1) serves single-element tensors of rank 4 or 5; tensor {uid} has dims {d:?}"
                )));
            }
        }
        Ok(inputs.to_launch())
    }

    fn restore_launch(
        &self,
        dispatch: &str,
        values: &LaunchValues,
    ) -> PluginResult<PreparedLaunch> {
        Ok(PointwiseLaunchInputs::from_values(dispatch, values)?.to_launch())
    }
}
