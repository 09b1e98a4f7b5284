use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::fixtures::{self, Cell, TestHome, docx, paragraph};
use super::text::TEXT_CHAR_LIMIT;
use super::*;
use crate::approvals::CallTarget;
use crate::tools::Catalog;

fn catalog() -> Catalog {
    let mut builder = CatalogBuilder::default();
    register(&mut builder).unwrap();
    builder.build()
}

struct Home(TestHome);

impl std::ops::Deref for Home {
    type Target = TestHome;
    fn deref(&self) -> &TestHome {
        &self.0
    }
}

impl Home {
    fn new() -> Self {
        Self(TestHome::new(register))
    }

    async fn call(&self, tool: &str, arguments: Value) -> Result<String, ToolError> {
        self.0.call(tool, arguments).await.map(|output| output.text)
    }

    async fn extract(&self, name: &str) -> Result<String, ToolError> {
        self.call(
            "ExtractTextFromFile",
            json!({ "filePath": format!("~/{name}") }),
        )
        .await
    }
}

fn content(output: &str) -> &str {
    output.split_once("=== CONTENT ===\n").unwrap().1
}

#[tokio::test]
async fn specs_are_read_only_file_tools() {
    let catalog = catalog();
    for name in ["ExtractTextFromFile", "ReadPdfPages"] {
        let spec = catalog.get(name).unwrap().spec();
        assert_eq!(spec.risk, Risk::ReadOnly, "{name}");
        assert_eq!(spec.category, ToolCategory::Files, "{name}");
        assert!(
            spec.input_schema["properties"]["filePath"].is_object(),
            "{name}"
        );
    }
    let schema = &catalog.get("ReadPdfPages").unwrap().spec().input_schema;
    assert!(schema["properties"]["startPage"].is_object());
    assert!(schema["properties"]["endPage"].is_object());
    assert_eq!(schema["required"], json!(["filePath"]));
}

#[tokio::test]
async fn plans_name_the_resolved_file() {
    let home = Home::new();
    let path = home.write("docs/report.pdf", fixtures::pdf(&["x"]));
    let planned = home
        .catalog
        .get("ExtractTextFromFile")
        .unwrap()
        .plan(json!({"filePath": "~/docs/../docs/report.pdf"}), &home.ctx)
        .await
        .unwrap();
    assert_eq!(planned.plan.summary, "Read the text of ~/docs/report.pdf");
    assert_eq!(
        planned.plan.targets,
        vec![CallTarget::Path {
            path: path.clone(),
            access: Access::Read,
            protected: false,
        }]
    );

    let planned = home
        .catalog
        .get("ReadPdfPages")
        .unwrap()
        .plan(
            json!({"filePath": path.display().to_string(), "startPage": 2, "endPage": 4}),
            &home.ctx,
        )
        .await
        .unwrap();
    assert_eq!(planned.plan.summary, "Read pages 2-4 of ~/docs/report.pdf");

    // Protected paths are reported to the policy, not hidden.
    home.write(".ssh/notes.txt", "secret");
    let planned = home
        .catalog
        .get("ExtractTextFromFile")
        .unwrap()
        .plan(json!({"filePath": "~/.ssh/notes.txt"}), &home.ctx)
        .await
        .unwrap();
    assert!(matches!(
        planned.plan.targets[0],
        CallTarget::Path {
            protected: true,
            ..
        }
    ));
}

