//! The MCP client: Souz's sessions with the external MCP servers of `[mcp.servers.<name>]`,
//! whose tools it registers with the gate as `mcp__<server>__<tool>` (see [`proxy`]), so that
//! Souz's agents and, per server `expose_to_mcp_clients`, the MCP clients at `/mcp` call them
//! through the one approval gate like every other tool.
//!
//! Lifecycle (one [`McpClients::run`] task, spawned by the runtime): each enabled server is
//! started (or connected) and its tools listed (every page) within `startup_timeout_seconds`;
//! a server that fails is tried again after a backoff (1 s doubling to a minute); a
//! `tools/list_changed` notification lists the tools again. On shutdown every session is
//! closed and every child's process group stopped. A saved `[mcp.servers]` change applies
//! live ([`McpClients::apply`]): a server removed, turned off or changed is stopped and its
//! tools taken off the gate before its replacement or a new server starts.
//!
//! Calls: each within `tool_timeout_seconds` (then cancelled on the server with
//! `notifications/cancelled`), cancelled when the gate's call is; a call that finds the session
//! broken (a crashed server, a closed connection) starts a new session and is sent once more.
//!
//! Credentials: an HTTP server that answers 401 (or 403 `insufficient_scope`, step-up) needs a
//! login ([`oauth`]): its status says `needs_login` until the operator completes one; tokens
//! are refreshed without asking while refreshing works.

pub(crate) mod conformance;
pub(crate) mod connection;
pub(crate) mod oauth;
pub(crate) mod proxy;
pub(crate) mod trust;

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use rmcp::RoleClient;
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, JsonObject, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use souz_protocol::McpServerStatus;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use self::connection::{Connect, ConnectError, Events, Lookup, Session};
use self::oauth::{CallbackError, Flows, Login};
use self::trust::{Definition, Trust};
use crate::config::Config;
use crate::config::McpServerConfig;
use crate::llm::keys::{ApiKey, KeyStore, KeyStoreError};
use crate::store::Store;
use crate::tools::external::ExternalTool;
use crate::tools::gate::Gate;
use crate::tools::{ProgressSink, ToolError, ToolOutput, ToolProgress};

/// The longest wait before a failed server is tried again.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long closing a session may take before its process group is killed.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(3);

/// What the client needs from the runtime.
pub(crate) struct McpClientParts {
    pub config: Config,
    pub gate: Gate,
    /// Where trusted tool definitions are kept.
    pub store: Store,
    /// The daemon's environment (`env_vars`, `bearer_token_env`).
    pub lookup: Lookup,
    /// What programs may inherit of the daemon's environment (scrubbed).
    pub inherited: Vec<(OsString, OsString)>,
    /// Bearer tokens and OAuth credentials (encrypted).
    pub keys: KeyStore,
    /// The daemon's OAuth redirect URI (its own `/v1/mcp/oauth/callback`).
    pub redirect_uri: String,
}

/// Every configured server. Cheap to clone.
#[derive(Clone)]
pub(crate) struct McpClients {
    /// The servers in use (enabled in the configuration last applied).
    servers: Arc<std::sync::RwLock<Vec<Arc<Server>>>>,
    /// What a new server is made with.
    base: Arc<Base>,
    /// The keeper task of each started server; also serialises applying a configuration.
    keepers: Arc<tokio::sync::Mutex<Keepers>>,
    keys: KeyStore,
    flows: Arc<Flows>,
    redirect_uri: Arc<str>,
}

/// What every server shares.
struct Base {
    gate: Gate,
    store: Store,
    lookup: Lookup,
    inherited: Vec<(OsString, OsString)>,
    keys: KeyStore,
}

/// The running keepers (once [`McpClients::run`] started them), by server name.
#[derive(Default)]
struct Keepers {
    stop: Option<CancellationToken>,
    running: std::collections::HashMap<String, (CancellationToken, tokio::task::JoinHandle<()>)>,
}

impl Keepers {
    /// Starts `server`'s keeper (when the clients run, and not once they are stopping: a
    /// save during shutdown starts nothing).
    fn start(&mut self, server: &Arc<Server>) {
        if let Some(stop) = self.stop.as_ref().filter(|stop| !stop.is_cancelled()) {
            let token = stop.child_token();
            let task = tokio::spawn(Arc::clone(server).keep(token.clone()));
            self.running.insert(server.name.clone(), (token, task));
        }
    }

