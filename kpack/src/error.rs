//! Error vocabulary of kpack archives: the C runtime's `kpack_error_t` names, the reader's
//! low-level [`KpackError`], the verified read's [`KpackLoadStage`] and [`KpackReadError`], and
//! the writer's [`KpackWriteError`]. This module formats messages; it never decides policy.

use std::fmt;

/// Result codes of the rocm-kpack C runtime (`kpack_error_t`, ROCm/rocm-kpack
/// `runtime/src/kpack.cpp` @660522f6), named the way the provider prints them
/// (rocm-libraries `KpackArchive.cpp` @10ee10a4).
///
/// Upstream's numeric values are unconfirmed, so this enum carries no stable numbers and messages
/// always use [`KpackErrorCode::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KpackErrorCode {
    /// `KPACK_SUCCESS`.
    Success,
    /// `KPACK_ERROR_INVALID_ARGUMENT`: an argument (for example an empty path) is unusable.
    InvalidArgument,
    /// `KPACK_ERROR_FILE_NOT_FOUND`: the archive file does not exist.
    FileNotFound,
    /// `KPACK_ERROR_INVALID_FORMAT`: bad magic, truncated header, TOC offset or blob table out of
    /// range, or a TOC whose structure is not the v1 layout.
    InvalidFormat,
    /// `KPACK_ERROR_UNSUPPORTED_VERSION`: header `version` (or TOC `format_version`) is not 1.
    UnsupportedVersion,
    /// `KPACK_ERROR_KERNEL_NOT_FOUND`: no `toc[binary_name][arch]` entry (after the `#N` fallback).
    KernelNotFound,
    /// `KPACK_ERROR_DECOMPRESSION_FAILED`: a zstd frame is corrupt, or the decompressed size
    /// differs from the entry's `original_size`.
    DecompressionFailed,
    /// `KPACK_ERROR_OUT_OF_MEMORY`.
    OutOfMemory,
    /// `KPACK_ERROR_NOT_IMPLEMENTED`: for example an unknown `compression_scheme`.
    NotImplemented,
    /// `KPACK_ERROR_IO_ERROR`: the operating system refused a read.
    IoError,
    /// `KPACK_ERROR_MSGPACK_PARSE_FAILED`: the TOC is not one complete MessagePack value.
    MsgpackParseFailed,
    /// `KPACK_ERROR_PATH_DISCOVERY_FAILED`.
    PathDiscoveryFailed,
    /// `KPACK_ERROR_INVALID_METADATA`: an entry's size is not credible or its bytes are not a code
    /// object for its architecture (provider checks, kpack.md §5 steps 5–6).
    InvalidMetadata,
    /// `KPACK_ERROR_ARCHIVE_NOT_FOUND`.
    ArchiveNotFound,
    /// `KPACK_ERROR_ARCH_NOT_FOUND`.
    ArchNotFound,
}

impl KpackErrorCode {
    /// The name the provider prints, e.g. `KPACK_ERROR_FILE_NOT_FOUND` (kpack.md §4).
    pub fn name(self) -> &'static str {
        match self {
            Self::Success => "KPACK_SUCCESS",
            Self::InvalidArgument => "KPACK_ERROR_INVALID_ARGUMENT",
            Self::FileNotFound => "KPACK_ERROR_FILE_NOT_FOUND",
            Self::InvalidFormat => "KPACK_ERROR_INVALID_FORMAT",
            Self::UnsupportedVersion => "KPACK_ERROR_UNSUPPORTED_VERSION",
            Self::KernelNotFound => "KPACK_ERROR_KERNEL_NOT_FOUND",
            Self::DecompressionFailed => "KPACK_ERROR_DECOMPRESSION_FAILED",
            Self::OutOfMemory => "KPACK_ERROR_OUT_OF_MEMORY",
            Self::NotImplemented => "KPACK_ERROR_NOT_IMPLEMENTED",
            Self::IoError => "KPACK_ERROR_IO_ERROR",
            Self::MsgpackParseFailed => "KPACK_ERROR_MSGPACK_PARSE_FAILED",
            Self::PathDiscoveryFailed => "KPACK_ERROR_PATH_DISCOVERY_FAILED",
            Self::InvalidMetadata => "KPACK_ERROR_INVALID_METADATA",
            Self::ArchiveNotFound => "KPACK_ERROR_ARCHIVE_NOT_FOUND",
            Self::ArchNotFound => "KPACK_ERROR_ARCH_NOT_FOUND",
        }
    }
}

