//! HTTP plumbing shared by every provider: one `reqwest` client per process (rustls, platform
//! roots plus configured extra CAs), per-request credentials and timeouts, retries of 429/5xx
//! that honour `Retry-After`, the server-sent-events reader, and the bounded reads every
//! answer goes through ([`bounded`]).
//!
//! Invariants:
//! - The client is built once and shared; credentials are added per request, so one provider's
//!   key never rides on another's request.
//! - A retry happens only before any byte of an answer was handed on: once a stream has
//!   started, an error ends it.
//! - `Retry-After` (seconds, or an HTTP date; `retry-after-ms` too) is honoured. When it asks
//!   for longer than the backoff cap, we do not sleep that long: the error is returned at once
//!   with the wait the provider asked for.
//! - Every wait and every read watches the cancellation token; cancelling drops the response,
//!   which closes the connection.
//! - Nothing here logs headers or bodies of requests (they carry keys).
//! - No answer is read whole without a bound: a non-streamed one through [`read_body`], a
//!   stream through [`decode_sse`] (bytes per event and per stream).

pub(crate) mod bounded;

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use eventsource_stream::{Event, Eventsource};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;

pub use self::bounded::{AnswerPart, BODY_LIMIT, read_body};
use self::bounded::{BoundedLines, BoundedReadError, EVENT_LIMIT, STREAM_LIMIT};
use super::{EventStream, LlmError, ProviderId, StreamEvent};

/// Bytes of an error body kept for the message.
const ERROR_BODY_LIMIT: usize = 4096;

/// Retry and timeout settings for provider calls.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// Longest a whole call (connect, answer, full stream) may take.
    pub request_timeout: Duration,
    /// Longest silence inside a stream before it counts as stalled.
    pub stream_idle_timeout: Duration,
    /// Retries after the first attempt for 429 and 5xx answers and connection failures.
    pub max_retries: u32,
    /// First backoff delay; doubled per retry.
    pub backoff_base: Duration,
    /// Longest backoff delay, and longest `Retry-After` we are willing to wait.
    pub backoff_max: Duration,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(400),
            stream_idle_timeout: Duration::from_secs(120),
            max_retries: 2,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(5),
        }
    }
}

/// Why the HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum HttpClientError {
    /// An extra CA file is not a PEM certificate.
    #[error("{path}: not a PEM certificate: {message}")]
    Certificate {
        /// The file.
        path: String,
        /// What the parser said.
        message: String,
    },
    /// The client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Build(String),
}

/// The process's HTTP client for providers plus its settings. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ProviderHttp {
    client: reqwest::Client,
    settings: HttpSettings,
}

impl ProviderHttp {
    /// Builds the client, trusting the platform's roots plus `extra_ca_pem` (file name, PEM
    /// bytes) certificates.
    pub fn new(
        settings: HttpSettings,
        connect_timeout: Duration,
        extra_ca_pem: &[(String, Vec<u8>)],
    ) -> Result<Self, HttpClientError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .user_agent(concat!("souz/", env!("CARGO_PKG_VERSION")));
        for (path, pem) in extra_ca_pem {
            let certificates = reqwest::Certificate::from_pem_bundle(pem).map_err(|error| {
                HttpClientError::Certificate {
                    path: path.clone(),
                    message: error.to_string(),
                }
            })?;
            if certificates.is_empty() {
                return Err(HttpClientError::Certificate {
                    path: path.clone(),
                    message: "no certificate found".to_owned(),
                });
            }
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        let client = builder
            .build()
            .map_err(|error| HttpClientError::Build(error.to_string()))?;
        Ok(Self { client, settings })
    }

    /// Wraps an existing client (tests, benchmarks).
    pub fn with_client(client: reqwest::Client, settings: HttpSettings) -> Self {
        Self { client, settings }
    }

