//! Operations on single facts for the surfaces (HTTP, CLI, MCP, the web UI): who stored a fact
//! ([`Origin`]), edits ([`FactEdit`]), retiring and forgetting one fact by id, and reading
//! where a fact came from ([`EvidenceRecord`]).
//!
//! Invariants: a fact of another owner is "not found", never touched; an edit is redacted and
//! validated like a new fact, and a retired fact (history) cannot be edited; an edit that
//! changes what is embedded (kind, key, title, body) or where the fact applies queues its
//! embedding job again and drops its in-memory vector until the new one is stored; forgetting
//! deletes the fact and writes a tombstone in the same transaction, so capture cannot bring it
//! back.

use rusqlite::{Connection, params};

use super::facts::{self, Tombstone};
use super::model::{Fact, Kind, Scope, Status, content_hash, normalize_canonical_key, subject_key};
use super::redaction::redact;
use super::wire::Change;
use super::{Memory, MemoryError, vectors};
use crate::store::codec::{now, to_time};

/// Who stores a fact by hand and how its source event is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin<'a> {
    /// The source event's type (`manual`, `mcp`).
    pub source_type: &'a str,
    /// The source event's reference (the MCP client's name), if any.
    pub source_ref: Option<&'a str>,
    /// The fact's `created_by` (`user`, `mcp:<client>`).
    pub created_by: &'a str,
}

impl Origin<'static> {
    /// The person, through the API, the CLI or the UI.
    pub const MANUAL: Self = Self {
        source_type: "manual",
        source_ref: None,
        created_by: "user",
    };
}

/// What an edit changes (`None`: unchanged).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FactEdit {
    /// New title.
    pub title: Option<String>,
    /// New body.
    pub body: Option<String>,
    /// New kind.
    pub kind: Option<Kind>,
    /// New scope.
    pub scope: Option<Scope>,
    /// New canonical key (`Some(None)` removes it; a key outside the controlled namespaces is
    /// refused).
    pub canonical_key: Option<Option<String>>,
    /// Pin or unpin.
    pub pinned: Option<bool>,
    /// New importance (0..1).
    pub importance: Option<f64>,
}

/// One piece of a fact's evidence with its source event.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceRecord {
    /// The source event.
    pub source_event_id: String,
    /// `manual`, `turn` or `mcp`.
    pub source_type: String,
    /// The turn, conversation or client it refers to.
    pub source_ref: Option<String>,
    /// The source event's metadata (`conversationId`, `turnId` for turns).
    pub metadata: serde_json::Value,
    /// The supporting excerpt.
    pub excerpt: Option<String>,
    /// The source text (redacted when it was stored).
    pub text: String,
    /// When the source event was recorded.
    pub created_at: String,
}

/// A canonical key as given, normalised; an error names a key that does not normalise.
pub(crate) fn checked_canonical_key(raw: &str) -> Result<String, MemoryError> {
    normalize_canonical_key(raw).ok_or_else(|| {
        MemoryError::Invalid(format!(
            "`{raw}` is not a canonical key: it must start with user.preference., \
             user.workflow., project.rule., project.decision., project.procedure., \
             session.task. or chat.note."
        ))
    })
}

fn non_empty(field: &str, text: &str) -> Result<String, MemoryError> {
    let text = redact(text.trim());
    if text.is_empty() {
        return Err(MemoryError::Invalid(format!("the {field} cannot be empty")));
    }
    Ok(text)
}

/// The fact `fact_id` of `owner`, or `NotFound`.
fn owned(connection: &Connection, owner: &str, fact_id: &str) -> Result<Fact, MemoryError> {
    facts::get(connection, fact_id)?
        .filter(|fact| fact.owner == owner)
        .ok_or_else(|| MemoryError::NotFound(fact_id.to_owned()))
}

/// Applies `edit` to `fact` (validated, redacted); whether what is embedded or the scope
/// changed.
fn apply(fact: &mut Fact, edit: FactEdit) -> Result<bool, MemoryError> {
    if let Some(title) = edit.title {
        fact.title = non_empty("title", &title)?;
    }
    if let Some(body) = edit.body {
        fact.body = non_empty("body", &body)?;
    }
    if let Some(kind) = edit.kind {
        fact.kind = kind;
    }
    if let Some(key) = edit.canonical_key {
        fact.canonical_key = match key.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => Some(checked_canonical_key(raw)?),
        };
    }
    if let Some(importance) = edit.importance {
        if !(0.0..=1.0).contains(&importance) {
            return Err(MemoryError::Invalid(
                "importance must be between 0 and 1".into(),
            ));
        }
        fact.importance = importance;
    }
    if let Some(pinned) = edit.pinned {
        fact.pinned = pinned;
    }
    let old_scope = fact.scope.clone();
    if let Some(scope) = edit.scope {
        fact.scope = scope.normalized();
        fact.retention = fact.scope.retention();
    }
    let old_hash = std::mem::take(&mut fact.content_hash);
    fact.content_hash = content_hash(
        fact.kind,
        fact.canonical_key.as_deref(),
        &fact.title,
        &fact.body,
    );
    Ok(fact.content_hash != old_hash || fact.scope != old_scope)
}

