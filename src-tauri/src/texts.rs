//! The shell's own words (tray menu lines and notifications) in English and Russian. The
//! language is the one chosen in Souz (`interfaceLanguage`, which the shell reads from the
//! daemon when it connects and again on every `settings.changed`: [`set_language`]), else the
//! system locale's (`LC_ALL`, `LC_MESSAGES`, then `LANG`, read through `souz_core::config`);
//! English when nothing names Russian. What the daemon sends (summaries, tool names,
//! questions) is shown as it is.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use souz_protocol::language::Language;

/// The language chosen in Souz: 0 while the shell has not heard, then 1 (English) or 2.
static CHOSEN: AtomicU8 = AtomicU8::new(0);

/// The language of the shell's words.
pub fn language() -> Language {
    match CHOSEN.load(Ordering::Relaxed) {
        1 => Language::En,
        2 => Language::Ru,
        _ => system_language(),
    }
}

/// Takes the interface language chosen in Souz; returns whether the shell's words change.
pub fn set_language(chosen: Language) -> bool {
    let before = language();
    let code = match chosen {
        Language::En => 1,
        Language::Ru => 2,
    };
    CHOSEN.store(code, Ordering::Relaxed);
    before != chosen
}

fn system_language() -> Language {
    static SYSTEM: OnceLock<Language> = OnceLock::new();
    *SYSTEM.get_or_init(|| souz_core::config::system_language(&souz_core::config::process_lookup))
}

/// `en` or `ru`, by [`language`].
pub fn tr(en: &'static str, ru: &'static str) -> &'static str {
    match language() {
        Language::En => en,
        Language::Ru => ru,
    }
}

/// `template` with each `{name}` replaced by its value.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    values
        .iter()
        .fold(template.to_owned(), |text, (name, value)| {
            text.replace(&format!("{{{name}}}"), value)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chosen_language_replaces_the_systems() {
        set_language(Language::Ru);
        assert_eq!(tr("Pause", "Пауза"), "Пауза");
        assert!(set_language(Language::En), "a change is reported");
        assert_eq!(tr("Pause", "Пауза"), "Pause");
        assert!(
            !set_language(Language::En),
            "the same language is no change"
        );
    }
}
