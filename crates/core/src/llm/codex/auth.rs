//! The sign-in service's endpoints (the wire formats are in [`super`]): request a device code,
//! poll it once, exchange the authorization code for tokens, refresh tokens.
//!
//! Invariants: every call is one request (no retries here: polling has its own rhythm, and a
//! refresh token must not be sent twice); every answer is read within [`ANSWER_LIMIT`]; error
//! texts never carry a token (the server's words are scrubbed of what was sent).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{CLIENT_ID, ORIGINATOR, PROVIDER};
use crate::llm::LlmError;
use crate::llm::http::{ProviderHttp, endpoint, read_body, scrub, transport_error};

/// Most bytes of an answer of the sign-in service (tokens are a few KB).
const ANSWER_LIMIT: usize = 256 << 10;
/// How long a device code lasts, in seconds (15 minutes).
const CODE_LIFETIME_SECONDS: i64 = 15 * 60;
/// The poll interval when the service names none.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// The longest poll interval accepted from the service.
const MAX_INTERVAL: Duration = Duration::from_secs(60);

/// A device code to show the person.
#[derive(Clone)]
pub(crate) struct DeviceCode {
    /// The page where the code is entered.
    pub verification_url: String,
    /// The code.
    pub user_code: String,
    device_auth_id: String,
    /// How long to wait between polls.
    pub interval: Duration,
    /// When the code stops working.
    pub expires_at: DateTime<Utc>,
}

impl std::fmt::Debug for DeviceCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceCode")
            .field("verification_url", &self.verification_url)
            .field("interval", &self.interval)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// What one poll learnt.
#[derive(Debug)]
pub(crate) enum Poll {
    /// The person has not entered the code yet.
    Pending,
    /// Poll less often (the interval grows).
    SlowDown,
    /// The code expired.
    Expired,
    /// The person (or the service) refused.
    Denied(String),
    /// Entered: the authorization code to exchange.
    Authorized(Grant),
}

/// An authorization code and its PKCE verifier, as the device flow hands them out.
pub(crate) struct Grant {
    authorization_code: String,
    code_verifier: String,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Grant { .. }")
    }
}

/// Tokens as the token endpoint answers (every field optional on a refresh).
#[derive(Deserialize, Default)]
pub(crate) struct TokenAnswer {
    #[serde(default)]
    pub id_token: Option<String>,
    #[serde(default)]
    pub access_token: Option<String>,
    #[serde(default)]
    pub refresh_token: Option<String>,
    #[serde(default)]
    pub expires_in: Option<u64>,
}

/// Why a refresh did not give tokens.
#[derive(Debug)]
pub(crate) enum RefreshFailure {
    /// The refresh token is expired, already used or revoked: the session is over.
    Refused(String),
    /// Anything else (network, 5xx): the session may still be good.
    Failed(LlmError),
}

/// The sign-in service at `auth_url` (`https://auth.openai.com`).
#[derive(Clone, Debug)]
pub(crate) struct AuthService {
    http: ProviderHttp,
    auth_url: String,
}

#[derive(Deserialize)]
struct UserCodeAnswer {
    device_auth_id: String,
    #[serde(alias = "usercode")]
    user_code: String,
    #[serde(default)]
    interval: Option<Value>,
}

#[derive(Deserialize)]
struct CodeAnswer {
    authorization_code: String,
    code_verifier: String,
}

