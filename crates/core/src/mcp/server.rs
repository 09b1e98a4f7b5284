//! The MCP server: Souz's tool catalog as MCP tools, every call through the approval gate.
//!
//! Shape: [`router`] mounts one rmcp `StreamableHttpService` at `/mcp` behind [`front`], which
//! turns malformed JSON-RPC into JSON-RPC errors before rmcp sees it, and hands a plain
//! `tools/call` in a session to the [`fast_path`] (rmcp's checks for that case, then a direct
//! answer; the one module that answers in rmcp's stead, proven equal to rmcp by a test). rmcp
//! makes one
//! [`SouzServer`] per MCP session (or per request for protocol versions without sessions); the
//! handlers are thin adapters over [`RuntimeHandle`]:
//! - `tools/list` ([`listing`]) follows the policy for this client: a tool denied by a rule is
//!   not listed, one that asks carries `_meta["anthropic/requiresUserInteraction"]` (and no
//!   output schema), and a change of rules or grants — a grant expiring included — that changes
//!   the list sends `notifications/tools/list_changed`: to a session from its `initialize` on,
//!   and on protocol 2026-07-28 on each `subscriptions/listen` stream that asks for it.
//! - `tools/call` ([`calls`]) starts a gate call with the client as the requester (named by
//!   the token it presented, never by its `clientInfo`), keeps the
//!   client informed with progress while a person decides, and answers "waiting for approval"
//!   before the client's own time limit; `AwaitApproval` picks the result up later, once.
//! - `prompts/list` and `prompts/get` ([`prompts`]): the usable skills as prompts, with
//!   `notifications/prompts/list_changed` when they change.
//! - `resources/list`, `resources/read` and `resources/templates/list` ([`resources`]): the
//!   person's memory facts as `souz://memory/facts/<id>`, readable when the policy lets the
//!   client run `search_memory` without asking, with `notifications/resources/list_changed`.
//! - [`sessions`]: rmcp's session manager, watched, so that a session's end withdraws its calls.
//!
//! Invariants: the perimeter (Host/Origin 403, body limit 413, bearer 401) runs before any of
//! this; rmcp's own Host and Origin checks are set to the same lists (the [`shortcut`] takes
//! only requests without `Origin`, whose `Host` the perimeter has checked; see [`fast_path`]). Session ids are random
//! routing keys, never credentials. A client that goes away withdraws what it asked for: a
//! cancelled or dropped `tools/call` withdraws its pending approval, and the end of a session
//! withdraws every call of that session that is not over, including calls already answered
//! with "waiting for approval".

// MCP logging is deprecated by SEP-2577 (2026-07-28) but is what 2025-era clients speak.
#![allow(deprecated)]

pub(crate) mod calls;
pub(crate) mod fast_path;

pub(crate) use super::extension::McpExtension;
pub(crate) mod front;
pub(crate) mod listing;
pub(crate) mod prompts;
pub(crate) mod resources;
pub(crate) mod sessions;
pub(crate) mod skills_ext;

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, LoggingLevel, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use souz_protocol::Requester;
use tokio_util::sync::DropGuard;

use self::fast_path::FastPath;
use self::fast_path::direct::Direct;
use self::listing::Listing;
use self::sessions::{SessionBook, Sessions};
use crate::config::McpConfig;
use crate::runtime::{RuntimeHandle, ServiceError};
use crate::token::Credential;

/// The name Souz gives itself in `serverInfo`.
pub(crate) const SERVER_NAME: &str = "souz";

/// The `Mcp-Session-Id` header.
const SESSION_HEADER: &str = "mcp-session-id";

/// What the HTTP service needs to know about the gateway it is mounted in.
#[derive(Debug, Clone)]
pub(crate) struct Mount {
    /// `Host` values the gateway accepts (`host:port`).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values the gateway accepts (`scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// Largest request body in bytes.
    pub body_limit: usize,
}

/// The rmcp service type mounted at `/mcp`.
pub(crate) type HttpService = StreamableHttpService<SouzServer, Sessions>;

