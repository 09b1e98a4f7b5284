//! The files the daemon itself reads and writes on the person's behalf, outside the file tools:
//! Claude Desktop's configuration and its `.bak`, `config.toml` and its `.bak`, the token and
//! discovery files, installed skills, downloaded models. Each is reached from a trusted folder
//! (the person's home, the Souz home), opened once, and then only *beneath* that handle with
//! the walk of [`super::walk`], which follows no symbolic link at any level.
//!
//! Why: an approved command can plant a link where the daemon will later write or read
//! (`~/.config/Claude` -> `~`, `claude_desktop_config.json.bak` -> `~/.bashrc`,
//! `claude_desktop_config.json` -> `~/.docker/config.json`). Plain path operations follow it,
//! and the daemon, which is not confined, would write or copy outside any boundary.
//!
//! Invariants:
//! - No symbolic link is followed: a link at a folder on the way, at the file, at its backup is
//!   refused ([`DaemonFileError::Link`]); nothing is read or written through it.
//! - Only regular files are read, replaced or backed up ([`DaemonFileError::NotRegular`]: a FIFO
//!   or a folder planted there is left alone); reads are bounded by the caller's limit.
//! - Writes are atomic: a temporary sibling with a fresh random name is created with `O_EXCL |
//!   O_NOFOLLOW`, written and synced, then renamed into place inside the opened folder. A rename
//!   replaces a *name*: a link planted at the target after the check is replaced, never written
//!   through. A backup is made the same way, from the old file opened without following links.
//! - The trusted folder (the anchor) is opened by its path: it and its ancestors belong to the
//!   person (their home) or to Souz (its home) and are trusted; everything below is not.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

use super::walk::{
    components, is_swapped, mode_bits, open_child_file, open_folder, open_relative, refine,
    remove_tree, rename_between, staging_name,
};

/// Why a daemon-side file operation was refused or failed. Refusals leave everything as it was.
#[derive(Debug, thiserror::Error)]
pub enum DaemonFileError {
    /// The file, its backup, or a folder on the way is a symbolic link.
    #[error(
        "`{0}` or a folder on the way to it is a symbolic link; Souz does not read or write \
         through links and left it alone (replace the link with the real file or folder)"
    )]
    Link(PathBuf),
    /// Something other than a regular file (a folder, a FIFO, a device) is there.
    #[error("`{0}` is not a regular file; Souz left it alone")]
    NotRegular(PathBuf),
    /// The file is larger than the reader accepts.
    #[error("`{path}` is larger than {limit} bytes; Souz did not read it")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The path is not a plain path inside its trusted folder (a caller's mistake).
    #[error("`{path}` is not a plain path inside `{anchor}`")]
    NotInside {
        /// The path asked for.
        path: PathBuf,
        /// The trusted folder.
        anchor: PathBuf,
    },
    /// The filesystem failed.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// What was being done (`read`, `write`, `create the folder`...).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl DaemonFileError {
    /// Whether Souz refused (a link, not a regular file, too large), as opposed to a failure of
    /// the filesystem.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, Self::Io { .. })
    }

    /// The file or folder concerned.
    pub fn path(&self) -> &Path {
        match self {
            Self::Link(path) | Self::NotRegular(path) => path,
            Self::TooLarge { path, .. } | Self::NotInside { path, .. } | Self::Io { path, .. } => {
                path
            }
        }
    }

    /// Whether `error` carries a refusal of this module (see [`Self::is_refusal`]).
    pub fn refusal_in(error: &io::Error) -> bool {
        error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<Self>())
            .is_some_and(Self::is_refusal)
    }

    /// The error as an `io::Error` (the filesystem's kind for failures, `PermissionDenied` for
    /// refusals), for callers whose errors are `io::Error`s.
    pub fn into_io(self) -> io::Error {
        let kind = match &self {
            Self::Io { source, .. } => source.kind(),
            Self::NotInside { .. } => io::ErrorKind::InvalidInput,
            _ => io::ErrorKind::PermissionDenied,
        };
        io::Error::new(kind, self)
    }
}

