//! The runtime: `Runtime::start(Config)` wires the daemon's parts together and
//! [`RuntimeHandle`] (a cheap clone) is the only API the adapters (gateway, MCP, CLI, Tauri) use.
//!
//! Lifecycle: one `CancellationToken` is the root of every long-lived task; only the runtime
//! spawns such tasks (through its `TaskTracker`), so `shutdown` can stop and await all of them
//! before closing the database.

pub(crate) mod config_editor;
pub mod connect;
pub mod discovery;
mod embeddings;
pub mod facade;
pub(crate) mod memory;
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

/// The skill registry of the Souz home, importing from the user's and the roots' folders, with
/// the model review of `[skills] review`.
fn open_skills(
    config: &Config,
    sandbox: &Sandbox,
    store: &Store,
    llm: &Arc<LlmService>,
) -> Registry {
    let registry = Registry::new(
        config.paths.home(),
        config.paths.user_home(),
        sandbox.roots(),
        store.clone(),
    );
    if !config.skills.review {
        return registry;
    }
    registry.with_review(Review {
        reviewer: Arc::new(skill_review::LlmReviewer {
            llm: Arc::clone(llm),
            model: config.skills.review_model.clone(),
        }),
        min_confidence: config.skills.review_min_confidence,
    })
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
    /// Local model files being fetched (`souz models pull`).
    model_downloads: model_downloads::ModelDownloads,
    /// The `souz` binary (the bridge Claude Desktop runs), when known.
    souz_binary: Option<PathBuf>,
    /// What asks the embedding binary to restart the runtime, when it can.
    restart: Option<CancellationToken>,
}

/// What the model-backed web and image tools use: `[web]`, the search cache, the models.
fn web_services(
    config: &Config,
    store: &Store,
    llm: &Arc<LlmService>,
) -> Arc<builtin::internet::WebServices> {
    let model = web_model::LlmModelAccess {
        llm: Arc::clone(llm),
        store: store.clone(),
        config: config.web.clone(),
    };
    Arc::new(builtin::internet::WebServices::new(
        config.web.clone(),
        Some(store.clone()),
        Some(Arc::new(model)),
    ))
}

/// Memory's changes go on the event bus; with memory on, its tools are offered to MCP clients
/// through the gate.
fn offer_memory(config: &Config, memory: &Memory, events: &EventBus, gate: &Gate) {
    memory.announce_to(events.clone());
    if config.memory.enabled {
        gate.set_external_tools(
            crate::memory::mcp_tools::TOOLS_SERVER,
            crate::memory::mcp_tools::external_tools(memory),
        );
    }
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
        let environment = options
            .environment
            .clone()
            .unwrap_or_else(|| Arc::new(crate::config::env::process_env));
        let token = open_home(&config)?;
        let store = Store::open(config.paths.database()).await?;
        let clients = ClientTokens::open(store.clone()).await?;
        let events = EventBus::new(store.clone(), EVENT_CHANNEL_CAPACITY);
        let approvals = open_approvals(&store, &events, &config).await?;
        let config_editor = ConfigEditor::new(config.clone(), approvals.clone());
        let souz_binary = options.sandbox_helper.clone();
        let sandbox = open_sandbox(&config, options.sandbox_helper)?;
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let llm = open_llm(&config, &store, &environment, &tasks, &shutdown).await?;
        let gate = Gate::new(GateParts {
            catalog: builtin::catalog_with(&web_services(&config, &store, &llm))?,
            sandbox: Arc::clone(&sandbox),
            approvals,
            events: events.clone(),
            store: store.clone(),
            tasks: tasks.clone(),
            shutdown: shutdown.clone(),
        });
        set_proxy_mode(&config, &gate);
        tasks.spawn(gate.approvals().clone().expire_grants(shutdown.clone()));
        recover_calls(&gate).await?;
        let mcp_clients = mcp_clients(&config, &gate, &store, &environment, llm.key_store());
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
        let memory = open_memory(&config, &store, &llm, &events).await;
        offer_memory(&config, &memory, &events, &gate);
        let agents = Agents::new(AgentParts {
            bundles: Arc::new(skills.clone()),
            memory: start_memory(&config, &memory, &tasks, &shutdown),
            default_agent: AgentKind::parse(&config.agent.default_agent),
            context_size: config.agent.context_size,
            ..AgentParts::new(gate.clone(), store.clone(), llm.clone())
        });
        chats.set_engine(Arc::new(chat::engine::AgentEngine::new(agents.clone())));
        recover_agents(&agents, &chats).await?;
        reload_on_save(&config_editor, &llm, &chats, &agents, &gate);
        reload_sandbox_on_save(&config_editor, &gate, souz_binary.clone());
        reload_mcp_servers_on_save(&config_editor, &mcp_clients);
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
                model_downloads: model_downloads::ModelDownloads::default(),
                souz_binary,
                restart: options.restart,
            }),
        };
        handle
            .events()
            .publish(RuntimeEvent::DaemonStarted {
                version: env!("CARGO_PKG_VERSION").to_owned(),
                pid: std::process::id(),
            })
            .await?;
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
        &self.state.model_downloads
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
                mcp: false,
                chats: true,
            },
            capabilities,
            settings,
        })
    }
}

