//! `ExcelRead`: read-only questions about one sheet of a spreadsheet (or a CSV file).
//!
//! Operations, as in the original:
//! - STRUCTURE: columns, row count, sum/avg/min/max of numeric columns, samples of text columns.
//! - QUERY: filter (`Col=V`, `>`, `<`, `>=`, `<=`, `<>`), then either aggregate (SUM, COUNT,
//!   AVG, MIN, MAX, optionally per `groupBy` value) or, with neither `aggregation` nor
//!   `groupBy`, list the matching rows; sorted, at most `limit` (10) lines.
//! - CELL: one cell (`B5`) or a range (`A1:C10`), as in Excel's addressing.
//! - LOOKUP: VLOOKUP-style: the first row whose `lookupColumn` equals `lookupValue`, then its
//!   `returnColumn`.
//!
//! Comparisons are numeric when both sides read as numbers (`1 234,5` included) and
//! case-insensitive text otherwise. SUM/AVG/MIN/MAX use the cells that hold numbers; COUNT
//! counts rows (with `column`, rows where that column is not empty).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use souz_protocol::{Risk, ToolCategory};

use super::{Table, parse_cell_reference};
use crate::sandbox::Access;
use crate::tools::builtin::calculator::format_number;
use crate::tools::builtin::documents::DocumentError;
use crate::tools::builtin::documents::spreadsheet::{
    CellValue, Grid, SpreadsheetFormat, Workbook, parse_number,
};
use crate::tools::builtin::documents::text::TEXT_CHAR_LIMIT;
use crate::tools::builtin::documents::{open_planned, resolve_readable_file};
use crate::tools::builtin::worker::{PARSE_TIME_LIMIT, run_blocking};
use crate::tools::{Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, localized};

/// Default number of result lines of QUERY (as the original).
const DEFAULT_LIMIT: u32 = 10;
/// Most result lines a QUERY may ask for.
const MAX_LIMIT: u32 = 1_000;
/// Most cells a CELL range may return.
const MAX_RANGE_CELLS: u64 = 10_000;
/// Text samples per column in STRUCTURE.
const SAMPLES_PER_COLUMN: usize = 5;

/// What `ExcelRead` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum ReadOperation {
    /// Columns, row count and statistics.
    #[serde(alias = "structure", alias = "Structure")]
    Structure,
    /// Filter, aggregate, group, sort.
    #[serde(alias = "query", alias = "Query")]
    Query,
    /// A cell or range.
    #[serde(alias = "cell", alias = "Cell")]
    Cell,
    /// Find a value in one column, return another.
    #[serde(alias = "lookup", alias = "Lookup")]
    Lookup,
}

impl ReadOperation {
    /// The name as written in calls.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Structure => "STRUCTURE",
            Self::Query => "QUERY",
            Self::Cell => "CELL",
            Self::Lookup => "LOOKUP",
        }
    }
}

/// How QUERY combines values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum Aggregation {
    /// Total.
    #[serde(alias = "sum", alias = "Sum")]
    Sum,
    /// Number of rows.
    #[serde(alias = "count", alias = "Count")]
    Count,
    /// Mean.
    #[serde(alias = "avg", alias = "Avg", alias = "AVERAGE", alias = "average")]
    Avg,
    /// Smallest.
    #[serde(alias = "min", alias = "Min")]
    Min,
    /// Largest.
    #[serde(alias = "max", alias = "Max")]
    Max,
}

impl Aggregation {
    /// The name as written in calls.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Sum => "SUM",
            Self::Count => "COUNT",
            Self::Avg => "AVG",
            Self::Min => "MIN",
            Self::Max => "MAX",
        }
    }
}

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum SortOrder {
    /// Smallest first.
    #[serde(alias = "asc", alias = "Asc")]
    Asc,
    /// Largest first.
    #[serde(alias = "desc", alias = "Desc")]
    Desc,
}

/// A value given as text or as a number.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum TextOrNumber {
    /// Text.
    Text(String),
    /// A number.
    Number(serde_json::Number),
}

impl TextOrNumber {
    fn as_text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Number(number) => number.to_string(),
        }
    }
}

