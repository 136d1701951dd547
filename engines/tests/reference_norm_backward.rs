//! CPU reference engine: batchnorm, layernorm and rmsnorm backward (issue 31).
//!
//! Every gradient (dx, dscale, dbias) against a float64 reference written here in plain loops
//! from the same (dtype-rounded) inputs, for f32, f16 and bf16, over odd sizes, batch 1, a
//! channels-last and a sliced (non-packed) layout; 1 vs N threads bit-identical; a saved and
//! reloaded plan bit-identical; dx, dscale and dbias against central finite differences of
//! the engine's own forward node; refusals named.
//!
//! Tolerances (`testing::tolerance(dt, true)`, `|got − want| ≤ tol · (1 + |want|)`): f32 1e-4,
//! f16 1e-2, bf16 2e-2 — the engine sums in f64 and rounds once, so the f32 error is an
//! output rounding; the f16/bf16 error is the output's rounding to its type. Finite
//! differences: step 1e-2 on an f32 forward, tolerance 2e-4 (observed at most 2e-5: the f32
//! rounding of the forward divided by the step plus the O(h²) truncation).

use hipdnn_backend::{
    BufferRef, Engine, EngineConfig, ExecuteArgs, ExecutionContext, OperationGraph, PluginStatus,
    TensorBinding,
};
use hipdnn_engines::reference::ReferenceEngine;
use hipdnn_engines::reference::testing::{
    GraphBuilder, NodeWriter, TensorSpec, assert_close, channels_last_strides, packed_strides,
    random_values, run_graph, tolerance,
};
use hipdnn_schema::graph::{
    BatchnormAttributes, BatchnormAttributesArgs, BatchnormBackwardAttributes,
    BatchnormBackwardAttributesArgs, DataType as DT, LayernormAttributes, LayernormAttributesArgs,
    LayernormBackwardAttributes, LayernormBackwardAttributesArgs, NodeAttributes,
    RMSNormAttributes, RMSNormAttributesArgs, RMSNormBackwardAttributes,
    RMSNormBackwardAttributesArgs,
};
use hipdnn_schema::tensor_value::TensorValue;

const DY: i64 = 1;
const X: i64 = 2;
const SCALE: i64 = 3;
const MEAN: i64 = 4;
const INV: i64 = 5;
const EPS: i64 = 6;
const DX: i64 = 7;
const DSCALE: i64 = 8;
const DBIAS: i64 = 9;
const BIAS: i64 = 10;
const Y: i64 = 11;
const EPSV: f64 = 1e-5;

/// Which backward, with its attributes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Batchnorm backward with the saved mean / inv_variance.
    Bn,
    /// Layernorm backward with the saved statistics, `normalized_dim_count`.
    Ln(i64),
    /// Layernorm backward with no saved statistics (recomputed with epsilon).
    LnEps(i64),
    /// RMSNorm backward with the saved inv_rms; dbias requested or not.
    Rms(bool),
}

/// x / dy / dx layout of a case.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layout {
    Packed,
    /// Channels-last strides (NHWC-style).
    ChannelsLast,
    /// The strides of a tensor 3 wider in the last dim (a slice of it: gaps between rows).
    Sliced,
}

#[derive(Debug, Clone)]
struct Case {
    kind: Kind,
    x: Vec<usize>,
    scale: Vec<usize>,
    layout: Layout,
    /// Declared dims of the saved statistics (default: the statistics dims).
    stats: Option<Vec<usize>>,
}

fn case(kind: Kind, x: &[usize], scale: &[usize], layout: Layout) -> Case {
    Case {
        kind,
        x: x.to_vec(),
        scale: scale.to_vec(),
        layout,
        stats: None,
    }
}

/// The statistics dims, written here from the rules (batchnorm: all but dim 1; layernorm: the
/// last `ndc` dims, or with 0 from the first non-1 scale dim after dim 0; rmsnorm: the scale
/// rule).
fn stat_dims(kind: Kind, x: &[usize], scale: &[usize]) -> Vec<usize> {
    let r = x.len();
    let from_scale = || {
        let off = r - scale.len();
        let first = (1..r)
            .find(|&i| i >= off && scale[i - off] != 1)
            .unwrap_or(1);
        (0..r).map(|i| if i >= first { 1 } else { x[i] }).collect()
    };
    match kind {
        Kind::Bn => (0..r).map(|i| if i == 1 { x[1] } else { 1 }).collect(),
        Kind::Ln(0) | Kind::LnEps(0) | Kind::Rms(_) => from_scale(),
        Kind::Ln(n) | Kind::LnEps(n) => (0..r)
            .map(|i| if i >= r - n as usize { 1 } else { x[i] })
            .collect(),
    }
}

