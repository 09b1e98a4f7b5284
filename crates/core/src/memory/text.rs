//! Text as the lexical index sees it: words split on anything but letters and digits,
//! lowercased, `ё` folded to `е`, and reduced to their Snowball stems — Russian for words with
//! Cyrillic letters, English for the rest — so "предпочитаю"/"предпочитает" and
//! "prefers"/"preferred" meet. The same function builds the indexed text and the query, so they
//! always agree.

use std::collections::HashSet;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

use super::stop_words::is_stop_word;

static RUSSIAN: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::Russian));
static ENGLISH: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Longest word indexed (longer runs are identifiers or noise).
const MAX_WORD: usize = 64;
/// Characters of a query read for its terms: a query is a person's or a model's text, and
/// past this it is a pasted document, not a question (the terms come from its start).
pub(crate) const MAX_QUERY_CHARS: usize = 2_000;

/// The first [`MAX_QUERY_CHARS`] characters of `text`.
pub(crate) fn bounded_query(text: &str) -> &str {
    text.char_indices()
        .nth(MAX_QUERY_CHARS)
        .map_or(text, |(at, _)| text.get(..at).unwrap_or(text))
}

fn is_cyrillic(character: char) -> bool {
    matches!(character, '\u{0400}'..='\u{04FF}')
}

/// The stem of one lowercase word.
pub(crate) fn stem(word: &str) -> String {
    let folded = word.replace('ё', "е");
    if folded.chars().any(is_cyrillic) {
        RUSSIAN.stem(&folded).into_owned()
    } else {
        ENGLISH.stem(&folded).into_owned()
    }
}

/// The words of `text`, lowercased (not stemmed).
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|character: char| !character.is_alphanumeric())
        .filter(|word| !word.is_empty() && word.chars().count() <= MAX_WORD)
        .map(str::to_lowercase)
}

/// The distinct stems of `text`, in the order they first occur, as one space-separated string:
/// what the index stores, so a stem counts once per fact (a fact that repeats a word does not
/// outrank one that states it once, and the ranking needs no term frequencies; see `bm25`).
pub(crate) fn stemmed(text: &str) -> String {
    let mut seen = HashSet::new();
    words(text)
        .map(|word| stem(&word))
        .filter(|stem| !stem.is_empty() && seen.insert(stem.clone()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The FTS5 phrases of the stems of words of at least `min_chars` characters in the first
/// [`MAX_QUERY_CHARS`] of `text` (at most `max_terms` distinct stems), a fact matching when it
/// holds any of them (OR: bm25 then ranks the facts holding the rarer stems first). Function
/// words (`stop_words`) are left out unless the text has nothing else. Every stem is made of
/// letters and digits only and quoted, so nothing in the text is read as FTS5 syntax.
pub(crate) fn match_terms(text: &str, min_chars: usize, max_terms: usize) -> Vec<String> {
    let text = bounded_query(text);
    let content = words(text).any(|word| word.chars().count() >= min_chars && !is_stop_word(&word));
    let mut stems: Vec<String> = Vec::new();
    for word in words(text) {
        if word.chars().count() < min_chars || (content && is_stop_word(&word)) {
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
    stems
        .iter()
        .map(|stem| format!("\"{}\"", stem.replace('"', "")))
        .collect()
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
    fn the_index_holds_each_stem_once_in_first_order() {
        assert_eq!(stemmed("Tea, green tea; teas and TEA"), "tea green and");
        assert_eq!(stemmed("кошка кошки кошку"), stem("кошка"));
        assert_eq!(stemmed(""), "");
    }

    #[test]
    fn function_words_are_left_out_of_queries_unless_alone() {
        assert_eq!(
            match_terms("what is my favourite tea", 2, 8),
            ["\"favourit\"", "\"tea\""]
        );
        assert_eq!(
            match_terms("какой мой любимый чай", 2, 8),
            ["\"любим\"", "\"ча\""]
        );
        assert_eq!(
            match_terms("who is it", 2, 8),
            ["\"who\"", "\"is\"", "\"it\""]
        );
    }

    #[test]
    fn queries_quote_every_stem() {
        assert_eq!(
            match_terms("Tea? \"oolong\" coffee; x", 2, 8),
            ["\"tea\"", "\"oolong\"", "\"coffe\""]
        );
        assert!(match_terms("a b", 2, 8).is_empty());
        assert_eq!(match_terms("one two three", 2, 2), ["\"one\"", "\"two\""]);
    }

    /// Whether `term` is one quoted phrase of letters and digits: nothing FTS5 could read as
    /// syntax (`"`, `*`, `^`, `:`, parentheses, `NEAR`/`AND`/`OR`/`NOT` outside quotes).
    fn is_quoted_word(term: &str) -> bool {
        term.len() > 2
            && term.starts_with('"')
            && term.ends_with('"')
            && term[1..term.len() - 1].chars().all(char::is_alphanumeric)
    }

    #[test]
    fn fts5_syntax_in_a_query_comes_out_as_quoted_words_or_nothing() {
        for query in [
            "\"",
            "\"\"\"",
            "*",
            "tea*",
            "^tea",
            "title:tea",
            "NEAR(tea coffee, 2)",
            "tea OR coffee",
            "AND",
            "NOT tea",
            "-tea",
            "+tea",
            "{title body}: tea",
            "(",
            ")",
            "'",
            "tea\u{0}coffee",
            "чай\"кофе",
            "a\u{301}b",
            "\u{202e}tea",
            "🙂 coffee 🙂",
        ] {
            for term in match_terms(query, 2, 8) {
                assert!(is_quoted_word(&term), "{query:?} gave {term:?}");
            }
        }
        assert_eq!(match_terms("tea OR coffee", 2, 8), ["\"tea\"", "\"coffe\""]);
        assert_eq!(match_terms("NEAR(tea*", 2, 8), ["\"near\"", "\"tea\""]);
    }

    #[test]
    fn empty_and_function_word_queries_give_nothing_or_function_words() {
        assert!(match_terms("", 2, 8).is_empty());
        assert!(match_terms("   \n\t ?! ... ", 2, 8).is_empty());
        // Nothing but function words: they are all the query has, so they are kept.
        assert_eq!(match_terms("как это", 2, 8), ["\"как\"", "\"эт\""]);
    }

    #[test]
    fn a_long_query_is_read_up_to_its_bound() {
        let long = format!("{} coffee", "the ".repeat(MAX_QUERY_CHARS));
        assert!(!match_terms(&long, 2, 8).contains(&"\"coffe\"".to_owned()));
        assert_eq!(match_terms(&long, 2, 8), ["\"the\""]);
        let words: String = (0..100_000).map(|at| format!("w{at} ")).collect();
        assert_eq!(match_terms(&words, 2, 12).len(), 12);
        let cyrillic = "ж".repeat(MAX_QUERY_CHARS * 3);
        assert_eq!(bounded_query(&cyrillic).chars().count(), MAX_QUERY_CHARS);
        assert_eq!(bounded_query("short"), "short");
    }

    proptest::proptest! {
        #[test]
        fn any_text_gives_at_most_the_bound_of_quoted_words(
            text in "[a-zA-Zа-яА-ЯёЁ0-9 \"*^:(){}+\\-.,?!\u{0}\u{301}🙂]{0,400}",
            max_terms in 1_usize..16,
        ) {
            let terms = match_terms(&text, 2, max_terms);
            proptest::prop_assert!(terms.len() <= max_terms);
            for term in &terms {
                proptest::prop_assert!(is_quoted_word(term), "{:?} gave {:?}", text, term);
            }
        }
    }
}