#[cfg(test)]
mod tests;
/// Opens the approvals and restores the pause switch from the database.
/// Makes sure the Souz home exists and loads (or creates) the operator token, named as a secret
/// so logs and audit previews drop it (it has no recognizable format).
fn open_home(config: &Config) -> Result<ApiToken, RuntimeError> {
    config
        .paths
        .ensure_home()
        .map_err(|source| RuntimeError::Home {
            path: config.paths.home().display().to_string(),
            source,
        })?;
    let token = ApiToken::load_or_create(&config.paths.token())?;
    crate::redact::register_secret(token.expose());
    Ok(token)
}

/// Marks the turns the previous run left running as failed, and says so.
async fn recover_chats(chats: &Chats) -> Result<(), RuntimeError> {
    let failed = chats.recover().await?;
    if failed > 0 {
        tracing::warn!(
            executions = failed,
            "failed agent turns left running by the previous run"
        );
    }
    Ok(())
}

async fn open_approvals(
    store: &Store,
    events: &EventBus,
    config: &Config,
) -> Result<Approvals, RuntimeError> {
    let approvals = Approvals::open(store.clone(), events.clone(), config.clone()).await?;
    let paused_since = store.read(pause::load).await?;
    approvals.pause().set(paused_since);
    if paused_since.is_some() {
        tracing::warn!("Souz is paused: approval requests are denied until it is resumed");
    }
    Ok(approvals)
}

/// The sandbox, with the embedding binary's confinement helper if it has one.
fn open_sandbox(config: &Config, helper: Option<PathBuf>) -> Result<Arc<Sandbox>, RuntimeError> {
    let mut sandbox = Sandbox::new(&config.sandbox, &config.paths)?;
    if let Some(helper) = helper {
        sandbox = sandbox.with_confinement_helper(helper);
    }
    tracing::info!(confinement = %sandbox.confinement_status().detail, "sandbox ready");
    Ok(Arc::new(sandbox))
}

/// The sessions with the external MCP servers of `[mcp.servers]` (started by their task).
fn mcp_clients(
    config: &Config,
    gate: &Gate,
    store: &Store,
    environment: &Environment,
    keys: &crate::llm::keys::KeyStore,
) -> McpClients {
    let host = match config.server.host.trim() {
        "" | "0.0.0.0" | "::" | "[::]" => "127.0.0.1",
        host => host,
    };
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    McpClients::new(McpClientParts {
        config: config.clone(),
        gate: gate.clone(),
        store: store.clone(),
        lookup: Arc::clone(environment),
        inherited: gate.sandbox().inherited_environment().to_vec(),
        // The daemon's own keys, whoever asks: MCP servers are the daemon's.
        keys: keys.for_user(crate::LOCAL_USER),
        redirect_uri: format!(
            "http://{host}:{}{}",
            config.server.port,
            crate::mcp::client::oauth::CALLBACK_PATH
        ),
    })
}

/// What a settings save applies live: `[llm]` (the LLM service's models, base URLs, timeouts
/// and CA files, and the chat defaults it sets) and `[agent]` (the default agent and context
/// size of new turns). `[notifications]` is the app's and live without a hook
/// (`config_editor::LIVE_SECTIONS`).
fn reload_on_save(
    editor: &ConfigEditor,
    llm: &Arc<LlmService>,
    chats: &Chats,
    agents: &Agents,
    gate: &Gate,
) {
    let (llm, chats, gate) = (Arc::clone(llm), chats.clone(), gate.clone());
    editor.on_save("llm", move |config| {
        llm.reload(&config.llm).map_err(|error| error.to_string())?;
        chats.set_defaults(chat_defaults(config, &gate));
        Ok(())
    });
    let agents = agents.clone();
    editor.on_save("agent", move |config| {
        agents.set_defaults(
            AgentKind::parse(&config.agent.default_agent),
            config.agent.context_size,
        );
        Ok(())
    });
}

