//! Issue 37, class 5 (batched results that differ from unbatched; burn's fused MLP with an
//! `[N, 1]` output whose rows 1..N came out wrong): one case matrix of every fused path whose
//! kernels tile or fuse work across rows or batches, and the row-by-row check, shared by
//! `reference_batch_rows.rs` (the CPU reference engine), `triton_batch_rows.rs` (a fake sm_90
//! and gfx942 device: every case is served by the GPU engine at every batch, and the
//! norm_fwd/reduce_fwd launches run under Triton's interpreter) and `gpu_batch_rows.rs` (a real
//! device).
//!
//! A case is a graph at batch `n`: its batched tensors carry `n` on axis [`RowCase::axis`] (the
//! axes before it are all 1), the others (weights, bias, scale, table) are shared. The check
//! runs the graph at batch `n` once, then for every row `r` the same graph at batch 1 with row
//! `r` of each batched input, and compares row `r` of each compared output with that run.
//!
//! Families and why each is (or is not) a case: matmul with epilogues (bias + ReLU into an
//! `[N, 1]` output, bias + GELU + residual, a batched matmul with a broadcast and with a
//! batched B), conv fprop with a fused epilogue (NCHW f32, NHWC f16), conv dgrad (dx of image
//! `n` reads dy of image `n` only), layernorm / rmsnorm training (y and the per-row
//! statistics), norm backward (dx only: dscale and dbias sum over the rows), reductions over
//! an inner axis, softmax and log-softmax, SDPA (per batch and head), max / average pooling,
//! batchnorm inference (per-channel statistics are inputs), the fused pointwise chain, and the
//! gather (rows of indices). Not cases: batchnorm training, bn backward and conv wgrad, whose
//! results are sums over the batch by definition.

#![allow(dead_code)]

use crate::{
    batchnorm_support as bn, norm_bwd_support as nb, norm_support as nf, pointwise_support as pw,
    pool_support as pool, reduce_support as red,
};
use hipdnn_backend::engine::{BufferRef, ExecuteArgs, TensorBinding};
use hipdnn_backend::ops::gather::GATHER_OP_ID;
use hipdnn_engines::reference::ops::conv::ConvGeometry;
use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, pw_args, random_values, tolerance,
};
use hipdnn_schema::graph::{
    ConvMode, ConvolutionBwdAttributes, ConvolutionBwdAttributesArgs, DataType as DT,
    NodeAttributes, PointwiseMode as PM, ReductionMode as RM, SdpaAttributesArgs,
};

/// One input of a case: its UID, whether it is batched, and its value range `[lo, hi)`
/// (`int`: whole numbers in that range, for index tensors).
#[derive(Debug, Clone, Copy)]
pub struct In {
    pub uid: i64,
    pub batched: bool,
    pub lo: f32,
    pub hi: f32,
    pub int: bool,
}

/// A batched input in `[lo, hi)`.
pub fn row(uid: i64, lo: f32, hi: f32) -> In {
    In {
        uid,
        batched: true,
        lo,
        hi,
        int: false,
    }
}

/// A shared input in `[lo, hi)`.
pub fn shared(uid: i64, lo: f32, hi: f32) -> In {
    In {
        batched: false,
        ..row(uid, lo, hi)
    }
}

/// A graph family at any batch.
pub struct RowCase {
    /// What the case runs (family, form, type, shape at batch n).
    pub label: String,
    /// The family the GPU engine should serve it with (the contract's dispatch symbol).
    pub dispatch: &'static str,
    /// The graph at batch `n`.
    pub build: Box<dyn Fn(i64) -> GraphBuilder + Send + Sync>,
    /// The batched axis (every axis before it has extent 1).
    pub axis: usize,
    /// The inputs to bind.
    pub inputs: Vec<In>,
    /// Every output to bind.
    pub outputs: Vec<i64>,
    /// The outputs compared row by row (all batched).
    pub compared: Vec<i64>,
}

/// One executor's run of a graph: the dense row-major outputs (in [`RowCase::outputs`] order)
/// and a name of the kernel that ran (equal names: the same code, so rows must be bitwise
/// equal).
pub struct Run {
    pub outputs: Vec<Vec<f32>>,
    pub kernel: String,
}

