//! Conv wgrad on the GPU (`hipkernel.conv_wgrad.dispatch.v1`): correctness against the CPU
//! reference, bit-equal repeated executes, and the batch-32 ResNet-50 table against PyTorch's
//! `aten.convolution_backward` with output_mask [False, True, False] (weight gradient only).
//! Never run without a GPU; the parent module skips everything then.

use super::{ConvCase, Num, R, e, run, vals};
use half::{bf16, f16};
use hipdnn::{Buffer, DataType, Graph, Handle, TensorAttributes, VariantPack};
use serde_json::json;

/// A wgrad case: n, c, h (=w), k, r (=s), pad, stride, dilation, groups, NHWC.
#[allow(clippy::too_many_arguments)]
pub(super) fn case(
    n: i64,
    c: i64,
    h: i64,
    k: i64,
    r: i64,
    pad: i64,
    stride: i64,
    dil: i64,
    groups: i64,
    nhwc: bool,
) -> ConvCase {
    ConvCase {
        n,
        c,
        h,
        k,
        r,
        pad,
        stride,
        dil,
        groups,
        nhwc,
        epilogue: false,
    }
}

/// dy (UID 1), x (UID 2) → dw (UID 4, `[k, c/groups, r, r]`, KRSC for NHWC, else KCRS).
pub(super) fn graph(c: ConvCase, dt: DataType) -> Graph {
    let mut g = Graph::new();
    g.set_name("wgrad")
        .set_io_data_type(dt)
        .set_intermediate_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let lay = |t: TensorAttributes| {
        if c.nhwc {
            t.packed_nhwc()
        } else {
            t.packed_nchw()
        }
    };
    let p = c.p();
    let dy = g.tensor(lay(TensorAttributes::new("dy")
        .uid(1)
        .data_type(dt)
        .dims([c.n, c.k, p, p])));
    let x = g.tensor(lay(TensorAttributes::new("x")
        .uid(2)
        .data_type(dt)
        .dims([c.n, c.c, c.h, c.h])));
    let dw = g.conv_wgrad(
        dy,
        x,
        hipdnn::ConvWgradAttributes::new()
            .padding([c.pad, c.pad])
            .stride([c.stride, c.stride])
            .dilation([c.dil, c.dil]),
    );
    let (cg, r) = (c.c / c.groups, c.r);
    let strides = if c.nhwc {
        [r * r * cg, 1, r * cg, cg]
    } else {
        [cg * r * r, r * r, r, 1]
    };
    g.set_dims(dw, [c.k, cg, r, r])
        .set_strides(dw, strides)
        .set_data_type(dw, dt)
        .set_output(dw, true)
        .set_uid(dw, 4);
    g
}

/// dw elements.
pub(super) fn dw_len(c: ConvCase) -> usize {
    (c.k * (c.c / c.groups) * c.r * c.r) as usize
}

/// dy and x values (deterministic).
pub(super) fn inputs<T: Num>(c: ConvCase) -> Vec<(i64, Vec<T>)> {
    let q = |v: Vec<f32>| v.into_iter().map(T::of).collect::<Vec<T>>();
    vec![
        (1, q(vals(c.y_len(), 31))),
        (2, q(vals((c.n * c.c * c.h * c.h) as usize, 32))),
    ]
}

/// Runs `g` twice on the same buffers and workspace; errors unless both outputs are
/// bit-identical; returns the output.
fn run_twice<T: Num>(h: &Handle, g: &Graph, ins: &[(i64, Vec<T>)], n_out: usize) -> R<Vec<T>> {
    let bufs: Vec<(i64, Buffer<T>)> = ins
        .iter()
        .map(|(u, v)| Buffer::from_slice_on(h, v).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut y = Buffer::<T>::alloc(h, n_out).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?).map_err(e)?;
    let mut outs = Vec::new();
    for _ in 0..2 {
        let mut pack = VariantPack::new();
        for (u, b) in &bufs {
            pack = pack.with(*u, b);
        }
        pack = pack.with(4, &mut y);
        g.execute(h, pack, Some(&mut ws)).map_err(e)?;
        outs.push(y.to_vec().map_err(e)?);
    }
    let same = outs[0]
        .iter()
        .zip(&outs[1])
        .all(|(a, b)| a.f().to_bits() == b.f().to_bits());
    if !same {
        return Err("a second execute of the same plan gave different bits".into());
    }
    Ok(outs.swap_remove(0))
}

