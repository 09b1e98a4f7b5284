//! `EditFile`: exact text replacement in an existing UTF-8 text file.
//!
//! `plan` does all the work a person needs to decide: it reads the file, refuses binary,
//! non-text and non-UTF-8 files, computes the replacement (line-ending aware, see [`text`]),
//! refuses empty, identical, missing and ambiguous `oldString`s, and shows the diff. It hands
//! `run` the SHA-256 of the bytes it read and the exact new bytes. `run` re-reads the file and
//! refuses with [`ToolError::Conflict`] if it changed since, then replaces it atomically,
//! keeping its permissions. What is written is exactly what the diff showed. A write about to
//! be staged for review is planned on the file's staged content ([`super::staged`]) when
//! earlier staged changes write it.
//!
//! [`text`]: super::text

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use souz_protocol::{Risk, ToolCategory};

use super::staged::StagedEntry;
use super::text::{self, Replacement, require_text_extension};
use super::{EDIT_FILE_LIMIT_BYTES, atomic, blocking, diff, target};
use crate::sandbox::{Access, Sandbox, SandboxError};
use crate::tools::{Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, localized, words};
use souz_protocol::language::Language;

/// Edits text files.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EditFile;

/// Arguments of `EditFile`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct EditFileArgs {
    /// The file to modify; `~` is the home folder, relative paths start there.
    pub path: String,
    /// Exact text to replace; must match the current content (line endings may be `\n` even
    /// in a file that uses `\r\n`).
    pub old_string: String,
    /// Replacement text. May be empty to delete the matched text.
    pub new_string: String,
    /// Replace every occurrence of oldString instead of requiring exactly one. Default false.
    #[serde(default)]
    pub replace_all: bool,
}

/// What `plan` hands to `run`: the file, the hash of the content the edit was planned on, and
/// the exact bytes to write.
#[derive(Debug)]
pub(crate) struct EditPlan {
    path: PathBuf,
    original_sha256: [u8; 32],
    updated: Vec<u8>,
    count: usize,
}

impl Tool for EditFile {
    type Args = EditFileArgs;
    type Prepared = EditPlan;

    fn name(&self) -> &'static str {
        "EditFile"
    }

    fn description(&self) -> &'static str {
        "Modifies an existing plain text, code or config file by replacing exact text: \
         oldString must match the current content exactly (whitespace and indentation \
         included) and occur once, unless replaceAll is true. Line endings are matched either \
         way and the file keeps its own. Fails when oldString is missing or ambiguous; then read \
         the file again and include more surrounding text. Use NewFile to create files."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::Write
    }

    async fn plan(
        &self,
        args: &EditFileArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<EditPlan>, ToolError> {
        let args = args.clone();
        let language = ctx.language;
        let staged = ctx.staged.clone();
        blocking(ctx, move |sandbox, _| {
            let resolved = sandbox.resolve(&args.path, Access::Write)?;
            let shown = sandbox.display(&resolved.path);
            // In review mode, on top of the changes staged before it.
            let original = match staged.and_then(|staged| staged.entry(&resolved.path)) {
                Some(entry) => staged_editable(entry, &resolved.path, &shown, &args.path)?,
                None if !resolved.exists => {
                    return Err(SandboxError::NotFound(args.path.clone()).into());
                }
                None => read_editable(sandbox, &resolved.path)?,
            };
            let original_sha256 = sha256(&original);
            let replacement = edited(original, &args)?;
            let count = replacement.count;
            let summary = localized!(
                language,
                "Edit {shown} (replace {})",
                "Изменить {shown} (заменить {})",
                OCCURRENCE.count(count as u64, language)
            );
            let diff = diff::unified(
                &shown,
                &replacement.original_normalized,
                &replacement.updated_normalized,
            );
            Ok(Plan::new(summary)
                .path(&resolved, Access::Write)
                .diff(diff)
                .with(EditPlan {
                    path: resolved.path,
                    original_sha256,
                    updated: replacement.updated_raw.into_bytes(),
                    count,
                }))
        })
        .await
    }

    async fn run(
        &self,
        args: EditFileArgs,
        prepared: EditPlan,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        blocking(ctx, move |sandbox, _| {
            let resolved = target::recheck(sandbox, &args.path, Access::Write, &prepared.path)?;
            let shown = sandbox.display(&resolved.path);
            if !resolved.exists {
                return Err(ToolError::Conflict(format!(
                    "`{shown}` was removed after the edit was planned; nothing was written"
                )));
            }
            let current = read_editable(sandbox, &resolved.path)?;
            if sha256(&current) != prepared.original_sha256 {
                return Err(ToolError::Conflict(format!(
                    "`{shown}` changed after the edit was planned, so it was not applied; read \
                     the file again and retry"
                )));
            }
            atomic::replace(&sandbox.beneath(), &resolved.path, &prepared.updated)
                .map_err(|error| target::io_failure("write", &shown, &error))?;
            let count = prepared.count;
            Ok(ToolOutput::text(format!(
                "Edited {shown}: replaced {}",
                OCCURRENCE.count(count as u64, Language::En)
            )))
        })
        .await
    }
}

