//! Path decisions shared by the file tools: re-checking a planned path at run time, finding
//! what a delete or move really acts on (a symlink itself, never its target), refusing to
//! remove a root or the home folder, and counting what is inside a folder before it is moved
//! or trashed (so the person sees the size and the policy sees protected paths inside).
//!
//! Invariants:
//! - A path used by `run` is the one `plan` showed: `recheck` re-resolves and refuses with
//!   [`ToolError::Conflict`] if it now resolves elsewhere.
//! - Deleting or moving never follows a final symlink: the link moves, its target stays put.
//! - A root, the user's home, and any folder containing one are never deleted or moved.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::sandbox::{
    Access, ResolvedPath, Sandbox, SandboxError, expand_home, normalize_lexically,
};
use crate::tools::{Language, ToolError, words};

/// What an existing path is, without following a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Folder,
    /// A symbolic link (acted on itself).
    Symlink,
    /// A FIFO, socket or device.
    Special,
}

impl Kind {
    /// How a plan's summary names it as the object of its verb ("move the folder ..."; in
    /// Russian the accusative: "переместить папку ...").
    pub(crate) fn object(self, language: Language) -> &'static str {
        match (self, language) {
            (_, Language::En) => self.noun(),
            (Self::File, Language::Ru) => "файл",
            (Self::Folder, Language::Ru) => "папку",
            (Self::Symlink, Language::Ru) => "символическую ссылку",
            (Self::Special, Language::Ru) => "специальный файл",
        }
    }

    /// How people call it.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Folder => "folder",
            Self::Symlink => "symbolic link",
            Self::Special => "special file",
        }
    }

    /// The kind of what is at `path` (not following a final symlink).
    pub(crate) fn of(path: &Path) -> io::Result<Self> {
        let file_type = fs::symlink_metadata(path)?.file_type();
        Ok(if file_type.is_symlink() {
            Self::Symlink
        } else if file_type.is_dir() {
            Self::Folder
        } else if file_type.is_file() {
            Self::File
        } else {
            Self::Special
        })
    }
}

/// An existing path a delete or move acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    /// The path acted on: the resolved path, or the symlink itself when the argument names one.
    pub path: PathBuf,
    /// What it is.
    pub kind: Kind,
    /// Whether it is (inside) a protected path.
    pub protected: bool,
}

/// Resolves `raw` (which must exist) for removal from its place. When `raw` names a symlink
/// whose target the sandbox accepted, the link itself is the object: trashing or moving a link
/// must never touch what it points to.
pub(super) fn locate_existing(sandbox: &Sandbox, raw: &str) -> Result<Located, ToolError> {
    let resolved = sandbox.resolve(raw, Access::Delete)?;
    let lexical = lexical_input(raw, sandbox.user_home())?;
    if let Some(link) = symlink_named_by(sandbox, &lexical, &resolved.path) {
        return Ok(Located {
            protected: sandbox.is_protected(&link),
            path: link,
            kind: Kind::Symlink,
        });
    }
    let kind = Kind::of(&resolved.path).map_err(|error| io_failure("inspect", raw, &error))?;
    Ok(Located {
        path: resolved.path,
        kind,
        protected: resolved.protected,
    })
}

/// The path as written, made absolute and lexically normalized, without following anything.
///
/// This mirrors the sandbox's reading of tool paths (trim, one pair of surrounding quotes, a
/// leading `~`, `$HOME` or `${HOME}`, relative to the home folder) because the sandbox only
/// hands out fully resolved paths, and a delete or move must know whether the last component
/// is a symlink. `file://` URLs are refused here rather than parsed a second way: a mismatch
/// could make a move or delete act on a link's target instead of the link.
pub(super) fn lexical_input(raw: &str, home: &Path) -> Result<PathBuf, ToolError> {
    let text = strip_quotes(raw.trim()).trim();
    if text
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("file://"))
    {
        return Err(ToolError::InvalidArguments(
            "give the path itself (like ~/Documents/a.txt), not a file:// URL".into(),
        ));
    }
    let mut expanded = None;
    for prefix in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = text.strip_prefix(prefix) {
            if rest.is_empty() {
                expanded = Some(home.to_path_buf());
            } else if let Some(rest) = rest.strip_prefix('/') {
                expanded = Some(home.join(rest.trim_start_matches('/')));
            }
            break;
        }
    }
    let expanded = expanded.unwrap_or_else(|| expand_home(text, home));
    let absolute = if expanded.is_absolute() {
        expanded
    } else {
        home.join(expanded)
    };
    Ok(normalize_lexically(&absolute))
}

