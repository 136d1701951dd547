//! The SDPA forward Triton family (`hipkernel.sdpa_fwd.dispatch.v1`) without a device: the
//! packed entries of every arch (one per data type × head-dim bucket × variant, parameter lists
//! equal to the contract's, spec hints), launch-value round trips and exact restore refusals,
//! the graph refusals, and the engine on a fake sm_90 device: the static rule's entry, the
//! launch's grid and arguments (scale bits, band, mask strides, statistics pointers), the
//! alignment refusal of a spec plan, and save → restore on an engine with no kernels.

#[path = "ingestor_support.rs"]
mod support;

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
use hipdnn_engines::ingestor::packs::sdpa_fwd::{self, SDPA_FWD_V1, SdpaFwdHandler, SdpaFwdInputs};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec};
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::{
    DataType as DT, DiagonalAlignment, NodeAttributes, SdpaAttributes, SdpaAttributesArgs,
};
use std::path::PathBuf;
use std::sync::Arc;
use support::FakeDevice;

const ARCHES: [&str; 5] = ["gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"];

fn packed(arch: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("kernels/packed")
        .join(arch)
}

#[test]
fn every_arch_packs_each_dtype_and_head_dim_bucket_with_the_contract_signature() {
    for arch in ARCHES {
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(packed(arch).join("triton.json")).unwrap(),
        )
        .unwrap();
        let mut seen = Vec::new();
        let mut rows64 = Vec::new();
        let mut packed = Vec::new();
        for k in v["kernels"].as_array().unwrap() {
            if k["family"] != "sdpa_fwd" {
                continue;
            }
            let name = k["name"].as_str().unwrap();
            let cfg = TritonConfig::parse(name).unwrap();
            assert_eq!(k["kernel_source"]["symbol"], "hipdnn_sdpa_fwd", "{name}");
            let params: Vec<&str> = k["params"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["name"].as_str().unwrap())
                .collect();
            assert_eq!(params, sdpa_fwd::param_names(cfg.spec), "{arch} {name}");
            let ce = &k["constexprs"];
            assert_eq!(ce["BLOCK_K"], cfg.block[2], "{name}");
            let div: Vec<&str> = k["divisibility_16"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap())
                .collect();
            if cfg.spec {
                for n in ["sqd", "skd", "svd", "sod"] {
                    assert_eq!(ce[n], 1, "{name} {n}");
                }
                let mut want = vec![
                    "D", "k_ptr", "o_ptr", "q_ptr", "skb", "skh", "sks", "sob", "soh", "sos",
                    "sqb", "sqh", "sqs", "svb", "svh", "svs", "v_ptr",
                ];
                want.sort_unstable();
                assert_eq!(div, want, "{name}");
            } else {
                assert!(div.is_empty(), "{name}");
            }
            seen.push((cfg.dtype.clone(), cfg.spec, cfg.block[2]));
            if cfg.group_m == sdpa_fwd::PACKED_GROUP {
                assert!(cfg.spec, "{name}");
                packed.push((cfg.dtype.clone(), cfg.block[2]));
            } else if cfg.spec && cfg.warp_size == 32 && cfg.block[0] <= 64 {
                rows64.push((cfg.dtype.clone(), cfg.block[2]));
            }
        }
        seen.sort();
        seen.dedup();
        // The static rule refuses the 128-row spec tile of buckets 64 and 128 to banded graphs
        // on warp-32 targets: a 64-row spec tile must be packed beside it.
        rows64.sort();
        rows64.dedup();
        let want64: Vec<(String, i64)> = if arch.starts_with("sm_") {
            ["bf16", "f16"]
                .iter()
                .flat_map(|dt| [(dt.to_string(), 64), (dt.to_string(), 128)])
                .collect()
        } else {
            Vec::new()
        };
        assert_eq!(rows64, want64, "{arch}: 64-row spec tiles");
        // Every 16-bit bucket packs one packed-heads (group 4) entry: the static rule sends
        // every decode-length grouped-head graph the spec hints admit to it.
        packed.sort();
        let want_packed: Vec<(String, i64)> = ["bf16", "f16"]
            .iter()
            .flat_map(|dt| [32, 64, 128].map(|d| (dt.to_string(), d)))
            .collect();
        assert_eq!(packed, want_packed, "{arch}: packed-heads entries");
        let mut want = Vec::new();
        for dt in ["bf16", "f16"] {
            for spec in [false, true] {
                for d in [32, 64, 128] {
                    want.push((dt.to_string(), spec, d));
                }
            }
        }
        for d in [32, 64, 128] {
            want.push(("f32".to_string(), false, d));
        }
        want.sort();
        assert_eq!(seen, want, "{arch}");
    }
}

