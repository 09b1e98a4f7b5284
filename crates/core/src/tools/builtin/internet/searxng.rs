//! SearXNG's JSON API (`/search?format=json`) on a self-hosted instance. An instance on this
//! machine is reachable only when its host is in `[sandbox] network_allow_hosts`.

use futures::future::BoxFuture;
use serde::Deserialize;

use super::search::{SearchBackend, SearchFailure, SearchHit, SearchHttp, plain, with_query};

/// A SearXNG instance.
pub(crate) struct Searxng {
    /// Its base URL (`http://127.0.0.1:8888`).
    pub base_url: String,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    results: Vec<Result>,
}

#[derive(Deserialize)]
struct Result {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: Option<String>,
}

impl SearchBackend for Searxng {
    fn name(&self) -> &'static str {
        "searxng"
    }

    fn search<'a>(
        &'a self,
        http: &'a SearchHttp<'a>,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, std::result::Result<Vec<SearchHit>, SearchFailure>> {
        Box::pin(async move {
            if self.base_url.is_empty() {
                return Err(SearchFailure::Unavailable(
                    "no SearXNG instance is configured ([web] searxng_url)".into(),
                ));
            }
            let endpoint = format!("{}/search", self.base_url.trim_end_matches('/'));
            let url = with_query(&endpoint, &[("q", query), ("format", "json")])?;
            let headers = [("accept", "application/json".to_owned())];
            let response = http
                .get(&url, &headers)
                .await
                .map_err(SearchFailure::from_web)?;
            match response.status {
                200..=299 => {}
                429 => {
                    return Err(SearchFailure::Blocked(
                        "the SearXNG instance is rate limiting us (HTTP 429)".into(),
                    ));
                }
                403 => {
                    return Err(SearchFailure::Unavailable(
                        "the SearXNG instance refused JSON (HTTP 403): enable `json` in its \
                         `search.formats`"
                            .into(),
                    ));
                }
                status => {
                    return Err(SearchFailure::Unavailable(format!(
                        "the SearXNG instance answered HTTP {status}"
                    )));
                }
            }
            let parsed: Response = serde_json::from_str(&response.body).map_err(|error| {
                SearchFailure::Unavailable(format!("the SearXNG answer is not its JSON: {error}"))
            })?;
            let mut hits: Vec<SearchHit> = Vec::new();
            for result in parsed.results {
                let url = result.url.trim();
                if !(url.starts_with("http://") || url.starts_with("https://"))
                    || hits.iter().any(|hit| hit.url == url)
                {
                    continue;
                }
                hits.push(SearchHit {
                    title: plain(&result.title),
                    url: url.to_owned(),
                    snippet: plain(result.content.as_deref().unwrap_or_default()),
                });
                if hits.len() >= limit {
                    break;
                }
            }
            Ok(hits)
        })
    }
}
