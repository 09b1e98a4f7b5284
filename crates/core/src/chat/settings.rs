//! A user's settings: defaults from the configuration, the user's stored patch on top, and
//! per-turn overrides on top of that (original §1.11). Validation messages follow §1.6.

use std::path::Path;

use souz_protocol::chat::{Settings, SettingsPatch, TurnOptions};
use souz_protocol::language::Language;

/// Where the defaults come from.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsDefaults {
    /// The default model (empty when no provider is reachable).
    pub default_model: String,
    /// `[llm] context_size`.
    pub context_size: u32,
    /// `[llm] temperature`.
    pub temperature: f32,
    /// `[llm] request_timeout_seconds` in milliseconds.
    pub request_timeout_millis: u64,
    /// Every tool an agent may use.
    pub tools: Vec<String>,
    /// The machine's time zone.
    pub time_zone: String,
    /// The interface language until the user sets one (the system locale's).
    pub interface_language: Language,
}

/// The settings a user has: defaults overlaid with `stored`.
pub(crate) fn effective(defaults: &SettingsDefaults, stored: &SettingsPatch) -> Settings {
    let base = Settings {
        default_model: defaults.default_model.clone(),
        context_size: defaults.context_size,
        temperature: defaults.temperature,
        // Until the user sets them, the locale and the interface follow the system's language.
        locale: match defaults.interface_language {
            Language::Ru => "ru-RU",
            Language::En => "en-US",
        }
        .to_owned(),
        time_zone: defaults.time_zone.clone(),
        system_prompt: None,
        enabled_tools: defaults.tools.clone(),
        show_tool_events: true,
        streaming_messages: true,
        interface_language: defaults.interface_language.code().to_owned(),
        request_timeout_millis: defaults.request_timeout_millis,
        use_few_shot_examples: true,
    };
    let mut settings = overlay(base, stored);
    // Tools that no longer exist are dropped (the catalog may have changed).
    settings
        .enabled_tools
        .retain(|tool| defaults.tools.contains(tool));
    settings
}

/// `patch` applied over `settings` (absent fields keep their value).
pub(crate) fn overlay(mut settings: Settings, patch: &SettingsPatch) -> Settings {
    if let Some(model) = &patch.default_model {
        settings.default_model = model.clone();
    }
    if let Some(value) = patch.context_size {
        settings.context_size = value;
    }
    if let Some(value) = patch.temperature {
        settings.temperature = value;
    }
    if let Some(value) = &patch.locale {
        settings.locale = value.clone();
    }
    if let Some(value) = &patch.time_zone {
        settings.time_zone = value.clone();
    }
    if let Some(value) = &patch.system_prompt {
        settings.system_prompt = Some(value.clone()).filter(|prompt| !prompt.trim().is_empty());
    }
    if let Some(value) = &patch.enabled_tools {
        settings.enabled_tools = value.clone();
    }
    if let Some(value) = patch.show_tool_events {
        settings.show_tool_events = value;
    }
    if let Some(value) = patch.streaming_messages {
        settings.streaming_messages = value;
    }
    if let Some(value) = &patch.interface_language {
        settings.interface_language = value.clone();
    }
    if let Some(value) = patch.request_timeout_millis {
        settings.request_timeout_millis = value;
    }
    if let Some(value) = patch.use_few_shot_examples {
        settings.use_few_shot_examples = value;
    }
    settings
}

/// Merges `next` into `stored` (fields `next` sets replace stored ones).
pub(crate) fn merge(stored: &SettingsPatch, next: &SettingsPatch) -> SettingsPatch {
    fn pick<T: Clone>(next: &Option<T>, stored: &Option<T>) -> Option<T> {
        next.clone().or_else(|| stored.clone())
    }
    SettingsPatch {
        default_model: pick(&next.default_model, &stored.default_model),
        context_size: pick(&next.context_size, &stored.context_size),
        temperature: pick(&next.temperature, &stored.temperature),
        locale: pick(&next.locale, &stored.locale),
        time_zone: pick(&next.time_zone, &stored.time_zone),
        system_prompt: pick(&next.system_prompt, &stored.system_prompt),
        enabled_tools: pick(&next.enabled_tools, &stored.enabled_tools),
        show_tool_events: pick(&next.show_tool_events, &stored.show_tool_events),
        streaming_messages: pick(&next.streaming_messages, &stored.streaming_messages),
        interface_language: pick(&next.interface_language, &stored.interface_language),
        request_timeout_millis: pick(&next.request_timeout_millis, &stored.request_timeout_millis),
        use_few_shot_examples: pick(&next.use_few_shot_examples, &stored.use_few_shot_examples),
    }
}

/// Turn options as a patch.
pub(crate) fn turn_patch(options: &TurnOptions) -> SettingsPatch {
    SettingsPatch {
        default_model: options.model.clone(),
        context_size: options.context_size,
        temperature: options.temperature,
        locale: options.locale.clone(),
        time_zone: options.time_zone.clone(),
        system_prompt: options.system_prompt.clone(),
        ..SettingsPatch::default()
    }
}

