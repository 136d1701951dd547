//! GPU engine factory: the kernel-ingestor engine over the packed kernels of one device.
//!
//! [`open`] loads the GPU runtime (libamdhip64 or libcuda.so.1, at run time), opens a device,
//! finds the packed kernels for its base architecture (`<kernel dir>/<arch>/kernels.json`,
//! the Triton entries of `triton.json`, and the kpack archives beside them), turns each packed
//! entry into a [`KernelDescriptor`] and builds one [`IngestorEngine`] ([`GPU_ENGINE_NAME`]) with [`HipIngestorDevice`], the kpack reader and [`pack_registry`].
//!
//! Packed entries (format `engines/kernels/README.md`) map to descriptors as follows: the
//! entry's `family` names a [`PackFamily`], whose current contract is the dispatch
//! ([`PackFamily::packed_contract`]); entries that name an older contract
//! (`hipdnn_conv_fwd_v1_<t>`) are left out — v2 serves every graph v1 does, and the v1
//! handler does not check data types per kernel. The descriptor id is a UUID (version 8) from
//! the first 16 bytes of SHA-256(`hipdnn-rs packed kernel ` + symbol), so a kernel keeps its id
//! across archs and rebuilds.
//!
//! The kernels are looked for, first match wins ([`resolve_kernel_location`], details in
//! [`crate::kernel_location`]): the directory `HIPDNN_KERNEL_DIR`; an install location next to
//! the loaded `libhipdnn_backend.so` (`<its dir>/hipdnn/kernels`) or the executable
//! (`<exe dir>/../lib/hipdnn/kernels`); the kernels compiled into the binary (cargo features
//! `kernels-<arch>`, on by default). [`open`] logs the one it uses at INFO.

use crate::ingestor::HipIngestorDevice;
use crate::ingestor::kernel::{KernelArgument, KernelSourceKind, TritonConfig};
use crate::ingestor::{
    FixedDevice, IngestorEngine, KernelDescriptor, KernelSource, KpackCodeObjectReader,
};
use crate::registry::{PackFamily, pack_registry};
use hipdnn_hip::{DriverError, GpuRuntime, NoGpu};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Name of the GPU ingestor engine.
pub const GPU_ENGINE_NAME: &str = "hipkernel.ingestor.gpu";
pub use crate::kernel_location::{
    KERNEL_DIR_ENV, KernelLocation, export_kernels, resolve_kernel_location, set_loaded_library,
};

/// Why no GPU engine could be opened ([`open`]). Every variant's `Display` starts with
/// `no GPU: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuUnavailable {
    /// No GPU runtime library could be loaded, or it reports no device (the runtime's own
    /// error name is in the reason).
    #[error(transparent)]
    NoGpu(#[from] NoGpu),
    /// The ordinal names no device: the runtime reports `count` devices (ordinals
    /// `0..count`).
    #[error(
        "no GPU: device ordinal {ordinal} is out of range: the runtime reports {count} device{} (ordinals 0..{count})",
        if *count == 1 { "" } else { "s" }
    )]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// The number of devices the runtime reports.
        count: usize,
    },
    /// The device exists but the driver refused to open it.
    #[error("no GPU: cannot open device {ordinal}: {source}")]
    OpenDevice {
        /// The device ordinal.
        ordinal: usize,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// No kernels are packed for the device's base architecture (in a kernel directory, or
    /// among the embedded kernels, whose directory is `<embedded>/<arch>`).
    #[error("no GPU: no kernels packed for {arch} ({} missing)", path.display())]
    NoKernels {
        /// Base architecture (`sm_90`, `gfx942`).
        arch: String,
        /// The `kernels.json` that was looked for.
        path: PathBuf,
    },
    /// The packed kernel descriptors of the architecture are unreadable.
    #[error("no GPU: {0}")]
    PackedDescriptors(#[from] PackedDescriptorError),
}

/// A `kernels.json` (the pack tool's output) that cannot be read or has a bad entry.
/// `Display`: `<path>: <what>` or `<path> kernels[<i>]: <what>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {detail}", path.display(), entry.map(|i| format!(" kernels[{i}]")).unwrap_or_default())]
pub struct PackedDescriptorError {
    /// The file.
    pub path: PathBuf,
    /// The index of the bad entry in its `kernels` array, `None` for a file-level problem.
    pub entry: Option<usize>,
    /// What is wrong.
    pub detail: String,
}

/// The pack registry every GPU engine uses: [`crate::registry::pack_registry`].
pub fn gpu_registry() -> crate::ingestor::DispatchRegistry {
    pack_registry()
}

/// A GPU ready for hipDNN: the device, its arch and kernel directory, and the engine.
pub struct GpuEngines {
    /// Where the kernels came from.
    pub kernels: KernelLocation,
    /// The opened device.
    pub device: Arc<hipdnn_hip::Device>,
    /// Base architecture (`sm_90`, `gfx942`).
    pub arch: String,
    /// The packed directory of that arch (`<kernel dir>/<arch>`; `<embedded>/<arch>`, a label
    /// that is never opened, for the kernels compiled into the binary).
    pub packed_dir: PathBuf,
    /// The ingestor engines, in the order to register them (before the CPU engine).
    pub engines: Vec<Arc<IngestorEngine>>,
}

impl std::fmt::Debug for GpuEngines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GpuEngines({} at {})",
            self.arch,
            self.packed_dir.display()
        )
    }
}

