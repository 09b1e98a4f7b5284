//! Test fixtures: real files of each format, built in code so no binary is committed.
//!
//! PDFs are written with lopdf (re-exported by pdf-extract) using the standard Helvetica font
//! and WinAnsi encoding, the way simple PDF producers do; Word and PowerPoint packages are
//! written with `zip` as complete minimal packages (content types, relationships, parts) that
//! Office opens; workbooks with rust_xlsxwriter.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Cursor, Write};
use std::time::Duration;

use pdf_extract::content::{Content, Operation};
use pdf_extract::{Document, Object, Stream, dictionary};
use tokio_util::sync::CancellationToken;
use zip::write::SimpleFileOptions;

use super::source::SourceFile;
use super::{DocumentError, extract};
use crate::worker::{WorkerError, run_worker};

/// The text of `bytes` saved as a file called `name`, extracted on a parse worker as the
/// daemon's `ExtractTextFromFile` does (with its 60-second limit); rendered as the tool shows
/// it.
pub async fn extract_file(name: &str, bytes: &[u8]) -> Result<String, WorkerError<DocumentError>> {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let source = SourceFile::from_file(std::fs::File::open(&path).unwrap(), &path).unwrap();
    let shown = name.to_owned();
    run_worker(
        &CancellationToken::new(),
        Duration::from_secs(60),
        move |stop| extract(&source, stop).map(|extraction| extraction.render(&shown)),
    )
    .await
}

/// A PDF with one page per entry; lines of an entry become lines of text on the page.
pub fn pdf(pages: &[&str]) -> Vec<u8> {
    let mut document = Document::with_version("1.5");
    let pages_id = document.new_object_id();
    let font_id = document.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = document.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
    });
    let mut kids = Vec::new();
    for text in pages {
        let mut operations = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("Td", vec![72.into(), 760.into()]),
        ];
        for (index, line) in text.lines().enumerate() {
            if index > 0 {
                operations.push(Operation::new("Td", vec![0.into(), (-16).into()]));
            }
            operations.push(Operation::new("Tj", vec![Object::string_literal(line)]));
        }
        operations.push(Operation::new("ET", vec![]));
        let content = Content { operations };
        let content_id =
            document.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = document.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        });
        kids.push(Object::from(page_id));
    }
    let count = i64::try_from(kids.len()).unwrap();
    document.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = document.add_object(dictionary! {
        "Type" => "Catalog",
        "Pages" => pages_id,
    });
    document.trailer.set("Root", catalog_id);
    let mut bytes = Vec::new();
    document.save_to(&mut bytes).unwrap();
    bytes
}

/// A ZIP package with the given parts.
pub fn package(parts: &[(&str, &str)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, content) in parts {
        writer
            .start_file(*name, SimpleFileOptions::default())
            .unwrap();
        writer.write_all(content.as_bytes()).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

const WORD_NAMESPACES: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006""#;

/// A Word document whose body is `body` (WordprocessingML inside `<w:body>`).
pub fn docx(body: &str) -> Vec<u8> {
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {WORD_NAMESPACES}><w:body>{body}<w:sectPr/></w:body></w:document>"#
    );
    package(&[
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#,
        ),
        (
            "_rels/.rels",
            r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#,
        ),
        ("word/document.xml", &document),
    ])
}

/// A Word paragraph of one run.
pub fn paragraph(text: &str) -> String {
    format!(r#"<w:p><w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>"#)
}

/// An OpenDocument spreadsheet with one sheet; cells that parse as numbers are numbers.
pub fn ods(sheet: &str, rows: &[&[&str]]) -> Vec<u8> {
    ods_table(sheet, &ods_rows(rows))
}

/// The rows of [`ods`] as table XML.
fn ods_rows(rows: &[&[&str]]) -> String {
    let mut table = String::new();
    for row in rows {
        table.push_str("<table:table-row>");
        for cell in *row {
            if cell.parse::<f64>().is_ok() {
                table.push_str(&format!(
                    r#"<table:table-cell office:value-type="float" office:value="{cell}"><text:p>{cell}</text:p></table:table-cell>"#
                ));
            } else {
                table.push_str(&format!(
                    r#"<table:table-cell office:value-type="string"><text:p>{cell}</text:p></table:table-cell>"#
                ));
            }
        }
        table.push_str("</table:table-row>");
    }
    table
}

/// An OpenDocument spreadsheet with one sheet whose rows are `table` (table XML).
pub fn ods_table(sheet: &str, table: &str) -> Vec<u8> {
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"><office:body><office:spreadsheet><table:table table:name="{sheet}">{table}</table:table></office:spreadsheet></office:body></office:document-content>"#
    );
    package(&[
        ("mimetype", "application/vnd.oasis.opendocument.spreadsheet"),
        (
            "META-INF/manifest.xml",
            r#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>"#,
        ),
        ("content.xml", &content),
    ])
}

