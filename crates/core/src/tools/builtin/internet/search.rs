//! Web search: the [`SearchBackend`] trait, the backends in the order `[web] search_backend`
//! gives, the HTTP they share (per-host pacing, retries that honour `Retry-After`), and the
//! outcome every caller maps to a status (`NO_RESULTS`, `PROVIDER_BLOCKED`,
//! `PROVIDER_UNAVAILABLE`).
//!
//! Invariants: a search host gets at most one request per pacing interval from this process
//! (at most [`MAX_PACED_HOSTS`] hosts remembered); at most [`MAX_RETRIES`] retries, waiting
//! what `Retry-After` says (never more than [`MAX_BACKOFF`]) or 2 s, 4 s, ... capped at 12 s.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use reqwest::Url;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::WebServices;
use crate::sandbox::{WebClient, WebError};

/// Retries of one search request after a 429, a 5xx or a failed connection.
pub(crate) const MAX_RETRIES: u32 = 2;
/// The first backoff between retries.
pub(crate) const BASE_BACKOFF: Duration = Duration::from_secs(2);
/// The longest wait between retries.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(12);
/// Hosts whose last request time is remembered for pacing.
pub(crate) const MAX_PACED_HOSTS: usize = 64;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchHit {
    /// The page's title.
    pub title: String,
    /// The page's URL.
    pub url: String,
    /// The backend's snippet (untrusted).
    pub snippet: String,
}

/// Why a backend gave no results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SearchFailure {
    /// The provider refused us (an anti-bot page, rate limiting).
    Blocked(String),
    /// The provider is down, unreachable, misconfigured, or answered something unreadable.
    Unavailable(String),
    /// The caller cancelled.
    Cancelled,
}

impl SearchFailure {
    /// The failure of a request.
    pub(crate) fn from_web(error: WebError) -> Self {
        match error {
            WebError::Cancelled => Self::Cancelled,
            other => Self::Unavailable(other.to_string()),
        }
    }
}

/// A search provider.
pub(crate) trait SearchBackend: Send + Sync {
    /// Its name (`duckduckgo`).
    fn name(&self) -> &'static str;
    /// At most `limit` results for `query`; an empty list when there are none.
    fn search<'a>(
        &'a self,
        http: &'a SearchHttp<'a>,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, SearchFailure>>;
}

/// Spaces requests to the same host.
#[derive(Debug)]
pub(crate) struct Pacer {
    interval: Duration,
    next: Mutex<HashMap<String, Instant>>,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new(Duration::from_millis(1200))
    }
}

impl Pacer {
    /// A pacer allowing one request per `interval` per host.
    pub(crate) fn new(interval: Duration) -> Self {
        Self {
            interval,
            next: Mutex::new(HashMap::new()),
        }
    }

    /// Takes the next slot of `host` at `now`; returns how long to wait for it.
    pub(crate) fn reserve(&self, host: &str, now: Instant) -> Duration {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        if next.len() >= MAX_PACED_HOSTS && !next.contains_key(host) {
            next.retain(|_, slot| *slot > now);
            if next.len() >= MAX_PACED_HOSTS
                && let Some(oldest) = next
                    .iter()
                    .min_by_key(|(_, slot)| **slot)
                    .map(|(host, _)| host.clone())
            {
                next.remove(&oldest);
            }
        }
        let slot = next.get(host).copied().filter(|slot| *slot > now);
        let start = slot.unwrap_or(now);
        next.insert(host.to_owned(), start + self.interval);
        start - now
    }

    /// Waits for the next slot of `host`.
    pub(crate) async fn wait(
        &self,
        host: &str,
        cancel: &CancellationToken,
    ) -> Result<(), WebError> {
        let delay = self.reserve(host, Instant::now());
        if delay.is_zero() {
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => Ok(()),
            () = cancel.cancelled() => Err(WebError::Cancelled),
        }
    }
}