#[tokio::test]
async fn refuses_paths_the_sandbox_refuses_and_folders() {
    let home = Home::new();
    std::fs::create_dir_all(home.root.join("folder")).unwrap();
    let missing = home.extract("missing.pdf").await.unwrap_err();
    assert!(
        matches!(
            missing,
            ToolError::Sandbox(crate::sandbox::SandboxError::NotFound(_))
        ),
        "{missing:?}"
    );
    let outside = home
        .call("ExtractTextFromFile", json!({"filePath": "/etc/hostname"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            outside,
            ToolError::Sandbox(crate::sandbox::SandboxError::OutsideRoots { .. })
        ),
        "{outside:?}"
    );
    let folder = home.extract("folder").await.unwrap_err();
    assert_eq!(folder.to_string(), "~/folder is a folder, not a file");
}

#[tokio::test]
async fn a_path_swapped_after_planning_is_not_read() {
    let home = Home::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "outside the sandbox").unwrap();
    let path = home.write("doc.txt", "inside");
    for tool in ["ExtractTextFromFile", "ReadPdfPages"] {
        let planned = home
            .0
            .plan(tool, json!({"filePath": "~/doc.txt"}))
            .await
            .unwrap();
        // After the plan was shown, the file becomes a link to a file outside the roots.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&secret, &path).unwrap();
        let error = planned.run(home.ctx.clone()).await.unwrap_err();
        assert!(
            matches!(
                error,
                ToolError::Sandbox(crate::sandbox::SandboxError::OutsideRoots { .. })
            ),
            "{tool}: {error:?}"
        );
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "inside").unwrap();
    }

    // A link to another file inside the roots is a different file than the one planned.
    home.write("other.txt", "other");
    let planned = home
        .0
        .plan("ExtractTextFromFile", json!({"filePath": "~/doc.txt"}))
        .await
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(home.root.join("other.txt"), &path).unwrap();
    let error = planned.run(home.ctx.clone()).await.unwrap_err();
    assert!(matches!(error, ToolError::Conflict(_)), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("now leads to ~/other.txt instead of ~/doc.txt"),
        "{error}"
    );
}

#[tokio::test]
async fn pipes_and_devices_are_not_read() {
    let home = Home::new();
    let fifo = home.root.join("pipe.txt");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let error = home.extract("pipe.txt").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "~/pipe.txt is not a regular file (a pipe or device), so it is not read"
    );
    // Opening it directly neither blocks nor reads.
    let error = super::open_source(&home.ctx.sandbox, &fifo).unwrap_err();
    assert!(error.to_string().contains("not a regular file"), "{error}");
}

#[tokio::test]
async fn extracts_pdf_pages_in_order() {
    let home = Home::new();
    home.write(
        "report.pdf",
        fixtures::pdf(&["Quarterly report\nRevenue grew 10%", "Second page (final)"]),
    );
    let output = home.extract("report.pdf").await.unwrap();
    assert!(
        output.starts_with("=== METADATA ===\nFilename: report.pdf\nFormat: PDF\nPages: 2\n"),
        "{output}"
    );
    assert!(!output.contains("Truncated"), "{output}");
    assert_eq!(
        content(&output),
        "--- Page 1 ---\nQuarterly report\nRevenue grew 10%\n\n--- Page 2 ---\nSecond page (final)"
    );
}

#[tokio::test]
async fn format_is_judged_by_content_not_name() {
    let home = Home::new();
    home.write("misnamed.txt", fixtures::pdf(&["I am a PDF"]));
    let output = home.extract("misnamed.txt").await.unwrap();
    assert!(output.contains("Format: PDF"), "{output}");
    assert!(content(&output).contains("I am a PDF"));

    // Text that mentions the PDF header is still text.
    home.write(
        "notes.md",
        "PDF files start with %PDF-1.7 and end with %%EOF.",
    );
    let output = home.extract("notes.md").await.unwrap();
    assert!(output.contains("Format: text (UTF-8)"), "{output}");
    // Junk before the header is accepted for a file named .pdf.
    let mut junk = b"\r\n".to_vec();
    junk.extend(fixtures::pdf(&["after junk"]));
    home.write("junk.pdf", junk);
    assert!(content(&home.extract("junk.pdf").await.unwrap()).contains("after junk"));
}

