//! Live objects handed to C: handles and descriptors, keyed by the address given out.
//!
//! A C caller holds only an address. Every export looks that address up here before touching
//! anything, so a null, foreign, destroyed or wrong-kind pointer is refused with a status
//! instead of being dereferenced. Ownership: the registry holds one `Arc` per live object;
//! `destroy` removes it (objects that other descriptors still reference stay alive through
//! those references, as upstream's shared pointers do). Nothing is freed by the caller.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

/// A map from handed-out address to the object.
pub struct Registry<T> {
    map: LazyLock<Mutex<HashMap<usize, Arc<T>>>>,
}

impl<T> Registry<T> {
    /// An empty registry.
    pub const fn new() -> Self {
        Registry {
            map: LazyLock::new(|| Mutex::new(HashMap::new())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<usize, Arc<T>>> {
        // A panic while the map is locked cannot leave it half-updated (single inserts and
        // removes), so a poisoned lock is still usable.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `v` and returns the address to give out (the `Arc`'s data address, unique
    /// while the object lives).
    pub fn insert(&self, v: Arc<T>) -> usize {
        let addr = Arc::as_ptr(&v) as *const u8 as usize;
        self.lock().insert(addr, v);
        addr
    }

    /// The live object at `addr`.
    pub fn get(&self, addr: usize) -> Option<Arc<T>> {
        self.lock().get(&addr).cloned()
    }

    /// Unregisters the object at `addr`.
    pub fn remove(&self, addr: usize) -> Option<Arc<T>> {
        self.lock().remove(&addr)
    }

    /// Number of live objects.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no object is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self::new()
    }
}
