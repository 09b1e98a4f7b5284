//! Followers of the daemon's WebSocket event streams: runtime events (`/v1/events`, from now
//! on) and every chat's events (`/v1/turns/ws`), with reconnect.
//!
//! Invariants: a follower hands on each frame it understands, in order; after every
//! connection that ends (closed or failed) it reports [`StreamItem::Disconnected`] and connects
//! again after a growing delay (reset once a connection got live), until the caller's callback
//! returns [`ControlFlow::Break`]. Each (re)connection starts with a replay that ends in
//! [`StreamItem::Live`]: callers reload their state there, so nothing missed while
//! disconnected is lost.

use std::ops::ControlFlow;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use souz_protocol::chat::ChatEvent;
use souz_protocol::{EventEnvelope, StreamControl};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::{ClientError, DaemonClient};

/// Which of the daemon's event streams to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventStream {
    /// Runtime events (`/v1/events?tail=true`): approvals, grants, pause, questions.
    Runtime,
    /// Every chat's events (`/v1/turns/ws`): turns starting and ending, questions, deltas.
    Chats,
}

impl EventStream {
    fn path(self) -> &'static str {
        match self {
            Self::Runtime => "/v1/events?tail=true",
            Self::Chats => "/v1/turns/ws",
        }
    }

    /// The item a text frame of this stream carries, if it is one a follower hands on.
    fn parse(self, text: &str) -> Option<StreamItem> {
        match self {
            Self::Runtime => {
                if let Ok(envelope) = serde_json::from_str::<EventEnvelope>(text) {
                    return Some(StreamItem::Runtime(Box::new(envelope)));
                }
                match serde_json::from_str(text) {
                    Ok(StreamControl::Live { .. }) => Some(StreamItem::Live),
                    _ => None,
                }
            }
            Self::Chats => {
                let value = serde_json::from_str::<serde_json::Value>(text).ok()?;
                match value.get("kind").and_then(serde_json::Value::as_str) {
                    Some("live") => Some(StreamItem::Live),
                    Some("event") => serde_json::from_value::<ChatEvent>(value)
                        .ok()
                        .map(|event| StreamItem::Chat(Box::new(event))),
                    _ => None,
                }
            }
        }
    }
}

/// What a follower hands on.
#[derive(Debug)]
pub enum StreamItem {
    /// The replay is done; what follows is live. Reload state here.
    Live,
    /// A runtime event.
    Runtime(Box<EventEnvelope>),
    /// A chat event.
    Chat(Box<ChatEvent>),
    /// The connection ended (why); the follower connects again after a delay.
    Disconnected(String),
}

/// Delays between reconnections: `first`, doubled after each failed attempt up to `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconnect {
    /// The first delay, and the delay after a connection that got live.
    pub first: Duration,
    /// The longest delay.
    pub max: Duration,
}

impl Default for Reconnect {
    fn default() -> Self {
        Self {
            first: Duration::from_millis(250),
            max: Duration::from_secs(10),
        }
    }
}

impl DaemonClient {
    /// Follows `stream`, reconnecting as [`Reconnect`] says, until `on_item` breaks.
    pub async fn follow(
        &self,
        stream: EventStream,
        reconnect: Reconnect,
        mut on_item: impl FnMut(StreamItem) -> ControlFlow<()>,
    ) {
        let mut delay = reconnect.first;
        loop {
            let mut got_live = false;
            let ended = self
                .follow_once(stream, |item| {
                    got_live |= matches!(item, StreamItem::Live);
                    on_item(item)
                })
                .await;
            let reason = match ended {
                Ok(ControlFlow::Break(())) => return,
                Ok(ControlFlow::Continue(())) => "the daemon closed the connection".to_owned(),
                Err(error) => error.to_string(),
            };
            if on_item(StreamItem::Disconnected(reason)).is_break() {
                return;
            }
            if got_live {
                delay = reconnect.first;
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(reconnect.max);
        }
    }

    /// Follows `stream` over one connection until it ends (`Continue`) or `on_item` breaks
    /// (`Break`); never reports [`StreamItem::Disconnected`].
    pub async fn follow_once(
        &self,
        stream: EventStream,
        mut on_item: impl FnMut(StreamItem) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, ClientError> {
        let unreachable = |reason: String| ClientError::Unreachable {
            base: self.base().to_owned(),
            reason,
        };
        // Every connection proves the listener first: a reconnect may reach whatever took the
        // port after the daemon died.
        self.prove_listener().await?;
        let url = format!("{}{}", self.base().replacen("http", "ws", 1), stream.path());
        let mut request = url
            .into_client_request()
            .map_err(|error| ClientError::Invalid(error.to_string()))?;
        let authorization = format!("Bearer {}", self.token())
            .parse()
            .map_err(|_| ClientError::Invalid("the token is not a header value".into()))?;
        request.headers_mut().insert("authorization", authorization);
        let (mut socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .map_err(|error| unreachable(error.to_string()))?;
        while let Some(message) = socket.next().await {
            match message {
                Ok(Message::Text(text)) => {
                    if let Some(item) = stream.parse(&text)
                        && on_item(item).is_break()
                    {
                        let _ = socket.close(None).await;
                        return Ok(ControlFlow::Break(()));
                    }
                }
                Ok(Message::Ping(payload)) => {
                    let _ = socket.send(Message::Pong(payload)).await;
                }
                Ok(Message::Close(_)) => break,
                Ok(_) => {}
                Err(error) => return Err(unreachable(error.to_string())),
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}