/// What one case at one batch gave.
#[derive(Debug)]
pub struct RowReport {
    /// Rows compared bitwise (same kernel at batch n and batch 1).
    pub bitwise_rows: usize,
    /// Rows compared within tolerance (another kernel at batch 1), with the kernels.
    pub tolerance_rows: Vec<(usize, String, String)>,
    /// Largest |d|/(1+|r|) over the tolerance rows.
    pub worst: f32,
    /// The kernel at batch n.
    pub kernel: String,
}

/// Executes `builder` with `inputs` (dense values per UID) binding `outputs`; `force`: run
/// this kernel (an earlier [`Run::kernel`]) if it serves the graph, else the executor's own
/// choice.
pub type Exec<'a> =
    dyn FnMut(GraphBuilder, &[(i64, Vec<f32>)], &[i64], Option<&str>) -> Result<Run, String> + 'a;

fn count(b: &GraphBuilder, uid: i64) -> usize {
    b.spec(uid).dims.iter().product::<i64>() as usize
}

/// The inputs of `case` at batch `n` (seeded by `seed`).
pub fn batch_inputs(case: &RowCase, n: i64, seed: u64) -> Vec<(i64, Vec<f32>)> {
    let b = (case.build)(n);
    case.inputs
        .iter()
        .map(|i| {
            let mut v = random_values(count(&b, i.uid), seed * 97 + i.uid as u64, i.lo, i.hi);
            if i.int {
                v.iter_mut().for_each(|x| *x = x.floor());
            }
            (i.uid, v)
        })
        .collect()
}

/// Row `r` of `v`, a dense tensor with `n` rows.
fn slice(v: &[f32], n: i64, r: usize) -> &[f32] {
    let per = v.len() / n as usize;
    &v[r * per..(r + 1) * per]
}

/// The tolerance of an output of type `dt` when batch 1 ran another kernel than batch n: f32
/// 1e-4·(1 + |r|) (another tile may sum in another order), 16-bit types one rounding of the
/// type ([`tolerance`]).
pub fn other_kernel_tolerance(dt: DT) -> f32 {
    if dt == DT::FLOAT {
        1e-4
    } else {
        tolerance(dt, true)
    }
}

/// Runs `case` at batch `n` and each of its rows at batch 1 with `exec`, comparing row by row:
/// bitwise when batch 1 ran the same kernel, else within [`other_kernel_tolerance`]. Every
/// compared value must be finite (outputs start as NaN on the device executors, so an
/// unwritten element fails). `Err` names the case, batch, row, output and element.
pub fn check_rows(
    case: &RowCase,
    n: i64,
    seed: u64,
    exec: &mut Exec<'_>,
) -> Result<RowReport, String> {
    let label = format!("{} at batch {n}", case.label);
    let ins = batch_inputs(case, n, seed);
    let full =
        exec((case.build)(n), &ins, &case.outputs, None).map_err(|e| format!("{label}: {e}"))?;
    let one = (case.build)(1);
    let mut rep = RowReport {
        bitwise_rows: 0,
        tolerance_rows: Vec::new(),
        worst: 0.0,
        kernel: full.kernel.clone(),
    };
    for r in 0..n as usize {
        let row_ins: Vec<(i64, Vec<f32>)> = case
            .inputs
            .iter()
            .zip(&ins)
            .map(|(i, (u, v))| {
                let v = if i.batched {
                    slice(v, n, r).to_vec()
                } else {
                    v.clone()
                };
                (*u, v)
            })
            .collect();
        let single = exec((case.build)(1), &row_ins, &case.outputs, Some(&full.kernel))
            .map_err(|e| format!("{label}, row {r} alone: {e}"))?;
        let same = single.kernel == full.kernel;
        for &u in &case.compared {
            let k = case
                .outputs
                .iter()
                .position(|o| *o == u)
                .expect("compared output bound");
            let want = slice(&full.outputs[k], n, r);
            let got = &single.outputs[k];
            if want.len() != got.len() {
                return Err(format!(
                    "{label}: output uid {u} row {r}: {} values at batch {n}, {} at batch 1",
                    want.len(),
                    got.len()
                ));
            }
            let tol = other_kernel_tolerance(one.spec(u).data_type);
            for (e, (a, b)) in want.iter().zip(got).enumerate() {
                if !a.is_finite() || !b.is_finite() {
                    return Err(format!(
                        "{label}: output uid {u} row {r} element {e}: batch {n} gave {a}, batch 1 gave {b}"
                    ));
                }
                if same {
                    if a.to_bits() != b.to_bits() {
                        return Err(format!(
                            "{label}: output uid {u} row {r} element {e}: batch {n} gave {a:e}, batch 1 gave {b:e} (same kernel {}: must be bitwise equal)",
                            full.kernel
                        ));
                    }
                } else {
                    let d = (a - b).abs() / (1.0 + b.abs());
                    if d > tol {
                        return Err(format!(
                            "{label}: output uid {u} row {r} element {e}: batch {n} gave {a:e} ({}), batch 1 gave {b:e} ({}); |d|/(1+|r|) {d:e} > {tol:e}",
                            full.kernel, single.kernel
                        ));
                    }
                    rep.worst = rep.worst.max(d);
                }
            }
        }
        if same {
            rep.bitwise_rows += 1;
        } else {
            rep.tolerance_rows
                .push((r, full.kernel.clone(), single.kernel.clone()));
        }
    }
    Ok(rep)
}

