//! `GetKnowledge` and `SearchKnowledge`: reading stored results back.
//!
//! Both validate their arguments before touching storage, answer JSON, and report problems as
//! `{"error":{"code","message"}}` with the codes `invalid_arguments`, `invalid_regex`,
//! `knowledge_not_found`, `conversation_unavailable` and `storage_failure`.
//!
//! Regular expressions use the `regex` crate, whose syntax is RE2's (the original used RE2J):
//! no backreferences, no lookaround, linear-time matching, case-sensitive unless `(?i)`, inline
//! flags `i m s U` (plus `x` for verbose patterns, which RE2J lacks). Differences a pattern
//! written for RE2J may meet: `\d`, `\w`, `\s` and `\b` are Unicode-aware here (RE2J: ASCII
//! only; write `(?-u:\w)` for the ASCII meaning), `\C` and `\Q…\E` are not supported, and
//! `(?<name>…)` is accepted besides `(?P<name>…)`. Compiled patterns are capped in size so a
//! hostile pattern is refused instead of eating memory.
//!
//! A truncated entry is searched as two separate texts, head and tail: no match spans the
//! omitted middle, and `^`/`$` anchor at each part's edges. Offsets are UTF-16 code units of
//! the original result; an excerpt is widened rather than split inside a surrogate pair.

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{KnowledgeContent, KnowledgeEntry, KnowledgeError, KnowledgeStore, utf16_len};
use crate::agent::core_tool_types::CoreOutput;

/// Context around a match, in UTF-16 units, when none is asked for.
pub(crate) const DEFAULT_CONTEXT_CHARS: i64 = 256;
/// Largest context a caller may ask for.
pub(crate) const MAX_CONTEXT_CHARS: i64 = 4096;
/// Matches returned when none is asked for.
pub(crate) const DEFAULT_MAX_MATCHES: i64 = 20;
/// Most matches a caller may ask for.
pub(crate) const MAX_MATCHES: i64 = 100;
/// Largest compiled pattern accepted.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Arguments of `GetKnowledge`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GetKnowledgeArgs {
    /// Opaque Knowledge ID from a tool result in this conversation.
    pub knowledge_id: String,
}

/// Arguments of `SearchKnowledge`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SearchKnowledgeArgs {
    /// Opaque Knowledge ID from a tool result in this conversation.
    pub knowledge_id: String,
    /// RE2-style regular expression (no backreferences or lookaround); case-sensitive unless
    /// changed with inline flags such as (?i).
    pub regex: String,
    /// UTF-16 units of context before each match (default 256, 0..4096).
    #[serde(default)]
    pub chars_before: Option<i64>,
    /// UTF-16 units of context after each match (default 256, 0..4096).
    #[serde(default)]
    pub chars_after: Option<i64>,
    /// Most matches to return (default 20, 1..100).
    #[serde(default)]
    pub max_matches: Option<i64>,
}

/// The error codes these tools answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidArguments,
    InvalidRegex,
    NotFound,
    ConversationUnavailable,
    StorageFailure,
}

impl Code {
    fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::InvalidRegex => "invalid_regex",
            Self::NotFound => "knowledge_not_found",
            Self::ConversationUnavailable => "conversation_unavailable",
            Self::StorageFailure => "storage_failure",
        }
    }
}

fn error(code: Code, message: impl Into<String>) -> CoreOutput {
    CoreOutput::error(code.as_str(), message)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Metadata<'a> {
    knowledge_id: &'a str,
    source_tool: &'a str,
    original_length: usize,
    stored_length: usize,
    truncated: bool,
}

impl<'a> Metadata<'a> {
    fn of(entry: &'a KnowledgeEntry) -> Self {
        Self {
            knowledge_id: &entry.id,
            source_tool: &entry.source_tool,
            original_length: entry.original_length,
            stored_length: entry.stored_length(),
            truncated: entry.truncated(),
        }
    }
}

#[derive(Serialize)]
struct Segment<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

#[derive(Serialize)]
struct Range {
    start: usize,
    end: usize,
}

#[derive(Serialize)]
struct FullRead<'a> {
    #[serde(flatten)]
    metadata: Metadata<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    head: Option<Segment<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tail: Option<Segment<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    omitted: Option<Range>,
}

