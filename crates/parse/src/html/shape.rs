//! A linear pre-pass that bounds the shape of untrusted HTML before a tree builder sees it.
//!
//! html5ever builds trees without recursion, but what runs on the tree afterwards (dom_query's
//! selectors, Readability's scoring and rendering) recurses on the tree's depth, and the tree
//! builder itself pays for every start tag with a walk of its open elements (quadratic in the
//! nesting). So before parsing, one pass over the text models the stack of open elements and
//! rewrites what would build an unbounded shape:
//!
//! - a start tag that would open an element deeper than [`ShapeLimits::max_depth`] is dropped
//!   (its text stays), and so is the end tag that would have closed it;
//! - after [`ShapeLimits::max_elements`] start tags, further start tags are dropped;
//! - formatting elements (`b`, `i`, `font`, …) lose their attributes, so that the spec's
//!   "Noah's Ark" clause keeps at most three identical ones in the list of active formatting
//!   elements: otherwise misnested formatting tags make the tree builder reopen an unbounded
//!   list of copies (quadratic time and memory).
//!
//! The model follows the tokenizer faithfully (comments, quoted attributes, raw text elements,
//! foreign content) and the tree builder roughly (implied ends, scope). Where it is only rough,
//! the parse that follows ([`super::document`]) still bounds the tree; this pass makes sure
//! ordinary hostile shapes never reach that point. Invariants: linear time in the input, output
//! no longer than the input, text content kept.

use std::collections::HashMap;

/// The bounds of [`bound_shape`].
#[derive(Debug, Clone, Copy)]
pub struct ShapeLimits {
    /// Most elements open at once.
    pub max_depth: usize,
    /// Most start tags kept.
    pub max_elements: usize,
}

/// Elements that never have content.
const VOID: &[&str] = &[
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
];
/// Elements whose content is text up to their end tag (in the HTML namespace).
const RAW_TEXT: &[&str] = &[
    "iframe", "noembed", "noframes", "script", "style", "textarea", "title", "xmp",
];
/// Formatting elements whose attributes are dropped (`a` keeps its link: at most one `a` is
/// ever active).
const FORMATTING: &[&str] = &[
    "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u",
];
/// Elements an end tag does not close past (the tree builder's default scope).
const SCOPE: &[&str] = &[
    "applet", "caption", "html", "marquee", "object", "table", "td", "template", "th",
];
/// Start tags that leave SVG or MathML content for HTML.
const BREAKOUT: &[&str] = &[
    "b",
    "big",
    "blockquote",
    "body",
    "br",
    "center",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "hr",
    "i",
    "img",
    "li",
    "listing",
    "menu",
    "meta",
    "nobr",
    "ol",
    "p",
    "pre",
    "ruby",
    "s",
    "small",
    "span",
    "strong",
    "strike",
    "sub",
    "sup",
    "table",
    "tt",
    "u",
    "ul",
    "var",
];
/// Foreign elements whose content is HTML again.
const INTEGRATION_POINTS: &[&str] = &[
    "annotation-xml",
    "desc",
    "foreignobject",
    "mi",
    "mn",
    "mo",
    "ms",
    "mtext",
    "title",
];
/// Start tags that end an open element of the same group near the top (`<p>…<p>`, `<li>…<li>`).
const IMPLIED_END_GROUPS: &[&[&str]] = &[
    &["p"],
    &["li"],
    &["dd", "dt"],
    &["option"],
    &["optgroup"],
    &["tr"],
    &["td", "th"],
    &["tbody", "tfoot", "thead"],
];
/// Attributes kept on a tag (the tree builder compares each new attribute with those before
/// it: quadratic in their number).
const MAX_ATTRIBUTES: usize = 64;

/// An element the model believes open.
struct Open {
    name: String,
    /// In SVG or MathML (not HTML).
    foreign: bool,
}

/// A tag found in the text.
struct Tag {
    /// Lower-cased name.
    name: String,
    /// Index just past its `>`.
    end: usize,
    /// Written `<…/>`.
    self_closing: bool,
    /// Where the first attribute past [`MAX_ATTRIBUTES`] starts, when there is one.
    cut: Option<usize>,
}

/// Rewrites `html` so that the tree built from it stays within `limits`; see the module docs.
pub fn bound_shape(html: &str, limits: ShapeLimits) -> String {
    let mut shaper = Shaper {
        html,
        out: String::with_capacity(html.len()),
        stack: Vec::new(),
        dropped: HashMap::new(),
        elements: 0,
        limits,
    };
    shaper.run();
    shaper.out
}

struct Shaper<'a> {
    html: &'a str,
    out: String,
    stack: Vec<Open>,
    /// End tags still to drop, by name (their start tags were dropped).
    dropped: HashMap<String, usize>,
    elements: usize,
    limits: ShapeLimits,
}

