//! Writes and moves that never leave a half-done file and never overwrite by accident.
//!
//! Invariants:
//! - A file is written to a hidden temporary sibling (same folder, so the same filesystem),
//!   flushed to disk, and only then renamed over (or next to) the target. Readers see the old
//!   or the new content, never a mix; a crash leaves at most the temporary file behind (with
//!   the history on, the next start removes it when it settles the change the write was
//!   part of: `history::reconcile`).
//! - Replacing keeps the target's permission bits.
//! - Creating and moving refuse an existing destination atomically where the OS can
//!   (`renameat2(RENAME_NOREPLACE)` on Linux, `renameatx_np(RENAME_EXCL)` on macOS).
//! - Moving across filesystems copies into a temporary sibling of the destination, renames it
//!   into place, and only then removes the source: a failure leaves the source intact.
//! - Every step goes through [`Beneath`]: the temporary file is created with `O_EXCL` in the
//!   target's folder opened beneath its root, renames are `renameat` between opened folders, a
//!   cross-filesystem copy reads and writes only through folder handles, and nothing follows a
//!   symlink. A folder swapped for a link between the check and the write fails the write.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::sandbox::beneath::walk::staging_name;
use crate::sandbox::beneath::{
    Beneath, open_child_dir, open_child_file, read_entries, remove_tree, rename_between,
};

/// Writes `content` to `path`, which must not exist yet (`AlreadyExists` if it does): through
/// a temporary file renamed into place, so nobody sees it half written.
pub(crate) fn write_new(beneath: &Beneath<'_>, path: &Path, content: &[u8]) -> io::Result<()> {
    let temporary = TemporaryFile::create_next_to(beneath, path, 0o666)?;
    temporary.fill(content, None)?;
    beneath.rename(&temporary.path, path, true)?;
    temporary.disarm();
    sync_parent(beneath, path);
    Ok(())
}

/// Replaces the content of the existing file `path`, keeping its permission bits.
pub(super) fn replace(beneath: &Beneath<'_>, path: &Path, content: &[u8]) -> io::Result<()> {
    let stat = beneath.stat(path)?;
    if FileType::from_raw_mode(stat.st_mode as _) != FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file",
        ));
    }
    let permissions = permission_bits(stat.st_mode);
    let temporary = TemporaryFile::create_next_to(beneath, path, 0o600)?;
    temporary.fill(content, Some(permissions))?;
    beneath.rename(&temporary.path, path, false)?;
    temporary.disarm();
    sync_parent(beneath, path);
    Ok(())
}

/// Writes `content` to `path` with exactly the permission bits `mode`, replacing a regular file
/// there (or creating it): an undo bringing back a file as it was.
pub(crate) fn write_with_mode(
    beneath: &Beneath<'_>,
    path: &Path,
    content: &[u8],
    mode: u32,
) -> io::Result<()> {
    let temporary = TemporaryFile::create_next_to(beneath, path, 0o600)?;
    temporary.fill(content, Some(Mode::from_bits_truncate(mode & 0o7777)))?;
    beneath.rename(&temporary.path, path, false)?;
    temporary.disarm();
    sync_parent(beneath, path);
    Ok(())
}

/// Moves `from` to `to` (which must not exist), across filesystems if need be.
pub(crate) fn move_path(beneath: &Beneath<'_>, from: &Path, to: &Path) -> io::Result<()> {
    match beneath.rename(from, to, true) {
        Err(error) if error.kind() == io::ErrorKind::CrossesDevices => {
            copy_then_remove(beneath, from, to)
        }
        other => {
            if other.is_ok() {
                sync_parent(beneath, to);
            }
            other
        }
    }
}

/// The cross-filesystem move: copy next to the destination, rename into place, remove the
/// source. Symlinks are recreated as symlinks (their targets are not read).
pub(super) fn copy_then_remove(beneath: &Beneath<'_>, from: &Path, to: &Path) -> io::Result<()> {
    let (from_parent, from_name) = beneath.open_parent(from)?;
    let (to_parent, to_name) = beneath.open_parent(to)?;
    let staging = staging_name(to_name);
    let source = (from_parent.as_fd(), from_name);
    let staged = (to_parent.as_fd(), staging.as_os_str());
    if let Err(error) = copy_tree(source, staged) {
        let _ = remove_tree(staged.0, staged.1);
        return Err(error);
    }
    if let Err(error) = rename_between(staged, (to_parent.as_fd(), to_name), true) {
        let _ = remove_tree(staged.0, staged.1);
        return Err(error);
    }
    let _ = rustix::fs::fsync(&to_parent);
    remove_tree(source.0, source.1)
}

/// A temporary file next to its target, removed on drop unless disarmed.
struct TemporaryFile<'b> {
    beneath: Beneath<'b>,
    path: PathBuf,
    file: File,
    armed: std::cell::Cell<bool>,
}

impl<'b> TemporaryFile<'b> {
    fn create_next_to(beneath: &Beneath<'b>, target: &Path, mode: u32) -> io::Result<Self> {
        let (Some(folder), Some(name)) = (target.parent(), target.file_name()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path has no parent folder",
            ));
        };
        let path = folder.join(staging_name(name));
        let file = beneath.create_new(&path, mode)?;
        Ok(Self {
            beneath: *beneath,
            path,
            file,
            armed: std::cell::Cell::new(true),
        })
    }

    fn fill(&self, content: &[u8], permissions: Option<Mode>) -> io::Result<()> {
        let mut file = &self.file;
        file.write_all(content)?;
        if let Some(permissions) = permissions {
            rustix::fs::fchmod(file, permissions)?;
        }
        file.sync_all()
    }

    fn disarm(&self) {
        self.armed.set(false);
    }
}

