//! `/v1/me/provider-logins/{provider}`: sign the caller in to a provider's account with a
//! device code (Codex through ChatGPT), see where the sign-in stands, sign out. The tokens stay
//! in the daemon; only the code to enter, the page and the account name come out.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use souz_protocol::ProviderLogin;

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::ChatUser;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::post("/v1/me/provider-logins/{provider}")
                .summary("Start signing in to a provider's account with a device code.")
                .description(
                    "Providers: codex (OpenAI's Codex models through a ChatGPT account). The \
                     answer is `pending` with the page to open (`verificationUrl`) and the \
                     one-time code to enter there (`userCode`, valid until `expiresAt`); the \
                     daemon waits for it in the background. Poll `GET` to see it become \
                     `signed_in`. Starting again replaces a waiting sign-in.",
                )
                .tag("llm")
                .response::<ProviderLogin>(200, "The code to enter and where.")
                .response::<souz_protocol::ErrorBody>(
                    409,
                    "The sign-in service refused or could not be reached.",
                ),
            start,
        )
        .route(
            Operation::get("/v1/me/provider-logins/{provider}")
                .summary("Where your sign-in to a provider's account stands.")
                .description(
                    "`signed_out`, `pending` (with the code), `signed_in` (with the account \
                     when the provider names it), `expired` (the code was not entered in \
                     time) or `failed` (with `error`).",
                )
                .tag("llm")
                .response::<ProviderLogin>(200, "The state."),
            status,
        )
        .route(
            Operation::delete("/v1/me/provider-logins/{provider}")
                .summary("Sign out of a provider's account (idempotent).")
                .description(
                    "Stops a waiting sign-in and deletes the stored tokens. The account itself \
                     is untouched.",
                )
                .tag("llm")
                .plain_response(204, "Signed out, or was not signed in."),
            sign_out,
        )
}

async fn start(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    Path(provider): Path<String>,
) -> Result<axum::Json<ProviderLogin>, ApiError> {
    Ok(axum::Json(
        handle.start_provider_login(&user, &provider).await?,
    ))
}

async fn status(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    Path(provider): Path<String>,
) -> Result<axum::Json<ProviderLogin>, ApiError> {
    Ok(axum::Json(handle.provider_login(&user, &provider).await?))
}

async fn sign_out(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    Path(provider): Path<String>,
) -> Result<StatusCode, ApiError> {
    handle.sign_out_provider(&user, &provider).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests;
