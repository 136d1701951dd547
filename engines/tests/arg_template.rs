//! The kernel-argument template a plan decides once ([`ArgTemplate`], issue 29) gives exactly
//! the arguments the dispatch handler gives, for every Triton family's saved plan (the golden
//! plans of `hipdnn-rs/tests/golden/gpu_plans`), and leaves every binding it cannot vouch for
//! to the handler.

use hipdnn_backend::engine::{BufferRef, TensorBinding};
use hipdnn_backend::{PlanEnvelope, hdgp};
use hipdnn_engines::gpu::gpu_registry;
use hipdnn_engines::ingestor::arg_template::ArgTemplate;
use hipdnn_engines::ingestor::device::KernelArgValue;
use hipdnn_engines::ingestor::dispatch::{DispatchHandler, PreparedLaunch};
use hipdnn_engines::ingestor::payload::decode_payload;
use std::path::Path;
use std::sync::Arc;

/// Every golden plan's handler and restored launch, by file name.
fn golden_launches() -> Vec<(String, Arc<dyn DispatchHandler>, PreparedLaunch)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hipdnn-rs/tests/golden/gpu_plans");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "hdgp"))
        .collect();
    names.sort();
    let registry = gpu_registry();
    names
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            let plan = hdgp::plan_part(&bytes).unwrap();
            let env = PlanEnvelope::parse(plan).unwrap();
            let p = decode_payload(env.plugin_payload).unwrap();
            let handler = registry.resolve(&p.dispatch_symbol).unwrap();
            let launch = handler
                .restore_launch(&p.dispatch_symbol, &p.launch_values)
                .unwrap();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, handler, launch)
        })
        .collect()
}

/// Device bindings of `uids` at `base + 256·i + offset`.
fn bind(uids: &[i64], base: u64, offset: u64) -> Vec<TensorBinding<'static>> {
    uids.iter()
        .enumerate()
        .map(|(i, &uid)| TensorBinding {
            uid,
            data: BufferRef::Device {
                addr: base + 256 * i as u64 + offset,
                len: 1 << 20,
            },
        })
        .collect()
}

#[test]
fn every_golden_plan_has_a_template_that_gives_the_handlers_arguments() {
    let launches = golden_launches();
    assert_eq!(launches.len(), 12);
    for (name, handler, launch) in &launches {
        let t = ArgTemplate::probe(handler.as_ref(), launch, launch.workspace_bytes)
            .unwrap_or_else(|| panic!("{name}: no template"));
        let ws_addr = if launch.workspace_bytes > 0 {
            0x5000_0000_0100
        } else {
            0
        };
        let mut out = Vec::new();
        for (base, offset) in [
            (0x7f12_3400_0000u64, 0u64),
            (0x10_0000, 16),
            (0x2_0000_0000, 48),
        ] {
            let tensors = bind(&launch.pointer_uids, base, offset);
            assert!(t.fill(&tensors, ws_addr, &mut out), "{name}: fill refused");
            let want = handler
                .kernel_args_with_workspace(launch, &tensors, ws_addr)
                .unwrap();
            assert_eq!(out, want, "{name}: template and handler differ");
        }
    }
}

#[test]
fn bindings_the_template_cannot_vouch_for_go_to_the_handler() {
    for (name, handler, launch) in golden_launches() {
        let t = ArgTemplate::probe(handler.as_ref(), &launch, launch.workspace_bytes).unwrap();
        let ws = if launch.workspace_bytes > 0 {
            0x5000_0000_0100
        } else {
            0
        };
        let mut out = Vec::new();
        let good = bind(&launch.pointer_uids, 0x7f00_0000_0000, 0);
        assert!(t.fill(&good, ws, &mut out), "{name}");
        // Each pointer in turn: 4 bytes off, on the host, missing.
        for i in 0..launch.pointer_uids.len() {
            let mut off = bind(&launch.pointer_uids, 0x7f00_0000_0000, 0);
            if let BufferRef::Device { addr, .. } = &mut off[i].data {
                *addr += 4;
            }
            assert!(!t.fill(&off, ws, &mut out), "{name}: unaligned uid {i}");
            let mut host = bind(&launch.pointer_uids, 0x7f00_0000_0000, 0);
            host[i].data = BufferRef::Host(&[0u8; 4]);
            assert!(!t.fill(&host, ws, &mut out), "{name}: host uid {i}");
            let mut missing = bind(&launch.pointer_uids, 0x7f00_0000_0000, 0);
            missing.remove(i);
            assert!(!t.fill(&missing, ws, &mut out), "{name}: missing uid {i}");
        }
        if launch.workspace_bytes > 0 {
            assert!(!t.fill(&good, 0, &mut out), "{name}: no workspace");
            assert!(
                !t.fill(&good, ws + 8, &mut out),
                "{name}: unaligned workspace"
            );
        }
    }
}

/// A handler that passes `addr + 8` for its one tensor: derived from the address, so no
/// template.
struct Offsetting;
impl DispatchHandler for Offsetting {
    fn contract(&self) -> &str {
        "test.offsetting.dispatch.v1"
    }
    fn launch_signature(&self) -> Vec<hipdnn_engines::ingestor::kernel::KernelArgument> {
        Vec::new()
    }
    fn prepare(
        &self,
        _graph: &hipdnn_backend::graph::OperationGraph,
    ) -> hipdnn_backend::status::PluginResult<PreparedLaunch> {
        Err(hipdnn_backend::status::PluginError::not_applicable("test"))
    }
    fn kernel_args(
        &self,
        launch: &PreparedLaunch,
        tensors: &[TensorBinding<'_>],
    ) -> hipdnn_backend::status::PluginResult<Vec<KernelArgValue>> {
        let a = hipdnn_engines::ingestor::dispatch::device_addr(tensors, launch.pointer_uids[0])?;
        Ok(vec![KernelArgValue::Pointer(a + 8), KernelArgValue::I32(3)])
    }
}

#[test]
fn a_handler_that_derives_from_an_address_keeps_its_own_path() {
    let launch = PreparedLaunch {
        dispatch: "test.offsetting.dispatch.v1".into(),
        launch_values: Default::default(),
        geometry: hipdnn_engines::ingestor::device::LaunchGeometry {
            grid: [1; 3],
            block: [1; 3],
            shared_mem_bytes: 0,
        },
        workspace_bytes: 0,
        pointer_uids: vec![7],
        scalar_args: Vec::new(),
    };
    assert!(ArgTemplate::probe(&Offsetting, &launch, 0).is_none());
}