/// `[sandbox]` applies without a restart: a saved change builds the sandbox again (with the
/// binary's confinement helper) and the gate runs the calls that start from then on in it. A
/// sandbox that cannot be built leaves the change waiting for a restart. The skill registry's
/// import folders and commands' inherited environment are read at the start and stay as
/// they were.
fn reload_sandbox_on_save(editor: &ConfigEditor, gate: &Gate, helper: Option<PathBuf>) {
    let gate = gate.clone();
    editor.on_save("sandbox", move |config| {
        let sandbox = open_sandbox(config, helper.clone()).map_err(|error| error.to_string())?;
        gate.replace_sandbox(sandbox);
        Ok(())
    });
}

/// `[mcp.servers]` applies without a restart: a saved change stops the servers it removed,
/// turned off or changed and starts the new and changed ones (see [`McpClients::apply`]).
fn reload_mcp_servers_on_save(editor: &ConfigEditor, clients: &McpClients) {
    let clients = clients.clone();
    editor.on_save("mcp", move |config| {
        clients.apply(config);
        Ok(())
    });
}

/// A chat's files (attachments) are reached in the sandbox its agent's tools run in.
struct GateFiles(Gate);

impl crate::chat::ChatFiles for GateFiles {
    fn sandbox<'a>(
        &'a self,
        chat_id: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Arc<crate::sandbox::Sandbox>, String>> {
        Box::pin(self.0.chat_sandbox(chat_id))
    }
}

/// Trusted-proxy mode, when `[server] trusted_proxy_token` is set: calls in proxied users'
/// chats run in their folders under `proxy_user_roots`.
fn set_proxy_mode(config: &Config, gate: &Gate) {
    let proxy_mode = !config.server.trusted_proxy_token.trim().is_empty();
    gate.set_proxy_user_roots(proxy_mode.then_some(config.server.proxy_user_roots.as_str()));
}

/// Plans are summarized, and grants labelled, in the local person's interface language (what
/// the notifications, the queue and the CLI show them): `user`'s settings, when `user` is the
/// local person.
pub(crate) fn follow_language(
    gate: &Gate,
    user: &crate::chat::ChatUser,
    settings: &souz_protocol::chat::Settings,
) {
    if user.0 == crate::LOCAL_USER {
        gate.set_language(settings.language());
    }
}

/// [`follow_language`] from the start (changes follow through `RuntimeHandle::patch_settings`
/// and onboarding); English when the settings cannot be read.
async fn summarize_in_local_language(chats: &Chats, gate: &Gate) {
    let user = crate::chat::ChatUser(crate::LOCAL_USER.to_owned());
    match chats.settings(&user).await {
        Ok(settings) => follow_language(gate, &user, &settings),
        Err(error) => tracing::warn!(%error, "could not read the interface language"),
    }
}

/// What chat settings default to, from the configuration and the gate's catalog.
fn chat_defaults(config: &Config, gate: &Gate) -> SettingsDefaults {
    SettingsDefaults {
        default_model: config.llm.default_model.trim().to_owned(),
        context_size: config.llm.context_size,
        temperature: config.llm.temperature as f32,
        request_timeout_millis: config.llm.request_timeout_seconds.saturating_mul(1000),
        tools: gate
            .catalog()
            .iter()
            .map(|tool| tool.spec().name.to_owned())
            .collect(),
        time_zone: chat::settings::system_time_zone(),
        interface_language: crate::config::system_language(&crate::config::process_env),
    }
}

/// The agents' view of `memory`, with its capture worker (unless `[memory] capture` is off) and
/// embedding retries running under `shutdown`; no memory at all when `[memory] enabled` is off.
fn start_memory(
    config: &Config,
    memory: &Memory,
    tasks: &TaskTracker,
    shutdown: &CancellationToken,
) -> Arc<dyn crate::agent::memory::MemoryRecall> {
    if !config.memory.enabled {
        return Arc::new(crate::agent::memory::NoMemory);
    }
    tasks.spawn(memory.clone().retry_embeddings(shutdown.clone()));
    if !config.memory.capture {
        return Arc::new(LongTermMemory::without_capture(memory.clone()));
    }
    let (long_term, capture_worker) = LongTermMemory::new(memory.clone());
    tasks.spawn(capture_worker.run(shutdown.clone()));
    Arc::new(long_term)
}

