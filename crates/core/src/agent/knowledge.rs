//! Knowledge: large tool results kept out of the prompt and read back on demand.
//!
//! A tool result longer than [`OFFLOAD_THRESHOLD_BYTES`] UTF-8 bytes (exactly that many stays
//! inline) is stored and replaced in the conversation by a small reference the model can pass
//! to `GetKnowledge` or `SearchKnowledge` ([`retrieval`]). Results of the discovery tools and of
//! the Knowledge tools themselves always stay inline, so a read is never offloaded again.
//!
//! Storage is the Souz database (table `knowledge_entries`), not files: one transactional
//! store with the chat's sessions, no paths to escape, no partial writes to detect, and a chat's
//! entries go with one `DELETE`. Invariants:
//! - At most [`RETAIN_LIMIT_BYTES`] of a result are kept; a longer one keeps independent head
//!   and tail budgets of [`SEGMENT_BUDGET_BYTES`] each, cut on whole characters, and the middle
//!   is omitted (never empty when truncated).
//! - Lengths and offsets the model sees are UTF-16 code units (what the original exposed, so
//!   prompts written for it keep working).
//! - Entries are scoped to their chat: an id from another chat is simply not found. Ids are
//!   random UUIDs; any casing of the canonical form is accepted.
//! - A stored row is checked when read; one that does not add up is a `storage_failure`, never
//!   a wrong answer.

pub(crate) mod retrieval;

use rusqlite::OptionalExtension;
use serde::Serialize;

use super::core_tool_types::CoreTool;
use crate::store::codec::{now, to_time};
use crate::store::{Store, StoreError};

/// Results longer than this many UTF-8 bytes are offloaded.
pub(crate) const OFFLOAD_THRESHOLD_BYTES: usize = 8192;
/// Results up to this many UTF-8 bytes are kept whole.
pub(crate) const RETAIN_LIMIT_BYTES: usize = 1024 * 1024;
/// Budget of the head and of the tail of a longer result, each, in UTF-8 bytes.
pub(crate) const SEGMENT_BUDGET_BYTES: usize = 512 * 1024;
/// How often a fresh id is tried if one collides.
const ID_ATTEMPTS: usize = 16;

/// What the model is told to do with a reference.
pub(crate) const REFERENCE_INSTRUCTION: &str = "Call GetKnowledge with this knowledgeId for all retained content, or SearchKnowledge for targeted regex retrieval.";

/// Length of `text` in UTF-16 code units.
pub(crate) fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// What is kept of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnowledgeContent {
    /// All of it.
    Complete(String),
    /// Its beginning and its end; the middle was omitted.
    Truncated {
        /// The beginning.
        head: String,
        /// The end.
        tail: String,
    },
}

impl KnowledgeContent {
    /// Keeps `content` whole up to the limit, else its head and tail on whole characters.
    pub fn retain(content: &str) -> Self {
        if content.len() <= RETAIN_LIMIT_BYTES {
            return Self::Complete(content.to_owned());
        }
        let mut head_end = SEGMENT_BUDGET_BYTES;
        while !content.is_char_boundary(head_end) {
            head_end -= 1;
        }
        let mut tail_start = content.len() - SEGMENT_BUDGET_BYTES;
        while !content.is_char_boundary(tail_start) {
            tail_start += 1;
        }
        Self::Truncated {
            head: content[..head_end].to_owned(),
            tail: content[tail_start..].to_owned(),
        }
    }
}

/// A stored result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnowledgeEntry {
    /// Its id (a lowercase UUID).
    pub id: String,
    /// The tool that produced it.
    pub source_tool: String,
    /// Length of the whole result, in UTF-16 units.
    pub original_length: usize,
    /// What was kept.
    pub content: KnowledgeContent,
}

impl KnowledgeEntry {
    /// Length of what was kept, in UTF-16 units.
    pub fn stored_length(&self) -> usize {
        match &self.content {
            KnowledgeContent::Complete(text) => utf16_len(text),
            KnowledgeContent::Truncated { head, tail } => utf16_len(head) + utf16_len(tail),
        }
    }

