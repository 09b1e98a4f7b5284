//! `ExcelReport`: writes a new `.xlsx` workbook (rust_xlsxwriter) from a header line and CSV
//! rows.
//!
//! Cells are typed the way a person would expect when opening the file: plain decimal numbers
//! become numbers (but not `007` or `+7 999...`, which are identifiers and stay text),
//! `true`/`false` become booleans, ISO dates (`2024-01-31`, `2024-01-31 09:30`) become dates,
//! a cell starting with `=` becomes a formula, everything else is text. The header row is bold
//! and frozen, and columns are fitted to their contents.
//!
//! Invariant: an existing file is never replaced (as the original): planning refuses it, and
//! the write itself uses `create_new`.

use std::path::PathBuf;

use rust_xlsxwriter::{ExcelDateTime, Format, Formula, Workbook, Worksheet, XlsxError};
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{Risk, ToolCategory};

use super::{resolve_new_file, write_new_file};
use crate::sandbox::Access;
use crate::tools::{
    Language, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, localized, words,
};

/// A row of data in a plan's summary.
const DATA_ROW: words::Noun = words::Noun {
    en: ["data row", "data rows"],
    ru: ["строка данных", "строки данных", "строк данных"],
};
/// A column in a plan's summary.
const COLUMN: words::Noun = words::Noun {
    en: ["column", "columns"],
    ru: ["столбец", "столбца", "столбцов"],
};

/// Default sheet name (as the original).
const DEFAULT_SHEET: &str = "Report";
/// Largest number of cells written.
const MAX_CELLS: usize = 1_000_000;

/// Arguments of `ExcelReport`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ExcelReportArgs {
    /// Path of the new file; must end in .xlsx and must not exist yet. `~` is the home folder.
    pub path: String,
    /// Column names for the first row, comma-separated, e.g. `Name, Age, City`.
    pub headers: Option<String>,
    /// The rows in CSV form: one row per line, cells separated by commas (quote cells that
    /// contain commas), e.g. "John,25\nJane,30".
    pub csv_data: Option<String>,
    /// Name of the sheet. Default: Report.
    pub sheet_name: Option<String>,
}

/// What planning prepared for writing.
#[derive(Debug)]
pub(crate) struct Report {
    path: PathBuf,
    sheet: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

/// `ExcelReport`: creates a new Excel file.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ExcelReport;

impl Tool for ExcelReport {
    type Args = ExcelReportArgs;
    type Prepared = Report;

    fn name(&self) -> &'static str {
        "ExcelReport"
    }

