//! The CPU reference engine's resample (pooling) backward node (issue 31): dx from dy through
//! the forward's max-pool index or the average's divisor, against a float64 reference written
//! here (plain loops over outputs and window positions), for f32, f16 and bf16, 1 to 3 spatial
//! dims with odd sizes, batch 1, overlapping windows and padding, packed, channels-last and
//! strided layouts; the same bits for 1 and 4 threads and after a plan is saved and reloaded;
//! the gradient of the engine's own forward node by finite differences; refusals.
//!
//! Tolerances: `testing::tolerance(dt, true)` (f32 1e-4, f16 1e-2, bf16 2e-2, relative to
//! `1 + |want|`); the finite-difference check 1e-5 (the perturbations are exact in f32: a
//! linear average with `h = 0.5` on values in [-1, 1], a maximum of distinct integers with
//! `h = 0.25`).

use hipdnn_backend::{
    BufferRef, Engine, EngineConfig, ExecuteArgs, ExecutionContext, OperationGraph, PluginStatus,
    TensorBinding,
};
use hipdnn_engines::reference::ReferenceEngine;
use hipdnn_engines::reference::ops::resample::PoolGeometry;
use hipdnn_engines::reference::testing::{
    GraphBuilder, PoolSpec, TensorSpec, assert_close, packed_strides, random_values, run_graph,
    tolerance,
};
use hipdnn_schema::graph::{DataType as DT, PaddingMode, ResampleMode};

const X: i64 = 1;
const Y: i64 = 2;
const IDX: i64 = 3;
const DY: i64 = 4;
const DX: i64 = 5;

fn geo(window: &[usize], stride: &[usize], pre: &[usize], post: &[usize]) -> PoolGeometry {
    PoolGeometry {
        window: window.to_vec(),
        stride: stride.to_vec(),
        pre: pre.to_vec(),
        post: post.to_vec(),
    }
}

fn spec(mode: ResampleMode, padding: PaddingMode, g: &PoolGeometry) -> PoolSpec {
    PoolSpec {
        geo: g.clone(),
        mode,
        padding,
    }
}

/// `(N, C, out…)` of x dims `xd` under `g`.
fn out_dims(xd: &[i64], g: &PoolGeometry) -> Vec<i64> {
    let mut v = xd[..2].to_vec();
    for d in 0..xd.len() - 2 {
        v.push(
            (xd[d + 2] + (g.pre[d] + g.post[d]) as i64 - g.window[d] as i64) / g.stride[d] as i64
                + 1,
        );
    }
    v
}

fn vol(d: &[i64]) -> usize {
    d.iter().product::<i64>() as usize
}

/// Row-major coordinates of flat position `f` in extents `ext`.
fn unflat(mut f: usize, ext: &[usize]) -> Vec<usize> {
    let mut c = vec![0; ext.len()];
    for d in (0..ext.len()).rev() {
        c[d] = f % ext[d];
        f /= ext[d];
    }
    c
}

/// The input position (flat in the spatial plane) of window position `t` of output `o`
/// (flat), `None` in the padding.
fn tap_pos(o: usize, t: usize, xd: &[i64], yd: &[i64], g: &PoolGeometry) -> Option<usize> {
    let ind: Vec<usize> = xd[2..].iter().map(|&v| v as usize).collect();
    let outd: Vec<usize> = yd[2..].iter().map(|&v| v as usize).collect();
    let (oc, tc) = (unflat(o, &outd), unflat(t, &g.window));
    let mut pos = 0;
    for d in 0..ind.len() {
        let v = (oc[d] * g.stride[d] + tc[d]) as i64 - g.pre[d] as i64;
        if v < 0 || v >= ind[d] as i64 {
            return None;
        }
        pos = pos * ind[d] + v as usize;
    }
    Some(pos)
}

