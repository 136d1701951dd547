//! Saved GPU plans of every Triton family stay byte-identical across refactors of the engines.
//!
//! Each case builds a small graph through the SDK on the kernel-ingestor engine over the
//! committed sm_90 archives with a fake device (no GPU needed: the engine selects, loads a module
//! and saves exactly as on a GPU), and compares `to_binary()` (graph + plan container) with the
//! golden file in `tests/golden/gpu_plans/`, written by the code before the engines remodel of
//! issue 29 (commit 43e72bd). Then the golden file is loaded on a handle whose GPU engine has
//! no kernels (restore without selection) and saved again: the same bytes.
//!
//! `HIPDNN_WRITE_GOLDEN=<dir>` writes the files instead of comparing (how they were made).
#![allow(missing_docs)]

use hipdnn::*;
use hipdnn_engines::gpu::{GPU_ENGINE_NAME, load_packed_descriptors, load_triton_descriptors};
use hipdnn_engines::ingestor::device::{
    DeviceError, FixedDevice, IngestorDevice, IngestorModule, KernelArgValue, KernelFunction,
    LaunchGeometry, PackedKernelArgs,
};
use hipdnn_engines::ingestor::kernel::KernelArgument;
use hipdnn_engines::ingestor::{IngestorEngine, KernelDescriptor, KpackCodeObjectReader};
use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
fn packed() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engines/kernels/packed/sm_90")
}

/// A CPU handle with the GPU engine over `kernels` on a fake sm_90 device ([`Recording`], not packing).
fn handle(kernels: Vec<KernelDescriptor>) -> Handle {
    let mut h = Handle::cpu().unwrap();
    let engine = IngestorEngine::new(
        GPU_ENGINE_NAME,
        kernels,
        Arc::new(FixedDevice(Arc::new(Recording::new(false)))),
        Arc::new(hipdnn_engines::registry::pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    h.backend_mut().register_engine(Arc::new(engine)).unwrap();
    h
}

fn graph(name: &str) -> Graph {
    let mut g = Graph::new();
    g.set_name(name)
        .set_io_data_type(DataType::Half)
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float)
        .set_preferred_engine_id(Some(hipdnn_backend::engine_id_from_name(GPU_ENGINE_NAME)));
    g
}

fn t(g: &mut Graph, name: &str, uid: i64, dims: &[i64], strides: &[i64]) -> TensorId {
    g.tensor(
        TensorAttributes::new(name)
            .uid(uid)
            .data_type(DataType::Half)
            .dims(dims.to_vec())
            .strides(strides.to_vec()),
    )
}

fn out(g: &mut Graph, y: TensorId, uid: i64) {
    g.set_output(y, true)
        .set_uid(y, uid)
        .set_data_type(y, DataType::Half);
}

/// NHWC strides of `[n, c, h, w]`.
fn nhwc(d: [i64; 4]) -> Vec<i64> {
    vec![d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]]
}

