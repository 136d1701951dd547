//! SDPA forward (`hipkernel.sdpa_fwd.dispatch.v1`, the Triton flash-attention entries of
//! `engines/kernels/triton/sdpa_fwd.py`) on the GPU engine against PyTorch's flash backend
//! (`torch.nn.functional.scaled_dot_product_attention` under
//! `sdpa_kernel(SDPBackend.FLASH_ATTENTION)`), side by side in one run: batch 8, 16 heads,
//! sequence 1024 and 4096 (s_q = s_kv), head dim 64 and 128, no mask and causal (top-left,
//! which is PyTorch's `is_causal`), f16 and bf16, scale 1/√d, no statistics output (inference),
//! q/k/v/o `(B, H, S, D)` packed.
//!
//! Before timing, small graphs of the same kind (b 1, h 2, s 200 and 256, d 64 and 128, both
//! masks, both types) run on the GPU and on the CPU reference engine from the same inputs
//! (uniform in [−1, 1), so |o| ≤ 1): |d| ≤ 4e-3 (f16) or 2e-2 (bf16) per element, as in
//! `engines/tests/gpu_sdpa.rs`; a miss fails the run.
//!
//! Timing: CUDA/HIP events around 20 executes, median of 5 rounds, PyTorch timed the same way.
//! TFLOP/s count 4·B·H·S²·D FLOPs (QKᵀ and PV, two each per multiply-add), halved when
//! causal (the FlashAttention convention). Never run without a GPU; the parent module
//! skips everything then.

use super::{Num, R, e, vals};
use half::{bf16, f16};
use hipdnn::{Buffer, DataType, Graph, Handle, SdpaAttributes, TensorAttributes, VariantPack};
use serde_json::json;

/// (batch, heads) of the timed rows.
const BH: (i64, i64) = (8, 16);
/// Sequence lengths of the timed rows.
const SEQS: [i64; 2] = [1024, 4096];
/// Head dims of the timed rows.
const DIMS: [i64; 2] = [64, 128];

/// An attention shape: batch, query heads, key/value heads (dividing the query heads:
/// grouped-query attention when fewer), query and key/value sequence lengths, head dim, and a
/// causal mask (top-left, PyTorch's `is_causal`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    pub b: i64,
    pub hq: i64,
    pub hkv: i64,
    pub sq: i64,
    pub skv: i64,
    pub d: i64,
    pub causal: bool,
}

impl Shape {
    /// `b` × `h` heads, s_q = s_kv = `s`, the timed rows' shapes.
    fn square(b: i64, h: i64, s: i64, d: i64, causal: bool) -> Shape {
        Shape {
            b,
            hq: h,
            hkv: h,
            sq: s,
            skv: s,
            d,
            causal,
        }
    }
    /// Elements of q and o (`(b, hq, sq, d)`), and of k and v (`(b, hkv, skv, d)`).
    pub fn lens(&self) -> (usize, usize) {
        (
            (self.b * self.hq * self.sq * self.d) as usize,
            (self.b * self.hkv * self.skv * self.d) as usize,
        )
    }
}

/// `o = softmax(q·kᵀ·scale [+ causal mask])·v`: q UID 1 `(b, hq, sq, d)`, k 2 and v 3
/// `(b, hkv, skv, d)`, o 4 `(b, hq, sq, d)`, all packed, type `dt`, f32 compute, scale 1/√d.
pub(super) fn graph(sh: Shape, dt: DataType) -> Graph {
    let mut g = Graph::new();
    g.set_name("sdpa_fwd")
        .set_io_data_type(dt)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let d = sh.d;
    let t = |g: &mut Graph, name: &str, uid: i64, h: i64, s: i64| {
        g.tensor(
            TensorAttributes::new(name)
                .uid(uid)
                .data_type(dt)
                .dims([sh.b, h, s, d])
                .strides([h * s * d, s * d, d, 1]),
        )
    };
    let q = t(&mut g, "q", 1, sh.hq, sh.sq);
    let k = t(&mut g, "k", 2, sh.hkv, sh.skv);
    let v = t(&mut g, "v", 3, sh.hkv, sh.skv);
    let attrs = SdpaAttributes::new()
        .causal_mask(sh.causal)
        .attn_scale_value(1.0 / (d as f32).sqrt());
    let (o, _) = g.sdpa(q, k, v, attrs);
    g.set_output(o, true).set_uid(o, 4).set_data_type(o, dt);
    g
}

