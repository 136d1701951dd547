//! The rocm-kpack v1 file format and its reader: the `KPAK` header, the MessagePack TOC and the
//! two compression schemes (`none`, `zstd-per-kernel`). Owns byte layout and reading only: it
//! never selects architectures, checks digests or judges whether bytes are a code object (see
//! `arch` and `verified`); the writer lives in `writer`.
//!
//! Upstream sources: stellaraccident/rocm-kpack `python/rocm_kpack/kpack.py` @694d7e55 (writer),
//! `compression.py` @018a354d, ROCm/rocm-kpack `runtime/src/kpack.cpp` @660522f6 (reader, lookup).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rmpv::Value;

use super::error::{KpackError, KpackErrorCode};

/// File magic at offset 0: `"KPAK"` (`4B 50 41 4B`).
pub const KPACK_MAGIC: [u8; 4] = *b"KPAK";
/// The only header `version` (u32 LE at offset 4) this reader and writer know.
pub const KPACK_VERSION: u32 = 1;
/// Blob alignment; the header is zero-padded to this size, so the blob section starts at 64.
pub const KPACK_BLOB_ALIGNMENT: u64 = 64;
/// Size of the meaningful header fields (magic, version, toc_offset) in bytes.
pub const KPACK_HEADER_FIELDS_LEN: usize = 16;
/// zstd level the writer uses for `zstd-per-kernel` (the Python writer's level).
pub const KPACK_ZSTD_LEVEL: i32 = 3;
/// Highest `#N` suffix the `#N` lookup fallback tries (`#0` ..= `#99`, kpack.md §4).
pub const KPACK_MAX_SPLIT_INDEX: u32 = 99;

/// How kernel bytes are stored in the blob section (TOC key `compression_scheme`, kpack.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompressionScheme {
    /// `"none"`: raw blobs, `blobs[ordinal] = {offset (absolute), size}`.
    None,
    /// `"zstd-per-kernel"`: `u32 count`, then per ordinal `u32 frame_size` + one zstd frame.
    ZstdPerKernel,
}

impl CompressionScheme {
    /// The TOC spelling: `"none"` or `"zstd-per-kernel"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ZstdPerKernel => "zstd-per-kernel",
        }
    }
}

/// One `toc[binary_name][arch]` entry (kpack.md §2).
#[derive(Debug, Clone, PartialEq)]
pub struct TocEntry {
    /// The entry's `type`, e.g. `"hsaco"`, `"ptx"`, `"cubin"`; readers ignore it. Empty when the
    /// TOC has no `type`.
    pub kind: String,
    /// Index into the blob table (`blobs` or the zstd frame table), 0-based.
    pub ordinal: u64,
    /// Size in bytes of the uncompressed kernel; `None` when the TOC omits it (required for
    /// `zstd-per-kernel` reads).
    pub original_size: Option<u64>,
    /// Optional free-form `metadata` map, kept verbatim.
    pub metadata: Option<Value>,
}

/// Where an ordinal's bytes live in the file.
#[derive(Debug, Clone, Copy)]
struct BlobLoc {
    offset: u64,
    size: u64,
}

/// What identifies the file an archive was read from: device and inode (a file replaced by a
/// rename is a new inode), length, and modification and status-change times.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileIdentity {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
    changed: (i64, i64),
}

impl FileIdentity {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (dev, ino, changed) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino(), (meta.ctime(), meta.ctime_nsec()))
        };
        #[cfg(not(unix))]
        let (dev, ino, changed) = (0, 0, (0, 0));
        FileIdentity {
            dev,
            ino,
            len: meta.len(),
            modified: meta.modified().ok(),
            changed,
        }
    }
}

/// Where an archive's bytes come from: an open file, or bytes compiled into the binary.
#[derive(Debug)]
enum Source {
    File(File),
    Memory(std::io::Cursor<&'static [u8]>),
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Source::File(f) => f.read(buf),
            Source::Memory(c) => c.read(buf),
        }
    }
}

