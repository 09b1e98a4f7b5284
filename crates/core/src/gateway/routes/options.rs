//! `/v1/options`: questions the agents ask (options, in the original API's words) — the pending
//! ones across the user's chats, one question, and its answer, which resumes the turn. Scoped
//! to the user like every chat route: a foreign id is 404 `option_not_found`.

use axum::extract::State;
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::ErrorBody;
use souz_protocol::chat::{OptionAnswer, OptionAnswerResponse, Question, QuestionList};

use super::chats::positive;
use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::{ApiJson, ApiQuery, UuidPath};
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::{ChatUser, MAX_LISTED_QUESTIONS};

/// Query of `GET /v1/options`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct OptionsQuery {
    /// At most this many (default 100, at most 500).
    pub limit: Option<String>,
}

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/options")
                .summary("Questions the agents of your chats are waiting on, oldest first.")
                .description(
                    "Pending, unexpired questions (`AskUser`), each with its chat, execution, \
                     choices and selection mode. `WS /v1/events` announces `option.requested` \
                     and then `option.answered`, `option.cancelled` or `option.expired`.",
                )
                .tag("chats")
                .query::<OptionsQuery>()
                .response::<QuestionList>(200, "The pending questions."),
            list,
        )
        .route(
            Operation::get("/v1/options/{optionId}")
                .summary("One question, whatever its status, with its answer once there is one.")
                .tag("chats")
                .response::<Question>(200, "The question.")
                .response::<ErrorBody>(404, "No such option (`option_not_found`)."),
            show,
        )
        .route(
            Operation::post("/v1/options/{optionId}/answer")
                .summary("Answer a question the agent asked; its turn resumes.")
                .tag("chats")
                .request::<OptionAnswer>()
                .response::<OptionAnswerResponse>(200, "Answered; the execution runs again.")
                .response::<ErrorBody>(400, "Not pending, expired, or not a valid answer.")
                .response::<ErrorBody>(404, "No such option (`option_not_found`)."),
            answer,
        )
}

async fn list(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    ApiQuery(query): ApiQuery<OptionsQuery>,
) -> Result<axum::Json<QuestionList>, ApiError> {
    let limit = positive("limit", query.limit.as_deref(), 100, MAX_LISTED_QUESTIONS)?;
    Ok(axum::Json(handle.questions(&user, limit).await?))
}

async fn show(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([option_id]): UuidPath<1>,
) -> Result<axum::Json<Question>, ApiError> {
    Ok(axum::Json(handle.question(&user, &option_id).await?))
}

async fn answer(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([option_id]): UuidPath<1>,
    ApiJson(answer): ApiJson<OptionAnswer>,
) -> Result<axum::Json<OptionAnswerResponse>, ApiError> {
    Ok(axum::Json(
        handle.answer_question(&user, &option_id, answer).await?,
    ))
}
