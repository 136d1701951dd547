//! Several devices in one process, with fake devices (no GPU): a plan built and saved on one
//! device restores and launches on another of the same architecture (the same launch, a module
//! of its own on that device); a device of another architecture is refused by name, both
//! architectures named, on restore and on execute; and threads building and restoring plans of
//! the same kernels on two devices at once make exactly one module load per (kernel, device),
//! which `module_stats` of each device's sharing domain reports.
//!
//! The module-sharing table is process-wide: each test uses sharing keys of its own (the first
//! word), so the counts a test reads are its own.

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::{PluginError, PluginStatus};
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::device::{
    DeviceError, DeviceResolver, FixedDevice, IngestorDevice, IngestorModule, KernelArgValue,
    KernelFunction, LaunchGeometry, ModuleStats, module_stats,
};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::kernel::KernelArgument;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec};
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::DataType as DT;
use std::any::Any;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

/// A function: the ordinal of the device whose module it came from.
struct Function(i32);
impl KernelFunction for Function {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct Module(i32);
impl IngestorModule for Module {
    fn get_function(&self, symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError> {
        let _ = symbol;
        Ok(Arc::new(Function(self.0)))
    }
}

/// A fake GPU: arch, ordinal, a sharing domain `[test, ordinal, 0]`, its module loads and its
/// launches (geometry, arguments, and the ordinal of the module the function came from).
struct Gpu {
    arch: String,
    ordinal: i32,
    key: [u64; 3],
    loads: AtomicUsize,
    launches: Mutex<Vec<(LaunchGeometry, Vec<KernelArgValue>, i32)>>,
}

impl Gpu {
    fn new(test: u64, arch: &str, ordinal: i32) -> Arc<Gpu> {
        Arc::new(Gpu {
            arch: arch.into(),
            ordinal,
            key: [test, ordinal as u64, 0],
            loads: AtomicUsize::new(0),
            launches: Mutex::new(Vec::new()),
        })
    }
    fn loads(&self) -> usize {
        self.loads.load(Ordering::SeqCst)
    }
    fn stats(&self) -> ModuleStats {
        module_stats(self.key)
    }
}

impl IngestorDevice for Gpu {
    fn arch(&self) -> String {
        self.arch.clone()
    }
    fn ordinal(&self) -> i32 {
        self.ordinal
    }
    fn module_share_key(&self) -> Option<[u64; 3]> {
        Some(self.key)
    }
    fn load_module(&self, _code: &[u8]) -> Result<Arc<dyn IngestorModule>, DeviceError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        // Wide enough a window for a second thread to ask for the same code meanwhile.
        std::thread::sleep(std::time::Duration::from_millis(5));
        Ok(Arc::new(Module(self.ordinal)))
    }
    fn launch(
        &self,
        f: &dyn KernelFunction,
        geometry: LaunchGeometry,
        args: &[KernelArgValue],
        _signature: &[KernelArgument],
        _stream: u64,
    ) -> Result<(), DeviceError> {
        let from = f.as_any().downcast_ref::<Function>().map_or(-1, |f| f.0);
        self.launches
            .lock()
            .unwrap()
            .push((geometry, args.to_vec(), from));
        Ok(())
    }
    fn memset_async(&self, _a: u64, _v: u8, _b: u64, _s: u64) -> Result<(), DeviceError> {
        Ok(())
    }
    fn synchronize(&self, _stream: u64) -> Result<(), DeviceError> {
        Ok(())
    }
}

/// A resolver whose device the test switches (the handle's device, as seen by an execute).
struct Switch(Mutex<Arc<dyn IngestorDevice>>);
impl DeviceResolver for Switch {
    fn current_device(&self) -> Option<Arc<dyn IngestorDevice>> {
        Some(self.0.lock().unwrap().clone())
    }
}

fn sm90() -> Vec<KernelDescriptor> {
    load_triton_descriptors(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed/sm_90"))
        .unwrap()
}

/// The GPU engine of one device (the resolver always names it), as `Handle::gpu_on` makes it.
fn engine_on(dev: Arc<dyn IngestorDevice>, kernels: Vec<KernelDescriptor>) -> IngestorEngine {
    engine_with(Arc::new(FixedDevice(dev)), kernels)
}

fn engine_with(
    resolver: Arc<dyn DeviceResolver>,
    kernels: Vec<KernelDescriptor>,
) -> IngestorEngine {
    IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        kernels,
        resolver,
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    )
}

fn matmul_graph(dt: DT, m: i64, n: i64, k: i64) -> OperationGraph {
    let mut g = GraphBuilder::new("mm");
    g.tensor(TensorSpec::new(1, "a", dt, &[1, m, k]))
        .tensor(TensorSpec::new(2, "b", dt, &[1, k, n]))
        .tensor(TensorSpec::new(3, "c", dt, &[1, m, n]));
    g.matmul("mm", 1, 2, 3);
    OperationGraph::from_bytes(&g.build()).unwrap()
}

fn config(e: &IngestorEngine) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    }
}

