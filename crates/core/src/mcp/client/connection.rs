//! One live session with an external MCP server (rmcp's client): started as a child process
//! over stdio, or opened over streamable HTTP through the SSRF-safe transport client.
//!
//! Invariants:
//! - A child process runs in its own process group; the whole group is killed when the session
//!   ends or is dropped (rmcp's child transport kills through `process-wrap`'s group wrapper).
//! - A child's environment is built from nothing: what commands may inherit (scrubbed of
//!   secrets and loader variables), then `env_vars` passed through from the daemon's
//!   environment, then `env`; loader and shell injection variables are refused from both.
//! - An HTTP endpoint is checked against the network policy before anything is sent; loopback
//!   and private addresses are reachable only with `allow_private_network`.
//! - An HTTP server's credential is a bearer token (from the environment or the key store) or
//!   OAuth tokens from the key store ([`super::oauth`]); a 401 or 403 at connect time is kept
//!   as the challenge a login starts from.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::Notify;

use super::oauth;
use crate::config::McpServerConfig;
use crate::llm::keys::KeyStore;
use crate::sandbox::environment::is_injection_variable;
use crate::sandbox::net::{self, NetworkPolicy, SystemLookup, WebOptions};

/// Looks up a variable of the daemon's environment (`env_vars`, `bearer_token_env`).
pub(crate) type Lookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A running session.
pub(crate) type Session = RunningService<RoleClient, Events>;

/// What Souz tells a server about itself, and what it hears back outside requests.
#[derive(Clone)]
pub(crate) struct Events {
    /// Woken by `notifications/tools/list_changed`.
    pub tools_changed: Arc<Notify>,
    /// `notifications/progress`, to the call that sent the token.
    pub progress: ProgressDispatcher,
}

impl ClientHandler for Events {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("souz", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.handle_notification(params).await;
    }
}

/// What connecting needs besides the server's configuration.
pub(crate) struct Connect<'a> {
    /// The server's name (for messages).
    pub name: &'a str,
    /// Its configuration.
    pub config: &'a McpServerConfig,
    /// The daemon's environment.
    pub lookup: &'a Lookup,
    /// What a child may inherit of the daemon's environment (already scrubbed).
    pub inherited: &'a [(OsString, OsString)],
    /// The working folder of a child without `cwd`.
    pub home: &'a Path,
    /// `[sandbox] network_allow_hosts`.
    pub allow_hosts: &'a [String],
    /// Bearer tokens (`bearer_token_key`) and OAuth credentials.
    pub keys: &'a KeyStore,
}

/// Why a session did not open.
#[derive(Debug)]
pub(crate) struct ConnectError {
    pub message: String,
    /// The server's `WWW-Authenticate` challenge when it answered 401 or 403.
    pub challenge: Option<String>,
}

impl From<String> for ConnectError {
    fn from(message: String) -> Self {
        Self {
            message,
            challenge: None,
        }
    }
}

/// Starts or opens a session (not bounded in time: the caller is).
pub(crate) async fn connect(connect: Connect<'_>, events: Events) -> Result<Session, ConnectError> {
    if connect.config.is_stdio() {
        let transport = child_transport(&connect)?;
        return events
            .serve(transport)
            .await
            .map_err(|error| format!("the server did not start: {error}").into());
    }
    let config = connect.config;
    let url = config.url.trim();
    let client = http_client(config, connect.allow_hosts, false)?;
    let mut transport_config = transport_config(config)?;
    if let Some(token) = bearer_token(&connect).await? {
        crate::redact::register_secret(&token);
        transport_config = transport_config.auth_header(token);
        return serve_http(events, client, transport_config).await;
    }
    if oauth::has_tokens(connect.keys, connect.name).await? {
        let oauth_client = oauth_client(config, connect.allow_hosts)?;
        let mut manager = oauth::manager(url, oauth_client, connect.keys, connect.name)
            .await
            .map_err(|error| format!("OAuth: {error}"))?;
        // Tokens from another authorization server are dropped; the server then asks again.
        manager
            .initialize_from_store()
            .await
            .map_err(|error| format!("OAuth: {error}"))?;
        return serve_http(events, AuthClient::new(client, manager), transport_config).await;
    }
    serve_http(events, client, transport_config).await
}

async fn serve_http<C>(
    events: Events,
    client: C,
    config: StreamableHttpClientTransportConfig,
) -> Result<Session, ConnectError>
where
    C: StreamableHttpClient + Send + Sync + 'static,
{
    let transport = StreamableHttpClientTransport::with_client(client, config);
    events.serve(transport).await.map_err(|error| ConnectError {
        challenge: error.auth_challenge().map(str::to_owned),
        message: if error.is_authorization_required() {
            "the server asks for a login (`souz mcp login <server>`)".to_owned()
        } else {
            format!("the server did not answer: {error}")
        },
    })
}

