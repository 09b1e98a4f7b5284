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
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::Notify;

use crate::config::McpServerConfig;
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
}

/// Starts or opens a session (not bounded in time: the caller is).
pub(crate) async fn connect(connect: Connect<'_>, events: Events) -> Result<Session, String> {
    if connect.config.is_stdio() {
        let transport = child_transport(&connect)?;
        events
            .serve(transport)
            .await
            .map_err(|error| format!("the server did not start: {error}"))
    } else {
        let transport = http_transport(&connect)?;
        events
            .serve(transport)
            .await
            .map_err(|error| format!("the server did not answer: {error}"))
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

fn http_transport(
    connect: &Connect<'_>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let config = connect.config;
    let url = config.url.trim();
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("`{url}`: {error}"))?;
    let mut allowed: Vec<String> = connect.allow_hosts.to_vec();
    if config.allow_private_network
        && let Some(host) = parsed.host_str()
    {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        allowed.push(match parsed.port_or_known_default() {
            Some(port) if host.contains(':') => format!("[{host}]:{port}"),
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        });
    }
    let policy = Arc::new(NetworkPolicy::new(&allowed)?);
    policy
        .check_url(&parsed)
        .map_err(|refusal| format!("`{url}` is refused: {refusal}"))?;
    let client = net::transport_client(policy, Arc::new(SystemLookup), &WebOptions::default())
        .map_err(|error| error.to_string())?;
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let name = HeaderName::try_from(name.as_str())
            .map_err(|_| format!("`{name}` is not a header name"))?;
        let value = HeaderValue::try_from(value.as_str())
            .map_err(|_| format!("the value of `{name}` is not a header value"))?;
        headers.insert(name, value);
    }
    let mut transport_config =
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    if !config.bearer_token_env.is_empty() {
        let token = (connect.lookup)(&config.bearer_token_env).ok_or_else(|| {
            format!(
                "the bearer token variable `{}` is not set",
                config.bearer_token_env
            )
        })?;
        crate::redact::register_secret(&token);
        transport_config = transport_config.auth_header(token);
    }
    let _ = connect.name;
    Ok(StreamableHttpClientTransport::with_client(
        client,
        transport_config,
    ))
}