/// Strips one pair of matching surrounding quotes or backticks (models often quote paths).
pub(super) fn strip_quotes(text: &str) -> &str {
    const PAIRS: &[(char, char)] = &[
        ('"', '"'),
        ('\'', '\''),
        ('`', '`'),
        ('\u{201C}', '\u{201D}'),
        ('\u{2018}', '\u{2019}'),
    ];
    PAIRS
        .iter()
        .find_map(|(open, close)| text.strip_prefix(*open)?.strip_suffix(*close))
        .unwrap_or(text)
}

/// When `lexical` (the path as written) ends in a symlink that resolves to `resolved`, the
/// link's own path with its folder resolved; else `None`. The cross-check against `resolved`
/// means this can only ever name a link that leads to what the sandbox already accepted.
fn symlink_named_by(sandbox: &Sandbox, lexical: &Path, resolved: &Path) -> Option<PathBuf> {
    if !fs::symlink_metadata(lexical).ok()?.file_type().is_symlink() {
        return None;
    }
    if fs::canonicalize(lexical).ok()? != resolved {
        return None;
    }
    let name = lexical.file_name()?;
    let folder = sandbox
        .resolve(lexical.parent()?.to_str()?, Access::Read)
        .ok()?;
    let link = folder.path.join(name);
    fs::symlink_metadata(&link)
        .ok()?
        .file_type()
        .is_symlink()
        .then_some(link)
}

/// Re-resolves `raw` at run time and refuses if it no longer resolves to `planned`.
pub(super) fn recheck(
    sandbox: &Sandbox,
    raw: &str,
    access: Access,
    planned: &Path,
) -> Result<ResolvedPath, ToolError> {
    let resolved = match sandbox.resolve(raw, access) {
        Ok(resolved) => resolved,
        Err(SandboxError::NotFound(_)) => {
            return Err(ToolError::Conflict(format!(
                "`{}` no longer exists; it was removed after the call was planned",
                sandbox.display(planned)
            )));
        }
        Err(error) => return Err(error.into()),
    };
    if resolved.path != planned {
        return Err(ToolError::Conflict(format!(
            "`{raw}` now resolves to `{}` instead of `{}`; plan the call again",
            sandbox.display(&resolved.path),
            sandbox.display(planned)
        )));
    }
    Ok(resolved)
}

/// Re-checks a located path at run time (same object, same kind).
pub(super) fn recheck_located(
    sandbox: &Sandbox,
    raw: &str,
    planned: &Located,
) -> Result<(), ToolError> {
    let now = match locate_existing(sandbox, raw) {
        Ok(now) => now,
        Err(ToolError::Sandbox(SandboxError::NotFound(_))) => {
            return Err(ToolError::Conflict(format!(
                "`{}` no longer exists; it was removed after the call was planned",
                sandbox.display(&planned.path)
            )));
        }
        Err(error) => return Err(error),
    };
    if now.path != planned.path || now.kind != planned.kind {
        return Err(ToolError::Conflict(format!(
            "`{raw}` changed after the call was planned (it is now the {} `{}`); plan the call again",
            now.kind.noun(),
            sandbox.display(&now.path)
        )));
    }
    Ok(())
}

/// Refuses to remove a workspace root, the user's home, or a folder that contains either.
pub(super) fn refuse_removing_anchor(sandbox: &Sandbox, path: &Path) -> Result<(), ToolError> {
    let home = sandbox.user_home();
    if home.starts_with(path) {
        return Err(ToolError::InvalidArguments(format!(
            "`{}` is your home folder (or contains it); it cannot be deleted or moved",
            sandbox.display(path)
        )));
    }
    if let Some(root) = sandbox.roots().iter().find(|root| root.starts_with(path)) {
        return Err(ToolError::InvalidArguments(format!(
            "`{}` is a workspace root (or contains the root `{}`); it cannot be deleted or moved",
            sandbox.display(path),
            sandbox.display(root)
        )));
    }
    Ok(())
}

