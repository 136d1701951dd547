//! Softmax, log-softmax and reduction sum (`hipkernel.reduce_fwd.dispatch.v1`) and layernorm /
//! rmsnorm forward (`hipkernel.norm_fwd.dispatch.v1`) on the GPU engine against PyTorch, rows
//! of 1024 and 4096 elements (4096×1024 and 32768×4096, f16 and f32), side by side in one
//! run. Each graph is the one a user builds with the SDK (softmax: MAX reduction → SUB → EXP →
//! ADD reduction → DIV over the last axis, intermediates virtual and f32; log-softmax: … → LOG
//! → SUB; sum: one ADD reduction to `[rows, 1]`; layernorm / rmsnorm: inference, scale (and
//! bias) `[1, cols]`, eps 1e-5) and runs as ONE launch. Before timing, each graph's GPU output
//! on the same inputs is compared with the CPU reference engine (f32: |d| ≤ 1e-4·(1 + |r|) for
//! every op but the sum, whose bound is 1e-4·(1 + Σ|x|); f16: 1e-2·(1 + |r|), the sum
//! 1e-2·(1 + Σ|x|)/… see `check`), failing the run on a miss. Timing: CUDA/HIP events around
//! 20 executes, median of 5 rounds (PyTorch: `torch.softmax`, `torch.log_softmax`,
//! `x.sum(-1, keepdim=True)`, `F.layer_norm`, `F.rms_norm`, timed the same way).
//! Never run without a GPU; the parent module skips everything then.

use super::{Num, R, e, vals};
use half::f16;
use hipdnn::{
    Buffer, DataType, Graph, Handle, LayernormAttributes, NormFwdPhase, PointwiseAttributes,
    PointwiseMode, ReductionAttributes, ReductionMode, RmsNormAttributes, TensorAttributes,
    TensorValue, VariantPack,
};
use serde_json::json;

/// The ops of the section.
const OPS: [&str; 5] = ["softmax", "log_softmax", "sum", "layernorm", "rmsnorm"];
/// (rows, cols) of the timed rows.
const SIZES: [(i64, i64); 2] = [(4096, 1024), (32768, 4096)];

/// `op` over the last axis of x `[rows, cols]` (UID 1) → y (UID 4; `[rows, 1]` for the sum);
/// scale UID 2 and bias UID 3 `[1, cols]` for the norms.
pub(super) fn graph(op: &str, rows: i64, cols: i64, dt: DataType) -> Graph {
    let mut g = Graph::new();
    g.set_name(op)
        .set_io_data_type(dt)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .data_type(dt)
            .dims([rows, cols])
            .strides([cols, 1]),
    );
    let pw = PointwiseAttributes::with_mode;
    let red = |m| ReductionAttributes::new().mode(m);
    let affine = |g: &mut Graph, name: &str, uid: i64| {
        g.tensor(
            TensorAttributes::new(name)
                .uid(uid)
                .data_type(dt)
                .dims([1, cols])
                .strides([cols, 1]),
        )
    };
    let eps = |g: &mut Graph| {
        g.tensor(
            TensorAttributes::scalar(TensorValue::Float32(1e-5))
                .name("eps")
                .uid(5),
        )
    };
    let y = match op {
        "softmax" | "log_softmax" => {
            let m = g.reduction(x, [rows, 1], red(ReductionMode::MaxOp));
            let d = g.pointwise(x, m, pw(PointwiseMode::Sub));
            let ex = g.pointwise_unary(d, pw(PointwiseMode::Exp));
            let s = g.reduction(ex, [rows, 1], red(ReductionMode::Add));
            if op == "softmax" {
                g.pointwise(ex, s, pw(PointwiseMode::Div))
            } else {
                let l = g.pointwise_unary(s, pw(PointwiseMode::Log));
                g.pointwise(d, l, pw(PointwiseMode::Sub))
            }
        }
        "sum" => g.reduction(x, [rows, 1], red(ReductionMode::Add)),
        "layernorm" => {
            let (s, b, e) = (
                affine(&mut g, "scale", 2),
                affine(&mut g, "bias", 3),
                eps(&mut g),
            );
            let a = LayernormAttributes::new()
                .epsilon(e)
                .forward_phase(NormFwdPhase::Inference);
            g.layernorm(x, s, b, a).0
        }
        _ => {
            let (s, e) = (affine(&mut g, "scale", 2), eps(&mut g));
            let a = RmsNormAttributes::new()
                .epsilon(e)
                .forward_phase(NormFwdPhase::Inference);
            g.rmsnorm(x, s, a).0
        }
    };
    g.set_output(y, true).set_uid(y, 4).set_data_type(y, dt);
    g
}