#[tokio::test]
async fn extracts_word_paragraphs_tables_and_specials() {
    let home = Home::new();
    let body = [
        paragraph("Договор № 7"),
        // Tabs, breaks and entities inside runs; tab stops in properties are not text.
        r#"<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr><w:r><w:t>A</w:t><w:tab/><w:t>B &amp; C</w:t><w:br/><w:t>next line</w:t></w:r></w:p>"#.to_owned(),
        // Tracked deletions and field codes are not text.
        r#"<w:p><w:del><w:r><w:delText>removed</w:delText></w:r></w:del><w:r><w:instrText>PAGE</w:instrText><w:t>kept</w:t></w:r></w:p>"#.to_owned(),
        // A text box with its fallback copy: read once.
        r#"<w:p><w:r><mc:AlternateContent><mc:Choice><w:t>boxed</w:t></mc:Choice><mc:Fallback><w:t>boxed</w:t></mc:Fallback></mc:AlternateContent></w:r></w:p>"#.to_owned(),
        r#"<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Name</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Qty</w:t></w:r></w:p></w:tc></w:tr><w:tr><w:tc><w:p><w:r><w:t>Apples</w:t></w:r></w:p><w:p><w:r><w:t>green</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>3</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#.to_owned(),
        "<w:p/>".to_owned(),
        paragraph("The end."),
    ]
    .concat();
    home.write("contract.docx", docx(&body));
    let output = home.extract("contract.docx").await.unwrap();
    assert!(output.contains("Format: Word document"), "{output}");
    assert_eq!(
        content(&output),
        "Договор № 7\nA\tB & C\nnext line\nkept\nboxed\nName\tQty\nApples green\t3\n\nThe end."
    );
}

#[tokio::test]
async fn extracts_slides_in_presentation_order() {
    let home = Home::new();
    // Slide parts 1 and 2, but the presentation shows part 2 first.
    home.write(
        "deck.pptx",
        fixtures::pptx(
            &["Later slide", "Title slide\nSubtitle &amp; more"],
            &[1, 0],
        ),
    );
    let output = home.extract("deck.pptx").await.unwrap();
    assert!(
        output.contains("Format: PowerPoint presentation\nSlides: 2"),
        "{output}"
    );
    assert_eq!(
        content(&output),
        "--- Slide 1 ---\nTitle slide\nSubtitle & more\n\n--- Slide 2 ---\nLater slide"
    );
}

#[tokio::test]
async fn extracts_workbooks_sheet_by_sheet() {
    let home = Home::new();
    let workbook = fixtures::xlsx(&[
        (
            "Sales",
            (0, 0),
            vec![
                vec![
                    Cell::Text("Month"),
                    Cell::Text("Revenue"),
                    Cell::Text("Date"),
                ],
                vec![
                    Cell::Text("Январь"),
                    Cell::Number(1500.0),
                    Cell::Date(2024, 1, 31),
                ],
                vec![Cell::Text("Февраль"), Cell::Number(99.5), Cell::Blank],
                vec![Cell::Text("Total"), Cell::Formula("=SUM(B2:B3)", 1599.5)],
            ],
        ),
        ("Notes", (2, 1), vec![vec![Cell::Text("starts at B3")]]),
    ]);
    home.write("sales.xlsx", workbook);
    let output = home.extract("sales.xlsx").await.unwrap();
    assert!(
        output.contains("Format: spreadsheet\nSheets: 2"),
        "{output}"
    );
    assert_eq!(
        content(&output),
        "--- Sheet: Sales ---\nMonth\tRevenue\tDate\nЯнварь\t1500\t2024-01-31\nФевраль\t99.5\nTotal\t1599.5\n\n--- Sheet: Notes ---\nstarts at B3"
    );
}

#[tokio::test]
async fn extracts_open_document_spreadsheets() {
    let home = Home::new();
    home.write(
        "stock.ods",
        fixtures::ods(
            "Склад",
            &[&["Товар", "Остаток"], &["Яблоки", "12.5"], &["Груши", "3"]],
        ),
    );
    let output = home.extract("stock.ods").await.unwrap();
    assert_eq!(
        content(&output),
        "--- Sheet: Склад ---\nТовар\tОстаток\nЯблоки\t12.5\nГруши\t3"
    );
}

#[tokio::test]
async fn extracts_text_in_any_encoding() {
    let home = Home::new();
    home.write("notes.md", "# Заметки\n\n- пункт *один*\n");
    let output = home.extract("notes.md").await.unwrap();
    assert!(output.contains("Format: text (UTF-8)"), "{output}");
    assert_eq!(content(&output), "# Заметки\n\n- пункт *один*");

    let csv = "Товар;Цена;Количество\nЯблоки;10,50;3\nГруши;8,00;5\nЧерешня свежая;120,00;1\n";
    let (bytes, _, _) = encoding_rs::WINDOWS_1251.encode(csv);
    home.write("prices.csv", &bytes);
    let output = home.extract("prices.csv").await.unwrap();
    assert!(output.contains("Format: text (windows-1251)"), "{output}");
    assert_eq!(content(&output), csv.trim_end());
}

