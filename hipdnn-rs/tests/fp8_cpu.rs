//! FP8 tensors on the CPU reference engine (issue 33 item 4, the CPU reference): E4M3 / E5M2
//! (OCP) and their FNUZ variants are read exactly, computed in f32 and written round-to-nearest
//! -even with saturation. Checked through the SDK: an FP8 matmul with an f32 output equals the
//! exact f64 sum of the decoded products; with an FP8 output it equals the nearest code of that
//! sum; a per-tensor scale is a pointwise MUL; a plan saved and loaded gives the same bytes.
//! Block-scale quantize (MXFP8: E4M3 data, E8M0 scales; axis 0 with f32 scales) and dequantize
//! follow cuDNN's formulas, and what the engine does not run is refused by name. The expected
//! values come from this file's own decoder and nearest-code search (written from the format
//! tables, not from the engine's code).

use hipdnn::{
    BlockScaleDequantizeAttributes, BlockScaleQuantizeAttributes, Buffer, DataType, Graph, Handle,
    MatmulAttributes, PointwiseAttributes, PointwiseMode, TensorAttributes, TensorValue,
    VariantPack,
};

/// The value of an FP8 byte: `(exponent bits, mantissa bits, bias, fnuz)`; NaN/inf codes are
/// never used by these tests, so they decode to NaN here.
fn decode(b: u8, (eb, mb, bias, fnuz): (u32, u32, i32, bool)) -> f64 {
    let e = i32::from(b >> mb) & ((1 << eb) - 1);
    let f = f64::from(b & ((1 << mb) - 1) as u8);
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    if (fnuz && b == 0x80) || (!fnuz && e == (1 << eb) - 1 && (eb == 5 || f as u32 == 7)) {
        return f64::NAN;
    }
    if e == 0 {
        sign * f * 2f64.powi(1 - bias - mb as i32)
    } else {
        sign * (1.0 + f / f64::from(1u32 << mb)) * 2f64.powi(e - bias)
    }
}

const E4M3: (u32, u32, i32, bool) = (4, 3, 7, false);
const E5M2: (u32, u32, i32, bool) = (5, 2, 15, false);
const E4M3_FNUZ: (u32, u32, i32, bool) = (4, 3, 8, true);

/// The nearest finite code to `v` (ties to the even code), saturated to the largest finite.
fn nearest(v: f64, fmt: (u32, u32, i32, bool)) -> u8 {
    let max = (0..=255u8)
        .map(|b| decode(b, fmt))
        .filter(|d| d.is_finite())
        .fold(0f64, f64::max);
    let v = v.clamp(-max, max);
    let mut best = (f64::INFINITY, 0u8);
    for b in 0..=255u8 {
        let d = decode(b, fmt);
        if !d.is_finite() || (d != 0.0 && (d < 0.0) != (v < 0.0)) {
            continue;
        }
        let err = (d - v).abs();
        if err < best.0 || (err == best.0 && best.1 & 1 == 1) {
            best = (err, b);
        }
    }
    best.1
}

/// `C (m, n) = A (m, k) · B (k, n)`, A and B of the given FP8 types, C of `out`, f32 compute;
/// with `scale`, C = (A·B) · s for a constant f32 scalar s (the per-tensor scale).
fn graph(
    m: i64,
    n: i64,
    k: i64,
    a: DataType,
    b: DataType,
    out: DataType,
    scale: Option<f32>,
) -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(out)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let ta = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .data_type(a)
            .dims([m, k])
            .strides([k, 1]),
    );
    let tb = g.tensor(
        TensorAttributes::new("b")
            .uid(2)
            .data_type(b)
            .dims([k, n])
            .strides([n, 1]),
    );
    let mut c = g.matmul(ta, tb, MatmulAttributes::new());
    if let Some(s) = scale {
        g.set_data_type(c, DataType::Float);
        let sv = g.scalar("scale", TensorValue::Float32(s));
        c = g.pointwise(c, sv, PointwiseAttributes::with_mode(PointwiseMode::Mul));
    }
    g.set_output(c, true).set_uid(c, 3).set_data_type(c, out);
    g
}

