//! The Responses API as the ChatGPT backend speaks it: the request built from Souz's messages
//! and tools, and its server-sent events decoded into Souz's stream events.
//!
//! Request: `{model, instructions, input, tools, tool_choice: "auto", parallel_tool_calls,
//! store: false, stream: true, include: [], prompt_cache_key}`. System messages become
//! `instructions`; a user message is a `message` item of `input_text` (and `input_image`)
//! parts; an assistant message is a `message` item of `output_text` plus one `function_call`
//! item (`call_id`, `name`, `arguments`) per tool call; a tool result is a
//! `function_call_output` item (`call_id`, `output`). Tools are `{type: "function", name,
//! description, strict: false, parameters}`. The backend refuses `max_output_tokens` and
//! `temperature`, so neither is sent.
//!
//! Events read (by `type`; the `event:` line is not needed): `response.output_text.delta`
//! (`delta`), `response.output_item.added` and `response.output_item.done` (`item` with
//! `type: "function_call"`, `id`, `call_id`, `name`, `arguments`),
//! `response.function_call_arguments.delta` (`item_id`, `delta`), `response.completed`
//! (`response.usage`: `input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`),
//! `response.incomplete` (`response.incomplete_details.reason`), `response.failed`
//! (`response.error`: `code`, `message`) and `error` (`code`, `message`). Everything else is
//! skipped.
//!
//! Invariants: a call is emitted whole once, at its `output_item.done` (whose `arguments` are
//! authoritative), in the order the calls were added; the stream is complete only at
//! `response.completed` or `response.incomplete`; a body that ends earlier is an interruption;
//! `response.failed` and `error` end it with the provider's error.

use std::collections::VecDeque;

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{Value, json};

use super::PROVIDER;
use crate::llm::http::{SseDecoder, parse_json};
use crate::llm::openai::normalized_schema;
use crate::llm::{ChatRequest, FinishReason, LlmError, Message, StreamEvent, ToolCall, Usage};

/// Said when a conversation has no system message (the backend requires instructions).
const DEFAULT_INSTRUCTIONS: &str = "You are a helpful assistant.";

/// The JSON body for `request`; `cache_key` groups one conversation's calls.
pub(crate) fn request_body(request: &ChatRequest, cache_key: &str) -> Value {
    let mut instructions = Vec::new();
    let mut input = Vec::new();
    for message in &request.messages {
        match message {
            Message::System { content } => instructions.push(content.as_str()),
            Message::User { content, images } => {
                let mut parts = vec![json!({"type": "input_text", "text": content})];
                for image in images {
                    parts.push(json!({"type": "input_image", "image_url": image.data_url()}));
                }
                input.push(json!({"type": "message", "role": "user", "content": parts}));
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": content}],
                    }));
                }
                for call in tool_calls {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }));
                }
            }
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => input.push(json!({
                "type": "function_call_output",
                "call_id": tool_call_id,
                "output": content,
            })),
        }
    }
    let instructions = if instructions.is_empty() {
        DEFAULT_INSTRUCTIONS.to_owned()
    } else {
        instructions.join("\n\n")
    };
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "strict": false,
                "parameters": normalized_schema(&tool.parameters),
            })
        })
        .collect();
    json!({
        "model": request.model,
        "instructions": instructions,
        "input": input,
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": !request.tools.is_empty(),
        "store": false,
        "stream": true,
        "include": [],
        "prompt_cache_key": cache_key,
    })
}

/// Decodes the Responses event stream.
#[derive(Default)]
pub(crate) struct ResponsesDecoder {
    /// Item ids of the function calls added so far, in order (a call's index is its position).
    calls: Vec<String>,
    /// Whether a call was emitted.
    called: bool,
}

#[derive(Deserialize)]
struct WireEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    item: Option<Item>,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize, Default)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl ResponsesDecoder {
    /// The position of the call whose item id is `id`, adding it when new.
    fn index(&mut self, id: &str) -> usize {
        if let Some(position) = self.calls.iter().position(|known| known == id) {
            return position;
        }
        self.calls.push(id.to_owned());
        self.calls.len() - 1
    }