/// Arguments of `ExcelRead`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ExcelReadArgs {
    /// Path to the spreadsheet: .xlsx, .xlsm, .xlsb, .xls, .ods or .csv. `~` is the home folder.
    pub path: String,
    /// STRUCTURE (use first to learn the columns), QUERY, CELL or LOOKUP.
    pub operation: ReadOperation,
    /// Sheet name. Default: the first sheet. A CSV file has a single sheet.
    pub sheet: Option<String>,
    /// For CELL: a cell like `B5` or a range like `A1:C10`.
    pub range: Option<String>,
    /// For QUERY: the column to aggregate (or, when listing rows, the only column to show).
    pub column: Option<String>,
    /// For QUERY: SUM, COUNT, AVG, MIN or MAX. Default COUNT when `groupBy` is given; without
    /// both `aggregation` and `groupBy`, QUERY lists the matching rows instead.
    pub aggregation: Option<Aggregation>,
    /// For QUERY: the column whose values form the groups.
    pub group_by: Option<String>,
    /// For QUERY: a condition `Column=Value`, or with `>`, `<`, `>=`, `<=`, `<>` (e.g.
    /// `Amount>1000`, `City=Москва`).
    pub filter: Option<String>,
    /// For QUERY: the most result lines to return. Default 10.
    pub limit: Option<u32>,
    /// For QUERY: sort by this column (the `groupBy` column sorts groups by name; the aggregated
    /// column sorts by the aggregate). Default: by the aggregate, largest first.
    pub sort_by: Option<String>,
    /// ASC or DESC. Default: DESC for aggregates, ASC when listing rows.
    pub sort_order: Option<SortOrder>,
    /// For LOOKUP: the value to find.
    pub lookup_value: Option<TextOrNumber>,
    /// For LOOKUP: the column to search.
    pub lookup_column: Option<String>,
    /// For LOOKUP: the column whose value to return.
    pub return_column: Option<String>,
}

/// `ExcelRead`: read-only queries over a sheet.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ExcelRead;

impl Tool for ExcelRead {
    type Args = ExcelReadArgs;
    type Prepared = PathBuf;

    fn name(&self) -> &'static str {
        "ExcelRead"
    }

    fn description(&self) -> &'static str {
        "READ and query data in Excel, OpenDocument or CSV files. READ ONLY.\n\
         - STRUCTURE: columns, row count, numeric stats, text samples (use it first)\n\
         - QUERY: filter, then SUM/COUNT/AVG/MIN/MAX, optionally grouped by a column, sorted \
         and limited; without aggregation and groupBy it lists the matching rows\n\
         - CELL: a cell (B5) or a range (A1:C10)\n\
         - LOOKUP: VLOOKUP-style: find lookupValue in lookupColumn, return returnColumn"
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::DataAnalytics
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    async fn plan(
        &self,
        args: &ExcelReadArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<PathBuf>, ToolError> {
        validate(args).map_err(|error| ToolError::InvalidArguments(error.to_string()))?;
        let resolved = resolve_readable_file(ctx, &args.path)?;
        let summary = localized!(
            ctx.language,
            "Read spreadsheet {} ({})",
            "Прочитать таблицу {} ({})",
            ctx.sandbox.display(&resolved.path),
            args.operation.as_str()
        );
        let path = resolved.path.clone();
        Ok(Plan::new(summary).path(&resolved, Access::Read).with(path))
    }

    async fn run(
        &self,
        args: ExcelReadArgs,
        path: PathBuf,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let source = open_planned(ctx, &args.path, &path)?;
        run_blocking(&ctx.cancel, PARSE_TIME_LIMIT, move |_stop| {
            let format = SpreadsheetFormat::of(&source)?;
            let mut workbook = Workbook::open(&source, format)?;
            let (sheet, range) = sheet_and_range(&args);
            let grid = workbook.sheet(sheet.as_deref())?;
            match args.operation {
                ReadOperation::Structure => Ok(ToolOutput::json(structure(
                    &workbook.sheet_names(),
                    Table::from_grid(grid),
                ))),
                ReadOperation::Query => query(&args, &Table::from_grid(grid)).map(ToolOutput::text),
                ReadOperation::Cell => {
                    cells(&grid, range.as_deref().unwrap_or_default()).map(ToolOutput::text)
                }
                ReadOperation::Lookup => {
                    lookup(&args, &Table::from_grid(grid)).map(ToolOutput::text)
                }
            }
        })
        .await
    }
}

