//! Errors of the graph API: upstream's `hipdnn_frontend::Error` (Error.hpp) as a Rust type.

/// Error category, numbered like upstream `hipdnn_frontend::ErrorCode` (OK = 0 is `Ok(..)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `INVALID_VALUE` (1): bad, damaged or over-constrained input.
    InvalidValue = 1,
    /// `HIPDNN_BACKEND_ERROR` (2): a backend call failed.
    HipdnnBackendError = 2,
    /// `ATTRIBUTE_NOT_SET` (3): a required attribute is missing.
    AttributeNotSet = 3,
    /// `GRAPH_NOT_SUPPORTED` (4): no engine supports the graph.
    GraphNotSupported = 4,
}

impl ErrorCode {
    /// The upstream enumerator name (`"INVALID_VALUE"`, ...), as `to_string(ErrorCode)` gives.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidValue => "INVALID_VALUE",
            ErrorCode::HipdnnBackendError => "HIPDNN_BACKEND_ERROR",
            ErrorCode::AttributeNotSet => "ATTRIBUTE_NOT_SET",
            ErrorCode::GraphNotSupported => "GRAPH_NOT_SUPPORTED",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed graph operation: a code and a message naming the node, tensor and attribute.
///
/// Displayed as `"<CODE>: <message>"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// The category.
    pub code: ErrorCode,
    /// Human-readable cause.
    pub message: String,
}

impl Error {
    /// Makes an error from a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }
    /// An `InvalidValue` error.
    pub fn invalid_value(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidValue, message)
    }
    /// An `AttributeNotSet` error.
    pub fn attribute_not_set(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::AttributeNotSet, message)
    }
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::invalid_value(message)
    }
    pub(crate) fn not_set(message: impl Into<String>) -> Self {
        Self::attribute_not_set(message)
    }
}

/// `Result` with the graph [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
