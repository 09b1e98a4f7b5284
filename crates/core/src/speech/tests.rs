//! The speech module's own tests: audio, engines' names, languages.

use tokio_util::sync::CancellationToken;

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

/// The English sentences the word error rate is measured on.
const ENGLISH: &[&str] = &[
    "The weather is nice today and we are going to the park.",
    "Please send the report to my manager before five o'clock.",
    "I would like a cup of coffee with milk and no sugar.",
    "The train to London leaves from platform number nine.",
    "Open the window because it is very warm in this room.",
];

/// Whisper tiny.en in process on espeak-ng's voice: the word error rate over the sentences
/// (printed, at most 30%), and WAV, OGG/Opus and WebM/Opus of one sentence all heard.
#[test]
fn whisper_hears_espeak_english_in_every_container() {
    let dir = crate::testing::whisper_model_dir();
    let mut model = whisper::WhisperModel::load(&dir).unwrap();
    let cancel = CancellationToken::new();
    let (mut errors, mut words) = (0.0, 0usize);
    for sentence in ENGLISH {
        let audio = decode::decode(&crate::testing::spoken_wav(sentence, "en-us")).unwrap();
        let started = std::time::Instant::now();
        let heard = model.transcribe(audio.samples(), "en", &cancel).unwrap();
        let rate = crate::testing::word_error_rate(sentence, &heard);
        let count = sentence.split_whitespace().count();
        errors += rate * count as f64;
        words += count;
        println!(
            "WER {:>5.1}%  {} ms for {} ms  said: {sentence}  heard: {heard}",
            rate * 100.0,
            started.elapsed().as_millis(),
            audio.duration_ms()
        );
    }
    let total = errors / words as f64;
    println!(
        "English word error rate over {} sentences: {:.1}%",
        ENGLISH.len(),
        total * 100.0
    );
    assert!(total <= 0.30, "word error rate {:.1}%", total * 100.0);

    let wav = crate::testing::spoken_wav(ENGLISH[3], "en-us");
    let (ogg, webm) = crate::testing::opus_files(&wav);
    for (name, file) in [("WAV", &wav), ("OGG/Opus", &ogg), ("WebM/Opus", &webm)] {
        let audio = decode::decode(file).unwrap();
        let heard = model.transcribe(audio.samples(), "en", &cancel).unwrap();
        let rate = crate::testing::word_error_rate(ENGLISH[3], &heard);
        println!("{name}: WER {:.1}%  heard: {heard}", rate * 100.0);
        assert!(rate <= 0.30, "{name}: {heard}");
    }

    // The English-only model refuses Russian instead of inventing English words.
    assert!(matches!(
        model.transcribe(&[0.0; 16_000], "ru", &cancel),
        Err(SpeechError::UnsupportedLanguage { .. })
    ));
    // A cancelled transcription stops.
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    assert_eq!(
        model.transcribe(&[0.0; 16_000], "en", &cancelled),
        Err(SpeechError::Cancelled)
    );
}

/// Audio longer than one 30 s window is heard window after window.
#[test]
fn whisper_hears_past_the_first_window() {
    let dir = crate::testing::whisper_model_dir();
    let mut model = whisper::WhisperModel::load(&dir).unwrap();
    let first = decode::decode(&crate::testing::spoken_wav(ENGLISH[0], "en-us")).unwrap();
    let last = decode::decode(&crate::testing::spoken_wav(ENGLISH[3], "en-us")).unwrap();
    // The first sentence, silence up to 31 s, then the last sentence.
    let mut samples = first.samples().to_vec();
    samples.resize(31 * 16_000, 0.0);
    samples.extend_from_slice(last.samples());
    let heard = model
        .transcribe(&samples, "en", &CancellationToken::new())
        .unwrap()
        .to_lowercase();
    println!("heard over two windows: {heard}");
    assert!(heard.contains("park"), "{heard}");
    assert!(
        heard.contains("platform") || heard.contains("london"),
        "{heard}"
    );
}
