//! OpenAI Chat Completions (`POST {base}/chat/completions`, streamed as SSE), used for OpenAI
//! itself and for every OpenAI-compatible endpoint ([`super::openai_compatible`]).
//!
//! Invariants:
//! - Requests always stream. `stream_options.include_usage` is sent only to the official
//!   endpoint (compatible servers reject or ignore it); usage is read wherever it appears.
//! - Tool-call deltas are accumulated per index; complete calls are emitted when the choice
//!   finishes, in index order, each with an id (one is made when the server sends none).
//! - The stream is complete at `data: [DONE]`, or at the end of the body once a
//!   `finish_reason` was seen (some local servers omit `[DONE]`); ending earlier is an error.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{ProviderHttp, SseDecoder, endpoint, parse_json, stream_call};
use super::keys::ApiKey;
use super::{
    ChatRequest, EventStream, FinishReason, LlmClient, LlmError, Message, ProviderId, StreamEvent,
    ToolCall, ToolDeclaration, Usage,
};

/// The official OpenAI API.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Where and how to talk Chat Completions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiEndpoint {
    /// Which provider this is (for errors and keys).
    pub provider: ProviderId,
    /// Base URL up to and including `/v1` (or the compatible mode's equivalent).
    pub base_url: String,
    /// The official OpenAI API: sends `stream_options.include_usage` and
    /// `max_completion_tokens`, and leaves temperature to the model (reasoning models reject
    /// any other value).
    pub official: bool,
    /// Sends `parallel_tool_calls: true` (DashScope needs it to return several calls).
    pub parallel_tool_calls: bool,
}

impl OpenAiEndpoint {
    /// The official OpenAI endpoint at `base_url`.
    pub fn official(base_url: impl Into<String>) -> Self {
        Self {
            provider: ProviderId::OpenAi,
            base_url: base_url.into(),
            official: true,
            parallel_tool_calls: false,
        }
    }
}

/// A Chat Completions client for one endpoint and key.
#[derive(Clone, Debug)]
pub struct OpenAiClient {
    http: ProviderHttp,
    endpoint: Arc<OpenAiEndpoint>,
    key: Option<ApiKey>,
    default_max_tokens: u32,
}

impl OpenAiClient {
    /// A client for `endpoint`; `key` is sent as a bearer token (local servers need none).
    pub fn new(
        http: ProviderHttp,
        endpoint: OpenAiEndpoint,
        key: Option<ApiKey>,
        default_max_tokens: u32,
    ) -> Self {
        Self {
            http,
            endpoint: Arc::new(endpoint),
            key,
            default_max_tokens,
        }
    }

    /// The JSON body sent for `request`.
    pub fn body(&self, request: &ChatRequest) -> Value {
        request_body(&self.endpoint, request, self.default_max_tokens)
    }
}

impl LlmClient for OpenAiClient {
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let body = self.body(&request);
        let url = endpoint(&self.endpoint.base_url, "chat/completions");
        let key = self.key.clone();
        let provider = self.endpoint.provider;
        let build = move |client: &reqwest::Client| {
            let request = client
                .post(&url)
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .json(&body);
            match &key {
                Some(key) => request.bearer_auth(key.expose()),
                None => request,
            }
        };
        stream_call(
            self.http.clone(),
            provider,
            build,
            ChatCompletionsDecoder::new(provider),
            cancel,
        )
    }
}

fn request_body(
    endpoint: &OpenAiEndpoint,
    request: &ChatRequest,
    default_max_tokens: u32,
) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": request.messages.iter().map(message_json).collect::<Vec<_>>(),
        "stream": true,
    });
    let max_tokens = request.max_tokens.unwrap_or(default_max_tokens);
    if endpoint.official {
        body["stream_options"] = json!({"include_usage": true});
        body["max_completion_tokens"] = json!(max_tokens);
    } else {
        body["max_tokens"] = json!(max_tokens);
        if let Some(temperature) = request.temperature {
            body["temperature"] = super::types::temperature_json(temperature);
        }
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.iter().map(tool_json).collect());
        body["tool_choice"] = json!("auto");
        if endpoint.parallel_tool_calls {
            body["parallel_tool_calls"] = json!(true);
        }
    }
    body
}

fn message_json(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content, images } if images.is_empty() => {
            json!({"role": "user", "content": content})
        }
        Message::User { content, images } => {
            let mut parts = vec![json!({"type": "text", "text": content})];
            parts.extend(
                images.iter().map(
                    |image| json!({"type": "image_url", "image_url": {"url": image.data_url()}}),
                ),
            );
            json!({"role": "user", "content": parts})
        }
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut message = json!({"role": "assistant"});
            message["content"] = if content.is_empty() && !tool_calls.is_empty() {
                Value::Null
            } else {
                json!(content)
            };
            if !tool_calls.is_empty() {
                message["tool_calls"] = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        })
                    })
                    .collect();
            }
            message
        }
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

