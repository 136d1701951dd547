//! GPU smoke tests: load the committed code objects (`engines/kernels/packed/<arch>/`) through
//! the `hip` layer, run pointwise and conv kernels over a small shape matrix and compare with
//! plain CPU loops in this file.
//!
//! Without a driver or device every test prints `skipped: no GPU: …` and passes.
//! `HIPDNN_PACKED_DIR` overrides the packed-kernel directory (for a test binary copied to
//! another machine).
//!
//! Tolerances (stated, per element, `r` = f64 reference rounded to the output type):
//! - f32 add/sub/mul/div/max/min/neg/abs/identity/relu: bit-exact.
//! - f32 exp/sigmoid/tanh/gelu: |d| ≤ 4e-6·|r| + 2e-7 (exp2-based math, ex2.approx on NVIDIA).
//! - f16/bf16 exact ops: bit-exact (device round-to-nearest-even = `half`'s).
//! - f16/bf16 transcendental: |d| ≤ 1 ulp of the 16-bit type at |r| (+ 1e-6 absolute).
//! - conv f32: |d| ≤ 1e-5·Σ|x·w| + 1e-6; conv f16: |d| ≤ 2e-3·Σ|x·w| + 1e-3 (f32 accumulation,
//!   one f16 rounding of the result).

use std::io::Write as _;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use half::{bf16, f16};
use hipdnn_hip::{
    ArgKind, ArgSpec, Device, DeviceBuffer, Event, Function, GpuRuntime, KernelArg, LaunchConfig,
    LaunchError, Module, Stream,
};
use hipdnn_kpack::KpackArchive;
use sha2::{Digest, Sha256};

fn packed_dir() -> PathBuf {
    std::env::var_os("HIPDNN_PACKED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed"))
}

struct Kernels {
    dev: Arc<Device>,
    stream: Stream,
    fns: BTreeMap<String, Function>,
    modules: Vec<Module>,
    label: String,
}

/// Opens device 0 and loads every kernel of one descriptor file (`kernels.json` or, on NVIDIA,
/// `kernels-ptx.json`). `None` (after printing why) when there is no GPU.
fn setup(file: &str) -> Option<Kernels> {
    let rt = match GpuRuntime::load() {
        Ok(rt) => rt,
        Err(e) => {
            drop(writeln!(std::io::stderr(), "skipped: {e}"));
            return None;
        }
    };
    let dev = rt.open_device(0).expect("open device 0");
    let arch = dev.arch().split(':').next().unwrap().to_string();
    let dir = packed_dir().join(&arch);
    let path = dir.join(file);
    let Ok(text) = std::fs::read_to_string(&path) else {
        drop(writeln!(
            std::io::stderr(),
            "skipped: no GPU kernels packed for {arch} ({} missing)",
            path.display()
        ));
        return None;
    };
    println!(
        "device 0: {} ({}), {} via {}",
        dev.info().name,
        dev.arch(),
        file,
        rt.library_name()
    );
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut archives: BTreeMap<String, KpackArchive> = BTreeMap::new();
    let mut modules: BTreeMap<String, Module> = BTreeMap::new();
    let mut fns = BTreeMap::new();
    for k in doc["kernels"].as_array().unwrap() {
        let ks = &k["kernel_source"];
        let lib = ks["library"].as_str().unwrap().to_string();
        let key = ks["toc_key"].as_str().unwrap().to_string();
        let archive = archives
            .entry(lib.clone())
            .or_insert_with(|| KpackArchive::open(dir.join(&lib)).unwrap());
        if !modules.contains_key(&key) {
            let bytes = archive.get_kernel(&key, &arch).unwrap();
            assert_eq!(
                hex::encode(Sha256::digest(&bytes)),
                ks["sha256"].as_str().unwrap(),
                "{key}"
            );
            let t = std::time::Instant::now();
            let m = dev
                .load_module(&bytes)
                .unwrap_or_else(|e| panic!("{key}: {e}"));
            println!(
                "  loaded {key} ({} bytes) in {:.1} ms",
                bytes.len(),
                t.elapsed().as_secs_f64() * 1e3
            );
            modules.insert(key.clone(), m);
        }
        let sig: Vec<ArgSpec> = ks["signature"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| ArgSpec {
                kind: ArgKind::parse(a["kind"].as_str().unwrap()).unwrap(),
                size: a["size"].as_u64().unwrap() as u32,
                offset: a["offset"].as_u64().unwrap() as u32,
            })
            .collect();
        let sym = ks["symbol"].as_str().unwrap();
        let f = modules[&key]
            .function(sym, &sig)
            .unwrap_or_else(|e| panic!("{sym}: {e}"));
        fns.insert(sym.to_string(), f);
    }
    let stream = Stream::new(&dev).unwrap();
    Some(Kernels {
        dev,
        stream,
        fns,
        modules: modules.into_values().collect(),
        label: format!("{arch}/{file}"),
    })
}

