//! SDPA backward (`hipkernel.sdpa_bwd.dispatch.v1`, the Triton flash-attention backward of
//! `engines/kernels/triton/sdpa_bwd.py`) on the GPU engine against PyTorch's flash backend
//! (`aten._scaled_dot_product_flash_attention_backward`, the kernels autograd of
//! `F.scaled_dot_product_attention` under `SDPBackend.FLASH_ATTENTION` runs), side by side in
//! one run (`--only sdpabwd`, issue 31): batch 8, 16 heads, sequence 1024 and 4096 (s_q =
//! s_kv), head dim 64 and 128, no mask and causal (top-left), f16 and bf16, scale 1/√d, q, k,
//! v, o, do and the gradients `(B, H, S, D)` packed. o and the logsumexp stats come from this
//! engine's own forward on the same q, k, v (run once, not timed).
//!
//! Before timing, small graphs (b 1, h 2, s 200 and 256, d 64 and 128, both masks, both
//! types) run on the GPU and on the CPU reference engine from the same inputs: dq, dk, dv
//! within 1e-2 (f16) or 2e-2 (bf16) of the reference, relative to 1 + |r| (the reference
//! engine's backward tolerances); a miss fails the run.
//!
//! Timing: CUDA/HIP events around 20 executes, median of 5 rounds. PyTorch is timed the same
//! way twice: eager, and replayed from a CUDA graph (the kernels without Python dispatch).
//! TFLOP/s count 2.5 × the forward's 4·B·H·S²·D FLOPs (the backward's five products of
//! FlashAttention's convention), halved when causal. Never run without a GPU.

use super::{Num, R, e, vals};
use half::{bf16, f16};
use hipdnn::{
    Buffer, DataType, Graph, Handle, SdpaAttributes, SdpaBackwardAttributes, TensorAttributes,
    VariantPack,
};
use serde_json::json;

/// (batch, heads) of the timed rows.
const BH: (i64, i64) = (8, 16);
/// Sequence lengths of the timed rows.
const SEQS: [i64; 2] = [1024, 4096];
/// Head dims of the timed rows.
const DIMS: [i64; 2] = [64, 128];

const Q: i64 = 1;
const K: i64 = 2;
const V: i64 = 3;
const O: i64 = 4;
const DO: i64 = 5;
const ST: i64 = 6;
const DQ: i64 = 7;
const DK: i64 = 8;
const DV: i64 = 9;

fn packed(g: &mut Graph, name: &str, uid: i64, dims: [i64; 4], dt: DataType) -> hipdnn::TensorId {
    let [_, h, s, d] = dims;
    g.tensor(
        TensorAttributes::new(name)
            .uid(uid)
            .data_type(dt)
            .dims(dims)
            .strides([h * s * d, s * d, d, 1]),
    )
}

fn setup(g: &mut Graph, name: &str, dt: DataType) {
    g.set_name(name)
        .set_io_data_type(dt)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
}

/// The forward with stats: q, k, v (UIDs 1–3) → o 4, stats 6 (FLOAT `(b, h, s, 1)`).
fn forward(b: i64, h: i64, s: i64, d: i64, causal: bool, dt: DataType) -> Graph {
    let mut g = Graph::new();
    setup(&mut g, "sdpa_fwd_stats", dt);
    let q = packed(&mut g, "q", Q, [b, h, s, d], dt);
    let k = packed(&mut g, "k", K, [b, h, s, d], dt);
    let v = packed(&mut g, "v", V, [b, h, s, d], dt);
    let attrs = SdpaAttributes::new()
        .causal_mask(causal)
        .attn_scale_value(1.0 / (d as f32).sqrt())
        .generate_stats(true);
    let (o, st) = g.sdpa(q, k, v, attrs);
    g.set_output(o, true).set_uid(o, O).set_data_type(o, dt);
    if let Some(st) = st {
        g.set_output(st, true)
            .set_uid(st, ST)
            .set_data_type(st, DataType::Float);
    }
    g
}

/// The backward: q, k, v, o, do, stats (UIDs 1–6) → dq 7, dk 8, dv 9.
fn backward(b: i64, h: i64, s: i64, d: i64, causal: bool, dt: DataType) -> Graph {
    let mut g = Graph::new();
    setup(&mut g, "sdpa_bwd", dt);
    let dims = [b, h, s, d];
    let q = packed(&mut g, "q", Q, dims, dt);
    let k = packed(&mut g, "k", K, dims, dt);
    let v = packed(&mut g, "v", V, dims, dt);
    let o = packed(&mut g, "o", O, dims, dt);
    let d_o = packed(&mut g, "do", DO, dims, dt);
    let st = g.tensor(
        TensorAttributes::new("stats")
            .uid(ST)
            .data_type(DataType::Float)
            .dims([b, h, s, 1])
            .strides([h * s, s, 1, 1]),
    );
    let attrs = SdpaBackwardAttributes::new()
        .causal_mask(causal)
        .attn_scale_value(1.0 / (d as f32).sqrt());
    let grads = g.sdpa_backward(q, k, v, o, d_o, st, attrs);
    for (t, uid) in grads.into_iter().zip([DQ, DK, DV]) {
        g.set_output(t, true).set_uid(t, uid).set_data_type(t, dt);
    }
    g
}

