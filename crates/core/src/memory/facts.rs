//! The memory tables (`memory_*`, created by the `memory` migration): facts, evidence, source
//! events, tombstones, retrieval stats, and the stemmed lexical index. Plain functions over a
//! connection or a transaction; `Memory` decides what runs in which transaction.
//!
//! Invariants:
//! - At most one active fact per (owner, scope, canonical key): [`insert`] retires the active
//!   holder of the key in the same transaction (the unique index backs it up), and the new
//!   fact records which one it superseded.
//! - Capture does not store an active fact's exact content twice in one scope: [`confirm`]
//!   adds the restatement's evidence to the fact that holds it.
//! - The lexical index holds exactly the active facts: every write that activates, edits,
//!   retires or deletes a fact updates it in the same transaction.
//! - Deleting a fact deletes its evidence, embedding, stats and jobs (foreign keys cascade);
//!   a source event no fact cites any more is deleted with it.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};

use super::bm25;
use super::model::{Fact, Kind, Retention, SCOPE_CLOSED_SUBJECT, Scope, Status};
use super::text::stemmed;
use crate::store::codec::{now, to_time};
use crate::store::{CachedStatements, StoreError};

/// The columns [`fact_from_row`] reads, in order, for a table aliased `f`.
pub const FACT_COLUMNS: &str = "f.id, f.owner_id, f.scope_type, f.scope_id, f.kind, f.title, \
     f.body, f.canonical_key, f.status, f.retention, f.confidence, f.importance, f.pinned, \
     f.created_by, f.content_hash, f.created_at, f.updated_at, f.supersedes_fact_id";

pub(super) fn corrupt(column: &str, error: impl std::fmt::Display) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        0,
        rusqlite::types::Type::Text,
        Box::new(StoreError::Corrupt(format!("{column}: {error}"))),
    )
}

/// Reads a fact from a row selected with [`FACT_COLUMNS`].
pub fn fact_from_row(row: &Row<'_>) -> rusqlite::Result<Fact> {
    let kind: String = row.get(4)?;
    let status: String = row.get(8)?;
    let retention: String = row.get(9)?;
    Ok(Fact {
        id: row.get(0)?,
        owner: row.get(1)?,
        scope: Scope {
            kind: row.get(2)?,
            id: row.get(3)?,
        },
        kind: kind
            .parse::<Kind>()
            .map_err(|error| corrupt("kind", error))?,
        title: row.get(5)?,
        body: row.get(6)?,
        canonical_key: row.get(7)?,
        status: status
            .parse::<Status>()
            .map_err(|error| corrupt("status", error))?,
        retention: retention
            .parse::<Retention>()
            .map_err(|error| corrupt("retention", error))?,
        confidence: row.get(10)?,
        importance: row.get(11)?,
        pinned: row.get::<_, i64>(12)? != 0,
        created_by: row.get(13)?,
        content_hash: row.get(14)?,
        created_at: row.get(15)?,
        updated_at: row.get(16)?,
        supersedes_fact_id: row.get(17)?,
    })
}

/// `(f.scope_type = ? AND f.scope_id = ?) OR ...` for `scopes` (and their legacy aliases),
/// with its parameters appended to `params`; `None` when there is no scope.
pub fn scope_clause(scopes: &[Scope], params: &mut Vec<String>) -> Option<String> {
    let mut all: Vec<Scope> = scopes.iter().flat_map(Scope::compatible).collect();
    all.sort();
    all.dedup();
    if all.is_empty() {
        return None;
    }
    let clause = all
        .iter()
        .map(|_| "(f.scope_type = ? AND f.scope_id = ?)")
        .collect::<Vec<_>>()
        .join(" OR ");
    for scope in all {
        params.push(scope.kind);
        params.push(scope.id);
    }
    Some(format!("({clause})"))
}

/// The text the lexical index holds for a fact: stems of its title, body and canonical key.
fn index_terms(fact: &Fact) -> String {
    stemmed(&format!(
        "{} {} {}",
        fact.title,
        fact.body,
        fact.canonical_key.as_deref().unwrap_or_default()
    ))
}

fn rowid(connection: &Connection, fact_id: &str) -> rusqlite::Result<Option<i64>> {
    connection
        .query_row_cached(
            "SELECT rowid FROM memory_facts WHERE id = ?1",
            [fact_id],
            |row| row.get(0),
        )
        .optional()
}

