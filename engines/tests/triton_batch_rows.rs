//! Issue 37, class 5 without a device: every case of the row matrix (`batch_rows_support`,
//! the one `gpu_batch_rows.rs` runs on a GPU) is served by its Triton family on a fake sm_90
//! and a fake gfx942 device at batch 1 and at every batch of the GPU test, and its plan
//! executes there (the launch is recorded, nothing computed). This keeps the GPU test from
//! passing vacuously: a case the GPU engine refused would fall to the CPU engine there.

#[path = "ingestor_support.rs"]
mod support;

mod batch_rows_support;
mod batchnorm_support;
mod norm_bwd_support;
mod norm_support;
mod pointwise_support;
mod pool_support;
mod reduce_support;

use batch_rows_support::{GPU_BATCHES, cases, ingestor_plan};
use hipdnn_backend::engine::{BufferRef, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu::{load_packed_descriptors, load_triton_descriptors};
use hipdnn_engines::ingestor::KpackCodeObjectReader;
use hipdnn_engines::ingestor::device::FixedDevice;
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::registry::pack_registry;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use support::FakeDevice;

/// The GPU engine as `gpu::open` makes it (Triton entries, then the clang packs) over a fake
/// device of `arch`.
fn engine(arch: &str) -> (IngestorEngine, Arc<FakeDevice>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("kernels/packed")
        .join(arch);
    let mut kernels = load_triton_descriptors(&dir).unwrap();
    kernels.extend(load_packed_descriptors(&dir).unwrap());
    let dev = FakeDevice::new(arch, 0);
    let e = IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        kernels,
        Arc::new(FixedDevice(dev.clone())),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    (e, dev)
}

#[test]
fn every_row_case_is_served_by_its_family_at_every_batch_on_sm_90_and_gfx942() {
    let mut kernels = BTreeSet::new();
    let mut plans = 0;
    for arch in ["sm_90", "gfx942"] {
        let (e, dev) = engine(arch);
        for case in cases() {
            for n in std::iter::once(1).chain(GPU_BATCHES) {
                let b = (case.build)(n);
                let uids: Vec<i64> = case
                    .inputs
                    .iter()
                    .map(|i| i.uid)
                    .chain(case.outputs.iter().copied())
                    .collect();
                let lens: Vec<usize> = uids.iter().map(|u| b.spec(*u).bytes_len()).collect();
                let og = OperationGraph::from_bytes(&b.build()).unwrap();
                let (ctx, kernel, dispatch) = ingestor_plan(&e, &og, None)
                    .unwrap_or_else(|err| panic!("{arch} {} at batch {n}: {err}", case.label));
                assert_eq!(
                    dispatch, case.dispatch,
                    "{arch} {} at batch {n}: served by {kernel}",
                    case.label
                );
                let mut t: Vec<TensorBinding<'_>> = uids
                    .iter()
                    .zip(&lens)
                    .map(|(u, len)| TensorBinding {
                        uid: *u,
                        data: BufferRef::Device {
                            addr: 0x1000_0000 * *u as u64,
                            len: *len,
                        },
                    })
                    .collect();
                let ws = ctx.workspace_size();
                let before = dev.launches.lock().unwrap().len();
                ctx.execute(ExecuteArgs {
                    stream: 0,
                    workspace: (ws > 0).then_some(BufferRef::Device {
                        addr: 0x7_0000_0000,
                        len: ws,
                    }),
                    tensors: &mut t,
                })
                .unwrap_or_else(|err| {
                    panic!(
                        "{arch} {} at batch {n}: execute: {}",
                        case.label, err.message
                    )
                });
                assert!(
                    dev.launches.lock().unwrap().len() > before,
                    "{arch} {} at batch {n}: no launch",
                    case.label
                );
                kernels.insert(format!("{arch} {kernel}"));
                plans += 1;
            }
        }
    }
    // 30 cases × 5 batches × 2 arches.
    assert_eq!(plans, 300);
    println!("{} distinct entries serve the matrix:", kernels.len());
    for k in &kernels {
        println!("  {k}");
    }
}