/// Deterministic pseudo-random values in [lo, hi).
fn values(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Dt {
    F32,
    F16,
    Bf16,
}

impl Dt {
    fn name(self) -> &'static str {
        match self {
            Dt::F32 => "f32",
            Dt::F16 => "f16",
            Dt::Bf16 => "bf16",
        }
    }
    /// Round an f32 to this type and back.
    fn round(self, v: f32) -> f32 {
        match self {
            Dt::F32 => v,
            Dt::F16 => f16::from_f32(v).to_f32(),
            Dt::Bf16 => bf16::from_f32(v).to_f32(),
        }
    }
    /// One ulp of this type at magnitude |v|.
    fn ulp(self, v: f32) -> f32 {
        let m = match self {
            Dt::F32 => 23,
            Dt::F16 => 10,
            Dt::Bf16 => 7,
        };
        let e = v.abs().max(f32::MIN_POSITIVE).log2().floor();
        let e = if self == Dt::F16 { e.max(-14.0) } else { e };
        2f32.powf(e - m as f32)
    }
}

/// A device tensor of any of the three types, with host conversion helpers.
enum Buf {
    F32(DeviceBuffer<f32>),
    H(DeviceBuffer<u16>),
}

impl Buf {
    fn upload(dev: &Arc<Device>, dt: Dt, v: &[f32]) -> Buf {
        match dt {
            Dt::F32 => Buf::F32(dev.htod(v).unwrap()),
            Dt::F16 => Buf::H(
                dev.htod(
                    &v.iter()
                        .map(|&x| f16::from_f32(x).to_bits())
                        .collect::<Vec<_>>(),
                )
                .unwrap(),
            ),
            Dt::Bf16 => Buf::H(
                dev.htod(
                    &v.iter()
                        .map(|&x| bf16::from_f32(x).to_bits())
                        .collect::<Vec<_>>(),
                )
                .unwrap(),
            ),
        }
    }
    fn zeros(dev: &Arc<Device>, dt: Dt, n: usize) -> Buf {
        Buf::upload(dev, dt, &vec![0.0; n])
    }
    fn download(&self, dt: Dt) -> Vec<f32> {
        match (self, dt) {
            (Buf::F32(b), _) => b.to_vec().unwrap(),
            (Buf::H(b), Dt::F16) => b
                .to_vec()
                .unwrap()
                .into_iter()
                .map(|x| f16::from_bits(x).to_f32())
                .collect(),
            (Buf::H(b), _) => b
                .to_vec()
                .unwrap()
                .into_iter()
                .map(|x| bf16::from_bits(x).to_f32())
                .collect(),
        }
    }
    fn arg(&self) -> KernelArg<'_> {
        match self {
            Buf::F32(b) => b.into(),
            Buf::H(b) => b.into(),
        }
    }
}

/// Right-aligns `shape` to 5-D.
fn dims5(shape: &[usize]) -> [usize; 5] {
    let mut d = [1; 5];
    d[5 - shape.len()..].copy_from_slice(shape);
    d
}

