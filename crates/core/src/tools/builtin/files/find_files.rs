//! `FindFilesByName`: files whose name contains a text (case-insensitive) under a folder.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use souz_protocol::{Risk, ToolCategory};

use super::folder::{self, CappedResults, FolderSearch, FolderWalk, home};
use super::walk::{self, EntryKind, Flow};
use super::{RESULT_LIMIT, blocking};
use crate::tools::{Planned, Tool, ToolContext, ToolError, ToolOutput, input_schema, localized};

/// Finds files by name.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FindFilesByName;

/// Arguments of `FindFilesByName`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct FindFilesByNameArgs {
    /// Folder to search in; `~` is the home folder, relative paths start there. Default `~`.
    #[serde(default = "home")]
    pub path: String,
    /// The name or part of the name of the file (case-insensitive).
    pub file_name: String,
    /// Also search hidden files and folders (names starting with `.`). Default false.
    #[serde(default)]
    pub include_hidden: bool,
}

/// What `FindFilesByName` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FindFilesByNameOutput {
    /// Absolute paths of matching files, depth first, sorted by name.
    pub files: Vec<String>,
    /// More matches may exist: a limit (200 results, output size, or files looked at) was reached.
    pub truncated: bool,
}

impl Tool for FindFilesByName {
    type Args = FindFilesByNameArgs;
    type Prepared = FolderSearch;

    fn name(&self) -> &'static str {
        "FindFilesByName"
    }

    fn description(&self) -> &'static str {
        "[PRIMARY TOOL for finding files] Finds the paths of files whose name contains fileName \
         (case-insensitive), searching the folder `path` and everything under it (default: the \
         home folder). Use it when asked \"find file X\" or \"where is file Y\". Hidden and \
         protected paths are skipped; at most 200 paths are returned."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(input_schema::<FindFilesByNameOutput>())
    }

    async fn plan(
        &self,
        args: &FindFilesByNameArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<FolderSearch>, ToolError> {
        folder::plan_search(
            ctx,
            &args.path,
            "fileName",
            &args.file_name,
            |name, shown| {
                localized!(
                    ctx.language,
                    "Find files named like {name:?} under {shown}",
                    "Найти файлы с именем вроде {name:?} в {shown}"
                )
            },
        )
    }

    async fn run(
        &self,
        args: FindFilesByNameArgs,
        prepared: FolderSearch,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        blocking(ctx, move |sandbox, cancel| {
            let mut files = CappedResults::new(RESULT_LIMIT);
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
                    let name = entry.name.to_string_lossy().to_lowercase();
                    if entry.kind != EntryKind::File || !name.contains(&prepared.needle) {
                        return Flow::Continue;
                    }
                    let path = walk::path_text(&entry.path);
                    let chars = path.chars().count() + 3;
                    if files.push(path, chars) {
                        Flow::Continue
                    } else {
                        Flow::Stop
                    }
                },
            )?;
            let (files, full) = files.finish();
            Ok(ToolOutput::json(FindFilesByNameOutput {
                files,
                truncated: full || summary.budget_exhausted,
            }))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::builtin::files::testing::{TestHome, call, plan};

    async fn find(home: &TestHome, arguments: serde_json::Value) -> FindFilesByNameOutput {
        let output = call(&FindFilesByName, home, arguments).await.unwrap();
        serde_json::from_value(output.structured.unwrap()).unwrap()
    }

    fn relative(home: &TestHome, paths: &[String]) -> Vec<String> {
        let prefix = format!("{}/", home.home.display());
        paths
            .iter()
            .map(|path| path.strip_prefix(&prefix).unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn finds_files_by_part_of_the_name() {
        let home = TestHome::new();
        home.write("Documents/Work/budget_2024.xlsx", "x");
        home.write("Downloads/Budget_2024_v2.xlsx", "x");
        home.folder("Downloads/budget_2024_folder");
        home.write("Downloads/.budget_2024_hidden", "x");
        home.write("Downloads/other.txt", "x");
        let output = find(&home, json!({"fileName": "budget_2024"})).await;
        assert_eq!(
            relative(&home, &output.files),
            [
                "Documents/Work/budget_2024.xlsx",
                "Downloads/Budget_2024_v2.xlsx"
            ]
        );
        assert!(!output.truncated);
        let output = find(
            &home,
            json!({"path": "~/Downloads", "fileName": "BUDGET", "includeHidden": true}),
        )
        .await;
        assert_eq!(
            relative(&home, &output.files),
            [
                "Downloads/.budget_2024_hidden",
                "Downloads/Budget_2024_v2.xlsx"
            ]
        );
    }

    #[tokio::test]
    async fn caps_results_at_two_hundred() {
        let home = TestHome::new();
        for index in 0..(RESULT_LIMIT + 5) {
            home.write(&format!("r/report-{index:03}.txt"), "");
        }
        let output = find(&home, json!({"path": "~/r", "fileName": "report"})).await;
        assert_eq!(output.files.len(), RESULT_LIMIT);
        assert!(output.truncated);
        assert!(output.files[0].ends_with("report-000.txt"));
    }

    #[tokio::test]
    async fn does_not_find_through_symlinks_out_of_the_roots_or_in_protected_paths() {
        let home = TestHome::with_protected(&["~/p"]);
        home.write_outside("stash/plan.txt", "x");
        home.symlink(&home.outside("stash"), "w/stash");
        home.symlink(&home.outside("stash/plan.txt"), "w/plan-link.txt");
        home.write("p/plan.txt", "x");
        home.write("w/plan.md", "x");
        let output = find(&home, json!({"fileName": "plan"})).await;
        assert_eq!(relative(&home, &output.files), ["w/plan.md"]);
    }

    #[tokio::test]
    async fn an_empty_name_is_refused() {
        let home = TestHome::new();
        assert_eq!(
            plan(&FindFilesByName, &home, json!({"fileName": ""}))
                .await
                .unwrap_err(),
            ToolError::InvalidArguments("fileName must not be empty".into())
        );
    }
}