fn tool_json(tool: &ToolDeclaration) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": normalized_schema(&tool.parameters),
        },
    })
}

/// A parameters schema providers accept: an object schema with `properties`, and `items` on
/// every array (OpenAI rejects arrays without it).
pub fn normalized_schema(schema: &Value) -> Value {
    let mut schema = match schema {
        Value::Object(_) => schema.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    if let Some(object) = schema.as_object_mut() {
        object.entry("type").or_insert_with(|| json!("object"));
        if object.get("type") == Some(&json!("object")) {
            object.entry("properties").or_insert_with(|| json!({}));
        }
    }
    add_missing_items(&mut schema);
    schema
}

fn add_missing_items(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let is_array = match object.get("type") {
                Some(Value::String(kind)) => kind == "array",
                Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "array"),
                _ => false,
            };
            if is_array && !object.contains_key("items") {
                object.insert("items".to_owned(), json!({}));
            }
            object.values_mut().for_each(add_missing_items);
        }
        Value::Array(items) => items.iter_mut().for_each(add_missing_items),
        _ => {}
    }
}

/// Decodes Chat Completions chunks.
pub struct ChatCompletionsDecoder {
    provider: ProviderId,
    calls: BTreeMap<usize, PartialCall>,
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
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: usize,
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
    tool_calls: Option<Vec<ToolCallChunk>>,
}

#[derive(Deserialize)]
struct ToolCallChunk {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionChunk>,
}

#[derive(Deserialize)]
struct FunctionChunk {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl ChatCompletionsDecoder {
    /// A decoder attributing errors to `provider`.
    pub fn new(provider: ProviderId) -> Self {
        Self {
            provider,
            calls: BTreeMap::new(),
            finish: None,
            usage: None,
        }
    }

    fn flush_calls(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        for (index, call) in std::mem::take(&mut self.calls) {
            if call.name.is_empty() {
                return Err(LlmError::Malformed {
                    provider: self.provider,
                    detail: format!("tool call {index} has no name"),
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
                arguments: call.arguments,
            }));
            // A server that says "stop" while calling tools still wants the results.
            if self.finish == Some(FinishReason::Stop) {
                self.finish = Some(FinishReason::ToolCalls);
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        self.flush_calls(out)?;
        if let Some(usage) = self.usage.take() {
            out.push_back(StreamEvent::Usage(usage));
        }
        let reason = self.finish.take().unwrap_or(FinishReason::Stop);
        out.push_back(StreamEvent::Finish(reason));
        Ok(())
    }
}

/// Maps Chat Completions finish reasons.
pub fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "end_turn" => FinishReason::Stop,
        "length" | "max_tokens" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" | "blacklist" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

impl SseDecoder for ChatCompletionsDecoder {
    fn event(&mut self, event: &Event, out: &mut VecDeque<StreamEvent>) -> Result<bool, LlmError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            self.finish(out)?;
            return Ok(true);
        }
        let chunk: Chunk = parse_json(self.provider, data)?;
        if let Some(error) = chunk.error {
            return Err(LlmError::Provider {
                provider: self.provider,
                kind: error
                    .get("type")
                    .or_else(|| error.get("code"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_owned(),
            });
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
                cached_input_tokens: usage
                    .prompt_tokens_details
                    .and_then(|details| details.cached_tokens)
                    .unwrap_or(0),
            });
        }
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            let delta = choice.delta.unwrap_or_default();
            if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                out.push_back(StreamEvent::TextDelta(text));
            }
            for (position, piece) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                let index = piece.index.unwrap_or(position);
                let call = self.calls.entry(index).or_default();
                let id = piece.id.filter(|id| !id.is_empty());
                if let Some(id) = &id
                    && call.id.is_empty()
                {
                    call.id.clone_from(id);
                }
                let function = piece.function;
                let name = function
                    .as_ref()
                    .and_then(|function| function.name.clone())
                    .filter(|name| !name.is_empty());
                if let Some(name) = &name
                    && call.name.is_empty()
                {
                    call.name.clone_from(name);
                }
                let arguments = function
                    .and_then(|function| function.arguments)
                    .unwrap_or_default();
                call.arguments.push_str(&arguments);
                out.push_back(StreamEvent::ToolCallDelta {
                    index,
                    id,
                    name,
                    arguments,
                });
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(finish_reason(&reason));
                self.flush_calls(out)?;
            }
        }
        Ok(false)
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        if self.finish.is_some() {
            return self.finish(out);
        }
        Err(LlmError::Interrupted {
            provider: Some(self.provider),
            detail: "the stream ended before [DONE]".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests;
