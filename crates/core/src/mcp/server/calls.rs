//! `tools/call`: a gate call with the MCP client as the requester, followed until it ends, the
//! client's cancellation, or the approval wait budget.
//!
//! While the call waits for a person (or runs), a client that sent a `progressToken` gets
//! `notifications/progress` every `[mcp] progress_interval_seconds`. Before the budget
//! (`[mcp] approval_wait_seconds`, under Claude Desktop's 60 s limit) a call that still waits
//! answers with a normal result naming the approval, what was asked and how to continue; the
//! call is detached and stays in the person's queue. `AwaitApproval` then waits for it and
//! hands over the original call's result — once: results are marked delivered in the store.
//!
//! A client that cancels (`notifications/cancelled`) or drops the call's response stream while
//! the call is followed withdraws the pending approval. A call made in a session is tied to it
//! ([`sessions`](super::sessions)): the session's end withdraws it, even after it was answered
//! with "waiting for approval".

// MCP logging is deprecated by SEP-2577 (2026-07-28) but is what 2025-era clients speak.
#![allow(deprecated)]

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, LoggingLevel,
    LoggingMessageNotificationParam, MetaObject, Notification, ProgressNotificationParam,
    ProgressToken, ServerJsonRpcMessage, ServerNotification, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use souz_protocol::{Requester, ToolCallStatus, ToolResult};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::sessions::{SessionBook, SessionStream};
use super::{Settings, SouzServer, mcp_error};
use crate::runtime::facade::{
    CallRequest, CallState, ToolProgress, input_schema, parse_arguments, same_requester,
};
use crate::runtime::{RuntimeHandle, ServiceError};

/// The server's own tool that waits for a pending approval and returns the call's result.
pub(crate) const AWAIT_APPROVAL: &str = "AwaitApproval";

/// `_meta` keys on "waiting for approval" results, for clients and tests that want the id
/// without reading the text.
pub(crate) const META_APPROVAL_ID: &str = "souz/approvalId";
/// See [`META_APPROVAL_ID`]: where the call stands (`waiting_approval`, `running`).
pub(crate) const META_STATUS: &str = "souz/status";

/// Arguments of `AwaitApproval`: advertised in snake_case (`approval_id`, `wait_seconds`), the
/// camelCase spellings accepted as well.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AwaitArgs {
    /// The approval id from a "waiting for approval" result.
    #[serde(alias = "approvalId")]
    pub approval_id: String,
    /// How long to wait for the person's decision, in seconds. At most the server's wait
    /// budget (the default); 0 only checks.
    #[serde(default, alias = "waitSeconds")]
    pub wait_seconds: Option<u64>,
}

/// `AwaitApproval` in MCP form.
pub(crate) fn await_approval_tool() -> Tool {
    let schema = match input_schema::<AwaitArgs>() {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(
        AWAIT_APPROVAL,
        "Waits for the person's decision on a Souz call that answered \"waiting for approval\" \
         and returns that call's result once it is approved and has run (each result is \
         returned once). If it is still undecided when the wait ends, it says so again; call \
         it again to keep waiting. A denial comes back as an error result.",
        Arc::new(schema),
    )
    .with_title("Await approval")
    .with_annotations(
        ToolAnnotations::with_title("Await approval")
            .read_only(true)
            .destructive(false)
            .idempotent(false)
            .open_world(false),
    )
}

/// How following a call ended.
enum Followed {
    /// The call is over.
    Final(CallState),
    /// The budget ran out while it waits for a person (or runs after approval).
    Pending(CallState),
    /// The client cancelled.
    Cancelled,
}

/// Where a `tools/call` came from and how to talk back to its client: built from rmcp's request
/// context ([`Caller::in_context`]) or by the [`direct`](super::fast_path::direct) path.
pub(crate) struct Caller<'a> {
    /// The runtime.
    pub handle: &'a RuntimeHandle,
    /// The open sessions, to tie the call to its session.
    pub book: &'a SessionBook,
    /// `[mcp]` settings.
    pub settings: Settings,
    /// What ends following the call early.
    pub stop: Stop,
    /// Where progress and log messages go.
    pub notices: Notices<'a>,
    /// The request's `progressToken`, if it sent one.
    pub progress_token: Option<ProgressToken>,
    /// Whether the client asked for log messages at `info` (`logging/setLevel`).
    pub log_info: bool,
}

impl<'a> Caller<'a> {
    /// A call that came through rmcp.
    pub(crate) fn in_context(
        server: &'a SouzServer,
        context: &'a RequestContext<RoleServer>,
    ) -> Self {
        let session = &server.session;
        let stream = context.extensions.get::<SessionStream>();
        Self {
            handle: &session.handle,
            book: &session.book,
            settings: session.settings,
            stop: Stop {
                request: context.ct.clone(),
                session_id: stream.map(|stream| stream.session_id.clone()),
                gone: stream.map(|stream| stream.gone.clone()),
            },
            notices: Notices::Peer(&context.peer),
            progress_token: context.meta.get_progress_token(),
            log_info: server.wants_log(LoggingLevel::Info),
        }
    }
}

