//! The verified read of a kpack code object (kpack.md §5, §10, §11 "TestKpackCodeObjectRead",
//! size credibility and NVIDIA cases). No lease is taken here: every read opens its own handle.

use std::path::{Path, PathBuf};

use hipdnn_kpack::{
    ArchTier, CompressionScheme, KPACK_MAX_CODE_OBJECT_BYTES, KpackErrorCode, KpackLoadStage,
    KpackReadError, KpackWriter, VerifiedCodeObject, read_verified_code_object, sha256_hex,
    size_is_credible,
};

fn elf(tag: &str) -> Vec<u8> {
    let mut v = b"\x7fELF".to_vec();
    v.extend_from_slice(tag.as_bytes());
    v
}

/// Writes an archive with the given arches and `(toc_key, arch, type, bytes)` kernels.
fn archive(dir: &Path, arches: &[&str], kernels: &[(&str, &str, &str, &[u8])]) -> PathBuf {
    archive_with(
        dir,
        "a.kpack",
        CompressionScheme::ZstdPerKernel,
        arches,
        kernels,
    )
}

fn archive_with(
    dir: &Path,
    name: &str,
    scheme: CompressionScheme,
    arches: &[&str],
    kernels: &[(&str, &str, &str, &[u8])],
) -> PathBuf {
    let mut w = KpackWriter::new(
        "g",
        "fam",
        arches.iter().map(|s| s.to_string()).collect(),
        scheme,
    );
    for (k, a, t, b) in kernels {
        w.add_kernel(k, a, t, b.to_vec(), None).unwrap();
    }
    let p = dir.join(name);
    w.write_to(&p).unwrap();
    p
}

fn read(
    p: &Path,
    key: &str,
    dev: &str,
    bytes: &[u8],
) -> Result<VerifiedCodeObject, KpackReadError> {
    read_verified_code_object(p, key, dev, &sha256_hex(bytes))
}

fn refused(r: Result<VerifiedCodeObject, KpackReadError>) -> KpackReadError {
    r.expect_err("the read must be refused")
}

#[test]
fn reports_an_absent_archive() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("absent.kpack");
    let e = refused(read(&p, "k", "gfx942", b""));
    assert_eq!(e.stage, KpackLoadStage::OpenArchive);
    assert_eq!(e.code, Some(KpackErrorCode::FileNotFound));
    assert_eq!(
        e.message,
        format!(
            "kpack archive '{}' does not exist (KPACK_ERROR_FILE_NOT_FOUND)",
            p.display()
        )
    );
    assert_eq!(e.to_string(), e.message);
}

#[test]
fn returns_verified_bytes_without_loading_a_module() {
    let dir = tempfile::tempdir().unwrap();
    let co = elf("kernel");
    let p = archive(
        dir.path(),
        &["gfx90a", "gfx942"],
        &[
            ("k", "gfx942", "hsaco", &co),
            ("k", "gfx90a", "hsaco", &elf("other")),
        ],
    );
    let v = read(&p, "k", "gfx942:sramecc+:xnack-", &co).unwrap();
    assert_eq!(v.bytes, co);
    assert_eq!(v.selected_arch, "gfx942");
    assert_eq!(v.selected_tier, ArchTier::Explicit);
    assert_eq!(v.archive_bytes, std::fs::metadata(&p).unwrap().len());
}

#[test]
fn a_capture_records_the_device_base_name() {
    let dir = tempfile::tempdir().unwrap();
    let co = elf("kernel");
    let p = archive(
        dir.path(),
        &["gfx942:sramecc+"],
        &[("k", "gfx942:sramecc+", "hsaco", &co)],
    );
    let v = read(&p, "k", "gfx942:sramecc+:xnack-", &co).unwrap();
    assert_eq!(v.selected_arch, "gfx942:sramecc+");
    assert_eq!(v.device_base_arch, "gfx942");
}