fn spec(uid: i64, name: &str, dt: DT, dims: &[i64]) -> TensorSpec {
    TensorSpec::new(uid, name, dt, dims)
}

/// `y = act(a·b + bias) [+ residual]` over `a (1, n, k)`, `b (1, k, cols)` shared, bias
/// `(1, 1, cols)`, residual `(1, n, cols)` (UIDs a 1, b 2, bias 3, residual 4, y 9).
fn mlp(dt: DT, k: i64, cols: i64, act: Option<PM>, residual: bool) -> RowCase {
    let build = move |n: i64| {
        let mut g = GraphBuilder::new("mlp");
        g.tensor(spec(1, "a", dt, &[1, n, k]))
            .tensor(spec(2, "b", dt, &[1, k, cols]))
            .tensor(spec(3, "bias", dt, &[1, 1, cols]))
            .tensor(spec(20, "mm", DT::FLOAT, &[1, n, cols]).virtual_())
            .tensor(spec(9, "y", dt, &[1, n, cols]));
        g.matmul("mm", 1, 2, 20);
        let mut steps: Vec<(PM, Option<i64>)> = vec![(PM::ADD, Some(3))];
        if let Some(m) = act {
            steps.push((m, None));
        }
        if residual {
            g.tensor(spec(4, "res", dt, &[1, n, cols]));
            steps.push((PM::ADD, Some(4)));
        }
        let mut last = 20;
        for (i, (mode, other)) in steps.iter().enumerate() {
            let out = if i + 1 == steps.len() {
                9
            } else {
                21 + i as i64
            };
            if out != 9 {
                g.tensor(spec(out, "t", DT::FLOAT, &[1, n, cols]).virtual_());
            }
            let ins = match other {
                Some(o) => vec![last, *o],
                None => vec![last],
            };
            g.pointwise("pw", pw_args(*mode, &ins, out));
            last = out;
        }
        g
    };
    let mut inputs = vec![
        row(1, -1.0, 1.0),
        shared(2, -1.0, 1.0),
        shared(3, -1.0, 1.0),
    ];
    if residual {
        inputs.push(row(4, -1.0, 1.0));
    }
    RowCase {
        label: format!(
            "matmul {dt:?} k {k} -> (n, {cols}) + bias{}{}",
            act.map(|m| format!(" {m:?}")).unwrap_or_default(),
            if residual { " + residual" } else { "" }
        ),
        dispatch: "hipkernel.matmul.dispatch.v2",
        build: Box::new(build),
        axis: 1,
        inputs,
        outputs: vec![9],
        compared: vec![9],
    }
}