/// Brings the lexical index entry of `fact` in step with it (present iff active).
pub fn reindex(connection: &Connection, fact: &Fact) -> rusqlite::Result<()> {
    let Some(rowid) = rowid(connection, &fact.id)? else {
        return Ok(());
    };
    connection.execute_cached("DELETE FROM memory_facts_fts WHERE rowid = ?1", [rowid])?;
    if fact.status == Status::Active {
        connection.execute_cached(
            "INSERT INTO memory_facts_fts (rowid, terms) VALUES (?1, ?2)",
            params![rowid, index_terms(fact)],
        )?;
    }
    Ok(())
}

/// One fact by id.
pub fn get(connection: &Connection, fact_id: &str) -> rusqlite::Result<Option<Fact>> {
    connection
        .query_row_cached(
            &format!("SELECT {FACT_COLUMNS} FROM memory_facts f WHERE f.id = ?1"),
            [fact_id],
            fact_from_row,
        )
        .optional()
}

/// The facts of `fact_ids`, by id, in one statement (a missing one is left out).
pub fn by_ids(
    connection: &Connection,
    fact_ids: &[&str],
) -> rusqlite::Result<HashMap<String, Fact>> {
    if fact_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let listed = serde_json::to_string(fact_ids).map_err(|error| corrupt("fact ids", error))?;
    connection
        .prepare_cached(&format!(
            "SELECT {FACT_COLUMNS} FROM json_each(?1) r \
             CROSS JOIN memory_facts f ON f.id = r.value"
        ))?
        .query_map([listed], |row| {
            let fact = fact_from_row(row)?;
            Ok((fact.id.clone(), fact))
        })?
        .collect()
}

/// The active fact holding `key` in exactly `scope`.
pub fn find_active_by_key(
    connection: &Connection,
    owner: &str,
    scope: &Scope,
    key: &str,
) -> rusqlite::Result<Option<Fact>> {
    connection
        .query_row_cached(
            &format!(
                "SELECT {FACT_COLUMNS} FROM memory_facts f WHERE f.owner_id = ?1 \
                 AND f.scope_type = ?2 AND f.scope_id = ?3 AND f.canonical_key = ?4 \
                 AND f.status = 'ACTIVE'"
            ),
            params![owner, scope.kind, scope.id, key],
            fact_from_row,
        )
        .optional()
}

/// The active fact of `owner` in exactly `scope` whose content hash is `hash` (the same kind,
/// key, title and body), the oldest if there are several.
pub fn find_active_by_hash(
    connection: &Connection,
    owner: &str,
    scope: &Scope,
    hash: &str,
) -> rusqlite::Result<Option<Fact>> {
    connection
        .query_row_cached(
            &format!(
                "SELECT {FACT_COLUMNS} FROM memory_facts f WHERE f.content_hash = ?1 \
                 AND f.owner_id = ?2 AND f.scope_type = ?3 AND f.scope_id = ?4 \
                 AND f.status = 'ACTIVE' ORDER BY f.created_at LIMIT 1"
            ),
            params![hash, owner, scope.kind, scope.id],
            fact_from_row,
        )
        .optional()
}

/// Records that `fact` was stated again by `restated`: `evidence` is added to it, its
/// confidence and importance rise to the restatement's if higher, a pin is kept or added, and
/// `updated_at` moves to now. Its content is unchanged, so its lexical row and embedding stay
/// valid. Returns the fact as stored.
pub fn confirm(
    connection: &Connection,
    fact: &Fact,
    restated: &Fact,
    evidence: &[EvidenceRef],
) -> rusqlite::Result<Fact> {
    let mut confirmed = fact.clone();
    confirmed.confidence = fact.confidence.max(restated.confidence);
    confirmed.importance = fact.importance.max(restated.importance.clamp(0.0, 1.0));
    confirmed.pinned = fact.pinned || restated.pinned;
    confirmed.updated_at = to_time(now());
    connection.execute_cached(
        "UPDATE memory_facts SET confidence = ?2, importance = ?3, pinned = ?4, updated_at = ?5 \
         WHERE id = ?1",
        params![
            confirmed.id,
            confirmed.confidence,
            confirmed.importance,
            i64::from(confirmed.pinned),
            confirmed.updated_at
        ],
    )?;
    add_evidence(connection, &confirmed.id, evidence)?;
    Ok(confirmed)
}