/// What [`front::handle`] serves `/mcp` with: rmcp's service, and the sessions it keeps (for
/// the [`fast_path`]).
pub(crate) struct Endpoint {
    /// rmcp's streamable HTTP service.
    pub service: HttpService,
    /// The service's session manager.
    pub sessions: Arc<Sessions>,
    /// Largest request body in bytes.
    pub body_limit: usize,
    /// Whether the door and the fast path answer in front of rmcp ([`FastPath::On`] but in
    /// the equivalence test).
    pub fast_path: FastPath,
}

/// The streamable HTTP service for `/mcp` and its sessions, ready for [`front::handle`].
pub(crate) fn endpoint(handle: RuntimeHandle, mount: &Mount) -> Endpoint {
    endpoint_with(handle, mount, FastPath::On)
}

/// [`endpoint`], with or without the [`fast_path`].
pub(crate) fn endpoint_with(handle: RuntimeHandle, mount: &Mount, fast_path: FastPath) -> Endpoint {
    let settings = Settings::from_config(&handle.config().mcp);
    let listing = Arc::new(Listing::new(handle.tool_specs()));
    let book = Arc::new(SessionBook::new(handle.clone()));
    let mut local = LocalSessionManager::default();
    let mut session_config = SessionConfig::default();
    session_config.keep_alive = Some(settings.session_idle);
    local.session_config = session_config;
    let direct = (fast_path == FastPath::On).then(|| Direct::new(handle.clone(), settings));
    let sessions = Arc::new(Sessions::new(local, Arc::clone(&book), direct));
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(mount.allowed_hosts.iter().cloned())
        .with_allowed_origins(
            mount
                .allowed_origins
                .iter()
                .map(|origin| explicit_port(origin)),
        )
        .enforce_origin_validation()
        .with_max_request_body_bytes(mount.body_limit)
        .with_cancellation_token(handle.shutdown_signal().child_token());
    let factory_handle = handle.clone();
    let service = StreamableHttpService::new(
        move || {
            Ok(SouzServer::new(
                factory_handle.clone(),
                Arc::clone(&listing),
                Arc::clone(&book),
                settings,
            ))
        },
        Arc::clone(&sessions),
        config,
    );
    Endpoint {
        service,
        sessions,
        body_limit: mount.body_limit,
        fast_path,
    }
}

/// `/mcp` as an axum route: `refuse` (the gateway's rule for who may not reach `/mcp` at
/// all: its answer, if any, is sent instead), then [`front::handle`] in front of the rmcp
/// service. One handler, not a layer: a layer's service is copied for every request.
pub(crate) fn route<S>(
    handle: RuntimeHandle,
    mount: &Mount,
    refuse: fn(&axum::http::HeaderMap) -> Option<axum::response::Response>,
) -> axum::routing::MethodRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    // Shared, not cloned per request: a clone copies rmcp's whole config (hosts, origins).
    let endpoint = Arc::new(endpoint(handle, mount));
    axum::routing::any(move |request: axum::extract::Request| {
        let refusal = refuse(request.headers());
        let endpoint = Arc::clone(&endpoint);
        async move {
            match refusal {
                Some(refusal) => refusal,
                None => front::handle(endpoint, request).await,
            }
        }
    })
}

/// rmcp matches an origin without a port against any port (and warns about it); Souz's own
/// perimeter compares exactly, so give rmcp the same meaning: the scheme's default port, or —
/// for schemes without one, such as `tauri://` — any port, which only loosens rmcp's second
/// check, never the perimeter's first.
fn explicit_port(origin: &str) -> String {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return origin.to_owned();
    };
    let has_port = rest
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()));
    if has_port || rest.ends_with(":*") {
        return origin.to_owned();
    }
    match scheme {
        "http" => format!("{origin}:80"),
        "https" => format!("{origin}:443"),
        _ => format!("{origin}:*"),
    }
}

/// `[mcp]` settings in the units the server uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// How long a call waits for a person before answering "waiting for approval".
    pub approval_wait: Duration,
    /// Time between progress notifications.
    pub progress_interval: Duration,
    /// Idle time after which a session is closed.
    pub session_idle: Duration,
}

impl Settings {
    /// From `[mcp]`.
    pub(crate) fn from_config(config: &McpConfig) -> Self {
        Self {
            approval_wait: Duration::from_secs(config.approval_wait_seconds),
            progress_interval: Duration::from_secs(config.progress_interval_seconds),
            session_idle: Duration::from_secs(config.session_idle_minutes.saturating_mul(60)),
        }
    }
}

