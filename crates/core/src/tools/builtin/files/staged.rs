//! The staged state of files in review mode (see [`crate::history::review`]): what the paths
//! that a review's undecided staged changes write will hold once those changes are applied in
//! staging order. A write staged into a review that already holds changes to its paths is
//! planned against this state instead of the disk: `EditFile` edits the staged content,
//! `NewFile` may create a path a staged change removes and not one a staged change creates,
//! `MoveFile` and `DeleteFile` find their source where the staged changes leave it (and size a
//! file by its staged content).
//!
//! The state is replayed from the staged calls' arguments, each path starting from the disk
//! now, which must still hold the base of the first change that writes it. Souz's own file
//! tools are replayed exactly: an `EditFile` by the same replacement its plan makes, a
//! `NewFile` as its content (a file's mode is then whatever its creation gives it), a
//! `MoveFile` and a `DeleteFile` by where things are.
//!
//! Invariants:
//! - Planning against it writes nothing, and nothing but a staged call's plan reads it (the
//!   gate sets [`crate::tools::ToolContext::staged`] only for a write it is about to stage).
//! - A path whose staged state cannot be known is [`StagedEntry::Unknown`], and a file tool
//!   refuses to plan a write to it, saying why: the disk no longer holds what an earlier staged
//!   change was staged on (or that change no longer fits it), a tool whose writes cannot be
//!   replayed wrote it, or it is inside a folder a staged change moves.
//! - What is under a path the staged changes remove is absent with it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;
use souz_protocol::history::PathKind;

use super::edit_file::{self, EditFileArgs};
use super::move_file::MoveFileArgs;
use super::new_file::{self, NewFileArgs};
use crate::history::review::{Base, StoredStaged};
use crate::history::snapshot::capture;
use crate::sandbox::{ResolvedPath, Sandbox, SandboxError};
use crate::tools::ToolError;

/// The tools that plan against the staged state (and whose staged calls it replays); a call
/// of any other tool is not staged on a path the staged changes write.
const PLANNING_ON_STAGED: [&str; 4] = ["NewFile", "EditFile", "MoveFile", "DeleteFile"];

/// Whether `tool` plans against the staged state.
pub(crate) fn plans_on_staged(tool: &str) -> bool {
    PLANNING_ON_STAGED.contains(&tool)
}

/// What a path holds once the staged changes are applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StagedEntry {
    /// Nothing: a staged change removes or moves it away.
    Absent,
    /// A file with this content, and these permission bits (`None`: a file a staged `NewFile`
    /// creates, whose bits its creation gives it).
    File {
        content: Arc<Vec<u8>>,
        mode: Option<u32>,
    },
    /// A folder; `moved` when a staged move brings it there (what is inside is then known only
    /// once the move is applied).
    Folder { moved: bool },
    /// Something Souz cannot know before the staged changes are decided.
    Unknown(Unknown),
}

/// Why a staged state is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// The disk no longer holds what an earlier change was staged on, or that change does not
    /// fit it.
    NoLongerFits,
    /// A change Souz cannot replay writes it (another tool, a folder moved around it, not a
    /// file Souz can read whole).
    Opaque,
}

impl Unknown {
    /// The refusal of a write to `shown` planned on top of it.
    pub(crate) fn refusal(self, shown: &str) -> ToolError {
        ToolError::Conflict(match self {
            Self::NoLongerFits => format!(
                "`{shown}` has changes staged for review that no longer fit the file as it is \
                 on disk (it changed since they were staged), so no further change to it can be \
                 staged until the person decides the review"
            ),
            Self::Opaque => format!(
                "`{shown}` has changes staged for review that Souz cannot build on, so no \
                 further change to it can be staged until the person decides the review"
            ),
        })
    }
}

impl StagedEntry {
    /// Whether something is there.
    fn exists(&self) -> bool {
        !matches!(self, Self::Absent)
    }
}

/// The staged state of every path a review's undecided changes write.
#[derive(Debug, Default)]
pub(crate) struct StagedFiles {
    entries: BTreeMap<PathBuf, StagedEntry>,
}