/// Inputs of a causal f16 launch with statistics and a bool mask, generic or spec.
fn inputs(spec: bool) -> SdpaFwdInputs {
    let name = if spec {
        "sdpa_fwd_f16_spec_128x64x64_g1_w4_s3_sh73728_ws32"
    } else {
        "sdpa_fwd_f16_generic_64x64x64_g1_w4_s2_sh32768_ws32"
    };
    let strides = [
        8 * 77 * 64,
        77 * 64,
        64,
        1,
        2 * 129 * 64,
        129 * 64,
        64,
        1,
        2 * 129 * 64,
        129 * 64,
        64,
        1,
        8 * 77 * 64,
        77 * 64,
        64,
        1,
        129,
        0,
        0,
        1,
        8 * 77,
        77,
        1,
    ];
    SdpaFwdInputs {
        uids: [1, 2, 3, 4],
        optional: [None, Some(7), Some(5), None, Some(9)],
        dtype: 2,
        shape: [3, 8, 4, 77, 129, 64],
        strides,
        misc: [
            i64::from(0.125f32.to_bits() as i32),
            1,
            sdpa_fwd::FLAG_RIGHT | sdpa_fwd::FLAG_STATS | sdpa_fwd::FLAG_SUM_EXP,
            52,
            0,
            0,
        ],
        config: TritonConfig::parse(name).unwrap(),
    }
}

#[test]
fn launch_values_round_trip_and_give_the_grid_and_arguments() {
    for spec in [false, true] {
        let i = inputs(spec);
        let mut want = i.clone();
        want.config.num_stages = 0; // not a launch value
        let values = i.to_values();
        assert_eq!(
            values.keys().map(String::as_str).collect::<Vec<_>>().len(),
            sdpa_fwd::value_names().len() - 2,
            "scale.uid and max.uid are absent"
        );
        let back = SdpaFwdInputs::from_values(SDPA_FWD_V1, &values).unwrap();
        assert_eq!(back.uids, want.uids);
        assert_eq!(back.optional, want.optional);
        assert_eq!(back.shape, want.shape);
        assert_eq!(back.strides, want.strides);
        assert_eq!(back.misc, want.misc);
        assert_eq!(back.config.block, want.config.block);
        assert_eq!(back.config.spec, spec);
        assert_eq!(back.to_values(), values);
        let l = back.to_launch().unwrap();
        let bm = if spec { 128 } else { 64 };
        assert_eq!(l.geometry.grid, [77u32.div_ceil(bm), 24, 1]);
        assert_eq!(l.geometry.block, [128, 1, 1]);
        assert_eq!(l.pointer_uids, [1, 2, 3, 4, 7, 5, 9]);
        assert_eq!(l.scalar_args.len(), if spec { 30 } else { 34 });
        assert_eq!(
            &l.scalar_args[..5],
            &[8, 4, 77, 129, 64].map(KernelArgValue::I32)
        );
        let tail = &l.scalar_args[l.scalar_args.len() - 6..];
        assert_eq!(
            tail,
            &[0.125f32.to_bits() as i32, 1, 8 | 32 | 128, 52, 0, 0].map(KernelArgValue::I32)
        );
        let bindings: Vec<TensorBinding<'static>> = [1i64, 2, 3, 4, 5, 7, 9]
            .iter()
            .map(|u| TensorBinding {
                uid: *u,
                data: BufferRef::Device {
                    addr: 0x1000 * *u as u64,
                    len: 1 << 20,
                },
            })
            .collect();
        let args = SdpaFwdHandler.kernel_args(&l, &bindings).unwrap();
        let ptr = |u: u64| KernelArgValue::Pointer(0x1000 * u);
        let p0 = KernelArgValue::Pointer(0);
        assert_eq!(
            &args[..9],
            &[
                ptr(1),
                ptr(2),
                ptr(3),
                ptr(4),
                p0,
                ptr(7),
                ptr(5),
                p0,
                ptr(9)
            ],
            "scale and max pointers null"
        );
        assert_eq!(args.len(), 9 + l.scalar_args.len() + 2);
        assert_eq!(&args[args.len() - 2..], &[p0, p0]);
    }
}

