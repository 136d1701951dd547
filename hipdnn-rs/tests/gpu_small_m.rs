//! The matmul family's 16-row entries (issue 33: decode GEMMs with M = 1–16, MiniLM at one
//! short sentence) on the GPU: for f32, f16 and bf16 (and f32 behind the TF32 knob), graphs
//! the static rule sends to each 16-row variant (spec: row-major B, M = 16, 8 and a batched
//! one; bcol: B as a PyTorch `Linear` weight, M = 16, 5 and 1; generic: odd N or K, M = 1 and
//! 7; two with a fused bias + GELU epilogue) is checked against the CPU reference engine, then saved
//! (`to_compiled_plan_binary`), loaded on a new handle, executed twice (bit-identical to the
//! first output) and re-saved byte-identically.
//!
//! Tolerance vs the CPU reference: |d| ≤ rel·Σ|a·b| + abs per element with (rel, abs) =
//! (1e-4, 1e-5) for f32 (IEEE products, another summation order), (2e-3, 1e-3) for TF32
//! products and (8e-3, 1e-2) for f16/bf16 (f32 accumulation, one rounding of C; the CPU engine
//! rounds as it goes). Without a GPU the test prints `skipped: …` and passes.

mod gpu_support;
use gpu_support::{exec_as as exec, gpu, lcg};
use hipdnn::half::{bf16, f16};
use hipdnn::{
    DataType, Element, Graph, Handle, MatmulAttributes, PointwiseAttributes, PointwiseMode,
    TensorAttributes,
};

/// One graph: C (uid 4) = A (uid 1, `[batch, m, k]`) · B (uid 2, `[batch, k, n]`, column-major
/// with `b_col`), + bias (uid 3, `[1, 1, n]`) then GELU with `epilogue`.
#[derive(Clone, Copy, Debug)]
struct Case {
    batch: i64,
    m: i64,
    n: i64,
    k: i64,
    b_col: bool,
    epilogue: bool,
    /// The variant the static rule must choose: 1 spec, 4 bcol, 0 generic.
    variant: i64,
}

const fn case(
    batch: i64,
    m: i64,
    n: i64,
    k: i64,
    b_col: bool,
    epilogue: bool,
    variant: i64,
) -> Case {
    Case {
        batch,
        m,
        n,
        k,
        b_col,
        epilogue,
        variant,
    }
}

/// Spec and bcol need N, K and the leading strides to be multiples of 16 (M takes any value);
/// odd N or K takes the generic variant.
const CASES: [Case; 8] = [
    case(1, 16, 96, 208, false, false, 1),
    case(1, 16, 96, 208, true, true, 4),
    case(2, 16, 64, 48, false, false, 1),
    case(1, 8, 256, 1024, false, false, 1),
    case(1, 1, 256, 512, true, true, 4),
    case(1, 5, 48, 32, true, false, 4),
    case(1, 1, 130, 300, true, false, 0),
    case(1, 7, 37, 53, false, true, 0),
];

fn graph(c: Case, dt: DataType) -> Graph {
    let mut g = Graph::new();
    g.set_name("small_m")
        .set_io_data_type(dt)
        .set_intermediate_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .data_type(dt)
            .dims([c.batch, c.m, c.k])
            .strides([c.m * c.k, c.k, 1]),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(2)
            .data_type(dt)
            .dims([c.batch, c.k, c.n])
            .strides(if c.b_col {
                [c.k * c.n, 1, c.k]
            } else {
                [c.k * c.n, c.n, 1]
            }),
    );
    let mut y = g.matmul(a, b, MatmulAttributes::new());
    if c.epilogue {
        let bias = g.tensor(
            TensorAttributes::new("bias")
                .uid(3)
                .data_type(dt)
                .dims([1, 1, c.n])
                .strides([c.n, c.n, 1]),
        );
        y = g.pointwise(y, bias, PointwiseAttributes::with_mode(PointwiseMode::Add));
        y = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::GeluFwd));
    }
    g.set_output(y, true).set_uid(y, 4).set_data_type(y, dt);
    g
}

/// The inputs as f32 values (uid, values), already rounded to the element type by `q`.
fn inputs(c: Case, q: impl Fn(f32) -> f32) -> Vec<(i64, Vec<f32>)> {
    let r = |n: i64, seed| {
        lcg(n as usize, seed)
            .into_iter()
            .map(&q)
            .collect::<Vec<_>>()
    };
    let mut v = vec![
        (1, r(c.batch * c.m * c.k, 1)),
        (2, r(c.batch * c.k * c.n, 2)),
    ];
    if c.epilogue {
        v.push((3, r(c.n, 3)));
    }
    v
}

