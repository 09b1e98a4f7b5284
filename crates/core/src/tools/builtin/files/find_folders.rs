//! `FindFolders`: folders whose name contains a text, under every workspace root.
//!
//! Exact name matches (case-insensitive) come first, then shorter paths, then by path; at most
//! 50 are returned. The whole tree must be walked to rank, so the walk is bounded by the entry
//! limit (shared across roots) and the result says when it was cut short.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use souz_protocol::{Risk, ToolCategory};

use super::folder::{CappedResults, needle};
use super::walk::{self, EntryKind, Flow, WalkBase, WalkOptions};
use super::{FOLDER_RESULT_LIMIT, WALK_ENTRY_LIMIT, blocking};
use crate::approvals::CallTarget;
use crate::sandbox::{Access, Sandbox};
use crate::tools::{
    Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, input_schema, localized,
};

/// Finds folders by name.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FindFolders;

/// Arguments of `FindFolders`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct FindFoldersArgs {
    /// Name or part of the name of the folder (e.g. "Downloads", "Project X"), case-insensitive.
    pub name: String,
}

/// What `FindFolders` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct FindFoldersOutput {
    /// Absolute paths: exact name matches first, then shorter paths first.
    pub folders: Vec<String>,
    /// More matches exist, or the search stopped at the limit of entries looked at.
    pub truncated: bool,
}

/// What `plan` hands to `run`.
#[derive(Debug)]
pub(crate) struct FindFoldersPlan {
    roots: Vec<PathBuf>,
    needle: String,
}

impl Tool for FindFolders {
    type Args = FindFoldersArgs;
    type Prepared = FindFoldersPlan;

    fn name(&self) -> &'static str {
        "FindFolders"
    }

    fn description(&self) -> &'static str {
        "Finds folders whose name contains `name` (case-insensitive) in the folders Souz may \
         use (by default your home folder). Returns absolute paths, exact name matches first; \
         hidden and protected folders are skipped; at most 50 are returned."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(input_schema::<FindFoldersOutput>())
    }

    async fn plan(
        &self,
        args: &FindFoldersArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<FindFoldersPlan>, ToolError> {
        let needle = needle("name", &args.name)?;
        let roots = outermost_roots(&ctx.sandbox);
        if roots.is_empty() {
            return Err(ToolError::Failed(
                "no workspace root exists, so there is nothing to search".into(),
            ));
        }
        let shown: Vec<String> = roots.iter().map(|root| ctx.sandbox.display(root)).collect();
        let mut plan = Plan::new(localized!(
            ctx.language,
            "Find folders named like {:?} under {}",
            "Найти папки с именем вроде {:?} в {}",
            args.name.trim(),
            shown.join(", ")
        ));
        for root in &roots {
            plan = plan.target(CallTarget::Path {
                path: root.clone(),
                access: Access::Read,
                protected: ctx.sandbox.is_protected(root),
            });
        }
        Ok(plan.with(FindFoldersPlan { roots, needle }))
    }

    async fn run(
        &self,
        _args: FindFoldersArgs,
        prepared: FindFoldersPlan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        blocking(ctx, move |sandbox, cancel| {
            let mut found: Vec<(bool, String)> = Vec::new();
            let mut budget_exhausted = false;
            let mut budget = WALK_ENTRY_LIMIT;
            for root in &prepared.roots {
                if !root.is_dir() {
                    continue;
                }
                let options = WalkOptions {
                    max_depth: None,
                    include_hidden: false,
                    max_entries: budget,
                };
                let base = WalkBase {
                    path: root,
                    protected: sandbox.is_protected(root),
                };
                let summary = walk::walk(sandbox, base, options, cancel, |entry| {
                    if entry.kind != EntryKind::Folder {
                        return Flow::Continue;
                    }
                    let name = entry.name.to_string_lossy().to_lowercase();
                    if name.contains(&prepared.needle) {
                        found.push((name == prepared.needle, walk::path_text(&entry.path)));
                    }
                    Flow::Continue
                })?;
                budget = budget.saturating_sub(summary.looked_at);
                if summary.budget_exhausted || budget == 0 {
                    budget_exhausted = true;
                    break;
                }
            }
            found.sort_by(|(left_exact, left), (right_exact, right)| {
                right_exact
                    .cmp(left_exact)
                    .then_with(|| left.chars().count().cmp(&right.chars().count()))
                    .then_with(|| left.cmp(right))
            });
            let total = found.len();
            let mut folders = CappedResults::new(FOLDER_RESULT_LIMIT);
            for (_, path) in found {
                let chars = path.chars().count() + 3;
                if !folders.push(path, chars) {
                    break;
                }
            }
            let (folders, _) = folders.finish();
            Ok(ToolOutput::json(FindFoldersOutput {
                truncated: budget_exhausted || folders.len() < total,
                folders,
            }))
        })
        .await
    }
}

