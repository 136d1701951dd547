//! `hipdnn-bench triton [--out PATH] [--md PATH] [--sizes 512,4096]`: the Triton matmul family
//! on the GPU engine, checked and measured in one run.
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
//! Writes JSON, and with `--md` replaces the block between `<!-- triton-bench:begin -->` and
//! `<!-- triton-bench:end -->`. Without a GPU it prints `skipped: no GPU` and exits 0.

use half::{bf16, f16};
use hipdnn::{
    Buffer, DataType, Element, Graph, Handle, HeuristicMode, MatmulAttributes, PointwiseAttributes,
    PointwiseMode, TensorAttributes, VariantPack,
};
use hipdnn_hip::{Event, Stream};
use serde_json::json;

type R<T> = Result<T, String>;

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
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

fn graph(c: Case, dt: DataType) -> Graph {
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
        y = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    }
    let _ = batch;
    g.set_output(y, true).set_uid(y, 4);
    g
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
    gg.build(gpu, &[HeuristicMode::Fallback]).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    let got = run(gpu, &gg, &ins, n_out)?;
    let mut gc = graph(c, dt);
    gc.build(cpu, &[HeuristicMode::Fallback]).map_err(e)?;
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
        if !(d <= tol) {
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
    let src = hipdnn_engines::gpu::kernel_dir();
    let tmp = std::env::temp_dir().join(format!("hipdnn-triton-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    for d in std::fs::read_dir(&src).map_err(e)? {
        let d = d.map_err(e)?;
        std::fs::create_dir_all(tmp.join(d.file_name())).map_err(e)?;
        for f in std::fs::read_dir(d.path()).map_err(e)? {
            let f = f.map_err(e)?;
            std::fs::copy(f.path(), tmp.join(d.file_name()).join(f.file_name())).map_err(e)?;
        }
    }
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

/// The child side of [`save_reload`]: the kernel dir is a scratch copy.
pub fn reload_child(case: usize, dt: &str) -> R<()> {
    let c = *CASES.get(case).ok_or("no such case")?;
    let v = match dt {
        "f32" => reload_steps::<f32>(c, DataType::Float),
        "f16" => reload_steps::<f16>(c, DataType::Half),
        _ => reload_steps::<bf16>(c, DataType::BFloat16),
    }?;
    println!("{v}");
    Ok(())
}

fn reload_steps<T: Num>(c: Case, dt: DataType) -> R<serde_json::Value> {
    let dir = hipdnn_engines::gpu::kernel_dir();
    let h = Handle::gpu().map_err(e)?;
    let ins = inputs::<T>(c);
    let n_out = (c.ba.max(c.bb) * c.m * c.n) as usize;
    let mut g = graph(c, dt);
    let t0 = std::time::Instant::now();
    g.build(&h, &[HeuristicMode::Fallback]).map_err(e)?;
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
        return Err(format!("{dt:?} {c:?}: loaded plan output differs"));
    }
    let again = g2.to_compiled_plan_binary().map_err(e)?;
    if again != plan {
        return Err(format!("{dt:?} {c:?}: re-save is not byte-identical"));
    }
    Ok(
        json!({"case": format!("{c:?}"), "dtype": format!("{dt:?}"), "archives_removed": moved,
        "plan_bytes": plan.len(), "build_ms": build_ms, "load_ms": load_ms, "ok": true}),
    )
}

/// Median ms per execute: 5 rounds of 20 executes between events.
fn time_mm<T: Num>(h: &Handle, n: i64, dt: DataType) -> R<(f64, f64, String)> {
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
    g.build(h, &[HeuristicMode::Fallback]).map_err(e)?;
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = h.gpu_device().ok_or("this handle executes on the CPU")?;
    let a = Buffer::from_slice_on(h, &vec![T::of(0.01); (n * n) as usize]).map_err(e)?;
    let b = Buffer::from_slice_on(h, &vec![T::of(0.02); (n * n) as usize]).map_err(e)?;
    let mut y = Buffer::<T>::alloc(h, (n * n) as usize).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
    let stream = Stream::default_stream(dev);
    let (ev0, ev1) = (Event::new(dev).map_err(e)?, Event::new(dev).map_err(e)?);
    let mut exec = || {
        let pack = VariantPack::new().with(1, &a).with(2, &b).with(4, &mut y);
        g.execute(h, pack, Some(&mut ws)).map_err(e)
    };
    for _ in 0..5 {
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
    Ok((rounds[2], build_ms, engine))
}

const TORCH_MM: &str = r#"
import json, sys
try:
    import torch
    assert torch.cuda.is_available()
except Exception as ex:
    print(json.dumps({"error": str(ex)})); sys.exit(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
out = {"torch": torch.__version__, "ms": {}}
for n in json.loads(sys.argv[1]):
    for name, dt in [("f16", torch.float16), ("bf16", torch.bfloat16), ("f32", torch.float32)]:
        a = torch.full((n, n), 0.01, device="cuda", dtype=dt); b = torch.full((n, n), 0.02, device="cuda", dtype=dt)
        for _ in range(5): torch.matmul(a, b)
        s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        rs = []
        for _ in range(5):
            s.record()
            for _ in range(20): torch.matmul(a, b)
            t.record(); t.synchronize(); rs.append(s.elapsed_time(t) / 20)
        rs.sort(); out["ms"][f"{name}_{n}"] = rs[2]
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
pub fn triton(out: &str, md: Option<&str>, sizes: &[i64]) -> R<()> {
    let gpu = match Handle::gpu() {
        Ok(h) => h,
        Err(x) => {
            println!("skipped: {}", x.message);
            return Ok(());
        }
    };
    let cpu = Handle::cpu().map_err(e)?;
    println!("{gpu:?}");
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
    for (c, dt) in [(1, "f32"), (6, "f16"), (4, "bf16")] {
        let r = save_reload(c, dt)?;
        println!("save/reload: {r}");
        reloads.push(r);
    }
    let torch = {
        let arg = serde_json::to_string(sizes).unwrap_or_default();
        match std::process::Command::new("python3")
            .args(["-c", TORCH_MM, &arg])
            .output()
        {
            Ok(o) => serde_json::from_slice(&o.stdout).unwrap_or_else(
                |_| json!({"error": String::from_utf8_lossy(&o.stderr).to_string()}),
            ),
            Err(x) => json!({"error": x.to_string()}),
        }
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
            let torch_ms = torch["ms"][format!("{name}_{n}")].as_f64();
            let row = json!({"dtype": name, "n": n, "ms": ms, "tflops": tflops, "torch_ms": torch_ms,
                "ratio_vs_torch": torch_ms.map(|t| t / ms), "build_ms": build_ms, "plan": engine});
            println!("matmul: {row}");
            rows.push(row);
        }
    }
    let device = format!("{:?}", gpu.device());
    let report = json!({"device": device, "checks": checks, "save_reload": reloads,
        "matmul": rows, "torch": torch});
    if let Some(dir) = std::path::Path::new(out).parent() {
        std::fs::create_dir_all(dir).map_err(e)?;
    }
    std::fs::write(out, serde_json::to_string_pretty(&report).map_err(e)?).map_err(e)?;
    println!("wrote {out}");
    if let Some(md) = md {
        let mut t = format!(
            "Command: `hipdnn-bench triton --md docs/PERFORMANCE.md` on {device}; torch {} (cuBLAS), TF32 off; CUDA events around 20 executes, median of 5 rounds. {} correctness cases vs the CPU reference passed; {} save → load (archives removed) → execute ×2 → re-save round trips passed.\n\n",
            torch["torch"],
            checks.len(),
            reloads.len()
        );
        t += "| matmul M=N=K | dtype | hipdnn-rs (Triton) | TFLOP/s | torch.matmul | ours/torch speed |\n|---|---|---|---|---|---|\n";
        for r in &rows {
            t += &format!(
                "| {} | {} | {:.3} ms | {:.0} | {} | {} |\n",
                r["n"],
                r["dtype"].as_str().unwrap_or_default(),
                r["ms"].as_f64().unwrap_or(0.0),
                r["tflops"].as_f64().unwrap_or(0.0),
                r["torch_ms"]
                    .as_f64()
                    .map(|v| format!("{v:.3} ms"))
                    .unwrap_or_else(|| "n/a".into()),
                r["ratio_vs_torch"]
                    .as_f64()
                    .map(|v| format!("{v:.2}×"))
                    .unwrap_or_else(|| "n/a".into()),
            );
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
