//! A variant pack through the C ABI: a plan tensor without a buffer is refused with BAD_PARAM
//! naming its UID, before the engine runs (issue 32 point 6; it was the engine's refusal,
//! PLUGIN_ERROR); execute-time shape overrides (`VARIANT_PACK_OVERRIDE_*_EXT`, RFC 0008).
#![allow(non_snake_case)]

mod common;

use common::sym;
use hipdnn::{ConvFpropAttributes, DataType, Graph, Handle, TensorAttributes};
use std::ffi::{CStr, c_char, c_void};
use std::ptr::null_mut;

type P = *mut c_void;
const OK: i32 = 0;
const BAD_PARAM: i32 = 2;
const OUT_OF_BOUND: i32 = 5;
const NOT_SUPPORTED: i32 = 8;
const INT64: i32 = 3;
const VOID_PTR: i32 = 6;
const VARIANT_PACK: i32 = 11;
const UNIQUE_IDS: i32 = 700;
const DATA_POINTERS: i32 = 701;
const OVERRIDE_UNIQUE_IDS: i32 = 704;
const OVERRIDE_SHAPES: i32 = 705;
const OVERRIDE_STRIDES: i32 = 706;
const OVERRIDE_LENGTHS: i32 = 707;

fn last_error() -> String {
    // SAFETY: exact signature of the export.
    let f: unsafe extern "C" fn(*mut c_char, usize) = unsafe { sym("hipdnnGetLastErrorString") };
    let mut buf = vec![0 as c_char; 2048];
    // SAFETY: the buffer holds 2048 bytes; the library NUL-terminates.
    unsafe {
        f(buf.as_mut_ptr(), buf.len());
        CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
    }
}

/// A CPU conv plan (x uid 1 [1,2,4,4], w uid 2 [2,2,3,3], y uid 3), saved by the SDK.
fn conv_plan() -> Vec<u8> {
    conv_plan_at(1, 4, false)
}

/// The conv plan of [`conv_plan`] with x `[n, 2, hw, hw]`, y `[n, 2, hw, hw]`, and the
/// override-shape flag when `flag`.
fn conv_plan_at(n: i64, hw: i64, flag: bool) -> Vec<u8> {
    let h = Handle::cpu().unwrap();
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float)
        .set_override_shape_enabled(flag);
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([n, 2, hw, hw])
            .packed_nchw(),
    );
    let w = g.tensor(
        TensorAttributes::new("w")
            .uid(2)
            .dims([2, 2, 3, 3])
            .packed_nchw(),
    );
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    g.set_output(y, true).set_uid(y, 3);
    g.build(&h).unwrap();
    g.to_compiled_plan_binary().unwrap()
}

/// Executes the loaded plan with a pack binding `uids` to `ptrs`; the status.
fn execute_with(plan_bytes: &[u8], uids: &[i64], ptrs: &[P]) -> i32 {
    execute_overriding(plan_bytes, uids, ptrs, None)
}

/// The four override attributes of a pack: unique ids, flat shapes, flat strides, lengths.
type Overrides<'a> = (&'a [i64], &'a [i64], &'a [i64], &'a [i64]);

