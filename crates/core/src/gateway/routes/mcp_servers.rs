//! `/v1/mcp/servers`: the external MCP servers of `[mcp.servers]`, where each stands, a test
//! that connects to one and lists its tools, and adding, editing, removing and turning one on
//! or off (written to `config.toml` by the settings editor; operator routes).

use axum::extract::{Path, State};
use souz_protocol::config::{ConfigRejected, ConfigSaved};
use souz_protocol::{ErrorBody, McpServerEnabled, McpServerList, McpServerPut, McpServerTest};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiJson;
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
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
                     with its line and column and nothing is written. The change applies at the \
                     next start (`restartRequired`).",
                )
                .tag("mcp")
                .operator()
                .request::<McpServerPut>()
                .response::<ConfigSaved>(200, "Saved.")
                .response::<ConfigRejected>(400, "The server has problems; nothing was written.")
                .response::<ErrorBody>(409, "config.toml changed since `baseRevision`."),
            put,
        )
        .route(
            Operation::delete("/v1/mcp/servers/{name}")
                .summary("Remove an external MCP server from config.toml.")
                .tag("mcp")
                .operator()
                .response::<ConfigSaved>(200, "Removed; applies at the next start.")
                .response::<ErrorBody>(404, "config.toml has no server of that name."),
            remove,
        )
        .route(
            Operation::put("/v1/mcp/servers/{name}/enabled")
                .summary("Turn an external MCP server on or off in config.toml.")
                .tag("mcp")
                .operator()
                .request::<McpServerEnabled>()
                .response::<ConfigSaved>(200, "Saved; applies at the next start.")
                .response::<ErrorBody>(404, "config.toml has no server of that name."),
            enable,
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
