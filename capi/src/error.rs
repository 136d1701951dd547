//! Last error per thread and the `extern "C"` entry rule.
//!
//! Every exported function runs its body through [`entry`]: the body returns
//! `Result<(), BackendError>`; a failure's message becomes the thread's last error (prefixed
//! with the function's name) and its status is returned; a panic becomes
//! `HIPDNN_STATUS_INTERNAL_ERROR` with the panic text as last error ([`crate::panic::guard`]).
//! Success leaves the last error as it was (upstream records failures only).
//!
//! This module also holds the small pointer and buffer helpers every export uses, so that the
//! null-pointer and two-call size-query rules are written once (upstream HipdnnBackend.cpp's conventions).

use crate::panic;
use hipdnn_backend::{BackendError, Status};
use std::cell::RefCell;

/// Longest last-error text copied out, NUL included (`HIPDNN_ERROR_STRING_MAX_LENGTH`).
pub const ERROR_STRING_MAX_LENGTH: usize = 2048;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Result of an export's body.
pub type Ffi<T = ()> = Result<T, BackendError>;

/// Records `message` as this thread's last error (replacing the previous one).
pub fn set_last_error(message: impl Into<String>) {
    let m = message.into();
    LAST_ERROR.with(|e| *e.borrow_mut() = m);
}

/// This thread's last error; `clear` empties it after reading.
pub fn last_error(clear: bool) -> String {
    LAST_ERROR.with(|e| {
        if clear {
            std::mem::take(&mut *e.borrow_mut())
        } else {
            e.borrow().clone()
        }
    })
}

/// Runs the body of the export `name` under the boundary rules (module docs) and returns the
/// status for C.
pub fn entry(name: &str, body: impl FnOnce() -> Ffi) -> Status {
    let status = panic::guard(|| match body() {
        Ok(()) => Status::Success,
        Err(e) => {
            set_last_error(format!("{name}: {}", e.message));
            crate::sink::emit_internal(
                crate::sink::Severity::Error,
                &format!("{name}: {}: {}", e.status.name(), e.message),
            );
            e.status
        }
    });
    if let Some(text) = panic::take_last_panic() {
        set_last_error(format!("{name}: {text}"));
    }
    status
}

/// An error with `status` and `message`.
pub fn err(status: Status, message: impl Into<String>) -> BackendError {
    BackendError::new(status, message)
}

/// `BAD_PARAM_NULL_POINTER` "`what` is null" when `p` is null.
pub fn non_null<T>(p: *const T, what: &str) -> Ffi {
    if p.is_null() {
        Err(err(Status::BadParamNullPointer, format!("{what} is null")))
    } else {
        Ok(())
    }
}

/// The two-call size query of a byte getter (as upstream): writes `bytes.len()` to `*size`;
/// with a null `out` that is all; with `out` and `requested < len` →
/// `BAD_PARAM_SIZE_INSUFFICIENT` (the size is already written, `out` untouched); otherwise
/// copies the bytes.
///
/// # Safety
/// `size` must be valid for a write; `out`, when non-null, valid for `requested` bytes.
pub unsafe fn copy_out(bytes: &[u8], requested: usize, size: *mut usize, out: *mut u8) -> Ffi {
    non_null(size, "the size pointer")?;
    // SAFETY: `size` is non-null and valid for a write (caller contract).
    unsafe { *size = bytes.len() };
    if out.is_null() {
        return Ok(());
    }
    if requested < bytes.len() {
        return Err(BackendError::size_insufficient(
            "output buffer",
            requested,
            bytes.len(),
        ));
    }
    // SAFETY: `out` is valid for `requested >= bytes.len()` bytes and does not overlap our
    // owned `bytes` (caller contract).
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len()) };
    Ok(())
}

/// A borrowed byte slice from a C pointer and length.
///
/// # Safety
/// `p` must be valid for `len` bytes for the returned lifetime (or null).
pub unsafe fn bytes_in<'a>(p: *const u8, len: usize, what: &str) -> Ffi<&'a [u8]> {
    non_null(p, what)?;
    // SAFETY: non-null and valid for `len` bytes (caller contract).
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// A NUL-terminated C string as UTF-8.
///
/// # Safety
/// `p` must be null or point to a NUL-terminated string.
pub unsafe fn str_in<'a>(p: *const std::ffi::c_char, what: &str) -> Ffi<&'a str> {
    non_null(p, what)?;
    // SAFETY: non-null and NUL-terminated (caller contract).
    let c = unsafe { std::ffi::CStr::from_ptr(p) };
    c.to_str()
        .map_err(|_| err(Status::BadParam, format!("{what} is not valid UTF-8")))
}

/// Copies `text` with a NUL terminator into `buf` of `max` bytes, truncating to `max - 1`.
///
/// # Safety
/// `buf` must be valid for `max` bytes; `max > 0`.
pub unsafe fn copy_c_string_truncated(text: &str, buf: *mut std::ffi::c_char, max: usize) {
    let n = text.len().min(max - 1);
    // SAFETY: `buf` is valid for `max > n` bytes (caller contract).
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
}

/// The error type of [`Ffi`].
pub type BackendErrorAlias = BackendError;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_export_returns_internal_error_with_the_panic_text_as_last_error() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let status = entry("hipdnnSomething", || panic!("index {} out of range", 3));
        std::panic::set_hook(prev);
        assert_eq!(status, Status::InternalError);
        assert_eq!(
            last_error(false),
            "hipdnnSomething: panic: index 3 out of range"
        );
    }

    #[test]
    fn a_failure_names_the_function_and_success_keeps_the_previous_error() {
        let s = entry("hipdnnA", || Err(err(Status::BadParam, "bad thing")));
        assert_eq!(s, Status::BadParam);
        assert_eq!(entry("hipdnnB", || Ok(())), Status::Success);
        assert_eq!(last_error(true), "hipdnnA: bad thing");
        assert_eq!(last_error(true), "");
    }
}
