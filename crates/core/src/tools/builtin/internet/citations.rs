//! Cited-source filtering: an answer may cite only sources that were actually fetched.
//!
//! Invariants: after [`filter`], every `[n]` in the answer names a fetched source, and every
//! URL in it (a Markdown link or a bare URL) is the requested or final URL of a fetched source;
//! a citation of anything else is removed (a link keeps its text), never trusted.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

/// A fetched source as citations see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CitableSource {
    /// Its number in the prompt (from 1).
    pub id: usize,
    /// The URL asked for.
    pub requested_url: String,
    /// The URL the text came from.
    pub final_url: String,
}

/// The answer with unfetched citations removed, and the ids of the sources it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Filtered {
    /// The answer.
    pub answer: String,
    /// Cited source ids, ascending.
    pub cited: BTreeSet<usize>,
    /// Citations that were removed (numbers or URLs), for the log and the output.
    pub dropped: Vec<String>,
}

static NUMBERED: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]").ok());
static LINK: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\[([^\]\n]*)\]\((https?://[^)\s]+)\)").ok());
static BARE_URL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"<?https?://[^\s<>()\]]+>?").ok());

/// A URL as compared: no fragment, no trailing slash or punctuation, lower-case scheme and host.
fn comparable(url: &str) -> String {
    let url = url
        .trim_matches(|c| c == '<' || c == '>')
        .trim_end_matches(['.', ',', ';', ':', '!', '?', '"', '\''])
        .split('#')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/');
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = host.to_ascii_lowercase();
            let host = host.strip_prefix("www.").unwrap_or(&host).to_owned();
            if path.is_empty() {
                format!("{}://{host}", scheme.to_ascii_lowercase())
            } else {
                format!("{}://{host}/{path}", scheme.to_ascii_lowercase())
            }
        }
        None => url.to_owned(),
    }
}

fn source_of(url: &str, sources: &[CitableSource]) -> Option<usize> {
    let wanted = comparable(url);
    sources
        .iter()
        .find(|source| {
            comparable(&source.requested_url) == wanted || comparable(&source.final_url) == wanted
        })
        .map(|source| source.id)
}

/// Removes every citation of something not among `sources` from `answer`.
pub(crate) fn filter(answer: &str, sources: &[CitableSource]) -> Filtered {
    let (Some(numbered_re), Some(link_re), Some(bare_re)) =
        (NUMBERED.as_ref(), LINK.as_ref(), BARE_URL.as_ref())
    else {
        // The patterns are constants (tested); should one not compile, nothing is cited.
        return Filtered {
            answer: answer.to_owned(),
            cited: BTreeSet::new(),
            dropped: vec!["(citations could not be checked)".to_owned()],
        };
    };
    let ids: BTreeSet<usize> = sources.iter().map(|source| source.id).collect();
    let mut cited = BTreeSet::new();
    let mut dropped = Vec::new();
    // Markdown links first (their URL would otherwise match as a bare URL).
    let linked = link_re.replace_all(answer, |captures: &regex::Captures<'_>| {
        let text = &captures[1];
        let url = &captures[2];
        match source_of(url, sources) {
            Some(id) => {
                cited.insert(id);
                captures[0].to_owned()
            }
            None => {
                dropped.push(url.to_owned());
                text.to_owned()
            }
        }
    });
    // Bare URLs, skipping those inside a kept Markdown link.
    let mut out = String::with_capacity(linked.len());
    let mut last = 0;
    let kept_links: Vec<(usize, usize)> = link_re
        .find_iter(&linked)
        .map(|found| (found.start(), found.end()))
        .collect();
    for found in bare_re.find_iter(&linked) {
        if kept_links
            .iter()
            .any(|(start, end)| found.start() >= *start && found.end() <= *end)
        {
            continue;
        }
        out.push_str(&linked[last..found.start()]);
        // Sentence punctuation after a URL is not part of it.
        let url = found
            .as_str()
            .trim_end_matches(['.', ',', ';', ':', '!', '?', '\'', '"']);
        match source_of(url, sources) {
            Some(id) => {
                cited.insert(id);
                out.push_str(url);
            }
            None => dropped.push(url.to_owned()),
        }
        last = found.start() + url.len();
    }
    out.push_str(&linked[last..]);
    // Numbered citations: keep the numbers of fetched sources.
    let numbered = numbered_re.replace_all(&out, |captures: &regex::Captures<'_>| {
        let mut kept = Vec::new();
        for number in captures[1].split(',') {
            let number = number.trim();
            match number.parse::<usize>() {
                Ok(id) if ids.contains(&id) => {
                    cited.insert(id);
                    kept.push(id.to_string());
                }
                _ => dropped.push(format!("[{number}]")),
            }
        }
        if kept.is_empty() {
            String::new()
        } else {
            format!("[{}]", kept.join(", "))
        }
    });
    let answer = numbered
        .lines()
        .map(|line| line.replace("  ", " ").trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
        .replace(" .", ".")
        .replace(" ,", ",");
    Filtered {
        answer: answer.trim().to_owned(),
        cited,
        dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> Vec<CitableSource> {
        vec![
            CitableSource {
                id: 1,
                requested_url: "https://a.example/tomatoes".into(),
                final_url: "https://a.example/tomatoes/".into(),
            },
            CitableSource {
                id: 2,
                requested_url: "https://b.example/start".into(),
                final_url: "https://www.b.example/final".into(),
            },
        ]
    }

    #[test]
    fn numbers_of_unfetched_sources_are_dropped() {
        let filtered = filter(
            "Tomatoes need sun [1]. They need water [3]. Both hold [1, 2, 7].",
            &sources(),
        );
        assert_eq!(
            filtered.answer,
            "Tomatoes need sun [1]. They need water. Both hold [1, 2]."
        );
        assert_eq!(filtered.cited, BTreeSet::from([1, 2]));
        assert_eq!(filtered.dropped, ["[3]", "[7]"]);
    }

    #[test]
    fn urls_never_fetched_are_dropped_and_links_keep_their_text() {
        let filtered = filter(
            "See [the guide](https://a.example/tomatoes) and [a forum](https://evil.example/x). \
             Also https://b.example/final and https://never.example/page.",
            &sources(),
        );
        assert_eq!(
            filtered.answer,
            "See [the guide](https://a.example/tomatoes) and a forum. Also \
             https://b.example/final and."
        );
        assert_eq!(filtered.cited, BTreeSet::from([1, 2]));
        assert_eq!(
            filtered.dropped,
            ["https://evil.example/x", "https://never.example/page"]
        );
    }
}
