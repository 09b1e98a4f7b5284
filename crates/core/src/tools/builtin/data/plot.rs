//! `CreatePlot`: a PNG chart (bar, line, scatter, pie) from two columns of a CSV or Excel file,
//! drawn with plotters' bitmap backend and encoded with `png`.
//!
//! Text is drawn with DejaVu Sans embedded in the binary (`font/`, with its license), registered
//! with plotters' `ab_glyph` renderer, so charts render the same on a machine with no fonts at
//! all, Cyrillic included.
//!
//! Data: rows without an x value or a numeric y value are skipped (and counted in the result).
//! BAR, PIE and categorical LINE sum the y values of repeated x values and keep the file's order
//! (PIE sorts slices largest first and folds small ones into "Other"); LINE and SCATTER use a
//! numeric x axis when every x value is a number. Without `xColumn` and `yColumn` the tool only
//! reports the available headers (as the original).
//!
//! Output: the default path is `~/souz/Documents/plot.png` (as the original); when it exists, a
//! free numbered name is used (`plot-2.png`). An explicit `output` that exists is refused, never
//! overwritten. The path must end in `.png`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{Risk, ToolCategory};

use super::{Table, check_extension, write_new_file};
use crate::sandbox::{Access, ResolvedPath};
use crate::tools::builtin::calculator::format_number;
use crate::tools::builtin::documents::resolve_readable_file;
use crate::tools::builtin::documents::spreadsheet::{SpreadsheetFormat, Workbook};
use crate::tools::builtin::worker::{PARSE_TIME_LIMIT, run_blocking};
use crate::tools::{Language, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput, localized};

/// Where charts go when no `output` is given (as the original).
pub(crate) const DEFAULT_OUTPUT: &str = "~/souz/Documents/plot.png";
/// Image size in pixels (as the original).
pub(crate) const WIDTH: u32 = 800;
/// Image size in pixels (as the original).
pub(crate) const HEIGHT: u32 = 600;
/// Most bars or line categories drawn.
const MAX_CATEGORIES: usize = 200;
/// Most slices drawn; the smallest rest becomes "Other".
const MAX_SLICES: usize = 12;
/// Most points drawn.
const MAX_POINTS: usize = 100_000;

/// DejaVu Sans 2.37 (see `font/LICENSE`).
static FONT: &[u8] = include_bytes!("font/DejaVuSans.ttf");
/// The family name charts use; the embedded font is registered under it.
const FAMILY: &str = "sans-serif";

/// The kind of chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum ChartType {
    /// Bars per x value.
    #[default]
    #[serde(alias = "bar", alias = "Bar")]
    Bar,
    /// A line through the values.
    #[serde(alias = "line", alias = "Line")]
    Line,
    /// Points.
    #[serde(alias = "scatter", alias = "Scatter")]
    Scatter,
    /// Slices of a whole.
    #[serde(alias = "pie", alias = "Pie")]
    Pie,
}

impl ChartType {
    fn noun(self, language: Language) -> &'static str {
        match (self, language) {
            (Self::Bar, Language::En) => "bar chart",
            (Self::Line, Language::En) => "line chart",
            (Self::Scatter, Language::En) => "scatter plot",
            (Self::Pie, Language::En) => "pie chart",
            (Self::Bar, Language::Ru) => "столбчатую диаграмму",
            (Self::Line, Language::Ru) => "линейный график",
            (Self::Scatter, Language::Ru) => "точечную диаграмму",
            (Self::Pie, Language::Ru) => "круговую диаграмму",
        }
    }
}

/// Arguments of `CreatePlot`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct CreatePlotArgs {
    /// Path to the data file: CSV, XLSX, XLS or ODS (first sheet). `~` is the home folder.
    pub path: String,
    /// Column for the x axis (categories). Omit to list the file's headers.
    pub x_column: Option<String>,
    /// Column for the y axis (numbers). Omit to list the file's headers.
    pub y_column: Option<String>,
    /// BAR, LINE, SCATTER or PIE. Default: BAR.
    #[serde(default)]
    pub chart_type: ChartType,
    /// Output PNG path. Default: ~/souz/Documents/plot.png (a free numbered name if it
    /// exists). An existing file is never replaced.
    pub output: Option<String>,
    /// Open the image on this machine after saving. Default: false.
    #[serde(default)]
    pub open_after_create: bool,
}

