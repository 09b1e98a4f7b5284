//! Plain text from bytes of unknown encoding, and the character limit every reader shares.
//!
//! Order of decisions: a byte-order mark wins (UTF-8, UTF-16 LE/BE); then valid UTF-8; then a
//! guess among legacy encodings (chardetng: Windows-1251 and KOI8-R for Russian files, Windows-
//! 1252, Shift_JIS, GBK, ...). Bytes that look binary (NUL bytes, or many control characters
//! once decoded) are refused rather than shown as mojibake.

use encoding_rs::{Encoding, UTF_8};

/// How many characters of text a reader returns at most (as the original).
pub const TEXT_CHAR_LIMIT: usize = 50_000;

/// Bytes enough to hold [`TEXT_CHAR_LIMIT`] characters plus one in any supported encoding
/// (at most 4 bytes a character), so that reading this many tells whether there is more.
pub const TEXT_BYTE_BUDGET: usize = (TEXT_CHAR_LIMIT + 1) * 4;

/// Text decoded from bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedText {
    /// The text, without a byte-order mark.
    pub text: String,
    /// The encoding's name (`UTF-8`, `windows-1251`, ...).
    pub encoding: &'static str,
}

/// Why bytes are not text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the file looks binary, not text")]
pub struct NotText;

/// Decodes `bytes`. `complete` says whether they are the whole file: a prefix may end inside
/// a multi-byte character, which is then dropped instead of failing UTF-8 detection.
pub fn decode(bytes: &[u8], complete: bool) -> Result<DecodedText, NotText> {
    if let Some((encoding, bom_length)) = Encoding::for_bom(bytes) {
        let text = decode_with(encoding, &bytes[bom_length..], complete);
        return checked(text, encoding);
    }
    let sample = &bytes[..bytes.len().min(8 << 10)];
    if sample.contains(&0) {
        return Err(NotText);
    }
    let utf8 = match std::str::from_utf8(bytes) {
        Ok(_) => true,
        // A prefix cut inside a character: valid up to the cut, and the cut is the last 1-3 bytes.
        Err(error) => !complete && error.error_len().is_none(),
    };
    let encoding = if utf8 {
        UTF_8
    } else {
        let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
        detector.feed(bytes, complete);
        detector.guess(None, chardetng::Utf8Detection::Deny)
    };
    checked(decode_with(encoding, bytes, complete), encoding)
}

fn decode_with(encoding: &'static Encoding, bytes: &[u8], complete: bool) -> String {
    let (text, _) = encoding.decode_without_bom_handling(bytes);
    let mut text = text.into_owned();
    if !complete && text.ends_with('\u{FFFD}') {
        // The prefix was cut inside a character; the replacement is an artifact of the cut.
        text.pop();
    }
    text
}

/// Refuses decoded text that is mostly control characters (binary data that has no NULs).
fn checked(text: String, encoding: &'static Encoding) -> Result<DecodedText, NotText> {
    let mut total = 0usize;
    let mut control = 0usize;
    for character in text.chars().take(8 << 10) {
        total += 1;
        if (character.is_control() && !matches!(character, '\n' | '\r' | '\t' | '\u{0C}'))
            || character == '\u{FFFD}'
        {
            control += 1;
        }
    }
    if total > 0 && control * 10 > total {
        return Err(NotText);
    }
    Ok(DecodedText {
        text,
        encoding: encoding.name(),
    })
}

/// Keeps the first `limit` characters of `text`; returns whether anything was cut.
pub fn truncate_chars(text: &mut String, limit: usize) -> bool {
    match text.char_indices().nth(limit) {
        Some((byte_index, _)) => {
            text.truncate(byte_index);
            true
        }
        None => false,
    }
}

/// Squeezes runs of three or more line breaks into one blank line and trims each line's end:
/// extractors leave layout noise that costs the model tokens and tells it nothing.
pub fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_utf8_and_boms() {
        let decoded = decode("Привет, world".as_bytes(), true).unwrap();
        assert_eq!(decoded.text, "Привет, world");
        assert_eq!(decoded.encoding, "UTF-8");

        let mut with_bom = vec![0xEF, 0xBB, 0xBF];
        with_bom.extend_from_slice("a,b\n1,2".as_bytes());
        assert_eq!(decode(&with_bom, true).unwrap().text, "a,b\n1,2");

        let mut utf16 = vec![0xFF, 0xFE];
        for unit in "Ёлка 1".encode_utf16() {
            utf16.extend_from_slice(&unit.to_le_bytes());
        }
        let decoded = decode(&utf16, true).unwrap();
        assert_eq!(decoded.text, "Ёлка 1");
        assert_eq!(decoded.encoding, "UTF-16LE");
    }

    #[test]
    fn guesses_legacy_cyrillic() {
        let text = "Отчёт о продажах за первый квартал: выручка выросла на десять процентов.";
        let (bytes, _, _) = encoding_rs::WINDOWS_1251.encode(text);
        let decoded = decode(&bytes, true).unwrap();
        assert_eq!(decoded.encoding, "windows-1251");
        assert_eq!(decoded.text, text);
    }

    #[test]
    fn a_prefix_cut_inside_a_character_is_still_utf8() {
        let bytes = "ёжик".as_bytes();
        let cut = &bytes[..bytes.len() - 1];
        let decoded = decode(cut, false).unwrap();
        assert_eq!(decoded.encoding, "UTF-8");
        assert_eq!(decoded.text, "ёжи");
    }

    #[test]
    fn refuses_binary() {
        assert_eq!(
            decode(&[0x89, b'P', b'N', b'G', 0, 0, 0, 13], true),
            Err(NotText)
        );
        let noise: Vec<u8> = (1u8..32).cycle().take(500).collect();
        assert_eq!(decode(&noise, true), Err(NotText));
    }

    #[test]
    fn truncates_on_character_boundaries() {
        let mut text = "ёёёё".to_owned();
        assert!(truncate_chars(&mut text, 2));
        assert_eq!(text, "ёё");
        assert!(!truncate_chars(&mut text, 2));
        assert_eq!(text, "ёё");
    }

    #[test]
    fn tidies_layout_noise() {
        assert_eq!(tidy("\n\n a  \n\n\n\nb\t\n\n"), "a\n\nb");
    }
}
