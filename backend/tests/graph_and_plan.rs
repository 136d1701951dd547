//! `HDGP` graph-and-plan container: writer layout, detection, verification, cutting for plan and
//! graph loads, content flags (reference `backend-c-api.md` §6, §8; upstream PR #14517).

use std::io::Write as _;

mod common;

use common::*;
use hipdnn_backend::hdgp::{graph_part, plan_part};
use hipdnn_backend::{
    CONTENT_EXECUTION_PLAN, CONTENT_GRAPH, ExecutionPlanDescriptor, GraphAndPlan, OperationGraph,
    Status, is_graph_and_plan_container, serialized_contents, write_graph_and_plan,
};
use hipdnn_schema::graph_and_plan::SerializedGraphAndPlan;

fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    inner.as_ptr() as usize - outer.as_ptr() as usize
}

fn saved_plan() -> Vec<u8> {
    let (handle, _engine) = counting_handle();
    built_plan(&handle).to_bytes().unwrap()
}

// ---- writer ----

#[test]
fn container_with_graph_and_plan_verifies_and_both_blobs_are_8_aligned() {
    let graph = graph_bytes();
    let plan = saved_plan();
    let c = write_graph_and_plan(&graph, Some(&plan));
    assert_eq!(&c[4..8], b"HDGP");
    assert!(
        flatbuffers::root::<SerializedGraphAndPlan>(&c).is_ok(),
        "generated verifier"
    );
    let gp = GraphAndPlan::parse(&c).unwrap();
    let (g, p) = (gp.graph_blob().unwrap(), gp.plan_blob().unwrap());
    assert_eq!(g, &graph[..]);
    assert_eq!(p, &plan[..]);
    assert_eq!(offset_in(&c, g) % 8, 0, "graph data 8-aligned");
    assert_eq!(offset_in(&c, p) % 8, 0, "plan data 8-aligned");
    assert_eq!(gp.content_flags(), CONTENT_GRAPH | CONTENT_EXECUTION_PLAN);
}

#[test]
fn container_blobs_stay_8_aligned_for_every_graph_length() {
    let plan = saved_plan();
    for glen in 1..=17 {
        let graph: Vec<u8> = (0..glen as u8).collect();
        let c = write_graph_and_plan(&graph, Some(&plan));
        let gp = GraphAndPlan::parse(&c).unwrap();
        assert_eq!(gp.graph_blob().unwrap(), &graph[..]);
        assert_eq!(gp.plan_blob().unwrap(), &plan[..]);
        assert_eq!(
            offset_in(&c, gp.plan_blob().unwrap()) % 8,
            0,
            "graph length {glen}"
        );
        assert_eq!(c.len() % 4, 0);
    }
}

#[test]
fn graph_only_container_when_there_is_no_plan() {
    let graph = graph_bytes();
    for plan in [None, Some(&[][..])] {
        let c = write_graph_and_plan(&graph, plan);
        assert!(is_graph_and_plan_container(&c));
        let gp = GraphAndPlan::parse(&c).unwrap();
        assert_eq!(gp.graph_blob().unwrap(), &graph[..]);
        assert_eq!(gp.plan_blob(), None);
        assert_eq!(serialized_contents(&c).unwrap(), CONTENT_GRAPH);
    }
}

