//! Several GPUs in one host (issue 38): every visible GPU at once, one thread and one handle
//! per device (`Handle::gpu_on`), each building, executing, saving, then loading the plans
//! saved on every other device (save on device i, load on device j), executing them and saving
//! them again.
//!
//! Checked: the results equal the CPU reference (relative 1e-5); devices of one architecture
//! give bit-identical results, and a plan loaded from another device gives the same bits as
//! the device's own; a re-save returns the loaded bytes exactly; a plan of another
//! architecture is refused naming both architectures; each device loads the kernel's module
//! once (`Handle::module_stats`), however many plans and handles use it, and
//! `Handle::on_current_device` (what the C ABI's `hipdnnCreate` calls) binds to the device the
//! thread made current.
//!
//! Without a GPU it prints `skipped: no GPU: …` and passes; with one GPU it runs the
//! single-device parts (two handles on device 0 sharing one module) and prints that the
//! cross-device parts need at least two.
//!
//! Run on a GPU machine (from the workspace root):
//! `HIPDNN_KERNEL_DIR=$PWD/engines/kernels/packed cargo test --release -p hipdnn
//! --no-default-features --test multi_gpu -- --nocapture`.

mod gpu_support;
use gpu_support::{W_LEN, X_LEN, Y_LEN, conv_graph, lcg, skipped};
use hipdnn::{Buffer, ExecutionDevice, GpuInfo, Graph, Handle, ModuleStats, VariantPack};
use std::sync::{Barrier, Mutex};

/// The visible GPUs with kernels for device 0, or `None` (printed) when there is none.
fn gpus() -> Option<Vec<GpuInfo>> {
    let list = match hipdnn::devices() {
        Ok(l) => l,
        Err(e) => {
            skipped(&e.message);
            return None;
        }
    };
    if list.is_empty() {
        skipped("no GPU: the GPU runtime reports 0 devices");
        return None;
    }
    if let Err(e) = Handle::gpu_on(0) {
        skipped(&e.message);
        return None;
    }
    Some(list)
}

/// Executes `g` on `h` over the fixed inputs; returns y.
fn exec(h: &Handle, g: &Graph) -> Vec<f32> {
    let x = Buffer::from_slice_on(h, &lcg(X_LEN, 1)).expect("x");
    let w = Buffer::from_slice_on(h, &lcg(W_LEN, 2)).expect("w");
    let mut y = Buffer::<f32>::filled(Y_LEN, f32::NAN)
        .to_handle(h)
        .expect("y");
    let mut ws = Buffer::<u8>::alloc(h, g.workspace_size().expect("ws")).expect("ws");
    let pack = VariantPack::new().with(1, &x).with(2, &w).with(3, &mut y);
    g.execute(h, pack, Some(&mut ws)).expect("execute");
    y.to_vec().expect("download")
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn base(arch: &str) -> &str {
    arch.split(':').next().unwrap_or(arch)
}

fn stats(h: &Handle) -> ModuleStats {
    h.module_stats()
        .expect("a GPU handle has module statistics")
}

/// What device `i` did in the first phase.
struct Saved {
    arch: String,
    y: Vec<f32>,
    plan: Vec<u8>,
    container: Vec<u8>,
}

#[test]
fn every_gpu_builds_saves_and_runs_every_other_gpus_plans() {
    let Some(list) = gpus() else { return };
    let n = list.len();
    for d in &list {
        println!(
            "GPU {}: {} ({}, {:?})",
            d.ordinal, d.name, d.arch, d.platform
        );
    }
    if n < 2 {
        println!(
            "1 GPU visible: the single-device parts run (two handles on device 0 sharing one \
             module); the cross-device parts (save on device i, load on device j) need >= 2"
        );
    }
    let cpu = {
        let h = Handle::cpu().expect("cpu");
        let mut g = conv_graph("multi_gpu_conv");
        g.build(&h).expect("cpu build");
        exec(&h, &g)
    };
    let saved: Mutex<Vec<Option<Saved>>> = Mutex::new((0..n).map(|_| None).collect());
    let barrier = Barrier::new(n);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..n)
            .map(|i| {
                let (saved, barrier, cpu) = (&saved, &barrier, &cpu);
                s.spawn(move || device_thread(i, n, saved, barrier, cpu))
            })
            .collect();
        for (i, t) in threads.into_iter().enumerate() {
            if let Err(p) = t.join() {
                panic!("device {i}'s thread failed: {p:?}");
            }
        }
    });
    // Devices of one architecture give the same bits.
    let saved = saved.into_inner().unwrap();
    let first = saved[0].as_ref().expect("device 0 saved");
    for (i, s) in saved.iter().enumerate() {
        let s = s.as_ref().expect("every device saved");
        if base(&s.arch) == base(&first.arch) {
            assert_eq!(
                bits(&s.y),
                bits(&first.y),
                "device {i} vs device 0 ({})",
                s.arch
            );
        }
    }
    println!("{n} device(s): every cross-load checked");
}