    fn description(&self) -> &'static str {
        "Creates a NEW Excel (.xlsx) file with a header row and data.\n\
         - headers: comma-separated, e.g. 'Name, Age, City'\n\
         - csvData: rows in CSV form, e.g. \"John,25\\nJane,30\"\n\
         Numbers, true/false, ISO dates (2024-01-31) and =formulas get their Excel types. \
         The file must not exist. For reading use ExcelRead."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::DataAnalytics
    }

    fn risk(&self) -> Risk {
        Risk::Write
    }

    async fn plan(
        &self,
        args: &ExcelReportArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<Report>, ToolError> {
        let sheet = args
            .sheet_name
            .as_deref()
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .unwrap_or(DEFAULT_SHEET)
            .to_owned();
        // rust_xlsxwriter knows Excel's sheet-name rules; ask it instead of copying them.
        Worksheet::new()
            .set_name(&sheet)
            .map_err(|error| ToolError::InvalidArguments(format!("sheetName: {error}")))?;
        let headers = match args
            .headers
            .as_deref()
            .filter(|headers| !headers.trim().is_empty())
        {
            Some(headers) => parse_csv(headers, "headers")?
                .into_iter()
                .next()
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let rows = match args
            .csv_data
            .as_deref()
            .filter(|data| !data.trim().is_empty())
        {
            Some(data) => parse_csv(data, "csvData")?,
            None => Vec::new(),
        };
        if headers.is_empty() && rows.is_empty() {
            return Err(ToolError::InvalidArguments(
                "nothing to write: give headers and/or csvData".into(),
            ));
        }
        let cells = headers.len() + rows.iter().map(Vec::len).sum::<usize>();
        if cells > MAX_CELLS {
            return Err(ToolError::InvalidArguments(format!(
                "{cells} cells is more than the {MAX_CELLS} this tool writes"
            )));
        }
        let resolved = resolve_new_file(
            ctx,
            &args.path,
            "xlsx",
            "use ExcelRead to read it, or choose a new name",
        )?;
        let columns = headers
            .len()
            .max(rows.iter().map(Vec::len).max().unwrap_or(0));
        let language = ctx.language;
        let header = match (headers.is_empty(), language) {
            (true, _) => "",
            (false, Language::En) => "a header row and ",
            (false, Language::Ru) => "строка заголовков и ",
        };
        let summary = localized!(
            language,
            "Create spreadsheet {} (sheet '{sheet}', {header}{}, {})",
            "Создать таблицу {} (лист '{sheet}', {header}{}, {})",
            ctx.sandbox.display(&resolved.path),
            DATA_ROW.count(rows.len() as u64, language),
            COLUMN.count(columns as u64, language),
        );
        let report = Report {
            path: resolved.path.clone(),
            sheet,
            headers,
            rows,
        };
        Ok(Plan::new(summary)
            .path(&resolved, Access::Write)
            .with(report))
    }

    async fn run(
        &self,
        _args: ExcelReportArgs,
        report: Report,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let bytes =
            tokio::task::spawn_blocking(move || build(&report).map(|bytes| (bytes, report)))
                .await
                .map_err(|error| ToolError::Internal(format!("report writer: {error}")))?;
        let (bytes, report) = bytes?;
        write_new_file(&ctx.sandbox, &report.path, &bytes)?;
        Ok(ToolOutput::text(format!(
            "Created report {} (sheet '{}', {} data rows)",
            report.path.display(),
            report.sheet,
            report.rows.len()
        )))
    }
}

/// Parses CSV (trimmed cells, blank lines skipped, ragged rows allowed).
fn parse_csv(text: &str, field: &str) -> Result<Vec<Vec<String>>, ToolError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|error| {
            ToolError::InvalidArguments(format!("{field} is not valid CSV: {error}"))
        })?;
        if record.iter().all(str::is_empty) {
            continue;
        }
        rows.push(record.iter().map(str::to_owned).collect());
    }
    Ok(rows)
}

/// A cell's value typed for Excel.
#[derive(Debug, Clone, PartialEq)]
enum Typed<'a> {
    Number(f64),
    Bool(bool),
    /// Excel serial date, and whether it has a time of day.
    Date(f64, bool),
    Formula(&'a str),
    Text(&'a str),
}

fn typed(value: &str) -> Typed<'_> {
    if value.len() > 1 && value.starts_with('=') {
        return Typed::Formula(value);
    }
    if value.eq_ignore_ascii_case("true") {
        return Typed::Bool(true);
    }
    if value.eq_ignore_ascii_case("false") {
        return Typed::Bool(false);
    }
    if is_plain_number(value)
        && let Ok(number) = value.parse::<f64>()
        && number.is_finite()
    {
        return Typed::Number(number);
    }
    let bytes = value.as_bytes();
    let iso_date = bytes.len() >= 10
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[4] == b'-'
        && bytes[5..7].iter().all(u8::is_ascii_digit)
        && bytes[7] == b'-'
        && bytes[8..10].iter().all(u8::is_ascii_digit);
    if iso_date && let Ok(date) = ExcelDateTime::parse_from_str(value) {
        return Typed::Date(date.to_excel(), bytes.len() > 10);
    }
    Typed::Text(value)
}

/// `-12`, `3.5`, `0.25`, `1e6`; not `007`, `+7`, `1.`, `.5` or thousands separators, which are
/// more often identifiers or text than numbers.
fn is_plain_number(value: &str) -> bool {
    let unsigned = value.strip_prefix('-').unwrap_or(value);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(index) => (&unsigned[..index], Some(&unsigned[index + 1..])),
        None => (unsigned, None),
    };
    let (integer, fraction) = match mantissa.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (mantissa, None),
    };
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
    let integer_ok = digits(integer) && (integer == "0" || !integer.starts_with('0'));
    let fraction_ok = fraction.is_none_or(digits);
    let exponent_ok = exponent
        .is_none_or(|exponent| digits(exponent.strip_prefix(['+', '-']).unwrap_or(exponent)));
    integer_ok && fraction_ok && exponent_ok
}

