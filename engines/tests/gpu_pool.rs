//! GPU test of the pool_fwd Triton family (`hipkernel.resample_fwd.dispatch.v1`): pooling graphs
//! built through the GPU ingestor engine (`hipdnn_engines::gpu::open`, kernels from
//! `HIPDNN_KERNEL_DIR` or the committed `engines/kernels/packed/<arch>/`), executed on device 0
//! and compared with the CPU reference engine over the shape matrix of
//! `pool_support::gpu_cases` (every mode: max with padding skipped and with ZERO_PAD, average
//! including and excluding padding × f32/f16/bf16 × NCHW and NHWC; odd sizes, odd and
//! asymmetric paddings, windows larger than the stride (overlap) and smaller (gaps), windows
//! wholly inside the padding, batch 1, a global window, 1-D and 3-D windows, ResNet's stem max
//! pool; the index as INT32 and INT64; an f32 y behind 16-bit x; x and y in different layouts;
//! NaN and infinite inputs for max). Then save → a second engine on a fresh device handle over
//! a copy of the packed kernels builds the same graph and saves byte-identical plan bytes →
//! every kpack archive of the copy is moved away → that engine restores the first plan →
//! executes twice → bit-identical outputs (a loaded plan is re-saved by hipDNN from the bytes it
//! was loaded from; the engine refuses a direct re-save, which is checked).
//!
//! Tolerance: none. Every y value must have the reference's bits (NaN equal to NaN) and every
//! index must be equal, in every mode: the kernel scans each window in the reference's order,
//! keeps the first maximum as the reference does, sums in f32 in the same order (padding adds
//! +0.0, which changes no f32 sum), divides with IEEE division (`div_rn`) and rounds y to
//! nearest even, so the average modes are bit-exact too.
//!
//! Without a GPU runtime, device or packed kernels for the device's architecture every test
//! prints `skipped: no GPU: …` on stderr and passes.
//!
//! Run: `cargo test --release -p hipdnn-engines --test gpu_pool -- --nocapture --test-threads 1`.

mod pool_support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_engines::gpu::{self, GPU_ENGINE_NAME, GpuEngines, load_triton_descriptors};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::pool_fwd::RESAMPLE_FWD_V1;
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{FixedDevice, HipIngestorDevice, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::run_graph;
use hipdnn_engines::registry::pack_registry;
use hipdnn_hip::Stream;
use hipdnn_schema::graph::DataType as DT;
use pool_support::{Layout, Mode, PoolCase, X, compare, gpu_cases};
use std::sync::Arc;

/// Prints `skipped: <why>` on the test process's stderr directly.
fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

fn open() -> Option<GpuEngines> {
    match gpu::open(0) {
        Ok(g) => Some(g),
        Err(e) => {
            skipped(&e.to_string());
            None
        }
    }
}

/// A built (or restored) plan's outputs on the device (y, then the index), dense row-major
/// f32.
fn execute(
    g: &GpuEngines,
    ctx: &dyn hipdnn_backend::engine::ExecutionContext,
    c: &PoolCase,
    x: &[f32],
) -> Vec<Vec<f32>> {
    let b = c.graph();
    let xd = g.device.htod(&b.spec(X).encode(x)).expect("upload");
    // Outputs start as all-ones bytes (NaN in every float type, −1 as an index): unwritten
    // elements fail.
    let outs: Vec<_> = c
        .outputs()
        .iter()
        .map(|u| {
            (
                *u,
                g.device
                    .htod(&vec![0xFFu8; b.spec(*u).bytes_len()])
                    .expect("alloc"),
            )
        })
        .collect();
    let mut t: Vec<TensorBinding<'_>> = std::iter::once((X, &xd))
        .chain(outs.iter().map(|(u, d)| (*u, d)))
        .map(|(u, d)| TensorBinding {
            uid: u,
            data: BufferRef::Device {
                addr: d.device_ptr(),
                len: d.len(),
            },
        })
        .collect();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap_or_else(|e| panic!("{c:?}: execute: {}", e.message));
    Stream::default_stream(&g.device)
        .synchronize()
        .expect("synchronize");
    outs.iter()
        .map(|(u, d)| b.spec(*u).decode(&d.to_vec().expect("download")))
        .collect()
}

fn config(e: &IngestorEngine) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    }
}

