//! The chat API on the wire (`/v1/chats`, `/v1/me/settings`, `/v1/onboarding`, `/v1/options`):
//! the original `/v1` API's shapes (camelCase), so its clients keep working.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod devices;
pub mod events;

pub use events::ChatEventBody;

/// A user's effective settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// Default model (alias or `provider/model`).
    pub default_model: String,
    /// Context window the agent plans for, in tokens.
    pub context_size: u32,
    /// Sampling temperature.
    pub temperature: f32,
    /// BCP 47 locale (`en-US`).
    pub locale: String,
    /// IANA time zone (`Europe/Berlin`).
    pub time_zone: String,
    /// System prompt override; `null` uses the agent's default.
    pub system_prompt: Option<String>,
    /// Tools the agent may use.
    pub enabled_tools: Vec<String>,
    /// Whether tool-call events are shown in chats.
    pub show_tool_events: bool,
    /// Whether answers stream as `message.delta` events.
    pub streaming_messages: bool,
    /// `en` or `ru`.
    pub interface_language: String,
    /// Time limit of one model request, in milliseconds (at least 1000).
    pub request_timeout_millis: u64,
    /// Whether tool descriptions include few-shot examples.
    pub use_few_shot_examples: bool,
}

impl Settings {
    /// The interface language (English when the code is not one Souz speaks).
    pub fn language(&self) -> crate::language::Language {
        crate::language::Language::from_code(&self.interface_language).unwrap_or_default()
    }
}

/// `PATCH /v1/me/settings` and per-message overrides: every field optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsPatch {
    /// Default model.
    pub default_model: Option<String>,
    /// Context size (> 0).
    pub context_size: Option<u32>,
    /// Temperature (finite).
    pub temperature: Option<f32>,
    /// Locale (BCP 47).
    pub locale: Option<String>,
    /// Time zone (IANA).
    pub time_zone: Option<String>,
    /// System prompt (blank is ignored).
    pub system_prompt: Option<String>,
    /// Enabled tools (names from the catalog).
    pub enabled_tools: Option<Vec<String>>,
    /// Show tool events.
    pub show_tool_events: Option<bool>,
    /// Stream answers.
    pub streaming_messages: Option<bool>,
    /// `en` or `ru`.
    pub interface_language: Option<String>,
    /// Request timeout (>= 1000 ms).
    pub request_timeout_millis: Option<u64>,
    /// Few-shot examples.
    pub use_few_shot_examples: Option<bool>,
}

/// `{settings}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SettingsResponse {
    /// The effective settings.
    pub settings: Settings,
}

/// A chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Chat {
    /// Chat id.
    pub id: String,
    /// Title, if any.
    pub title: Option<String>,
    /// Whether it is archived (reversible).
    pub archived: bool,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// The latest message's content.
    pub last_message_preview: Option<String>,
}

/// `GET /v1/chats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatList {
    /// Most recently changed first.
    pub items: Vec<Chat>,
    /// Always `null` (no paging beyond `limit`).
    pub next_cursor: Option<String>,
}

/// `POST /v1/chats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateChat {
    /// Idempotency key: the same key and payload return the same chat.
    pub request_id: Option<String>,
    /// Title.
    pub title: Option<String>,
    /// Accepted for compatibility with the original API; must be the caller's own id if given.
    pub user_id: Option<String>,
    /// Accepted for compatibility (`backend` or `mobile_app`).
    pub client_type: Option<String>,
}

/// `POST /v1/chats` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateChatResponse {
    /// The idempotency key, if one was sent.
    pub request_id: Option<String>,
    /// Whether the chat already existed for this key.
    pub duplicate: bool,
    /// The chat.
    pub chat: Chat,
}

/// `PATCH /v1/chats/{chatId}/title`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenameChat {
    /// The new title (trimmed, non-empty).
    pub title: String,
}

