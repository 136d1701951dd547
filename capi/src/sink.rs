//! The log sink below [`crate::error`] and [`crate::log`]: the global level, the registered
//! user callbacks and [`emit_internal`], which sends a message to them. The exports that set
//! these (`hipdnnSetUserLogCallback_ext`, …) live in [`crate::log`]; this module imports
//! nothing from the crate, so both can use it without importing each other.

use std::ffi::{CString, c_char, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// `hipdnnSeverity_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(i32)]
pub enum Severity {
    /// `HIPDNN_SEV_INFO` (0).
    Info = 0,
    /// `HIPDNN_SEV_WARN` (1).
    Warn = 1,
    /// `HIPDNN_SEV_ERROR` (2).
    Error = 2,
    /// `HIPDNN_SEV_FATAL` (3).
    Fatal = 3,
}

/// `HIPDNN_SEV_OFF`.
pub const SEV_OFF: i32 = 4;

/// Default global level: WARN.
pub(crate) static LEVEL: AtomicI32 = AtomicI32::new(Severity::Warn as i32);

/// `hipdnnUserLogCallback_t`: user handle, severity, message.
pub(crate) type UserCallback = unsafe extern "C" fn(*mut c_void, i32, *const c_char);

/// A registered user callback: the callback and its user handle (the pair is the key), and
/// its minimum severity.
#[derive(Clone, Copy)]
pub(crate) struct Registered {
    pub(crate) callback: UserCallback,
    pub(crate) user: usize,
    pub(crate) min: i32,
}

/// The registered user callbacks.
pub(crate) static CALLBACKS: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

fn callbacks() -> Vec<Registered> {
    CALLBACKS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Sends `msg` at `sev` to every callback whose minimum it reaches, if it reaches the global
/// level. Interior NULs are replaced so the text always arrives.
pub fn emit_internal(sev: Severity, msg: &str) {
    let s = sev as i32;
    if s < LEVEL.load(Ordering::Relaxed) {
        return;
    }
    let list = callbacks();
    if list.is_empty() {
        return;
    }
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    for r in list.into_iter().filter(|r| s >= r.min) {
        // SAFETY: the caller registered `callback` as a valid function of this signature and
        // keeps it valid until it is removed; the message lives for the call.
        unsafe { (r.callback)(r.user as *mut c_void, s, c.as_ptr()) };
    }
}
