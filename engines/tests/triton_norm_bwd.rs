//! The norm_bwd Triton family (`hipkernel.norm_bwd.dispatch.v1`) without a device: launch
//! values round trip, exact refusal texts, the graph matcher's rows/columns/strides/flags, the
//! static rule's entry and splits per shape on a fake sm_90 device with the committed archive,
//! the two recorded launches (phase 0 on `splits` programs, then the merge) with the
//! workspace, save → restore on an engine without kernels → the identical launches, the graphs
//! refused by name, and every GPU-test case run through `norm_bwd.py` under Triton's
//! interpreter against the CPU reference engine.

#[path = "ingestor_support.rs"]
mod support;

mod norm_bwd_support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::framework::family::TritonFamily;
use hipdnn_engines::ingestor::framework::triton::TritonConfig;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::norm_bwd::{
    NORM_BWD_V1, NormBwdHandler, NormBwdInputs, rule_splits, signature,
};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::run_graph;
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::DataType as DT;
use norm_bwd_support::{DBIAS, DSCALE, DX, DY, INV, MEAN, NormBwdCase, SCALE, X};
use std::path::PathBuf;
use std::sync::Arc;
use support::FakeDevice;

const LOAD: &str = "ingestor plan is valid but cannot be saved or loaded here: ";
const WS: u64 = 0x7_0000_0000;

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

fn og(c: &NormBwdCase) -> OperationGraph {
    OperationGraph::from_bytes(&c.graph().build()).unwrap()
}

fn err<T: std::fmt::Debug>(r: hipdnn_backend::status::PluginResult<T>) -> String {
    r.expect_err("refused").message
}

/// Layernorm backward, f16 everything but f32 statistics, 63 rows of 384, 2x512 tile.
fn inputs(spec: bool) -> NormBwdInputs {
    let mut config = TritonConfig::parse("norm_bwd_f16_spec_2x512x1_g1_w4_s1_sh32_ws32").unwrap();
    config.spec = spec;
    NormBwdInputs {
        uids: [DY, X, SCALE, INV, DX, DSCALE],
        mean_uid: Some(MEAN),
        dbias_uid: Some(DBIAS),
        dtype: 2,
        rows: 63,
        cols: 384,
        strides: [384, 1, 384, 1, 384, 1, 1, 1, 1, 1, 1],
        flags: 2 | 8 | 16,
        splits: 32,
        config,
    }
}

fn addr(u: i64) -> u64 {
    0x1000_0000 * u as u64
}

