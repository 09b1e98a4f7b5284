//! What a client token reaches, by its scope (step 4 of the perimeter, after the token was
//! checked):
//! - `mcp`: `/mcp` and below, nothing else.
//! - `chats` (an editor through `souz acp`): the chats it made and their approvals, through a
//!   fixed list of routes ([`chats_route`]): making a chat, its messages, input, events, threads
//!   and cancellation, the live stream of its chats' events, and reading and deciding the
//!   approvals its chats' turns asked for.
//!
//! Invariants:
//! - Deny by default: a route not on the list is 403 `forbidden` before any handler runs, so a
//!   route added later is closed to clients until it is put on the list on purpose.
//! - A chat the client did not make, and an approval not asked by one of its chats, is 404 as a
//!   missing one is: the client learns nothing about the person's other chats.
//! - The check runs here, once, before the handler; `WS /v1/turns/ws` filters its events by the
//!   same rule (`client_made_chat`) since one socket carries many chats.

use axum::http::Method;
use souz_protocol::ClientScope;

use super::error::ApiError;
use crate::runtime::RuntimeHandle;
use crate::token::clients::ClientIdentity;

/// What a request of a `chats` client acts on, once its route is on the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChatsTarget {
    /// `POST /v1/chats`: the chat it makes becomes its own.
    NewChat,
    /// `WS /v1/turns/ws`: the stream filters to its own chats.
    OwnChatsStream,
    /// A route of the chat with this id.
    Chat(String),
    /// The approval with this id (its chat must be one of the client's).
    Approval(String),
}

/// Whether `path` is `/mcp` or below it (all an `mcp` client may call).
fn mcp_route(path: &str) -> bool {
    path == "/mcp" || path.starts_with("/mcp/")
}

/// The target of `method path` for a `chats` client, or `None` when the route is not one it
/// may call.
pub(crate) fn chats_route(method: &Method, path: &str) -> Option<ChatsTarget> {
    let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("POST", ["v1", "chats"]) => Some(ChatsTarget::NewChat),
        ("GET", ["v1", "turns", "ws"]) => Some(ChatsTarget::OwnChatsStream),
        ("GET", ["v1", "chats", id, "messages" | "events" | "threads"])
        | ("POST", ["v1", "chats", id, "messages" | "input" | "cancel-active"])
            if !id.is_empty() =>
        {
            Some(ChatsTarget::Chat((*id).to_owned()))
        }
        ("GET", ["v1", "approvals", id]) | ("POST", ["v1", "approvals", id, "decision"])
            if !id.is_empty() =>
        {
            Some(ChatsTarget::Approval((*id).to_owned()))
        }
        _ => None,
    }
}

/// Whether `client` may make this request: `Ok` to go on, else the refusal to answer with.
pub(crate) async fn admit(
    handle: &RuntimeHandle,
    client: &ClientIdentity,
    method: &Method,
    path: &str,
) -> Result<(), ApiError> {
    match client.scope {
        ClientScope::Mcp if mcp_route(path) => Ok(()),
        ClientScope::Mcp => Err(ApiError::forbidden(
            "An MCP client token is valid on /mcp only; this route needs the operator token \
             (`souz token`).",
        )),
        ClientScope::Chats => {
            let target = chats_route(method, path).ok_or_else(|| {
                ApiError::forbidden(
                    "A chat client token (`souz acp`) reaches the chats it made and their \
                     approvals only; this route needs the operator token (`souz token`).",
                )
            })?;
            match target {
                ChatsTarget::NewChat | ChatsTarget::OwnChatsStream => Ok(()),
                ChatsTarget::Chat(chat_id) => {
                    Ok(handle.client_reaches_chat(&client.id, &chat_id).await?)
                }
                ChatsTarget::Approval(approval_id) => Ok(handle
                    .client_reaches_approval(&client.id, &approval_id)
                    .await?),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mcp_client_reaches_mcp_only() {
        assert!(mcp_route("/mcp") && mcp_route("/mcp/x"));
        assert!(!mcp_route("/mcpx") && !mcp_route("/v1/clients") && !mcp_route("/"));
    }

    #[test]
    fn only_the_listed_routes_are_open_to_a_chats_client() {
        let get = Method::GET;
        let post = Method::POST;
        let chat = |id: &str| Some(ChatsTarget::Chat(id.to_owned()));
        assert_eq!(chats_route(&post, "/v1/chats"), Some(ChatsTarget::NewChat));
        assert_eq!(
            chats_route(&get, "/v1/turns/ws"),
            Some(ChatsTarget::OwnChatsStream)
        );
        assert_eq!(chats_route(&get, "/v1/chats/c1/messages"), chat("c1"));
        assert_eq!(chats_route(&post, "/v1/chats/c1/messages"), chat("c1"));
        assert_eq!(chats_route(&post, "/v1/chats/c1/input"), chat("c1"));
        assert_eq!(chats_route(&post, "/v1/chats/c1/cancel-active"), chat("c1"));
        assert_eq!(chats_route(&get, "/v1/chats/c1/events"), chat("c1"));
        assert_eq!(chats_route(&get, "/v1/chats/c1/threads"), chat("c1"));
        assert_eq!(
            chats_route(&post, "/v1/approvals/a1/decision"),
            Some(ChatsTarget::Approval("a1".into()))
        );
        assert_eq!(
            chats_route(&get, "/v1/approvals/a1"),
            Some(ChatsTarget::Approval("a1".into()))
        );
        for (method, path) in [
            (&get, "/v1/chats"),
            (&get, "/v1/approvals"),
            (&get, "/v1/turns"),
            (&post, "/v1/approvals/a1"),
            (&get, "/v1/approvals/a1/decision"),
            (&Method::DELETE, "/v1/chats/c1"),
            (&Method::PUT, "/v1/chats/c1/settings"),
            (&get, "/v1/chats/c1/settings"),
            (&get, "/v1/chats/c1/ws"),
            (&post, "/v1/chats/c1/attachments"),
            (&post, "/v1/chats/c1/executions/e1/cancel"),
            (&get, "/v1/chats//messages"),
            (&get, "/v1/chats/c1/messages/x"),
            (&get, "/v1/settings"),
            (&post, "/v1/pause"),
            (&get, "/v1/events"),
            (&post, "/v1/clients"),
            (&post, "/mcp"),
            (&get, "v1/chats/c1/messages"),
        ] {
            assert_eq!(chats_route(method, path), None, "{method} {path}");
        }
    }
}
