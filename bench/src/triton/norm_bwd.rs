//! Layernorm and rmsnorm backward on the GPU engine against PyTorch (`--only normbwd`, issue
//! 31): dx, dscale and dbias (rmsnorm: dx and dscale) of a `[rows, cols]` x normalized over its
//! last axis, from dy, x, scale `[1, cols]` and the forward's saved statistics (`[rows, 1]`
//! FLOAT mean and inverse standard deviation; rmsnorm: inverse RMS), f16 and f32, side by side
//! in one run. Before timing, each graph's GPU outputs are compared with the CPU reference
//! engine's on the same inputs (dx: |d| ≤ tol·(1 + |r|); dscale and dbias, sums over the rows:
//! |d| ≤ tol·(1 + Σ|terms|); tol 1e-4 for f32, 1e-2 for f16), failing the run on a miss.
//! Timing: CUDA/HIP events around 20 executes, median of 5 rounds. PyTorch is timed twice the
//! same way: eager (`aten.native_layer_norm_backward`, and for rmsnorm
//! `aten._fused_rms_norm_backward` where this PyTorch has it, else autograd of `F.rms_norm`),
//! and replayed from a CUDA graph holding the same 20 calls (the kernels alone, no Python
//! dispatch). Never run without a GPU.

use super::{Num, R, e, vals};
use half::f16;
use hipdnn::{
    Buffer, DataType, Graph, Handle, LayernormBackwardAttributes, RmsNormBackwardAttributes,
    TensorAttributes, VariantPack,
};
use serde_json::json;

/// The ops of the section.
const OPS: [&str; 2] = ["layernorm_bwd", "rmsnorm_bwd"];
/// (rows, cols) of the timed rows.
const SIZES: [(i64, i64); 3] = [(4096, 1024), (16384, 4096), (8192, 8192)];

const X: i64 = 1;
const DY: i64 = 2;
const SCALE: i64 = 3;
const MEAN: i64 = 5;
const INV: i64 = 6;
const DX: i64 = 10;
const DSCALE: i64 = 11;
const DBIAS: i64 = 12;

fn graph(op: &str, rows: i64, cols: i64, dt: DataType) -> Graph {
    let mut g = Graph::new();
    g.set_name(op)
        .set_io_data_type(dt)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let t = |g: &mut Graph, name: &str, uid: i64, dims: [i64; 2], dt: DataType| {
        g.tensor(
            TensorAttributes::new(name)
                .uid(uid)
                .data_type(dt)
                .dims(dims)
                .strides([dims[1], 1]),
        )
    };
    let x = t(&mut g, "x", X, [rows, cols], dt);
    let dy = t(&mut g, "dy", DY, [rows, cols], dt);
    let scale = t(&mut g, "scale", SCALE, [1, cols], dt);
    let inv = t(&mut g, "inv", INV, [rows, 1], DataType::Float);
    let outs: Vec<(hipdnn::TensorId, i64)> = if op == "layernorm_bwd" {
        let mean = t(&mut g, "mean", MEAN, [rows, 1], DataType::Float);
        let [dx, ds, db] = g.layernorm_backward(
            dy,
            x,
            scale,
            LayernormBackwardAttributes::new()
                .mean(mean)
                .inv_variance(inv),
        );
        vec![(dx, DX), (ds, DSCALE), (db, DBIAS)]
    } else {
        let (dx, ds, _) =
            g.rmsnorm_backward(dy, x, scale, inv, false, RmsNormBackwardAttributes::new());
        vec![(dx, DX), (ds, DSCALE)]
    };
    for (o, uid) in outs {
        g.set_output(o, true).set_uid(o, uid).set_data_type(o, dt);
    }
    g
}

