//! Exact lengths of FlatBuffers: how many bytes a verified buffer uses, so that readers can
//! refuse trailing bytes, and plain-words texts for truncated buffers.
//!
//! A FlatBuffer does not record its own length. This module finds it from the verifier: the
//! verifier checks every table, vtable, vector and string it reaches against the end of the
//! slice it is given, so "the prefix `bytes[..n]` verifies" holds for every `n` at or beyond
//! the end of the last byte the buffer uses and fails below it. A binary search over `n`
//! (`log2(len)` verifications) gives that end. Bytes after it are trailing: up to 7 zero bytes
//! are accepted as builder padding (FlatBuffers builders pad to the largest scalar, 8 bytes);
//! anything else is refused with "N trailing bytes". It owns only this arithmetic; the readers
//! (envelope, `HDGP`, graph, payloads) decide what to call the bytes and which status to use.

/// The most zero bytes after the used end that are taken as builder padding.
pub const MAX_PADDING: usize = 7;

/// The smallest `n` such that `verifies(&bytes[..n])` holds, given that it holds for `bytes`
/// (the caller checked). `verifies` must be monotonic in `n` (a FlatBuffers verifier is).
pub fn used_len(bytes: &[u8], verifies: impl Fn(&[u8]) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, bytes.len());
    // Invariant: verifies(bytes[..hi]) holds; every n < lo fails.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if verifies(&bytes[..mid]) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    hi
}

/// The number of trailing bytes of `bytes` after `used` that are not padding: 0 when
/// `bytes[used..]` is at most [`MAX_PADDING`] zero bytes, else `bytes.len() - used`.
pub fn trailing_bytes(bytes: &[u8], used: usize) -> usize {
    let tail = bytes.get(used..).unwrap_or_default();
    if tail.len() <= MAX_PADDING && tail.iter().all(|&b| b == 0) {
        0
    } else {
        tail.len()
    }
}

/// `Err(n)` with the number of trailing bytes when `bytes` (which `verifies` accepts) carries
/// more than padding after the end the verifier needs, else `Ok(used)`.
///
/// # Errors
/// The count of trailing bytes (see [`trailing_bytes`]).
pub fn check_no_trailing(bytes: &[u8], verifies: impl Fn(&[u8]) -> bool) -> Result<usize, usize> {
    let used = used_len(bytes, verifies);
    match trailing_bytes(bytes, used) {
        0 => Ok(used),
        n => Err(n),
    }
}

/// "N trailing bytes after the {what} of U bytes" (the plain-words text of a refusal).
pub fn trailing_message(what: &str, trailing: usize, used: usize) -> String {
    format!("{trailing} trailing bytes after the {what} of {used} bytes")
}

/// A plain-words description of a verifier failure: "truncated: L of at least N bytes" when
/// the verifier reached past the end of the input (a range out of bounds), else `None`.
pub fn truncation(len: usize, e: &flatbuffers::InvalidFlatbuffer) -> Option<String> {
    match e {
        flatbuffers::InvalidFlatbuffer::RangeOutOfBounds { range, .. } if range.end > len => {
            Some(format!("truncated: {len} of at least {} bytes", range.end))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_of_up_to_seven_zero_bytes_is_not_trailing() {
        let b = [1u8, 2, 3, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(trailing_bytes(&b, 3), 0);
        assert_eq!(trailing_bytes(&b, 2), 8);
        assert_eq!(trailing_bytes(&[1, 0, 0, 9], 1), 3);
    }

    #[test]
    fn used_len_is_the_smallest_verifying_prefix() {
        let b = [0u8; 100];
        assert_eq!(used_len(&b, |p| p.len() >= 37), 37);
        assert_eq!(used_len(&b, |_| true), 0);
    }
}