/// A message of a chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Message id.
    pub id: String,
    /// Chat id.
    pub chat_id: String,
    /// Position in the chat, from 1.
    pub seq: i64,
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// Text.
    pub content: String,
    /// String metadata (`clientMessageId`, ...).
    pub metadata: BTreeMap<String, String>,
    /// Files and images the person attached (user messages only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// When it was stored.
    pub created_at: DateTime<Utc>,
}

/// What kind of file an attachment is, which decides how the model gets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// A PNG, JPEG, GIF or WebP image: sent to the model as an image part (vision models).
    Image,
    /// UTF-8 text: its contents go into the message, marked as the person's file.
    Text,
    /// Anything else (PDF, Word, a spreadsheet...): the model is told its path and reads it
    /// with its file tools.
    File,
}

/// A file attached to a message: a path inside the roots (uploads land in
/// `~/Documents/souz/attachments/<chatId>/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// The file, as the person sees it (`~/…` inside the home).
    pub path: String,
    /// Its file name.
    pub name: String,
    /// How the model gets it.
    pub kind: AttachmentKind,
    /// Its media type (`image/png`, `text/plain`, `application/octet-stream`...).
    pub media_type: String,
    /// Its size in bytes when attached.
    pub size: u64,
}

/// `GET /v1/chats/{chatId}/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageList {
    /// Ascending by `seq`.
    pub items: Vec<Message>,
    /// Always `null`.
    pub next_before_seq: Option<i64>,
}

/// `POST /v1/chats/{chatId}/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostMessage {
    /// The user's message (trimmed, non-empty).
    pub content: String,
    /// Idempotency key: resending it returns the original execution.
    pub client_message_id: Option<String>,
    /// Per-turn overrides.
    pub options: Option<TurnOptions>,
    /// Files to attach: paths inside the roots (an upload's `path`), at most 10. Images go to
    /// the model as image parts, text files into the message, other files by path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<String>,
}

/// Per-turn overrides of `POST /v1/chats/{chatId}/messages`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnOptions {
    /// Model.
    pub model: Option<String>,
    /// Context size.
    pub context_size: Option<u32>,
    /// Temperature.
    pub temperature: Option<f32>,
    /// Locale.
    pub locale: Option<String>,
    /// Time zone.
    pub time_zone: Option<String>,
    /// System prompt.
    pub system_prompt: Option<String>,
}

/// Token usage of an execution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Total tokens.
    pub total_tokens: u64,
    /// Prompt tokens served from a cache.
    pub precached_tokens: u64,
}

/// Where an execution (an agent turn) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// Accepted, not started.
    Queued,
    /// The agent is working.
    Running,
    /// Waiting for the person to answer an option (question).
    WaitingOption,
    /// An unattended run (a schedule's) parked on a tool call that waits for the person's
    /// approval; it goes on when they approve, and ends when they deny or it expires.
    WaitingApproval,
    /// Cancellation requested.
    Cancelling,
    /// Cancelled.
    Cancelled,
    /// Finished with an answer.
    Completed,
    /// Failed.
    Failed,
}

impl ExecutionStatus {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::WaitingOption => "waiting_option",
            Self::WaitingApproval => "waiting_approval",
            Self::Cancelling => "cancelling",
            Self::Cancelled => "cancelled",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    /// Whether the execution still holds the chat (the first four statuses).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            Self::Queued
                | Self::Running
                | Self::WaitingOption
                | Self::WaitingApproval
                | Self::Cancelling
        )
    }
}

/// An execution: one agent turn started by a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    /// Execution id.
    pub id: String,
    /// Chat id.
    pub chat_id: String,
    /// The user message that started it.
    pub user_message_id: Option<String>,
    /// The assistant's answer, once there is one.
    pub assistant_message_id: Option<String>,
    /// Status.
    pub status: ExecutionStatus,
    /// Always `null` here (public client threads).
    pub request_id: Option<String>,
    /// The idempotency key of the user message.
    pub client_message_id: Option<String>,
    /// Model alias.
    pub model: Option<String>,
    /// Provider (enum name, e.g. `OPENAI`).
    pub provider: Option<String>,
    /// When it started running.
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// Whether cancellation was requested.
    pub cancel_requested: bool,
    /// Error code, if it failed or was cancelled.
    pub error_code: Option<String>,
    /// Error message.
    pub error_message: Option<String>,
    /// Token usage.
    pub usage: Option<Usage>,
    /// Always empty: internal metadata is never exposed.
    pub metadata: BTreeMap<String, String>,
}

