//! The history of file changes on the wire: each change a file tool made (what the path held
//! before and after, who asked, in which chat turn), and undo — its request and its report,
//! with the three-way diff of a file that changed since Souz wrote it.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approvals::Requester;

/// What a path is, as the history recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    /// Nothing is there.
    Absent,
    /// A regular file.
    File,
    /// A folder.
    Folder,
    /// A symbolic link (kept as itself).
    Symlink,
    /// Something else (a pipe, a socket, a device).
    Other,
}

/// What a path held at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathSnapshot {
    /// What it was.
    pub kind: PathKind,
    /// Its size in bytes (files).
    pub size: Option<u64>,
    /// Its permission bits (`0o644` is 420).
    pub mode: Option<u32>,
    /// The SHA-256 of its content (files), hex.
    pub sha256: Option<String>,
    /// Whether its content is kept, so it can be restored (false for a file over
    /// `[history] max_file_bytes`, or a folder, which is restored from the Trash or by moving
    /// it back).
    pub kept: bool,
}

/// One path a change touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangedPath {
    /// The absolute path.
    pub path: String,
    /// What it held before the change.
    pub before: PathSnapshot,
    /// What it held after (`null` while the change is pending).
    pub after: Option<PathSnapshot>,
    /// Whether the folder was created on the way (a missing parent), not named by the call.
    pub created_parent: bool,
}

/// Where a change stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeStatus {
    /// Recorded before the write; the write has not been confirmed yet.
    Pending,
    /// Written and recorded.
    Done,
    /// Taken back by a later undo (`undoneBy`).
    Undone,
}

/// One recorded change: one tool call's effect on files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryChange {
    /// The change's id.
    pub id: i64,
    /// The gate's id of the call that made it (or of the undo).
    pub call_id: String,
    /// The tool (`EditFile`), or `Undo`.
    pub tool: String,
    /// Who asked for it.
    pub requester: Requester,
    /// The client, short: `souz` (Souz's own agents), the MCP client's token name
    /// (`claude-code`), `cli`, `api`, `skill:<id>`.
    pub client: String,
    /// The chat whose agent made it.
    pub chat_id: Option<String>,
    /// The chat execution (turn) it was made in.
    pub execution_id: Option<String>,
    /// What the call did, in one line.
    pub summary: String,
    /// Where it stands.
    pub status: ChangeStatus,
    /// For an undo: the change it took back.
    pub undoes: Option<i64>,
    /// The undo that took this change back.
    pub undone_by: Option<i64>,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
    /// The paths it touched.
    pub paths: Vec<ChangedPath>,
}

/// A page of changes, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryList {
    /// The changes.
    pub changes: Vec<HistoryChange>,
}

/// Which changes to undo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum UndoSelection {
    /// One change, by its id.
    Change {
        /// The change's id.
        id: i64,
    },
    /// The change a tool call made, by the call's id.
    Call {
        /// The gate's call id.
        call_id: String,
    },
    /// Every change one chat execution (turn) made.
    Turn {
        /// The execution's id.
        execution_id: String,
    },
    /// Every change since a time, of one client or of all.
    Since {
        /// From this time on.
        since: DateTime<Utc>,
        /// Only this client's (`claude-code`, `souz`, `cli`); all when absent.
        #[serde(default)]
        client: Option<String>,
    },
}

/// `POST /v1/history/undo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UndoRequest {
    /// Which changes.
    pub selection: UndoSelection,
    /// Restore anyway: also where a file changed since Souz wrote it (that content is kept
    /// by the undo's own record, so it can be brought back).
    #[serde(default)]
    pub force: bool,
}

/// `POST /v1/history/undo/check`: which changes to look at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UndoCheckRequest {
    /// Which changes.
    pub selection: UndoSelection,
}

/// What an undo of a selection would do now, without doing it: the changes it would take
/// back and the paths that changed since Souz wrote them (with these, an undo without `force`
/// refuses and undoes nothing).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UndoCheck {
    /// The ids of the changes it would take back, newest first.
    pub changes: Vec<i64>,
    /// Files that changed since Souz wrote them, with the three versions.
    pub conflicts: Vec<UndoConflict>,
}

/// A path that changed since Souz wrote it: the three versions, and diffs between them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UndoConflict {
    /// The change that would be undone.
    pub change_id: i64,
    /// The path.
    pub path: String,
    /// What it was before the change.
    pub before: PathSnapshot,
    /// What Souz wrote.
    pub wrote: PathSnapshot,
    /// What is there now.
    pub now: PathSnapshot,
    /// Unified diff from what was before to what Souz wrote (text files).
    pub souz_diff: Option<String>,
    /// Unified diff from what Souz wrote to what is there now (text files).
    pub since_diff: Option<String>,
}

/// One change undone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UndoneChange {
    /// The change taken back.
    pub change_id: i64,
    /// The undo's own change (undo it to bring the change back).
    pub undo_id: i64,
}

/// What an undo did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UndoReport {
    /// The changes taken back, newest first (the order they were undone in).
    pub undone: Vec<UndoneChange>,
    /// Files that changed since Souz wrote them: then nothing was undone (ask again with
    /// `force` to restore anyway).
    pub conflicts: Vec<UndoConflict>,
    /// What else a person should know (a folder kept because it is not empty, a change that
    /// cannot be restored).
    pub notes: Vec<String>,
}
