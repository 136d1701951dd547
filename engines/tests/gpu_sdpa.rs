//! SDPA forward on the GPU through the ingestor engine (`hipkernel.sdpa_fwd.dispatch.v1`, the
//! Triton flash-attention entries of `engines/kernels/triton/sdpa_fwd.py`) against the CPU
//! reference engine, over a shape matrix: sequence lengths 1, 17, 77, 128, 129 (s_q ≠ s_kv
//! included), head dims 32, 64, 128 (and 40, 80, 16 through the masked buckets), no mask,
//! top-left and bottom-right causal, f16 and bf16 (f32 on a few MiniLM-like cases), the
//! statistics outputs (logsumexp; max and sum_exp on some cases), plus grouped-query heads,
//! decode-length grouped-query heads (8 over 2 or 1, s_q ≤ 16: the packed-heads entries),
//! `[b, s, h, d]` strides, boolean key masks `[B, 1, 1, S_kv]`, additive masks, a sliding
//! window, a scale tensor read at execute, and one save → restore → identical outputs.
//!
//! Without a GPU runtime or device (or with no kernels packed for its arch) the test prints
//! `skipped: no GPU: …` on stderr and passes. Kernels come from `HIPDNN_KERNEL_DIR` when set
//! (a test binary copied to another machine), else this tree's `engines/kernels/packed`.
//!
//! Without a GPU, a second test plans every case of the matrix on a fake sm_90 device (each
//! must take an `hipdnn_sdpa_fwd` entry, the decode-length grouped-head cases a packed-heads
//! entry and no other case one) and on the CPU reference engine.
//!
//! Run: `cargo test --release -p hipdnn-engines --test gpu_sdpa -- --nocapture`.
//!
//! Tolerances (per element, inputs uniform in [−1, 1), so |o| ≤ 1; the reference computes in
//! f32 from the same rounded inputs and rounds o to its type):
//! - o: f16 |d| ≤ 4e-3, bf16 |d| ≤ 2e-2 (the kernel rounds the softmax weights to the input
//!   type before P·V, and o is rounded once more), f32 |d| ≤ 1e-4;
//! - stats (logsumexp) and max (f32): |d| ≤ 1e-3·(1 + |want|); sum_exp: |d| ≤
//!   1e-3·|want| plus 1e-5; infinities (rows whose scores are all masked) must match
//!   exactly, and their o must be exactly 0.

#[path = "ingestor_support.rs"]
mod support;

use std::io::Write as _;
use std::sync::Arc;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec, random_values, run_graph};
use hipdnn_hip::{DeviceBuffer, Stream};
use hipdnn_schema::graph::{DataType as DT, NodeAttributes, SdpaAttributes, SdpaAttributesArgs};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Causal {
    No,
    TopLeft,
    BottomRight,
}

#[derive(Clone, Debug)]
struct Case {
    dt: DT,
    b: i64,
    h: i64,
    hk: i64,
    sq: i64,
    skv: i64,
    d: i64,
    causal: Causal,
    stats: bool,
    max_sum: bool,
    bshd: bool,
    /// Mask data type and dims.
    mask: Option<(DT, Vec<i64>)>,
    left: Option<i64>,
    scale_tensor: bool,
}

impl Case {
    fn new(dt: DT, sq: i64, skv: i64, d: i64, causal: Causal) -> Case {
        Case {
            dt,
            b: 2,
            h: 3,
            hk: 3,
            sq,
            skv,
            d,
            causal,
            stats: true,
            max_sum: false,
            bshd: false,
            mask: None,
            left: None,
            scale_tensor: false,
        }
    }

