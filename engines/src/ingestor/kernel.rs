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
