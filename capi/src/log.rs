//! Logging: the global log level, user log callbacks and the backend log sink.
//!
//! Messages come from two places: failures of exported functions (ERROR, with the status and
//! message) and the SDK/backend's `log` records (forwarded once a callback is registered).
//! A message reaches a callback when its severity is at least the global level and at least
//! the callback's own minimum. Callbacks are called on the thread that logs, outside any lock
//! (`HIPDNN_LOG_CALLBACK_MODE_ASYNC` is accepted and delivered synchronously, docs/c-api.md).

use crate::error::{entry, err};
use crate::sink::{CALLBACKS, LEVEL, Registered, SEV_OFF, Severity, UserCallback, emit_internal};
use hipdnn_backend::Status;
use std::ffi::{c_char, c_void};
use std::sync::atomic::Ordering;

struct Forward;

impl log::Log for Forward {
    fn enabled(&self, _m: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        let sev = match r.level() {
            log::Level::Error => Severity::Error,
            log::Level::Warn => Severity::Warn,
            _ => Severity::Info,
        };
        emit_internal(sev, &format!("{}", r.args()));
    }
    fn flush(&self) {}
}

static FORWARD: Forward = Forward;

fn install_forwarding() {
    // Fails harmlessly when a logger is already installed in this library's copy of `log`.
    if log::set_logger(&FORWARD).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
}

fn severity(v: i32) -> Option<Severity> {
    Some(match v {
        0 => Severity::Info,
        1 => Severity::Warn,
        2 => Severity::Error,
        3 => Severity::Fatal,
        _ => return None,
    })
}

/// `hipdnnLoggingCallback_ext`: the backend log sink; forwards `msg` at `severity` to the user
/// callbacks. A null `msg` or an unknown severity is ignored.
///
/// # Safety
/// `msg` null or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnLoggingCallback_ext(sev: i32, msg: *const c_char) {
    let _ = crate::panic::guard(|| {
        if msg.is_null() {
            return Status::Success;
        }
        let Some(s) = severity(sev) else {
            return Status::Success;
        };
        // SAFETY: non-null and NUL-terminated (caller contract).
        let text = unsafe { std::ffi::CStr::from_ptr(msg) }.to_string_lossy();
        emit_internal(s, &text);
        Status::Success
    });
    let _ = crate::panic::take_last_panic();
}

/// `hipdnnSetUserLogCallback_ext`: registers `callback` with `userHandle` (the pair is the key)
/// at `minLevel`; `minLevel == OFF` removes it. Null callback → NULL_POINTER; a level or mode
/// out of range → BAD_PARAM.
///
/// # Safety
/// `callback` must stay callable until removed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnSetUserLogCallback_ext(
    callback: Option<UserCallback>,
    min_level: i32,
    mode: i32,
    user: *mut c_void,
) -> Status {
    entry("hipdnnSetUserLogCallback_ext", || {
        let cb = callback.ok_or_else(|| err(Status::BadParamNullPointer, "callback is null"))?;
        if !(0..=SEV_OFF).contains(&min_level) {
            return Err(err(
                Status::BadParam,
                format!("minLevel {min_level} is not a hipdnnSeverity_t"),
            ));
        }
        if !(0..=1).contains(&mode) {
            return Err(err(
                Status::BadParam,
                format!("mode {mode} is not a hipdnnLogCallbackMode_t"),
            ));
        }
        let mut list = CALLBACKS.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|r| !(r.callback as usize == cb as usize && r.user == user as usize));
        if min_level != SEV_OFF {
            list.push(Registered {
                callback: cb,
                user: user as usize,
                min: min_level,
            });
            drop(list);
            install_forwarding();
        }
        Ok(())
    })
}

/// `hipdnnBackendSetGlobalLogLevel_ext`: INFO, WARN, ERROR, FATAL or OFF; anything else →
/// BAD_PARAM.
#[unsafe(no_mangle)]
pub extern "C" fn hipdnnBackendSetGlobalLogLevel_ext(level: i32) -> Status {
    entry("hipdnnBackendSetGlobalLogLevel_ext", || {
        if !(0..=SEV_OFF).contains(&level) {
            return Err(err(
                Status::BadParam,
                format!("level {level} is not a hipdnnSeverity_t"),
            ));
        }
        LEVEL.store(level, Ordering::Relaxed);
        Ok(())
    })
}

/// `hipdnnBackendGetGlobalLogLevel_ext`: null → BAD_PARAM (upstream's status, not
/// NULL_POINTER).
///
/// # Safety
/// `level` null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipdnnBackendGetGlobalLogLevel_ext(level: *mut i32) -> Status {
    entry("hipdnnBackendGetGlobalLogLevel_ext", || {
        if level.is_null() {
            return Err(err(Status::BadParam, "level is null"));
        }
        // SAFETY: non-null, valid for a write.
        unsafe { *level = LEVEL.load(Ordering::Relaxed) };
        Ok(())
    })
}
