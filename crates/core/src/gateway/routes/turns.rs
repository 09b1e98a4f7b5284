//! `/v1/turns`: the agent turns running now across the user's chats, and `WS /v1/turns/ws`,
//! every event of the user's chats as it happens (answers streaming as `message.delta`, tool
//! calls, approvals, the end of each turn), for the live view and the menu-bar app.

use std::collections::HashMap;

use axum::Extension;
use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message as Frame, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use serde_json::json;
use souz_protocol::ClientScope;
use souz_protocol::chat::{ChatEvent, TurnList};
use tokio::sync::broadcast::error::RecvError;

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::ws::{self, CLOSE_RESYNC};
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::ChatUser;
use crate::token::Credential;

/// Ownership answers remembered per socket; bounded so a long session does not grow forever.
const OWNERSHIP_CACHE: usize = 4096;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/turns")
                .summary("Agent turns running now, across your chats.")
                .description(
                    "Each item carries `afterSeq`: replay that chat's events after it \
                     (`GET /v1/chats/{chatId}/events?afterSeq=`) to catch up on the turn so far, \
                     then follow `WS /v1/turns/ws`.",
                )
                .tag("chats")
                .response::<TurnList>(200, "The active turns."),
            list,
        )
        .route(
            Operation::get("/v1/turns/ws")
                .summary("Follow every event of your chats live over a WebSocket.")
                .description(
                    "Sends `{\"kind\":\"live\"}` first, then each chat event as it is announced, \
                     with `\"kind\":\"event\"` (the same frames as `WS /v1/chats/{chatId}/ws`, \
                     deltas included). Live only: nothing is replayed. A follower that falls \
                     behind gets `{\"kind\":\"resync\"}` and close code 4000.",
                )
                .tag("chats")
                .websocket::<ChatEvent>(),
            follow,
        )
}

async fn list(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<TurnList>, ApiError> {
    let items = handle.active_turns(&user).await?;
    Ok(axum::Json(TurnList { items }))
}

async fn follow(
    user: ChatUser,
    credential: Option<Extension<Credential>>,
    State(handle): State<RuntimeHandle>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let upgrade = ws::upgrade(upgrade)?;
    // A `chats` client (`souz acp`) follows the chats it made, no other.
    let client = match credential {
        Some(Extension(Credential::Client(client))) if client.scope == ClientScope::Chats => {
            Some(client.id)
        }
        _ => None,
    };
    Ok(upgrade.on_upgrade(move |socket| stream(socket, handle, user, client)))
}

async fn stream(
    mut socket: WebSocket,
    handle: RuntimeHandle,
    user: ChatUser,
    client: Option<String>,
) {
    let shutdown = handle.shutdown_signal();
    let mut events = handle.subscribe_chat_events();
    let mut owned: HashMap<String, bool> = HashMap::new();
    let live = json!({"kind": "live"}).to_string();
    if socket.send(Frame::Text(live.into())).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            biased;
            event = events.recv() => match event {
                Ok(event) => {
                    let mine = match owned.get(&event.chat_id) {
                        Some(mine) => *mine,
                        None => {
                            let mine = match &client {
                                Some(client) => handle
                                    .client_made_chat(client, &event.chat_id)
                                    .await
                                    .unwrap_or(false),
                                None => handle.owns_chat(&user, &event.chat_id).await.unwrap_or(false),
                            };
                            if owned.len() >= OWNERSHIP_CACHE {
                                owned.clear();
                            }
                            owned.insert(event.chat_id.clone(), mine);
                            mine
                        }
                    };
                    if !mine {
                        continue;
                    }
                    let mut value = serde_json::to_value(&*event).unwrap_or_default();
                    value["kind"] = json!("event");
                    if socket.send(Frame::Text(value.to_string().into())).await.is_err() {
                        return;
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    let resync = json!({"kind": "resync"}).to_string();
                    let _ = socket.send(Frame::Text(resync.into())).await;
                    ws::close(socket, CLOSE_RESYNC, "fell behind; reload the active turns").await;
                    return;
                }
                Err(RecvError::Closed) => return,
            },
            incoming = socket.recv() => if ws::client_left(&incoming) {
                return;
            },
            () = shutdown.cancelled() => {
                ws::close_for_shutdown(socket).await;
                return;
            }
        }
    }
}
