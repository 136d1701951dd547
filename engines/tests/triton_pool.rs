//! The pool_fwd Triton family (`hipkernel.resample_fwd.dispatch.v1`) without a device: launch
//! values round trip, exact refusal texts (graphs the pack does not serve, damaged saved
//! values), the graph matcher's layout / window / mode mapping, the static rule's entry per
//! column count on a fake sm_90 device with the committed archive, the recorded launch of a
//! pooling graph, save → restore on an engine without kernels → the identical launch, a
//! fresh engine's build saving byte-identical bytes, every case of the GPU test's matrix built on the fake device and run
//! on the CPU reference engine, and the kernel under Triton's interpreter.

#[path = "ingestor_support.rs"]
mod support;

mod pool_support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::framework::family::TritonFamily;
use hipdnn_engines::ingestor::framework::triton::TritonConfig;
use hipdnn_engines::ingestor::launch_values::{LaunchValue, LaunchValues};
use hipdnn_engines::ingestor::packs::pool_fwd::{
    PoolFwdHandler, PoolFwdInputs, RESAMPLE_FWD_V1, signature, static_block_n,
};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::run_graph;
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::{DataType as DT, ResampleMode};
use pool_support::{I, Layout, Mode, PoolCase, Tweak, X, Y, compare};
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

fn og(c: &PoolCase) -> OperationGraph {
    OperationGraph::from_bytes(&c.graph().build()).unwrap()
}

/// Max pooling 3×3 / 2, padding 1, of an NHWC f16 x (2, 64, 13, 13) into (2, 64, 7, 7) with an
/// INT32 index, spec 16×64.
fn inputs(spec: bool) -> PoolFwdInputs {
    let mut config = TritonConfig::parse("pool_fwd_f16_spec_16x64x1_g1_w4_s1_sh4096_ws32").unwrap();
    config.spec = spec;
    PoolFwdInputs {
        uids: [1, 2],
        index_uid: Some(3),
        dtype: 2,
        op: 4,
        cl: true,
        shape: [2, 64, 1, 13, 13, 1, 7, 7],
        window: [1, 3, 3, 1, 2, 2, 0, 1, 1],
        strides: [
            10816, 1, 0, 832, 64, 3136, 1, 0, 448, 64, 3136, 1, 0, 448, 64,
        ],
        config,
    }
}

fn err<T: std::fmt::Debug>(r: hipdnn_backend::status::PluginResult<T>) -> String {
    r.expect_err("refused").message
}

