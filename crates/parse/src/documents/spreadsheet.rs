//! Spreadsheets as grids of cells: Excel (`.xlsx`, `.xlsm`, `.xlsb`, `.xls`) and OpenDocument
//! (`.ods`) through calamine, and CSV/TSV through the `csv` crate (encoding-tolerant, delimiter
//! sniffed: `;`-separated files from a Russian or German Excel read as well as `,`).
//!
//! A [`Grid`] keeps the sheet's used range and where it starts, so `B5` means the same cell as
//! in Excel even when the data does not start at `A1`. Formula cells hold the value Excel last
//! computed (calamine reads cached values).

use std::fmt::Display;
use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};

use calamine::{Data, Ods, Reader, Sheets, Xls, Xlsb, Xlsx};

use super::source::SourceFile;
use super::text::decode;
use super::{DocumentError, DocumentKind};
use crate::numbers::format_number;
use crate::worker::Stop;

/// Largest CSV read whole, in bytes.
const CSV_BYTE_LIMIT: u64 = 256 << 20;

/// One cell's value.
#[derive(Debug, Clone, PartialEq)]
pub enum CellValue {
    /// Nothing.
    Empty,
    /// A number.
    Number(f64),
    /// Text (CSV cells are always text; numbers in them are recognised by [`Self::number`]).
    Text(String),
    /// TRUE or FALSE.
    Bool(bool),
    /// A date, time or duration, already rendered (`2024-01-31`, `2024-01-31 09:30:00`, `36:15:00`).
    Date(String),
    /// An Excel error value (`#DIV/0!`).
    Error(String),
}

impl CellValue {
    /// The value as people read it.
    pub fn display(&self) -> String {
        match self {
            Self::Empty => String::new(),
            Self::Number(value) => format_number(*value),
            Self::Text(text) | Self::Date(text) | Self::Error(text) => text.clone(),
            Self::Bool(true) => "TRUE".into(),
            Self::Bool(false) => "FALSE".into(),
        }
    }

    /// The value as a number: numbers, and text that reads as one (`1 234,5`, `-3.2e2`).
    pub fn number(&self) -> Option<f64> {
        match self {
            Self::Number(value) => Some(*value),
            Self::Text(text) => parse_number(text),
            _ => None,
        }
    }

    /// Whether the cell holds nothing (or only spaces).
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Empty => true,
            Self::Text(text) => text.trim().is_empty(),
            _ => false,
        }
    }

    fn from_calamine(data: &Data) -> Self {
        match data {
            Data::Empty => Self::Empty,
            Data::Int(value) => Self::Number(*value as f64),
            Data::Float(value) => Self::Number(*value),
            Data::String(text) => Self::Text(text.clone()),
            Data::Bool(value) => Self::Bool(*value),
            Data::DateTime(value) if value.is_duration() => {
                Self::Date(render_duration(value.as_f64()))
            }
            Data::DateTime(value) => {
                let (year, month, day, hour, minute, second, _) = value.to_ymd_hms_milli();
                if (hour, minute, second) == (0, 0, 0) {
                    Self::Date(format!("{year:04}-{month:02}-{day:02}"))
                } else {
                    Self::Date(format!(
                        "{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}"
                    ))
                }
            }
            Data::DateTimeIso(text) | Data::DurationIso(text) => Self::Date(text.clone()),
            Data::Error(error) => Self::Error(error.to_string()),
        }
    }
}

/// Renders a duration in days (Excel's unit) as `hours:minutes:seconds`.
fn render_duration(days: f64) -> String {
    let total_seconds = (days * 86_400.0).round() as i64;
    let sign = if total_seconds < 0 { "-" } else { "" };
    let seconds = total_seconds.abs();
    format!(
        "{sign}{}:{:02}:{:02}",
        seconds / 3600,
        (seconds / 60) % 60,
        seconds % 60
    )
}

