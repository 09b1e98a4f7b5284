//! DuckDuckGo's HTML endpoints (no key): results parsed from the page, ads skipped, the
//! result links unwrapped from DuckDuckGo's `/l/?uddg=` redirect, and the anti-bot page
//! recognized (→ blocked; the next endpoint is tried). The page is untrusted: it is read as a
//! tree of bounded shape on a parse worker.

use futures::future::BoxFuture;
use reqwest::Url;

use super::search::{SearchBackend, SearchFailure, SearchHit, SearchHttp, plain, with_query};
use crate::tools::ToolError;
use crate::tools::builtin::web::PAGE_TIME_LIMIT;
use crate::tools::builtin::worker::{Subject, run_worker};
use souz_parse::html::bounded_document;

/// Phrases of DuckDuckGo's anti-bot ("anomaly") page.
const ANTI_BOT_MARKERS: &[&str] = &[
    "anomaly-modal",
    "bots use duckduckgo too",
    "challenge-form",
    "please complete the following challenge",
];

/// DuckDuckGo over its HTML endpoints, tried in order.
pub(crate) struct DuckDuckGo {
    /// `https://html.duckduckgo.com/html/` and its fallbacks.
    pub endpoints: Vec<String>,
}

impl SearchBackend for DuckDuckGo {
    fn name(&self) -> &'static str {
        "duckduckgo"
    }

    fn search<'a>(
        &'a self,
        http: &'a SearchHttp<'a>,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>, SearchFailure>> {
        Box::pin(async move {
            let mut last =
                SearchFailure::Unavailable("no DuckDuckGo endpoint is configured".into());
            for endpoint in &self.endpoints {
                let url = with_query(endpoint, &[("q", query)])?;
                let response = match http.get(&url, &[]).await {
                    Ok(response) => response,
                    Err(error) => {
                        last = SearchFailure::from_web(error);
                        if last == SearchFailure::Cancelled {
                            return Err(last);
                        }
                        continue;
                    }
                };
                if is_anti_bot(&response.body) || matches!(response.status, 202 | 403 | 429) {
                    last = SearchFailure::Blocked(format!(
                        "{endpoint} answered with its anti-bot page (HTTP {})",
                        response.status
                    ));
                    continue;
                }
                if !(200..300).contains(&response.status) {
                    last = SearchFailure::Unavailable(format!(
                        "{endpoint} answered HTTP {}",
                        response.status
                    ));
                    continue;
                }
                let body = response.body;
                return run_worker(http.cancel, PAGE_TIME_LIMIT, Subject::Page, move |stop| {
                    results_until(&body, limit, &|| stop.is_requested()).ok_or(ToolError::Cancelled)
                })
                .await
                .map_err(|error| match error {
                    ToolError::Cancelled => SearchFailure::Cancelled,
                    other => SearchFailure::Unavailable(other.to_string()),
                });
            }
            Err(last)
        })
    }
}

/// Whether `html` is DuckDuckGo's anti-bot page.
pub(crate) fn is_anti_bot(html: &str) -> bool {
    let lower = html.to_ascii_lowercase();
    ANTI_BOT_MARKERS.iter().any(|marker| lower.contains(marker))
}

/// The organic results of a DuckDuckGo HTML results page (ads skipped, duplicates dropped).
#[cfg(test)]
pub(crate) fn parse_results(html: &str, limit: usize) -> Vec<SearchHit> {
    results_until(html, limit, &|| false).unwrap_or_default()
}

/// [`parse_results`], read as a tree of bounded shape (the page is untrusted); `None` once
/// `stopped()` says so.
pub(crate) fn results_until(
    html: &str,
    limit: usize,
    stopped: &dyn Fn() -> bool,
) -> Option<Vec<SearchHit>> {
    let document = bounded_document(html, stopped)?;
    let mut hits: Vec<SearchHit> = Vec::new();
    for result in document.select("div.result").iter() {
        if hits.len() >= limit {
            break;
        }
        let class = result
            .attr("class")
            .map(|c| c.to_string())
            .unwrap_or_default();
        if class.contains("result--ad") {
            continue;
        }
        let link = result.select("a.result__a");
        let Some(href) = link.attr("href") else {
            continue;
        };
        let Some(url) = unwrap_link(&href) else {
            continue;
        };
        if hits.iter().any(|hit| hit.url == url) {
            continue;
        }
        let title = plain(&link.text());
        let snippet = plain(&result.select(".result__snippet").text());
        hits.push(SearchHit {
            title,
            url,
            snippet,
        });
    }
    Some(hits)
}

/// The target of a result link: DuckDuckGo's `/l/?uddg=<url>` unwrapped; http(s) only.
fn unwrap_link(href: &str) -> Option<String> {
    let href = href.trim();
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else if href.starts_with('/') {
        format!("https://duckduckgo.com{href}")
    } else {
        href.to_owned()
    };
    let url = Url::parse(&absolute).ok()?;
    let target = if url.path().starts_with("/l/") {
        let (_, target) = url.query_pairs().find(|(name, _)| name == "uddg")?;
        Url::parse(&target).ok()?
    } else {
        url
    };
    matches!(target.scheme(), "http" | "https").then(|| target.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_links_are_unwrapped_and_other_schemes_dropped() {
        assert_eq!(
            unwrap_link("//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa%3Fb%3D1&rut=x")
                .as_deref(),
            Some("https://example.org/a?b=1")
        );
        assert_eq!(
            unwrap_link("https://example.com/page").as_deref(),
            Some("https://example.com/page")
        );
        assert_eq!(unwrap_link("javascript:alert(1)"), None);
        assert_eq!(
            unwrap_link("//duckduckgo.com/l/?uddg=file%3A%2F%2F%2Fetc%2Fpasswd"),
            None
        );
    }
}