impl Shaper<'_> {
    fn run(&mut self) {
        let html = self.html;
        let bytes = html.as_bytes();
        let mut position = 0;
        while let Some(offset) = html[position..].find('<') {
            let at = position + offset;
            self.out.push_str(&html[position..at]);
            let next = bytes.get(at + 1).copied();
            position = match next {
                Some(b'!') => self.copy_until(at, comment_end(html, at)),
                Some(b'?') => self.copy_until(at, find_from(html, at, ">").map(|i| i + 1)),
                Some(b'/') => match bytes.get(at + 2) {
                    Some(letter) if letter.is_ascii_alphabetic() => match read_tag(html, at + 2) {
                        Some(tag) => self.end_tag(at, tag),
                        None => self.copy_until(at, None),
                    },
                    _ => self.copy_until(at, find_from(html, at, ">").map(|i| i + 1)),
                },
                Some(letter) if letter.is_ascii_alphabetic() => match read_tag(html, at + 1) {
                    Some(tag) => self.start_tag(at, tag),
                    None => self.copy_until(at, None),
                },
                _ => {
                    self.out.push('<');
                    at + 1
                }
            };
            if position >= html.len() {
                return;
            }
        }
        self.out.push_str(&html[position..]);
    }

    /// Copies `html[at..end]` as it is (to the end of the text when `end` is `None`) and
    /// returns where to go on.
    fn copy_until(&mut self, at: usize, end: Option<usize>) -> usize {
        let end = end.unwrap_or(self.html.len());
        self.out.push_str(&self.html[at..end]);
        end
    }

    fn start_tag(&mut self, at: usize, tag: Tag) -> usize {
        let name = tag.name.as_str();
        let in_foreign = self
            .stack
            .last()
            .is_some_and(|top| top.foreign && !INTEGRATION_POINTS.contains(&top.name.as_str()));
        let breakout = in_foreign && BREAKOUT.contains(&name);
        if breakout {
            while self.stack.last().is_some_and(|top| top.foreign) {
                self.stack.pop();
            }
        }
        let foreign = matches!(name, "svg" | "math") || (in_foreign && !breakout);
        let opens = !(VOID.contains(&name) || (foreign && tag.self_closing));
        // Inside a `select` the tree builder may ignore a raw text start tag and read what
        // follows as markup: there the content is scanned as markup too.
        let raw = !foreign && RAW_TEXT.contains(&name) && !self.is_open("select");
        let plaintext = !foreign && name == "plaintext";
        if opens && !raw {
            self.implied_end(name);
        }
        let too_deep = opens && !raw && self.stack.len() >= self.limits.max_depth;
        if self.elements >= self.limits.max_elements || too_deep {
            if raw {
                // Dropped with its text (scripts, styles, titles: nothing worth keeping).
                return raw_text_end(self.html, tag.end, name).unwrap_or(self.html.len());
            }
            if opens {
                *self.dropped.entry(tag.name).or_default() += 1;
            }
            return tag.end;
        }
        self.elements += 1;
        if !foreign && FORMATTING.contains(&name) {
            self.out.push('<');
            self.out.push_str(name);
            self.out.push('>');
        } else if let Some(cut) = tag.cut {
            self.out.push_str(&self.html[at..cut]);
            self.out.push_str(if tag.self_closing { "/>" } else { ">" });
        } else {
            self.out.push_str(&self.html[at..tag.end]);
        }
        if plaintext {
            return self.copy_until(tag.end, None);
        }
        if raw {
            // The content is text: copy it and its end tag as they are.
            let end = raw_text_end(self.html, tag.end, name);
            return self.copy_until(tag.end, end);
        }
        if opens {
            self.stack.push(Open {
                name: tag.name,
                foreign,
            });
        }
        tag.end
    }

    /// Whether an HTML element called `name` is open.
    fn is_open(&self, name: &str) -> bool {
        self.stack
            .iter()
            .any(|open| !open.foreign && open.name == name)
    }

    /// Pops the current element when it is of `name`'s group (the tree builder's implied end
    /// tags, for the groups where pages usually leave them out; it looks further down, so this
    /// only ever counts deeper than it nests).
    fn implied_end(&mut self, name: &str) {
        let Some(group) = IMPLIED_END_GROUPS
            .iter()
            .find(|group| group.contains(&name))
        else {
            return;
        };
        if self
            .stack
            .last()
            .is_some_and(|open| !open.foreign && group.contains(&open.name.as_str()))
        {
            self.stack.pop();
        }
    }

    fn end_tag(&mut self, at: usize, tag: Tag) -> usize {
        if let Some(count) = self.dropped.get_mut(&tag.name) {
            *count -= 1;
            if *count == 0 {
                self.dropped.remove(&tag.name);
            }
            return tag.end;
        }
        let mut found = None;
        for (index, open) in self.stack.iter().enumerate().rev() {
            if open.name == tag.name {
                found = Some(index);
                break;
            }
            if !open.foreign && SCOPE.contains(&open.name.as_str()) {
                break;
            }
        }
        match found {
            Some(index) => self.stack.truncate(index),
            // Closes nothing: the tree builder ignores most of these, but `</p>` and `</br>`
            // add an element, so they count as one.
            None if self.elements < self.limits.max_elements => self.elements += 1,
            None => return tag.end,
        }
        self.out.push_str(&self.html[at..tag.end]);
        tag.end
    }
}

