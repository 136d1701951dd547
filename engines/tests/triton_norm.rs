//! The norm_fwd Triton family (`hipkernel.norm_fwd.dispatch.v1`) without a device: launch
//! values round trip, exact refusal texts, the graph matcher's rows/columns/strides/flags, the
//! static rule's entry per row length on a fake sm_90 device with the committed archive, the
//! recorded launch (grid, block, arguments) of MiniLM's layernorm graph, and save → restore on
//! an engine without kernels → the identical launch.

#[path = "ingestor_support.rs"]
mod support;

mod norm_support;

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
use hipdnn_engines::ingestor::packs::norm_fwd::{
    NORM_FWD_V1, NormFwdHandler, NormFwdInputs, signature,
};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::DataType as DT;
use norm_support::{BIAS, INV, MEAN, NormCase, SCALE, X, Y};
use std::path::PathBuf;
use std::sync::Arc;
use support::FakeDevice;

const LOAD: &str = "ingestor plan is valid but cannot be saved or loaded here: ";

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

fn og(c: &NormCase) -> OperationGraph {
    OperationGraph::from_bytes(&c.graph().build()).unwrap()
}

/// Layernorm training, f16 x/scale/bias/y, f32 statistics, 64 rows of 384, spec 2x512.
fn inputs(spec: bool) -> NormFwdInputs {
    let mut config = TritonConfig::parse("norm_fwd_f16_spec_2x512x1_g1_w4_s1_sh32_ws32").unwrap();
    config.spec = spec;
    NormFwdInputs {
        uids: [1, 2, 5],
        bias_uid: Some(3),
        mean_uid: Some(6),
        inv_uid: Some(7),
        dtype: 2,
        rows: 63,
        cols: 384,
        strides: [384, 1, 384, 1, 1, 1, 1, 1],
        flags: 2 | 4 | 8 | 128,
        epsilon: 1e-12,
        config,
    }
}

fn err<T: std::fmt::Debug>(r: hipdnn_backend::status::PluginResult<T>) -> String {
    r.expect_err("refused").message
}

#[test]
fn norm_launch_values_round_trip_and_give_the_geometry() {
    for spec in [true, false] {
        let i = inputs(spec);
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, NORM_FWD_V1);
        let back = NormFwdHandler
            .restore_launch(NORM_FWD_V1, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        assert_eq!(l.geometry.grid, [32, 1, 1], "cdiv(63, 2)");
        assert_eq!(l.geometry.block, [128, 1, 1]);
        assert_eq!(l.geometry.shared_mem_bytes, 32);
        assert_eq!(l.workspace_bytes, 0);
        assert_eq!(l.pointer_uids, vec![1, 2, 3, 5, 6, 7]);
        let ints: &[i32] = if spec {
            &[63, 384, 384, 384, 1, 1, 142]
        } else {
            &[63, 384, 384, 1, 384, 1, 1, 1, 1, 1, 142]
        };
        let mut want: Vec<KernelArgValue> = ints.iter().map(|v| KernelArgValue::I32(*v)).collect();
        want.push(KernelArgValue::F32(1e-12));
        assert_eq!(l.scalar_args, want);
        assert_eq!(
            l.launch_values.get("epsilon"),
            Some(&LaunchValue::Float(f64::from(1e-12f32)))
        );
        let sig = NormFwdHandler.launch_signature_for(&l.launch_values);
        assert_eq!(sig, signature(spec));
        let last: Vec<(String, u32, u32)> = sig[sig.len() - 3..]
            .iter()
            .map(|a| (a.name.clone(), a.size, a.offset))
            .collect();
        let base = if spec { 80 } else { 96 };
        assert_eq!(
            last,
            [
                ("eps".to_string(), 4, base - 4),
                ("global_scratch".to_string(), 8, base),
                ("profile_scratch".to_string(), 8, base + 8)
            ]
        );
    }
    // rmsnorm inference without bias: no optional values, null pointers at execute.
    let mut i = inputs(false);
    i.bias_uid = None;
    i.mean_uid = None;
    i.inv_uid = None;
    i.flags = 1;
    let l = i.to_launch().unwrap();
    assert_eq!(l.pointer_uids, vec![1, 2, 5]);
    assert_eq!(
        NormFwdHandler
            .restore_launch(NORM_FWD_V1, &l.launch_values)
            .unwrap(),
        l
    );
    let t: Vec<TensorBinding<'_>> = [1i64, 2, 5]
        .iter()
        .map(|u| TensorBinding {
            uid: *u,
            data: BufferRef::Device {
                addr: 0x1000 * *u as u64,
                len: 1 << 20,
            },
        })
        .collect();
    let args = NormFwdHandler.kernel_args(&l, &t).unwrap();
    assert_eq!(
        &args[..6],
        &[
            KernelArgValue::Pointer(0x1000),
            KernelArgValue::Pointer(0x2000),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0x5000),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0),
        ]
    );
    assert_eq!(args.len(), signature(false).len());
    assert_eq!(&args[args.len() - 2..], &[KernelArgValue::Pointer(0); 2]);
}

