//! The agents' view of long-term memory: automatic recall before the model is asked, and the
//! explicit `SearchMemory` tool.
//!
//! The memory store arrives in a later issue; until then [`NoMemory`] recalls nothing and
//! `SearchMemory` answers `memory_unavailable`. Memory is data, never instructions: recalled
//! facts enter the prompt inside an envelope that says so.

use futures::future::BoxFuture;
use serde::Serialize;

/// Whose memory and which conversation a recall is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryScope {
    /// The owner (the local user).
    pub owner: String,
    /// The conversation (also the session scope).
    pub chat_id: String,
}

/// What automatic recall found.
#[derive(Debug, Clone, PartialEq)]
pub struct RecalledMemory {
    /// The rendered block for the prompt (blank means nothing to add).
    pub block: String,
    /// The facts it contains.
    pub facts: Vec<MemoryFact>,
}

/// One remembered fact.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryFact {
    /// Its id.
    pub fact_id: String,
    /// Its scope (`global:global`, `session:<chat>`, ...).
    pub scope: String,
    /// Its kind (`SEMANTIC`, `PREFERENCE`, ...).
    pub kind: String,
    /// Short title.
    pub title: String,
    /// The fact.
    pub body: String,
    /// Relevance score.
    pub score: f64,
}

/// An explicit search.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySearch {
    /// Where to search.
    pub scope: MemoryScope,
    /// What is needed, in words.
    pub semantic_query: String,
    /// Words likely to occur in matching facts.
    pub lexical_hints: Vec<String>,
    /// Most facts to return.
    pub max_facts: usize,
}

/// Why memory could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// There is no memory in this runtime.
    #[error("Persistent memory is unavailable in this runtime.")]
    Unavailable,
    /// The search failed.
    #[error("Memory search failed: {0}")]
    Failed(String),
}

/// Long-term memory as the agents use it.
pub trait MemoryRecall: Send + Sync {
    /// Facts relevant to `query` for the prompt, if any.
    fn recall<'a>(
        &'a self,
        scope: &'a MemoryScope,
        query: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecalledMemory>, MemoryError>>;

    /// An explicit search.
    fn search<'a>(
        &'a self,
        request: &'a MemorySearch,
    ) -> BoxFuture<'a, Result<Vec<MemoryFact>, MemoryError>>;
}

/// No memory: recalls nothing, searches answer [`MemoryError::Unavailable`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoMemory;

impl MemoryRecall for NoMemory {
    fn recall<'a>(
        &'a self,
        _: &'a MemoryScope,
        _: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecalledMemory>, MemoryError>> {
        Box::pin(async { Ok(None) })
    }

    fn search<'a>(
        &'a self,
        _: &'a MemorySearch,
    ) -> BoxFuture<'a, Result<Vec<MemoryFact>, MemoryError>> {
        Box::pin(async { Err(MemoryError::Unavailable) })
    }
}
