//! One small app written twice: with the `Graph` helpers and with raw nodes.
//!
//! The app classifies images: global average pooling of `(N, C, H, W)` feature maps to
//! `(N, C, 1, 1)`, then an MLP head on the pooled `(N, C)` features — layernorm, a linear
//! layer with GELU, a linear layer, softmax over the classes. Two graphs (pooling, head), run
//! on the CPU handle; the pooled buffer (`(N, C, 1, 1)` packed row-major) is the head's
//! `(N, C)` input as it lies.
//!
//! [`classify_with_helpers`] uses `global_avg_pool`, `layernorm_inference`, `linear` and
//! `softmax`; [`classify_with_raw_nodes`] writes the same nodes by hand (the epsilon scalar,
//! matmul + bias ADD + GELU, the five-node softmax). Both give the same probabilities, bit for
//! bit, and `main` checks that the helper version is at most 60% of the raw version's lines
//! (code lines between the `// app:` markers, blank lines and comments not counted).
//!
//! ```text
//! cargo run --example helpers_vs_raw
//! ```

use hipdnn::DataType::Float;
use hipdnn::ndarray::{Array2, Array4};
use hipdnn::{Activation, Buffer, Graph, Handle, TensorAttributes as T, TensorId, VariantPack};
use hipdnn::{LayernormAttributes, MatmulAttributes, NormFwdPhase, PointwiseAttributes};
use hipdnn::{PointwiseMode, ReductionAttributes, ReductionMode, TensorValue};

/// Images, hidden width and classes.
const N: usize = 2;
const C: usize = 8;
const HIDDEN: usize = 16;
const CLASSES: usize = 4;

/// The app's inputs: feature maps and the head's parameters.
struct Data {
    images: Array4<f32>,
    gamma: Array2<f32>,
    beta: Array2<f32>,
    w1: Array2<f32>,
    b1: Array2<f32>,
    w2: Array2<f32>,
    b2: Array2<f32>,
}

fn wave(i: usize, j: usize, k: f32) -> f32 {
    ((i * 7 + j * 3) as f32 * k).sin()
}

impl Data {
    fn new() -> Data {
        Data {
            images: Array4::from_shape_fn((N, C, 4, 4), |(n, c, h, w)| {
                wave(n * 31 + c, h * 4 + w, 0.37) + c as f32 * 0.1
            }),
            gamma: Array2::from_shape_fn((1, C), |(_, c)| 1.0 + wave(c, 1, 0.2) * 0.1),
            beta: Array2::from_shape_fn((1, C), |(_, c)| wave(c, 2, 0.3) * 0.1),
            w1: Array2::from_shape_fn((C, HIDDEN), |(i, j)| wave(i, j, 0.11) * 0.5),
            b1: Array2::from_shape_fn((1, HIDDEN), |(_, j)| wave(j, 5, 0.13) * 0.1),
            w2: Array2::from_shape_fn((HIDDEN, CLASSES), |(i, j)| wave(i, j, 0.17) * 0.5),
            b2: Array2::from_shape_fn((1, CLASSES), |(_, j)| wave(j, 9, 0.19) * 0.1),
        }
    }

    /// The head's parameters as tensors of `g`: gamma, beta, w1, b1, w2, b2.
    fn params(&self, g: &mut Graph) -> [TensorId; 6] {
        let p = [
            ("gamma", &self.gamma),
            ("beta", &self.beta),
            ("w1", &self.w1),
            ("b1", &self.b1),
            ("w2", &self.w2),
            ("b2", &self.b2),
        ];
        p.map(|(name, a)| g.tensor(T::for_array(name, a)))
    }

    /// Buffers of the head's parameters bound to `ids` (from [`Data::params`]).
    fn param_buffers(&self, ids: [TensorId; 6]) -> Vec<(TensorId, Buffer<f32>)> {
        let arrays = [
            &self.gamma,
            &self.beta,
            &self.w1,
            &self.b1,
            &self.w2,
            &self.b2,
        ];
        ids.into_iter()
            .zip(arrays)
            .map(|(t, a)| (t, Buffer::from_array(a)))
            .collect()
    }
}

/// Builds `g` with output `y` on `h`, binds `inputs` by tensor handle and returns y's
/// elements.
fn run(
    h: &Handle,
    g: &mut Graph,
    inputs: Vec<(TensorId, Buffer<f32>)>,
    y: TensorId,
) -> hipdnn::Result<Vec<f32>> {
    g.set_output(y, true);
    g.build(h)?;
    let mut out = Buffer::<f32>::zeros(g.tensor_attributes(y).volume() as usize);
    let mut pack = VariantPack::new();
    for (t, b) in &inputs {
        pack = pack.bind(*t, b);
    }
    let mut ws = Buffer::zeros(g.workspace_size()?);
    g.execute(h, pack.bind(y, &mut out), Some(&mut ws))?;
    out.to_vec()
}

