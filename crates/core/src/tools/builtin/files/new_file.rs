//! `NewFile`: creates a text file with content, or a folder when the path ends in `/`.
//!
//! Never overwrites: an existing path is refused in `plan` ("use EditFile"), and the final
//! step is a rename that fails if something appeared meanwhile. Missing parent folders are
//! created. The plan shows the new content as a diff against nothing. A write about to be
//! staged for review is planned against the staged state ([`super::staged`]): a path a staged
//! change creates is taken, one it removes is free.

use std::io;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{Risk, ToolCategory};

use super::staged::StagedEntry;
use super::text::require_text_extension;
use super::{atomic, blocking, diff, target};
use crate::sandbox::Access;
use crate::tools::{Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, localized, words};

/// Creates files and folders.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NewFile;

/// Arguments of `NewFile`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct NewFileArgs {
    /// Where to create it; `~` is the home folder, relative paths start there. End the path
    /// with `/` to create a folder instead of a file.
    pub path: String,
    /// The text content of the new file (ignored for folders).
    #[serde(default)]
    pub text: String,
}

/// What `plan` hands to `run`.
#[derive(Debug)]
pub(crate) struct NewFilePlan {
    path: PathBuf,
    folder: bool,
}

impl Tool for NewFile {
    type Args = NewFileArgs;
    type Prepared = NewFilePlan;

    fn name(&self) -> &'static str {
        "NewFile"
    }

    fn description(&self) -> &'static str {
        "Creates a new TEXT file at the given path with the given content, creating missing \
         parent folders. If the path ends with a slash, creates a folder instead. Refuses paths \
         that already exist (use EditFile to change a file). Not for binary or office formats \
         (.xlsx, .xls, .docx, .png, .jpg, .pdf, ...). Use ~ for the home folder."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::Write
    }

    async fn plan(
        &self,
        args: &NewFileArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<NewFilePlan>, ToolError> {
        let folder = names_folder(&args.path);
        let resolved = ctx.sandbox.resolve(&args.path, Access::Write)?;
        let shown = ctx.sandbox.display(&resolved.path);
        match ctx
            .staged
            .as_deref()
            .and_then(|staged| staged.entry(&resolved.path))
        {
            // Removed or moved away by a change staged before: free once it is applied.
            Some(StagedEntry::Absent) => {}
            Some(StagedEntry::Unknown(unknown)) => return Err(unknown.refusal(&shown)),
            Some(_) => {
                return Err(ToolError::InvalidArguments(format!(
                    "`{shown}` already exists in the changes staged for review; use EditFile to \
                     modify it"
                )));
            }
            None => {
                if let Ok(kind) = target::Kind::of(&resolved.path) {
                    // `exists` is false for a dangling symlink, but its name is taken all the
                    // same.
                    let kind = kind.noun();
                    return Err(ToolError::InvalidArguments(format!(
                        "`{shown}` already exists (a {kind}); use EditFile to modify existing \
                         files"
                    )));
                }
            }
        }
        target::require_folder_ancestor(&ctx.sandbox, &resolved.path)?;
        let plan = if folder {
            Plan::new(localized!(
                ctx.language,
                "Create folder {shown}/",
                "Создать папку {shown}/"
            ))
        } else {
            require_text_extension(&resolved.path, "created with NewFile")?;
            let lines = args.text.lines().count();
            let lines = words::LINE.count(lines as u64, ctx.language);
            let size = words::size(args.text.len() as u64, ctx.language);
            Plan::new(localized!(
                ctx.language,
                "Create file {shown} ({lines}, {size})",
                "Создать файл {shown} ({lines}, {size})"
            ))
            .diff(diff::creation(&shown, &args.text))
        };
        Ok(plan.path(&resolved, Access::Write).with(NewFilePlan {
            path: resolved.path,
            folder,
        }))
    }

    async fn run(
        &self,
        args: NewFileArgs,
        prepared: NewFilePlan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        blocking(ctx, move |sandbox, _| {
            let resolved = target::recheck(sandbox, &args.path, Access::Write, &prepared.path)?;
            let shown = sandbox.display(&resolved.path);
            let appeared = || {
                ToolError::Conflict(format!(
                    "`{shown}` was created by someone else after the call was planned; \
                     nothing was changed"
                ))
            };
            if resolved.exists {
                return Err(appeared());
            }
            target::create_parent_folders(sandbox, &resolved.path, &shown)?;
            let beneath = sandbox.beneath();
            let created = if prepared.folder {
                beneath.create_dir(&resolved.path)
            } else {
                atomic::write_new(&beneath, &resolved.path, args.text.as_bytes())
            };
            match created {
                Ok(()) if prepared.folder => {
                    Ok(ToolOutput::text(format!("Folder created at {shown}/")))
                }
                Ok(()) => Ok(ToolOutput::text(format!("File created at {shown}"))),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Err(appeared()),
                Err(error) => Err(target::io_failure("create", &shown, &error)),
            }
        })
        .await
    }
}