/// A search response.
#[derive(Debug, Clone)]
pub(crate) struct SearchResponse {
    /// Its status.
    pub status: u16,
    /// Its body, decoded as UTF-8 (lossily).
    pub body: String,
}

/// The HTTP a backend uses for one search: the SSRF-safe client, paced and retried.
pub(crate) struct SearchHttp<'a> {
    /// The sandbox's client.
    pub client: WebClient,
    /// Per-host pacing.
    pub pacer: &'a Pacer,
    /// The caller's cancellation.
    pub cancel: &'a CancellationToken,
    /// The first backoff (tests shorten it).
    pub base_backoff: Duration,
}

impl SearchHttp<'_> {
    /// GETs `url` with `headers`; retries 429, 5xx and failed connections. Any final status
    /// is returned (the backend decides what it means); the body is capped by the client.
    pub(crate) async fn get(
        &self,
        url: &Url,
        headers: &[(&str, String)],
    ) -> Result<SearchResponse, WebError> {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let mut retry = 0;
        loop {
            self.pacer.wait(&host, self.cancel).await?;
            let mut request = self.client.request(reqwest::Method::GET, url.as_str())?;
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            let outcome = self.client.send(request, self.cancel).await;
            let wait = match &outcome {
                Ok(response) if retryable(response.status().as_u16()) => {
                    retry_after(response.headers()).unwrap_or_else(|| self.backoff(retry))
                }
                Ok(_) => Duration::ZERO,
                Err(WebError::Timeout { .. } | WebError::Network { .. }) => self.backoff(retry),
                Err(_) => Duration::ZERO,
            };
            let again = retry < MAX_RETRIES && !wait.is_zero() && wait <= MAX_BACKOFF;
            if !again {
                let response = outcome?;
                let status = response.status().as_u16();
                let body = self.client.read_body(response, self.cancel).await?;
                return Ok(SearchResponse {
                    status,
                    body: String::from_utf8_lossy(&body).into_owned(),
                });
            }
            tracing::info!(%url, retry = retry + 1, wait_ms = wait.as_millis() as u64, "retrying a search request");
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.cancel.cancelled() => return Err(WebError::Cancelled),
            }
            retry += 1;
        }
    }

    fn backoff(&self, retry: u32) -> Duration {
        self.base_backoff
            .saturating_mul(2_u32.saturating_pow(retry))
            .min(MAX_BACKOFF)
            .max(Duration::from_millis(1))
    }
}

fn retryable(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

/// The wait a `Retry-After` header asks for (seconds or an HTTP date).
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds).max(Duration::from_millis(1)));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or_default()
            .max(Duration::from_millis(1)),
    )
}

/// What a search came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SearchOutcome {
    /// Results from `backend`.
    Found {
        /// The backend that answered.
        backend: String,
        /// Its results.
        hits: Vec<SearchHit>,
    },
    /// A backend answered with no results.
    Empty,
    /// Every backend refused us.
    Blocked(String),
    /// No backend could answer.
    Unavailable(String),
    /// The caller cancelled.
    Cancelled,
}

/// The backends to try, in order, for the configuration (Brave only with a stored key).
pub(crate) async fn backends(services: &WebServices) -> Vec<Box<dyn SearchBackend>> {
    let config = &services.config;
    let brave_key = services.brave_key().await;
    let brave = |key: Option<String>| -> Box<dyn SearchBackend> {
        Box::new(super::brave::Brave {
            url: config.brave_url.trim().to_owned(),
            key,
        })
    };
    let searxng = || -> Box<dyn SearchBackend> {
        Box::new(super::searxng::Searxng {
            base_url: config.searxng_url.trim().to_owned(),
        })
    };
    let duckduckgo = || -> Box<dyn SearchBackend> {
        Box::new(super::duckduckgo::DuckDuckGo {
            endpoints: config.duckduckgo_urls.clone(),
        })
    };
    match config.search_backend.trim() {
        "brave" => vec![brave(brave_key)],
        "searxng" => vec![searxng()],
        "duckduckgo" => vec![duckduckgo()],
        _ => {
            let mut order = Vec::new();
            if brave_key.is_some() {
                order.push(brave(brave_key));
            }
            if !config.searxng_url.trim().is_empty() {
                order.push(searxng());
            }
            order.push(duckduckgo());
            order
        }
    }
}

