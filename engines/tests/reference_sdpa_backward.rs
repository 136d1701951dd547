//! CPU reference engine: SDPA backward (issue 31). dq, dk, dv (and dbias) match float64 loops
//! over a shape matrix (odd sizes, batch 1, GQA and MQA, more than one 64-row query block),
//! every mask kind (scale value / tensor / 1, causal top-left and bottom-right, band, additive
//! and BOOLEAN masks, fully masked rows), f32, f16 and bf16, strided and channels-last
//! layouts; they equal central finite differences of the engine's own SDPA forward; they are
//! bit-identical for 1 and N threads and through a saved and reloaded plan; what the engine
//! cannot run is refused at plan build, by name.
//!
//! Tolerances: `|got − want| ≤ tol · (1 + |want|)` with `tolerance(dt, true)` (f32 1e-4, f16
//! 1e-2, bf16 2e-2) against the float64 loops, which read the same (rounded) inputs; 2e-4 for
//! finite differences (step 5e-3, f32 forward, loss summed in f64).

use hipdnn_backend::{
    BufferRef, Engine, EngineConfig, ExecuteArgs, ExecutionContext, OperationGraph, PluginStatus,
    TensorBinding,
};
use hipdnn_engines::reference::ReferenceEngine;
use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, assert_close, random_values, run_graph, tolerance,
};
use hipdnn_schema::graph::{DataType as DT, SdpaAttributesArgs, SdpaBackwardAttributesArgs};

mod sdpa_bwd_support;
use sdpa_bwd_support::*;

/// The case matrix: odd sizes, batch 1, GQA / MQA, S_q over one 64-row block, every mask
/// kind, every scale source, f32 / f16 / bf16, strided and channels-last layouts.
fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    // 1: batch 1, plain, scale value.
    let mut c = Case::base((1, 3, 3, 5, 7, 4, 3));
    c.scale = Scale::Value(0.4);
    v.push(c);
    // 2: GQA, causal top-left, scale tensor, additive (1,1,Sq,Skv) mask + dbias, BSHD q.
    let mut c = Case::base((2, 4, 2, 7, 5, 5, 6));
    c.scale = Scale::Tensor(0.3);
    c.causal = true;
    c.mask = Mask::Add(vec![1, 1, 7, 5]);
    c.dbias = true;
    c.layout = Layout::Bshd;
    v.push(c);
    // 3: MQA, causal bottom-right, BOOLEAN (B,1,Sq,Skv) mask with a fully masked row, padded.
    let mut c = Case::base((2, 3, 1, 6, 9, 3, 5));
    c.causal_br = true;
    c.mask = Mask::Bool(vec![2, 1, 6, 9]);
    c.layout = Layout::Padded;
    v.push(c);
    // 4: causal bottom-right with S_q > S_kv (the first rows keep no key), full additive
    //    mask + dbias, scale value.
    let mut c = Case::base((1, 2, 2, 9, 4, 3, 2));
    c.causal_br = true;
    c.scale = Scale::Value(0.7);
    c.mask = Mask::Add(vec![1, 2, 9, 4]);
    c.dbias = true;
    v.push(c);
    // 5: band (bottom-right, left 3, right 1), two query blocks (S_q 70), rank-2 mask + dbias.
    let mut c = Case::base((1, 2, 1, 70, 67, 3, 2));
    c.align_br = true;
    c.left = Some(3);
    c.right = Some(1);
    c.scale = Scale::Value(0.5);
    c.mask = Mask::Add(vec![70, 67]);
    c.dbias = true;
    c.layout = Layout::Padded;
    v.push(c);
    // 6, 7: f16 and bf16 versions of 2 and 3.
    let mut c = v[1].clone();
    c.dt = DT::HALF;
    v.push(c);
    let mut c = v[2].clone();
    c.dt = DT::BFLOAT16;
    v.push(c);
    v
}

#[test]
fn sdpa_backward_matches_float64_loops_over_the_case_matrix() {
    for (n, c) in cases().iter().enumerate() {
        let x = inputs(c, 100 + n as u64);
        let got = run_graph(graph(c), &bound(&x), &outs(c)).expect("run");
        let want = backward64(c, &x);
        let tol = tolerance(c.dt, true);
        let names = ["dq", "dk", "dv", "dbias"];
        for (i, g) in got.iter().enumerate() {
            let w: Vec<f32> = want[i].iter().map(|&v| v as f32).collect();
            assert_close(&format!("case {n} {:?} {}", c.dt, names[i]), g, &w, tol);
            assert!(
                g.iter().all(|v| v.is_finite()),
                "case {n}: {} finite",
                names[i]
            );
        }
        // The gradients are not trivially zero.
        assert!(
            got[0].iter().any(|&v| v.abs() > 1e-3),
            "case {n}: dq is zero"
        );
    }
}