impl fmt::Display for KpackErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failure of the low-level archive reader ([`crate::KpackArchive`]): the C runtime's
/// code plus a human-readable detail (what was wrong, with offsets where useful).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {detail}")]
pub struct KpackError {
    /// The runtime code; the verified read maps it onto a [`KpackLoadStage`].
    pub code: KpackErrorCode,
    /// What exactly was wrong.
    pub detail: String,
}

impl KpackError {
    pub(crate) fn new(code: KpackErrorCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: detail.into(),
        }
    }
}

/// The stage at which reading (or loading) a kpack code object failed (`KpackLoadStage`,
/// rocm-libraries `KpackModuleCache.hpp` final form, PR13315), in the order the stages run.
///
/// The verified read ([`crate::read_verified_code_object`]) reports the first five;
/// `ModuleLoad` is reserved for the load path (make the device current, load the module), which
/// lives in the HIP layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KpackLoadStage {
    /// The archive could not be opened or parsed (absent, bad header, bad TOC).
    OpenArchive,
    /// The archive declares no architectures, or none serves the device (kpack.md §6).
    ArchLookup,
    /// The selected architecture has no entry for the toc key.
    EntryLookup,
    /// The entry is listed but its bytes could not be produced or are not a credible code object.
    Decompress,
    /// The bytes do not hash to the descriptor's SHA-256.
    DigestMismatch,
    /// The driver refused the code object (load path only).
    ModuleLoad,
}

impl KpackLoadStage {
    /// Upstream's spelling, e.g. `OPEN_ARCHIVE`, as used in save messages
    /// (ingestor-payload.md §7 row 9).
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenArchive => "OPEN_ARCHIVE",
            Self::ArchLookup => "ARCH_LOOKUP",
            Self::EntryLookup => "ENTRY_LOOKUP",
            Self::Decompress => "DECOMPRESS",
            Self::DigestMismatch => "DIGEST_MISMATCH",
            Self::ModuleLoad => "MODULE_LOAD",
        }
    }
}

impl fmt::Display for KpackLoadStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed verified read: the stage, the runtime code where there is one, and the reference
/// message (kpack.md §5), whose prefix is stable and searchable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct KpackReadError {
    /// Where the read stopped.
    pub stage: KpackLoadStage,
    /// The runtime code named in the message, if the message names one.
    pub code: Option<KpackErrorCode>,
    /// The full message, e.g. `kpack archive '/x.kpack' does not exist (KPACK_ERROR_FILE_NOT_FOUND)`.
    pub message: String,
}

/// A refusal of the archive writer ([`crate::KpackWriter`]).
#[derive(Debug, thiserror::Error)]
pub enum KpackWriteError {
    /// The same `(binary_name, arch)` pair was added twice (kpack.md §9 forbids duplicates).
    #[error("kpack writer: duplicate entry for toc_key '{binary_name}' at arch '{arch}'")]
    DuplicateEntry {
        /// The toc key.
        binary_name: String,
        /// The architecture key.
        arch: String,
    },
    /// A kernel was added for an architecture the archive does not declare in `gfx_arches`;
    /// no reader could ever select it.
    #[error("kpack writer: arch '{arch}' of toc_key '{binary_name}' is not declared in gfx_arches")]
    UndeclaredArch {
        /// The toc key.
        binary_name: String,
        /// The architecture key.
        arch: String,
    },
    /// A value does not fit the format: a blob over `u32::MAX` bytes, or an empty name.
    #[error("kpack writer: {0}")]
    Invalid(String),
    /// zstd compression failed.
    #[error("kpack writer: zstd compression failed: {0}")]
    Compression(std::io::Error),
    /// Writing the output file failed; the file may be partially written.
    #[error("kpack writer: cannot write '{path}': {source}")]
    Io {
        /// The output path.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}
