//! Batchnorm backward on the GPU engine against PyTorch (`--only bnbwd`, issue 31): dx, dscale
//! and dbias of a channels-last (NHWC memory) f16 or f32 `x [N, C, H, W]` from dy, x, an f32
//! scale and the forward's saved f32 mean and inverse standard deviation (`[1, C, 1, 1]`),
//! alone and behind a fused ReLU backward (`RELU_BWD(dy_in, r) → dy`), on the ResNet-50
//! batch-32 layer shapes. Before timing, each graph's GPU outputs are compared with the CPU
//! reference engine's on small shapes (dx: |d| ≤ tol·(1 + |r|); dscale and dbias, sums over
//! N·H·W: |d| ≤ tol·(1 + Σ|dy|·(1 + |x̂|)); tol 1e-4 for f32, 1e-2 for f16), failing the run
//! on a miss. Timing: CUDA/HIP events around 20 executes, median of 5 rounds. PyTorch is
//! timed twice the same way: eager (autograd of `F.batch_norm` in training mode on a
//! channels-last tensor, and of `F.relu(F.batch_norm(…))` for the fused rows) and replayed
//! from a CUDA graph of the same 20 calls (the kernels alone). Never run without a GPU.

use super::norm_bwd::{Bufs, Inputs, buffers, execute};
use super::{Num, R, e, vals};
use half::f16;
use hipdnn::{
    BatchnormBackwardAttributes, DataType, Graph, Handle, PointwiseAttributes, PointwiseMode,
    TensorAttributes,
};
use serde_json::json;

/// (N, C, H, W) of the timed rows: ResNet-50 batch 32.
const SHAPES: [[i64; 4]; 5] = [
    [32, 64, 112, 112],
    [32, 256, 56, 56],
    [32, 512, 28, 28],
    [32, 1024, 14, 14],
    [32, 2048, 7, 7],
];

const DY: i64 = 1;
const X: i64 = 2;
const SCALE: i64 = 3;
const MEAN: i64 = 4;
const INV: i64 = 5;
const DX: i64 = 7;
const DSCALE: i64 = 8;
const DBIAS: i64 = 9;
const DY_IN: i64 = 10;
const R_IN: i64 = 11;

fn graph(dims: [i64; 4], dt: DataType, relu: bool) -> Graph {
    let mut g = Graph::new();
    g.set_name("bn_bwd")
        .set_io_data_type(dt)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let big = |g: &mut Graph, name: &str, uid: i64| {
        g.tensor(
            TensorAttributes::new(name)
                .uid(uid)
                .data_type(dt)
                .dims(dims)
                .packed_nhwc(),
        )
    };
    let chan = |g: &mut Graph, name: &str, uid: i64| {
        g.tensor(
            TensorAttributes::new(name)
                .uid(uid)
                .data_type(DataType::Float)
                .dims([1, dims[1], 1, 1]),
        )
    };
    let dy = if relu {
        let dy_in = big(&mut g, "dy_in", DY_IN);
        let r = big(&mut g, "r", R_IN);
        let dy = g.pointwise(
            dy_in,
            r,
            PointwiseAttributes::with_mode(PointwiseMode::ReluBwd),
        );
        g.set_data_type(dy, dt);
        dy
    } else {
        big(&mut g, "dy", DY)
    };
    let x = big(&mut g, "x", X);
    let scale = chan(&mut g, "scale", SCALE);
    let mean = chan(&mut g, "mean", MEAN);
    let inv = chan(&mut g, "inv", INV);
    let [dx, ds, db] = g.batchnorm_backward(
        dy,
        x,
        scale,
        BatchnormBackwardAttributes::new()
            .mean(mean)
            .inv_variance(inv),
    );
    for (o, uid) in [(dx, DX), (ds, DSCALE), (db, DBIAS)] {
        g.set_output(o, true).set_uid(o, uid).set_data_type(o, dt);
    }
    g
}