#[test]
fn pool_launch_values_round_trip_and_give_the_geometry() {
    for spec in [true, false] {
        let i = inputs(spec);
        let l = i.to_launch().unwrap();
        assert_eq!(l.dispatch, RESAMPLE_FWD_V1);
        let back = PoolFwdHandler
            .restore_launch(RESAMPLE_FWD_V1, &l.launch_values)
            .unwrap();
        assert_eq!(back, l);
        // Every value but the config's family / dtype strings (not saved) comes back.
        let r = PoolFwdInputs::from_values(RESAMPLE_FWD_V1, &l.launch_values).unwrap();
        assert_eq!(
            (
                r.uids,
                r.index_uid,
                r.dtype,
                r.op,
                r.cl,
                r.shape,
                r.window,
                r.strides
            ),
            (
                i.uids,
                i.index_uid,
                i.dtype,
                i.op,
                i.cl,
                i.shape,
                i.window,
                i.strides
            )
        );
        assert_eq!(
            (
                r.config.spec,
                r.config.block,
                r.config.num_warps,
                r.config.shared_bytes
            ),
            (spec, [16, 64, 1], 4, 4096)
        );
        // 98 positions in 16-row tiles, 64 channels in one 64-column tile.
        assert_eq!(l.geometry.grid, [7, 1, 1]);
        assert_eq!(l.geometry.block, [128, 1, 1]);
        assert_eq!(l.geometry.shared_mem_bytes, 4096);
        assert_eq!(l.workspace_bytes, 0);
        assert_eq!(l.pointer_uids, vec![1, 2, 3]);
        let mut ints: Vec<i32> = vec![2, 64, 1, 13, 13, 1, 7, 7, 1, 3, 3, 1, 2, 2, 0, 1, 1];
        if spec {
            ints.extend([10816, 0, 832, 64, 3136, 0, 448, 64, 3136, 0, 448, 64, 4]);
        } else {
            ints.extend([
                10816, 1, 0, 832, 64, 3136, 1, 0, 448, 64, 3136, 1, 0, 448, 64, 1, 4,
            ]);
        }
        let want: Vec<KernelArgValue> = ints.iter().map(|v| KernelArgValue::I32(*v)).collect();
        assert_eq!(l.scalar_args, want);
        let sig = PoolFwdHandler.launch_signature_for(&l.launch_values);
        assert_eq!(sig, signature(spec));
        let last: Vec<(String, u32, u32)> = sig[sig.len() - 3..]
            .iter()
            .map(|a| (a.name.clone(), a.size, a.offset))
            .collect();
        // 3 pointers (24 bytes), then 30 (spec) or 34 ints, op the last at 24 + 4·29 or
        // 24 + 4·33, the scratch pointers 8-aligned after it.
        let (op_at, base) = if spec { (140, 144) } else { (156, 160) };
        assert_eq!(
            last,
            [
                ("op".to_string(), 4, op_at),
                ("global_scratch".to_string(), 8, base),
                ("profile_scratch".to_string(), 8, base + 8)
            ]
        );
        let t: Vec<TensorBinding<'_>> = [1i64, 2, 3]
            .iter()
            .map(|u| TensorBinding {
                uid: *u,
                data: BufferRef::Device {
                    addr: 0x1000 * *u as u64,
                    len: 1 << 20,
                },
            })
            .collect();
        let args = PoolFwdHandler.kernel_args(&l, &t).unwrap();
        assert_eq!(
            &args[..3],
            &[
                KernelArgValue::Pointer(0x1000),
                KernelArgValue::Pointer(0x2000),
                KernelArgValue::Pointer(0x3000)
            ]
        );
        assert_eq!(args.len(), signature(spec).len());
        assert_eq!(&args[args.len() - 2..], &[KernelArgValue::Pointer(0); 2]);
        // Without an index: a null index pointer, the same argument count.
        let mut no_index = i.clone();
        no_index.index_uid = None;
        no_index.op = 0;
        no_index.strides[10..].fill(0);
        let l2 = no_index.to_launch().unwrap();
        assert!(!l2.launch_values.contains_key("index.uid"));
        let args = PoolFwdHandler.kernel_args(&l2, &t[..2]).unwrap();
        assert_eq!(args[2], KernelArgValue::Pointer(0));
        assert_eq!(args.len(), signature(spec).len());
    }
    // The channels-first order: rows (n, c, od, oh) = 2·64·7 = 896, columns ow = 7.
    let mut cf = inputs(false);
    cf.cl = false;
    cf.config.block = [64, 16, 1];
    assert_eq!(cf.rows_cols(), (896, 7));
    assert_eq!(cf.to_launch().unwrap().geometry.grid, [14, 1, 1]);
}

fn values(spec: bool) -> LaunchValues {
    inputs(spec).to_launch().unwrap().launch_values
}