    /// Stops the keeper of `name` and waits until its session is closed.
    async fn stop(&mut self, name: &str) {
        if let Some((token, task)) = self.running.remove(name) {
            token.cancel();
            let _ = task.await;
        }
    }
}

/// One server and its session.
pub(crate) struct Server {
    pub(crate) name: String,
    config: McpServerConfig,
    gate: Gate,
    store: Store,
    lookup: Lookup,
    inherited: Vec<(OsString, OsString)>,
    home: PathBuf,
    allow_hosts: Vec<String>,
    keys: KeyStore,
    events: Events,
    /// The live session; held across a connect so one server is started once at a time.
    session: tokio::sync::Mutex<Option<Live>>,
    health: Mutex<Health>,
}

struct Live {
    session: Session,
    peer: Peer<RoleClient>,
    generation: u64,
}

#[derive(Default)]
struct Health {
    generation: u64,
    connected: bool,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<String>,
    tools: usize,
    /// The server asked for a login (or a wider scope) that refreshing could not give.
    needs_login: bool,
    /// Its last `WWW-Authenticate` challenge, which a login starts from.
    challenge: Option<String>,
}

impl McpClients {
    /// A client per enabled server of `[mcp.servers]` (nothing is started yet).
    pub(crate) fn new(parts: McpClientParts) -> Self {
        let McpClientParts {
            config,
            gate,
            store,
            lookup,
            inherited,
            keys,
            redirect_uri,
        } = parts;
        let base = Arc::new(Base {
            gate,
            store,
            lookup,
            inherited,
            keys: keys.clone(),
        });
        let servers = config
            .mcp
            .servers
            .iter()
            .filter(|(_, server)| server.enabled)
            .map(|(name, server)| base.server(&config, name, server))
            .collect();
        Self {
            servers: Arc::new(std::sync::RwLock::new(servers)),
            base,
            keepers: Arc::default(),
            keys,
            flows: Arc::new(Flows::default()),
            redirect_uri: Arc::from(redirect_uri),
        }
    }

    /// Keeps every server connected and its tools listed until `stop`; then closes them all.
    pub(crate) async fn run(self, stop: CancellationToken) {
        {
            let mut keepers = self.keepers.lock().await;
            keepers.stop = Some(stop.clone());
            for server in self.snapshot() {
                keepers.start(&server);
            }
        }
        stop.cancelled().await;
        let running: Vec<_> = self.keepers.lock().await.running.drain().collect();
        futures::future::join_all(running.into_iter().map(|(_, (_, task))| task)).await;
    }

