//! `ListFiles`: the files and folders under a folder, as absolute paths (folders end in `/`).
//!
//! Like the original, a listing longer than 25 000 characters is refused rather than cut, so
//! the model narrows the request instead of reasoning over a partial tree; the walk stops as
//! soon as that limit is passed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use souz_protocol::{Risk, ToolCategory};

use super::folder::{self, FolderWalk, home};
use super::walk::{self, EntryKind, Flow};
use super::{OUTPUT_LIMIT_CHARS, WALK_ENTRY_LIMIT, blocking};
use crate::sandbox::ResolvedPath;
use crate::tools::{Planned, Tool, ToolContext, ToolError, ToolOutput, input_schema, localized};

/// Lists files and folders.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ListFiles;

/// Arguments of `ListFiles`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ListFilesArgs {
    /// Folder to list; `~` is the home folder, relative paths start there. Default `~`.
    #[serde(default = "home")]
    pub path: String,
    /// How deep to go: 1 = direct children only; 0 or less = unlimited (the default).
    #[serde(default)]
    pub depth: Option<i64>,
    /// Also list hidden entries (names starting with `.`). Default false.
    #[serde(default)]
    pub include_hidden: bool,
}

/// What `ListFiles` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ListFilesOutput {
    /// The folder listed (absolute).
    pub path: String,
    /// Absolute paths of everything under it, depth first, sorted by name; folders end in `/`.
    pub entries: Vec<String>,
}

impl Tool for ListFiles {
    type Args = ListFilesArgs;
    type Prepared = ResolvedPath;