#[test]
fn pool_launch_value_refusals_are_exact() {
    let d = RESAMPLE_FWD_V1;
    let restore = |v| PoolFwdHandler.restore_launch(d, &v);
    let op_text = format!(
        "{LOAD}launch value 'op' of dispatch '{d}' must be a mode 0..3 with bit 4 (index, modes 0 and 1 only), bit 8 (INT64 index, with bit 4) and bit 16 (f32 y); the plan holds"
    );
    // An index with average pooling.
    let mut v = values(true);
    v.insert("op".into(), LaunchValue::Int(2 | 4));
    assert_eq!(err(restore(v)), format!("{op_text} 6"));
    // An INT64 index without an index.
    let mut v = values(true);
    v.insert("op".into(), LaunchValue::Int(8));
    assert_eq!(err(restore(v)), format!("{op_text} 8"));
    let mut v = values(true);
    v.insert("op".into(), LaunchValue::Int(32));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'op' of dispatch '{d}' must be int in [0, 31], and the plan holds 32"
        )
    );
    // op without bit 4 while index.uid is saved, and the reverse.
    let mut v = values(true);
    v.insert("op".into(), LaunchValue::Int(0));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'index.uid' of dispatch '{d}' must be present exactly when 'op' bit 4 is set; op is 0"
        )
    );
    let mut v = values(true);
    v.remove("index.uid");
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'index.uid' of dispatch '{d}' must be present exactly when 'op' bit 4 is set; op is 4"
        )
    );
    let mut v = values(false);
    v.remove("index.uid");
    v.insert("op".into(), LaunchValue::Int(0));
    assert_eq!(
        err(restore(v.clone())),
        format!(
            "{LOAD}launch values of dispatch '{d}' name no index, whose strides 'sin', 'sic', 'sid', 'sih', 'siw' must be 0"
        )
    );
    for s in ["sin", "sic", "sid", "sih", "siw"] {
        v.insert(s.into(), LaunchValue::Int(0));
    }
    assert!(restore(v).is_ok(), "no index, index strides 0");
    // The spec variant with a strided channel axis, with the channels-first order, with
    // channels not a multiple of 16.
    let spec_text = format!(
        "{LOAD}launch values of dispatch '{d}' name the spec variant, whose 'cl' must be 1, 'sxc', 'syc' (and with an index 'sic') 1, 'channels' and the other strides multiples of 16"
    );
    for (name, value) in [
        ("sxc", 2),
        ("syc", 32),
        ("sic", 16),
        ("cl", 0),
        ("channels", 24),
        ("syh", 440),
    ] {
        let mut v = values(true);
        v.insert(name.into(), LaunchValue::Int(value));
        assert_eq!(err(restore(v)), spec_text, "{name}");
    }
    assert!(restore(values(false)).is_ok());
    let mut v = values(false);
    v.insert("win_d".into(), LaunchValue::Int(2));
    v.insert("win_h".into(), LaunchValue::Int(4096));
    v.insert("win_w".into(), LaunchValue::Int(4096));
    assert_eq!(
        err(restore(v.clone())),
        format!(
            "{LOAD}launch values of dispatch '{d}' give a window of 33554432 positions; the contract takes at most 16777216"
        )
    );
    v.insert("win_d".into(), LaunchValue::Int(1));
    assert!(restore(v).is_ok(), "2^24 positions is the limit");
    let mut v = values(false);
    v.insert("out_w".into(), LaunchValue::Int(1 << 30));
    v.insert("str_w".into(), LaunchValue::Int(2));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{d}' give (out − 1)·stride + window = 2147483649 on spatial axis 2; the contract takes at most 2147483647"
        )
    );
    let mut v = values(false);
    v.insert("batch".into(), LaunchValue::Int(1 << 25));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values of dispatch '{d}' give 1644167168 rows and 64 columns in 102760448 programs; the contract takes at most 1073741824 rows and columns and 2147483647 programs"
        )
    );
    let mut v = values(false);
    v.insert("pad_h".into(), LaunchValue::Int(-1));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'pad_h' of dispatch '{d}' must be int in [0, 2147483647], and the plan holds -1"
        )
    );
    let mut v = values(false);
    v.insert("str_h".into(), LaunchValue::Int(0));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'str_h' of dispatch '{d}' must be int in [1, 2147483647], and the plan holds 0"
        )
    );
    let mut v = values(false);
    v.insert("block_n".into(), LaunchValue::Int(256));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch value 'block_n' of dispatch '{d}' must be int in [16, 128], and the plan holds 256"
        )
    );
    let mut v = values(false);
    v.remove("pad_w");
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}dispatch '{d}' needs launch value 'pad_w' (int in [0, 2147483647]), and the plan has none"
        )
    );
    let mut v = values(false);
    v.insert("post_w".into(), LaunchValue::Int(1));
    assert_eq!(
        err(restore(v)),
        format!("{LOAD}launch value 'post_w' is not part of the contract of dispatch '{d}'")
    );
    let mut v = values(false);
    v.insert("num_warps".into(), LaunchValue::Int(16));
    v.insert("warp_size".into(), LaunchValue::Int(64));
    assert!(
        restore(v.clone()).is_ok(),
        "16 × 64 = 1024 threads is the limit"
    );
    v.insert("warp_size".into(), LaunchValue::Int(48));
    assert_eq!(
        err(restore(v)),
        format!(
            "{LOAD}launch values 'warp_size' and 'num_warps' of dispatch '{d}' give 768 threads per block; the contract takes warp size 32 or 64 and at most 1024 threads"
        )
    );
    assert!(
        err(PoolFwdHandler.restore_launch("hipkernel.resample_fwd.dispatch.v2", &values(false)))
            .ends_with("names no launch-value contract this provider reads; the handler reads the contract 'hipkernel.resample_fwd.dispatch.v1'")
    );
}