/// GPU wgrad vs the CPU reference. Tolerance per element: `rel · Σ|dy·x| + 1e-3`, the
/// magnitude from the CPU reference on |dy| and |x|; rel 1e-4 (f32), 2e-3 (f16), 1e-2 (bf16).
/// Also checks that two executes give identical bits and records the plan's workspace (split
/// > 1 needs one).
pub(super) fn check_case<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    c: ConvCase,
    dt: DataType,
) -> R<serde_json::Value> {
    let ins = inputs::<T>(c);
    let n_out = dw_len(c);
    let mut gg = graph(c, dt);
    gg.build(gpu).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    let workspace = gg.workspace_size().map_err(e)?;
    let got = run_twice(gpu, &gg, &ins, n_out).map_err(|x| format!("wgrad {dt:?} {c:?}: {x}"))?;
    let mut gc = graph(c, dt);
    gc.build(cpu).map_err(e)?;
    let want = run(cpu, &gc, &ins, n_out)?;
    let abs: Vec<(i64, Vec<T>)> = ins
        .iter()
        .map(|(u, v)| (*u, v.iter().map(|x| T::of(x.f().abs())).collect()))
        .collect();
    let mag = run(cpu, &gc, &abs, n_out)?;
    let rel = match dt {
        DataType::Float => 1e-4,
        DataType::Half => 2e-3,
        _ => 1e-2,
    };
    let mut worst = 0f32;
    for (i, ((g, w), m)) in got.iter().zip(&want).zip(&mag).enumerate() {
        let tol = rel * m.f() + 1e-3;
        let d = (g.f() - w.f()).abs();
        if d.is_nan() || d > tol {
            return Err(format!(
                "wgrad {dt:?} {c:?}: element {i}: gpu {} cpu {} (|d| {d} > {tol}) on {engine}",
                g.f(),
                w.f()
            ));
        }
        worst = worst.max(d / tol);
    }
    Ok(
        json!({"case": format!("{c:?}"), "dtype": format!("{dt:?}"), "engine": engine,
        "workspace_bytes": workspace, "execute_twice_bit_equal": true,
        "worst_fraction_of_tolerance": worst}),
    )
}

/// Median ms per execute (f16): 5 rounds of 20 executes between events; built by the static
/// rule or, with `benchmarked`, by `Graph::build_benchmarked`.
fn time(h: &Handle, c: ConvCase, benchmarked: bool) -> R<(f64, usize)> {
    let mut g = graph(c, DataType::Half);
    if benchmarked {
        g.build_benchmarked(h).map_err(e)?;
    } else {
        g.build(h).map_err(e)?;
    }
    let dev = h.gpu_device().ok_or("this handle executes on the CPU")?;
    let ins = inputs::<f16>(c);
    let bufs: Vec<(i64, Buffer<f16>)> = ins
        .iter()
        .map(|(u, v)| Buffer::from_slice_on(h, v).map(|b| (*u, b)))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut y = Buffer::<f16>::alloc(h, dw_len(c)).map_err(e)?;
    let wsb = g.workspace_size().map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, wsb).map_err(e)?;
    let exec = || {
        let pack = VariantPack::new()
            .with(1, &bufs[0].1)
            .with(2, &bufs[1].1)
            .with(4, &mut y);
        g.execute(h, pack, Some(&mut ws)).map_err(e)
    };
    let ms = super::median_ms(dev, 3, exec)?;
    Ok((ms, wsb))
}

pub(super) const TORCH_WGRAD: &str = r#"
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
out = {"ms": [], "graph_ms": [], "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}
for (n, c, h, k, r, pad, stride) in json.loads(sys.argv[1]):
    cl = torch.channels_last
    x = torch.randn(n, c, h, h, device="cuda", dtype=torch.float16).to(memory_format=cl)
    w = torch.randn(k, c, r, r, device="cuda", dtype=torch.float16).to(memory_format=cl)
    p = (h + 2 * pad - r) // stride + 1
    dy = torch.randn(n, k, p, p, device="cuda", dtype=torch.float16).to(memory_format=cl)
    f = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], 1, [False, True, False])
    out["ms"].append(eager_ms(f))
    out["graph_ms"].append(graph_ms(f))
out["graph_errors"] = GRAPH_ERRORS
print(json.dumps(out))
"#;

