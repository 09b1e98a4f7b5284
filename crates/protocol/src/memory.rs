//! Long-term memory on the wire: `/v1/memory` (list, show, create, edit, pin, retire, delete,
//! evidence, search) and the `memory.fact.*` runtime events.
//!
//! A scope is written `global`, `session:<chat id>` or `project:<id>` (the legacy `chat:<id>`
//! and `thread:<id>` are read too). Kinds and statuses are the stored upper-case names.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a fact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MemoryKind {
    /// Something true about the person or the world.
    Semantic,
    /// How the person likes things done.
    Preference,
    /// A reusable procedure.
    Procedure,
    /// A rule of a project.
    ProjectRule,
    /// Working notes of a conversation (plans, blockers, next steps).
    EpisodeNote,
    /// A decision taken in a project.
    ProjectDecision,
}

/// Whether a fact is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MemoryStatus {
    /// Recalled.
    Active,
    /// Kept for history (superseded or retired), never recalled.
    Retired,
}

/// Which facts a listing returns by status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MemoryStatusFilter {
    /// Active facts only (the default).
    #[default]
    Active,
    /// Retired facts only.
    Retired,
    /// Both.
    All,
}

/// One remembered fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryFact {
    /// Its id.
    pub id: String,
    /// Where it applies (`global`, `session:<chat id>`, `project:<id>`).
    pub scope: String,
    /// What it is.
    pub kind: MemoryKind,
    /// Short title.
    pub title: String,
    /// The fact (secrets were removed before it was stored).
    pub body: String,
    /// Its controlled key (`user.preference.language`, ...), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_key: Option<String>,
    /// Active or retired.
    pub status: MemoryStatus,
    /// How long it lives: `DURABLE`, `SESSION_LIFETIME` or `CHAT_LIFETIME`.
    pub retention: String,
    /// How sure its writer was (0..1).
    pub confidence: f64,
    /// How much it matters (0..1).
    pub importance: f64,
    /// Pinned facts are offered even without a strong match.
    pub pinned: bool,
    /// Who stored it: `user` (by hand), `writer` (captured after a turn), `mcp:<client>`.
    pub created_by: String,
    /// When it was stored (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// The fact this one replaced (same canonical key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes_fact_id: Option<String>,
}

/// Query of `GET /v1/memory`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryQuery {
    /// Only this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MemoryKind>,
    /// Only this scope (`global`, `session:<chat id>`, `project:<id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Active (default), retired or all facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<MemoryStatusFilter>,
    /// Only facts whose title, body or key contains this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Only pinned (`true`) or only unpinned (`false`) facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    /// At most this many facts (default 50, at most 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Facts skipped first (from `next_offset` of the previous page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
}

/// `GET /v1/memory`: a page of facts, most recently updated first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryFactList {
    /// The facts.
    pub items: Vec<MemoryFact>,
    /// The `offset` of the next page, when there may be one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u32>,
}

/// `POST /v1/memory`: a fact the person writes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMemoryFact {
    /// The fact.
    pub body: String,
    /// Short title (default: the body's first line, shortened).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is (default `SEMANTIC`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MemoryKind>,
    /// Where it applies (default `global`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// A controlled key (`user.preference.<name>`, `project.rule.<name>`, ...); a fact holding
    /// the same key in the scope is superseded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_key: Option<String>,
    /// Whether to pin it.
    #[serde(default)]
    pub pinned: bool,
    /// How much it matters (0..1, default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f64>,
}

/// `PATCH /v1/memory/{id}`: the fields to change (absent fields stay). A change of text, kind,
/// key or scope re-embeds the fact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryFactPatch {
    /// New title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// New body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// New kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MemoryKind>,
    /// New scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// New canonical key (empty: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_key: Option<String>,
    /// Pin or unpin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    /// New importance (0..1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f64>,
}

/// Where a fact came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryEvidence {
    /// The source event.
    pub source_event_id: String,
    /// `manual` (written by hand), `turn` (captured after an agent turn), `mcp` (an MCP client).
    pub source_type: String,
    /// The chat the turn belonged to, for captured facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// The turn (execution), for captured facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The MCP client, for facts an MCP client stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The supporting excerpt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    /// The source text (the user's message and tool outputs of the turn, redacted), shortened.
    pub text: String,
    /// When it was recorded (RFC 3339).
    pub created_at: String,
}

/// `GET /v1/memory/{id}/evidence`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryEvidenceList {
    /// The fact.
    pub fact_id: String,
    /// Its evidence, oldest first.
    pub items: Vec<MemoryEvidence>,
}

/// `POST /v1/memory/search`: the recall `SearchMemory` uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySearchRequest {
    /// What is needed, in words.
    pub query: String,
    /// Words likely to occur in matching facts (default: the query itself).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
    /// Most facts (1..20, default 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Also search this chat's session facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
}