/// Inputs in NHWC memory order: x, dy (or dy_in and r = a ReLU output, half zeros) in the io
/// type; scale, and mean and inverse std computed in f64 from the rounded x (eps 1e-5), f32.
fn inputs<T: Num>(dims: [i64; 4], relu: bool) -> Inputs<T> {
    let c = dims[1] as usize;
    let n = dims.iter().product::<i64>() as usize;
    let q = |v: Vec<f32>| v.into_iter().map(T::of).collect::<Vec<T>>();
    let x = q(vals(n, 61).into_iter().map(|v| 2.0 * v).collect());
    let dy = q(vals(n, 62));
    let scale: Vec<f32> = vals(c, 63).into_iter().map(|v| 1.0 + 0.5 * v).collect();
    let (mut sum, mut sq) = (vec![0f64; c], vec![0f64; c]);
    for (i, v) in x.iter().enumerate() {
        let v = f64::from(v.f());
        sum[i % c] += v;
        sq[i % c] += v * v;
    }
    let m = (n / c) as f64;
    let mean: Vec<f64> = sum.iter().map(|s| s / m).collect();
    let inv: Vec<f32> = sq
        .iter()
        .zip(&mean)
        .map(|(s, mu)| (1.0 / (s / m - mu * mu + 1e-5).sqrt()) as f32)
        .collect();
    let mean: Vec<f32> = mean.into_iter().map(|v| v as f32).collect();
    let io = if relu {
        let r = q(vals(n, 64).into_iter().map(|v| v.max(0.0)).collect());
        vec![(DY_IN, dy), (R_IN, r), (X, x)]
    } else {
        vec![(DY, dy), (X, x)]
    };
    Inputs {
        io,
        stats: vec![(SCALE, scale), (MEAN, mean), (INV, inv)],
        outs: vec![(DX, n), (DSCALE, c), (DBIAS, c)],
    }
}

/// GPU against CPU on the same inputs (module docs for the bounds); the check record.
fn check<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    dims: [i64; 4],
    dt: DataType,
    relu: bool,
) -> R<serde_json::Value> {
    let ins = inputs::<T>(dims, relu);
    let mut results = Vec::new();
    let mut engine = String::new();
    for h in [gpu, cpu] {
        let mut g = graph(dims, dt, relu);
        g.build(h).map_err(e)?;
        if h.is_gpu() {
            engine = g.engine_name().map_err(e)?.to_string();
        }
        let mut b: Bufs<T> = buffers(h, &ins)?;
        let mut ws = hipdnn::Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
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
    let c = dims[1] as usize;
    let get = |uid: i64| -> Vec<f32> {
        ins.io
            .iter()
            .find(|(u, _)| *u == uid)
            .map(|(_, v)| v.iter().map(|x| x.f()).collect())
            .unwrap_or_default()
    };
    let stat = |uid: i64| ins.stats.iter().find(|(u, _)| *u == uid).unwrap().1.clone();
    let (x, mean, inv) = (get(X), stat(MEAN), stat(INV));
    let dy = if relu {
        let r = get(R_IN);
        get(DY_IN)
            .iter()
            .zip(&r)
            .map(|(d, r)| if *r > 0.0 { *d } else { 0.0 })
            .collect()
    } else {
        get(DY)
    };
    // Σ|dy|·(1 + |x̂|) per channel bounds the terms of both sums.
    let mut terms = vec![0f32; c];
    for (i, (d, xv)) in dy.iter().zip(&x).enumerate() {
        let k = i % c;
        terms[k] += d.abs() * (1.0 + ((xv - mean[k]) * inv[k]).abs());
    }
    let mut worst = 0f32;
    for ((u, got), (_, want)) in results[0].iter().zip(&results[1]) {
        for (i, (&a, &b)) in got.iter().zip(want).enumerate() {
            let m = if *u == DX { b.abs() } else { terms[i] };
            let d = (a - b).abs() / (tol * (1.0 + m));
            if d.is_nan() || d > 1.0 {
                return Err(format!(
                    "bn_bwd {dt:?} {dims:?} relu {relu}: output uid {u} element {i}: gpu {a}, cpu {b} (tol {tol}·(1 + {m}))"
                ));
            }
            worst = worst.max(d);
        }
    }
    Ok(
        json!({"dims": dims, "dtype": format!("{dt:?}"), "relu": relu, "plan": engine,
        "worst_fraction_of_tolerance": worst}),
    )
}

/// Median ms per execute on `gpu` (5 rounds of 20 executes between events) and the engine.
fn time<T: Num>(gpu: &Handle, dims: [i64; 4], dt: DataType, relu: bool) -> R<(f64, String)> {
    let mut g = graph(dims, dt, relu);
    g.build(gpu).map_err(e)?;
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = gpu.gpu_device().ok_or("this handle executes on the CPU")?;
    let mut b = buffers(gpu, &inputs::<T>(dims, relu))?;
    let mut ws = hipdnn::Buffer::<u8>::alloc(gpu, g.workspace_size().map_err(e)?).map_err(e)?;
    let ms = super::median_ms(dev, 5, || execute(gpu, &g, &mut b, &mut ws))?;
    Ok((ms, engine))
}

pub(super) const TORCH: &str = r#"
out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "ms": {}, "graph_ms": {}}
for dims in json.loads(sys.argv[1]):
    n, c, h, w = dims
    for name, dt in [("f16", torch.float16), ("f32", torch.float32)]:
        for relu in [False, True]:
            cl = torch.channels_last
            # Inputs from the CPU generator: a failed capture can leave the CUDA one unusable.
            cpu = lambda shape: torch.rand(shape, dtype=torch.float32).to("cuda")
            x = (cpu(dims) * 4 - 2).to(dt).to(memory_format=cl).requires_grad_()
            dy = (cpu(dims) * 2 - 1).to(dt).to(memory_format=cl)
            wt = (cpu((c,)) + 0.5).requires_grad_()
            b = torch.zeros((c,), device="cuda").requires_grad_()
            y = F.batch_norm(x, None, None, wt, b, training=True, eps=1e-5)
            if relu: y = F.relu(y)
            f = lambda: torch.autograd.grad(y, (x, wt, b), dy, retain_graph=True)
            key = f"{'relu_' if relu else ''}{name}_{n}x{c}x{h}x{w}"
            peer(out, key, f)
            del x, dy, y
