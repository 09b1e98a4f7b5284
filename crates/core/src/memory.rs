//! Long-term memory (original §6): facts about the person and their work, remembered across
//! conversations, recalled when they matter, forgotten on request.
//!
//! - [`model`]: scopes, kinds, retentions, canonical keys, content hashes; [`facts`] and
//!   [`vectors`]: the `memory_*` tables; [`text`]: stemmed text for the FTS5 index and the
//!   queries of it, `stop_words`: the function words queries leave out, `bm25`: the ranking of
//!   its matches.
//! - [`recall`]: exact, lexical (FTS5, bm25), dense (cosine) and priority candidates fused by
//!   weighted reciprocal rank, cut to a budget and rendered as untrusted data; `recall_set`
//!   (test support): the bilingual set its quality is measured on.
//! - [`capture`] and [`intent`]: what a finished turn adds, forgets or deletes;
//!   [`redaction`]: secrets and private details removed before anything is stored.
//! - [`embedder`]: the [`Embedder`] seam, provider embeddings and a deterministic hash
//!   embedder; [`local`]: a model run in process (candle), fetched by [`download`];
//!   [`writer`]: the LLM writer that proposes facts after a turn.
//!
//! Invariants: everything stored is redacted first; one active fact per (owner, scope,
//! canonical key), a new one supersedes the old; a forgotten fact leaves a tombstone that stops
//! capture from storing it again, and a cleaned-up conversation's scope is closed the same way
//! (checked in the transaction that would store, so a capture racing the cleanup cannot bring
//! a fact back); captures run one at a time; a failed embedding never fails a write or a
//! recall (the fact stays lexically findable and its job is retried).

mod bm25;
pub(crate) mod capture;
pub(crate) mod download;
mod editing;
pub mod embedder;
mod embedding_jobs;
pub mod facts;
pub(crate) mod index;
pub(crate) mod intent;
mod kernels;
pub mod local;
pub(crate) mod mcp_tools;
pub mod model;
pub(crate) mod recall;
#[cfg(any(test, feature = "test-support"))]
pub mod recall_set;
pub(crate) mod redaction;
mod search;
mod stats;
mod stop_words;
mod storing;
pub(crate) mod text;
pub mod vectors;
pub(crate) mod wire;
pub(crate) mod writer;

use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use souz_protocol::memory::RecallMode;

pub use capture::{Candidate, CapturedTurn, Evidence, EvidenceKind, NoWriter, Writer, WriterError};
pub(crate) use editing::checked_canonical_key;
pub use editing::{EvidenceRecord, FactEdit, Origin};
pub use embedder::{EmbedError, EmbedRole, Embedder, HashEmbedder, ProviderEmbedder};
pub use model::{Context, Fact, Kind, Retention, Scope, Status};
pub use recall::{Selected, Trace};
pub use writer::{FixedWriterModel, LlmWriter, WriterModel};

use self::facts::{EvidenceRef, Filter, NewSourceEvent, Tombstone};
use self::index::{DenseQuery, VectorIndex};
use self::intent::Intent;
use self::model::{SCOPE_CLOSED_SUBJECT, content_hash, normalize_canonical_key, subject_key};
use self::redaction::redact;
use self::search::{LexicalSearch, OwnedQuery, dense_search};
use self::storing::store_captured;
use crate::store::codec::{now, to_time};
use crate::store::{Store, StoreError};

/// Attempts of an embedding job before it is given up.
pub const MAX_EMBED_ATTEMPTS: u32 = 5;
/// Attempts of the writer per turn, and the pauses between them.
const WRITER_ATTEMPTS: usize = 3;
const WRITER_PAUSES: [Duration; 2] = [Duration::from_millis(250), Duration::from_secs(1)];
/// Active facts per scope a forget request looks through for a title match.
const FORGET_SCAN: usize = 100;

/// Why a memory operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// No such fact.
    #[error("memory fact {0} not found")]
    NotFound(String),
    /// The request is invalid.
    #[error("{0}")]
    Invalid(String),
    /// The writer failed and there was nothing explicit to fall back on.
    #[error(transparent)]
    Writer(#[from] WriterError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for MemoryError {
    fn from(error: rusqlite::Error) -> Self {
        Self::Store(StoreError::Sqlite(error))
    }
}

