//! Anthropic Messages API in its wire format: named SSE events (`message_start`,
//! `content_block_start`, `content_block_delta` with `text_delta` / `input_json_delta`,
//! `content_block_stop`, `message_delta`, `message_stop`, `ping`, `error`).

use serde_json::{Value, json};

use crate::openai::split_text;
use crate::{Reply, SseBuilder};

/// Path of the Messages endpoint under the server root.
pub const MESSAGES_PATH: &str = "/v1/messages";

/// `message_start` with this input usage.
pub fn message_start(input_tokens: u64, cache_read_tokens: u64) -> Value {
    json!({
        "type": "message_start",
        "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": cache_read_tokens},
        },
    })
}

/// The start of a streamed answer: `message_start` and a `ping`.
pub fn start_frames() -> SseBuilder {
    Reply::sse()
        .event("message_start", message_start(25, 5))
        .event("ping", json!({"type": "ping"}))
}

/// Adds a text block streaming `pieces` at block `index`.
pub fn text_block(mut sse: SseBuilder, index: usize, pieces: &[&str]) -> SseBuilder {
    sse = sse.event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    );
    for piece in pieces {
        sse = sse.event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
        );
    }
    sse.event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

/// A tool call the fake model makes: its id, the tool's name and the input JSON.
#[derive(Debug, Clone, Copy)]
pub struct ToolUse<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub input_json: &'a str,
}

/// Adds a tool_use block at `index` whose input JSON arrives in `split` pieces.
pub fn tool_use_block(
    mut sse: SseBuilder,
    index: usize,
    tool_use: ToolUse<'_>,
    split: usize,
) -> SseBuilder {
    let ToolUse {
        id,
        name,
        input_json,
    } = tool_use;
    sse = sse.event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index,
               "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    );
    for piece in split_text(input_json, split) {
        sse = sse.event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    sse.event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

/// Adds `message_delta` (stop reason, output tokens) and `message_stop`, and ends the body.
pub fn finish(sse: SseBuilder, stop_reason: &str, output_tokens: u64) -> Reply {
    sse.event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": output_tokens}}),
    )
    .event("message_stop", json!({"type": "message_stop"}))
    .end()
}

/// A complete streamed text answer.
pub fn text(pieces: &[&str]) -> Reply {
    finish(
        text_block(start_frames(), 0, pieces),
        "end_turn",
        pieces.len() as u64,
    )
}

/// An error response in Anthropic's shape.
pub fn error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(
        status,
        json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}
