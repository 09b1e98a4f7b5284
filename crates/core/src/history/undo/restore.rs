//! Bringing one change's paths back to what they held before it (see [`super`]): a move is
//! moved back, removals go deepest first, restorations shallowest first, and the folders the
//! change created on the way are removed last, when empty.

use std::cell::RefCell;
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use souz_protocol::history::PathKind;

use super::super::records::{StoredChange, StoredPath};
use super::super::snapshot::{Snapshot, capture, fingerprint};
use super::super::{History, HistoryError, blobs::hash_of};
use super::staging::Staging;
use crate::sandbox::Sandbox;
use crate::sandbox::beneath::{Beneath, open_child_dir, open_child_file};
use crate::tools::builtin::files::{atomic, trashing};

/// The fingerprint of an empty folder (the SHA-256 of nothing).
const EMPTY_FOLDER: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Restores `change`'s paths, taking the file contents `staging` holds ready; returns notes
/// for the person (what could not be done fully).
pub(super) fn restore(
    history: &History,
    sandbox: &Sandbox,
    change: &StoredChange,
    staging: &RefCell<Staging>,
) -> Result<Vec<String>, HistoryError> {
    let work = Restorer {
        history,
        sandbox,
        beneath: sandbox.beneath(),
        change,
        staging,
    };
    let mut notes = Vec::new();
    let mut rest: Vec<&StoredPath> = change
        .paths
        .iter()
        .filter(|path| !path.created_parent)
        .collect();
    if let Some((from, to)) = move_pair(&rest) {
        let moved = work.move_back(from, to)?;
        if moved {
            rest.retain(|path| path.path != from.path && path.path != to.path);
        }
    }
    rest.sort_by_key(|path| path.path.components().count());
    for path in rest.iter().rev().filter(|path| !path.before.exists()) {
        let current = work.look(&path.path)?;
        work.make_absent(&path.path, &current, &mut notes)?;
    }
    for path in rest.iter().filter(|path| path.before.exists()) {
        work.bring_back(path, &mut notes)?;
    }
    let mut parents: Vec<&StoredPath> = change
        .paths
        .iter()
        .filter(|path| path.created_parent && !path.before.exists())
        .collect();
    parents.sort_by_key(|path| std::cmp::Reverse(path.path.components().count()));
    for parent in parents {
        if work.look(&parent.path)?.kind != PathKind::Folder {
            continue;
        }
        match work.beneath.remove_dir(&parent.path) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::DirectoryNotEmpty => notes.push(format!(
                "kept the folder {}: it holds other things now",
                sandbox.display(&parent.path)
            )),
            Err(error) => return Err(work.failed(&parent.path, &error)),
        }
    }
    Ok(notes)
}

/// The vanished and the appeared path of a move (exactly one of each, of one kind).
fn move_pair<'a>(paths: &[&'a StoredPath]) -> Option<(&'a StoredPath, &'a StoredPath)> {
    let after_exists = |path: &StoredPath| path.after.as_ref().map(Snapshot::exists);
    let vanished: Vec<&StoredPath> = paths
        .iter()
        .copied()
        .filter(|path| path.before.exists() && after_exists(path) == Some(false))
        .collect();
    let appeared: Vec<&StoredPath> = paths
        .iter()
        .copied()
        .filter(|path| !path.before.exists() && after_exists(path) == Some(true))
        .collect();
    match (vanished.as_slice(), appeared.as_slice()) {
        ([from], [to]) if to.after.as_ref().map(|after| after.kind) == Some(from.before.kind) => {
            Some((*from, *to))
        }
        _ => None,
    }
}

struct Restorer<'a> {
    history: &'a History,
    sandbox: &'a Sandbox,
    beneath: Beneath<'a>,
    change: &'a StoredChange,
    staging: &'a RefCell<Staging>,
}

