//! ResNet-50 v1.5 forward, end to end on the CPU reference engine, against ONNX Runtime
//! (issue 30).
//!
//! **What.** torchvision's ResNet-50 v1.5 (stem 7×7/2 conv 64 + BN + ReLU + 3×3/2 max pool;
//! bottleneck stages [3, 4, 6, 3] of widths 64/128/256/512 ×4, the stride 2 of stages 2–4 on
//! the first block's 3×3 conv (v1.5), a 1×1 conv + BN projection shortcut on each stage's first
//! block; global average pool; FC 2048 → 1000 with bias), NCHW f32, 224×224 input, batch 1 and
//! 8, as **one hipdnn graph** on `Handle::cpu()`, built once per batch size and executed once
//! per forward with a `VariantPack` of the input, every weight and bias, and the logits.
//!
//! Graph: every conv + BN is `conv_fprop → ADD(bias) → RELU_FWD` (the reference engine's plan
//! fuses the chain into the conv's GEMM output pass); a block's last conv is `conv_fprop →
//! ADD(bias)`, then `ADD(residual)` and `RELU_FWD`; max pool is `resample` (MAXPOOL, 3×3/2, pad
//! 1, NEG_INF_PAD); the global average pool a `reduction` AVG to `(N, 2048, 1, 1)`; the FC a
//! 1×1 `conv_fprop` with `fc.weight` `(1000, 2048)` read as `(1000, 2048, 1, 1)` (same bytes)
//! and its bias fused; logits `(N, 1000, 1, 1)`.
//!
//! **Weights.** Random, deterministic, torchvision names and shapes, unfolded (conv weights and
//! batchnorm `weight`/`bias`/`running_mean`/`running_var`, eps 1e-5), generated once by
//! `python3 hipdnn-rs/benches/peers/resnet50_peer.py weights target/resnet50/weights.safetensors`
//! (run by this bench when the file is missing; never committed). Batchnorm is folded here, as a
//! deployment folds inference BN: `s = γ / √(var + ε)`, `w' = w·s` (per output channel),
//! `b' = β − mean·s`. The ONNX model keeps `Conv` + `BatchNormalization` unfolded and ONNX
//! Runtime's optimizer does the same fold, so both sides run folded convs from the same file.
//!
//! **Compared.** One warm-up forward each, then alternating rounds per batch size: ours
//! ([`REPS`] forwards, median kept), then ONNX Runtime ([`REPS`] `session.run`s in the
//! long-lived `resnet50_peer.py serve` subprocess, median kept), with a 300 ms pause between
//! the sides (spin-waiting worker threads go idle). ORT: CPU execution provider, graph
//! optimization ALL, intra-op threads = our rayon threads, inter-op 1. Printed: every round,
//! the medians over the rounds of ours, ORT and ORT ms / ours ms (the speed ratio "ours/ORT",
//! above 1 when we are faster), and the load average at start and end. Before timing, our logits are
//! compared with ORT's on the same input; the bench panics when `max |ours − ORT| / max |ORT|`
//! exceeds [`TOLERANCE`].
//!
//! ```text
//! CARGO_TARGET_DIR=… cargo bench -p hipdnn --no-default-features --bench cpu_resnet50
//! ```
//!
//! Environment: `RAYON_NUM_THREADS` (default 2; ORT's intra-op threads follow it),
//! `HIPDNN_RESNET_ROUNDS` (default 3), `HIPDNN_RESNET_BATCHES` (default `1,8`),
//! `HIPDNN_RESNET_PROFILE=N` (no ORT: N forwards of the first batch size only, for `perf`),
//! `HIPDNN_RESNET_BREAKDOWN=1` (no ORT: every node timed as a graph of its own, summed by kind).
//! Needs `python3 -m pip install numpy onnx onnxruntime`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use hipdnn::{
    Buffer, ConvFpropAttributes, DataType, Graph, Handle, PaddingMode, PointwiseAttributes,
    PointwiseMode, ReductionAttributes, ReductionMode, ResampleFwdAttributes, ResampleMode,
    TensorAttributes as T, TensorId, VariantPack,
};

