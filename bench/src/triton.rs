//! `hipdnn-bench triton [--out PATH] [--md PATH] [--sizes 512,4096]`: the Triton families on the
//! GPU engine (matmul, conv fprop and its fused epilogues, dgrad, wgrad, TF32, benchmarking
//! builds and plan loads), checked and measured in one run.
//!
//! 1. Correctness (fails the run on any miss): f32/f16/bf16 matmul graphs, with and without the
//!    fused bias+ReLU epilogue, over a shape matrix with sizes that are not multiples of 16
//!    (these take the generic entry), a column-major B (by strides), batch 1 and batched
//!    (one broadcast operand), each compared with the CPU reference engine
//!    (`Handle::cpu()`): f32 |d| ≤ 1e-4·Σ|a·b| + 1e-5 (IEEE f32 products, other summation
//!    order); f16/bf16 |d| ≤ 8e-3·Σ|a·b| + 1e-2 (f32 accumulation, one rounding of C; the CPU
//!    engine rounds as it goes).
//! 2. Save → new handle → load with the kpack archives moved away → two executes equal the
//!    original output bit for bit → re-save byte-identical.
//! 3. Speed: matmul f16/bf16/f32 M=N=K ∈ sizes, CUDA/HIP events around 20 executes, median of
//!    5 such rounds, vs `torch.matmul` (cuBLAS, TF32 off) timed the same way in the same run.
//!
//! 4. Conv fprop, conv dgrad and conv wgrad ([`wgrad`]) sections: correctness cases and
//!    batch-32 ResNet-50 rows vs PyTorch; pointwise ADD f32/f16 GB/s at 16.7 M and 268 M
//!    elements vs `torch.add` and a device-to-device copy ([`pointwise`]). `--only
//!    dgrad,wgrad,pointwise,reduce,sdpa` runs just the named sections (JSON to `--out`, their
//!    markdown tables alone to `--md`, which is then overwritten, not spliced);
//!    `HIPDNN_BENCH_ONLY_DGRAD=1` is `--only dgrad`.
//! 5. Softmax, log-softmax, sum, layernorm and rmsnorm ([`reduce`]): correctness checks and
//!    rows of 4096×1024 and 32768×4096 (f16, f32) vs PyTorch.
//! 6. SDPA forward ([`sdpa`]): correctness checks and batch 8 × 16 heads rows (seq 1024 and
//!    4096, head dim 64 and 128, causal and not, f16 and bf16) vs PyTorch's flash backend.
//! 7. Max / average pooling ([`pool`], `--only pool` only): bit-exact checks and ResNet-50
//!    pooling rows (NCHW and NHWC, f16 and f32) vs `F.max_pool2d` / `F.avg_pool2d`.
//! 8. Layernorm / rmsnorm backward ([`norm_bwd`], `--only normbwd` only): checks against the
//!    CPU reference and rows vs PyTorch eager and replayed from a CUDA graph.
//! 9. Batchnorm backward, alone and behind a fused ReLU backward ([`bn_bwd`], `--only bnbwd`
//!    only): checks against the CPU reference and ResNet-50 batch-32 channels-last rows vs
//!    PyTorch eager and replayed from a CUDA graph.
//!
//! 10. LLM GEMMs ([`llm`], `--only llm` only): decode and prefill rows vs `torch.matmul`.
//! 11. The shapes users run ([`shapes`], `--only shapes` only): the ResNet-50 stem and stride-2
//!     convs, grouped and depthwise convs, grouped-query, decode and odd-size attention,
//!     vocabulary-size softmax and model-width norms; a shape the GPU engine does not take is a
//!     `refused` row, not a failure.
//!
//! **Two PyTorch peers in every section** (issue 33): each peer call is timed eager (CUDA events
//! around 20 calls from Python, dispatch included) and replayed from a CUDA graph of the same
//! 20 calls (kernel-only), by the shared prelude's `peer`/`eager_ms`/`graph_ms`. Every row
//! carries `torch_ms` and `ratio_vs_torch` (eager) and `torch_graph_ms` and `ratio_vs_graph`
//! (replay; `null` when the capture failed, the reason in the peer's `graph_errors`), a ratio
//! being PyTorch's ms ÷ ours (above 1 we are faster); every table shows both.
//!
//! `HIPDNN_BENCH_SWEEP=1`: the reduce and sdpa rows are also built with
//! `Graph::build_benchmarked` and timed (`benchmarked_ms` in the JSON); the engine's
//! `hipdnn benchmark:` lines print every candidate's time, so an archive packed with extra
//! configs sweeps them against PyTorch in one run.
//!
//! Writes JSON, and with `--md` replaces the block between `<!-- triton-bench:begin -->` and
//! `<!-- triton-bench:end -->`. Without a GPU it prints `skipped: no GPU` and exits 0.

use half::{bf16, f16};
use hipdnn::{
    Buffer, DataType, Element, Graph, Handle, MatmulAttributes, PointwiseAttributes, PointwiseMode,
    TensorAttributes, VariantPack,
};
use hipdnn_hip::{Event, Stream};
use serde_json::json;

mod bn_bwd;
mod llm;
mod norm_bwd;
mod pointwise;
mod pool;
mod reduce;
mod sdpa;
mod sdpa_bwd;
mod shapes;
mod wgrad;

type R<T> = Result<T, String>;

/// What a checked-and-timed section returns: its correctness checks, its timed rows and the
/// PyTorch peer's report.
type Section = R<(
    Vec<serde_json::Value>,
    Vec<serde_json::Value>,
    serde_json::Value,
)>;

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

/// `HIPDNN_BENCH_SWEEP` is set: also time benchmarked builds (module docs).
fn sweep() -> bool {
    std::env::var_os("HIPDNN_BENCH_SWEEP").is_some()
}

/// Put before every PyTorch peer script (issue 33 deliverable 1: every section times PyTorch
/// twice):
/// - `json`, `sys`, `torch` and `F` (`torch.nn.functional`) imported; without PyTorch or a
///   CUDA/ROCm device the script prints `{"error": …}` and exits 0 here;
/// - `eager_ms(f)`: the median ms per call of `f` called from Python, 5 rounds of 20 calls
///   between CUDA events after 5 warm-up calls (what a PyTorch user's loop costs, Python
///   dispatch included);
/// - `graph_ms(f)`: the median ms per call of `f` replayed from a CUDA graph of 20 calls (5
///   rounds between CUDA events, after 3 warm-up calls on a side stream), or `None` when the
///   capture fails (the reason appended to `GRAPH_ERRORS`): the kernel-only peer;
/// - `peer(out, key, f)`: both, as `out["ms"][key]` and `out["graph_ms"][key]`, and
///   `out["graph_errors"]`.
const TORCH_PRELUDE: &str = r#"
import json, sys
try:
    import torch
    import torch.nn.functional as F
    assert torch.cuda.is_available()
except Exception as ex:
    print(json.dumps({"error": str(ex)})); sys.exit(0)
GRAPH_ERRORS = []
def eager_ms(f, calls=20):
    import torch
    for _ in range(5): f()
    s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rs = []
    for _ in range(5):
        s.record()
        for _ in range(calls): f()
        t.record(); t.synchronize(); rs.append(s.elapsed_time(t) / calls)
    rs.sort(); return rs[2]
def peer(out, key, f):
    out.setdefault("ms", {})[key] = eager_ms(f)
    out.setdefault("graph_ms", {})[key] = graph_ms(f)
    out["graph_errors"] = GRAPH_ERRORS
def graph_ms(f, calls=20):
    import torch
    try:
        st = torch.cuda.Stream(); st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            for _ in range(3): f()
        torch.cuda.current_stream().wait_stream(st)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls): f()
        g.replay(); torch.cuda.synchronize()
        s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        rs = []
        for _ in range(5):
            s.record(); g.replay(); t.record(); t.synchronize(); rs.append(s.elapsed_time(t) / calls)
        rs.sort(); return rs[2]
    except Exception as ex:
        GRAPH_ERRORS.append(str(ex)[:200]); return None
"#;

/// A table cell of milliseconds (`0.1234 ms`), `n/a` when the JSON value is not a number.
pub(crate) fn ms_cell(v: &serde_json::Value) -> String {
    v.as_f64()
        .map(|v| format!("{v:.4} ms"))
        .unwrap_or_else(|| "n/a".into())
}

/// A table cell of a ratio (`1.23×`), `n/a` when the JSON value is not a number.
fn ratio_cell(v: &serde_json::Value) -> String {
    v.as_f64()
        .map(|v| format!("{v:.2}×"))
        .unwrap_or_else(|| "n/a".into())
}

