//! Text as the lexical index sees it: words split on anything but letters and digits,
//! lowercased, `ё` folded to `е`, and reduced to their Snowball stems — Russian for words with
//! Cyrillic letters, English for the rest — so "предпочитаю"/"предпочитает" and
//! "prefers"/"preferred" meet. The same function builds the indexed text and the query, so they
//! always agree.

use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

static RUSSIAN: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::Russian));
static ENGLISH: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Longest word indexed (longer runs are identifiers or noise).
const MAX_WORD: usize = 64;

fn is_cyrillic(character: char) -> bool {
    matches!(character, '\u{0400}'..='\u{04FF}')
}

/// The stem of one lowercase word.
pub fn stem(word: &str) -> String {
    let folded = word.replace('ё', "е");
    if folded.chars().any(is_cyrillic) {
        RUSSIAN.stem(&folded).into_owned()
    } else {
        ENGLISH.stem(&folded).into_owned()
    }
}

/// The words of `text`, lowercased (not stemmed).
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|character: char| !character.is_alphanumeric())
        .filter(|word| !word.is_empty() && word.chars().count() <= MAX_WORD)
        .map(str::to_lowercase)
}

/// The stems of `text`, in order, as one space-separated string (what the index stores).
pub fn stemmed(text: &str) -> String {
    words(text)
        .map(|word| stem(&word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An FTS5 query matching any of the stems of words of at least `min_chars` characters in
/// `text` (at most `max_terms` distinct stems); `None` when there is none. Every stem is
/// quoted, so nothing in the text is read as FTS5 syntax.
pub fn match_query(text: &str, min_chars: usize, max_terms: usize) -> Option<String> {
    let mut stems: Vec<String> = Vec::new();
    for word in words(text) {
        if word.chars().count() < min_chars {
            continue;
        }
        let stem = stem(&word);
        if !stem.is_empty() && !stems.contains(&stem) {
            stems.push(stem);
        }
        if stems.len() == max_terms {
            break;
        }
    }
    (!stems.is_empty()).then(|| {
        stems
            .iter()
            .map(|stem| format!("\"{}\"", stem.replace('"', "")))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn russian_and_english_forms_share_a_stem() {
        assert_eq!(stem("предпочитаю"), stem("предпочитает"));
        assert_eq!(stem("ёлки"), stem("елки"));
        assert_eq!(stem("prefers"), stem("preferred"));
        assert_eq!(stemmed("Кошки любят рыбу"), stemmed("кошка любит рыба"));
    }

    #[test]
    fn queries_quote_every_stem() {
        assert_eq!(
            match_query("Tea? \"or\" coffee; x", 2, 8).as_deref(),
            Some("\"tea\" OR \"or\" OR \"coffe\"")
        );
        assert_eq!(match_query("a b", 2, 8), None);
        assert_eq!(
            match_query("one two three", 2, 2).as_deref(),
            Some("\"one\" OR \"two\"")
        );
    }
}
