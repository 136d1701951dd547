//! Execute-time shape overrides (issue 34, upstream RFC 0008 phase 1) on the CPU engine: one
//! plan built at the largest shape with the override-shape flag runs every smaller shape the
//! pack gives, with the bits of a plan built at that shape; every override that breaks a rule
//! is refused with a named error before anything is written; a saved flagged plan reloads and
//! serves the same shapes.

use hipdnn::{
    Buffer, ConvFpropAttributes, DataType, ErrorCode, Graph, Handle, LayernormAttributes,
    MatmulAttributes, NormFwdPhase, PointwiseAttributes, PointwiseMode, ReductionAttributes,
    ReductionMode, SdpaAttributes, ShapeOverride, TensorAttributes as T, TensorValue, VariantPack,
};

/// One tensor's host buffer, by data type.
enum Buf {
    F(Buffer<f32>),
    I(Buffer<i32>),
    B(Buffer<bool>),
}

/// Elements a tensor's dims and strides span.
fn extent(dims: &[i64], strides: &[i64]) -> usize {
    1 + dims
        .iter()
        .zip(strides)
        .map(|(&d, &s)| ((d - 1) * s) as usize)
        .sum::<usize>()
}

/// A deterministic input for tensor `uid` of `dt` with `n` elements (ids below 50).
fn input(uid: i64, dt: DataType, n: usize) -> Buf {
    match dt {
        DataType::Int32 => Buf::I(Buffer::from_slice(
            &(0..n)
                .map(|i| ((i * 7 + uid as usize) % 50) as i32)
                .collect::<Vec<_>>(),
        )),
        DataType::Boolean => Buf::B(Buffer::from_slice(
            &(0..n)
                .map(|i| (i + uid as usize) % 4 != 0)
                .collect::<Vec<_>>(),
        )),
        _ => Buf::F(Buffer::from_slice(
            &(0..n)
                .map(|i| (((i * 37 + uid as usize * 11) % 97) as f32 - 48.0) / 32.0)
                .collect::<Vec<_>>(),
        )),
    }
}

/// Runs `g` on the inputs of `shape` (a graph of the same kind at the wanted shape: its
/// non-virtual tensors give the buffer sizes), with `overrides`; the output (uid 100) bytes.
fn run(
    h: &Handle,
    g: &Graph,
    shape: &Graph,
    overrides: &[ShapeOverride],
) -> hipdnn::Result<Vec<f32>> {
    let mut bufs = Vec::new();
    let mut out = None;
    for (_, t) in shape.tensors().filter(|(_, t)| !t.is_virtual) {
        let (Some(uid), None) = (t.uid, t.value) else {
            continue;
        };
        let n = extent(&t.dims, &t.strides);
        if uid == 100 {
            out = Some(Buffer::<f32>::filled(n, f32::NAN));
        } else {
            bufs.push((uid, input(uid, t.data_type, n)));
        }
    }
    let mut out = out.expect("the graph has output uid 100");
    let mut pack = VariantPack::new();
    for (uid, b) in &bufs {
        pack = match b {
            Buf::F(b) => pack.input(*uid, b),
            Buf::I(b) => pack.input(*uid, b),
            Buf::B(b) => pack.input(*uid, b),
        };
    }
    pack = pack.output(100, &mut out);
    for o in overrides {
        pack = pack.override_shape(o.uid, o.dims.clone(), o.strides.clone());
    }
    g.execute(h, pack, None)?;
    out.to_vec()
}

/// Builds `make(max)` with the flag and, for each of `shapes`, checks that the flagged plan
/// run through overrides gives the bits of `make(shape)` built for that shape.
fn serves<P: Copy + std::fmt::Debug>(make: impl Fn(P) -> Graph, max: P, shapes: &[P]) {
    let h = Handle::cpu().unwrap();
    let mut g = make(max);
    g.set_override_shape_enabled(true);
    g.build(&h).unwrap();
    for &s in shapes {
        let mut own = make(s);
        own.build(&h).unwrap();
        let ov = g.shape_overrides_for(&own).unwrap();
        assert!(!ov.is_empty(), "{s:?} is a smaller shape");
        let want = run(&h, &own, &own, &[]).unwrap();
        let got = run(&h, &g, &own, &ov).unwrap();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits())
                && got.len() == want.len(),
            "{s:?}: overrides differ from a build at that shape"
        );
        assert!(
            got.iter().all(|v| v.is_finite()),
            "{s:?}: every output written"
        );
    }
}

