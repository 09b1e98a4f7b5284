//! A skill bundle: its files read within the loader limits, and its canonical hash.
//!
//! Invariants:
//! - A [`Bundle`] holds at most [`MAX_FILES`] files, each with an allowed extension, at most
//!   [`MAX_FILE_BYTES`], valid UTF-8 without NUL bytes, [`MAX_BUNDLE_BYTES`] in all; paths are
//!   relative, `/`-separated, without `.`, `..`, backslashes or empty parts, and unique.
//! - Reading a folder never follows a symbolic link, at any level (the root included), and never
//!   reads a special file: the walk goes through folder handles (`O_NOFOLLOW`, fd-relative, as
//!   [`crate::sandbox::beneath`]), so a folder swapped for a link mid-walk fails, it never
//!   escapes. No file is read past its limit (a growing file cannot exhaust memory).
//! - [`Bundle::hash`] is SHA-256 over the files sorted by path, each contributing
//!   `path \n hex(sha256(content)) \n`: it does not depend on the order files were found in.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::{FileType, OFlags};
use sha2::{Digest, Sha256};

use crate::sandbox::beneath::{open_component, open_root, read_entries};

/// Most files in a bundle.
pub(crate) const MAX_FILES: usize = 64;
/// Largest file.
pub(crate) const MAX_FILE_BYTES: u64 = 128 * 1024;
/// Largest bundle (all files).
pub(crate) const MAX_BUNDLE_BYTES: u64 = 512 * 1024;
/// Deepest folder nesting read.
const MAX_DEPTH: usize = 16;
/// The file name extensions a bundle may hold.
pub(crate) const ALLOWED_EXTENSIONS: &[&str] = &[
    "cjs", "css", "csv", "html", "js", "json", "jsx", "md", "mjs", "py", "sh", "sql", "text",
    "toml", "ts", "tsx", "txt", "xml", "yaml", "yml", "zsh",
];
/// The required file.
pub(crate) const SKILL_MD: &str = "SKILL.md";

/// Why a bundle could not be loaded (a structural finding).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum LoadError {
    /// More than [`MAX_FILES`] files.
    #[error("the bundle has more than {MAX_FILES} files")]
    TooManyFiles,
    /// A file is larger than [`MAX_FILE_BYTES`].
    #[error("`{0}` is larger than {MAX_FILE_BYTES} bytes")]
    FileTooLarge(String),
    /// All files together are larger than [`MAX_BUNDLE_BYTES`].
    #[error("the bundle is larger than {MAX_BUNDLE_BYTES} bytes")]
    BundleTooLarge,
    /// A file's extension is not allowed.
    #[error("`{0}` has an extension skills may not hold (allowed: {allowed})", allowed = ALLOWED_EXTENSIONS.join(", "))]
    Extension(String),
    /// A symbolic link.
    #[error("`{0}` is a symbolic link; skills may not hold links")]
    Symlink(String),
    /// A FIFO, socket, device…
    #[error("`{0}` is not a regular file or folder")]
    SpecialFile(String),
    /// Not UTF-8 text.
    #[error("`{0}` is not UTF-8 text")]
    NotText(String),
    /// A path that is absolute, has `..`, a backslash, NUL…
    #[error("`{0}` is not a valid relative path")]
    InvalidPath(String),
    /// The same path twice.
    #[error("`{0}` appears twice")]
    DuplicatePath(String),
    /// Folders nested too deep.
    #[error("`{0}` is nested more than {MAX_DEPTH} folders deep")]
    TooDeep(String),
    /// No `SKILL.md` at the top.
    #[error("the bundle has no SKILL.md at its top")]
    MissingSkillMd,
    /// Reading failed.
    #[error("cannot read `{path}`: {message}")]
    Io {
        /// What was read.
        path: String,
        /// What the system said.
        message: String,
    },
}

impl LoadError {
    /// The finding code of the original's structural checks.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::TooManyFiles => "struct.too_many_files",
            Self::FileTooLarge(_) => "struct.file_too_large",
            Self::BundleTooLarge => "struct.bundle_too_large",
            Self::Extension(_) => "struct.extension",
            Self::Symlink(_) => "struct.symlink",
            Self::SpecialFile(_) => "struct.special_file",
            Self::NotText(_) => "struct.not_text",
            Self::InvalidPath(_) | Self::TooDeep(_) => "struct.invalid_path",
            Self::DuplicatePath(_) => "struct.duplicate_path",
            Self::MissingSkillMd => "struct.missing_skill_md",
            Self::Io { .. } => "struct.unreadable",
        }
    }
}

