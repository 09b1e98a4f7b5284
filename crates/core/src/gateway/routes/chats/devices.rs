//! The chat WebSocket in the public client protocol's mode (`clientType` given, original §1.9):
//! the chat's stored events that pass the public filter after `afterSeq`, then live ones; and,
//! only once the replay is done, the device's frames, each answered by its `ack` (and, for an
//! accepted submit or cancel, a `status` frame) before anything it caused. A frame that is not
//! JSON, not an object or of an unknown kind closes the socket with 1008.

use std::pin::pin;

use axum::extract::ws::{Message, WebSocket};
use futures::StreamExt;
use souz_protocol::chat::devices::{
    CLOSE_INTERNAL, CLOSE_POLICY, CLOSE_RESYNC, ClientFrame, FrameError, ServerFrame,
};

use crate::gateway::ws;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::{ChatUser, DeviceAnswer, FollowItem};

/// Closes a socket whose `clientType` Souz does not know.
pub(super) async fn refuse_client_type(socket: WebSocket) {
    ws::close(
        socket,
        CLOSE_POLICY,
        "clientType must be backend or mobile_app.",
    )
    .await;
}

/// Serves one device on the socket of `chat_id` until it leaves, falls behind or the daemon
/// stops.
pub(super) async fn serve(
    mut socket: WebSocket,
    handle: RuntimeHandle,
    user: ChatUser,
    chat_id: String,
    after: i64,
) {
    let shutdown = handle.shutdown_signal();
    let mut items = pin!(handle.follow_chat(&chat_id, after));
    let mut live = false;
    loop {
        tokio::select! {
            biased;
            item = items.next() => match item {
                Some(FollowItem::Event(event)) => match handle.public_event(&event).await {
                    Ok(Some(event)) => {
                        if !send(&mut socket, &ServerFrame::Event(event)).await {
                            return;
                        }
                    }
                    Ok(None) => {}
                    Err(error) => {
                        tracing::error!(%error, "could not read an event for a device");
                        ws::close(socket, CLOSE_INTERNAL, "event replay failed").await;
                        return;
                    }
                },
                Some(FollowItem::Live { .. }) => live = true,
                Some(FollowItem::Resync { .. }) => {
                    ws::close(socket, CLOSE_RESYNC, "fell behind; reconnect with afterSeq").await;
                    return;
                }
                Some(FollowItem::Failed(error)) => {
                    tracing::error!(%error, "event replay failed");
                    ws::close(socket, CLOSE_INTERNAL, "event replay failed").await;
                    return;
                }
                None => {
                    ws::close(socket, CLOSE_INTERNAL, "event stream ended").await;
                    return;
                }
            },
            // Frames wait in the socket until the replay is done.
            incoming = socket.recv(), if live => {
                let text = match incoming {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(_))) => {
                        ws::close(socket, CLOSE_POLICY, "Frames are JSON text.").await;
                        return;
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                };
                let answer = match ClientFrame::decode(text.as_str()) {
                    Ok(frame) => match handle.device_frame(&user, &chat_id, frame).await {
                        Ok(answer) => answer,
                        Err(error) => {
                            tracing::error!(%error, "a device frame failed");
                            ws::close(socket, CLOSE_INTERNAL, "Souz failed").await;
                            return;
                        }
                    },
                    Err(FrameError::Policy(reason)) => {
                        ws::close(socket, CLOSE_POLICY, &reason).await;
                        return;
                    }
                    Err(FrameError::Invalid { kind, keys, message }) => {
                        RuntimeHandle::device_invalid(&chat_id, kind, keys, message)
                    }
                };
                if !answer_frame(&mut socket, answer).await {
                    return;
                }
            },
            () = shutdown.cancelled() => {
                ws::close_for_shutdown(socket).await;
                return;
            }
        }
    }
}

/// Sends the ack, then the status. False when the client is gone.
async fn answer_frame(socket: &mut WebSocket, answer: DeviceAnswer) -> bool {
    let sent = send(socket, &ServerFrame::Ack(answer.ack)).await;
    // A client tool's result reaches its turn only after its ack was sent (or could not be:
    // it is stored either way).
    if let Some(delivery) = answer.delivery {
        delivery.deliver();
    }
    if !sent {
        return false;
    }
    match answer.status {
        Some(status) => send(socket, &ServerFrame::Status(status)).await,
        None => true,
    }
}

/// Sends one frame. False when the client is gone (or the frame cannot be written).
async fn send(socket: &mut WebSocket, frame: &ServerFrame) -> bool {
    match serde_json::to_string(frame) {
        Ok(text) => socket.send(Message::Text(text.into())).await.is_ok(),
        Err(error) => {
            tracing::error!(%error, "could not encode a frame for a device");
            false
        }
    }
}