/// What the chart shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Series {
    /// One value per category, in order.
    Categories {
        /// Category names.
        labels: Vec<String>,
        /// Their values.
        values: Vec<f64>,
    },
    /// Points on a numeric x axis.
    Points(Vec<(f64, f64)>),
    /// Points over categories (a scatter of text x values).
    CategoryPoints {
        /// Category names, in order of first appearance.
        labels: Vec<String>,
        /// (category index, value).
        points: Vec<(usize, f64)>,
    },
}

/// A chart ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chart {
    /// Its kind.
    pub kind: ChartType,
    /// Title ("Revenue by Month", as the original).
    pub title: String,
    /// X axis name.
    pub x_label: String,
    /// Y axis name.
    pub y_label: String,
    /// The data.
    pub series: Series,
    /// Rows left out for lack of an x value or a numeric y value.
    pub skipped_rows: usize,
}

/// What planning prepared.
#[derive(Debug)]
pub(crate) enum PlotJob {
    /// No columns were given: report the headers.
    Headers(Vec<String>),
    /// Draw and save a chart.
    Draw {
        /// The chart.
        chart: Chart,
        /// Where to save it (does not exist at planning time).
        output: PathBuf,
        /// Whether to open it afterwards.
        open: bool,
    },
}

/// `CreatePlot`: draws a chart into a PNG file.
#[derive(Debug, Clone, Default)]
pub(crate) struct CreatePlot {
    /// The program (and leading arguments) that opens a file for the person; `None` means the
    /// platform's (`open` on macOS, `xdg-open` elsewhere).
    pub opener: Option<Vec<OsString>>,
}

impl Tool for CreatePlot {
    type Args = CreatePlotArgs;
    type Prepared = PlotJob;

    fn name(&self) -> &'static str {
        "CreatePlot"
    }

    fn description(&self) -> &'static str {
        "Creates a chart (BAR, LINE, SCATTER or PIE) from two columns of a CSV or Excel file and \
         saves it as a PNG image. Omit xColumn and yColumn to see the file's headers first. \
         Returns the path of the saved image."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::DataAnalytics
    }

    fn risk(&self) -> Risk {
        Risk::Write
    }

    async fn plan(
        &self,
        args: &CreatePlotArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<PlotJob>, ToolError> {
        let input = resolve_readable_file(ctx, &args.path)?;
        // The data is read while planning, so the plan can name the columns and refuse a
        // chart that has nothing to draw before anyone is asked.
        let source = crate::tools::builtin::documents::open_source(&ctx.sandbox, &input.path)?;
        let table = run_blocking(&ctx.cancel, PARSE_TIME_LIMIT, move |_stop| {
            let format = SpreadsheetFormat::of(&source)?;
            Ok(Table::from_grid(
                Workbook::open(&source, format)?.sheet(None)?,
            ))
        })
        .await?;
        let shown_input = ctx.sandbox.display(&input.path);
        let (Some(x_column), Some(y_column)) = (args.x_column.as_deref(), args.y_column.as_deref())
        else {
            let plan = Plan::new(localized!(
                ctx.language,
                "Read the column names of {shown_input}",
                "Прочитать названия столбцов {shown_input}"
            ))
            .path(&input, Access::Read);
            return Ok(plan.with(PlotJob::Headers(table.headers)));
        };
        let chart = chart_from_table(&table, x_column, y_column, args.chart_type)?;
        let output = resolve_output(ctx, args.output.as_deref())?;
        let open = match (args.open_after_create, ctx.language) {
            (false, _) => "",
            (true, Language::En) => " and open it",
            (true, Language::Ru) => " и открыть его",
        };
        let summary = localized!(
            ctx.language,
            "Draw a {} of {} by {} from {shown_input} into {}{open}",
            "Построить {} «{}» по «{}» из {shown_input} в {}{open}",
            args.chart_type.noun(ctx.language),
            chart.y_label,
            chart.x_label,
            ctx.sandbox.display(&output.path),
        );
        let plan = Plan::new(summary)
            .path(&input, Access::Read)
            .path(&output, Access::Write);
        Ok(plan.with(PlotJob::Draw {
            chart,
            output: output.path.clone(),
            open: args.open_after_create,
        }))
    }

    async fn run(
        &self,
        _args: CreatePlotArgs,
        job: PlotJob,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let (chart, output, open) = match job {
            PlotJob::Headers(headers) => {
                return Ok(ToolOutput::text(format!(
                    "Columns required. Available headers: [{}]",
                    headers.join(", ")
                )));
            }
            PlotJob::Draw {
                chart,
                output,
                open,
            } => (chart, output, open),
        };
        let skipped = chart.skipped_rows;
        let (x_label, y_label) = (chart.x_label.clone(), chart.y_label.clone());
        let png = tokio::task::spawn_blocking(move || render_png(&chart))
            .await
            .map_err(|error| ToolError::Internal(format!("chart renderer: {error}")))??;
        write_new_file(&ctx.sandbox, &output, &png)?;
        let mut message = format!("Plot saved to {}", output.display());
        if skipped > 0 {
            message.push_str(&format!(
                " ({skipped} row{} without a '{x_label}' value or a number in '{y_label}' left out)",
                if skipped == 1 { "" } else { "s" }
            ));
        }
        if open && let Err(error) = self.open(&output) {
            message.push_str(&format!("; it could not be opened: {error}"));
        }
        Ok(ToolOutput::text(message))
    }
}