/// The saved launch values the engine builds `c` with on the fake sm_90.
fn chosen(e: &IngestorEngine, c: &PoolCase) -> LaunchValues {
    let ctx = e
        .create_execution_context(&cfg(e), &og(c))
        .unwrap_or_else(|err| panic!("{c:?}: {}", err.message));
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(p.dispatch_symbol, RESAMPLE_FWD_V1);
    assert_eq!(p.symbol, "hipdnn_pool_fwd");
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

const GEOMETRY: [&str; 19] = [
    "op", "cl", "batch", "channels", "in_d", "in_h", "in_w", "out_d", "out_h", "out_w", "win_d",
    "win_h", "win_w", "str_d", "str_h", "str_w", "pad_d", "pad_h", "pad_w",
];
const STRIDES: [&str; 15] = [
    "sxn", "sxc", "sxd", "sxh", "sxw", "syn", "syc", "syd", "syh", "syw", "sin", "sic", "sid",
    "sih", "siw",
];

#[test]
fn the_graph_matcher_maps_layouts_windows_and_modes() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let p = PoolCase::new;
    let cases: Vec<(PoolCase, [i64; 19], [i64; 15])> = vec![
        // 2-D NCHW max, skipped padding: channels-first order.
        (
            p(
                Mode::Max,
                DT::FLOAT,
                &[2, 3, 7, 9],
                &[3, 3],
                &[2, 2],
                &[1, 1],
                &[1, 0],
            ),
            [0, 0, 2, 3, 1, 7, 9, 1, 4, 4, 1, 3, 3, 1, 2, 2, 0, 1, 1],
            [189, 63, 0, 9, 1, 48, 16, 0, 4, 1, 0, 0, 0, 0, 0],
        ),
        // 2-D NHWC max with ZERO_PAD and an INT64 index: channels-last order.
        (
            p(
                Mode::MaxZeroPad,
                DT::HALF,
                &[2, 3, 7, 9],
                &[3, 3],
                &[2, 2],
                &[1, 1],
                &[1, 0],
            )
            .layout(Layout::Nhwc)
            .with_index(DT::INT64),
            [
                1 | 4 | 8,
                1,
                2,
                3,
                1,
                7,
                9,
                1,
                4,
                4,
                1,
                3,
                3,
                1,
                2,
                2,
                0,
                1,
                1,
            ],
            [189, 1, 0, 27, 3, 48, 1, 0, 12, 3, 48, 1, 0, 12, 3],
        ),
        // 1-D average including padding, f32 y behind bf16 x: the h and d axes of extent 1.
        (
            PoolCase {
                y_f32: true,
                ..p(
                    Mode::AvgInclude,
                    DT::BFLOAT16,
                    &[2, 5, 13],
                    &[4],
                    &[3],
                    &[2],
                    &[3],
                )
            },
            [
                2 | 16,
                0,
                2,
                5,
                1,
                1,
                13,
                1,
                1,
                5,
                1,
                1,
                4,
                1,
                1,
                3,
                0,
                0,
                2,
            ],
            [65, 13, 0, 0, 1, 25, 5, 0, 0, 1, 0, 0, 0, 0, 0],
        ),
        // 3-D average excluding padding, NDHWC.
        (
            p(
                Mode::AvgExclude,
                DT::FLOAT,
                &[1, 4, 5, 6, 7],
                &[2, 3, 2],
                &[2, 1, 2],
                &[1, 1, 0],
                &[0, 2, 1],
            )
            .layout(Layout::Nhwc),
            [3, 1, 1, 4, 5, 6, 7, 3, 7, 4, 2, 3, 2, 2, 1, 2, 1, 1, 0],
            [0, 1, 168, 28, 4, 0, 1, 112, 16, 4, 0, 0, 0, 0, 0],
        ),
        // NCHW with a 1-wide output (global window): channels-last order over the NCHW strides.
        (
            p(
                Mode::AvgInclude,
                DT::FLOAT,
                &[1, 32, 8, 8],
                &[8, 8],
                &[8, 8],
                &[0, 0],
                &[0, 0],
            ),
            [2, 1, 1, 32, 1, 8, 8, 1, 1, 1, 1, 8, 8, 1, 8, 8, 0, 0, 0],
            [0, 64, 0, 8, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        ),
        // One channel in NHWC: the channels-first order (w is as near as c).
        (
            p(
                Mode::Max,
                DT::FLOAT,
                &[2, 1, 6, 8],
                &[2, 2],
                &[2, 2],
                &[0, 0],
                &[0, 0],
            )
            .layout(Layout::Nhwc),
            [0, 0, 2, 1, 1, 6, 8, 1, 3, 4, 1, 2, 2, 1, 2, 2, 0, 0, 0],
            [48, 0, 0, 8, 1, 12, 0, 0, 4, 1, 0, 0, 0, 0, 0],
        ),
    ];
    for (i, (c, geo, st)) in cases.iter().enumerate() {
        let v = chosen(&e, c);
        assert_eq!(ints(&v, &GEOMETRY), geo, "case {i}: {c:?}");
        assert_eq!(ints(&v, &STRIDES), st, "case {i}: {c:?}");
        assert_eq!(
            v.contains_key("index.uid"),
            c.index.is_some(),
            "case {i}: {c:?}"
        );
    }
}

#[test]
fn the_static_rule_picks_the_tile_by_column_count_and_spec_by_layout() {
    assert_eq!(
        [1, 7, 16, 17, 33, 64, 65, 128, 129, 4096].map(static_block_n),
        [16, 16, 16, 32, 64, 64, 128, 128, 128, 128]
    );
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let max = |dt, dims: &[i64], layout| {
        PoolCase::new(Mode::Max, dt, dims, &[3, 3], &[2, 2], &[1, 1], &[1, 1]).layout(layout)
    };
    let cases: Vec<(PoolCase, [i64; 4])> = vec![
        // NHWC, channels multiples of 16: spec, the tile by channels.
        (
            max(DT::HALF, &[2, 64, 112, 112], Layout::Nhwc),
            [1, 1, 16, 64],
        ),
        (
            max(DT::FLOAT, &[2, 256, 14, 14], Layout::Nhwc),
            [1, 1, 8, 128],
        ),
        (
            max(DT::BFLOAT16, &[2, 32, 9, 9], Layout::Nhwc),
            [1, 1, 32, 32],
        ),
        (max(DT::FLOAT, &[1, 16, 9, 9], Layout::Nhwc), [1, 1, 64, 16]),
        // NHWC with 24 or 3 channels: generic channels-last.
        (max(DT::HALF, &[2, 24, 9, 9], Layout::Nhwc), [0, 1, 32, 32]),
        (max(DT::FLOAT, &[2, 3, 9, 9], Layout::Nhwc), [0, 1, 64, 16]),
        // x NHWC, y NCHW: y's channel stride is not 1, generic channels-last.
        (
            PoolCase {
                y_layout: Layout::Nchw,
                ..max(DT::HALF, &[2, 64, 9, 9], Layout::Nhwc)
            },
            [0, 1, 16, 64],
        ),
        // NCHW: generic channels-first, the tile by output columns (56, 5).
        (
            max(DT::HALF, &[2, 64, 112, 112], Layout::Nchw),
            [0, 0, 16, 64],
        ),
        (max(DT::FLOAT, &[2, 64, 9, 9], Layout::Nchw), [0, 0, 64, 16]),
        (
            max(DT::FLOAT, &[1, 8, 400, 400], Layout::Nchw),
            [0, 0, 8, 128],
        ),
    ];
    for (i, (c, want)) in cases.iter().enumerate() {
        assert_eq!(
            ints(&chosen(&e, c), &["spec", "cl", "block_m", "block_n"]),
            want,
            "case {i}: {c:?}"
        );
    }
}

fn binds(misalign: u64, index: bool) -> Vec<TensorBinding<'static>> {
    let uids: &[i64] = if index { &[X, Y, I] } else { &[X, Y] };
    uids.iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: 0x1000_0000 * *uid as u64 + if *uid == I { misalign } else { 0 },
                len: 1 << 28,
            },
        })
        .collect()
}