/// An edit of saved launch values.
type Edit = Box<dyn Fn(&mut hipdnn_engines::ingestor::launch_values::LaunchValues)>;

#[test]
fn restore_refusals_are_exact() {
    let base = inputs(false).to_values();
    let d = SDPA_FWD_V1;
    let cases: Vec<(Edit, String)> = vec![
        (
            Box::new(|v| {
                v.insert("flags".into(), LaunchValue::Int(8 | 32 | 128 | 2));
            }),
            format!("launch values of dispatch '{d}': 'flags' has bits 1 or 2 set (170)"),
        ),
        (
            Box::new(|v| {
                v.insert("scale.uid".into(), LaunchValue::Int(6));
            }),
            format!("launch values of dispatch '{d}': 'scale.uid' is present iff 'flags' bit 0"),
        ),
        (
            Box::new(|v| {
                v.insert("mask_kind".into(), LaunchValue::Int(0));
            }),
            format!(
                "launch values of dispatch '{d}': 'mask.uid' is present iff 'mask_kind' is not 0"
            ),
        ),
        (
            Box::new(|v| {
                v.remove("stats.uid");
            }),
            format!("launch values of dispatch '{d}': 'stats.uid' is present iff 'flags' bit 5"),
        ),
        (
            Box::new(|v| {
                v.insert("rep".into(), LaunchValue::Int(3));
            }),
            format!(
                "launch values of dispatch '{d}': 'rep' must divide 'h' and 'd' must not exceed 'block_k'"
            ),
        ),
        (
            Box::new(|v| {
                v.insert("d".into(), LaunchValue::Int(65));
            }),
            format!(
                "launch values of dispatch '{d}': 'rep' must divide 'h' and 'd' must not exceed 'block_k'"
            ),
        ),
        (
            Box::new(|v| {
                v.insert("spec".into(), LaunchValue::Int(1));
                v.insert("skd".into(), LaunchValue::Int(2));
            }),
            format!(
                "launch values of dispatch '{d}' name the spec variant, whose 'sqd', 'skd', 'svd' and 'sod' must be 1"
            ),
        ),
        (
            Box::new(|v| {
                v.insert("b".into(), LaunchValue::Int(8192));
            }),
            format!(
                "launch values 'b' and 'h' of dispatch '{d}' give 65536 batch-heads; the grid takes at most 65535"
            ),
        ),
        (
            Box::new(|v| {
                v.insert("warp_size".into(), LaunchValue::Int(48));
            }),
            format!(
                "launch values 'warp_size' and 'num_warps' of dispatch '{d}' give 192 threads per block; the contract takes warp size 32 or 64 and at most 1024 threads"
            ),
        ),
        (
            Box::new(|v| {
                v.insert("right".into(), LaunchValue::Int((1 << 29) + 1));
            }),
            format!(
                "launch value 'right' of dispatch '{d}' must be int in [-536870912, 536870912], and the plan holds 536870913"
            ),
        ),
        (
            Box::new(|v| {
                v.insert("extra".into(), LaunchValue::Int(1));
            }),
            format!("launch value 'extra' is not part of the contract of dispatch '{d}'"),
        ),
    ];
    for (i, (edit, want)) in cases.into_iter().enumerate() {
        let mut v = base.clone();
        edit(&mut v);
        let r = SdpaFwdInputs::from_values(d, &v);
        let e = r.err().unwrap_or_else(|| panic!("case {i} restored"));
        assert_eq!(e.status, PluginStatus::NotApplicable, "case {i}");
        assert!(e.message.ends_with(&want), "case {i}: {}", e.message);
    }
    let e = SdpaFwdInputs::from_values("hipkernel.sdpa_fwd.dispatch", &base).unwrap_err();
    assert!(
        e.message.ends_with(
            "dispatch 'hipkernel.sdpa_fwd.dispatch' names no launch-value contract this provider reads; the handler reads the contract 'hipkernel.sdpa_fwd.dispatch.v1'"
        ),
        "{}",
        e.message
    );
}