/// Inputs by UID: x in [−2, 2) (deterministic), scale in [0.5, 1.5), bias in [−1, 1).
fn inputs<T: Num>(op: &str, rows: i64, cols: i64) -> Vec<(i64, Vec<T>)> {
    let q = |v: Vec<f32>| v.into_iter().map(T::of).collect::<Vec<T>>();
    let mut v = vec![(
        1,
        q(vals((rows * cols) as usize, 41)
            .into_iter()
            .map(|x| 2.0 * x)
            .collect()),
    )];
    if op == "layernorm" || op == "rmsnorm" {
        v.push((
            2,
            q(vals(cols as usize, 42)
                .into_iter()
                .map(|x| 1.0 + 0.5 * x)
                .collect()),
        ));
    }
    if op == "layernorm" {
        v.push((3, q(vals(cols as usize, 43))));
    }
    v
}

fn y_len(op: &str, rows: i64, cols: i64) -> usize {
    (if op == "sum" { rows } else { rows * cols }) as usize
}

/// Builds `op` on `gpu` and on `cpu`, runs both on the same inputs and compares: per element
/// |d| ≤ tol·(1 + m) with tol 1e-4 (f32) or 1e-2 (f16) and m = |r|, or Σ|x| of the row for
/// the sum. Returns the check record.
pub(super) fn check<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    op: &str,
    rows: i64,
    cols: i64,
    dt: DataType,
) -> R<serde_json::Value> {
    let ins = inputs::<T>(op, rows, cols);
    let n = y_len(op, rows, cols);
    let mut gg = graph(op, rows, cols, dt);
    gg.build(gpu).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    let got = super::run(gpu, &gg, &ins, n)?;
    let mut gc = graph(op, rows, cols, dt);
    gc.build(cpu).map_err(e)?;
    let want = super::run(cpu, &gc, &ins, n)?;
    let tol = if dt == DataType::Float { 1e-4 } else { 1e-2 };
    let mut worst = 0f32;
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        let (a, b) = (a.f(), b.f());
        let m = if op == "sum" {
            ins[0].1[i * cols as usize..(i + 1) * cols as usize]
                .iter()
                .map(|v| v.f().abs())
                .sum::<f32>()
        } else {
            b.abs()
        };
        let d = (a - b).abs() / (tol * (1.0 + m));
        if d.is_nan() || d > 1.0 {
            return Err(format!(
                "{op} {dt:?} {rows}x{cols}: element {i}: gpu {a}, cpu {b} (tol {tol}·(1 + {m}))"
            ));
        }
        worst = worst.max(d);
    }
    Ok(
        json!({"op": op, "dtype": format!("{dt:?}"), "rows": rows, "cols": cols, "plan": engine,
        "worst_fraction_of_tolerance": worst}),
    )
}

