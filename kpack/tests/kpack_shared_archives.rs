//! Shared open archives and eviction (kpack.md §7, §11 "Eviction").
//!
//! The lease count is process-wide, so every test in this binary takes `SERIAL` first; each test
//! still uses its own archive paths and asserts per-path counters, and other test binaries run
//! in other processes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex, MutexGuard};

use hipdnn_kpack::{
    ArchiveLease, CompressionScheme, KpackLoadStage, KpackWriter, open_shared_archive,
    read_verified_code_object, sha256_hex, test_hooks,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    assert_eq!(
        test_hooks::lease_count(),
        0,
        "a previous test leaked a lease"
    );
    g
}

fn elf(tag: &str) -> Vec<u8> {
    let mut v = b"\x7fELF".to_vec();
    v.extend_from_slice(tag.as_bytes());
    v
}

const GOOD: &str = "good";

/// An archive at gfx942 with `good` (a valid code object) and `junk` (not a code object).
fn archive(dir: &Path, name: &str) -> PathBuf {
    let mut w = KpackWriter::new(
        "g",
        "gfx942",
        vec!["gfx942".into()],
        CompressionScheme::ZstdPerKernel,
    );
    w.add_kernel("good", "gfx942", "hsaco", elf(GOOD), None)
        .unwrap();
    w.add_kernel("junk", "gfx942", "hsaco", b"junk".to_vec(), None)
        .unwrap();
    let p = dir.join(name);
    w.write_to(&p).unwrap();
    p
}

fn read_good(p: &Path) -> Result<(), KpackLoadStage> {
    read_verified_code_object(p, "good", "gfx942", &sha256_hex(&elf(GOOD)))
        .map(|_| ())
        .map_err(|e| e.stage)
}

#[test]
fn without_a_lease_opens_are_not_kept() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = archive(dir.path(), "nolease.kpack");
    read_good(&p).unwrap();
    read_good(&p).unwrap();
    assert_eq!(test_hooks::open_count(&p), 2);
    assert!(!test_hooks::is_kept(&p));
}

#[test]
fn with_a_lease_an_archive_is_opened_once() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = archive(dir.path(), "once.kpack");
    let _lease = ArchiveLease::acquire();
    read_good(&p).unwrap();
    read_good(&p).unwrap();
    assert!(Arc::ptr_eq(
        &open_shared_archive(&p).unwrap(),
        &open_shared_archive(&p).unwrap()
    ));
    assert_eq!(test_hooks::open_count(&p), 1);
    assert!(test_hooks::is_kept(&p));
}

#[test]
fn the_last_lease_drop_releases_every_archive() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let (p1, p2) = (
        archive(dir.path(), "l1.kpack"),
        archive(dir.path(), "l2.kpack"),
    );
    let first = ArchiveLease::acquire();
    let second = ArchiveLease::acquire();
    read_good(&p1).unwrap();
    read_good(&p2).unwrap();
    drop(first);
    assert!(
        test_hooks::is_kept(&p1) && test_hooks::is_kept(&p2),
        "one lease is still alive"
    );
    drop(second);
    assert!(!test_hooks::is_kept(&p1) && !test_hooks::is_kept(&p2));
    let _again = ArchiveLease::acquire();
    read_good(&p1).unwrap();
    assert_eq!(test_hooks::open_count(&p1), 2, "reopened after the release");
}

#[test]
fn a_kept_archive_is_read_after_its_file_is_deleted() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = archive(dir.path(), "deleted.kpack");
    let _lease = ArchiveLease::acquire();
    read_good(&p).unwrap();
    std::fs::remove_file(&p).unwrap();
    read_good(&p).unwrap();
    assert_eq!(test_hooks::open_count(&p), 1);
}

#[test]
fn concurrent_first_opens_share_one_handle() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    // Many entries make each open walk a long frame table, widening the window in which a
    // second, unshared open would happen if the slot lock were not held across the open.
    let mut w = KpackWriter::new(
        "g",
        "gfx942",
        vec!["gfx942".into()],
        CompressionScheme::ZstdPerKernel,
    );
    for i in 0..4000 {
        w.add_kernel(
            &format!("k{i}"),
            "gfx942",
            "hsaco",
            elf(&i.to_string()),
            None,
        )
        .unwrap();
    }
    let p = dir.path().join("concurrent.kpack");
    w.write_to(&p).unwrap();
    let _lease = ArchiveLease::acquire();
    let barrier = Arc::new(Barrier::new(16));
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let (b, p) = (Arc::clone(&barrier), p.clone());
            std::thread::spawn(move || {
                b.wait();
                open_shared_archive(&p).unwrap()
            })
        })
        .collect();
    let archives: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(archives.iter().all(|a| Arc::ptr_eq(a, &archives[0])));
    assert_eq!(test_hooks::open_count(&p), 1);
}