impl CreatePlot {
    /// Starts the opener on `path` without waiting for it (a viewer stays open).
    fn open(&self, path: &Path) -> std::io::Result<()> {
        let command = match &self.opener {
            Some(command) => command.clone(),
            None if cfg!(target_os = "macos") => vec!["open".into()],
            None => vec!["xdg-open".into()],
        };
        let Some((program, leading)) = command.split_first() else {
            return Err(std::io::Error::other(
                "no program to open files is configured",
            ));
        };
        // Tokio reaps the child in the background once it exits; nothing waits for it here.
        tokio::process::Command::new(program)
            .args(leading)
            .arg(path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map(drop)
    }
}

/// Resolves the output path: the default with a free numbered name, or an explicit path that
/// must not exist.
fn resolve_output(ctx: &ToolContext, output: Option<&str>) -> Result<ResolvedPath, ToolError> {
    let explicit = output.map(str::trim).filter(|output| !output.is_empty());
    let resolved = ctx
        .sandbox
        .resolve(explicit.unwrap_or(DEFAULT_OUTPUT), Access::Write)?;
    check_extension(&resolved.path, "png")?;
    if !resolved.exists {
        return Ok(resolved);
    }
    if explicit.is_some() {
        return Err(ToolError::Failed(format!(
            "{} already exists; choose another output path (existing files are not replaced)",
            ctx.sandbox.display(&resolved.path)
        )));
    }
    let stem = resolved
        .path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plot".into());
    for number in 2..1_000 {
        let candidate = resolved.path.with_file_name(format!("{stem}-{number}.png"));
        let candidate = ctx
            .sandbox
            .resolve(&candidate.to_string_lossy(), Access::Write)?;
        if !candidate.exists {
            return Ok(candidate);
        }
    }
    Err(ToolError::Failed(format!(
        "{} and its numbered siblings exist; give an output path",
        ctx.sandbox.display(&resolved.path)
    )))
}

/// A pie chart's slices: totals per label, largest first, the smallest folded into "Other".
fn pie(pairs: Vec<(String, Option<f64>, f64)>, y_label: &str) -> Result<Series, ToolError> {
    let mut slices = summed(pairs.into_iter().map(|(x, _, y)| (x, y)));
    if slices.iter().any(|(_, value)| *value < 0.0) {
        return Err(ToolError::Failed(format!(
            "a pie chart needs values that are not negative, and '{y_label}' has negative totals"
        )));
    }
    slices.retain(|(_, value)| *value > 0.0);
    if slices.is_empty() {
        return Err(ToolError::Failed(format!(
            "every '{y_label}' total is zero; a pie chart needs a whole"
        )));
    }
    slices.sort_by(|left, right| right.1.total_cmp(&left.1));
    if slices.len() > MAX_SLICES {
        let other: f64 = slices[MAX_SLICES - 1..]
            .iter()
            .map(|(_, value)| value)
            .sum();
        slices.truncate(MAX_SLICES - 1);
        slices.push(("Other".to_owned(), other));
    }
    let (labels, values) = slices.into_iter().unzip();
    Ok(Series::Categories { labels, values })
}

/// Builds the chart's data from two columns of a table.
pub(crate) fn chart_from_table(
    table: &Table,
    x_column: &str,
    y_column: &str,
    kind: ChartType,
) -> Result<Chart, ToolError> {
    let x_index = table.column(x_column)?;
    let y_index = table.column(y_column)?;
    let (x_label, y_label) = (
        table.headers[x_index].clone(),
        table.headers[y_index].clone(),
    );
    let mut pairs: Vec<(String, Option<f64>, f64)> = Vec::new();
    let mut skipped_rows = 0;
    for row in &table.rows {
        let x = row[x_index].display().trim().to_owned();
        match row[y_index].number() {
            Some(y) if !x.is_empty() => pairs.push((x, row[x_index].number(), y)),
            _ => skipped_rows += 1,
        }
    }
    if pairs.is_empty() {
        return Err(ToolError::Failed(format!(
            "no data to plot: no row has both a '{x_label}' value and a number in '{y_label}'"
        )));
    }
    let numeric_x = pairs.iter().all(|(_, x, _)| x.is_some());
    let series = match kind {
        ChartType::Scatter | ChartType::Line if numeric_x => {
            let mut points: Vec<(f64, f64)> = pairs
                .iter()
                .map(|(_, x, y)| (x.unwrap_or_default(), *y))
                .collect();
            if kind == ChartType::Line {
                points = summed(points.into_iter().map(|(x, y)| (x.to_bits(), y)))
                    .into_iter()
                    .map(|(x, y)| (f64::from_bits(x), y))
                    .collect();
                points.sort_by(|left, right| left.0.total_cmp(&right.0));
            }
            if points.len() > MAX_POINTS {
                return Err(too_many(points.len(), MAX_POINTS, "points"));
            }
            Series::Points(points)
        }
        ChartType::Scatter => {
            let mut labels: Vec<String> = Vec::new();
            let mut points = Vec::new();
            for (x, _, y) in pairs {
                let index = labels
                    .iter()
                    .position(|label| *label == x)
                    .unwrap_or_else(|| {
                        labels.push(x);
                        labels.len() - 1
                    });
                points.push((index, y));
            }
            if labels.len() > MAX_CATEGORIES {
                return Err(too_many(labels.len(), MAX_CATEGORIES, "categories"));
            }
            Series::CategoryPoints { labels, points }
        }
        ChartType::Bar | ChartType::Line => {
            let (labels, values): (Vec<String>, Vec<f64>) =
                summed(pairs.into_iter().map(|(x, _, y)| (x, y)))
                    .into_iter()
                    .unzip();
            if labels.len() > MAX_CATEGORIES {
                return Err(too_many(labels.len(), MAX_CATEGORIES, "categories"));
            }
            Series::Categories { labels, values }
        }
        ChartType::Pie => pie(pairs, &y_label)?,
    };
    Ok(Chart {
        kind,
        title: format!("{y_label} by {x_label}"),
        x_label,
        y_label,
        series,
        skipped_rows,
    })
}

/// Sums values of equal keys, keeping the order of first appearance.
fn summed<K: PartialEq>(pairs: impl Iterator<Item = (K, f64)>) -> Vec<(K, f64)> {
    let mut totals: Vec<(K, f64)> = Vec::new();
    for (key, value) in pairs {
        match totals.iter_mut().find(|(existing, _)| *existing == key) {
            Some((_, total)) => *total += value,
            None => totals.push((key, value)),
        }
    }
    totals
}

fn too_many(count: usize, limit: usize, what: &str) -> ToolError {
    ToolError::Failed(format!(
        "{count} {what} are too many for one chart (at most {limit}); aggregate the data first, \
         e.g. with ExcelRead QUERY and groupBy"
    ))
}

/// Registers the embedded font with plotters once.
fn register_font() -> Result<(), ToolError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let registered = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if registered {
        Ok(())
    } else {
        Err(ToolError::Internal(
            "the embedded chart font could not be loaded".into(),
        ))
    }
}