/// Inputs (x, dy, scale in the io type; mean and inverse std / inverse RMS as f32 computed in
/// f64 from the rounded x, eps 1e-5) and the output lengths by UID. Also the batchnorm
/// backward section's (`bn_bwd`), which keeps its f32 per-channel tensors in `stats`.
pub(super) struct Inputs<T> {
    pub(super) io: Vec<(i64, Vec<T>)>,
    pub(super) stats: Vec<(i64, Vec<f32>)>,
    pub(super) outs: Vec<(i64, usize)>,
}

fn inputs<T: Num>(op: &str, rows: i64, cols: i64) -> Inputs<T> {
    let (r, c) = (rows as usize, cols as usize);
    let q = |v: Vec<f32>| v.into_iter().map(T::of).collect::<Vec<T>>();
    let x = q(vals(r * c, 51).into_iter().map(|v| 2.0 * v).collect());
    let dy = q(vals(r * c, 52));
    let scale = q(vals(c, 53).into_iter().map(|v| 1.0 + 0.5 * v).collect());
    let (mut mean, mut inv) = (vec![0f32; r], vec![0f32; r]);
    for i in 0..r {
        let row: Vec<f64> = x[i * c..(i + 1) * c]
            .iter()
            .map(|v| f64::from(v.f()))
            .collect();
        let m = if op == "layernorm_bwd" {
            row.iter().sum::<f64>() / c as f64
        } else {
            0.0
        };
        let var = row.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / c as f64;
        mean[i] = m as f32;
        inv[i] = (1.0 / (var + 1e-5).sqrt()) as f32;
    }
    let mut stats = vec![(INV, inv)];
    let mut outs = vec![(DX, r * c), (DSCALE, c)];
    if op == "layernorm_bwd" {
        stats.push((MEAN, mean));
        outs.push((DBIAS, c));
    }
    Inputs {
        io: vec![(X, x), (DY, dy), (SCALE, scale)],
        stats,
        outs,
    }
}

/// Device buffers of `ins` on `h`: (io inputs, stats, outputs).
pub(super) type Bufs<T> = (
    Vec<(i64, Buffer<T>)>,
    Vec<(i64, Buffer<f32>)>,
    Vec<(i64, Buffer<T>)>,
);

