//! `cargo run --release -p hipdnn-bench -- gpu [--out target/bench/gpu.json] [--md docs/PERFORMANCE.md]`
//! (and `… -- triton`, the Triton families — matmul, conv fprop with fused epilogues, dgrad,
//! wgrad, TF32, benchmarking builds and plan loads: see `triton.rs`)
//!
//! GPU numbers recorded side by side in one run (numbers, not targets):
//! - pointwise ADD f32 GB/s (3 × 4 bytes per element) vs the device's copy bandwidth measured
//!   with the packed IDENTITY kernel (a device-to-device copy kernel, 2 × 4 bytes per element);
//! - conv fprop f32 (ResNet-50 layer shapes, batch 8) vs PyTorch `conv2d` (cuDNN) when
//!   `python3 -c "import torch"` works, else "n/a";
//! - plan build time vs plan load time (`from_compiled_plan_binary`);
//! - host execute time of a 1-element graph vs a raw launch of the same kernel through
//!   `hip::safe` (both followed by a stream synchronize).
//!
//! `… -- overhead [--rounds N] [--batch N] [--out PATH]` measures the host overhead of
//! `Graph::execute` over a raw launch of the same kernel without synchronizing between
//! launches (issue 29's ≤ 0.5 µs; see `overhead.rs`).
//!
//! Writes JSON and, with `--md`, replaces the block between `<!-- gpu-bench:begin -->` and
//! `<!-- gpu-bench:end -->` in the markdown file. Without a GPU it prints `skipped: no GPU` and
//! exits 0.

mod overhead;
mod triton;

use hipdnn::{
    Buffer, ConvFpropAttributes, DataType, Graph, Handle, PointwiseAttributes, PointwiseMode,
    TensorAttributes, VariantPack,
};
use hipdnn_engines::ingestor::{CodeObjectReader, KpackCodeObjectReader};
use hipdnn_hip::{ArgKind, ArgSpec, KernelArg, LaunchConfig, Stream};
use serde_json::json;
use std::time::Instant;

type R<T> = Result<T, String>;

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

fn pw_graph(mode: PointwiseMode, dims: &[i64]) -> Graph {
    let mut g = Graph::new();
    g.set_name("pw")
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .dims(dims.to_vec())
            .packed_nchw(),
    );
    let y = if mode == PointwiseMode::Identity {
        g.pointwise_unary(a, PointwiseAttributes::with_mode(mode))
    } else {
        let b = g.tensor(
            TensorAttributes::new("b")
                .uid(2)
                .dims(dims.to_vec())
                .packed_nchw(),
        );
        g.pointwise(a, b, PointwiseAttributes::with_mode(mode))
    };
    g.set_output(y, true).set_uid(y, 4);
    g
}

fn conv_graph(n: i64, c: i64, h: i64, k: i64, r: i64, pad: i64, stride: i64) -> Graph {
    let mut g = Graph::new();
    g.set_name("conv")
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([n, c, h, h])
            .packed_nchw(),
    );
    let w = g.tensor(
        TensorAttributes::new("w")
            .uid(2)
            .dims([k, c, r, r])
            .packed_nchw(),
    );
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([pad, pad])
            .stride([stride, stride])
            .dilation([1, 1]),
    );
    g.set_output(y, true).set_uid(y, 4);
    g
}

