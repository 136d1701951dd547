//! What a Triton family module uses, in one glob import (`use
//! crate::ingestor::framework::prelude::*;`): the framework's family trait, value tables,
//! graph readers and launch helpers, the ingestor types a launch is made of, and the backend
//! and schema types every matcher names; plus [`triton_handler!`](crate::triton_handler),
//! which declares a family's handler.

pub(crate) use super::channels::Channels;
pub(crate) use super::family::{
    I32_MAX, IntValue, TritonFamily, TritonHandler, ValueReader, check_aligned, f32_of, float, int,
    pointer_args, slot_of, spec_kept, uid,
};
pub(crate) use super::graph::{
    collapse, custom_op_node, dims_strides, f32_bit, float_dtype, na, one_node, scalar_value,
    tensor,
};
pub(crate) use super::launch::{
    block_geometry, chunk_rule, spec_hints, static_rule, tile_config_ints, tile_config_of,
};
pub(crate) use super::rows::NormRows;
pub(crate) use super::triton::{TritonConfig, natural_signature};
pub(crate) use crate::ingestor::descriptor::KernelDescriptor;
pub(crate) use crate::ingestor::device::{KernelArgValue, LaunchGeometry};
pub(crate) use crate::ingestor::dispatch::PreparedLaunch;
pub(crate) use crate::ingestor::kernel::KernelArgument;
pub(crate) use crate::ingestor::launch_values::{LaunchValue, LaunchValues};
pub(crate) use crate::ingestor::payload::refusal::{incompatible, quote};
pub(crate) use hipdnn_backend::engine::TensorBinding;
pub(crate) use hipdnn_backend::graph::OperationGraph;
pub(crate) use hipdnn_backend::status::{PluginError, PluginResult};
pub(crate) use hipdnn_schema::graph::{DataType, Node, TensorAttributes};

/// Declares a family's dispatch handler `$name`: the type `TritonHandler<$inputs>` and a const
/// of the same name, so that the handler is used as a value as a unit struct's name is
/// (`Arc::new(PoolFwdHandler)`); both documented as the handler of `$inputs`' contract.
#[macro_export]
macro_rules! triton_handler {
    ($name:ident = $inputs:ty) => {
        #[doc = concat!("The dispatch handler of [`", stringify!($inputs), "`]'s contract (saves and restores).")]
        pub type $name = $crate::ingestor::framework::family::TritonHandler<$inputs>;
        #[doc = concat!("The dispatch handler of [`", stringify!($inputs), "`]'s contract, as a value.")]
        #[allow(non_upper_case_globals)]
        pub const $name: $name = $crate::ingestor::framework::family::TritonHandler::new();
    };
}
pub(crate) use super::{
    family::concat,
    tables::{strides, tile_config},
};