/// Where a call's notifications go.
pub(crate) enum Notices<'a> {
    /// rmcp's peer for the request.
    Peer(&'a Peer<RoleServer>),
    /// A direct answer's own stream, ahead of the result.
    Stream(mpsc::UnboundedSender<ServerJsonRpcMessage>),
}

impl Notices<'_> {
    async fn send(&self, notification: ServerNotification) {
        // A client that went away cannot be told; the call's own cancellation handles that.
        match self {
            Self::Peer(peer) => {
                let _ = peer.send_notification(notification).await;
            }
            Self::Stream(stream) => {
                let _ = stream.send(ServerJsonRpcMessage::notification(notification));
            }
        }
    }

    async fn progress(&self, notification: ProgressNotificationParam) {
        self.send(ServerNotification::ProgressNotification(Notification::new(
            notification,
        )))
        .await;
    }

    async fn log(&self, message: LoggingMessageNotificationParam) {
        self.send(ServerNotification::LoggingMessageNotification(
            Notification::new(message),
        ))
        .await;
    }
}

/// Runs `tools/call`.
pub(crate) async fn call(
    caller: &Caller<'_>,
    request: CallToolRequestParams,
    requester: Requester,
) -> Result<CallToolResult, McpError> {
    let name = request.name.as_ref();
    if name == AWAIT_APPROVAL {
        return Box::pin(await_approval(caller, request.arguments, &requester)).await;
    }
    let stop = &caller.stop;
    // An unknown tool goes to the gate too: it answers with an error result the model can
    // read ("There is no tool named ..."), and the attempt is audited.
    let handle = caller.handle;
    let call = handle
        .start_call(CallRequest {
            tool: name.to_owned(),
            arguments: Value::Object(request.arguments.unwrap_or_default()),
            requester,
        })
        .await
        .map_err(mcp_error)?;
    if let Some(session_id) = &stop.session_id
        && !caller.book.track(session_id, &call.call_id)
    {
        // The session ended while the call started.
        call.cancel();
    }
    let mut state = call.watch();
    let mut progress = Progress::new(caller);
    let deadline = Instant::now() + caller.settings.approval_wait;
    match follow(&mut state, &mut progress, deadline, stop).await {
        Followed::Final(state) => {
            // Only a call that waited for a person can be picked up again with
            // `AwaitApproval` (which needs its approval id); mark such a result delivered.
            if state.approval_id.is_some() {
                Box::pin(deliver(handle, &call.call_id)).await?;
            }
            Ok(final_result(&state))
        }
        Followed::Pending(state) => {
            call.detach();
            Ok(pending_result(name, &state))
        }
        Followed::Cancelled => {
            call.cancel();
            Ok(CallToolResult::error(vec![ContentBlock::text(
                "The call was cancelled; its approval request was withdrawn.",
            )]))
        }
    }
}

/// Runs `AwaitApproval`.
async fn await_approval(
    caller: &Caller<'_>,
    arguments: Option<JsonObject>,
    requester: &Requester,
) -> Result<CallToolResult, McpError> {
    let args: AwaitArgs = match parse_arguments(Value::Object(arguments.unwrap_or_default())) {
        Ok(args) => args,
        Err(error) => return Ok(error_result(error.to_string())),
    };
    let handle = caller.handle;
    let approval = match handle.approval(&args.approval_id).await {
        Ok(approval) => approval,
        Err(ServiceError::NotFound { .. }) => {
            return Ok(error_result(format!(
                "There is no approval with id `{}` in Souz. Use the id from the \"waiting for \
                 approval\" result exactly as given.",
                args.approval_id
            )));
        }
        Err(error) => return Err(mcp_error(error)),
    };
    if !same_requester(&approval.requester, requester) {
        return Ok(error_result(format!(
            "Approval `{}` belongs to a call made by {}; only that client can pick up its result.",
            approval.id, approval.requester_label
        )));
    }
    let budget = caller.settings.approval_wait;
    let wait = args
        .wait_seconds
        .map_or(budget, Duration::from_secs)
        .min(budget);
    let call_id = approval.call_id;
    let state = match handle.watch_call(&call_id) {
        Some(mut receiver) => {
            let mut progress = Progress::new(caller);
            let deadline = Instant::now() + wait;
            match follow(&mut receiver, &mut progress, deadline, &caller.stop).await {
                Followed::Final(state) => state,
                Followed::Pending(state) => {
                    return Ok(pending_result(&approval.tool, &state));
                }
                Followed::Cancelled => {
                    handle.cancel_call(&call_id);
                    return Ok(error_result(
                        "Cancelled; the approval request was withdrawn.".to_owned(),
                    ));
                }
            }
        }
        None => {
            let Some(stored) = handle.tool_call(&call_id).await.map_err(mcp_error)? else {
                return Err(McpError::internal_error(
                    "an approval names a call Souz has no record of",
                    None,
                ));
            };
            if !stored.status.is_final() {
                return Ok(error_result(format!(
                    "The call behind approval `{}` is no longer running in Souz; make the call \
                     again.",
                    approval.id
                )));
            }
            CallState {
                status: stored.status,
                summary: stored.summary,
                approval_id: stored.approval_id,
                result: stored.result,
                progress: None,
            }
        }
    };
    if !handle.mark_delivered(&call_id).await.map_err(mcp_error)? {
        return Ok(error_result(format!(
            "The result of approval `{}` was already returned; each result is returned once.",
            approval.id
        )));
    }
    Ok(final_result(&state))
}