/// Broadcast strides of `input` (right-aligned) against the 5-D output dims.
fn bcast_strides(input: &[usize], out: &[usize; 5]) -> [i32; 5] {
    let d = dims5(input);
    let mut s = [0i32; 5];
    let mut acc = 1usize;
    for k in (0..5).rev() {
        assert!(
            d[k] == out[k] || d[k] == 1,
            "{input:?} does not broadcast to {out:?}"
        );
        s[k] = if d[k] == 1 && out[k] != 1 {
            0
        } else {
            acc as i32
        };
        acc *= d[k];
    }
    s
}

fn offset(mut i: usize, out: &[usize; 5], s: &[i32; 5]) -> usize {
    let mut off = 0;
    for k in (0..5).rev() {
        off += (i % out[k]) * s[k] as usize;
        i /= out[k];
    }
    off
}

fn unary_ref(op: &str, x: f64) -> f64 {
    match op {
        "identity" => x,
        "relu_fwd" => x.max(0.0),
        "sigmoid_fwd" => 1.0 / (1.0 + (-x).exp()),
        "tanh_fwd" => x.tanh(),
        "gelu_fwd" => {
            0.5 * x
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
        }
        "exp" => x.exp(),
        "neg" => -x,
        "abs" => x.abs(),
        _ => unreachable!(),
    }
}

fn binary_ref(op: &str, a: f32, b: f32) -> f32 {
    match op {
        "add" => a + b,
        "sub" => a - b,
        "mul" => a * b,
        "div" => a / b,
        "max" => a.max(b),
        "min" => a.min(b),
        _ => unreachable!(),
    }
}

const UNARY: &[&str] = &[
    "identity",
    "relu_fwd",
    "sigmoid_fwd",
    "tanh_fwd",
    "gelu_fwd",
    "exp",
    "neg",
    "abs",
];
const BINARY: &[&str] = &["add", "sub", "mul", "div", "max", "min"];
const DTYPES: &[Dt] = &[Dt::F32, Dt::F16, Dt::Bf16];

fn exact_op(op: &str) -> bool {
    !matches!(op, "sigmoid_fwd" | "tanh_fwd" | "gelu_fwd" | "exp")
}

/// Checks `got` against `want` (f64 reference) and returns the max abs error.
fn compare(what: &str, dt: Dt, exact: bool, got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let mut max_err = 0f64;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let r = dt.round(w as f32);
        let err = (g as f64 - r as f64).abs();
        max_err = max_err.max(err);
        let ok = if exact {
            g.to_bits() == r.to_bits() || (g.is_nan() && r.is_nan())
        } else if dt == Dt::F32 {
            err <= 4e-6 * (r.abs() as f64) + 2e-7
        } else {
            err <= dt.ulp(r) as f64 + 1e-6
        };
        assert!(ok, "{what}: element {i}: got {g}, want {r} (reference {w})");
    }
    max_err
}

fn run_unary(
    k: &Kernels,
    op: &str,
    dt: Dt,
    out_shape: &[usize],
    in_shape: &[usize],
    seed: u64,
) -> f64 {
    let out = dims5(out_shape);
    let n: usize = out.iter().product();
    let nin: usize = in_shape.iter().product();
    let (lo, hi) = if op == "exp" {
        (-10.0, 10.0)
    } else {
        (-6.0, 6.0)
    };
    let x: Vec<f32> = values(nin, seed, lo, hi)
        .into_iter()
        .map(|v| dt.round(v))
        .collect();
    let sx = bcast_strides(in_shape, &out);
    let want: Vec<f64> = (0..n)
        .map(|i| unary_ref(op, x[offset(i, &out, &sx)] as f64))
        .collect();
    let dx = Buf::upload(&k.dev, dt, &x);
    let dy = Buf::zeros(&k.dev, dt, n);
    let name = format!("hipdnn_pw_{op}_{}", dt.name());
    let mut args = vec![dx.arg(), dy.arg()];
    args.extend(out.iter().map(|&d| KernelArg::from(d as i32)));
    args.extend(sx.iter().map(|&s| KernelArg::from(s)));
    k.fns[&name]
        .launch(&k.stream, LaunchConfig::linear(n as u64, 256), &args)
        .unwrap();
    k.stream.synchronize().unwrap();
    compare(
        &format!("{name} {out_shape:?}<-{in_shape:?}"),
        dt,
        exact_op(op),
        &dy.download(dt),
        &want,
    )
}

