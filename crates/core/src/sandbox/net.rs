//! The SSRF-safe HTTP client every network tool uses (`Sandbox::web`).
//!
//! Destinations are checked at three points, so neither an IP literal, nor a DNS answer, nor a
//! redirect can reach a non-public address (see `policy`) unless the host is allowed in
//! `[sandbox] network_allow_hosts`:
//! 1. before a request is sent, its URL ([`WebClient::send`]);
//! 2. on every redirect hop, in the redirect policy (at most [`MAX_REDIRECTS`]);
//! 3. after DNS, in the resolver, which refuses a name whose addresses are not all public
//!    (connections go only to the addresses it returns, so a second DNS answer cannot differ).
//!
//! System proxies are ignored (a proxy would resolve names itself, past the check). Bodies are
//! capped; connecting, reading and the whole request have time limits.
//!
//! Invariants: the inner `reqwest::Client` never leaves this module, so a request cannot skip
//! step 1. The one exception is [`transport_client`], for a transport that talks to one fixed
//! URL (an MCP server's endpoint): its caller checks that URL with the same policy first
//! ([`NetworkPolicy::check_url`]); DNS answers and redirects are checked here as for every request.

pub(crate) mod policy;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::Policy as RedirectPolicy;
use tokio_util::sync::CancellationToken;

pub(crate) use policy::{NetworkPolicy, Refusal};

/// Redirects followed before giving up.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// A browser-like user agent: many sites refuse or degrade unknown clients.
pub(crate) const USER_AGENT: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 \
                              (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// Limits of the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebOptions {
    /// Time to establish a connection (TCP and TLS).
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes of a response.
    pub read_timeout: Duration,
    /// Time for a whole request, redirects and body included.
    pub request_timeout: Duration,
    /// Largest body read.
    pub max_body_bytes: u64,
}

impl Default for WebOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(6),
            read_timeout: Duration::from_secs(20),
            request_timeout: Duration::from_secs(60),
            max_body_bytes: 20 << 20,
        }
    }
}

/// Why a web request failed. Messages are shown to the model and the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebError {
    /// The URL cannot be parsed or used.
    #[error("invalid URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The destination is not allowed (non-public address, scheme, port).
    #[error("refused to fetch {url}: {refusal}")]
    Refused {
        /// The URL whose destination was refused (a redirect target, possibly).
        url: String,
        /// Why.
        refusal: Refusal,
    },
    /// More than [`MAX_REDIRECTS`] redirects.
    #[error("{url} redirected more than {MAX_REDIRECTS} times")]
    TooManyRedirects {
        /// The URL first asked for.
        url: String,
    },
    /// The server answered with an error status.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The final URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The body is larger than allowed.
    #[error("the response from {url} is larger than {limit} bytes")]
    TooLarge {
        /// The final URL.
        url: String,
        /// The limit.
        limit: u64,
    },
    /// A time limit passed.
    #[error("{url} did not answer in time")]
    Timeout {
        /// The URL.
        url: String,
    },
    /// The connection failed.
    #[error("could not fetch {url}: {reason}")]
    Network {
        /// The URL.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The caller cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The client could not be built (TLS setup, bad allow list).
    #[error("cannot set up web access: {0}")]
    Setup(String),
}

/// Name resolution, replaceable in tests.
pub trait HostLookup: Send + Sync + 'static {
    /// The addresses of `host`.
    fn lookup(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// The system resolver (`getaddrinfo`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemLookup;

impl HostLookup for SystemLookup {
    fn lookup(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let host = host.to_owned();
        Box::pin(async move {
            let addresses = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addresses.map(|address| address.ip()).collect())
        })
    }
}

#[cfg(test)]
/// Fixed answers, for tests: names map to addresses; other names do not exist.
#[derive(Debug, Clone, Default)]
pub(crate) struct StaticLookup {
    answers: Vec<(String, Vec<IpAddr>)>,
}

#[cfg(test)]
impl StaticLookup {
    /// Adds an answer.
    pub(crate) fn with(mut self, name: &str, addresses: &[IpAddr]) -> Self {
        self.answers
            .push((name.to_ascii_lowercase(), addresses.to_vec()));
        self
    }
}

#[cfg(test)]
impl HostLookup for StaticLookup {
    fn lookup(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let answer = self
            .answers
            .iter()
            .find(|(name, _)| *name == host)
            .map(|(_, addresses)| addresses.clone());
        Box::pin(async move {
            answer.ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, format!("no such host {host}"))
            })
        })
    }
}

