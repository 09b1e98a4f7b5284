//! Git repositories inside the roots: the parts of their metadata that make git run code later
//! (hooks, configuration, and the pointers that say where those are), which commands may not
//! write and file tools ask about.
//!
//! Two ways in, one list of names ([`CODE_RUNNING_ENTRIES`]):
//! - by name, for file tools: a path whose components hold `.git` followed by one of the
//!   names, or that is a `.git` file (a pointer to a repository elsewhere), is protected
//!   ([`names_repository_code`]);
//! - by discovery, for commands (Landlock grants by folder, so the places must be known before
//!   the command starts): [`protected_metadata`] finds the repositories in each root (to
//!   [`MAX_DEPTH`] folders down, at most [`MAX_FOLDERS`] folders per root), the one holding
//!   the command's working folder, and their linked git folders, and names each protected
//!   entry, existing or not.
//!
//! Invariants:
//! - Entries are named whether they exist or not: the folder holding a protected path gets no
//!   Landlock rule of its own, so a command cannot create a missing `hooks` folder either.
//! - The walk follows no symbolic link and stops at its bounds; a repository deeper than the
//!   bounds and outside the working folder's ancestry is not found (`docs/security.md` says
//!   so).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Entries of a git folder that make git run code or say where code is found: hooks, the
/// configuration (`core.hooksPath`, `core.fsmonitor`, filters, aliases), per-worktree
/// configuration, the pointer to the common folder, and the git folders of submodules and
/// linked worktrees (each with its own hooks and configuration).
pub(crate) const CODE_RUNNING_ENTRIES: &[&str] = &[
    "hooks",
    "config",
    "config.worktree",
    "commondir",
    "modules",
    "worktrees",
];

/// How many folders below a root the discovery looks for repositories.
pub(crate) const MAX_DEPTH: usize = 4;

/// How many folders per root the discovery reads at most (it stays fast in a large home).
pub(crate) const MAX_FOLDERS: usize = 4096;

/// The name of a repository's git folder (or of the file pointing to it).
const GIT: &str = ".git";

/// Folders the discovery does not enter: they hold dependencies and build output, not the
/// person's repositories, and can be huge.
const SKIPPED_FOLDERS: &[&str] = &["node_modules", "target", ".cache", ".venv", "venv"];

/// Whether `path` names git metadata that runs code, by its components alone (see the
/// module docs); letter case is ignored where the filesystem ignores it.
pub(crate) fn names_repository_code(path: &Path, case_insensitive: bool) -> bool {
    let same = |part: &std::ffi::OsStr, name: &str| {
        part.to_str().is_some_and(|part| {
            part == name || (case_insensitive && part.eq_ignore_ascii_case(name))
        })
    };
    let parts: Vec<&std::ffi::OsStr> = path.iter().collect();
    let inside_git_folder = parts.windows(2).any(|pair| {
        same(pair[0], GIT)
            && CODE_RUNNING_ENTRIES
                .iter()
                .any(|entry| same(pair[1], entry))
    });
    inside_git_folder
        || (parts.last().is_some_and(|last| same(last, GIT))
            && std::fs::symlink_metadata(path).is_ok_and(|metadata| !metadata.is_dir()))
}

/// Every protected path in the repositories commands could change: those found in `roots`
/// and the one holding `working_folder` (see the module docs). Sorted, without duplicates.
pub(crate) fn protected_metadata(roots: &[PathBuf], working_folder: Option<&Path>) -> Vec<PathBuf> {
    let mut git_folders = Vec::new();
    let mut pointers = Vec::new();
    let mut visit = |folder: &Path| inspect(folder, &mut git_folders, &mut pointers);
    for root in roots {
        walk(root, &mut visit);
    }
    if let Some(working_folder) = working_folder {
        for ancestor in working_folder.ancestors() {
            if !roots.iter().any(|root| ancestor.starts_with(root)) {
                break;
            }
            visit(ancestor);
        }
    }
    let mut protected = pointers;
    for git_folder in git_folders {
        protected.extend(
            CODE_RUNNING_ENTRIES
                .iter()
                .map(|entry| git_folder.join(entry)),
        );
    }
    protected.sort();
    protected.dedup();
    protected
}