/// Bottleneck stages: (blocks, width).
const STAGES: [(usize, usize); 4] = [(3, 64), (4, 128), (6, 256), (3, 512)];
/// Bottleneck expansion.
const EXPANSION: usize = 4;
/// Batchnorm epsilon (torchvision's default).
const BN_EPS: f32 = 1e-5;
/// Forwards per round and side.
const REPS: usize = 5;
/// Largest `max |ours − ORT| / max |ORT|` over the logits accepted.
const TOLERANCE: f32 = 1e-3;
/// Images in the weight file's `input`.
const MAX_BATCH: usize = 8;
/// UIDs: input, logits; layer i has weight `W0 + 2i` and bias `W0 + 2i + 1`.
const U_X: i64 = 1;
const U_LOGITS: i64 = 2;
const W0: i64 = 100;

/// One conv layer with its batchnorm folded in (or the FC as a 1×1 conv): weight
/// `(K, C, R, R)` row-major and per-channel bias `(K)`.
struct Layer {
    k: usize,
    c: usize,
    r: usize,
    w: Buffer<f32>,
    b: Buffer<f32>,
}

/// The torchvision (conv, batchnorm) name pairs in the order the graph uses them: the stem,
/// then per block conv1, conv2, conv3 and, on a stage's first block, the projection.
fn conv_names() -> Vec<(String, String)> {
    let mut v = vec![("conv1".to_string(), "bn1".to_string())];
    for (s, &(blocks, _)) in STAGES.iter().enumerate() {
        for b in 0..blocks {
            let p = format!("layer{}.{b}", s + 1);
            for i in 1..=3 {
                v.push((format!("{p}.conv{i}"), format!("{p}.bn{i}")));
            }
            if b == 0 {
                v.push((format!("{p}.downsample.0"), format!("{p}.downsample.1")));
            }
        }
    }
    v
}

fn tensor<'a>(st: &'a safetensors::SafeTensors<'a>, name: &str) -> (Vec<usize>, Vec<f32>) {
    let t = st
        .tensor(name)
        .unwrap_or_else(|e| panic!("weights: {name}: {e}"));
    assert_eq!(
        t.dtype(),
        safetensors::Dtype::F32,
        "weights: {name} not F32"
    );
    let v = t
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (t.shape().to_vec(), v)
}

/// Folds inference batchnorm `bn` into conv `conv`: `s = γ/√(var+ε)`, `w' = w·s`,
/// `b' = β − mean·s`.
fn fold(st: &safetensors::SafeTensors<'_>, conv: &str, bn: &str) -> Layer {
    let (wd, mut w) = tensor(st, &format!("{conv}.weight"));
    let (_, gamma) = tensor(st, &format!("{bn}.weight"));
    let (_, beta) = tensor(st, &format!("{bn}.bias"));
    let (_, mean) = tensor(st, &format!("{bn}.running_mean"));
    let (_, var) = tensor(st, &format!("{bn}.running_var"));
    let (k, c, r) = (wd[0], wd[1], wd[2]);
    let per_k = c * r * r;
    let mut b = vec![0f32; k];
    for o in 0..k {
        let s = gamma[o] / (var[o] + BN_EPS).sqrt();
        w[o * per_k..(o + 1) * per_k]
            .iter_mut()
            .for_each(|v| *v *= s);
        b[o] = beta[o] - mean[o] * s;
    }
    Layer {
        k,
        c,
        r,
        w: Buffer::from_slice(&w),
        b: Buffer::from_slice(&b),
    }
}

/// Every layer (53 folded convs, then the FC as a 1×1 conv) and the input images.
fn load(path: &Path) -> (Vec<Layer>, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let st = safetensors::SafeTensors::deserialize(&bytes).expect("weights: safetensors header");
    let mut layers: Vec<Layer> = conv_names().iter().map(|(c, b)| fold(&st, c, b)).collect();
    let (fd, fw) = tensor(&st, "fc.weight");
    let (_, fb) = tensor(&st, "fc.bias");
    layers.push(Layer {
        k: fd[0],
        c: fd[1],
        r: 1,
        w: Buffer::from_slice(&fw),
        b: Buffer::from_slice(&fb),
    });
    let (xd, x) = tensor(&st, "input");
    assert_eq!(xd, [MAX_BATCH, 3, 224, 224], "weights: input shape");
    (layers, x)
}

