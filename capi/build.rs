//! Sets the soname of libhipdnn_backend.so to `libhipdnn_backend.so.<major>` (the major of the
//! version string `hipdnnVersionString_ext` returns).

fn main() {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhipdnn_backend.so.{major}");
    println!("cargo:rerun-if-changed=build.rs");
}
