//! Shared fakes for the ingestor tests: a device reporting a fixed arch and counting module
//! loads, a switchable resolver, an in-memory code-object reader, and payload builders.
//! Included by the `ingestor_*` tests with `#[path]`; it holds no tests itself.
#![allow(dead_code, missing_docs)]

use hipdnn_engines::ingestor::capture::CodeObjectReader;
use hipdnn_engines::ingestor::device::{
    DeviceError, DeviceResolver, IngestorDevice, IngestorModule, KernelArgValue, KernelFunction,
    LaunchGeometry,
};
use hipdnn_engines::ingestor::kernel::{KernelArgument, KernelSourceKind};
use hipdnn_engines::ingestor::native::conv_fwd::ConvFwdLaunchInputs;
use hipdnn_engines::ingestor::payload::{IngestorPlanPayload, sha256_hex};
use hipdnn_kpack::{KpackLoadStage, KpackReadError};
use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A function: its symbol and the SHA-256 (hex) of the code object its module was loaded from.
pub struct FakeFunction(pub String, pub String);
impl KernelFunction for FakeFunction {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct FakeModule {
    pub symbols: Option<Vec<String>>,
    /// SHA-256 (hex) of the loaded code object.
    pub code_sha256: String,
}
impl IngestorModule for FakeModule {
    fn get_function(&self, symbol: &str) -> Result<Arc<dyn KernelFunction>, DeviceError> {
        match &self.symbols {
            Some(s) if !s.iter().any(|x| x == symbol) => {
                Err(DeviceError::new("hipModuleGetFunction", "hipErrorNotFound"))
            }
            _ => Ok(Arc::new(FakeFunction(
                symbol.to_string(),
                self.code_sha256.clone(),
            ))),
        }
    }
}

/// A device that never touches hardware.
pub struct FakeDevice {
    pub arch: String,
    pub ordinal: i32,
    pub loads: AtomicUsize,
    pub refuse_load: bool,
    pub symbols: Option<Vec<String>>,
    pub launches: Mutex<Vec<(LaunchGeometry, Vec<KernelArgValue>)>>,
    /// The launched function of each launch, in launch order: its symbol and the SHA-256 (hex)
    /// of its code object (empty strings for a function that is no `FakeFunction`).
    pub functions: Mutex<Vec<(String, String)>>,
    /// The recorded signature handed to each launch, in launch order.
    pub signatures: Mutex<Vec<Vec<KernelArgument>>>,
    /// Fills (address, value, bytes) queued with `memset_async`, and how many launches had
    /// been made when each was queued.
    pub memsets: Mutex<Vec<(u64, u8, u64, usize)>>,
}

impl FakeDevice {
    pub fn new(arch: &str, ordinal: i32) -> Arc<FakeDevice> {
        Arc::new(FakeDevice {
            arch: arch.into(),
            ordinal,
            loads: AtomicUsize::new(0),
            refuse_load: false,
            symbols: None,
            launches: Mutex::new(Vec::new()),
            functions: Mutex::new(Vec::new()),
            signatures: Mutex::new(Vec::new()),
            memsets: Mutex::new(Vec::new()),
        })
    }
    pub fn loads(&self) -> usize {
        self.loads.load(Ordering::SeqCst)
    }
}

impl IngestorDevice for FakeDevice {
    fn arch(&self) -> String {
        self.arch.clone()
    }
    fn ordinal(&self) -> i32 {
        self.ordinal
    }
    fn load_module(&self, code: &[u8]) -> Result<Arc<dyn IngestorModule>, DeviceError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(2));
        if self.refuse_load {
            return Err(DeviceError::new(
                "hipModuleLoadData",
                "hipErrorInvalidImage",
            ));
        }
        Ok(Arc::new(FakeModule {
            symbols: self.symbols.clone(),
            code_sha256: sha256_hex(code),
        }))
    }
    fn launch(
        &self,
        f: &dyn KernelFunction,
        geometry: LaunchGeometry,
        args: &[KernelArgValue],
        signature: &[KernelArgument],
        _stream: u64,
    ) -> Result<(), DeviceError> {
        let function = f
            .as_any()
            .downcast_ref::<FakeFunction>()
            .map_or_else(Default::default, |f| (f.0.clone(), f.1.clone()));
        self.functions.lock().unwrap().push(function);
        self.signatures.lock().unwrap().push(signature.to_vec());
        self.launches
            .lock()
            .unwrap()
            .push((geometry, args.to_vec()));
        Ok(())
    }
    fn memset_async(
        &self,
        addr: u64,
        value: u8,
        bytes: u64,
        _stream: u64,
    ) -> Result<(), DeviceError> {
        let launched = self.launches.lock().unwrap().len();
        self.memsets
            .lock()
            .unwrap()
            .push((addr, value, bytes, launched));
        Ok(())
    }
    fn synchronize(&self, _stream: u64) -> Result<(), DeviceError> {
        Ok(())
    }
}