fn f32_graph() -> Graph {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    g
}

/// `gelu(x · w + bias + residual)`: x (1, 1, rows, 16), w (1, 1, 16, 24) → (1, 1, rows, 24).
fn linear(rows: i64) -> Graph {
    let mut g = f32_graph();
    let x = g.tensor(T::new("x").uid(1).dims([1, 1, rows, 16]));
    let w = g.tensor(T::new("w").uid(2).dims([1, 1, 16, 24]));
    let b = g.tensor(T::new("bias").uid(3).dims([1, 1, 1, 24]));
    let r = g.tensor(T::new("residual").uid(4).dims([1, 1, rows, 24]));
    let y = g.matmul(x, w, MatmulAttributes::new());
    let y = g.pointwise(y, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y = g.pointwise(y, r, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::GeluFwd));
    g.set_output(y, true).set_uid(y, 100);
    g
}

/// Layernorm of rows of 32 → then ×2 (a virtual layernorm output).
fn layernorm(rows: i64) -> Graph {
    let mut g = f32_graph();
    let x = g.tensor(T::new("x").uid(1).dims([1, 1, rows, 32]));
    let gamma = g.tensor(T::new("gamma").uid(2).dims([1, 1, 1, 32]));
    let beta = g.tensor(T::new("beta").uid(3).dims([1, 1, 1, 32]));
    let eps = g.tensor(T::scalar(TensorValue::Float32(1e-5)).name("eps").uid(5));
    let two = g.tensor(T::scalar(TensorValue::Float32(2.0)).name("two").uid(6));
    let attrs = LayernormAttributes::new()
        .epsilon(eps)
        .forward_phase(NormFwdPhase::Inference);
    let y = g.layernorm(x, gamma, beta, attrs).0;
    let y = g.pointwise(y, two, PointwiseAttributes::with_mode(PointwiseMode::Mul));
    g.set_output(y, true).set_uid(y, 100);
    g
}

/// Attention: q, k, v (b, 4, s, 8) as head views of (b, s, 32) rows, a boolean key mask
/// (b, 1, 1, s), scale 1/√8 → o (b, 4, s, 8) as a head view.
fn attention((b, s): (i64, i64)) -> Graph {
    let mut g = f32_graph();
    let (dims, strides) = ([b, 4, s, 8], [s * 32, 8, 32, 1]);
    let q = g.tensor(T::new("q").uid(1).dims(dims).strides(strides));
    let k = g.tensor(T::new("k").uid(2).dims(dims).strides(strides));
    let v = g.tensor(T::new("v").uid(3).dims(dims).strides(strides));
    let mask = g.tensor(
        T::new("mask")
            .uid(4)
            .data_type(DataType::Boolean)
            .dims([b, 1, 1, s])
            .strides([s, s, s, 1]),
    );
    let attrs = SdpaAttributes::new()
        .attn_mask(mask)
        .attn_scale_value(1.0 / 8f32.sqrt());
    let (o, _) = g.sdpa(q, k, v, attrs);
    g.set_strides(o, strides);
    g.set_output(o, true).set_uid(o, 100);
    g
}

/// Embedding rows of ids (b, 1, s) from a (50, 16) table, plus a (1, 1, s, 16) position table.
fn embedding((b, s): (i64, i64)) -> Graph {
    let mut g = f32_graph();
    let table = g.tensor(T::new("table").uid(1).dims([50, 16]));
    let ids = g.tensor(
        T::new("ids")
            .uid(2)
            .data_type(DataType::Int32)
            .dims([b, 1, s]),
    );
    let pos = g.tensor(T::new("pos").uid(3).dims([1, 1, s, 16]));
    let y = g.gather(table, ids);
    let y = g.pointwise(y, pos, PointwiseAttributes::with_mode(PointwiseMode::Add));
    g.set_output(y, true).set_uid(y, 100);
    g
}

