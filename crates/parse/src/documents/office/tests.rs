//! The hostile Office corpus: zip bombs (lying and honest), a crowded archive, deep nesting,
//! a huge attribute, a million siblings and a presentation listing a million slides. Each is
//! refused with a clear error or read within bounds of time and peak memory, through the same
//! path `ExtractTextFromFile` takes.

use std::io::{Cursor, Write};
use std::time::{Duration, Instant};

use flate2::{Compress, Compression, FlushCompress};
use zip::write::SimpleFileOptions;

use crate::documents::fixtures::{docx, package, paragraph, pptx};
use crate::documents::source::SourceFile;
use crate::documents::{DocumentError, extract};
use crate::worker::Stop;

/// Time one file may take, in a debug build on a busy machine.
const FILE_BOUND: Duration = Duration::from_secs(60);
/// Growth of the test process's peak resident memory allowed for one file.
const MEMORY_BOUND_KIB: u64 = 768 << 10;

/// The peak resident memory so far, in KiB (0 where `/proc` does not say).
fn peak_memory_kib() -> u64 {
    crate::testing::peak_memory_kib().unwrap_or(0)
}

/// Reads `bytes` as `ExtractTextFromFile` does; the text, or why not; checks the bounds.
fn read(name: &str, bytes: &[u8]) -> Result<String, DocumentError> {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let source = SourceFile::from_file(std::fs::File::open(&path).unwrap(), &path).unwrap();
    let before = peak_memory_kib();
    let started = Instant::now();
    let outcome = extract(&source, &Stop::default()).map(|extraction| extraction.content.text);
    let elapsed = started.elapsed();
    let grown = peak_memory_kib().saturating_sub(before);
    assert!(elapsed < FILE_BOUND, "{name}: took {elapsed:?}");
    assert!(
        grown < MEMORY_BOUND_KIB,
        "{name}: peak memory grew by {} MiB",
        grown >> 10
    );
    eprintln!(
        "{name}: {} in {elapsed:?}, peak grew {} MiB",
        match &outcome {
            Ok(text) => format!("read {} chars", text.len()),
            Err(error) => format!("refused ({error})"),
        },
        grown >> 10
    );
    outcome
}

/// Raw deflate of `mib` MiB of zeros, built from one compressed MiB repeated.
fn deflated_zeros(mib: usize) -> Vec<u8> {
    let zeros = vec![0u8; 1 << 20];
    let mut compress = Compress::new(Compression::best(), false);
    let mut block = |flush| {
        let mut out = Vec::with_capacity(64 << 10);
        compress.compress_vec(&zeros, &mut out, flush).unwrap();
        out
    };
    let first = block(FlushCompress::Sync);
    let repeated = block(FlushCompress::Sync);
    let mut bytes = first;
    for _ in 1..mib {
        bytes.extend(&repeated);
    }
    bytes.extend([0x03, 0x00]);
    bytes
}

/// A ZIP of one deflated entry `name` whose headers declare `declared` bytes inflated.
fn one_entry_zip(name: &str, deflated: &[u8], declared: u32) -> Vec<u8> {
    let entry = |signature: u32, central: bool| {
        let mut header = Vec::new();
        header.extend(signature.to_le_bytes());
        if central {
            header.extend(20u16.to_le_bytes()); // made by
        }
        header.extend(20u16.to_le_bytes()); // needed
        header.extend(0u16.to_le_bytes()); // flags
        header.extend(8u16.to_le_bytes()); // deflate
        header.extend([0u8; 4]); // time, date
        header.extend(0u32.to_le_bytes()); // crc (wrong, as a bomb's may be)
        header.extend((deflated.len() as u32).to_le_bytes());
        header.extend(declared.to_le_bytes());
        header.extend((name.len() as u16).to_le_bytes());
        header.extend(0u16.to_le_bytes()); // extra
        if central {
            header.extend([0u8; 10]); // comment, disk, attributes
            header.extend(0u32.to_le_bytes()); // offset of the local header
        }
        header.extend(name.as_bytes());
        header
    };
    let mut zip = entry(0x0403_4b50, false);
    zip.extend(deflated);
    let directory_at = zip.len() as u32;
    let directory = entry(0x0201_4b50, true);
    zip.extend(&directory);
    zip.extend(0x0605_4b50u32.to_le_bytes());
    zip.extend([0u8; 4]);
    zip.extend(1u16.to_le_bytes());
    zip.extend(1u16.to_le_bytes());
    zip.extend((directory.len() as u32).to_le_bytes());
    zip.extend(directory_at.to_le_bytes());
    zip.extend(0u16.to_le_bytes());
    zip
}

