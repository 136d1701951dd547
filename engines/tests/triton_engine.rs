//! The GPU engine's Triton entries end to end with a fake sm_90 device (no GPU): the committed
//! `triton.json` + kpack archive, the static rule's choice per shape (spec vs generic entry,
//! tile size), the launch a plan makes (grid, block, shared memory, arguments with null bias
//! and scratch pointers), the refusal of unaligned tensors on a spec plan, and save → restore
//! on an engine with no kernels (restore selects nothing) → the same launch; for conv wgrad,
//! the split's workspace: its counter region zeroed right before every launch and its address
//! passed as the kernel's fourth argument, before and after save → restore.

#[path = "ingestor_support.rs"]
mod support;

use hipdnn_backend::engine::{BufferRef, Engine, EngineConfig, ExecuteArgs, TensorBinding};
use hipdnn_backend::graph::OperationGraph;
use hipdnn_backend::status::PluginStatus;
use hipdnn_engines::gpu::load_triton_descriptors;
use hipdnn_engines::ingestor::DispatchHandler;
use hipdnn_engines::ingestor::device::{FixedDevice, KernelArgValue};
use hipdnn_engines::ingestor::engine::IngestorEngine;
use hipdnn_engines::ingestor::launch_values::LaunchValue;
use hipdnn_engines::ingestor::packs::conv_fprop::{self, ConvFpropHandler};
use hipdnn_engines::ingestor::payload::decode_payload;
use hipdnn_engines::ingestor::{KernelDescriptor, KpackCodeObjectReader};
use hipdnn_engines::reference::testing::{GraphBuilder, TensorSpec};
use hipdnn_engines::registry::pack_registry;
use hipdnn_schema::graph::{
    ConvMode, ConvolutionBwdAttributes, ConvolutionBwdAttributesArgs, ConvolutionFwdAttributes,
    ConvolutionFwdAttributesArgs, ConvolutionWrwAttributes, ConvolutionWrwAttributesArgs,
    DataType as DT, NodeAttributes, PointwiseAttributesArgs, PointwiseMode as PM,
};
use std::path::PathBuf;
use std::sync::Arc;
use support::FakeDevice;

fn engine(dev: Arc<FakeDevice>, kernels: Vec<KernelDescriptor>) -> IngestorEngine {
    IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        kernels,
        Arc::new(FixedDevice(dev)),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    )
}

fn sm90() -> Vec<KernelDescriptor> {
    load_triton_descriptors(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed/sm_90"))
        .unwrap()
}

fn matmul_graph(dt: DT, m: i64, n: i64, k: i64) -> OperationGraph {
    matmul_graph_b(dt, m, n, k, false)
}

/// [`matmul_graph`]; `b_col`: B column-major (strides K·N, 1, K: an (N, K) row-major weight).
fn matmul_graph_b(dt: DT, m: i64, n: i64, k: i64, b_col: bool) -> OperationGraph {
    let mut b = TensorSpec::new(2, "b", dt, &[1, k, n]);
    if b_col {
        b = b.strides(&[k * n, 1, k]);
    }
    let mut g = GraphBuilder::new("mm");
    g.tensor(TensorSpec::new(1, "a", dt, &[1, m, k]))
        .tensor(b)
        .tensor(TensorSpec::new(3, "c", dt, &[1, m, n]));
    g.matmul("mm", 1, 2, 3);
    OperationGraph::from_bytes(&g.build()).unwrap()
}

/// The 3×3 cross-correlation node x (UID 1) * w (UID 2) → y (UID 3), padding 1, stride 1.
fn conv_node(g: &mut GraphBuilder) {
    g.node(
        "conv",
        Box::new(|fbb| {
            let one = fbb.create_vector(&[1i64, 1]);
            let args = ConvolutionFwdAttributesArgs {
                x_tensor_uid: 1,
                w_tensor_uid: 2,
                y_tensor_uid: 3,
                pre_padding: Some(one),
                post_padding: Some(one),
                stride: Some(one),
                dilation: Some(one),
                conv_mode: ConvMode::CROSS_CORRELATION,
            };
            (
                NodeAttributes::ConvolutionFwdAttributes,
                ConvolutionFwdAttributes::create(fbb, &args).as_union_value(),
            )
        }),
    );
}

fn conv_graph(dt: DT, nhwc: bool, n: i64, c: i64, h: i64, k: i64) -> OperationGraph {
    let lay = |t: TensorSpec| if nhwc { t.channels_last() } else { t };
    let mut g = GraphBuilder::new("conv");
    g.tensor(lay(TensorSpec::new(1, "x", dt, &[n, c, h, h])))
        .tensor(lay(TensorSpec::new(2, "w", dt, &[k, c, 3, 3])))
        .tensor(lay(TensorSpec::new(3, "y", dt, &[n, k, h, h])));
    conv_node(&mut g);
    OperationGraph::from_bytes(&g.build()).unwrap()
}

/// The saved payload of the plan the engine builds for `graph`.
fn plan_bytes(e: &IngestorEngine, graph: &OperationGraph) -> Vec<u8> {
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            graph,
        )
        .unwrap();
    e.serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap()
}

fn int(p: &hipdnn_engines::ingestor::payload::IngestorPlanPayload, k: &str) -> i64 {
    match p.launch_values.get(k) {
        Some(LaunchValue::Int(v)) => *v,
        v => panic!("{k}: {v:?}"),
    }
}

/// The backend's refusal of executing `e`'s plan for `g` with `tensors` and no workspace: the
/// workspace is checked once, by the backend's plan, with one message (issue 29); the engine's
/// context does not check its size again.
fn workspace_refusal(
    e: IngestorEngine,
    g: &OperationGraph,
    tensors: Vec<TensorBinding<'static>>,
) -> hipdnn_backend::BackendError {
    let e = Arc::new(e);
    let mut h = hipdnn_backend::BackendHandle::new();
    h.register_engine(e.clone()).unwrap();
    let plan = hipdnn_backend::ExecutionPlanDescriptor::finalize(
        &h,
        &EngineConfig {
            engine_id: e.id(),
            knob_choices: vec![],
        },
        g,
    )
    .unwrap();
    let pack = tensors
        .into_iter()
        .fold(hipdnn_backend::VariantPackDescriptor::new(), |v, t| {
            v.with(t.uid, t.data)
        });
    plan.execute(&h, pack).unwrap_err()
}

fn bindings(base: u64) -> Vec<TensorBinding<'static>> {
    [1i64, 2, 3]
        .iter()
        .map(|uid| TensorBinding {
            uid: *uid,
            data: BufferRef::Device {
                addr: base + 0x1000_0000 * *uid as u64,
                len: 1 << 27,
            },
        })
        .collect()
}

#[test]
fn the_static_rule_picks_spec_tiles_by_shape_and_generic_for_unhinted_shapes() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    // (graph, spec, block_m, block_n)
    let cases = [
        (matmul_graph(DT::HALF, 4096, 4096, 4096), 1, 128, 256),
        (matmul_graph(DT::BFLOAT16, 512, 512, 512), 1, 64, 128),
        (matmul_graph(DT::HALF, 100, 37, 53), 0, 64, 64),
        (matmul_graph(DT::FLOAT, 2048, 2048, 2048), 1, 128, 128),
        // B column-major (PyTorch's Linear weight as B = Wᵀ): the bcol entries, same tiles;
        // MiniLM's 4096×384×384 takes the 64×64 tile (128×128 gives too few tiles).
        (
            matmul_graph_b(DT::FLOAT, 2048, 2048, 2048, true),
            4,
            128,
            128,
        ),
        (matmul_graph_b(DT::FLOAT, 4096, 384, 384, true), 4, 64, 64),
        // f32 over K ≤ 512 (MiniLM's 384 → 1536): 64×64, though 128×128 gives 384 tiles;
        // f16 and a longer f32 K keep the big tile.
        (matmul_graph_b(DT::FLOAT, 4096, 1536, 384, true), 4, 64, 64),
        (matmul_graph(DT::FLOAT, 4096, 1536, 384), 1, 64, 64),
        (matmul_graph(DT::FLOAT, 4096, 1536, 528), 1, 128, 128),
        (matmul_graph(DT::HALF, 4096, 1536, 384), 1, 128, 256),
        (
            matmul_graph_b(DT::HALF, 4096, 4096, 4096, true),
            4,
            128,
            256,
        ),
        // M needs no hint: 100 rows over N = K = 48 take the bcol entries.
        (matmul_graph_b(DT::HALF, 100, 48, 48, true), 4, 64, 128),
        // Few rows (issue 33's decode, MiniLM at one 16-token sentence): a tile that leaves
        // half its rows idle is refused, however many tiles it gives; the 16-row entry of the
        // variant serves (spec or bcol at any M when N and K are multiples of 16).
        (matmul_graph_b(DT::FLOAT, 16, 384, 1536, true), 4, 16, 32),
        (matmul_graph_b(DT::FLOAT, 16, 1536, 384, true), 4, 16, 32),
        (matmul_graph(DT::FLOAT, 16, 384, 384), 1, 16, 32),
        (matmul_graph(DT::HALF, 1, 4096, 4096), 1, 16, 32),
        (
            matmul_graph_b(DT::BFLOAT16, 8, 11008, 4096, true),
            4,
            16,
            32,
        ),
        (matmul_graph(DT::HALF, 7, 4096, 4100), 0, 16, 32),
        (matmul_graph(DT::HALF, 32, 4096, 4096), 1, 16, 32),
        // M = 48 fills more than half of a 64-row tile: kept; M = 16 over N = 16384 (128
        // tiles of 128 × 128): the 16-row tile all the same.
        (matmul_graph(DT::FLOAT, 48, 384, 384), 1, 64, 64),
        (matmul_graph(DT::HALF, 16, 16384, 64), 1, 16, 32),
        (conv_graph(DT::HALF, true, 32, 64, 56, 64), 1, 128, 64),
        // C = 128 over 3×3 taps: two 64-deep blocks per tap, so 64-row tiles (static rule).
        (conv_graph(DT::HALF, true, 32, 128, 28, 128), 1, 64, 64),
        // f32 keeps its 128-row tile there.
        (conv_graph(DT::FLOAT, true, 32, 128, 28, 128), 1, 128, 64),
        // NCHW with C and K multiples of 16: the transposing channels-first entry (its one
        // tile per dtype); C = 24 NCHW: the in-place channels-first entry (its 128-channel tile
        // refused for K = 64).
        (conv_graph(DT::HALF, false, 32, 64, 56, 64), 3, 64, 64),
        (conv_graph(DT::HALF, false, 32, 128, 28, 128), 3, 64, 64),
        (conv_graph(DT::FLOAT, false, 8, 64, 56, 64), 3, 128, 64),
        (conv_graph(DT::HALF, false, 32, 24, 56, 64), 2, 128, 64),
        (conv_graph(DT::FLOAT, true, 1, 24, 9, 32), 0, 64, 64),
    ];
    for (i, (g, spec, bm, bn)) in cases.iter().enumerate() {
        let p = decode_payload(&plan_bytes(&e, g)).unwrap();
        assert_eq!(
            (int(&p, "spec"), int(&p, "block_m"), int(&p, "block_n")),
            (*spec, *bm, *bn),
            "case {i}: {}",
            p.dispatch_symbol
        );
        assert_eq!(p.target, "sm_90");
    }
}

