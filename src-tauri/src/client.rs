//! The shell's one way to the daemon: its gateway API and WebSockets, the same ones the web UI
//! and scripts use. Whether the daemon runs inside this app or is a separate `souz serve` it
//! attached to, the shell talks to it the same way, so both modes behave identically.

use futures::{SinkExt, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use souz_protocol::chat::{ChatEvent, OptionAnswer, OptionAnswerResponse, QuestionList, TurnList};
use souz_protocol::config::{PauseState, SetPause};
use souz_protocol::{
    ApprovalList, DecisionRequest, DecisionResponse, EventEnvelope, ScopeKind, StreamControl,
    Verdict,
};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The daemon did not answer.
    #[error("the Souz daemon did not answer: {0}")]
    Unreachable(String),
    /// The daemon answered with an error.
    #[error("{message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// The error message.
        message: String,
    },
}

/// A frame of one of the daemon's event streams.
#[derive(Debug)]
pub enum StreamItem {
    /// The stream is live (replay done).
    Live,
    /// A runtime event.
    Runtime(Box<EventEnvelope>),
    /// A chat event.
    Chat(Box<ChatEvent>),
}

/// A client of one daemon. Cheap to clone.
#[derive(Clone)]
pub struct DaemonClient {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl DaemonClient {
    /// A client of the daemon at `base` (`http://127.0.0.1:8383`) with its token.
    pub fn new(base: impl Into<String>, token: impl Into<String>) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|error| ClientError::Unreachable(error.to_string()))?;
        Ok(Self {
            base: base.into().trim_end_matches('/').to_owned(),
            token: token.into(),
            http,
        })
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The web UI's address, opened at `route` (`/queue/<id>`), with the token in the fragment.
    pub fn ui_url(&self, route: Option<&str>) -> String {
        let mut url = format!("{}/app/#token={}", self.base, self.token);
        if let Some(route) = route {
            url.push_str("&go=");
            url.push_str(route);
        }
        url
    }

    /// Pending approvals, newest first.
    pub async fn pending(&self) -> Result<ApprovalList, ClientError> {
        self.get("/v1/approvals?status=pending&limit=500").await
    }

    /// Questions the agents wait on, oldest first.
    pub async fn questions(&self) -> Result<QuestionList, ClientError> {
        self.get("/v1/options?limit=500").await
    }

    /// Answers a question with one choice.
    pub async fn answer(
        &self,
        option_id: &str,
        choice_id: &str,
    ) -> Result<OptionAnswerResponse, ClientError> {
        let body = OptionAnswer {
            selected_option_ids: vec![choice_id.to_owned()],
            ..OptionAnswer::default()
        };
        self.post(&format!("/v1/options/{option_id}/answer"), &body)
            .await
    }

    /// Running agent turns.
    pub async fn turns(&self) -> Result<TurnList, ClientError> {
        self.get("/v1/turns").await
    }

    /// The pause state.
    pub async fn pause_state(&self) -> Result<PauseState, ClientError> {
        self.get("/v1/pause").await
    }

    /// Pauses or resumes.
    pub async fn set_paused(&self, paused: bool, via: &str) -> Result<PauseState, ClientError> {
        let body = SetPause {
            paused,
            via: Some(via.to_owned()),
        };
        self.send(self.http.put(self.url("/v1/pause")).json(&body))
            .await
    }

    /// Approves (once) or denies an approval.
    pub async fn decide(
        &self,
        approval_id: &str,
        verdict: Verdict,
        via: &str,
    ) -> Result<DecisionResponse, ClientError> {
        let body = DecisionRequest {
            decision: verdict,
            scope: ScopeKind::Once,
            minutes: None,
            argument_match: None,
            via: Some(via.to_owned()),
        };
        self.post(&format!("/v1/approvals/{approval_id}/decision"), &body)
            .await
    }

    /// Follows `/v1/events` from now on, calling `on_item` for each frame, until the socket
    /// closes or fails.
    pub async fn follow_runtime(
        &self,
        mut on_item: impl FnMut(StreamItem),
    ) -> Result<(), ClientError> {
        self.follow("/v1/events?tail=true", |text| {
            if let Ok(envelope) = serde_json::from_str::<EventEnvelope>(text) {
                on_item(StreamItem::Runtime(Box::new(envelope)));
            } else if let Ok(StreamControl::Live { .. }) = serde_json::from_str(text) {
                on_item(StreamItem::Live);
            }
        })
        .await
    }

    /// Follows every chat event (`/v1/turns/ws`), like [`Self::follow_runtime`].
    pub async fn follow_chats(
        &self,
        mut on_item: impl FnMut(StreamItem),
    ) -> Result<(), ClientError> {
        self.follow("/v1/turns/ws", |text| {
            let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
                return;
            };
            match value.get("kind").and_then(|kind| kind.as_str()) {
                Some("live") => on_item(StreamItem::Live),
                Some("event") => {
                    if let Ok(event) = serde_json::from_value::<ChatEvent>(value) {
                        on_item(StreamItem::Chat(Box::new(event)));
                    }
                }
                _ => {}
            }
        })
        .await
    }

    async fn follow(&self, path: &str, mut on_text: impl FnMut(&str)) -> Result<(), ClientError> {
        let url = format!("{}{path}", self.base.replacen("http", "ws", 1));
        let mut request = url
            .into_client_request()
            .map_err(|error| ClientError::Unreachable(error.to_string()))?;
        let authorization = format!("Bearer {}", self.token)
            .parse()
            .map_err(|_| ClientError::Unreachable("the token is not a header value".into()))?;
        request.headers_mut().insert("authorization", authorization);
        let (mut socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .map_err(|error| ClientError::Unreachable(error.to_string()))?;
        while let Some(message) = socket.next().await {
            match message {
                Ok(Message::Text(text)) => on_text(&text),
                Ok(Message::Ping(payload)) => {
                    let _ = socket.send(Message::Pong(payload)).await;
                }
                Ok(Message::Close(_)) => break,
                Ok(_) => {}
                Err(error) => return Err(ClientError::Unreachable(error.to_string())),
            }
        }
        Ok(())
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send(self.http.get(self.url(path))).await
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        self.send(self.http.post(self.url(path)).json(body)).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, ClientError> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|error| ClientError::Unreachable(error.to_string()))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|error| ClientError::Unreachable(error.to_string()))?;
        if !status.is_success() {
            let message = serde_json::from_slice::<souz_protocol::ErrorBody>(&bytes)
                .map(|body| body.error.message)
                .unwrap_or_else(|_| format!("HTTP {status}"));
            return Err(ClientError::Refused {
                status: status.as_u16(),
                message,
            });
        }
        serde_json::from_slice(&bytes).map_err(|error| ClientError::Refused {
            status: status.as_u16(),
            message: format!("unexpected answer: {error}"),
        })
    }
}
