//! `/v1/channels/telegram`: the Telegram channel's state, the one-time code that links a
//! Telegram account, and unlinking. Operator routes: the channel is the daemon's. A code is
//! shown once (only its hash is kept).

use axum::extract::State;
use souz_protocol::ErrorBody;
use souz_protocol::telegram::{TelegramLinkCode, TelegramStatus};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/channels/telegram")
                .summary("The Telegram channel: enabled, token configured, the linked account.")
                .tag("channels")
                .operator()
                .response::<TelegramStatus>(200, "The channel's state."),
            status,
        )
        .route(
            Operation::post("/v1/channels/telegram/link")
                .summary("A one-time code that links the Telegram account sending it to the bot.")
                .description(
                    "Send `/start CODE` (or the code alone) to the bot within 10 minutes; the \
                     code works once and replaces any earlier one. Only the linked account is \
                     served; anyone else gets one refusal.",
                )
                .tag("channels")
                .operator()
                .response::<TelegramLinkCode>(200, "The code, shown this once.")
                .response::<ErrorBody>(409, "An account is linked already: unlink it first."),
            link,
        )
        .route(
            Operation::delete("/v1/channels/telegram/link")
                .summary("Unlink the Telegram account (idempotent).")
                .tag("channels")
                .operator()
                .response::<TelegramStatus>(200, "The channel's state, nobody linked."),
            unlink,
        )
}

async fn status(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<TelegramStatus>, ApiError> {
    Ok(axum::Json(handle.telegram_status().await?))
}

async fn link(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<TelegramLinkCode>, ApiError> {
    Ok(axum::Json(handle.create_telegram_link_code().await?))
}

async fn unlink(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<TelegramStatus>, ApiError> {
    Ok(axum::Json(handle.unlink_telegram().await?))
}

#[cfg(test)]
mod tests;
