//! Device selection and enumeration (issue 38), on any machine: `hipdnn::devices()` lists the
//! GPUs or says why there is no GPU runtime; `Handle::gpu_on(ordinal)` past the count is
//! `INVALID_VALUE` naming the count; the CPU handle has no module statistics. The GPU parts run
//! in `multi_gpu.rs`.

use hipdnn::{ErrorCode, ExecutionDevice, Handle};
use hipdnn_engines::gpu::GpuUnavailable;

#[test]
fn an_ordinal_past_the_count_is_invalid_value_naming_the_count() {
    let e = hipdnn::Error::from(GpuUnavailable::NoSuchDevice {
        ordinal: 3,
        count: 2,
    });
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(e.is_gpu_unavailable());
    assert_eq!(
        e.message,
        "no GPU: device ordinal 3 is out of range: the runtime reports 2 devices (ordinals 0..2)"
    );
    let one = GpuUnavailable::NoSuchDevice {
        ordinal: 1,
        count: 1,
    };
    assert_eq!(
        one.to_string(),
        "no GPU: device ordinal 1 is out of range: the runtime reports 1 device (ordinals 0..1)"
    );
    // Any other reason stays GRAPH_NOT_SUPPORTED.
    let e = hipdnn::Error::from(GpuUnavailable::NoKernels {
        arch: "sm_75".into(),
        path: "k/sm_75/kernels.json".into(),
    });
    assert_eq!(e.code, ErrorCode::GraphNotSupported);
}

#[test]
fn devices_lists_the_gpus_or_says_why_there_is_no_runtime() {
    match hipdnn::devices() {
        Ok(list) => {
            // A machine with a GPU runtime: ordinals in order, real arch names, and the first
            // ordinal past the list refused by name.
            for (i, d) in list.iter().enumerate() {
                assert_eq!(d.ordinal, i);
                assert!(
                    d.arch.starts_with("sm_") || d.arch.starts_with("gfx"),
                    "{d:?}"
                );
            }
            let n = list.len();
            let e = Handle::gpu_on(n).unwrap_err();
            if n > 0 {
                assert_eq!(e.code, ErrorCode::InvalidValue, "{e}");
                assert!(
                    e.message.starts_with(&format!(
                        "no GPU: device ordinal {n} is out of range: the runtime reports {n} device"
                    )),
                    "{e}"
                );
                assert!(
                    e.message.contains("hipdnn::devices() lists the devices"),
                    "{e}"
                );
            }
        }
        Err(e) => {
            println!("no GPU runtime here: {e}");
            assert!(e.is_gpu_unavailable(), "{e}");
            assert_eq!(e.code, ErrorCode::GraphNotSupported);
            assert!(e.message.starts_with("no GPU: "), "{e}");
            // Without a runtime every ordinal is refused the same way, with the fix named.
            for ordinal in [0, 7] {
                let g = Handle::gpu_on(ordinal).unwrap_err();
                assert!(g.is_gpu_unavailable(), "{g}");
                assert_eq!(g.code, ErrorCode::GraphNotSupported);
                assert!(
                    g.message
                        .ends_with("use Handle::new() or Handle::cpu() to run on the CPU"),
                    "{g}"
                );
            }
        }
    }
}

#[test]
fn a_cpu_handle_has_no_module_statistics_and_on_current_device_falls_back() {
    assert_eq!(Handle::cpu().unwrap().module_stats(), None);
    let h = Handle::on_current_device().unwrap();
    match h.device() {
        ExecutionDevice::Cpu => assert_eq!(h.module_stats(), None),
        ExecutionDevice::Gpu { .. } => {
            let s = h.module_stats().expect("a GPU handle has statistics");
            assert!(s.resident as u64 <= s.loads, "{s:?}");
        }
    }
}
