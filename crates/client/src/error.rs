//! Why a call to the daemon failed: one typed error for every user of the client.
//!
//! Invariant: an answer carrying the daemon's error envelope (`{"error":{"code","message"}}`)
//! is always [`ClientError::Api`] with its [`ErrorCode`]; the messages say what to do next.

use std::path::PathBuf;

use reqwest::StatusCode;
use souz_protocol::ErrorCode;

/// Why a call to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing answered at the address.
    #[error("cannot reach Souz at {base} ({reason}); start it with `souz serve`")]
    Unreachable {
        /// `http://host:port`.
        base: String,
        /// What failed.
        reason: String,
    },
    /// Something answered, but it could not prove it is the daemon holding this token; the
    /// token was not sent.
    #[error(
        "something else is listening on {host}; it is not Souz (or not the Souz this token \
         belongs to: {detail}); not sending the token"
    )]
    NotSouz {
        /// `host:port`.
        host: String,
        /// What went wrong with the proof.
        detail: String,
    },
    /// A token file is missing or does not hold a token.
    #[error("cannot read the token in {path}: {reason}")]
    Token {
        /// The token file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The daemon refused the request with its error envelope.
    #[error("{message} ({status})")]
    Api {
        /// The HTTP status.
        status: StatusCode,
        /// The stable code to switch on.
        code: ErrorCode,
        /// The daemon's message, for people.
        message: String,
    },
    /// The daemon (or whatever answered) failed without an error envelope.
    #[error("the daemon answered {status}")]
    Status {
        /// The HTTP status.
        status: StatusCode,
    },
    /// The answer could not be read as the expected type.
    #[error("the daemon sent an unexpected answer ({reason})")]
    Decode {
        /// What did not fit.
        reason: String,
    },
    /// The request could not be built (an address or token that is not usable in HTTP).
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl ClientError {
    /// The daemon's error code, when it answered with its error envelope.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The HTTP status, when the daemon answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Self::Api { status, .. } | Self::Status { status } => Some(*status),
            _ => None,
        }
    }

    /// The error for a failing `status` with `body`: the envelope decoded when there is one.
    pub(crate) fn from_failure(status: StatusCode, body: &[u8]) -> Self {
        match serde_json::from_slice::<souz_protocol::ErrorBody>(body) {
            Ok(envelope) => Self::Api {
                status,
                code: envelope.error.code,
                message: envelope.error.message,
            },
            Err(_) => Self::Status { status },
        }
    }
}
