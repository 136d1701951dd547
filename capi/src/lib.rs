//! `hipdnn-capi`: the C ABI of hipdnn-rs, built as `libhipdnn_backend.so`, a drop-in for
//! upstream hipDNN's backend library (header: `capi/include/hipdnn_backend.h`; what is
//! supported: `docs/c-api.md`).
//!
//! It sits on top of the SDK (`hipdnn`) so that `hipdnnCreate` registers the same engines a
//! Rust [`hipdnn::Handle`] has, and graphs, plans and containers are (de)serialized by the
//! same code as in Rust, so the bytes agree in both directions.
//!
//! Contract of every export (rustls-ffi style): the body runs in [`error::entry`] (a panic
//! never crosses `extern "C"`; it becomes `HIPDNN_STATUS_INTERNAL_ERROR` with the panic text
//! as the thread's last error); every handle and descriptor pointer is looked up in a
//! registry before use (null, foreign or destroyed → `BAD_PARAM_NULL_POINTER`); byte getters
//! follow the two-call size query; a failed create leaves the caller's output untouched; the
//! library never frees caller memory and the caller never frees ours (handles and
//! descriptors are released with their destroy functions).

pub mod abi;
pub mod attr;
pub mod desc;
pub mod enums;
pub mod error;
pub mod handle;
pub mod location;
pub mod log;
pub mod ops;
pub mod panic;
pub mod registry;
pub mod serialize;
pub mod sink;
pub mod state;
pub mod value;

use hipdnn_backend::Status;
use std::ffi::{CStr, c_char};

/// Version reported to C, `MAJOR.MINOR.PATCH.TWEAK`. The major is the one upstream's frontend
/// checks (its `HIPDNN_FRONTEND_VERSION_MAJOR`, 0 for upstream's tree; upstream frontend's VersionUtils).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), ".0");
static VERSION_C: &CStr = {
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), ".0\0").as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("version has an interior NUL"),
    }
};

/// `hipdnnVersionString_ext`: a static `"MAJOR.MINOR.PATCH.TWEAK"` string (never null).
#[unsafe(no_mangle)]
pub extern "C" fn hipdnnVersionString_ext() -> *const c_char {
    VERSION_C.as_ptr()
}

/// `hipdnnGetVersion_ext` (deprecated): the same string through `*version`; null →
/// NULL_POINTER.
///
/// # Safety
/// `version` null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnGetVersion_ext(version: *mut *const c_char) -> Status {
    error::entry("hipdnnGetVersion_ext", || {
        error::non_null(version, "version")?;
        // SAFETY: non-null, valid for a write.
        unsafe { *version = VERSION_C.as_ptr() };
        Ok(())
    })
}

/// `hipdnnGetErrorString`: the status's enumerator name as a static string
/// (`"HIPDNN_STATUS_UNKNOWN"` for a number that is not a status).
#[unsafe(no_mangle)]
pub extern "C" fn hipdnnGetErrorString(status: i32) -> *const c_char {
    let s: &CStr = match status {
        0 => c"HIPDNN_STATUS_SUCCESS",
        1 => c"HIPDNN_STATUS_NOT_INITIALIZED",
        2 => c"HIPDNN_STATUS_BAD_PARAM",
        3 => c"HIPDNN_STATUS_BAD_PARAM_NULL_POINTER",
        4 => c"HIPDNN_STATUS_BAD_PARAM_NOT_FINALIZED",
        5 => c"HIPDNN_STATUS_BAD_PARAM_OUT_OF_BOUND",
        6 => c"HIPDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT",
        7 => c"HIPDNN_STATUS_BAD_PARAM_STREAM_MISMATCH",
        8 => c"HIPDNN_STATUS_NOT_SUPPORTED",
        9 => c"HIPDNN_STATUS_INTERNAL_ERROR",
        10 => c"HIPDNN_STATUS_ALLOC_FAILED",
        11 => c"HIPDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
        12 => c"HIPDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
        13 => c"HIPDNN_STATUS_EXECUTION_FAILED",
        14 => c"HIPDNN_STATUS_PLUGIN_ERROR",
        15 => c"HIPDNN_STATUS_VERSION_MISMATCH",
        _ => c"HIPDNN_STATUS_UNKNOWN",
    };
    s.as_ptr()
}

fn copy_last_error(name: &str, message: *mut c_char, max: usize, clear: bool) {
    let _ = panic::guard(|| {
        if message.is_null() || max == 0 {
            let text = format!("{name}: message buffer is null or maxSize is 0");
            sink::emit_internal(sink::Severity::Error, &text);
            error::set_last_error(text);
            return Status::BadParamNullPointer;
        }
        let text = error::last_error(clear);
        let max = max.min(error::ERROR_STRING_MAX_LENGTH);
        // SAFETY: `message` is non-null and valid for `max > 0` bytes (caller contract).
        unsafe { error::copy_c_string_truncated(&text, message, max) };
        Status::Success
    });
    let _ = panic::take_last_panic();
}

/// `hipdnnGetLastErrorString`: copies this thread's last error (NUL-terminated, truncated to
/// `maxSize`) and clears it. A null `message` or `maxSize == 0` is itself recorded as the
/// last error and nothing is copied.
///
/// # Safety
/// `message` null or valid for `maxSize` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnGetLastErrorString(message: *mut c_char, max: usize) {
    copy_last_error("hipdnnGetLastErrorString", message, max, true);
}

/// `hipdnnPeekLastErrorString_ext`: as [`hipdnnGetLastErrorString`] without clearing.
///
/// # Safety
/// `message` null or valid for `maxSize` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnPeekLastErrorString_ext(message: *mut c_char, max: usize) {
    copy_last_error("hipdnnPeekLastErrorString_ext", message, max, false);
}
