//! The shapes users run beyond the tables the static rule was tuned on (issue 33, deliverable 2;
//! the LLM GEMMs are [`super::llm`]): `hipdnn-bench triton --only shapes`.
//!
//! - Conv fprop + bias + ReLU, f16 NHWC, batch 1 and 32: ResNet-50's 7×7/2 stem (C = 3), its
//!   3×3 and 1×1 stride-2 layers, ResNeXt-50 (32×4d)'s grouped 3×3 layers (32 groups) and
//!   MobileNet-v2's depthwise 3×3 layers (groups = C), vs `relu(conv2d(…, groups=…))` (cuDNN,
//!   `cudnn.benchmark`, channels_last).
//! - SDPA forward, f16: grouped-query heads (32 query over 8 key/value heads), decode (one query
//!   row over key/value caches of 4 k–32 k), head dims 80 and 96, sequence lengths that are not
//!   tile multiples; vs `F.scaled_dot_product_attention` with PyTorch's own backend choice
//!   (`enable_gqa=True` where the heads differ).
//! - Softmax and log-softmax over vocabulary-size rows (32 000 and 128 256), layernorm and
//!   rmsnorm at model widths 768–8192, f16.
//!
//! Every shape is first built on the GPU handle by the static rule. A shape the GPU engine does
//! not take (the build refuses, or another engine builds it) is a row with `refused` and no
//! time: the bench never times the CPU engine as a GPU row. A shape it takes is checked against
//! the CPU reference at a reduced size first (conv: batch 1; attention: batch 1, at most 67
//! query and 300 key rows; rows: 3 rows of the full width), with the tolerances of the
//! sections it shares code with; a miss fails the run. Then it is timed as every section is
//! (events around 20 executes, median of 5 rounds) beside PyTorch eager and replayed from a
//! CUDA graph ([`super::with_peer`]).

use super::sdpa::Shape;
use super::{ConvCase, e, torch_json, with_peer};
use half::f16;
use hipdnn::{DataType, Graph, Handle};
use serde_json::json;

/// Conv layers `(c, h, k, r, pad, stride, groups)`, square images, timed at batch 1 and 32.
pub(super) const CONVS: [[i64; 7]; 16] = [
    // ResNet-50: the stem, the 3×3 stride-2 layers, the 1×1 stride-2 downsamples.
    [3, 224, 64, 7, 3, 2, 1],
    [128, 56, 128, 3, 1, 2, 1],
    [256, 28, 256, 3, 1, 2, 1],
    [512, 14, 512, 3, 1, 2, 1],
    [256, 56, 512, 1, 0, 2, 1],
    [512, 28, 1024, 1, 0, 2, 1],
    [1024, 14, 2048, 1, 0, 2, 1],
    // ResNeXt-50 32×4d: grouped 3×3.
    [128, 56, 128, 3, 1, 1, 32],
    [256, 28, 256, 3, 1, 1, 32],
    [512, 14, 512, 3, 1, 1, 32],
    [1024, 7, 1024, 3, 1, 1, 32],
    // MobileNet-v2: depthwise 3×3.
    [96, 112, 96, 3, 1, 2, 96],
    [144, 56, 144, 3, 1, 1, 144],
    [192, 28, 192, 3, 1, 1, 192],
    [384, 14, 384, 3, 1, 1, 384],
    [960, 7, 960, 3, 1, 1, 960],
];

/// Attention shapes `(b, hq, hkv, sq, skv, d, causal)`.
pub(super) const ATTENTION: [(i64, i64, i64, i64, i64, i64, bool); 11] = [
    // Grouped-query attention, prefill.
    (2, 32, 8, 2048, 2048, 128, false),
    (2, 32, 8, 2048, 2048, 128, true),
    // Decode: one query row over a key/value cache.
    (8, 32, 8, 1, 4096, 128, false),
    (8, 32, 8, 1, 16384, 128, false),
    (8, 32, 8, 1, 32768, 128, false),
    (8, 32, 32, 1, 4096, 128, false),
    // Head dims that are not powers of two.
    (4, 16, 16, 2048, 2048, 80, false),
    (4, 16, 16, 2048, 2048, 96, false),
    (4, 16, 16, 2048, 2048, 96, true),
    // Sequence lengths that are not tile multiples.
    (8, 16, 16, 1000, 1000, 64, false),
    (4, 16, 16, 3001, 3001, 128, true),
];

/// Row ops over the last axis `(op, rows, cols)` (ops of [`super::reduce`]).
pub(super) const ROWS: [(&str, i64, i64); 9] = [
    ("softmax", 256, 32000),
    ("softmax", 256, 128256),
    ("log_softmax", 256, 128256),
    ("layernorm", 8192, 768),
    ("layernorm", 8192, 1024),
    ("layernorm", 8192, 4096),
    ("layernorm", 8192, 8192),
    ("rmsnorm", 8192, 4096),
    ("rmsnorm", 8192, 8192),
];

