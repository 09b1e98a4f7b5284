//! The settings editor on the wire (`GET/PUT/PATCH /v1/config`) and the pause switch
//! (`GET/PUT /v1/pause`): the text of `config.toml` with its schema, validation problems with
//! their positions, and what a saved change did.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ErrorDetail;

/// `GET /v1/config`: the file, its schema for a form, and what applies without a restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigDocument {
    /// Where the file is.
    pub path: String,
    /// Its text, exactly as stored (the commented template when it does not exist yet).
    pub text: String,
    /// A fingerprint of `text`; send it back as `revision` with a change so a save cannot
    /// overwrite a change made meanwhile (by another window or an `always` approval).
    pub revision: String,
    /// Every section and key, in file order.
    pub sections: Vec<ConfigSection>,
    /// Keys whose change this daemon applies without a restart (`section.key`).
    pub live_keys: Vec<String>,
    /// Changes saved since the daemon started that wait for a restart (`section.key`).
    pub pending_restart: Vec<String>,
}

/// One `[section]` of the schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSection {
    /// Section name.
    pub name: String,
    /// What it is for.
    pub doc: String,
    /// Its keys.
    pub keys: Vec<ConfigKey>,
}

/// One key of the schema with its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigKey {
    /// Key name.
    pub name: String,
    /// Documentation.
    pub doc: String,
    /// The default, as TOML.
    pub default: String,
    /// The value the file sets (after environment overrides), as JSON.
    pub value: serde_json::Value,
    /// Whether the file sets it explicitly (otherwise the default applies).
    pub set_in_file: bool,
    /// `string`, `integer`, `float`, `boolean`, `list` or `table`: how a form edits it.
    pub kind: String,
    /// Whether a change applies without a restart.
    pub live: bool,
    /// The environment variable that overrides it, if one is set.
    pub overridden_by: Option<String>,
}

/// `PUT /v1/config`: the whole new file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigReplace {
    /// The new text of `config.toml`.
    pub text: String,
    /// The `revision` the edit started from (as `GET /v1/config` said it); a mismatch is 409
    /// and nothing is written. Its former name `baseRevision` is accepted until the next
    /// release.
    #[serde(default, alias = "baseRevision")]
    pub revision: Option<String>,
}

/// `PATCH /v1/config`: set or reset single keys, keeping the rest of the file (and its
/// comments) as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigPatch {
    /// The changes, applied in order.
    pub set: Vec<ConfigValue>,
    /// The `revision` the edit started from (as `GET /v1/config` said it); a mismatch is 409
    /// and nothing is written. Its former name `baseRevision` is accepted until the next
    /// release.
    #[serde(default, alias = "baseRevision")]
    pub revision: Option<String>,
}

/// One key to set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigValue {
    /// Section name.
    pub section: String,
    /// Key name.
    pub key: String,
    /// The new value as JSON (string, number, boolean, list); `null` removes the key so the
    /// default applies.
    pub value: serde_json::Value,
}

/// A saved change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSaved {
    /// The new revision.
    pub revision: String,
    /// Changed keys now in effect (`section.key`).
    pub applied: Vec<String>,
    /// Changed keys that take effect at the next start (`section.key`).
    pub restart_required: Vec<String>,
    /// Where the previous version was kept.
    pub backup: String,
}

/// One problem with a proposed `config.toml`, with its position in the text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigProblem {
    /// Line, from 1 (`null` when the problem is not in the text, e.g. an environment variable).
    pub line: Option<usize>,
    /// Column in characters, from 1.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// `FILE:LINE:COL: message`, as `souz config check` prints it.
    pub display: String,
}

/// The 400 body of a rejected change: the usual error envelope plus every problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigRejected {
    /// `invalid_request` and a summary.
    pub error: ErrorDetail,
    /// Every problem, in file order.
    pub problems: Vec<ConfigProblem>,
    /// The text that was validated (for a `PATCH`, the file with the changes applied).
    pub text: String,
}

/// `GET /v1/pause` and the answer to `PUT /v1/pause`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PauseState {
    /// Whether Souz is paused.
    pub paused: bool,
    /// Since when, if paused.
    pub since: Option<chrono::DateTime<chrono::Utc>>,
}

/// `PUT /v1/pause`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetPause {
    /// Pause (`true`) or resume (`false`).
    pub paused: bool,
    /// Where the person did it (`tray`, `ui`, `api`, `cli`); for the event.
    pub via: Option<String>,
}