fn i64s(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&d| d as i64).collect()
}

fn strides(layout: Layout, dims: &[usize]) -> Vec<i64> {
    let d = i64s(dims);
    match layout {
        Layout::Packed => packed_strides(&d),
        Layout::ChannelsLast => channels_last_strides(&d),
        Layout::Sliced => {
            let mut wide = d.clone();
            *wide.last_mut().unwrap() += 3;
            packed_strides(&wide)
        }
    }
}

/// Flat row-major index in `to` (right-aligned, broadcast dims 1) of x's element `flat`.
fn bcast_index(x: &[usize], to: &[usize], flat: usize) -> usize {
    let off = x.len() - to.len();
    let (mut rem, mut idx) = (flat, vec![0usize; x.len()]);
    for d in (0..x.len()).rev() {
        idx[d] = rem % x[d];
        rem /= x[d];
    }
    let mut o = 0;
    for (j, &t) in to.iter().enumerate() {
        o = o * t + if t == 1 { 0 } else { idx[j + off] };
    }
    o
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&a| f64::from(a)).collect()
}

/// Per-group (mean, inv) in f64 from x: centered (population variance) or RMS.
fn stats_f64(x: &[f64], groups: &[usize], n_groups: usize, centered: bool) -> Vec<(f64, f64)> {
    let mut cnt = vec![0f64; n_groups];
    let mut sum = vec![0f64; n_groups];
    for (i, &g) in groups.iter().enumerate() {
        cnt[g] += 1.0;
        sum[g] += x[i];
    }
    let mean: Vec<f64> = (0..n_groups)
        .map(|g| if centered { sum[g] / cnt[g] } else { 0.0 })
        .collect();
    let mut ss = vec![0f64; n_groups];
    for (i, &g) in groups.iter().enumerate() {
        ss[g] += (x[i] - mean[g]).powi(2);
    }
    (0..n_groups)
        .map(|g| (mean[g], 1.0 / (ss[g] / cnt[g] + EPSV).sqrt()))
        .collect()
}

/// The float64 reference: `(dx, dscale, dbias)` of `y = (x − mean)·inv·scale + bias` with the
/// statistics treated as functions of x (PyTorch's training-mode formula), plain loops.
fn reference(
    x: &[f64],
    dy: &[f64],
    scale: &[f64],
    groups: &[usize],
    sidx: &[usize],
    stats: &[(f64, f64)],
    centered: bool,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let ng = stats.len();
    let mut cnt = vec![0f64; ng];
    let (mut sg, mut sgx) = (vec![0f64; ng], vec![0f64; ng]);
    let xhat: Vec<f64> = (0..x.len())
        .map(|i| (x[i] - stats[groups[i]].0) * stats[groups[i]].1)
        .collect();
    for i in 0..x.len() {
        let g = dy[i] * scale[sidx[i]];
        cnt[groups[i]] += 1.0;
        sg[groups[i]] += g;
        sgx[groups[i]] += g * xhat[i];
    }
    let mut dx = vec![0f64; x.len()];
    let (mut ds, mut db) = (vec![0f64; scale.len()], vec![0f64; scale.len()]);
    for i in 0..x.len() {
        let k = groups[i];
        let n = cnt[k];
        let g = dy[i] * scale[sidx[i]];
        let gbar = if centered { sg[k] / n } else { 0.0 };
        dx[i] = stats[k].1 * (g - gbar - xhat[i] * sgx[k] / n);
        ds[sidx[i]] += dy[i] * xhat[i];
        db[sidx[i]] += dy[i];
    }
    (dx, ds, db)
}

fn eps_spec(dt: DT) -> TensorSpec {
    let v = EPSV as f32;
    let tv = match dt {
        DT::HALF => TensorValue::Float16(v),
        DT::BFLOAT16 => TensorValue::BFloat16(v),
        _ => TensorValue::Float32(v),
    };
    TensorSpec::scalar(EPS, "eps", tv)
}

