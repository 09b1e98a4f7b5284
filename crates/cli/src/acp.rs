//! `souz acp`: the Agent Client Protocol over stdio, so an editor (Zed and others) can use
//! Souz's agents. An ACP session is a Souz chat; a prompt turn is a message posted to it, its
//! answer streamed back as `agent_message_chunk` updates and its tool calls reported as
//! `tool_call` / `tool_call_update`; every approval the gate needs in that chat is asked as
//! ACP's `session/request_permission`; `session/cancel` cancels the chat's running turn.
//!
//! Invariants:
//! - It forwards to the RUNNING daemon and starts nothing of its own: it connects like every
//!   CLI client (`daemon.json`, then the daemon's identity proof before its token is sent), and
//!   when the daemon is not running, or it has no token, it says so on stderr and exits with a
//!   failure before it reads a single frame.
//! - stdout carries ACP frames only ([`rpc`] writes them, one JSON-RPC message a line); logs
//!   and errors go to stderr. The editor's input is untrusted: see [`rpc`] for the limits.
//! - The ACP layer is Souz's own ([`rpc`], [`schema`]), not the ACP SDK: the SDK turns on
//!   serde_json's `preserve_order` for the whole workspace, which changes behaviour that relies
//!   on sorted JSON maps (stored payloads, the repeated-call limit, the OpenAPI document).
//! - Credential: a client token of its own with the `chats` scope, from
//!   `<SOUZ_HOME>/clients/<name>.token` (written by `souz acp-config`), never the operator
//!   token: it reaches the chats this bridge makes and their approvals, nothing else, and the
//!   listener proves it is the daemon that knows that token before the token is sent.
//! - It is a client like the web UI and `souz chat`: messages through
//!   `POST /v1/chats/{id}/messages`, events from `/v1/turns/ws`, decisions through
//!   `POST /v1/approvals/{id}/decision` (`via: "acp"`). It decides nothing the editor did not
//!   choose: a permission request answered with "cancelled" or an option not offered leaves the
//!   approval to the other surfaces.
//! - First answer wins: when an approval is decided elsewhere (the tray, the UI, the API) or
//!   expires while its permission request is open, the request is withdrawn
//!   (`$/cancel_request`), the editor's late answer is ignored, and the decision is reported as
//!   a `tool_call_update`. A decision from the editor that loses the race is ignored too.
//! - Questions the agent asks (Souz's options) are answered in the Souz app or web UI: the
//!   editor is told so in the answer's text (ACP has no question request).
//! - One prompt at a time per session (ACP's rule); a second one is refused, not queued.

mod mapping;
mod rpc;
mod schema;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use souz_client::{DaemonClient, EventStream, Reconnect, StreamItem};
use souz_protocol::Approval;
use souz_protocol::chat::{
    ChatEvent, ChatEventBody, CreateChat, CreateChatResponse, PostMessage, PostMessageResponse,
};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::task::TaskTracker;

use crate::texts::{fill, tr};
use mapping::TurnView;
use rpc::{Connection, Message, RpcError};
use schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, Implementation,
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SessionNotification, SessionUpdate, StopReason, ToolCallUpdate, ToolCallUpdateFields,
};

/// How long the bridge waits for the daemon's event stream before it answers anyway.
const LIVE_WAIT: Duration = Duration::from_secs(10);

