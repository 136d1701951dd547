//! The CPU reference engine's plugin payload (saved plan): a fixed versioned header and the
//! serialized `Graph` the plan was built from.
//!
//! Layout (all integers little-endian), [`HEADER_SIZE`] = 52 bytes:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `HRCP` ([`MAGIC`]) |
//! | 4 | 2 | major version ([`VERSION_MAJOR`]) |
//! | 6 | 2 | minor version ([`VERSION_MINOR`]) |
//! | 8 | 2 | header size in bytes (≥ 52; a newer minor may append header fields) |
//! | 10 | 2 | reserved, 0 |
//! | 12 | 8 | body length in bytes |
//! | 20 | 32 | SHA-256 of the body |
//! | 52 | … | body: the `Graph` FlatBuffer bytes |
//!
//! This prefix is frozen for every version: a new major changes only the body's meaning.
//! Decoding checks damage first (`INVALID_VALUE`, prefix [`DAMAGED`]): magic, truncated
//! header, header size, reserved, body length (truncated or extended), checksum, graph
//! verification; then incompatibility (`NOT_APPLICABLE`, prefix [`INCOMPATIBLE`]): major
//! version, and a graph this build cannot run. Owns only the byte format.

use hipdnn_backend::{OperationGraph, PluginError, PluginResult};
use sha2::{Digest, Sha256};

/// Magic bytes at offset 0.
pub const MAGIC: [u8; 4] = *b"HRCP";
/// Major version written and the only one read.
pub const VERSION_MAJOR: u16 = 1;
/// Minor version written; any minor of [`VERSION_MAJOR`] is read.
pub const VERSION_MINOR: u16 = 0;
/// Size of the header this version writes.
pub const HEADER_SIZE: usize = 52;
/// Message prefix of damaged payloads (`INVALID_VALUE`).
pub const DAMAGED: &str = "cpu reference plan data is damaged: ";
/// Message prefix of valid payloads that cannot be loaded here (`NOT_APPLICABLE`).
pub const INCOMPATIBLE: &str = "cpu reference plan is valid but cannot be loaded here: ";

/// The header fields of a payload as recorded, read without any check (for tools that show a
/// saved plan, including a damaged one; loading uses [`decode`], which checks everything).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderFields {
    /// Bytes 0..4 (valid payloads: [`MAGIC`]).
    pub magic: [u8; 4],
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Header size in bytes (the body starts here).
    pub header_size: u16,
    /// Reserved field (0 when valid).
    pub reserved: u16,
    /// Body length in bytes as recorded.
    pub body_len: u64,
    /// Recorded SHA-256 of the body.
    pub body_sha256: [u8; 32],
}

/// Reads the header fields of `payload` without checking them; `None` when it holds fewer
/// than [`HEADER_SIZE`] bytes.
pub fn describe(payload: &[u8]) -> Option<HeaderFields> {
    let h = payload.get(..HEADER_SIZE)?;
    let mut magic = [0u8; 4];
    magic.copy_from_slice(&h[..4]);
    let mut lb = [0u8; 8];
    lb.copy_from_slice(&h[12..20]);
    let mut body_sha256 = [0u8; 32];
    body_sha256.copy_from_slice(&h[20..52]);
    Some(HeaderFields {
        magic,
        major: u16_at(h, 4),
        minor: u16_at(h, 6),
        header_size: u16_at(h, 8),
        reserved: u16_at(h, 10),
        body_len: u64::from_le_bytes(lb),
        body_sha256,
    })
}

/// Builds the payload for `graph_bytes`.
pub fn encode(graph_bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_SIZE + graph_bytes.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION_MAJOR.to_le_bytes());
    out.extend_from_slice(&VERSION_MINOR.to_le_bytes());
    out.extend_from_slice(&(HEADER_SIZE as u16).to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(graph_bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(graph_bytes));
    out.extend_from_slice(graph_bytes);
    out
}

fn damaged(m: impl std::fmt::Display) -> PluginError {
    PluginError::invalid_value(format!("{DAMAGED}{m}"))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// Decodes a payload into the verified graph it carries.
///
/// # Errors
/// `INVALID_VALUE` "cpu reference plan data is damaged: …" for a wrong magic, a header or
/// body shorter or longer than recorded, a non-zero reserved field, a checksum mismatch or
/// graph bytes that fail verification; then `NOT_APPLICABLE` "cpu reference plan is valid
/// but cannot be loaded here: …" for another major version.
pub fn decode(payload: &[u8]) -> PluginResult<OperationGraph> {
    if payload.len() < 4 || payload[..4] != MAGIC {
        return Err(damaged(format!(
            "magic is not HRCP (payload of {} bytes)",
            payload.len()
        )));
    }
    if payload.len() < HEADER_SIZE {
        return Err(damaged(format!(
            "header truncated: {} of {HEADER_SIZE} bytes",
            payload.len()
        )));
    }
    let (major, minor) = (u16_at(payload, 4), u16_at(payload, 6));
    let hsize = usize::from(u16_at(payload, 8));
    if hsize < HEADER_SIZE || hsize > payload.len() {
        return Err(damaged(format!(
            "header size {hsize} is outside {HEADER_SIZE}..={}",
            payload.len()
        )));
    }
    if u16_at(payload, 10) != 0 {
        return Err(damaged(format!(
            "reserved field is {}, expected 0",
            u16_at(payload, 10)
        )));
    }
    let mut lb = [0u8; 8];
    lb.copy_from_slice(&payload[12..20]);
    let body_len = u64::from_le_bytes(lb);
    let actual = (payload.len() - hsize) as u64;
    if body_len != actual {
        let how = if actual < body_len {
            "truncated"
        } else {
            "extended"
        };
        return Err(damaged(format!(
            "body {how}: header records {body_len} bytes, {actual} present"
        )));
    }
    let body = &payload[hsize..];
    if Sha256::digest(body)[..] != payload[20..52] {
        return Err(damaged("body checksum (SHA-256) does not match"));
    }
    let graph =
        OperationGraph::from_bytes(body).map_err(|e| damaged(format!("graph: {}", e.message)))?;
    if major != VERSION_MAJOR {
        return Err(PluginError::not_applicable(format!(
            "{INCOMPATIBLE}format version {major}.{minor}, this build reads {VERSION_MAJOR}.x"
        )));
    }
    Ok(graph)
}