#[test]
fn a_pool_graph_launches_once_as_recorded_and_restores_without_kernels() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    // ResNet's stem max pool, NHWC f16, INT32 index: spec 16×64; 2·56·56 = 6272 positions.
    let c = PoolCase::new(
        Mode::Max,
        DT::HALF,
        &[2, 64, 112, 112],
        &[3, 3],
        &[2, 2],
        &[1, 1],
        &[1, 1],
    )
    .layout(Layout::Nhwc)
    .with_index(DT::INT32);
    let ctx = e.create_execution_context(&cfg(&e), &og(&c)).unwrap();
    assert_eq!(ctx.workspace_size(), 0);
    let n0 = dev.launches.lock().unwrap().len();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut binds(0, true),
    })
    .unwrap();
    assert_eq!(dev.launches.lock().unwrap().len(), n0 + 1, "one launch");
    let (geom, args) = dev.launches.lock().unwrap()[n0].clone();
    assert_eq!(geom.grid, [392, 1, 1], "6272 positions, 16 per program");
    assert_eq!(geom.block, [128, 1, 1]);
    let p = |u: i64| KernelArgValue::Pointer(0x1000_0000 * u as u64);
    assert_eq!(&args[..3], &[p(X), p(Y), p(I)]);
    let want: Vec<KernelArgValue> = [
        2, 64, 1, 112, 112, 1, 56, 56, 1, 3, 3, 1, 2, 2, 0, 1, 1, 802816, 0, 7168, 64, 200704, 0,
        3584, 64, 200704, 0, 3584, 64, 4,
    ]
    .iter()
    .map(|v| KernelArgValue::I32(*v))
    .collect();
    assert_eq!(&args[3..33], &want[..]);
    assert_eq!(&args[33..], &[KernelArgValue::Pointer(0); 2]);
    // A misaligned index on the spec plan: refused, nothing launched.
    let e2 = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut binds(4, true),
        })
        .unwrap_err();
    assert_eq!(e2.status, PluginStatus::BadParam);
    assert_eq!(
        e2.message,
        "tensor UID 3 is at 0x30000004; this plan runs the specialized pool_fwd kernel, which needs 16-byte aligned x, y and index"
    );
    // The index unbound.
    let e3 = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut binds(0, false),
        })
        .unwrap_err();
    assert_eq!(e3.status, PluginStatus::BadParam);
    assert_eq!(
        e3.message,
        "the variant pack binds no memory to tensor UID 3"
    );
    assert_eq!(dev.launches.lock().unwrap().len(), n0 + 1);
    // Save → restore on an engine without kernels → the identical launch → re-save identical.
    let ser = e.serialization().unwrap();
    let bytes = ser
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let dev2 = FakeDevice::new("sm_90", 0);
    let e4 = engine(dev2.clone(), vec![]);
    let ser4 = e4.serialization().unwrap();
    let restored = ser4
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    restored
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut binds(0, true),
        })
        .unwrap();
    assert_eq!(dev2.launches.lock().unwrap()[0], (geom, args));
    // A restored plan is re-saved from the bytes it was loaded from (hipDNN never calls the
    // hook for it); a fresh engine's build of the same graph saves the same bytes.
    assert_eq!(
        err(ser4.serialize_execution_context(e4.id(), restored.as_ref())),
        "cannot save this plan here: this plan was loaded from a saved payload; hipDNN saves a loaded plan from the plan bytes it was loaded from and never calls this hook for it, so a direct re-save is refused"
    );
    let e6 = engine(FakeDevice::new("sm_90", 0), sm90());
    let ctx6 = e6.create_execution_context(&cfg(&e6), &og(&c)).unwrap();
    let again = e6
        .serialization()
        .unwrap()
        .serialize_execution_context(e6.id(), ctx6.as_ref())
        .unwrap();
    assert_eq!(again, bytes, "re-save byte-identical");
    // A damaged payload is refused, and a saved plan for another arch too.
    let mut bad = bytes.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xFF;
    assert!(ser4.create_execution_context_from_serialized(&bad).is_err());
    let e5 = engine(FakeDevice::new("gfx942", 0), vec![]);
    let m = e5
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(m.status, PluginStatus::NotApplicable, "{}", m.message);
}

