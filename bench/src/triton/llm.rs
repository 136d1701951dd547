//! LLM GEMMs (issue 33, "the shapes users run"): decode (M = 1, 8, 16) and prefill (M = 2048)
//! against (N, K) of a 7B-class model's projections — 4096 × 4096, 11008 × 4096 (up),
//! 4096 × 11008 (down), 14336 × 4096 — f16 and bf16, B row-major `(K, N)` and as PyTorch's
//! `Linear` weight `(N, K)` (column-major B), timed on the GPU engine with the static rule's
//! choice against PyTorch: `torch.matmul` eager and replayed from a CUDA graph (kernel-only),
//! CUDA events around 20 calls, median of 5 rounds on both sides. Each row names the entry the
//! static rule took (variant and tile, from the saved plan's launch values), so rows where it
//! chose badly show. Measurement only: no kernel was added for these shapes. `--only llm`.

use super::{Num, R, e, median_ms, ms_cell, torch_json};
use half::{bf16, f16};
use hipdnn::{Buffer, DataType, Graph, Handle, MatmulAttributes, TensorAttributes, VariantPack};
use serde_json::json;

/// Decode and prefill row counts.
const MS: [i64; 4] = [1, 8, 16, 2048];
/// (N, K) of the projections.
const NK: [(i64, i64); 4] = [(4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096)];

/// C (uid 3, `(M, N)`) = A (uid 1, `(M, K)`) · B (uid 2, `(K, N)`, row-major or, with
/// `linear`, the `(N, K)` weight seen through strides `(1, K)`).
fn graph(m: i64, n: i64, k: i64, dt: DataType, linear: bool) -> Graph {
    let mut g = Graph::new();
    g.set_name("llm_gemm")
        .set_io_data_type(dt)
        .set_intermediate_data_type(dt)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .data_type(dt)
            .dims([m, k])
            .strides([k, 1]),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(2)
            .data_type(dt)
            .dims([k, n])
            .strides(if linear { [1, k] } else { [n, 1] }),
    );
    let c = g.matmul(a, b, MatmulAttributes::new());
    g.set_output(c, true).set_uid(c, 3).set_data_type(c, dt);
    g
}

/// The entry a built plan launches: `variant tile wW` from its saved launch values.
fn entry(g: &Graph) -> String {
    let Ok(plan) = g.to_compiled_plan_binary() else {
        return "n/a".into();
    };
    let Ok(env) = hipdnn_backend::PlanEnvelope::parse(&plan) else {
        return "n/a".into();
    };
    let Ok(p) = hipdnn_engines::ingestor::payload::decode_payload(env.plugin_payload) else {
        return "n/a".into();
    };
    let registry = hipdnn_engines::gpu::gpu_registry();
    let Some(handler) = registry.resolve(&p.dispatch_symbol) else {
        return p.symbol;
    };
    match handler.saved_config(&p.dispatch_symbol, &p.launch_values) {
        Some(c) => {
            let variant = if c.spec {
                "spec"
            } else if c.b_col {
                "bcol"
            } else {
                "generic"
            };
            format!(
                "{variant} {}×{}×{} w{}",
                c.block[0], c.block[1], c.block[2], c.num_warps
            )
        }
        None => p.symbol,
    }
}

/// Our median ms for one row, and the entry it ran.
fn time<T: Num>(
    h: &Handle,
    m: i64,
    n: i64,
    k: i64,
    dt: DataType,
    linear: bool,
) -> R<(f64, String)> {
    let mut g = graph(m, n, k, dt, linear);
    g.build(h).map_err(e)?;
    let dev = h.gpu_device().ok_or("this handle executes on the CPU")?;
    let a = Buffer::from_slice_on(h, &vec![T::of(0.01); (m * k) as usize]).map_err(e)?;
    let b = Buffer::from_slice_on(h, &vec![T::of(0.02); (k * n) as usize]).map_err(e)?;
    let mut c = Buffer::<T>::alloc(h, (m * n) as usize).map_err(e)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().map_err(e)?.max(1)).map_err(e)?;
    let exec = || {
        let pack = VariantPack::new().with(1, &a).with(2, &b).with(3, &mut c);
        g.execute(h, pack, Some(&mut ws)).map_err(e)
    };
    let ms = median_ms(dev, 3, exec)?;
    Ok((ms, entry(&g)))
}

pub(super) const TORCH_LLM: &str = r#"
out = {"torch": torch.__version__, "ms": {}, "graph_ms": {}}
for (name, m, n, k, linear) in json.loads(sys.argv[1]):
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[name]
    a = torch.full((m, k), 0.01, device="cuda", dtype=dt)
    b = torch.full((n, k), 0.02, device="cuda", dtype=dt).t() if linear else torch.full((k, n), 0.02, device="cuda", dtype=dt)
    peer(out, f"{name}_{m}_{n}_{k}_{int(linear)}", lambda: torch.matmul(a, b))
print(json.dumps(out))
"#;

/// Every row: (rows as JSON, PyTorch's JSON).
pub fn section(gpu: &Handle) -> R<(Vec<serde_json::Value>, serde_json::Value)> {
    let mut cases = Vec::new();
    for name in ["f16", "bf16"] {
        for &(n, k) in &NK {
            for &m in &MS {
                for linear in [false, true] {
                    cases.push((name, m, n, k, linear));
                }
            }
        }
    }
    let torch = torch_json(
        TORCH_LLM,
        &serde_json::to_string(
            &cases
                .iter()
                .map(|c| json!([c.0, c.1, c.2, c.3, c.4]))
                .collect::<Vec<_>>(),
        )
        .unwrap_or_default(),
    );
    let mut rows = Vec::new();
    for (name, m, n, k, linear) in cases {
        let (ms, entry) = match name {
            "f16" => time::<f16>(gpu, m, n, k, DataType::Half, linear)?,
            _ => time::<bf16>(gpu, m, n, k, DataType::BFloat16, linear)?,
        };
        let key = format!("{name}_{m}_{n}_{k}_{}", i32::from(linear));
        let tflops = 2.0 * (m * n * k) as f64 / (ms * 1e-3) / 1e12;
        let row = json!({"dtype": name, "m": m, "n": n, "k": k, "linear": linear, "ms": ms,
            "tflops": tflops, "entry": entry});
        let row = super::with_peer(row, &torch, key.as_str());
        println!("llm: {row}");
        rows.push(row);
    }
    Ok((rows, torch))
}

/// The Markdown table of [`section`]'s rows.
pub fn table(rows: &[serde_json::Value], torch: &serde_json::Value) -> String {
    let mut t = format!(
        "LLM GEMMs (C = A·B, A `(M, K)` row-major, B `(K, N)` row-major or a `Linear` weight `(N, K)`), f16/bf16 with f32 accumulation, static rule, vs `torch.matmul` eager and replayed from a CUDA graph ({}):\n\n| dtype | M | N | K | B | entry | hipdnn-rs | TFLOP/s | {} |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        torch["torch"].as_str().unwrap_or("torch n/a"),
        super::PEER_HEADER
    );
    for r in rows {
        t += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {} |\n",
            r["dtype"].as_str().unwrap_or(""),
            r["m"],
            r["n"],
            r["k"],
            if r["linear"].as_bool() == Some(true) {
                "Linear (N, K)"
            } else {
                "(K, N)"
            },
            r["entry"].as_str().unwrap_or(""),
            ms_cell(&r["ms"]),
            r["tflops"].as_f64().unwrap_or(0.0),
            super::peer_cells(r),
        );
    }
    t
}