/// relu(conv(x, w) + bias), NHWC x (n, 3, h, w), w (4, 3, 3, 3), padding 1, stride 2.
fn conv((n, hh, ww): (i64, i64, i64)) -> Graph {
    let mut g = f32_graph();
    let x = g.tensor(
        T::new("x")
            .uid(1)
            .dims([n, 3, hh, ww])
            .strides([hh * ww * 3, 1, ww * 3, 3]),
    );
    let w = g.tensor(T::new("w").uid(2).dims([4, 3, 3, 3]).strides([27, 1, 9, 3]));
    let bias = g.tensor(T::new("bias").uid(3).dims([1, 4, 1, 1]));
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([2, 2])
            .dilation([1, 1]),
    );
    let y = g.pointwise(y, bias, PointwiseAttributes::with_mode(PointwiseMode::Add));
    let y = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
    g.set_output(y, true).set_uid(y, 100);
    g
}

/// Softmax over rows of 12 as the five-node pattern (max, sub, exp, sum, div).
fn softmax(rows: i64) -> Graph {
    let mut g = f32_graph();
    let x = g.tensor(T::new("x").uid(1).dims([rows, 12]));
    let m = g.reduction(
        x,
        [rows, 1],
        ReductionAttributes::new().mode(ReductionMode::MaxOp),
    );
    let d = g.pointwise(x, m, PointwiseAttributes::with_mode(PointwiseMode::Sub));
    let e = g.pointwise_unary(d, PointwiseAttributes::with_mode(PointwiseMode::Exp));
    let s = g.reduction(
        e,
        [rows, 1],
        ReductionAttributes::new().mode(ReductionMode::Add),
    );
    let y = g.pointwise(e, s, PointwiseAttributes::with_mode(PointwiseMode::Div));
    g.set_output(y, true).set_uid(y, 100);
    g
}

#[test]
fn a_linear_layer_built_for_8_rows_serves_fewer_with_the_same_bits() {
    serves(linear, 8, &[1, 3, 7]);
}

#[test]
fn layernorm_with_a_virtual_output_serves_fewer_rows() {
    serves(layernorm, 8, &[1, 5]);
}

#[test]
fn attention_built_for_2_by_16_serves_smaller_batches_and_lengths() {
    serves(attention, (2, 16), &[(1, 5), (2, 9), (1, 16), (2, 1)]);
}

#[test]
fn an_embedding_gather_serves_smaller_batches_and_lengths() {
    serves(embedding, (3, 10), &[(1, 4), (3, 2)]);
}

#[test]
fn a_fused_strided_conv_serves_smaller_batches_and_images() {
    serves(conv, (2, 9, 8), &[(1, 5, 6), (2, 9, 3), (1, 1, 1)]);
}

#[test]
fn the_softmax_pattern_serves_fewer_rows() {
    serves(softmax, 6, &[1, 4]);
}

/// The flagged linear plan at 8 rows and a pack for 3 rows (inputs and output bound).
fn flagged_linear() -> (Handle, Graph) {
    let h = Handle::cpu().unwrap();
    let mut g = linear(8);
    g.set_override_shape_enabled(true);
    g.build(&h).unwrap();
    (h, g)
}

/// Executes the flagged linear plan on 8-row buffers (large enough for any override) with
/// `overrides`; the error and whether the output stayed untouched.
fn refused(overrides: &[ShapeOverride]) -> (ErrorCode, String, bool) {
    let (h, g) = flagged_linear();
    let x = Buffer::from_slice(&[0.5f32; 128]);
    let w = Buffer::from_slice(&[0.25f32; 384]);
    let b = Buffer::from_slice(&[1f32; 24]);
    let r = Buffer::from_slice(&[2f32; 192]);
    let mut y = Buffer::<f32>::filled(192, -7.0);
    let mut pack = VariantPack::new()
        .input(1, &x)
        .input(2, &w)
        .input(3, &b)
        .input(4, &r)
        .output(100, &mut y);
    for o in overrides {
        pack = pack.override_shape(o.uid, o.dims.clone(), o.strides.clone());
    }
    let e = g.execute(&h, pack, None).unwrap_err();
    let untouched = y.to_vec().unwrap().iter().all(|&v| v == -7.0);
    (e.code, e.message, untouched)
}