fn binds(c: &NormBwdCase, misalign: u64) -> Vec<TensorBinding<'static>> {
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
fn norm_bwd_launch_values_round_trip_and_give_both_launches() {
    for spec in [true, false] {
        let i = inputs(spec);
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, NORM_BWD_V1);
        let back = NormBwdHandler
            .restore_launch(NORM_BWD_V1, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(l.geometry.grid, [6, 1, 1], "the merge: cdiv(384, 64)");
        assert_eq!(l.geometry.block, [128, 1, 1]);
        assert_eq!(l.geometry.shared_mem_bytes, 32);
        assert_eq!(
            l.workspace_bytes,
            2 * 32 * 384 * 4,
            "dscale and dbias partials"
        );
        assert_eq!(
            l.pointer_uids,
            vec![DY, X, SCALE, MEAN, INV, DX, DSCALE, DBIAS]
        );
        let ints: &[i32] = if spec {
            &[63, 384, 384, 384, 384, 1, 1, 26, 32, 1]
        } else {
            &[63, 384, 384, 1, 384, 1, 384, 1, 1, 1, 1, 1, 1, 26, 32, 1]
        };
        let want: Vec<KernelArgValue> = ints.iter().map(|v| KernelArgValue::I32(*v)).collect();
        assert_eq!(l.scalar_args, want);
        let sig = NormBwdHandler.launch_signature_for(&l.launch_values);
        assert_eq!(sig, signature(spec));
        // Nine pointers (the workspace last, at 64), the integers, the two scratch pointers.
        assert_eq!((sig[8].name.as_str(), sig[8].offset), ("ws_ptr", 64));
        let t: Vec<TensorBinding<'_>> = l
            .pointer_uids
            .iter()
            .map(|u| TensorBinding {
                uid: *u,
                data: BufferRef::Device {
                    addr: addr(*u),
                    len: 1 << 20,
                },
            })
            .collect();
        let args = NormBwdHandler
            .kernel_args_with_workspace(&l, &t, WS)
            .unwrap();
        assert_eq!(args.len(), sig.len());
        let p = |u: i64| KernelArgValue::Pointer(addr(u));
        assert_eq!(
            &args[..9],
            &[
                p(DY),
                p(X),
                p(SCALE),
                p(MEAN),
                p(INV),
                p(DX),
                p(DSCALE),
                p(DBIAS),
                KernelArgValue::Pointer(WS)
            ]
        );
        // Phase 0 first: the same arguments with phase 0 on (splits, 1, 1).
        let pro = NormBwdHandler.prologue_launches(&l, &args);
        assert_eq!(pro.len(), 1);
        assert_eq!(pro[0].0.grid, [32, 1, 1]);
        assert_eq!(pro[0].0.block, [128, 1, 1]);
        let phase = sig.iter().position(|a| a.name == "phase").unwrap();
        assert_eq!(args[phase], KernelArgValue::I32(1));
        let mut want = args.clone();
        want[phase] = KernelArgValue::I32(0);
        assert_eq!(pro[0].1, want);
        // No workspace, or a misaligned one: refused.
        for ws in [0, WS + 2] {
            assert_eq!(
                err(NormBwdHandler.kernel_args_with_workspace(&l, &t, ws)),
                format!(
                    "the workspace is at {ws:#x}; this plan runs norm_bwd, whose partial sums need a 4-byte aligned device workspace"
                )
            );
        }
        assert!(
            err(NormBwdHandler.kernel_args(&l, &t)).starts_with("the workspace is at 0x0;"),
            "a launch without a workspace"
        );
    }
    // rmsnorm without dbias: no optional values, null mean and dbias pointers, half the
    // workspace.
    let mut i = inputs(false);
    i.mean_uid = None;
    i.dbias_uid = None;
    i.flags = 1 | 16;
    let l = i.to_launch().unwrap();
    assert_eq!(l.pointer_uids, vec![DY, X, SCALE, INV, DX, DSCALE]);
    assert_eq!(l.workspace_bytes, 32 * 384 * 4);
    assert_eq!(
        NormBwdHandler
            .restore_launch(NORM_BWD_V1, &l.launch_values)
            .unwrap(),
        l
    );
    let t: Vec<TensorBinding<'_>> = l
        .pointer_uids
        .iter()
        .map(|u| TensorBinding {
            uid: *u,
            data: BufferRef::Device {
                addr: addr(*u),
                len: 1 << 20,
            },
        })
        .collect();
    let args = NormBwdHandler
        .kernel_args_with_workspace(&l, &t, WS)
        .unwrap();
    let (p, null) = (
        |u: i64| KernelArgValue::Pointer(addr(u)),
        KernelArgValue::Pointer(0),
    );
    assert_eq!(
        &args[..9],
        &[
            p(DY),
            p(X),
            p(SCALE),
            null,
            p(INV),
            p(DX),
            p(DSCALE),
            null,
            KernelArgValue::Pointer(WS)
        ]
    );
}

#[test]
fn norm_bwd_launch_value_refusals_are_exact() {
    let d = NORM_BWD_V1;
    let restore = |v| NormBwdHandler.restore_launch(d, &v);
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.remove("dbias.uid");
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'dbias.uid' of dispatch '{d}' must be present exactly when 'flags' bit 2 is set; flags is 26"
        )
    );
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.insert("flags".into(), LaunchValue::Int(1 | 2 | 8 | 16));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'mean.uid' of dispatch '{d}' must be present exactly when 'flags' bit 1 is clear; flags is 27"
        )
    );
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.insert("splits".into(), LaunchValue::Int(33));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'splits' of dispatch '{d}' must be int in [1, 32], and the plan holds 33"
        )
    );
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.insert("sdsc".into(), LaunchValue::Int(2));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{d}' name the spec variant, whose 'sdyc', 'sxc', 'sdxc', 'ssc', 'sdsc' and 'sdbc' must be 1"
        )
    );
    let mut v = inputs(false).to_launch().unwrap().launch_values;
    v.insert("flags".into(), LaunchValue::Int(512));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'flags' of dispatch '{d}' must be int in [0, 511], and the plan holds 512"
        )
    );
    let mut v = inputs(false).to_launch().unwrap().launch_values;
    v.insert("k".into(), LaunchValue::Int(1));
    assert_eq!(
        err(restore(v)),
        format!("{LOAD}launch value 'k' is not part of the contract of dispatch '{d}'")
    );
    let v = inputs(false).to_launch().unwrap().launch_values;
    assert!(
        err(NormBwdHandler.restore_launch("hipkernel.norm_bwd.dispatch.v2", &v))
            .ends_with("names no launch-value contract this provider reads; the handler reads the contract 'hipkernel.norm_bwd.dispatch.v1'")
    );
}