#[test]
fn container_passes_flatc() {
    let Ok(out) = std::process::Command::new("flatc")
        .arg("--version")
        .output()
    else {
        drop(writeln!(std::io::stderr(), "skipped: flatc not found"));
        return;
    };
    assert!(out.status.success());
    let dir = std::env::temp_dir().join(format!("hdgp-flatc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let schema = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../schema/fbs/serialized_graph_and_plan.fbs"
    );
    for (name, plan) in [("both", Some(saved_plan())), ("graph_only", None)] {
        let bin = dir.join(format!("{name}.bin"));
        std::fs::write(&bin, write_graph_and_plan(&graph_bytes(), plan.as_deref())).unwrap();
        let out = std::process::Command::new("flatc")
            .args(["--json", "--raw-binary", "-o"])
            .arg(&dir)
            .arg(schema)
            .arg("--")
            .arg(&bin)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "flatc refused {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
        assert!(json.contains("graph_blob"));
        assert_eq!(json.contains("plan_blob"), plan.is_some());
    }
    std::fs::remove_dir_all(&dir).ok();
}

// ---- detection and content flags ----

#[test]
fn query_contents_follows_upstream() {
    let graph = graph_bytes();
    let plan = saved_plan();
    let both = write_graph_and_plan(&graph, Some(&plan));
    assert_eq!(serialized_contents(&both).unwrap(), 3);
    assert_eq!(
        serialized_contents(&write_graph_and_plan(&graph, None)).unwrap(),
        1
    );
    assert_eq!(serialized_contents(&graph).unwrap(), 1, "legacy bare graph");
    assert_eq!(
        serialized_contents(&[1, 2, 3, 4]).unwrap(),
        1,
        "4-byte blob"
    );
    assert_eq!(
        serialized_contents(&[7u8; 8]).unwrap(),
        1,
        "8 garbage bytes"
    );
    assert_eq!(
        serialized_contents(&plan).unwrap(),
        1,
        "bare plan (must not be routed here)"
    );
    let e = serialized_contents(&both[..16]).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("unable to verify the serialized graph-and-plan container")
    );
}

#[test]
fn detection_needs_eight_bytes_and_the_exact_marker() {
    assert!(!is_graph_and_plan_container(&[]));
    assert!(!is_graph_and_plan_container(b"abc"));
    assert!(!is_graph_and_plan_container(&[0u8; 16]));
    assert!(!is_graph_and_plan_container(b"\x10\0\0\0HDDP"));
    assert!(!is_graph_and_plan_container(&graph_bytes()));
    assert!(!is_graph_and_plan_container(&saved_plan()));
    let eight = b"\x10\0\0\0HDGP";
    assert!(is_graph_and_plan_container(eight));
    let e = GraphAndPlan::parse(eight).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("unable to verify the serialized graph-and-plan container")
    );
}

#[test]
fn non_containers_pass_through_both_cuts() {
    let graph = graph_bytes();
    let plan = saved_plan();
    assert_eq!(graph_part(&graph).unwrap(), &graph[..]);
    assert_eq!(plan_part(&plan).unwrap(), &plan[..]);
}

#[test]
fn every_truncation_of_a_container_is_refused() {
    let c = write_graph_and_plan(&graph_bytes(), Some(&saved_plan()));
    for n in 8..c.len() {
        let e = GraphAndPlan::parse(&c[..n]).unwrap_err();
        assert_eq!(e.status, Status::BadParam, "truncation to {n}");
    }
}

// ---- plan load ----

#[test]
fn plan_load_from_a_container_resaves_exactly_the_plan_bytes_inside_it() {
    let graph = graph_bytes();
    let plan = saved_plan();
    let c = write_graph_and_plan(&graph, Some(&plan));
    let (handle, engine) = counting_handle();
    let loaded = ExecutionPlanDescriptor::from_bytes(&handle, &c).unwrap();
    assert_eq!(
        loaded.to_bytes().unwrap(),
        plan,
        "re-save returns the plan, not the container"
    );
    assert_eq!(loaded.serialize_into(None).unwrap(), plan.len());
    assert_eq!(engine.saves(), 0);
    assert_eq!(engine.loads(), 1);
}

#[test]
fn plan_load_from_a_bare_v1_blob_still_works() {
    let (handle, _engine) = counting_handle();
    let v1 = Env::v1().bytes();
    let loaded = ExecutionPlanDescriptor::from_bytes(&handle, &v1).unwrap();
    assert_eq!(loaded.workspace_size(), 1024);
}

#[test]
fn plan_load_from_a_container_without_a_plan_is_bad_param() {
    let c = write_graph_and_plan(&graph_bytes(), None);
    let (handle, engine) = counting_handle();
    let e = ExecutionPlanDescriptor::from_bytes(&handle, &c).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message.starts_with("container carries no execution plan"),
        "{}",
        e.message
    );
    assert_eq!(engine.loads(), 0);
}