/// Codes of small dyadic values in each format, so every product and sum below is exact in
/// f32 and f64 alike.
fn codes(fmt: (u32, u32, i32, bool)) -> Vec<u8> {
    (0..=255u8)
        .filter(|&b| {
            let d = decode(b, fmt);
            d.is_finite() && d.abs() <= 6.0 && (d * 8.0).fract() == 0.0
        })
        .collect()
}

/// A deterministic pick of `n` codes from `pool`.
fn pick(pool: &[u8], n: usize, seed: usize) -> Vec<u8> {
    (0..n)
        .map(|i| pool[(i * 7 + seed * 13 + i * i) % pool.len()])
        .collect()
}

/// Builds and executes `g` on `h`; the output (`out_len` elements) as little-endian bytes,
/// bound as a `Buffer<f32>` when `out_bytes` is 4, else as the FP8 bytes (`Buffer<u8>`).
fn run(g: &mut Graph, h: &Handle, a: &[u8], b: &[u8], out_len: usize, out_bytes: usize) -> Vec<u8> {
    g.build(h).unwrap();
    let (ab, bb) = (Buffer::from_slice(a), Buffer::from_slice(b));
    if out_bytes == 4 {
        let mut c = Buffer::<f32>::zeros(out_len);
        let pack = VariantPack::new().with(1, &ab).with(2, &bb).with(3, &mut c);
        g.execute(h, pack, None).unwrap();
        return c
            .to_vec()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
    }
    let mut c = Buffer::<u8>::zeros(out_len);
    let pack = VariantPack::new().with(1, &ab).with(2, &bb).with(3, &mut c);
    g.execute(h, pack, None).unwrap();
    c.to_vec().unwrap()
}

#[test]
fn fp8_matmul_equals_the_exact_sum_of_the_decoded_products() {
    let h = Handle::cpu().unwrap();
    let (m, n, k) = (5usize, 7usize, 33usize);
    for (ta, fa, tb, fb) in [
        (DataType::Fp8E4m3, E4M3, DataType::Fp8E4m3, E4M3),
        (DataType::Fp8E4m3, E4M3, DataType::Fp8E5m2, E5M2),
        (
            DataType::Fp8E4m3Fnuz,
            E4M3_FNUZ,
            DataType::Fp8E4m3Fnuz,
            E4M3_FNUZ,
        ),
    ] {
        let a = pick(&codes(fa), m * k, 1);
        let b = pick(&codes(fb), k * n, 2);
        let want: Vec<f64> = (0..m * n)
            .map(|o| {
                let (i, j) = (o / n, o % n);
                (0..k)
                    .map(|p| decode(a[i * k + p], fa) * decode(b[p * n + j], fb))
                    .sum()
            })
            .collect();
        assert!(want.iter().any(|v| v.abs() > 10.0), "{want:?}");
        // The product on the CPU engine with output type `out` (and a scale), as bytes.
        let product = |out: DataType, scale: Option<f32>, bytes: usize| {
            let (mi, ni, ki) = (m as i64, n as i64, k as i64);
            run(
                &mut graph(mi, ni, ki, ta, tb, out, scale),
                &h,
                &a,
                &b,
                m * n,
                bytes,
            )
        };
        // f32 output: exact.
        let got: Vec<f64> = product(DataType::Float, None, 4)
            .chunks(4)
            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        assert_eq!(got, want, "{ta:?} x {tb:?}");
        // E4M3 output: the nearest code of the exact sum, saturated at 448.
        let got = product(DataType::Fp8E4m3, None, 1);
        let want8: Vec<u8> = want.iter().map(|&v| nearest(v, E4M3)).collect();
        assert_eq!(got, want8, "{ta:?} x {tb:?} -> E4M3");
        // A per-tensor scale as a pointwise MUL by a scalar, then E5M2.
        let got = product(DataType::Fp8E5m2, Some(0.375), 1);
        let want8: Vec<u8> = want.iter().map(|&v| nearest(v * 0.375, E5M2)).collect();
        assert_eq!(got, want8, "{ta:?} x {tb:?} x 0.375 -> E5M2");
    }
}

