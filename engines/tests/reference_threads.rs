//! The CPU reference engine's GEMM-based kernels (issue 14): outputs are bit-identical for 1
//! and N rayon threads, the tiling depends on the shape only, uneven tiles are right, and a
//! fused bias + activation epilogue gives exactly the bits of the separate pointwise nodes.

use hipdnn_backend::ops::gather::GATHER_OP_ID;
use hipdnn_engines::reference::ops::conv::{
    ConvGeometry, conv_dgrad, conv_fprop, conv_fprop_with, conv_wgrad,
};
use hipdnn_engines::reference::ops::gemm::{self, Bias, Epilogue, Job, tile_shape};
use hipdnn_engines::reference::ops::matmul::{matmul, matmul_views_res, matmul_with};
use hipdnn_engines::reference::ops::norm::{inv_std, moments, normalize};
use hipdnn_engines::reference::ops::pointwise::{PointwiseParams, pointwise};
use hipdnn_engines::reference::ops::reduce::{lane_sum, lane_sum_slice};
use hipdnn_engines::reference::ops::sdpa::{Band, sdpa};
use hipdnn_engines::reference::ops::small_gemm;
use hipdnn_engines::reference::testing::{
    GraphBuilder, TensorSpec, assert_close, plan_runs_inline, pw_args, random_values, run_graph,
    tolerance,
};
use hipdnn_schema::graph::{
    DataType, LayernormAttributes, LayernormAttributesArgs, NodeAttributes, PointwiseMode,
};
use hipdnn_schema::tensor_value::TensorValue;
use ndarray::{Array2, ArrayD, IxDyn};

fn rand(dims: &[usize], seed: u64) -> ArrayD<f32> {
    let n = dims.iter().product();
    ArrayD::from_shape_vec(IxDyn(dims), random_values(n, seed, -1.0, 1.0)).unwrap()
}

fn with_threads<T: Send>(n: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
        .install(f)
}

fn bits(a: &ArrayD<f32>) -> Vec<u32> {
    a.iter().map(|v| v.to_bits()).collect()
}

fn pw(mode: PointwiseMode) -> PointwiseParams {
    PointwiseParams::defaults(mode)
}

/// Convolutions that take every path: im2col with stride, dilation, asymmetric padding and
/// groups; the 1×1 in-place path; 1-D and 3-D; the flipped-filter mode.
/// x dims, w dims, y dims, geometry.
type ConvCase = (Vec<usize>, Vec<usize>, Vec<usize>, ConvGeometry);

