//! The chat API (original §1.4): settings, onboarding, chats, messages, events (HTTP replay and
//! the live WebSocket), cancellation (options are in `options`). Handlers are a few lines over
//! `Chats`.

use axum::Extension;
use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{WebSocket, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use souz_protocol::chat::devices::{ClientType, ThreadList};
use souz_protocol::chat::{
    Attachment, Chat, ChatEvent, ChatEventList, ChatInput, ChatInputResponse, ChatList,
    ChatSettings, ChatTools, CreateChat, CreateChatResponse, ExecutionResponse, ExecutionTrace,
    MessageList, OnboardingCompleted, OnboardingState, PostMessage, PostMessageResponse,
    RenameChat, SettingsPatch, SettingsResponse,
};
use souz_protocol::{Bootstrap, ErrorBody};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::{ApiJson, ApiQuery, UuidPath};
use crate::gateway::ws::{self, Outgoing};
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::{ChatUser, MessagePage};
use crate::token::Credential;

mod devices;

/// Query of `GET /v1/chats`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ChatsQuery {
    /// At most this many (default 50, at most 100).
    pub limit: Option<String>,
    /// `true` to include archived chats (default `false`).
    pub include_archived: Option<String>,
    /// Only chats whose title contains this text, ignoring case (blank: all).
    pub q: Option<String>,
}

/// Query of `GET /v1/chats/{chatId}/messages`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct MessagesQuery {
    /// Only messages before this sequence number (the newest of them).
    pub before_seq: Option<String>,
    /// Only messages after this sequence number.
    pub after_seq: Option<String>,
    /// At most this many (default 100, at most 500).
    pub limit: Option<String>,
}

/// Query of `POST /v1/chats/{chatId}/attachments`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct AttachmentQuery {
    /// The file's name (one plain name: no folders, not hidden).
    pub name: String,
}

/// Query of the chat event routes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct EventsQuery {
    /// Only events after this sequence number (default 0).
    pub after_seq: Option<String>,
    /// At most this many (default 100, at most 1000; HTTP replay only).
    pub limit: Option<String>,
    /// WebSocket only: `backend` or `mobile_app` speaks the public client protocol
    /// (`docs/protocol.md`); absent, the socket streams every event as the web UI reads them.
    pub client_type: Option<String>,
}

pub(super) fn routes() -> ApiRouter<AppState> {
    attachment_routes(stream_routes(turn_routes(chat_routes(setting_routes(
        ApiRouter::default(),
    )))))
}

/// Bootstrap, onboarding and the user's settings.
fn setting_routes(router: ApiRouter<AppState>) -> ApiRouter<AppState> {
    router
        .route(
            Operation::get("/v1/bootstrap")
                .summary("Version, features, usable models, tools and settings, for a client's first call.")
                .tag("chats")
                .response::<Bootstrap>(200, "Bootstrap information."),
            bootstrap,
        )
        .route(
            Operation::get("/v1/onboarding/state")
                .summary("Whether onboarding is needed and what is missing.")
                .tag("chats")
                .response::<OnboardingState>(200, "The onboarding state."),
            onboarding_state,
        )
        .route(
            Operation::post("/v1/onboarding/complete")
                .summary("Finish onboarding with optional preferences.")
                .tag("chats")
                .request::<SettingsPatch>()
                .response::<OnboardingCompleted>(200, "Done.")
                .response::<ErrorBody>(409, "No model is reachable yet (`onboarding_requires_model_access`)."),
            onboarding_complete,
        )
        .route(
            Operation::get("/v1/me/settings")
                .summary("The user's effective settings.")
                .tag("chats")
                .response::<SettingsResponse>(200, "The settings."),
            get_settings,
        )
        .route(
            Operation::patch("/v1/me/settings")
                .summary("Change settings; absent fields keep their value.")
                .tag("chats")
                .request::<SettingsPatch>()
                .response::<SettingsResponse>(200, "The new settings."),
            patch_settings,
        )
        .route(
            Operation::get("/v1/chats/{chatId}/tools")
                .summary("The tools the chat's next turn offers its agent.")
                .description(
                    "Its enabled catalog tools (the chat's own choice, else the user's), the \
                     connected MCP servers' tools, and the agent's core tools (memory, \
                     Knowledge, skills, questions), which stay on whatever the catalog choice \
                     unless the chat's `disabledCoreTools` turns their group off; \
                     `coreGroups` lists every group with its tools and whether it is on.",
                )
                .tag("chats")
                .response::<ChatTools>(200, "The tools.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`)."),
            get_chat_tools,
        )
}