fn build(report: &Report) -> Result<Vec<u8>, ToolError> {
    let failed =
        |error: XlsxError| ToolError::Failed(format!("cannot build the workbook: {error}"));
    let mut workbook = Workbook::new();
    let bold = Format::new().set_bold();
    let date = Format::new().set_num_format("yyyy-mm-dd");
    let date_time = Format::new().set_num_format("yyyy-mm-dd hh:mm:ss");
    let sheet = workbook.add_worksheet();
    sheet.set_name(&report.sheet).map_err(failed)?;
    let mut row_number: u32 = 0;
    if !report.headers.is_empty() {
        for (column, header) in report.headers.iter().enumerate() {
            sheet
                .write_string_with_format(0, column_number(column)?, header, &bold)
                .map_err(failed)?;
        }
        sheet.set_freeze_panes(1, 0).map_err(failed)?;
        row_number = 1;
    }
    for row in &report.rows {
        for (column, value) in row.iter().enumerate() {
            let column = column_number(column)?;
            match typed(value) {
                Typed::Number(number) => sheet.write_number(row_number, column, number).map(|_| ()),
                Typed::Bool(flag) => sheet.write_boolean(row_number, column, flag).map(|_| ()),
                Typed::Date(serial, has_time) => sheet
                    .write_number_with_format(
                        row_number,
                        column,
                        serial,
                        if has_time { &date_time } else { &date },
                    )
                    .map(|_| ()),
                Typed::Formula(formula) => sheet
                    .write_formula(row_number, column, Formula::new(formula))
                    .map(|_| ()),
                Typed::Text(text) => sheet.write_string(row_number, column, text).map(|_| ()),
            }
            .map_err(failed)?;
        }
        row_number = row_number
            .checked_add(1)
            .ok_or_else(|| ToolError::InvalidArguments("too many rows".into()))?;
    }
    sheet.autofit();
    workbook.save_to_buffer().map_err(failed)
}

fn column_number(index: usize) -> Result<u16, ToolError> {
    u16::try_from(index)
        .ok()
        .filter(|column| *column < 16_384)
        .ok_or_else(|| {
            ToolError::InvalidArguments("a row has more than 16384 cells, Excel's limit".into())
        })
}

#[cfg(test)]
mod tests {
    use calamine::{Data, Reader, Xlsx};
    use serde_json::json;

    use super::*;
    use crate::approvals::CallTarget;
    use crate::tools::builtin::data::register;
    use crate::tools::builtin::documents::fixtures::TestHome;

