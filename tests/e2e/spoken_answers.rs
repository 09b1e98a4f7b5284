//! Spoken answers end to end: the real daemon with `[voice] tts = "os"` reads a text aloud
//! through `espeak-ng` run confined by its own sandbox helper (Landlock and seccomp, like any
//! command), and `POST /v1/speech/synthesis` answers with a valid WAV; with the voice off the
//! route says so.

use souz_e2e::Daemon;

fn daemon_with(voice: &str) -> Daemon {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[voice]\n{voice}\n"),
    )
    .unwrap();
    Daemon::start_in(home, |_| {})
}

async fn synthesize(daemon: &Daemon, text: &str, language: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("http://{}/v1/speech/synthesis", daemon.address))
        .bearer_auth(&daemon.token)
        .json(&serde_json::json!({"text": text, "language": language}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_os_voice_reads_a_text_into_a_wav_through_the_confined_runner() {
    if !std::path::Path::new("/usr/bin/espeak-ng").is_file() {
        eprintln!("espeak-ng is not installed (the suite installs it): skipped");
        return;
    }
    let daemon = daemon_with("tts = \"os\"");
    let settings = daemon.get("/v1/voice").json();
    assert_eq!(settings["tts"], "os", "{settings}");
    assert_eq!(settings["ttsReady"], true, "{settings}");
    assert_eq!(settings["ttsCloud"], false, "{settings}");
    assert_eq!(settings["ttsLabel"], "espeak-ng", "{settings}");

    for (text, language) in [
        ("**Done.** The plants are watered.", "en"),
        ("Готово: цветы политы.", "ru"),
    ] {
        let response = synthesize(&daemon, text, language).await;
        assert_eq!(response.status(), 200, "{text}");
        assert_eq!(response.headers()["content-type"], "audio/wav");
        let wav = response.bytes().await.unwrap();
        assert_eq!(&wav[0..4], b"RIFF");
        assert_eq!(&wav[8..12], b"WAVE");
        let riff = u32::from_le_bytes(wav[4..8].try_into().unwrap()) as usize;
        assert_eq!(riff, wav.len() - 8, "{text}: the RIFF size is true");
        assert!(wav.len() > 22_050, "{text}: {} bytes", wav.len());
    }
}

#[tokio::test]
async fn with_the_voice_off_synthesis_is_refused_clearly() {
    let daemon = daemon_with("");
    let response = synthesize(&daemon, "Hello.", "en").await;
    assert_eq!(response.status(), 409);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "conflict", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("spoken answers are off"), "{message}");
    let empty = synthesize(&daemon, " ** ", "en").await;
    assert_eq!(empty.status(), 400);
}