pub(super) fn buffers<T: Num>(h: &Handle, ins: &Inputs<T>) -> R<Bufs<T>> {
    let io = ins
        .io
        .iter()
        .map(|(u, v)| Buffer::from_slice_on(h, v).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let stats = ins
        .stats
        .iter()
        .map(|(u, v)| Buffer::from_slice_on(h, v).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let outs = ins
        .outs
        .iter()
        .map(|&(u, n)| Buffer::<T>::alloc(h, n).map(|b| (u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    Ok((io, stats, outs))
}

pub(super) fn execute<T: Num>(
    h: &Handle,
    g: &Graph,
    b: &mut Bufs<T>,
    ws: &mut Buffer<u8>,
) -> R<()> {
    let (io, stats, outs) = b;
    let mut pack = VariantPack::new();
    for (u, b) in io.iter() {
        pack = pack.with(*u, b);
    }
    for (u, b) in stats.iter() {
        pack = pack.with(*u, b);
    }
    for (u, b) in outs.iter_mut() {
        pack = pack.with(*u, b);
    }
    g.execute(h, pack, Some(ws)).map_err(e)
}

/// GPU against CPU on the same inputs (module docs for the bounds); the check record.
fn check<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    op: &str,
    rows: i64,
    cols: i64,
    dt: DataType,
) -> R<serde_json::Value> {
    let ins = inputs::<T>(op, rows, cols);
    let mut results = Vec::new();
    let mut engine = String::new();
    for h in [gpu, cpu] {
        let mut g = graph(op, rows, cols, dt);
        g.build(h).map_err(e)?;
        if h.is_gpu() {
            engine = g.engine_name().map_err(e)?.to_string();
        }
        let mut b = buffers(h, &ins)?;
        let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
        execute(h, &g, &mut b, &mut ws)?;
        let outs: Vec<(i64, Vec<f32>)> =
            b.2.iter()
                .map(|(u, b)| {
                    b.to_vec()
                        .map(|v| (*u, v.into_iter().map(|x| x.f()).collect()))
                })
                .collect::<Result<_, _>>()
                .map_err(e)?;
        results.push(outs);
    }
    let tol = if dt == DataType::Float { 1e-4 } else { 1e-2 };
    let (c, r) = (cols as usize, rows as usize);
    let dy: Vec<f32> = ins.io[1].1.iter().map(|v| v.f()).collect();
    let x: Vec<f32> = ins.io[0].1.iter().map(|v| v.f()).collect();
    let mut worst = 0f32;
    for ((u, got), (_, want)) in results[0].iter().zip(&results[1]) {
        for (i, (&a, &b)) in got.iter().zip(want).enumerate() {
            // Σ|terms| of a column sum: |dy·x| bounds |dy·x̂|·std for the sizes here.
            let m = if *u == DX {
                b.abs()
            } else {
                (0..r)
                    .map(|row| {
                        (dy[row * c + i] * if *u == DSCALE { x[row * c + i] } else { 1.0 }).abs()
                    })
                    .sum::<f32>()
            };
            let d = (a - b).abs() / (tol * (1.0 + m));
            if d.is_nan() || d > 1.0 {
                return Err(format!(
                    "{op} {dt:?} {rows}x{cols}: output uid {u} element {i}: gpu {a}, cpu {b} (tol {tol}·(1 + {m}))"
                ));
            }
            worst = worst.max(d);
        }
    }
    Ok(
        json!({"op": op, "dtype": format!("{dt:?}"), "rows": rows, "cols": cols, "plan": engine,
        "worst_fraction_of_tolerance": worst}),
    )
}

/// Median ms per execute on `gpu` (5 rounds of 20 executes between events) and the engine.
fn time<T: Num>(gpu: &Handle, op: &str, rows: i64, cols: i64, dt: DataType) -> R<(f64, String)> {
    let mut g = graph(op, rows, cols, dt);
    g.build(gpu).map_err(e)?;
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = gpu.gpu_device().ok_or("this handle executes on the CPU")?;
    let mut b = buffers(gpu, &inputs::<T>(op, rows, cols))?;
    let mut ws = Buffer::<u8>::alloc(gpu, g.workspace_size().map_err(e)?).map_err(e)?;
    let ms = super::median_ms(dev, 5, || execute(gpu, &g, &mut b, &mut ws))?;
    Ok((ms, engine))
}

pub(super) const TORCH: &str = r#"
out = {"torch": torch.__version__, "ms": {}, "graph_ms": {}, "rms": ""}
for rows, cols in json.loads(sys.argv[1]):
    for name, dt in [("f16", torch.float16), ("f32", torch.float32)]:
        x = torch.rand((rows, cols), device="cuda", dtype=dt) * 4 - 2
        dy = torch.rand((rows, cols), device="cuda", dtype=dt) * 2 - 1
        w = torch.rand((cols,), device="cuda", dtype=dt) + 0.5
        b = torch.rand((cols,), device="cuda", dtype=dt) - 0.5
        _, mean, rstd = torch.ops.aten.native_layer_norm(x, (cols,), w, b, 1e-5)
        fns = {"layernorm_bwd": lambda: torch.ops.aten.native_layer_norm_backward(dy, x, (cols,), mean, rstd, w, b, [True, True, True])}
        if hasattr(torch.ops.aten, "_fused_rms_norm_backward") and hasattr(torch.ops.aten, "_fused_rms_norm"):
            _, rr = torch.ops.aten._fused_rms_norm(x, [cols], w, 1e-5)
            fns["rmsnorm_bwd"] = lambda: torch.ops.aten._fused_rms_norm_backward(dy, x, [cols], rr, w, [True, True])
            out["rms"] = "aten._fused_rms_norm_backward"
        elif hasattr(F, "rms_norm"):
            xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
            y = F.rms_norm(xr, (cols,), wr, 1e-5)
            fns["rmsnorm_bwd"] = lambda: torch.autograd.grad(y, (xr, wr), dy, retain_graph=True)
            out["rms"] = "autograd of F.rms_norm"
        for op, f in fns.items():
            key = f"{op}_{name}_{rows}x{cols}"
            peer(out, key, f)
print(json.dumps(out))
"#;

/// The section: checks (both ops, f32 and f16, 64×1000 and 4096×1024), then the timed rows;
/// returns (checks, rows, torch).
pub(super) fn section(gpu: &Handle, cpu: &Handle) -> super::Section {
    let mut checks = Vec::new();
    for (rows, cols) in [(64, 1000), (4096, 1024)] {
        for op in OPS {
            for dt in [DataType::Float, DataType::Half] {
                let r = if dt == DataType::Float {
                    check::<f32>(gpu, cpu, op, rows, cols, dt)
                } else {
                    check::<f16>(gpu, cpu, op, rows, cols, dt)
                }?;
                println!("normbwd check: {r}");
                checks.push(r);
            }
        }
    }
    let torch = super::torch_json(TORCH, &serde_json::to_string(&SIZES).unwrap_or_default());
    let mut rows_out = Vec::new();
    for (rows, cols) in SIZES {
        for op in OPS {
            for (name, dt) in [("f16", DataType::Half), ("f32", DataType::Float)] {
                let (ms, plan) = if dt == DataType::Float {
                    time::<f32>(gpu, op, rows, cols, dt)
                } else {
                    time::<f16>(gpu, op, rows, cols, dt)
                }?;
                let key = format!("{op}_{name}_{rows}x{cols}");
                let elem = if name == "f16" { 2.0 } else { 4.0 };
                // x and dy read, dx written once.
                let bytes = (rows * cols) as f64 * elem * 3.0;
                let row = json!({"op": op, "dtype": name, "rows": rows, "cols": cols, "ms": ms,
                    "gb_per_s": bytes / (ms * 1e-3) / 1e9, "plan": plan});
                let row = super::with_peer(row, &torch, key.as_str());
                println!("normbwd: {row}");
                rows_out.push(row);
            }
        }
    }
    Ok((checks, rows_out, torch))
}

/// The markdown table of the section.
pub(super) fn table(
    n_checks: usize,
    rows: &[serde_json::Value],
    torch: &serde_json::Value,
) -> String {
    let mut t = format!(
        "\nLayernorm / rmsnorm backward (dx, dscale, dbias; rmsnorm dx, dscale) over the last axis ({n_checks} correctness checks vs the CPU reference passed), vs PyTorch {} (`aten.native_layer_norm_backward`; rmsnorm: {}), eager and replayed from a CUDA graph; CUDA events around 20 executes, median of 5 rounds; GB/s counts x and dy read and dx written once:\n\n| op | rows × cols | dtype | hipdnn-rs | GB/s | {} |\n|---|---|---|---|---|---|---|---|---|\n",
        torch["torch"],
        torch["rms"].as_str().unwrap_or("n/a"),
        super::PEER_HEADER
    );
    for r in rows {
        t += &format!(
            "| {} | {}×{} | {} | {:.4} ms | {:.0} | {} |\n",
            r["op"].as_str().unwrap_or_default(),
            r["rows"],
            r["cols"],
            r["dtype"].as_str().unwrap_or_default(),
            r["ms"].as_f64().unwrap_or(0.0),
            r["gb_per_s"].as_f64().unwrap_or(0.0),
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
        for op in OPS {
            let r = check::<f32>(&cpu, &cpu, op, 7, 33, DataType::Float).unwrap();
            assert_eq!(r["worst_fraction_of_tolerance"], 0.0, "{r}");
            let r = check::<f16>(&cpu, &cpu, op, 3, 16, DataType::Half).unwrap();
            assert_eq!(r["worst_fraction_of_tolerance"], 0.0, "{r}");
        }
    }
}