#[test]
fn splits_keep_every_program_busy_and_the_workspace_bounded() {
    assert_eq!(rule_splits(1, 8), 1);
    assert_eq!(rule_splits(63, 2), 32);
    assert_eq!(rule_splits(1024, 1), 512);
    // 1025 blocks: 3 a program, 342 programs (the last holds 2).
    assert_eq!(rule_splits(1025, 1), 342);
    assert_eq!(rule_splits(4500, 2), 450);
    assert_eq!(rule_splits(i64::from(i32::MAX), 1), 512);
    for rows in [1i64, 7, 511, 512, 513, 4096, 100_000] {
        let s = rule_splits(rows, 1);
        let bpp = (rows + s - 1) / s;
        assert!(s <= 512 && (s - 1) * bpp < rows, "rows {rows}: {s} splits");
    }
}

/// (spec, block_m, block_n, flags, splits) of a built plan.
type Chosen = (i64, i64, i64, i64, i64);

/// The entry the engine builds `c` with on the fake sm_90.
fn chosen(e: &IngestorEngine, c: &NormBwdCase) -> Chosen {
    let ctx = e
        .create_execution_context(&cfg(e), &og(c))
        .unwrap_or_else(|err| panic!("{c:?}: {}", err.message));
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, NORM_BWD_V1);
    assert_eq!(p.symbol, "hipdnn_norm_bwd");
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    (
        int("spec"),
        int("block_m"),
        int("block_n"),
        int("flags"),
        int("splits"),
    )
}

#[test]
fn the_static_rule_picks_the_chunk_by_row_length_and_spec_by_layout() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let ln = NormBwdCase::layernorm;
    let rms = NormBwdCase::rmsnorm;
    let f32s = 4 | 8 | 16 | 32 | 64 | 128 | 256;
    let cases: Vec<(NormBwdCase, Chosen)> = vec![
        // MiniLM: (B, 1, S, 384) f32: spec, 2 rows of 512, 128 splits of one block.
        (ln(DT::FLOAT, &[2, 1, 128, 384]), (1, 2, 512, 2 | f32s, 128)),
        (ln(DT::HALF, &[3, 4097]), (0, 1, 2048, 2, 3)),
        (ln(DT::BFLOAT16, &[5, 7]), (0, 8, 64, 2, 1)),
        (ln(DT::HALF, &[1, 1000]), (0, 2, 512, 2, 1)),
        (ln(DT::HALF, &[4, 1024]), (1, 2, 512, 2, 2)),
        (ln(DT::HALF, &[4, 2048]), (1, 1, 2048, 2, 4)),
        (ln(DT::FLOAT, &[4, 128]), (1, 8, 64, 2 | f32s, 1)),
        (ln(DT::FLOAT, &[4, 1]), (0, 8, 64, 2 | f32s, 1)),
        (rms(DT::HALF, &[2, 384]), (1, 2, 512, 1, 1)),
        (
            NormBwdCase {
                dbias: true,
                ..rms(DT::BFLOAT16, &[4096, 4096])
            },
            (1, 1, 2048, 1 | 2, 512),
        ),
        (
            NormBwdCase {
                in_f32: true,
                ..ln(DT::BFLOAT16, &[2, 384])
            },
            (1, 2, 512, 2 | 4 | 8 | 16 | 32, 1),
        ),
        (
            NormBwdCase {
                out_f32: true,
                ..ln(DT::HALF, &[2, 384])
            },
            (1, 2, 512, 2 | 64 | 128 | 256, 1),
        ),
        // A transposed dy/x/dx (rows contiguous down the columns): generic.
        (
            NormBwdCase {
                x_strides: Some(vec![1, 3]),
                ..ln(DT::FLOAT, &[3, 384])
            },
            (0, 2, 512, 2 | f32s, 2),
        ),
    ];
    for (i, (c, want)) in cases.iter().enumerate() {
        assert_eq!(chosen(&e, c), *want, "case {i}: {c:?}");
    }
}

