//! OpenAI Chat Completions and embeddings in their wire format (also what OpenAI-compatible
//! servers such as DashScope, AiTunnel, Ollama, LM Studio and llama.cpp speak).

use serde_json::{Value, json};

use crate::{Reply, SseBuilder};

/// Path of the chat endpoint under the server root.
pub const CHAT_PATH: &str = "/v1/chat/completions";
/// Path of the embeddings endpoint under the server root.
pub const EMBEDDINGS_PATH: &str = "/v1/embeddings";

/// One `chat.completion.chunk` with this `delta` and finish reason.
pub fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

/// The usage chunk OpenAI sends last when `stream_options.include_usage` is set.
pub fn usage_chunk(prompt_tokens: u64, completion_tokens: u64, cached_tokens: u64) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        },
    })
}

/// An SSE body streaming `pieces` as content deltas, without the ending (add more, then
/// `[DONE]`).
pub fn text_frames(pieces: &[&str]) -> SseBuilder {
    let mut sse = Reply::sse().data(chunk(json!({"role": "assistant", "content": ""}), None));
    for piece in pieces {
        sse = sse.data(chunk(json!({"content": piece}), None));
    }
    sse
}

/// A complete streamed text answer with usage (10 in, one token per piece out) and `[DONE]`.
pub fn text(pieces: &[&str]) -> Reply {
    text_frames(pieces)
        .data(chunk(json!({}), Some("stop")))
        .data(usage_chunk(10, pieces.len() as u64, 0))
        .data("[DONE]")
        .end()
}

/// A streamed answer calling tools, each call's arguments split into `split` pieces across
/// chunks, the way OpenAI sends them.
pub fn tool_calls(calls: &[(&str, &str, &str)], split: usize) -> Reply {
    let mut sse = Reply::sse().data(chunk(json!({"role": "assistant", "content": null}), None));
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        sse = sse.data(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                   "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        for piece in split_text(arguments, split) {
            sse = sse.data(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    sse.data(chunk(json!({}), Some("tool_calls")))
        .data(usage_chunk(20, 5, 0))
        .data("[DONE]")
        .end()
}

/// Splits `text` into `parts` pieces on character boundaries.
pub fn split_text(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(parts.max(1)).max(1);
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

/// An error response in OpenAI's shape.
pub fn error(status: u16, message: &str) -> Reply {
    Reply::json(
        status,
        json!({"error": {"message": message, "type": "fake_error", "code": null}}),
    )
}

/// An embeddings response (`data` deliberately in reverse index order, as the API allows).
pub fn embeddings(vectors: &[Vec<f32>]) -> Reply {
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .rev()
        .map(|(index, vector)| json!({"object": "embedding", "index": index, "embedding": vector}))
        .collect();
    Reply::json(
        200,
        json!({"object": "list", "data": data, "model": "fake-embedding",
               "usage": {"prompt_tokens": 3, "total_tokens": 3}}),
    )
}
