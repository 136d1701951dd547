//! The panic boundary of the C ABI: every `extern "C"` body runs inside [`guard`].
//!
//! A panic is caught with [`std::panic::catch_unwind`] and turned into
//! [`Status::InternalError`]; its text is kept per thread and read with [`take_last_panic`]
//! (the C ABI's last-error functions will read it). Nothing here allocates on the caller's
//! behalf and nothing is freed across the boundary.

use hipdnn_backend::Status;
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `body` and returns its status; a panic inside becomes [`Status::InternalError`] and its
/// message (`"panic: <text>"`) is kept as this thread's last panic text.
///
/// `body` is run under [`AssertUnwindSafe`]: after a panic, the state it borrowed may be
/// half-updated, so exports must only touch state that a panic leaves consistent (descriptors
/// are replaced whole, never edited in place).
pub fn guard(body: impl FnOnce() -> Status) -> Status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(status) => status,
        Err(payload) => {
            let text = if let Some(s) = payload.downcast_ref::<&str>() {
                (*s).to_string()
            } else if let Some(s) = payload.downcast_ref::<String>() {
                s.clone()
            } else {
                "non-string panic payload".to_string()
            };
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("panic: {text}")));
            Status::InternalError
        }
    }
}

/// Takes (and clears) this thread's last panic text, if a guarded body panicked since the last
/// call.
pub fn take_last_panic() -> Option<String> {
    LAST_PANIC.with(|p| p.borrow_mut().take())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_internal_error_with_its_text_kept() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let status = guard(|| panic!("boom {}", 7));
        std::panic::set_hook(prev);
        assert_eq!(status, Status::InternalError);
        assert_eq!(take_last_panic().as_deref(), Some("panic: boom 7"));
        assert_eq!(take_last_panic(), None);
    }

    #[test]
    fn a_returned_status_passes_through() {
        assert_eq!(guard(|| Status::BadParam), Status::BadParam);
        assert_eq!(take_last_panic(), None);
    }
}