/// Checks the arguments each operation needs, before anything is read.
fn validate(args: &ExcelReadArgs) -> Result<(), DocumentError> {
    let missing = |what: &str| {
        DocumentError::Invalid(format!(
            "{what} is required for {}",
            args.operation.as_str()
        ))
    };
    match args.operation {
        ReadOperation::Structure => {}
        ReadOperation::Query => {
            if let Some(filter) = &args.filter {
                Condition::parse(filter)?;
            }
            match args.limit {
                Some(0) => return Err(DocumentError::Invalid("limit must be at least 1".into())),
                Some(limit) if limit > MAX_LIMIT => {
                    return Err(DocumentError::Invalid(format!(
                        "limit must be at most {MAX_LIMIT}"
                    )));
                }
                _ => {}
            }
            let aggregate = args.aggregation.is_some() || args.group_by.is_some();
            if aggregate
                && args.column.is_none()
                && !matches!(args.aggregation, None | Some(Aggregation::Count))
            {
                return Err(DocumentError::Invalid(format!(
                    "aggregation {} needs a column to aggregate",
                    args.aggregation.unwrap_or(Aggregation::Count).as_str()
                )));
            }
        }
        ReadOperation::Cell => {
            let (_, range) = sheet_and_range(args);
            let range =
                range.ok_or_else(|| missing("range (a cell like B5 or a range like A1:C10)"))?;
            parse_range(&range)?;
        }
        ReadOperation::Lookup => {
            if args.lookup_value.is_none() {
                return Err(missing("lookupValue"));
            }
            if args.lookup_column.is_none() {
                return Err(missing("lookupColumn"));
            }
            if args.return_column.is_none() {
                return Err(missing("returnColumn"));
            }
        }
    }
    Ok(())
}

/// The sheet to read and the CELL range: `Sheet!A1:B2` in `range` names the sheet too.
fn sheet_and_range(args: &ExcelReadArgs) -> (Option<String>, Option<String>) {
    let range = args
        .range
        .as_deref()
        .map(str::trim)
        .filter(|range| !range.is_empty());
    match range.and_then(|range| range.rsplit_once('!')) {
        Some((sheet, cells)) if args.sheet.is_none() => {
            let sheet = sheet.trim().trim_matches('\'').to_owned();
            (Some(sheet), Some(cells.to_owned()))
        }
        Some((_, cells)) => (args.sheet.clone(), Some(cells.to_owned())),
        None => (args.sheet.clone(), range.map(str::to_owned)),
    }
}

/// A rounded number as JSON (15 significant digits, like everything people see).
fn json_number(value: f64) -> Value {
    format_number(value)
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

fn structure(sheets: &[String], table: Table) -> Value {
    let mut numeric_stats = Map::new();
    let mut string_samples = Map::new();
    for (index, header) in table.headers.iter().enumerate() {
        let cells = table.rows.iter().filter_map(|row| row.get(index));
        let numbers: Vec<f64> = cells.clone().filter_map(CellValue::number).collect();
        if !numbers.is_empty() {
            let sum: f64 = numbers.iter().sum();
            let min = numbers.iter().copied().fold(f64::INFINITY, f64::min);
            let max = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            numeric_stats.insert(
                header.clone(),
                json!({
                    "sum": json_number(sum),
                    "avg": json_number(sum / numbers.len() as f64),
                    "min": json_number(min),
                    "max": json_number(max),
                }),
            );
        }
        let mut samples: Vec<String> = Vec::new();
        for cell in cells {
            if cell.is_empty() || cell.number().is_some() {
                continue;
            }
            let text = cell.display().trim().to_owned();
            if !samples.contains(&text) {
                samples.push(text);
                if samples.len() == SAMPLES_PER_COLUMN {
                    break;
                }
            }
        }
        if !samples.is_empty() {
            string_samples.insert(header.clone(), json!(samples));
        }
    }
    json!({
        "sheet": table.sheet,
        "sheets": sheets,
        "rows": table.rows.len(),
        "columns": table.headers,
        "numericStats": numeric_stats,
        "stringSamples": string_samples,
    })
}

/// A comparison operator of a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Equal,
    NotEqual,
    Greater,
    Less,
    GreaterOrEqual,
    LessOrEqual,
}

