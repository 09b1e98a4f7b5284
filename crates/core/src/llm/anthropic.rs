//! Anthropic Messages API (`POST {base}/messages`, streamed as named SSE events).
//!
//! Invariants:
//! - System messages go to the top-level `system` blocks (with a cache marker); consecutive
//!   messages of one role are merged into one message, so all tool results answering one
//!   assistant turn travel together, as the API requires.
//! - Tool-use input arrives as `input_json_delta` fragments; the call is emitted complete at
//!   its `content_block_stop` (an empty input is `{}`).
//! - Usage is the input from `message_start` plus the output from the last `message_delta`,
//!   reported once before `Finish`. The stream is complete only at `message_stop`.

use std::collections::{BTreeMap, VecDeque};

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{ProviderHttp, SseDecoder, endpoint, parse_json, stream_call};
use super::keys::ApiKey;
use super::openai::normalized_schema;
use super::{
    ChatRequest, EventStream, FinishReason, LlmClient, LlmError, Message, ProviderId, StreamEvent,
    ToolCall, Usage,
};

/// The API version header value.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A Messages API client for one key.
#[derive(Clone, Debug)]
pub(crate) struct AnthropicClient {
    http: ProviderHttp,
    base_url: String,
    key: ApiKey,
    default_max_tokens: u32,
}

impl AnthropicClient {
    /// A client for `base_url` (up to `/v1`).
    pub(crate) fn new(
        http: ProviderHttp,
        base_url: impl Into<String>,
        key: ApiKey,
        default_max_tokens: u32,
    ) -> Self {
        Self {
            http,
            base_url: base_url.into(),
            key,
            default_max_tokens,
        }
    }

    /// The JSON body sent for `request`.
    pub(crate) fn body(&self, request: &ChatRequest) -> Result<Value, LlmError> {
        request_body(request, self.default_max_tokens)
    }
}

impl LlmClient for AnthropicClient {
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        let body = match self.body(&request) {
            Ok(body) => body,
            Err(error) => return super::http::boxed(futures::stream::once(async { Err(error) })),
        };
        let url = endpoint(&self.base_url, "messages");
        let key = self.key.clone();
        let build = move |client: &reqwest::Client| {
            client
                .post(&url)
                .header("x-api-key", key.expose())
                .header("anthropic-version", ANTHROPIC_VERSION)
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .json(&body)
        };
        stream_call(
            self.http.clone(),
            ProviderId::Anthropic,
            build,
            MessagesDecoder::default(),
            cancel,
        )
    }
}

/// A user message's blocks: its images first, then the text about them, as Anthropic
/// recommends.
fn user_blocks(content: &str, images: &[crate::llm::ImagePart]) -> Vec<Value> {
    let mut blocks: Vec<Value> = images
        .iter()
        .map(|image| {
            json!({"type": "image", "source": {
                "type": "base64",
                "media_type": image.media_type,
                "data": image.data,
            }})
        })
        .collect();
    blocks.push(json!({"type": "text", "text": content}));
    blocks
}

fn request_body(request: &ChatRequest, default_max_tokens: u32) -> Result<Value, LlmError> {
    let mut system = Vec::new();
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::System { content } => {
                system.push(json!({"type": "text", "text": content}));
                continue;
            }
            Message::User { content, images } => ("user", user_blocks(content, images)),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if !content.is_empty() {
                    blocks.push(json!({"type": "text", "text": content}));
                }
                for call in tool_calls {
                    let input =
                        call.arguments_json()
                            .map_err(|error| LlmError::InvalidRequest {
                                provider: ProviderId::Anthropic,
                                message: format!(
                                    "arguments of tool call {} are not JSON: {error}",
                                    call.id
                                ),
                            })?;
                    // The API wants an object; anything else is wrapped so history stays sendable.
                    let input = if input.is_object() {
                        input
                    } else {
                        json!({"value": input})
                    };
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                if blocks.is_empty() {
                    continue;
                }
                ("assistant", blocks)
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        match messages.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(default_max_tokens),
        "messages": messages
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect::<Vec<_>>(),
        "stream": true,
    });
    if let Some(last) = system.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
        body["system"] = Value::Array(system);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = super::types::temperature_json(temperature);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description,
                       "input_schema": normalized_schema(&tool.parameters)})
            })
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!({"type": "auto"});
    }
    Ok(body)
}

/// Decodes Messages API events.
#[derive(Default)]
pub(crate) struct MessagesDecoder {
    blocks: BTreeMap<usize, ToolBlock>,
    tool_count: usize,
    usage: Usage,
    stop_reason: Option<FinishReason>,
}

