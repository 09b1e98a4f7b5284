//! `/v1/mcp/servers`: the external MCP servers of `[mcp.servers]`, where each stands, a test
//! that connects to one and lists its tools, adding, editing, removing and turning one on or off
//! (written to `config.toml` by the settings editor), its stored bearer token and its OAuth login
//! (operator routes); and `/v1/mcp/oauth/callback`, where the authorization server sends the
//! browser back (no token: the one-use `state` of a login the operator started is the proof).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use souz_protocol::config::{ConfigRejected, ConfigSaved};
use souz_protocol::{
    ErrorBody, McpLogin, McpOAuthCallback, McpServerEnabled, McpServerList, McpServerPut,
    McpServerTest, McpToken,
};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiJson;
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;

pub(super) fn routes() -> ApiRouter<AppState> {
    credential_routes(ApiRouter::default()
        .route(
            Operation::get("/v1/mcp/servers")
                .summary("The external MCP servers and where each stands.")
                .tag("mcp")
                .operator()
                .response::<McpServerList>(200, "Every configured server, by name."),
            list,
        )
        .route(
            Operation::post("/v1/mcp/servers/{name}/test")
                .summary("Connect to an external MCP server (if it is not) and list its tools.")
                .tag("mcp")
                .operator()
                .response::<McpServerTest>(200, "Whether it answered, and its tools in use.")
                .response::<ErrorBody>(404, "No enabled server has that name."),
            test,
        )
        .route(
            Operation::put("/v1/mcp/servers/{name}")
                .summary("Add or replace an external MCP server's table in config.toml.")
                .description(
                    "Writes `settings` as the whole `[mcp.servers.<name>]` table (keys at their \
                     default are left out), validated like `PUT /v1/config`: a problem is a 400 \
                     with its line and column and nothing is written. The change applies at \
                     once: the server is started, or stopped and started with its new table.",
                )
                .tag("mcp")
                .operator()
                .request::<McpServerPut>()
                .response::<ConfigSaved>(200, "Saved.")
                .response::<ConfigRejected>(400, "The server has problems; nothing was written.")
                .response::<ErrorBody>(409, "config.toml changed since `revision`."),
            put,
        )
        .route(
            Operation::delete("/v1/mcp/servers/{name}")
                .summary("Remove an external MCP server from config.toml.")
                .tag("mcp")
                .operator()
                .response::<ConfigSaved>(200, "Removed; the server is stopped and its tools are gone.")
                .response::<ErrorBody>(404, "config.toml has no server of that name."),
            remove,
        )
        .route(
            Operation::put("/v1/mcp/servers/{name}/enabled")
                .summary("Turn an external MCP server on or off in config.toml.")
                .tag("mcp")
                .operator()
                .request::<McpServerEnabled>()
                .response::<ConfigSaved>(200, "Saved; the server is started or stopped.")
                .response::<ErrorBody>(404, "config.toml has no server of that name."),
            enable,
        ))
}

/// A server's stored bearer token and its OAuth login.
fn credential_routes(router: ApiRouter<AppState>) -> ApiRouter<AppState> {
    router
        .route(
            Operation::put("/v1/mcp/servers/{name}/token")
                .summary("Store an external MCP server's bearer token (encrypted, never shown).")
                .description(
                    "Kept in the encrypted key store under the server's `bearer_token_key`; the \
                     server is connected again with it.",
                )
                .tag("mcp")
                .operator()
                .request::<McpToken>()
                .plain_response(204, "Stored.")
                .response::<ErrorBody>(400, "The server names no `bearer_token_key`.")
                .response::<ErrorBody>(404, "No server has that name."),
            put_token,
        )
        .route(
            Operation::delete("/v1/mcp/servers/{name}/token")
                .summary("Delete an external MCP server's stored bearer token.")
                .tag("mcp")
                .operator()
                .plain_response(204, "Deleted (or there was none).")
                .response::<ErrorBody>(404, "No server has that name."),
            delete_token,
        )
        .route(
            Operation::post("/v1/mcp/servers/{name}/login")
                .summary("Start an OAuth login for an external MCP server.")
                .description(
                    "Discovers the server's authorization server, registers Souz (or uses \
                     `oauth_client_id`) and returns the page to open; the browser comes back \
                     to `/v1/mcp/oauth/callback` within ten minutes.",
                )
                .tag("mcp")
                .operator()
                .response::<McpLogin>(200, "The page to open.")
                .response::<ErrorBody>(404, "No enabled server has that name.")
                .response::<ErrorBody>(409, "Discovery or registration failed."),
            login,
        )
        .route(
            Operation::get("/v1/mcp/oauth/callback")
                .summary("Where the authorization server sends the browser back after a login.")
                .tag("mcp")
                .public()
                .query::<McpOAuthCallback>()
                .plain_response(200, "An HTML page: signed in.")
                .response::<ErrorBody>(400, "The authorization server refused.")
                .response::<ErrorBody>(403, "No login this daemon started has that `state`."),
            callback,
        )
}

async fn list(_: Operator, State(handle): State<RuntimeHandle>) -> axum::Json<McpServerList> {
    axum::Json(handle.mcp_servers().await)
}

async fn test(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<axum::Json<McpServerTest>, ApiError> {
    Ok(axum::Json(handle.test_mcp_server(&name).await?))
}

async fn put(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<McpServerPut>,
) -> Result<axum::Json<ConfigSaved>, ApiError> {
    Ok(axum::Json(handle.put_mcp_server(&name, request).await?))
}

async fn remove(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<axum::Json<ConfigSaved>, ApiError> {
    Ok(axum::Json(handle.remove_mcp_server(&name).await?))
}

async fn enable(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<McpServerEnabled>,
) -> Result<axum::Json<ConfigSaved>, ApiError> {
    Ok(axum::Json(
        handle
            .set_mcp_server_enabled(&name, request.enabled)
            .await?,
    ))
}

async fn put_token(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<McpToken>,
) -> Result<StatusCode, ApiError> {
    handle.set_mcp_token(&name, &body.token).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn delete_token(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    handle.delete_mcp_token(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn login(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<axum::Json<McpLogin>, ApiError> {
    Ok(axum::Json(handle.start_mcp_login(&name).await?))
}

async fn callback(
    State(handle): State<RuntimeHandle>,
    Query(query): Query<McpOAuthCallback>,
) -> Result<Html<String>, ApiError> {
    let server = handle.finish_mcp_login(&query).await?;
    tracing::info!(%server, "signed in to an MCP server");
    Ok(Html(format!(
        "<!doctype html><meta charset=\"utf-8\"><title>Souz</title>\
         <p>Souz is signed in to the MCP server <b>{}</b>. You can close this tab.</p>",
        html_escape(&server)
    )))
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
