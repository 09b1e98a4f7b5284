//! Untrusted HTML parsed into a tree of bounded shape, the only way pages become trees here.
//!
//! Three layers, each a bound the next relies on:
//! 1. [`super::shape::bound_shape`] rewrites the text so that ordinary hostile shapes (deep
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

use dom_query::{Document, NodeRef};
use html5ever::tendril::{StrTendril, TendrilSink};

use super::shape::{ShapeLimits, bound_shape};

/// Elements the pre-pass lets open at once (browsers cope with far more; no page worth
/// reading nests this deep).
pub(crate) const MAX_DEPTH: usize = 256;
/// Start tags the pre-pass keeps (a large article page has a few thousand).
pub(crate) const MAX_ELEMENTS: usize = 60_000;
/// Depth past which elements are flattened to their text. Above [`MAX_DEPTH`]: the tree
/// builder adds elements the text does not name (`tbody`, reopened formatting elements).
pub(crate) const MAX_TREE_DEPTH: usize = 512;
/// Nodes (elements, text, comments) after which parsing stops.
const MAX_NODES: usize = 250_000;
/// Depth of the newest branch after which parsing stops.
const MAX_BRANCH_DEPTH: usize = 2 * MAX_TREE_DEPTH;
/// Bytes parsed between two checks.
const CHUNK_BYTES: usize = 16 * 1024;

/// Parses `html` into a tree within the bounds above; `None` once `stopped()` says so.
pub(crate) fn bounded_document(html: &str, stopped: &dyn Fn() -> bool) -> Option<Document> {
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

#[cfg(test)]
mod tests;