#[test]
fn norm_launch_value_refusals_are_exact() {
    let d = NORM_FWD_V1;
    let restore = |v| NormFwdHandler.restore_launch(d, &v);
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.remove("bias.uid");
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'bias.uid' of dispatch '{d}' must be present exactly when 'flags' bit 2 is set; flags is 142"
        )
    );
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.insert("flags".into(), LaunchValue::Int(1 | 2 | 4 | 8 | 128));
    assert_eq!(
        err(restore(v)),
        format!("{LOAD}launch values of dispatch '{d}' name rmsnorm (flags bit 1) with a mean")
    );
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.insert("epsilon".into(), LaunchValue::Float(0.1));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'epsilon' of dispatch '{d}' must be a float that f32 holds exactly, and the plan holds 0.1"
        )
    );
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.insert("epsilon".into(), LaunchValue::Int(0));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'epsilon' of dispatch '{d}' must be a float that f32 holds exactly, and the plan holds int"
        )
    );
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.remove("epsilon");
    assert_eq!(
        err(restore(v)),
        format!("{LOAD}dispatch '{d}' needs launch value 'epsilon' (float), and the plan has none")
    );
    let mut v = inputs(true).to_launch().unwrap().launch_values;
    v.insert("sxc".into(), LaunchValue::Int(2));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{d}' name the spec variant, whose 'sxc', 'syc', 'ssc' and 'sbc' must be 1"
        )
    );
    let mut v = inputs(false).to_launch().unwrap().launch_values;
    v.insert("rows".into(), LaunchValue::Int(0));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'rows' of dispatch '{d}' must be int in [1, 2147483647], and the plan holds 0"
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
        err(NormFwdHandler.restore_launch("hipkernel.norm_fwd.dispatch.v2", &v))
            .ends_with("names no launch-value contract this provider reads; the handler reads the contract 'hipkernel.norm_fwd.dispatch.v1'")
    );
}

#[test]
fn norm_launch_with_threads_over_1024_is_refused() {
    let mut v = inputs(false).to_launch().unwrap().launch_values;
    v.insert("num_warps".into(), LaunchValue::Int(16));
    v.insert("warp_size".into(), LaunchValue::Int(64));
    // 16 × 64 = 1024 is allowed; 1024 is the limit.
    assert!(NormFwdHandler.restore_launch(NORM_FWD_V1, &v).is_ok());
    v.insert("warp_size".into(), LaunchValue::Int(48));
    assert_eq!(
        err(NormFwdHandler.restore_launch(NORM_FWD_V1, &v)),
        format!(
            "{LOAD}launch values 'warp_size' and 'num_warps' of dispatch '{NORM_FWD_V1}' give 768 threads per block; the contract takes warp size 32 or 64 and at most 1024 threads"
        )
    );
}