/// Chats and their messages.
fn chat_routes(router: ApiRouter<AppState>) -> ApiRouter<AppState> {
    router
        .route(
            Operation::get("/v1/chats")
                .summary("List chats, most recently changed first.")
                .tag("chats")
                .query::<ChatsQuery>()
                .response::<ChatList>(200, "The chats."),
            list_chats,
        )
        .route(
            Operation::post("/v1/chats")
                .summary("Create a chat (idempotent by requestId).")
                .tag("chats")
                .request::<CreateChat>()
                .response::<CreateChatResponse>(201, "Created.")
                .response::<CreateChatResponse>(200, "The chat this requestId created before.")
                .response::<ErrorBody>(
                    409,
                    "requestId was used with a different payload (`idempotency_conflict`).",
                ),
            create_chat,
        )
        .route(
            Operation::patch("/v1/chats/{chatId}/title")
                .summary("Rename a chat.")
                .tag("chats")
                .request::<RenameChat>()
                .response::<Chat>(200, "The chat.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`)."),
            rename_chat,
        )
        .route(
            Operation::post("/v1/chats/{chatId}/archive")
                .summary("Archive a chat (reversible).")
                .tag("chats")
                .response::<Chat>(200, "The chat.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`)."),
            archive_chat,
        )
        .route(
            Operation::post("/v1/chats/{chatId}/unarchive")
                .summary("Unarchive a chat.")
                .tag("chats")
                .response::<Chat>(200, "The chat.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`)."),
            unarchive_chat,
        )
        .route(
            Operation::get("/v1/chats/{chatId}/settings")
                .summary("The chat's own model, agent and tools (`null`: the user's).")
                .tag("chats")
                .response::<ChatSettings>(200, "The chat's settings.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`)."),
            get_chat_settings,
        )
        .route(
            Operation::put("/v1/chats/{chatId}/settings")
                .summary("Replace the chat's own model, agent and tools.")
                .description(
                    "Its next turns use them over the user's settings (a message's own options \
                     still win). `null` or absent: the user's setting. The model must be \
                     available to the user; the agent is `graph` or `skills`; tools are catalog \
                     names; `disabledCoreTools` holds core tool groups (`memory`, `knowledge`, \
                     `skills`, `askUser`).",
                )
                .tag("chats")
                .request::<ChatSettings>()
                .response::<ChatSettings>(200, "The stored settings.")
                .response::<ErrorBody>(400, "An unknown model, agent, tool or core tool group.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`)."),
            put_chat_settings,
        )
        .route(
            Operation::delete("/v1/chats/{chatId}")
                .summary("Delete a chat for good, with everything the agents keep about it.")
                .description(
                    "Its messages, executions, events and questions are deleted, and the agents \
                     forget it: its session memory is closed and its session facts, turns and \
                     Knowledge are deleted. 409 `chat_already_has_active_execution` while a turn \
                     runs (cancel it first).",
                )
                .tag("chats")
                .plain_response(204, "Deleted.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`).")
                .response::<ErrorBody>(409, "A turn is running in the chat."),
            delete_chat,
        )
        .route(
            Operation::get("/v1/chats/{chatId}/messages")
                .summary("Messages of a chat, ascending.")
                .tag("chats")
                .query::<MessagesQuery>()
                .response::<MessageList>(200, "The messages.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`)."),
            list_messages,
        )
}

/// Files to attach to a message.
fn attachment_routes(router: ApiRouter<AppState>) -> ApiRouter<AppState> {
    router.route(
        Operation::post("/v1/chats/{chatId}/attachments")
            .summary("Upload a file to attach to a message (the request body).")
            .description(
                "Saved as a new file in `~/Documents/souz/attachments/{chatId}/` (inside \
                     the roots; a taken name gets a number), then attached by the returned \
                     `path` in `POST .../messages` `attachments`. Images (PNG, JPEG, GIF, WebP, \
                     at most 10 MiB) go to vision models as image parts, UTF-8 text into the \
                     message, other files by path for the agent's file tools. The body is \
                     limited by `[server] body_limit` (413).",
            )
            .tag("chats")
            .query::<AttachmentQuery>()
            .binary_request("application/octet-stream")
            .response::<Attachment>(201, "Saved; attach it by its path.")
            .response::<ErrorBody>(
                400,
                "A bad name, an empty file, or no writable upload folder.",
            )
            .response::<ErrorBody>(404, "No such chat (`chat_not_found`).")
            .response::<ErrorBody>(413, "Larger than `[server] body_limit`."),
        upload_attachment,
    )
}

