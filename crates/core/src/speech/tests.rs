//! The speech module's own tests: audio, engines' names, languages.

use super::*;

#[test]
fn engines_round_trip_by_name_and_only_local_stays_home() {
    for kind in EngineKind::ALL {
        assert_eq!(EngineKind::parse(kind.name()), Some(kind));
    }
    assert_eq!(EngineKind::parse(" OpenAI "), Some(EngineKind::OpenAi));
    assert_eq!(EngineKind::parse("google"), None);
    assert!(!EngineKind::Local.cloud());
    assert!(EngineKind::Salute.cloud());
}

#[test]
fn audio_writes_a_wav_that_decodes_back() {
    let samples: Vec<f32> = (0..16_000)
        .map(|i| (i as f32 * 440.0 * std::f32::consts::TAU / 16_000.0).sin() * 0.5)
        .collect();
    let audio = Audio::new(samples.clone());
    assert_eq!(audio.duration_ms(), 1000);
    let wav = audio.to_wav();
    assert_eq!(wav.len(), 44 + 32_000);
    let back = decode::decode(&wav).unwrap();
    assert_eq!(back.samples().len(), samples.len());
    for (a, b) in back.samples().iter().zip(&samples) {
        assert!((a - b).abs() < 1e-3);
    }
}

#[test]
fn languages_are_codes_and_default_to_the_interface() {
    use souz_protocol::language::Language;
    assert_eq!(service::language_code("ru-RU").unwrap(), "ru");
    assert_eq!(service::language_code(" EN ").unwrap(), "en");
    assert!(service::language_code("russian").is_err());
    assert!(service::language_code("r").is_err());
    let mut config = crate::config::Config::defaults(crate::config::SouzPaths::new("/tmp/x"));
    assert_eq!(
        SpeechService::language(&config, None, Language::Ru).unwrap(),
        "ru"
    );
    config.speech.language = "en".into();
    assert_eq!(
        SpeechService::language(&config, None, Language::Ru).unwrap(),
        "en"
    );
    assert_eq!(
        SpeechService::language(&config, Some("kk"), Language::Ru).unwrap(),
        "kk"
    );
}

#[test]
fn errors_are_said_in_both_languages() {
    use souz_protocol::language::Language;
    let error = SpeechError::TooLong {
        seconds: 300,
        limit: 120,
    };
    assert!(error.say(Language::En).contains("120 seconds"));
    assert!(error.say(Language::Ru).contains("120 секунд"));
    let limited = SpeechError::RateLimited {
        engine: "openai",
        retry_after: Some(Duration::from_secs(7)),
    };
    assert!(limited.say(Language::Ru).contains("через 7 с"));
}
