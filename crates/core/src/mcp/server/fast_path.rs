//! The MCP fast path: the one place where Souz answers a request to `/mcp` in rmcp's stead, for
//! speed. Everything else at `/mcp` is rmcp's `StreamableHttpService`, untouched.
//!
//! **What it answers.** Only `tools/call` in a session — most of what comes in:
//! - [`plain_tools_call`] reads a plain `tools/call` body (exactly `jsonrpc`, `id`, `method`,
//!   `params`) with a small struct parse instead of rmcp's typed one;
//! - [`shortcut`] takes such a call POSTed in a session when rmcp would hand it to the session
//!   unchanged, and writes the SSE response as rmcp writes one;
//! - [`direct`] follows the call in the HTTP request's own task instead of rmcp's session
//!   worker (also for calls that came through rmcp's request path, from
//!   [`Sessions::create_stream`](super::sessions::Sessions)).
//!
//! **Which rmcp rules it re-implements** (rmcp's POST path, `tower.rs` `handle_post`): the
//! `Accept` check (both media types), the `Content-Type` check, the session's existence, the
//! `MCP-Protocol-Version` header (a version with sessions, once) and the request `_meta`
//! protocol version rules (none on this path), the Origin check (left to rmcp: a request with
//! `Origin` is not taken), the typed parse of `tools/call`, and the SSE framing of
//! `ServerSseMessage` (`data:`, `id:`, `retry:`, the `:` keep-alive comment). Anything it cannot
//! tell for sure goes to rmcp, which answers it as before.
//!
//! **Checked against rmcp 3.11.0** (the workspace pins `~3.11`). The test
//! `mcp::server::tests::fast_path_equivalence` sends a corpus of requests over real HTTP to an
//! endpoint with this path and to one without it ([`FastPath::Off`]: rmcp's own path, Souz's
//! handler behind it) and requires the same status, the same headers that matter and the same
//! body bytes, modulo session ids; the differences it allows are listed there, each with its
//! reason, with rmcp's side pinned. An rmcp release that changes its bytes fails that test:
//! change this module with it.
//!
//! Invariant: the fast path never answers what rmcp would refuse, and answers what it takes with
//! rmcp's head and bytes, except that a direct answer carries no SSE priming event and no event
//! ids (it cannot be resumed; a dropped stream cancels the call, which fails closed).

pub(crate) mod direct;
pub(crate) mod shortcut;

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, RequestId,
};
use serde::Deserialize;

/// Whether an endpoint answers by the fast path. `Off` (tests only) is rmcp's own path: no
/// door, no shortcut, no direct answers; the reference the fast path is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FastPath {
    /// The fast path and the door in front of rmcp (what the daemon serves).
    On,
    /// rmcp's own path only (the equivalence test's reference).
    #[cfg(test)]
    Off,
}

/// A `tools/call` request read by [`plain_tools_call`]: its id and params, `_meta` included.
#[derive(Debug)]
pub(crate) struct PlainCall {
    /// The request's id.
    pub id: RequestId,
    /// The params, with their `_meta` in `params.meta` (rmcp's typed parse moves it to the
    /// request's extensions: [`PlainCall::into_message`] does the same).
    pub params: CallToolRequestParams,
}

impl PlainCall {
    /// The message rmcp's typed parse makes of the same bytes.
    pub(crate) fn into_message(self) -> ClientJsonRpcMessage {
        let Self { id, mut params } = self;
        let meta = params.meta.take();
        let mut request = CallToolRequest::new(params);
        if let Some(meta) = meta {
            request.extensions.insert(meta);
        }
        ClientJsonRpcMessage::request(ClientRequest::CallToolRequest(request), id)
    }
}

/// A `tools/call` request as the typed parse reads it, found without that parse (rmcp parses
/// the message again unless the [`shortcut`] answers it; this is most of what comes in).
/// `None` sends the message through the door's whole typed check: anything else, or anything
/// unusual about it (another field, a duplicate one, params that do not fit).
pub(crate) fn plain_tools_call(bytes: &[u8]) -> Option<PlainCall> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Plain<'a> {
        #[serde(borrow)]
        jsonrpc: Cow<'a, str>,
        id: RequestId,
        #[serde(borrow)]
        method: Cow<'a, str>,
        params: CallToolRequestParams,
    }
    serde_json::from_slice::<Plain<'_>>(bytes)
        .ok()
        .filter(|plain| plain.jsonrpc == "2.0" && plain.method == "tools/call")
        .map(|plain| PlainCall {
            id: plain.id,
            params: plain.params,
        })
}