fn execute(ctx: &dyn hipdnn_backend::engine::ExecutionContext) -> Result<(), PluginError> {
    let mut t: Vec<TensorBinding<'static>> = [1i64, 2, 3]
        .iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: 0x1000_0000 * *uid as u64,
                len: 1 << 27,
            },
        })
        .collect();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
}

fn save(e: &IngestorEngine, ctx: &dyn hipdnn_backend::engine::ExecutionContext) -> Vec<u8> {
    e.serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx)
        .unwrap()
}

#[test]
fn a_plan_saved_on_one_device_runs_on_another_of_the_same_arch_with_its_own_module() {
    let (d0, d1) = (Gpu::new(101, "sm_90", 0), Gpu::new(101, "sm_90", 1));
    let (e0, e1) = (engine_on(d0.clone(), sm90()), engine_on(d1.clone(), vec![]));
    let g = matmul_graph(DT::HALF, 4096, 4096, 4096);
    let built = e0.create_execution_context(&config(&e0), &g).unwrap();
    execute(built.as_ref()).unwrap();
    let bytes = save(&e0, built.as_ref());

    // Device 1 has no kernel descriptors: the restore selects nothing, it loads the saved code.
    let restored = e1
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    execute(restored.as_ref()).unwrap();
    let (l0, l1) = (
        d0.launches.lock().unwrap().clone(),
        d1.launches.lock().unwrap().clone(),
    );
    assert_eq!((l0.len(), l1.len()), (1, 1));
    assert_eq!(l1[0].0, l0[0].0, "the same geometry on device 1");
    assert_eq!(l1[0].1, l0[0].1, "the same kernel arguments on device 1");
    assert_eq!(l0[0].2, 0, "device 0 launches its own module");
    assert_eq!(
        l1[0].2, 1,
        "device 1 launches its own module, never device 0's"
    );
    assert_eq!((d0.loads(), d1.loads()), (1, 1));
    assert_eq!(
        d0.stats(),
        ModuleStats {
            loads: 1,
            resident: 1
        }
    );
    assert_eq!(
        d1.stats(),
        ModuleStats {
            loads: 1,
            resident: 1
        }
    );

    // Back on device 0 (the SDK re-saves a loaded plan as the bytes it was loaded from, so the
    // bytes saved on 0 are also what device 1 re-saves): the same launch, no second load.
    let again = e0
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    execute(again.as_ref()).unwrap();
    assert_eq!(d0.launches.lock().unwrap()[1].1, l0[0].1);
    assert_eq!(
        d0.loads(),
        1,
        "device 0's module is resident: no second load"
    );
    assert_eq!(
        d0.stats(),
        ModuleStats {
            loads: 1,
            resident: 1
        }
    );
}