#[test]
fn an_fp8_output_saturates_and_a_saved_fp8_plan_reloads_to_the_same_bytes() {
    let h = Handle::cpu().unwrap();
    // 64 products of 6 · 6 = 2304 per output: beyond E4M3's 448, so every output saturates.
    let six = nearest(6.0, E4M3);
    let a = vec![six; 2 * 64];
    let b = vec![six; 64 * 3];
    let mut g = graph(
        2,
        3,
        64,
        DataType::Fp8E4m3,
        DataType::Fp8E4m3,
        DataType::Fp8E4m3,
        None,
    );
    let got = run(&mut g, &h, &a, &b, 6, 1);
    assert_eq!(decode(got[0], E4M3), 448.0);
    assert_eq!(got, vec![0x7E; 6]);
    let mut g = graph(
        2,
        3,
        64,
        DataType::Fp8E4m3,
        DataType::Fp8E4m3,
        DataType::Fp8E4m3,
        Some(-1.0 / 64.0),
    );
    let got = run(&mut g, &h, &a, &b, 6, 1);
    assert_eq!(got, vec![nearest(-36.0, E4M3); 6]);
    let saved = g.to_binary().unwrap();
    let loaded = Graph::from_binary(&h, &saved).unwrap();
    assert_eq!(loaded.to_binary().unwrap(), saved);
    let (ab, bb) = (Buffer::from_slice(&a), Buffer::from_slice(&b));
    let mut c = Buffer::<u8>::zeros(6);
    loaded
        .execute(
            &h,
            VariantPack::new().with(1, &ab).with(2, &bb).with(3, &mut c),
            None,
        )
        .unwrap();
    assert_eq!(c.to_vec().unwrap(), got);
}

/// Values with a spread of magnitudes per block (some blocks all zero), deterministic.
fn spread(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            if (i / 32) % 5 == 3 {
                return 0.0;
            }
            let m = ((i * 37 + 11) % 101) as f32 / 17.0 - 3.0;
            m * 2f32.powi((i % 9) as i32 - 4)
        })
        .collect()
}

/// MXFP8: quantize x `(4, 64)` in blocks of 32 along the last dim to E4M3 with E8M0 scales,
/// then dequantize. Each scale is the next power of two at or above amax / 448 (the smallest
/// E8M0 value for an all-zero block), each code the nearest E4M3 of x / scale, and the
/// dequantized value code · scale, all from this file's own arithmetic.
#[test]
fn mxfp8_quantize_and_dequantize_follow_the_block_scale_formulas() {
    let h = Handle::cpu().unwrap();
    let (rows, cols, block) = (4usize, 64usize, 32usize);
    let x = spread(rows * cols);
    let (mut g, y, s) = quantize_graph(
        [rows as i64, cols as i64],
        BlockScaleQuantizeAttributes::new().block_size(block as i32),
        DataType::Fp8E4m3,
        DataType::Fp8E8m0,
    );
    let d = g.block_scale_dequantize(
        y,
        s,
        BlockScaleDequantizeAttributes::new().block_size(vec![1, block as i32]),
    );
    g.set_output(d, true)
        .set_uid(d, 4)
        .set_data_type(d, DataType::Float);
    g.build(&h).unwrap();
    let xb = Buffer::from_slice(&x);
    let (mut yb, mut sb) = (
        Buffer::<u8>::zeros(rows * cols),
        Buffer::<u8>::zeros(rows * cols / block),
    );
    let mut db = Buffer::<f32>::zeros(rows * cols);
    let pack = VariantPack::new()
        .with(1, &xb)
        .with(2, &mut yb)
        .with(3, &mut sb)
        .with(4, &mut db);
    g.execute(&h, pack, None).unwrap();
    let (yv, sv, dv) = (
        yb.to_vec().unwrap(),
        sb.to_vec().unwrap(),
        db.to_vec().unwrap(),
    );
    let mut zero_blocks = 0;
    for r in 0..rows {
        for j in 0..cols / block {
            let blk = &x[r * cols + j * block..r * cols + (j + 1) * block];
            let amax = blk.iter().fold(0f64, |m, v| m.max(f64::from(v.abs())));
            let e = if amax == 0.0 {
                zero_blocks += 1;
                -127
            } else {
                (amax / 448.0).log2().ceil() as i32
            };
            assert_eq!(
                sv[r * 2 + j],
                (e + 127) as u8,
                "scale of row {r} block {j} (amax {amax})"
            );
            let scale = 2f64.powi(e);
            for (t, &v) in blk.iter().enumerate() {
                let at = r * cols + j * block + t;
                let code = nearest(f64::from(v) / scale, E4M3);
                assert_eq!(yv[at], code, "y[{at}] of {v}");
                assert_eq!(
                    f64::from(dv[at]),
                    decode(code, E4M3) * scale,
                    "dequantized [{at}]"
                );
            }
        }
    }
    assert!(
        zero_blocks > 0 && zero_blocks < rows * cols / block,
        "{zero_blocks}"
    );
}