/// One fact a search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemorySearchHit {
    /// The fact.
    pub fact: MemoryFact,
    /// Its fused relevance score.
    pub score: f64,
    /// Which candidate lists found it (`exact`, `lexical`, `dense`, `priority`).
    pub sources: Vec<String>,
}

/// How a memory search matched facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecallMode {
    /// By words only: no embedding model was ready, so a fact that says the same in other
    /// words or in another language may be missed.
    Lexical,
    /// By words and by meaning (an embedding model's vectors).
    Hybrid,
}

impl RecallMode {
    /// `lexical` or `hybrid`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Lexical => "lexical",
            Self::Hybrid => "hybrid",
        }
    }
}

/// `POST /v1/memory/search`: the facts found, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemorySearchResult {
    /// The facts.
    pub items: Vec<MemorySearchHit>,
    /// How they were matched: `lexical` (by words only, while no embedding model is ready) or
    /// `hybrid` (by words and by meaning).
    pub mode: RecallMode,
}

/// `GET /v1/memory/model`: what searches memory by meaning, and where a local model is (a page
/// opened during a download shows it without waiting for the next event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryModelInfo {
    /// `[memory] embeddings_model` in use (`local/<name>` or a provider's); `None`: memory
    /// searches by words only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The in-process model's state; `None` for a provider's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalModelState>,
}

impl MemoryModelInfo {
    /// Whether memory recalls by meaning now: a provider's model, or a local model that is on
    /// disk. Otherwise (no model, or a local one not downloaded yet) it recalls by words only.
    pub fn by_meaning(&self) -> bool {
        match (&self.model, &self.local) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(_), Some(state)) => {
                matches!(state, LocalModelState::Ready | LocalModelState::Loaded)
            }
        }
    }

    /// How memory recalls, said plainly in English.
    pub fn describe(&self) -> String {
        self.describe_in(crate::language::Language::En)
    }

    /// How memory recalls, said plainly in `language` (for the CLI): by words only or by
    /// meaning too, and why (no model, a download under way or failed).
    pub fn describe_in(&self, language: crate::language::Language) -> String {
        let ru = language == crate::language::Language::Ru;
        let pick = |en: &'static str, russian: &'static str| if ru { russian } else { en };
        let Some(model) = &self.model else {
            return pick(
                "Memory recalls by words only: no embedding model is set ([memory] \
                 embeddings_model is empty).",
                "Память ищет только по словам: модель эмбеддингов не задана ([memory] \
                 embeddings_model пуст).",
            )
            .to_owned();
        };
        let megabytes = |bytes: u64| (bytes / 1_000_000).to_string();
        let text = match &self.local {
            None => pick(
                "Memory recalls by words and by meaning, with {model}.",
                "Память ищет по словам и по смыслу, с моделью {model}.",
            )
            .to_owned(),
            Some(LocalModelState::Ready | LocalModelState::Loaded) => pick(
                "Memory recalls by words and by meaning, with the local model {model}.",
                "Память ищет по словам и по смыслу, с локальной моделью {model}.",
            )
            .to_owned(),
            Some(LocalModelState::Missing) => pick(
                "Memory recalls by words only until the local model {model} is ready: it is \
                 downloaded into the Souz home on first use.",
                "Память ищет только по словам, пока не готова локальная модель {model}: она \
                 скачается в папку Souz при первом использовании.",
            )
            .to_owned(),
            Some(LocalModelState::Downloading { received, total }) => pick(
                "Memory recalls by words only until the local model {model} is ready: \
                 downloading, {received} of {total} MB.",
                "Память ищет только по словам, пока не готова локальная модель {model}: \
                 скачивается, {received} из {total} МБ.",
            )
            .replace("{received}", &megabytes(*received))
            .replace("{total}", &megabytes(*total)),
            Some(LocalModelState::Failed { error }) => pick(
                "Memory recalls by words only until the local model {model} is ready: its \
                 download failed ({error}); Souz tries again later.",
                "Память ищет только по словам, пока не готова локальная модель {model}: её \
                 скачивание не удалось ({error}); Souz попробует ещё раз позже.",
            )
            .replace("{error}", error),
        };
        text.replace("{model}", model)
    }
}

/// Where an in-process model is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LocalModelState {
    /// Not on disk and not being fetched (fetched on first use).
    Missing,
    /// Being fetched.
    Downloading {
        /// Bytes on disk so far, all files together.
        received: u64,
        /// Bytes in all.
        total: u64,
    },
    /// On disk, not in memory.
    Ready,
    /// In memory.
    Loaded,
    /// The last download or load failed (tried again on a later use).
    Failed {
        /// Why.
        error: String,
    },
}