/// `POST /v1/chats/{chatId}/messages` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostMessageResponse {
    /// The stored user message.
    pub message: Message,
    /// The answer, when the execution already finished (an idempotent retry).
    pub assistant_message: Option<Message>,
    /// The execution.
    pub execution: Execution,
}

/// `GET`/`PUT /v1/chats/{chatId}/settings`: what one chat uses instead of the user's settings
/// (`null`: the user's, or the configured default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatSettings {
    /// Model (alias or `provider/model`) available to the user; `null`: their default model.
    #[serde(default)]
    pub model: Option<String>,
    /// Agent: `graph` or `skills`; `null`: the configured default agent.
    #[serde(default)]
    pub agent: Option<String>,
    /// Tools the agent may use (names from the catalog); `null`: the user's enabled tools.
    #[serde(default)]
    pub enabled_tools: Option<Vec<String>>,
    /// The agent's own tools this chat's turns leave out, by group: `memory` (SearchMemory),
    /// `knowledge` (GetKnowledge, SearchKnowledge), `skills` (the skill lookups and
    /// RunSkillCommand) and `askUser` (AskUser); `null` or empty: all on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_core_tools: Option<Vec<String>>,
    /// Read the agent's answers aloud in this chat (with the `[voice] tts` voice); `null` or
    /// `false`: off (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spoken_answers: Option<bool>,
}

/// `GET /v1/chats/{chatId}/tools`: the tools the chat's next turn offers its agent, as its
/// settings make them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatTools {
    /// The agent the chat's turns run on: `graph` or `skills`.
    pub agent: String,
    /// Catalog tools the chat's settings enable (and the policy does not always refuse), by
    /// name. The graph agent shows the ones each message needs; the skills agent runs them
    /// through `RunSkillCommand`.
    pub catalog: Vec<String>,
    /// Tools of connected MCP servers (the chat's catalog choice does not limit them).
    pub external: Vec<String>,
    /// The agent's own tools (memory, Knowledge, skills, questions to the person) the chat
    /// leaves on: the catalog choice does not limit them; `disabledCoreTools` does.
    pub core: Vec<String>,
    /// The agent's core tools by group, on or turned off by the chat's `disabledCoreTools`.
    #[serde(default)]
    pub core_groups: Vec<CoreToolGroupState>,
}

/// One group of an agent's core tools as a chat has it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CoreToolGroupState {
    /// `memory`, `knowledge`, `skills` or `askUser`.
    pub group: String,
    /// Its tools that the chat's agent has.
    pub tools: Vec<String>,
    /// Whether the chat's turns offer them.
    pub enabled: bool,
}

/// `POST /v1/chats/{chatId}/input`: a message for the chat whether or not its agent is working.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatInput {
    /// The user's message (trimmed, non-empty).
    pub content: String,
    /// Kept with the stored message (and, when it starts a turn, its idempotency key).
    pub client_message_id: Option<String>,
    /// Files to attach, as in `POST .../messages`; only when no turn is running (a running
    /// turn takes text only: 400 otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<String>,
}

/// What became of input sent with `POST /v1/chats/{chatId}/input`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputDelivery {
    /// No turn was running: it started one, like `POST .../messages`.
    Turn,
    /// The running turn takes it at its next step (the skills agent).
    Steered,
    /// The running turn cannot take it (the graph agent, or a turn that already has its
    /// answer): it starts the next turn when this one ends.
    Queued,
}

/// `POST /v1/chats/{chatId}/input` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatInputResponse {
    /// The stored user message.
    pub message: Message,
    /// What became of it.
    pub delivery: InputDelivery,
    /// The execution it started (`turn`) or the running one it went to.
    pub execution: Execution,
}

/// `{execution}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionResponse {
    /// The execution.
    pub execution: Execution,
}