/// A parsed filter, `Column<op>Value`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Condition {
    column: String,
    comparison: Comparison,
    value: String,
}

impl Condition {
    /// Splits at the first operator character, taking the longest operator there, so values
    /// may contain operator characters (`Note=a<b`).
    fn parse(filter: &str) -> Result<Self, DocumentError> {
        let invalid = || {
            DocumentError::Invalid(format!(
                "invalid filter '{filter}': use Column=Value, or >, <, >=, <=, <> (e.g. Amount>1000)"
            ))
        };
        let start = filter.find(['=', '<', '>', '!']).ok_or_else(invalid)?;
        let rest = &filter[start..];
        let (comparison, length) = [
            (">=", Comparison::GreaterOrEqual),
            ("<=", Comparison::LessOrEqual),
            ("<>", Comparison::NotEqual),
            ("!=", Comparison::NotEqual),
            ("==", Comparison::Equal),
            (">", Comparison::Greater),
            ("<", Comparison::Less),
            ("=", Comparison::Equal),
        ]
        .iter()
        .find(|(symbol, _)| rest.starts_with(symbol))
        .map(|(symbol, comparison)| (*comparison, symbol.len()))
        .ok_or_else(invalid)?;
        let column = filter[..start].trim();
        if column.is_empty() {
            return Err(invalid());
        }
        let value = rest[length..]
            .trim()
            .trim_matches(|character| character == '"' || character == '\'');
        Ok(Self {
            column: column.to_owned(),
            comparison,
            value: value.to_owned(),
        })
    }

    fn matches(&self, cell: &CellValue) -> bool {
        let ordering = compare_to_text(cell, &self.value);
        let ordered = || {
            // `Amount>500` is about numbers: a cell that holds no number never matches it.
            if cell.is_empty() || (parse_number(&self.value).is_some() && cell.number().is_none()) {
                None
            } else {
                ordering
            }
        };
        match self.comparison {
            Comparison::Equal => ordering == Some(Ordering::Equal),
            Comparison::NotEqual => ordering != Some(Ordering::Equal),
            Comparison::Greater => ordered() == Some(Ordering::Greater),
            Comparison::Less => ordered() == Some(Ordering::Less),
            Comparison::GreaterOrEqual => {
                matches!(ordered(), Some(Ordering::Greater | Ordering::Equal))
            }
            Comparison::LessOrEqual => matches!(ordered(), Some(Ordering::Less | Ordering::Equal)),
        }
    }
}

/// Compares a cell with a value typed by the model: as numbers when both are numbers, else as
/// case-insensitive text.
fn compare_to_text(cell: &CellValue, value: &str) -> Option<Ordering> {
    match (cell.number(), parse_number(value)) {
        (Some(left), Some(right)) => left.partial_cmp(&right),
        _ => Some(
            cell.display()
                .trim()
                .to_lowercase()
                .cmp(&value.trim().to_lowercase()),
        ),
    }
}

/// Orders two cells for sorting: numbers first, then text, then empty cells (in either
/// direction); within numbers and within text, in `direction`.
fn compare_cells(left: &CellValue, right: &CellValue, direction: SortOrder) -> Ordering {
    let class = |cell: &CellValue| match (cell.is_empty(), cell.number()) {
        (true, _) => 2,
        (false, Some(_)) => 0,
        (false, None) => 1,
    };
    class(left).cmp(&class(right)).then_with(|| {
        let within = match (left.number(), right.number()) {
            (Some(left), Some(right)) => left.total_cmp(&right),
            _ => left
                .display()
                .to_lowercase()
                .cmp(&right.display().to_lowercase()),
        };
        if direction == SortOrder::Desc {
            within.reverse()
        } else {
            within
        }
    })
}

fn query(args: &ExcelReadArgs, table: &Table) -> Result<String, DocumentError> {
    let filter = match &args.filter {
        Some(filter) => {
            let condition = Condition::parse(filter)?;
            let index = table.column(&condition.column)?;
            Some((index, condition))
        }
        None => None,
    };
    let matching: Vec<&Vec<CellValue>> = table
        .rows
        .iter()
        .filter(|row| match &filter {
            Some((index, condition)) => condition.matches(&row[*index]),
            None => true,
        })
        .collect();
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT) as usize;
    if args.aggregation.is_some() || args.group_by.is_some() {
        aggregate(args, table, &matching, limit)
    } else {
        list_rows(args, table, &matching, limit)
    }
}

