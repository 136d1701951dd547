//! The main job: build → execute → save → reload → execute → re-save, on a real photograph.
//!
//! Graph: the conv-bias-relu block `y = relu(conv_fprop(x, w) + b)` over an RGB image
//! (NCHW, f32, 3 → 4 channels: Sobel-x, Sobel-y, Laplacian and Gaussian-blur filters applied to
//! the channel mean, padding 1). Every step is timed; the input and the four feature maps are
//! written side by side as one PNG, each tile captioned (input, Sobel-x, Sobel-y, Laplacian,
//! blur); the plan is saved as a graph+plan container (`to_binary`) and as a plan
//! alone (`to_compiled_plan_binary`), each loaded by a fresh handle, executed again (outputs
//! must be bit-identical) and saved again (bytes must be identical). Exits non-zero on any
//! mismatch.
//!
//! ```text
//! cargo run --release --example save_reload_resave -- [--input PATH] [--device cpu|gpu] [--out DIR]
//! ```
//!
//! `RUST_LOG=info` (or `debug`) shows the SDK's log, e.g. why `Handle::new` fell back to the CPU.

use hipdnn::{
    Buffer, ConvFpropAttributes, DataType, Graph, Handle, PointwiseAttributes, PointwiseMode,
    TensorAttributes, VariantPack,
};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const X_UID: i64 = 1;
const W_UID: i64 = 2;
const B_UID: i64 = 3;
const Y_UID: i64 = 4;
const OUT_CHANNELS: usize = 4;
const USAGE: &str = "usage: save_reload_resave [--input PATH] [--device cpu|gpu] [--out DIR]";

/// A minimal `log` backend for this example: records at or above `RUST_LOG`'s level
/// (`error`, `warn`, `info`, `debug`, `trace`; default `warn`) go to stderr.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            eprintln!("[{}] {}", r.level(), r.args());
        }
    }
    fn flush(&self) {}
}

fn init_log() {
    let level = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| v.parse::<log::LevelFilter>().ok())
        .unwrap_or(log::LevelFilter::Warn);
    if log::set_logger(&StderrLog).is_ok() {
        log::set_max_level(level);
    }
}