/// A chat event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatEvent {
    /// Chat-local sequence number (`null` for live-only events such as `message.delta`).
    pub seq: Option<i64>,
    /// Whether it is stored (replayable).
    pub durable: bool,
    /// Chat id.
    pub chat_id: String,
    /// The execution it belongs to, if any.
    pub execution_id: Option<String>,
    /// Its `type` and type-specific `payload`.
    #[serde(flatten)]
    pub body: ChatEventBody,
    /// When it happened.
    pub created_at: DateTime<Utc>,
}

impl ChatEvent {
    /// The dotted type (`message.created`).
    pub fn kind(&self) -> &str {
        self.body.kind()
    }
}

/// `GET /v1/chats/{chatId}/events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatEventList {
    /// Ascending by `seq`.
    pub items: Vec<ChatEvent>,
}

/// One choice of an option (question).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OptionChoice {
    /// Choice id.
    pub id: String,
    /// Label.
    pub label: String,
    /// Longer content.
    pub content: Option<String>,
}

/// How many choices an answer to a question may pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SelectionMode {
    /// At most one choice.
    Single,
    /// Any number of choices.
    Multiple,
}

impl SelectionMode {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Single => "single",
            Self::Multiple => "multiple",
        }
    }

    /// Parses the stored form.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "single" => Some(Self::Single),
            "multiple" => Some(Self::Multiple),
            _ => None,
        }
    }
}

/// Where a question stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OptionStatus {
    /// Waiting for the person's answer; its execution is `waiting_option`.
    Pending,
    /// Answered; its execution resumed.
    Answered,
    /// Its execution ended (cancelled or failed) before an answer came.
    Cancelled,
    /// Nobody answered before `expiresAt`.
    Expired,
}

impl OptionStatus {
    /// As stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Answered => "answered",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
        }
    }

    /// Parses the stored form.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "answered" => Some(Self::Answered),
            "cancelled" => Some(Self::Cancelled),
            "expired" => Some(Self::Expired),
            _ => None,
        }
    }
}

/// A question an agent asked the person (an option, in the original API's words): what
/// `GET /v1/options` lists and the runtime event `option.requested` carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// Option id (answer it with `POST /v1/options/{id}/answer`).
    pub id: String,
    /// The chat whose agent asks.
    pub chat_id: String,
    /// That chat's title, if it has one.
    pub chat_title: Option<String>,
    /// The execution (agent turn) that waits for the answer.
    pub execution_id: String,
    /// Kind (`generic_selection`, ...).
    pub kind: String,
    /// The question.
    pub title: String,
    /// Whether one or several choices may be picked.
    pub selection_mode: SelectionMode,
    /// The choices (empty for a free-text question).
    pub options: Vec<OptionChoice>,
    /// Whether an answer in the person's own words is accepted.
    pub free_text: bool,
    /// Where it stands.
    pub status: OptionStatus,
    /// When it was asked.
    pub created_at: DateTime<Utc>,
    /// When it stops waiting.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was answered, cancelled or expired.
    pub answered_at: Option<DateTime<Utc>>,
    /// The answer, once there is one.
    pub answer: Option<OptionAnswer>,
}

/// `GET /v1/options`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionList {
    /// Pending questions of the user's chats, oldest first.
    pub items: Vec<Question>,
}

/// `POST /v1/options/{optionId}/answer`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OptionAnswer {
    /// Chosen choice ids (at least one unless `freeText` is given for a free-text question).
    #[serde(default)]
    pub selected_option_ids: Vec<String>,
    /// Free text.
    pub free_text: Option<String>,
    /// String metadata.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// The option part of `POST /v1/options/{optionId}/answer`'s response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptionState {
    /// Option id.
    pub id: String,
    /// `pending`, `answered`, `cancelled` or `expired` (see [`OptionStatus`]).
    pub status: String,
}

/// `POST /v1/options/{optionId}/answer` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OptionAnswerResponse {
    /// The option.
    pub option: OptionState,
    /// The resumed execution.
    pub execution: Execution,
}

