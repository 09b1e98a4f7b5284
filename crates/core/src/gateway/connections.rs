//! The accept loop: every connection the gateway serves holds one of `[server]
//! max_connections` permits for as long as its socket is open (an upgraded WebSocket or a
//! long MCP stream included), and must send each request's headers within `[server]
//! header_read_timeout_seconds`.
//!
//! Over the cap a connection is not queued: it gets an immediate `503` with the API's error
//! body (code `unavailable`) and is closed, so a flood of idle sockets cannot hold the daemon
//! hostage and a client learns why at once. A slow or silent client (slowloris) is dropped
//! when its header timer runs out, which gives its permit back.
//!
//! On shutdown the loop stops accepting, tells every connection to finish its request and
//! close, and returns once all have closed (the caller bounds that wait).

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use souz_protocol::{ErrorBody, ErrorCode};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// The bounds on connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Time to send a request's headers.
    pub header_read_timeout: Duration,
}

/// Serves `app` on `listener` within `limits` until `stop` completes, then drains.
pub(crate) async fn serve(
    listener: Arc<TcpListener>,
    app: Router,
    limits: ConnectionLimits,
    stop: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let (stopping, stop_seen) = watch::channel(false);
    let (open_tx, open) = watch::channel(());
    let mut stop = pin!(stop);
    loop {
        let (stream, _remote) = tokio::select! {
            // The stop comes first: a loaded listener must not keep a stop from being seen.
            biased;
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    tracing::warn!(%error, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Answers (SSE events, WebSocket frames) go out in small writes; with Nagle's algorithm
        // each would wait for the client's delayed ACK (about 40 ms on Linux).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            tracing::warn!(
                max = limits.max_connections,
                "connection refused: [server] max_connections reached"
            );
            #[allow(
                clippy::disallowed_methods,
                reason = "answers one refused connection with 503 and closes it; bounded by the connection"
            )]
            tokio::spawn(refuse(stream, limits.max_connections));
            continue;
        };
        let stream = Counted {
            stream,
            _permit: permit,
        };
        let connection = serve_connection(stream, app.clone(), limits, stop_seen.clone());
        let open = open.clone();
        #[allow(
            clippy::disallowed_methods,
            reason = "one connection, owned by the server loop: it drains on the stop signal and the loop waits for every open connection before serve() returns"
        )]
        tokio::spawn(async move {
            connection.await;
            drop(open);
        });
    }
    drop(listener);
    let _ = stopping.send(true);
    drop(open);
    open_tx.closed().await;
}

async fn serve_connection(
    stream: Counted,
    app: Router,
    limits: ConnectionLimits,
    mut stopping: watch::Receiver<bool>,
) {
    // HTTP/1 only: telling HTTP/2 apart first would wait for a silent client's first bytes
    // with no timer at all. Every client of the daemon (CLI, MCP clients, browsers over plain
    // http://) speaks HTTP/1.1.
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let service = TowerToHyperService::new(app);
    let mut connection = pin!(
        builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades()
    );
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::trace!(%error, "connection ended with an error");
            }
        }
        () = async {
            // Dropped at once: the guard it returns must not live across the drain below.
            let _ = stopping.wait_for(|stopping| *stopping).await;
        } => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// Answers a connection over the cap with 503 and closes it.
async fn refuse(mut stream: TcpStream, max: usize) {
    let body = serde_json::to_string(&ErrorBody::new(
        ErrorCode::Unavailable,
        format!(
            "Souz is serving its maximum of {max} connections ([server] max_connections); \
             close some and try again."
        ),
    ))
    .unwrap_or_default();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    };
    // The refused client gets a moment to take the answer, not more.
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// A socket holding a connection permit until it is dropped (which an upgraded WebSocket
/// does only when it closes).
struct Counted {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
