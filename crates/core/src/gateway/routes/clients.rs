//! Credentials: `/v1/clients` (MCP client tokens, the operator's), `GET /v1/identity` (the
//! daemon's proof of identity, public) and `/v1/ui-codes` (the web UI's one-time sign-in).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use souz_protocol::{
    ClientList, CreatedClient, ErrorBody, IdentityProof, IdentityQuery, NewClient, UiCode,
    UiCodeExchange, UiSession,
};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::{ApiJson, ApiQuery};
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/clients")
                .summary("Client tokens (names, ids and scopes, never the tokens).")
                .tag("clients")
                .operator()
                .response::<ClientList>(200, "Active client tokens."),
            list,
        )
        .route(
            Operation::post("/v1/clients")
                .summary("Make a token for a client; the answer shows it once.")
                .description(
                    "A client token with scope `mcp` (the default) is valid on `/mcp` only \
                     (403 `forbidden` on `/v1/**`). Calls made with it are requested by this \
                     client, whatever its `clientInfo` says; grants and `mcp:<name>` rules bind \
                     to it. A token with scope `chats` (an editor through `souz acp`) reaches \
                     the chats it makes and their approvals: `POST /v1/chats`, its chats' \
                     messages, events and cancellation, `WS /v1/turns/ws` (its chats' events \
                     only) and `GET`/`POST /v1/approvals/{id}[/decision]` for their approvals; \
                     anything else is 403 `forbidden`, another chat or approval 404. Souz keeps \
                     only the token's SHA-256.",
                )
                .tag("clients")
                .operator()
                .request::<NewClient>()
                .response::<CreatedClient>(201, "The client and its token.")
                .response::<ErrorBody>(409, "An active client has this name (`conflict`)."),
            create,
        )
        .route(
            Operation::delete("/v1/clients/{id}")
                .summary("Revoke a client token: from then on it gets 401.")
                .tag("clients")
                .operator()
                .plain_response(204, "Revoked.")
                .response::<ErrorBody>(404, "No such active client."),
            revoke,
        )
        .route(
            Operation::get("/v1/identity")
                .summary("Prove this listener is the Souz daemon, before a client sends a token.")
                .description(
                    "`proof` is hex HMAC-SHA256 keyed with SHA-256(token) over \
                     `souz-identity-v1\\n<nonce>\\n<Host>`; `key` names the token as the first \
                     32 hex characters of SHA-256(SHA-256(token)). A client checks the proof \
                     before it sends its token, and refuses a listener that cannot answer.",
                )
                .tag("system")
                .public()
                .query::<IdentityQuery>()
                .response::<IdentityProof>(200, "The proof.")
                .response::<ErrorBody>(404, "No active credential has this key."),
            identity,
        )
        .route(
            Operation::post("/v1/ui-codes")
                .summary("A one-time code that signs the web UI in (`/app/#code=<code>`).")
                .description(
                    "Valid once, for about a minute. `souz ui --open` opens the web UI with a \
                     code, so the token never appears in a process argument.",
                )
                .tag("system")
                .operator()
                .response::<UiCode>(201, "The code."),
            issue_code,
        )
        .route(
            Operation::post("/v1/ui-codes/exchange")
                .summary("Trade a one-time code for the operator token (the web UI's sign-in).")
                .description(
                    "Only from a page: a request without an `Origin` header (scripts, \
                     command-line tools) is refused (401) and the code stays unused; the \
                     perimeter has already refused any origin that is not this daemon's.",
                )
                .tag("system")
                .public()
                .request::<UiCodeExchange>()
                .response::<UiSession>(200, "The token.")
                .response::<ErrorBody>(401, "Unknown, used or expired code."),
            exchange_code,
        )
}

async fn list(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<ClientList>, ApiError> {
    let items = handle.list_clients().await?;
    Ok(axum::Json(ClientList { items }))
}

async fn create(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<NewClient>,
) -> Result<(StatusCode, axum::Json<CreatedClient>), ApiError> {
    let created = handle.create_client(&request.name, request.scope).await?;
    tracing::info!(client = %created.name, id = %created.id, "client token created");
    Ok((StatusCode::CREATED, axum::Json(created)))
}

async fn revoke(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    handle.revoke_client(&id).await?;
    tracing::info!(%id, "client token revoked");
    Ok(StatusCode::NO_CONTENT)
}

async fn identity(
    State(handle): State<RuntimeHandle>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<IdentityQuery>,
) -> Result<axum::Json<IdentityProof>, ApiError> {
    // The perimeter already refused a Host that does not name this daemon.
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    Ok(axum::Json(handle.prove_identity(
        &query.key,
        &query.nonce,
        host,
    )?))
}

async fn issue_code(
    _: Operator,
    State(handle): State<RuntimeHandle>,
) -> Result<(StatusCode, axum::Json<UiCode>), ApiError> {
    Ok((StatusCode::CREATED, axum::Json(handle.issue_ui_code()?)))
}

async fn exchange_code(
    State(handle): State<RuntimeHandle>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<UiCodeExchange>,
) -> Result<axum::Json<UiSession>, ApiError> {
    // A code is for the page it was opened in: a browser always sends `Origin` on a POST, and
    // the perimeter has refused every origin but this daemon's (and those the operator added).
    // A hint, not a boundary (a local script can send any `Origin`): the code's secrecy rests
    // on the owner-only redirect page and on no process argument holding it.
    if !headers.contains_key(header::ORIGIN) {
        return Err(ApiError::unauthorized(
            "A sign-in code works only from the Souz page it was opened in.",
        ));
    }
    let token = handle.redeem_ui_code(&request.code).ok_or_else(|| {
        ApiError::unauthorized(
            "This sign-in code is unknown, used or expired; run `souz ui --open` again.",
        )
    })?;
    Ok(axum::Json(UiSession { token }))
}