/// A batched matmul `(n, m, k)·(n or 1, k, cols)`.
fn batched_matmul(dt: DT, m: i64, k: i64, cols: i64, b_batched: bool) -> RowCase {
    RowCase {
        label: format!(
            "batched matmul {dt:?} (n, {m}, {k})·({}, {k}, {cols})",
            if b_batched { "n" } else { "1" }
        ),
        dispatch: "hipkernel.matmul.dispatch.v2",
        build: Box::new(move |n| {
            let mut g = GraphBuilder::new("bmm");
            g.tensor(spec(1, "a", dt, &[n, m, k]))
                .tensor(spec(2, "b", dt, &[if b_batched { n } else { 1 }, k, cols]))
                .tensor(spec(9, "c", dt, &[n, m, cols]));
            g.matmul("mm", 1, 2, 9);
            g
        }),
        axis: 0,
        inputs: vec![
            row(1, -1.0, 1.0),
            In {
                batched: b_batched,
                ..row(2, -1.0, 1.0)
            },
        ],
        outputs: vec![9],
        compared: vec![9],
    }
}

/// conv fprop 3×3 pad 1 `x (n, c, h, h)` with `w (k, c, 3, 3)`, + bias `(1, k, 1, 1)`, then
/// `act` (UIDs x 1, w 2, bias 3, y 9).
fn conv(dt: DT, nhwc: bool, c: i64, k: i64, h: i64, act: PM) -> RowCase {
    let lay = move |t: TensorSpec| if nhwc { t.channels_last() } else { t };
    RowCase {
        label: format!(
            "conv fprop {dt:?} {} c {c} k {k} {h}x{h} + bias {act:?}",
            if nhwc { "NHWC" } else { "NCHW" }
        ),
        dispatch: "hipkernel.conv_fprop.dispatch.v2",
        build: Box::new(move |n| {
            let mut g = GraphBuilder::new("conv");
            g.tensor(lay(spec(1, "x", dt, &[n, c, h, h])))
                .tensor(lay(spec(2, "w", dt, &[k, c, 3, 3])))
                .tensor(lay(spec(3, "bias", dt, &[1, k, 1, 1])))
                .tensor(lay(spec(20, "conv", DT::FLOAT, &[n, k, h, h])).virtual_())
                .tensor(lay(spec(21, "biased", DT::FLOAT, &[n, k, h, h])).virtual_())
                .tensor(lay(spec(9, "y", dt, &[n, k, h, h])));
            g.conv_fprop(
                "conv",
                1,
                2,
                20,
                &ConvGeometry {
                    pre: vec![1, 1],
                    post: vec![1, 1],
                    stride: vec![1, 1],
                    dilation: vec![1, 1],
                    flip: false,
                },
            );
            g.pointwise("bias", pw_args(PM::ADD, &[20, 3], 21));
            g.pointwise("act", pw_args(act, &[21], 9));
            g
        }),
        axis: 0,
        inputs: vec![
            row(1, -1.0, 1.0),
            shared(2, -0.5, 0.5),
            shared(3, -1.0, 1.0),
        ],
        outputs: vec![9],
        compared: vec![9],
    }
}

/// conv dgrad 3×3 pad 1: `dy (n, k, h, h)`, `w (k, c, 3, 3)` → `dx (n, c, h, h)` (UIDs dy 1,
/// dx 2, w 3).
fn dgrad(dt: DT, c: i64, k: i64, h: i64) -> RowCase {
    RowCase {
        label: format!("conv dgrad {dt:?} c {c} k {k} {h}x{h}"),
        dispatch: "hipkernel.conv_dgrad.dispatch.v1",
        build: Box::new(move |n| {
            let mut g = GraphBuilder::new("dgrad");
            g.tensor(spec(1, "dy", dt, &[n, k, h, h]))
                .tensor(spec(2, "dx", dt, &[n, c, h, h]))
                .tensor(spec(3, "w", dt, &[k, c, 3, 3]));
            g.node(
                "dgrad",
                Box::new(|fbb| {
                    let one = fbb.create_vector(&[1i64, 1]);
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
                }),
            );
            g
        }),
        axis: 0,
        inputs: vec![row(1, -1.0, 1.0), shared(3, -0.5, 0.5)],
        outputs: vec![2],
        compared: vec![2],
    }
}