impl Memory {
    /// Edits an active fact of `owner`; returns it as stored. A fact holding the new canonical
    /// key in the scope is superseded; a change of content or scope re-embeds it.
    pub async fn update_fact(
        &self,
        owner: &str,
        fact_id: &str,
        edit: FactEdit,
    ) -> Result<Fact, MemoryError> {
        let owner = owner.to_owned();
        let id = fact_id.to_owned();
        let model = self.embedding_model().map(str::to_owned);
        let (fact, reembed) = self
            .inner
            .store
            .write(move |tx| -> Result<(Fact, bool), MemoryError> {
                let mut fact = owned(tx, &owner, &id)?;
                if fact.status != Status::Active {
                    return Err(MemoryError::Invalid(format!(
                        "memory fact {id} is retired; retired facts cannot be edited"
                    )));
                }
                let reembed = apply(&mut fact, edit)?;
                fact.updated_at = to_time(now());
                facts::update(tx, &mut fact)?;
                if reembed && let Some(model) = &model {
                    vectors::enqueue(tx, &fact, model)?;
                }
                Ok((fact, reembed))
            })
            .await?;
        if reembed {
            self.drop_vector(&fact.id);
            self.embed_fact(&fact).await;
        }
        self.announce(Change::Updated, std::slice::from_ref(&fact))
            .await;
        Ok(fact)
    }

    /// Retires a fact of `owner` (kept, never recalled); returns it.
    pub async fn retire_fact(&self, owner: &str, fact_id: &str) -> Result<Fact, MemoryError> {
        let owner = owner.to_owned();
        let id = fact_id.to_owned();
        let fact = self
            .inner
            .store
            .write(move |tx| -> Result<Fact, MemoryError> {
                owned(tx, &owner, &id)?;
                facts::set_status(tx, &id, Status::Retired)?;
                owned(tx, &owner, &id)
            })
            .await?;
        self.announce(Change::Retired, std::slice::from_ref(&fact))
            .await;
        Ok(fact)
    }

    /// Deletes a fact of `owner` with its evidence and vector and leaves a tombstone (its
    /// canonical key and subject, in its scope) so capture does not store it again; returns
    /// the fact as it was.
    pub async fn forget_fact(&self, owner: &str, fact_id: &str) -> Result<Fact, MemoryError> {
        let owner = owner.to_owned();
        let id = fact_id.to_owned();
        let fact = self
            .inner
            .store
            .write(move |tx| -> Result<Fact, MemoryError> {
                let fact = owned(tx, &owner, &id)?;
                facts::insert_tombstone(
                    tx,
                    &Tombstone {
                        owner: &fact.owner,
                        scope: &fact.scope,
                        canonical_key: fact.canonical_key.as_deref(),
                        subject_key: subject_key(&fact.title).as_deref(),
                        reason: "explicit_delete",
                    },
                )?;
                facts::delete(tx, &id)?;
                Ok(fact)
            })
            .await?;
        self.drop_vector(&fact.id);
        self.announce(Change::Deleted, std::slice::from_ref(&fact))
            .await;
        Ok(fact)
    }

    /// A fact of `owner` with its evidence, oldest first.
    pub async fn evidence(
        &self,
        owner: &str,
        fact_id: &str,
    ) -> Result<(Fact, Vec<EvidenceRecord>), MemoryError> {
        let owner = owner.to_owned();
        let id = fact_id.to_owned();
        self.inner
            .store
            .read(move |connection| {
                let fact = owned(connection, &owner, &id)?;
                let records = evidence_of(connection, &id)?;
                Ok::<_, MemoryError>((fact, records))
            })
            .await
    }

    fn drop_vector(&self, fact_id: &str) {
        self.inner
            .vectors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(fact_id);
    }
}

fn evidence_of(connection: &Connection, fact_id: &str) -> rusqlite::Result<Vec<EvidenceRecord>> {
    let mut statement = connection.prepare_cached(
        "SELECT s.id, s.source_type, s.source_ref, s.metadata_json, e.evidence_text, s.text, \
         s.created_at FROM memory_fact_evidence e \
         JOIN memory_source_events s ON s.id = e.source_event_id \
         WHERE e.fact_id = ?1 ORDER BY s.created_at, s.id",
    )?;
    statement
        .query_map(params![fact_id], |row| {
            let metadata: String = row.get(3)?;
            Ok(EvidenceRecord {
                source_event_id: row.get(0)?,
                source_type: row.get(1)?,
                source_ref: row.get(2)?,
                metadata: serde_json::from_str(&metadata).unwrap_or(serde_json::Value::Null),
                excerpt: row.get(4)?,
                text: row.get(5)?,
                created_at: row.get(6)?,
            })
        })?
        .collect()
}

#[cfg(test)]
mod tests;