/// Median ms per execute of `op` on `gpu`: 5 rounds of 20 executes between events.
pub(super) fn time<T: Num>(
    gpu: &Handle,
    op: &str,
    rows: i64,
    cols: i64,
    dt: DataType,
    benchmarked: bool,
) -> R<(f64, String)> {
    let mut g = graph(op, rows, cols, dt);
    if benchmarked {
        g.build_benchmarked(gpu).map_err(e)?;
    } else {
        g.build(gpu).map_err(e)?;
    }
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = gpu.gpu_device().ok_or("this handle executes on the CPU")?;
    let bufs: Vec<(i64, Buffer<T>)> = inputs::<T>(op, rows, cols)
        .iter()
        .map(|(u, v)| Buffer::from_slice_on(gpu, v).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut y = Buffer::<T>::alloc(gpu, y_len(op, rows, cols)).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(gpu, g.workspace_size().map_err(e)?).map_err(e)?;
    let exec = || {
        let mut pack = VariantPack::new();
        for (u, b) in &bufs {
            pack = pack.with(*u, b);
        }
        pack = pack.with(4, &mut y);
        g.execute(gpu, pack, Some(&mut ws)).map_err(e)
    };
    let ms = super::median_ms(dev, 5, exec)?;
    Ok((ms, engine))
}

pub(super) const TORCH: &str = r#"
out = {"torch": torch.__version__, "ms": {}, "graph_ms": {}}
for rows, cols in json.loads(sys.argv[1]):
    for name, dt in [("f16", torch.float16), ("f32", torch.float32)]:
        x = torch.rand((rows, cols), device="cuda", dtype=dt) * 4 - 2
        w = torch.rand((cols,), device="cuda", dtype=dt) + 0.5
        b = torch.rand((cols,), device="cuda", dtype=dt) - 0.5
        fns = {"softmax": lambda: torch.softmax(x, -1), "log_softmax": lambda: torch.log_softmax(x, -1),
               "sum": lambda: x.sum(-1, keepdim=True),
               "layernorm": lambda: F.layer_norm(x, (cols,), w, b, 1e-5)}
        if hasattr(F, "rms_norm"):
            fns["rmsnorm"] = lambda: F.rms_norm(x, (cols,), w, 1e-5)
        for op, f in fns.items():
            peer(out, f"{op}_{name}_{rows}x{cols}", f)
print(json.dumps(out))
"#;

/// The section: correctness checks (every op, f32 and f16, at 64×1000 and 4096×1024), then the
/// timed rows; returns (checks, rows, torch).
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
                println!("reduce check: {r}");
                checks.push(r);
            }
        }
    }
    let torch = {
        let arg = serde_json::to_string(&SIZES).unwrap_or_default();
        super::torch_json(TORCH, &arg)
    };
    let mut rows_out = Vec::new();
    for (rows, cols) in SIZES {
        for op in OPS {
            for (name, dt) in [("f16", DataType::Half), ("f32", DataType::Float)] {
                let timed = |benchmarked| {
                    if dt == DataType::Float {
                        time::<f32>(gpu, op, rows, cols, dt, benchmarked)
                    } else {
                        time::<f16>(gpu, op, rows, cols, dt, benchmarked)
                    }
                };
                let (ms, plan) = timed(false)?;
                let bench_ms = if super::sweep() {
                    println!("reduce benchmarked build: {op} {name} {rows}x{cols}");
                    Some(timed(true)?.0)
                } else {
                    None
                };
                let elem = if name == "f16" { 2.0 } else { 4.0 };
                let bytes = (rows * cols) as f64 * elem * if op == "sum" { 1.0 } else { 2.0 };
                let row = json!({"op": op, "dtype": name, "rows": rows, "cols": cols, "ms": ms,
                    "gb_per_s": bytes / (ms * 1e-3) / 1e9, "plan": plan,
                    "benchmarked_ms": bench_ms});
                let row =
                    super::with_peer(row, &torch, format!("{op}_{name}_{rows}x{cols}").as_str());
                println!("reduce: {row}");
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
        "\nSoftmax, log-softmax, sum (reduce_fwd) and layernorm / rmsnorm (norm_fwd) over the last axis, one launch per graph ({n_checks} correctness checks vs the CPU reference passed), vs PyTorch {} (`torch.softmax`, `torch.log_softmax`, `x.sum(-1)`, `F.layer_norm`, `F.rms_norm`); CUDA events around 20 executes, median of 5 rounds; GB/s counts x read and y written once:\n\n| op | rows × cols | dtype | hipdnn-rs | GB/s | {} |\n|---|---|---|---|---|---|---|---|---|\n",
        torch["torch"],
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