/// A fact to store by hand (`created_by` = `user`).
#[derive(Debug, Clone)]
pub struct NewFact {
    /// Whose.
    pub owner: String,
    /// Where it applies.
    pub scope: Scope,
    /// What it is.
    pub kind: Kind,
    /// Short title.
    pub title: String,
    /// The fact.
    pub body: String,
    /// A controlled key (dropped when it does not normalise).
    pub canonical_key: Option<String>,
    /// 0..1 (1 for facts the person wrote).
    pub confidence: f64,
    /// 0..1 (`None`: the confidence).
    pub importance: Option<f64>,
    /// Whether it is pinned.
    pub pinned: bool,
}

/// A fact written by hand or by a client ([`Memory::create_fact_from`]).
#[derive(Debug, Clone)]
pub struct Written {
    /// The stored fact, or the active one that already held the same content.
    pub fact: Fact,
    /// The fact was already held, so this writing confirmed it instead of storing a copy.
    pub confirmed: bool,
}

/// What memory is made of.
pub struct MemoryParts {
    /// The database.
    pub store: Store,
    /// Dense recall's embedder (`None`: lexical recall only).
    pub embedder: Option<Arc<dyn Embedder>>,
    /// What proposes facts after a turn.
    pub writer: Arc<dyn Writer>,
}

struct Inner {
    store: Store,
    embedder: Option<Arc<dyn Embedder>>,
    writer: Arc<dyn Writer>,
    capture: tokio::sync::Mutex<()>,
    /// Wakes the embedding retry loop when a job fails (so it learns its due time).
    retry: tokio::sync::Notify,
    /// The embedder's vectors in memory (dense recall).
    vectors: Arc<std::sync::RwLock<VectorIndex>>,
    /// Retrievals waiting to be counted (written off the recall path).
    retrievals: Arc<stats::RetrievalLog>,
    /// Where its background writes run: the runtime's tasks (set once, see
    /// [`Memory::run_tasks_on`]), else a set of its own.
    tasks: std::sync::OnceLock<crate::tasks::Tasks>,
    /// Where changes are announced (see [`wire`]).
    events: std::sync::OnceLock<crate::bus::EventBus>,
    /// Counts the announced changes of facts, for those that follow the facts rather than
    /// every event (an MCP session's resource list).
    changes: tokio::sync::watch::Sender<u64>,
}

/// The query's vector, from the embedder's model.
#[derive(Debug, Clone)]
struct QueryVector {
    model: String,
    vector: Vec<f32>,
}

/// Long-term memory. Cheap to clone.
#[derive(Clone)]
pub struct Memory {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field(
                "embedder",
                &self.inner.embedder.as_ref().map(|e| e.model().to_owned()),
            )
            .finish_non_exhaustive()
    }
}

/// Everything a stored fact needs besides its content.
struct FactSpec<'a> {
    owner: &'a str,
    scope: Scope,
    kind: Kind,
    title: String,
    body: String,
    canonical_key: Option<String>,
    confidence: f64,
    importance: f64,
    pinned: bool,
    created_by: &'a str,
}

fn build_fact(spec: FactSpec<'_>) -> Fact {
    let at = to_time(now());
    let scope = spec.scope.normalized();
    Fact {
        id: uuid::Uuid::now_v7().to_string(),
        owner: spec.owner.to_owned(),
        retention: scope.retention(),
        scope,
        kind: spec.kind,
        content_hash: content_hash(
            spec.kind,
            spec.canonical_key.as_deref(),
            &spec.title,
            &spec.body,
        ),
        title: spec.title,
        body: spec.body,
        canonical_key: spec.canonical_key,
        status: Status::Active,
        confidence: spec.confidence,
        importance: spec.importance.clamp(0.0, 1.0),
        pinned: spec.pinned,
        created_by: spec.created_by.to_owned(),
        created_at: at.clone(),
        updated_at: at,
        supersedes_fact_id: None,
    }
}