    fn name(&self) -> &'static str {
        "ListFiles"
    }

    fn description(&self) -> &'static str {
        "Lists the files and folders under a folder as absolute paths (folders end with `/`), \
         depth first and sorted by name. Hidden and protected entries are skipped. Use ~ for the \
         home folder; use depth 1 for direct children only. Listings over 25000 characters are \
         refused: list a narrower folder or use a smaller depth."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(input_schema::<ListFilesOutput>())
    }

    async fn plan(
        &self,
        args: &ListFilesArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<ResolvedPath>, ToolError> {
        let depth = match walk::depth_limit(args.depth) {
            Some(1) => localized!(
                ctx.language,
                " (direct children)",
                " (только верхний уровень)"
            ),
            Some(depth) => localized!(ctx.language, " (depth {depth})", " (глубина {depth})"),
            None => String::new(),
        };
        folder::plan_read(ctx, &args.path, |shown| {
            localized!(
                ctx.language,
                "List {shown}{depth}",
                "Показать содержимое {shown}{depth}"
            )
        })
    }

    async fn run(
        &self,
        args: ListFilesArgs,
        planned: ResolvedPath,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        blocking(ctx, move |sandbox, cancel| {
            let mut entries = Vec::new();
            let mut chars = 2;
            let (folder, summary) = folder::recheck_and_walk(
                sandbox,
                FolderWalk {
                    raw: &args.path,
                    planned: &planned.path,
                    max_depth: walk::depth_limit(args.depth),
                    include_hidden: args.include_hidden,
                },
                cancel,
                |entry| {
                    let mut text = walk::path_text(&entry.path);
                    if entry.kind == EntryKind::Folder {
                        text.push('/');
                    }
                    chars += text.chars().count() + 3;
                    entries.push(text);
                    if chars > OUTPUT_LIMIT_CHARS {
                        Flow::Stop
                    } else {
                        Flow::Continue
                    }
                },
            )?;
            if summary.budget_exhausted {
                return Err(ToolError::Failed(format!(
                    "`{}` holds too many entries to list (more than {WALK_ENTRY_LIMIT} looked \
                     at); list a narrower folder or use a smaller depth",
                    sandbox.display(&folder.path)
                )));
            }
            if summary.stopped {
                return Err(ToolError::Failed(format!(
                    "the listing of `{}` is too large (over {OUTPUT_LIMIT_CHARS} characters); \
                     list a narrower folder or use a smaller depth",
                    sandbox.display(&folder.path)
                )));
            }
            Ok(ToolOutput::json(ListFilesOutput {
                path: walk::path_text(&folder.path),
                entries,
            }))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::approvals::CallTarget;
    use crate::sandbox::{Access, SandboxError};
    use crate::tools::builtin::files::testing::{TestHome, call, plan};

    fn listing(home: &TestHome, output: &ToolOutput) -> Vec<String> {
        let parsed: ListFilesOutput =
            serde_json::from_value(output.structured.clone().unwrap()).unwrap();
        parsed
            .entries
            .into_iter()
            .map(|text| {
                text.strip_prefix(&format!("{}/", home.home.display()))
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }

    #[tokio::test]
    async fn lists_real_files_with_folders_marked() {
        let home = TestHome::new();
        home.write("docs/b.txt", "b");
        home.write("docs/a/inner.md", "i");
        home.write("docs/.secret", "s");
        let output = call(&ListFiles, &home, json!({"path": "~/docs"}))
            .await
            .unwrap();
        assert_eq!(
            listing(&home, &output),
            ["docs/a/", "docs/a/inner.md", "docs/b.txt"]
        );
        // Trailing slashes mark folders; the text is the JSON of the structured output.
        assert!(
            output
                .text
                .contains(&format!("{}/docs/a/\"", home.home.display()))
        );

        let output = call(
            &ListFiles,
            &home,
            json!({"path": "docs", "depth": 1, "includeHidden": true}),
        )
        .await
        .unwrap();
        assert_eq!(
            listing(&home, &output),
            ["docs/.secret", "docs/a/", "docs/b.txt"]
        );
    }

    #[tokio::test]
    async fn defaults_to_the_home_folder_and_skips_protected_paths() {
        let home = TestHome::with_protected(&["~/Private"]);
        home.write("Private/diary.txt", "x");
        home.write("notes.txt", "n");
        let planned = plan(&ListFiles, &home, json!({})).await.unwrap();
        assert_eq!(planned.plan.summary, "List ~");
        assert_eq!(
            planned.plan.targets,
            [CallTarget::Path {
                path: home.home.clone(),
                access: Access::Read,
                protected: false
            }]
        );
        let output = call(&ListFiles, &home, json!({})).await.unwrap();
        assert_eq!(listing(&home, &output), ["notes.txt"]);
    }

    #[tokio::test]
    async fn a_protected_folder_asked_for_by_name_is_listed_after_approval() {
        let home = TestHome::with_protected(&["~/Private"]);
        home.write("Private/diary.txt", "x");
        let planned = plan(&ListFiles, &home, json!({"path": "~/Private"}))
            .await
            .unwrap();
        assert!(matches!(
            planned.plan.targets[0],
            CallTarget::Path {
                protected: true,
                ..
            }
        ));
        let output = call(&ListFiles, &home, json!({"path": "~/Private"}))
            .await
            .unwrap();
        assert_eq!(listing(&home, &output), ["Private/diary.txt"]);
    }

    #[tokio::test]
    async fn symlinks_never_lead_outside() {
        let home = TestHome::new();
        home.write_outside("data/secret.txt", "s");
        home.symlink(&home.outside("data"), "w/out");
        home.write("w/in.txt", "i");
        let output = call(&ListFiles, &home, json!({"path": "~/w"}))
            .await
            .unwrap();
        assert_eq!(listing(&home, &output), ["w/in.txt"]);
        let error = call(&ListFiles, &home, json!({"path": "~/w/out"}))
            .await
            .unwrap_err();
        assert!(matches!(
            error,
            ToolError::Sandbox(SandboxError::OutsideRoots { .. })
        ));
    }

    #[tokio::test]
    async fn bad_paths_are_clear_errors() {
        let home = TestHome::new();
        home.write("file.txt", "x");
        let error = plan(&ListFiles, &home, json!({"path": "~/file.txt"}))
            .await
            .unwrap_err();
        assert_eq!(
            error,
            ToolError::InvalidArguments("`~/file.txt` is not a folder".into())
        );
        assert!(matches!(
            plan(&ListFiles, &home, json!({"path": "~/missing"})).await,
            Err(ToolError::Sandbox(SandboxError::NotFound(_)))
        ));
        assert!(matches!(
            plan(&ListFiles, &home, json!({"path": "/etc"})).await,
            Err(ToolError::Sandbox(SandboxError::OutsideRoots { .. }))
        ));
    }

    #[tokio::test]
    async fn oversized_listings_are_refused() {
        let home = TestHome::new();
        for index in 0..400 {
            home.write(
                &format!("many/a-rather-long-file-name-to-fill-the-listing-{index:04}.txt"),
                "",
            );
        }
        let error = call(&ListFiles, &home, json!({"path": "~/many"}))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, ToolError::Failed(message) if message.contains("too large")),
            "{error:?}"
        );
    }
}