/// Why a prompt turn could not run to its end.
#[derive(Debug, thiserror::Error)]
enum TurnError {
    /// The session is not one of this bridge's.
    #[error("unknown session {0}")]
    UnknownSession(String),
    /// A prompt is already running in this session.
    #[error("a prompt is already running in session {0}")]
    Busy(String),
    /// The daemon refused or could not be reached.
    #[error("{0}")]
    Daemon(String),
    /// The turn failed in Souz.
    #[error("the turn failed ({code}): {message}")]
    Failed { code: String, message: String },
    /// The daemon's event stream ended.
    #[error("the daemon's event stream ended")]
    StreamEnded,
    /// The ACP connection failed.
    #[error(transparent)]
    Acp(#[from] rpc::ConnectionError),
}

impl From<TurnError> for RpcError {
    fn from(error: TurnError) -> Self {
        match error {
            TurnError::UnknownSession(_) | TurnError::Busy(_) => Self::invalid_params(error),
            _ => Self::internal_error(error),
        }
    }
}

fn daemon_error(error: impl std::fmt::Display) -> TurnError {
    TurnError::Daemon(error.to_string())
}

/// A request the bridge serves, with its decoded parameters.
#[derive(Debug)]
enum Call {
    Initialize(InitializeRequest),
    NewSession(NewSessionRequest),
    Prompt(PromptRequest),
}

/// Decodes a request: method not found, or invalid params, as JSON-RPC errors.
fn call(method: &str, params: Value) -> Result<Call, RpcError> {
    match method {
        schema::INITIALIZE => rpc::params(params).map(Call::Initialize),
        schema::SESSION_NEW => rpc::params(params).map(Call::NewSession),
        schema::SESSION_PROMPT => rpc::params(params).map(Call::Prompt),
        _ => Err(RpcError::method_not_found(method)),
    }
}

/// One ACP session: a Souz chat, and the running turn's event inbox.
#[derive(Default)]
struct Session {
    turn: Option<mpsc::UnboundedSender<ChatEvent>>,
}

/// The bridge's state, shared by the request handlers and the event follower.
struct Bridge {
    client: DaemonClient,
    connection: Connection,
    /// The bridge's tasks (turns, permission requests, session creation).
    tasks: TaskTracker,
    /// The editor's name (`clientInfo`), for chat titles.
    editor: Mutex<Option<String>>,
    /// Sessions by id (the chat's id).
    sessions: Mutex<HashMap<String, Session>>,
}

impl Bridge {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands a chat event to its session's running turn, if any.
    fn route(&self, event: ChatEvent) {
        if let Some(Session { turn: Some(inbox) }) = self.sessions().get(&event.chat_id) {
            let _ = inbox.send(event);
        }
    }

    /// Serves one message from the editor.
    fn handle(self: &Arc<Self>, message: Message) {
        match message {
            Message::Request { id, method, params } => match call(&method, params) {
                Err(error) => self.reply(id, Err::<(), _>(error)),
                Ok(Call::Initialize(request)) => {
                    let response = self.initialize(&request);
                    self.reply(id, Ok(response));
                }
                Ok(Call::NewSession(request)) => {
                    let bridge = self.clone();
                    self.tasks.spawn(async move {
                        let created = new_session(&bridge, &request).await;
                        let response = created.map(|session_id| NewSessionResponse { session_id });
                        bridge.reply(id, response.map_err(RpcError::from));
                    });
                }
                Ok(Call::Prompt(request)) => {
                    // The turn waits for later messages (permission answers): off the read loop.
                    let bridge = self.clone();
                    self.tasks.spawn(async move {
                        let ended = prompt(&bridge, request).await;
                        let response = ended.map(|stop_reason| PromptResponse { stop_reason });
                        bridge.reply(id, response.map_err(RpcError::from));
                    });
                }
            },
            Message::Notification { method, params } if method == schema::SESSION_CANCEL => {
                match rpc::params::<CancelNotification>(params) {
                    Ok(cancel) => {
                        let bridge = self.clone();
                        self.tasks.spawn(async move {
                            if let Err(error) = cancel_turn(&bridge, &cancel.session_id).await {
                                eprintln!("souz acp: cannot cancel the turn: {error}");
                            }
                        });
                    }
                    Err(error) => eprintln!("souz acp: a session/cancel that is not one: {error}"),
                }
            }
            // Notifications get no answer: one Souz does not know is ignored.
            Message::Notification { .. } | Message::Response { .. } => {}
        }
    }

    fn reply(&self, id: Value, result: Result<impl serde::Serialize, RpcError>) {
        if let Err(error) = self.connection.respond_with(id, result) {
            eprintln!("souz acp: cannot answer: {error}");
        }
    }

