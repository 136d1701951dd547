//! Op knowledge in one place: for each op kind, the facts every user of a graph needs — how
//! many inputs a mode takes, how output extents follow from the attributes, which attribute
//! values are meaningful, how shapes broadcast.
//!
//! Users: the SDK (`hipdnn`, graph building and validation), the CPU reference engine (plan
//! parsing, applicability) and the GPU packs (matchers) all call these tables instead of
//! keeping copies. The facts are stated over plain types — schema enums from
//! `hipdnn_schema::graph` and `&[i64]` dims — so every layer can use them.
//!
//! This module never formats user-facing messages, never reads a graph and never decides
//! applicability: callers keep their own message texts and statuses and ask the table only
//! for the fact. One file per op kind (candle's `op.rs` habit).

pub mod broadcast;
pub mod conv;
pub mod gather;
pub mod matmul;
pub mod norm;
pub mod pointwise;
pub mod reduction;
pub mod resample;
pub mod sdpa;
