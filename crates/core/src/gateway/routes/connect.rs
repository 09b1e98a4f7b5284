//! `/v1/connect`: the Connect Claude page's routes (operator only), a few lines each over
//! [`RuntimeHandle`].

use axum::extract::State;
use axum::http::{HeaderMap, header};
use souz_protocol::{
    ApplyDesktopConfig, ClaudeCodeCommand, ConnectStatus, DesktopConfigApplied,
    DesktopConfigChange, ErrorBody,
};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiJson;
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/connect")
                .summary("MCP clients: recent calls and grants per client token, and whether Claude Desktop has Souz.")
                .tag("clients")
                .operator()
                .response::<ConnectStatus>(200, "The clients."),
            status,
        )
        .route(
            Operation::post("/v1/connect/claude-code")
                .summary("The `claude mcp add` command, with a new `claude-code` token.")
                .description(
                    "The previous `claude-code` token is revoked: the last command shown is the \
                     one that works. The URL is the address this request reached.",
                )
                .tag("clients")
                .operator()
                .response::<ClaudeCodeCommand>(200, "The command."),
            claude_code,
        )
        .route(
            Operation::get("/v1/connect/claude-desktop")
                .summary("The change adding Souz to claude_desktop_config.json would make.")
                .description(
                    "Nothing is written. Only `mcpServers.souz` changes; other servers and keys \
                     are kept. A file that is not a JSON object is a 409.",
                )
                .tag("clients")
                .operator()
                .response::<DesktopConfigChange>(200, "The change.")
                .response::<ErrorBody>(409, "The file cannot be edited, or the souz binary is unknown."),
            desktop_change,
        )
        .route(
            Operation::post("/v1/connect/claude-desktop")
                .summary("Add Souz to claude_desktop_config.json (the change shown, with a backup).")
                .description(
                    "Writes the bridge's token to the Souz home (0600), copies the file to \
                     `claude_desktop_config.json.bak`, and writes the change. If the file \
                     changed since `revision`, nothing is written (409).",
                )
                .tag("clients")
                .operator()
                .request::<ApplyDesktopConfig>()
                .response::<DesktopConfigApplied>(200, "Written.")
                .response::<ErrorBody>(409, "The file changed, or cannot be edited."),
            desktop_apply,
        )
}

async fn status(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<ConnectStatus>, ApiError> {
    Ok(axum::Json(handle.connect_status().await?))
}

async fn claude_code(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    headers: HeaderMap,
) -> Result<axum::Json<ClaudeCodeCommand>, ApiError> {
    // The perimeter has already refused any Host that is not this listener's.
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("127.0.0.1");
    let base = format!("http://{host}");
    Ok(axum::Json(handle.claude_code_command(&base).await?))
}

async fn desktop_change(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<DesktopConfigChange>, ApiError> {
    Ok(axum::Json(handle.desktop_config_change().await?))
}

async fn desktop_apply(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<ApplyDesktopConfig>,
) -> Result<axum::Json<DesktopConfigApplied>, ApiError> {
    Ok(axum::Json(
        handle.apply_desktop_config(request.revision).await?,
    ))
}