#[test]
fn a_saved_triton_plan_restores_without_kernels_and_launches_identically() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let g = matmul_graph(DT::HALF, 4096, 4096, 4096);
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &g,
        )
        .unwrap();
    assert_eq!(ctx.workspace_size(), 0);
    let mut t = bindings(0);
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap();
    let (geom, args) = dev.launches.lock().unwrap()[0].clone();
    assert_eq!(geom.grid, [32 * 16, 1, 1]);
    assert_eq!(geom.block, [256, 1, 1]);
    assert_eq!(geom.shared_mem_bytes, 147_456);
    assert_eq!(args.len(), 20);
    assert_eq!(
        &args[3..6],
        &[KernelArgValue::Pointer(0); 3],
        "no bias, residual or scale"
    );
    assert_eq!(
        &args[18..],
        &[KernelArgValue::Pointer(0); 2],
        "null scratch"
    );
    assert_eq!(args[6], KernelArgValue::I32(4096));
    assert_eq!(args[17], KernelArgValue::I32(0), "no epilogue");
    // Unaligned A on a spec plan: refused, nothing launched.
    let mut t = bindings(8);
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::BadParam);
    assert!(
        err.message.contains(
            "this plan runs the specialized matmul kernel, which needs 16-byte aligned A, B and C"
        ),
        "{}",
        err.message
    );
    assert_eq!(dev.launches.lock().unwrap().len(), 1);

    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let dev2 = FakeDevice::new("sm_90", 0);
    let e2 = engine(dev2.clone(), vec![]);
    let restored = e2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    let mut t = bindings(0);
    restored
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap();
    assert_eq!(dev2.launches.lock().unwrap()[0], (geom, args));
    // A loaded plan is re-saved by the backend from the bytes it was loaded from (the engine
    // refuses the hook); the SDK-level byte-identical re-save runs in `hipdnn-bench triton`.
}

/// `conv_graph` with its output made virtual and `ops` appended: each (mode, other input UID)
/// consumes the previous output; tensors 10 (bias [1, K, 1, 1]), 11 (residual, y's dims, NHWC
/// when `nhwc`) and 12 (scale [1, 1, 1, 1]) exist; the last output is UID 30 + ops.len().
/// The device address the fake bindings of [`fused_bindings`] give tensor `uid`.
fn fused_addr(uid: i64) -> u64 {
    0x1000_0000 * uid as u64
}

/// Fake device bindings of x, w, the output (UID 33), bias and residual of a
/// [`fused_conv_graph`] with three epilogue nodes: 1 MiB each at [`fused_addr`].
fn fused_bindings() -> Vec<TensorBinding<'static>> {
    [1i64, 2, 33, 10, 11]
        .iter()
        .map(|u| TensorBinding {
            uid: *u,
            data: BufferRef::Device {
                addr: fused_addr(*u),
                len: 1 << 20,
            },
        })
        .collect()
}

fn fused_conv_graph(dt: DT, nhwc: bool, ops: &[(PM, Option<i64>)]) -> OperationGraph {
    let (n, c, h, k) = (2, 32, 8, 48);
    let lay = |t: TensorSpec| if nhwc { t.channels_last() } else { t };
    let mut g = GraphBuilder::new("fused");
    g.tensor(lay(TensorSpec::new(1, "x", dt, &[n, c, h, h])))
        .tensor(lay(TensorSpec::new(2, "w", dt, &[k, c, 3, 3])))
        .tensor(lay(TensorSpec::new(3, "y", dt, &[n, k, h, h])).virtual_())
        .tensor(TensorSpec::new(10, "bias", dt, &[1, k, 1, 1]))
        .tensor(lay(TensorSpec::new(11, "res", dt, &[n, k, h, h])))
        .tensor(TensorSpec::new(12, "scale", dt, &[1, 1, 1, 1]));
    conv_node(&mut g);
    let mut cur = 3;
    for (i, (mode, other)) in ops.iter().enumerate() {
        let out = 31 + i as i64;
        let t = lay(TensorSpec::new(out, "t", dt, &[n, k, h, h]));
        g.tensor(if i + 1 < ops.len() { t.virtual_() } else { t });
        g.pointwise(
            "pw",
            PointwiseAttributesArgs {
                operation: *mode,
                in_0_tensor_uid: cur,
                in_1_tensor_uid: *other,
                out_0_tensor_uid: out,
                ..Default::default()
            },
        );
        cur = out;
    }
    OperationGraph::from_bytes(&g.build()).unwrap()
}

#[test]
fn conv_epilogues_fuse_into_one_launch_with_the_documented_code() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let add = |u| (PM::ADD, Some(u));
    // (ops, epilogue code, res.uid present, scale.uid present)
    type Case = (Vec<(PM, Option<i64>)>, i64, bool, bool);
    let cases: Vec<Case> = vec![
        (
            vec![add(10), add(11), (PM::RELU_FWD, None)],
            1 | 16 | 2,
            true,
            false,
        ),
        (
            vec![add(10), (PM::GELU_FWD, None)],
            1 | (2 << 1),
            false,
            false,
        ),
        (vec![(PM::GELU_APPROX_TANH_FWD, None)], 3 << 1, false, false),
        (vec![(PM::SIGMOID_FWD, None)], 4 << 1, false, false),
        (
            vec![add(10), (PM::TANH_FWD, None), add(11)],
            1 | (5 << 1) | 32,
            true,
            false,
        ),
        (
            vec![(PM::MUL, Some(12)), add(10), (PM::SWISH_FWD, None)],
            64 | 1 | (6 << 1),
            false,
            true,
        ),
    ];
    for (i, (ops, code, res, scale)) in cases.iter().enumerate() {
        let p = decode_payload(&plan_bytes(&e, &fused_conv_graph(DT::HALF, true, ops))).unwrap();
        assert_eq!(
            p.dispatch_symbol, "hipkernel.conv_fprop.dispatch.v2",
            "case {i}"
        );
        assert_eq!(int(&p, "epilogue"), *code, "case {i}");
        assert_eq!(
            int(&p, "spec"),
            1,
            "case {i}: NHWC residual keeps the spec entry"
        );
        assert_eq!(p.launch_values.contains_key("res.uid"), *res, "case {i}");
        assert_eq!(
            p.launch_values.contains_key("scale.uid"),
            *scale,
            "case {i}"
        );
        assert_eq!(int(&p, "y.uid"), 30 + ops.len() as i64, "case {i}");
    }
    // The launch of conv → bias → add → ReLU: x, w, y, bias, residual, null scale.
    let g = fused_conv_graph(DT::HALF, true, &[add(10), add(11), (PM::RELU_FWD, None)]);
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &g,
        )
        .unwrap();
    let addr = fused_addr;
    let mut t = fused_bindings();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap();
    let (_, args) = dev.launches.lock().unwrap()[0].clone();
    let ptr = |u: i64| KernelArgValue::Pointer(addr(u));
    assert_eq!(
        &args[..6],
        &[
            ptr(1),
            ptr(2),
            ptr(33),
            ptr(10),
            ptr(11),
            KernelArgValue::Pointer(0)
        ]
    );
    // A residual that is not 16-byte aligned is refused on the spec entry.
    t[4].data = BufferRef::Device {
        addr: addr(11) + 2,
        len: 1 << 20,
    };
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::BadParam);
    assert_eq!(
        err.message,
        "tensor UID 11 is at 0xb0000002; this plan runs the specialized conv kernel, which needs 16-byte aligned x, w, y and the residual"
    );
    // The same graph in NCHW takes the transposing channels-first entry.
    let mut gb_ops = vec![add(10), add(11), (PM::RELU_FWD, None)];
    let p = decode_payload(&plan_bytes(&e, &fused_conv_graph(DT::HALF, false, &gb_ops))).unwrap();
    assert_eq!((int(&p, "spec"), int(&p, "epilogue")), (3, 19));
    // Refusals (the pack's texts): order, a second activation, a mode it does not fuse, an
    // ADD operand that is neither bias nor residual. The reference engine runs such graphs.
    gb_ops = vec![(PM::RELU_FWD, None), add(10)];
    let refusal = |ops: &[(PM, Option<i64>)]| {
        ConvFpropHandler::V2
            .prepare(&fused_conv_graph(DT::HALF, true, ops))
            .unwrap_err()
    };
    let err = refusal(&gb_ops);
    assert!(err.message.contains("the conv_fprop pack fuses scale → bias → residual → activation → residual, each at most once; cannot fuse ADD here"), "{}", err.message);
    let err = refusal(&[(PM::RELU_FWD, None), (PM::TANH_FWD, None)]);
    assert!(
        err.message.contains("cannot fuse TANH_FWD here"),
        "{}",
        err.message
    );
    let err = refusal(&[(PM::ELU_FWD, None)]);
    assert!(
        err.message.contains("cannot fuse ELU_FWD here"),
        "{}",
        err.message
    );
    let err = refusal(&[add(12)]);
    assert!(err.message.contains("the conv_fprop pack fuses ADD(x, t) where t is a bias of dims [1, K, 1, 1] with unit K stride or a non-virtual residual of the output's dims and data type; tensor 12 has dims [1, 1, 1, 1]"), "{}", err.message);
}