/// Rows grouped by `group_column`'s text (one group, `total`, without one), groups in order of
/// first appearance (ties in sorting keep it).
fn group_rows<'a>(
    rows: &[&'a Vec<CellValue>],
    group_column: Option<usize>,
) -> (Vec<String>, HashMap<String, Vec<&'a Vec<CellValue>>>) {
    let mut keys: Vec<String> = Vec::new();
    let mut members: HashMap<String, Vec<&Vec<CellValue>>> = HashMap::new();
    for row in rows {
        let key = match group_column {
            Some(index) => {
                let key = row[index].display().trim().to_owned();
                if key.is_empty() {
                    "(empty)".to_owned()
                } else {
                    key
                }
            }
            None => "total".to_owned(),
        };
        members
            .entry(key.clone())
            .or_insert_with(|| {
                keys.push(key);
                Vec::new()
            })
            .push(row);
    }
    (keys, members)
}

/// One group's value of `aggregation` over `value_column` (`None`: no numbers to aggregate).
fn aggregate_group(
    group: &[&Vec<CellValue>],
    value_column: Option<usize>,
    aggregation: Aggregation,
) -> Option<f64> {
    let numbers = || {
        group
            .iter()
            .filter_map(|row| value_column.and_then(|index| row[index].number()))
    };
    match aggregation {
        Aggregation::Count => Some(match value_column {
            Some(index) => group.iter().filter(|row| !row[index].is_empty()).count() as f64,
            None => group.len() as f64,
        }),
        Aggregation::Sum => Some(numbers().sum()),
        Aggregation::Avg => {
            let values: Vec<f64> = numbers().collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        }
        Aggregation::Min => numbers().reduce(f64::min),
        Aggregation::Max => numbers().reduce(f64::max),
    }
}

fn aggregate(
    args: &ExcelReadArgs,
    table: &Table,
    rows: &[&Vec<CellValue>],
    limit: usize,
) -> Result<String, DocumentError> {
    let aggregation = args.aggregation.unwrap_or(Aggregation::Count);
    let value_column = args
        .column
        .as_deref()
        .map(|column| table.column(column))
        .transpose()?;
    let group_column = args
        .group_by
        .as_deref()
        .map(|column| table.column(column))
        .transpose()?;

    let (keys, members) = group_rows(rows, group_column);
    if keys.is_empty() {
        return Ok("No rows match.".into());
    }
    let mut results: Vec<(String, Option<f64>)> = keys
        .into_iter()
        .map(|key| {
            let group = &members[&key];
            let value = aggregate_group(group, value_column, aggregation);
            (key, value)
        })
        .collect();

    let by_key = match args.sort_by.as_deref() {
        None => false,
        Some(sort_by) => {
            let sort_index = table.column(sort_by)?;
            if Some(sort_index) == group_column {
                true
            } else if Some(sort_index) == value_column {
                false
            } else {
                return Err(DocumentError::Invalid(format!(
                    "sortBy '{sort_by}' must be the groupBy column or the aggregated column"
                )));
            }
        }
    };
    let descending = args.sort_order.unwrap_or(SortOrder::Desc) == SortOrder::Desc;
    results.sort_by(|left, right| {
        if by_key {
            let direction = if descending {
                SortOrder::Desc
            } else {
                SortOrder::Asc
            };
            return compare_cells(
                &CellValue::Text(left.0.clone()),
                &CellValue::Text(right.0.clone()),
                direction,
            );
        }
        {
            // Groups without a value sort last either way.
            match (left.1, right.1) {
                (Some(left), Some(right)) if descending => right.total_cmp(&left),
                (Some(left), Some(right)) => left.total_cmp(&right),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
        }
    });
    let total = results.len();
    let mut lines: Vec<String> = results
        .into_iter()
        .take(limit)
        .map(|(key, value)| {
            format!(
                "{key}: {}",
                value.map_or_else(|| "(no numbers)".to_owned(), format_number)
            )
        })
        .collect();
    if total > limit {
        lines.push(format!(
            "... {} more groups (raise limit to see them)",
            total - limit
        ));
    }
    Ok(bounded(lines.join("\n")))
}

fn list_rows(
    args: &ExcelReadArgs,
    table: &Table,
    rows: &[&Vec<CellValue>],
    limit: usize,
) -> Result<String, DocumentError> {
    let shown_columns: Vec<usize> = match &args.column {
        Some(column) => vec![table.column(column)?],
        None => (0..table.headers.len()).collect(),
    };
    let mut sorted: Vec<&Vec<CellValue>> = rows.to_vec();
    if let Some(sort_by) = &args.sort_by {
        let index = table.column(sort_by)?;
        let direction = args.sort_order.unwrap_or(SortOrder::Asc);
        sorted.sort_by(|left, right| compare_cells(&left[index], &right[index], direction));
    }
    if sorted.is_empty() {
        return Ok("No rows match.".into());
    }
    let shown = sorted.len().min(limit);
    let mut out = format!("{} of {} matching rows:\n", shown, sorted.len());
    let line = |cells: Vec<String>| cells.join("\t");
    out.push_str(&line(
        shown_columns
            .iter()
            .map(|index| table.headers[*index].clone())
            .collect(),
    ));
    for row in sorted.iter().take(limit) {
        out.push('\n');
        out.push_str(&line(
            shown_columns
                .iter()
                .map(|index| row[*index].display().replace(['\t', '\n', '\r'], " "))
                .collect(),
        ));
    }
    Ok(bounded(out))
}

/// An inclusive range of absolute 0-based cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CellRange {
    first: (u32, u32),
    last: (u32, u32),
}

