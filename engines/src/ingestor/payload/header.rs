//! The 48-byte `HKIP` header in front of every ingestor payload body.
//!
//! Owns the header layout and the header checks 1–5 of the decoder (reference
//! `ingestor-payload.md` §2, §6; upstream `serialization/IngestorPlanHeader.cpp` and
//! `IngestorPlanPayload.hpp`). It never looks inside the body.
//!
//! Layout (little-endian): `0..4` marker `HKIP`, `4..6` format major, `6..8` format minor,
//! `8..10` kind, `10..12` header size, `12..16` reserved (written 0, never checked),
//! `16..48` raw SHA-256 of the body. Bytes 0..16 keep this layout in every format version.

use super::refusal::{damaged, incompatible};
use hipdnn_backend::status::PluginResult;
use hipdnn_schema::pins::INGESTOR_PLAN_FORMAT_VERSION;
use sha2::{Digest, Sha256};

/// Header size written by this build, in bytes (`INGESTOR_PLAN_HEADER_SIZE`).
pub const HEADER_SIZE: usize = 48;
/// Offset of the body digest in the header (`INGESTOR_PLAN_DIGEST_OFFSET`).
pub const DIGEST_OFFSET: usize = 16;
/// Size of the body digest in bytes (`INGESTOR_PLAN_DIGEST_SIZE`).
pub const DIGEST_SIZE: usize = 32;
/// Alignment of the body and of the header size (`INGESTOR_PLAN_BODY_ALIGNMENT`).
pub const BODY_ALIGNMENT: usize = 16;
/// Bytes of the fixed fields every version keeps (marker, version, kind, header size, reserved).
pub const FIXED_FIELDS_SIZE: usize = 16;
/// The marker, ASCII `HKIP`.
pub const MARKER: [u8; 4] = *b"HKIP";
/// Payload kind `SINGLE_KERNEL_PLAN`, the only kind written and read.
pub const KIND_SINGLE_KERNEL_PLAN: u16 = 1;

/// The header fields of a payload that passed header checks 1–5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadHeader {
    /// Format major version (1).
    pub format_major: u16,
    /// Format minor version (0).
    pub format_minor: u16,
    /// Payload kind ([`KIND_SINGLE_KERNEL_PLAN`]).
    pub kind: u16,
    /// Header size in bytes: at least 48, a multiple of 16; the body starts here.
    pub header_size: usize,
    /// Raw SHA-256 of the body as recorded.
    pub body_sha256: [u8; 32],
}

/// The 48 header bytes for `body`: format [`INGESTOR_PLAN_FORMAT_VERSION`], kind 1, header size
/// 48, reserved 0, and the SHA-256 of `body`.
pub fn encode_header(body: &[u8]) -> [u8; HEADER_SIZE] {
    let mut h = [0u8; HEADER_SIZE];
    h[0..4].copy_from_slice(&MARKER);
    h[4..6].copy_from_slice(&INGESTOR_PLAN_FORMAT_VERSION.0.to_le_bytes());
    h[6..8].copy_from_slice(&INGESTOR_PLAN_FORMAT_VERSION.1.to_le_bytes());
    h[8..10].copy_from_slice(&KIND_SINGLE_KERNEL_PLAN.to_le_bytes());
    h[10..12].copy_from_slice(&(HEADER_SIZE as u16).to_le_bytes());
    h[DIGEST_OFFSET..DIGEST_OFFSET + DIGEST_SIZE].copy_from_slice(&Sha256::digest(body));
    h
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

/// Reads and checks the header of `payload` (decoder checks 1–5, in order).
///
/// # Errors
/// 1. fewer than 16 bytes → `INVALID_VALUE` `... truncated: the payload holds <n> bytes, and
///    the fixed header fields need 16`;
/// 2. no `HKIP` marker → `INVALID_VALUE` `... not an ingestor plan: ...`;
/// 3. unreadable version → `NOT_APPLICABLE` `... payload format version <M>.<m> is not
///    readable; this provider reads format versions 1.0 to 1.0`;
/// 4. kind other than 1 → `NOT_APPLICABLE` `... unknown ingestor plan kind <k>`;
/// 5. header size below 48, not a multiple of 16, or beyond the payload → `INVALID_VALUE`
///    `... header size <h> is invalid for a payload of <n> bytes; ...`.
///
/// Version and kind come before the header-size check because they define the layout.
pub fn decode_header(payload: &[u8]) -> PluginResult<PayloadHeader> {
    let n = payload.len();
    if n < FIXED_FIELDS_SIZE {
        return Err(damaged(format!(
            "truncated: the payload holds {n} bytes, and the fixed header fields need {FIXED_FIELDS_SIZE}"
        )));
    }
    if payload[0..4] != MARKER {
        return Err(damaged(
            "not an ingestor plan: the payload does not start with the HKIP marker",
        ));
    }
    let (major, minor) = (u16_at(payload, 4), u16_at(payload, 6));
    let (rmaj, rmin) = INGESTOR_PLAN_FORMAT_VERSION;
    if major != rmaj || minor > rmin {
        return Err(incompatible(format!(
            "payload format version {major}.{minor} is not readable; this provider reads format versions {rmaj}.0 to {rmaj}.{rmin}"
        )));
    }
    let kind = u16_at(payload, 8);
    if kind != KIND_SINGLE_KERNEL_PLAN {
        return Err(incompatible(format!("unknown ingestor plan kind {kind}")));
    }
    let header_size = usize::from(u16_at(payload, 10));
    if header_size < HEADER_SIZE || header_size % BODY_ALIGNMENT != 0 || header_size > n {
        return Err(damaged(format!(
            "header size {header_size} is invalid for a payload of {n} bytes; it must be at least {HEADER_SIZE}, a multiple of {BODY_ALIGNMENT} and no larger than the payload"
        )));
    }
    let mut body_sha256 = [0u8; 32];
    body_sha256.copy_from_slice(&payload[DIGEST_OFFSET..DIGEST_OFFSET + DIGEST_SIZE]);
    Ok(PayloadHeader {
        format_major: major,
        format_minor: minor,
        kind,
        header_size,
        body_sha256,
    })
}

/// Lowercase hex of a raw digest.
pub fn digest_to_hex(digest: &[u8; 32]) -> String {
    hex::encode(digest)
}

/// Raw digest of 64 hex characters (either case), `None` for anything else.
pub fn digest_from_hex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}