/// `GET /v1/onboarding/state`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OnboardingState {
    /// Whether the client should show onboarding.
    pub required: bool,
    /// Whether onboarding was completed once.
    pub completed: bool,
    /// `provider` (no model is reachable), `preferences` (not completed) or `done`.
    pub current_step: String,
    /// `missing_model_access`, `preferences_incomplete`.
    pub reasons: Vec<String>,
    /// The model onboarding suggests.
    pub recommended_default_model: Option<String>,
}

/// `POST /v1/onboarding/complete` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OnboardingCompleted {
    /// Always true.
    pub completed: bool,
}

/// An agent turn that is running now, for the live view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActiveTurn {
    /// The execution.
    pub execution: Execution,
    /// The chat's title, if it has one.
    pub chat_title: Option<String>,
    /// The chat event after which this turn's events start (replay from it with
    /// `GET /v1/chats/{chatId}/events?afterSeq=`).
    pub after_seq: i64,
}

/// `GET /v1/turns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnList {
    /// Active turns, oldest first.
    pub items: Vec<ActiveTurn>,
}

/// `GET /v1/chats/{chatId}/executions/{executionId}/trace`: why the agent did what it did in
/// one execution, from what its turns stored (graph steps, model requests, tool calls,
/// timings). Texts are redacted (secrets replaced) and cut to a preview length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionTrace {
    /// The execution.
    pub execution_id: String,
    /// Its chat.
    pub chat_id: String,
    /// Its agent turns, oldest first (one, or more when the agent asked a question and the
    /// answer resumed it). Empty for an execution that ran no agent turn.
    pub turns: Vec<TurnTrace>,
}

/// One agent turn of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnTrace {
    /// The turn.
    pub turn_id: String,
    /// The agent (`graph`, `skills`).
    pub agent: String,
    /// The model.
    pub model: String,
    /// `running`, `completed`, `failed`, `cancelled` or `interrupted`.
    pub status: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// How long it took, in milliseconds (`null` while it runs).
    pub elapsed_ms: Option<u64>,
    /// Tokens used by all its model requests.
    pub usage: Option<Usage>,
    /// Why it failed (redacted).
    pub error: Option<String>,
    /// Its graph steps, in order.
    pub steps: Vec<TraceStep>,
}

/// One step of a turn's graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceStep {
    /// Position in the turn (0 is the turn's start).
    pub ordinal: u32,
    /// What it was: `start` (the turn began), `model` (a model request answered), `model_failed`
    /// (a model request failed), `reply` (the answer was settled) or `step` (any other node).
    pub kind: String,
    /// The graph node.
    pub node: String,
    /// Its graph.
    pub graph: String,
    /// Nesting depth.
    pub depth: u32,
    /// Attempts it took.
    pub attempts: u32,
    /// How long it ran, in milliseconds.
    pub elapsed_ms: u64,
    /// One line for people.
    pub summary: String,
    /// When it completed.
    pub at: DateTime<Utc>,
    /// Tokens of this step's model request (`model` steps).
    pub usage: Option<Usage>,
    /// The messages the model request was sent with, oldest first (`model` and
    /// `model_failed` steps; empty otherwise).
    pub prompt: Vec<TraceMessage>,
    /// The messages this step added to the conversation: the model's answer with its tool
    /// calls, tool results.
    pub added: Vec<TraceMessage>,
    /// Node details as stored (tools advertised, categories chosen, errors), redacted and cut.
    pub data: serde_json::Value,
}

/// A message of a trace, redacted and cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text (a tool's result for `tool`).
    pub text: String,
    /// Whether `text` was cut.
    pub truncated: bool,
    /// The tool whose result this is (`tool`).
    pub tool: Option<String>,
    /// Whether the tool failed (`tool`).
    pub is_error: bool,
    /// Tools the model asked to call (`assistant`).
    pub tool_calls: Vec<TraceToolCall>,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceToolCall {
    /// The call's id (its result names it).
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments, redacted and cut.
    pub arguments: serde_json::Value,
}
