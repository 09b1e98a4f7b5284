//! The facade the adapters (gateway routes, the MCP server; the CLI and the app reach the daemon
//! through the gateway) use: [`RuntimeHandle`](super::RuntimeHandle) methods grouped by concept,
//! one module per concept, each a few lines over the domain services.
//!
//! Invariants:
//! - Every fallible method returns [`ServiceError`], the one error type that crosses the edge.
//!   Domain errors (`ChatError`, `ApprovalError`, `StoreError`, `LlmServiceError`,
//!   `ConfigEditError`, `ClientTokenError`) become a `ServiceError` here and nowhere else; the
//!   gateway maps it to HTTP in `gateway::error` only, the MCP server to MCP errors in one
//!   function.
//! - What an adapter needs of a domain type (a request struct, a state it watches) is
//!   re-exported here, so adapter modules import `crate::runtime` and `souz_protocol`, never
//!   `store`, `chat`, `approvals`, `tools` or `llm` (the `layering` test checks it).
//! - A `ServiceError` keeps what the client may be told apart from what only the log may see:
//!   `Internal` and `StartFailed` carry details for the log, never for the wire.

mod approvals;
mod calls;
mod chats;
mod connect;
mod credentials;
mod devices;
mod events;
mod history;
mod local_models;
mod mcp;
mod memory;
mod provider_logins;
mod schedules;
mod settings;
mod setup;
mod skills;
mod speech;
mod speech_models;
mod telegram;
mod voice;

use souz_protocol::ErrorCode;
use souz_protocol::config::ConfigProblem;

use super::config_editor::{ConfigEditError, problem_on_wire};
use crate::approvals::ApprovalError;
use crate::chat::ChatError;
use crate::llm::keys::KeyStoreError;
use crate::llm::service::LlmServiceError;
use crate::store::StoreError;
use crate::token::clients::ClientTokenError;

pub(crate) use crate::approvals::Audience;
pub(crate) use crate::approvals::audit::AuditQuery;
pub(crate) use crate::approvals::policy::same_requester;
pub(crate) use crate::bus::FollowItem;
pub(crate) use crate::chat::devices::Handled as DeviceAnswer;
pub(crate) use crate::chat::options::MAX_LISTED as MAX_LISTED_QUESTIONS;
pub(crate) use crate::chat::{ChatUser, MessagePage};
pub(crate) use crate::history::undo::{HistoryQuery, MAX_LISTED as MAX_LISTED_CHANGES};
pub(crate) use crate::tools::gate::{CallRequest, CallState};
pub(crate) use crate::tools::{ToolProgress, ToolSpec, input_schema, parse_arguments};
pub(crate) use memory::MemoryOrigin;
pub(crate) use schedules::MAX_LISTED_RUNS;
pub(crate) use skills::UsableSkill;
pub(crate) use speech::{MAX_SPEECH_UPLOAD, TranscriptionRequest};
pub(crate) use telegram::{Press, TELEGRAM_VIA, VIA_KEY};

/// Why an operation of the runtime failed, as every adapter sees it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ServiceError {
    /// The request is malformed or names something unusable; nothing changed.
    #[error("{0}")]
    Invalid(String),
    /// A `config.toml` that does not validate; nothing was written.
    #[error("{message}")]
    ConfigRejected {
        /// What the client is told first.
        message: String,
        /// Every problem, with its position.
        problems: Vec<ConfigProblem>,
        /// The text that was validated.
        text: String,
    },
    /// No such thing (for this caller); `code` says which kind of thing.
    #[error("{message}")]
    NotFound {
        /// `not_found`, `chat_not_found`, `execution_not_found` or `option_not_found`.
        code: ErrorCode,
        /// What the client is told.
        message: String,
    },
    /// The request conflicts with the state; `code` says how.
    #[error("{message}")]
    Conflict {
        /// The stable code (`conflict`, `paused`, `idempotency_conflict`, ...).
        code: ErrorCode,
        /// What the client is told.
        message: String,
    },
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The daemon is shutting down (the database is closed).
    #[error("Souz is shutting down.")]
    Unavailable,
    /// An agent turn could not be started; the detail is for the log only.
    #[error("the agent could not be started: {0}")]
    StartFailed(String),
    /// A service Souz called for the request (a speech engine) failed; `failure` says how, and
    /// the message (in the person's language) what to do.
    #[error("{message}")]
    Upstream {
        /// How it failed.
        failure: UpstreamFailure,
        /// What the client is told.
        message: String,
    },
    /// Something broke inside; the detail is for the log only.
    #[error("{0}")]
    Internal(String),
}

/// How a service Souz called failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamFailure {
    /// It refused the key Souz sent.
    Refused,
    /// It is rate-limiting; try again after this many seconds, if it said.
    RateLimited(Option<u64>),
    /// It did not answer in time.
    TimedOut,
    /// It could not be reached, or answered an error.
    Failed,
}

impl ServiceError {
    fn not_found(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::NotFound {
            code,
            message: message.into(),
        }
    }

    fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Conflict {
            code,
            message: message.into(),
        }
    }

    fn internal(detail: &dyn std::fmt::Display) -> Self {
        Self::Internal(detail.to_string())
    }
}

impl From<StoreError> for ServiceError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Closed => Self::Unavailable,
            other => Self::internal(&other),
        }
    }
}

impl From<ApprovalError> for ServiceError {
    fn from(error: ApprovalError) -> Self {
        match error {
            ApprovalError::NotFound(_) | ApprovalError::GrantNotFound(_) => {
                Self::not_found(ErrorCode::NotFound, error.to_string())
            }
            ApprovalError::AlreadyDecided { .. } => {
                Self::conflict(ErrorCode::Conflict, error.to_string())
            }
            ApprovalError::Invalid(message) => Self::Invalid(message),
            ApprovalError::Forbidden(message) => Self::Forbidden(message),
            ApprovalError::Store(error) => error.into(),
        }
    }
}

