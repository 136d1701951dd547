//! Test helpers: the built library, the header, a C/C++ compiler from the `cc` crate, and the
//! exported functions loaded with `libloading` (the library's soname file does not exist in
//! target/, so the tests open it by path).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// target/<profile>/ (the test binary lives in target/<profile>/deps/).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Path of libhipdnn_backend.so, built (or found up to date) by `cargo build -p hipdnn-capi
/// --lib` (with `--release` when this test binary is a release build) once per test process:
/// cargo does not rebuild a cdylib-only library before its integration tests, so the tests
/// build it themselves.
pub fn library_path() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            // Same profile as this test binary: `cargo test --release` looks in target/release.
            let release = profile_dir().ends_with("release");
            let out = Command::new(env!("CARGO"))
                .args(["build", "-p", "hipdnn-capi", "--lib"])
                .args(release.then_some("--release"))
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .expect("cargo runs");
            assert!(
                out.status.success(),
                "cargo build -p hipdnn-capi failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let p = profile_dir().join("libhipdnn_backend.so");
            assert!(p.exists(), "{p:?} was not built");
            p
        })
        .clone()
}

/// capi/include.
pub fn header_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

fn build(cpp: bool) -> cc::Build {
    let target = if cfg!(target_arch = "x86_64") {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-unknown-linux-gnu"
    };
    let mut b = cc::Build::new();
    b.cpp(cpp)
        .target(target)
        .host(target)
        .opt_level(1)
        .debug(true)
        .cargo_metadata(false)
        .warnings(true)
        .extra_warnings(true)
        .include(header_dir());
    b
}

/// A compiler command (C11 or C++17) with the header directory and warnings as errors.
pub fn compiler(cpp: bool) -> Command {
    let mut cmd = build(cpp).get_compiler().to_command();
    cmd.arg(if cpp { "-std=c++17" } else { "-std=c11" });
    cmd.arg("-Werror");
    cmd
}

/// A directory holding `libhipdnn_backend.so` and `libhipdnn_backend.so.<major>` links to the
/// built library, so programs linked with `-lhipdnn_backend` find it through their rpath.
pub fn link_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let lib = library_path();
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    std::os::unix::fs::symlink(&lib, d.path().join("libhipdnn_backend.so")).unwrap();
    std::os::unix::fs::symlink(&lib, d.path().join(format!("libhipdnn_backend.so.{major}")))
        .unwrap();
    d
}

/// Compiles and links `src` against the library into `out`; panics with the compiler output on
/// failure.
pub fn build_program(src: &Path, out: &Path, cpp: bool, links: &Path) {
    let mut cmd = compiler(cpp);
    cmd.arg(src)
        .arg("-o")
        .arg(out)
        .arg(format!("-L{}", links.display()))
        .arg(format!("-Wl,-rpath,{}", links.display()))
        .arg("-lhipdnn_backend");
    let o = cmd.output().expect("compiler runs");
    assert!(
        o.status.success(),
        "compiling {src:?} failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The library opened by path.
pub fn lib() -> &'static libloading::Library {
    static LIB: std::sync::OnceLock<libloading::Library> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        // The tests pass host buffers: handles must use the CPU even on a GPU machine.
        // SAFETY: every call into the library goes through this initializer first, and the
        // test code reads no environment variable concurrently with it.
        unsafe { std::env::set_var("HIPDNN_RS_DEVICE", "cpu") };
        // SAFETY: loading our own library runs no initializers with preconditions.
        unsafe { libloading::Library::new(library_path()) }.expect("the library loads")
    })
}

/// The exported function `name` as a `T` (a function pointer type).
///
/// # Safety
/// `T` must be the function's exact C signature.
pub unsafe fn sym<T: Copy>(name: &str) -> T {
    // SAFETY: caller contract (T is the exact signature).
    unsafe { *lib().get::<T>(name.as_bytes()).unwrap() }
}
