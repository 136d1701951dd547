//! Launch-value contracts of Pointwise v1 and ConvFwd v1 (reference `ingestor-payload.md`
//! §11), the committed launch-contract samples, the dispatch registry and kernel descriptors.
//!
//! Samples under `tests/samples/` were written once by the build that introduced each
//! contract. A failing sample is a finding: never regenerate it; on a format change add a new
//! sample beside it (the ignored printer test writes *new* files only).

use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::ingestor::descriptor::KernelDescriptor;
use hipdnn_engines::ingestor::dispatch::DispatchHandler;
use hipdnn_engines::ingestor::dispatch::unversioned;
use hipdnn_engines::ingestor::kernel::{KernelArgument, KernelSourceKind};
use hipdnn_engines::ingestor::launch_values::{LaunchValue, LaunchValues};
use hipdnn_engines::ingestor::native::conv_fwd::{
    CONV_FWD_V1, ConvFwdLaunchInputs, ConvFwdV1Handler,
};
use hipdnn_engines::ingestor::native::pointwise::{
    POINTWISE_V1, PointwiseLaunchInputs, PointwiseV1Handler,
};
use hipdnn_engines::ingestor::payload::refusal::INCOMPATIBLE_PREFIX;
use hipdnn_engines::ingestor::payload::{
    IngestorPlanPayload, decode_payload, encode_payload, sha256_hex,
};
use std::path::{Path, PathBuf};

fn pw() -> PointwiseLaunchInputs {
    PointwiseLaunchInputs {
        input_a_uid: 11,
        input_b_uid: 12,
        output_uid: 13,
        block_size: 256,
    }
}

fn conv() -> ConvFwdLaunchInputs {
    ConvFwdLaunchInputs {
        x_uid: 21,
        w_uid: 22,
        y_uid: 23,
        n: 31,
        c: 32,
        h: 33,
        width: 34,
        k: 35,
        r: 36,
        s: 37,
        block_size: 64,
    }
}

fn na(e: hipdnn_backend::status::PluginError, text: &str) {
    assert_eq!(e.status, PluginStatus::NotApplicable, "{}", e.message);
    assert_eq!(e.message, format!("{INCOMPATIBLE_PREFIX}{text}"));
}

#[test]
fn pointwise_inputs_round_trip_through_values() {
    let v = pw().to_values();
    assert_eq!(
        PointwiseLaunchInputs::from_values(POINTWISE_V1, &v).unwrap(),
        pw()
    );
    assert!(v.values().all(|x| matches!(x, LaunchValue::Int(_))));
    let g = pw().geometry();
    assert_eq!(
        (g.grid, g.block, g.shared_mem_bytes),
        ([1, 1, 1], [256, 1, 1], 0)
    );
    assert_eq!(pw().workspace_bytes(), 1024);
    assert_eq!(
        PointwiseLaunchInputs {
            block_size: 128,
            ..pw()
        }
        .workspace_bytes(),
        0
    );
}

#[test]
fn pointwise_refuses_missing_extra_wrong_type_alias_and_zero_block() {
    let d = POINTWISE_V1;
    let mut v = pw().to_values();
    v.remove("output.uid");
    na(
        PointwiseLaunchInputs::from_values(d, &v).unwrap_err(),
        &format!(
            "dispatch '{d}' needs launch value 'output.uid' (int in [-9223372036854775808, 9223372036854775807]), and the plan has none"
        ),
    );
    let mut v = pw().to_values();
    v.insert("unexpected".into(), LaunchValue::Int(1));
    na(
        PointwiseLaunchInputs::from_values(d, &v).unwrap_err(),
        &format!("launch value 'unexpected' is not part of the contract of dispatch '{d}'"),
    );
    for (val, held) in [
        (LaunchValue::String("x".into()), "string"),
        (LaunchValue::IntList(vec![1]), "int_list"),
        (LaunchValue::Int(0), "0"),
        (LaunchValue::Int(1 << 32), "4294967296"),
        (LaunchValue::Bool(true), "bool"),
        (LaunchValue::Float(1.0), "float"),
    ] {
        let mut v = pw().to_values();
        v.insert("block_size".into(), val);
        na(
            PointwiseLaunchInputs::from_values(d, &v).unwrap_err(),
            &format!(
                "launch value 'block_size' of dispatch '{d}' must be int in [1, 4294967295], and the plan holds {held}"
            ),
        );
    }
    na(
        PointwiseLaunchInputs::from_values("hipkernel.pointwise.dispatch", &pw().to_values())
            .unwrap_err(),
        &format!(
            "dispatch 'hipkernel.pointwise.dispatch' names no launch-value contract this provider reads; the handler reads the contract '{d}'"
        ),
    );
}

