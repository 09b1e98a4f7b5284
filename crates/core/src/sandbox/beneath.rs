//! Using a checked path without a check-then-use race: every open, create, rename and delete
//! the file tools do goes through a handle of the workspace root the path is under, and
//! resolves the rest of the path *beneath* that handle, refusing every symbolic link.
//!
//! [`Sandbox::resolve`](super::Sandbox::resolve) turns what a model wrote into a real path
//! (symlinks followed, checked against the roots and protected paths). That answer is only true
//! at the moment it is computed: a folder on the way can be swapped for a symlink to `~/.ssh`
//! or `/etc` before the file is opened. So the tools hand the *resolved* path (which has no
//! symlinks) to [`Beneath`], which opens it relative to the root's directory handle:
//! - Linux: `openat2(root_fd, relative, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS)`; kernels without `openat2` (before 5.6) fall back to the walk below.
//! - Elsewhere (macOS): one `openat(dir_fd, component, O_NOFOLLOW | O_DIRECTORY)` per folder
//!   component, and `O_NOFOLLOW` on the last one.
//!
//! Invariants:
//! - Nothing here follows a symbolic link or `..`, at any level: a swap between the check and
//!   the use makes the operation fail with [`swapped`] (ELOOP/EXDEV from the kernel), never
//!   reach outside the root. A path that really leads through a symlink inside the roots works
//!   because callers pass the resolved path, which has none.
//! - So the object used is the one at the path the sandbox checked: a protected path the check
//!   did not see cannot be reached through a swapped link.
//! - Creating never replaces (`O_EXCL`, `RENAME_NOREPLACE` where asked); renames and deletes
//!   act on a name inside an opened parent folder, never on what a final link points to.
//!
//! The walk itself (shared with [`daemon_file`], the daemon's own files) is in [`walk`].
//!
//! What it does not promise: hard links (a file hard-linked into a root from elsewhere is the
//! same file; hard links to files one cannot write need privileges on most systems) and mount
//! points inside a root are used as they are; a root's own ancestors are trusted.

pub(crate) mod daemon_file;
pub(crate) mod walk;

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, Stat};

use super::Sandbox;

pub(crate) use walk::Entry;
use walk::{components, mode_bits, open_folder, open_relative, refine};
pub(crate) use walk::{
    is_swapped, open_child_dir, open_child_file, open_component, open_root, read_entries,
    remove_tree, rename_between,
};

/// Race-free file access for paths the sandbox resolved (see the module header).
#[derive(Debug, Clone, Copy)]
pub struct Beneath<'a> {
    sandbox: &'a Sandbox,
}

impl Sandbox {
    /// Race-free access to resolved paths inside the roots.
    pub fn beneath(&self) -> Beneath<'_> {
        Beneath { sandbox: self }
    }
}

impl<'a> Beneath<'a> {
    /// Opens the regular file or folder at `path` for reading, without waiting on a FIFO.
    pub fn open_read(&self, path: &Path) -> io::Result<File> {
        let fd = self.open(path, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())?;
        Ok(File::from(fd))
    }

