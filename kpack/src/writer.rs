//! The deterministic rocm-kpack v1 writer (kpack.md §1–3, §9). Owns producing archive bytes;
//! it never reads archives back (see `format`).
//!
//! Upstream source of the layout: stellaraccident/rocm-kpack `python/rocm_kpack/kpack.py`
//! @694d7e55 (`PackedKernelArchive`) and `compression.py` @018a354d (`ZstdCompressor`, level 3).

use std::collections::BTreeMap;
use std::path::Path;

use rmpv::Value;

use super::error::KpackWriteError;
use super::format::{
    CompressionScheme, KPACK_BLOB_ALIGNMENT, KPACK_MAGIC, KPACK_VERSION, KPACK_ZSTD_LEVEL,
};

#[derive(Debug)]
struct PendingKernel {
    kind: String,
    bytes: Vec<u8>,
    metadata: Option<Value>,
}

/// A deterministic rocm-kpack v1 writer (kpack.md §1–3, §9).
///
/// Output is a pure function of the inputs: TOC keys in the writer's order (`format_version`,
/// `group_name`, `gfx_arch_family`, `gfx_arches`, `toc`, `compression_scheme`, then `blobs` or
/// `zstd_offset`/`zstd_size`); `gfx_arches` in declared order; `toc` sorted by binary_name then
/// arch (byte order), ordinals 0..N−1 in that order; zstd level 3 with the pinned `zstd` crate;
/// no timestamps. Entry keys: `type`, `ordinal`, `original_size`, then `metadata` if given.
#[derive(Debug)]
pub struct KpackWriter {
    group_name: String,
    gfx_arch_family: String,
    gfx_arches: Vec<String>,
    scheme: CompressionScheme,
    kernels: BTreeMap<(String, String), PendingKernel>,
}

impl KpackWriter {
    /// A writer for one archive. `gfx_arches` is written in this order; `gfx_arch_family` may
    /// equal the arch name for a one-arch shard. The conventional file name is
    /// `<group_name>-<gfx_arch_family>.kpack`.
    pub fn new(
        group_name: impl Into<String>,
        gfx_arch_family: impl Into<String>,
        gfx_arches: Vec<String>,
        scheme: CompressionScheme,
    ) -> Self {
        Self {
            group_name: group_name.into(),
            gfx_arch_family: gfx_arch_family.into(),
            gfx_arches,
            scheme,
            kernels: BTreeMap::new(),
        }
    }

    /// Adds one kernel at `toc[binary_name][arch]`. `kind` is written as the entry `type`
    /// verbatim (`"hsaco"`, `"ptx"`, `"cubin"`); `metadata`, if given, is written verbatim.
    ///
    /// # Errors
    /// [`KpackWriteError::DuplicateEntry`] for a pair already added;
    /// [`KpackWriteError::UndeclaredArch`] when `arch` is not in `gfx_arches`;
    /// [`KpackWriteError::Invalid`] for an empty binary_name or a blob over `u32::MAX` bytes.
    pub fn add_kernel(
        &mut self,
        binary_name: &str,
        arch: &str,
        kind: &str,
        bytes: Vec<u8>,
        metadata: Option<Value>,
    ) -> Result<(), KpackWriteError> {
        if binary_name.is_empty() {
            return Err(KpackWriteError::Invalid("empty toc_key".into()));
        }
        if u32::try_from(bytes.len()).is_err() {
            return Err(KpackWriteError::Invalid(format!(
                "toc_key '{binary_name}' at arch '{arch}' is {} bytes, over the u32 blob size limit",
                bytes.len()
            )));
        }
        if !self.gfx_arches.iter().any(|a| a == arch) {
            return Err(KpackWriteError::UndeclaredArch {
                binary_name: binary_name.into(),
                arch: arch.into(),
            });
        }
        let key = (binary_name.to_owned(), arch.to_owned());
        if self.kernels.contains_key(&key) {
            return Err(KpackWriteError::DuplicateEntry {
                binary_name: key.0,
                arch: key.1,
            });
        }
        self.kernels.insert(
            key,
            PendingKernel {
                kind: kind.to_owned(),
                bytes,
                metadata,
            },
        );
        Ok(())
    }