/// One match: its text and UTF-16 range, and the surrounding excerpt when it is wider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KnowledgeMatch {
    /// The matched text.
    pub text: String,
    /// Start offset in the original result.
    pub start: usize,
    /// End offset (exclusive).
    pub end: usize,
    /// The match with its context, when that differs from the match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    /// Start offset of the excerpt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt_start: Option<usize>,
    /// End offset of the excerpt (exclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt_end: Option<usize>,
}

#[derive(Serialize)]
struct SearchRead<'a> {
    #[serde(flatten)]
    metadata: Metadata<'a>,
    matches: Vec<KnowledgeMatch>,
}

fn json(value: &impl Serialize) -> CoreOutput {
    match serde_json::to_string(value) {
        Ok(text) => CoreOutput::ok(text),
        Err(problem) => error(Code::StorageFailure, problem.to_string()),
    }
}

fn parse<A: serde::de::DeserializeOwned>(arguments: Value) -> Result<A, CoreOutput> {
    crate::tools::parse_arguments::<A>(arguments).map_err(|problem| {
        let message = match problem {
            crate::tools::ToolError::InvalidArguments(message) => message,
            other => other.to_string(),
        };
        error(Code::InvalidArguments, message)
    })
}

async fn load(
    store: &KnowledgeStore,
    chat_id: &str,
    knowledge_id: &str,
) -> Result<KnowledgeEntry, CoreOutput> {
    match store.get(chat_id, knowledge_id).await {
        Ok(Some(entry)) => Ok(entry),
        Ok(None) => Err(error(
            Code::NotFound,
            format!(
                "Knowledge is unavailable in this conversation: {}",
                knowledge_id.trim()
            ),
        )),
        Err(KnowledgeError::ConversationUnavailable) => Err(error(
            Code::ConversationUnavailable,
            KnowledgeError::ConversationUnavailable.to_string(),
        )),
        Err(problem) => Err(error(Code::StorageFailure, problem.to_string())),
    }
}

/// `GetKnowledge`: everything that was kept of an entry.
pub(crate) async fn get_knowledge(
    store: &KnowledgeStore,
    chat_id: &str,
    arguments: Value,
) -> CoreOutput {
    let args: GetKnowledgeArgs = match parse(arguments) {
        Ok(args) => args,
        Err(output) => return output,
    };
    if args.knowledge_id.trim().is_empty() {
        return error(Code::InvalidArguments, "knowledgeId must not be blank.");
    }
    let entry = match load(store, chat_id, &args.knowledge_id).await {
        Ok(entry) => entry,
        Err(output) => return output,
    };
    let metadata = Metadata::of(&entry);
    let read = match &entry.content {
        KnowledgeContent::Complete(text) => FullRead {
            metadata,
            text: Some(text),
            head: None,
            tail: None,
            omitted: None,
        },
        KnowledgeContent::Truncated { head, tail } => {
            let head_end = utf16_len(head);
            let tail_start = entry.original_length - utf16_len(tail);
            FullRead {
                metadata,
                text: None,
                head: Some(Segment {
                    text: head,
                    start: 0,
                    end: head_end,
                }),
                tail: Some(Segment {
                    text: tail,
                    start: tail_start,
                    end: entry.original_length,
                }),
                omitted: Some(Range {
                    start: head_end,
                    end: tail_start,
                }),
            }
        }
    };
    json(&read)
}

fn check_range(
    name: &str,
    value: Option<i64>,
    min: i64,
    max: i64,
    default: i64,
) -> Result<usize, String> {
    let value = value.unwrap_or(default);
    if !(min..=max).contains(&value) {
        return Err(format!("{name} must be between {min} and {max}."));
    }
    usize::try_from(value).map_err(|_| format!("{name} must be between {min} and {max}."))
}

