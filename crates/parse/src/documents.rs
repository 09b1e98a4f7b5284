//! Reading document formats: what a file is, and its text (the daemon's `ExtractTextFromFile`
//! and `ReadPdfPages` tools are thin wrappers over [`extract`] and [`read_pdf_pages`]).
//!
//! The submodules are the readers, which the daemon's data tools reuse for spreadsheets:
//! - [`text`]: encoding-tolerant plain text and the shared 50,000-character limit,
//! - [`pdf`]: PDF page text (pdf-extract),
//! - [`office`]: Word and PowerPoint text (zip + quick-xml),
//! - [`spreadsheet`]: Excel, OpenDocument and CSV as grids of cells (calamine, csv),
//! - [`source`]: the file, opened once without following a final link and checked on the handle.
//! - `ods_shape`, `xls_shape`: the shape of workbooks calamine reads whole, measured first.
//!
//! Parsing runs through [`crate::worker`]: off the async runtime, bounded in time and stoppable.
//!
//! A file's format is judged by its contents (`%PDF-`, the parts of a ZIP package, an OLE
//! container), not its name, so a misnamed file still reads; anything else is tried as text
//! and refused with a clear error when it is binary. Readers read only through a
//! [`source::SourceFile`], a handle the caller opened (the daemon opens it beneath the
//! sandbox's root, following no link).

mod ods_shape;
pub mod office;
pub mod pdf;
pub mod source;
pub mod spreadsheet;
pub mod text;
mod xls_shape;

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::BufReader;

use self::pdf::{PageText, Pdf, render_pages};
use self::source::SourceFile;
use self::spreadsheet::{SpreadsheetFormat, Workbook};
use self::text::{TEXT_BYTE_BUDGET, TEXT_CHAR_LIMIT, decode, truncate_chars};
use crate::worker::Stop;

/// Largest document (other than plain text, which is read only as far as needed) read whole.
pub const DOCUMENT_BYTE_LIMIT: u64 = 256 << 20;

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

/// An I/O error as a [`DocumentError`].
pub fn io_error(error: std::io::Error) -> DocumentError {
    DocumentError::Io(error.to_string())
}

/// What a file is, judged by its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentKind {
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
    pub fn detect(source: &SourceFile) -> Result<Self, DocumentError> {
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

/// Text gathered up to [`TEXT_CHAR_LIMIT`] characters; later pushes are dropped and flagged.
#[derive(Debug, Default)]
pub struct LimitedText {
    /// The text kept.
    pub text: String,
    chars: usize,
    /// Whether anything was dropped.
    pub truncated: bool,
}

impl LimitedText {
    /// Appends `part`; returns false once the limit is reached (callers stop producing then).
    pub fn push(&mut self, part: &str) -> bool {
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
pub struct Extraction {
    /// Format for people (`PDF`, `Word document`, `text (windows-1251)`).
    pub format: String,
    /// Extra metadata lines (`Pages: 12`).
    pub details: Vec<String>,
    /// The text, at most [`TEXT_CHAR_LIMIT`] characters.
    pub content: LimitedText,
    /// Advice shown when the text was cut.
    pub truncation_hint: Option<&'static str>,
}

impl Extraction {
    /// The text shown for a file called `file_name`: metadata, then the content.
    pub fn render(&self, file_name: &str) -> String {
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

/// Reads the text of any supported document, up to [`TEXT_CHAR_LIMIT`] characters.
pub fn extract(source: &SourceFile, stop: &Stop) -> Result<Extraction, DocumentError> {
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

/// A range of PDF pages, 1-based and inclusive (`start` ≥ 1, `end` ≥ `start`, checked by the
/// caller); an `end` past the last page reads to the last page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRange {
    /// The first page.
    pub start: u32,
    /// The last page.
    pub end: u32,
}

/// The text of a range of a PDF's pages, with the page count and what was cut.
pub fn read_pdf_pages(
    source: &SourceFile,
    request: &PageRange,
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