/// The forward's index by definition: per output, the first window position (row-major)
/// holding the maximum; padding skipped, or a zero with `zero_pad`.
fn ref_argmax(x: &[f32], xd: &[i64], yd: &[i64], g: &PoolGeometry, zero_pad: bool) -> Vec<i64> {
    let (ivol, ovol) = (vol(&xd[2..]), vol(&yd[2..]));
    let wvol: usize = g.window.iter().product();
    let mut idx = Vec::new();
    for p in 0..vol(&xd[..2]) {
        for o in 0..ovol {
            let mut best: Option<(f64, usize)> = None;
            for t in 0..wvol {
                let v = match tap_pos(o, t, xd, yd, g) {
                    Some(q) => f64::from(x[p * ivol + q]),
                    None if zero_pad => 0.0,
                    None => continue,
                };
                if best.is_none_or(|(b, _)| v > b) {
                    best = Some((v, t));
                }
            }
            idx.push(best.map_or(0, |(_, t)| t) as i64);
        }
    }
    idx
}

/// dx in f64: each dy element to its index's input position (max), or divided by the window
/// volume / in-bounds count to every in-bounds position of its window (average).
fn ref_bwd(
    dy: &[f32],
    idx: Option<&[i64]>,
    xd: &[i64],
    yd: &[i64],
    mode: ResampleMode,
    g: &PoolGeometry,
) -> Vec<f64> {
    let (ivol, ovol) = (vol(&xd[2..]), vol(&yd[2..]));
    let wvol: usize = g.window.iter().product();
    let mut dx = vec![0f64; vol(xd)];
    for p in 0..vol(&xd[..2]) {
        for o in 0..ovol {
            let gv = f64::from(dy[p * ovol + o]);
            if mode == ResampleMode::MAXPOOL {
                let t = idx.expect("index")[p * ovol + o] as usize;
                if let Some(q) = tap_pos(o, t, xd, yd, g) {
                    dx[p * ivol + q] += gv;
                }
                continue;
            }
            let taps: Vec<usize> = (0..wvol).filter_map(|t| tap_pos(o, t, xd, yd, g)).collect();
            let div = if mode == ResampleMode::AVGPOOL_INCLUDE_PADDING {
                wvol
            } else {
                taps.len()
            };
            for q in taps {
                dx[p * ivol + q] += gv / div as f64;
            }
        }
    }
    dx
}

/// A tensor with `layout`: 0 packed, 1 channels-last, 2 strided (each spatial row padded by 3
/// elements, as a slice of a wider tensor).
fn tensor(uid: i64, name: &str, dt: DT, dims: &[i64], layout: u8) -> TensorSpec {
    let t = TensorSpec::new(uid, name, dt, dims);
    match layout {
        1 => t.channels_last(),
        2 => {
            let mut wide = dims.to_vec();
            *wide.last_mut().unwrap() += 3;
            t.strides(&packed_strides(&wide))
        }
        _ => t,
    }
}

/// (x dims, geometry): odd sizes, batch 1, overlapping windows, padding, 1 to 3 spatial dims.
fn cases() -> Vec<(Vec<i64>, PoolGeometry)> {
    vec![
        (vec![1, 3, 7, 9], geo(&[3, 3], &[2, 2], &[1, 1], &[1, 1])),
        (vec![2, 5, 8, 7], geo(&[3, 2], &[1, 2], &[1, 0], &[1, 1])),
        (
            vec![1, 2, 5, 4, 7],
            geo(&[2, 3, 2], &[1, 2, 2], &[1, 1, 0], &[0, 1, 1]),
        ),
        (vec![3, 2, 11], geo(&[3], &[2], &[1], &[1])),
        (vec![2, 3, 6, 6], geo(&[2, 2], &[2, 2], &[0, 0], &[0, 0])),
    ]
}

const MODES: [ResampleMode; 3] = [
    ResampleMode::MAXPOOL,
    ResampleMode::AVGPOOL_INCLUDE_PADDING,
    ResampleMode::AVGPOOL_EXCLUDE_PADDING,
];

