//! Compressed-stream bombs are refused within bounds of time and memory; ordinary compressed
//! files (predictors included) read as before, and nothing is inflated after loading.

use std::time::{Duration, Instant};

use flate2::{Compress, Compression, FlushCompress};
use pdf_extract::content::{Content, Operation};
use pdf_extract::{Stream, dictionary};

use super::*;
use crate::documents::fixtures::pdf;
use crate::documents::pdf::{Pdf, render_pages};
use crate::worker::Stop;

/// Time one file may take to be refused, in a debug build on a busy machine.
const FILE_BOUND: Duration = Duration::from_secs(60);
/// Growth of the test process's peak resident memory allowed while refusing a bomb.
const MEMORY_BOUND_KIB: u64 = 768 << 10;

/// The peak resident memory so far, in KiB (0 where `/proc` does not say).
fn peak_memory_kib() -> u64 {
    crate::testing::peak_memory_kib().unwrap_or(0)
}

/// A zlib stream of `mib` MiB of zeros (about 1 KiB compressed a MiB), built from one
/// compressed MiB repeated, so building it costs nothing.
fn zeros_bomb(mib: usize) -> Vec<u8> {
    let zeros = vec![0u8; 1 << 20];
    let mut compress = Compress::new(Compression::best(), false);
    let mut block = |flush| {
        let mut out = Vec::with_capacity(64 << 10);
        compress.compress_vec(&zeros, &mut out, flush).unwrap();
        out
    };
    let first = block(FlushCompress::Sync);
    let repeated = block(FlushCompress::Sync);
    let mut bytes = vec![0x78, 0xDA];
    bytes.extend(&first);
    for _ in 1..mib {
        bytes.extend(&repeated);
    }
    // A final empty fixed block, then the Adler-32 of `mib` MiB of zeros.
    bytes.extend([0x03, 0x00]);
    let total = (mib as u64) << 20;
    let adler = ((total % 65_521) << 16) | 1;
    bytes.extend((adler as u32).to_be_bytes());
    bytes
}

/// The fixture PDF with `edit` applied to its document.
fn edited(pages: &[&str], edit: impl FnOnce(&mut Document)) -> Vec<u8> {
    let mut document = Document::load_mem(&pdf(pages)).unwrap();
    edit(&mut document);
    let mut bytes = Vec::new();
    document.save_to(&mut bytes).unwrap();
    bytes
}

/// Every page's content replaced by a Flate stream of `mib` MiB of zeros.
fn pages_of_zeros(pages: usize, mib: usize) -> Vec<u8> {
    let texts = vec!["x"; pages];
    edited(&texts, |document| {
        let bomb = zeros_bomb(mib);
        for (_, page) in document.get_pages() {
            let content = document.add_object(Stream::new(
                dictionary! { "Filter" => "FlateDecode" },
                bomb.clone(),
            ));
            let dictionary = document.get_dictionary_mut(page).unwrap();
            dictionary.set("Contents", content);
        }
    })
}

fn refused_within_bounds(name: &str, bytes: &[u8], expected: &str) {
    let before = peak_memory_kib();
    let started = Instant::now();
    let outcome = Pdf::load(bytes);
    let elapsed = started.elapsed();
    let grown = peak_memory_kib().saturating_sub(before);
    match outcome {
        Err(DocumentError::TooLarge(reason)) => {
            assert!(reason.contains(expected), "{name}: {reason}")
        }
        Err(other) => panic!("{name}: refused for another reason: {other}"),
        Ok(_) => panic!("{name}: was read"),
    }
    assert!(elapsed < FILE_BOUND, "{name}: took {elapsed:?}");
    assert!(
        grown < MEMORY_BOUND_KIB,
        "{name}: peak memory grew by {} MiB",
        grown >> 10
    );
    eprintln!(
        "{name}: refused in {elapsed:?}, peak grew {} MiB",
        grown >> 10
    );
}

#[test]
fn a_flate_bomb_is_refused_before_it_expands() {
    let bytes = pages_of_zeros(1, 1024);
    assert!(bytes.len() < 4 << 20, "{} bytes", bytes.len());
    refused_within_bounds("1 GiB page", &bytes, "expands past");
}

#[test]
fn streams_within_the_stream_bound_are_refused_past_the_file_bound() {
    refused_within_bounds("5 pages of 60 MiB", &pages_of_zeros(5, 60), "in all");
}