fn word_document(body: &str) -> String {
    let docx = docx("");
    let mut archive = zip::ZipArchive::new(Cursor::new(docx)).unwrap();
    let xml = super::read_part(&mut archive, "word/document.xml").unwrap();
    xml.replace("<w:body>", &format!("<w:body>{body}"))
}

#[test]
fn a_lying_zip_bomb_is_read_no_further_than_the_part_bound() {
    let bomb = one_entry_zip("word/document.xml", &deflated_zeros(1024), 200);
    assert!(bomb.len() < 4 << 20);
    // Read no further than declared, or refused at the part bound: never 1 GiB.
    if let Err(error) = read("lying.docx", &bomb) {
        assert!(
            matches!(
                error,
                DocumentError::TooLarge(_) | DocumentError::Malformed(..)
            ),
            "{error}"
        );
    }
}

#[test]
fn an_honest_zip_bomb_is_refused_by_its_declared_size() {
    let bomb = one_entry_zip("word/document.xml", &deflated_zeros(1024), 1 << 30);
    let error = read("honest.docx", &bomb).unwrap_err();
    assert!(matches!(error, DocumentError::TooLarge(_)), "{error}");
}

#[test]
fn a_hundred_thousand_entries_read_within_bounds() {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for index in 0..100_000 {
        writer.start_file(format!("e/{index}"), stored).unwrap();
    }
    writer.start_file("word/document.xml", stored).unwrap();
    writer
        .write_all(word_document(&paragraph("still here")).as_bytes())
        .unwrap();
    let bytes = writer.finish().unwrap().into_inner();
    assert!(read("crowded.docx", &bytes).unwrap().contains("still here"));
}

#[test]
fn deep_nesting_a_huge_attribute_and_many_siblings_read_within_bounds() {
    let deep = format!(
        "{}<w:r><w:t>deep</w:t></w:r>{}",
        "<w:p>".repeat(100_000),
        "</w:p>".repeat(100_000)
    );
    let text = read(
        "deep.docx",
        &package(&[("word/document.xml", &word_document(&deep))]),
    );
    assert!(text.unwrap().contains("deep"));

    let attribute = format!(
        r#"<w:p w:rsidR="{}"><w:r><w:t>after</w:t></w:r></w:p>"#,
        "A".repeat(50 << 20)
    );
    let text = read(
        "attribute.docx",
        &package(&[("word/document.xml", &word_document(&attribute))]),
    );
    assert!(text.unwrap().contains("after"));

    let siblings = format!("{}{}", "<w:p/>".repeat(1_000_000), paragraph("last"));
    let text = read(
        "siblings.docx",
        &package(&[("word/document.xml", &word_document(&siblings))]),
    );
    assert!(text.unwrap().contains("last"));
}

#[test]
fn a_presentation_listing_a_million_slides_is_refused() {
    let deck = pptx(&["only slide"], &vec![0; 1_000_000]);
    let error = read("million.pptx", &deck).unwrap_err();
    assert!(
        error.to_string().contains("more than 10000 slides"),
        "{error}"
    );
}

#[test]
fn one_huge_slide_listed_thousands_of_times_is_read_once_into_the_preview() {
    let big = "word ".repeat(2 << 20);
    let deck = pptx(&[big.trim_end()], &vec![0; 5_000]);
    let text = read("repeated.pptx", &deck).unwrap();
    assert!(text.contains("--- Slide 1 ---"));
}
