//! The verified read of one kpack code object (kpack.md §5, `readVerifiedKpackCodeObject`,
//! rocm-libraries `KpackArchive.cpp` @10ee10a4 and PR13315): open through the shared set,
//! select the arch, read the entry, check credibility, magic and SHA-256. Plan build and plan save
//! both call it, so both pick the same entry. It loads no module and touches no GPU state.

use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::arch::{ArchTier, select_arch, strip_arch_features};
use super::error::{KpackErrorCode, KpackLoadStage, KpackReadError};
use super::format::KpackArchive;
use super::shared::{evict, open_shared_archive};

/// Largest credible code object: 2 GiB.
pub const KPACK_MAX_CODE_OBJECT_BYTES: u64 = 2 << 30;
/// Largest credible ratio of code-object size to archive size.
pub const KPACK_MAX_EXPANSION_RATIO: u64 = 4096;

/// Code-object magic: ELF.
pub const ELF_MAGIC: &[u8] = b"\x7fELF";
/// Code-object magic: clang offload bundle.
pub const OFFLOAD_BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";

/// Size credibility (kpack.md §5 step 5): `size ≤ 2 GiB` and, when `archive_bytes` is known
/// (non-zero), `size / 4096 ≤ archive_bytes` (integer division). Pure; sizes in bytes.
pub fn size_is_credible(size: u64, archive_bytes: u64) -> bool {
    size <= KPACK_MAX_CODE_OBJECT_BYTES
        && (archive_bytes == 0 || size / KPACK_MAX_EXPANSION_RATIO <= archive_bytes)
}

/// Magic check (kpack.md §5 step 6, §10). For an `sm_*` arch key: PTX text starting `//` or
/// `.version`, or a cubin starting `\x7fELF`. For any other key (AMD): `\x7fELF` or
/// `__CLANG_OFFLOAD_BUNDLE__`, never PTX. Returns why the bytes are refused, or `None`.
pub fn code_object_magic_problem(arch: &str, bytes: &[u8]) -> Option<&'static str> {
    if arch.starts_with("sm_") {
        let ok = bytes.starts_with(b"//")
            || bytes.starts_with(b".version")
            || bytes.starts_with(ELF_MAGIC);
        (!ok).then_some(
            "the entry is neither PTX text (starting '//' or '.version') nor a cubin (ELF)",
        )
    } else {
        let ok = bytes.starts_with(ELF_MAGIC) || bytes.starts_with(OFFLOAD_BUNDLE_MAGIC);
        (!ok).then_some("the entry is neither an ELF code object nor a clang offload bundle")
    }
}

/// Lowercase hex SHA-256 of `bytes` (`sha256Hex`).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A code object whose bytes passed every check of the verified read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCodeObject {
    /// The decompressed code object (ELF, offload bundle, PTX text without NUL, or cubin); its
    /// SHA-256 equals the expected digest.
    pub bytes: Vec<u8>,
    /// The archive key that served the device (an element of the archive's `gfx_arches`).
    pub selected_arch: String,
    /// How the key was chosen.
    pub selected_tier: ArchTier,
    /// `stripArchFeatures(device_arch)`: the target a saved plan records
    /// (ingestor-payload.md §9), not the selected key.
    pub device_base_arch: String,
    /// The archive file size in bytes at open time.
    pub archive_bytes: u64,
}

fn fail(stage: KpackLoadStage, code: Option<KpackErrorCode>, message: String) -> KpackReadError {
    KpackReadError {
        stage,
        code,
        message,
    }
}

