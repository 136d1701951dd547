//! Max and average pooling (`hipkernel.resample_fwd.dispatch.v1`, the Triton `pool_fwd`
//! family) on the GPU engine against PyTorch, side by side in one run: ResNet-50's stem max
//! pool (3×3, stride 2, padding 1 over 32 × 64 × 112²), a 2×2 / 2 average pool over
//! 32 × 256 × 56² and ResNet's global 7×7 average pool over 32 × 2048 × 7², each f16 and f32,
//! NCHW and NHWC (PyTorch: the same tensor in `torch.channels_last` memory format). Each graph
//! is one `resample_fwd` node built with the SDK and runs as ONE launch. Before timing, each
//! (mode, layout, type) is run on GPU and CPU engines on the same inputs at a smaller shape
//! and must agree bit for bit (the family's contract), failing the run on a miss. Timing:
//! CUDA/HIP events around 20 executes, median of 5 rounds (PyTorch: `F.max_pool2d`,
//! `F.avg_pool2d`, timed the same way). `--only pool`.

use super::{Num, R, e, vals};
use half::f16;
use hipdnn::{
    Buffer, DataType, Graph, Handle, PaddingMode, ResampleFwdAttributes, ResampleMode,
    TensorAttributes, VariantPack,
};
use serde_json::json;

/// A timed row: (name, mode, [n, c, h, w], window, stride, padding).
type Row = (&'static str, ResampleMode, [i64; 4], i64, i64, i64);

const ROWS: [Row; 3] = [
    (
        "maxpool 3x3/2 p1",
        ResampleMode::MaxPool,
        [32, 64, 112, 112],
        3,
        2,
        1,
    ),
    (
        "avgpool 2x2/2",
        ResampleMode::AvgPoolIncludePadding,
        [32, 256, 56, 56],
        2,
        2,
        0,
    ),
    (
        "global avgpool 7x7",
        ResampleMode::AvgPoolIncludePadding,
        [32, 2048, 7, 7],
        7,
        7,
        0,
    ),
];

fn out_extent(i: i64, k: i64, s: i64, p: i64) -> i64 {
    (i + 2 * p - k) / s + 1
}

/// Strides of `d` (n, c, h, w) in NCHW or NHWC.
fn strides(d: [i64; 4], nhwc: bool) -> [i64; 4] {
    let [_, c, h, w] = d;
    if nhwc {
        [h * w * c, 1, w * c, c]
    } else {
        [c * h * w, h * w, w, 1]
    }
}

/// One pooling node x (UID 1) → y (UID 4).
fn graph(
    mode: ResampleMode,
    d: [i64; 4],
    k: i64,
    s: i64,
    p: i64,
    dt: DataType,
    nhwc: bool,
) -> Graph {
    let mut g = Graph::new();
    g.set_name("pool")
        .set_io_data_type(dt)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .data_type(dt)
            .dims(d)
            .strides(strides(d, nhwc)),
    );
    let a = ResampleFwdAttributes::new()
        .window([k, k])
        .stride([s, s])
        .pre_padding([p, p])
        .post_padding([p, p])
        .resample_mode(mode)
        .padding_mode(PaddingMode::NegInfPad);
    let y = g.resample_fwd(x, a);
    g.set_output(y, true).set_uid(y, 4).set_data_type(y, dt);
    g
}

fn y_len(d: [i64; 4], k: i64, s: i64, p: i64) -> usize {
    (d[0] * d[1] * out_extent(d[2], k, s, p) * out_extent(d[3], k, s, p)) as usize
}

/// x in [−1, 1) (deterministic), as the buffer's memory order (any order: pooling checks
/// compare the GPU and CPU engines on the same bytes).
fn input<T: Num>(d: [i64; 4]) -> Vec<(i64, Vec<T>)> {
    let n = d.iter().product::<i64>() as usize;
    vec![(1, vals(n, 51).into_iter().map(T::of).collect())]
}

