//! Stored vectors and the embedding jobs that produce them (`memory_fact_embeddings`,
//! `memory_index_jobs`), and dense candidates by exact cosine over the stored vectors.
//!
//! Invariants: a fact has at most one vector, tagged with the model, its dimension and the
//! content hash it was computed from; dense search reads only vectors of the query's model and
//! dimension whose hash is the fact's current one (a stale or foreign vector is never mixed
//! in; see `index`, which holds them in memory). A job is keyed by (fact, model, hash):
//! editing a fact queues a new one.

use chrono::Duration;
use rusqlite::{Connection, params};

use super::embedder::to_blob;
use super::facts::{FACT_COLUMNS, fact_from_row};
use super::model::Fact;
use crate::store::CachedStatements;
use crate::store::codec::{now, to_time};

/// Queues (or re-arms) the embedding job of a fact's current content.
pub fn enqueue(connection: &Connection, fact: &Fact, model: &str) -> rusqlite::Result<()> {
    let at = to_time(now());
    connection.execute_cached(
        "INSERT INTO memory_index_jobs (fact_id, owner_id, embedding_model, content_hash, status, \
         attempt_count, next_attempt_at, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, 'PENDING', 0, ?5, ?5, ?5) \
         ON CONFLICT (fact_id, embedding_model, content_hash) DO UPDATE SET \
         status = CASE WHEN status = 'COMPLETED' THEN status ELSE 'PENDING' END, updated_at = ?5",
        params![fact.id, fact.owner, model, fact.content_hash, at],
    )?;
    Ok(())
}

/// Stores a fact's vector (replacing any other) and completes its job; nothing happens when
/// the fact changed or vanished since (`content_hash` no longer its own).
pub fn store_vector(
    connection: &Connection,
    fact_id: &str,
    model: &str,
    content_hash: &str,
    vector: &[f32],
) -> rusqlite::Result<bool> {
    let current: Option<String> = connection
        .query_row_cached(
            "SELECT content_hash FROM memory_facts WHERE id = ?1",
            [fact_id],
            |row| row.get(0),
        )
        .ok();
    if current.as_deref() != Some(content_hash) {
        return Ok(false);
    }
    let at = to_time(now());
    connection.execute_cached(
        "INSERT INTO memory_fact_embeddings (fact_id, embedding_model, embedding_blob, dimension, \
         content_hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (fact_id) DO UPDATE SET embedding_model = excluded.embedding_model, \
         embedding_blob = excluded.embedding_blob, dimension = excluded.dimension, \
         content_hash = excluded.content_hash, created_at = excluded.created_at",
        params![
            fact_id,
            model,
            to_blob(vector),
            i64::try_from(vector.len()).unwrap_or(i64::MAX),
            content_hash,
            at
        ],
    )?;
    connection.execute_cached(
        "UPDATE memory_index_jobs SET status = 'COMPLETED', attempt_count = attempt_count + 1, \
         last_error_code = NULL, updated_at = ?4 \
         WHERE fact_id = ?1 AND embedding_model = ?2 AND content_hash = ?3",
        params![fact_id, model, content_hash, at],
    )?;
    Ok(true)
}

/// The delay before the next attempt of a job that failed `attempts` times (30 s, doubling,
/// at most a day).
pub fn retry_delay(attempts: u32) -> Duration {
    let seconds = 30_i64.saturating_mul(1_i64 << attempts.min(12));
    Duration::seconds(seconds.min(86_400))
}

/// The error code of an embedder whose model is not there yet (a local model being
/// downloaded): the job waits without using up an attempt.
pub const NOT_READY: &str = "model_not_ready";

/// Records a failed attempt: the job stays pending with a later `next_attempt_at`, or is
/// `FAILED` for good after `max_attempts`. A [`NOT_READY`] failure counts no attempt (the job
/// comes due again after the first retry delay).
pub fn fail_job(
    connection: &Connection,
    job: &Job,
    code: &str,
    max_attempts: u32,
) -> rusqlite::Result<()> {
    let attempts = if code == NOT_READY {
        job.attempts
    } else {
        job.attempts.saturating_add(1)
    };
    let status = if attempts >= max_attempts {
        "FAILED"
    } else {
        "PENDING"
    };
    let at = now();
    connection.execute_cached(
        "UPDATE memory_index_jobs SET status = ?4, attempt_count = ?5, last_error_code = ?6, \
         next_attempt_at = ?7, updated_at = ?8 \
         WHERE fact_id = ?1 AND embedding_model = ?2 AND content_hash = ?3",
        params![
            job.fact_id,
            job.model,
            job.content_hash,
            status,
            attempts,
            code,
            to_time(at + retry_delay(attempts.max(1))),
            to_time(at)
        ],
    )?;
    Ok(())
}

/// An embedding job due now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The fact.
    pub fact_id: String,
    /// The model to embed with.
    pub model: String,
    /// The content it embeds.
    pub content_hash: String,
    /// Attempts so far.
    pub attempts: u32,
    /// The text to embed (see [`embedding_text`]).
    pub text: String,
}

/// What a fact is embedded as: its title and body. (The original appended `kind=…` and
/// `scope=…` lines; English labels on every fact pull a multilingual model's vectors of
/// Russian facts toward English ones: on the bilingual recall set, multilingual-e5-small's
/// cross-language recall@5 by vectors alone was 0.797 with them and 0.891 without.)
pub fn embedding_text(fact: &Fact) -> String {
    format!("{}\n{}", fact.title, fact.body)
}

/// Pending jobs of `model` due now, oldest first, for facts whose content is still the job's.
pub fn due_jobs(connection: &Connection, model: &str, limit: usize) -> rusqlite::Result<Vec<Job>> {
    let sql = format!(
        "SELECT {FACT_COLUMNS}, j.attempt_count FROM memory_index_jobs j \
         JOIN memory_facts f ON f.id = j.fact_id AND f.content_hash = j.content_hash \
         WHERE j.status = 'PENDING' AND j.embedding_model = ?1 AND j.next_attempt_at <= ?2 \
         AND f.status = 'ACTIVE' ORDER BY j.next_attempt_at LIMIT {limit}"
    );
    connection
        .prepare_cached(&sql)?
        .query_map(params![model, to_time(now())], |row| {
            let fact = fact_from_row(row)?;
            Ok(Job {
                text: embedding_text(&fact),
                fact_id: fact.id,
                content_hash: fact.content_hash,
                model: model.to_owned(),
                attempts: row.get(18)?,
            })
        })?
        .collect()
}

/// When the next pending job of `model` is due, if there is one.
pub fn next_due(connection: &Connection, model: &str) -> rusqlite::Result<Option<String>> {
    connection.query_row_cached(
        "SELECT min(next_attempt_at) FROM memory_index_jobs \
         WHERE status = 'PENDING' AND embedding_model = ?1",
        [model],
        |row| row.get(0),
    )
}