/// One MCP session's handler (one per request for protocol versions without sessions).
#[derive(Clone)]
pub(crate) struct SouzServer {
    session: Arc<Session>,
}

struct Session {
    handle: RuntimeHandle,
    listing: Arc<Listing>,
    /// The open sessions and their calls, withdrawn when their session ends.
    book: Arc<SessionBook>,
    settings: Settings,
    client: Mutex<Option<Implementation>>,
    log_level: Mutex<Option<LoggingLevel>>,
    /// Stops the `tools/list_changed` watcher when the session (this value) goes away.
    watcher: Mutex<Option<DropGuard>>,
    /// What the embedding binary serves beside Souz's tools (tests only; see [`extension`]).
    extension: Option<Arc<dyn McpExtension>>,
}

impl SouzServer {
    /// A handler for a new session.
    pub(crate) fn new(
        handle: RuntimeHandle,
        listing: Arc<Listing>,
        book: Arc<SessionBook>,
        settings: Settings,
    ) -> Self {
        Self {
            session: Arc::new(Session {
                handle: handle.clone(),
                listing,
                book,
                settings,
                client: Mutex::new(None),
                log_level: Mutex::new(None),
                watcher: Mutex::new(None),
                extension: handle.mcp_extension(),
            }),
        }
    }

    /// Who is asking, as the approval gate and the person see it: the credential the request
    /// carried (put there by the perimeter), with the client's `clientInfo` (from the
    /// handshake, or from the request's `_meta` on session-less protocol versions) and the
    /// session id as details.
    fn requester(&self, context: &RequestContext<RoleServer>) -> Requester {
        let client = context.client_info().or_else(|| {
            self.session
                .client
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        });
        let parts = context.extensions.get::<http::request::Parts>();
        let session_id = parts
            .and_then(|parts| parts.headers.get(SESSION_HEADER))
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let credential = parts.and_then(|parts| parts.extensions.get::<Credential>());
        requester_for(credential, client.as_ref(), session_id)
    }

    /// Starts the task that tells this session's client when its tool list changes.
    fn watch_tool_list(&self, peer: rmcp::Peer<RoleServer>, requester: Requester) {
        let stop = self.session.handle.shutdown_signal().child_token();
        *self
            .session
            .watcher
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(stop.clone().drop_guard());
        let handle = self.session.handle.clone();
        let listing = Arc::clone(&self.session.listing);
        let (prompt_peer, prompt_stop) = (peer.clone(), stop.clone());
        let (resource_peer, resource_stop) = (peer.clone(), stop.clone());
        let resource_requester = requester.clone();
        self.session.handle.spawn(async move {
            let notify = || async { peer.notify_tool_list_changed().await.is_ok() };
            follow_tool_list(&handle, &listing, &requester, stop.cancelled(), notify).await;
        });
        let handle = self.session.handle.clone();
        self.session.handle.spawn(async move {
            let notify = || async { prompt_peer.notify_prompt_list_changed().await.is_ok() };
            prompts::follow(&handle, prompt_stop.cancelled(), notify).await;
        });
        let handle = self.session.handle.clone();
        self.session.handle.spawn(async move {
            let notify = || async { resource_peer.notify_resource_list_changed().await.is_ok() };
            let stop = resource_stop.cancelled();
            resources::follow(&handle, &resource_requester, stop, notify).await;
        });
    }

    /// Whether the client asked for log messages at `level` (`logging/setLevel`).
    fn wants_log(&self, level: LoggingLevel) -> bool {
        let wanted = *self
            .session
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        wants(wanted, level)
    }
}

/// The requester for a credential, a self-declared client identity and a session. Without a
/// credential (which the perimeter always adds) the requester has no token identity, so no
/// grant or `mcp:<name>` rule can match it.
pub(crate) fn requester_for(
    credential: Option<&Credential>,
    client: Option<&Implementation>,
    session_id: String,
) -> Requester {
    let (client_name, client_version) = match client {
        Some(client) if !client.name.trim().is_empty() => (
            client.name.trim().to_owned(),
            client.version.trim().to_owned(),
        ),
        _ => ("an unnamed MCP client".to_owned(), String::new()),
    };
    let (token_id, token_name) = credential.map_or_else(Default::default, |credential| {
        (credential.id().to_owned(), credential.name().to_owned())
    });
    Requester::Mcp {
        client_name,
        client_version,
        session_id,
        token_id,
        token_name,
    }
}

