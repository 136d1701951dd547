//! The shared framework of the packs: what every family reads from a graph ([`graph`]), the
//! Triton entry configuration and launch machinery ([`triton`]), and the fused epilogue that the
//! matmul and conv fprop families share ([`epilogue`]), and what the attention families read from an SDPA
//! node ([`attention`]). Families (`super::packs`) and the
//! hand-written native packs (`super::native`) import from here; nothing here imports a pack.

pub mod attention;
pub mod channels;
pub mod conv;
pub mod epilogue;
pub mod family;
pub mod gemm;
pub mod graph;
pub mod head;
pub mod launch;
pub mod pool;
pub(crate) mod prelude;
pub mod rows;
pub mod tables;
pub mod triton;