    /// Tensor specs: q 1, k 2, v 3, o 4, stats 5, max 6, sum_exp 7, mask 8, scale 9.
    fn specs(&self) -> Vec<TensorSpec> {
        let t = |uid, name: &str, dims: [i64; 4]| {
            let s = TensorSpec::new(uid, name, self.dt, &dims);
            if self.bshd {
                let [_, h, sl, d] = dims;
                s.strides(&[sl * h * d, d, h * d, 1])
            } else {
                s
            }
        };
        let (b, h, hk, sq, skv, d) = (self.b, self.h, self.hk, self.sq, self.skv, self.d);
        let mut v = vec![
            t(1, "q", [b, h, sq, d]),
            t(2, "k", [b, hk, skv, d]),
            t(3, "v", [b, hk, skv, d]),
            t(4, "o", [b, h, sq, d]),
        ];
        if self.stats {
            v.push(TensorSpec::new(5, "stats", DT::FLOAT, &[b, h, sq, 1]));
        }
        if self.max_sum {
            v.push(TensorSpec::new(6, "max", DT::FLOAT, &[b, h, sq, 1]));
            v.push(TensorSpec::new(7, "sum_exp", DT::FLOAT, &[b, h, sq, 1]));
        }
        if let Some((mdt, dims)) = &self.mask {
            v.push(TensorSpec::new(8, "mask", *mdt, dims));
        }
        if self.scale_tensor {
            v.push(TensorSpec::new(9, "scale", DT::FLOAT, &[1, 1, 1, 1]));
        }
        v
    }

    fn scale(&self) -> f32 {
        1.0 / (self.d as f32).sqrt()
    }

    fn builder(&self) -> GraphBuilder {
        let mut g = GraphBuilder::new("sdpa");
        for s in self.specs() {
            g.tensor(s);
        }
        let c = self.clone();
        g.node(
            "sdpa",
            Box::new(move |fbb| {
                (
                    NodeAttributes::SdpaAttributes,
                    SdpaAttributes::create(
                        fbb,
                        &SdpaAttributesArgs {
                            q_tensor_uid: 1,
                            k_tensor_uid: 2,
                            v_tensor_uid: 3,
                            o_tensor_uid: 4,
                            stats_tensor_uid: c.stats.then_some(5),
                            generate_stats: Some(c.stats),
                            max_tensor_uid: c.max_sum.then_some(6),
                            sum_exp_tensor_uid: c.max_sum.then_some(7),
                            attn_mask_tensor_uid: c.mask.as_ref().map(|_| 8),
                            scale_tensor_uid: c.scale_tensor.then_some(9),
                            attn_scale_value: (!c.scale_tensor).then(|| c.scale()),
                            causal_mask: c.causal == Causal::TopLeft,
                            causal_mask_bottom_right: c.causal == Causal::BottomRight,
                            left_bound: c.left,
                            ..Default::default()
                        },
                    )
                    .as_union_value(),
                )
            }),
        );
        g
    }

    /// Dense inputs per UID, already rounded to each tensor's type.
    fn inputs(&self, seed: u64) -> Vec<(i64, Vec<f32>)> {
        let mut out = Vec::new();
        for s in self.specs() {
            let n: i64 = s.dims.iter().product();
            let n = n as usize;
            let v = match s.uid {
                1..=3 => random_values(n, seed * 10 + s.uid as u64, -1.0, 1.0),
                8 if s.data_type == DT::BOOLEAN => {
                    // Keys masked at random, the first key of each row always kept.
                    let last = *s.dims.last().unwrap() as usize;
                    random_values(n, seed * 10 + 8, 0.0, 1.0)
                        .iter()
                        .enumerate()
                        .map(|(i, r)| if i % last == 0 || *r > 0.3 { 1.0 } else { 0.0 })
                        .collect()
                }
                8 => random_values(n, seed * 10 + 8, -2.0, 2.0),
                9 => vec![self.scale() * 1.5],
                _ => continue,
            };
            out.push((s.uid, s.quantize(&v)));
        }
        out
    }

    fn outputs(&self) -> Vec<i64> {
        let mut v = vec![4];
        if self.stats {
            v.push(5);
        }
        if self.max_sum {
            v.extend([6, 7]);
        }
        v
    }

    fn label(&self) -> String {
        format!(
            "{:?} b{} h{}/{} sq{} skv{} d{} {:?}{}{}{}{}{}",
            self.dt,
            self.b,
            self.h,
            self.hk,
            self.sq,
            self.skv,
            self.d,
            self.causal,
            if self.bshd { " bshd" } else { "" },
            self.mask
                .as_ref()
                .map(|(t, d)| format!(" mask {t:?} {d:?}"))
                .unwrap_or_default(),
            self.left.map(|l| format!(" left {l}")).unwrap_or_default(),
            if self.scale_tensor {
                " scale tensor"
            } else {
                ""
            },
            if self.max_sum { " max+sum_exp" } else { "" },
        )
    }
}

