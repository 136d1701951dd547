//! The Triton pack pipeline's committed outputs and the matmul launch contract
//! (`hipkernel.matmul.dispatch.v2`, and v1 restores), without a device: descriptor fields, code-object
//! structure (ELF machine, AMD e_flags, kernel symbol and `.kd`), parameter lists equal to the
//! contract's, launch-value round trips, specialization decisions and exact refusals.

use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::device::KernelArgValue;
use hipdnn_engines::ingestor::framework::family::TritonFamily;
use hipdnn_engines::ingestor::framework::gemm::{EpilogueGemm, GemmCommon};
use hipdnn_engines::ingestor::framework::triton::TritonConfig;
use hipdnn_engines::ingestor::kernel::KernelArgument;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::batchnorm_fwd::{self, BATCHNORM_FWD_V1};
use hipdnn_engines::ingestor::packs::bn_bwd::{self, BN_BWD_V1};
use hipdnn_engines::ingestor::packs::conv_dgrad::{self, CONV_DGRAD_V1};
use hipdnn_engines::ingestor::packs::conv_fprop::{
    self, CONV_FPROP_V1, CONV_FPROP_V2, ConvFpropHandler, ConvFpropInputs,
};
use hipdnn_engines::ingestor::packs::conv_wgrad::{self, CONV_WGRAD_V1};
use hipdnn_engines::ingestor::packs::gather::{GATHER_V1, GatherInputs};
use hipdnn_engines::ingestor::packs::matmul::{
    MATMUL_V1, MATMUL_V2, MatmulHandler, MatmulInputs, param_names, signature,
};
use hipdnn_engines::ingestor::packs::norm_bwd::{self, NORM_BWD_V1};
use hipdnn_engines::ingestor::packs::norm_fwd::{self, NORM_FWD_V1};
use hipdnn_engines::ingestor::packs::pointwise_v3::{self, POINTWISE_V3};
use hipdnn_engines::ingestor::packs::pool_bwd::{self, RESAMPLE_BWD_V1};
use hipdnn_engines::ingestor::packs::pool_fwd::{self, RESAMPLE_FWD_V1};
use hipdnn_engines::ingestor::packs::reduce_fwd::{self, REDUCE_FWD_V1};
use hipdnn_engines::ingestor::packs::sdpa_bwd::{self, SDPA_BWD_V1};
use hipdnn_engines::ingestor::packs::sdpa_fwd::{self, SDPA_FWD_V1};