/// The backward node of `kind` over the fixed UIDs (statistics and epsilon as the kind says).
fn bwd_node(kind: Kind) -> NodeWriter {
    Box::new(move |fbb| match kind {
        Kind::Bn => (
            NodeAttributes::BatchnormBackwardAttributes,
            BatchnormBackwardAttributes::create(
                fbb,
                &BatchnormBackwardAttributesArgs {
                    dy_tensor_uid: DY,
                    x_tensor_uid: X,
                    mean_tensor_uid: Some(MEAN),
                    inv_variance_tensor_uid: Some(INV),
                    scale_tensor_uid: SCALE,
                    peer_stats_tensor_uid: None,
                    dx_tensor_uid: DX,
                    dscale_tensor_uid: DSCALE,
                    dbias_tensor_uid: DBIAS,
                },
            )
            .as_union_value(),
        ),
        Kind::Ln(n) | Kind::LnEps(n) => {
            let saved = matches!(kind, Kind::Ln(_));
            (
                NodeAttributes::LayernormBackwardAttributes,
                LayernormBackwardAttributes::create(
                    fbb,
                    &LayernormBackwardAttributesArgs {
                        dy_tensor_uid: DY,
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        mean_tensor_uid: saved.then_some(MEAN),
                        inv_variance_tensor_uid: saved.then_some(INV),
                        epsilon_tensor_uid: (!saved).then_some(EPS),
                        dx_tensor_uid: DX,
                        dscale_tensor_uid: DSCALE,
                        dbias_tensor_uid: DBIAS,
                        normalized_dim_count: n,
                    },
                )
                .as_union_value(),
            )
        }
        Kind::Rms(dbias) => (
            NodeAttributes::RMSNormBackwardAttributes,
            RMSNormBackwardAttributes::create(
                fbb,
                &RMSNormBackwardAttributesArgs {
                    dy_tensor_uid: DY,
                    x_tensor_uid: X,
                    scale_tensor_uid: SCALE,
                    inv_rms_tensor_uid: INV,
                    dx_tensor_uid: DX,
                    dscale_tensor_uid: DSCALE,
                    dbias_tensor_uid: dbias.then_some(DBIAS),
                },
            )
            .as_union_value(),
        ),
    })
}

/// A built case: the graph, its inputs (dense row-major values, already rounded to the
/// dtype), the outputs to read, and the float64 reference of those outputs.
struct Built {
    g: GraphBuilder,
    specs: Vec<TensorSpec>,
    inputs: Vec<(i64, Vec<f32>)>,
    outputs: Vec<i64>,
    want: Vec<Vec<f64>>,
}

