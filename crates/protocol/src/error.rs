//! The error envelope every failing API response carries: `{"error":{"code","message"}}`.
//!
//! Codes are stable strings clients can switch on; messages are for people and may change.
//! 5xx messages never carry internals (paths, SQL, stack traces).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Stable, machine-readable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request is malformed or fails validation.
    InvalidRequest,
    /// No valid `Authorization: Bearer <token>` header was sent.
    Unauthorized,
    /// The `Host` header does not name this daemon (DNS-rebinding defence).
    ForbiddenHost,
    /// The `Origin` header is not in the allowlist.
    ForbiddenOrigin,
    /// No such route or resource.
    NotFound,
    /// The route exists but not with this method.
    MethodNotAllowed,
    /// The request body exceeds the configured limit.
    PayloadTooLarge,
    /// The request conflicts with the current state of the resource.
    Conflict,
    /// The daemon is shutting down or a dependency is not available.
    Unavailable,
    /// Something failed inside the daemon; details are in its logs.
    InternalError,
    /// No such chat (or not yours).
    ChatNotFound,
    /// No such execution in this chat.
    ExecutionNotFound,
    /// No such option (question).
    OptionNotFound,
    /// The chat already runs an agent turn; wait for it or cancel it.
    ChatAlreadyHasActiveExecution,
    /// The same idempotency key was used with a different request.
    IdempotencyConflict,
    /// The model cannot be used for chats.
    UnsupportedBackendModel,
    /// Onboarding needs access to at least one model first.
    OnboardingRequiresModelAccess,
    /// The trusted proxy did not authenticate itself.
    UntrustedProxy,
    /// The trusted proxy sent no user identity.
    MissingUserIdentity,
    /// The trusted proxy sent an unusable user identity.
    InvalidUserIdentity,
    /// The agent turn could not be started.
    AgentExecutionFailed,
    /// Souz is paused: agent turns and approval requests wait until it is resumed.
    Paused,
    /// The caller may not do this: in trusted-proxy mode, a proxied user on a route (or with a
    /// choice) that is the daemon operator's.
    Forbidden,
}

impl ErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::Unauthorized => "unauthorized",
            Self::ForbiddenHost => "forbidden_host",
            Self::ForbiddenOrigin => "forbidden_origin",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::PayloadTooLarge => "payload_too_large",
            Self::Conflict => "conflict",
            Self::Unavailable => "unavailable",
            Self::InternalError => "internal_error",
            Self::ChatNotFound => "chat_not_found",
            Self::ExecutionNotFound => "execution_not_found",
            Self::OptionNotFound => "option_not_found",
            Self::ChatAlreadyHasActiveExecution => "chat_already_has_active_execution",
            Self::IdempotencyConflict => "idempotency_conflict",
            Self::UnsupportedBackendModel => "unsupported_backend_model",
            Self::OnboardingRequiresModelAccess => "onboarding_requires_model_access",
            Self::UntrustedProxy => "untrusted_proxy",
            Self::MissingUserIdentity => "missing_user_identity",
            Self::InvalidUserIdentity => "invalid_user_identity",
            Self::AgentExecutionFailed => "agent_execution_failed",
            Self::Paused => "paused",
            Self::Forbidden => "forbidden",
        }
    }
}

/// The body of every error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The code and human message of an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorDetail {
    /// Stable code to switch on.
    pub code: ErrorCode,
    /// Human-readable explanation.
    pub message: String,
}

impl ErrorBody {
    /// Builds an envelope from a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            error: ErrorDetail {
                code,
                message: message.into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_str_matches_serde_for_every_code() {
        let all = [
            ErrorCode::InvalidRequest,
            ErrorCode::Unauthorized,
            ErrorCode::ForbiddenHost,
            ErrorCode::ForbiddenOrigin,
            ErrorCode::NotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::PayloadTooLarge,
            ErrorCode::Conflict,
            ErrorCode::Unavailable,
            ErrorCode::InternalError,
            ErrorCode::ChatNotFound,
            ErrorCode::ExecutionNotFound,
            ErrorCode::OptionNotFound,
            ErrorCode::ChatAlreadyHasActiveExecution,
            ErrorCode::IdempotencyConflict,
            ErrorCode::UnsupportedBackendModel,
            ErrorCode::OnboardingRequiresModelAccess,
            ErrorCode::UntrustedProxy,
            ErrorCode::MissingUserIdentity,
            ErrorCode::InvalidUserIdentity,
            ErrorCode::AgentExecutionFailed,
            ErrorCode::Paused,
            ErrorCode::Forbidden,
        ];
        for code in all {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().to_owned()));
        }
    }

    #[test]
    fn envelope_shape() {
        let body = ErrorBody::new(ErrorCode::Unauthorized, "missing token");
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"error": {"code": "unauthorized", "message": "missing token"}})
        );
    }
}