fn matrix() -> Vec<Case> {
    let mut v = Vec::new();
    let pairs = [
        (1, 1),
        (1, 77),
        (17, 17),
        (17, 129),
        (77, 77),
        (77, 128),
        (128, 128),
        (129, 17),
        (129, 129),
    ];
    for dt in [DT::HALF, DT::BFLOAT16] {
        for d in [32, 64, 128] {
            for (sq, skv) in pairs {
                for causal in [Causal::No, Causal::TopLeft, Causal::BottomRight] {
                    v.push(Case::new(dt, sq, skv, d, causal));
                }
            }
        }
    }
    // Masked head-dim buckets (40 → 64 generic, 80 → 128 spec, 16 → 32 spec).
    for d in [16, 40, 80] {
        v.push(Case::new(DT::HALF, 77, 129, d, Causal::BottomRight));
    }
    // MiniLM's attention: f32, 12 heads of 32, boolean key mask [B, 1, 1, S], no stats.
    let mut c = Case::new(DT::FLOAT, 33, 33, 32, Causal::No);
    c.h = 12;
    c.hk = 12;
    c.stats = false;
    c.mask = Some((DT::BOOLEAN, vec![2, 1, 1, 33]));
    v.push(c);
    let mut c = Case::new(DT::FLOAT, 128, 128, 64, Causal::TopLeft);
    c.max_sum = true;
    v.push(c);
    // Decode-length grouped-query heads (the packed-heads entries, group 4): 8 query heads over
    // 2 (and 1: MQA), s_q 1, 3, 16, bottom-right causal, a boolean key mask, bf16, d 128.
    for (dt, sq, skv, d, hk, causal, mask) in [
        (DT::HALF, 1, 77, 64, 2, Causal::No, false),
        (DT::HALF, 3, 300, 128, 2, Causal::BottomRight, false),
        (DT::BFLOAT16, 16, 129, 64, 1, Causal::BottomRight, false),
        (DT::BFLOAT16, 1, 1000, 128, 2, Causal::No, true),
        (DT::HALF, 2, 33, 32, 4, Causal::No, false),
    ] {
        let mut c = Case::new(dt, sq, skv, d, causal);
        c.h = 8;
        c.hk = hk;
        c.max_sum = true;
        if mask {
            c.mask = Some((DT::BOOLEAN, vec![2, 1, 1, skv]));
        }
        v.push(c);
    }
    // Grouped-query heads, [b, s, h, d] strides, masks, a window, a scale tensor.
    let mut c = Case::new(DT::HALF, 77, 128, 64, Causal::No);
    c.h = 4;
    c.hk = 2;
    c.max_sum = true;
    v.push(c);
    let mut c = Case::new(DT::BFLOAT16, 129, 77, 128, Causal::BottomRight);
    c.bshd = true;
    v.push(c);
    let mut c = Case::new(DT::HALF, 17, 129, 32, Causal::No);
    c.mask = Some((DT::BOOLEAN, vec![2, 1, 1, 129]));
    v.push(c);
    let mut c = Case::new(DT::HALF, 77, 77, 64, Causal::No);
    c.mask = Some((DT::HALF, vec![1, 1, 77, 77]));
    v.push(c);
    let mut c = Case::new(DT::BFLOAT16, 77, 77, 64, Causal::TopLeft);
    c.mask = Some((DT::FLOAT, vec![2, 3, 77, 77]));
    v.push(c);
    let mut c = Case::new(DT::HALF, 129, 129, 64, Causal::TopLeft);
    c.left = Some(20);
    c.max_sum = true;
    v.push(c);
    let mut c = Case::new(DT::HALF, 77, 128, 128, Causal::No);
    c.scale_tensor = true;
    v.push(c);
    v
}

struct Gpu {
    g: hipdnn_engines::gpu::GpuEngines,
}

