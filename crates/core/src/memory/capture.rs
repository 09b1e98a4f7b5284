//! Capture after a turn (original `MemoryCaptureService.captureAfterTurn`): explicit intents
//! first ("don't remember" skips, "forget"/"delete from memory" act on the matching fact),
//! then candidates from the [`Writer`] (or the explicit-remember fallback), validated,
//! grounded in what the person said, resolved to an allowed scope, deduplicated, and stored
//! with one redacted source event of the turn.
//!
//! Invariants: nothing is stored from a turn the person asked not to remember; a candidate
//! whose evidence is not found in the person's own message is refused: tool output (a web
//! page, a file, a command's output) is never grounds for a fact, whatever it says about
//! the person, and assistant text counts only for session episode notes; secret-looking candidates are refused and
//! everything stored is redacted; a tombstone (forgotten key or subject, or a closed scope)
//! refuses the fact in the same transaction that would store it.

use futures::future::BoxFuture;
use serde::Deserialize;

use super::intent::{self, Intent};
use super::model::{Context, Kind, RequestedScope, Scope, content_hash, normalize_canonical_key};
use super::redaction::{looks_secret, redact};

/// Most evidence snippets of a turn kept.
pub(crate) const MAX_EVIDENCE_SNIPPETS: usize = 16;
/// Most characters of one snippet.
pub(crate) const MAX_SNIPPET_CHARS: usize = 6_000;
/// Most characters of a turn's source text.
pub(crate) const MAX_TURN_SOURCE_CHARS: usize = 24_000;
/// Evidence quoted from the message by the explicit-remember fallback.
const FALLBACK_EVIDENCE_CHARS: usize = 240;
/// Longest fallback title.
const FALLBACK_TITLE_CHARS: usize = 96;

/// Where a piece of turn evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvidenceKind {
    /// A tool's result.
    ToolOutput,
    /// The assistant's own text between tool calls.
    AssistantSynthesis,
}

impl EvidenceKind {
    fn label(self) -> &'static str {
        match self {
            Self::ToolOutput => "TOOL_OUTPUT",
            Self::AssistantSynthesis => "ASSISTANT_SYNTHESIS",
        }
    }
}

/// One piece of turn evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// Its origin.
    pub kind: EvidenceKind,
    /// The tool's name, for tool outputs.
    pub source: Option<String>,
    /// The text.
    pub text: String,
}

/// A finished turn, as capture sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedTurn {
    /// Whose memory, which conversation.
    pub context: Context,
    /// What the person said.
    pub user_message: String,
    /// The final answer (context for the writer, never evidence).
    pub assistant_message: String,
    /// What happened between them.
    pub evidence: Vec<Evidence>,
    /// The turn (the source event's reference).
    pub turn_id: Option<String>,
}

/// A fact a writer proposes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Candidate {
    /// Whether to store it at all.
    pub should_save: bool,
    /// Its kind.
    pub kind: Kind,
    /// Short title.
    pub title: String,
    /// The fact.
    pub body: String,
    /// The scope it asks for.
    pub requested_scope: Option<RequestedScope>,
    /// A controlled key, if any.
    pub canonical_key: Option<String>,
    /// How sure the writer is.
    pub confidence: f64,
    /// How much it matters (`None`: the confidence).
    pub importance: Option<f64>,
    /// The excerpt it rests on.
    pub evidence_text: String,
}

impl Default for Candidate {
    fn default() -> Self {
        Self {
            should_save: false,
            kind: Kind::Semantic,
            title: String::new(),
            body: String::new(),
            requested_scope: None,
            canonical_key: None,
            confidence: 0.0,
            importance: None,
            evidence_text: String::new(),
        }
    }
}

/// Why a writer failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("memory writer failed: {0}")]
pub struct WriterError(pub String);

/// What proposes facts from a turn (the LLM writer, or nothing).
pub trait Writer: Send + Sync {
    /// Candidate facts of `turn`.
    fn candidates<'a>(
        &'a self,
        turn: &'a CapturedTurn,
    ) -> BoxFuture<'a, Result<Vec<Candidate>, WriterError>>;
}

/// A writer that proposes nothing: only explicit "remember" requests are stored.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoWriter;

impl Writer for NoWriter {
    fn candidates<'a>(
        &'a self,
        _: &'a CapturedTurn,
    ) -> BoxFuture<'a, Result<Vec<Candidate>, WriterError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// The fallback candidate of an explicit "remember": the message without its marker, global.
pub(crate) fn remember_candidate(turn: &CapturedTurn) -> Option<Candidate> {
    if intent::parse(&turn.user_message) != Intent::Remember {
        return None;
    }
    let body = intent::strip_remember_marker(&turn.user_message);
    if body.trim().is_empty() {
        return None;
    }
    let first_line = body.split('\n').next().unwrap_or_default();
    let first_sentence = first_line.split('.').next().unwrap_or_default().trim();
    let title: String = first_sentence.chars().take(FALLBACK_TITLE_CHARS).collect();
    let title = if title.trim().is_empty() {
        "Remembered note".to_owned()
    } else {
        title.trim().to_owned()
    };
    Some(Candidate {
        should_save: true,
        kind: Kind::Semantic,
        title,
        body: body.clone(),
        requested_scope: Some(RequestedScope::Global),
        canonical_key: None,
        confidence: 0.75,
        importance: None,
        evidence_text: turn
            .user_message
            .trim()
            .chars()
            .take(FALLBACK_EVIDENCE_CHARS)
            .collect(),
    })
}

