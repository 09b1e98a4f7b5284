//! Reading a folder, the steps `ListFiles`, `SearchFileContent` and `FindFilesByName` share:
//! `plan` resolves the folder (it must exist and be a folder) and asks to read it; `run`
//! re-checks that the argument still resolves there and walks it, never looking at more than
//! [`WALK_ENTRY_LIMIT`] entries. The searches (`FindFolders` too) also share how the text
//! looked for is read ([`needle`]) and how results are kept within the output limits
//! ([`CappedResults`]).

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::walk::{self, Flow, WalkBase, WalkEntry, WalkOptions, WalkSummary};
use super::{OUTPUT_LIMIT_CHARS, WALK_ENTRY_LIMIT, target};
use crate::sandbox::{Access, ResolvedPath, Sandbox};
use crate::tools::{Plan, Planned, ToolContext, ToolError};

/// The default folder argument: the home folder.
pub(super) fn home() -> String {
    "~".to_owned()
}

/// What a search's `plan` hands to `run`: the folder searched and the text looked for
/// (trimmed, lowercased).
#[derive(Debug)]
pub(crate) struct FolderSearch {
    /// The folder, as resolved when planning.
    pub(super) folder: ResolvedPath,
    /// The text looked for, trimmed and lowercased.
    pub(super) needle: String,
}

/// The text a search looks for: `value` (the argument `field`) trimmed and lowercased, refused
/// when nothing is left.
pub(super) fn needle(field: &str, value: &str) -> Result<String, ToolError> {
    let needle = value.trim().to_lowercase();
    if needle.is_empty() {
        return Err(ToolError::InvalidArguments(format!(
            "{field} must not be empty"
        )));
    }
    Ok(needle)
}

/// Resolves `raw` as an existing folder to read.
pub(super) fn resolve_folder(ctx: &ToolContext, raw: &str) -> Result<ResolvedPath, ToolError> {
    let folder = ctx.sandbox.resolve(raw, Access::Read)?;
    if !folder.path.is_dir() {
        return Err(ToolError::InvalidArguments(format!(
            "`{}` is not a folder",
            ctx.sandbox.display(&folder.path)
        )));
    }
    Ok(folder)
}

/// Plans reading the folder `raw`: resolves it, targets it for reading and hands it to `run`;
/// `describe` gets the folder as shown to people and returns the summary.
pub(super) fn plan_read(
    ctx: &ToolContext,
    raw: &str,
    describe: impl FnOnce(&str) -> String,
) -> Result<Planned<ResolvedPath>, ToolError> {
    let folder = resolve_folder(ctx, raw)?;
    let summary = describe(&ctx.sandbox.display(&folder.path));
    Ok(Plan::new(summary).path(&folder, Access::Read).with(folder))
}

/// Plans searching the folder `raw` for `query` (the argument `field`): refuses an empty query,
/// then plans reading the folder as [`plan_read`] does; `describe` gets the trimmed query and
/// the folder as shown to people and returns the summary.
pub(super) fn plan_search(
    ctx: &ToolContext,
    raw: &str,
    field: &str,
    query: &str,
    describe: impl FnOnce(&str, &str) -> String,
) -> Result<Planned<FolderSearch>, ToolError> {
    let needle = needle(field, query)?;
    let Planned {
        plan,
        prepared: folder,
    } = plan_read(ctx, raw, |shown| describe(query.trim(), shown))?;
    Ok(plan.with(FolderSearch { folder, needle }))
}

/// A planned folder walk: the path as given (`raw`), the folder it resolved to when planned,
/// how deep to go (`None`: all the way) and whether hidden entries are included.
#[derive(Debug, Clone, Copy)]
pub(super) struct FolderWalk<'a> {
    pub raw: &'a str,
    pub planned: &'a Path,
    pub max_depth: Option<usize>,
    pub include_hidden: bool,
}

/// At run time: re-checks that `raw` still resolves to the `planned` folder, then walks it down
/// to `max_depth` (`None`: all the way), hidden entries only if `include_hidden`, looking at no
/// more than [`WALK_ENTRY_LIMIT`] entries, and calls `visit` for each visible entry. Returns the
/// folder and how the walk ended.
pub(super) fn recheck_and_walk(
    sandbox: &Sandbox,
    walk: FolderWalk<'_>,
    cancel: &CancellationToken,
    visit: impl FnMut(WalkEntry) -> Flow,
) -> Result<(ResolvedPath, WalkSummary), ToolError> {
    let FolderWalk {
        raw,
        planned,
        max_depth,
        include_hidden,
    } = walk;
    let folder = target::recheck(sandbox, raw, Access::Read, planned)?;
    let options = WalkOptions {
        max_depth,
        include_hidden,
        max_entries: WALK_ENTRY_LIMIT,
    };
    let base = WalkBase {
        path: &folder.path,
        protected: folder.protected,
    };
    let summary = walk::walk(sandbox, base, options, cancel, visit)?;
    Ok((folder, summary))
}

/// Results kept while the output stays small: at most `limit` of them and
/// [`OUTPUT_LIMIT_CHARS`] characters in all.
#[derive(Debug)]
pub(super) struct CappedResults<T> {
    items: Vec<T>,
    limit: usize,
    chars: usize,
    full: bool,
}

impl<T> CappedResults<T> {
    /// No results yet; at most `limit` will be kept.
    pub(super) fn new(limit: usize) -> Self {
        Self {
            items: Vec::new(),
            limit,
            chars: 0,
            full: false,
        }
    }

    /// Keeps `item`, which takes `chars` characters of output, unless that would pass a limit:
    /// then it is dropped, the results are full, and `false` says to stop looking.
    pub(super) fn push(&mut self, item: T, chars: usize) -> bool {
        self.chars += chars;
        if self.items.len() >= self.limit || self.chars > OUTPUT_LIMIT_CHARS {
            self.full = true;
            return false;
        }
        self.items.push(item);
        true
    }

    /// The results kept, and whether one was dropped because a limit was reached.
    pub(super) fn finish(self) -> (Vec<T>, bool) {
        (self.items, self.full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needles_are_trimmed_lowercased_and_never_empty() {
        assert_eq!(needle("query", "  Budget 2024 ").unwrap(), "budget 2024");
        assert_eq!(
            needle("fileName", " \t ").unwrap_err(),
            ToolError::InvalidArguments("fileName must not be empty".into())
        );
    }

    #[test]
    fn capped_results_stop_at_the_count_or_the_characters() {
        let mut results = CappedResults::new(2);
        assert!(results.push("a", 1));
        assert!(results.push("b", 1));
        assert!(!results.push("c", 1));
        assert_eq!(results.finish(), (vec!["a", "b"], true));

        let mut results = CappedResults::new(10);
        assert!(results.push("a", OUTPUT_LIMIT_CHARS));
        assert!(!results.push("b", 1));
        assert_eq!(results.finish(), (vec!["a"], true));

        let mut results = CappedResults::new(10);
        assert!(results.push("a", 1));
        assert_eq!(results.finish(), (vec!["a"], false));
    }
}
