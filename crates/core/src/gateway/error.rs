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
use crate::runtime::facade::UpstreamFailure;

/// An error on its way to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    status: StatusCode,
    code: ErrorCode,
    message: String,
    /// For a rejected `config.toml`: every problem and the text that was validated, sent
    /// beside the envelope (`ConfigRejected`).
    config: Option<Box<RejectedConfig>>,
    /// Seconds to wait before trying again (`Retry-After`), when an upstream said.
    retry_after: Option<u64>,
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
            retry_after: None,
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
        if let Some(seconds) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
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
            ServiceError::Upstream { failure, message } => {
                let status = match failure {
                    UpstreamFailure::Refused | UpstreamFailure::Failed => StatusCode::BAD_GATEWAY,
                    UpstreamFailure::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
                    UpstreamFailure::TimedOut => StatusCode::GATEWAY_TIMEOUT,
                };
                Self {
                    retry_after: match failure {
                        UpstreamFailure::RateLimited(after) => after,
                        _ => None,
                    },
                    // `conflict`: "it did not work, here is why" (`unavailable` would say Souz
                    // itself is down).
                    ..Self::new(status, ErrorCode::Conflict, message)
                }
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
mod tests;