impl From<DaemonFileError> for io::Error {
    fn from(error: DaemonFileError) -> Self {
        error.into_io()
    }
}

/// An I/O error at `path`: a link met on the way (`ELOOP`, `EXDEV`, a swapped folder) becomes
/// [`DaemonFileError::Link`].
fn classify(error: io::Error, path: &Path, action: &'static str) -> DaemonFileError {
    let error = refine(error, path);
    if is_swapped(&error) {
        return DaemonFileError::Link(path.to_owned());
    }
    DaemonFileError::Io {
        action,
        path: path.to_owned(),
        source: error,
    }
}

/// How [`DaemonFolder::write`] writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    private: bool,
    backup: Option<&'static str>,
}

impl WriteOptions {
    /// A file others may read if the umask allows (a replaced file keeps its permission bits);
    /// folders created on the way get `0777` less the umask.
    pub const fn shared() -> Self {
        Self {
            private: false,
            backup: None,
        }
    }

    /// An owner-only file (`0600`, also when replacing); folders created on the way are `0700`.
    pub const fn private() -> Self {
        Self {
            private: true,
            backup: None,
        }
    }

    /// Before replacing an existing file, copies it to `<name><suffix>` (`.bak`).
    pub const fn with_backup(self, suffix: &'static str) -> Self {
        Self {
            backup: Some(suffix),
            ..self
        }
    }

    fn folder_mode(self) -> u32 {
        if self.private { 0o700 } else { 0o777 }
    }
}

/// A folder opened beneath a trusted folder, with every component checked not to be a link.
#[derive(Debug)]
pub struct DaemonFolder {
    fd: OwnedFd,
    path: PathBuf,
}