fn dense(dims: [i64; 4]) -> [i64; 4] {
    [dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1]
}

/// Builds the graph of the whole network for batch `n`, walking the layers in
/// [`conv_names`]' order.
struct Builder<'l> {
    g: Graph,
    layers: &'l [Layer],
    next: usize,
    /// Every conv built: (layer, x dims, stride, pad, relu), for the breakdown.
    convs: Vec<ConvCall>,
}

/// One conv of the network as built: layer index, input dims, stride, padding, ReLU after.
#[derive(Clone)]
struct ConvCall {
    layer: usize,
    x: Vec<i64>,
    stride: i64,
    pad: i64,
    relu: bool,
}

impl Builder<'_> {
    /// The next layer as `conv_fprop → ADD(bias)`, then `RELU_FWD` when `relu`.
    fn conv(&mut self, x: TensorId, stride: i64, pad: i64, relu: bool) -> TensorId {
        let i = self.next;
        self.next += 1;
        self.convs.push(ConvCall {
            layer: i,
            x: self.g.tensor_attributes(x).dims.clone(),
            stride,
            pad,
            relu,
        });
        let l = &self.layers[i];
        let (k, c, r) = (l.k as i64, l.c as i64, l.r as i64);
        let wd = [k, c, r, r];
        let w = self.g.tensor(
            T::new(format!("w{i}"))
                .uid(W0 + 2 * i as i64)
                .data_type(DataType::Float)
                .dims(wd)
                .strides(dense(wd)),
        );
        let b = self.g.tensor(
            T::new(format!("b{i}"))
                .uid(W0 + 2 * i as i64 + 1)
                .data_type(DataType::Float)
                .dims([1, k, 1, 1])
                .strides([k, 1, 1, 1]),
        );
        let y = self.g.conv_fprop(
            x,
            w,
            ConvFpropAttributes::new()
                .padding([pad, pad])
                .stride([stride, stride])
                .dilation([1, 1]),
        );
        let y = self
            .g
            .pointwise(y, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
        if relu { self.relu(y) } else { y }
    }

    fn relu(&mut self, x: TensorId) -> TensorId {
        self.g
            .pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd))
    }
}

fn f32_graph(name: String) -> Graph {
    let mut g = Graph::new();
    g.set_name(name);
    g.set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    g
}

/// A bound dense NCHW f32 tensor.
fn bound(g: &mut Graph, name: &str, uid: i64, dims: [i64; 4]) -> TensorId {
    g.tensor(
        T::new(name)
            .uid(uid)
            .data_type(DataType::Float)
            .dims(dims)
            .strides(dense(dims)),
    )
}

fn max_pool() -> ResampleFwdAttributes {
    ResampleFwdAttributes::new()
        .window([3, 3])
        .stride([2, 2])
        .pre_padding([1, 1])
        .post_padding([1, 1])
        .resample_mode(ResampleMode::MaxPool)
        .padding_mode(PaddingMode::NegInfPad)
}

/// The whole network for batch `n` as one graph, and the convs in the order built.
fn build_graph(layers: &[Layer], n: usize) -> (Graph, Vec<ConvCall>) {
    let n = n as i64;
    let mut g = f32_graph(format!("resnet50_v1_5_b{n}"));
    let x = bound(&mut g, "x", U_X, [n, 3, 224, 224]);
    let mut b = Builder {
        g,
        layers,
        next: 0,
        convs: Vec::new(),
    };
    let y = b.conv(x, 2, 3, true);
    let mut y = b.g.resample_fwd(y, max_pool());
    for (s, &(blocks, _)) in STAGES.iter().enumerate() {
        for blk in 0..blocks {
            // v1.5: the stage's stride is on the first block's 3×3 conv.
            let stride = if blk == 0 && s > 0 { 2 } else { 1 };
            let t = b.conv(y, 1, 0, true);
            let t = b.conv(t, stride, 1, true);
            let t = b.conv(t, 1, 0, false);
            let short = if blk == 0 {
                b.conv(y, stride, 0, false)
            } else {
                y
            };
            let sum =
                b.g.pointwise(t, short, PointwiseAttributes::with_mode(PointwiseMode::Add));
            y = b.relu(sum);
        }
    }
    let c = (STAGES[3].1 * EXPANSION) as i64;
    let pooled = b.g.reduction(
        y,
        [n, c, 1, 1],
        ReductionAttributes::new().mode(ReductionMode::Avg),
    );
    let logits = b.conv(pooled, 1, 0, false);
    assert_eq!(b.next, layers.len(), "every layer used once");
    let mut g = b.g;
    g.set_output(logits, true).set_uid(logits, U_LOGITS);
    (g, b.convs)
}

