//! Built-in document tools: `ExtractTextFromFile` and `ReadPdfPages` (category FILES, read-only).
//!
//! The readers themselves (formats judged by content, PDF, Word, PowerPoint, spreadsheets,
//! text in any encoding, every bound on hostile files) are `souz_parse::documents`; this
//! module is the tools over them and the one way a tool opens a file to read: every path is
//! resolved by the sandbox in `plan`; `run` resolves it again and refuses
//! ([`ToolError::Conflict`]) if it now leads somewhere else, then opens it beneath its root
//! without following a link ([`open_source`]) and hands the readers only that handle.
//! Parsing runs on a parse worker ([`super::worker`]): off the async runtime, bounded in time
//! and stoppable.

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
pub(crate) use souz_parse::documents::{
    DocumentError, PageRange, extract, read_pdf_pages, source, spreadsheet, text,
};
use souz_protocol::{Risk, ToolCategory};

use self::source::SourceFile;
use super::worker::{PARSE_TIME_LIMIT, run_blocking};
use crate::sandbox::{Access, Sandbox};
use crate::tools::{
    CatalogBuilder, CatalogError, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput,
    localized,
};

/// Registers this module's tools.
pub(crate) fn register(builder: &mut CatalogBuilder) -> Result<(), CatalogError> {
    builder.add(ExtractTextFromFile)?;
    builder.add(ReadPdfPages)?;
    Ok(())
}

impl From<DocumentError> for ToolError {
    fn from(error: DocumentError) -> Self {
        match error {
            DocumentError::Stopped => ToolError::Cancelled,
            other => ToolError::Failed(other.to_string()),
        }
    }
}

/// Resolves `raw` for reading and makes sure it is a regular file.
pub(crate) fn resolve_readable_file(
    ctx: &ToolContext,
    raw: &str,
) -> Result<crate::sandbox::ResolvedPath, ToolError> {
    let resolved = ctx.sandbox.resolve(raw, Access::Read)?;
    let shown = ctx.sandbox.display(&resolved.path);
    // Looked at beneath the root, never through a symlink (as the read itself will be).
    let stat = ctx
        .sandbox
        .beneath()
        .stat(&resolved.path)
        .map_err(|error| ToolError::Failed(format!("cannot read {shown}: {error}")))?;
    let file_type = rustix::fs::FileType::from_raw_mode(stat.st_mode as _);
    if file_type == rustix::fs::FileType::Directory {
        return Err(ToolError::Failed(format!(
            "{shown} is a folder, not a file"
        )));
    }
    if file_type != rustix::fs::FileType::RegularFile {
        return Err(ToolError::Failed(format!(
            "{shown} is not a regular file (a pipe or device), so it is not read"
        )));
    }
    Ok(resolved)
}

/// Re-resolves `raw` at run time and opens it, refusing if it now leads somewhere other than
/// the `planned` path (a folder or link swapped in after the plan was shown).
pub(crate) fn open_planned(
    ctx: &ToolContext,
    raw: &str,
    planned: &Path,
) -> Result<SourceFile, ToolError> {
    let resolved = ctx.sandbox.resolve(raw, Access::Read)?;
    if resolved.path != planned {
        return Err(ToolError::Conflict(format!(
            "`{raw}` now leads to {} instead of {}; nothing was read",
            ctx.sandbox.display(&resolved.path),
            ctx.sandbox.display(planned)
        )));
    }
    Ok(open_source(&ctx.sandbox, planned)?)
}