/// The refusal of the first sm_90 generic f32 pool_fwd entry for `c`.
fn refusal(c: &PoolCase) -> String {
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("pool_fwd_f32_generic_64x16"))
        .unwrap();
    err(PoolFwdHandler.prepare_kernel(&k, &og(c)))
}

#[test]
fn graphs_the_pack_does_not_serve_are_refused_with_the_reason() {
    let base = || {
        PoolCase::new(
            Mode::Max,
            DT::FLOAT,
            &[2, 3, 7, 9],
            &[3, 3],
            &[2, 2],
            &[1, 1],
            &[1, 0],
        )
    };
    let c = PoolCase {
        raw_mode: Some(ResampleMode::NOT_SET),
        ..base()
    };
    assert_eq!(
        refusal(&c),
        "the pool_fwd pack serves the resample modes MAXPOOL, AVGPOOL_INCLUDE_PADDING and AVGPOOL_EXCLUDE_PADDING, not NOT_SET"
    );
    let c = PoolCase {
        mode: Mode::AvgInclude,
        ..base().with_index(DT::INT32)
    };
    assert_eq!(
        refusal(&c),
        "the pool_fwd pack writes an index for MAXPOOL only; this node has an index tensor with AVGPOOL_INCLUDE_PADDING"
    );
    let c = PoolCase {
        tweak: Tweak::IndexFlagOnly,
        ..base()
    };
    assert_eq!(
        refusal(&c),
        "the pool_fwd pack: generate_index is set but index_tensor_uid is absent"
    );
    assert_eq!(
        refusal(&base().with_index(DT::INT8)),
        "the pool_fwd pack needs an INT32 or INT64 index, not INT8"
    );
    assert_eq!(
        refusal(&PoolCase::new(
            Mode::Max,
            DT::DOUBLE,
            &[2, 3, 7, 9],
            &[3, 3],
            &[2, 2],
            &[1, 1],
            &[1, 0]
        )),
        "the pool_fwd pack serves f32, f16 and bf16 x, not DOUBLE"
    );
    let c = PoolCase {
        tweak: Tweak::OtherYType,
        ..PoolCase::new(
            Mode::Max,
            DT::HALF,
            &[2, 3, 7, 9],
            &[3, 3],
            &[2, 2],
            &[1, 1],
            &[1, 0],
        )
    };
    let k16 = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("pool_fwd_f16_generic_64x16"))
        .unwrap();
    assert_eq!(
        err(PoolFwdHandler.prepare_kernel(&k16, &og(&c))),
        "the pool_fwd pack needs y of x's type (HALF) or FLOAT, not BFLOAT16"
    );
    assert_eq!(
        refusal(&PoolCase {
            tweak: Tweak::WrongYDims,
            ..base()
        }),
        "the pool_fwd pack needs y dims [2, 3, 4, 4] (floor((in + pre + post − window) / stride) + 1 per spatial dim), not [2, 3, 4, 5]"
    );
    assert_eq!(
        refusal(&PoolCase {
            tweak: Tweak::ShortWindow,
            ..base()
        }),
        "the pool_fwd pack needs window with 2 entries (one per spatial dim), each at least 1; the node has [3]"
    );
    assert_eq!(
        refusal(&PoolCase {
            tweak: Tweak::VirtualY,
            ..base()
        }),
        "the pool_fwd pack needs x, y and the index in memory; tensor uid 2 is virtual"
    );
    // Rank 6 (4-D pooling).
    let c = PoolCase::new(
        Mode::Max,
        DT::FLOAT,
        &[1, 2, 3, 3, 3, 3],
        &[1, 1, 1, 1],
        &[1, 1, 1, 1],
        &[0, 0, 0, 0],
        &[0, 0, 0, 0],
    );
    assert_eq!(
        refusal(&c),
        "the pool_fwd pack serves x and y of rank 3, 4 or 5 (1-D, 2-D or 3-D pooling); x dims [1, 2, 3, 3, 3, 3], y dims [1, 2, 3, 3, 3, 3]"
    );
    // A window of 2^25 positions.
    let c = PoolCase::new(
        Mode::AvgInclude,
        DT::FLOAT,
        &[1, 1, 4096, 8192],
        &[4096, 8192],
        &[1, 1],
        &[0, 0],
        &[0, 0],
    );
    assert_eq!(
        refusal(&c),
        "the pool_fwd pack needs a window of at most 16777216 positions (the index and the divisor exact in f32), not 33554432"
    );
    // Padding that takes a coordinate past int32.
    let c = PoolCase::new(
        Mode::Max,
        DT::FLOAT,
        &[1, 1, 4, 4],
        &[1, 1],
        &[1, 1 << 30],
        &[0, 1 << 30],
        &[0, 1 << 30],
    );
    assert_eq!(
        refusal(&c),
        "the pool_fwd pack needs in + pre_padding + post_padding at most 2147483647 per spatial dim (int32 coordinates); x [1, 1, 4, 4], pre_padding [0, 1073741824], post_padding [0, 1073741824]"
    );
    // A graph of two nodes, a node of another kind.
    let mut two = base().graph();
    two.tensor(hipdnn_engines::reference::testing::TensorSpec::new(
        9,
        "z",
        DT::FLOAT,
        &[2, 3, 4, 4],
    ));
    two.pointwise(
        "relu",
        hipdnn_schema::graph::PointwiseAttributesArgs {
            operation: hipdnn_schema::graph::PointwiseMode::RELU_FWD,
            in_0_tensor_uid: Y,
            out_0_tensor_uid: 9,
            ..Default::default()
        },
    );
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("pool_fwd_f32_generic_64x16"))
        .unwrap();
    let g = OperationGraph::from_bytes(&two.build()).unwrap();
    assert_eq!(
        err(PoolFwdHandler.prepare_kernel(&k, &g)),
        "the pool_fwd pack serves graphs of one resample forward node; this graph has 2 nodes"
    );
    let mut pw = hipdnn_engines::reference::testing::GraphBuilder::new("pw");
    pw.tensor(hipdnn_engines::reference::testing::TensorSpec::new(
        1,
        "a",
        DT::FLOAT,
        &[4],
    ))
    .tensor(hipdnn_engines::reference::testing::TensorSpec::new(
        2,
        "b",
        DT::FLOAT,
        &[4],
    ));
    pw.pointwise(
        "relu",
        hipdnn_schema::graph::PointwiseAttributesArgs {
            operation: hipdnn_schema::graph::PointwiseMode::RELU_FWD,
            in_0_tensor_uid: 1,
            out_0_tensor_uid: 2,
            ..Default::default()
        },
    );
    let g = OperationGraph::from_bytes(&pw.build()).unwrap();
    assert_eq!(
        err(PoolFwdHandler.prepare_kernel(&k, &g)),
        "the pool_fwd pack serves a resample forward (pooling) node; node 'relu' is a PointwiseAttributes node"
    );
    assert_eq!(
        err(PoolFwdHandler.prepare(&og(&base()))),
        "the pool_fwd pack launches packed entries only; prepare a kernel"
    );
    // A data type the entry is not built for.
    let m = refusal(&PoolCase {
        dt: DT::HALF,
        ..base()
    });
    assert!(m.ends_with("is built for f32, the graph is HALF"), "{m}");
    // The spec entry for NCHW; the static rule's tile for 3 NHWC channels is 16 columns.
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("pool_fwd_f32_spec_64x16"))
        .unwrap();
    let m = err(PoolFwdHandler.prepare_kernel(&k, &og(&base())));
    assert!(
        m.ends_with("is the spec variant; the graph's layout does not satisfy its hints (channels-last order, unit channel strides, the channel count and the other strides of x, y and the index multiples of 16)"),
        "{m}"
    );
    let k = sm90()
        .into_iter()
        .find(|k| k.name.starts_with("pool_fwd_f32_generic_8x128"))
        .unwrap();
    let m = err(PoolFwdHandler.prepare_kernel(&k, &og(&base().layout(Layout::Nhwc))));
    assert!(
        m.ends_with(": static rule: 3 channels take the 16-column tile, not 128"),
        "{m}"
    );
    let m = err(PoolFwdHandler.prepare_kernel(&k, &og(&base())));
    assert!(
        m.ends_with(": static rule: 4 output columns take the 16-column tile, not 128"),
        "{m}"
    );
    // The engine refuses with the last reason; the CPU reference engine serves a DOUBLE x.
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let m = e
        .create_execution_context(&cfg(&e), &og(&base().with_index(DT::UINT8)))
        .map(|_| ())
        .unwrap_err();
    assert_eq!(m.status, PluginStatus::NotApplicable);
}

