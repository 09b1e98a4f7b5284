//! Spoken answers against a fake OpenAI speech server (its real wire format) and the real
//! `espeak-ng` when installed; the text bounds; WAV sizes.

use std::time::Duration;

use bytes::Bytes;
use souz_testkit::{FakeServer, Reply};

use super::api::Endpoint;
use super::os::fix_wav_sizes;
use super::*;
use crate::config::SandboxConfig;
use crate::llm::http::{HttpSettings, ProviderHttp};
use crate::llm::keys::ApiKey;
use crate::testing::TestHome;

/// An MP3 frame header and a little of a frame: what `/audio/speech` answers with.
const MP3: &[u8] = &[0xFF, 0xFB, 0x90, 0x64, 0, 1, 2, 3, 4, 5, 6, 7];

fn http() -> ProviderHttp {
    ProviderHttp::with_client(
        reqwest::Client::new(),
        HttpSettings {
            request_timeout: Duration::from_secs(10),
            max_retries: 0,
            ..HttpSettings::default()
        },
    )
}

fn openai(server: &FakeServer, key: &str) -> ApiSpeaker {
    ApiSpeaker::new(
        Endpoint::provider(ProviderId::OpenAi, &format!("{}/v1", server.url())),
        Some(ApiKey::new(key)),
        "gpt-4o-mini-tts".to_owned(),
        String::new(),
        http(),
    )
}

fn request(text: &str, language: &str) -> SpeechRequest {
    SpeechRequest {
        text: text.to_owned(),
        language: language.to_owned(),
    }
}

fn audio(content_type: &str, body: &[u8]) -> Reply {
    Reply::Full {
        status: 200,
        headers: Vec::new(),
        content_type: content_type.to_owned(),
        body: Bytes::copy_from_slice(body),
    }
}

#[tokio::test]
async fn the_speech_api_gets_model_input_voice_and_format_and_its_audio_comes_back() {
    let server = FakeServer::start().await;
    server.push("/v1/audio/speech", audio("audio/mpeg", MP3));
    let speaker = openai(&server, "sk-test-voice-1234");
    let cancel = CancellationToken::new();
    let spoken = speaker
        .speak(&request("Hello there.", "en"), &cancel)
        .await
        .unwrap();
    assert_eq!(spoken.bytes, MP3);
    assert_eq!(spoken.mime, "audio/mpeg");
    let sent = server.requests_to("/v1/audio/speech").pop().unwrap();
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer sk-test-voice-1234")
    );
    let body = sent.json();
    assert_eq!(body["model"], "gpt-4o-mini-tts");
    assert_eq!(body["input"], "Hello there.");
    assert_eq!(body["voice"], "alloy");
    assert_eq!(body["response_format"], "mp3");
    // The fake is on loopback, so even "OpenAI" there keeps the text on this machine.
    assert!(!speaker.cloud());
    assert_eq!(speaker.label(), "OpenAI (alloy)");
}

#[tokio::test]
async fn a_server_without_a_type_is_sniffed_and_one_sending_json_is_refused() {
    let server = FakeServer::start().await;
    server.push("/v1/audio/speech", audio("application/octet-stream", MP3));
    server.push(
        "/v1/audio/speech",
        Reply::json(200, serde_json::json!({"ok": true})),
    );
    let speaker = ApiSpeaker::new(
        Endpoint::server(&format!("{}/v1", server.url())),
        None,
        "kokoro".to_owned(),
        "af_sky".to_owned(),
        http(),
    );
    let cancel = CancellationToken::new();
    let spoken = speaker.speak(&request("Hi.", "en"), &cancel).await.unwrap();
    assert_eq!(spoken.mime, "audio/mpeg");
    let sent = server.requests_to("/v1/audio/speech").pop().unwrap();
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(sent.json()["voice"], "af_sky");
    assert!(!speaker.cloud(), "a server on loopback keeps the text here");
    let error = speaker
        .speak(&request("Hi.", "en"), &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(error, VoiceError::Malformed { .. }),
        "{error:?}: {error}"
    );
}

