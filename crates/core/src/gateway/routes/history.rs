//! `/v1/history`: the changes Souz's file tools made, newest first, and undo
//! (`POST /v1/history/undo`, and `POST /v1/history/undo/check`, which says what an undo would
//! meet without doing it). Operator only.

use axum::extract::State;
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::Requester;
use souz_protocol::history::{HistoryList, UndoCheck, UndoCheckRequest, UndoReport, UndoRequest};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::{ApiJson, ApiQuery};
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::{HistoryQuery, MAX_LISTED_CHANGES};

/// Query of `GET /v1/history`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryParams {
    /// Only changes older than this id (the last id of the previous page).
    pub before: Option<i64>,
    /// At most this many changes (default 50, at most 500).
    pub limit: Option<u32>,
    /// Only this client's (`souz`, `claude-code`, `cli`, ...).
    pub client: Option<String>,
    /// Only this chat execution's (turn's).
    pub execution_id: Option<String>,
    /// Only this tool call's.
    pub call_id: Option<String>,
}

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/history")
                .summary("The changes Souz's file tools made, newest first.")
                .description(
                    "Each change names the call, the client and the chat turn that made it, and \
                     what every path it touched held before and after.",
                )
                .tag("history")
                .operator()
                .query::<HistoryParams>()
                .response::<HistoryList>(200, "A page of changes, newest first."),
            list,
        )
        .route(
            Operation::post("/v1/history/undo")
                .summary("Undo a change, a turn's changes, or a client's changes since a time.")
                .description(
                    "Restores every path byte for byte, with its permission bits, newest change \
                     first. If a path changed since Souz wrote it, nothing is undone and the \
                     answer lists each such path with the three versions; `force` restores \
                     anyway. The undo is recorded as a change of its own, so it can be undone.",
                )
                .tag("history")
                .operator()
                .request::<UndoRequest>()
                .response::<UndoReport>(200, "What was undone, or the conflicts that stopped it."),
            undo,
        )
        .route(
            Operation::post("/v1/history/undo/check")
                .summary("What an undo would take back now, and the files changed since.")
                .description(
                    "Touches nothing. Lists the changes an undo of the selection would take \
                     back, newest first, and each path that changed since Souz wrote it with the \
                     three versions (with these, an undo without `force` refuses).",
                )
                .tag("history")
                .operator()
                .request::<UndoCheckRequest>()
                .response::<UndoCheck>(200, "The changes and the conflicts an undo would meet."),
            check,
        )
}

async fn list(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiQuery(params): ApiQuery<HistoryParams>,
) -> Result<axum::Json<HistoryList>, ApiError> {
    let limit = params.limit.map_or(50, |limit| limit as usize);
    if limit == 0 || limit > MAX_LISTED_CHANGES {
        return Err(ApiError::invalid(format!(
            "limit must be between 1 and {MAX_LISTED_CHANGES}"
        )));
    }
    let query = HistoryQuery {
        client: params.client,
        execution_id: params.execution_id,
        call_id: params.call_id,
        before_id: params.before,
        limit,
    };
    Ok(axum::Json(handle.history(query).await?))
}

async fn undo(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    headers: axum::http::HeaderMap,
    ApiJson(request): ApiJson<UndoRequest>,
) -> Result<axum::Json<UndoReport>, ApiError> {
    let requester = match headers.get("x-souz-client").and_then(|v| v.to_str().ok()) {
        Some(client) if client.eq_ignore_ascii_case("cli") => Requester::Cli,
        _ => Requester::Api,
    };
    Ok(axum::Json(handle.undo(request, requester).await?))
}

async fn check(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<UndoCheckRequest>,
) -> Result<axum::Json<UndoCheck>, ApiError> {
    Ok(axum::Json(handle.undo_check(request.selection).await?))
}