/// The entry the engine builds `c` with on the fake sm_90: (spec, block_m, block_n, flags).
fn chosen(e: &IngestorEngine, c: &NormCase) -> (i64, i64, i64, i64) {
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &og(c),
        )
        .unwrap_or_else(|err| panic!("{c:?}: {}", err.message));
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, NORM_FWD_V1);
    assert_eq!(p.symbol, "hipdnn_norm_fwd");
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    (int("spec"), int("block_m"), int("block_n"), int("flags"))
}

#[test]
fn the_static_rule_picks_the_chunk_by_row_length_and_spec_by_layout() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let ln = NormCase::layernorm;
    let rms = NormCase::rmsnorm;
    let cases: Vec<(NormCase, (i64, i64, i64, i64))> = vec![
        // MiniLM: (B, 1, S, 384) f32, eps 1e-12: spec, 2 rows of 512.
        (
            NormCase {
                eps: 1e-12,
                ..ln(DT::FLOAT, &[2, 1, 7, 384])
            },
            (1, 2, 512, 2 | 16 | 32 | 64),
        ),
        (ln(DT::HALF, &[3, 4097]), (0, 1, 2048, 2)),
        (ln(DT::BFLOAT16, &[5, 7]), (0, 8, 64, 2)),
        (ln(DT::HALF, &[1, 1000]), (0, 2, 512, 2)),
        (ln(DT::HALF, &[4, 1024]), (1, 2, 512, 2)),
        (ln(DT::HALF, &[4, 2048]), (1, 1, 2048, 2)),
        (ln(DT::FLOAT, &[4, 128]), (1, 8, 64, 2 | 16 | 32 | 64)),
        (ln(DT::FLOAT, &[4, 1]), (0, 8, 64, 2 | 16 | 32 | 64)),
        (rms(DT::HALF, &[2, 384]), (1, 2, 512, 1)),
        (rms(DT::BFLOAT16, &[2, 384]).training(), (1, 2, 512, 1 | 8)),
        (ln(DT::HALF, &[2, 384]).training(), (1, 2, 512, 2 | 4 | 8)),
        (
            NormCase {
                out_f32: true,
                affine_f32: true,
                ..ln(DT::BFLOAT16, &[2, 384]).training()
            },
            (1, 2, 512, 2 | 4 | 8 | 16 | 32 | 64 | 128),
        ),
        // A transposed x/y (rows contiguous down the columns): generic.
        (
            NormCase {
                x_strides: Some(vec![1, 3]),
                ..ln(DT::FLOAT, &[3, 384])
            },
            (0, 2, 512, 2 | 16 | 32 | 64),
        ),
    ];
    for (i, (c, want)) in cases.iter().enumerate() {
        assert_eq!(chosen(&e, c), *want, "case {i}: {c:?}");
    }
}

fn binds(c: &NormCase, misalign: u64) -> Vec<TensorBinding<'static>> {
    let mut u = c.inputs();
    u.extend(c.outputs());
    u.iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: 0x1000_0000 * *uid as u64 + if *uid == X { misalign } else { 0 },
                len: 1 << 24,
            },
        })
        .collect()
}