/// x → forward (y, index for max) and dy (, index) → backward dx, in one graph: the backward
/// reads the index the forward wrote.
fn fwd_bwd_graph(
    dt: DT,
    xd: &[i64],
    p: &PoolSpec,
    layouts: [u8; 3],
) -> (GraphBuilder, Option<i64>) {
    let yd = out_dims(xd, &p.geo);
    let max = p.mode == ResampleMode::MAXPOOL;
    let index = max.then_some(IDX);
    let mut g = GraphBuilder::new("pool_bwd");
    g.tensor(tensor(X, "x", dt, xd, layouts[0]))
        .tensor(TensorSpec::new(Y, "y", dt, &yd).virtual_())
        .tensor(tensor(DY, "dy", dt, &yd, layouts[1]))
        .tensor(tensor(DX, "dx", dt, xd, layouts[2]));
    if max {
        g.tensor(TensorSpec::new(IDX, "index", DT::INT32, &yd));
    }
    g.resample_fwd("fwd", X, Y, index, p)
        .resample_bwd("bwd", DY, index, DX, p);
    (g, index)
}

#[test]
fn backward_matches_the_f64_reference_through_the_forward_index() {
    // layouts of x, dy, dx: packed; channels-last; strided dy with channels-last dx.
    let layouts = [[0, 0, 0], [1, 1, 1], [0, 2, 1]];
    for (ci, (xd, g)) in cases().into_iter().enumerate() {
        let yd = out_dims(&xd, &g);
        for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
            for mode in MODES {
                for (li, &lay) in layouts.iter().enumerate() {
                    let what = format!("case {ci} {dt:?} {mode:?} layout {li}");
                    let seed = (ci * 100 + li) as u64;
                    // Few distinct values (multiples of 0.5 in [-3, 3]), so windows hold ties
                    // and the first maximum must win; exact in every type.
                    let x: Vec<f32> = random_values(vol(&xd), seed, -6.0, 7.0)
                        .iter()
                        .map(|v| v.floor() / 2.0)
                        .collect();
                    let p = spec(mode, PaddingMode::NEG_INF_PAD, &g);
                    let (b, index) = fwd_bwd_graph(dt, &xd, &p, lay);
                    let dy = b
                        .spec(DY)
                        .quantize(&random_values(vol(&yd), seed + 7, -1.0, 1.0));
                    let outs: Vec<i64> = [DX].into_iter().chain(index).collect();
                    let got = run_graph(b, &[(X, x.clone()), (DY, dy.clone())], &outs)
                        .unwrap_or_else(|e| panic!("{what}: {}", e.message));
                    let idx = ref_argmax(&x, &xd, &yd, &g, false);
                    if index.is_some() {
                        let got_idx: Vec<i64> = got[1].iter().map(|&v| v as i64).collect();
                        assert_eq!(got_idx, idx, "{what}: index");
                    }
                    let want = ref_bwd(&dy, Some(&idx), &xd, &yd, mode, &g);
                    let want: Vec<f32> = want.iter().map(|&v| v as f32).collect();
                    assert_close(&what, &got[0], &want, tolerance(dt, true));
                    assert!(got[0].iter().any(|&v| v != 0.0), "{what}: all zero");
                }
            }
        }
    }
}

/// A backward-only graph: dy and a bound index (`idx_dt`) → dx.
fn bwd_graph(dt: DT, idx_dt: DT, xd: &[i64], p: &PoolSpec) -> GraphBuilder {
    let yd = out_dims(xd, &p.geo);
    let index = (p.mode == ResampleMode::MAXPOOL).then_some(IDX);
    let mut g = GraphBuilder::new("pool_bwd_only");
    g.tensor(TensorSpec::new(DY, "dy", dt, &yd))
        .tensor(TensorSpec::new(DX, "dx", dt, xd));
    if index.is_some() {
        g.tensor(TensorSpec::new(IDX, "index", idx_dt, &yd));
    }
    g.resample_bwd("bwd", DY, index, DX, p);
    g
}

