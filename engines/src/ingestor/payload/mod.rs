//! The saved ingestor plan payload: `HKIP` header ‖ `HKSP` FlatBuffers body (format 1.0).
//!
//! Owns the byte format, its encoder and its decoder with checks 1–10 (reference
//! `ingestor-payload.md` §1–§6). It never consults a device, an archive or a handler: those
//! checks belong to [`crate::ingestor::restore`] and [`crate::ingestor::capture`].

pub mod codec;
pub mod header;
pub mod refusal;

pub use codec::{
    BodySizeLimits, DecodedPayload, FLATBUFFERS_MAX_BUFFER_SIZE, FLATBUFFERS_MIN_BUFFER_SIZE,
    IngestorPlanPayload, decode_payload, decode_payload_in_place, decode_payload_with_limits,
    encode_payload, encode_payload_with_limits, is_lowercase_sha256_hex, seal_body, sha256_hex,
};
pub use header::{HEADER_SIZE, PayloadHeader, decode_header, encode_header};