fn parse_range(range: &str) -> Result<CellRange, DocumentError> {
    let (first, last) = match range.split_once(':') {
        Some((first, last)) => (parse_cell_reference(first)?, parse_cell_reference(last)?),
        None => {
            let cell = parse_cell_reference(range)?;
            (cell, cell)
        }
    };
    let range = CellRange {
        first: (first.0.min(last.0), first.1.min(last.1)),
        last: (first.0.max(last.0), first.1.max(last.1)),
    };
    let cells =
        u64::from(range.last.0 - range.first.0 + 1) * u64::from(range.last.1 - range.first.1 + 1);
    if cells > MAX_RANGE_CELLS {
        return Err(DocumentError::Invalid(format!(
            "the range has {cells} cells; read at most {MAX_RANGE_CELLS} at a time"
        )));
    }
    Ok(range)
}

fn cells(grid: &Grid, range: &str) -> Result<String, DocumentError> {
    let range = parse_range(range)?;
    if range.first == range.last {
        let (row, column) = range.first;
        return Ok(match grid.cell(row, column) {
            Some(cell) if !cell.is_empty() => cell.display(),
            _ => "(empty)".into(),
        });
    }
    let mut lines = Vec::new();
    for row in range.first.0..=range.last.0 {
        let cells: Vec<String> = (range.first.1..=range.last.1)
            .map(|column| {
                grid.cell(row, column)
                    .map(|cell| cell.display().replace(['\t', '\n', '\r'], " "))
                    .unwrap_or_default()
            })
            .collect();
        lines.push(cells.join("\t"));
    }
    Ok(bounded(lines.join("\n")))
}

fn lookup(args: &ExcelReadArgs, table: &Table) -> Result<String, DocumentError> {
    let value = args
        .lookup_value
        .as_ref()
        .map(TextOrNumber::as_text)
        .unwrap_or_default();
    let lookup_index = table.column(args.lookup_column.as_deref().unwrap_or_default())?;
    let return_index = table.column(args.return_column.as_deref().unwrap_or_default())?;
    let found = table
        .rows
        .iter()
        .find(|row| compare_to_text(&row[lookup_index], &value) == Some(Ordering::Equal));
    Ok(match found {
        Some(row) if row[return_index].is_empty() => "(empty)".into(),
        Some(row) => row[return_index].display(),
        None => format!("Not found: '{}'", value.trim()),
    })
}

/// Keeps results within the text limit every reader shares.
fn bounded(mut text: String) -> String {
    if crate::tools::builtin::documents::text::truncate_chars(&mut text, TEXT_CHAR_LIMIT) {
        text.push_str("\n... (cut at 50000 characters; ask for fewer rows or a smaller range)");
    }
    text
}

#[cfg(test)]
mod tests;
