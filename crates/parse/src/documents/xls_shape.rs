//! The shape of an Excel 97-2003 workbook (`.xls`), measured before calamine reads it.
//!
//! calamine reads every sheet of an `.xls` when the workbook opens: it reserves a cell vector
//! as large as each `DIMENSIONS` record claims (up to 2^32 rows by 2^16 columns, which aborts
//! the process), expands each sheet's cells and formulas into dense ranges over their bounding
//! boxes, clones a shared string into every cell that names it, and parses every sheet a
//! `BoundSheet8` record points at, however often the same bytes are named. Its OLE container
//! reader follows sector chains without looking for cycles. [`clean_workbook`] therefore:
//! 1. checks the container's allocation table against the file's size, then opens it with the
//!    `cfb` crate (which refuses cycles), and copies out the `Workbook` (or `Book`) stream,
//!    at most [`STREAM_BYTE_LIMIT`] bytes;
//! 2. walks the stream's BIFF records exactly as calamine does, building nothing but counts,
//!    and refuses a workbook whose sheets exceed the bounds of [`super::spreadsheet`];
//! 3. hands back a fresh container holding only that stream, which is what calamine reads, so
//!    the container calamine parses is one `cfb` wrote.
//!
//! Invariants: linear in the stream, with no recursion; the sheets' record walks together read
//! at most the stream once more (sheets that overlap are refused); a record's `CONTINUE`
//! records are at most [`MAX_CONTINUES`] (calamine takes them from the front of a vector).

use std::io::{Cursor, Read, Seek, SeekFrom, Write};

use super::DocumentError;
use super::spreadsheet::{
    MAX_SHEET_AREA, MAX_SHEET_CELLS, MAX_WORKBOOK_AREA, MAX_WORKBOOK_CELLS, MAX_WORKBOOK_TEXT_BYTES,
};

/// Largest workbook stream read.
const STREAM_BYTE_LIMIT: u64 = 256 << 20;
/// `CONTINUE` records one record may have (a 256 MiB shared string table needs ~32,000).
const MAX_CONTINUES: usize = 32_768;
/// Shared strings a workbook may have (at most one per cell Souz reads, with room to spare).
const MAX_SHARED_STRINGS: usize = 2 * MAX_WORKBOOK_CELLS as usize;
/// Cells the `DIMENSIONS` record of one sheet may claim: BIFF8's whole grid (65,536 × 256).
/// calamine reserves that many cells; unused, the reservation is address space, not memory.
const MAX_SHEET_RESERVATION: u64 = 65_536 * 256;
/// Cells the `DIMENSIONS` records of all sheets may claim together.
const MAX_WORKBOOK_RESERVATION: u64 = 4 * MAX_SHEET_RESERVATION;
/// Bytes of text a character may become (UTF-8 from UTF-16: at most three).
const BYTES_PER_CHARACTER: u64 = 3;

/// Measures the `.xls` in `source` and returns a new OLE container holding only its measured
/// workbook stream; refuses one whose container or sheets are past the bounds.
pub fn clean_workbook<R: Read + Seek>(mut source: R) -> Result<Vec<u8>, DocumentError> {
    check_allocation_table(&mut source)?;
    source
        .seek(SeekFrom::Start(0))
        .map_err(|error| malformed(&error))?;
    let mut container = cfb::CompoundFile::open(source).map_err(|error| malformed(&error))?;
    let path = ["Workbook", "Book"]
        .iter()
        .find_map(|wanted| {
            container
                .walk()
                .find(|entry| entry.is_stream() && entry.name().eq_ignore_ascii_case(wanted))
                .map(|entry| entry.path().to_path_buf())
        })
        .ok_or_else(|| {
            DocumentError::Malformed("Excel 97-2003".into(), "it has no workbook stream".into())
        })?;
    let stream = container
        .open_stream(&path)
        .map_err(|error| malformed(&error))?;
    if stream.len() > STREAM_BYTE_LIMIT {
        return Err(too_large_stream());
    }
    let mut bytes = Vec::new();
    stream
        .take(STREAM_BYTE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| malformed(&error))?;
    if bytes.len() as u64 > STREAM_BYTE_LIMIT {
        return Err(too_large_stream());
    }
    measure(&bytes)?;
    // Version 3 (512-byte sectors), as Excel writes it: calamine refuses a version-4
    // container whose root holds no mini stream.
    let mut clean =
        cfb::CompoundFile::create_with_version(cfb::Version::V3, Cursor::new(Vec::new()))
            .map_err(|error| DocumentError::Io(error.to_string()))?;
    let mut written = clean
        .create_stream("/Workbook")
        .map_err(|error| DocumentError::Io(error.to_string()))?;
    written
        .write_all(&bytes)
        .and_then(|()| written.flush())
        .map_err(|error| DocumentError::Io(error.to_string()))?;
    drop(written);
    clean
        .flush()
        .map_err(|error| DocumentError::Io(error.to_string()))?;
    Ok(clean.into_inner().into_inner())
}

