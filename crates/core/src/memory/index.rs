//! The stored vectors of one embedding model held in memory, so dense recall is a scan over
//! contiguous floats instead of reading every blob from SQLite (100k × 384-dimension vectors
//! are 150 MB of blobs; the scan takes milliseconds).
//!
//! Layout: one `Vec<f32>` holds every vector back to back (row `i` is
//! `data[i * dimension..(i + 1) * dimension]`, unit length), and a parallel `Vec<u32>` names
//! each row's (owner, scope) group, so a search first decides which groups it may read (a
//! handful of string comparisons) and then scans rows with one array lookup and one dot product
//! each; the best `limit` come out of a partial selection, not a sort of every row.
//!
//! Past [`EXHAUSTIVE_ROWS`] readable rows, a search first ranks rows by the Hamming distance of
//! their sign bits to the query's (one bit per component: 48 bytes per 384-dimension row
//! instead of 1,536), then computes the exact cosine of the best [`PREFILTER_KEEP`] (or 16 ×
//! the limit) only: at 100k rows the full scan reads 150 MB and is bound by memory bandwidth
//! (~20 ms here), the sign scan reads 5 MB. The hits keep exact scores; a true neighbour can be
//! missed only if over a thousand rows look closer by their signs (measured in the tests).
//! Both inner loops, the distances and the cosines, are in [`kernels`], built for this CPU.
//!
//! Invariants: the index is only a way to find candidates. Every hit is checked against the
//! database before it is used — the fact must still be active and its content hash must still
//! be the one the vector was computed from — so a stale, deleted or foreign entry can narrow a
//! result, never change it. It is loaded on first use for a (model, dimension) and kept in step
//! by this process's writes ([`VectorIndex::put`]); a query of another dimension reloads it.

use std::collections::HashMap;

use rusqlite::Connection;

use super::embedder::{from_blob, normalize};
use super::facts;
use super::kernels::{self, sign_distances};
use super::model::{Fact, Scope, Status};

/// Whose and where: the part of a fact a search filters on.
type Group = (String, String, String);

/// Readable rows up to which a search computes every cosine.
pub(crate) const EXHAUSTIVE_ROWS: usize = 8_192;
/// Rows whose exact cosine a sign-bit search computes, at least.
pub(crate) const PREFILTER_KEEP: usize = 1_024;

/// The sign bits of `vector`, 64 components per word (bit set: the component is positive).
fn sign_bits(vector: &[f32], words: &mut Vec<u64>) {
    for chunk in vector.chunks(64) {
        let mut word = 0_u64;
        for (bit, component) in chunk.iter().enumerate() {
            if *component > 0.0 {
                word |= 1 << bit;
            }
        }
        words.push(word);
    }
}

/// One row's identity (its vector lives in [`Loaded::data`]).
struct Row {
    fact_id: String,
    content_hash: String,
}

struct Loaded {
    model: String,
    dimension: usize,
    /// Every vector, back to back, unit length.
    data: Vec<f32>,
    /// Every vector's sign bits by column: `signs[w][i]` holds the signs of components
    /// `64 w .. 64 w + 63` of row `i`, so a search XORs and counts one column at a time, a loop
    /// the compiler vectorizes.
    signs: Vec<Vec<u64>>,
    /// Row `i`'s group (an index into `groups`).
    row_groups: Vec<u32>,
    rows: Vec<Row>,
    by_id: HashMap<String, usize>,
    groups: Vec<Group>,
    group_ids: HashMap<Group, u32>,
}

impl Loaded {
    fn new(model: &str, dimension: usize) -> Self {
        Self {
            model: model.to_owned(),
            dimension,
            data: Vec::new(),
            signs: vec![Vec::new(); dimension.div_ceil(64)],
            row_groups: Vec::new(),
            rows: Vec::new(),
            by_id: HashMap::new(),
            groups: Vec::new(),
            group_ids: HashMap::new(),
        }
    }

    fn group(&mut self, group: Group) -> u32 {
        if let Some(&id) = self.group_ids.get(&group) {
            return id;
        }
        let id = u32::try_from(self.groups.len()).unwrap_or(u32::MAX);
        self.groups.push(group.clone());
        self.group_ids.insert(group, id);
        id
    }