/// The files of a skill, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bundle {
    files: BTreeMap<String, String>,
}

/// Checks a relative bundle path (the original's normalization rules).
pub(crate) fn check_path(path: &str) -> Result<(), LoadError> {
    let invalid = || LoadError::InvalidPath(path.to_owned());
    if path.is_empty() || path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return Err(invalid());
    }
    if path.len() >= 2 && path.as_bytes()[1] == b':' {
        return Err(invalid());
    }
    if path
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == ".." || part.trim() != part)
    {
        return Err(invalid());
    }
    Ok(())
}

fn check_extension(path: &str) -> Result<(), LoadError> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let allowed = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && ALLOWED_EXTENSIONS.contains(&ext));
    if allowed {
        Ok(())
    } else {
        Err(LoadError::Extension(path.to_owned()))
    }
}

/// Bytes read so far, against the limits.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    files: usize,
    bytes: u64,
}

impl Budget {
    /// Accounts one more file named `path` that claims `size` bytes; refuses over a limit.
    pub(crate) fn admit(&mut self, path: &str, size: u64) -> Result<(), LoadError> {
        check_path(path)?;
        check_extension(path)?;
        self.files += 1;
        if self.files > MAX_FILES {
            return Err(LoadError::TooManyFiles);
        }
        if size > MAX_FILE_BYTES {
            return Err(LoadError::FileTooLarge(path.to_owned()));
        }
        self.bytes += size;
        if self.bytes > MAX_BUNDLE_BYTES {
            return Err(LoadError::BundleTooLarge);
        }
        Ok(())
    }

    /// Reads `reader` for `path`, never more than the limit plus one byte, and accounts the
    /// difference from the size [`Self::admit`] was told.
    pub(crate) fn read(
        &mut self,
        path: &str,
        claimed: u64,
        reader: impl Read,
    ) -> Result<Vec<u8>, LoadError> {
        let mut bytes = Vec::new();
        reader
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| LoadError::Io {
                path: path.to_owned(),
                message: error.to_string(),
            })?;
        let actual = bytes.len() as u64;
        if actual > MAX_FILE_BYTES {
            return Err(LoadError::FileTooLarge(path.to_owned()));
        }
        self.bytes = self.bytes - claimed.min(self.bytes) + actual;
        if self.bytes > MAX_BUNDLE_BYTES {
            return Err(LoadError::BundleTooLarge);
        }
        Ok(bytes)
    }
}

impl Bundle {
    /// A bundle of `files` (path → bytes), checked against every limit.
    pub(crate) fn from_files(
        files: impl IntoIterator<Item = (String, Vec<u8>)>,
    ) -> Result<Self, LoadError> {
        let mut budget = Budget::default();
        let mut checked = BTreeMap::new();
        for (path, bytes) in files {
            budget.admit(&path, bytes.len() as u64)?;
            let text = text_of(&path, bytes)?;
            if checked.insert(path.clone(), text).is_some() {
                return Err(LoadError::DuplicatePath(path));
            }
        }
        Self::finish(checked)
    }

    fn finish(files: BTreeMap<String, String>) -> Result<Self, LoadError> {
        if !files.contains_key(SKILL_MD) {
            return Err(LoadError::MissingSkillMd);
        }
        Ok(Self { files })
    }

    /// Reads the folder `root` (see the module header for what is refused).
    pub(crate) fn read_folder(root: &Path) -> Result<Self, LoadError> {
        let io = |error: std::io::Error| LoadError::Io {
            path: root.display().to_string(),
            message: error.to_string(),
        };
        if std::fs::symlink_metadata(root).map_err(io)?.is_symlink() {
            return Err(LoadError::Symlink(root.display().to_string()));
        }
        let fd = open_root(root).map_err(io)?;
        let mut walk = Walk::default();
        walk.folder(fd.as_fd(), "", 0)?;
        Self::finish(walk.files)
    }

    /// The files, by path.
    pub(crate) fn files(&self) -> &BTreeMap<String, String> {
        &self.files
    }