/// Reads a number written by a person: spaces and no-break spaces as thousands separators, a
/// decimal comma (`3,5`) or point, or both (`1.234,5` / `1,234.5`: the last one is decimal).
pub fn parse_number(text: &str) -> Option<f64> {
    let compact: String = text
        .trim()
        .chars()
        .filter(|character| !matches!(character, ' ' | '\u{00A0}' | '\u{202F}' | '\''))
        .collect();
    if compact.is_empty()
        || !compact.chars().any(|character| character.is_ascii_digit())
        || !compact
            .chars()
            .all(|character| character.is_ascii_digit() || "+-.,eE".contains(character))
    {
        return None;
    }
    let normalized = match (compact.rfind(','), compact.rfind('.')) {
        (Some(comma), Some(point)) if comma > point => compact.replace('.', "").replace(',', "."),
        (Some(_), Some(_)) => compact.replace(',', ""),
        (Some(_), None) if compact.matches(',').count() == 1 => compact.replace(',', "."),
        (Some(_), None) => compact.replace(',', ""),
        _ => compact,
    };
    normalized
        .parse::<f64>()
        .ok()
        .filter(|value| value.is_finite())
}

/// A sheet's used range.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Sheet name (the file name without extension for CSV).
    pub name: String,
    /// Absolute (row, column) of `rows[0][0]`, 0-based.
    pub origin: (u32, u32),
    /// The cells, row by row; every row has the same length.
    pub rows: Vec<Vec<CellValue>>,
}

impl Grid {
    /// The cell at an absolute 0-based position, if inside the used range.
    pub fn cell(&self, row: u32, column: u32) -> Option<&CellValue> {
        let row = row.checked_sub(self.origin.0)? as usize;
        let column = column.checked_sub(self.origin.1)? as usize;
        self.rows.get(row)?.get(column)
    }

    /// How many cells the grid holds (empty ones included).
    fn area(&self) -> u64 {
        self.rows.iter().map(|row| row.len() as u64).sum()
    }

    /// The rows as tab-separated lines, trailing empty cells left out.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for row in &self.rows {
            let used = row
                .iter()
                .rposition(|cell| !cell.is_empty())
                .map_or(0, |last| last + 1);
            let line: Vec<String> = row[..used]
                .iter()
                .map(|cell| cell.display().replace(['\t', '\n', '\r'], " "))
                .collect();
            out.push_str(&line.join("\t"));
            out.push('\n');
        }
        out.trim_end().to_owned()
    }
}

/// Which reader a spreadsheet file needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpreadsheetFormat {
    /// Office Open XML workbook.
    Xlsx,
    /// Excel binary workbook.
    Xlsb,
    /// Excel 97-2003.
    Xls,
    /// OpenDocument.
    Ods,
    /// Comma (or semicolon, tab, pipe) separated values.
    Csv,
}

impl SpreadsheetFormat {
    /// The spreadsheet format of `path`, judged by its contents (CSV by its extension).
    pub fn of(source: &SourceFile) -> Result<Self, DocumentError> {
        let csv_extension = ["csv", "tsv", "txt"]
            .iter()
            .any(|extension| source.has_extension(extension));
        match DocumentKind::detect(source)? {
            DocumentKind::Spreadsheet(format) => Ok(format),
            DocumentKind::Text if csv_extension => Ok(Self::Csv),
            _ => Err(DocumentError::Unsupported(
                "this is not a spreadsheet: .xlsx, .xlsm, .xlsb, .xls, .ods and .csv files are supported".into(),
            )),
        }
    }
}

/// A workbook open for reading sheets.
pub struct Workbook {
    source: Source,
}

enum Source {
    Calamine(Box<Sheets<Input>>),
    Csv(Grid),
}

/// What calamine reads: the file itself, or (for `.xls`) a container rebuilt in memory from
/// the measured workbook stream.
enum Input {
    File(BufReader<File>),
    Memory(Cursor<Vec<u8>>),
}

impl Read for Input {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::File(file) => file.read(buffer),
            Self::Memory(memory) => memory.read(buffer),
        }
    }
}

impl Seek for Input {
    fn seek(&mut self, position: SeekFrom) -> std::io::Result<u64> {
        match self {
            Self::File(file) => file.seek(position),
            Self::Memory(memory) => memory.seek(position),
        }
    }
}

