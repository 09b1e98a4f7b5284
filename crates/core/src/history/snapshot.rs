//! What a path holds at one moment, looked at beneath its root without following a link
//! ([`Beneath`]): its kind, permission bits, size, and an identity of its content — the SHA-256
//! of a file (with the content itself, for the blob store, unless the file is over the limit),
//! the target of a symlink, or a fingerprint of a folder's tree.
//!
//! Invariants:
//! - Nothing here follows a symbolic link or opens a path by name from the root down: every
//!   open is beneath the sandbox's root handle (a folder swapped for a link fails the look).
//! - Reads are bounded: a file over `max_file_bytes` is not read (its identity is its size,
//!   time and inode), a folder's fingerprint stops after [`FINGERPRINT_ENTRIES`] entries.
//! - A folder's fingerprint leaves out the folder's own times (a rename may touch them) and
//!   covers everything inside: names, kinds, modes, sizes, modification times.

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Stat};
use sha2::{Digest, Sha256};
use souz_protocol::history::{PathKind, PathSnapshot};

use super::blobs::hash_of;
use crate::sandbox::beneath::{Beneath, open_child_dir, read_entries};

/// Most entries a folder's fingerprint looks at; a bigger folder gets none (its undo checks
/// only that a folder is there).
pub(crate) const FINGERPRINT_ENTRIES: usize = 20_000;

/// What a path held, as the history keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub kind: PathKind,
    pub size: Option<u64>,
    pub mode: Option<u32>,
    /// Files: the hex SHA-256 of the content (over the limit: `stat:<size>:<mtime>:<inode>`);
    /// symlinks: the SHA-256 of the target; folders: the tree's fingerprint (`None` when too
    /// large to take).
    pub hash: Option<String>,
    /// A symlink's target.
    pub link: Option<Vec<u8>>,
    /// Whether the content is in the blob store (files under the limit).
    pub kept: bool,
}

impl Snapshot {
    /// Nothing there.
    pub(crate) fn absent() -> Self {
        Self {
            kind: PathKind::Absent,
            size: None,
            mode: None,
            hash: None,
            link: None,
            kept: false,
        }
    }

    /// Whether `now` is still what this snapshot recorded (same kind, same content identity,
    /// same mode). A folder matches any folder: what is inside it belongs to the changes of
    /// the paths inside (its fingerprint is for telling a trashed tree is the one recorded).
    pub(crate) fn matches(&self, now: &Snapshot) -> bool {
        if self.kind != now.kind {
            return false;
        }
        match self.kind {
            PathKind::Absent | PathKind::Folder => true,
            _ => self.hash == now.hash && self.mode == now.mode,
        }
    }

    /// Whether the path is there.
    pub(crate) fn exists(&self) -> bool {
        self.kind != PathKind::Absent
    }

    /// As the wire shows it.
    pub(crate) fn wire(&self) -> PathSnapshot {
        PathSnapshot {
            kind: self.kind,
            size: self.size,
            mode: self.mode,
            sha256: self
                .hash
                .clone()
                .filter(|_| matches!(self.kind, PathKind::File) && self.kept),
            kept: self.kept,
        }
    }
}

/// A snapshot and, for a kept file, its content.
#[derive(Debug)]
pub(crate) struct Captured {
    pub snapshot: Snapshot,
    pub content: Option<Vec<u8>>,
}

/// What `path` holds now. A file up to `max_file_bytes` is read whole.
pub(crate) fn capture(
    beneath: &Beneath<'_>,
    path: &Path,
    max_file_bytes: u64,
) -> io::Result<Captured> {
    let stat = match beneath.stat(path) {
        Ok(stat) => stat,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok(Captured {
                snapshot: Snapshot::absent(),
                content: None,
            });
        }
        Err(error) => return Err(error),
    };
    let mode = Some(stat.st_mode & 0o7777);
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    match FileType::from_raw_mode(stat.st_mode as _) {
        FileType::RegularFile if size > max_file_bytes => Ok(Captured {
            snapshot: Snapshot {
                kind: PathKind::File,
                size: Some(size),
                mode,
                hash: Some(stat_identity(&stat)),
                link: None,
                kept: false,
            },
            content: None,
        }),
        FileType::RegularFile => capture_file(beneath, path, &stat, max_file_bytes),
        FileType::Symlink => {
            let (parent, name) = beneath.open_parent(path)?;
            let target = rustix::fs::readlinkat(&parent, name, Vec::new())?.into_bytes();
            Ok(Captured {
                snapshot: Snapshot {
                    kind: PathKind::Symlink,
                    size: Some(target.len() as u64),
                    mode,
                    hash: Some(hash_of(&target)),
                    link: Some(target),
                    kept: true,
                },
                content: None,
            })
        }
        FileType::Directory => {
            let folder = beneath.open_dir(path)?;
            let fingerprint = fingerprint(folder.as_fd())?;
            Ok(Captured {
                snapshot: Snapshot {
                    kind: PathKind::Folder,
                    size: None,
                    mode,
                    hash: fingerprint,
                    link: None,
                    kept: false,
                },
                content: None,
            })
        }
        _ => Ok(Captured {
            snapshot: Snapshot {
                kind: PathKind::Other,
                size: None,
                mode,
                hash: Some(stat_identity(&stat)),
                link: None,
                kept: false,
            },
            content: None,
        }),
    }
}

