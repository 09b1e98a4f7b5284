//! `DeleteFile`: moves a file or folder to the operating system's Trash, where the person can
//! restore it (the freedesktop.org Trash on Linux, moved there through folder handles by
//! [`super::trashing`]; Finder's Trash on macOS, via the `trash` crate). Nothing is ever
//! deleted permanently: if the Trash cannot take it, the call fails.
//!
//! Invariants:
//! - A symlink is trashed as itself; what it points to is untouched.
//! - A workspace root, the user's home, and folders containing either are refused.
//! - For a folder, the plan counts what is inside; a folder that holds a protected path (or is
//!   too large to check fully) is reported as protected, so the policy always asks.
//! - A delete about to be staged for review is planned where the changes staged before it leave
//!   the path ([`super::staged`]): gone is not found, created only by them is refused, and a
//!   file is sized by its staged content.

use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{Risk, ToolCategory};

use super::target::{self, Census, Kind, Located};
use super::{WALK_ENTRY_LIMIT, blocking, staged, trashing};
use crate::approvals::CallTarget;
use crate::sandbox::{Access, Sandbox};
use crate::tools::{
    Language, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, localized, words,
};
use tokio_util::sync::CancellationToken;

/// Moves files and folders to the Trash.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DeleteFile;

/// Arguments of `DeleteFile`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct DeleteFileArgs {
    /// The file or folder to move to the Trash; `~` is the home folder, relative paths start
    /// there.
    pub path: String,
}

impl Tool for DeleteFile {
    type Args = DeleteFileArgs;
    type Prepared = Located;

    fn name(&self) -> &'static str {
        "DeleteFile"
    }

    fn description(&self) -> &'static str {
        "Moves a file or folder (with everything in it) to the Trash, from where it can be \
         restored. A symbolic link is removed itself, not what it points to. Use ~ for the home \
         folder."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::Delete
    }

    async fn plan(
        &self,
        args: &DeleteFileArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<Located>, ToolError> {
        let raw = args.path.clone();
        let language = ctx.language;
        let files = ctx.staged.clone();
        blocking(ctx, move |sandbox, cancel| {
            // In review mode, where the changes staged before it leave the path.
            let entry = match files.as_deref() {
                Some(files) => {
                    // Looked up as a write (no need to exist): staged changes may create it.
                    let resolved = sandbox.resolve(&raw, Access::Write)?;
                    staged::for_removal(files, sandbox, &resolved, &raw)?
                }
                None => None,
            };
            let located = target::locate_existing(sandbox, &raw)?;
            target::refuse_removing_anchor(sandbox, &located.path)?;
            let size = staged::size_of(entry.as_ref());
            let (detail, protected) = describe(sandbox, &located, (cancel, size), language)?;
            let summary = localized!(
                language,
                "Move {} {} to the Trash{detail}",
                "Переместить {} {} в Корзину{detail}",
                located.kind.object(language),
                sandbox.display(&located.path)
            );
            Ok(Plan::new(summary)
                .target(CallTarget::Path {
                    path: located.path.clone(),
                    access: Access::Delete,
                    protected,
                })
                .with(located))
        })
        .await
    }

    async fn run(
        &self,
        args: DeleteFileArgs,
        located: Located,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        blocking(ctx, move |sandbox, _| {
            target::recheck_located(sandbox, &args.path, &located)?;
            let shown = sandbox.display(&located.path);
            trashing::move_to_trash(sandbox, &located.path).map_err(|error| {
                ToolError::Failed(format!(
                    "could not move `{shown}` to the Trash ({error}); it was not deleted"
                ))
            })?;
            Ok(ToolOutput::text(format!(
                "Moved {shown} to the Trash (it can be restored from there)"
            )))
        })
        .await
    }
}

/// The plan's detail for a path about to leave its place (" (3 files, 1 folder, 2.0 KB)") in
/// `language`, and whether the policy must treat it as protected. A file's size is
/// `staged_size` when changes staged for review give it one, the disk's otherwise.
pub(super) fn describe(
    sandbox: &Sandbox,
    located: &Located,
    (cancel, staged_size): (&CancellationToken, Option<u64>),
    language: Language,
) -> Result<(String, bool), ToolError> {
    match located.kind {
        Kind::Folder => {
            let census = Census::of(sandbox, &located.path, WALK_ENTRY_LIMIT, cancel)?;
            let mut detail = format!(" ({})", census.describe(language));
            if census.protected_inside {
                detail.push_str(&localized!(
                    language,
                    "; it contains protected paths",
                    "; внутри есть защищённые пути"
                ));
            }
            Ok((
                detail,
                located.protected || census.protected_inside || census.incomplete,
            ))
        }
        Kind::File => {
            let size = staged_size.unwrap_or_else(|| {
                sandbox
                    .beneath()
                    .stat(&located.path)
                    .map(|stat| u64::try_from(stat.st_size).unwrap_or(0))
                    .unwrap_or(0)
            });
            Ok((
                format!(" ({})", words::size(size, language)),
                located.protected,
            ))
        }
        Kind::Symlink => Ok((
            localized!(
                language,
                " (only the link; what it points to stays)",
                " (только ссылку; то, на что она указывает, останется)"
            ),
            located.protected,
        )),
        Kind::Special => Ok((String::new(), located.protected)),
    }
}

#[cfg(test)]
mod tests;
