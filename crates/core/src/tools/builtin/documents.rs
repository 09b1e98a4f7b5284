//! Built-in document tools: `ExtractTextFromFile` and `ReadPdfPages` (category FILES, read-only).
//!
//! This module owns reading document formats; its submodules are the readers, which the data
//! tools reuse for spreadsheets:
//! - [`text`]: encoding-tolerant plain text and the shared 50,000-character limit,
//! - [`pdf`]: PDF page text (pdf-extract),
//! - [`office`]: Word and PowerPoint text (zip + quick-xml),
//! - [`spreadsheet`]: Excel, OpenDocument and CSV as grids of cells (calamine, csv),
//! - [`source`]: the file, opened once without following a final link and checked on the handle.
//! - `ods_shape`, `xls_shape`: the shape of workbooks calamine reads whole, measured first.
//!
//! Parsing runs through [`super::worker`]: off the async runtime, bounded in time and stoppable.
//!
//! A file's format is judged by its contents (`%PDF-`, the parts of a ZIP package, an OLE
//! container), not its name, so a misnamed file still reads; anything else is tried as text
//! and refused with a clear error when it is binary. Every path is resolved by the sandbox in
//! `plan`; `run` resolves it again and refuses ([`ToolError::Conflict`]) if it now leads
//! somewhere else, then reads only through a [`source::SourceFile`].

mod ods_shape;
pub(crate) mod office;
pub(crate) mod pdf;
pub(crate) mod source;
pub(crate) mod spreadsheet;
pub(crate) mod text;
mod xls_shape;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{Risk, ToolCategory};

use self::pdf::{PageText, Pdf, render_pages};
use self::source::SourceFile;
use self::spreadsheet::{SpreadsheetFormat, Workbook};
use self::text::{TEXT_BYTE_BUDGET, TEXT_CHAR_LIMIT, decode, truncate_chars};
use super::worker::{PARSE_TIME_LIMIT, Stop, run_blocking};
use crate::sandbox::Access;
use crate::tools::{
    CatalogBuilder, CatalogError, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput,
    localized,
};

/// Largest document (other than plain text, which is read only as far as needed) read whole.
pub(crate) const DOCUMENT_BYTE_LIMIT: u64 = 256 << 20;

/// Registers this module's tools.
pub(crate) fn register(builder: &mut CatalogBuilder) -> Result<(), CatalogError> {
    builder.add(ExtractTextFromFile)?;
    builder.add(ReadPdfPages)?;
    Ok(())
}

/// Why a document could not be read. Messages are for the model and the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    /// The file is not a valid document of the format it claims.
    #[error("the file is not a valid {0} document: {1}")]
    Malformed(String, String),
    /// A PDF that needs a password.
    #[error("the PDF is password-protected and cannot be read")]
    Encrypted,
    /// Over a size limit.
    #[error("the file is too large to read: {0}")]
    TooLarge(String),
    /// A format the readers do not handle.
    #[error("{0}")]
    Unsupported(String),
    /// The request does not fit the document (a page or sheet that does not exist).
    #[error("{0}")]
    Invalid(String),
    /// The filesystem refused.
    #[error("cannot read the file: {0}")]
    Io(String),
    /// The caller stopped the work.
    #[error("stopped")]
    Stopped,
}

impl From<DocumentError> for ToolError {
    fn from(error: DocumentError) -> Self {
        match error {
            DocumentError::Stopped => ToolError::Cancelled,
            other => ToolError::Failed(other.to_string()),
        }
    }
}

pub(crate) fn io_error(error: std::io::Error) -> DocumentError {
    DocumentError::Io(error.to_string())
}

/// What a file is, judged by its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DocumentKind {
    /// A PDF.
    Pdf,
    /// A Word document (`.docx`, `.docm`).
    Word,
    /// A PowerPoint presentation (`.pptx`, `.pptm`).
    PowerPoint,
    /// A spreadsheet calamine reads.
    Spreadsheet(SpreadsheetFormat),
    /// An old binary Word or PowerPoint file (`.doc`, `.ppt`).
    LegacyOffice,
    /// Some other ZIP archive.
    OtherArchive,
    /// Anything else: text if it decodes as text.
    Text,
}

