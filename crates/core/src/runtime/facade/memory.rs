//! Long-term memory for the adapters (`/v1/memory`, the CLI through it, the MCP server's
//! memory tools and resources): list and filter, show, create, edit, pin, retire, delete
//! (with a tombstone), evidence, and the recall `SearchMemory` uses.
//!
//! Invariants: every operation acts on the local user's memory (the owner captured turns
//! write to); input is checked here before anything is stored (sizes, scopes, kinds, keys) and
//! bad input is a clear `Invalid` that changes nothing; changes are announced as
//! `memory.fact.*` events by [`crate::memory::Memory`] itself.

use souz_protocol::memory::{
    MemoryEvidence, MemoryEvidenceList, MemoryFact, MemoryFactList, MemoryFactPatch,
    MemoryModelInfo, MemoryQuery, MemorySearchHit, MemorySearchRequest, MemorySearchResult,
    MemoryStatusFilter, NewMemoryFact,
};
use souz_protocol::{EffectivePolicy, ErrorCode, Requester, Risk};

use super::ServiceError;
use crate::LOCAL_USER;
use crate::memory::facts::Filter;
use crate::memory::mcp_tools::SEARCH_TOOL;
use crate::memory::wire::{
    DEFAULT_SEARCH, MAX_BODY_CHARS, MAX_QUERY_CHARS, MAX_SEARCH, MAX_TITLE_CHARS, fact_to_wire,
    kind_from_wire, parse_scope, search_hints, shortened,
};
use crate::memory::{
    Context, EvidenceRecord, FactEdit, Kind, MemoryError, NewFact, Scope, Status,
    checked_canonical_key,
};
use crate::runtime::RuntimeHandle;

pub(crate) use crate::memory::Origin as MemoryOrigin;

/// Most hints of a search.
const MAX_HINTS: usize = 16;
/// Facts per page by default, and at most.
const DEFAULT_PAGE: u32 = 50;
const MAX_PAGE: u32 = 500;
/// A default title's length, in characters.
const DEFAULT_TITLE_CHARS: usize = 80;
/// The longest source text an evidence row shows, in characters.
const MAX_EVIDENCE_TEXT: usize = 4_000;

impl From<MemoryError> for ServiceError {
    fn from(error: MemoryError) -> Self {
        match error {
            MemoryError::NotFound(_) => Self::not_found(ErrorCode::NotFound, error.to_string()),
            MemoryError::Invalid(message) => Self::Invalid(message),
            MemoryError::Store(store) => store.into(),
            MemoryError::Writer(_) => Self::internal(&error),
        }
    }
}

fn checked_text(field: &str, text: &str, max: usize) -> Result<(), ServiceError> {
    if text.trim().is_empty() {
        return Err(ServiceError::Invalid(format!(
            "the {field} cannot be empty"
        )));
    }
    if text.chars().count() > max {
        return Err(ServiceError::Invalid(format!(
            "the {field} is longer than {max} characters"
        )));
    }
    Ok(())
}

/// The first line of `body`, shortened: a title for a fact given without one.
fn default_title(body: &str) -> String {
    let line = body.trim().lines().next().unwrap_or_default().trim();
    shortened(line, DEFAULT_TITLE_CHARS)
}

fn scope_of(text: &str) -> Result<Scope, ServiceError> {
    Ok(parse_scope(text)?)
}

fn evidence(record: EvidenceRecord) -> MemoryEvidence {
    let field = |name: &str| {
        record
            .metadata
            .get(name)
            .and_then(|value| value.as_str())
            .map(str::to_owned)
    };
    let (chat_id, turn_id) = (field("conversationId"), field("turnId"));
    MemoryEvidence {
        client: (record.source_type == "mcp")
            .then(|| record.source_ref.clone())
            .flatten(),
        source_event_id: record.source_event_id,
        source_type: record.source_type,
        chat_id,
        turn_id,
        excerpt: record.excerpt,
        text: shortened(&record.text, MAX_EVIDENCE_TEXT),
        created_at: record.created_at,
    }
}

