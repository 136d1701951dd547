//! A variant pack through the C ABI: a plan tensor without a buffer is refused with BAD_PARAM
//! naming its UID, before the engine runs (issue 32 point 6; it was the engine's refusal,
//! PLUGIN_ERROR).
#![allow(non_snake_case)]

mod common;

use common::sym;
use hipdnn::{ConvFpropAttributes, DataType, Graph, Handle, TensorAttributes};
use std::ffi::{CStr, c_char, c_void};
use std::ptr::null_mut;

type P = *mut c_void;
const OK: i32 = 0;
const BAD_PARAM: i32 = 2;
const INT64: i32 = 3;
const VOID_PTR: i32 = 6;
const VARIANT_PACK: i32 = 11;
const UNIQUE_IDS: i32 = 700;
const DATA_POINTERS: i32 = 701;

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
    let h = Handle::cpu().unwrap();
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([1, 2, 4, 4])
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
