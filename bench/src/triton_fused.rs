//! Fused-epilogue checks of `hipdnn-bench triton` (contracts v2 of the matmul and conv fprop
//! packs): matmul and conv graphs followed by scale / bias / residual / activation nodes run
//! as one Triton launch on the GPU and are compared with the CPU reference engine, which runs
//! every node separately; plus the save → reload round trip of a fused conv + bias + add +
//! ReLU graph (the ResNet block tail).

use super::*;

/// An epilogue of the checks: the pointwise nodes after the producer, in graph order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Epi {
    /// + bias, + residual, ReLU (ResNet).
    BiasResRelu,
    /// + bias, GELU (erf).
    BiasGelu,
    /// × scale, + bias, SiLU.
    ScaleBiasSilu,
    /// GELU (tanh approximation).
    GeluTanh,
    /// Sigmoid.
    Sigmoid,
    /// + bias, tanh, + residual.
    BiasTanhRes,
}

const ALL: [Epi; 6] = [
    Epi::BiasResRelu,
    Epi::BiasGelu,
    Epi::ScaleBiasSilu,
    Epi::GeluTanh,
    Epi::Sigmoid,
    Epi::BiasTanhRes,
];

impl Epi {
    fn bias(self) -> bool {
        matches!(
            self,
            Epi::BiasResRelu | Epi::BiasGelu | Epi::ScaleBiasSilu | Epi::BiasTanhRes
        )
    }
    fn residual(self) -> bool {
        matches!(self, Epi::BiasResRelu | Epi::BiasTanhRes)
    }
    fn scale(self) -> bool {
        self == Epi::ScaleBiasSilu
    }
}

/// Appends `epi` after `y`: bias UID 3, residual UID 5 (`res`'s dims and layout), scale UID 6
/// (dims all 1, rank of `res`); the output gets UID 4.
fn append(
    g: &mut Graph,
    mut y: hipdnn::TensorId,
    epi: Epi,
    dt: DataType,
    bias: TensorAttributes,
    res: TensorAttributes,
) {
    let rank = res.dims.len();
    let unary = |g: &mut Graph, y, m| g.pointwise_unary(y, PointwiseAttributes::with_mode(m));
    let add =
        |g: &mut Graph, y, t| g.pointwise(y, t, PointwiseAttributes::with_mode(PointwiseMode::Add));
    if epi.scale() {
        let s = g.tensor(
            TensorAttributes::new("scale")
                .uid(6)
                .data_type(dt)
                .dims(vec![1; rank])
                .strides(vec![1; rank]),
        );
        y = g.pointwise(y, s, PointwiseAttributes::with_mode(PointwiseMode::Mul));
    }
    if epi.bias() {
        let b = g.tensor(bias.uid(3).data_type(dt));
        y = add(g, y, b);
    }
    let r = epi.residual().then(|| g.tensor(res.uid(5).data_type(dt)));
    if let (Some(r), Epi::BiasResRelu) = (r, epi) {
        y = add(g, y, r);
    }
    y = match epi {
        Epi::BiasResRelu => unary(g, y, PointwiseMode::ReluFwd),
        Epi::BiasGelu => unary(g, y, PointwiseMode::GeluFwd),
        Epi::ScaleBiasSilu => unary(g, y, PointwiseMode::SwishFwd),
        Epi::GeluTanh => unary(g, y, PointwiseMode::GeluApproxTanhFwd),
        Epi::Sigmoid => unary(g, y, PointwiseMode::SigmoidFwd),
        Epi::BiasTanhRes => unary(g, y, PointwiseMode::TanhFwd),
    };
    if let (Some(r), Epi::BiasTanhRes) = (r, epi) {
        y = add(g, y, r);
    }
    g.set_output(y, true).set_uid(y, 4);
}

/// Conv `c` (its own `epilogue` flag ignored) followed by `epi`; y and the residual share
/// the case's layout.
pub(super) fn fused_conv_graph(c: ConvCase, dt: DataType, epi: Epi) -> Graph {
    let (mut g, y) = conv_core(c, dt);
    let p = c.p();
    let res = TensorAttributes::new("res").dims([c.n, c.k, p, p]);
    let res = if c.nhwc {
        res.packed_nhwc()
    } else {
        res.packed_nchw()
    };
    let bias = TensorAttributes::new("bias")
        .dims([1, c.k, 1, 1])
        .strides([c.k, 1, 1, 1]);
    append(&mut g, y, epi, dt, bias, res);
    g
}

/// Matmul `c` (its own `epilogue` flag ignored) followed by `epi`; packed residual.
pub(super) fn fused_mm_graph(c: Case, dt: DataType, epi: Epi) -> Graph {
    let (mut g, y) = mm_core(c, dt);
    let batch = c.ba.max(c.bb);
    let res = TensorAttributes::new("res")
        .dims([batch, c.m, c.n])
        .strides(packed(&[batch, c.m, c.n]));
    let bias = TensorAttributes::new("bias")
        .dims([1, 1, c.n])
        .strides([c.n, c.n, 1]);
    append(&mut g, y, epi, dt, bias, res);
    g
}