/// Breadth-first over the folders below `root`, within the bounds, following no link.
fn walk(root: &Path, visit: &mut impl FnMut(&Path)) {
    let mut pending = VecDeque::from([(root.to_path_buf(), 0usize)]);
    let mut read = 0;
    while let Some((folder, depth)) = pending.pop_front() {
        visit(&folder);
        read += 1;
        if read >= MAX_FOLDERS {
            // Queued folders would still cost a visit each: the bound is on visits.
            break;
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let skipped = name == GIT
                || name
                    .to_str()
                    .is_some_and(|name| SKIPPED_FOLDERS.contains(&name));
            if !skipped && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                pending.push_back((entry.path(), depth + 1));
            }
        }
    }
}

/// Records the repository `folder` is (bare) or holds (`.git` folder or pointer file).
fn inspect(folder: &Path, git_folders: &mut Vec<PathBuf>, pointers: &mut Vec<PathBuf>) {
    let dot_git = folder.join(GIT);
    match std::fs::symlink_metadata(&dot_git) {
        Ok(metadata) if metadata.is_dir() => git_folders.push(dot_git),
        Ok(metadata) if metadata.is_file() => {
            if let Some(linked) = pointed_git_folder(&dot_git) {
                add_linked(linked, git_folders);
            }
            pointers.push(dot_git);
        }
        // A link named `.git`: protect the name (a command could redirect it).
        Ok(_) => pointers.push(dot_git),
        Err(_) if is_bare_repository(folder) => git_folders.push(folder.to_path_buf()),
        Err(_) => {}
    }
}

/// A linked git folder (a worktree's or a submodule's) and the common folder it names.
fn add_linked(linked: PathBuf, git_folders: &mut Vec<PathBuf>) {
    let common = read_small(&linked.join("commondir"))
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
        .map(|text| super::normalize_lexically(&linked.join(text)));
    git_folders.push(linked);
    git_folders.extend(common);
}

/// The git folder a `.git` file points to (`gitdir: PATH`, relative to the file's folder).
fn pointed_git_folder(pointer: &Path) -> Option<PathBuf> {
    let text = read_small(pointer)?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    if target.is_empty() {
        return None;
    }
    let folder = pointer.parent()?;
    Some(super::normalize_lexically(&folder.join(target)))
}

/// Most bytes read of a `.git` pointer or a `commondir` file (git's own are one short line).
const POINTER_BYTE_LIMIT: u64 = 4096;