/// A fake device that allocates scratch memory (recording each size) and "times" enqueued
/// work as the sum of the launches' dynamic shared memory in KiB, so the benchmark's winner
/// is known: the entry with the least shared memory.
struct TimingDevice {
    inner: Arc<FakeDevice>,
    allocs: std::sync::Mutex<Vec<usize>>,
    /// Launches asking for more dynamic shared memory than this fail (nothing is recorded).
    max_shared: u32,
}

struct FakeScratch(u64);
impl hipdnn_engines::ingestor::device::ScratchMemory for FakeScratch {
    fn addr(&self) -> u64 {
        self.0
    }
}

impl hipdnn_engines::ingestor::device::IngestorDevice for TimingDevice {
    fn arch(&self) -> String {
        self.inner.arch()
    }
    fn ordinal(&self) -> i32 {
        self.inner.ordinal()
    }
    fn load_module(
        &self,
        code: &[u8],
    ) -> Result<
        Arc<dyn hipdnn_engines::ingestor::device::IngestorModule>,
        hipdnn_engines::ingestor::device::DeviceError,
    > {
        self.inner.load_module(code)
    }
    fn launch(
        &self,
        f: &dyn hipdnn_engines::ingestor::device::KernelFunction,
        geometry: hipdnn_engines::ingestor::device::LaunchGeometry,
        args: &[KernelArgValue],
        signature: &[hipdnn_engines::ingestor::kernel::KernelArgument],
        stream: u64,
    ) -> Result<(), hipdnn_engines::ingestor::device::DeviceError> {
        if geometry.shared_mem_bytes > self.max_shared {
            return Err(hipdnn_engines::ingestor::device::DeviceError::new(
                "hipModuleLaunchKernel",
                "hipErrorOutOfResources",
            ));
        }
        self.inner.launch(f, geometry, args, signature, stream)
    }
    fn synchronize(&self, s: u64) -> Result<(), hipdnn_engines::ingestor::device::DeviceError> {
        self.inner.synchronize(s)
    }
    fn alloc_scratch(
        &self,
        bytes: usize,
    ) -> Result<
        Box<dyn hipdnn_engines::ingestor::device::ScratchMemory>,
        hipdnn_engines::ingestor::device::DeviceError,
    > {
        let mut a = self.allocs.lock().unwrap();
        a.push(bytes);
        Ok(Box::new(FakeScratch(
            0x7000_0000_0000 + 0x1_0000_0000 * a.len() as u64,
        )))
    }
    fn time_ms(
        &self,
        _stream: u64,
        enqueue: &mut dyn FnMut() -> hipdnn_backend::status::PluginResult<()>,
    ) -> hipdnn_backend::status::PluginResult<f64> {
        let before = self.inner.launches.lock().unwrap().len();
        enqueue()?;
        let l = self.inner.launches.lock().unwrap();
        Ok(l[before..]
            .iter()
            .map(|(g, _)| f64::from(g.shared_mem_bytes) / 1024.0)
            .sum())
    }
}

#[test]
fn a_benchmarking_build_times_every_candidate_on_scratch_and_keeps_the_fastest() {
    use hipdnn_engines::ingestor::engine::{
        BENCH_LAUNCHES, BENCH_ROUNDS, BENCH_WARMUP, KNOB_BENCHMARK,
    };
    let fake = FakeDevice::new("sm_90", 0);
    let dev = Arc::new(TimingDevice {
        inner: fake.clone(),
        allocs: std::sync::Mutex::new(Vec::new()),
        max_shared: u32::MAX,
    });
    let e = IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        sm90(),
        Arc::new(FixedDevice(dev.clone())),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    let g = matmul_graph(DT::HALF, 4096, 4096, 4096);
    let bench = EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![(KNOB_BENCHMARK, 1)],
    };
    let ctx = e.create_execution_context(&bench, &g).unwrap();
    // Four f16 matmul entries serve 4096³ (three spec tiles and the generic one); each got
    // warm-up + timed launches on scratch tensors A, B, C of 4096·4096·2 bytes.
    let per = BENCH_WARMUP + BENCH_ROUNDS * BENCH_LAUNCHES;
    let launches = fake.launches.lock().unwrap().clone();
    assert_eq!(launches.len(), 4 * per);
    assert_eq!(*dev.allocs.lock().unwrap(), vec![4096 * 4096 * 2; 3]);
    assert_eq!(
        launches[0].1[0],
        KernelArgValue::Pointer(0x7001_0000_0000),
        "A is the first scratch buffer"
    );
    let shared: Vec<u32> = launches
        .iter()
        .step_by(per)
        .map(|(g, _)| g.shared_mem_bytes)
        .collect();
    assert_eq!(
        shared,
        vec![147_456, 131_072, 98_304, 8_192],
        "candidates in pack order"
    );
    // The fake times by shared memory: the generic entry (8 KiB) wins, not the static rule's
    // first entry; the saved plan records only it.
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert_eq!(
        (int(&p, "spec"), int(&p, "block_m"), int(&p, "block_n")),
        (0, 64, 64)
    );
    let static_plan = decode_payload(&plan_bytes(&e, &g)).unwrap();
    assert_eq!(
        int(&static_plan, "block_n"),
        256,
        "the static rule's choice differs"
    );
    // Executing the benchmarked plan launches the winner once, with the caller's tensors.
    let before = fake.launches.lock().unwrap().len();
    let mut t = bindings(0);
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap();
    let l = fake.launches.lock().unwrap();
    assert_eq!(l.len(), before + 1);
    assert_eq!(l[before].0.shared_mem_bytes, 8_192);
    assert_eq!(l[before].1[0], KernelArgValue::Pointer(0x1000_0000));
}

/// NHWC dy [n, k, h, h], NHWC x [n, c, h, h] → KRSC dw [k, c, 3, 3], pad 1, stride 1.
fn wgrad_graph(dt: DT, n: i64, c: i64, h: i64, k: i64) -> OperationGraph {
    let mut g = GraphBuilder::new("wgrad");
    g.tensor(TensorSpec::new(1, "dy", dt, &[n, k, h, h]).channels_last())
        .tensor(TensorSpec::new(2, "x", dt, &[n, c, h, h]).channels_last())
        .tensor(TensorSpec::new(3, "dw", dt, &[k, c, 3, 3]).channels_last());
    g.node(
        "wgrad",
        Box::new(|fbb| {
            let one = fbb.create_vector(&[1i64, 1]);
            let args = ConvolutionWrwAttributesArgs {
                x_tensor_uid: 2,
                dy_tensor_uid: 1,
                dw_tensor_uid: 3,
                pre_padding: Some(one),
                post_padding: Some(one),
                stride: Some(one),
                dilation: Some(one),
                conv_mode: ConvMode::CROSS_CORRELATION,
            };
            (
                NodeAttributes::ConvolutionWrwAttributes,
                ConvolutionWrwAttributes::create(fbb, &args).as_union_value(),
            )
        }),
    );
    OperationGraph::from_bytes(&g.build()).unwrap()
}

#[test]
fn a_split_wgrad_plan_zeroes_its_counters_before_each_launch_and_passes_the_workspace() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    // ResNet-50 conv2_x 3×3 at batch 32: 64 × 576 outputs. 128×128 spec tiles would give 5
    // tiles (refused by the static rule), 64×64 give 9, so 30 splits of the 100352 terms.
    let g = wgrad_graph(DT::HALF, 32, 64, 56, 64);
    let p = decode_payload(&plan_bytes(&e, &g)).unwrap();
    assert_eq!(
        (int(&p, "spec"), int(&p, "block_m"), int(&p, "block_n")),
        (1, 64, 64)
    );
    assert_eq!(int(&p, "split"), 30);
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &g,
        )
        .unwrap();
    let ws_bytes = 256 + 9 * 30 * 64 * 64 * 4;
    assert_eq!(ctx.workspace_size(), ws_bytes);
    // No workspace: refused (by the backend's plan) before anything is queued.
    let err = workspace_refusal(engine(dev.clone(), sm90()), &g, bindings(0));
    assert_eq!(
        err.message,
        format!("the plan needs a workspace of {ws_bytes} bytes; 0 bytes were given")
    );
    // No workspace given to the context itself: the counters cannot be zeroed.
    let mut t = bindings(0);
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap_err();
    assert!(
        err.message.ends_with(&format!(
            "requires {ws_bytes} bytes of device workspace; no workspace was provided"
        )),
        "{}",
        err.message
    );
    // Host memory: the kernel cannot use it.
    let mut host = vec![0u8; ws_bytes];
    let mut t = bindings(0);
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: Some(BufferRef::HostMut(&mut host)),
            tensors: &mut t,
        })
        .unwrap_err();
    assert!(
        err.message.ends_with(&format!(
            "requires {ws_bytes} bytes of device workspace; host memory was provided"
        )),
        "{}",
        err.message
    );
    assert!(dev.launches.lock().unwrap().is_empty());
    assert!(dev.memsets.lock().unwrap().is_empty());
    let run = |ctx: &dyn hipdnn_backend::engine::ExecutionContext| {
        let mut t = bindings(0);
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: Some(BufferRef::Device {
                addr: 0x9000_0000,
                len: ws_bytes,
            }),
            tensors: &mut t,
        })
        .unwrap();
    };
    run(ctx.as_ref());
    run(ctx.as_ref());
    // Each launch is preceded by a fill of the 256-byte counter region (64 int32).
    assert_eq!(
        *dev.memsets.lock().unwrap(),
        vec![(0x9000_0000, 0, 256, 0), (0x9000_0000, 0, 256, 1)]
    );
    let (geom, args) = dev.launches.lock().unwrap()[0].clone();
    assert_eq!(geom.grid, [9, 30, 1]);
    assert_eq!(args[3], KernelArgValue::Pointer(0x9000_0000), "workspace");
    assert_eq!(args[2], KernelArgValue::Pointer(0x3000_0000), "dw");
    assert_eq!(args.len(), 4 + 25 + 2);
    // Save → restore on an engine without kernels: the same split, fill and launch.
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let dev2 = FakeDevice::new("sm_90", 0);
    let e2 = engine(dev2.clone(), vec![]);
    let restored = e2
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    assert_eq!(restored.workspace_size(), ws_bytes);
    run(restored.as_ref());
    assert_eq!(dev2.launches.lock().unwrap()[0], (geom, args));
    assert_eq!(
        *dev2.memsets.lock().unwrap(),
        vec![(0x9000_0000, 0, 256, 0)]
    );
}

