//! Walking a folder for listings and searches.
//!
//! Invariants:
//! - Never descends through a symlink. A symlink is reported only when its target (fully
//!   resolved) is visible, and then as what it points to; its `real` path is the target, which
//!   is what readers must open.
//! - Reports only visible entries: inside a root and not protected. When the base folder itself
//!   is protected (so a person approved walking it), entries under it are not hidden for that
//!   reason. Hidden entries (names starting with `.`) are skipped unless asked for, and nothing
//!   under a skipped entry is looked at.
//! - Deterministic: depth first, pre-order, children sorted by name (bytes).
//! - Bounded: at most `max_entries` directory entries are looked at; the caller learns the walk
//!   was cut short. Cancellation is checked at every entry.
//! - Only regular files and folders are reported: FIFOs, sockets and devices are skipped, so no
//!   reader ever blocks on one.
//! - Folders are read and entries looked at through handles opened beneath the root
//!   ([`crate::sandbox::beneath`]): a folder swapped for a symlink during the walk is skipped,
//!   never read through. Readers open `real` the same way.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use rustix::fs::FileType;

use tokio_util::sync::CancellationToken;

use crate::sandbox::Sandbox;
use crate::sandbox::beneath::Beneath;
use crate::tools::ToolError;

/// How far and what to walk.
#[derive(Debug, Clone, Copy)]
pub(super) struct WalkOptions {
    /// Deepest level reported (1 = direct children); `None` = unlimited.
    pub max_depth: Option<usize>,
    /// Report and enter entries whose names start with `.`.
    pub include_hidden: bool,
    /// Most directory entries looked at.
    pub max_entries: usize,
}

/// What an entry is (after following a symlink for the purpose of reporting it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EntryKind {
    /// A regular file.
    File,
    /// A folder.
    Folder,
}

/// One reported entry.
#[derive(Debug, Clone)]
pub(super) struct WalkEntry {
    /// Where it is in the tree (for a symlink: the link itself).
    pub path: PathBuf,
    /// Where it really is (for a symlink: its resolved target); open this one.
    pub real: PathBuf,
    /// Its last component.
    pub name: OsString,
    /// File or folder.
    pub kind: EntryKind,
    /// Size in bytes (files; 0 for folders).
    pub size: u64,
}

/// Whether to keep walking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// Go on.
    Continue,
    /// Stop now (the caller has enough).
    Stop,
}

/// The folder a walk starts from: resolved and existing, and whether it is itself protected
/// (then protected paths beneath it are shown; otherwise they are hidden).
#[derive(Debug, Clone, Copy)]
pub(super) struct WalkBase<'a> {
    pub path: &'a Path,
    pub protected: bool,
}

/// How a walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WalkSummary {
    /// The entry budget ran out before the tree was exhausted.
    pub budget_exhausted: bool,
    /// The visitor asked to stop.
    pub stopped: bool,
    /// Directory entries looked at (reported or not).
    pub looked_at: usize,
}

/// What is left to walk (popped smallest name first), and how many entries were looked at.
#[derive(Default)]
struct Frontier {
    stack: Vec<Pending>,
    looked_at: usize,
}

struct Pending {
    path: PathBuf,
    name: OsString,
    file_type: FileType,
    depth: usize,
}

