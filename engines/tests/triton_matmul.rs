//! The Triton pack pipeline's committed outputs and the matmul launch contract
//! (`hipkernel.matmul.dispatch.v1`), without a device: descriptor fields, code-object
//! structure (ELF machine, AMD e_flags, kernel symbol and `.kd`), parameter lists equal to the
//! contract's, launch-value round trips, specialization decisions and exact refusals.

use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::kernel::KernelArgument;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::conv_dgrad::{self, CONV_DGRAD_V1};
use hipdnn_engines::ingestor::packs::conv_fprop::{self, CONV_FPROP_V1};
use hipdnn_engines::ingestor::packs::conv_wgrad::{self, CONV_WGRAD_V1};
use hipdnn_engines::ingestor::packs::matmul::{
    MATMUL_V1, MatmulV1Handler, MatmulV1Inputs, TritonConfig, signature,
};

/// The contract's signature of a family's variant.
fn family_signature(family: &str, spec: bool) -> Vec<KernelArgument> {
    match family {
        "matmul" => signature(spec),
        "conv_fprop" => conv_fprop::signature(spec),
        "conv_dgrad" => conv_dgrad::signature(spec),
        "conv_wgrad" => conv_wgrad::signature(spec),
        f => panic!("unknown family {f}"),
    }
}
use hipdnn_engines::ingestor::{CodeObjectReader, KpackCodeObjectReader};
use std::path::PathBuf;

const ARCHES: [&str; 5] = ["gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"];

fn packed(arch: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("kernels/packed")
        .join(arch)
}

fn json(arch: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(packed(arch).join("triton.json")).unwrap())
        .unwrap()
}

