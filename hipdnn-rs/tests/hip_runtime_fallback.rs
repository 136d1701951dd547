//! With the `hip-sys` feature (the AMD HIP runtime linked at build time) on a machine without
//! an AMD GPU, `Handle::new()` reaches the runtime, falls back to the CPU, and the reason it
//! logs at INFO carries the runtime's own error name (from `hipGetErrorName`).
//!
//! Run: `HIP_PATH=/usr cargo test -p hipdnn --features hip-sys --test hip_runtime_fallback`
//! (Debian 12: `apt-get install libamdhip64-dev`). Without the feature this file is empty.
//! A `hip-sys` build links the runtime, so on a machine without it this test does not build
//! (the hip-sys build script names the missing header); it skips, printing why, when the
//! runtime reports an AMD device.
#![cfg(feature = "hip-sys")]

use std::sync::Mutex;

use hipdnn::{ExecutionDevice, Handle};
use hipdnn_hip::sys::{self, Platform};

/// Every log record of this test binary, as `LEVEL message`.
static RECORDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        RECORDS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{} {}", record.level(), record.args()));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture;

#[test]
fn handle_new_falls_back_to_the_cpu_with_the_runtimes_error_name() {
    let mut drivers = sys::load().expect("the hip-sys build links the HIP runtime");
    assert_eq!(
        drivers.len(),
        1,
        "the hip-sys build loads nothing at run time"
    );
    let driver = drivers.remove(0);
    assert_eq!(driver.platform(), Platform::Amd);
    // What the runtime itself says about this machine: hipInit, then hipGetDeviceCount.
    let init = driver.init();
    let first_failure = if init.status != 0 {
        Some(init)
    } else {
        let mut n = 0;
        let c = driver.device_count(&mut n);
        if c.status != 0 {
            Some(c)
        } else if n > 0 {
            println!(
                "skipped: the AMD runtime reports {n} device(s); this test needs a machine without an AMD GPU"
            );
            return;
        } else {
            None
        }
    };

    log::set_logger(&CAPTURE).unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let handle = Handle::new().unwrap();
    assert_eq!(handle.device(), &ExecutionDevice::Cpu);
    assert!(!handle.is_gpu());

    let records = RECORDS.lock().unwrap().clone();
    let reason = records
        .iter()
        .find_map(|r| {
            r.strip_prefix("INFO hipdnn: using the CPU (")?
                .strip_suffix(')')
        })
        .unwrap_or_else(|| panic!("no CPU fallback record in {records:?}"));
    println!("logged reason: {reason}");
    assert!(
        reason.starts_with("no GPU: libamdhip64 (linked by hip-sys) loaded, but "),
        "{reason}"
    );
    match first_failure {
        Some(call) => {
            let (name, _) = driver.error_name_and_text(call.status);
            assert!(name.starts_with("hipError"), "{name}");
            assert!(
                reason.contains(&format!("{} failed: {name}: ", call.hip)),
                "{reason} should name {} and {name}",
                call.hip
            );
        }
        None => assert!(reason.contains("it reports 0 devices"), "{reason}"),
    }
}