#[test]
fn minilm_layernorm_launches_as_recorded_and_restores_without_kernels() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    // The MiniLM encoder's layernorm shape: (B, 1, S, 384), scale/bias (1, 1, 1, 384), eps
    // 1e-12, here batch 2 × 128 tokens, inference and training.
    for training in [false, true] {
        let mut c = NormCase {
            eps: 1e-12,
            ..NormCase::layernorm(DT::FLOAT, &[2, 1, 128, 384])
        };
        c.training = training;
        let g = og(&c);
        let ctx = e
            .create_execution_context(
                &EngineConfig {
                    engine_id: e.id(),
                    knob_choices: vec![],
                },
                &g,
            )
            .unwrap();
        assert_eq!(ctx.workspace_size(), 0);
        let n0 = dev.launches.lock().unwrap().len();
        let mut t = binds(&c, 0);
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap();
        let (geom, args) = dev.launches.lock().unwrap()[n0].clone();
        assert_eq!(geom.grid, [128, 1, 1], "256 rows, 2 per program");
        assert_eq!(geom.block, [128, 1, 1]);
        let p = |u: i64| KernelArgValue::Pointer(0x1000_0000 * u as u64);
        let stats = if training {
            [p(MEAN), p(INV)]
        } else {
            [KernelArgValue::Pointer(0); 2]
        };
        assert_eq!(
            &args[..6],
            &[p(X), p(SCALE), p(BIAS), p(Y), stats[0], stats[1]]
        );
        let flags = 2 | 16 | 32 | 64 | if training { 4 | 8 | 128 } else { 0 };
        let stat_stride = i32::from(training);
        let ints = [256, 384, 384, 384, stat_stride, stat_stride, flags];
        let want: Vec<KernelArgValue> = ints.iter().map(|v| KernelArgValue::I32(*v)).collect();
        assert_eq!(&args[6..13], &want[..]);
        assert_eq!(args[13], KernelArgValue::F32(1e-12));
        assert_eq!(&args[14..], &[KernelArgValue::Pointer(0); 2]);
        // A misaligned x on the spec plan: refused, nothing launched.
        let mut t = binds(&c, 4);
        let e2 = ctx
            .execute(ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: &mut t,
            })
            .unwrap_err();
        assert_eq!(e2.status, PluginStatus::BadParam);
        assert_eq!(
            e2.message,
            "tensor UID 1 is at 0x10000004; this plan runs the specialized norm_fwd kernel, which needs 16-byte aligned x, scale, bias and y"
        );
        assert_eq!(dev.launches.lock().unwrap().len(), n0 + 1);
        // Save → restore on an engine without kernels → the identical launch.
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
        let mut t = binds(&c, 0);
        restored
            .execute(ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: &mut t,
            })
            .unwrap();
        assert_eq!(dev2.launches.lock().unwrap()[0], (geom, args));
    }
}

/// The refusal of the first sm_90 norm_fwd entry for `c`'s data type.
fn refusal(c: &NormCase) -> String {
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("norm_fwd_f32_generic_8x64"))
        .unwrap();
    err(NormFwdHandler.prepare_kernel(&k, &og(c)))
}

#[test]
fn graphs_the_pack_does_not_serve_are_refused_with_the_reason() {
    // Epsilon bound at execute.
    let c = NormCase {
        eps_runtime: true,
        ..NormCase::layernorm(DT::FLOAT, &[2, 8])
    };
    assert_eq!(
        refusal(&c),
        "the norm_fwd pack needs epsilon (tensor uid 4) as a FLOAT, HALF or BFLOAT16 scalar with a float value the graph holds (pass-by-value, not runtime), not FLOAT bound at execute"
    );
    // Scale varying over the rows (normalized_dim_count 1 with a [2, 8] scale).
    let c = NormCase {
        scale_dims: vec![2, 8],
        ndc: 1,
        ..NormCase::layernorm(DT::FLOAT, &[2, 8])
    };
    assert_eq!(
        refusal(&c),
        "the norm_fwd pack needs scale with dim 1 on x's row axes and x's dims (collapsing to one stride) or 1 on the normalized axes; scale dims [2, 8] strides [8, 1], x [2, 8], normalized from axis 1"
    );
    // x rows that do not collapse (a padded middle dim).
    let c = NormCase {
        x_strides: Some(vec![40, 8, 1]),
        ..NormCase::layernorm(DT::FLOAT, &[2, 3, 8])
    };
    assert_eq!(
        refusal(&c),
        "the norm_fwd pack needs x's row axes [2, 3] and normalized axes [8] each to collapse to one stride in [0, 2147483647]; strides [40, 8, 1]"
    );
    // More rows than the kernel's int rows argument holds, and dims whose volume overflows.
    for (dims, shown) in [
        (vec![1i64 << 31, 2], "[2147483648, 2]"),
        (vec![1i64 << 40, 1 << 40], "[1099511627776, 1099511627776]"),
    ] {
        assert_eq!(
            refusal(&NormCase::layernorm(DT::FLOAT, &dims)),
            format!(
                "the norm_fwd pack needs at most 2147483647 rows and columns; x {shown} normalized from axis 1"
            )
        );
    }
    // normalized_dim_count past the rank.
    let c = NormCase {
        ndc: 3,
        ..NormCase::layernorm(DT::FLOAT, &[2, 8])
    };
    assert_eq!(
        refusal(&c),
        "the norm_fwd pack: normalized_dim_count 3 is not in [0, 2]"
    );
    // A data type the kernel is not built for.
    let c = NormCase::layernorm(DT::HALF, &[2, 8]);
    assert!(
        refusal(&c).ends_with("is built for f32, the graph is HALF"),
        "{}",
        refusal(&c)
    );
    // The spec entry for an unaligned row length.
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("norm_fwd_f32_spec_8x64"))
        .unwrap();
    let m = err(NormFwdHandler.prepare_kernel(&k, &og(&NormCase::layernorm(DT::FLOAT, &[2, 8]))));
    assert!(
        m.ends_with("is the spec variant; the graph's layout does not satisfy its hints (unit column strides of x, y, scale and bias, cols and the row strides of x and y multiples of 16)"),
        "{m}"
    );
    // The 2048 chunk for a row of 1024.
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("norm_fwd_f32_spec_1x2048"))
        .unwrap();
    let m =
        err(NormFwdHandler.prepare_kernel(&k, &og(&NormCase::layernorm(DT::FLOAT, &[2, 1024]))));
    assert!(
        m.ends_with(": static rule: a 2048-element chunk is at least twice the row of 1024 elements; a narrower chunk serves this graph"),
        "{m}"
    );
}