fn uuid_for(symbol: &str) -> uuid::Uuid {
    let d = Sha256::digest(format!("hipdnn-rs packed kernel {symbol}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(b)
}

/// Reads `<packed_dir>/kernels.json` (the pack tool's format) into kernel descriptors for the
/// v2 contracts (see the module docs for the mapping); the archive path is resolved against
/// `packed_dir` and must stay inside it.
///
/// # Errors
/// [`PackedDescriptorError`] naming the file and the bad entry when the file is missing or
/// malformed. Entries of a kernel family this build does not know are skipped (logged at
/// debug level).
pub fn load_packed_descriptors(
    packed_dir: &Path,
) -> Result<Vec<KernelDescriptor>, PackedDescriptorError> {
    let path = packed_dir.join("kernels.json");
    let text = std::fs::read_to_string(&path).map_err(|e| PackedDescriptorError {
        path: path.clone(),
        entry: None,
        detail: format!("cannot read: {e}"),
    })?;
    parse_packed_descriptors(packed_dir, &text)
}

/// [`load_packed_descriptors`] over the text of `<packed_dir>/kernels.json` already in memory
/// (the embedded kernels); `packed_dir` names the file in errors and prefixes the archive
/// paths.
///
/// # Errors
/// As [`load_packed_descriptors`], less the read.
pub fn parse_packed_descriptors(
    packed_dir: &Path,
    text: &str,
) -> Result<Vec<KernelDescriptor>, PackedDescriptorError> {
    let path = packed_dir.join("kernels.json");
    let file_error = |detail: String| PackedDescriptorError {
        path: path.clone(),
        entry: None,
        detail,
    };
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| file_error(format!("not JSON: {e}")))?;
    let arch = v["arch"].as_str().unwrap_or_default().to_string();
    let entries = v["kernels"]
        .as_array()
        .ok_or_else(|| file_error("no 'kernels' array".into()))?;
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let bad = |what: &str| PackedDescriptorError {
            path: path.clone(),
            entry: Some(i),
            detail: what.to_string(),
        };
        let family = e["family"].as_str().ok_or_else(|| bad("no family"))?;
        let Some(family) = PackFamily::from_name(family) else {
            log::debug!(
                "{} kernels[{i}]: kernel family {family:?} is not served by this build; skipped",
                path.display()
            );
            continue;
        };
        // Entries naming an older contract (v1) are left out: v2 serves every graph v1 does.
        if e.get("contract").is_some() {
            continue;
        }
        let dispatch = family.packed_contract();
        let ks = &e["kernel_source"];
        if ks["kind"].as_str() != Some("kpack") {
            return Err(bad("kernel_source.kind is not kpack"));
        }
        let library = ks["library"].as_str().ok_or_else(|| bad("no library"))?;
        if library.contains('/') || library.contains('\\') || library.starts_with('.') {
            return Err(bad(
                "library must be a file name inside the packed directory",
            ));
        }
        let s = |k: &str| ks[k].as_str().map(str::to_string).ok_or_else(|| bad(k));
        let symbol = s("symbol")?;
        let signature = ks["signature"]
            .as_array()
            .ok_or_else(|| bad("no signature"))?
            .iter()
            .map(|a| {
                Some(KernelArgument::new(
                    a["kind"].as_str()?,
                    u32::try_from(a["size"].as_u64()?).ok()?,
                    u32::try_from(a["offset"].as_u64()?).ok()?,
                ))
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("bad signature entry"))?;
        let source = KernelSource {
            kind: KernelSourceKind::Kpack,
            library: Some(packed_dir.join(library)),
            toc_key: s("toc_key")?,
            symbol: symbol.clone(),
            sha256: s("sha256")?,
            signature,
        };
        out.push(KernelDescriptor {
            id: uuid_for(&symbol),
            name: symbol,
            dispatch: dispatch.to_string(),
            archs: vec![arch.clone()],
            sources: BTreeMap::from([("main".to_string(), source)]),
            config: None,
        });
    }
    Ok(out)
}

/// Reads `<packed_dir>/triton.json` (the Triton entries written by `xtask pack-kernels`,
/// format `engines/kernels/README.md`) into kernel descriptors: `name` is the entry's config
/// name (parsed by the family's contract), `dispatch` the family's contract
/// ([`PackFamily::packed_contract`]), the signature the entry's named parameter list. A missing
/// file gives no descriptors (an older tree); entries of families this build does not serve
/// are skipped. The id is a UUID (version 8) from SHA-256(`hipdnn-rs packed kernel ` + name).
///
/// # Errors
/// [`PackedDescriptorError`] naming the file and the bad entry for a malformed file.
pub fn load_triton_descriptors(
    packed_dir: &Path,
) -> Result<Vec<KernelDescriptor>, PackedDescriptorError> {
    let path = packed_dir.join("triton.json");
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| PackedDescriptorError {
        path: path.clone(),
        entry: None,
        detail: format!("cannot read: {e}"),
    })?;
    parse_triton_descriptors(packed_dir, &text)
}

