//! WebSocket plumbing the gateway's live streams share (`WS /v1/events`,
//! `WS /v1/chats/{chatId}/ws`, `WS /v1/turns/ws`): the error for a request that is not an
//! upgrade, the close codes and the clean close handshake, and the loop that pumps a
//! replay-then-live follower into a socket.

use std::pin::pin;
use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::gateway::error::ApiError;
use crate::runtime::facade::FollowItem;

/// Close code sent when a follower fell behind and must reconnect.
pub(super) const CLOSE_RESYNC: u16 = 4000;
/// Close code sent when the daemon stops.
const CLOSE_GOING_AWAY: u16 = 1001;
/// Close code sent when reading stored events failed.
const CLOSE_INTERNAL: u16 = 1011;
/// How long to wait for the client's close frame.
const CLOSE_HANDSHAKE: Duration = Duration::from_secs(2);

/// Bytes a socket reads at a time. Clients send small frames (a device's submit, a close), and
/// tungstenite allocates (and zero-fills) this buffer for every socket as it opens: its default
/// of 128 KiB made each idle socket cost about 158 KiB; a larger frame still arrives whole
/// (the buffer grows for it and is read in several reads).
const READ_BUFFER: usize = 4 << 10;

/// The largest message (and frame) a client may send on these sockets: a device's submit or
/// tool result is text and a small JSON object, and tungstenite's own limit (64 MiB a message)
/// would let one socket make the daemon hold and parse that much. A larger one ends the socket.
pub(super) const MAX_MESSAGE: usize = 1 << 20;

/// The upgrade, or a 400 `invalid_request` that says why the request is not one.
pub(super) fn upgrade(
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<WebSocketUpgrade, ApiError> {
    upgrade
        .map(|upgrade| {
            upgrade
                .read_buffer_size(READ_BUFFER)
                .max_message_size(MAX_MESSAGE)
                .max_frame_size(MAX_MESSAGE)
        })
        .map_err(|rejection| {
            ApiError::invalid(format!(
                "WebSocket upgrade required: {}",
                rejection.body_text()
            ))
        })
}

/// Whether what the client sent means it is gone: a close frame, an error or the end of the
/// connection. Anything else a client sends on these streams is ignored.
pub(super) fn client_left(incoming: &Option<Result<Message, axum::Error>>) -> bool {
    matches!(incoming, Some(Ok(Message::Close(_)) | Err(_)) | None)
}

/// Sends a close frame and waits (briefly) for the client's answer, so the TCP connection
/// ends cleanly instead of with a reset.
pub(super) async fn close(mut socket: WebSocket, code: u16, reason: &str) {
    // A close frame's reason is at most 123 bytes.
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let frame = CloseFrame {
        code,
        reason: reason[..end].to_owned().into(),
    };
    if socket.send(Message::Close(Some(frame))).await.is_err() {
        return;
    }
    let _ = tokio::time::timeout(CLOSE_HANDSHAKE, async {
        while let Some(Ok(message)) = socket.recv().await {
            if matches!(message, Message::Close(_)) {
                break;
            }
        }
    })
    .await;
}

/// Closes the socket because the daemon is stopping.
pub(super) async fn close_for_shutdown(socket: WebSocket) {
    close(socket, CLOSE_GOING_AWAY, "Souz is shutting down").await;
}

/// What a follower hands to the socket, for a stream to encode as one text frame.
pub(super) enum Outgoing<'a, E> {
    /// A stored or live event.
    Event(&'a E),
    /// Replay is complete; what follows is live.
    Live {
        /// The last sequence number delivered so far.
        last_seq: i64,
    },
    /// The follower fell behind; the socket is closed with [`CLOSE_RESYNC`] after this frame.
    Resync {
        /// The last sequence number delivered.
        last_seq: i64,
    },
}

/// Pumps `items` into the socket until the follower ends, the client leaves, the daemon stops
/// or the follower falls behind (the resync frame, then close code 4000 with `resync_reason`).
/// `encode` turns each item into a text frame; `None` (it cannot be encoded) ends the stream.
/// A failed replay is logged and closes the socket with 1011.
pub(super) async fn follow<E>(
    mut socket: WebSocket,
    shutdown: CancellationToken,
    items: impl Stream<Item = FollowItem<E>>,
    encode: impl Fn(Outgoing<'_, E>) -> Option<String>,
    resync_reason: &'static str,
) {
    let mut items = pin!(items);
    loop {
        // Biased: an event that is already stored (such as `daemon.stopping`) is delivered
        // before the shutdown closes the socket.
        tokio::select! {
            biased;
            item = items.next() => {
                let Some(item) = item else {
                    // The live channel closed under the follower: end cleanly, not with a reset.
                    close(socket, CLOSE_INTERNAL, "event stream ended").await;
                    return;
                };
                let (frame, resync) = match &item {
                    FollowItem::Event(event) => (encode(Outgoing::Event(event)), false),
                    FollowItem::Live { last_seq } => {
                        (encode(Outgoing::Live { last_seq: *last_seq }), false)
                    }
                    FollowItem::Resync { last_seq } => {
                        (encode(Outgoing::Resync { last_seq: *last_seq }), true)
                    }
                    FollowItem::Failed(error) => {
                        tracing::error!(%error, "event replay failed");
                        close(socket, CLOSE_INTERNAL, "event replay failed").await;
                        return;
                    }
                };
                let Some(frame) = frame else { return };
                if socket.send(Message::Text(frame.into())).await.is_err() {
                    return;
                }
                if resync {
                    close(socket, CLOSE_RESYNC, resync_reason).await;
                    return;
                }
            }
            incoming = socket.recv() => if client_left(&incoming) {
                return;
            },
            () = shutdown.cancelled() => {
                close_for_shutdown(socket).await;
                return;
            }
        }
    }
}