#[test]
fn a_layernorm_backward_launches_dx_then_the_merge_and_restores_without_kernels() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    // MiniLM's layernorm shape, f32: spec 2x512, 128 splits, dscale and dbias partials.
    let c = NormBwdCase::layernorm(DT::FLOAT, &[2, 1, 128, 384]);
    let ctx = e.create_execution_context(&cfg(&e), &og(&c)).unwrap();
    assert_eq!(ctx.workspace_size(), 2 * 128 * 384 * 4);
    let ws = || {
        Some(BufferRef::Device {
            addr: WS,
            len: 2 * 128 * 384 * 4,
        })
    };
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: ws(),
        tensors: &mut binds(&c, 0),
    })
    .unwrap();
    let launches = dev.launches.lock().unwrap().clone();
    assert_eq!(launches.len(), 2, "dx and partials, then the merge");
    let sig = signature(true);
    let phase = sig.iter().position(|a| a.name == "phase").unwrap();
    let p = |u: i64| KernelArgValue::Pointer(addr(u));
    for (k, (geom, args)) in launches.iter().enumerate() {
        assert_eq!(geom.grid, if k == 0 { [128, 1, 1] } else { [6, 1, 1] });
        assert_eq!(geom.block, [128, 1, 1]);
        assert_eq!(args.len(), sig.len());
        assert_eq!(
            &args[..9],
            &[
                p(DY),
                p(X),
                p(SCALE),
                p(MEAN),
                p(INV),
                p(DX),
                p(DSCALE),
                p(DBIAS),
                KernelArgValue::Pointer(WS)
            ]
        );
        assert_eq!(
            &args[9..phase],
            &[256, 384, 384, 384, 384, 1, 1, 510, 128].map(KernelArgValue::I32)
        );
        assert_eq!(args[phase], KernelArgValue::I32(k as i32));
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
        "tensor UID 2 is at 0x20000004; this plan runs the specialized norm_bwd kernel, which needs 16-byte aligned dy, x, scale and dx"
    );
    assert_eq!(dev.launches.lock().unwrap().len(), 2);
    // Save → restore on an engine without kernels → the identical launches.
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let dev2 = FakeDevice::new("sm_90", 0);
    let e3 = engine(dev2.clone(), vec![]);
    let restored = e3
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    assert_eq!(restored.workspace_size(), 2 * 128 * 384 * 4);
    restored
        .execute(ExecuteArgs {
            stream: 0,
            workspace: ws(),
            tensors: &mut binds(&c, 0),
        })
        .unwrap();
    assert_eq!(*dev2.launches.lock().unwrap(), launches);
}

/// The refusal of the first sm_90 norm_bwd entry for `c`'s data type.
fn refusal(c: &NormBwdCase) -> String {
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("norm_bwd_f32_generic_8x64"))
        .unwrap();
    err(NormBwdHandler.prepare_kernel(&k, &og(c)))
}

