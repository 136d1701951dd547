//! The batchnorm_fwd Triton family (`hipkernel.batchnorm_fwd.dispatch.v1`) without a device:
//! launch values round trip, exact refusal texts (restore and graph), the graph matcher's
//! merged view, flags and strides, the static rule's entry, tile and split count on a fake
//! sm_90 device with the committed archive, the recorded launches of a training graph (the
//! statistics prologue, then the normalize launch, with the workspace), save → restore on an
//! engine without kernels → the identical launches → re-save byte-identical (through the
//! backend's plan descriptor), every case of the GPU test's matrix built on the fake device and
//! run on the CPU reference engine, and the kernel under Triton's interpreter.

#[path = "ingestor_support.rs"]
mod support;

mod batchnorm_support;
mod norm_support;

use batchnorm_support::{
    BIAS, BnCase, EPS, Form, MEAN, MOMENTUM, NEXT_MEAN, NEXT_VAR, PREV_MEAN, PREV_VAR, SAVED_INV,
    SAVED_MEAN, SCALE, VAR, X, Y,
};
use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::handle::BackendHandle;
use hipdnn_backend::plan::ExecutionPlanDescriptor;
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::framework::family::TritonFamily;
use hipdnn_engines::ingestor::framework::triton::TritonConfig;
use hipdnn_engines::ingestor::launch_values::{LaunchValue, LaunchValues};
use hipdnn_engines::ingestor::packs::batchnorm_fwd::{
    BATCHNORM_FWD_V1, BatchnormFwdHandler, BatchnormFwdInputs, param_names, rule_block_m,
    rule_splits, signature,
};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, run_graph};
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::{
    BatchnormAttributes, BatchnormAttributesArgs, DataType as DT, NodeAttributes,
};
use hipdnn_schema::tensor_value::TensorValue;
use std::path::PathBuf;
use std::sync::Arc;
use support::FakeDevice;

const LOAD: &str = "ingestor plan is valid but cannot be saved or loaded here: ";
const D: &str = BATCHNORM_FWD_V1;

fn engine(dev: Arc<FakeDevice>, kernels: Vec<KernelDescriptor>) -> IngestorEngine {
    IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        kernels,
        Arc::new(FixedDevice(dev)),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    )
}

fn sm90() -> Vec<KernelDescriptor> {
    load_triton_descriptors(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed/sm_90"))
        .unwrap()
}

fn cfg(e: &IngestorEngine) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    }
}

fn og(c: &BnCase) -> OperationGraph {
    OperationGraph::from_bytes(&c.graph().build()).unwrap()
}

fn err<T: std::fmt::Debug>(r: hipdnn_backend::status::PluginResult<T>) -> String {
    r.expect_err("refused").message
}

/// Training with saved and running statistics: f16 x NHWC [8, 64, 28, 28] (merged: n 1, c
/// 64, s 6272), f32 per-channel tensors; `variant` 1 spec (16x128), 0 generic (16x128).
fn training_inputs(variant: i64) -> BatchnormFwdInputs {
    let name = if variant == 1 {
        "batchnorm_fwd_f16_spec_16x128x1_g1_w4_s1_sh4096_ws32"
    } else {
        "batchnorm_fwd_f16_generic_16x128x1_g1_w4_s1_sh512_ws32"
    };
    BatchnormFwdInputs {
        uids: [X, SCALE, BIAS, Y],
        stats_uids: None,
        saved_mean_uid: Some(SAVED_MEAN),
        saved_inv_uid: Some(SAVED_INV),
        running_uids: Some([PREV_MEAN, PREV_VAR, NEXT_MEAN, NEXT_VAR]),
        dtype: 2,
        shape: [1, 64, 6272],
        strides: [0, 1, 64, 0, 1, 64, 1, 1, 1, 1, 1, 1, 1, 1],
        flags: 32477,
        splits: 17,
        epsilon: Some(1e-5),
        momentum: Some(0.1),
        config: TritonConfig::parse(name).unwrap(),
    }
}

/// Inference, variance form: f32 x NCHW [4, 32, 56, 56] on the nchw 1024x2 entry.
fn inference_inputs() -> BatchnormFwdInputs {
    BatchnormFwdInputs {
        uids: [X, SCALE, BIAS, Y],
        stats_uids: Some([MEAN, VAR]),
        saved_mean_uid: None,
        saved_inv_uid: None,
        running_uids: None,
        dtype: 1,
        shape: [4, 32, 3136],
        strides: [100_352, 3136, 1, 100_352, 3136, 1, 1, 1, 1, 1, 0, 0, 0, 0],
        flags: 2 | 64 | 128 | 256 | 512 | 1024,
        splits: 16,
        epsilon: Some(1e-3),
        momentum: None,
        config: TritonConfig::parse("batchnorm_fwd_f32_nchw_1024x2x1_g1_w4_s1_sh32_ws32").unwrap(),
    }
}

