//! Status codes and errors of the backend (`hipdnnStatus_t`) and of engines
//! (`hipdnnPluginStatus_t`), with upstream's numeric values.
//!
//! Source: `backend/include/HipdnnStatus.h` and `plugin_sdk/.../PluginApiDataTypes.h`
//! (upstream's `hipdnnStatus_t`, `docs/c-api.md`). Values are stable: a retired value
//! stays reserved.

/// `hipdnnStatus_t`: the status every backend call returns.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// `HIPDNN_STATUS_SUCCESS` (0).
    Success = 0,
    /// `HIPDNN_STATUS_NOT_INITIALIZED` (1): e.g. a descriptor used before finalize.
    NotInitialized = 1,
    /// `HIPDNN_STATUS_BAD_PARAM` (2).
    BadParam = 2,
    /// `HIPDNN_STATUS_BAD_PARAM_NULL_POINTER` (3).
    BadParamNullPointer = 3,
    /// `HIPDNN_STATUS_BAD_PARAM_NOT_FINALIZED` (4).
    BadParamNotFinalized = 4,
    /// `HIPDNN_STATUS_BAD_PARAM_OUT_OF_BOUND` (5).
    BadParamOutOfBound = 5,
    /// `HIPDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT` (6): an output buffer is too small.
    BadParamSizeInsufficient = 6,
    /// `HIPDNN_STATUS_BAD_PARAM_STREAM_MISMATCH` (7).
    BadParamStreamMismatch = 7,
    /// `HIPDNN_STATUS_NOT_SUPPORTED` (8).
    NotSupported = 8,
    /// `HIPDNN_STATUS_INTERNAL_ERROR` (9).
    InternalError = 9,
    /// `HIPDNN_STATUS_ALLOC_FAILED` (10).
    AllocFailed = 10,
    /// `HIPDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED` (11).
    InternalErrorHostAllocationFailed = 11,
    /// `HIPDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED` (12).
    InternalErrorDeviceAllocationFailed = 12,
    /// `HIPDNN_STATUS_EXECUTION_FAILED` (13).
    ExecutionFailed = 13,
    /// `HIPDNN_STATUS_PLUGIN_ERROR` (14): an engine refused or failed; its text follows.
    PluginError = 14,
    /// `HIPDNN_STATUS_VERSION_MISMATCH` (15).
    VersionMismatch = 15,
}

impl Status {
    /// Upstream's enumerator name, e.g. `HIPDNN_STATUS_BAD_PARAM`.
    pub fn name(self) -> &'static str {
        match self {
            Status::Success => "HIPDNN_STATUS_SUCCESS",
            Status::NotInitialized => "HIPDNN_STATUS_NOT_INITIALIZED",
            Status::BadParam => "HIPDNN_STATUS_BAD_PARAM",
            Status::BadParamNullPointer => "HIPDNN_STATUS_BAD_PARAM_NULL_POINTER",
            Status::BadParamNotFinalized => "HIPDNN_STATUS_BAD_PARAM_NOT_FINALIZED",
            Status::BadParamOutOfBound => "HIPDNN_STATUS_BAD_PARAM_OUT_OF_BOUND",
            Status::BadParamSizeInsufficient => "HIPDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT",
            Status::BadParamStreamMismatch => "HIPDNN_STATUS_BAD_PARAM_STREAM_MISMATCH",
            Status::NotSupported => "HIPDNN_STATUS_NOT_SUPPORTED",
            Status::InternalError => "HIPDNN_STATUS_INTERNAL_ERROR",
            Status::AllocFailed => "HIPDNN_STATUS_ALLOC_FAILED",
            Status::InternalErrorHostAllocationFailed => {
                "HIPDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED"
            }
            Status::InternalErrorDeviceAllocationFailed => {
                "HIPDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"
            }
            Status::ExecutionFailed => "HIPDNN_STATUS_EXECUTION_FAILED",
            Status::PluginError => "HIPDNN_STATUS_PLUGIN_ERROR",
            Status::VersionMismatch => "HIPDNN_STATUS_VERSION_MISMATCH",
        }
    }
}

/// A failed backend call: the status and a message naming the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", status.name())]
pub struct BackendError {
    /// The status the C ABI would return.
    pub status: Status,
    /// Human-readable cause (what `hipdnnGetLastErrorString` would return).
    pub message: String,
    /// For `BAD_PARAM_SIZE_INSUFFICIENT` from a two-call byte API: the size in bytes the output
    /// buffer needs (upstream writes it to `*size` before failing). `None` for other errors.
    pub required_size: Option<usize>,
}

impl BackendError {
    /// Builds an error from a status and a message (no required size).
    pub fn new(status: Status, message: impl Into<String>) -> Self {
        BackendError {
            status,
            message: message.into(),
            required_size: None,
        }
    }

    /// `BAD_PARAM_SIZE_INSUFFICIENT` for an output buffer of `given` bytes when `required` are
    /// needed; the message names both sizes and [`BackendError::required_size`] holds `required`.
    pub fn size_insufficient(what: &str, given: usize, required: usize) -> Self {
        BackendError {
            status: Status::BadParamSizeInsufficient,
            message: format!(
                "{what}: output buffer of {given} bytes is too small, {required} bytes needed"
            ),
            required_size: Some(required),
        }
    }
}

/// Shorthand for backend results.
pub type BackendResult<T> = Result<T, BackendError>;

/// `hipdnnPluginStatus_t`: the status an engine returns.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PluginStatus {
    /// `HIPDNN_PLUGIN_STATUS_SUCCESS` (0).
    Success = 0,
    /// `HIPDNN_PLUGIN_STATUS_BAD_PARAM` (1).
    BadParam = 1,
    /// `HIPDNN_PLUGIN_STATUS_INVALID_VALUE` (2): damaged input.
    InvalidValue = 2,
    /// `HIPDNN_PLUGIN_STATUS_INTERNAL_ERROR` (3).
    InternalError = 3,
    /// `HIPDNN_PLUGIN_STATUS_ALLOC_FAILED` (4).
    AllocFailed = 4,
    /// `HIPDNN_PLUGIN_STATUS_NOT_APPLICABLE` (5): valid input this engine cannot serve here.
    NotApplicable = 5,
    /// `HIPDNN_PLUGIN_STATUS_NOT_INITIALIZED` (6).
    NotInitialized = 6,
}

/// A failed engine call: the engine's status and its last-error text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status:?}: {message}")]
pub struct PluginError {
    /// The engine's status.
    pub status: PluginStatus,
    /// The engine's message (upstream: `hipdnnPluginGetLastErrorString`).
    pub message: String,
}

impl PluginError {
    /// Builds an engine error.
    pub fn new(status: PluginStatus, message: impl Into<String>) -> Self {
        PluginError {
            status,
            message: message.into(),
        }
    }
    /// `NOT_APPLICABLE` with a message.
    pub fn not_applicable(message: impl Into<String>) -> Self {
        Self::new(PluginStatus::NotApplicable, message)
    }
    /// `INVALID_VALUE` with a message.
    pub fn invalid_value(message: impl Into<String>) -> Self {
        Self::new(PluginStatus::InvalidValue, message)
    }
    /// `INTERNAL_ERROR` with a message.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(PluginStatus::InternalError, message)
    }
    /// `BAD_PARAM` with a message.
    pub fn bad_param(message: impl Into<String>) -> Self {
        Self::new(PluginStatus::BadParam, message)
    }
}

/// Shorthand for engine results.
pub type PluginResult<T> = Result<T, PluginError>;