    /// Adds or replaces the row of `fact_id` (`vector` already unit length, of the dimension).
    fn upsert(&mut self, fact_id: &str, group: Group, content_hash: String, vector: &[f32]) {
        let group = self.group(group);
        let mut bits = Vec::with_capacity(self.signs.len());
        sign_bits(vector, &mut bits);
        match self.by_id.get(fact_id) {
            Some(&row) => {
                let start = row * self.dimension;
                if let Some(slot) = self.data.get_mut(start..start + self.dimension) {
                    slot.copy_from_slice(vector);
                }
                for (column, word) in self.signs.iter_mut().zip(bits) {
                    if let Some(slot) = column.get_mut(row) {
                        *slot = word;
                    }
                }
                if let Some(slot) = self.row_groups.get_mut(row) {
                    *slot = group;
                }
                if let Some(slot) = self.rows.get_mut(row) {
                    slot.content_hash = content_hash;
                }
            }
            None => {
                self.by_id.insert(fact_id.to_owned(), self.rows.len());
                self.data.extend_from_slice(vector);
                for (column, word) in self.signs.iter_mut().zip(bits) {
                    column.push(word);
                }
                self.row_groups.push(group);
                self.rows.push(Row {
                    fact_id: fact_id.to_owned(),
                    content_hash,
                });
            }
        }
    }

    /// Drops the row of `fact_id`; the last row moves into its place.
    fn remove(&mut self, fact_id: &str) {
        let Some(row) = self.by_id.remove(fact_id) else {
            return;
        };
        let last = self.rows.len().saturating_sub(1);
        let dimension = self.dimension;
        for column in &mut self.signs {
            if row < column.len() {
                column.swap_remove(row);
            }
        }
        if row != last {
            self.data
                .copy_within(last * dimension..(last + 1) * dimension, row * dimension);
            self.row_groups.swap(row, last);
            self.rows.swap(row, last);
            if let Some(moved) = self.rows.get(row) {
                self.by_id.insert(moved.fact_id.clone(), row);
            }
        }
        self.data.truncate(last * dimension);
        self.row_groups.truncate(last);
        self.rows.truncate(last);
    }
}

/// How a search finds the rows whose exact cosine it computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// Every readable row up to [`EXHAUSTIVE_ROWS`], past it the best by sign bits.
    Auto,
    /// Every readable row (what the sign-bit search is measured against).
    #[cfg_attr(not(test), allow(dead_code))]
    Exhaustive,
}

impl Loaded {
    /// The readable rows' exact cosines with `unit`, for the rows `scan` picks.
    fn scored(
        &self,
        unit: &[f32],
        allowed: &[bool],
        limit: usize,
        scan: Scan,
    ) -> Vec<(f32, usize)> {
        let readable = |group: u32| {
            allowed
                .get(usize::try_from(group).unwrap_or(usize::MAX))
                .copied()
                .unwrap_or(false)
        };
        let keep = PREFILTER_KEEP.max(limit.saturating_mul(16));
        let many = self
            .row_groups
            .iter()
            .filter(|group| readable(**group))
            .count()
            > EXHAUSTIVE_ROWS.max(keep);
        let rows: Vec<usize> = if scan == Scan::Auto && many {
            self.nearest_by_signs(unit, &readable, keep)
        } else {
            (0..self.row_groups.len())
                .filter(|row| self.row_groups.get(*row).is_some_and(|g| readable(*g)))
                .collect()
        };
        kernels::dots(unit, &self.data, &rows)
    }