#[test]
fn batchnorm_launch_values_round_trip_and_give_the_geometry() {
    for variant in [1, 0] {
        let i = training_inputs(variant);
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, D);
        let back = BatchnormFwdHandler
            .restore_launch(D, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(l.geometry.grid, [4, 17, 1], "64 channels / 16, 17 splits");
        assert_eq!(l.geometry.block, [128, 1, 1]);
        assert_eq!(
            l.geometry.shared_mem_bytes,
            if variant == 1 { 4096 } else { 512 }
        );
        assert_eq!(l.workspace_bytes, (2 * 17 + 1) * 64 * 4);
        assert_eq!(
            l.pointer_uids,
            vec![
                X, SCALE, BIAS, Y, PREV_MEAN, PREV_VAR, SAVED_MEAN, SAVED_INV, NEXT_MEAN, NEXT_VAR
            ]
        );
        let ints: Vec<i32> = if variant == 1 {
            vec![
                1, 64, 6272, 0, 64, 0, 64, 1, 1, 1, 1, 1, 1, 1, 1, 32477, 17, 2,
            ]
        } else {
            vec![
                1, 64, 6272, 0, 1, 64, 0, 1, 64, 1, 1, 1, 1, 1, 1, 1, 1, 32477, 17, 2,
            ]
        };
        let mut want: Vec<KernelArgValue> = ints.iter().map(|v| KernelArgValue::I32(*v)).collect();
        want.extend([
            KernelArgValue::F32(1e-5),
            KernelArgValue::F32(0.1),
            KernelArgValue::F32(6272.0 / 6271.0),
        ]);
        assert_eq!(l.scalar_args, want);
        assert_eq!(
            l.launch_values.get("momentum"),
            Some(&LaunchValue::Float(f64::from(0.1f32)))
        );
        let sig = BatchnormFwdHandler.launch_signature_for(&l.launch_values);
        assert_eq!(sig, signature(variant));
        assert_eq!(sig.len(), 11 + ints.len() + 3 + 2);
        // 11 pointers (the workspace last, at 80), the integers from 88, three floats, the
        // scratch pointers 8-aligned.
        let k = ints.len() as u32;
        let last: Vec<(String, u32, u32)> = sig[sig.len() - 5..]
            .iter()
            .map(|a| (a.name.clone(), a.size, a.offset))
            .collect();
        let scratch = (88 + 4 * k + 12).div_ceil(8) * 8;
        assert_eq!(
            last,
            [
                ("eps".to_string(), 4, 88 + 4 * k),
                ("momentum".to_string(), 4, 92 + 4 * k),
                ("unbias".to_string(), 4, 96 + 4 * k),
                ("global_scratch".to_string(), 8, scratch),
                ("profile_scratch".to_string(), 8, scratch + 8)
            ]
        );
        assert_eq!(sig[10].name, "ws_ptr");
        assert_eq!(sig[10].offset, 80);
        // The prologue: phase 0 on the same geometry; the main launch runs phase 2.
        let t = binds_all(&BnCase::new(Form::Train, DT::HALF, &[8, 64, 28, 28]).with_stats(true));
        let args = BatchnormFwdHandler
            .kernel_args_with_workspace(&l, &t, 0x7000_0000)
            .unwrap();
        assert_eq!(args.len(), sig.len());
        assert_eq!(args[10], KernelArgValue::Pointer(0x7000_0000));
        let phase = param_names(variant)
            .iter()
            .position(|n| *n == "phase")
            .unwrap();
        assert_eq!(args[phase], KernelArgValue::I32(2));
        let pro = BatchnormFwdHandler.prologue_launches(&l, &args);
        assert_eq!(pro.len(), 1);
        assert_eq!(pro[0].0, l.geometry);
        let mut want = args.clone();
        want[phase] = KernelArgValue::I32(0);
        assert_eq!(pro[0].1, want);
        // No workspace, or a misaligned one: refused.
        for ws in [0u64, 0x7000_0002] {
            let e = BatchnormFwdHandler
                .kernel_args_with_workspace(&l, &t, ws)
                .unwrap_err();
            assert_eq!(e.status, PluginStatus::BadParam);
            assert_eq!(
                e.message,
                format!(
                    "the workspace is at {ws:#x}; this plan runs batchnorm training, whose statistics launch needs a 4-byte aligned device workspace"
                )
            );
        }
    }
    // Inference (variance form) on the nchw entry: one launch, no workspace, null statistics
    // outputs and workspace pointer.
    let i = inference_inputs();
    let l = i.to_launch().unwrap();
    assert_eq!(
        BatchnormFwdHandler
            .restore_launch(D, &l.launch_values)
            .unwrap(),
        l
    );
    assert_eq!(l.geometry.grid, [16, 16, 1], "32 channels / 2, 16 splits");
    assert_eq!(l.workspace_bytes, 0);
    assert_eq!(l.pointer_uids, vec![X, SCALE, BIAS, Y, MEAN, VAR]);
    assert!(!l.launch_values.contains_key("momentum"));
    let c = BnCase::new(Form::Var, DT::FLOAT, &[4, 32, 56, 56]);
    let t = binds_all(&c);
    let args = BatchnormFwdHandler
        .kernel_args_with_workspace(&l, &t, 0x7000_0000)
        .unwrap();
    let p = |u: i64| KernelArgValue::Pointer(addr(u));
    assert_eq!(
        &args[..11],
        &[
            p(X),
            p(SCALE),
            p(BIAS),
            p(Y),
            p(MEAN),
            p(VAR),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0),
        ]
    );
    let ints: Vec<KernelArgValue> = [
        4, 32, 3136, 100_352, 3136, 100_352, 3136, 1, 1, 1, 1, 0, 0, 0, 0, 1986, 16, 2,
    ]
    .iter()
    .map(|v| KernelArgValue::I32(*v))
    .collect();
    assert_eq!(&args[11..29], &ints[..]);
    assert_eq!(
        &args[29..],
        &[
            KernelArgValue::F32(1e-3),
            KernelArgValue::F32(0.0),
            KernelArgValue::F32(12544.0 / 12543.0),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0)
        ]
    );
    assert!(BatchnormFwdHandler.prologue_launches(&l, &args).is_empty());
}