print(json.dumps(out))
"#;

/// The section: checks (f32 and f16, with and without the ReLU, on small odd shapes), then the
/// timed rows; returns (checks, rows, torch).
pub(super) fn section(gpu: &Handle, cpu: &Handle) -> super::Section {
    let mut checks = Vec::new();
    for dims in [[2, 64, 9, 9], [3, 37, 5, 7], [32, 256, 8, 8]] {
        for relu in [false, true] {
            for dt in [DataType::Float, DataType::Half] {
                let r = if dt == DataType::Float {
                    check::<f32>(gpu, cpu, dims, dt, relu)
                } else {
                    check::<f16>(gpu, cpu, dims, dt, relu)
                }?;
                println!("bnbwd check: {r}");
                checks.push(r);
            }
        }
    }
    let torch = super::torch_json(TORCH, &serde_json::to_string(&SHAPES).unwrap_or_default());
    let mut rows_out = Vec::new();
    for dims in SHAPES {
        for (name, dt) in [("f16", DataType::Half), ("f32", DataType::Float)] {
            for relu in [false, true] {
                let (ms, plan) = if dt == DataType::Float {
                    time::<f32>(gpu, dims, dt, relu)
                } else {
                    time::<f16>(gpu, dims, dt, relu)
                }?;
                let [n, c, h, w] = dims;
                let key = format!("{}{name}_{n}x{c}x{h}x{w}", if relu { "relu_" } else { "" });
                let elem = if name == "f16" { 2.0 } else { 4.0 };
                // x and dy (dy_in and r) read twice, dx written once.
                let reads = if relu { 3.0 } else { 2.0 };
                let bytes = (n * c * h * w) as f64 * elem * (2.0 * reads + 1.0);
                let row = json!({"dims": dims, "dtype": name, "relu": relu, "ms": ms,
                    "gb_per_s": bytes / (ms * 1e-3) / 1e9, "plan": plan});
                let row = super::with_peer(row, &torch, key.as_str());
                println!("bnbwd: {row}");
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
        "\nBatchnorm backward (dx, dscale, dbias; channels-last x, f32 scale and statistics), alone and behind a fused ReLU backward ({n_checks} correctness checks vs the CPU reference passed), vs PyTorch {} (cuDNN {}; autograd of `F.batch_norm` in training mode, with `F.relu` for the ReLU rows), eager and replayed from a CUDA graph; CUDA events around 20 executes, median of 5 rounds; GB/s counts x and dy (ReLU: dy_in, r) read twice and dx written once:\n\n| N×C×H×W | dtype | ReLU | hipdnn-rs | GB/s | {} |\n|---|---|---|---|---|---|---|---|---|\n",
        torch["torch"],
        torch["cudnn"],
        super::PEER_HEADER
    );
    for r in rows {
        let d = &r["dims"];
        t += &format!(
            "| {}×{}×{}×{} | {} | {} | {:.4} ms | {:.0} | {} |\n",
            d[0],
            d[1],
            d[2],
            d[3],
            r["dtype"].as_str().unwrap_or_default(),
            if r["relu"].as_bool().unwrap_or(false) {
                "yes"
            } else {
                "no"
            },
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
        for relu in [false, true] {
            let r = check::<f32>(&cpu, &cpu, [2, 5, 3, 3], DataType::Float, relu).unwrap();
            assert_eq!(r["worst_fraction_of_tolerance"], 0.0, "{r}");
            let r = check::<f16>(&cpu, &cpu, [1, 3, 2, 5], DataType::Half, relu).unwrap();
            assert_eq!(r["worst_fraction_of_tolerance"], 0.0, "{r}");
        }
    }
}