#[tokio::test]
async fn a_refused_key_and_a_rate_limit_are_said_clearly_without_the_key() {
    let server = FakeServer::start().await;
    server.push(
        "/v1/audio/speech",
        Reply::json(
            401,
            serde_json::json!({"error": {"message": "Incorrect API key provided: sk-test-****9999", "type": "invalid_request_error"}}),
        ),
    );
    server.push(
        "/v1/audio/speech",
        Reply::json(
            429,
            serde_json::json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
        )
        .header("retry-after", "20"),
    );
    let speaker = openai(&server, "sk-test-secret-9999");
    let cancel = CancellationToken::new();
    let refused = speaker
        .speak(&request("Hello.", "en"), &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, VoiceError::Refused { status: 401, .. }),
        "{refused:?}"
    );
    let said = refused.to_string();
    assert!(said.contains("OpenAI (alloy) refused the key"), "{said}");
    assert!(said.contains("Incorrect API key"), "{said}");
    assert!(!said.contains("sk-test-secret-9999"), "{said}");
    let limited = speaker
        .speak(&request("Hello.", "en"), &cancel)
        .await
        .unwrap_err();
    assert_eq!(
        limited,
        VoiceError::RateLimited {
            voice: "OpenAI (alloy)".to_owned(),
            retry_after: Some(Duration::from_secs(20)),
        }
    );
    assert!(
        limited.to_string().contains("asked to wait 20 s"),
        "{limited}"
    );
}

