//! The one place where errors become HTTP responses.
//!
//! Every failure leaves the gateway as `{"error":{"code","message"}}` with a stable code. The
//! runtime's one error type, [`ServiceError`] (domain errors became it in `runtime::facade`),
//! converts into [`ApiError`] here and nowhere else; 5xx responses carry a generic message and
//! the details go to the log.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use souz_protocol::config::{ConfigProblem, ConfigRejected};
use souz_protocol::{ErrorBody, ErrorCode, ErrorDetail};

use super::identity::IdentityError;
use crate::runtime::ServiceError;

/// An error on its way to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    status: StatusCode,
    code: ErrorCode,
    message: String,
    /// For a rejected `config.toml`: every problem and the text that was validated, sent
    /// beside the envelope (`ConfigRejected`).
    config: Option<Box<RejectedConfig>>,
}

/// What a rejected `config.toml` adds to the error envelope.
#[derive(Debug, Clone, PartialEq)]
struct RejectedConfig {
    problems: Vec<ConfigProblem>,
    text: String,
}

impl ApiError {
    /// An error with an explicit status and code.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            config: None,
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message)
    }

    /// 401 `unauthorized`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized, message)
    }

    /// 403 `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, message)
    }

    /// 413 `payload_too_large`.
    pub fn payload_too_large(limit: u64) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::PayloadTooLarge,
            format!("request body is larger than the {limit}-byte limit ([server] body_limit)"),
        )
    }

    /// 500 `internal_error`; `detail` is logged, never sent.
    pub fn internal(detail: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::InternalError,
            "Internal server error.",
        )
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Some(config) = self.config {
            let body = ConfigRejected {
                error: ErrorDetail {
                    code: self.code,
                    message: self.message,
                },
                problems: config.problems,
                text: config.text,
            };
            return (self.status, axum::Json(body)).into_response();
        }
        let body = ErrorBody::new(self.code, self.message);
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"souz\""),
            );
        }
        response
    }
}

impl From<ServiceError> for ApiError {
    fn from(error: ServiceError) -> Self {
        match error {
            ServiceError::Invalid(message) => Self::invalid(message),
            ServiceError::ConfigRejected {
                message,
                problems,
                text,
            } => Self {
                config: Some(Box::new(RejectedConfig { problems, text })),
                ..Self::invalid(message)
            },
            ServiceError::NotFound { code, message } => {
                Self::new(StatusCode::NOT_FOUND, code, message)
            }
            ServiceError::Conflict { code, message } => {
                Self::new(StatusCode::CONFLICT, code, message)
            }
            ServiceError::Forbidden(message) => Self::forbidden(message),
            ServiceError::Unavailable => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::Unavailable,
                "Souz is shutting down.",
            ),
            ServiceError::StartFailed(detail) => {
                tracing::error!(%detail, "an agent turn could not start");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    ErrorCode::AgentExecutionFailed,
                    "The agent could not be started.",
                )
            }
            ServiceError::Internal(detail) => Self::internal(&detail),
        }
    }
}