#[test]
fn plan_load_rejects_an_identified_but_corrupt_container() {
    let c = write_graph_and_plan(&graph_bytes(), Some(&saved_plan()));
    let (handle, engine) = counting_handle();
    let e = ExecutionPlanDescriptor::from_bytes(&handle, &c[..16]).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("unable to verify the serialized graph-and-plan container")
    );
    assert_eq!(engine.loads(), 0);
}

// ---- graph load ----

/// A graph load as a caller does it: the container codec cuts the graph part (a bare graph
/// passes through), then the graph loader verifies it.
fn load_graph(bytes: &[u8]) -> Result<OperationGraph, hipdnn_backend::BackendError> {
    OperationGraph::from_bytes(graph_part(bytes)?)
}

#[test]
fn graph_load_from_a_container_extracts_the_graph() {
    let graph = graph_bytes();
    let c = write_graph_and_plan(&graph, Some(&saved_plan()));
    let g = load_graph(&c).unwrap();
    assert_eq!(g.bytes(), &graph[..]);
    assert_eq!(g.tensor_uids(), &UIDS);
    assert_eq!(g.graph().nodes().unwrap().len(), 1);
}

#[test]
fn graph_load_from_a_legacy_bare_blob_is_unchanged() {
    let graph = graph_bytes();
    let g = load_graph(&graph).unwrap();
    assert_eq!(g.bytes(), &graph[..]);
    assert_eq!(g.tensor_alignments(), &ALIGNMENTS);
}

#[test]
fn graph_load_rejects_a_container_with_an_empty_graph_blob() {
    let c = write_graph_and_plan(&[], Some(&saved_plan()));
    let e = load_graph(&c).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message.starts_with("container carries no graph"),
        "{}",
        e.message
    );
}

#[test]
fn graph_load_rejects_an_identified_but_corrupt_container() {
    let c = write_graph_and_plan(&graph_bytes(), None);
    let e = load_graph(&c[..20]).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("unable to verify the serialized graph-and-plan container")
    );
}

#[test]
fn bare_plan_given_to_the_graph_loader_is_bad_param_and_no_graph() {
    // A plan written by our own writer (neither format has an identifier): refused by the
    // Graph verifier or the graph checks (PR #14517).
    for plan in [saved_plan(), Env::v1().bytes()] {
        let e = load_graph(&plan).unwrap_err();
        assert_eq!(e.status, Status::BadParam);
        assert!(
            e.message.starts_with("serialized graph is invalid"),
            "{}",
            e.message
        );
    }
}

// ---- whole container round trip ----

#[test]
fn graph_and_plan_container_resaves_byte_identically_while_the_graph_is_unchanged() {
    let (handle, engine) = counting_handle();
    let graph = graph_bytes();
    let plan = built_plan(&handle).to_bytes().unwrap();
    let original = write_graph_and_plan(&graph, Some(&plan));

    let (handle2, engine2) = counting_handle();
    let gp = GraphAndPlan::parse(&original).unwrap();
    let loaded_graph = OperationGraph::from_bytes(gp.graph_blob().unwrap()).unwrap();
    let loaded_plan = ExecutionPlanDescriptor::from_bytes(&handle2, &original).unwrap();
    let again = write_graph_and_plan(loaded_graph.bytes(), Some(&loaded_plan.to_bytes().unwrap()));
    assert_eq!(again, original);
    assert_eq!(engine2.saves(), 0);
    assert_eq!(engine.saves(), 1);
    // Second generation in a fresh handle: the plan part still equals the original plan.
    let (handle3, engine3) = counting_handle();
    let reloaded = ExecutionPlanDescriptor::from_bytes(&handle3, &again).unwrap();
    assert_eq!(reloaded.to_bytes().unwrap(), plan);
    assert_eq!(engine3.saves(), 0);
}

#[test]
fn graph_without_nodes_is_bad_param() {
    use hipdnn_schema::graph::{Graph, GraphArgs};
    let mut fbb = flatbuffers::FlatBufferBuilder::new();
    let g = Graph::create(&mut fbb, &GraphArgs::default());
    fbb.finish_minimal(g);
    let e = load_graph(fbb.finished_data()).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("serialized graph is invalid: the graph has no nodes")
    );
}

