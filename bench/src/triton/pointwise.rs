//! Pointwise on the GPU (`hipkernel.pointwise.dispatch.v3`, the fused pointwise Triton
//! family): `y = a + b` over 16 777 216 and 268 435 456 f32/f16 elements, checked bit for bit
//! against the host sum, then timed (CUDA/HIP events around 20 executes, median of 5 rounds)
//! with the static rule's plan and with a benchmarked build, beside `torch.add(a, b, out=c)`
//! and a device-to-device copy (`c.copy_(a)`, cudaMemcpyAsync) timed the same way in the same
//! run. Bandwidth counts the bytes a kernel must move: 3·n·size for the add, 2·n·size for the
//! copy. Never run without a GPU; the parent module skips everything then.

use super::{Num, R, e};
use half::f16;
use hipdnn::{
    Buffer, DataType, Graph, Handle, PointwiseAttributes, PointwiseMode, TensorAttributes,
    VariantPack,
};
use hipdnn_hip::Stream;
use serde_json::json;

/// Element counts of the table.
pub(super) const SIZES: [i64; 2] = [16_777_216, 268_435_456];

fn add_graph(n: i64, dt: DataType) -> Graph {
    let mut g = Graph::new();
    g.set_name("pointwise_add")
        .set_io_data_type(dt)
        .set_intermediate_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let t = |name: &str, uid: i64| {
        TensorAttributes::new(name)
            .uid(uid)
            .data_type(dt)
            .dims([n])
            .strides([1])
    };
    let a = g.tensor(t("a", 1));
    let b = g.tensor(t("b", 2));
    let y = g.pointwise(a, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.set_output(y, true).set_uid(y, 3);
    g
}

/// Builds (static rule or benchmarked), checks y against the host sum, and returns the median
/// ms per execute.
fn time_add<T: Num>(h: &Handle, n: i64, dt: DataType, benchmarked: bool) -> R<f64> {
    let mut g = add_graph(n, dt);
    if benchmarked {
        g.build_benchmarked(h).map_err(e)?;
    } else {
        g.build(h).map_err(e)?;
    }
    let len = n as usize;
    let av: Vec<T> = (0..len).map(|i| T::of((i % 1000) as f32 * 0.001)).collect();
    let bv: Vec<T> = (0..len).map(|i| T::of((i % 7) as f32 * 0.5)).collect();
    let dev = h.gpu_device().ok_or("this handle executes on the CPU")?;
    let a = Buffer::from_slice_on(h, &av).map_err(e)?;
    let b = Buffer::from_slice_on(h, &bv).map_err(e)?;
    let mut y = Buffer::<T>::alloc(h, len).map_err(e)?;
    let stream = Stream::default_stream(dev);
    let exec = |y: &mut Buffer<T>| {
        let pack = VariantPack::new().with(1, &a).with(2, &b).with(3, y);
        g.execute(h, pack, None).map_err(e)
    };
    exec(&mut y)?;
    stream.synchronize().map_err(e)?;
    let got = y.to_vec().map_err(e)?;
    if let Some(i) = (0..len).find(|&i| got[i].f() != T::of(av[i].f() + bv[i].f()).f()) {
        return Err(format!(
            "pointwise add {dt:?} n={n}: element {i} is {}, the host sum {}",
            got[i].f(),
            T::of(av[i].f() + bv[i].f()).f()
        ));
    }
    let ms = super::median_ms(dev, 4, || exec(&mut y))?;
    Ok(ms)
}

pub(super) const TORCH_ADD: &str = r#"
out = {"torch": torch.__version__, "ms": {}, "graph_ms": {}}
for n in json.loads(sys.argv[1]):
    for name, dt in [("f32", torch.float32), ("f16", torch.float16)]:
        a = torch.rand(n, device="cuda", dtype=dt); b = torch.rand(n, device="cuda", dtype=dt)
        c = torch.empty_like(a)
        peer(out, f"add_{name}_{n}", lambda: torch.add(a, b, out=c))
        out["ms"][f"copy_{name}_{n}"] = eager_ms(lambda: c.copy_(a))
        del a, b, c; torch.cuda.empty_cache()
print(json.dumps(out))
"#;

/// The rows (one per dtype × size) and torch's report.
pub(super) fn section(gpu: &Handle) -> R<(Vec<serde_json::Value>, serde_json::Value)> {
    let torch = {
        let arg = serde_json::to_string(&SIZES).unwrap_or_default();
        super::torch_json(TORCH_ADD, &arg)
    };
    let mut rows = Vec::new();
    for &n in &SIZES {
        for (name, dt, size) in [("f32", DataType::Float, 4.0), ("f16", DataType::Half, 2.0)] {
            let (ms, bench_ms) = match dt {
                DataType::Float => (
                    time_add::<f32>(gpu, n, dt, false)?,
                    time_add::<f32>(gpu, n, dt, true)?,
                ),
                _ => (
                    time_add::<f16>(gpu, n, dt, false)?,
                    time_add::<f16>(gpu, n, dt, true)?,
                ),
            };
            let gbps = |bytes: f64, ms: f64| bytes / (ms * 1e-3) / 1e9;
            let add_bytes = 3.0 * n as f64 * size;
            let torch_ms = torch["ms"][format!("add_{name}_{n}")].as_f64();
            let copy_ms = torch["ms"][format!("copy_{name}_{n}")].as_f64();
            let copy_gbps = copy_ms.map(|t| gbps(2.0 * n as f64 * size, t));
            let row = json!({"dtype": name, "n": n, "ms": ms, "gbps": gbps(add_bytes, ms),
                "bench_ms": bench_ms, "bench_gbps": gbps(add_bytes, bench_ms),
                "torch_add_gbps": torch_ms.map(|t| gbps(add_bytes, t)),
                "bench_ratio_vs_torch": torch_ms.map(|t| t / bench_ms),
                "copy_ms": copy_ms, "copy_gbps": copy_gbps,
                "ratio_vs_copy_bandwidth": copy_gbps.map(|c| gbps(add_bytes, ms) / c)});
            let row = super::with_peer(row, &torch, format!("add_{name}_{n}").as_str());
            println!("pointwise: {row}");
            rows.push(row);
        }
    }
    Ok((rows, torch))
}

/// The markdown table of [`section`].
pub(super) fn table(rows: &[serde_json::Value], torch: &serde_json::Value) -> String {
    let f = |v: &serde_json::Value, p: &str| {
        v.as_f64()
            .map(|x| format!("{x:.2}{p}"))
            .unwrap_or_else(|| "n/a".into())
    };
    let mut t = format!(
        "\nPointwise ADD `y = a + b` (contract `hipkernel.pointwise.dispatch.v3`, one launch; output checked bit for bit against the host sum) vs `torch.add(a, b, out=c)` and a device-to-device copy (`c.copy_(a)`), torch {}; GB/s = bytes moved (add 3·n·size, copy 2·n·size) per second:\n\n| dtype | elements | hipdnn-rs (static rule) | GB/s | benchmarked plan GB/s | torch.add GB/s | {} | benchmarked/torch.add | D2D copy GB/s | ours/copy bandwidth |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        torch["torch"],
        super::PEER_HEADER
    );
    for r in rows {
        t += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r["dtype"].as_str().unwrap_or(""),
            r["n"],
            f(&r["ms"], " ms").replace(".00 ms", " ms"),
            f(&r["gbps"], ""),
            f(&r["bench_gbps"], ""),
            f(&r["torch_add_gbps"], ""),
            super::peer_cells(r),
            f(&r["bench_ratio_vs_torch"], "×"),
            f(&r["copy_gbps"], ""),
            f(&r["ratio_vs_copy_bandwidth"], "×"),
        );
    }
    t
}