/// One network for one batch size: the built graph, its input and output buffers.
struct Net<'l> {
    n: usize,
    g: Graph,
    layers: &'l [Layer],
    x: Buffer<f32>,
    out: Buffer<f32>,
    ws: Buffer<u8>,
}

impl Net<'_> {
    /// One forward: a `VariantPack` of every buffer, one `Graph::execute`.
    fn forward(&mut self, handle: &Handle) -> Duration {
        let t = Instant::now();
        let mut pack = VariantPack::new().input(U_X, &self.x);
        for (i, l) in self.layers.iter().enumerate() {
            pack = pack
                .input(W0 + 2 * i as i64, &l.w)
                .input(W0 + 2 * i as i64 + 1, &l.b);
        }
        let pack = pack.output(U_LOGITS, &mut self.out);
        self.g
            .execute(handle, pack, Some(&mut self.ws))
            .expect("execute");
        t.elapsed()
    }
}

/// Median ms of 3 executions of `g` (after one warm-up) with `inputs` bound and a fresh
/// output of `out_len` elements at [`U_LOGITS`].
fn time_graph(
    handle: &Handle,
    g: &mut Graph,
    inputs: &[(i64, &Buffer<f32>)],
    out_len: usize,
) -> f64 {
    g.build(handle)
        .expect("build: the CPU engine refused the graph");
    let mut out = Buffer::<f32>::zeros(out_len);
    let mut ws = Buffer::<u8>::zeros(g.workspace_size().expect("workspace size"));
    let mut run = || {
        let t = Instant::now();
        let mut pack = VariantPack::new();
        for &(u, b) in inputs {
            pack = pack.input(u, b);
        }
        g.execute(handle, pack.output(U_LOGITS, &mut out), Some(&mut ws))
            .expect("execute");
        t.elapsed()
    };
    run();
    ms(&(0..3).map(|_| run()).collect::<Vec<_>>())
}

fn volume(d: &[i64]) -> usize {
    d.iter().product::<i64>() as usize
}