/// The single fact a forget request names: by canonical key, else by exact title or key.
fn forget_match(
    connection: &Connection,
    owner: &str,
    scopes: &[Scope],
    target: &str,
) -> rusqlite::Result<Option<Fact>> {
    let target = target.trim().trim_end_matches(['.', '!', '?', ';']).trim();
    if target.is_empty() {
        return Ok(None);
    }
    let mut matches: Vec<Fact> = Vec::new();
    if let Some(key) = normalize_canonical_key(target) {
        for scope in scopes {
            matches.extend(facts::find_active_by_key(connection, owner, scope, &key)?);
        }
    } else {
        let lower = target.to_lowercase();
        let recent = facts::recent_in_scopes(connection, owner, scopes, FORGET_SCAN)?;
        matches.extend(recent.into_iter().filter(|fact| {
            fact.title.trim().to_lowercase() == lower
                || fact.canonical_key.as_deref().map(str::trim) == Some(lower.as_str())
        }));
    }
    matches.sort_by(|a, b| a.id.cmp(&b.id));
    matches.dedup_by(|a, b| a.id == b.id);
    Ok(if matches.len() == 1 {
        matches.pop()
    } else {
        None
    })
}

impl Memory {
    /// Memory over `parts`.
    pub fn new(parts: MemoryParts) -> Self {
        Self {
            inner: Arc::new(Inner {
                store: parts.store,
                embedder: parts.embedder,
                writer: parts.writer,
                capture: tokio::sync::Mutex::new(()),
                retry: tokio::sync::Notify::new(),
                vectors: Arc::default(),
                retrievals: Arc::default(),
                tasks: std::sync::OnceLock::new(),
                events: std::sync::OnceLock::new(),
                changes: tokio::sync::watch::Sender::new(0),
            }),
        }
    }

    /// Runs its background writes on `tasks` (the runtime's, so shutdown waits for them; once,
    /// before the first recall: later calls change nothing).
    pub(crate) fn run_tasks_on(&self, tasks: crate::tasks::Tasks) {
        let _ = self.inner.tasks.set(tasks);
    }

    /// Where its background writes run.
    fn tasks(&self) -> &crate::tasks::Tasks {
        self.inner.tasks.get_or_init(crate::tasks::Tasks::detached)
    }

    /// Memory with lexical recall only and no writer.
    pub fn lexical(store: Store) -> Self {
        Self::new(MemoryParts {
            store,
            embedder: None,
            writer: Arc::new(NoWriter),
        })
    }

    /// The embedder's model, if there is one.
    pub fn embedding_model(&self) -> Option<&str> {
        self.inner
            .embedder
            .as_deref()
            .map(|embedder| embedder.model())
    }

    /// Where the embedder's in-process model is (`None`: no embedder, or one with nothing
    /// to fetch or load).
    pub fn embedding_status(&self) -> Option<local::ModelStatus> {
        self.inner
            .embedder
            .as_deref()
            .and_then(|embedder| embedder.local_status())
    }

    /// Stores a fact the person wrote, with a `manual` source event as its evidence; a fact
    /// holding the same canonical key in the scope is superseded.
    pub async fn create_fact(&self, new: NewFact) -> Result<Fact, MemoryError> {
        Ok(self.create_fact_from(new, Origin::MANUAL).await?.fact)
    }