impl DocumentKind {
    /// Looks at the first bytes of `source` (and, for ZIP packages, the names of their parts).
    pub(crate) fn detect(source: &SourceFile) -> Result<Self, DocumentError> {
        let (head, _) = source.prefix(1024)?;
        // The PDF header may follow a little junk (readers accept it within 1024 bytes); off
        // the start it counts only for a `.pdf` name, so a text file that mentions `%PDF-`
        // stays text.
        if head.starts_with(b"%PDF-")
            || (source.has_extension("pdf") && head.windows(5).any(|window| window == b"%PDF-"))
        {
            return Ok(Self::Pdf);
        }
        if head.starts_with(b"PK\x03\x04") {
            let mut archive = zip::ZipArchive::new(source.reader()?)
                .map_err(|error| DocumentError::Malformed("ZIP".into(), error.to_string()))?;
            let has = |name: &str| archive.index_for_name(name).is_some();
            return Ok(if has("word/document.xml") {
                Self::Word
            } else if has("ppt/presentation.xml") {
                Self::PowerPoint
            } else if has("xl/workbook.bin") {
                Self::Spreadsheet(SpreadsheetFormat::Xlsb)
            } else if has("xl/workbook.xml") {
                Self::Spreadsheet(SpreadsheetFormat::Xlsx)
            } else if has("mimetype")
                && office::read_part(&mut archive, "mimetype")?.trim()
                    == "application/vnd.oasis.opendocument.spreadsheet"
            {
                Self::Spreadsheet(SpreadsheetFormat::Ods)
            } else {
                Self::OtherArchive
            });
        }
        if head.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
            // An OLE container holds an .xls workbook, or an old .doc/.ppt.
            return Ok(if source.has_extension("xls") {
                Self::Spreadsheet(SpreadsheetFormat::Xls)
            } else {
                Self::LegacyOffice
            });
        }
        Ok(Self::Text)
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
    Ok(SourceFile::open(&ctx.sandbox, planned)?)
}

/// Text gathered up to [`TEXT_CHAR_LIMIT`] characters; later pushes are dropped and flagged.
#[derive(Debug, Default)]
struct LimitedText {
    text: String,
    chars: usize,
    truncated: bool,
}

impl LimitedText {
    /// Appends `part`; returns false once the limit is reached (callers stop producing then).
    fn push(&mut self, part: &str) -> bool {
        if self.truncated {
            return false;
        }
        let length = part.chars().count();
        if self.chars + length <= TEXT_CHAR_LIMIT {
            self.text.push_str(part);
            self.chars += length;
            return true;
        }
        let mut kept = part.to_owned();
        truncate_chars(&mut kept, TEXT_CHAR_LIMIT - self.chars);
        self.text.push_str(&kept);
        self.chars = TEXT_CHAR_LIMIT;
        self.truncated = true;
        false
    }
}

/// What a reader found in a file.
#[derive(Debug)]
struct Extraction {
    /// Format for people (`PDF`, `Word document`, `text (windows-1251)`).
    format: String,
    /// Extra metadata lines (`Pages: 12`).
    details: Vec<String>,
    /// The text, at most [`TEXT_CHAR_LIMIT`] characters.
    content: LimitedText,
    /// Advice shown when the text was cut.
    truncation_hint: Option<&'static str>,
}

impl Extraction {
    fn render(&self, file_name: &str) -> String {
        let mut out = String::from("=== METADATA ===\n");
        out.push_str(&format!("Filename: {file_name}\nFormat: {}\n", self.format));
        for detail in &self.details {
            out.push_str(detail);
            out.push('\n');
        }
        if self.content.truncated {
            out.push_str(&format!(
                "Truncated: true (preview limited to {TEXT_CHAR_LIMIT} characters{})\n",
                self.truncation_hint
                    .map(|hint| format!("; {hint}"))
                    .unwrap_or_default()
            ));
        }
        out.push_str("\n=== CONTENT ===\n");
        if self.content.text.trim().is_empty() {
            out.push_str("(no text found: the file may hold only images or scans)");
        } else {
            out.push_str(self.content.text.trim_end());
        }
        out
    }
}