/// Every case of the GPU test's shape matrix builds on the fake sm_90 engine as a norm_fwd
/// plan (spec exactly for the unit-stride rows of 384 elements, the static rule's chunk by row
/// length) and runs on the CPU reference engine with outputs of the expected sizes, so the
/// one GPU run meets no graph error.
#[test]
fn every_gpu_norms_case_builds_on_the_fake_device_and_runs_on_the_reference() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let cases = norm_support::gpu_cases();
    assert_eq!(cases.len(), 184);
    for (i, c) in cases.iter().enumerate() {
        let (spec, bm, bn, flags) = chosen(&e, c);
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
        assert_eq!(
            bm,
            [1, 2, 8][[2048, 512, 64].iter().position(|b| *b == bn).unwrap()]
        );
        assert_eq!(flags & 1 != 0, c.rms, "case {i}");
        assert_eq!(flags & 4 != 0, c.training && !c.rms, "case {i}");
        assert_eq!(flags & 8 != 0, c.training, "case {i}");
        let ins: Vec<(i64, Vec<f32>)> = c
            .inputs()
            .into_iter()
            .map(|u| {
                let n = c.count(u);
                (u, (0..n).map(|k| (k % 7) as f32 - 2.5).collect())
            })
            .collect();
        let out = hipdnn_engines::reference::testing::run_graph(c.graph(), &ins, &c.outputs())
            .unwrap_or_else(|err| panic!("case {i}: {c:?}: {}", err.message));
        let mut want = vec![rows * cols];
        if c.training {
            want.extend(std::iter::repeat_n(rows, c.outputs().len() - 1));
        }
        assert_eq!(
            out.iter().map(Vec::len).collect::<Vec<_>>(),
            want,
            "case {i}"
        );
        assert!(out.iter().flatten().all(|v| v.is_finite()), "case {i}");
    }
}

