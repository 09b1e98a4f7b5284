//! The hostile `.xls` corpus: every shape is refused before calamine builds it, within bounds
//! of time and memory, and an ordinary workbook still reads.

use std::time::{Duration, Instant};

use super::*;
use crate::documents::fixtures::{
    biff, extract_file, xls_container, xls_number, xls_shared_label, xls_stream,
};

/// Time one file may take to be refused, in a debug build on a busy machine.
const FILE_BOUND: Duration = Duration::from_secs(30);
/// Peak resident memory of the test process after the whole corpus.
const MEMORY_BOUND_KIB: u64 = 512 << 10;

/// A DIMENSIONS record (BIFF8) claiming `rows` rows from 0 and `columns` columns.
fn dimensions(first_row: u32, last_row: u32, columns: u16) -> Vec<u8> {
    let data = [
        first_row.to_le_bytes().as_slice(),
        &last_row.to_le_bytes(),
        &0u16.to_le_bytes(),
        &columns.to_le_bytes(),
        &[0, 0],
    ]
    .concat();
    biff(0x0200, &data)
}

/// An OLE container whose allocation table lists its one table sector again and again, from
/// `chained` sectors of the table's index (each of 127 entries): calamine's reader, and the
/// `cfb` crate, read the sector once per listing.
fn repeated_table_sectors(chained: u32) -> Vec<u8> {
    let mut file = vec![0u8; 512];
    file[..8].copy_from_slice(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]);
    file[0x18..0x1A].copy_from_slice(&0x3Eu16.to_le_bytes());
    file[0x1A..0x1C].copy_from_slice(&3u16.to_le_bytes());
    file[0x1C..0x1E].copy_from_slice(&0xFFFEu16.to_le_bytes());
    file[0x1E..0x20].copy_from_slice(&9u16.to_le_bytes());
    file[0x20..0x22].copy_from_slice(&6u16.to_le_bytes());
    file[0x2C..0x30].copy_from_slice(&(109 + 127 * chained).to_le_bytes());
    file[0x30..0x34].copy_from_slice(&0xFFFF_FFFEu32.to_le_bytes());
    file[0x38..0x3C].copy_from_slice(&4096u32.to_le_bytes());
    file[0x3C..0x40].copy_from_slice(&0xFFFF_FFFEu32.to_le_bytes());
    file[0x44..0x48].copy_from_slice(&1u32.to_le_bytes());
    file[0x48..0x4C].copy_from_slice(&chained.to_le_bytes());
    // Header entries: all name sector 0 (the table).
    // Sector 0: the table, all free.
    file.extend(std::iter::repeat_n(0xFF, 512));
    for index in 0..chained {
        let mut sector = vec![0u8; 508];
        let next = if index + 1 == chained {
            0xFFFF_FFFE
        } else {
            index + 2
        };
        sector.extend(u32::to_le_bytes(next));
        file.extend(sector);
    }
    file
}

/// Hostile workbooks, named, with what the refusal says.
fn corpus() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let number = |row, column| xls_number(row, column, 1.0);
    let many_cells: Vec<Vec<u8>> = (0..50_000u32)
        .map(|index| number((index / 200) as u16, (index % 200) as u16))
        .collect();
    let sheets: Vec<(String, Vec<Vec<u8>>)> = (0..200)
        .map(|index| (format!("S{index}"), Vec::new()))
        .collect();
    let mut overlapping: Vec<(&str, Vec<Vec<u8>>)> = sheets
        .iter()
        .map(|(name, records)| (name.as_str(), records.clone()))
        .collect();
    overlapping[0].1 = many_cells;
    let long = "x".repeat(60_000);
    let labels: Vec<Vec<u8>> = (0..100_000u32)
        .map(|index| xls_shared_label((index / 100) as u16, (index % 100) as u16, 0))
        .collect();
    vec![
        (
            "a DIMENSIONS record claiming 2^32 - 1 rows by 65,535 columns",
            xls_container(&xls_stream(
                &[],
                &[("S", vec![dimensions(0, u32::MAX, 0xFFFF), number(0, 0)])],
                None,
            )),
            "claims",
        ),
        (
            "two cells at the grid's opposite corners",
            xls_container(&xls_stream(
                &[],
                &[("S", vec![number(0, 0), number(65_535, 255)])],
                None,
            )),
            "spans",
        ),
        (
            "200 sheets that are all the same 50,000 cells",
            xls_container(&xls_stream(
                &[],
                &overlapping,
                Some(|starts| vec![starts[0]; starts.len()]),
            )),
            "overlap",
        ),
        (
            "a 60,000-character shared string in 100,000 cells",
            xls_container(&xls_stream(&[long.as_str()], &[("S", labels)], None)),
            "text",
        ),
        (
            "an allocation table listing one sector 500,000 times",
            repeated_table_sectors(4_000),
            "allocation table",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_workbooks_are_refused_before_calamine_builds_them() {
    for (name, bytes, reason) in corpus() {
        let started = Instant::now();
        let error = extract_file("hostile.xls", &bytes)
            .await
            .unwrap_err()
            .to_string();
        let took = started.elapsed();
        eprintln!("{name} ({} KiB): {error} in {took:?}", bytes.len() >> 10);
        assert!(error.contains(reason), "{name}: {error}");
        assert!(took < FILE_BOUND, "{name} took {took:?}");
    }
    if let Some(peak) = crate::testing::peak_memory_kib() {
        eprintln!("peak memory {peak} KiB");
        assert!(peak < MEMORY_BOUND_KIB, "peak memory {peak} KiB");
    }
}

#[tokio::test]
async fn an_ordinary_workbook_still_reads() {
    let stream = xls_stream(
        &["Имя", "Сумма"],
        &[
            (
                "Продажи",
                vec![
                    dimensions(0, 2, 2),
                    xls_shared_label(0, 0, 0),
                    xls_shared_label(0, 1, 1),
                    number(1, 1, 42.5),
                ],
            ),
            (
                "Numbers",
                (0..500).map(|row| number(row, 0, f64::from(row))).collect(),
            ),
        ],
        None,
    );
    let output = extract_file("book.xls", &xls_container(&stream))
        .await
        .unwrap();
    assert!(stream.len() > 4096, "a stream past the mini stream");
    assert!(output.contains("Sheets: 2"), "{output}");
    assert!(output.contains("\n498\n499"), "{output}");
    assert!(
        output.contains("--- Sheet: Продажи ---\nИмя\tСумма\n\t42.5"),
        "{output}"
    );
}

fn number(row: u16, column: u16, value: f64) -> Vec<u8> {
    xls_number(row, column, value)
}

#[test]
fn records_are_split_as_calamine_splits_them() {
    let stream = [
        biff(0x0001, b"ab"),
        biff(CONTINUE, b"cd"),
        biff(CONTINUE, b""),
        biff(0x0002, b""),
    ]
    .concat();
    let records: Vec<Record<'_>> = Records::new(&stream).map(Result::unwrap).collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].continues, vec![b"cd".as_slice(), b""]);
    assert!(matches!(
        Records::new(&[1, 0, 9, 0, 0]).next(),
        Some(Err(DocumentError::Malformed(..)))
    ));
}