/// [`execute_with`], setting the override attributes `ov` on the pack first.
fn execute_overriding(plan_bytes: &[u8], uids: &[i64], ptrs: &[P], ov: Option<Overrides>) -> i32 {
    // SAFETY: the signatures are the exports' C signatures (header); every pointer passed is
    // valid for the call, the buffers for their tensors' extents.
    unsafe {
        let create: unsafe extern "C" fn(*mut P) -> i32 = sym("hipdnnCreate");
        let destroy: unsafe extern "C" fn(P) -> i32 = sym("hipdnnDestroy");
        let load: unsafe extern "C" fn(P, *mut P, *const u8, usize) -> i32 =
            sym("hipdnnBackendCreateAndDeserializeExecutionPlan_ext");
        let create_desc: unsafe extern "C" fn(i32, *mut P) -> i32 =
            sym("hipdnnBackendCreateDescriptor");
        let destroy_desc: unsafe extern "C" fn(P) -> i32 = sym("hipdnnBackendDestroyDescriptor");
        let set: unsafe extern "C" fn(P, i32, i32, i64, *const c_void) -> i32 =
            sym("hipdnnBackendSetAttribute");
        let finalize: unsafe extern "C" fn(P) -> i32 = sym("hipdnnBackendFinalize");
        let execute: unsafe extern "C" fn(P, P, P) -> i32 = sym("hipdnnBackendExecute");

        let mut h: P = null_mut();
        assert_eq!(create(&mut h), OK, "{}", last_error());
        let mut plan: P = null_mut();
        assert_eq!(
            load(h, &mut plan, plan_bytes.as_ptr(), plan_bytes.len()),
            OK,
            "{}",
            last_error()
        );
        let mut pack: P = null_mut();
        assert_eq!(create_desc(VARIANT_PACK, &mut pack), OK);
        let n = uids.len() as i64;
        assert_eq!(set(pack, UNIQUE_IDS, INT64, n, uids.as_ptr().cast()), OK);
        assert_eq!(
            set(pack, DATA_POINTERS, VOID_PTR, n, ptrs.as_ptr().cast()),
            OK
        );
        if let Some((ids, shapes, strides, lengths)) = ov {
            for (attr, v) in [
                (OVERRIDE_UNIQUE_IDS, ids),
                (OVERRIDE_SHAPES, shapes),
                (OVERRIDE_STRIDES, strides),
                (OVERRIDE_LENGTHS, lengths),
            ] {
                assert_eq!(
                    set(pack, attr, INT64, v.len() as i64, v.as_ptr().cast()),
                    OK
                );
            }
        }
        assert_eq!(finalize(pack), OK, "{}", last_error());
        let status = execute(h, plan, pack);
        assert_eq!(destroy_desc(pack), OK);
        assert_eq!(destroy_desc(plan), OK);
        assert_eq!(destroy(h), OK);
        status
    }
}

#[test]
fn a_plan_tensor_missing_from_the_variant_pack_is_bad_param_naming_its_uid() {
    let plan = conv_plan();
    let mut x = vec![1.0f32; 2 * 4 * 4];
    let mut w = vec![1.0f32; 2 * 2 * 3 * 3];
    let mut y = vec![0.0f32; 2 * 4 * 4];
    let (px, pw, py): (P, P, P) = (
        x.as_mut_ptr().cast(),
        w.as_mut_ptr().cast(),
        y.as_mut_ptr().cast(),
    );
    let status = execute_with(&plan, &[1, 3], &[px, py]);
    let e = last_error();
    assert_eq!(status, BAD_PARAM, "{e}");
    assert_eq!(
        e,
        "hipdnnBackendExecute: the variant pack has no buffer for tensor uid 2 ('w'), a \
         non-virtual tensor of the plan; add it to VARIANT_PACK_UNIQUE_IDS and \
         VARIANT_PACK_DATA_POINTERS"
    );
    assert!(y.iter().all(|&v| v == 0.0), "nothing was written");

    // With every tensor bound the same plan runs: the centre of a 3x3 all-ones conv over two
    // all-ones channels is 18.
    assert_eq!(
        execute_with(&plan, &[1, 2, 3], &[px, pw, py]),
        OK,
        "{}",
        last_error()
    );
    assert_eq!(y[5], 18.0);
}

/// y of the conv plan at `(n, hw)` built for that shape, on all-`x`/all-`w` inputs through the
/// SDK: the reference for the override runs.
fn sdk_conv(n: usize, hw: usize, x: &[f32], w: &[f32]) -> Vec<f32> {
    let h = Handle::cpu().unwrap();
    let bytes = conv_plan_at(n as i64, hw as i64, false);
    let g = Graph::from_compiled_plan_binary(&h, &bytes).unwrap();
    let (xb, wb) = (hipdnn::Buffer::from_slice(x), hipdnn::Buffer::from_slice(w));
    let mut yb = hipdnn::Buffer::<f32>::zeros(n * 2 * hw * hw);
    let pack = hipdnn::VariantPack::new()
        .input(1, &xb)
        .input(2, &wb)
        .output(3, &mut yb);
    g.execute(&h, pack, None).unwrap();
    yb.to_vec().unwrap()
}