/// The correctness cases: NHWC/NCHW, sizes not multiples of 16, odd padding/stride,
/// dilation, groups, batch 1, 1×1, with and without a split of the reduction.
pub(super) fn check_cases() -> Vec<ConvCase> {
    vec![
        case(2, 32, 9, 48, 3, 1, 1, 1, 1, true), // spec tile, split 1 (162 terms)
        case(4, 16, 32, 32, 3, 1, 1, 1, 1, true), // spec, split 8 (4096 terms)
        case(5, 5, 40, 7, 3, 1, 1, 1, 1, false), // generic NCHW odd sizes, split
        case(1, 20, 11, 24, 3, 1, 2, 1, 1, true), // batch 1, stride 2, C=20
        case(2, 12, 15, 10, 3, 2, 1, 2, 1, true), // dilation 2, pad 2
        case(2, 8, 24, 12, 3, 1, 2, 1, 4, true), // groups 4, stride 2
        case(1, 3, 13, 5, 3, 1, 1, 1, 1, false), // batch 1 NCHW, C=3
        case(2, 16, 8, 32, 1, 0, 1, 1, 1, true), // 1×1
    ]
}

/// Wgrad checks and the batch-32 ResNet-50 table (f16 NHWC) vs PyTorch.
pub fn section(gpu: &Handle, cpu: &Handle) -> super::Section {
    let mut checks = Vec::new();
    for c in check_cases() {
        for dt in [DataType::Float, DataType::Half, DataType::BFloat16] {
            let r = match dt {
                DataType::Float => check_case::<f32>(gpu, cpu, c, dt),
                DataType::Half => check_case::<f16>(gpu, cpu, c, dt),
                _ => check_case::<bf16>(gpu, cpu, c, dt),
            }?;
            println!("wgrad check: {r}");
            checks.push(r);
        }
    }
    let layers = super::DGRAD_LAYERS;
    let arg: Vec<serde_json::Value> = layers
        .iter()
        .map(|l| json!([32, l[0], l[1], l[2], l[3], l[4], l[5]]))
        .collect();
    let torch = super::torch_json(
        TORCH_WGRAD,
        &serde_json::to_string(&arg).unwrap_or_default(),
    );
    let mut rows = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        let c = case(32, l[0], l[1], l[2], l[3], l[4], l[5], 1, 1, true);
        let (ms, workspace) = time(gpu, c, false)?;
        println!("benchmarking build for wgrad {l:?}:");
        let (bench_ms, _) = time(gpu, c, true)?;
        let flops = 2.0 * (c.n * c.k * c.p() * c.p() * c.c * c.r * c.r) as f64;
        let torch_ms = torch["ms"].get(i).and_then(|v| v.as_f64());
        let row = json!({"n": 32, "layer": l, "dtype": "f16", "layout": "NHWC", "ms": ms,
            "tflops": flops / (ms * 1e-3) / 1e12, "workspace_bytes": workspace,
            "bench_ms": bench_ms, "ratio_bench_vs_torch": torch_ms.map(|t| t / bench_ms)});
        let row = super::with_peer(row, &torch, i);
        println!("wgrad: {row}");
        rows.push(row);
    }
    Ok((checks, rows, torch))
}

/// The markdown table of [`section`]'s rows.
pub fn table(checks: usize, rows: &[serde_json::Value], torch: &serde_json::Value) -> String {
    let mut t = format!(
        "\nConv wgrad f16 NHWC, batch 32 ({checks} wgrad correctness cases passed, each executed twice with identical bits) vs PyTorch `aten.convolution_backward` (weight gradient only, cuDNN), torch {} cuDNN {}, eager and replayed from a CUDA graph:\n\n| layer (c, h, k, r, pad, stride) | hipdnn-rs (static rule) | TFLOP/s | workspace | {} | benchmarked plan | its speed vs eager |\n|---|---|---|---|---|---|---|---|---|---|\n",
        torch["torch"],
        torch["cudnn"],
        super::PEER_HEADER
    );
    for r in rows {
        t += &format!(
            "| {} | {:.3} ms | {:.0} | {} KiB | {} | {:.3} ms | {} |\n",
            r["layer"],
            r["ms"].as_f64().unwrap_or(0.0),
            r["tflops"].as_f64().unwrap_or(0.0),
            r["workspace_bytes"].as_u64().unwrap_or(0) / 1024,
            super::peer_cells(r),
            r["bench_ms"].as_f64().unwrap_or(0.0),
            super::ratio_cell(&r["ratio_bench_vs_torch"]),
        );
    }
    t
}

/// Save/reload cases (parent case numbers 200 + i): 0 = NHWC with a split (workspace), 1 =
/// NCHW odd sizes with a split, 2 = NHWC without a split.
pub(super) fn reload_case(i: usize) -> ConvCase {
    match i {
        0 => case(4, 16, 32, 32, 3, 1, 1, 1, 1, true),
        1 => case(5, 5, 40, 7, 3, 1, 1, 1, 1, false),
        _ => case(2, 32, 9, 48, 3, 1, 1, 1, 1, true),
    }
}