fn add_evidence(
    connection: &Connection,
    fact_id: &str,
    evidence: &[EvidenceRef],
) -> rusqlite::Result<()> {
    for reference in evidence {
        connection.execute_cached(
            "INSERT OR IGNORE INTO memory_fact_evidence (fact_id, source_event_id, evidence_text) \
             VALUES (?1, ?2, ?3)",
            params![fact_id, reference.source_event_id, reference.evidence_text],
        )?;
    }
    Ok(())
}

/// Where a new fact's evidence comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceRef {
    /// The source event.
    pub source_event_id: String,
    /// The supporting excerpt.
    pub evidence_text: Option<String>,
}

/// Retires another active holder of `fact`'s canonical key (in its owner and scope) and notes it
/// in `fact.supersedes_fact_id`: one active fact per key.
fn supersede_holder(connection: &Connection, fact: &mut Fact) -> rusqlite::Result<()> {
    if let (Some(key), Status::Active) = (fact.canonical_key.clone(), fact.status)
        && let Some(holder) = find_active_by_key(connection, &fact.owner, &fact.scope, &key)?
        && holder.id != fact.id
    {
        set_status(connection, &holder.id, Status::Retired)?;
        fact.supersedes_fact_id = Some(holder.id);
    }
    Ok(())
}

/// Stores `fact` (its id, hash and times already set), retiring the active holder of its
/// canonical key (`fact.supersedes_fact_id` names it).
pub fn insert(
    connection: &Connection,
    fact: &mut Fact,
    evidence: &[EvidenceRef],
) -> rusqlite::Result<()> {
    supersede_holder(connection, fact)?;
    connection.execute_cached(
        "INSERT INTO memory_facts (id, owner_id, scope_type, scope_id, kind, title, body, \
         canonical_key, status, retention, confidence, importance, pinned, created_by, \
         content_hash, created_at, updated_at, supersedes_fact_id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        params![
            fact.id,
            fact.owner,
            fact.scope.kind,
            fact.scope.id,
            fact.kind.as_str(),
            fact.title,
            fact.body,
            fact.canonical_key,
            fact.status.as_str(),
            fact.retention.as_str(),
            fact.confidence,
            fact.importance,
            i64::from(fact.pinned),
            fact.created_by,
            fact.content_hash,
            fact.created_at,
            fact.updated_at,
            fact.supersedes_fact_id,
        ],
    )?;
    add_evidence(connection, &fact.id, evidence)?;
    reindex(connection, fact)
}

/// Rewrites a stored fact's mutable fields (after an edit), retiring another active holder of
/// its canonical key.
pub fn update(connection: &Connection, fact: &mut Fact) -> rusqlite::Result<()> {
    supersede_holder(connection, fact)?;
    connection.execute_cached(
        "UPDATE memory_facts SET scope_type = ?2, scope_id = ?3, kind = ?4, title = ?5, \
         body = ?6, canonical_key = ?7, status = ?8, retention = ?9, confidence = ?10, \
         importance = ?11, pinned = ?12, content_hash = ?13, updated_at = ?14, \
         supersedes_fact_id = ?15 WHERE id = ?1",
        params![
            fact.id,
            fact.scope.kind,
            fact.scope.id,
            fact.kind.as_str(),
            fact.title,
            fact.body,
            fact.canonical_key,
            fact.status.as_str(),
            fact.retention.as_str(),
            fact.confidence,
            fact.importance,
            i64::from(fact.pinned),
            fact.content_hash,
            fact.updated_at,
            fact.supersedes_fact_id,
        ],
    )?;
    reindex(connection, fact)
}

/// Sets a fact's status (and `updated_at`); whether it existed.
pub fn set_status(
    connection: &Connection,
    fact_id: &str,
    status: Status,
) -> rusqlite::Result<bool> {
    let changed = connection.execute_cached(
        "UPDATE memory_facts SET status = ?2, updated_at = ?3 WHERE id = ?1",
        params![fact_id, status.as_str(), to_time(now())],
    )? > 0;
    if let Some(fact) = get(connection, fact_id)? {
        reindex(connection, &fact)?;
    }
    Ok(changed)
}

