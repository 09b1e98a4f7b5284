//! The agents' view of long-term memory: automatic recall before the model is asked, the
//! explicit `SearchMemory` tool, capture after a finished turn, and the cleanup of a
//! conversation.
//!
//! [`LongTermMemory`] serves all of it from [`crate::memory::Memory`]; [`NoMemory`] recalls
//! nothing and `SearchMemory` answers `memory_unavailable`. Memory is data, never
//! instructions: recalled facts enter the prompt inside an envelope that says so.
//!
//! Invariants: capture never delays a reply — [`MemoryRecall::capture`] only queues the turn
//! (a bounded queue; a full one drops the capture with a warning) and one [`CaptureWorker`]
//! runs the queue in order; a recall or capture that fails is logged and changes nothing.

use futures::future::BoxFuture;
use serde::Serialize;
use souz_protocol::memory::RecallMode;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::llm::Message;
use crate::memory::{self, CapturedTurn, Evidence, EvidenceKind, Memory, recall};

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

/// What an explicit search found.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundFacts {
    /// The facts, best first.
    pub facts: Vec<MemoryFact>,
    /// Whether they were matched by words only (no embedding model ready) or also by meaning.
    pub mode: RecallMode,
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
    ) -> BoxFuture<'a, Result<FoundFacts, MemoryError>>;

    /// Hands a finished turn to capture; returns at once (nothing by default).
    fn capture(&self, turn: CapturedTurn) {
        let _ = turn;
    }

    /// Forgets a conversation: closes its session scope for capture and deletes its session
    /// facts (nothing by default).
    fn forget_chat<'a>(&'a self, scope: &'a MemoryScope) -> BoxFuture<'a, Result<(), MemoryError>> {
        let _ = scope;
        Box::pin(async { Ok(()) })
    }
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

    fn search<'a>(&'a self, _: &'a MemorySearch) -> BoxFuture<'a, Result<FoundFacts, MemoryError>> {
        Box::pin(async { Err(MemoryError::Unavailable) })
    }
}

/// Turns waiting for capture, at most.
pub(crate) const CAPTURE_QUEUE: usize = 64;

/// Long-term memory over [`Memory`]: recall and search read it, captures go through a queue.
#[derive(Debug, Clone)]
pub(crate) struct LongTermMemory {
    memory: Memory,
    /// Where finished turns go for capture (`None`: `[memory] capture` is off).
    captures: Option<mpsc::Sender<CapturedTurn>>,
}

/// Runs queued captures one after another (see [`LongTermMemory::new`]).
#[derive(Debug)]
pub(crate) struct CaptureWorker {
    memory: Memory,
    queue: mpsc::Receiver<CapturedTurn>,
}

impl LongTermMemory {
    /// Memory for the agents, and the worker that must run for captures to happen.
    pub(crate) fn new(memory: Memory) -> (Self, CaptureWorker) {
        let (captures, queue) = mpsc::channel(CAPTURE_QUEUE);
        (
            Self {
                memory: memory.clone(),
                captures: Some(captures),
            },
            CaptureWorker { memory, queue },
        )
    }

    /// Memory for the agents that recalls and searches but captures nothing from turns.
    pub(crate) fn without_capture(memory: Memory) -> Self {
        Self {
            memory,
            captures: None,
        }
    }
}

impl CaptureWorker {
    /// Captures queued turns in order until `shutdown` fires or every sender is gone.
    pub(crate) async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let turn = tokio::select! {
                () = shutdown.cancelled() => return,
                turn = self.queue.recv() => turn,
            };
            let Some(turn) = turn else { return };
            self.capture(turn).await;
        }
    }

    #[cfg(test)]
    /// Captures the turns queued now, in order; how many.
    pub(crate) async fn run_queued(&mut self) -> usize {
        let mut count = 0;
        while let Ok(turn) = self.queue.try_recv() {
            self.capture(turn).await;
            count += 1;
        }
        count
    }

    async fn capture(&self, turn: CapturedTurn) {
        match self.memory.capture(turn).await {
            Ok(facts) if !facts.is_empty() => {
                tracing::debug!(facts = facts.len(), "memory captured facts from a turn");
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "memory capture failed; nothing was stored"),
        }
    }
}

fn context(scope: &MemoryScope) -> memory::Context {
    memory::Context {
        owner: scope.owner.clone(),
        session: Some(scope.chat_id.clone()),
        project: None,
    }
}

