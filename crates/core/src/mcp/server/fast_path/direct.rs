//! Direct answers to `tools/call` in a session (part of the [`fast_path`](super)): the call is followed in the HTTP request's own
//! task, and its SSE response carries the progress and log notices, then the result, without a
//! trip through rmcp's session worker (a channel hop to the worker, one to the service, a
//! spawned handler task and the way back, for every call).
//!
//! rmcp still does everything before the message reaches the session: the Host and Origin
//! checks, the `Accept` and `Content-Type` checks, the session's existence (404), the protocol
//! version headers, and parsing. After that the call takes the same [`calls::call`] as on
//! rmcp's path, with the same requester, so a client cannot tell the two apart, with one
//! difference that fails closed: a direct answer's events carry no id, so a client whose
//! connection drops cannot resume it; dropping it cancels the call, as a dropped stream does
//! on rmcp's path ([`sessions`](super::super::sessions)).
//!
//! A call goes through rmcp instead when:
//! - the tool is served by the embedding binary's [`McpExtension`](super::super::McpExtension)
//!   (tests only);
//! - the [`SessionBook`] does not know the session's client (a session restored, not
//!   initialized, in this process);
//! - rmcp has not seen the session for half of `[mcp] session_idle_minutes`: its worker closes
//!   a session it has not seen for that long, so a session busy with direct calls sends one
//!   through rmcp now and then to stay open;
//! - a direct call of the session with the same request id is still going.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use rmcp::model::{
    CallToolRequest, CallToolResponse, ClientJsonRpcMessage, ClientRequest, GetMeta,
    JsonRpcRequest, LoggingLevel, RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use tokio::sync::mpsc;

use crate::mcp::server::calls::{self, Caller, Notices, Stop};
use crate::mcp::server::sessions::SessionBook;
use crate::mcp::server::{Settings, requester_for, wants};
use crate::runtime::RuntimeHandle;
use crate::token::Credential;

/// Answers `tools/call` in sessions directly when it can.
pub(crate) struct Direct {
    handle: RuntimeHandle,
    settings: Settings,
    /// Tools the embedding binary's extension serves (tests only): they go through rmcp.
    extension_tools: Vec<String>,
}

impl Direct {
    /// Direct answers through `handle`, with `[mcp]` `settings`.
    pub(crate) fn new(handle: RuntimeHandle, settings: Settings) -> Self {
        let extension_tools = handle.mcp_extension().map_or_else(Vec::new, |extension| {
            extension
                .tools()
                .into_iter()
                .map(|tool| tool.name.into_owned())
                .collect()
        });
        Self {
            handle,
            settings,
            extension_tools,
        }
    }

    /// Where `message`, sent in session `session_id`, is answered: here, or by rmcp (the message
    /// handed back) when it is not a `tools/call` this path answers.
    pub(crate) fn route(
        &self,
        book: &Arc<SessionBook>,
        session_id: &str,
        message: ClientJsonRpcMessage,
    ) -> Route {
        let (request_id, progress_token) = match &message {
            ClientJsonRpcMessage::Request(request) => match &request.request {
                ClientRequest::CallToolRequest(call)
                    if !self
                        .extension_tools
                        .iter()
                        .any(|tool| *tool == call.params.name) =>
                {
                    (
                        request.id.clone(),
                        request.request.get_meta().get_progress_token(),
                    )
                }
                _ => return Route::Rmcp(message),
            },
            _ => return Route::Rmcp(message),
        };
        let Some(view) = book
            .view(session_id)
            .filter(|view| view.routed.elapsed() < self.settings.session_idle / 2)
        else {
            return Route::Rmcp(message);
        };
        let Some(cancelled) = book.begin_direct(session_id, &request_id) else {
            return Route::Rmcp(message);
        };
        let following = Following {
            book: Arc::clone(book),
            session_id: session_id.to_owned(),
            request_id,
        };
        let call = match message {
            ClientJsonRpcMessage::Request(JsonRpcRequest {
                request: ClientRequest::CallToolRequest(call),
                ..
            }) => call,
            // Checked above; should it ever differ, rmcp gets the message.
            other => return Route::Rmcp(other),
        };
        let credential = call
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Credential>());
        let requester = requester_for(
            credential,
            Some(view.client.as_ref()),
            session_id.to_owned(),
        );
        let (notices, notes) = mpsc::unbounded_channel();
        let handle = self.handle.clone();
        let settings = self.settings;
        let log_info = wants(view.log_level, LoggingLevel::Info);
        let followed = async move {
            let caller = Caller {
                handle: &handle,
                book: &following.book,
                settings,
                stop: Stop {
                    request: cancelled,
                    session_id: Some(following.session_id.clone()),
                    gone: None,
                },
                notices: Notices::Stream(notices),
                progress_token,
                log_info,
            };
            let CallToolRequest { params, .. } = call;
            let answered = calls::call(&caller, params, requester).await;
            let id = following.request_id.clone();
            match answered {
                Ok(result) => {
                    let mut result = ServerResult::from(CallToolResponse::Complete(result));
                    // What rmcp's handler does for a peer before protocol 2026-07-28, which
                    // every session's peer is (sessions begin with `initialize`).
                    result.strip_result_type_for_legacy_peer();
                    result.strip_non_object_output_for_legacy_peer();
                    ServerJsonRpcMessage::response(result, id)
                }
                Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
            }
        };
        Route::Direct(Answer {
            first: None,
            call: Some(Mutex::new(Box::pin(followed))),
            notes,
            result: None,
        })
    }
}