fn build(c: &Case, dt: DT, seed: u64) -> Built {
    let sd = stat_dims(c.kind, &c.x, &c.scale);
    let n: usize = c.x.iter().product();
    let ns: usize = c.scale.iter().product();
    let ng: usize = sd.iter().product();
    let xs = TensorSpec::new(X, "x", dt, &i64s(&c.x)).strides(&strides(c.layout, &c.x));
    let dys = TensorSpec::new(DY, "dy", dt, &i64s(&c.x)).strides(&strides(c.layout, &c.x));
    let dxs = TensorSpec::new(DX, "dx", dt, &i64s(&c.x)).strides(&strides(c.layout, &c.x));
    let scs = TensorSpec::new(SCALE, "scale", dt, &i64s(&c.scale));
    let stat_decl = i64s(c.stats.as_ref().unwrap_or(&sd));
    // x with a per-group offset (the mean matters), dy and scale random.
    let groups: Vec<usize> = (0..n).map(|i| bcast_index(&c.x, &sd, i)).collect();
    let sidx: Vec<usize> = (0..n).map(|i| bcast_index(&c.x, &c.scale, i)).collect();
    let xr = random_values(n, seed, -2.0, 2.0);
    let xv: Vec<f32> = xs.quantize(
        &(0..n)
            .map(|i| xr[i] + 0.3 * groups[i] as f32)
            .collect::<Vec<_>>(),
    );
    let dyv = dys.quantize(&random_values(n, seed + 1, -1.0, 1.0));
    let scv = scs.quantize(&random_values(ns, seed + 2, 0.5, 1.5));
    let centered = !matches!(c.kind, Kind::Rms(_));
    let x64 = f64s(&xv);
    let exact = stats_f64(&x64, &groups, ng, centered);
    let mut g = GraphBuilder::new("norm_bwd");
    g.tensor(xs).tensor(dys).tensor(dxs).tensor(scs.clone());
    g.tensor(TensorSpec::new(DSCALE, "dscale", dt, &i64s(&c.scale)));
    let mut inputs = vec![(X, xv.clone()), (DY, dyv.clone()), (SCALE, scv.clone())];
    // The statistics the engine reads: saved (rounded to the dtype, and the reference uses
    // the same rounded values) or recomputed from x with epsilon (the reference uses exact).
    let stats: Vec<(f64, f64)> = if let Kind::LnEps(_) = c.kind {
        g.tensor(eps_spec(dt));
        exact
    } else {
        let ms = TensorSpec::new(MEAN, "mean", dt, &stat_decl);
        let is = TensorSpec::new(INV, "inv", dt, &stat_decl);
        let mv = ms.quantize(&exact.iter().map(|s| s.0 as f32).collect::<Vec<_>>());
        let iv = is.quantize(&exact.iter().map(|s| s.1 as f32).collect::<Vec<_>>());
        if centered {
            g.tensor(ms);
            inputs.push((MEAN, mv.clone()));
        }
        g.tensor(is);
        inputs.push((INV, iv.clone()));
        mv.iter()
            .zip(&iv)
            .map(|(&m, &i)| (if centered { f64::from(m) } else { 0.0 }, f64::from(i)))
            .collect()
    };
    let dbias = !matches!(c.kind, Kind::Rms(false));
    let mut outputs = vec![DX, DSCALE];
    if dbias {
        g.tensor(TensorSpec::new(DBIAS, "dbias", dt, &i64s(&c.scale)));
        outputs.push(DBIAS);
    }
    g.node("norm_bwd", bwd_node(c.kind));
    let mut uids: Vec<i64> = inputs.iter().map(|p| p.0).collect();
    uids.extend(&outputs);
    if let Kind::LnEps(_) = c.kind {
        uids.push(EPS);
    }
    let (dx, ds, db) = reference(
        &x64,
        &f64s(&dyv),
        &f64s(&scv),
        &groups,
        &sidx,
        &stats,
        centered,
    );
    let mut want = vec![dx, ds];
    if dbias {
        want.push(db);
    }
    Built {
        specs: [DY, X, SCALE, MEAN, INV, EPS, DX, DSCALE, DBIAS]
            .into_iter()
            .filter(|u| uids.contains(u))
            .map(|u| g.spec(u).clone())
            .collect(),
        g,
        inputs,
        outputs,
        want,
    }
}

fn check(c: &Case, dt: DT, seed: u64) {
    let b = build(c, dt, seed);
    let got = run_graph(b.g, &b.inputs, &b.outputs)
        .unwrap_or_else(|e| panic!("{c:?} {dt:?}: {}", e.message));
    for ((name, got), want) in ["dx", "dscale", "dbias"].iter().zip(&got).zip(&b.want) {
        let want: Vec<f32> = want.iter().map(|&v| v as f32).collect();
        assert_close(
            &format!("{c:?} {dt:?} {name}"),
            got,
            &want,
            tolerance(dt, true),
        );
    }
}

fn cases() -> Vec<Case> {
    use Layout::*;
    let mut bn_flat_stats = case(Kind::Bn, &[3, 5, 7], &[1, 5, 1], Packed);
    bn_flat_stats.stats = Some(vec![5]);
    vec![
        // Batchnorm: batch 1, odd sizes, channels-last, sliced, 2-D, statistics declared (C).
        case(Kind::Bn, &[1, 3, 5, 7], &[1, 3, 1, 1], Packed),
        case(Kind::Bn, &[2, 5, 3, 7], &[1, 5, 1, 1], ChannelsLast),
        case(Kind::Bn, &[3, 4, 5], &[1, 4, 1], Sliced),
        case(Kind::Bn, &[9, 3], &[1, 3], Packed),
        bn_flat_stats,
        // Layernorm: over the last dim, the last two, from the scale dims; batch 1; sliced;
        // statistics recomputed with epsilon.
        case(Kind::Ln(1), &[3, 5, 7], &[1, 1, 7], Packed),
        case(Kind::Ln(2), &[1, 5, 9], &[1, 5, 9], Packed),
        case(Kind::Ln(0), &[3, 5, 7], &[1, 5, 7], Sliced),
        case(Kind::Ln(2), &[2, 3, 5, 7], &[1, 1, 5, 7], ChannelsLast),
        case(Kind::LnEps(1), &[5, 11], &[1, 11], Packed),
        case(Kind::LnEps(0), &[1, 3, 13], &[1, 1, 13], Sliced),
        // RMSNorm: with and without dbias, batch 1, sliced, channels-last.
        case(Kind::Rms(true), &[4, 11], &[1, 11], Packed),
        case(Kind::Rms(false), &[1, 3, 5, 7], &[1, 1, 5, 7], ChannelsLast),
        case(Kind::Rms(true), &[3, 5, 9], &[1, 5, 9], Sliced),
    ]
}