fn fact(selected: memory::Selected) -> MemoryFact {
    MemoryFact {
        scope: selected.fact.scope.normalized().kind,
        kind: selected.fact.kind.as_str().to_owned(),
        fact_id: selected.fact.id,
        title: selected.fact.title,
        body: selected.fact.body,
        score: selected.score,
    }
}

impl MemoryRecall for LongTermMemory {
    fn recall<'a>(
        &'a self,
        scope: &'a MemoryScope,
        query: &'a str,
    ) -> BoxFuture<'a, Result<Option<RecalledMemory>, MemoryError>> {
        Box::pin(async move {
            let (block, selected) = self
                .memory
                .recall(&context(scope), query, recall::AUTOMATIC_MAX_FACTS)
                .await
                .map_err(|error| MemoryError::Failed(error.to_string()))?;
            if block.trim().is_empty() {
                return Ok(None);
            }
            Ok(Some(RecalledMemory {
                block,
                facts: selected.into_iter().map(fact).collect(),
            }))
        })
    }

    fn search<'a>(
        &'a self,
        request: &'a MemorySearch,
    ) -> BoxFuture<'a, Result<FoundFacts, MemoryError>> {
        Box::pin(async move {
            let (selected, mode) = self
                .memory
                .search(
                    &context(&request.scope),
                    &request.semantic_query,
                    &request.lexical_hints,
                    request.max_facts,
                )
                .await
                .map_err(|error| MemoryError::Failed(error.to_string()))?;
            Ok(FoundFacts {
                facts: selected.into_iter().map(fact).collect(),
                mode,
            })
        })
    }

    fn capture(&self, turn: CapturedTurn) {
        let Some(captures) = &self.captures else {
            return;
        };
        if let Err(error) = captures.try_send(turn) {
            tracing::warn!(%error, "the memory capture queue is full or closed; this turn is not captured");
        }
    }

    fn forget_chat<'a>(&'a self, scope: &'a MemoryScope) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move {
            self.memory
                .close_session(&scope.owner, &scope.chat_id)
                .await
                .map(|_| ())
                .map_err(|error| MemoryError::Failed(error.to_string()))
        })
    }
}

/// What capture gets from a finished turn: the person's message, the final answer, and as
/// evidence what came after the person's last message in `history` — tool results (named by
/// their tool) and the assistant's text between tool calls — bounded as the original bounds
/// it. A turn that answers `AskUser` questions is the person's message that led to them plus
/// the answers' own words (the asking turn itself is not captured: it taught nothing yet),
/// with the questions as the assistant's text.
pub(crate) fn turn_record(
    scope: &MemoryScope,
    turn_id: &str,
    user_message: &str,
    answer: &str,
    history: &[Message],
) -> CapturedTurn {
    let start = super::context::current_user_index(history).map_or(history.len(), |at| at + 1);
    let mut after: Vec<&Message> = history.iter().skip(start).collect();
    // The final answer is context, not evidence.
    if matches!(after.last(), Some(Message::Assistant { tool_calls, .. }) if tool_calls.is_empty())
    {
        after.pop();
    }
    // A turn that answers questions: the person's words are what led to them and the
    // answers; the questions are the assistant's text (context, not the person's grounding).
    let (user_message, questions) = match super::ask_user::answered(history) {
        Some(answered) => (answered.said.join("\n"), answered.questions),
        None => (user_message.to_owned(), Vec::new()),
    };
    let asked = questions.into_iter().map(|question| Evidence {
        kind: EvidenceKind::AssistantSynthesis,
        source: Some(super::ask_user::ASK_USER.to_owned()),
        text: question,
    });
    let evidence = asked
        .chain(after.into_iter().filter_map(|message| match message {
            Message::Tool { name, content, .. } => Some(Evidence {
                kind: EvidenceKind::ToolOutput,
                source: Some(name.clone()),
                text: content.clone(),
            }),
            Message::Assistant {
                content,
                tool_calls,
            } if tool_calls.is_empty() && !content.trim().is_empty() => Some(Evidence {
                kind: EvidenceKind::AssistantSynthesis,
                source: None,
                text: content.clone(),
            }),
            _ => None,
        }))
        .collect();
    CapturedTurn {
        context: context(scope),
        user_message,
        assistant_message: answer.to_owned(),
        evidence: memory::capture::bounded(evidence),
        turn_id: Some(turn_id.to_owned()),
    }
}