    fn finish(&mut self, response: Option<&Value>, out: &mut VecDeque<StreamEvent>, cut: bool) {
        if let Some(usage) = response
            .and_then(|response| response.get("usage"))
            .and_then(|usage| serde_json::from_value::<WireUsage>(usage.clone()).ok())
        {
            out.push_back(StreamEvent::Usage(Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cached_input_tokens: usage.input_tokens_details.unwrap_or_default().cached_tokens,
            }));
        }
        let reason = if cut {
            let why = response
                .and_then(|response| response.pointer("/incomplete_details/reason"))
                .and_then(Value::as_str)
                .unwrap_or("incomplete");
            match why {
                "max_output_tokens" => FinishReason::Length,
                "content_filter" => FinishReason::ContentFilter,
                other => FinishReason::Other(other.to_owned()),
            }
        } else if self.called {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        out.push_back(StreamEvent::Finish(reason));
    }
}

fn provider_error(code: Option<String>, message: Option<String>) -> LlmError {
    LlmError::Provider {
        provider: PROVIDER,
        kind: code,
        message: message.unwrap_or_else(|| "the response failed".to_owned()),
    }
}

impl SseDecoder for ResponsesDecoder {
    fn event(&mut self, event: &Event, out: &mut VecDeque<StreamEvent>) -> Result<bool, LlmError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(false);
        }
        let wire: WireEvent = parse_json(PROVIDER, data)?;
        match wire.kind.as_str() {
            "response.output_text.delta" => {
                if let Some(text) = wire.delta.filter(|text| !text.is_empty()) {
                    out.push_back(StreamEvent::TextDelta(text));
                }
            }
            "response.output_item.added" => {
                if let Some(item) = wire.item.filter(|item| item.kind == "function_call") {
                    let key = item.id.or(item.call_id.clone()).unwrap_or_default();
                    let index = self.index(&key);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index,
                        id: item.call_id,
                        name: item.name,
                        arguments: item.arguments.unwrap_or_default(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(id), Some(delta)) = (wire.item_id, wire.delta) {
                    let index = self.index(&id);
                    out.push_back(StreamEvent::ToolCallDelta {
                        index,
                        id: None,
                        name: None,
                        arguments: delta,
                    });
                }
            }
            "response.output_item.done" => {
                if let Some(item) = wire.item.filter(|item| item.kind == "function_call") {
                    let name = item.name.filter(|name| !name.is_empty()).ok_or_else(|| {
                        LlmError::Malformed {
                            provider: PROVIDER,
                            detail: "a function call without a name".to_owned(),
                        }
                    })?;
                    let key = item.id.clone().or(item.call_id.clone()).unwrap_or_default();
                    self.index(&key);
                    let id = item
                        .call_id
                        .filter(|id| !id.is_empty())
                        .unwrap_or_else(|| format!("call_{}", uuid::Uuid::new_v4().simple()));
                    let arguments = item
                        .arguments
                        .filter(|arguments| !arguments.trim().is_empty())
                        .unwrap_or_else(|| "{}".to_owned());
                    self.called = true;
                    out.push_back(StreamEvent::ToolCall(ToolCall {
                        id,
                        name,
                        arguments,
                    }));
                }
            }
            "response.completed" => {
                self.finish(wire.response.as_ref(), out, false);
                return Ok(true);
            }
            "response.incomplete" => {
                self.finish(wire.response.as_ref(), out, true);
                return Ok(true);
            }
            "response.failed" => {
                let error = wire
                    .response
                    .as_ref()
                    .and_then(|response| response.get("error"));
                let text = |field: &str| {
                    error
                        .and_then(|error| error.get(field))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                return Err(provider_error(text("code"), text("message")));
            }
            "error" => return Err(provider_error(wire.code, wire.message)),
            _ => {}
        }
        Ok(false)
    }

    fn end(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError> {
        Err(LlmError::Interrupted {
            provider: Some(PROVIDER),
            detail: "the stream ended before response.completed".to_owned(),
        })
    }
}