#[test]
fn each_broken_override_is_refused_by_name_and_nothing_is_written() {
    let ok = |uid| {
        ShapeOverride::new(
            uid,
            [1, 1, 3, if uid == 1 { 16 } else { 24 }],
            [
                if uid == 1 { 48 } else { 72 },
                if uid == 1 { 48 } else { 72 },
                if uid == 1 { 16 } else { 24 },
                1,
            ],
        )
    };
    let cases: Vec<(Vec<ShapeOverride>, &str)> = vec![
        (
            vec![
                ShapeOverride::new(1, [1, 1, 9, 16], [144, 144, 16, 1]),
                ok(4),
                ok(100),
            ],
            "shape override of tensor uid 1: dim 2 is 9, larger than the built maximum 8",
        ),
        (
            vec![
                ShapeOverride::new(1, [1, 3, 16], [48, 16, 1]),
                ok(4),
                ok(100),
            ],
            "shape override of tensor uid 1: 3 dims and 3 strides for a tensor of rank 4",
        ),
        (
            vec![
                ShapeOverride::new(1, [1, 1, 3, 16], [48, 48, 1, 3]),
                ok(4),
                ok(100),
            ],
            "shape override of tensor uid 1: strides [48, 48, 1, 3] reorder the built layout",
        ),
        (
            vec![
                ShapeOverride::new(1, [1, 1, 0, 16], [48, 48, 16, 1]),
                ok(4),
                ok(100),
            ],
            "shape override of tensor uid 1: dim 2 is 0; dims must be positive",
        ),
        (
            vec![ok(1), ok(4), ok(100), ShapeOverride::new(77, [1], [1])],
            "shape override names tensor uid 77, which is not a tensor of the plan",
        ),
        // The matmul's A shortened, the residual and output left at 8 rows: the residual add
        // (3 rows + 8 rows) refuses, named.
        (
            vec![ok(1)],
            "shape override: the graph does not run at these shapes: pointwise 'Pointwise_",
        ),
    ];
    for (ov, want) in cases {
        let (code, msg, untouched) = refused(&ov);
        assert_eq!(code, ErrorCode::InvalidValue, "{msg}");
        assert!(msg.starts_with(want), "{msg}\n  wanted: {want}");
        assert!(untouched, "{want}: nothing written");
    }
    // A virtual tensor: the matmul's output (its UID assigned at build).
    let (_, g) = flagged_linear();
    let virt = g
        .tensors()
        .find(|(_, t)| t.is_virtual)
        .and_then(|(_, t)| t.uid)
        .expect("a virtual tensor with a uid");
    let (code, msg, untouched) = refused(&[
        ok(1),
        ShapeOverride::new(virt, [1, 1, 3, 24], [72, 72, 24, 1]),
    ]);
    assert_eq!(code, ErrorCode::InvalidValue);
    assert!(
        msg.starts_with(&format!(
            "shape override of tensor uid {virt}: the tensor is virtual"
        )),
        "{msg}"
    );
    assert!(untouched);
}

#[test]
fn overrides_need_the_flag_and_a_buffer_of_the_override_extent() {
    let h = Handle::cpu().unwrap();
    let mut g = linear(8);
    g.build(&h).unwrap();
    let x = Buffer::from_slice(&[0.5f32; 48]);
    let w = Buffer::from_slice(&[0.25f32; 384]);
    let b = Buffer::from_slice(&[1f32; 24]);
    let r = Buffer::from_slice(&[2f32; 72]);
    let mut y = Buffer::<f32>::filled(72, -7.0);
    let pack = VariantPack::new()
        .input(1, &x)
        .input(2, &w)
        .input(3, &b)
        .input(4, &r)
        .output(100, &mut y)
        .override_shape(1, [1, 1, 3, 16], [48, 48, 16, 1]);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "shape overrides need a graph built with the override-shape flag: call \
         Graph::set_override_shape_enabled(true) before build"
    );

    // With the flag, a 3-row override bound to a 2-row buffer is short.
    let (h, g) = flagged_linear();
    let short = Buffer::from_slice(&[0.5f32; 32]);
    let pack = VariantPack::new()
        .input(1, &short)
        .input(2, &w)
        .input(3, &b)
        .input(4, &r)
        .output(100, &mut y)
        .override_shape(1, [1, 1, 3, 16], [48, 48, 16, 1])
        .override_shape(4, [1, 1, 3, 24], [72, 72, 24, 1])
        .override_shape(100, [1, 1, 3, 24], [72, 72, 24, 1]);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message
            .starts_with("buffer for tensor 'x' (uid 1) holds 128 bytes; dims [1, 1, 3, 16]"),
        "{}",
        e.message
    );
    assert!(!e.message.contains("override it too"), "{}", e.message);

    // The input overridden, the output not: its 3-row buffer is short of the built 8 rows,
    // and the message says which override is missing.
    let x3 = Buffer::from_slice(&[0.5f32; 48]);
    let mut y3 = Buffer::<f32>::filled(72, -7.0);
    let pack = VariantPack::new()
        .input(1, &x3)
        .input(2, &w)
        .input(3, &b)
        .input(4, &r)
        .output(100, &mut y3)
        .override_shapes([
            ShapeOverride::new(1, vec![1, 1, 3, 16], vec![48, 48, 16, 1]),
            ShapeOverride::new(4, vec![1, 1, 3, 24], vec![72, 72, 24, 1]),
        ]);
    let e = g.execute(&h, pack, None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message
            .starts_with("buffer for tensor 'Pointwise_3::OUT_0' (uid 100) holds 288 bytes")
            && e.message.ends_with(
                " (its built shape: the pack overrides other tensors but not uid 100; override \
                 it too — Graph::shape_overrides_for computes every override from the graph \
                 made at the smaller shape)"
            ),
        "{}",
        e.message
    );
    assert!(
        y3.to_vec().unwrap().iter().all(|v| *v == -7.0),
        "nothing written"
    );
}