/// Draws the chart and encodes it as an RGB PNG of [`WIDTH`] x [`HEIGHT`].
pub(crate) fn render_png(chart: &Chart) -> Result<Vec<u8>, ToolError> {
    register_font()?;
    let mut pixels = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, chart)
            .map_err(|error| ToolError::Internal(format!("drawing the chart failed: {error}")))?;
    }
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .and_then(|mut writer| writer.write_image_data(&pixels))
        .map_err(|error| ToolError::Internal(format!("encoding the chart failed: {error}")))?;
    Ok(png_bytes)
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(root: &DrawingArea<BitMapBackend<'_>, Shift>, chart: &Chart) -> DrawResult {
    root.fill(&WHITE)?;
    match (&chart.series, chart.kind) {
        (Series::Categories { labels, values }, ChartType::Pie) => {
            draw_pie(root, chart, labels, values)?
        }
        (Series::Categories { labels, values }, kind) => {
            let points: Vec<(usize, f64)> = values.iter().copied().enumerate().collect();
            draw_categories(root, chart, labels, &points, kind)?;
        }
        (Series::CategoryPoints { labels, points }, _) => {
            draw_categories(root, chart, labels, points, ChartType::Scatter)?
        }
        (Series::Points(points), kind) => draw_points(root, chart, points, kind)?,
    }
    root.present()?;
    Ok(())
}