/// Where the time of one batch-`n` forward goes: every node of the network timed as its own
/// graph (bound input and output, so each includes converting its input and storing its
/// output, which the whole graph does not), summed by kind; the ten slowest convs.
fn breakdown(handle: &Handle, layers: &[Layer], n: usize, whole_ms: f64) {
    let (_, convs) = build_graph(layers, n);
    let names: Vec<String> = conv_names()
        .into_iter()
        .map(|(c, _)| c)
        .chain(["fc".to_string()])
        .collect();
    let mut kinds: Vec<(String, f64, usize)> = Vec::new();
    let mut add = |kind: String, t: f64| match kinds.iter_mut().find(|k| k.0 == kind) {
        Some(k) => {
            k.1 += t;
            k.2 += 1;
        }
        None => kinds.push((kind, t, 1)),
    };
    let mut per_conv = Vec::new();
    for c in &convs {
        let l = &layers[c.layer];
        let xd: [i64; 4] = c.x.clone().try_into().expect("4-D");
        let mut g = f32_graph(format!("layer{}", c.layer));
        let x = bound(&mut g, "x", U_X, xd);
        let mut b = Builder {
            g,
            layers,
            next: c.layer,
            convs: Vec::new(),
        };
        let y = b.conv(x, c.stride, c.pad, c.relu);
        let mut g = b.g;
        let yd = g.tensor_attributes(y).dims.clone();
        g.set_output(y, true).set_uid(y, U_LOGITS);
        let xb = Buffer::<f32>::filled(volume(&xd), 0.5);
        let (wu, bu) = (W0 + 2 * c.layer as i64, W0 + 2 * c.layer as i64 + 1);
        let t = time_graph(
            handle,
            &mut g,
            &[(U_X, &xb), (wu, &l.w), (bu, &l.b)],
            volume(&yd),
        );
        let kind = format!(
            "conv {}×{} s{} + bias{}",
            l.r,
            l.r,
            c.stride,
            if c.relu { " + relu" } else { "" }
        );
        add(kind, t);
        per_conv.push((t, names[c.layer].clone(), c.x.clone(), l.k, l.r, c.stride));
    }
    let n = n as i64;
    // Max pool.
    let mut g = f32_graph("maxpool".into());
    let pd = [n, 64, 112, 112];
    let x = bound(&mut g, "x", U_X, pd);
    let y = g.resample_fwd(x, max_pool());
    g.set_output(y, true).set_uid(y, U_LOGITS);
    let xb = Buffer::<f32>::filled(volume(&pd), 0.5);
    add(
        "max pool 3×3 s2".into(),
        time_graph(handle, &mut g, &[(U_X, &xb)], volume(&pd) / 4),
    );
    // Residual ADD + RELU, once per block.
    let mut hw = 56;
    for (s, &(blocks, width)) in STAGES.iter().enumerate() {
        if s > 0 {
            hw /= 2;
        }
        let d = [n, (width * EXPANSION) as i64, hw, hw];
        let mut g = f32_graph("residual".into());
        let a = bound(&mut g, "a", U_X, d);
        let r = bound(&mut g, "r", 3, d);
        let sum = g.pointwise(a, r, PointwiseAttributes::with_mode(PointwiseMode::Add));
        let y = g.pointwise_unary(sum, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
        g.set_output(y, true).set_uid(y, U_LOGITS);
        let ab = Buffer::<f32>::filled(volume(&d), 0.5);
        let t = time_graph(handle, &mut g, &[(U_X, &ab), (3, &ab)], volume(&d));
        for _ in 0..blocks {
            add("residual add + relu".into(), t);
        }
    }
    // Global average pool.
    let mut g = f32_graph("avgpool".into());
    let d = [n, 2048, 7, 7];
    let x = bound(&mut g, "x", U_X, d);
    let y = g.reduction(
        x,
        [n, 2048, 1, 1],
        ReductionAttributes::new().mode(ReductionMode::Avg),
    );
    g.set_output(y, true).set_uid(y, U_LOGITS);
    let xb = Buffer::<f32>::filled(volume(&d), 0.5);
    add(
        "global avg pool (reduction AVG)".into(),
        time_graph(handle, &mut g, &[(U_X, &xb)], volume(&d) / 49),
    );

    let total: f64 = kinds.iter().map(|k| k.1).sum();
    println!(
        "\nbreakdown, batch {n}: nodes timed one graph each, sum {total:.1} ms (whole graph {whole_ms:.1} ms)\n"
    );
    println!("| node kind | count | ms (sum) | share of sum |");
    println!("|---|---|---|---|");
    kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (k, t, c) in &kinds {
        println!("| {k} | {c} | {t:.1} | {:.0} % |", 100.0 * t / total);
    }
    per_conv.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("\n| slowest convs | x dims | K | filter | stride | ms | GFLOP/s |");
    println!("|---|---|---|---|---|---|---|");
    for (t, name, x, k, r, s) in per_conv.iter().take(10) {
        let (oh, ow) = (
            (x[2] + 2 * (*r as i64 / 2) - *r as i64) / s + 1,
            (x[3] + 2 * (*r as i64 / 2) - *r as i64) / s + 1,
        );
        let flops = 2.0 * (x[0] * x[1] * *k as i64 * oh * ow) as f64 * (*r * *r) as f64;
        println!(
            "| {name} | {x:?} | {k} | {r}×{r} | {s} | {t:.1} | {:.1} |",
            flops / t / 1e6
        );
    }
}

/// The ONNX Runtime subprocess (`resnet50_peer.py serve`).
struct Peer {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    info: String,
}

fn peer_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/resnet50_peer.py")
}

