//! Moving a path to the Trash without a check-then-use race.
//!
//! The `trash` crate works by path, so a folder on the way swapped for a symlink between the
//! check and the move would make it trash something outside the roots. On Linux Souz does the
//! freedesktop.org move itself, through handles: the item's parent folder is opened beneath its
//! root (see [`crate::sandbox::beneath`]), a `.trashinfo` record is reserved with `O_EXCL` in
//! the Trash's `info` folder, and the item is moved with `renameat(RENAME_NOREPLACE)` from the
//! parent handle into the Trash's `files` folder. File managers and `trash` list and restore it
//! as usual.
//!
//! Invariants:
//! - The item moved is the name inside the folder the sandbox checked; a swap makes the open
//!   fail, never the move reach elsewhere. A link is moved itself, never its target.
//! - The home Trash (`$XDG_DATA_HOME/Trash`, else `~/.local/share/Trash`) is used when it is on
//!   the item's filesystem, reached beneath the person's home without following a link
//!   ([`crate::sandbox::DaemonFolder`]); otherwise the filesystem's own `.Trash-<uid>` at the top of that
//!   filesystem (found by walking `..` from the parent handle), as the specification says.
//!   Nothing is ever copied: an item that cannot be moved is refused, not deleted.
//! - On other systems (macOS) the `trash` crate moves it by path (Finder's "Put Back" needs
//!   that), after the sandbox's re-check; that window is a documented limit.

use std::path::Path;

use crate::sandbox::Sandbox;

/// Moves the checked, existing `path` (a file, folder or link inside a root) to the Trash.
pub(crate) fn move_to_trash(sandbox: &Sandbox, path: &Path) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        linux::move_to_trash(sandbox, path).map_err(|error| error.to_string())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = sandbox;
        trash::delete(path).map_err(|error| error.to_string())
    }
}