/// The configured bearer token: from the environment (`bearer_token_env`) or the key store
/// (`bearer_token_key`); `None` when neither is configured.
async fn bearer_token(connect: &Connect<'_>) -> Result<Option<String>, String> {
    let config = connect.config;
    if !config.bearer_token_env.is_empty() {
        return (connect.lookup)(&config.bearer_token_env)
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "the bearer token variable `{}` is not set",
                    config.bearer_token_env
                )
            });
    }
    let Some(secret) = config.bearer_token_secret() else {
        return Ok(None);
    };
    match connect.keys.get_secret(&secret).await {
        Ok(Some(token)) => Ok(Some(token.expose().to_owned())),
        Ok(None) => Err(format!(
            "no bearer token is stored under `{}`: set it with `souz mcp token set {}`",
            config.bearer_token_key, connect.name
        )),
        Err(error) => Err(error.to_string()),
    }
}

/// The child's environment: inherited (scrubbed), passed through, then set.
pub(crate) fn child_environment(
    config: &McpServerConfig,
    inherited: &[(OsString, OsString)],
    lookup: &Lookup,
) -> Result<Vec<(OsString, OsString)>, String> {
    let mut environment: Vec<(OsString, OsString)> = inherited.to_vec();
    let mut set = |name: &str, value: String| {
        environment.retain(|(existing, _)| existing != name);
        environment.push((name.into(), value.into()));
    };
    for name in config.env_vars.iter().chain(config.env.keys()) {
        if is_injection_variable(name) {
            return Err(format!(
                "`{name}` could make the program load code it did not ask for; it is not passed"
            ));
        }
    }
    for name in &config.env_vars {
        if let Some(value) = lookup(name) {
            set(name, value);
        }
    }
    for (name, value) in &config.env {
        set(name, value.clone());
    }
    Ok(environment)
}

fn child_transport(connect: &Connect<'_>) -> Result<TokioChildProcess, String> {
    let config = connect.config;
    let environment = child_environment(config, connect.inherited, connect.lookup)?;
    let mut command = tokio::process::Command::new(config.command.trim());
    command.args(&config.args).env_clear().envs(environment);
    let cwd = config.cwd.trim();
    command.current_dir(if cwd.is_empty() {
        connect.home
    } else {
        Path::new(cwd)
    });
    let mut wrapped = CommandWrap::from(command);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let (transport, _) = TokioChildProcess::builder(wrapped)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("cannot run `{}`: {error}", config.command.trim()))?;
    Ok(transport)
}

/// The SSRF-safe client for the server's URL (checked first). With `allow_private_network`,
/// the server's own host:port is allowed; `oauth` widens that to the host at any port (its
/// authorization server), never to other private hosts.
fn http_client(
    config: &McpServerConfig,
    allow_hosts: &[String],
    oauth: bool,
) -> Result<reqwest::Client, String> {
    let url = config.url.trim();
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("`{url}`: {error}"))?;
    let mut allowed: Vec<String> = allow_hosts.to_vec();
    if config.allow_private_network
        && let Some(host) = parsed.host_str()
    {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let bracketed = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        allowed.push(match parsed.port_or_known_default() {
            Some(port) if !oauth => format!("{bracketed}:{port}"),
            _ => bracketed,
        });
    }
    let policy = Arc::new(NetworkPolicy::new(&allowed)?);
    policy
        .check_url(&parsed)
        .map_err(|refusal| format!("`{url}` is refused: {refusal}"))?;
    net::transport_client(policy, Arc::new(SystemLookup), &WebOptions::default())
        .map_err(|error| error.to_string())
}

/// The SSRF-safe client for the server's OAuth traffic (see [`http_client`]).
pub(crate) fn oauth_client(
    config: &McpServerConfig,
    allow_hosts: &[String],
) -> Result<reqwest::Client, String> {
    http_client(config, allow_hosts, true)
}

/// The transport's URL and extra headers (no credential).
fn transport_config(
    config: &McpServerConfig,
) -> Result<StreamableHttpClientTransportConfig, String> {
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let name = HeaderName::try_from(name.as_str())
            .map_err(|_| format!("`{name}` is not a header name"))?;
        let value = HeaderValue::try_from(value.as_str())
            .map_err(|_| format!("the value of `{name}` is not a header value"))?;
        headers.insert(name, value);
    }
    Ok(StreamableHttpClientTransportConfig::with_uri(config.url.trim()).custom_headers(headers))
}
