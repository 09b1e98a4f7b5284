//! `/v1/models/local`: the in-process local models (list, fetch a pinned profile's file,
//! remove one). Operator only: model files are the machine's, whoever else holds a token.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use souz_protocol::{ErrorBody, LocalModelInfo, LocalModelList, LocalModelState};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/models/local")
                .summary("The in-process local model profiles, their files and states.")
                .description(
                    "`engine` is absent when the daemon was built without local models. \
                     `rssBytes` is the daemon's resident memory now.",
                )
                .tag("models")
                .operator()
                .response::<LocalModelList>(200, "Every profile."),
            list,
        )
        .route(
            Operation::post("/v1/models/local/{name}/pull")
                .summary("Start fetching a profile's file into the Souz home.")
                .description(
                    "The download runs in the daemon (a client that goes away does not stop \
                     it; removing the model does): resumable (a `.part` file is continued) and \
                     checked against its SHA-256 before it takes its name. The file comes from \
                     the model hub (`[llm] local_model_hub`) at the commit the profile pins, \
                     checked against the hub's own SHA-256 for that commit's file, or from \
                     `[llm] local_model_mirror` for a profile whose SHA-256 Souz pins. Its \
                     progress is on the `local.model.download.progress|completed|failed|cancelled` \
                     runtime events and in the list.",
                )
                .tag("models")
                .operator()
                .response::<LocalModelInfo>(200, "The file is there already.")
                .response::<LocalModelInfo>(202, "Downloading (started now, or running already).")
                .response::<ErrorBody>(400, "Not downloadable.")
                .response::<ErrorBody>(404, "No such profile."),
            pull,
        )
        .route(
            Operation::delete("/v1/models/local/{name}")
                .summary("Stop its download, unload a profile's model and delete its file.")
                .tag("models")
                .operator()
                .response::<LocalModelInfo>(200, "Removed (or was not there).")
                .response::<ErrorBody>(404, "No such profile.")
                .response::<ErrorBody>(409, "In use by a turn."),
            remove,
        )
}

async fn list(_: Operator, State(handle): State<RuntimeHandle>) -> axum::Json<LocalModelList> {
    axum::Json(handle.local_models().await)
}

async fn pull(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<(StatusCode, axum::Json<LocalModelInfo>), ApiError> {
    let model = handle.pull_local_model(&name).await?;
    Ok((pull_status(&model.state), axum::Json(model)))
}

/// A pull's answer: 202 while its download runs, 200 when the model was there already. Shared
/// by the local LLMs' and the speech models' pull routes.
pub(super) fn pull_status(state: &LocalModelState) -> StatusCode {
    match state {
        LocalModelState::Downloading { .. } => StatusCode::ACCEPTED,
        _ => StatusCode::OK,
    }
}

async fn remove(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<axum::Json<LocalModelInfo>, ApiError> {
    Ok(axum::Json(handle.remove_local_model(&name).await?))
}
