//! Storing what a capture accepted: one source event, tombstones and closed scopes checked
//! inside the write, and a fact already held word for word confirmed instead of duplicated.

use rusqlite::Connection;

use super::*;

/// What a capture wrote.
pub(super) struct Captured {
    /// New facts.
    pub(super) created: Vec<Fact>,
    /// Active facts stated again word for word: they gained this turn as evidence.
    pub(super) confirmed: Vec<Fact>,
}

/// Stores accepted candidates with one source event (removed again if nothing cites it);
/// tombstones and closed scopes are checked here, inside the write. A candidate whose content
/// an active fact in its scope already holds confirms that fact instead of adding a duplicate.
pub(super) fn store_captured(
    tx: &Connection,
    turn: &CapturedTurn,
    accepted: &[capture::Accepted],
    text: &str,
    model: Option<&str>,
) -> Result<Captured, MemoryError> {
    let owner = turn.context.owner.as_str();
    let source_scope = turn
        .context
        .session
        .as_deref()
        .map_or_else(Scope::global, Scope::session);
    let metadata = serde_json::json!({
        "conversationId": turn.context.session,
        "turnId": turn.turn_id,
    });
    let source = facts::insert_source_event(
        tx,
        &NewSourceEvent {
            owner,
            scope: &source_scope,
            source_type: "turn",
            source_ref: turn.turn_id.as_deref().or(turn.context.session.as_deref()),
            text,
            metadata_json: &metadata.to_string(),
        },
    )?;
    let (mut created, mut confirmed) = (Vec::new(), Vec::new());
    for item in accepted {
        let candidate = &item.candidate;
        let title = redact(candidate.title.trim());
        if facts::is_scope_closed(tx, owner, &item.scope)?
            || facts::has_tombstone(
                tx,
                owner,
                &item.scope,
                item.canonical_key.as_deref(),
                subject_key(&title).as_deref(),
            )?
        {
            continue;
        }
        let mut fact = build_fact(FactSpec {
            owner,
            scope: item.scope.clone(),
            kind: candidate.kind,
            body: redact(candidate.body.trim()),
            title,
            canonical_key: item.canonical_key.clone(),
            confidence: candidate.confidence,
            importance: candidate.importance.unwrap_or(candidate.confidence),
            pinned: false,
            created_by: "writer",
        });
        let evidence = [EvidenceRef {
            source_event_id: source.clone(),
            evidence_text: Some(redact(candidate.evidence_text.trim())),
        }];
        if let Some(held) = facts::find_active_by_hash(tx, owner, &fact.scope, &fact.content_hash)?
        {
            confirmed.push(facts::confirm(tx, &held, &fact, &evidence)?);
            continue;
        }
        facts::insert(tx, &mut fact, &evidence)?;
        if let Some(model) = model {
            vectors::enqueue(tx, &fact, model)?;
        }
        created.push(fact);
    }
    if created.is_empty() && confirmed.is_empty() {
        facts::delete_source_event_if_unused(tx, &source)?;
    }
    Ok(Captured { created, confirmed })
}