#[test]
fn an_unsplit_wgrad_plan_needs_no_workspace_and_passes_a_null_one() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    // 512 × 9216 outputs in 64×64 tiles (one tap's 64 channels each): 8·9·16 = 1152 tiles ≥
    // 264 programs, so no split (the 32·7·7 = 1568 terms would allow 3).
    let g = wgrad_graph(DT::HALF, 32, 1024, 7, 512);
    let p = decode_payload(&plan_bytes(&e, &g)).unwrap();
    assert_eq!((int(&p, "block_m"), int(&p, "split")), (64, 1));
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &g,
        )
        .unwrap();
    assert_eq!(ctx.workspace_size(), 0);
    let mut t = bindings(0);
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: None,
        tensors: &mut t,
    })
    .unwrap();
    assert!(dev.memsets.lock().unwrap().is_empty());
    let (geom, args) = dev.launches.lock().unwrap()[0].clone();
    assert_eq!(geom.grid, [8 * 9 * 16, 1, 1]);
    assert_eq!(args[3], KernelArgValue::Pointer(0), "no workspace");
}

#[test]
fn tf32_entries_serve_f32_graphs_only_behind_the_knob() {
    use hipdnn_engines::ingestor::engine::KNOB_TF32;
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let kernels = sm90();
    let name_of = |p: &hipdnn_engines::ingestor::payload::IngestorPlanPayload| {
        kernels
            .iter()
            .find(|k| k.id.as_bytes() == &p.kernel_descriptor_id)
            .map(|k| k.name.clone())
            .unwrap()
    };
    let g = matmul_graph(DT::FLOAT, 2048, 2048, 2048);
    // Default: IEEE f32 entries only.
    let p = decode_payload(&plan_bytes(&e, &g)).unwrap();
    assert!(
        name_of(&p).starts_with("matmul_f32_spec_"),
        "{}",
        name_of(&p)
    );
    // With the knob: the TF32 entry, same contract and launch values shape.
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![(KNOB_TF32, 1)],
            },
            &g,
        )
        .unwrap();
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    assert!(
        name_of(&p).starts_with("matmul_tf32_spec_"),
        "{}",
        name_of(&p)
    );
    assert_eq!(p.dispatch_symbol, "hipkernel.matmul.dispatch.v2");
    assert_eq!(int(&p, "dtype"), 1);
    // The knob does not touch f16 graphs.
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![(KNOB_TF32, 1)],
            },
            &matmul_graph(DT::HALF, 2048, 2048, 2048),
        )
        .unwrap();
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    assert!(name_of(&decode_payload(&bytes).unwrap()).starts_with("matmul_f16_spec_"));
}

#[test]
fn the_direct_conv_is_a_fallback_that_never_joins_a_benchmark_the_triton_entries_serve() {
    use hipdnn_engines::gpu::load_packed_descriptors;
    use hipdnn_engines::ingestor::engine::{
        BENCH_LAUNCHES, BENCH_ROUNDS, BENCH_WARMUP, KNOB_BENCHMARK,
    };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed/sm_90");
    let mut kernels = sm90();
    kernels.extend(load_packed_descriptors(&dir).unwrap());
    let fake = FakeDevice::new("sm_90", 0);
    let dev = Arc::new(TimingDevice {
        inner: fake.clone(),
        allocs: std::sync::Mutex::new(Vec::new()),
        max_shared: u32::MAX,
    });
    let e = IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        kernels.clone(),
        Arc::new(FixedDevice(dev.clone())),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    // NCHW f32 3×3: the Triton nchwt, nchw and generic entries serve it, and so would the
    // direct conv.
    let g = conv_graph(DT::FLOAT, false, 32, 64, 56, 64);
    e.create_execution_context(
        &EngineConfig {
            engine_id: e.id(),
            knob_choices: vec![(KNOB_BENCHMARK, 1)],
        },
        &g,
    )
    .unwrap();
    let per = BENCH_WARMUP + BENCH_ROUNDS * BENCH_LAUNCHES;
    let launches = fake.launches.lock().unwrap().clone();
    assert_eq!(launches.len() % per, 0);
    assert_eq!(
        launches.len() / per,
        2 + 1 + 1,
        "the f32 nchwt entry (a layout pass and the GEMM per run), the nchw and the generic entry"
    );
    // The direct conv's launch has 20 arguments; no benchmark launch is one.
    assert!(launches.iter().all(|(_, a)| a.len() != 20));
    // Without Triton entries, the direct conv serves the graph (static rule).
    let packed_only = engine(
        FakeDevice::new("sm_90", 0),
        load_packed_descriptors(&dir).unwrap(),
    );
    let p = decode_payload(&plan_bytes(&packed_only, &g)).unwrap();
    assert_eq!(p.dispatch_symbol, "hipkernel.conv_fwd.dispatch.v2");
}

#[test]
fn a_benchmark_drops_candidates_whose_launch_fails_and_fails_only_when_all_do() {
    use hipdnn_engines::ingestor::engine::{
        BENCH_LAUNCHES, BENCH_ROUNDS, BENCH_WARMUP, KNOB_BENCHMARK,
    };
    let run = |max_shared: u32| {
        let fake = FakeDevice::new("sm_90", 0);
        let dev = Arc::new(TimingDevice {
            inner: fake.clone(),
            allocs: std::sync::Mutex::new(Vec::new()),
            max_shared,
        });
        let e = IngestorEngine::new(
            "hipkernel.ingestor.gpu",
            sm90(),
            Arc::new(FixedDevice(dev)),
            Arc::new(pack_registry()),
            Arc::new(KpackCodeObjectReader),
        );
        let r = e
            .create_execution_context(
                &EngineConfig {
                    engine_id: e.id(),
                    knob_choices: vec![(KNOB_BENCHMARK, 1)],
                },
                &matmul_graph(DT::HALF, 4096, 4096, 4096),
            )
            .map(|ctx| {
                let bytes = e
                    .serialization()
                    .unwrap()
                    .serialize_execution_context(e.id(), ctx.as_ref())
                    .unwrap();
                int(&decode_payload(&bytes).unwrap(), "block_n")
            });
        (r, fake.launches.lock().unwrap().len())
    };
    // A device with 100 KiB per block: the 144 KiB and 128 KiB entries fail their warm-up
    // launch and are dropped; the two others are timed; the generic entry (8 KiB) wins.
    let per = BENCH_WARMUP + BENCH_ROUNDS * BENCH_LAUNCHES;
    let (r, launches) = run(100 * 1024);
    assert_eq!(r.unwrap(), 64);
    assert_eq!(launches, 2 * per);
    // Every candidate fails: the build fails with the first launch error.
    let (r, launches) = run(1024);
    let err = r.unwrap_err();
    assert!(
        err.message.contains("hipErrorOutOfResources"),
        "{}",
        err.message
    );
    assert_eq!(launches, 0);
}

#[test]
fn wgrad_takes_the_deep_reduction_step_only_for_narrow_channel_counts() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    // (c, h, k) → block_k of the static rule's entry.
    for ((c, h, k), bk) in [
        ((64, 56, 64), 128),
        ((128, 28, 128), 64),
        ((512, 7, 512), 64),
    ] {
        let p = decode_payload(&plan_bytes(&e, &wgrad_graph(DT::HALF, 32, c, h, k))).unwrap();
        assert_eq!(
            (
                int(&p, "spec"),
                int(&p, "block_m"),
                int(&p, "block_n"),
                int(&p, "block_k")
            ),
            (1, 64, 64, bk),
            "c {c}"
        );
    }
}

