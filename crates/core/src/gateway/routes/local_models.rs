//! `/v1/models/local`: the in-process local models (list, fetch a pinned profile's file,
//! remove one). Operator only: model files are the machine's, whoever else holds a token.

use axum::extract::{Path, State};
use souz_protocol::{ErrorBody, LocalModelInfo, LocalModelList};

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
                .summary("Fetch a profile's file into the Souz home; answers when it is there.")
                .description(
                    "Resumable (a `.part` file is continued) and checked against the pinned \
                     SHA-256 before it takes its name. Only profiles with a pinned checksum and \
                     a source (`[llm] local_model_mirror`) are fetched.",
                )
                .tag("models")
                .operator()
                .response::<LocalModelInfo>(200, "Downloaded (or already there).")
                .response::<ErrorBody>(400, "Not downloadable, or the download failed.")
                .response::<ErrorBody>(404, "No such profile.")
                .response::<ErrorBody>(409, "Being downloaded already."),
            pull,
        )
        .route(
            Operation::delete("/v1/models/local/{name}")
                .summary("Unload a profile's model and delete its file.")
                .tag("models")
                .operator()
                .response::<LocalModelInfo>(200, "Removed (or was not there).")
                .response::<ErrorBody>(404, "No such profile.")
                .response::<ErrorBody>(409, "In use or being downloaded."),
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
) -> Result<axum::Json<LocalModelInfo>, ApiError> {
    Ok(axum::Json(handle.pull_local_model(&name).await?))
}

async fn remove(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<axum::Json<LocalModelInfo>, ApiError> {
    Ok(axum::Json(handle.remove_local_model(&name).await?))
}