    /// Whether a middle part was omitted.
    pub fn truncated(&self) -> bool {
        matches!(self.content, KnowledgeContent::Truncated { .. })
    }

    /// The reference that replaces the result in the conversation.
    pub fn reference(&self) -> KnowledgeReference<'_> {
        KnowledgeReference {
            knowledge_id: &self.id,
            source_tool: &self.source_tool,
            original_length: self.original_length,
            stored_length: self.stored_length(),
            truncated: self.truncated(),
            instruction: REFERENCE_INSTRUCTION,
        }
    }
}

/// What the model sees instead of an offloaded result (keys in this order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeReference<'a> {
    /// The entry's id.
    pub knowledge_id: &'a str,
    /// The tool that produced it.
    pub source_tool: &'a str,
    /// Whole length in UTF-16 units.
    pub original_length: usize,
    /// Kept length in UTF-16 units.
    pub stored_length: usize,
    /// Whether a middle part was omitted.
    pub truncated: bool,
    /// What to do with it.
    pub instruction: &'static str,
}

/// Why Knowledge could not be stored or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnowledgeError {
    /// The call has no conversation to scope Knowledge to.
    #[error("Knowledge is only available inside a conversation.")]
    ConversationUnavailable,
    /// The database failed or holds something unreadable.
    #[error("Knowledge storage failed: {0}")]
    Storage(String),
}

impl From<StoreError> for KnowledgeError {
    fn from(error: StoreError) -> Self {
        Self::Storage(error.to_string())
    }
}

/// The canonical form of a Knowledge id, or `None` if `id` is not a hyphenated UUID.
pub(crate) fn canonical_id(id: &str) -> Option<String> {
    let id = id.trim();
    if id.len() != 36 {
        return None;
    }
    uuid::Uuid::try_parse(id)
        .ok()
        .map(|parsed| parsed.hyphenated().to_string())
}

/// Knowledge entries in the Souz database. Cheap to clone.
#[derive(Debug, Clone)]
pub struct KnowledgeStore {
    store: Store,
}