/// Posting a message (a turn), following a chat's events, and cancelling turns.
fn turn_routes(router: ApiRouter<AppState>) -> ApiRouter<AppState> {
    router
        .route(
            Operation::post("/v1/chats/{chatId}/messages")
                .summary("Post a message; starts an agent turn (an execution).")
                .description(
                    "Answers at once with the stored message and the running execution; follow \
                     the turn on `WS /v1/chats/{chatId}/ws` or `GET .../events`. Resending the \
                     same `clientMessageId` returns the original execution. 409 \
                     `chat_already_has_active_execution` while a turn runs.",
                )
                .tag("chats")
                .request::<PostMessage>()
                .response::<PostMessageResponse>(200, "Stored; the turn runs.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`).")
                .response::<ErrorBody>(409, "A turn is running, or the model is not usable."),
            post_message,
        )
        .route(
            Operation::post("/v1/chats/{chatId}/input")
                .summary("Send a message whether or not the chat's agent is working.")
                .description(
                    "The message is stored and announced first. With no turn running it starts \
                     one (`delivery: turn`, like `POST .../messages`); a running skills-agent \
                     turn takes it at its next step (`steered`); otherwise it waits and starts \
                     the next turn when the running one ends (`queued`: the graph agent, or a \
                     turn that already has its answer). 409 while the agent waits for the \
                     answer to its question.",
                )
                .tag("chats")
                .request::<ChatInput>()
                .response::<ChatInputResponse>(200, "Stored; what became of it.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`).")
                .response::<ErrorBody>(
                    409,
                    "The agent waits for an answer, Souz is paused, or the model is not usable.",
                ),
            send_input,
        )
        .route(
            Operation::post("/v1/chats/{chatId}/cancel-active")
                .summary("Cancel the chat's running turn.")
                .tag("chats")
                .response::<ExecutionResponse>(200, "Cancelling (or cancelled).")
                .response::<ErrorBody>(400, "The chat has no active execution."),
            cancel_active,
        )
        .route(
            Operation::post("/v1/chats/{chatId}/executions/{executionId}/cancel")
                .summary("Cancel one execution.")
                .tag("chats")
                .response::<ExecutionResponse>(200, "Cancelling (or cancelled).")
                .response::<ErrorBody>(404, "No such execution (`execution_not_found`)."),
            cancel_execution,
        )
        .route(
            Operation::get("/v1/chats/{chatId}/executions/{executionId}/trace")
                .summary("Why the agent did what it did in one execution.")
                .description(
                    "Its agent turns with their graph steps in order: each model request with \
                     the messages it was sent with and its usage, the answer and the tool calls \
                     it asked for, tool results, and how long each step took. Built from what \
                     the turns stored; texts are redacted (secrets replaced) and cut.",
                )
                .tag("chats")
                .response::<ExecutionTrace>(200, "The trace (no turns: the execution ran none).")
                .response::<ErrorBody>(
                    404,
                    "No such chat or execution (`chat_not_found`, `execution_not_found`).",
                ),
            execution_trace,
        )
}

/// A chat's events (replay and the WebSocket, where devices also speak the public client
/// protocol) and its threads.
fn stream_routes(router: ApiRouter<AppState>) -> ApiRouter<AppState> {
    router
        .route(
            Operation::get("/v1/chats/{chatId}/events")
                .summary("Stored events of a chat after `afterSeq` (replay).")
                .tag("chats")
                .query::<EventsQuery>()
                .response::<ChatEventList>(200, "The events, ascending.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`)."),
            replay_events,
        )
        .route(
            Operation::get("/v1/chats/{chatId}/threads")
                .summary("A chat's threads: one per execution, newest first (at most 100).")
                .description(
                    "A thread is what the public client protocol (`docs/protocol.md`) calls an \
                     execution: its status, revision (the latest accepted input number), times, \
                     lease while active, and error.",
                )
                .tag("chats")
                .response::<ThreadList>(200, "The threads.")
                .response::<ErrorBody>(404, "No such chat (`chat_not_found`)."),
            list_threads,
        )
        .route(
            Operation::get("/v1/chats/{chatId}/ws")
                .summary("Follow a chat over a WebSocket: replay after `afterSeq`, then live.")
                .description(
                    "Without `clientType` (the web UI): frames `{\"kind\":\"event\", ...event}` \
                     for stored events (with `seq`) and live ones (`message.delta`, without \
                     `seq`), `{\"kind\":\"live\",\"lastSeq\":N}` when the replay is done, and \
                     `{\"kind\":\"resync\",\"lastSeq\":N}` followed by close code 4000 when the \
                     client fell behind (reconnect with afterSeq=N); what the client sends is \
                     ignored. With `clientType=backend|mobile_app` the socket speaks the public \
                     client protocol: devices submit messages (new threads or steering), cancel \
                     threads and send tool results, and get acks, thread status and the public \
                     events; every frame, error code and close code is in \
                     `docs/protocol.md` of the Souz repository.",
                )
                .tag("chats")
                .query::<EventsQuery>()
                .websocket::<ChatEvent>(),
            follow,
        )
}