/// Compiles a Knowledge search pattern.
pub(crate) fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// `SearchKnowledge`: matches of a pattern in what was kept of an entry.
pub(crate) async fn search_knowledge(
    store: &KnowledgeStore,
    chat_id: &str,
    arguments: Value,
) -> CoreOutput {
    let args: SearchKnowledgeArgs = match parse(arguments) {
        Ok(args) => args,
        Err(output) => return output,
    };
    if args.knowledge_id.trim().is_empty() {
        return error(Code::InvalidArguments, "knowledgeId must not be blank.");
    }
    if args.regex.trim().is_empty() {
        return error(Code::InvalidArguments, "regex must not be blank.");
    }
    let limits = check_range(
        "charsBefore",
        args.chars_before,
        0,
        MAX_CONTEXT_CHARS,
        DEFAULT_CONTEXT_CHARS,
    )
    .and_then(|before| {
        let after = check_range(
            "charsAfter",
            args.chars_after,
            0,
            MAX_CONTEXT_CHARS,
            DEFAULT_CONTEXT_CHARS,
        )?;
        let most = check_range(
            "maxMatches",
            args.max_matches,
            1,
            MAX_MATCHES,
            DEFAULT_MAX_MATCHES,
        )?;
        Ok((before, after, most))
    });
    let (before, after, most) = match limits {
        Ok(limits) => limits,
        Err(message) => return error(Code::InvalidArguments, message),
    };
    let regex = match compile(&args.regex) {
        Ok(regex) => regex,
        Err(problem) => return error(Code::InvalidRegex, problem.to_string()),
    };
    let entry = match load(store, chat_id, &args.knowledge_id).await {
        Ok(entry) => entry,
        Err(output) => return output,
    };
    let matches = find(&entry, &regex, before, after, most);
    json(&SearchRead {
        metadata: Metadata::of(&entry),
        matches,
    })
}

/// Matches of `regex` in the kept parts of `entry`, head first, at most `most`.
pub(crate) fn find(
    entry: &KnowledgeEntry,
    regex: &Regex,
    before: usize,
    after: usize,
    most: usize,
) -> Vec<KnowledgeMatch> {
    let segments: Vec<(&str, usize)> = match &entry.content {
        KnowledgeContent::Complete(text) => vec![(text.as_str(), 0)],
        KnowledgeContent::Truncated { head, tail } => vec![
            (head.as_str(), 0),
            (tail.as_str(), entry.original_length - utf16_len(tail)),
        ],
    };
    let mut matches = Vec::new();
    for (text, offset) in segments {
        let mut cursor = Utf16Cursor::default();
        for found in regex.find_iter(text) {
            if matches.len() >= most {
                return matches;
            }
            let start = cursor.advance(text, found.start());
            let end = cursor.advance(text, found.end());
            let (excerpt_from, excerpt_start) = widen_back(text, found.start(), start, before);
            let (excerpt_to, excerpt_end) = widen_forward(text, found.end(), end, after);
            let wider = excerpt_start != start || excerpt_end != end;
            matches.push(KnowledgeMatch {
                text: found.as_str().to_owned(),
                start: offset + start,
                end: offset + end,
                excerpt: wider.then(|| text[excerpt_from..excerpt_to].to_owned()),
                excerpt_start: wider.then_some(offset + excerpt_start),
                excerpt_end: wider.then_some(offset + excerpt_end),
            });
        }
    }
    matches
}

/// Converts increasing byte offsets of one text to UTF-16 offsets without rescanning.
#[derive(Default)]
struct Utf16Cursor {
    byte: usize,
    units: usize,
}

impl Utf16Cursor {
    fn advance(&mut self, text: &str, byte: usize) -> usize {
        if byte > self.byte {
            self.units += utf16_len(&text[self.byte..byte]);
            self.byte = byte;
        }
        self.units
    }
}

/// Moves back from (`byte`, `units`) by at least `budget` UTF-16 units or to the start; a
/// character straddling the limit is included whole.
fn widen_back(text: &str, byte: usize, units: usize, budget: usize) -> (usize, usize) {
    let (mut byte, mut taken) = (byte, 0);
    for character in text[..byte].chars().rev() {
        if taken >= budget {
            break;
        }
        taken += character.len_utf16();
        byte -= character.len_utf8();
    }
    (byte, units - taken)
}

/// Moves forward from (`byte`, `units`) by at least `budget` units or to the end.
fn widen_forward(text: &str, byte: usize, units: usize, budget: usize) -> (usize, usize) {
    let (mut byte, mut taken) = (byte, 0);
    for character in text[byte..].chars() {
        if taken >= budget {
            break;
        }
        taken += character.len_utf16();
        byte += character.len_utf8();
    }
    (byte, units + taken)
}