#[test]
fn norm_backward_matches_float64_for_f32_f16_bf16_over_the_shape_matrix() {
    for (i, c) in cases().iter().enumerate() {
        for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
            check(c, dt, 100 + i as u64 * 7);
        }
    }
}

fn with_threads<T: Send>(n: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
        .install(f)
}

fn bits(v: &[Vec<f32>]) -> Vec<Vec<u32>> {
    v.iter()
        .map(|a| a.iter().map(|x| x.to_bits()).collect())
        .collect()
}

#[test]
fn norm_backward_is_bit_identical_for_1_2_and_5_threads() {
    let big = [
        case(
            Kind::Bn,
            &[3, 5, 17, 19],
            &[1, 5, 1, 1],
            Layout::ChannelsLast,
        ),
        case(Kind::Ln(1), &[37, 301], &[1, 301], Layout::Packed),
        case(Kind::LnEps(2), &[7, 9, 33], &[1, 9, 33], Layout::Sliced),
        case(Kind::Rms(true), &[29, 257], &[1, 257], Layout::Packed),
    ];
    for c in &big {
        let run = || {
            let b = build(c, DT::FLOAT, 7);
            bits(&run_graph(b.g, &b.inputs, &b.outputs).expect("run"))
        };
        let one = with_threads(1, run);
        for n in [2, 5] {
            assert_eq!(one, with_threads(n, run), "{c:?}, {n} threads");
        }
    }
}

/// Executes `ctx` with `inputs` bound (encoded by the graph's specs) → the output buffers.
fn exec(
    ctx: &dyn ExecutionContext,
    specs: &dyn Fn(i64) -> TensorSpec,
    inputs: &[(i64, Vec<f32>)],
    outputs: &[i64],
) -> Vec<Vec<u8>> {
    let ins: Vec<(i64, Vec<u8>)> = inputs
        .iter()
        .map(|(u, v)| (*u, specs(*u).encode(v)))
        .collect();
    let mut outs: Vec<(i64, Vec<u8>)> = outputs
        .iter()
        .map(|&u| (u, vec![0u8; specs(u).bytes_len()]))
        .collect();
    let mut t: Vec<TensorBinding<'_>> = ins
        .iter()
        .map(|(u, b)| TensorBinding {
            uid: *u,
            data: BufferRef::Host(b),
        })
        .chain(outs.iter_mut().map(|(u, b)| TensorBinding {
            uid: *u,
            data: BufferRef::HostMut(b),
        }))
        .collect();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .expect("execute");
    drop(t);
    outs.into_iter().map(|(_, b)| b).collect()
}

#[test]
fn norm_backward_saved_and_reloaded_plan_gives_the_same_bits() {
    for c in [
        case(Kind::Bn, &[2, 5, 3, 7], &[1, 5, 1, 1], Layout::ChannelsLast),
        case(Kind::LnEps(1), &[5, 11], &[1, 11], Layout::Packed),
        case(Kind::Rms(false), &[3, 5, 9], &[1, 5, 9], Layout::Sliced),
    ] {
        let b = build(&c, DT::HALF, 3);
        let specs = b.specs.clone();
        let spec = |u: i64| specs.iter().find(|t| t.uid == u).unwrap().clone();
        let graph = OperationGraph::from_bytes(&b.g.build()).expect("graph");
        let e = ReferenceEngine::new();
        let ctx = e
            .create_execution_context(
                &EngineConfig {
                    engine_id: e.id(),
                    knob_choices: vec![],
                },
                &graph,
            )
            .expect("ctx");
        let want = exec(ctx.as_ref(), &spec, &b.inputs, &b.outputs);
        let ser = e.serialization().expect("hooks");
        let p = ser
            .serialize_execution_context(e.id(), ctx.as_ref())
            .expect("save");
        let loaded = ser
            .create_execution_context_from_serialized(&p)
            .expect("load");
        assert_eq!(
            exec(loaded.as_ref(), &spec, &b.inputs, &b.outputs),
            want,
            "{c:?}"
        );
        // And the outputs are the gradients, not zeros.
        let dx = spec(DX).decode(&want[0]);
        assert!(dx.iter().any(|&v| v != 0.0), "{c:?}");
    }
}