/// q, k, v by UID for `sh`, uniform in [−1, 1) (deterministic seeds 61, 62, 63).
fn inputs<T: Num>(sh: Shape) -> Vec<(i64, Vec<T>)> {
    let (nq, nkv) = sh.lens();
    (1..=3)
        .map(|u| {
            let n = if u == 1 { nq } else { nkv };
            (u, vals(n, 60 + u as u64).into_iter().map(T::of).collect())
        })
        .collect()
}

/// GPU vs CPU reference on one small graph (b 1, 2 heads, s_q = s_kv = `s`); returns the
/// check record.
fn check<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    s: i64,
    d: i64,
    causal: bool,
    dt: DataType,
) -> R<serde_json::Value> {
    check_shape::<T>(gpu, cpu, Shape::square(1, 2, s, d, causal), dt)
}

/// GPU vs CPU reference on `sh` from the same inputs: |d| ≤ 4e-3 (f16) or 2e-2 (bf16) per
/// element (|o| ≤ 1); returns the check record. Errors: the first element beyond it, or a
/// build or execute failure.
pub(super) fn check_shape<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    sh: Shape,
    dt: DataType,
) -> R<serde_json::Value> {
    let n = sh.lens().0;
    let ins = inputs::<T>(sh);
    let mut gg = graph(sh, dt);
    gg.build(gpu).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    let got = super::run(gpu, &gg, &ins, n)?;
    let mut gc = graph(sh, dt);
    gc.build(cpu).map_err(e)?;
    let want = super::run(cpu, &gc, &ins, n)?;
    let tol = if dt == DataType::Half { 4e-3 } else { 2e-2 };
    let mut worst = 0f32;
    for (i, (a, r)) in got.iter().zip(&want).enumerate() {
        let d = (a.f() - r.f()).abs();
        if d.is_nan() || d > tol {
            return Err(format!(
                "sdpa {dt:?} {sh:?}: element {i}: gpu {}, cpu {} (tol {tol})",
                a.f(),
                r.f()
            ));
        }
        worst = worst.max(d / tol);
    }
    Ok(
        json!({"seq": sh.sq, "seq_kv": sh.skv, "heads": sh.hq, "kv_heads": sh.hkv,
        "head_dim": sh.d, "causal": sh.causal, "dtype": format!("{dt:?}"),
        "plan": engine, "worst_fraction_of_tolerance": worst}),
    )
}

/// Median ms per execute of the rows' shape (`BH`, s_q = s_kv = `s`) on `gpu`: 5 rounds of 20
/// executes between events; and the engine that built it.
fn time<T: Num>(
    gpu: &Handle,
    s: i64,
    d: i64,
    causal: bool,
    dt: DataType,
    benchmarked: bool,
) -> R<(f64, String)> {
    time_shape::<T>(
        gpu,
        Shape::square(BH.0, BH.1, s, d, causal),
        dt,
        benchmarked,
    )
}

/// Median ms per execute of `sh` on `gpu`: 5 rounds of 20 executes between events, built by
/// the static rule or, with `benchmarked`, by `Graph::build_benchmarked`; and the engine that
/// built it. Errors: the build's refusal, an allocation or execute failure, as text.
pub(super) fn time_shape<T: Num>(
    gpu: &Handle,
    sh: Shape,
    dt: DataType,
    benchmarked: bool,
) -> R<(f64, String)> {
    let mut g = graph(sh, dt);
    if benchmarked {
        g.build_benchmarked(gpu).map_err(e)?;
    } else {
        g.build(gpu).map_err(e)?;
    }
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = gpu.gpu_device().ok_or("this handle executes on the CPU")?;
    let bufs: Vec<(i64, Buffer<T>)> = inputs::<T>(sh)
        .iter()
        .map(|(u, v)| Buffer::from_slice_on(gpu, v).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut o = Buffer::<T>::alloc(gpu, sh.lens().0).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(gpu, g.workspace_size().map_err(e)?).map_err(e)?;
    let exec = || {
        let mut pack = VariantPack::new();
        for (u, b) in &bufs {
            pack = pack.with(*u, b);
        }
        pack = pack.with(4, &mut o);
        g.execute(gpu, pack, Some(&mut ws)).map_err(e)
    };
    let ms = super::median_ms(dev, 5, exec)?;
    Ok((ms, engine))
}

pub(super) const TORCH: &str = r#"
try:
    from torch.nn.attention import sdpa_kernel, SDPBackend
except Exception as ex:
    print(json.dumps({"error": str(ex)})); sys.exit(0)
b, h, seqs, dims = json.loads(sys.argv[1])
out = {"torch": torch.__version__, "ms": {}, "graph_ms": {}}
for s in seqs:
    for d in dims:
        for name, dt in [("f16", torch.float16), ("bf16", torch.bfloat16)]:
            q, k, v = (torch.rand((b, h, s, d), device="cuda", dtype=dt) * 2 - 1 for _ in range(3))
            for causal in [False, True]:
                def f():
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=d ** -0.5)
                peer(out, f"s{s}_d{d}_{name}_{'causal' if causal else 'full'}", f)
