//! The Codex chat client: one user's session ([`super::session`]) and the Responses API
//! ([`super::responses`]) behind [`LlmClient`].
//!
//! Invariants: the session is read (and refreshed when about to expire) when the stream
//! starts, never cached in the client; a 401 gets exactly one refresh and one retry, and a
//! second 401 ends the call with [`LlmError::SignInRequired`]; 429 and 5xx are retried by the
//! shared HTTP plumbing like every provider's.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::responses::{ResponsesDecoder, request_body};
use super::session::{Session, Sessions};
use super::{ORIGINATOR, PROVIDER};
use crate::llm::http::{ProviderHttp, decode_sse, endpoint, flatten};
use crate::llm::keys::KeyStore;
use crate::llm::{ChatRequest, EventStream, LlmClient, LlmError};

/// A client for one user's Codex session.
#[derive(Clone, Debug)]
pub(crate) struct CodexClient {
    http: ProviderHttp,
    sessions: Arc<Sessions>,
    base_url: String,
    keys: KeyStore,
}

impl CodexClient {
    /// A client for the Responses API at `base_url`, with the session kept in `keys`.
    pub(crate) fn new(
        http: ProviderHttp,
        sessions: Arc<Sessions>,
        base_url: impl Into<String>,
        keys: KeyStore,
    ) -> Self {
        Self {
            http,
            sessions,
            base_url: base_url.into(),
            keys,
        }
    }
}

impl LlmClient for CodexClient {
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let conversation = uuid::Uuid::new_v4().to_string();
        let body = Arc::new(request_body(&request, &conversation));
        let url = Arc::new(endpoint(&self.base_url, "responses"));
        let (http, sessions, keys) = (
            self.http.clone(),
            Arc::clone(&self.sessions),
            self.keys.clone(),
        );
        flatten(async move {
            let send = |session: Session| {
                let (url, body, http) = (Arc::clone(&url), Arc::clone(&body), http.clone());
                let (cancel, conversation) = (cancel.clone(), conversation.clone());
                async move {
                    http.send(
                        PROVIDER,
                        move |client| {
                            let mut builder = client
                                .post(url.as_str())
                                .bearer_auth(&session.access_token)
                                .header("originator", ORIGINATOR)
                                .header("OpenAI-Beta", "responses=experimental")
                                .header("session_id", conversation.as_str())
                                .header(reqwest::header::ACCEPT, "text/event-stream")
                                .json(body.as_ref());
                            if let Some(account) = &session.account_id {
                                builder = builder.header("chatgpt-account-id", account.as_str());
                            }
                            builder
                        },
                        &cancel,
                    )
                    .await
                }
            };
            let session = sessions.current(&keys, &cancel).await?;
            let response = match send(session.clone()).await {
                Err(LlmError::Status { status: 401, .. }) => {
                    let fresh = sessions.refresh(&keys, &session, &cancel).await?;
                    match send(fresh).await {
                        Err(LlmError::Status { status: 401, .. }) => {
                            return Err(LlmError::SignInRequired { provider: PROVIDER });
                        }
                        other => other?,
                    }
                }
                other => other?,
            };
            Ok(decode_sse(
                PROVIDER,
                response,
                ResponsesDecoder::default(),
                http.settings(),
                cancel,
            ))
        })
    }
}