/// `readVerifiedKpackCodeObject(archivePath, tocKey, deviceArch, expectedSha256)`.
///
/// `device_arch` is the **decorated** device arch (e.g. `gfx942:sramecc+:xnack-`, `sm_90`);
/// `toc_key` is kpack's binary_name; `expected_sha256` is the descriptor's 64 lowercase hex,
/// compared exactly. Opens through [`open_shared_archive`] (so while a lease is alive a kept
/// handle is reused, even if the file was deleted since).
///
/// # Errors (stage, message prefix)
/// - `OpenArchive`: `kpack archive '<p>' does not exist (<code>)` for FILE_NOT_FOUND /
///   ARCHIVE_NOT_FOUND, else `kpack archive '<p>' could not be read (<code>)`, followed by
///   `: <detail>`.
/// - `ArchLookup`: `kpack archive '<p>' declares no architectures; its gfx_arches entry is absent
///   or malformed`, or `kpack archive '<p>' holds no binary for device arch '<d>'; the archive
///   provides: a, b` (`(none)` if empty).
/// - `EntryLookup`: `kpack archive '<p>' has no entry for toc_key '<k>' at arch '<a>' (<code>);
///   this usually means the packer and the descriptor disagree`. The kept handle stays.
/// - `Decompress`: `cannot decompress toc_key '<k>' at arch '<a>' from kpack archive '<p>'
///   (<code>)` then `: <detail>` — a listed entry whose bytes cannot be produced, are empty,
///   fail [`size_is_credible`] or [`code_object_magic_problem`] (code `INVALID_METADATA`).
///   Evicts the kept handle.
/// - `DigestMismatch`: `the code object for toc_key '<k>' at arch '<a>' in kpack archive '<p>'
///   hashes to <x>, but the descriptor declares <y>; the archive and the descriptor disagree
///   about what this entry contains`. Evicts the kept handle. No bytes are returned.
pub fn read_verified_code_object(
    archive_path: &Path,
    toc_key: &str,
    device_arch: &str,
    expected_sha256: &str,
) -> Result<VerifiedCodeObject, KpackReadError> {
    let p = archive_path.display();
    let archive: Arc<KpackArchive> = open_shared_archive(archive_path).map_err(|e| {
        let absent = matches!(
            e.code,
            KpackErrorCode::FileNotFound | KpackErrorCode::ArchiveNotFound
        );
        let message = if absent {
            format!("kpack archive '{p}' does not exist ({})", e.code)
        } else {
            format!(
                "kpack archive '{p}' could not be read ({}): {}",
                e.code, e.detail
            )
        };
        fail(KpackLoadStage::OpenArchive, Some(e.code), message)
    })?;
    let arches = archive.gfx_arches();
    if arches.is_empty() {
        return Err(fail(
            KpackLoadStage::ArchLookup,
            None,
            format!(
                "kpack archive '{p}' declares no architectures; its gfx_arches entry is absent or malformed"
            ),
        ));
    }
    let Some(sel) = select_arch(device_arch, arches) else {
        return Err(fail(
            KpackLoadStage::ArchLookup,
            None,
            format!(
                "kpack archive '{p}' holds no binary for device arch '{device_arch}'; the archive provides: {}",
                arches.join(", ")
            ),
        ));
    };
    let arch = arches[sel.index].clone();
    let decompress_fail = |code: KpackErrorCode, detail: &str| {
        evict(archive_path, &archive);
        fail(
            KpackLoadStage::Decompress,
            Some(code),
            format!(
                "cannot decompress toc_key '{toc_key}' at arch '{arch}' from kpack archive '{p}' ({code}): {detail}"
            ),
        )
    };
    let bytes = match archive.get_kernel(toc_key, &arch) {
        Ok(b) => b,
        Err(e)
            if matches!(
                e.code,
                KpackErrorCode::KernelNotFound | KpackErrorCode::ArchNotFound
            ) =>
        {
            return Err(fail(
                KpackLoadStage::EntryLookup,
                Some(e.code),
                format!(
                    "kpack archive '{p}' has no entry for toc_key '{toc_key}' at arch '{arch}' ({}); \
                     this usually means the packer and the descriptor disagree",
                    e.code
                ),
            ));
        }
        Err(e) => return Err(decompress_fail(e.code, &e.detail)),
    };
    if bytes.is_empty() {
        return Err(decompress_fail(
            KpackErrorCode::DecompressionFailed,
            "the entry is empty",
        ));
    }
    if !size_is_credible(bytes.len() as u64, archive.file_len()) {
        return Err(decompress_fail(
            KpackErrorCode::InvalidMetadata,
            &format!(
                "size {} is not credible for a {}-byte archive",
                bytes.len(),
                archive.file_len()
            ),
        ));
    }
    if let Some(problem) = code_object_magic_problem(&arch, &bytes) {
        return Err(decompress_fail(KpackErrorCode::InvalidMetadata, problem));
    }
    let actual = sha256_hex(&bytes);
    if actual != expected_sha256 {
        evict(archive_path, &archive);
        return Err(fail(
            KpackLoadStage::DigestMismatch,
            None,
            format!(
                "the code object for toc_key '{toc_key}' at arch '{arch}' in kpack archive '{p}' hashes to {actual}, \
                 but the descriptor declares {expected_sha256}; the archive and the descriptor disagree about what \
                 this entry contains"
            ),
        ));
    }
    Ok(VerifiedCodeObject {
        bytes,
        selected_tier: sel.tier,
        selected_arch: arch,
        device_base_arch: strip_arch_features(device_arch).to_owned(),
        archive_bytes: archive.file_len(),
    })
}
