//! `souz acp`: the Agent Client Protocol over stdio, so an editor (Zed and others) can use
//! Souz's agents. An ACP session is a Souz chat; a prompt turn is a message posted to it, its
//! answer streamed back as `agent_message_chunk` updates and its tool calls reported as
//! `tool_call` / `tool_call_update`; every approval the gate needs in that chat is asked as
//! ACP's `session/request_permission`; `session/cancel` cancels the chat's running turn.
//!
//! Invariants:
//! - It forwards to the RUNNING daemon and starts nothing of its own: it connects like every
//!   CLI client ([`crate::texts::connect`]: `daemon.json`, the token, the daemon's identity
//!   proof before the token is sent), and when the daemon is not running it says so on stderr
//!   and exits with a failure before it reads a single frame.
//! - stdout carries ACP frames only (the SDK's stdio transport writes them); logs and errors go
//!   to stderr.
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

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, Implementation,
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, SessionId,
    SessionNotification, SessionUpdate, StopReason, TextContent, ToolCallUpdate,
    ToolCallUpdateFields,
};
use agent_client_protocol::{Agent, Client, Stdio};
use souz_client::{DaemonClient, EventStream, Reconnect, StreamItem};
use souz_protocol::Approval;
use souz_protocol::chat::{
    ChatEvent, ChatEventBody, CreateChat, CreateChatResponse, PostMessage, PostMessageResponse,
};
use tokio::sync::{mpsc, oneshot, watch};

use crate::texts::{fill, tr};
use mapping::TurnView;

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
    #[error("{0}")]
    Acp(String),
}

impl From<TurnError> for agent_client_protocol::Error {
    fn from(error: TurnError) -> Self {
        let base = match error {
            TurnError::UnknownSession(_) | TurnError::Busy(_) => Self::invalid_params(),
            _ => Self::internal_error(),
        };
        base.data(serde_json::Value::String(error.to_string()))
    }
}

fn daemon_error(error: impl std::fmt::Display) -> TurnError {
    TurnError::Daemon(error.to_string())
}

/// One ACP session: a Souz chat, and the running turn's event inbox.
#[derive(Default)]
struct Session {
    turn: Option<mpsc::UnboundedSender<ChatEvent>>,
}

/// The bridge's state, shared by the ACP handlers and the event follower.
struct Bridge {
    client: DaemonClient,
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
}

/// Runs the ACP agent on stdio until the editor closes it.
pub async fn run() -> anyhow::Result<ExitCode> {
    let client = crate::texts::connect().await?.named("acp");
    let bridge = Arc::new(Bridge {
        client,
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
    let on_initialize = bridge.clone();
    let on_new_session = bridge.clone();
    let on_prompt = bridge.clone();
    let on_cancel = bridge.clone();
    Agent
        .v1()
        .name("souz")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _connection| {
                if let Some(info) = &request.client_info {
                    let name = info.title.clone().unwrap_or_else(|| info.name.clone());
                    *on_initialize
                        .editor
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(name);
                }
                // The stable protocol, whatever newer draft the editor offers.
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(AgentCapabilities::new())
                        .agent_info(Implementation::new("souz", env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, _connection| match new_session(
                &on_new_session,
                &request,
            )
            .await
            {
                Ok(id) => responder.respond(NewSessionResponse::new(id)),
                Err(error) => responder.respond_with_error(error.into()),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, connection: ConnectionTo<Client>| {
                let bridge = on_prompt.clone();
                let turn_connection = connection.clone();
                // The turn waits for later frames (permission answers): off the dispatch loop.
                connection.spawn(async move {
                    match prompt(&bridge, &turn_connection, request).await {
                        Ok(stop) => responder.respond(PromptResponse::new(stop)),
                        Err(error) => responder.respond_with_error(error.into()),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |cancel: CancelNotification, connection: ConnectionTo<Client>| {
                let bridge = on_cancel.clone();
                connection.spawn(async move {
                    if let Err(error) = cancel_turn(&bridge, &cancel.session_id.0).await {
                        eprintln!("souz acp: cannot cancel the turn: {error}");
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
        .map_err(|error| anyhow::anyhow!("the ACP connection failed: {error}"))?;
    Ok(ExitCode::SUCCESS)
}

/// Follows the person's chats' events, routing each to its session; the receiver says when
/// the stream is live.
fn follow(bridge: &Arc<Bridge>) -> watch::Receiver<bool> {
    let (live_sender, live) = watch::channel(false);
    let bridge = bridge.clone();
    #[allow(
        clippy::disallowed_methods,
        reason = "the bridge's event follower: it lives as long as the process"
    )]
    tokio::spawn(async move {
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
            _ => {}
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
async fn prompt(
    bridge: &Arc<Bridge>,
    connection: &ConnectionTo<Client>,
    request: PromptRequest,
) -> Result<StopReason, TurnError> {
    let chat_id = request.session_id.0.to_string();
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
        connection: connection.clone(),
        session: request.session_id.clone(),
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
    connection: ConnectionTo<Client>,
    session: SessionId,
    view: TurnView,
    /// Permission requests open in the editor, by approval id: dropping the sender withdraws
    /// the request.
    asked: HashMap<String, oneshot::Sender<()>>,
}

impl Turn {
    fn notify(&self, update: SessionUpdate) -> Result<(), TurnError> {
        self.connection
            .send_notification(SessionNotification::new(self.session.clone(), update))
            .map_err(|error| TurnError::Acp(error.to_string()))
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
                self.notify(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                    ContentBlock::Text(TextContent::new(text)),
                )))?;
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
        let (withdraw, withdrawn) = oneshot::channel();
        self.asked.insert(approval.id.clone(), withdraw);
        let request = RequestPermissionRequest::new(
            self.session.clone(),
            ToolCallUpdate::new(
                tool_call_id.to_owned(),
                ToolCallUpdateFields::new()
                    .title(approval.summary.clone())
                    .raw_input(approval.arguments.clone()),
            ),
            mapping::permission_options(&approval),
        );
        let client = self.bridge.client.clone();
        let connection = self.connection.clone();
        self.connection
            .spawn(async move {
                let sent = connection.send_request(request);
                let cancellation = sent.cancellation_handle();
                tokio::select! {
                    answer = sent.block_task() => match answer {
                        Ok(answer) => {
                            if let RequestPermissionOutcome::Selected(selected) = answer.outcome
                                && let Some(decision) =
                                    mapping::decision(&approval, &selected.option_id.0)
                                && let Err(error) = client.decide(&approval.id, &decision).await
                            {
                                // Decided elsewhere a moment before: that answer stands.
                                eprintln!("souz acp: the decision was not taken: {error}");
                            }
                        }
                        Err(error) => eprintln!("souz acp: no permission answer: {error}"),
                    },
                    _ = withdrawn => {
                        let _ = cancellation.cancel();
                    }
                }
                Ok(())
            })
            .map_err(|error| TurnError::Acp(error.to_string()))
    }
}

/// Cancels the session's running turn.
async fn cancel_turn(bridge: &Bridge, chat_id: &str) -> Result<(), TurnError> {
    let running = bridge
        .sessions()
        .get(chat_id)
        .is_some_and(|session| session.turn.is_some());
    if running {
        let _: serde_json::Value = bridge
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