print(json.dumps(out))
"#;

/// The section: correctness checks, then the timed rows; returns (checks, rows, torch).
pub(super) fn section(gpu: &Handle, cpu: &Handle) -> super::Section {
    let mut checks = Vec::new();
    for s in [200, 256] {
        for d in DIMS {
            for causal in [false, true] {
                for dt in [DataType::Half, DataType::BFloat16] {
                    let r = if dt == DataType::Half {
                        check::<f16>(gpu, cpu, s, d, causal, dt)
                    } else {
                        check::<bf16>(gpu, cpu, s, d, causal, dt)
                    }?;
                    println!("sdpa check: {r}");
                    checks.push(r);
                }
            }
        }
    }
    let torch = {
        let arg = serde_json::to_string(&(BH.0, BH.1, SEQS, DIMS)).unwrap_or_default();
        super::torch_json(TORCH, &arg)
    };
    let mut rows = Vec::new();
    for s in SEQS {
        for d in DIMS {
            for (name, dt) in [("f16", DataType::Half), ("bf16", DataType::BFloat16)] {
                for causal in [false, true] {
                    let timed = |benchmarked| {
                        if dt == DataType::Half {
                            time::<f16>(gpu, s, d, causal, dt, benchmarked)
                        } else {
                            time::<bf16>(gpu, s, d, causal, dt, benchmarked)
                        }
                    };
                    let (ms, plan) = timed(false)?;
                    let bench_ms = if super::sweep() {
                        println!("sdpa benchmarked build: s{s} d{d} {name} causal {causal}");
                        Some(timed(true)?.0)
                    } else {
                        None
                    };
                    let (b, h) = BH;
                    let flops =
                        4.0 * (b * h * d) as f64 * (s * s) as f64 / if causal { 2.0 } else { 1.0 };
                    let mask = if causal { "causal" } else { "full" };
                    let row = json!({"batch": b, "heads": h, "seq": s, "head_dim": d,
                        "dtype": name, "causal": causal, "ms": ms,
                        "tflops": flops / (ms * 1e-3) / 1e12, "plan": plan,
                        "benchmarked_ms": bench_ms});
                    let key = format!("s{s}_d{d}_{name}_{mask}");
                    let row = super::with_peer(row, &torch, key.as_str());
                    println!("sdpa: {row}");
                    rows.push(row);
                }
            }
        }
    }
    Ok((checks, rows, torch))
}

/// The markdown table of the section.
pub(super) fn table(
    n_checks: usize,
    rows: &[serde_json::Value],
    torch: &serde_json::Value,
) -> String {
    let mut t = format!(
        "\nSDPA forward (sdpa_fwd, flash attention), batch 8, 16 heads, s_q = s_kv, scale 1/√d, no stats ({n_checks} correctness checks vs the CPU reference passed), vs PyTorch {} `F.scaled_dot_product_attention` with the flash backend; CUDA events around 20 executes, median of 5 rounds; TFLOP/s count 4·B·H·S²·D, halved when causal:\n\n| seq | head dim | dtype | mask | hipdnn-rs | TFLOP/s | {} |\n|---|---|---|---|---|---|---|---|---|---|\n",
        torch["torch"],
        super::PEER_HEADER
    );
    for r in rows {
        t += &format!(
            "| {} | {} | {} | {} | {:.4} ms | {:.0} | {} |\n",
            r["seq"],
            r["head_dim"],
            r["dtype"].as_str().unwrap_or_default(),
            if r["causal"].as_bool().unwrap_or(false) {
                "causal"
            } else {
                "none"
            },
            r["ms"].as_f64().unwrap_or(0.0),
            r["tflops"].as_f64().unwrap_or(0.0),
            super::peer_cells(r),
        );
    }
    t
}