impl StagedFiles {
    /// Replays `changes` (a review's undecided changes, in staging order) over the disk in
    /// `sandbox`; files are read whole up to `limit` bytes (the history's, as their bases were).
    pub(crate) fn replay(sandbox: &Sandbox, changes: &[StoredStaged], limit: u64) -> Self {
        let mut staged = Self::default();
        for change in changes {
            staged.apply(sandbox, change, limit);
        }
        staged
    }

    /// Whether no path has a staged state.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What `path` holds once the staged changes are applied; `None` when they leave it as the
    /// disk has it.
    pub(crate) fn entry(&self, path: &Path) -> Option<StagedEntry> {
        if let Some(entry) = self.entries.get(path) {
            return Some(entry.clone());
        }
        for ancestor in path.ancestors().skip(1) {
            match self.entries.get(ancestor) {
                None | Some(StagedEntry::Folder { moved: false }) => {}
                Some(StagedEntry::Absent) => return Some(StagedEntry::Absent),
                Some(_) => return Some(StagedEntry::Unknown(Unknown::Opaque)),
            }
        }
        None
    }

    /// The base of `path` for a change staged on top of these: what it holds once they are
    /// applied (`Err` when that cannot be known); `None` when they leave it as the disk has it.
    pub(crate) fn base(&self, path: &Path) -> Option<Result<Base, Unknown>> {
        let path_buf = path.to_path_buf();
        self.entry(path).map(|entry| match entry {
            StagedEntry::Absent => Ok(Base::absent(path_buf)),
            StagedEntry::File { content, mode } => Ok(Base::file(path_buf, &content, mode)),
            StagedEntry::Folder { moved: false } => Ok(Base::folder(path_buf)),
            StagedEntry::Folder { moved: true } => Err(Unknown::Opaque),
            StagedEntry::Unknown(unknown) => Err(unknown),
        })
    }

    /// Applies one staged change to the staged state.
    fn apply(&mut self, sandbox: &Sandbox, change: &StoredStaged, limit: u64) {
        let first = change.base.first();
        match (change.tool.as_str(), first) {
            ("EditFile", Some(base)) => {
                let next = match (
                    self.current(sandbox, base, limit),
                    arguments::<EditFileArgs>(&change.arguments),
                ) {
                    (StagedEntry::File { content, mode }, Some(args)) => {
                        match edit_file::edited(content.to_vec(), &args) {
                            Ok(replacement) => StagedEntry::File {
                                content: Arc::new(replacement.updated_raw.into_bytes()),
                                mode,
                            },
                            Err(_) => StagedEntry::Unknown(Unknown::NoLongerFits),
                        }
                    }
                    (StagedEntry::Unknown(unknown), _) => StagedEntry::Unknown(unknown),
                    _ => StagedEntry::Unknown(Unknown::NoLongerFits),
                };
                self.entries.insert(base.path.clone(), next);
            }
            ("NewFile", Some(base)) => {
                let next = match (
                    self.current(sandbox, base, limit),
                    arguments::<NewFileArgs>(&change.arguments),
                ) {
                    (StagedEntry::Absent, Some(args)) if new_file::names_folder(&args.path) => {
                        StagedEntry::Folder { moved: false }
                    }
                    (StagedEntry::Absent, Some(args)) => StagedEntry::File {
                        content: Arc::new(args.text.into_bytes()),
                        mode: None,
                    },
                    (StagedEntry::Unknown(unknown), _) => StagedEntry::Unknown(unknown),
                    _ => StagedEntry::Unknown(Unknown::NoLongerFits),
                };
                self.entries.insert(base.path.clone(), next);
            }
            ("MoveFile", Some(source))
                if change.base.len() == 2
                    && arguments::<MoveFileArgs>(&change.arguments).is_some() =>
            {
                let destination = &change.base[1];
                let moved = match (
                    self.current(sandbox, source, limit),
                    self.current(sandbox, destination, limit),
                ) {
                    (StagedEntry::Unknown(unknown), _) | (_, StagedEntry::Unknown(unknown)) => {
                        StagedEntry::Unknown(unknown)
                    }
                    (StagedEntry::Absent, _) => StagedEntry::Unknown(Unknown::NoLongerFits),
                    (_, taken) if taken.exists() => StagedEntry::Unknown(Unknown::NoLongerFits),
                    (StagedEntry::Folder { .. }, _) => StagedEntry::Folder { moved: true },
                    (entry, _) => entry,
                };
                // What was staged inside the source goes with it.
                let inside: Vec<(PathBuf, StagedEntry)> = self
                    .remove_inside(&source.path)
                    .into_iter()
                    .filter_map(|(path, entry)| {
                        let relative = path.strip_prefix(&source.path).ok()?.to_path_buf();
                        Some((destination.path.join(relative), entry))
                    })
                    .collect();
                self.remove_inside(&destination.path);
                self.entries.extend(inside);
                self.entries.insert(destination.path.clone(), moved);
                self.entries
                    .insert(source.path.clone(), StagedEntry::Absent);
            }
            ("DeleteFile", Some(base)) => {
                let next = match self.current(sandbox, base, limit) {
                    StagedEntry::Unknown(unknown) => StagedEntry::Unknown(unknown),
                    entry if entry.exists() => StagedEntry::Absent,
                    _ => StagedEntry::Unknown(Unknown::NoLongerFits),
                };
                self.remove_inside(&base.path);
                self.entries.insert(base.path.clone(), next);
            }
            _ => {
                for base in &change.base {
                    self.entries
                        .insert(base.path.clone(), StagedEntry::Unknown(Unknown::Opaque));
                }
            }
        }
    }

