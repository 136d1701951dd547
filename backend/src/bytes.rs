//! Shared, immutable loaded bytes: one owned buffer and cheap views into it.
//!
//! This module owns [`SharedBytes`], the type through which a load keeps exactly one owned
//! copy of the bytes it was given: the SDK copies a serialized graph-and-plan container (or a
//! bare plan) once into a `SharedBytes`; the plan cache is seeded with a view of its plan part,
//! the graph part is another view, and an engine may keep views of its payload (the kernel
//! ingestor keeps its code object this way). It never parses or copies bytes after
//! construction.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// A view (`range`) into an immutable, reference-counted buffer.
///
/// Cloning or slicing copies no bytes (it bumps the buffer's strong count); the buffer is
/// freed when its last view is dropped. `Deref` gives the viewed bytes.
#[derive(Clone)]
pub struct SharedBytes {
    buffer: Arc<[u8]>,
    range: Range<usize>,
}

impl SharedBytes {
    /// Copies `bytes` into a new buffer and views all of it (the one copy a load makes).
    pub fn copy_from_slice(bytes: &[u8]) -> Self {
        Self::from(Arc::<[u8]>::from(bytes))
    }

    /// A view of `range` of this view (offsets relative to this view's start), or `None` when
    /// `range` is not inside it.
    pub fn slice(&self, range: Range<usize>) -> Option<Self> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        Some(SharedBytes {
            buffer: Arc::clone(&self.buffer),
            range: self.range.start + range.start..self.range.start + range.end,
        })
    }

    /// The view of `sub`, a slice borrowed from this view's bytes (for example a blob or
    /// payload a parser returned), or `None` when `sub` does not lie inside this view.
    /// Decided by addresses; no bytes are compared or copied.
    pub fn view_of(&self, sub: &[u8]) -> Option<Self> {
        let start = (sub.as_ptr() as usize).checked_sub(self.as_ptr() as usize)?;
        self.slice(start..start.checked_add(sub.len())?)
    }

    /// True when both views share one buffer and view the same range (the same bytes in
    /// memory, not merely equal bytes).
    pub fn same_view(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.buffer, &other.buffer) && self.range == other.range
    }

    /// The whole underlying buffer (shared with every view of it).
    pub fn buffer(&self) -> &Arc<[u8]> {
        &self.buffer
    }

    /// This view's byte range within [`Self::buffer`].
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }
}

impl From<Arc<[u8]>> for SharedBytes {
    /// Views all of `buffer` (no copy).
    fn from(buffer: Arc<[u8]>) -> Self {
        let range = 0..buffer.len();
        SharedBytes { buffer, range }
    }
}

impl From<Vec<u8>> for SharedBytes {
    /// Moves `bytes` into a shared buffer (one copy into the `Arc` allocation) and views all
    /// of it.
    fn from(bytes: Vec<u8>) -> Self {
        Self::from(Arc::<[u8]>::from(bytes))
    }
}

impl Deref for SharedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buffer[self.range.clone()]
    }
}

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for SharedBytes {
    /// Byte equality of the views (use [`SharedBytes::same_view`] for identity).
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for SharedBytes {}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SharedBytes({} bytes at {}..{} of a {}-byte buffer)",
            self.len(),
            self.range.start,
            self.range.end,
            self.buffer.len()
        )
    }
}
