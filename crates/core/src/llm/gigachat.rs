//! Sber GigaChat: OAuth token exchange and a token cache, and chat completions with functions,
//! streamed as SSE.
//!
//! Invariants:
//! - The authorization key is exchanged for an access token at the OAuth endpoint
//!   (`scope=...` form body, a fresh `RqUID` per exchange, Basic auth). Tokens are cached per
//!   (key, scope) and refreshed a minute before they expire; concurrent callers share one
//!   exchange. A 401 from the chat endpoint drops the cached token and retries once with a
//!   fresh one.
//! - GigaChat carries one function call per assistant message, with the call id in
//!   `functions_state_id` and arguments as a JSON object; function results must be JSON, so a
//!   plain-text result is sent as `{"result": "..."}`.
//! - The cache keys tokens by a SHA-256 of the authorization key, never the key itself.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::http::{ProviderHttp, SseDecoder, decode_sse, endpoint, flatten, parse_json};
use super::keys::ApiKey;
use super::openai::{finish_reason, normalized_schema};
use super::{
    ChatRequest, EventStream, FinishReason, LlmClient, LlmError, Message, ProviderId, StreamEvent,
    ToolCall, Usage,
};

/// Tokens this close to expiry are refreshed before use.
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(60);

const PROVIDER: ProviderId = ProviderId::Giga;
/// Most bytes of a token answer (a token and its expiry; real ones are about 1 KB).
const TOKEN_BODY_LIMIT: usize = 1 << 20;

#[derive(Clone)]
struct Token {
    access: ApiKey,
    expires_at: SystemTime,
}

/// Exchanges authorization keys for access tokens and caches them. Shared by every GigaChat
/// client of the process.
pub(crate) struct GigaChatAuth {
    http: ProviderHttp,
    auth_url: String,
    scope: String,
    cache: tokio::sync::Mutex<HashMap<[u8; 32], Token>>,
}

impl std::fmt::Debug for GigaChatAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GigaChatAuth")
            .field("auth_url", &self.auth_url)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    expires_at: Option<u64>,
    #[serde(default)]
    expires_in: Option<u64>,
}

