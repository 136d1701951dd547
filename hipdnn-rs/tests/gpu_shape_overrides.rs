//! Execute-time shape overrides (issue 34, upstream RFC 0008 phase 1) on the GPU engine,
//! through the SDK: a plan built at the largest shape with the override-shape flag serves
//! smaller shapes with the outputs of plans built at those shapes; the same plan saved with its
//! graph (`to_binary`) and loaded on a fresh handle serves them with the same bits and
//! re-saves byte-identically; a plan-only file (`to_compiled_plan_binary`) refuses overrides
//! by name. Skips (printing why) without a GPU.

mod gpu_support;
use gpu_support::{gpu, lcg};
use hipdnn::{
    Buffer, ConvFpropAttributes, DataType, ErrorCode, Graph, Handle, MatmulAttributes,
    PointwiseAttributes, PointwiseMode, TensorAttributes as T, VariantPack,
};

fn f32_graph(name: &str) -> Graph {
    let mut g = Graph::new();
    g.set_name(name)
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    g
}

const N: i64 = 48;
const K: i64 = 40;

/// y (uid 100, `[1, m, N]`) = relu(x (uid 1, `[1, m, K]`) · w (uid 2, `[1, K, N]`) + bias
/// (uid 3, `[1, 1, N]`)): the matmul family with its bias + ReLU epilogue.
fn linear(m: i64) -> Graph {
    let mut g = f32_graph("linear");
    let x = g.tensor(T::new("x").uid(1).dims([1, m, K]));
    let w = g.tensor(T::new("w").uid(2).dims([1, K, N]));
    let b = g.tensor(T::new("bias").uid(3).dims([1, 1, N]));
    let mm = g.matmul(x, w, MatmulAttributes::new());
    let biased = g.pointwise(mm, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y = g.pointwise_unary(
        biased,
        PointwiseAttributes::with_mode(PointwiseMode::ReluFwd),
    );
    g.set_output(y, true).set_uid(y, 100);
    g
}

/// y (uid 100) = conv3x3(x (uid 1, `[n, 8, 9, 9]`), w (uid 2, `[16, 8, 3, 3]`)), padding 1,
/// f32 NCHW: the conv fprop family at batch `n`.
fn conv(n: i64) -> Graph {
    let mut g = f32_graph("conv");
    let x = g.tensor(T::new("x").uid(1).dims([n, 8, 9, 9]).packed_nchw());
    let w = g.tensor(T::new("w").uid(2).dims([16, 8, 3, 3]).packed_nchw());
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    g.set_output(y, true).set_uid(y, 100);
    g
}

/// Runs `g` on deterministic device inputs shaped as `shape`'s tensors, with the overrides
/// that take `flagged` to `shape` (none when `flagged` is `None`); the output's bits.
fn run_with(
    h: &Handle,
    g: &Graph,
    shape: &Graph,
    flagged: Option<&Graph>,
) -> hipdnn::Result<Vec<u32>> {
    let mut inputs = Vec::new();
    let mut out_len = 0;
    for (_, t) in shape.tensors().filter(|(_, t)| !t.is_virtual) {
        let uid = t.uid.expect("uid");
        let len = t.dims.iter().product::<i64>() as usize;
        if uid == 100 {
            out_len = len;
        } else {
            inputs.push((uid, Buffer::from_slice_on(h, &lcg(len, uid as u64))?));
        }
    }
    let mut y = Buffer::filled(out_len, f32::NAN).to_handle(h)?;
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size()?.max(1))?;
    let mut pack = VariantPack::new();
    for (uid, b) in &inputs {
        pack = pack.input(*uid, b);
    }
    pack = pack.output(100, &mut y);
    if let Some(f) = flagged {
        for o in f.shape_overrides_for(shape)? {
            pack = pack.override_shape(o.uid, o.dims, o.strides);
        }
    }
    g.execute(h, pack, Some(&mut ws))?;
    Ok(y.to_vec()?.iter().map(|v| v.to_bits()).collect())
}

/// [`run_with`] with `g`'s own overrides when it has the flag.
fn run(h: &Handle, g: &Graph, shape: &Graph) -> hipdnn::Result<Vec<u32>> {
    run_with(h, g, shape, g.is_override_shape_enabled().then_some(g))
}