/// Axis bounds that include zero and leave a little room above and below the data.
fn bounds(values: impl Iterator<Item = f64>, include_zero: bool) -> (f64, f64) {
    let (mut low, mut high) = values
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), value| {
            (low.min(value), high.max(value))
        });
    if !low.is_finite() || !high.is_finite() {
        return (0.0, 1.0);
    }
    if include_zero {
        low = low.min(0.0);
        high = high.max(0.0);
    }
    if high - low < f64::EPSILON * high.abs().max(1.0) {
        return (low - 1.0, high + 1.0);
    }
    let padding = (high - low) * 0.05;
    if high > 0.0 || !include_zero {
        high += padding;
    }
    if low < 0.0 || !include_zero {
        low -= padding;
    }
    (low, high)
}

/// Shortens a label to `limit` characters with an ellipsis.
fn shortened(label: &str, limit: usize) -> String {
    if label.chars().count() <= limit {
        label.to_owned()
    } else {
        let kept: String = label.chars().take(limit.saturating_sub(1)).collect();
        format!("{kept}…")
    }
}

fn color(index: usize) -> RGBColor {
    let (red, green, blue) = Palette99::pick(index).rgb();
    RGBColor(red, green, blue)
}

fn draw_categories(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    chart: &Chart,
    labels: &[String],
    points: &[(usize, f64)],
    kind: ChartType,
) -> DrawResult {
    let count = labels.len().max(1);
    let (low, high) = bounds(
        points.iter().map(|(_, value)| *value),
        kind == ChartType::Bar,
    );
    // Category `i` sits at x = i. Asking for at most `count` ticks over a span of `count` makes
    // the ticks whole numbers: one per category, or every 2nd, 5th... past 12, so labels keep
    // room to be read; ticks between categories get no label. Labels are cut to fit their slot
    // (about 8 pixels a character). Upright labels would fit more, but plotters misplaces
    // rotated tick labels.
    let tick_count = count.min(12);
    let label_limit = ((700 / tick_count) / 8).clamp(4, 24);
    let x_range = -0.5..count as f64 - 0.5;
    let mut context = ChartBuilder::on(root)
        .caption(&chart.title, (FAMILY, 26))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range, low..high)?;
    let x_formatter = |value: &f64| {
        let index = value.round();
        if (value - index).abs() > 1e-6 || index < 0.0 {
            return String::new();
        }
        labels
            .get(index as usize)
            .map(|label| shortened(label, label_limit))
            .unwrap_or_default()
    };
    let y_formatter = |value: &f64| format_number(*value);
    context
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(tick_count)
        .x_label_formatter(&x_formatter)
        .y_label_formatter(&y_formatter)
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 16))
        .draw()?;
    let position = |index: usize| index as f64;
    match kind {
        ChartType::Bar => {
            context.draw_series(points.iter().map(|(index, value)| {
                let center = position(*index);
                Rectangle::new(
                    [(center - 0.4, 0.0), (center + 0.4, *value)],
                    color(*index).filled(),
                )
            }))?;
        }
        ChartType::Line => {
            let line = points
                .iter()
                .map(|(index, value)| (position(*index), *value));
            context.draw_series(LineSeries::new(line, color(0).stroke_width(3)))?;
            context.draw_series(points.iter().map(|(index, value)| {
                Circle::new((position(*index), *value), 4, color(0).filled())
            }))?;
        }
        ChartType::Scatter | ChartType::Pie => {
            context.draw_series(points.iter().map(|(index, value)| {
                Circle::new((position(*index), *value), 5, color(0).filled())
            }))?;
        }
    }
    Ok(())
}