    /// Brings the servers in step with `config` (a saved `config.toml`) without a restart: a
    /// server removed, turned off or changed is stopped (its session closed, its tools taken
    /// off the gate) before a changed or new one starts. Runs in the background; the status
    /// says `restartRequired` until it is done.
    pub(crate) fn apply(&self, config: &Config) {
        let (clients, config) = (self.clone(), config.clone());
        tokio::spawn(async move {
            let mut keepers = clients.keepers.lock().await;
            let wanted: Vec<(&String, &McpServerConfig)> = config
                .mcp
                .servers
                .iter()
                .filter(|(_, server)| server.enabled)
                .collect();
            for server in clients.snapshot() {
                let kept = wanted
                    .iter()
                    .any(|(name, wanted)| **name == server.name && **wanted == server.config);
                if kept {
                    continue;
                }
                keepers.stop(&server.name).await;
                clients
                    .base
                    .gate
                    .set_external_tools(&server.name, Vec::new());
                clients
                    .servers
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .retain(|live| !Arc::ptr_eq(live, &server));
                tracing::info!(server = %server.name, "stopped an MCP server the configuration changed");
            }
            for (name, wanted) in wanted {
                if clients.server(name).is_some() {
                    continue;
                }
                let server = clients.base.server(&config, name, wanted);
                clients
                    .servers
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Arc::clone(&server));
                keepers.start(&server);
                tracing::info!(server = %name, "started an MCP server the configuration added");
            }
        });
    }

    /// The servers in use now.
    fn snapshot(&self) -> Vec<Arc<Server>> {
        self.servers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Where each server of `current` (the file now) stands: the ones in use live, the rest
    /// as configured. `restart_required` while a saved change is not applied yet.
    pub(crate) fn status(&self, current: &Config) -> Vec<McpServerStatus> {
        let servers = self.snapshot();
        current
            .mcp
            .servers
            .iter()
            .map(|(name, server)| {
                let live = servers.iter().find(|live| &live.name == name);
                let health = live.map(|live| live.health());
                let restart_required = match live {
                    Some(live) => !server.enabled || live.config != *server,
                    None => server.enabled,
                };
                McpServerStatus {
                    name: name.clone(),
                    transport: if server.is_stdio() { "stdio" } else { "http" }.to_owned(),
                    enabled: server.enabled,
                    connected: health.as_ref().is_some_and(|h| h.connected),
                    tools: health.as_ref().map_or(0, |h| h.tools),
                    needs_login: health.as_ref().is_some_and(|h| h.needs_login),
                    error: health.and_then(|h| h.last_error),
                    expose_to_mcp_clients: server.expose_to_mcp_clients,
                    settings: serde_json::to_value(server).unwrap_or_default(),
                    restart_required,
                }
            })
            .collect()
    }

    /// Connects to `name` now (if it is not) and lists its tools again; the number listed.
    pub(crate) async fn test(&self, name: &str) -> Option<Result<usize, String>> {
        let server = self.server(name)?;
        Some(match server.peer().await {
            Ok((peer, _)) => server.list_tools(&peer).await,
            Err(error) => Err(error),
        })
    }

    fn server(&self, name: &str) -> Option<Arc<Server>> {
        self.servers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|server| server.name == name)
            .cloned()
    }

    /// Starts an OAuth login for the enabled HTTP server `name`: the authorization URL the
    /// person opens (its redirect comes back to [`McpClients::complete_login`]).
    pub(crate) async fn login(&self, name: &str) -> Option<Result<String, String>> {
        let server = self.server(name)?;
        if server.config.is_stdio() {
            return Some(Err(format!(
                "`{name}` is a program (stdio); only `url` servers sign in"
            )));
        }
        let client = match connection::oauth_client(&server.config, &server.allow_hosts) {
            Ok(client) => client,
            Err(error) => return Some(Err(error)),
        };
        let challenge = server
            .health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .challenge
            .clone();
        Some(
            self.flows
                .start(Login {
                    server: name,
                    config: &server.config,
                    client,
                    keys: &self.keys,
                    challenge,
                    redirect_uri: self.redirect_uri.to_string(),
                    client_secret: None,
                })
                .await,
        )
    }

    /// Completes the login `state` names (the redirect's `code` and `iss`), then connects
    /// the server again with its new tokens; the server's name.
    pub(crate) async fn complete_login(
        &self,
        state: &str,
        code: &str,
        issuer: Option<&str>,
    ) -> Result<String, CallbackError> {
        let name = self.flows.complete(state, code, issuer).await?;
        if let Some(server) = self.server(&name) {
            server.reconnect().await;
        }
        Ok(name)
    }

    /// Forgets the login `state` names (the authorization server refused it).
    pub(crate) fn abandon_login(&self, state: &str) {
        self.flows.abandon(state);
    }

    /// Stores (`Some`) or deletes the bearer token of the server `name` under its
    /// `bearer_token_key`, then connects it again.
    pub(crate) async fn set_token(
        &self,
        config: &Config,
        name: &str,
        token: Option<ApiKey>,
    ) -> Result<(), TokenError> {
        let server = config
            .mcp
            .servers
            .get(name)
            .ok_or_else(|| TokenError::UnknownServer(name.to_owned()))?;
        let secret = server
            .bearer_token_secret()
            .ok_or_else(|| TokenError::NoTokenKey(name.to_owned()))?;
        match token {
            Some(token) => {
                crate::redact::register_secret(token.expose());
                self.keys.put_secret(&secret, &token).await?;
            }
            None => {
                self.keys.delete_secret(&secret).await?;
            }
        }
        if let Some(server) = self.server(name) {
            server.reconnect().await;
        }
        Ok(())
    }
}