/// Normalizes and validates a patch (trims strings, dedups tools). Model names are checked by
/// the caller, which knows the registry. Returns the first problem as the original did.
pub(crate) fn normalize(
    patch: &SettingsPatch,
    known_tools: &[String],
) -> Result<SettingsPatch, String> {
    let mut patch = patch.clone();
    if let Some(model) = &patch.default_model {
        let model = model.trim();
        if model.is_empty() {
            return Err("defaultModel must not be blank.".to_owned());
        }
        patch.default_model = Some(model.to_owned());
    }
    if patch.context_size == Some(0) {
        return Err("contextSize must be positive.".to_owned());
    }
    if let Some(temperature) = patch.temperature
        && !(temperature.is_finite() && (0.0..=2.0).contains(&temperature))
    {
        return Err("temperature must be a number between 0 and 2.".to_owned());
    }
    if let Some(locale) = &patch.locale {
        let locale = locale.trim();
        if !valid_locale(locale) {
            return Err("locale must be a valid BCP 47 language tag.".to_owned());
        }
        patch.locale = Some(locale.to_owned());
    }
    if let Some(time_zone) = &patch.time_zone {
        let time_zone = time_zone.trim();
        if !valid_time_zone(time_zone) {
            return Err("timeZone must be a valid IANA time zone.".to_owned());
        }
        patch.time_zone = Some(time_zone.to_owned());
    }
    if let Some(prompt) = &patch.system_prompt {
        patch.system_prompt = Some(prompt.trim().to_owned()).filter(|prompt| !prompt.is_empty());
    }
    if let Some(language) = &patch.interface_language
        && !matches!(language.as_str(), "en" | "ru")
    {
        return Err("interfaceLanguage must be en or ru.".to_owned());
    }
    if let Some(timeout) = patch.request_timeout_millis
        && timeout < 1000
    {
        return Err("requestTimeoutMillis must be at least 1000.".to_owned());
    }
    if let Some(tools) = &patch.enabled_tools {
        let mut cleaned: Vec<String> = Vec::new();
        for tool in tools {
            let tool = tool.trim();
            if tool.is_empty() {
                return Err("enabledTools must not contain blank names.".to_owned());
            }
            if !cleaned.iter().any(|existing| existing == tool) {
                cleaned.push(tool.to_owned());
            }
        }
        let unknown: Vec<&String> = cleaned
            .iter()
            .filter(|tool| !known_tools.contains(tool))
            .collect();
        if !unknown.is_empty() {
            let names: Vec<&str> = unknown.iter().map(|tool| tool.as_str()).collect();
            return Err(format!(
                "enabledTools contains unknown tools: {}.",
                names.join(", ")
            ));
        }
        patch.enabled_tools = Some(cleaned);
    }
    Ok(patch)
}

