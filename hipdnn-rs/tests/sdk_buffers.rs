//! `hipdnn::Buffer` and `VariantPack` on the host: alignment, element codecs, ndarray shapes,
//! and rebinding a UID.

use half::{bf16, f16};
use hipdnn::{
    BUFFER_ALIGNMENT, Buffer, DataType, Element, ErrorCode, Graph, Handle, PinnedBuffer,
    PointwiseAttributes, PointwiseMode, TensorAttributes, VariantPack,
};

#[test]
fn host_buffers_are_64_byte_aligned() {
    assert_eq!(BUFFER_ALIGNMENT, 64);
    for n in [0usize, 1, 3, 16, 17, 1000] {
        let a = Buffer::<f32>::zeros(n);
        assert_eq!(a.as_bytes().unwrap().as_ptr() as usize % 64, 0, "f32 × {n}");
        assert_eq!(a.byte_len(), 4 * n);
        let b = Buffer::<u8>::from_slice(&vec![7u8; n]);
        assert_eq!(b.as_bytes().unwrap().as_ptr() as usize % 64, 0, "u8 × {n}");
        let c = Buffer::<f64>::filled(n, 1.0);
        assert_eq!(c.as_bytes().unwrap().as_ptr() as usize % 64, 0, "f64 × {n}");
        assert!(!a.is_device());
    }
}

fn round_trip<T: Element>(values: &[T], dt: DataType) {
    let b = Buffer::from_slice(values);
    assert_eq!(T::DATA_TYPE, dt);
    assert_eq!(b.len(), values.len());
    assert_eq!(b.byte_len(), values.len() * T::SIZE);
    assert_eq!(b.to_vec().unwrap(), values, "{dt:?}");
    // Little-endian bytes, element by element.
    let bytes = b.as_bytes().unwrap();
    for (i, v) in values.iter().enumerate() {
        let mut one = vec![0u8; T::SIZE];
        v.write_le(&mut one);
        assert_eq!(
            &bytes[i * T::SIZE..(i + 1) * T::SIZE],
            one.as_slice(),
            "{dt:?} element {i}"
        );
        assert_eq!(T::read_le(&one), *v);
    }
    let f = Buffer::filled(5, values[0]);
    assert_eq!(f.to_vec().unwrap(), vec![values[0]; 5]);
}

#[test]
fn from_slice_and_to_vec_round_trip_every_element_type() {
    round_trip(
        &[1.0f32, -0.0, f32::MAX, f32::MIN_POSITIVE, f32::INFINITY],
        DataType::Float,
    );
    round_trip(
        &[f16::from_f32(1.5), f16::MAX, f16::from_f32(-2.25)],
        DataType::Half,
    );
    round_trip(
        &[bf16::from_f32(1.5), bf16::MIN, bf16::from_f32(-3.0)],
        DataType::BFloat16,
    );
    round_trip(&[i32::MIN, -1, 0, i32::MAX], DataType::Int32);
    round_trip(&[i8::MIN, -1, 0, i8::MAX], DataType::Int8);
    round_trip(&[0u8, 1, 128, 255], DataType::Uint8);
    round_trip(&[true, false, true], DataType::Boolean);
    round_trip(&[std::f64::consts::PI, -1e300, 0.0], DataType::Double);
    round_trip(&[i64::MIN, -1, 0, i64::MAX], DataType::Int64);
    // Exact wire bytes of a few values.
    assert_eq!(
        Buffer::from_slice(&[1.0f32]).as_bytes().unwrap(),
        &[0x00, 0x00, 0x80, 0x3f]
    );
    assert_eq!(
        Buffer::from_slice(&[f16::ONE]).as_bytes().unwrap(),
        &[0x00, 0x3c]
    );
    assert_eq!(
        Buffer::from_slice(&[bf16::ONE]).as_bytes().unwrap(),
        &[0x80, 0x3f]
    );
    assert_eq!(
        Buffer::from_slice(&[-2i32]).as_bytes().unwrap(),
        &[0xfe, 0xff, 0xff, 0xff]
    );
    assert_eq!(
        Buffer::from_slice(&[true, false]).as_bytes().unwrap(),
        &[1, 0]
    );
    // NaN payloads survive (compare bits).
    let nan = f32::from_bits(0x7fc0_1234);
    assert_eq!(
        Buffer::from_slice(&[nan]).to_vec().unwrap()[0].to_bits(),
        0x7fc0_1234
    );
    // zeros are all-zero bytes.
    assert!(
        Buffer::<f64>::zeros(9)
            .as_bytes()
            .unwrap()
            .iter()
            .all(|b| *b == 0)
    );
}