#[test]
fn conv_fwd_inputs_round_trip_and_derive_the_grid() {
    let c = ConvFwdLaunchInputs {
        h: 40,
        width: 40,
        ..conv()
    };
    assert_eq!(
        ConvFwdLaunchInputs::from_values(CONV_FWD_V1, &c.to_values()).unwrap(),
        c
    );
    let g = c.geometry_for(CONV_FWD_V1).unwrap();
    // total = 31 * 35 * (40-36+1) * (40-37+1) = 21700; ceil(21700 / 64) = 340
    assert_eq!(
        (g.grid, g.block, g.shared_mem_bytes),
        ([340, 1, 1], [64, 1, 1], 0)
    );
}

#[test]
fn conv_fwd_refuses_a_filter_larger_than_the_input() {
    let c = ConvFwdLaunchInputs {
        r: 34,
        h: 33,
        ..conv()
    };
    na(
        ConvFwdLaunchInputs::from_values(CONV_FWD_V1, &c.to_values()).unwrap_err(),
        "launch values 'r' and 's' of dispatch 'hipkernel.conv_fwd.dispatch.v1' must not exceed 'h' and 'width'; the plan holds r 34, h 33, s 37 and width 34",
    );
}

#[test]
fn conv_fwd_refuses_a_grid_larger_than_u32_blocks_and_extents_out_of_range() {
    let c = ConvFwdLaunchInputs {
        n: i32::MAX,
        k: i32::MAX,
        h: i32::MAX,
        width: 2,
        r: 1,
        s: 1,
        block_size: 1,
        ..conv()
    };
    na(
        ConvFwdLaunchInputs::from_values(CONV_FWD_V1, &c.to_values()).unwrap_err(),
        "launch values 'n', 'k', 'h', 'width', 'r', 's' and 'block_size' of dispatch 'hipkernel.conv_fwd.dispatch.v1' give a grid larger than 4294967295 blocks",
    );
    let mut v = conv().to_values();
    v.insert("n".into(), LaunchValue::Int(1 << 31));
    na(
        ConvFwdLaunchInputs::from_values(CONV_FWD_V1, &v).unwrap_err(),
        "launch value 'n' of dispatch 'hipkernel.conv_fwd.dispatch.v1' must be int in [1, 2147483647], and the plan holds 2147483648",
    );
}

#[test]
fn registry_serves_versioned_names_and_aliases_with_one_handler() {
    let r = hipdnn_engines::registry::native_packs();
    for pack in ["pointwise", "conv_fwd"] {
        let a = r.resolve(&format!("hipkernel.{pack}.dispatch")).unwrap();
        let v = r.resolve(&format!("hipkernel.{pack}.dispatch.v1")).unwrap();
        assert!(std::sync::Arc::ptr_eq(&a, &v));
    }
    assert!(r.resolve("hipkernel.pointwise.dispatch.v2").is_none());
    assert_eq!(
        unversioned("hipkernel.pointwise.dispatch.v12"),
        Some("hipkernel.pointwise.dispatch")
    );
    assert_eq!(unversioned("hipkernel.pointwise.dispatch"), None);
    let mut r2 = r.clone();
    assert_eq!(
        r2.register(std::sync::Arc::new(PointwiseV1Handler))
            .unwrap_err()
            .status,
        PluginStatus::InternalError
    );
}

#[test]
fn native_signatures_are_as_the_contracts_state() {
    let pw = PointwiseV1Handler.launch_signature();
    assert_eq!(
        pw,
        vec![
            KernelArgument::new("global_buffer", 8, 0),
            KernelArgument::new("global_buffer", 8, 8),
            KernelArgument::new("global_buffer", 8, 16)
        ]
    );
    let c = ConvFwdV1Handler.launch_signature();
    assert_eq!(c.len(), 10);
    assert!(c[3..].iter().all(|a| a.kind == "by_value" && a.size == 4));
}