    fn initialize(&self, request: &InitializeRequest) -> InitializeResponse {
        if let Some(info) = &request.client_info {
            let name = info.title.clone().unwrap_or_else(|| info.name.clone());
            *self.editor.lock().unwrap_or_else(PoisonError::into_inner) = Some(name);
        }
        // The stable protocol, whatever newer draft the editor offers.
        InitializeResponse {
            protocol_version: schema::PROTOCOL_VERSION,
            agent_capabilities: AgentCapabilities::default(),
            auth_methods: Vec::new(),
            agent_info: Implementation {
                name: "souz".to_owned(),
                title: Some("Souz".to_owned()),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
        }
    }
}

/// Runs the ACP agent on stdio, with the client token named `client`, until the editor closes
/// it.
pub async fn run(client: String) -> anyhow::Result<ExitCode> {
    let client = connect(&client).await?;
    let (connection, frames) = Connection::new();
    let tasks = TaskTracker::new();
    let bridge = Arc::new(Bridge {
        client,
        connection: connection.clone(),
        tasks: tasks.clone(),
        editor: Mutex::new(None),
        sessions: Mutex::new(HashMap::new()),
    });
    let mut live = follow(&bridge);
    // Events of a turn posted before the stream is live would be missed.
    if tokio::time::timeout(LIVE_WAIT, live.wait_for(|live| *live))
        .await
        .is_err()
    {
        tracing::warn!("the daemon's event stream is not live yet");
    }
    tasks.spawn(async move {
        if let Err(error) = rpc::write_frames(frames, tokio::io::stdout()).await {
            eprintln!("souz acp: cannot write to the editor: {error}");
        }
    });
    let input = tokio::io::BufReader::new(tokio::io::stdin());
    rpc::read_frames(input, &connection, |message| bridge.handle(message))
        .await
        .map_err(|error| anyhow::anyhow!("cannot read from the editor: {error}"))?;
    // The editor closed the connection: what is still running has no one to answer.
    tasks.close();
    Ok(ExitCode::SUCCESS)
}

/// The running daemon, reached with the `chats` client token named `name`.
async fn connect(name: &str) -> anyhow::Result<DaemonClient> {
    let paths = crate::client::paths()?;
    let home = crate::client::home(&paths);
    let token = home.client_token(name).map_err(|error| {
        anyhow::anyhow!(
            "no usable client token for `{name}` ({error}); with the daemon running \
             (`souz serve`), make one with `souz acp-config`"
        )
    })?;
    let base = home.base(|| crate::client::configured_base(&paths));
    Ok(DaemonClient::connect(&base, &token).await?.named("acp"))
}

/// Follows the person's chats' events, routing each to its session; the receiver says when
/// the stream is live.
fn follow(bridge: &Arc<Bridge>) -> watch::Receiver<bool> {
    let (live_sender, live) = watch::channel(false);
    let bridge = bridge.clone();
    let tasks = bridge.tasks.clone();
    tasks.spawn(async move {
        let client = bridge.client.clone();
        client
            .follow(EventStream::Chats, Reconnect::default(), |item| {
                match item {
                    StreamItem::Chat(event) => bridge.route(*event),
                    StreamItem::Live => {
                        let _ = live_sender.send(true);
                    }
                    _ => {}
                }
                ControlFlow::Continue(())
            })
            .await;
    });
    live
}

/// A new chat for an ACP session, titled by the editor and the folder it works in.
async fn new_session(bridge: &Bridge, request: &NewSessionRequest) -> Result<String, TurnError> {
    let folder = request
        .cwd
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| request.cwd.display().to_string());
    let editor = bridge
        .editor
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_else(|| "ACP".to_owned());
    let created: CreateChatResponse = bridge
        .client
        .post(
            "/v1/chats",
            &CreateChat {
                title: Some(format!("{editor}: {folder}")),
                ..CreateChat::default()
            },
        )
        .await
        .map_err(daemon_error)?;
    bridge
        .sessions()
        .insert(created.chat.id.clone(), Session::default());
    Ok(created.chat.id)
}

/// The prompt's text: its text blocks, and the links it refers to.
fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("{} ({})", link.name, link.uri)),
            ContentBlock::Other => {}
        }
    }
    parts.join("\n")
}