/// Builds `c` on the GPU engine: the context, its saved plan bytes and its entry as
/// `spec|generic cl|cf bm x bn`. Asserts the plan runs the pool_fwd kernel.
fn build(
    e: &IngestorEngine,
    c: &PoolCase,
) -> (
    Box<dyn hipdnn_backend::engine::ExecutionContext>,
    Vec<u8>,
    String,
) {
    let og = OperationGraph::from_bytes(&c.graph().build()).unwrap();
    let ctx = e
        .create_execution_context(&config(e), &og)
        .unwrap_or_else(|err| panic!("{c:?}: build: {}", err.message));
    let saved = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .expect("save");
    let p = decode_payload(&saved).unwrap();
    assert_eq!(p.dispatch_symbol, RESAMPLE_FWD_V1, "{c:?}");
    assert_eq!(p.symbol, "hipdnn_pool_fwd", "{c:?}");
    let int = |k: &str| match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    };
    let entry = format!(
        "{} {} {}x{}",
        if int("spec") == 1 { "spec" } else { "generic" },
        if int("cl") == 1 { "cl" } else { "cf" },
        int("block_m"),
        int("block_n")
    );
    (ctx, saved, entry)
}

fn type_name(dt: DT) -> &'static str {
    match dt {
        DT::FLOAT => "f32",
        DT::HALF => "f16",
        DT::BFLOAT16 => "bf16",
        DT::INT32 => "i32",
        _ => "i64",
    }
}

/// The CPU reference engine's outputs of `c` on `x`.
fn reference(c: &PoolCase, x: &[f32]) -> Vec<Vec<f32>> {
    run_graph(c.graph(), &[(X, x.to_vec())], &c.outputs()).expect("cpu reference")
}

/// Compares every output with the reference's, bit for bit; returns the elements compared.
fn check(c: &PoolCase, got: &[Vec<f32>], want: &[Vec<f32>]) -> usize {
    let mut n = 0;
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let what = format!("{c:?}: {}", if k == 0 { "y" } else { "index" });
        n += compare(&what, g, w).unwrap_or_else(|m| panic!("{m}"));
    }
    n
}

fn describe(c: &PoolCase) -> String {
    format!(
        "{:?} {} x {:?} {:?}{} win {:?} stride {:?} pre {:?} post {:?}{}{}{}",
        c.mode,
        type_name(c.dt),
        c.dims,
        c.x_layout,
        if c.y_layout != c.x_layout {
            format!(" (y {:?})", c.y_layout)
        } else {
            String::new()
        },
        c.window,
        c.stride,
        c.pre,
        c.post,
        c.index
            .map(|d| format!(" index {}", type_name(d)))
            .unwrap_or_default(),
        if c.y_f32 { " y f32" } else { "" },
        if c.specials { " nan/inf" } else { "" },
    )
}

#[test]
fn gpu_pooling_matches_the_cpu_reference_bit_for_bit() {
    let Some(g) = open() else { return };
    let e = g.engines[0].clone();
    println!("device 0: {} ({})", g.device.info().name, g.arch);
    let cases = gpu_cases();
    let mut elements = 0;
    let mut per_mode: Vec<(String, usize)> = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let x = c.input(i as u64 + 1);
        let (ctx, _, entry) = build(&e, c);
        let got = execute(&g, ctx.as_ref(), c, &x);
        let n = check(c, &got, &reference(c, &x));
        elements += n;
        let key = format!("{:?} {}", c.mode, type_name(c.dt));
        match per_mode.iter_mut().find(|w| w.0 == key) {
            Some(w) => w.1 += 1,
            None => per_mode.push((key, 1)),
        }
        println!("{} -> {entry}: {n} values bit-identical", describe(c));
    }
    println!(
        "{} cases passed, {elements} output values (y and index) bit-identical to the CPU reference; cases per mode and type:",
        cases.len()
    );
    for (k, n) in per_mode {
        println!("  {k}: {n}");
    }
}

/// Copies `<kernel dir>/<arch>` to a temporary directory, returning it and the descriptors of
/// its Triton entries (archive paths inside the copy).
fn copy_packed(g: &GpuEngines) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let to = tmp.path().join(&g.arch);
    std::fs::create_dir_all(&to).expect("mkdir");
    for f in std::fs::read_dir(&g.packed_dir)
        .expect("packed dir")
        .flatten()
    {
        if f.path().is_file() {
            std::fs::copy(f.path(), to.join(f.file_name())).expect("copy");
        }
    }
    (tmp, to)
}