impl Restorer<'_> {
    fn look(&self, path: &Path) -> Result<Snapshot, HistoryError> {
        capture(&self.beneath, path, self.history.limits().max_file_bytes)
            .map(|captured| captured.snapshot)
            .map_err(|error| self.failed(path, &error))
    }

    fn failed(&self, path: &Path, error: &dyn std::fmt::Display) -> HistoryError {
        HistoryError::Path {
            path: self.sandbox.display(path),
            message: error.to_string(),
        }
    }

    /// Moves `to` (where the change moved it) back to `from`; false when that is not how
    /// things are (then each path is restored on its own).
    fn move_back(&self, from: &StoredPath, to: &StoredPath) -> Result<bool, HistoryError> {
        if !self.look(&to.path)?.exists() || self.look(&from.path)?.exists() {
            return Ok(false);
        }
        self.parents_of(&from.path)?;
        atomic::move_path(&self.beneath, &to.path, &from.path)
            .map_err(|error| self.failed(&from.path, &error))?;
        Ok(true)
    }

    fn parents_of(&self, path: &Path) -> Result<(), HistoryError> {
        if let Some(parent) = path.parent() {
            self.beneath
                .create_dir_all(parent)
                .map_err(|error| self.failed(parent, &error))?;
        }
        Ok(())
    }

    /// Removes what is at `path`: a file whose content the undo's record kept, a link, an
    /// empty folder; anything else goes to the Trash.
    fn make_absent(
        &self,
        path: &Path,
        current: &Snapshot,
        notes: &mut Vec<String>,
    ) -> Result<(), HistoryError> {
        let removed = match current.kind {
            PathKind::Absent => return Ok(()),
            PathKind::File if current.kept => self.beneath.remove_file(path),
            PathKind::Symlink | PathKind::Other => self.beneath.remove_file(path),
            PathKind::Folder => match self.beneath.remove_dir(path) {
                Err(error) if error.kind() == io::ErrorKind::DirectoryNotEmpty => Err(error),
                other => other,
            },
            PathKind::File => Err(io::Error::from(io::ErrorKind::FileTooLarge)),
        };
        match removed {
            Ok(()) => Ok(()),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::DirectoryNotEmpty | io::ErrorKind::FileTooLarge
                ) =>
            {
                trashing::move_to_trash(self.sandbox, path)
                    .map_err(|message| self.failed(path, &message))?;
                notes.push(format!(
                    "moved {} to the Trash (it could not be kept in the history)",
                    self.sandbox.display(path)
                ));
                Ok(())
            }
            Err(error) => Err(self.failed(path, &error)),
        }
    }

    /// Brings `path` back to its before-state.
    fn bring_back(&self, path: &StoredPath, notes: &mut Vec<String>) -> Result<(), HistoryError> {
        let before = &path.before;
        let current = self.look(&path.path)?;
        if before.matches(&current)
            || (before.kind == PathKind::Folder && current.kind == before.kind)
        {
            return Ok(());
        }
        if current.exists()
            && !(before.kind == PathKind::File && current.kind == PathKind::File && current.kept)
        {
            self.make_absent(&path.path, &current, notes)?;
        }
        self.parents_of(&path.path)?;
        let absent_now = !self.look(&path.path)?.exists();
        if absent_now && self.out_of_trash(path)? {
            return Ok(());
        }
        match before.kind {
            PathKind::File if before.kept => {
                let hash = before.hash.as_deref().unwrap_or_default();
                let mode = before.mode.unwrap_or(0o644);
                let staged = self
                    .staging
                    .borrow_mut()
                    .put(&self.beneath, &path.path, hash, mode)
                    .map_err(|error| self.failed(&path.path, &error))?;
                if staged {
                    return Ok(());
                }
                let content = self
                    .history
                    .blobs()
                    .get(hash, self.history.limits().max_file_bytes)?;
                atomic::write_with_mode(&self.beneath, &path.path, &content, mode)
                    .map_err(|error| self.failed(&path.path, &error))
            }
            PathKind::Symlink => {
                let (parent, name) = self
                    .beneath
                    .open_parent(&path.path)
                    .map_err(|error| self.failed(&path.path, &error))?;
                let target = before.link.clone().unwrap_or_default();
                rustix::fs::symlinkat(target.as_slice(), &parent, name)
                    .map_err(|error| self.failed(&path.path, &error))
            }
            PathKind::Folder if before.hash.as_deref() == Some(EMPTY_FOLDER) && absent_now => {
                self.beneath
                    .create_dir(&path.path)
                    .map_err(|error| self.failed(&path.path, &error))?;
                if let Some(mode) = before.mode {
                    let folder = self
                        .beneath
                        .open_dir(&path.path)
                        .map_err(|error| self.failed(&path.path, &error))?;
                    let _ = rustix::fs::fchmod(&folder, rustix::fs::Mode::from_bits_truncate(mode));
                }
                Ok(())
            }
            _ => {
                notes.push(format!(
                    "could not restore {}: its content was not kept (too large, or a folder no \
                     longer in the Trash)",
                    self.sandbox.display(&path.path)
                ));
                Ok(())
            }
        }
    }

    /// Brings `path` back from the Trash when it was trashed by the change and is there with
    /// the same content (a file) or tree (a folder).
    fn out_of_trash(&self, path: &StoredPath) -> Result<bool, HistoryError> {
        let trashed = path.after.as_ref().is_some_and(|after| !after.exists());
        let before = &path.before;
        if !trashed || !matches!(before.kind, PathKind::File | PathKind::Folder) {
            return Ok(false);
        }
        let limit = self.history.limits().max_file_bytes;
        let check = |files: BorrowedFd<'_>, name: &OsStr| same_item(files, name, before, limit);
        let since =
            (self.change.created_at - chrono::Duration::seconds(2)).with_timezone(&chrono::Local);
        trashing::restore_from_trash(self.sandbox, &path.path, since, &check)
            .map_err(|error| self.failed(&path.path, &error))
    }
}

/// Whether the Trash's item `name` is what `before` recorded.
fn same_item(files: BorrowedFd<'_>, name: &OsStr, before: &Snapshot, limit: u64) -> bool {
    match before.kind {
        PathKind::File => {
            let Ok(file) = open_child_file(files, name) else {
                return false;
            };
            if !before.kept {
                return rustix::fs::fstat(&file)
                    .is_ok_and(|stat| u64::try_from(stat.st_size).ok() == before.size);
            }
            let mut content = Vec::new();
            file.take(limit.saturating_add(1))
                .read_to_end(&mut content)
                .is_ok()
                && before.hash.as_deref() == Some(hash_of(&content).as_str())
        }
        PathKind::Folder => {
            let Ok(folder) = open_child_dir(files, name) else {
                return false;
            };
            match (&before.hash, fingerprint(folder.as_fd())) {
                (Some(expected), Ok(Some(found))) => *expected == found,
                (None, Ok(_)) => true,
                _ => false,
            }
        }
        _ => false,
    }
}