/// Parses a positive integer query value: default when absent, 400 when not positive,
/// clamped to `max`.
pub(super) fn positive(
    name: &str,
    value: Option<&str>,
    default: usize,
    max: usize,
) -> Result<usize, ApiError> {
    match value {
        None => Ok(default),
        Some(text) => match text.trim().parse::<i64>() {
            Ok(number) if number > 0 => Ok(usize::try_from(number).unwrap_or(max).min(max)),
            _ => Err(ApiError::invalid(format!("{name} must be positive."))),
        },
    }
}

fn sequence(name: &str, value: Option<&str>) -> Result<Option<i64>, ApiError> {
    value
        .map(|text| match text.trim().parse::<i64>() {
            Ok(number) if number >= 0 => Ok(number),
            _ => Err(ApiError::invalid(format!("{name} must be 0 or more."))),
        })
        .transpose()
}

async fn bootstrap(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<Bootstrap>, ApiError> {
    Ok(axum::Json(handle.bootstrap(&user).await?))
}

async fn onboarding_state(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<OnboardingState>, ApiError> {
    Ok(axum::Json(handle.onboarding_state(&user).await?))
}

async fn onboarding_complete(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    ApiJson(patch): ApiJson<SettingsPatch>,
) -> Result<axum::Json<OnboardingCompleted>, ApiError> {
    handle.complete_onboarding(&user, patch).await?;
    Ok(axum::Json(OnboardingCompleted { completed: true }))
}

async fn get_settings(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
) -> Result<axum::Json<SettingsResponse>, ApiError> {
    let settings = handle.settings(&user).await?;
    Ok(axum::Json(SettingsResponse { settings }))
}

async fn patch_settings(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    ApiJson(patch): ApiJson<SettingsPatch>,
) -> Result<axum::Json<SettingsResponse>, ApiError> {
    let settings = handle.patch_settings(&user, patch).await?;
    Ok(axum::Json(SettingsResponse { settings }))
}

async fn list_chats(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    ApiQuery(query): ApiQuery<ChatsQuery>,
) -> Result<axum::Json<ChatList>, ApiError> {
    let limit = positive("limit", query.limit.as_deref(), 50, 100)?;
    let include_archived = match query.include_archived.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::invalid("includeArchived must be true or false.")),
    };
    Ok(axum::Json(
        handle
            .list_chats(&user, limit, include_archived, query.q)
            .await?,
    ))
}

async fn get_chat_settings(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
) -> Result<axum::Json<ChatSettings>, ApiError> {
    Ok(axum::Json(handle.chat_settings(&user, &chat_id).await?))
}

async fn get_chat_tools(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
) -> Result<axum::Json<ChatTools>, ApiError> {
    Ok(axum::Json(handle.chat_tools(&user, &chat_id).await?))
}

async fn put_chat_settings(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
    ApiJson(settings): ApiJson<ChatSettings>,
) -> Result<axum::Json<ChatSettings>, ApiError> {
    Ok(axum::Json(
        handle.set_chat_settings(&user, &chat_id, settings).await?,
    ))
}

async fn delete_chat(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
) -> Result<StatusCode, ApiError> {
    handle.delete_chat(&user, &chat_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn create_chat(
    user: ChatUser,
    credential: Option<Extension<Credential>>,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<CreateChat>,
) -> Result<Response, ApiError> {
    // A chat a `chats` client (`souz acp`) makes is one it may then reach.
    let (response, created) = match credential {
        Some(Extension(Credential::Client(client))) => {
            handle
                .create_client_chat(&user, request, &client.id)
                .await?
        }
        _ => handle.create_chat(&user, request).await?,
    };
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(response)).into_response())
}

async fn rename_chat(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
    ApiJson(request): ApiJson<RenameChat>,
) -> Result<axum::Json<Chat>, ApiError> {
    Ok(axum::Json(
        handle.rename_chat(&user, &chat_id, &request.title).await?,
    ))
}

async fn archive_chat(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
) -> Result<axum::Json<Chat>, ApiError> {
    Ok(axum::Json(
        handle.set_chat_archived(&user, &chat_id, true).await?,
    ))
}

async fn unarchive_chat(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
) -> Result<axum::Json<Chat>, ApiError> {
    Ok(axum::Json(
        handle.set_chat_archived(&user, &chat_id, false).await?,
    ))
}

