//! Facts in the wire contract's shapes (`souz_protocol::memory`), scopes as the surfaces write
//! them (`global`, `session:<chat id>`, `project:<id>`), and the `memory.fact.*` events that
//! announce changes (with a counter of them for in-process followers of the facts alone).
//!
//! Invariants: an event carries the fact's id, kind, scope and author, never its text (the
//! text stays behind the operator-only `/v1/memory`); every change a [`Memory`] makes is
//! announced after its transaction commits, and a failed announcement is logged, never turns
//! a stored change into an error.

use souz_protocol::RuntimeEvent;
use souz_protocol::memory::{MemoryFact, MemoryKind, MemoryStatus};

use super::model::{Fact, Kind, Scope, Status};
use super::{Memory, MemoryError};

/// Longest title a surface may store, in characters.
pub(crate) const MAX_TITLE_CHARS: usize = 200;
/// Longest body a surface may store, in characters.
pub(crate) const MAX_BODY_CHARS: usize = 4_000;
/// Longest search query a surface accepts, in characters.
pub(crate) const MAX_QUERY_CHARS: usize = 2_000;
/// Facts a surface's search returns by default.
pub(crate) const DEFAULT_SEARCH: u32 = 8;
/// Facts a surface's search returns at most.
pub(crate) const MAX_SEARCH: u32 = 20;

/// `text` cut to `max` characters, with `…` when something was cut.
pub(crate) fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The lexical hints of a surface's search: the non-blank `hints`, or (as automatic recall
/// does) the query's own words when there are none.
pub(crate) fn search_hints(query: &str, hints: Vec<String>) -> Vec<String> {
    let hints: Vec<String> = hints
        .into_iter()
        .filter(|hint| !hint.trim().is_empty())
        .collect();
    if hints.is_empty() {
        vec![query.to_owned()]
    } else {
        hints
    }
}

/// A kind on the wire.
pub(crate) fn kind_to_wire(kind: Kind) -> MemoryKind {
    match kind {
        Kind::Semantic => MemoryKind::Semantic,
        Kind::Preference => MemoryKind::Preference,
        Kind::Procedure => MemoryKind::Procedure,
        Kind::ProjectRule => MemoryKind::ProjectRule,
        Kind::EpisodeNote => MemoryKind::EpisodeNote,
        Kind::ProjectDecision => MemoryKind::ProjectDecision,
    }
}

/// A kind from the wire.
pub(crate) fn kind_from_wire(kind: MemoryKind) -> Kind {
    match kind {
        MemoryKind::Semantic => Kind::Semantic,
        MemoryKind::Preference => Kind::Preference,
        MemoryKind::Procedure => Kind::Procedure,
        MemoryKind::ProjectRule => Kind::ProjectRule,
        MemoryKind::EpisodeNote => Kind::EpisodeNote,
        MemoryKind::ProjectDecision => Kind::ProjectDecision,
    }
}

/// A scope as the surfaces write it: `global`, or `<kind>:<id>`.
pub(crate) fn scope_label(scope: &Scope) -> String {
    let scope = scope.normalized();
    if scope.kind == "global" {
        "global".to_owned()
    } else {
        format!("{}:{}", scope.kind, scope.id)
    }
}

/// Reads a scope written `global`, `session:<chat id>`, `project:<id>` (or the legacy
/// `chat:<id>`, `thread:<id>`).
pub(crate) fn parse_scope(text: &str) -> Result<Scope, MemoryError> {
    let text = text.trim();
    let invalid = || {
        MemoryError::Invalid(format!(
            "`{text}` is not a memory scope: use global, session:<chat id> or project:<id>"
        ))
    };
    if text.eq_ignore_ascii_case("global") || text.eq_ignore_ascii_case("global:global") {
        return Ok(Scope::global());
    }
    let (kind, id) = text.split_once(':').ok_or_else(invalid)?;
    let kind = kind.trim().to_ascii_lowercase();
    let id = id.trim();
    if id.is_empty() || id.len() > 200 || id.chars().any(char::is_control) {
        return Err(invalid());
    }
    match kind.as_str() {
        "session" | "project" | "chat" | "thread" => Ok(Scope {
            kind,
            id: id.to_owned(),
        }
        .normalized()),
        _ => Err(invalid()),
    }
}

/// A fact on the wire.
pub(crate) fn fact_to_wire(fact: &Fact) -> MemoryFact {
    MemoryFact {
        id: fact.id.clone(),
        scope: scope_label(&fact.scope),
        kind: kind_to_wire(fact.kind),
        title: fact.title.clone(),
        body: fact.body.clone(),
        canonical_key: fact.canonical_key.clone(),
        status: match fact.status {
            Status::Active => MemoryStatus::Active,
            Status::Retired => MemoryStatus::Retired,
        },
        retention: fact.retention.as_str().to_owned(),
        confidence: fact.confidence,
        importance: fact.importance,
        pinned: fact.pinned,
        created_by: fact.created_by.clone(),
        created_at: fact.created_at.clone(),
        updated_at: fact.updated_at.clone(),
        supersedes_fact_id: fact.supersedes_fact_id.clone(),
    }
}

/// A change to announce.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change {
    Created,
    Updated,
    Retired,
    Deleted,
}

fn event(change: Change, fact: &Fact) -> RuntimeEvent {
    let fact_id = fact.id.clone();
    match change {
        Change::Created => RuntimeEvent::MemoryFactCreated {
            fact_id,
            kind: kind_to_wire(fact.kind),
            scope: scope_label(&fact.scope),
            created_by: fact.created_by.clone(),
        },
        Change::Updated => RuntimeEvent::MemoryFactUpdated {
            fact_id,
            kind: kind_to_wire(fact.kind),
            scope: scope_label(&fact.scope),
            pinned: fact.pinned,
        },
        Change::Retired => RuntimeEvent::MemoryFactRetired { fact_id },
        Change::Deleted => RuntimeEvent::MemoryFactDeleted { fact_id },
    }
}

impl Memory {
    /// Announces changes on the runtime event bus (once; later calls change nothing).
    pub(crate) fn announce_to(&self, bus: crate::bus::EventBus) {
        let _ = self.inner.events.set(bus);
    }

    /// Announces `change` of `facts`: their events on the bus (when there is one), then one
    /// step of [`Memory::changes`].
    pub(crate) async fn announce(&self, change: Change, facts: &[Fact]) {
        if facts.is_empty() {
            return;
        }
        if let Some(bus) = self.inner.events.get() {
            for fact in facts {
                let mut events = Vec::with_capacity(2);
                // A new fact retired the holder of its canonical key.
                if let (Change::Created, Some(old)) = (change, &fact.supersedes_fact_id) {
                    events.push(RuntimeEvent::MemoryFactRetired {
                        fact_id: old.clone(),
                    });
                }
                events.push(event(change, fact));
                if let Err(error) = bus
                    .publish_with(move |_| Ok::<_, crate::store::StoreError>(((), events)))
                    .await
                {
                    tracing::warn!(%error, fact_id = %fact.id, "could not announce a memory change");
                }
            }
        }
        // After the events: whoever is woken by this step and looks finds the change stored
        // and announced.
        self.inner
            .changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// A counter that steps after each announced change of facts (created, edited, retired,
    /// deleted). Followers that care only about facts wait on it instead of on every runtime
    /// event: a tool call's events wake none of them.
    pub(crate) fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }
}
