//! kpack archives (rocm-kpack format v1): reader, deterministic writer, architecture selection,
//! the process-wide set of shared open archives, and the verified read that plan build and plan
//! save share (format: `docs/kpack.md` of rocm-kpack v1).
//!
//! Contract: this crate reads and writes archive bytes and verifies code objects (size
//! credibility, magic, SHA-256) before handing any bytes out. It never loads a module, never
//! touches GPU state and contains no `unsafe`; loading (stage `MODULE_LOAD`) belongs to the HIP
//! layer.
//!
//! Entry points:
//! - Plan build and plan save: [`read_verified_code_object`] with the **decorated** device arch;
//!   on failure, [`KpackReadError::stage`] says which of [`KpackLoadStage`] failed and
//!   [`KpackReadError::message`] carries the reference text. A provider container holds an
//!   [`ArchiveLease`] for its lifetime so build and save share one open archive.
//! - Packing: [`KpackWriter`] (deterministic bytes; pinned zstd 0.13.3, level 3).
//! - Inspection: [`KpackArchive::open`], [`KpackArchive::get_kernel`] (C-runtime lookup with the
//!   single-hit `#N` fallback), [`select_arch`].
//!
//! ```no_run
//! use hipdnn_kpack::{read_verified_code_object, ArchiveLease};
//! let _lease = ArchiveLease::acquire();
//! let co = read_verified_code_object(
//!     "kernels/pack-gfx942.kpack".as_ref(),
//!     "3f2a…toc-key",
//!     "gfx942:sramecc+:xnack-",
//!     "<64 lowercase hex>",
//! )?;
//! assert_eq!(co.device_base_arch, "gfx942");
//! # Ok::<(), hipdnn_kpack::KpackReadError>(())
//! ```

#![forbid(unsafe_code)]

mod arch;
mod error;
mod format;
mod shared;
mod verified;
mod writer;

pub use arch::{
    ArchSelection, ArchTier, GENERIC_TARGETS, GenericTarget, arch_matches, find_generic_target,
    generic_target_contains, select_arch, strip_arch_features,
};
pub use error::{KpackError, KpackErrorCode, KpackLoadStage, KpackReadError, KpackWriteError};
pub use format::{
    CompressionScheme, KPACK_BLOB_ALIGNMENT, KPACK_HEADER_FIELDS_LEN, KPACK_MAGIC,
    KPACK_MAX_SPLIT_INDEX, KPACK_VERSION, KPACK_ZSTD_LEVEL, KpackArchive, TocEntry,
};
#[cfg(feature = "testing")]
pub use shared::test_hooks;
pub use shared::{ArchiveLease, open_shared_archive, register_static_archive};
pub use verified::{
    ELF_MAGIC, KPACK_MAX_CODE_OBJECT_BYTES, KPACK_MAX_EXPANSION_RATIO, OFFLOAD_BUNDLE_MAGIC,
    VerifiedCodeObject, code_object_magic_problem, read_verified_code_object, sha256_hex,
    size_is_credible,
};
pub use writer::KpackWriter;