/// Options of the one sdpa node of [`graph`].
#[derive(Clone, Default)]
struct Opts {
    causal: bool,
    causal_br: bool,
    scale: Option<f32>,
    scale_tensor: bool,
    mask: Option<(DT, Vec<i64>)>,
    stats: bool,
    max: bool,
    dropout: Option<f32>,
    padding_mask: bool,
    left: Option<i64>,
    align_br: bool,
}

/// q (UID 1) `[b, h, sq, d]`, k (2) / v (3) `[b, hk, skv, d]` (v's head dim `dv`), o (4),
/// stats (5), max (6), mask (7), scale (8, f32 `[1, 1, 1, 1]`); `bshd` stores q/k/v/o as
/// `[b, s, h, d]`.
#[allow(clippy::too_many_arguments)]
fn graph(
    dt: DT,
    b: i64,
    h: i64,
    hk: i64,
    sq: i64,
    skv: i64,
    d: i64,
    dv: i64,
    bshd: bool,
    o: Opts,
) -> OperationGraph {
    let t = |uid, name: &str, dims: [i64; 4]| {
        let spec = TensorSpec::new(uid, name, dt, &dims);
        if bshd {
            let [_, hh, s, dd] = dims;
            spec.strides(&[s * hh * dd, dd, hh * dd, 1])
        } else {
            spec
        }
    };
    let mut g = GraphBuilder::new("sdpa");
    g.tensor(t(1, "q", [b, h, sq, d]))
        .tensor(t(2, "k", [b, hk, skv, d]))
        .tensor(t(3, "v", [b, hk, skv, dv]))
        .tensor(t(4, "o", [b, h, sq, dv]));
    if o.stats {
        g.tensor(TensorSpec::new(5, "stats", DT::FLOAT, &[b, h, sq, 1]));
    }
    if o.max {
        g.tensor(TensorSpec::new(6, "max", DT::FLOAT, &[b, h, sq, 1]));
    }
    if let Some((mdt, dims)) = &o.mask {
        g.tensor(TensorSpec::new(7, "mask", *mdt, dims));
    }
    if o.scale_tensor {
        g.tensor(TensorSpec::new(8, "scale", DT::FLOAT, &[1, 1, 1, 1]));
    }
    g.node(
        "sdpa",
        Box::new(move |fbb| {
            (
                NodeAttributes::SdpaAttributes,
                SdpaAttributes::create(
                    fbb,
                    &SdpaAttributesArgs {
                        q_tensor_uid: 1,
                        k_tensor_uid: 2,
                        v_tensor_uid: 3,
                        o_tensor_uid: 4,
                        stats_tensor_uid: o.stats.then_some(5),
                        generate_stats: o.stats.then_some(true),
                        max_tensor_uid: o.max.then_some(6),
                        attn_mask_tensor_uid: o.mask.as_ref().map(|_| 7),
                        scale_tensor_uid: o.scale_tensor.then_some(8),
                        attn_scale_value: o.scale,
                        causal_mask: o.causal,
                        causal_mask_bottom_right: o.causal_br,
                        dropout_probability: o.dropout,
                        padding_mask: o.padding_mask,
                        left_bound: o.left,
                        diagonal_alignment: if o.align_br {
                            DiagonalAlignment::BOTTOM_RIGHT
                        } else {
                            DiagonalAlignment::TOP_LEFT
                        },
                        ..Default::default()
                    },
                )
                .as_union_value(),
            )
        }),
    );
    OperationGraph::from_bytes(&g.build()).unwrap()
}