/// A presentation whose slides hold `slides` (one text box each, lines as paragraphs), listed
/// in the presentation in `order` (indexes into `slides`).
pub fn pptx(slides: &[&str], order: &[usize]) -> Vec<u8> {
    let mut parts: Vec<(String, String)> = Vec::new();
    let mut overrides = String::new();
    let mut relationships = String::new();
    for (index, text) in slides.iter().enumerate() {
        let number = index + 1;
        let paragraphs: String = text
            .lines()
            .map(|line| format!("<a:p><a:r><a:t>{line}</a:t></a:r></a:p>"))
            .collect();
        parts.push((
            format!("ppt/slides/slide{number}.xml"),
            format!(
                r#"<?xml version="1.0" encoding="UTF-8"?><p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree><p:sp><p:txBody><a:bodyPr/>{paragraphs}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>"#
            ),
        ));
        overrides.push_str(&format!(
            r#"<Override PartName="/ppt/slides/slide{number}.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/>"#
        ));
        relationships.push_str(&format!(
            r#"<Relationship Id="rId{}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide{number}.xml"/>"#,
            number + 10
        ));
    }
    let slide_ids: String = order
        .iter()
        .enumerate()
        .map(|(position, index)| {
            format!(
                r#"<p:sldId id="{}" r:id="rId{}"/>"#,
                256 + position,
                index + 11
            )
        })
        .collect();
    parts.push((
        "[Content_Types].xml".into(),
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>{overrides}</Types>"#
        ),
    ));
    parts.push((
        "_rels/.rels".into(),
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/></Relationships>"#.into(),
    ));
    parts.push((
        "ppt/_rels/presentation.xml.rels".into(),
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{relationships}</Relationships>"#
        ),
    ));
    parts.push((
        "ppt/presentation.xml".into(),
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><p:sldIdLst>{slide_ids}</p:sldIdLst></p:presentation>"#
        ),
    ));
    let borrowed: Vec<(&str, &str)> = parts
        .iter()
        .map(|(name, content)| (name.as_str(), content.as_str()))
        .collect();
    package(&borrowed)
}

