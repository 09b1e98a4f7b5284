use serde_json::{Value, json};

use super::*;
use crate::approvals::CallTarget;
use crate::tools::builtin::data::register;
use crate::tools::builtin::documents::fixtures::{self, Cell, TestHome};

fn sales_workbook() -> Vec<u8> {
    use Cell::{Blank, Date, Number, Text};
    fixtures::xlsx(&[
        (
            "Sales",
            (0, 0),
            vec![
                vec![
                    Text("Manager"),
                    Text("Region"),
                    Text("Revenue"),
                    Text("Date"),
                    Text("Note"),
                ],
                vec![
                    Text("Anna"),
                    Text("North"),
                    Number(1200.0),
                    Date(2024, 1, 5),
                    Text("first"),
                ],
                vec![
                    Text("Boris"),
                    Text("South"),
                    Number(800.0),
                    Date(2024, 1, 20),
                    Blank,
                ],
                vec![
                    Text("Anna"),
                    Text("South"),
                    Number(300.5),
                    Date(2024, 2, 2),
                    Text("big, deal"),
                ],
                vec![
                    Text("Vera"),
                    Text("North"),
                    Text("n/a"),
                    Date(2024, 2, 10),
                    Text("x"),
                ],
                vec![
                    Text("Boris"),
                    Text("North"),
                    Number(1500.0),
                    Date(2024, 3, 1),
                    Text("y"),
                ],
                vec![Blank, Text("South"), Number(50.0), Date(2024, 3, 9), Blank],
            ],
        ),
        (
            "Prices",
            (2, 1),
            vec![
                vec![Text("Товар"), Text("Цена")],
                vec![Text("Ноутбук"), Number(55_000.0)],
                vec![Text("Мышь"), Number(990.0)],
            ],
        ),
    ])
}

struct Home(TestHome);

impl Home {
    fn new() -> Self {
        let home = TestHome::new(register);
        home.write("sales.xlsx", sales_workbook());
        Self(home)
    }

    async fn read(&self, arguments: Value) -> Result<String, ToolError> {
        let mut arguments = arguments;
        arguments
            .as_object_mut()
            .unwrap()
            .entry("path")
            .or_insert_with(|| json!("~/sales.xlsx"));
        self.0
            .call("ExcelRead", arguments)
            .await
            .map(|output| output.text)
    }
}

#[tokio::test]
async fn spec_and_plan() {
    let home = Home::new();
    let spec = home.0.catalog.get("ExcelRead").unwrap().spec();
    assert_eq!(spec.risk, Risk::ReadOnly);
    assert_eq!(spec.category, ToolCategory::DataAnalytics);
    let properties = &spec.input_schema["properties"];
    for name in [
        "path",
        "operation",
        "sheet",
        "range",
        "column",
        "aggregation",
        "groupBy",
        "filter",
        "limit",
        "sortBy",
        "sortOrder",
        "lookupValue",
        "lookupColumn",
        "returnColumn",
    ] {
        assert!(properties[name].is_object(), "{name}");
    }
    let planned = home
        .0
        .plan(
            "ExcelRead",
            json!({"path": "~/sales.xlsx", "operation": "STRUCTURE"}),
        )
        .await
        .unwrap();
    assert_eq!(
        planned.plan.summary,
        "Read spreadsheet ~/sales.xlsx (STRUCTURE)"
    );
    assert_eq!(
        planned.plan.targets,
        vec![CallTarget::Path {
            path: home.0.root.join("sales.xlsx"),
            access: Access::Read,
            protected: false
        }]
    );
}