    /// The text of `SKILL.md`.
    pub(crate) fn skill_md(&self) -> &str {
        self.files.get(SKILL_MD).map_or("", String::as_str)
    }

    /// Paths other than `SKILL.md`.
    pub(crate) fn supporting_files(&self) -> Vec<String> {
        self.files
            .keys()
            .filter(|path| *path != SKILL_MD)
            .cloned()
            .collect()
    }

    /// The canonical SHA-256 (lowercase hex), independent of the order files were found in.
    pub(crate) fn hash(&self) -> String {
        canonical_hash(
            self.files
                .iter()
                .map(|(path, text)| (path.as_str(), text.as_bytes())),
        )
    }
}

/// The canonical hash of `files`, in any order.
pub(crate) fn canonical_hash<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut files: Vec<(&str, &[u8])> = files.into_iter().collect();
    files.sort_by(|a, b| a.0.cmp(b.0));
    let mut hasher = Sha256::new();
    for (path, content) in files {
        hasher.update(path.as_bytes());
        hasher.update(b"\n");
        hasher.update(hex::encode(Sha256::digest(content)).as_bytes());
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

fn text_of(path: &str, bytes: Vec<u8>) -> Result<String, LoadError> {
    if bytes.contains(&0) {
        return Err(LoadError::NotText(path.to_owned()));
    }
    String::from_utf8(bytes).map_err(|_| LoadError::NotText(path.to_owned()))
}

/// A folder walk through handles.
#[derive(Default)]
struct Walk {
    budget: Budget,
    files: BTreeMap<String, String>,
}

impl Walk {
    fn folder(
        &mut self,
        folder: BorrowedFd<'_>,
        prefix: &str,
        depth: usize,
    ) -> Result<(), LoadError> {
        let entries = read_entries(folder).map_err(|error| LoadError::Io {
            path: prefix.to_owned(),
            message: error.to_string(),
        })?;
        for entry in entries {
            let name = entry.name.to_str().ok_or_else(|| {
                LoadError::InvalidPath(format!("{prefix}{}", entry.name.to_string_lossy()))
            })?;
            let path = format!("{prefix}{name}");
            match entry.file_type {
                FileType::Directory => {
                    check_path(&path)?;
                    if depth + 1 > MAX_DEPTH {
                        return Err(LoadError::TooDeep(path));
                    }
                    let child = self.open(folder, &entry.name, &path, true)?;
                    self.folder(child.as_fd(), &format!("{path}/"), depth + 1)?;
                }
                FileType::RegularFile => self.file(folder, &entry.name, path)?,
                FileType::Symlink => return Err(LoadError::Symlink(path)),
                _ => return Err(LoadError::SpecialFile(path)),
            }
        }
        Ok(())
    }

    fn open(
        &self,
        folder: BorrowedFd<'_>,
        name: &OsStr,
        path: &str,
        directory: bool,
    ) -> Result<std::os::fd::OwnedFd, LoadError> {
        let flags = if directory {
            OFlags::RDONLY | OFlags::DIRECTORY
        } else {
            OFlags::RDONLY | OFlags::NONBLOCK
        };
        open_component(folder, name, flags).map_err(|error| {
            if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
                || error.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error())
            {
                // Swapped for a link (or a file) since the folder was listed.
                LoadError::Symlink(path.to_owned())
            } else {
                LoadError::Io {
                    path: path.to_owned(),
                    message: error.to_string(),
                }
            }
        })
    }

    fn file(
        &mut self,
        folder: BorrowedFd<'_>,
        name: &OsStr,
        path: String,
    ) -> Result<(), LoadError> {
        check_path(&path)?;
        check_extension(&path)?;
        let fd = self.open(folder, name, &path, false)?;
        let stat = rustix::fs::fstat(&fd).map_err(|error| LoadError::Io {
            path: path.clone(),
            message: error.to_string(),
        })?;
        if FileType::from_raw_mode(stat.st_mode as _) != FileType::RegularFile {
            return Err(LoadError::SpecialFile(path));
        }
        let size = stat.st_size.max(0) as u64;
        self.budget.admit(&path, size)?;
        let bytes = self.budget.read(&path, size, std::fs::File::from(fd))?;
        let text = text_of(&path, bytes)?;
        self.files.insert(path, text);
        Ok(())
    }
}

#[cfg(test)]
#[path = "bundle_tests.rs"]
mod tests;