impl Peer {
    fn start(weights: &Path, threads: usize) -> Peer {
        let mut child = Command::new("python3")
            .arg(peer_script())
            .arg("serve")
            .arg(weights)
            .arg(threads.to_string())
            .env_remove("OPENBLAS_CORETYPE")
            .env_remove("OPENBLAS_L2_SIZE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 not runnable; install python3 and numpy onnx onnxruntime");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut p = Peer {
            _child: child,
            stdin,
            stdout,
            info: String::new(),
        };
        let v = p.read();
        if let Some(e) = v.get("error") {
            panic!("ONNX Runtime peer: {e}");
        }
        let i = &v["info"];
        p.info = format!(
            "ONNX Runtime {} (CPU EP, graph optimization ALL, intra-op threads {}, inter-op 1), onnx {}, numpy {}",
            i["onnxruntime"].as_str().unwrap_or("?"),
            i["ort_threads"],
            i["onnx"].as_str().unwrap_or("?"),
            i["numpy"].as_str().unwrap_or("?"),
        );
        p
    }

    fn read(&mut self) -> serde_json::Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("peer stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("peer said {line:?}: {e}"))
    }

    fn ask(&mut self, req: serde_json::Value) -> serde_json::Value {
        writeln!(self.stdin, "{req}").expect("peer stdin");
        self.stdin.flush().expect("peer stdin");
        let v = self.read();
        if let Some(e) = v.get("error") {
            panic!("ONNX Runtime peer: {e}");
        }
        v
    }

    fn logits(&mut self, n: usize) -> Vec<f32> {
        let v = self.ask(serde_json::json!({"cmd": "logits", "batch": n}));
        let l = v["logits"].as_array().expect("logits");
        l.iter()
            .map(|x| x.as_f64().expect("number") as f32)
            .collect()
    }

    fn times(&mut self, n: usize, reps: usize) -> Vec<Duration> {
        let v = self.ask(serde_json::json!({"cmd": "time", "batch": n, "reps": reps}));
        let t = v["times_s"].as_array().expect("times_s");
        t.iter()
            .map(|x| Duration::from_secs_f64(x.as_f64().expect("number")))
            .collect()
    }
}