    /// Stores a fact written by hand or by a client (see [`Origin`]), with a source event of
    /// the origin's type as its evidence; a fact holding the same canonical key in the scope is
    /// superseded. Writing an active fact again (the same kind, key, title and body in the same
    /// scope) confirms it instead of storing a copy: the new source event is added as its
    /// evidence, its confidence and importance rise to the new values if higher, a pin is kept
    /// or added, and the same fact comes back ([`Written::confirmed`]).
    pub async fn create_fact_from(
        &self,
        new: NewFact,
        origin: Origin<'_>,
    ) -> Result<Written, MemoryError> {
        let title = redact(new.title.trim());
        let body = redact(new.body.trim());
        if title.is_empty() || body.is_empty() {
            return Err(MemoryError::Invalid(
                "a fact needs a title and a body".into(),
            ));
        }
        if !(0.0..=1.0).contains(&new.confidence)
            || new.importance.is_some_and(|i| !(0.0..=1.0).contains(&i))
        {
            return Err(MemoryError::Invalid(
                "confidence and importance must be between 0 and 1".into(),
            ));
        }
        let mut fact = build_fact(FactSpec {
            owner: &new.owner,
            scope: new.scope,
            kind: new.kind,
            canonical_key: new
                .canonical_key
                .as_deref()
                .and_then(normalize_canonical_key),
            confidence: new.confidence,
            importance: new.importance.unwrap_or(new.confidence),
            pinned: new.pinned,
            created_by: origin.created_by,
            title,
            body,
        });
        let model = self.embedding_model().map(str::to_owned);
        let source_type = origin.source_type.to_owned();
        let source_ref = origin.source_ref.map(str::to_owned);
        let (fact, confirmed) = self
            .inner
            .store
            .write(move |tx| -> Result<(Fact, bool), MemoryError> {
                let metadata = serde_json::json!({"kind": fact.kind, "title": fact.title});
                let source = facts::insert_source_event(
                    tx,
                    &NewSourceEvent {
                        owner: &fact.owner,
                        scope: &fact.scope,
                        source_type: &source_type,
                        source_ref: source_ref.as_deref(),
                        text: &format!("{}\n{}", fact.title, fact.body),
                        metadata_json: &metadata.to_string(),
                    },
                )?;
                let evidence = [EvidenceRef {
                    source_event_id: source,
                    evidence_text: Some(fact.body.clone()),
                }];
                if let Some(held) =
                    facts::find_active_by_hash(tx, &fact.owner, &fact.scope, &fact.content_hash)?
                {
                    return Ok((facts::confirm(tx, &held, &fact, &evidence)?, true));
                }
                facts::insert(tx, &mut fact, &evidence)?;
                if let Some(model) = &model {
                    vectors::enqueue(tx, &fact, model)?;
                }
                Ok((fact, false))
            })
            .await?;
        if confirmed {
            self.announce(wire::Change::Updated, std::slice::from_ref(&fact))
                .await;
        } else {
            self.embed_fact(&fact).await;
            self.announce(wire::Change::Created, std::slice::from_ref(&fact))
                .await;
        }
        Ok(Written { fact, confirmed })
    }

    /// One fact.
    pub async fn get(&self, fact_id: &str) -> Result<Option<Fact>, MemoryError> {
        let id = fact_id.to_owned();
        self.inner
            .store
            .read(move |connection| Ok(facts::get(connection, &id)?))
            .await
    }

    /// Facts matching `filter`, most recently updated first.
    pub async fn list(&self, filter: Filter) -> Result<Vec<Fact>, MemoryError> {
        self.inner
            .store
            .read(move |connection| Ok(facts::list(connection, &filter)?))
            .await
    }

    async fn query_vector(&self, text: &str) -> Option<QueryVector> {
        let embedder = self.inner.embedder.as_ref()?;
        if text.trim().is_empty() {
            return None;
        }
        match embedder
            .embed(vec![text.to_owned()], EmbedRole::Query)
            .await
        {
            Ok(mut vectors) if vectors.len() == 1 => {
                let vector = vectors.pop().filter(|vector| !vector.is_empty())?;
                Some(QueryVector {
                    model: embedder.model().to_owned(),
                    vector,
                })
            }
            Ok(_) => {
                tracing::warn!(
                    "the embedder answered the wrong number of vectors; lexical recall only"
                );
                None
            }
            Err(error) if error.code == vectors::NOT_READY => {
                tracing::debug!(%error, "the embedding model is not ready; lexical recall only");
                None
            }
            Err(error) => {
                tracing::warn!(%error, "could not embed the memory query; lexical recall only");
                None
            }
        }
    }