    /// The `keep` readable rows whose sign bits differ least from `unit`'s (ties at the cut
    /// go to the lower rows). One pass per column of sign bits adds up every row's distance,
    /// one pass over the rows counts the readable ones' distances (a histogram, which gives
    /// the cut), and a last one collects the rows below it. No sort and no per-row
    /// allocation: at 100k rows the distances are 400 KB.
    fn nearest_by_signs(
        &self,
        unit: &[f32],
        readable: &dyn Fn(u32) -> bool,
        keep: usize,
    ) -> Vec<usize> {
        let mut query = Vec::with_capacity(self.signs.len());
        sign_bits(unit, &mut query);
        let mut distances = vec![0_u32; self.row_groups.len()];
        sign_distances(&self.signs, &query, &mut distances);
        let mut counts = vec![0_usize; self.signs.len() * 64 + 1];
        for (distance, group) in distances.iter_mut().zip(&self.row_groups) {
            match usize::try_from(*distance)
                .ok()
                .and_then(|d| counts.get_mut(d))
            {
                Some(count) if readable(*group) => *count += 1,
                _ => *distance = u32::MAX,
            }
        }
        let (mut below, mut cut) = (0, counts.len());
        for (distance, count) in counts.iter().enumerate() {
            if below + count >= keep {
                cut = distance;
                break;
            }
            below += count;
        }
        let cut = u32::try_from(cut).unwrap_or(u32::MAX - 1);
        let mut at_cut = keep.saturating_sub(below);
        let mut rows = Vec::with_capacity(keep);
        for (row, distance) in distances.iter().enumerate() {
            if *distance < cut || (*distance == cut && at_cut > 0) {
                if *distance == cut {
                    at_cut -= 1;
                }
                rows.push(row);
            }
        }
        rows
    }
}

/// A dense search.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DenseQuery<'a> {
    /// Whose facts.
    pub owner: &'a str,
    /// In which scopes (legacy aliases included).
    pub scopes: &'a [Scope],
    /// The query vector's model.
    pub model: &'a str,
    /// The query vector.
    pub vector: &'a [f32],
    /// The lowest cosine similarity kept.
    pub min_score: f32,
    /// Most hits.
    pub limit: usize,
}

/// The in-memory vectors (see the module documentation).
#[derive(Default)]
pub(crate) struct VectorIndex {
    loaded: Option<Loaded>,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("entries", &self.loaded.as_ref().map_or(0, |l| l.rows.len()))
            .finish()
    }
}

/// Best first.
fn by_score(a: &(f32, usize), b: &(f32, usize)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0)
}

impl VectorIndex {
    fn is_loaded(&self, model: &str, dimension: usize) -> bool {
        self.loaded
            .as_ref()
            .is_some_and(|loaded| loaded.model == model && loaded.dimension == dimension)
    }

    /// Loads every current vector of `model` with `dimension` components.
    pub(crate) fn load(
        &mut self,
        connection: &Connection,
        model: &str,
        dimension: usize,
    ) -> rusqlite::Result<()> {
        let mut loaded = Loaded::new(model, dimension);
        let mut statement = connection.prepare(
            "SELECT f.id, f.owner_id, f.scope_type, f.scope_id, e.content_hash, e.embedding_blob \
             FROM memory_fact_embeddings e JOIN memory_facts f ON f.id = e.fact_id \
             WHERE e.embedding_model = ?1 AND e.dimension = ?2 AND f.status = 'ACTIVE' \
             AND e.content_hash = f.content_hash",
        )?;
        let mut rows = statement.query(rusqlite::params![
            model,
            i64::try_from(dimension).unwrap_or(i64::MAX)
        ])?;
        while let Some(row) = rows.next()? {
            let mut vector = from_blob(row.get_ref(5)?.as_blob().unwrap_or_default());
            if vector.len() != dimension {
                continue;
            }
            normalize(&mut vector);
            let id: String = row.get(0)?;
            loaded.upsert(
                &id,
                (row.get(1)?, row.get(2)?, row.get(3)?),
                row.get(4)?,
                &vector,
            );
        }
        self.loaded = Some(loaded);
        Ok(())
    }

    /// Records a vector this process stored (ignored unless that model and dimension are
    /// loaded).
    pub(crate) fn put(&mut self, model: &str, fact: &Fact, vector: &[f32]) {
        if let Some(loaded) = &mut self.loaded
            && loaded.model == model
            && loaded.dimension == vector.len()
        {
            let mut vector = vector.to_vec();
            normalize(&mut vector);
            loaded.upsert(
                &fact.id,
                (
                    fact.owner.clone(),
                    fact.scope.kind.clone(),
                    fact.scope.id.clone(),
                ),
                fact.content_hash.clone(),
                &vector,
            );
        }
    }

    /// Forgets the vector of `fact_id` (a retired or deleted fact).
    pub(crate) fn remove(&mut self, fact_id: &str) {
        if let Some(loaded) = &mut self.loaded {
            loaded.remove(fact_id);
        }
    }