#[test]
fn hdgp_writer_bytes_are_pinned() {
    // If this test fails, you changed the container layout: containers written before still
    // load (the reader does not depend on this layout), but say why in the commit and keep both
    // blobs 8-aligned. Do not just edit the expected bytes.
    let c = write_graph_and_plan(b"GRAPH", Some(b"PLAN!"));
    #[rustfmt::skip]
    let expected: &[u8] = &[
        16, 0, 0, 0, b'H', b'D', b'G', b'P',      // 0: root offset 16, identifier
        8, 0, 12, 0, 4, 0, 8, 0,                  // 8: vtable (size 8, table 12, fields @4 @8)
        8, 0, 0, 0,                               // 16: table soffset to the vtable
        8, 0, 0, 0,                               // 20: graph_blob uoffset -> 28
        20, 0, 0, 0,                              // 24: plan_blob uoffset -> 44
        5, 0, 0, 0, b'G', b'R', b'A', b'P', b'H', // 28: graph length, data @32
        0, 0, 0, 0, 0, 0, 0,                      // 37: pad so that plan data is 8-aligned
        5, 0, 0, 0, b'P', b'L', b'A', b'N', b'!', // 44: plan length, data @48
        0, 0, 0,                                  // 53: pad to a multiple of 4
    ];
    assert_eq!(c, expected);
    assert_eq!(c.len(), 56);
}

#[test]
fn two_call_graph_and_plan_save_reports_size_and_refuses_short_buffers() {
    use hipdnn_backend::hdgp::write_graph_and_plan_into;
    let (handle, engine) = counting_handle();
    let built = built_plan(&handle);
    let plan = built.serialized_bytes().unwrap();
    let graph = graph_bytes();
    let n = write_graph_and_plan_into(&graph, Some(&plan), None).unwrap();
    let mut buf = vec![0u8; n];
    assert_eq!(
        write_graph_and_plan_into(&graph, Some(&plan), Some(&mut buf)).unwrap(),
        n
    );
    assert_eq!(
        buf,
        write_graph_and_plan(&graph, Some(&built.to_bytes().unwrap()))
    );
    let mut short = vec![0u8; n - 1];
    let e = write_graph_and_plan_into(&graph, Some(&plan), Some(&mut short)).unwrap_err();
    assert_eq!(e.status, Status::BadParamSizeInsufficient);
    assert_eq!(e.required_size, Some(n));
    assert!(short.iter().all(|&b| b == 0));
    assert_eq!(engine.saves(), 1);
    let g_only = write_graph_and_plan_into(&graph, None, None).unwrap();
    assert!(g_only < n);
}

#[test]
fn read_container_returns_views_of_the_input_read_once() {
    let graph = graph_bytes();
    let plan = saved_plan();
    let c = write_graph_and_plan(&graph, Some(&plan));
    let gp = hipdnn_backend::read_container(&c).unwrap().unwrap();
    let (g, p) = (gp.graph_blob().unwrap(), gp.plan_blob().unwrap());
    assert_eq!((g, p), (&graph[..], &plan[..]));
    // Views, not copies: the blobs lie at the writer's 8-aligned offsets of the input.
    assert_eq!(g.as_ptr() as usize - c.as_ptr() as usize, 32);
    let plan_at = p.as_ptr() as usize - c.as_ptr() as usize;
    assert_eq!(plan_at % 8, 0);
    assert_eq!(plan_at, (32 + graph.len() + 4).next_multiple_of(8));
    // Not a container: no views, no error (bare blobs go to their own loaders).
    assert_eq!(hipdnn_backend::read_container(&graph).unwrap(), None);
    assert_eq!(hipdnn_backend::read_container(&plan).unwrap(), None);
    let e = hipdnn_backend::read_container(&c[..20]).unwrap_err();
    assert_eq!(e.status, Status::BadParam);
    assert!(
        e.message
            .starts_with("unable to verify the serialized graph-and-plan container")
    );
}