impl Workbook {
    /// Opens `file`, which has `format`.
    pub fn open(file: &SourceFile, format: SpreadsheetFormat) -> Result<Self, DocumentError> {
        let open = || {
            file.check_document_size()?;
            file.reader().map(Input::File)
        };
        let sheets = match format {
            SpreadsheetFormat::Csv => {
                return Ok(Self {
                    source: Source::Csv(read_csv(file)?),
                });
            }
            SpreadsheetFormat::Xlsx => Sheets::Xlsx(Xlsx::new(open()?).map_err(malformed)?),
            SpreadsheetFormat::Xlsb => Sheets::Xlsb(Xlsb::new(open()?).map_err(malformed)?),
            SpreadsheetFormat::Xls => {
                // calamine reads every sheet, and trusts the container, when it opens the
                // file: measure them first and give it a container rebuilt from the stream.
                file.check_document_size()?;
                let clean = super::xls_shape::clean_workbook(file.reader()?)?;
                Sheets::Xls(Xls::new(Input::Memory(Cursor::new(clean))).map_err(malformed)?)
            }
            SpreadsheetFormat::Ods => {
                // calamine expands every sheet when it opens the file: measure them first.
                super::ods_shape::check(open()?, MAX_WORKBOOK_CELLS, MAX_WORKBOOK_AREA)?;
                Sheets::Ods(Ods::new(open()?).map_err(malformed)?)
            }
        };
        Ok(Self {
            source: Source::Calamine(Box::new(sheets)),
        })
    }

    /// Sheet names in workbook order.
    pub fn sheet_names(&self) -> Vec<String> {
        match &self.source {
            Source::Calamine(sheets) => sheets.sheet_names(),
            Source::Csv(grid) => vec![grid.name.clone()],
        }
    }

    /// Reads a sheet by name (case-insensitive), or the first sheet. A CSV file has one sheet,
    /// which any name selects.
    pub fn sheet(&mut self, name: Option<&str>) -> Result<Grid, DocumentError> {
        let names = self.sheet_names();
        match &mut self.source {
            Source::Csv(grid) => Ok(grid.clone()),
            Source::Calamine(sheets) => {
                let chosen = match name.map(str::trim) {
                    None | Some("") => names.first().cloned().ok_or_else(|| {
                        DocumentError::Invalid("the workbook has no sheets".into())
                    })?,
                    Some(wanted) => names
                        .iter()
                        .find(|name| name.trim().to_lowercase() == wanted.to_lowercase())
                        .cloned()
                        .ok_or_else(|| {
                            DocumentError::Invalid(format!(
                                "sheet '{wanted}' not found; sheets: {}",
                                names.join(", ")
                            ))
                        })?,
                };
                read_sheet(sheets, &chosen)
            }
        }
    }

    /// Reads every sheet in order, stopping early if asked.
    pub fn all_sheets(&mut self, stop: &Stop) -> Result<Vec<Grid>, DocumentError> {
        match &mut self.source {
            Source::Csv(grid) => Ok(vec![grid.clone()]),
            Source::Calamine(sheets) => {
                let mut grids = Vec::new();
                let mut area = 0u64;
                for name in sheets.sheet_names() {
                    stop.check()?;
                    let grid = read_sheet(sheets, &name)?;
                    area = area.saturating_add(grid.area());
                    if area > MAX_WORKBOOK_AREA {
                        return Err(DocumentError::TooLarge(format!(
                            "the workbook's sheets span more than {MAX_WORKBOOK_AREA} cells"
                        )));
                    }
                    grids.push(grid);
                }
                Ok(grids)
            }
        }
    }
}

/// Reads one sheet. Excel's XML and binary workbooks are read cell by cell (calamine's own
/// range would be allocated densely over the used cells' bounding box first: two cells at the
/// grid's opposite corners, in a file of a few kilobytes, asked for 512 GiB and aborted the
/// process); the grid is built only when its cells and area are within bounds.
fn read_sheet(sheets: &mut Sheets<Input>, name: &str) -> Result<Grid, DocumentError> {
    let sheet_error = |error: &dyn Display| malformed(format!("sheet '{name}': {error}"));
    let mut cells = SparseCells::default();
    match sheets {
        Sheets::Xlsx(workbook) => {
            let mut reader = match workbook.worksheet_cells_reader(name) {
                Ok(reader) => reader,
                // A chart sheet has no cells.
                Err(calamine::XlsxError::NotAWorksheet(_)) => return Ok(cells.into_grid(name)),
                Err(error) => return Err(sheet_error(&error)),
            };
            while let Some(cell) = reader.next_cell().map_err(|error| sheet_error(&error))? {
                cells.push(
                    name,
                    cell.get_position(),
                    Data::from(cell.get_value().clone()),
                )?;
            }
        }
        Sheets::Xlsb(workbook) => {
            let mut reader = workbook
                .worksheet_cells_reader(name)
                .map_err(|error| sheet_error(&error))?;
            while let Some(cell) = reader.next_cell().map_err(|error| sheet_error(&error))? {
                cells.push(
                    name,
                    cell.get_position(),
                    Data::from(cell.get_value().clone()),
                )?;
            }
        }
        // `.ods` and `.xls` are read whole by calamine when the workbook opens (measured
        // first by `ods_shape` and `xls_shape`).
        other => {
            let range = other
                .worksheet_range(name)
                .map_err(|error| sheet_error(&error))?;
            for (row, column, value) in range.used_cells() {
                let (top, left) = range.start().unwrap_or((0, 0));
                let row = top.saturating_add(u32::try_from(row).unwrap_or(u32::MAX));
                let column = left.saturating_add(u32::try_from(column).unwrap_or(u32::MAX));
                cells.push(name, (row, column), value.clone())?;
            }
        }
    }
    cells.check_area(name)?;
    Ok(cells.into_grid(name))
}

