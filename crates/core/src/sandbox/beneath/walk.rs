//! The walk beneath a folder handle: opening, renaming and removing names relative to an
//! opened folder without following a symbolic link or `..` at any level. [`Beneath`] (the file
//! tools, whose folders are the sandbox's roots) and [`daemon_file`] (the files the daemon
//! writes and reads itself, whose folders are the Souz home and the person's home) both use it.
//!
//! Invariants:
//! - Nothing here follows a symbolic link: Linux `openat2` with `RESOLVE_BENEATH |
//!   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` (kernels before 5.6: the walk below);
//!   elsewhere one `openat(O_NOFOLLOW | O_DIRECTORY)` per folder and `O_NOFOLLOW` on the last
//!   name. A link on the way is reported as [`swapped`], never crossed.
//! - Renames and removals act on a name inside an opened folder, never on what a link names.
//! - It imports nothing from the rest of the crate (it sits in the bottom layer, so `config`
//!   and `token` can use [`daemon_file`]).
//!
//! [`Beneath`]: super::Beneath
//! [`daemon_file`]: super::daemon_file

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};

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

/// Opens a root folder (canonical, from the configuration; its ancestors are trusted), never
/// through a final symlink.
pub(crate) fn open_root(root: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

pub(crate) fn directory_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY
}

pub(crate) fn mode_bits(mode: u32) -> Mode {
    Mode::from_bits_truncate(mode as _)
}

/// The normal components of `relative`; anything else (`..`, `.`, a root) is refused, since
/// resolved paths never contain them.
pub(crate) fn components<'p>(path: &Path, relative: &'p Path) -> io::Result<Vec<&'p OsStr>> {
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
pub(crate) fn open_folder(
    folder: BorrowedFd<'_>,
    name: &OsStr,
    path: &Path,
) -> io::Result<OwnedFd> {
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
pub(crate) fn open_relative(
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
pub(crate) fn open_relative(
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
pub(crate) fn open_per_component(
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
pub(crate) fn refine(error: io::Error, path: &Path) -> io::Error {
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

/// A fresh hidden name for something staged next to `name`: `.<name>.souz-<random>.tmp`.
pub(crate) fn staging_name(name: &OsStr) -> OsString {
    let mut staged = OsString::from(".");
    staged.push(name);
    staged.push(format!(".souz-{}.tmp", uuid::Uuid::new_v4().simple()));
    staged
}

/// Whether `candidate` is a name [`staging_name`] gives for `name` (what a write cut short by
/// a crash leaves next to its target).
pub(crate) fn is_staging_name_of(candidate: &OsStr, name: &OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Some(id) = candidate
        .as_bytes()
        .strip_prefix(b".")
        .and_then(|rest| rest.strip_prefix(name.as_bytes()))
        .and_then(|rest| rest.strip_prefix(b".souz-"))
        .and_then(|rest| rest.strip_suffix(b".tmp"))
    else {
        return false;
    };
    id.len() == 32
        && id
            .iter()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(byte))
}