fn cases() -> Vec<(&'static str, Graph)> {
    let mut v = Vec::new();
    {
        let mut g = graph("matmul_bias_relu");
        let a = t(&mut g, "a", 1, &[1, 64, 64], &[4096, 64, 1]);
        let b = t(&mut g, "b", 2, &[1, 64, 64], &[4096, 64, 1]);
        let bias = t(&mut g, "bias", 3, &[1, 1, 64], &[64, 64, 1]);
        let c = g.matmul(a, b, MatmulAttributes::new());
        let c = g.pointwise(c, bias, PointwiseAttributes::with_mode(PointwiseMode::Add));
        let c = g.pointwise_unary(c, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
        out(&mut g, c, 4);
        v.push(("matmul_bias_relu", g));
    }
    let (xd, wd) = ([2, 16, 8, 8], [16, 16, 3, 3]);
    {
        let mut g = graph("conv_fprop");
        let x = t(&mut g, "x", 1, &xd, &nhwc(xd));
        let w = t(&mut g, "w", 2, &wd, &nhwc(wd));
        let a = ConvFpropAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]);
        let y = g.conv_fprop(x, w, a);
        g.set_strides(y, nhwc(xd));
        out(&mut g, y, 3);
        v.push(("conv_fprop", g));
    }
    {
        let mut g = graph("conv_dgrad");
        let dy = t(&mut g, "dy", 1, &xd, &nhwc(xd));
        let w = t(&mut g, "w", 2, &wd, &nhwc(wd));
        let a = ConvDgradAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]);
        let dx = g.conv_dgrad(dy, w, a);
        g.set_dims(dx, xd).set_strides(dx, nhwc(xd));
        out(&mut g, dx, 3);
        v.push(("conv_dgrad", g));
    }
    {
        let mut g = graph("conv_wgrad");
        let dy = t(&mut g, "dy", 1, &xd, &nhwc(xd));
        let x = t(&mut g, "x", 2, &xd, &nhwc(xd));
        let a = ConvWgradAttributes::new()
            .padding([1, 1])
            .stride([1, 1])
            .dilation([1, 1]);
        let dw = g.conv_wgrad(dy, x, a);
        g.set_dims(dw, wd).set_strides(dw, nhwc(wd));
        out(&mut g, dw, 3);
        v.push(("conv_wgrad", g));
    }
    for norm in ["layernorm", "rmsnorm"] {
        let mut g = graph(norm);
        let x = t(&mut g, "x", 1, &[32, 256], &[256, 1]);
        let s = t(&mut g, "scale", 2, &[1, 256], &[256, 1]);
        let e = g.tensor(
            TensorAttributes::scalar(TensorValue::Float32(1e-5))
                .name("eps")
                .uid(5),
        );
        let y = if norm == "layernorm" {
            let b = t(&mut g, "bias", 3, &[1, 256], &[256, 1]);
            let a = LayernormAttributes::new()
                .epsilon(e)
                .forward_phase(NormFwdPhase::Inference);
            g.layernorm(x, s, b, a).0
        } else {
            let a = RmsNormAttributes::new()
                .epsilon(e)
                .forward_phase(NormFwdPhase::Inference);
            g.rmsnorm(x, s, a).0
        };
        out(&mut g, y, 4);
        v.push((norm, g));
    }
    {
        let mut g = graph("sdpa");
        let d = [1, 2, 128, 64];
        let st = [16384, 8192, 64, 1];
        let (q, k, vv) = (
            t(&mut g, "q", 1, &d, &st),
            t(&mut g, "k", 2, &d, &st),
            t(&mut g, "v", 3, &d, &st),
        );
        let a = SdpaAttributes::new()
            .causal_mask(true)
            .attn_scale_value(0.125);
        let (o, _) = g.sdpa(q, k, vv, a);
        out(&mut g, o, 4);
        v.push(("sdpa", g));
    }
    {
        let mut g = graph("pointwise_add_relu");
        let a = t(&mut g, "a", 1, &[4096], &[1]);
        let b = t(&mut g, "b", 2, &[4096], &[1]);
        let y = g.pointwise(a, b, PointwiseAttributes::with_mode(PointwiseMode::Add));
        let y = g.pointwise_unary(y, PointwiseAttributes::with_mode(PointwiseMode::ReluFwd));
        out(&mut g, y, 3);
        v.push(("pointwise_add_relu", g));
    }
    {
        let mut g = graph("reduce_sum");
        let x = t(&mut g, "x", 1, &[64, 1024], &[1024, 1]);
        let y = g.reduction(
            x,
            [64, 1],
            ReductionAttributes::new().mode(ReductionMode::Add),
        );
        out(&mut g, y, 2);
        v.push(("reduce_sum", g));
    }
    {
        let mut g = graph("max_pool");
        let d = [2, 16, 16, 16];
        let x = t(&mut g, "x", 1, &d, &nhwc(d));
        let a = ResampleFwdAttributes::new()
            .window([3, 3])
            .stride([2, 2])
            .pre_padding([1, 1])
            .post_padding([1, 1])
            .resample_mode(ResampleMode::MaxPool);
        let y = g.resample_fwd(x, a);
        g.set_strides(y, nhwc([2, 16, 8, 8]));
        out(&mut g, y, 2);
        v.push(("max_pool", g));
    }
    {
        let mut g = graph("batchnorm_inference");
        let d = [2, 32, 8, 8];
        let x = t(&mut g, "x", 1, &d, &nhwc(d));
        let c = |g: &mut Graph, n: &str, u: i64| t(g, n, u, &[1, 32, 1, 1], &[32, 1, 1, 1]);
        let (m, iv, s, b) = (
            c(&mut g, "mean", 2),
            c(&mut g, "inv_var", 3),
            c(&mut g, "scale", 4),
            c(&mut g, "bias", 5),
        );
        let y = g.batchnorm_inference(x, m, iv, s, b, BatchnormInferenceAttributes::new());
        g.set_strides(y, nhwc(d));
        out(&mut g, y, 6);
        v.push(("batchnorm_inference", g));
    }
    {
        let mut g = graph("gather");
        let table = t(&mut g, "table", 1, &[100, 128], &[128, 1]);
        let index = g.tensor(
            TensorAttributes::new("index")
                .uid(2)
                .data_type(DataType::Int32)
                .dims([4, 8])
                .strides([8, 1]),
        );
        let y = g.gather(table, index);
        out(&mut g, y, 3);
        v.push(("gather", g));
    }
    v
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gpu_plans")
}

