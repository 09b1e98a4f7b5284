//! Codex through a ChatGPT account, in its wire formats: the sign-in service (device code,
//! polling, the authorization-code exchange and refresh-token rotation at `/oauth/token`) and
//! the Responses API streamed as SSE (`response.output_text.delta`, `function_call` items,
//! `response.completed` with usage, `response.failed`).
//!
//! Tokens are unsigned JWTs (`alg: none`) whose payload carries what the client reads: `exp`,
//! `email`, and the account id under `https://api.openai.com/auth`.

use serde_json::{Value, json};

use crate::{Reply, SseBuilder};

/// Where the device code is requested.
pub const USER_CODE_PATH: &str = "/api/accounts/deviceauth/usercode";
/// Where a device code is polled.
pub const DEVICE_TOKEN_PATH: &str = "/api/accounts/deviceauth/token";
/// The token endpoint (exchange and refresh).
pub const TOKEN_PATH: &str = "/oauth/token";
/// The Responses endpoint when the base URL is `{server}/backend-api/codex`.
pub const RESPONSES_PATH: &str = "/backend-api/codex/responses";

/// An unsigned JWT with `claims` as its payload.
pub fn jwt(claims: &Value) -> String {
    let header = base64url(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = base64url(claims.to_string().as_bytes());
    format!("{header}.{payload}.")
}

/// `bytes` in unpadded base64url (RFC 4648 §5), as JWTs carry their parts.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let triple = chunk
            .iter()
            .enumerate()
            .fold(0_u32, |acc, (position, byte)| {
                acc | (u32::from(*byte) << (16 - 8 * position))
            });
        for index in 0..=chunk.len() {
            let sextet = (triple >> (18 - 6 * index)) & 0x3f;
            out.push(char::from(ALPHABET[sextet as usize]));
        }
    }
    out
}

/// An access token for `account_id` expiring at `exp` (seconds since the epoch); `tag` makes
/// tokens tell apart.
pub fn access_token(tag: &str, account_id: &str, exp: i64) -> String {
    jwt(&json!({
        "exp": exp,
        "jti": tag,
        "https://api.openai.com/auth": {"chatgpt_account_id": account_id},
    }))
}

/// An id token naming `email` and `account_id`.
pub fn id_token(email: &str, account_id: &str) -> String {
    jwt(&json!({
        "email": email,
        "https://api.openai.com/auth": {"chatgpt_account_id": account_id, "chatgpt_plan_type": "plus"},
    }))
}

/// The device-code answer (`interval` as a string, as the service sends it).
pub fn user_code(device_auth_id: &str, user_code: &str, interval_seconds: u64) -> Reply {
    Reply::json(
        200,
        json!({"device_auth_id": device_auth_id, "user_code": user_code,
               "interval": interval_seconds.to_string()}),
    )
}

/// The service's answer while the code was not entered (403, as Codex's service sends).
pub fn pending() -> Reply {
    Reply::json(
        403,
        json!({"error": {"message": "Device authorization is pending", "code": "deviceauth_pending"}}),
    )
}

/// An RFC 8628 error answer (`authorization_pending`, `slow_down`, `expired_token`,
/// `access_denied`).
pub fn device_error(code: &str) -> Reply {
    Reply::json(400, json!({"error": code, "error_description": code}))
}

/// The code was entered: the authorization code and its PKCE pair.
pub fn authorized(authorization_code: &str, code_verifier: &str) -> Reply {
    Reply::json(
        200,
        json!({"authorization_code": authorization_code, "code_challenge": "challenge",
               "code_verifier": code_verifier}),
    )
}

/// A token answer (exchange or refresh).
pub fn tokens(id_token: &str, access_token: &str, refresh_token: &str) -> Reply {
    Reply::json(
        200,
        json!({"id_token": id_token, "access_token": access_token,
               "refresh_token": refresh_token, "token_type": "Bearer", "expires_in": 3600}),
    )
}

