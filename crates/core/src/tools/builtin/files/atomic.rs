//! Writes and moves that never leave a half-done file and never overwrite by accident.
//!
//! Invariants:
//! - A file is written to a hidden temporary sibling (same folder, so the same filesystem),
//!   flushed to disk, and only then renamed over (or next to) the target. Readers see the old
//!   or the new content, never a mix; a crash leaves at most the temporary file behind.
//! - Replacing keeps the target's permission bits.
//! - Creating and moving refuse an existing destination atomically where the OS can
//!   (`renameat2(RENAME_NOREPLACE)` on Linux, `renameatx_np(RENAME_EXCL)` on macOS).
//! - Moving across filesystems copies into a temporary sibling of the destination, renames it
//!   into place, and only then removes the source: a failure leaves the source intact.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `content` to `path`, which must not exist yet.
pub(super) fn write_new(path: &Path, content: &[u8]) -> io::Result<()> {
    let temporary = TemporaryFile::create_next_to(path)?;
    temporary.fill(content, None)?;
    rename_no_replace(&temporary.path, path)?;
    temporary.disarm();
    sync_parent(path);
    Ok(())
}

/// Replaces the content of the existing file `path`, keeping its permission bits.
pub(super) fn replace(path: &Path, content: &[u8]) -> io::Result<()> {
    let permissions = fs::metadata(path)?.permissions();
    let temporary = TemporaryFile::create_next_to(path)?;
    temporary.fill(content, Some(permissions))?;
    fs::rename(&temporary.path, path)?;
    temporary.disarm();
    sync_parent(path);
    Ok(())
}

/// Moves `from` to `to` (which must not exist), across filesystems if need be.
pub(super) fn move_path(from: &Path, to: &Path) -> io::Result<()> {
    match rename_no_replace(from, to) {
        Err(error) if error.kind() == io::ErrorKind::CrossesDevices => copy_then_remove(from, to),
        other => {
            if other.is_ok() {
                sync_parent(to);
            }
            other
        }
    }
}

/// The cross-filesystem move: copy next to the destination, rename into place, remove the
/// source. Symlinks are recreated as symlinks (their targets are not read).
pub(super) fn copy_then_remove(from: &Path, to: &Path) -> io::Result<()> {
    let staging = staging_path(to)?;
    if let Err(error) = copy_tree(from, &staging) {
        let _ = remove_any(&staging);
        return Err(error);
    }
    if let Err(error) = rename_no_replace(&staging, to) {
        let _ = remove_any(&staging);
        return Err(error);
    }
    sync_parent(to);
    remove_any(from)
}

/// Renames `from` to `to`, failing with `AlreadyExists` if `to` exists.
pub(super) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "macos"))]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(errno)
                if errno == rustix::io::Errno::INVAL
                    || errno == rustix::io::Errno::NOSYS
                    || errno == rustix::io::Errno::NOTSUP =>
            {
                // This filesystem cannot rename without replacing; check first instead.
            }
            Err(errno) => return Err(errno.into()),
        }
    }
    if fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "the destination already exists",
        ));
    }
    fs::rename(from, to)
}

/// A temporary file next to its target, removed on drop unless disarmed.
struct TemporaryFile {
    path: PathBuf,
    file: File,
    armed: std::cell::Cell<bool>,
}

impl TemporaryFile {
    fn create_next_to(target: &Path) -> io::Result<Self> {
        let path = staging_path(target)?;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        Ok(Self {
            path,
            file,
            armed: std::cell::Cell::new(true),
        })
    }

    fn fill(&self, content: &[u8], permissions: Option<Permissions>) -> io::Result<()> {
        let mut file = &self.file;
        file.write_all(content)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()
    }

    fn disarm(&self) {
        self.armed.set(false);
    }
}

