//! MCP sessions and the calls made in them: when a client goes away, what it asked for is
//! withdrawn.
//!
//! [`Sessions`] is rmcp's `LocalSessionManager` with three additions:
//! - Session end — a `DELETE /mcp`, or rmcp closing the session itself (idle timeout, a
//!   transport failure, shutdown) — cancels every call the session started that is not over,
//!   whether its `tools/call` is still answering or was already answered with "waiting for
//!   approval": pending approvals expire as `withdrawn`, and nothing runs. A `DELETE` cancels
//!   before rmcp answers it; a close by rmcp cancels when the session's transport ends.
//! - Each request routed into a session carries a [`SessionStream`] in its extensions: the
//!   session id, and a token cancelled when the request's SSE response is dropped before it
//!   ended (the client closed the connection). rmcp would keep the handler running and cache its
//!   answer for a `Last-Event-ID` resumption; for a call that waits for a person the gate fails
//!   closed instead: `tools/call` treats the dropped stream like `notifications/cancelled`, so
//!   its approval is withdrawn, and a client that resumes reads that the call was cancelled.
//! - `tools/call` is answered [`direct`](super::fast_path::direct)ly, without rmcp's session worker, when
//!   the [`SessionBook`] knows enough of the session; the book also routes the client's
//!   `notifications/cancelled` for such a call to it.
//!
//! Requests outside sessions (protocol 2026-07-28) carry no [`SessionStream`]; rmcp cancels
//! their handler when their response is dropped.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use futures::future::Either;
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions, Implementation,
    LoggingLevel, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::fast_path::direct::{Answer, Direct, Route};
use crate::runtime::RuntimeHandle;

/// The session a request came in on, and whether its response stream is still there.
#[derive(Debug, Clone)]
pub(crate) struct SessionStream {
    /// The session id.
    pub session_id: String,
    /// Cancelled when the request's SSE response was dropped before it ended.
    pub gone: CancellationToken,
}

/// What Souz keeps of each open session: the calls it started (finished ones are pruned as new
/// ones come), and — for [`direct`](super::fast_path::direct) answers — its client, its log level, the
/// requests answered directly that are still going, and when rmcp last saw the session.
pub(crate) struct SessionBook {
    handle: RuntimeHandle,
    open: Mutex<HashMap<String, OpenSession>>,
}

/// One open session in the [`SessionBook`].
struct OpenSession {
    calls: Vec<String>,
    /// Shared with each direct call's view, not copied per call.
    client: Option<Arc<Implementation>>,
    log_level: Option<LoggingLevel>,
    /// Requests answered directly and not over: cancelled by the client's
    /// `notifications/cancelled`.
    direct: HashMap<RequestId, CancellationToken>,
    /// When a message of this session last went through rmcp (whose session worker closes a
    /// session it has not seen for `[mcp] session_idle_minutes`).
    routed: Instant,
}

/// What a direct answer needs to know of its session.
pub(crate) struct SessionView {
    /// The client, from the session's `initialize`.
    pub client: Arc<Implementation>,
    /// The log level the client set, if it did.
    pub log_level: Option<LoggingLevel>,
    /// When rmcp last saw the session.
    pub routed: Instant,
}