/// Deletes a fact and everything hanging from it, and source events left uncited; whether it
/// existed.
pub fn delete(connection: &Connection, fact_id: &str) -> rusqlite::Result<bool> {
    let Some(rowid) = rowid(connection, fact_id)? else {
        return Ok(false);
    };
    let sources: Vec<String> = connection
        .prepare_cached("SELECT source_event_id FROM memory_fact_evidence WHERE fact_id = ?1")?
        .query_map([fact_id], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    connection.execute_cached("DELETE FROM memory_facts_fts WHERE rowid = ?1", [rowid])?;
    connection.execute_cached("DELETE FROM memory_facts WHERE id = ?1", [fact_id])?;
    for source in sources {
        delete_source_event_if_unused(connection, &source)?;
    }
    Ok(true)
}

/// Deletes every fact of `owner` in `scope` (and its legacy aliases); how many.
pub fn delete_scope(
    connection: &Connection,
    owner: &str,
    scope: &Scope,
) -> rusqlite::Result<usize> {
    let mut params = vec![owner.to_owned()];
    let Some(clause) = scope_clause(std::slice::from_ref(scope), &mut params) else {
        return Ok(0);
    };
    let ids: Vec<String> = connection
        .prepare(&format!(
            "SELECT f.id FROM memory_facts f WHERE f.owner_id = ? AND {clause}"
        ))?
        .query_map(params_from_iter(params.iter()), |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in &ids {
        delete(connection, id)?;
    }
    Ok(ids.len())
}

/// A new source event.
#[derive(Debug, Clone)]
pub struct NewSourceEvent<'a> {
    /// Whose.
    pub owner: &'a str,
    /// Where it happened.
    pub scope: &'a Scope,
    /// `manual` or `turn`.
    pub source_type: &'a str,
    /// What it refers to (the chat, the turn).
    pub source_ref: Option<&'a str>,
    /// The redacted text.
    pub text: &'a str,
    /// Extra JSON.
    pub metadata_json: &'a str,
}

/// Stores a source event; returns its id.
pub fn insert_source_event(
    connection: &Connection,
    event: &NewSourceEvent<'_>,
) -> rusqlite::Result<String> {
    let id = uuid::Uuid::now_v7().to_string();
    connection.execute_cached(
        "INSERT INTO memory_source_events (id, owner_id, scope_type, scope_id, source_type, \
         source_ref, text, metadata_json, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            id,
            event.owner,
            event.scope.kind,
            event.scope.id,
            event.source_type,
            event.source_ref,
            event.text,
            event.metadata_json,
            to_time(now()),
        ],
    )?;
    Ok(id)
}

/// Deletes a source event no fact cites.
pub fn delete_source_event_if_unused(connection: &Connection, id: &str) -> rusqlite::Result<()> {
    connection.execute_cached(
        "DELETE FROM memory_source_events WHERE id = ?1 AND NOT EXISTS \
         (SELECT 1 FROM memory_fact_evidence WHERE source_event_id = ?1)",
        [id],
    )?;
    Ok(())
}

/// A tombstone: facts with this canonical key or subject in this scope are not captured again.
#[derive(Debug, Clone)]
pub struct Tombstone<'a> {
    /// Whose.
    pub owner: &'a str,
    /// Where.
    pub scope: &'a Scope,
    /// The forgotten canonical key.
    pub canonical_key: Option<&'a str>,
    /// The forgotten subject (see `model::subject_key`), or [`SCOPE_CLOSED_SUBJECT`].
    pub subject_key: Option<&'a str>,
    /// Why (`explicit_forget`, `scope_closed`).
    pub reason: &'a str,
}

/// Stores a tombstone.
pub fn insert_tombstone(
    connection: &Connection,
    tombstone: &Tombstone<'_>,
) -> rusqlite::Result<()> {
    if tombstone.canonical_key.is_none() && tombstone.subject_key.is_none() {
        return Ok(());
    }
    connection.execute_cached(
        "INSERT INTO memory_tombstones (id, owner_id, scope_type, scope_id, canonical_key, \
         subject_key, reason, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            uuid::Uuid::now_v7().to_string(),
            tombstone.owner,
            tombstone.scope.kind,
            tombstone.scope.id,
            tombstone.canonical_key,
            tombstone.subject_key,
            tombstone.reason,
            to_time(now()),
        ],
    )?;
    Ok(())
}