fn conv_cases() -> Vec<ConvCase> {
    let g2 = |pre: [usize; 2], post: [usize; 2], stride: [usize; 2], dil: [usize; 2], flip| {
        ConvGeometry {
            pre: pre.to_vec(),
            post: post.to_vec(),
            stride: stride.to_vec(),
            dilation: dil.to_vec(),
            flip,
        }
    };
    vec![
        // x, w, y, geometry
        (
            vec![2, 8, 19, 17],
            vec![16, 4, 3, 3],
            vec![2, 16, 10, 8],
            g2([1, 1], [1, 0], [2, 2], [1, 1], false),
        ),
        (
            vec![1, 6, 23, 21],
            vec![9, 6, 3, 2],
            vec![1, 9, 21, 22],
            g2([2, 1], [0, 2], [1, 1], [2, 3], true),
        ),
        (
            vec![3, 32, 20, 20],
            vec![48, 32, 1, 1],
            vec![3, 48, 20, 20],
            g2([0, 0], [0, 0], [1, 1], [1, 1], false),
        ),
        // Winograd with whole images per block: 16 tiles an image, two blocks (16 + 4).
        (
            vec![20, 16, 8, 8],
            vec![17, 16, 3, 3],
            vec![20, 17, 8, 8],
            g2([1, 1], [1, 1], [1, 1], [1, 1], false),
        ),
        // 3×3, stride 1, ≥ 16 channels: Winograd F(2×2, 3×3), two blocks per image, odd
        // output sizes, asymmetric padding, CONVOLUTION mode.
        (
            vec![2, 24, 37, 35],
            vec![20, 24, 3, 3],
            vec![2, 20, 37, 36],
            g2([1, 2], [1, 1], [1, 1], [1, 1], true),
        ),
        (
            vec![2, 5, 40],
            vec![7, 5, 4],
            vec![2, 7, 19],
            ConvGeometry {
                pre: vec![1],
                post: vec![1],
                stride: vec![2],
                dilation: vec![1],
                flip: false,
            },
        ),
        (
            vec![1, 4, 6, 7, 5],
            vec![6, 2, 2, 3, 2],
            vec![1, 6, 6, 6, 5],
            ConvGeometry {
                pre: vec![1, 1, 0],
                post: vec![0, 1, 1],
                stride: vec![1, 1, 1],
                dilation: vec![1, 1, 1],
                flip: false,
            },
        ),
        // wgrad split into partial products: 64 · 9 = 576 im2col rows give runs of 227
        // positions, 4 runs an image, 36 runs dealt into 32 parts (four parts hold two);
        // two groups.
        (
            vec![9, 64, 30, 30],
            vec![16, 32, 3, 3],
            vec![9, 16, 30, 30],
            g2([1, 1], [1, 1], [1, 1], [1, 1], false),
        ),
        // Blocked planar dgrad: 144 im2col rows × 200 columns, blocks of 4 output rows, 25
        // blocks an image (both parities, two images).
        (
            vec![2, 16, 100, 200],
            vec![8, 16, 3, 3],
            vec![2, 8, 100, 200],
            g2([1, 1], [1, 1], [1, 1], [1, 1], false),
        ),
        // A dw of 40 · 48 · 9 = 17280 > 16 Ki elements: the per-image wgrad GEMMs.
        (
            vec![3, 48, 6, 6],
            vec![40, 48, 3, 3],
            vec![3, 40, 3, 3],
            g2([1, 1], [1, 1], [2, 2], [1, 1], false),
        ),
    ]
}

#[test]
fn matmul_is_bit_identical_for_1_2_and_5_threads() {
    // Batched with broadcasting, a transposed (strided) operand, and shapes that cut into
    // many uneven tiles.
    let a = rand(&[3, 1, 300, 70], 1);
    let b = rand(&[4, 70, 530], 2);
    let bt = rand(&[530, 70], 3).reversed_axes();
    let run = || {
        (
            matmul(&a, &b, &[3, 4, 300, 530]).unwrap(),
            matmul(&a, &bt, &[3, 1, 300, 530]).unwrap(),
        )
    };
    let one = with_threads(1, run);
    for n in [2, 5] {
        let many = with_threads(n, run);
        assert_eq!(bits(&one.0), bits(&many.0), "batched, {n} threads");
        assert_eq!(bits(&one.1), bits(&many.1), "strided b, {n} threads");
    }
}

#[test]
fn sums_follow_the_documented_16_lane_order_for_slices_and_strided_groups() {
    let v = random_values(1000, 7, -1e4, 1e4);
    for len in [0usize, 1, 15, 16, 17, 31, 33, 100, 999, 1000] {
        let s = &v[..len];
        // The rule, written out: element i into partial sum i mod 16, then pairwise.
        let mut acc = [0f32; 16];
        for (i, x) in s.iter().enumerate() {
            acc[i % 16] += x * x;
        }
        for w in [8, 4, 2, 1] {
            for i in 0..w {
                acc[i] += acc[i + w];
            }
        }
        let want = acc[0].to_bits();
        assert_eq!(
            lane_sum_slice(s, |x| x * x).to_bits(),
            want,
            "slice, {len} elements"
        );
        assert_eq!(
            lane_sum(s.iter().copied(), |x| x * x).to_bits(),
            want,
            "iterator, {len}"
        );
    }
    // The order is not a running sum: on these values the two differ.
    let running = v.iter().fold(0f32, |a, x| a + x * x);
    assert_ne!(lane_sum_slice(&v, |x| x * x).to_bits(), running.to_bits());
}