enum Body {
    Json(Value),
    Form(Vec<(&'static str, String)>),
}

impl AuthService {
    /// The service at `auth_url`.
    pub(crate) fn new(http: ProviderHttp, auth_url: impl Into<String>) -> Self {
        Self {
            http,
            auth_url: auth_url.into().trim_end_matches('/').to_owned(),
        }
    }

    /// Asks for a device code.
    pub(crate) async fn start(&self, cancel: &CancellationToken) -> Result<DeviceCode, LlmError> {
        let url = endpoint(&self.auth_url, "api/accounts/deviceauth/usercode");
        let (status, body) = self
            .post(&url, Body::Json(json!({"client_id": CLIENT_ID})), cancel)
            .await?;
        if status == 404 {
            return Err(LlmError::Provider {
                provider: PROVIDER,
                kind: Some("device_code_unavailable".to_owned()),
                message: "this sign-in service does not offer device codes".to_owned(),
            });
        }
        let answer: UserCodeAnswer = parse(status, &body, "device code")?;
        let interval = answer
            .interval
            .as_ref()
            .and_then(|value| match value {
                Value::Number(number) => number.as_u64(),
                Value::String(text) => text.trim().parse().ok(),
                _ => None,
            })
            .map_or(DEFAULT_INTERVAL, Duration::from_secs)
            .min(MAX_INTERVAL);
        Ok(DeviceCode {
            verification_url: endpoint(&self.auth_url, "codex/device"),
            user_code: answer.user_code,
            device_auth_id: answer.device_auth_id,
            interval,
            expires_at: Utc::now() + chrono::Duration::seconds(CODE_LIFETIME_SECONDS),
        })
    }

    /// Asks once whether `code` was entered.
    pub(crate) async fn poll(
        &self,
        code: &DeviceCode,
        cancel: &CancellationToken,
    ) -> Result<Poll, LlmError> {
        let url = endpoint(&self.auth_url, "api/accounts/deviceauth/token");
        let request = json!({"device_auth_id": code.device_auth_id, "user_code": code.user_code});
        let (status, body) = self.post(&url, Body::Json(request), cancel).await?;
        if (200..300).contains(&status) {
            let answer: CodeAnswer = parse(status, &body, "device authorization")?;
            return Ok(Poll::Authorized(Grant {
                authorization_code: answer.authorization_code,
                code_verifier: answer.code_verifier,
            }));
        }
        match error_code(&body).as_deref() {
            Some("authorization_pending") => return Ok(Poll::Pending),
            Some("slow_down") => return Ok(Poll::SlowDown),
            Some("expired_token") => return Ok(Poll::Expired),
            Some("access_denied") => return Ok(Poll::Denied(error_message(&body))),
            _ => {}
        }
        // The Codex service answers 403 or 404 until the code is entered.
        if status == 403 || status == 404 {
            return Ok(Poll::Pending);
        }
        Err(status_error(status, &body))
    }

    /// Exchanges an authorization code for tokens.
    pub(crate) async fn exchange(
        &self,
        grant: &Grant,
        cancel: &CancellationToken,
    ) -> Result<TokenAnswer, LlmError> {
        let url = endpoint(&self.auth_url, "oauth/token");
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", grant.authorization_code.clone()),
            (
                "redirect_uri",
                endpoint(&self.auth_url, "deviceauth/callback"),
            ),
            ("client_id", CLIENT_ID.to_owned()),
            ("code_verifier", grant.code_verifier.clone()),
        ];
        let (status, body) = self.post(&url, Body::Form(form), cancel).await?;
        let answer: TokenAnswer = parse(status, &body, "token")?;
        if answer.access_token.is_none() || answer.refresh_token.is_none() {
            return Err(LlmError::Malformed {
                provider: PROVIDER,
                detail: "the token answer lacks an access or refresh token".to_owned(),
            });
        }
        Ok(answer)
    }

    /// Trades `refresh_token` for new tokens (the answer's refresh token replaces it).
    pub(crate) async fn refresh(
        &self,
        refresh_token: &str,
        cancel: &CancellationToken,
    ) -> Result<TokenAnswer, RefreshFailure> {
        let url = endpoint(&self.auth_url, "oauth/token");
        let request = json!({
            "client_id": CLIENT_ID,
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
        });
        let (status, body) = self
            .post(&url, Body::Json(request), cancel)
            .await
            .map_err(RefreshFailure::Failed)?;
        if (200..300).contains(&status) {
            return parse(status, &body, "token").map_err(RefreshFailure::Failed);
        }
        let code = error_code(&body);
        let refused = matches!(
            code.as_deref(),
            Some(
                "refresh_token_expired"
                    | "refresh_token_reused"
                    | "refresh_token_invalidated"
                    | "invalid_grant"
            )
        );
        if status == 401 || refused {
            let text = scrub(&error_message(&body), &[refresh_token.to_owned()]);
            return Err(RefreshFailure::Refused(code.unwrap_or(text)));
        }
        Err(RefreshFailure::Failed(status_error(status, &body)))
    }

    /// One POST; the status and the bounded body, whatever the status.
    async fn post(
        &self,
        url: &str,
        body: Body,
        cancel: &CancellationToken,
    ) -> Result<(u16, Vec<u8>), LlmError> {
        let timeout = self.http.settings().request_timeout;
        let request = self
            .http
            .client()
            .post(url)
            .header("originator", ORIGINATOR)
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(timeout);
        let request = match &body {
            Body::Json(value) => request.json(value),
            Body::Form(fields) => request
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .body(form_encoded(fields)),
        };
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
            response = request.send() => response,
        }
        .map_err(|error| transport_error(PROVIDER, &error, timeout))?;
        let status = response.status().as_u16();
        let bytes = read_body(PROVIDER, response, ANSWER_LIMIT, timeout, cancel).await?;
        Ok((status, bytes))
    }
}

/// `fields` as an `application/x-www-form-urlencoded` body (the URL parser's encoder).
fn form_encoded(fields: &[(&'static str, String)]) -> String {
    reqwest::Url::parse_with_params(
        "http://form.invalid/",
        fields.iter().map(|(name, value)| (*name, value.as_str())),
    )
    .ok()
    .and_then(|url| url.query().map(str::to_owned))
    .unwrap_or_default()
}

/// The answer as `T` when it succeeded, else the status as an error.
fn parse<T: serde::de::DeserializeOwned>(
    status: u16,
    body: &[u8],
    what: &str,
) -> Result<T, LlmError> {
    if !(200..300).contains(&status) {
        return Err(status_error(status, body));
    }
    serde_json::from_slice(body).map_err(|error| LlmError::Malformed {
        provider: PROVIDER,
        detail: format!("the {what} answer is not what the sign-in service sends: {error}"),
    })
}

fn status_error(status: u16, body: &[u8]) -> LlmError {
    LlmError::Status {
        provider: PROVIDER,
        status,
        message: error_message(body),
        retry_after: None,
    }
}

/// The error code of an OAuth-style error body: `error` as a string, `error.code`, or `code`.
fn error_code(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let code = match value.get("error") {
        Some(Value::String(code)) => Some(code.as_str()),
        Some(Value::Object(error)) => error.get("code").and_then(Value::as_str),
        _ => None,
    }
    .or_else(|| value.get("code").and_then(Value::as_str))?;
    Some(code.to_ascii_lowercase())
}

/// `error_message` over bytes.
fn error_message(body: &[u8]) -> String {
    super::super::http::error_message(&String::from_utf8_lossy(body))
}
