//! Speech to text end to end: the real `souz serve` with the test Whisper model placed in its
//! home hears espeak-ng's English through `POST /v1/speech/transcriptions` (a multipart upload
//! over a real socket, WAV and OGG/Opus) and through `souz listen FILE --verbose`; `GET
//! /v1/speech` says the local engine keeps audio on the machine. The audio is not kept.
//! `souz models list|pull|rm` know the speech models: a pull of `whisper-tiny` from a fake model
//! hub at its pinned commit follows the download to its three verified files.

use souz_e2e::Daemon;

const SENTENCE: &str = "The train to London leaves from platform number nine.";

fn daemon() -> Daemon {
    let home = tempfile::tempdir().unwrap();
    let folder = home.path().join("models/speech/whisper-tiny-en");
    std::fs::create_dir_all(&folder).unwrap();
    // Copied, not linked: the daemon reads a model's files beneath its folder and follows no
    // link (as it would refuse one planted there).
    for name in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(
            souz_core::testing::whisper_model_dir().join(name),
            folder.join(name),
        )
        .unwrap();
    }
    std::fs::write(
        home.path().join("config.toml"),
        "[speech]\nengine = \"local\"\nlocal_model = \"whisper-tiny-en\"\nlanguage = \"en\"\n",
    )
    .unwrap();
    Daemon::start_in(home, |_| {})
}

fn multipart(audio: &[u8], language: &str) -> (String, Vec<u8>) {
    let boundary = "e2e-voice-boundary-7f3a";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"language\"\r\n\r\n{language}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"speech\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(audio);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

#[test]
fn voice_the_daemon_hears_a_recording_over_http_and_through_souz_listen() {
    let daemon = daemon();
    let status = daemon.get("/v1/speech").json();
    assert_eq!(status["engine"], "local", "{status}");
    assert_eq!(status["cloud"], false);
    assert_eq!(status["ready"], true, "{status}");

    let wav = souz_core::testing::spoken_wav(SENTENCE, "en-us");
    let (ogg, _) = souz_core::testing::opus_files(&wav);
    for (name, audio) in [("WAV", &wav), ("OGG/Opus", &ogg)] {
        let (content_type, body) = multipart(audio, "en");
        let authorization = format!("Bearer {}", daemon.token);
        let response = souz_e2e::http(
            &daemon.address,
            "POST",
            "/v1/speech/transcriptions",
            &[
                ("Authorization", authorization.as_str()),
                ("Content-Type", content_type.as_str()),
            ],
            &body,
        )
        .unwrap();
        assert_eq!(response.status, 200, "{name}: {}", response.body);
        let heard = response.json();
        let text = heard["text"].as_str().unwrap();
        let rate = souz_core::testing::word_error_rate(SENTENCE, text);
        println!("{name}: WER {:.0}%, {}", rate * 100.0, heard["timings"]);
        assert!(rate <= 0.3, "{name}: {text}");
        assert_eq!(heard["engine"], "local");
        assert_eq!(heard["cloud"], false);
    }

    let file = daemon.user_home().join("speech.wav");
    std::fs::write(&file, &wav).unwrap();
    let output = daemon
        .cli()
        .args(["listen", "--verbose", "--language", "en"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines = stdout.lines();
    let text = lines.next().unwrap_or_default();
    assert!(
        souz_core::testing::word_error_rate(SENTENCE, text) <= 0.3,
        "{stdout}"
    );
    let verbose = lines.next().unwrap_or_default();
    assert!(
        verbose.contains("(local, en;") && verbose.contains("ms of audio"),
        "{stdout}"
    );

    // An engine the daemon does not know: refused, exit code 1, the daemon's words.
    let output = daemon
        .cli()
        .args(["listen", "--engine", "google"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("google"));

    // Nothing was kept (keep_audio is off).
    assert!(!daemon.home.path().join("speech").exists());
}

/// `souz models pull whisper-tiny` pulls the speech model's three files from the model hub (a
/// fake one on loopback serving the pinned commit: the JSON files as git blobs, the weights in
/// LFS) through the daemon and follows it to the end; `souz models list` shows it, `souz models
/// rm` deletes it.
#[test]
fn souz_models_pull_fetches_a_speech_model_from_the_pinned_commit() {
    use sha2::Digest;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let hub = runtime.block_on(souz_testkit::hub::FakeHub::start());
    let pin = souz_core::speech::catalog::find("whisper-tiny")
        .unwrap()
        .pins[0]
        .hub;
    let weights: Vec<u8> = (0..6u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let files = [
        ("config.json", br#"{"d_model": 384}"#.to_vec()),
        ("tokenizer.json", br#"{"model": {"type": "BPE"}}"#.to_vec()),
        ("model.safetensors", weights),
    ];
    let commit = hub.commit(pin.repo, pin.revision);
    for (name, bytes) in &files {
        if *name == "model.safetensors" {
            let sha256: String = sha2::Sha256::digest(bytes)
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect();
            commit.lfs(name, bytes.clone(), &sha256);
        } else {
            commit.plain(name, bytes.clone());
        }
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\nlocal_model_hub = \"{}\"\n\n[sandbox]\nnetwork_allow_hosts = [\"127.0.0.1\"]\n\n\
             [speech]\nengine = \"local\"\nlocal_model = \"whisper-tiny\"\n",
            hub.url()
        ),
    )
    .unwrap();
    let daemon = Daemon::start_in(home, |_| {});

    let listed = daemon.cli().args(["models", "list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{stdout}");
    let line = stdout
        .lines()
        .find(|line| line.starts_with("whisper-tiny "))
        .unwrap_or_default();
    assert!(
        line.contains("speech")
            && line.contains("missing")
            && line.contains("[speech] local_model"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the tests' model"),
        "whisper-tiny-en is placed by hand: {stdout}"
    );

    let output = daemon
        .cli()
        .args(["models", "pull", "whisper-tiny"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("whisper-tiny") && stdout.contains("ready"),
        "{stdout}"
    );
    let folder = daemon.home.path().join("models/speech/whisper-tiny");
    for (name, bytes) in &files {
        assert_eq!(&std::fs::read(folder.join(name)).unwrap(), bytes, "{name}");
    }

    let removed = daemon
        .cli()
        .args(["models", "rm", "whisper-tiny"])
        .output()
        .unwrap();
    assert!(removed.status.success(), "{removed:?}");
    assert!(!folder.join("model.safetensors").exists());
    // The tests' model has no source: the pull says where its files belong.
    let refused = daemon
        .cli()
        .args(["models", "pull", "whisper-tiny-en"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("tests' model"),
        "{refused:?}"
    );
    drop(hub);
}