/// Refuses a container whose allocation table lists more sectors than the file could need.
/// The `cfb` crate reads every sector the table lists before it validates them, and the same
/// sector may be listed again and again: a few megabytes could ask for gigabytes.
fn check_allocation_table<R: Read + Seek>(source: &mut R) -> Result<(), DocumentError> {
    const FREE: u32 = 0xFFFF_FFFF;
    let length = source
        .seek(SeekFrom::End(0))
        .map_err(|error| malformed(&error))?;
    source
        .seek(SeekFrom::Start(0))
        .map_err(|error| malformed(&error))?;
    let mut header = [0u8; 512];
    source
        .read_exact(&mut header)
        .map_err(|error| malformed(&error))?;
    let sector_length: u64 = match u16_at(&header, 0x1E) {
        9 => 512,
        12 => 4096,
        shift => {
            return Err(DocumentError::Malformed(
                "Excel 97-2003".into(),
                format!("its sector size 2^{shift} is not one OLE files use"),
            ));
        }
    };
    let sectors = length.div_ceil(sector_length);
    let entries = (sector_length / 4) as usize;
    // The table's sectors needed to map every sector of the file, with one of slack.
    let needed = sectors.div_ceil(entries as u64) + 1;
    let mut listed = header[0x4C..]
        .chunks_exact(4)
        .filter(|entry| u32_at(entry, 0) != FREE)
        .count() as u64;
    let mut next = u32_at(&header, 0x44);
    let mut sector = vec![0u8; sector_length as usize];
    let mut walked = 0u64;
    while u64::from(next) + 1 < sectors && listed <= needed {
        walked += 1;
        if walked > sectors {
            break;
        }
        source
            .seek(SeekFrom::Start((u64::from(next) + 1) * sector_length))
            .map_err(|error| malformed(&error))?;
        source
            .read_exact(&mut sector)
            .map_err(|error| malformed(&error))?;
        listed += sector[..sector.len() - 4]
            .chunks_exact(4)
            .filter(|entry| u32_at(entry, 0) != FREE)
            .count() as u64;
        next = u32_at(&sector, sector.len() - 4);
    }
    if listed > needed {
        return Err(DocumentError::Malformed(
            "Excel 97-2003".into(),
            format!(
                "its allocation table lists more than {needed} sectors of tables for a file of \
                 {sectors} sectors"
            ),
        ));
    }
    Ok(())
}

/// Walks the workbook stream's records as calamine does and refuses it past the bounds.
pub fn measure(stream: &[u8]) -> Result<(), DocumentError> {
    let mut sheet_positions = Vec::new();
    let mut shared_strings: Vec<u16> = Vec::new();
    for record in Records::new(stream) {
        let record = record?;
        match record.kind {
            BOUND_SHEET if record.data.len() >= 4 => {
                sheet_positions.push(u32_at(record.data, 0) as usize);
            }
            SHARED_STRINGS => shared_strings = shared_string_lengths(record)?,
            END => break,
            _ => {}
        }
    }
    let mut workbook = Totals::default();
    let mut scanned = 0usize;
    for position in sheet_positions {
        let rest = stream.get(position..).ok_or_else(|| {
            DocumentError::Malformed(
                "Excel 97-2003".into(),
                "a sheet starts past the end of the workbook".into(),
            )
        })?;
        let sheet = measure_sheet(rest, &shared_strings)?;
        scanned = scanned.saturating_add(sheet.bytes);
        if scanned > stream.len() {
            return Err(DocumentError::Malformed(
                "Excel 97-2003".into(),
                "its sheets overlap".into(),
            ));
        }
        workbook.add(&sheet)?;
    }
    Ok(())
}