/// Searches `query` with the configured backends in order, through the cache: the first
/// backend with results wins; a backend that is blocked or down hands over to the next.
pub(crate) async fn search(
    services: &WebServices,
    http: &SearchHttp<'_>,
    query: &str,
    limit: usize,
) -> SearchOutcome {
    let cache_key = format!("{}:{limit}", services.config.search_backend.trim());
    if let Some((backend, hits)) = super::cache::lookup(services, &cache_key, query).await {
        return SearchOutcome::Found { backend, hits };
    }
    let mut empty = false;
    let mut blocked = Vec::new();
    let mut unavailable = Vec::new();
    for backend in backends(services).await {
        match backend.search(http, query, limit).await {
            Ok(hits) if hits.is_empty() => empty = true,
            Ok(mut hits) => {
                hits.truncate(limit);
                super::cache::save(services, &cache_key, query, backend.name(), &hits).await;
                return SearchOutcome::Found {
                    backend: backend.name().to_owned(),
                    hits,
                };
            }
            Err(SearchFailure::Cancelled) => return SearchOutcome::Cancelled,
            Err(SearchFailure::Blocked(why)) => blocked.push(format!("{}: {why}", backend.name())),
            Err(SearchFailure::Unavailable(why)) => {
                unavailable.push(format!("{}: {why}", backend.name()));
            }
        }
    }
    if empty {
        SearchOutcome::Empty
    } else if unavailable.is_empty() {
        SearchOutcome::Blocked(blocked.join("; "))
    } else {
        unavailable.extend(blocked);
        SearchOutcome::Unavailable(unavailable.join("; "))
    }
}

/// `base` with `params` added to its query.
pub(crate) fn with_query(base: &str, params: &[(&str, &str)]) -> Result<Url, SearchFailure> {
    let mut url = Url::parse(base.trim()).map_err(|error| {
        SearchFailure::Unavailable(format!("the endpoint `{base}` is not a URL: {error}"))
    })?;
    url.query_pairs_mut().extend_pairs(params);
    Ok(url)
}

/// Removes HTML tags and entities from a snippet and collapses whitespace.
pub(crate) fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pacer_spaces_requests_to_one_host_and_not_across_hosts() {
        let pacer = Pacer::new(Duration::from_millis(1200));
        let now = Instant::now();
        assert_eq!(pacer.reserve("a.example", now), Duration::ZERO);
        assert_eq!(pacer.reserve("a.example", now), Duration::from_millis(1200));
        assert_eq!(pacer.reserve("a.example", now), Duration::from_millis(2400));
        assert_eq!(pacer.reserve("b.example", now), Duration::ZERO);
        let later = now + Duration::from_secs(10);
        assert_eq!(pacer.reserve("a.example", later), Duration::ZERO);
    }

    #[test]
    fn the_pacer_remembers_a_bounded_number_of_hosts() {
        let pacer = Pacer::new(Duration::from_secs(60));
        let now = Instant::now();
        for index in 0..(MAX_PACED_HOSTS * 2) {
            pacer.reserve(&format!("h{index}.example"), now);
        }
        let remembered = pacer.next.lock().unwrap().len();
        assert!(remembered <= MAX_PACED_HOSTS, "{remembered}");
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        let date = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(60));
        headers.insert(reqwest::header::RETRY_AFTER, date.parse().unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::from_secs(50) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn snippets_lose_their_markup() {
        assert_eq!(
            plain("  <b>Tomato</b> &amp; basil\n <i>growing</i> guide "),
            "Tomato & basil growing guide"
        );
    }
}