    /// Opens the folder at `path`.
    pub fn open_dir(&self, path: &Path) -> io::Result<OwnedFd> {
        self.open(path, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
    }

    /// The entries of the folder at `path` (without `.` and `..`), in directory order.
    pub fn read_dir(&self, path: &Path) -> io::Result<Vec<Entry>> {
        let folder = self.open_dir(path)?;
        read_entries(folder.as_fd())
    }

    /// What is at `path`, not following a final symlink.
    pub fn stat(&self, path: &Path) -> io::Result<Stat> {
        if self.sandbox.roots().iter().any(|root| root == path) {
            return Ok(rustix::fs::fstat(open_root(path)?)?);
        }
        let (parent, name) = self.open_parent(path)?;
        Ok(rustix::fs::statat(
            &parent,
            name,
            AtFlags::SYMLINK_NOFOLLOW,
        )?)
    }

    /// Creates the file `path`, which must not exist (never through a final symlink), for
    /// writing with `mode` (before the umask).
    pub fn create_new(&self, path: &Path, mode: u32) -> io::Result<File> {
        let (parent, name) = self.open_parent(path)?;
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(&parent, name, flags | OFlags::CLOEXEC, mode_bits(mode))?;
        Ok(File::from(fd))
    }

    /// Creates the folder `path` (its parent must exist).
    pub fn create_dir(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = self.open_parent(path)?;
        Ok(rustix::fs::mkdirat(&parent, name, mode_bits(0o777))?)
    }

    /// Creates `path` and its missing ancestors inside the root, one component at a time.
    pub fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let (root, relative) = self.split(path)?;
        let mut current = open_root(root)?;
        for name in components(path, &relative)? {
            let next = match open_folder(current.as_fd(), name, path) {
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    match rustix::fs::mkdirat(&current, name, mode_bits(0o777)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(errno) => return Err(errno.into()),
                    }
                    open_folder(current.as_fd(), name, path)
                }
                other => other,
            }
            .map_err(|error| refine(error, path))?;
            current = next;
        }
        Ok(())
    }

    /// Renames `from` to `to` (both inside roots); with `no_replace`, fails with
    /// `AlreadyExists` when `to` exists (checked first where the filesystem cannot do it).
    pub fn rename(&self, from: &Path, to: &Path, no_replace: bool) -> io::Result<()> {
        let (from_parent, from_name) = self.open_parent(from)?;
        let (to_parent, to_name) = self.open_parent(to)?;
        rename_between(
            (from_parent.as_fd(), from_name),
            (to_parent.as_fd(), to_name),
            no_replace,
        )
    }

    /// Removes the file or symlink `path` (never what a link points to).
    pub fn remove_file(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = self.open_parent(path)?;
        Ok(rustix::fs::unlinkat(&parent, name, AtFlags::empty())?)
    }

    /// Removes the empty folder `path` (never what a link points to).
    pub fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = self.open_parent(path)?;
        Ok(rustix::fs::unlinkat(&parent, name, AtFlags::REMOVEDIR)?)
    }

    /// Removes `path` and, for a folder, everything inside it (links are removed, not
    /// followed).
    pub fn remove_all(&self, path: &Path) -> io::Result<()> {
        let (parent, name) = self.open_parent(path)?;
        remove_tree(parent.as_fd(), name)
    }

    /// Opens the folder containing `path` and returns it with `path`'s last component.
    pub fn open_parent<'p>(&self, path: &'p Path) -> io::Result<(OwnedFd, &'p OsStr)> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{}` has no parent folder", path.display()),
            ));
        };
        Ok((self.open_dir(parent)?, name))
    }

    /// Opens `path` (absolute, resolved) beneath the root it is in.
    fn open(&self, path: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        let (root, relative) = self.split(path)?;
        let root_fd = open_root(root)?;
        if relative.as_os_str().is_empty() {
            return rustix::fs::openat(&root_fd, ".", flags | OFlags::CLOEXEC, mode)
                .map_err(Into::into);
        }
        open_relative(root_fd.as_fd(), path, &relative, flags, mode)
            .map_err(|error| refine(error, path))
    }

    /// The root `path` is under (the deepest one) and `path` relative to it.
    fn split(&self, path: &Path) -> io::Result<(&'a Path, PathBuf)> {
        let (root, relative) = self
            .sandbox
            .roots()
            .iter()
            .filter_map(|root| Some((root.as_path(), path.strip_prefix(root).ok()?)))
            .max_by_key(|(root, _)| root.as_os_str().len())
            .map(|(root, relative)| (root, relative.to_path_buf()))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("`{}` is outside the folders Souz may use", path.display()),
                )
            })?;
        // Resolved paths have no `.`, `..` or repeated roots; anything else is a caller bug.
        components(path, &relative)?;
        Ok((root, relative))
    }
}

#[cfg(test)]
mod tests;