/// The text of the small regular file `path`, if it is one: a command planted these files, so a
/// link (to `/dev/zero`, say), a FIFO (which would block the daemon) or a huge file is not read.
fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(POINTER_BYTE_LIMIT)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// Whether `folder` looks like a bare repository (git's own test: `HEAD`, `objects`, `refs`).
fn is_bare_repository(folder: &Path) -> bool {
    folder.join("HEAD").is_file() && folder.join("objects").is_dir() && folder.join("refs").is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_folder(path: &Path) {
        for folder in ["hooks", "objects", "refs"] {
            std::fs::create_dir_all(path.join(folder)).unwrap();
        }
        std::fs::write(path.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(path.join("config"), "[core]\n").unwrap();
    }

    /// A planted `.git` pointer naming a git folder whose `commondir` is a FIFO (or a link to
    /// `/dev/zero`) must not block or flood the daemon: neither is read.
    #[test]
    fn planted_pointers_to_fifos_and_links_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("work/x")).unwrap();
        std::fs::create_dir_all(root.join("fake")).unwrap();
        std::fs::create_dir_all(root.join("zero")).unwrap();
        std::fs::write(root.join("work/x/.git"), "gitdir: ../../fake\n").unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fake/commondir"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("zero/commondir")).unwrap();
        assert_eq!(read_small(&root.join("fake/commondir")), None);
        assert_eq!(read_small(&root.join("zero/commondir")), None);
        assert!(read_small(&root.join("work/x/.git")).is_some());
        let (sender, receiver) = std::sync::mpsc::channel();
        let roots = vec![root.to_path_buf()];
        std::thread::spawn(move || {
            let _ = sender.send(protected_metadata(&roots, None));
        });
        let protected = receiver
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the scan blocked on the planted FIFO");
        assert!(
            protected.contains(&root.join("fake/hooks")),
            "{protected:?}"
        );
    }

    #[test]
    fn names_of_git_code_are_protected_anywhere_by_their_components() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        std::fs::create_dir_all(base.join("folder/.git")).unwrap();
        std::fs::create_dir_all(base.join("linked")).unwrap();
        std::fs::write(base.join("linked/.git"), "gitdir: ../folder/.git\n").unwrap();
        for protected in [
            "x/.git/hooks",
            "x/.git/hooks/pre-commit",
            "x/.git/config",
            "x/.git/config.worktree",
            "x/.git/modules/sub/hooks/post-checkout",
            "x/.git/worktrees/w/commondir",
            "linked/.git",
        ] {
            assert!(
                names_repository_code(&base.join(protected), false),
                "{protected}"
            );
        }
        for open in [
            "x/.git",
            "folder/.git",
            "x/.git/HEAD",
            "x/.git/objects/ab/cdef",
            "x/hooks/pre-commit",
            "x/config",
            "x/.github/hooks",
        ] {
            assert!(!names_repository_code(&base.join(open), false), "{open}");
        }
        assert!(!names_repository_code(&base.join("x/.GIT/HOOKS"), false));
        assert!(names_repository_code(&base.join("x/.GIT/HOOKS"), true));
    }

    #[test]
    fn discovery_finds_repositories_in_roots_and_around_the_working_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git_folder(&root.join(".git"));
        git_folder(&root.join("projects/app/.git"));
        // A linked worktree: its pointer, its git folder and the common one it names.
        std::fs::create_dir_all(root.join("projects/app/.git/worktrees/wt")).unwrap();
        std::fs::write(
            root.join("projects/app/.git/worktrees/wt/commondir"),
            "../..\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("wt")).unwrap();
        std::fs::write(
            root.join("wt/.git"),
            "gitdir: ../projects/app/.git/worktrees/wt\n",
        )
        .unwrap();
        git_folder(&root.join("remote.git"));
        // Deeper than the walk; found only from a working folder inside it.
        let deep = root.join("a/b/c/d/e/deep");
        git_folder(&deep.join(".git"));
        std::fs::create_dir_all(deep.join("src")).unwrap();
        // Dependencies are not entered.
        git_folder(&root.join("node_modules/pkg/.git"));

        let roots = vec![root.clone()];
        let found = protected_metadata(&roots, None);
        let has = |relative: &str| found.contains(&root.join(relative));
        for entry in CODE_RUNNING_ENTRIES {
            assert!(has(&format!(".git/{entry}")), "{entry}: {found:?}");
            assert!(has(&format!("projects/app/.git/{entry}")), "{entry}");
            assert!(has(&format!("remote.git/{entry}")), "{entry}");
            assert!(
                has(&format!("projects/app/.git/worktrees/wt/{entry}")),
                "{entry}"
            );
        }
        assert!(has("wt/.git"), "{found:?}");
        assert!(!has("a/b/c/d/e/deep/.git/hooks"), "{found:?}");
        assert!(!has("node_modules/pkg/.git/hooks"), "{found:?}");

        let from_inside = protected_metadata(&roots, Some(&deep.join("src")));
        assert!(from_inside.contains(&deep.join(".git/hooks")));
        assert!(from_inside.contains(&deep.join(".git/config")));
        // A working folder outside the roots adds nothing.
        let elsewhere = tempfile::tempdir().unwrap();
        git_folder(&elsewhere.path().join(".git"));
        assert_eq!(protected_metadata(&roots, Some(elsewhere.path())), found);
    }
}