async fn list_messages(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
    ApiQuery(query): ApiQuery<MessagesQuery>,
) -> Result<axum::Json<MessageList>, ApiError> {
    let limit = positive("limit", query.limit.as_deref(), 100, 500)?;
    let before = positive("beforeSeq", query.before_seq.as_deref(), 0, usize::MAX)?;
    let after = positive("afterSeq", query.after_seq.as_deref(), 0, usize::MAX)?;
    let bound = |value: usize| (value > 0).then(|| i64::try_from(value).unwrap_or(i64::MAX));
    Ok(axum::Json(
        handle
            .messages(
                &user,
                &chat_id,
                MessagePage {
                    before: bound(before),
                    after: bound(after),
                    limit,
                },
            )
            .await?,
    ))
}

async fn post_message(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
    ApiJson(request): ApiJson<PostMessage>,
) -> Result<axum::Json<PostMessageResponse>, ApiError> {
    Ok(axum::Json(
        handle.post_message(&user, &chat_id, request).await?,
    ))
}

async fn upload_attachment(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
    ApiQuery(query): ApiQuery<AttachmentQuery>,
    body: axum::body::Bytes,
) -> Result<(StatusCode, axum::Json<Attachment>), ApiError> {
    let attachment = handle
        .upload_attachment(&user, &chat_id, &query.name, body)
        .await?;
    Ok((StatusCode::CREATED, axum::Json(attachment)))
}

async fn send_input(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
    ApiJson(input): ApiJson<ChatInput>,
) -> Result<axum::Json<ChatInputResponse>, ApiError> {
    Ok(axum::Json(handle.send_input(&user, &chat_id, input).await?))
}

async fn replay_events(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> Result<axum::Json<ChatEventList>, ApiError> {
    let after = sequence("afterSeq", query.after_seq.as_deref())?.unwrap_or(0);
    let limit = positive("limit", query.limit.as_deref(), 100, 1000)?;
    Ok(axum::Json(
        handle.replay_chat(&user, &chat_id, after, limit).await?,
    ))
}

async fn follow(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let upgrade = ws::upgrade(upgrade)?;
    let after = sequence("afterSeq", query.after_seq.as_deref())?.unwrap_or(0);
    handle.authorize_chat_stream(&user, &chat_id).await?;
    let Some(client_type) = query.client_type else {
        return Ok(upgrade.on_upgrade(move |socket| stream(socket, handle, chat_id, after)));
    };
    if ClientType::parse(&client_type).is_none() {
        return Ok(upgrade.on_upgrade(devices::refuse_client_type));
    }
    Ok(upgrade.on_upgrade(move |socket| devices::serve(socket, handle, user, chat_id, after)))
}

async fn list_threads(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
) -> Result<axum::Json<ThreadList>, ApiError> {
    Ok(axum::Json(handle.chat_threads(&user, &chat_id).await?))
}

async fn stream(socket: WebSocket, handle: RuntimeHandle, chat_id: String, after: i64) {
    let items = handle.follow_chat(&chat_id, after);
    let encode = |item: Outgoing<'_, ChatEvent>| {
        let frame = match item {
            Outgoing::Event(event) => {
                let mut value = serde_json::to_value(event).ok()?;
                value["kind"] = json!("event");
                value
            }
            Outgoing::Live { last_seq } => json!({"kind": "live", "lastSeq": last_seq}),
            Outgoing::Resync { last_seq } => json!({"kind": "resync", "lastSeq": last_seq}),
        };
        Some(frame.to_string())
    };
    let reason = "fell behind; reconnect with afterSeq";
    ws::follow(socket, handle.shutdown_signal(), items, encode, reason).await;
}

async fn cancel_active(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id]): UuidPath<1>,
) -> Result<axum::Json<ExecutionResponse>, ApiError> {
    let execution = handle.cancel_active(&user, &chat_id).await?;
    Ok(axum::Json(ExecutionResponse { execution }))
}

async fn execution_trace(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id, execution_id]): UuidPath<2>,
) -> Result<axum::Json<ExecutionTrace>, ApiError> {
    Ok(axum::Json(
        handle
            .execution_trace(&user, &chat_id, &execution_id)
            .await?,
    ))
}

async fn cancel_execution(
    user: ChatUser,
    State(handle): State<RuntimeHandle>,
    UuidPath([chat_id, execution_id]): UuidPath<2>,
) -> Result<axum::Json<ExecutionResponse>, ApiError> {
    let execution = handle
        .cancel_execution(&user, &chat_id, &execution_id)
        .await?;
    Ok(axum::Json(ExecutionResponse { execution }))
}
