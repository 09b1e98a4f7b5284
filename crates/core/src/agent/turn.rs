//! The entry point the chat gateway calls: [`Agents::run_turn`] (or [`Agents::start_turn`] then
//! [`Turn::run`], to hold a steering handle before the turn starts).
//!
//! Invariants:
//! - One turn per chat at a time: a second one is refused with [`AgentError::Busy`] (send the
//!   input to the running turn with [`Agents::submit_input`], or cancel it).
//! - A turn is recorded before its graph runs and finished afterwards, whatever happens; its
//!   outcome carries the history to continue from, inputs it accepted but never read, and the
//!   tokens it used.
//! - A summary that fails after the answer was produced does not fail the turn: the answer is
//!   returned and the history stays unsummarized (the next turn tries again).
//! - A turn that completed with an answer is handed to memory capture once it is recorded;
//!   capture only queues it, so the reply never waits for memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::context::{AgentContext, AgentSettings, ToolBinding};
use super::core_tool_types::CoreToolsOff;
use super::core_tools::CoreTool;
use super::ending::{AgentOutcome, Ending, conclude};
use super::events::TurnSink;
use super::gate_call::Parking;
use super::graphs;
use super::knowledge::KnowledgeStore;
use super::limits::{TurnLimits, Watch};
use super::memory::{MemoryRecall, MemoryScope, NoMemory, turn_record};
use super::models::{ChatModel, ChatModels};
use super::nodes::information::{ContextSource, LocalFacts};
use super::nodes::mcp::{GateMcpTools, McpTools};
use super::prompts::default_system_prompt;
use super::scope::{Services, TurnScope};
use super::sessions::{
    HistoryChange, NewTurn, Sessions, StepRecord, StepRecorder, TurnStatus, write_steps,
};
use super::skills::{NoSkillBundles, SkillBundles, ToolFilter, enabled_tools, model_spec};
use super::steering::{Mailbox, SteerError, Steering};
use super::{AgentError, AgentKind};
use crate::graph::RunOptions;
use crate::llm::{ImagePart, Message, Usage};
use crate::store::Store;
use crate::store::codec::now;
use crate::tools::gate::Gate;
use souz_protocol::language::Language;

/// The context window assumed when neither the request nor the configuration says.
pub(crate) const DEFAULT_CONTEXT_SIZE: u32 = 16_000;

/// Everything the agents are made of.
pub struct AgentParts {
    /// The approval gate every catalog tool call passes.
    pub gate: Gate,
    /// The database (sessions, Knowledge).
    pub store: Store,
    /// Where models come from.
    pub models: Arc<dyn ChatModels>,
    /// Long-term memory.
    pub memory: Arc<dyn MemoryRecall>,
    /// Tools of external MCP servers.
    pub mcp: Arc<dyn McpTools>,
    /// File-backed skills.
    pub bundles: Arc<dyn SkillBundles>,
    /// Background facts for the prompt.
    pub context: Arc<dyn ContextSource>,
    /// Whose memory the agents read.
    pub owner: String,
    /// The agent used when a request names none.
    pub default_agent: AgentKind,
    /// The context window used when a request names none.
    pub context_size: u32,
    /// What one turn may spend (`[agent]`).
    pub limits: TurnLimits,
}

