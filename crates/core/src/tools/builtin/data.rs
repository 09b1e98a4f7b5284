//! Built-in data tools (category DATA_ANALYTICS): `ExcelRead` (read-only queries over a
//! sheet), `ExcelReport` (writes a new `.xlsx`) and `CreatePlot` (a PNG chart from CSV or Excel).
//!
//! Spreadsheets are read by [`super::documents::spreadsheet`]; this module adds the [`Table`]
//! view the tools share: the first row of a sheet's used range is the header, column names are
//! matched without regard to case or surrounding spaces (a bare column letter like `C` works
//! too), and every error about a column lists the columns that exist.
//!
//! The writers never replace an existing file: `ExcelReport` refuses (as the original did), and
//! `CreatePlot` refuses an explicit output path that exists but picks a free numbered name
//! (`plot-2.png`) for its default path, so repeated charts do not fail.

pub(crate) mod excel_read;
pub(crate) mod excel_report;
pub(crate) mod plot;

use std::path::Path;

use super::documents::DocumentError;
use super::documents::spreadsheet::{CellValue, Grid};
use crate::sandbox::{Access, ResolvedPath, Sandbox};
use crate::tools::{CatalogBuilder, CatalogError, ToolContext, ToolError};

/// Registers this module's tools.
pub(crate) fn register(builder: &mut CatalogBuilder) -> Result<(), CatalogError> {
    builder.add(excel_read::ExcelRead)?;
    builder.add(excel_report::ExcelReport)?;
    builder.add(plot::CreatePlot::default())?;
    Ok(())
}

/// A sheet seen as a table: a header row and data rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    /// The sheet's name.
    pub sheet: String,
    /// Column names; a blank header cell is named by its column letter (`C`).
    pub headers: Vec<String>,
    /// Data rows (each as long as `headers`).
    pub rows: Vec<Vec<CellValue>>,
    /// Absolute 0-based column of the first column, so letters (`C`) name columns too.
    pub first_column: u32,
}

impl Table {
    /// The table of a grid whose first row is the header.
    pub(crate) fn from_grid(grid: Grid) -> Self {
        let mut rows = grid.rows.into_iter();
        let headers: Vec<String> = rows
            .next()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(index, cell)| {
                let name = cell.display().trim().to_owned();
                if name.is_empty() {
                    column_letters(grid.origin.1 + u32::try_from(index).unwrap_or(u32::MAX))
                } else {
                    name
                }
            })
            .collect();
        Self {
            sheet: grid.name,
            headers,
            rows: rows.collect(),
            first_column: grid.origin.1,
        }
    }

    /// The index of the column called `name` (any case; or its letter, like `B`).
    pub(crate) fn column(&self, name: &str) -> Result<usize, DocumentError> {
        let wanted = name.trim().to_lowercase();
        if let Some(index) = self
            .headers
            .iter()
            .position(|header| header.to_lowercase() == wanted)
        {
            return Ok(index);
        }
        let is_letters = !wanted.is_empty()
            && wanted.len() <= 3
            && wanted
                .chars()
                .all(|character| character.is_ascii_alphabetic());
        if is_letters
            && let Ok((_, column)) = parse_cell_reference(&format!("{wanted}1"))
            && let Some(index) = column.checked_sub(self.first_column)
            && (index as usize) < self.headers.len()
        {
            return Ok(index as usize);
        }
        Err(DocumentError::Invalid(format!(
            "column '{}' not found; columns: {}",
            name.trim(),
            self.headers.join(", ")
        )))
    }
}

/// `A`, `B`, ..., `Z`, `AA`, ... for a 0-based column index.
pub(crate) fn column_letters(index: u32) -> String {
    let mut number = u64::from(index) + 1;
    let mut letters = Vec::new();
    while number > 0 {
        let remainder = ((number - 1) % 26) as u8;
        letters.push(char::from(b'A' + remainder));
        number = (number - 1) / 26;
    }
    letters.iter().rev().collect()
}

/// Parses an A1-style reference (`B5`, `$B$5`, `aa10`) into a 0-based (row, column).
pub(crate) fn parse_cell_reference(reference: &str) -> Result<(u32, u32), DocumentError> {
    let invalid = || {
        DocumentError::Invalid(format!(
            "invalid cell reference '{reference}': use a cell like B5 or a range like A1:C10"
        ))
    };
    let cleaned: String = reference
        .trim()
        .chars()
        .filter(|character| *character != '$')
        .collect();
    let split = cleaned
        .find(|character: char| character.is_ascii_digit())
        .ok_or_else(invalid)?;
    let (letters, digits) = cleaned.split_at(split);
    if letters.is_empty()
        || letters.len() > 3
        || !letters
            .chars()
            .all(|character| character.is_ascii_alphabetic())
        || !digits.chars().all(|character| character.is_ascii_digit())
    {
        return Err(invalid());
    }
    let column = letters
        .to_ascii_uppercase()
        .bytes()
        .fold(0u32, |total, letter| {
            total * 26 + u32::from(letter - b'A' + 1)
        })
        - 1;
    let row: u32 = digits.parse().map_err(|_| invalid())?;
    if row == 0 || row > 1_048_576 || column >= 16_384 {
        return Err(invalid());
    }
    Ok((row - 1, column))
}