/// The epilogue's inputs: bias (UID 3, `cols` values), residual (UID 5, `n_out`), scale (UID 6).
fn epi_inputs<T: Num>(epi: Epi, cols: i64, n_out: usize) -> Vec<(i64, Vec<T>)> {
    let q = |v: Vec<f32>| v.into_iter().map(T::of).collect::<Vec<T>>();
    let mut v = Vec::new();
    if epi.bias() {
        v.push((3, q(vals(cols as usize, 23))));
    }
    if epi.residual() {
        v.push((5, q(vals(n_out, 25))));
    }
    if epi.scale() {
        v.push((6, q(vec![0.75])));
    }
    v
}

/// Runs `mk()` on the GPU (twice: bit-equal) and on the CPU reference and compares every element: |d| ≤
/// rel·bound + abs, bound = the dot length (inputs in [-1, 1]); f32 rel 1e-5, f16 4e-3, bf16
/// 1.6e-2, abs 1e-3 (the activations' own error is ≤ 3e-7).
fn compare<T: Num>(
    [gpu, cpu]: [&Handle; 2],
    mk: &dyn Fn() -> Graph,
    ins: &[(i64, Vec<T>)],
    n_out: usize,
    bound: f32,
    dt: DataType,
    label: &str,
) -> R<serde_json::Value> {
    let mut gg = mk();
    gg.build(gpu).map_err(e)?;
    let engine = gg.engine_name().map_err(e)?.to_string();
    if !engine.contains("ingestor") {
        return Err(format!("{label}: built on {engine}, not the GPU engine"));
    }
    let got = run(gpu, &gg, ins, n_out)?;
    let again = run(gpu, &gg, ins, n_out)?;
    if got
        .iter()
        .zip(&again)
        .any(|(a, b)| a.f().to_bits() != b.f().to_bits())
    {
        return Err(format!("{label}: two executes differ"));
    }
    let mut gc = mk();
    gc.build(cpu).map_err(e)?;
    let want = run(cpu, &gc, ins, n_out)?;
    let rel = match dt {
        DataType::Float => 1e-5,
        DataType::Half => 4e-3,
        _ => 1.6e-2,
    };
    let tol = rel * bound + 1e-3;
    let mut worst = 0f32;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let d = (g.f() - w.f()).abs();
        if d.is_nan() || d > tol {
            return Err(format!(
                "{label}: element {i}: gpu {} cpu {} (|d| {d} > {tol}) on {engine}",
                g.f(),
                w.f()
            ));
        }
        worst = worst.max(d / tol);
    }
    Ok(
        json!({"case": label, "dtype": format!("{dt:?}"), "engine": engine,
        "worst_fraction_of_tolerance": worst}),
    )
}

fn conv_case(i: usize) -> ConvCase {
    let cc = |n, c, h, k, r, pad, stride, nhwc| ConvCase {
        n,
        c,
        h,
        k,
        r,
        pad,
        stride,
        dil: 1,
        groups: 1,
        nhwc,
        epilogue: false,
    };
    match i {
        0 => cc(2, 32, 9, 48, 3, 1, 2, true),
        1 => cc(1, 20, 11, 24, 3, 1, 1, true),
        2 => cc(1, 3, 13, 5, 3, 2, 1, false),
        _ => cc(2, 32, 9, 48, 3, 1, 2, false),
    }
}

fn check_conv<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    c: ConvCase,
    dt: DataType,
    epi: Epi,
) -> R<serde_json::Value> {
    let mut ins = conv_inputs::<T>(c);
    ins.extend(epi_inputs::<T>(epi, c.k, c.y_len()));
    let label = format!("conv {epi:?} {c:?}");
    let bound = (c.c * c.r * c.r) as f32;
    compare(
        [gpu, cpu],
        &|| fused_conv_graph(c, dt, epi),
        &ins,
        c.y_len(),
        bound,
        dt,
        &label,
    )
}

fn check_mm<T: Num>(
    gpu: &Handle,
    cpu: &Handle,
    c: Case,
    dt: DataType,
    epi: Epi,
) -> R<serde_json::Value> {
    let c = Case {
        epilogue: false,
        ..c
    };
    let mut ins = inputs::<T>(c);
    let n_out = (c.ba.max(c.bb) * c.m * c.n) as usize;
    ins.extend(epi_inputs::<T>(epi, c.n, n_out));
    let label = format!("matmul {epi:?} {c:?}");
    compare(
        [gpu, cpu],
        &|| fused_mm_graph(c, dt, epi),
        &ins,
        n_out,
        c.k as f32,
        dt,
        &label,
    )
}