/// Layernorm / rmsnorm training over `(n, cols)`: y and the per-row statistics.
pub fn norm(rms: bool, dt: DT, cols: i64) -> RowCase {
    let make = move |n: i64| {
        let c = if rms {
            nf::NormCase::rmsnorm(dt, &[n, cols])
        } else {
            nf::NormCase::layernorm(dt, &[n, cols])
        };
        c.training()
    };
    let c = make(1);
    let mut inputs = vec![row(nf::X, -2.0, 3.0), shared(nf::SCALE, 0.5, 1.5)];
    if c.bias {
        inputs.push(shared(nf::BIAS, -1.0, 1.0));
    }
    RowCase {
        label: format!(
            "{} training {dt:?} (n, {cols})",
            if rms { "rmsnorm" } else { "layernorm" }
        ),
        dispatch: "hipkernel.norm_fwd.dispatch.v1",
        build: Box::new(move |n| make(n).graph()),
        axis: 0,
        inputs,
        outputs: c.outputs(),
        compared: c.outputs(),
    }
}

/// Layernorm backward over `(n, cols)` with the saved statistics: dx compared (dscale and
/// dbias sum over the rows).
fn norm_bwd(dt: DT, cols: i64) -> RowCase {
    let make = move |n: i64| nb::NormBwdCase::layernorm(dt, &[n, cols]);
    let c = make(1);
    RowCase {
        label: format!("layernorm backward {dt:?} (n, {cols})"),
        dispatch: "hipkernel.norm_bwd.dispatch.v1",
        build: Box::new(move |n| make(n).graph()),
        axis: 0,
        inputs: vec![
            row(nb::DY, -1.0, 1.0),
            row(nb::X, -2.0, 3.0),
            shared(nb::SCALE, 0.5, 1.5),
            row(nb::MEAN, -0.5, 0.5),
            row(nb::INV, 0.5, 2.0),
        ],
        outputs: c.outputs(),
        compared: vec![nb::DX],
    }
}

/// A reduction or softmax over the last axis of `(n, cols)`.
pub fn reduce(kind: red::Kind, dt: DT, cols: i64) -> RowCase {
    let make = move |n: i64| match kind {
        red::Kind::Reduce(m) => red::ReduceCase::reduce(m, dt, &[n, cols], &[1]),
        red::Kind::Softmax => red::ReduceCase::softmax(false, dt, &[n, cols], &[1]),
        red::Kind::LogSoftmax => red::ReduceCase::softmax(true, dt, &[n, cols], &[1]),
    };
    RowCase {
        label: format!("{kind:?} {dt:?} over the last axis of (n, {cols})"),
        dispatch: "hipkernel.reduce_fwd.dispatch.v1",
        build: Box::new(move |n| make(n).graph()),
        axis: 0,
        inputs: vec![row(red::X, -2.0, 3.0)],
        outputs: vec![red::Y],
        compared: vec![red::Y],
    }
}

/// SDPA forward `q (n, h, s, d)`, k and v alike, o; `causal`.
fn sdpa(dt: DT, h: i64, s: i64, d: i64, causal: bool) -> RowCase {
    RowCase {
        label: format!(
            "sdpa {dt:?} (n, {h}, {s}, {d}){}",
            if causal { " causal" } else { "" }
        ),
        dispatch: "hipkernel.sdpa_fwd.dispatch.v1",
        build: Box::new(move |n| {
            let mut g = GraphBuilder::new("sdpa");
            g.tensor(spec(1, "q", dt, &[n, h, s, d]))
                .tensor(spec(2, "k", dt, &[n, h, s, d]))
                .tensor(spec(3, "v", dt, &[n, h, s, d]))
                .tensor(spec(4, "o", dt, &[n, h, s, d]));
            g.sdpa(
                "sdpa",
                SdpaAttributesArgs {
                    q_tensor_uid: 1,
                    k_tensor_uid: 2,
                    v_tensor_uid: 3,
                    o_tensor_uid: 4,
                    causal_mask: causal,
                    ..Default::default()
                },
            );
            g
        }),
        axis: 0,
        inputs: vec![row(1, -1.0, 1.0), row(2, -1.0, 1.0), row(3, -1.0, 1.0)],
        outputs: vec![4],
        compared: vec![4],
    }
}

