//! Misuse matrix: exported functions called with null pointers, short buffers, wrong
//! descriptor types, unfinalized descriptors and out-of-range values return the exact status,
//! leave outputs untouched where a create fails, and leave a non-empty last-error text.
//! One test function: the plugin-path rules depend on no handle being alive, so the calls
//! run in one sequence in this process.
#![allow(non_snake_case)]

mod common;

use common::sym;
use hipdnn::{ConvFpropAttributes, DataType, Graph, Handle, TensorAttributes};
use std::ffi::{CStr, c_char, c_void};
use std::ptr::{null, null_mut};

type P = *mut c_void;
const OK: i32 = 0;
const NOT_INITIALIZED: i32 = 1;
const BAD_PARAM: i32 = 2;
const NULL_POINTER: i32 = 3;
const NOT_FINALIZED: i32 = 4;
const SIZE_INSUFFICIENT: i32 = 6;
const NOT_SUPPORTED: i32 = 8;
const INTERNAL_ERROR: i32 = 9;

fn last_error(clear: bool) -> String {
    let name = if clear {
        "hipdnnGetLastErrorString"
    } else {
        "hipdnnPeekLastErrorString_ext"
    };
    // SAFETY: exact signature of the export.
    let f: unsafe extern "C" fn(*mut c_char, usize) = unsafe { sym(name) };
    let mut buf = vec![0 as c_char; 2048];
    // SAFETY: the buffer holds 2048 bytes.
    unsafe { f(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: the library NUL-terminates.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Asserts `got == want`; for a failure, also that the last error is non-empty (then clears
/// it). Returns the error text.
#[track_caller]
fn expect(got: i32, want: i32, what: &str) -> String {
    assert_eq!(
        got,
        want,
        "{what}: status (last error: {})",
        last_error(false)
    );
    if want != OK {
        let e = last_error(true);
        assert!(!e.is_empty(), "{what}: empty last error");
        e
    } else {
        String::new()
    }
}

macro_rules! api {
    ($name:ident: fn($($a:ty),*) -> $r:ty) => {
        // SAFETY: the signature is the export's C signature (header).
        let $name: unsafe extern "C" fn($($a),*) -> $r = unsafe { sym(stringify!($name)) };
    };
}

fn sdk_graph_and_plan() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
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
    (
        g.to_graph_bytes().unwrap(),
        g.to_compiled_plan_binary().unwrap(),
        g.to_binary().unwrap(),
    )
}

#[test]
fn every_export_refuses_misuse_with_the_exact_status_and_a_message() {
    api!(hipdnnCreate: fn(*mut P) -> i32);
    api!(hipdnnDestroy: fn(P) -> i32);
    api!(hipdnnSetStream: fn(P, P) -> i32);
    api!(hipdnnGetStream: fn(P, *mut P) -> i32);
    api!(hipdnnBackendCreateDescriptor: fn(i32, *mut P) -> i32);
    api!(hipdnnBackendDestroyDescriptor: fn(P) -> i32);
    api!(hipdnnBackendExecute: fn(P, P, P) -> i32);
    api!(hipdnnBackendFinalize: fn(P) -> i32);
    api!(hipdnnBackendGetAttribute: fn(P, i32, i32, i64, *mut i64, P) -> i32);
    api!(hipdnnBackendSetAttribute: fn(P, i32, i32, i64, *const c_void) -> i32);
    api!(hipdnnGetErrorString: fn(i32) -> *const c_char);
    api!(hipdnnGetLastErrorString: fn(*mut c_char, usize) -> ());
    api!(hipdnnBackendCreateAndDeserializeGraph_ext: fn(*mut P, *const u8, usize) -> i32);
    api!(hipdnnBackendGetSerializedBinaryGraph_ext: fn(P, usize, *mut usize, *mut u8) -> i32);
    api!(hipdnnBackendGetSerializedJsonGraph_ext: fn(P, usize, *mut usize, *mut c_char) -> i32);
    api!(hipdnnBackendGetSerializedExecutionPlan_ext: fn(P, usize, *mut usize, *mut u8) -> i32);
    api!(hipdnnBackendCreateAndDeserializeExecutionPlan_ext: fn(P, *mut P, *const u8, usize) -> i32);
    api!(hipdnnBackendGetSerializedBinaryGraphAndPlan_ext: fn(P, P, usize, *mut usize, *mut u8) -> i32);
    api!(hipdnnBackendGetSerializedBinaryContents_ext: fn(*const u8, usize, *mut i32) -> i32);
    api!(hipdnnBackendCreateAndDeserializeJsonGraph_ext: fn(*mut P, *const c_char, usize) -> i32);
    api!(hipdnnLoggingCallback_ext: fn(i32, *const c_char) -> ());
    api!(hipdnnSetEnginePluginPaths_ext: fn(usize, *const *const c_char, i32) -> i32);
    api!(hipdnnSetHeuristicPluginPaths_ext: fn(usize, *const *const c_char, i32) -> i32);
    api!(hipdnnSetPluginUnloadMode_ext: fn(i32) -> i32);
    api!(hipdnnGetLoadedEnginePluginPaths_ext: fn(P, *mut usize, *mut *mut c_char, *mut usize) -> i32);
    api!(hipdnnSetUserLogCallback_ext: fn(Option<unsafe extern "C" fn(P, i32, *const c_char)>, i32, i32, P) -> i32);
    api!(hipdnnBackendSetGlobalLogLevel_ext: fn(i32) -> i32);
    api!(hipdnnBackendGetGlobalLogLevel_ext: fn(*mut i32) -> i32);
    api!(hipdnnGetEngineCount_ext: fn(P, *mut usize) -> i32);
    api!(hipdnnGetEngineInfo_ext: fn(P, usize, *mut i64, *mut c_char, *mut usize, *mut c_char, *mut usize, *mut c_char, *mut usize, *mut c_char, *mut usize) -> i32);
    api!(hipdnnGetEngineIdByName_ext: fn(P, *const c_char, *mut i64) -> i32);
    api!(hipdnnGetEngineNameById_ext: fn(P, i64, *mut c_char, *mut usize) -> i32);
    api!(hipdnnGetHeuristicPolicyCount_ext: fn(P, *mut usize) -> i32);
    api!(hipdnnGetHeuristicPolicyInfo_ext: fn(P, usize, *mut i64, *mut c_char, *mut usize, *mut c_char, *mut usize, *mut c_char, *mut usize, *mut c_char, *mut usize) -> i32);
    api!(hipdnnBackendWriteEngineRankingResults_ext: fn(P, P, *const i64, usize, *mut i32) -> i32);
    api!(hipdnnGetVersion_ext: fn(*mut *const c_char) -> i32);
    api!(hipdnnVersionString_ext: fn() -> *const c_char);

    let sentinel = 0x5eed as P;
    let bogus = 0x1234_5678 as P;
    let (graph_bytes, plan_bytes, container) = sdk_graph_and_plan();
    // SAFETY (whole block): every call passes pointers valid for what the header documents,
    // or deliberately null/foreign handles that the library only looks up.
    unsafe {
        // ---- version, error strings, last error
        let v = CStr::from_ptr(hipdnnVersionString_ext()).to_str().unwrap();
        assert!(
            v.starts_with("0."),
            "the frontend's version gate needs major 0: {v}"
        );
        assert_eq!(v.split('.').count(), 4, "MAJOR.MINOR.PATCH.TWEAK: {v}");
        expect(
            hipdnnGetVersion_ext(null_mut()),
            NULL_POINTER,
            "GetVersion null",
        );
        let mut vp: *const c_char = null();
        expect(hipdnnGetVersion_ext(&mut vp), OK, "GetVersion");
        assert_eq!(CStr::from_ptr(vp).to_str().unwrap(), v);
        assert_eq!(
            CStr::from_ptr(hipdnnGetErrorString(6)).to_str().unwrap(),
            "HIPDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT"
        );
        assert_eq!(
            CStr::from_ptr(hipdnnGetErrorString(99)).to_str().unwrap(),
            "HIPDNN_STATUS_UNKNOWN"
        );
        hipdnnGetLastErrorString(null_mut(), 16);
        assert!(
            last_error(false).contains("null"),
            "a null message buffer is recorded"
        );
        assert!(!last_error(true).is_empty());
        assert_eq!(last_error(true), "", "get clears");
        let mut tiny = [0x7f as c_char; 4];
        assert_eq!(hipdnnCreate(null_mut()), NULL_POINTER, "Create null");
        hipdnnGetLastErrorString(tiny.as_mut_ptr(), tiny.len());
        assert_eq!(
            tiny,
            [b'h' as c_char, b'i' as c_char, b'p' as c_char, 0],
            "truncated with a NUL"
        );

        // ---- plugin paths (no handle alive yet)
        let path = c"/opt/none/libplugin.so";
        let paths = [path.as_ptr()];
        expect(
            hipdnnSetEnginePluginPaths_ext(1, null(), 0),
            NULL_POINTER,
            "engine paths null array",
        );
        let null_entry = [null::<c_char>()];
        expect(
            hipdnnSetEnginePluginPaths_ext(1, null_entry.as_ptr(), 0),
            NULL_POINTER,
            "engine paths null entry",
        );
        expect(
            hipdnnSetEnginePluginPaths_ext(1, paths.as_ptr(), 7),
            BAD_PARAM,
            "engine paths mode",
        );
        expect(
            hipdnnSetEnginePluginPaths_ext(1, paths.as_ptr(), 0),
            OK,
            "engine paths",
        );
        expect(
            hipdnnSetHeuristicPluginPaths_ext(1, null(), 1),
            NULL_POINTER,
            "heuristic paths null",
        );
        expect(
            hipdnnSetHeuristicPluginPaths_ext(0, null(), 1),
            OK,
            "heuristic paths none",
        );
        expect(hipdnnSetPluginUnloadMode_ext(5), BAD_PARAM, "unload mode");
        expect(hipdnnSetPluginUnloadMode_ext(1), OK, "unload mode eager");

        // ---- handle
        let mut h: P = null_mut();
        expect(hipdnnCreate(&mut h), OK, "Create");
        expect(
            hipdnnSetEnginePluginPaths_ext(1, paths.as_ptr(), 0),
            NOT_SUPPORTED,
            "paths while a handle lives",
        );
        expect(hipdnnDestroy(null_mut()), NULL_POINTER, "Destroy null");
        expect(hipdnnDestroy(bogus), NULL_POINTER, "Destroy foreign");
        expect(
            hipdnnSetStream(null_mut(), sentinel),
            NULL_POINTER,
            "SetStream null",
        );
        expect(hipdnnSetStream(h, sentinel), OK, "SetStream");
        let mut s: P = null_mut();
        expect(
            hipdnnGetStream(h, null_mut()),
            NULL_POINTER,
            "GetStream null out",
        );
        expect(
            hipdnnGetStream(null_mut(), &mut s),
            NULL_POINTER,
            "GetStream null handle",
        );
        expect(hipdnnGetStream(h, &mut s), OK, "GetStream");
        assert_eq!(s, sentinel);
        expect(hipdnnSetStream(h, null_mut()), OK, "SetStream default");

        // ---- engines
        let mut n = 0usize;
        expect(
            hipdnnGetEngineCount_ext(null_mut(), &mut n),
            NULL_POINTER,
            "EngineCount null handle",
        );
        expect(
            hipdnnGetEngineCount_ext(h, null_mut()),
            NULL_POINTER,
            "EngineCount null out",
        );
        expect(hipdnnGetEngineCount_ext(h, &mut n), OK, "EngineCount");
        assert!(n >= 1);
        let mut lens = [0usize; 4];
        let [l0, l1, l2, l3] = lens.each_mut().map(|l| l as *mut usize);
        let mut id = 0i64;
        expect(
            hipdnnGetEngineInfo_ext(
                h,
                0,
                &mut id,
                null_mut(),
                l0,
                null_mut(),
                l1,
                null_mut(),
                l2,
                null_mut(),
                l3,
            ),
            OK,
            "EngineInfo query",
        );
        assert!(
            lens.iter().all(|l| *l > 1),
            "lengths include the NUL: {lens:?}"
        );
        expect(
            hipdnnGetEngineInfo_ext(
                h,
                0,
                &mut id,
                null_mut(),
                null_mut(),
                null_mut(),
                l1,
                null_mut(),
                l2,
                null_mut(),
                l3,
            ),
            NULL_POINTER,
            "EngineInfo null length",
        );
        expect(
            hipdnnGetEngineInfo_ext(
                h,
                n,
                &mut id,
                null_mut(),
                l0,
                null_mut(),
                l1,
                null_mut(),
                l2,
                null_mut(),
                l3,
            ),
            BAD_PARAM,
            "EngineInfo index",
        );
        let mut bufs: Vec<Vec<c_char>> = lens.iter().map(|l| vec![0; *l]).collect();
        let mut short = lens;
        short[0] -= 1;
        let [s0, s1, s2, s3] = short.each_mut().map(|l| l as *mut usize);
        let [b0, b1, b2, b3] = [0, 1, 2, 3].map(|i| bufs[i].as_mut_ptr());
        expect(
            hipdnnGetEngineInfo_ext(h, 0, &mut id, b0, s0, b1, s1, b2, s2, b3, s3),
            BAD_PARAM,
            "EngineInfo short",
        );
        let [l0, l1, l2, l3] = lens.each_mut().map(|l| l as *mut usize);
        expect(
            hipdnnGetEngineInfo_ext(h, 0, &mut id, b0, l0, b1, l1, b2, l2, b3, l3),
            OK,
            "EngineInfo fill",
        );
        let name = CStr::from_ptr(bufs[0].as_ptr()).to_owned();
        let mut by_name = 0i64;
        expect(
            hipdnnGetEngineIdByName_ext(h, name.as_ptr(), &mut by_name),
            OK,
            "IdByName",
        );
        assert_eq!(by_name, id);
        assert_eq!(by_name, hipdnn_backend_engine_id(name.to_str().unwrap()));
        expect(
            hipdnnGetEngineIdByName_ext(h, c"no.such.engine".as_ptr(), &mut by_name),
            NOT_SUPPORTED,
            "IdByName unknown",
        );
        expect(
            hipdnnGetEngineIdByName_ext(h, null(), &mut by_name),
            NULL_POINTER,
            "IdByName null",
        );
        let mut nl = 0usize;
        expect(
            hipdnnGetEngineNameById_ext(h, id, null_mut(), null_mut()),
            NULL_POINTER,
            "NameById null len",
        );
        expect(
            hipdnnGetEngineNameById_ext(h, id, null_mut(), &mut nl),
            OK,
            "NameById query",
        );
        assert_eq!(nl, name.to_bytes().len() + 1);
        let mut nb = vec![0 as c_char; nl];
        let mut short_len = nl - 1;
        expect(
            hipdnnGetEngineNameById_ext(h, id, nb.as_mut_ptr(), &mut short_len),
            BAD_PARAM,
            "NameById short",
        );
        expect(
            hipdnnGetEngineNameById_ext(h, id, nb.as_mut_ptr(), &mut nl),
            OK,
            "NameById",
        );
        assert_eq!(CStr::from_ptr(nb.as_ptr()), name.as_c_str());
        expect(
            hipdnnGetEngineNameById_ext(h, 12345, nb.as_mut_ptr(), &mut nl),
            NOT_SUPPORTED,
            "NameById unknown",
        );
        expect(
            hipdnnGetHeuristicPolicyCount_ext(h, &mut n),
            OK,
            "PolicyCount",
        );
        assert_eq!(n, 0);
        expect(
            hipdnnGetHeuristicPolicyInfo_ext(
                h,
                0,
                &mut id,
                null_mut(),
                l0,
                null_mut(),
                l1,
                null_mut(),
                l2,
                null_mut(),
                l3,
            ),
            BAD_PARAM,
            "PolicyInfo index",
        );
        let (mut np, mut ml) = (9usize, 9usize);
        expect(
            hipdnnGetLoadedEnginePluginPaths_ext(null_mut(), &mut np, null_mut(), &mut ml),
            NULL_POINTER,
            "LoadedPaths null handle",
        );
        expect(
            hipdnnGetLoadedEnginePluginPaths_ext(h, null_mut(), null_mut(), &mut ml),
            NULL_POINTER,
            "LoadedPaths null count",
        );
        expect(
            hipdnnGetLoadedEnginePluginPaths_ext(h, &mut np, null_mut(), &mut ml),
            OK,
            "LoadedPaths",
        );
        assert_eq!((np, ml), (0, 0));

        // ---- logging
        expect(
            hipdnnBackendSetGlobalLogLevel_ext(9),
            BAD_PARAM,
            "SetLogLevel range",
        );
        expect(
            hipdnnBackendGetGlobalLogLevel_ext(null_mut()),
            BAD_PARAM,
            "GetLogLevel null is BAD_PARAM",
        );
        expect(
            hipdnnBackendSetGlobalLogLevel_ext(0),
            OK,
            "SetLogLevel INFO",
        );
        let mut lvl = -1;
        expect(
            hipdnnBackendGetGlobalLogLevel_ext(&mut lvl),
            OK,
            "GetLogLevel",
        );
        assert_eq!(lvl, 0);
        expect(
            hipdnnSetUserLogCallback_ext(None, 0, 0, null_mut()),
            NULL_POINTER,
            "callback null",
        );
        expect(
            hipdnnSetUserLogCallback_ext(Some(log_cb), 7, 0, null_mut()),
            BAD_PARAM,
            "callback level",
        );
        let mut seen: Vec<(i32, String)> = Vec::new();
        let user = &mut seen as *mut _ as P;
        expect(
            hipdnnSetUserLogCallback_ext(Some(log_cb), 1, 0, user),
            OK,
            "callback WARN",
        );
        hipdnnLoggingCallback_ext(0, c"info is below the callback's minimum".as_ptr());
        hipdnnLoggingCallback_ext(2, c"an error text".as_ptr());
        hipdnnLoggingCallback_ext(2, null());
        expect(
            hipdnnDestroy(bogus),
            NULL_POINTER,
            "failure reaches the callback",
        );
        expect(
            hipdnnSetUserLogCallback_ext(Some(log_cb), 4, 0, user),
            OK,
            "callback OFF removes",
        );
        hipdnnLoggingCallback_ext(3, c"after removal".as_ptr());
        assert_eq!(seen[0], (2, "an error text".to_string()));
        assert!(
            seen[1].1.contains("hipdnnDestroy") && seen[1].0 == 2,
            "{seen:?}"
        );
        assert_eq!(seen.len(), 2, "{seen:?}");
        expect(
            hipdnnBackendSetGlobalLogLevel_ext(1),
            OK,
            "SetLogLevel WARN",
        );

        // ---- descriptors
        let mut d: P = sentinel;
        expect(
            hipdnnBackendCreateDescriptor(14, null_mut()),
            NULL_POINTER,
            "CreateDescriptor null",
        );
        let e = expect(
            hipdnnBackendCreateDescriptor(12, &mut d),
            NOT_SUPPORTED,
            "CreateDescriptor KERNEL_CACHE",
        );
        assert!(e.contains("KERNEL_CACHE"), "{e}");
        assert_eq!(d, sentinel, "a failed create leaves the output untouched");
        expect(
            hipdnnBackendDestroyDescriptor(null_mut()),
            NULL_POINTER,
            "DestroyDescriptor null",
        );
        expect(
            hipdnnBackendDestroyDescriptor(bogus),
            NULL_POINTER,
            "DestroyDescriptor foreign",
        );
        let mut t: P = null_mut();
        expect(hipdnnBackendCreateDescriptor(14, &mut t), OK, "tensor");
        let uid = 7i64;
        expect(
            hipdnnBackendSetAttribute(null_mut(), 1300, 3, 1, (&uid as *const i64).cast()),
            NULL_POINTER,
            "Set null desc",
        );
        expect(
            hipdnnBackendSetAttribute(t, 1300, 3, 1, null()),
            NULL_POINTER,
            "Set null array",
        );
        expect(
            hipdnnBackendSetAttribute(t, 1300, 4, 1, (&uid as *const i64).cast()),
            BAD_PARAM,
            "Set wrong type",
        );
        expect(
            hipdnnBackendSetAttribute(t, 1300, 3, 2, (&uid as *const i64).cast()),
            BAD_PARAM,
            "Set wrong count",
        );
        let e = expect(
            hipdnnBackendSetAttribute(t, 1310, 13, 1, (&t as *const P).cast()),
            NOT_SUPPORTED,
            "Set unsupported attribute",
        );
        assert!(e.contains("1310"), "{e}");
        let bad_dt = 42i32;
        expect(
            hipdnnBackendSetAttribute(t, 1302, 1, 1, (&bad_dt as *const i32).cast()),
            BAD_PARAM,
            "Set non-enumerator data type",
        );
        expect(
            hipdnnBackendFinalize(t),
            BAD_PARAM,
            "Finalize incomplete tensor",
        );
        let mut got = 0i64;
        let mut cnt = 0i64;
        expect(
            hipdnnBackendGetAttribute(t, 1302, 1, 1, &mut cnt, (&mut got as *mut i64).cast()),
            OK,
            "Get unset data type",
        );
        assert_eq!(cnt, 0, "a never-set data type answers a count of 0");
        expect(
            hipdnnBackendGetAttribute(t, 1303, 3, 0, null_mut(), null_mut()),
            NULL_POINTER,
            "count query without elementCount",
        );
        expect(
            hipdnnBackendGetAttribute(t, 1303, 3, -1, &mut cnt, (&mut got as *mut i64).cast()),
            BAD_PARAM,
            "negative request",
        );
        expect(
            hipdnnBackendFinalize(null_mut()),
            NULL_POINTER,
            "Finalize null",
        );

        let mut plan: P = null_mut();
        expect(hipdnnBackendCreateDescriptor(4, &mut plan), OK, "plan");
        let mut ws = 0i64;
        expect(
            hipdnnBackendGetAttribute(plan, 302, 3, 1, null_mut(), (&mut ws as *mut i64).cast()),
            NOT_INITIALIZED,
            "Get before finalize",
        );
        expect(
            hipdnnBackendFinalize(plan),
            BAD_PARAM,
            "Finalize plan without config",
        );
        expect(
            hipdnnBackendSetAttribute(plan, 301, 13, 1, (&t as *const P).cast()),
            BAD_PARAM,
            "ENGINE_CONFIG of a tensor",
        );
        let mut cfg: P = null_mut();
        expect(hipdnnBackendCreateDescriptor(2, &mut cfg), OK, "cfg");
        expect(
            hipdnnBackendSetAttribute(plan, 301, 13, 1, (&cfg as *const P).cast()),
            NOT_FINALIZED,
            "ENGINE_CONFIG unfinalized",
        );
        expect(
            hipdnnBackendSetAttribute(plan, 302, 3, 1, (&uid as *const i64).cast()),
            NOT_SUPPORTED,
            "WORKSPACE_SIZE is read-only",
        );
        let mut pack: P = null_mut();
        expect(hipdnnBackendCreateDescriptor(11, &mut pack), OK, "pack");
        expect(
            hipdnnBackendExecute(null_mut(), plan, pack),
            NULL_POINTER,
            "Execute null handle",
        );
        expect(
            hipdnnBackendExecute(h, null_mut(), pack),
            NULL_POINTER,
            "Execute null plan",
        );
        expect(
            hipdnnBackendExecute(h, t, pack),
            BAD_PARAM,
            "Execute wrong type",
        );
        expect(
            hipdnnBackendExecute(h, plan, pack),
            BAD_PARAM,
            "Execute unfinalized plan",
        );

        // ---- graph serialization
        let mut g: P = sentinel;
        expect(
            hipdnnBackendCreateAndDeserializeGraph_ext(
                null_mut(),
                graph_bytes.as_ptr(),
                graph_bytes.len(),
            ),
            NULL_POINTER,
            "DeserializeGraph null out",
        );
        expect(
            hipdnnBackendCreateAndDeserializeGraph_ext(&mut g, null(), 5),
            NULL_POINTER,
            "DeserializeGraph null bytes",
        );
        expect(
            hipdnnBackendCreateAndDeserializeGraph_ext(&mut g, graph_bytes.as_ptr(), 0),
            BAD_PARAM,
            "DeserializeGraph size 0",
        );
        expect(
            hipdnnBackendCreateAndDeserializeGraph_ext(&mut g, [7u8; 8].as_ptr(), 8),
            BAD_PARAM,
            "DeserializeGraph garbage",
        );
        expect(
            hipdnnBackendCreateAndDeserializeGraph_ext(
                &mut g,
                plan_bytes.as_ptr(),
                plan_bytes.len(),
            ),
            BAD_PARAM,
            "DeserializeGraph bare plan",
        );
        assert_eq!(
            g, sentinel,
            "failed deserializations leave the output untouched"
        );
        expect(
            hipdnnBackendCreateAndDeserializeGraph_ext(&mut g, container.as_ptr(), container.len()),
            OK,
            "DeserializeGraph container",
        );
        let mut size = 0usize;
        expect(
            hipdnnBackendGetSerializedBinaryGraph_ext(null_mut(), 0, &mut size, null_mut()),
            NULL_POINTER,
            "GraphBytes null desc",
        );
        expect(
            hipdnnBackendGetSerializedBinaryGraph_ext(g, 0, null_mut(), null_mut()),
            NULL_POINTER,
            "GraphBytes null size",
        );
        expect(
            hipdnnBackendGetSerializedBinaryGraph_ext(t, 0, &mut size, null_mut()),
            BAD_PARAM,
            "GraphBytes of a tensor",
        );
        expect(
            hipdnnBackendGetSerializedBinaryGraph_ext(g, 0, &mut size, null_mut()),
            OK,
            "GraphBytes size",
        );
        assert_eq!(size, graph_bytes.len());
        let mut out = vec![0u8; size];
        let mut size2 = 0usize;
        expect(
            hipdnnBackendGetSerializedBinaryGraph_ext(g, size - 1, &mut size2, out.as_mut_ptr()),
            SIZE_INSUFFICIENT,
            "GraphBytes short",
        );
        assert_eq!(size2, size, "the needed size is written before failing");
        assert!(out.iter().all(|b| *b == 0), "a short buffer is untouched");
        expect(
            hipdnnBackendGetSerializedBinaryGraph_ext(g, size, &mut size2, out.as_mut_ptr()),
            OK,
            "GraphBytes fill",
        );
        assert_eq!(
            out, graph_bytes,
            "the graph part of the SDK's container, unchanged"
        );
        expect(
            hipdnnBackendGetSerializedJsonGraph_ext(g, 0, null_mut(), null_mut()),
            NULL_POINTER,
            "Json null size",
        );
        expect(
            hipdnnBackendGetSerializedJsonGraph_ext(g, 0, &mut size, null_mut()),
            OK,
            "Json size",
        );
        let mut json = vec![0 as c_char; size];
        expect(
            hipdnnBackendGetSerializedJsonGraph_ext(g, 3, &mut size2, json.as_mut_ptr()),
            SIZE_INSUFFICIENT,
            "Json short",
        );
        expect(
            hipdnnBackendGetSerializedJsonGraph_ext(g, size, &mut size2, json.as_mut_ptr()),
            OK,
            "Json fill",
        );
        assert_eq!(json[size - 1], 0, "the size includes the NUL");
        let mut gj: P = sentinel;
        expect(
            hipdnnBackendCreateAndDeserializeJsonGraph_ext(null_mut(), json.as_ptr(), size),
            NULL_POINTER,
            "FromJson null out",
        );
        expect(
            hipdnnBackendCreateAndDeserializeJsonGraph_ext(&mut gj, null(), size),
            NULL_POINTER,
            "FromJson null",
        );
        expect(
            hipdnnBackendCreateAndDeserializeJsonGraph_ext(&mut gj, json.as_ptr(), 0),
            BAD_PARAM,
            "FromJson size 0",
        );
        expect(
            hipdnnBackendCreateAndDeserializeJsonGraph_ext(&mut gj, c"{\"nodes\": 3}".as_ptr(), 12),
            BAD_PARAM,
            "FromJson bad",
        );
        assert_eq!(gj, sentinel);
        expect(
            hipdnnBackendCreateAndDeserializeJsonGraph_ext(&mut gj, json.as_ptr(), size - 1),
            OK,
            "FromJson without the NUL",
        );
        expect(hipdnnBackendDestroyDescriptor(gj), OK, "destroy json graph");

        // ---- plan serialization and the container
        let mut p: P = sentinel;
        expect(
            hipdnnBackendCreateAndDeserializeExecutionPlan_ext(
                null_mut(),
                &mut p,
                plan_bytes.as_ptr(),
                plan_bytes.len(),
            ),
            NULL_POINTER,
            "LoadPlan null handle",
        );
        expect(
            hipdnnBackendCreateAndDeserializeExecutionPlan_ext(
                h,
                null_mut(),
                plan_bytes.as_ptr(),
                plan_bytes.len(),
            ),
            NULL_POINTER,
            "LoadPlan null out",
        );
        expect(
            hipdnnBackendCreateAndDeserializeExecutionPlan_ext(h, &mut p, null(), 4),
            NULL_POINTER,
            "LoadPlan null bytes",
        );
        expect(
            hipdnnBackendCreateAndDeserializeExecutionPlan_ext(h, &mut p, plan_bytes.as_ptr(), 0),
            BAD_PARAM,
            "LoadPlan size 0",
        );
        expect(
            hipdnnBackendCreateAndDeserializeExecutionPlan_ext(h, &mut p, [1u8; 8].as_ptr(), 8),
            BAD_PARAM,
            "LoadPlan garbage",
        );
        expect(
            hipdnnBackendCreateAndDeserializeExecutionPlan_ext(
                h,
                &mut p,
                graph_bytes.as_ptr(),
                graph_bytes.len(),
            ),
            BAD_PARAM,
            "LoadPlan bare graph",
        );
        assert_eq!(p, sentinel, "failed loads leave the output untouched");
        expect(
            hipdnnBackendCreateAndDeserializeExecutionPlan_ext(
                h,
                &mut p,
                plan_bytes.as_ptr(),
                plan_bytes.len(),
            ),
            OK,
            "LoadPlan",
        );
        expect(
            hipdnnBackendGetSerializedExecutionPlan_ext(null_mut(), 0, &mut size, null_mut()),
            NULL_POINTER,
            "PlanBytes null desc",
        );
        expect(
            hipdnnBackendGetSerializedExecutionPlan_ext(g, 0, &mut size, null_mut()),
            BAD_PARAM,
            "PlanBytes of a graph",
        );
        expect(
            hipdnnBackendGetSerializedExecutionPlan_ext(plan, 0, &mut size, null_mut()),
            NOT_INITIALIZED,
            "PlanBytes unfinalized",
        );
        expect(
            hipdnnBackendGetSerializedExecutionPlan_ext(p, 0, null_mut(), null_mut()),
            NULL_POINTER,
            "PlanBytes null size",
        );
        expect(
            hipdnnBackendGetSerializedExecutionPlan_ext(p, 0, &mut size, null_mut()),
            OK,
            "PlanBytes size",
        );
        assert_eq!(size, plan_bytes.len());
        let mut pb = vec![0u8; size];
        expect(
            hipdnnBackendGetSerializedExecutionPlan_ext(p, 1, &mut size2, pb.as_mut_ptr()),
            SIZE_INSUFFICIENT,
            "PlanBytes short",
        );
        expect(
            hipdnnBackendGetSerializedExecutionPlan_ext(p, size, &mut size2, pb.as_mut_ptr()),
            OK,
            "PlanBytes fill",
        );
        assert_eq!(pb, plan_bytes, "a loaded plan re-saves its loaded bytes");
        expect(
            hipdnnBackendSetAttribute(p, 300, 0, 1, (&h as *const P).cast()),
            NOT_INITIALIZED,
            "Set on a finalized plan",
        );
        let mut cfg_out = cfg;
        expect(
            hipdnnBackendGetAttribute(p, 301, 13, 1, &mut cnt, (&mut cfg_out as *mut P).cast()),
            NULL_POINTER,
            "a loaded plan has no engine config",
        );
        expect(
            hipdnnBackendGetAttribute(p, 306, 13, 1, &mut cnt, (&mut cfg_out as *mut P).cast()),
            NOT_SUPPORTED,
            "KERNEL_CACHE",
        );
        let mut eid = 0i64;
        expect(
            hipdnnBackendGetAttribute(p, 309, 3, 1, &mut cnt, (&mut eid as *mut i64).cast()),
            OK,
            "engine global index",
        );
        assert_eq!(eid, hipdnn_backend_engine_id("hipdnn.reference.cpu"));
        let mut uids = [0i64; 8];
        expect(
            hipdnnBackendGetAttribute(p, 308, 3, 0, &mut cnt, null_mut()),
            OK,
            "tensor uids count",
        );
        assert_eq!(cnt, 3);
        expect(
            hipdnnBackendGetAttribute(p, 308, 3, 2, &mut cnt, uids.as_mut_ptr().cast()),
            BAD_PARAM,
            "tensor uids short",
        );
        expect(
            hipdnnBackendGetAttribute(p, 308, 3, 8, &mut cnt, uids.as_mut_ptr().cast()),
            OK,
            "tensor uids",
        );
        assert_eq!(&uids[..3], &[1, 2, 3]);

        expect(
            hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(
                null_mut(),
                p,
                0,
                &mut size,
                null_mut(),
            ),
            NULL_POINTER,
            "Container null graph",
        );
        expect(
            hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(g, p, 0, null_mut(), null_mut()),
            NULL_POINTER,
            "Container null size",
        );
        expect(
            hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(g, bogus, 0, &mut size, null_mut()),
            NULL_POINTER,
            "Container foreign plan",
        );
        expect(
            hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(g, plan, 0, &mut size, null_mut()),
            NOT_INITIALIZED,
            "Container unfinalized plan",
        );
        expect(
            hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(g, p, 0, &mut size, null_mut()),
            OK,
            "Container size",
        );
        let mut cb = vec![0u8; size];
        expect(
            hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(
                g,
                p,
                size - 1,
                &mut size2,
                cb.as_mut_ptr(),
            ),
            SIZE_INSUFFICIENT,
            "Container short",
        );
        expect(
            hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(
                g,
                p,
                size,
                &mut size2,
                cb.as_mut_ptr(),
            ),
            OK,
            "Container fill",
        );
        assert_eq!(
            cb, container,
            "the SDK's container re-saves byte-identically through the C ABI"
        );
        let mut flags = -1;
        expect(
            hipdnnBackendGetSerializedBinaryContents_ext(null(), 8, &mut flags),
            NULL_POINTER,
            "Contents null blob",
        );
        expect(
            hipdnnBackendGetSerializedBinaryContents_ext(cb.as_ptr(), cb.len(), null_mut()),
            NULL_POINTER,
            "Contents null flags",
        );
        expect(
            hipdnnBackendGetSerializedBinaryContents_ext(cb.as_ptr(), cb.len(), &mut flags),
            OK,
            "Contents",
        );
        assert_eq!(flags, 3);
        expect(
            hipdnnBackendGetSerializedBinaryContents_ext(cb.as_ptr(), 4, &mut flags),
            OK,
            "Contents 4 bytes",
        );
        assert_eq!(flags, 1);
        expect(
            hipdnnBackendGetSerializedBinaryContents_ext(cb.as_ptr(), 16, &mut flags),
            BAD_PARAM,
            "Contents truncated container",
        );
        expect(
            hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(
                g,
                null_mut(),
                0,
                &mut size,
                null_mut(),
            ),
            OK,
            "graph-only container",
        );
        let mut go = vec![0u8; size];
        expect(
            hipdnnBackendGetSerializedBinaryGraphAndPlan_ext(
                g,
                null_mut(),
                size,
                &mut size2,
                go.as_mut_ptr(),
            ),
            OK,
            "graph-only fill",
        );
        expect(
            hipdnnBackendGetSerializedBinaryContents_ext(go.as_ptr(), go.len(), &mut flags),
            OK,
            "graph-only contents",
        );
        assert_eq!(flags, 1);
        assert_eq!(&go[4..8], b"HDGP");

        // ---- engine ranking (fail-soft)
        let mut outcome = -1;
        let ids = [eid];
        expect(
            hipdnnBackendWriteEngineRankingResults_ext(
                null_mut(),
                g,
                ids.as_ptr(),
                1,
                &mut outcome,
            ),
            NULL_POINTER,
            "Ranking null handle",
        );
        expect(
            hipdnnBackendWriteEngineRankingResults_ext(h, g, ids.as_ptr(), 1, &mut outcome),
            OK,
            "Ranking unfinalized",
        );
        assert_eq!(outcome, 2);
        expect(
            hipdnnBackendSetAttribute(g, 600, 0, 1, (&h as *const P).cast()),
            OK,
            "graph handle",
        );
        expect(hipdnnBackendFinalize(g), OK, "graph finalize");
        expect(hipdnnBackendFinalize(g), BAD_PARAM, "graph finalize twice");
        expect(
            hipdnnBackendWriteEngineRankingResults_ext(h, g, null(), 1, &mut outcome),
            OK,
            "Ranking no ids",
        );
        assert_eq!(outcome, 3);
        expect(
            hipdnnBackendWriteEngineRankingResults_ext(h, g, ids.as_ptr(), 1, &mut outcome),
            OK,
            "Ranking write",
        );
        assert_eq!(outcome, 0);
        expect(
            hipdnnBackendWriteEngineRankingResults_ext(h, g, ids.as_ptr(), 1, &mut outcome),
            OK,
            "Ranking again",
        );
        assert_eq!(outcome, 4);
        expect(
            hipdnnBackendWriteEngineRankingResults_ext(h, g, ids.as_ptr(), 1, null_mut()),
            OK,
            "Ranking null outcome",
        );

        // ---- engine descriptor on the finalized graph
        let mut engine: P = null_mut();
        expect(hipdnnBackendCreateDescriptor(1, &mut engine), OK, "engine");
        expect(
            hipdnnBackendSetAttribute(engine, 1000, 13, 1, (&t as *const P).cast()),
            BAD_PARAM,
            "engine graph of a tensor",
        );
        expect(
            hipdnnBackendSetAttribute(engine, 1000, 13, 1, (&g as *const P).cast()),
            OK,
            "engine graph",
        );
        let unknown = 99i64;
        expect(
            hipdnnBackendSetAttribute(engine, 1001, 3, 1, (&unknown as *const i64).cast()),
            OK,
            "engine index",
        );
        expect(
            hipdnnBackendFinalize(engine),
            NOT_SUPPORTED,
            "unknown engine index",
        );
        expect(
            hipdnnBackendSetAttribute(engine, 1001, 3, 1, (&eid as *const i64).cast()),
            OK,
            "engine index",
        );
        expect(hipdnnBackendFinalize(engine), OK, "engine finalize");
        let mut back: [P; 1] = [null_mut()];
        expect(
            hipdnnBackendGetAttribute(engine, 1000, 13, 1, &mut cnt, back.as_mut_ptr().cast()),
            OK,
            "engine graph back",
        );
        let mut hb: P = null_mut();
        expect(
            hipdnnBackendGetAttribute(back[0], 600, 0, 1, &mut cnt, (&mut hb as *mut P).cast()),
            OK,
            "graph handle back",
        );
        assert_eq!(
            hb, h,
            "the engine's graph carries the handle it was finalized on"
        );
        let mut gb_size = 0usize;
        expect(
            hipdnnBackendGetSerializedBinaryGraph_ext(back[0], 0, &mut gb_size, null_mut()),
            OK,
            "graph back bytes",
        );
        assert_eq!(gb_size, graph_bytes.len());
        expect(
            hipdnnBackendDestroyDescriptor(back[0]),
            OK,
            "destroy graph back",
        );
        let mut nm = [0u8; 64];
        expect(
            hipdnnBackendGetAttribute(engine, 1008, 19, 64, &mut cnt, nm.as_mut_ptr().cast()),
            OK,
            "engine name",
        );
        assert_eq!(&nm[..cnt as usize], b"hipdnn.reference.cpu\0");
        let mut op_type = -1i32;
        let mut conv: P = null_mut();
        expect(hipdnnBackendCreateDescriptor(15, &mut conv), OK, "conv op");
        expect(
            hipdnnBackendGetAttribute(
                conv,
                60200,
                10001,
                1,
                &mut cnt,
                (&mut op_type as *mut i32).cast(),
            ),
            OK,
            "operation type",
        );
        assert_eq!(op_type, 1, "HIPDNN_OPERATION_TYPE_CONVOLUTION_FORWARD_EXT");
        let mode = 2i32;
        expect(
            hipdnnBackendSetAttribute(conv, 1501, 24, 1, (&mode as *const i32).cast()),
            BAD_PARAM,
            "conv mode 2 is not a C enumerator",
        );
        let mode = 0i32;
        expect(
            hipdnnBackendSetAttribute(conv, 1501, 24, 1, (&mode as *const i32).cast()),
            OK,
            "conv mode CONVOLUTION",
        );
        let mut mode_back = -1i32;
        expect(
            hipdnnBackendGetAttribute(
                conv,
                1501,
                24,
                1,
                &mut cnt,
                (&mut mode_back as *mut i32).cast(),
            ),
            OK,
            "conv mode back",
        );
        assert_eq!(mode_back, 0);
        expect(
            hipdnnBackendSetAttribute(conv, 1401, 13, 1, (&t as *const P).cast()),
            NOT_FINALIZED,
            "op tensor unfinalized",
        );
        expect(hipdnnBackendFinalize(conv), BAD_PARAM, "op without tensors");

        for x in [t, plan, cfg, pack, g, p, engine, conv] {
            expect(hipdnnBackendDestroyDescriptor(x), OK, "destroy");
        }
        expect(
            hipdnnBackendDestroyDescriptor(t),
            NULL_POINTER,
            "destroy twice",
        );
        expect(hipdnnDestroy(h), OK, "Destroy");
        expect(hipdnnDestroy(h), NULL_POINTER, "Destroy twice");
        let _ = INTERNAL_ERROR;
    }
}

fn hipdnn_backend_engine_id(name: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as i64
}

unsafe extern "C" fn log_cb(user: P, sev: i32, msg: *const c_char) {
    // SAFETY: `user` is the test's Vec, alive while the callback is registered; `msg` is a
    // NUL-terminated string valid for the call.
    unsafe {
        let v = &mut *(user as *mut Vec<(i32, String)>);
        v.push((sev, CStr::from_ptr(msg).to_string_lossy().into_owned()));
    }
}