/// The resolver reqwest uses: looks names up, then refuses non-public answers.
struct GuardedResolver {
    policy: Arc<NetworkPolicy>,
    lookup: Arc<dyn HostLookup>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        let lookup = self.lookup.lookup(name.as_str());
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let addresses = lookup.await?;
            policy.check_resolved(&name, &addresses)?;
            let addresses: Addrs = Box::new(
                addresses
                    .into_iter()
                    .map(|ip| SocketAddr::new(ip, 0))
                    .collect::<Vec<_>>()
                    .into_iter(),
            );
            Ok(addresses)
        })
    }
}

/// Marks a redirect refused by the policy, so the error can be recognized.
#[derive(Debug)]
struct RedirectRefused {
    url: String,
    refusal: Refusal,
}

impl std::fmt::Display for RedirectRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "redirect to {} refused: {}", self.url, self.refusal)
    }
}

impl std::error::Error for RedirectRefused {}

/// Marks too many redirects.
#[derive(Debug)]
struct TooManyRedirects;

impl std::fmt::Display for TooManyRedirects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "too many redirects")
    }
}

impl std::error::Error for TooManyRedirects {}

/// A fetched response.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL after redirects.
    pub url: Url,
    /// The status code.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The body (at most `max_body_bytes`).
    pub body: Bytes,
}

/// A client for a transport bound to one URL its caller has checked against `policy` (the
/// MCP client's streamable HTTP): names are checked after DNS and every redirect is checked, as
/// for [`WebClient`]; no overall request time limit (streams stay open), a read timeout instead.
pub(crate) fn transport_client(
    policy: Arc<NetworkPolicy>,
    lookup: Arc<dyn HostLookup>,
    options: &WebOptions,
) -> Result<reqwest::Client, WebError> {
    let redirect_policy = {
        let policy = Arc::clone(&policy);
        RedirectPolicy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(TooManyRedirects);
            }
            match policy.check_url(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(refusal) => {
                    let url = attempt.url().to_string();
                    attempt.error(RedirectRefused { url, refusal })
                }
            }
        })
    };
    reqwest::Client::builder()
        .no_proxy()
        .redirect(redirect_policy)
        .dns_resolver(Arc::new(GuardedResolver { policy, lookup }))
        .connect_timeout(options.connect_timeout)
        .build()
        .map_err(|error| WebError::Setup(error.to_string()))
}

/// The SSRF-safe client. Cheap to clone.
#[derive(Clone)]
pub struct WebClient {
    http: reqwest::Client,
    policy: Arc<NetworkPolicy>,
    options: WebOptions,
}