/// Whether a tombstone in `scope` (or its aliases) names `canonical_key` or `subject_key`.
pub fn has_tombstone(
    connection: &Connection,
    owner: &str,
    scope: &Scope,
    canonical_key: Option<&str>,
    subject_key: Option<&str>,
) -> rusqlite::Result<bool> {
    if canonical_key.is_none() && subject_key.is_none() {
        return Ok(false);
    }
    let mut params = vec![owner.to_owned()];
    let Some(clause) = scope_clause(std::slice::from_ref(scope), &mut params) else {
        return Ok(false);
    };
    let mut names = Vec::new();
    if let Some(key) = canonical_key {
        names.push("f.canonical_key = ?");
        params.push(key.to_owned());
    }
    if let Some(subject) = subject_key {
        names.push("f.subject_key = ?");
        params.push(subject.to_owned());
    }
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM memory_tombstones f WHERE f.owner_id = ? AND {clause} \
         AND ({}))",
        names.join(" OR ")
    );
    connection.query_row(&sql, params_from_iter(params.iter()), |row| row.get(0))
}

/// Whether capture into `scope` was closed (its conversation was cleaned up).
pub fn is_scope_closed(
    connection: &Connection,
    owner: &str,
    scope: &Scope,
) -> rusqlite::Result<bool> {
    has_tombstone(connection, owner, scope, None, Some(SCOPE_CLOSED_SUBJECT))
}

/// Which facts a listing returns.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Whose (required).
    pub owner: String,
    /// Only these statuses (empty: active only).
    pub statuses: Vec<Status>,
    /// Only these kinds (empty: any).
    pub kinds: Vec<Kind>,
    /// Only these scopes (empty: any).
    pub scopes: Vec<Scope>,
    /// Only pinned (or only unpinned) facts.
    pub pinned: Option<bool>,
    /// Only facts whose title, body or key contains this text (case-insensitive).
    pub query: Option<String>,
    /// Most facts.
    pub limit: usize,
    /// Facts skipped first.
    pub offset: usize,
}

/// The active facts of `owner` most recently updated in each of `scopes` (with their legacy
/// aliases), at most `limit` per stored scope, scope by scope (the scan of "forget <title>";
/// exact recall reads the same facts through [`recent_matching`]).
///
/// One query per stored `(scope_type, scope_id)`, so each reads `memory_facts_owner_scope` in
/// order and stops after `limit` rows; an `OR` of scopes made SQLite read and sort every fact of
/// them (100k facts: ~0.5 s per recall).
pub fn recent_in_scopes(
    connection: &Connection,
    owner: &str,
    scopes: &[Scope],
    limit: usize,
) -> rusqlite::Result<Vec<Fact>> {
    let mut statement = connection.prepare_cached(&recent_query(FACT_COLUMNS, limit))?;
    let mut recent = Vec::new();
    for scope in &stored_scopes(scopes) {
        let rows = statement.query_map(params![owner, scope.kind, scope.id], fact_from_row)?;
        for row in rows {
            recent.push(row?);
        }
    }
    Ok(recent)
}

/// What [`recent_in_scopes`] would return, but only the facts whose [`lowercase_text`] passes
/// `keep` (exact recall's scan for query terms): only the text of each fact looked at is
/// read, whole facts only for those kept (at 100k facts a recall looks at hundreds and keeps
/// a handful).
pub fn recent_matching(
    connection: &Connection,
    owner: &str,
    scopes: &[Scope],
    limit: usize,
    keep: impl Fn(&str) -> bool,
) -> rusqlite::Result<Vec<Fact>> {
    let mut statement = connection.prepare_cached(&recent_query(RECENT_TEXT_COLUMNS, limit))?;
    let mut kept: Vec<String> = Vec::new();
    for scope in &stored_scopes(scopes) {
        let mut rows = statement.query(params![owner, scope.kind, scope.id])?;
        while let Some(row) = rows.next()? {
            let text = |at: usize, column: &str| {
                row.get_ref(at)?
                    .as_str_or_null()
                    .map_err(|error| corrupt(column, error))
            };
            let title = text(1, "title")?.unwrap_or_default();
            let body = text(2, "body")?.unwrap_or_default();
            if keep(&lowercase_text(title, body, text(3, "canonical_key")?)) {
                kept.push(row.get(0)?);
            }
        }
    }
    let ids: Vec<&str> = kept.iter().map(String::as_str).collect();
    let mut found = by_ids(connection, &ids)?;
    Ok(kept.iter().filter_map(|id| found.remove(id)).collect())
}