impl Seek for Source {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match self {
            Source::File(f) => f.seek(pos),
            Source::Memory(c) => c.seek(pos),
        }
    }
}

/// An opened kpack archive: header and TOC parsed, blob table known, the file kept open so
/// entries can be read later (even after the file is unlinked, on Unix). An archive can also
/// be read from bytes compiled into the binary ([`KpackArchive::from_static_bytes`]).
///
/// Thread-safe (`Send + Sync`): entry reads serialize on an internal file lock.
#[derive(Debug)]
pub struct KpackArchive {
    path: PathBuf,
    file: Mutex<Source>,
    file_len: u64,
    /// The opened file's identity (`None` for an archive held in memory).
    identity: Option<FileIdentity>,
    group_name: String,
    gfx_arch_family: String,
    gfx_arches: Vec<String>,
    scheme: CompressionScheme,
    toc: BTreeMap<String, BTreeMap<String, TocEntry>>,
    blobs: Vec<BlobLoc>,
}

fn fmt_err(detail: impl Into<String>) -> KpackError {
    KpackError::new(KpackErrorCode::InvalidFormat, detail)
}

fn io_err(what: &str, e: &std::io::Error) -> KpackError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        fmt_err(format!("{what}: file is truncated"))
    } else {
        KpackError::new(KpackErrorCode::IoError, format!("{what}: {e}"))
    }
}

/// Refuses a map (at any depth) that holds one key twice: a MessagePack map may encode
/// duplicates, and "the first one wins" would silently drop data.
fn check_unique_keys(v: &Value, what: &str) -> Result<(), KpackError> {
    match v {
        Value::Map(m) => {
            for (i, (k, val)) in m.iter().enumerate() {
                if m[..i].iter().any(|(p, _)| p == k) {
                    return Err(fmt_err(format!("{what} has the key {k} twice")));
                }
                let inner = match k.as_str() {
                    Some(name) => format!("{what}['{name}']"),
                    None => format!("{what}[{k}]"),
                };
                check_unique_keys(val, &inner)?;
            }
            Ok(())
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check_unique_keys(x, &format!("{what}[{i}]"))),
        _ => Ok(()),
    }
}

/// An optional text field: absent → `""`; present but not a string → refused.
fn opt_str(map: &[(Value, Value)], key: &str, what: &str) -> Result<String, KpackError> {
    match map_get(map, key) {
        None => Ok(String::new()),
        Some(v) => v
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| fmt_err(format!("{what}: '{key}' is {v}, not a string"))),
    }
}

/// An optional unsigned field: absent → `None`; present but not an unsigned integer → refused.
fn opt_u64(map: &[(Value, Value)], key: &str, what: &str) -> Result<Option<u64>, KpackError> {
    match map_get(map, key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| fmt_err(format!("{what}: '{key}' is {v}, not an unsigned integer"))),
    }
}

fn map_get<'a>(map: &'a [(Value, Value)], key: &str) -> Option<&'a Value> {
    map.iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

fn as_map<'a>(v: &'a Value, what: &str) -> Result<&'a [(Value, Value)], KpackError> {
    v.as_map()
        .map(|m| m.as_slice())
        .ok_or_else(|| fmt_err(format!("{what} is not a map")))
}

fn req_u64(map: &[(Value, Value)], key: &str, what: &str) -> Result<u64, KpackError> {
    map_get(map, key).and_then(Value::as_u64).ok_or_else(|| {
        fmt_err(format!(
            "{what}: '{key}' is missing or not an unsigned integer"
        ))
    })
}

fn read_at(file: &mut Source, offset: u64, len: usize, what: &str) -> Result<Vec<u8>, KpackError> {
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| io_err(what, &e))?;
    let mut buf = vec![0u8; len];
    file.read_exact(&mut buf).map_err(|e| io_err(what, &e))?;
    Ok(buf)
}