#[allow(clippy::too_many_arguments)]
fn run_binary(
    k: &Kernels,
    op: &str,
    dt: Dt,
    out_shape: &[usize],
    a_shape: &[usize],
    b_shape: &[usize],
    seed: u64,
) -> f64 {
    let out = dims5(out_shape);
    let n: usize = out.iter().product();
    let a: Vec<f32> = values(a_shape.iter().product(), seed, -4.0, 4.0)
        .into_iter()
        .map(|v| dt.round(v))
        .collect();
    let mut b: Vec<f32> = values(b_shape.iter().product(), seed + 1, -4.0, 4.0)
        .into_iter()
        .map(|v| dt.round(v))
        .collect();
    if op == "div" {
        for v in &mut b {
            if v.abs() < 0.25 {
                *v = dt.round(0.25f32.copysign(*v));
            }
        }
    }
    let (sa, sb) = (bcast_strides(a_shape, &out), bcast_strides(b_shape, &out));
    // Reference: the op in f32 on the (16-bit-rounded) inputs, as the kernel computes it.
    let want: Vec<f64> = (0..n)
        .map(|i| binary_ref(op, a[offset(i, &out, &sa)], b[offset(i, &out, &sb)]) as f64)
        .collect();
    let (da, db, dy) = (
        Buf::upload(&k.dev, dt, &a),
        Buf::upload(&k.dev, dt, &b),
        Buf::zeros(&k.dev, dt, n),
    );
    let name = format!("hipdnn_pw_{op}_{}", dt.name());
    let mut args = vec![da.arg(), db.arg(), dy.arg()];
    args.extend(out.iter().map(|&d| KernelArg::from(d as i32)));
    args.extend(sa.iter().chain(&sb).map(|&s| KernelArg::from(s)));
    k.fns[&name]
        .launch(&k.stream, LaunchConfig::linear(n as u64, 256), &args)
        .unwrap();
    k.stream.synchronize().unwrap();
    compare(
        &format!("{name} {a_shape:?},{b_shape:?}"),
        dt,
        true,
        &dy.download(dt),
        &want,
    )
}

fn pointwise(file: &str) {
    let Some(k) = setup(file) else { return };
    let mut count = 0;
    let mut worst: BTreeMap<String, f64> = BTreeMap::new();
    // (output, a, b) shapes; unary kernels take `a` as input.
    let shapes: &[(&[usize], &[usize], &[usize])] = &[
        (&[2, 3, 4, 5], &[2, 3, 4, 5], &[2, 3, 4, 5]),
        (&[2, 3, 4, 5], &[2, 3, 4, 5], &[1, 3, 1, 5]),
        (&[2, 3, 4, 5], &[4, 5], &[1]),
        (&[2, 7, 3, 4, 5], &[2, 1, 3, 4, 5], &[7, 1, 1, 5]),
        (&[1], &[1], &[1]),
        (&[1000, 1003], &[1000, 1003], &[1003]),
    ];
    for (si, &(o, a, b)) in shapes.iter().enumerate() {
        for &dt in DTYPES {
            for op in UNARY {
                let e = run_unary(&k, op, dt, o, a, si as u64 * 31 + 7);
                let w = worst.entry(format!("{op}_{}", dt.name())).or_default();
                *w = w.max(e);
                count += 1;
            }
            for op in BINARY {
                let e = run_binary(&k, op, dt, o, a, b, si as u64 * 17 + 3);
                let w = worst.entry(format!("{op}_{}", dt.name())).or_default();
                *w = w.max(e);
                count += 1;
            }
        }
    }
    println!(
        "{}: {count} pointwise launches match the CPU loops; max |error| per kernel:",
        k.label
    );
    for (name, e) in worst {
        println!("  {name}: {e:.3e}");
    }
}