/// A resolver whose device can be switched (per test, not per thread).
pub struct SwitchResolver(pub Mutex<Option<Arc<dyn IngestorDevice>>>);
impl SwitchResolver {
    pub fn new(d: Option<Arc<dyn IngestorDevice>>) -> Arc<SwitchResolver> {
        Arc::new(SwitchResolver(Mutex::new(d)))
    }
    pub fn set(&self, d: Arc<dyn IngestorDevice>) {
        *self.0.lock().unwrap() = Some(d);
    }
}
impl DeviceResolver for SwitchResolver {
    fn current_device(&self) -> Option<Arc<dyn IngestorDevice>> {
        self.0.lock().unwrap().clone()
    }
}

/// In-memory archives: (archive path, toc key) → bytes; or a forced failure stage.
#[derive(Default)]
pub struct FakeReader {
    pub entries: HashMap<(PathBuf, String), Vec<u8>>,
    pub fail: Option<KpackLoadStage>,
    pub reads: AtomicUsize,
    pub last_arch: Mutex<String>,
}
impl CodeObjectReader for FakeReader {
    fn read(
        &self,
        archive: &Path,
        toc_key: &str,
        device_arch: &str,
        sha256: &str,
    ) -> Result<Vec<u8>, KpackReadError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        *self.last_arch.lock().unwrap() = device_arch.to_string();
        let err = |stage, message: String| KpackReadError {
            stage,
            code: None,
            message,
        };
        if let Some(stage) = self.fail {
            return Err(err(stage, "forced by the test".into()));
        }
        let bytes = self
            .entries
            .get(&(archive.to_path_buf(), toc_key.to_string()))
            .ok_or_else(|| {
                err(
                    KpackLoadStage::OpenArchive,
                    format!("kpack archive '{}' does not exist", archive.display()),
                )
            })?;
        if sha256_hex(bytes) != sha256 {
            return Err(err(KpackLoadStage::DigestMismatch, "hashes differ".into()));
        }
        Ok(bytes.clone())
    }
}

pub fn conv_signature() -> Vec<KernelArgument> {
    let mut s = vec![
        KernelArgument::named("global_buffer", 8, 0, "x"),
        KernelArgument::named("global_buffer", 8, 8, "w"),
        KernelArgument::named("global_buffer", 8, 16, "y"),
    ];
    for (i, n) in ["n", "c", "h", "width", "k", "r", "s"].iter().enumerate() {
        s.push(KernelArgument::named("by_value", 4, 24 + 4 * i as u32, n));
    }
    s
}

pub const CONV_KERNEL_ID: [u8; 16] = [0x21; 16];