/// Ends the session's turn registration when the turn ends, whatever way it ends.
struct TurnGuard<'a> {
    bridge: &'a Bridge,
    session: String,
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        if let Some(session) = self.bridge.sessions().get_mut(&self.session) {
            session.turn = None;
        }
    }
}

/// Runs one prompt turn: posts the message and reports the turn's events until it ends.
async fn prompt(bridge: &Arc<Bridge>, request: PromptRequest) -> Result<StopReason, TurnError> {
    let chat_id = request.session_id.clone();
    let (inbox, mut events) = mpsc::unbounded_channel::<ChatEvent>();
    {
        let mut sessions = bridge.sessions();
        let session = sessions
            .get_mut(&chat_id)
            .ok_or_else(|| TurnError::UnknownSession(chat_id.clone()))?;
        if session.turn.is_some() {
            return Err(TurnError::Busy(chat_id));
        }
        session.turn = Some(inbox);
    }
    let _guard = TurnGuard {
        bridge,
        session: chat_id.clone(),
    };
    let posted: PostMessageResponse = bridge
        .client
        .post(
            &format!("/v1/chats/{chat_id}/messages"),
            &PostMessage {
                content: prompt_text(&request.prompt),
                client_message_id: None,
                options: None,
                attachments: Vec::new(),
            },
        )
        .await
        .map_err(daemon_error)?;
    let execution = posted.execution.id;
    let mut turn = Turn {
        bridge: bridge.clone(),
        session: chat_id,
        view: TurnView::default(),
        asked: HashMap::new(),
    };
    while let Some(event) = events.recv().await {
        // Another execution of the chat (a turn started elsewhere) is not this prompt's.
        if event
            .execution_id
            .as_ref()
            .is_some_and(|id| *id != execution)
        {
            continue;
        }
        if let Some(stop) = turn.event(&event.body).await? {
            return Ok(stop);
        }
    }
    Err(TurnError::StreamEnded)
}

/// A running prompt turn, as the editor sees it.
struct Turn {
    bridge: Arc<Bridge>,
    session: String,
    view: TurnView,
    /// Permission requests open in the editor, by approval id: dropping the sender withdraws
    /// the request (so does the turn's end).
    asked: HashMap<String, oneshot::Sender<()>>,
}

impl Turn {
    fn notify(&self, update: SessionUpdate) -> Result<(), TurnError> {
        let notification = SessionNotification {
            session_id: self.session.clone(),
            update,
        };
        Ok(self
            .bridge
            .connection
            .notify(schema::SESSION_UPDATE, &notification)?)
    }

    /// Reports `event`; the stop reason when it ends the turn.
    async fn event(&mut self, event: &ChatEventBody) -> Result<Option<StopReason>, TurnError> {
        for update in self.view.updates(event) {
            self.notify(update)?;
        }
        match event {
            ChatEventBody::ApprovalRequested(requested) => {
                self.ask(&requested.approval_id, &requested.tool_call_id)
                    .await?;
            }
            ChatEventBody::ApprovalDecided(resolved) | ChatEventBody::ApprovalExpired(resolved) => {
                // Decided elsewhere (or by the editor): the open request, if any, is withdrawn.
                self.asked.remove(&resolved.approval_id);
            }
            ChatEventBody::OptionRequested(question) => {
                let text = fill(
                    tr(
                        "\n\nSouz asks: {title} — answer it in the Souz app or web UI.\n\n",
                        "\n\nСоюз спрашивает: {title} — ответьте в приложении Souz или веб-интерфейсе.\n\n",
                    ),
                    &[("title", &question.title)],
                );
                self.notify(SessionUpdate::AgentMessageChunk(ContentChunk {
                    content: ContentBlock::text(text),
                }))?;
            }
            ChatEventBody::ExecutionFailed(failed) => {
                return Err(TurnError::Failed {
                    code: failed.error_code.clone(),
                    message: failed.error_message.clone(),
                });
            }
            _ => {}
        }
        Ok(mapping::stop_reason(event))
    }

