//! How the fast path's answer may differ from rmcp's, case by case, each with its reason. Every
//! allowance pins rmcp's side exactly, so an rmcp release that changes its answer fails the test
//! here as well.

use super::Answer;

/// rmcp's priming event at the head of a request's SSE stream (`sse_retry` of 3 s; the event
/// id's request number normalised).
const PRIMING: &str = "data: \nid: 0/_\nretry: 3000\n\n";

/// rmcp's plain-text answer to a body it cannot read as one JSON-RPC message.
const UNREADABLE: &str = "fail to deserialize request body unrecognized JSON-RPC message";

/// How a case may differ.
enum Allowed {
    /// A `tools/call` answered directly: its SSE stream has no priming event and its events no
    /// ids. A direct answer cannot be resumed with `Last-Event-ID` (rmcp's session never saw
    /// it); a dropped stream cancels the call and withdraws its approval, which fails closed.
    /// Otherwise the bytes are rmcp's.
    Unresumable,
    /// The door (`front`) answers in rmcp's stead, with a JSON-RPC error; rmcp's answer is this.
    Door {
        status: u16,
        content_type: Option<&'static str>,
        body: &'static str,
        reason: &'static str,
    },
    /// `DELETE` of a session: rmcp answers 202, the door 200, as clients expect of a DELETE
    /// (200 or 204; some treat 202 as a failure).
    DeleteStatus,
}

/// rmcp reads a body that is not one JSON-RPC message (bad JSON, a scalar, a batch, a wrong
/// `jsonrpc`, no method) as an unsupported media type: 415 with plain text, though the
/// `Content-Type` was right. A client needs a JSON-RPC error (-32700 or -32600) to report it,
/// and 415 tells it to change a header it got right.
const UNREADABLE_REASON: &str = "rmcp answers 415 in plain text; the door answers -32700/-32600";

/// rmcp reads a known method whose params do not fit as a custom request and answers -32601
/// (method not found, the method as message): the door answers -32602 (invalid params).
const PARAMS_REASON: &str = "rmcp answers -32601 for a known method; the door answers -32602";

fn door(status: u16, body: &'static str, reason: &'static str) -> Allowed {
    Allowed::Door {
        status,
        content_type: None,
        body,
        reason,
    }
}

/// What may differ for `case`.
fn allowance(case: &str) -> Option<Allowed> {
    let sse_error = |body| Allowed::Door {
        status: 200,
        content_type: Some("text/event-stream"),
        body,
        reason: PARAMS_REASON,
    };
    Some(match case {
        "tools/call"
        | "tools/call, string id"
        | "tools/call, unicode"
        | "tools/call, unknown tool"
        | "tools/call, bad arguments"
        | "tools/call, large"
        | "tools/call, progress token"
        | "tools/call, extra field"
        | "tools/call, Accept with weights"
        | "tools/call, Content-Type with charset"
        | "tools/call, protocol 2025-06-18" => Allowed::Unresumable,
        "bad JSON" => door(
            415,
            "fail to deserialize request body EOF while parsing a value at line 1 column 39",
            UNREADABLE_REASON,
        ),
        "empty body" => door(
            415,
            "fail to deserialize request body EOF while parsing a value at line 1 column 0",
            UNREADABLE_REASON,
        ),
        "JSON scalar"
        | "wrong jsonrpc version"
        | "missing method"
        | "batch"
        | "batch of tools/call"
        | "empty batch"
        | "tools/call, params not an object" => door(415, UNREADABLE, UNREADABLE_REASON),
        "tools/call, name not a string" => sse_error(
            "data: \nid: 0/_\nretry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":16,\"error\":{\"code\":-32601,\"message\":\"tools/call\"}}\nid: 1/_\n\n",
        ),
        "bad params" => sse_error(
            "data: \nid: 0/_\nretry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":34,\"error\":{\"code\":-32601,\"message\":\"resources/read\"}}\nid: 1/_\n\n",
        ),
        "tools/call, oversized" => door(
            413,
            "Payload Too Large: request body exceeds 262144 bytes",
            "rmcp answers 413 in plain text; the door answers 413 with a JSON-RPC error",
        ),
        "unknown method outside a session" => door(
            400,
            "Bad Request: Session ID is required",
            "a client probing a method before `initialize` falls back on -32601, not on a 400",
        ),
        "server/discover without _meta" => Allowed::Door {
            status: 400,
            content_type: Some("application/json"),
            body: "{\"jsonrpc\":\"2.0\",\"id\":35,\"error\":{\"code\":-32602,\"message\":\"Invalid params: request _meta is missing or has malformed required fields: io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities\"}}",
            reason: "a bare discover is a client probing for 2026-07-28: -32601 sends it to `initialize`",
        },
        "DELETE" => Allowed::DeleteStatus,
        _ => return None,
    })
}