/// Pooling `(n, c, h, h)` with a 3×3 window, stride 2, padding 1.
fn pooling(mode: pool::Mode, dt: DT, nhwc: bool, c: i64, h: i64) -> RowCase {
    let make = move |n: i64| {
        let p = pool::PoolCase::new(mode, dt, &[n, c, h, h], &[3, 3], &[2, 2], &[1, 1], &[1, 1]);
        if nhwc {
            p.layout(pool::Layout::Nhwc)
        } else {
            p
        }
    };
    RowCase {
        label: format!(
            "pool {mode:?} {dt:?} {} (n, {c}, {h}, {h}) 3x3/2 pad 1",
            if nhwc { "NHWC" } else { "NCHW" }
        ),
        dispatch: "hipkernel.resample_fwd.dispatch.v1",
        build: Box::new(move |n| make(n).graph()),
        axis: 0,
        inputs: vec![row(pool::X, -3.0, 3.0)],
        outputs: vec![pool::Y],
        compared: vec![pool::Y],
    }
}

/// Batchnorm inference `(n, c, h, h)` (per-channel statistics are inputs).
fn batchnorm(dt: DT, nhwc: bool, c: i64, h: i64) -> RowCase {
    let make = move |n: i64| {
        let b = bn::BnCase::new(bn::Form::Inv, dt, &[n, c, h, h]);
        if nhwc { b.nhwc() } else { b }
    };
    RowCase {
        label: format!(
            "batchnorm inference {dt:?} {} (n, {c}, {h}, {h})",
            if nhwc { "NHWC" } else { "NCHW" }
        ),
        dispatch: "hipkernel.batchnorm_fwd.dispatch.v1",
        build: Box::new(move |n| make(n).graph()),
        axis: 0,
        inputs: vec![
            row(bn::X, -2.0, 3.0),
            shared(bn::SCALE, 0.5, 1.5),
            shared(bn::BIAS, -1.0, 1.0),
            shared(bn::MEAN, -0.5, 0.5),
            shared(bn::VAR, 0.5, 2.0),
        ],
        outputs: vec![bn::Y],
        compared: vec![bn::Y],
    }
}

/// The fused pointwise chain `relu(x + b) * s` over `(n, c, h, w)`.
fn pointwise(dt: DT, c: i64, h: i64, w: i64) -> RowCase {
    RowCase {
        label: format!("pointwise relu(x + bias) * scale {dt:?} (n, {c}, {h}, {w})"),
        dispatch: "hipkernel.pointwise.dispatch.v3",
        build: Box::new(move |n| pw::bias_relu_scale(dt, DT::FLOAT, &[n, c, h, w]).graph()),
        axis: 0,
        inputs: vec![row(1, -2.0, 2.0), shared(2, -1.0, 1.0), shared(3, 0.5, 1.5)],
        outputs: vec![pw::Y],
        compared: vec![pw::Y],
    }
}

/// Gather of `n` rows of a `(v, cols)` table by INT32 indices.
fn gather(dt: DT, v: i64, cols: i64) -> RowCase {
    RowCase {
        label: format!("gather {dt:?} table ({v}, {cols}) by n INT32 indices"),
        dispatch: "hipkernel.gather.dispatch.v1",
        build: Box::new(move |n| {
            let mut g = GraphBuilder::new("gather");
            g.tensor(spec(1, "table", dt, &[v, cols]))
                .tensor(spec(2, "ids", DT::INT32, &[n]))
                .tensor(spec(3, "y", dt, &[n, cols]));
            g.custom_op("gather", GATHER_OP_ID, &[1, 2], &[3], &[]);
            g
        }),
        axis: 0,
        inputs: vec![
            shared(1, -1.0, 1.0),
            In {
                int: true,
                ..row(2, 0.0, v as f32)
            },
        ],
        outputs: vec![3],
        compared: vec![3],
    }
}