    /// Asks the editor about the approval `approval_id`, if it still waits.
    async fn ask(&mut self, approval_id: &str, tool_call_id: &str) -> Result<(), TurnError> {
        let approval: Approval = self
            .bridge
            .client
            .get(&format!("/v1/approvals/{approval_id}"))
            .await
            .map_err(daemon_error)?;
        if approval.status != souz_protocol::ApprovalStatus::Pending {
            return Ok(());
        }
        let request = RequestPermissionRequest {
            session_id: self.session.clone(),
            tool_call: ToolCallUpdate {
                tool_call_id: tool_call_id.to_owned(),
                fields: ToolCallUpdateFields {
                    title: Some(approval.summary.clone()),
                    raw_input: Some(approval.arguments.clone()),
                    ..ToolCallUpdateFields::default()
                },
            },
            options: mapping::permission_options(&approval),
        };
        let sent = self
            .bridge
            .connection
            .request(schema::SESSION_REQUEST_PERMISSION, &request)?;
        let (withdraw, withdrawn) = oneshot::channel();
        self.asked.insert(approval.id.clone(), withdraw);
        let bridge = self.bridge.clone();
        self.bridge.tasks.spawn(async move {
            let id = sent.id;
            tokio::select! {
                answer = sent.answer::<RequestPermissionResponse>() => match answer {
                    Ok(RequestPermissionResponse {
                        outcome: RequestPermissionOutcome::Selected { option_id },
                    }) => {
                        if let Some(decision) = mapping::decision(&approval, &option_id)
                            && let Err(error) = bridge.client.decide(&approval.id, &decision).await
                        {
                            // Decided elsewhere a moment before: that answer stands.
                            eprintln!("souz acp: the decision was not taken: {error}");
                        }
                    }
                    // Cancelled in the editor: the approval stays for the other surfaces.
                    Ok(_) => {}
                    Err(error) => eprintln!("souz acp: no permission answer: {error}"),
                },
                _ = withdrawn => {
                    if let Err(error) = bridge.connection.withdraw(id) {
                        eprintln!("souz acp: cannot withdraw the permission request: {error}");
                    }
                }
            }
        });
        Ok(())
    }
}

/// Cancels the session's running turn.
async fn cancel_turn(bridge: &Bridge, chat_id: &str) -> Result<(), TurnError> {
    let running = bridge
        .sessions()
        .get(chat_id)
        .is_some_and(|session| session.turn.is_some());
    if running {
        let _: Value = bridge
            .client
            .post(
                &format!("/v1/chats/{chat_id}/cancel-active"),
                &serde_json::json!({}),
            )
            .await
            .map_err(daemon_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn requests_decode_or_get_their_json_rpc_error() {
        let error = call("session/load", json!({})).unwrap_err();
        assert_eq!(error.code, rpc::METHOD_NOT_FOUND);
        // A prompt without its session, a session without its folder.
        let error = call(schema::SESSION_PROMPT, json!({"prompt": []})).unwrap_err();
        assert_eq!(error.code, rpc::INVALID_PARAMS);
        let error = call(schema::SESSION_NEW, json!({"mcpServers": []})).unwrap_err();
        assert_eq!(error.code, rpc::INVALID_PARAMS);
        let error = call(schema::INITIALIZE, json!("v1")).unwrap_err();
        assert_eq!(error.code, rpc::INVALID_PARAMS);
        assert!(matches!(
            call(
                schema::INITIALIZE,
                json!({"protocolVersion": 1, "clientCapabilities": {}})
            ),
            Ok(Call::Initialize(_))
        ));
        assert!(matches!(
            call(
                schema::SESSION_PROMPT,
                json!({"sessionId": "c1", "prompt": [{"type": "text", "text": "Hi"}]})
            ),
            Ok(Call::Prompt(_))
        ));
    }

    #[test]
    fn a_busy_or_unknown_session_is_invalid_params_and_a_failure_internal() {
        let busy: RpcError = TurnError::Busy("c1".to_owned()).into();
        assert_eq!(busy.code, rpc::INVALID_PARAMS);
        let failed: RpcError = TurnError::StreamEnded.into();
        assert_eq!(failed.code, rpc::INTERNAL_ERROR);
    }
}