impl KpackArchive {
    /// Opens and parses an archive: reads the 16 header bytes, requires magic `KPAK` and
    /// version 1, reads the TOC from `toc_offset` to end of file, and builds the blob table
    /// (for `zstd-per-kernel`, walks the frame-size prefixes once).
    ///
    /// # Errors
    /// - `FILE_NOT_FOUND`: the path does not exist; `INVALID_ARGUMENT`: empty path;
    ///   `IO_ERROR`: any other OS failure.
    /// - `INVALID_FORMAT`: file shorter than the header, wrong magic, `toc_offset` outside the
    ///   file, a TOC that is not a map of the v1 shape, blob table or frame table out of range;
    ///   bytes after the TOC's one MessagePack value ("N trailing bytes after the TOC …"); a
    ///   map holding a key twice at any depth ("TOC has the key \"toc\" twice"); a present
    ///   `group_name`, `gfx_arch_family` or entry `type` that is not a string, or entry
    ///   `original_size` that is not an unsigned integer.
    /// - `UNSUPPORTED_VERSION`: header `version` ≠ 1, or TOC `format_version` present and ≠ 1.
    /// - `MSGPACK_PARSE_FAILED`: the TOC bytes are not one complete MessagePack value.
    /// - `NOT_IMPLEMENTED`: unknown `compression_scheme` (a missing one reads as `"none"`).
    ///
    /// A missing or malformed `gfx_arches` is not an error here: [`KpackArchive::gfx_arches`]
    /// is then empty and the verified read reports it at `ARCH_LOOKUP` (kpack.md §5 step 2).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, KpackError> {
        let path = path.as_ref();
        if path.as_os_str().is_empty() {
            return Err(KpackError::new(
                KpackErrorCode::InvalidArgument,
                "empty archive path",
            ));
        }
        let file = File::open(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                KpackError::new(KpackErrorCode::FileNotFound, format!("{e}"))
            } else {
                KpackError::new(KpackErrorCode::IoError, format!("cannot open: {e}"))
            }
        })?;
        let meta = file
            .metadata()
            .map_err(|e| KpackError::new(KpackErrorCode::IoError, format!("cannot stat: {e}")))?;
        let mut archive = Self::parse(path.to_path_buf(), Source::File(file), meta.len())?;
        archive.identity = Some(FileIdentity::of(&meta));
        Ok(archive)
    }

    /// Parses an archive held in memory (kernels compiled into the binary with
    /// `include_bytes!`), with the same checks and errors as [`KpackArchive::open`]. `path` is
    /// only a label: it names the archive in messages and in [`KpackArchive::path`] and is never
    /// opened.
    ///
    /// # Errors
    /// As [`KpackArchive::open`], without the file-system ones.
    pub fn from_static_bytes(
        path: impl Into<PathBuf>,
        bytes: &'static [u8],
    ) -> Result<Self, KpackError> {
        let file_len = bytes.len() as u64;
        Self::parse(
            path.into(),
            Source::Memory(std::io::Cursor::new(bytes)),
            file_len,
        )
    }

    fn parse(path: PathBuf, mut file: Source, file_len: u64) -> Result<Self, KpackError> {
        if file_len < KPACK_HEADER_FIELDS_LEN as u64 {
            return Err(fmt_err(format!(
                "file is {file_len} bytes, shorter than the 16-byte header"
            )));
        }
        let header = read_at(&mut file, 0, KPACK_HEADER_FIELDS_LEN, "reading the header")?;
        if header[0..4] != KPACK_MAGIC {
            return Err(fmt_err(format!(
                "bad magic {:02x?}, expected \"KPAK\"",
                &header[0..4]
            )));
        }
        let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if version != KPACK_VERSION {
            return Err(KpackError::new(
                KpackErrorCode::UnsupportedVersion,
                format!("header version {version}, this reader knows version 1"),
            ));
        }
        let mut off = [0u8; 8];
        off.copy_from_slice(&header[8..16]);
        let toc_offset = u64::from_le_bytes(off);
        if toc_offset < KPACK_HEADER_FIELDS_LEN as u64 || toc_offset >= file_len {
            return Err(fmt_err(format!(
                "toc_offset {toc_offset} is outside the TOC range [16, {file_len}) of the file"
            )));
        }
        let toc_len = usize::try_from(file_len - toc_offset)
            .map_err(|_| fmt_err("TOC does not fit in memory"))?;
        let toc_bytes = read_at(&mut file, toc_offset, toc_len, "reading the TOC")?;
        let mut rest = toc_bytes.as_slice();
        let toc_value = rmpv::decode::read_value(&mut rest).map_err(|e| {
            KpackError::new(
                KpackErrorCode::MsgpackParseFailed,
                format!("TOC at offset {toc_offset} is not valid MessagePack: {e}"),
            )
        })?;
        if !rest.is_empty() {
            return Err(fmt_err(format!(
                "{} trailing bytes after the TOC of {} bytes at offset {toc_offset}",
                rest.len(),
                toc_len - rest.len()
            )));
        }
        check_unique_keys(&toc_value, "TOC")?;
        Self::from_toc(path, file, file_len, &toc_value)
    }

    fn from_toc(
        path: PathBuf,
        mut file: Source,
        file_len: u64,
        toc: &Value,
    ) -> Result<Self, KpackError> {
        let root = as_map(toc, "TOC")?;
        if let Some(v) = map_get(root, "format_version") {
            if v.as_u64() != Some(1) {
                return Err(KpackError::new(
                    KpackErrorCode::UnsupportedVersion,
                    format!("TOC format_version {v}, this reader knows 1"),
                ));
            }
        }
        let group_name = opt_str(root, "group_name", "TOC")?;
        let gfx_arch_family = opt_str(root, "gfx_arch_family", "TOC")?;
        // Malformed or absent gfx_arches reads as empty (reported at ARCH_LOOKUP).
        let gfx_arches = map_get(root, "gfx_arches")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .unwrap_or_default();
        let scheme = match map_get(root, "compression_scheme") {
            None => CompressionScheme::None,
            Some(v) => match v.as_str() {
                Some("none") => CompressionScheme::None,
                Some("zstd-per-kernel") => CompressionScheme::ZstdPerKernel,
                _ => {
                    return Err(KpackError::new(
                        KpackErrorCode::NotImplemented,
                        format!("unknown compression_scheme {v}"),
                    ));
                }
            },
        };
        let mut entries = BTreeMap::new();
        let toc_map = as_map(
            map_get(root, "toc").ok_or_else(|| fmt_err("TOC has no 'toc' map"))?,
            "'toc'",
        )?;
        for (bk, bv) in toc_map {
            let binary_name = bk
                .as_str()
                .ok_or_else(|| fmt_err("a toc key is not a string"))?;
            let mut per_arch = BTreeMap::new();
            for (ak, av) in as_map(bv, &format!("toc['{binary_name}']"))? {
                let arch = ak
                    .as_str()
                    .ok_or_else(|| fmt_err("an arch key is not a string"))?;
                let what = format!("toc['{binary_name}']['{arch}']");
                let e = as_map(av, &what)?;
                let entry = TocEntry {
                    kind: opt_str(e, "type", &what)?,
                    ordinal: req_u64(e, "ordinal", &what)?,
                    original_size: opt_u64(e, "original_size", &what)?,
                    metadata: map_get(e, "metadata").cloned(),
                };
                per_arch.insert(arch.to_owned(), entry);
            }
            entries.insert(binary_name.to_owned(), per_arch);
        }
        let blobs = match scheme {
            CompressionScheme::None => {
                let arr = map_get(root, "blobs")
                    .and_then(Value::as_array)
                    .ok_or_else(|| {
                        fmt_err("scheme 'none' but 'blobs' is missing or not an array")
                    })?;
                arr.iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let what = format!("blobs[{i}]");
                        let m = as_map(b, &what)?;
                        Ok(BlobLoc {
                            offset: req_u64(m, "offset", &what)?,
                            size: req_u64(m, "size", &what)?,
                        })
                    })
                    .collect::<Result<Vec<_>, KpackError>>()?
            }
            CompressionScheme::ZstdPerKernel => {
                let zoff = req_u64(root, "zstd_offset", "TOC")?;
                let zsize = req_u64(root, "zstd_size", "TOC")?;
                walk_frame_table(&mut file, file_len, zoff, zsize)?
            }
        };
        Ok(Self {
            path,
            file: Mutex::new(file),
            file_len,
            identity: None,
            group_name,
            gfx_arch_family,
            gfx_arches,
            scheme,
            toc: entries,
            blobs,
        })
    }

    /// The path this archive was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// False when another file now lives at [`KpackArchive::path`]: the one this archive was
    /// opened from was replaced (another inode, e.g. a rename over it), resized, or modified
    /// (modification or status-change time differs). True when the path is gone (this archive
    /// still reads the file it opened) and for an archive held in memory. A rewrite in place
    /// with the same length within one file-system timestamp tick is not seen here; the
    /// SHA-256 check of every code object read still refuses its bytes.
    pub fn is_current(&self) -> bool {
        match (&self.identity, std::fs::metadata(&self.path)) {
            (Some(id), Ok(m)) => FileIdentity::of(&m) == *id,
            _ => true,
        }
    }
    /// The file size in bytes at open time.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }
    /// TOC `group_name` (empty if absent).
    pub fn group_name(&self) -> &str {
        &self.group_name
    }
    /// TOC `gfx_arch_family` (empty if absent).
    pub fn gfx_arch_family(&self) -> &str {
        &self.gfx_arch_family
    }
    /// TOC `gfx_arches` in archive order; empty when absent or malformed.
    pub fn gfx_arches(&self) -> &[String] {
        &self.gfx_arches
    }
    /// The compression scheme.
    pub fn compression_scheme(&self) -> CompressionScheme {
        self.scheme
    }
    /// Number of blobs (ordinals) the blob table holds.
    pub fn blob_count(&self) -> usize {
        self.blobs.len()
    }
    /// The exact entry `toc[binary_name][arch]`, without the `#N` fallback.
    pub fn entry(&self, binary_name: &str, arch: &str) -> Option<&TocEntry> {
        self.toc.get(binary_name)?.get(arch)
    }
    /// Every `(binary_name, arch, entry)`, sorted by binary_name then arch.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str, &TocEntry)> {
        self.toc
            .iter()
            .flat_map(|(b, m)| m.iter().map(move |(a, e)| (b.as_str(), a.as_str(), e)))
    }

    /// The C runtime's `kpack_get_kernel` (kpack.md §4): the exact `toc[binary_name][arch]`
    /// first; otherwise `binary_name#0`, `#1`, … `#99`, stopping at the first index not in the
    /// TOC and collecting those with `arch`. One hit → its bytes; several → `u64 count` then
    /// `(u64 size, bytes)` per hit (all LE), which is not a code object.
    ///
    /// Before allocating, the declared size must pass [`super::size_is_credible`] against the
    /// file size (a lying TOC cannot make the reader allocate gigabytes).
    ///
    /// # Errors
    /// `KERNEL_NOT_FOUND` when nothing matches; for a listed entry: `INVALID_FORMAT` (ordinal or
    /// blob out of range), `INVALID_METADATA` (size not credible), `DECOMPRESSION_FAILED` (corrupt
    /// frame, missing `original_size` under zstd, or decompressed/blob size ≠ `original_size`),
    /// `IO_ERROR`.
    pub fn get_kernel(&self, binary_name: &str, arch: &str) -> Result<Vec<u8>, KpackError> {
        if let Some(e) = self.entry(binary_name, arch) {
            return self.read_entry(binary_name, arch, e);
        }
        let mut hits = Vec::new();
        for i in 0..=KPACK_MAX_SPLIT_INDEX {
            let name = format!("{binary_name}#{i}");
            let Some(per_arch) = self.toc.get(&name) else {
                break;
            };
            if let Some(e) = per_arch.get(arch) {
                hits.push((name.clone(), e));
            }
        }
        match hits.len() {
            0 => Err(KpackError::new(
                KpackErrorCode::KernelNotFound,
                format!("no entry for '{binary_name}' at arch '{arch}'"),
            )),
            1 => self.read_entry(&hits[0].0, arch, hits[0].1),
            n => {
                let mut out = (n as u64).to_le_bytes().to_vec();
                for (name, e) in hits {
                    let bytes = self.read_entry(&name, arch, e)?;
                    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
                    out.extend_from_slice(&bytes);
                }
                Ok(out)
            }
        }
    }

    fn read_entry(
        &self,
        binary_name: &str,
        arch: &str,
        e: &TocEntry,
    ) -> Result<Vec<u8>, KpackError> {
        let what = format!("toc['{binary_name}']['{arch}']");
        let loc = usize::try_from(e.ordinal)
            .ok()
            .and_then(|i| self.blobs.get(i))
            .ok_or_else(|| {
                fmt_err(format!(
                    "{what}: ordinal {} is outside the {} blobs",
                    e.ordinal,
                    self.blobs.len()
                ))
            })?;
        if loc
            .offset
            .checked_add(loc.size)
            .is_none_or(|end| end > self.file_len)
        {
            return Err(fmt_err(format!(
                "{what}: blob [{}, +{}) lies outside the {}-byte file",
                loc.offset, loc.size, self.file_len
            )));
        }
        let declared = match self.scheme {
            CompressionScheme::None => loc.size,
            CompressionScheme::ZstdPerKernel => e.original_size.ok_or_else(|| {
                KpackError::new(
                    KpackErrorCode::DecompressionFailed,
                    format!("{what}: no original_size"),
                )
            })?,
        };
        if !super::size_is_credible(declared, self.file_len) {
            return Err(KpackError::new(
                KpackErrorCode::InvalidMetadata,
                format!(
                    "{what}: size {declared} is not credible for a {}-byte archive",
                    self.file_len
                ),
            ));
        }
        let raw = {
            let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
            read_at(&mut f, loc.offset, loc.size as usize, &what)?
        };
        let bytes = match self.scheme {
            CompressionScheme::None => raw,
            CompressionScheme::ZstdPerKernel => zstd::bulk::Decompressor::new()
                .and_then(|mut d| d.decompress(&raw, declared as usize))
                .map_err(|err| {
                    KpackError::new(
                        KpackErrorCode::DecompressionFailed,
                        format!("{what}: zstd frame: {err}"),
                    )
                })?,
        };
        if let Some(orig) = e.original_size {
            if bytes.len() as u64 != orig {
                return Err(KpackError::new(
                    KpackErrorCode::DecompressionFailed,
                    format!("{what}: {} bytes, but original_size is {orig}", bytes.len()),
                ));
            }
        }
        Ok(bytes)
    }
}

/// Walks `u32 count` then `count × (u32 frame_size, frame)` at `[zoff, zoff+zsize)`.
fn walk_frame_table(
    file: &mut Source,
    file_len: u64,
    zoff: u64,
    zsize: u64,
) -> Result<Vec<BlobLoc>, KpackError> {
    let end = zoff
        .checked_add(zsize)
        .filter(|&e| e <= file_len && zsize >= 4)
        .ok_or_else(|| {
            fmt_err(format!(
                "zstd section [{zoff}, +{zsize}) lies outside the {file_len}-byte file"
            ))
        })?;
    let c = read_at(file, zoff, 4, "zstd frame table")?;
    let count = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    let mut pos = zoff + 4;
    let mut out = Vec::new();
    for i in 0..count {
        if pos + 4 > end {
            return Err(fmt_err(format!(
                "zstd frame table: size prefix of frame {i} runs past the section"
            )));
        }
        let s = read_at(file, pos, 4, "zstd frame table")?;
        let size = u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
        pos += 4;
        if pos + size > end {
            return Err(fmt_err(format!(
                "zstd frame table: frame {i} ({size} bytes) runs past the section"
            )));
        }
        out.push(BlobLoc { offset: pos, size });
        pos += size;
    }
    Ok(out)
}