#[test]
fn gpu_pointwise_matches_cpu() {
    pointwise("kernels.json");
}

#[test]
fn gpu_pointwise_ptx_fallback_matches_cpu() {
    if matches!(
        GpuRuntime::load().map(|r| r.platform()),
        Ok(hipdnn_hip::Platform::Nvidia)
    ) {
        pointwise("kernels-ptx.json");
    } else {
        drop(writeln!(
            std::io::stderr(),
            "skipped: no GPU (or not an NVIDIA GPU; PTX fallback applies to NVIDIA only)"
        ));
    }
}

#[derive(Clone, Copy, Debug)]
struct Conv {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    k: usize,
    r: usize,
    s: usize,
    pad: (usize, usize),
    stride: (usize, usize),
    dil: (usize, usize),
    epilogue: i32,
}

impl Conv {
    fn pq(&self) -> (usize, usize) {
        let p = (self.h + 2 * self.pad.0 - self.dil.0 * (self.r - 1) - 1) / self.stride.0 + 1;
        let q = (self.w + 2 * self.pad.1 - self.dil.1 * (self.s - 1) - 1) / self.stride.1 + 1;
        (p, q)
    }
    /// CPU loops: (reference, Σ|x·w| per output).
    fn reference(&self, x: &[f32], wt: &[f32], bias: &[f32]) -> (Vec<f64>, Vec<f64>) {
        let (p, q) = self.pq();
        let mut y = Vec::new();
        let mut mag = Vec::new();
        for n in 0..self.n {
            for k in 0..self.k {
                for op in 0..p {
                    for oq in 0..q {
                        let (mut acc, mut m) = (0f64, 0f64);
                        for c in 0..self.c {
                            for r in 0..self.r {
                                for s in 0..self.s {
                                    let ih = (op * self.stride.0 + r * self.dil.0) as isize
                                        - self.pad.0 as isize;
                                    let iw = (oq * self.stride.1 + s * self.dil.1) as isize
                                        - self.pad.1 as isize;
                                    if ih < 0
                                        || iw < 0
                                        || ih >= self.h as isize
                                        || iw >= self.w as isize
                                    {
                                        continue;
                                    }
                                    let xv = x[((n * self.c + c) * self.h + ih as usize) * self.w
                                        + iw as usize]
                                        as f64;
                                    let wv =
                                        wt[((k * self.c + c) * self.r + r) * self.s + s] as f64;
                                    acc += xv * wv;
                                    m += (xv * wv).abs();
                                }
                            }
                        }
                        if self.epilogue & 1 != 0 {
                            acc += bias[k] as f64;
                            m += (bias[k] as f64).abs();
                        }
                        if self.epilogue & 2 != 0 {
                            acc = acc.max(0.0);
                        }
                        y.push(acc);
                        mag.push(m);
                    }
                }
            }
        }
        (y, mag)
    }
}

