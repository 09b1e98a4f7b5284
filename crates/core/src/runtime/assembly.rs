//! What a runtime is assembled from, in the order [`super::Runtime::start_with`] uses it:
//! the Souz home and its token, the stores and services (approvals, sandbox, skills, memory,
//! models, MCP clients, web), the recovery of work a stop interrupted (chats, calls, agents),
//! and the hooks that apply a saved `config.toml` live.

use super::*;
use crate::channels::tools::ChannelTools;
use crate::history::undo::tool::UndoTool;
use crate::schedules::Schedules;
use crate::schedules::clock::SystemClock;
use crate::schedules::engine::{Engine, EngineParts};
use crate::schedules::firing::ChatFiring;
use crate::schedules::reasons::SharedLanguage;
use crate::schedules::tools::{ScheduleAccess, ScheduleTools};

/// The skill registry of the Souz home, importing from the user's and the roots' folders, with
/// the model review of `[skills] review`.
pub(super) fn open_skills(
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

/// What the model-backed web and image tools use: `[web]`, the search cache, the models.
pub(super) fn web_services(
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
pub(super) fn offer_memory(config: &Config, memory: &Memory, events: &EventBus, gate: &Gate) {
    memory.announce_to(events.clone());
    if config.memory.enabled {
        gate.set_external_tools(
            crate::memory::mcp_tools::TOOLS_SERVER,
            crate::memory::mcp_tools::external_tools(memory),
        );
    }
}

/// Opens the approvals and restores the pause switch from the database.
/// Makes sure the Souz home exists and loads (or creates) the operator token, named as a secret
/// so logs and audit previews drop it (it has no recognizable format).
pub(super) fn open_home(config: &Config) -> Result<ApiToken, RuntimeError> {
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
pub(super) async fn recover_chats(chats: &Chats) -> Result<(), RuntimeError> {
    let failed = chats.recover().await?;
    if failed > 0 {
        tracing::warn!(
            executions = failed,
            "failed agent turns left running by the previous run"
        );
    }
    Ok(())
}

pub(super) async fn open_approvals(
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
pub(super) fn open_sandbox(
    config: &Config,
    helper: Option<PathBuf>,
) -> Result<Arc<Sandbox>, RuntimeError> {
    let mut sandbox = Sandbox::new(&config.sandbox, &config.paths)?;
    if let Some(helper) = helper {
        sandbox = sandbox.with_confinement_helper(helper);
    }
    tracing::info!(confinement = %sandbox.confinement_status().detail, "sandbox ready");
    Ok(Arc::new(sandbox))
}

/// The sessions with the external MCP servers of `[mcp.servers]` (started by their task).
pub(super) fn mcp_clients(
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
pub(super) fn reload_on_save(
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
        agents.set_limits(crate::agent::TurnLimits::from_config(&config.agent));
        Ok(())
    });
}

/// `[sandbox]` applies without a restart: a saved change builds the sandbox again (with the
/// binary's confinement helper) and the gate runs the calls that start from then on in it. A
/// sandbox that cannot be built leaves the change waiting for a restart. The skill registry's
/// import folders and commands' inherited environment are read at the start and stay as
/// they were.
pub(super) fn reload_sandbox_on_save(editor: &ConfigEditor, gate: &Gate, helper: Option<PathBuf>) {
    let gate = gate.clone();
    editor.on_save("sandbox", move |config| {
        let sandbox = open_sandbox(config, helper.clone()).map_err(|error| error.to_string())?;
        gate.replace_sandbox(sandbox);
        Ok(())
    });
}

/// `[mcp.servers]` applies without a restart: a saved change stops the servers it removed,
/// turned off or changed and starts the new and changed ones (see [`McpClients::apply`]).
pub(super) fn reload_mcp_servers_on_save(editor: &ConfigEditor, clients: &McpClients) {
    let clients = clients.clone();
    editor.on_save("mcp", move |config| {
        clients.apply(config);
        Ok(())
    });
}

/// A chat's files (attachments) are reached in the sandbox its agent's tools run in.
pub(super) struct GateFiles(pub(super) Gate);

impl crate::chat::ChatFiles for GateFiles {
    fn sandbox<'a>(
        &'a self,
        chat_id: &'a str,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Arc<crate::sandbox::Sandbox>, crate::tools::gate::WorkspaceError>,
    > {
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
pub(super) async fn summarize_in_local_language(chats: &Chats, gate: &Gate) {
    let user = crate::chat::ChatUser(crate::LOCAL_USER.to_owned());
    match chats.settings(&user).await {
        Ok(settings) => follow_language(gate, &user, &settings),
        Err(error) => tracing::warn!(%error, "could not read the interface language"),
    }
}

/// What chat settings default to, from the configuration and the gate's catalog.
pub(super) fn chat_defaults(config: &Config, gate: &Gate) -> SettingsDefaults {
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
        interface_language: crate::config::system_language(&crate::config::process_lookup),
    }
}

/// The agents' view of `memory`, with its capture worker (unless `[memory] capture` is off) and
/// embedding retries running under `shutdown`; no memory at all when `[memory] enabled` is off.
pub(super) fn start_memory(
    config: &Config,
    memory: &Memory,
    tasks: &TaskTracker,
    shutdown: &CancellationToken,
) -> Arc<dyn crate::agent::memory::MemoryRecall> {
    memory.run_tasks_on(crate::tasks::Tasks::new(tasks.clone(), shutdown.clone()));
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
pub(super) async fn open_memory(
    config: &Config,
    store: &Store,
    llm: &Arc<LlmService>,
    events: &EventBus,
    tasks: &crate::tasks::Tasks,
) -> Memory {
    let model = config.memory.embeddings_model.trim();
    // The service's environment: the daemon's, or a test runtime's own (which forbids downloads).
    let environment = llm.environment();
    let host = embeddings::ModelHost {
        events,
        tasks,
        environment: &environment,
    };
    let embedder: Option<Arc<dyn crate::memory::Embedder>> = if model.is_empty() {
        None
    } else if let Some(local) = embeddings::local_embedder(config, model, &host) {
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

/// Readies the gate before anything calls through it: proxy mode, the expiry of grants and
/// parked approvals (runtime tasks), the calls a crash interrupted, and the history of file
/// changes (settled against the disk).
pub(super) async fn ready_gate(
    config: &Config,
    store: &Store,
    gate: &Gate,
    (tasks, shutdown): (&TaskTracker, &CancellationToken),
    history: (&EventBus, &UndoTool),
) -> Result<(), RuntimeError> {
    set_proxy_mode(config, gate);
    expire_approvals(tasks, gate.approvals(), shutdown);
    recover_calls(gate).await?;
    let history_tasks = crate::tasks::Tasks::new(tasks.clone(), shutdown.clone());
    open_history(config, store, gate, history, history_tasks).await
}

/// Opens the history of file changes (`[history] enabled`), settles what a previous run left
/// pending against the disk, and hands it to the gate and the `UndoChanges` tool (announcing
/// on `events`), before any call can start.
async fn open_history(
    config: &Config,
    store: &Store,
    gate: &Gate,
    (events, undo_tool): (&EventBus, &UndoTool),
    tasks: crate::tasks::Tasks,
) -> Result<(), RuntimeError> {
    if !config.history.enabled {
        return Ok(());
    }
    let history = crate::history::History::open(
        store.clone(),
        config.paths.home(),
        crate::history::Limits::of(&config.history),
    )?;
    history.announce_on(events.clone());
    history.run_tasks_on(tasks);
    undo_tool.bind(history.clone());
    let settled = history.reconcile(gate.sandbox()).await?;
    if settled != crate::history::reconcile::Reconciled::default() {
        tracing::info!(
            ?settled,
            "settled the file history left by the previous run"
        );
    }
    gate.set_history(history);
    Ok(())
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
pub(super) async fn recover_agents(agents: &Agents, chats: &Chats) -> Result<(), RuntimeError> {
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
pub(super) fn local_user() -> LocalUser {
    use crate::config::env::{Var, read};
    LocalUser {
        id: "local".to_owned(),
        name: read(Var::User)
            .or_else(|| read(Var::LogName))
            .unwrap_or_else(|| "local".to_owned()),
    }
}

/// The model service with the local engines, every key it holds already named to the
/// redactor (stored keys of no known shape are redacted before their first use).
pub(super) async fn open_llm(
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
pub(super) fn with_local_models(
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

/// Ends time-limited grants and parked approvals when their time is up, as runtime tasks.
fn expire_approvals(
    tasks: &tokio_util::task::TaskTracker,
    approvals: &crate::approvals::Approvals,
    shutdown: &tokio_util::sync::CancellationToken,
) {
    tasks.spawn(approvals.clone().expire_grants(shutdown.clone()));
    tasks.spawn(approvals.clone().expire_parked(shutdown.clone()));
}

/// The slots of the catalog tools whose service starts after the catalog is built.
pub(super) struct ToolSlots {
    /// The schedule tools' ([`start_schedules`] binds it).
    pub scheduling: ScheduleTools,
    /// The channel tools' (a channel binds it when it starts).
    pub channels: ChannelTools,
    /// `UndoChanges`' (bound once the history is open).
    pub undo: UndoTool,
}

impl ToolSlots {
    /// Empty slots over `store`.
    pub(super) fn new(store: &Store) -> Self {
        Self {
            scheduling: ScheduleTools::default(),
            channels: ChannelTools::new(store.clone()),
            undo: UndoTool::default(),
        }
    }
}

/// Every built-in tool, the schedule tools over `scheduling` (bound once the schedule
/// service started: [`start_schedules`]), the channel tools over `channels` (bound by a
/// channel when it starts) and `UndoChanges` over `undo` (bound once the history is open).
pub(super) fn catalog(
    config: &Config,
    store: &Store,
    llm: &Arc<LlmService>,
    slots: &ToolSlots,
) -> Result<crate::tools::Catalog, crate::tools::CatalogError> {
    let mut extra = slots.scheduling.tools();
    extra.extend(slots.channels.tools());
    extra.push(slots.undo.tool());
    builtin::catalog_with(&web_services(config, store, llm), extra)
}

/// What the schedule service starts over.
pub(super) struct ScheduleStart<'a> {
    pub store: &'a Store,
    /// Where runs fire.
    pub chats: &'a Chats,
    /// The runtime's tasks: the engine's loop and runs stop at shutdown.
    pub tasks: &'a crate::tasks::Tasks,
    pub events: &'a EventBus,
    /// The schedule tools, bound to the service once it runs.
    pub scheduling: &'a ScheduleTools,
    /// Whose language (the local person's) the runs' own reasons are written in.
    pub gate: &'a Gate,
}

/// The schedule service, its engine on the system clock firing into `chats`, started: its loop
/// is a runtime task that stops at shutdown.
pub(super) async fn start_schedules(parts: ScheduleStart<'_>) -> Result<Schedules, RuntimeError> {
    let ScheduleStart {
        store,
        chats,
        tasks,
        events,
        scheduling,
        gate,
    } = parts;
    let gate = gate.clone();
    let language: SharedLanguage = Arc::new(move || gate.language());
    let engine = Engine::new(EngineParts {
        events: events.clone(),
        store: store.clone(),
        clock: Arc::new(SystemClock),
        firing: Arc::new(ChatFiring {
            chats: chats.clone(),
            store: store.clone(),
            language: language.clone(),
        }),
        tasks: tasks.clone(),
        language,
    });
    engine.start().await?;
    let schedules = Schedules::new(store.clone(), engine);
    scheduling.bind(ScheduleAccess {
        schedules: schedules.clone(),
        chats: chats.clone(),
        store: store.clone(),
    });
    Ok(schedules)
}

/// Where the runtime reads the environment: the options' lookup, else the daemon's.
pub(super) fn environment_of(options: &RuntimeOptions) -> Environment {
    options
        .environment
        .clone()
        .unwrap_or_else(|| Arc::new(crate::config::env::daemon_lookup))
}

/// `daemon.started`, once everything is up.
pub(super) async fn announce_start(handle: &RuntimeHandle) -> Result<(), RuntimeError> {
    handle
        .events()
        .publish(RuntimeEvent::DaemonStarted {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: std::process::id(),
        })
        .await?;
    Ok(())
}