/// Not a check by itself: writes the launches of every GPU-test case, as the fake sm_90 device
/// records them (the Rust pack's kernel arguments by parameter name, grid, entry), the input
/// bytes in each tensor's layout, and the CPU reference engine's outputs, to the JSON file
/// named by `HIPDNN_NORM_LAUNCHES`. `engines/tests/norm_support/interpret_launches.py` runs
/// those exact launches through `norm_fwd.py` under Triton's interpreter and compares with the
/// reference (the CPU-side check of what `gpu_norms.rs` checks on a device):
/// `HIPDNN_NORM_LAUNCHES=/tmp/l.json cargo test -p hipdnn-engines --test triton_norm -- --ignored`,
/// then `python3 engines/tests/norm_support/interpret_launches.py /tmp/l.json`.
#[test]
#[ignore = "writes a file for the interpreter check; run by hand"]
fn dump_gpu_norms_launches_for_the_interpreter() {
    use hipdnn_engines::reference::testing::{random_values, run_graph};
    let path = std::env::var("HIPDNN_NORM_LAUNCHES")
        .expect("HIPDNN_NORM_LAUNCHES names the JSON file to write");
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let dtn = |d: DT| match d {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        _ => "bf16",
    };
    let mut out = Vec::new();
    for (i, c) in norm_support::gpu_cases().iter().enumerate() {
        let b = c.graph();
        let (spec, bm, bn, _) = chosen(&e, c);
        let ctx = e.create_execution_context(&cfg(&e), &og(c)).unwrap();
        let ins: Vec<(i64, Vec<f32>)> = c
            .inputs()
            .into_iter()
            .map(|u| {
                let (lo, hi) = match u {
                    X => (-2.0, 3.0),
                    SCALE => (0.5, 1.5),
                    _ => (-1.0, 1.0),
                };
                (
                    u,
                    random_values(c.count(u), i as u64 * 31 + u as u64, lo, hi),
                )
            })
            .collect();
        let mut uids = c.inputs();
        uids.extend(c.outputs());
        let mut t: Vec<TensorBinding<'_>> = uids
            .iter()
            .map(|u| TensorBinding {
                uid: *u,
                data: BufferRef::Device {
                    addr: 0x1000_0000 * *u as u64,
                    len: 1 << 30,
                },
            })
            .collect();
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap();
        let (geom, args) = dev.launches.lock().unwrap().last().unwrap().clone();
        let mut named = serde_json::Map::new();
        for (a, v) in signature(spec == 1).iter().zip(&args) {
            let v = match v {
                KernelArgValue::Pointer(p) => serde_json::json!({ "ptr": p / 0x1000_0000 }),
                KernelArgValue::I32(v) => serde_json::json!({ "i32": v }),
                KernelArgValue::F32(v) => serde_json::json!({ "f32": f64::from(*v) }),
                o => panic!("{o:?}"),
            };
            named.insert(a.name.clone(), v);
        }
        let want = run_graph(c.graph(), &ins, &c.outputs()).unwrap();
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
            serde_json::json!({"case": format!("{c:?}"), "grid": geom.grid,
            "block_m": bm, "block_n": bn, "spec": spec == 1, "dtype": dtn(c.dt),
            "args": named, "tensors": tensors, "outputs": c.outputs(),
            "reference": reference}),
        );
    }
    std::fs::write(&path, serde_json::to_string(&out).unwrap()).unwrap();
}

#[test]
fn a_half_epsilon_reaches_the_kernel_rounded_to_f16_as_the_reference_reads_it() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    for (half, want) in [(true, 0.001_000_404_4_f32), (false, 1e-3)] {
        let c = NormCase {
            eps: 1e-3,
            eps_half: half,
            ..NormCase::rmsnorm(DT::HALF, &[3, 100])
        };
        let ctx = e.create_execution_context(&cfg(&e), &og(&c)).unwrap();
        let bytes = e
            .serialization()
            .unwrap()
            .serialize_execution_context(e.id(), ctx.as_ref())
            .unwrap();
        let p = decode_payload(&bytes).unwrap();
        assert_eq!(
            p.launch_values.get("epsilon"),
            Some(&LaunchValue::Float(f64::from(want))),
            "half {half}"
        );
    }
    assert_eq!(half::f16::from_f32(1e-3).to_f32(), 0.001_000_404_4_f32);
}