#[tokio::test]
async fn long_files_are_cut_at_the_limit_and_flagged() {
    let home = Home::new();
    let long = "ж".repeat(TEXT_CHAR_LIMIT + 10_000);
    home.write("long.txt", &long);
    let output = home.extract("long.txt").await.unwrap();
    assert!(
        output.contains("Truncated: true (preview limited to 50000 characters)"),
        "{output:.300}"
    );
    assert_eq!(content(&output).chars().count(), TEXT_CHAR_LIMIT);

    // A text exactly at the limit is whole.
    home.write("exact.txt", "a".repeat(TEXT_CHAR_LIMIT));
    let output = home.extract("exact.txt").await.unwrap();
    assert!(!output.contains("Truncated"));
    assert_eq!(content(&output).len(), TEXT_CHAR_LIMIT);

    // A long PDF stops early and points to ReadPdfPages.
    let page = "word ".repeat(400);
    let pages: Vec<&str> = std::iter::repeat_n(page.as_str(), 40).collect();
    home.write("book.pdf", fixtures::pdf(&pages));
    let output = home.extract("book.pdf").await.unwrap();
    assert!(output.contains("Pages: 40"), "{output:.300}");
    assert!(
        output.contains("use ReadPdfPages to read the rest page by page"),
        "{output:.400}"
    );
    // Cut at the limit (a trailing space of the cut page is trimmed).
    let shown = content(&output).chars().count();
    assert!(
        (TEXT_CHAR_LIMIT - 1..=TEXT_CHAR_LIMIT).contains(&shown),
        "{shown}"
    );
    assert!(!content(&output).contains("--- Page 40 ---"));
}

#[tokio::test]
async fn unreadable_files_get_clear_errors() {
    let home = Home::new();
    home.write(
        "image.png",
        [
            0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, b'I', b'H', b'D', b'R',
        ],
    );
    let error = home.extract("image.png").await.unwrap_err().to_string();
    assert!(error.starts_with("the file is binary, not text"), "{error}");

    let mut ole = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
    ole.resize(512, 0);
    home.write("old.doc", &ole);
    let error = home.extract("old.doc").await.unwrap_err().to_string();
    assert!(error.contains("old binary Office file"), "{error}");

    home.write("photos.zip", fixtures::package(&[("a.txt", "hello")]));
    let error = home.extract("photos.zip").await.unwrap_err().to_string();
    assert!(
        error.contains("ZIP archive that is not a Word, PowerPoint or Excel document"),
        "{error}"
    );

    home.write("broken.pdf", b"%PDF-1.7\nthis is not really a pdf\n%%EOF");
    let error = home.extract("broken.pdf").await.unwrap_err().to_string();
    assert!(
        error.starts_with("the file is not a valid PDF document"),
        "{error}"
    );

    let mut truncated = docx(&paragraph("hello"));
    truncated.truncate(truncated.len() / 2);
    home.write("cut.docx", &truncated);
    let error = home.extract("cut.docx").await.unwrap_err().to_string();
    assert!(error.contains("not a valid"), "{error}");

    home.write("empty.txt", "");
    let output = home.extract("empty.txt").await.unwrap();
    assert!(content(&output).starts_with("(no text found"), "{output}");
}

