//! Kernel descriptors: the JSON files that tell an ingestor engine which kernels exist, where
//! their code is, and which dispatch handler launches them.
//!
//! Upstream: the UKD kernel descriptor with a packed `kernel_source` of kind `kpack`
//! (reference `kpack.md` §8). This module owns parsing and the descriptor-tree path rules
//! (library inside the tree root, no symlink on the way); it never opens an archive.
//!
//! Format (one kernel per file, UTF-8 JSON):
//!
//! ```json
//! {
//!   "id": "0f5c2d1e-8a4b-4c3d-9e2f-1a2b3c4d5e6f",
//!   "name": "pointwise_add_f32",
//!   "dispatch": "hipkernel.pointwise.dispatch",
//!   "archs": ["gfx90a", "gfx942", "sm_90"],
//!   "kernel_source": {
//!     "kind": "kpack",
//!     "library": "kpack/pointwise.kpack",
//!     "toc_key": "3f9a…",
//!     "symbol": "pointwise_add_f32",
//!     "sha256": "<64 lowercase hex of the decompressed code object>",
//!     "signature": [{"kind": "global_buffer", "size": 8, "offset": 0, "name": "a"}]
//!   }
//! }
//! ```
//!
//! - `id`: the kernel UUID (saved as the payload's `kernel_descriptor_id`).
//! - `dispatch`: the unversioned alias `hipkernel.<pack>.dispatch` (default contract version)
//!   or a versioned name `hipkernel.<pack>.dispatch.v<N>`.
//! - `archs`: base archs the kernel is built for (informational; the archive decides).
//! - `kernel_source.kind`: `kpack`, `embedded_source`, `hsaco_file` or `rocke_builder`;
//!   `library` (kpack) is relative to the directory of the descriptor file; `signature` entries
//!   are `{kind, size, offset, name?}` with `kind` the AMDGPU `.value_kind`.
//! - A multi-launch kernel (UKD 1.1) has `"sources": {"<launch>": <kernel_source>, …}` instead
//!   of `kernel_source`; such kernels cannot be saved.

use super::kernel::{KernelArgument, KernelSourceKind};
use hipdnn_backend::status::{PluginError, PluginResult};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Where a kernel's code comes from (one launch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSource {
    /// Source kind.
    pub kind: KernelSourceKind,
    /// Archive path (kpack): the descriptor's `library` resolved against its directory,
    /// normalised; `None` for kinds without an archive.
    pub library: Option<PathBuf>,
    /// kpack TOC key (`binary_name`); empty for kinds without one.
    pub toc_key: String,
    /// Undecorated `extern "C"` symbol.
    pub symbol: String,
    /// SHA-256 of the decompressed code object, 64 lowercase hex; may be empty for kinds
    /// without a prebuilt code object.
    pub sha256: String,
    /// Kernel arguments.
    pub signature: Vec<KernelArgument>,
}

/// One kernel descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// Kernel UUID.
    pub id: uuid::Uuid,
    /// Kernel name (messages).
    pub name: String,
    /// Dispatch name (alias or versioned).
    pub dispatch: String,
    /// Base archs it is built for.
    pub archs: Vec<String>,
    /// Launch name → source; a single-launch kernel has one entry named `main`.
    pub sources: BTreeMap<String, KernelSource>,
    /// The configuration of a packed Triton entry, read from its `triton.json` record (`None`
    /// for every other kernel: descriptor files, `kernels.json` entries, restored plans).
    pub config: Option<super::kernel::TritonConfig>,
}