/// A workbook cell for [`xlsx`].
#[derive(Debug, Clone)]
pub enum Cell {
    /// Text.
    Text(&'static str),
    /// A number.
    Number(f64),
    /// A date (year, month, day).
    Date(u16, u8, u8),
    /// A formula with its cached result.
    Formula(&'static str, f64),
    /// Nothing.
    Blank,
}

/// A sheet for [`xlsx`]: its name, where its rows start (row, column), and the rows.
pub type SheetSpec<'a> = (&'a str, (u32, u16), Vec<Vec<Cell>>);

/// An `.xlsx` workbook with the given sheets.
pub fn xlsx(sheets: &[SheetSpec<'_>]) -> Vec<u8> {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let date_format = rust_xlsxwriter::Format::new().set_num_format("yyyy-mm-dd");
    for (name, (origin_row, origin_column), rows) in sheets {
        let sheet = workbook.add_worksheet();
        sheet.set_name(*name).unwrap();
        for (row_index, row) in rows.iter().enumerate() {
            let row_number = origin_row + u32::try_from(row_index).unwrap();
            for (column_index, cell) in row.iter().enumerate() {
                let column = origin_column + u16::try_from(column_index).unwrap();
                match cell {
                    Cell::Text(text) => {
                        sheet.write_string(row_number, column, *text).unwrap();
                    }
                    Cell::Number(value) => {
                        sheet.write_number(row_number, column, *value).unwrap();
                    }
                    Cell::Date(year, month, day) => {
                        let date =
                            rust_xlsxwriter::ExcelDateTime::from_ymd(*year, *month, *day).unwrap();
                        sheet
                            .write_datetime_with_format(row_number, column, &date, &date_format)
                            .unwrap();
                    }
                    Cell::Formula(formula, result) => {
                        let formula =
                            rust_xlsxwriter::Formula::new(*formula).set_result(result.to_string());
                        sheet.write_formula(row_number, column, formula).unwrap();
                    }
                    Cell::Blank => {}
                }
            }
        }
    }
    workbook.save_to_buffer().unwrap()
}

/// One BIFF record: type, length, data.
pub fn biff(kind: u16, data: &[u8]) -> Vec<u8> {
    let mut record = kind.to_le_bytes().to_vec();
    record.extend(u16::try_from(data.len()).unwrap().to_le_bytes());
    record.extend(data);
    record
}

/// A NUMBER record (a cell holding `value`).
pub fn xls_number(row: u16, column: u16, value: f64) -> Vec<u8> {
    let mut data = [row.to_le_bytes(), column.to_le_bytes(), [0, 0]].concat();
    data.extend(value.to_le_bytes());
    biff(0x0203, &data)
}

/// A LABELSST record (a cell holding shared string `index`).
pub fn xls_shared_label(row: u16, column: u16, index: u32) -> Vec<u8> {
    let mut data = [row.to_le_bytes(), column.to_le_bytes(), [0, 0]].concat();
    data.extend(index.to_le_bytes());
    biff(0x00FD, &data)
}

/// A BIFF8 string's flags and characters: one byte each when all are ASCII, else UTF-16.
fn biff_characters(text: &str) -> (usize, Vec<u8>) {
    if text.is_ascii() {
        (text.len(), [&[0u8][..], text.as_bytes()].concat())
    } else {
        let units: Vec<u16> = text.encode_utf16().collect();
        let mut bytes = vec![1u8];
        bytes.extend(units.iter().flat_map(|unit| unit.to_le_bytes()));
        (units.len(), bytes)
    }
}

/// A BIFF8 workbook stream: shared `strings`, then each sheet (a name and its records between
/// its BOF and EOF); `positions` may change where the `BoundSheet8` records say they start.
pub fn xls_stream(
    strings: &[&str],
    sheets: &[(&str, Vec<Vec<u8>>)],
    positions: Option<fn(Vec<u32>) -> Vec<u32>>,
) -> Vec<u8> {
    let bof = |kind: u16| {
        biff(
            0x0809,
            &[[0x00, 0x06], kind.to_le_bytes(), [0; 2], [0; 2]].concat(),
        )
    };
    let eof = biff(0x000A, &[]);
    let mut globals = bof(0x0005);
    if !strings.is_empty() {
        let count = u32::try_from(strings.len()).unwrap().to_le_bytes();
        let mut data = [count, count].concat();
        for string in strings {
            let (count, characters) = biff_characters(string);
            data.extend(u16::try_from(count).unwrap().to_le_bytes());
            data.extend(characters);
        }
        globals.extend(biff(0x00FC, &data));
    }
    let bound = |name: &str, position: u32| {
        let (count, characters) = biff_characters(name);
        let mut data = position.to_le_bytes().to_vec();
        data.extend([0, 0, u8::try_from(count).unwrap()]);
        data.extend(characters);
        biff(0x0085, &data)
    };
    let globals_length: usize = globals.len()
        + sheets
            .iter()
            .map(|(name, _)| bound(name, 0).len())
            .sum::<usize>()
        + eof.len();
    let bodies: Vec<Vec<u8>> = sheets
        .iter()
        .map(|(_, records)| {
            [vec![bof(0x0010)], records.clone(), vec![eof.clone()]]
                .concat()
                .concat()
        })
        .collect();
    let mut starts = Vec::new();
    let mut position = globals_length;
    for body in &bodies {
        starts.push(u32::try_from(position).unwrap());
        position += body.len();
    }
    if let Some(change) = positions {
        starts = change(starts);
    }
    for ((name, _), start) in sheets.iter().zip(starts) {
        globals.extend(bound(name, start));
    }
    globals.extend(eof);
    [globals, bodies.concat()].concat()
}

/// An `.xls` file: an OLE container holding `stream` as its `Workbook`.
pub fn xls_container(stream: &[u8]) -> Vec<u8> {
    let mut container =
        cfb::CompoundFile::create_with_version(cfb::Version::V3, Cursor::new(Vec::new())).unwrap();
    container
        .create_stream("/Workbook")
        .unwrap()
        .write_all(stream)
        .unwrap();
    container.flush().unwrap();
    container.into_inner().into_inner()
}
