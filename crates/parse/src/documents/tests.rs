//! The documents' bounds through the whole reader, as the daemon's `ExtractTextFromFile` runs
//! it (on a parse worker): broken pages, grids that would not fit in memory, formats judged by
//! their contents. (The tool's own behaviour, paths and plans are tested in souz-core.)

use std::path::{Path, PathBuf};

use super::fixtures::{self, docx, extract_file};
use super::source::SourceFile;
use super::spreadsheet::SpreadsheetFormat;
use super::*;

fn content(output: &str) -> &str {
    output.split_once("=== CONTENT ===\n").unwrap().1
}

#[tokio::test]
async fn a_page_that_breaks_the_parser_costs_only_that_page() {
    // Without a MediaBox pdf-extract panics on every page; the panic stays inside the page.
    let mut document = pdf_extract::Document::load_mem(&fixtures::pdf(&["one", "two"])).unwrap();
    let pages = document
        .catalog()
        .unwrap()
        .get(b"Pages")
        .unwrap()
        .as_reference()
        .unwrap();
    document
        .get_object_mut(pages)
        .unwrap()
        .as_dict_mut()
        .unwrap()
        .remove(b"MediaBox");
    let mut bytes = Vec::new();
    document.save_to(&mut bytes).unwrap();
    let output = extract_file("no-media-box.pdf", &bytes).await.unwrap();
    assert_eq!(
        content(&output),
        "--- Page 1 ---\n(could not extract text: the page is malformed)\n\n--- Page 2 ---\n(could not extract text: the page is malformed)"
    );
}

#[test]
fn detects_kinds_from_contents() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let detect = |path: &Path| {
        let file = std::fs::File::open(path).unwrap();
        DocumentKind::detect(&SourceFile::from_file(file, path).unwrap()).unwrap()
    };
    assert_eq!(
        detect(&write("a.bin", &fixtures::pdf(&["x"]))),
        DocumentKind::Pdf
    );
    assert_eq!(detect(&write("a", &docx(""))), DocumentKind::Word);
    assert_eq!(
        detect(&write("b", &fixtures::pptx(&["x"], &[0]))),
        DocumentKind::PowerPoint
    );
    assert_eq!(
        detect(&write("c", &fixtures::xlsx(&[("S", (0, 0), vec![])]))),
        DocumentKind::Spreadsheet(SpreadsheetFormat::Xlsx)
    );
    let ods = fixtures::package(&[
        ("mimetype", "application/vnd.oasis.opendocument.spreadsheet"),
        ("content.xml", "<x/>"),
    ]);
    assert_eq!(
        detect(&write("d", &ods)),
        DocumentKind::Spreadsheet(SpreadsheetFormat::Ods)
    );
    let odt = fixtures::package(&[
        ("mimetype", "application/vnd.oasis.opendocument.text"),
        ("content.xml", "<x/>"),
    ]);
    assert_eq!(detect(&write("e", &odt)), DocumentKind::OtherArchive);
    assert_eq!(detect(&write("f.txt", b"hello")), DocumentKind::Text);
}

/// A workbook of two cells at opposite corners of Excel's grid (1,048,576 × 16,384): a dense
/// copy of that sheet would need hundreds of gigabytes, which aborts the process instead of
/// failing the call.
#[tokio::test]
async fn a_sheet_spanning_the_whole_grid_is_refused_not_allocated() {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.write_string(0, 0, "corner").unwrap();
    sheet.write_string(1_048_575, 16_383, "far corner").unwrap();
    let bytes = workbook.save_to_buffer().unwrap();
    let error = extract_file("span.xlsx", &bytes)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("too large"), "{error}");
}

/// OpenDocument sheets are expanded by calamine when the file opens (repeated rows and cells
/// included): under a kilobyte can ask for 98 million cells (12 GiB), so they are measured
/// first; padding without values, as spreadsheet programs write it, still reads.
#[tokio::test]
async fn open_document_sheets_repeated_past_the_grid_bound_are_refused_before_they_expand() {
    let value =
        r#"<table:table-cell office:value-type="string"><text:p>x</text:p></table:table-cell>"#;
    let fill = fixtures::ods_table(
        "S",
        r#"<table:table-row table:number-rows-repeated="6000"><table:table-cell table:number-columns-repeated="16384" office:value-type="string"><text:p>x</text:p></table:table-cell></table:table-row>"#,
    );
    let corner = fixtures::ods_table(
        "S",
        &format!(
            r#"<table:table-row>{value}</table:table-row><table:table-row table:number-rows-repeated="1048574"><table:table-cell/></table:table-row><table:table-row><table:table-cell table:number-columns-repeated="16383"/>{value}</table:table-row>"#
        ),
    );
    let padded = fixtures::ods_table(
        "S",
        r#"<table:table-row><table:table-cell office:value-type="string"><text:p>kept</text:p></table:table-cell><table:table-cell table:number-columns-repeated="1023"/></table:table-row><table:table-row table:number-rows-repeated="4000"><table:table-cell table:number-columns-repeated="1024"/></table:table-row>"#,
    );
    // Five sheets of 2,000 × 2,000 each pass the sheet bound; calamine expands them all at
    // once, so the workbook as a whole is measured too.
    let sheet = format!(
        r#"<table:table-row>{value}</table:table-row><table:table-row table:number-rows-repeated="1998"><table:table-cell/></table:table-row><table:table-row><table:table-cell table:number-columns-repeated="1999"/>{value}</table:table-row>"#
    );
    let sheets = (2..=5).fold(sheet.clone(), |xml, number| {
        format!(r#"{xml}</table:table><table:table table:name="S{number}">{sheet}"#)
    });
    let sheets = fixtures::ods_table("S1", &sheets);
    for (name, bytes) in [
        ("fill.ods", fill),
        ("corner.ods", corner),
        ("sheets.ods", sheets),
    ] {
        let error = extract_file(name, &bytes).await.unwrap_err().to_string();
        assert!(error.contains("too large"), "{name}: {error}");
    }
    let output = extract_file("padded.ods", &padded).await.unwrap();
    assert_eq!(content(&output), "--- Sheet: S ---\nkept", "{output}");
}