#[test]
fn graphs_the_kernel_does_not_run_are_refused_with_exact_texts() {
    let f16 = |o: Opts, d: i64, dv: i64| graph(DT::HALF, 1, 2, 2, 16, 16, d, dv, false, o);
    let cases = [
        (
            f16(
                Opts {
                    dropout: Some(0.1),
                    ..Default::default()
                },
                64,
                64,
            ),
            "the sdpa_fwd pack does not run dropout (dropout_probability ≠ 0)".to_string(),
        ),
        (
            f16(
                Opts {
                    padding_mask: true,
                    ..Default::default()
                },
                64,
                64,
            ),
            "the sdpa_fwd pack does not serve padding_mask (sequence-length tensors); a BOOLEAN attn_mask [B, 1, 1, S_kv] masks padded keys".to_string(),
        ),
        (
            f16(Opts::default(), 64, 32),
            "the sdpa_fwd pack needs the value head dim equal to the query head dim; q [1, 2, 16, 64], v [1, 2, 16, 32]".to_string(),
        ),
        (
            f16(Opts::default(), 256, 256),
            "the sdpa_fwd pack serves head dims 1 to 128; q [1, 2, 16, 256]".to_string(),
        ),
        (
            f16(
                Opts {
                    mask: Some((DT::INT32, vec![1, 1, 1, 16])),
                    ..Default::default()
                },
                64,
                64,
            ),
            "the sdpa_fwd pack takes a BOOLEAN, FLOAT, HALF or BFLOAT16 attn_mask; tensor 7 is INT32".to_string(),
        ),
        (
            f16(
                Opts {
                    mask: Some((DT::BOOLEAN, vec![1, 1, 3, 16])),
                    ..Default::default()
                },
                64,
                64,
            ),
            "the sdpa_fwd pack needs an attn_mask that broadcasts to [B, H, S_q, S_kv] = [1, 2, 16, 16] with non-negative strides and offsets within 2147483647; tensor 7 has dims [1, 1, 3, 16], strides [48, 48, 16, 1]".to_string(),
        ),
        (
            graph(DT::FLOAT, 1, 2, 2, 16, 16, 64, 64, false, Opts { stats: true, ..Default::default() }),
            String::new(),
        ),
    ];
    for (i, (g, want)) in cases.iter().enumerate() {
        let r = SdpaFwdHandler.prepare(g);
        let e = r.err().unwrap();
        assert_eq!(e.status, PluginStatus::NotApplicable, "case {i}");
        if want.is_empty() {
            // A graph the pack serves: prepare (no kernel) names the packed entries.
            assert_eq!(
                e.message,
                "the sdpa_fwd pack launches packed entries only; prepare a kernel"
            );
        } else {
            assert_eq!(&e.message, want, "case {i}");
        }
    }
}

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
    load_triton_descriptors(&packed("sm_90")).unwrap()
}

fn cfg() -> EngineConfig {
    EngineConfig {
        engine_id: 0,
        knob_choices: vec![],
    }
}

fn int(p: &hipdnn_engines::ingestor::payload::IngestorPlanPayload, k: &str) -> i64 {
    match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    }
}

fn bindings(base: u64, uids: &[i64]) -> Vec<TensorBinding<'static>> {
    uids.iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: base + 0x1000_0000 * *uid as u64,
                len: 1 << 27,
            },
        })
        .collect()
}