    /// The shared client.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// The settings.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// Sends the request `build` makes (called once per attempt), retrying 429, 5xx and
    /// connection failures per the settings. Returns the first successful response.
    pub async fn send(
        &self,
        provider: ProviderId,
        build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, LlmError> {
        let mut retry = 0;
        loop {
            let request = match build(&self.client)
                .timeout(self.settings.request_timeout)
                .build()
            {
                Ok(request) => request,
                Err(error) => {
                    return Err(transport_error(
                        provider,
                        &error,
                        self.settings.request_timeout,
                    ));
                }
            };
            // A provider that echoes the credential in an error body must not get it into
            // logs, turn records or answers: the error text is scrubbed of what we sent.
            let secrets = credentials_sent(request.headers());
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
                outcome = self.client.execute(request) => outcome,
            };
            let error = match outcome {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status().as_u16();
                    let retry_after = retry_after(response.headers(), SystemTime::now());
                    let body = tokio::select! {
                        biased;
                        () = cancel.cancelled() => return Err(LlmError::Cancelled),
                        body = read_error_body(response) => body,
                    };
                    LlmError::Status {
                        provider,
                        status,
                        message: scrub(&error_message(&body), &secrets),
                        retry_after,
                    }
                }
                Err(error) => transport_error(provider, &error, self.settings.request_timeout),
            };
            let retryable = match &error {
                LlmError::Status { status, .. } => is_retryable_status(*status),
                LlmError::Transport { .. } => true,
                _ => false,
            };
            if !retryable || retry >= self.settings.max_retries {
                return Err(error);
            }
            let delay = match &error {
                LlmError::Status {
                    retry_after: Some(wait),
                    ..
                } => {
                    if *wait > self.settings.backoff_max {
                        tracing::warn!(%provider, wait_s = wait.as_secs_f64(), "provider asked to wait longer than the backoff cap; not retrying");
                        return Err(error);
                    }
                    *wait
                }
                _ => backoff(&self.settings, retry),
            };
            tracing::info!(%provider, retry = retry + 1, delay_ms = delay.as_millis() as u64, %error, "retrying provider call");
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
                () = tokio::time::sleep(delay) => {}
            }
            retry += 1;
        }
    }
}

/// 429 (rate limited), 408 (request timeout) and the 5xx family (529: Anthropic overloaded).
pub fn is_retryable_status(status: u16) -> bool {
    status == 429 || status == 408 || (500..600).contains(&status)
}

/// Capped exponential backoff for retry number `retry` (from 0).
pub fn backoff(settings: &HttpSettings, retry: u32) -> Duration {
    let factor = 1u32.checked_shl(retry.min(16)).unwrap_or(u32::MAX);
    settings
        .backoff_base
        .saturating_mul(factor)
        .min(settings.backoff_max)
}

/// The wait a response asks for: `retry-after-ms`, else `Retry-After` in seconds or as an
/// HTTP date (a date in the past means no wait).
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(milliseconds) = headers
        .get("retry-after-ms")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<f64>().ok())
        .filter(|value| value.is_finite() && *value >= 0.0)
    {
        return Some(Duration::from_secs_f64(milliseconds / 1000.0));
    }
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    parse_retry_after(value, now)
}

/// Parses a `Retry-After` value: delay-seconds or an HTTP date.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

async fn read_error_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_LIMIT {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(ERROR_BODY_LIMIT);
    String::from_utf8_lossy(&body).into_owned()
}

/// The credentials a request carries (`Authorization` without its scheme, API-key headers).
fn credentials_sent(headers: &HeaderMap) -> Vec<String> {
    [
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
    ]
    .into_iter()
    .filter_map(|name| headers.get(name)?.to_str().ok())
    .filter_map(|value| value.split_whitespace().last().map(str::to_owned))
    .filter(|secret| secret.len() >= 8)
    .collect()
}

/// `text` with every credential in `secrets`, and anything that looks like one, redacted.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut scrubbed = text.to_owned();
    for secret in secrets {
        scrubbed = scrubbed.replace(secret.as_str(), crate::redact::REDACTED);
    }
    crate::redact::redact_text(&scrubbed)
}

/// The human part of a provider's error body: `error.message`, `message`, or the text.
pub fn error_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(body) {
        let candidates = [
            json.pointer("/error/message"),
            json.get("message"),
            json.get("error").filter(|value| value.is_string()),
            json.get("detail"),
        ];
        if let Some(message) = candidates.into_iter().flatten().find_map(|v| v.as_str()) {
            return message.to_owned();
        }
    }
    let text = body.trim();
    if text.is_empty() {
        "(no details)".to_owned()
    } else {
        text.chars().take(500).collect()
    }
}