#[test]
fn batchnorm_launch_value_refusals_are_exact() {
    let restore = |v: LaunchValues| BatchnormFwdHandler.restore_launch(D, &v);
    let train = || training_inputs(1).to_launch().unwrap().launch_values;
    let infer = || inference_inputs().to_launch().unwrap().launch_values;
    let set = |mut v: LaunchValues, k: &str, x: LaunchValue| {
        v.insert(k.to_string(), x);
        v
    };
    let int = LaunchValue::Int;
    let mut v = train();
    v.remove("saved_inv.uid");
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'saved_inv.uid' of dispatch '{D}' must be present exactly when 'flags' bit 8 is set; flags is 32477"
        )
    );
    let v = set(train(), "mean.uid", int(6));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'mean.uid' of dispatch '{D}' must be present exactly when 'flags' bit 1 is clear; flags is 32477"
        )
    );
    let v = set(infer(), "flags", int(1986 | 1 | 16));
    let mut v = v;
    v.remove("mean.uid");
    v.remove("var.uid");
    for n in [
        "running_mean.uid",
        "running_var.uid",
        "next_mean.uid",
        "next_var.uid",
    ] {
        v.insert(n.into(), int(20));
    }
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{D}' hold flags 2003: bit 2 (variance form) needs bit 1 clear, bits 4, 8 and 16 need bit 1 set"
        )
    );
    let v = set(train(), "epsilon", LaunchValue::Float(0.1));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'epsilon' of dispatch '{D}' must be a float that f32 holds exactly, and the plan holds 0.1"
        )
    );
    let v = set(train(), "momentum", int(0));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'momentum' of dispatch '{D}' must be a float that f32 holds exactly, and the plan holds int"
        )
    );
    let mut v = train();
    v.remove("epsilon");
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'epsilon' of dispatch '{D}' must be present exactly when 'flags' bit 1 or 2 is set; flags is 32477"
        )
    );
    let v = set(infer(), "momentum", LaunchValue::Float(0.5));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'momentum' of dispatch '{D}' must be present exactly when 'flags' bit 16 is set; flags is 1986"
        )
    );
    let v = set(train(), "sxc", int(2));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{D}' name the spec variant, whose 'sxc' and 'syc' must be 1"
        )
    );
    let v = set(infer(), "sys", int(3136));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{D}' name the nchw variant, whose 'sxs' and 'sys' must be 1"
        )
    );
    let v = set(train(), "flags", int(32477 | 32));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{D}' set flags bit 32 (channels-first path), which needs the generic variant and 'sxs' = 'sys' = 1"
        )
    );
    // 6272 positions / 128 = 49 pairs: at most 49 splits.
    let v = set(train(), "splits", int(50));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'splits' of dispatch '{D}' must be int in [1, 49], and the plan holds 50"
        )
    );
    let v = set(set(train(), "n", int(1 << 20)), "s", int(1 << 11));
    assert_eq!(
        err(restore(v)),
        format!("{LOAD}launch values of dispatch '{D}' give n·s = 2147483648, above 1073741824")
    );
    let v = set(train(), "c", int(0));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'c' of dispatch '{D}' must be int in [1, 1073741824], and the plan holds 0"
        )
    );
    let v = set(train(), "k", int(1));
    assert_eq!(
        err(restore(v)),
        format!("{LOAD}launch value 'k' is not part of the contract of dispatch '{D}'")
    );
    let v = set(set(train(), "num_warps", int(16)), "warp_size", int(64));
    assert!(restore(v.clone()).is_ok(), "16 × 64 = 1024 threads");
    let v = set(v, "warp_size", int(48));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values 'warp_size' and 'num_warps' of dispatch '{D}' give 768 threads per block; the contract takes warp size 32 or 64 and at most 1024 threads"
        )
    );
    assert!(
        err(BatchnormFwdHandler.restore_launch("hipkernel.batchnorm_fwd.dispatch.v2", &train()))
            .ends_with("names no launch-value contract this provider reads; the handler reads the contract 'hipkernel.batchnorm_fwd.dispatch.v1'")
    );
}

/// The launch values the engine saves for `c` on the fake sm_90.
fn chosen(e: &IngestorEngine, c: &BnCase) -> LaunchValues {
    let ctx = e
        .create_execution_context(&cfg(e), &og(c))
        .unwrap_or_else(|err| panic!("{}: {}", c.label(), err.message));
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, D, "{}", c.label());
    let want_symbol = match p.launch_values.get("spec") {
        Some(LaunchValue::Int(1)) => "hipdnn_batchnorm_fwd_cl",
        Some(LaunchValue::Int(2)) => "hipdnn_batchnorm_fwd_cf",
        _ => "hipdnn_batchnorm_fwd",
    };
    assert_eq!(p.symbol, want_symbol, "{}", c.label());
    p.launch_values
}

fn ints(v: &LaunchValues, names: &[&str]) -> Vec<i64> {
    names
        .iter()
        .map(|n| match v.get(*n) {
            Some(LaunchValue::Int(x)) => *x,
            o => panic!("{n}: {o:?}"),
        })
        .collect()
}

const VIEW: [&str; 12] = [
    "spec", "block_m", "block_n", "flags", "splits", "n", "c", "s", "sxn", "sxc", "sxs", "ssc",
];

