//! Issue 37, class 8 (code for another device; TensorRT and ONNX Runtime shipped engines that
//! failed with raw driver codes on another compute capability or an older driver): a code
//! object's own header (ELF machine and flags, PTX `.version` / `.target`) is read before the
//! driver sees it (`CodeObjectIdentity`), and a plan whose code object is for another device is
//! refused with `NOT_APPLICABLE` naming both sides and calling no `hipModuleLoadData`, even when
//! its payload declares the device's own target (a doctored or mixed-up plan). Fake devices;
//! `gpu_code_for_other_device.rs` does the same through the real driver.

#[path = "ingestor_support.rs"]
mod support;

mod code_object_support;

use code_object_support::{doctored, generic_matmul_entry, matmul_graph, packed, packed_code, ptx};
use hipdnn_backend::engine::{Engine, EngineConfig};
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::gpu::{load_packed_descriptors, load_triton_descriptors};
use hipdnn_engines::ingestor::device::FixedDevice;
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::kernel::{CodeObjectIdentity, code_object_identity};
use hipdnn_engines::ingestor::{CodeObjectReader, KpackCodeObjectReader};
use hipdnn_engines::registry::pack_registry;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use support::FakeDevice;

const ARCHES: [&str; 5] = ["gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"];

fn engine(dev: Arc<FakeDevice>, arch: Option<&str>) -> IngestorEngine {
    let kernels = arch.map_or_else(Vec::new, |a| load_triton_descriptors(&packed(a)).unwrap());
    IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        kernels,
        Arc::new(FixedDevice(dev)),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    )
}

#[test]
fn every_packed_code_object_names_its_own_arch_and_is_refused_on_every_other() {
    let mut count = 0;
    for arch in ARCHES {
        let mut ks = load_triton_descriptors(&packed(arch)).unwrap();
        ks.extend(load_packed_descriptors(&packed(arch)).unwrap());
        for k in ks {
            let s = k.single_source().unwrap();
            let code = KpackCodeObjectReader
                .read(s.library.as_ref().unwrap(), &s.toc_key, arch, &s.sha256)
                .unwrap();
            let id = code_object_identity(&code);
            assert!(
                !matches!(
                    id,
                    CodeObjectIdentity::Other | CodeObjectIdentity::Ptx { .. }
                ),
                "{arch} {}: {id:?}",
                k.name
            );
            assert_eq!(id.refusal(arch), None, "{arch} {}", k.name);
            assert_eq!(
                id.refusal(&format!("{arch}:sramecc+:xnack-")),
                None,
                "{arch} {}",
                k.name
            );
            for other in ARCHES.iter().filter(|o| **o != arch) {
                assert!(id.refusal(other).is_some(), "{arch} {} on {other}", k.name);
            }
            count += 1;
        }
    }
    assert!(count > 1000, "{count}");
}

#[test]
fn headers_and_ptx_directives_are_read_and_judged() {
    // ELF64 little-endian headers: EM_CUDA ABI 7 (SM in bits 0–7), ABI 8 (bits 8–15), AMDGPU.
    let elf = |abi: u8, machine: u16, flags: u32| {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[8] = abi;
        b[0x12..0x14].copy_from_slice(&machine.to_le_bytes());
        b[0x30..0x34].copy_from_slice(&flags.to_le_bytes());
        b
    };
    let sm80 = code_object_identity(&elf(7, 190, 0x0050_0550));
    assert_eq!(sm80, CodeObjectIdentity::CudaElf { sm: 80 });
    assert_eq!(
        code_object_identity(&elf(8, 190, 0x0600_5a04)),
        CodeObjectIdentity::CudaElf { sm: 90 }
    );
    assert_eq!(sm80.refusal("sm_80"), None);
    assert_eq!(sm80.refusal("sm_86"), None);
    assert_eq!(
        sm80.refusal("sm_90").unwrap(),
        "is a CUDA cubin for sm_80 (its ELF header), which runs only on sm_8x at minor 0 or above"
    );
    let sm86 = code_object_identity(&elf(7, 190, 0x0056_0556));
    assert!(sm86.refusal("sm_80").is_some());
    assert!(sm80.refusal("gfx942").is_some());
    let gfx942 = code_object_identity(&elf(3, 224, 0x54c));
    assert_eq!(gfx942, CodeObjectIdentity::AmdgpuElf { mach: 0x4c });
    assert_eq!(gfx942.refusal("gfx942:sramecc+:xnack-"), None);
    assert_eq!(
        gfx942.refusal("gfx90a").unwrap(),
        "is an AMDGPU code object for gfx942 (its ELF header)"
    );
    // An EF_AMDGPU_MACH value outside the table: the driver decides on AMD, refused on NVIDIA.
    let unknown = code_object_identity(&elf(3, 224, 0x5ff));
    assert_eq!(unknown.refusal("gfx1151"), None);
    assert_eq!(
        unknown.refusal("sm_90").unwrap(),
        "is an AMDGPU code object (its ELF header, EF_AMDGPU_MACH 0xff)"
    );
    // PTX: the directives after comments, the first target of a list.
    let p = code_object_identity(&ptx("99.0", "sm_90", "k"));
    assert_eq!(
        p,
        CodeObjectIdentity::Ptx {
            version: "99.0".into(),
            target: "sm_90".into()
        }
    );
    assert_eq!(
        p.refusal("sm_90"),
        None,
        "a newer .version is the driver's call"
    );
    assert_eq!(p.refusal("sm_100"), None);
    assert_eq!(
        p.refusal("sm_80").unwrap(),
        "is PTX (.version 99.0) for .target sm_90, which needs an NVIDIA device at or above it"
    );
    assert!(p.refusal("gfx942").is_some());
    let listed = code_object_identity(b".version 8.4\n.target sm_90a, texmode_independent\n");
    assert_eq!(
        listed,
        CodeObjectIdentity::Ptx {
            version: "8.4".into(),
            target: "sm_90a".into()
        }
    );
    assert_eq!(listed.refusal("sm_90"), None);
    assert_eq!(
        code_object_identity(&[0xAB; 256]),
        CodeObjectIdentity::Other
    );
    assert_eq!(
        code_object_identity(b".versionless text"),
        CodeObjectIdentity::Other
    );
    assert_eq!(CodeObjectIdentity::Other.refusal("sm_90"), None);
}