struct Args {
    input: PathBuf,
    device: Option<String>,
    out: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().unwrap_or(manifest);
    let mut a = Args {
        input: Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/astronaut.png"),
        device: None,
        out: root.join("target/save_reload_resave"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--input" => a.input = PathBuf::from(val()?),
            "--device" => {
                let d = val()?;
                if d != "cpu" && d != "gpu" {
                    return Err(format!("--device must be cpu or gpu, not {d}"));
                }
                a.device = Some(d);
            }
            "--out" => a.out = PathBuf::from(val()?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

/// Reads a PNG as NCHW f32 in [0, 1] (RGB; gray and alpha are mapped to RGB).
fn read_image(path: &Path) -> Result<(usize, usize, Vec<f32>), String> {
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut dec = png::Decoder::new(std::io::BufReader::new(file));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec
        .read_info()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let (w, h) = (info.width as usize, info.height as usize);
    let ch = info.color_type.samples();
    let mut x = vec![0f32; 3 * h * w];
    for i in 0..h * w {
        let px = &buf[i * ch..i * ch + ch];
        for c in 0..3 {
            let v = if ch >= 3 { px[c] } else { px[0] };
            x[c * h * w + i] = f32::from(v) / 255.0;
        }
    }
    Ok((h, w, x))
}

/// Filter bank `w[k][c][r][s]`: each 3×3 filter applied to the mean of the three channels.
fn filters() -> Vec<f32> {
    let bank: [[f32; 9]; OUT_CHANNELS] = [
        [-1.0, 0.0, 1.0, -2.0, 0.0, 2.0, -1.0, 0.0, 1.0], // Sobel-x
        [-1.0, -2.0, -1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 1.0], // Sobel-y
        [0.0, 1.0, 0.0, 1.0, -4.0, 1.0, 0.0, 1.0, 0.0],   // Laplacian
        [1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0],    // Gaussian blur (/16)
    ];
    let scale = [1.0, 1.0, 1.0, 1.0 / 16.0];
    let mut w = Vec::with_capacity(OUT_CHANNELS * 27);
    for k in 0..OUT_CHANNELS {
        for _c in 0..3 {
            w.extend(bank[k].iter().map(|v| v * scale[k] / 3.0));
        }
    }
    w
}

fn conv_bias_relu_graph(h: usize, w: usize) -> Graph {
    let (h, w) = (h as i64, w as i64);
    let mut g = Graph::new();
    g.set_name("conv_bias_relu")
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(X_UID)
            .dims([1, 3, h, w])
            .packed_nchw(),
    );
    let wt = g.tensor(
        TensorAttributes::new("w")
            .uid(W_UID)
            .dims([4, 3, 3, 3])
            .packed_nchw(),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(B_UID)
            .dims([1, 4, 1, 1])
            .packed_nchw(),
    );
    let conv = g.conv_fprop(
        x,
        wt,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    let biased = g.pointwise(conv, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y = g.pointwise_unary(
        biased,
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd),
    );
    g.set_output(y, true)
        .set_uid(y, Y_UID)
        .set_tensor_name(y, "y");
    g
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    f.write_all(bytes)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    f.sync_all()
        .map_err(|e| format!("cannot sync {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot rename to {}: {e}", path.display()))
}

/// 5×7 bitmap glyphs (rows top to bottom, bit 4 = leftmost column) for the captions.
fn glyph(c: char) -> [u8; 7] {
    match c {
        'a' => [0, 0, 14, 1, 15, 17, 15],
        'b' => [16, 16, 22, 25, 17, 17, 30],
        'c' => [0, 0, 14, 16, 16, 17, 14],
        'e' => [0, 0, 14, 17, 31, 16, 14],
        'i' => [4, 0, 12, 4, 4, 4, 14],
        'l' => [12, 4, 4, 4, 4, 4, 14],
        'n' => [0, 0, 22, 25, 17, 17, 17],
        'o' => [0, 0, 14, 17, 17, 17, 14],
        'p' => [0, 0, 30, 17, 30, 16, 16],
        'r' => [0, 0, 22, 25, 16, 16, 16],
        't' => [8, 8, 28, 8, 8, 9, 6],
        'u' => [0, 0, 17, 17, 17, 19, 13],
        'x' => [0, 0, 17, 10, 4, 10, 17],
        'y' => [0, 0, 17, 17, 15, 1, 14],
        'S' => [15, 16, 16, 14, 1, 1, 30],
        'L' => [16, 16, 16, 16, 16, 16, 31],
        '-' => [0, 0, 0, 31, 0, 0, 0],
        _ => [0; 7],
    }
}

/// Caption strip height in pixels (glyphs drawn at scale 2 with a 3-pixel margin).
const CAPTION: usize = 20;

/// Draws `text` in white at (`x0`, `y0`) into a gray image of width `iw`, glyphs scaled by 2.
fn draw_text(img: &mut [u8], iw: usize, x0: usize, y0: usize, text: &str) {
    for (n, ch) in text.chars().enumerate() {
        for (r, bits) in glyph(ch).iter().enumerate() {
            for col in 0..5 {
                if bits & (16 >> col) != 0 {
                    for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let x = x0 + n * 12 + col * 2 + dx;
                        if x < iw {
                            img[(y0 + r * 2 + dy) * iw + x] = 255;
                        }
                    }
                }
            }
        }
    }
}

/// Writes one 8-bit gray PNG: the input (channel mean) and the 4 feature maps side by side
/// (each map scaled by its max, square-root contrast), a caption strip under each tile naming
/// it. Only the picture; the computed outputs are not changed.
fn write_feature_png(path: &Path, x: &[f32], y: &[f32], h: usize, w: usize) -> Result<(), String> {
    let tiles = 1 + OUT_CHANNELS;
    let (ow, oh) = (tiles * w, h + CAPTION);
    let mut img = vec![0u8; ow * oh];
    for r in 0..h {
        for c in 0..w {
            let i = r * w + c;
            let mean = (x[i] + x[h * w + i] + x[2 * h * w + i]) / 3.0;
            img[r * ow + c] = (mean.clamp(0.0, 1.0) * 255.0).round() as u8;
        }
    }
    for k in 0..OUT_CHANNELS {
        let map = &y[k * h * w..(k + 1) * h * w];
        let max = map.iter().fold(0f32, |m, v| m.max(*v)).max(1e-12);
        for r in 0..h {
            for c in 0..w {
                let v = (map[r * w + c] / max).clamp(0.0, 1.0);
                img[r * ow + (k + 1) * w + c] = (v.sqrt() * 255.0).round() as u8;
            }
        }
    }
    for (t, name) in ["input", "Sobel-x", "Sobel-y", "Laplacian", "blur"]
        .iter()
        .enumerate()
    {
        draw_text(&mut img, ow, t * w + 4, h + 3, name);
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, ow as u32, oh as u32);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header().map_err(|e| e.to_string())?;
        wr.write_image_data(&img).map_err(|e| e.to_string())?;
    }
    write_atomic(path, &out)
}

struct Report {
    rows: Vec<(String, String)>,
    failures: Vec<String>,
}

impl Report {
    fn step<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        let t = Instant::now();
        let r = f();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match &r {
            Ok(_) => println!("{name:<46} {ms:>10.2} ms"),
            Err(e) => println!("{name:<46} {ms:>10.2} ms  FAILED: {e}"),
        }
        r
    }
    fn check(&mut self, what: &str, ok: bool) {
        println!("  check: {what}: {}", if ok { "ok" } else { "MISMATCH" });
        if !ok {
            self.failures.push(what.to_string());
        }
    }
}

fn handle_for(device: &Option<String>) -> Result<Handle, String> {
    let h = match device.as_deref() {
        Some("cpu") => Handle::cpu(),
        Some(_) => Handle::gpu(),
        None => Handle::new(),
    };
    h.map_err(|e| e.to_string())
}

fn run(args: &mut Args, rep: &mut Report) -> Result<(), String> {
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    args.out = std::fs::canonicalize(&args.out)
        .map_err(|e| format!("cannot resolve {}: {e}", args.out.display()))?;
    let (h, w, x_host) = read_image(&args.input)?;
    let input = std::fs::canonicalize(&args.input).unwrap_or_else(|_| args.input.clone());
    println!("input: {} ({w}x{h} RGB)", input.display());
    let n_out = OUT_CHANNELS * h * w;
    let handle = handle_for(&args.device)?;
    println!("handle: {handle:?}");
    let on = |data: &[f32]| Buffer::from_slice_on(&handle, data).map_err(|e| e.to_string());
    let x = on(&x_host)?;
    let wt = on(&filters())?;
    let b = on(&[0.0f32, 0.0, 0.0, -0.05])?;
    let mut graph = conv_bias_relu_graph(h, w);
    rep.step("build", || graph.build(&handle).map_err(|e| e.to_string()))?;
    println!(
        "  engine: {}",
        graph.engine_name().map_err(|e| e.to_string())?
    );
    let mut ws = Buffer::<u8>::alloc(&handle, graph.workspace_size().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let exec = |g: &Graph, hd: &Handle, ws: &mut Buffer<u8>| -> Result<Vec<f32>, String> {
        let mut y = Buffer::<f32>::filled(n_out, f32::NAN)
            .to_handle(hd)
            .map_err(|e| e.to_string())?;
        let pack = VariantPack::new()
            .with(X_UID, &x)
            .with(W_UID, &wt)
            .with(B_UID, &b)
            .with(Y_UID, &mut y);
        g.execute(hd, pack, Some(ws)).map_err(|e| e.to_string())?;
        y.to_vec().map_err(|e| e.to_string())
    };
    let y0 = rep.step("execute", || exec(&graph, &handle, &mut ws))?;
    let y0_bytes: Vec<u8> = y0.iter().flat_map(|v| v.to_le_bytes()).collect();
    if handle.is_gpu() {
        // Same graph on the CPU reference engine; f32 tolerance 1e-5 absolute (inputs in
        // [0, 1], 27-term dot products; the GPU uses fused multiply-adds in another order).
        let cpu = Handle::cpu().map_err(|e| e.to_string())?;
        let yc = rep.step("execute on the CPU reference engine", || {
            let mut gc = conv_bias_relu_graph(h, w);
            gc.build(&cpu).map_err(|e| e.to_string())?;
            let (xc, wc) = (Buffer::from_slice(&x_host), Buffer::from_slice(&filters()));
            let bc = Buffer::from_slice(&[0.0f32, 0.0, 0.0, -0.05]);
            let mut yc = Buffer::<f32>::filled(n_out, f32::NAN);
            let pack = VariantPack::new()
                .with(X_UID, &xc)
                .with(W_UID, &wc)
                .with(B_UID, &bc)
                .with(Y_UID, &mut yc);
            let wsn = gc.workspace_size().map_err(|e| e.to_string())?;
            let mut wsc = Buffer::<u8>::alloc(&cpu, wsn).map_err(|e| e.to_string())?;
            gc.execute(&cpu, pack, Some(&mut wsc))
                .map_err(|e| e.to_string())?;
            yc.to_vec().map_err(|e| e.to_string())
        })?;
        let diff = y0
            .iter()
            .zip(&yc)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        println!("  GPU vs CPU max |diff| = {diff:e} (tolerance 1e-5)");
        rep.check("GPU output within 1e-5 of the CPU reference", diff <= 1e-5);
    }
    let png_path = args.out.join("features.png");
    rep.step("write feature maps PNG", || {
        write_feature_png(&png_path, &x_host, &y0, h, w)
    })?;
    rep.rows.push((
        "features.png".into(),
        sha256_hex(&std::fs::read(&png_path).unwrap_or_default()),
    ));
    rep.rows
        .push(("output y (f32 LE)".into(), sha256_hex(&y0_bytes)));

    // Graph + plan container.
    let bin_path = args.out.join("conv_bias_relu.hdgp");
    let saved = rep.step("to_binary → file (temp, fsync, rename)", || {
        let b = graph.to_binary().map_err(|e| e.to_string())?;
        write_atomic(&bin_path, &b)?;
        Ok(b)
    })?;
    rep.rows.push((
        format!("to_binary ({} bytes)", saved.len()),
        sha256_hex(&saved),
    ));
    let on_disk = std::fs::read(&bin_path).map_err(|e| e.to_string())?;
    let h2 = rep.step("fresh Handle", || handle_for(&args.device))?;
    let g2 = rep.step("from_binary", || {
        Graph::from_binary(&h2, &on_disk).map_err(|e| e.to_string())
    })?;
    let mut ws2 = Buffer::<u8>::alloc(&h2, g2.workspace_size().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let y1 = rep.step("execute loaded graph+plan", || exec(&g2, &h2, &mut ws2))?;
    rep.check(
        "graph+plan output bit-identical to the built plan's",
        bits(&y1) == bits(&y0),
    );
    let resaved = rep.step("re-save to_binary", || {
        g2.to_binary().map_err(|e| e.to_string())
    })?;
    rep.check(
        "re-saved container byte-identical to the file",
        resaved == on_disk,
    );

    // Plan only.
    let plan_path = args.out.join("conv_bias_relu.plan");
    let plan = rep.step("to_compiled_plan_binary → file", || {
        let p = graph.to_compiled_plan_binary().map_err(|e| e.to_string())?;
        write_atomic(&plan_path, &p)?;
        Ok(p)
    })?;
    rep.rows.push((
        format!("to_compiled_plan_binary ({} bytes)", plan.len()),
        sha256_hex(&plan),
    ));
    let plan_disk = std::fs::read(&plan_path).map_err(|e| e.to_string())?;
    let h3 = rep.step("fresh Handle", || handle_for(&args.device))?;
    let g3 = rep.step("from_compiled_plan_binary", || {
        Graph::from_compiled_plan_binary(&h3, &plan_disk).map_err(|e| e.to_string())
    })?;
    let mut ws3 = Buffer::<u8>::alloc(&h3, g3.workspace_size().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let y2 = rep.step("execute loaded plan", || exec(&g3, &h3, &mut ws3))?;
    rep.check(
        "plan-only output bit-identical to the built plan's",
        bits(&y2) == bits(&y0),
    );
    let replan = rep.step("re-save to_compiled_plan_binary", || {
        g3.to_compiled_plan_binary().map_err(|e| e.to_string())
    })?;
    rep.check(
        "re-saved plan byte-identical to the file",
        replan == plan_disk,
    );
    let inner = g2.to_compiled_plan_binary().map_err(|e| e.to_string())?;
    rep.check(
        "plan inside the container equals the plan-only save",
        inner == plan_disk,
    );
    Ok(())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

fn main() -> ExitCode {
    init_log();
    let mut args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut rep = Report {
        rows: Vec::new(),
        failures: Vec::new(),
    };
    let result = run(&mut args, &mut rep);
    if !rep.rows.is_empty() {
        println!("\n{:<40} sha256", "artifact");
        for (k, v) in &rep.rows {
            println!("{k:<40} {v}");
        }
    }
    if result.is_ok() {
        println!("outputs written to {}", args.out.display());
    }
    match result {
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
        Ok(()) if !rep.failures.is_empty() => {
            eprintln!("FAILED checks: {}", rep.failures.join("; "));
            ExitCode::FAILURE
        }
        Ok(()) => {
            println!("all checks passed");
            ExitCode::SUCCESS
        }
    }
}