#[test]
fn an_nchwt_plan_runs_a_layout_pass_then_the_gemm_on_its_workspace() {
    // NCHW conv → bias → add(residual) → ReLU, x [2, 32, 8, 8], w [48, 32, 3, 3], f16.
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let add = |u| (PM::ADD, Some(u));
    let g = fused_conv_graph(DT::HALF, false, &[add(10), add(11), (PM::RELU_FWD, None)]);
    let ctx = e
        .create_execution_context(
            &EngineConfig {
                engine_id: e.id(),
                knob_choices: vec![],
            },
            &g,
        )
        .unwrap();
    // x: 2·8·8·32 = 4096 elements (a multiple of 128), w: 48·3·3·32 = 13824; 2 bytes each.
    let ws_bytes = 2 * (4096 + 13824);
    assert_eq!(ctx.workspace_size(), ws_bytes);
    let addr = fused_addr;
    let mut t = fused_bindings();
    let err = workspace_refusal(engine(dev.clone(), sm90()), &g, fused_bindings());
    assert_eq!(err.status, hipdnn_backend::Status::BadParam);
    assert_eq!(
        err.message,
        format!("the plan needs a workspace of {ws_bytes} bytes; 0 bytes were given")
    );
    let ws = |a: u64| {
        Some(BufferRef::Device {
            addr: a,
            len: ws_bytes,
        })
    };
    let err = ctx
        .execute(ExecuteArgs {
            stream: 0,
            workspace: ws(0x7000_0008),
            tensors: &mut t,
        })
        .unwrap_err();
    assert_eq!(err.status, PluginStatus::BadParam);
    assert_eq!(
        err.message,
        "the workspace is at 0x70000008; this plan runs the transposing channels-first conv kernel, which needs a 16-byte aligned workspace"
    );
    assert!(dev.launches.lock().unwrap().is_empty());
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: ws(0x7000_0000),
        tensors: &mut t,
    })
    .unwrap();
    let launches = dev.launches.lock().unwrap().clone();
    assert_eq!(launches.len(), 2, "the layout pass, then the GEMM");
    let (pre, main) = (&launches[0], &launches[1]);
    // Layout pass: 2 images · cdiv(32, 64) · cdiv(64, 64) + 48 filters · 1 · cdiv(9, 64).
    assert_eq!(pre.0.grid, [2 + 48, 1, 1]);
    // GEMM: cdiv(2·8·8, 64) · cdiv(48, 64) tiles of the 64×64 f16 entry.
    assert_eq!(main.0.grid, [2, 1, 1]);
    assert_eq!(pre.0.block, main.0.block);
    let ptr = |u: i64| KernelArgValue::Pointer(addr(u));
    assert_eq!(
        &main.1[..7],
        &[
            ptr(1),
            ptr(2),
            ptr(33),
            ptr(10),
            ptr(11),
            KernelArgValue::Pointer(0),
            KernelArgValue::Pointer(0x7000_0000)
        ]
    );
    let n = main.1.len();
    assert_eq!(n, conv_fprop::param_names(3, 2).len());
    // Both launches pass the same arguments but the phase (third from the end).
    assert_eq!(main.1[n - 3], KernelArgValue::I32(1));
    assert_eq!(pre.1[n - 3], KernelArgValue::I32(0));
    assert_eq!(pre.1[..n - 3], main.1[..n - 3]);
    assert_eq!(pre.1[n - 2..], main.1[n - 2..]);
}

/// A backward conv node (dgrad when `wgrad` is false) over NHWC dy [2, 16, 8, 8], x/dx
/// [2, 16, hx, 8] and KRSC w/dw [16, 16, 3, 3], pad 1, with `mode` and the data tensor of type
/// `xt`.
fn conv_bwd_graph(wgrad: bool, mode: ConvMode, xt: DT, hx: i64) -> OperationGraph {
    let mut g = GraphBuilder::new("conv_bwd");
    g.tensor(TensorSpec::new(1, "dy", DT::FLOAT, &[2, 16, 8, 8]).channels_last())
        .tensor(TensorSpec::new(2, "x", xt, &[2, 16, hx, 8]).channels_last())
        .tensor(TensorSpec::new(3, "w", DT::FLOAT, &[16, 16, 3, 3]).channels_last());
    g.node(
        "bwd",
        Box::new(move |fbb| {
            let one = fbb.create_vector(&[1i64, 1]);
            if wgrad {
                let args = ConvolutionWrwAttributesArgs {
                    x_tensor_uid: 2,
                    dy_tensor_uid: 1,
                    dw_tensor_uid: 3,
                    pre_padding: Some(one),
                    post_padding: Some(one),
                    stride: Some(one),
                    dilation: Some(one),
                    conv_mode: mode,
                };
                let a = ConvolutionWrwAttributes::create(fbb, &args).as_union_value();
                (NodeAttributes::ConvolutionWrwAttributes, a)
            } else {
                let args = ConvolutionBwdAttributesArgs {
                    dx_tensor_uid: 2,
                    dy_tensor_uid: 1,
                    w_tensor_uid: 3,
                    pre_padding: Some(one),
                    post_padding: Some(one),
                    stride: Some(one),
                    dilation: Some(one),
                    conv_mode: mode,
                };
                let a = ConvolutionBwdAttributes::create(fbb, &args).as_union_value();
                (NodeAttributes::ConvolutionBwdAttributes, a)
            }
        }),
    );
    OperationGraph::from_bytes(&g.build()).unwrap()
}

#[test]
fn the_conv_backward_families_share_one_matcher_with_their_own_names() {
    let dgrad = hipdnn_engines::ingestor::packs::conv_dgrad::ConvDgradV1Handler::new();
    let wgrad = hipdnn_engines::ingestor::packs::conv_wgrad::ConvWgradV1Handler::new();
    let refuse = |h: &dyn DispatchHandler, g: OperationGraph| h.prepare(&g).unwrap_err().message;
    let cc = ConvMode::CROSS_CORRELATION;
    for (h, w, name) in [
        (&dgrad as &dyn DispatchHandler, false, "conv_dgrad"),
        (&wgrad, true, "conv_wgrad"),
    ] {
        assert_eq!(
            refuse(h, conv_bwd_graph(w, cc, DT::FLOAT, 8)),
            format!("the {name} pack launches packed entries only; prepare a kernel")
        );
        assert_eq!(
            refuse(h, conv_bwd_graph(w, ConvMode::CONVOLUTION, DT::FLOAT, 8)),
            format!("the {name} pack serves cross-correlation only, not conv mode CONVOLUTION")
        );
    }
    assert_eq!(
        refuse(&dgrad, conv_bwd_graph(false, cc, DT::HALF, 8)),
        "the conv_dgrad pack serves f32, f16 and bf16 with dy, w and dx of one type, not FLOAT"
    );
    assert_eq!(
        refuse(&wgrad, conv_bwd_graph(true, cc, DT::HALF, 8)),
        "the conv_wgrad pack serves f32, f16 and bf16 with dy, x and dw of one type, not FLOAT"
    );
    assert_eq!(
        refuse(&dgrad, conv_bwd_graph(false, cc, DT::FLOAT, 9)),
        "the conv_dgrad pack: dy dims [2, 16, 8, 8] disagree with dx [2, 16, 9, 8], w [16, 16, 3, 3], padding [1, 1]/[1, 1], stride [1, 1], dilation [1, 1]"
    );
    assert_eq!(
        refuse(&wgrad, conv_bwd_graph(true, cc, DT::FLOAT, 9)),
        "the conv_wgrad pack: dy dims [2, 16, 8, 8] disagree with x [2, 16, 9, 8], dw [16, 16, 3, 3], padding [1, 1]/[1, 1], stride [1, 1], dilation [1, 1]"
    );
}

/// The engine's numerical notes: `TENSOR_CORE` where a `tl.dot` entry on f16/bf16 serves the
/// graph, plus `DOWN_CONVERT_INPUTS` for an f32 graph when the TF32 knob lets a TF32 entry
/// serve it; nothing for f32 IEEE products, for graphs without products, and never
/// `NONDETERMINISTIC`.
#[test]
fn numerical_notes_name_tensor_cores_and_tf32_where_such_an_entry_serves() {
    use hipdnn_backend::NumericalNote::{DownConvertInputs, TensorCore};
    use hipdnn_engines::ingestor::engine::KNOB_TF32;
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let config = |tf32: bool| EngineConfig {
        engine_id: e.id(),
        knob_choices: if tf32 { vec![(KNOB_TF32, 1)] } else { vec![] },
    };
    let mm16 = matmul_graph(DT::HALF, 128, 128, 64);
    let mm32 = matmul_graph(DT::FLOAT, 128, 128, 64);
    assert_eq!(e.numerical_notes(&mm16, &config(false)), [TensorCore]);
    assert_eq!(
        e.numerical_notes(&matmul_graph(DT::BFLOAT16, 128, 128, 64), &config(false)),
        [TensorCore]
    );
    assert_eq!(e.numerical_notes(&mm32, &config(false)), []);
    assert_eq!(
        e.numerical_notes(&mm32, &config(true)),
        [TensorCore, DownConvertInputs]
    );
    assert_eq!(
        e.numerical_notes(&conv_graph(DT::HALF, true, 1, 64, 14, 64), &config(false)),
        [TensorCore]
    );
    assert_eq!(
        e.numerical_notes(&conv_graph(DT::FLOAT, true, 1, 64, 14, 64), &config(false)),
        []
    );
}

/// [`hipdnn_engines::ingestor::engine::TENSOR_CORE_FAMILIES`] is exactly the Triton sources
/// that call `tl.dot` (the families' module names are their file stems).
#[test]
fn tensor_core_families_are_the_triton_sources_that_call_tl_dot() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/triton");
    let mut dot: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .filter(|p| std::fs::read_to_string(p).unwrap().contains("tl.dot("))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    dot.sort();
    assert_eq!(dot, hipdnn_engines::ingestor::engine::TENSOR_CORE_FAMILIES);
}

/// The kernel of `kernels` named `name`.
fn kernel_named<'a>(kernels: &'a [KernelDescriptor], name: &str) -> &'a KernelDescriptor {
    kernels.iter().find(|k| k.name == name).unwrap()
}

fn knobs_config(e: &IngestorEngine, knob_choices: Vec<(i64, i64)>) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices,
    }
}