/// The nearest existing ancestor of `path` must be a folder, or parents cannot be created.
pub(super) fn require_folder_ancestor(sandbox: &Sandbox, path: &Path) -> Result<(), ToolError> {
    let mut ancestor = path.parent();
    while let Some(candidate) = ancestor {
        match fs::metadata(candidate) {
            Ok(metadata) if metadata.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(ToolError::InvalidArguments(format!(
                    "`{}` is a file, so `{}` cannot be created inside it",
                    sandbox.display(candidate),
                    sandbox.display(path)
                )));
            }
            Err(_) => ancestor = candidate.parent(),
        }
    }
    Err(ToolError::InvalidArguments(format!(
        "`{}` has no existing parent folder",
        sandbox.display(path)
    )))
}

/// Creates the missing parent folders of `path` (shown to people as `shown`) before something
/// is put there, one component at a time beneath its root (never through a symlink).
pub(super) fn create_parent_folders(
    sandbox: &Sandbox,
    path: &Path,
    shown: &str,
) -> Result<(), ToolError> {
    if let Some(parent) = path.parent() {
        sandbox
            .beneath()
            .create_dir_all(parent)
            .map_err(|error| io_failure("create the folders for", shown, &error))?;
    }
    Ok(())
}

/// What is inside a folder, counted without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Census {
    /// Files (and symlinks and special files) inside.
    pub files: u64,
    /// Folders inside (not counting the folder itself).
    pub folders: u64,
    /// Total size of the regular files.
    pub bytes: u64,
    /// Some entry inside is protected.
    pub protected_inside: bool,
    /// The count stopped at the entry limit; the numbers are lower bounds.
    pub incomplete: bool,
}

impl Census {
    /// "12 files, 3 folders, 1.2 MB" (with "at least" when incomplete), in `language`.
    pub(super) fn describe(&self, language: Language) -> String {
        let counts = format!(
            "{}, {}, {}",
            words::FILE.count(self.files, language),
            words::FOLDER.count(self.folders, language),
            words::size(self.bytes, language)
        );
        match (self.incomplete, language) {
            (false, _) => counts,
            (true, Language::En) => format!("at least {counts}"),
            (true, Language::Ru) => format!("не меньше чем {counts}"),
        }
    }

    /// Counts what is under `folder`, looking at no more than `max_entries` entries.
    pub(super) fn of(
        sandbox: &Sandbox,
        folder: &Path,
        max_entries: usize,
        cancel: &CancellationToken,
    ) -> Result<Self, ToolError> {
        let mut census = Self::default();
        let mut looked_at = 0usize;
        let mut pending = vec![folder.to_path_buf()];
        let beneath = sandbox.beneath();
        while let Some(current) = pending.pop() {
            let Ok(entries) = beneath.read_dir(&current) else {
                continue;
            };
            for entry in entries {
                if cancel.is_cancelled() {
                    return Err(ToolError::Cancelled);
                }
                looked_at += 1;
                if looked_at > max_entries {
                    census.incomplete = true;
                    return Ok(census);
                }
                let path = current.join(&entry.name);
                if sandbox.is_protected(&path) {
                    census.protected_inside = true;
                }
                match entry.file_type {
                    rustix::fs::FileType::Directory => {
                        census.folders += 1;
                        pending.push(path);
                    }
                    rustix::fs::FileType::RegularFile => {
                        census.files += 1;
                        census.bytes += beneath
                            .stat(&path)
                            .map(|stat| u64::try_from(stat.st_size).unwrap_or(0))
                            .unwrap_or(0);
                    }
                    _ => census.files += 1,
                }
            }
        }
        Ok(census)
    }
}

/// Bytes for the model's messages, in English: "512 B", "1.2 KB", "3.4 MB".
pub(super) fn human_size(bytes: u64) -> String {
    words::size(bytes, Language::En)
}