#[test]
fn a_bomb_behind_two_filters_in_an_object_stream_is_refused() {
    // The outer layer inflates to 1 MiB (under the raw scan's bound); the inner to 1 GiB.
    let inner = zeros_bomb(1024);
    let mut outer = flate2::write::ZlibEncoder::new(Vec::new(), Compression::best());
    std::io::Write::write_all(&mut outer, &inner).unwrap();
    let outer = outer.finish().unwrap();
    // lopdf's writer drops object streams: written as `ObjStX`, renamed in place after.
    let mut bytes = edited(&["x"], |document| {
        document.add_object(Stream::new(
            dictionary! {
                "Type" => "ObjStX",
                "N" => 1,
                "First" => 4,
                "Filter" => vec!["FlateDecode".into(), "FlateDecode".into()],
            },
            outer,
        ));
    });
    let at = bytes
        .windows(7)
        .position(|window| window == b"/ObjStX")
        .unwrap();
    bytes[at + 6] = b'm';
    refused_within_bounds("object stream", &bytes, "expands past");
}

fn all_text(bytes: &[u8]) -> String {
    let pdf = Pdf::load(bytes).unwrap();
    render_pages(&pdf.pages(1..=pdf.page_count(), &Stop::default()).unwrap())
}

#[test]
fn compressed_pages_read_as_before_predictors_included() {
    let pages = ["First page\nwith two lines", "Second page", "Third page"];
    let plain = all_text(&pdf(&pages));
    let compressed = edited(&pages, |document| document.compress());
    assert_eq!(all_text(&compressed), plain);
    assert!(plain.contains("with two lines"), "{plain}");

    // A page whose content is Flate with a PNG predictor (rows of 8 bytes, filter type 0).
    let content = Content {
        operations: vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("Td", vec![72.into(), 760.into()]),
            Operation::new("Tj", vec![Object::string_literal("Predicted text")]),
            Operation::new("ET", vec![]),
        ],
    }
    .encode()
    .unwrap();
    let mut rows = Vec::new();
    for row in content.chunks(8) {
        rows.push(0u8);
        rows.extend(row);
        rows.extend(std::iter::repeat_n(b' ', 8 - row.len()));
    }
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), Compression::default());
    std::io::Write::write_all(&mut encoder, &rows).unwrap();
    let predicted = encoder.finish().unwrap();
    let bytes = edited(&["x"], |document| {
        let stream = document.add_object(Stream::new(
            dictionary! {
                "Filter" => "FlateDecode",
                "DecodeParms" => dictionary! { "Predictor" => 12, "Columns" => 8 },
            },
            predicted,
        ));
        let page = document.get_pages()[&1];
        document
            .get_dictionary_mut(page)
            .unwrap()
            .set("Contents", stream);
    });
    assert!(all_text(&bytes).contains("Predicted text"));
}

#[test]
fn every_stream_read_is_plain_once_loaded_and_images_stay_compressed() {
    // A compressed form drawn 500 times, and a compressed image.
    let bytes = edited(&["page text"], |document| {
        let mut form = Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Form",
            "BBox" => vec![0.into(), 0.into(), 100.into(), 100.into()] },
            b"BT /F1 12 Tf 72 700 Td (form text) Tj ET".to_vec(),
        );
        form.compress().unwrap();
        let form = document.add_object(form);
        let mut image = Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Image", "Width" => 64,
            "Height" => 64, "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8 },
            vec![0u8; 64 * 64],
        );
        image.compress().unwrap();
        let image = document.add_object(image);
        let mut draws = Vec::new();
        for _ in 0..500 {
            draws.extend(b"/Fm1 Do ");
        }
        let mut content = Stream::new(dictionary! {}, draws);
        content.compress().unwrap();
        let content = document.add_object(content);
        let page = document.get_pages()[&1];
        let page = document.get_dictionary_mut(page).unwrap();
        page.set("Contents", content);
        page.set(
            "Resources",
            dictionary! {
                "Font" => dictionary! { "F1" => dictionary! { "Type" => "Font",
                    "Subtype" => "Type1", "BaseFont" => "Helvetica" } },
                "XObject" => dictionary! { "Fm1" => form, "Im1" => image },
            },
        );
    });
    let pdf = Pdf::load(&bytes).unwrap();
    let mut images = 0;
    for object in pdf.document.objects.values() {
        let Object::Stream(stream) = object else {
            continue;
        };
        let is_image = stream
            .dict
            .get(b"Subtype")
            .and_then(Object::as_name)
            .is_ok_and(|subtype| subtype == b"Image");
        if is_image {
            images += 1;
            assert!(stream.is_compressed(), "the image was decoded");
        } else {
            assert!(
                !stream.is_compressed(),
                "still compressed: {:?}",
                stream.dict
            );
        }
    }
    assert_eq!(images, 1);
    let text = render_pages(&pdf.pages(1..=1, &Stop::default()).unwrap());
    assert!(text.contains("form text"), "{text}");
}

