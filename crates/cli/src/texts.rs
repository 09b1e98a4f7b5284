//! The CLI's messages, labels and headings, in English and Russian (every command's: a person
//! reads them). The language is the one chosen in Souz (`interfaceLanguage`, read from the daemon
//! once connected: [`connect`]), else the system locale's (`LC_ALL`, `LC_MESSAGES`, then
//! `LANG`, read through `souz_core::config`); decided once per process, English when nothing
//! names Russian. Commands, flags, ids and JSON output stay as they are in both languages; the
//! daemon's refusals are said by their code ([`error_text`]).

use std::fmt::Display;
use std::sync::OnceLock;

use souz_protocol::language::Language;

static LANGUAGE: OnceLock<Language> = OnceLock::new();

/// The language of this process's messages.
pub fn language() -> Language {
    *LANGUAGE.get_or_init(|| souz_core::config::system_language(&souz_core::config::process_lookup))
}

/// Connects (`client::connect`) and takes the interface language the person chose in Souz
/// (`GET /v1/me/settings`) for this process's messages: for the commands that print them. A
/// daemon that does not say leaves the system locale's.
pub async fn connect() -> anyhow::Result<souz_client::DaemonClient> {
    let client = crate::client::connect().await?;
    follow(&client).await;
    Ok(client)
}

/// Takes the interface language chosen in Souz, unless a message was printed already.
async fn follow(client: &souz_client::DaemonClient) {
    if LANGUAGE.get().is_some() {
        return;
    }
    match client
        .get::<souz_protocol::chat::SettingsResponse>("/v1/me/settings")
        .await
    {
        Ok(response) => {
            if let Some(chosen) = Language::from_code(&response.settings.interface_language) {
                let _ = LANGUAGE.set(chosen);
            }
        }
        Err(error) => tracing::debug!(%error, "no interface language from the daemon"),
    }
}

/// A failed command's error for people: the daemon's refusals said by their code in the
/// language of this process's messages (the daemon's own words, which field or file, kept
/// inside), a daemon that cannot be reached said plainly; anything else as it is.
pub async fn error_text(error: &anyhow::Error) -> String {
    let refusal = error.downcast_ref::<souz_client::ClientError>();
    if matches!(refusal, Some(souz_client::ClientError::Api { .. })) && LANGUAGE.get().is_none() {
        // The command did not ask for the person's language; the daemon answered, so ask now.
        let _ = connect().await;
    }
    let language = language();
    if let Some(souz_client::ClientError::Api {
        code: souz_protocol::ErrorCode::Unavailable,
        ..
    }) = refusal
        && let Some(text) = recovery_text().await
    {
        return text;
    }
    match refusal {
        Some(souz_client::ClientError::Api { code, message, .. }) if language == Language::Ru => {
            code.said(language, message)
        }
        Some(souz_client::ClientError::Unreachable { base, reason })
            if language == Language::Ru =>
        {
            format!("Souz не отвечает на {base} ({reason}); запустите его: `souz serve`")
        }
        _ => format!("{error:#}"),
    }
}

/// For a refusal in recovery mode: the daemon's state, problems and way out (`None` when it
/// is not in recovery).
async fn recovery_text() -> Option<String> {
    let client = crate::client::connect().await.ok()?;
    let problems = client.recovery_problems().await.ok()??;
    Some(crate::status_command::recovery_text(
        client.base(),
        &problems,
    ))
}

/// `en` or `ru`, by [`language`].
pub fn tr(en: &'static str, ru: &'static str) -> &'static str {
    pick(language(), en, ru)
}

fn pick(language: Language, en: &'static str, ru: &'static str) -> &'static str {
    match language {
        Language::En => en,
        Language::Ru => ru,
    }
}

/// `count` with the noun's form that goes with it in this process's language ("1 tool",
/// "3 tools"; "1 инструмент", "3 инструмента", "5 инструментов"): `en` holds the singular and
/// plural, `ru` the forms for 1, 2–4 and 5 ([`Language::plural_form`]).
pub fn counted(count: u64, en: [&str; 2], ru: [&str; 3]) -> String {
    counted_in(language(), count, en, ru)
}

fn counted_in(language: Language, count: u64, en: [&str; 2], ru: [&str; 3]) -> String {
    let form = language.plural_form(count);
    let noun = match language {
        Language::En => en.get(form),
        Language::Ru => ru.get(form),
    };
    format!("{count} {}", noun.copied().unwrap_or_default())
}

/// A label of a `Label  value` block, padded to `widths` (English, Russian): the widest label
/// of the block in each language and the space after it.
pub fn label(en: &'static str, ru: &'static str, widths: [usize; 2]) -> String {
    let width = match language() {
        Language::En => widths[0],
        Language::Ru => widths[1],
    };
    format!("{:<width$}", tr(en, ru))
}

/// `template` with each `{name}` replaced by its value.
pub fn fill(template: &str, values: &[(&str, &dyn Display)]) -> String {
    values
        .iter()
        .fold(template.to_owned(), |text, (name, value)| {
            text.replace(&format!("{{{name}}}"), &value.to_string())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_language_and_fills_placeholders() {
        assert_eq!(pick(Language::Ru, "Denied", "Отклонено"), "Отклонено");
        assert_eq!(pick(Language::En, "Denied", "Отклонено"), "Denied");
        assert_eq!(
            fill(
                "question {id} is already {status}",
                &[("id", &"q1"), ("status", &"answered")]
            ),
            "question q1 is already answered"
        );
    }

    #[test]
    fn counts_take_the_form_their_number_needs() {
        let tools = |language, count| {
            counted_in(
                language,
                count,
                ["tool", "tools"],
                ["инструмент", "инструмента", "инструментов"],
            )
        };
        assert_eq!(tools(Language::En, 1), "1 tool");
        assert_eq!(tools(Language::En, 0), "0 tools");
        assert_eq!(tools(Language::Ru, 21), "21 инструмент");
        assert_eq!(tools(Language::Ru, 3), "3 инструмента");
        assert_eq!(tools(Language::Ru, 12), "12 инструментов");
        assert_eq!(tools(Language::Ru, 0), "0 инструментов");
    }
}