    /// Chooses facts for a query (see [`recall`]) and counts their retrieval (in the
    /// background: see [`stats`]). The lexical ranking runs on a second reader connection
    /// while this one reads the other sources and scans the vectors: they take about as long
    /// as each other at 100k facts, so on two cores a recall takes about as long as its slower
    /// half.
    pub async fn select(
        &self,
        query: recall::Query<'_>,
    ) -> Result<(Vec<Selected>, Trace), MemoryError> {
        let vector = self.query_vector(query.semantic_query).await;
        let by_meaning = vector.is_some();
        let lexical = LexicalSearch::start(&self.inner.store, &query);
        let index = Arc::clone(&self.inner.vectors);
        let owned = OwnedQuery::from(&query);
        let (selected, mut trace) = self
            .inner
            .store
            .read(move |connection| {
                let query = owned.borrow();
                let started = recall::Started {
                    lexical: || lexical.finish(),
                    dense: |connection: &Connection| match &vector {
                        Some(vector) => dense_search(connection, &index, &query, vector),
                        None => Ok(Vec::new()),
                    },
                };
                Ok::<_, MemoryError>(recall::select(connection, &query, started)?)
            })
            .await?;
        let ids: Vec<String> = selected
            .iter()
            .map(|chosen| chosen.fact.id.clone())
            .collect();
        self.inner
            .retrievals
            .note(&self.inner.store, self.tasks(), ids);
        trace.by_meaning = by_meaning;
        Ok((selected, trace))
    }

    /// Automatic recall for a turn's input: at most `max_facts` (1..32) within 700 tokens of
    /// the context's scopes; returns the prompt block (empty for none) and the facts.
    pub async fn recall(
        &self,
        context: &Context,
        input: &str,
        max_facts: usize,
    ) -> Result<(String, Vec<Selected>), MemoryError> {
        if input.trim().is_empty() {
            return Ok((String::new(), Vec::new()));
        }
        let hints = [input.to_owned()];
        let (selected, _) = self
            .select(recall::Query {
                context,
                semantic_query: input,
                lexical_hints: &hints,
                max_facts: max_facts.clamp(1, recall::AUTOMATIC_MAX_FACTS_LIMIT),
                token_budget: recall::AUTOMATIC_TOKEN_BUDGET,
                scopes: None,
            })
            .await?;
        Ok((recall::render(&selected), selected))
    }

    /// An explicit search of global memory and the context's session, within 1,400 tokens;
    /// the facts, and whether they were matched by words only (no embedding model ready).
    pub async fn search(
        &self,
        context: &Context,
        semantic_query: &str,
        lexical_hints: &[String],
        max_facts: usize,
    ) -> Result<(Vec<Selected>, RecallMode), MemoryError> {
        let mut scopes = vec![Scope::global()];
        scopes.extend(context.session.as_deref().map(Scope::session));
        let (selected, trace) = self
            .select(recall::Query {
                context,
                semantic_query,
                lexical_hints,
                max_facts,
                token_budget: recall::SEARCH_TOKEN_BUDGET,
                scopes: Some(scopes),
            })
            .await?;
        let mode = if trace.by_meaning {
            RecallMode::Hybrid
        } else {
            RecallMode::Lexical
        };
        Ok((selected, mode))
    }

    /// Acts on a "forget" (retire and tombstone) or "delete from memory" (delete) request
    /// naming one fact by canonical key or exact title; how many facts it touched (0 or 1).
    pub async fn forget_from_text(
        &self,
        context: &Context,
        text: &str,
        hard: bool,
    ) -> Result<usize, MemoryError> {
        let owner = context.owner.clone();
        let scopes = context.retrieval_scopes();
        let target = intent::forget_target(text);
        let touched = self
            .inner
            .store
            .write(move |tx| -> Result<Option<Fact>, MemoryError> {
                let Some(fact) = forget_match(tx, &owner, &scopes, &target)? else {
                    return Ok(None);
                };
                if hard {
                    facts::delete(tx, &fact.id)?;
                } else {
                    facts::set_status(tx, &fact.id, Status::Retired)?;
                    facts::insert_tombstone(
                        tx,
                        &Tombstone {
                            owner: &fact.owner,
                            scope: &fact.scope,
                            canonical_key: fact.canonical_key.as_deref(),
                            subject_key: subject_key(&fact.title).as_deref(),
                            reason: "explicit_forget",
                        },
                    )?;
                }
                Ok(Some(fact))
            })
            .await?;
        let Some(fact) = touched else {
            return Ok(0);
        };
        let change = if hard {
            wire::Change::Deleted
        } else {
            wire::Change::Retired
        };
        self.announce(change, &[fact]).await;
        Ok(1)
    }