/// The valid conv payload of the restore checklist: target gfx90a, extents (1,1,3,5,1,2,2),
/// block 64, 256 bytes of 0xAB with a matching sha256.
pub fn valid_conv_payload() -> IngestorPlanPayload {
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
    let code = vec![0xAB; 256];
    IngestorPlanPayload {
        kernel_descriptor_id: CONV_KERNEL_ID,
        workspace_bytes: 0,
        runtime_pass_by_value_uids: vec![],
        dispatch_symbol: "hipkernel.conv_fwd.dispatch.v1".into(),
        launch_values: inputs.to_values(),
        source_kind: KernelSourceKind::Kpack,
        symbol: "conv_fwd_nchw".into(),
        target: "gfx90a".into(),
        sha256: sha256_hex(&code),
        signature: conv_signature(),
        code_object: code,
        provider_version: "0.1.0".into(),
    }
}

/// The system `python3` with the pack venv's site-packages (`TRITON_VENV`, else
/// `target/triton-venv`) ahead of any `PYTHONPATH` already set, as a command builder; `None`
/// (after printing `skipped: …`) when that python cannot import numpy and triton.
fn triton_python() -> Option<impl Fn(&[&str]) -> std::process::Output> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let venv = std::env::var_os("TRITON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/triton-venv"));
    let site = std::fs::read_dir(venv.join("lib"))
        .ok()
        .and_then(|mut d| d.find_map(|e| e.ok()))
        .map(|e| e.path().join("site-packages"));
    let Some(site) = site.filter(|s| s.is_dir()) else {
        eprintln!("skipped: no Triton venv at {}", venv.display());
        return None;
    };
    let mut path = std::ffi::OsString::from(&site);
    if let Some(p) = std::env::var_os("PYTHONPATH") {
        path.push(":");
        path.push(p);
    }
    let py = move |args: &[&str]| {
        std::process::Command::new("python3")
            .args(args)
            .current_dir(&root)
            .env("PYTHONPATH", &path)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .expect("python3 runs")
    };
    if !py(&["-c", "import numpy, triton"]).status.success() {
        eprintln!(
            "skipped: python3 cannot import numpy and triton from {}",
            site.display()
        );
        return None;
    }
    Some(py)
}

/// Runs the Triton-interpreter check `engines/kernels/triton/<script>` with [`triton_python`];
/// asserts it ends with `all ok` after exactly `ok_cases` lines starting `ok `. Prints
/// `skipped: …` and returns when that python cannot import numpy and triton.
pub fn run_interpreter_check(script: &str, ok_cases: usize) {
    let Some(py) = triton_python() else { return };
    let path = format!("engines/kernels/triton/{script}");
    let o = py(&[&path]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.trim_end().ends_with("all ok"),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        ok_cases,
        "{out}"
    );
}

