//! One host copy of a loaded GPU plan's code object (issue 9, point 4).
//!
//! A counting global allocator tracks live heap blocks of at least the code object's size
//! (256 KiB). A kernel-ingestor plan with a distinctive 256 KiB code object is loaded through
//! the SDK (`Graph::from_binary` of an `HDGP` container, `Graph::from_compiled_plan_binary` of a
//! bare plan) on a fake device that keeps nothing of the image; once the caller's input is
//! dropped, exactly one live block can hold the code object: the loaded bytes the plan cache is
//! seeded with. A re-save returns the loaded bytes and adds no kept copy.
//!
//! This binary holds one test only, so no other test's allocations are counted.

use hipdnn::{ConvFpropAttributes, DataType, Graph, Handle, TensorAttributes};
use hipdnn_backend::{engine_id_from_name, hdgp, write_envelope};
use hipdnn_engines::ingestor::device::{
    DeviceError, FixedDevice, IngestorDevice, IngestorModule, KernelArgValue, KernelFunction,
    LaunchGeometry,
};
use hipdnn_engines::ingestor::kernel::{KernelArgument, KernelSourceKind};
use hipdnn_engines::ingestor::native::conv_fwd::ConvFwdLaunchInputs;
use hipdnn_engines::ingestor::payload::{IngestorPlanPayload, encode_payload, sha256_hex};
use hipdnn_engines::ingestor::{IngestorEngine, KpackCodeObjectReader};
use std::alloc::{GlobalAlloc, Layout, System};
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Size of the distinctive code object, in bytes.
const CODE_SIZE: usize = 256 * 1024;

/// Counts live heap blocks of at least [`CODE_SIZE`] bytes.
struct CountingAlloc;

static LIVE_BIG: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to `System` with the caller's arguments unchanged; the counter
// is a side effect only.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout (the caller upholds `alloc`'s contract).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && layout.size() >= CODE_SIZE {
            LIVE_BIG.fetch_add(1, Ordering::SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= CODE_SIZE {
            LIVE_BIG.fetch_sub(1, Ordering::SeqCst);
        }
        // SAFETY: `ptr` was allocated by `System` with `layout` (forwarded in `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn live_big() -> usize {
    LIVE_BIG.load(Ordering::SeqCst)
}