/// The engine's own forward node of `kind` (f32): `(y, mean, inv)` (mean empty for rmsnorm).
fn forward(
    kind: Kind,
    xd: &[usize],
    sd: &[usize],
    x: &[f32],
    scale: &[f32],
    bias: &[f32],
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let st = stat_dims(kind, xd, sd);
    let mut g = GraphBuilder::new("norm_fwd");
    g.tensor(TensorSpec::new(X, "x", DT::FLOAT, &i64s(xd)))
        .tensor(TensorSpec::new(SCALE, "scale", DT::FLOAT, &i64s(sd)))
        .tensor(TensorSpec::new(BIAS, "bias", DT::FLOAT, &i64s(sd)))
        .tensor(eps_spec(DT::FLOAT))
        .tensor(TensorSpec::new(Y, "y", DT::FLOAT, &i64s(xd)))
        .tensor(TensorSpec::new(MEAN, "mean", DT::FLOAT, &i64s(&st)))
        .tensor(TensorSpec::new(INV, "inv", DT::FLOAT, &i64s(&st)));
    g.node(
        "fwd",
        Box::new(move |fbb| match kind {
            Kind::Bn => (
                NodeAttributes::BatchnormAttributes,
                BatchnormAttributes::create(
                    fbb,
                    &BatchnormAttributesArgs {
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        bias_tensor_uid: BIAS,
                        epsilon_tensor_uid: EPS,
                        y_tensor_uid: Y,
                        mean_tensor_uid: Some(MEAN),
                        inv_variance_tensor_uid: Some(INV),
                        ..Default::default()
                    },
                )
                .as_union_value(),
            ),
            Kind::Ln(n) | Kind::LnEps(n) => (
                NodeAttributes::LayernormAttributes,
                LayernormAttributes::create(
                    fbb,
                    &LayernormAttributesArgs {
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        bias_tensor_uid: BIAS,
                        epsilon_tensor_uid: EPS,
                        y_tensor_uid: Y,
                        normalized_dim_count: n,
                        mean_tensor_uid: Some(MEAN),
                        inv_variance_tensor_uid: Some(INV),
                        ..Default::default()
                    },
                )
                .as_union_value(),
            ),
            Kind::Rms(_) => (
                NodeAttributes::RMSNormAttributes,
                RMSNormAttributes::create(
                    fbb,
                    &RMSNormAttributesArgs {
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        epsilon_tensor_uid: EPS,
                        y_tensor_uid: Y,
                        bias_tensor_uid: Some(BIAS),
                        inv_rms_tensor_uid: Some(INV),
                        ..Default::default()
                    },
                )
                .as_union_value(),
            ),
        }),
    );
    let rms = matches!(kind, Kind::Rms(_));
    let outs: Vec<i64> = if rms {
        vec![Y, INV]
    } else {
        vec![Y, MEAN, INV]
    };
    let mut o = run_graph(
        g,
        &[
            (X, x.to_vec()),
            (SCALE, scale.to_vec()),
            (BIAS, bias.to_vec()),
        ],
        &outs,
    )
    .expect("forward");
    let inv = o.pop().unwrap();
    let mean = if rms { Vec::new() } else { o.pop().unwrap() };
    (o.pop().unwrap(), mean, inv)
}

/// The engine's backward of `kind` fed with the forward's saved statistics → (dx, dscale,
/// dbias).
fn backward_from_forward(
    kind: Kind,
    xd: &[usize],
    sd: &[usize],
    x: &[f32],
    dy: &[f32],
    scale: &[f32],
    (mean, inv): (&[f32], &[f32]),
) -> Vec<Vec<f32>> {
    let st = i64s(&stat_dims(kind, xd, sd));
    let mut g = GraphBuilder::new("norm_bwd");
    for (u, n, d) in [
        (DY, "dy", i64s(xd)),
        (X, "x", i64s(xd)),
        (SCALE, "scale", i64s(sd)),
        (INV, "inv", st.clone()),
        (DX, "dx", i64s(xd)),
        (DSCALE, "dscale", i64s(sd)),
        (DBIAS, "dbias", i64s(sd)),
    ] {
        g.tensor(TensorSpec::new(u, n, DT::FLOAT, &d));
    }
    let mut inputs = vec![
        (DY, dy.to_vec()),
        (X, x.to_vec()),
        (SCALE, scale.to_vec()),
        (INV, inv.to_vec()),
    ];
    if !mean.is_empty() {
        g.tensor(TensorSpec::new(MEAN, "mean", DT::FLOAT, &st));
        inputs.push((MEAN, mean.to_vec()));
    }
    g.node("bwd", bwd_node(kind));
    run_graph(g, &inputs, &[DX, DSCALE, DBIAS]).expect("backward")
}

