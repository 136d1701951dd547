//! Loads of many distinct missing or damaged archive paths leave nothing behind (issue 37,
//! class 3: a read path that created files or kept descriptors exhausted RLIMIT_NOFILE in
//! another project's ranking store): the open-descriptor count, the directory listing and the
//! shared set's slots are unchanged after 100,000 failed opens. One test in this binary, so no
//! other test opens descriptors meanwhile.

use hipdnn_kpack::{ArchiveLease, KpackArchive, open_shared_archive, test_hooks};
use std::path::Path;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_hundred_thousand_failed_opens_leave_no_descriptor_file_or_slot() {
    let dir = tempfile::tempdir().unwrap();
    // Damaged archives: empty, a wrong magic, a truncated header, a directory.
    std::fs::write(dir.path().join("empty.kpack"), b"").unwrap();
    std::fs::write(dir.path().join("magic.kpack"), b"NOTKPACK________________").unwrap();
    std::fs::write(dir.path().join("short.kpack"), b"KPAK").unwrap();
    std::fs::create_dir(dir.path().join("dir.kpack")).unwrap();
    let damaged = ["empty.kpack", "magic.kpack", "short.kpack", "dir.kpack"];
    let (fds, files) = (open_fds(), listing(dir.path()));
    assert!(fds > 0, "/proc/self/fd is readable");
    let lease = ArchiveLease::acquire();
    let slots = test_hooks::slot_count();
    for i in 0..25_000 {
        let missing = dir.path().join(format!("missing-{i}.kpack"));
        assert!(KpackArchive::open(&missing).is_err());
        assert!(open_shared_archive(&missing).is_err());
        let bad = dir.path().join(damaged[i % damaged.len()]);
        assert!(KpackArchive::open(&bad).is_err(), "{bad:?} opened");
        assert!(open_shared_archive(&bad).is_err(), "{bad:?} opened");
    }
    assert_eq!(test_hooks::slot_count(), slots, "failed opens kept slots");
    drop(lease);
    assert_eq!(open_fds(), fds, "open descriptors changed");
    assert_eq!(listing(dir.path()), files, "the directory listing changed");
}