struct ToolBlock {
    position: usize,
    id: String,
    name: String,
    input: String,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Payload {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Value,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: Value,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

fn text_of(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Maps Anthropic stop reasons.
pub(crate) fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

impl MessagesDecoder {
    /// A content block starts: a tool call's first delta, or text that came with the block.
    fn block_start(
        &mut self,
        index: usize,
        content_block: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) {
        if content_block.get("type").and_then(Value::as_str) == Some("tool_use") {
            let block = ToolBlock {
                position: self.tool_count,
                id: text_of(content_block, "id"),
                name: text_of(content_block, "name"),
                input: String::new(),
            };
            self.tool_count += 1;
            out.push_back(StreamEvent::ToolCallDelta {
                index: block.position,
                id: Some(block.id.clone()),
                name: Some(block.name.clone()),
                arguments: String::new(),
            });
            self.blocks.insert(index, block);
        } else if let Some(text) = content_block.get("text").and_then(Value::as_str)
            && !text.is_empty()
        {
            out.push_back(StreamEvent::TextDelta(text.to_owned()));
        }
    }

    /// A content block grows: answer text, or a fragment of a tool call's arguments.
    fn block_delta(
        &mut self,
        index: usize,
        delta: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), LlmError> {
        let provider = ProviderId::Anthropic;
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                let text = text_of(delta, "text");
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta(text));
                }
            }
            Some("input_json_delta") => {
                let Some(block) = self.blocks.get_mut(&index) else {
                    return Err(LlmError::Malformed {
                        provider,
                        detail: format!(
                            "input_json_delta for block {index}, which is not a tool_use block"
                        ),
                    });
                };
                let fragment = text_of(delta, "partial_json");
                block.input.push_str(&fragment);
                out.push_back(StreamEvent::ToolCallDelta {
                    index: block.position,
                    id: None,
                    name: None,
                    arguments: fragment,
                });
            }
            // Thinking and signature deltas are not part of the answer.
            _ => {}
        }
        Ok(())
    }
}

impl SseDecoder for MessagesDecoder {
    fn event(&mut self, event: &Event, out: &mut VecDeque<StreamEvent>) -> Result<bool, LlmError> {
        let provider = ProviderId::Anthropic;
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        match parse_json::<Payload>(provider, &event.data)? {
            Payload::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    let cache_read = usage.cache_read_input_tokens.unwrap_or(0);
                    self.usage.input_tokens = usage.input_tokens.unwrap_or(0)
                        + cache_read
                        + usage.cache_creation_input_tokens.unwrap_or(0);
                    self.usage.cached_input_tokens = cache_read;
                    self.usage.output_tokens = usage.output_tokens.unwrap_or(0);
                }
            }
            Payload::ContentBlockStart {
                index,
                content_block,
            } => self.block_start(index, &content_block, out),
            Payload::ContentBlockDelta { index, delta } => self.block_delta(index, &delta, out)?,
            Payload::ContentBlockStop { index } => {
                if let Some(block) = self.blocks.remove(&index) {
                    if block.id.is_empty() || block.name.is_empty() {
                        return Err(LlmError::Malformed {
                            provider,
                            detail: format!("tool_use block {index} has no id or name"),
                        });
                    }
                    let arguments = if block.input.trim().is_empty() {
                        "{}".to_owned()
                    } else {
                        block.input
                    };
                    out.push_back(StreamEvent::ToolCall(ToolCall {
                        id: block.id,
                        name: block.name,
                        arguments,
                    }));
                }
            }
            Payload::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.get("stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(stop_reason(reason));
                }
                if let Some(output) = usage.and_then(|usage| usage.output_tokens) {
                    self.usage.output_tokens = output;
                }
            }
            Payload::MessageStop => {
                out.push_back(StreamEvent::Usage(self.usage));
                let reason = self.stop_reason.take().unwrap_or(FinishReason::Stop);
                out.push_back(StreamEvent::Finish(reason));
                return Ok(true);
            }
            Payload::Ping | Payload::Unknown => {}
            Payload::Error { error } => {
                return Err(LlmError::Provider {
                    provider,
                    kind: error.get("type").and_then(Value::as_str).map(str::to_owned),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error")
                        .to_owned(),
                });
            }
        }
        Ok(false)
    }

    fn end(&mut self, _: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        Err(LlmError::Interrupted {
            provider: Some(ProviderId::Anthropic),
            detail: "the stream ended before message_stop".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests;