/// Finds `needle` at or after `from`.
fn find_from(html: &str, from: usize, needle: &str) -> Option<usize> {
    html.get(from..)?.find(needle).map(|offset| from + offset)
}

/// Where a `<!…` construct starting at `at` ends: a comment at its `-->` or `--!>`, anything
/// else (doctype, bogus comment) at the next `>`. `None`: it runs to the end of the text.
fn comment_end(html: &str, at: usize) -> Option<usize> {
    if !html[at..].starts_with("<!--") {
        return find_from(html, at, ">").map(|index| index + 1);
    }
    // `<!-->` and `<!--->` are (abruptly) closed comments; `--!>` closes one too.
    let closed = find_from(html, at + 2, "-->").map(|index| index + 3);
    let banged = find_from(html, at + 4, "--!>").map(|index| index + 4);
    match (closed, banged) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Where the raw text of `name` that starts at `from` ends: just past its end tag.
fn raw_text_end(html: &str, from: usize, name: &str) -> Option<usize> {
    let bytes = html.as_bytes();
    let mut position = from;
    while let Some(at) = find_from(html, position, "</") {
        let name_end = at + 2 + name.len();
        let matches = bytes
            .get(at + 2..name_end)
            .is_some_and(|candidate| candidate.eq_ignore_ascii_case(name.as_bytes()));
        let delimited = matches!(
            bytes.get(name_end),
            Some(b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>')
        );
        if matches && delimited {
            return read_tag(html, at + 2).map(|tag| tag.end);
        }
        position = at + 2;
    }
    None
}

/// States of the attribute part of a tag, as the tokenizer has them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before an attribute name: `=` here starts a name.
    BeforeName,
    /// In an attribute name: `=` starts its value.
    AfterName,
    /// Spaces after an attribute name: `=` starts its value, anything else a new name.
    AfterNameSpace,
    BeforeValue,
    Quoted(u8),
    Unquoted,
    /// Just after `/`.
    Slash,
}

/// Reads the tag whose name starts at `name_start` (just after `<` or `</`). `None`: the text
/// ends inside the tag (the tokenizer drops such a tag).
fn read_tag(html: &str, name_start: usize) -> Option<Tag> {
    let bytes = html.as_bytes();
    let is_space = |byte: u8| matches!(byte, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ');
    let mut index = name_start;
    while index < bytes.len() && !is_space(bytes[index]) && !matches!(bytes[index], b'/' | b'>') {
        index += 1;
    }
    let name = html.get(name_start..index)?.to_ascii_lowercase();
    let mut state = State::BeforeName;
    let mut attributes = 0;
    let mut cut = None;
    while let Some(&byte) = bytes.get(index) {
        index += 1;
        let before = state;
        state = match (state, byte) {
            (State::Quoted(quote), byte) if byte == quote => State::BeforeName,
            (State::Quoted(quote), _) => State::Quoted(quote),
            (State::Slash, b'>') => {
                return Some(Tag {
                    name,
                    end: index,
                    self_closing: true,
                    cut,
                });
            }
            (_, b'>') => {
                return Some(Tag {
                    name,
                    end: index,
                    self_closing: false,
                    cut,
                });
            }
            (State::BeforeValue, b'"' | b'\'') => State::Quoted(byte),
            (State::BeforeValue, byte) if is_space(byte) => State::BeforeValue,
            (State::BeforeValue, _) => State::Unquoted,
            (State::Unquoted, byte) if is_space(byte) => State::BeforeName,
            (State::Unquoted, _) => State::Unquoted,
            (State::AfterName | State::AfterNameSpace, b'=') => State::BeforeValue,
            (_, b'/') => State::Slash,
            (_, byte) if is_space(byte) => match state {
                State::AfterName | State::AfterNameSpace => State::AfterNameSpace,
                _ => State::BeforeName,
            },
            (_, _) => State::AfterName,
        };
        if state == State::AfterName && before != State::AfterName {
            attributes += 1;
            if attributes == MAX_ATTRIBUTES + 1 {
                cut = Some(index - 1);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