#[test]
fn graphs_the_pack_does_not_serve_are_refused_with_the_reason() {
    // Layernorm backward without the saved statistics (recomputed from x with epsilon).
    let c = NormBwdCase {
        saved: false,
        ..NormBwdCase::layernorm(DT::FLOAT, &[2, 8])
    };
    assert_eq!(
        refusal(&c),
        "the norm_bwd pack needs the layernorm backward's saved mean and inv_variance; statistics recomputed from x with epsilon are the CPU reference engine's"
    );
    // A scale broadcast over the normalized axes (one value for the whole row).
    let c = NormBwdCase {
        scale_dims: vec![1, 1],
        ndc: 1,
        ..NormBwdCase::layernorm(DT::FLOAT, &[2, 8])
    };
    assert_eq!(
        refusal(&c),
        "the norm_bwd pack needs scale with dim 1 on x's row axes and x's dims (collapsing to one stride) on the normalized axes (a scale broadcast over them is the CPU reference engine's); scale dims [1, 1] strides [1, 1], x [2, 8], normalized from axis 1"
    );
    // Scale varying over the rows (normalized_dim_count 1 with a [2, 8] scale).
    let c = NormBwdCase {
        scale_dims: vec![2, 8],
        ndc: 1,
        ..NormBwdCase::layernorm(DT::FLOAT, &[2, 8])
    };
    assert!(
        refusal(&c).starts_with("the norm_bwd pack needs scale with dim 1 on x's row axes"),
        "{}",
        refusal(&c)
    );
    // dy rows that do not collapse (a padded middle dim).
    let c = NormBwdCase {
        x_strides: Some(vec![40, 8, 1]),
        ..NormBwdCase::layernorm(DT::FLOAT, &[2, 3, 8])
    };
    assert_eq!(
        refusal(&c),
        "the norm_bwd pack needs dy's row axes [2, 3] and normalized axes [8] each to collapse to one stride in [0, 2147483647]; strides [40, 8, 1]"
    );
    // More rows than the kernel's int rows argument holds.
    assert_eq!(
        refusal(&NormBwdCase::layernorm(DT::FLOAT, &[1i64 << 31, 2])),
        "the norm_bwd pack needs at most 2147483647 rows and columns; x [2147483648, 2] normalized from axis 1"
    );
    // normalized_dim_count past the rank.
    let c = NormBwdCase {
        ndc: 3,
        ..NormBwdCase::layernorm(DT::FLOAT, &[2, 8])
    };
    assert_eq!(
        refusal(&c),
        "the norm_bwd pack: normalized_dim_count 3 is not in [0, 2]"
    );
    // A data type the kernel is not built for.
    let c = NormBwdCase::layernorm(DT::HALF, &[2, 8]);
    assert!(
        refusal(&c).ends_with("is built for f32, the graph is HALF"),
        "{}",
        refusal(&c)
    );
    // The spec entry for an unaligned row length.
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("norm_bwd_f32_spec_8x64"))
        .unwrap();
    let m =
        err(NormBwdHandler.prepare_kernel(&k, &og(&NormBwdCase::layernorm(DT::FLOAT, &[2, 8]))));
    assert!(
        m.ends_with("is the spec variant; the graph's layout does not satisfy its hints (unit column strides of dy, x, dx, scale, dscale and dbias, cols and the row strides of dy, x and dx multiples of 16)"),
        "{m}"
    );
    // The 2048 chunk for a row of 1024.
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("norm_bwd_f32_spec_1x2048"))
        .unwrap();
    let m =
        err(NormBwdHandler.prepare_kernel(&k, &og(&NormBwdCase::layernorm(DT::FLOAT, &[2, 1024]))));
    assert!(
        m.ends_with(": static rule: a 2048-element chunk is at least twice the row of 1024 elements; a narrower chunk serves this graph"),
        "{m}"
    );
}

/// Every case of the GPU test's shape matrix builds on the fake sm_90 engine as a norm_bwd
/// plan (spec exactly for the unit-stride rows that are multiples of 16) and runs on the CPU
/// reference engine with outputs of the expected sizes, so the one GPU run meets no graph
/// error.
#[test]
fn every_gpu_norm_bwd_case_builds_on_the_fake_device_and_runs_on_the_reference() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let cases = norm_bwd_support::gpu_cases();
    assert_eq!(cases.len(), 141);
    for (i, c) in cases.iter().enumerate() {
        let (spec, bm, bn, flags, splits) = chosen(&e, c);
        let (rows, cols) = c.rows_cols();
        let want_bn = if cols > 1024 {
            2048
        } else if cols > 256 {
            512
        } else {
            64
        };
        let unit = c.x_strides.is_none() && cols % 16 == 0;
        assert_eq!((spec, bn), (i64::from(unit), want_bn), "case {i}: {c:?}");
        assert_eq!(splits, rule_splits(rows as i64, bm), "case {i}");
        assert_eq!(flags & 1 != 0, c.rms, "case {i}");
        assert_eq!(flags & 2 != 0, c.dbias, "case {i}");
        let out = run_graph(c.graph(), &c.input_values(i as u64), &c.outputs())
            .unwrap_or_else(|err| panic!("case {i}: {c:?}: {}", err.message));
        let mut want = vec![rows * cols, cols];
        if c.dbias {
            want.push(cols);
        }
        assert_eq!(
            out.iter().map(Vec::len).collect::<Vec<_>>(),
            want,
            "case {i}"
        );
        assert!(out.iter().flatten().all(|v| v.is_finite()), "case {i}");
    }
}

