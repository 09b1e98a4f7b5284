use std::time::Duration;

use serde_json::json;

use super::*;
use crate::approvals::CallTarget;
use crate::tools::builtin::data::register;
use crate::tools::builtin::documents::fixtures::{self, Cell, TestHome};
use crate::tools::builtin::documents::spreadsheet::CellValue;

const SALES_CSV: &str = "Month,Sales,Region\nJan,120,North\nFeb,90.5,South\nMar,150,North\nFeb,9.5,North\nApr,n/a,South\n,70,South\n";

/// A decoded PNG: size and RGB pixels.
struct Image {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Image {
    fn decode(bytes: &[u8]) -> Self {
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        pixels.truncate(info.buffer_size());
        Self {
            width: info.width,
            height: info.height,
            pixels,
        }
    }

    fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let start = ((y * self.width + x) * 3) as usize;
        [
            self.pixels[start],
            self.pixels[start + 1],
            self.pixels[start + 2],
        ]
    }

    /// Pixels in rows `top..bottom` that are not white.
    fn ink(&self, top: u32, bottom: u32) -> usize {
        (top..bottom)
            .flat_map(|y| (0..self.width).map(move |x| (x, y)))
            .filter(|(x, y)| self.pixel(*x, *y) != [255, 255, 255])
            .count()
    }

    /// Distinct colours in the image.
    fn colours(&self) -> usize {
        let mut seen: Vec<[u8; 3]> = self
            .pixels
            .chunks(3)
            .map(|pixel| [pixel[0], pixel[1], pixel[2]])
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }
}

fn table(csv: &str) -> Table {
    Table::from_grid(
        crate::tools::builtin::documents::spreadsheet::parse_csv(csv, "t".into(), None).unwrap(),
    )
}

fn home() -> TestHome {
    let home = TestHome::new(register);
    home.write("sales.csv", SALES_CSV);
    home
}

#[tokio::test]
async fn without_columns_it_lists_headers_and_writes_nothing() {
    let home = home();
    let planned = home
        .plan("CreatePlot", json!({"path": "~/sales.csv"}))
        .await
        .unwrap();
    assert_eq!(planned.plan.summary, "Read the column names of ~/sales.csv");
    assert_eq!(planned.plan.targets.len(), 1);
    let output = planned.run(home.ctx.clone()).await.unwrap();
    assert_eq!(
        output.text,
        "Columns required. Available headers: [Month, Sales, Region]"
    );
    assert!(!home.root.join("souz").exists());

    let only_x = home
        .call(
            "CreatePlot",
            json!({"path": "~/sales.csv", "xColumn": "Month"}),
        )
        .await
        .unwrap();
    assert!(only_x.text.starts_with("Columns required."));
}