#[test]
fn every_triton_family_saves_the_golden_bytes_and_a_reload_saves_them_again() {
    let mut kernels = load_triton_descriptors(&packed()).unwrap();
    kernels.extend(load_packed_descriptors(&packed()).unwrap());
    let build = handle(kernels);
    let restore = handle(Vec::new());
    let write = std::env::var_os("HIPDNN_WRITE_GOLDEN").map(PathBuf::from);
    let mut checked = 0;
    for (name, mut g) in cases() {
        g.build(&build)
            .unwrap_or_else(|e| panic!("{name}: build: {e}"));
        assert_eq!(
            g.engine_name().unwrap(),
            GPU_ENGINE_NAME,
            "{name}: not on the GPU engine"
        );
        let bytes = g.to_binary().unwrap();
        if let Some(dir) = &write {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(format!("{name}.hdgp")), &bytes).unwrap();
            continue;
        }
        let golden = std::fs::read(golden_dir().join(format!("{name}.hdgp")))
            .unwrap_or_else(|e| panic!("{name}: golden file: {e}"));
        assert!(
            bytes == golden,
            "{name}: a fresh build saves other bytes than the golden file"
        );
        let loaded = Graph::from_binary(&restore, &golden)
            .unwrap_or_else(|e| panic!("{name}: load without kernels: {e}"));
        assert!(
            loaded.to_binary().unwrap() == golden,
            "{name}: a reload saves other bytes"
        );
        checked += 1;
    }
    if write.is_none() {
        assert_eq!(checked, 12);
    }
}

/// What a recording device's launches passed: the argument list of each launch (for a packed
/// launch, the packed list with the execute's addresses written in).
type Launches = std::sync::Mutex<Vec<Vec<KernelArgValue>>>;

/// Arguments a [`Recording`] device packed.
struct Packed(Vec<KernelArgValue>);
impl PackedKernelArgs for Packed {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An sm_90 device that records every launch's arguments; with `packs` it also packs
/// arguments ([`IngestorDevice::pack_args`]) and counts its packed launches.
struct Recording {
    packs: bool,
    launches: Launches,
    packed_launches: std::sync::atomic::AtomicUsize,
}
impl Recording {
    fn new(packs: bool) -> Recording {
        Recording {
            packs,
            launches: Default::default(),
            packed_launches: Default::default(),
        }
    }
}
impl IngestorDevice for Recording {
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
        _f: &dyn KernelFunction,
        _g: LaunchGeometry,
        a: &[KernelArgValue],
        _s: &[KernelArgument],
        _stream: u64,
    ) -> Result<(), DeviceError> {
        self.launches.lock().unwrap().push(a.to_vec());
        Ok(())
    }
    fn pack_args(
        &self,
        _f: &dyn KernelFunction,
        args: &[KernelArgValue],
        _s: &[KernelArgument],
    ) -> Option<Arc<dyn PackedKernelArgs>> {
        self.packs
            .then(|| Arc::new(Packed(args.to_vec())) as Arc<dyn PackedKernelArgs>)
    }
    fn launch_packed(
        &self,
        _f: &dyn KernelFunction,
        packed: &dyn PackedKernelArgs,
        _g: LaunchGeometry,
        pointers: &[(usize, u64)],
        _stream: u64,
    ) -> Result<(), DeviceError> {
        let mut a = packed.as_any().downcast_ref::<Packed>().unwrap().0.clone();
        for &(i, p) in pointers {
            a[i] = KernelArgValue::Pointer(p);
        }
        self.launches.lock().unwrap().push(a);
        self.packed_launches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    fn memset_async(&self, _a: u64, _v: u8, _b: u64, _stream: u64) -> Result<(), DeviceError> {
        Ok(())
    }
    fn synchronize(&self, _stream: u64) -> Result<(), DeviceError> {
        Ok(())
    }
}

/// Device memory the fake device never touches: an address and a length.
struct FakeMemory(u64, usize);
impl<'a> hipdnn::buffer::Bind<'a> for FakeMemory {
    fn bind(self) -> hipdnn_backend::engine::BufferRef<'a> {
        hipdnn_backend::engine::BufferRef::Device {
            addr: self.0,
            len: self.1,
        }
    }
}

