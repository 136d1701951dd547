//! Kernel vocabulary shared by descriptors, plans and payloads: source kinds, kernel
//! arguments (signatures), and architecture names.
//!
//! Upstream sources: `KernelSource.hpp` (`KernelSourceKind` spellings), `CodeObjectTarget.hpp`
//! (`stripArchFeatures`, `isCodeObjectTargetCompatible`), and the signature rules of
//! `buildForSourceKind` (reference `kpack.md` §8, `ingestor-payload.md` §8, §9). This module
//! holds no state and touches no device.

use std::fmt;

/// How a kernel's code is obtained (`SourceKind` of the payload schema; 0 = UNSET is never a
/// valid kind and has no variant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelSourceKind {
    /// `embedded_source` (1): source text compiled at run time.
    EmbeddedSource,
    /// `kpack` (2): a code object in a kpack archive.
    Kpack,
    /// `hsaco_file` (3): a code object file.
    HsacoFile,
    /// `rocke_builder` (4): built by rocKE.
    RockeBuilder,
}

impl KernelSourceKind {
    /// Wire value in the payload (`SourceKind` enum: 1..=4).
    pub fn wire(self) -> u8 {
        match self {
            KernelSourceKind::EmbeddedSource => 1,
            KernelSourceKind::Kpack => 2,
            KernelSourceKind::HsacoFile => 3,
            KernelSourceKind::RockeBuilder => 4,
        }
    }
    /// The kind for a wire value; `None` for 0 (UNSET) and unknown values.
    pub fn from_wire(v: u8) -> Option<Self> {
        match v {
            1 => Some(KernelSourceKind::EmbeddedSource),
            2 => Some(KernelSourceKind::Kpack),
            3 => Some(KernelSourceKind::HsacoFile),
            4 => Some(KernelSourceKind::RockeBuilder),
            _ => None,
        }
    }
    /// Descriptor spelling: `embedded_source`, `kpack`, `hsaco_file`, `rocke_builder`.
    pub fn spelling(self) -> &'static str {
        match self {
            KernelSourceKind::EmbeddedSource => "embedded_source",
            KernelSourceKind::Kpack => "kpack",
            KernelSourceKind::HsacoFile => "hsaco_file",
            KernelSourceKind::RockeBuilder => "rocke_builder",
        }
    }
    /// The kind for a descriptor spelling.
    pub fn from_spelling(s: &str) -> Option<Self> {
        [
            Self::EmbeddedSource,
            Self::Kpack,
            Self::HsacoFile,
            Self::RockeBuilder,
        ]
        .into_iter()
        .find(|k| k.spelling() == s)
    }
}

impl fmt::Display for KernelSourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spelling())
    }
}

/// One kernel argument of a signature (AMDGPU code-object metadata `.args` entry, hidden
/// arguments dropped).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelArgument {
    /// AMDGPU `.value_kind` verbatim, e.g. `global_buffer`, `by_value`.
    pub kind: String,
    /// Size in bytes.
    pub size: u32,
    /// Offset in bytes in the kernel-argument segment (never compared).
    pub offset: u32,
    /// Argument name; empty = unnamed (the payload writer then omits it).
    pub name: String,
}

impl KernelArgument {
    /// An argument without a name.
    pub fn new(kind: &str, size: u32, offset: u32) -> Self {
        KernelArgument {
            kind: kind.to_string(),
            size,
            offset,
            name: String::new(),
        }
    }
    /// An argument with a name.
    pub fn named(kind: &str, size: u32, offset: u32, name: &str) -> Self {
        KernelArgument {
            kind: kind.to_string(),
            size,
            offset,
            name: name.to_string(),
        }
    }
}

/// Whether a recorded signature matches what a pack launches: equal length, `kind` and `size`
/// equal, `name` compared only when both are non-empty, `offset` never compared
/// (reference `kpack.md` §8).
pub fn signatures_match(recorded: &[KernelArgument], expected: &[KernelArgument]) -> bool {
    recorded.len() == expected.len()
        && recorded.iter().zip(expected).all(|(r, e)| {
            r.kind == e.kind
                && r.size == e.size
                && (r.name.is_empty() || e.name.is_empty() || r.name == e.name)
        })
}

