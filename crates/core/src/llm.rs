//! LLM providers behind one provider-neutral interface.
//!
//! What it owns: the neutral types ([`types`]), the [`LlmClient`] trait every backend
//! implements (HTTP providers and in-process models, [`local`]), the providers themselves
//! ([`openai`], [`anthropic`], [`openai_compatible`], [`gigachat`], [`codex`], [`embeddings`]), the shared
//! HTTP plumbing ([`http`]: one client per process, retries, timeouts, SSE), the model
//! registry ([`models`]), provider keys at rest ([`keys`]), the service that ties them to the
//! configuration ([`service`]), and a scripted fake for agent tests ([`fake`]).
//!
//! Invariants:
//! - A stream is a sequence of `Result<StreamEvent, LlmError>`. A successful stream ends with
//!   exactly one [`StreamEvent::Finish`]; a failed one ends with one `Err` and nothing after it.
//!   A stream that stops early (disconnect, malformed chunk, idle timeout) is an error, never
//!   a silent end or a hang.
//! - Cancelling the token passed to [`LlmClient::stream`] (or dropping the stream) aborts the
//!   HTTP request; the stream then yields [`LlmError::Cancelled`].
//! - Provider keys never appear in logs, errors or `Debug` output ([`keys::ApiKey`]).

pub(crate) mod anthropic;
pub(crate) mod codex;
pub(crate) mod embeddings;
pub mod fake;
pub(crate) mod gigachat;
pub mod http;
pub mod keys;
pub mod local;
pub(crate) mod models;
pub mod openai;
pub(crate) mod openai_compatible;
pub mod service;
pub(crate) mod types;

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio_util::sync::CancellationToken;

pub use souz_protocol::ProviderId;
pub use types::{
    ChatRequest, ChatResponse, FinishReason, ImagePart, Message, Role, StreamEvent, ToolCall,
    ToolDeclaration, Usage,
};

/// The events of one streamed answer.
pub type EventStream = BoxStream<'static, Result<StreamEvent, LlmError>>;

/// Anything that answers chat requests with a stream of events: an HTTP provider, an
/// in-process model, or the scripted fake.
///
/// An in-process backend fits by producing tokens on its own task and handing them over a
/// channel turned into a stream; it watches `cancel` to stop generating.
pub trait LlmClient: Send + Sync {
    /// Starts answering `request`. Nothing happens until the stream is polled; cancelling
    /// `cancel` or dropping the stream stops the work.
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream;
}

/// Runs `request` and collects the whole answer.
pub async fn complete(
    client: &dyn LlmClient,
    request: ChatRequest,
    cancel: CancellationToken,
) -> Result<ChatResponse, LlmError> {
    collect(client.stream(request, cancel)).await
}

/// Collects a stream into one [`ChatResponse`]. A stream that ends without
/// [`StreamEvent::Finish`] is an error.
pub async fn collect(stream: EventStream) -> Result<ChatResponse, LlmError> {
    collect_with(stream, |_| {}).await
}