impl KernelDescriptor {
    /// Whether the kernel has more than one launch.
    pub fn is_multi_launch(&self) -> bool {
        self.sources.len() > 1
    }
    /// The source of a single-launch kernel (`None` for a multi-launch kernel).
    pub fn single_source(&self) -> Option<&KernelSource> {
        if self.sources.len() == 1 {
            self.sources.values().next()
        } else {
            None
        }
    }
    /// `kind 'name' (uuid)` as messages describe a kernel (`describeDescriptor`).
    pub fn describe(&self) -> String {
        let kind = self
            .single_source()
            .map(|s| s.kind.spelling())
            .unwrap_or("multi-launch");
        format!("{kind} '{}' ({})", self.name, self.id)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArgJson {
    kind: String,
    size: u32,
    offset: u32,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceJson {
    kind: String,
    #[serde(default)]
    library: Option<String>,
    #[serde(default)]
    toc_key: String,
    #[serde(default)]
    symbol: String,
    #[serde(default)]
    sha256: String,
    signature: Vec<ArgJson>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    entry: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DescriptorJson {
    id: String,
    name: String,
    dispatch: String,
    #[serde(default)]
    archs: Vec<String>,
    #[serde(default)]
    kernel_source: Option<SourceJson>,
    #[serde(default)]
    sources: Option<BTreeMap<String, SourceJson>>,
}

/// Lexically normalised `path` (`.` removed, `..` applied); `None` when `..` climbs above the
/// start of a relative path.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

fn invalid(msg: String) -> PluginError {
    PluginError::invalid_value(msg)
}

/// `path` made absolute against the current directory (no file-system access) and lexically
/// normalised; `None` when `..` climbs above the file-system root or there is no current
/// directory.
fn absolute_normal(path: &Path) -> Option<PathBuf> {
    if path.is_absolute() {
        normalise(path)
    } else {
        normalise(&std::env::current_dir().ok()?.join(path))
    }
}

/// Resolves a kpack `library` against the descriptor's directory and checks the tree rules.
///
/// Containment is decided on resolved paths, never on text prefixes (issue 12): the tree root
/// and the library are both made absolute and normalised component-wise (so relative and
/// absolute inputs behave the same), the library must lie inside the root component-wise, no
/// component below the root may be a symlink, and when both exist their canonical paths must
/// agree (the root's canonical path is a prefix of the library's).
fn resolve_library(tree_root: &Path, descriptor: &Path, library: &str) -> PluginResult<PathBuf> {
    let root = absolute_normal(tree_root).ok_or_else(|| {
        invalid(format!(
            "descriptor tree root '{}' is invalid",
            tree_root.display()
        ))
    })?;
    let dir = descriptor.parent().unwrap_or(Path::new(""));
    let joined = dir.join(library);
    let outside = || {
        invalid(format!(
            "kernel library '{library}' of descriptor '{}' resolves to '{}', which is outside the descriptor tree '{}'",
            descriptor.display(),
            joined.display(),
            tree_root.display()
        ))
    };
    let absolute = absolute_normal(&joined)
        .filter(|p| p.starts_with(&root))
        .ok_or_else(outside)?;
    if let (Ok(real_root), Ok(real_lib)) = (root.canonicalize(), absolute.canonicalize())
        && !real_lib.starts_with(&real_root)
    {
        return Err(outside());
    }
    // The path handed on keeps the caller's form (relative stays relative).
    let resolved = normalise(&joined).unwrap_or_else(|| absolute.clone());
    let (root, resolved_abs) = (root, absolute);
    // No component below the root may be a symlink.
    let mut at = root.clone();
    for c in resolved_abs
        .strip_prefix(&root)
        .unwrap_or(Path::new(""))
        .components()
    {
        at.push(c);
        if std::fs::symlink_metadata(&at)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false)
        {
            return Err(invalid(format!(
                "kernel library '{library}' of descriptor '{}' passes through the symlink '{}'; libraries must lie inside the descriptor tree without symlinks",
                descriptor.display(),
                at.display()
            )));
        }
    }
    Ok(resolved)
}

impl KernelDescriptor {
    /// Parses descriptor `text` read from the file `descriptor_path` inside `tree_root`.
    ///
    /// # Errors
    /// `INVALID_VALUE` naming the file for malformed JSON, a bad UUID, an unknown source kind,
    /// a missing/duplicate source, a malformed kpack digest, or a kpack `library` that leaves
    /// the tree or passes through a symlink (the message names the path).
    pub fn parse(tree_root: &Path, descriptor_path: &Path, text: &str) -> PluginResult<Self> {
        let file = descriptor_path.display();
        let j: DescriptorJson = serde_json::from_str(text)
            .map_err(|e| invalid(format!("kernel descriptor '{file}' is malformed: {e}")))?;
        let id = uuid::Uuid::parse_str(&j.id).map_err(|e| {
            invalid(format!(
                "kernel descriptor '{file}' has an invalid id '{}': {e}",
                j.id
            ))
        })?;
        let raw: BTreeMap<String, SourceJson> = match (j.kernel_source, j.sources) {
            (Some(s), None) => BTreeMap::from([("main".to_string(), s)]),
            (None, Some(m)) if !m.is_empty() => m,
            _ => {
                return Err(invalid(format!(
                    "kernel descriptor '{file}' needs exactly one of 'kernel_source' and a non-empty 'sources'"
                )));
            }
        };
        let mut sources = BTreeMap::new();
        for (launch, s) in raw {
            let kind = KernelSourceKind::from_spelling(&s.kind).ok_or_else(|| {
                invalid(format!(
                    "kernel descriptor '{file}' has unknown source kind '{}'",
                    s.kind
                ))
            })?;
            let library = match (kind, &s.library) {
                (KernelSourceKind::Kpack, Some(lib)) => {
                    Some(resolve_library(tree_root, descriptor_path, lib)?)
                }
                (KernelSourceKind::Kpack, None) => {
                    return Err(invalid(format!(
                        "kpack kernel source of '{file}' has no 'library'"
                    )));
                }
                _ => None,
            };
            if kind == KernelSourceKind::Kpack
                && !super::payload::is_lowercase_sha256_hex(&s.sha256)
            {
                return Err(invalid(format!(
                    "kpack kernel source of '{file}' has a sha256 that is not 64 lowercase hex characters"
                )));
            }
            let _ = (&s.source, &s.entry);
            sources.insert(
                launch,
                KernelSource {
                    kind,
                    library,
                    toc_key: s.toc_key,
                    symbol: s.symbol,
                    sha256: s.sha256,
                    signature: s
                        .signature
                        .into_iter()
                        .map(|a| KernelArgument {
                            kind: a.kind,
                            size: a.size,
                            offset: a.offset,
                            name: a.name.unwrap_or_default(),
                        })
                        .collect(),
                },
            );
        }
        Ok(KernelDescriptor {
            id,
            name: j.name,
            dispatch: j.dispatch,
            archs: j.archs,
            sources,
            config: None,
        })
    }

    /// Reads and parses the descriptor file `descriptor_path` inside `tree_root`.
    ///
    /// # Errors
    /// `INVALID_VALUE` when the file cannot be read, else as [`Self::parse`].
    pub fn load(tree_root: &Path, descriptor_path: &Path) -> PluginResult<Self> {
        let text = std::fs::read_to_string(descriptor_path).map_err(|e| {
            invalid(format!(
                "cannot read kernel descriptor '{}': {e}",
                descriptor_path.display()
            ))
        })?;
        Self::parse(tree_root, descriptor_path, &text)
    }
}
