//! The v2 launch-value contracts (pointwise, conv_fwd) and the packed-descriptor loader of
//! `hipdnn_engines::gpu`, without a device: round trips, exact refusal texts, registry names.

use hipdnn_engines::gpu::{gpu_registry, load_packed_descriptors};
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::launch_values::{LaunchValue, LaunchValues};
use hipdnn_engines::ingestor::native::conv_fwd_v2::{
    CONV_FWD_V2, ConvFwdV2Handler, ConvFwdV2Inputs,
};
use hipdnn_engines::ingestor::native::pointwise_v2::{
    POINTWISE_V2, PointwiseV2Handler, PointwiseV2Inputs,
};

fn pw(binary: bool) -> PointwiseV2Inputs {
    PointwiseV2Inputs {
        a_uid: 1,
        b_uid: binary.then_some(2),
        y_uid: 3,
        mode: if binary { 2 } else { 34 }, // ADD, RELU_FWD
        dtype: 1,
        dims: [1, 2, 3, 4, 5],
        sa: [0, 60, 20, 5, 1],
        sb: binary.then_some([0, 0, 0, 5, 1]),
        block_size: 256,
    }
}

fn conv(bias: bool) -> ConvFwdV2Inputs {
    ConvFwdV2Inputs {
        x_uid: 1,
        w_uid: 2,
        y_uid: 4,
        bias_uid: bias.then_some(3),
        shape: [2, 3, 8, 8, 4, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1],
        epilogue: if bias { 3 } else { 0 },
        dtype: 1,
        block_size: 256,
    }
}

fn err(r: hipdnn_backend::status::PluginResult<impl std::fmt::Debug>) -> String {
    r.expect_err("refused").message
}

#[test]
fn pointwise_v2_round_trips_and_signature_follows_mode() {
    for binary in [false, true] {
        let i = pw(binary);
        let l = PointwiseV2Handler
            .restore_launch(POINTWISE_V2, &i.to_values())
            .expect("restore");
        assert_eq!(l, i.to_launch().expect("launch"));
        assert_eq!(l.geometry.grid, [1, 1, 1]);
        let sig = PointwiseV2Handler.launch_signature_for(&i.to_values());
        assert_eq!(sig.len(), if binary { 18 } else { 12 });
        assert_eq!(
            i.symbol().as_deref(),
            Some(if binary {
                "hipdnn_pw_add_f32"
            } else {
                "hipdnn_pw_relu_fwd_f32"
            })
        );
    }
}

#[test]
fn pointwise_v2_refusals() {
    let mut v = pw(true).to_values();
    v.remove("b.uid");
    assert!(err(PointwiseV2Handler.restore_launch(POINTWISE_V2, &v))
        .contains("must be present exactly for binary modes; mode 2 takes 2 input(s) and the plan holds 5 of them"));
    let mut v = pw(false).to_values();
    v.insert("mode".into(), LaunchValue::Int(999));
    assert!(err(PointwiseV2Handler.restore_launch(POINTWISE_V2, &v))
        .contains("launch value 'mode' of dispatch 'hipkernel.pointwise.dispatch.v2' names no pointwise mode this pack launches: 999"));
    let mut v = pw(false).to_values();
    for d in ["d0", "d1", "d2"] {
        v.insert(d.into(), LaunchValue::Int(i64::from(i32::MAX)));
    }
    v.insert("block_size".into(), LaunchValue::Int(1));
    assert!(
        err(PointwiseV2Handler.restore_launch(POINTWISE_V2, &v))
            .contains("grid larger than 4294967295 blocks")
    );
    let v: LaunchValues = pw(false).to_values();
    assert!(
        err(PointwiseV2Handler.restore_launch("hipkernel.pointwise.dispatch.v1", &v))
            .contains("names no launch-value contract this provider reads")
    );
}

