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

/// Declares one refusal constructor per `name => status, prefix` row: each builds a
/// [`PluginError`] of that status whose message is the prefix, then the given text.
macro_rules! refusals {
    ($($(#[$doc:meta])* $name:ident => $status:ident, $prefix:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(what: impl AsRef<str>) -> PluginError {
            PluginError::new(PluginStatus::$status, format!("{}{}", $prefix, what.as_ref()))
        }
    )*};
}

refusals! {
    /// `INVALID_VALUE` with [`DAMAGED_PREFIX`].
    damaged => InvalidValue, DAMAGED_PREFIX;
    /// `NOT_APPLICABLE` with [`INCOMPATIBLE_PREFIX`].
    incompatible => NotApplicable, INCOMPATIBLE_PREFIX;
    /// `INTERNAL_ERROR` with [`ENCODE_PREFIX`].
    encode_fault => InternalError, ENCODE_PREFIX;
    /// `NOT_APPLICABLE` with [`SAVE_REFUSED_PREFIX`].
    save_refused => NotApplicable, SAVE_REFUSED_PREFIX;
    /// `INVALID_VALUE` with [`SAVE_DAMAGED_PREFIX`].
    save_damaged => InvalidValue, SAVE_DAMAGED_PREFIX;
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
