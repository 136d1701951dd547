//! `hipdnn-backend`: handle, engine registry and routing, operation graph, execution-plan
//! descriptor with its serialized-plan cache, the `SerializedExecutionPlan` envelope and the
//! `HDGP` graph-and-plan container.
//!
//! Contract: the backend validates everything that crosses into it (graph bytes, plan bytes,
//! variant packs) and routes by engine id; it never interprets a plugin payload (engines own
//! their payload formats) and never executes a kernel itself.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod engine;
pub mod graph;
pub mod status;

pub use engine::{
    BehaviorNote, BufferRef, Engine, EngineConfig, ExecuteArgs, ExecutionContext, KnobInfo,
    PlanSerialization, TensorBinding, engine_id_from_name,
};
pub use graph::OperationGraph;
pub use status::{BackendError, BackendResult, PluginError, PluginResult, PluginStatus, Status};