impl SessionBook {
    /// No sessions yet; calls are cancelled through `handle`.
    pub(crate) fn new(handle: RuntimeHandle) -> Self {
        Self {
            handle,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<String, OpenSession>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A session started.
    pub(crate) fn opened(&self, session_id: &str) {
        self.open()
            .entry(session_id.to_owned())
            .or_insert_with(|| OpenSession {
                calls: Vec::new(),
                client: None,
                log_level: None,
                direct: HashMap::new(),
                routed: Instant::now(),
            });
    }

    /// The session's client introduced itself (`initialize`).
    pub(crate) fn introduced(&self, session_id: &str, client: Implementation) {
        if let Some(session) = self.open().get_mut(session_id) {
            session.client = Some(Arc::new(client));
        }
    }

    /// The session's client set its log level (`logging/setLevel`).
    pub(crate) fn set_log_level(&self, session_id: &str, level: LoggingLevel) {
        if let Some(session) = self.open().get_mut(session_id) {
            session.log_level = Some(level);
        }
    }

    /// A message of the session goes through rmcp.
    pub(crate) fn routed(&self, session_id: &str) {
        if let Some(session) = self.open().get_mut(session_id) {
            session.routed = Instant::now();
        }
    }

    /// What a direct answer needs of the session; `None` when it is not open or its client has
    /// not introduced itself.
    pub(crate) fn view(&self, session_id: &str) -> Option<SessionView> {
        let open = self.open();
        let session = open.get(session_id)?;
        Some(SessionView {
            client: session.client.clone()?,
            log_level: session.log_level,
            routed: session.routed,
        })
    }

    /// Starts following a request answered directly: the token is cancelled by the client's
    /// `notifications/cancelled` for it. `None` when the session is not open or already has a
    /// request with that id going.
    pub(crate) fn begin_direct(
        &self,
        session_id: &str,
        request_id: &RequestId,
    ) -> Option<CancellationToken> {
        let mut open = self.open();
        let session = open.get_mut(session_id)?;
        if session.direct.contains_key(request_id) {
            return None;
        }
        let token = CancellationToken::new();
        session.direct.insert(request_id.clone(), token.clone());
        Some(token)
    }

    /// A request answered directly is over.
    pub(crate) fn end_direct(&self, session_id: &str, request_id: &RequestId) {
        if let Some(session) = self.open().get_mut(session_id) {
            session.direct.remove(request_id);
        }
    }

    /// The client cancelled `request_id`: `true` when it was answered directly (and is now
    /// cancelled), `false` when it is rmcp's to cancel.
    pub(crate) fn cancel_direct(&self, session_id: &str, request_id: &RequestId) -> bool {
        let open = self.open();
        let token = open
            .get(session_id)
            .and_then(|session| session.direct.get(request_id));
        match token {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Ties a call to its session. `false` when the session is not open (it ended while the
    /// call started): the caller must cancel the call.
    pub(crate) fn track(&self, session_id: &str, call_id: &str) -> bool {
        let mut open = self.open();
        let Some(session) = open.get_mut(session_id) else {
            return false;
        };
        self.handle.retain_running_calls(&mut session.calls);
        session.calls.push(call_id.to_owned());
        true
    }

    /// The session ended: cancels each of its calls still going, and each request answered
    /// directly. Returns how many calls were cancelled.
    pub(crate) fn end(&self, session_id: &str) -> usize {
        let Some(session) = self.open().remove(session_id) else {
            return 0;
        };
        for token in session.direct.values() {
            token.cancel();
        }
        let cancelled = session
            .calls
            .iter()
            .filter(|call_id| self.handle.cancel_call(call_id))
            .count();
        if cancelled > 0 {
            tracing::info!(
                session = session_id,
                calls = cancelled,
                "MCP session ended; its calls were withdrawn"
            );
        }
        cancelled
    }
}

/// How long a direct answer may hold its response's head back for its first message.
const PRIME_DIRECT: Duration = Duration::from_millis(5);

/// rmcp's in-memory session manager, with session ends and dropped streams reported, and
/// `tools/call` answered [`direct`](super::fast_path::direct)ly when it can be.
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    book: Arc<SessionBook>,
    /// `None`: every message goes through rmcp (the fast path is off).
    direct: Option<Direct>,
}

impl Sessions {
    /// Wraps `inner`; session ends cancel calls tracked in `book`; `direct` answers calls.
    pub(crate) fn new(
        inner: LocalSessionManager,
        book: Arc<SessionBook>,
        direct: Option<Direct>,
    ) -> Self {
        Self {
            inner,
            book,
            direct,
        }
    }

    /// What rmcp's `create_stream` does with `message` in session `id` when [`Direct`] answers
    /// it, for a message the [`shortcut`](super::fast_path::shortcut) brought past rmcp: the answer, or
    /// the message handed back (rmcp does not have the session, or [`Direct`] leaves the
    /// message to rmcp).
    pub(crate) async fn answer_directly(
        &self,
        id: &str,
        message: ClientJsonRpcMessage,
    ) -> Result<Answer, ClientJsonRpcMessage> {
        if !self
            .inner
            .has_session(&SessionId::from(id))
            .await
            .unwrap_or(false)
        {
            return Err(message);
        }
        match self.route(id, message) {
            Route::Direct(answer) => Ok(answer.primed(PRIME_DIRECT).await),
            Route::Rmcp(message) => Err(message),
        }
    }

    /// Where `message` of session `id` is answered: directly, or by rmcp.
    fn route(&self, id: &str, message: ClientJsonRpcMessage) -> Route {
        match &self.direct {
            Some(direct) => direct.route(&self.book, id, message),
            None => Route::Rmcp(message),
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = Ending<<LocalSessionManager as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.book.opened(&id);
        let transport = Ending::new(transport, Arc::clone(&self.book), id.to_string());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let client = match &message {
            ClientJsonRpcMessage::Request(request) => match &request.request {
                ClientRequest::InitializeRequest(initialize) => {
                    Some(initialize.params.client_info.clone())
                }
                _ => None,
            },
            _ => None,
        };
        let answer = self.inner.initialize_session(id, message).await?;
        if let Some(client) = client {
            self.book.introduced(id, client);
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        // Before rmcp answers the DELETE: once the client hears the session is gone, nothing
        // it asked for can still be approved into running.
        self.book.end(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let mut message = match self.route(id, message) {
            Route::Direct(answer) => return Ok(Either::Left(answer.primed(PRIME_DIRECT).await)),
            Route::Rmcp(message) => message,
        };
        let gone = CancellationToken::new();
        if let ClientJsonRpcMessage::Request(request) = &mut message {
            request.request.extensions_mut().insert(SessionStream {
                session_id: id.to_string(),
                gone: gone.clone(),
            });
        }
        self.book.routed(id);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(Either::Right(Answered {
            inner: Box::pin(stream),
            unanswered: Some(gone.drop_guard()),
        }))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        if let ClientJsonRpcMessage::Notification(notification) = &message
            && let ClientNotification::CancelledNotification(cancelled) = &notification.notification
            && let Some(request_id) = &cancelled.params.request_id
            && self.book.cancel_direct(id, request_id)
        {
            return Ok(());
        }
        self.book.routed(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.book.routed(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.book.routed(id);
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // Souz keeps no session store, so nothing is restored; should that change, a restored
        // session is watched like a new one.
        let name = id.to_string();
        Ok(match self.inner.restore_session(id).await? {
            RestoreOutcome::Restored(transport) => {
                self.book.opened(&name);
                RestoreOutcome::Restored(Ending::new(transport, Arc::clone(&self.book), name))
            }
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            _ => RestoreOutcome::NotSupported,
        })
    }
}

/// A request's SSE response: dropped before its end, it cancels the request's
/// [`SessionStream::gone`].
struct Answered<S> {
    inner: Pin<Box<S>>,
    unanswered: Option<DropGuard>,
}

impl<S: Stream> Stream for Answered<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let polled = this.inner.as_mut().poll_next(context);
        if let Poll::Ready(None) = polled
            && let Some(guard) = this.unanswered.take()
        {
            // The stream ended: the answer was sent.
            guard.disarm();
        }
        polled
    }
}

/// A session's transport that ends the session's calls when it closes: when rmcp's session
/// worker stops (the transport yields nothing more), is closed, or is dropped.
pub(crate) struct Ending<T> {
    inner: T,
    book: Arc<SessionBook>,
    session_id: Option<String>,
}

impl<T> Ending<T> {
    fn new(inner: T, book: Arc<SessionBook>, session_id: String) -> Self {
        Self {
            inner,
            book,
            session_id: Some(session_id),
        }
    }

    fn end(&mut self) {
        if let Some(session_id) = self.session_id.take() {
            self.book.end(&session_id);
        }
    }
}

impl<T> Drop for Ending<T> {
    fn drop(&mut self) {
        self.end();
    }
}

impl<T> Transport<RoleServer> for Ending<T>
where
    T: Transport<RoleServer>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.inner.receive().await;
        if message.is_none() {
            self.end();
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.end();
        self.inner.close().await
    }
}
