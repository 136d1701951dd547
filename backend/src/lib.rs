//! `hipdnn-backend`: handle, engine registry and routing, operation graph, execution-plan
//! descriptor with its serialized-plan cache, the `SerializedExecutionPlan` envelope and the
//! `HDGP` graph-and-plan container.
//!
//! Contract: the backend validates everything that crosses into it (graph bytes, plan bytes,
//! variant packs) and routes by engine id; it never interprets a plugin payload (engines own
//! their payload formats) and never executes a kernel itself.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod bytes;
pub mod crosscheck;
pub mod engine;
pub mod envelope;
pub mod extent;
pub mod graph;
pub mod handle;
pub mod hdgp;
pub mod heur_config;
pub mod ops;
pub mod plan;
pub mod shape_override;
pub mod status;
pub mod tensor_size;
pub mod variant_pack;

pub use bytes::SharedBytes;
pub use engine::{
    BehaviorNote, BufferRef, Engine, EngineConfig, EngineVariant, ExecuteArgs, ExecutionContext,
    KnobInfo, NumericalNote, PlanSerialization, TensorBinding, engine_id_from_name,
};
pub use envelope::{PlanEnvelope, write_envelope};
pub use graph::OperationGraph;
pub use handle::{BackendHandle, HeuristicMode};
pub use hdgp::{
    CONTENT_EXECUTION_PLAN, CONTENT_GRAPH, GraphAndPlan, graph_part, is_graph_and_plan_container,
    plan_part, read_container, serialized_contents, write_graph_and_plan,
    write_graph_and_plan_into,
};
pub use plan::ExecutionPlanDescriptor;
pub use shape_override::{BuiltShape, ShapeOverride, check_overrides};
pub use status::{BackendError, BackendResult, PluginError, PluginResult, PluginStatus, Status};
pub use variant_pack::VariantPackDescriptor;