    /// Closes a conversation's session scope for capture and deletes its facts (session and
    /// legacy chat scopes), in one transaction; how many facts went.
    pub async fn close_session(&self, owner: &str, chat_id: &str) -> Result<usize, MemoryError> {
        let owner = owner.to_owned();
        let chat_id = chat_id.to_owned();
        self.inner
            .store
            .write(move |tx| -> Result<usize, MemoryError> {
                let session = Scope::session(&chat_id);
                facts::insert_tombstone(
                    tx,
                    &Tombstone {
                        owner: &owner,
                        scope: &session,
                        canonical_key: None,
                        subject_key: Some(SCOPE_CLOSED_SUBJECT),
                        reason: "scope_closed",
                    },
                )?;
                Ok(facts::delete_scope(tx, &owner, &session)?
                    + facts::delete_scope(tx, &owner, &Scope::chat(&chat_id))?)
            })
            .await
    }

    async fn writer_candidates(
        &self,
        turn: &CapturedTurn,
        explicit: bool,
    ) -> Result<Vec<Candidate>, MemoryError> {
        let fallback = if explicit {
            capture::remember_candidate(turn)
        } else {
            None
        };
        let mut failure = None;
        for attempt in 0..WRITER_ATTEMPTS {
            match self.inner.writer.candidates(turn).await {
                Ok(candidates) if candidates.is_empty() => {
                    return Ok(fallback.into_iter().collect());
                }
                Ok(candidates) => return Ok(candidates),
                Err(error) => {
                    tracing::debug!(%error, attempt, "the memory writer failed");
                    failure = Some(error);
                    if let Some(pause) = WRITER_PAUSES.get(attempt) {
                        tokio::time::sleep(*pause).await;
                    }
                }
            }
        }
        match (fallback, failure) {
            (Some(fallback), _) => Ok(vec![fallback]),
            (None, Some(error)) => Err(error.into()),
            (None, None) => Ok(Vec::new()),
        }
    }

    /// Captures what a finished turn should add to memory (see [`capture`]); returns the facts
    /// stored: the new ones, then those the turn stated again word for word (which gain the
    /// turn as evidence instead of being stored twice). Captures run one at a time.
    pub async fn capture(&self, turn: CapturedTurn) -> Result<Vec<Fact>, MemoryError> {
        let _serial = self.inner.capture.lock().await;
        let intent = intent::parse(&turn.user_message);
        match intent {
            Intent::DoNotCapture => return Ok(Vec::new()),
            Intent::Forget | Intent::Delete => {
                self.forget_from_text(&turn.context, &turn.user_message, intent == Intent::Delete)
                    .await?;
                return Ok(Vec::new());
            }
            Intent::Remember | Intent::None => {}
        }
        let explicit = intent == Intent::Remember;
        let candidates = self.writer_candidates(&turn, explicit).await?;
        let accepted = capture::accept(&turn, candidates, explicit);
        if accepted.is_empty() {
            return Ok(Vec::new());
        }
        let text = capture::source_text(&turn);
        let model = self.embedding_model().map(str::to_owned);
        let stored = self
            .inner
            .store
            .write(move |tx| store_captured(tx, &turn, &accepted, &text, model.as_deref()))
            .await?;
        for fact in &stored.created {
            self.embed_fact(fact).await;
        }
        self.announce(wire::Change::Created, &stored.created).await;
        self.announce(wire::Change::Updated, &stored.confirmed)
            .await;
        let mut facts = stored.created;
        facts.extend(stored.confirmed);
        Ok(facts)
    }
}

#[cfg(test)]
mod tests;