#[tokio::test]
async fn structure_lists_columns_stats_and_samples() {
    let home = Home::new();
    let output: Value =
        serde_json::from_str(&home.read(json!({"operation": "STRUCTURE"})).await.unwrap()).unwrap();
    assert_eq!(
        output,
        json!({
            "sheet": "Sales",
            "sheets": ["Sales", "Prices"],
            "rows": 6,
            "columns": ["Manager", "Region", "Revenue", "Date", "Note"],
            "numericStats": {"Revenue": {"sum": 3850.5, "avg": 770.1, "min": 50.0, "max": 1500.0}},
            "stringSamples": {
                "Manager": ["Anna", "Boris", "Vera"],
                "Region": ["North", "South"],
                "Revenue": ["n/a"],
                "Date": ["2024-01-05", "2024-01-20", "2024-02-02", "2024-02-10", "2024-03-01"],
                "Note": ["first", "big, deal", "x", "y"],
            },
        })
    );
    // Another sheet, found without regard to case; its data starts at B3.
    let output: Value = serde_json::from_str(
        &home
            .read(json!({"operation": "structure", "sheet": "prices"}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(output["columns"], json!(["Товар", "Цена"]));
    assert_eq!(output["rows"], 2);
}

#[tokio::test]
async fn query_aggregates_groups_and_sorts() {
    let home = Home::new();
    let sum = home
        .read(json!({"operation": "QUERY", "column": "Revenue", "aggregation": "SUM", "groupBy": "Manager"}))
        .await
        .unwrap();
    assert_eq!(sum, "Boris: 2300\nAnna: 1500.5\n(empty): 50\nVera: 0");

    let average = home
        .read(json!({"operation": "QUERY", "column": "revenue", "aggregation": "avg", "groupBy": "manager", "sortOrder": "ASC"}))
        .await
        .unwrap();
    assert_eq!(
        average,
        "(empty): 50\nAnna: 750.25\nBoris: 1150\nVera: (no numbers)"
    );

    // COUNT is the default with groupBy; ties keep the order of first appearance.
    let count = home
        .read(json!({"operation": "QUERY", "groupBy": "Region"}))
        .await
        .unwrap();
    assert_eq!(count, "North: 3\nSouth: 3");
    let by_name = home
        .read(json!({"operation": "QUERY", "groupBy": "Region", "sortBy": "Region", "sortOrder": "DESC"}))
        .await
        .unwrap();
    assert_eq!(by_name, "South: 3\nNorth: 3");

    // COUNT of a column counts its non-empty cells.
    let notes = home
        .read(json!({"operation": "QUERY", "column": "Note", "aggregation": "COUNT", "groupBy": "Region"}))
        .await
        .unwrap();
    assert_eq!(notes, "North: 3\nSouth: 1");

    let max = home
        .read(json!({"operation": "QUERY", "column": "Revenue", "aggregation": "MAX"}))
        .await
        .unwrap();
    assert_eq!(max, "total: 1500");
    let min = home
        .read(json!({"operation": "QUERY", "column": "Revenue", "aggregation": "MIN", "filter": "Region=north"}))
        .await
        .unwrap();
    assert_eq!(min, "total: 1200");

    let limited = home
        .read(json!({"operation": "QUERY", "column": "Revenue", "aggregation": "SUM", "groupBy": "Manager", "limit": 2}))
        .await
        .unwrap();
    assert_eq!(
        limited,
        "Boris: 2300\nAnna: 1500.5\n... 2 more groups (raise limit to see them)"
    );
}

#[tokio::test]
async fn query_filters_and_lists_rows() {
    let home = Home::new();
    let top = home
        .read(json!({"operation": "QUERY", "filter": "Revenue>500", "sortBy": "Revenue", "sortOrder": "DESC", "limit": 2}))
        .await
        .unwrap();
    assert_eq!(
        top,
        "2 of 3 matching rows:\nManager\tRegion\tRevenue\tDate\tNote\nBoris\tNorth\t1500\t2024-03-01\ty\nAnna\tNorth\t1200\t2024-01-05\tfirst"
    );
    let since = home
        .read(json!({"operation": "QUERY", "filter": "Date >= 2024-02-01", "column": "Manager", "sortBy": "Manager"}))
        .await
        .unwrap();
    assert_eq!(since, "4 of 4 matching rows:\nManager\nAnna\nBoris\nVera\n");
    let not_north = home
        .read(json!({"operation": "QUERY", "filter": "Region<>North", "aggregation": "COUNT"}))
        .await
        .unwrap();
    assert_eq!(not_north, "total: 3");
    let small = home
        .read(json!({"operation": "QUERY", "filter": "Revenue<=300.5", "column": "Revenue", "sortBy": "Revenue"}))
        .await
        .unwrap();
    assert_eq!(small, "2 of 2 matching rows:\nRevenue\n50\n300.5");
    let quoted = home
        .read(json!({"operation": "QUERY", "filter": "Note=\"big, deal\"", "column": "Manager"}))
        .await
        .unwrap();
    assert_eq!(quoted, "1 of 1 matching rows:\nManager\nAnna");
    let none = home
        .read(json!({"operation": "QUERY", "filter": "Revenue>99999"}))
        .await
        .unwrap();
    assert_eq!(none, "No rows match.");
}

#[tokio::test]
async fn reads_cells_and_ranges() {
    let home = Home::new();
    let cell = |range: &str| home.read(json!({"operation": "CELL", "range": range}));
    assert_eq!(cell("C2").await.unwrap(), "1200");
    assert_eq!(cell("$d$2").await.unwrap(), "2024-01-05");
    assert_eq!(cell("Z99").await.unwrap(), "(empty)");
    assert_eq!(cell("A1:B2").await.unwrap(), "Manager\tRegion\nAnna\tNorth");
    assert_eq!(cell("B2:A1").await.unwrap(), "Manager\tRegion\nAnna\tNorth");
    // The sheet may be named in the range; cells keep Excel's addresses when data starts at B3.
    assert_eq!(cell("Prices!C4").await.unwrap(), "55000");
    assert_eq!(cell("'Prices'!B3:C3").await.unwrap(), "Товар\tЦена");
    assert_eq!(
        home.read(json!({"operation": "CELL", "sheet": "Prices", "range": "A1:B3"}))
            .await
            .unwrap(),
        "\t\n\t\n\tТовар"
    );
}

#[tokio::test]
async fn looks_up_values() {
    let home = Home::new();
    let lookup = |value: Value, column: &str, returned: &str| {
        home.read(json!({
            "operation": "LOOKUP", "sheet": "Prices",
            "lookupValue": value, "lookupColumn": column, "returnColumn": returned,
        }))
    };
    assert_eq!(
        lookup(json!("ноутбук"), "Товар", "Цена").await.unwrap(),
        "55000"
    );
    assert_eq!(lookup(json!(990), "цена", "товар").await.unwrap(), "Мышь");
    assert_eq!(
        lookup(json!("Планшет"), "Товар", "Цена").await.unwrap(),
        "Not found: 'Планшет'"
    );
    let note = home
        .read(json!({"operation": "LOOKUP", "lookupValue": "Boris", "lookupColumn": "Manager", "returnColumn": "Note"}))
        .await
        .unwrap();
    assert_eq!(
        note, "(empty)",
        "the first match wins, and its note is empty"
    );
}

#[tokio::test]
async fn reads_csv_files_in_legacy_encodings() {
    let home = Home::new();
    let csv = "Товар;Цена;Склад\nЯблоки;10,50;Москва\nГруши;8,00;Казань\nЯблоки;1 000,25;Казань\n";
    let (bytes, _, _) = encoding_rs::WINDOWS_1251.encode(csv);
    home.0.write("prices.csv", &bytes);
    let sum = home
        .read(json!({"path": "~/prices.csv", "operation": "QUERY", "column": "Цена", "aggregation": "SUM", "groupBy": "Товар"}))
        .await
        .unwrap();
    assert_eq!(sum, "Яблоки: 1010.75\nГруши: 8");
    let cell = home
        .read(json!({"path": "~/prices.csv", "operation": "CELL", "range": "C3"}))
        .await
        .unwrap();
    assert_eq!(cell, "Казань");
}

#[tokio::test]
async fn bad_requests_get_clear_errors_before_reading() {
    let home = Home::new();
    let invalid = [
        (
            json!({"operation": "QUERY", "filter": "Revenue"}),
            "invalid filter 'Revenue'",
        ),
        (
            json!({"operation": "QUERY", "filter": ">5"}),
            "invalid filter '>5'",
        ),
        (
            json!({"operation": "QUERY", "limit": 0}),
            "limit must be at least 1",
        ),
        (
            json!({"operation": "QUERY", "limit": 5000}),
            "limit must be at most 1000",
        ),
        (
            json!({"operation": "QUERY", "aggregation": "SUM"}),
            "aggregation SUM needs a column",
        ),
        (
            json!({"operation": "CELL"}),
            "range (a cell like B5 or a range like A1:C10) is required for CELL",
        ),
        (
            json!({"operation": "CELL", "range": "B"}),
            "invalid cell reference 'B'",
        ),
        (
            json!({"operation": "CELL", "range": "A1:Z1000"}),
            "the range has 26000 cells",
        ),
        (
            json!({"operation": "LOOKUP", "lookupColumn": "A", "returnColumn": "B"}),
            "lookupValue is required for LOOKUP",
        ),
        (json!({"operation": "MERGE"}), "unknown variant"),
        (
            json!({"operation": "QUERY", "aggregation": "MEDIAN"}),
            "unknown variant",
        ),
        (json!({"operation": "QUERY", "unknown": 1}), "unknown field"),
    ];
    for (arguments, expected) in invalid {
        let error = home.read(arguments.clone()).await.unwrap_err();
        assert!(
            matches!(error, ToolError::InvalidArguments(_)),
            "{arguments}: {error:?}"
        );
        assert!(error.to_string().contains(expected), "{arguments}: {error}");
    }

    let failed = [
        (
            json!({"operation": "STRUCTURE", "sheet": "Missing"}),
            "sheet 'Missing' not found; sheets: Sales, Prices",
        ),
        (
            json!({"operation": "QUERY", "column": "Profit", "aggregation": "SUM"}),
            "column 'Profit' not found; columns: Manager, Region, Revenue, Date, Note",
        ),
        (
            json!({"operation": "QUERY", "filter": "Cost>1"}),
            "column 'Cost' not found",
        ),
        (
            json!({"operation": "QUERY", "column": "Revenue", "aggregation": "SUM", "groupBy": "Manager", "sortBy": "Note"}),
            "sortBy 'Note' must be the groupBy column or the aggregated column",
        ),
    ];
    for (arguments, expected) in failed {
        let error = home.read(arguments.clone()).await.unwrap_err();
        assert!(
            matches!(error, ToolError::Failed(_)),
            "{arguments}: {error:?}"
        );
        assert!(error.to_string().contains(expected), "{arguments}: {error}");
    }

    home.0.write("report.pdf", fixtures::pdf(&["not a table"]));
    let error = home
        .read(json!({"path": "~/report.pdf", "operation": "STRUCTURE"}))
        .await
        .unwrap_err();
    assert!(
        error.to_string().starts_with("this is not a spreadsheet"),
        "{error}"
    );
    let mut broken = sales_workbook();
    broken.truncate(broken.len() / 3);
    home.0.write("broken.xlsx", &broken);
    let error = home
        .read(json!({"path": "~/broken.xlsx", "operation": "STRUCTURE"}))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("not a valid"), "{error}");
}

#[test]
fn filters_parse_at_the_first_operator() {
    let parse = |text: &str| Condition::parse(text).unwrap();
    assert_eq!(parse("Amount>=1000").comparison, Comparison::GreaterOrEqual);
    assert_eq!(parse("Amount <> 5").comparison, Comparison::NotEqual);
    assert_eq!(parse("Amount != 5").comparison, Comparison::NotEqual);
    assert_eq!(parse("Amount == 5").comparison, Comparison::Equal);
    let with_operator_in_value = parse("Note=a<b");
    assert_eq!(
        (
            with_operator_in_value.column.as_str(),
            with_operator_in_value.comparison,
            with_operator_in_value.value.as_str()
        ),
        ("Note", Comparison::Equal, "a<b")
    );
    let empty_value = parse("Note=");
    assert!(empty_value.matches(&CellValue::Empty));
    assert!(!empty_value.matches(&CellValue::Text("x".into())));
    // Ordering comparisons never match empty cells.
    assert!(!parse("Amount<5").matches(&CellValue::Empty));
    assert!(parse("Amount<5").matches(&CellValue::Text("4,5".into())));
    assert!(parse("City>m").matches(&CellValue::Text("Paris".into())));
    // A numeric condition never matches text cells.
    assert!(!parse("Amount>5").matches(&CellValue::Text("n/a".into())));
    assert!(parse("Amount<>5").matches(&CellValue::Text("n/a".into())));
}
