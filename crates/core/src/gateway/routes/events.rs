//! `WS /v1/events`: durable runtime events, replayed from a sequence number and then live. The
//! daemon's own stream (every chat's approvals included): an operator route.

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{WebSocket, WebSocketUpgrade};
use axum::response::Response;
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::EventEnvelope;
use souz_protocol::event::StreamControl;

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiQuery;
use crate::gateway::identity::Operator;
use crate::gateway::ws::{self, Outgoing};
use crate::runtime::RuntimeHandle;

/// Query of `WS /v1/events`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EventsQuery {
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
    let upgrade = ws::upgrade(upgrade)?;
    let after_seq = match (query.after_seq, query.tail) {
        (Some(_), Some(true)) => {
            return Err(ApiError::invalid(
                "give either after_seq or tail=true, not both",
            ));
        }
        (_, Some(true)) => handle.last_event_seq().await?,
        (after_seq, _) => after_seq.unwrap_or(0),
    };
    if after_seq < 0 {
        return Err(ApiError::invalid("after_seq must be 0 or more"));
    }
    Ok(upgrade.on_upgrade(move |socket| follow(socket, handle, after_seq)))
}

async fn follow(socket: WebSocket, handle: RuntimeHandle, after_seq: i64) {
    let items = handle.follow_events(after_seq);
    let encode = |item: Outgoing<'_, EventEnvelope>| {
        match item {
            Outgoing::Event(envelope) => serde_json::to_string(envelope),
            Outgoing::Live { last_seq } => serde_json::to_string(&StreamControl::Live { last_seq }),
            Outgoing::Resync { last_seq } => {
                serde_json::to_string(&StreamControl::Resync { last_seq })
            }
        }
        .ok()
    };
    let reason = "fell behind; reconnect with after_seq";
    ws::follow(socket, handle.shutdown_signal(), items, encode, reason).await;
}