/// The PyTorch peer of a timed row, added to it: `torch_ms` (eager) and `torch_graph_ms`
/// (replayed from a CUDA graph, kernel-only) from `torch["ms"][key]` and
/// `torch["graph_ms"][key]` (`key` a string for a script that fills dicts, an index for one
/// that fills lists), and our speed against each, `ratio_vs_torch` and `ratio_vs_graph` (the
/// peer's ms ÷ `row["ms"]`: above 1 we are faster). A figure the peer lacks (no PyTorch, a
/// failed capture) is `null`.
pub(crate) fn with_peer<I: serde_json::value::Index + Copy>(
    mut row: serde_json::Value,
    torch: &serde_json::Value,
    key: I,
) -> serde_json::Value {
    let ms = row["ms"].as_f64();
    let eager = torch["ms"].get(key).and_then(|v| v.as_f64());
    let graph = torch["graph_ms"].get(key).and_then(|v| v.as_f64());
    let ratio = |p: Option<f64>| p.zip(ms).map(|(p, ms)| p / ms);
    if let Some(o) = row.as_object_mut() {
        o.insert("torch_ms".into(), json!(eager));
        o.insert("ratio_vs_torch".into(), json!(ratio(eager)));
        o.insert("torch_graph_ms".into(), json!(graph));
        o.insert("ratio_vs_graph".into(), json!(ratio(graph)));
    }
    row
}

/// The header cells of [`peer_cells`].
const PEER_HEADER: &str = "PyTorch eager | ours/eager | PyTorch CUDA graph | ours/graph";

/// The four table cells of a row's PyTorch peer ([`with_peer`]'s fields), joined by ` | `.
fn peer_cells(r: &serde_json::Value) -> String {
    format!(
        "{} | {} | {} | {}",
        ms_cell(&r["torch_ms"]),
        ratio_cell(&r["ratio_vs_torch"]),
        ms_cell(&r["torch_graph_ms"]),
        ratio_cell(&r["ratio_vs_graph"])
    )
}

/// Runs a PyTorch peer script (`python3 -c script arg`) and parses the JSON it prints on
/// stdout; when python3 cannot start or prints no JSON, `{"error": <why or its stderr>}`
/// (the tables then show `n/a` for the peer).
pub(crate) fn torch_json(script: &str, arg: &str) -> serde_json::Value {
    let script = format!("{TORCH_PRELUDE}{script}");
    match std::process::Command::new("python3")
        .args(["-c", &script, arg])
        .output()
    {
        Ok(o) => serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| json!({"error": String::from_utf8_lossy(&o.stderr).to_string()})),
        Err(x) => json!({"error": x.to_string()}),
    }
}

/// Median milliseconds per call of `exec` on `dev`'s default stream: `warmup` untimed calls,
/// then 5 rounds of 20 calls between two CUDA/HIP events; the middle round (every GPU table
/// of this bench is timed this way, PyTorch's side the same way with `torch.cuda.Event`).
/// Errors: the first failing call, event or stream error, as text.
fn median_ms<T>(
    dev: &std::sync::Arc<hipdnn_hip::safe::Device>,
    warmup: usize,
    mut exec: impl FnMut() -> R<T>,
) -> R<f64> {
    let stream = Stream::default_stream(dev);
    let (ev0, ev1) = (Event::new(dev).map_err(e)?, Event::new(dev).map_err(e)?);
    for _ in 0..warmup {
        exec()?;
    }
    let mut rounds = Vec::new();
    for _ in 0..5 {
        ev0.record(&stream).map_err(e)?;
        for _ in 0..20 {
            exec()?;
        }
        ev1.record(&stream).map_err(e)?;
        ev1.synchronize().map_err(e)?;
        rounds.push(f64::from(ev0.elapsed_ms(&ev1).map_err(e)?) / 20.0);
    }
    rounds.sort_by(f64::total_cmp);
    Ok(rounds[2])
}

/// One matmul case: batch dims of A/B/C, M, N, K, B column-major, epilogue (bias+relu).
#[derive(Clone, Copy, Debug)]
struct Case {
    ba: i64,
    bb: i64,
    m: i64,
    n: i64,
    k: i64,
    b_col: bool,
    epilogue: bool,
}

fn packed(d: &[i64]) -> Vec<i64> {
    let mut s = vec![1; d.len()];
    for i in (0..d.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * d[i + 1];
    }
    s
}

#[path = "triton_fused.rs"]
mod fused;
#[path = "triton_plans.rs"]
mod plans;

fn graph(c: Case, dt: DataType) -> Graph {
    let (mut g, mut y) = mm_core(c, dt);
    if c.epilogue {
        let bias = g.tensor(
            TensorAttributes::new("bias")
                .uid(3)
                .data_type(dt)
                .dims([1, 1, c.n])
                .strides([c.n, c.n, 1]),
        );
        y = g.pointwise(y, bias, PointwiseAttributes::with_mode(PointwiseMode::Add));
        y = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    }
    g.set_output(y, true).set_uid(y, 4);
    g
}

/// The matmul graph without epilogue or output marking: (graph, C).
fn mm_core(c: Case, dt: DataType) -> (Graph, hipdnn::TensorId) {
    let mut g = Graph::new();
    g.set_name("mm")
        .set_io_data_type(dt)
        .set_intermediate_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let batch = c.ba.max(c.bb);
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .data_type(dt)
            .dims([c.ba, c.m, c.k])
            .strides(packed(&[c.ba, c.m, c.k])),
    );
    let bs = if c.b_col {
        vec![c.k * c.n, 1, c.k]
    } else {
        packed(&[c.bb, c.k, c.n])
    };
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(2)
            .data_type(dt)
            .dims([c.bb, c.k, c.n])
            .strides(bs),
    );
    let y = g.matmul(a, b, MatmulAttributes::new());
    let _ = batch;
    (g, y)
}

fn vals(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
        })
        .collect()
}