/// Every case executed on a device that packs arguments passes the same arguments as on one
/// that does not (the plan's packed launch writes exactly the addresses the handler would),
/// for bindings at aligned addresses (packed) and at addresses only 4-byte aligned (the
/// handler's path, or its refusal, on both).
#[test]
fn packed_launches_pass_the_handlers_arguments() {
    let mut kernels = load_triton_descriptors(&packed()).unwrap();
    kernels.extend(load_packed_descriptors(&packed()).unwrap());
    let device = |packs| Arc::new(Recording::new(packs));
    let on = |dev: &Arc<Recording>| {
        let mut h = Handle::cpu().unwrap();
        let engine = IngestorEngine::new(
            GPU_ENGINE_NAME,
            kernels.clone(),
            Arc::new(FixedDevice(dev.clone())),
            Arc::new(hipdnn_engines::registry::pack_registry()),
            Arc::new(KpackCodeObjectReader),
        );
        h.backend_mut().register_engine(Arc::new(engine)).unwrap();
        h
    };
    let (plain, packing) = (device(false), device(true));
    let (hp, hk) = (on(&plain), on(&packing));
    let mut checked = 0;
    for (name, g) in cases() {
        let run = |h: &Handle, offset: u64| {
            let mut g = g.clone();
            g.build(h).unwrap_or_else(|e| panic!("{name}: build: {e}"));
            let uids: Vec<i64> = g
                .tensors()
                .filter(|(_, t)| !t.is_virtual)
                .filter_map(|(_, t)| t.uid)
                .collect();
            let mut pack = VariantPack::new();
            for (i, uid) in uids.iter().enumerate() {
                pack = pack.with(
                    *uid,
                    FakeMemory(0x7f00_0000_0000 + (i as u64) * 0x10_0000 + offset, 1 << 30),
                );
            }
            let ws = g.workspace_size().unwrap();
            // A device workspace when the plan needs one.
            if ws > 0 {
                let mut b = hipdnn_backend::VariantPackDescriptor::new();
                for (i, uid) in uids.iter().enumerate() {
                    b.insert(
                        *uid,
                        hipdnn_backend::engine::BufferRef::Device {
                            addr: 0x7f00_0000_0000 + (i as u64) * 0x10_0000 + offset,
                            len: 1 << 30,
                        },
                    );
                }
                b.set_workspace(hipdnn_backend::engine::BufferRef::Device {
                    addr: 0x7e00_0000_0000 + offset,
                    len: ws,
                });
                let plan = hipdnn_backend::ExecutionPlanDescriptor::from_bytes(
                    h.backend(),
                    &g.to_compiled_plan_binary().unwrap(),
                )
                .unwrap();
                plan.execute(h.backend(), b).map_err(|e| e.message)
            } else {
                g.execute(h, pack, None).map_err(|e| e.message)
            }
        };
        for offset in [0u64, 4] {
            let a = run(&hp, offset);
            let b = run(&hk, offset);
            assert_eq!(a, b, "{name} at offset {offset}: results differ");
        }
        checked += 1;
    }
    assert_eq!(checked, 12);
    let (a, b) = (
        plain.launches.lock().unwrap().clone(),
        packing.launches.lock().unwrap().clone(),
    );
    assert!(!a.is_empty());
    assert_eq!(a, b, "the packed launches passed other arguments");
    let n = packing
        .packed_launches
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(n >= 12, "only {n} packed launches");
    assert_eq!(
        plain
            .packed_launches
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}