#[test]
fn to_ndarray_checks_the_shape() {
    let b = Buffer::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let a = b.to_ndarray(&[2, 3]).unwrap();
    assert_eq!(a.shape(), &[2, 3]);
    assert_eq!(a[[1, 0]], 4.0);
    assert_eq!(a[[0, 2]], 3.0);
    let e = b.to_ndarray(&[4, 2]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message
            .starts_with("buffer of 6 elements cannot take shape [4, 2]"),
        "{e}"
    );
    let e = b.to_ndarray(&[]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    // from_ndarray takes row-major order.
    let back = Buffer::from_ndarray(&a.t());
    assert_eq!(back.to_vec().unwrap(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
}

#[test]
fn a_second_binding_of_a_uid_replaces_the_first() {
    let (a, b, c) = (
        Buffer::<f32>::zeros(2),
        Buffer::<f32>::zeros(3),
        Buffer::<f32>::zeros(8),
    );
    let pack = VariantPack::new().with(1, &a).with(2, &b).with(1, &c);
    assert_eq!(pack.len(), 2);
    assert_eq!(pack.uids(), vec![2, 1]);
    assert!(VariantPack::new().is_empty());

    // Executing: the replaced (too short, wrong values) binding is not used.
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([1, 2, 2, 2])
            .packed_nchw(),
    );
    let y = g.pointwise_unary(x, PointwiseAttributes::with_mode(PointwiseMode::Neg));
    g.set_output(y, true).set_uid(y, 2);
    let h = Handle::cpu().unwrap();
    g.build(&h).unwrap();
    let wrong = Buffer::from_slice(&[9.0f32; 2]);
    let right = Buffer::from_slice(&[1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0]);
    let mut out = Buffer::<f32>::filled(8, f32::NAN);
    let mut out_wrong = Buffer::<f32>::filled(8, f32::NAN);
    let pack = VariantPack::new()
        .with(1, &wrong)
        .with(2, &mut out_wrong)
        .with(1, &right)
        .with(2, &mut out);
    g.execute(&h, pack, None).unwrap();
    assert_eq!(
        out.to_vec().unwrap(),
        vec![-1.0, 2.0, -3.0, 4.0, -5.0, 6.0, -7.0, 8.0]
    );
    assert!(
        out_wrong.to_vec().unwrap().iter().all(|v| v.is_nan()),
        "replaced output untouched"
    );
}

/// `Element::le_bytes` is the element-by-element little-endian encoding for every element
/// type, and `Buffer::copy_from_slice` overwrites a host buffer in place or refuses another
/// length without writing.
#[test]
fn le_bytes_and_copy_from_slice() {
    fn check<T: Element>(values: &[T]) {
        let mut want = vec![0u8; values.len() * T::SIZE];
        for (c, v) in want.chunks_exact_mut(T::SIZE).zip(values) {
            v.write_le(c);
        }
        assert_eq!(&*T::le_bytes(values), want.as_slice(), "{:?}", T::DATA_TYPE);
    }
    check(&[1.5f32, -0.0, f32::MAX, 3e-39]);
    check(&[2.25f64, -1e300]);
    check(&[f16::from_f32(0.5), f16::from_f32(-65504.0)]);
    check(&[bf16::from_f32(0.5), bf16::from_f32(-3.0e38)]);
    check(&[i32::MIN, 7]);
    check(&[i64::MAX, -2]);
    check(&[-128i8, 5]);
    check(&[255u8, 0]);
    check(&[true, false, true]);
    check::<f32>(&[]);

    let mut b = Buffer::<f32>::zeros(3);
    b.copy_from_slice(&[1.0, -2.0, 0.5]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [1.0, -2.0, 0.5]);
    let e = b.copy_from_slice(&[9.0; 4]).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message
            .starts_with("copy_from_slice: 4 elements given for a buffer of 3"),
        "{}",
        e.message
    );
    assert_eq!(
        b.to_vec().unwrap(),
        [1.0, -2.0, 0.5],
        "nothing written on a refusal"
    );
    let mut flags = Buffer::<bool>::zeros(2);
    flags.copy_from_slice(&[true, false]).unwrap();
    assert_eq!(flags.to_vec().unwrap(), [true, false]);
}

/// A CPU handle's `PinnedBuffer` is ordinary aligned memory: zero-filled, written like a slice,
/// and a buffer refilled from it holds its exact bytes.
#[test]
fn pinned_buffer_on_a_cpu_handle_fills_a_buffer() {
    let h = Handle::cpu().unwrap();
    for n in [0usize, 1, 17, 1000] {
        let mut p = PinnedBuffer::<f32>::alloc(&h, n).unwrap();
        assert!(!p.is_page_locked());
        assert_eq!(p.len(), n);
        assert!(p.iter().all(|v| v.to_bits() == 0), "zero-filled, n {n}");
        assert_eq!(p.as_ptr() as usize % BUFFER_ALIGNMENT, 0);
        for (i, v) in p.iter_mut().enumerate() {
            *v = i as f32 * -0.5 + 1e-3;
        }
        let mut b = Buffer::<f32>::alloc(&h, n).unwrap();
        b.copy_from_slice(&p).unwrap();
        let want: Vec<u32> = (0..n).map(|i| (i as f32 * -0.5 + 1e-3).to_bits()).collect();
        let got: Vec<u32> = b.to_vec().unwrap().iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want, "n {n}");
    }
    let mut halves = PinnedBuffer::<f16>::alloc(&h, 5).unwrap();
    halves.copy_from_slice(&[
        f16::ONE,
        f16::NEG_ONE,
        f16::MAX,
        f16::MIN_POSITIVE,
        f16::ZERO,
    ]);
    assert_eq!(
        Buffer::from_slice_on(&h, &halves)
            .unwrap()
            .to_vec()
            .unwrap(),
        [
            f16::ONE,
            f16::NEG_ONE,
            f16::MAX,
            f16::MIN_POSITIVE,
            f16::ZERO
        ]
    );
    let e = PinnedBuffer::<f64>::alloc(&h, usize::MAX / 4).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert!(
        e.message.starts_with("PinnedBuffer::alloc: "),
        "{}",
        e.message
    );
}