/// Walks `base` (a resolved, existing folder) and calls `visit` for each visible entry.
pub(super) fn walk(
    sandbox: &Sandbox,
    base: WalkBase<'_>,
    options: WalkOptions,
    cancel: &CancellationToken,
    mut visit: impl FnMut(WalkEntry) -> Flow,
) -> Result<WalkSummary, ToolError> {
    let WalkBase {
        path: base,
        protected: base_protected,
    } = base;
    let visible =
        |path: &Path| sandbox.inside_roots(path) && (base_protected || !sandbox.is_protected(path));
    let mut frontier = Frontier::default();
    let beneath = sandbox.beneath();
    let end = 'walk: {
        if !push_children(&beneath, base, 1, options, &mut frontier) {
            break 'walk End::BudgetExhausted;
        }
        while let Some(pending) = frontier.stack.pop() {
            if cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            let Some(entry) = classify(&beneath, &pending, &visible) else {
                continue;
            };
            let descend = entry.kind == EntryKind::Folder
                && pending.file_type != FileType::Symlink
                && options.max_depth.is_none_or(|max| pending.depth < max);
            if visit(entry) == Flow::Stop {
                break 'walk End::Stopped;
            }
            let depth = pending.depth + 1;
            if descend && !push_children(&beneath, &pending.path, depth, options, &mut frontier) {
                break 'walk End::BudgetExhausted;
            }
        }
        End::Done
    };
    Ok(WalkSummary {
        budget_exhausted: end == End::BudgetExhausted,
        stopped: end == End::Stopped,
        looked_at: frontier.looked_at,
    })
}

#[derive(PartialEq, Eq)]
enum End {
    Done,
    Stopped,
    BudgetExhausted,
}

/// Reads `folder`'s entries, skipping hidden ones unless asked, and pushes them so that the
/// smallest name is popped first. Returns false when the entry budget ran out. Folders that
/// cannot be read (permissions, removed meanwhile) are skipped, as `ls -R` would.
fn push_children(
    beneath: &Beneath<'_>,
    folder: &Path,
    depth: usize,
    options: WalkOptions,
    frontier: &mut Frontier,
) -> bool {
    let Ok(entries) = beneath.read_dir(folder) else {
        return true;
    };
    let mut children = Vec::new();
    for entry in entries {
        frontier.looked_at += 1;
        if frontier.looked_at > options.max_entries {
            return false;
        }
        if !options.include_hidden && is_hidden(&entry.name) {
            continue;
        }
        // The entry's type as the folder lists it: a symlink is a symlink.
        children.push(Pending {
            path: folder.join(&entry.name),
            name: entry.name,
            file_type: entry.file_type,
            depth,
        });
    }
    children.sort_by(|left, right| right.name.cmp(&left.name));
    frontier.stack.extend(children);
    true
}

/// Turns a pending entry into a reported one, or `None` when it must not be reported.
fn classify(
    beneath: &Beneath<'_>,
    pending: &Pending,
    visible: &impl Fn(&Path) -> bool,
) -> Option<WalkEntry> {
    let is_link = pending.file_type == FileType::Symlink;
    let real = if is_link {
        // Reported as its target, only when the whole target is visible; never entered.
        fs::canonicalize(&pending.path).ok()?
    } else {
        // The base is canonical and no link was followed, so this path is real.
        pending.path.clone()
    };
    if !visible(&real) || (is_link && !visible(&pending.path)) {
        return None;
    }
    // Looked at beneath the root: a target swapped meanwhile is not described.
    let stat = beneath.stat(&real).ok()?;
    let kind = match FileType::from_raw_mode(stat.st_mode as _) {
        FileType::Directory => EntryKind::Folder,
        FileType::RegularFile => EntryKind::File,
        _ => return None,
    };
    Some(WalkEntry {
        path: pending.path.clone(),
        real,
        name: pending.name.clone(),
        kind,
        size: if kind == EntryKind::File {
            u64::try_from(stat.st_size).unwrap_or(0)
        } else {
            0
        },
    })
}

/// Whether a name is hidden by convention.
pub(super) fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.')
}