#[test]
fn a_generic_entry_serves_a_member_device_and_the_target_stays_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let co = elf("generic");
    let p = archive(
        dir.path(),
        &["gfx11-generic"],
        &[("k", "gfx11-generic", "hsaco", &co)],
    );
    let v = read(&p, "k", "gfx1151", &co).unwrap();
    assert_eq!(
        (v.selected_arch.as_str(), v.selected_tier),
        ("gfx11-generic", ArchTier::Generic)
    );
    assert_eq!(v.device_base_arch, "gfx1151");
}

#[test]
fn with_both_present_the_devices_own_arch_wins() {
    let dir = tempfile::tempdir().unwrap();
    let own = elf("own");
    let p = archive(
        dir.path(),
        &["gfx11-generic", "gfx1151"],
        &[
            ("k", "gfx11-generic", "hsaco", &elf("g")),
            ("k", "gfx1151", "hsaco", &own),
        ],
    );
    assert_eq!(
        read(&p, "k", "gfx1151", &own).unwrap().selected_arch,
        "gfx1151"
    );
}

#[test]
fn rejects_a_payload_that_is_not_a_code_object() {
    let dir = tempfile::tempdir().unwrap();
    let junk = b"not a code object".to_vec();
    let p = archive(dir.path(), &["gfx942"], &[("k", "gfx942", "hsaco", &junk)]);
    let e = refused(read(&p, "k", "gfx942", &junk));
    assert_eq!(
        (e.stage, e.code),
        (
            KpackLoadStage::Decompress,
            Some(KpackErrorCode::InvalidMetadata)
        )
    );
    let prefix = format!(
        "cannot decompress toc_key 'k' at arch 'gfx942' from kpack archive '{}' (KPACK_ERROR_INVALID_METADATA)",
        p.display()
    );
    assert!(e.message.starts_with(&prefix), "{}", e.message);
}

#[test]
fn accepts_a_clang_offload_bundle_for_a_gfx_entry() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = b"__CLANG_OFFLOAD_BUNDLE__\x02\x00".to_vec();
    let p = archive(
        dir.path(),
        &["gfx942"],
        &[("k", "gfx942", "hsaco", &bundle)],
    );
    assert_eq!(read(&p, "k", "gfx942", &bundle).unwrap().bytes, bundle);
}

#[test]
fn refuses_bytes_whose_digest_disagrees() {
    let dir = tempfile::tempdir().unwrap();
    let co = elf("kernel");
    let p = archive(dir.path(), &["gfx942"], &[("k", "gfx942", "hsaco", &co)]);
    let declared = sha256_hex(b"something else");
    let e = refused(read_verified_code_object(&p, "k", "gfx942", &declared));
    assert_eq!(e.stage, KpackLoadStage::DigestMismatch);
    assert_eq!(
        e.message,
        format!(
            "the code object for toc_key 'k' at arch 'gfx942' in kpack archive '{}' hashes to {}, but the descriptor \
             declares {declared}; the archive and the descriptor disagree about what this entry contains",
            p.display(),
            sha256_hex(&co)
        )
    );
    // Lowercase hex only: an uppercase digest of the right bytes is a different string.
    let upper = sha256_hex(&co).to_uppercase();
    assert_eq!(
        refused(read_verified_code_object(&p, "k", "gfx942", &upper)).stage,
        KpackLoadStage::DigestMismatch
    );
}

#[test]
fn no_binary_for_the_device_is_arch_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let p = archive(
        dir.path(),
        &["gfx90a", "gfx942"],
        &[("k", "gfx942", "hsaco", &elf("x"))],
    );
    let e = refused(read(&p, "k", "gfx1100", &elf("x")));
    assert_eq!(e.stage, KpackLoadStage::ArchLookup);
    assert_eq!(
        e.message,
        format!(
            "kpack archive '{}' holds no binary for device arch 'gfx1100'; the archive provides: gfx90a, gfx942",
            p.display()
        )
    );
}