#[test]
fn the_matcher_merges_the_batch_and_the_static_rule_picks_entry_tile_and_splits() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let tr = |dt, d: &[i64]| BnCase::new(Form::Train, dt, d);
    let inv = |dt, d: &[i64]| BnCase::new(Form::Inv, dt, d);
    #[rustfmt::skip]
    let cases: Vec<(BnCase, [i64; 12])> = vec![
        // NCHW, s = 3136 (16-aligned): nchw 1024x2; 32 channel blocks, 128 pairs, 32 splits.
        (tr(DT::HALF, &[32, 64, 56, 56]), [2, 1024, 2, 1, 32, 32, 64, 3136, 200_704, 3136, 1, 1]),
        // NCHW 7x7: generic channels-first (bit 32), 64 positions (64·3 ≤ 4·49).
        (inv(DT::HALF, &[32, 512, 7, 7]), [0, 64, 32, 32, 32, 32, 512, 49, 25_088, 49, 1, 1]),
        // NCHW 14x14: generic channels-first, 256 positions.
        (inv(DT::FLOAT, &[8, 256, 14, 14]), [0, 256, 8, 32 | 64 | 128 | 256 | 512 | 1024, 8, 8, 256, 196, 50_176, 196, 1, 1]),
        // NHWC C = 64: spec 16x128 on the merged positions (n 1, s = N·H·W).
        (tr(DT::BFLOAT16, &[8, 64, 28, 28]).nhwc(), [1, 16, 128, 1, 17, 1, 64, 6272, 0, 1, 64, 1]),
        // NHWC C = 3: generic channels-last.
        (inv(DT::HALF, &[2, 3, 5, 5]).nhwc(), [0, 16, 128, 0, 1, 1, 3, 50, 0, 1, 3, 1]),
        // 2-D [N, C]: merged to positions of stride C; spec when C is 16-aligned.
        (tr(DT::FLOAT, &[64, 32]), [1, 16, 128, 1 | 64 | 128 | 256, 1, 1, 32, 64, 0, 1, 32, 1]),
        (tr(DT::FLOAT, &[8, 33]), [0, 16, 128, 1 | 64 | 128 | 256, 1, 1, 33, 8, 0, 1, 33, 1]),
        // Batch 1 NCHW: n merged (1), channels-first over s.
        (tr(DT::HALF, &[1, 3, 7, 7]).with_stats(true), [0, 64, 32, 1 | 4 | 8 | 16 | 32, 1, 1, 3, 49, 0, 49, 1, 1]),
        // [N, C, 1, 1] NCHW: s 1 merges the batch into positions of stride C.
        (inv(DT::HALF, &[16, 24, 1, 1]), [0, 16, 128, 0, 1, 1, 24, 16, 0, 1, 24, 1]),
    ];
    for (i, (c, want)) in cases.iter().enumerate() {
        assert_eq!(ints(&chosen(&e, c), &VIEW), want, "case {i}: {}", c.label());
    }
    // The tile rule and the split rule on their own.
    assert_eq!(
        [49, 196, 784, 1000, 1025, 3136, 7, 16, 17, 48].map(|s| rule_block_m(true, s)),
        [64, 256, 1024, 1024, 256, 1024, 16, 16, 16, 64]
    );
    assert_eq!(rule_block_m(false, 3136), 16);
    assert_eq!(rule_splits(49, 4, 128, true), 17);
    assert_eq!(rule_splits(49, 4, 128, false), 49);
    assert_eq!(rule_splits(1, 1000, 16, true), 1);
    assert_eq!(
        rule_splits(100_000, 1, 128, false),
        1021,
        "cdiv(1e5, cdiv(1e5, 1024) = 98)"
    );
}

/// The device address the fake bindings give tensor `uid`.
fn addr(uid: i64) -> u64 {
    0x1000_0000 * uid as u64
}

fn binds_all(c: &BnCase) -> Vec<TensorBinding<'static>> {
    binds(c, 0)
}

fn binds(c: &BnCase, misalign: u64) -> Vec<TensorBinding<'static>> {
    let mut u = c.inputs();
    u.extend(c.outputs());
    u.iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: addr(*uid) + if *uid == X { misalign } else { 0 },
                len: 1 << 26,
            },
        })
        .collect()
}