/// Calls `notify` each time the tool list `requester` sees changes (rules, grants, a grant
/// expiring), until `stop` completes or `notify` says the client cannot be told any more.
async fn follow_tool_list<N, Sent>(
    handle: &RuntimeHandle,
    listing: &Listing,
    requester: &Requester,
    stop: impl Future<Output = ()>,
    mut notify: N,
) where
    N: FnMut() -> Sent,
    Sent: Future<Output = bool>,
{
    let mut changes = handle.policy_changes();
    changes.mark_unchanged();
    let mut shown = listing.signature(handle, requester);
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let now = listing.signature(handle, requester);
        if now != shown {
            shown = now;
            if !notify().await {
                return;
            }
        }
    }
}

/// The one mapping of the runtime's errors to MCP errors. Whatever failed inside (the database,
/// a shutdown), the client gets one generic internal error and the log gets the detail; a tool
/// that ran and failed is a tool result, never this.
pub(crate) fn mcp_error(error: ServiceError) -> McpError {
    tracing::error!(%error, "MCP tool call failed inside Souz");
    McpError::internal_error("Souz could not record the call; see its log.", None)
}

/// Whether a client that set log level `wanted` (or none) gets messages at `level`.
pub(crate) fn wants(wanted: Option<LoggingLevel>, level: LoggingLevel) -> bool {
    wanted.is_some_and(|wanted| severity(level) >= severity(wanted))
}

/// Log levels from least to most severe.
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// What the server tells the model about itself (`instructions`).
pub(crate) fn instructions(settings: &Settings) -> String {
    format!(
        "Souz is the local assistant daemon on this person's computer. Its tools read and \
         change files, run commands and fetch web pages on this machine, and every call passes \
         Souz's approval gate: read-only calls usually run at once; calls that change things \
         (tools marked `requiresUserInteraction`) wait until the person approves them in Souz \
         (menu bar, notification or `souz approvals`).\n\
         While a call waits, Souz sends progress notifications. If nobody has decided within \
         {wait} seconds, the call returns a result saying it is waiting for approval <id>: \
         nothing has run then, and the request stays in the person's queue. Call the \
         `{await_tool}` tool with that `approval_id` to wait for the decision; once approved it \
         returns the original call's result (a result is delivered once). A denied call returns \
         an error result that says so: do not retry it; ask the person what they want instead.",
        wait = settings.approval_wait.as_secs(),
        await_tool = calls::AWAIT_APPROVAL,
    )
}

