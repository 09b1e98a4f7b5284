//! What an undo shows for a path that changed since Souz wrote it: the three versions (before
//! the change, what Souz wrote, what is there now) and, for text files whose contents are
//! kept, the diffs from before to what Souz wrote and from that to now.

use souz_protocol::history::{PathKind, UndoConflict};

use super::super::History;
use super::super::records::StoredPath;
use super::super::snapshot::{Snapshot, capture};
use crate::sandbox::Sandbox;
use crate::tools::builtin::files::diff;

/// Largest file whose text is diffed.
const DIFF_FILE_LIMIT: u64 = 1 << 20;

/// The conflict of `path` (of change `change_id`), which now holds `current`.
pub(super) fn describe(
    history: &History,
    sandbox: &Sandbox,
    change_id: i64,
    path: &StoredPath,
    current: &Snapshot,
) -> UndoConflict {
    let wrote = path.after.clone().unwrap_or_else(Snapshot::absent);
    let shown = sandbox.display(&path.path);
    let before_text = text_of(history, &path.before);
    let wrote_text = text_of(history, &wrote);
    let now_text = current_text(sandbox, &path.path, current);
    let diff_of = |old: &Option<String>, new: &Option<String>| match (old, new) {
        (Some(old), Some(new)) => Some(diff::unified(&shown, old, new)),
        _ => None,
    };
    UndoConflict {
        change_id,
        path: path.path.to_string_lossy().into_owned(),
        before: path.before.wire(),
        wrote: wrote.wire(),
        now: current.wire(),
        souz_diff: diff_of(&before_text, &wrote_text),
        since_diff: diff_of(&wrote_text, &now_text),
    }
}

/// The text a snapshot recorded: empty for nothing, the kept content of a UTF-8 file.
fn text_of(history: &History, snapshot: &Snapshot) -> Option<String> {
    match snapshot.kind {
        PathKind::Absent => Some(String::new()),
        PathKind::File if snapshot.kept && snapshot.size.unwrap_or(0) <= DIFF_FILE_LIMIT => {
            let hash = snapshot.hash.as_deref()?;
            let content = history.blobs().get(hash, DIFF_FILE_LIMIT).ok()?;
            String::from_utf8(content).ok()
        }
        _ => None,
    }
}

/// The text at `path` now.
fn current_text(sandbox: &Sandbox, path: &std::path::Path, current: &Snapshot) -> Option<String> {
    match current.kind {
        PathKind::Absent => Some(String::new()),
        PathKind::File if current.size.unwrap_or(0) <= DIFF_FILE_LIMIT => {
            let captured = capture(&sandbox.beneath(), path, DIFF_FILE_LIMIT).ok()?;
            String::from_utf8(captured.content?).ok()
        }
        _ => None,
    }
}