/// Whether an item found in the Trash is the one to bring back: looked at through the Trash's
/// `files` folder and the item's name in it (never followed if a link).
pub(crate) type TrashCheck<'a> = &'a dyn Fn(std::os::fd::BorrowedFd<'_>, &std::ffi::OsStr) -> bool;

/// Brings back from the Trash the newest item trashed from `original` at or after `since`
/// (local time, as `.trashinfo` records it) that `check` accepts, moving it to `original`
/// (which must not exist; its folder must) without replacing anything, and removes its
/// `.trashinfo`. Returns whether it found one. On systems whose Trash Souz does not manage by
/// handles (macOS), it finds none.
pub(crate) fn restore_from_trash(
    sandbox: &Sandbox,
    original: &Path,
    since: chrono::DateTime<chrono::Local>,
    check: TrashCheck<'_>,
) -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        linux::restore(sandbox, original, since, check)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (sandbox, original, since, check);
        Ok(false)
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::{OsStr, OsString};
    use std::io::{self, Read, Write};
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use rustix::fs::{AtFlags, Mode, OFlags};

    use crate::sandbox::beneath::{open_child_dir, open_child_file, read_entries, rename_between};
    use crate::sandbox::{DaemonFileError, DaemonFolder, Sandbox};

    /// Names tried when the Trash already holds items of the same name: the name itself, a few
    /// numbered ones (`a.txt.1`), then random suffixes, so a full Trash costs a few opens.
    const NAME_ATTEMPTS: usize = 32;
    /// Numbered names tried before random ones.
    const NUMBERED_NAMES: usize = 8;

    pub(super) fn restore(
        sandbox: &Sandbox,
        original: &Path,
        since: chrono::DateTime<chrono::Local>,
        check: super::TrashCheck<'_>,
    ) -> io::Result<bool> {
        let (parent, name) = sandbox.beneath().open_parent(original)?;
        let trash = trash_for(sandbox, parent.as_fd())?;
        let wanted = escape(original.as_os_str());
        let earliest = since.format("%Y-%m-%dT%H:%M:%S").to_string();
        let mut found: Vec<(String, OsString)> = Vec::new();
        for entry in read_entries(trash.info.as_fd())? {
            let Some(item) = entry
                .name
                .as_bytes()
                .strip_suffix(b".trashinfo")
                .map(|item| OsStr::from_bytes(item).to_os_string())
            else {
                continue;
            };
            let Ok(file) = open_child_file(trash.info.as_fd(), &entry.name) else {
                continue;
            };
            let mut text = String::new();
            if file.take(INFO_LIMIT).read_to_string(&mut text).is_err() {
                continue;
            }
            let field = |key: &str| {
                text.lines()
                    .find_map(|line| line.strip_prefix(key))
                    .map(str::trim)
                    .map(str::to_owned)
            };
            if field("Path=").as_deref() == Some(wanted.as_str())
                && let Some(date) = field("DeletionDate=").filter(|date| *date >= earliest)
            {
                found.push((date, item));
            }
        }
        found.sort();
        for (_, item) in found.into_iter().rev() {
            if !check(trash.files.as_fd(), &item) {
                continue;
            }
            rename_between((trash.files.as_fd(), &item), (parent.as_fd(), name), true)?;
            let mut info_name = item;
            info_name.push(".trashinfo");
            let _ = rustix::fs::unlinkat(&trash.info, &info_name, AtFlags::empty());
            return Ok(true);
        }
        Ok(false)
    }

    /// The Trash an item in the folder `parent` goes to (the one [`move_to_trash`] uses).
    fn trash_for(sandbox: &Sandbox, parent: BorrowedFd<'_>) -> io::Result<Trash> {
        let device = rustix::fs::fstat(parent)?.st_dev;
        let home_trash = match sandbox.trash_folder() {
            Some(folder) => folder.to_path_buf(),
            None => default_home_trash()?,
        };
        match open_trash_at(sandbox.user_home(), &home_trash) {
            Ok(trash) if rustix::fs::fstat(&trash.files)?.st_dev == device => Ok(trash),
            Err(error) if DaemonFileError::refusal_in(&error) => Err(error),
            _ => top_trash(parent, device),
        }
    }

    /// Most bytes of a `.trashinfo` read.
    const INFO_LIMIT: u64 = 64 * 1024;

    pub(super) fn move_to_trash(sandbox: &Sandbox, path: &Path) -> io::Result<()> {
        let (parent, name) = sandbox.beneath().open_parent(path)?;
        let device = rustix::fs::fstat(&parent)?.st_dev;
        let home_trash = match sandbox.trash_folder() {
            Some(folder) => folder.to_path_buf(),
            None => default_home_trash()?,
        };
        let trash = match open_trash_at(sandbox.user_home(), &home_trash) {
            Ok(trash) if rustix::fs::fstat(&trash.files)?.st_dev == device => trash,
            // A link on the way to the home Trash: refuse, say why, move nothing.
            Err(error) if DaemonFileError::refusal_in(&error) => return Err(error),
            _ => top_trash(parent.as_fd(), device)?,
        };
        put(&trash, parent.as_fd(), name, path)
    }

    /// The `files` and `info` folders of one Trash.
    struct Trash {
        files: OwnedFd,
        info: OwnedFd,
    }

    fn default_home_trash() -> io::Result<PathBuf> {
        if let Some(data) = crate::config::env::read_os(crate::config::env::Var::XdgDataHome)
            .filter(|data| !data.is_empty())
        {
            return Ok(PathBuf::from(data).join("Trash"));
        }
        let home = crate::config::env::read_os(crate::config::env::Var::Home)
            .filter(|home| !home.is_empty());
        home.map(|home| PathBuf::from(home).join(".local/share/Trash"))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no home folder for the Trash"))
    }

    /// Opens (creating as needed, mode 0700) the Trash at `folder`: beneath the person's
    /// `home` when it is inside it, so a link planted at `~/.local`, `share` or `Trash` is
    /// refused rather than followed (items would be moved wherever it points).
    fn open_trash_at(home: &Path, folder: &Path) -> io::Result<Trash> {
        let base = match folder.strip_prefix(home) {
            Ok(relative) => DaemonFolder::create(home, relative, 0o700)?,
            Err(_) => {
                std::fs::create_dir_all(folder)?;
                DaemonFolder::anchor(folder)?
            }
        };
        open_trash_in(base.as_fd())
    }

    fn open_trash_in(base: BorrowedFd<'_>) -> io::Result<Trash> {
        Ok(Trash {
            files: child_folder(base, OsStr::new("files"))?,
            info: child_folder(base, OsStr::new("info"))?,
        })
    }

    /// Opens or creates (0700) the folder `name` inside `base`, never through a link.
    fn child_folder(base: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
        match rustix::fs::mkdirat(base, name, Mode::from_bits_truncate(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(errno) => return Err(errno.into()),
        }
        open_child_dir(base, name)
    }

    /// The `.Trash-<uid>` folder at the top of the filesystem holding `folder`.
    fn top_trash(folder: BorrowedFd<'_>, device: u64) -> io::Result<Trash> {
        let mut top = rustix::fs::openat(
            folder,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        loop {
            let here = rustix::fs::fstat(&top)?;
            let up = rustix::fs::openat(
                &top,
                "..",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let above = rustix::fs::fstat(&up)?;
            if above.st_dev != device
                || (above.st_ino == here.st_ino && above.st_dev == here.st_dev)
            {
                break;
            }
            top = up;
        }
        let uid = rustix::process::getuid().as_raw();
        let base = child_folder(top.as_fd(), OsStr::new(&format!(".Trash-{uid}")))?;
        open_trash_in(base.as_fd())
    }

    /// Reserves a name in the Trash with its `.trashinfo` and moves the item there.
    fn put(trash: &Trash, parent: BorrowedFd<'_>, name: &OsStr, original: &Path) -> io::Result<()> {
        let record = record(original);
        for attempt in 0..NAME_ATTEMPTS {
            let mut candidate = name.to_os_string();
            if attempt > NUMBERED_NAMES {
                candidate.push(format!(".{}", uuid::Uuid::new_v4().simple()));
            } else if attempt > 0 {
                candidate.push(format!(".{attempt}"));
            }
            let mut info_name = candidate.clone();
            info_name.push(".trashinfo");
            let info = match rustix::fs::openat(
                &trash.info,
                &info_name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_bits_truncate(0o600),
            ) {
                Ok(info) => info,
                Err(rustix::io::Errno::EXIST) => continue,
                Err(errno) => return Err(errno.into()),
            };
            let written = std::fs::File::from(info)
                .write_all(record.as_bytes())
                .and_then(|()| {
                    rename_between(
                        (parent, name),
                        (trash.files.as_fd(), candidate.as_os_str()),
                        true,
                    )
                });
            match written {
                Ok(()) => return Ok(()),
                Err(error) => {
                    let _ = rustix::fs::unlinkat(&trash.info, &info_name, AtFlags::empty());
                    if error.kind() != io::ErrorKind::AlreadyExists {
                        return Err(error);
                    }
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "the Trash holds too many items of this name",
        ))
    }

    /// The `.trashinfo` text: the original path (URL-escaped) and the local deletion time.
    fn record(original: &Path) -> String {
        format!(
            "[Trash Info]\nPath={}\nDeletionDate={}\n",
            escape(original.as_os_str()),
            chrono::Local::now().format("%Y-%m-%dT%H:%M:%S")
        )
    }

    /// Percent-escapes every byte but unreserved URL characters and `/`.
    fn escape(path: &OsStr) -> String {
        let mut escaped = String::new();
        for &byte in path.as_bytes() {
            if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
                escaped.push(char::from(byte));
            } else {
                escaped.push_str(&format!("%{byte:02X}"));
            }
        }
        escaped
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_linked_home_trash_is_refused_and_nothing_moves() {
            use crate::tools::builtin::files::testing::TestHome;
            let home = TestHome::new();
            let item = home.write("w/a.txt", "keep me");
            let elsewhere = home.outside("elsewhere");
            std::fs::create_dir_all(&elsewhere).unwrap();
            home.symlink(&elsewhere, ".local/share");
            let sandbox = (*home.ctx.sandbox)
                .clone()
                .with_trash_folder(home.path(".local/share/Trash"));
            let error = move_to_trash(&sandbox, &item).unwrap_err();
            assert!(error.to_string().contains("symbolic link"), "{error}");
            assert_eq!(std::fs::read_to_string(&item).unwrap(), "keep me");
            assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        }

        #[test]
        fn paths_are_escaped_for_the_trash_record() {
            assert_eq!(
                escape(OsStr::new("/home/a/my file%.txt")),
                "/home/a/my%20file%25.txt"
            );
        }
    }
}
