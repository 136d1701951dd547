//! Where this `libhipdnn_backend.so` is: its path (from the dynamic loader, `dladdr`) is
//! reported to the engines once, before the first handle is created, so that the install
//! location `<dir of the library>/hipdnn/kernels` is found wherever the library was moved
//! (`cargo xtask install --prefix P` puts the library in `P/lib` and the kernels in
//! `P/lib/hipdnn/kernels`; the lookup order is in `hipdnn_engines::kernel_location`).

use std::ffi::{CStr, OsStr, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Once;

/// The canonical path of the shared object holding this code, as the dynamic loader reports
/// it, or `None` when `dladdr` cannot name it (then no install location next to the library
/// is looked at).
pub fn loaded_library_path() -> Option<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let addr = loaded_library_path as *const c_void;
    // SAFETY: `dladdr` only looks `addr` up in the loader's tables (it never dereferences it)
    // and writes one `Dl_info` through the pointer, which is valid for that write.
    let found = unsafe { libc::dladdr(addr, info.as_mut_ptr()) };
    if found == 0 {
        return None;
    }
    // SAFETY: the value was zero-initialised (null pointers are valid for every field) and
    // `dladdr` succeeded, so it filled it in.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: `dli_fname` is non-null and points to the NUL-terminated path the loader keeps
    // for this object, valid while it stays loaded (it is: this code is running); the bytes
    // are copied at once.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(OsStr::from_bytes(name.to_bytes()));
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

static REPORTED: Once = Once::new();

/// Reports [`loaded_library_path`] to the engines
/// (`hipdnn_engines::gpu::set_loaded_library`), once per process.
pub fn report_loaded_library() {
    REPORTED.call_once(|| match loaded_library_path() {
        Some(p) => {
            log::debug!("hipdnn: libhipdnn_backend.so loaded from {}", p.display());
            hipdnn_engines::gpu::set_loaded_library(p);
        }
        None => log::debug!(
            "hipdnn: dladdr cannot name the loaded libhipdnn_backend.so; no kernels are looked for next to it"
        ),
    });
}