#[test]
fn shape_overrides_run_a_plan_built_larger_at_the_pack_s_shapes() {
    // Built for x, y [2, 2, 8, 8]; run at [1, 2, 5, 5] with buffers of exactly that extent.
    let plan = conv_plan_at(2, 8, true);
    let mut x: Vec<f32> = (0..50).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut w: Vec<f32> = (0..36).map(|i| (i % 5) as f32 * 0.25).collect();
    let mut y = vec![f32::NAN; 50];
    let ptrs: [P; 3] = [
        x.as_mut_ptr().cast(),
        w.as_mut_ptr().cast(),
        y.as_mut_ptr().cast(),
    ];
    let dims = [1, 2, 5, 5, 1, 2, 5, 5];
    let strides = [50, 25, 5, 1, 50, 25, 5, 1];
    let ov = (&[1i64, 3][..], &dims[..], &strides[..], &[4i64, 4][..]);
    let status = execute_overriding(&plan, &[1, 2, 3], &ptrs, Some(ov));
    assert_eq!(status, OK, "{}", last_error());
    assert_eq!(y, sdk_conv(1, 5, &x, &w), "bits of a build at [1, 2, 5, 5]");

    // The same pack on a plan built without the flag: NOT_SUPPORTED, nothing written.
    let y_before = y.clone();
    y.fill(-1.0);
    let unflagged = conv_plan_at(2, 8, false);
    let status = execute_overriding(&unflagged, &[1, 2, 3], &ptrs, Some(ov));
    assert_eq!(status, NOT_SUPPORTED, "{}", last_error());
    assert_eq!(
        last_error(),
        "hipdnnBackendExecute: shape overrides need a plan whose graph was built with the \
         override-shape flag (OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED_EXT)"
    );
    assert!(y.iter().all(|&v| v == -1.0), "nothing was written");
    assert_ne!(y_before, y);
}

#[test]
fn malformed_override_attributes_are_refused_before_the_engine_runs() {
    let plan = conv_plan_at(2, 8, true);
    let mut x = vec![1.0f32; 2 * 2 * 64];
    let mut w = vec![1.0f32; 36];
    let mut y = vec![-1.0f32; 2 * 2 * 64];
    let ptrs: [P; 3] = [
        x.as_mut_ptr().cast(),
        w.as_mut_ptr().cast(),
        y.as_mut_ptr().cast(),
    ];
    let run = |ov: Overrides| {
        (
            execute_overriding(&plan, &[1, 2, 3], &ptrs, Some(ov)),
            last_error(),
        )
    };
    let (d, s) = ([1i64, 2, 5, 5], [50i64, 25, 5, 1]);
    assert_eq!(
        run((&[1], &d, &s, &[4, 4])),
        (
            BAD_PARAM,
            "hipdnnBackendExecute: VARIANT_PACK: 1 override unique ids but 2 override lengths"
                .to_string()
        )
    );
    assert_eq!(
        run((&[1], &d, &s, &[-1])),
        (
            OUT_OF_BOUND,
            "hipdnnBackendExecute: VARIANT_PACK: override length -1 is outside 0..=4294967295"
                .to_string()
        )
    );
    assert_eq!(
        run((&[1], &d, &s[..3], &[4])),
        (
            BAD_PARAM,
            "hipdnnBackendExecute: VARIANT_PACK: override lengths sum to 4, but 4 override shape \
             values and 3 override stride values are set"
                .to_string()
        )
    );
    let (status, e) = run((&[1], &[1, 2, 9, 5], &s, &[4]));
    assert_eq!(status, BAD_PARAM, "{e}");
    assert!(
        e.starts_with(
            "hipdnnBackendExecute: shape override of tensor uid 1: dim 2 is 9, larger than the \
             built maximum 8"
        ),
        "{e}"
    );
    // x shortened but not y: the conv node refuses the shapes (BAD_PARAM, the node named).
    let (status, e) = run((&[1], &d, &s, &[4]));
    assert_eq!(status, BAD_PARAM, "{e}");
    assert!(
        e.starts_with(
            "hipdnnBackendExecute: shape override: the graph does not run at these shapes: \
             conv_fprop"
        ),
        "{e}"
    );
    assert!(y.iter().all(|&v| v == -1.0), "nothing was written");
}