/// A BCP 47 tag whose language is a recognised one (original §1.6: the language must have a
/// display name): an ISO 639-1 code, or an ISO 639-3 code that names a language (`und`, `mul`,
/// `mis`, `zxx` do not), then alphanumeric subtags of 1–8.
pub(crate) fn valid_locale(tag: &str) -> bool {
    let mut parts = tag.split(['-', '_']);
    let Some(language) = parts.next() else {
        return false;
    };
    recognised_language(language)
        && parts.all(|part| {
            (1..=8).contains(&part.len()) && part.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

fn recognised_language(code: &str) -> bool {
    if !code.chars().all(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    let code = code.to_ascii_lowercase();
    match code.len() {
        2 => isolang::Language::from_639_1(&code).is_some(),
        3 => {
            !matches!(code.as_str(), "und" | "mul" | "mis" | "zxx")
                && isolang::Language::from_639_3(&code).is_some()
        }
        _ => false,
    }
}

/// An IANA zone name (`UTC`, `Europe/Berlin`); checked against the system zone database
/// when one is installed.
pub(crate) fn valid_time_zone(name: &str) -> bool {
    let syntactic = !name.is_empty()
        && !name.starts_with('/')
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+'));
    if !syntactic {
        return false;
    }
    let database = Path::new("/usr/share/zoneinfo");
    if database.is_dir() {
        database.join(name).is_file()
    } else {
        true
    }
}

/// The machine's time zone, or `UTC`.
pub(crate) fn system_time_zone() -> String {
    if let Some(zone) = crate::config::env::read(crate::config::env::Var::Tz) {
        let zone = zone.trim_start_matches(':').to_owned();
        if valid_time_zone(&zone) {
            return zone;
        }
    }
    std::fs::read_link("/etc/localtime")
        .ok()
        .and_then(|target| {
            let text = target.to_string_lossy().into_owned();
            text.split_once("zoneinfo/")
                .map(|(_, zone)| zone.to_owned())
        })
        .filter(|zone| valid_time_zone(zone))
        .unwrap_or_else(|| "UTC".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> SettingsDefaults {
        SettingsDefaults {
            default_model: "gpt-5-mini".into(),
            context_size: 16000,
            temperature: 0.7,
            request_timeout_millis: 400_000,
            tools: vec!["ListFiles".into(), "Calculator".into()],
            time_zone: "UTC".into(),
            interface_language: Language::En,
        }
    }

    #[test]
    fn the_system_language_is_the_default_until_the_user_sets_one() {
        let russian = SettingsDefaults {
            interface_language: Language::Ru,
            ..defaults()
        };
        let unset = effective(&russian, &SettingsPatch::default());
        assert_eq!(unset.interface_language, "ru");
        assert_eq!(unset.locale, "ru-RU");
        let chosen = SettingsPatch {
            interface_language: Some("en".into()),
            ..SettingsPatch::default()
        };
        assert_eq!(effective(&russian, &chosen).interface_language, "en");
        assert_eq!(
            effective(&defaults(), &SettingsPatch::default()).interface_language,
            "en"
        );
    }

    #[test]
    fn stored_patch_overlays_defaults_and_drops_unknown_tools() {
        let stored = SettingsPatch {
            temperature: Some(0.1),
            enabled_tools: Some(vec!["Calculator".into(), "Gone".into()]),
            system_prompt: Some("  ".into()),
            ..SettingsPatch::default()
        };
        let settings = effective(&defaults(), &stored);
        assert_eq!(settings.temperature, 0.1);
        assert_eq!(settings.enabled_tools, vec!["Calculator".to_owned()]);
        assert_eq!(settings.system_prompt, None);
        assert_eq!(settings.context_size, 16000);
        assert_eq!(settings.locale, "en-US");
    }

    #[test]
    fn merge_keeps_what_the_next_patch_leaves_out() {
        let stored = SettingsPatch {
            temperature: Some(0.1),
            locale: Some("ru-RU".into()),
            ..SettingsPatch::default()
        };
        let next = SettingsPatch {
            temperature: Some(0.3),
            ..SettingsPatch::default()
        };
        let merged = merge(&stored, &next);
        assert_eq!(merged.temperature, Some(0.3));
        assert_eq!(merged.locale.as_deref(), Some("ru-RU"));
    }

    #[test]
    fn validation_messages() {
        let tools = vec!["ListFiles".to_owned()];
        let cases = [
            (
                SettingsPatch {
                    context_size: Some(0),
                    ..Default::default()
                },
                "contextSize must be positive.",
            ),
            (
                SettingsPatch {
                    temperature: Some(f32::NAN),
                    ..Default::default()
                },
                "temperature must be a number between 0 and 2.",
            ),
            (
                SettingsPatch {
                    locale: Some("und".into()),
                    ..Default::default()
                },
                "locale must be a valid BCP 47 language tag.",
            ),
            (
                SettingsPatch {
                    locale: Some("x".into()),
                    ..Default::default()
                },
                "locale must be a valid BCP 47 language tag.",
            ),
            (
                SettingsPatch {
                    time_zone: Some("Mars/Olympus".into()),
                    ..Default::default()
                },
                "timeZone must be a valid IANA time zone.",
            ),
            (
                SettingsPatch {
                    interface_language: Some("de".into()),
                    ..Default::default()
                },
                "interfaceLanguage must be en or ru.",
            ),
            (
                SettingsPatch {
                    request_timeout_millis: Some(999),
                    ..Default::default()
                },
                "requestTimeoutMillis must be at least 1000.",
            ),
            (
                SettingsPatch {
                    enabled_tools: Some(vec![" ".into()]),
                    ..Default::default()
                },
                "enabledTools must not contain blank names.",
            ),
            (
                SettingsPatch {
                    enabled_tools: Some(vec!["Nope".into()]),
                    ..Default::default()
                },
                "enabledTools contains unknown tools: Nope.",
            ),
            (
                SettingsPatch {
                    default_model: Some(" ".into()),
                    ..Default::default()
                },
                "defaultModel must not be blank.",
            ),
        ];
        for (patch, message) in cases {
            assert_eq!(normalize(&patch, &tools).unwrap_err(), message);
        }
        let ok = normalize(
            &SettingsPatch {
                locale: Some(" ru-RU ".into()),
                enabled_tools: Some(vec!["ListFiles".into(), " ListFiles ".into()]),
                system_prompt: Some("  be brief ".into()),
                ..Default::default()
            },
            &tools,
        )
        .unwrap();
        assert_eq!(ok.locale.as_deref(), Some("ru-RU"));
        assert_eq!(ok.enabled_tools, Some(vec!["ListFiles".to_owned()]));
        assert_eq!(ok.system_prompt.as_deref(), Some("be brief"));
    }

    #[test]
    fn locales_and_zones() {
        for tag in [
            "en",
            "en-US",
            "ru-RU",
            "zh-Hant-TW",
            "de_DE",
            "EN-gb",
            "fil-PH",
            "yue",
        ] {
            assert!(valid_locale(tag), "{tag}");
        }
        for tag in [
            "", "und", "e", "english", "en--US", "en-US!", "qq", "zz-ZZ", "xx", "qaa", "zxx",
            "mul", "q1",
        ] {
            assert!(!valid_locale(tag), "{tag}");
        }
        assert!(valid_time_zone("UTC"));
        assert!(!valid_time_zone("../etc/passwd"));
        assert!(!valid_time_zone("/etc/passwd"));
    }
}