impl AgentParts {
    /// Parts with no memory, the external MCP tools the gate knows, no file-backed skills and
    /// the local clock as background context.
    pub fn new(gate: Gate, store: Store, models: Arc<dyn ChatModels>) -> Self {
        let mcp = Arc::new(GateMcpTools { gate: gate.clone() });
        Self {
            gate,
            store,
            models,
            memory: Arc::new(NoMemory),
            mcp,
            bundles: Arc::new(NoSkillBundles),
            context: Arc::new(LocalFacts),
            owner: "local".to_owned(),
            default_agent: AgentKind::default(),
            context_size: DEFAULT_CONTEXT_SIZE,
            limits: TurnLimits::default(),
        }
    }
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct TurnRequest {
    /// The chat.
    pub chat_id: String,
    /// Who the turn acts for: the model's requests use their provider keys, then the daemon's
    /// (`None`: the local user).
    pub user_id: Option<String>,
    /// What the person said.
    pub input: String,
    /// What the person attached, as text appended to their message for the model (the files'
    /// listing and text contents). Not their words: memory captures from `input` alone, so a
    /// file cannot speak for the person ("forget …", "remember …").
    pub attached: String,
    /// Images the person attached to it (vision models; kept in the history for this turn
    /// only).
    pub images: Vec<ImagePart>,
    /// The history to continue; `None` continues the chat's stored history.
    pub history: Option<Vec<Message>>,
    /// Messages delivered to the person through another channel since the chat's previous
    /// turn, oldest first: added to the history as notes before the input unless it holds them
    /// already ([`delivered`](super::delivered)).
    pub delivered: Vec<super::Delivered>,
    /// Which agent (`None`: the configured default).
    pub agent: Option<AgentKind>,
    /// Which model (`None`: the default model).
    pub model: Option<String>,
    /// Sampling temperature (`None`: the provider's default).
    pub temperature: Option<f32>,
    /// The model's context window (`None`: the configured default).
    pub context_size: Option<u32>,
    /// A system prompt replacing the agent's default.
    pub system_prompt: Option<String>,
    /// The language of the agent's default system prompt (the user's interface language).
    pub language: Language,
    /// Whether the model may ask the person a question with `AskUser`, which ends the turn
    /// (chat turns, where the answer can come back).
    pub ask_user: bool,
    /// The catalog tools the turn may list and run (`None`: all of them).
    pub enabled_tools: Option<Vec<String>>,
    /// The agent's own tools the turn leaves out (the chat's `disabledCoreTools`): neither
    /// listed to the model nor run if it calls one anyway.
    pub core_off: CoreToolsOff,
    /// How long one model request may take, from sending it to the end of the answer
    /// (`None`: the provider client's own limits only).
    pub request_timeout: Option<Duration>,
    /// The chat execution the turn runs for, stored with it so the execution's trace finds
    /// it (`None`: a turn outside a chat execution).
    pub execution_id: Option<String>,
    /// The unattended run this turn is (a schedule's): a call that needs a person parks on a
    /// durable approval naming it and the turn ends there (`None`: someone is there to ask).
    pub unattended: Option<crate::tools::gate::Unattended>,
    /// Resumes a parked turn: the approved parked call (this approval's) runs first, and the
    /// turn goes on from its result; `input` is then the task the run was doing.
    pub approved: Option<String>,
    /// Tools that run on the device that submitted the turn, and where their calls go
    /// (`None`: no device, no client tools).
    pub client_tools: Option<super::client_tools::ClientTools>,
}

impl TurnRequest {
    /// A request with defaults for everything but the chat and the input.
    pub fn new(chat_id: impl Into<String>, input: impl Into<String>) -> Self {
        Self {
            chat_id: chat_id.into(),
            input: input.into(),
            ..Self::default()
        }
    }
}

struct ActiveTurn {
    turn_id: String,
    mailbox: Option<Arc<Mailbox>>,
    cancel: CancellationToken,
}

struct Inner {
    services: Arc<Services>,
    sessions: Sessions,
    models: Arc<dyn ChatModels>,
    owner: String,
    /// `[agent] default_agent` and `context_size`; a settings save swaps them for new turns.
    defaults: std::sync::RwLock<(AgentKind, u32)>,
    /// `[agent]`'s limits of a turn; a settings save swaps them for new turns.
    limits: std::sync::RwLock<TurnLimits>,
    active: Mutex<HashMap<String, ActiveTurn>>,
}

/// Souz's own agents. Cheap to clone.
#[derive(Clone)]
pub struct Agents {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents")
            .field("defaults", &self.defaults())
            .finish_non_exhaustive()
    }
}