/// Every epilogue on two matmul shapes (spec and generic entry) and four conv shapes (NHWC
/// spec, NHWC generic, NCHW generic, NCHW nchwt), f32/f16/bf16 rotating over the epilogues.
pub(super) fn fused_section(gpu: &Handle, cpu: &Handle) -> R<Vec<serde_json::Value>> {
    let dts = [DataType::Half, DataType::Float, DataType::BFloat16];
    let mut out = Vec::new();
    for (i, epi) in ALL.into_iter().enumerate() {
        for (j, mc) in [CASES[6], CASES[4], CASES[1]].into_iter().enumerate() {
            let dt = dts[(i + j) % 3];
            let r = match dt {
                DataType::Float => check_mm::<f32>(gpu, cpu, mc, dt, epi),
                DataType::Half => check_mm::<f16>(gpu, cpu, mc, dt, epi),
                _ => check_mm::<bf16>(gpu, cpu, mc, dt, epi),
            }?;
            println!("fused check: {r}");
            out.push(r);
        }
        for j in 0..4 {
            let c = conv_case(j);
            let dt = dts[(i + j) % 3];
            let r = match dt {
                DataType::Float => check_conv::<f32>(gpu, cpu, c, dt, epi),
                DataType::Half => check_conv::<f16>(gpu, cpu, c, dt, epi),
                _ => check_conv::<bf16>(gpu, cpu, c, dt, epi),
            }?;
            println!("fused check: {r}");
            out.push(r);
        }
    }
    Ok(out)
}

/// The child side of the fused round trips: 0 = conv + bias + add + ReLU on the NHWC spec
/// entry, 1 = the same on the NCHW generic entry, 2 = on the NCHW nchwt entry.
pub(super) fn reload_fused(i: usize, dt: DataType) -> R<serde_json::Value> {
    let c = conv_case([0, 2, 3][i.min(2)]);
    let epi = Epi::BiasResRelu;
    let mk = || fused_conv_graph(c, dt, epi);
    let label = format!("conv+bias+add+ReLU {c:?}");
    fn ins<T: Num>(c: ConvCase, epi: Epi) -> Vec<(i64, Vec<T>)> {
        let mut v = conv_inputs::<T>(c);
        v.extend(epi_inputs::<T>(epi, c.k, c.y_len()));
        v
    }
    match dt {
        DataType::Float => reload_steps::<f32>(&mk, ins(c, epi), c.y_len(), &label),
        DataType::Half => reload_steps::<f16>(&mk, ins(c, epi), c.y_len(), &label),
        _ => reload_steps::<bf16>(&mk, ins(c, epi), c.y_len(), &label),
    }
}

/// TF32 behind the engine's knob (`KNOB_TF32`): f32 matmul correctness against the CPU
/// reference with the TF32 tolerance (|d| ≤ 2e-3·Σ|a·b| + 1e-3: inputs rounded to 10-bit
/// mantissas) and the 4096³ time next to the IEEE plan's, same run.
pub(super) fn tf32_section(gpu: &Handle, cpu: &Handle) -> R<serde_json::Value> {
    use hipdnn_engines::ingestor::engine::KNOB_TF32;
    let c = CASES[6];
    let ins = inputs::<f32>(c);
    let n_out = (c.m * c.n) as usize;
    let mut gg = graph(c, DataType::Float);
    gg.build_with_knobs(gpu, &[(KNOB_TF32, 1)]).map_err(e)?;
    let got = run(gpu, &gg, &ins, n_out)?;
    let mut gc = graph(c, DataType::Float);
    gc.build(cpu).map_err(e)?;
    let want = run(cpu, &gc, &ins, n_out)?;
    let mag = magnitude(c, &ins);
    let mut worst = 0f32;
    let mut max_rel_ieee_tol = 0f32;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let d = (g - w).abs();
        let tol = 2e-3 * mag[i] + 1e-3;
        if d.is_nan() || d > tol {
            return Err(format!(
                "tf32 {c:?}: element {i}: gpu {g} cpu {w} (|d| {d} > {tol})"
            ));
        }
        worst = worst.max(d / tol);
        max_rel_ieee_tol = max_rel_ieee_tol.max(d / (1e-4 * mag[i] + 1e-5));
    }
    let (tf32_ms, _, _) = time_mm_knobs::<f32>(gpu, 4096, DataType::Float, &[(KNOB_TF32, 1)])?;
    let (ieee_ms, _, _) = time_mm::<f32>(gpu, 4096, DataType::Float)?;
    let v = json!({"case": format!("{c:?}"), "worst_fraction_of_tf32_tolerance": worst,
        "worst_fraction_of_ieee_tolerance": max_rel_ieee_tol,
        "matmul_4096_tf32_ms": tf32_ms, "matmul_4096_ieee_ms": ieee_ms});
    println!("tf32: {v}");
    Ok(v)
}
