//! Recycled f32 buffers of the CPU reference engine: the memory of a value released after its
//! last reader ([`give`]) is handed to the next large op output that fits ([`take`]), so that
//! an execute does not zero (or page-fault in) fresh memory for every layer's activations.
//!
//! A taken buffer's contents are unspecified (stale values of an earlier tensor): only
//! outputs that are written in full before they are read take one, so results never depend
//! on what the buffer held. The pool is process-wide, bounded, and emptied by [`clear`] at the
//! end of each execute (nothing is retained between executes).

use rayon::prelude::*;
use std::sync::Mutex;

/// Buffers below this many floats are not recycled (allocated as usual).
pub(crate) const MIN_FLOATS: usize = 1 << 16;
/// Most buffers kept.
const KEEP: usize = 16;

static POOL: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());

/// Hands `v` to the pool (dropped when it is small or the pool is full).
pub(crate) fn give(v: Vec<f32>) {
    if v.capacity() < MIN_FLOATS {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if pool.len() < KEEP {
        pool.push(v);
    }
}

/// A buffer of `len` floats whose contents are unspecified (the caller overwrites every
/// element): the smallest pooled buffer that holds `len` floats without wasting more than half
/// of it, else fresh zeros written by the rayon threads together.
pub(crate) fn take(len: usize) -> Vec<f32> {
    if len < MIN_FLOATS {
        return vec![0f32; len];
    }
    let found = {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let best = pool
            .iter()
            .enumerate()
            .filter(|(_, v)| v.capacity() >= len && v.capacity() / 2 <= len)
            .min_by_key(|(_, v)| v.capacity())
            .map(|(i, _)| i);
        best.map(|i| pool.swap_remove(i))
    };
    match found {
        Some(mut v) => {
            // Within capacity: truncates, or zero-fills only the missing tail.
            v.resize(len, 0.0);
            v
        }
        None => zeros(len),
    }
}

/// `len` zeros written by the rayon threads together: a large block that the allocator reuses
/// is not zeroed by the calling thread alone while the others wait (small blocks: `vec!`).
pub(crate) fn zeros(len: usize) -> Vec<f32> {
    if len < MIN_FLOATS {
        return vec![0f32; len];
    }
    let mut v = Vec::with_capacity(len);
    v.par_extend((0..len).into_par_iter().map(|_| 0f32));
    v
}

/// Empties the pool (its memory goes back to the allocator).
pub(crate) fn clear() {
    POOL.lock().unwrap_or_else(|e| e.into_inner()).clear();
}
