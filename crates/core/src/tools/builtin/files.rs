//! Built-in tools: files. `ListFiles`, `SearchFileContent`, `FindFilesByName`, `FindFolders`
//! (read-only), `NewFile`, `EditFile`, `MoveFile` (write) and `DeleteFile` (to the Trash).
//!
//! Every path goes through [`Sandbox::resolve`](crate::sandbox::Sandbox::resolve), so no tool
//! reaches outside the workspace roots, and every use of the resolved path (open, list,
//! create, rename, trash) goes through [`Sandbox::beneath`](crate::sandbox::Sandbox::beneath),
//! so a folder swapped for a symlink between the check and the use is refused, never followed.
//! On top of that, this module owns:
//! - walking ([`walk`]): never through a symlink, never into hidden (unless asked) or protected
//!   entries, in a deterministic order, bounded in entries visited, results and output size;
//! - changes that are planned before they are approved and then done exactly as planned: `plan`
//!   validates everything and shows a diff, `run` re-resolves every path and refuses with
//!   [`ToolError::Conflict`] if the world moved since (an edited file changed, a destination
//!   appeared, a path now resolves elsewhere);
//! - writes that cannot leave a half-written file ([`atomic`]) and moves that never overwrite.
//!
//! Limits are the original's: 25 000 characters of output, 200 results, 1 MB per file searched,
//! 50 folders found.

pub(crate) mod atomic;
mod delete_file;
pub(crate) mod diff;
mod edit_file;
mod find_files;
mod find_folders;
mod folder;
mod list_files;
mod move_file;
mod new_file;
mod output;
mod search_content;
pub(crate) mod staged;
mod target;
mod text;
pub(crate) mod trashing;
mod walk;

#[cfg(test)]
mod race_tests;
#[cfg(test)]
mod testing;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::sandbox::Sandbox;
use crate::tools::{CatalogBuilder, CatalogError, ToolContext, ToolError};

pub(crate) use atomic::write_new;
pub(crate) use delete_file::DeleteFile;
pub(crate) use edit_file::EditFile;
pub(crate) use find_files::FindFilesByName;
pub(crate) use find_folders::FindFolders;
pub(crate) use list_files::ListFiles;
pub(crate) use move_file::MoveFile;
pub(crate) use new_file::NewFile;
pub(crate) use output::{plan_new_output, write_new_output};
pub(crate) use search_content::SearchFileContent;
#[cfg(test)]
use {
    delete_file::DeleteFileArgs, edit_file::EditFileArgs, find_files::FindFilesByNameArgs,
    find_folders::FindFoldersArgs, list_files::ListFilesArgs, move_file::MoveFileArgs,
    new_file::NewFileArgs, search_content::SearchFileContentArgs,
};

/// Most characters a listing or search returns (the original's limit).
pub(crate) const OUTPUT_LIMIT_CHARS: usize = 25_000;
/// Most results a search returns.
pub(crate) const RESULT_LIMIT: usize = 200;
/// Largest file `SearchFileContent` reads.
pub(crate) const SEARCH_FILE_LIMIT_BYTES: u64 = 1_000_000;
/// Most folders `FindFolders` returns.
pub(crate) const FOLDER_RESULT_LIMIT: usize = 50;
/// Most directory entries one walk looks at, so a search over a huge home folder ends.
pub(crate) const WALK_ENTRY_LIMIT: usize = 200_000;
/// Largest file `EditFile` edits (the whole file is held in memory twice, plus a diff).
pub(crate) const EDIT_FILE_LIMIT_BYTES: u64 = 10 << 20;

/// Registers this module's tools.
pub(crate) fn register(builder: &mut CatalogBuilder) -> Result<(), CatalogError> {
    builder
        .add(ListFiles)?
        .add(SearchFileContent)?
        .add(FindFilesByName)?
        .add(FindFolders)?
        .add(NewFile)?
        .add(EditFile)?
        .add(MoveFile)?
        .add(DeleteFile)?;
    Ok(())
}

