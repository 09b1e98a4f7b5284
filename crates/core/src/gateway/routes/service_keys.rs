//! `/v1/settings/service-keys`: the daemon's keys for services tools use (`brave`: the Brave
//! Search API). Operator routes: the keys are the daemon's, not a user's. Keys go in, only
//! hints come out.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use souz_protocol::{ErrorBody, PutProviderKey, ServiceKeyInfo, ServiceKeyList, ServiceKeyTest};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiJson;
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/settings/service-keys")
                .summary("The configured service keys (hints only), by name.")
                .description(
                    "Keys of services, not model providers: `brave` (the Brave Search API, for \
                     InternetSearch and InternetResearch; also read from \
                     `BRAVE_SEARCH_API_KEY`) and `telegram` (the Telegram bot's token, for \
                     `[channels.telegram]`; also read from `TELEGRAM_BOT_TOKEN`). A stored key \
                     wins over the environment's.",
                )
                .tag("llm")
                .operator()
                .response::<ServiceKeyList>(200, "The configured keys."),
            list,
        )
        .route(
            Operation::put("/v1/settings/service-keys/{name}")
                .summary("Store (or replace) a service key, encrypted at rest.")
                .tag("llm")
                .operator()
                .request::<PutProviderKey>()
                .response::<ServiceKeyInfo>(200, "The stored key's hint.")
                .response::<ErrorBody>(400, "An unknown name or an unusable key; nothing changed.")
                .response::<ErrorBody>(409, "The key file cannot be used."),
            put,
        )
        .route(
            Operation::delete("/v1/settings/service-keys/{name}")
                .summary("Delete a stored service key (idempotent; the environment's stays).")
                .tag("llm")
                .operator()
                .plain_response(204, "Deleted, or there was none."),
            delete,
        )
        .route(
            Operation::post("/v1/settings/service-keys/{name}/test")
                .summary("Check a service key with one real request to the service.")
                .description(
                    "Uses the key the tools would use (stored, else the environment's), through \
                     the SSRF-safe client. A refused key or an unreachable service is `ok: \
                     false` with the reason; no key at all is a 409.",
                )
                .tag("llm")
                .operator()
                .response::<ServiceKeyTest>(200, "How the request went.")
                .response::<ErrorBody>(409, "No key is configured."),
            test,
        )
}

async fn list(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<ServiceKeyList>, ApiError> {
    let items = handle.service_keys().await?;
    Ok(axum::Json(ServiceKeyList { items }))
}

async fn put(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<PutProviderKey>,
) -> Result<axum::Json<ServiceKeyInfo>, ApiError> {
    Ok(axum::Json(
        handle.set_service_key(&name, &body.api_key).await?,
    ))
}

async fn delete(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    handle.delete_service_key(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn test(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(name): Path<String>,
) -> Result<axum::Json<ServiceKeyTest>, ApiError> {
    Ok(axum::Json(handle.test_service_key(&name).await?))
}

#[cfg(test)]
mod tests;
