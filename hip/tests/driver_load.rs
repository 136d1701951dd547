//! Loading the HIP/CUDA driver without a GPU: whichever driver this build uses (run-time
//! loading, or `hip-sys` linking), `GpuRuntime::load` either finds devices or reports `NoGpu`
//! with the driver's own error name; on a machine with Debian's ROCm 5.x runtime
//! (`libamdhip64-5`) the run-time loader now resolves it (older `hipGetDeviceProperties`
//! symbol) instead of skipping it as "symbol missing".

use std::io::Write as _;

use hipdnn_hip::sys::{self, Platform};
use hipdnn_hip::{GpuRuntime, NoGpu};

/// Whether an AMD runtime library is installed where the loader looks.
fn amd_runtime_installed() -> bool {
    sys::HIP_LIBRARY_NAMES
        .iter()
        .any(|n| std::path::Path::new(&format!("/usr/lib/x86_64-linux-gnu/{n}")).exists())
        || std::path::Path::new("/opt/rocm/lib/libamdhip64.so").exists()
}

#[test]
fn run_time_loading_reaches_the_amd_runtime_when_it_is_installed() {
    if !amd_runtime_installed() {
        drop(writeln!(
            std::io::stderr(),
            "skipped: no libamdhip64 installed (apt-get install libamdhip64-5)"
        ));
        return;
    }
    let driver = match sys::load_at_run_time() {
        Ok(mut d) => d.remove(0),
        Err(tried) => panic!("libamdhip64 is installed but did not load: {tried:?}"),
    };
    assert_eq!(driver.platform(), Platform::Amd);
    assert!(
        driver.library_name().starts_with("libamdhip64") || driver.library_name().starts_with('/'),
        "{}",
        driver.library_name()
    );
    match GpuRuntime::with_driver(driver) {
        Ok(rt) => drop(writeln!(
            std::io::stderr(),
            "skipped: an AMD GPU is present ({:?})",
            rt.devices()
        )),
        Err(NoGpu { reason }) => {
            println!("no GPU (expected here): {reason}");
            // e.g. "libamdhip64.so loaded, but hipInit failed: hipErrorNoDevice: …"
            let (_, after) = reason
                .split_once(" loaded, but ")
                .unwrap_or_else(|| panic!("{reason}"));
            let name = after
                .split(": ")
                .nth(1)
                .unwrap_or_else(|| panic!("{reason}"));
            assert!(name.starts_with("hipError"), "{reason}");
        }
    }
}

#[cfg(feature = "hip-sys")]
#[test]
fn the_hip_sys_build_uses_the_linked_amd_runtime() {
    let mut drivers = sys::load().expect("the linked driver is always there");
    assert_eq!(
        drivers.len(),
        1,
        "the hip-sys build loads nothing at run time"
    );
    let driver = drivers.remove(0);
    assert_eq!(driver.platform(), Platform::Amd);
    assert_eq!(driver.library_name(), "libamdhip64 (linked by hip-sys)");
    // hipGetErrorName of a status the runtime knows, through the linked symbol.
    let (name, _) = driver.error_name_and_text(1);
    assert_eq!(name, "hipErrorInvalidValue");
    match GpuRuntime::load() {
        Ok(rt) => drop(writeln!(
            std::io::stderr(),
            "skipped: an AMD GPU is present ({:?})",
            rt.devices()
        )),
        Err(e) => {
            let text = e.to_string();
            println!("{text}");
            assert!(
                text.starts_with("no GPU: libamdhip64 (linked by hip-sys) loaded, but hip"),
                "{text}"
            );
            assert!(text.contains(": hipError"), "{text}");
        }
    }
}
