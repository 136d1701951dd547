//! kpack archives (rocm-kpack format v1): reader, deterministic writer, architecture selection,
//! the process-wide set of shared open archives, and the verified read that plan build and plan
//! save share (reference: `shared/reference/kpack.md`, decision D6).
//!
//! Contract: this module reads and writes archive bytes and verifies code objects (size
//! credibility, magic, SHA-256) before handing any bytes out. It never loads a module, never
//! touches GPU state and contains no `unsafe`; loading (stage `MODULE_LOAD`) belongs to the HIP
//! layer.

#![forbid(unsafe_code)]

mod arch;
mod error;
mod format;
mod shared;
mod verified;

pub use arch::{
    ArchSelection, ArchTier, GENERIC_TARGETS, GenericTarget, arch_matches, find_generic_target,
    generic_target_contains, select_arch, strip_arch_features,
};
pub use error::{KpackError, KpackErrorCode, KpackLoadStage, KpackReadError, KpackWriteError};
pub use format::{
    CompressionScheme, KPACK_BLOB_ALIGNMENT, KPACK_HEADER_FIELDS_LEN, KPACK_MAGIC,
    KPACK_MAX_SPLIT_INDEX, KPACK_VERSION, KPACK_ZSTD_LEVEL, KpackArchive, KpackWriter, TocEntry,
};
pub use shared::{ArchiveLease, open_shared_archive, test_hooks};
pub use verified::{
    ELF_MAGIC, KPACK_MAX_CODE_OBJECT_BYTES, KPACK_MAX_EXPANSION_RATIO, OFFLOAD_BUNDLE_MAGIC,
    VerifiedCodeObject, code_object_magic_problem, read_verified_code_object, sha256_hex,
    size_is_credible,
};
