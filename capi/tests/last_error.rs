//! The last error is per thread: a failure on one thread is not seen by another; peek keeps
//! it, get clears it; the text names the function.

mod common;

use common::sym;
use std::ffi::{CStr, c_char, c_void};

fn read(clear: bool) -> String {
    let name = if clear {
        "hipdnnGetLastErrorString"
    } else {
        "hipdnnPeekLastErrorString_ext"
    };
    // SAFETY: exact signature of the export.
    let f: unsafe extern "C" fn(*mut c_char, usize) = unsafe { sym(name) };
    let mut buf = [0 as c_char; 512];
    // SAFETY: 512-byte buffer; the library NUL-terminates.
    unsafe {
        f(buf.as_mut_ptr(), buf.len());
        CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
    }
}

#[test]
fn last_error_is_per_thread_and_get_clears_while_peek_keeps() {
    // SAFETY: exact signatures of the exports.
    let destroy: unsafe extern "C" fn(*mut c_void) -> i32 = unsafe { sym("hipdnnDestroy") };
    let level: unsafe extern "C" fn(i32) -> i32 =
        unsafe { sym("hipdnnBackendSetGlobalLogLevel_ext") };
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let b2 = barrier.clone();
    let other = std::thread::spawn(move || {
        // SAFETY: a null handle is refused without being dereferenced.
        assert_eq!(unsafe { destroy(std::ptr::null_mut()) }, 3);
        b2.wait(); // main fails now
        b2.wait();
        read(true)
    });
    barrier.wait();
    // SAFETY: plain value argument.
    assert_eq!(unsafe { level(17) }, 2);
    barrier.wait();
    let theirs = other.join().unwrap();
    assert!(theirs.starts_with("hipdnnDestroy: "), "{theirs}");
    let mine = read(false);
    assert!(
        mine.starts_with("hipdnnBackendSetGlobalLogLevel_ext: "),
        "{mine}"
    );
    assert!(mine.contains("17"), "{mine}");
    assert_eq!(read(false), mine, "peek keeps");
    assert_eq!(read(true), mine, "get returns it");
    assert_eq!(read(true), "", "and clears it");
}