#[test]
fn a_training_graph_launches_statistics_then_normalize_and_restores_without_kernels() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = Arc::new(engine(dev.clone(), sm90()));
    // NHWC f16, saved and running statistics: the spec entry, 17 splits.
    let c = BnCase::new(Form::Train, DT::HALF, &[8, 64, 28, 28])
        .nhwc()
        .with_stats(true);
    let ctx = e.create_execution_context(&cfg(&e), &og(&c)).unwrap();
    assert_eq!(ctx.workspace_size(), (2 * 17 + 1) * 64 * 4);
    let ws = || {
        Some(BufferRef::Device {
            addr: 0x7000_0000,
            len: 1 << 20,
        })
    };
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: ws(),
        tensors: &mut binds(&c, 0),
    })
    .unwrap();
    let launches = dev.launches.lock().unwrap().clone();
    assert_eq!(launches.len(), 2, "statistics, then normalize");
    let names = param_names(1);
    let phase = names.iter().position(|n| *n == "phase").unwrap();
    for (k, (geom, args)) in launches.iter().enumerate() {
        assert_eq!(geom.grid, [4, 17, 1]);
        assert_eq!(geom.block, [128, 1, 1]);
        assert_eq!(args.len(), names.len());
        let p = |u: i64| KernelArgValue::Pointer(addr(u));
        assert_eq!(
            &args[..11],
            &[
                p(X),
                p(SCALE),
                p(BIAS),
                p(Y),
                p(PREV_MEAN),
                p(PREV_VAR),
                p(SAVED_MEAN),
                p(SAVED_INV),
                p(NEXT_MEAN),
                p(NEXT_VAR),
                KernelArgValue::Pointer(0x7000_0000)
            ]
        );
        assert_eq!(args[phase], KernelArgValue::I32(if k == 0 { 0 } else { 2 }));
        // flags: training, saved, running (16-bit per-channel tensors: no f32 bits).
        assert_eq!(
            args[names.iter().position(|n| *n == "flags").unwrap()],
            KernelArgValue::I32(1 | 4 | 8 | 16)
        );
    }
    // A misaligned x on the spec plan: refused, nothing launched.
    let e2 = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: ws(),
            tensors: &mut binds(&c, 4),
        })
        .unwrap_err();
    assert_eq!(e2.status, PluginStatus::BadParam);
    assert_eq!(
        e2.message,
        "tensor UID 1 is at 0x10000004; this plan runs the specialized batchnorm_fwd kernel, which needs 16-byte aligned x and y"
    );
    assert_eq!(dev.launches.lock().unwrap().len(), 2);
    // Save (through the backend's plan descriptor) → load on a handle whose engine has no
    // kernels → the identical launches → re-save byte-identical.
    let mut h = BackendHandle::new();
    h.register_engine(e.clone()).unwrap();
    let plan = ExecutionPlanDescriptor::finalize(&h, &cfg(&e), &og(&c)).unwrap();
    // No workspace: refused by the backend's plan, the one workspace check (issue 29).
    let pack = binds(&c, 0)
        .into_iter()
        .fold(hipdnn_backend::VariantPackDescriptor::new(), |v, t| {
            v.with(t.uid, t.data)
        });
    let e3 = plan.execute(&h, pack).unwrap_err();
    assert_eq!(
        e3.message,
        format!(
            "the plan needs a workspace of {} bytes; 0 bytes were given",
            (2 * 17 + 1) * 64 * 4
        )
    );
    assert_eq!(dev.launches.lock().unwrap().len(), 2);
    let saved = plan.to_bytes().unwrap();
    let dev2 = FakeDevice::new("sm_90", 0);
    let mut h2 = BackendHandle::new();
    h2.register_engine(Arc::new(engine(dev2.clone(), vec![])))
        .unwrap();
    let loaded = ExecutionPlanDescriptor::from_bytes(&h2, &saved).unwrap();
    assert_eq!(loaded.workspace_size(), (2 * 17 + 1) * 64 * 4);
    loaded
        .execution_context()
        .execute(ExecuteArgs {
            stream: 0,
            workspace: ws(),
            tensors: &mut binds(&c, 0),
        })
        .unwrap();
    assert_eq!(*dev2.launches.lock().unwrap(), launches);
    assert_eq!(loaded.to_bytes().unwrap(), saved, "re-save byte-identical");
    // The engine's own save of a fresh build gives the same payload.
    let p1 = decode_payload(
        &e.serialization()
            .unwrap()
            .serialize_execution_context(e.id(), ctx.as_ref())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(p1.launch_values, chosen(&e, &c));
}

/// The refusal of the sm_90 entry named `prefix` for `c`.
fn refusal_of(prefix: &str, c: &BnCase) -> String {
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with(prefix))
        .unwrap_or_else(|| panic!("no entry {prefix}"));
    err(BatchnormFwdHandler.prepare_kernel(&k, &og(c)))
}

fn refusal(c: &BnCase) -> String {
    refusal_of("batchnorm_fwd_f32_generic_16x128", c)
}

/// A training graph whose node is written by `args` (tensors of [`BnCase::graph`] for a
/// training case with saved and running statistics, plus `extra`).
fn training_graph(
    args: BatchnormAttributesArgs<'static>,
    extra: &[TensorSpec],
    peer: bool,
) -> OperationGraph {
    let c = BnCase::new(Form::Train, DT::FLOAT, &[2, 3, 4, 4]).with_stats(true);
    let base = c.graph();
    let mut g = GraphBuilder::new("bn");
    for u in [
        X, SCALE, BIAS, EPS, Y, SAVED_MEAN, SAVED_INV, PREV_MEAN, PREV_VAR, MOMENTUM, NEXT_MEAN,
        NEXT_VAR,
    ] {
        g.tensor(base.spec(u).clone());
    }
    for t in extra {
        g.tensor(t.clone());
    }
    g.node(
        "bn",
        Box::new(move |fbb| {
            let mut a = args;
            a.peer_stats_tensor_uid = peer.then(|| fbb.create_vector(&[20i64, 21]));
            (
                NodeAttributes::BatchnormAttributes,
                BatchnormAttributes::create(fbb, &a).as_union_value(),
            )
        }),
    );
    OperationGraph::from_bytes(&g.build()).unwrap()
}

