//! A chat turn's file changes as the shell shows them: how many recorded changes of a turn can
//! still be undone and how many files they touched (from `GET /v1/history?execution_id=`), the
//! words of the turn-end notification that says so, and the words of the notification that
//! reports an undo asked from it (undone, refused because files changed since, or failed).
//!
//! Invariants: only changes the history lists as `done` count (an undone one, or one still
//! being written, cannot be undone again); a path counts once however many changes of the turn
//! touched it, and folders created on the way do not count as files the turn changed; an undo
//! that met files changed since undid nothing, so its notification never says otherwise.

use std::collections::BTreeSet;

use souz_protocol::history::{ChangeStatus, HistoryChange, UndoReport};

use super::shorten;
use crate::texts::{counted, fill, tr};

/// What a turn changed that can still be undone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnChanges {
    /// Recorded changes that can be undone.
    pub changes: usize,
    /// The distinct files (paths) they touched.
    pub files: usize,
}

impl TurnChanges {
    /// Counts the changes of one turn as the history lists them.
    pub fn of(changes: &[HistoryChange]) -> Self {
        let undoable: Vec<&HistoryChange> = changes
            .iter()
            .filter(|change| change.status == ChangeStatus::Done)
            .collect();
        let files: BTreeSet<&str> = undoable
            .iter()
            .flat_map(|change| change.paths.iter())
            .filter(|path| !path.created_parent)
            .map(|path| path.path.as_str())
            .collect();
        Self {
            changes: undoable.len(),
            files: files.len(),
        }
    }

    /// Whether an undo has anything to take back (then the notification offers Undo).
    pub fn undoable(&self) -> bool {
        self.changes > 0
    }
}

/// The UI route of a chat.
pub fn chat_route(chat_id: &str) -> String {
    format!("/chat/{}", super::schedules::encode(chat_id))
}

/// The UI route of a turn's changes on the History page: its conflict view when an undo of it
/// met files changed since.
pub fn history_turn_route(execution_id: &str) -> String {
    format!("/history/turn/{}", super::schedules::encode(execution_id))
}

/// `count` files, in words.
fn files(count: usize) -> String {
    counted(count, "file", "files", ["файл", "файла", "файлов"])
}

/// `count` changes, in words.
fn changes(count: usize) -> String {
    counted(
        count,
        "change",
        "changes",
        ["изменение", "изменения", "изменений"],
    )
}

/// The chat, in words: its title, or "A chat".
fn chat_name(title: Option<&str>) -> String {
    match title {
        Some(title) if !title.trim().is_empty() => shorten(title, 80),
        _ => tr("A chat", "Чат").to_owned(),
    }
}

/// The turn-end notification's title and body: how it ended, the chat, and the files it
/// changed that can still be undone ("Trip — changed 3 files").
pub fn turn_ended_text(how: &str, title: Option<&str>, changed: TurnChanges) -> (String, String) {
    let heading = match how {
        "failed" => tr("Agent turn failed", "Ход агента не удался"),
        "cancelled" => tr("Agent turn cancelled", "Ход агента отменён"),
        _ => tr("Agent turn finished", "Ход агента завершён"),
    };
    let chat = chat_name(title);
    let body = if changed.undoable() {
        fill(
            tr("{chat} — changed {files}", "{chat} — агент изменил {files}"),
            &[("chat", &chat), ("files", &files(changed.files))],
        )
    } else {
        chat
    };
    (heading.to_owned(), body)
}

/// What came of an undo asked from a notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoOutcome {
    /// Changes were taken back (how many), with what else the person should know.
    Undone {
        /// Changes undone.
        changes: usize,
        /// The report's notes (a folder kept because it is not empty, ...).
        notes: Vec<String>,
    },
    /// Nothing was undone: these many files changed since Souz wrote them.
    Conflicts {
        /// Distinct paths in conflict.
        files: usize,
    },
    /// The undo could not be asked or was refused (already undone, no history, ...).
    Failed(String),
}

impl UndoOutcome {
    /// Reads the daemon's answer to an undo without `force`.
    pub fn of(answer: Result<UndoReport, String>) -> Self {
        match answer {
            Ok(report) if report.undone.is_empty() && !report.conflicts.is_empty() => {
                let paths: BTreeSet<&str> = report
                    .conflicts
                    .iter()
                    .map(|conflict| conflict.path.as_str())
                    .collect();
                Self::Conflicts { files: paths.len() }
            }
            Ok(report) => Self::Undone {
                changes: report.undone.len(),
                notes: report.notes,
            },
            Err(error) => Self::Failed(error),
        }
    }

    /// Whether the window should open at the turn's conflict view.
    pub fn shows_conflicts(&self) -> bool {
        matches!(self, Self::Conflicts { .. })
    }
}

/// The notification's title and body for an undo's outcome.
pub fn undo_text(outcome: &UndoOutcome) -> (String, String) {
    match outcome {
        UndoOutcome::Undone {
            changes: count,
            notes,
        } => {
            let (heading, mut body) = if *count == 0 {
                (
                    tr("Nothing was undone", "Ничего не отменено").to_owned(),
                    String::new(),
                )
            } else {
                (
                    fill(
                        tr("Undid {changes}", "Отменено: {changes}"),
                        &[("changes", &changes(*count))],
                    ),
                    tr(
                        "The files are as they were before the turn.",
                        "Файлы снова такие, какими были до хода.",
                    )
                    .to_owned(),
                )
            };
            for note in notes {
                if !body.is_empty() {
                    body.push('\n');
                }
                body.push_str(&shorten(note, 200));
            }
            (heading, body)
        }
        UndoOutcome::Conflicts { files: count } => (
            tr("Could not undo", "Не удалось отменить").to_owned(),
            fill(
                tr(
                    "{files} changed since — open History",
                    "После хода изменились файлы ({count}) — откройте Историю",
                ),
                &[("files", &files(*count)), ("count", &count.to_string())],
            ),
        ),
        UndoOutcome::Failed(error) => (
            tr("Could not undo", "Не удалось отменить").to_owned(),
            shorten(error, 200),
        ),
    }
}

#[cfg(test)]
mod tests;
