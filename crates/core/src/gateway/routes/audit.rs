//! `/v1/audit`: the audit log, newest first, with paging and filters; the caller's own rows
//! (see [`Audience`]).

use axum::extract::State;
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{AuditPage, Outcome};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiQuery;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::{Audience, AuditQuery};

/// Query of `GET /v1/audit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditParams {
    /// Only rows older than this id (from `next_before` of the previous page).
    pub before: Option<i64>,
    /// At most this many rows (default 50, at most 500).
    pub limit: Option<u32>,
    /// Only this tool.
    pub tool: Option<String>,
    /// Only this outcome (`succeeded`, `failed`, `denied`, `cancelled`).
    pub outcome: Option<Outcome>,
    /// Only this call.
    pub call_id: Option<String>,
    /// Only this kind of requester.
    pub requester: Option<RequesterKind>,
    /// Only calls made by Souz's agent in this chat.
    pub chat_id: Option<String>,
}

/// The kinds of requester, as the `requester` filter names them.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RequesterKind {
    /// Souz's own agents, in a chat.
    Chat,
    /// MCP clients.
    Mcp,
    /// The command line.
    Cli,
    /// Scripts and apps calling the API.
    Api,
    /// Skill bundles.
    Skill,
}

impl RequesterKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Mcp => "mcp",
            Self::Cli => "cli",
            Self::Api => "api",
            Self::Skill => "skill",
        }
    }
}

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default().route(
        Operation::get("/v1/audit")
            .summary("The audit log: one row per tool call, with redacted previews.")
            .description(
                "Behind a trusted proxy, a user sees the rows of their chats' calls and the \
                 operator those of every other requester.",
            )
            .tag("approvals")
            .query::<AuditParams>()
            .response::<AuditPage>(200, "A page of rows, newest first."),
        page,
    )
}

async fn page(
    audience: Audience,
    State(handle): State<RuntimeHandle>,
    ApiQuery(params): ApiQuery<AuditParams>,
) -> Result<axum::Json<AuditPage>, ApiError> {
    let limit = match params.limit {
        None => 50,
        Some(limit @ 1..=500) => limit as usize,
        Some(_) => return Err(ApiError::invalid("limit must be between 1 and 500")),
    };
    let query = AuditQuery {
        before: params.before,
        limit: limit + 1,
        tool: params.tool,
        outcome: params.outcome,
        call_id: params.call_id,
        requester: params.requester.map(|kind| kind.as_str().to_owned()),
        chat_id: params.chat_id,
        audience,
    };
    let mut items = handle.audit(query).await?;
    let next_before = if items.len() > limit {
        items.truncate(limit);
        items.last().map(|entry| entry.id)
    } else {
        None
    };
    Ok(axum::Json(AuditPage { items, next_before }))
}