#[test]
fn graphs_the_pack_does_not_serve_are_refused_with_the_reason() {
    // Epsilon bound at execute.
    let c = BnCase {
        scalars_runtime: true,
        ..BnCase::new(Form::Var, DT::FLOAT, &[2, 3, 4, 4])
    };
    assert_eq!(
        refusal(&c),
        "the batchnorm_fwd pack needs epsilon (tensor uid 4) as a FLOAT, HALF or BFLOAT16 scalar with a float value the graph holds (pass-by-value, not runtime), not FLOAT bound at execute"
    );
    // Per-channel statistics that vary over a spatial axis.
    let c = BnCase {
        stat_dims: Some(vec![1, 3, 4, 1]),
        ..BnCase::new(Form::Inv, DT::FLOAT, &[2, 3, 4, 4])
    };
    assert_eq!(
        refusal(&c),
        "the batchnorm_fwd pack needs scale with one value per channel (dims right-aligned to x's, 1 except x's channel axis, which holds C = 3 or 1) and a stride in [0, 2147483647]; scale dims [1, 3, 4, 1] strides [12, 4, 1, 1], x [2, 3, 4, 4]"
    );
    // [C] on a 4-D x aligns with W, not the channel axis.
    let c = BnCase {
        stat_dims: Some(vec![3]),
        ..BnCase::new(Form::Inv, DT::FLOAT, &[2, 3, 4, 3])
    };
    assert!(
        refusal(&c).starts_with("the batchnorm_fwd pack needs scale with one value per channel"),
        "{}",
        refusal(&c)
    );
    // Spatial axes that do not collapse (a padded row).
    let c = BnCase {
        strides: Some(vec![60, 20, 5, 1]),
        ..BnCase::new(Form::Inv, DT::FLOAT, &[2, 3, 4, 4])
    };
    assert_eq!(
        refusal(&c),
        "the batchnorm_fwd pack needs x's strides in [0, 2147483647] and its spatial axes [4, 4] collapsing to one stride; strides [60, 20, 5, 1]"
    );
    // A 1-D x.
    let c = BnCase::new(Form::Inv, DT::FLOAT, &[5]);
    let c = BnCase {
        stat_dims: Some(vec![1]),
        ..c
    };
    assert_eq!(
        refusal(&c),
        "the batchnorm_fwd pack needs x with at least 2 dims (N, C, …), each at least 1; x [5]"
    );
    // Too many positions per channel for the kernel's counters.
    let c = BnCase::new(Form::Inv, DT::FLOAT, &[1 << 16, 2, 1 << 15]);
    assert_eq!(
        refusal(&c),
        "the batchnorm_fwd pack needs N, C and N·spatial volume each at most 1073741824; x [65536, 2, 32768]"
    );
    // y of a third type.
    let c = BnCase {
        y_dt: Some(DT::BFLOAT16),
        ..BnCase::new(Form::Inv, DT::HALF, &[2, 3, 4, 4])
    };
    assert_eq!(
        refusal_of("batchnorm_fwd_f16_generic_16x128", &c),
        "the batchnorm_fwd pack needs y of x's type (HALF) or FLOAT, not BFLOAT16"
    );
    // Saved statistics of another volume than C.
    let c = BnCase {
        out_dims: Some(vec![1, 6, 1, 1]),
        ..BnCase::new(Form::Train, DT::FLOAT, &[2, 3, 4, 2]).with_stats(false)
    };
    assert_eq!(
        refusal(&c),
        "the batchnorm_fwd pack needs the saved mean with C = 3 values whose dims collapse to one stride in [0, 2147483647]; dims [1, 6, 1, 1] strides [6, 1, 1, 1]"
    );
    // Running statistics given in part.
    let partial = training_graph(
        BatchnormAttributesArgs {
            x_tensor_uid: X,
            scale_tensor_uid: SCALE,
            bias_tensor_uid: BIAS,
            epsilon_tensor_uid: EPS,
            y_tensor_uid: Y,
            prev_running_mean_tensor_uid: Some(PREV_MEAN),
            ..Default::default()
        },
        &[],
        false,
    );
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("batchnorm_fwd_f32_generic_16x128"))
        .unwrap();
    assert_eq!(
        err(BatchnormFwdHandler.prepare_kernel(&k, &partial)),
        "the batchnorm_fwd pack needs all or none of prev_running_mean, prev_running_variance, momentum, next_running_mean and next_running_variance"
    );
    // Peer statistics.
    let peer = training_graph(
        BatchnormAttributesArgs {
            x_tensor_uid: X,
            scale_tensor_uid: SCALE,
            bias_tensor_uid: BIAS,
            epsilon_tensor_uid: EPS,
            y_tensor_uid: Y,
            ..Default::default()
        },
        &[],
        true,
    );
    assert_eq!(
        err(BatchnormFwdHandler.prepare_kernel(&k, &peer)),
        "the batchnorm_fwd pack does not serve peer statistics (peer_stats_tensor_uid [20, 21])"
    );
    // Momentum with an integer value.
    let int_momentum = training_graph(
        BatchnormAttributesArgs {
            x_tensor_uid: X,
            scale_tensor_uid: SCALE,
            bias_tensor_uid: BIAS,
            epsilon_tensor_uid: EPS,
            y_tensor_uid: Y,
            prev_running_mean_tensor_uid: Some(PREV_MEAN),
            prev_running_variance_tensor_uid: Some(PREV_VAR),
            momentum_tensor_uid: Some(30),
            next_running_mean_tensor_uid: Some(NEXT_MEAN),
            next_running_variance_tensor_uid: Some(NEXT_VAR),
            ..Default::default()
        },
        &[TensorSpec::scalar(30, "momentum_i", TensorValue::Int32(1))],
        false,
    );
    assert_eq!(
        err(BatchnormFwdHandler.prepare_kernel(&k, &int_momentum)),
        "the batchnorm_fwd pack needs momentum (tensor uid 30) as a FLOAT, HALF or BFLOAT16 scalar with a float value the graph holds (pass-by-value, not runtime), not INT32 with a value of another kind"
    );
    // A data type the entry is not built for.
    let m = refusal(&BnCase::new(Form::Inv, DT::HALF, &[2, 3, 4, 4]));
    assert!(m.ends_with("is built for f32, the graph is HALF"), "{m}");
    // The spec entry for NCHW; the nchw entry for NHWC or an unaligned spatial size.
    let m = refusal_of(
        "batchnorm_fwd_f32_spec_16x128",
        &BnCase::new(Form::Inv, DT::FLOAT, &[2, 16, 4, 4]),
    );
    assert!(
        m.ends_with("is the spec variant; the graph's layout does not satisfy its hints (unit channel strides of x and y, C and their other strides multiples of 16)"),
        "{m}"
    );
    for c in [
        BnCase::new(Form::Inv, DT::FLOAT, &[2, 16, 4, 4]).nhwc(),
        BnCase::new(Form::Inv, DT::FLOAT, &[2, 16, 7, 7]),
    ] {
        let m = refusal_of("batchnorm_fwd_f32_nchw_64x32", &c);
        assert!(
            m.ends_with("is the nchw variant; the graph's layout does not satisfy its hints (unit spatial strides of x and y, the spatial size and their other strides multiples of 16)"),
            "{m}"
        );
    }
    // The static rule: the 1024 tile for 49 positions; a long tile on the channels-last path.
    let m = refusal_of(
        "batchnorm_fwd_f32_generic_1024x2",
        &BnCase::new(Form::Inv, DT::FLOAT, &[2, 16, 7, 7]),
    );
    assert!(
        m.ends_with(": static rule: the channels-first path over 49 positions takes the tile 64 long on the unit-stride axis, not 1024"),
        "{m}"
    );
    let m = refusal_of(
        "batchnorm_fwd_f32_generic_64x32",
        &BnCase::new(Form::Inv, DT::FLOAT, &[2, 5, 7, 7]).nhwc(),
    );
    assert!(
        m.ends_with(": static rule: the channels-last path takes the tile 16 long on the unit-stride axis, not 64"),
        "{m}"
    );
    // Another node kind; the handler's plain prepare.
    let ln = OperationGraph::from_bytes(
        &norm_support::NormCase::layernorm(DT::FLOAT, &[2, 8])
            .graph()
            .build(),
    )
    .unwrap();
    assert_eq!(
        err(BatchnormFwdHandler.prepare_kernel(&k, &ln)),
        "the batchnorm_fwd pack serves a batchnorm (training forward), batchnorm_inference or batchnorm_inference_variance_ext node"
    );
    assert_eq!(
        err(BatchnormFwdHandler.prepare(&og(&BnCase::new(Form::Inv, DT::FLOAT, &[2, 3])))),
        "the batchnorm_fwd pack launches packed entries only; prepare a kernel"
    );
}