/// Reads the regular file at `path` (resolved), at most `limit` bytes (more is an error). The
/// checks are made on the opened handle, and the open (beneath the root, see
/// [`crate::sandbox::beneath`]) follows no symlink at any level nor waits on a pipe, so a file
/// or folder swapped for a link or a FIFO after it was looked at is refused, never read.
pub(super) fn read_regular_file(sandbox: &Sandbox, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = sandbox.beneath().open_read(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file",
        ));
    }
    if metadata.len() > limit {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("it is larger than {}", human_size(limit)),
        ));
    }
    let mut content = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    // The file may grow after the size check; never hold more than the limit.
    io::Read::read_to_end(&mut io::Read::take(file, limit + 1), &mut content)?;
    if content.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("it is larger than {}", human_size(limit)),
        ));
    }
    Ok(content)
}

/// An I/O error as a tool failure naming the path; a swap caught by
/// [`crate::sandbox::beneath`] is a conflict (the world moved since the check), not a failure.
pub(super) fn io_failure(action: &str, path: &str, error: &io::Error) -> ToolError {
    let message = format!("cannot {action} `{path}`: {error}");
    if crate::sandbox::beneath::is_swapped(error) {
        ToolError::Conflict(message)
    } else {
        ToolError::Failed(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::files::testing::TestHome;

    #[test]
    fn a_symlink_is_located_as_itself() {
        let home = TestHome::new();
        let target = home.write("w/real.txt", "data");
        let link = home.symlink(&target, "w/link.txt");
        let located = locate_existing(&home.ctx.sandbox, "~/w/link.txt").unwrap();
        assert_eq!(located.path, link);
        assert_eq!(located.kind, Kind::Symlink);
        let located = locate_existing(&home.ctx.sandbox, "~/w/real.txt").unwrap();
        assert_eq!(located.path, target);
        assert_eq!(located.kind, Kind::File);
        let folder = home.folder("w/sub");
        let located = locate_existing(&home.ctx.sandbox, "w/sub").unwrap();
        assert_eq!((located.path, located.kind), (folder, Kind::Folder));
    }

    #[test]
    fn a_quoted_or_variable_path_to_a_symlink_still_names_the_link() {
        let home = TestHome::new();
        let target = home.write("w/real.txt", "data");
        let link = home.symlink(&target, "w/my link.txt");
        for raw in [
            "'~/w/my link.txt'",
            "\"$HOME/w/my link.txt\"",
            "${HOME}/w/my link.txt",
            "  `w/my link.txt` ",
        ] {
            assert_eq!(
                lexical_input(raw, &home.home).unwrap(),
                home.path("w/my link.txt"),
                "{raw}"
            );
        }
        let located = locate_existing(&home.ctx.sandbox, "~/w/my link.txt").unwrap();
        assert_eq!((located.path, located.kind), (link, Kind::Symlink));
        assert!(matches!(
            lexical_input("file:///tmp/x", &home.home),
            Err(ToolError::InvalidArguments(_))
        ));
    }

    #[test]
    fn a_symlink_pointing_outside_is_refused_by_the_sandbox() {
        let home = TestHome::new();
        let outside = home.write_outside("secret.txt", "s");
        home.symlink(&outside, "w/out.txt");
        assert!(matches!(
            locate_existing(&home.ctx.sandbox, "~/w/out.txt"),
            Err(ToolError::Sandbox(SandboxError::OutsideRoots { .. }))
        ));
    }

    #[test]
    fn roots_and_home_are_anchors() {
        let home = TestHome::new();
        let sandbox = &home.ctx.sandbox;
        assert!(refuse_removing_anchor(sandbox, &home.home).is_err());
        assert!(refuse_removing_anchor(sandbox, home.home.parent().unwrap()).is_err());
        assert!(refuse_removing_anchor(sandbox, &home.path("w")).is_ok());
    }

    #[test]
    fn census_counts_and_flags_protected_entries() {
        let home = TestHome::with_protected(&["~/w/keys"]);
        home.write("w/a.txt", "12345");
        home.write("w/sub/b.txt", "123");
        home.write("w/keys/k", "k");
        let census = Census::of(
            &home.ctx.sandbox,
            &home.path("w"),
            1000,
            &CancellationToken::new(),
        )
        .unwrap();
        assert_eq!((census.files, census.folders, census.bytes), (3, 2, 9));
        assert!(census.protected_inside && !census.incomplete);
        assert_eq!(census.describe(Language::En), "3 files, 2 folders, 9 B");
        assert_eq!(census.describe(Language::Ru), "3 файла, 2 папки, 9 Б");
        let limited = Census::of(
            &home.ctx.sandbox,
            &home.path("w"),
            2,
            &CancellationToken::new(),
        )
        .unwrap();
        assert!(limited.incomplete);
        assert!(limited.describe(Language::En).starts_with("at least "));
    }

    #[test]
    fn recheck_notices_a_path_that_moved() {
        let home = TestHome::new();
        let first = home.write("w/a/file.txt", "a");
        let resolved = home.ctx.sandbox.resolve("~/w/link/file.txt", Access::Write);
        // `link` does not exist yet: it resolves lexically under ~/w/link.
        let planned = resolved.unwrap().path;
        home.symlink(&home.path("w/a"), "w/link");
        let error = recheck(
            &home.ctx.sandbox,
            "~/w/link/file.txt",
            Access::Write,
            &planned,
        )
        .unwrap_err();
        assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");
        assert!(recheck(&home.ctx.sandbox, "~/w/a/file.txt", Access::Read, &first).is_ok());
        std::fs::remove_file(&first).unwrap();
        assert!(matches!(
            recheck(&home.ctx.sandbox, "~/w/a/file.txt", Access::Read, &first),
            Err(ToolError::Conflict(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn reading_refuses_links_pipes_and_oversized_files() {
        let home = TestHome::new();
        let file = home.write("w/a.txt", "hello");
        let sandbox = &home.ctx.sandbox;
        assert_eq!(read_regular_file(sandbox, &file, 5).unwrap(), b"hello");
        assert_eq!(
            read_regular_file(sandbox, &file, 4).unwrap_err().kind(),
            io::ErrorKind::FileTooLarge
        );
        let link = home.symlink(&file, "w/link.txt");
        assert!(
            read_regular_file(sandbox, &link, 100).is_err(),
            "a final symlink is not followed"
        );
        let pipe = home.path("w/pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&pipe)
            .status()
            .unwrap();
        assert!(status.success());
        // Would block forever if the open waited for a writer.
        assert_eq!(
            read_regular_file(sandbox, &pipe, 100).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn a_file_in_the_way_of_parent_folders_is_refused() {
        let home = TestHome::new();
        home.write("w/file.txt", "x");
        let error = require_folder_ancestor(&home.ctx.sandbox, &home.path("w/file.txt/a/b.txt"))
            .unwrap_err();
        assert_eq!(
            error,
            ToolError::InvalidArguments(
                "`~/w/file.txt` is a file, so `~/w/file.txt/a/b.txt` cannot be created inside it"
                    .into()
            )
        );
        assert!(require_folder_ancestor(&home.ctx.sandbox, &home.path("w/new/deep.txt")).is_ok());
    }

    #[test]
    fn a_swap_is_a_conflict_naming_the_path() {
        let home = TestHome::new();
        let outside = home.write_outside("secret.txt", "s");
        home.symlink(outside.parent().unwrap(), "w/swapped");
        let error = read_regular_file(&home.ctx.sandbox, &home.path("w/swapped/secret.txt"), 10)
            .unwrap_err();
        let ToolError::Conflict(message) = io_failure("read", "~/w/swapped/secret.txt", &error)
        else {
            panic!("a swap is a conflict: {error:?}");
        };
        assert!(
            message.starts_with("cannot read `~/w/swapped/secret.txt`: `")
                && message.contains("changed while Souz was using it"),
            "{message}"
        );
        let missing = io::Error::from(io::ErrorKind::NotFound);
        assert!(matches!(
            io_failure("read", "x", &missing),
            ToolError::Failed(_)
        ));
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_size(999), "999 B");
        assert_eq!(human_size(1_200), "1.2 KB");
        assert_eq!(human_size(3_400_000), "3.4 MB");
    }
}