impl Drop for TemporaryFile<'_> {
    fn drop(&mut self) {
        if self.armed.get() {
            let _ = self.beneath.remove_file(&self.path);
        }
    }
}

/// The permission bits (with set-id and sticky bits) of a raw mode.
fn permission_bits(mode: rustix::fs::RawMode) -> Mode {
    Mode::from_bits_truncate(mode & 0o7777)
}

/// Copies `from` (a name in an opened folder) to the new name `to`, never following a link.
fn copy_tree(from: (BorrowedFd<'_>, &OsStr), to: (BorrowedFd<'_>, &OsStr)) -> io::Result<()> {
    let stat = rustix::fs::statat(from.0, from.1, AtFlags::SYMLINK_NOFOLLOW)?;
    let permissions = permission_bits(stat.st_mode);
    match FileType::from_raw_mode(stat.st_mode as _) {
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(from.0, from.1, Vec::new())?;
            Ok(rustix::fs::symlinkat(target.as_c_str(), to.0, to.1)?)
        }
        FileType::RegularFile => {
            let mut source = open_child_file(from.0, from.1)?;
            let flags =
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let mut copy = File::from(rustix::fs::openat(to.0, to.1, flags, permissions)?);
            io::copy(&mut source, &mut copy)?;
            rustix::fs::fchmod(&copy, permissions)?;
            copy.sync_all()
        }
        FileType::Directory => {
            rustix::fs::mkdirat(to.0, to.1, Mode::from_bits_truncate(0o700))?;
            let source = open_child_dir(from.0, from.1)?;
            let copy = open_child_dir(to.0, to.1)?;
            let mut entries = read_entries(source.as_fd())?;
            entries.sort_by(|left, right| left.name.cmp(&right.name));
            for entry in entries {
                copy_tree((source.as_fd(), &entry.name), (copy.as_fd(), &entry.name))?;
            }
            Ok(rustix::fs::fchmod(&copy, permissions)?)
        }
        _ => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "`{}` is a special file and cannot be moved to another filesystem",
                Path::new(from.1).display()
            ),
        )),
    }
}

/// Makes a rename in `path`'s folder durable. Best effort: not every platform can open a folder
/// for syncing, and the data itself was already synced.
fn sync_parent(beneath: &Beneath<'_>, path: &Path) {
    if let Ok((folder, _)) = beneath.open_parent(path) {
        let _ = rustix::fs::fsync(&folder);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::files::testing::TestHome;
    use std::fs::{self, Permissions};

    /// A test home with an empty folder `w` in it.
    fn folder() -> (TestHome, PathBuf) {
        let home = TestHome::new();
        let folder = home.folder("w");
        (home, folder)
    }

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
        let (home, dir) = folder();
        let beneath = home.ctx.sandbox.beneath();
        let path = dir.as_path().join("a.txt");
        write_new(&beneath, &path, b"first").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"first");
        let error = write_new(&beneath, &path, b"second").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"first");
        assert_eq!(names(dir.as_path()), ["a.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn replace_keeps_permissions_and_leaves_no_temporary() {
        use std::os::unix::fs::PermissionsExt;
        let (home, dir) = folder();
        let beneath = home.ctx.sandbox.beneath();
        let path = dir.as_path().join("script.sh");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, Permissions::from_mode(0o751)).unwrap();
        replace(&beneath, &path, b"new").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o751
        );
        assert_eq!(names(dir.as_path()), ["script.sh"]);
    }

    #[test]
    fn replace_of_a_missing_file_fails_and_creates_nothing() {
        let (home, dir) = folder();
        let beneath = home.ctx.sandbox.beneath();
        let path = dir.as_path().join("missing.txt");
        assert!(replace(&beneath, &path, b"x").is_err());
        assert!(names(dir.as_path()).is_empty());
    }

    #[test]
    fn rename_no_replace_never_overwrites() {
        let (home, dir) = folder();
        let beneath = home.ctx.sandbox.beneath();
        let from = dir.as_path().join("from");
        let to = dir.as_path().join("to");
        fs::write(&from, "from").unwrap();
        fs::write(&to, "to").unwrap();
        let error = beneath.rename(&from, &to, true).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&to).unwrap(), "to");
        assert_eq!(fs::read_to_string(&from).unwrap(), "from");
    }

    #[cfg(unix)]
    #[test]
    fn copy_then_remove_moves_a_tree_with_links_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let (home, dir) = folder();
        let beneath = home.ctx.sandbox.beneath();
        let from = dir.as_path().join("src");
        fs::create_dir_all(from.join("nested")).unwrap();
        fs::write(from.join("nested/run.sh"), "echo").unwrap();
        fs::set_permissions(from.join("nested/run.sh"), Permissions::from_mode(0o700)).unwrap();
        fs::write(from.join("a.txt"), "a").unwrap();
        std::os::unix::fs::symlink("a.txt", from.join("link")).unwrap();
        let to = dir.as_path().join("dest/moved");
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        copy_then_remove(&beneath, &from, &to).unwrap();
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
        let (home, dir) = folder();
        let beneath = home.ctx.sandbox.beneath();
        let from = dir.as_path().join("a.txt");
        let to = dir.as_path().join("b.txt");
        fs::write(&from, "a").unwrap();
        fs::write(&to, "b").unwrap();
        assert!(copy_then_remove(&beneath, &from, &to).is_err());
        assert_eq!(fs::read_to_string(&from).unwrap(), "a");
        assert_eq!(fs::read_to_string(&to).unwrap(), "b");
        assert_eq!(names(dir.as_path()), ["a.txt", "b.txt"]);
    }
}