/// Device buffers of one shape on `h`: q, k, v, do uniform in [−1, 1) (seeds 71–74), o and
/// stats from `h`'s own forward, the three gradients, the workspace of `bwd`.
struct Bufs<T: Num> {
    ins: Vec<(i64, Buffer<T>)>,
    stats: Buffer<f32>,
    grads: Vec<(i64, Buffer<T>)>,
    ws: Buffer<u8>,
}

fn buffers<T: Num>(
    h: &Handle,
    bwd: &Graph,
    dims: [i64; 4],
    causal: bool,
    dt: DataType,
) -> R<Bufs<T>> {
    let [b, hh, s, d] = dims;
    let n = (b * hh * s * d) as usize;
    let up = |seed: u64| -> R<Buffer<T>> {
        let v: Vec<T> = vals(n, seed).into_iter().map(T::of).collect();
        Buffer::from_slice_on(h, &v).map_err(e)
    };
    let (q, k, v, d_o) = (up(71)?, up(72)?, up(73)?, up(74)?);
    let mut o = Buffer::<T>::alloc(h, n).map_err(e)?;
    let mut stats = Buffer::<f32>::alloc(h, (b * hh * s) as usize).map_err(e)?;
    let mut f = forward(b, hh, s, d, causal, dt);
    f.build(h).map_err(e)?;
    let mut fws = Buffer::<u8>::alloc(h, f.workspace_size().map_err(e)?).map_err(e)?;
    let pack = VariantPack::new()
        .with(Q, &q)
        .with(K, &k)
        .with(V, &v)
        .with(O, &mut o)
        .with(ST, &mut stats);
    f.execute(h, pack, Some(&mut fws)).map_err(e)?;
    let grads = [DQ, DK, DV]
        .into_iter()
        .map(|u| Buffer::<T>::alloc(h, n).map(|b| (u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let ws = Buffer::<u8>::alloc(h, bwd.workspace_size().map_err(e)?).map_err(e)?;
    Ok(Bufs {
        ins: vec![(Q, q), (K, k), (V, v), (O, o), (DO, d_o)],
        stats,
        grads,
        ws,
    })
}

fn execute<T: Num>(h: &Handle, g: &Graph, b: &mut Bufs<T>) -> R<()> {
    let mut pack = VariantPack::new();
    for (u, x) in &b.ins {
        pack = pack.with(*u, x);
    }
    pack = pack.with(ST, &b.stats);
    for (u, x) in b.grads.iter_mut() {
        pack = pack.with(*u, x);
    }
    g.execute(h, pack, Some(&mut b.ws)).map_err(e)
}

/// GPU against the CPU reference on one small shape (module docs for the bound); the check
/// record. o and stats come from each engine's own forward.
fn check<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    s: i64,
    d: i64,
    causal: bool,
    dt: DataType,
) -> R<serde_json::Value> {
    let dims = [1, 2, s, d];
    let mut results = Vec::new();
    let mut engine = String::new();
    for h in [gpu, cpu] {
        let mut g = backward(1, 2, s, d, causal, dt);
        g.build(h).map_err(e)?;
        if h.is_gpu() {
            engine = g.engine_name().map_err(e)?.to_string();
        }
        let mut b = buffers::<T>(h, &g, dims, causal, dt)?;
        execute(h, &g, &mut b)?;
        let outs: Vec<Vec<f32>> = b
            .grads
            .iter()
            .map(|(_, x)| x.to_vec().map(|v| v.into_iter().map(|x| x.f()).collect()))
            .collect::<Result<_, _>>()
            .map_err(e)?;
        results.push(outs);
    }
    let tol = if dt == DataType::Half { 1e-2 } else { 2e-2 };
    let mut worst = 0f32;
    for ((name, got), want) in ["dq", "dk", "dv"].iter().zip(&results[0]).zip(&results[1]) {
        for (i, (a, r)) in got.iter().zip(want).enumerate() {
            let d = (a - r).abs() / (tol * (1.0 + r.abs()));
            if d.is_nan() || d > 1.0 {
                return Err(format!(
                    "sdpa backward {dt:?} s{s} d{d} causal {causal}: {name} element {i}: gpu {a}, cpu {r} (tol {tol}·(1 + |r|))"
                ));
            }
            worst = worst.max(d);
        }
    }
    Ok(
        json!({"seq": s, "head_dim": d, "causal": causal, "dtype": format!("{dt:?}"),
        "plan": engine, "worst_fraction_of_tolerance": worst}),
    )
}

/// Median ms per backward execute of the rows' shape on `gpu` (5 rounds of 20 executes between
/// events) and the engine that built it.
fn time<T: Num>(gpu: &Handle, s: i64, d: i64, causal: bool, dt: DataType) -> R<(f64, String)> {
    let (b, h) = BH;
    let mut g = backward(b, h, s, d, causal, dt);
    g.build(gpu).map_err(e)?;
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = gpu.gpu_device().ok_or("this handle executes on the CPU")?;
    let mut bufs = buffers::<T>(gpu, &g, [b, h, s, d], causal, dt)?;
    let ms = super::median_ms(dev, 5, || execute(gpu, &g, &mut bufs))?;
    Ok((ms, engine))
}

pub(super) const TORCH: &str = r#"
try:
    from torch.nn.attention import sdpa_kernel, SDPBackend
except Exception as ex:
    print(json.dumps({"error": str(ex)})); sys.exit(0)
b, h, seqs, dims = json.loads(sys.argv[1])
out = {"torch": torch.__version__, "ms": {}, "graph_ms": {}, "how": ""}
aten = torch.ops.aten
for s in seqs:
    for d in dims:
        for name, dt in [("f16", torch.float16), ("bf16", torch.bfloat16)]:
            q, k, v, do = (torch.rand((b, h, s, d), device="cuda", dtype=dt) * 2 - 1 for _ in range(4))
            for causal in [False, True]:
                key = f"s{s}_d{d}_{name}_{'causal' if causal else 'full'}"
                try:
                    r = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=d ** -0.5)
                    o, lse, cq, ck, mq, mk, seed, off = r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
                    def f():
                        return aten._scaled_dot_product_flash_attention_backward(
                            do, q, k, v, o, lse, cq, ck, mq, mk, 0.0, causal, seed, off, scale=d ** -0.5)
                    out["how"] = "aten._scaled_dot_product_flash_attention_backward"
                except Exception:
                    qr, kr, vr = (x.clone().requires_grad_() for x in (q, k, v))
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        o = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal, scale=d ** -0.5)
                    def f():
                        return torch.autograd.grad(o, (qr, kr, vr), do, retain_graph=True)
                    out["how"] = "autograd of F.scaled_dot_product_attention (flash)"
                peer(out, key, f)
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
                    println!("sdpabwd check: {r}");
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
                    let (ms, plan) = if dt == DataType::Half {
                        time::<f16>(gpu, s, d, causal, dt)
                    } else {
                        time::<bf16>(gpu, s, d, causal, dt)
                    }?;
                    let (b, h) = BH;
                    let flops = 2.5 * 4.0 * (b * h * d) as f64 * (s * s) as f64
                        / if causal { 2.0 } else { 1.0 };
                    let mask = if causal { "causal" } else { "full" };
                    let row = json!({"batch": b, "heads": h, "seq": s, "head_dim": d,
                        "dtype": name, "causal": causal, "ms": ms,
                        "tflops": flops / (ms * 1e-3) / 1e12, "plan": plan});
                    let key = format!("s{s}_d{d}_{name}_{mask}");
                    let row = super::with_peer(row, &torch, key.as_str());
                    println!("sdpabwd: {row}");
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
        "\nSDPA backward (sdpa_bwd, flash attention backward, deterministic), batch 8, 16 heads, s_q = s_kv, scale 1/√d ({n_checks} correctness checks vs the CPU reference passed), vs PyTorch {} ({}), eager and replayed from a CUDA graph; CUDA events around 20 executes, median of 5 rounds; TFLOP/s count 2.5·4·B·H·S²·D, halved when causal:\n\n| seq | head dim | dtype | mask | hipdnn-rs | TFLOP/s | {} |\n|---|---|---|---|---|---|---|---|---|---|\n",
        torch["torch"],
        torch["how"].as_str().unwrap_or("n/a"),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The section's graphs build and run on the CPU engine (its own check, CPU against CPU, is
    /// exact), so a device run never starts with a graph the SDK refuses.
    #[test]
    fn the_graphs_build_and_agree_on_the_cpu() {
        let cpu = Handle::cpu().unwrap();
        for causal in [false, true] {
            let r = check::<f16>(&cpu, &cpu, 9, 16, causal, DataType::Half).unwrap();
            assert_eq!(r["worst_fraction_of_tolerance"], 0.0, "{r}");
        }
    }
}