impl GigaChatAuth {
    /// Token exchange at `auth_url` for `scope`.
    pub(crate) fn new(
        http: ProviderHttp,
        auth_url: impl Into<String>,
        scope: impl Into<String>,
    ) -> Self {
        Self {
            http,
            auth_url: auth_url.into(),
            scope: scope.into(),
            cache: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    fn cache_key(&self, key: &ApiKey) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(self.scope.as_bytes());
        hasher.update([0]);
        hasher.update(key.expose().as_bytes());
        hasher.finalize().into()
    }

    /// A valid access token for `key`: the cached one, or a fresh exchange.
    pub(crate) async fn token(
        &self,
        key: &ApiKey,
        cancel: &CancellationToken,
    ) -> Result<ApiKey, LlmError> {
        let cache_key = self.cache_key(key);
        let mut cache = self.cache.lock().await;
        if let Some(token) = cache.get(&cache_key)
            && token.expires_at > SystemTime::now() + REFRESH_MARGIN
        {
            return Ok(token.access.clone());
        }
        let token = self.exchange(key, cancel).await?;
        let access = token.access.clone();
        cache.insert(cache_key, token);
        Ok(access)
    }

    /// Forgets the cached token of `key` (after the API refused it).
    pub(crate) async fn invalidate(&self, key: &ApiKey) {
        let cache_key = self.cache_key(key);
        self.cache.lock().await.remove(&cache_key);
    }

    async fn exchange(&self, key: &ApiKey, cancel: &CancellationToken) -> Result<Token, LlmError> {
        let response = self
            .http
            .send(
                PROVIDER,
                |client| sber_token_request(client, &self.auth_url, key, &self.scope),
                cancel,
            )
            .await?;
        let bytes = super::http::read_body(
            PROVIDER,
            response,
            TOKEN_BODY_LIMIT,
            self.http.settings().request_timeout,
            cancel,
        )
        .await?;
        let body: TokenResponse =
            serde_json::from_slice(&bytes).map_err(|error| LlmError::Malformed {
                provider: PROVIDER,
                detail: format!("token response is not what GigaChat sends: {error}"),
            })?;
        let expires_at = sber_token_expiry(body.expires_at, body.expires_in);
        tracing::debug!(provider = %PROVIDER, "obtained a GigaChat access token");
        Ok(Token {
            access: ApiKey::new(body.access_token),
            expires_at,
        })
    }
}

/// The token request of Sber's OAuth (GigaChat and SaluteSpeech share it): the authorization
/// key as Basic (people paste it with or without the scheme), a fresh `RqUID`, the scope.
pub(crate) fn sber_token_request(
    client: &reqwest::Client,
    url: &str,
    key: &ApiKey,
    scope: &str,
) -> reqwest::RequestBuilder {
    let authorization = key.expose().trim();
    let authorization = authorization
        .strip_prefix("Basic ")
        .unwrap_or(authorization);
    client
        .post(url)
        .header(
            reqwest::header::AUTHORIZATION,
            format!("Basic {authorization}"),
        )
        .header("RqUID", uuid::Uuid::new_v4().to_string())
        .header(reqwest::header::ACCEPT, "application/json")
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(format!("scope={scope}"))
}

/// When a Sber OAuth token expires: `expires_at` in milliseconds since the epoch (seconds
/// accepted too), else `expires_in` seconds from now, else 30 minutes.
pub(crate) fn sber_token_expiry(expires_at: Option<u64>, expires_in: Option<u64>) -> SystemTime {
    let now = SystemTime::now();
    match (expires_at, expires_in) {
        (Some(at), _) if at > 100_000_000_000 => UNIX_EPOCH + Duration::from_millis(at),
        (Some(at), _) => UNIX_EPOCH + Duration::from_secs(at),
        (None, Some(seconds)) => now + Duration::from_secs(seconds),
        (None, None) => now + Duration::from_secs(30 * 60),
    }
}

/// A GigaChat chat client for one authorization key.
#[derive(Clone, Debug)]
pub(crate) struct GigaChatClient {
    http: ProviderHttp,
    auth: Arc<GigaChatAuth>,
    base_url: String,
    key: ApiKey,
    default_max_tokens: u32,
}

impl GigaChatClient {
    /// A client for `base_url` (up to `/api/v1`), using `auth` for tokens.
    pub(crate) fn new(
        http: ProviderHttp,
        auth: Arc<GigaChatAuth>,
        base_url: impl Into<String>,
        key: ApiKey,
        default_max_tokens: u32,
    ) -> Self {
        Self {
            http,
            auth,
            base_url: base_url.into(),
            key,
            default_max_tokens,
        }
    }

    /// The JSON body sent for `request`.
    pub(crate) fn body(&self, request: &ChatRequest) -> Value {
        request_body(request, self.default_max_tokens)
    }
}

impl LlmClient for GigaChatClient {
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let body = Arc::new(self.body(&request));
        let url = Arc::new(endpoint(&self.base_url, "chat/completions"));
        let (http, auth, key) = (self.http.clone(), Arc::clone(&self.auth), self.key.clone());
        flatten(async move {
            let send = |token: ApiKey| {
                let (url, body) = (Arc::clone(&url), Arc::clone(&body));
                let http = http.clone();
                let cancel = cancel.clone();
                async move {
                    http.send(
                        PROVIDER,
                        move |client| {
                            client
                                .post(url.as_str())
                                .bearer_auth(token.expose())
                                .header(reqwest::header::ACCEPT, "text/event-stream")
                                .json(body.as_ref())
                        },
                        &cancel,
                    )
                    .await
                }
            };
            let token = auth.token(&key, &cancel).await?;
            let response = match send(token).await {
                Err(LlmError::Status { status: 401, .. }) => {
                    auth.invalidate(&key).await;
                    let token = auth.token(&key, &cancel).await?;
                    send(token).await?
                }
                other => other?,
            };
            Ok(decode_sse(
                PROVIDER,
                response,
                FunctionsDecoder::default(),
                http.settings(),
                cancel,
            ))
        })
    }
}