/// A signature as messages print it: `kind:size@offset` (plus ` 'name'` when named) joined by
/// `, `, or `(no arguments)`.
pub fn format_signature(sig: &[KernelArgument]) -> String {
    if sig.is_empty() {
        return "(no arguments)".to_string();
    }
    sig.iter()
        .map(|a| {
            if a.name.is_empty() {
                format!("{}:{}@{}", a.kind, a.size, a.offset)
            } else {
                format!("{}:{}@{} '{}'", a.kind, a.size, a.offset, a.name)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `stripArchFeatures`: the base arch, cut at the first `:` (`gfx942:sramecc+:xnack-` →
/// `gfx942`; `sm_90` → `sm_90`).
pub fn strip_arch_features(arch: &str) -> &str {
    arch.split(':').next().unwrap_or(arch)
}

/// `isCodeObjectTargetCompatible(kind, target, device_arch)` (reference §9): for KPACK a
/// prefix match of `target` on the raw device arch ending at a `:` or at the end (`gfx90a`
/// serves `gfx90a` and `gfx90a:sramecc+:xnack-`); other kinds need exact equality.
pub fn is_code_object_target_compatible(
    kind: KernelSourceKind,
    target: &str,
    device_arch: &str,
) -> bool {
    match kind {
        KernelSourceKind::Kpack => match device_arch.strip_prefix(target) {
            Some(rest) => !target.is_empty() && (rest.is_empty() || rest.starts_with(':')),
            None => false,
        },
        _ => target == device_arch,
    }
}

/// A packed Triton entry's configuration: the typed fields of its `triton.json` record (family,
/// data type, variant, tile, warps, stages, shared bytes, warp size), or the values a restored
/// plan saved (then `dtype` is empty and `num_stages` 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TritonConfig {
    /// Kernel family (`matmul`).
    pub family: String,
    /// `f16`, `bf16` or `f32`.
    pub dtype: String,
    /// Specialized (divisibility hints, unit strides constant).
    pub spec: bool,
    /// The channels-first specialized variant (`nchw`: conv fprop, batchnorm_fwd; `spec` is
    /// false).
    pub channels_first: bool,
    /// The transposing channels-first variant (`nchwt`, conv fprop only: a layout pass into
    /// the workspace, then the channels-last GEMM; `spec` and `channels_first` are false).
    pub transposing: bool,
    /// The column-major-B specialized variant (`bcol`, matmul only: the spec hints with
    /// B's unit stride along K instead of N; `spec` is false).
    pub b_col: bool,
    /// The direct grouped variant (`grouped`, conv fprop only: few channels per group,
    /// channels-last x and y, a grid over pixel and output-channel tiles; the others false).
    pub grouped: bool,
    /// Tile M, N, K.
    pub block: [i64; 3],
    /// Grouped ordering of M tiles.
    pub group_m: i64,
    /// Warps per program.
    pub num_warps: i64,
    /// Software pipeline stages.
    pub num_stages: i64,
    /// Dynamic shared memory in bytes.
    pub shared_bytes: i64,
    /// 32 (NVIDIA) or 64 (AMD wave64).
    pub warp_size: i64,
}

/// What a code object's own bytes say it runs on (read from its header, never from the
/// descriptor or plan that carries it), so that code for another device is refused before the
/// driver sees it, naming both sides (issue 37, class 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeObjectIdentity {
    /// A CUDA ELF (cubin; `e_machine` 190 `EM_CUDA`) for SM version `sm` (90 = `sm_90`): from
    /// `e_flags` bits 0–7 in ELF ABI version 7 and earlier, bits 8–15 from ABI version 8 on
    /// (what Triton's `ptxas` writes for sm_90).
    CudaElf {
        /// The SM version, `10·major + minor`.
        sm: u32,
    },
    /// An AMDGPU ELF (`e_machine` 224 `EM_AMDGPU`) with `EF_AMDGPU_MACH` value `mach`
    /// (`e_flags` bits 0–7; 0x4c = gfx942).
    AmdgpuElf {
        /// The `EF_AMDGPU_MACH` value.
        mach: u32,
    },
    /// PTX text: its `.version` (the PTX ISA version, `8.4`) and `.target` (`sm_90`, first
    /// target only) directives, empty when absent.
    Ptx {
        /// The `.version` directive's value.
        version: String,
        /// The first `.target` value.
        target: String,
    },
    /// Anything else (not checked here; the driver decides).
    Other,
}

/// The gfx name of an `EF_AMDGPU_MACH` value (LLVM `AMDGPUUsage`: the targets ROCm ships);
/// `None` for values not in the table.
pub fn amdgpu_mach_name(mach: u32) -> Option<&'static str> {
    Some(match mach {
        0x2c => "gfx900",
        0x2f => "gfx906",
        0x30 => "gfx908",
        0x36 => "gfx1030",
        0x3f => "gfx90a",
        0x41 => "gfx1100",
        0x42 => "gfx1101",
        0x43 => "gfx1102",
        0x44 => "gfx1103",
        0x48 => "gfx1200",
        0x4c => "gfx942",
        0x4e => "gfx1201",
        0x4f => "gfx950",
        _ => return None,
    })
}

/// Reads what `bytes` say they run on: an ELF's machine and flags (64-bit little-endian
/// headers only), or PTX text's `.version` / `.target` directives. Never fails: unreadable
/// bytes are [`CodeObjectIdentity::Other`].
pub fn code_object_identity(bytes: &[u8]) -> CodeObjectIdentity {
    if bytes.len() >= 0x34 && bytes.starts_with(b"\x7fELF") && bytes[4] == 2 && bytes[5] == 1 {
        let machine = u16::from_le_bytes([bytes[0x12], bytes[0x13]]);
        let flags = u32::from_le_bytes([bytes[0x30], bytes[0x31], bytes[0x32], bytes[0x33]]);
        return match machine {
            190 if bytes[8] >= 8 => CodeObjectIdentity::CudaElf {
                sm: (flags >> 8) & 0xff,
            },
            190 => CodeObjectIdentity::CudaElf { sm: flags & 0xff },
            224 => CodeObjectIdentity::AmdgpuElf { mach: flags & 0xff },
            _ => CodeObjectIdentity::Other,
        };
    }
    // PTX: text whose directives include `.version` (comments and blank lines may precede).
    let head = &bytes[..bytes.len().min(64 * 1024)];
    let Ok(text) = std::str::from_utf8(head.split(|b| *b == 0).next().unwrap_or_default()) else {
        return CodeObjectIdentity::Other;
    };
    let directive = |name: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(name))
            .filter(|rest| rest.starts_with([' ', '\t']))
            .map(|rest| {
                rest.split([',', ' ', '\t', '/'])
                    .find(|w| !w.is_empty())
                    .unwrap_or_default()
                    .to_string()
            })
    };
    match directive(".version") {
        Some(version) => CodeObjectIdentity::Ptx {
            version,
            target: directive(".target").unwrap_or_default(),
        },
        None => CodeObjectIdentity::Other,
    }
}

