//! The interface languages Souz speaks (English and Russian) and how a POSIX locale
//! (`LANG`, `LC_ALL`, `LC_MESSAGES` values such as `ru_RU.UTF-8`) or a setting's code (`"ru"`)
//! maps onto one. Pure functions: callers read the environment themselves.

/// A text in `language`: `localized!(language, "Edit {path}", "Изменить {path}")` is `format!`
/// of the English or the Russian text (both take the same arguments).
#[macro_export]
macro_rules! localized {
    ($language:expr, $en:literal, $ru:literal $(, $arg:expr)* $(,)?) => {
        match $language {
            $crate::language::Language::En => format!($en $(, $arg)*),
            $crate::language::Language::Ru => format!($ru $(, $arg)*),
        }
    };
}

/// An interface language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Language {
    /// English (the default).
    #[default]
    En,
    /// Russian.
    Ru,
}

impl Language {
    /// Which form of a counted noun goes with `count`: in English 0 for one and 1 for the
    /// rest; in Russian 0 for 1, 21, 101 (файл), 1 for 2–4, 22–24 (файла), 2 for the rest and
    /// 11–14 of every hundred (файлов). The one plural rule of the daemon, the CLI and the app.
    pub fn plural_form(self, count: u64) -> usize {
        match self {
            Self::En => usize::from(count != 1),
            Self::Ru => match (count % 10, count % 100) {
                (_, 11..=14) => 2,
                (1, _) => 0,
                (2..=4, _) => 1,
                _ => 2,
            },
        }
    }

    /// The setting's code: `"en"` or `"ru"`.
    pub fn code(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Ru => "ru",
        }
    }

    /// `"en"` or `"ru"` (any case, region allowed: `"ru-RU"`); anything else is `None`.
    pub fn from_code(code: &str) -> Option<Self> {
        Self::from_locale(code)
    }

    /// The language of a locale value (`ru_RU.UTF-8`, `en_US`, `ru`); `None` for an empty or
    /// neutral one (`C`, `POSIX`, `C.UTF-8`) or a language Souz does not speak.
    pub fn from_locale(locale: &str) -> Option<Self> {
        let language = locale
            .trim()
            .split(['_', '-', '.', '@'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        match language.as_str() {
            "ru" => Some(Self::Ru),
            "en" => Some(Self::En),
            _ => None,
        }
    }

    /// The language of the first set locale variable among `values`, in POSIX precedence
    /// order (`LC_ALL`, `LC_MESSAGES`, `LANG`); English when none names one Souz speaks.
    pub fn from_locale_vars<'a>(values: impl IntoIterator<Item = Option<&'a str>>) -> Self {
        values
            .into_iter()
            .flatten()
            .find(|value| !value.trim().is_empty())
            .and_then(Self::from_locale)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::Language;

    #[test]
    fn locales_map_to_languages() {
        assert_eq!(Language::from_locale("ru_RU.UTF-8"), Some(Language::Ru));
        assert_eq!(Language::from_locale("en_GB"), Some(Language::En));
        assert_eq!(Language::from_locale("C.UTF-8"), None);
        assert_eq!(Language::from_code("RU"), Some(Language::Ru));
        assert_eq!(Language::from_code("de"), None);
    }

    #[test]
    fn the_first_set_variable_decides() {
        assert_eq!(
            Language::from_locale_vars([None, Some(""), Some("ru_RU.UTF-8")]),
            Language::Ru
        );
        // LC_ALL set to English wins over a Russian LANG.
        assert_eq!(
            Language::from_locale_vars([Some("en_US.UTF-8"), None, Some("ru_RU.UTF-8")]),
            Language::En
        );
        assert_eq!(
            Language::from_locale_vars([None, None, Some("C")]),
            Language::En
        );
        assert_eq!(Language::from_locale_vars([None, None, None]), Language::En);
    }
}