#[test]
fn gpu_pool_plans_restore_with_the_archives_moved_away_and_run_bit_identically() {
    let Some(g) = open() else { return };
    let Some(g2) = open() else { return };
    let e = g.engines[0].clone();
    // A second engine on a fresh device handle, over a copy of the packed kernels.
    let (_tmp, dir) = copy_packed(&g2);
    let e2 = IngestorEngine::new(
        GPU_ENGINE_NAME,
        load_triton_descriptors(&dir).expect("descriptors of the copy"),
        Arc::new(FixedDevice(Arc::new(HipIngestorDevice::new(
            g2.device.clone(),
        )))),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    let cases = [
        PoolCase::new(
            Mode::Max,
            DT::HALF,
            &[2, 64, 112, 112],
            &[3, 3],
            &[2, 2],
            &[1, 1],
            &[1, 1],
        )
        .layout(Layout::Nhwc)
        .with_index(DT::INT32),
        PoolCase::new(
            Mode::AvgExclude,
            DT::FLOAT,
            &[2, 3, 7, 9],
            &[3, 3],
            &[2, 2],
            &[1, 1],
            &[1, 0],
        ),
        PoolCase::new(
            Mode::MaxZeroPad,
            DT::BFLOAT16,
            &[1, 4, 5, 6, 7],
            &[2, 3, 2],
            &[2, 1, 2],
            &[1, 1, 0],
            &[0, 2, 1],
        )
        .with_index(DT::INT64),
        PoolCase::new(
            Mode::AvgInclude,
            DT::HALF,
            &[4, 256, 14, 14],
            &[2, 2],
            &[2, 2],
            &[0, 0],
            &[0, 0],
        )
        .layout(Layout::Nhwc),
    ];
    let built: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let x = c.input(100 + i as u64);
            let (ctx, saved, entry) = build(&e, c);
            let first = execute(&g, ctx.as_ref(), c, &x);
            // The second handle's engine builds the same plan bytes (a re-save from a fresh
            // handle is byte-identical).
            let (_, saved2, _) = build(&e2, c);
            assert_eq!(saved2, saved, "{c:?}: the second handle's save differs");
            (x, saved, entry, first)
        })
        .collect();
    // Every archive of the copy moved away: the restore reads none.
    for f in std::fs::read_dir(&dir).expect("ls").flatten() {
        let p = f.path();
        if p.extension().is_some_and(|x| x == "kpack") {
            std::fs::rename(&p, p.with_extension("kpack.moved")).expect("move away");
        }
    }
    let kpacks = std::fs::read_dir(&dir)
        .expect("ls")
        .flatten()
        .filter(|f| f.path().extension().is_some_and(|x| x == "kpack"))
        .count();
    assert_eq!(kpacks, 0, "no kpack archive is reachable");
    for (c, (x, saved, entry, first)) in cases.iter().zip(&built) {
        let ser = e2.serialization().unwrap();
        let restored = ser
            .create_execution_context_from_serialized(saved)
            .unwrap_or_else(|err| panic!("{c:?}: restore: {}", err.message));
        for round in 0..2 {
            let again = execute(&g2, restored.as_ref(), c, x);
            for (a, b) in first.iter().zip(&again) {
                assert_eq!(
                    a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "{c:?}: restored execute {round} differs"
                );
            }
        }
        // A loaded plan is re-saved from the bytes it was loaded from (hipDNN never calls the
        // engine's save hook for it): the engine refuses a direct re-save.
        let again = ser.serialize_execution_context(e2.id(), restored.as_ref());
        assert!(
            again.is_err_and(|err| err
                .message
                .contains("saves a loaded plan from the plan bytes it was loaded from")),
            "{c:?}: a restored plan re-saved directly"
        );
        let n = check(c, first, &reference(c, x));
        println!(
            "{} -> {entry}: second handle's save identical ({} bytes), restored with the archives moved away, 2 executes bit-identical, {n} values bit-identical to the CPU reference",
            describe(c),
            saved.len()
        );
    }
}