/// The full matrix (the GPU test's): every family above, f32 and a 16-bit type, odd sizes.
pub fn cases() -> Vec<RowCase> {
    vec![
        // burn's shape: a fused MLP head with one output column.
        mlp(DT::FLOAT, 32, 1, Some(PM::RELU_FWD), false),
        mlp(DT::HALF, 64, 1, Some(PM::SIGMOID_FWD), false),
        mlp(DT::FLOAT, 48, 33, Some(PM::GELU_FWD), true),
        mlp(DT::BFLOAT16, 64, 64, Some(PM::RELU_FWD), true),
        batched_matmul(DT::FLOAT, 7, 33, 5, false),
        batched_matmul(DT::HALF, 16, 64, 32, true),
        conv(DT::FLOAT, false, 3, 5, 7, PM::RELU_FWD),
        conv(DT::HALF, true, 16, 16, 6, PM::SIGMOID_FWD),
        dgrad(DT::FLOAT, 5, 3, 7),
        dgrad(DT::HALF, 16, 16, 6),
        norm(false, DT::FLOAT, 1000),
        norm(true, DT::HALF, 384),
        norm(false, DT::BFLOAT16, 7),
        norm_bwd(DT::FLOAT, 384),
        norm_bwd(DT::HALF, 100),
        reduce(red::Kind::Reduce(RM::ADD), DT::FLOAT, 1000),
        reduce(red::Kind::Reduce(RM::MAX_OP), DT::HALF, 37),
        reduce(red::Kind::Softmax, DT::FLOAT, 1000),
        reduce(red::Kind::LogSoftmax, DT::HALF, 128),
        sdpa(DT::HALF, 2, 33, 64, false),
        sdpa(DT::BFLOAT16, 3, 17, 64, true),
        sdpa(DT::FLOAT, 2, 16, 32, false),
        pooling(pool::Mode::Max, DT::FLOAT, false, 3, 9),
        pooling(pool::Mode::AvgExclude, DT::HALF, true, 16, 8),
        batchnorm(DT::FLOAT, false, 5, 7),
        batchnorm(DT::HALF, true, 16, 5),
        pointwise(DT::FLOAT, 3, 5, 7),
        pointwise(DT::HALF, 16, 4, 4),
        gather(DT::FLOAT, 50, 33),
        gather(DT::HALF, 100, 64),
    ]
}

/// The batches the GPU test runs (odd ones, and a size past one tile of 16 rows).
pub const GPU_BATCHES: [i64; 4] = [2, 3, 5, 17];

/// A small matrix for the CPU-side tests: one case per family, batches 3 and 5.
pub fn small_cases() -> Vec<RowCase> {
    vec![
        mlp(DT::FLOAT, 32, 1, Some(PM::RELU_FWD), false),
        mlp(DT::HALF, 16, 9, Some(PM::GELU_FWD), true),
        batched_matmul(DT::FLOAT, 7, 9, 5, false),
        conv(DT::FLOAT, false, 3, 5, 5, PM::RELU_FWD),
        dgrad(DT::FLOAT, 5, 3, 5),
        norm(false, DT::FLOAT, 37),
        norm(true, DT::HALF, 64),
        norm_bwd(DT::FLOAT, 37),
        reduce(red::Kind::Reduce(RM::ADD), DT::FLOAT, 37),
        reduce(red::Kind::Softmax, DT::FLOAT, 100),
        sdpa(DT::HALF, 2, 9, 32, true),
        pooling(pool::Mode::Max, DT::FLOAT, false, 3, 7),
        batchnorm(DT::FLOAT, false, 5, 5),
        pointwise(DT::FLOAT, 3, 5, 7),
        gather(DT::FLOAT, 20, 9),
    ]
}

/// The batches of the CPU-side tests.
pub const SMALL_BATCHES: [i64; 2] = [3, 5];

/// A plan of the GPU (ingestor) engine `e` for `graph`: with `force` (a kernel name) the plan
/// of that kernel when it serves the graph (knob `hipkernel.kernel`), else — and without
/// `force` — the static rule's. Returns the context, the kernel's name and the plan's dispatch
/// symbol (from the saved payload).
pub fn ingestor_plan(
    e: &hipdnn_engines::ingestor::engine::IngestorEngine,
    graph: &hipdnn_backend::graph::OperationGraph,
    force: Option<&str>,
) -> Result<
    (
        Box<dyn hipdnn_backend::engine::ExecutionContext>,
        String,
        String,
    ),
    String,