impl Drop for TemporaryFile {
    fn drop(&mut self) {
        if self.armed.get() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A fresh hidden name next to `target`: `.<name>.souz-<random>.tmp`.
fn staging_path(target: &Path) -> io::Result<PathBuf> {
    let (Some(folder), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path has no parent folder",
        ));
    };
    let mut staged = std::ffi::OsString::from(".");
    staged.push(name);
    staged.push(format!(".souz-{}.tmp", uuid::Uuid::new_v4().simple()));
    Ok(folder.join(staged))
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let file_type = fs::symlink_metadata(from)?.file_type();
    if file_type.is_symlink() {
        return copy_symlink(from, to);
    }
    if file_type.is_file() {
        // `fs::copy` keeps the permission bits.
        fs::copy(from, to)?;
        return File::open(to)?.sync_all();
    }
    if !file_type.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "`{}` is a special file and cannot be moved to another filesystem",
                from.display()
            ),
        ));
    }
    fs::create_dir(to)?;
    let mut entries = fs::read_dir(from)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        copy_tree(&entry.path(), &to.join(entry.file_name()))?;
    }
    fs::set_permissions(to, fs::metadata(from)?.permissions())
}

#[cfg(unix)]
fn copy_symlink(from: &Path, to: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(fs::read_link(from)?, to)
}

#[cfg(not(unix))]
fn copy_symlink(from: &Path, _to: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "`{}` is a symbolic link and cannot be moved to another filesystem here",
            from.display()
        ),
    ))
}

fn remove_any(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
}

/// Makes a rename in `path`'s folder durable. Best effort: not every platform can open a folder
/// for syncing, and the data itself was already synced.
fn sync_parent(path: &Path) {
    if let Some(folder) = path.parent()
        && let Ok(handle) = File::open(folder)
    {
        let _ = handle.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn write_new_refuses_an_existing_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        write_new(&path, b"first").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"first");
        let error = write_new(&path, b"second").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"first");
        assert_eq!(names(dir.path()), ["a.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn replace_keeps_permissions_and_leaves_no_temporary() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.sh");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, Permissions::from_mode(0o751)).unwrap();
        replace(&path, b"new").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o751
        );
        assert_eq!(names(dir.path()), ["script.sh"]);
    }

    #[test]
    fn replace_of_a_missing_file_fails_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing.txt");
        assert!(replace(&path, b"x").is_err());
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn rename_no_replace_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("from");
        let to = dir.path().join("to");
        fs::write(&from, "from").unwrap();
        fs::write(&to, "to").unwrap();
        let error = rename_no_replace(&from, &to).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&to).unwrap(), "to");
        assert_eq!(fs::read_to_string(&from).unwrap(), "from");
    }

    #[cfg(unix)]
    #[test]
    fn copy_then_remove_moves_a_tree_with_links_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("src");
        fs::create_dir_all(from.join("nested")).unwrap();
        fs::write(from.join("nested/run.sh"), "echo").unwrap();
        fs::set_permissions(from.join("nested/run.sh"), Permissions::from_mode(0o700)).unwrap();
        fs::write(from.join("a.txt"), "a").unwrap();
        std::os::unix::fs::symlink("a.txt", from.join("link")).unwrap();
        let to = dir.path().join("dest/moved");
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        copy_then_remove(&from, &to).unwrap();
        assert!(!from.exists());
        assert_eq!(fs::read_to_string(to.join("a.txt")).unwrap(), "a");
        assert_eq!(
            fs::read_to_string(to.join("nested/run.sh")).unwrap(),
            "echo"
        );
        let mode = fs::metadata(to.join("nested/run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(fs::read_link(to.join("link")).unwrap(), Path::new("a.txt"));
        assert_eq!(names(to.parent().unwrap()), ["moved"]);
    }

    #[test]
    fn copy_then_remove_keeps_the_source_when_the_destination_exists() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("a.txt");
        let to = dir.path().join("b.txt");
        fs::write(&from, "a").unwrap();
        fs::write(&to, "b").unwrap();
        assert!(copy_then_remove(&from, &to).is_err());
        assert_eq!(fs::read_to_string(&from).unwrap(), "a");
        assert_eq!(fs::read_to_string(&to).unwrap(), "b");
        assert_eq!(names(dir.path()), ["a.txt", "b.txt"]);
    }
}