#[tokio::test]
async fn draws_a_bar_chart_to_the_default_path_and_never_overwrites() {
    let home = home();
    let spec = home.catalog.get("CreatePlot").unwrap().spec();
    assert_eq!(spec.risk, Risk::Write);
    assert_eq!(spec.category, ToolCategory::DataAnalytics);

    let arguments = json!({"path": "~/sales.csv", "xColumn": "month", "yColumn": "Sales"});
    let planned = home.plan("CreatePlot", arguments.clone()).await.unwrap();
    let first = home.root.join("souz/Documents/plot.png");
    assert_eq!(
        planned.plan.summary,
        "Draw a bar chart of Sales by Month from ~/sales.csv into ~/souz/Documents/plot.png"
    );
    assert_eq!(
        planned.plan.targets,
        vec![
            CallTarget::Path {
                path: home.root.join("sales.csv"),
                access: Access::Read,
                protected: false
            },
            CallTarget::Path {
                path: first.clone(),
                access: Access::Write,
                protected: false
            },
        ]
    );
    let output = planned.run(home.ctx.clone()).await.unwrap();
    assert_eq!(
        output.text,
        format!(
            "Plot saved to {} (2 rows without a 'Month' value or a number in 'Sales' left out)",
            first.display()
        )
    );
    let image = Image::decode(&std::fs::read(&first).unwrap());
    assert_eq!((image.width, image.height), (WIDTH, HEIGHT));
    assert!(image.colours() > 10, "a chart, not a blank canvas");
    assert!(image.ink(0, 60) > 200, "the title is drawn");

    // The default path is taken: the next chart gets a numbered name.
    let output = home.call("CreatePlot", arguments).await.unwrap();
    let second = home.root.join("souz/Documents/plot-2.png");
    assert!(
        output
            .text
            .starts_with(&format!("Plot saved to {}", second.display())),
        "{}",
        output.text
    );
    assert!(second.exists());

    // An explicit path that exists is refused; the file is untouched.
    let before = std::fs::read(&first).unwrap();
    let error = home
        .call("CreatePlot", json!({"path": "~/sales.csv", "xColumn": "Month", "yColumn": "Sales", "output": "~/souz/Documents/plot.png"}))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "~/souz/Documents/plot.png already exists; choose another output path (existing files are not replaced)"
    );
    assert_eq!(std::fs::read(&first).unwrap(), before);

    let error = home
        .call("CreatePlot", json!({"path": "~/sales.csv", "xColumn": "Month", "yColumn": "Sales", "output": "~/chart.jpg"}))
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments(_)), "{error:?}");
    assert!(error.to_string().contains("must end in .png"), "{error}");
}

#[tokio::test]
async fn every_chart_type_renders_from_excel_too() {
    let home = TestHome::new(register);
    use Cell::{Number, Text};
    home.write(
        "data.xlsx",
        fixtures::xlsx(&[(
            "Data",
            (0, 0),
            vec![
                vec![Text("Year"), Text("Доход"), Text("Отдел")],
                vec![Number(2021.0), Number(10.0), Text("Продажи")],
                vec![Number(2022.0), Number(14.5), Text("Склад")],
                vec![Number(2023.0), Number(9.0), Text("Продажи")],
                vec![Number(2024.0), Number(21.0), Text("Офис")],
            ],
        )]),
    );
    for (kind, x, output) in [
        ("LINE", "Year", "line.png"),
        ("line", "Отдел", "line-categories.png"),
        ("SCATTER", "Year", "scatter.png"),
        ("Scatter", "Отдел", "scatter-categories.png"),
        ("PIE", "Отдел", "pie.png"),
        ("BAR", "Отдел", "bar.png"),
    ] {
        let result = home
            .call(
                "CreatePlot",
                json!({"path": "~/data.xlsx", "xColumn": x, "yColumn": "Доход", "chartType": kind, "output": format!("~/charts/{output}")}),
            )
            .await
            .unwrap();
        let path = home.root.join("charts").join(output);
        assert_eq!(result.text, format!("Plot saved to {}", path.display()));
        let image = Image::decode(&std::fs::read(&path).unwrap());
        assert_eq!((image.width, image.height), (WIDTH, HEIGHT), "{output}");
        assert!(image.colours() > 10, "{output} is not blank");
        assert!(image.ink(0, 60) > 200, "{output} has its title");
        if kind == "PIE" {
            // The middle of the pie is painted.
            assert_ne!(image.pixel(WIDTH / 2, HEIGHT / 2 + 40), [255, 255, 255]);
        }
    }
}

#[test]
fn text_is_really_drawn_with_the_embedded_font() {
    let chart = |title: &str| Chart {
        kind: ChartType::Bar,
        title: title.into(),
        x_label: "x".into(),
        y_label: "y".into(),
        series: Series::Categories {
            labels: vec!["a".into(), "b".into()],
            values: vec![1.0, 2.0],
        },
        skipped_rows: 0,
    };
    let latin = Image::decode(&render_png(&chart("Revenue by Month")).unwrap());
    let cyrillic = Image::decode(&render_png(&chart("Выручка по месяцам")).unwrap());
    let empty = Image::decode(&render_png(&chart("")).unwrap());
    assert!(latin.ink(0, 60) > 300);
    assert!(
        cyrillic.ink(0, 60) > 300,
        "Cyrillic glyphs come from the embedded font"
    );
    assert!(
        empty.ink(0, 40) < latin.ink(0, 40) / 10,
        "without a title the band is nearly empty"
    );
    assert_ne!(latin.pixels, cyrillic.pixels);
    // Rendering is deterministic.
    assert_eq!(
        latin.pixels,
        Image::decode(&render_png(&chart("Revenue by Month")).unwrap()).pixels
    );
}

