//! The exported symbols of libhipdnn_backend.so are exactly the 38 functions of
//! upstream's hipdnn_backend.h (nothing missing, no Rust symbols leaking), and the soname carries the major version.

mod common;

const EXPECTED: [&str; 38] = [
    "hipdnnBackendCreateAndDeserializeExecutionPlan_ext",
    "hipdnnBackendCreateAndDeserializeGraph_ext",
    "hipdnnBackendCreateAndDeserializeJsonGraph_ext",
    "hipdnnBackendCreateDescriptor",
    "hipdnnBackendDestroyDescriptor",
    "hipdnnBackendExecute",
    "hipdnnBackendFinalize",
    "hipdnnBackendGetAttribute",
    "hipdnnBackendGetGlobalLogLevel_ext",
    "hipdnnBackendGetSerializedBinaryContents_ext",
    "hipdnnBackendGetSerializedBinaryGraphAndPlan_ext",
    "hipdnnBackendGetSerializedBinaryGraph_ext",
    "hipdnnBackendGetSerializedExecutionPlan_ext",
    "hipdnnBackendGetSerializedJsonGraph_ext",
    "hipdnnBackendSetAttribute",
    "hipdnnBackendSetGlobalLogLevel_ext",
    "hipdnnBackendWriteEngineRankingResults_ext",
    "hipdnnCreate",
    "hipdnnDestroy",
    "hipdnnGetEngineCount_ext",
    "hipdnnGetEngineIdByName_ext",
    "hipdnnGetEngineInfo_ext",
    "hipdnnGetEngineNameById_ext",
    "hipdnnGetErrorString",
    "hipdnnGetHeuristicPolicyCount_ext",
    "hipdnnGetHeuristicPolicyInfo_ext",
    "hipdnnGetLastErrorString",
    "hipdnnGetLoadedEnginePluginPaths_ext",
    "hipdnnGetStream",
    "hipdnnGetVersion_ext",
    "hipdnnLoggingCallback_ext",
    "hipdnnPeekLastErrorString_ext",
    "hipdnnSetEnginePluginPaths_ext",
    "hipdnnSetHeuristicPluginPaths_ext",
    "hipdnnSetPluginUnloadMode_ext",
    "hipdnnSetStream",
    "hipdnnSetUserLogCallback_ext",
    "hipdnnVersionString_ext",
];

#[test]
fn exported_symbols_equal_the_reference_function_list() {
    let lib = common::library_path();
    let out = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm runs");
    assert!(out.status.success(), "nm failed: {out:?}");
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    got.sort();
    let mut want: Vec<String> = EXPECTED.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn the_soname_carries_the_major_version() {
    let out = std::process::Command::new("readelf")
        .arg("-d")
        .arg(common::library_path())
        .output()
        .expect("readelf runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    assert!(
        text.contains(&format!("Library soname: [libhipdnn_backend.so.{major}]")),
        "{text}"
    );
}

#[test]
fn the_header_declares_every_exported_function() {
    let header = std::fs::read_to_string(common::header_dir().join("hipdnn_backend.h")).unwrap();
    for f in EXPECTED {
        assert!(header.contains(&format!(" {f}(")), "{f} is not declared");
    }
}
