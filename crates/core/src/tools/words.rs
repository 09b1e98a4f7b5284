//! The words of plan summaries (what approvals, notifications and the call list show) in the
//! person's interface language: a summary chosen by language (`souz_protocol::localized!`),
//! counted nouns with the plural rules of each language ([`Noun`]), and sizes ([`size`]).

use super::Language;
pub(crate) use souz_protocol::localized;

/// A noun counted in summaries: English singular and plural; Russian forms for 1, 2–4 and 5
/// (1 файл, 3 файла, 5 файлов; 21 файл, 12 файлов).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Noun {
    pub en: [&'static str; 2],
    pub ru: [&'static str; 3],
}

impl Noun {
    /// The form that goes with `count`.
    pub(crate) fn form(self, count: u64, language: Language) -> &'static str {
        match language {
            Language::En => self.en[language.plural_form(count)],
            Language::Ru => self.ru[language.plural_form(count)],
        }
    }

    /// `count` and its form: "3 files", "3 файла".
    pub(crate) fn count(self, count: u64, language: Language) -> String {
        format!("{count} {}", self.form(count, language))
    }
}

/// A file.
pub(crate) const FILE: Noun = Noun {
    en: ["file", "files"],
    ru: ["файл", "файла", "файлов"],
};
/// A folder.
pub(crate) const FOLDER: Noun = Noun {
    en: ["folder", "folders"],
    ru: ["папка", "папки", "папок"],
};
/// A line of text.
pub(crate) const LINE: Noun = Noun {
    en: ["line", "lines"],
    ru: ["строка", "строки", "строк"],
};

/// A size in bytes for people, in decimal units: "512 B", "2.0 KB", "1,5 МБ".
pub(crate) fn size(bytes: u64, language: Language) -> String {
    let (byte, units) = match language {
        Language::En => ("B", ["KB", "MB", "GB", "TB"]),
        Language::Ru => ("Б", ["КБ", "МБ", "ГБ", "ТБ"]),
    };
    if bytes < 1000 {
        return format!("{bytes} {byte}");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    let number = format!("{value:.1}");
    let number = match language {
        Language::En => number,
        Language::Ru => number.replace('.', ","),
    };
    format!("{number} {}", units[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn russian_counts_follow_the_last_digits() {
        let forms: Vec<String> = [1, 2, 4, 5, 11, 12, 14, 21, 22, 25, 101, 111]
            .into_iter()
            .map(|count| FILE.count(count, Language::Ru))
            .collect();
        assert_eq!(
            forms,
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
        assert_eq!(FOLDER.count(1, Language::En), "1 folder");
        assert_eq!(FOLDER.count(0, Language::En), "0 folders");
        assert_eq!(LINE.count(3, Language::Ru), "3 строки");
    }

    #[test]
    fn sizes_use_each_languages_units_and_decimal_mark() {
        assert_eq!(size(999, Language::En), "999 B");
        assert_eq!(size(2_000, Language::En), "2.0 KB");
        assert_eq!(size(1_500_000, Language::Ru), "1,5 МБ");
        assert_eq!(size(15, Language::Ru), "15 Б");
    }

    #[test]
    fn a_summary_is_formatted_in_the_chosen_language() {
        let path = "~/a.txt";
        assert_eq!(
            localized!(Language::En, "Edit {path}", "Изменить {path}"),
            "Edit ~/a.txt"
        );
        assert_eq!(
            localized!(Language::Ru, "Edit {}", "Изменить {}", path),
            "Изменить ~/a.txt"
        );
    }
}