/// The SM version of an `sm_<n>` arch name (`sm_90a` → 90), `None` for other names.
fn sm_version(arch: &str) -> Option<u32> {
    let digits: String = arch
        .strip_prefix("sm_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

impl CodeObjectIdentity {
    /// `None` when a device of arch `device_arch` (decorated or not) may run this code object
    /// (or the bytes say nothing checkable), else why it cannot, naming the code object's side
    /// (the device's side is the caller's to name). Rules: a cubin runs on its own SM major at
    /// its minor or above (`sm_80` on `sm_86`, never on `sm_90`); an AMDGPU code object only on
    /// the gfx it names; PTX on NVIDIA devices at or above its `.target` (the driver compiles
    /// it); no code object of one vendor on the other's device.
    pub fn refusal(&self, device_arch: &str) -> Option<String> {
        let base = strip_arch_features(device_arch);
        let dev_sm = sm_version(base);
        match self {
            CodeObjectIdentity::CudaElf { sm } => {
                let ok = dev_sm.is_some_and(|d| d / 10 == sm / 10 && d % 10 >= sm % 10);
                (!ok).then(|| {
                    format!(
                        "is a CUDA cubin for sm_{sm} (its ELF header), which runs only on sm_{}x at minor {} or above",
                        sm / 10,
                        sm % 10
                    )
                })
            }
            CodeObjectIdentity::AmdgpuElf { mach } => {
                let name = amdgpu_mach_name(*mach);
                let other = match name {
                    Some(n) => n != base,
                    None => !base.starts_with("gfx"),
                };
                other.then(|| match name {
                    Some(n) => format!("is an AMDGPU code object for {n} (its ELF header)"),
                    None => format!(
                        "is an AMDGPU code object (its ELF header, EF_AMDGPU_MACH {mach:#x})"
                    ),
                })
            }
            CodeObjectIdentity::Ptx { version, target } => {
                let want = sm_version(target);
                let ok = match (dev_sm, want) {
                    (Some(d), Some(t)) => t <= d,
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                (!ok).then(|| {
                    format!("is PTX (.version {version}) for .target {target}, which needs an NVIDIA device at or above it")
                })
            }
            CodeObjectIdentity::Other => None,
        }
    }
}