/// Every case of the GPU test's shape matrix builds on the fake sm_90 engine as a
/// batchnorm_fwd plan (spec / nchw / generic by layout, the rule's tile) and runs on the CPU
/// reference engine with outputs of the expected sizes, so the one GPU run meets no graph
/// error.
#[test]
fn every_gpu_batchnorm_case_builds_on_the_fake_device_and_runs_on_the_reference() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let cases = batchnorm_support::gpu_cases();
    assert_eq!(cases.len(), 274);
    let mut variants = [0usize; 3];
    for (i, c) in cases.iter().enumerate() {
        let v = chosen(&e, c);
        let [spec, bm, flags, s] = ints(&v, &["spec", "block_m", "flags", "s"])[..] else {
            unreachable!()
        };
        variants[spec as usize] += 1;
        let cf = spec == 2 || (spec == 0 && flags & 32 != 0);
        assert_eq!(bm, rule_block_m(cf, s), "case {i}: {}", c.label());
        assert_eq!(flags & 1 != 0, c.form == Form::Train, "case {i}");
        assert_eq!(flags & 2 != 0, c.form == Form::Var, "case {i}");
        assert_eq!(flags & 4 != 0, c.saved, "case {i}");
        assert_eq!(flags & 16 != 0, c.running, "case {i}");
        let out = run_graph(c.graph(), &c.input_values(i as u64), &c.outputs())
            .unwrap_or_else(|err| panic!("case {i}: {}: {}", c.label(), err.message));
        let want: Vec<usize> = c.outputs().iter().map(|u| c.count(*u)).collect();
        assert_eq!(
            out.iter().map(Vec::len).collect::<Vec<_>>(),
            want,
            "case {i}"
        );
        assert!(out.iter().flatten().all(|v| v.is_finite()), "case {i}");
    }
    // Every variant is exercised: spec (NHWC, C a multiple of 16), nchw (NCHW, s a multiple
    // of 16), generic (the rest).
    assert!(variants.iter().all(|n| *n >= 20), "{variants:?}");
}