/// Pause between the sides, so the other side's spin-waiting worker threads are idle.
fn settle() {
    std::thread::sleep(Duration::from_millis(300));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn ms(d: &[Duration]) -> f64 {
    median(d.iter().map(|d| d.as_secs_f64() * 1e3).collect())
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`), or `?` where unreadable.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let load_start = loadavg();
    let threads = env_usize("RAYON_NUM_THREADS", 2);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .expect("rayon global pool");
    let rounds = env_usize("HIPDNN_RESNET_ROUNDS", 3);
    let profile = env_usize("HIPDNN_RESNET_PROFILE", 0);
    let batches: Vec<usize> = std::env::var("HIPDNN_RESNET_BATCHES")
        .unwrap_or_else(|_| "1,8".into())
        .split(',')
        .map(|b| {
            b.trim()
                .parse()
                .expect("HIPDNN_RESNET_BATCHES: a list of sizes")
        })
        .collect();
    assert!(
        batches.iter().all(|&b| (1..=MAX_BATCH).contains(&b)),
        "batch sizes 1 to {MAX_BATCH}"
    );

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/resnet50");
    let weights = dir.join("weights.safetensors");
    if !weights.is_file() {
        std::fs::create_dir_all(&dir).expect("create target/resnet50");
        println!("writing {} (once)", weights.display());
        let ok = Command::new("python3")
            .arg(peer_script())
            .arg("weights")
            .arg(&weights)
            .status()
            .expect("python3 not runnable");
        assert!(ok.success(), "resnet50_peer.py weights failed");
    }
    let t = Instant::now();
    let (layers, input) = load(&weights);
    println!(
        "loaded and folded {} layers in {:.0} ms; load average at start {load_start}; rayon threads {threads}",
        layers.len(),
        t.elapsed().as_secs_f64() * 1e3
    );
    let handle = Handle::cpu().expect("CPU handle");
    let mut nets: Vec<Net<'_>> = batches
        .iter()
        .map(|&n| {
            let t = Instant::now();
            let (mut g, _) = build_graph(&layers, n);
            g.build(&handle)
                .expect("build: the CPU engine refused the graph");
            let ws = Buffer::<u8>::zeros(g.workspace_size().expect("workspace size"));
            println!(
                "batch {n}: graph of {} tensors built in {:.0} ms",
                g.tensor_count(),
                t.elapsed().as_secs_f64() * 1e3
            );
            Net {
                n,
                g,
                layers: &layers,
                x: Buffer::from_slice(&input[..n * 3 * 224 * 224]),
                out: Buffer::<f32>::zeros(n * 1000),
                ws,
            }
        })
        .collect();

    if env_usize("HIPDNN_RESNET_BREAKDOWN", 0) > 0 {
        for net in &mut nets {
            net.forward(&handle);
            let whole = ms(&(0..3).map(|_| net.forward(&handle)).collect::<Vec<_>>());
            breakdown(&handle, &layers, net.n, whole);
        }
        return;
    }
    if profile > 0 {
        let net = &mut nets[0];
        let d: Vec<Duration> = (0..profile).map(|_| net.forward(&handle)).collect();
        println!(
            "profile: batch {} × {profile} forwards, median {:.1} ms",
            net.n,
            ms(&d)
        );
        return;
    }

    let mut peer = Peer::start(&weights, threads);
    println!("{}", peer.info);
    // Correctness (and each side's warm-up): the same input, logits compared.
    for net in &mut nets {
        net.forward(&handle);
        let ours = net.out.to_vec().expect("logits");
        settle();
        let theirs = peer.logits(net.n);
        settle();
        assert_eq!(ours.len(), theirs.len());
        let scale = theirs.iter().fold(0f32, |m, v| m.max(v.abs()));
        let diff = ours
            .iter()
            .zip(&theirs)
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        let rel = diff / scale;
        println!(
            "batch {}: logits max |ours − ORT| = {diff:.3e}, max |ORT| = {scale:.3e}, relative {rel:.3e} (tolerance {TOLERANCE:.0e})",
            net.n
        );
        assert!(
            rel <= TOLERANCE && rel.is_finite(),
            "batch {}: our logits differ from ONNX Runtime's: relative max difference {rel:.3e} > {TOLERANCE:.0e}",
            net.n
        );
    }

    let mut rows = Vec::new();
    for net in &mut nets {
        let (mut o, mut p, mut r) = (Vec::new(), Vec::new(), Vec::new());
        for round in 1..=rounds {
            let ours = ms(&(0..REPS).map(|_| net.forward(&handle)).collect::<Vec<_>>());
            settle();
            let ort = ms(&peer.times(net.n, REPS));
            settle();
            println!(
                "batch {} round {round}: ours {ours:.1} ms, ORT {ort:.1} ms, ours/ORT {:.2}",
                net.n,
                ort / ours
            );
            rows.push(format!(
                "| {} | {round} | {ours:.1} | {ort:.1} | {:.2} |",
                net.n,
                ort / ours
            ));
            o.push(ours);
            p.push(ort);
            r.push(ort / ours);
        }
        let (mo, mp, mr) = (median(o), median(p), median(r));
        println!(
            "batch {}: median ours {mo:.1} ms, ORT {mp:.1} ms, ours/ORT {mr:.2}",
            net.n
        );
        rows.push(format!(
            "| {} | **median** | **{mo:.1}** | **{mp:.1}** | **{mr:.2}** |",
            net.n
        ));
    }
    println!(
        "\nrayon threads {threads}; {}; {REPS} forwards per round and side (median kept); load average (1/5/15 min) at start {load_start}, at end {}.\n",
        peer.info,
        loadavg()
    );
    println!("| batch | round | ours ms | ORT ms | ours/ORT (ORT ms ÷ ours ms) |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
}
