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
//! What it does not promise: hard links (a file hard-linked into a root from elsewhere is the
//! same file; hard links to files one cannot write need privileges on most systems) and mount
//! points inside a root are used as they are; a root's own ancestors are trusted.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, Stat};

use super::Sandbox;

/// Attempts at `openat2` when the kernel reports a concurrent rename (`EAGAIN`).
const RACE_RETRIES: usize = 32;

/// Why an operation beneath a root was refused, as an `io::Error` message.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{0}` changed while Souz was using it (a folder on the way was replaced by a symbolic link \
     or moved); nothing was done there"
)]
pub(crate) struct Swapped(pub String);

/// The `io::Error` for a swap detected at `path`.
pub(crate) fn swapped(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        Swapped(path.display().to_string()),
    )
}

/// Whether `error` is a refusal made by this module (a swap, not an ordinary I/O failure).
pub(crate) fn is_swapped(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.downcast_ref::<Swapped>().is_some())
}

/// One entry of a folder read through a handle.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its name.
    pub name: OsString,
    /// What it is (a symlink is reported as one, never followed).
    pub file_type: FileType,
}

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

/// Opens a root folder (canonical, from the configuration; its ancestors are trusted), never
/// through a final symlink.
pub(crate) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

fn directory_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY
}

fn mode_bits(mode: u32) -> Mode {
    Mode::from_bits_truncate(mode as _)
}

/// The normal components of `relative`; anything else (`..`, `.`, a root) is refused, since
/// resolved paths never contain them.
fn components<'p>(path: &Path, relative: &'p Path) -> io::Result<Vec<&'p OsStr>> {
    relative
        .components()
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{}` is not a resolved path", path.display()),
            )),
        })
        .collect()
}

/// Opens one name inside `folder`, never following a symlink.
pub(crate) fn open_component(
    folder: BorrowedFd<'_>,
    name: &OsStr,
    flags: OFlags,
) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        folder,
        name,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens the folder `name` inside `folder` for a walk along `path`; a symlink there (which
/// `O_NOFOLLOW | O_DIRECTORY` reports as "not a folder") is a swap.
fn open_folder(folder: BorrowedFd<'_>, name: &OsStr, path: &Path) -> io::Result<OwnedFd> {
    open_component(folder, name, directory_flags()).map_err(|error| {
        let is_link = || {
            rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode as _) == FileType::Symlink)
        };
        if error.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) && is_link() {
            swapped(path)
        } else {
            error
        }
    })
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_relative(
    root: BorrowedFd<'_>,
    path: &Path,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    use rustix::fs::ResolveFlags;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..RACE_RETRIES {
        match rustix::fs::openat2(root, relative, flags | OFlags::CLOEXEC, mode, resolve) {
            Err(rustix::io::Errno::AGAIN) => continue,
            Err(rustix::io::Errno::NOSYS) => {
                return open_per_component(root, path, relative, flags, mode);
            }
            other => return other.map_err(Into::into),
        }
    }
    Err(swapped(path))
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open_relative(
    root: BorrowedFd<'_>,
    path: &Path,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let _ = RACE_RETRIES;
    open_per_component(root, path, relative, flags, mode)
}

/// The portable walk: each folder component opened with `O_NOFOLLOW | O_DIRECTORY` relative
/// to the previous one, the last with `O_NOFOLLOW`.
fn open_per_component(
    root: BorrowedFd<'_>,
    path: &Path,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let names = components(path, relative)?;
    let Some((last, folders)) = names.split_last() else {
        return Ok(rustix::fs::openat(
            root,
            ".",
            flags | OFlags::CLOEXEC,
            mode,
        )?);
    };
    let mut current: Option<OwnedFd> = None;
    for name in folders {
        let folder = current.as_ref().map_or(root, AsFd::as_fd);
        current = Some(open_folder(folder, name, path)?);
    }
    let folder = current.as_ref().map_or(root, AsFd::as_fd);
    Ok(rustix::fs::openat(
        folder,
        *last,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )?)
}

/// Turns the kernel's "a link was on the way" answers into [`swapped`]: `ELOOP` (a symlink
/// under `RESOLVE_NO_SYMLINKS` or `O_NOFOLLOW`) and `EXDEV` (an escape under `RESOLVE_BENEATH`).
fn refine(error: io::Error, path: &Path) -> io::Error {
    match error.raw_os_error() {
        Some(code)
            if code == rustix::io::Errno::LOOP.raw_os_error()
                || code == rustix::io::Errno::XDEV.raw_os_error() =>
        {
            swapped(path)
        }
        _ => error,
    }
}

/// Reads all entries of an opened folder.
pub(crate) fn read_entries(folder: BorrowedFd<'_>) -> io::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    let mut dir = rustix::fs::Dir::read_from(folder)?;
    while let Some(entry) = dir.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = bytes_to_name(name);
        let mut file_type = entry.file_type();
        if file_type == FileType::Unknown {
            // Some filesystems do not fill in the type; ask without following a link.
            file_type =
                match rustix::fs::statat(folder, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => FileType::from_raw_mode(stat.st_mode as _),
                    Err(_) => continue,
                };
        }
        entries.push(Entry { name, file_type });
    }
    Ok(entries)
}

fn bytes_to_name(bytes: &[u8]) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    OsStr::from_bytes(bytes).to_os_string()
}

/// Renames between two opened folders; see [`Beneath::rename`].
pub(crate) fn rename_between(
    from: (BorrowedFd<'_>, &OsStr),
    to: (BorrowedFd<'_>, &OsStr),
    no_replace: bool,
) -> io::Result<()> {
    if !no_replace {
        return Ok(rustix::fs::renameat(from.0, from.1, to.0, to.1)?);
    }
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "macos"))]
    match rustix::fs::renameat_with(from.0, from.1, to.0, to.1, RenameFlags::NOREPLACE) {
        Ok(()) => return Ok(()),
        Err(errno)
            if errno == rustix::io::Errno::INVAL
                || errno == rustix::io::Errno::NOSYS
                || errno == rustix::io::Errno::NOTSUP => {}
        Err(errno) => return Err(errno.into()),
    }
    // This filesystem cannot rename without replacing; check first instead.
    if rustix::fs::statat(to.0, to.1, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "the destination already exists",
        ));
    }
    Ok(rustix::fs::renameat(from.0, from.1, to.0, to.1)?)
}

/// Removes `name` inside `parent`, recursively for a folder, never following a link.
pub(crate) fn remove_tree(parent: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let stat = match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(errno) => return Err(errno.into()),
    };
    if FileType::from_raw_mode(stat.st_mode as _) != FileType::Directory {
        return Ok(rustix::fs::unlinkat(parent, name, AtFlags::empty())?);
    }
    let folder = open_component(parent, name, directory_flags())?;
    for entry in read_entries(folder.as_fd())? {
        remove_tree(folder.as_fd(), &entry.name)?;
    }
    Ok(rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)?)
}

/// Opens `name` inside `folder` as a folder, never following a link.
pub(crate) fn open_child_dir(folder: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    open_component(folder, name, directory_flags())
}

/// Opens `name` inside `folder` for reading, never following a link nor waiting on a FIFO.
pub(crate) fn open_child_file(folder: BorrowedFd<'_>, name: &OsStr) -> io::Result<File> {
    Ok(File::from(open_component(
        folder,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK,
    )?))
}

#[cfg(test)]
mod tests;
