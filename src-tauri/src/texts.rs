//! The shell's own words (tray menu lines and notifications) in English and Russian. The
//! language is the system locale's (`LC_ALL`, `LC_MESSAGES`, then `LANG`, read through
//! `souz_core::config`), decided once when first asked; English when it names neither.
//! What the daemon sends (summaries, tool names, questions) is shown as it is.

use std::sync::OnceLock;

use souz_protocol::language::Language;

/// The language of the shell's words.
pub fn language() -> Language {
    static LANGUAGE: OnceLock<Language> = OnceLock::new();
    *LANGUAGE.get_or_init(|| souz_core::config::system_language(&souz_core::config::process_env))
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
