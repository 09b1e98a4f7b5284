//! `FindFilesByName`: files whose name contains a text (case-insensitive) under a folder.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use souz_protocol::{Risk, ToolCategory};

use super::list_files::{home, resolve_folder};
use super::walk::{self, EntryKind, Flow, WalkOptions};
use super::{OUTPUT_LIMIT_CHARS, RESULT_LIMIT, WALK_ENTRY_LIMIT, blocking, target};
use crate::sandbox::{Access, ResolvedPath};
use crate::tools::{Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, input_schema};

/// Finds files by name.
#[derive(Debug, Clone, Copy, Default)]
pub struct FindFilesByName;

/// Arguments of `FindFilesByName`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FindFilesByNameArgs {
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
pub struct FindFilesByNameOutput {
    /// Absolute paths of matching files, depth first, sorted by name.
    pub files: Vec<String>,
    /// More matches may exist: a limit (200 results, output size, or files looked at) was reached.
    pub truncated: bool,
}

/// What `plan` hands to `run`.
#[derive(Debug)]
pub struct FindFilesPlan {
    folder: ResolvedPath,
    needle: String,
}

impl Tool for FindFilesByName {
    type Args = FindFilesByNameArgs;
    type Prepared = FindFilesPlan;

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
    ) -> Result<Planned<FindFilesPlan>, ToolError> {
        let needle = args.file_name.trim().to_lowercase();
        if needle.is_empty() {
            return Err(ToolError::InvalidArguments(
                "fileName must not be empty".into(),
            ));
        }
        let folder = resolve_folder(ctx, &args.path)?;
        let summary = format!(
            "Find files named like {:?} under {}",
            args.file_name.trim(),
            ctx.sandbox.display(&folder.path)
        );
        Ok(Plan::new(summary)
            .path(&folder, Access::Read)
            .with(FindFilesPlan { folder, needle }))
    }

    async fn run(
        &self,
        args: FindFilesByNameArgs,
        prepared: FindFilesPlan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let sandbox = ctx.sandbox.clone();
        let cancel = ctx.cancel.clone();
        blocking(move || {
            let folder =
                target::recheck(&sandbox, &args.path, Access::Read, &prepared.folder.path)?;
            let options = WalkOptions {
                max_depth: None,
                include_hidden: args.include_hidden,
                max_entries: WALK_ENTRY_LIMIT,
            };
            let mut files = Vec::new();
            let mut chars = 0usize;
            let mut full = false;
            let summary = walk::walk(
                &sandbox,
                &folder.path,
                folder.protected,
                options,
                &cancel,
                |entry| {
                    let name = entry.name.to_string_lossy().to_lowercase();
                    if entry.kind != EntryKind::File || !name.contains(&prepared.needle) {
                        return Flow::Continue;
                    }
                    let path = walk::path_text(&entry.path);
                    chars += path.chars().count() + 3;
                    if files.len() >= RESULT_LIMIT || chars > OUTPUT_LIMIT_CHARS {
                        full = true;
                        return Flow::Stop;
                    }
                    files.push(path);
                    Flow::Continue
                },
            )?;
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