/// Most non-empty cells a sheet may have.
pub(super) const MAX_SHEET_CELLS: usize = 2_000_000;
/// Most cells (empty ones included) of a sheet's used range, which a grid holds densely.
pub(super) const MAX_SHEET_AREA: u64 = 4_000_000;
/// Most cells of all of a workbook's sheets' used ranges read together.
pub(super) const MAX_WORKBOOK_AREA: u64 = 4 * MAX_SHEET_AREA;
/// Most non-empty cells of all of a workbook's sheets read together.
pub(super) const MAX_WORKBOOK_CELLS: u64 = 2 * MAX_SHEET_CELLS as u64;
/// Most bytes of text (an upper bound: three per character) of a workbook's cells, where a
/// format lets one stored string fill many cells (`.xls` shared strings).
pub(super) const MAX_WORKBOOK_TEXT_BYTES: u64 = 512 << 20;

/// A sheet's non-empty cells as read, with their bounding box.
#[derive(Default)]
struct SparseCells {
    cells: Vec<((u32, u32), Data)>,
    top_left: Option<(u32, u32)>,
    bottom_right: (u32, u32),
}

impl SparseCells {
    /// Adds a cell (empty ones are skipped); refuses the sheet past [`MAX_SHEET_CELLS`].
    fn push(&mut self, name: &str, position: (u32, u32), value: Data) -> Result<(), DocumentError> {
        if matches!(value, Data::Empty) {
            return Ok(());
        }
        if self.cells.len() >= MAX_SHEET_CELLS {
            return Err(DocumentError::TooLarge(format!(
                "sheet '{name}' has more than {MAX_SHEET_CELLS} cells"
            )));
        }
        let (row, column) = position;
        let (top, left) = self.top_left.unwrap_or(position);
        self.top_left = Some((top.min(row), left.min(column)));
        self.bottom_right = (
            self.bottom_right.0.max(row),
            self.bottom_right.1.max(column),
        );
        self.cells.push((position, value));
        Ok(())
    }

    /// Refuses a used range larger than [`MAX_SHEET_AREA`] cells.
    fn check_area(&self, name: &str) -> Result<(), DocumentError> {
        let Some((top, left)) = self.top_left else {
            return Ok(());
        };
        let height = u64::from(self.bottom_right.0 - top) + 1;
        let width = u64::from(self.bottom_right.1 - left) + 1;
        if height.saturating_mul(width) > MAX_SHEET_AREA {
            return Err(DocumentError::TooLarge(format!(
                "sheet '{name}' spans {height} rows by {width} columns (more than \
                 {MAX_SHEET_AREA} cells)"
            )));
        }
        Ok(())
    }

    /// The dense grid (call [`Self::check_area`] first).
    fn into_grid(self, name: &str) -> Grid {
        let origin = self.top_left.unwrap_or((0, 0));
        let (height, width) = match self.top_left {
            Some((top, left)) => (
                (self.bottom_right.0 - top) as usize + 1,
                (self.bottom_right.1 - left) as usize + 1,
            ),
            None => (0, 0),
        };
        let mut rows = vec![vec![CellValue::Empty; width]; height];
        for ((row, column), value) in self.cells {
            let (row, column) = ((row - origin.0) as usize, (column - origin.1) as usize);
            if let Some(cell) = rows.get_mut(row).and_then(|cells| cells.get_mut(column)) {
                *cell = CellValue::from_calamine(&value);
            }
        }
        Grid {
            name: name.to_owned(),
            origin,
            rows,
        }
    }
}