/// The replacement `args` make in `original`, or why they cannot (binary or non-UTF-8 content,
/// `oldString` empty, missing or ambiguous).
pub(super) fn edited(original: Vec<u8>, args: &EditFileArgs) -> Result<Replacement, ToolError> {
    let content = text::decode_editable(original)?;
    text::replace(
        &content,
        &args.old_string,
        &args.new_string,
        args.replace_all,
    )
}

/// The staged content of a file `EditFile` may edit (see [`super::staged`]), checked as
/// [`read_editable`] checks the disk's.
fn staged_editable(
    entry: StagedEntry,
    path: &Path,
    shown: &str,
    raw: &str,
) -> Result<Vec<u8>, ToolError> {
    match entry {
        StagedEntry::File { content, .. } => {
            require_text_extension(path, "edited")?;
            let size = content.len() as u64;
            if size > EDIT_FILE_LIMIT_BYTES {
                return Err(ToolError::InvalidArguments(format!(
                    "`{shown}` is {}, larger than the {} EditFile handles",
                    target::human_size(size),
                    target::human_size(EDIT_FILE_LIMIT_BYTES)
                )));
            }
            Ok(content.to_vec())
        }
        StagedEntry::Absent => Err(SandboxError::NotFound(raw.to_owned()).into()),
        StagedEntry::Folder { .. } => Err(ToolError::InvalidArguments(format!(
            "`{shown}` is not a regular file"
        ))),
        StagedEntry::Unknown(unknown) => Err(unknown.refusal(shown)),
    }
}

/// Reads a file `EditFile` may edit: a regular file with a text extension, not too large.
fn read_editable(sandbox: &Sandbox, path: &Path) -> Result<Vec<u8>, ToolError> {
    let shown = sandbox.display(path);
    // Looked at beneath the root, never through a symlink (the open below is too).
    let stat = sandbox
        .beneath()
        .stat(path)
        .map_err(|error| target::io_failure("read", &shown, &error))?;
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    if rustix::fs::FileType::from_raw_mode(stat.st_mode as _) != rustix::fs::FileType::RegularFile {
        return Err(ToolError::InvalidArguments(format!(
            "`{shown}` is not a regular file"
        )));
    }
    require_text_extension(path, "edited")?;
    if size > EDIT_FILE_LIMIT_BYTES {
        return Err(ToolError::InvalidArguments(format!(
            "`{shown}` is {}, larger than the {} EditFile handles",
            target::human_size(size),
            target::human_size(EDIT_FILE_LIMIT_BYTES)
        )));
    }
    target::read_regular_file(sandbox, path, EDIT_FILE_LIMIT_BYTES)
        .map_err(|error| target::io_failure("read", &shown, &error))
}

/// "occurrence" or "occurrences", as `count` asks.
/// A place the old text occurs.
const OCCURRENCE: words::Noun = words::Noun {
    en: ["occurrence", "occurrences"],
    ru: ["вхождение", "вхождения", "вхождений"],
};

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests;