/// Why a bearer token could not be stored.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenError {
    /// No server of that name is configured.
    #[error("No MCP server is named `{0}`.")]
    UnknownServer(String),
    /// The server names no key-store token.
    #[error(
        "The MCP server `{0}` takes no stored token: add `bearer_token_key = \"{0}\"` to \
         [mcp.servers.{0}] in config.toml first."
    )]
    NoTokenKey(String),
    /// The key store failed.
    #[error(transparent)]
    Keys(#[from] KeyStoreError),
}

impl Base {
    /// A server of `config` (not started).
    fn server(&self, config: &Config, name: &str, server: &McpServerConfig) -> Arc<Server> {
        Arc::new(Server {
            name: name.to_owned(),
            config: server.clone(),
            gate: self.gate.clone(),
            store: self.store.clone(),
            lookup: Arc::clone(&self.lookup),
            inherited: self.inherited.clone(),
            home: config.paths.home().to_owned(),
            allow_hosts: config.sandbox.network_allow_hosts.clone(),
            keys: self.keys.clone(),
            events: Events {
                tools_changed: Arc::new(Notify::new()),
                progress: ProgressDispatcher::new(),
            },
            session: tokio::sync::Mutex::new(None),
            health: Mutex::new(Health::default()),
        })
    }
}

struct HealthView {
    connected: bool,
    tools: usize,
    last_error: Option<String>,
    needs_login: bool,
}

impl Server {
    fn health(&self) -> HealthView {
        let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        HealthView {
            connected: health.connected,
            tools: health.tools,
            last_error: health.last_error.clone(),
            needs_login: health.needs_login,
        }
    }

    /// Forgets the session and the backoff so the keeper connects again now (new credentials).
    async fn reconnect(&self) {
        if let Some(old) = self.session.lock().await.take() {
            close(old.session).await;
        }
        {
            let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            health.connected = false;
            health.retry_at = None;
            health.failures = 0;
        }
        self.events.tools_changed.notify_one();
    }

    /// Records that a call was refused for want of a (wider) login; the message to return.
    fn login_needed(&self, challenge: String) -> String {
        let step_up = oauth::is_step_up(&challenge);
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health.needs_login = true;
        health.challenge = Some(challenge);
        if step_up {
            format!(
                "the MCP server `{}` asks for a wider scope: sign in again with `souz mcp login {}`",
                self.name, self.name
            )
        } else {
            format!(
                "the MCP server `{}` asks for a login (its token could not be refreshed): \
                 `souz mcp login {}`",
                self.name, self.name
            )
        }
    }

    fn startup_timeout(&self) -> Duration {
        Duration::from_secs(self.config.startup_timeout_seconds)
    }

    async fn keep(self: Arc<Self>, stop: CancellationToken) {
        loop {
            let retry_in = match self.peer().await {
                Ok((peer, _)) => {
                    if let Err(error) = self.list_tools(&peer).await {
                        tracing::warn!(server = %self.name, %error, "cannot list the MCP server's tools");
                    }
                    None
                }
                Err(_) => self.retry_in(),
            };
            tokio::select! {
                () = stop.cancelled() => break,
                () = self.events.tools_changed.notified() => {}
                () = sleep_or_forever(retry_in) => {}
            }
        }
        self.close().await;
    }