const BOF: u16 = 0x0809;
const END: u16 = 0x000A;
const BOUND_SHEET: u16 = 0x0085;
const SHARED_STRINGS: u16 = 0x00FC;
const CONTINUE: u16 = 0x003C;
const DIMENSIONS: u16 = 0x0200;
const FORMULA: u16 = 0x0006;
const FORMULA_STRING: u16 = 0x0207;
const MULTIPLE_RK: u16 = 0x00BD;
const LABEL_SHARED: u16 = 0x00FD;
/// Records calamine reads as one cell at the (row, column) in their first four bytes:
/// NUMBER, LABEL, RSTRING, BOOLERR, RK.
const SINGLE_CELLS: [u16; 5] = [0x0203, 0x0204, 0x00D6, 0x0205, 0x027E];
/// Of those, the ones holding their text in the record: LABEL, RSTRING.
const TEXT_CELLS: [u16; 2] = [0x0204, 0x00D6];

/// What one sheet's records make calamine build.
#[derive(Debug, Default)]
struct Sheet {
    /// Bytes of the stream its records took.
    bytes: usize,
    /// Cells (values) and their bounding box.
    cells: Extent,
    /// Formulas and their bounding box (calamine keeps them in a dense range of their own).
    formulas: Extent,
    /// The largest reservation a `DIMENSIONS` record asked for.
    reserved: u64,
    /// Text its cells hold, in bytes (an upper bound).
    text: u64,
}

#[derive(Debug, Default)]
struct Extent {
    count: u64,
    bounds: Option<((u32, u32), (u32, u32))>,
}

impl Extent {
    fn add(&mut self, (row, column): (u32, u32), count: u64) {
        self.count = self.count.saturating_add(count);
        let ((top, left), (bottom, right)) = self.bounds.unwrap_or(((row, column), (row, column)));
        self.bounds = Some((
            (top.min(row), left.min(column)),
            (bottom.max(row), right.max(column)),
        ));
    }

    /// Cells of the dense range over the bounding box.
    fn area(&self) -> u64 {
        self.bounds.map_or(0, |((top, left), (bottom, right))| {
            (u64::from(bottom - top) + 1).saturating_mul(u64::from(right - left) + 1)
        })
    }
}

/// The workbook's sheets so far.
#[derive(Debug, Default)]
struct Totals {
    cells: u64,
    area: u64,
    reserved: u64,
    text: u64,
}

impl Totals {
    fn add(&mut self, sheet: &Sheet) -> Result<(), DocumentError> {
        let cells = sheet.cells.count.saturating_add(sheet.formulas.count);
        let area = sheet.cells.area().saturating_add(sheet.formulas.area());
        if cells > MAX_SHEET_CELLS as u64 || area > MAX_SHEET_AREA {
            return Err(DocumentError::TooLarge(format!(
                "a sheet spans {area} cells with {cells} values and formulas (at most \
                 {MAX_SHEET_AREA} cells and {MAX_SHEET_CELLS} values are read)"
            )));
        }
        if sheet.reserved > MAX_SHEET_RESERVATION {
            return Err(DocumentError::TooLarge(format!(
                "a sheet claims {} cells, more than an Excel 97-2003 sheet has",
                sheet.reserved
            )));
        }
        self.cells = self.cells.saturating_add(cells);
        self.area = self.area.saturating_add(area);
        self.reserved = self.reserved.saturating_add(sheet.reserved);
        self.text = self.text.saturating_add(sheet.text);
        if self.cells > MAX_WORKBOOK_CELLS || self.area > MAX_WORKBOOK_AREA {
            return Err(DocumentError::TooLarge(format!(
                "its sheets reach more than {MAX_WORKBOOK_AREA} cells or {MAX_WORKBOOK_CELLS} \
                 values"
            )));
        }
        if self.reserved > MAX_WORKBOOK_RESERVATION {
            return Err(DocumentError::TooLarge(format!(
                "its sheets claim more than {MAX_WORKBOOK_RESERVATION} cells"
            )));
        }
        if self.text > MAX_WORKBOOK_TEXT_BYTES {
            return Err(DocumentError::TooLarge(format!(
                "its cells hold more than {} MiB of text",
                MAX_WORKBOOK_TEXT_BYTES >> 20
            )));
        }
        Ok(())
    }
}