fn draw_points(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    chart: &Chart,
    points: &[(f64, f64)],
    kind: ChartType,
) -> DrawResult {
    let (x_low, x_high) = bounds(points.iter().map(|(x, _)| *x), false);
    let (y_low, y_high) = bounds(points.iter().map(|(_, y)| *y), false);
    let mut context = ChartBuilder::on(root)
        .caption(&chart.title, (FAMILY, 26))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x_low..x_high, y_low..y_high)?;
    let formatter = |value: &f64| format_number(*value);
    // Whole-number x values (years, counts) get whole-number ticks only.
    let whole_x = points.iter().all(|(x, _)| x.fract() == 0.0);
    let x_formatter = |value: &f64| {
        if whole_x && value.fract() != 0.0 {
            String::new()
        } else {
            format_number(*value)
        }
    };
    let distinct_x = {
        let mut xs: Vec<u64> = points.iter().map(|(x, _)| x.to_bits()).collect();
        xs.sort_unstable();
        xs.dedup();
        xs.len()
    };
    context
        .configure_mesh()
        .x_labels(if whole_x { distinct_x.clamp(2, 10) } else { 10 })
        .x_label_formatter(&x_formatter)
        .y_label_formatter(&formatter)
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .label_style((FAMILY, 14))
        .axis_desc_style((FAMILY, 16))
        .draw()?;
    if kind == ChartType::Line {
        context.draw_series(LineSeries::new(
            points.iter().copied(),
            color(0).stroke_width(3),
        ))?;
    }
    let radius = if kind == ChartType::Line { 3 } else { 5 };
    context.draw_series(
        points
            .iter()
            .map(|point| Circle::new(*point, radius, color(0).filled())),
    )?;
    Ok(())
}

fn draw_pie(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    chart: &Chart,
    labels: &[String],
    values: &[f64],
) -> DrawResult {
    let area = root
        .margin(12, 12, 12, 12)
        .titled(&chart.title, (FAMILY, 26))?;
    let (width, height) = area.dim_in_pixel();
    let center = (i32::try_from(width / 2)?, i32::try_from(height / 2)?);
    let radius = f64::from(width.min(height)) * 0.32;
    let colors: Vec<RGBColor> = (0..values.len()).map(color).collect();
    let labels: Vec<String> = labels.iter().map(|label| shortened(label, 24)).collect();
    let mut pie = Pie::new(&center, &radius, values, &colors, &labels);
    pie.start_angle(-90.0);
    pie.label_style((FAMILY, 15).into_font().color(&BLACK));
    pie.percentages((FAMILY, 13).into_font().color(&WHITE));
    area.draw(&pie)?;
    Ok(())
}

#[cfg(test)]
mod tests;
