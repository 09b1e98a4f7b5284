//! The shape of an OpenDocument spreadsheet, measured before calamine reads it.
//!
//! calamine reads every sheet of an `.ods` whole when the workbook opens and expands repeated
//! rows and cells (`table:number-rows-repeated`, `table:number-columns-repeated`) into a dense
//! range of up to 100,000,000 cells: a 772-byte file held 12 GiB. [`check`] streams
//! `content.xml` once, building nothing, and refuses a workbook whose sheets would be larger
//! than the grids Souz reads from the other formats.
//!
//! Invariants: linear in the XML read, which is capped at [`CONTENT_BYTE_LIMIT`]; a cell counts
//! when it holds a value (a value type or content) and reaches as far as its repeats; empty
//! repeated cells and rows (what spreadsheet programs write to pad a sheet) count only as the
//! distance to a later cell that holds a value.

use std::io::{BufReader, Read, Seek};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use zip::ZipArchive;

use super::DocumentError;

/// Largest `content.xml` read, uncompressed.
const CONTENT_BYTE_LIMIT: u64 = 256 << 20;

/// Refuses a workbook whose sheets together reach past `max_area` cells (each counted from
/// its first row and column) or hold more than `max_cells` cells with a value: calamine
/// expands every sheet at once.
pub fn check<R: Read + Seek>(
    source: R,
    max_cells: u64,
    max_area: u64,
) -> Result<(), DocumentError> {
    let mut archive = ZipArchive::new(source).map_err(|error| malformed(&error))?;
    let content = archive
        .by_name("content.xml")
        .map_err(|error| malformed(&error))?;
    let mut reader = Reader::from_reader(BufReader::new(content.take(CONTENT_BYTE_LIMIT + 1)));
    let mut buffer = Vec::new();
    let mut sheet = Sheet::default();
    // What the sheets before this one reach: (area, cells with a value).
    let mut before = (0u64, 0u64);
    // Tables open around this point: only a top-level one starts a new sheet (a table nested
    // in a cell counts toward its sheet, so it cannot reset the count).
    let mut tables = 0usize;
    loop {
        let event = reader
            .read_event_into(&mut buffer)
            .map_err(|error| malformed(&error))?;
        if reader.buffer_position() > CONTENT_BYTE_LIMIT {
            return Err(DocumentError::TooLarge(format!(
                "the spreadsheet's content is larger than {} MiB",
                CONTENT_BYTE_LIMIT >> 20
            )));
        }
        match &event {
            Event::Start(element) | Event::Empty(element) => {
                let empty = matches!(event, Event::Empty(_));
                match element.local_name().as_ref() {
                    "table" => {
                        if tables == 0 {
                            let (area, cells) = sheet.reach();
                            before = (
                                before.0.saturating_add(area),
                                before.1.saturating_add(cells),
                            );
                            sheet = Sheet::default();
                        }
                        if !empty {
                            tables += 1;
                        }
                    }
                    "table-row" => {
                        sheet.start_row(repeats(element, "table:number-rows-repeated"));
                        if empty {
                            sheet.end_row();
                        }
                    }
                    "table-cell" | "covered-table-cell" => {
                        let valued = !empty || has_attribute(element, "office:value-type");
                        sheet.cell(repeats(element, "table:number-columns-repeated"), valued);
                    }
                    _ => {}
                }
            }
            Event::End(element) => match element.local_name().as_ref() {
                "table-row" => sheet.end_row(),
                "table" => tables = tables.saturating_sub(1),
                _ => {}
            },
            Event::Eof => return Ok(()),
            _ => {}
        }
        let (area, cells) = sheet.reach();
        let (area, cells) = (
            before.0.saturating_add(area),
            before.1.saturating_add(cells),
        );
        if cells > max_cells || area > max_area {
            return Err(DocumentError::TooLarge(format!(
                "its sheets reach {area} cells with {cells} holding a value (at most \
                 {max_area} cells and {max_cells} values are read)"
            )));
        }
        buffer.clear();
    }
}

/// What one sheet reaches so far.
#[derive(Debug, Default)]
struct Sheet {
    /// Rows before the current one.
    row: u64,
    /// The current row's repeats.
    row_repeats: u64,
    /// Columns before the next cell of the current row.
    column: u64,
    /// Whether the current row holds a value.
    row_valued: bool,
    /// One past the last row and column holding a value.
    rows: u64,
    columns: u64,
    /// Cells holding a value.
    cells: u64,
}

impl Sheet {
    fn start_row(&mut self, repeats: u64) {
        self.row_repeats = repeats;
        self.column = 0;
        self.row_valued = false;
    }

    fn cell(&mut self, repeats: u64, valued: bool) {
        let end = self.column.saturating_add(repeats);
        if valued {
            self.columns = self.columns.max(end);
            self.cells = self
                .cells
                .saturating_add(repeats.saturating_mul(self.row_repeats.max(1)));
            self.row_valued = true;
        }
        self.column = end;
    }

    fn end_row(&mut self) {
        let end = self.row.saturating_add(self.row_repeats.max(1));
        if self.row_valued {
            self.rows = self.rows.max(end);
        }
        self.row = end;
        self.row_repeats = 1;
        self.column = 0;
        self.row_valued = false;
    }

    /// The area this sheet reaches so far and its cells holding a value (the current row
    /// counts as soon as it holds a value).
    fn reach(&self) -> (u64, u64) {
        let rows = if self.row_valued {
            self.rows
                .max(self.row.saturating_add(self.row_repeats.max(1)))
        } else {
            self.rows
        };
        (rows.saturating_mul(self.columns), self.cells)
    }
}

/// The repeat count an element gives in `name` (1 when absent or unreadable).
fn repeats(element: &BytesStart<'_>, name: &str) -> u64 {
    element
        .try_get_attribute(name)
        .ok()
        .flatten()
        .and_then(|attribute| attribute.value.trim().parse().ok())
        .unwrap_or(1)
}

fn has_attribute(element: &BytesStart<'_>, name: &str) -> bool {
    element.try_get_attribute(name).ok().flatten().is_some()
}

fn malformed(error: &dyn std::fmt::Display) -> DocumentError {
    DocumentError::Malformed("OpenDocument".into(), error.to_string())
}
