//! `SearchFileContent`: lines containing a text (case-insensitive) in the text files under a
//! folder.
//!
//! Reads only regular files of at most 1 MB that look like UTF-8 text; returns at most 200
//! matching lines and 25 000 characters, each line cut to a window around the match.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use souz_protocol::{Risk, ToolCategory};

use super::folder::{self, CappedResults, FolderSearch, FolderWalk, home};
use super::text::is_likely_binary;
use super::walk::{self, EntryKind, Flow};
use super::{RESULT_LIMIT, SEARCH_FILE_LIMIT_BYTES, blocking, target};
use crate::sandbox::Sandbox;
use crate::tools::{Planned, Tool, ToolContext, ToolError, ToolOutput, input_schema, localized};

/// Characters of a matching line shown before the match (when the line is long).
const LINE_CONTEXT_BEFORE: usize = 150;
/// Characters of a matching line shown in all.
const LINE_WINDOW: usize = 400;

/// Searches file contents.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SearchFileContent;

/// Arguments of `SearchFileContent`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SearchFileContentArgs {
    /// Folder to search in; `~` is the home folder, relative paths start there. Default `~`.
    #[serde(default = "home")]
    pub path: String,
    /// The text to look for (case-insensitive substring of a line).
    pub query: String,
    /// Also search hidden files and folders (names starting with `.`). Default false.
    #[serde(default)]
    pub include_hidden: bool,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContentMatch {
    /// The file (absolute path).
    pub path: String,
    /// 1-based line number.
    pub line_number: usize,
    /// The line, trimmed, cut around the match when long.
    pub line: String,
}

/// What `SearchFileContent` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct SearchOutput {
    /// Matching lines, in walk order (depth first, by name) and line order.
    pub matches: Vec<ContentMatch>,
    /// More matches may exist: a limit (results, output size, or files looked at) was reached.
    pub truncated: bool,
}

impl Tool for SearchFileContent {
    type Args = SearchFileContentArgs;
    type Prepared = FolderSearch;

    fn name(&self) -> &'static str {
        "SearchFileContent"
    }

    fn description(&self) -> &'static str {
        "Searches the CONTENT of text files under a folder for lines containing the query \
         (case-insensitive) and returns each file path with the line number and the matching \
         line. Use it when you know what a file says but not where it is. Files over 1 MB, \
         binary files, and hidden or protected paths are skipped; at most 200 lines are returned."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(input_schema::<SearchOutput>())
    }

    async fn plan(
        &self,
        args: &SearchFileContentArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<FolderSearch>, ToolError> {
        folder::plan_search(ctx, &args.path, "query", &args.query, |query, shown| {
            localized!(
                ctx.language,
                "Search for {query:?} in the files under {shown}",
                "Искать {query:?} в файлах в {shown}"
            )
        })
    }

    async fn run(
        &self,
        args: SearchFileContentArgs,
        prepared: FolderSearch,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        blocking(ctx, move |sandbox, cancel| {
            let needle = prepared.needle;
            let mut matches = CappedResults::new(RESULT_LIMIT);
            let (_, summary) = folder::recheck_and_walk(
                sandbox,
                FolderWalk {
                    raw: &args.path,
                    planned: &prepared.folder.path,
                    max_depth: None,
                    include_hidden: args.include_hidden,
                },
                cancel,
                |entry| {
                    if entry.kind != EntryKind::File || entry.size > SEARCH_FILE_LIMIT_BYTES {
                        return Flow::Continue;
                    }
                    let Some(content) = read_text(sandbox, &entry.real) else {
                        return Flow::Continue;
                    };
                    if !content.to_lowercase().contains(&needle) {
                        return Flow::Continue;
                    }
                    let path = walk::path_text(&entry.path);
                    for (index, line) in content.lines().enumerate() {
                        let lowered = line.to_lowercase();
                        let Some(position) = lowered.find(&needle) else {
                            continue;
                        };
                        let found = ContentMatch {
                            path: path.clone(),
                            line_number: index + 1,
                            line: window(line, &lowered[..position]),
                        };
                        let chars = found.path.chars().count() + found.line.chars().count() + 40;
                        if !matches.push(found, chars) {
                            return Flow::Stop;
                        }
                    }
                    Flow::Continue
                },
            )?;
            let (matches, full) = matches.finish();
            Ok(ToolOutput::json(SearchOutput {
                matches,
                truncated: full || summary.budget_exhausted,
            }))
        })
        .await
    }
}

