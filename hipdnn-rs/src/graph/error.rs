//! Errors of the graph API: upstream's `hipdnn_frontend::Error` (Error.hpp) as a Rust type.

/// Error category, numbered like upstream `hipdnn_frontend::ErrorCode` (OK = 0 is `Ok(..)`).
///
/// ```
/// use hipdnn::ErrorCode;
/// assert_eq!(ErrorCode::AttributeNotSet.as_str(), "ATTRIBUTE_NOT_SET");
/// assert_eq!(ErrorCode::GraphNotSupported as i32, 4);
/// ```
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

/// A failed graph operation: a code and a message naming the node, tensor and attribute, and,
/// when another layer failed, that layer's typed error as the [`Cause`].
///
/// Displayed as `"<CODE>: <message>"`. Match on [`Error::code`] for upstream's category and on
/// [`Error::cause`] for what failed underneath (never on the message text).
///
/// ```
/// use hipdnn::{DataType, ErrorCode, Graph, LayernormAttributes, TensorAttributes, TensorValue};
/// let mut g = Graph::new();
/// g.set_io_data_type(DataType::Float);
/// let x = g.tensor(TensorAttributes::new("x").dims([2, 4]));
/// let s = g.tensor(TensorAttributes::new("scale").dims([1, 4]));
/// let b = g.tensor(TensorAttributes::new("bias").dims([1, 4]));
/// let eps = g.tensor(TensorAttributes::scalar(TensorValue::Float32(1e-5)));
/// // forward_phase is required and left unset.
/// let (y, ..) = g.layernorm(x, s, b, LayernormAttributes::new().epsilon(eps));
/// g.set_output(y, true);
/// let err = g.validate().unwrap_err();
/// assert_eq!(err.code, ErrorCode::AttributeNotSet);
/// assert!(err.message.contains("'forward_phase'"), "{err}");
/// assert!(err.to_string().starts_with("ATTRIBUTE_NOT_SET: "));
/// assert!(err.cause().is_none()); // a graph check, no lower layer involved
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// The category.
    pub code: ErrorCode,
    /// Human-readable cause.
    pub message: String,
    /// The typed error of the layer that failed (backend, GPU runtime), if any (boxed so that
    /// `Result<_, Error>` stays small).
    #[source]
    pub cause: Option<Box<Cause>>,
}

/// The typed error of a layer below the SDK that made an SDK call fail.
///
/// ```
/// use hipdnn::{Cause, Handle};
/// if let Err(e) = Handle::gpu() {
///     // No GPU here: the engines crate's typed reason, not just a message.
///     assert!(matches!(e.cause(), Some(Cause::GpuUnavailable(_))));
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Cause {
    /// A backend call failed (its `hipdnnStatus_t` and message).
    #[error(transparent)]
    Backend(#[from] hipdnn_backend::BackendError),
    /// No usable GPU: no runtime, no device, or no kernels packed for its architecture.
    #[error(transparent)]
    GpuUnavailable(#[from] hipdnn_engines::gpu::GpuUnavailable),
    /// A GPU runtime call failed (device memory allocation or copy).
    #[error(transparent)]
    Driver(#[from] hipdnn_hip::DriverError),
}

impl Error {
    /// Makes an error from a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            cause: None,
        }
    }
    /// Attaches the typed error of the layer that failed.
    pub fn with_cause(mut self, cause: impl Into<Cause>) -> Self {
        self.cause = Some(Box::new(cause.into()));
        self
    }
    /// The typed error of the layer that failed, if any.
    pub fn cause(&self) -> Option<&Cause> {
        self.cause.as_deref()
    }
    /// True when the error says no GPU is usable ([`Cause::GpuUnavailable`]).
    pub fn is_gpu_unavailable(&self) -> bool {
        matches!(self.cause(), Some(Cause::GpuUnavailable(_)))
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

/// A backend failure as an SDK error: `HIPDNN_BACKEND_ERROR` with the message
/// `Backend error (<STATUS>): <text>` and the [`BackendError`](hipdnn_backend::BackendError) as
/// its cause. Callers that have context to add use `backend_error` (crate-internal), which
/// prefixes it.
impl From<hipdnn_backend::BackendError> for Error {
    fn from(e: hipdnn_backend::BackendError) -> Self {
        Error::new(
            ErrorCode::HipdnnBackendError,
            format!("Backend error ({}): {}", e.status.name(), e.message),
        )
        .with_cause(e)
    }
}

/// No usable GPU as an SDK error: `GRAPH_NOT_SUPPORTED` (`INVALID_VALUE` for a device ordinal
/// past the device count, [`GpuUnavailable::NoSuchDevice`]) with the reason as the message and
/// [`Cause::GpuUnavailable`] as the cause.
///
/// ```
/// use hipdnn_engines::gpu::GpuUnavailable;
/// let e = hipdnn::Error::from(GpuUnavailable::NoSuchDevice { ordinal: 3, count: 2 });
/// assert_eq!(e.code, hipdnn::ErrorCode::InvalidValue);
/// assert!(e.is_gpu_unavailable());
/// ```
///
/// [`GpuUnavailable::NoSuchDevice`]: hipdnn_engines::gpu::GpuUnavailable::NoSuchDevice
impl From<hipdnn_engines::gpu::GpuUnavailable> for Error {
    fn from(e: hipdnn_engines::gpu::GpuUnavailable) -> Self {
        Error::new(gpu_unavailable_code(&e), e.to_string()).with_cause(e)
    }
}

/// The code of a [`hipdnn_engines::gpu::GpuUnavailable`]: `INVALID_VALUE` for an ordinal past
/// the device count (the caller's value is wrong), else `GRAPH_NOT_SUPPORTED`.
pub(crate) fn gpu_unavailable_code(e: &hipdnn_engines::gpu::GpuUnavailable) -> ErrorCode {
    match e {
        hipdnn_engines::gpu::GpuUnavailable::NoSuchDevice { .. } => ErrorCode::InvalidValue,
        _ => ErrorCode::GraphNotSupported,
    }
}

/// `Result` with the graph [`Error`].
///
/// ```
/// fn engines() -> hipdnn::Result<Vec<String>> {
///     Ok(hipdnn::Handle::cpu()?.engine_names())
/// }
/// assert_eq!(engines().unwrap(), ["hipdnn.reference.cpu"]);
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;