#[test]
fn the_static_rule_picks_the_head_dim_bucket_and_spec_only_when_the_hints_hold() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let mut c = cfg();
    c.engine_id = e.id();
    let o = Opts::default;
    let causal = || Opts {
        causal: true,
        ..Default::default()
    };
    let band = || Opts {
        left: Some(40),
        ..Default::default()
    };
    // (graph, spec, block_k, block_m): banded graphs of buckets 64 and 128 take the 64-row
    // spec tile, others the 128-row one; bucket 32 has one spec tile.
    let cases = [
        (
            graph(DT::HALF, 2, 4, 4, 100, 100, 64, 64, false, o()),
            1,
            64,
            128,
        ),
        (
            graph(DT::HALF, 2, 4, 4, 100, 100, 64, 64, false, causal()),
            1,
            64,
            64,
        ),
        (
            graph(DT::BFLOAT16, 2, 4, 4, 100, 100, 64, 64, false, band()),
            1,
            64,
            64,
        ),
        (
            graph(DT::BFLOAT16, 2, 4, 2, 17, 129, 32, 32, true, o()),
            1,
            32,
            128,
        ),
        (
            graph(DT::BFLOAT16, 2, 4, 2, 17, 129, 32, 32, false, causal()),
            1,
            32,
            128,
        ),
        (
            graph(DT::HALF, 1, 2, 2, 33, 33, 40, 40, false, o()),
            0,
            64,
            64,
        ),
        (
            graph(DT::HALF, 1, 2, 2, 33, 33, 16, 16, false, o()),
            1,
            32,
            128,
        ),
        (
            graph(DT::HALF, 1, 2, 2, 33, 33, 128, 128, false, o()),
            1,
            128,
            128,
        ),
        (
            graph(DT::BFLOAT16, 1, 2, 2, 33, 33, 128, 128, false, causal()),
            1,
            128,
            64,
        ),
        (
            graph(DT::FLOAT, 1, 12, 12, 7, 7, 32, 32, false, o()),
            0,
            32,
            64,
        ),
        (
            graph(DT::FLOAT, 1, 1, 1, 7, 7, 100, 100, false, o()),
            0,
            128,
            64,
        ),
    ];
    for (i, (g, spec, bk, bm)) in cases.iter().enumerate() {
        let ctx = e.create_execution_context(&c, g).unwrap();
        let bytes = e
            .serialization()
            .unwrap()
            .serialize_execution_context(e.id(), ctx.as_ref())
            .unwrap();
        let p = decode_payload(&bytes).unwrap();
        assert_eq!(p.dispatch_symbol, SDPA_FWD_V1, "case {i}");
        assert_eq!(p.symbol, "hipdnn_sdpa_fwd", "case {i}");
        // No case has a mask tensor: a spec plan takes the group-2 twin (no mask-tensor code).
        assert_eq!(
            (
                int(&p, "spec"),
                int(&p, "block_k"),
                int(&p, "block_m"),
                int(&p, "group_m")
            ),
            (*spec, *bk, *bm, if *spec == 1 { 2 } else { 1 }),
            "case {i}"
        );
    }
    // The refusal text of the 128-row tile for a causal graph.
    let entry = |prefix: &str| {
        sm90()
            .into_iter()
            .find(|k| k.name.starts_with(prefix))
            .unwrap()
    };
    let k = entry("sdpa_fwd_f16_spec_128x64x64_g2");
    let g = graph(DT::HALF, 2, 4, 4, 100, 100, 64, 64, false, causal());
    let m = SdpaFwdHandler.prepare_kernel(&k, &g).err().unwrap().message;
    assert!(
        m.ends_with(": static rule: a banded (causal) graph skips most key blocks of a 128-row tile's later rows; a 64-row tile serves this graph"),
        "{m}"
    );
    // Groups: the mask-tensor entry is refused without a mask, its twin with one.
    let k1 = entry("sdpa_fwd_f16_spec_64x64x64_g1");
    let m = SdpaFwdHandler
        .prepare_kernel(&k1, &g)
        .err()
        .unwrap()
        .message;
    assert!(
        m.ends_with(": static rule: a graph without a mask tensor takes the group-2 twin of this tile (built without the mask-tensor code: fewer registers)"),
        "{m}"
    );
    let masked = graph(
        DT::HALF,
        2,
        4,
        4,
        100,
        100,
        64,
        64,
        false,
        Opts {
            causal: true,
            mask: Some((DT::BOOLEAN, vec![2, 1, 1, 100])),
            ..Default::default()
        },
    );
    assert!(SdpaFwdHandler.prepare_kernel(&k1, &masked).is_ok());
    let k2 = entry("sdpa_fwd_f16_spec_64x64x64_g2");
    let m = SdpaFwdHandler
        .prepare_kernel(&k2, &masked)
        .err()
        .unwrap()
        .message;
    assert!(
        m.ends_with(
            " is built without the mask-tensor code (group 2); this graph has a mask tensor"
        ),
        "{m}"
    );
}

