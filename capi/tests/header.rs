//! The header compiles as C11 and as C++17 with every enumerator value of upstream's headers
//! pinned by `_Static_assert`s (tests/c/enum_values.c), with and without HIP's header.

use std::io::Write as _;

mod common;

use std::path::Path;

fn syntax_check(cpp: bool, extra: &[&str]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/enum_values.c");
    let mut cmd = common::compiler(cpp);
    if cpp {
        cmd.args(["-x", "c++", "-D_Static_assert=static_assert"]);
    }
    cmd.args(extra).arg("-fsyntax-only").arg(&src);
    let o = cmd.output().expect("the compiler runs");
    assert!(
        o.status.success(),
        "{}:\n{}",
        if cpp { "C++" } else { "C" },
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn enum_values_of_the_reference_compile_against_the_header_as_c() {
    syntax_check(false, &[]);
}

#[test]
fn enum_values_of_the_reference_compile_against_the_header_as_cpp() {
    syntax_check(true, &[]);
}

#[test]
fn the_header_takes_hip_stream_t_from_hip_when_present() {
    let hip = [
        "/usr/include/hip/hip_runtime_api.h",
        "/opt/rocm/include/hip/hip_runtime_api.h",
    ];
    let Some(h) = hip.iter().find(|p| Path::new(p).exists()) else {
        drop(writeln!(
            std::io::stderr(),
            "skipped: no HIP header installed"
        ));
        return;
    };
    let inc = format!(
        "-I{}",
        Path::new(h).parent().unwrap().parent().unwrap().display()
    );
    syntax_check(false, &["-D__HIP_PLATFORM_AMD__", &inc]);
    syntax_check(true, &["-D__HIP_PLATFORM_AMD__", &inc]);
}

#[test]
fn the_gpu_check_program_compiles_against_the_header() {
    // tests/c/gpu_conv.cpp runs by hand on a GPU machine (docs/c-api.md); here it must at
    // least keep compiling.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/gpu_conv.cpp");
    let o = common::compiler(true)
        .arg("-fsyntax-only")
        .arg(&src)
        .output()
        .expect("the compiler runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