    /// Whether the index must be loaded before searching `model` at `dimension`.
    pub(crate) fn needs_load(&self, model: &str, dimension: usize) -> bool {
        !self.is_loaded(model, dimension)
    }

    /// Active facts matching `query`, best first, each checked against the database. Empty
    /// when the index holds another model or dimension (load it first).
    pub(crate) fn search(
        &self,
        connection: &Connection,
        query: &DenseQuery<'_>,
    ) -> rusqlite::Result<Vec<(Fact, f32)>> {
        match self.candidates(query) {
            Some(candidates) => candidates.verify(connection),
            None => Ok(Vec::new()),
        }
    }

    /// The rows matching `query` by their vectors alone, to be checked against the database
    /// ([`Candidates::verify`]); `None` when the index holds another model or dimension. Reads
    /// no database, so it can run beside the other recall sources.
    pub(crate) fn candidates(&self, query: &DenseQuery<'_>) -> Option<Candidates> {
        let DenseQuery {
            owner,
            scopes,
            model,
            vector,
            min_score,
            limit,
        } = *query;
        let loaded = self
            .loaded
            .as_ref()
            .filter(|_| self.is_loaded(model, vector.len()))?;
        if limit == 0 {
            return Some(Candidates::default());
        }
        let mut unit = vector.to_vec();
        normalize(&mut unit);
        let wanted: Vec<(String, String)> = scopes
            .iter()
            .flat_map(Scope::compatible)
            .map(|scope| (scope.kind, scope.id))
            .collect();
        let allowed: Vec<bool> = loaded
            .groups
            .iter()
            .map(|(group_owner, kind, id)| {
                group_owner == owner
                    && wanted
                        .iter()
                        .any(|(want_kind, want_id)| want_kind == kind && want_id == id)
            })
            .collect();
        let mut scored = loaded.scored(&unit, &allowed, limit, Scan::Auto);
        scored.retain(|(score, _)| *score >= min_score);
        // The best few first (twice the limit, for hits the database turns down); the rest
        // are sorted only if those run out.
        let head = (limit * 2).min(scored.len());
        if head > 0 && head < scored.len() {
            scored.select_nth_unstable_by(head - 1, by_score);
        }
        if let Some(best) = scored.get_mut(..head) {
            best.sort_unstable_by(by_score);
        }
        let rows = scored
            .into_iter()
            .filter_map(|(score, row)| {
                let entry = loaded.rows.get(row)?;
                Some(Candidate {
                    fact_id: entry.fact_id.clone(),
                    content_hash: entry.content_hash.clone(),
                    score,
                })
            })
            .collect();
        Some(Candidates { rows, head, limit })
    }
}

/// A row a dense scan found.
#[derive(Debug, Clone)]
struct Candidate {
    fact_id: String,
    /// The content its vector was computed from.
    content_hash: String,
    score: f32,
}

/// What a dense scan found, to be checked against the database: the first `head` rows are
/// sorted best first, the rest only if those run out.
#[derive(Debug, Default)]
pub(crate) struct Candidates {
    rows: Vec<Candidate>,
    head: usize,
    limit: usize,
}

