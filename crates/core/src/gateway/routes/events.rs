//! `WS /v1/events`: durable runtime events, replayed from a sequence number and then live. The
//! daemon's own stream (every chat's approvals included): an operator route.

use std::pin::pin;

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::EventEnvelope;
use souz_protocol::event::StreamControl;

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiQuery;
use crate::gateway::identity::Operator;
use crate::runtime::{FollowItem, RuntimeHandle};

/// Close code sent when a follower fell behind and must reconnect.
const CLOSE_RESYNC: u16 = 4000;
/// How long to wait for the client's close frame.
const CLOSE_HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(2);

/// Query of `WS /v1/events`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EventsQuery {
    /// Replay stored events with a sequence number greater than this, then follow live.
    /// Default 0: everything stored.
    pub after_seq: Option<i64>,
    /// `true`: replay nothing, start after the latest stored event (for clients that load the
    /// current state through the API first). Cannot be combined with `after_seq`.
    pub tail: Option<bool>,
}

/// A frame on `WS /v1/events`: either a stored event or a stream control message.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum EventFrame {
    Event(Box<EventEnvelope>),
    Control(StreamControl),
}

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default().route(
        Operation::get("/v1/events")
            .summary("Follow runtime events over a WebSocket.")
            .description(
                "Replays stored events after `after_seq`, sends `{\"type\":\"live\"}`, then \
                 streams new events as they are stored. A client that falls behind gets \
                 `{\"type\":\"resync\",\"last_seq\":N}` and close code 4000; reconnect with \
                 `after_seq=N`.",
            )
            .tag("events")
            .operator()
            .query::<EventsQuery>()
            .websocket::<EventFrame>(),
        events,
    )
}

async fn events(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let upgrade = upgrade.map_err(|rejection| {
        ApiError::invalid(format!(
            "WebSocket upgrade required: {}",
            rejection.body_text()
        ))
    })?;
    let after_seq = match (query.after_seq, query.tail) {
        (Some(_), Some(true)) => {
            return Err(ApiError::invalid(
                "give either after_seq or tail=true, not both",
            ));
        }
        (_, Some(true)) => handle.events().last_seq().await?,
        (after_seq, _) => after_seq.unwrap_or(0),
    };
    if after_seq < 0 {
        return Err(ApiError::invalid("after_seq must be 0 or more"));
    }
    Ok(upgrade.on_upgrade(move |socket| follow(socket, handle, after_seq)))
}

async fn follow(mut socket: WebSocket, handle: RuntimeHandle, after_seq: i64) {
    let shutdown = handle.shutdown_signal();
    let mut items = pin!(handle.events().follow(after_seq));
    loop {
        // Biased: an event that is already stored (such as `daemon.stopping`) is delivered
        // before the shutdown closes the socket.
        tokio::select! {
            biased;
            item = items.next() => {
                let Some(item) = item else { return };
                let (frame, resync) = match item {
                    FollowItem::Event(envelope) => (serde_json::to_string(&*envelope), false),
                    FollowItem::Live { last_seq } => (serde_json::to_string(&StreamControl::Live { last_seq }), false),
                    FollowItem::Resync { last_seq } => (serde_json::to_string(&StreamControl::Resync { last_seq }), true),
                    FollowItem::Failed(error) => {
                        tracing::error!(%error, "event replay failed");
                        close(socket, 1011, "event replay failed").await;
                        return;
                    }
                };
                let Ok(frame) = frame else { return };
                if socket.send(Message::Text(frame.into())).await.is_err() {
                    return;
                }
                if resync {
                    close(socket, CLOSE_RESYNC, "fell behind; reconnect with after_seq").await;
                    return;
                }
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
            () = shutdown.cancelled() => {
                close(socket, 1001, "Souz is shutting down").await;
                return;
            }
        }
    }
}

/// Sends a close frame and waits (briefly) for the client's answer, so the TCP connection
/// ends cleanly instead of with a reset.
async fn close(mut socket: WebSocket, code: u16, reason: &'static str) {
    let frame = CloseFrame {
        code,
        reason: reason.into(),
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
