//! What the person explicitly asked of memory in a message, in Russian or English (original
//! `parseExplicitMemoryIntent`, same phrases and the same precedence): "don't remember" skips
//! the turn, "delete from memory" deletes the matching fact, "remember" is a signal to store,
//! "forget" retires the matching fact and leaves a tombstone.

use std::sync::LazyLock;

use regex::Regex;

/// An explicit request about memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intent {
    /// Nothing explicit.
    None,
    /// "Remember ...": store it even with less confidence.
    Remember,
    /// "Don't remember ...": capture nothing from this turn.
    DoNotCapture,
    /// "Forget ...": retire the matching fact and keep it from coming back.
    Forget,
    /// "Delete from memory ...": delete the matching fact.
    Delete,
}

const DO_NOT_CAPTURE: &[&str] = &[
    "не запоминай",
    "не нужно запоминать",
    "don't remember",
    "do not remember",
    "don't save",
    "do not save",
];
const DELETE: &[&str] = &[
    "удали из памяти",
    "полностью удали",
    "delete from memory",
    "delete this memory",
];
const REMEMBER: &[&str] = &[
    "запомни, что",
    "запомни",
    "remember that",
    "don't forget",
    "do not forget",
    "from now on",
    "с этого момента",
    "не забудь",
];
/// Markers removed from a remembered message to leave the fact.
const REMEMBER_MARKERS: &[&str] = &[
    "remember that",
    "remember",
    "from now on",
    "с этого момента",
    "не забудь, что",
    "не забудь",
    "запомни, что",
    "запомни",
    "запиши",
    "в будущем учитывай",
    "учитывай дальше",
    "don't forget that",
    "don't forget",
    "do not forget that",
    "do not forget",
];

static FORGET: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"\bforget\s+(?:that|what|about)\b",
        r"\bforget\s+(?:this|that|it|everything|all this)\b",
        r"\bforget\s+about\s+(?:this|that|it)\b",
        r"\bзабудь,\s*что\b",
        r"\bзабудь\s+что\b",
        r"\bзабудь\s+(?:это|все|всё|все это|всё это)\b",
        r"\bзабудь\s+об\s+этом\b",
    ]
    .iter()
    .filter_map(|pattern| Regex::new(pattern).ok())
    .collect()
});

/// The command part of a forget or delete request (everything after it names the fact).
static FORGET_COMMAND: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:forget(?:\s+about)?(?:\s+(?:that|what|this|it|everything|all\s+this))?|delete\s+(?:from\s+memory|this\s+memory)|remember\s+no\s+longer|забудь(?:,\s*что|\s+что|\s+(?:это|вс[её](?:\s+это)?|об\s+этом))?|удали\s+из\s+памяти|полностью\s+удали|больше\s+не\s+считай)\b[\s,:;-]*",
    )
    .ok()
});

fn is_forget(text: &str) -> bool {
    let trimmed = text.trim();
    trimmed == "forget"
        || trimmed == "забудь"
        || FORGET.iter().any(|pattern| pattern.is_match(text))
}

/// The explicit intent of `text` (negatives first, then deletes, remembers, forgets).
pub(crate) fn parse(text: &str) -> Intent {
    let lower = text.to_lowercase();
    let contains = |phrases: &[&str]| phrases.iter().any(|phrase| lower.contains(phrase));
    if contains(DO_NOT_CAPTURE) {
        Intent::DoNotCapture
    } else if contains(DELETE) {
        Intent::Delete
    } else if contains(REMEMBER) {
        Intent::Remember
    } else if is_forget(&lower) {
        Intent::Forget
    } else {
        Intent::None
    }
}

/// `text` without its first remember marker (and the punctuation after it).
pub(crate) fn strip_remember_marker(text: &str) -> String {
    let trimmed = text.trim();
    let lower = trimmed.to_lowercase();
    // Lowercasing may change byte lengths; only cut when it did not.
    if lower.len() != trimmed.len() {
        return trimmed.to_owned();
    }
    let Some((start, marker)) = REMEMBER_MARKERS
        .iter()
        .find_map(|marker| lower.find(marker).map(|start| (start, *marker)))
    else {
        return trimmed.to_owned();
    };
    let mut rest = String::with_capacity(trimmed.len());
    rest.push_str(&trimmed[..start]);
    rest.push_str(&trimmed[start + marker.len()..]);
    rest.trim()
        .trim_start_matches([':', '-', ',', ' '])
        .trim()
        .to_owned()
}

/// What a forget or delete request names: the text after its command.
pub(crate) fn forget_target(text: &str) -> String {
    match FORGET_COMMAND
        .as_ref()
        .and_then(|command| command.find(text))
    {
        Some(found) => text[found.end()..].trim().to_owned(),
        None => text.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phrase_has_its_intent() {
        let cases = [
            ("Не запоминай это, просто ответь", Intent::DoNotCapture),
            ("не нужно запоминать мой адрес", Intent::DoNotCapture),
            ("Don't remember this", Intent::DoNotCapture),
            ("do not remember my phone", Intent::DoNotCapture),
            ("Don't save that", Intent::DoNotCapture),
            ("please do not save it", Intent::DoNotCapture),
            ("Удали из памяти мой адрес", Intent::Delete),
            ("полностью удали любимый цвет", Intent::Delete),
            ("Delete from memory my address", Intent::Delete),
            ("delete this memory", Intent::Delete),
            ("Запомни, что я люблю чай", Intent::Remember),
            ("запомни мой город Казань", Intent::Remember),
            ("Remember that I prefer tea", Intent::Remember),
            ("Don't forget my birthday is in May", Intent::Remember),
            ("do not forget the deadline", Intent::Remember),
            ("From now on answer in Russian", Intent::Remember),
            ("С этого момента отвечай по-русски", Intent::Remember),
            ("не забудь купить молоко", Intent::Remember),
            ("forget", Intent::Forget),
            ("забудь", Intent::Forget),
            ("Forget that I like tea", Intent::Forget),
            ("forget about my old address", Intent::Forget),
            ("please forget it", Intent::Forget),
            ("forget everything", Intent::Forget),
            ("Забудь, что я люблю чай", Intent::Forget),
            ("забудь что я живу в Казани", Intent::Forget),
            ("забудь это", Intent::Forget),
            ("забудь всё это", Intent::Forget),
            ("забудь об этом", Intent::Forget),
            ("What is the weather?", Intent::None),
            ("I forgot my keys", Intent::None),
            ("Как дела?", Intent::None),
        ];
        for (text, intent) in cases {
            assert_eq!(parse(text), intent, "{text}");
        }
    }

    #[test]
    fn negatives_win_over_remembering() {
        assert_eq!(
            parse("Remember that, but don't save it"),
            Intent::DoNotCapture
        );
        assert_eq!(parse("Запомни и удали из памяти старое"), Intent::Delete);
    }

    #[test]
    fn markers_and_commands_are_stripped() {
        assert_eq!(
            strip_remember_marker("Remember that I prefer tea"),
            "I prefer tea"
        );
        assert_eq!(
            strip_remember_marker("Запомни, что я люблю чай"),
            "я люблю чай"
        );
        assert_eq!(
            strip_remember_marker("From now on: answer briefly"),
            "answer briefly"
        );
        assert_eq!(forget_target("Forget that I prefer tea"), "I prefer tea");
        assert_eq!(forget_target("Забудь, что я люблю чай"), "я люблю чай");
        assert_eq!(
            forget_target("удали из памяти: любимый цвет"),
            "любимый цвет"
        );
    }
}
