//! Review mode: `/v1/review-mode` (who is in it) and `/v1/reviews` (the staged file changes
//! waiting for the person, their combined diff, and the decisions). Operator only: what is
//! applied is the person's files.

use axum::extract::{Path, State};
use souz_protocol::ErrorBody;
use souz_protocol::review::{
    Review, ReviewDecisions, ReviewList, ReviewModeUpdate, ReviewModes, ReviewOutcome,
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
            Operation::get("/v1/review-mode")
                .summary("The chats and clients whose file writes are staged for review.")
                .tag("history")
                .operator()
                .response::<ReviewModes>(200, "Who is in review mode."),
            modes,
        )
        .route(
            Operation::put("/v1/review-mode")
                .summary("Turn review mode on or off for one chat or one client.")
                .description(
                    "In review mode a file tool's write (create, edit, move, delete, documents) \
                     is staged instead of applied, with no approval asked per write; a chat \
                     turn ends with one review of its staged changes, a client's staged writes \
                     form one open review until every change in it is decided.",
                )
                .tag("history")
                .operator()
                .request::<ReviewModeUpdate>()
                .response::<ReviewModes>(200, "Who is in review mode now."),
            set_mode,
        )
        .route(
            Operation::get("/v1/reviews")
                .summary("The reviews of staged file changes waiting for the person.")
                .tag("history")
                .operator()
                .response::<ReviewList>(200, "Open reviews, oldest first."),
            list,
        )
        .route(
            Operation::get("/v1/reviews/{id}")
                .summary("A review: each staged change with its diff and whether it conflicts.")
                .description(
                    "A change conflicts when a path it writes changed on disk since it was \
                     staged: applying it then refuses unless forced.",
                )
                .tag("history")
                .operator()
                .response::<Review>(200, "The review.")
                .response::<ErrorBody>(404, "No such review."),
            get,
        )
        .route(
            Operation::post("/v1/reviews/{id}/decisions")
                .summary("Apply or discard staged changes (some, or all undecided).")
                .description(
                    "Applied changes are written through the same tools and sandbox, in the \
                     order they were staged, and recorded in the history (so they can be \
                     undone). A change that conflicts is left undecided and listed in \
                     `conflicts` unless `force` is set.",
                )
                .tag("history")
                .operator()
                .request::<ReviewDecisions>()
                .response::<ReviewOutcome>(200, "The review after the decisions.")
                .response::<ErrorBody>(404, "No such review or change.")
                .response::<ErrorBody>(422, "The review is not open, or a change is decided."),
            decide,
        )
}

async fn modes(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<ReviewModes>, ApiError> {
    Ok(axum::Json(handle.review_modes().await?))
}

async fn set_mode(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(update): ApiJson<ReviewModeUpdate>,
) -> Result<axum::Json<ReviewModes>, ApiError> {
    Ok(axum::Json(handle.set_review_mode(update).await?))
}

async fn list(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<ReviewList>, ApiError> {
    Ok(axum::Json(handle.reviews().await?))
}

async fn get(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<i64>,
) -> Result<axum::Json<Review>, ApiError> {
    Ok(axum::Json(handle.review(id).await?))
}

async fn decide(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<i64>,
    ApiJson(decisions): ApiJson<ReviewDecisions>,
) -> Result<axum::Json<ReviewOutcome>, ApiError> {
    Ok(axum::Json(handle.decide_review(id, decisions).await?))
}
