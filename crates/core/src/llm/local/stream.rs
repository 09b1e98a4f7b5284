//! Streaming a final answer while the model is still writing its JSON: once the output starts
//! with [`FINAL_PREFIX`], the JSON string that follows is decoded as it grows and handed on as
//! text; a tool call (or anything else) is held until the whole answer is parsed.
//!
//! Invariant: the text handed on is always a prefix of the decoded content of the final
//! answer; an escape sequence cut between two pieces is held until it is complete.

use super::contract::FINAL_PREFIX;

/// Decodes the content of a final answer incrementally.
#[derive(Debug, Default)]
pub(crate) struct FinalStreamer {
    raw: String,
    /// Bytes of `raw` decoded so far (inside the string), once the prefix was seen.
    decoded_to: Option<usize>,
    /// The string ended (its closing quote was seen).
    closed: bool,
    /// The output is not a final answer in the grammar's shape: nothing is streamed.
    other: bool,
}

impl FinalStreamer {
    /// Adds a piece of output; returns the newly decoded text of the answer, if any.
    pub(crate) fn push(&mut self, piece: &str) -> String {
        self.raw.push_str(piece);
        if self.other || self.closed {
            return String::new();
        }
        if self.decoded_to.is_none() {
            let start = self.raw.trim_start();
            if start.starts_with(FINAL_PREFIX) {
                let skipped = self.raw.len() - start.len();
                self.decoded_to = Some(skipped + FINAL_PREFIX.len());
            } else if !FINAL_PREFIX.starts_with(start) {
                self.other = true;
                return String::new();
            } else {
                return String::new();
            }
        }
        self.decode()
    }

    /// Everything written so far.
    pub(crate) fn raw(&self) -> &str {
        &self.raw
    }

    fn decode(&mut self) -> String {
        let Some(from) = self.decoded_to else {
            return String::new();
        };
        let Some(rest) = self.raw.get(from..) else {
            return String::new();
        };
        let mut out = String::new();
        let mut consumed = 0;
        let mut chars = rest.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '"' => {
                    self.closed = true;
                    consumed = at + 1;
                    break;
                }
                '\\' => {
                    let Some((_, kind)) = chars.next() else { break };
                    let decoded = match kind {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        'u' => match unicode_escape(rest, at) {
                            Escape::Char(decoded, length) => {
                                for _ in 0..length - 2 {
                                    chars.next();
                                }
                                out.push(decoded);
                                consumed = at + length;
                                continue;
                            }
                            Escape::Incomplete => break,
                            Escape::Invalid => '\u{fffd}',
                        },
                        other => other,
                    };
                    out.push(decoded);
                    consumed = chars.clone().next().map_or(rest.len(), |(next, _)| next);
                }
                other => {
                    out.push(other);
                    consumed = at + other.len_utf8();
                }
            }
        }
        self.decoded_to = Some(from + consumed);
        out
    }
}

enum Escape {
    /// The character and the escape's length in bytes (`\uXXXX`, or two for a surrogate pair).
    Char(char, usize),
    Incomplete,
    Invalid,
}

/// The `\uXXXX` escape at `at` of `text` (a surrogate pair read as one character).
fn unicode_escape(text: &str, at: usize) -> Escape {
    let hex = |from: usize| -> Option<Option<u32>> {
        let digits = text.get(from..from + 4)?;
        Some(u32::from_str_radix(digits, 16).ok())
    };
    let Some(first) = hex(at + 2) else {
        return Escape::Incomplete;
    };
    let Some(first) = first else {
        return Escape::Invalid;
    };
    if (0xD800..0xDC00).contains(&first) {
        let Some(tail) = text.get(at + 6..at + 8) else {
            return Escape::Incomplete;
        };
        if tail != "\\u" {
            return Escape::Invalid;
        }
        let Some(second) = hex(at + 8) else {
            return Escape::Incomplete;
        };
        let Some(second) = second.filter(|low| (0xDC00..0xE000).contains(low)) else {
            return Escape::Invalid;
        };
        let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return char::from_u32(code).map_or(Escape::Invalid, |c| Escape::Char(c, 12));
    }
    char::from_u32(first).map_or(Escape::Invalid, |c| Escape::Char(c, 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(pieces: &[&str]) -> String {
        let mut streamer = FinalStreamer::default();
        pieces.iter().map(|piece| streamer.push(piece)).collect()
    }

    #[test]
    fn a_final_answer_streams_as_decoded_text_whatever_the_cuts() {
        let raw = r#"{"type":"final","content":"Hi \"you\"\n\u00e9\ud83d\ude00 ok"}"#;
        let whole = "Hi \"you\"\n\u{e9}\u{1F600} ok";
        for cut in 0..raw.len() {
            let (a, b) = raw.split_at(cut);
            assert_eq!(streamed(&[a, b]), whole, "cut at {cut}");
        }
        let bytes: Vec<String> = raw.chars().map(String::from).collect();
        let pieces: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(streamed(&pieces), whole);
    }

    #[test]
    fn tool_calls_and_other_output_are_not_streamed() {
        assert_eq!(
            streamed(&[r#"{"type":"tool_"#, r#"calls","calls":[]}"#]),
            ""
        );
        assert_eq!(streamed(&["Hello ", "world"]), "");
        let mut streamer = FinalStreamer::default();
        streamer.push("{\"ty");
        assert_eq!(streamer.raw(), "{\"ty");
    }
}
