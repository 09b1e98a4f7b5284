//! GigaChat in its wire format: the OAuth token endpoint (`POST /api/v2/oauth`, form body
//! `scope=...`, `RqUID` header, Basic auth with the authorization key) and chat completions
//! streamed as SSE with `function_call` / `functions_state_id`.

use serde_json::{Value, json};

use crate::{Reply, SseBuilder};

/// Path of the OAuth endpoint under the server root.
pub const OAUTH_PATH: &str = "/api/v2/oauth";
/// Path of the chat endpoint under the server root.
pub const CHAT_PATH: &str = "/api/v1/chat/completions";

/// A token response; `expires_at` is in milliseconds since the epoch, as GigaChat sends it.
pub fn token(access_token: &str, expires_at_ms: u64) -> Reply {
    Reply::json(
        200,
        json!({"access_token": access_token, "expires_at": expires_at_ms}),
    )
}

/// One streamed chunk.
pub fn chunk(delta: Value, finish_reason: Option<&str>, usage: Option<Value>) -> Value {
    let mut choice = json!({"delta": delta, "index": 0});
    if let Some(reason) = finish_reason {
        choice["finish_reason"] = json!(reason);
    }
    let mut chunk = json!({"choices": [choice], "created": 1_700_000_000,
                           "model": "GigaChat-2-Max:fake", "object": "chat.completion"});
    if let Some(usage) = usage {
        chunk["usage"] = usage;
    }
    chunk
}

/// GigaChat's usage object.
pub fn usage(prompt_tokens: u64, completion_tokens: u64, precached: u64) -> Value {
    json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
           "total_tokens": prompt_tokens + completion_tokens,
           "precached_prompt_tokens": precached})
}

/// Text deltas, without the ending.
pub fn text_frames(pieces: &[&str]) -> SseBuilder {
    let mut sse = Reply::sse();
    for piece in pieces {
        sse = sse.data(chunk(
            json!({"content": piece, "role": "assistant"}),
            None,
            None,
        ));
    }
    sse
}

/// A complete streamed text answer with usage and `[DONE]`.
pub fn text(pieces: &[&str]) -> Reply {
    text_frames(pieces)
        .data(chunk(
            json!({"content": ""}),
            Some("stop"),
            Some(usage(12, pieces.len() as u64, 2)),
        ))
        .data("[DONE]")
        .end()
}

/// A streamed function call: optional lead-in text, then the call (GigaChat sends the call
/// whole, arguments as a JSON object, in the chunk that finishes with `function_call`).
pub fn function_call(lead_in: &[&str], name: &str, arguments: Value, state_id: &str) -> Reply {
    text_frames(lead_in)
        .data(chunk(
            json!({"content": "", "role": "assistant",
                   "function_call": {"name": name, "arguments": arguments},
                   "functions_state_id": state_id}),
            Some("function_call"),
            Some(usage(30, 8, 0)),
        ))
        .data("[DONE]")
        .end()
}

/// An error response in GigaChat's shape.
pub fn error(status: u16, message: &str) -> Reply {
    Reply::json(status, json!({"status": status, "message": message}))
}