#[test]
fn a_device_of_another_arch_is_refused_by_name_on_restore_and_on_execute() {
    let (d0, d2) = (Gpu::new(102, "sm_90", 0), Gpu::new(102, "sm_80", 2));
    let e0 = engine_on(d0.clone(), sm90());
    let g = matmul_graph(DT::HALF, 4096, 4096, 4096);
    let built = e0.create_execution_context(&config(&e0), &g).unwrap();
    let bytes = save(&e0, built.as_ref());

    let e2 = engine_on(d2.clone(), vec![]);
    let err = e2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::NotApplicable, "{}", err.message);
    assert!(
        err.message
            .contains("was saved for target 'sm_90', which device 2 ('sm_80') cannot run"),
        "{}",
        err.message
    );

    // A plan built for device 0, executed while the handle's device is the sm_80 one.
    let switch = Arc::new(Switch(Mutex::new(d0.clone() as Arc<dyn IngestorDevice>)));
    let e = engine_with(switch.clone(), sm90());
    let ctx = e.create_execution_context(&config(&e), &g).unwrap();
    *switch.0.lock().unwrap() = d2.clone();
    let err = execute(ctx.as_ref()).unwrap_err();
    assert_eq!(err.status, PluginStatus::InvalidValue, "{}", err.message);
    assert!(
        err.message
            .contains("was matched for architecture 'sm_90', but device 2 reports 'sm_80'"),
        "{}",
        err.message
    );
    assert_eq!(d2.loads(), 0, "nothing is loaded on the foreign device");
    assert!(d2.launches.lock().unwrap().is_empty());
    assert_eq!(d2.stats(), ModuleStats::default());
}

#[test]
fn threads_on_two_devices_load_each_kernel_once_per_device() {
    const THREADS: usize = 8;
    let devs = [Gpu::new(103, "sm_90", 0), Gpu::new(103, "sm_90", 1)];
    // Two kernels: f16 4096³ and f32 2048³ take different packed entries.
    let graphs = [
        matmul_graph(DT::HALF, 4096, 4096, 4096),
        matmul_graph(DT::FLOAT, 2048, 2048, 2048),
    ];
    let kernels = sm90();
    // Built and saved once on device 0 (the one load device 0 makes for each kernel); these
    // plans stay alive, so their modules stay resident.
    let seed = engine_on(devs[0].clone(), kernels.clone());
    let seeds: Vec<_> = graphs
        .iter()
        .map(|g| seed.create_execution_context(&config(&seed), g).unwrap())
        .collect();
    let saved: Vec<Vec<u8>> = seeds.iter().map(|c| save(&seed, c.as_ref())).collect();
    assert_eq!(devs[0].loads(), 2);

    let barrier = Barrier::new(THREADS);
    let plans = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let (dev, kernels, graphs, saved, barrier) =
                    (devs[i % 2].clone(), &kernels, &graphs, &saved, &barrier);
                s.spawn(move || {
                    // One handle (engine) per thread, on the thread's device.
                    let e = engine_on(dev, kernels.clone());
                    barrier.wait();
                    let mut plans = Vec::new();
                    for (g, bytes) in graphs.iter().zip(saved) {
                        let built = e.create_execution_context(&config(&e), g).unwrap();
                        execute(built.as_ref()).unwrap();
                        let restored = e
                            .serialization()
                            .unwrap()
                            .create_execution_context_from_serialized(bytes)
                            .unwrap();
                        execute(restored.as_ref()).unwrap();
                        plans.push(built);
                        plans.push(restored);
                    }
                    plans
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(plans.len(), THREADS * 4);
    for d in &devs {
        assert_eq!(d.loads(), 2, "device {}: one load per kernel", d.ordinal);
        assert_eq!(
            d.stats(),
            ModuleStats {
                loads: 2,
                resident: 2
            }
        );
        let launches = d.launches.lock().unwrap();
        assert!(
            launches.iter().all(|l| l.2 == d.ordinal),
            "device {} launched a module of another device",
            d.ordinal
        );
    }
    assert_eq!(devs[1].launches.lock().unwrap().len(), THREADS / 2 * 4);
    drop((plans, seeds));
    assert_eq!(
        devs[0].stats(),
        ModuleStats {
            loads: 2,
            resident: 0
        }
    );
}