impl std::fmt::Debug for WebClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebClient")
            .field("policy", &self.policy)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl WebClient {
    /// A client with the system resolver and default limits.
    pub fn new(allow_hosts: &[String]) -> Result<Self, WebError> {
        Self::with_options(allow_hosts, WebOptions::default(), Arc::new(SystemLookup))
    }

    /// A client with explicit limits and resolver.
    pub fn with_options(
        allow_hosts: &[String],
        options: WebOptions,
        lookup: Arc<dyn HostLookup>,
    ) -> Result<Self, WebError> {
        let policy = Arc::new(NetworkPolicy::new(allow_hosts).map_err(WebError::Setup)?);
        let redirect_policy = {
            let policy = Arc::clone(&policy);
            RedirectPolicy::custom(move |attempt| {
                if attempt.previous().len() > MAX_REDIRECTS {
                    return attempt.error(TooManyRedirects);
                }
                match policy.check_url(attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(refusal) => {
                        let url = attempt.url().to_string();
                        attempt.error(RedirectRefused { url, refusal })
                    }
                }
            })
        };
        let http = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .no_proxy()
            .redirect(redirect_policy)
            .dns_resolver(Arc::new(GuardedResolver {
                policy: Arc::clone(&policy),
                lookup,
            }))
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .timeout(options.request_timeout)
            .build()
            .map_err(|error| WebError::Setup(error.to_string()))?;
        Ok(Self {
            http,
            policy,
            options,
        })
    }

    /// The allow list in force.
    pub fn policy(&self) -> &NetworkPolicy {
        &self.policy
    }

    /// The limits in force.
    pub fn options(&self) -> &WebOptions {
        &self.options
    }

    /// Parses a URL and checks it without touching the network (scheme, IP literals, ports of
    /// allowed names). Names are checked again after DNS when the request runs.
    pub fn check_url(&self, raw: &str) -> Result<Url, WebError> {
        let trimmed = raw.trim();
        let url = Url::parse(trimmed).map_err(|error| WebError::InvalidUrl {
            url: raw.to_owned(),
            reason: error.to_string(),
        })?;
        self.policy
            .check_url(&url)
            .map_err(|refusal| WebError::Refused {
                url: url.to_string(),
                refusal,
            })?;
        Ok(url)
    }

    /// A request to a checked URL; send it with [`WebClient::send`].
    pub fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, WebError> {
        let url = self.check_url(url)?;
        Ok(self
            .http
            .request(method, url)
            .header(
                reqwest::header::ACCEPT,
                "text/html,application/xhtml+xml,application/xml;q=0.9,text/plain;q=0.8,*/*;q=0.5",
            )
            .header(reqwest::header::ACCEPT_LANGUAGE, "en-US,en;q=0.9"))
    }

    /// Sends a request (its URL checked again), following allowed redirects.
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, WebError> {
        let request = request.build().map_err(|error| WebError::InvalidUrl {
            url: error.url().map(Url::to_string).unwrap_or_default(),
            reason: error.to_string(),
        })?;
        let url = request.url().to_string();
        self.policy
            .check_url(request.url())
            .map_err(|refusal| WebError::Refused {
                url: url.clone(),
                refusal,
            })?;
        tokio::select! {
            response = self.http.execute(request) => {
                response.map_err(|error| classify(&url, &error))
            }
            () = cancel.cancelled() => Err(WebError::Cancelled),
        }
    }

    /// Reads a body, refusing more than `max_body_bytes`.
    pub async fn read_body(
        &self,
        mut response: reqwest::Response,
        cancel: &CancellationToken,
    ) -> Result<Bytes, WebError> {
        let url = response.url().to_string();
        let limit = self.options.max_body_bytes;
        let too_large = || WebError::TooLarge {
            url: url.clone(),
            limit,
        };
        if response
            .content_length()
            .is_some_and(|length| length > limit)
        {
            return Err(too_large());
        }
        let mut body = BytesMut::new();
        loop {
            let chunk = tokio::select! {
                chunk = response.chunk() => chunk.map_err(|error| classify(&url, &error))?,
                () = cancel.cancelled() => return Err(WebError::Cancelled),
            };
            let Some(chunk) = chunk else {
                return Ok(body.freeze());
            };
            if body.len() as u64 + chunk.len() as u64 > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
    }

    /// GETs a URL: checked, redirects followed, error statuses refused, body capped.
    pub async fn fetch(&self, url: &str, cancel: &CancellationToken) -> Result<Fetched, WebError> {
        let request = self.request(reqwest::Method::GET, url)?;
        let response = self.send(request, cancel).await?;
        let final_url = response.url().clone();
        let status = response.status();
        if status.is_redirection() {
            // reqwest hands back redirects it will not follow (e.g. to `file:`); say why.
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .and_then(|location| final_url.join(location).ok());
            if let Some(location) = location
                && let Err(refusal) = self.policy.check_url(&location)
            {
                return Err(WebError::Refused {
                    url: location.to_string(),
                    refusal,
                });
            }
        }
        if !status.is_success() {
            return Err(WebError::Status {
                url: final_url.to_string(),
                status: status.as_u16(),
            });
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let body = self.read_body(response, cancel).await?;
        Ok(Fetched {
            url: final_url,
            status: status.as_u16(),
            content_type,
            body,
        })
    }
}

/// Turns a reqwest error into a [`WebError`], recognizing refusals from the resolver and the
/// redirect policy anywhere in its chain of causes.
fn classify(url: &str, error: &reqwest::Error) -> WebError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(refusal) = cause.downcast_ref::<Refusal>() {
            return WebError::Refused {
                url: error.url().map_or_else(|| url.to_owned(), Url::to_string),
                refusal: refusal.clone(),
            };
        }
        if let Some(redirect) = cause.downcast_ref::<RedirectRefused>() {
            return WebError::Refused {
                url: redirect.url.clone(),
                refusal: redirect.refusal.clone(),
            };
        }
        if cause.downcast_ref::<TooManyRedirects>().is_some() {
            return WebError::TooManyRedirects {
                url: url.to_owned(),
            };
        }
        source = cause.source();
    }
    if error.is_timeout() {
        return WebError::Timeout {
            url: url.to_owned(),
        };
    }
    WebError::Network {
        url: url.to_owned(),
        reason: error_chain(error),
    }
}

/// `error: cause: cause`, without repeating identical messages.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let message = cause.to_string();
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod test_server;