/// Reads a CSV or TSV file into one grid.
pub fn read_csv(file: &SourceFile) -> Result<Grid, DocumentError> {
    let bytes = file.bytes(CSV_BYTE_LIMIT)?;
    let text = decode(&bytes, true)
        .map_err(|_| DocumentError::Unsupported("the file is binary, not CSV text".into()))?
        .text;
    let tab_separated = file.has_extension("tsv");
    let name = file
        .path()
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "Sheet1".into());
    parse_csv(&text, name, tab_separated.then_some(b'\t'))
}

/// Parses CSV text into a grid; `delimiter` is sniffed from the first line when not given.
pub fn parse_csv(text: &str, name: String, delimiter: Option<u8>) -> Result<Grid, DocumentError> {
    let delimiter = delimiter.unwrap_or_else(|| sniff_delimiter(text));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(text.as_bytes());
    let mut rows: Vec<Vec<CellValue>> = Vec::new();
    for record in reader.records() {
        let record =
            record.map_err(|error| DocumentError::Malformed("CSV".into(), error.to_string()))?;
        if record.iter().all(|field| field.trim().is_empty()) {
            continue;
        }
        rows.push(
            record
                .iter()
                .map(|field| {
                    let field = field.trim();
                    if field.is_empty() {
                        CellValue::Empty
                    } else {
                        CellValue::Text(field.to_owned())
                    }
                })
                .collect(),
        );
    }
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    for row in &mut rows {
        row.resize(width, CellValue::Empty);
    }
    Ok(Grid {
        name,
        origin: (0, 0),
        rows,
    })
}

/// The delimiter used most on the first non-empty line (outside quotes), `,` by default.
fn sniff_delimiter(text: &str) -> u8 {
    let Some(line) = text.lines().find(|line| !line.trim().is_empty()) else {
        return b',';
    };
    let mut counts = [(b',', 0usize), (b';', 0), (b'\t', 0), (b'|', 0)];
    let mut quoted = false;
    for byte in line.bytes() {
        if byte == b'"' {
            quoted = !quoted;
        } else if !quoted {
            for (delimiter, count) in &mut counts {
                if byte == *delimiter {
                    *count += 1;
                }
            }
        }
    }
    // Ties keep the earlier (more common) delimiter.
    let mut best = counts[0];
    for candidate in &counts[1..] {
        if candidate.1 > best.1 {
            best = *candidate;
        }
    }
    best.0
}

fn malformed(error: impl Display) -> DocumentError {
    DocumentError::Malformed("spreadsheet".into(), error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numbers_people_write() {
        let cases = [
            ("42", Some(42.0)),
            (" -3.5 ", Some(-3.5)),
            ("3,5", Some(3.5)),
            ("1 234,5", Some(1234.5)),
            ("1\u{00A0}234", Some(1234.0)),
            ("1.234,5", Some(1234.5)),
            ("1,234.5", Some(1234.5)),
            ("1,234,567", Some(1_234_567.0)),
            ("2e3", Some(2000.0)),
            ("abc", None),
            ("inf", None),
            ("NaN", None),
            ("", None),
            ("-", None),
            ("12 apples", None),
            ("2024-01-31", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_number(text), expected, "{text}");
        }
    }

    #[test]
    fn sniffs_delimiters() {
        assert_eq!(sniff_delimiter("a,b,c\n1,2,3"), b',');
        assert_eq!(sniff_delimiter("Имя;Сумма\nА;1,5"), b';');
        assert_eq!(sniff_delimiter("a\tb\n"), b'\t');
        assert_eq!(sniff_delimiter("\"x;y\",b\n"), b',');
        assert_eq!(sniff_delimiter("single"), b',');
    }

    #[test]
    fn csv_grids_are_rectangular_and_skip_blank_lines() {
        let grid = parse_csv("a;b;c\n1;2\n\n;;\n3;4;5\n", "t".into(), None).unwrap();
        assert_eq!(grid.rows.len(), 3);
        assert!(grid.rows.iter().all(|row| row.len() == 3));
        assert_eq!(grid.rows[1][2], CellValue::Empty);
        assert_eq!(grid.cell(2, 2), Some(&CellValue::Text("5".into())));
        assert_eq!(grid.render(), "a\tb\tc\n1\t2\n3\t4\t5");
    }

    #[test]
    fn durations_render_as_hours() {
        assert_eq!(render_duration(1.5), "36:00:00");
        assert_eq!(render_duration(-0.25), "-6:00:00");
    }
}