/// The roots, sorted, without those inside another root (they would be walked twice).
fn outermost_roots(sandbox: &Sandbox) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = sandbox.roots().to_vec();
    roots.sort();
    roots.dedup();
    let all = roots.clone();
    roots.retain(|root| {
        !all.iter()
            .any(|other| other != root && root.starts_with(other))
    });
    roots
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::SandboxConfig;
    use crate::tools::builtin::files::testing::{TestHome, call, plan};

    async fn find(home: &TestHome, name: &str) -> FindFoldersOutput {
        let output = call(&FindFolders, home, json!({ "name": name }))
            .await
            .unwrap();
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
    async fn exact_matches_come_before_partial_ones() {
        let home = TestHome::new();
        home.folder("Old_Projects_Archive");
        home.folder("work/deep/Projects");
        home.folder("projects-2024");
        home.folder(".projects-hidden");
        home.write("Projects.txt", "a file, not a folder");
        let output = find(&home, "Projects").await;
        assert_eq!(
            relative(&home, &output.folders),
            [
                "work/deep/Projects",
                "projects-2024",
                "Old_Projects_Archive"
            ]
        );
        assert!(!output.truncated);
    }

    #[tokio::test]
    async fn names_with_quotes_are_plain_text() {
        let home = TestHome::new();
        home.folder("John's \"Folder\"");
        let output = find(&home, "John's \"Folder\"").await;
        assert_eq!(relative(&home, &output.folders), ["John's \"Folder\""]);
    }

    #[tokio::test]
    async fn caps_at_fifty_and_says_so() {
        let home = TestHome::new();
        for index in 0..(FOLDER_RESULT_LIMIT + 3) {
            home.folder(&format!("music/album-{index:02}"));
        }
        let output = find(&home, "album").await;
        assert_eq!(output.folders.len(), FOLDER_RESULT_LIMIT);
        assert!(output.truncated);
    }

    #[tokio::test]
    async fn skips_protected_folders_and_symlinks_out_of_the_roots() {
        let home = TestHome::with_protected(&["~/restricted"]);
        home.folder("Documents");
        home.folder("restricted/Documents Secret");
        home.folder("elsewhere");
        std::fs::create_dir_all(home.outside("Documents Outside")).unwrap();
        home.symlink(&home.outside(""), "elsewhere/out");
        let output = find(&home, "documents").await;
        assert_eq!(relative(&home, &output.folders), ["Documents"]);
    }

    #[tokio::test]
    async fn searches_every_root_once() {
        let dir = tempfile::tempdir().unwrap();
        let extra = dir.path().canonicalize().unwrap().join("extra");
        std::fs::create_dir_all(extra.join("Reports")).unwrap();
        let mut config = SandboxConfig::default();
        config.roots.push(extra.display().to_string());
        config.roots.push("~/inner".to_owned());
        let home = TestHome::with_setup(config, |home| {
            std::fs::create_dir_all(home.join("inner/Reports")).unwrap();
        });
        assert_eq!(home.ctx.sandbox.roots().len(), 3, "the nested root exists");
        let planned = plan(&FindFolders, &home, json!({"name": "reports"}))
            .await
            .unwrap();
        assert_eq!(planned.plan.targets.len(), 2, "{:?}", planned.plan.targets);
        let output = find(&home, "reports").await;
        assert_eq!(
            output.folders,
            [
                extra.join("Reports").display().to_string(),
                home.path("inner/Reports").display().to_string()
            ]
        );
    }
}