// ---- descriptors ----

#[test]
fn descriptor_parses_the_documented_format() {
    let sha = sha256_hex(b"x");
    let text = format!(
        r#"{{"id":"0f5c2d1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f","name":"pw","dispatch":"hipkernel.pointwise.dispatch","archs":["gfx90a","sm_90"],
      "kernel_source":{{"kind":"kpack","library":"kpack/../kpack/pw.kpack","toc_key":"t","symbol":"s","sha256":"{sha}","signature":[{{"kind":"global_buffer","size":8,"offset":0,"name":"a"}},{{"kind":"by_value","size":4,"offset":8}}]}}}}"#
    );
    let d =
        KernelDescriptor::parse(Path::new("/tree"), Path::new("/tree/sub/pw.json"), &text).unwrap();
    let s = d.single_source().unwrap();
    assert_eq!(s.kind, KernelSourceKind::Kpack);
    assert_eq!(
        s.library.as_deref(),
        Some(Path::new("/tree/sub/kpack/pw.kpack"))
    );
    assert_eq!(s.signature[1], KernelArgument::new("by_value", 4, 8));
    assert_eq!(
        d.describe(),
        "kpack 'pw' (0f5c2d1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f)"
    );
}

#[test]
fn descriptor_refuses_a_library_outside_the_tree() {
    let text = format!(
        r#"{{"id":"0f5c2d1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f","name":"pw","dispatch":"d","kernel_source":{{"kind":"kpack","library":"../../etc/pw.kpack","toc_key":"t","symbol":"s","sha256":"{}","signature":[]}}}}"#,
        sha256_hex(b"x")
    );
    let e = KernelDescriptor::parse(Path::new("/tree"), Path::new("/tree/sub/pw.json"), &text)
        .unwrap_err();
    assert_eq!(e.status, PluginStatus::InvalidValue);
    assert!(
        e.message.contains("'../../etc/pw.kpack'")
            && e.message.contains("outside the descriptor tree"),
        "{}",
        e.message
    );
}

#[cfg(unix)]
#[test]
fn descriptor_refuses_a_library_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("real")).unwrap();
    std::fs::write(root.join("real/pw.kpack"), b"k").unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    let text = format!(
        r#"{{"id":"0f5c2d1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f","name":"pw","dispatch":"d","kernel_source":{{"kind":"kpack","library":"link/pw.kpack","toc_key":"t","symbol":"s","sha256":"{}","signature":[]}}}}"#,
        sha256_hex(b"x")
    );
    let e = KernelDescriptor::parse(root, &root.join("pw.json"), &text).unwrap_err();
    assert_eq!(e.status, PluginStatus::InvalidValue);
    assert!(
        e.message.contains("passes through the symlink") && e.message.contains("link"),
        "{}",
        e.message
    );
    let ok = text.replace("link/", "real/");
    assert!(KernelDescriptor::parse(root, &root.join("pw.json"), &ok).is_ok());
}

// ---- launch-contract samples (read direction only) ----

fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples")
}

fn sample_payload(
    dispatch: &str,
    values: LaunchValues,
    signature: Vec<KernelArgument>,
    workspace: u64,
    symbol: &str,
) -> IngestorPlanPayload {
    let code = format!("\x7fELF sample code object for {dispatch}").into_bytes();
    IngestorPlanPayload {
        kernel_descriptor_id: [0x5A; 16],
        workspace_bytes: workspace,
        runtime_pass_by_value_uids: vec![],
        dispatch_symbol: dispatch.into(),
        launch_values: values,
        source_kind: KernelSourceKind::Kpack,
        symbol: symbol.into(),
        target: "gfx90a".into(),
        sha256: sha256_hex(&code),
        signature,
        code_object: code,
        provider_version: "0.1.0".into(),
    }
}