/// GPU vs CPU on one (mode, layout, type) at a small odd shape: every y value equal.
fn check<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    row: &Row,
    dt: DataType,
    nhwc: bool,
) -> R<serde_json::Value> {
    let (name, mode, _, k, s, p) = *row;
    let d = [2, 64, 29, 31];
    let ins = input::<T>(d);
    let n = y_len(d, k, s, p);
    let mut gg = graph(mode, d, k, s, p, dt, nhwc);
    gg.build(gpu).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    if engine != "hipkernel.ingestor.gpu" {
        return Err(format!(
            "{name} {dt:?} nhwc={nhwc}: built on {engine}, not the GPU engine"
        ));
    }
    let got = super::run(gpu, &gg, &ins, n)?;
    let mut gc = graph(mode, d, k, s, p, dt, nhwc);
    gc.build(cpu).map_err(e)?;
    let want = super::run(cpu, &gc, &ins, n)?;
    if let Some(i) = (0..n).find(|&i| got[i].f().to_bits() != want[i].f().to_bits()) {
        return Err(format!(
            "{name} {dt:?} nhwc={nhwc} {d:?}: element {i}: gpu {}, cpu {}",
            got[i].f(),
            want[i].f()
        ));
    }
    Ok(
        json!({"op": name, "dtype": format!("{dt:?}"), "nhwc": nhwc, "dims": d, "plan": engine,
        "bit_identical": n}),
    )
}

/// Median ms per execute on `gpu`: 5 rounds of 20 executes between events.
fn time<T: Num>(gpu: &Handle, row: &Row, dt: DataType, nhwc: bool) -> R<(f64, String)> {
    let (_, mode, d, k, s, p) = *row;
    let mut g = graph(mode, d, k, s, p, dt, nhwc);
    g.build(gpu).map_err(e)?;
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = gpu.gpu_device().ok_or("this handle executes on the CPU")?;
    let x = Buffer::from_slice_on(gpu, &input::<T>(d)[0].1).map_err(e)?;
    let mut y = Buffer::<T>::alloc(gpu, y_len(d, k, s, p)).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(gpu, g.workspace_size().map_err(e)?).map_err(e)?;
    let exec = || {
        let pack = VariantPack::new().with(1, &x).with(4, &mut y);
        g.execute(gpu, pack, Some(&mut ws)).map_err(e)
    };
    let ms = super::median_ms(dev, 5, exec)?;
    Ok((ms, engine))
}

pub(super) const TORCH: &str = r#"
out = {"torch": torch.__version__, "ms": {}, "graph_ms": {}}
for name, kind, d, k, s, p in json.loads(sys.argv[1]):
    for dn, dt in [("f16", torch.float16), ("f32", torch.float32)]:
        for nhwc in (False, True):
            x = torch.rand(d, device="cuda", dtype=dt) * 2 - 1
            if nhwc:
                x = x.to(memory_format=torch.channels_last)
            if kind == "max":
                f = lambda: F.max_pool2d(x, k, s, p)
            else:
                f = lambda: F.avg_pool2d(x, k, s, p)
            peer(out, f"{name}_{dn}_{'nhwc' if nhwc else 'nchw'}", f)
print(json.dumps(out))
"#;

/// The timed rows as the PyTorch scripts read them: `[name, "max" | "avg", dims, k, s, p]`.
fn torch_rows() -> String {
    let arg: Vec<serde_json::Value> = ROWS
        .iter()
        .map(|(n, m, d, k, s, p)| {
            let kind = if *m == ResampleMode::MaxPool {
                "max"
            } else {
                "avg"
            };
            json!([n, kind, d, k, s, p])
        })
        .collect();
    serde_json::to_string(&arg).unwrap_or_default()
}