/// [`load_triton_descriptors`] over the text of `<packed_dir>/triton.json` already in memory
/// (the embedded kernels); `packed_dir` names the file in errors and prefixes the archive
/// paths.
///
/// # Errors
/// As [`load_triton_descriptors`], less the read.
pub fn parse_triton_descriptors(
    packed_dir: &Path,
    text: &str,
) -> Result<Vec<KernelDescriptor>, PackedDescriptorError> {
    let path = packed_dir.join("triton.json");
    let file_error = |detail: String| PackedDescriptorError {
        path: path.clone(),
        entry: None,
        detail,
    };
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| file_error(format!("not JSON: {e}")))?;
    let arch = v["arch"].as_str().unwrap_or_default().to_string();
    let entries = v["kernels"]
        .as_array()
        .ok_or_else(|| file_error("no 'kernels' array".into()))?;
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let bad = |what: &str| PackedDescriptorError {
            path: path.clone(),
            entry: Some(i),
            detail: what.to_string(),
        };
        let family = e["family"].as_str().ok_or_else(|| bad("no family"))?;
        let Some(family) = PackFamily::from_name(family) else {
            continue;
        };
        let name = e["name"]
            .as_str()
            .ok_or_else(|| bad("no name"))?
            .to_string();
        let config = triton_config(e, family.name()).ok_or_else(|| {
            bad("the record lacks its configuration (dtype, variant, block, num_warps, num_stages, shared_bytes, warp_size)")
        })?;
        let ks = &e["kernel_source"];
        if ks["kind"].as_str() != Some("kpack") {
            return Err(bad("kernel_source.kind is not kpack"));
        }
        let library = ks["library"].as_str().ok_or_else(|| bad("no library"))?;
        if library.contains('/') || library.contains('\\') || library.starts_with('.') {
            return Err(bad(
                "library must be a file name inside the packed directory",
            ));
        }
        let s = |k: &str| ks[k].as_str().map(str::to_string).ok_or_else(|| bad(k));
        let signature = ks["signature"]
            .as_array()
            .ok_or_else(|| bad("no signature"))?
            .iter()
            .map(|a| {
                Some(KernelArgument::named(
                    a["kind"].as_str()?,
                    u32::try_from(a["size"].as_u64()?).ok()?,
                    u32::try_from(a["offset"].as_u64()?).ok()?,
                    a["name"].as_str()?,
                ))
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("bad signature entry"))?;
        let source = KernelSource {
            kind: KernelSourceKind::Kpack,
            library: Some(packed_dir.join(library)),
            toc_key: s("toc_key")?,
            symbol: s("symbol")?,
            sha256: s("sha256")?,
            signature,
        };
        out.push(KernelDescriptor {
            id: uuid_for(&name),
            name,
            dispatch: family.packed_contract().to_string(),
            archs: vec![arch.clone()],
            sources: BTreeMap::from([("main".to_string(), source)]),
            config: Some(config),
        });
    }
    Ok(out)
}