/// What [`recent_matching`] reads of each fact it looks at.
pub(crate) const RECENT_TEXT_COLUMNS: &str = "f.id, f.title, f.body, f.canonical_key";

/// A fact's title, body and canonical key in lowercase, as recall looks for terms in them.
pub fn lowercase_text(title: &str, body: &str, canonical_key: Option<&str>) -> String {
    format!("{title} {body} {}", canonical_key.unwrap_or_default()).to_lowercase()
}

/// `scopes` with their legacy aliases, each stored scope once.
fn stored_scopes(scopes: &[Scope]) -> Vec<Scope> {
    let mut stored: Vec<Scope> = scopes.iter().flat_map(Scope::compatible).collect();
    stored.sort();
    stored.dedup();
    stored
}

/// The SQL of one scope's part of [`recent_in_scopes`] (`columns` of each fact). The limit is
/// written into it: SQLite re-prepares a statement whenever a bound `LIMIT` changes, and the
/// statement is run once per scope with the same one.
pub(crate) fn recent_query(columns: &str, limit: usize) -> String {
    format!(
        "SELECT {columns} FROM memory_facts f WHERE f.owner_id = ?1 \
         AND f.scope_type = ?2 AND f.scope_id = ?3 AND f.status = 'ACTIVE' \
         ORDER BY f.updated_at DESC LIMIT {limit}"
    )
}

/// Facts matching `filter`, most recently updated first.
pub fn list(connection: &Connection, filter: &Filter) -> rusqlite::Result<Vec<Fact>> {
    let (sql, params) = list_query(filter);
    connection
        .prepare_cached(&sql)?
        .query_map(params_from_iter(params.iter()), fact_from_row)?
        .collect()
}

