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
mod session;

pub(crate) use self::session::Run;
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
    /// Where a reload runs (the runtime's tasks, see [`McpClients::on_tasks`]: shutdown waits
    /// for a reload under way).
    tasks: crate::tasks::Tasks,
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
            #[allow(
                clippy::disallowed_methods,
                reason = "owned by Keepers (token and handle): cancelled by Keepers::stop or the runtime's stop token, awaited by McpClients::run, which shutdown waits for"
            )]
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
            tasks: crate::tasks::Tasks::detached(),
        }
    }

    /// The same clients with their reloads on `tasks` (the runtime's; before they are used).
    pub(crate) fn on_tasks(mut self, tasks: crate::tasks::Tasks) -> Self {
        self.tasks = tasks;
        self
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
        // To its end: a reload stops sessions and takes tools off the gate in steps; `run`
        // (on the same tasks) waits for the keepers it leaves.
        self.tasks.spawn_to_end(async move {
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
    ) -> Result<(), BearerTokenError> {
        let server = config
            .mcp
            .servers
            .get(name)
            .ok_or_else(|| BearerTokenError::UnknownServer(name.to_owned()))?;
        let secret = server
            .bearer_token_secret()
            .ok_or_else(|| BearerTokenError::NoTokenKey(name.to_owned()))?;
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
pub(crate) enum BearerTokenError {
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

#[cfg(test)]
pub(crate) mod tests;