#[tokio::test]
async fn a_server_that_is_not_there_is_unreachable_and_cancel_stops_a_slow_one() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let speaker = ApiSpeaker::new(
        Endpoint::server(&format!("http://{address}/v1")),
        None,
        "m".to_owned(),
        String::new(),
        http(),
    );
    let cancel = CancellationToken::new();
    let error = speaker
        .speak(&request("Hi.", "en"), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(error, VoiceError::Unreachable { .. }), "{error:?}");

    let server = FakeServer::start().await;
    server.push("/v1/audio/speech", Reply::sse().hang());
    let slow = ApiSpeaker::new(
        Endpoint::server(&format!("{}/v1", server.url())),
        None,
        "m".to_owned(),
        String::new(),
        http(),
    );
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    let started = std::time::Instant::now();
    let hello = request("Hi.", "en");
    let (result, ()) = tokio::join!(slow.speak(&hello, &cancel), async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stopper.cancel();
    });
    assert_eq!(result.unwrap_err(), VoiceError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn text_is_cleaned_and_cut_at_a_sentence_end() {
    assert_eq!(
        prepare_text("**Hello**\n\n`world`\u{7}  again", 100).unwrap(),
        "Hello world again"
    );
    assert_eq!(prepare_text(" \n*# ", 100), Err(VoiceError::Empty));
    let long = "First sentence here. Second one is longer and goes on. Third.";
    assert_eq!(prepare_text(long, 40).unwrap(), "First sentence here.");
    let words = "one two three four five six seven eight nine ten";
    assert_eq!(prepare_text(words, 12).unwrap(), "one two");
    let russian = "Привет. Как дела? Всё хорошо, спасибо большое.";
    assert_eq!(prepare_text(russian, 20).unwrap(), "Привет. Как дела?");
    // A huge input costs bounded work.
    let huge = "a".repeat(10_000_000);
    assert_eq!(prepare_text(&huge, 50).unwrap().chars().count(), 50);
}

#[test]
fn the_language_is_a_short_code_with_a_fallback() {
    assert_eq!(spoken_language(Some("ru-RU"), "en"), "ru");
    assert_eq!(spoken_language(None, "ru"), "ru");
    assert_eq!(spoken_language(Some(""), ""), "en");
    assert_eq!(spoken_language(Some("--evil"), "en"), "en");
    assert_eq!(spoken_language(Some("1234"), "xx-y"), "xx");
}

#[test]
fn wav_sizes_are_made_true() {
    let mut wav = b"RIFF\xff\xff\xff\x7fWAVEfmt \x10\0\0\0".to_vec();
    wav.extend_from_slice(&[1, 0, 1, 0, 0x22, 0x56, 0, 0, 0x44, 0xac, 0, 0, 2, 0, 16, 0]);
    wav.extend_from_slice(b"data\xff\xff\xff\x7f");
    wav.extend_from_slice(&[0u8; 100]);
    let fixed = fix_wav_sizes(wav.clone()).unwrap();
    assert_eq!(
        u32::from_le_bytes(fixed[4..8].try_into().unwrap()) as usize,
        wav.len() - 8
    );
    assert_eq!(u32::from_le_bytes(fixed[40..44].try_into().unwrap()), 100);
    assert_eq!(fix_wav_sizes(b"ID3 not a wav".to_vec()), None);
    assert_eq!(fix_wav_sizes(wav[..44].to_vec()), None, "no samples");
}

/// Whether `espeak-ng` is installed where the voice looks for it (the suite installs it;
/// elsewhere the test says so and checks the "not installed" error instead).
fn espeak_installed() -> bool {
    [
        "/usr/bin/espeak-ng",
        "/usr/local/bin/espeak-ng",
        "/bin/espeak-ng",
    ]
    .iter()
    .any(|path| std::path::Path::new(path).is_file())
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn espeak_ng_reads_english_and_russian_into_a_valid_wav() {
    // Unconfined here: a unit test has no `__sandbox-exec` helper binary. The same call runs
    // confined in the end-to-end test of `POST /v1/speech/synthesis` (the real daemon).
    let home = TestHome::new();
    let config = SandboxConfig {
        allow_unconfined_commands: true,
        ..SandboxConfig::default()
    };
    let sandbox = Arc::new(
        Sandbox::new(&config, &home.paths())
            .unwrap()
            .with_confinement(crate::sandbox::Confinement::None {
                reason: "a unit test has no helper binary".into(),
            }),
    );
    if !espeak_installed() {
        let error = OsSpeaker::new(sandbox, String::new()).err().unwrap();
        assert!(
            error.to_string().contains("apt install espeak-ng"),
            "{error}"
        );
        eprintln!("espeak-ng is not installed: checked the error only");
        return;
    }
    let speaker = OsSpeaker::new(Arc::clone(&sandbox), String::new()).unwrap();
    assert!(!speaker.cloud());
    let cancel = CancellationToken::new();
    for (text, language) in [
        ("Hello, this is Souz reading an answer.", "en"),
        ("Привет, это Союз читает ответ.", "ru"),
        // Looks like options and shell: it is only text on standard input.
        ("--help; rm -rf ~ $(reboot)", "en"),
    ] {
        let spoken = speaker
            .speak(&request(text, language), &cancel)
            .await
            .unwrap_or_else(|error| panic!("{text}: {error}"));
        assert_eq!(spoken.mime, "audio/wav");
        let bytes = &spoken.bytes;
        assert_eq!(&bytes[0..4], b"RIFF");
        assert_eq!(&bytes[8..12], b"WAVE");
        assert_eq!(
            u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize,
            bytes.len() - 8
        );
        let data = bytes
            .windows(4)
            .position(|window| window == b"data")
            .unwrap();
        let samples = u32::from_le_bytes(bytes[data + 4..data + 8].try_into().unwrap()) as usize;
        assert_eq!(samples, bytes.len() - data - 8);
        // More than half a second of 16-bit mono at espeak-ng's 22050 Hz.
        assert!(samples > 22_050, "{text}: only {samples} bytes of samples");
        assert!(
            bytes[data + 8..].iter().any(|byte| *byte != 0),
            "{text}: silence"
        );
    }
}
