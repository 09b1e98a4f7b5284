//! MCP sessions and the calls made in them: when a client goes away, what it asked for is
//! withdrawn.
//!
//! [`Sessions`] is rmcp's `LocalSessionManager` with two additions:
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
//!
//! Requests outside sessions (protocol 2026-07-28) carry no [`SessionStream`]; rmcp cancels
//! their handler when their response is dropped.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::Stream;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::runtime::RuntimeHandle;

/// The session a request came in on, and whether its response stream is still there.
#[derive(Debug, Clone)]
pub(crate) struct SessionStream {
    /// The session id.
    pub session_id: String,
    /// Cancelled when the request's SSE response was dropped before it ended.
    pub gone: CancellationToken,
}

/// The calls each open session started (call ids; finished ones are pruned as new ones come).
pub(crate) struct SessionCalls {
    handle: RuntimeHandle,
    open: Mutex<HashMap<String, Vec<String>>>,
}

impl SessionCalls {
    /// No sessions yet; calls are cancelled through `handle`.
    pub(crate) fn new(handle: RuntimeHandle) -> Self {
        Self {
            handle,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<String>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A session started.
    pub(crate) fn opened(&self, session_id: &str) {
        self.open().entry(session_id.to_owned()).or_default();
    }

    /// Ties a call to its session. `false` when the session is not open (it ended while the
    /// call started): the caller must cancel the call.
    pub(crate) fn track(&self, session_id: &str, call_id: &str) -> bool {
        let mut open = self.open();
        let Some(calls) = open.get_mut(session_id) else {
            return false;
        };
        calls.retain(|id| self.handle.watch_call(id).is_some());
        calls.push(call_id.to_owned());
        true
    }

    /// The session ended: cancels each of its calls still going. Returns how many were.
    pub(crate) fn end(&self, session_id: &str) -> usize {
        let calls = self.open().remove(session_id).unwrap_or_default();
        let cancelled = calls
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

/// rmcp's in-memory session manager, with session ends and dropped streams reported.
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    calls: Arc<SessionCalls>,
}

impl Sessions {
    /// Wraps `inner`; session ends cancel calls tracked in `calls`.
    pub(crate) fn new(inner: LocalSessionManager, calls: Arc<SessionCalls>) -> Self {
        Self { inner, calls }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = Ending<<LocalSessionManager as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.calls.opened(&id);
        let transport = Ending::new(transport, Arc::clone(&self.calls), id.to_string());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        // Before rmcp answers the DELETE: once the client hears the session is gone, nothing
        // it asked for can still be approved into running.
        self.calls.end(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let gone = CancellationToken::new();
        if let ClientJsonRpcMessage::Request(request) = &mut message {
            request.request.extensions_mut().insert(SessionStream {
                session_id: id.to_string(),
                gone: gone.clone(),
            });
        }
        let stream = self.inner.create_stream(id, message).await?;
        Ok(Answered {
            inner: Box::pin(stream),
            unanswered: Some(gone.drop_guard()),
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
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
                self.calls.opened(&name);
                RestoreOutcome::Restored(Ending::new(transport, Arc::clone(&self.calls), name))
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
    calls: Arc<SessionCalls>,
    session_id: Option<String>,
}

impl<T> Ending<T> {
    fn new(inner: T, calls: Arc<SessionCalls>, session_id: String) -> Self {
        Self {
            inner,
            calls,
            session_id: Some(session_id),
        }
    }

    fn end(&mut self) {
        if let Some(session_id) = self.session_id.take() {
            self.calls.end(&session_id);
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