/// Long-term memory over the database, with the `[memory] embeddings_model` embedder when
/// one is named (a local model, fetched on first use, or a provider's) and can be used now (otherwise recall by words only, with a warning), and the
/// LLM writer when `[memory] writer` is on.
async fn open_memory(
    config: &Config,
    store: &Store,
    llm: &Arc<LlmService>,
    events: &EventBus,
) -> Memory {
    let model = config.memory.embeddings_model.trim();
    let embedder: Option<Arc<dyn crate::memory::Embedder>> = if model.is_empty() {
        None
    } else if let Some(local) = embeddings::local_embedder(config, model, events) {
        Some(Arc::new(local))
    } else {
        match llm.embedding_client(model).await {
            Ok((resolved, client)) => Some(Arc::new(ProviderEmbedder::new(
                resolved.qualified(),
                resolved.model.clone(),
                client,
            ))),
            Err(error) => {
                tracing::warn!(%error, "memory embeddings are unavailable; recalling by words only");
                None
            }
        }
    };
    let writer: Arc<dyn crate::memory::Writer> = if config.memory.writer {
        Arc::new(LlmWriter::new(llm.clone()))
    } else {
        Arc::new(NoWriter)
    };
    Memory::new(MemoryParts {
        store: store.clone(),
        embedder,
        writer,
    })
}

/// Marks tool calls a previous run left unfinished as failed.
async fn recover_calls(gate: &Gate) -> Result<(), RuntimeError> {
    let recovered = gate.recover().await?;
    if recovered > 0 {
        tracing::warn!(
            calls = recovered,
            "marked tool calls left unfinished by the previous run as failed"
        );
    }
    Ok(())
}

/// Marks agent turns a previous run left running as interrupted; then starts the turns of
/// input queued before the restart.
async fn recover_agents(agents: &Agents, chats: &Chats) -> Result<(), RuntimeError> {
    let interrupted = agents.recover().await.map_err(|error| match error {
        crate::agent::AgentError::Store(error) => RuntimeError::Store(error),
        other => RuntimeError::Agents(other.to_string()),
    })?;
    if interrupted > 0 {
        tracing::warn!(
            turns = interrupted,
            "marked agent turns left running by the previous run as interrupted"
        );
    }
    let resumed = chats.resume_queued().await?;
    if resumed > 0 {
        tracing::info!(
            chats = resumed,
            "started the turns of input queued before a restart"
        );
    }
    Ok(())
}

/// The person running the daemon, as the local user.
fn local_user() -> LocalUser {
    use crate::config::env::process_env;
    LocalUser {
        id: "local".to_owned(),
        name: process_env("USER")
            .or_else(|| process_env("LOGNAME"))
            .unwrap_or_else(|| "local".to_owned()),
    }
}

/// The model service with the local engines, every key it holds already named to the
/// redactor (stored keys of no known shape are redacted before their first use).
async fn open_llm(
    config: &Config,
    store: &Store,
    environment: &Environment,
    tasks: &TaskTracker,
    shutdown: &CancellationToken,
) -> Result<Arc<LlmService>, RuntimeError> {
    let llm = LlmService::new(
        &config.llm,
        store.clone(),
        config.paths.provider_key_file(),
        Arc::clone(environment),
    )?;
    let llm = Arc::new(with_local_models(llm, config, tasks, shutdown)?);
    llm.register_keys_for_redaction().await;
    Ok(llm)
}

/// The LLM service with in-process local models when this build has an engine (feature
/// `local-llm`), their idle unloader running until shutdown.
fn with_local_models(
    llm: LlmService,
    config: &Config,
    tasks: &TaskTracker,
    shutdown: &CancellationToken,
) -> Result<LlmService, crate::llm::service::LlmServiceError> {
    let Some(backend) = crate::llm::local::default_backend() else {
        return Ok(llm);
    };
    let models = Arc::new(crate::llm::local::LocalModels::new(
        backend,
        crate::llm::local::LocalModelsOptions {
            dir: config.paths.home().join("models"),
            idle_unload: std::time::Duration::from_secs(config.llm.local_idle_unload_seconds),
            threads: config.llm.local_threads,
        },
    ));
    tasks.spawn(Arc::clone(&models).run_idle_unloader(shutdown.clone()));
    llm.with_local_models(models)
}