/// [`collect`], handing each non-empty text delta to `on_text` as it arrives (after it was
/// added to the answer), for callers that stream the answer on.
pub async fn collect_with(
    mut stream: EventStream,
    mut on_text: impl FnMut(String),
) -> Result<ChatResponse, LlmError> {
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    let mut usage = None;
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta(text) if text.is_empty() => {}
            StreamEvent::TextDelta(text) => {
                content.push_str(&text);
                on_text(text);
            }
            StreamEvent::ToolCallDelta { .. } => {}
            StreamEvent::ToolCall(call) => tool_calls.push(call),
            StreamEvent::Usage(reported) => usage = Some(reported),
            StreamEvent::Finish(finish_reason) => {
                return Ok(ChatResponse {
                    content,
                    tool_calls,
                    usage,
                    finish_reason,
                });
            }
        }
    }
    Err(LlmError::Interrupted {
        provider: None,
        detail: "the stream ended without a finish event".to_owned(),
    })
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// No key is stored or set in the environment for the provider.
    #[error(
        "no API key for {provider}: add one with `souz keys set {provider}` or on the setup \
         page of the web UI (`souz ui --open`), or set {}", provider.key_variables().join(" or ")
    )]
    MissingKey {
        /// The provider.
        provider: ProviderId,
    },
    /// The account session of a provider one signs in to is gone or was refused (never signed
    /// in, signed out, or its refresh token expired or was revoked): sign in again.
    #[error(
        "{provider} needs you to sign in again: run `souz login {provider}` or use \"Sign in \
         with ChatGPT\" in the web UI's settings (`souz ui --open`)"
    )]
    SignInRequired {
        /// The provider.
        provider: ProviderId,
    },
    /// The provider answered with an error status (after any retries).
    #[error("{provider} answered HTTP {status}: {message}")]
    Status {
        /// The provider.
        provider: ProviderId,
        /// The HTTP status.
        status: u16,
        /// The provider's explanation.
        message: String,
        /// How long the provider asked us to wait, if it said.
        retry_after: Option<Duration>,
    },
    /// The provider could not be reached.
    #[error("{provider} could not be reached: {message}")]
    Transport {
        /// The provider.
        provider: ProviderId,
        /// What failed.
        message: String,
    },
    /// The request or the stream took too long.
    #[error("{provider} did not answer in time ({} s)", .after.as_secs_f64())]
    Timeout {
        /// The provider.
        provider: ProviderId,
        /// The limit that was hit.
        after: Duration,
    },
    /// The stream stopped before the answer was complete.
    #[error("{} stopped before the answer was complete: {detail}", provider_name(*.provider))]
    Interrupted {
        /// The provider, when known.
        provider: Option<ProviderId>,
        /// What happened.
        detail: String,
    },
    /// The provider sent something that does not follow its own format.
    #[error("{provider} sent a malformed response: {detail}")]
    Malformed {
        /// The provider.
        provider: ProviderId,
        /// What was wrong.
        detail: String,
    },
    /// The answer reached the output-token limit before it could be used: a tool call cut in
    /// the middle. (A final answer cut short is kept as what it is.)
    #[error("{provider}'s answer did not fit in {limit} output tokens (llm.max_output_tokens)")]
    CutOff {
        /// The provider.
        provider: ProviderId,
        /// The limit the answer reached.
        limit: u32,
        /// The tokens the cut request used (its prompt and the output up to the limit): they
        /// were spent, and a turn reports them.
        used: Usage,
    },
    /// The provider reported an error inside an otherwise successful response.
    #[error("{provider} reported an error: {message}")]
    Provider {
        /// The provider.
        provider: ProviderId,
        /// The provider's error type, if it gave one.
        kind: Option<String>,
        /// Its message.
        message: String,
    },
    /// The request cannot be sent as it is.
    #[error("invalid request for {provider}: {message}")]
    InvalidRequest {
        /// The provider.
        provider: ProviderId,
        /// What is wrong.
        message: String,
    },
    /// The provider's answer passed a size limit of [`http::bounded`]; the connection was
    /// dropped.
    #[error("{provider} sent more than Souz accepts: the {part} passed {limit} bytes")]
    TooLarge {
        /// The provider.
        provider: ProviderId,
        /// What passed its limit.
        part: http::AnswerPart,
        /// The limit in bytes.
        limit: usize,
    },
    /// The caller cancelled.
    #[error("the model request was cancelled")]
    Cancelled,
}

fn provider_name(provider: Option<ProviderId>) -> &'static str {
    provider.map_or("the model", ProviderId::as_str)
}

impl LlmError {
    /// Whether trying again later may succeed (rate limits, server errors, network trouble).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            Self::Transport { .. } | Self::Timeout { .. } | Self::Interrupted { .. } => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests;
