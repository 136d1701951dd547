//! Pinned SHA-256 of every schema file, beside its format version.
//!
//! The hash is taken over the file's bytes with CRLF normalised to LF. A test recomputes each
//! hash and fails on any difference: a schema edit must update its pin here on purpose, and the
//! person editing decides whether the edit changes the format version (a wire change) or not.

/// SHA-256 (lowercase hex, LF-normalised) of `fbs/graph.fbs`.
pub const GRAPH_SCHEMA_SHA256: &str =
    "2038b615d98b37a3cb68a5de8ebf49678e7a6aaa283f52b8931831fa0daf5696";

/// SHA-256 of `fbs/execution_plan.fbs`.
pub const EXECUTION_PLAN_SCHEMA_SHA256: &str =
    "fb9dd67cffa44db92a836513e6654e8383c4e130360b98370c0aa4d743f8a0f4";

/// Envelope version this crate's writers put into `SerializedExecutionPlan.version`.
/// Version 2 adds `tensor_alignments`; readers accept 1 and 2.
pub const EXECUTION_PLAN_WRITE_VERSION: u32 = 2;

/// SHA-256 of `fbs/serialized_graph_and_plan.fbs`.
pub const GRAPH_AND_PLAN_SCHEMA_SHA256: &str =
    "62bc8040e2ca0c259e9caba75d14e54c61bcc55acbf7daf3e2f1607f44124c1b";

/// SHA-256 of `fbs/ingestor_plan.fbs` (upstream name `INGESTOR_PLAN_SCHEMA_SHA256`).
pub const INGESTOR_PLAN_SCHEMA_SHA256: &str =
    "1f95f29d9e4a8973d53c8d724101b2897d980143d883e757c8dc54adb1c2676f";

/// Ingestor payload format version (major, minor) written and read: 1.0.
pub const INGESTOR_PLAN_FORMAT_VERSION: (u16, u16) = (1, 0);

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    fn lf_sha256(name: &str) -> String {
        let path = format!("{}/fbs/{}", env!("CARGO_MANIFEST_DIR"), name);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        let mut lf = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                i += 1;
                continue;
            }
            lf.push(bytes[i]);
            i += 1;
        }
        hex::encode(Sha256::digest(&lf))
    }

    fn check(name: &str, pinned: &str, version_note: &str) {
        let got = lf_sha256(name);
        assert_eq!(
            got, pinned,
            "fbs/{name} changed (SHA-256 {got}, pinned {pinned}). A schema edit changes what \
             other builds can read: decide whether {version_note} must change, then update the \
             pin in schema/src/pins.rs and run schema/regenerate.sh"
        );
    }

    #[test]
    fn graph_schema_matches_its_pin() {
        check(
            "graph.fbs",
            super::GRAPH_SCHEMA_SHA256,
            "the Graph wire format",
        );
    }

    #[test]
    fn execution_plan_schema_matches_its_pin() {
        check(
            "execution_plan.fbs",
            super::EXECUTION_PLAN_SCHEMA_SHA256,
            "EXECUTION_PLAN_WRITE_VERSION",
        );
    }

    #[test]
    fn graph_and_plan_schema_matches_its_pin() {
        check(
            "serialized_graph_and_plan.fbs",
            super::GRAPH_AND_PLAN_SCHEMA_SHA256,
            "the HDGP container format",
        );
    }

    #[test]
    fn ingestor_plan_schema_matches_its_pin() {
        check(
            "ingestor_plan.fbs",
            super::INGESTOR_PLAN_SCHEMA_SHA256,
            "INGESTOR_PLAN_FORMAT_VERSION",
        );
    }
}
