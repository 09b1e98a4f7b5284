//! What the nodes of one turn share: the services of the agents, the turn's model, sink,
//! mailbox and cancellation. Built per turn; nodes hold it behind an `Arc`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::events::TurnSink;
use super::knowledge::KnowledgeStore;
use super::memory::MemoryRecall;
use super::models::ChatModel;
use super::skills::{SkillBundles, ToolFilter};
use super::sources::{ContextSource, McpTools};
use super::steering::Mailbox;
use crate::llm::LlmError;
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
    /// How each model's classifier has been answering (see [`ClassifierHealth`]).
    pub classifier_health: std::sync::Mutex<std::collections::HashMap<String, ClassifierHealth>>,
}

/// Failures in a row after which a model's classifier is not asked for a while: a small model
/// that misses the format twice running misses it every turn, and each miss is a request the
/// person waits for.
pub(crate) const CLASSIFIER_FAILURES_TO_REST: u32 = 2;
/// How long a model's classifier rests after [`CLASSIFIER_FAILURES_TO_REST`] failures in a
/// row (then it is asked again: a model may be swapped behind the same name, or a server
/// restarted).
pub(crate) const CLASSIFIER_REST: Duration = Duration::from_secs(30 * 60);

/// One model's record as a classifier.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClassifierHealth {
    /// Whether it ever failed (its first failure is logged as a warning, later ones not).
    pub failed_before: bool,
    /// Failures since its last readable answer.
    pub failures_in_a_row: u32,
    /// Until when it is not asked.
    pub resting_until: Option<std::time::Instant>,
}

/// What a classifier failure meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClassifierFailure {
    /// Whether the model had failed before.
    pub again: bool,
    /// Whether the model now rests (not asked for [`CLASSIFIER_REST`]).
    pub resting: bool,
}

impl Services {
    fn classifier_health<T>(&self, model: &str, f: impl FnOnce(&mut ClassifierHealth) -> T) -> T {
        let mut health = self
            .classifier_health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(health.entry(model.to_owned()).or_default())
    }

    /// Whether `model`'s classifier should be asked now (not while it rests).
    pub(crate) fn classifier_awake(&self, model: &str) -> bool {
        self.classifier_health(model, |health| {
            health
                .resting_until
                .is_none_or(|until| std::time::Instant::now() >= until)
        })
    }

    /// Notes a readable answer from `model`'s classifier.
    pub(crate) fn classifier_answered(&self, model: &str) {
        self.classifier_health(model, |health| {
            health.failures_in_a_row = 0;
            health.resting_until = None;
        });
    }

    /// Notes that `model`'s classifier failed.
    pub(crate) fn classifier_failed(&self, model: &str) -> ClassifierFailure {
        self.classifier_health(model, |health| {
            let again = health.failed_before;
            health.failed_before = true;
            health.failures_in_a_row += 1;
            let resting = health.failures_in_a_row >= CLASSIFIER_FAILURES_TO_REST;
            if resting {
                health.failures_in_a_row = 0;
                health.resting_until = Some(std::time::Instant::now() + CLASSIFIER_REST);
            }
            ClassifierFailure { again, resting }
        })
    }
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
    /// Whether the model may ask the person a question (`AskUser`; chat turns).
    pub ask_user: bool,
    /// The question the model asked, which ends the turn.
    pub question: std::sync::Mutex<Option<super::context::AskedQuestion>>,
    /// The catalog tools the turn may list and run.
    pub tools: ToolFilter,
    /// The person's language (the turn's interface language).
    pub language: souz_protocol::language::Language,
    /// The agent's own tools the turn leaves out.
    pub core_off: super::core_tool_types::CoreToolsOff,
    /// How long one model request may take, start to finished answer (`None`: the provider
    /// client's own limits only).
    pub request_timeout: Option<Duration>,
    /// Model requests made so far (start at 0).
    pub attempts: AtomicU64,
    /// Set for an unattended run (a schedule's): calls that need a person park on it.
    pub parking: Option<super::gate_call::Parking>,
    /// The turn's count of calls and its stop, once a limit is reached.
    pub watch: super::limits::Watch,
    /// Tokens the turn's failed summary attempts used: their context is dropped with the
    /// error, so they are kept here and counted when the turn keeps its answer unsummarized.
    pub summary_usage: std::sync::Mutex<crate::llm::Usage>,
    /// The tools of the device that submitted the turn, when one did.
    pub client_tools: Option<super::client_tools::ClientTools>,
}

impl TurnScope {
    /// Whether a call of this turn parked (the turn ends there and resumes once decided).
    pub(crate) fn is_parked(&self) -> bool {
        self.parking
            .as_ref()
            .is_some_and(|parking| parking.parked().is_some())
    }

    /// Whether the model asked the person a question.
    pub(crate) fn asked(&self) -> bool {
        self.question
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
    }

    /// Runs one model request within the turn's request timeout; when it runs out the request
    /// is dropped (which aborts it) and the answer is a timeout error.
    pub(crate) async fn within_request_timeout<T>(
        &self,
        request: impl Future<Output = Result<T, LlmError>>,
    ) -> Result<T, LlmError> {
        let Some(limit) = self.request_timeout else {
            return request.await;
        };
        match tokio::time::timeout(limit, request).await {
            Ok(result) => result,
            Err(_) => Err(match self.model.provider {
                Some(provider) => LlmError::Timeout {
                    provider,
                    after: limit,
                },
                None => LlmError::Interrupted {
                    provider: None,
                    detail: format!(
                        "no complete answer within the request timeout ({} ms)",
                        limit.as_millis()
                    ),
                },
            }),
        }
    }

    /// Numbers the next chat request of the turn (from 1).
    pub(crate) fn next_attempt(&self) -> u64 {
        self.attempts.fetch_add(1, Ordering::Relaxed) + 1
    }
}