#[test]
fn sdpa_and_layernorm_are_bit_identical_for_1_2_and_5_threads() {
    // 150 query rows: three 64-row blocks per head, the last one short; GQA (4 heads over 2).
    let q = rand(&[2, 4, 150, 40], 11);
    let k = rand(&[2, 2, 170, 40], 12);
    let v = rand(&[2, 2, 170, 24], 13);
    let x = rand(&[300, 257], 14);
    let (g, b) = (rand(&[1, 257], 15), rand(&[1, 257], 16));
    let causal = Band {
        bottom_right: true,
        right: Some(0),
        left: None,
    };
    let run = || {
        let o = sdpa(&q, &k, &v, 0.125, None, causal).unwrap();
        let (mean, var, _) = moments(&x, &[300, 1]);
        let y = normalize(&x, Some(&mean), &inv_std(&var, 1e-5), &g, Some(&b)).unwrap();
        (o.o, o.stats, y)
    };
    let one = with_threads(1, run);
    for n in [2, 5] {
        let many = with_threads(n, run);
        assert_eq!(bits(&one.0), bits(&many.0), "sdpa O, {n} threads");
        assert_eq!(bits(&one.1), bits(&many.1), "sdpa stats, {n} threads");
        assert_eq!(bits(&one.2), bits(&many.2), "layernorm, {n} threads");
    }
}

#[test]
fn conv_fprop_dgrad_wgrad_are_bit_identical_for_1_2_and_5_threads() {
    for (i, (xd, wd, yd, geo)) in conv_cases().into_iter().enumerate() {
        let (x, w, dy) = (rand(&xd, 10 + i as u64), rand(&wd, 20), rand(&yd, 30));
        let run = || {
            (
                conv_fprop(&x, &w, &yd, &geo),
                conv_dgrad(&dy, &w, &xd, &geo),
                conv_wgrad(&x, &dy, &wd, &geo),
            )
        };
        let one = with_threads(1, run);
        for n in [2, 5] {
            let many = with_threads(n, run);
            assert_eq!(bits(&one.0), bits(&many.0), "case {i} fprop, {n} threads");
            assert_eq!(bits(&one.1), bits(&many.1), "case {i} dgrad, {n} threads");
            assert_eq!(bits(&one.2), bits(&many.2), "case {i} wgrad, {n} threads");
        }
    }
}

#[test]
fn tiled_product_matches_plain_loops_on_uneven_tiles() {
    // 700 × 1100 cuts into uneven tiles (edge tiles narrower and shorter); every element of
    // the tiled, scheduled product matches an f64 plain loop within the f32 sum tolerance.
    let (m, k, n) = (700, 333, 1100);
    let (mb, nb) = tile_shape(1, m, n);
    assert!(m % mb != 0 && n % nb != 0, "{mb}×{nb} tiles are not uneven");
    let a = Array2::from_shape_vec((m, k), random_values(m * k, 4, -1.0, 1.0)).unwrap();
    let b = Array2::from_shape_vec((k, n), random_values(k * n, 5, -1.0, 1.0)).unwrap();
    let mut tiled = Array2::<f32>::zeros((m, n));
    with_threads(3, || {
        gemm::run(
            vec![Job {
                a: a.view(),
                b: b.view(),
                c: tiled.view_mut(),
                row_base: 0,
                res: None,
            }],
            false,
            &Epilogue::NONE,
        )
    });
    let mut want = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k)
                .map(|p| f64::from(a[(i, p)]) * f64::from(b[(p, j)]))
                .sum();
            want.push(s as f32);
        }
    }
    let got: Vec<f32> = tiled.iter().copied().collect();
    assert_close("tiled gemm", &got, &want, tolerance(DataType::FLOAT, true));
}

#[test]
fn tile_shape_depends_on_the_shape_only() {
    // 256 × 512 halved, larger side first, until there are 8 tiles.
    assert_eq!(tile_shape(1, 256, 256), (128, 64));
    assert_eq!(tile_shape(1, 512, 512), (256, 128));
    assert_eq!(tile_shape(1, 2048, 2048), (256, 512));
    assert_eq!(tile_shape(1, 64, 3136), (64, 256));
    assert_eq!(tile_shape(1, 512, 49), (64, 49));
    assert_eq!(tile_shape(8, 64, 3136), (64, 512));
    assert_eq!(tile_shape(1, 4, 4), (4, 4));
    let at = |t| with_threads(t, || tile_shape(3, 300, 530));
    assert_eq!(at(1), at(7));
}