/// The contract's signature of a family's variant (`spec` launch value: 0 generic, 1 spec, 2
/// nchw, 3 nchwt, 4 bcol).
fn family_signature(family: &str, variant: i64) -> Vec<KernelArgument> {
    let spec = variant == 1;
    match family {
        "matmul" => signature(variant, 2),
        "conv_fprop" => conv_fprop::signature(variant, 2),
        "conv_dgrad" => conv_dgrad::signature(spec),
        "conv_wgrad" => conv_wgrad::signature(spec),
        "norm_fwd" => norm_fwd::signature(spec),
        "norm_bwd" => norm_bwd::signature(spec),
        "sdpa_fwd" => sdpa_fwd::signature(spec),
        "sdpa_bwd" => sdpa_bwd::signature(spec),
        "pool_bwd" => pool_bwd::signature(),
        "pointwise_fused" => pointwise_v3::signature(spec),
        "reduce_fwd" => reduce_fwd::signature(spec),
        "pool_fwd" => pool_fwd::signature(spec),
        "batchnorm_fwd" => batchnorm_fwd::signature(variant),
        "bn_bwd" => bn_bwd::signature(variant),
        "gather" => GatherInputs::signature(spec),
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
        // Most dynamic shared memory one block may use on the arch (sm_90 227 KiB, sm_80
        // 163 KiB, gfx90a/gfx942 64 KiB LDS, gfx950 160 KiB): an entry above it never
        // launches (Triton can over-allocate when branches hold separate pipelines).
        let shared_limit: u64 = match arch {
            "sm_90" => 232_448,
            "sm_80" => 166_912,
            "gfx950" => 163_840,
            _ => 65_536,
        };
        let kernels = v["kernels"].as_array().unwrap();
        assert!(kernels.len() >= 8, "{arch}: {}", kernels.len());
        for k in kernels {
            assert_eq!(k["triton_version"], "3.9.0");
            assert_eq!(k["warp_size"], warp, "{arch}");
            assert_eq!(k["global_scratch_size"], 0);
            assert_eq!(k["profile_scratch_size"], 0);
            assert!(k["num_warps"].as_u64().unwrap() >= 1);
            assert!(k["num_stages"].as_u64().unwrap() >= 1);
            let shared = k["shared_bytes"].as_u64().unwrap();
            assert!(
                shared <= shared_limit,
                "{arch} {}: {shared} shared bytes",
                k["name"]
            );
            let family = k["family"].as_str().unwrap();
            let nchw = k["variant"] == "nchw";
            let nchwt = k["variant"] == "nchwt";
            let grouped = k["variant"] == "grouped";
            let generic_conv = family == "conv_fprop" && k["variant"] == "generic";
            let suffix = match (nchw, nchwt, grouped, generic_conv) {
                (true, ..) => "_cf",
                (_, true, ..) => "_nt",
                (_, _, true, _) => "_dg",
                (.., true) => "_g",
                _ => "",
            };
            let symbol = match (family, k["variant"].as_str()) {
                ("pointwise_fused", Some("spec")) => "hipdnn_pointwise_flat".to_string(),
                ("pointwise_fused", _) => "hipdnn_pointwise".to_string(),
                ("batchnorm_fwd", Some("spec")) => "hipdnn_batchnorm_fwd_cl".to_string(),
                ("bn_bwd", Some("spec")) => "hipdnn_bn_bwd_cl".to_string(),
                _ => format!("hipdnn_{family}{suffix}"),
            };
            assert_eq!(k["kernel_source"]["symbol"].as_str().unwrap(), symbol);
            let spec = k["variant"] == "spec";
            let bcol = k["variant"] == "bcol";
            let variant = if spec {
                1
            } else if bcol {
                4
            } else if nchw {
                2
            } else if nchwt {
                3
            } else if grouped {
                5
            } else {
                0
            };
            let params: Vec<&str> = k["params"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["name"].as_str().unwrap())
                .collect();
            let want: Vec<_> = family_signature(family, variant)
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
                for n in ["sxc", "swc", "syk", "srk", "groups"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
            } else if family == "batchnorm_fwd" && (spec || nchw) {
                // spec: channels-last (unit channel strides); nchw: channels-first (unit
                // spatial strides); x and y aligned, the other strides hinted.
                let (ones, hinted) = if spec {
                    (
                        ["sxc", "syc"],
                        ["C", "sxn", "sxs", "syn", "sys", "x_ptr", "y_ptr"],
                    )
                } else {
                    (
                        ["sxs", "sys"],
                        ["S", "sxc", "sxn", "syc", "syn", "x_ptr", "y_ptr"],
                    )
                };
                for n in ones {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(k["divisibility_16"], serde_json::json!(hinted));
                assert_eq!(ce["BLOCK_N"], k["block"]["n"]);
            } else if family == "bn_bwd" && (spec || nchw) {
                // spec: channels-last (unit channel strides of dy, x, r, dx); nchw:
                // channels-first (unit spatial strides); dy, x and dx aligned, their other
                // strides hinted.
                let (ones, hinted) = if spec {
                    (
                        ["sdyc", "sxc", "src", "sdxc"],
                        [
                            "C", "dx_ptr", "dy_ptr", "sdxn", "sdxs", "sdyn", "sdys", "sxn", "sxs",
                            "x_ptr",
                        ],
                    )
                } else {
                    (
                        ["sdys", "sxs", "srs", "sdxs"],
                        [
                            "S", "dx_ptr", "dy_ptr", "sdxc", "sdxn", "sdyc", "sdyn", "sxc", "sxn",
                            "x_ptr",
                        ],
                    )
                };
                for n in ones {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(k["divisibility_16"], serde_json::json!(hinted));
            } else if nchw {
                assert_eq!(family, "conv_fprop");
                for n in ["sxw", "syq", "srq"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(
                    k["divisibility_16"],
                    serde_json::json!(["res_ptr", "w_ptr", "x_ptr", "y_ptr"])
                );
            } else if nchwt {
                assert_eq!(family, "conv_fprop");
                for n in ["syq", "srq"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(
                    k["divisibility_16"],
                    serde_json::json!(["C", "K", "res_ptr", "w_ptr", "ws_ptr", "x_ptr", "y_ptr"])
                );
            } else if spec && family == "norm_bwd" {
                for n in ["sdyc", "sxc", "sdxc", "ssc", "sdsc", "sdbc"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(
                    k["divisibility_16"],
                    serde_json::json!([
                        "cols",
                        "dx_ptr",
                        "dy_ptr",
                        "scale_ptr",
                        "sdxr",
                        "sdyr",
                        "sxr",
                        "x_ptr"
                    ])
                );
                assert_eq!(ce["BLOCK_N"], k["block"]["n"]);
            } else if spec && family == "norm_fwd" {
                for n in ["sxc", "syc", "ssc", "sbc"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(
                    k["divisibility_16"],
                    serde_json::json!([
                        "bias_ptr",
                        "cols",
                        "scale_ptr",
                        "sxr",
                        "syr",
                        "x_ptr",
                        "y_ptr"
                    ])
                );
                assert_eq!(ce["BLOCK_N"], k["block"]["n"]);
            } else if spec && family == "pointwise_fused" {
                assert_eq!(
                    k["divisibility_16"],
                    serde_json::json!(["n", "x0_ptr", "x1_ptr", "x2_ptr", "x3_ptr", "y_ptr"])
                );
                assert_eq!(ce["GROUP_M"], k["block"]["group_m"]);
            } else if spec && family == "sdpa_fwd" {
                for n in ["sqd", "skd", "svd", "sod"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
            } else if spec && family == "sdpa_bwd" {
                for n in ["sqd", "skd", "svd", "sod", "sdod", "sdqd", "sdkd", "sdvd"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                let d = k["divisibility_16"].as_array().unwrap();
                for n in ["D", "q_ptr", "do_ptr", "dv_ptr", "sqs", "sdvh"] {
                    assert!(d.contains(&serde_json::json!(n)), "{n}");
                }
                assert!(!d.contains(&serde_json::json!("stats_ptr")), "stats");
            } else if spec && family == "reduce_fwd" {
                for n in ["sxri", "syri", "yal"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(
                    k["divisibility_16"],
                    serde_json::json!(["rin", "sxi", "sxo", "sxro", "x_ptr", "y_ptr"])
                );
                assert_eq!(ce["BLOCK_N"], k["block"]["n"]);
            } else if spec && family == "gather" {
                for n in ["sth", "syc"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(
                    k["divisibility_16"],
                    serde_json::json!(["H", "stv", "syr", "t_ptr", "y_ptr"])
                );
                assert_eq!(ce["BLOCK_N"], k["block"]["n"]);
            } else if spec && family == "pool_fwd" {
                for n in ["sxc", "syc", "sic", "cl"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(
                    k["divisibility_16"],
                    serde_json::json!([
                        "channels", "i_ptr", "sid", "sih", "sin", "siw", "sxd", "sxh", "sxn",
                        "sxw", "syd", "syh", "syn", "syw", "x_ptr", "y_ptr"
                    ])
                );
                assert_eq!(ce["BLOCK_N"], k["block"]["n"]);
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
                // Matmul's M carries no hint (issue 33: decode GEMMs with M = 1 or 8 take
                // the spec and bcol entries).
                if family == "matmul" {
                    assert!(!d.contains(&"M"), "M");
                }
                let hinted: &[&str] = if family == "matmul" {
                    &["a_ptr", "b_ptr", "c_ptr", "N", "K", "stride_am"]
                } else if family == "conv_dgrad" {
                    &["dy_ptr", "w_ptr", "dx_ptr", "C", "K", "sdyp", "sxh"]
                } else {
                    &["x_ptr", "w_ptr", "y_ptr", "C", "K", "sxh", "syp"]
                };
                for n in hinted {
                    assert!(d.contains(n), "{n}");
                }
            } else if bcol {
                // Matmul with B column-major: B's K stride is the constexpr 1, its N stride
                // carries the divisibility hint.
                assert_eq!(family, "matmul");
                for n in ["stride_ak", "stride_bk", "stride_cn", "stride_rn"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                let d: Vec<&str> = k["divisibility_16"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap())
                    .collect();
                for n in [
                    "a_ptr",
                    "b_ptr",
                    "c_ptr",
                    "N",
                    "K",
                    "stride_am",
                    "stride_bn",
                ] {
                    assert!(d.contains(&n), "{n}");
                }
                assert!(!d.contains(&"stride_bk") && !d.contains(&"M"));
            } else if grouped {
                assert_eq!(family, "conv_fprop");
                for n in ["sxc", "syk", "srk"] {
                    assert_eq!(ce[n], 1, "{n}");
                }
                assert_eq!(
                    k["divisibility_16"],
                    serde_json::json!([
                        "res_ptr", "srn", "srp", "srq", "sxh", "sxn", "sxw", "syn", "syp", "syq",
                        "w_ptr", "x_ptr", "y_ptr"
                    ])
                );
            } else {
                assert_eq!(k["divisibility_16"].as_array().unwrap().len(), 0);
            }
            let cfg = TritonConfig::parse(k["name"].as_str().unwrap()).unwrap();
            assert_eq!(cfg.spec, spec);
            assert_eq!(cfg.b_col, bcol);
            assert_eq!(cfg.grouped, grouped);
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
            // The engine reads the configuration from the triton.json record; the entry's name
            // (written by xtask from the same record) spells the same facts.
            let cfg = d
                .config
                .clone()
                .expect("a Triton descriptor carries its record's config");
            assert_eq!(
                Some(&cfg),
                TritonConfig::parse(&d.name).as_ref(),
                "{arch} {}",
                d.name
            );
            families.insert(cfg.family.clone());
            let (dispatch, symbol) = match cfg.family.as_str() {
                "matmul" => (MATMUL_V2, "hipdnn_matmul"),
                "conv_dgrad" => (CONV_DGRAD_V1, "hipdnn_conv_dgrad"),
                "conv_wgrad" => (CONV_WGRAD_V1, "hipdnn_conv_wgrad"),
                "norm_fwd" => (NORM_FWD_V1, "hipdnn_norm_fwd"),
                "norm_bwd" => (NORM_BWD_V1, "hipdnn_norm_bwd"),
                "sdpa_fwd" => (SDPA_FWD_V1, "hipdnn_sdpa_fwd"),
                "sdpa_bwd" => (SDPA_BWD_V1, "hipdnn_sdpa_bwd"),
                "pool_bwd" => (RESAMPLE_BWD_V1, "hipdnn_pool_bwd"),
                "pointwise_fused" if cfg.spec => (POINTWISE_V3, "hipdnn_pointwise_flat"),
                "pointwise_fused" => (POINTWISE_V3, "hipdnn_pointwise"),
                "reduce_fwd" => (REDUCE_FWD_V1, "hipdnn_reduce_fwd"),
                "pool_fwd" => (RESAMPLE_FWD_V1, "hipdnn_pool_fwd"),
                "gather" => (GATHER_V1, "hipdnn_gather"),
                "batchnorm_fwd" if cfg.spec => (BATCHNORM_FWD_V1, "hipdnn_batchnorm_fwd_cl"),
                "batchnorm_fwd" if cfg.channels_first => {
                    (BATCHNORM_FWD_V1, "hipdnn_batchnorm_fwd_cf")
                }
                "batchnorm_fwd" => (BATCHNORM_FWD_V1, "hipdnn_batchnorm_fwd"),
                "bn_bwd" if cfg.spec => (BN_BWD_V1, "hipdnn_bn_bwd_cl"),
                "bn_bwd" if cfg.channels_first => (BN_BWD_V1, "hipdnn_bn_bwd_cf"),
                "bn_bwd" => (BN_BWD_V1, "hipdnn_bn_bwd"),
                _ if cfg.channels_first => (CONV_FPROP_V2, "hipdnn_conv_fprop_cf"),
                _ if cfg.transposing => (CONV_FPROP_V2, "hipdnn_conv_fprop_nt"),
                _ if cfg.grouped => (CONV_FPROP_V2, "hipdnn_conv_fprop_dg"),
                _ if cfg.spec => (CONV_FPROP_V2, "hipdnn_conv_fprop"),
                _ => (CONV_FPROP_V2, "hipdnn_conv_fprop_g"),
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
            assert_eq!(
                s.signature,
                family_signature(&cfg.family, cfg.variant_code())
            );
        }
        let want = vec![
            "batchnorm_fwd",
            "bn_bwd",
            "conv_dgrad",
            "conv_fprop",
            "conv_wgrad",
            "gather",
            "matmul",
            "norm_bwd",
            "norm_fwd",
            "pointwise_fused",
            "pool_bwd",
            "pool_fwd",
            "reduce_fwd",
            "sdpa_bwd",
            "sdpa_fwd",
        ];
        assert_eq!(families.into_iter().collect::<Vec<_>>(), want, "{arch}");
    }
}

/// Contract v1 inputs (a plan saved before v2): bias + ReLU.
fn inputs(spec: bool) -> MatmulInputs {
    let mut config =
        TritonConfig::parse("matmul_f16_spec_128x256x64_g8_w8_s3_sh147456_ws32").unwrap();
    config.spec = spec;
    MatmulInputs {
        common: GemmCommon {
            version: 1,
            uids: [1, 2, 4],
            bias_uid: Some(3),
            residual_uid: None,
            scale_uid: None,
            dtype: 2,
            epilogue: 3,
            config,
        },
        batch: 2,
        mnk: [512, 256, 128],
        strides: [65536, 128, 1, 32768, 256, 1, 131072, 256, 1],
        res_strides: [131072, 256, 1],
        serves_overrides: false,
    }
}

/// Contract v2 inputs: scale, bias, residual (own strides), GELU.
fn inputs_v2(spec: bool) -> MatmulInputs {
    let mut i = inputs(spec);
    i.common.version = 2;
    i.common.residual_uid = Some(5);
    i.common.scale_uid = Some(6);
    i.res_strides = [0, 512, 1];
    i.common.epilogue = 64 | 1 | 16 | (2 << 1);
    i
}

#[test]
fn matmul_launch_values_round_trip_and_give_the_geometry() {
    for spec in [true, false] {
        // v1: a plan saved before v2 restores on the v1 handler with v1's kernel signature.
        let i = inputs(spec);
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, MATMUL_V1);
        let back = MatmulHandler::V1
            .restore_launch(MATMUL_V1, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(l.geometry.grid, [4, 2, 1]);
        assert_eq!(l.geometry.block, [256, 1, 1]);
        assert_eq!(l.geometry.shared_mem_bytes, 147456);
        assert_eq!(l.pointer_uids, vec![1, 2, 4, 3]);
        assert_eq!(l.scalar_args.len(), if spec { 10 } else { 13 });
        assert_eq!(
            MatmulHandler::V1.launch_signature_for(&l.launch_values),
            signature(i64::from(spec), 1)
        );
        assert_eq!(
            signature(i64::from(spec), 1).len(),
            if spec { 16 } else { 19 }
        );
        // v2: residual and scale pointers, residual strides.
        let i = inputs_v2(spec);
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, MATMUL_V2);
        let back = MatmulHandler::V2
            .restore_launch(MATMUL_V2, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(l.pointer_uids, vec![1, 2, 4, 3, 5, 6]);
        assert_eq!(l.scalar_args.len(), if spec { 12 } else { 16 });
        assert_eq!(
            l.scalar_args.last(),
            Some(&hipdnn_engines::ingestor::device::KernelArgValue::I32(85))
        );
        assert_eq!(
            signature(i64::from(spec), 2).len(),
            if spec { 20 } else { 24 }
        );
        assert_eq!(
            MatmulHandler::V2.launch_signature_for(&l.launch_values),
            signature(i64::from(spec), 2)
        );
        // A v1 plan's values are not a v2 contract (and the other way round).
        let e = MatmulHandler::V2
            .restore_launch(MATMUL_V1, &inputs(spec).to_values())
            .unwrap_err()
            .message;
        assert!(
            e.contains("the handler reads the contract 'hipkernel.matmul.dispatch.v2'"),
            "{e}"
        );
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
    assert!(inputs_v2(true).fits_spec());
    let mut i = inputs_v2(true);
    i.res_strides = [0, 1, 512]; // column-major residual
    assert!(!i.fits_spec());
    let mut i = inputs_v2(true);
    i.res_strides = [0, 520, 1]; // residual row stride not a multiple of 16
    assert!(!i.fits_spec());
}

#[test]
fn matmul_restore_refusals_are_exact() {
    let d = MATMUL_V1;
    let mut v = inputs(true).to_values();
    v.insert("stride_bn".into(), LaunchValue::Int(7));
    let e = MatmulHandler::V1.restore_launch(d, &v).unwrap_err().message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.matmul.dispatch.v1' name the spec variant, whose unit strides 'stride_ak', 'stride_bn' and 'stride_cn' (and 'stride_rn') must be 1"), "{e}");
    let mut v = inputs(false).to_values();
    v.insert("epilogue".into(), LaunchValue::Int(2));
    let e = MatmulHandler::V1.restore_launch(d, &v).unwrap_err().message;
    assert!(e.ends_with("launch value 'bias.uid' of dispatch 'hipkernel.matmul.dispatch.v1' must be present exactly when 'epilogue' bit 1 is set; epilogue is 2"), "{e}");
    let mut v = inputs(false).to_values();
    v.insert("warp_size".into(), LaunchValue::Int(48));
    let e = MatmulHandler::V1.restore_launch(d, &v).unwrap_err().message;
    assert!(e.ends_with("give 384 threads per block; the contract takes warp size 32 or 64 and at most 1024 threads"), "{e}");
    let mut v = inputs(false).to_values();
    v.insert("tile".into(), LaunchValue::Int(1));
    let e = MatmulHandler::V1.restore_launch(d, &v).unwrap_err().message;
    assert!(
        e.contains("launch value 'tile' is not part of the contract"),
        "{e}"
    );
    // v1 knows no residual.
    let mut v = inputs(false).to_values();
    v.insert("res.uid".into(), LaunchValue::Int(5));
    let e = MatmulHandler::V1.restore_launch(d, &v).unwrap_err().message;
    assert!(
        e.contains("launch value 'res.uid' is not part of the contract"),
        "{e}"
    );
    // v2 refusals.
    let d = MATMUL_V2;
    for (code, why) in [
        (
            14,
            "epilogue 14 names activation 7, the contract knows 0 to 6",
        ),
        (
            48,
            "epilogue 48 adds the residual both before and after the activation",
        ),
    ] {
        let mut v = inputs_v2(false).to_values();
        v.insert("epilogue".into(), LaunchValue::Int(code));
        let e = MatmulHandler::V2.restore_launch(d, &v).unwrap_err().message;
        assert!(e.ends_with(&format!("launch values of dispatch 'hipkernel.matmul.dispatch.v2' hold epilogue {code}: {why}")), "{e}");
    }
    let mut v = inputs_v2(false).to_values();
    v.insert("epilogue".into(), LaunchValue::Int(64 | 1));
    let e = MatmulHandler::V2.restore_launch(d, &v).unwrap_err().message;
    assert!(e.ends_with("launch value 'res.uid' of dispatch 'hipkernel.matmul.dispatch.v2' must be present exactly when 'epilogue' bit 4 or 5 is set; epilogue is 65"), "{e}");
    let mut v = inputs_v2(false).to_values();
    v.remove("scale.uid");
    let e = MatmulHandler::V2.restore_launch(d, &v).unwrap_err().message;
    assert!(e.ends_with("dispatch 'hipkernel.matmul.dispatch.v2' needs launch value 'scale.uid' (int in [-9223372036854775808, 9223372036854775807]), and the plan has none"), "{e}");
    let mut v = inputs_v2(true).to_values();
    v.insert("stride_rn".into(), LaunchValue::Int(512));
    let e = MatmulHandler::V2.restore_launch(d, &v).unwrap_err().message;
    assert!(e.ends_with("name the spec variant, whose unit strides 'stride_ak', 'stride_bn' and 'stride_cn' (and 'stride_rn') must be 1"), "{e}");
}

fn conv_inputs(spec: bool) -> ConvFpropInputs {
    let config = TritonConfig::parse(if spec {
        "conv_fprop_f16_spec_128x64x64_g8_w4_s3_sh49152_ws32"
    } else {
        "conv_fprop_f16_generic_64x64x32_g8_w4_s2_sh8192_ws32"
    })
    .unwrap();
    // NHWC x [2, 32, 9, 9], KRSC w [48, 32, 3, 3], pad 1, stride 2 → y [2, 48, 5, 5] NHWC.
    ConvFpropInputs {
        common: GemmCommon {
            version: 1,
            uids: [1, 2, 4],
            bias_uid: Some(3),
            residual_uid: None,
            scale_uid: None,
            dtype: 2,
            epilogue: 3,
            config,
        },
        shape: [2, 32, 9, 9, 48, 5, 5, 3, 3, 1, 1, 2, 2, 1, 1, 1],
        strides: [2592, 1, 288, 32, 288, 1, 96, 32, 1200, 1, 240, 48],
        res_strides: [1200, 1, 240, 48],
    }
}

#[test]
fn conv_fprop_launch_values_round_trip_and_spec_follows_the_layout() {
    for spec in [true, false] {
        let i = conv_inputs(spec);
        assert!(i.fits_spec());
        let l = i.to_launch().unwrap();
        assert_eq!(
            ConvFpropHandler::V1
                .restore_launch(CONV_FPROP_V1, &l.launch_values)
                .unwrap(),
            l
        );
        assert_eq!(l.geometry.block, [128, 1, 1]);
        // 50 output pixels, 48 channels: cdiv(50, bm) · cdiv(48, 64) tiles, one group.
        assert_eq!(l.geometry.grid, [1, 1, 1]);
        assert_eq!(l.scalar_args.len(), if spec { 25 } else { 29 });
        assert_eq!(
            ConvFpropHandler::V1.launch_signature_for(&l.launch_values),
            conv_fprop::signature(i64::from(spec), 1)
        );
        // v2: conv → bias → add(residual) → ReLU, residual NHWC.
        let mut i = conv_inputs(spec);
        i.common.version = 2;
        i.common.residual_uid = Some(5);
        i.common.epilogue = 1 | 16 | 2;
        assert!(i.fits_spec());
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, CONV_FPROP_V2);
        assert_eq!(
            ConvFpropHandler::V2
                .restore_launch(CONV_FPROP_V2, &l.launch_values)
                .unwrap(),
            l
        );
        assert_eq!(l.pointer_uids, vec![1, 2, 4, 3, 5]);
        assert_eq!(l.scalar_args.len(), if spec { 28 } else { 33 });
        assert_eq!(
            ConvFpropHandler::V2.launch_signature_for(&l.launch_values),
            conv_fprop::signature(i64::from(spec), 2)
        );
        let mut nchw_res = i.clone();
        nchw_res.res_strides = [1200, 25, 5, 1];
        assert!(
            !nchw_res.fits_spec(),
            "an NCHW residual takes the generic entry"
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
    let e = ConvFpropHandler::V1
        .restore_launch(CONV_FPROP_V1, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_fprop.dispatch.v1' name the spec variant, whose 'groups', 'sxc', 'swc' and 'syk' (and 'srk') must be 1"), "{e}");
    let mut v = conv_inputs(false).to_values();
    v.insert("groups".into(), LaunchValue::Int(5));
    let e = ConvFpropHandler::V1
        .restore_launch(CONV_FPROP_V1, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_fprop.dispatch.v1': 'groups' must divide 'c' and 'k'"), "{e}");
}

/// NCHW x [2, 32, 9, 9], packed KCRS w [48, 32, 3, 3], pad 1, stride 2 → NCHW y [2, 48, 5, 5],
/// conv → add(residual) → ReLU, on the entry `config`.
fn nchw_inputs(config: TritonConfig) -> ConvFpropInputs {
    ConvFpropInputs {
        common: GemmCommon {
            version: 2,
            uids: [1, 2, 4],
            bias_uid: None,
            residual_uid: Some(5),
            scale_uid: None,
            dtype: 2,
            epilogue: 16 | 2,
            config,
        },
        shape: [2, 32, 9, 9, 48, 5, 5, 3, 3, 1, 1, 2, 2, 1, 1, 1],
        strides: [2592, 81, 9, 1, 288, 9, 3, 1, 1200, 25, 5, 1],
        res_strides: [1200, 25, 5, 1],
    }
}

/// Layout changes of [`nchw_inputs`] that no channels-first variant takes, by name.
type Breaker = (&'static str, Box<dyn Fn(&mut ConvFpropInputs)>);
fn nchw_breakers() -> Vec<Breaker> {
    vec![
        (
            "NHWC x",
            Box::new(|i: &mut ConvFpropInputs| i.strides[3] = 32),
        ),
        (
            "KRSC w",
            Box::new(|i: &mut ConvFpropInputs| {
                i.strides[5] = 1;
                i.strides[6] = 96;
                i.strides[7] = 32;
            }),
        ),
        (
            "padded KCRS w",
            Box::new(|i: &mut ConvFpropInputs| i.strides[5] = 10),
        ),
        (
            "NHWC residual",
            Box::new(|i: &mut ConvFpropInputs| i.res_strides = [1200, 1, 240, 48]),
        ),
    ]
}

#[test]
fn conv_fprop_nchw_variant_follows_the_layout_and_round_trips() {
    // NCHW x [2, 32, 9, 9], KCRS w [48, 32, 3, 3] packed, pad 1, stride 2 → NCHW y [2, 48, 5, 5].
    let config =
        TritonConfig::parse("conv_fprop_f16_nchw_128x64x64_g8_w4_s3_sh32768_ws32").unwrap();
    assert_eq!(
        (config.spec, config.channels_first, config.variant_code()),
        (false, true, 2)
    );
    let i = nchw_inputs(config);
    assert!(i.fits_nchw());
    assert!(!i.fits_spec());
    let l = i.to_launch().unwrap();
    assert_eq!(
        ConvFpropHandler::V2
            .restore_launch(CONV_FPROP_V2, &l.launch_values)
            .unwrap(),
        l
    );
    assert_eq!(l.launch_values["spec"], LaunchValue::Int(2));
    // The generic list without sxw, syq, srq.
    assert_eq!(l.scalar_args.len(), 33 - 3);
    let names = conv_fprop::param_names(2, 2);
    assert!(!names.contains(&"sxw") && !names.contains(&"syq") && !names.contains(&"srq"));
    assert_eq!(names.len(), conv_fprop::param_names(0, 2).len() - 3);
    assert_eq!(
        ConvFpropHandler::V2.launch_signature_for(&l.launch_values),
        conv_fprop::signature(2, 2)
    );
    // Layouts the variant does not take.
    for (what, f) in nchw_breakers() {
        let mut j = i.clone();
        f(&mut j);
        assert!(!j.fits_nchw(), "{what}");
    }
    let mut v = l.launch_values.clone();
    v.insert("sws".into(), LaunchValue::Int(2));
    let e = ConvFpropHandler::V2
        .restore_launch(CONV_FPROP_V2, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_fprop.dispatch.v2' name the nchw variant, whose 'sxw', 'syq', 'srq' and 'sws' must be 1, 'swr' = 's' and 'swc' = 'r'·'s'"), "{e}");
    // v1 has no nchw variant.
    let mut v = conv_inputs(false).to_values();
    v.insert("spec".into(), LaunchValue::Int(2));
    let e = ConvFpropHandler::V1
        .restore_launch(CONV_FPROP_V1, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch value 'spec' of dispatch 'hipkernel.conv_fprop.dispatch.v1' must be int in [0, 1], and the plan holds 2"), "{e}");
}

#[test]
fn conv_fprop_nchwt_variant_follows_the_layout_sizes_its_workspace_and_round_trips() {
    // NCHW x [2, 32, 9, 9], KCRS w [48, 32, 3, 3] packed, pad 1, stride 2 → NCHW y [2, 48, 5, 5],
    // conv → add(residual) → ReLU.
    let config =
        TritonConfig::parse("conv_fprop_f16_nchwt_64x64x64_g8_w4_s3_sh49152_ws32").unwrap();
    assert_eq!(
        (
            config.spec,
            config.channels_first,
            config.transposing,
            config.variant_code()
        ),
        (false, false, true, 3)
    );
    let i = nchw_inputs(config);
    assert!(i.fits_nchwt() && i.fits_nchw() && !i.fits_spec());
    // x: 2·9·9·32 = 5184 elements, rounded up to 5248 (a multiple of 128); w: 48·3·3·32 = 13824.
    assert_eq!(i.workspace_elements(), Some(5248 + 13824));
    assert_eq!(i.workspace_bytes(), 2 * (5248 + 13824));
    // Layout pass: 2 images · 1 channel block · cdiv(81, 64) = 4, plus 48 filters · 1 · 1.
    assert_eq!(i.layout_pass_programs(), 4 + 48);
    let l = i.to_launch().unwrap();
    assert_eq!(
        ConvFpropHandler::V2
            .restore_launch(CONV_FPROP_V2, &l.launch_values)
            .unwrap(),
        l
    );
    assert_eq!(l.launch_values["spec"], LaunchValue::Int(3));
    assert_eq!(l.workspace_bytes, 38144);
    // 50 output pixels · 48 channels: one 64×64 tile.
    assert_eq!(l.geometry.grid, [1, 1, 1]);
    let want_ints: Vec<i64> = vec![
        2, 32, 9, 9, 48, 5, 5, 3, 3, 1, 1, 2, 2, 1, 1, // shape without groups
        2592, 81, 288, 1200, 25, 5, 1200, 25, 5, // sxn sxc swk syn syk syp srn srk srp
        18, 1, // epilogue, phase 1
    ];
    let got: Vec<i64> = l
        .scalar_args
        .iter()
        .map(|a| match a {
            KernelArgValue::I32(v) => i64::from(*v),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(got, want_ints);
    let names = conv_fprop::param_names(3, 2);
    assert_eq!(names.len(), 7 + want_ints.len() + 2);
    assert_eq!(names[6], "ws_ptr");
    assert_eq!(names[names.len() - 3], "phase");
    assert_eq!(
        ConvFpropHandler::V2.launch_signature_for(&l.launch_values),
        conv_fprop::signature(3, 2)
    );
    // The layout pass: the same arguments with phase 0, on its own grid.
    let args: Vec<KernelArgValue> = (0..7)
        .map(|p| KernelArgValue::Pointer(0x1000 * (p + 1)))
        .chain(l.scalar_args.iter().cloned())
        .chain([KernelArgValue::Pointer(0), KernelArgValue::Pointer(0)])
        .collect();
    let pro = ConvFpropHandler::V2.prologue_launches(&l, &args);
    assert_eq!(pro.len(), 1);
    assert_eq!(pro[0].0.grid, [52, 1, 1]);
    assert_eq!(pro[0].0.block, l.geometry.block);
    assert_eq!(pro[0].0.shared_mem_bytes, l.geometry.shared_mem_bytes);
    let mut want = args.clone();
    let at = want.len() - 3;
    want[at] = KernelArgValue::I32(0);
    assert_eq!(pro[0].1, want);
    // Other variants queue no layout pass.
    let mut nchw = i.clone();
    nchw.common.config =
        TritonConfig::parse("conv_fprop_f16_nchw_128x64x64_g8_w4_s3_sh32768_ws32").unwrap();
    let ln = nchw.to_launch().unwrap();
    assert_eq!(ln.workspace_bytes, 0);
    assert!(
        ConvFpropHandler::V2
            .prologue_launches(&ln, &args)
            .is_empty()
    );
    // Layouts the variant does not take: the nchw variant's, and more.
    let mut breakers = nchw_breakers();
    breakers.extend([
        (
            "padded planes",
            Box::new(|i: &mut ConvFpropInputs| i.strides[2] = 10)
                as Box<dyn Fn(&mut ConvFpropInputs)>,
        ),
        (
            "groups 2",
            Box::new(|i: &mut ConvFpropInputs| i.shape[15] = 2),
        ),
        (
            "C not a multiple of 16",
            Box::new(|i: &mut ConvFpropInputs| i.shape[1] = 24),
        ),
        (
            "K not a multiple of 16",
            Box::new(|i: &mut ConvFpropInputs| i.shape[4] = 40),
        ),
        (
            "a workspace over 2^31 - 1 elements",
            Box::new(|i: &mut ConvFpropInputs| i.shape[0] = 1 << 22),
        ),
    ]);
    for (what, f) in breakers {
        let mut j = i.clone();
        f(&mut j);
        assert!(!j.fits_nchwt(), "{what}");
    }
    let mut v = l.launch_values.clone();
    v.insert("sxh".into(), LaunchValue::Int(10));
    let e = ConvFpropHandler::V2
        .restore_launch(CONV_FPROP_V2, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_fprop.dispatch.v2' name the nchwt variant, whose 'groups', 'sxw', 'sws', 'syq' and 'srq' must be 1, 'sxh' = 'width', 'swr' = 's', 'swc' = 'r'·'s', 'c' and 'k' multiples of 16 and the workspace at most 2147483647 elements"), "{e}");
    let mut v = l.launch_values.clone();
    v.insert("spec".into(), LaunchValue::Int(4));
    let e = ConvFpropHandler::V2
        .restore_launch(CONV_FPROP_V2, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.conv_fprop.dispatch.v2' name variant 4 (bcol), a matmul variant; conv fprop takes 0 generic, 1 spec, 2 nchw, 3 nchwt or 5 grouped"), "{e}");
    v.insert("spec".into(), LaunchValue::Int(6));
    let e = ConvFpropHandler::V2
        .restore_launch(CONV_FPROP_V2, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch value 'spec' of dispatch 'hipkernel.conv_fprop.dispatch.v2' must be int in [0, 5], and the plan holds 6"), "{e}");
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
    let l = i.launch().unwrap();
    assert_eq!(l.geometry.grid, [9, 30, 1]);
    assert_eq!(l.geometry.block, [128, 1, 1]);
    // 64 int32 counters (256 bytes), then 9·30 f32 tiles of 64·64.
    assert_eq!(i.counter_bytes(), 256);
    assert_eq!(l.workspace_bytes, 256 + 9 * 30 * 64 * 64 * 4);
    use hipdnn_engines::ingestor::packs::conv_wgrad::ConvWgradV1Handler;
    assert_eq!(ConvWgradV1Handler::new().zeroed_workspace_bytes(&l), 256);
    // A large layer gives enough tiles on its own: no split, no workspace.
    let mut big = wgrad_inputs(true);
    big.shape[1] = 512;
    big.shape[4] = 512;
    assert!(big.tiles() >= conv_wgrad::TARGET_PROGRAMS);
    assert_eq!(big.static_split(), 1);
    big.shape[16] = 1;
    let l = big.launch().unwrap();
    assert_eq!(l.workspace_bytes, 0);
    assert_eq!(ConvWgradV1Handler::new().zeroed_workspace_bytes(&l), 0);
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
        let l = i.launch().unwrap();
        let back = ConvWgradV1Handler::new()
            .restore_launch(CONV_WGRAD_V1, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(back.launch_values["split"], LaunchValue::Int(30));
        assert_eq!(l.pointer_uids, vec![1, 2, 3]);
        assert_eq!(l.scalar_args.len(), if spec { 25 } else { 29 });
        assert_eq!(
            ConvWgradV1Handler::new().launch_signature_for(&l.launch_values),
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
        ConvWgradV1Handler::new()
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

/// v2 inputs with B column-major (`(N, K)` row-major weight used as B = Wᵀ) on the bcol
/// variant of the same tile.
fn inputs_bcol() -> MatmulInputs {
    let mut i = inputs_v2(false);
    i.strides[4] = 1; // stride_bk
    i.strides[5] = 128; // stride_bn = K
    i.common.config.b_col = true;
    i
}

#[test]
fn matmul_bcol_variant_takes_a_column_major_b() {
    let c = TritonConfig::parse("matmul_f32_bcol_64x64x32_g8_w4_s3_sh32768_ws32").unwrap();
    assert!(c.b_col && !c.spec && !c.channels_first && !c.transposing);
    assert_eq!(c.variant_code(), 4);
    // Hints: B's unit stride along K, N's stride a multiple of 16.
    let i = inputs_bcol();
    assert!(i.fits_bcol() && !i.fits_spec());
    assert!(inputs_v2(true).fits_spec() && !inputs_v2(true).fits_bcol());
    let mut j = inputs_bcol();
    j.strides[5] = 130;
    assert!(!j.fits_bcol(), "B's N stride not a multiple of 16");
    let mut j = inputs_bcol();
    j.common.version = 1;
    assert!(!j.fits_bcol(), "v1 has no bcol entries");
    // Parameters: stride_bk (not stride_bn) is the constexpr one.
    let names = param_names(4, 2);
    assert!(names.contains(&"stride_bn") && !names.contains(&"stride_bk"));
    assert!(!names.contains(&"stride_ak") && !names.contains(&"stride_cn"));
    assert_eq!(names.len(), param_names(1, 2).len());
    // The launch: spec value 4, integers in parameter order, round trip, signature.
    let l = i.to_launch().unwrap();
    assert_eq!(l.launch_values.get("spec"), Some(&LaunchValue::Int(4)));
    let ints: Vec<i32> = l
        .scalar_args
        .iter()
        .map(|a| match a {
            hipdnn_engines::ingestor::device::KernelArgValue::I32(v) => *v,
            other => panic!("{other:?}"),
        })
        .collect();
    // M, N, K, stride_ab, stride_am, stride_bb, stride_bn, stride_cb, stride_cm, stride_rb,
    // stride_rm, epilogue.
    assert_eq!(
        ints,
        [
            512, 256, 128, 65536, 128, 32768, 128, 131072, 256, 0, 512, 85
        ]
    );
    let back = MatmulHandler::V2
        .restore_launch(MATMUL_V2, &l.launch_values)
        .unwrap();
    assert_eq!(back, l);
    assert_eq!(
        MatmulHandler::V2.launch_signature_for(&l.launch_values),
        signature(4, 2)
    );
    // Refusals on restore: a bcol plan whose B is not unit-stride along K, an unknown variant.
    let mut v = l.launch_values.clone();
    v.insert("stride_bk".into(), LaunchValue::Int(256));
    let e = MatmulHandler::V2
        .restore_launch(MATMUL_V2, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch values of dispatch 'hipkernel.matmul.dispatch.v2' name the bcol variant, whose unit strides 'stride_ak', 'stride_bk' and 'stride_cn' (and 'stride_rn') must be 1"), "{e}");
    let mut v = l.launch_values.clone();
    v.insert("spec".into(), LaunchValue::Int(2));
    let e = MatmulHandler::V2
        .restore_launch(MATMUL_V2, &v)
        .unwrap_err()
        .message;
    assert!(e.ends_with("launch value 'spec' of dispatch 'hipkernel.matmul.dispatch.v2' is 2; the matmul contract takes 0 (generic), 1 (spec) or 4 (bcol)"), "{e}");
}