/// `copy_from_slice_at` writes exactly its range and refuses one that overruns (nothing
/// written).
#[test]
fn copy_from_slice_at_writes_its_range_only() {
    let h = Handle::cpu().unwrap();
    let mut b = Buffer::<f32>::alloc(&h, 10).unwrap();
    b.copy_from_slice_at(3, &[1.0, 2.0, 3.0]).unwrap();
    b.copy_from_slice_at(9, &[9.0]).unwrap();
    b.copy_from_slice_at(10, &[]).unwrap();
    assert_eq!(
        b.to_vec().unwrap(),
        [0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 9.0]
    );
    for (offset, n) in [(8usize, 3usize), (11, 0), (usize::MAX, 1)] {
        let e = b.copy_from_slice_at(offset, &vec![7.0; n]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidValue);
        assert!(
            e.message.starts_with(&format!(
                "copy_from_slice_at: {n} elements at offset {offset} overrun a buffer of 10"
            )),
            "{}",
            e.message
        );
    }
    assert_eq!(b.to_vec().unwrap()[8..], [0.0, 9.0]);
}

/// On a CPU handle `copy_from_pinned` is a plain copy of the source range; bad ranges are
/// refused with the documented messages and write nothing.
#[test]
fn copy_from_pinned_on_a_cpu_handle_copies_the_range() {
    let h = Handle::cpu().unwrap();
    let mut src = PinnedBuffer::<f32>::alloc(&h, 6).unwrap();
    src.copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let mut b = Buffer::<f32>::alloc(&h, 5).unwrap();
    b.copy_from_pinned(1, &src, 2..5).unwrap();
    assert_eq!(b.to_vec().unwrap(), [0.0, 3.0, 4.0, 5.0, 0.0]);
    let e = b.copy_from_pinned(3, &src, 0..3).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidValue);
    assert_eq!(
        e.message,
        "copy_from_pinned: 3 elements at offset 3 overrun a buffer of 5"
    );
    let e = b.copy_from_pinned(0, &src, 4..7).unwrap_err();
    assert_eq!(
        e.message,
        "copy_from_pinned: source range 4..7 is not inside a pinned buffer of 6"
    );
    assert_eq!(b.to_vec().unwrap(), [0.0, 3.0, 4.0, 5.0, 0.0]);
}
