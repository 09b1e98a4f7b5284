//! Untrusted HTML parsed into a tree of bounded shape, the only way pages become trees, and a
//! fetched page reduced to its readable text ([`readable_text`]).
//!
//! Three layers, each a bound the next relies on:
//! 1. [`shape::bound_shape`] rewrites the text so that ordinary hostile shapes (deep
//!    nesting, floods of elements, misnested formatting tags) are cut before parsing;
//! 2. html5ever parses the result (it does not recurse) a chunk at a time: between chunks the
//!    caller's stop is checked, and parsing ends early, keeping what was built, if the tree
//!    grows past [`MAX_NODES`] nodes or its newest branch past [`MAX_BRANCH_DEPTH`] (shapes
//!    the first layer misjudged);
//! 3. every element deeper than [`MAX_TREE_DEPTH`] is replaced by its text, iteratively.
//!
//! Invariant: a returned tree has no element deeper than [`MAX_TREE_DEPTH`] and at most
//! [`MAX_NODES`] nodes plus one chunk's worth, whatever the input; what dom_query and
//! dom_smoothie do afterwards (they recurse on depth and revisit subtrees) is bounded by that.
//!
//! Text: HTML is reduced to its main content with `dom_smoothie` (a port of Mozilla's
//! Readability: navigation, ads, scripts and footers dropped) rendered as Markdown; when no
//! article can be found, the visible text of the page body is used instead. Text types are
//! returned as they are; other content types are refused. The text is decoded with the
//! page's declared charset (header, BOM or `<meta>`).

pub mod shape;

use dom_query::{Document, NodeRef};
use html5ever::tendril::{StrTendril, TendrilSink};

use self::shape::{ShapeLimits, bound_shape};
use crate::worker::Stop;

/// Elements the pre-pass lets open at once (browsers cope with far more; no page worth
/// reading nests this deep).
pub const MAX_DEPTH: usize = 256;
/// Start tags the pre-pass keeps (a large article page has a few thousand).
pub const MAX_ELEMENTS: usize = 60_000;
/// Depth past which elements are flattened to their text. Above [`MAX_DEPTH`]: the tree
/// builder adds elements the text does not name (`tbody`, reopened formatting elements).
pub const MAX_TREE_DEPTH: usize = 512;
/// Nodes (elements, text, comments) after which parsing stops.
const MAX_NODES: usize = 250_000;
/// Depth of the newest branch after which parsing stops.
const MAX_BRANCH_DEPTH: usize = 2 * MAX_TREE_DEPTH;
/// Bytes parsed between two checks.
const CHUNK_BYTES: usize = 16 * 1024;

/// Parses `html` into a tree within the bounds above; `None` once `stopped()` says so.
pub fn bounded_document(html: &str, stopped: &dyn Fn() -> bool) -> Option<Document> {
    let shaped = bound_shape(
        html,
        ShapeLimits {
            max_depth: MAX_DEPTH,
            max_elements: MAX_ELEMENTS,
        },
    );
    let options = html5ever::ParseOpts {
        tree_builder: html5ever::tree_builder::TreeBuilderOpts {
            // As dom_query parses: `<noscript>` content is markup, as a reader without
            // scripts sees it.
            scripting_enabled: false,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut parser = html5ever::parse_document(Document::default(), options);
    let mut start = 0;
    while start < shaped.len() {
        if stopped() {
            return None;
        }
        let mut end = (start + CHUNK_BYTES).min(shaped.len());
        while !shaped.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from_slice(&shaped[start..end]));
        start = end;
        let tree = &parser.tokenizer.sink.sink.tree;
        if tree.len() > MAX_NODES || newest_branch_depth(tree.root()) > MAX_BRANCH_DEPTH {
            tracing::debug!(
                parsed = start,
                total = shaped.len(),
                "page cut: too large a tree"
            );
            break;
        }
    }
    let document = parser.finish();
    if stopped() {
        return None;
    }
    flatten_deep_elements(&document);
    Some(document)
}

/// Depth of the last-child path from `root` (where the tree builder is appending), counted up
/// to just past [`MAX_BRANCH_DEPTH`].
fn newest_branch_depth(root: NodeRef<'_>) -> usize {
    let mut depth = 0;
    let mut node = root;
    while let Some(child) = node.last_child() {
        depth += 1;
        if depth > MAX_BRANCH_DEPTH {
            break;
        }
        node = child;
    }
    depth
}

/// Replaces each element at [`MAX_TREE_DEPTH`] that has element children by its text.
fn flatten_deep_elements(document: &Document) {
    let mut pending = vec![(document.root(), 0_usize)];
    while let Some((node, depth)) = pending.pop() {
        if depth >= MAX_TREE_DEPTH {
            if node.children_it(false).any(|child| child.is_element()) {
                node.set_text(node.text());
            }
            continue;
        }
        pending.extend(
            node.children_it(false)
                .filter(NodeRef::is_element)
                .map(|child| (child, depth + 1)),
        );
    }
}

/// Elements Readability scores at most (more than the page's tree can have: see
/// [`MAX_ELEMENTS`]).
const READABILITY_MAX_ELEMENTS: usize = 200_000;

/// A page reduced to text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageText {
    /// Its title.
    pub title: Option<String>,
    /// Its readable text.
    pub text: String,
}

