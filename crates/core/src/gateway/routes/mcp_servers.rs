//! `/v1/mcp/servers`: the external MCP servers of `[mcp.servers]`, where each stands, and a
//! test that connects to one and lists its tools (operator routes).

use axum::extract::{Path, State};
use souz_protocol::{ErrorBody, McpServerList, McpServerTest};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
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
}

async fn list(_: Operator, State(handle): State<RuntimeHandle>) -> axum::Json<McpServerList> {
    axum::Json(handle.mcp_servers())
}

async fn test(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<axum::Json<McpServerTest>, ApiError> {
    Ok(axum::Json(handle.test_mcp_server(&name).await?))
}
