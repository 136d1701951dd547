//! A small app: `y = relu(a · b + bias)` with a 64×128 by 128×32 matmul on the CPU, then save,
//! reload, re-save (byte-identical) and print the graph as JSON.
//!
//! ```text
//! cargo run --example matmul_bias_relu -- [--out DIR]
//! ```

use hipdnn::{
    Buffer, DataType, Graph, Handle, MatmulAttributes, PointwiseAttributes, PointwiseMode,
    TensorAttributes, VariantPack,
};

const A: i64 = 1;
const B: i64 = 2;
const BIAS: i64 = 3;
const Y: i64 = 4;
const M: usize = 64;
const K: usize = 128;
const N: usize = 32;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = match std::env::args().nth(1).as_deref() {
        Some("--out") => {
            std::path::PathBuf::from(std::env::args().nth(2).ok_or("--out needs a value")?)
        }
        None => std::env::temp_dir().join("matmul_bias_relu"),
        Some(other) => {
            return Err(
                format!("unknown argument {other}\nusage: matmul_bias_relu [--out DIR]").into(),
            );
        }
    };
    let (m, k, n) = (M as i64, K as i64, N as i64);
    let handle = Handle::cpu()?;
    let mut g = Graph::new();
    g.set_name("matmul_bias_relu")
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(A)
            .dims([1, m, k])
            .strides([m * k, k, 1]),
    );
    let b = g.tensor(
        TensorAttributes::new("b")
            .uid(B)
            .dims([1, k, n])
            .strides([k * n, n, 1]),
    );
    let bias = g.tensor(
        TensorAttributes::new("bias")
            .uid(BIAS)
            .dims([1, 1, n])
            .strides([n, n, 1]),
    );
    let c = g.matmul(a, b, MatmulAttributes::new());
    let biased = g.pointwise(c, bias, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y = g.pointwise_unary(
        biased,
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd),
    );
    g.set_output(y, true).set_uid(y, Y).set_tensor_name(y, "y");
    g.build(&handle)?;

    // a[i][j] = (i - j) / 64, b[j][l] = 1 / 128 when j % 32 == l else 0, bias[l] = -l / 64.
    let a_host: Vec<f32> = (0..M * K)
        .map(|x| ((x / K) as f32 - (x % K) as f32) / 64.0)
        .collect();
    let b_host: Vec<f32> = (0..K * N)
        .map(|x| {
            if (x / N) % N == x % N {
                1.0 / 128.0
            } else {
                0.0
            }
        })
        .collect();
    let bias_host: Vec<f32> = (0..N).map(|l| -(l as f32) / 64.0).collect();
    let (a_buf, b_buf, bias_buf) = (
        Buffer::from_slice(&a_host),
        Buffer::from_slice(&b_host),
        Buffer::from_slice(&bias_host),
    );
    let run = |g: &Graph| -> Result<Vec<f32>, hipdnn::Error> {
        let mut y = Buffer::<f32>::zeros(M * N);
        let mut ws = Buffer::<u8>::zeros(g.workspace_size()?);
        let pack = VariantPack::new()
            .with(A, &a_buf)
            .with(B, &b_buf)
            .with(BIAS, &bias_buf)
            .with(Y, &mut y);
        g.execute(&handle, pack, Some(&mut ws))?;
        y.to_vec()
    };
    let y0 = run(&g)?;
    // Check against a plain loop.
    for i in 0..M {
        for l in 0..N {
            let dot: f32 = (0..K).map(|j| a_host[i * K + j] * b_host[j * N + l]).sum();
            let want = (dot + bias_host[l]).max(0.0);
            if (y0[i * N + l] - want).abs() > 1e-5 {
                return Err(format!(
                    "y[{i}][{l}] = {} but a plain loop gives {want}",
                    y0[i * N + l]
                )
                .into());
            }
        }
    }

    std::fs::create_dir_all(&out_dir)?;
    let path = out_dir.join("matmul_bias_relu.hdgp");
    let saved = g.to_binary()?;
    std::fs::write(&path, &saved)?;
    let loaded = Graph::from_binary(&Handle::cpu()?, &std::fs::read(&path)?)?;
    let y1 = run(&loaded)?;
    let resaved = loaded.to_binary()?;
    if y1 != y0 || resaved != saved {
        return Err("the reloaded plan computed other outputs or re-saved other bytes".into());
    }
    println!("{}", loaded.to_json()?);
    println!(
        "y[63][0..4] = {:?}; {} bytes saved to {}; reloaded, re-saved byte-identically",
        &y0[63 * N..63 * N + 4],
        saved.len(),
        path.display()
    );
    Ok(())
}