/// Maps a `reqwest` error to ours. Request details (URL with keys, headers) are left out.
pub fn transport_error(provider: ProviderId, error: &reqwest::Error, limit: Duration) -> LlmError {
    if error.is_timeout() {
        LlmError::Timeout {
            provider,
            after: limit,
        }
    } else if error.is_body() || error.is_decode() {
        LlmError::Interrupted {
            provider: Some(provider),
            detail: "the connection broke while reading the answer".to_owned(),
        }
    } else {
        let kind = if error.is_connect() {
            "connection failed"
        } else {
            "request failed"
        };
        LlmError::Transport {
            provider,
            message: format!("{kind}: {}", root_cause(error)),
        }
    }
}

fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    // The URL is not included (reqwest puts it in the top-level Display only).
    cause.to_string()
}

/// Turns provider SSE into our events.
pub trait SseDecoder: Send + 'static {
    /// Handles one event, pushing what it means onto `out`. Returns `true` when the answer is
    /// complete (the stream may end).
    fn event(&mut self, event: &Event, out: &mut VecDeque<StreamEvent>) -> Result<bool, LlmError>;

    /// Called when the body ended before the decoder said it was complete. May finish the
    /// answer (for servers that omit the final marker) or report the interruption.
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), LlmError>;
}

/// Reads a successful streaming response as SSE, decodes it with `decoder`, and enforces the
/// idle timeout, cancellation and the size limits of [`bounded`].
pub fn decode_sse<D: SseDecoder>(
    provider: ProviderId,
    response: reqwest::Response,
    decoder: D,
    settings: &HttpSettings,
    cancel: CancellationToken,
) -> EventStream {
    let lines = BoundedLines::new(response.bytes_stream().boxed(), EVENT_LIMIT, STREAM_LIMIT);
    decode_sse_within(provider, lines, decoder, settings, cancel)
}

/// [`decode_sse`] over a byte stream already held to its limits.
pub(crate) fn decode_sse_within<D: SseDecoder>(
    provider: ProviderId,
    lines: BoundedLines,
    decoder: D,
    settings: &HttpSettings,
    cancel: CancellationToken,
) -> EventStream {
    let request_timeout = settings.request_timeout;
    let events: BoxStream<'static, _> = lines.eventsource().boxed();
    let state = Decoding {
        provider,
        events,
        decoder,
        pending: VecDeque::new(),
        finished: false,
        idle: settings.stream_idle_timeout,
        request_timeout,
        cancel,
    };
    futures::stream::unfold(state, Decoding::next).boxed()
}

type SseItem = Result<Event, eventsource_stream::EventStreamError<BoundedReadError>>;

struct Decoding<D> {
    provider: ProviderId,
    events: BoxStream<'static, SseItem>,
    decoder: D,
    pending: VecDeque<StreamEvent>,
    finished: bool,
    idle: Duration,
    request_timeout: Duration,
    cancel: CancellationToken,
}

impl<D: SseDecoder> Decoding<D> {
    async fn next(mut self) -> Option<(Result<StreamEvent, LlmError>, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(event), self));
            }
            if self.finished {
                return None;
            }
            let item = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return self.fail(LlmError::Cancelled),
                item = tokio::time::timeout(self.idle, self.events.next()) => item,
            };
            let result = match item {
                Err(_) => Err(LlmError::Timeout {
                    provider: self.provider,
                    after: self.idle,
                }),
                Ok(None) => {
                    self.finished = true;
                    self.decoder.end(&mut self.pending)
                }
                Ok(Some(Ok(event))) => self
                    .decoder
                    .event(&event, &mut self.pending)
                    .map(|done| self.finished = done),
                Ok(Some(Err(eventsource_stream::EventStreamError::Transport(
                    BoundedReadError::Transport(error),
                )))) => Err(transport_error(self.provider, &error, self.request_timeout)),
                Ok(Some(Err(eventsource_stream::EventStreamError::Transport(
                    BoundedReadError::TooLarge { part, limit },
                )))) => Err(LlmError::TooLarge {
                    provider: self.provider,
                    part,
                    limit,
                }),
                Ok(Some(Err(error))) => Err(LlmError::Malformed {
                    provider: self.provider,
                    detail: format!("unreadable event stream: {error}"),
                }),
            };
            if let Err(error) = result {
                return self.fail(error);
            }
        }
    }

    fn fail(mut self, error: LlmError) -> Option<(Result<StreamEvent, LlmError>, Self)> {
        // Nothing follows an error: drop what was queued and end.
        self.pending.clear();
        self.finished = true;
        Some((Err(error), self))
    }
}