    /// Serializes the archive: header (toc_offset back-patched), zero pad to 64, blob section,
    /// TOC.
    ///
    /// # Errors
    /// [`KpackWriteError::Compression`] if zstd fails; [`KpackWriteError::Invalid`] if the zstd
    /// section outgrows `u32` frame sizes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, KpackWriteError> {
        let mut out = Vec::new();
        out.extend_from_slice(&KPACK_MAGIC);
        out.extend_from_slice(&KPACK_VERSION.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.resize(KPACK_BLOB_ALIGNMENT as usize, 0);

        let str_v = |s: &str| Value::String(s.into());
        let kv = |k: &str, v: Value| (Value::String(k.into()), v);
        let mut toc: Vec<(Value, Value)> = Vec::new();
        let mut blobs = Vec::new();
        let mut frames: Vec<Vec<u8>> = Vec::new();
        for (ordinal, ((binary_name, arch), k)) in self.kernels.iter().enumerate() {
            let mut entry = vec![
                kv("type", str_v(&k.kind)),
                kv("ordinal", Value::from(ordinal as u64)),
                kv("original_size", Value::from(k.bytes.len() as u64)),
            ];
            if let Some(m) = &k.metadata {
                entry.push(kv("metadata", m.clone()));
            }
            let bin_key = str_v(binary_name);
            match toc.last_mut() {
                Some((b, Value::Map(per_arch))) if *b == bin_key => {
                    per_arch.push(kv(arch, Value::Map(entry)))
                }
                _ => toc.push((bin_key, Value::Map(vec![kv(arch, Value::Map(entry))]))),
            }
            match self.scheme {
                CompressionScheme::None => {
                    blobs.push(Value::Map(vec![
                        kv("offset", Value::from(out.len() as u64)),
                        kv("size", Value::from(k.bytes.len() as u64)),
                    ]));
                    out.extend_from_slice(&k.bytes);
                }
                CompressionScheme::ZstdPerKernel => {
                    frames.push(
                        zstd::bulk::compress(&k.bytes, KPACK_ZSTD_LEVEL)
                            .map_err(KpackWriteError::Compression)?,
                    );
                }
            }
        }
        let zstd_offset = out.len() as u64;
        if self.scheme == CompressionScheme::ZstdPerKernel {
            out.extend_from_slice(&(frames.len() as u32).to_le_bytes());
            for f in &frames {
                let len = u32::try_from(f.len())
                    .map_err(|_| KpackWriteError::Invalid("zstd frame over u32".into()))?;
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(f);
            }
        }
        let zstd_size = out.len() as u64 - zstd_offset;

        let mut root = vec![
            kv("format_version", Value::from(1u64)),
            kv("group_name", str_v(&self.group_name)),
            kv("gfx_arch_family", str_v(&self.gfx_arch_family)),
            kv(
                "gfx_arches",
                Value::Array(self.gfx_arches.iter().map(|a| str_v(a)).collect()),
            ),
            kv("toc", Value::Map(toc)),
            kv("compression_scheme", str_v(self.scheme.name())),
        ];
        match self.scheme {
            CompressionScheme::None => root.push(kv("blobs", Value::Array(blobs))),
            CompressionScheme::ZstdPerKernel => {
                root.push(kv("zstd_offset", Value::from(zstd_offset)));
                root.push(kv("zstd_size", Value::from(zstd_size)));
            }
        }
        let toc_offset = out.len() as u64;
        rmpv::encode::write_value(&mut out, &Value::Map(root))
            .map_err(|e| KpackWriteError::Invalid(format!("TOC encoding failed: {e}")))?;
        out[8..16].copy_from_slice(&toc_offset.to_le_bytes());
        Ok(out)
    }

    /// [`KpackWriter::to_bytes`] then writes the file at `path` (replacing it) atomically: a
    /// temporary file in the same directory, `fsync`, `rename` over `path`, `fsync` of the
    /// directory. Readers see the old archive or the new one, never a torn file; on failure
    /// `path` is untouched and the temporary file removed.
    ///
    /// # Errors
    /// As [`KpackWriter::to_bytes`], plus [`KpackWriteError::Io`] when the file cannot be written.
    pub fn write_to(&self, path: impl AsRef<Path>) -> Result<(), KpackWriteError> {
        let bytes = self.to_bytes()?;
        write_atomically(path.as_ref(), &bytes).map_err(|source| KpackWriteError::Io {
            path: path.as_ref().display().to_string(),
            source,
        })
    }
}

/// Writes `bytes` to `path` through a temporary file `.<name>.<pid>.<n>.tmp` in the same
/// directory: write, `fsync`, `rename`, `fsync` of the directory; the temporary file is removed
/// on failure.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path has no file name",
        )
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