/// The typed configuration of a `triton.json` record: `dtype`, `variant` (`spec`, `nchw`,
/// `nchwt`, `bcol` or `generic`), `block.{m,n,k,group_m}`, `num_warps`, `num_stages`,
/// `shared_bytes`, `warp_size`; `None` when a field is missing or out of range.
fn triton_config(e: &serde_json::Value, family: &str) -> Option<TritonConfig> {
    let int = |v: &serde_json::Value| v.as_i64();
    let variant = e["variant"].as_str()?;
    if !["spec", "nchw", "nchwt", "bcol", "grouped", "generic"].contains(&variant) {
        return None;
    }
    let b = &e["block"];
    Some(TritonConfig {
        family: family.to_string(),
        dtype: e["dtype"].as_str()?.to_string(),
        spec: variant == "spec",
        channels_first: variant == "nchw",
        transposing: variant == "nchwt",
        b_col: variant == "bcol",
        grouped: variant == "grouped",
        block: [int(&b["m"])?, int(&b["n"])?, int(&b["k"])?],
        group_m: int(&b["group_m"])?,
        num_warps: int(&e["num_warps"])?,
        num_stages: int(&e["num_stages"])?,
        shared_bytes: int(&e["shared_bytes"])?,
        warp_size: int(&e["warp_size"])?,
    })
}

/// Opens GPU `ordinal` and builds its ingestor engine, with the kernels of
/// [`resolve_kernel_location`] (logged at INFO as `hipdnn: kernels: <location>` before the GPU
/// runtime is loaded, so it shows on a machine without a GPU too).
///
/// # Errors
/// [`GpuUnavailable`]: [`GpuUnavailable::NoGpu`] without a runtime or device,
/// [`GpuUnavailable::NoSuchDevice`] for an ordinal past the device count,
/// [`GpuUnavailable::OpenDevice`] when the driver refuses the device,
/// [`GpuUnavailable::NoKernels`] / [`GpuUnavailable::PackedDescriptors`] when its architecture
/// has no (readable) packed kernels.
pub fn open(ordinal: usize) -> Result<GpuEngines, GpuUnavailable> {
    let location = resolve_kernel_location();
    log::info!("hipdnn: kernels: {location}");
    open_at(location, ordinal)
}

/// [`open`] of the device current on the calling thread ([`current_device`]), the kernel
/// location logged first as in [`open`] (so it shows on a machine without a GPU too).
///
/// # Errors
/// As [`current_device`], then as [`open`].
pub fn open_current() -> Result<GpuEngines, GpuUnavailable> {
    let location = resolve_kernel_location();
    log::info!("hipdnn: kernels: {location}");
    open_at(location, current_device()?)
}

