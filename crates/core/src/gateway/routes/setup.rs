//! `/v1/setup`: the first-run setup's state and the local model servers it can offer.
//! Operator routes, a few lines each over [`RuntimeHandle`].

use axum::extract::State;
use souz_protocol::{
    LocalServerList, LocalServerProbe, ProbeLocalServer, PutSetupState, SetupState,
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
            Operation::get("/v1/setup")
                .summary("Whether the first-run setup was finished or skipped.")
                .tag("settings")
                .operator()
                .response::<SetupState>(200, "The setup state."),
            show,
        )
        .route(
            Operation::put("/v1/setup")
                .summary("Mark the first-run setup done (or skipped), or to be shown again.")
                .tag("settings")
                .operator()
                .request::<PutSetupState>()
                .response::<SetupState>(200, "The new state."),
            set,
        )
        .route(
            Operation::get("/v1/setup/local-servers")
                .summary("Local model servers answering on this machine, with their models.")
                .description(
                    "Probes Ollama, LM Studio and the llama.cpp server at their `[llm]` \
                     endpoints (`ollama_base_url`, ...; defaults :11434, :1234, :8080) with \
                     `GET <endpoint>/models`, endpoints on this computer or a local network \
                     only, each for at most 1.5 s. Lists those that answer with at least one \
                     model.",
                )
                .tag("settings")
                .operator()
                .response::<LocalServerList>(200, "The servers that answered."),
            local_servers,
        )
        .route(
            Operation::post("/v1/setup/local-servers/probe")
                .summary("Ask a model server at an address a person typed for its models.")
                .description(
                    "`GET <baseUrl>/models` (an address without a path is asked at `/v1` \
                     first), only when the address is on this computer or a local network \
                     (loopback, private, link-local or carrier-grade NAT; a name must resolve \
                     only to such addresses, and the request goes to those), for at most \
                     1.5 s and 1 MiB, following no redirect. The answer says what was found, \
                     or why nothing was (`problem`). Save it with `PATCH /v1/config` \
                     (`[llm] <provider>_base_url`, `local_models`).",
                )
                .tag("settings")
                .operator()
                .request::<ProbeLocalServer>()
                .response::<LocalServerProbe>(200, "What answers there."),
            probe_local_server,
        )
}

async fn show(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<SetupState>, ApiError> {
    Ok(axum::Json(handle.setup_state().await?))
}

async fn set(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<PutSetupState>,
) -> Result<axum::Json<SetupState>, ApiError> {
    Ok(axum::Json(
        handle.set_setup_completed(request.completed).await?,
    ))
}

async fn local_servers(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<LocalServerList>, ApiError> {
    Ok(axum::Json(handle.local_servers().await?))
}

async fn probe_local_server(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<ProbeLocalServer>,
) -> axum::Json<LocalServerProbe> {
    axum::Json(handle.probe_local_server(&request.base_url).await)
}