fn run_conv(kn: &Kernels, cv: Conv, dt: Dt, v1: bool, seed: u64) -> f64 {
    let (p, q) = cv.pq();
    let x: Vec<f32> = values(cv.n * cv.c * cv.h * cv.w, seed, -1.0, 1.0)
        .into_iter()
        .map(|v| dt.round(v))
        .collect();
    let wt: Vec<f32> = values(cv.k * cv.c * cv.r * cv.s, seed + 1, -1.0, 1.0)
        .into_iter()
        .map(|v| dt.round(v))
        .collect();
    let bias: Vec<f32> = values(cv.k, seed + 2, -1.0, 1.0)
        .into_iter()
        .map(|v| dt.round(v))
        .collect();
    let (want, mag) = cv.reference(&x, &wt, &bias);
    let total = cv.n * cv.k * p * q;
    let (dx, dw, db, dy) = (
        Buf::upload(&kn.dev, dt, &x),
        Buf::upload(&kn.dev, dt, &wt),
        Buf::upload(&kn.dev, dt, &bias),
        Buf::zeros(&kn.dev, dt, total),
    );
    let i = |v: usize| KernelArg::from(v as i32);
    let (name, args) = if v1 {
        let name = format!("hipdnn_conv_fwd_v1_{}", dt.name());
        (
            name,
            vec![
                dx.arg(),
                dw.arg(),
                dy.arg(),
                i(cv.n),
                i(cv.c),
                i(cv.h),
                i(cv.w),
                i(cv.k),
                i(cv.r),
                i(cv.s),
            ],
        )
    } else {
        let name = format!("hipdnn_conv_fwd_{}", dt.name());
        let args = vec![
            dx.arg(),
            dw.arg(),
            db.arg(),
            dy.arg(),
            i(cv.n),
            i(cv.c),
            i(cv.h),
            i(cv.w),
            i(cv.k),
            i(cv.r),
            i(cv.s),
            i(p),
            i(q),
            i(cv.pad.0),
            i(cv.pad.1),
            i(cv.stride.0),
            i(cv.stride.1),
            i(cv.dil.0),
            i(cv.dil.1),
            KernelArg::from(cv.epilogue),
        ];
        (name, args)
    };
    kn.fns[&name]
        .launch(&kn.stream, LaunchConfig::linear(total as u64, 128), &args)
        .unwrap();
    kn.stream.synchronize().unwrap();
    let got = dy.download(dt);
    let (rtol, atol) = if dt == Dt::F32 {
        (1e-5, 1e-6)
    } else {
        (2e-3, 1e-3)
    };
    let mut max_err = 0f64;
    for (j, ((&g, &w), &m)) in got.iter().zip(&want).zip(&mag).enumerate() {
        let err = (g as f64 - w).abs();
        max_err = max_err.max(err);
        assert!(
            err <= rtol * m + atol,
            "{name} {cv:?}: element {j}: got {g}, want {w}"
        );
    }
    max_err
}

#[test]
fn gpu_conv_fwd_matches_cpu() {
    let Some(k) = setup("kernels.json") else {
        return;
    };
    let cases = [
        Conv {
            n: 1,
            c: 1,
            h: 5,
            w: 5,
            k: 1,
            r: 3,
            s: 3,
            pad: (0, 0),
            stride: (1, 1),
            dil: (1, 1),
            epilogue: 0,
        },
        Conv {
            n: 2,
            c: 3,
            h: 8,
            w: 7,
            k: 4,
            r: 3,
            s: 3,
            pad: (1, 1),
            stride: (1, 1),
            dil: (1, 1),
            epilogue: 1,
        },
        Conv {
            n: 2,
            c: 3,
            h: 9,
            w: 9,
            k: 5,
            r: 3,
            s: 2,
            pad: (1, 0),
            stride: (2, 1),
            dil: (1, 2),
            epilogue: 3,
        },
        Conv {
            n: 1,
            c: 8,
            h: 16,
            w: 16,
            k: 16,
            r: 1,
            s: 1,
            pad: (0, 0),
            stride: (1, 1),
            dil: (1, 1),
            epilogue: 2,
        },
        Conv {
            n: 3,
            c: 4,
            h: 10,
            w: 12,
            k: 6,
            r: 5,
            s: 3,
            pad: (2, 1),
            stride: (3, 2),
            dil: (2, 1),
            epilogue: 3,
        },
        Conv {
            n: 4,
            c: 16,
            h: 32,
            w: 32,
            k: 32,
            r: 3,
            s: 3,
            pad: (1, 1),
            stride: (1, 1),
            dil: (1, 1),
            epilogue: 3,
        },
    ];
    let mut n = 0;
    for (ci, cv) in cases.iter().enumerate() {
        for dt in [Dt::F32, Dt::F16] {
            let e = run_conv(&k, *cv, dt, false, ci as u64 * 11 + 5);
            println!("  conv_fwd_{} {:?}: max |error| {e:.3e}", dt.name(), cv);
            n += 1;
            if cv.pad == (0, 0) && cv.stride == (1, 1) && cv.dil == (1, 1) {
                let cv1 = Conv { epilogue: 0, ..*cv };
                let e = run_conv(&k, cv1, dt, true, ci as u64 * 11 + 5);
                println!("  conv_fwd_v1_{} {:?}: max |error| {e:.3e}", dt.name(), cv1);
                n += 1;
            }
        }
    }
    println!("{}: {n} conv launches match the CPU loops", k.label);
}