/// The conv case of a layer at batch `n` (fused bias + ReLU, NHWC).
fn conv_case(n: i64, l: [i64; 7]) -> ConvCase {
    let [c, h, k, r, pad, stride, groups] = l;
    ConvCase {
        n,
        c,
        h,
        k,
        r,
        pad,
        stride,
        dil: 1,
        groups,
        nhwc: true,
        epilogue: true,
    }
}

/// The attention shape of a row.
fn attention(a: (i64, i64, i64, i64, i64, i64, bool)) -> Shape {
    let (b, hq, hkv, sq, skv, d, causal) = a;
    Shape {
        b,
        hq,
        hkv,
        sq,
        skv,
        d,
        causal,
    }
}

/// `Ok(engine)` when the GPU engine builds `g` on `gpu` by the static rule; else `Err` with the
/// build's refusal or the name of the engine that took it.
fn served(gpu: &Handle, mut g: Graph) -> Result<String, String> {
    g.build(gpu).map_err(|x| format!("build refused: {x}"))?;
    let engine = g.engine_name().map_err(e)?.to_string();
    if engine == hipdnn_engines::gpu::GPU_ENGINE_NAME {
        Ok(engine)
    } else {
        Err(format!("built by {engine}, not the GPU engine"))
    }
}

pub(super) const TORCH: &str = r#"
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
spec = json.loads(sys.argv[1])
out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "ms": {}, "graph_ms": {}}
h16 = torch.float16
for i, (n, c, h, k, r, pad, stride, groups) in enumerate(spec["conv"]):
    cl = torch.channels_last
    x = torch.randn(n, c, h, h, device="cuda", dtype=h16).to(memory_format=cl)
    w = torch.randn(k, c // groups, r, r, device="cuda", dtype=h16).to(memory_format=cl)
    b = torch.randn(k, device="cuda", dtype=h16)
    peer(out, f"conv_{i}", lambda: F.relu(F.conv2d(x, w, b, stride=stride, padding=pad, groups=groups)))
    del x, w, b
for i, (b, hq, hkv, sq, skv, d, causal) in enumerate(spec["attention"]):
    q = torch.rand((b, hq, sq, d), device="cuda", dtype=h16) * 2 - 1
    k, v = (torch.rand((b, hkv, skv, d), device="cuda", dtype=h16) * 2 - 1 for _ in range(2))
    gqa = {"enable_gqa": True} if hkv != hq else {}
    peer(out, f"attention_{i}", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=d ** -0.5, **gqa))
    del q, k, v
for i, (op, rows, cols) in enumerate(spec["rows"]):
    x = torch.rand((rows, cols), device="cuda", dtype=h16) * 4 - 2
    w = torch.rand((cols,), device="cuda", dtype=h16) + 0.5
    b = torch.rand((cols,), device="cuda", dtype=h16) - 0.5
    f = {"softmax": lambda: torch.softmax(x, -1), "log_softmax": lambda: torch.log_softmax(x, -1),
         "layernorm": lambda: F.layer_norm(x, (cols,), w, b, 1e-5),
         "rmsnorm": lambda: F.rms_norm(x, (cols,), w, 1e-5)}[op]
    peer(out, f"rows_{i}", f)
    del x, w, b
print(json.dumps(out))
"#;