trait Num: Element {
    fn of(v: f32) -> Self;
    fn f(self) -> f32;
}
impl Num for f32 {
    fn of(v: f32) -> Self {
        v
    }
    fn f(self) -> f32 {
        self
    }
}
impl Num for f16 {
    fn of(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}
impl Num for bf16 {
    fn of(v: f32) -> Self {
        bf16::from_f32(v)
    }
    fn f(self) -> f32 {
        self.to_f32()
    }
}

/// Runs `g` on `h` with inputs (uid, data); returns C.
fn run<T: Num>(h: &Handle, g: &Graph, ins: &[(i64, Vec<T>)], n_out: usize) -> R<Vec<T>> {
    let bufs: Vec<(i64, Buffer<T>)> = ins
        .iter()
        .map(|(u, v)| Buffer::from_slice_on(h, v).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut y = Buffer::<T>::alloc(h, n_out).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
    let mut pack = VariantPack::new();
    for (u, b) in &bufs {
        pack = pack.with(*u, b);
    }
    pack = pack.with(4, &mut y);
    g.execute(h, pack, Some(&mut ws)).map_err(e)?;
    y.to_vec().map_err(e)
}

fn inputs<T: Num>(c: Case) -> Vec<(i64, Vec<T>)> {
    let q = |v: Vec<f32>| v.into_iter().map(T::of).collect::<Vec<T>>();
    let mut v = vec![
        (1, q(vals((c.ba * c.m * c.k) as usize, 1))),
        (2, q(vals((c.bb * c.k * c.n) as usize, 2))),
    ];
    if c.epilogue {
        v.push((3, q(vals(c.n as usize, 3))));
    }
    v
}

/// Σ|a·b| per output element (for the tolerance).
fn magnitude<T: Num>(c: Case, ins: &[(i64, Vec<T>)]) -> Vec<f32> {
    let (a, b) = (&ins[0].1, &ins[1].1);
    let batch = c.ba.max(c.bb);
    let mut out = Vec::new();
    for bi in 0..batch {
        let (oa, ob) = (
            if c.ba == 1 { 0 } else { bi * c.m * c.k },
            if c.bb == 1 { 0 } else { bi * c.k * c.n },
        );
        for i in 0..c.m {
            for j in 0..c.n {
                let mut s = 0f32;
                for kk in 0..c.k {
                    let bv = if c.b_col {
                        b[(ob + j * c.k + kk) as usize]
                    } else {
                        b[(ob + kk * c.n + j) as usize]
                    };
                    s += (a[(oa + i * c.k + kk) as usize].f() * bv.f()).abs();
                }
                out.push(s);
            }
        }
    }
    out
}

fn check_case<T: Num>(gpu: &Handle, cpu: &Handle, c: Case, dt: DataType) -> R<serde_json::Value> {
    let ins = inputs::<T>(c);
    let n_out = (c.ba.max(c.bb) * c.m * c.n) as usize;
    let mut gg = graph(c, dt);
    gg.build(gpu).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    let got = run(gpu, &gg, &ins, n_out)?;
    let mut gc = graph(c, dt);
    gc.build(cpu).map_err(e)?;
    let want = run(cpu, &gc, &ins, n_out)?;
    let mag = magnitude(c, &ins);
    let (rel, abs) = if dt == DataType::Float {
        (1e-4, 1e-5)
    } else {
        (8e-3, 1e-2)
    };
    let mut worst = 0f32;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let d = (g.f() - w.f()).abs();
        let tol = rel * mag[i] + abs;
        if d.is_nan() || d > tol {
            return Err(format!(
                "{dt:?} {c:?}: element {i}: gpu {} cpu {} (|d| {d} > {tol}) on {engine}",
                g.f(),
                w.f()
            ));
        }
        worst = worst.max(d / tol);
    }
    Ok(
        json!({"case": format!("{c:?}"), "dtype": format!("{dt:?}"), "engine": engine, "worst_fraction_of_tolerance": worst}),
    )
}

/// Save → new handle → load with archives moved → two executes equal → re-save identical.
/// Runs in a child process (`hipdnn-bench triton-reload <case> <dtype>`) whose
/// `HIPDNN_KERNEL_DIR` is a copy of the packed kernels, so the archives can be removed.
fn save_reload(case: usize, dt: &str) -> R<serde_json::Value> {
    let tmp = std::env::temp_dir().join(format!("hipdnn-triton-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let location = hipdnn_engines::gpu::resolve_kernel_location();
    hipdnn_engines::gpu::export_kernels(&location, &tmp).map_err(e)?;
    let out = std::process::Command::new(std::env::current_exe().map_err(e)?)
        .args(["triton-reload", &case.to_string(), dt])
        .env("HIPDNN_KERNEL_DIR", &tmp)
        .output()
        .map_err(e);
    let _ = std::fs::remove_dir_all(&tmp);
    let out = out?;
    if !out.status.success() {
        return Err(format!(
            "save/reload case {case} {dt}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(e)
}

/// The child side of [`save_reload`]: the kernel dir is a scratch copy. Cases ≥ 100 are conv
/// cases (NHWC/NCHW conv + bias + ReLU, see [`reload_conv_case`]), ≥ 200 wgrad cases
/// ([`wgrad::reload_case`]), ≥ 300 fused conv + bias + add + ReLU cases
/// ([`fused::reload_fused`]).
pub fn reload_child(case: usize, dt: &str) -> R<()> {
    let dtype = match dt {
        "f32" => DataType::Float,
        "f16" => DataType::Half,
        _ => DataType::BFloat16,
    };
    let v = if case >= 300 {
        fused::reload_fused(case - 300, dtype)
    } else if case >= 200 {
        let c = wgrad::reload_case(case - 200);
        let mk = || wgrad::graph(c, dtype);
        let n = wgrad::dw_len(c);
        let label = format!("wgrad {c:?}");
        match dt {
            "f32" => reload_steps::<f32>(&mk, wgrad::inputs(c), n, &label),
            "f16" => reload_steps::<f16>(&mk, wgrad::inputs(c), n, &label),
            _ => reload_steps::<bf16>(&mk, wgrad::inputs(c), n, &label),
        }
    } else if case >= 100 {
        let c = reload_conv_case(case - 100);
        let mk = || conv_graph(c, dtype);
        match dt {
            "f32" => reload_steps::<f32>(&mk, conv_inputs(c), c.y_len(), &format!("{c:?}")),
            "f16" => reload_steps::<f16>(&mk, conv_inputs(c), c.y_len(), &format!("{c:?}")),
            _ => reload_steps::<bf16>(&mk, conv_inputs(c), c.y_len(), &format!("{c:?}")),
        }
    } else {
        let c = *CASES.get(case).ok_or("no such case")?;
        let mk = || graph(c, dtype);
        let n_out = (c.ba.max(c.bb) * c.m * c.n) as usize;
        match dt {
            "f32" => reload_steps::<f32>(&mk, inputs(c), n_out, &format!("{c:?}")),
            "f16" => reload_steps::<f16>(&mk, inputs(c), n_out, &format!("{c:?}")),
            _ => reload_steps::<bf16>(&mk, inputs(c), n_out, &format!("{c:?}")),
        }
    }?;
    println!("{v}");
    Ok(())
}

/// Conv cases of the save/reload step: 0 = NHWC spec shape, 1 = NCHW with odd sizes, 2 = NCHW
/// on the transposing nchwt entry (a workspace and two launches per execute).
fn reload_conv_case(i: usize) -> ConvCase {
    if i == 2 {
        return ConvCase {
            n: 2,
            c: 32,
            h: 15,
            k: 48,
            r: 3,
            pad: 1,
            stride: 2,
            dil: 1,
            groups: 1,
            nhwc: false,
            epilogue: true,
        };
    }
    if i == 0 {
        ConvCase {
            n: 2,
            c: 32,
            h: 9,
            k: 48,
            r: 3,
            pad: 1,
            stride: 2,
            dil: 1,
            groups: 1,
            nhwc: true,
            epilogue: true,
        }
    } else {
        ConvCase {
            n: 1,
            c: 3,
            h: 13,
            k: 5,
            r: 3,
            pad: 1,
            stride: 1,
            dil: 1,
            groups: 1,
            nhwc: false,
            epilogue: true,
        }
    }
}

fn reload_steps<T: Num>(
    mk: &dyn Fn() -> Graph,
    ins: Vec<(i64, Vec<T>)>,
    n_out: usize,
    label: &str,
) -> R<serde_json::Value> {
    let location = hipdnn_engines::gpu::resolve_kernel_location();
    let dir = location
        .dir()
        .ok_or_else(|| {
            format!("the kernels must be a directory (HIPDNN_KERNEL_DIR), not {location}")
        })?
        .to_path_buf();
    let h = Handle::gpu().map_err(e)?;
    let mut g = mk();
    let t0 = std::time::Instant::now();
    g.build(&h).map_err(e)?;
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let first = run(&h, &g, &ins, n_out)?;
    let plan = g.to_compiled_plan_binary().map_err(e)?;
    let mut moved = 0;
    for d in std::fs::read_dir(&dir).map_err(e)? {
        for f in std::fs::read_dir(d.map_err(e)?.path()).map_err(e)? {
            let p = f.map_err(e)?.path();
            if p.extension().is_some_and(|x| x == "kpack") {
                std::fs::remove_file(&p).map_err(e)?;
                moved += 1;
            }
        }
    }
    let h2 = Handle::gpu().map_err(e)?;
    let t = std::time::Instant::now();
    let g2 = Graph::from_compiled_plan_binary(&h2, &plan).map_err(e)?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let r1 = run(&h2, &g2, &ins, n_out)?;
    let r2 = run(&h2, &g2, &ins, n_out)?;
    let same = |a: &[T], b: &[T]| {
        a.iter()
            .zip(b)
            .all(|(x, y)| x.f().to_bits() == y.f().to_bits())
    };
    if !same(&first, &r1) || !same(&r1, &r2) {
        return Err(format!("{label}: loaded plan output differs"));
    }
    let again = g2.to_compiled_plan_binary().map_err(e)?;
    if again != plan {
        return Err(format!("{label}: re-save is not byte-identical"));
    }
    Ok(
        json!({"case": label, "engine": g2.engine_name().map_err(e)?,
        "archives_removed": moved, "plan_bytes": plan.len(), "build_ms": build_ms,
        "load_ms": load_ms, "ok": true}),
    )
}

/// Median ms per execute: 5 rounds of 20 executes between events.
fn time_mm<T: Num>(h: &Handle, n: i64, dt: DataType) -> R<(f64, f64, String)> {
    time_mm_knobs::<T>(h, n, dt, &[])
}

/// [`time_mm`] built with engine knob choices (`Graph::build_with_knobs`).
fn time_mm_knobs<T: Num>(
    h: &Handle,
    n: i64,
    dt: DataType,
    knobs: &[(i64, i64)],
) -> R<(f64, f64, String)> {
    let c = Case {
        ba: 1,
        bb: 1,
        m: n,
        n,
        k: n,
        b_col: false,
        epilogue: false,
    };
    let mut g = graph(c, dt);
    let t0 = std::time::Instant::now();
    g.build_with_knobs(h, knobs).map_err(e)?;
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = h.gpu_device().ok_or("this handle executes on the CPU")?;
    let a = Buffer::from_slice_on(h, &vec![T::of(0.01); (n * n) as usize]).map_err(e)?;
    let b = Buffer::from_slice_on(h, &vec![T::of(0.02); (n * n) as usize]).map_err(e)?;
    let mut y = Buffer::<T>::alloc(h, (n * n) as usize).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
    let exec = || {
        let pack = VariantPack::new().with(1, &a).with(2, &b).with(4, &mut y);
        g.execute(h, pack, Some(&mut ws)).map_err(e)
    };
    let ms = median_ms(dev, 5, exec)?;
    Ok((ms, build_ms, engine))
}

const TORCH_MM: &str = r#"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
out = {"torch": torch.__version__, "ms": {}, "graph_ms": {}}
for n in json.loads(sys.argv[1]):
    for name, dt in [("f16", torch.float16), ("bf16", torch.bfloat16), ("f32", torch.float32)]:
        a = torch.full((n, n), 0.01, device="cuda", dtype=dt); b = torch.full((n, n), 0.02, device="cuda", dtype=dt)
        peer(out, f"{name}_{n}", lambda: torch.matmul(a, b))
print(json.dumps(out))
"#;

const CASES: [Case; 8] = [
    Case {
        ba: 1,
        bb: 1,
        m: 64,
        n: 64,
        k: 64,
        b_col: false,
        epilogue: false,
    },
    Case {
        ba: 1,
        bb: 1,
        m: 100,
        n: 37,
        k: 53,
        b_col: false,
        epilogue: false,
    },
    Case {
        ba: 1,
        bb: 1,
        m: 33,
        n: 65,
        k: 17,
        b_col: false,
        epilogue: true,
    },
    Case {
        ba: 3,
        bb: 3,
        m: 48,
        n: 80,
        k: 32,
        b_col: false,
        epilogue: false,
    },
    Case {
        ba: 2,
        bb: 1,
        m: 128,
        n: 96,
        k: 64,
        b_col: false,
        epilogue: true,
    },
    Case {
        ba: 1,
        bb: 1,
        m: 64,
        n: 48,
        k: 40,
        b_col: true,
        epilogue: false,
    },
    Case {
        ba: 1,
        bb: 1,
        m: 256,
        n: 512,
        k: 256,
        b_col: false,
        epilogue: true,
    },
    Case {
        ba: 1,
        bb: 1,
        m: 1024,
        n: 1024,
        k: 1024,
        b_col: false,
        epilogue: false,
    },
];

/// The `triton` subcommand.
pub fn triton(out: &str, md: Option<&str>, sizes: &[i64], only: Option<&str>) -> R<()> {
    let gpu = match Handle::gpu() {
        Ok(h) => h,
        Err(x) => {
            println!("skipped: {}", x.message);
            return Ok(());
        }
    };
    let cpu = Handle::cpu().map_err(e)?;
    println!("{gpu:?}");
    let only = only
        .map(str::to_string)
        .or_else(|| std::env::var_os("HIPDNN_BENCH_ONLY_DGRAD").map(|_| "dgrad".to_string()));
    if let Some(only) = only {
        return backward_sections(&gpu, &cpu, out, md, &only);
    }
    let mut checks = Vec::new();
    for c in CASES {
        for dt in [DataType::Float, DataType::Half, DataType::BFloat16] {
            let r = match dt {
                DataType::Float => check_case::<f32>(&gpu, &cpu, c, dt),
                DataType::Half => check_case::<f16>(&gpu, &cpu, c, dt),
                _ => check_case::<bf16>(&gpu, &cpu, c, dt),
            }?;
            println!("check: {r}");
            checks.push(r);
        }
    }
    let mut reloads = Vec::new();
    for (c, dt) in [
        (1, "f32"),
        (6, "f16"),
        (4, "bf16"),
        (100, "f16"),
        (101, "f32"),
        (102, "f16"),
        (102, "f32"),
        (200, "f16"),
        (201, "f32"),
        (202, "bf16"),
        (300, "f16"),
        (301, "bf16"),
        (302, "f16"),
    ] {
        let r = save_reload(c, dt)?;
        println!("save/reload: {r}");
        reloads.push(r);
    }
    let torch = {
        let arg = serde_json::to_string(sizes).unwrap_or_default();
        torch_json(TORCH_MM, &arg)
    };
    let mut rows = Vec::new();
    for &n in sizes {
        for (name, dt) in [
            ("f16", DataType::Half),
            ("bf16", DataType::BFloat16),
            ("f32", DataType::Float),
        ] {
            let (ms, build_ms, engine) = match dt {
                DataType::Float => time_mm::<f32>(&gpu, n, dt),
                DataType::Half => time_mm::<f16>(&gpu, n, dt),
                _ => time_mm::<bf16>(&gpu, n, dt),
            }?;
            let tflops = 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
            let row = json!({"dtype": name, "n": n, "ms": ms, "tflops": tflops,
                "build_ms": build_ms, "plan": engine});
            let row = with_peer(row, &torch, format!("{name}_{n}").as_str());
            println!("matmul: {row}");
            rows.push(row);
        }
    }
    let (conv_checks, conv_rows, torch_conv) = if sizes.is_empty() {
        (Vec::new(), Vec::new(), json!(null))
    } else {
        conv_section(&gpu, &cpu)?
    };
    let fused_checks = fused::fused_section(&gpu, &cpu)?;
    let tf32 = if sizes.is_empty() {
        json!(null)
    } else {
        fused::tf32_section(&gpu, &cpu)?
    };
    let plan_rows = if sizes.is_empty() {
        Vec::new()
    } else {
        plans::plans_section(&gpu)?
    };
    let (dgrad_checks, dgrad_rows) = if sizes.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        dgrad_section(&gpu, &cpu)?
    };
    let (wgrad_checks, wgrad_rows, torch_wgrad) = if sizes.is_empty() {
        (Vec::new(), Vec::new(), json!(null))
    } else {
        wgrad::section(&gpu, &cpu)?
    };
    let (pw_rows, torch_pw) = if sizes.is_empty() {
        (Vec::new(), json!(null))
    } else {
        pointwise::section(&gpu)?
    };
    let (reduce_checks, reduce_rows, torch_reduce) = if sizes.is_empty() {
        (Vec::new(), Vec::new(), json!(null))
    } else {
        reduce::section(&gpu, &cpu)?
    };
    let (sdpa_checks, sdpa_rows, torch_sdpa) = if sizes.is_empty() {
        (Vec::new(), Vec::new(), json!(null))
    } else {
        sdpa::section(&gpu, &cpu)?
    };
    let device = format!("{:?}", gpu.device());
    let report = json!({"device": device, "checks": checks, "save_reload": reloads,
        "pointwise": pw_rows, "torch_pointwise": torch_pw,
        "reduce_checks": reduce_checks, "reduce": reduce_rows, "torch_reduce": torch_reduce,
        "sdpa_checks": sdpa_checks, "sdpa": sdpa_rows, "torch_sdpa": torch_sdpa,
        "dgrad_checks": dgrad_checks, "dgrad": dgrad_rows,
        "wgrad_checks": wgrad_checks, "wgrad": wgrad_rows, "torch_wgrad": torch_wgrad,
        "matmul": rows, "torch": torch, "conv_checks": conv_checks, "conv": conv_rows,
        "fused_checks": fused_checks, "plans": plan_rows, "tf32": tf32,
        "torch_conv": torch_conv});
    if let Some(dir) = std::path::Path::new(out).parent() {
        std::fs::create_dir_all(dir).map_err(e)?;
    }
    std::fs::write(out, serde_json::to_string_pretty(&report).map_err(e)?).map_err(e)?;
    println!("wrote {out}");
    if let Some(md) = md {
        let mut t = format!(
            "Command: `hipdnn-bench triton --md docs/PERFORMANCE.md` on {device}; torch {} (cuBLAS), TF32 off; CUDA events around 20 executes, median of 5 rounds. {} matmul and {} fused-epilogue (scale, bias, residual, ReLU/GELU/GELU-tanh/sigmoid/tanh/SiLU on matmul and conv) correctness cases vs the CPU reference passed; {} save → load (archives removed) → execute ×2 → re-save round trips passed (matmul, conv + bias + ReLU, conv + bias + add + ReLU, wgrad).\n\n",
            torch["torch"],
            checks.len(),
            fused_checks.len(),
            reloads.len()
        );
        t += &format!(
            "| matmul M=N=K | dtype | hipdnn-rs (Triton) | TFLOP/s | {PEER_HEADER} |\n|---|---|---|---|---|---|---|---|\n"
        );
        for r in &rows {
            t += &format!(
                "| {} | {} | {:.3} ms | {:.0} | {} |\n",
                r["n"],
                r["dtype"].as_str().unwrap_or_default(),
                r["ms"].as_f64().unwrap_or(0.0),
                r["tflops"].as_f64().unwrap_or(0.0),
                peer_cells(r),
            );
        }
        t += &format!(
            "\nConv fprop + bias + ReLU (one fused launch; {} conv correctness cases passed) vs PyTorch `relu(conv2d(x, w, b))` (cuDNN, `cudnn.benchmark`, channels_last for NHWC, TF32 off), torch {} cuDNN {}:\n\n| n | layer (c, h, k, r, pad, stride) | dtype | layout | hipdnn-rs (static rule) | TFLOP/s | {} | benchmarked plan | its speed vs eager |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
            conv_checks.len(),
            torch_conv["torch"],
            torch_conv["cudnn"],
            PEER_HEADER
        );
        for r in &conv_rows {
            t += &format!(
                "| {} | {} | {} | {} | {:.3} ms | {:.0} | {} | {:.3} ms | {} |\n",
                r["n"],
                r["layer"],
                r["dtype"].as_str().unwrap_or_default(),
                r["layout"].as_str().unwrap_or_default(),
                r["ms"].as_f64().unwrap_or(0.0),
                r["tflops"].as_f64().unwrap_or(0.0),
                peer_cells(r),
                r["bench_ms"].as_f64().unwrap_or(0.0),
                ratio_cell(&r["ratio_bench_vs_torch"]),
            );
        }
        t += "\n";
        t += &dgrad_table(dgrad_checks.len(), &dgrad_rows);
        if !tf32.is_null() {
            t += &format!(
                "\nTF32 behind the engine knob (`KNOB_TF32`, `Graph::build_with_knobs`): matmul 4096³ f32 {:.3} ms with TF32 products vs {:.3} ms IEEE (same run); a 256×512×256 TF32 result stays within {:.2} of its TF32 tolerance (2e-3·Σ|a·b| + 1e-3) against the CPU reference.\n",
                tf32["matmul_4096_tf32_ms"].as_f64().unwrap_or(0.0),
                tf32["matmul_4096_ieee_ms"].as_f64().unwrap_or(0.0),
                tf32["worst_fraction_of_tf32_tolerance"]
                    .as_f64()
                    .unwrap_or(0.0),
            );
        }
        t += "\nPlan load vs build, same graph, same run (wall clock): `build` = static rule, `build_benchmarked` = every applicable kernel timed on the device (2 warm-up launches, median of 5 rounds of 3 launches between events), `from_compiled_plan_binary` = the benchmarked plan's saved bytes on a new handle (median of 5). *Resident*: loaded while the benchmarked plan is alive, so the load reuses its resident module (no module load); *cold*: loaded after that plan is dropped, so each load calls `cuModuleLoadData`:\n\n| graph | build | build_benchmarked | plan load, resident | benchmarked build / load | plan load, cold | benchmarked build / cold load |\n|---|---|---|---|---|---|---|\n";
        for r in &plan_rows {
            t += &format!(
                "| {} | {:.2} ms | {:.2} ms | {:.3} ms | {:.0}× | {:.3} ms | {:.0}× |\n",
                r["graph"].as_str().unwrap_or_default(),
                r["build_ms"].as_f64().unwrap_or(0.0),
                r["bench_build_ms"].as_f64().unwrap_or(0.0),
                r["load_ms"].as_f64().unwrap_or(0.0),
                r["bench_build_over_load"].as_f64().unwrap_or(0.0),
                r["cold_load_ms"].as_f64().unwrap_or(0.0),
                r["bench_build_over_cold_load"].as_f64().unwrap_or(0.0),
            );
        }
        t += &wgrad::table(wgrad_checks.len(), &wgrad_rows, &torch_wgrad);
        if !pw_rows.is_empty() {
            t += &pointwise::table(&pw_rows, &torch_pw);
        }
        if !reduce_rows.is_empty() {
            t += &reduce::table(reduce_checks.len(), &reduce_rows, &torch_reduce);
        }
        if !sdpa_rows.is_empty() {
            t += &sdpa::table(sdpa_checks.len(), &sdpa_rows, &torch_sdpa);
        }
        let text = std::fs::read_to_string(md).map_err(e)?;
        let (b, en) = ("<!-- triton-bench:begin -->", "<!-- triton-bench:end -->");
        let new = match (text.find(b), text.find(en)) {
            (Some(i), Some(j)) if i < j => format!("{}{b}\n{t}{}", &text[..i], &text[j..]),
            _ => format!("{text}\n{b}\n{t}{en}\n"),
        };
        std::fs::write(md, new).map_err(e)?;
        println!("updated {md}");
    }
    Ok(())
}

/// One conv case: n, c, h (=w), k, r (=s), pad, stride, dilation, groups, NHWC, bias+ReLU.
#[derive(Clone, Copy, Debug)]
pub struct ConvCase {
    n: i64,
    c: i64,
    h: i64,
    k: i64,
    r: i64,
    pad: i64,
    stride: i64,
    dil: i64,
    groups: i64,
    nhwc: bool,
    epilogue: bool,
}

impl ConvCase {
    fn p(&self) -> i64 {
        (self.h + 2 * self.pad - self.dil * (self.r - 1) - 1) / self.stride + 1
    }
    fn y_len(&self) -> usize {
        (self.n * self.k * self.p() * self.p()) as usize
    }
}

fn conv_graph(c: ConvCase, dt: DataType) -> Graph {
    let (mut g, mut y) = conv_core(c, dt);
    if c.epilogue {
        let b = g.tensor(
            TensorAttributes::new("bias")
                .uid(3)
                .data_type(dt)
                .dims([1, c.k, 1, 1])
                .strides([c.k, 1, 1, 1]),
        );
        y = g.pointwise(y, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
        y = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    }
    g.set_output(y, true).set_uid(y, 4);
    g
}

/// The conv graph without epilogue or output marking: (graph, y).
fn conv_core(c: ConvCase, dt: DataType) -> (Graph, hipdnn::TensorId) {
    let mut g = Graph::new();
    g.set_name("conv")
        .set_io_data_type(dt)
        .set_intermediate_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let lay = |t: TensorAttributes| {
        if c.nhwc {
            t.packed_nhwc()
        } else {
            t.packed_nchw()
        }
    };
    let x = g.tensor(lay(TensorAttributes::new("x")
        .uid(1)
        .data_type(dt)
        .dims([c.n, c.c, c.h, c.h])));
    let w = g.tensor(lay(TensorAttributes::new("w").uid(2).data_type(dt).dims([
        c.k,
        c.c / c.groups,
        c.r,
        c.r,
    ])));
    let y = g.conv_fprop(
        x,
        w,
        hipdnn::ConvFpropAttributes::new()
            .padding([c.pad, c.pad])
            .stride([c.stride, c.stride])
            .dilation([c.dil, c.dil]),
    );
    (g, y)
}

fn conv_inputs<T: Num>(c: ConvCase) -> Vec<(i64, Vec<T>)> {
    let q = |v: Vec<f32>| v.into_iter().map(T::of).collect::<Vec<T>>();
    let mut v = vec![
        (1, q(vals((c.n * c.c * c.h * c.h) as usize, 11))),
        (2, q(vals((c.k * c.c / c.groups * c.r * c.r) as usize, 12))),
    ];
    if c.epilogue {
        v.push((3, q(vals(c.k as usize, 13))));
    }
    v
}

/// GPU vs CPU reference: |d| ≤ rel·(Σ|x|·|w| bound) + abs with the bound taken as
/// (C/groups)·R·S (inputs in [-1, 1]); f32 rel 1e-5, f16/bf16 rel 4e-3 (bf16 1.6e-2).
fn conv_check_case<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    c: ConvCase,
    dt: DataType,
) -> R<serde_json::Value> {
    let ins = conv_inputs::<T>(c);
    let mut gg = conv_graph(c, dt);
    gg.build(gpu).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    let got = run(gpu, &gg, &ins, c.y_len())?;
    let mut gc = conv_graph(c, dt);
    gc.build(cpu).map_err(e)?;
    let want = run(cpu, &gc, &ins, c.y_len())?;
    let bound = (c.c / c.groups * c.r * c.r) as f32;
    let rel = match dt {
        DataType::Float => 1e-5,
        DataType::Half => 4e-3,
        _ => 1.6e-2,
    };
    let tol = rel * bound + 1e-3;
    let mut worst = 0f32;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let d = (g.f() - w.f()).abs();
        if d.is_nan() || d > tol {
            return Err(format!(
                "conv {dt:?} {c:?}: element {i}: gpu {} cpu {} (|d| {d} > {tol}) on {engine}",
                g.f(),
                w.f()
            ));
        }
        worst = worst.max(d / tol);
    }
    Ok(
        json!({"case": format!("{c:?}"), "dtype": format!("{dt:?}"), "engine": engine, "worst_fraction_of_tolerance": worst}),
    )
}

/// Median ms per execute of a conv graph (events around 20 executes, median of 5 rounds),
/// built by the static rule or, with `benchmarked`, by [`Graph::build_benchmarked`]; and the
/// engine that built it.
fn time_conv<T: Num>(h: &Handle, c: ConvCase, dt: DataType, benchmarked: bool) -> R<(f64, String)> {
    let mut g = conv_graph(c, dt);
    if benchmarked {
        g.build_benchmarked(h).map_err(e)?;
    } else {
        g.build(h).map_err(e)?;
    }
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = h.gpu_device().ok_or("this handle executes on the CPU")?;
    let ins = conv_inputs::<T>(c);
    let bufs: Vec<(i64, Buffer<T>)> = ins
        .iter()
        .map(|(u, v)| Buffer::from_slice_on(h, v).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut y = Buffer::<T>::alloc(h, c.y_len()).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
    let exec = || {
        let mut pack = VariantPack::new();
        for (u, b) in &bufs {
            pack = pack.with(*u, b);
        }
        pack = pack.with(4, &mut y);
        g.execute(h, pack, Some(&mut ws)).map_err(e)
    };
    let ms = median_ms(dev, 3, exec)?;
    Ok((ms, engine))
}

const TORCH_CONV: &str = r#"
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "ms": [], "graph_ms": []}
for (n, c, h, k, r, pad, stride, nhwc, dt) in json.loads(sys.argv[1]):
    dt = {"f16": torch.float16, "f32": torch.float32}[dt]
    mf = torch.channels_last if nhwc else torch.contiguous_format
    x = torch.randn(n, c, h, h, device="cuda", dtype=dt).to(memory_format=mf)
    w = torch.randn(k, c, r, r, device="cuda", dtype=dt).to(memory_format=mf)
    b = torch.randn(k, device="cuda", dtype=dt)
    f = lambda: F.relu(F.conv2d(x, w, b, padding=pad, stride=stride))
    out["ms"].append(eager_ms(f))
    out["graph_ms"].append(graph_ms(f))
out["graph_errors"] = GRAPH_ERRORS
print(json.dumps(out))
"#;

/// Conv checks and the ResNet-50 table; returns (checks, rows, torch info).
pub fn conv_section(gpu: &Handle, cpu: &Handle) -> Section {
    let cc = |n, c, h, k, r, pad, stride, dil, groups, nhwc, epilogue| ConvCase {
        n,
        c,
        h,
        k,
        r,
        pad,
        stride,
        dil,
        groups,
        nhwc,
        epilogue,
    };
    let cases = [
        cc(2, 32, 9, 48, 3, 1, 2, 1, 1, true, true),
        cc(1, 20, 11, 24, 3, 1, 1, 1, 1, true, true),
        cc(1, 3, 13, 5, 3, 2, 1, 2, 1, false, true),
        cc(2, 16, 8, 32, 3, 1, 1, 1, 2, false, false),
        cc(1, 64, 14, 64, 1, 0, 1, 1, 1, true, false),
        cc(3, 17, 7, 9, 5, 2, 3, 1, 1, false, true),
        // NCHW with C and K multiples of 16: the transposing nchwt entry (odd planes, batch 1,
        // stride 2, 1x1, a dilated 5x5).
        cc(1, 16, 7, 32, 3, 1, 1, 1, 1, false, true),
        cc(2, 32, 15, 48, 3, 1, 2, 1, 1, false, true),
        cc(3, 64, 14, 64, 1, 0, 1, 1, 1, false, false),
        cc(2, 48, 9, 16, 5, 2, 1, 2, 1, false, true),
    ];
    let mut checks = Vec::new();
    for c in cases {
        for dt in [DataType::Float, DataType::Half, DataType::BFloat16] {
            let r = match dt {
                DataType::Float => conv_check_case::<f32>(gpu, cpu, c, dt),
                DataType::Half => conv_check_case::<f16>(gpu, cpu, c, dt),
                _ => conv_check_case::<bf16>(gpu, cpu, c, dt),
            }?;
            println!("conv check: {r}");
            checks.push(r);
        }
    }
    // ResNet-50 layers (c, h, k, r, pad, stride).
    let layers: [[i64; 6]; 6] = [
        [64, 56, 64, 3, 1, 1],
        [128, 28, 128, 3, 1, 1],
        [256, 14, 256, 3, 1, 1],
        [512, 7, 512, 3, 1, 1],
        [64, 56, 256, 1, 0, 1],
        [128, 28, 512, 1, 0, 1],
    ];
    let mut specs = Vec::new();
    for n in [8i64, 32] {
        for l in layers {
            for (dt, nhwc) in [("f16", true), ("f32", true), ("f16", false)] {
                specs.push((n, l, dt, nhwc));
            }
        }
    }
    let arg: Vec<serde_json::Value> = specs
        .iter()
        .map(|(n, l, dt, nhwc)| json!([n, l[0], l[1], l[2], l[3], l[4], l[5], nhwc, dt]))
        .collect();
    let torch = torch_json(TORCH_CONV, &serde_json::to_string(&arg).unwrap_or_default());
    let mut rows = Vec::new();
    for (i, (n, l, dt, nhwc)) in specs.iter().enumerate() {
        let c = cc(*n, l[0], l[1], l[2], l[3], l[4], l[5], 1, 1, *nhwc, true);
        let time = |benchmarked| {
            if *dt == "f16" {
                time_conv::<f16>(gpu, c, DataType::Half, benchmarked)
            } else {
                time_conv::<f32>(gpu, c, DataType::Float, benchmarked)
            }
        };
        let ms = time(false)?.0;
        println!("benchmarking build for conv {n} {l:?} {dt} nhwc={nhwc}:");
        let bench_ms = time(true)?.0;
        let torch_ms = torch["ms"].get(i).and_then(|v| v.as_f64());
        let flops = 2.0 * (c.n * c.k * c.p() * c.p() * c.c * c.r * c.r) as f64;
        let row = json!({"n": n, "layer": l, "dtype": dt, "layout": if *nhwc {"NHWC"} else {"NCHW"},
            "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12, "bench_ms": bench_ms,
            "ratio_bench_vs_torch": torch_ms.map(|t| t / bench_ms)});
        let row = with_peer(row, &torch, i);
        println!("conv: {row}");
        rows.push(row);
    }
    Ok((checks, rows, torch))
}

fn dgrad_graph(c: ConvCase, dt: DataType) -> Graph {
    let mut g = Graph::new();
    g.set_name("dgrad")
        .set_io_data_type(dt)
        .set_intermediate_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let lay = |t: TensorAttributes| {
        if c.nhwc {
            t.packed_nhwc()
        } else {
            t.packed_nchw()
        }
    };
    let p = c.p();
    let dy = g.tensor(lay(TensorAttributes::new("dy")
        .uid(1)
        .data_type(dt)
        .dims([c.n, c.k, p, p])));
    let w = g.tensor(lay(TensorAttributes::new("w")
        .uid(2)
        .data_type(dt)
        .dims([c.k, c.c, c.r, c.r])));
    let dx = g.conv_dgrad(
        dy,
        w,
        hipdnn::ConvDgradAttributes::new()
            .padding([c.pad, c.pad])
            .stride([c.stride, c.stride])
            .dilation([c.dil, c.dil]),
    );
    g.set_output(dx, true).set_uid(dx, 4);
    g
}

fn dgrad_inputs<T: Num>(c: ConvCase) -> Vec<(i64, Vec<T>)> {
    let q = |v: Vec<f32>| v.into_iter().map(T::of).collect::<Vec<T>>();
    vec![
        (1, q(vals(c.y_len(), 21))),
        (2, q(vals((c.k * c.c * c.r * c.r) as usize, 22))),
    ]
}

/// GPU dgrad vs the CPU reference, tolerance as [`conv_check_case`] with K·R·S terms.
fn dgrad_check_case<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    c: ConvCase,
    dt: DataType,
) -> R<serde_json::Value> {
    let ins = dgrad_inputs::<T>(c);
    let n_out = (c.n * c.c * c.h * c.h) as usize;
    let mut gg = dgrad_graph(c, dt);
    gg.build(gpu).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    let got = run(gpu, &gg, &ins, n_out)?;
    let mut gc = dgrad_graph(c, dt);
    gc.build(cpu).map_err(e)?;
    let want = run(cpu, &gc, &ins, n_out)?;
    let bound = (c.k * c.r * c.r) as f32;
    let rel = match dt {
        DataType::Float => 1e-5,
        DataType::Half => 4e-3,
        _ => 1.6e-2,
    };
    let tol = rel * bound + 1e-3;
    let mut worst = 0f32;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let d = (g.f() - w.f()).abs();
        if d.is_nan() || d > tol {
            return Err(format!(
                "dgrad {dt:?} {c:?}: element {i}: gpu {} cpu {} (|d| {d} > {tol}) on {engine}",
                g.f(),
                w.f()
            ));
        }
        worst = worst.max(d / tol);
    }
    Ok(
        json!({"case": format!("{c:?}"), "dtype": format!("{dt:?}"), "engine": engine, "worst_fraction_of_tolerance": worst}),
    )
}

fn time_dgrad(h: &Handle, c: ConvCase) -> R<f64> {
    let mut g = dgrad_graph(c, DataType::Half);
    g.build(h).map_err(e)?;
    let dev = h.gpu_device().ok_or("this handle executes on the CPU")?;
    let ins = dgrad_inputs::<f16>(c);
    let bufs: Vec<(i64, Buffer<f16>)> = ins
        .iter()
        .map(|(u, v)| Buffer::from_slice_on(h, v).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut y = Buffer::<f16>::alloc(h, (c.n * c.c * c.h * c.h) as usize).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
    let exec = || {
        let pack = VariantPack::new()
            .with(1, &bufs[0].1)
            .with(2, &bufs[1].1)
            .with(4, &mut y);
        g.execute(h, pack, Some(&mut ws)).map_err(e)
    };
    let ms = median_ms(dev, 3, exec)?;
    Ok(ms)
}

/// The batch-32 ResNet-50 layers of the dgrad and wgrad tables: c, h (=w), k, r (=s), pad,
/// stride.
const DGRAD_LAYERS: [[i64; 6]; 5] = [
    [64, 56, 64, 3, 1, 1],
    [128, 28, 128, 3, 1, 1],
    [256, 14, 256, 3, 1, 1],
    [512, 7, 512, 3, 1, 1],
    [64, 56, 256, 1, 0, 1],
];

/// `--only a,b`: the named sections (`dgrad`, `wgrad`, `pointwise`, `reduce`, `sdpa`, `pool`,
/// `normbwd`, `bnbwd`, `llm`, `shapes`, `sdpabwd`, `poolbwd`) and, for
/// wgrad, its three save/reload round trips; JSON to `out`, their tables alone to `md`
/// (overwritten).
fn backward_sections(gpu: &Handle, cpu: &Handle, out: &str, md: Option<&str>, only: &str) -> R<()> {
    let names: Vec<&str> = only.split(',').map(str::trim).collect();
    if let Some(bad) = names.iter().find(|n| {
        ![
            "dgrad",
            "wgrad",
            "pointwise",
            "reduce",
            "sdpa",
            "pool",
            "normbwd",
            "bnbwd",
            "llm",
            "shapes",
            "sdpabwd",
            "poolbwd",
        ]
        .contains(n)
    }) {
        return Err(format!(
            "--only takes dgrad, wgrad, pointwise, reduce, sdpa, pool, normbwd, bnbwd, llm, shapes, sdpabwd and poolbwd, not {bad:?}"
        ));
    }
    let mut report = serde_json::Map::new();
    let mut t = String::new();
    if names.contains(&"dgrad") {
        let (checks, rows) = dgrad_section(gpu, cpu)?;
        t += &dgrad_table(checks.len(), &rows);
        report.insert("dgrad_checks".into(), json!(checks));
        report.insert("dgrad".into(), json!(rows));
    }
    if names.contains(&"wgrad") {
        let mut reloads = Vec::new();
        for (c, dt) in [(200, "f16"), (201, "f32"), (202, "bf16")] {
            let r = save_reload(c, dt)?;
            println!("save/reload: {r}");
            reloads.push(r);
        }
        let (checks, rows, torch) = wgrad::section(gpu, cpu)?;
        t += &wgrad::table(checks.len(), &rows, &torch);
        t += &format!(
            "\n{} wgrad save → load (archives removed) → execute ×2 → re-save round trips passed.\n",
            reloads.len()
        );
        report.insert("wgrad_save_reload".into(), json!(reloads));
        report.insert("wgrad_checks".into(), json!(checks));
        report.insert("wgrad".into(), json!(rows));
        report.insert("torch_wgrad".into(), torch);
    }
    if names.contains(&"pointwise") {
        let (rows, torch) = pointwise::section(gpu)?;
        t += &pointwise::table(&rows, &torch);
        report.insert("pointwise".into(), json!(rows));
        report.insert("torch_pointwise".into(), torch);
    }
    if names.contains(&"reduce") {
        let (checks, rows, torch) = reduce::section(gpu, cpu)?;
        t += &reduce::table(checks.len(), &rows, &torch);
        report.insert("reduce_checks".into(), json!(checks));
        report.insert("reduce".into(), json!(rows));
        report.insert("torch_reduce".into(), torch);
    }
    if names.contains(&"shapes") {
        let (checks, rows, torch) = shapes::section(gpu, cpu)?;
        t += &shapes::table(checks.len(), &rows, &torch);
        report.insert("shapes_checks".into(), json!(checks));
        report.insert("shapes".into(), json!(rows));
        report.insert("torch_shapes".into(), torch);
    }
    if names.contains(&"llm") {
        let (rows, torch) = llm::section(gpu)?;
        t += &llm::table(&rows, &torch);
        report.insert("llm".into(), json!(rows));
        report.insert("torch_llm".into(), torch);
    }
    if names.contains(&"pool") {
        let (checks, rows, torch) = pool::section(gpu, cpu)?;
        t += &pool::table(checks.len(), &rows, &torch);
        report.insert("pool_checks".into(), json!(checks));
        report.insert("pool".into(), json!(rows));
        report.insert("torch_pool".into(), torch);
    }
    if names.contains(&"normbwd") {
        let (checks, rows, torch) = norm_bwd::section(gpu, cpu)?;
        t += &norm_bwd::table(checks.len(), &rows, &torch);
        report.insert("normbwd_checks".into(), json!(checks));
        report.insert("normbwd".into(), json!(rows));
        report.insert("torch_normbwd".into(), torch);
    }
    if names.contains(&"bnbwd") {
        let (checks, rows, torch) = bn_bwd::section(gpu, cpu)?;
        t += &bn_bwd::table(checks.len(), &rows, &torch);
        report.insert("bnbwd_checks".into(), json!(checks));
        report.insert("bnbwd".into(), json!(rows));
        report.insert("torch_bnbwd".into(), torch);
    }
    if names.contains(&"sdpa") {
        let (checks, rows, torch) = sdpa::section(gpu, cpu)?;
        t += &sdpa::table(checks.len(), &rows, &torch);
        report.insert("sdpa_checks".into(), json!(checks));
        report.insert("sdpa".into(), json!(rows));
        report.insert("torch_sdpa".into(), torch);
    }
    if names.contains(&"poolbwd") {
        let (checks, rows, torch) = pool::bwd_section(gpu, cpu)?;
        t += &pool::table(checks.len(), &rows, &torch).replace(
            "Pooling (pool_fwd, one launch per graph;",
            "Pooling backward (pool_bwd, one launch per graph, deterministic; dy and the index in, dx out;",
        );
        report.insert("poolbwd_checks".into(), json!(checks));
        report.insert("poolbwd".into(), json!(rows));
        report.insert("torch_poolbwd".into(), torch);
    }
    if names.contains(&"sdpabwd") {
        let (checks, rows, torch) = sdpa_bwd::section(gpu, cpu)?;
        t += &sdpa_bwd::table(checks.len(), &rows, &torch);
        report.insert("sdpabwd_checks".into(), json!(checks));
        report.insert("sdpabwd".into(), json!(rows));
        report.insert("torch_sdpabwd".into(), torch);
    }
    if let Some(dir) = std::path::Path::new(out).parent() {
        std::fs::create_dir_all(dir).map_err(e)?;
    }
    let v = serde_json::Value::Object(report);
    std::fs::write(out, serde_json::to_string_pretty(&v).map_err(e)?).map_err(e)?;
    println!("wrote {out}");
    println!("{t}");
    if let Some(md) = md {
        std::fs::write(md, &t).map_err(e)?;
        println!("wrote {md}");
    }
    Ok(())
}

const TORCH_DGRAD: &str = r#"
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
out = {"ms": [], "graph_ms": []}
for (n, c, h, k, r, pad, stride) in json.loads(sys.argv[1]):
    cl = torch.channels_last
    x = torch.randn(n, c, h, h, device="cuda", dtype=torch.float16).to(memory_format=cl)
    w = torch.randn(k, c, r, r, device="cuda", dtype=torch.float16).to(memory_format=cl)
    p = (h + 2 * pad - r) // stride + 1
    dy = torch.randn(n, k, p, p, device="cuda", dtype=torch.float16).to(memory_format=cl)
    f = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], 1, [True, False, False])
    out["ms"].append(eager_ms(f))
    out["graph_ms"].append(graph_ms(f))
out["graph_errors"] = GRAPH_ERRORS
print(json.dumps(out))
"#;

/// The markdown table of [`dgrad_section`]'s rows.
fn dgrad_table(checks: usize, rows: &[serde_json::Value]) -> String {
    let mut t = format!(
        "Conv dgrad f16 NHWC, batch 32 ({checks} dgrad correctness cases passed) vs PyTorch `aten.convolution_backward` (input gradient only, cuDNN), eager and replayed from a CUDA graph:\n\n| layer (c, h, k, r, pad, stride) | hipdnn-rs | {PEER_HEADER} |\n|---|---|---|---|---|---|\n"
    );
    for r in rows {
        t += &format!(
            "| {} | {:.3} ms | {} |\n",
            r["layer"],
            r["ms"].as_f64().unwrap_or(0.0),
            peer_cells(r),
        );
    }
    t
}

/// Dgrad checks and the batch-32 ResNet-50 table (f16 NHWC) vs PyTorch's conv backward (input
/// gradient only).
pub fn dgrad_section(
    gpu: &Handle,
    cpu: &Handle,
) -> R<(Vec<serde_json::Value>, Vec<serde_json::Value>)> {
    let cc = |n, c, h, k, r, pad, stride, nhwc| ConvCase {
        n,
        c,
        h,
        k,
        r,
        pad,
        stride,
        dil: 1,
        groups: 1,
        nhwc,
        epilogue: false,
    };
    let mut checks = Vec::new();
    for c in [
        cc(2, 32, 9, 48, 3, 1, 1, true),
        cc(1, 20, 11, 24, 3, 1, 2, true),
        cc(1, 3, 13, 5, 3, 1, 1, false),
        cc(2, 16, 8, 32, 1, 0, 1, true),
    ] {
        for dt in [DataType::Float, DataType::Half, DataType::BFloat16] {
            let r = match dt {
                DataType::Float => dgrad_check_case::<f32>(gpu, cpu, c, dt),
                DataType::Half => dgrad_check_case::<f16>(gpu, cpu, c, dt),
                _ => dgrad_check_case::<bf16>(gpu, cpu, c, dt),
            }?;
            println!("dgrad check: {r}");
            checks.push(r);
        }
    }
    let layers = DGRAD_LAYERS;
    let arg: Vec<serde_json::Value> = layers
        .iter()
        .map(|l| json!([32, l[0], l[1], l[2], l[3], l[4], l[5]]))
        .collect();
    let torch = torch_json(
        TORCH_DGRAD,
        &serde_json::to_string(&arg).unwrap_or_default(),
    );
    let mut rows = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        let c = cc(32, l[0], l[1], l[2], l[3], l[4], l[5], true);
        let ms = time_dgrad(gpu, c)?;
        let row = json!({"n": 32, "layer": l, "dtype": "f16", "layout": "NHWC", "ms": ms});
        let row = with_peer(row, &torch, i);
        println!("dgrad: {row}");
        rows.push(row);
    }
    Ok((checks, rows))
}