/// Sends with retries, then decodes the streamed answer: the common shape of every
/// streaming provider call.
pub fn stream_call<D, B>(
    http: ProviderHttp,
    provider: ProviderId,
    build: B,
    decoder: D,
    cancel: CancellationToken,
) -> EventStream
where
    D: SseDecoder,
    B: Fn(&reqwest::Client) -> reqwest::RequestBuilder + Send + Sync + 'static,
{
    let started = async move {
        let response = http.send(provider, &build, &cancel).await?;
        Ok::<_, LlmError>(decode_sse(
            provider,
            response,
            decoder,
            http.settings(),
            cancel,
        ))
    };
    flatten(started)
}

/// A stream whose events come from the stream `start` produces; an error from `start` is the
/// only event.
pub fn flatten(
    start: impl std::future::Future<Output = Result<EventStream, LlmError>> + Send + 'static,
) -> EventStream {
    futures::stream::once(start)
        .flat_map(|started| match started {
            Ok(stream) => stream,
            Err(error) => futures::stream::once(async move { Err(error) }).boxed(),
        })
        .boxed()
}

/// Parses an SSE `data` payload as JSON, or reports a malformed chunk.
pub fn parse_json<T: serde::de::DeserializeOwned>(
    provider: ProviderId,
    data: &str,
) -> Result<T, LlmError> {
    serde_json::from_str(data).map_err(|error| LlmError::Malformed {
        provider,
        detail: format!("chunk is not valid JSON ({error}): {}", preview(data)),
    })
}

fn preview(text: &str) -> String {
    let mut preview: String = text.chars().take(120).collect();
    if preview.len() < text.len() {
        preview.push('…');
    }
    preview
}

/// Joins a base URL and a path without doubling or losing the slash.
pub fn endpoint(base_url: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base_url.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// Keeps a stream type nameable in signatures.
pub fn boxed<S>(stream: S) -> EventStream
where
    S: Stream<Item = Result<StreamEvent, LlmError>> + Send + 'static,
{
    stream.boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);

        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "9".parse().unwrap());
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_millis(250)));
        headers.remove("retry-after-ms");
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(9)));
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let settings = HttpSettings {
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_millis(1500),
            ..HttpSettings::default()
        };
        assert_eq!(backoff(&settings, 0), Duration::from_millis(500));
        assert_eq!(backoff(&settings, 1), Duration::from_millis(1000));
        assert_eq!(backoff(&settings, 2), Duration::from_millis(1500));
        assert_eq!(backoff(&settings, 40), Duration::from_millis(1500));
    }

    #[test]
    fn error_messages_come_from_the_usual_places() {
        assert_eq!(
            error_message(r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#),
            "Rate limit reached"
        );
        assert_eq!(
            error_message(r#"{"status":401,"message":"Token has expired"}"#),
            "Token has expired"
        );
        assert_eq!(error_message("upstream exploded"), "upstream exploded");
        assert_eq!(error_message("  "), "(no details)");
        assert!(is_retryable_status(429) && is_retryable_status(503) && is_retryable_status(529));
        assert!(!is_retryable_status(400) && !is_retryable_status(401));
    }

    #[test]
    fn endpoints_join_cleanly() {
        assert_eq!(
            endpoint("http://x/v1/", "/chat/completions"),
            "http://x/v1/chat/completions"
        );
        assert_eq!(
            endpoint("http://x/v1", "embeddings"),
            "http://x/v1/embeddings"
        );
    }
}