#[test]
fn gpu_launch_checks_and_errors() {
    let Some(k) = setup("kernels.json") else {
        return;
    };
    // Wrong argument count and kind are refused before the driver is called.
    let f = &k.fns["hipdnn_pw_add_f32"];
    let b = k.dev.htod(&[1f32; 4]).unwrap();
    let e = f
        .launch(&k.stream, LaunchConfig::linear(4, 64), &[(&b).into()])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel 'hipdnn_pw_add_f32': 1 arguments given, the signature has 18"
    );
    let mut args: Vec<KernelArg> = vec![(&b).into(), 3i32.into(), (&b).into()];
    args.extend((0..15).map(|_| KernelArg::from(1i32)));
    let e = f
        .launch(&k.stream, LaunchConfig::linear(4, 64), &args)
        .unwrap_err();
    assert!(matches!(e, LaunchError::Signature { .. }), "{e}");
    assert!(e.to_string().contains("argument 1 is a by_value of 4 bytes, the signature records global_buffer of 8 bytes at offset 8"), "{e}");
    // A code object that is not one is refused by the driver with the HIP name first.
    let e = k
        .dev
        .load_module(b"definitely not a code object")
        .unwrap_err();
    assert!(e.to_string().starts_with("hipModuleLoadData"), "{e}");
    println!("bad module: {e}");
    // Unknown kernel name.
    let m = k.modules.first().unwrap();
    let e = m.function("no_such_kernel", &[]).unwrap_err();
    assert!(e.to_string().starts_with("hipModuleGetFunction"), "{e}");
    println!("unknown kernel: {e}");
}

#[test]
fn gpu_event_timing() {
    let Some(k) = setup("kernels.json") else {
        return;
    };
    let n = 1 << 24;
    let x = k.dev.htod(&values(n, 1, -1.0, 1.0)).unwrap();
    let y = k.dev.alloc::<f32>(n).unwrap();
    let mut args: Vec<KernelArg> = vec![(&x).into(), (&x).into(), (&y).into()];
    args.extend([1, 1, 1, 1, n as i32, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1].map(KernelArg::from));
    let f = &k.fns["hipdnn_pw_add_f32"];
    let (start, end) = (Event::new(&k.dev).unwrap(), Event::new(&k.dev).unwrap());
    f.launch(&k.stream, LaunchConfig::linear(n as u64, 256), &args)
        .unwrap();
    start.record(&k.stream).unwrap();
    let reps = 20;
    for _ in 0..reps {
        f.launch(&k.stream, LaunchConfig::linear(n as u64, 256), &args)
            .unwrap();
    }
    end.record(&k.stream).unwrap();
    end.synchronize().unwrap();
    let ms = start.elapsed_ms(&end).unwrap() / reps as f32;
    let gbs = (3 * 4 * n) as f64 / (ms as f64 * 1e-3) / 1e9;
    assert!(ms > 0.0);
    let got = y.to_vec().unwrap();
    let xs = x.to_vec().unwrap();
    assert!(got.iter().zip(&xs).all(|(g, v)| *g == v + v));
    println!(
        "{}: hipdnn_pw_add_f32 over {n} elements: {ms:.4} ms per launch ({gbs:.0} GB/s)",
        k.label
    );
}

