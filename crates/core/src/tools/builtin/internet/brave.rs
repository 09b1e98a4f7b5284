//! The Brave Search API (`/res/v1/web/search`), with the key stored in the key store's secrets
//! under `brave` (sent as `X-Subscription-Token`).

use futures::future::BoxFuture;
use serde::Deserialize;

use super::search::{SearchBackend, SearchFailure, SearchHit, SearchHttp, plain, with_query};

/// Results Brave returns at most per request.
const MAX_COUNT: usize = 20;

/// The Brave Search API.
pub(crate) struct Brave {
    /// Its web search endpoint.
    pub url: String,
    /// The subscription key (none: not configured).
    pub key: Option<String>,
}

/// Checks `key` with one real query at `url` (the Brave Search endpoint) through `client`, the
/// SSRF-safe client: `Ok` when Brave answered, else why not (a refused key, a rate limit, an
/// unreachable service). The key is sent to `url` only.
pub(crate) async fn check_key(
    client: crate::sandbox::WebClient,
    url: &str,
    key: String,
    cancel: &tokio_util::sync::CancellationToken,
) -> std::result::Result<(), String> {
    let pacer = super::Pacer::default();
    let http = SearchHttp {
        client,
        pacer: &pacer,
        cancel,
        base_backoff: super::search::BASE_BACKOFF,
    };
    let brave = Brave {
        url: url.trim().to_owned(),
        key: Some(key),
    };
    match brave.search(&http, "souz", 1).await {
        Ok(_) => Ok(()),
        Err(SearchFailure::Blocked(why) | SearchFailure::Unavailable(why)) => Err(why),
        Err(SearchFailure::Cancelled) => Err("cancelled".to_owned()),
    }
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<Result>,
}

#[derive(Deserialize)]
struct Result {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: Option<String>,
}

impl SearchBackend for Brave {
    fn name(&self) -> &'static str {
        "brave"
    }

    fn search<'a>(
        &'a self,
        http: &'a SearchHttp<'a>,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, std::result::Result<Vec<SearchHit>, SearchFailure>> {
        Box::pin(async move {
            let Some(key) = &self.key else {
                return Err(SearchFailure::Unavailable(
                    "no Brave Search key is stored (secret `brave` in the key store)".into(),
                ));
            };
            let count = limit.clamp(1, MAX_COUNT).to_string();
            let url = with_query(&self.url, &[("q", query), ("count", &count)])?;
            let headers = [
                ("accept", "application/json".to_owned()),
                ("x-subscription-token", key.clone()),
            ];
            let response = http
                .get(&url, &headers)
                .await
                .map_err(SearchFailure::from_web)?;
            match response.status {
                200..=299 => {}
                429 => {
                    return Err(SearchFailure::Blocked(
                        "Brave Search rate-limited the key (HTTP 429)".into(),
                    ));
                }
                401 | 403 | 422 => {
                    return Err(SearchFailure::Unavailable(format!(
                        "Brave Search refused the key (HTTP {})",
                        response.status
                    )));
                }
                status => {
                    return Err(SearchFailure::Unavailable(format!(
                        "Brave Search answered HTTP {status}"
                    )));
                }
            }
            let parsed: Response = serde_json::from_str(&response.body).map_err(|error| {
                SearchFailure::Unavailable(format!("the Brave answer is not its JSON: {error}"))
            })?;
            let mut hits: Vec<SearchHit> = Vec::new();
            for result in parsed.web.map(|web| web.results).unwrap_or_default() {
                let url = result.url.trim();
                if !(url.starts_with("http://") || url.starts_with("https://"))
                    || hits.iter().any(|hit| hit.url == url)
                {
                    continue;
                }
                hits.push(SearchHit {
                    title: plain(&result.title),
                    url: url.to_owned(),
                    snippet: plain(result.description.as_deref().unwrap_or_default()),
                });
                if hits.len() >= limit {
                    break;
                }
            }
            Ok(hits)
        })
    }
}