#[test]
fn an_archive_without_architectures_is_arch_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let p = archive(dir.path(), &[], &[]);
    let e = refused(read(&p, "k", "gfx942", &elf("x")));
    assert_eq!(e.stage, KpackLoadStage::ArchLookup);
    assert_eq!(
        e.message,
        format!(
            "kpack archive '{}' declares no architectures; its gfx_arches entry is absent or malformed",
            p.display()
        )
    );
}

#[test]
fn a_missing_entry_is_entry_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let p = archive(
        dir.path(),
        &["gfx90a", "gfx942"],
        &[("k", "gfx90a", "hsaco", &elf("x"))],
    );
    let e = refused(read(&p, "k", "gfx942", &elf("x")));
    assert_eq!(
        (e.stage, e.code),
        (
            KpackLoadStage::EntryLookup,
            Some(KpackErrorCode::KernelNotFound)
        )
    );
    assert_eq!(
        e.message,
        format!(
            "kpack archive '{}' has no entry for toc_key 'k' at arch 'gfx942' (KPACK_ERROR_KERNEL_NOT_FOUND); this \
             usually means the packer and the descriptor disagree",
            p.display()
        )
    );
}

#[test]
fn an_empty_entry_is_decompress() {
    let dir = tempfile::tempdir().unwrap();
    let p = archive_with(
        dir.path(),
        "e.kpack",
        CompressionScheme::None,
        &["gfx942"],
        &[("k", "gfx942", "hsaco", b"")],
    );
    let e = refused(read(&p, "k", "gfx942", b""));
    assert_eq!(
        (e.stage, e.code),
        (
            KpackLoadStage::Decompress,
            Some(KpackErrorCode::DecompressionFailed)
        )
    );
    assert!(
        e.message
            .ends_with("(KPACK_ERROR_DECOMPRESSION_FAILED): the entry is empty"),
        "{}",
        e.message
    );
}

#[test]
fn size_credibility_refuses_over_2_gib_and_ratios_over_4096() {
    assert!(size_is_credible(KPACK_MAX_CODE_OBJECT_BYTES, 0));
    assert!(!size_is_credible(KPACK_MAX_CODE_OBJECT_BYTES + 1, 0));
    assert!(!size_is_credible(KPACK_MAX_CODE_OBJECT_BYTES + 1, u64::MAX));
    assert!(
        size_is_credible(4096 * 10 + 4095, 10),
        "integer division: 10 <= 10"
    );
    assert!(!size_is_credible(4096 * 11, 10));
    assert!(
        size_is_credible(1 << 30, 0),
        "unknown archive size skips the ratio"
    );
    assert!(!size_is_credible(u64::MAX, 0));
}

#[test]
fn an_incredible_declared_size_is_refused_before_any_allocation() {
    // A 3 GiB original_size in the TOC must not make the reader allocate 3 GiB.
    let dir = tempfile::tempdir().unwrap();
    let co = elf("kernel");
    let p = archive(dir.path(), &["gfx942"], &[("k", "gfx942", "hsaco", &co)]);
    let bytes = std::fs::read(&p).unwrap();
    let toc_offset = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize;
    let mut toc = bytes[toc_offset..].to_vec();
    // original_size 10 is the positive fixint 0x0a right after the key; make it a uint32 3 GiB.
    let key = b"\xadoriginal_size";
    let at = toc.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    assert_eq!(toc[at], 0x0a);
    toc.splice(at..at + 1, [0xce, 0xc0, 0, 0, 0]);
    let mut lying = bytes[..toc_offset].to_vec();
    lying.extend_from_slice(&toc);
    std::fs::write(&p, lying).unwrap();
    let e = refused(read(&p, "k", "gfx942", &co));
    assert_eq!(
        (e.stage, e.code),
        (
            KpackLoadStage::Decompress,
            Some(KpackErrorCode::InvalidMetadata)
        )
    );
}

// --- NVIDIA entries (kpack.md §10) ---

const PTX_SLASH: &[u8] = b"//\n// Generated by LLVM NVPTX Back-End\n.version 7.8\n.target sm_90\n";
const PTX_VERSION: &[u8] = b".version 7.8\n.target sm_80\n";