/// Runs blocking filesystem work off the async runtime, handing it the call's sandbox and
/// cancellation token (the work cannot borrow them from `ctx`, so it gets its own handles).
async fn blocking<T: Send + 'static>(
    ctx: &ToolContext,
    work: impl FnOnce(&Sandbox, &CancellationToken) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let sandbox = Arc::clone(&ctx.sandbox);
    let cancel = ctx.cancel.clone();
    tokio::task::spawn_blocking(move || work(&sandbox, &cancel))
        .await
        .map_err(|error| ToolError::Internal(format!("file task failed: {error}")))?
}

#[cfg(test)]
mod tests {
    use souz_protocol::{Risk, ToolCategory};

    use super::testing::TestHome;
    use super::*;

    #[tokio::test]
    async fn an_edit_goes_through_the_erased_catalog_as_planned() {
        let home = TestHome::new();
        home.write("list.md", "- one\n");
        let catalog = crate::tools::builtin::catalog().unwrap();
        let tool = catalog.get("EditFile").unwrap();
        let planned = tool
            .plan(
                serde_json::Value::String(
                    r#"{"path":"~/list.md","oldString":"- one","newString":"- one\n- two"}"#.into(),
                ),
                &home.ctx,
            )
            .await
            .unwrap();
        assert_eq!(
            planned.plan.summary,
            "Edit ~/list.md (replace 1 occurrence)"
        );
        assert!(planned.plan.diff.as_deref().unwrap().contains("\n+- two\n"));
        assert_eq!(home.read("list.md"), "- one\n");
        let output = planned.run(home.ctx.clone()).await.unwrap();
        assert_eq!(output.text, "Edited ~/list.md: replaced 1 occurrence");
        assert_eq!(home.read("list.md"), "- one\n- two\n");
        let error = tool
            .plan(
                serde_json::json!({"path": "~/list.md", "oldString": "x"}),
                &home.ctx,
            )
            .await
            .unwrap_err();
        assert!(matches!(error, ToolError::InvalidArguments(_)), "{error:?}");
    }

    #[test]
    fn registers_every_file_tool_with_the_original_parameters() {
        let mut builder = CatalogBuilder::default();
        register(&mut builder).unwrap();
        let catalog = builder.build();
        let expected: [(&str, Risk, &[&str], &[&str]); 8] = [
            (
                "ListFiles",
                Risk::ReadOnly,
                &["path", "depth", "includeHidden"],
                &[],
            ),
            (
                "SearchFileContent",
                Risk::ReadOnly,
                &["path", "query", "includeHidden"],
                &["query"],
            ),
            (
                "FindFilesByName",
                Risk::ReadOnly,
                &["path", "fileName", "includeHidden"],
                &["fileName"],
            ),
            ("FindFolders", Risk::ReadOnly, &["name"], &["name"]),
            ("NewFile", Risk::Write, &["path", "text"], &["path"]),
            (
                "EditFile",
                Risk::Write,
                &["path", "oldString", "newString", "replaceAll"],
                &["path", "oldString", "newString"],
            ),
            (
                "MoveFile",
                Risk::Write,
                &["sourcePath", "destinationPath"],
                &["sourcePath", "destinationPath"],
            ),
            ("DeleteFile", Risk::Delete, &["path"], &["path"]),
        ];
        assert_eq!(catalog.len(), expected.len());
        for (name, risk, properties, required) in expected {
            let spec = catalog.get(name).unwrap().spec();
            assert_eq!(spec.category, ToolCategory::Files, "{name}");
            assert_eq!(spec.risk, risk, "{name}");
            let schema = &spec.input_schema;
            let mut names: Vec<&str> = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            names.sort_unstable();
            let mut wanted = properties.to_vec();
            wanted.sort_unstable();
            assert_eq!(names, wanted, "{name}");
            let mut listed: Vec<&str> = schema["required"]
                .as_array()
                .map(|values| values.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            listed.sort_unstable();
            let mut wanted = required.to_vec();
            wanted.sort_unstable();
            assert_eq!(listed, wanted, "{name}");
            for property in schema["properties"].as_object().unwrap().values() {
                assert!(
                    property["description"]
                        .as_str()
                        .is_some_and(|d| !d.is_empty()),
                    "{name}: every parameter is described"
                );
            }
        }
    }
}