impl KnowledgeStore {
    /// Knowledge kept in `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Stores `content` produced by `source_tool` in `chat_id`.
    pub async fn put(
        &self,
        chat_id: &str,
        source_tool: &str,
        content: &str,
    ) -> Result<KnowledgeEntry, KnowledgeError> {
        if chat_id.trim().is_empty() {
            return Err(KnowledgeError::ConversationUnavailable);
        }
        let retained = KnowledgeContent::retain(content);
        let entry = KnowledgeEntry {
            id: String::new(),
            source_tool: source_tool.to_owned(),
            original_length: utf16_len(content),
            content: retained,
        };
        let chat_id = chat_id.to_owned();
        self.store
            .write(move |transaction| {
                let (head, tail) = match &entry.content {
                    KnowledgeContent::Complete(text) => (text.as_str(), None),
                    KnowledgeContent::Truncated { head, tail } => {
                        (head.as_str(), Some(tail.as_str()))
                    }
                };
                let created_at = to_time(now());
                let original_length = i64::try_from(entry.original_length)
                    .map_err(|_| KnowledgeError::Storage("the result is too long".into()))?;
                for _ in 0..ID_ATTEMPTS {
                    let id = uuid::Uuid::new_v4().hyphenated().to_string();
                    let inserted = transaction.execute(
                        "INSERT INTO knowledge_entries
                             (id, chat_id, source_tool, original_length, head, tail, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                         ON CONFLICT (id) DO NOTHING",
                        rusqlite::params![
                            id,
                            chat_id,
                            entry.source_tool,
                            original_length,
                            head,
                            tail,
                            created_at
                        ],
                    );
                    if inserted.map_err(StoreError::from)? == 1 {
                        return Ok(KnowledgeEntry { id, ..entry });
                    }
                }
                Err(KnowledgeError::Storage(
                    "could not find a free Knowledge id".into(),
                ))
            })
            .await
    }

    /// The entry `id` of `chat_id`, or `None` when there is none (or `id` is no UUID).
    pub async fn get(
        &self,
        chat_id: &str,
        id: &str,
    ) -> Result<Option<KnowledgeEntry>, KnowledgeError> {
        if chat_id.trim().is_empty() {
            return Err(KnowledgeError::ConversationUnavailable);
        }
        let Some(id) = canonical_id(id) else {
            return Ok(None);
        };
        let chat_id = chat_id.to_owned();
        self.store
            .read(move |connection| {
                let row = connection
                    .query_row(
                        "SELECT source_tool, original_length, head, tail
                         FROM knowledge_entries WHERE id = ?1 AND chat_id = ?2",
                        rusqlite::params![id, chat_id],
                        |row| {
                            Ok((
                                row.get::<_, String>(0)?,
                                row.get::<_, i64>(1)?,
                                row.get::<_, String>(2)?,
                                row.get::<_, Option<String>>(3)?,
                            ))
                        },
                    )
                    .optional()
                    .map_err(StoreError::from)?;
                row.map(|(source_tool, original_length, head, tail)| {
                    checked_entry(id.clone(), source_tool, original_length, head, tail)
                })
                .transpose()
            })
            .await
    }

    /// Deletes every entry of `chat_id`; returns how many there were.
    pub async fn clear_chat(&self, chat_id: &str) -> Result<usize, KnowledgeError> {
        if chat_id.trim().is_empty() {
            return Err(KnowledgeError::ConversationUnavailable);
        }
        let chat_id = chat_id.to_owned();
        self.store
            .write(move |transaction| {
                transaction
                    .execute(
                        "DELETE FROM knowledge_entries WHERE chat_id = ?1",
                        rusqlite::params![chat_id],
                    )
                    .map_err(|error| KnowledgeError::from(StoreError::from(error)))
            })
            .await
    }
}

/// Rebuilds an entry from its row, refusing one whose parts do not add up.
fn checked_entry(
    id: String,
    source_tool: String,
    original_length: i64,
    head: String,
    tail: Option<String>,
) -> Result<KnowledgeEntry, KnowledgeError> {
    let corrupt = || KnowledgeError::Storage(format!("the stored Knowledge entry {id} is corrupt"));
    let original_length = usize::try_from(original_length).map_err(|_| corrupt())?;
    let content = match tail {
        None if utf16_len(&head) == original_length && head.len() <= RETAIN_LIMIT_BYTES => {
            KnowledgeContent::Complete(head)
        }
        Some(tail)
            if head.len() <= SEGMENT_BUDGET_BYTES
                && tail.len() <= SEGMENT_BUDGET_BYTES
                && utf16_len(&head) + utf16_len(&tail) < original_length =>
        {
            KnowledgeContent::Truncated { head, tail }
        }
        _ => return Err(corrupt()),
    };
    Ok(KnowledgeEntry {
        id,
        source_tool,
        original_length,
        content,
    })
}

/// Whether results of `tool` always stay inline (discovery and Knowledge tools).
pub(crate) fn always_inline(tool: &str) -> bool {
    CoreTool::parse(tool).is_some_and(CoreTool::always_inline)
}

/// The content to put in the conversation for a result of `tool`: the result itself, or a
/// reference to where it was stored. Storage problems keep it inline (and are logged).
pub(crate) async fn offload(
    store: &KnowledgeStore,
    chat_id: &str,
    tool: &str,
    content: String,
) -> String {
    if content.len() <= OFFLOAD_THRESHOLD_BYTES || always_inline(tool) {
        return content;
    }
    match store.put(chat_id, tool, &content).await {
        Ok(entry) => serde_json::to_string(&entry.reference()).unwrap_or(content),
        Err(KnowledgeError::ConversationUnavailable) => content,
        Err(error) => {
            tracing::warn!(%error, tool, "could not offload a large tool result; keeping it inline");
            content
        }
    }
}

#[cfg(test)]
mod tests;