#[test]
fn an_sm_90_device_reads_the_sm_90_entry_not_sm_80() {
    let dir = tempfile::tempdir().unwrap();
    let p = archive(
        dir.path(),
        &["sm_80", "sm_90"],
        &[
            ("k", "sm_80", "ptx", PTX_VERSION),
            ("k", "sm_90", "ptx", PTX_SLASH),
        ],
    );
    let v = read(&p, "k", "sm_90", PTX_SLASH).unwrap();
    assert_eq!(
        (v.selected_arch.as_str(), v.bytes.as_slice()),
        ("sm_90", PTX_SLASH)
    );
    let only_80 = archive_with(
        dir.path(),
        "80.kpack",
        CompressionScheme::None,
        &["sm_80"],
        &[("k", "sm_80", "ptx", PTX_VERSION)],
    );
    assert_eq!(
        refused(read(&only_80, "k", "sm_90", PTX_VERSION)).stage,
        KpackLoadStage::ArchLookup
    );
}

#[test]
fn ptx_starting_with_slashes_or_version_and_cubin_are_accepted_for_sm() {
    let dir = tempfile::tempdir().unwrap();
    let cubin = elf("cubin");
    let p = archive(
        dir.path(),
        &["sm_90"],
        &[
            ("a", "sm_90", "ptx", PTX_SLASH),
            ("b", "sm_90", "ptx", PTX_VERSION),
            ("c", "sm_90", "cubin", &cubin),
        ],
    );
    assert_eq!(read(&p, "a", "sm_90", PTX_SLASH).unwrap().bytes, PTX_SLASH);
    assert_eq!(
        read(&p, "b", "sm_90", PTX_VERSION).unwrap().bytes,
        PTX_VERSION
    );
    assert_eq!(read(&p, "c", "sm_90", &cubin).unwrap().bytes, cubin);
}

#[test]
fn a_bundle_or_random_bytes_are_refused_for_sm() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    let random = vec![0x13, 0x37, 0xde, 0xad, 0xbe, 0xef];
    let p = archive(
        dir.path(),
        &["sm_90"],
        &[
            ("b", "sm_90", "ptx", &bundle),
            ("r", "sm_90", "ptx", &random),
        ],
    );
    for (k, bytes) in [("b", &bundle), ("r", &random)] {
        let e = refused(read(&p, k, "sm_90", bytes));
        assert_eq!(
            (e.stage, e.code),
            (
                KpackLoadStage::Decompress,
                Some(KpackErrorCode::InvalidMetadata)
            ),
            "{k}"
        );
    }
}

#[test]
fn a_gfx_entry_holding_ptx_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = archive(
        dir.path(),
        &["gfx942"],
        &[
            ("a", "gfx942", "ptx", PTX_SLASH),
            ("b", "gfx942", "ptx", PTX_VERSION),
        ],
    );
    for (k, bytes) in [("a", PTX_SLASH), ("b", PTX_VERSION)] {
        let e = refused(read(&p, k, "gfx942", bytes));
        assert_eq!(
            (e.stage, e.code),
            (
                KpackLoadStage::Decompress,
                Some(KpackErrorCode::InvalidMetadata)
            ),
            "{k}"
        );
    }
}

#[test]
fn the_digest_covers_the_ptx_without_a_nul() {
    let dir = tempfile::tempdir().unwrap();
    let p = archive(dir.path(), &["sm_90"], &[("k", "sm_90", "ptx", PTX_SLASH)]);
    let v = read(&p, "k", "sm_90", PTX_SLASH).unwrap();
    assert_ne!(v.bytes.last(), Some(&0));
    let mut with_nul = PTX_SLASH.to_vec();
    with_nul.push(0);
    assert_eq!(
        refused(read(&p, "k", "sm_90", &with_nul)).stage,
        KpackLoadStage::DigestMismatch
    );
}