/// Why a page gave no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// Neither HTML nor a text type; the media type, or `unknown`.
    #[error("not a web page or text (content type {0})")]
    NotText(String),
    /// The caller stopped the work.
    #[error("stopped")]
    Stopped,
}

/// The readable text of a page fetched from `url` with this `body` and `Content-Type`: main
/// content of HTML, text types as they are. [`PageError::Stopped`] once `stop` is requested.
pub fn readable_text(
    body: &[u8],
    content_type: Option<&str>,
    url: &str,
    stop: &Stop,
) -> Result<PageText, PageError> {
    let media_type = content_type
        .and_then(|value| value.split(';').next())
        .map(|value| value.trim().to_ascii_lowercase());
    let looks_like_html = || {
        let start = &body[..body.len().min(1024)];
        let start = String::from_utf8_lossy(start).to_ascii_lowercase();
        start.contains("<html") || start.contains("<!doctype html")
    };
    let is_html = match media_type.as_deref() {
        Some("text/html" | "application/xhtml+xml") => true,
        Some(_) => false,
        None => looks_like_html(),
    };
    let is_text = match media_type.as_deref() {
        Some(media) => {
            media.starts_with("text/")
                || matches!(
                    media,
                    "application/json" | "application/xml" | "application/ld+json"
                )
                || media.ends_with("+json")
                || media.ends_with("+xml")
        }
        None => std::str::from_utf8(body).is_ok(),
    };
    if !is_html && !is_text {
        return Err(PageError::NotText(
            media_type.unwrap_or_else(|| "unknown".to_owned()),
        ));
    }
    let decoded = decode(body, content_type, is_html);
    if !is_html {
        return Ok(PageText {
            title: None,
            text: decoded.trim().to_owned(),
        });
    }
    html_text(&decoded, url, stop).ok_or(PageError::Stopped)
}

/// Decodes a body with the charset from the header, a BOM, or (HTML) a `<meta>` tag; UTF-8
/// otherwise. Invalid sequences become U+FFFD.
fn decode(body: &[u8], content_type: Option<&str>, is_html: bool) -> String {
    let from_header = content_type.and_then(charset_parameter);
    let from_meta = || {
        let head = String::from_utf8_lossy(&body[..body.len().min(2048)]).to_ascii_lowercase();
        let position = head.find("charset=")?;
        let rest = head[position + "charset=".len()..].trim_start_matches(['"', '\'']);
        let label: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
            .collect();
        Some(label)
    };
    let label = from_header.or_else(|| if is_html { from_meta() } else { None });
    let encoding = label
        .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    // `decode` also honours a byte-order mark over the label, as browsers do.
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

fn charset_parameter(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']).to_owned())
    })
}

/// Main content as Markdown; the body's visible text when no article stands out. `None`
/// once `stop` is requested.
fn html_text(html: &str, url: &str, stop: &Stop) -> Option<PageText> {
    let stopped = || stop.is_requested();
    let config = dom_smoothie::Config {
        text_mode: dom_smoothie::TextMode::Markdown,
        max_elements_to_parse: READABILITY_MAX_ELEMENTS,
        ..dom_smoothie::Config::default()
    };
    let article = dom_smoothie::Readability::with_document(
        bounded_document(html, &stopped)?,
        Some(url),
        Some(config.clone()),
    )
    .ok()
    .and_then(|mut readability| readability.parse().ok());
    if let Some(article) = article {
        let text = tidy(&article.text_content);
        if !text.is_empty() {
            let title = Some(article.title.trim().to_owned()).filter(|title| !title.is_empty());
            return Some(PageText { title, text });
        }
    }
    // No article: strip what is never visible and keep the rest of the body's text.
    let document = bounded_document(html, &stopped)?;
    let title = document.select("title").text().trim().to_owned();
    document
        .select("script, style, noscript, template, svg, head")
        .remove();
    let text = tidy(&document.select("body").formatted_text());
    Some(PageText {
        title: Some(title).filter(|title| !title.is_empty()),
        text,
    })
}

/// Trims lines and collapses runs of blank lines.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_lines = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_lines += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_lines > 0 { "\n\n" } else { "\n" });
        }
        blank_lines = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests;