impl DaemonFolder {
    /// The trusted folder `anchor` itself (its path is followed: it is trusted).
    pub fn anchor(anchor: &Path) -> Result<Self, DaemonFileError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(anchor, flags, Mode::empty())
            .map_err(|errno| classify(errno.into(), anchor, "open the folder"))?;
        Ok(Self {
            fd,
            path: anchor.to_owned(),
        })
    }

    /// The existing folder `relative` beneath `anchor`; `None` when it (or a folder on the way)
    /// does not exist.
    pub fn open(anchor: &Path, relative: &Path) -> Result<Option<Self>, DaemonFileError> {
        let base = match Self::anchor(anchor) {
            Err(DaemonFileError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(None);
            }
            other => other?,
        };
        if relative.as_os_str().is_empty() {
            return Ok(Some(base));
        }
        let path = anchor.join(relative);
        check_relative(anchor, relative)?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        match open_relative(base.fd.as_fd(), &path, relative, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(Self { fd, path })),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(classify(error, &path, "open the folder")),
        }
    }

    /// The folder `relative` beneath `anchor`, creating the missing ones (with `mode` before the
    /// umask) one component at a time.
    pub fn create(anchor: &Path, relative: &Path, mode: u32) -> Result<Self, DaemonFileError> {
        let mut current = Self::anchor(anchor)?;
        for name in check_relative(anchor, relative)? {
            current = current.child(name, Some(mode))?.ok_or_else(|| {
                classify(io::ErrorKind::NotFound.into(), anchor, "create the folder")
            })?;
        }
        Ok(current)
    }

    /// The folder `name` inside this one; created with `mode` when missing if `create` is set,
    /// `None` when missing otherwise.
    pub fn child(
        &self,
        name: impl AsRef<OsStr>,
        create: Option<u32>,
    ) -> Result<Option<Self>, DaemonFileError> {
        let name = self.plain(name.as_ref())?;
        let path = self.path.join(name);
        let open = || open_folder(self.fd.as_fd(), name, &path);
        let fd = match (open(), create) {
            (Ok(fd), _) => fd,
            (Err(error), None) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            (Err(error), Some(mode)) if error.kind() == io::ErrorKind::NotFound => {
                match rustix::fs::mkdirat(&self.fd, name, mode_bits(mode)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(errno) => return Err(classify(errno.into(), &path, "create the folder")),
                }
                open().map_err(|error| classify(error, &path, "open the folder"))?
            }
            (Err(error), _) => return Err(classify(error, &path, "open the folder")),
        };
        Ok(Some(Self { fd, path }))
    }

    /// This folder's path (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The regular file `name`, opened for reading; `None` when there is none.
    pub fn open_file(&self, name: impl AsRef<OsStr>) -> Result<Option<File>, DaemonFileError> {
        let name = self.plain(name.as_ref())?;
        let path = self.path.join(name);
        let file = match open_child_file(self.fd.as_fd(), name) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(classify(error, &path, "open")),
        };
        let stat =
            rustix::fs::fstat(&file).map_err(|errno| classify(errno.into(), &path, "open"))?;
        if file_type(&stat) != FileType::RegularFile {
            return Err(DaemonFileError::NotRegular(path));
        }
        Ok(Some(file))
    }

    /// The regular file `name` opened for writing, created (mode `mode` before the umask) when
    /// missing; appended to with `append`, else emptied. For files written in pieces over time
    /// (a download's `.part`); a link there is refused, never followed.
    pub fn open_for_writing(
        &self,
        name: impl AsRef<OsStr>,
        append: bool,
        mode: u32,
    ) -> Result<File, DaemonFileError> {
        let name = self.plain(name.as_ref())?;
        let path = self.path.join(name);
        // Emptied only after the check, so a FIFO or device is refused before anything.
        let mut flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK;
        if append {
            flags |= OFlags::APPEND;
        }
        let fd = rustix::fs::openat(&self.fd, name, flags | OFlags::CLOEXEC, mode_bits(mode))
            .map_err(|errno| classify(errno.into(), &path, "open for writing"))?;
        let stat = rustix::fs::fstat(&fd).map_err(|errno| classify(errno.into(), &path, "open"))?;
        if file_type(&stat) != FileType::RegularFile {
            return Err(DaemonFileError::NotRegular(path));
        }
        let file = File::from(fd);
        if !append {
            file.set_len(0)
                .map_err(|error| classify(error, &path, "empty"))?;
        }
        Ok(file)
    }

    /// The content of the regular file `name` (at most `limit` bytes); `None` when there is none.
    pub fn read(
        &self,
        name: impl AsRef<OsStr>,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, DaemonFileError> {
        let name = name.as_ref();
        let Some(file) = self.open_file(name)? else {
            return Ok(None);
        };
        let path = self.path.join(name);
        let mut content = Vec::new();
        file.take(limit.saturating_add(1))
            .read_to_end(&mut content)
            .map_err(|error| classify(error, &path, "read"))?;
        if content.len() as u64 > limit {
            return Err(DaemonFileError::TooLarge { path, limit });
        }
        Ok(Some(content))
    }

    /// Writes `content` to `name` atomically (see the module header), replacing a regular file
    /// there; returns the backup's path when `options` asked for one and there was a file.
    pub fn write(
        &self,
        name: impl AsRef<OsStr>,
        content: &[u8],
        options: WriteOptions,
    ) -> Result<Option<PathBuf>, DaemonFileError> {
        let name = self.plain(name.as_ref())?;
        let existing = self.existing(name)?;
        let backup = match (&existing, options.backup) {
            (Some(_), Some(suffix)) => Some(self.back_up(name, suffix)?),
            _ => None,
        };
        let (create_mode, permissions) = match (options.private, &existing) {
            (true, _) => (0o600, Some(mode_bits(0o600))),
            (false, Some(stat)) => (0o600, Some(permission_bits(stat))),
            (false, None) => (0o666, None),
        };
        let mut staged = self.stage(name, create_mode)?;
        staged.permissions = permissions;
        staged.write_all_content(content)?;
        staged.commit()?;
        Ok(backup)
    }

    /// Creates `name` with `content` (mode `mode` before the umask) unless something is there:
    /// returns whether it wrote. Never replaces, never follows a link.
    pub fn create_new(
        &self,
        name: impl AsRef<OsStr>,
        content: &[u8],
        mode: u32,
    ) -> Result<bool, DaemonFileError> {
        let name = self.plain(name.as_ref())?;
        let mut staged = self.stage(name, mode)?;
        staged.write_all_content(content)?;
        staged.commit_new()
    }

    /// A fresh temporary sibling of `name` (mode `mode` before the umask) to fill and then
    /// [`Staged::commit`] into place; removed if dropped uncommitted.
    pub fn stage(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<Staged<'_>, DaemonFileError> {
        let name = self.plain(name.as_ref())?.to_os_string();
        let temporary = staging_name(&name);
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(
            &self.fd,
            &temporary,
            flags | OFlags::CLOEXEC,
            mode_bits(mode),
        )
        .map_err(|errno| classify(errno.into(), &self.path.join(&name), "write"))?;
        Ok(Staged {
            folder: self,
            name,
            temporary,
            file: File::from(fd),
            permissions: None,
            armed: true,
        })
    }

    /// Removes the file or link `name` (never what a link names); returns whether there was one.
    pub fn remove_file(&self, name: impl AsRef<OsStr>) -> Result<bool, DaemonFileError> {
        let name = self.plain(name.as_ref())?;
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(errno) => Err(classify(errno.into(), &self.path.join(name), "remove")),
        }
    }

    /// Removes `name` and, for a folder, everything in it (links are removed, not followed).
    pub fn remove_tree(&self, name: impl AsRef<OsStr>) -> Result<(), DaemonFileError> {
        let name = self.plain(name.as_ref())?;
        remove_tree(self.fd.as_fd(), name)
            .map_err(|error| classify(error, &self.path.join(name), "remove"))
    }

    /// Renames `from` to `to`, both names in this folder; with `no_replace`, an existing `to`
    /// fails with `AlreadyExists` inside [`DaemonFileError::Io`].
    pub fn rename(
        &self,
        from: impl AsRef<OsStr>,
        to: impl AsRef<OsStr>,
        no_replace: bool,
    ) -> Result<(), DaemonFileError> {
        let (from, to) = (self.plain(from.as_ref())?, self.plain(to.as_ref())?);
        rename_between((self.fd.as_fd(), from), (self.fd.as_fd(), to), no_replace)
            .map_err(|error| classify(error, &self.path.join(to), "rename into"))?;
        let _ = rustix::fs::fsync(&self.fd);
        Ok(())
    }

    /// What `name` is when it is a regular file; `None` when nothing is there; a link or
    /// anything else is refused.
    pub fn existing(&self, name: impl AsRef<OsStr>) -> Result<Option<Stat>, DaemonFileError> {
        let name = self.plain(name.as_ref())?;
        let path = self.path.join(name);
        let stat = match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(errno) => return Err(classify(errno.into(), &path, "look at")),
        };
        match file_type(&stat) {
            FileType::RegularFile => Ok(Some(stat)),
            FileType::Symlink => Err(DaemonFileError::Link(path)),
            _ => Err(DaemonFileError::NotRegular(path)),
        }
    }

    /// Copies the regular file `name` to `<name><suffix>` (through a staged file renamed over
    /// it, refusing a link or a non-regular file there) and returns the backup's path.
    fn back_up(&self, name: &OsStr, suffix: &str) -> Result<PathBuf, DaemonFileError> {
        let mut backup = name.to_os_string();
        backup.push(suffix);
        self.existing(&backup)?;
        let path = self.path.join(name);
        let mut source = self
            .open_file(name)?
            .ok_or_else(|| classify(io::ErrorKind::NotFound.into(), &path, "back up"))?;
        let stat =
            rustix::fs::fstat(&source).map_err(|errno| classify(errno.into(), &path, "back up"))?;
        let mut staged = self.stage(&backup, 0o600)?;
        staged.permissions = Some(permission_bits(&stat));
        io::copy(&mut source, &mut staged.file)
            .map_err(|error| classify(error, &path, "back up"))?;
        staged.commit()?;
        Ok(self.path.join(backup))
    }

    /// `name` when it is one plain component (no `/`, `.` or `..`).
    fn plain<'n>(&self, name: &'n OsStr) -> Result<&'n OsStr, DaemonFileError> {
        let mut parts = Path::new(name).components();
        match (parts.next(), parts.next()) {
            (Some(Component::Normal(part)), None) if part == name => Ok(name),
            _ => Err(DaemonFileError::NotInside {
                path: self.path.join(name),
                anchor: self.path.clone(),
            }),
        }
    }
}