impl ServerHandler for SouzServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_skills()
            .build();
        if let Some(extension) = &self.session.extension {
            extension.add_capabilities(&mut capabilities);
        }
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
                    .with_title("Souz")
                    .with_description("Souz's tools, each call approved by its person."),
            )
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_instructions(instructions(&self.session.settings))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        *self
            .session
            .client
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(request.client_info.clone());
        let credential = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Credential>());
        let requester = requester_for(credential, Some(&request.client_info), String::new());
        self.watch_tool_list(context.peer.clone(), requester);
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let requester = self.requester(&context);
        let mut tools = self.session.listing.tools(&self.session.handle, &requester);
        if let Some(extension) = &self.session.extension {
            tools.extend(extension.tools());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.session
            .listing
            .tool(name)
            .or_else(|| Listing::external_tool(&self.session.handle, name))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if let Some(extension) = &self.session.extension {
            let wants_log = |level| self.wants_log(level);
            let called = extension.call(
                &request.name,
                request.arguments.as_ref(),
                &context,
                &wants_log,
            );
            if let Some(outcome) = called.await {
                return outcome.map(CallToolResponse::Complete);
            }
        }
        let requester = self.requester(&context);
        let caller = calls::Caller::in_context(self, &context);
        calls::call(&caller, request, requester)
            .await
            .map(CallToolResponse::Complete)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if let Some(stream) = context.extensions.get::<sessions::SessionStream>() {
            // Direct answers in this session read the level from the book.
            self.session
                .book
                .set_log_level(&stream.session_id, request.level);
        }
        *self
            .session
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(request.level);
        Ok(())
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {}

    /// Protocol 2026-07-28 has no session to push to: a client that wants to hear about tool
    /// list changes opens a `subscriptions/listen` stream, and Souz accepts exactly that.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(
            SubscriptionFilter::builder()
                .tools_list_changed()
                .prompts_list_changed()
                .resources_list_changed()
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let shutdown = self.session.handle.shutdown_signal();
        let stop = || async {
            tokio::select! {
                () = context.cancelled() => {}
                () = shutdown.cancelled() => {}
            }
        };
        let accepted = context.accepted();
        let requester = self.requester(context.request_context());
        let sink = context.sink();
        let session = &self.session;
        let tools = async {
            if accepted.tools_list_changed == Some(true) {
                let notify = || async { sink.notify_tool_list_changed().await.is_ok() };
                follow_tool_list(
                    &session.handle,
                    &session.listing,
                    &requester,
                    stop(),
                    notify,
                )
                .await;
            } else {
                stop().await;
            }
        };
        let prompts = async {
            if accepted.prompts_list_changed == Some(true) {
                let notify = || async { sink.notify_prompt_list_changed().await.is_ok() };
                prompts::follow(&session.handle, stop(), notify).await;
            } else {
                stop().await;
            }
        };
        let resources = async {
            if accepted.resources_list_changed == Some(true) {
                let notify = || async { sink.notify_resource_list_changed().await.is_ok() };
                resources::follow(&session.handle, &requester, stop(), notify).await;
            } else {
                stop().await;
            }
        };
        tokio::join!(tools, prompts, resources);
        Ok(())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        let requester = self.requester(&context);
        let mut listed =
            resources::list(&self.session.handle, &requester, request.as_ref()).await?;
        // The extension's resources come with the first page. (Skill files are read by the URIs
        // of their skill's manifest, `skills/get`, not listed.)
        if let Some(extension) = &self.session.extension
            && request.as_ref().and_then(|r| r.cursor.as_ref()).is_none()
        {
            listed.resources.extend(extension.resources()?.resources);
        }
        Ok(listed)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        let mut templates = resources::templates();
        if let Some(extension) = &self.session.extension {
            templates.extend(extension.resource_templates()?.resource_templates);
        }
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            templates,
        ))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        if resources::is_memory_uri(&request.uri) {
            let requester = self.requester(&context);
            return resources::read(&self.session.handle, &requester, &request.uri)
                .await
                .map(Into::into);
        }
        if let Some(file) = skills_ext::read(&self.session.handle, &request.uri).await? {
            return Ok(file.into());
        }
        match &self.session.extension {
            Some(extension) => extension.read(&request).map(Into::into),
            None => Err(McpError::resource_not_found(
                format!("no resource at `{}`", request.uri),
                None,
            )),
        }
    }

    async fn subscribe(
        &self,
        _request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        match &self.session.extension {
            Some(_) => Ok(()),
            None => Err(McpError::method_not_found::<
                rmcp::model::SubscribeRequestMethod,
            >()),
        }
    }

    async fn unsubscribe(
        &self,
        _request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        match &self.session.extension {
            Some(_) => Ok(()),
            None => Err(McpError::method_not_found::<
                rmcp::model::UnsubscribeRequestMethod,
            >()),
        }
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, McpError> {
        skills_ext::list(&self.session.handle).await
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, McpError> {
        skills_ext::get(&self.session.handle, &request.uri).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        let mut listed = prompts::list(&self.session.handle).await?;
        if let Some(extension) = &self.session.extension {
            listed.extend(extension.prompts()?.prompts);
        }
        Ok(rmcp::model::ListPromptsResult::with_all_items(listed))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        if let Some(found) = prompts::get(&self.session.handle, &request.name).await? {
            return Ok(found.into());
        }
        match &self.session.extension {
            Some(extension) => extension.prompt(&request).map(Into::into),
            None => Err(McpError::invalid_params(
                format!("no prompt named `{}`", request.name),
                None,
            )),
        }
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        match &self.session.extension {
            Some(extension) => extension.complete(&request),
            None => Err(McpError::method_not_found::<
                rmcp::model::CompleteRequestMethod,
            >()),
        }
    }
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