/// What ends following a call early: the client's `notifications/cancelled` (rmcp, or the
/// [`SessionBook`] for a direct answer, cancels `request`), or its response stream dropped
/// before the answer (`gone`, in a session; outside one rmcp cancels the request for that
/// too, and dropping a direct answer drops the call).
pub(crate) struct Stop {
    /// Cancelled when the client cancels the request.
    pub request: CancellationToken,
    /// The session the call was made in.
    pub session_id: Option<String>,
    /// Cancelled when the request's response stream was dropped.
    pub gone: Option<CancellationToken>,
}

impl Stop {
    fn is_cancelled(&self) -> bool {
        self.request.is_cancelled()
            || self
                .gone
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
    }

    async fn cancelled(&self) {
        match &self.gone {
            Some(gone) => tokio::select! {
                () = self.request.cancelled() => {}
                () = gone.cancelled() => {}
            },
            None => self.request.cancelled().await,
        }
    }
}

/// How many turns of the runtime a call is looked at without a timer, before one is set (see
/// [`follow`] and [`direct::Answer::primed`](super::fast_path::direct::Answer::primed)).
pub(crate) const QUICK_TURNS: usize = 3;

/// Follows a call until it is over, the client cancels, or — once a person is involved (the
/// call has an approval) — `deadline` passes. Progress the running tool reports is passed on
/// as it comes.
async fn follow(
    state: &mut watch::Receiver<CallState>,
    progress: &mut Progress<'_>,
    deadline: Instant,
    stop: &Stop,
) -> Followed {
    let interval = progress.interval;
    let settles = |state: &CallState| {
        state.status.is_final()
            || state.status == ToolCallStatus::WaitingApproval
            || state.progress.is_some()
    };
    // A call that needs nobody is usually over within a turn or two of the runtime: look for
    // that first without a timer (registering one for every call wakes the runtime's timer
    // driver, a write and a thread wake-up per call).
    for _ in 0..QUICK_TURNS {
        if stop.is_cancelled() {
            return Followed::Cancelled;
        }
        if settles(&state.borrow()) {
            break;
        }
        tokio::task::yield_now().await;
    }
    let settled = tokio::select! {
        biased;
        () = stop.cancelled() => return Followed::Cancelled,
        settled = state.wait_for(settles) => settled.ok().map(|settled| settled.clone()),
        // A call that runs long without asking anyone gets progress too, from the first
        // interval on.
        () = tokio::time::sleep_until(deadline.min(Instant::now() + interval)) => None,
    };
    let mut current = settled.unwrap_or_else(|| state.borrow().clone());
    loop {
        if current.status.is_final() {
            return Followed::Final(current);
        }
        let now = Instant::now();
        if current.approval_id.is_some() && now >= deadline {
            return Followed::Pending(current);
        }
        if !Box::pin(progress.pass_on(current.progress.as_ref())).await {
            Box::pin(progress.report(&current)).await;
        }
        let slice = if current.approval_id.is_some() {
            interval.min(deadline - now)
        } else {
            interval
        };
        let seen = current.progress.clone();
        let waited = tokio::select! {
            biased;
            () = stop.cancelled() => return Followed::Cancelled,
            waited = tokio::time::timeout(slice, state.wait_for(|state| {
                state.status.is_final() || state.progress != seen
            })) => {
                match waited {
                    Ok(Ok(done)) => Some(done.clone()),
                    _ => None,
                }
            }
        };
        current = waited.unwrap_or_else(|| state.borrow().clone());
    }
}