    fn retry_in(&self) -> Option<Duration> {
        let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health
            .retry_at
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// The live session's peer, connecting first when there is none (not before the backoff
    /// of the last failure is over).
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), String> {
        let mut slot = self.session.lock().await;
        if let Some(live) = slot.as_ref()
            && !live.peer.is_transport_closed()
        {
            return Ok((live.peer.clone(), live.generation));
        }
        if let Some(old) = slot.take() {
            close(old.session).await;
        }
        {
            let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(at) = health.retry_at
                && at > Instant::now()
            {
                let error = health.last_error.clone().unwrap_or_default();
                return Err(format!(
                    "the MCP server `{}` is unavailable ({error}); Souz tries again in {} s",
                    self.name,
                    at.saturating_duration_since(Instant::now())
                        .as_secs()
                        .max(1)
                ));
            }
        }
        let connecting = connection::connect(
            Connect {
                name: &self.name,
                config: &self.config,
                lookup: &self.lookup,
                inherited: &self.inherited,
                home: &self.home,
                allow_hosts: &self.allow_hosts,
                keys: &self.keys,
            },
            self.events.clone(),
        );
        let outcome = match tokio::time::timeout(self.startup_timeout(), connecting).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ConnectError::from(format!(
                "no answer within {} s",
                self.config.startup_timeout_seconds
            ))),
        };
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Ok(session) => {
                health.generation += 1;
                health.connected = true;
                health.failures = 0;
                health.retry_at = None;
                health.last_error = None;
                health.needs_login = false;
                health.challenge = None;
                let peer = session.peer().clone();
                let generation = health.generation;
                if generation > 1 {
                    // A new session (a restarted server) may list other tools: look again.
                    self.events.tools_changed.notify_one();
                }
                *slot = Some(Live {
                    session,
                    peer: peer.clone(),
                    generation,
                });
                Ok((peer, generation))
            }
            Err(ConnectError { message, challenge }) => {
                let error = message;
                tracing::warn!(server = %self.name, %error, "cannot start the MCP server");
                if challenge.is_some() {
                    health.needs_login = true;
                    health.challenge = challenge;
                }
                health.connected = false;
                health.failures = health.failures.saturating_add(1);
                let backoff = Duration::from_secs(1 << health.failures.min(6).saturating_sub(1));
                health.retry_at = Some(Instant::now() + backoff.min(MAX_BACKOFF));
                health.last_error = Some(error.clone());
                Err(format!("the MCP server `{}`: {error}", self.name))
            }
        }
    }

    /// Forgets the session of `generation` (broken); the next call starts a new one at once.
    async fn drop_session(&self, generation: u64) {
        let mut slot = self.session.lock().await;
        if slot
            .as_ref()
            .is_some_and(|live| live.generation == generation)
            && let Some(old) = slot.take()
        {
            close(old.session).await;
            let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            health.connected = false;
        }
    }

    async fn close(&self) {
        if let Some(live) = self.session.lock().await.take() {
            close(live.session).await;
        }
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health.connected = false;
    }

    /// Lists the server's tools (every page) and registers the ones in use with the gate.
    async fn list_tools(self: &Arc<Self>, peer: &Peer<RoleClient>) -> Result<usize, String> {
        let listed = tokio::time::timeout(self.startup_timeout(), peer.list_all_tools())
            .await
            .map_err(|_| "`tools/list` did not answer in time".to_owned())?
            .map_err(|error| match error.auth_challenge() {
                Some(challenge) => self.login_needed(challenge.to_owned()),
                None => format!("`tools/list` failed: {error}"),
            })?;
        let mut taken = HashSet::new();
        let mut tools: Vec<ExternalTool> = Vec::new();
        for tool in listed
            .iter()
            .filter(|tool| self.config.uses_tool(&tool.name))
        {
            let definition = Definition::of(tool);
            let name = proxy::tool_name(&self.name, &tool.name, &mut taken);
            let listed = trust::Listed {
                server: &self.name,
                name: &name,
                remote: &tool.name,
                definition: &definition,
            };
            let (spec, untrusted) = match trust::check(&self.store, listed)
                .await
                .map_err(|error| format!("cannot read the trusted definitions: {error}"))?
            {
                Trust::Trusted => (proxy::spec(&self.name, &name, tool), None),
                Trust::Changed { diff, trusted } => {
                    tracing::warn!(server = %self.name, tool = %tool.name, %name, "an MCP tool's definition changed; it asks until approved");
                    (proxy::trusted_spec(&self.name, &name, &trusted), Some(diff))
                }
            };
            tools.push(ExternalTool {
                tool: Arc::new(proxy::ProxyTool {
                    spec,
                    server: Arc::clone(self),
                    remote: tool.name.to_string(),
                    definition,
                    untrusted: Arc::new(Mutex::new(untrusted)),
                }),
                server: self.name.clone(),
                exposed: self.config.expose_to_mcp_clients,
                agents: true,
            });
        }
        let count = tools.len();
        // The count first: whoever sees the tools in the gate sees the status that lists them.
        self.health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tools = count;
        self.gate.set_external_tools(&self.name, tools);
        Ok(count)
    }

    /// Trusts `definition` of the remote tool `remote` under the Souz name `name` (the person
    /// approved a call that showed it), then lists the tools again so that what models and
    /// listings see is the definition now trusted.
    pub(crate) async fn trust(
        &self,
        name: &str,
        remote: &str,
        definition: &Definition,
    ) -> Result<(), ToolError> {
        let listed = trust::Listed {
            server: &self.name,
            name,
            remote,
            definition,
        };
        trust::accept(&self.store, listed)
            .await
            .map_err(|error| ToolError::Internal(error.to_string()))?;
        self.events.tools_changed.notify_one();
        Ok(())
    }

    /// Calls `tool` with `arguments`: within the tool timeout, cancelled with `cancel`, sent
    /// once more on a new session when the first finds it broken; the server's progress
    /// notifications go to `progress`.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        run: &Run<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let limit = Duration::from_secs(self.config.tool_timeout_seconds);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (peer, generation) = self.peer().await.map_err(ToolError::Failed)?;
            let params =
                CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
            match send_call(&peer, params, limit, run, &self.events.progress).await {
                Sent::Cancelled => return Err(ToolError::Cancelled),
                Sent::TimedOut => {
                    return Err(ToolError::Failed(format!(
                        "`{tool}` on the MCP server `{}` did not answer within {} s; it was cancelled",
                        self.name, self.config.tool_timeout_seconds
                    )));
                }
                Sent::Answer(Ok(result)) => return proxy::output(result),
                Sent::Answer(Err(ServiceError::McpError(error))) => {
                    return Err(ToolError::Failed(error.message.to_string()));
                }
                Sent::Answer(Err(error)) if error.auth_challenge().is_some() => {
                    let challenge = error.auth_challenge().unwrap_or_default().to_owned();
                    return Err(ToolError::Failed(self.login_needed(challenge)));
                }
                Sent::Answer(Err(error)) if attempt == 1 => {
                    tracing::warn!(server = %self.name, %error, "the MCP session broke; starting a new one");
                    self.drop_session(generation).await;
                }
                Sent::Answer(Err(error)) => {
                    self.drop_session(generation).await;
                    return Err(ToolError::Failed(format!(
                        "the MCP server `{}` failed: {error}",
                        self.name
                    )));
                }
            }
        }
    }
}