/// Where a message of a session is answered.
pub(crate) enum Route {
    /// Here: the call's response.
    Direct(Answer),
    /// By rmcp: the message, untouched.
    Rmcp(ClientJsonRpcMessage),
}

/// A direct call's place in the [`SessionBook`], given up when the call is over or dropped.
struct Following {
    book: Arc<SessionBook>,
    session_id: String,
    request_id: RequestId,
}

impl Drop for Following {
    fn drop(&mut self) {
        self.book.end_direct(&self.session_id, &self.request_id);
    }
}

type Followed = Pin<Box<dyn Future<Output = ServerJsonRpcMessage> + Send>>;

/// A direct call's SSE response: its notices as they come, then its result. The call is
/// followed as the response is polled; dropping the response drops the call, which cancels it
/// (and withdraws its approval) unless it was answered.
pub(crate) struct Answer {
    /// The first message, read by [`Answer::primed`].
    first: Option<ServerSseMessage>,
    /// The call being followed; `None` once it gave its result. (In a mutex only to make the
    /// response `Sync`, as rmcp asks; polling takes `&mut` and never locks.)
    call: Option<Mutex<Followed>>,
    /// Notices the call sent, ahead of its result.
    notes: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
    result: Option<ServerJsonRpcMessage>,
}

impl Answer {
    /// The answer, after waiting up to `within` for its first message. Most calls are over in
    /// well under a millisecond: the response's head then goes out with its whole body in one
    /// write, where it would otherwise go out alone while the call runs.
    ///
    /// It looks first without a timer, a few turns of the runtime (the call's follower does
    /// the same): a timer for every call wakes the runtime's timer driver.
    pub(crate) async fn primed(mut self, within: Duration) -> Self {
        for _ in 0..calls::QUICK_TURNS {
            if let Poll::Ready(first) = futures::poll!(self.next()) {
                self.first = first;
                return self;
            }
            tokio::task::yield_now().await;
        }
        if let Ok(first) = tokio::time::timeout(within, self.next()).await {
            self.first = first;
        }
        self
    }
}

impl Stream for Answer {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(first));
        }
        if let Some(call) = &mut this.call {
            let call = call.get_mut().unwrap_or_else(PoisonError::into_inner);
            if let Poll::Ready(result) = call.as_mut().poll(context) {
                // The call's notice sender went with it: the notices left are all there are.
                this.call = None;
                this.result = Some(result);
            }
        }
        if let Poll::Ready(Some(notice)) = this.notes.poll_recv(context) {
            return Poll::Ready(Some(ServerSseMessage::from_message(notice)));
        }
        if this.call.is_some() {
            return Poll::Pending;
        }
        Poll::Ready(this.result.take().map(ServerSseMessage::from_message))
    }
}
