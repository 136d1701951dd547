//! Autotune on the GPU, persist the winners, and build them again in a new process without
//! timing anything (issue 35; upstream RFC 0013).
//!
//! ```text
//! cargo run --release --example autotune -- tune FILE [--only NAME]   # autotune, write FILE
//! HIPDNN_HEUR_CONFIG_PATH=FILE cargo run --release --example autotune -- reuse [--only NAME]
//! cargo run --release --example autotune -- static [--only NAME]      # the static rule, no file
//! HIPDNN_HEUR_CONFIG_PATH=FILE cargo run --release --example autotune -- build  # as reuse, no checks
//! ```
//! Graphs (f16): `mm2048` (2048³ matmul), `mm16` (16×4096 · 4096×4096, LLM decode), `conv`
//! (ResNet-50 3×3, n32 c64 k64 56², NHWC, padding 1). Each line prints the engine, the
//! median milliseconds of one execute (device events, 5 rounds of 20) and how many log lines
//! came from timing (`hipdnn benchmark:` or `autotune:`); `reuse` fails when any did, or when
//! the engine-override file did not pick the engine.

use hipdnn::half::f16;
use hipdnn::{
    AutotuneConfig, AutotuneStorage, Buffer, ConvFpropAttributes, DataType, Graph, Handle,
    MatmulAttributes, TensorAttributes as T, VariantPack,
};
use hipdnn_hip::safe::{Event, Stream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

type R<T> = Result<T, Box<dyn std::error::Error>>;

/// Log lines of timing (`hipdnn benchmark:`, `autotune:`) and of the override rule.
static TIMING_LINES: AtomicUsize = AtomicUsize::new(0);
static RULE_LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Counter;

impl log::Log for Counter {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Info
    }
    fn log(&self, r: &log::Record<'_>) {
        let text = r.args().to_string();
        if text.starts_with("hipdnn benchmark:") || text.starts_with("autotune:") {
            TIMING_LINES.fetch_add(1, Ordering::SeqCst);
        }
        if text.contains("engine-override file") {
            RULE_LINES.lock().unwrap().push(text.clone());
        }
        if r.level() <= log::Level::Warn || std::env::var_os("AUTOTUNE_VERBOSE").is_some() {
            eprintln!("{} {text}", r.level());
        }
    }
    fn flush(&self) {}
}

static COUNTER: Counter = Counter;

/// A graph with uids 1, 2 (inputs) and 3 (output), and the element counts of the three.
fn graph(name: &str) -> (Graph, [usize; 3]) {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Half)
        .set_compute_data_type(DataType::Float);
    let sizes = match name {
        "mm2048" | "mm16" => {
            let (m, k, n) = if name == "mm16" {
                (16, 4096, 4096)
            } else {
                (2048, 2048, 2048)
            };
            let a = g.tensor(T::new("a").uid(1).dims([m, k]));
            let b = g.tensor(T::new("b").uid(2).dims([k, n]));
            let c = g.matmul(a, b, MatmulAttributes::new());
            g.set_output(c, true).set_uid(c, 3);
            [m * k, k * n, m * n]
        }
        _ => {
            let (n, c, k, hw) = (32i64, 64i64, 64i64, 56i64);
            let x = g.tensor(T::new("x").uid(1).dims([n, c, hw, hw]).strides([
                hw * hw * c,
                1,
                hw * c,
                c,
            ]));
            let w = g.tensor(
                T::new("w")
                    .uid(2)
                    .dims([k, c, 3, 3])
                    .strides([9 * c, 1, 3 * c, c]),
            );
            let y = g.conv_fprop(
                x,
                w,
                ConvFpropAttributes::new()
                    .pre_padding([1, 1])
                    .post_padding([1, 1])
                    .stride([1, 1])
                    .dilation([1, 1]),
            );
            g.set_output(y, true).set_uid(y, 3);
            [n * c * hw * hw, k * c * 9, n * k * hw * hw]
        }
    };
    (g, sizes.map(|s| s as usize))
}

struct Tensors {
    a: Buffer<f16>,
    b: Buffer<f16>,
    c: Buffer<f16>,
}