/// Device `i`'s thread: phase 1 (build, execute, save), the barrier (reached even when
/// phase 1 fails, so no thread waits forever), phase 2 (cross-load).
fn device_thread(
    i: usize,
    n: usize,
    saved: &Mutex<Vec<Option<Saved>>>,
    barrier: &Barrier,
    cpu: &[f32],
) {
    let phase1 = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| phase1(i, saved, cpu)));
    barrier.wait();
    let (h, arch, y, before, built, plans) = match phase1 {
        Ok(p) => p,
        Err(p) => std::panic::resume_unwind(p),
    };
    phase2(i, n, saved, &h, &arch, &y, before, built);
    drop(plans);
}

type Phase1 = (
    Handle,
    String,
    Vec<f32>,
    ModuleStats,
    ModuleStats,
    (Graph, Graph),
);

fn phase1(i: usize, saved: &Mutex<Vec<Option<Saved>>>, cpu: &[f32]) -> Phase1 {
    let h = Handle::gpu_on(i).expect("gpu_on");
    let ExecutionDevice::Gpu { ordinal, arch, .. } = h.device().clone() else {
        panic!("device {i}: not a GPU handle");
    };
    assert_eq!(ordinal, i);
    let before = stats(&h);

    // Build twice (two plans of one kernel), execute, compare, save.
    let mut g = conv_graph("multi_gpu_conv");
    g.build(&h).expect("build");
    assert_eq!(g.engine_name().unwrap(), "hipkernel.ingestor.gpu");
    let y = exec(&h, &g);
    let d = y
        .iter()
        .zip(cpu)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0f32, f32::max);
    assert!(
        d <= 1e-5,
        "device {i}: max relative difference to the CPU {d}"
    );
    let mut g2 = conv_graph("multi_gpu_conv");
    g2.build(&h).expect("second build");
    assert_eq!(bits(&exec(&h, &g2)), bits(&y), "device {i}: second plan");
    let built = stats(&h);
    assert_eq!(
        built.loads - before.loads,
        1,
        "device {i}: two plans of one kernel load one module ({before:?} -> {built:?})"
    );
    // The thread's current device is now this one: the C ABI's hipdnnCreate binds there.
    let current = Handle::on_current_device().expect("on_current_device");
    assert!(
        matches!(current.device(), ExecutionDevice::Gpu { ordinal, .. } if *ordinal == i),
        "device {i}: on_current_device gave {:?}",
        current.device()
    );
    drop(current);
    let plan = g.to_compiled_plan_binary().expect("save plan");
    let container = g.to_binary().expect("save container");
    saved.lock().unwrap()[i] = Some(Saved {
        arch: arch.clone(),
        y: y.clone(),
        plan,
        container,
    });
    (h, arch, y, before, built, (g, g2))
}

/// Loads every device's plan (and this device's own on a second handle), executes, re-saves.
#[allow(clippy::too_many_arguments)]
fn phase2(
    i: usize,
    n: usize,
    saved: &Mutex<Vec<Option<Saved>>>,
    h: &Handle,
    arch: &str,
    y: &[f32],
    before: ModuleStats,
    built: ModuleStats,
) {
    let others: Vec<(usize, String, Vec<u8>, Vec<u8>)> = saved
        .lock()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(j, s)| {
            let s = s
                .as_ref()
                .unwrap_or_else(|| panic!("device {j} failed before saving"));
            (j, s.arch.clone(), s.plan.clone(), s.container.clone())
        })
        .collect();
    let second = Handle::gpu_on(i).expect("second handle");
    let mut loaded = Vec::new();
    for (j, arch_j, plan, container) in &others {
        for (h, which) in [(h, "the first handle"), (&second, "a second handle")] {
            if base(arch_j) != base(arch) {
                let e = Graph::from_compiled_plan_binary(h, plan).unwrap_err();
                assert!(
                    e.message.contains(&format!("'{}'", base(arch_j))) && e.message.contains(arch),
                    "device {i} refusing device {j}'s plan: {e}"
                );
                continue;
            }
            let gp = Graph::from_compiled_plan_binary(h, plan).expect("load plan");
            let gc = Graph::from_binary(h, container).expect("load container");
            for (what, g) in [("plan", &gp), ("container", &gc)] {
                assert_eq!(
                    bits(&exec(h, g)),
                    bits(y),
                    "device {i} ({which}) running device {j}'s {what}"
                );
            }
            assert_eq!(
                &gp.to_compiled_plan_binary().unwrap(),
                plan,
                "re-save {j} on {i}"
            );
            assert_eq!(&gc.to_binary().unwrap(), container, "re-save {j} on {i}");
            loaded.push((gp, gc));
        }
    }
    let after = stats(h);
    assert_eq!(
        stats(&second),
        after,
        "handles on one device share statistics"
    );
    assert_eq!(
        after.loads,
        built.loads,
        "device {i}: {} loaded plans (from {n} devices, two handles) reuse the resident module",
        loaded.len()
    );
    println!(
        "device {i} ({arch}): {} plans loaded from {n} device(s); module loads {} -> {}, resident {}",
        loaded.len(),
        before.loads,
        after.loads,
        after.resident
    );
    drop(loaded);
}