/// Runs `engines/kernels/triton/interpret_batchnorm_fwd.py` (the three kernels, every form,
/// under Triton's interpreter against numpy) with the system `python3`, the pack venv's
/// site-packages (`TRITON_VENV`, else `target/triton-venv`) and any `PYTHONPATH` already set.
/// Prints `skipped: …` and passes when that python cannot import numpy and triton; fails when
/// the script reports a failure.
#[test]
fn the_kernels_match_numpy_under_the_triton_interpreter() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let venv = std::env::var_os("TRITON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/triton-venv"));
    let site = std::fs::read_dir(venv.join("lib"))
        .ok()
        .and_then(|mut d| d.find_map(|e| e.ok()))
        .map(|e| e.path().join("site-packages"));
    let Some(site) = site.filter(|s| s.is_dir()) else {
        eprintln!("skipped: no Triton venv at {}", venv.display());
        return;
    };
    let mut path = std::ffi::OsString::from(&site);
    if let Some(p) = std::env::var_os("PYTHONPATH") {
        path.push(":");
        path.push(p);
    }
    let py = |args: &[&str]| {
        std::process::Command::new("python3")
            .args(args)
            .env("PYTHONPATH", &path)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
    };
    match py(&["-c", "import numpy, triton"]) {
        Ok(o) if o.status.success() => {}
        _ => {
            eprintln!(
                "skipped: python3 cannot import numpy and triton from {}",
                site.display()
            );
            return;
        }
    }
    let script = root.join("engines/kernels/triton/interpret_batchnorm_fwd.py");
    let o = py(&[script.to_str().unwrap()]).unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.trim_end().ends_with("all ok"),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.lines().filter(|l| l.starts_with("ok ")).count() >= 30,
        "{out}"
    );
}

/// Not a check by itself: writes the launches of every GPU-test case, as the fake sm_90 device
/// records them (the statistics prologue and the normalize launch: the Rust pack's kernel
/// arguments by parameter name, grid, entry), the input bytes in each tensor's layout, and the
/// CPU reference engine's outputs, to the JSON file named by `HIPDNN_BATCHNORM_LAUNCHES`.
/// `engines/tests/batchnorm_support/interpret_launches.py` runs those exact launches through
/// `batchnorm_fwd.py` under Triton's interpreter and compares with the reference (the CPU-side
/// check of what `gpu_batchnorm.rs` checks on a device):
/// `HIPDNN_BATCHNORM_LAUNCHES=/tmp/l.json cargo test -p hipdnn-engines --test triton_batchnorm -- --ignored`,
/// then `python3 engines/tests/batchnorm_support/interpret_launches.py /tmp/l.json`.
#[test]
#[ignore = "writes a file for the interpreter check; run by hand"]
fn dump_gpu_batchnorm_launches_for_the_interpreter() {
    let path = std::env::var("HIPDNN_BATCHNORM_LAUNCHES")
        .expect("HIPDNN_BATCHNORM_LAUNCHES names the JSON file to write");
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let dtn = |d: DT| match d {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    };
    const WS: u64 = 0x7_0000_0000;
    let mut out = Vec::new();
    for (i, c) in batchnorm_support::gpu_cases().iter().enumerate() {
        let b = c.graph();
        let v = chosen(&e, c);
        let [spec, bm, bn] = ints(&v, &["spec", "block_m", "block_n"])[..] else {
            unreachable!()
        };
        let ctx = e.create_execution_context(&cfg(&e), &og(c)).unwrap();
        let ins = c.input_values(i as u64);
        let n0 = dev.launches.lock().unwrap().len();
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: (ctx.workspace_size() > 0).then_some(BufferRef::Device {
                addr: WS,
                len: ctx.workspace_size(),
            }),
            tensors: &mut binds(c, 0),
        })
        .unwrap();
        let names = param_names(spec);
        let launches: Vec<serde_json::Value> = dev.launches.lock().unwrap()[n0..]
            .iter()
            .map(|(geom, args)| {
                let mut named = serde_json::Map::new();
                for (n, a) in names.iter().zip(args) {
                    let v = match a {
                        KernelArgValue::Pointer(WS) => serde_json::json!({ "ws": true }),
                        KernelArgValue::Pointer(p) => serde_json::json!({ "ptr": p / 0x1000_0000 }),
                        KernelArgValue::I32(v) => serde_json::json!({ "i32": v }),
                        KernelArgValue::F32(v) => serde_json::json!({ "f32": f64::from(*v) }),
                        o => panic!("{o:?}"),
                    };
                    named.insert(n.to_string(), v);
                }
                serde_json::json!({"grid": geom.grid, "args": named})
            })
            .collect();
        let want = run_graph(c.graph(), &ins, &c.outputs()).unwrap();
        let mut uids = c.inputs();
        uids.extend(c.outputs());
        let mut tensors = serde_json::Map::new();
        for u in &uids {
            let s = b.spec(*u);
            let mut o = serde_json::json!({"dt": dtn(s.data_type), "dims": s.dims,
                "strides": s.strides, "bytes_len": s.bytes_len()});
            if let Some((_, v)) = ins.iter().find(|(x, _)| x == u) {
                o["input_hex"] = serde_json::json!(hex::encode(s.encode(v)));
            }
            tensors.insert(u.to_string(), o);
        }
        let reference: serde_json::Map<String, serde_json::Value> = c
            .outputs()
            .iter()
            .zip(&want)
            .map(|(u, v)| (u.to_string(), serde_json::json!(v)))
            .collect();
        out.push(
            serde_json::json!({"case": c.label(), "spec": spec, "block_m": bm,
            "block_n": bn, "dtype": dtn(c.dt), "workspace": ctx.workspace_size(),
            "launches": launches, "tensors": tensors, "outputs": c.outputs(),
            "reference": reference}),
        );
    }
    std::fs::write(&path, serde_json::to_string(&out).unwrap()).unwrap();
}