/// Every case of the GPU test's matrix builds on the fake sm_90 engine as a pool_fwd plan with
/// the op code of its graph and runs on the CPU reference engine with outputs of the expected
/// size, so the one GPU run meets no graph error.
#[test]
fn every_gpu_pool_case_builds_on_the_fake_device_and_runs_on_the_reference() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let cases = pool_support::gpu_cases();
    assert_eq!(cases.len(), 3 * 4 * 8 * 2 + 6 + 8 + 12);
    let mut spec = 0;
    for (i, c) in cases.iter().enumerate() {
        let v = chosen(&e, c);
        let [op, s] = ints(&v, &["op", "spec"])[..] else {
            unreachable!()
        };
        let want_op = c.mode.code()
            | match c.index {
                None => 0,
                Some(DT::INT32) => 4,
                Some(_) => 12,
            }
            | if c.y_f32 { 16 } else { 0 };
        assert_eq!(op, want_op, "case {i}: {c:?}");
        spec += s;
        let x = c.input(i as u64 + 1);
        let out = run_graph(c.graph(), &[(X, x)], &c.outputs())
            .unwrap_or_else(|err| panic!("case {i}: {c:?}: {}", err.message));
        assert_eq!(out[0].len(), c.counts().1, "case {i}");
    }
    assert!(spec >= 30, "{spec} spec plans");
}

