//! The process-wide set of shared open archives (kpack.md §7, final lease-based form of
//! PR13315). Owns which archive handles are kept and when they are dropped; it never reads
//! entries or judges their bytes.
//!
//! While at least one [`ArchiveLease`] is alive, [`open_shared_archive`] keeps every archive it
//! opens, keyed by the path exactly as given, and never reopens it (a file replaced on disk is
//! not seen; the per-entry SHA-256 still catches a change). Dropping the last lease drops every
//! kept archive. Without a lease, opens return unretained handles. Each path has its own slot
//! mutex, so concurrent first opens of one path share one handle; a failed open is not kept.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use once_cell::sync::Lazy;

use super::error::KpackError;
use super::format::KpackArchive;

#[derive(Default)]
struct Slot {
    archive: Mutex<Option<Arc<KpackArchive>>>,
}

#[derive(Default)]
struct State {
    leases: usize,
    slots: HashMap<PathBuf, Arc<Slot>>,
}

static STATE: Lazy<Mutex<State>> = Lazy::new(Mutex::default);
/// Successful opens per path (test hook); a separate lock so it never nests under a slot.
static OPEN_COUNTS: Lazy<Mutex<HashMap<PathBuf, u64>>> = Lazy::new(Mutex::default);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Archives compiled into the binary, by the path label they are opened under.
static STATIC_ARCHIVES: Lazy<Mutex<HashMap<PathBuf, &'static [u8]>>> = Lazy::new(Mutex::default);

/// Makes `path` name the archive `bytes` (compiled into the binary) for every later
/// [`open_shared_archive`] and verified read ([`crate::read_verified_code_object`]) in this
/// process: such an open parses `bytes` ([`KpackArchive::from_static_bytes`]) instead of
/// opening a file. `path` is a label (the engines use `<embedded>/<arch>/<archive name>`);
/// registering it again replaces the bytes.
pub fn register_static_archive(path: impl Into<PathBuf>, bytes: &'static [u8]) {
    lock(&STATIC_ARCHIVES).insert(path.into(), bytes);
}

fn open_counted(path: &Path) -> Result<Arc<KpackArchive>, KpackError> {
    let registered = lock(&STATIC_ARCHIVES).get(path).copied();
    let archive = Arc::new(match registered {
        Some(bytes) => KpackArchive::from_static_bytes(path, bytes)?,
        None => KpackArchive::open(path)?,
    });
    *lock(&OPEN_COUNTS).entry(path.to_path_buf()).or_insert(0) += 1;
    Ok(archive)
}

/// A holder's claim that opened archives should stay open (one per provider container).
///
/// RAII: [`ArchiveLease::acquire`] increments the process-wide lease count; dropping the lease
/// decrements it, and the drop that reaches zero drops every kept archive (handles callers still
/// hold stay valid until they are dropped).
#[derive(Debug)]
#[must_use = "archives are kept only while the lease is alive"]
pub struct ArchiveLease {
    _private: (),
}

impl ArchiveLease {
    /// Takes a lease; archives opened from now on through [`open_shared_archive`] are kept.
    pub fn acquire() -> Self {
        lock(&STATE).leases += 1;
        Self { _private: () }
    }
}

impl Drop for ArchiveLease {
    fn drop(&mut self) {
        let dropped = {
            let mut st = lock(&STATE);
            st.leases -= 1;
            if st.leases == 0 {
                std::mem::take(&mut st.slots)
            } else {
                HashMap::new()
            }
        };
        drop(dropped); // outside the state lock
    }
}

/// Opens `path` through the shared set: the kept handle if there is one and the file is still
/// the one it was opened from ([`KpackArchive::is_current`]), else a fresh open that is kept
/// while a lease is alive (concurrent first opens of one path wait on that path's slot and
/// share its handle). Without any lease, returns an unretained handle.
///
/// # Errors
/// The [`KpackArchive::open`] error; a failed open is not kept, so the next call retries.
pub fn open_shared_archive(path: &Path) -> Result<Arc<KpackArchive>, KpackError> {
    let slot = {
        let mut st = lock(&STATE);
        if st.leases == 0 {
            drop(st);
            return open_counted(path);
        }
        Arc::clone(st.slots.entry(path.to_path_buf()).or_default())
    };
    let mut kept = lock(&slot.archive);
    if let Some(a) = kept.as_ref() {
        // A kept handle serves only the file it was opened from: one replaced or changed on
        // disk since is opened again (issue 37, class 7: a cache key that misses a property).
        if a.is_current() {
            return Ok(Arc::clone(a));
        }
        *kept = None;
    }
    let archive = match open_counted(path) {
        Ok(a) => a,
        Err(e) => {
            // A failed open keeps nothing: its empty slot goes, so loads of many distinct
            // missing or damaged paths under a lease do not grow the set.
            drop(kept);
            let mut st = lock(&STATE);
            if st
                .slots
                .get(path)
                .is_some_and(|s| Arc::ptr_eq(s, &slot) && lock(&s.archive).is_none())
            {
                st.slots.remove(path);
            }
            return Err(e);
        }
    };
    *kept = Some(Arc::clone(&archive));
    Ok(archive)
}

/// Evicts the kept handle for `path` if it is `handle` (a handle reopened meanwhile stays).
/// Called before reporting a DECOMPRESS failure of a listed entry or a DIGEST_MISMATCH.
pub(crate) fn evict(path: &Path, handle: &Arc<KpackArchive>) {
    let slot = lock(&STATE).slots.get(path).cloned();
    if let Some(slot) = slot {
        let mut kept = lock(&slot.archive);
        if kept.as_ref().is_some_and(|k| Arc::ptr_eq(k, handle)) {
            *kept = None;
        }
    }
}

/// Test hooks for the shared archive set. Tests in one process run in parallel: use a unique
/// archive path per test and assert per-path values; only tests that serialize among
/// themselves may rely on the lease count or call [`test_hooks::reset`].
#[cfg(feature = "testing")]
pub mod test_hooks {
    use super::*;

    /// Drops every kept archive (leases stay as they are).
    pub fn reset() {
        let dropped = std::mem::take(&mut lock(&STATE).slots);
        drop(dropped);
    }

    /// How many times `path` was successfully opened (kept or not) since process start.
    pub fn open_count(path: &Path) -> u64 {
        lock(&OPEN_COUNTS).get(path).copied().unwrap_or(0)
    }

    /// Whether a handle for `path` is currently kept.
    pub fn is_kept(path: &Path) -> bool {
        let slot = lock(&STATE).slots.get(path).cloned();
        slot.is_some_and(|s| lock(&s.archive).is_some())
    }

    /// The number of paths the shared set holds a slot for (kept or being opened).
    pub fn slot_count() -> usize {
        lock(&STATE).slots.len()
    }

    /// The number of live [`ArchiveLease`]s.
    pub fn lease_count() -> usize {
        lock(&STATE).leases
    }
}