fn extract(source: &SourceFile, stop: &Stop) -> Result<Extraction, DocumentError> {
    let kind = DocumentKind::detect(source)?;
    let mut content = LimitedText::default();
    let mut details = Vec::new();
    let mut truncation_hint = None;
    let format = match kind {
        DocumentKind::Pdf => {
            let pdf = Pdf::load(&source.bytes(DOCUMENT_BYTE_LIMIT)?)?;
            details.push(format!("Pages: {}", pdf.page_count()));
            truncation_hint = Some("use ReadPdfPages to read the rest page by page");
            for number in 1..=pdf.page_count() {
                let pages = pdf.pages(number..=number, stop)?;
                let separator = if number > 1 { "\n\n" } else { "" };
                if !content.push(&format!("{separator}{}", render_pages(&pages))) {
                    break;
                }
            }
            "PDF".to_owned()
        }
        DocumentKind::Word => {
            source.check_document_size()?;
            let mut archive = open_archive(source)?;
            content.push(&office::word_text(&mut archive)?);
            "Word document".to_owned()
        }
        DocumentKind::PowerPoint => {
            source.check_document_size()?;
            let mut archive = open_archive(source)?;
            let slides = office::slide_texts(&mut archive, stop, TEXT_CHAR_LIMIT)?;
            details.push(format!("Slides: {}", slides.count));
            for (index, slide) in slides.texts.iter().enumerate() {
                let separator = if index > 0 { "\n\n" } else { "" };
                let body = if slide.is_empty() {
                    "(no text on this slide)"
                } else {
                    slide
                };
                if !content.push(&format!("{separator}--- Slide {} ---\n{body}", index + 1)) {
                    break;
                }
            }
            "PowerPoint presentation".to_owned()
        }
        DocumentKind::Spreadsheet(format) => {
            let mut workbook = Workbook::open(source, format)?;
            truncation_hint = Some("use ExcelRead to query the data");
            let grids = workbook.all_sheets(stop)?;
            details.push(format!("Sheets: {}", grids.len()));
            for (index, grid) in grids.iter().enumerate() {
                let separator = if index > 0 { "\n\n" } else { "" };
                if !content.push(&format!(
                    "{separator}--- Sheet: {} ---\n{}",
                    grid.name,
                    grid.render()
                )) {
                    break;
                }
            }
            "spreadsheet".to_owned()
        }
        DocumentKind::LegacyOffice => {
            return Err(DocumentError::Unsupported(
                "this is an old binary Office file (.doc or .ppt), which cannot be read; save it as \
                 .docx or .pptx first"
                    .into(),
            ));
        }
        DocumentKind::OtherArchive => {
            return Err(DocumentError::Unsupported(
                "this is a ZIP archive that is not a Word, PowerPoint or Excel document; its \
                 contents cannot be shown as text"
                    .into(),
            ));
        }
        DocumentKind::Text => {
            let (bytes, complete) = source.prefix(TEXT_BYTE_BUDGET)?;
            let decoded = decode(&bytes, complete).map_err(|_| {
                DocumentError::Unsupported(
                    "the file is binary, not text, and not a supported document (pdf, docx, pptx, \
                     xlsx, xls, ods, csv or text)"
                        .into(),
                )
            })?;
            content.push(&decoded.text);
            format!("text ({})", decoded.encoding)
        }
    };
    Ok(Extraction {
        format,
        details,
        content,
        truncation_hint,
    })
}

fn open_archive(source: &SourceFile) -> Result<zip::ZipArchive<BufReader<File>>, DocumentError> {
    zip::ZipArchive::new(source.reader()?)
        .map_err(|error| DocumentError::Malformed("Office".into(), error.to_string()))
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

/// The page range a `ReadPdfPages` call asked for.
#[derive(Debug, Clone)]
pub(crate) struct PageRequest {
    path: PathBuf,
    start: u32,
    end: u32,
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
            start,
            end,
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
            read_pdf_pages(&source, &request, stop)
        })
        .await?;
        Ok(ToolOutput::text(text))
    }
}

fn read_pdf_pages(
    source: &SourceFile,
    request: &PageRequest,
    stop: &Stop,
) -> Result<String, DocumentError> {
    if DocumentKind::detect(source)? != DocumentKind::Pdf {
        return Err(DocumentError::Unsupported("this is not a PDF file".into()));
    }
    let pdf = Pdf::load(&source.bytes(DOCUMENT_BYTE_LIMIT)?)?;
    let count = pdf.page_count();
    if request.start > count {
        return Err(DocumentError::Invalid(format!(
            "page {} is out of range: the document has {count} page{}",
            request.start,
            if count == 1 { "" } else { "s" }
        )));
    }
    let end = request.end.min(count);
    let mut content = LimitedText::default();
    let mut read: Vec<PageText> = Vec::new();
    for number in request.start..=end {
        let page = pdf.pages(number..=number, stop)?;
        let separator = if number > request.start { "\n\n" } else { "" };
        let fits = content.push(&format!("{separator}{}", render_pages(&page)));
        read.extend(page);
        if !fits {
            break;
        }
    }
    let mut out = format!(
        "=== PDF CONTENT (Pages {}-{end} of {count}) ===\n",
        request.start
    );
    if request.end > count {
        out.push_str(&format!(
            "(endPage {} is past the end; the document has {count} pages)\n",
            request.end
        ));
    }
    if read
        .iter()
        .all(|page| matches!(&page.text, Ok(text) if text.is_empty()))
    {
        out.push_str(
            "Warning: no text on these pages. They may hold only images or scans without a text \
             layer.",
        );
        return Ok(out);
    }
    out.push_str(content.text.trim_end());
    if content.truncated {
        let last = read.last().map_or(request.start, |page| page.number);
        out.push_str(&format!(
            "\n\nTruncated: true (limited to {TEXT_CHAR_LIMIT} characters; page {last} was cut. \
             Ask for fewer pages at a time.)"
        ));
    }
    Ok(out)
}
