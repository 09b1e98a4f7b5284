//! `/v1/connect`: the Connect Claude page's routes (operator only), a few lines each over
//! [`RuntimeHandle`].

use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use souz_protocol::{
    ApplyDesktopConfig, ClaudeCodeCommand, ClientMemoryAccess, ConnectStatus, DesktopConfigApplied,
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
                .summary("The Claude Code commands, with a new `claude-code` token.")
                .description(
                    "`command` (`claude mcp add-json`) holds no token: Claude Code runs \
                     `souz mcp-headers`, which reads it from the Souz home (written here, 0600). \
                     `headerCommand` carries the token itself, for a Claude Code without \
                     `headersHelper`. The previous `claude-code` token is revoked. The URL is \
                     the address this request reached.",
                )
                .tag("clients")
                .operator()
                .response::<ClaudeCodeCommand>(200, "The command."),
            claude_code,
        )
        .route(
            Operation::get("/v1/connect/claude-code/config")
                .summary("The change adding Souz to Claude Code's ~/.claude.json would make.")
                .description(
                    "Nothing is written. Only `mcpServers.souz` changes (an HTTP server whose \
                     headers come from `souz mcp-headers`; no token in the file); other keys are \
                     kept. A file that is not a JSON object is a 409.",
                )
                .tag("clients")
                .operator()
                .response::<DesktopConfigChange>(200, "The change.")
                .response::<ErrorBody>(409, "The file cannot be edited, or the souz binary is unknown."),
            code_change,
        )
        .route(
            Operation::post("/v1/connect/claude-code/config")
                .summary("Add Souz to Claude Code's ~/.claude.json (the change shown, with a backup).")
                .description(
                    "Makes a new `claude-code` token (the previous one is revoked), writes it to \
                     the Souz home (0600), copies the file to `.claude.json.bak`, and writes the \
                     change. If the file changed since `revision`, nothing is written (409).",
                )
                .tag("clients")
                .operator()
                .request::<ApplyDesktopConfig>()
                .response::<DesktopConfigApplied>(200, "Written.")
                .response::<ErrorBody>(409, "The file changed, or cannot be edited."),
            code_apply,
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
        .route(
            Operation::put("/v1/connect/clients/{id}/memory")
                .summary("Whether an MCP client may search and read your memory.")
                .description(
                    "`allow` or `deny` is stored as a grant for that client's token (listed and \
                     revocable with the others); `ask` removes it, so the client's next search \
                     asks (the default for every client). The answer is what applies now: a rule \
                     in `config.toml` comes first.",
                )
                .tag("clients")
                .operator()
                .request::<ClientMemoryAccess>()
                .response::<ClientMemoryAccess>(200, "What applies now.")
                .response::<ErrorBody>(404, "No such active client."),
            memory_access,
        )
}

async fn status(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<ConnectStatus>, ApiError> {
    Ok(axum::Json(handle.connect_status().await?))
}

/// `http://<Host>`: the address this request reached (the perimeter has already refused any
/// Host that is not this listener's).
fn base(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

async fn claude_code(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    headers: HeaderMap,
) -> Result<axum::Json<ClaudeCodeCommand>, ApiError> {
    Ok(axum::Json(
        handle.claude_code_command(&base(&headers)).await?,
    ))
}

async fn code_change(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    headers: HeaderMap,
) -> Result<axum::Json<DesktopConfigChange>, ApiError> {
    Ok(axum::Json(
        handle.claude_code_config_change(&base(&headers)).await?,
    ))
}

async fn code_apply(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<ApplyDesktopConfig>,
) -> Result<axum::Json<DesktopConfigApplied>, ApiError> {
    Ok(axum::Json(
        handle
            .apply_claude_code_config(&base(&headers), request.revision)
            .await?,
    ))
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

async fn memory_access(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<ClientMemoryAccess>,
) -> Result<axum::Json<ClientMemoryAccess>, ApiError> {
    Ok(axum::Json(
        handle.set_client_memory_access(&id, request.access).await?,
    ))
}