impl From<IdentityError> for ApiError {
    fn from(error: IdentityError) -> Self {
        let message = error.to_string();
        let unauthorized = |code| Self::new(StatusCode::UNAUTHORIZED, code, message.clone());
        match error {
            IdentityError::UntrustedProxy | IdentityError::UserRequired => {
                unauthorized(ErrorCode::UntrustedProxy)
            }
            IdentityError::MissingUserIdentity => unauthorized(ErrorCode::MissingUserIdentity),
            IdentityError::InvalidUserIdentity | IdentityError::ReservedUserIdentity => {
                unauthorized(ErrorCode::InvalidUserIdentity)
            }
            IdentityError::OperatorOnly => Self::forbidden(message),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorCode::PayloadTooLarge,
                "request body is larger than the limit ([server] body_limit)",
            );
        }
        let message = match &rejection {
            JsonRejection::MissingJsonContentType(_) => {
                "Content-Type must be application/json.".to_owned()
            }
            other => format!("Invalid payload: {}", other.body_text()),
        };
        Self::invalid(message)
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        Self::invalid(format!("Invalid query: {}", rejection.body_text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ChatError;
    use crate::llm::keys::KeyStoreError;
    use crate::llm::service::LlmServiceError;
    use crate::runtime::config_editor::ConfigEditError;
    use crate::store::StoreError;

    /// A domain error as the gateway answers it: through the runtime's one error type.
    fn api(error: impl Into<ServiceError>) -> ApiError {
        ApiError::from(error.into())
    }

    async fn body_json(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn internal_errors_hide_details() {
        let response = ApiError::internal(&"disk /secret/path exploded").into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = body_json(response).await;
        assert_eq!(body["error"]["code"], "internal_error");
        assert!(!body.to_string().contains("secret"));
    }

    #[tokio::test]
    async fn store_errors_map_by_kind() {
        let closed = api(StoreError::Closed);
        assert_eq!(closed.status(), StatusCode::SERVICE_UNAVAILABLE);
        let corrupt = api(StoreError::Corrupt("row 5".into()));
        assert_eq!(corrupt.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = body_json(corrupt.into_response()).await;
        assert!(!body.to_string().contains("row 5"));
    }

    /// A rejected `config.toml` is mapped here like every other error: the envelope, plus
    /// every problem and the text that was validated.
    #[tokio::test]
    async fn a_rejected_config_keeps_its_problems_beside_the_envelope() {
        use crate::config::{Location, Problem};
        let problem = |line| Problem {
            location: Location::File {
                path: "config.toml".into(),
                line,
                column: 3,
            },
            message: "unknown key `x`".into(),
        };
        let error = api(ConfigEditError::Invalid {
            problems: vec![problem(2), problem(5)],
            text: "x = 1\n".into(),
        });
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = body_json(response).await;
        assert_eq!(
            body,
            serde_json::json!({
                "error": {
                    "code": "invalid_request",
                    "message": "Not saved: config.toml:2:3: unknown key `x` (and 1 more)",
                },
                "problems": [
                    {"line": 2, "column": 3, "message": "unknown key `x`",
                     "display": "config.toml:2:3: unknown key `x`"},
                    {"line": 5, "column": 3, "message": "unknown key `x`",
                     "display": "config.toml:5:3: unknown key `x`"},
                ],
                "text": "x = 1\n",
            })
        );
        let conflict = api(ConfigEditError::Conflict {
            current: "r2".into(),
        });
        assert_eq!(conflict.status(), StatusCode::CONFLICT);
        assert_eq!(conflict.code(), ErrorCode::Conflict);
        let io = api(ConfigEditError::Io("disk /secret full".into()));
        let body = body_json(io.into_response()).await;
        assert!(!body.to_string().contains("secret"));
    }

    /// A chat operation that fails in the LLM layer answers exactly as the LLM layer's own
    /// routes do: one mapping, not a second one in `chat`.
    #[test]
    fn chat_errors_from_the_llm_layer_map_like_the_llm_layers_own() {
        let broken_key_file = || {
            LlmServiceError::Keys(KeyStoreError::KeyFile {
                path: "/home/u/.souz/provider-keys.key".into(),
                problem: "it is 3 bytes long, not 32".into(),
            })
        };
        let unknown = || LlmServiceError::UnknownProvider("nope".into());
        let no_ca = || LlmServiceError::CaFile {
            path: "/etc/ca.pem".into(),
            source: std::io::Error::other("gone"),
        };
        for error in [broken_key_file, unknown, no_ca] {
            let through_chat = api(ChatError::from(error()));
            let direct = api(error());
            assert_eq!(through_chat, direct);
        }
        let through_chat = api(ChatError::from(broken_key_file()));
        assert_eq!(through_chat.status(), StatusCode::CONFLICT);
        let through_chat = api(ChatError::from(no_ca()));
        assert_eq!(through_chat.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test]
    async fn unauthorized_carries_a_challenge() {
        let response = ApiError::unauthorized("no token").into_response();
        assert_eq!(
            response.headers().get(header::WWW_AUTHENTICATE).unwrap(),
            "Bearer realm=\"souz\""
        );
    }
}
