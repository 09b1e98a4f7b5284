//! Text of PDF pages, with pdf-extract (over lopdf).
//!
//! pdf-extract can panic on malformed files; each page is extracted behind `catch_unwind`, so
//! one broken page costs that page only and never the process. It also recurses on a page's
//! structure without a bound, which no `catch_unwind` survives: each page's structure is
//! checked first ([`structure`]). Encrypted files open when they need no password (the common
//! "permissions only" case); others get a clear error. Compressed streams are decoded once,
//! within bounds, as the file loads ([`streams`]): pdf-extract never inflates anything.

mod streams;
mod structure;

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_extract::{Document, ObjectId, PlainTextOutput, output_doc_page};

use super::DocumentError;
use super::text::tidy;
use crate::worker::Stop;

/// An opened PDF.
pub struct Pdf {
    document: Document,
    /// Page numbers (1-based) and their objects, listed once.
    pages: BTreeMap<u32, ObjectId>,
    page_count: u32,
}

/// One page's text, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageText {
    /// 1-based page number.
    pub number: u32,
    /// Its text (tidied), or the reason extraction failed.
    pub text: Result<String, String>,
}

impl Pdf {
    /// Parses a PDF from its bytes.
    pub fn load(bytes: &[u8]) -> Result<Self, DocumentError> {
        let mut document = streams::load(bytes)?;
        if document.is_encrypted() && document.decrypt("").is_err() {
            return Err(DocumentError::Encrypted);
        }
        streams::decode_streams(&mut document)?;
        let pages = document.get_pages();
        let page_count = u32::try_from(pages.len()).unwrap_or(u32::MAX);
        Ok(Self {
            document,
            pages,
            page_count,
        })
    }

    /// Number of pages.
    pub fn page_count(&self) -> u32 {
        self.page_count
    }

    /// Text of the pages in `pages` (1-based, within the page count), stopping early if asked.
    pub fn pages(
        &self,
        pages: RangeInclusive<u32>,
        stop: &Stop,
    ) -> Result<Vec<PageText>, DocumentError> {
        let mut texts = Vec::new();
        for number in pages {
            stop.check()?;
            texts.push(PageText {
                number,
                text: self.page(number),
            });
        }
        Ok(texts)
    }

    fn page(&self, number: u32) -> Result<String, String> {
        let page = self
            .pages
            .get(&number)
            .copied()
            .ok_or_else(|| format!("page {number} does not exist"))?;
        structure::check_page(&self.document, page)
            .map_err(|reason| format!("could not extract text: {reason}"))?;
        let mut text = String::new();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut output = PlainTextOutput::new(&mut text);
            output_doc_page(&self.document, &mut output, number)
        }));
        match outcome {
            Ok(Ok(())) => Ok(tidy(&text)),
            Ok(Err(error)) => Err(format!("could not extract text: {error}")),
            Err(_) => Err("could not extract text: the page is malformed".into()),
        }
    }
}

/// Renders pages as the readers show them: a marker line per page, then its text.
pub fn render_pages(pages: &[PageText]) -> String {
    let mut out = String::new();
    for page in pages {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&format!("--- Page {} ---\n", page.number));
        match &page.text {
            Ok(text) if text.is_empty() => out.push_str("(no text on this page)"),
            Ok(text) => out.push_str(text),
            Err(reason) => out.push_str(&format!("({reason})")),
        }
    }
    out
}