struct Function;
impl KernelFunction for Function {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct NoModule;
impl IngestorModule for NoModule {
    fn get_function(&self, _symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError> {
        Ok(Arc::new(Function))
    }
}

/// A device that checks the image it is given and keeps nothing of it (a real driver copies
/// the image to the device).
struct ForgetfulDevice {
    loads: AtomicUsize,
}
impl IngestorDevice for ForgetfulDevice {
    fn arch(&self) -> String {
        "gfx90a:sramecc+:xnack-".into()
    }
    fn ordinal(&self) -> i32 {
        0
    }
    fn load_module(&self, code_object: &[u8]) -> Result<Arc<dyn IngestorModule>, DeviceError> {
        assert_eq!(code_object.len(), CODE_SIZE);
        assert_eq!(&code_object[..4], &code_byte_pattern()[..4]);
        self.loads.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(NoModule))
    }
    fn launch(
        &self,
        _f: &dyn KernelFunction,
        _g: LaunchGeometry,
        _a: &[KernelArgValue],
        _signature: &[KernelArgument],
        _s: u64,
    ) -> Result<(), DeviceError> {
        Ok(())
    }
    fn synchronize(&self, _stream: u64) -> Result<(), DeviceError> {
        Ok(())
    }
}

fn code_byte_pattern() -> Vec<u8> {
    (0..CODE_SIZE).map(|i| (i * 7 + i / 251) as u8).collect()
}

const ENGINE: &str = "hipkernel:OneCopyConv";

/// A saved conv plan of `ENGINE` (envelope v2) whose payload carries the 256 KiB code object.
fn saved_plan() -> Vec<u8> {
    let inputs = ConvFwdLaunchInputs {
        x_uid: 1,
        w_uid: 2,
        y_uid: 3,
        n: 1,
        c: 1,
        h: 3,
        width: 5,
        k: 1,
        r: 2,
        s: 2,
        block_size: 64,
    };
    let mut signature = vec![
        KernelArgument::named("global_buffer", 8, 0, "x"),
        KernelArgument::named("global_buffer", 8, 8, "w"),
        KernelArgument::named("global_buffer", 8, 16, "y"),
    ];
    for (i, n) in ["n", "c", "h", "width", "k", "r", "s"].iter().enumerate() {
        signature.push(KernelArgument::named("by_value", 4, 24 + 4 * i as u32, n));
    }
    let code = code_byte_pattern();
    let payload = encode_payload(&IngestorPlanPayload {
        kernel_descriptor_id: [0x42; 16],
        workspace_bytes: 0,
        runtime_pass_by_value_uids: vec![],
        dispatch_symbol: "hipkernel.conv_fwd.dispatch.v1".into(),
        launch_values: inputs.to_values(),
        source_kind: KernelSourceKind::Kpack,
        symbol: "conv_fwd_nchw".into(),
        target: "gfx90a".into(),
        sha256: sha256_hex(&code),
        signature,
        code_object: code,
        provider_version: "0.1.0".into(),
    })
    .unwrap();
    write_envelope(
        engine_id_from_name(ENGINE),
        0,
        &[1, 2, 3],
        &[16, 16, 16],
        false,
        &payload,
    )
}

fn graph_bytes() -> Vec<u8> {
    let mut g = Graph::new();
    g.set_io_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    let x = g.tensor(
        TensorAttributes::new("x")
            .uid(1)
            .dims([1, 1, 3, 5])
            .packed_nchw(),
    );
    let w = g.tensor(
        TensorAttributes::new("w")
            .uid(2)
            .dims([1, 1, 2, 2])
            .packed_nchw(),
    );
    let y = g.conv_fprop(
        x,
        w,
        ConvFpropAttributes::new()
            .padding([0, 0])
            .stride([1, 1])
            .dilation([1, 1]),
    );
    g.set_output(y, true).set_uid(y, 3);
    g.validate().unwrap();
    g.to_graph_bytes().unwrap()
}

fn handle(device: Arc<ForgetfulDevice>) -> Handle {
    let mut h = Handle::cpu().unwrap();
    let engine = IngestorEngine::new(
        ENGINE,
        vec![],
        Arc::new(FixedDevice(device)),
        Arc::new(hipdnn_engines::registry::native_packs()),
        Arc::new(KpackCodeObjectReader),
    );
    h.backend_mut().register_engine(Arc::new(engine)).unwrap();
    h
}

#[test]
fn a_loaded_gpu_plan_keeps_one_host_copy_of_its_code_object() {
    let device = Arc::new(ForgetfulDevice {
        loads: AtomicUsize::new(0),
    });
    let h = handle(device.clone());
    assert_eq!(live_big(), 0, "nothing big is live before the plan exists");

    // from_binary of a graph-and-plan container.
    let plan = saved_plan();
    let container = hdgp::write_graph_and_plan(&graph_bytes(), Some(&plan));
    drop(plan);
    assert_eq!(live_big(), 1, "only the caller's container is live");
    let g = Graph::from_binary(&h, &container).unwrap();
    assert_eq!(device.loads.load(Ordering::SeqCst), 1);
    drop(container);
    assert_eq!(
        live_big(),
        1,
        "from_binary: the loaded container bytes must be the only live copy of the code object"
    );
    let resaved = g.to_binary().unwrap();
    let replan = g.to_compiled_plan_binary().unwrap();
    assert_eq!(hdgp::plan_part(&resaved).unwrap(), &replan[..]);
    drop((resaved, replan));
    assert_eq!(live_big(), 1, "a re-save keeps no copy");
    drop(g);
    assert_eq!(live_big(), 0, "dropping the graph frees the loaded bytes");

    // from_compiled_plan_binary of a bare plan.
    let plan = saved_plan();
    let g = Graph::from_compiled_plan_binary(&h, &plan).unwrap();
    assert_eq!(device.loads.load(Ordering::SeqCst), 2);
    let resaved = g.to_compiled_plan_binary().unwrap();
    assert_eq!(resaved, plan, "a re-save returns the loaded bytes");
    drop((resaved, plan));
    assert_eq!(
        live_big(),
        1,
        "from_compiled_plan_binary: the loaded plan bytes must be the only live copy"
    );
    drop(g);
    assert_eq!(live_big(), 0);
}