#[test]
fn edge_cases_render() {
    let many: Vec<String> = (0..45).map(|i| format!("Category number {i}")).collect();
    let many_values: Vec<f64> = (0..45).map(|i| f64::from(i) - 10.0).collect();
    for (kind, series) in [
        (
            ChartType::Bar,
            Series::Categories {
                labels: many,
                values: many_values,
            },
        ),
        (
            ChartType::Bar,
            Series::Categories {
                labels: vec!["only".into()],
                values: vec![5.0],
            },
        ),
        (
            ChartType::Bar,
            Series::Categories {
                labels: vec!["zero".into()],
                values: vec![0.0],
            },
        ),
        (ChartType::Line, Series::Points(vec![(2024.0, 3.0)])),
        (
            ChartType::Scatter,
            Series::CategoryPoints {
                labels: vec!["a".into()],
                points: vec![(0, -2.0)],
            },
        ),
        (
            ChartType::Pie,
            Series::Categories {
                labels: vec!["all".into()],
                values: vec![1.0],
            },
        ),
    ] {
        let chart = Chart {
            kind,
            title: "One".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series,
            skipped_rows: 0,
        };
        let image = Image::decode(&render_png(&chart).unwrap());
        assert_eq!((image.width, image.height), (WIDTH, HEIGHT));
        assert!(image.colours() > 5, "{kind:?}");
    }
}

#[test]
fn chart_data_sums_repeats_and_skips_rows_without_numbers() {
    let sales = table(SALES_CSV);
    let bar = chart_from_table(&sales, "Month", "Sales", ChartType::Bar).unwrap();
    assert_eq!(
        bar.series,
        Series::Categories {
            labels: vec!["Jan".into(), "Feb".into(), "Mar".into()],
            values: vec![120.0, 100.0, 150.0],
        }
    );
    assert_eq!(bar.skipped_rows, 2);
    assert_eq!(bar.title, "Sales by Month");

    let pie = chart_from_table(&sales, "Region", "Sales", ChartType::Pie).unwrap();
    assert_eq!(
        pie.series,
        Series::Categories {
            labels: vec!["North".into(), "South".into()],
            values: vec![279.5, 160.5],
        }
    );

    let numeric = table("x,y\n3,30\n1,10\n2,20\n1,5\n");
    assert_eq!(
        chart_from_table(&numeric, "x", "y", ChartType::Line)
            .unwrap()
            .series,
        Series::Points(vec![(1.0, 15.0), (2.0, 20.0), (3.0, 30.0)])
    );
    assert_eq!(
        chart_from_table(&numeric, "x", "y", ChartType::Scatter)
            .unwrap()
            .series,
        Series::Points(vec![(3.0, 30.0), (1.0, 10.0), (2.0, 20.0), (1.0, 5.0)])
    );
    assert_eq!(
        chart_from_table(&sales, "Region", "Sales", ChartType::Scatter)
            .unwrap()
            .series,
        Series::CategoryPoints {
            labels: vec!["North".into(), "South".into()],
            points: vec![(0, 120.0), (1, 90.5), (0, 150.0), (0, 9.5), (1, 70.0)],
        }
    );
}