/// Every shipped descriptor (Triton entries and `kernels.json` entries of every packed arch)
/// has a nonzero kernel-knob value, distinct within its arch (one engine's list); the value is
/// FNV-1a of the UUID text, the same on every arch, and the engine lists the knob.
#[test]
fn kernel_knob_values_of_the_shipped_descriptors_are_distinct_nonzero_and_stable() {
    use hipdnn_backend::engine::KnobInfo;
    use hipdnn_engines::gpu::load_packed_descriptors;
    use hipdnn_engines::ingestor::engine::{KNOB_KERNEL, kernel_knob_value};
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed");
    let mut archs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|d| d.unwrap().path())
        .collect();
    archs.sort();
    assert_eq!(archs.len(), 5);
    for dir in &archs {
        let mut kernels = load_triton_descriptors(dir).unwrap();
        kernels.extend(load_packed_descriptors(dir).unwrap());
        assert!(kernels.len() > 40, "{}", dir.display());
        let mut values: Vec<i64> = kernels.iter().map(kernel_knob_value).collect();
        assert!(values.iter().all(|v| *v != 0), "{}", dir.display());
        values.sort_unstable();
        values.dedup();
        assert_eq!(values.len(), kernels.len(), "{}", dir.display());
    }
    let k = kernel_named(&sm90(), "matmul_f16_generic_64x64x32_g8_w4_s2_sh8192_ws32").clone();
    assert_eq!(
        kernel_knob_value(&k),
        hipdnn_backend::engine_id_from_name(&k.id.to_string())
    );
    assert_eq!(kernel_knob_value(&k), -8_950_794_236_652_611_377);
    let sm80 = load_triton_descriptors(&root.join("sm_80")).unwrap();
    assert_eq!(
        kernel_knob_value(kernel_named(&sm80, &k.name)),
        kernel_knob_value(&k)
    );
    let e = engine(FakeDevice::new("sm_90", 0), vec![]);
    let knobs = e.knobs(&matmul_graph(DT::HALF, 64, 64, 64));
    assert_eq!(
        knobs.last().unwrap(),
        &KnobInfo {
            knob_type: KNOB_KERNEL,
            name: "hipkernel.kernel".into(),
            description: "run exactly the kernel with this id (listed by the engine's variants); 0 = the static rule or the benchmark decides".into(),
            min: i64::MIN,
            max: i64::MAX,
            default: 0,
        }
    );
    assert_eq!(knobs.len(), 3);
}

/// `variants` lists the kernels that serve a graph in engine order (TF32 entries first behind
/// the TF32 knob, none without; the direct conv only where no Triton entry serves), each
/// selecting its kernel by `KNOB_KERNEL`; a build with a variant's knob launches exactly that
/// kernel (its code object), never benchmarks, and saves and restores like any plan.
#[test]
fn variants_list_the_serving_kernels_and_each_builds_exactly_its_kernel() {
    use hipdnn_engines::gpu::load_packed_descriptors;
    use hipdnn_engines::ingestor::engine::{
        KNOB_BENCHMARK, KNOB_KERNEL, KNOB_TF32, kernel_knob_value,
    };
    let kernels = sm90();
    let fake = FakeDevice::new("sm_90", 0);
    let dev = Arc::new(TimingDevice {
        inner: fake.clone(),
        allocs: std::sync::Mutex::new(Vec::new()),
        max_shared: u32::MAX,
    });
    let e = IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        kernels.clone(),
        Arc::new(FixedDevice(dev.clone())),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    let g = matmul_graph(DT::HALF, 4096, 4096, 4096);
    let names = [
        "matmul_f16_spec_128x256x64_g8_w8_s3_sh147456_ws32",
        "matmul_f16_spec_128x128x64_g8_w4_s4_sh131072_ws32",
        "matmul_f16_spec_64x128x64_g8_w4_s4_sh98304_ws32",
        "matmul_f16_generic_64x64x32_g8_w4_s2_sh8192_ws32",
    ];
    let variants = e.variants(&g, &knobs_config(&e, vec![]));
    let expected: Vec<hipdnn_backend::EngineVariant> = names
        .iter()
        .map(|n| {
            let k = kernel_named(&kernels, n);
            hipdnn_backend::EngineVariant {
                knob_choices: vec![(KNOB_KERNEL, kernel_knob_value(k))],
                label: k.describe(),
            }
        })
        .collect();
    assert_eq!(variants, expected);
    let mut values: Vec<i64> = variants.iter().map(|v| v.knob_choices[0].1).collect();
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), 4);
    // The variants add nothing to what the config's benchmark would time (same candidates).
    assert_eq!(
        e.variants(&g, &knobs_config(&e, vec![(KNOB_BENCHMARK, 1)])),
        expected
    );

    for (name, v) in names.iter().zip(&variants) {
        let k = kernel_named(&kernels, name);
        let source = k.single_source().unwrap();
        // The benchmark knob is set too: the kernel knob wins, nothing is timed at build.
        let mut choices = vec![(KNOB_BENCHMARK, 1)];
        choices.extend(v.knob_choices.iter().copied());
        let ctx = e
            .create_execution_context(&knobs_config(&e, choices), &g)
            .unwrap();
        assert_eq!(
            fake.launches.lock().unwrap().len(),
            0,
            "{name}: no benchmark"
        );
        assert!(dev.allocs.lock().unwrap().is_empty(), "{name}: no scratch");
        let mut t = bindings(0);
        ctx.execute(ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        })
        .unwrap();
        let launch = fake.launches.lock().unwrap().pop().unwrap();
        let function = fake.functions.lock().unwrap().pop().unwrap();
        assert_eq!(
            function,
            ("hipdnn_matmul".to_string(), source.sha256.clone()),
            "{name}: its code object"
        );
        assert_eq!(
            i64::from(launch.0.shared_mem_bytes),
            k.config.as_ref().unwrap().shared_bytes
        );
        // Saved: the payload names the kernel; restored on an engine without kernels, the same
        // code object and launch.
        let bytes = e
            .serialization()
            .unwrap()
            .serialize_execution_context(e.id(), ctx.as_ref())
            .unwrap();
        let p = decode_payload(&bytes).unwrap();
        assert_eq!(&p.kernel_descriptor_id, k.id.as_bytes(), "{name}");
        assert_eq!(p.sha256, source.sha256);
        let dev2 = FakeDevice::new("sm_90", 0);
        let restored = engine(dev2.clone(), vec![])
            .serialization()
            .unwrap()
            .create_execution_context_from_serialized(&bytes)
            .unwrap();
        let mut t = bindings(0);
        restored
            .execute(ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: &mut t,
            })
            .unwrap();
        assert_eq!(dev2.launches.lock().unwrap()[0], launch, "{name}");
        assert_eq!(dev2.functions.lock().unwrap()[0], function, "{name}");
        fake.functions.lock().unwrap().clear();
    }

    // An f32 matmul: the TF32 entries first behind the TF32 knob, none without.
    let g32 = matmul_graph(DT::FLOAT, 2048, 2048, 2048);
    let labels = |choices: Vec<(i64, i64)>| -> Vec<String> {
        e.variants(&g32, &knobs_config(&e, choices))
            .into_iter()
            .map(|v| v.label)
            .collect()
    };
    let describe = |ns: &[&str]| -> Vec<String> {
        ns.iter()
            .map(|n| kernel_named(&kernels, n).describe())
            .collect()
    };
    let f32_names = [
        "matmul_f32_spec_128x128x32_g8_w8_s3_sh65536_ws32",
        "matmul_f32_spec_64x64x32_g8_w4_s3_sh32768_ws32",
        "matmul_f32_generic_64x64x32_g8_w4_s2_sh16384_ws32",
    ];
    assert_eq!(labels(vec![]), describe(&f32_names));
    let mut with_tf32 = vec![
        "matmul_tf32_spec_128x128x32_g8_w8_s3_sh98304_ws32",
        "matmul_tf32_spec_128x64x32_g8_w4_s3_sh73728_ws32",
    ];
    with_tf32.extend(f32_names);
    assert_eq!(labels(vec![(KNOB_TF32, 1)]), describe(&with_tf32));

    // The direct conv is listed only where no Triton entry serves the graph.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/packed/sm_90");
    let mut all = sm90();
    all.extend(load_packed_descriptors(&dir).unwrap());
    let conv = conv_graph(DT::FLOAT, false, 32, 64, 56, 64);
    let both = engine(FakeDevice::new("sm_90", 0), all);
    let vs = both.variants(&conv, &knobs_config(&both, vec![]));
    assert_eq!(vs.len(), 3, "{vs:?}");
    assert!(
        vs.iter().all(|v| v.label.contains("'conv_fprop_f32_")),
        "{vs:?}"
    );
    let packed = load_packed_descriptors(&dir).unwrap();
    let packed_only = engine(FakeDevice::new("sm_90", 0), packed.clone());
    let direct = kernel_named(&packed, "hipdnn_conv_fwd_f32");
    assert_eq!(
        packed_only.variants(&conv, &knobs_config(&packed_only, vec![])),
        [hipdnn_backend::EngineVariant {
            knob_choices: vec![(KNOB_KERNEL, kernel_knob_value(direct))],
            label: direct.describe(),
        }]
    );
}