// app: helpers {
fn classify_with_helpers(h: &Handle, d: &Data) -> hipdnn::Result<Vec<f32>> {
    let mut pool = Graph::new();
    let x = pool.tensor(T::for_array("images", &d.images));
    let pooled = pool.global_avg_pool(x)?;
    let feats = run(
        h,
        &mut pool,
        vec![(x, Buffer::from_array(&d.images))],
        pooled,
    )?;
    let mut head = Graph::new();
    let f = head.tensor(
        T::new("features")
            .data_type(Float)
            .dims([N as i64, C as i64]),
    );
    let [gamma, beta, w1, b1, w2, b2] = d.params(&mut head);
    let normed = head.layernorm_inference(f, gamma, beta, 1e-5);
    let hidden = head.linear(normed, w1, Some(b1), Activation::Gelu);
    let logits = head.linear(hidden, w2, Some(b2), Activation::None);
    let probs = head.softmax(logits, 1)?;
    let mut inputs = d.param_buffers([gamma, beta, w1, b1, w2, b2]);
    inputs.push((f, Buffer::from_slice(&feats)));
    run(h, &mut head, inputs, probs)
}
// app: helpers }

// app: raw {
fn classify_with_raw_nodes(h: &Handle, d: &Data) -> hipdnn::Result<Vec<f32>> {
    let mut pool = Graph::new();
    let x = pool.tensor(T::for_array("images", &d.images));
    let avg = ReductionAttributes::new().mode(ReductionMode::Avg);
    let pooled = pool.reduction(x, [N as i64, C as i64, 1, 1], avg);
    let feats = run(
        h,
        &mut pool,
        vec![(x, Buffer::from_array(&d.images))],
        pooled,
    )?;
    let mut head = Graph::new();
    let f = head.tensor(
        T::new("features")
            .data_type(Float)
            .dims([N as i64, C as i64]),
    );
    let [gamma, beta, w1, b1, w2, b2] = d.params(&mut head);
    let eps = head.tensor(T::scalar(TensorValue::Float32(1e-5)).name("eps"));
    let ln = LayernormAttributes::new()
        .epsilon(eps)
        .forward_phase(NormFwdPhase::Inference);
    let normed = head.layernorm(f, gamma, beta, ln).0;
    let pw = PointwiseAttributes::with_mode;
    let mm1 = head.matmul(normed, w1, MatmulAttributes::new());
    let biased1 = head.pointwise(mm1, b1, pw(PointwiseMode::Add));
    let hidden = head.pointwise_unary(biased1, pw(PointwiseMode::GeluFwd));
    let mm2 = head.matmul(hidden, w2, MatmulAttributes::new());
    let logits = head.pointwise(mm2, b2, pw(PointwiseMode::Add));
    let rows = [N as i64, 1];
    let max = head.reduction(
        logits,
        rows,
        ReductionAttributes::new().mode(ReductionMode::MaxOp),
    );
    let shifted = head.pointwise(logits, max, pw(PointwiseMode::Sub));
    let exp = head.pointwise_unary(shifted, pw(PointwiseMode::Exp));
    let sum = head.reduction(
        exp,
        rows,
        ReductionAttributes::new().mode(ReductionMode::Add),
    );
    let probs = head.pointwise(exp, sum, pw(PointwiseMode::Div));
    let mut inputs = d.param_buffers([gamma, beta, w1, b1, w2, b2]);
    inputs.push((f, Buffer::from_slice(&feats)));
    run(h, &mut head, inputs, probs)
}
// app: raw }

/// Code lines (not blank, not a comment) between `// app: <name> {` and `// app: <name> }`
/// of `source`.
pub fn app_lines(source: &str, name: &str) -> usize {
    let (open, close) = (format!("// app: {name} {{"), format!("// app: {name} }}"));
    source
        .lines()
        .skip_while(|l| l.trim() != open)
        .skip(1)
        .take_while(|l| l.trim() != close)
        .filter(|l| !l.trim().is_empty() && !l.trim().starts_with("//"))
        .count()
}

/// Runs both apps, checks they agree and that the helper app is at most 60% of the lines.
pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (h, d) = (Handle::cpu()?, Data::new());
    let with_helpers = classify_with_helpers(&h, &d)?;
    let raw = classify_with_raw_nodes(&h, &d)?;
    if with_helpers != raw {
        Err(format!("the two apps differ: {with_helpers:?} vs {raw:?}"))?;
    }
    for (n, row) in with_helpers.chunks(CLASSES).enumerate() {
        let sum: f32 = row.iter().sum();
        if (sum - 1.0).abs() > 1e-5 {
            Err(format!("image {n}: probabilities sum to {sum}"))?;
        }
        println!("image {n}: class probabilities {row:?}");
    }
    let source = include_str!("helpers_vs_raw.rs");
    let (a, b) = (app_lines(source, "helpers"), app_lines(source, "raw"));
    let ratio = a as f64 / b as f64;
    println!(
        "app with helpers: {a} lines; with raw nodes: {b} lines ({:.0}%)",
        ratio * 100.0
    );
    if ratio > 0.6 {
        Err(format!(
            "the helper app is {a}/{b} lines of the raw one, over 60%"
        ))?;
    }
    Ok(())
}