/// One sheet's records, from its position to its end (calamine's sheet loop, counting).
fn measure_sheet(stream: &[u8], shared_strings: &[u16]) -> Result<Sheet, DocumentError> {
    let mut sheet = Sheet::default();
    let mut seen_start = false;
    let mut nested = 0usize;
    let mut formula_position = (0u32, 0u32);
    let mut records = Records::new(stream);
    while let Some(record) = records.next() {
        let record = record?;
        sheet.bytes = stream.len() - records.stream.len();
        let data = record.data;
        if nested > 0 {
            match record.kind {
                BOF => nested += 1,
                END => nested -= 1,
                _ => {}
            }
            continue;
        }
        match record.kind {
            BOF if seen_start => nested += 1,
            BOF => seen_start = true,
            DIMENSIONS => sheet.reserved = sheet.reserved.max(reservation(data)),
            kind if SINGLE_CELLS.contains(&kind) && data.len() >= 4 => {
                sheet.cells.add(position(data), 1);
                if TEXT_CELLS.contains(&kind) {
                    sheet.text = sheet
                        .text
                        .saturating_add(data.len() as u64 * BYTES_PER_CHARACTER);
                }
            }
            FORMULA_STRING => {
                sheet.cells.add(formula_position, 1);
                sheet.text = sheet
                    .text
                    .saturating_add(data.len() as u64 * BYTES_PER_CHARACTER);
            }
            LABEL_SHARED if data.len() >= 10 => {
                if let Some(&characters) = shared_strings.get(u32_at(data, 6) as usize) {
                    sheet.cells.add(position(data), 1);
                    sheet.text = sheet
                        .text
                        .saturating_add(u64::from(characters) * BYTES_PER_CHARACTER);
                }
            }
            MULTIPLE_RK if data.len() >= 6 => {
                let (row, first) = position(data);
                let count = (data.len() - 6) / 6;
                if count > 0 {
                    sheet.cells.add((row, first), 0);
                    sheet
                        .cells
                        .add((row, first.saturating_add(count as u32 - 1)), count as u64);
                }
            }
            FORMULA if data.len() >= 20 => {
                formula_position = position(data);
                sheet.cells.add(formula_position, 1);
                sheet.formulas.add(formula_position, 1);
                // The formula's text grows with its tokens (references written out).
                sheet.text = sheet
                    .text
                    .saturating_add((data.len() - 20) as u64 * BYTES_PER_CHARACTER);
            }
            END => break,
            _ => {}
        }
    }
    if records.stream.is_empty() {
        sheet.bytes = stream.len();
    }
    Ok(sheet)
}

/// The cells calamine reserves for a `DIMENSIONS` record (its arithmetic, wrapping as a
/// release build does).
fn reservation(data: &[u8]) -> u64 {
    let (first_row, last_row, mut first_column, last_column) = match data.len() {
        10 => (
            u32::from(u16_at(data, 0)),
            u32::from(u16_at(data, 2)),
            u32::from(u16_at(data, 4)),
            u32::from(u16_at(data, 6)),
        ),
        14 | 16 => (
            u32_at(data, 0),
            u32_at(data, 4),
            u32::from(u16_at(data, 8)),
            u32::from(u16_at(data, 10)),
        ),
        _ => return 0,
    };
    if first_column > 0xFF || last_column < first_column {
        first_column = 0;
    }
    let (end_row, end_column) = if last_row >= 1 && last_column >= 1 {
        (last_row - 1, last_column - 1)
    } else {
        (first_row, first_column)
    };
    let rows = end_row.wrapping_sub(first_row).wrapping_add(1);
    let columns = end_column.wrapping_sub(first_column).wrapping_add(1);
    u64::from(rows).saturating_mul(u64::from(columns))
}

/// The characters of each shared string (calamine's SST reading, keeping only lengths).
fn shared_string_lengths(record: Record<'_>) -> Result<Vec<u16>, DocumentError> {
    let mut cursor = Pieces {
        data: record.data.get(8..).ok_or_else(truncated)?,
        rest: &record.continues,
    };
    let mut lengths = Vec::new();
    while !cursor.data.is_empty() || cursor.next_piece() {
        if lengths.len() >= MAX_SHARED_STRINGS {
            return Err(DocumentError::TooLarge(format!(
                "it has more than {MAX_SHARED_STRINGS} shared strings"
            )));
        }
        if cursor.data.is_empty() {
            lengths.push(0);
            continue;
        }
        if cursor.data.len() < 3 {
            return Err(truncated());
        }
        let characters = u16_at(cursor.data, 0);
        let flags = cursor.data[2];
        cursor.data = &cursor.data[3..];
        let mut runs = 0usize;
        let mut extra = 0usize;
        if flags & 0x8 != 0 {
            runs = usize::from(u16_at(cursor.data.get(..2).ok_or_else(truncated)?, 0));
            cursor.data = &cursor.data[2..];
        }
        if flags & 0x4 != 0 {
            let raw = i32::from_le_bytes(
                cursor
                    .data
                    .get(..4)
                    .and_then(|bytes| bytes.try_into().ok())
                    .ok_or_else(truncated)?,
            );
            extra = usize::try_from(raw).map_err(|_| truncated())?;
            cursor.data = &cursor.data[4..];
        }
        let mut left = usize::from(characters);
        let mut wide = flags & 0x1 != 0;
        while left > 0 {
            let width = if wide { 2 } else { 1 };
            let taken = (cursor.data.len() / width).min(left);
            cursor.data = &cursor.data[taken * width..];
            left -= taken;
            if left > 0 {
                if !cursor.next_piece() || cursor.data.is_empty() {
                    return Err(truncated());
                }
                wide = cursor.data[0] & 0x1 != 0;
                cursor.data = &cursor.data[1..];
            }
        }
        cursor.skip(runs * 4)?;
        cursor.skip(extra)?;
        lengths.push(characters);
    }
    Ok(lengths)
}