/// A `KNOB_KERNEL` value naming no kernel, a kernel that does not serve the graph, or a TF32
/// entry without the TF32 knob is refused with `NOT_APPLICABLE` naming the value and why.
#[test]
fn a_kernel_knob_naming_no_serving_kernel_is_refused() {
    use hipdnn_engines::ingestor::engine::{KNOB_KERNEL, KNOB_TF32, kernel_knob_value};
    let kernels = sm90();
    let e = engine(FakeDevice::new("sm_90", 0), kernels.clone());
    let refusal = |g: &OperationGraph, choices: Vec<(i64, i64)>| {
        e.create_execution_context(&knobs_config(&e, choices), g)
            .err()
            .unwrap()
    };
    let g = matmul_graph(DT::HALF, 4096, 4096, 4096);
    let err = refusal(&g, vec![(KNOB_KERNEL, 123)]);
    assert_eq!(err.status, PluginStatus::NotApplicable);
    assert_eq!(
        err.message,
        "knob hipkernel.kernel = 123 names no kernel of engine hipkernel.ingestor.gpu"
    );
    // An f32 entry for an f16 graph.
    let f32k = kernel_named(
        &kernels,
        "matmul_f32_generic_64x64x32_g8_w4_s2_sh16384_ws32",
    );
    assert_eq!(kernel_knob_value(f32k), 3_821_836_417_577_485_176);
    let err = refusal(&g, vec![(KNOB_KERNEL, 3_821_836_417_577_485_176)]);
    assert_eq!(err.status, PluginStatus::NotApplicable);
    assert_eq!(
        err.message,
        "knob hipkernel.kernel = 3821836417577485176 names kernel kpack 'matmul_f32_generic_64x64x32_g8_w4_s2_sh16384_ws32' (50678aa3-4625-8e62-8d1d-36c6df65c69f), which does not serve this graph: kernel kpack 'matmul_f32_generic_64x64x32_g8_w4_s2_sh16384_ws32' (50678aa3-4625-8e62-8d1d-36c6df65c69f) is built for f32, the graph is HALF"
    );
    // A TF32 entry: refused without the TF32 knob, built with it.
    let g32 = matmul_graph(DT::FLOAT, 2048, 2048, 2048);
    let tf = kernel_named(&kernels, "matmul_tf32_spec_128x64x32_g8_w4_s3_sh73728_ws32");
    let v = kernel_knob_value(tf);
    let err = refusal(&g32, vec![(KNOB_KERNEL, v)]);
    assert_eq!(err.status, PluginStatus::NotApplicable);
    assert_eq!(
        err.message,
        format!(
            "knob hipkernel.kernel = {v} names kernel {}, a TF32 entry, which runs only with knob hipkernel.tf32 = 1",
            tf.describe()
        )
    );
    let ctx = e
        .create_execution_context(
            &knobs_config(&e, vec![(KNOB_TF32, 1), (KNOB_KERNEL, v)]),
            &g32,
        )
        .unwrap();
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    assert_eq!(
        &decode_payload(&bytes).unwrap().kernel_descriptor_id,
        tf.id.as_bytes()
    );
    // The knob at 0 is the static rule.
    assert_eq!(
        decode_payload(
            &e.serialization()
                .unwrap()
                .serialize_execution_context(
                    e.id(),
                    e.create_execution_context(&knobs_config(&e, vec![(KNOB_KERNEL, 0)]), &g)
                        .unwrap()
                        .as_ref()
                )
                .unwrap()
        )
        .unwrap(),
        decode_payload(&plan_bytes(&e, &g)).unwrap()
    );
}

/// With `KNOB_KERNEL` set, the numerical notes are the chosen kernel's only.
#[test]
fn numerical_notes_with_a_kernel_knob_describe_only_that_kernel() {
    use hipdnn_backend::NumericalNote::{DownConvertInputs, TensorCore};
    use hipdnn_engines::ingestor::engine::{KNOB_KERNEL, KNOB_TF32, kernel_knob_value};
    let kernels = sm90();
    let e = engine(FakeDevice::new("sm_90", 0), kernels.clone());
    let g32 = matmul_graph(DT::FLOAT, 2048, 2048, 2048);
    let notes = |name: &str, tf32: i64| {
        let v = kernel_knob_value(kernel_named(&kernels, name));
        e.numerical_notes(
            &g32,
            &knobs_config(&e, vec![(KNOB_TF32, tf32), (KNOB_KERNEL, v)]),
        )
    };
    // Engine-wide, TF32 on: a TF32 entry may serve.
    assert_eq!(
        e.numerical_notes(&g32, &knobs_config(&e, vec![(KNOB_TF32, 1)])),
        [TensorCore, DownConvertInputs]
    );
    // The f32 entry chosen: IEEE products, no notes, TF32 knob or not.
    assert_eq!(
        notes("matmul_f32_spec_64x64x32_g8_w4_s3_sh32768_ws32", 1),
        []
    );
    assert_eq!(
        notes("matmul_tf32_spec_128x64x32_g8_w4_s3_sh73728_ws32", 1),
        [TensorCore, DownConvertInputs]
    );
    // A choice the build refuses has no notes.
    assert_eq!(
        notes("matmul_tf32_spec_128x64x32_g8_w4_s3_sh73728_ws32", 0),
        []
    );
    assert_eq!(
        e.numerical_notes(&g32, &knobs_config(&e, vec![(KNOB_KERNEL, 123)])),
        []
    );
    // An f16 entry (tensor cores) chosen for the f32 graph it does not serve.
    let f16 = kernel_knob_value(kernel_named(
        &kernels,
        "matmul_f16_generic_64x64x32_g8_w4_s2_sh8192_ws32",
    ));
    assert_eq!(
        e.numerical_notes(&g32, &knobs_config(&e, vec![(KNOB_KERNEL, f16)])),
        []
    );
    let g16 = matmul_graph(DT::HALF, 128, 128, 64);
    assert_eq!(
        e.numerical_notes(&g16, &knobs_config(&e, vec![(KNOB_KERNEL, f16)])),
        [TensorCore]
    );
}

// ---- execute-time shape overrides (RFC 0008) on the GPU engine ----

/// `matmul_graph` with the override-shape flag when `flag`.
fn matmul_graph_flagged(dt: DT, m: i64, n: i64, k: i64, flag: bool) -> OperationGraph {
    let mut g = GraphBuilder::new("mm");
    g.override_shape_enabled(flag)
        .tensor(TensorSpec::new(1, "a", dt, &[1, m, k]))
        .tensor(TensorSpec::new(2, "b", dt, &[1, k, n]))
        .tensor(TensorSpec::new(3, "c", dt, &[1, m, n]));
    g.matmul("mm", 1, 2, 3);
    OperationGraph::from_bytes(&g.build()).unwrap()
}

fn default_config(e: &IngestorEngine) -> EngineConfig {
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![],
    }
}

fn rows_override(m: i64, n: i64, k: i64) -> Vec<hipdnn_backend::ShapeOverride> {
    vec![
        hipdnn_backend::ShapeOverride::new(1, vec![1, m, k], vec![m * k, k, 1]),
        hipdnn_backend::ShapeOverride::new(3, vec![1, m, n], vec![m * n, n, 1]),
    ]
}

#[test]
fn an_override_launches_what_a_build_at_that_shape_launches() {
    assert!(engine(FakeDevice::new("sm_90", 0), sm90()).supports_shape_overrides());
    // Generic 64×64 entry at both shapes (no spec hints at 100 × 37 × 53). The build at each
    // shape carries the flag too: without it, M = 7 and 64 would take the 16-row entry (the
    // static rule's small-M choice, which a flagged graph does not make).
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let max = matmul_graph_flagged(DT::FLOAT, 100, 37, 53, true);
    let ctx = e
        .create_execution_context(&default_config(&e), &max)
        .unwrap();
    for m in [7i64, 64, 100, 7] {
        let mut t = bindings(0);
        ctx.execute_with_overrides(
            ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: &mut t,
            },
            &rows_override(m, 37, 53),
        )
        .unwrap();
        let overridden = dev.launches.lock().unwrap().last().unwrap().clone();

        let dev2 = FakeDevice::new("sm_90", 0);
        let e2 = engine(dev2.clone(), sm90());
        let own = matmul_graph_flagged(DT::FLOAT, m, 37, 53, true);
        let own_ctx = e2
            .create_execution_context(&default_config(&e2), &own)
            .unwrap();
        let mut t = bindings(0);
        own_ctx
            .execute(ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: &mut t,
            })
            .unwrap();
        let built = dev2.launches.lock().unwrap()[0].clone();
        assert_eq!(overridden, built, "m = {m}");
        assert_eq!(overridden.1[6], KernelArgValue::I32(m as i32), "M argument");
    }
    // The four executes made four launches (the second m = 7 reused its kept plan).
    assert_eq!(dev.launches.lock().unwrap().len(), 4);
}

/// The config choosing the packed `name`d entry with the kernel knob.
fn knob_config(e: &IngestorEngine, name: &str) -> EngineConfig {
    use hipdnn_engines::ingestor::engine::{KNOB_KERNEL, kernel_knob_value};
    let k = sm90().into_iter().find(|k| k.name == name).unwrap();
    EngineConfig {
        engine_id: e.id(),
        knob_choices: vec![(KNOB_KERNEL, kernel_knob_value(&k))],
    }
}

/// The packed entry a build of `graph` chooses (its name).
fn chosen(e: &IngestorEngine, graph: &OperationGraph) -> String {
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(
            e.id(),
            e.create_execution_context(&default_config(e), graph)
                .unwrap()
                .as_ref(),
        )
        .unwrap();
    let p = decode_payload(&bytes).unwrap();
    sm90()
        .into_iter()
        .find(|k| *k.id.as_bytes() == p.kernel_descriptor_id)
        .unwrap()
        .name
}

/// A flagged graph serves every shape up to its built one, so its plan takes a generic
/// (hint-free) entry where the same graph without the flag takes a spec entry; benchmarking
/// builds time only hint-free candidates then.
#[test]
fn a_flagged_graph_takes_an_entry_without_shape_hints() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let plain = chosen(&e, &matmul_graph_flagged(DT::HALF, 4096, 4096, 4096, false));
    let flagged = chosen(&e, &matmul_graph_flagged(DT::HALF, 4096, 4096, 4096, true));
    assert!(plain.contains("_spec_"), "{plain}");
    assert_eq!(flagged, "matmul_f16_generic_64x64x32_g8_w4_s2_sh8192_ws32");
    // Built at 16 rows, the flagged graph keeps the 64-row generic entry (its kernel serves
    // every shape up to the built one; the small-M refusal is a choice for one shape).
    let small = chosen(&e, &matmul_graph_flagged(DT::HALF, 16, 4096, 4096, true));
    assert_eq!(small, "matmul_f16_generic_64x64x32_g8_w4_s2_sh8192_ws32");
    let conv_plain = chosen(&e, &conv_graph_flagged(DT::HALF, 8, 64, 14, 64, false));
    let conv_flagged = chosen(&e, &conv_graph_flagged(DT::HALF, 8, 64, 14, 64, true));
    assert!(conv_plain.contains("_spec_"), "{conv_plain}");
    assert!(conv_flagged.contains("_generic_"), "{conv_flagged}");
    // The flagged plan serves 4001 rows, which the spec entry's hints do not hold for.
    let ctx = e
        .create_execution_context(
            &default_config(&e),
            &matmul_graph_flagged(DT::HALF, 4096, 4096, 4096, true),
        )
        .unwrap();
    let mut t = bindings(0);
    ctx.execute_with_overrides(
        ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        },
        &rows_override(4001, 4096, 4096),
    )
    .unwrap();
}

