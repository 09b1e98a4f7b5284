//! The runtime: `Runtime::start(Config)` wires the daemon's parts together and
//! [`RuntimeHandle`] (a cheap clone) is the only API the adapters (gateway, MCP, CLI, Tauri) use.
//!
//! Lifecycle: one `CancellationToken` is the root of every long-lived task; only the runtime
//! spawns such tasks (through its `TaskTracker`), so `shutdown` can stop and await all of them
//! before closing the database.

pub(crate) mod allocator;
mod assembly;
pub(crate) mod config_editor;
pub mod connect;
pub mod discovery;
mod embeddings;
pub(crate) mod facade;
pub(crate) mod model_downloads;
pub(crate) mod setup;
mod skill_review;
mod web_model;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use souz_protocol::{Bootstrap, ComponentStatus, Features, Health, LocalUser, RuntimeEvent};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::memory::LongTermMemory;
use crate::agent::{AgentKind, AgentParts, Agents};
use crate::approvals::Approvals;
use crate::bus::{EventBus, pause};
use crate::channels::tools::ChannelTools;
use crate::chat::settings::SettingsDefaults;
use crate::chat::{self, ChatError, Chats, ChatsParts};
use crate::config::Config;
use crate::llm::service::{Environment, LlmService, LlmServiceError};
use crate::mcp::client::{McpClientParts, McpClients};
use crate::memory::{LlmWriter, Memory, MemoryParts, NoWriter, ProviderEmbedder};
use crate::sandbox::{Sandbox, SandboxError};
use crate::skills::registry::Registry;
use crate::skills::review::Review;
use crate::store::{Store, StoreError};
use crate::token::clients::ClientTokens;
use crate::token::ui_codes::UiCodes;
use crate::token::{ApiToken, Credential, TokenError, proof};
use crate::tools::gate::{Gate, GateParts};
use crate::tools::{CatalogError, builtin};

use self::assembly::*;
pub use config_editor::ConfigEditor;
pub use facade::ServiceError;