impl Agents {
    /// The agents over `parts`.
    pub fn new(parts: AgentParts) -> Self {
        Self {
            inner: Arc::new(Inner {
                services: Arc::new(Services {
                    gate: parts.gate,
                    knowledge: KnowledgeStore::new(parts.store.clone()),
                    memory: parts.memory,
                    mcp: parts.mcp,
                    bundles: parts.bundles,
                    context: parts.context,
                    classifier_health: Default::default(),
                }),
                sessions: Sessions::new(parts.store),
                models: parts.models,
                owner: parts.owner,
                defaults: std::sync::RwLock::new((parts.default_agent, parts.context_size)),
                limits: std::sync::RwLock::new(parts.limits),
                active: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The agent and context size a turn that names none uses.
    fn defaults(&self) -> (AgentKind, u32) {
        *self
            .inner
            .defaults
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The agent a turn that names none runs on.
    pub fn default_agent(&self) -> AgentKind {
        self.defaults().0
    }

    /// Changes what turns started from now on use when they name no agent or context size.
    pub fn set_defaults(&self, default_agent: AgentKind, context_size: u32) {
        *self
            .inner
            .defaults
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = (default_agent, context_size);
    }

    /// Changes the limits of the turns started from now on.
    pub fn set_limits(&self, limits: TurnLimits) {
        *self
            .inner
            .limits
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = limits;
    }

    /// Persisted turns and steps.
    pub fn sessions(&self) -> &Sessions {
        &self.inner.sessions
    }

    /// Stored Knowledge.
    pub fn knowledge(&self) -> &KnowledgeStore {
        &self.inner.services.knowledge
    }

    /// Marks turns left running by a previous process as interrupted.
    pub async fn recover(&self) -> Result<usize, AgentError> {
        Ok(self.inner.sessions.recover().await?)
    }

    fn active(&self) -> std::sync::MutexGuard<'_, HashMap<String, ActiveTurn>> {
        self.inner
            .active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a turn is running in `chat_id`.
    pub fn is_running(&self, chat_id: &str) -> bool {
        self.active().contains_key(chat_id)
    }

    /// Sends `input` to the turn running in `chat_id`; returns its revision.
    pub fn submit_input(&self, chat_id: &str, input: &str) -> Result<u64, SteerError> {
        let active = self.active();
        let turn = active.get(chat_id).ok_or(SteerError::NoTurn)?;
        match &turn.mailbox {
            Some(mailbox) => mailbox.submit(input),
            None => Err(SteerError::Unsupported),
        }
    }

    /// Cancels the turn running in `chat_id`; returns its id if there was one.
    pub fn cancel_turn(&self, chat_id: &str) -> Option<String> {
        let active = self.active();
        let turn = active.get(chat_id)?;
        turn.cancel.cancel();
        Some(turn.turn_id.clone())
    }

    /// Forgets `chat_id` (refused while a turn runs there): closes its memory session scope
    /// for capture and deletes its session facts, then deletes its sessions and Knowledge.
    /// Call it when a chat is deleted or cleared; `user_id` is the chat's user (`None`: the
    /// agents' owner, the local user).
    pub async fn forget_chat(
        &self,
        user_id: Option<&str>,
        chat_id: &str,
    ) -> Result<(), AgentError> {
        if self.is_running(chat_id) {
            return Err(AgentError::Busy {
                chat_id: chat_id.to_owned(),
            });
        }
        let scope = MemoryScope {
            owner: user_id.map_or_else(|| self.inner.owner.clone(), str::to_owned),
            chat_id: chat_id.to_owned(),
        };
        self.inner
            .services
            .memory
            .forget_chat(&scope)
            .await
            .map_err(|error| AgentError::Internal(error.to_string()))?;
        self.inner.sessions.forget_chat(chat_id).await?;
        self.inner
            .services
            .knowledge
            .clear_chat(chat_id)
            .await
            .map_err(|error| AgentError::Internal(error.to_string()))?;
        Ok(())
    }

    /// Runs one turn to its end.
    pub async fn run_turn(
        &self,
        request: TurnRequest,
        sink: Arc<dyn TurnSink>,
        cancel: CancellationToken,
    ) -> Result<AgentOutcome, AgentError> {
        self.start_turn(request).await?.run(sink, cancel).await
    }

    /// Prepares a turn: checks the request, claims the chat, resolves the model and loads the
    /// history. The returned [`Turn`] already accepts steering input.
    pub async fn start_turn(&self, request: TurnRequest) -> Result<Turn, AgentError> {
        let chat_id = request.chat_id.trim().to_owned();
        if chat_id.is_empty() {
            return Err(AgentError::InvalidChat);
        }
        // A resumed turn's input is the approved call's result, made when it runs.
        if request.input.trim().is_empty()
            && request.attached.trim().is_empty()
            && request.approved.is_none()
        {
            return Err(AgentError::EmptyInput);
        }
        let kind = request.agent.unwrap_or(self.defaults().0);
        let mailbox = (kind == AgentKind::Skills).then(|| Arc::new(Mailbox::new()));
        let turn_id = uuid::Uuid::now_v7().to_string();
        let cancel = CancellationToken::new();
        {
            let mut active = self.active();
            if active.contains_key(&chat_id) {
                return Err(AgentError::Busy { chat_id });
            }
            active.insert(
                chat_id.clone(),
                ActiveTurn {
                    turn_id: turn_id.clone(),
                    mailbox: mailbox.clone(),
                    cancel: cancel.clone(),
                },
            );
        }
        let claim = Claim {
            agents: self.clone(),
            chat_id: chat_id.clone(),
        };
        let model = self
            .inner
            .models
            .chat_model(
                request.user_id.as_deref().unwrap_or(crate::LOCAL_USER),
                request.model.as_deref(),
            )
            .await?;
        let stored = self.inner.sessions.history(&chat_id).await?;
        let mut history = request
            .history
            .or_else(|| stored.clone())
            .unwrap_or_default();
        super::delivered::add_notes(&mut history, &request.delivered, || {
            request
                .system_prompt
                .clone()
                .unwrap_or_else(|| default_system_prompt(kind, request.language).to_owned())
        });
        let owner = request
            .user_id
            .clone()
            .unwrap_or_else(|| self.inner.owner.clone());
        Ok(Turn {
            agents: self.clone(),
            claim,
            turn_id,
            chat_id,
            execution_id: request.execution_id,
            kind,
            model,
            stored_history: stored.clone().unwrap_or_default(),
            history,
            request_input: request.input,
            request_attached: request.attached,
            request_images: request.images,
            temperature: request.temperature,
            context_size: request.context_size.unwrap_or(self.defaults().1),
            system_prompt: request.system_prompt,
            language: request.language,
            ask_user: request.ask_user,
            tools: request
                .enabled_tools
                .map_or_else(ToolFilter::all, ToolFilter::only),
            core_off: request.core_off,
            request_timeout: request.request_timeout,
            mailbox,
            cancel,
            owner,
            unattended: request.unattended,
            approved: request.approved,
            client_tools: request.client_tools,
            limits: *self
                .inner
                .limits
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        })
    }
}

/// Releases a chat when its turn is dropped.
struct Claim {
    agents: Agents,
    chat_id: String,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.agents.active().remove(&self.chat_id);
    }
}

/// A prepared turn.
pub struct Turn {
    agents: Agents,
    claim: Claim,
    turn_id: String,
    chat_id: String,
    execution_id: Option<String>,
    kind: AgentKind,
    model: ChatModel,
    stored_history: Vec<Message>,
    history: Vec<Message>,
    request_input: String,
    request_attached: String,
    request_images: Vec<ImagePart>,
    temperature: Option<f32>,
    context_size: u32,
    system_prompt: Option<String>,
    language: Language,
    ask_user: bool,
    tools: ToolFilter,
    core_off: CoreToolsOff,
    request_timeout: Option<Duration>,
    mailbox: Option<Arc<Mailbox>>,
    cancel: CancellationToken,
    /// Whose memory the turn reads and captures into: the request's user, else the agents'
    /// owner (the local user). Proxied users never see each other's facts.
    owner: String,
    /// The unattended run it is, if it is one.
    unattended: Option<crate::tools::gate::Unattended>,
    /// The approved parked call it resumes from, if it resumes one.
    approved: Option<String>,
    /// The device's tools, when a device submitted it.
    client_tools: Option<super::client_tools::ClientTools>,
    /// What it may spend.
    limits: TurnLimits,
}

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turn")
            .field("turn_id", &self.turn_id)
            .field("chat_id", &self.chat_id)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Turn {
    /// The turn's id.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// A handle for sending input while the turn runs (the skills agent reads it; the graph
    /// agent refuses it with [`SteerError::Unsupported`]).
    pub fn steering(&self) -> Steering {
        Steering {
            mailbox: self.mailbox.clone(),
        }
    }

    fn initial_context(&self, gate: &Gate) -> AgentContext<String> {
        let system_prompt = self
            .system_prompt
            .clone()
            .unwrap_or_else(|| default_system_prompt(self.kind, self.language).to_owned());
        let mut context = AgentContext {
            input: format!("{}{}", self.request_input, self.request_attached),
            user_input: format!("{}{}", self.request_input, self.request_attached),
            chat_id: self.chat_id.clone(),
            settings: AgentSettings {
                model: self.model.request_name.clone(),
                temperature: self.temperature,
                context_size: self.context_size,
                language: self.language,
            },
            system_prompt,
            history: self.history.clone(),
            advertised: Vec::new(),
            executable: Default::default(),
            categories: None,
            usage: Usage::default(),
            last_chat_usage: None,
            images: Vec::new(),
        };
        match self.kind {
            // Every enabled catalog tool may run; classification narrows only what is shown.
            AgentKind::Graph => {
                for tool in enabled_tools(gate, &self.tools) {
                    context.install(model_spec(tool.spec()), ToolBinding::Gate);
                }
            }
            // Exactly the seven core tools, shown and runnable; catalog tools only through
            // RunSkillCommand.
            AgentKind::Skills => {
                for tool in self.core_off.keep(&CoreTool::ALL) {
                    context.install(tool.spec(), ToolBinding::Core(tool));
                }
            }
        }
        context
    }

    /// Queues a turn that answered for memory capture (failed and cancelled turns teach
    /// nothing; an asking turn is captured with the turn that continues after the answer).
    fn hand_to_memory(&self, inner: &Inner, outcome: &AgentOutcome) {
        // A parked turn goes on later: it is captured with the turn that finishes it.
        if outcome.status != TurnStatus::Completed || outcome.parked.is_some() {
            return;
        }
        let Some(reply) = &outcome.reply else { return };
        if reply.failure.is_some() || reply.question.is_some() {
            return;
        }
        let scope = MemoryScope {
            owner: self.owner.clone(),
            chat_id: self.chat_id.clone(),
        };
        inner.services.memory.capture(turn_record(
            &scope,
            &self.turn_id,
            &self.request_input,
            &reply.text,
            &outcome.history,
        ));
    }

    /// What the turn's nodes share.
    fn scope(
        &self,
        inner: &Arc<Inner>,
        sink: Arc<dyn TurnSink>,
        cancel: CancellationToken,
    ) -> Arc<TurnScope> {
        Arc::new(TurnScope {
            chat_id: self.chat_id.clone(),
            owner: self.owner.clone(),
            model: self.model.clone(),
            sink,
            mailbox: self.mailbox.clone(),
            cancel,
            services: Arc::clone(&inner.services),
            ask_user: self.ask_user,
            question: Mutex::new(None),
            tools: self.tools.clone(),
            core_off: self.core_off.clone(),
            language: self.language,
            request_timeout: self.request_timeout,
            attempts: std::sync::atomic::AtomicU64::new(0),
            parking: self.unattended.clone().map(Parking::new),
            watch: Watch::new(self.limits),
            summary_usage: Mutex::new(Usage::default()),
            client_tools: self.client_tools.clone(),
        })
    }

    /// A turn that resumes a parked one runs the approved call first; its result becomes the
    /// turn's input. Whether it resumes one.
    async fn resume_approved(
        &mut self,
        services: &Services,
        sink: &dyn TurnSink,
        cancel: &CancellationToken,
    ) -> bool {
        let Some(approval_id) = self.approved.take() else {
            return false;
        };
        let (gate, chat_id) = (&services.gate, self.chat_id.as_str());
        let ran = async {
            let approval = match super::gate_call::approved_call(gate, &approval_id).await {
                Ok(approval) => approval,
                Err(text) => return text,
            };
            // A skill bundle's command is no catalog tool: it is made again from the bundle.
            let supplied = services.bundles.command_tool(&approval.tool, gate).await;
            super::gate_call::run_approved(gate, chat_id, approval, supplied, sink).await
        };
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => String::new(),
            text = ran => text,
        };
        // The request's input is the task the run was doing, which the model is reminded of.
        let task = std::mem::take(&mut self.request_input);
        self.request_input = if task.trim().is_empty() {
            result
        } else {
            format!("{result}\n\n(The task of this run, as the person gave it: {task})")
        };
        true
    }

    /// The turn's first step record: which agent and model, what the person asked.
    fn start_record(&self) -> StepRecord {
        StepRecord {
            ordinal: 0,
            step_index: None,
            node: "turn.start".to_owned(),
            graph: match self.kind {
                AgentKind::Graph => graphs::GRAPH_AGENT,
                AgentKind::Skills => graphs::SKILLS_AGENT,
            }
            .to_owned(),
            depth: 0,
            attempts: 0,
            elapsed_ms: 0,
            summary: format!("{} agent, model {}", self.kind.as_str(), self.model.label),
            data: serde_json::json!({
                "agent": self.kind.as_str(),
                "model": self.model.label,
                "input": self.request_input,
            }),
            history_change: HistoryChange::between(&self.stored_history, &self.history)
                .map(HistoryChange::without_images),
            at: now(),
        }
    }

    /// Runs the turn, reporting to `sink`, until it ends or `cancel` fires.
    pub async fn run(
        mut self,
        sink: Arc<dyn TurnSink>,
        cancel: CancellationToken,
    ) -> Result<AgentOutcome, AgentError> {
        let inner = Arc::clone(&self.agents.inner);
        // The caller's token and `cancel_turn` both stop the turn.
        let turn_cancel = self.cancel.clone();
        let resumed = self
            .resume_approved(&inner.services, sink.as_ref(), &cancel)
            .await;
        let mut context = self.initial_context(&inner.services.gate);
        // Moved, not copied: they may be megabytes.
        context.images = std::mem::take(&mut self.request_images);
        let scope = self.scope(&inner, sink, turn_cancel.clone());
        let graph = graphs::build(self.kind, &scope)
            .map_err(|error| AgentError::Internal(error.to_string()))?;
        let start = self.start_record();
        inner
            .sessions
            .begin(
                &NewTurn {
                    turn_id: &self.turn_id,
                    chat_id: &self.chat_id,
                    execution_id: self.execution_id.as_deref(),
                    agent: self.kind.as_str(),
                    model: &self.model.label,
                    input: &self.request_input,
                },
                start,
            )
            .await?;
        let (recorder, steps) = StepRecorder::new(self.history.clone());
        let options = RunOptions::default()
            .cancel(turn_cancel.clone())
            .on_step(move |step| recorder.record(step));
        let writer = write_steps(inner.sessions.clone(), self.turn_id.clone(), steps);
        let work = async { tokio::join!(graph.run(context, options), writer) };
        tokio::pin!(work);
        let (result, ()) = tokio::select! {
            // The caller's cancellation is looked at first, so once it fired nothing else in
            // the turn makes progress (no input is applied, no request started).
            biased;
            () = cancel.cancelled() => {
                turn_cancel.cancel();
                work.await
            }
            done = &mut work => done,
            // The turn ran as long as it may: it stops like a cancelled turn, with a reason.
            () = tokio::time::sleep_until(scope.watch.deadline()) => {
                scope.watch.stop_for_time();
                turn_cancel.cancel();
                work.await
            }
        };
        let undelivered = match &self.mailbox {
            Some(mailbox) => mailbox.close().await,
            None => Vec::new(),
        };
        let ending = Ending {
            turn_id: &self.turn_id,
            model: &self.model.label,
            history: &self.history,
            undelivered,
            stop: scope.watch.stopped(),
            language: self.language,
            summary_usage: *scope
                .summary_usage
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        };
        let mut outcome = conclude(ending, result);
        outcome.parked = scope.parking.as_ref().and_then(Parking::parked);
        if let Err(error) = inner
            .sessions
            .finish(
                &self.turn_id,
                &self.chat_id,
                outcome.status,
                outcome.reply.as_ref().map(|reply| reply.text.as_str()),
                outcome.error.as_deref(),
                outcome.usage,
                &outcome.history,
            )
            .await
        {
            tracing::error!(%error, turn_id = %self.turn_id, "could not record the end of a turn");
        }
        // A resumed turn's input is the approved call's result, not the person's words.
        if !resumed {
            self.hand_to_memory(&inner, &outcome);
        }
        drop(self.claim);
        Ok(outcome)
    }
}
