//! The security perimeter every request crosses, in this order:
//!
//! 1. `Host` must name this daemon (the bound address or `localhost`, with the right port, or a
//!    configured extra host) and `Origin`, when present, must be allowed: else 403. This is the
//!    DNS-rebinding defence and it covers every route, WebSocket upgrades included.
//! 2. A body whose declared length is over the limit gets 413 before it is read; a chunked body
//!    is cut off at the limit.
//! 3. `/v1/**` and `/mcp` need `Authorization: Bearer <token>` (constant-time check): else 401.
//!    `/`, `/health`, `/docs*`, the web UI (`/app*`), OAuth discovery (`/.well-known/*`) and
//!    the [`PUBLIC_V1`] routes (the daemon's identity proof, the web UI's code exchange, the
//!    MCP OAuth redirect, which only completes a login the operator started) are public.
//! 4. Capabilities: the operator token reaches everything; a client token reaches what its
//!    scope allows ([`client_scope`]: `/mcp` only, or the chats it made and their approvals)
//!    and gets 403 `forbidden` anywhere else. The [`Credential`] goes with the request, so the
//!    MCP server names the requester by its token, never by what it calls itself.
//!
//! Browsers cannot set headers on `new WebSocket(...)`, so a WebSocket upgrade may present the
//! token as the subprotocol `souz.token.<token>` instead, offered together with `souz`; the
//! answer selects `souz` (never echoing the token). Only upgrade requests may do this, and they
//! cross steps 1 and 2 first like everything else, so a page from a foreign origin still gets
//! 403 before its token is even looked at.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use souz_protocol::ErrorCode;

use super::client_scope;
use super::error::ApiError;
use crate::config::ServerConfig;
use crate::config::server::normalize_origin;
use crate::runtime::RuntimeHandle;
use crate::token::Credential;

/// Which hosts and origins are accepted, and how big a body may be.
#[derive(Debug, Clone)]
pub(crate) struct Perimeter {
    hosts: Arc<HashSet<String>>,
    origins: Arc<HashSet<String>>,
    body_limit: u64,
}

impl Perimeter {
    /// The perimeter of a gateway bound to `bound` with `server` settings.
    pub(crate) fn new(server: &ServerConfig, bound: SocketAddr) -> Self {
        let port = bound.port();
        let mut hosts: HashSet<String> = HashSet::new();
        hosts.insert(format!("localhost:{port}"));
        hosts.insert(bound.to_string().to_ascii_lowercase());
        if bound.ip().is_unspecified() {
            hosts.insert(format!("127.0.0.1:{port}"));
            hosts.insert(format!("[::1]:{port}"));
        }
        hosts.extend(
            server
                .allowed_hosts
                .iter()
                .map(|host| host.trim().to_ascii_lowercase()),
        );
        let mut origins: HashSet<String> =
            hosts.iter().map(|host| format!("http://{host}")).collect();
        origins.extend(
            server
                .allowed_origins
                .iter()
                .filter_map(|origin| normalize_origin(origin).ok()),
        );
        Self {
            hosts: Arc::new(hosts),
            origins: Arc::new(origins),
            body_limit: server.body_limit.bytes(),
        }
    }

    /// Every accepted `Host` value, sorted (for rmcp's own check on `/mcp`).
    pub(crate) fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = self.hosts.iter().cloned().collect();
        hosts.sort();
        hosts
    }

    /// Every accepted `Origin` value, sorted (for rmcp's own check on `/mcp`).
    pub(crate) fn origins(&self) -> Vec<String> {
        let mut origins: Vec<String> = self.origins.iter().cloned().collect();
        origins.sort();
        origins
    }

    /// Whether `host` (the `Host` header) names this daemon.
    pub(crate) fn host_allowed(&self, host: &str) -> bool {
        self.hosts.contains(&host.trim().to_ascii_lowercase())
    }

    /// Whether `origin` (the `Origin` header) may call this daemon.
    pub(crate) fn origin_allowed(&self, origin: &str) -> bool {
        self.origins.contains(&origin.trim().to_ascii_lowercase())
    }

    /// The body limit in bytes.
    pub(crate) fn body_limit(&self) -> u64 {
        self.body_limit
    }

    /// The body limit of `path`: `[server] body_limit`, raised for a speech upload to what
    /// the speech route itself accepts (its own bound, checked again there).
    pub(crate) fn limit_for(&self, path: &str) -> u64 {
        if path == SPEECH_UPLOAD {
            self.body_limit.max(SPEECH_UPLOAD_LIMIT)
        } else {
            self.body_limit
        }
    }

    /// Checks `Host` and `Origin`.
    pub(crate) fn check_headers(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let host = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        if !self.host_allowed(host) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                ErrorCode::ForbiddenHost,
                "Host header does not name this Souz daemon.",
            ));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let allowed = origin
                .to_str()
                .map(|origin| self.origin_allowed(origin))
                .unwrap_or(false);
            if !allowed {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    ErrorCode::ForbiddenOrigin,
                    "Origin is not allowed; add it to [server] allowed_origins to permit it.",
                ));
            }
        }
        Ok(())
    }
}