/// Opens `path` (already resolved by `sandbox`) beneath its root, following no link at any
/// level, if it is a regular file: the only way a reader gets a file.
pub(crate) fn open_source(sandbox: &Sandbox, path: &Path) -> Result<SourceFile, DocumentError> {
    let file = sandbox
        .beneath()
        .open_read(path)
        .map_err(souz_parse::documents::io_error)?;
    SourceFile::from_file(file, path)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Arguments of `ExtractTextFromFile`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ExtractTextArgs {
    /// Path to the file (pdf, docx, pptx, xlsx, xls, ods, csv, txt, md or any text file).
    /// `~` is the home folder.
    pub file_path: String,
}

/// `ExtractTextFromFile`: a read-only text preview of a document.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ExtractTextFromFile;

impl Tool for ExtractTextFromFile {
    type Args = ExtractTextArgs;
    type Prepared = PathBuf;

    fn name(&self) -> &'static str {
        "ExtractTextFromFile"
    }

    fn description(&self) -> &'static str {
        "READ ONLY preview of a document's text: PDF, Word (.docx), PowerPoint (.pptx), Excel \
         (.xlsx/.xls/.ods, sheet by sheet), CSV, Markdown and other text files (any encoding). \
         Use it to SEE content; it changes nothing. Returns metadata and up to 50,000 \
         characters, with `Truncated: true` when there is more (then use ReadPdfPages for PDF \
         page ranges or ExcelRead for spreadsheet queries)."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    async fn plan(
        &self,
        args: &ExtractTextArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<PathBuf>, ToolError> {
        let resolved = resolve_readable_file(ctx, &args.file_path)?;
        let summary = localized!(
            ctx.language,
            "Read the text of {}",
            "Прочитать текст {}",
            ctx.sandbox.display(&resolved.path)
        );
        let path = resolved.path.clone();
        Ok(Plan::new(summary).path(&resolved, Access::Read).with(path))
    }

    async fn run(
        &self,
        args: ExtractTextArgs,
        path: PathBuf,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let name = file_name(&path);
        let source = open_planned(ctx, &args.file_path, &path)?;
        let extraction = run_blocking(&ctx.cancel, PARSE_TIME_LIMIT, move |stop| {
            extract(&source, stop)
        })
        .await?;
        Ok(ToolOutput::text(extraction.render(&name)))
    }
}

/// Arguments of `ReadPdfPages`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ReadPdfPagesArgs {
    /// Path to the PDF file. `~` is the home folder.
    pub file_path: String,
    /// First page to read (1-based). Default: 1.
    #[serde(default)]
    pub start_page: Option<u32>,
    /// Last page to read (inclusive). Default: only the start page. A value past the end reads
    /// to the last page.
    #[serde(default)]
    pub end_page: Option<u32>,
}

/// The page range a `ReadPdfPages` call asked for, in the file the plan resolved.
#[derive(Debug, Clone)]
pub(crate) struct PageRequest {
    path: PathBuf,
    range: PageRange,
}

/// `ReadPdfPages`: the text of a range of PDF pages.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReadPdfPages;

impl Tool for ReadPdfPages {
    type Args = ReadPdfPagesArgs;
    type Prepared = PageRequest;

    fn name(&self) -> &'static str {
        "ReadPdfPages"
    }

    fn description(&self) -> &'static str {
        "Reads the text of specific pages of a PDF (1-based, inclusive range) and tells the \
         total page count. Use it for long PDFs: read the table of contents first, then the \
         pages you need."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Files
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    async fn plan(
        &self,
        args: &ReadPdfPagesArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<PageRequest>, ToolError> {
        let start = args.start_page.unwrap_or(1);
        if start == 0 {
            return Err(ToolError::InvalidArguments(
                "startPage is 1-based: the first page is 1".into(),
            ));
        }
        let end = args.end_page.unwrap_or(start);
        if end < start {
            return Err(ToolError::InvalidArguments(format!(
                "endPage ({end}) is before startPage ({start})"
            )));
        }
        let resolved = resolve_readable_file(ctx, &args.file_path)?;
        let pages = if start == end {
            localized!(ctx.language, "page {start}", "страницу {start}")
        } else {
            localized!(
                ctx.language,
                "pages {start}-{end}",
                "страницы {start}–{end}"
            )
        };
        let summary = localized!(
            ctx.language,
            "Read {pages} of {}",
            "Прочитать {pages} из {}",
            ctx.sandbox.display(&resolved.path)
        );
        let request = PageRequest {
            path: resolved.path.clone(),
            range: PageRange { start, end },
        };
        Ok(Plan::new(summary)
            .path(&resolved, Access::Read)
            .with(request))
    }

    async fn run(
        &self,
        args: ReadPdfPagesArgs,
        request: PageRequest,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let source = open_planned(ctx, &args.file_path, &request.path)?;
        let text = run_blocking(&ctx.cancel, PARSE_TIME_LIMIT, move |stop| {
            read_pdf_pages(&source, &request.range, stop)
        })
        .await?;
        Ok(ToolOutput::text(text))
    }
}