impl Gpu {
    /// Builds the case's plan on the GPU engine, executes it on fresh device buffers (outputs
    /// filled with 0xFF bytes first) and returns the dense outputs and the plan's saved bytes.
    fn run(&self, c: &Case, inputs: &[(i64, Vec<f32>)], restore: bool) -> Vec<Vec<f32>> {
        let e = &self.g.engines[0];
        let graph = OperationGraph::from_bytes(&c.builder().build()).unwrap();
        let cfg = EngineConfig {
            engine_id: e.id(),
            knob_choices: vec![],
        };
        let mut ctx = e
            .create_execution_context(&cfg, &graph)
            .unwrap_or_else(|err| panic!("{}: {}", c.label(), err.message));
        if restore {
            let ser = e.serialization().unwrap();
            let bytes = ser
                .serialize_execution_context(e.id(), ctx.as_ref())
                .unwrap();
            ctx = ser
                .create_execution_context_from_serialized(&bytes)
                .unwrap();
        }
        let specs = c.specs();
        let spec = |u: i64| specs.iter().find(|s| s.uid == u).unwrap();
        let dev = &self.g.device;
        let mut bufs: Vec<(i64, DeviceBuffer<u8>)> = Vec::new();
        for (u, v) in inputs {
            bufs.push((*u, dev.htod(&spec(*u).encode(v)).unwrap()));
        }
        for u in c.outputs() {
            bufs.push((u, dev.htod(&vec![0xFFu8; spec(u).bytes_len()]).unwrap()));
        }
        let mut t: Vec<TensorBinding<'_>> = bufs
            .iter()
            .map(|(u, b)| TensorBinding {
                uid: *u,
                data: BufferRef::Device {
                    addr: b.device_ptr(),
                    len: b.len(),
                },
            })
            .collect();
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_or_else(|err| panic!("{}: {}", c.label(), err.message));
        Stream::default_stream(dev).synchronize().unwrap();
        c.outputs()
            .iter()
            .map(|u| {
                let b = &bufs.iter().find(|(x, _)| x == u).unwrap().1;
                spec(*u).decode(&b.to_vec().unwrap())
            })
            .collect()
    }
}

/// Largest |got − want| (infinities must match exactly; `None` when they do not).
fn max_err(got: &[f32], want: &[f32]) -> Option<f32> {
    let mut m = 0f32;
    for (&g, &w) in got.iter().zip(want) {
        if w.is_infinite() || g.is_infinite() || g.is_nan() {
            if g != w {
                return None;
            }
            continue;
        }
        m = m.max((g - w).abs());
    }
    Some(m)
}