impl AsFd for DaemonFolder {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A temporary file next to its target (a fresh random name, created with `O_EXCL`), renamed
/// into place by [`Staged::commit`]; removed on drop unless committed.
#[derive(Debug)]
pub struct Staged<'f> {
    folder: &'f DaemonFolder,
    name: OsString,
    temporary: OsString,
    file: File,
    permissions: Option<Mode>,
    armed: bool,
}

impl Staged<'_> {
    /// The temporary file, to write to.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    fn write_all_content(&mut self, content: &[u8]) -> Result<(), DaemonFileError> {
        let path = self.target();
        self.file
            .write_all(content)
            .map_err(|error| classify(error, &path, "write"))
    }

    fn target(&self) -> PathBuf {
        self.folder.path.join(&self.name)
    }

    /// Syncs the file and renames it over the target (a regular file there is replaced; a link
    /// planted there is replaced as a name, never followed).
    pub fn commit(self) -> Result<(), DaemonFileError> {
        self.finish(false).map(|_| ())
    }

    /// Syncs the file and renames it to the target unless something is there: returns whether
    /// it did.
    pub fn commit_new(self) -> Result<bool, DaemonFileError> {
        self.finish(true)
    }

    fn finish(mut self, no_replace: bool) -> Result<bool, DaemonFileError> {
        let path = self.target();
        if let Some(permissions) = self.permissions {
            rustix::fs::fchmod(&self.file, permissions)
                .map_err(|errno| classify(errno.into(), &path, "write"))?;
        }
        self.file
            .sync_all()
            .map_err(|error| classify(error, &path, "write"))?;
        match self.folder.rename(&self.temporary, &self.name, no_replace) {
            Ok(()) => {
                self.armed = false;
                Ok(true)
            }
            Err(DaemonFileError::Io { source, .. })
                if no_replace && source.kind() == io::ErrorKind::AlreadyExists =>
            {
                Ok(false)
            }
            Err(error) => Err(error),
        }
    }
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = rustix::fs::unlinkat(&self.folder.fd, &self.temporary, AtFlags::empty());
        }
    }
}