/// The route that takes audio uploads larger than the default body limit.
pub(crate) const SPEECH_UPLOAD: &str = "/v1/speech/transcriptions";
/// Its body limit: the largest audio file plus the multipart framing and fields.
pub(crate) const SPEECH_UPLOAD_LIMIT: u64 =
    crate::runtime::facade::MAX_SPEECH_UPLOAD as u64 + (64 << 10);

/// Middleware: Host/Origin checks and the body limit (steps 1 and 2).
pub(crate) async fn guard(
    State(perimeter): State<Perimeter>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(error) = perimeter.check_headers(request.headers()) {
        return error.into_response();
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let body_limit = perimeter.limit_for(request.uri().path());
    if declared.is_some_and(|length| length > body_limit) {
        return ApiError::payload_too_large(body_limit).into_response();
    }
    let limit = usize::try_from(body_limit).unwrap_or(usize::MAX);
    let (parts, body) = request.into_parts();
    let body = axum::body::Body::new(http_body_util::Limited::new(body, limit));
    next.run(Request::from_parts(parts, body)).await
}

/// Routes under `/v1` that need no token: a client checks the daemon's identity before it
/// sends one, the web UI trades a one-time code for one, and an authorization server sends
/// the browser back with a code for a login the operator started (its `state` is the proof).
pub(crate) const PUBLIC_V1: &[&str] = &[
    "/v1/identity",
    "/v1/ui-codes/exchange",
    "/v1/mcp/oauth/callback",
];

/// Whether a path needs the bearer token.
pub(crate) fn requires_token(path: &str) -> bool {
    let protected = ["/v1", "/mcp"].iter().any(|prefix| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    protected && !path.contains("/.well-known/") && !PUBLIC_V1.contains(&path)
}

/// The subprotocol a browser offers with [`TOKEN_SUBPROTOCOL_PREFIX`], and the one selected.
pub(crate) const SUBPROTOCOL: &str = "souz";
/// Prefix of the subprotocol that carries the token on a browser's WebSocket upgrade.
pub(crate) const TOKEN_SUBPROTOCOL_PREFIX: &str = "souz.token.";

/// Proof, inserted by [`authenticate`], that the request carried the token. Handlers take it as
/// an extractor; without the middleware it fails closed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Authenticated;

/// Middleware: the bearer token on `/v1/**` and `/mcp` (step 3).
pub(crate) async fn authenticate(
    State(handle): State<RuntimeHandle>,
    mut request: Request,
    next: Next,
) -> Response {
    if !requires_token(request.uri().path()) {
        return next.run(request).await;
    }
    let (presented, via_subprotocol) = match bearer(request.headers()) {
        Some(token) => (Some(token), false),
        None => (websocket_token(request.headers()), true),
    };
    match presented.map(|token| handle.authenticate(token)) {
        Some(Some(credential)) => {
            if let Credential::Client(client) = &credential
                && let Err(refused) =
                    client_scope::admit(&handle, client, request.method(), request.uri().path())
                        .await
            {
                return refused.into_response();
            }
            let offered_souz =
                via_subprotocol && offers_subprotocol(request.headers(), SUBPROTOCOL);
            request.extensions_mut().insert(Authenticated);
            request.extensions_mut().insert(credential);
            let mut response = next.run(request).await;
            if offered_souz
                && response.status() == StatusCode::SWITCHING_PROTOCOLS
                && !response
                    .headers()
                    .contains_key(header::SEC_WEBSOCKET_PROTOCOL)
            {
                response.headers_mut().insert(
                    header::SEC_WEBSOCKET_PROTOCOL,
                    header::HeaderValue::from_static(SUBPROTOCOL),
                );
            }
            response
        }
        Some(None) => ApiError::unauthorized("The bearer token is not valid; see `souz token`.")
            .into_response(),
        None => ApiError::unauthorized(
            "Send Authorization: Bearer <token>; `souz token` prints the token.",
        )
        .into_response(),
    }
}

/// The token offered as a `souz.token.<token>` subprotocol, on WebSocket upgrades only.
fn websocket_token(headers: &HeaderMap) -> Option<&str> {
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("websocket"));
    if !upgrade {
        return None;
    }
    subprotocols(headers)
        .find_map(|protocol| protocol.strip_prefix(TOKEN_SUBPROTOCOL_PREFIX))
        .filter(|token| !token.is_empty())
}

fn offers_subprotocol(headers: &HeaderMap, wanted: &str) -> bool {
    subprotocols(headers).any(|protocol| protocol == wanted)
}

fn subprotocols(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
}

/// The token of an `Authorization: Bearer <token>` header (any case of the scheme), if any.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

impl<S: Send + Sync> FromRequestParts<S> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Authenticated>()
            .copied()
            .ok_or_else(|| ApiError::unauthorized("Authentication required."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perimeter(extra_hosts: &[&str]) -> Perimeter {
        let server = ServerConfig {
            allowed_hosts: extra_hosts.iter().map(|h| (*h).to_owned()).collect(),
            ..ServerConfig::default()
        };
        Perimeter::new(&server, "127.0.0.1:8383".parse().unwrap())
    }

    #[test]
    fn hosts() {
        let p = perimeter(&["souz.local:8383"]);
        for ok in [
            "127.0.0.1:8383",
            "localhost:8383",
            "LOCALHOST:8383",
            "souz.local:8383",
        ] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for bad in [
            "",
            "127.0.0.1",
            "localhost",
            "127.0.0.1:8384",
            "evil.com:8383",
            "localhost.evil.com:8383",
            "[::1]:8383",
            "0.0.0.0:8383",
        ] {
            assert!(!p.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn origins() {
        let p = perimeter(&[]);
        for ok in [
            "http://127.0.0.1:8383",
            "http://localhost:8383",
            "tauri://localhost",
            "http://tauri.localhost",
        ] {
            assert!(p.origin_allowed(ok), "{ok}");
        }
        for bad in [
            "null",
            "http://evil.com",
            "https://localhost:8383",
            "http://localhost:8384",
        ] {
            assert!(!p.origin_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn unspecified_bind_accepts_loopback_names() {
        let server = ServerConfig::default();
        let p = Perimeter::new(&server, "0.0.0.0:9000".parse().unwrap());
        assert!(p.host_allowed("127.0.0.1:9000"));
        assert!(p.host_allowed("localhost:9000"));
        assert!(!p.host_allowed("192.168.1.5:9000"));
    }

    #[test]
    fn protected_paths() {
        for protected in ["/v1", "/v1/bootstrap", "/v1/events", "/mcp", "/mcp/x"] {
            assert!(requires_token(protected), "{protected}");
        }
        for public in [
            "/",
            "/health",
            "/docs",
            "/docs/openapi.json",
            "/v10",
            "/mcpx",
            "/.well-known/oauth-protected-resource",
            "/mcp/.well-known/oauth-authorization-server",
            "/app",
            "/app/",
            "/app/app.js",
            "/v1/identity",
            "/v1/ui-codes/exchange",
        ] {
            assert!(!requires_token(public), "{public}");
        }
        assert!(requires_token("/v1/ui-codes"));
        assert!(requires_token("/v1/identity/x"));
    }

    #[test]
    fn websocket_token_only_on_upgrades() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            "souz, souz.token.abc".parse().unwrap(),
        );
        assert_eq!(websocket_token(&headers), None, "not an upgrade");
        headers.insert(header::UPGRADE, "websocket".parse().unwrap());
        assert_eq!(websocket_token(&headers), Some("abc"));
        assert!(offers_subprotocol(&headers, "souz"));
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            "souz.token.".parse().unwrap(),
        );
        assert_eq!(websocket_token(&headers), None, "empty token");
        assert!(!offers_subprotocol(&headers, "souz"));
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            "chat, other".parse().unwrap(),
        );
        assert_eq!(websocket_token(&headers), None);
    }

    #[test]
    fn bearer_parsing() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, "bearer   abc ".parse().unwrap());
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert_eq!(bearer(&headers), None);
    }
}