/// Whether a candidate is worth storing (explicit requests accept less confidence).
pub(crate) fn is_valid(candidate: &Candidate, explicit: bool) -> bool {
    let threshold = if explicit { 0.4 } else { 0.6 };
    let evidence = candidate.evidence_text.trim();
    let importance = candidate.importance.unwrap_or(candidate.confidence);
    candidate.should_save
        && !candidate.title.trim().is_empty()
        && !candidate.body.trim().is_empty()
        && !evidence.is_empty()
        && (threshold..=1.0).contains(&candidate.confidence)
        && (0.0..=1.0).contains(&importance)
        && !looks_secret(&candidate.title)
        && !looks_secret(&candidate.body)
        && !looks_secret(evidence)
}

fn normalized_evidence(text: &str) -> String {
    redact(text.trim())
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the candidate's evidence occurs in the person's own message (or, for a session
/// episode note, in the assistant's synthesis). Tool output never grounds a fact: a page or a
/// file that says "the user wants …" is not the person's word.
pub(crate) fn is_grounded(turn: &CapturedTurn, candidate: &Candidate, target: &Scope) -> bool {
    let evidence = normalized_evidence(&candidate.evidence_text);
    if evidence.is_empty() {
        return false;
    }
    let synthesis_allowed =
        candidate.kind == Kind::EpisodeNote && target.normalized().kind == "session";
    let mut sources = vec![turn.user_message.as_str()];
    for item in &turn.evidence {
        match item.kind {
            EvidenceKind::AssistantSynthesis if synthesis_allowed => sources.push(&item.text),
            EvidenceKind::AssistantSynthesis | EvidenceKind::ToolOutput => {}
        }
    }
    sources
        .iter()
        .any(|source| normalized_evidence(source).contains(&evidence))
}

/// A candidate accepted for storing, with its scope.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Accepted {
    /// The candidate.
    pub candidate: Candidate,
    /// Where it goes.
    pub scope: Scope,
    /// Its normalised key.
    pub canonical_key: Option<String>,
}

/// Valid, grounded candidates with a scope the context allows, deduplicated by (scope, key or
/// content hash).
pub(crate) fn accept(
    turn: &CapturedTurn,
    candidates: Vec<Candidate>,
    explicit: bool,
) -> Vec<Accepted> {
    let allowed: Vec<Scope> = turn
        .context
        .retrieval_scopes()
        .iter()
        .map(Scope::normalized)
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut accepted = Vec::new();
    for candidate in candidates {
        if !is_valid(&candidate, explicit) {
            continue;
        }
        let Some(scope) = turn
            .context
            .resolve(candidate.requested_scope, candidate.kind)
            .map(|scope| scope.normalized())
        else {
            continue;
        };
        if !allowed.contains(&scope) || !is_grounded(turn, &candidate, &scope) {
            continue;
        }
        let canonical_key = candidate
            .canonical_key
            .as_deref()
            .and_then(normalize_canonical_key);
        let dedupe = canonical_key.clone().unwrap_or_else(|| {
            content_hash(candidate.kind, None, &candidate.title, &candidate.body)
        });
        if seen.insert((scope.clone(), dedupe)) {
            accepted.push(Accepted {
                candidate,
                scope,
                canonical_key,
            });
        }
    }
    accepted
}

fn trim_middle(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_owned();
    }
    let marker = "\n...[truncated]...\n";
    let keep = max_chars.saturating_sub(marker.chars().count());
    let head = keep / 2;
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!("{start}{marker}{end}")
}

/// The redacted source text of a turn: `[USER]` then each evidence snippet, cut in the middle
/// to at most [`MAX_TURN_SOURCE_CHARS`].
pub(crate) fn source_text(turn: &CapturedTurn) -> String {
    let mut sections = vec![format!("[USER]\n{}", redact(turn.user_message.trim()))];
    for item in turn.evidence.iter().take(MAX_EVIDENCE_SNIPPETS) {
        let source = item
            .source
            .as_deref()
            .map(|name| redact(name).replace('\n', " ").trim().to_owned())
            .filter(|name| !name.is_empty())
            .map(|name| format!(" source={name}"))
            .unwrap_or_default();
        sections.push(format!(
            "[{}{source}]\n{}",
            item.kind.label(),
            redact(item.text.trim())
        ));
    }
    trim_middle(&sections.join("\n\n"), MAX_TURN_SOURCE_CHARS)
}

/// Evidence bounded as the original bounds it: at most [`MAX_EVIDENCE_SNIPPETS`] snippets of
/// [`MAX_SNIPPET_CHARS`] each and [`MAX_TURN_SOURCE_CHARS`] in all, blank ones dropped.
pub(crate) fn bounded(evidence: Vec<Evidence>) -> Vec<Evidence> {
    let mut remaining = MAX_TURN_SOURCE_CHARS;
    let mut kept = Vec::new();
    for mut item in evidence.into_iter().take(MAX_EVIDENCE_SNIPPETS) {
        if remaining == 0 {
            break;
        }
        let text = trim_middle(item.text.trim(), MAX_SNIPPET_CHARS.min(remaining));
        if text.trim().is_empty() {
            continue;
        }
        remaining = remaining.saturating_sub(text.chars().count());
        item.text = text;
        kept.push(item);
    }
    kept
}
