//! The file contents an undo of many changes writes back, staged before anything is restored so
//! that the whole batch costs two syncs instead of two per file: every content is written to a
//! hidden temporary sibling of its target first, one sync per filesystem makes them all
//! durable, each restore then only renames its temporary over the target, and one more sync at
//! the end makes the renames durable.
//!
//! Invariants (the file tools' atomic write, [`crate::tools::builtin::files::atomic`], batched):
//! - A content is on disk before the rename that shows it: readers see the old or the new
//!   content, never a mix, and a crash leaves at most a temporary file behind.
//! - A temporary is created with `O_EXCL | O_NOFOLLOW` in its target's folder opened beneath
//!   the root, and renamed only into that same folder (checked by device and inode when the
//!   restore reaches it: a folder moved or swapped meanwhile gets a plain atomic write instead).
//! - Only paths no other path of the batch contains are staged: a folder the undo moves or
//!   trashes never carries a temporary along, and no folder's fingerprint sees one.
//! - Temporaries not used are removed through their folder's handle, wherever it went.
//! - Where the OS has no per-filesystem sync (`syncfs`), each temporary is synced on its own
//!   and each folder renamed into once, as the single write does.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::sandbox::beneath::walk::staging_name;
use crate::sandbox::beneath::{Beneath, rename_between};

/// One content staged next to its target.
struct Staged {
    folder: OwnedFd,
    temporary: OsString,
    folder_identity: (u64, u64),
}

/// What one content is: its target, its SHA-256, its permission bits.
type Key = (PathBuf, String, u32);

/// The staged contents of one undo, and the folders renamed into (to sync at the end).
#[derive(Default)]
pub(super) struct Staging {
    staged: HashMap<Key, Staged>,
    renamed_into: Vec<OwnedFd>,
}

impl Staging {
    /// Stages `content` for `path` (with the bits `mode`). Best effort: a content that cannot
    /// be staged (its folder missing now, say) is written the usual way when its turn comes.
    pub(super) fn stage(
        &mut self,
        beneath: &Beneath<'_>,
        path: &Path,
        (hash, mode, content): (&str, u32, &[u8]),
    ) {
        let key = (path.to_path_buf(), hash.to_owned(), mode & 0o7777);
        if self.staged.contains_key(&key) {
            return;
        }
        let Ok((folder, name)) = beneath.open_parent(path) else {
            return;
        };
        let Ok(identity) = rustix::fs::fstat(&folder).map(|stat| identity(&stat)) else {
            return;
        };
        let temporary = staging_name(name);
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let Ok(fd) =
            rustix::fs::openat(&folder, &temporary, flags, Mode::from_bits_truncate(0o600))
        else {
            return;
        };
        let mut file = std::fs::File::from(fd);
        let filled = file
            .write_all(content)
            .and_then(|()| {
                rustix::fs::fchmod(&file, Mode::from_bits_truncate(key.2)).map_err(io::Error::from)
            })
            .and_then(|()| {
                if cfg!(any(target_os = "linux", target_os = "android")) {
                    Ok(())
                } else {
                    file.sync_all()
                }
            });
        if filled.is_err() {
            let _ = rustix::fs::unlinkat(&folder, &temporary, AtFlags::empty());
            return;
        }
        self.staged.insert(
            key,
            Staged {
                folder,
                temporary,
                folder_identity: identity,
            },
        );
    }

    /// Makes every staged content durable: one sync per filesystem (without `syncfs`, each
    /// was synced when staged). A sync that fails drops them all: each is then written the
    /// usual way.
    pub(super) fn sync_staged(&mut self) {
        if sync_filesystems(self.staged.values().map(|staged| &staged.folder)).is_err() {
            for (_, staged) in self.staged.drain() {
                discard(&staged);
            }
        }
    }

    /// Puts the staged content for `path` in place, when one was staged and its folder is
    /// still where it was; false when the caller must write it itself.
    pub(super) fn put(
        &mut self,
        beneath: &Beneath<'_>,
        path: &Path,
        hash: &str,
        mode: u32,
    ) -> io::Result<bool> {
        let key = (path.to_path_buf(), hash.to_owned(), mode & 0o7777);
        let Some(staged) = self.staged.remove(&key) else {
            return Ok(false);
        };
        let (folder, name) = beneath.open_parent(path)?;
        let same =
            rustix::fs::fstat(&folder).is_ok_and(|stat| identity(&stat) == staged.folder_identity);
        if !same {
            discard(&staged);
            return Ok(false);
        }
        if let Err(error) = rename_between(
            (staged.folder.as_fd(), staged.temporary.as_os_str()),
            (folder.as_fd(), name),
            false,
        ) {
            discard(&staged);
            return Err(error);
        }
        self.renamed_into.push(folder);
        Ok(true)
    }

    /// Makes the renames durable and removes the temporaries no restore used.
    pub(super) fn finish(self) {
        for staged in self.staged.values() {
            discard(staged);
        }
        if cfg!(any(target_os = "linux", target_os = "android")) {
            let _ = sync_filesystems(self.renamed_into.iter());
        } else {
            for folder in &self.renamed_into {
                let _ = rustix::fs::fsync(folder);
            }
        }
    }
}

fn identity(stat: &rustix::fs::Stat) -> (u64, u64) {
    #[allow(clippy::useless_conversion)]
    (u64::from(stat.st_dev), u64::from(stat.st_ino))
}

fn discard(staged: &Staged) {
    let _ = rustix::fs::unlinkat(
        &staged.folder,
        OsStr::new(&staged.temporary),
        AtFlags::empty(),
    );
}

/// Syncs each filesystem one of `folders` is on, once (without `syncfs`: nothing to do, the
/// staged files were synced one by one).
fn sync_filesystems<'a>(folders: impl Iterator<Item = &'a OwnedFd>) -> io::Result<()> {
    let mut synced: Vec<u64> = Vec::new();
    for folder in folders {
        let (device, _) = identity(&rustix::fs::fstat(folder)?);
        if synced.contains(&device) {
            continue;
        }
        synced.push(device);
        #[cfg(any(target_os = "linux", target_os = "android"))]
        rustix::fs::syncfs(folder)?;
    }
    Ok(())
}
