//! `/v1/schedules`: scheduled runs (create, list, show, change, delete, pause, resume, run now,
//! history, and the preview of a spec's next fires). Handlers are a few lines over the
//! runtime facade; every call acts for the caller, and a foreign id is 404.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::ErrorBody;
use souz_protocol::schedules::{
    NewSchedule, Schedule, ScheduleList, SchedulePatch, SchedulePreview, SchedulePreviewQuery,
    ScheduleRun, ScheduleRunList,
};

use super::chats::positive;
use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::{ApiJson, ApiQuery, UuidPath};
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::{ChatUser, MAX_LISTED_RUNS};

/// Query of `GET /v1/schedules/{id}/runs`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RunsQuery {
    /// At most this many (default 50, at most 500).
    pub limit: Option<String>,
}

#[allow(
    clippy::too_many_lines,
    reason = "one declaration per route, with its documentation"
)]
pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/schedules")
                .summary("The caller's schedules, by name, with their next fire times.")
                .tag("schedules")
                .response::<ScheduleList>(200, "The schedules."),
            list,
        )
        .route(
            Operation::post("/v1/schedules")
                .summary("Create a schedule: a cron expression, `at <time>` or `in <duration>`, in an IANA zone.")
                .description(
                    "Cron takes 5 fields, or 6 with seconds first (croner's `L`, `W`, `#`). \
                     A wall time that does not exist (spring forward) fires once at the first \
                     instant after the gap; one that occurs twice fires once, at the earlier \
                     instant. `in 2 hours` is resolved now and stored as `at <time>`. An \
                     invalid spec or zone, or one that never fires, is a 400 and nothing is \
                     stored. Without a zone the person's time zone setting is used.",
                )
                .tag("schedules")
                .request::<NewSchedule>()
                .response::<Schedule>(201, "Created.")
                .response::<ErrorBody>(400, "An invalid spec, zone or field."),
            create,
        )
        .route(
            Operation::get("/v1/schedules/preview")
                .summary("The next 5 fire times of a spec, without storing anything.")
                .tag("schedules")
                .query::<SchedulePreviewQuery>()
                .response::<SchedulePreview>(200, "The next fires.")
                .response::<ErrorBody>(400, "An invalid spec or zone."),
            preview,
        )
        .route(
            Operation::get("/v1/schedules/{id}")
                .summary("One schedule.")
                .tag("schedules")
                .response::<Schedule>(200, "The schedule.")
                .response::<ErrorBody>(404, "No such schedule."),
            show,
        )
        .route(
            Operation::patch("/v1/schedules/{id}")
                .summary("Change a schedule; absent fields keep their value.")
                .description(
                    "A new spec or zone applies from now: occurrences of the old spec not yet \
                     due are not owed.",
                )
                .tag("schedules")
                .request::<SchedulePatch>()
                .response::<Schedule>(200, "Changed.")
                .response::<ErrorBody>(400, "An invalid spec, zone or field.")
                .response::<ErrorBody>(404, "No such schedule."),
            patch,
        )
        .route(
            Operation::delete("/v1/schedules/{id}")
                .summary("Delete a schedule and its run history (its chat stays).")
                .tag("schedules")
                .plain_response(204, "Deleted.")
                .response::<ErrorBody>(404, "No such schedule."),
            delete,
        )
        .route(
            Operation::post("/v1/schedules/{id}/run")
                .summary("Run a schedule now, as an occurrence at the current time.")
                .description(
                    "Same envelope and policies as a real fire: while a run of the schedule \
                     goes, the overlap policy decides (`skip`: the run is recorded skipped; \
                     `queue_one`: it waits).",
                )
                .tag("schedules")
                .response::<ScheduleRun>(202, "Claimed; started unless the overlap policy held it.")
                .response::<ErrorBody>(404, "No such schedule."),
            run_now,
        )
        .route(
            Operation::post("/v1/schedules/{id}/pause")
                .summary("Pause a schedule: it does not fire until resumed.")
                .tag("schedules")
                .response::<Schedule>(200, "Paused.")
                .response::<ErrorBody>(404, "No such schedule."),
            pause,
        )
        .route(
            Operation::post("/v1/schedules/{id}/resume")
                .summary("Resume a schedule; occurrences of the pause are not owed.")
                .tag("schedules")
                .response::<Schedule>(200, "Resumed.")
                .response::<ErrorBody>(404, "No such schedule."),
            resume,
        )
        .route(
            Operation::get("/v1/schedules/{id}/runs")
                .summary("A schedule's runs, newest first: state, start and end, chat and execution, reason.")
                .tag("schedules")
                .query::<RunsQuery>()
                .response::<ScheduleRunList>(200, "The runs.")
                .response::<ErrorBody>(404, "No such schedule."),
            runs,
        )
}

async fn list(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<ScheduleList>, ApiError> {
    Ok(axum::Json(handle.list_schedules(&user).await?))
}

async fn create(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<NewSchedule>,
) -> Result<Response, ApiError> {
    let created = handle.create_schedule(&user, request).await?;
    Ok((StatusCode::CREATED, axum::Json(created)).into_response())
}

async fn preview(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    ApiQuery(query): ApiQuery<SchedulePreviewQuery>,
) -> Result<axum::Json<SchedulePreview>, ApiError> {
    Ok(axum::Json(
        handle
            .preview_schedule(&user, &query.spec, query.zone.as_deref())
            .await?,
    ))
}

async fn show(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([id]): UuidPath<1>,
) -> Result<axum::Json<Schedule>, ApiError> {
    Ok(axum::Json(handle.schedule(&user, &id).await?))
}

async fn patch(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([id]): UuidPath<1>,
    ApiJson(request): ApiJson<SchedulePatch>,
) -> Result<axum::Json<Schedule>, ApiError> {
    Ok(axum::Json(
        handle.patch_schedule(&user, &id, request).await?,
    ))
}

async fn delete(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([id]): UuidPath<1>,
) -> Result<StatusCode, ApiError> {
    handle.delete_schedule(&user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn run_now(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([id]): UuidPath<1>,
) -> Result<Response, ApiError> {
    let run = handle.run_schedule_now(&user, &id).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(run)).into_response())
}

async fn pause(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([id]): UuidPath<1>,
) -> Result<axum::Json<Schedule>, ApiError> {
    Ok(axum::Json(
        handle.set_schedule_enabled(&user, &id, false).await?,
    ))
}

async fn resume(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([id]): UuidPath<1>,
) -> Result<axum::Json<Schedule>, ApiError> {
    Ok(axum::Json(
        handle.set_schedule_enabled(&user, &id, true).await?,
    ))
}

async fn runs(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([id]): UuidPath<1>,
    ApiQuery(query): ApiQuery<RunsQuery>,
) -> Result<axum::Json<ScheduleRunList>, ApiError> {
    let limit = positive("limit", query.limit.as_deref(), 50, MAX_LISTED_RUNS)?;
    Ok(axum::Json(handle.schedule_runs(&user, &id, limit).await?))
}