    #[tokio::test]
    async fn writes_a_typed_workbook() {
        let home = TestHome::new(register);
        let spec = home.catalog.get("ExcelReport").unwrap().spec();
        assert_eq!(spec.risk, Risk::Write);
        assert_eq!(spec.category, ToolCategory::DataAnalytics);

        let arguments = json!({
            "path": "~/reports/q1.xlsx",
            "headers": "Name, Amount, Paid, Date, Code, Total",
            "csvData": "Anna,1200.5,true,2024-01-31,007,=B2*2\n\n\"Smith, John\",-3,FALSE,2024-02-01 09:30:00,+7 999,=B3*2\n",
            "sheetName": "Продажи",
        });
        let planned = home.plan("ExcelReport", arguments).await.unwrap();
        let path = home.root.join("reports/q1.xlsx");
        assert_eq!(
            planned.plan.summary,
            "Create spreadsheet ~/reports/q1.xlsx (sheet 'Продажи', a header row and 2 data rows, 6 columns)"
        );
        assert_eq!(
            planned.plan.targets,
            vec![CallTarget::Path {
                path: path.clone(),
                access: Access::Write,
                protected: false
            }]
        );
        let output = planned.run(home.ctx.clone()).await.unwrap();
        assert_eq!(
            output.text,
            format!(
                "Created report {} (sheet 'Продажи', 2 data rows)",
                path.display()
            )
        );

        let mut workbook: Xlsx<_> = calamine::open_workbook(&path).unwrap();
        assert_eq!(workbook.sheet_names(), vec!["Продажи"]);
        let range = workbook.worksheet_range("Продажи").unwrap();
        let rows: Vec<Vec<Data>> = range.rows().map(<[Data]>::to_vec).collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0][0], Data::String("Name".into()));
        assert_eq!(rows[0][5], Data::String("Total".into()));
        assert_eq!(rows[1][0], Data::String("Anna".into()));
        assert_eq!(rows[1][1], Data::Float(1200.5));
        assert_eq!(rows[1][2], Data::Bool(true));
        let Data::DateTime(date) = &rows[1][3] else {
            panic!("a date, not {:?}", rows[1][3])
        };
        assert_eq!(date.to_ymd_hms_milli(), (2024, 1, 31, 0, 0, 0, 0));
        assert_eq!(rows[1][4], Data::String("007".into()));
        assert_eq!(rows[2][0], Data::String("Smith, John".into()));
        assert_eq!(rows[2][1], Data::Float(-3.0));
        assert_eq!(rows[2][2], Data::Bool(false));
        let Data::DateTime(date_time) = &rows[2][3] else {
            panic!("a date-time, not {:?}", rows[2][3])
        };
        assert_eq!(date_time.to_ymd_hms_milli(), (2024, 2, 1, 9, 30, 0, 0));
        assert_eq!(rows[2][4], Data::String("+7 999".into()));
        let formulas = workbook.worksheet_formula("Продажи").unwrap();
        assert_eq!(formulas.get_value((1, 5)), Some(&"B2*2".to_owned()));
    }

    #[tokio::test]
    async fn refuses_to_replace_files_and_bad_arguments() {
        let home = TestHome::new(register);
        let existing = home.write("old.xlsx", b"keep me");
        let error = home
            .call("ExcelReport", json!({"path": "~/old.xlsx", "headers": "A"}))
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "~/old.xlsx already exists; use ExcelRead to read it, or choose a new name"
        );
        assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");

        let invalid = [
            (
                json!({"path": "~/r.csv", "headers": "A"}),
                "must end in .xlsx",
            ),
            (json!({"path": "~/r.xlsx"}), "nothing to write"),
            (
                json!({"path": "~/r.xlsx", "headers": "  ", "csvData": "\n"}),
                "nothing to write",
            ),
            (
                json!({"path": "~/r.xlsx", "headers": "A", "sheetName": "a/b"}),
                "sheetName",
            ),
            (
                json!({"path": "~/r.xlsx", "headers": "A", "sheetName": "x".repeat(40)}),
                "sheetName",
            ),
            (
                json!({"path": "~/r.xlsx", "headers": "A", "extra": 1}),
                "unknown field",
            ),
        ];
        for (arguments, expected) in invalid {
            let error = home
                .call("ExcelReport", arguments.clone())
                .await
                .unwrap_err();
            assert!(
                matches!(error, ToolError::InvalidArguments(_)),
                "{arguments}: {error:?}"
            );
            assert!(error.to_string().contains(expected), "{arguments}: {error}");
        }
        assert!(!home.root.join("r.xlsx").exists());

        let outside = home
            .call(
                "ExcelReport",
                json!({"path": "/tmp/../etc/r.xlsx", "headers": "A"}),
            )
            .await
            .unwrap_err();
        assert!(matches!(outside, ToolError::Sandbox(_)), "{outside:?}");
    }

    #[tokio::test]
    async fn a_file_that_appears_after_planning_is_not_overwritten() {
        let home = TestHome::new(register);
        let planned = home
            .plan(
                "ExcelReport",
                json!({"path": "~/race.xlsx", "headers": "A", "csvData": "1"}),
            )
            .await
            .unwrap();
        let path = home.write("race.xlsx", b"someone else's");
        let error = planned.run(home.ctx.clone()).await.unwrap_err();
        assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");
        assert_eq!(std::fs::read(&path).unwrap(), b"someone else's");
    }

    #[test]
    fn types_cells_like_a_person_would() {
        assert_eq!(typed("42"), Typed::Number(42.0));
        assert_eq!(typed("-3.25"), Typed::Number(-3.25));
        assert_eq!(typed("0.5"), Typed::Number(0.5));
        assert_eq!(typed("1e3"), Typed::Number(1000.0));
        assert_eq!(typed("TRUE"), Typed::Bool(true));
        assert_eq!(typed("false"), Typed::Bool(false));
        assert_eq!(typed("=SUM(B2:B3)"), Typed::Formula("=SUM(B2:B3)"));
        assert!(matches!(typed("2024-01-31"), Typed::Date(_, false)));
        assert!(matches!(typed("2024-01-31 09:30:00"), Typed::Date(_, true)));
        for text in [
            "007",
            "+7 999 123-45-67",
            "1,5",
            ".5",
            "1.",
            "inf",
            "NaN",
            "12abc",
            "=",
            "2024-13-45",
            "Москва",
        ] {
            assert_eq!(typed(text), Typed::Text(text), "{text}");
        }
    }
}