/// `x` (uid 1, f32, `dims` row-major) block-scale quantized by `attrs` into y (uid 2, type
/// `ydt`) and scale (uid 3, type `sdt`), both graph outputs; returns the graph and (y, scale).
fn quantize_graph(
    dims: [i64; 2],
    attrs: BlockScaleQuantizeAttributes,
    ydt: DataType,
    sdt: DataType,
) -> (Graph, hipdnn::TensorId, hipdnn::TensorId) {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let tx = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims(dims)
            .strides([dims[1], 1]),
    );
    let (y, s) = g.block_scale_quantize(tx, attrs);
    g.set_output(y, true).set_uid(y, 2).set_data_type(y, ydt);
    g.set_output(s, true).set_uid(s, 3).set_data_type(s, sdt);
    (g, y, s)
}

/// Quantize along axis 0 with f32 scales (the quotient itself) to E5M2; transpose and an FP4
/// output are refused by name.
#[test]
fn quantize_along_another_axis_and_the_refusals() {
    let h = Handle::cpu().unwrap();
    let x = spread(8 * 3);
    let (mut g, _, _) = quantize_graph(
        [8, 3],
        BlockScaleQuantizeAttributes::new().block_size(4).axis(0),
        DataType::Fp8E5m2,
        DataType::Float,
    );
    g.build(&h).unwrap();
    let xb = Buffer::from_slice(&x);
    let (mut yb, mut sb) = (Buffer::<u8>::zeros(24), Buffer::<f32>::zeros(6));
    g.execute(
        &h,
        VariantPack::new()
            .with(1, &xb)
            .with(2, &mut yb)
            .with(3, &mut sb),
        None,
    )
    .unwrap();
    let (yv, sv) = (yb.to_vec().unwrap(), sb.to_vec().unwrap());
    for j in 0..2 {
        for c in 0..3 {
            let amax = (0..4).fold(0f32, |m, t| m.max(x[(j * 4 + t) * 3 + c].abs()));
            let scale = if amax == 0.0 {
                f32::from_bits(1)
            } else {
                amax / 57344.0
            };
            assert_eq!(sv[j * 3 + c], scale, "scale ({j}, {c})");
            for t in 0..4 {
                let at = (j * 4 + t) * 3 + c;
                assert_eq!(yv[at], nearest(f64::from(x[at] / scale), E5M2), "y[{at}]");
            }
        }
    }
    for (attrs, ydt, want) in [
        (
            BlockScaleQuantizeAttributes::new()
                .block_size(4)
                .axis(0)
                .transpose(true),
            DataType::Fp8E5m2,
            "transpose true is not supported by the CPU reference engine",
        ),
        (
            BlockScaleQuantizeAttributes::new().block_size(4).axis(0),
            DataType::Fp4E2m1,
            "is not supported by the CPU reference engine",
        ),
    ] {
        let (mut g, _, _) = quantize_graph([8, 3], attrs, ydt, DataType::Float);
        let err = g.build(&h).unwrap_err();
        assert!(err.message.contains(want), "{}", err.message);
    }
}