#[test]
fn a_saved_flagged_plan_reloads_serves_the_same_shapes_and_resaves_byte_identically() {
    let (h, g) = flagged_linear();
    let mut own = linear(3);
    own.build(&h).unwrap();
    let ov = g.shape_overrides_for(&own).unwrap();
    let want = run(&h, &g, &own, &ov).unwrap();
    for bytes in [g.to_binary().unwrap(), g.to_compiled_plan_binary().unwrap()] {
        let fresh = Handle::cpu().unwrap();
        let loaded = if bytes == g.to_binary().unwrap() {
            Graph::from_binary(&fresh, &bytes).unwrap()
        } else {
            Graph::from_compiled_plan_binary(&fresh, &bytes).unwrap()
        };
        assert!(loaded.is_override_shape_enabled());
        let got = run(&fresh, &loaded, &own, &ov).unwrap();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        let again = if bytes == g.to_binary().unwrap() {
            loaded.to_binary().unwrap()
        } else {
            loaded.to_compiled_plan_binary().unwrap()
        };
        assert_eq!(again, bytes, "re-save byte-identical");
    }
}

#[test]
fn shape_overrides_for_names_a_tensor_the_larger_graph_lacks() {
    let max = linear(8);
    let mut other = linear(3);
    let extra = other.tensor(T::new("extra").uid(55).dims([2]));
    other.set_output(extra, true);
    let e = max.shape_overrides_for(&other).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "tensor 'extra' (uid 55) of the smaller graph is not a tensor of this graph"
    );
    assert_eq!(max.shape_overrides_for(&linear(8)).unwrap(), []);
}

/// `linear` at `rows` with x's rows `pitch` floats apart (≥ 16: padded rows).
fn linear_pitched(rows: i64, pitch: i64) -> Graph {
    let mut g = linear(rows);
    let x = g.tensor_by_uid(1).unwrap();
    g.set_strides(x, [rows * pitch, rows * pitch, pitch, 1]);
    g
}

/// Issue 37 class 7 (a cache key that misses a property) for the CPU engine's plans at
/// override shapes: two overrides with the same dims and different strides run two plans;
/// the second is not served the first's (which would read the padded rows as packed ones).
#[test]
fn overrides_that_differ_only_in_strides_do_not_share_a_plan() {
    let h = Handle::cpu().unwrap();
    let mut g = linear_pitched(8, 20);
    g.set_override_shape_enabled(true);
    g.build(&h).unwrap();
    for pitch in [16, 20, 16, 18] {
        let mut own = linear_pitched(3, pitch);
        own.build(&h).unwrap();
        let ov = g.shape_overrides_for(&own).unwrap();
        let want = run(&h, &own, &own, &[]).unwrap();
        let got = run(&h, &g, &own, &ov).unwrap();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "row pitch {pitch}"
        );
    }
}