/// The ingestor's `Device` trait over the hip layer: load the pointwise code object, look up
/// `hipdnn_pw_mul_f32`, launch it with raw variant-pack-style pointers, compare.
#[test]
fn gpu_ingestor_device_adapter_launches() {
    use hipdnn_engines::ingestor::HipIngestorDevice;
    use hipdnn_engines::ingestor::device::{
        IngestorDevice as _, KernelArgValue as V, LaunchGeometry,
    };
    use hipdnn_engines::ingestor::kernel::KernelArgument;
    let Some(k) = setup("kernels.json") else {
        return;
    };
    let dev = HipIngestorDevice::new(Arc::clone(&k.dev));
    let arch = dev.arch();
    let dir = packed_dir().join(arch.split(':').next().unwrap());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("kernels.json")).unwrap()).unwrap();
    let entry = doc["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kernel_source"]["symbol"] == "hipdnn_pw_mul_f32")
        .unwrap();
    let ks = &entry["kernel_source"];
    // The descriptor's recorded signature: the launch is checked against it.
    let recorded: Vec<KernelArgument> = ks["signature"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            KernelArgument::new(
                a["kind"].as_str().unwrap(),
                a["size"].as_u64().unwrap() as u32,
                a["offset"].as_u64().unwrap() as u32,
            )
        })
        .collect();
    let archive = KpackArchive::open(dir.join(ks["library"].as_str().unwrap())).unwrap();
    let bytes = archive
        .get_kernel(
            ks["toc_key"].as_str().unwrap(),
            arch.split(':').next().unwrap(),
        )
        .unwrap();
    let module = dev.load_module(&bytes).unwrap();
    let f = module.get_function("hipdnn_pw_mul_f32").unwrap();
    let n = 1000usize;
    let a = values(n, 5, -2.0, 2.0);
    let b = values(n, 6, -2.0, 2.0);
    let (da, db) = (k.dev.htod(&a).unwrap(), k.dev.htod(&b).unwrap());
    let dy = k.dev.alloc::<f32>(n).unwrap();
    let mut args = vec![
        V::Pointer(da.device_ptr()),
        V::Pointer(db.device_ptr()),
        V::Pointer(dy.device_ptr()),
    ];
    args.extend([1, 1, 1, 1, n as i32, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1].map(V::I32));
    let geometry = LaunchGeometry {
        grid: [4, 1, 1],
        block: [256, 1, 1],
        shared_mem_bytes: 0,
    };
    // One argument short of the recorded signature: refused before the driver is called.
    let e = dev
        .launch(f.as_ref(), geometry, &args[..args.len() - 1], &recorded, 0)
        .unwrap_err();
    assert_eq!(e.call, "hipModuleLaunchKernel");
    assert!(
        e.message.ends_with(&format!(
            "{} arguments given, the signature has {}",
            args.len() - 1,
            recorded.len()
        )),
        "{e}"
    );
    dev.launch(f.as_ref(), geometry, &args, &recorded, 0)
        .unwrap();
    dev.synchronize(0).unwrap();
    let got = dy.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(got[i].to_bits(), (a[i] * b[i]).to_bits(), "element {i}");
    }
    let e = dev
        .launch(f.as_ref(), geometry, &args, &recorded, 0x1234)
        .unwrap_err();
    assert_eq!(e.call, "hipModuleLaunchKernel");
    let Err(e) = dev.load_module(b"junk") else {
        panic!("junk bytes loaded as a module")
    };
    assert!(e.call.starts_with("hipModuleLoadData"), "{e}");
    println!(
        "{}: ingestor Device adapter: hipdnn_pw_mul_f32 over {n} elements bit-exact; bad module: {e}",
        k.label
    );
}