#[cfg(test)]
mod peer_tests {
    use std::io::Write;
    use std::process::{Command, Stdio};

    /// Every PyTorch peer script of the bench, named, as [`super::torch_json`] runs it (the
    /// prelude first).
    fn scripts() -> Vec<(&'static str, String)> {
        [
            ("gpu conv", crate::TORCH),
            ("matmul", super::TORCH_MM),
            ("conv", super::TORCH_CONV),
            ("dgrad", super::TORCH_DGRAD),
            ("wgrad", super::wgrad::TORCH_WGRAD),
            ("pointwise", super::pointwise::TORCH_ADD),
            ("pool", super::pool::TORCH),
            ("reduce", super::reduce::TORCH),
            ("sdpa", super::sdpa::TORCH),
            ("sdpabwd", super::sdpa_bwd::TORCH),
            ("poolbwd", super::pool::TORCH_BWD),
            ("normbwd", super::norm_bwd::TORCH),
            ("bnbwd", super::bn_bwd::TORCH),
            ("llm", super::llm::TORCH_LLM),
            ("shapes", super::shapes::TORCH),
        ]
        .into_iter()
        .map(|(n, s)| (n, format!("{}{s}", super::TORCH_PRELUDE)))
        .collect()
    }

    /// Parses a script (stdin) and lists every name it reads that nothing in it defines, imports
    /// or binds and that is not a builtin (scope-blind, so it catches a helper the prelude does
    /// not define or a misspelt variable, not a use before assignment).
    const CHECK: &str = r#"
import ast, builtins, sys
tree = ast.parse(sys.stdin.read())
defined = set(dir(builtins))
for n in ast.walk(tree):
    if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load): defined.add(n.id)
    elif isinstance(n, (ast.FunctionDef, ast.ClassDef)): defined.add(n.name)
    elif isinstance(n, ast.arg): defined.add(n.arg)
    elif isinstance(n, (ast.Import, ast.ImportFrom)):
        for a in n.names: defined.add((a.asname or a.name).split(".")[0])
    elif isinstance(n, ast.ExceptHandler) and n.name: defined.add(n.name)