/// [`open`] with the kernel location resolved (and logged) already.
fn open_at(
    location: crate::kernel_location::KernelLocation,
    ordinal: usize,
) -> Result<GpuEngines, GpuUnavailable> {
    let rt = GpuRuntime::load()?;
    let count = rt.devices().len();
    if ordinal >= count {
        return Err(GpuUnavailable::NoSuchDevice { ordinal, count });
    }
    let device = rt
        .open_device(ordinal)
        .map_err(|source| GpuUnavailable::OpenDevice { ordinal, source })?;
    let arch = device
        .arch()
        .split(':')
        .next()
        .unwrap_or_default()
        .to_string();
    let (packed_dir, kernels) = match location.dir() {
        Some(dir) => {
            let packed_dir = dir.join(&arch);
            if !packed_dir.join("kernels.json").is_file() {
                return Err(GpuUnavailable::NoKernels {
                    arch,
                    path: packed_dir.join("kernels.json"),
                });
            }
            // Triton entries first: where both serve a graph, the generated kernel is chosen.
            let mut kernels = load_triton_descriptors(&packed_dir)?;
            kernels.extend(load_packed_descriptors(&packed_dir)?);
            (packed_dir, kernels)
        }
        None => load_embedded_descriptors(&arch)?,
    };
    let dev: Arc<dyn crate::ingestor::IngestorDevice> =
        Arc::new(HipIngestorDevice::new(device.clone()));
    let engine = IngestorEngine::new(
        GPU_ENGINE_NAME,
        kernels,
        Arc::new(FixedDevice(dev)),
        Arc::new(pack_registry()),
        Arc::new(KpackCodeObjectReader),
    );
    Ok(GpuEngines {
        kernels: location,
        device,
        arch,
        packed_dir,
        engines: vec![Arc::new(engine)],
    })
}

/// The calling thread's current device ordinal as the GPU runtime knows it
/// ([`GpuRuntime::current_device`]: `hipGetDevice`, or the device of the current CUDA context;
/// 0 for a thread that never chose one): the device upstream hipDNN binds a new handle to.
///
/// # Errors
/// [`GpuUnavailable::NoGpu`] without a runtime or device, or when the runtime cannot say
/// (the driver's error in the reason).
pub fn current_device() -> Result<usize, GpuUnavailable> {
    let rt = GpuRuntime::load()?;
    rt.current_device().map_err(|e| {
        GpuUnavailable::NoGpu(NoGpu {
            reason: format!("{} loaded, but {e}", rt.library_name()),
        })
    })
}

/// The packed directory label (`<embedded>/<arch>`) and descriptors of the kernels of `arch`
/// compiled into the binary, Triton entries first (as
/// from a directory); their archives are registered with the kpack reader under
/// `<embedded>/<arch>/<archive>` ([`hipdnn_kpack::register_static_archive`]).
pub fn load_embedded_descriptors(
    arch: &str,
) -> Result<(PathBuf, Vec<KernelDescriptor>), GpuUnavailable> {
    let label = Path::new(crate::kernel_location::EMBEDDED_DIR_LABEL).join(arch);
    let missing = || GpuUnavailable::NoKernels {
        arch: arch.to_string(),
        path: label.join("kernels.json"),
    };
    let embedded = crate::kernel_location::embedded_kernels(arch).ok_or_else(missing)?;
    let text = |name: &str| -> Result<Option<&'static str>, PackedDescriptorError> {
        embedded
            .file(name)
            .map(|b| {
                std::str::from_utf8(b).map_err(|e| PackedDescriptorError {
                    path: label.join(name),
                    entry: None,
                    detail: format!("not UTF-8: {e}"),
                })
            })
            .transpose()
    };
    let kernels_json = text("kernels.json")?.ok_or_else(missing)?;
    for (name, bytes) in embedded.files {
        if name.ends_with(".kpack") {
            hipdnn_kpack::register_static_archive(label.join(name), bytes);
        }
    }
    let mut kernels = match text("triton.json")? {
        Some(t) => parse_triton_descriptors(&label, t)?,
        None => Vec::new(),
    };
    kernels.extend(parse_packed_descriptors(&label, kernels_json)?);
    Ok((label, kernels))
}