#[test]
fn a_failed_open_is_not_kept() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("late.kpack");
    let _lease = ArchiveLease::acquire();
    assert_eq!(read_good(&p), Err(KpackLoadStage::OpenArchive));
    assert!(!test_hooks::is_kept(&p));
    archive(dir.path(), "late.kpack");
    read_good(&p).unwrap();
    assert_eq!(test_hooks::open_count(&p), 1);
}

#[test]
fn a_decompress_failure_evicts_the_handle() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = archive(dir.path(), "evict-decompress.kpack");
    let _lease = ArchiveLease::acquire();
    read_good(&p).unwrap();
    let e = read_verified_code_object(&p, "junk", "gfx942", &sha256_hex(b"junk")).unwrap_err();
    assert_eq!(e.stage, KpackLoadStage::Decompress);
    assert!(!test_hooks::is_kept(&p));
    read_good(&p).unwrap();
    assert_eq!(test_hooks::open_count(&p), 2);
}

#[test]
fn a_digest_mismatch_evicts_the_handle() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = archive(dir.path(), "evict-digest.kpack");
    let _lease = ArchiveLease::acquire();
    read_good(&p).unwrap();
    let e = read_verified_code_object(&p, "good", "gfx942", &sha256_hex(b"other")).unwrap_err();
    assert_eq!(e.stage, KpackLoadStage::DigestMismatch);
    assert!(!test_hooks::is_kept(&p));
}

#[test]
fn a_missing_arch_or_entry_keeps_the_handle() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = archive(dir.path(), "keep.kpack");
    let _lease = ArchiveLease::acquire();
    read_good(&p).unwrap();
    let arch = read_verified_code_object(&p, "good", "gfx90a", &sha256_hex(b"x")).unwrap_err();
    assert_eq!(arch.stage, KpackLoadStage::ArchLookup);
    let entry = read_verified_code_object(&p, "absent", "gfx942", &sha256_hex(b"x")).unwrap_err();
    assert_eq!(entry.stage, KpackLoadStage::EntryLookup);
    assert!(test_hooks::is_kept(&p));
    assert_eq!(test_hooks::open_count(&p), 1);
}

#[test]
fn reset_drops_every_kept_archive() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = archive(dir.path(), "reset.kpack");
    let _lease = ArchiveLease::acquire();
    read_good(&p).unwrap();
    test_hooks::reset();
    assert!(!test_hooks::is_kept(&p));
    read_good(&p).unwrap();
    assert_eq!(test_hooks::open_count(&p), 2);
}

/// An archive with group name `group` and one valid kernel `good` (elf(`tag`)).
fn archive_named(p: &Path, group: &str, tag: &str) {
    let mut w = KpackWriter::new(
        group,
        "gfx942",
        vec!["gfx942".into()],
        CompressionScheme::ZstdPerKernel,
    );
    w.add_kernel("good", "gfx942", "hsaco", elf(tag), None)
        .unwrap();
    w.write_to(p).unwrap();
}

/// Issue 37, class 7 (a cache key that misses a property): the shared set is keyed by path,
/// so a kept handle must not outlive the file it was opened from. An archive replaced by a
/// rename (a new inode, the way `write_to` and installers replace files) or rewritten in place
/// with another length is opened again on the next shared open; an unchanged one is not.
#[test]
fn a_kept_handle_is_reopened_when_its_file_is_replaced_or_rewritten() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("replaced.kpack");
    archive_named(&p, "first", "one");
    let lease = ArchiveLease::acquire();
    let a = open_shared_archive(&p).unwrap();
    assert_eq!(a.group_name(), "first");
    let again = open_shared_archive(&p).unwrap();
    assert!(Arc::ptr_eq(&a, &again), "unchanged file: the kept handle");
    assert_eq!(test_hooks::open_count(&p), 1);
    // Replaced by a rename: a new inode with the same length.
    let staged = dir.path().join("staged.kpack");
    archive_named(&staged, "secnd", "two");
    assert_eq!(
        std::fs::metadata(&staged).unwrap().len(),
        std::fs::metadata(&p).unwrap().len()
    );
    std::fs::rename(&staged, &p).unwrap();
    let b = open_shared_archive(&p).unwrap();
    assert_eq!(b.group_name(), "secnd");
    assert_eq!(test_hooks::open_count(&p), 2);
    // Rewritten in place with another length (same inode).
    let bytes = {
        let q = dir.path().join("third.kpack");
        archive_named(&q, "the-third", "three");
        std::fs::read(&q).unwrap()
    };
    std::fs::write(&p, &bytes).unwrap();
    let c = open_shared_archive(&p).unwrap();
    assert_eq!(c.group_name(), "the-third");
    assert_eq!(test_hooks::open_count(&p), 3);
    // The old handles still read their own (opened) files.
    assert_eq!(a.group_name(), "first");
    drop(lease);
}
