//! The hostile-page corpus: every shape becomes a bounded tree and then text, within bounds of
//! time, depth and memory, on a thread with an eighth of a parse worker's stack (the margin the
//! real worker has over what the bounded tree needs, in this very build).

use std::time::{Duration, Instant};

use super::*;
use crate::worker::{Stop, WORKER_STACK_BYTES};

/// Time one page may take, parse and Readability included, in a debug build on a busy machine
/// (a bound to fail on, not a measurement: the release build takes a small fraction).
const PAGE_BOUND: Duration = Duration::from_secs(30);
/// Peak resident memory of the test process after the whole corpus.
const MEMORY_BOUND_KIB: u64 = 1536 << 10;

/// Hostile shapes, named. Each is a few hundred KB to ten MB: the fetch limit is 20 MiB.
pub fn corpus() -> Vec<(&'static str, String)> {
    let nested = |open: &str, close: &str, depth: usize| {
        format!(
            "<html><body>{}deep text{}</body></html>",
            open.repeat(depth),
            close.repeat(depth)
        )
    };
    let numbered =
        |count: usize, piece: fn(usize) -> String| -> String { (0..count).map(piece).collect() };
    vec![
        ("20,000 nested spans", nested("<span>", "</span>", 20_000)),
        ("3,000 nested divs", nested("<div>", "</div>", 3_000)),
        ("200,000 nested divs, unclosed", "<div>".repeat(200_000)),
        ("100,000 self-closed divs", "<div/>x".repeat(100_000)),
        (
            "5,000 nested tables",
            nested("<table><tr><td>", "</td></tr></table>", 5_000),
        ),
        (
            "20,000 nested lists",
            nested("<ul><li>", "</li></ul>", 20_000),
        ),
        (
            "20,000 nested quotes",
            nested("<blockquote>", "</blockquote>", 20_000),
        ),
        (
            "20,000 nested templates",
            nested("<template>", "</template>", 20_000),
        ),
        (
            "20,000 nested svg groups",
            nested("<svg><g>", "</g></svg>", 20_000),
        ),
        ("20,000 nested links", nested("<a href=x>", "</a>", 20_000)),
        (
            "misnested formatting, distinct",
            numbered(20_000, |i| format!("<div><b class=k{i}>x</div>")),
        ),
        (
            "misnested formatting, mixed",
            "<p><b><i><u><s><em><strong>x</p>".repeat(20_000),
        ),
        (
            "divs closed across tables",
            "<div><table></div>".repeat(20_000),
        ),
        (
            "raw text in a select",
            format!("<select><style>{}", "<div>".repeat(20_000)),
        ),
        ("200,000 paragraphs", "<p>word</p>".repeat(200_000)),
        ("100,000 unclosed paragraphs", "<p>word ".repeat(100_000)),
        (
            "a 10 MB attribute",
            format!("<div title=\"{}\">text</div>", "a".repeat(10 << 20)),
        ),
        (
            "100,000 attributes",
            format!(
                "<div {}>text</div>",
                numbered(100_000, |i| format!("a{i}=1 "))
            ),
        ),
        (
            "an unclosed comment",
            format!("<p>before</p><!--{}", "<div>".repeat(100_000)),
        ),
        (
            "5 MB of text",
            format!("<p>{}</p>", "word ".repeat(1 << 20)),
        ),
    ]
}

/// Depth of the deepest element, counted without recursion.
fn deepest(document: &Document) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(document.root(), 0_usize)];
    while let Some((node, depth)) = pending.pop() {
        deepest = deepest.max(depth);
        pending.extend(
            node.children_it(false)
                .filter(NodeRef::is_element)
                .map(|child| (child, depth + 1)),
        );
    }
    deepest
}

/// The text of `html` served as a UTF-8 HTML page.
fn page_text(html: &str, stop: &Stop) -> Result<PageText, PageError> {
    readable_text(
        html.as_bytes(),
        Some("text/html; charset=utf-8"),
        "https://hostile.example/page",
        stop,
    )
}

#[test]
fn hostile_pages_become_bounded_trees_and_text() {
    let worker = std::thread::Builder::new()
        .stack_size(WORKER_STACK_BYTES / 8)
        .spawn(|| {
            for (name, html) in corpus() {
                let started = Instant::now();
                let document = bounded_document(&html, &|| false).unwrap();
                let depth = deepest(&document);
                let nodes = document.tree.len();
                drop(document);
                let text = page_text(&html, &Stop::default());
                let took = started.elapsed();
                eprintln!("{name}: depth {depth}, {nodes} nodes, {took:?}");
                assert!(depth <= MAX_TREE_DEPTH, "{name}: depth {depth}");
                assert!(nodes <= 2 * MAX_NODES, "{name}: {nodes} nodes");
                assert!(text.is_ok(), "{name}: {text:?}");
                assert!(took < PAGE_BOUND, "{name} took {took:?}");
            }
        })
        .unwrap();
    worker.join().expect("every page was read");
    if let Some(peak) = crate::testing::peak_memory_kib() {
        assert!(peak < MEMORY_BOUND_KIB, "peak memory {peak} KiB");
    }
}

#[test]
fn deep_content_keeps_its_text() {
    let html = format!(
        "<html><body><p>start</p>{}the deepest words{}</body></html>",
        "<div>".repeat(20_000),
        "</div>".repeat(20_000)
    );
    let page = page_text(&html, &Stop::default()).unwrap();
    assert!(page.text.contains("start"), "{}", page.text);
    assert!(page.text.contains("the deepest words"), "{}", page.text);
}

#[test]
fn an_ordinary_page_keeps_its_shape() {
    let html = "<html><head><title>Hi</title></head><body><div><p>One <b>two</b></p>\
                <ul><li>a</li><li>b</li></ul></div></body></html>";
    let document = bounded_document(html, &|| false).unwrap();
    assert_eq!(document.select("li").length(), 2);
    assert_eq!(document.select("div > p > b").text().to_string(), "two");
    assert_eq!(deepest(&document), 5);
}

#[test]
fn a_stop_ends_the_parse() {
    let html = "<p>word</p>".repeat(100_000);
    assert!(bounded_document(&html, &|| true).is_none());
    let stop = Stop::default();
    stop.request_for_tests();
    assert_eq!(page_text(&html, &stop), Err(PageError::Stopped));
}

#[test]
fn charset_parameters_and_meta_tags_are_read() {
    assert_eq!(
        charset_parameter("text/html; Charset=\"ISO-8859-1\""),
        Some("ISO-8859-1".to_owned())
    );
    assert_eq!(charset_parameter("text/html"), None);
    let (latin1, _, _) =
        encoding_rs::WINDOWS_1252.encode("<meta charset=\"windows-1252\"><p>café</p>");
    assert!(decode(&latin1, None, true).contains("café"));
    // A BOM wins over a wrong label, as in browsers.
    let mut utf16 = vec![0xFF, 0xFE];
    for unit in "hé".encode_utf16() {
        utf16.extend_from_slice(&unit.to_le_bytes());
    }
    assert_eq!(
        decode(&utf16, Some("text/plain; charset=iso-8859-1"), false),
        "hé"
    );
}