/// dx, dscale and dbias of the backward node equal central differences of `Σ dy·y` through
/// the engine's own forward node (batchnorm training, layernorm, rmsnorm), fed with the
/// forward's saved statistics: backward and forward mean the same thing.
#[test]
fn norm_backward_matches_finite_differences_of_the_forward_node() {
    let h = 1e-2f32;
    for (kind, xd, sd) in [
        (Kind::Bn, vec![2, 3, 5], vec![1, 3, 1]),
        (Kind::Ln(1), vec![3, 7], vec![1, 7]),
        (Kind::Ln(0), vec![2, 3, 4], vec![1, 3, 4]),
        (Kind::Rms(true), vec![3, 9], vec![1, 9]),
    ] {
        let n: usize = xd.iter().product();
        let ns: usize = sd.iter().product();
        let x = random_values(n, 11, -2.0, 2.0);
        let dy = random_values(n, 12, -1.0, 1.0);
        let scale = random_values(ns, 13, 0.5, 1.5);
        let bias = random_values(ns, 14, -0.5, 0.5);
        let loss = |x: &[f32], s: &[f32], b: &[f32]| -> f64 {
            let (y, _, _) = forward(kind, &xd, &sd, x, s, b);
            y.iter()
                .zip(&dy)
                .map(|(&y, &w)| f64::from(y) * f64::from(w))
                .sum()
        };
        let (_, mean, inv) = forward(kind, &xd, &sd, &x, &scale, &bias);
        let got = backward_from_forward(kind, &xd, &sd, &x, &dy, &scale, (&mean, &inv));
        let fd = |which: usize, i: usize| -> f64 {
            let mut v = [x.clone(), scale.clone(), bias.clone()];
            v[which][i] += h;
            let up = loss(&v[0], &v[1], &v[2]);
            v[which][i] -= 2.0 * h;
            let down = loss(&v[0], &v[1], &v[2]);
            (up - down) / (2.0 * f64::from(h))
        };
        for (which, name, idx) in [
            (0, "dx", vec![0, n / 2, n - 1]),
            (1, "dscale", vec![0, ns - 1]),
            (2, "dbias", vec![0, ns - 1]),
        ] {
            for i in idx {
                let want = fd(which, i);
                let g = f64::from(got[which][i]);
                assert!(
                    (g - want).abs() <= 2e-4 * (1.0 + want.abs()),
                    "{kind:?} {name}[{i}]: backward {g}, finite difference {want}"
                );
            }
        }
    }
}

fn refusal(g: GraphBuilder) -> String {
    let err = ReferenceEngine::new()
        .check_applicable(&OperationGraph::from_bytes(&g.build()).unwrap())
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::NotApplicable, "{}", err.message);
    err.message
}

/// The tensors of a packed f32 case `x (2, 3, 5)`, scale `(1, 3, 1)`, statistics of `st`.
fn refusal_graph(st: &[i64], dscale: &[i64]) -> GraphBuilder {
    let mut g = GraphBuilder::new("refuse");
    for (u, n, d) in [
        (DY, "dy", vec![2, 3, 5]),
        (X, "x", vec![2, 3, 5]),
        (SCALE, "scale", vec![1, 3, 1]),
        (MEAN, "mean", st.to_vec()),
        (INV, "inv", st.to_vec()),
        (DX, "dx", vec![2, 3, 5]),
        (DSCALE, "dscale", dscale.to_vec()),
        (DBIAS, "dbias", vec![1, 3, 1]),
        (12, "peer0", vec![1]),
    ] {
        g.tensor(TensorSpec::new(u, n, DT::FLOAT, &d));
    }
    g
}

