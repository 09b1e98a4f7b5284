//! `/v1/me/provider-keys`: list, store and delete the caller's provider API keys (each user has
//! their own; the local user without trusted-proxy mode). Keys go in, only hints come out.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use souz_protocol::{ProviderKeyList, ProviderKeyResponse, ProviderKeyTest, PutProviderKey};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::ApiJson;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::ChatUser;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/me/provider-keys")
                .summary("Your configured provider keys (hints only), sorted by provider.")
                .description(
                    "Keys you stored through this API come first for their provider; keys from \
                     the daemon's environment (`OPENAI_API_KEY`, ...) are listed for the other \
                     providers with `source: environment`. Behind a trusted proxy each user \
                     has their own keys, and their chat turns use them before the daemon's.",
                )
                .tag("llm")
                .response::<ProviderKeyList>(200, "The configured keys."),
            list,
        )
        .route(
            Operation::put("/v1/me/provider-keys/{provider}")
                .summary("Store (or replace) a provider's API key, encrypted at rest.")
                .description(
                    "`provider` is case-insensitive and accepts `-` for `_` (`ai-tunnel`). \
                     Providers: openai, anthropic, qwen, ai_tunnel, giga (GigaChat's \
                     authorization key). Local servers need no key.",
                )
                .tag("llm")
                .request::<PutProviderKey>()
                .response::<ProviderKeyResponse>(200, "The stored key's hint.")
                .response::<souz_protocol::ErrorBody>(409, "The key file cannot be used."),
            put,
        )
        .route(
            Operation::delete("/v1/me/provider-keys/{provider}")
                .summary("Delete a stored provider key (idempotent).")
                .tag("llm")
                .plain_response(204, "Deleted, or there was none."),
            delete,
        )
        .route(
            Operation::post("/v1/me/provider-keys/{provider}/test")
                .summary("Check a provider's key with a one-token request to its default model.")
                .description(
                    "Uses the key a chat turn would use (yours, else the daemon's environment). \
                     A refused key or an unreachable provider is `ok: false` with the error; a \
                     provider without any key is an error response.",
                )
                .tag("llm")
                .response::<ProviderKeyTest>(200, "How the request went.")
                .response::<souz_protocol::ErrorBody>(409, "The provider has no key."),
            test,
        )
}

async fn list(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<ProviderKeyList>, ApiError> {
    let items = handle.provider_keys(&user).await?;
    Ok(axum::Json(ProviderKeyList { items }))
}

async fn put(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    Path(provider): Path<String>,
    ApiJson(body): ApiJson<PutProviderKey>,
) -> Result<axum::Json<ProviderKeyResponse>, ApiError> {
    let provider_key = handle
        .set_provider_key(&user, &provider, &body.api_key)
        .await?;
    Ok(axum::Json(ProviderKeyResponse { provider_key }))
}

async fn delete(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    Path(provider): Path<String>,
) -> Result<StatusCode, ApiError> {
    handle.delete_provider_key(&user, &provider).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn test(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    Path(provider): Path<String>,
) -> Result<axum::Json<ProviderKeyTest>, ApiError> {
    Ok(axum::Json(
        handle.test_provider_key(&user, &provider).await?,
    ))
}

#[cfg(test)]
mod tests;