#[test]
fn max_backward_through_a_bound_index_sends_padding_positions_nowhere() {
    // Every window overhangs the padding: some indices name padded positions (a zero-padded
    // maximum), which take no gradient.
    let xd = [1i64, 2, 5, 5];
    let g = geo(&[3, 3], &[2, 2], &[2, 1], &[2, 1]);
    let yd = out_dims(&xd, &g);
    let p = spec(ResampleMode::MAXPOOL, PaddingMode::ZERO_PAD, &g);
    let idx: Vec<i64> = (0..vol(&yd) as i64).map(|i| (i * 5 + 3) % 9).collect();
    let padded = (0..vol(&yd))
        .filter(|&i| tap_pos(i % vol(&yd[2..]), idx[i] as usize, &xd, &yd, &g).is_none())
        .count();
    assert!(padded > 0 && padded < idx.len(), "{padded} padded indices");
    for idx_dt in [DT::INT32, DT::INT64] {
        for dt in [DT::FLOAT, DT::HALF, DT::BFLOAT16] {
            let b = bwd_graph(dt, idx_dt, &xd, &p);
            let dy = b.spec(DY).quantize(&random_values(vol(&yd), 5, -1.0, 1.0));
            let idxf: Vec<f32> = idx.iter().map(|&v| v as f32).collect();
            let got = run_graph(b, &[(DY, dy.clone()), (IDX, idxf)], &[DX]).expect("run");
            let want = ref_bwd(&dy, Some(&idx), &xd, &yd, ResampleMode::MAXPOOL, &g);
            let want: Vec<f32> = want.iter().map(|&v| v as f32).collect();
            assert_close(
                &format!("{idx_dt:?} {dt:?}"),
                &got[0],
                &want,
                tolerance(dt, true),
            );
        }
    }
}