/// What a call follows besides its arguments: its cancellation and where progress goes.
pub(crate) struct Run<'a> {
    pub cancel: &'a CancellationToken,
    pub progress: &'a ProgressSink,
}

/// How one `tools/call` request ended.
enum Sent {
    Answer(Result<CallToolResult, ServiceError>),
    TimedOut,
    Cancelled,
}

/// Sends one `tools/call` and waits for its answer within `limit`, passing the server's
/// progress notifications (under the token rmcp gave the request) to `run.progress`. A call
/// given up (timed out, cancelled) is cancelled on the server with `notifications/cancelled`.
async fn send_call(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    limit: Duration,
    run: &Run<'_>,
    progress: &ProgressDispatcher,
) -> Sent {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = match peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(error) => return Sent::Answer(Err(error)),
    };
    let mut reports = progress.subscribe(handle.progress_token.clone()).await;
    let mut abandoned = Abandoned {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let response = tokio::time::timeout(limit, handle.await_response());
    tokio::pin!(response);
    let sent = loop {
        tokio::select! {
            answer = &mut response => break match answer {
                Err(_) => Sent::TimedOut,
                Ok(answer) => Sent::Answer(answer.and_then(|result| match result {
                    ServerResult::CallToolResult(result) => Ok(result),
                    _ => Err(ServiceError::UnexpectedResponse),
                })),
            },
            () = run.cancel.cancelled() => break Sent::Cancelled,
            Some(report) = reports.next() => run.progress.report(ToolProgress {
                progress: report.progress,
                total: report.total,
                message: report.message,
            }),
        }
    };
    if matches!(sent, Sent::Answer(_)) {
        abandoned.id = None;
    }
    sent
}

/// A request given up before its answer: the server is told with `notifications/cancelled`.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let notice = CancelledNotificationParam::new(
                    Some(id),
                    Some("the call was given up".to_owned()),
                );
                let _ = peer.notify_cancelled(notice).await;
            });
        }
    }
}

async fn close(mut session: Session) {
    if tokio::time::timeout(CLOSE_TIMEOUT, session.close())
        .await
        .is_err()
    {
        tracing::warn!("an MCP session did not close in time; its process group is killed");
    }
}

async fn sleep_or_forever(duration: Option<Duration>) {
    match duration {
        Some(duration) => tokio::time::sleep(duration).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
pub(crate) mod tests;
