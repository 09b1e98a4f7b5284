//! Text files as `EditFile` and `NewFile` see them: which files count as editable text, and
//! exact replacement that is line-ending aware.
//!
//! Matching happens on a view of the file where every CRLF and lone CR is LF, and `oldString`
//! and `newString` are normalized the same way, so a model that writes `\n` still matches a CRLF
//! file. The result is rebuilt from the raw text: bytes outside the replaced ranges are kept
//! exactly (mixed line endings survive), and line breaks inside a replacement take the endings
//! of the text they replace (then the last of those, or the file's usual ending).

use std::path::Path;

use crate::tools::ToolError;

/// Extensions that are never plain text (the original's list).
const NON_TEXT_EXTENSIONS: &[&str] = &[
    "7z", "avi", "bmp", "class", "doc", "docx", "dmg", "exe", "gif", "gz", "heic", "heif", "ico",
    "jar", "jpeg", "jpg", "key", "mov", "mp3", "mp4", "odp", "ods", "odt", "otf", "pdf", "png",
    "ppt", "pptx", "so", "svgz", "tar", "ttf", "wav", "webm", "webp", "xls", "xlsx", "zip",
];

/// How many leading bytes the binary check samples.
const BINARY_SAMPLE_BYTES: usize = 1024;

/// Refuses paths whose extension names a binary or office format.
pub(super) fn require_text_extension(path: &Path, action: &str) -> Result<(), ToolError> {
    let Some(extension) = path.extension().and_then(|extension| extension.to_str()) else {
        return Ok(());
    };
    let extension = extension.to_ascii_lowercase();
    if NON_TEXT_EXTENSIONS.contains(&extension.as_str()) {
        return Err(ToolError::InvalidArguments(format!(
            "only plain text, code and config files can be {action}; .{extension} is not one"
        )));
    }
    Ok(())
}

/// The original's heuristic: any NUL byte, or more than a fifth of the first KiB being control
/// characters other than tab, line feed, form feed and carriage return.
pub(super) fn is_likely_binary(bytes: &[u8]) -> bool {
    if bytes.contains(&0) {
        return true;
    }
    let sample = &bytes[..bytes.len().min(BINARY_SAMPLE_BYTES)];
    let controls = sample
        .iter()
        .filter(|&&byte| byte < 0x20 && !matches!(byte, 0x09 | 0x0A | 0x0C | 0x0D))
        .count();
    controls * 5 > sample.len()
}

/// Decodes bytes `EditFile` may edit: not binary, valid UTF-8.
pub(super) fn decode_editable(bytes: Vec<u8>) -> Result<String, ToolError> {
    if is_likely_binary(&bytes) {
        return Err(ToolError::InvalidArguments(
            "only plain text, code and config files can be edited; this file looks binary".into(),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        ToolError::InvalidArguments(
            "only UTF-8 plain text, code and config files can be edited; this file is not valid UTF-8"
                .into(),
        )
    })
}

/// Every CRLF and lone CR as LF.
pub(super) fn normalize_line_endings(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// A file's text with its LF-normalized view and a map back to raw offsets.
struct NormalizedText<'a> {
    raw: &'a str,
    normalized: String,
    /// Normalized offsets of the `\n`s that stand for a CRLF (each one raw byte shorter).
    collapsed: Vec<usize>,
}

impl<'a> NormalizedText<'a> {
    fn new(raw: &'a str) -> Self {
        let mut normalized = String::with_capacity(raw.len());
        let mut collapsed = Vec::new();
        let mut rest = raw;
        while let Some(position) = rest.find('\r') {
            normalized.push_str(&rest[..position]);
            if rest[position + 1..].starts_with('\n') {
                collapsed.push(normalized.len());
                rest = &rest[position + 2..];
            } else {
                rest = &rest[position + 1..];
            }
            normalized.push('\n');
        }
        normalized.push_str(rest);
        Self {
            raw,
            normalized,
            collapsed,
        }
    }

    /// The raw offset of a normalized offset (a match boundary).
    fn raw_offset(&self, normalized: usize) -> usize {
        normalized
            + self
                .collapsed
                .partition_point(|&position| position < normalized)
    }

    /// The line ending the file mostly uses (CRLF if any, then CR, else LF), as the original.
    fn preferred_ending(&self) -> &'static str {
        if self.raw.contains("\r\n") {
            "\r\n"
        } else if self.raw.contains('\r') {
            "\r"
        } else {
            "\n"
        }
    }
}