/// One file beneath a trusted folder, named by its path: the shorthand for the common case
/// (open the folder, then act on the name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonFile {
    anchor: PathBuf,
    folder: PathBuf,
    name: OsString,
}

impl DaemonFile {
    /// The file `path` (absolute under `anchor`, or relative to it) beneath the trusted folder
    /// `anchor`.
    pub fn new(
        anchor: impl Into<PathBuf>,
        path: impl AsRef<Path>,
    ) -> Result<Self, DaemonFileError> {
        let anchor = anchor.into();
        let path = path.as_ref();
        let relative = path.strip_prefix(&anchor).unwrap_or(path);
        let not_inside = || DaemonFileError::NotInside {
            path: path.to_owned(),
            anchor: anchor.clone(),
        };
        check_relative(&anchor, relative)?;
        let (Some(folder), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(not_inside());
        };
        Ok(Self {
            folder: folder.to_owned(),
            name: name.to_owned(),
            anchor,
        })
    }

    /// The file's path.
    pub fn path(&self) -> PathBuf {
        self.anchor.join(&self.folder).join(&self.name)
    }

    /// Its folder, if it exists.
    pub fn open_folder(&self) -> Result<Option<DaemonFolder>, DaemonFileError> {
        DaemonFolder::open(&self.anchor, &self.folder)
    }