#[tokio::test]
async fn reads_pdf_page_ranges() {
    let home = Home::new();
    home.write(
        "book.pdf",
        fixtures::pdf(&[
            "Contents",
            "Chapter one",
            "Chapter two",
            "Chapter three",
            "Index",
        ]),
    );
    let read = |arguments: Value| async { home.call("ReadPdfPages", arguments).await };

    // startPage alone reads one page; the default start is page 1.
    let first = read(json!({"filePath": "~/book.pdf"})).await.unwrap();
    assert_eq!(
        first,
        "=== PDF CONTENT (Pages 1-1 of 5) ===\n--- Page 1 ---\nContents"
    );
    let range = read(json!({"filePath": "~/book.pdf", "startPage": 2, "endPage": 3}))
        .await
        .unwrap();
    assert_eq!(
        range,
        "=== PDF CONTENT (Pages 2-3 of 5) ===\n--- Page 2 ---\nChapter one\n\n--- Page 3 ---\nChapter two"
    );
    let past_end = read(json!({"filePath": "~/book.pdf", "startPage": 4, "endPage": 99}))
        .await
        .unwrap();
    assert!(past_end.starts_with("=== PDF CONTENT (Pages 4-5 of 5) ===\n(endPage 99 is past the end; the document has 5 pages)\n"), "{past_end}");
    assert!(past_end.ends_with("--- Page 5 ---\nIndex"), "{past_end}");

    let out_of_range = read(json!({"filePath": "~/book.pdf", "startPage": 6}))
        .await
        .unwrap_err();
    assert_eq!(
        out_of_range.to_string(),
        "page 6 is out of range: the document has 5 pages"
    );
    let zero = read(json!({"filePath": "~/book.pdf", "startPage": 0}))
        .await
        .unwrap_err();
    assert!(matches!(zero, ToolError::InvalidArguments(_)), "{zero:?}");
    let backwards = read(json!({"filePath": "~/book.pdf", "startPage": 3, "endPage": 2}))
        .await
        .unwrap_err();
    assert_eq!(
        backwards.to_string(),
        "invalid arguments: endPage (2) is before startPage (3)"
    );
    let negative = read(json!({"filePath": "~/book.pdf", "startPage": -1}))
        .await
        .unwrap_err();
    assert!(
        matches!(negative, ToolError::InvalidArguments(_)),
        "{negative:?}"
    );

    home.write("notes.txt", "plain");
    let not_pdf = read(json!({"filePath": "~/notes.txt"})).await.unwrap_err();
    assert_eq!(not_pdf.to_string(), "this is not a PDF file");
}

#[tokio::test]
async fn pages_without_text_are_reported() {
    let home = Home::new();
    home.write("scan.pdf", fixtures::pdf(&["", "", "words"]));
    let output = home
        .call(
            "ReadPdfPages",
            json!({"filePath": "~/scan.pdf", "startPage": 1, "endPage": 2}),
        )
        .await
        .unwrap();
    assert!(
        output.contains("Warning: no text on these pages"),
        "{output}"
    );
    let output = home
        .call(
            "ReadPdfPages",
            json!({"filePath": "~/scan.pdf", "startPage": 2, "endPage": 3}),
        )
        .await
        .unwrap();
    assert!(
        output.contains("--- Page 2 ---\n(no text on this page)\n\n--- Page 3 ---\nwords"),
        "{output}"
    );
}

#[tokio::test]
async fn blocking_work_stops_on_cancel_and_timeout() {
    async fn spin(
        cancel: &CancellationToken,
        limit: Duration,
    ) -> (Result<(), ToolError>, Arc<AtomicBool>) {
        let saw_stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&saw_stop);
        let result = run_blocking(cancel, limit, move |stop| {
            loop {
                if let Err(error) = stop.check() {
                    flag.store(true, Ordering::SeqCst);
                    return Err(error);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
        .await;
        (result, saw_stop)
    }
    async fn observed(flag: &AtomicBool) -> bool {
        for _ in 0..200 {
            if flag.load(Ordering::SeqCst) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    crate::tasks::spawn_in_test(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        trigger.cancel();
    });
    let (result, saw_stop) = spin(&cancel, Duration::from_secs(30)).await;
    assert_eq!(result, Err(ToolError::Cancelled));
    assert!(observed(&saw_stop).await, "the worker was told to stop");

    let (result, saw_stop) = spin(&CancellationToken::new(), Duration::from_millis(50)).await;
    let error = result.unwrap_err().to_string();
    assert!(
        error.starts_with("reading the file took longer than 0 seconds"),
        "{error}"
    );
    assert!(observed(&saw_stop).await, "the worker was told to stop");

    let panicked: Result<(), ToolError> =
        run_blocking(&CancellationToken::new(), Duration::from_secs(5), |_| {
            panic!("parser bug")
        })
        .await;
    assert_eq!(
        panicked,
        Err(ToolError::Failed(
            "the file could not be read: the parser failed on its contents".into()
        ))
    );
}
