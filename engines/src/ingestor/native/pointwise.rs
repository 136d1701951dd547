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

use super::contract::{NativeContract, int_values, native_handler, native_launch, read_ints};
use crate::ingestor::device::LaunchGeometry;
use crate::ingestor::dispatch::PreparedLaunch;
use crate::ingestor::framework::family::{IntValue, int, uid};
use crate::ingestor::framework::graph::{dims, single_node, tensor};
use crate::ingestor::launch_values::LaunchValues;
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginResult};
use hipdnn_schema::graph::PointwiseMode;

/// The versioned contract name.
pub const POINTWISE_V1: &str = "hipkernel.pointwise.dispatch.v1";
/// Block size this pack builds with, in threads.
pub const POINTWISE_BLOCK_SIZE: u32 = 256;
/// The launch values of the v1 contract with their ranges, in the order a restore reads them.
pub const POINTWISE_V1_VALUES: [IntValue; 4] = [
    uid("input_a.uid"),
    uid("input_b.uid"),
    uid("output.uid"),
    int("block_size", 1, u32::MAX as i64),
];

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
        let uids = [self.input_a_uid, self.input_b_uid, self.output_uid];
        let ints = [uids[0], uids[1], uids[2], i64::from(self.block_size)];
        int_values(&POINTWISE_V1_VALUES, &ints, |_| true)
    }

    /// Reads values saved under `dispatch` (shared rules of
    /// [`crate::ingestor::launch_values::ContractReader`], then each value).
    ///
    /// # Errors
    /// `NOT_APPLICABLE` with the §11 texts (contract name, extra name, missing / wrong type /
    /// out of range).
    pub fn from_values(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        let all = |_: &str, _: &[i64]| Ok(true);
        let [a, b, out, block] =
            read_ints(dispatch, POINTWISE_V1, &POINTWISE_V1_VALUES, values, all)?;
        Ok(PointwiseLaunchInputs {
            input_a_uid: a,
            input_b_uid: b,
            output_uid: out,
            block_size: block as u32,
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

    /// The prepared launch of these inputs: [`Self::geometry`] and [`Self::workspace_bytes`].
    pub fn to_launch(&self) -> PreparedLaunch {
        let pointer_uids = vec![self.input_a_uid, self.input_b_uid, self.output_uid];
        let (values, geometry) = (self.to_values(), self.geometry());
        let launch = native_launch(POINTWISE_V1, values, geometry, pointer_uids, vec![]);
        PreparedLaunch {
            workspace_bytes: self.workspace_bytes(),
            ..launch
        }
    }
}

native_handler!(PointwiseV1Handler, PointwiseLaunchInputs, "v1");

impl NativeContract for PointwiseLaunchInputs {
    const CONTRACT: &'static str = POINTWISE_V1;
    /// A, B, output.
    const ARGUMENTS: (u32, u32) = (3, 0);

    fn match_graph(graph: &OperationGraph) -> PluginResult<Self> {
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
        Ok(inputs)
    }

    fn read(dispatch: &str, values: &LaunchValues) -> PluginResult<Self> {
        Self::from_values(dispatch, values)
    }

    fn launch(&self) -> PluginResult<PreparedLaunch> {
        Ok(self.to_launch())
    }
}