/// Median seconds of `iters` calls of `f` after 3 warm-ups.
fn time(iters: usize, mut f: impl FnMut() -> R<()>) -> R<f64> {
    for _ in 0..3 {
        f()?;
    }
    let mut v = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed().as_secs_f64());
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// Executes `g` with inputs of the given lengths, timed (median, synchronized).
fn time_exec(h: &Handle, g: &Graph, inputs: &[(i64, usize)], n_out: usize, iters: usize) -> R<f64> {
    let stream = Stream::default_stream(h.gpu_device().ok_or("this handle executes on the CPU")?);
    let bufs: Vec<(i64, Buffer<f32>)> = inputs
        .iter()
        .map(|(u, n)| Buffer::from_slice_on(h, &vec![0.5f32; *n]).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut y = Buffer::<f32>::alloc(h, n_out).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
    time(iters, || {
        let mut pack = VariantPack::new();
        for (u, b) in &bufs {
            pack = pack.with(*u, b);
        }
        pack = pack.with(4, &mut y);
        g.execute(h, pack, Some(&mut ws)).map_err(e)?;
        stream.synchronize().map_err(e)
    })
}

const TORCH: &str = r#"
import time
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "ms": [], "graph_ms": []}
for (n, c, h, k, r, pad, stride) in json.loads(sys.argv[1]):
    x = torch.randn(n, c, h, h, device="cuda"); w = torch.randn(k, c, r, r, device="cuda")
    f = lambda: torch.nn.functional.conv2d(x, w, padding=pad, stride=stride)
    for _ in range(5): f()
    torch.cuda.synchronize(); ts = []
    for _ in range(20):
        t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    ts.sort(); out["ms"].append(ts[len(ts)//2] * 1e3)
    out["graph_ms"].append(graph_ms(f))
out["graph_errors"] = GRAPH_ERRORS
print(json.dumps(out))
"#;

fn torch_conv(shapes: &[[i64; 7]]) -> serde_json::Value {
    triton::torch_json(TORCH, &serde_json::to_string(shapes).unwrap_or_default())
}

fn raw_launch_time(h: &Handle) -> R<f64> {
    let dev = h
        .gpu_device()
        .ok_or("this handle executes on the CPU")?
        .clone();
    let arch = dev.arch().split(':').next().unwrap_or_default().to_string();
    let descs = match hipdnn_engines::gpu::resolve_kernel_location().dir() {
        Some(dir) => hipdnn_engines::gpu::load_packed_descriptors(&dir.join(&arch))
            .map_err(|e| e.to_string())?,
        None => {
            hipdnn_engines::gpu::load_embedded_descriptors(&arch)
                .map_err(|e| e.to_string())?
                .1
        }
    };
    let d = descs
        .iter()
        .find(|d| d.name == "hipdnn_pw_identity_f32")
        .ok_or("no identity kernel")?;
    let src = d.single_source().ok_or("multi-launch")?;
    let lib = src.library.clone().ok_or("no library")?;
    let code = KpackCodeObjectReader
        .read(&lib, &src.toc_key, dev.arch(), &src.sha256)
        .map_err(|x| x.message)?;
    let module = dev.load_module(&code).map_err(e)?;
    let mut sig = vec![(ArgKind::GlobalBuffer, 8), (ArgKind::GlobalBuffer, 8)];
    sig.extend(std::iter::repeat_n((ArgKind::ByValue, 4), 10));
    let f = module
        .function(&src.symbol, &ArgSpec::natural_layout(&sig))
        .map_err(e)?;
    let x = dev.alloc::<f32>(1).map_err(e)?;
    let y = dev.alloc::<f32>(1).map_err(e)?;
    let stream = Stream::default_stream(&dev);
    time(2000, || {
        let mut args: Vec<KernelArg> = vec![(&x).into(), (&y).into()];
        for v in [1i32, 1, 1, 1, 1, 0, 0, 0, 0, 0] {
            args.push(v.into());
        }
        f.launch(&stream, LaunchConfig::linear(1, 256), &args)
            .map_err(e)?;
        stream.synchronize().map_err(e)
    })
}

fn gpu(out: &str, md: Option<&str>) -> R<()> {
    let h = match Handle::gpu() {
        Ok(h) => h,
        Err(x) => {
            println!("skipped: {}", x.message);
            return Ok(());
        }
    };
    println!("{h:?}");
    // Pointwise vs copy.
    let dims = [1i64, 16, 1024, 1024];
    let n = 16 * 1024 * 1024usize;
    let mut add = pw_graph(PointwiseMode::Add, &dims);
    add.build(&h).map_err(e)?;
    let t_add = time_exec(&h, &add, &[(1, n), (2, n)], n, 50)?;
    let mut copy = pw_graph(PointwiseMode::Identity, &dims);
    copy.build(&h).map_err(e)?;
    let t_copy = time_exec(&h, &copy, &[(1, n)], n, 50)?;
    let gbs = |bytes: f64, t: f64| bytes / t / 1e9;
    let pw = json!({"elements": n, "add_ms": t_add * 1e3, "add_gb_s": gbs(12.0 * n as f64, t_add),
        "copy_ms": t_copy * 1e3, "copy_gb_s": gbs(8.0 * n as f64, t_copy)});
    println!("pointwise: {pw}");
    // Conv vs torch.
    let shapes: [[i64; 7]; 4] = [
        [8, 64, 56, 64, 3, 1, 1],
        [8, 128, 28, 128, 3, 1, 1],
        [8, 256, 14, 256, 3, 1, 1],
        [8, 64, 56, 256, 1, 0, 1],
    ];
    let torch = torch_conv(&shapes);
    let mut convs = Vec::new();
    for (i, s) in shapes.iter().enumerate() {
        let [nb, c, hh, k, r, pad, st] = *s;
        let mut g = conv_graph(nb, c, hh, k, r, pad, st);
        let t0 = Instant::now();
        g.build(&h).map_err(e)?;
        let build_ms = t0.elapsed().as_secs_f64() * 1e3;
        let p = (hh + 2 * pad - r) / st + 1;
        let t = time_exec(
            &h,
            &g,
            &[
                (1, (nb * c * hh * hh) as usize),
                (2, (k * c * r * r) as usize),
            ],
            (nb * k * p * p) as usize,
            10,
        )?;
        let flops = 2.0 * (nb * k * p * p * c * r * r) as f64;
        let plan = g.to_compiled_plan_binary().map_err(e)?;
        let h2 = Handle::gpu().map_err(e)?;
        let t1 = Instant::now();
        let _g2 = Graph::from_compiled_plan_binary(&h2, &plan).map_err(e)?;
        let load_ms = t1.elapsed().as_secs_f64() * 1e3;
        let row = json!({"shape": s, "engine": g.engine_name().map_err(e)?, "ms": t * 1e3, "tflops": flops / t / 1e12,
            "build_ms": build_ms, "load_ms": load_ms});
        let row = triton::with_peer(row, &torch, i);
        println!("conv: {row}");
        convs.push(row);
    }
    // Overhead.
    let mut one = pw_graph(PointwiseMode::Identity, &[1, 1, 1, 1]);
    one.build(&h).map_err(e)?;
    let t_exec = time_exec(&h, &one, &[(1, 1)], 1, 2000)?;
    let t_raw = raw_launch_time(&h)?;
    let ov = json!({"execute_us": t_exec * 1e6, "raw_launch_us": t_raw * 1e6});
    println!("overhead: {ov}");
    let device = format!("{:?}", h.device());
    let report =
        json!({"device": device, "pointwise": pw, "conv": convs, "torch": torch, "overhead": ov});
    if let Some(dir) = std::path::Path::new(out).parent() {
        std::fs::create_dir_all(dir).map_err(e)?;
    }
    std::fs::write(out, serde_json::to_string_pretty(&report).map_err(e)?).map_err(e)?;
    println!("wrote {out}");
    if let Some(md) = md {
        let mut t = format!(
            "Command: `cargo run --release -p hipdnn-bench -- gpu --md docs/PERFORMANCE.md` on {device}; torch {} (cuDNN {}), TF32 off.\n\n",
            torch["torch"], torch["cudnn"]
        );
        t += "| measure | hipdnn-rs | baseline |\n|---|---|---|\n";
        t += &format!(
            "| pointwise ADD f32, 16.7 M elements | {:.3} ms, {:.0} GB/s | copy (IDENTITY kernel) {:.3} ms, {:.0} GB/s |\n",
            t_add * 1e3,
            gbs(12.0 * n as f64, t_add),
            t_copy * 1e3,
            gbs(8.0 * n as f64, t_copy)
        );
        for r in &convs {
            t += &format!(
                "| conv fprop f32 {} (n,c,h,k,r,pad,stride) | {:.3} ms ({:.2} TFLOP/s) | PyTorch/cuDNN {} (wall clock with a synchronize, as ours), replayed from a CUDA graph {} (events, kernel-only) |\n",
                r["shape"],
                r["ms"].as_f64().unwrap_or(0.0),
                r["tflops"].as_f64().unwrap_or(0.0),
                triton::ms_cell(&r["torch_ms"]),
                triton::ms_cell(&r["torch_graph_ms"]),
            );
        }
        for r in &convs {
            t += &format!(
                "| plan load (from_compiled_plan_binary) {} | {:.3} ms | plan build {:.3} ms |\n",
                r["shape"],
                r["load_ms"].as_f64().unwrap_or(0.0),
                r["build_ms"].as_f64().unwrap_or(0.0)
            );
        }
        t += &format!(
            "| execute 1-element graph + sync | {:.1} µs | raw launch + sync {:.1} µs |\n",
            t_exec * 1e6,
            t_raw * 1e6
        );
        let text = std::fs::read_to_string(md).map_err(e)?;
        let (b, en) = ("<!-- gpu-bench:begin -->", "<!-- gpu-bench:end -->");
        let new = match (text.find(b), text.find(en)) {
            (Some(i), Some(j)) if i < j => format!("{}{b}\n{t}{}", &text[..i], &text[j..]),
            _ => format!("{text}\n{b}\n{t}{en}\n"),
        };
        std::fs::write(md, new).map_err(e)?;
        println!("updated {md}");
    }
    Ok(())
}

/// Prints the GPU engine's `hipdnn benchmark:` log lines (each candidate's time in a
/// benchmarking build) to stdout; everything else the crates log is dropped.
struct BenchmarkLines;

impl log::Log for BenchmarkLines {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Info
    }
    fn log(&self, r: &log::Record<'_>) {
        let text = r.args().to_string();
        if text.starts_with("hipdnn benchmark") {
            println!("  {text}");
        }
    }
    fn flush(&self) {}
}

static LOGGER: BenchmarkLines = BenchmarkLines;

fn main() -> std::process::ExitCode {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if args.first().map(String::as_str) == Some("triton-reload") {
        let case = args
            .get(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or(usize::MAX);
        let dt = args.get(2).cloned().unwrap_or_default();
        return match triton::reload_child(case, &dt) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(x) => {
                eprintln!("error: {x}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    if args.first().map(String::as_str) == Some("triton") {
        let out = get("--out").unwrap_or_else(|| "target/bench/triton.json".into());
        let sizes: Vec<i64> = get("--sizes")
            .unwrap_or_else(|| "512,1024,2048,4096,8192".into())
            .split(',')
            .filter_map(|v| v.parse().ok())
            .collect();
        let only = get("--only");
        return match triton::triton(&out, get("--md").as_deref(), &sizes, only.as_deref()) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(x) => {
                eprintln!("error: {x}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    if args.first().map(String::as_str) == Some("overhead") {
        let num = |k: &str, d: usize| get(k).and_then(|v| v.parse().ok()).unwrap_or(d);
        return match overhead::overhead(
            num("--rounds", 51),
            num("--batch", 200),
            get("--out").as_deref(),
        ) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(x) => {
                eprintln!("error: {x}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    if args.first().map(String::as_str) != Some("gpu") {
        eprintln!(
            "usage: hipdnn-bench gpu|triton|overhead [--out PATH] [--md PATH] [--sizes 512,4096] [--only dgrad,wgrad,pointwise,reduce,sdpa,pool,normbwd,bnbwd,llm,shapes,sdpabwd,poolbwd]"
        );
        return std::process::ExitCode::from(2);
    }
    let out = get("--out").unwrap_or_else(|| "target/bench/gpu.json".into());
    match gpu(&out, get("--md").as_deref()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(x) => {
            eprintln!("error: {x}");
            std::process::ExitCode::FAILURE
        }
    }
}
