//! English and Russian function words: pronouns, articles, prepositions, conjunctions,
//! auxiliaries and question words. They occur in most facts and most questions, so a query
//! term among them would match (and make the index rank) nearly everything while telling
//! nothing apart; recall leaves them out of its queries (`text::match_terms`) and out of the
//! terms its exact and priority sources look for. The index still holds them (a query of
//! nothing else may use them).
//!
//! Invariant: each table is sorted (a binary search reads it; a test checks), lowercase, with
//! `ё` written `е` (words are folded before the look-up).

/// English function words, sorted.
const ENGLISH: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "being", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "each", "either", "for", "from", "had", "has", "have", "having", "he", "her", "here",
    "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "many", "me",
    "mine", "much", "my", "myself", "no", "nor", "not", "of", "off", "on", "only", "or", "other",
    "our", "ours", "please", "she", "should", "so", "some", "such", "tell", "than", "that", "the",
    "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "to", "too",
    "us", "very", "was", "we", "were", "what", "whats", "when", "where", "which", "while", "who",
    "whom", "whose", "why", "will", "with", "would", "you", "your", "yours",
];

/// Russian function words, sorted (`ё` as `е`).
const RUSSIAN: &[&str] = &[
    "а",
    "без",
    "бы",
    "был",
    "была",
    "были",
    "было",
    "быть",
    "в",
    "вам",
    "вами",
    "вас",
    "весь",
    "во",
    "вот",
    "все",
    "всего",
    "всех",
    "вы",
    "где",
    "да",
    "для",
    "до",
    "его",
    "ее",
    "ей",
    "ему",
    "если",
    "есть",
    "еще",
    "же",
    "за",
    "зачем",
    "и",
    "из",
    "или",
    "им",
    "ими",
    "их",
    "к",
    "как",
    "какая",
    "какие",
    "каким",
    "каких",
    "какого",
    "какое",
    "какой",
    "каком",
    "какую",
    "кем",
    "когда",
    "кого",
    "кому",
    "кто",
    "куда",
    "ли",
    "мне",
    "мной",
    "мое",
    "моего",
    "моей",
    "моем",
    "моему",
    "мои",
    "мой",
    "мою",
    "моя",
    "мы",
    "на",
    "над",
    "нам",
    "нас",
    "не",
    "него",
    "нее",
    "ней",
    "нем",
    "нему",
    "нет",
    "ни",
    "них",
    "но",
    "ну",
    "о",
    "об",
    "он",
    "она",
    "они",
    "оно",
    "от",
    "откуда",
    "по",
    "под",
    "почему",
    "при",
    "про",
    "с",
    "сам",
    "свое",
    "своей",
    "свои",
    "свой",
    "свою",
    "себе",
    "себя",
    "сколько",
    "со",
    "так",
    "там",
    "твой",
    "те",
    "тебе",
    "тебя",
    "то",
    "того",
    "тоже",
    "только",
    "тот",
    "ты",
    "у",
    "уже",
    "чем",
    "что",
    "чтобы",
    "чье",
    "чья",
    "эта",
    "эти",
    "это",
    "этого",
    "этой",
    "этот",
    "я",
];

/// Whether `word` (lowercase) is a function word of either language.
pub(crate) fn is_stop_word(word: &str) -> bool {
    let folded;
    let word = if word.contains('ё') {
        folded = word.replace('ё', "е");
        folded.as_str()
    } else {
        word
    };
    ENGLISH.binary_search(&word).is_ok() || RUSSIAN.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_sorted_lowercase_and_folded() {
        for table in [ENGLISH, RUSSIAN] {
            assert!(table.windows(2).all(|pair| pair[0] < pair[1]), "{table:?}");
            for word in table {
                assert_eq!(*word, word.to_lowercase().replace('ё', "е"));
            }
        }
    }

    #[test]
    fn function_words_of_both_languages_are_known_and_content_words_are_not() {
        for word in [
            "the",
            "does",
            "their",
            "как",
            "её",
            "ещё",
            "какую",
            "сколько",
        ] {
            assert!(is_stop_word(word), "{word}");
        }
        for word in ["user", "coffee", "take", "зовут", "собаку", "пользователь"]
        {
            assert!(!is_stop_word(word), "{word}");
        }
    }
}