fn filter(query: MemoryQuery) -> Result<(Filter, u32), ServiceError> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > MAX_PAGE {
        return Err(ServiceError::Invalid(format!(
            "limit must be between 1 and {MAX_PAGE}"
        )));
    }
    let statuses = match query.status.unwrap_or_default() {
        MemoryStatusFilter::Active => vec![Status::Active],
        MemoryStatusFilter::Retired => vec![Status::Retired],
        MemoryStatusFilter::All => vec![Status::Active, Status::Retired],
    };
    let scopes = match query.scope.as_deref() {
        Some(scope) => vec![scope_of(scope)?],
        None => Vec::new(),
    };
    if query
        .text
        .as_ref()
        .is_some_and(|text| text.chars().count() > MAX_QUERY_CHARS)
    {
        return Err(ServiceError::Invalid(format!(
            "the text filter is longer than {MAX_QUERY_CHARS} characters"
        )));
    }
    let filter = Filter {
        owner: LOCAL_USER.to_owned(),
        statuses,
        kinds: query.kind.map(kind_from_wire).into_iter().collect(),
        scopes,
        pinned: query.pinned,
        query: query.text,
        // One more than asked: whether there is a next page.
        limit: usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .saturating_add(1),
        offset: usize::try_from(query.offset.unwrap_or(0)).unwrap_or(usize::MAX),
    };
    Ok((filter, limit))
}

fn edit(patch: MemoryFactPatch) -> Result<FactEdit, ServiceError> {
    if let Some(title) = &patch.title {
        checked_text("title", title, MAX_TITLE_CHARS)?;
    }
    if let Some(body) = &patch.body {
        checked_text("body", body, MAX_BODY_CHARS)?;
    }
    Ok(FactEdit {
        title: patch.title,
        body: patch.body,
        kind: patch.kind.map(kind_from_wire),
        scope: patch.scope.as_deref().map(scope_of).transpose()?,
        canonical_key: patch
            .canonical_key
            .map(|key| (!key.trim().is_empty()).then_some(key)),
        pinned: patch.pinned,
        importance: patch.importance,
    })
}

impl RuntimeHandle {
    /// The one rule for reading memory from outside: the policy of the MCP tool
    /// `search_memory` for `requester` (its memory resources follow it too).
    pub fn memory_read_policy(&self, requester: &Requester) -> EffectivePolicy {
        self.tool_policy_for(SEARCH_TOOL, Risk::ReadOnly, requester)
    }

    /// A page of facts matching `query`, most recently updated first.
    pub async fn list_memory(&self, query: MemoryQuery) -> Result<MemoryFactList, ServiceError> {
        let offset = query.offset.unwrap_or(0);
        let (filter, limit) = filter(query)?;
        let mut facts = self.memory().list(filter).await?;
        let limit_items = usize::try_from(limit).unwrap_or(usize::MAX);
        let more = facts.len() > limit_items;
        facts.truncate(limit_items);
        Ok(MemoryFactList {
            items: facts.iter().map(fact_to_wire).collect(),
            next_offset: more.then(|| offset.saturating_add(limit)),
        })
    }

