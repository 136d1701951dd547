//! `hipdnn`: the Rust SDK of the hipDNN graph API.
//!
//! Build a [`Graph`] of DNN operations over tensors identified by UIDs, validate it, and save
//! or load it as a bare `Graph` FlatBuffer ([`Graph::to_graph_bytes`] /
//! [`Graph::from_graph_bytes`]) or as JSON ([`Graph::to_json`] / [`Graph::from_json`]).
//! The data model, names and rules follow upstream `hipdnn_frontend` (Graph.hpp,
//! TensorAttributes.hpp, Error.hpp) and the Graph schema `graph.fbs` (see
//! `shared/reference/frontend-graph-api.md` §3, §4, §6).
//!
//! ```
//! use hipdnn::{Graph, TensorAttributes, ConvFpropAttributes, DataType};
//! let mut g = Graph::new();
//! g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
//! let x = g.tensor(TensorAttributes::new("x").uid(1).dims([1, 3, 8, 8]).packed_nchw());
//! let w = g.tensor(TensorAttributes::new("w").uid(2).dims([4, 3, 3, 3]).packed_nchw());
//! let y = g.conv_fprop(x, w, ConvFpropAttributes::new().padding([1, 1]).stride([1, 1]).dilation([1, 1]));
//! g.set_output(y, true).set_uid(y, 3);
//! assert_eq!(g.tensor_attributes(y).dims, vec![1, 4, 8, 8]);
//! g.validate().unwrap();
//! let bytes = g.to_graph_bytes().unwrap();
//! assert_eq!(Graph::from_graph_bytes(&bytes).unwrap().to_graph_bytes().unwrap(), bytes);
//! ```

pub mod buffer;
pub mod file;
pub mod graph;
pub mod handle;
mod persist;

pub use buffer::{BUFFER_ALIGNMENT, Bind, Buffer, Element, VariantPack};
pub use file::{Form, write_atomically};
pub use graph::*;
pub use handle::{ExecutionDevice, Handle};
pub use hipdnn_backend::{BehaviorNote, HeuristicMode};
pub use persist::{
    NO_FINALIZED_PLAN_MESSAGE, NO_PLAN_MESSAGE, NOT_A_GRAPH_OR_CONTAINER, PLAN_ONLY_FILE,
};
