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

    /// What the code means for people in `language`, with the daemon's own `detail` (which
    /// field, which file) inside where only it can say: in English the detail as written, in
    /// Russian a sentence by the code. The web UI has the same sentences (`ui/api.js`).
    pub fn said(self, language: crate::language::Language, detail: &str) -> String {
        let russian = match self {
            Self::InvalidRequest => "Запрос не принят: {detail}",
            Self::Unauthorized => "Ключ доступа к Souz не подошёл: войдите снова.",
            Self::ForbiddenHost => "Souz отвечает только на своём адресе (127.0.0.1).",
            Self::ForbiddenOrigin => "Souz не принимает запросы с этой страницы.",
            Self::NotFound => "Не найдено: {detail}",
            Self::MethodNotAllowed => "Souz так не умеет: {detail}",
            Self::PayloadTooLarge => "Слишком большой запрос: {detail}",
            Self::Conflict => "Не получилось: {detail}",
            Self::Unavailable => "Souz сейчас недоступен: {detail}",
            Self::InternalError => "Внутренняя ошибка Souz; подробности в его журнале.",
            Self::ChatNotFound => "Такого чата нет (или он не ваш).",
            Self::ExecutionNotFound => "В этом чате нет такого хода агента.",
            Self::OptionNotFound => "Такого вопроса нет.",
            Self::ChatAlreadyHasActiveExecution => {
                "В этом чате уже работает агент: дождитесь ответа или остановите его."
            }
            Self::IdempotencyConflict => "Этот запрос уже отправлялся с другим содержимым.",
            Self::UnsupportedBackendModel => "Эту модель нельзя использовать в чатах: {detail}",
            Self::OnboardingRequiresModelAccess => {
                "Пока нет ни одной доступной модели: добавьте API-ключ провайдера (`souz keys set \
                 openai` или страница настройки в веб-интерфейсе: `souz ui --open`) или \
                 запустите локальный сервер моделей (Ollama, LM Studio или llama.cpp на его \
                 обычном порту)."
            }
            Self::UntrustedProxy => "Прокси не подтвердил, что ему можно доверять.",
            Self::MissingUserIdentity => "Прокси не сообщил, кто вы.",
            Self::InvalidUserIdentity => "Прокси сообщил непригодное имя пользователя.",
            Self::AgentExecutionFailed => "Агент не смог начать работу: {detail}",
            Self::Paused => {
                "Souz на паузе: агенты и запросы разрешений ждут, пока вы не продолжите."
            }
            Self::Forbidden => "Это может делать только владелец Souz.",
        };
        match language {
            crate::language::Language::En => detail.to_owned(),
            crate::language::Language::Ru => russian.replace("{detail}", detail),
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

    const ALL: [ErrorCode; 23] = [
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

    #[test]
    fn as_str_matches_serde_for_every_code() {
        for code in ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().to_owned()));
        }
    }

    #[test]
    fn every_code_is_said_in_russian_as_the_web_ui_says_it() {
        use crate::language::Language;
        let ui = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/api.js"),
        )
        .unwrap();
        let detail = "field `x` is wrong";
        for code in ALL {
            assert_eq!(code.said(Language::En, detail), detail);
            let russian = code.said(Language::Ru, "{detail}");
            assert!(
                russian
                    .chars()
                    .any(|c| ('\u{0400}'..='\u{04FF}').contains(&c)),
                "{code:?}: {russian}"
            );
            let line = format!("    {}: \"{russian}\",", code.as_str());
            assert!(
                ui.contains(&line),
                "ui/api.js says {code:?} otherwise: {line}"
            );
            if russian.contains("{detail}") {
                assert!(code.said(Language::Ru, detail).contains(detail));
            }
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
