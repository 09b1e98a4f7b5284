//! `/v1/approvals` and `/v1/grants`: the approval queue, decisions, and standing grants.
//! Approvals are the caller's own (see [`Audience`]); grants are the operator's.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{
    Approval, ApprovalList, ApprovalStatus, DecisionRequest, DecisionResponse, ErrorBody, GrantList,
};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::{ApiJson, ApiQuery};
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::Audience;

/// Query of `GET /v1/approvals`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalsQuery {
    /// Only approvals with this status (`pending`, `approved`, `denied`, `expired`); default all.
    pub status: Option<ApprovalStatus>,
    /// At most this many (default 50, at most 500).
    pub limit: Option<u32>,
}

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/approvals")
                .summary("List approvals, newest first.")
                .description(
                    "Behind a trusted proxy, a user sees the approvals their chats raised and \
                     the operator those of every other requester (MCP clients, the CLI, \
                     scripts, skills).",
                )
                .tag("approvals")
                .query::<ApprovalsQuery>()
                .response::<ApprovalList>(200, "The approvals."),
            list,
        )
        .route(
            Operation::get("/v1/approvals/{id}")
                .summary("One approval with everything needed to decide it.")
                .tag("approvals")
                .response::<Approval>(200, "The approval.")
                .response::<ErrorBody>(404, "No such approval (or not yours)."),
            show,
        )
        .route(
            Operation::post("/v1/approvals/{id}/decision")
                .summary("Approve or deny a pending approval, optionally with a scope.")
                .description(
                    "The first decision wins; a later one gets 409. Scopes: `once`, `requester` \
                     (this chat or MCP client, until revoked), `minutes` (with `minutes`), \
                     `always` (a rule appended to config.toml; behind a trusted proxy only the \
                     operator may choose it, a user gets 403 `forbidden`). `match` narrows a \
                     scoped decision to a path prefix, command prefix or domain.",
                )
                .tag("approvals")
                .request::<DecisionRequest>()
                .response::<DecisionResponse>(200, "The decision was recorded.")
                .response::<ErrorBody>(
                    403,
                    "A proxied user chose `always` (`forbidden`), or a foreign Host or Origin.",
                )
                .response::<ErrorBody>(404, "No such approval (or not yours).")
                .response::<ErrorBody>(409, "Already decided or expired."),
            decide,
        )
        .route(
            Operation::get("/v1/grants")
                .summary("Active grants made by scoped approvals.")
                .tag("approvals")
                .operator()
                .response::<GrantList>(200, "The grants."),
            grants,
        )
        .route(
            Operation::delete("/v1/grants/{id}")
                .summary("Revoke a grant.")
                .tag("approvals")
                .operator()
                .plain_response(204, "Revoked.")
                .response::<ErrorBody>(404, "No such active grant."),
            revoke,
        )
}

async fn list(
    audience: Audience,
    State(handle): State<RuntimeHandle>,
    ApiQuery(query): ApiQuery<ApprovalsQuery>,
) -> Result<axum::Json<ApprovalList>, ApiError> {
    let limit = match query.limit {
        None => 50,
        Some(limit @ 1..=500) => limit as usize,
        Some(_) => return Err(ApiError::invalid("limit must be between 1 and 500")),
    };
    let items = handle
        .list_approvals(&audience, query.status, limit)
        .await?;
    Ok(axum::Json(ApprovalList { items }))
}

async fn show(
    audience: Audience,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<Approval>, ApiError> {
    Ok(axum::Json(handle.approval_for(&id, &audience).await?))
}

async fn decide(
    audience: Audience,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<DecisionRequest>,
) -> Result<axum::Json<DecisionResponse>, ApiError> {
    let decided = handle.decide_approval(&id, request, &audience).await?;
    Ok(axum::Json(decided))
}

async fn grants(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<GrantList>, ApiError> {
    let items = handle.grants().await?;
    Ok(axum::Json(GrantList { items }))
}

async fn revoke(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    handle.revoke_grant(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}
