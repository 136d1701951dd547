//! Host work of `Graph::execute` per call, on a GPU engine whose device does nothing (issue 29).
//!
//! The graph is the one `hipdnn-bench overhead` times on a GPU: a 1-element IDENTITY pointwise
//! graph (f32, `[1,1,1,1]`), built through the SDK on the kernel-ingestor GPU engine over the
//! committed sm_90 archives, on a fake sm_90 device whose `launch` only reads its arguments.
//! Two rows:
//! - `raw_launch`: the device's `launch` called with the arguments the plan passes (what a
//!   caller who resolved everything by hand pays; a few ns);
//! - `graph_execute`: `Graph::execute` with a `VariantPack` built per call, as a user writes it
//!   (SDK pack checks, backend routing and checks, the engine's argument binding, the launch);
//! - `kernel_args`: the plan's dispatch handler building the kernel arguments alone (for the
//!   launch restored from the plan's bytes).
//!
//! `graph_execute − raw_launch` is the host overhead the SDK, backend and engine add per
//! execute; the GPU figure (`hipdnn-bench overhead`) adds the driver's own launch cost on both
//! sides.
//!
//! ```text
//! cargo bench -p hipdnn --no-default-features --bench execute_overhead
//! ```

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use hipdnn::*;
use hipdnn_backend::engine::BufferRef;
use hipdnn_engines::gpu::{GPU_ENGINE_NAME, load_packed_descriptors, load_triton_descriptors};
use hipdnn_engines::ingestor::device::{
    DeviceError, FixedDevice, IngestorDevice, IngestorModule, KernelArgValue, KernelFunction,
    LaunchGeometry,
};
use hipdnn_engines::ingestor::kernel::KernelArgument;
use hipdnn_engines::ingestor::{IngestorEngine, KpackCodeObjectReader};
use std::any::Any;
use std::path::Path;
use std::sync::{Arc, Mutex};

struct Function;
impl KernelFunction for Function {
    fn as_any(&self) -> &dyn Any {
        self
    }
}
struct Module;
impl IngestorModule for Module {
    fn get_function(&self, _symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError> {
        Ok(Arc::new(Function))
    }
}

/// What the last launch passed, for the raw row.
type Launched = (LaunchGeometry, Vec<KernelArgValue>, Vec<KernelArgument>);

/// An sm_90 device that loads any module; `launch` reads its arguments and keeps the first
/// launch's for the raw row.
#[derive(Default)]
struct Sm90 {
    first: Mutex<Option<Launched>>,
}
impl IngestorDevice for Sm90 {
    fn arch(&self) -> String {
        "sm_90".into()
    }
    fn ordinal(&self) -> i32 {
        0
    }
    fn load_module(&self, _code: &[u8]) -> Result<Arc<dyn IngestorModule>, DeviceError> {
        Ok(Arc::new(Module))
    }
    fn launch(
        &self,
        f: &dyn KernelFunction,
        g: LaunchGeometry,
        a: &[KernelArgValue],
        s: &[KernelArgument],
        stream: u64,
    ) -> Result<(), DeviceError> {
        black_box((f, g, a, s, stream));
        let mut first = self.first.lock().unwrap();
        if first.is_none() {
            *first = Some((g, a.to_vec(), s.to_vec()));
        }
        Ok(())
    }
    fn synchronize(&self, _stream: u64) -> Result<(), DeviceError> {
        Ok(())
    }
}

/// Device memory the fake device never touches: an address and a length.
struct Fake(u64, usize);
impl<'a> hipdnn::buffer::Bind<'a> for Fake {
    fn bind(self) -> BufferRef<'a> {
        BufferRef::Device {
            addr: self.0,
            len: self.1,
        }
    }
}

fn bench(c: &mut Criterion) {
    let packed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engines/kernels/packed/sm_90");
    let mut kernels = load_packed_descriptors(&packed).unwrap();
    kernels.extend(load_triton_descriptors(&packed).unwrap());
    let dev = Arc::new(Sm90::default());
    let mut h = Handle::cpu().unwrap();
    let engine = IngestorEngine::new(
        GPU_ENGINE_NAME,
        kernels,
        Arc::new(FixedDevice(dev.clone())),
        Arc::new(hipdnn_engines::registry::pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    h.backend_mut().register_engine(Arc::new(engine)).unwrap();

    let mut g = Graph::new();
    g.set_name("pw")
        .set_io_data_type(DataType::Float)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float)
        .set_preferred_engine_id(Some(hipdnn_backend::engine_id_from_name(GPU_ENGINE_NAME)));
    let a = g.tensor(
        TensorAttributes::new("a")
            .uid(1)
            .dims(vec![1, 1, 1, 1])
            .packed_nchw(),
    );
    let y = g.pointwise_unary(a, PointwiseAttributes::with_mode(PointwiseMode::Identity));
    g.set_output(y, true).set_uid(y, 4);
    g.build(&h).unwrap();
    assert_eq!(g.engine_name().unwrap(), GPU_ENGINE_NAME);
    let exec = || {
        g.execute(
            &h,
            VariantPack::new()
                .with(1, Fake(0x7f00_0000_1000, 4))
                .with(4, Fake(0x7f00_0000_2000, 4)),
            None,
        )
        .unwrap()
    };
    exec();
    let (geom, args, sig) = dev.first.lock().unwrap().clone().unwrap();

    let mut grp = c.benchmark_group("execute_overhead");
    grp.bench_function("raw_launch", |b| {
        b.iter(|| {
            dev.launch(&Function, geom, black_box(&args), &sig, 0)
                .unwrap()
        })
    });
    grp.bench_function("graph_execute", |b| b.iter(exec));
    // The handler's kernel arguments alone, for the plan's restored launch.
    let plan = g.to_compiled_plan_binary().unwrap();
    let env = hipdnn_backend::PlanEnvelope::parse(&plan).unwrap();
    let p = hipdnn_engines::ingestor::payload::decode_payload(env.plugin_payload).unwrap();
    let handler = hipdnn_engines::gpu::gpu_registry()
        .resolve(&p.dispatch_symbol)
        .unwrap();
    let launch = handler
        .restore_launch(&p.dispatch_symbol, &p.launch_values)
        .unwrap();
    let bindings = [
        hipdnn_backend::engine::TensorBinding {
            uid: 1,
            data: BufferRef::Device {
                addr: 0x7f00_0000_1000,
                len: 4,
            },
        },
        hipdnn_backend::engine::TensorBinding {
            uid: 4,
            data: BufferRef::Device {
                addr: 0x7f00_0000_2000,
                len: 4,
            },
        },
    ];
    grp.bench_function("kernel_args", |b| {
        b.iter(|| black_box(handler.kernel_args(&launch, black_box(&bindings)).unwrap()))
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
