//! `hipdnn-capi`: the C ABI of hipdnn-rs, built as `libhipdnn_backend.so`, a drop-in for
//! upstream hipDNN's backend library.
//!
//! It sits on top of the SDK (`hipdnn`) so that `hipdnnCreate` registers the same engines a Rust
//! [`hipdnn::Handle`] has. Today it is a shell: the exported functions arrive with the C ABI
//! issue. What is here already is the boundary rule every export will follow: [`panic::guard`]
//! runs the body, and a panic never crosses `extern "C"`; it becomes
//! `HIPDNN_STATUS_INTERNAL_ERROR` with the panic text kept as the thread's last error.

pub mod panic;
