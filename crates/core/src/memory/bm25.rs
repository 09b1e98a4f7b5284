//! The bm25 ranking of the lexical index's matches, computed here instead of by FTS5's
//! `bm25()`, with FTS5's statistics and formula.
//!
//! FTS5's `bm25()` reads each match's length with a statement of its own (about 1.5 µs a
//! match). A query over 100k facts matches thousands, and that read was three quarters of a
//! recall's CPU. Here one statement per query stem reads the stem's matches joined with their
//! lengths, and the row count and total length come from the index's averages record: the same
//! figures `bm25()` uses, read in a third of the time.
//!
//! The score is FTS5's: for each query stem a fact holds, `idf × (k1 + 1) × f / (f + k1 × (1 −
//! b + b × length / average length))` with k1 = 1.2, b = 0.75, `idf = ln((rows − hits + 0.5) /
//! (hits + 0.5))` (at least 10⁻⁶), summed. The index holds each stem of a fact once
//! (`text::stemmed`), so the frequency `f` is 1 and a fact's score is its length factor times
//! the sum of the idfs of the stems it holds. (Facts indexed before stems were kept once hold
//! repeats: they are scored with `f` = 1 too, and their lengths count the repeats, until they are
//! next written.)
//!
//! Reads two of FTS5's shadow tables. Their formats are part of SQLite's file format (a
//! database must stay readable by later versions): `memory_facts_fts_docsize.sz` holds one
//! SQLite varint per column (the column's token count), and row 1 of `memory_facts_fts_data`
//! (the averages record) holds the row count followed by one token total per column, all
//! varints. A test checks every score against FTS5's own `bm25()`.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension};

use super::facts::corrupt;
use crate::store::CachedStatements;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// One stem's matches with their lengths (tokens), in rowid order.
pub(super) const MATCHES: &str = "SELECT memory_facts_fts.rowid, d.sz FROM memory_facts_fts \
     CROSS JOIN memory_facts_fts_docsize d ON d.id = memory_facts_fts.rowid \
     WHERE memory_facts_fts MATCH ?1";

/// A SQLite varint at the start of `bytes` (one to nine bytes, big-endian, seven bits a byte
/// with the high bit saying another follows; a ninth byte gives all eight) and its length.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (at, byte) in bytes.iter().copied().enumerate().take(9) {
        if at == 8 {
            return Some(((value << 8) | u64::from(byte), 9));
        }
        value = (value << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((value, at + 1));
        }
    }
    None
}

/// The index's row count and average length (tokens a row), from its averages record; `None`
/// while the index is empty.
fn averages(connection: &Connection) -> rusqlite::Result<Option<(f64, f64)>> {
    let record: Option<Vec<u8>> = connection
        .query_row_cached(
            "SELECT block FROM memory_facts_fts_data WHERE id = 1",
            [],
            |row| row.get(0),
        )
        .optional()?;
    let Some(record) = record.filter(|record| !record.is_empty()) else {
        return Ok(None);
    };
    let unreadable = || corrupt("memory_facts_fts_data", "an unreadable averages record");
    let (rows, used) = varint(&record).ok_or_else(unreadable)?;
    let (tokens, _) = varint(record.get(used..).unwrap_or_default()).ok_or_else(unreadable)?;
    if rows == 0 {
        return Ok(None);
    }
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    Ok(Some((rows as f64, tokens as f64 / rows as f64)))
}

/// FTS5's idf of a stem held by `hits` of `rows` rows.
fn idf(rows: f64, hits: usize) -> f64 {
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let hits = hits as f64;
    let idf = ((rows - hits + 0.5) / (hits + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// A match's score so far: the idfs of the stems it holds, and its length.
struct Match {
    idf: f64,
    length: u64,
}

/// A query's matches, best first, and what a match of every stem would score.
#[derive(Debug, Default)]
pub(super) struct Ranked {
    /// Rowids with their bm25 scores, best first.
    pub scored: Vec<(i64, f64)>,
    /// The score of a fact of average length holding every stem of the query: the sum of the
    /// stems' idfs, a stem no fact holds counting most. A match's score over it is how much of
    /// the query's evidence the match holds, whatever the other matches hold.
    pub whole: f64,
}

/// The rowids of the index's rows holding any of `terms` (FTS5 phrases, see
/// `text::match_terms`), best bm25 first (ties: the newer row first), at most `keep`.
pub(super) fn ranked(
    connection: &Connection,
    terms: &[String],
    keep: usize,
) -> rusqlite::Result<Ranked> {
    let Some((rows, average)) = averages(connection)?.filter(|_| keep > 0) else {
        return Ok(Ranked::default());
    };
    let mut whole = 0.0;
    let mut statement = connection.prepare_cached(MATCHES)?;
    let mut matches: HashMap<i64, Match> = HashMap::new();
    for term in terms {
        let found = statement
            .query_map([term], |row| {
                let sizes = row.get_ref(1)?.as_blob()?;
                let (length, _) = varint(sizes)
                    .ok_or_else(|| corrupt("memory_facts_fts_docsize", "an unreadable size"))?;
                Ok((row.get::<_, i64>(0)?, length))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let idf = idf(rows, found.len());
        whole += idf;
        for (rowid, length) in found {
            matches
                .entry(rowid)
                .or_insert(Match { idf: 0.0, length })
                .idf += idf;
        }
    }
    let mut scored: Vec<(i64, f64)> = matches
        .into_iter()
        .map(|(rowid, found)| {
            #[allow(clippy::cast_precision_loss)] // lengths far below 2^52
            let length = found.length as f64;
            let score = found.idf * (K1 + 1.0) / (1.0 + K1 * (1.0 - B + B * length / average));
            (rowid, score)
        })
        .collect();
    let best_first = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0));
    if scored.len() > keep {
        scored.select_nth_unstable_by(keep - 1, best_first);
        scored.truncate(keep);
    }
    scored.sort_unstable_by(best_first);
    Ok(Ranked { scored, whole })
}

#[cfg(test)]
mod tests {
    use super::varint;

    #[test]
    fn varints_read_as_sqlite_writes_them() {
        assert_eq!(varint(&[0x00]), Some((0, 1)));
        assert_eq!(varint(&[0x7f, 0xff]), Some((127, 1)));
        assert_eq!(varint(&[0x81, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0x83, 0x68]), Some((488, 2)));
        assert_eq!(varint(&[0x81, 0x80, 0x00]), Some((16_384, 3)));
        assert_eq!(varint(&[0xff; 9]), Some((u64::MAX, 9)));
        assert_eq!(varint(&[]), None);
        assert_eq!(varint(&[0x80, 0x80]), None);
    }
}