/// Whether `raw` names a folder to create (it ends in `/`).
pub(super) fn names_folder(raw: &str) -> bool {
    target::strip_quotes(raw.trim()).trim_end().ends_with('/')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::approvals::CallTarget;
    use crate::sandbox::SandboxError;
    use crate::tools::builtin::files::testing::{TestHome, call, plan, run};

    #[tokio::test]
    async fn creates_a_file_with_parents_and_shows_it_as_a_diff() {
        let home = TestHome::new();
        let arguments = json!({"path": "~/notes/2024/todo.md", "text": "- milk\n- bread\n"});
        let planned = plan(&NewFile, &home, arguments.clone()).await.unwrap();
        assert_eq!(
            planned.plan.summary,
            "Create file ~/notes/2024/todo.md (2 lines, 15 B)"
        );
        assert_eq!(
            planned.plan.diff.as_deref(),
            Some("--- /dev/null\n+++ b/~/notes/2024/todo.md\n@@ -0,0 +1,2 @@\n+- milk\n+- bread\n")
        );
        assert_eq!(
            planned.plan.targets,
            [CallTarget::Path {
                path: home.path("notes/2024/todo.md"),
                access: Access::Write,
                protected: false
            }]
        );
        assert!(!home.exists("notes"), "planning changes nothing");
        let output = run(&NewFile, &home, arguments, planned).await.unwrap();
        assert_eq!(output.text, "File created at ~/notes/2024/todo.md");
        assert_eq!(home.read("notes/2024/todo.md"), "- milk\n- bread\n");
        let leftovers: Vec<_> = std::fs::read_dir(home.path("notes/2024"))
            .unwrap()
            .collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }

    #[tokio::test]
    async fn a_trailing_slash_creates_a_folder() {
        let home = TestHome::new();
        let output = call(&NewFile, &home, json!({"path": "drafts/inner/"}))
            .await
            .unwrap();
        assert_eq!(output.text, "Folder created at ~/drafts/inner/");
        assert!(home.path("drafts/inner").is_dir());
    }

    #[tokio::test]
    async fn refuses_existing_paths_and_binary_formats() {
        let home = TestHome::new();
        home.write("exists.txt", "keep me");
        home.folder("folder");
        let error = plan(
            &NewFile,
            &home,
            json!({"path": "exists.txt", "text": "new"}),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&error, ToolError::InvalidArguments(message) if message.contains("use EditFile")),
            "{error:?}"
        );
        assert!(
            plan(&NewFile, &home, json!({"path": "folder/"}))
                .await
                .is_err()
        );
        assert_eq!(home.read("exists.txt"), "keep me");
        let error = plan(&NewFile, &home, json!({"path": "chart.png", "text": "x"}))
            .await
            .unwrap_err();
        assert!(matches!(error, ToolError::InvalidArguments(_)), "{error:?}");
        // A file cannot hold children (the sandbox or the tool says so, before anything).
        assert!(
            plan(
                &NewFile,
                &home,
                json!({"path": "exists.txt/child.txt", "text": "x"})
            )
            .await
            .is_err()
        );
        assert_eq!(home.read("exists.txt"), "keep me");
    }

    #[tokio::test]
    async fn a_file_that_appears_after_the_plan_is_not_overwritten() {
        let home = TestHome::new();
        let arguments = json!({"path": "race.txt", "text": "mine"});
        let planned = plan(&NewFile, &home, arguments.clone()).await.unwrap();
        home.write("race.txt", "theirs");
        let error = run(&NewFile, &home, arguments, planned).await.unwrap_err();
        assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");
        assert_eq!(home.read("race.txt"), "theirs");
    }

    #[tokio::test]
    async fn cannot_write_through_a_symlink_out_of_the_roots() {
        let home = TestHome::new();
        home.symlink(&home.outside(""), "escape");
        let error = plan(
            &NewFile,
            &home,
            json!({"path": "escape/evil.txt", "text": "x"}),
        )
        .await
        .unwrap_err();
        assert!(matches!(
            error,
            ToolError::Sandbox(SandboxError::OutsideRoots { .. })
        ));
        // A dangling link whose target is outside: the name exists, so nothing is created.
        home.symlink(&home.outside("not-yet.txt"), "dangling.txt");
        assert!(
            call(
                &NewFile,
                &home,
                json!({"path": "dangling.txt", "text": "x"})
            )
            .await
            .is_err()
        );
        assert!(!home.outside("not-yet.txt").exists());
    }

    #[tokio::test]
    async fn protected_paths_are_marked_for_the_policy() {
        let home = TestHome::new();
        let planned = plan(
            &NewFile,
            &home,
            json!({"path": "~/.ssh/config", "text": "Host x"}),
        )
        .await
        .unwrap();
        assert!(matches!(
            planned.plan.targets[0],
            CallTarget::Path {
                protected: true,
                ..
            }
        ));
    }
}