/// A matmul plan saved on a fake device of `arch` with its code object swapped for `code`,
/// restored on a fresh fake device of `arch`: the refusal and the number of module loads.
fn restore_swapped(arch: &str, code: Vec<u8>) -> (hipdnn_backend::status::PluginError, usize) {
    let e = engine(FakeDevice::new(arch, 0), Some(arch));
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &matmul_graph(),
        )
        .unwrap();
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let dev = FakeDevice::new(arch, 0);
    let e2 = engine(dev.clone(), None);
    let err = e2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&doctored(&saved, code))
        .map(|_| ())
        .unwrap_err();
    (err, dev.loads.load(Ordering::SeqCst))
}

#[test]
fn a_plan_carrying_code_for_another_device_is_refused_before_the_driver_naming_both() {
    let cases: [(&str, Vec<u8>, &str); 5] = [
        (
            "sm_90",
            packed_code("sm_80", &generic_matmul_entry("sm_80")),
            "the code object is a CUDA cubin for sm_80 (its ELF header), which runs only on sm_8x at minor 0 or above; device 0 is 'sm_90'",
        ),
        (
            "sm_80",
            packed_code("sm_90", &generic_matmul_entry("sm_90")),
            "the code object is a CUDA cubin for sm_90 (its ELF header), which runs only on sm_9x at minor 0 or above; device 0 is 'sm_80'",
        ),
        (
            "sm_90",
            packed_code("gfx942", &generic_matmul_entry("gfx942")),
            "the code object is an AMDGPU code object for gfx942 (its ELF header); device 0 is 'sm_90'",
        ),
        (
            "gfx942",
            packed_code("gfx90a", &generic_matmul_entry("gfx90a")),
            "the code object is an AMDGPU code object for gfx90a (its ELF header); device 0 is 'gfx942'",
        ),
        (
            "sm_90",
            ptx("8.7", "sm_100", "hipdnn_matmul"),
            "the code object is PTX (.version 8.7) for .target sm_100, which needs an NVIDIA device at or above it; device 0 is 'sm_90'",
        ),
    ];
    for (arch, code, want) in cases {
        let (err, loads) = restore_swapped(arch, code);
        assert_eq!(err.status, PluginStatus::NotApplicable, "{}", err.message);
        assert!(
            err.message.starts_with(
                "ingestor plan is valid but cannot be saved or loaded here: hipModuleLoadData was not called for saved plan for kernel "
            ),
            "{}",
            err.message
        );
        assert!(
            err.message.ends_with(&format!(": {want}")),
            "{}",
            err.message
        );
        assert_eq!(loads, 0, "{arch}: the driver was called");
    }
    // The same plan with its own code object restores and loads once.
    let e = engine(FakeDevice::new("sm_90", 0), Some("sm_90"));
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &matmul_graph(),
        )
        .unwrap();
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let dev = FakeDevice::new("sm_90", 0);
    engine(dev.clone(), None)
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&saved)
        .unwrap();
    assert_eq!(dev.loads.load(Ordering::SeqCst), 1);
}