#[test]
fn conv_fwd_v2_round_trips_and_refusals() {
    for bias in [false, true] {
        let i = conv(bias);
        let l = ConvFwdV2Handler
            .restore_launch(CONV_FWD_V2, &i.to_values())
            .expect("restore");
        assert_eq!(l, i.to_launch().expect("launch"));
        assert_eq!(l.geometry.grid, [2, 1, 1]); // 2·4·8·8 = 512 outputs / 256
    }
    let mut v = conv(false).to_values();
    v.insert("bias.uid".into(), LaunchValue::Int(3));
    assert!(err(ConvFwdV2Handler.restore_launch(CONV_FWD_V2, &v))
        .contains("launch value 'bias.uid' of dispatch 'hipkernel.conv_fwd.dispatch.v2' must be present exactly when 'epilogue' bit 1 is set; epilogue is 0"));
    let mut v = conv(false).to_values();
    v.insert("stride_h".into(), LaunchValue::Int(i64::from(i32::MAX)));
    assert!(err(ConvFwdV2Handler.restore_launch(CONV_FWD_V2, &v))
        .contains("launch values 'p', 'stride_h', 'r' and 'dil_h' of dispatch 'hipkernel.conv_fwd.dispatch.v2' overflow the kernel's int index math"));
    let mut v = conv(false).to_values();
    v.insert("epilogue".into(), LaunchValue::Int(4));
    assert!(err(ConvFwdV2Handler.restore_launch(CONV_FWD_V2, &v))
        .contains("launch value 'epilogue' of dispatch 'hipkernel.conv_fwd.dispatch.v2' must be int in [0, 3], and the plan holds 4"));
}

#[test]
fn gpu_registry_keeps_v1_aliases_and_adds_v2_versioned_only() {
    let r = gpu_registry();
    assert_eq!(
        r.resolve("hipkernel.pointwise.dispatch")
            .map(|h| h.contract().to_string())
            .as_deref(),
        Some("hipkernel.pointwise.dispatch.v1")
    );
    assert_eq!(
        r.resolve(POINTWISE_V2)
            .map(|h| h.contract().to_string())
            .as_deref(),
        Some(POINTWISE_V2)
    );
    assert_eq!(
        r.resolve(CONV_FWD_V2)
            .map(|h| h.contract().to_string())
            .as_deref(),
        Some(CONV_FWD_V2)
    );
    assert!(r.resolve(CONV_FWD_V2).is_some_and(|h| h.supports_saving()));
}

#[test]
fn packed_descriptors_load_for_every_arch() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/packed"));
    for arch in ["gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"] {
        let d = load_packed_descriptors(&root.join(arch)).expect(arch);
        assert_eq!(
            d.len(),
            44,
            "{arch}: 42 pointwise + 2 conv (v1 entries left out)"
        );
        assert_eq!(d.iter().filter(|k| k.dispatch == CONV_FWD_V2).count(), 2);
        assert!(d.iter().all(|k| {
            k.single_source()
                .is_some_and(|s| s.library.as_ref().is_some_and(|l| l.is_file()))
        }));
        let ids: std::collections::BTreeSet<_> = d.iter().map(|k| k.id).collect();
        assert_eq!(ids.len(), 44, "unique ids");
    }
}

#[test]
fn every_committed_kernel_family_is_a_known_pack_family() {
    use hipdnn_engines::registry::PackFamily;
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/packed"));
    let mut seen = std::collections::BTreeSet::new();
    for arch in ["gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"] {
        let text = std::fs::read_to_string(root.join(arch).join("kernels.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for e in v["kernels"].as_array().unwrap() {
            let name = e["family"].as_str().unwrap();
            let family = PackFamily::from_name(name)
                .unwrap_or_else(|| panic!("{arch}: family {name:?} has no PackFamily"));
            assert_eq!(family.name(), name);
            seen.insert(name.to_string());
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["conv_fwd", "pointwise"],
        "every family is packed"
    );
    let r = hipdnn_engines::registry::pack_registry();
    for f in PackFamily::ALL {
        assert!(r.resolve(f.packed_contract()).is_some(), "{f:?}");
    }
}

#[test]
fn a_missing_kernels_json_is_a_typed_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = load_packed_descriptors(dir.path()).unwrap_err();
    assert_eq!(e.path, dir.path().join("kernels.json"));
    assert_eq!(e.entry, None);
    assert!(e.detail.starts_with("cannot read: "), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read: ", e.path.display()))
    );
}