/// Progress notifications (and, for clients that set a log level, one log message) about a
/// call that waits, and the running tool's own progress passed on.
///
/// Invariant: the values sent under one token only increase. Souz's own notices count 1, 2, …;
/// a tool's reports are sent shifted by the last value sent before its first one (nothing
/// when no notice came first, so a tool allowed without asking keeps its own figures).
struct Progress<'a> {
    notices: &'a Notices<'a>,
    log_info: bool,
    token: Option<ProgressToken>,
    interval: Duration,
    sent: f64,
    /// Set at the tool's first report: what its values are shifted by.
    offset: Option<f64>,
    /// The tool's last report passed on.
    passed: Option<ToolProgress>,
    logged_approval: bool,
}

impl<'a> Progress<'a> {
    fn new(caller: &'a Caller<'a>) -> Self {
        Self {
            notices: &caller.notices,
            log_info: caller.log_info,
            token: caller.progress_token.clone(),
            interval: caller.settings.progress_interval,
            sent: 0.0,
            offset: None,
            passed: None,
            logged_approval: false,
        }
    }

    /// Passes the tool's `report` on when it is new; whether the tool reports progress at all
    /// (then Souz's own "running" notices stop).
    async fn pass_on(&mut self, report: Option<&ToolProgress>) -> bool {
        let Some(report) = report else {
            return self.offset.is_some();
        };
        if self.passed.as_ref() == Some(report) {
            return true;
        }
        self.passed = Some(report.clone());
        let offset = *self.offset.get_or_insert(self.sent);
        let value = offset + report.progress;
        let Some(token) = &self.token else {
            return true;
        };
        if value <= self.sent {
            return true;
        }
        self.sent = value;
        let mut notification = ProgressNotificationParam::new(token.clone(), value);
        notification.total = report.total.map(|total| offset + total);
        notification.message = report.message.clone();
        self.notices.progress(notification).await;
        true
    }

    async fn report(&mut self, state: &CallState) {
        let summary = state.summary.as_deref().unwrap_or("the call");
        let message = match state.status {
            ToolCallStatus::WaitingApproval => {
                format!("Waiting for approval in Souz: {summary}")
            }
            ToolCallStatus::Running => format!("Running in Souz: {summary}"),
            _ => "Souz is checking the call".to_owned(),
        };
        if state.status == ToolCallStatus::WaitingApproval && !self.logged_approval && self.log_info
        {
            self.logged_approval = true;
            let data = json!({
                "message": message,
                "approval_id": state.approval_id,
            });
            self.notices
                .log(
                    LoggingMessageNotificationParam::new(LoggingLevel::Info, data)
                        .with_logger("souz"),
                )
                .await;
        }
        let Some(token) = &self.token else {
            return;
        };
        self.sent = self.sent.floor() + 1.0;
        let notification =
            ProgressNotificationParam::new(token.clone(), self.sent).with_message(message);
        self.notices.progress(notification).await;
    }
}

async fn deliver(handle: &RuntimeHandle, call_id: &str) -> Result<(), McpError> {
    handle
        .mark_delivered(call_id)
        .await
        .map(|_| ())
        .map_err(mcp_error)
}

/// The MCP result of a finished call.
pub(crate) fn final_result(state: &CallState) -> CallToolResult {
    match &state.result {
        Some(result) => tool_result(result),
        None => error_result("The call ended without a result.".to_owned()),
    }
}

/// A gate result in MCP form.
pub(crate) fn tool_result(result: &ToolResult) -> CallToolResult {
    let content = vec![ContentBlock::text(result.text.clone())];
    let mut converted = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    converted.structured_content = result.structured.clone();
    converted
}

/// "Waiting for approval <id>": a normal (non-error) result the model can act on. Clients check
/// that a normal result of a tool with an output schema carries matching structured content,
/// which a notice cannot: that is why [`listing`](super::listing) lists tools that ask
/// without their output schema.
pub(crate) fn pending_result(tool: &str, state: &CallState) -> CallToolResult {
    let id = state.approval_id.as_deref().unwrap_or_default();
    let summary = state.summary.as_deref().unwrap_or(tool);
    let text = if state.status == ToolCallStatus::WaitingApproval {
        format!(
            "Waiting for approval {id} in Souz. The person has not yet decided on: {summary}. \
             Nothing has run. To continue, call the `{AWAIT_APPROVAL}` tool with \
             {{\"approval_id\": \"{id}\"}}: it waits for the decision and returns this call's \
             result once approved. Do not call `{tool}` again for the same thing."
        )
    } else {
        format!(
            "Approved in Souz (approval {id}) and still running: {summary}. To get its result, \
             call the `{AWAIT_APPROVAL}` tool with {{\"approval_id\": \"{id}\"}}."
        )
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    let mut meta = MetaObject::new();
    meta.0
        .insert(META_APPROVAL_ID.to_owned(), Value::String(id.to_owned()));
    meta.0.insert(
        META_STATUS.to_owned(),
        Value::String(state.status.as_str().to_owned()),
    );
    result.meta = Some(meta);
    result
}

fn error_result(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}