fn tensors(h: &Handle, sizes: [usize; 3]) -> R<Tensors> {
    let fill = |n: usize, s: usize| -> Vec<f16> {
        (0..n)
            .map(|i| f16::from_f32(((i * 7 + s) % 13) as f32 / 13.0 - 0.5))
            .collect()
    };
    Ok(Tensors {
        a: Buffer::from_slice_on(h, &fill(sizes[0], 1))?,
        b: Buffer::from_slice_on(h, &fill(sizes[1], 2))?,
        c: Buffer::alloc(h, sizes[2])?,
    })
}

/// Median milliseconds of one execute: 5 rounds of 20, device events.
fn time(h: &Handle, g: &Graph, t: &mut Tensors) -> R<f64> {
    let dev = h.gpu_device().ok_or("this handle executes on the CPU")?;
    let stream = Stream::default_stream(dev);
    let (e0, e1) = (Event::new(dev)?, Event::new(dev)?);
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size()?)?;
    let mut run = |n: usize| -> R<()> {
        for _ in 0..n {
            let pack = VariantPack::new()
                .input(1, &t.a)
                .input(2, &t.b)
                .output(3, &mut t.c);
            g.execute(h, pack, Some(&mut ws))?;
        }
        Ok(())
    };
    run(3)?;
    let mut rounds = Vec::new();
    for _ in 0..5 {
        e0.record(&stream)?;
        run(20)?;
        e1.record(&stream)?;
        e1.synchronize()?;
        rounds.push(f64::from(e0.elapsed_ms(&e1)?) / 20.0);
    }
    rounds.sort_by(f64::total_cmp);
    Ok(rounds[2])
}

fn main() -> R<()> {
    log::set_logger(&COUNTER).map_err(|e| e.to_string())?;
    log::set_max_level(log::LevelFilter::Info);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: autotune tune FILE [--only NAME] | reuse [--only NAME] | static [--only NAME]";
    let mode = args.first().ok_or(usage)?.clone();
    let file = (mode == "tune")
        .then(|| args.get(1).cloned().ok_or(usage))
        .transpose()?;
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    let mut handle = Handle::gpu()?;
    match mode.as_str() {
        "tune" | "static" => {
            handle.set_engine_override_file(None);
        }
        "reuse" => {
            if handle.engine_override_file().is_none() {
                Err("reuse needs HIPDNN_HEUR_CONFIG_PATH")?;
            }
        }
        "build" => {}
        _ => Err(usage)?,
    }
    println!("device {:?} ({})", handle.device(), handle.device_arch());
    for name in ["mm2048", "mm16", "conv"] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let (mut g, sizes) = graph(name);
        let mut t = tensors(&handle, sizes)?;
        let before = TIMING_LINES.load(Ordering::SeqCst);
        let rules_before = RULE_LINES.lock().unwrap().len();
        let mut detail = String::new();
        if let Some(file) = &file {
            let pack = VariantPack::new()
                .input(1, &t.a)
                .input(2, &t.b)
                .output(3, &mut t.c);
            let results = g.autotune(
                &handle,
                pack,
                &AutotuneConfig::default(),
                Some(&AutotuneStorage::new(file)),
            )?;
            let ok = results.iter().filter(|r| r.succeeded).count();
            let w = &results[0];
            detail = format!(
                " candidates {} timed {ok}, winner {} ({:.4} ms, {} runs{}), last {} ({:.4} ms)",
                results.len(),
                w.variant,
                w.min_time_ms,
                w.iterations_run,
                if w.converged { "" } else { ", not converged" },
                results[ok - 1].variant,
                results[ok - 1].min_time_ms
            );
        } else {
            g.build(&handle)?;
        }
        let timing_lines = TIMING_LINES.load(Ordering::SeqCst) - before;
        let rule = RULE_LINES.lock().unwrap()[rules_before..].join(" | ");
        let ms = time(&handle, &g, &mut t)?;
        println!(
            "{mode} {name}: engine {} {ms:.4} ms; timing log lines {timing_lines}{detail}{}",
            g.engine_name()?,
            if rule.is_empty() {
                String::new()
            } else {
                format!("; {rule}")
            }
        );
        if mode == "reuse" && (timing_lines != 0 || !rule.contains("picks engine")) {
            Err(format!(
                "reuse {name}: timing log lines {timing_lines}, rule: {rule:?}"
            ))?;
        }
    }
    Ok(())
}