#[test]
fn fused_conv_bias_relu_equals_separate_pointwise_nodes() {
    for (i, (xd, wd, yd, geo)) in conv_cases().into_iter().enumerate() {
        let (x, w) = (rand(&xd, 40 + i as u64), rand(&wd, 50));
        let k = wd[0];
        let bias = rand(&[k], 60);
        let mut bdims = vec![1; yd.len()];
        bdims[1] = k;
        let bias_b = bias.clone().into_shape_with_order(IxDyn(&bdims)).unwrap();
        let conv = conv_fprop(&x, &w, &yd, &geo);
        let added = pointwise(&pw(PointwiseMode::ADD), &[&conv, &bias_b], &yd).unwrap();
        let want = pointwise(&pw(PointwiseMode::RELU_FWD), &[&added], &yd).unwrap();
        let epi = Epilogue {
            bias: Bias::PerRow(bias.as_slice().unwrap()),
            act: Some(pw(PointwiseMode::RELU_FWD)),
        };
        let got = conv_fprop_with(&x, &w, &yd, &geo, &epi);
        assert_eq!(bits(&got), bits(&want), "case {i}");
        assert!(got.iter().any(|&v| v == 0.0) && got.iter().any(|&v| v > 0.0));
    }
}

#[test]
fn fused_matmul_bias_gelu_equals_separate_pointwise_nodes() {
    let (a, b) = (rand(&[2, 130, 90], 70), rand(&[90, 260], 71));
    let dims = [2, 130, 260];
    let bias = rand(&[260], 72);
    let bias_b = bias
        .clone()
        .into_shape_with_order(IxDyn(&[1, 260]))
        .unwrap();
    let mm = matmul(&a, &b, &dims).unwrap();
    let added = pointwise(&pw(PointwiseMode::ADD), &[&mm, &bias_b], &dims).unwrap();
    let want = pointwise(&pw(PointwiseMode::GELU_FWD), &[&added], &dims).unwrap();
    let epi = Epilogue {
        bias: Bias::PerCol(bias.as_slice().unwrap()),
        act: Some(pw(PointwiseMode::GELU_FWD)),
    };
    let got = matmul_with(&a, &b, &dims, &epi).unwrap();
    assert_eq!(bits(&got), bits(&want));
    assert_ne!(bits(&got), bits(&mm));
}

/// The rule of `small_gemm`, written out: one fused multiply-add chain per element, in
/// increasing reduction order, from 0 (or from C when accumulating).
fn fma_chain(a: &[f32], b: &[f32], c: &mut [f32], (m, n, k): (usize, usize, usize), acc: bool) {
    for i in 0..m {
        for j in 0..n {
            let mut s = if acc { c[i * n + j] } else { 0.0 };
            for p in 0..k {
                s = a[i * k + p].mul_add(b[p * n + j], s);
            }
            c[i * n + j] = s;
        }
    }
}

#[test]
fn small_gemm_is_one_fma_chain_per_element_on_every_edge() {
    // Row tails (1…7 rows after whole 8-row blocks), column tails (whole 48-column blocks, 2
    // or 1 spare vectors, spare scalars), k = 0 and 1, and accumulation into C.
    let arch = pulp::Arch::new();
    for (m, n, k) in [
        (1, 1, 1),
        (16, 384, 64),
        (7, 47, 5),
        (9, 97, 33),
        (31, 130, 17),
        (32, 16, 1),
        (3, 5, 0),
        (8, 48, 200),
        (17, 100, 300),
    ] {
        let a = random_values(m * k, 80, -1.0, 1.0);
        let b = random_values(k * n, 81, -1.0, 1.0);
        for acc in [false, true] {
            let c0 = random_values(m * n, 82, -1.0, 1.0);
            let (mut got, mut want) = (c0.clone(), c0);
            small_gemm::gemm_dense(arch, (m, n, k), &a, k, &b, n, &mut got, n, acc);
            fma_chain(&a, &b, &mut want, (m, n, k), acc);
            let (g, w): (Vec<u32>, Vec<u32>) = (
                got.iter().map(|v| v.to_bits()).collect(),
                want.iter().map(|v| v.to_bits()).collect(),
            );
            assert_eq!(g, w, "{m}×{n}×{k}, accumulate {acc}");
        }
    }
}