/// A refused refresh (401 with the error code: `refresh_token_expired`,
/// `refresh_token_reused`, `refresh_token_invalidated`).
pub fn refresh_refused(code: &str) -> Reply {
    Reply::json(
        401,
        json!({"error": {"message": "Could not validate your refresh token.", "type": "invalid_request_error", "code": code}}),
    )
}

/// The Responses API's 401.
pub fn unauthorized() -> Reply {
    Reply::json(
        401,
        json!({"error": {"message": "Your authentication token has expired.", "type": "invalid_request_error", "code": "token_expired"}}),
    )
}

fn event(sse: SseBuilder, payload: Value) -> SseBuilder {
    let name = payload
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message")
        .to_owned();
    sse.event(&name, payload)
}

/// `response.created` and the text deltas, without the ending.
pub fn text_frames(pieces: &[&str]) -> SseBuilder {
    let mut sse = event(
        Reply::sse(),
        json!({"type": "response.created", "response": {"id": "resp_fake", "status": "in_progress"}}),
    );
    sse = event(
        sse,
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": "msg_fake", "role": "assistant", "content": []}}),
    );
    for piece in pieces {
        sse = event(
            sse,
            json!({"type": "response.output_text.delta", "item_id": "msg_fake",
                   "output_index": 0, "content_index": 0, "delta": piece}),
        );
    }
    let text: String = pieces.concat();
    event(
        sse,
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "message", "id": "msg_fake", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}}),
    )
}

/// `response.completed` with usage.
pub fn completed(
    sse: SseBuilder,
    input_tokens: u64,
    output_tokens: u64,
    cached_tokens: u64,
) -> SseBuilder {
    event(
        sse,
        json!({"type": "response.completed", "response": {"id": "resp_fake", "status": "completed",
               "usage": {"input_tokens": input_tokens,
                         "input_tokens_details": {"cached_tokens": cached_tokens},
                         "output_tokens": output_tokens,
                         "output_tokens_details": {"reasoning_tokens": 0},
                         "total_tokens": input_tokens + output_tokens}}}),
    )
}

/// A complete streamed text answer (12 in, one token per piece out, 2 cached).
pub fn text(pieces: &[&str]) -> Reply {
    completed(text_frames(pieces), 12, pieces.len() as u64, 2).end()
}

/// A streamed answer calling one tool, its arguments split into `split` deltas.
pub fn function_call(call_id: &str, name: &str, arguments: &str, split: usize) -> Reply {
    let item_id = format!("fc_{call_id}");
    let mut sse = event(
        Reply::sse(),
        json!({"type": "response.created", "response": {"id": "resp_fake", "status": "in_progress"}}),
    );
    sse = event(
        sse,
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "function_call", "id": item_id, "call_id": call_id,
                        "name": name, "arguments": "", "status": "in_progress"}}),
    );
    let characters: Vec<char> = arguments.chars().collect();
    let size = characters.len().div_ceil(split.max(1)).max(1);
    for piece in characters.chunks(size) {
        sse = event(
            sse,
            json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                   "output_index": 0, "delta": piece.iter().collect::<String>()}),
        );
    }
    sse = event(
        sse,
        json!({"type": "response.function_call_arguments.done", "item_id": item_id,
               "output_index": 0, "arguments": arguments}),
    );
    sse = event(
        sse,
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "function_call", "id": item_id, "call_id": call_id,
                        "name": name, "arguments": arguments, "status": "completed"}}),
    );
    completed(sse, 30, 8, 0).end()
}

/// A response that failed (`response.failed` with the error).
pub fn failed(code: &str, message: &str) -> Reply {
    event(
        Reply::sse(),
        json!({"type": "response.created", "response": {"id": "resp_fake", "status": "in_progress"}}),
    )
    .event(
        "response.failed",
        json!({"type": "response.failed", "response": {"id": "resp_fake", "status": "failed",
               "error": {"code": code, "message": message}}}),
    )
    .end()
}