#[test]
fn pies_fold_small_slices_and_refuse_negative_totals() {
    let mut csv = String::from("name,value\n");
    for index in 1..=15 {
        csv.push_str(&format!("s{index},{index}\n"));
    }
    let pie = chart_from_table(&table(&csv), "name", "value", ChartType::Pie).unwrap();
    let Series::Categories { labels, values } = pie.series else {
        panic!("categories expected")
    };
    assert_eq!(labels.len(), MAX_SLICES);
    assert_eq!(labels[0], "s15");
    assert_eq!(labels.last().unwrap(), "Other");
    assert_eq!(*values.last().unwrap(), f64::from((1..=4).sum::<i32>()));
    assert_eq!(values.iter().sum::<f64>(), f64::from((1..=15).sum::<i32>()));

    let error = chart_from_table(&table("a,b\nx,-1\ny,3\n"), "a", "b", ChartType::Pie).unwrap_err();
    assert!(error.to_string().contains("not negative"), "{error}");
    let error = chart_from_table(&table("a,b\nx,0\n"), "a", "b", ChartType::Pie).unwrap_err();
    assert!(error.to_string().contains("zero"), "{error}");
}

#[test]
fn missing_data_and_columns_are_clear_errors() {
    let sales = table(SALES_CSV);
    let error = chart_from_table(&sales, "Month", "Region", ChartType::Bar).unwrap_err();
    assert_eq!(
        error.to_string(),
        "no data to plot: no row has both a 'Month' value and a number in 'Region'"
    );
    let error = chart_from_table(&sales, "Month", "Profit", ChartType::Bar).unwrap_err();
    assert_eq!(
        error.to_string(),
        "column 'Profit' not found; columns: Month, Sales, Region"
    );
    let mut many = String::from("k,v\n");
    for index in 0..=MAX_CATEGORIES {
        many.push_str(&format!("k{index},1\n"));
    }
    let error = chart_from_table(&table(&many), "k", "v", ChartType::Bar).unwrap_err();
    assert!(
        error.to_string().starts_with("201 categories are too many"),
        "{error}"
    );
    // A blank x cell is not a category; a zero is a number.
    let grid_table = Table {
        sheet: "s".into(),
        headers: vec!["k".into(), "v".into()],
        rows: vec![vec![CellValue::Text("a".into()), CellValue::Number(0.0)]],
        first_column: 0,
    };
    assert!(chart_from_table(&grid_table, "k", "v", ChartType::Bar).is_ok());
}

#[tokio::test]
async fn opens_the_image_when_asked() {
    let home = home();
    let record = home.root.join("opened.txt");
    let script = home.write(
        "opener.sh",
        format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\n", record.display()),
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut builder = crate::tools::CatalogBuilder::default();
    builder
        .add(CreatePlot {
            opener: Some(vec![script.into_os_string()]),
        })
        .unwrap();
    let catalog = builder.build();
    let planned = catalog
        .get("CreatePlot")
        .unwrap()
        .plan(
            json!({"path": "~/sales.csv", "xColumn": "Month", "yColumn": "Sales", "output": "~/open-me.png", "openAfterCreate": true}),
            &home.ctx,
        )
        .await
        .unwrap();
    assert!(
        planned
            .plan
            .summary
            .ends_with("into ~/open-me.png and open it"),
        "{}",
        planned.plan.summary
    );
    planned.run(home.ctx.clone()).await.unwrap();
    let mut opened = String::new();
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(&record)
            && !text.is_empty()
        {
            opened = text;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(opened, home.root.join("open-me.png").display().to_string());

    // An opener that cannot start is reported, and the chart is still saved.
    let failing = CreatePlot {
        opener: Some(vec![home.root.join("no-such-program").into_os_string()]),
    };
    let mut builder = crate::tools::CatalogBuilder::default();
    builder.add(failing).unwrap();
    let output = builder
        .build()
        .get("CreatePlot")
        .unwrap()
        .plan(
            json!({"path": "~/sales.csv", "xColumn": "Month", "yColumn": "Sales", "output": "~/second.png", "openAfterCreate": true}),
            &home.ctx,
        )
        .await
        .unwrap()
        .run(home.ctx.clone())
        .await
        .unwrap();
    assert!(
        output.text.contains("; it could not be opened:"),
        "{}",
        output.text
    );
    assert!(home.root.join("second.png").exists());
}