/// Resolves `raw` for writing a new file with extension `extension` (lower case, no dot).
/// Refuses folders, other extensions and existing files.
pub(crate) fn resolve_new_file(
    ctx: &ToolContext,
    raw: &str,
    extension: &str,
    tool_hint: &str,
) -> Result<ResolvedPath, ToolError> {
    let resolved = ctx.sandbox.resolve(raw, Access::Write)?;
    check_extension(&resolved.path, extension)?;
    if resolved.exists {
        return Err(ToolError::Failed(format!(
            "{} already exists; {tool_hint}",
            ctx.sandbox.display(&resolved.path)
        )));
    }
    Ok(resolved)
}

/// Refuses a path whose extension is not `extension` (the format the tool writes).
pub(crate) fn check_extension(path: &Path, extension: &str) -> Result<(), ToolError> {
    let matches = path
        .extension()
        .and_then(|found| found.to_str())
        .is_some_and(|found| found.eq_ignore_ascii_case(extension));
    if matches {
        Ok(())
    } else {
        Err(ToolError::InvalidArguments(format!(
            "the file name must end in .{extension}, the format this tool writes"
        )))
    }
}

/// Writes `bytes` to a file that must not exist yet, creating missing parent folders. The
/// existence check and the creation are one step (`create_new`), so a file that appeared since
/// planning is not overwritten; folders and the file are created beneath the root and never
/// through a symlink ([`crate::sandbox::beneath`]), so a folder swapped for a link meanwhile
/// fails the write instead of leading it outside the roots.
pub(crate) fn write_new_file(
    sandbox: &Sandbox,
    path: &Path,
    bytes: &[u8],
) -> Result<(), ToolError> {
    use std::io::Write;
    let beneath = sandbox.beneath();
    if let Some(parent) = path.parent() {
        beneath.create_dir_all(parent).map_err(|error| {
            ToolError::Failed(format!(
                "cannot create the folder {}: {error}",
                parent.display()
            ))
        })?;
    }
    let mut file = beneath
        .create_new(path, 0o666)
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => ToolError::Conflict(format!(
                "{} was created by something else meanwhile; nothing was written",
                path.display()
            )),
            _ => ToolError::Failed(format!("cannot create {}: {error}", path.display())),
        })?;
    if let Err(error) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        // Leave no half-written file behind.
        drop(file);
        let _ = beneath.remove_file(path);
        return Err(ToolError::Failed(format!(
            "cannot write {}: {error}",
            path.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_letters_round_trip() {
        for (index, letters) in [
            (0, "A"),
            (1, "B"),
            (25, "Z"),
            (26, "AA"),
            (27, "AB"),
            (701, "ZZ"),
            (702, "AAA"),
            (16_383, "XFD"),
        ] {
            assert_eq!(column_letters(index), letters);
            assert_eq!(
                parse_cell_reference(&format!("{letters}7")).unwrap(),
                (6, index)
            );
        }
    }

    #[test]
    fn parses_cell_references() {
        assert_eq!(parse_cell_reference("B5").unwrap(), (4, 1));
        assert_eq!(parse_cell_reference(" $c$10 ").unwrap(), (9, 2));
        for bad in [
            "", "5", "B", "B0", "5B", "B5X", "ABCD1", "XFE1", "A1048577", "B-1", "Б5",
        ] {
            let error = parse_cell_reference(bad).unwrap_err().to_string();
            assert!(
                error.starts_with("invalid cell reference"),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn tables_name_blank_headers_by_letter_and_match_columns_loosely() {
        let grid = Grid {
            name: "S".into(),
            origin: (3, 1),
            rows: vec![
                vec![CellValue::Text(" Revenue ".into()), CellValue::Empty],
                vec![CellValue::Number(1.0), CellValue::Text("x".into())],
            ],
        };
        let table = Table::from_grid(grid);
        assert_eq!(table.headers, vec!["Revenue", "C"]);
        assert_eq!(table.rows.len(), 1);
        assert_eq!(table.column("revenue").unwrap(), 0);
        assert_eq!(table.column(" c ").unwrap(), 1);
        // A letter names its column even when the column has a header.
        assert_eq!(table.column("B").unwrap(), 0);
        assert!(table.column("D").is_err());
        assert!(table.column("A").is_err());
        assert_eq!(
            table.column("Cost").unwrap_err().to_string(),
            "column 'Cost' not found; columns: Revenue, C"
        );
    }
}
