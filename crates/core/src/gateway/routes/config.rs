//! `/v1/config` (the settings editor: `config.toml` as a form and as raw TOML) and `/v1/pause`
//! (the pause switch): operator routes. Handlers are a few lines over [`RuntimeHandle`].

use axum::extract::State;
use souz_protocol::ErrorBody;
use souz_protocol::Restarting;
use souz_protocol::config::{
    ConfigDocument, ConfigPatch, ConfigRejected, ConfigReplace, ConfigSaved, PauseState, SetPause,
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
            Operation::get("/v1/config")
                .summary("config.toml: its text, its schema for a form, and what applies live.")
                .tag("settings")
                .operator()
                .response::<ConfigDocument>(200, "The file and its schema."),
            show,
        )
        .route(
            Operation::put("/v1/config")
                .summary("Replace config.toml (validated first, written atomically with a backup).")
                .description(
                    "The text is validated exactly as the daemon loads it; any problem is a 400 \
                     with every problem and its line and column, and nothing is written. \
                     Otherwise the file is replaced atomically, the previous version is kept as \
                     `config.toml.bak`, and changes apply live where possible (`applied`) or at \
                     the next start (`restartRequired`). Send back the `revision` you started \
                     from: if the file changed meanwhile the answer is 409.",
                )
                .tag("settings")
                .operator()
                .request::<ConfigReplace>()
                .response::<ConfigSaved>(200, "Saved.")
                .response::<ConfigRejected>(400, "The text has problems; nothing was written.")
                .response::<ErrorBody>(409, "The file changed since `revision`."),
            replace,
        )
        .route(
            Operation::patch("/v1/config")
                .summary("Set or reset single keys of config.toml, keeping its comments.")
                .description(
                    "Each change sets `[section] key` to a JSON value (or removes it with `null`, \
                     so the default applies). The resulting file is validated and saved like \
                     `PUT /v1/config`.",
                )
                .tag("settings")
                .operator()
                .request::<ConfigPatch>()
                .response::<ConfigSaved>(200, "Saved.")
                .response::<ConfigRejected>(400, "The result has problems; nothing was written.")
                .response::<ErrorBody>(409, "The file changed since `revision`."),
            patch,
        )
        .route(
            Operation::post("/v1/restart")
                .summary("Restart Souz in place: a new runtime with config.toml read again.")
                .description(
                    "The answer goes out first; then the daemon stops accepting, drains, stops \
                     the runtime (running agent turns end as interrupted) and starts a new one \
                     on the same address. Settings that `restartRequired` named apply then. \
                     A daemon that cannot restart itself answers 409.",
                )
                .tag("settings")
                .operator()
                .response::<Restarting>(200, "Restarting.")
                .response::<ErrorBody>(409, "This daemon cannot restart itself."),
            restart,
        )
        .route(
            Operation::get("/v1/pause")
                .summary("Whether Souz is paused.")
                .tag("settings")
                .operator()
                .response::<PauseState>(200, "The pause state."),
            pause_state,
        )
        .route(
            Operation::put("/v1/pause")
                .summary("Pause or resume Souz.")
                .description(
                    "While paused, a tool call that would ask for approval is denied without \
                     asking, pending approvals are denied, running agent turns are cancelled and \
                     new ones are refused (409 `paused`). Calls the policy allows still run.",
                )
                .tag("settings")
                .operator()
                .request::<SetPause>()
                .response::<PauseState>(200, "The new state."),
            set_pause,
        )
}

async fn show(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<ConfigDocument>, ApiError> {
    Ok(axum::Json(handle.config_document().await?))
}

async fn replace(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<ConfigReplace>,
) -> Result<axum::Json<ConfigSaved>, ApiError> {
    let saved = handle
        .replace_config(request.text, request.revision)
        .await?;
    Ok(axum::Json(saved))
}

async fn patch(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<ConfigPatch>,
) -> Result<axum::Json<ConfigSaved>, ApiError> {
    let saved = handle.patch_config(request.set, request.revision).await?;
    Ok(axum::Json(saved))
}

async fn restart(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<Restarting>, ApiError> {
    Ok(axum::Json(handle.request_restart()?))
}

async fn pause_state(_: Operator, State(handle): State<RuntimeHandle>) -> axum::Json<PauseState> {
    axum::Json(handle.pause_state())
}

async fn set_pause(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<SetPause>,
) -> Result<axum::Json<PauseState>, ApiError> {
    let via = request.via.as_deref().unwrap_or("api");
    Ok(axum::Json(handle.set_paused(request.paused, via).await?))
}