/// The section: the bit-exact checks, then the timed rows; returns (checks, rows, torch).
pub(super) fn section(gpu: &Handle, cpu: &Handle) -> super::Section {
    let mut checks = Vec::new();
    for row in &ROWS[..2] {
        for nhwc in [false, true] {
            for dt in [DataType::Float, DataType::Half] {
                let r = if dt == DataType::Float {
                    check::<f32>(gpu, cpu, row, dt, nhwc)
                } else {
                    check::<f16>(gpu, cpu, row, dt, nhwc)
                }?;
                println!("pool check: {r}");
                checks.push(r);
            }
        }
    }
    let torch = super::torch_json(TORCH, &torch_rows());
    let mut rows_out = Vec::new();
    for row in &ROWS {
        let (name, _, d, k, s, p) = *row;
        for (dn, dt) in [("f16", DataType::Half), ("f32", DataType::Float)] {
            for nhwc in [false, true] {
                let (ms, plan) = if dt == DataType::Float {
                    time::<f32>(gpu, row, dt, nhwc)
                } else {
                    time::<f16>(gpu, row, dt, nhwc)
                }?;
                let elem = if dn == "f16" { 2.0 } else { 4.0 };
                let bytes = (d.iter().product::<i64>() as f64 + y_len(d, k, s, p) as f64) * elem;
                let layout = if nhwc { "nhwc" } else { "nchw" };
                let r = json!({"op": name, "dtype": dn, "layout": layout, "dims": d, "ms": ms,
                    "gb_per_s": bytes / (ms * 1e-3) / 1e9, "plan": plan});
                let r = super::with_peer(r, &torch, format!("{name}_{dn}_{layout}").as_str());
                println!("pool: {r}");
                rows_out.push(r);
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
        "\nPooling (pool_fwd, one launch per graph; {n_checks} bit-exact checks vs the CPU reference passed) vs PyTorch {} (`F.max_pool2d`, `F.avg_pool2d`, NHWC = `channels_last`); CUDA events around 20 executes, median of 5 rounds; GB/s counts x read and y written once:\n\n| op | n × c × h × w | dtype | layout | hipdnn-rs | GB/s | {} |\n|---|---|---|---|---|---|---|---|---|---|\n",
        torch["torch"],
        super::PEER_HEADER
    );
    for r in rows {
        let d = &r["dims"];
        t += &format!(
            "| {} | {}×{}×{}×{} | {} | {} | {:.4} ms | {:.0} | {} |\n",
            r["op"].as_str().unwrap_or_default(),
            d[0],
            d[1],
            d[2],
            d[3],
            r["dtype"].as_str().unwrap_or_default(),
            r["layout"].as_str().unwrap_or_default(),
            r["ms"].as_f64().unwrap_or(0.0),
            r["gb_per_s"].as_f64().unwrap_or(0.0),
            super::peer_cells(r),
        );
    }
    t
}

/// Backward of one pooling row: dy (UID 5, y's dims and layout) and, for max pooling, the
/// forward's window-position index (UID 6, INT32, y's dims packed) → dx (UID 7, x's dims and
/// layout). `--only poolbwd` (issue 31).
fn bwd_graph(row: &Row, d: [i64; 4], dt: DataType, nhwc: bool) -> Graph {
    let (_, mode, _, k, s, p) = *row;
    let mut g = Graph::new();
    g.set_name("pool_bwd")
        .set_io_data_type(dt)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let yd = [
        d[0],
        d[1],
        out_extent(d[2], k, s, p),
        out_extent(d[3], k, s, p),
    ];
    let dy = g.tensor(
        TensorAttributes::new("dy")
            .uid(5)
            .data_type(dt)
            .dims(yd)
            .strides(strides(yd, nhwc)),
    );
    let index = (mode == ResampleMode::MaxPool).then(|| {
        g.tensor(
            TensorAttributes::new("index")
                .uid(6)
                .data_type(DataType::Int32)
                .dims(yd)
                .strides(strides(yd, false)),
        )
    });
    let a = hipdnn::ResampleBwdAttributes::new()
        .window([k, k])
        .stride([s, s])
        .pre_padding([p, p])
        .post_padding([p, p])
        .resample_mode(mode)
        .padding_mode(PaddingMode::NegInfPad);
    let dx = g.resample_bwd(dy, index, a);
    g.set_output(dx, true)
        .set_uid(dx, 7)
        .set_data_type(dx, dt)
        .set_strides(dx, strides(d, nhwc));
    g
}

/// dy in [−1, 1) and window positions in [0, k²) (deterministic).
fn bwd_inputs<T: Num>(row: &Row, d: [i64; 4]) -> (Vec<T>, Vec<i32>) {
    let (_, _, _, k, s, p) = *row;
    let n = y_len(d, k, s, p);
    let dy = vals(n, 52).into_iter().map(T::of).collect();
    let idx = vals(n, 53)
        .into_iter()
        .map(|v| (((v + 1.0) * 0.5 * (k * k) as f32) as i32).clamp(0, (k * k - 1) as i32))
        .collect();
    (dy, idx)
}

/// Executes a backward plan `g` on `h` once; returns dx (memory order).
fn run_bwd<T: Num>(h: &Handle, g: &Graph, row: &Row, d: [i64; 4]) -> R<Vec<T>> {
    let (dy, idx) = bwd_inputs::<T>(row, d);
    let dyb = Buffer::from_slice_on(h, &dy).map_err(e)?;
    let ib = Buffer::from_slice_on(h, &idx).map_err(e)?;
    let mut dx = Buffer::<T>::alloc(h, d.iter().product::<i64>() as usize).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
    let mut pack = VariantPack::new().with(5, &dyb).with(7, &mut dx);
    if row.1 == ResampleMode::MaxPool {
        pack = pack.with(6, &ib);
    }
    g.execute(h, pack, Some(&mut ws)).map_err(e)?;
    dx.to_vec().map_err(e)
}

/// GPU vs CPU on one backward (mode, layout, type) at a small odd shape: |d| ≤ tol·(1 + |r|),
/// tol 1e-4 f32, 1e-2 f16 (the backward tolerances: both sum in f32, in other orders).
fn check_bwd<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    row: &Row,
    dt: DataType,
    nhwc: bool,
) -> R<serde_json::Value> {
    let d = [2, 64, 29, 31];
    let mut gg = bwd_graph(row, d, dt, nhwc);
    gg.build(gpu).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    if engine != "hipkernel.ingestor.gpu" {
        return Err(format!(
            "{} backward {dt:?} nhwc={nhwc}: built on {engine}, not the GPU engine",
            row.0
        ));
    }
    let got = run_bwd::<T>(gpu, &gg, row, d)?;
    let mut gc = bwd_graph(row, d, dt, nhwc);
    gc.build(cpu).map_err(e)?;
    let want = run_bwd::<T>(cpu, &gc, row, d)?;
    let tol = if dt == DataType::Float { 1e-4 } else { 1e-2 };
    let mut worst = 0f32;
    for (i, (a, r)) in got.iter().zip(&want).enumerate() {
        let q = (a.f() - r.f()).abs() / (tol * (1.0 + r.f().abs()));
        if q.is_nan() || q > 1.0 {
            return Err(format!(
                "{} backward {dt:?} nhwc={nhwc}: element {i}: gpu {}, cpu {}",
                row.0,
                a.f(),
                r.f()
            ));
        }
        worst = worst.max(q);
    }
    Ok(
        json!({"op": format!("{} backward", row.0), "dtype": format!("{dt:?}"), "nhwc": nhwc,
        "plan": engine, "worst_fraction_of_tolerance": worst}),
    )
}

/// Median ms per backward execute on `gpu`: 5 rounds of 20 executes between events.
fn time_bwd<T: Num>(gpu: &Handle, row: &Row, dt: DataType, nhwc: bool) -> R<(f64, String)> {
    let d = row.2;
    let mut g = bwd_graph(row, d, dt, nhwc);
    g.build(gpu).map_err(e)?;
    let engine = g.engine_name().map_err(e)?.to_string();
    let dev = gpu.gpu_device().ok_or("this handle executes on the CPU")?;
    let (dy, idx) = bwd_inputs::<T>(row, d);
    let dyb = Buffer::from_slice_on(gpu, &dy).map_err(e)?;
    let ib = Buffer::from_slice_on(gpu, &idx).map_err(e)?;
    let mut dx = Buffer::<T>::alloc(gpu, d.iter().product::<i64>() as usize).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(gpu, g.workspace_size().map_err(e)?).map_err(e)?;
    let max = row.1 == ResampleMode::MaxPool;
    let exec = || {
        let mut pack = VariantPack::new().with(5, &dyb).with(7, &mut dx);
        if max {
            pack = pack.with(6, &ib);
        }
        g.execute(gpu, pack, Some(&mut ws)).map_err(e)
    };
    let ms = super::median_ms(dev, 5, exec)?;
    Ok((ms, engine))
}

pub(super) const TORCH_BWD: &str = r#"
out = {"torch": torch.__version__, "ms": {}, "graph_ms": {}}
aten = torch.ops.aten
for name, kind, d, k, s, p in json.loads(sys.argv[1]):
    for dn, dt in [("f16", torch.float16), ("f32", torch.float32)]:
        for nhwc in (False, True):
            x = torch.rand(d, device="cuda", dtype=dt) * 2 - 1
            if nhwc:
                x = x.to(memory_format=torch.channels_last)
            if kind == "max":
                y, idx = F.max_pool2d(x, k, s, p, return_indices=True)
                dy = torch.rand_like(y)
                f = lambda: aten.max_pool2d_with_indices_backward(dy, x, [k, k], [s, s], [p, p], [1, 1], False, idx)
            else:
                y = F.avg_pool2d(x, k, s, p)
                dy = torch.rand_like(y)
                f = lambda: aten.avg_pool2d_backward(dy, x, [k, k], [s, s], [p, p], False, True, None)
            peer(out, f"{name}_{dn}_{'nhwc' if nhwc else 'nchw'}", f)
print(json.dumps(out))
"#;

/// The backward section (`--only poolbwd`): checks against the CPU engine, then the timed rows
/// (the forward section's shapes, f16 and f32, NCHW and NHWC) against
/// `aten.max_pool2d_with_indices_backward` / `aten.avg_pool2d_backward`; returns (checks, rows,
/// torch).
pub(super) fn bwd_section(gpu: &Handle, cpu: &Handle) -> super::Section {
    let mut checks = Vec::new();
    for row in &ROWS[..2] {
        for nhwc in [false, true] {
            for dt in [DataType::Float, DataType::Half] {
                let r = if dt == DataType::Float {
                    check_bwd::<f32>(gpu, cpu, row, dt, nhwc)
                } else {
                    check_bwd::<f16>(gpu, cpu, row, dt, nhwc)
                }?;
                println!("poolbwd check: {r}");
                checks.push(r);
            }
        }
    }
    let torch = super::torch_json(TORCH_BWD, &torch_rows());
    let mut rows_out = Vec::new();
    for row in &ROWS {
        let (name, _, d, k, s, p) = *row;
        for (dn, dt) in [("f16", DataType::Half), ("f32", DataType::Float)] {
            for nhwc in [false, true] {
                let (ms, plan) = if dt == DataType::Float {
                    time_bwd::<f32>(gpu, row, dt, nhwc)
                } else {
                    time_bwd::<f16>(gpu, row, dt, nhwc)
                }?;
                let elem = if dn == "f16" { 2.0 } else { 4.0 };
                let bytes = (d.iter().product::<i64>() as f64 + y_len(d, k, s, p) as f64) * elem;
                let layout = if nhwc { "nhwc" } else { "nchw" };
                let r = json!({"op": format!("{name} backward"), "dtype": dn, "layout": layout,
                    "dims": d, "ms": ms, "gb_per_s": bytes / (ms * 1e-3) / 1e9, "plan": plan});
                let r = super::with_peer(r, &torch, format!("{name}_{dn}_{layout}").as_str());
                println!("poolbwd: {r}");
                rows_out.push(r);
            }
        }
    }
    Ok((checks, rows_out, torch))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backward section's graphs build and run on the CPU engine for every mode and layout
    /// (CPU against CPU agrees exactly), so a device run never starts with a graph the SDK
    /// refuses.
    #[test]
    fn the_backward_graphs_build_and_agree_on_the_cpu() {
        let cpu = Handle::cpu().unwrap();
        for row in &ROWS {
            for nhwc in [false, true] {
                let r = check_bwd::<f32>(&cpu, &cpu, row, DataType::Float, nhwc);
                let r = r.unwrap_err();
                assert!(r.contains("not the GPU engine"), "{r}");
            }
        }
        let d = [1, 3, 9, 8];
        for row in &ROWS[..2] {
            let mut g = bwd_graph(row, d, DataType::Float, true);
            g.build(&cpu).unwrap();
            let dx = run_bwd::<f32>(&cpu, &g, row, d).unwrap();
            assert_eq!(dx.len(), 3 * 9 * 8);
            assert!(dx.iter().any(|v| *v != 0.0), "{}", row.0);
        }
    }
}
