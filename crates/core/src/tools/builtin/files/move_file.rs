//! `MoveFile`: moves (renames) a file, folder or symlink to a destination that does not exist.
//!
//! Risk class `Write`: a move destroys nothing (the destination must be free, the content
//! arrives whole), so it sits with the tools that create and change files. The source is still
//! a target with [`Access::Delete`], since it disappears from its place: rules about removing
//! things apply to it, and a source that is or holds a protected path is marked protected.
//!
//! Invariants:
//! - Never overwrites: the final rename refuses an existing destination atomically.
//! - Missing parent folders of the destination are created.
//! - A symlink is moved as itself; its target stays where it is.
//! - Across filesystems the move is copy, then rename into place, then remove the source, so a
//!   failure leaves the source intact.
//! - A workspace root, the user's home, or a folder holding one is never moved, nor is a folder
//!   moved into itself.
//! - A move about to be staged for review is planned where the changes staged before it leave
//!   both paths ([`super::staged`]).

use std::io;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{Risk, ToolCategory};

use super::delete_file::describe;
use super::staged::{self, StagedEntry};
use super::target::{self, Kind, Located};
use super::{atomic, blocking};
use crate::approvals::CallTarget;
use crate::sandbox::Access;
use crate::tools::{Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, localized};

/// Moves files and folders.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MoveFile;

/// Arguments of `MoveFile`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct MoveFileArgs {
    /// The file or folder to move (full path, name included); `~` is the home folder.
    pub source_path: String,
    /// The full new path, name included (not just the folder to move into). It must not
    /// exist yet; missing parent folders are created.
    pub destination_path: String,
}

/// What `plan` hands to `run`.
#[derive(Debug)]
pub(crate) struct MovePlan {
    source: Located,
    destination: PathBuf,
}

impl Tool for MoveFile {
    type Args = MoveFileArgs;
    type Prepared = MovePlan;

    fn name(&self) -> &'static str {
        "MoveFile"
    }

    fn description(&self) -> &'static str {
        "Moves or renames a file or folder from sourcePath to destinationPath. The destination \
         is the full new path including the name, must not exist yet, and missing parent \
         folders are created. Nothing is ever overwritten. Use ~ for the home folder."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::Write
    }

    async fn plan(
        &self,
        args: &MoveFileArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<MovePlan>, ToolError> {
        let args = args.clone();
        let language = ctx.language;
        let files = ctx.staged.clone();
        blocking(ctx, move |sandbox, cancel| {
            // In review mode, where the changes staged before it leave both paths.
            let entry = match files.as_deref() {
                Some(files) => {
                    // Looked up as a write (no need to exist): staged changes may create it.
                    let resolved = sandbox.resolve(&args.source_path, Access::Write)?;
                    staged::for_removal(files, sandbox, &resolved, &args.source_path)?
                }
                None => None,
            };
            let source = target::locate_existing(sandbox, &args.source_path)?;
            let from = sandbox.display(&source.path);
            if source.kind == Kind::Special {
                return Err(ToolError::InvalidArguments(format!(
                    "`{from}` is a special file (a pipe, socket or device); it cannot be moved"
                )));
            }
            target::refuse_removing_anchor(sandbox, &source.path)?;
            let destination = sandbox.resolve(&args.destination_path, Access::Write)?;
            let to = sandbox.display(&destination.path);
            if destination.path == source.path {
                return Err(ToolError::InvalidArguments(
                    "source and destination paths must be different".into(),
                ));
            }
            let taken = |what: &str| {
                ToolError::InvalidArguments(format!(
                    "the destination `{to}` already exists ({what}); give the full new path \
                     including the name, one that does not exist yet"
                ))
            };
            match files
                .as_deref()
                .and_then(|files| files.entry(&destination.path))
            {
                // Removed or moved away by a change staged before: free once it is applied.
                Some(StagedEntry::Absent) => {}
                Some(StagedEntry::Unknown(unknown)) => return Err(unknown.refusal(&to)),
                Some(_) => return Err(taken("in the changes staged for review")),
                None => {
                    if let Ok(kind) = Kind::of(&destination.path) {
                        return Err(taken(&format!("a {}", kind.noun())));
                    }
                }
            }
            if source.kind == Kind::Folder && destination.path.starts_with(&source.path) {
                return Err(ToolError::InvalidArguments(format!(
                    "`{from}` cannot be moved into itself (`{to}`)"
                )));
            }
            target::require_folder_ancestor(sandbox, &destination.path)?;
            let size = staged::size_of(entry.as_ref());
            let (detail, source_protected) = describe(sandbox, &source, (cancel, size), language)?;
            let summary = localized!(
                language,
                "Move {} {from} to {to}{detail}",
                "Переместить {} {from} в {to}{detail}",
                source.kind.object(language)
            );
            Ok(Plan::new(summary)
                .target(CallTarget::Path {
                    path: source.path.clone(),
                    access: Access::Delete,
                    protected: source_protected,
                })
                .path(&destination, Access::Write)
                .with(MovePlan {
                    source,
                    destination: destination.path,
                }))
        })
        .await
    }

    async fn run(
        &self,
        args: MoveFileArgs,
        prepared: MovePlan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        blocking(ctx, move |sandbox, _| {
            target::recheck_located(sandbox, &args.source_path, &prepared.source)?;
            let destination = target::recheck(
                sandbox,
                &args.destination_path,
                Access::Write,
                &prepared.destination,
            )?;
            let from = sandbox.display(&prepared.source.path);
            let to = sandbox.display(&destination.path);
            let taken = || {
                ToolError::Conflict(format!(
                    "`{to}` was created after the move was planned; nothing was moved or \
                     overwritten"
                ))
            };
            if Kind::of(&destination.path).is_ok() {
                return Err(taken());
            }
            target::create_parent_folders(sandbox, &destination.path, &to)?;
            let beneath = sandbox.beneath();
            match atomic::move_path(&beneath, &prepared.source.path, &destination.path) {
                Ok(()) => Ok(ToolOutput::text(format!("Moved {from} to {to}"))),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Err(taken()),
                Err(error) => Err(ToolError::Failed(format!(
                    "cannot move `{from}` to `{to}`: {error}"
                ))),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests;