impl From<ConfigEditError> for ServiceError {
    fn from(error: ConfigEditError) -> Self {
        match error {
            ConfigEditError::Invalid { problems, text } => {
                let message = match problems.first() {
                    Some(first) if problems.len() == 1 => format!("Not saved: {first}"),
                    Some(first) => {
                        format!("Not saved: {first} (and {} more)", problems.len() - 1)
                    }
                    None => "Not saved.".to_owned(),
                };
                Self::ConfigRejected {
                    message,
                    problems: problems.iter().map(problem_on_wire).collect(),
                    text,
                }
            }
            ConfigEditError::Conflict { .. } => {
                Self::conflict(ErrorCode::Conflict, error.to_string())
            }
            ConfigEditError::BadChange(message) => Self::Invalid(message),
            ConfigEditError::NotFound(message) => Self::NotFound {
                code: ErrorCode::NotFound,
                message,
            },
            ConfigEditError::Io(detail) => Self::Internal(detail),
        }
    }
}

impl From<ClientTokenError> for ServiceError {
    fn from(error: ClientTokenError) -> Self {
        match error {
            ClientTokenError::InvalidName(_) => Self::Invalid(error.to_string()),
            ClientTokenError::NameTaken(_) => {
                Self::conflict(ErrorCode::Conflict, error.to_string())
            }
            ClientTokenError::Random(_) => Self::internal(&error),
            ClientTokenError::Store(error) => error.into(),
        }
    }
}

impl From<LlmServiceError> for ServiceError {
    fn from(error: LlmServiceError) -> Self {
        match error {
            LlmServiceError::UnknownProvider(_)
            | LlmServiceError::UnknownServiceKey(_)
            | LlmServiceError::KeylessProvider(_)
            | LlmServiceError::NoSignIn(_)
            | LlmServiceError::SignInInstead(_)
            | LlmServiceError::InvalidKey(_)
            | LlmServiceError::Model(_) => Self::Invalid(error.to_string()),
            // The key file or a stored key is unusable: the message says how to fix it and
            // holds no secret, so it goes to the client.
            LlmServiceError::Keys(
                KeyStoreError::KeyFile { .. } | KeyStoreError::Decrypt { .. },
            ) => Self::conflict(ErrorCode::Conflict, error.to_string()),
            LlmServiceError::Keys(KeyStoreError::Store(store)) => store.into(),
            // No key to use: the message names the route and variables that give one.
            LlmServiceError::Llm(
                crate::llm::LlmError::MissingKey { .. }
                | crate::llm::LlmError::SignInRequired { .. },
            ) => Self::conflict(ErrorCode::Conflict, error.to_string()),
            other => Self::internal(&other),
        }
    }
}

impl From<crate::mcp::client::BearerTokenError> for ServiceError {
    fn from(error: crate::mcp::client::BearerTokenError) -> Self {
        use crate::mcp::client::BearerTokenError;
        match error {
            BearerTokenError::UnknownServer(_) => {
                Self::not_found(ErrorCode::NotFound, error.to_string())
            }
            BearerTokenError::NoTokenKey(_) => Self::Invalid(error.to_string()),
            BearerTokenError::Keys(KeyStoreError::Store(store)) => store.into(),
            // The key file is unusable: the message says how to fix it and holds no secret.
            BearerTokenError::Keys(keys) => Self::conflict(ErrorCode::Conflict, keys.to_string()),
        }
    }
}

impl From<crate::mcp::client::oauth::CallbackError> for ServiceError {
    fn from(error: crate::mcp::client::oauth::CallbackError) -> Self {
        use crate::mcp::client::oauth::CallbackError;
        match error {
            CallbackError::UnknownState => Self::Forbidden(error.to_string()),
            CallbackError::Exchange { .. } => {
                Self::conflict(ErrorCode::Conflict, error.to_string())
            }
        }
    }
}

impl From<ChatError> for ServiceError {
    fn from(error: ChatError) -> Self {
        let message = error.to_string();
        match error {
            ChatError::ChatNotFound => Self::not_found(ErrorCode::ChatNotFound, message),
            ChatError::ExecutionNotFound => Self::not_found(ErrorCode::ExecutionNotFound, message),
            ChatError::OptionNotFound => Self::not_found(ErrorCode::OptionNotFound, message),
            ChatError::Invalid(message) => Self::Invalid(message),
            ChatError::ThreadEnded | ChatError::NoInputNow => Self::Invalid(message),
            ChatError::ActiveExecution => {
                Self::conflict(ErrorCode::ChatAlreadyHasActiveExecution, message)
            }
            ChatError::AwaitingAnswer | ChatError::AwaitingApproval => {
                Self::conflict(ErrorCode::ChatAlreadyHasActiveExecution, message)
            }
            ChatError::IdempotencyConflict => {
                Self::conflict(ErrorCode::IdempotencyConflict, message)
            }
            ChatError::UnsupportedModel(message) => {
                Self::conflict(ErrorCode::UnsupportedBackendModel, message)
            }
            ChatError::RequiresModelAccess(message) => {
                Self::conflict(ErrorCode::OnboardingRequiresModelAccess, message)
            }
            ChatError::StartFailed(detail) => Self::StartFailed(detail),
            ChatError::Paused => Self::conflict(
                ErrorCode::Paused,
                "Souz is paused; resume it (tray, Settings, or PUT /v1/pause) to start agent turns.",
            ),
            ChatError::Llm(error) => error.into(),
            ChatError::Store(error) => error.into(),
            ChatError::Internal(detail) => Self::Internal(detail),
        }
    }
}

#[cfg(test)]
mod tests;