/// The GPU test's comparison can fail: a one-ulp change, a NaN where the reference has a value,
/// and a short output are refused with the element named; NaN against NaN passes.
#[test]
fn the_gpu_comparison_refuses_outputs_off_the_reference() {
    let want = [1.0f32, -2.5, f32::NAN, f32::NEG_INFINITY];
    assert_eq!(compare("y", &want, &want), Ok(4));
    let mut got = want;
    got[1] = f32::from_bits(got[1].to_bits() + 1);
    assert_eq!(
        compare("y", &got, &want),
        Err("y: element 1: gpu -2.5000002, cpu -2.5".to_string())
    );
    let mut got = want;
    got[0] = f32::NAN;
    assert_eq!(
        compare("y", &got, &want),
        Err("y: element 0: gpu NaN, cpu 1".to_string())
    );
    let mut got = want;
    got[3] = 0.0;
    assert!(compare("y", &got, &want).is_err());
    assert!(compare("y", &want[..3], &want).is_err());
}

/// Runs `engines/kernels/triton/interpret_pool_fwd.py` (every mode, 1-D/2-D/3-D windows, both
/// tile orders, NCHW/NHWC, the index, NaN inputs, under Triton's interpreter against a numpy
/// transcription of the reference engine, bit-exact) with the system `python3` and the pack
/// venv's site-packages (`TRITON_VENV`, else `target/triton-venv`). Prints `skipped: …` and
/// passes when that python cannot import numpy and triton; fails when the script reports a
/// failure.
#[test]
fn the_kernel_matches_the_reference_under_the_triton_interpreter() {
    support::run_interpreter_check("interpret_pool_fwd.py", 54);
}