#[test]
fn every_triton_entry_records_its_launch_facts() {
    for arch in ARCHES {
        let v = json(arch);
        let warp = if arch.starts_with("sm_") { 32 } else { 64 };
        let kernels = v["kernels"].as_array().unwrap();
        assert!(kernels.len() >= 8, "{arch}: {}", kernels.len());
        for k in kernels {
            assert_eq!(k["triton_version"], "3.9.0");
            assert_eq!(k["warp_size"], warp, "{arch}");
            assert_eq!(k["global_scratch_size"], 0);
            assert_eq!(k["profile_scratch_size"], 0);
            assert!(k["num_warps"].as_u64().unwrap() >= 1);
            assert!(k["num_stages"].as_u64().unwrap() >= 1);
            assert!(k["shared_bytes"].as_u64().is_some());
            let family = k["family"].as_str().unwrap();
            assert_eq!(
                k["kernel_source"]["symbol"].as_str().unwrap(),
                format!("hipdnn_{family}")
            );
            let spec = k["variant"] == "spec";
            let params: Vec<&str> = k["params"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["name"].as_str().unwrap())
                .collect();
            let want: Vec<_> = family_signature(family, spec)
                .into_iter()
                .map(|a| a.name)
                .collect();
            assert_eq!(params, want, "{arch} {}", k["name"]);
            let ce = &k["constexprs"];
            assert_eq!(ce["BLOCK_M"], k["block"]["m"]);
            if spec && family == "conv_dgrad" {
                for n in ["sdyk", "swc", "sxc", "groups"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
            } else if spec && family == "conv_wgrad" {
                for n in ["sdyk", "sxc", "swc", "groups"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                let d: Vec<&str> = k["divisibility_16"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap())
                    .collect();
                for n in ["dy_ptr", "x_ptr", "dw_ptr", "C", "K", "sdyp", "sxh", "swr"] {
                    assert!(d.contains(&n), "{n}");
                }
                assert!(!d.contains(&"ws_ptr"), "the workspace pointer has no hint");
            } else if spec && family == "conv_fprop" {
                for n in ["sxc", "swc", "syk", "groups"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
            } else if spec {
                assert_eq!(ce["stride_ak"], 1);
                assert_eq!(ce["stride_bn"], 1);
                assert_eq!(ce["stride_cn"], 1);
                let d: Vec<&str> = k["divisibility_16"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap())
                    .collect();
                let hinted: &[&str] = if family == "matmul" {
                    &["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am"]
                } else if family == "conv_dgrad" {
                    &["dy_ptr", "w_ptr", "dx_ptr", "C", "K", "sdyp", "sxh"]
                } else {
                    &["x_ptr", "w_ptr", "y_ptr", "C", "K", "sxh", "syp"]
                };
                for n in hinted {
                    assert!(d.contains(n), "{n}");
                }
            } else {
                assert_eq!(k["divisibility_16"].as_array().unwrap().len(), 0);
            }
            let cfg = TritonConfig::parse(k["name"].as_str().unwrap()).unwrap();
            assert_eq!(cfg.spec, spec);
            assert_eq!(cfg.shared_bytes, k["shared_bytes"].as_i64().unwrap());
            assert_eq!(cfg.num_warps, k["num_warps"].as_i64().unwrap());
            assert_eq!(cfg.warp_size, warp);
        }
    }
}

fn u16le(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32le(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64le(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// Names in the ELF64 `.symtab`/`.dynsym` sections.
fn elf_symbols(b: &[u8]) -> Vec<String> {
    let shoff = u64le(b, 0x28) as usize;
    let shentsize = u16le(b, 0x3A) as usize;
    let shnum = u16le(b, 0x3C) as usize;
    let sh = |i: usize| shoff + i * shentsize;
    let mut out = Vec::new();
    for i in 0..shnum {
        let ty = u32le(b, sh(i) + 4);
        if ty != 2 && ty != 11 {
            continue;
        }
        let off = u64le(b, sh(i) + 0x18) as usize;
        let size = u64le(b, sh(i) + 0x20) as usize;
        let link = u32le(b, sh(i) + 0x28) as usize;
        let stroff = u64le(b, sh(link) + 0x18) as usize;
        for s in (off..off + size).step_by(24) {
            let name = u32le(b, s) as usize;
            let end = b[stroff + name..].iter().position(|c| *c == 0).unwrap();
            out.push(String::from_utf8_lossy(&b[stroff + name..stroff + name + end]).into_owned());
        }
    }
    out
}

/// Explicit arguments (kind, size, offset) of `kernel` in the AMDGPU metadata note
/// (`NT_AMDGPU_METADATA`, msgpack), hidden arguments dropped.
fn amd_metadata_args(b: &[u8], kernel: &str) -> Vec<(String, u32, u32)> {
    let shoff = u64le(b, 0x28) as usize;
    let shentsize = u16le(b, 0x3A) as usize;
    let shnum = u16le(b, 0x3C) as usize;
    for i in 0..shnum {
        let sh = shoff + i * shentsize;
        if u32le(b, sh + 4) != 7 {
            continue; // SHT_NOTE
        }
        let (off, size) = (u64le(b, sh + 0x18) as usize, u64le(b, sh + 0x20) as usize);
        let mut p = off;
        while p + 12 <= off + size {
            let (namesz, descsz, ty) = (
                u32le(b, p) as usize,
                u32le(b, p + 4) as usize,
                u32le(b, p + 8),
            );
            let name = &b[p + 12..p + 12 + namesz];
            let desc_at = p + 12 + namesz.div_ceil(4) * 4;
            let desc = &b[desc_at..desc_at + descsz];
            p = desc_at + descsz.div_ceil(4) * 4;
            if ty != 32 || !name.starts_with(b"AMDGPU") {
                continue;
            }
            let v = rmpv::decode::read_value(&mut &desc[..]).unwrap();
            let get = |m: &rmpv::Value, k: &str| {
                m.as_map()
                    .unwrap()
                    .iter()
                    .find(|(kk, _)| kk.as_str() == Some(k))
                    .map(|(_, v)| v.clone())
            };
            for k in get(&v, "amdhsa.kernels").unwrap().as_array().unwrap() {
                if get(k, ".name")
                    .and_then(|n| n.as_str().map(str::to_string))
                    .as_deref()
                    != Some(kernel)
                {
                    continue;
                }
                return get(k, ".args")
                    .unwrap()
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| {
                        (
                            get(a, ".value_kind").unwrap().as_str().unwrap().to_string(),
                            get(a, ".size").unwrap().as_u64().unwrap() as u32,
                            get(a, ".offset").unwrap().as_u64().unwrap() as u32,
                        )
                    })
                    .filter(|a| !a.0.starts_with("hidden_"))
                    .collect();
            }
        }
    }
    panic!("no AMDGPU metadata for {kernel}");
}

#[test]
fn triton_code_objects_are_elf_of_their_arch_with_the_kernel_symbol() {
    for arch in ARCHES {
        let descs = load_triton_descriptors(&packed(arch)).unwrap();
        assert_eq!(descs.len(), json(arch)["kernels"].as_array().unwrap().len());
        let mut families = std::collections::BTreeSet::new();
        for d in &descs {
            let cfg = TritonConfig::parse(&d.name).unwrap();
            families.insert(cfg.family.clone());
            let (dispatch, symbol) = match cfg.family.as_str() {
                "matmul" => (MATMUL_V1, "hipdnn_matmul"),
                "conv_dgrad" => (CONV_DGRAD_V1, "hipdnn_conv_dgrad"),
                "conv_wgrad" => (CONV_WGRAD_V1, "hipdnn_conv_wgrad"),
                _ => (CONV_FPROP_V1, "hipdnn_conv_fprop"),
            };
            assert_eq!(d.dispatch, dispatch);
            let s = d.single_source().unwrap();
            let bytes = KpackCodeObjectReader
                .read(s.library.as_ref().unwrap(), &s.toc_key, arch, &s.sha256)
                .unwrap_or_else(|e| panic!("{arch} {}: {}", d.name, e.message));
            assert_eq!(&bytes[..4], b"\x7fELF", "{arch} {}", d.name);
            assert_eq!(bytes[4], 2, "ELF64");
            let machine = u16le(&bytes, 0x12);
            let flags = u32le(&bytes, 0x30);
            let syms = elf_symbols(&bytes);
            assert!(syms.iter().any(|n| n == symbol), "{arch} {}", d.name);
            if arch.starts_with("gfx") {
                assert_eq!(machine, 224, "EM_AMDGPU");
                assert_eq!(bytes[7], 64, "ELFOSABI_AMDGPU_HSA");
                let mach = match arch {
                    "gfx90a" => 0x3F,
                    "gfx942" => 0x4C,
                    _ => 0x4F,
                };
                assert_eq!(flags & 0xFF, mach, "{arch} e_flags {flags:#x}");
                let meta = amd_metadata_args(&bytes, symbol);
                let recorded: Vec<_> = s
                    .signature
                    .iter()
                    .map(|a| (a.kind.clone(), a.size, a.offset))
                    .collect();
                assert_eq!(meta, recorded, "{arch} {}: metadata args", d.name);
                assert!(syms.iter().any(|n| *n == format!("{symbol}.kd")), "{arch}");
            } else {
                assert_eq!(machine, 190, "EM_CUDA");
                let sm = if arch == "sm_90" { 90 } else { 80 };
                // The SM version: bits 0..8 (sm_80: 0x500550) or, in the newer layout Triton's
                // ptxas writes for sm_90, bits 8..16 (0x0a005a04).
                assert!(
                    flags & 0xFF == sm || (flags >> 8) & 0xFF == sm,
                    "{arch} e_flags {flags:#x}"
                );
            }
            assert_eq!(s.signature, family_signature(&cfg.family, cfg.spec));
        }
        assert_eq!(
            families.into_iter().collect::<Vec<_>>(),
            ["conv_dgrad", "conv_fprop", "conv_wgrad", "matmul"]
        );
    }
}

fn inputs(spec: bool) -> MatmulV1Inputs {
    let mut config =
        TritonConfig::parse("matmul_f16_spec_128x256x64_g8_w8_s3_sh147456_ws32").unwrap();
    config.spec = spec;
    MatmulV1Inputs {
        uids: [1, 2, 4],
        bias_uid: Some(3),
        dtype: 2,
        batch: 2,
        mnk: [512, 256, 128],
        strides: [65536, 128, 1, 32768, 256, 1, 131072, 256, 1],
        epilogue: 3,
        config,
    }
}

#[test]
fn matmul_launch_values_round_trip_and_give_the_geometry() {
    for spec in [true, false] {
        let i = inputs(spec);
        let l = i.to_launch().unwrap();
        let back = MatmulV1Handler
            .restore_launch(MATMUL_V1, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(l.geometry.grid, [4, 2, 1]);
        assert_eq!(l.geometry.block, [256, 1, 1]);
        assert_eq!(l.geometry.shared_mem_bytes, 147456);
        assert_eq!(l.pointer_uids, vec![1, 2, 4, 3]);
        assert_eq!(l.scalar_args.len(), if spec { 10 } else { 13 });
        assert_eq!(
            MatmulV1Handler.launch_signature_for(&l.launch_values),
            signature(spec)
        );
        assert_eq!(signature(spec).len(), if spec { 16 } else { 19 });
    }
}

#[test]
fn matmul_spec_decision_follows_the_hints() {
    assert!(inputs(true).fits_spec());
    let mut i = inputs(true);
    i.mnk[2] = 100;
    assert!(!i.fits_spec(), "K not a multiple of 16");
    let mut i = inputs(true);
    i.strides[5] = 256; // column-major B
    assert!(!i.fits_spec());
    let mut i = inputs(true);
    i.strides[0] = 0; // broadcast A: stride 0 is a multiple of 16
    assert!(i.fits_spec());
}

#[test]
fn matmul_restore_refusals_are_exact() {
    let d = MATMUL_V1;
    let mut v = inputs(true).to_values();
    v.insert("stride_bn".into(), LaunchValue::Int(7));
    let e = MatmulV1Handler.restore_launch(d, &v).unwrap_err().message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.matmul.dispatch.v1' name the spec variant, whose unit strides 'stride_ak', 'stride_bn' and 'stride_cn' must be 1"), "{e}");
    let mut v = inputs(false).to_values();
    v.insert("epilogue".into(), LaunchValue::Int(2));
    let e = MatmulV1Handler.restore_launch(d, &v).unwrap_err().message;
    assert!(e.ends_with("launch value 'bias.uid' of dispatch 'hipkernel.matmul.dispatch.v1' must be present exactly when 'epilogue' bit 1 is set; epilogue is 2"), "{e}");
    let mut v = inputs(false).to_values();
    v.insert("warp_size".into(), LaunchValue::Int(48));
    let e = MatmulV1Handler.restore_launch(d, &v).unwrap_err().message;
    assert!(e.ends_with("give 384 threads per block; the contract takes warp size 32 or 64 and at most 1024 threads"), "{e}");
    let mut v = inputs(false).to_values();
    v.insert("tile".into(), LaunchValue::Int(1));
    let e = MatmulV1Handler.restore_launch(d, &v).unwrap_err().message;
    assert!(
        e.contains("launch value 'tile' is not part of the contract"),
        "{e}"
    );
}

fn conv_inputs(spec: bool) -> conv_fprop::ConvFpropV1Inputs {
    let config = TritonConfig::parse(if spec {
        "conv_fprop_f16_spec_128x64x64_g8_w4_s3_sh49152_ws32"
    } else {
        "conv_fprop_f16_generic_64x64x32_g8_w4_s2_sh8192_ws32"
    })
    .unwrap();
    // NHWC x [2, 32, 9, 9], KRSC w [48, 32, 3, 3], pad 1, stride 2 → y [2, 48, 5, 5] NHWC.
    conv_fprop::ConvFpropV1Inputs {
        uids: [1, 2, 4],
        bias_uid: Some(3),
        dtype: 2,
        shape: [2, 32, 9, 9, 48, 5, 5, 3, 3, 1, 1, 2, 2, 1, 1, 1],
        strides: [2592, 1, 288, 32, 288, 1, 96, 32, 1200, 1, 240, 48],
        epilogue: 3,
        config,
    }
}

#[test]
fn conv_fprop_launch_values_round_trip_and_spec_follows_the_layout() {
    use hipdnn_engines::ingestor::packs::conv_fprop::ConvFpropV1Handler;
    for spec in [true, false] {
        let i = conv_inputs(spec);
        assert!(i.fits_spec());
        let l = i.to_launch().unwrap();
        assert_eq!(
            ConvFpropV1Handler
                .restore_launch(CONV_FPROP_V1, &l.launch_values)
                .unwrap(),
            l
        );
        assert_eq!(l.geometry.block, [128, 1, 1]);
        // 50 output pixels, 48 channels: cdiv(50, bm) · cdiv(48, 64) tiles, one group.
        assert_eq!(l.geometry.grid, [1, 1, 1]);
        assert_eq!(l.scalar_args.len(), if spec { 25 } else { 29 });
        assert_eq!(
            ConvFpropV1Handler.launch_signature_for(&l.launch_values),
            conv_fprop::signature(spec)
        );
    }
    let mut i = conv_inputs(true);
    i.strides[1] = 81; // NCHW x
    assert!(!i.fits_spec());
    let mut i = conv_inputs(true);
    i.shape[1] = 24; // C not a multiple of 16
    assert!(!i.fits_spec());
    let mut v = conv_inputs(true).to_values();
    v.insert("groups".into(), LaunchValue::Int(2));
    let e = ConvFpropV1Handler
        .restore_launch(CONV_FPROP_V1, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_fprop.dispatch.v1' name the spec variant, whose 'groups', 'sxc', 'swc' and 'syk' must be 1"), "{e}");
    let mut v = conv_inputs(false).to_values();
    v.insert("groups".into(), LaunchValue::Int(5));
    let e = ConvFpropV1Handler
        .restore_launch(CONV_FPROP_V1, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_fprop.dispatch.v1': 'groups' must divide 'c' and 'k'"), "{e}");
}

fn wgrad_inputs(spec: bool) -> conv_wgrad::ConvWgradV1Inputs {
    let config = TritonConfig::parse(if spec {
        "conv_wgrad_f16_spec_64x64x64_g8_w4_s3_sh49152_ws32"
    } else {
        "conv_wgrad_f16_generic_64x64x32_g8_w4_s2_sh16384_ws32"
    })
    .unwrap();
    // NHWC dy [32, 64, 56, 56], NHWC x [32, 64, 56, 56], KRSC dw [64, 64, 3, 3], pad 1.
    let mut i = conv_wgrad::ConvWgradV1Inputs {
        uids: [1, 2, 3],
        dtype: 2,
        shape: [32, 64, 56, 56, 64, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1],
        strides: [200704, 1, 3584, 64, 200704, 1, 3584, 64, 576, 1, 192, 64],
        config,
    };
    i.shape[16] = i.static_split();
    i
}

#[test]
fn conv_wgrad_static_split_fills_the_device_and_sizes_the_workspace() {
    // 64 rows × 576 columns in 64×64 tiles: 9 tiles, so cdiv(264, 9) = 30 splits (the
    // reduction 32·56·56 = 100352 allows 196 of 512 terms).
    let i = wgrad_inputs(true);
    assert_eq!(i.tiles(), 9);
    assert_eq!(i.shape[16], 30);
    let l = i.to_launch().unwrap();
    assert_eq!(l.geometry.grid, [9, 30, 1]);
    assert_eq!(l.geometry.block, [128, 1, 1]);
    // 64 int32 counters (256 bytes), then 9·30 f32 tiles of 64·64.
    assert_eq!(i.counter_bytes(), 256);
    assert_eq!(l.workspace_bytes, 256 + 9 * 30 * 64 * 64 * 4);
    use hipdnn_engines::ingestor::packs::conv_wgrad::ConvWgradV1Handler;
    assert_eq!(ConvWgradV1Handler.zeroed_workspace_bytes(&l), 256);
    // A large layer gives enough tiles on its own: no split, no workspace.
    let mut big = wgrad_inputs(true);
    big.shape[1] = 512;
    big.shape[4] = 512;
    assert!(big.tiles() >= conv_wgrad::TARGET_PROGRAMS);
    assert_eq!(big.static_split(), 1);
    big.shape[16] = 1;
    let l = big.to_launch().unwrap();
    assert_eq!(l.workspace_bytes, 0);
    assert_eq!(ConvWgradV1Handler.zeroed_workspace_bytes(&l), 0);
    // A short reduction limits the split: batch 1 at 7×7 has 49 terms, so one split.
    let mut short = wgrad_inputs(true);
    short.shape[0] = 1;
    short.shape[5] = 7;
    short.shape[6] = 7;
    assert_eq!(short.static_split(), 1);
}

#[test]
fn conv_wgrad_launch_values_round_trip_and_spec_follows_the_layout() {
    use hipdnn_engines::ingestor::packs::conv_wgrad::ConvWgradV1Handler;
    for spec in [true, false] {
        let i = wgrad_inputs(spec);
        assert!(i.fits_spec());
        let l = i.to_launch().unwrap();
        let back = ConvWgradV1Handler
            .restore_launch(CONV_WGRAD_V1, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(back.launch_values["split"], LaunchValue::Int(30));
        assert_eq!(l.pointer_uids, vec![1, 2, 3]);
        assert_eq!(l.scalar_args.len(), if spec { 25 } else { 29 });
        assert_eq!(
            ConvWgradV1Handler.launch_signature_for(&l.launch_values),
            conv_wgrad::signature(spec)
        );
        let names: Vec<_> = conv_wgrad::signature(spec)
            .into_iter()
            .map(|a| a.name)
            .collect();
        assert_eq!(names[3], "ws_ptr");
        assert_eq!(names.len(), 4 + l.scalar_args.len() + 2);
    }
    let mut i = wgrad_inputs(true);
    i.strides[5] = 3136; // NCHW x
    assert!(!i.fits_spec());
    let mut i = wgrad_inputs(true);
    i.shape[4] = 40; // K not a multiple of 16
    assert!(!i.fits_spec());
}

#[test]
fn conv_wgrad_restore_refusals_are_exact() {
    use hipdnn_engines::ingestor::packs::conv_wgrad::ConvWgradV1Handler;
    let d = CONV_WGRAD_V1;
    let refuse = |v| {
        ConvWgradV1Handler
            .restore_launch(d, &v)
            .unwrap_err()
            .message
    };
    let mut v = wgrad_inputs(true).to_values();
    v.insert("sxc".into(), LaunchValue::Int(64));
    let e = refuse(v);
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_wgrad.dispatch.v1' name the spec variant, whose 'groups', 'sdyk', 'sxc' and 'swc' must be 1"), "{e}");
    let mut v = wgrad_inputs(false).to_values();
    v.insert("groups".into(), LaunchValue::Int(3));
    let e = refuse(v);
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_wgrad.dispatch.v1': 'groups' must divide 'c' and 'k'"), "{e}");
    let mut v = wgrad_inputs(false).to_values();
    v.insert("split".into(), LaunchValue::Int(0));
    let e = refuse(v);
    assert!(e.contains("'split'") && e.contains("[1, 65535]"), "{e}");
    let mut v = wgrad_inputs(false).to_values();
    v.insert("split".into(), LaunchValue::Int(65535));
    v.insert("block_m".into(), LaunchValue::Int(256));
    v.insert("block_n".into(), LaunchValue::Int(256));
    let e = refuse(v);
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_wgrad.dispatch.v1' give more than 2147483647 tiles, reduction terms or workspace floats, or more than 65535 groups"), "{e}");
    let mut v = wgrad_inputs(false).to_values();
    v.insert("warp_size".into(), LaunchValue::Int(48));
    let e = refuse(v);
    assert!(e.ends_with("launch values 'warp_size' and 'num_warps' of dispatch 'hipkernel.conv_wgrad.dispatch.v1' give 192 threads per block; the contract takes warp size 32 or 64 and at most 1024 threads"), "{e}");
    let mut v = wgrad_inputs(false).to_values();
    v.remove("split");
    let e = refuse(v);
    assert!(e.contains("'split'"), "{e}");
}