/// The content of a regular file of at most 1 MB that looks like UTF-8 text, or `None`.
fn read_text(sandbox: &Sandbox, path: &std::path::Path) -> Option<String> {
    let bytes = target::read_regular_file(sandbox, path, SEARCH_FILE_LIMIT_BYTES).ok()?;
    if is_likely_binary(&bytes) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// `line` trimmed, or for a long line a window of it around the match (`before_match` is the
/// lowercased text before the match, used to find the match's position in characters).
fn window(line: &str, before_match: &str) -> String {
    let line = line.trim();
    let total = line.chars().count();
    if total <= LINE_WINDOW {
        return line.to_owned();
    }
    let untrimmed_offset = before_match.chars().count();
    let leading = before_match.len() - before_match.trim_start().len();
    let at = untrimmed_offset.saturating_sub(leading);
    let start = at
        .saturating_sub(LINE_CONTEXT_BEFORE)
        .min(total - LINE_WINDOW);
    let mut out: String = line.chars().skip(start).take(LINE_WINDOW).collect();
    if start > 0 {
        out.insert(0, '…');
    }
    if start + LINE_WINDOW < total {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sandbox::SandboxError;
    use crate::tools::builtin::files::testing::{TestHome, call, plan};

    async fn search(home: &TestHome, arguments: serde_json::Value) -> SearchOutput {
        let output = call(&SearchFileContent, home, arguments).await.unwrap();
        serde_json::from_value(output.structured.unwrap()).unwrap()
    }

    fn relative(home: &TestHome, found: &ContentMatch) -> (String, usize, String) {
        let path = found
            .path
            .strip_prefix(&format!("{}/", home.home.display()))
            .unwrap()
            .to_owned();
        (path, found.line_number, found.line.clone())
    }

    #[tokio::test]
    async fn finds_matching_lines_case_insensitively() {
        let home = TestHome::new();
        home.write(
            "wiki/vr.md",
            "# Sports\n  I do sports in VR for 4 years\nnothing\n",
        );
        home.write("wiki/sub/tmp.txt", "vrvrvr\r\nend");
        home.write("wiki/other.txt", "no match here");
        home.write("wiki/.hidden.txt", "VR in a hidden file");
        home.write("wiki/image.bin", b"VR\0\x01\x02binary".as_slice());
        let output = search(&home, json!({"path": "~/wiki", "query": " vr "})).await;
        let found: Vec<_> = output.matches.iter().map(|m| relative(&home, m)).collect();
        assert_eq!(
            found,
            [
                ("wiki/sub/tmp.txt".to_owned(), 1, "vrvrvr".to_owned()),
                (
                    "wiki/vr.md".to_owned(),
                    2,
                    "I do sports in VR for 4 years".to_owned()
                ),
            ]
        );
        assert!(!output.truncated);

        let output = search(
            &home,
            json!({"path": "~/wiki", "query": "vr", "includeHidden": true}),
        )
        .await;
        assert!(
            output
                .matches
                .iter()
                .any(|m| m.path.ends_with(".hidden.txt"))
        );
    }

    #[tokio::test]
    async fn skips_large_files_and_caps_results() {
        let home = TestHome::new();
        let mut big = "needle\n".to_owned();
        big.push_str(&"x".repeat(SEARCH_FILE_LIMIT_BYTES as usize));
        home.write("s/big.txt", big);
        let output = search(&home, json!({"path": "~/s", "query": "needle"})).await;
        assert!(output.matches.is_empty());

        home.write("s/many.txt", "needle\n".repeat(RESULT_LIMIT + 10));
        let output = search(&home, json!({"path": "~/s", "query": "needle"})).await;
        assert_eq!(output.matches.len(), RESULT_LIMIT);
        assert!(output.truncated);
    }

    #[tokio::test]
    async fn long_lines_are_cut_around_the_match() {
        let home = TestHome::new();
        let line = format!("{}NEEDLE{}", "a".repeat(5_000), "b".repeat(5_000));
        home.write("s/long.txt", &line);
        let output = search(&home, json!({"path": "~/s", "query": "needle"})).await;
        let shown = &output.matches[0].line;
        assert!(shown.contains("NEEDLE"));
        assert!(shown.starts_with('…') && shown.ends_with('…'));
        assert!(shown.chars().count() <= LINE_WINDOW + 2);
    }

    #[tokio::test]
    async fn never_reads_outside_the_roots_or_protected_paths() {
        let home = TestHome::with_protected(&["~/s/keys"]);
        home.write_outside("secret.txt", "needle outside");
        home.symlink(&home.outside("secret.txt"), "s/link.txt");
        home.symlink(&home.outside(""), "s/outdir");
        home.write("s/keys/key.txt", "needle protected");
        home.write("s/ok.txt", "needle inside");
        let output = search(&home, json!({"path": "~/s", "query": "needle"})).await;
        let paths: Vec<_> = output
            .matches
            .iter()
            .map(|m| relative(&home, m).0)
            .collect();
        assert_eq!(paths, ["s/ok.txt"]);
        assert!(matches!(
            plan(
                &SearchFileContent,
                &home,
                json!({"path": "~/s/outdir", "query": "x"})
            )
            .await,
            Err(ToolError::Sandbox(SandboxError::OutsideRoots { .. }))
        ));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn pipes_in_the_tree_are_skipped_not_opened() {
        let home = TestHome::new();
        home.write("s/a.txt", "needle");
        let status = std::process::Command::new("mkfifo")
            .arg(home.path("s/needle-pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        // Opening the pipe for reading would block until a writer came; the search must end.
        let output = search(&home, json!({"path": "~/s", "query": "needle"})).await;
        let paths: Vec<_> = output
            .matches
            .iter()
            .map(|m| relative(&home, m).0)
            .collect();
        assert_eq!(paths, ["s/a.txt"]);
    }

    #[tokio::test]
    async fn an_empty_query_is_refused_before_anything_is_read() {
        let home = TestHome::new();
        let error = plan(&SearchFileContent, &home, json!({"query": "   "}))
            .await
            .unwrap_err();
        assert_eq!(
            error,
            ToolError::InvalidArguments("query must not be empty".into())
        );
    }
}