    /// What `base`'s path holds before the change staged on `base` is applied: its staged
    /// state, or the disk's when it still holds `base` (unknown otherwise).
    fn current(&self, sandbox: &Sandbox, base: &Base, limit: u64) -> StagedEntry {
        if let Some(entry) = self.entry(&base.path) {
            return entry;
        }
        let Ok(captured) = capture(&sandbox.beneath(), &base.path, limit) else {
            return StagedEntry::Unknown(Unknown::NoLongerFits);
        };
        if !base.holds(&captured.snapshot) {
            return StagedEntry::Unknown(Unknown::NoLongerFits);
        }
        match (captured.snapshot.kind, captured.content) {
            (PathKind::Absent, _) => StagedEntry::Absent,
            (PathKind::File, Some(content)) => StagedEntry::File {
                content: Arc::new(content),
                mode: captured.snapshot.mode,
            },
            (PathKind::Folder, _) => StagedEntry::Folder { moved: false },
            _ => StagedEntry::Unknown(Unknown::Opaque),
        }
    }

    /// Removes the entries strictly inside `path`, returning them.
    fn remove_inside(&mut self, path: &Path) -> Vec<(PathBuf, StagedEntry)> {
        let inside: Vec<PathBuf> = self
            .entries
            .keys()
            .filter(|key| key.as_path() != path && key.starts_with(path))
            .cloned()
            .collect();
        inside
            .into_iter()
            .filter_map(|key| self.entries.remove(&key).map(|entry| (key, entry)))
            .collect()
    }
}

/// A staged call's arguments as its tool reads them.
fn arguments<T: DeserializeOwned>(arguments: &Value) -> Option<T> {
    serde_json::from_value(arguments.clone()).ok()
}

/// The staged state of `path` (resolved from `raw`) for a tool about to remove it from its
/// place (`DeleteFile`, a `MoveFile`'s source): refuses one the staged changes remove, one they
/// alone create (not on disk yet) and one whose state is unknown; `None` when they leave it as
/// the disk has it.
pub(super) fn for_removal(
    staged: &StagedFiles,
    sandbox: &Sandbox,
    resolved: &ResolvedPath,
    raw: &str,
) -> Result<Option<StagedEntry>, ToolError> {
    let Some(entry) = staged.entry(&resolved.path) else {
        return Ok(None);
    };
    let shown = sandbox.display(&resolved.path);
    match entry {
        StagedEntry::Absent => Err(SandboxError::NotFound(raw.to_owned()).into()),
        StagedEntry::Unknown(unknown) => Err(unknown.refusal(&shown)),
        _ if !resolved.exists => Err(ToolError::Conflict(format!(
            "`{shown}` exists only as a change staged for review (not written yet), so it \
             cannot be moved or deleted until the person applies that change"
        ))),
        entry => Ok(Some(entry)),
    }
}

/// The staged size of a file, for a plan's summary.
pub(super) fn size_of(entry: Option<&StagedEntry>) -> Option<u64> {
    match entry {
        Some(StagedEntry::File { content, .. }) => Some(content.len() as u64),
        _ => None,
    }
}