impl Candidates {
    /// The facts still active with the content their vectors were computed from, best first,
    /// at most the query's limit.
    pub(crate) fn verify(mut self, connection: &Connection) -> rusqlite::Result<Vec<(Fact, f32)>> {
        let mut hits = Vec::new();
        let mut at = 0;
        while hits.len() < self.limit && at < self.rows.len() {
            // The sorted head in one read, then the rest sorted and read a head's worth at a
            // time.
            if at == self.head
                && let Some(rest) = self.rows.get_mut(at..)
            {
                rest.sort_unstable_by(|a, b| b.score.total_cmp(&a.score));
            }
            let end = if at < self.head {
                self.head
            } else {
                at + self.limit.max(1) * 2
            }
            .min(self.rows.len());
            let Some(batch) = self.rows.get(at..end) else {
                break;
            };
            let ids: Vec<&str> = batch.iter().map(|row| row.fact_id.as_str()).collect();
            let mut found = facts::by_ids(connection, &ids)?;
            for candidate in batch {
                if hits.len() == self.limit {
                    break;
                }
                if let Some(fact) = found.remove(&candidate.fact_id)
                    && fact.status == Status::Active
                    && fact.content_hash == candidate.content_hash
                {
                    hits.push((fact, candidate.score));
                }
            }
            at = end;
        }
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_row_leaves_the_others_whole() {
        let group = || ("local".to_owned(), "global".to_owned(), String::new());
        let mut loaded = Loaded::new("m", 2);
        loaded.upsert("a", group(), "ha".into(), &[1.0, 0.0]);
        loaded.upsert("b", group(), "hb".into(), &[0.0, 1.0]);
        loaded.upsert("c", group(), "hc".into(), &[0.6, 0.8]);
        loaded.remove("a");
        loaded.remove("missing");
        assert!(!loaded.by_id.contains_key("a"));
        assert_eq!(loaded.rows.len(), 2);
        assert_eq!(loaded.data.len(), 4);
        for (id, vector) in [("b", [0.0, 1.0]), ("c", [0.6, 0.8])] {
            let row = loaded.by_id[id];
            assert_eq!(loaded.rows[row].fact_id, id);
            assert_eq!(&loaded.data[row * 2..row * 2 + 2], &vector);
        }
        // The sign bits move with their rows.
        let row = loaded.by_id["c"];
        assert_eq!(loaded.signs, vec![vec![0b11, 0b10]]);
        assert_eq!(loaded.signs[0][row], 0b11);
        loaded.remove("c");
        loaded.remove("b");
        assert!(loaded.rows.is_empty() && loaded.data.is_empty() && loaded.by_id.is_empty());
        assert!(loaded.signs.iter().all(Vec::is_empty));
    }

    /// Unit vectors in clusters (topics), as embeddings of a person's notes are.
    struct Gaussianish(u64);

    impl Gaussianish {
        /// Roughly normal: the sum of four uniform draws, centred.
        fn next(&mut self) -> f32 {
            let mut sum = 0.0;
            for _ in 0..4 {
                self.0 = self
                    .0
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                sum += (self.0 >> 40) as f32 / (1_u64 << 24) as f32;
            }
            sum - 2.0
        }

        fn near(&mut self, center: &[f32], spread: f32) -> Vec<f32> {
            let mut vector: Vec<f32> = center.iter().map(|c| c + spread * self.next()).collect();
            normalize(&mut vector);
            vector
        }
    }

    #[test]
    fn the_sign_bit_search_finds_what_the_full_scan_finds() {
        const DIMENSION: usize = 384;
        const ROWS: usize = 30_000;
        let mut random = Gaussianish(11);
        let centers: Vec<Vec<f32>> = (0..200)
            .map(|_| (0..DIMENSION).map(|_| random.next()).collect())
            .collect();
        let mut loaded = Loaded::new("m", DIMENSION);
        let group = ("local".to_owned(), "global".to_owned(), "global".to_owned());
        for row in 0..ROWS {
            let vector = random.near(&centers[row % centers.len()], 0.8);
            loaded.upsert(&format!("f{row}"), group.clone(), String::new(), &vector);
        }
        let allowed = [true];
        let best = |scored: Vec<(f32, usize)>, count: usize| {
            let mut scored = scored;
            scored.sort_by(by_score);
            scored.truncate(count);
            scored.into_iter().map(|(_, row)| row).collect::<Vec<_>>()
        };
        let (mut found, mut total, mut first) = (0, 0, 0);
        for query in 0..60 {
            // A question close to one stored fact (a paraphrase of it).
            let target = (query * 487) % ROWS;
            let stored = loaded.data[target * DIMENSION..(target + 1) * DIMENSION].to_vec();
            let unit = random.near(&stored, 0.02);
            let auto = loaded.scored(&unit, &allowed, 40, Scan::Auto);
            assert!(
                auto.len() < ROWS / 10,
                "the sign bits narrowed the scan: {}",
                auto.len()
            );
            let exact = best(loaded.scored(&unit, &allowed, 40, Scan::Exhaustive), 40);
            let auto = best(auto, 40);
            first += usize::from(auto.first() == exact.first());
            found += exact.iter().filter(|row| auto.contains(row)).count();
            total += exact.len();
        }
        // Measured: every nearest row and the whole exhaustive top 40 found (1.0).
        assert_eq!(first, 60, "the nearest row is always found");
        let agreement = found as f64 / total as f64;
        assert!(agreement >= 0.95, "top-40 agreement {agreement:.3}");
    }
}