/// Σ|a·b| per output element.
fn magnitude(c: Case, a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut out = Vec::new();
    for bi in 0..c.batch {
        for i in 0..c.m {
            for j in 0..c.n {
                let mut s = 0f32;
                for kk in 0..c.k {
                    let bv = if c.b_col {
                        b[(bi * c.k * c.n + j * c.k + kk) as usize]
                    } else {
                        b[(bi * c.k * c.n + kk * c.n + j) as usize]
                    };
                    s += (a[(bi * c.m * c.k + i * c.k + kk) as usize] * bv).abs();
                }
                out.push(s);
            }
        }
    }
    out
}

/// `block_m`, `block_n` and `spec` of the plan's saved launch values.
fn entry(plan: &[u8]) -> (i64, i64, i64) {
    let env = hipdnn_backend::PlanEnvelope::parse(plan).expect("envelope");
    let p = hipdnn_engines::ingestor::payload::decode_payload(env.plugin_payload).expect("payload");
    let int = |k: &str| match p.launch_values.get(k) {
        Some(hipdnn_engines::ingestor::launch_values::LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    (int("block_m"), int("block_n"), int("spec"))
}

/// Runs every case for one element type; returns the number of cases checked.
fn check<T: Element>(
    gpu: &Handle,
    cpu: &Handle,
    dt: DataType,
    knobs: &[(i64, i64)],
    (rel, abs): (f32, f32),
    to: fn(f32) -> T,
    from: fn(T) -> f32,
) -> usize {
    let q = |x: f32| from(to(x));
    for c in CASES {
        let what = format!("{dt:?} {c:?} knobs {knobs:?}");
        let ins = inputs(c, q);
        let n_out = (c.batch * c.m * c.n) as usize;
        let mut g = graph(c, dt);
        g.build_with_knobs(gpu, knobs).expect("build");
        assert_eq!(g.engine_name().unwrap(), "hipkernel.ingestor.gpu", "{what}");
        let plan = g.to_compiled_plan_binary().expect("save");
        assert_eq!(
            entry(&plan),
            (16, 32, c.variant),
            "{what}: the 16-row entry"
        );
        let y = exec(gpu, &g, &ins, n_out, to, from);
        let mut r = graph(c, dt);
        r.build(cpu).expect("cpu build");
        let want = exec(cpu, &r, &ins, n_out, to, from);
        let mag = magnitude(c, &ins[0].1, &ins[1].1);
        for (i, ((y, w), m)) in y.iter().zip(&want).zip(&mag).enumerate() {
            assert!(
                (y - w).abs() <= rel * m + abs,
                "{what}: element {i}: GPU {y}, CPU {w} (Σ|a·b| {m})"
            );
        }
        // Save → load on a new handle → two executes equal the first → re-save identical.
        let h2 = Handle::gpu().expect("second GPU handle");
        let g2 = Graph::from_compiled_plan_binary(&h2, &plan).expect("load");
        for _ in 0..2 {
            let y2 = exec(&h2, &g2, &ins, n_out, to, from);
            assert_eq!(
                y2.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{what}: the loaded plan"
            );
        }
        assert_eq!(
            g2.to_compiled_plan_binary().expect("re-save"),
            plan,
            "{what}"
        );
    }
    CASES.len()
}

#[test]
fn every_16_row_matmul_variant_matches_the_cpu_reference_and_round_trips() {
    let Some(gpu) = gpu() else { return };
    let cpu = Handle::cpu().expect("cpu handle");
    let mut n = check(&gpu, &cpu, DataType::Float, &[], (1e-4, 1e-5), |x| x, |x| x);
    n += check(
        &gpu,
        &cpu,
        DataType::Half,
        &[],
        (8e-3, 1e-2),
        f16::from_f32,
        f16::to_f32,
    );
    n += check(
        &gpu,
        &cpu,
        DataType::BFloat16,
        &[],
        (8e-3, 1e-2),
        bf16::from_f32,
        bf16::to_f32,
    );
    let cuda = gpu
        .gpu_device()
        .is_some_and(|d| d.arch().starts_with("sm_"));
    if cuda {
        // TF32 entries: CUDA targets only, behind the engine's knob.
        let tf32 = [(hipdnn_engines::ingestor::engine::KNOB_TF32, 1)];
        n += check(
            &gpu,
            &cpu,
            DataType::Float,
            &tf32,
            (2e-3, 1e-3),
            |x| x,
            |x| x,
        );
    }
    println!("{n} small-M cases matched the CPU reference and round-tripped");
}