/// Live events buffered per follower before it is told to resync.
const EVENT_CHANNEL_CAPACITY: usize = 1024;
/// How long shutdown waits for background tasks before closing the database anyway.
const TASK_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The Souz home could not be prepared.
    #[error("cannot prepare the Souz home {path}: {source}")]
    Home {
        /// The home folder.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The token could not be loaded or made.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The sandbox could not be set up from `[sandbox]`.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The tool catalog is inconsistent (a bug).
    #[error("cannot build the tool catalog: {0}")]
    Catalog(#[from] CatalogError),
    /// Interrupted chat turns could not be recovered.
    #[error("cannot recover chats: {0}")]
    Chat(#[from] ChatError),
    /// The LLM layer could not be set up (extra CA files, default model).
    #[error(transparent)]
    Llm(#[from] LlmServiceError),
    /// The agents could not be set up.
    #[error("cannot set up the agents: {0}")]
    Agents(String),
    /// The history of file changes could not be opened or settled.
    #[error("cannot open the history of file changes: {0}")]
    History(#[from] crate::history::HistoryError),
}

/// What the embedding binary tells the runtime beyond the configuration.
#[derive(Clone, Default)]
pub struct RuntimeOptions {
    /// The binary implementing the hidden `__sandbox-exec` subcommand (the daemon's own
    /// executable); without it commands are not confined by Landlock on Linux.
    pub sandbox_helper: Option<PathBuf>,
    /// Where provider keys in environment variables are read from (default: the process
    /// environment). Tests pass their own.
    pub environment: Option<Environment>,
    /// What the MCP server serves beside Souz's tools: only the conformance suite's fixtures
    /// (`souz-cli`'s `conformance` feature, tests only); none in a normal build.
    pub mcp_extension: Option<Arc<dyn crate::mcp::extension::McpExtension>>,
    /// Cancelled when the person asks to restart Souz (`POST /v1/restart`): the embedding
    /// binary then stops this runtime and starts a new one on the same address. Without it
    /// a restart is refused (the daemon cannot restart itself).
    pub restart: Option<CancellationToken>,
}

/// The running daemon core. Dropping it without `shutdown` leaves the database to close when
/// the last handle goes.
pub struct Runtime {
    handle: RuntimeHandle,
}

/// Cheap-clone access to the running daemon: the facade the adapters use (its methods by
/// concept in [`facade`], errors as [`ServiceError`]).
#[derive(Clone)]
pub struct RuntimeHandle {
    state: Arc<State>,
}

struct State {
    config: Config,
    store: Store,
    events: EventBus,
    gate: Gate,
    token: ApiToken,
    clients: ClientTokens,
    ui_codes: UiCodes,
    llm: Arc<LlmService>,
    chats: Chats,
    config_editor: ConfigEditor,
    // Read by tests and benchmarks (`agents()`); the daemon reaches the agents through chats.
    #[cfg_attr(not(any(test, feature = "test-support")), allow(dead_code))]
    agents: Agents,
    memory: Memory,
    user: LocalUser,
    skills: Registry,
    started: Instant,
    shutdown: CancellationToken,
    stopping: AtomicBool,
    tasks: TaskTracker,
    mcp_extension: Option<Arc<dyn crate::mcp::extension::McpExtension>>,
    mcp_clients: McpClients,
    /// Model files being fetched (`souz models pull`, Settings › Voice), per family.
    model_downloads: model_downloads::Downloads,
    /// The `souz` binary (the bridge Claude Desktop runs), when known.
    souz_binary: Option<PathBuf>,
    /// What asks the embedding binary to restart the runtime, when it can.
    restart: Option<CancellationToken>,
    /// Scheduled runs and their engine.
    schedules: crate::schedules::Schedules,
    /// The slot of the channel tools, which a channel fills when it starts.
    channel_tools: ChannelTools,
    /// Speech to text (the in-process model and SaluteSpeech's tokens).
    speech: crate::speech::SpeechService,
}

impl Runtime {
    /// Prepares the Souz home, the token and the database, then announces the start. Provider
    /// keys may come from the process environment.
    pub async fn start(config: Config) -> Result<Self, RuntimeError> {
        Self::start_with(config, RuntimeOptions::default()).await
    }

    /// [`Runtime::start`] reading provider keys from `environment` instead of the process
    /// environment.
    pub async fn start_with_environment(
        config: Config,
        environment: Environment,
    ) -> Result<Self, RuntimeError> {
        let options = RuntimeOptions {
            environment: Some(environment),
            ..RuntimeOptions::default()
        };
        Self::start_with(config, options).await
    }

    /// [`Runtime::start`] with options from the embedding binary.
    pub async fn start_with(config: Config, options: RuntimeOptions) -> Result<Self, RuntimeError> {
        let environment = environment_of(&options);
        let token = open_home(&config)?;
        let store = Store::open(config.paths.database()).await?;
        let clients = ClientTokens::open(store.clone()).await?;
        let events = EventBus::new(store.clone(), EVENT_CHANNEL_CAPACITY);
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let background = crate::tasks::Tasks::new(tasks.clone(), shutdown.clone());
        let approvals = open_approvals(&store, &events, &config).await?;
        approvals.run_tasks_on(background.clone());
        let config_editor = ConfigEditor::new(config.clone(), approvals.clone());
        let sandbox = open_sandbox(&config, options.sandbox_helper.clone())?;
        let llm = open_llm(&config, &store, &environment, &tasks, &shutdown).await?;
        let slots = ToolSlots::new(&store);
        let gate = Gate::new(GateParts {
            catalog: catalog(&config, &store, &llm, &slots)?,
            sandbox: Arc::clone(&sandbox),
            approvals,
            events: events.clone(),
            store: store.clone(),
            tasks: tasks.clone(),
            shutdown: shutdown.clone(),
        });
        let history_parts = (&events, &slots.undo);
        ready_gate(&config, &store, &gate, (&tasks, &shutdown), history_parts).await?;
        let mcp_clients = mcp_clients(&config, &gate, &store, &environment, llm.key_store())
            .on_tasks(background.clone());
        tasks.spawn(mcp_clients.clone().run(shutdown.clone()));
        let defaults = chat_defaults(&config, &gate);
        let chats = Chats::new(ChatsParts {
            store: store.clone(),
            events: events.clone(),
            llm: Arc::clone(&llm),
            defaults,
            tasks: tasks.clone(),
            shutdown: shutdown.clone(),
            pause: gate.approvals().pause().clone(),
            files: Arc::new(GateFiles(gate.clone())),
        });
        recover_chats(&chats).await?;
        summarize_in_local_language(&chats, &gate).await;
        let skills = open_skills(&config, &sandbox, &store, &llm);
        let memory = open_memory(&config, &store, &llm, &events, &background).await;
        offer_memory(&config, &memory, &events, &gate);
        let agents = Agents::new(AgentParts {
            bundles: Arc::new(skills.clone()),
            memory: start_memory(&config, &memory, &tasks, &shutdown),
            default_agent: AgentKind::parse(&config.agent.default_agent),
            context_size: config.agent.context_size,
            limits: crate::agent::TurnLimits::from_config(&config.agent),
            ..AgentParts::new(gate.clone(), store.clone(), llm.clone())
        });
        chats.set_engine(Arc::new(chat::engine::AgentEngine::new(agents.clone())));
        recover_agents(&agents, &chats).await?;
        reload_on_save(&config_editor, &llm, &chats, &agents, &gate);
        reload_sandbox_on_save(&config_editor, &gate, options.sandbox_helper.clone());
        reload_mcp_servers_on_save(&config_editor, &mcp_clients);
        let schedules = start_schedules(ScheduleStart {
            store: &store,
            chats: &chats,
            tasks: &background,
            events: &events,
            scheduling: &slots.scheduling,
            gate: &gate,
        })
        .await?;
        let handle = RuntimeHandle {
            state: Arc::new(State {
                skills,
                config,
                store,
                events,
                gate,
                token,
                clients,
                ui_codes: UiCodes::default(),
                llm,
                agents,
                memory,
                chats,
                config_editor,
                user: local_user(),
                started: Instant::now(),
                shutdown,
                stopping: AtomicBool::new(false),
                tasks,
                mcp_extension: options.mcp_extension,
                mcp_clients,
                model_downloads: model_downloads::Downloads::default(),
                souz_binary: options.sandbox_helper,
                restart: options.restart,
                schedules,
                channel_tools: slots.channels,
                speech: crate::speech::SpeechService::new(background.clone()),
            }),
        };
        announce_start(&handle).await?;
        Ok(Self { handle })
    }

    /// A handle for adapters.
    pub fn handle(&self) -> RuntimeHandle {
        self.handle.clone()
    }

    /// Announces the stop, cancels every long-lived task, waits for them (bounded), and closes
    /// the database.
    pub async fn shutdown(self, reason: &str) -> Result<(), StoreError> {
        self.handle.begin_shutdown(reason).await;
        let state = &self.handle.state;
        state.tasks.close();
        if tokio::time::timeout(TASK_DRAIN_TIMEOUT, state.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("background tasks did not stop in time; closing anyway");
        }
        state.store.close().await
    }
}

impl RuntimeHandle {
    /// The configuration the runtime started with.
    pub fn config(&self) -> &Config {
        &self.state.config
    }

    /// The database.
    pub(crate) fn store(&self) -> &Store {
        &self.state.store
    }

    /// What asks the embedding binary to restart the runtime in place (`None`: it cannot).
    pub(crate) fn restart_switch(&self) -> Option<&CancellationToken> {
        self.state.restart.as_ref()
    }

    /// The `souz` binary of this installation (the MCP stdio bridge), when known.
    pub(crate) fn souz_binary(&self) -> Option<&std::path::Path> {
        self.state.souz_binary.as_deref()
    }

    /// The runtime event bus.
    pub(crate) fn events(&self) -> &EventBus {
        &self.state.events
    }

    /// The slot of the channel tools (a channel binds its [`Messenger`] when it starts).
    ///
    /// [`Messenger`]: crate::channels::tools::Messenger
    pub(crate) fn channel_tools(&self) -> &ChannelTools {
        &self.state.channel_tools
    }

    /// The approval gate every tool call passes.
    pub(crate) fn gate(&self) -> &Gate {
        &self.state.gate
    }

    /// What the MCP server serves beside Souz's tools (see [`RuntimeOptions::mcp_extension`]).
    pub fn mcp_extension(&self) -> Option<Arc<dyn crate::mcp::extension::McpExtension>> {
        self.state.mcp_extension.clone()
    }

    /// The sessions with external MCP servers.
    pub(crate) fn mcp_clients(&self) -> &McpClients {
        &self.state.mcp_clients
    }

    /// The local model files being fetched.
    pub(crate) fn model_downloads(&self) -> &model_downloads::ModelDownloads {
        &self.state.model_downloads.local
    }

    /// The speech models' downloads.
    pub(crate) fn speech_downloads(&self) -> &model_downloads::ModelDownloads {
        &self.state.model_downloads.speech
    }

    /// The approval service (pending approvals, decisions, grants).
    pub(crate) fn approvals(&self) -> &Approvals {
        self.state.gate.approvals()
    }

    /// Long-term memory.
    pub fn memory(&self) -> &Memory {
        &self.state.memory
    }

    /// Chats, messages and agent turns.
    pub(crate) fn chats(&self) -> &Chats {
        &self.state.chats
    }

    /// The settings editor (`config.toml`).
    pub(crate) fn config_editor(&self) -> &ConfigEditor {
        &self.state.config_editor
    }

    /// Language models: provider keys, the model registry, clients.
    pub(crate) fn llm(&self) -> &LlmService {
        &self.state.llm
    }

    /// Souz's own agents: run a turn, steer or cancel it, inspect sessions.
    pub(crate) fn agents(&self) -> &Agents {
        &self.state.agents
    }

    /// What `presented` is: the operator token, an active client token, or nothing.
    pub fn authenticate(&self, presented: &str) -> Option<Credential> {
        if self.state.token.matches(presented) {
            return Some(Credential::Operator);
        }
        self.state.clients.verify(presented).map(Credential::Client)
    }

    /// Speech to text.
    pub(crate) fn speech(&self) -> &crate::speech::SpeechService {
        &self.state.speech
    }

    /// Scheduled runs.
    pub(crate) fn schedules(&self) -> &crate::schedules::Schedules {
        &self.state.schedules
    }

    /// The skill registry (installed and imported skills).
    pub(crate) fn skills(&self) -> &Registry {
        &self.state.skills
    }

    /// The MCP client tokens.
    pub(crate) fn clients(&self) -> &ClientTokens {
        &self.state.clients
    }

    /// The web UI's one-time sign-in codes.
    pub(crate) fn ui_codes(&self) -> &UiCodes {
        &self.state.ui_codes
    }

    /// The operator token's text, for the web UI's sign-in exchange.
    pub fn operator_token(&self) -> &str {
        self.state.token.expose()
    }

    /// The proof of identity for the credential named `key` (see [`proof`]), or `None` when
    /// no active credential has that key id.
    pub fn identity_proof(&self, key: &str, nonce: &str, host: &str) -> Option<String> {
        let operator = self.state.token.digest();
        let digest = if proof::key_id(operator) == key {
            *operator
        } else {
            self.state.clients.digest_for_key(key)?
        };
        Some(proof::prove(&digest, nonce, host))
    }

    /// Cancelled when the daemon begins to shut down; long-lived connections watch it.
    pub fn shutdown_signal(&self) -> CancellationToken {
        self.state.shutdown.clone()
    }

    /// Announces the stop (once) and cancels long-lived work; the database stays open until
    /// [`Runtime::shutdown`].
    pub async fn begin_shutdown(&self, reason: &str) {
        if self.state.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        let stopping = RuntimeEvent::DaemonStopping {
            reason: reason.to_owned(),
        };
        if let Err(error) = self.events().publish(stopping).await {
            tracing::warn!(%error, "could not record the stop event");
        }
        self.state.shutdown.cancel();
    }

    /// Spawns a long-lived task that shutdown waits for.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.state.tasks.spawn(task);
    }

    /// Liveness and the state of the daemon's parts.
    pub async fn health(&self) -> Health {
        let database = match self.state.store.ping().await {
            Ok(()) => ComponentStatus {
                ok: true,
                detail: None,
            },
            Err(error) => ComponentStatus {
                ok: false,
                detail: Some(match error {
                    StoreError::Closed => "closed".to_owned(),
                    _ => "not answering".to_owned(),
                }),
            },
        };
        Health {
            status: if database.ok { "ok" } else { "degraded" }.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            uptime_s: self.state.started.elapsed().as_secs(),
            database,
            sandbox: self.state.gate.sandbox().confinement_status(),
            rss_bytes: crate::llm::local::profiles::resident_memory(),
            local_models_loaded: self
                .state
                .llm
                .local_models()
                .map(|models| models.loaded_names())
                .unwrap_or_default(),
            rss_without_local_models_bytes: self
                .state
                .llm
                .local_models()
                .and_then(|models| models.rss_without_models()),
        }
    }

    /// What a client needs before its first real call.
    pub async fn bootstrap(&self, user: &chat::ChatUser) -> Result<Bootstrap, ServiceError> {
        let (settings, capabilities) = self.state.chats.capabilities(user).await?;
        Ok(Bootstrap {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            user: LocalUser {
                id: user.0.clone(),
                name: if user.0 == crate::LOCAL_USER {
                    self.state.user.name.clone()
                } else {
                    user.0.clone()
                },
            },
            features: Features {
                ws_events: true,
                streaming_messages: true,
                tool_events: true,
                options: true,
                telegram_bot: false,
                runtime_events: true,
                approvals: true,
                // `/mcp` is always served, to the local user; a user behind the trusted proxy
                // cannot reach it.
                mcp: user.0 == crate::LOCAL_USER,
                chats: true,
            },
            capabilities,
            settings,
        })
    }
}

#[cfg(test)]
mod tests;