/// Writes the v1 samples when they do not exist yet; never overwrites.
#[test]
#[ignore = "writes new sample files; run by hand only when adding a sample"]
fn print_launch_contract_samples() {
    let dir = samples_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let items = [
        (
            "pointwise_v1.hkip",
            sample_payload(
                POINTWISE_V1,
                pw().to_values(),
                PointwiseV1Handler.launch_signature(),
                1024,
                "pointwise_add",
            ),
        ),
        (
            "conv_fwd_v1.hkip",
            sample_payload(
                CONV_FWD_V1,
                conv().to_values(),
                ConvFwdV1Handler.launch_signature(),
                0,
                "conv_fwd_nchw",
            ),
        ),
        (
            "conv_fwd_v1_launchable.hkip",
            sample_payload(
                CONV_FWD_V1,
                ConvFwdLaunchInputs {
                    h: 40,
                    width: 40,
                    ..conv()
                }
                .to_values(),
                ConvFwdV1Handler.launch_signature(),
                0,
                "conv_fwd_nchw",
            ),
        ),
    ];
    for (name, p) in items {
        let path = dir.join(name);
        if path.exists() {
            println!("kept existing {}", path.display());
            continue;
        }
        std::fs::write(&path, encode_payload(&p).unwrap()).unwrap();
        println!("wrote {}", path.display());
    }
}

// A failing sample is never regenerated: add a new sample beside it.
#[test]
fn decodes_the_pointwise_v1_launch_contract_sample() {
    let bytes = std::fs::read(samples_dir().join("pointwise_v1.hkip")).unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, "hipkernel.pointwise.dispatch.v1");
    assert_eq!(p.workspace_bytes, 1024);
    assert_eq!(p.target, "gfx90a");
    let launch = PointwiseV1Handler
        .restore_launch(&p.dispatch_symbol, &p.launch_values)
        .unwrap();
    assert_eq!(launch.pointer_uids, vec![11, 12, 13]);
    assert_eq!(launch.geometry.block, [256, 1, 1]);
    assert_eq!(launch.geometry.grid, [1, 1, 1]);
    assert_eq!(p.signature, PointwiseV1Handler.launch_signature());
}

// A failing sample is never regenerated: add a new sample beside it.
//
// The checklist's extents n..s = 31..37 put r = 36 above h = 33, so the v1 reader refuses them
// with its r/s rule: this sample pins the values as written and that refusal; the
// `_launchable` sample beside it (h = width = 40) pins the derived geometry.
#[test]
fn decodes_the_conv_fwd_v1_launch_contract_sample() {
    let bytes = std::fs::read(samples_dir().join("conv_fwd_v1.hkip")).unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, "hipkernel.conv_fwd.dispatch.v1");
    let mut expected = LaunchValues::new();
    for (k, v) in [
        ("x.uid", 21),
        ("w.uid", 22),
        ("y.uid", 23),
        ("n", 31),
        ("c", 32),
        ("h", 33),
        ("width", 34),
        ("k", 35),
        ("r", 36),
        ("s", 37),
        ("block_size", 64),
    ] {
        expected.insert(k.into(), LaunchValue::Int(v));
    }
    assert_eq!(p.launch_values, expected);
    assert_eq!(p.signature, ConvFwdV1Handler.launch_signature());
    na(
        ConvFwdV1Handler
            .restore_launch(&p.dispatch_symbol, &p.launch_values)
            .unwrap_err(),
        "launch values 'r' and 's' of dispatch 'hipkernel.conv_fwd.dispatch.v1' must not exceed 'h' and 'width'; the plan holds r 36, h 33, s 37 and width 34",
    );
}

// A failing sample is never regenerated: add a new sample beside it.
#[test]
fn decodes_the_launchable_conv_fwd_v1_launch_contract_sample() {
    let bytes = std::fs::read(samples_dir().join("conv_fwd_v1_launchable.hkip")).unwrap();
    let p = decode_payload(&bytes).unwrap();
    let i = ConvFwdLaunchInputs::from_values(&p.dispatch_symbol, &p.launch_values).unwrap();
    assert_eq!((i.x_uid, i.w_uid, i.y_uid), (21, 22, 23));
    assert_eq!(
        (i.n, i.c, i.h, i.width, i.k, i.r, i.s),
        (31, 32, 40, 40, 35, 36, 37)
    );
    assert_eq!(i.block_size, 64);
    let launch = ConvFwdV1Handler
        .restore_launch(&p.dispatch_symbol, &p.launch_values)
        .unwrap();
    assert_eq!(launch.geometry.grid, [340, 1, 1]);
    assert_eq!(launch.geometry.block, [64, 1, 1]);
    assert_eq!(launch.pointer_uids, vec![21, 22, 23]);
    assert_eq!(launch.scalar_args.len(), 7);
}