    /// Steps after each announced change of the facts (see [`crate::memory::Memory::changes`]).
    pub(crate) fn memory_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.memory().changes()
    }

    /// What searches memory by meaning, and where a local model is.
    pub fn memory_model(&self) -> MemoryModelInfo {
        let memory = self.memory();
        MemoryModelInfo {
            model: memory.embedding_model().map(str::to_owned),
            local: memory.embedding_status(),
        }
    }

    /// One fact.
    pub async fn show_memory_fact(&self, fact_id: &str) -> Result<MemoryFact, ServiceError> {
        self.memory()
            .get(fact_id)
            .await?
            .filter(|fact| fact.owner == LOCAL_USER)
            .map(|fact| fact_to_wire(&fact))
            .ok_or_else(|| MemoryError::NotFound(fact_id.to_owned()).into())
    }

    /// Stores a fact written by hand (`origin` says by whom), and whether it was new (`false`:
    /// an active fact already held the same content, and this writing confirmed it).
    pub async fn create_memory_fact(
        &self,
        new: NewMemoryFact,
        origin: MemoryOrigin<'_>,
    ) -> Result<(MemoryFact, bool), ServiceError> {
        checked_text("body", &new.body, MAX_BODY_CHARS)?;
        let title = match &new.title {
            Some(title) => {
                checked_text("title", title, MAX_TITLE_CHARS)?;
                title.clone()
            }
            None => default_title(&new.body),
        };
        let canonical_key = match new.canonical_key.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => Some(checked_canonical_key(raw)?),
        };
        let scope = match new.scope.as_deref() {
            Some(scope) => scope_of(scope)?,
            None => Scope::global(),
        };
        let written = self
            .memory()
            .create_fact_from(
                NewFact {
                    owner: LOCAL_USER.to_owned(),
                    scope,
                    kind: new.kind.map_or(Kind::Semantic, kind_from_wire),
                    title,
                    body: new.body,
                    canonical_key,
                    confidence: 1.0,
                    importance: new.importance,
                    pinned: new.pinned,
                },
                origin,
            )
            .await?;
        Ok((fact_to_wire(&written.fact), !written.confirmed))
    }

    /// Edits an active fact (a change of text, kind, key or scope re-embeds it).
    pub async fn update_memory_fact(
        &self,
        fact_id: &str,
        patch: MemoryFactPatch,
    ) -> Result<MemoryFact, ServiceError> {
        let edit = edit(patch)?;
        let fact = self.memory().update_fact(LOCAL_USER, fact_id, edit).await?;
        Ok(fact_to_wire(&fact))
    }

    /// Pins or unpins an active fact.
    pub async fn set_memory_pinned(
        &self,
        fact_id: &str,
        pinned: bool,
    ) -> Result<MemoryFact, ServiceError> {
        let edit = FactEdit {
            pinned: Some(pinned),
            ..FactEdit::default()
        };
        let fact = self.memory().update_fact(LOCAL_USER, fact_id, edit).await?;
        Ok(fact_to_wire(&fact))
    }

    /// Retires a fact (kept, never recalled).
    pub async fn retire_memory_fact(&self, fact_id: &str) -> Result<MemoryFact, ServiceError> {
        let fact = self.memory().retire_fact(LOCAL_USER, fact_id).await?;
        Ok(fact_to_wire(&fact))
    }

    /// Deletes a fact and leaves a tombstone so capture does not store it again; returns the
    /// fact as it was.
    pub async fn delete_memory_fact(&self, fact_id: &str) -> Result<MemoryFact, ServiceError> {
        let fact = self.memory().forget_fact(LOCAL_USER, fact_id).await?;
        Ok(fact_to_wire(&fact))
    }

    /// Where a fact came from.
    pub async fn memory_evidence(&self, fact_id: &str) -> Result<MemoryEvidenceList, ServiceError> {
        let (fact, records) = self.memory().evidence(LOCAL_USER, fact_id).await?;
        Ok(MemoryEvidenceList {
            fact_id: fact.id,
            items: records.into_iter().map(evidence).collect(),
        })
    }

    /// The recall of `SearchMemory`: global memory and, with `chat_id`, that chat's session
    /// facts, best first, with scores.
    pub async fn search_memory(
        &self,
        request: MemorySearchRequest,
    ) -> Result<MemorySearchResult, ServiceError> {
        checked_text("query", &request.query, MAX_QUERY_CHARS)?;
        if request.hints.len() > MAX_HINTS {
            return Err(ServiceError::Invalid(format!("at most {MAX_HINTS} hints")));
        }
        let limit = request.limit.unwrap_or(DEFAULT_SEARCH);
        if limit == 0 || limit > MAX_SEARCH {
            return Err(ServiceError::Invalid(format!(
                "limit must be between 1 and {MAX_SEARCH}"
            )));
        }
        let context = Context {
            owner: LOCAL_USER.to_owned(),
            session: request.chat_id.filter(|chat| !chat.trim().is_empty()),
            project: None,
        };
        let hints = search_hints(&request.query, request.hints);
        let (found, mode) = self
            .memory()
            .search(
                &context,
                &request.query,
                &hints,
                usize::try_from(limit).unwrap_or(usize::MAX),
            )
            .await?;
        Ok(MemorySearchResult {
            items: found
                .into_iter()
                .map(|selected| MemorySearchHit {
                    fact: fact_to_wire(&selected.fact),
                    score: selected.score,
                    sources: selected
                        .sources
                        .iter()
                        .map(|source| (*source).to_owned())
                        .collect(),
                })
                .collect(),
            mode,
        })
    }
}