#[test]
fn sdpa_forward_matches_the_cpu_reference_on_the_gpu() {
    let g = match hipdnn_engines::gpu::open(0) {
        Ok(g) => g,
        Err(e) => {
            drop(writeln!(std::io::stderr(), "skipped: {e}"));
            return;
        }
    };
    println!(
        "device {} ({}), kernels {}",
        g.device.info().name,
        g.arch,
        g.packed_dir.display()
    );
    let gpu = Gpu { g };
    let cases = matrix();
    let mut failures = Vec::new();
    let mut worst = std::collections::BTreeMap::<String, f32>::new();
    for (i, c) in cases.iter().enumerate() {
        let inputs = c.inputs(i as u64 + 1);
        let want = run_graph(c.builder(), &inputs, &c.outputs())
            .unwrap_or_else(|e| panic!("reference {}: {}", c.label(), e.message));
        let got = gpu.run(c, &inputs, false);
        let tol_o = match c.dt {
            DT::HALF => 4e-3,
            DT::BFLOAT16 => 2e-2,
            _ => 1e-4,
        };
        let mut line = format!("{}:", c.label());
        let mut ok = true;
        for (k, u) in c.outputs().iter().enumerate() {
            let (g, w) = (&got[k], &want[k]);
            let err = max_err(g, w);
            let within = match (u, err) {
                (_, None) => false,
                (4, Some(e)) => e <= tol_o,
                (7, Some(_)) => g
                    .iter()
                    .zip(w)
                    .all(|(g, w)| (g - w).abs() <= 1e-3 * w.abs() + 1e-5),
                (_, Some(_)) => g
                    .iter()
                    .zip(w)
                    .all(|(g, w)| g == w || (g - w).abs() <= 1e-3 * (1.0 + w.abs())),
            };
            // Rows with every score masked: o exactly 0.
            if *u == 5 {
                let d = c.d as usize;
                for (r, st) in w.iter().enumerate() {
                    if *st == f32::NEG_INFINITY
                        && got[0][r * d..(r + 1) * d].iter().any(|x| *x != 0.0)
                    {
                        ok = false;
                        line += " [masked row o ≠ 0]";
                        break;
                    }
                }
            }
            let name = ["o", "stats", "max", "sum_exp"][match u {
                4 => 0,
                5 => 1,
                6 => 2,
                _ => 3,
            }];
            line += &format!(
                " {name} {}",
                err.map_or("inf mismatch".into(), |e| format!("{e:.2e}"))
            );
            if !within {
                ok = false;
                line += " (OUT OF TOLERANCE)";
            }
            if let Some(e) = err {
                let key = format!("{:?} {name}", c.dt);
                let w = worst.entry(key).or_insert(0.0);
                *w = w.max(e);
            }
        }
        println!("{line}");
        if !ok {
            failures.push(line);
        }
    }
    for (k, w) in &worst {
        println!("worst {k}: {w:.3e}");
    }
    // A saved plan restored on the same engine gives bit-identical outputs.
    let c = &cases[cases.len() - 4];
    let inputs = c.inputs(99);
    let a = gpu.run(c, &inputs, false);
    let b = gpu.run(c, &inputs, true);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            x.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "restored plan differs: {}",
            c.label()
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases out of tolerance:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_matrix_case_plans_on_a_fake_sm_90_and_on_the_cpu_reference() {
    use hipdnn_engines::ingestor::device::FixedDevice;
    use hipdnn_engines::ingestor::engine::IngestorEngine;
    use hipdnn_engines::ingestor::payload::decode_payload;
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed/sm_90");
    let e = IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        hipdnn_engines::gpu::load_triton_descriptors(&dir).unwrap(),
        Arc::new(FixedDevice(support::FakeDevice::new("sm_90", 0))),
        Arc::new(hipdnn_engines::registry::pack_registry()),
        Arc::new(hipdnn_engines::ingestor::KpackCodeObjectReader),
    );
    let r = hipdnn_engines::reference::ReferenceEngine::new();
    let cases = matrix();
    assert_eq!(cases.len(), 2 * 3 * 9 * 3 + 3 + 5 + 9);
    let mut packed = 0;
    for c in &cases {
        let graph = OperationGraph::from_bytes(&c.builder().build()).unwrap();
        let cfg = |id| EngineConfig {
            engine_id: id,
            knob_choices: vec![],
        };
        let ctx = e
            .create_execution_context(&cfg(e.id()), &graph)
            .unwrap_or_else(|err| panic!("{}: {}", c.label(), err.message));
        let bytes = e
            .serialization()
            .unwrap()
            .serialize_execution_context(e.id(), ctx.as_ref())
            .unwrap();
        let p = decode_payload(&bytes).unwrap();
        assert_eq!(
            p.dispatch_symbol,
            "hipkernel.sdpa_fwd.dispatch.v1",
            "{}",
            c.label()
        );
        assert_eq!(p.symbol, "hipdnn_sdpa_fwd", "{}", c.label());
        // Decode-length grouped heads (16-bit) take a packed-heads entry, nothing else does.
        let group = p.launch_values.get("group_m");
        let decode = c.h > c.hk && c.sq <= 16 && c.dt != DT::FLOAT;
        assert_eq!(
            group
                == Some(&hipdnn_engines::ingestor::launch_values::LaunchValue::Int(
                    4
                )),
            decode,
            "{}: group {group:?}",
            c.label()
        );
        packed += usize::from(decode);
        r.create_execution_context(&cfg(r.id()), &graph)
            .unwrap_or_else(|err| panic!("reference {}: {}", c.label(), err.message));
    }
    assert_eq!(packed, 5);
}