/// The SQL of [`list`] and its parameters.
pub(crate) fn list_query(filter: &Filter) -> (String, Vec<String>) {
    let mut params = vec![filter.owner.clone()];
    let mut conditions = vec!["f.owner_id = ?".to_owned()];
    let statuses: Vec<Status> = if filter.statuses.is_empty() {
        vec![Status::Active]
    } else {
        filter.statuses.clone()
    };
    // Statuses as literals (they are the enum's own words), and one as `=`: the planner uses
    // the partial index of pinned active facts only when the query repeats its terms
    // (`status = 'ACTIVE'`, `pinned = 1`) word for word.
    conditions.push(match statuses.as_slice() {
        [status] => format!("f.status = '{}'", status.as_str()),
        _ => format!(
            "f.status IN ({})",
            statuses
                .iter()
                .map(|status| format!("'{}'", status.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    });
    if !filter.kinds.is_empty() {
        conditions.push(format!(
            "f.kind IN ({})",
            filter
                .kinds
                .iter()
                .map(|_| "?")
                .collect::<Vec<_>>()
                .join(", ")
        ));
        params.extend(filter.kinds.iter().map(|kind| kind.as_str().to_owned()));
    }
    if !filter.scopes.is_empty()
        && let Some(clause) = scope_clause(&filter.scopes, &mut params)
    {
        conditions.push(clause);
    }
    if let Some(pinned) = filter.pinned {
        conditions.push(format!("f.pinned = {}", i64::from(pinned)));
    }
    if let Some(query) = filter
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        conditions.push(
            "(instr(lower(f.title), ?) > 0 OR instr(lower(f.body), ?) > 0 \
             OR instr(lower(coalesce(f.canonical_key, '')), ?) > 0)"
                .to_owned(),
        );
        let query = query.to_lowercase();
        params.extend([query.clone(), query.clone(), query]);
    }
    let sql = format!(
        "SELECT {FACT_COLUMNS} FROM memory_facts f WHERE {} \
         ORDER BY f.updated_at DESC, f.id LIMIT {} OFFSET {}",
        conditions.join(" AND "),
        filter.limit,
        filter.offset
    );
    (sql, params)
}

/// Matches ranked before the owner and scope filters apply: at most this many (times the
/// limit) are read from the facts table, whatever the number of matches. A scope holding few
/// of the matches can lose some of its weaker ones to this cut; the strongest stay.
const LEXICAL_OVERFETCH: usize = 8;

/// Active facts of `owner` in `scopes` whose stemmed text holds any of the FTS5 phrases
/// `terms`, best bm25 first ([`bm25::ranked`]), at most `limit`, each with its bm25 score
/// over the query's whole (what a fact holding every stem would score): the share of the
/// query's evidence it holds, about 0 for a fact holding only common stems, about 1 (a little
/// more for a short fact) for one holding them all. Every match is ranked, the best
/// `LEXICAL_OVERFETCH` × `limit` are read by rowid and filtered.
pub fn lexical(
    connection: &Connection,
    owner: &str,
    scopes: &[Scope],
    terms: &[String],
    limit: usize,
) -> rusqlite::Result<Vec<(Fact, f64)>> {
    let bm25::Ranked {
        scored: ranked,
        whole,
    } = bm25::ranked(connection, terms, limit.saturating_mul(LEXICAL_OVERFETCH))?;
    if ranked.is_empty() || whole <= 0.0 {
        return Ok(Vec::new());
    }
    let rowids: Vec<i64> = ranked.iter().map(|(rowid, _)| *rowid).collect();
    let Some((sql, params)) = lexical_query(owner, scopes, &rowids) else {
        return Ok(Vec::new());
    };
    let readable: HashMap<i64, String> = connection
        .prepare_cached(&sql)?
        .query_map(params_from_iter(params.iter()), |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let kept: Vec<(&str, f64)> = ranked
        .iter()
        .filter_map(|(rowid, score)| Some((readable.get(rowid)?.as_str(), *score / whole)))
        .take(limit)
        .collect();
    let ids: Vec<&str> = kept.iter().map(|(id, _)| *id).collect();
    let mut found = by_ids(connection, &ids)?;
    Ok(kept
        .into_iter()
        .filter_map(|(id, score)| found.remove(id).map(|fact| (fact, score)))
        .collect())
}

/// A JSON array of `rowids`, for `json_each`.
fn json_rowids(rowids: &[i64]) -> String {
    let listed: Vec<String> = rowids.iter().map(i64::to_string).collect();
    format!("[{}]", listed.join(","))
}

/// The SQL of [`lexical`] choosing which of `rowids` are `owner`'s active facts in `scopes`,
/// and its parameters (`None`: no scope to read). It reads the few columns it filters on;
/// only the facts kept are read whole. `CROSS JOIN` keeps the rowids the outer loop: left to
/// itself, SQLite read every fact of the owner's scope and probed the list.
pub(crate) fn lexical_query(
    owner: &str,
    scopes: &[Scope],
    rowids: &[i64],
) -> Option<(String, Vec<String>)> {
    let mut params = vec![json_rowids(rowids), owner.to_owned()];
    let clause = scope_clause(scopes, &mut params)?;
    let sql = format!(
        "SELECT f.rowid, f.id FROM json_each(?) r \
         CROSS JOIN memory_facts f ON f.rowid = r.value \
         WHERE f.owner_id = ? AND f.status = 'ACTIVE' AND {clause}"
    );
    Some((sql, params))
}

/// Counts a retrieval of each fact.
pub fn record_retrieval(connection: &Connection, fact_ids: &[String]) -> rusqlite::Result<()> {
    let at = to_time(now());
    for id in fact_ids {
        connection.execute_cached(
            "INSERT INTO memory_fact_stats (fact_id, last_retrieved_at, retrieval_count) \
             SELECT ?1, ?2, 1 WHERE EXISTS (SELECT 1 FROM memory_facts WHERE id = ?1) \
             ON CONFLICT (fact_id) DO UPDATE SET \
             last_retrieved_at = excluded.last_retrieved_at, \
             retrieval_count = retrieval_count + 1",
            params![id, at],
        )?;
    }
    Ok(())
}