/// A record's data and its `CONTINUE` pieces, read in order.
struct Pieces<'a> {
    data: &'a [u8],
    rest: &'a [&'a [u8]],
}

impl Pieces<'_> {
    fn next_piece(&mut self) -> bool {
        match self.rest.split_first() {
            Some((first, rest)) => {
                self.data = first;
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn skip(&mut self, mut length: usize) -> Result<(), DocumentError> {
        while length > 0 {
            if self.data.is_empty() && !self.next_piece() {
                return Err(truncated());
            }
            let taken = length.min(self.data.len());
            self.data = &self.data[taken..];
            length -= taken;
        }
        Ok(())
    }
}

/// A BIFF record with the `CONTINUE` records that follow it.
struct Record<'a> {
    kind: u16,
    data: &'a [u8],
    continues: Vec<&'a [u8]>,
}

/// The records of a stream, split as calamine splits them.
struct Records<'a> {
    stream: &'a [u8],
}

impl<'a> Records<'a> {
    fn new(stream: &'a [u8]) -> Self {
        Self { stream }
    }

    /// The next record's data (type and length read first), moving past it.
    fn take(&mut self) -> Result<(u16, &'a [u8]), DocumentError> {
        let kind = u16_at(self.stream, 0);
        let length = usize::from(u16_at(self.stream, 2));
        let end = length + 4;
        let record = self.stream.get(4..end).ok_or_else(truncated)?;
        self.stream = &self.stream[end..];
        Ok((kind, record))
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, DocumentError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stream.is_empty() {
            return None;
        }
        if self.stream.len() < 4 {
            self.stream = &[];
            return Some(Err(truncated()));
        }
        let mut read = || {
            let (kind, data) = self.take()?;
            let mut continues = Vec::new();
            while self.stream.len() > 4 && u16_at(self.stream, 0) == CONTINUE {
                if continues.len() >= MAX_CONTINUES {
                    return Err(DocumentError::TooLarge(format!(
                        "a record has more than {MAX_CONTINUES} continuations"
                    )));
                }
                continues.push(self.take()?.1);
            }
            Ok(Record {
                kind,
                data,
                continues,
            })
        };
        let record = read();
        if record.is_err() {
            self.stream = &[];
        }
        Some(record)
    }
}

fn position(data: &[u8]) -> (u32, u32) {
    (u32::from(u16_at(data, 0)), u32::from(u16_at(data, 2)))
}

/// The little-endian `u16` at `offset` (0 past the end).
fn u16_at(bytes: &[u8], offset: usize) -> u16 {
    bytes
        .get(offset..offset + 2)
        .map_or(0, |pair| u16::from_le_bytes([pair[0], pair[1]]))
}

/// The little-endian `u32` at `offset` (0 past the end).
fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    bytes.get(offset..offset + 4).map_or(0, |quad| {
        u32::from_le_bytes([quad[0], quad[1], quad[2], quad[3]])
    })
}

fn truncated() -> DocumentError {
    DocumentError::Malformed("Excel 97-2003".into(), "a record is cut short".into())
}

fn too_large_stream() -> DocumentError {
    DocumentError::TooLarge(format!(
        "its workbook stream is larger than {} MiB",
        STREAM_BYTE_LIMIT >> 20
    ))
}

fn malformed(error: &dyn std::fmt::Display) -> DocumentError {
    DocumentError::Malformed("Excel 97-2003".into(), error.to_string())
}

#[cfg(test)]
mod tests;