/// Runs the python check `script` (a path from the repository root) with `args` under
/// [`triton_python`]; asserts it succeeds with `expect` in its output. Prints `skipped: …` and
/// returns when that python cannot import numpy and triton.
pub fn run_python_check(script: &str, args: &[&str], expect: &str) {
    let Some(py) = triton_python() else { return };
    let mut all = vec![script];
    all.extend_from_slice(args);
    let o = py(&all);
    let out = String::from_utf8_lossy(&o.stdout);
    eprintln!("{out}");
    assert!(
        o.status.success() && out.contains(expect),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The GPU engine as `gpu::open` makes it (the packed Triton entries, then the clang packs of
/// `engines/kernels/packed/<arch>`) over a fake device of `arch` that records launches.
pub fn fake_gpu_engine(
    arch: &str,
) -> (
    hipdnn_engines::ingestor::engine::IngestorEngine,
    Arc<FakeDevice>,
) {
    use hipdnn_engines::gpu::{load_packed_descriptors, load_triton_descriptors};
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("kernels/packed")
        .join(arch);
    let mut kernels = load_triton_descriptors(&dir).unwrap();
    kernels.extend(load_packed_descriptors(&dir).unwrap());
    let dev = FakeDevice::new(arch, 0);
    let e = hipdnn_engines::ingestor::engine::IngestorEngine::new(
        "hipkernel.ingestor.gpu",
        kernels,
        Arc::new(hipdnn_engines::ingestor::device::FixedDevice(dev.clone())),
        Arc::new(hipdnn_engines::registry::pack_registry()),
        Arc::new(hipdnn_engines::ingestor::KpackCodeObjectReader),
    );
    (e, dev)
}

/// Executes `ctx` on a fake device: each `(uid, bytes)` of `tensors` bound at a distinct fake
/// address (0x1000_0000·uid), a workspace at 0x7_0000_0000 when the plan needs one.
pub fn fake_execute(
    ctx: &dyn hipdnn_backend::engine::ExecutionContext,
    tensors: &[(i64, usize)],
) -> hipdnn_backend::status::PluginResult<()> {
    use hipdnn_backend::engine::{BufferRef, ExecuteArgs, TensorBinding};
    let mut t: Vec<TensorBinding<'_>> = tensors
        .iter()
        .map(|(u, len)| TensorBinding {
            uid: *u,
            data: BufferRef::Device {
                addr: 0x1000_0000 * *u as u64,
                len: *len,
            },
        })
        .collect();
    let ws = ctx.workspace_size();
    ctx.execute(ExecuteArgs {
        stream: 0,
        workspace: (ws > 0).then_some(BufferRef::Device {
            addr: 0x7_0000_0000,
            len: ws,
        }),
        tensors: &mut t,
    })
}

/// The launches `dev` recorded, as an interpreter replay reads them (`launch_replay.py`): per
/// launch its grid and each kernel argument by `sig`'s parameter name (a pointer as the
/// tensor UID of its fake address `0x1000_0000·uid`, 0 = null; the workspace at
/// 0x7_0000_0000 as `{"ws": true}`; an integer as `{"i32": v}`).
pub fn recorded_launches(dev: &FakeDevice, sig: &[KernelArgument]) -> Vec<serde_json::Value> {
    dev.launches
        .lock()
        .unwrap()
        .iter()
        .map(|(geom, args)| {
            let mut named = serde_json::Map::new();
            for (a, v) in sig.iter().zip(args) {
                let v = match v {
                    KernelArgValue::Pointer(0x7_0000_0000) => serde_json::json!({ "ws": true }),
                    KernelArgValue::Pointer(p) => serde_json::json!({ "ptr": p / 0x1000_0000 }),
                    KernelArgValue::I32(v) => serde_json::json!({ "i32": v }),
                    o => panic!("{o:?}"),
                };
                named.insert(a.name.clone(), v);
            }
            serde_json::json!({"grid": geom.grid, "args": named})
        })
        .collect()
}

/// The tensors `uids` of graph `b` as an interpreter replay reads them: element type (`f32`,
/// `f16`, `bf16`, else the `DataType` name), dims, strides, byte length, and for each of `ins`
/// its bytes in the tensor's layout (hex).
pub fn tensors_json(
    b: &hipdnn_engines::reference::testing::GraphBuilder,
    uids: &[i64],
    ins: &[(i64, Vec<f32>)],
) -> serde_json::Map<String, serde_json::Value> {
    use hipdnn_schema::graph::DataType as DT;
    let mut tensors = serde_json::Map::new();
    for u in uids {
        let s = b.spec(*u);
        let dt = match s.data_type {
            DT::FLOAT => "f32".to_string(),
            DT::HALF => "f16".to_string(),
            DT::BFLOAT16 => "bf16".to_string(),
            other => format!("{other:?}"),
        };
        let mut o = serde_json::json!({"dt": dt, "dims": s.dims, "strides": s.strides,
            "bytes_len": s.bytes_len()});
        if let Some((_, v)) = ins.iter().find(|(x, _)| x == u) {
            o["input_hex"] = serde_json::json!(hex::encode(s.encode(v)));
        }
        tensors.insert(u.to_string(), o);
    }
    tensors
}
