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

/// `count` with the word for it, in the shell's language: `one`/`many` in English ("1 file",
/// "3 files"); in Russian the form the number takes (`ru` holds the forms for 1, 2 and 5:
/// "1 файл", "3 файла", "11 файлов").
pub fn counted(count: usize, one: &str, many: &str, ru: [&str; 3]) -> String {
    let language = language();
    let form = language.plural_form(u64::try_from(count).unwrap_or(u64::MAX));
    let word = match language {
        Language::En => [one, many][form],
        Language::Ru => ru[form],
    };
    format!("{count} {word}")
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

    #[test]
    fn counts_take_the_form_their_number_needs() {
        let files = |count| counted(count, "file", "files", ["файл", "файла", "файлов"]);
        set_language(Language::En);
        assert_eq!(files(1), "1 file");
        assert_eq!(files(3), "3 files");
        assert_eq!(files(0), "0 files");
        set_language(Language::Ru);
        let shown: Vec<String> = [1, 2, 4, 5, 11, 12, 14, 21, 22, 25, 101, 111]
            .into_iter()
            .map(files)
            .collect();
        assert_eq!(
            shown,
            [
                "1 файл",
                "2 файла",
                "4 файла",
                "5 файлов",
                "11 файлов",
                "12 файлов",
                "14 файлов",
                "21 файл",
                "22 файла",
                "25 файлов",
                "101 файл",
                "111 файлов"
            ]
        );
    }
}