#[test]
fn norm_backward_refusals_name_the_op_attribute_and_value() {
    let bn = |mean: Option<i64>, peer: bool| -> NodeWriter {
        Box::new(move |fbb| {
            let peer = peer.then(|| fbb.create_vector(&[12i64]));
            (
                NodeAttributes::BatchnormBackwardAttributes,
                BatchnormBackwardAttributes::create(
                    fbb,
                    &BatchnormBackwardAttributesArgs {
                        dy_tensor_uid: DY,
                        x_tensor_uid: X,
                        mean_tensor_uid: mean,
                        inv_variance_tensor_uid: Some(INV),
                        scale_tensor_uid: SCALE,
                        peer_stats_tensor_uid: peer,
                        dx_tensor_uid: DX,
                        dscale_tensor_uid: DSCALE,
                        dbias_tensor_uid: DBIAS,
                    },
                )
                .as_union_value(),
            )
        })
    };
    let ln = |mean: Option<i64>, inv: Option<i64>, eps: Option<i64>, ndc: i64| -> NodeWriter {
        Box::new(move |fbb| {
            (
                NodeAttributes::LayernormBackwardAttributes,
                LayernormBackwardAttributes::create(
                    fbb,
                    &LayernormBackwardAttributesArgs {
                        dy_tensor_uid: DY,
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        mean_tensor_uid: mean,
                        inv_variance_tensor_uid: inv,
                        epsilon_tensor_uid: eps,
                        dx_tensor_uid: DX,
                        dscale_tensor_uid: DSCALE,
                        dbias_tensor_uid: DBIAS,
                        normalized_dim_count: ndc,
                    },
                )
                .as_union_value(),
            )
        })
    };
    let cstat = [1i64, 3, 1];
    let mut g = refusal_graph(&cstat, &cstat);
    g.node("bn_bwd", bn(Some(MEAN), true));
    assert_eq!(
        refusal(g),
        "batchnorm_backward 'bn_bwd': peer_stats_tensor_uid [12] is not supported by the CPU reference engine"
    );
    let mut g = refusal_graph(&cstat, &cstat);
    g.node("bn_bwd", bn(None, false));
    assert_eq!(
        refusal(g),
        "batchnorm_backward 'bn_bwd': mean_tensor_uid is absent: the CPU reference engine \
         needs the saved mean and inv_variance (batchnorm backward carries no epsilon to \
         recompute them from x)"
    );
    let mut g = refusal_graph(&[2, 3, 1], &cstat);
    g.node("bn_bwd", bn(Some(MEAN), false));
    assert_eq!(
        refusal(g),
        "batchnorm_backward 'bn_bwd': mean_tensor_uid (uid 4) dims [2, 3, 1] must hold 3 \
         values (dims [1, 3, 1])"
    );
    let mut g = refusal_graph(&[2, 1, 1], &cstat);
    g.node("ln_bwd", ln(Some(MEAN), None, None, 2));
    assert_eq!(
        refusal(g),
        "layernorm_backward 'ln_bwd': mean_tensor_uid is given but inv_variance_tensor_uid is \
         absent: the CPU reference engine takes both saved statistics or neither (recomputed \
         from x with epsilon)"
    );
    let mut g = refusal_graph(&[2, 1, 1], &cstat);
    g.node("ln_bwd", ln(None, None, None, 2));
    assert_eq!(
        refusal(g),
        "layernorm_backward 'ln_bwd': mean_tensor_uid and inv_variance_tensor_uid are absent \
         and so is epsilon_tensor_uid: the statistics can be neither read nor recomputed"
    );
    let mut g = refusal_graph(&[2, 1, 1], &cstat);
    g.node("ln_bwd", ln(Some(MEAN), Some(INV), None, 4));
    assert_eq!(
        refusal(g),
        "layernorm_backward 'ln_bwd': normalized_dim_count 4 is not supported by the CPU \
         reference engine"
    );
    let mut g = refusal_graph(&[2, 3, 1], &[3]);
    g.node(
        "rms_bwd",
        Box::new(|fbb| {
            (
                NodeAttributes::RMSNormBackwardAttributes,
                RMSNormBackwardAttributes::create(
                    fbb,
                    &RMSNormBackwardAttributesArgs {
                        dy_tensor_uid: DY,
                        x_tensor_uid: X,
                        scale_tensor_uid: SCALE,
                        inv_rms_tensor_uid: INV,
                        dx_tensor_uid: DX,
                        dscale_tensor_uid: DSCALE,
                        dbias_tensor_uid: None,
                    },
                )
                .as_union_value(),
            )
        }),
    );
    assert_eq!(
        refusal(g),
        "rmsnorm_backward 'rms_bwd': dscale_tensor_uid (uid 8) dims [3] differ from the \
         expected [1, 3, 1]"
    );
}