#[test]
fn fully_masked_rows_give_zero_gradients_not_nan() {
    // Case 4: bottom-right causal with S_q 9 > S_kv 4: rows 0..5 keep no key (stats −∞, o 0).
    let c = &cases()[3];
    let x = inputs(c, 7);
    let (_, h, _, sq, skv, d, _) = c.dims;
    assert!(x.stats[..5].iter().all(|&s| s == f32::NEG_INFINITY));
    let got = run_graph(graph(c), &bound(&x), &outs(c)).expect("run");
    for hi in 0..h {
        for i in 0..5 {
            let r = &got[0][(hi * sq + i) * d..][..d];
            assert!(r.iter().all(|&v| v == 0.0), "dq row {hi},{i}: {r:?}");
            let db = &got[3][(hi * sq + i) * skv..][..skv];
            assert!(db.iter().all(|&v| v == 0.0), "dbias row {hi},{i}: {db:?}");
        }
    }
    assert!(got.iter().flatten().all(|v| v.is_finite()));
    // Case 3: the BOOLEAN mask's first row masks every key.
    let c = &cases()[2];
    let x = inputs(c, 8);
    let got = run_graph(graph(c), &bound(&x), &outs(c)).expect("run");
    let d = c.dims.5;
    assert!(got[0][..d].iter().all(|&v| v == 0.0));
    assert!(got.iter().flatten().all(|v| v.is_finite()));
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
fn sdpa_backward_is_bit_identical_for_1_2_and_5_threads() {
    // Case 1 (GQA, dbias, strided) and case 4 (two query blocks, band).
    for n in [1usize, 4] {
        let c = &cases()[n];
        let x = inputs(c, 300);
        let run = || bits(&run_graph(graph(c), &bound(&x), &outs(c)).expect("run"));
        let one = with_threads(1, run);
        for t in [2, 5] {
            // (`assert!`, not `assert_eq!`: the bit vectors are long.)
            assert!(one == with_threads(t, run), "case {n}, {t} threads differ");
        }
    }
}

/// Executes `ctx` on a case's inputs; returns the output buffers' bytes.
fn execute(ctx: &dyn ExecutionContext, c: &Case, x: &Inputs) -> Vec<Vec<u8>> {
    let ins: Vec<(i64, Vec<u8>)> = bound(x)
        .into_iter()
        .map(|(u, v)| (u, spec_of(c, u).encode(&v)))
        .collect();
    let mut out: Vec<(i64, Vec<u8>)> = outs(c)
        .into_iter()
        .map(|u| (u, vec![0u8; spec_of(c, u).bytes_len()]))
        .collect();
    let mut t: Vec<TensorBinding<'_>> = ins
        .iter()
        .map(|(u, b)| TensorBinding {
            uid: *u,
            data: BufferRef::Host(b),
        })
        .chain(out.iter_mut().map(|(u, b)| TensorBinding {
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
    out.into_iter().map(|(_, b)| b).collect()
}

#[test]
fn saved_and_reloaded_plan_gives_bit_identical_gradients() {
    let c = &cases()[1];
    let x = inputs(c, 400);
    let bytes = graph(c).build();
    let g = OperationGraph::from_bytes(&bytes).expect("graph");
    let e = ReferenceEngine::new();
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &g,
        )
        .expect("plan");
    let ser = e.serialization().expect("hooks");
    let p = ser
        .serialize_execution_context(e.id(), ctx.as_ref())
        .expect("save");
    let loaded = ser
        .create_execution_context_from_serialized(&p)
        .expect("load");
    let want = execute(ctx.as_ref(), c, &x);
    assert!(
        execute(loaded.as_ref(), c, &x) == want,
        "reloaded plan differs"
    );
    assert!(want.iter().all(|b| b.iter().any(|&v| v != 0)));
}

/// The CPU forward of a case (f32, packed): o for q, k, v and the mask.
fn forward_cpu(
    c: &Case,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    mask: Option<&[f32]>,
) -> (Vec<f32>, Vec<f32>) {
    let mut g = GraphBuilder::new("sdpa_fwd");
    let t = |uid, name: &str, d: &[usize]| TensorSpec::new(uid, name, DT::FLOAT, &i64s(d));
    let (b, h, _, sq, _, _, _) = c.dims;
    g.tensor(t(Q, "q", &c.qd()))
        .tensor(t(K, "k", &c.kd()))
        .tensor(t(V, "v", &c.vd()))
        .tensor(t(O, "o", &c.od()))
        .tensor(t(ST, "stats", &[b, h, sq, 1]));
    if let Some(md) = c.mask_dims() {
        g.tensor(t(MASK, "mask", md));
    }
    let a = bwd_args(c);
    g.sdpa(
        "Sdpa_0",
        SdpaAttributesArgs {
            q_tensor_uid: Q,
            k_tensor_uid: K,
            v_tensor_uid: V,
            o_tensor_uid: O,
            stats_tensor_uid: Some(ST),
            generate_stats: Some(true),
            attn_mask_tensor_uid: a.attn_mask_tensor_uid,
            attn_scale_value: a.attn_scale_value,
            causal_mask: a.causal_mask,
            causal_mask_bottom_right: a.causal_mask_bottom_right,
            diagonal_alignment: a.diagonal_alignment,
            left_bound: a.left_bound,
            right_bound: a.right_bound,
            ..Default::default()
        },
    );
    let mut ins = vec![(Q, q.to_vec()), (K, k.to_vec()), (V, v.to_vec())];
    if let Some(m) = mask {
        ins.push((MASK, m.to_vec()));
    }
    let mut r = run_graph(g, &ins, &[O, ST]).expect("forward");
    let st = r.pop().unwrap();
    (r.pop().unwrap(), st)
}

#[test]
fn gradients_equal_finite_differences_of_the_cpu_forward() {
    // GQA, bottom-right causal, scale value, an additive (1, H, S_q, S_kv) mask with one row
    // of −∞ (a fully masked row: zero gradient both ways) and one −∞ entry.
    let mut c = Case::base((2, 4, 2, 5, 6, 3, 4));
    c.causal_br = true;
    c.scale = Scale::Value(0.6);
    c.mask = Mask::Add(vec![1, 4, 5, 6]);
    c.dbias = true;
    let (b, h, _, sq, skv, d, dv) = c.dims;
    let q = random_values(b * h * sq * d, 501, -1.0, 1.0);
    let k = random_values(b * 2 * skv * d, 502, -1.0, 1.0);
    let v = random_values(b * 2 * skv * dv, 503, -1.0, 1.0);
    let r = random_values(b * h * sq * dv, 504, -1.0, 1.0);
    let mut m = random_values(h * sq * skv, 505, -1.0, 1.0);
    // Head 1, row 2: every key −∞.
    m[(sq + 2) * skv..][..skv].fill(f32::NEG_INFINITY);
    m[3] = f32::NEG_INFINITY;
    let (o, stats) = forward_cpu(&c, &q, &k, &v, Some(&m));
    assert!(stats[sq + 2] == f32::NEG_INFINITY && stats[h * sq + sq + 2] == f32::NEG_INFINITY);
    let x = Inputs {
        q: q.clone(),
        k: k.clone(),
        v: v.clone(),
        o,
        d_o: r.clone(),
        stats,
        mask: Some(m.clone()),
    };
    let got = run_graph(graph(&c), &bound(&x), &outs(&c)).expect("backward");
    // The fully masked row of q (batch 0 and 1, head 1, row 2) has dq exactly 0.
    for bi in 0..b {
        let row = &got[0][((bi * h + 1) * sq + 2) * d..][..d];
        assert!(row.iter().all(|&v| v == 0.0), "{row:?}");
    }
    let loss = |q: &[f32], k: &[f32], v: &[f32], m: &[f32]| -> f64 {
        let (o, _) = forward_cpu(&c, q, k, v, Some(m));
        o.iter()
            .zip(&r)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum()
    };
    const EPS: f32 = 5e-3;
    let mut worst = 0f64;
    for (t, name) in ["q", "k", "v", "mask"].iter().enumerate() {
        let base = [&q, &k, &v, &m][t];
        let n = base.len();
        // A few elements spread over the tensor, with the fully masked q row's first element.
        let mut picks: Vec<usize> = (0..7).map(|p| (p * n / 7 + 3 * p) % n).collect();
        if t == 0 {
            picks.push((sq + 2) * d);
        }
        for &i in &picks {
            if !base[i].is_finite() {
                continue;
            }
            let at = |delta: f32| {
                let mut xs = [q.clone(), k.clone(), v.clone(), m.clone()];
                xs[t][i] += delta;
                loss(&xs[0], &xs[1], &xs[2], &xs[3])
            };
            let fd = (at(EPS) - at(-EPS)) / (2.0 * f64::from(EPS));
            let g = f64::from(got[t][i]);
            worst = worst.max((g - fd).abs() / (1.0 + fd.abs()));
            assert!(
                (g - fd).abs() <= 2e-4 * (1.0 + fd.abs()),
                "d{name}[{i}]: backward {g}, finite difference {fd}"
            );
        }
    }
    eprintln!("worst finite-difference error {worst:.2e}");
}

fn refusal(
    c: &Case,
    edit: impl FnOnce(&mut SdpaBackwardAttributesArgs),
    extra: &[TensorSpec],
) -> (PluginStatus, String) {
    let mut g = GraphBuilder::new("sdpa_bwd");
    for s in specs(c).into_iter().chain(extra.iter().cloned()) {
        g.tensor(s);
    }
    let mut a = bwd_args(c);
    edit(&mut a);
    g.sdpa_backward("SdpaBackward_0", a);
    let x = inputs(c, 9);
    match run_graph(g, &bound(&x), &outs(c)) {
        Ok(_) => panic!("planned"),
        Err(e) => (e.status, e.message),
    }
}

#[test]
fn unsupported_attributes_are_refused_at_plan_build_by_name() {
    let c = Case::base((1, 2, 1, 3, 4, 2, 3));
    let extra = [TensorSpec::new(20, "aux", DT::FLOAT, &[1, 1, 1, 1])];
    type Edit = fn(&mut SdpaBackwardAttributesArgs);
    let edits: [(&str, Edit); 11] = [
        ("dropout_probability 0.1", |a| {
            a.dropout_probability = Some(0.1)
        }),
        ("seq_len_q_tensor_uid (uid 20)", |a| {
            a.seq_len_q_tensor_uid = Some(20)
        }),
        ("seq_len_kv_tensor_uid (uid 20)", |a| {
            a.seq_len_kv_tensor_uid = Some(20)
        }),
        ("seed_tensor_uid (uid 20)", |a| a.seed_tensor_uid = Some(20)),
        ("offset_tensor_uid (uid 20)", |a| {
            a.offset_tensor_uid = Some(20)
        }),
        ("dropout_mask_tensor_uid (uid 20)", |a| {
            a.dropout_mask_tensor_uid = Some(20)
        }),
        ("dropout_scale_tensor_uid (uid 20)", |a| {
            a.dropout_scale_tensor_uid = Some(20)
        }),
        ("dropout_scale_inv_tensor_uid (uid 20)", |a| {
            a.dropout_scale_inv_tensor_uid = Some(20)
        }),
        ("alibi_mask true", |a| a.alibi_mask = true),
        ("padding_mask true", |a| a.padding_mask = true),
        (
            "causal_mask and causal_mask_bottom_right are both set",
            |a| {
                a.causal_mask = true;
                a.causal_mask_bottom_right = true;
            },
        ),
    ];
    for (want, edit) in edits {
        let (st, msg) = refusal(&c, edit, &extra);
        assert_eq!(st, PluginStatus::NotApplicable, "{want}: {msg}");
        assert!(
            msg.starts_with("sdpa_backward 'SdpaBackward_0': ") && msg.contains(want),
            "{want}: {msg}"
        );
    }
    // dbias of a BOOLEAN mask, and dbias without a mask.
    let mut b = c.clone();
    b.mask = Mask::Bool(vec![1, 1, 3, 4]);
    let db = TensorSpec::new(DBIAS, "dbias", DT::FLOAT, &[1, 1, 3, 4]);
    let (st, msg) = refusal(
        &b,
        |a| a.dbias_tensor_uid = Some(DBIAS),
        std::slice::from_ref(&db),
    );
    assert_eq!(st, PluginStatus::NotApplicable, "{msg}");
    assert!(
        msg.contains("dbias_tensor_uid (uid 12) of a BOOLEAN attn_mask"),
        "{msg}"
    );
    let (st, msg) = refusal(&c, |a| a.dbias_tensor_uid = Some(DBIAS), &[db]);
    assert_eq!(st, PluginStatus::NotApplicable, "{msg}");
    assert!(msg.contains("attn_mask_tensor_uid is absent"), "{msg}");
    // A gradient whose dims are not its operand's.
    let (st, msg) = refusal(&c, |a| a.dq_tensor_uid = O, &[]);
    assert_eq!(st, PluginStatus::NotApplicable, "{msg}");
    assert!(msg.contains("dq_tensor_uid"), "{msg}");
}
