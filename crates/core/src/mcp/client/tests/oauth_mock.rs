//! A small OAuth 2.1 authorization server and the MCP server it protects, on one loopback
//! port, for the client's OAuth tests: protected-resource and authorization-server metadata,
//! dynamic client registration, an authorization endpoint that answers at once (the test's
//! "browser" follows its redirect), a token endpoint checking PKCE (S256) and refreshing, and
//! `/mcp` (tools `echo` and `admin`; `admin` needs the `write` scope, else 403
//! `insufficient_scope`). Knobs: expire every access token, revoke every refresh token.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::{Form, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

#[derive(Default)]
pub(super) struct Counts {
    pub registrations: usize,
    pub authorizations: usize,
    pub code_exchanges: usize,
    pub refreshes: usize,
}

#[derive(Default)]
struct Inner {
    clients: HashSet<String>,
    /// code → (code challenge, redirect URI, scope)
    codes: HashMap<String, (String, String, String)>,
    /// access token → scope
    access: HashMap<String, String>,
    /// refresh token → scope
    refresh: HashMap<String, String>,
    counts: Counts,
    next: u64,
}

/// The running mock.
pub(super) struct Mock {
    pub base: String,
    inner: Arc<Mutex<Inner>>,
}

type Shared = (Arc<Mutex<Inner>>, String);

impl Mock {
    pub(super) async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let inner = Arc::new(Mutex::new(Inner::default()));
        let shared: Shared = (Arc::clone(&inner), base.clone());
        let mcp = StreamableHttpService::new(
            || Ok(Protected),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let protected =
            Router::new()
                .nest_service("/mcp", mcp)
                .layer(axum::middleware::from_fn_with_state(
                    shared.clone(),
                    require_token,
                ));
        let app = Router::new()
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                axum::routing::get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-protected-resource",
                axum::routing::get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(server_metadata),
            )
            .route("/register", axum::routing::post(register))
            .route("/authorize", axum::routing::get(authorize))
            .route("/token", axum::routing::post(token))
            .with_state(shared)
            .merge(protected);
        crate::tasks::spawn_in_test(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, inner }
    }

    pub(super) fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every access token stops working (as when they expire).
    pub(super) fn expire_access_tokens(&self) {
        self.with(|inner| inner.access.clear());
    }

    /// Every refresh token is refused from now on.
    pub(super) fn revoke_refresh_tokens(&self) {
        self.with(|inner| inner.refresh.clear());
    }

    pub(super) fn counts(&self) -> (usize, usize, usize, usize) {
        self.with(|inner| {
            let c = &inner.counts;
            (
                c.registrations,
                c.authorizations,
                c.code_exchanges,
                c.refreshes,
            )
        })
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    shared.0.lock().unwrap_or_else(PoisonError::into_inner)
}

fn fresh(inner: &mut Inner, kind: &str) -> String {
    inner.next += 1;
    format!("{kind}-{}-{}", inner.next, uuid::Uuid::now_v7().simple())
}

async fn resource_metadata(State((_, base)): State<Shared>) -> axum::Json<Value> {
    axum::Json(json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": ["read", "write"],
        "bearer_methods_supported": ["header"],
    }))
}

async fn server_metadata(State((_, base)): State<Shared>) -> axum::Json<Value> {
    axum::Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["read", "write"],
    }))
}

async fn register(
    State(shared): State<Shared>,
    axum::Json(body): axum::Json<Value>,
) -> (StatusCode, axum::Json<Value>) {
    let mut inner = lock(&shared);
    inner.counts.registrations += 1;
    let client_id = fresh(&mut inner, "client");
    inner.clients.insert(client_id.clone());
    let mut answer = body;
    answer["client_id"] = json!(client_id);
    answer["token_endpoint_auth_method"] = json!("none");
    (StatusCode::CREATED, axum::Json(answer))
}

async fn authorize(
    State(shared): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let get = |name: &str| query.get(name).cloned().unwrap_or_default();
    let mut inner = lock(&shared);
    if !inner.clients.contains(&get("client_id"))
        || get("code_challenge_method") != "S256"
        || get("code_challenge").is_empty()
        || get("response_type") != "code"
    {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    inner.counts.authorizations += 1;
    let code = fresh(&mut inner, "code");
    let scope = get("scope");
    inner.codes.insert(
        code.clone(),
        (get("code_challenge"), get("redirect_uri"), scope),
    );
    let mut location = reqwest::Url::parse(&get("redirect_uri")).unwrap();
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &get("state"))
        .append_pair("iss", &shared.1);
    (
        StatusCode::FOUND,
        [(header::LOCATION, location.to_string())],
    )
        .into_response()
}

fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

fn grant(inner: &mut Inner, scope: &str) -> axum::Json<Value> {
    let access = fresh(inner, "access");
    let refresh = fresh(inner, "refresh");
    inner.access.insert(access.clone(), scope.to_owned());
    inner.refresh.insert(refresh.clone(), scope.to_owned());
    axum::Json(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": refresh,
        "scope": scope,
    }))
}

async fn token(
    State(shared): State<Shared>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let get = |name: &str| form.get(name).cloned().unwrap_or_default();
    let invalid_grant = || {
        (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response()
    };
    let mut inner = lock(&shared);
    match get("grant_type").as_str() {
        "authorization_code" => {
            let Some((challenge, redirect_uri, scope)) = inner.codes.remove(&get("code")) else {
                return invalid_grant();
            };
            let verifier = get("code_verifier");
            if base64url(&Sha256::digest(verifier.as_bytes())) != challenge
                || redirect_uri != get("redirect_uri")
            {
                return invalid_grant();
            }
            inner.counts.code_exchanges += 1;
            grant(&mut inner, &scope).into_response()
        }
        "refresh_token" => {
            let Some(scope) = inner.refresh.remove(&get("refresh_token")) else {
                return invalid_grant();
            };
            inner.counts.refreshes += 1;
            grant(&mut inner, &scope).into_response()
        }
        _ => invalid_grant(),
    }
}

/// `/mcp` only with a valid access token; `admin` only with the `write` scope.
async fn require_token(
    State(shared): State<Shared>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let challenge = |extra: &str| {
        format!(
            "Bearer{extra} resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            shared.1
        )
    };
    let scope = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .and_then(|token| lock(&shared).access.get(token).cloned());
    let Some(scope) = scope else {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge(""))],
        )
            .into_response();
    };
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if message["method"] == "tools/call"
        && message["params"]["name"] == "admin"
        && !scope.split(' ').any(|s| s == "write")
    {
        return (
            StatusCode::FORBIDDEN,
            [(
                header::WWW_AUTHENTICATE,
                challenge(" error=\"insufficient_scope\", scope=\"read write\","),
            )],
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[derive(Clone)]
struct Protected;

impl ServerHandler for Protected {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let schema = Arc::new(schema);
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("echo", "Echoes the text back.", Arc::clone(&schema)),
            Tool::new("admin", "Needs the write scope.", schema),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("text"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let reply = if request.name == "admin" {
            format!("admin: {text}")
        } else {
            text
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(reply)]).into())
    }
}