/// A path as text for the model (lossy only for names that are not valid Unicode).
pub(super) fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Converts the `depth` argument (the original's convention: `<= 0` means unlimited).
pub(super) fn depth_limit(depth: Option<i64>) -> Option<usize> {
    match depth {
        Some(depth) if depth > 0 => Some(usize::try_from(depth).unwrap_or(usize::MAX)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::files::testing::TestHome;

    fn collect(home: &TestHome, base: &str, options: WalkOptions) -> (Vec<String>, WalkSummary) {
        let base = home.path(base);
        let mut seen = Vec::new();
        let summary = walk(
            &home.ctx.sandbox,
            WalkBase {
                path: &base,
                protected: false,
            },
            options,
            &CancellationToken::new(),
            |entry| {
                let relative = entry
                    .path
                    .strip_prefix(&base)
                    .unwrap()
                    .display()
                    .to_string();
                seen.push(match entry.kind {
                    EntryKind::Folder => format!("{relative}/"),
                    EntryKind::File => relative,
                });
                Flow::Continue
            },
        )
        .unwrap();
        (seen, summary)
    }

    fn unlimited() -> WalkOptions {
        WalkOptions {
            max_depth: None,
            include_hidden: false,
            max_entries: 1000,
        }
    }

    #[test]
    fn walks_depth_first_in_name_order_and_skips_hidden() {
        let home = TestHome::new();
        home.write("w/b.txt", "b");
        home.write("w/a/z.txt", "z");
        home.write("w/a/y/x.txt", "x");
        home.write("w/.hidden/secret.txt", "s");
        home.write("w/.env", "s");
        home.write("w/c.txt", "c");
        let (seen, summary) = collect(&home, "w", unlimited());
        assert_eq!(
            seen,
            ["a/", "a/y/", "a/y/x.txt", "a/z.txt", "b.txt", "c.txt"]
        );
        assert!(!summary.budget_exhausted && !summary.stopped);

        let (seen, _) = collect(
            &home,
            "w",
            WalkOptions {
                include_hidden: true,
                ..unlimited()
            },
        );
        assert!(seen.contains(&".env".to_owned()));
        assert!(seen.contains(&".hidden/secret.txt".to_owned()));

        let (seen, _) = collect(
            &home,
            "w",
            WalkOptions {
                max_depth: Some(1),
                ..unlimited()
            },
        );
        assert_eq!(seen, ["a/", "b.txt", "c.txt"]);
    }

    #[test]
    fn stops_when_the_entry_budget_runs_out() {
        let home = TestHome::new();
        for index in 0..10 {
            home.write(&format!("w/f{index}.txt"), "x");
        }
        let (seen, summary) = collect(
            &home,
            "w",
            WalkOptions {
                max_entries: 4,
                ..unlimited()
            },
        );
        assert!(summary.budget_exhausted);
        assert!(seen.is_empty(), "the folder is read whole or not at all");
    }

    #[test]
    fn skips_protected_entries_and_symlinks_out_of_the_roots() {
        let home = TestHome::with_protected(&["~/w/private"]);
        home.write("w/private/key.txt", "secret");
        home.write("w/public.txt", "hello");
        home.write_outside("elsewhere/outside.txt", "outside");
        home.symlink(&home.outside("elsewhere"), "w/link-out");
        home.symlink(&home.outside("elsewhere/outside.txt"), "w/file-out");
        home.symlink(&home.path("w/private"), "w/link-private");
        home.write("w/inner/inside.txt", "inside");
        home.symlink(&home.path("w/inner"), "w/link-in");
        let (seen, _) = collect(&home, "w", unlimited());
        assert_eq!(
            seen,
            ["inner/", "inner/inside.txt", "link-in/", "public.txt"]
        );
    }

    #[test]
    fn cancellation_is_an_error() {
        let home = TestHome::new();
        home.write("w/a.txt", "a");
        let cancel = CancellationToken::new();
        cancel.cancel();
        let result = walk(
            &home.ctx.sandbox,
            WalkBase {
                path: &home.path("w"),
                protected: false,
            },
            unlimited(),
            &cancel,
            |_| Flow::Continue,
        );
        assert_eq!(result.unwrap_err(), ToolError::Cancelled);
    }

    #[test]
    fn depth_follows_the_original_convention() {
        assert_eq!(depth_limit(None), None);
        assert_eq!(depth_limit(Some(0)), None);
        assert_eq!(depth_limit(Some(-3)), None);
        assert_eq!(depth_limit(Some(2)), Some(2));
    }
}
