//! The stored vectors of one embedding model held in memory, so dense recall is a scan over
//! contiguous floats instead of reading every blob from SQLite (100k × 384-dimension vectors
//! are 150 MB of blobs; the scan takes milliseconds).
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
use super::model::{Fact, Scope, Status};

struct Entry {
    owner: String,
    scope: (String, String),
    content_hash: String,
    /// Unit length.
    vector: Vec<f32>,
}

struct Loaded {
    model: String,
    dimension: usize,
    entries: HashMap<String, Entry>,
}

/// A dense search.
#[derive(Debug, Clone, Copy)]
pub struct DenseQuery<'a> {
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
pub struct VectorIndex {
    loaded: Option<Loaded>,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field(
                "entries",
                &self.loaded.as_ref().map_or(0, |l| l.entries.len()),
            )
            .finish()
    }
}

/// Dot product in eight lanes (vectorised by the compiler).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0_f32; 8];
    let (chunks_a, chunks_b) = (a.chunks_exact(8), b.chunks_exact(8));
    let (rest_a, rest_b) = (chunks_a.remainder(), chunks_b.remainder());
    for (x, y) in chunks_a.zip(chunks_b) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    let rest: f32 = rest_a.iter().zip(rest_b).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + rest
}

impl VectorIndex {
    fn is_loaded(&self, model: &str, dimension: usize) -> bool {
        self.loaded
            .as_ref()
            .is_some_and(|loaded| loaded.model == model && loaded.dimension == dimension)
    }

    /// Loads every current vector of `model` with `dimension` components.
    pub fn load(
        &mut self,
        connection: &Connection,
        model: &str,
        dimension: usize,
    ) -> rusqlite::Result<()> {
        let mut entries = HashMap::new();
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
            normalize(&mut vector);
            entries.insert(
                row.get(0)?,
                Entry {
                    owner: row.get(1)?,
                    scope: (row.get(2)?, row.get(3)?),
                    content_hash: row.get(4)?,
                    vector,
                },
            );
        }
        self.loaded = Some(Loaded {
            model: model.to_owned(),
            dimension,
            entries,
        });
        Ok(())
    }

    /// Records a vector this process stored (ignored unless that model and dimension are
    /// loaded).
    pub fn put(&mut self, model: &str, fact: &Fact, vector: &[f32]) {
        if let Some(loaded) = &mut self.loaded
            && loaded.model == model
            && loaded.dimension == vector.len()
        {
            let mut vector = vector.to_vec();
            normalize(&mut vector);
            loaded.entries.insert(
                fact.id.clone(),
                Entry {
                    owner: fact.owner.clone(),
                    scope: (fact.scope.kind.clone(), fact.scope.id.clone()),
                    content_hash: fact.content_hash.clone(),
                    vector,
                },
            );
        }
    }

    /// Forgets a fact's vector.
    pub fn remove(&mut self, fact_id: &str) {
        if let Some(loaded) = &mut self.loaded {
            loaded.entries.remove(fact_id);
        }
    }

    /// Whether the index must be loaded before searching `model` at `dimension`.
    pub fn needs_load(&self, model: &str, dimension: usize) -> bool {
        !self.is_loaded(model, dimension)
    }

    /// Active facts matching `query`, best first, each checked against the database. Empty
    /// when the index holds another model or dimension (load it first).
    pub fn search(
        &self,
        connection: &Connection,
        query: &DenseQuery<'_>,
    ) -> rusqlite::Result<Vec<(Fact, f32)>> {
        let DenseQuery {
            owner,
            scopes,
            model,
            vector,
            min_score,
            limit,
        } = *query;
        let Some(loaded) = self
            .loaded
            .as_ref()
            .filter(|_| self.is_loaded(model, vector.len()))
        else {
            return Ok(Vec::new());
        };
        let mut unit = vector.to_vec();
        normalize(&mut unit);
        // A handful of scopes: comparing strings is cheaper than hashing them per entry.
        let mut wanted: Vec<(String, String)> = scopes
            .iter()
            .flat_map(Scope::compatible)
            .map(|scope| (scope.kind, scope.id))
            .collect();
        wanted.sort();
        wanted.dedup();
        let mut scored: Vec<(f32, &String, &Entry)> = loaded
            .entries
            .iter()
            .filter(|(_, entry)| entry.owner == owner && wanted.contains(&entry.scope))
            .map(|(id, entry)| (dot(&unit, &entry.vector), id, entry))
            .filter(|(score, _, _)| *score >= min_score)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut hits = Vec::new();
        for (score, id, entry) in scored {
            if hits.len() == limit {
                break;
            }
            if let Some(fact) = facts::get(connection, id)?
                && fact.status == Status::Active
                && fact.content_hash == entry.content_hash
            {
                hits.push((fact, score));
            }
        }
        Ok(hits)
    }
}