/// The largest |a − b| / (1 + |b|) over two outputs' bits.
fn worst(a: &[u32], b: &[u32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let (x, y) = (f32::from_bits(x), f32::from_bits(y));
            (x - y).abs() / (1.0 + y.abs())
        })
        .fold(0f32, f32::max)
}

/// `make(max)` built with the flag on the GPU serves each of `sizes` within `tol` of a GPU
/// build at that size and of the CPU reference engine; loaded from `to_binary` on a fresh
/// handle it gives the same bits and re-saves byte-identically; loaded from
/// `to_compiled_plan_binary` it refuses overrides by name.
fn serves(h: &Handle, make: fn(i64) -> Graph, max: i64, sizes: &[i64], tol: f32) {
    let mut g = make(max);
    g.set_override_shape_enabled(true);
    g.build(h).expect("flagged build");
    assert_eq!(g.engine_name().unwrap(), "hipkernel.ingestor.gpu");
    let saved = g.to_binary().expect("to_binary");
    let fresh = Handle::gpu().expect("a second GPU handle");
    let loaded = Graph::from_binary(&fresh, &saved).expect("from_binary");
    assert!(loaded.is_override_shape_enabled());
    let cpu = Handle::cpu().unwrap();
    for &size in sizes {
        let mut own = make(size);
        own.build(h).expect("per-size build");
        let got = run(h, &g, &own).expect("execute with overrides");
        assert!(
            got.iter().all(|&b| f32::from_bits(b).is_finite()),
            "{size}: every output written"
        );
        let want = run(h, &own, &own).expect("per-size execute");
        let mut on_cpu = make(size);
        on_cpu.build(&cpu).expect("CPU build");
        let reference = {
            let mut inputs = Vec::new();
            let mut out_len = 0;
            for (_, t) in on_cpu.tensors().filter(|(_, t)| !t.is_virtual) {
                let uid = t.uid.unwrap();
                let len = t.dims.iter().product::<i64>() as usize;
                if uid == 100 {
                    out_len = len;
                } else {
                    inputs.push((uid, Buffer::from_slice(&lcg(len, uid as u64))));
                }
            }
            let mut y = Buffer::filled(out_len, f32::NAN);
            let mut pack = VariantPack::new();
            for (uid, b) in &inputs {
                pack = pack.input(*uid, b);
            }
            on_cpu
                .execute(&cpu, pack.output(100, &mut y), None)
                .unwrap();
            y.to_vec()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        };
        let (d_own, d_ref) = (worst(&got, &want), worst(&got, &reference));
        eprintln!(
            "{} at {size} (built at {max}): bit-identical to a build at {size}: {}; max rel |d| vs that build {d_own:e}, vs the CPU reference {d_ref:e}",
            g.name(),
            got == want
        );
        assert!(d_own <= tol && d_ref <= tol, "{size}: {d_own} / {d_ref}");
        let again = run(&fresh, &loaded, &own).expect("loaded plan with overrides");
        assert_eq!(
            again, got,
            "{size}: the plan loaded with its graph gives other bits"
        );
    }
    assert_eq!(loaded.to_binary().unwrap(), saved, "re-save");
    let plan_only = g.to_compiled_plan_binary().unwrap();
    let bare = Graph::from_compiled_plan_binary(&fresh, &plan_only).expect("plan-only load");
    let e = run_with(&fresh, &bare, &make(sizes[0]), Some(&g))
        .expect_err("a plan-only GPU plan refuses overrides");
    assert_eq!(e.code, ErrorCode::InvalidValue, "{e}");
    assert!(
        e.message
            .starts_with("shape override: this GPU plan was loaded without its graph"),
        "{e}"
    );
}

#[test]
fn gpu_a_flagged_linear_plan_serves_smaller_row_counts_and_reloads_with_its_graph() {
    let Some(h) = gpu() else { return };
    serves(&h, linear, 64, &[1, 7, 33, 64, 7], 1e-5);
}

#[test]
fn gpu_a_flagged_conv_plan_serves_smaller_batches_and_reloads_with_its_graph() {
    let Some(h) = gpu() else { return };
    serves(&h, conv, 4, &[1, 3, 4], 1e-5);
}
