//! System routes: the index, health, API docs, bootstrap, and OAuth discovery answers.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use souz_protocol::{ErrorBody, Health, RouteIndex};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::runtime::RuntimeHandle;

const DOCS_PAGE: &str = include_str!("docs.html");

/// OAuth discovery paths MCP clients probe; all answer a JSON 404 so no OAuth login starts.
const OAUTH_DISCOVERY: &[&str] = &[
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-authorization-server/mcp",
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/openid-configuration",
    "/mcp/.well-known/oauth-authorization-server",
    "/mcp/.well-known/oauth-protected-resource",
    "/mcp/.well-known/openid-configuration",
];

pub(super) fn routes() -> ApiRouter<AppState> {
    let mut api = ApiRouter::default()
        .route(
            Operation::get("/")
                .summary("List every route of this daemon.")
                .public()
                .response::<RouteIndex>(200, "The route index."),
            index,
        )
        .route(
            Operation::get("/health")
                .summary("Liveness and the state of the daemon's parts.")
                .public()
                .response::<Health>(200, "Everything works.")
                .response::<Health>(503, "A part (such as the database) does not answer."),
            health,
        )
        .route(
            Operation::get("/docs")
                .summary("Human-readable API documentation (works offline).")
                .public()
                .plain_response(200, "An HTML page."),
            docs_page,
        )
        .route(
            Operation::get("/docs/openapi.json")
                .summary("This API as an OpenAPI 3.1 document.")
                .public()
                .plain_response(200, "The OpenAPI document."),
            openapi,
        );
    for path in OAUTH_DISCOVERY {
        api = api.route(
            Operation::get(path)
                .summary("OAuth discovery: Souz uses a bearer token, not OAuth.")
                .tag("oauth")
                .public()
                .response::<ErrorBody>(404, "Always: there is no OAuth server."),
            no_oauth,
        );
    }
    api
}

async fn index(State(state): State<AppState>) -> axum::Json<RouteIndex> {
    axum::Json(RouteIndex {
        service: "souz".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        endpoints: state.docs.endpoints.clone(),
    })
}

async fn health(State(handle): State<RuntimeHandle>) -> Response {
    let health = handle.health().await;
    let status = if health.database.ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(health)).into_response()
}

async fn docs_page() -> Html<&'static str> {
    Html(DOCS_PAGE)
}

async fn openapi(State(state): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        state.docs.openapi(),
    )
        .into_response()
}

async fn no_oauth() -> ApiError {
    ApiError::not_found(
        "Souz does not use OAuth. Send `Authorization: Bearer <token>`; `souz token` prints it.",
    )
}