> {
    use hipdnn_backend::engine::{Engine, EngineConfig};
    use hipdnn_engines::ingestor::engine::{KNOB_KERNEL, kernel_knob_value};
    let config = |knobs| EngineConfig {
        engine_id: e.id(),
        knob_choices: knobs,
    };
    let forced = force
        .and_then(|name| e.kernels().iter().find(|k| k.name == name))
        .and_then(|k| {
            e.create_execution_context(&config(vec![(KNOB_KERNEL, kernel_knob_value(k))]), graph)
                .ok()
        });
    let ctx = match forced {
        Some(c) => c,
        None => e
            .create_execution_context(&config(vec![]), graph)
            .map_err(|err| format!("build: {}", err.message))?,
    };
    let saved = e
        .serialization()
        .expect("the GPU engine saves plans")
        .serialize_execution_context(e.id(), ctx.as_ref())
        .map_err(|err| format!("save: {}", err.message))?;
    let p = hipdnn_engines::ingestor::payload::decode_payload(&saved)
        .map_err(|err| format!("decode: {}", err.message))?;
    let name = e
        .kernels()
        .iter()
        .find(|k| *k.id.as_bytes() == p.kernel_descriptor_id)
        .map(|k| k.name.clone())
        .unwrap_or_else(|| format!("{:?}", p.kernel_descriptor_id));
    Ok((ctx, name, p.dispatch_symbol))
}

/// Builds `b` on the GPU engine (forcing `force` where it serves), runs it once on device 0
/// and returns the outputs (dense row-major f32) and the kernel's name.
pub fn gpu_run(
    g: &hipdnn_engines::gpu::GpuEngines,
    b: GraphBuilder,
    ins: &[(i64, Vec<f32>)],
    outs: &[i64],
    force: Option<&str>,
) -> Result<Run, String> {
    let specs = bound_specs(&b, ins, outs);
    let og =
        hipdnn_backend::graph::OperationGraph::from_bytes(&b.build()).map_err(|e| e.message)?;
    let (ctx, kernel, _) = ingestor_plan(&g.engines[0], &og, force)?;
    let outputs = gpu_execute(g, ctx.as_ref(), &specs, ins, outs)?;
    Ok(Run { outputs, kernel })
}

/// The specs of the tensors `ins` and `outs` bind in `b`.
pub fn bound_specs(b: &GraphBuilder, ins: &[(i64, Vec<f32>)], outs: &[i64]) -> Vec<TensorSpec> {
    ins.iter()
        .map(|(u, _)| *u)
        .chain(outs.iter().copied())
        .map(|u| b.spec(u).clone())
        .collect()
}

/// Executes plan `ctx` once on device 0 of `g` with `ins` (dense values per UID) and outputs
/// `outs` that start as all-ones bytes, the tensors described by `specs` ([`bound_specs`]);
/// returns the outputs (dense row-major f32).
pub fn gpu_execute(
    g: &hipdnn_engines::gpu::GpuEngines,
    ctx: &dyn hipdnn_backend::engine::ExecutionContext,
    specs: &[TensorSpec],
    ins: &[(i64, Vec<f32>)],
    outs: &[i64],
) -> Result<Vec<Vec<f32>>, String> {
    let spec = |u: i64| specs.iter().find(|s| s.uid == u).unwrap();
    let upload = |bytes: &[u8]| g.device.htod(bytes).map_err(|e| e.to_string());
    let mut bufs: Vec<(i64, hipdnn_hip::DeviceBuffer<u8>)> = Vec::new();
    for (u, v) in ins {
        bufs.push((*u, upload(&spec(*u).encode(v))?));
    }
    for u in outs {
        bufs.push((*u, upload(&vec![0xFF; spec(*u).bytes_len()])?));
    }
    let ws_len = ctx.workspace_size();
    let ws = if ws_len > 0 {
        Some(upload(&vec![0; ws_len])?)
    } else {
        None
    };
    let mut t: Vec<TensorBinding<'_>> = bufs
        .iter()
        .map(|(u, d)| TensorBinding {
            uid: *u,
            data: BufferRef::Device {
                addr: d.device_ptr(),
                len: d.len(),
            },
        })
        .collect();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: ws.as_ref().map(|w| BufferRef::Device {
            addr: w.device_ptr(),
            len: w.len(),
        }),
        tensors: &mut t,
    })
    .map_err(|e| format!("execute: {}", e.message))?;
    hipdnn_hip::Stream::default_stream(&g.device)
        .synchronize()
        .map_err(|e| e.to_string())?;
    let mut outputs = Vec::new();
    for u in outs {
        let d = &bufs.iter().find(|(x, _)| x == u).unwrap().1;
        outputs.push(spec(*u).decode(&d.to_vec().map_err(|e| e.to_string())?));
    }
    Ok(outputs)
}