fn capture_file(
    beneath: &Beneath<'_>,
    path: &Path,
    stat: &Stat,
    max_file_bytes: u64,
) -> io::Result<Captured> {
    let file = beneath.open_read(path)?;
    let opened = rustix::fs::fstat(&file)?;
    if opened.st_ino != stat.st_ino || opened.st_dev != stat.st_dev {
        return Err(io::Error::other(
            "the file was replaced while Souz looked at it",
        ));
    }
    let mut content = Vec::with_capacity(usize::try_from(opened.st_size).unwrap_or(0));
    file.take(max_file_bytes.saturating_add(1))
        .read_to_end(&mut content)?;
    if content.len() as u64 > max_file_bytes {
        return Err(io::Error::other("the file grew while Souz read it"));
    }
    Ok(Captured {
        snapshot: Snapshot {
            kind: PathKind::File,
            size: Some(content.len() as u64),
            mode: Some(opened.st_mode & 0o7777),
            hash: Some(hash_of(&content)),
            link: None,
            kept: true,
        },
        content: Some(content),
    })
}

/// A file's identity without its content: size, modification time, inode.
fn stat_identity(stat: &Stat) -> String {
    format!(
        "stat:{}:{}.{}:{}",
        stat.st_size, stat.st_mtime, stat.st_mtime_nsec, stat.st_ino
    )
}

/// The fingerprint of the tree inside `folder`; `None` past [`FINGERPRINT_ENTRIES`].
pub(crate) fn fingerprint(folder: BorrowedFd<'_>) -> io::Result<Option<String>> {
    let mut hasher = Sha256::new();
    let mut seen = 0usize;
    if walk(folder, b"", &mut hasher, &mut seen)? {
        Ok(Some(hex::encode(hasher.finalize())))
    } else {
        Ok(None)
    }
}

/// Feeds the entries under `folder` (named from `prefix`) to `hasher`, sorted by name;
/// false once more than the limit were seen.
fn walk(
    folder: BorrowedFd<'_>,
    prefix: &[u8],
    hasher: &mut Sha256,
    seen: &mut usize,
) -> io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let mut entries = read_entries(folder)?;
    entries.sort_by(|left, right| left.name.cmp(&right.name));
    for entry in entries {
        *seen += 1;
        if *seen > FINGERPRINT_ENTRIES {
            return Ok(false);
        }
        // An entry gone since the listing (another call's temporary file, renamed into place
        // meanwhile) is not there: the fingerprint is of what the walk found.
        let stat =
            match rustix::fs::statat(folder, entry.name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(rustix::io::Errno::NOENT) => continue,
                Err(error) => return Err(error.into()),
            };
        let mut name = prefix.to_vec();
        name.extend_from_slice(entry.name.as_bytes());
        let kind = FileType::from_raw_mode(stat.st_mode as _);
        hasher.update(&name);
        hasher.update(
            format!(
                "\0{:o}\0{}\0{}.{}\n",
                stat.st_mode, stat.st_size, stat.st_mtime, stat.st_mtime_nsec
            )
            .as_bytes(),
        );
        if kind == FileType::Directory {
            let child = match open_child_dir(folder, &entry.name) {
                Ok(child) => child,
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) => return Err(error),
            };
            name.push(b'/');
            if !walk(child.as_fd(), &name, hasher, seen)? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fs::{Mode, OFlags};

    use super::fingerprint;

    #[test]
    fn a_folder_whose_entries_come_and_go_is_fingerprinted_as_found() {
        // Another call's temporary files appear and are renamed away while a folder is walked
        // (parallel writes into one new folder): an entry gone between the listing and its
        // stat is not there, not an error that fails the change's record.
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir(folder.path().join("sub")).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let churn = {
            let stop = Arc::clone(&stop);
            let root = folder.path().to_path_buf();
            std::thread::spawn(move || {
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for place in ["", "sub/"] {
                        let name = root.join(format!("{place}.t{}.tmp", round % 64));
                        let _ = std::fs::write(&name, b"x");
                        let _ = std::fs::remove_file(&name);
                    }
                    let made = root.join(format!("d{}", round % 8));
                    let _ = std::fs::create_dir(&made);
                    let _ = std::fs::remove_dir(&made);
                    round += 1;
                }
            })
        };
        let handle = rustix::fs::open(
            folder.path(),
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let failures = (0..3_000)
            .filter(|_| fingerprint(rustix::fd::AsFd::as_fd(&handle)).is_err())
            .count();
        stop.store(true, Ordering::Relaxed);
        churn.join().unwrap();
        assert_eq!(failures, 0, "walks failed on entries that went away");
    }
}
