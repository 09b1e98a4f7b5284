//! `/v1/tools` and `/v1/tool-calls`: the catalog and running tools through the gate (operator
//! routes: a call made here is the daemon's, not a user's).

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use souz_protocol::{ErrorBody, Requester, ToolCall, ToolCallRequest, ToolList};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiJson;
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::CallRequest;

/// Default and largest `wait_ms` of `POST /v1/tool-calls`.
const DEFAULT_WAIT_MS: u64 = 30_000;
const MAX_WAIT_MS: u64 = 600_000;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/tools")
                .summary("The tool catalog with schemas and effective policy.")
                .tag("tools")
                .operator()
                .response::<ToolList>(200, "Every tool, sorted by name."),
            list,
        )
        .route(
            Operation::post("/v1/tool-calls")
                .summary("Run a tool through the approval gate.")
                .description(
                    "Waits up to `wait_ms` for the result. If the call is still waiting for a \
                     person (or still running) then, answers 202 with the call id and the \
                     pending approval id; poll `GET /v1/tool-calls/{id}`. Closing the request \
                     before that withdraws the call. Send `X-Souz-Client: cli` to be shown as \
                     the souz CLI.",
                )
                .tag("tools")
                .operator()
                .request::<ToolCallRequest>()
                .response::<ToolCall>(200, "The call is over; `result` holds its outcome.")
                .response::<ToolCall>(202, "The call goes on (waiting for approval or running)."),
            call,
        )
        .route(
            Operation::get("/v1/tool-calls/{id}")
                .summary("A tool call's status and, once over, its result.")
                .tag("tools")
                .operator()
                .response::<ToolCall>(200, "The call.")
                .response::<ErrorBody>(404, "No such call."),
            show,
        )
}

async fn list(_: Operator, State(handle): State<RuntimeHandle>) -> axum::Json<ToolList> {
    axum::Json(ToolList {
        items: handle.tools(),
    })
}

async fn call(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<ToolCallRequest>,
) -> Result<Response, ApiError> {
    let wait = request.wait_ms.unwrap_or(DEFAULT_WAIT_MS);
    if wait > MAX_WAIT_MS {
        return Err(ApiError::invalid(format!(
            "wait_ms must be at most {MAX_WAIT_MS}"
        )));
    }
    if request.tool.trim().is_empty() {
        return Err(ApiError::invalid("tool must not be empty"));
    }
    let requester = match headers.get("x-souz-client").and_then(|v| v.to_str().ok()) {
        Some(client) if client.eq_ignore_ascii_case("cli") => Requester::Cli,
        _ => Requester::Api,
    };
    let arguments = request.arguments.clone();
    let mut call = handle
        .start_call(CallRequest {
            tool: request.tool,
            arguments: request.arguments,
            requester,
        })
        .await?;
    let state = call.wait_for(Duration::from_millis(wait)).await;
    let status = if state.status.is_final() {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    let call_id = call.detach();
    if status == StatusCode::ACCEPTED {
        // Accepted means it can be followed by id, even across a crash (the crash loop found
        // calls answered 202 while still planning that had no row after a kill -9).
        handle.keep_call(&call_id, arguments).await?;
    }
    let stored = handle
        .tool_call(&call_id)
        .await?
        .ok_or_else(|| ApiError::internal(&"a started call has no row"))?;
    Ok((status, axum::Json(stored)).into_response())
}

async fn show(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<ToolCall>, ApiError> {
    handle
        .tool_call(&id)
        .await?
        .map(axum::Json)
        .ok_or_else(|| ApiError::not_found(format!("no tool call with id `{id}`")))
}