#[test]
fn overrides_the_gpu_plan_cannot_serve_are_refused_by_name_before_any_launch() {
    let dev = FakeDevice::new("sm_90", 0);
    let e = engine(dev.clone(), sm90());
    let max = matmul_graph_flagged(DT::HALF, 4096, 4096, 4096, true);
    // The spec entry chosen by the kernel knob (a flagged graph's own choice is generic).
    let spec = chosen(&e, &matmul_graph_flagged(DT::HALF, 4096, 4096, 4096, false));
    let ctx = e
        .create_execution_context(&knob_config(&e, &spec), &max)
        .unwrap();
    let run = |o: &[hipdnn_backend::ShapeOverride]| {
        let mut t = bindings(0);
        ctx.execute_with_overrides(
            ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: &mut t,
            },
            o,
        )
        .unwrap_err()
    };
    // Beyond the built maximum: the RFC's rule.
    let err = run(&rows_override(5000, 4096, 4096));
    assert_eq!(err.status, PluginStatus::BadParam);
    assert!(err.message.starts_with("shape override"), "{}", err.message);
    assert!(err.message.contains("5000"), "{}", err.message);
    // The knob's spec entry (N and K multiples of 16; M takes any value): 4001 columns break
    // its hint.
    let mut narrow = rows_override(4096, 4001, 4096);
    narrow.push(hipdnn_backend::ShapeOverride::new(
        2,
        vec![1, 4096, 4001],
        vec![4096 * 4001, 4001, 1],
    ));
    let err = run(&narrow);
    assert_eq!(err.status, PluginStatus::BadParam);
    assert!(
        err.message.starts_with("shape override: kernel ")
            && err.message.contains("does not serve these shapes: "),
        "{}",
        err.message
    );
    assert!(dev.launches.lock().unwrap().is_empty());
    // A plan restored from its payload alone keeps no graph: refused with the reason.
    let bytes = e
        .serialization()
        .unwrap()
        .serialize_execution_context(e.id(), ctx.as_ref())
        .unwrap();
    let restored = e
        .serialization()
        .unwrap()
        .create_execution_context_from_serialized(&bytes)
        .unwrap();
    let mut t = bindings(0);
    let err = restored
        .execute_with_overrides(
            ExecuteArgs {
                stream: 0,
                workspace: None,
                tensors: &mut t,
            },
            &rows_override(1024, 4096, 4096),
        )
        .unwrap_err();
    assert!(
        err.message
            .starts_with("shape override: this GPU plan was loaded without its graph"),
        "{}",
        err.message
    );
    assert!(dev.launches.lock().unwrap().is_empty());
}

/// `conv_graph` (channels-last) with the override-shape flag when `flag`.
fn conv_graph_flagged(dt: DT, n: i64, c: i64, h: i64, k: i64, flag: bool) -> OperationGraph {
    let mut g = GraphBuilder::new("conv");
    g.override_shape_enabled(flag)
        .tensor(TensorSpec::new(1, "x", dt, &[n, c, h, h]).channels_last())
        .tensor(TensorSpec::new(2, "w", dt, &[k, c, 3, 3]).channels_last())
        .tensor(TensorSpec::new(3, "y", dt, &[n, k, h, h]).channels_last());
    conv_node(&mut g);
    OperationGraph::from_bytes(&g.build()).unwrap()
}

/// Overrides of x and y of `conv_graph_flagged` to batch `n` (channels-last strides).
fn batch_override(n: i64, c: i64, h: i64, k: i64) -> Vec<hipdnn_backend::ShapeOverride> {
    let nhwc = |ch: i64| vec![h * h * ch, 1, h * ch, ch];
    vec![
        hipdnn_backend::ShapeOverride::new(1, vec![n, c, h, h], nhwc(c)),
        hipdnn_backend::ShapeOverride::new(3, vec![n, k, h, h], nhwc(k)),
    ]
}

/// A flagged plan restored together with its graph (an `HDGP` container's two parts) on an
/// engine with no kernels (the archives moved away) serves overrides with its saved kernel:
/// each override launches exactly what a build at that shape launches on the same entry, and
/// the refusals of a built plan hold for it too. Matmul restores its data type from its launch
/// values, conv does not (the graph's is taken): both are covered.
#[test]
fn a_flagged_plan_restored_with_its_graph_serves_overrides_like_a_build() {
    type Make = Box<dyn Fn(i64, bool) -> OperationGraph>;
    type Over = Box<dyn Fn(i64) -> Vec<hipdnn_backend::ShapeOverride>>;
    // (graph at size s, flagged or not; overrides to size s; built size; override sizes; a
    // size the built kernel's hints do not hold for, if any; index of the size argument).
    type Case = (Make, Over, i64, Vec<i64>, Option<i64>, usize);
    let cases: Vec<Case> = vec![
        // The f16 matmul at 4096 rows (a flagged graph takes the generic entry), served at
        // aligned and unaligned row counts.
        (
            Box::new(|m, f| matmul_graph_flagged(DT::HALF, m, 4096, 4096, f)),
            Box::new(|m| rows_override(m, 4096, 4096)),
            4096,
            vec![1024, 4001, 4096, 1024],
            None,
            6,
        ),
        // The generic f32 matmul entry at 100 rows.
        (
            Box::new(|m, f| matmul_graph_flagged(DT::FLOAT, m, 37, 53, f)),
            Box::new(|m| rows_override(m, 37, 53)),
            100,
            vec![7, 64, 100],
            None,
            6,
        ),
        // An f16 channels-last 3×3 conv at batch 8, served at batches 1, 3 and 8.
        (
            Box::new(|n, f| conv_graph_flagged(DT::HALF, n, 64, 14, 64, f)),
            Box::new(|n| batch_override(n, 64, 14, 64)),
            8,
            vec![1, 3, 8],
            None,
            usize::MAX,
        ),
    ];
    let run = |ctx: &dyn hipdnn_backend::engine::ExecutionContext,
               o: Option<&[hipdnn_backend::ShapeOverride]>| {
        let mut t = bindings(0);
        let args = ExecuteArgs {
            stream: 0,
            workspace: None,
            tensors: &mut t,
        };
        match o {
            Some(o) => ctx.execute_with_overrides(args, o),
            None => ctx.execute(args),
        }
    };
    for (make, over, max_size, sizes, unhinted, size_arg) in cases {
        let e = engine(FakeDevice::new("sm_90", 0), sm90());
        let max = make(max_size, true);
        let ctx = e
            .create_execution_context(&default_config(&e), &max)
            .unwrap();
        let bytes = e
            .serialization()
            .unwrap()
            .serialize_execution_context(e.id(), ctx.as_ref())
            .unwrap();
        let dev = FakeDevice::new("sm_90", 0);
        let bare = engine(dev.clone(), vec![]);
        let restored = bare
            .serialization()
            .unwrap()
            .create_execution_context_with_graph(
                &hipdnn_backend::SharedBytes::copy_from_slice(&bytes),
                &max,
            )
            .unwrap();
        // What a (flagged) build at `size` launches first.
        let built_at = |size: i64| {
            let dev2 = FakeDevice::new("sm_90", 0);
            let e2 = engine(dev2.clone(), sm90());
            let own = e2
                .create_execution_context(&default_config(&e2), &make(size, true))
                .unwrap();
            run(own.as_ref(), None).unwrap();
            dev2.launches.lock().unwrap()[0].clone()
        };
        for &size in &sizes {
            run(restored.as_ref(), Some(&over(size))).unwrap();
            let overridden = dev.launches.lock().unwrap().last().unwrap().clone();
            assert_eq!(overridden, built_at(size), "size {size}");
            if size_arg != usize::MAX {
                assert_eq!(overridden.1[size_arg], KernelArgValue::I32(size as i32));
            }
        }
        assert_eq!(dev.launches.lock().unwrap().len(), sizes.len());
        // At the built shape, without overrides, it launches what the built plan launches.
        run(restored.as_ref(), None).unwrap();
        assert_eq!(
            dev.launches.lock().unwrap().last().cloned(),
            Some(built_at(max_size))
        );
        // The built plan's refusals: beyond the maximum, and a size the kernel's hints do
        // not hold for.
        let err = run(restored.as_ref(), Some(&over(max_size + 1))).unwrap_err();
        assert_eq!(err.status, PluginStatus::BadParam);
        assert!(err.message.starts_with("shape override"), "{}", err.message);
        if let Some(size) = unhinted {
            let err = run(restored.as_ref(), Some(&over(size))).unwrap_err();
            assert!(
                err.message.starts_with("shape override: kernel ")
                    && err.message.contains("does not serve these shapes: "),
                "{}",
                err.message
            );
        }
    }
}

/// A graph every kernel refuses gets the refusal of the family that takes its pattern (here
/// the matmul pack's broadcast rule), not the last kernel's (another family's "serves …").
#[test]
fn the_engine_names_the_refusal_of_the_family_that_takes_the_pattern() {
    let e = engine(FakeDevice::new("sm_90", 0), sm90());
    let mut g = GraphBuilder::new("mm");
    g.tensor(TensorSpec::new(1, "a", DT::HALF, &[2, 1, 16, 32]))
        .tensor(TensorSpec::new(2, "b", DT::HALF, &[1, 2, 32, 16]))
        .tensor(TensorSpec::new(3, "c", DT::HALF, &[2, 2, 16, 16]));
    g.matmul("mm", 1, 2, 3);
    let og = OperationGraph::from_bytes(&g.build()).unwrap();
    let err = e.check_applicable(&og).unwrap_err();
    assert_eq!(err.status, PluginStatus::NotApplicable);
    assert_eq!(
        err.message,
        "the matmul pack (dispatch v1) broadcasts an operand's batch only when all its batch dims are 1; A has batch dims [2, 1], the output [2, 2]"
    );
}
