//! Refusal categories of the ingestor payload and their stable message prefixes.
//!
//! Upstream source: `serialization/IngestorPlanRefusal.hpp` (reference `ingestor-payload.md` §6,
//! §7). This module only builds [`PluginError`]s; it never decides what is damaged.

use hipdnn_backend::status::{PluginError, PluginStatus};

/// Prefix of every damaged-payload refusal (status `INVALID_VALUE`).
pub const DAMAGED_PREFIX: &str = "ingestor plan data is damaged: ";
/// Prefix of every incompatible-payload refusal (status `NOT_APPLICABLE`), load and save.
pub const INCOMPATIBLE_PREFIX: &str = "ingestor plan is valid but cannot be saved or loaded here: ";
/// Prefix of writer faults (status `INTERNAL_ERROR`).
pub const ENCODE_PREFIX: &str = "cannot encode the ingestor plan: ";
/// Prefix of a save refused because the kernel source disagrees with its descriptor
/// (status `INVALID_VALUE`).
pub const SAVE_DAMAGED_PREFIX: &str =
    "cannot save this plan: its kernel source does not match its descriptor: ";
/// Prefix of a save refused because the plan cannot be saved here (status `NOT_APPLICABLE`).
pub const SAVE_REFUSED_PREFIX: &str = "cannot save this plan here: ";

/// Longest payload text quoted verbatim in a message, in characters.
pub const QUOTE_LIMIT: usize = 80;

/// `INVALID_VALUE` with [`DAMAGED_PREFIX`].
pub fn damaged(what: impl AsRef<str>) -> PluginError {
    PluginError::new(
        PluginStatus::InvalidValue,
        format!("{DAMAGED_PREFIX}{}", what.as_ref()),
    )
}

/// `NOT_APPLICABLE` with [`INCOMPATIBLE_PREFIX`].
pub fn incompatible(what: impl AsRef<str>) -> PluginError {
    PluginError::new(
        PluginStatus::NotApplicable,
        format!("{INCOMPATIBLE_PREFIX}{}", what.as_ref()),
    )
}

/// `INTERNAL_ERROR` with [`ENCODE_PREFIX`].
pub fn encode_fault(what: impl AsRef<str>) -> PluginError {
    PluginError::new(
        PluginStatus::InternalError,
        format!("{ENCODE_PREFIX}{}", what.as_ref()),
    )
}

/// `NOT_APPLICABLE` with [`SAVE_REFUSED_PREFIX`].
pub fn save_refused(what: impl AsRef<str>) -> PluginError {
    PluginError::new(
        PluginStatus::NotApplicable,
        format!("{SAVE_REFUSED_PREFIX}{}", what.as_ref()),
    )
}

/// `INVALID_VALUE` with [`SAVE_DAMAGED_PREFIX`].
pub fn save_damaged(what: impl AsRef<str>) -> PluginError {
    PluginError::new(
        PluginStatus::InvalidValue,
        format!("{SAVE_DAMAGED_PREFIX}{}", what.as_ref()),
    )
}

/// Payload text as quoted in messages: at most [`QUOTE_LIMIT`] characters, a longer text cut
/// and followed by `... (<len> characters)` (reference §6).
pub fn quote(text: &str) -> String {
    let len = text.chars().count();
    if len <= QUOTE_LIMIT {
        text.to_string()
    } else {
        let cut: String = text.chars().take(QUOTE_LIMIT).collect();
        format!("{cut}... ({len} characters)")
    }
}