/// `data` zlib-compressed.
fn zlib(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), Compression::best());
    std::io::Write::write_all(&mut encoder, data).unwrap();
    encoder.finish().unwrap()
}

/// A raw file holding one stream object with `dictionary` and `data` (what the raw pass reads;
/// lopdf never gets this far for the refused ones).
fn raw_file(dictionary: &str, data: &[u8], trailer: &str) -> Vec<u8> {
    let mut bytes = b"%PDF-1.7\n1 0 obj\n".to_vec();
    bytes.extend(format!("{dictionary}\nstream\n").as_bytes());
    bytes.extend(data);
    bytes.extend(format!("\nendstream\nendobj\ntrailer\n{trailer}\n%%EOF\n").as_bytes());
    bytes
}

#[test]
fn nested_layers_are_measured_in_the_raw_pass() {
    // A cross-reference stream (which lopdf inflates while it loads, before any filter) behind
    // three FlateDecode layers: 1 GiB at the innermost.
    let three = zlib(&zlib(&zeros_bomb(1024)));
    let file = raw_file(
        "<< /Type /XRef /Filter [/FlateDecode /FlateDecode /FlateDecode] >>",
        &three,
        "<< >>",
    );
    let started = Instant::now();
    match measure_raw(&file) {
        Err(DocumentError::TooLarge(reason)) => {
            assert!(reason.contains("compressed 3 times"), "{reason}")
        }
        other => panic!("not refused: {other:?}"),
    }
    assert!(started.elapsed() < FILE_BOUND);
    // The same bomb with no dictionary in reach is followed while layers yield.
    let mut far = raw_file("<< /Type /XRef >>", &three, "<< >>");
    let at = far
        .windows(6)
        .position(|window| window == b"stream")
        .unwrap();
    far.splice(at..at, std::iter::repeat_n(b' ', 70_000));
    assert!(matches!(measure_raw(&far), Err(DocumentError::TooLarge(_))));
    // Layers that end small pass; a dictionary listing nine is refused.
    let mut layered = b"BT (hello) Tj ET".to_vec();
    for _ in 0..8 {
        layered = zlib(&layered);
    }
    let eight = format!("<< /Filter [{}] >>", "/FlateDecode ".repeat(8));
    assert!(measure_raw(&raw_file(&eight, &layered, "<< >>")).is_ok());
    assert!(measure_raw(&raw_file("<< >>", &zlib(b"BT (x) Tj ET"), "<< >>")).is_ok());
    let nine = format!("<< /Filter [{}/Fl] >>", "/FlateDecode ".repeat(8));
    match measure_raw(&raw_file(&nine, &zlib(&layered), "<< >>")) {
        Err(DocumentError::TooLarge(reason)) => assert!(reason.contains("more than 8"), "{reason}"),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn an_encrypted_files_large_object_stream_is_refused_unmeasured() {
    // Its bytes are encrypted in the file, so their expansion cannot be measured.
    let noise: Vec<u8> = (0..400_000u32)
        .map(|n| (n.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let dictionary = "<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode >>";
    let encrypted = "<< /Encrypt 9 0 R >>";
    match measure_raw(&raw_file(dictionary, &noise, encrypted)) {
        Err(DocumentError::TooLarge(reason)) => {
            assert!(reason.contains("encrypted object stream"), "{reason}")
        }
        other => panic!("not refused: {other:?}"),
    }
    // A small one, or the same stream in a file that is not encrypted, passes the raw pass.
    assert!(measure_raw(&raw_file(dictionary, &noise[..1000], encrypted)).is_ok());
    assert!(measure_raw(&raw_file(dictionary, &noise, "<< >>")).is_ok());
    assert!(measure_raw(&raw_file("<< /Subtype /Image >>", &noise, encrypted)).is_ok());
}