fn request_body(request: &ChatRequest, default_max_tokens: u32) -> Value {
    let mut messages = Vec::new();
    for message in &request.messages {
        match message {
            Message::System { content } => {
                messages.push(json!({"role": "system", "content": content}))
            }
            // GigaChat takes images only as uploaded files; a message with images for a
            // GigaChat model is refused when it is posted (`ProviderId::takes_images`).
            Message::User { content, .. } => {
                messages.push(json!({"role": "user", "content": content}))
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if tool_calls.is_empty() {
                    messages.push(json!({"role": "assistant", "content": content}));
                }
                for (position, call) in tool_calls.iter().enumerate() {
                    let arguments = call.arguments_json().unwrap_or_else(|_| json!({}));
                    messages.push(json!({
                        "role": "assistant",
                        "content": if position == 0 { content.as_str() } else { "" },
                        "function_call": {"name": call.name, "arguments": arguments},
                        "functions_state_id": call.id,
                    }));
                }
            }
            Message::Tool {
                tool_call_id,
                name,
                content,
                ..
            } => {
                let content = match serde_json::from_str::<Value>(content) {
                    Ok(value) if value.is_object() => content.clone(),
                    _ => json!({"result": content}).to_string(),
                };
                messages.push(json!({"role": "function", "name": name, "content": content,
                                     "functions_state_id": tool_call_id}));
            }
        }
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "update_interval": 0,
        "max_tokens": request.max_tokens.unwrap_or(default_max_tokens),
    });
    if let Some(temperature) = request.temperature {
        body["temperature"] = super::types::temperature_json(temperature);
    }
    if !request.tools.is_empty() {
        body["functions"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description,
                       "parameters": normalized_schema(&tool.parameters)})
            })
            .collect();
        body["function_call"] = json!("auto");
    }
    body
}

/// Decodes GigaChat's streamed chunks.
#[derive(Default)]
pub(crate) struct FunctionsDecoder {
    call: Option<PartialCall>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
    #[serde(default)]
    functions_state_id: Option<String>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    precached_prompt_tokens: u64,
}

impl FunctionsDecoder {
    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        if let Some(call) = self.call.take() {
            if call.name.is_empty() {
                return Err(LlmError::Malformed {
                    provider: PROVIDER,
                    detail: "function call without a name".to_owned(),
                });
            }
            let id = if call.id.is_empty() {
                format!("call_{}", uuid::Uuid::new_v4().simple())
            } else {
                call.id
            };
            out.push_back(StreamEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments: if call.arguments.is_empty() {
                    "{}".to_owned()
                } else {
                    call.arguments
                },
            }));
            if matches!(self.finish, None | Some(FinishReason::Stop)) {
                self.finish = Some(FinishReason::ToolCalls);
            }
        }
        if let Some(usage) = self.usage.take() {
            out.push_back(StreamEvent::Usage(usage));
        }
        out.push_back(StreamEvent::Finish(
            self.finish.take().unwrap_or(FinishReason::Stop),
        ));
        Ok(())
    }
}

impl SseDecoder for FunctionsDecoder {
    fn event(&mut self, event: &Event, out: &mut VecDeque<StreamEvent>) -> Result<bool, LlmError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            self.finish(out)?;
            return Ok(true);
        }
        let chunk: Chunk = parse_json(PROVIDER, data)?;
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
                cached_input_tokens: usage.precached_prompt_tokens,
            });
        }
        for choice in chunk.choices {
            let delta = choice.delta.unwrap_or_default();
            if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                out.push_back(StreamEvent::TextDelta(text));
            }
            if delta.function_call.is_some() || delta.functions_state_id.is_some() {
                let call = self.call.get_or_insert_with(PartialCall::default);
                let id = delta.functions_state_id.filter(|id| !id.is_empty());
                if let Some(id) = &id {
                    call.id.clone_from(id);
                }
                let mut name = None;
                let mut fragment = String::new();
                if let Some(function) = delta.function_call {
                    name = function.name.filter(|name| !name.is_empty());
                    if let Some(name) = &name
                        && call.name.is_empty()
                    {
                        call.name.clone_from(name);
                    }
                    match function.arguments {
                        // The usual case: the whole arguments object at once.
                        Some(Value::Object(object)) => {
                            fragment = Value::Object(object).to_string();
                            call.arguments.clone_from(&fragment);
                        }
                        Some(Value::String(text)) => {
                            call.arguments.push_str(&text);
                            fragment = text;
                        }
                        Some(Value::Null) | None => {}
                        Some(other) => {
                            return Err(LlmError::Malformed {
                                provider: PROVIDER,
                                detail: format!(
                                    "function arguments are neither an object nor text: {other}"
                                ),
                            });
                        }
                    }
                }
                out.push_back(StreamEvent::ToolCallDelta {
                    index: 0,
                    id,
                    name,
                    arguments: fragment,
                });
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(finish_reason(&reason));
            }
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        if self.finish.is_some() {
            return self.finish(out);
        }
        Err(LlmError::Interrupted {
            provider: Some(PROVIDER),
            detail: "the stream ended before [DONE]".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests;