/// Event ids carry the number of the HTTP request within rmcp's session (`<index>/<request>`),
/// which counts only the requests rmcp saw: the request number is normalised away.
fn normalised(answer: &Answer) -> Answer {
    let mut body = String::with_capacity(answer.body.len());
    for line in answer.body.split_inclusive('\n') {
        match line.strip_prefix("id: ").and_then(|id| id.split_once('/')) {
            Some((index, _)) => {
                body.push_str("id: ");
                body.push_str(index);
                body.push_str("/_\n");
            }
            None => body.push_str(line),
        }
    }
    Answer {
        body,
        ..answer.clone()
    }
}

/// rmcp's SSE body without its priming event and its event ids, or `None` when it is not in
/// that form.
fn without_resumption(body: &str) -> Option<String> {
    let events = body.strip_prefix(PRIMING)?;
    let mut plain = String::new();
    for event in events.split_terminator("\n\n") {
        let (data, id) = event.rsplit_once('\n')?;
        id.strip_prefix("id: ")?;
        plain.push_str(data);
        plain.push_str("\n\n");
    }
    Some(plain)
}

fn short(text: &str) -> String {
    text.chars().take(400).collect()
}

fn show(answer: &Answer) -> String {
    format!(
        "{} {:?} session={} {:?}",
        answer.status,
        answer.content_type,
        answer.session_id,
        short(&answer.body)
    )
}

/// Whether `answer` is a JSON-RPC error the door wrote.
fn is_door_error(answer: &Answer) -> bool {
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
    answer.content_type.as_deref() == Some("application/json")
        && body["jsonrpc"] == "2.0"
        && body["error"]["code"].is_i64()
}

/// `None` when `fast` and `rmcp` agree, or differ only as allowed for `case`; otherwise what
/// differs.
pub(super) fn compare(case: &str, fast: &Answer, rmcp: &Answer) -> Option<String> {
    let (fast, rmcp) = (normalised(fast), normalised(rmcp));
    let mut allowed = "";
    let agree = match allowance(case) {
        _ if fast == rmcp => return None,
        None => false,
        Some(Allowed::Unresumable) => {
            without_resumption(&rmcp.body).as_deref() == Some(fast.body.as_str())
                && Answer {
                    body: fast.body.clone(),
                    ..rmcp.clone()
                } == fast
        }
        Some(Allowed::Door {
            status,
            content_type,
            body,
            reason,
        }) => {
            allowed = reason;
            rmcp.status == status
                && rmcp.content_type.as_deref() == content_type
                && rmcp.body == body
                && is_door_error(&fast)
        }
        Some(Allowed::DeleteStatus) => {
            rmcp.status == 202
                && fast.status == 200
                && Answer {
                    status: 200,
                    ..rmcp.clone()
                } == fast
        }
    };
    (!agree).then(|| {
        format!(
            "- {case} (allowed: {allowed:?}):\n    fast: {}\n    rmcp: {}",
            show(&fast),
            show(&rmcp)
        )
    })
}
