//! What the nodes of one turn share: the services of the agents, the turn's model, sink,
//! mailbox and cancellation. Built per turn; nodes hold it behind an `Arc`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

use super::events::TurnSink;
use super::knowledge::KnowledgeStore;
use super::memory::MemoryRecall;
use super::models::ChatModel;
use super::nodes::information::ContextSource;
use super::nodes::mcp::McpTools;
use super::skills::SkillBundles;
use super::steering::Mailbox;
use crate::tools::gate::Gate;

/// Long-lived parts every turn uses.
pub(crate) struct Services {
    /// The approval gate (and its catalog).
    pub gate: Gate,
    /// Knowledge entries.
    pub knowledge: KnowledgeStore,
    /// Long-term memory.
    pub memory: Arc<dyn MemoryRecall>,
    /// Tools from external MCP servers.
    pub mcp: Arc<dyn McpTools>,
    /// File-backed skills.
    pub bundles: Arc<dyn SkillBundles>,
    /// Background facts for the prompt.
    pub context: Arc<dyn ContextSource>,
}

/// One turn's shared state.
pub(crate) struct TurnScope {
    /// Its chat.
    pub chat_id: String,
    /// Whose memory it may read.
    pub owner: String,
    /// The model.
    pub model: ChatModel,
    /// Where events go.
    pub sink: Arc<dyn TurnSink>,
    /// Steering input (skills agent only).
    pub mailbox: Option<Arc<Mailbox>>,
    /// Cancels the turn.
    pub cancel: CancellationToken,
    /// The agents' services.
    pub services: Arc<Services>,
    attempts: AtomicU64,
}

impl TurnScope {
    pub(crate) fn new(
        chat_id: String,
        owner: String,
        model: ChatModel,
        sink: Arc<dyn TurnSink>,
        mailbox: Option<Arc<Mailbox>>,
        cancel: CancellationToken,
        services: Arc<Services>,
    ) -> Self {
        Self {
            chat_id,
            owner,
            model,
            sink,
            mailbox,
            cancel,
            services,
            attempts: AtomicU64::new(0),
        }
    }

    /// Numbers the next chat request of the turn (from 1).
    pub(crate) fn next_attempt(&self) -> u64 {
        self.attempts.fetch_add(1, Ordering::Relaxed) + 1
    }
}
