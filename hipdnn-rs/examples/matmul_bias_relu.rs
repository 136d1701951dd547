//! A small app: `y = relu(a · b + bias)` with a 64×128 by 128×32 matmul on the CPU, then save,
//! reload, re-save (byte-identical) and print the graph as JSON.
//!
//! ```text
//! cargo run --example matmul_bias_relu -- [--out DIR]
//! ```

use hipdnn::ndarray::{Array2, Axis, Ix2};
use hipdnn::{Buffer, Graph, Handle, MatmulAttributes, PointwiseAttributes, PointwiseMode};
use hipdnn::{TensorAttributes as T, VariantPack};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = match std::env::args().nth(1).as_deref() {
        Some("--out") => std::env::args().nth(2).ok_or("--out needs a value")?.into(),
        None => std::env::temp_dir().join("matmul_bias_relu"),
        Some(other) => Err(format!(
            "unknown argument {other}\nusage: matmul_bias_relu [--out DIR]"
        ))?,
    };
    let a = Array2::from_shape_fn((64, 128), |(i, j)| (i as f32 - j as f32) / 64.0);
    let b = Array2::from_shape_fn((128, 32), |(j, l)| f32::from(j % 32 == l) / 128.0);
    let bias = Array2::from_shape_fn((1, 32), |(_, l)| -(l as f32) / 64.0);

    let mut g = Graph::new();
    g.set_name("matmul_bias_relu");
    let ta = g.tensor(T::for_array("a", &a).uid(1));
    let tb = g.tensor(T::for_array("b", &b).uid(2));
    let tbias = g.tensor(T::for_array("bias", &bias).uid(3));
    let c = g.matmul(ta, tb, MatmulAttributes::new());
    let biased = g.pointwise(c, tbias, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y = g.pointwise_unary(
        biased,
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd),
    );
    g.set_output(y, true).set_uid(y, 4).set_tensor_name(y, "y");
    let handle = Handle::cpu()?;
    g.build(&handle)?;

    let (a_buf, b_buf, bias_buf) = (
        Buffer::from_array(&a),
        Buffer::from_array(&b),
        Buffer::from_array(&bias),
    );
    let run = |g: &Graph| -> hipdnn::Result<Array2<f32>> {
        let mut out = Buffer::<f32>::zeros(64 * 32);
        let pack = VariantPack::new()
            .input(1, &a_buf)
            .input(2, &b_buf)
            .input(3, &bias_buf)
            .output(4, &mut out);
        g.execute(&handle, pack, Some(&mut Buffer::zeros(g.workspace_size()?)))?;
        out.to_array::<Ix2>(g.tensor_attributes(y))
    };
    let y0 = run(&g)?;
    let want = (a.dot(&b) + &bias).mapv(|v| v.max(0.0));
    if y0
        .iter()
        .zip(&want)
        .any(|(got, want)| (got - want).abs() > 1e-5)
    {
        Err("the output differs from ndarray's a.dot(b) + bias, ReLU")?;
    }

    std::fs::create_dir_all(&out_dir)?;
    let path = out_dir.join("matmul_bias_relu.hdgp");
    let saved = g.to_binary()?;
    std::fs::write(&path, &saved)?;
    let loaded = Graph::from_binary(&Handle::cpu()?, &std::fs::read(&path)?)?;
    if run(&loaded)? != y0 || loaded.to_binary()? != saved {
        Err("the reloaded plan computed other outputs or re-saved other bytes")?;
    }
    println!("{}", loaded.to_json()?);
    println!(
        "y[63][..4] = {:?}",
        &y0.index_axis(Axis(0), 63).to_vec()[..4]
    );
    println!(
        "{} bytes saved to {}; reloaded, re-saved byte-identically",
        saved.len(),
        path.display()
    );
    Ok(())
}