#[test]
fn small_m_matmul_is_bit_identical_for_1_2_and_5_threads_and_close_to_f64() {
    // M = 16 (MiniLM at batch 1 × 16 tokens), 13 (row tail) and 32, a row-major and a
    // column-major B (a PyTorch `Linear` weight bound as it is), batched with broadcasting,
    // with the fused bias + residual + GELU epilogue; N = 400 cuts uneven panels.
    let (k, n) = (96, 400);
    let bias = rand(&[n], 92);
    let epi = Epilogue {
        bias: Bias::PerCol(bias.as_slice().unwrap()),
        act: Some(pw(PointwiseMode::GELU_FWD)),
    };
    for m in [16, 13, 32] {
        let a = rand(&[2, m, k], 90);
        let b = rand(&[k, n], 91);
        let bt = rand(&[n, k], 91).reversed_axes();
        let res = rand(&[2, m, n], 93);
        let dims = [2, m, n];
        let run = || {
            let f = |b: &ArrayD<f32>| {
                matmul_views_res(a.view(), b.view(), Some(res.view()), &dims, &epi).unwrap()
            };
            (f(&b), f(&bt), matmul(&a, &bt, &dims).unwrap())
        };
        let one = with_threads(1, run);
        for t in [2, 5] {
            let many = with_threads(t, run);
            assert_eq!(
                bits(&one.0),
                bits(&many.0),
                "m {m} row-major b, {t} threads"
            );
            assert_eq!(
                bits(&one.1),
                bits(&many.1),
                "m {m} column-major b, {t} threads"
            );
        }
        let mut want = Vec::with_capacity(2 * m * n);
        for bi in 0..2 {
            for i in 0..m {
                for j in 0..n {
                    let s: f64 = (0..k)
                        .map(|p| f64::from(a[[bi, i, p]]) * f64::from(bt[[p, j]]))
                        .sum();
                    want.push(s as f32);
                }
            }
        }
        let got: Vec<f32> = one.2.iter().copied().collect();
        assert_close(
            "small-m matmul",
            &got,
            &want,
            tolerance(DataType::FLOAT, true),
        );
    }
}

// Whole executes of small plans, which run on the calling thread (`Plan::inline`, work up to
// 32 Ki elements) instead of on the pool: the same bits for 1, 2 and 5 threads, and the same
// bits as the same rows of a plan large enough to run on the pool.

/// Layernorm (inference, eps 1e-5) of `rows` rows of 384: x UID 1, gamma 2, beta 3, y 5.
fn layernorm_graph(rows: i64) -> GraphBuilder {
    let mut g = GraphBuilder::new("ln");
    g.tensor(TensorSpec::new(1, "x", DataType::FLOAT, &[1, 1, rows, 384]))
        .tensor(TensorSpec::new(
            2,
            "gamma",
            DataType::FLOAT,
            &[1, 1, 1, 384],
        ))
        .tensor(TensorSpec::new(3, "beta", DataType::FLOAT, &[1, 1, 1, 384]))
        .tensor(TensorSpec::scalar(4, "eps", TensorValue::Float32(1e-5)))
        .tensor(TensorSpec::new(5, "y", DataType::FLOAT, &[1, 1, rows, 384]));
    g.node(
        "ln",
        Box::new(|fbb| {
            (
                NodeAttributes::LayernormAttributes,
                LayernormAttributes::create(
                    fbb,
                    &LayernormAttributesArgs {
                        x_tensor_uid: 1,
                        scale_tensor_uid: 2,
                        bias_tensor_uid: 3,
                        epsilon_tensor_uid: 4,
                        y_tensor_uid: 5,
                        normalized_dim_count: 1,
                        ..Default::default()
                    },
                )
                .as_union_value(),
            )
        }),
    );
    g
}

/// `a (rows, 384) + b (1, 384)` (a broadcast add: the pointwise kernel's Zip path): UIDs 1,
/// 2 → 3.
fn add_graph(rows: i64) -> GraphBuilder {
    let mut g = GraphBuilder::new("add");
    g.tensor(TensorSpec::new(1, "a", DataType::FLOAT, &[rows, 384]))
        .tensor(TensorSpec::new(2, "b", DataType::FLOAT, &[1, 384]))
        .tensor(TensorSpec::new(3, "y", DataType::FLOAT, &[rows, 384]));
    g.pointwise("add", pw_args(PointwiseMode::ADD, &[1, 2], 3));
    g
}

