//! What Souz's answers look like in Telegram: split into messages of at most
//! [`MAX_MESSAGE_UNITS`] UTF-16 code units (how the Bot API counts), on paragraph boundaries
//! where there is one, and escaped for the `MarkdownV2` parse mode so every character shows as
//! written.
//!
//! Invariants: splitting loses nothing but the blanks at a cut; every chunk is non-empty and
//! within the limit; an escaped chunk has no special character that is not preceded by a
//! backslash, so Telegram never refuses it with "can't parse entities".

/// The Bot API's limit on a message's text after entity parsing, in UTF-16 code units.
pub(crate) const MAX_MESSAGE_UNITS: usize = 4096;

/// The characters `MarkdownV2` reserves (and the backslash that escapes them).
pub(crate) const SPECIAL: &[char] = &[
    '_', '*', '[', ']', '(', ')', '~', '`', '>', '#', '+', '-', '=', '|', '{', '}', '.', '!', '\\',
];

/// `text` with every `MarkdownV2` special character escaped.
pub(crate) fn escape_markdown_v2(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for character in text.chars() {
        if SPECIAL.contains(&character) {
            out.push('\\');
        }
        out.push(character);
    }
    out
}

/// `text` cut into chunks of at most `limit` UTF-16 code units each: at the last paragraph
/// break in the second half of the window, else the last line break there, else the last
/// space there, else at the limit. Blanks around a cut are dropped; an all-blank text gives
/// no chunk.
pub(crate) fn split_message(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(1);
    let mut chunks = Vec::new();
    let mut rest = text.trim();
    while utf16_len(rest) > limit {
        let window_end = byte_index_at_units(rest, limit);
        let window = &rest[..window_end];
        let half = window.len() / 2;
        let cut = [
            window.rfind("\n\n"),
            window.rfind('\n'),
            window.rfind(char::is_whitespace),
        ]
        .into_iter()
        .flatten()
        .find(|position| *position >= half && *position > 0)
        .unwrap_or(window_end);
        let chunk = rest[..cut].trim_end();
        if !chunk.is_empty() {
            chunks.push(chunk.to_owned());
        }
        rest = rest[cut..].trim_start();
    }
    if !rest.is_empty() {
        chunks.push(rest.to_owned());
    }
    chunks
}

/// The length of `text` in UTF-16 code units.
pub(crate) fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The byte index of the end of the longest prefix of `text` within `units` UTF-16 code units
/// (at least one character, so a cut always makes progress).
fn byte_index_at_units(text: &str, units: usize) -> usize {
    let mut used = 0;
    for (index, character) in text.char_indices() {
        used += character.len_utf16();
        if used > units {
            return if index == 0 {
                character.len_utf8()
            } else {
                index
            };
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Reads escaped `MarkdownV2` text back as Telegram does, refusing an unescaped special
    /// character the way the Bot API does ("can't parse entities").
    fn unescape(text: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut characters = text.chars();
        while let Some(character) = characters.next() {
            if character == '\\' {
                match characters.next() {
                    Some(next) if SPECIAL.contains(&next) => out.push(next),
                    other => return Err(format!("a backslash before {other:?}")),
                }
            } else if SPECIAL.contains(&character) {
                return Err(format!(
                    "character '{character}' is reserved and must be escaped"
                ));
            } else {
                out.push(character);
            }
        }
        Ok(out)
    }

    fn with_specials() -> impl Strategy<Value = String> {
        let pieces = prop_oneof![
            proptest::sample::select(SPECIAL.to_vec()).prop_map(String::from),
            "[a-zA-Zа-я0-9 \\n]{0,8}",
            any::<char>().prop_map(String::from),
            Just("😀".to_owned()),
        ];
        proptest::collection::vec(pieces, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn escaping_round_trips_and_leaves_nothing_to_parse(text in with_specials()) {
            let escaped = escape_markdown_v2(&text);
            prop_assert_eq!(unescape(&escaped), Ok(text));
        }

        #[test]
        fn chunks_fit_and_keep_every_word(text in "([a-zé😀]{1,12}[ \\n]{1,3}){0,80}", limit in 8_usize..64) {
            let chunks = split_message(&text, limit);
            for chunk in &chunks {
                prop_assert!(utf16_len(chunk) <= limit, "{} > {}", utf16_len(chunk), limit);
                prop_assert!(!chunk.trim().is_empty());
            }
            let squeeze = |text: &str| text.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            prop_assert_eq!(squeeze(&chunks.concat()), squeeze(&text));
        }
    }

    #[test]
    fn every_special_character_is_escaped() {
        let all: String = SPECIAL.iter().collect();
        assert_eq!(
            escape_markdown_v2(&all),
            "\\_\\*\\[\\]\\(\\)\\~\\`\\>\\#\\+\\-\\=\\|\\{\\}\\.\\!\\\\"
        );
        assert_eq!(escape_markdown_v2("Привет, мир"), "Привет, мир");
    }

    #[test]
    fn a_ten_thousand_character_answer_splits_on_paragraphs() {
        let paragraph = |letter: char| format!("{}.", letter.to_string().repeat(1999));
        let text = ['a', 'b', 'c', 'd', 'e'].map(paragraph).join("\n\n");
        assert_eq!(text.chars().count(), 10_008);
        let chunks = split_message(&text, MAX_MESSAGE_UNITS);
        assert_eq!(chunks.len(), 3);
        assert_eq!(
            chunks[0],
            format!("{}\n\n{}", paragraph('a'), paragraph('b'))
        );
        assert_eq!(
            chunks[1],
            format!("{}\n\n{}", paragraph('c'), paragraph('d'))
        );
        assert_eq!(chunks[2], paragraph('e'));
    }

    #[test]
    fn a_text_without_breaks_is_cut_at_the_limit_counting_utf16() {
        let text = "😀".repeat(3000);
        let chunks = split_message(&text, MAX_MESSAGE_UNITS);
        assert_eq!(chunks.len(), 2);
        assert_eq!(utf16_len(&chunks[0]), 4096);
        assert_eq!(chunks[0].chars().count() + chunks[1].chars().count(), 3000);
        assert!(split_message(" \n ", MAX_MESSAGE_UNITS).is_empty());
    }
}