#[test]
fn average_backward_of_a_window_with_no_input_inside_gives_nothing() {
    // Window 2, stride 2, padding 2 before and 3 after a width of 3: output 0 sees positions
    // -2, -1 and output 3 positions 4, 5 (padding only), output 1 sees x0, x1 and output 2
    // sees x2 and one padded position.
    let xd = [1i64, 1, 3];
    let g = geo(&[2], &[2], &[2], &[3]);
    let yd = out_dims(&xd, &g);
    assert_eq!(yd, [1, 1, 4]);
    for mode in [
        ResampleMode::AVGPOOL_INCLUDE_PADDING,
        ResampleMode::AVGPOOL_EXCLUDE_PADDING,
    ] {
        let p = spec(mode, PaddingMode::PADDING_NOT_SET, &g);
        let b = bwd_graph(DT::FLOAT, DT::INT32, &xd, &p);
        let got = run_graph(b, &[(DY, vec![100.0, 1.0, 2.0, 100.0])], &[DX]).expect("run");
        let want = if mode == ResampleMode::AVGPOOL_INCLUDE_PADDING {
            [0.5, 0.5, 1.0]
        } else {
            [0.5, 0.5, 2.0]
        };
        assert_eq!(got[0], want, "{mode:?}");
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
fn backward_is_bit_identical_for_1_and_4_threads() {
    // Overlapping 3×3 windows, stride 1: every dx element sums up to 9 shares.
    let xd = [2i64, 7, 33, 31];
    let g = geo(&[3, 3], &[1, 1], &[1, 1], &[1, 1]);
    let yd = out_dims(&xd, &g);
    for mode in MODES {
        let go = || {
            let p = spec(mode, PaddingMode::NEG_INF_PAD, &g);
            let (b, index) = fwd_bwd_graph(DT::FLOAT, &xd, &p, [0, 0, 1]);
            let x = random_values(vol(&xd), 11, -1.0, 1.0);
            let dy = random_values(vol(&yd), 12, -1.0, 1.0);
            let outs: Vec<i64> = [DX].into_iter().chain(index).collect();
            run_graph(b, &[(X, x), (DY, dy)], &outs).expect("run")
        };
        let one = with_threads(1, go);
        let four = with_threads(4, go);
        assert_eq!(bits(&one), bits(&four), "{mode:?}");
    }
}

struct Ctx {
    g: GraphBuilder,
    ctx: Box<dyn ExecutionContext>,
}

fn context(mode: ResampleMode) -> Ctx {
    let xd = [1i64, 3, 9, 8];
    let g = geo(&[3, 2], &[2, 1], &[1, 1], &[1, 0]);
    let p = spec(mode, PaddingMode::NEG_INF_PAD, &g);
    let (b, _) = fwd_bwd_graph(DT::HALF, &xd, &p, [1, 2, 1]);
    let (b2, _) = fwd_bwd_graph(DT::HALF, &xd, &p, [1, 2, 1]);
    let graph = OperationGraph::from_bytes(&b2.build()).expect("graph");
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
    Ctx { g: b, ctx }
}

/// Executes `ctx` with x and dy from fixed seeds; returns the dx bytes.
fn execute(c: &Ctx, ctx: &dyn ExecutionContext, max: bool) -> Vec<u8> {
    let (xs, dys, dxs) = (c.g.spec(X), c.g.spec(DY), c.g.spec(DX));
    let x = xs.encode(&random_values(vol(&xs.dims), 21, -2.0, 2.0));
    let dy = dys.encode(&random_values(vol(&dys.dims), 22, -1.0, 1.0));
    let mut dx = vec![0u8; dxs.bytes_len()];
    let mut idx = vec![0u8; if max { c.g.spec(IDX).bytes_len() } else { 0 }];
    let mut t = vec![
        TensorBinding {
            uid: X,
            data: BufferRef::Host(&x),
        },
        TensorBinding {
            uid: DY,
            data: BufferRef::Host(&dy),
        },
        TensorBinding {
            uid: DX,
            data: BufferRef::HostMut(&mut dx),
        },
    ];
    if max {
        t.push(TensorBinding {
            uid: IDX,
            data: BufferRef::HostMut(&mut idx),
        });
    }
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .expect("execute");
    drop(t);
    dx
}

#[test]
fn saved_and_reloaded_backward_plan_gives_the_same_bits() {
    for mode in MODES {
        let max = mode == ResampleMode::MAXPOOL;
        let c = context(mode);
        let want = execute(&c, c.ctx.as_ref(), max);
        let e = ReferenceEngine::new();
        let ser = e.serialization().expect("hooks");
        let p = ser
            .serialize_execution_context(e.id(), c.ctx.as_ref())
            .expect("save");
        let loaded = ser
            .create_execution_context_from_serialized(&p)
            .expect("load");
        assert_eq!(execute(&c, loaded.as_ref(), max), want, "{mode:?}");
        assert_eq!(
            ser.serialize_execution_context(e.id(), loaded.as_ref())
                .expect("resave"),
            p,
            "{mode:?} resave"
        );
        let dx = c.g.spec(DX).decode(&want);
        assert!(dx.iter().any(|&v| v != 0.0), "{mode:?}: dx all zero");
    }
}

/// `Σ w·y` (f64) of the engine's forward node on x.
fn forward_loss(xd: &[i64], p: &PoolSpec, x: &[f32], w: &[f32]) -> f64 {
    let yd = out_dims(xd, &p.geo);
    let mut b = GraphBuilder::new("pool_fwd");
    b.tensor(TensorSpec::new(X, "x", DT::FLOAT, xd))
        .tensor(TensorSpec::new(Y, "y", DT::FLOAT, &yd))
        .resample_fwd("fwd", X, Y, None, p);
    let y = run_graph(b, &[(X, x.to_vec())], &[Y]).expect("forward");
    y[0].iter()
        .zip(w)
        .map(|(&a, &b)| f64::from(a) * f64::from(b))
        .sum()
}

#[test]
fn backward_is_the_finite_difference_gradient_of_the_forward_node() {
    let cases = [
        (vec![1i64, 2, 5, 6], geo(&[3, 3], &[2, 1], &[1, 1], &[1, 1])),
        (
            vec![1, 1, 3, 4, 5],
            geo(&[2, 2, 3], &[1, 2, 2], &[1, 0, 1], &[0, 1, 1]),
        ),
    ];
    for (ci, (xd, g)) in cases.into_iter().enumerate() {
        let yd = out_dims(&xd, &g);
        let n = vol(&xd);
        let w = random_values(vol(&yd), 40 + ci as u64, -1.0, 1.0);
        for mode in MODES {
            let max = mode == ResampleMode::MAXPOOL;
            let p = spec(mode, PaddingMode::NEG_INF_PAD, &g);
            // Max: distinct integers (a permutation), h = 0.25 moves no maximum and every y
            // stays exact. Average: linear, so a large h on values in [-1, 1] is exact up to
            // the f32 rounding of the divisions.
            let (x, h): (Vec<f32>, f32) = if max {
                let mut k: Vec<(f32, usize)> = random_values(n, 50 + ci as u64, 0.0, 1.0)
                    .into_iter()
                    .zip(0..)
                    .collect();
                k.sort_by(|a, b| a.0.total_cmp(&b.0));
                let mut x = vec![0f32; n];
                for (rank, &(_, i)) in k.iter().enumerate() {
                    x[i] = rank as f32 - (n / 2) as f32;
                }
                (x, 0.25)
            } else {
                (random_values(n, 60 + ci as u64, -1.0, 1.0), 0.5)
            };
            let (b, index) = fwd_bwd_graph(DT::FLOAT, &xd, &p, [0, 0, 0]);
            let outs: Vec<i64> = [DX].into_iter().chain(index).collect();
            let dx = run_graph(b, &[(X, x.clone()), (DY, w.clone())], &outs)
                .expect("backward")
                .remove(0);
            assert_eq!(index.is_some(), max);
            let mut fd = Vec::with_capacity(n);
            for i in 0..n {
                let (mut xp, mut xm) = (x.clone(), x.clone());
                xp[i] += h;
                xm[i] -= h;
                let d = (forward_loss(&xd, &p, &xp, &w) - forward_loss(&xd, &p, &xm, &w))
                    / (2.0 * f64::from(h));
                fd.push(d as f32);
            }
            assert_close(&format!("case {ci} {mode:?}"), &dx, &fd, 1e-5);
        }
    }
}

fn refusal(b: GraphBuilder) -> (PluginStatus, String) {
    match run_graph(b, &[], &[]) {
        Ok(_) => panic!("planned"),
        Err(e) => (e.status, e.message),
    }
}

#[test]
fn unsupported_backward_graphs_are_refused_at_plan_build_naming_the_attribute() {
    let xd = [1i64, 2, 5, 5];
    let g = geo(&[3, 3], &[2, 2], &[1, 1], &[1, 1]);
    let yd = out_dims(&xd, &g);
    let na = |b: GraphBuilder, want: &str| {
        let (st, msg) = refusal(b);
        assert_eq!(st, PluginStatus::NotApplicable, "{msg}");
        assert!(msg.contains(want), "{msg:?} lacks {want:?}");
    };
    // MAXPOOL without the forward's index: the node carries no x.
    let mut b = GraphBuilder::new("g");
    b.tensor(TensorSpec::new(DY, "dy", DT::FLOAT, &yd))
        .tensor(TensorSpec::new(DX, "dx", DT::FLOAT, &xd))
        .resample_bwd(
            "bwd",
            DY,
            None,
            DX,
            &spec(ResampleMode::MAXPOOL, PaddingMode::NEG_INF_PAD, &g),
        );
    na(
        b,
        "resample_bwd 'bwd': resample_mode MAXPOOL without index_tensor_uid is not supported",
    );
    // An index with average pooling.
    let p = spec(
        ResampleMode::AVGPOOL_INCLUDE_PADDING,
        PaddingMode::NEG_INF_PAD,
        &g,
    );
    let mut b = GraphBuilder::new("g");
    b.tensor(TensorSpec::new(DY, "dy", DT::FLOAT, &yd))
        .tensor(TensorSpec::new(DX, "dx", DT::FLOAT, &xd))
        .tensor(TensorSpec::new(IDX, "index", DT::INT32, &yd))
        .resample_bwd("bwd", DY, Some(IDX), DX, &p);
    na(
        b,
        "resample_bwd 'bwd': index_tensor_uid with resample_mode AVGPOOL_INCLUDE_PADDING is not supported",
    );
    // Mode not set.
    let b = bwd_graph(
        DT::FLOAT,
        DT::INT32,
        &xd,
        &spec(ResampleMode::NOT_SET, PaddingMode::NEG_INF_PAD, &g),
    );
    na(
        b,
        "resample_bwd 'bwd': resample_mode NOT_SET is not supported",
    );
    // A float index.
    let b = bwd_graph(
        DT::FLOAT,
        DT::FLOAT,
        &xd,
        &spec(ResampleMode::MAXPOOL, PaddingMode::NEG_INF_PAD, &g),
    );
    na(b, "index_tensor_uid (uid 3) data_type F32 is not supported");
    // dy dims that are not the forward's output of dx.
    let mut b = GraphBuilder::new("g");
    b.tensor(TensorSpec::new(DY, "dy", DT::FLOAT, &[1, 2, 2, 3]))
        .tensor(TensorSpec::new(DX, "dx", DT::FLOAT, &xd))
        .resample_bwd(
            "bwd",
            DY,
            None,
            DX,
            &spec(
                ResampleMode::AVGPOOL_EXCLUDE_PADDING,
                PaddingMode::NEG_INF_PAD,
                &g,
            ),
        );
    na(
        b,
        "dy_tensor_uid (uid 4) dims [1, 2, 2, 3] differ from the expected [1, 2, 3, 3]",
    );
    // An integer dx.
    let mut b = GraphBuilder::new("g");
    b.tensor(TensorSpec::new(DY, "dy", DT::FLOAT, &yd))
        .tensor(TensorSpec::new(DX, "dx", DT::INT32, &xd))
        .resample_bwd(
            "bwd",
            DY,
            None,
            DX,
            &spec(
                ResampleMode::AVGPOOL_EXCLUDE_PADDING,
                PaddingMode::NEG_INF_PAD,
                &g,
            ),
        );
    na(b, "dx_tensor_uid (uid 5) data_type I32 is not supported");
}

#[test]
fn an_index_outside_the_window_is_a_bad_param_at_execute() {
    let xd = [1i64, 1, 5, 5];
    let g = geo(&[2, 2], &[2, 2], &[0, 0], &[0, 0]);
    let yd = out_dims(&xd, &g);
    let p = spec(ResampleMode::MAXPOOL, PaddingMode::NEG_INF_PAD, &g);
    for bad in [4.0f32, -1.0] {
        let b = bwd_graph(DT::FLOAT, DT::INT32, &xd, &p);
        let mut idx = vec![0f32; vol(&yd)];
        idx[2] = bad;
        let err =
            run_graph(b, &[(DY, vec![1.0; vol(&yd)]), (IDX, idx)], &[DX]).expect_err("executed");
        assert_eq!(err.status, PluginStatus::BadParam, "{}", err.message);
        assert!(
            err.message.contains(&format!(
                "node 'bwd': index_tensor_uid 3: element 2 is {bad}"
            )),
            "{}",
            err.message
        );
    }
}