    /// Its folder, created (with `mode`) where missing.
    pub fn create_folder(&self, mode: u32) -> Result<DaemonFolder, DaemonFileError> {
        DaemonFolder::create(&self.anchor, &self.folder, mode)
    }

    /// The regular file opened for reading; `None` when it or its folder does not exist.
    pub fn open(&self) -> Result<Option<File>, DaemonFileError> {
        match self.open_folder()? {
            Some(folder) => folder.open_file(&self.name),
            None => Ok(None),
        }
    }

    /// The file `path` in its own folder, which is trusted (a file of the Souz home: the
    /// token, `daemon.json`); the file itself may not be a link.
    pub fn in_trusted_folder(path: &Path) -> Result<Self, DaemonFileError> {
        let anchor = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Self::new(anchor, path)
    }

    /// The content (at most `limit` bytes); `None` when the file or its folder does not exist.
    pub fn read(&self, limit: u64) -> Result<Option<Vec<u8>>, DaemonFileError> {
        match self.open_folder()? {
            Some(folder) => folder.read(&self.name, limit),
            None => Ok(None),
        }
    }

    /// The content as UTF-8 text (at most `limit` bytes); `None` when there is no file.
    pub fn read_text(&self, limit: u64) -> Result<Option<String>, DaemonFileError> {
        let Some(bytes) = self.read(limit)? else {
            return Ok(None);
        };
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|error| DaemonFileError::Io {
                action: "read",
                path: self.path(),
                source: io::Error::new(io::ErrorKind::InvalidData, error),
            })
    }

    /// Writes `content` atomically, creating the folders on the way; see
    /// [`DaemonFolder::write`].
    pub fn write(
        &self,
        content: &[u8],
        options: WriteOptions,
    ) -> Result<Option<PathBuf>, DaemonFileError> {
        self.create_folder(options.folder_mode())?
            .write(&self.name, content, options)
    }

    /// Creates the file (its folder must exist) unless something is there; see
    /// [`DaemonFolder::create_new`].
    pub fn create_new(&self, content: &[u8], mode: u32) -> Result<bool, DaemonFileError> {
        let folder = self
            .open_folder()?
            .ok_or_else(|| classify(io::ErrorKind::NotFound.into(), &self.path(), "create"))?;
        folder.create_new(&self.name, content, mode)
    }

    /// Removes the file (or a link there, never what it names); whether there was one.
    pub fn remove(&self) -> Result<bool, DaemonFileError> {
        match self.open_folder()? {
            Some(folder) => folder.remove_file(&self.name),
            None => Ok(false),
        }
    }
}

/// The components of `relative`, all plain names (no root, `.` or `..`).
fn check_relative<'r>(
    anchor: &Path,
    relative: &'r Path,
) -> Result<Vec<&'r OsStr>, DaemonFileError> {
    components(&anchor.join(relative), relative).map_err(|_| DaemonFileError::NotInside {
        path: relative.to_owned(),
        anchor: anchor.to_owned(),
    })
}

/// The permission bits (with set-id and sticky bits) of `stat`.
fn permission_bits(stat: &Stat) -> Mode {
    Mode::from_bits_truncate(stat.st_mode & 0o7777)
}

fn file_type(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode as _)
}

#[cfg(test)]
mod tests;