/// Writes the launches of every GPU-test case as the fake sm_90 device records them (both
/// launches: the Rust pack's kernel arguments by parameter name, grids, entry), the input
/// bytes in each tensor's layout, and the CPU reference engine's outputs, as JSON to `path`.
fn dump_launches(path: &std::path::Path) {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let dtn = |d: DT| match d {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    };
    let mut out = Vec::new();
    for (i, c) in norm_bwd_support::gpu_cases().iter().enumerate() {
        let b = c.graph();
        let (spec, bm, bn, _, _) = chosen(&e, c);
        let ctx = e.create_execution_context(&cfg(&e), &og(c)).unwrap();
        let ins = c.input_values(i as u64);
        let n0 = dev.launches.lock().unwrap().len();
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: Some(BufferRef::Device {
                addr: WS,
                len: ctx.workspace_size(),
            }),
            tensors: &mut binds(c, 0),
        })
        .unwrap();
        let sig = signature(spec == 1);
        let launches: Vec<serde_json::Value> = dev.launches.lock().unwrap()[n0..]
            .iter()
            .map(|(geom, args)| {
                let mut named = serde_json::Map::new();
                for (a, v) in sig.iter().zip(args) {
                    let v = match v {
                        KernelArgValue::Pointer(WS) => serde_json::json!({ "ws": true }),
                        KernelArgValue::Pointer(p) => serde_json::json!({ "ptr": p / 0x1000_0000 }),
                        KernelArgValue::I32(v) => serde_json::json!({ "i32": v }),
                        o => panic!("{o:?}"),
                    };
                    named.insert(a.name.clone(), v);
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
            serde_json::json!({"case": format!("{c:?}"), "spec": spec == 1,
            "block_m": bm, "block_n": bn, "dtype": dtn(c.dt),
            "workspace": ctx.workspace_size(), "launches": launches, "tensors": tensors,
            "outputs": c.outputs(), "reference": reference}),
        );
    }
    std::fs::write(path, serde_json::to_string(&out).unwrap()).unwrap();
}

/// Runs every GPU-test case's recorded launches through `norm_bwd.py` under Triton's
/// interpreter (`engines/tests/norm_bwd_support/interpret_launches.py`) against the CPU
/// reference engine's outputs ([`support::run_python_check`]: the system `python3` with the
/// pack venv's site-packages ahead of any `PYTHONPATH`). Prints
/// `skipped: …` and passes when that python cannot import numpy and triton; fails when an
/// output is out of tolerance.
#[test]
fn every_gpu_norm_bwd_case_matches_the_reference_under_the_triton_interpreter() {
    let dir = std::env::temp_dir().join(format!("hipdnn-norm-bwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("launches.json");
    dump_launches(&file);
    support::run_python_check(
        "engines/tests/norm_bwd_support/interpret_launches.py",
        &[file.to_str().unwrap()],
        "141 cases, 0 outputs out of tolerance",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Not a check by itself: writes the interpreter test's JSON to the file named by
/// `HIPDNN_NORM_BWD_LAUNCHES`, for running `interpret_launches.py` by hand.
#[test]
#[ignore = "writes a file for the interpreter check; run by hand"]
fn dump_gpu_norm_bwd_launches_for_the_interpreter() {
    let path = std::env::var("HIPDNN_NORM_BWD_LAUNCHES")
        .expect("HIPDNN_NORM_BWD_LAUNCHES names the JSON file to write");
    dump_launches(std::path::Path::new(&path));
}
