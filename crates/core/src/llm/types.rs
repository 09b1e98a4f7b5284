//! Provider-neutral request, message, tool and stream-event types.
//!
//! Messages are an enum tagged by role, so a tool result always carries the id of the call it
//! answers and an assistant message always carries its tool calls: the linkage the original
//! kept in loosely typed fields is enforced by the types.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The text.
        content: String,
    },
    /// What the person said.
    User {
        /// The text.
        content: String,
        /// Images the person attached, sent as image parts (kept for the turn they came
        /// with: [`Message::without_images`] leaves a note in their place).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImagePart>,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The text (may be empty when the model only calls tools).
        #[serde(default)]
        content: String,
        /// Tools the model asked to call, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The id of the call this answers.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// The result text (usually JSON).
        content: String,
        /// Whether the tool failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
            images: Vec::new(),
        }
    }

    /// A user message with attached images.
    pub fn user_with_images(content: impl Into<String>, images: Vec<ImagePart>) -> Self {
        Self::User {
            content: content.into(),
            images,
        }
    }

    /// This message with each image replaced by a line naming it: what a conversation keeps
    /// once the turn that showed the images is over (the bytes are not sent again).
    pub fn without_images(self) -> Self {
        match self {
            Self::User { content, images } if !images.is_empty() => {
                let mut content = content;
                for image in images {
                    content.push_str(&format!(
                        "\n[The person showed you the image {} in this message; it is no longer \
                         attached.]",
                        image.name
                    ));
                }
                Self::user(content)
            }
            other => other,
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    /// A successful tool result answering `call`.
    pub fn tool_result(call: &ToolCall, content: impl Into<String>) -> Self {
        Self::Tool {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.into(),
            is_error: false,
        }
    }

    /// The message's role.
    pub fn role(&self) -> Role {
        match self {
            Self::System { .. } => Role::System,
            Self::User { .. } => Role::User,
            Self::Assistant { .. } => Role::Assistant,
            Self::Tool { .. } => Role::Tool,
        }
    }
}

/// An image in a user message.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    /// The file name it was attached as.
    pub name: String,
    /// Its media type (`image/png`, `image/jpeg`, `image/gif`, `image/webp`).
    pub media_type: String,
    /// Its bytes in standard base64.
    pub data: String,
}

impl ImagePart {
    /// The image as a `data:` URL (Chat Completions' `image_url`).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }
}

impl fmt::Debug for ImagePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImagePart")
            .field("name", &self.name)
            .field("media_type", &self.media_type)
            .field("base64_len", &self.data.len())
            .finish()
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions.
    System,
    /// The person.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Id linking the call to its result (the provider's, or one we made when it sent none).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Arguments as the model wrote them: a JSON text, not validated here (a tool that gets
    /// invalid JSON answers the model with an error it can correct).
    pub arguments: String,
}

impl ToolCall {
    /// The arguments parsed as JSON.
    pub fn arguments_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            return Ok(serde_json::Value::Object(serde_json::Map::new()));
        }
        serde_json::from_str(&self.arguments)
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDeclaration {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub parameters: serde_json::Value,
}

/// A chat request. `model` is the provider's own model name (see [`super::models`] for
/// resolving what a person typed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The provider's model name.
    pub model: String,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default)]
    pub tools: Vec<ToolDeclaration>,
    /// Sampling temperature; `None` leaves the provider's default.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Most tokens the answer may have; `None` uses the configured default.
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

impl ChatRequest {
    /// A request for `model` with `messages` and nothing else set.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            tools: Vec::new(),
            temperature: None,
            max_tokens: None,
        }
    }
}

/// Token counts of one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read (prompt), cached ones included.
    pub input_tokens: u64,
    /// Tokens written (completion).
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    pub cached_input_tokens: u64,
}

impl Usage {
    /// As the chat API sends it.
    pub fn on_wire(&self) -> souz_protocol::chat::Usage {
        souz_protocol::chat::Usage {
            prompt_tokens: self.input_tokens,
            completion_tokens: self.output_tokens,
            total_tokens: self.total(),
            precached_tokens: self.cached_input_tokens,
        }
    }

    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds `other` (usage of several calls of one turn).
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It hit the token limit.
    Length,
    /// It wants tool results.
    ToolCalls,
    /// The provider filtered the answer.
    ContentFilter,
    /// Something else, as the provider named it.
    Other(String),
}

/// One event of a streamed answer. A stream is a sequence of `Result<StreamEvent, LlmError>`:
/// an `Err` is the error event, and nothing follows it.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// More answer text.
    TextDelta(String),
    /// A piece of a tool call as it arrives (for live display); `index` orders calls.
    ToolCallDelta {
        /// Position of the call in the answer.
        index: usize,
        /// Its id, when this piece carries it.
        id: Option<String>,
        /// Its name, when this piece carries it.
        name: Option<String>,
        /// The next fragment of the arguments.
        arguments: String,
    },
    /// A tool call, complete.
    ToolCall(ToolCall),
    /// Token counts (sent once, before `Finish`, when the provider reports them).
    Usage(Usage),
    /// The answer is complete; always the last event of a successful stream.
    Finish(FinishReason),
}

/// A whole answer, collected from a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The text.
    pub content: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Token counts, if the provider reported them.
    pub usage: Option<Usage>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
}

impl ChatResponse {
    /// The answer as a message to append to the history.
    pub fn into_message(self) -> Message {
        Message::Assistant {
            content: self.content,
            tool_calls: self.tool_calls,
        }
    }
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stop => f.write_str("stop"),
            Self::Length => f.write_str("length"),
            Self::ToolCalls => f.write_str("tool_calls"),
            Self::ContentFilter => f.write_str("content_filter"),
            Self::Other(other) => f.write_str(other),
        }
    }
}

/// A sampling temperature as a JSON number: the value as the person typed it (`0.3`), not the
/// `f32`'s binary value widened to `f64` (`0.30000001192092896`), which `json!(f32)` sends.
/// The shortest decimal that reads back as the same `f32` is the one they typed.
pub(crate) fn temperature_json(temperature: f32) -> serde_json::Value {
    temperature
        .to_string()
        .parse::<f64>()
        .map_or(serde_json::Value::Null, serde_json::Value::from)
}

#[cfg(test)]
mod temperature_tests {
    #[test]
    fn a_temperature_is_sent_as_typed() {
        for (typed, sent) in [(0.3_f32, "0.3"), (0.7, "0.7"), (1.0, "1.0"), (0.05, "0.05")] {
            assert_eq!(super::temperature_json(typed).to_string(), sent);
        }
        assert_eq!(
            serde_json::json!(0.3_f32).to_string(),
            "0.30000001192092896",
            "why: json! widens the f32"
        );
    }
}