/// The section: for every shape, the GPU engine's build, the check at a reduced size, the
/// timed row; returns (checks, rows, torch).
pub(super) fn section(gpu: &Handle, cpu: &Handle) -> super::Section {
    let arg = json!({"conv": CONVS.iter().flat_map(|l| [1i64, 32].map(|n| {
            let [c, h, k, r, pad, stride, groups] = *l;
            json!([n, c, h, k, r, pad, stride, groups])
        })).collect::<Vec<_>>(),
        "attention": ATTENTION.iter().map(|a| json!([a.0, a.1, a.2, a.3, a.4, a.5, a.6])).collect::<Vec<_>>(),
        "rows": ROWS.iter().map(|r| json!([r.0, r.1, r.2])).collect::<Vec<_>>()});
    let torch = torch_json(TORCH, &arg.to_string());
    let dt = DataType::Half;
    let (mut checks, mut rows) = (Vec::new(), Vec::new());
    let mut push = |row: serde_json::Value, key: &str| {
        let row = with_peer(row, &torch, key);
        println!("shapes: {row}");
        rows.push(row);
    };
    let mut i = 0;
    for l in CONVS {
        for n in [1, 32] {
            let c = conv_case(n, l);
            let mut row = json!({"kind": "conv", "shape": format!("n{n} c{} {}² k{} {}×{} pad {} stride {} groups {}", l[0], l[1], l[2], l[3], l[3], l[4], l[5], l[6]), "dtype": "f16"});
            match served(gpu, super::conv_graph(c, dt)) {
                Ok(_) => {
                    if n == 1 {
                        let r = super::conv_check_case::<f16>(gpu, cpu, c, dt)?;
                        println!("shapes check: {r}");
                        checks.push(r);
                    }
                    let (ms, plan) = super::time_conv::<f16>(gpu, c, dt, false)?;
                    row["ms"] = json!(ms);
                    row["plan"] = json!(plan);
                }
                Err(why) => row["refused"] = json!(why),
            }
            push(row, &format!("conv_{i}"));
            i += 1;
        }
    }
    for (i, a) in ATTENTION.into_iter().enumerate() {
        let sh = attention(a);
        let mut row = json!({"kind": "sdpa", "shape": format!("b{} hq{} hkv{} sq{} skv{} d{}{}", sh.b, sh.hq, sh.hkv, sh.sq, sh.skv, sh.d, if sh.causal { " causal" } else { "" }), "dtype": "f16"});
        match served(gpu, super::sdpa::graph(sh, dt)) {
            Ok(_) => {
                let small = Shape {
                    b: 1,
                    sq: sh.sq.min(67),
                    skv: sh.skv.min(300),
                    ..sh
                };
                let r = super::sdpa::check_shape::<f16>(gpu, cpu, small, dt)?;
                println!("shapes check: {r}");
                checks.push(r);
                let (ms, plan) = super::sdpa::time_shape::<f16>(gpu, sh, dt, false)?;
                row["ms"] = json!(ms);
                row["plan"] = json!(plan);
            }
            Err(why) => row["refused"] = json!(why),
        }
        push(row, &format!("attention_{i}"));
    }
    for (i, (op, r, c)) in ROWS.into_iter().enumerate() {
        let mut row = json!({"kind": op, "shape": format!("{r}×{c}"), "dtype": "f16"});
        match served(gpu, super::reduce::graph(op, r, c, dt)) {
            Ok(_) => {
                let chk = super::reduce::check::<f16>(gpu, cpu, op, 3, c, dt)?;
                println!("shapes check: {chk}");
                checks.push(chk);
                let (ms, plan) = super::reduce::time::<f16>(gpu, op, r, c, dt, false)?;
                row["ms"] = json!(ms);
                row["plan"] = json!(plan);
            }
            Err(why) => row["refused"] = json!(why),
        }
        push(row, &format!("rows_{i}"));
    }
    Ok((checks, rows, torch))
}

/// The markdown table of [`section`]'s rows.
pub(super) fn table(
    checks: usize,
    rows: &[serde_json::Value],
    torch: &serde_json::Value,
) -> String {
    let mut t = format!(
        "\nShapes users run (issue 33; {checks} checks vs the CPU reference at a reduced size passed), static rule, f16, vs PyTorch {} (cuDNN {}), eager and replayed from a CUDA graph; CUDA events around 20 executes, median of 5 rounds. A shape the GPU engine does not take is marked, not timed:\n\n| kind | shape | hipdnn-rs | {} | note |\n|---|---|---|---|---|---|---|---|\n",
        torch["torch"],
        torch["cudnn"],
        super::PEER_HEADER
    );
    for r in rows {
        t += &format!(
            "| {} | {} | {} | {} | {} |\n",
            r["kind"].as_str().unwrap_or_default(),
            r["shape"].as_str().unwrap_or_default(),
            super::ms_cell(&r["ms"]),
            super::peer_cells(r),
            r["refused"].as_str().unwrap_or_default(),
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape's graph builds on the CPU engine with the shapes the rows name (the conv
    /// output extent, the attention's heads), so a device run never starts with a graph the
    /// SDK refuses; a shape no engine takes would be a silent `refused` row there.
    #[test]
    fn every_shape_builds_on_the_cpu_engine() {
        let cpu = Handle::cpu().unwrap();
        for l in CONVS {
            let c = conv_case(1, l);
            let mut g = super::super::conv_graph(c, DataType::Half);
            g.build(&cpu).unwrap_or_else(|x| panic!("conv {l:?}: {x}"));
            assert_eq!(c.p(), (l[1] + 2 * l[4] - l[3]) / l[5] + 1);
        }
        for a in ATTENTION {
            let sh = attention(a);
            assert_eq!(sh.hq % sh.hkv, 0, "{sh:?}");
            let mut g = super::super::sdpa::graph(sh, DataType::Half);
            g.build(&cpu).unwrap_or_else(|x| panic!("sdpa {sh:?}: {x}"));
        }
        for (op, r, c) in ROWS {
            let mut g = super::super::reduce::graph(op, r, c, DataType::Half);
            g.build(&cpu)
                .unwrap_or_else(|x| panic!("{op} {r}x{c}: {x}"));
        }
    }
}