/// An edit ready to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Replacement {
    /// The new raw content.
    pub updated_raw: String,
    /// The old content, LF-normalized (for the diff).
    pub original_normalized: String,
    /// The new content, LF-normalized (for the diff).
    pub updated_normalized: String,
    /// How many occurrences were replaced.
    pub count: usize,
}

/// Replaces `old` with `new` in `raw` (once, or everywhere with `replace_all`), or explains why
/// it cannot: empty `old`, nothing to change, not found, ambiguous.
pub(super) fn replace(
    raw: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Replacement, ToolError> {
    let old = normalize_line_endings(old);
    let new = normalize_line_endings(new);
    if old.is_empty() {
        return Err(ToolError::InvalidArguments(
            "oldString must not be empty; use NewFile to create files".into(),
        ));
    }
    if old == new {
        return Err(ToolError::InvalidArguments(
            "no changes to make: oldString and newString are the same".into(),
        ));
    }
    let text = NormalizedText::new(raw);
    let starts: Vec<usize> = text
        .normalized
        .match_indices(old.as_str())
        .map(|(start, _)| start)
        .collect();
    match starts.len() {
        0 => {
            return Err(ToolError::InvalidArguments(
                "oldString was not found in the file; it must match the current content exactly, \
                 including whitespace and indentation (read the file again)"
                    .into(),
            ));
        }
        1 => {}
        count if !replace_all => {
            return Err(ToolError::InvalidArguments(format!(
                "oldString occurs {count} times, but replaceAll is false; include more \
                 surrounding text to make it unique, or set replaceAll to true"
            )));
        }
        _ => {}
    }
    let mut updated_raw = String::with_capacity(raw.len());
    let mut updated_normalized = String::with_capacity(text.normalized.len());
    let (mut raw_cursor, mut normalized_cursor) = (0, 0);
    for &start in &starts {
        let end = start + old.len();
        let (raw_start, raw_end) = (text.raw_offset(start), text.raw_offset(end));
        updated_raw.push_str(&raw[raw_cursor..raw_start]);
        updated_raw.push_str(&with_endings_of(
            &new,
            &raw[raw_start..raw_end],
            text.preferred_ending(),
        ));
        updated_normalized.push_str(&text.normalized[normalized_cursor..start]);
        updated_normalized.push_str(&new);
        raw_cursor = raw_end;
        normalized_cursor = end;
    }
    updated_raw.push_str(&raw[raw_cursor..]);
    updated_normalized.push_str(&text.normalized[normalized_cursor..]);
    if updated_raw == raw {
        return Err(ToolError::InvalidArguments(
            "the replacement produced no changes".into(),
        ));
    }
    Ok(Replacement {
        updated_raw,
        original_normalized: text.normalized,
        updated_normalized,
        count: starts.len(),
    })
}

/// `normalized` with each `\n` written as the next line ending found in `template` (the raw
/// text being replaced), then as the last of those, then as `preferred`.
fn with_endings_of(normalized: &str, template: &str, preferred: &'static str) -> String {
    if !normalized.contains('\n') {
        return normalized.to_owned();
    }
    let endings = line_endings(template);
    let fallback = endings.last().copied().unwrap_or(preferred);
    let mut next = endings.into_iter();
    let mut out = String::with_capacity(normalized.len() + normalized.len() / 16);
    for (index, line) in normalized.split('\n').enumerate() {
        if index > 0 {
            out.push_str(next.next().unwrap_or(fallback));
        }
        out.push_str(line);
    }
    out
}

/// The line endings in `text`, in order.
fn line_endings(text: &str) -> Vec<&'static str> {
    let bytes = text.as_bytes();
    let mut endings = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\r' if bytes.get(index + 1) == Some(&b'\n') => {
                endings.push("\r\n");
                index += 2;
            }
            b'\r' => {
                endings.push("\r");
                index += 1;
            }
            b'\n' => {
                endings.push("\n");
                index += 1;
            }
            _ => index += 1,
        }
    }
    endings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(raw: &str, old: &str, new: &str, all: bool) -> String {
        replace(raw, old, new, all).unwrap().updated_raw
    }

    fn refusal(raw: &str, old: &str, new: &str, all: bool) -> String {
        match replace(raw, old, new, all) {
            Err(ToolError::InvalidArguments(message)) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn replaces_exactly_once() {
        let result = replace("one two three", "two", "2", false).unwrap();
        assert_eq!(result.updated_raw, "one 2 three");
        assert_eq!(result.count, 1);
    }

    #[test]
    fn an_lf_old_string_matches_a_crlf_file_and_keeps_crlf() {
        assert_eq!(
            replaced("Hello\r\n", "Hello\n", "Hello\nWorld\n", false),
            "Hello\r\nWorld\r\n"
        );
        assert_eq!(
            replaced("a\r\nb\r\nc\r\n", "b\nc", "B\nC\nD", false),
            "a\r\nB\r\nC\r\nD\r\n"
        );
        // A CRLF oldString matches an LF file too, and the file stays LF.
        assert_eq!(replaced("a\nb\n", "a\r\nb", "x\r\ny", false), "x\ny\n");
    }

    #[test]
    fn mixed_endings_outside_the_replacement_survive() {
        assert_eq!(
            replaced("first\r\nsecond\nthird\r\n", "second\n", "SECOND\n", false),
            "first\r\nSECOND\nthird\r\n"
        );
        assert_eq!(
            replaced("α\rβ\r\nγ\n", "β", "B", false),
            "α\rB\r\nγ\n",
            "multi-byte text and lone CRs map back exactly"
        );
    }

    #[test]
    fn replace_all_replaces_every_occurrence() {
        let result = replace("foo=1\r\nfoo=1\r\n", "foo=1", "foo=2", true).unwrap();
        assert_eq!(result.updated_raw, "foo=2\r\nfoo=2\r\n");
        assert_eq!(result.count, 2);
        assert_eq!(result.updated_normalized, "foo=2\nfoo=2\n");
        assert_eq!(result.original_normalized, "foo=1\nfoo=1\n");
    }

    #[test]
    fn refusals_say_why() {
        assert!(refusal("x", "", "y", false).contains("must not be empty"));
        assert!(refusal("x", "x", "x", false).contains("are the same"));
        assert!(refusal("x\r\n", "x\r\n", "x\n", false).contains("are the same"));
        assert!(refusal("abc", "zzz", "y", false).contains("not found"));
        assert!(refusal("x\nx\n", "x", "y", false).contains("occurs 2 times"));
    }

    #[test]
    fn binary_and_invalid_utf8_are_refused() {
        assert!(is_likely_binary(b"abc\0def"));
        assert!(is_likely_binary(&[1, 2, 3, 4, b'a']));
        assert!(!is_likely_binary(b"plain\ttext\r\n"));
        assert!(decode_editable(b"ok \xff".to_vec()).is_err());
        assert_eq!(decode_editable("é".as_bytes().to_vec()).unwrap(), "é");
        assert!(require_text_extension(Path::new("/x/photo.PNG"), "edited").is_err());
        assert!(require_text_extension(Path::new("/x/notes.md"), "edited").is_ok());
        assert!(require_text_extension(Path::new("/x/Makefile"), "edited").is_ok());
    }
}