#[test]
fn a_causal_plan_with_statistics_and_a_key_mask_launches_saves_and_restores_identically() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let mut c = cfg();
    c.engine_id = e.id();
    // MiniLM-like: f16 [2, 12, 77, 32] queries, bottom-right causal against 90 keys, a
    // boolean key mask [2, 1, 1, 90], stats and max outputs, scale 1/√32.
    let scale = 1.0 / 32f32.sqrt();
    let g = graph(
        DT::HALF,
        2,
        12,
        12,
        77,
        90,
        32,
        32,
        false,
        Opts {
            causal_br: true,
            scale: Some(scale),
            mask: Some((DT::BOOLEAN, vec![2, 1, 1, 90])),
            stats: true,
            max: true,
            ..Default::default()
        },
    );
    let ctx = e.create_execution_context(&c, &g).unwrap();
    assert_eq!(ctx.workspace_size(), 0);
    let uids = [1, 2, 3, 4, 5, 6, 7];
    let mut t = bindings(0, &uids);
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap();
    let (geom, args) = dev.launches.lock().unwrap()[0].clone();
    assert_eq!(
        geom.grid,
        [1, 24, 1],
        "cdiv(77, 128) row blocks, 2·12 heads"
    );
    assert_eq!(geom.block, [128, 1, 1]);
    let ptr = |u: u64| KernelArgValue::Pointer(0x1000_0000 * u);
    let p0 = KernelArgValue::Pointer(0);
    assert_eq!(
        &args[..9],
        &[
            ptr(1),
            ptr(2),
            ptr(3),
            ptr(4),
            p0,
            ptr(7),
            ptr(5),
            ptr(6),
            p0
        ]
    );
    let ints: Vec<i32> = args[9..args.len() - 2]
        .iter()
        .map(|a| match a {
            KernelArgValue::I32(v) => *v,
            a => panic!("{a:?}"),
        })
        .collect();
    // Spec: H, REP, SQ, SKV, D, 12 q/k/v/o strides, mask (b, h, i, j), stats (b, h, i), misc.
    assert_eq!(
        ints,
        [
            12,
            1,
            77,
            90,
            32,
            12 * 77 * 32,
            77 * 32,
            32,
            12 * 90 * 32,
            90 * 32,
            32,
            12 * 90 * 32,
            90 * 32,
            32,
            12 * 77 * 32,
            77 * 32,
            32,
            90,
            0,
            0,
            1,
            12 * 77,
            77,
            1,
            scale.to_bits() as i32,
            1,
            8 | 32 | 64,
            13,
            0,
            0,
        ]
    );
    // An unaligned o on the spec plan: BAD_PARAM, nothing launched.
    let mut t = bindings(0, &uids);
    t[3].data = BufferRef::Device {
        addr: 0x4000_0008,
        len: 1 << 27,
    };
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::BadParam);
    assert_eq!(
        err.message,
        "tensor UID 4 is at 0x40000008; this plan runs the specialized sdpa_fwd kernel, which needs 16-byte aligned q, k, v and o"
    );
    assert_eq!(dev.launches.lock().unwrap().len(), 1);
    // Save → restore on an engine without kernels → the same launch.
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let dev2 = FakeDevice::new("sm_90", 0);
    let e2 = engine(dev2.clone(), vec![]);
    let restored = e2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    let mut t = bindings(0, &uids);
    restored
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap();
    assert_eq!(dev2.launches.lock().unwrap()[0], (geom, args));
}

#[test]
fn scale_tensors_windows_and_alignments_become_launch_values() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let mut c = cfg();
    c.engine_id = e.id();
    let values = |g: &OperationGraph| {
        let ctx = e.create_execution_context(&c, g).unwrap();
        let bytes = e
            .serialization()
            .unwrap()
            .serialize_execution_context(e.id(), ctx.as_ref())
            .unwrap();
        let p = decode_payload(&bytes).unwrap();
        (
            int(&p, "flags"),
            int(&p, "scale_bits"),
            int(&p, "shift"),
            int(&p, "right"),
            int(&p, "left"),
            p.launch_values.contains_key("scale.uid"),
        )
    };
    let g = |o: Opts| graph(DT::HALF, 1, 2, 2, 40, 24, 64, 64, false, o);
    // No scale: 1.0; a device scale tensor: flag bit 0, bits 0.
    assert_eq!(
        values(&g(Opts::default())),
        (0, i64::from(1f32.to_bits() as i32), 0, 0, 0, false)
    );
    assert_eq!(
        values(&g(Opts {
            scale_tensor: true,
            ..Default::default()
        })),
        (1, 0, 0, 0, 0, true)
    );
    // Top-left causal ignores the diagonal alignment; a window with bottom-right alignment
    // keeps the shift S_kv − S_q = −16.
    assert_eq!(
        values(&g(Opts {
            causal: true,
            align_br: true,
            ..Default::default()
        })),
        (8, i64::from(1f32.to_bits() as i32), 0, 0, 0, false)
    );
    assert_eq!(
        values(&g(Opts {
            left: Some(5),
            align_br: true,
            scale: Some(0.5),
            ..Default::default()
        })),
        (16, i64::from(0.5f32.to_bits() as i32), -16, 0, 5, false)
    );
    // Huge bounds are clamped to ±2^29.
    assert_eq!(
        values(&g(Opts {
            left: Some(1 << 40),
            ..Default::default()
        }))
        .4,
        1 << 29
    );
}