/// `table (1000, 384)[ids]`, `n` INT64 ids: UIDs 1, 2 → 3.
fn gather_graph(n: i64) -> GraphBuilder {
    let mut g = GraphBuilder::new("gather");
    g.tensor(TensorSpec::new(1, "table", DataType::FLOAT, &[1000, 384]))
        .tensor(TensorSpec::new(2, "ids", DataType::INT64, &[n]))
        .tensor(TensorSpec::new(3, "y", DataType::FLOAT, &[n, 384]));
    g.custom_op("gather", GATHER_OP_ID, &[1, 2], &[3], &[]);
    g
}

/// `rows` rows of a graph's output run alone (a small plan) and as the first rows of `big`
/// rows (a plan on the pool), with 1, 2 and 5 threads: one set of bits.
fn small_and_pooled_agree(
    what: &str,
    graph: fn(i64) -> GraphBuilder,
    inputs: impl Fn(i64) -> Vec<(i64, Vec<f32>)> + Sync,
    out: i64,
    (rows, big): (i64, i64),
) {
    assert!(plan_runs_inline(graph(rows)).unwrap(), "{what}: small plan");
    assert!(
        !plan_runs_inline(graph(big)).unwrap(),
        "{what}: pooled plan"
    );
    let run = |r: i64, t: usize| {
        with_threads(t, || {
            run_graph(graph(r), &inputs(r), &[out]).unwrap().remove(0)
        })
    };
    let small = run(rows, 1);
    let want: Vec<u32> = small.iter().map(|v| v.to_bits()).collect();
    for t in [1, 2, 5] {
        let got: Vec<u32> = run(rows, t).iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "{what}: {rows} rows, {t} threads");
        let pooled = run(big, t);
        let got: Vec<u32> = pooled[..small.len()].iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "{what}: first {rows} of {big} rows, {t} threads");
    }
    // Not a run of zeros.
    assert!(small.iter().any(|&v| v != 0.0), "{what}");
}

#[test]
fn small_plans_on_the_calling_thread_give_the_bits_of_the_pool_for_1_2_and_5_threads() {
    // Row r of x is the same in every size: the first rows of the big run are the small run.
    let x = |rows: i64| random_values(2000 * 384, 71, -2.0, 2.0)[..rows as usize * 384].to_vec();
    let vec = |seed| random_values(384, seed, 0.5, 1.5);
    small_and_pooled_agree(
        "layernorm",
        layernorm_graph,
        |r| vec![(1, x(r)), (2, vec(72)), (3, vec(73))],
        5,
        (16, 96),
    );
    small_and_pooled_agree(
        "broadcast add",
        add_graph,
        |r| vec![(1, x(r)), (2, vec(74))],
        3,
        (16, 128),
    );
    let ids = |n: i64| -> Vec<f32> { (0..n).map(|i| ((i * 7919) % 1003) as f32 - 2.0).collect() };
    small_and_pooled_agree(
        "gather",
        gather_graph,
        |n| vec![(1, random_values(1000 * 384, 75, -1.0, 1.0)), (2, ids(n))],
        3,
        (16, 200),
    );
}

#[test]
fn whether_a_plan_runs_inline_depends_on_its_work() {
    // A gather counts the rows it reads, not its 1000-row table.
    assert!(plan_runs_inline(gather_graph(16)).unwrap());
    // 42 rows: 2 · 42 · 384 + 42 = 32 298 ≤ 32 768; 43 rows: 33 067.
    assert!(plan_runs_inline(gather_graph(42)).unwrap());
    assert!(!plan_runs_inline(gather_graph(43)).unwrap());
    // A matmul counts its multiply-adds: 64³ = 262 144 over 12 288 elements touched.
    let mut g = GraphBuilder::new("mm");
    g.tensor(TensorSpec::new(1, "a", DataType::FLOAT, &[64, 64]))
        .tensor(TensorSpec::new(2, "b", DataType::FLOAT, &[64, 64]))
        .tensor(TensorSpec::new(3, "c", DataType::FLOAT, &[64, 64]));
    g.matmul("mm", 1, 2, 3);
    assert!(!plan_runs_inline(g).unwrap());
}
