//! `[web]`: web search (which backend, where it is, how long results are cached), research
//! limits, and the image tools.
//!
//! Invariants: every URL here is fetched through the sandbox's SSRF-safe client, so a backend on
//! loopback or a private address (a self-hosted SearXNG) also needs its `host:port` in
//! `[sandbox] network_allow_hosts`.

use super::section::{Invalid, config_section};

/// The search backends, by the name `search_backend` uses.
pub(crate) const SEARCH_BACKENDS: &[&str] = &["auto", "duckduckgo", "searxng", "brave"];

config_section! {
    /// Web search, research and images: `InternetSearch`, `InternetResearch`, `ViewImage` and
    /// `GenerateImage`.
    #[section = "web"]
    pub struct WebConfig {
        /// The search backend: `duckduckgo` (no key), `searxng` (needs `searxng_url`), `brave`
        /// (needs the `brave` key in the key store), or `auto`: Brave when its key is stored,
        /// then SearXNG when configured, then DuckDuckGo; the next one is tried when one is
        /// blocked or down.
        pub search_backend: String = "auto".to_owned(),
        /// The base URL of a SearXNG instance (its JSON API must be enabled), empty for none.
        /// An instance on this machine also needs its host and port in
        /// `[sandbox] network_allow_hosts`.
        pub searxng_url: String = String::new(),
        /// DuckDuckGo's HTML endpoints, tried in order.
        pub duckduckgo_urls: Vec<String> = vec![
            "https://html.duckduckgo.com/html/".to_owned(),
            "https://duckduckgo.com/html/".to_owned(),
        ],
        /// The Brave Search API's web search endpoint.
        pub brave_url: String = "https://api.search.brave.com/res/v1/web/search".to_owned(),
        /// Seconds a search result stays cached (0: no cache).
        pub cache_ttl_secs: u64 = 900,
        /// Milliseconds between two requests to the same search host.
        pub host_pacing_ms: u64 = 1200,
        /// Pages a research call fetches at the same time.
        pub max_concurrent_fetches: usize = 4,
        /// Answers longer than this many characters are also saved as a Markdown report.
        pub report_min_chars: usize = 4000,
        /// Where reports are saved (a folder inside the roots).
        pub report_folder: String = "~/Documents/souz/research".to_owned(),
        /// The model that looks at images for `ViewImage`, as `[llm]` names models (empty: the
        /// default chat model, which must accept images).
        pub vision_model: String = String::new(),
        /// The OpenAI images model `GenerateImage` uses.
        pub image_model: String = "gpt-image-1".to_owned(),
        /// The largest image `ViewImage` sends, in bytes.
        pub max_image_bytes: u64 = 10_485_760,
    }
}

impl WebConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        if !SEARCH_BACKENDS.contains(&self.search_backend.trim()) {
            problems.push(Invalid::new(
                "search_backend",
                format!("must be one of {}", SEARCH_BACKENDS.join(", ")),
            ));
        }
        if self.search_backend.trim() == "searxng" && self.searxng_url.trim().is_empty() {
            problems.push(Invalid::new(
                "searxng_url",
                "must be set when search_backend is searxng",
            ));
        }
        for (key, url) in [
            ("searxng_url", &self.searxng_url),
            ("brave_url", &self.brave_url),
        ]
        .into_iter()
        .chain(
            self.duckduckgo_urls
                .iter()
                .map(|url| ("duckduckgo_urls", url)),
        ) {
            let url = url.trim();
            if !(url.is_empty() || url.starts_with("http://") || url.starts_with("https://")) {
                problems.push(Invalid::new(key, "must be an http:// or https:// URL"));
            }
        }
        if !(1..=16).contains(&self.max_concurrent_fetches) {
            problems.push(Invalid::new(
                "max_concurrent_fetches",
                "must be between 1 and 16",
            ));
        }
        if self.max_image_bytes == 0 {
            problems.push(Invalid::new("max_image_bytes", "must be more than 0"));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Section;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        assert!(WebConfig::default().validate().is_empty());
        let config = WebConfig {
            search_backend: "google".into(),
            brave_url: "ftp://example.com".into(),
            max_concurrent_fetches: 0,
            ..WebConfig::default()
        };
        let problems = format!("{:?}", config.validate());
        for key in ["search_backend", "brave_url", "max_concurrent_fetches"] {
            assert!(problems.contains(key), "{key} not in {problems}");
        }
        let searxng = WebConfig {
            search_backend: "searxng".into(),
            ..WebConfig::default()
        };
        assert!(format!("{:?}", searxng.validate()).contains("searxng_url"));
    }
}