used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
missing = sorted(used - defined)
if missing:
    print("undefined names:", ", ".join(missing)); sys.exit(1)
"#;

    /// A row gains both peers and both ratios (peer ÷ ours), by name or by index; a figure the
    /// peer lacks stays `null` and shows as `n/a`.
    #[test]
    fn with_peer_adds_both_peers_and_their_ratios() {
        use serde_json::json;
        let torch = json!({"ms": {"a": 3.0, "b": 1.0}, "graph_ms": {"a": 1.0, "b": null}});
        let r = super::with_peer(json!({"ms": 2.0, "n": 7}), &torch, "a");
        assert_eq!(
            r,
            json!({"ms": 2.0, "n": 7, "torch_ms": 3.0, "ratio_vs_torch": 1.5,
                "torch_graph_ms": 1.0, "ratio_vs_graph": 0.5})
        );
        assert_eq!(
            super::peer_cells(&r),
            "3.0000 ms | 1.50× | 1.0000 ms | 0.50×"
        );
        let r = super::with_peer(json!({"ms": 4.0}), &torch, "b");
        assert_eq!(r["ratio_vs_torch"], json!(0.25));
        assert!(r["torch_graph_ms"].is_null() && r["ratio_vs_graph"].is_null());
        assert_eq!(super::peer_cells(&r), "1.0000 ms | 0.25× | n/a | n/a");
        let lists = json!({"ms": [8.0, 2.0], "graph_ms": [4.0, 1.0]});
        let r = super::with_peer(json!({"ms": 2.0}), &lists, 1);
        assert_eq!(
            (r["ratio_vs_torch"].as_f64(), r["ratio_vs_graph"].as_f64()),
            (Some(1.0), Some(0.5))
        );
        let r = super::with_peer(json!({"ms": 2.0}), &json!({"error": "no torch"}), 0);
        assert_eq!(super::peer_cells(&r), "n/a | n/a | n/a | n/a");
    }

    /// The scripts only run on a machine with a GPU and PyTorch, where a mistake costs a device
    /// call: here each must parse and define every name it reads.
    #[test]
    fn every_peer_script_parses_and_defines_the_names_it_reads() {
        if Command::new("python3").arg("-V").output().is_err() {
            println!("skipped: python3 is not installed");
            return;
        }
        for (name, script) in scripts() {
            let mut child = Command::new("python3")
                .args(["-c", CHECK])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(script.as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "peer script {name}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
