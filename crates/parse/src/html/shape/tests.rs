//! The pre-pass: what it cuts, what it keeps as it is.

use super::*;

const LIMITS: ShapeLimits = ShapeLimits {
    max_depth: 8,
    max_elements: 1000,
};

fn nested(tag: &str, depth: usize, text: &str) -> String {
    format!(
        "{}{text}{}",
        format!("<{tag}>").repeat(depth),
        format!("</{tag}>").repeat(depth)
    )
}

#[test]
fn nesting_past_the_depth_is_cut_and_its_text_kept() {
    let shaped = bound_shape(&nested("span", 20_000, "deep words"), LIMITS);
    assert_eq!(shaped, nested("span", 8, "deep words"));
}

#[test]
fn ordinary_markup_passes_unchanged() {
    let page = "<!doctype html><html><head><title>T</title><style>p > a { x: 1 }</style>\
                <script>if (a<b && c>d) { x = '<div>'; }</script></head><body>\
                <!-- a <div> in a comment --><p class=\"x\" title='a > b'>one<br>two\
                <img src=x.png><a href=\"/y\">link</a></p><svg><path d=\"M0\"/><path/></svg>\
                <ul><li>a<li>b<li>c</ul></body></html>";
    assert_eq!(bound_shape(page, LIMITS), page);
}

#[test]
fn tags_inside_comments_quotes_and_raw_text_are_not_counted() {
    let inner = "<div>".repeat(50);
    let page = format!(
        "<!--{inner}--><p title=\"{inner}\">x</p><script>{inner}</script>\
         <textarea>{inner}</textarea><!--->{}",
        nested("b", 3, "y")
    );
    assert_eq!(bound_shape(&page, LIMITS), page);
}

#[test]
fn formatting_elements_lose_their_attributes_links_keep_theirs() {
    let shaped = bound_shape(
        "<b class=\"k\">x</b><font color=red>y</font><a href=\"/z\" class=c>z</a>",
        LIMITS,
    );
    assert_eq!(shaped, "<b>x</b><font>y</font><a href=\"/z\" class=c>z</a>");
}

#[test]
fn elements_past_the_count_are_dropped() {
    let page = "<p>x</p>".repeat(2000);
    let shaped = bound_shape(&page, LIMITS);
    assert_eq!(shaped.matches("<p>").count(), 1000);
    assert_eq!(shaped.matches('x').count(), 2000, "text stays");
}

#[test]
fn self_closing_tags_count_as_open_outside_svg() {
    // The tree builder ignores `/>` on HTML elements: 20,000 `<div/>` nest 20,000 deep.
    let shaped = bound_shape(&"<div/>".repeat(20_000), LIMITS);
    assert_eq!(shaped.matches("<div/>").count(), 8);
    // A breakout tag leaves SVG: what follows is HTML again.
    let shaped = bound_shape(&format!("<svg>{}", "<div/>".repeat(100)), LIMITS);
    assert_eq!(shaped.matches("<div/>").count(), 8);
    // Inside SVG, `/>` closes.
    let page = format!("<svg>{}</svg>", "<path/>".repeat(100));
    assert_eq!(bound_shape(&page, LIMITS), page);
}

#[test]
fn raw_text_inside_svg_or_select_is_markup() {
    let inner = "<div>".repeat(50);
    let shaped = bound_shape(&format!("<svg><style>{inner}</style></svg>"), LIMITS);
    assert!(shaped.matches("<div>").count() <= 8, "{shaped}");
    let shaped = bound_shape(&format!("<select><style>{inner}</style></select>"), LIMITS);
    assert!(shaped.matches("<div>").count() <= 8, "{shaped}");
}

#[test]
fn end_tags_do_not_close_past_a_table() {
    // `</div>` inside a table is ignored by the tree builder: each round nests two more.
    let shaped = bound_shape(&"<div><table></div>".repeat(1000), LIMITS);
    assert!(shaped.matches("<div>").count() <= 4, "{shaped}");
}

#[test]
fn unclosed_constructs_run_to_the_end() {
    for page in ["<div><!-- open", "<div title=\"open", "<script>open", "<"] {
        assert_eq!(bound_shape(page, LIMITS), page);
    }
}

#[test]
fn attributes_past_the_count_are_dropped() {
    let many =
        |separator: &str| -> String { (0..1000).map(|i| format!("a{i}{separator}")).collect() };
    for attributes in [many("=1 "), many(" "), many("=\"x\" ")] {
        let shaped = bound_shape(&format!("<div {attributes}>text</div>"), LIMITS);
        assert_eq!(shaped.matches(" a").count(), MAX_ATTRIBUTES, "{shaped}");
        assert!(shaped.ends_with(">text</div>"), "{shaped}");
    }
}
