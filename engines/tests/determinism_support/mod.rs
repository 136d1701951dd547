//! Issue 37, class 10 (run-to-run non-determinism in Triton kernels at some num_warps /
//! num_stages): the graph each shipped Triton entry runs in the determinism sweep. A pool of
//! small candidate graphs (the GPU tests' matrices of the families with a support module, the
//! row matrix of `batch_rows_support`, and matmul / conv / SDPA / gather shapes for each entry
//! kind: generic, spec, B column-major, NCHW, transposed NCHW, TF32) is asked, candidate by
//! candidate, which kernels serve it (`Engine::variants` with knob `hipkernel.tf32` = 1, so
//! TF32 entries are listed too); each entry gets the first candidate it serves.
//! `triton_determinism.rs` checks on fake devices of every packed arch that no entry is left
//! without a graph; `gpu_determinism.rs` runs them.

#![allow(dead_code)]

use crate::batch_rows_support::{self as rows, In};
use crate::{
    batchnorm_support as bn, bn_bwd_support as bb, norm_bwd_support as nb, norm_support as nf,
    pointwise_support as pw, pool_bwd_support as pb, pool_support as pool, reduce_support as red,
    sdpa_bwd_support as sb,
};
use hipdnn_backend::engine::{Engine, EngineConfig};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::ops::gather::GATHER_OP_ID;
use hipdnn_engines::ingestor::KernelDescriptor;
use hipdnn_engines::ingestor::engine::{IngestorEngine, KNOB_KERNEL, KNOB_TF32, kernel_knob_value};
use hipdnn_engines::reference::ops::conv::ConvGeometry;
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, random_values};
use hipdnn_schema::graph::{
    ConvMode, ConvolutionBwdAttributes, ConvolutionBwdAttributesArgs, ConvolutionWrwAttributes,
    ConvolutionWrwAttributesArgs, DataType as DT, NodeAttributes, SdpaAttributesArgs,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One candidate graph with fixed inputs (dense row-major values per UID, the same in every
/// process) and the outputs to bind.
pub struct Candidate {
    pub label: String,
    pub build: Box<dyn Fn() -> GraphBuilder + Send + Sync>,
    pub inputs: Vec<(i64, Vec<f32>)>,
    pub outputs: Vec<i64>,
}

impl Candidate {
    /// The operation graph.
    pub fn graph(&self) -> OperationGraph {
        OperationGraph::from_bytes(&(self.build)().build()).expect("candidate graph")
    }
}

fn values(b: &GraphBuilder, ins: &[In], seed: u64) -> Vec<(i64, Vec<f32>)> {
    ins.iter()
        .map(|i| {
            let n = b.spec(i.uid).dims.iter().product::<i64>() as usize;
            let mut v = random_values(n, seed * 131 + i.uid as u64, i.lo, i.hi);
            if i.int {
                v.iter_mut().for_each(|x| *x = x.floor());
            }
            (i.uid, v)
        })
        .collect()
}

fn cand(
    label: String,
    build: impl Fn() -> GraphBuilder + Send + Sync + 'static,
    ins: Vec<In>,
    outputs: Vec<i64>,
    seed: u64,
) -> Candidate {
    let inputs = values(&build(), &ins, seed);
    Candidate {
        label,
        build: Box::new(build),
        inputs,
        outputs,
    }
}

fn spec(uid: i64, name: &str, dt: DT, dims: &[i64]) -> TensorSpec {
    TensorSpec::new(uid, name, dt, dims)
}

/// `c (1, m, n) = a (1, m, k) · b (1, k, n)`; `bcol`: b column-major.
fn matmul(dt: DT, m: i64, n: i64, k: i64, bcol: bool) -> Candidate {
    cand(
        format!(
            "matmul {dt:?} {m}x{k}·{k}x{n}{}",
            if bcol { " B col-major" } else { "" }
        ),
        move || {
            let mut b = spec(2, "b", dt, &[1, k, n]);
            if bcol {
                b = b.strides(&[k * n, 1, k]);
            }
            let mut g = GraphBuilder::new("mm");
            g.tensor(spec(1, "a", dt, &[1, m, k]))
                .tensor(b)
                .tensor(spec(3, "c", dt, &[1, m, n]));
            g.matmul("mm", 1, 2, 3);
            g
        },
        vec![rows::row(1, -1.0, 1.0), rows::shared(2, -1.0, 1.0)],
        vec![3],
        1,
    )
}

fn conv_geo() -> ConvGeometry {
    ConvGeometry {
        pre: vec![1, 1],
        post: vec![1, 1],
        stride: vec![1, 1],
        dilation: vec![1, 1],
        flip: false,
    }
}

/// conv fprop 3×3 pad 1, `x (n, c, h, w)`, `w (k, c, 3, 3)`; `nhwc`: channels-last tensors.
fn conv(dt: DT, nhwc: bool, n: i64, c: i64, k: i64, h: i64, w: i64) -> Candidate {
    grouped_conv(dt, nhwc, n, c, k, 1, h, w)
}

/// [`conv`] with `groups` (`w (k, c / groups, 3, 3)`).
#[allow(clippy::too_many_arguments)]
fn grouped_conv(
    dt: DT,
    nhwc: bool,
    n: i64,
    c: i64,
    k: i64,
    groups: i64,
    h: i64,
    w: i64,
) -> Candidate {
    let lay = move |t: TensorSpec| if nhwc { t.channels_last() } else { t };
    cand(
        format!(
            "conv fprop {dt:?} {} n {n} c {c} k {k} groups {groups} {h}x{w}",
            if nhwc { "NHWC" } else { "NCHW" }
        ),
        move || {
            let mut g = GraphBuilder::new("conv");
            g.tensor(lay(spec(1, "x", dt, &[n, c, h, w])))
                .tensor(lay(spec(2, "w", dt, &[k, c / groups, 3, 3])))
                .tensor(lay(spec(3, "y", dt, &[n, k, h, w])));
            g.conv_fprop("conv", 1, 2, 3, &conv_geo());
            g
        },
        vec![rows::row(1, -1.0, 1.0), rows::shared(2, -0.5, 0.5)],
        vec![3],
        2,
    )
}

/// conv dgrad (`wgrad` false) or wgrad 3×3 pad 1 over `(n, c, h, h)` ↔ `(n, k, h, h)`.
fn conv_bwd(wgrad: bool, dt: DT, nhwc: bool, n: i64, c: i64, k: i64, h: i64) -> Candidate {
    let lay = move |t: TensorSpec| if nhwc { t.channels_last() } else { t };
    // dy 1, x / dx 2, w / dw 3.
    let (ins, out) = if wgrad {
        (vec![rows::row(1, -1.0, 1.0), rows::row(2, -1.0, 1.0)], 3)
    } else {
        (vec![rows::row(1, -1.0, 1.0), rows::shared(3, -0.5, 0.5)], 2)
    };
    cand(
        format!(
            "conv {} {dt:?} {} n {n} c {c} k {k} {h}x{h}",
            if wgrad { "wgrad" } else { "dgrad" },
            if nhwc { "NHWC" } else { "NCHW" }
        ),
        move || {
            let mut g = GraphBuilder::new("conv_bwd");
            g.tensor(lay(spec(1, "dy", dt, &[n, k, h, h])))
                .tensor(lay(spec(2, "x", dt, &[n, c, h, h])))
                .tensor(lay(spec(3, "w", dt, &[k, c, 3, 3])));
            g.node(
                "bwd",
                Box::new(move |fbb| {
                    let one = fbb.create_vector(&[1i64, 1]);
                    if wgrad {
                        let args = ConvolutionWrwAttributesArgs {
                            x_tensor_uid: 2,
                            dy_tensor_uid: 1,
                            dw_tensor_uid: 3,
                            pre_padding: Some(one),
                            post_padding: Some(one),
                            stride: Some(one),
                            dilation: Some(one),
                            conv_mode: ConvMode::CROSS_CORRELATION,
                        };
                        let a = ConvolutionWrwAttributes::create(fbb, &args).as_union_value();
                        (NodeAttributes::ConvolutionWrwAttributes, a)
                    } else {
                        let args = ConvolutionBwdAttributesArgs {
                            dx_tensor_uid: 2,
                            dy_tensor_uid: 1,
                            w_tensor_uid: 3,
                            pre_padding: Some(one),
                            post_padding: Some(one),
                            stride: Some(one),
                            dilation: Some(one),
                            conv_mode: ConvMode::CROSS_CORRELATION,
                        };
                        let a = ConvolutionBwdAttributes::create(fbb, &args).as_union_value();
                        (NodeAttributes::ConvolutionBwdAttributes, a)
                    }
                }),
            );
            g
        },
        ins,
        vec![out],
        3,
    )
}

/// SDPA forward `(b, h, s, d)` q, k, v → o; `mask`: an additive f32 mask `(1, 1, s, s)`
/// (UID 7).
fn sdpa(dt: DT, b: i64, h: i64, s: i64, d: i64, mask: bool) -> Candidate {
    gqa(dt, b, h, h, s, s, d, mask)
}

/// SDPA with `h` query heads over `hk` key/value heads, `sq` queries over `skv` keys.
#[allow(clippy::too_many_arguments)]
fn gqa(dt: DT, b: i64, h: i64, hk: i64, sq: i64, skv: i64, d: i64, mask: bool) -> Candidate {
    let mut ins = vec![
        rows::row(1, -1.0, 1.0),
        rows::row(2, -1.0, 1.0),
        rows::row(3, -1.0, 1.0),
    ];
    if mask {
        ins.push(rows::shared(7, -1.0, 0.0));
    }
    cand(
        format!(
            "sdpa {dt:?} ({b}, {h}/{hk}, {sq}x{skv}, {d}){}",
            if mask { " mask" } else { "" }
        ),
        move || {
            let mut g = GraphBuilder::new("sdpa");
            g.tensor(spec(1, "q", dt, &[b, h, sq, d]))
                .tensor(spec(2, "k", dt, &[b, hk, skv, d]))
                .tensor(spec(3, "v", dt, &[b, hk, skv, d]))
                .tensor(spec(4, "o", dt, &[b, h, sq, d]));
            if mask {
                g.tensor(spec(7, "mask", DT::FLOAT, &[1, 1, sq, skv]));
            }
            g.sdpa(
                "sdpa",
                SdpaAttributesArgs {
                    q_tensor_uid: 1,
                    k_tensor_uid: 2,
                    v_tensor_uid: 3,
                    o_tensor_uid: 4,
                    attn_mask_tensor_uid: mask.then_some(7),
                    ..Default::default()
                },
            );
            g
        },
        ins,
        vec![4],
        4,
    )
}

/// SDPA backward `(b, h, s, d)`, causal, packed (spec where d allows) or with padded key rows
/// (generic); o and stats from the float64 forward.
fn sdpa_bwd(dt: DT, b: usize, h: usize, s: usize, d: usize, padded: bool) -> Candidate {
    let mut c = sb::Case::base((b, h, h, s, s, d, d));
    c.dt = dt;
    c.causal = true;
    c.scale = sb::Scale::Value(1.0 / (d as f32).sqrt());
    if padded {
        c.layout = sb::Layout::Padded;
    }
    let inputs = sb::bound(&sb::inputs(&c, 50 + d as u64));
    let outputs = sb::outs(&c);
    Candidate {
        label: format!("sdpa_bwd {c:?}"),
        build: Box::new(move || sb::graph(&c)),
        inputs,
        outputs,
    }
}

/// Max pooling 3×3, stride 2, padding 1 over `dims` (channels-last when `nhwc`).
fn pool_case(dt: DT, dims: &[i64], nhwc: bool) -> Candidate {
    let mut c = pool::PoolCase::new(
        pool::Mode::Max,
        dt,
        dims,
        &[3, 3],
        &[2, 2],
        &[1, 1],
        &[1, 1],
    );
    if nhwc {
        c = c.layout(pool::Layout::Nhwc);
    }
    let inputs = vec![(pool::X, c.input(6))];
    let outputs = c.outputs();
    Candidate {
        label: format!("pool_fwd {c:?}"),
        build: Box::new(move || c.graph()),
        inputs,
        outputs,
    }
}

/// Gather of `n` rows of a `(v, cols)` table (column-major when `col`).
fn gather(dt: DT, v: i64, cols: i64, n: i64, col: bool) -> Candidate {
    cand(
        format!(
            "gather {dt:?} ({v}, {cols}){} by {n}",
            if col { " col-major" } else { "" }
        ),
        move || {
            let mut t = spec(1, "table", dt, &[v, cols]);
            if col {
                t = t.strides(&[1, v]);
            }
            let mut g = GraphBuilder::new("gather");
            g.tensor(t)
                .tensor(spec(2, "ids", DT::INT32, &[n]))
                .tensor(spec(3, "y", dt, &[n, cols]));
            g.custom_op("gather", GATHER_OP_ID, &[1, 2], &[3], &[]);
            g
        },
        vec![
            rows::shared(1, -1.0, 1.0),
            In {
                int: true,
                ..rows::row(2, 0.0, v as f32)
            },
        ],
        vec![3],
        5,
    )
}

/// The candidate pool, smallest graphs of each family first.
pub fn candidates() -> Vec<Candidate> {
    let mut v = Vec::new();
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        v.push(matmul(dt, 33, 20, 17, false));
        v.push(matmul(dt, 64, 64, 64, false));
        v.push(matmul(dt, 64, 64, 64, true));
        v.push(matmul(dt, 128, 256, 64, false));
        v.push(matmul(dt, 128, 256, 64, true));
        for (nhwc, c, k) in [(true, 3, 5), (true, 16, 16), (false, 3, 5), (false, 16, 16)] {
            v.push(conv(dt, nhwc, 2, c, k, 8, 8));
        }
        v.push(conv(dt, false, 2, 16, 16, 8, 7));
        v.push(conv(dt, true, 2, 64, 64, 8, 8));
        v.push(grouped_conv(dt, true, 2, 32, 32, 32, 8, 8));
        v.push(conv(dt, false, 2, 64, 64, 16, 16));
        for wgrad in [false, true] {
            for (nhwc, c, k) in [(true, 3, 5), (true, 16, 16), (false, 3, 5), (true, 64, 64)] {
                v.push(conv_bwd(wgrad, dt, nhwc, 2, c, k, 8));
            }
        }
        for d in [32, 64, 128] {
            v.push(gqa(dt, 2, 8, 2, 1, 100, d, false));
            v.push(sdpa(dt, 1, 2, 33, d, false));
            v.push(sdpa(dt, 1, 2, 64, d, false));
            v.push(sdpa(dt, 2, 4, 128, d, false));
            v.push(sdpa(dt, 2, 4, 128, d, true));
            v.push(sdpa_bwd(dt, 1, 2, 33, d as usize, false));
            v.push(sdpa_bwd(dt, 1, 2, 33, d as usize, true));
        }
        for (cols, col) in [
            (33, false),
            (33, true),
            (64, false),
            (128, false),
            (256, false),
        ] {
            v.push(gather(dt, 50, cols, 40, col));
        }
    }
    // Large shapes last: the spec entries with tiles above 64×128 serve only graphs that give
    // at least `MIN_TILES` (128) tiles.
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        v.push(matmul(dt, 4096, 4096, 64, false));
        v.push(matmul(dt, 4096, 4096, 64, true));
        v.push(matmul(dt, 2048, 2048, 1024, false));
        v.push(matmul(dt, 2048, 2048, 1024, true));
        v.push(conv(dt, true, 4, 64, 128, 64, 64));
        v.push(conv(dt, true, 4, 128, 128, 64, 64));
        v.push(conv(dt, false, 4, 128, 128, 64, 64));
        v.push(conv(dt, false, 4, 128, 128, 64, 63));
        for wgrad in [false, true] {
            v.push(conv_bwd(wgrad, dt, true, 4, 128, 128, 64));
            v.push(conv_bwd(wgrad, dt, true, 1, 512, 512, 8));
        }
        for d in [32, 64, 128] {
            v.push(sdpa(dt, 4, 8, 512, d, false));
            v.push(sdpa(dt, 4, 8, 512, d, true));
            v.push(sdpa_bwd(dt, 4, 16, 256, d as usize, false));
        }
        v.push(pool_case(dt, &[2, 256, 16, 16], false));
        v.push(pool_case(dt, &[2, 256, 16, 16], true));
    }
    for (i, c) in nf::gpu_cases().into_iter().enumerate() {
        let mut ins = vec![
            rows::row(nf::X, -2.0, 3.0),
            rows::shared(nf::SCALE, 0.5, 1.5),
        ];
        if c.bias {
            ins.push(rows::shared(nf::BIAS, -1.0, 1.0));
        }
        let outputs = c.outputs();
        let label = format!("norm_fwd {c:?}");
        v.push(cand(label, move || c.graph(), ins, outputs, 10 + i as u64));
    }
    for (i, c) in nb::gpu_cases().into_iter().enumerate() {
        let inputs = c.input_values(20 + i as u64);
        let outputs = c.outputs();
        v.push(Candidate {
            label: format!("norm_bwd {c:?}"),
            build: Box::new(move || c.graph()),
            inputs,
            outputs,
        });
    }
    for (i, c) in pb::gpu_cases().into_iter().enumerate() {
        let inputs = c.inputs(45 + i as u64);
        v.push(Candidate {
            label: format!("pool_bwd {c:?}"),
            build: Box::new(move || c.graph()),
            inputs,
            outputs: vec![pb::DX],
        });
    }
    for (i, c) in red::gpu_cases().into_iter().enumerate() {
        let inputs = vec![(red::X, c.input(30 + i as u64))];
        v.push(Candidate {
            label: format!("reduce_fwd {c:?}"),
            build: Box::new(move || c.graph()),
            inputs,
            outputs: vec![red::Y],
        });
    }
    for (i, c) in pool::gpu_cases().into_iter().enumerate() {
        let inputs = vec![(pool::X, c.input(40 + i as u64))];
        let outputs = c.outputs();
        v.push(Candidate {
            label: format!("pool_fwd {c:?}"),
            build: Box::new(move || c.graph()),
            inputs,
            outputs,
        });
    }
    for (i, c) in bn::gpu_cases().into_iter().enumerate() {
        let inputs = c.input_values(50 + i as u64);
        let outputs = c.outputs();
        v.push(Candidate {
            label: format!("batchnorm_fwd {}", c.label()),
            build: Box::new(move || c.graph()),
            inputs,
            outputs,
        });
    }
    for (i, c) in bb::gpu_cases().into_iter().enumerate() {
        let inputs = c.input_values(60 + i as u64);
        let outputs = c.outputs();
        v.push(Candidate {
            label: format!("bn_bwd {c:?}"),
            build: Box::new(move || c.graph()),
            inputs,
            outputs,
        });
    }
    for (i, c) in pw::gpu_cases().into_iter().enumerate() {
        let inputs = c
            .inputs()
            .into_iter()
            .map(|u| {
                let (lo, hi, sel) = c.range(u);
                let mut x = random_values(c.count(u), 70 + i as u64 * 7 + u as u64, lo, hi);
                if sel {
                    x.iter_mut().for_each(|e| *e = e.round());
                }
                (u, x)
            })
            .collect();
        let outputs = c.outputs();
        v.push(Candidate {
            label: format!("pointwise {}", c.name),
            build: Box::new(move || c.graph()),
            inputs,
            outputs,
        });
    }
    // Large rows and channel planes for the widest norm, pointwise and batchnorm tiles.
    for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
        for c in [
            nf::NormCase::layernorm(dt, &[4, 4096]),
            nf::NormCase::layernorm(dt, &[64, 2048]),
        ] {
            let ins = vec![
                rows::row(nf::X, -2.0, 3.0),
                rows::shared(nf::SCALE, 0.5, 1.5),
                rows::shared(nf::BIAS, -1.0, 1.0),
            ];
            let outputs = c.outputs();
            v.push(cand(
                format!("norm_fwd {c:?}"),
                move || c.graph(),
                ins,
                outputs,
                91,
            ));
        }
        for dims in [[4, 4096], [64, 2048]] {
            let c = nb::NormBwdCase::layernorm(dt, &dims);
            let inputs = c.input_values(92);
            let outputs = c.outputs();
            v.push(Candidate {
                label: format!("norm_bwd {c:?}"),
                build: Box::new(move || c.graph()),
                inputs,
                outputs,
            });
        }
        for dims in [[16, 64, 32, 32], [64, 64, 32, 32]] {
            let c = pw::bias_relu_scale(dt, DT::FLOAT, &dims);
            let ins = vec![
                rows::row(1, -2.0, 2.0),
                rows::shared(2, -1.0, 1.0),
                rows::shared(3, 0.5, 1.5),
            ];
            let outputs = c.outputs();
            v.push(cand(
                format!("pointwise {}", c.name),
                move || c.graph(),
                ins,
                outputs,
                93,
            ));
        }
        for dims in [[256, 1024], [1024, 1024], [4096, 1024]] {
            let c = pw::PwCase::single(
                hipdnn_schema::graph::PointwiseMode::ADD,
                dt,
                &dims,
                &[&dims],
            );
            let ins = vec![rows::row(1, -2.0, 2.0), rows::row(2, -2.0, 2.0)];
            let outputs = c.outputs();
            v.push(cand(
                format!("pointwise {}", c.name),
                move || c.graph(),
                ins,
                outputs,
                96,
            ));
        }
        for dims in [
            [2, 8, 16, 16],
            [2, 8, 32, 32],
            [4, 256, 4, 4],
            [2, 2, 64, 64],
            [8, 64, 2, 2],
            [2, 4, 128, 128],
        ] {
            for form in [bn::Form::Inv, bn::Form::Train] {
                let c = bn::BnCase::new(form, dt, &dims);
                let inputs = c.input_values(94);
                let outputs = c.outputs();
                v.push(Candidate {
                    label: format!("batchnorm_fwd {}", c.label()),
                    build: Box::new(move || c.graph()),
                    inputs,
                    outputs,
                });
            }
            let c = bb::BnBwdCase::new(dt, &dims);
            let inputs = c.input_values(95);
            let outputs = c.outputs();
            v.push(Candidate {
                label: format!("bn_bwd {c:?}"),
                build: Box::new(move || c.graph()),
                inputs,
                outputs,
            });
        }
    }
    for (i, c) in rows::cases().into_iter().enumerate() {
        let inputs = rows::batch_inputs(&c, 3, 80 + i as u64);
        let outputs = c.outputs.clone();
        v.push(Candidate {
            label: format!("{} at batch 3", c.label),
            build: Box::new(move || (c.build)(3)),
            inputs,
            outputs,
        });
    }
    v
}

/// Each Triton entry of `e` (a kernel with a Triton configuration), in engine order, with the
/// index in `pool` of the first candidate it serves (`None`: no candidate does).
pub fn assign(
    e: &IngestorEngine,
    pool: &[Candidate],
) -> Vec<(Arc<KernelDescriptor>, Option<usize>)> {
    let config = EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![(KNOB_TF32, 1)],
    };
    let mut first: BTreeMap<i64, usize> = BTreeMap::new();
    for (i, c) in pool.iter().enumerate() {
        for var in e.variants(&c.graph(), &config) {
            for (t, value) in var.knob_choices {
                if t == KNOB_KERNEL {
                    first.entry(value).or_insert(i);
                }
            }
        }
    }
    e.kernels()
        .iter()
        .filter(|k| k.config.is_some())
        .map(|k| (k.clone(), first.get(&kernel_knob_value(k)).copied()))
        .collect()
}

/// The engine config that builds exactly `k` (TF32 entries need knob `hipkernel.tf32` too).
pub fn config_for(e: &IngestorEngine, k: &KernelDescriptor) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![(KNOB_TF32, 1), (KNOB_KERNEL, kernel_knob_value(k))],
    }
}
