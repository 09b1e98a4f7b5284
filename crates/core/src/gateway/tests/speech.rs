//! Speech to text over HTTP: `POST /v1/speech/transcriptions` against fake servers speaking
//! the real wire formats (an OpenAI-compatible `/v1/audio/transcriptions`, SaluteSpeech's OAuth
//! and `speech:recognize`): success, a refused key, rate limiting, a server too slow, audio too
//! long, each said in the person's language; the in-process engine with the test model; and
//! `GET /v1/speech`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use axum::routing::post;

use super::*;

/// A scripted answer: status, body, `Retry-After`.
type Scripted = (u16, String, Option<&'static str>);
/// A request received: path, headers as `name: value` lines, body.
type Received = (String, String, Vec<u8>);

/// What a fake answers, and what it received.
#[derive(Clone, Default)]
struct Fake {
    /// `(status, body, Retry-After)` for the next requests; the last one repeats.
    script: Arc<Mutex<Vec<Scripted>>>,
    /// Seconds to wait before answering.
    delay: Arc<Mutex<u64>>,
    /// Every request: path, headers as `name: value` lines, body.
    seen: Arc<Mutex<Vec<Received>>>,
}

impl Fake {
    fn answer(&self, status: u16, body: &str, retry_after: Option<&'static str>) {
        self.script
            .lock()
            .unwrap()
            .push((status, body.to_owned(), retry_after));
    }

    async fn reply(
        &self,
        path: String,
        headers: &axum::http::HeaderMap,
        body: Vec<u8>,
    ) -> axum::response::Response {
        let lines = headers
            .iter()
            .map(|(name, value)| format!("{name}: {}", value.to_str().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join("\n");
        self.seen.lock().unwrap().push((path, lines, body));
        let delay = *self.delay.lock().unwrap();
        if delay > 0 {
            tokio::time::sleep(Duration::from_secs(delay)).await;
        }
        let (status, body, retry_after) = {
            let mut script = self.script.lock().unwrap();
            if script.len() > 1 {
                script.remove(0)
            } else {
                script.first().cloned().unwrap_or((200, "{}".into(), None))
            }
        };
        let mut response = (StatusCode::from_u16(status).unwrap(), body).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        if let Some(after) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, after.parse().unwrap());
        }
        response
    }

    /// Serves `router` on loopback; the base URL.
    async fn serve(router: axum::Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        crate::tasks::spawn_in_test(async move {
            axum::serve(listener, router).await.unwrap();
        });
        format!("http://{address}")
    }
}

async fn transcriptions(
    State(fake): State<Fake>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    fake.reply("/v1/audio/transcriptions".into(), &headers, body.to_vec())
        .await
}

async fn oauth(
    State(fake): State<Fake>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    fake.reply("/oauth".into(), &headers, body.to_vec()).await
}

async fn recognize(
    State(fake): State<Fake>,
    Query(query): Query<std::collections::HashMap<String, String>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    let language = query.get("language").cloned().unwrap_or_default();
    fake.reply(
        format!("/speech:recognize?language={language}"),
        &headers,
        body.to_vec(),
    )
    .await
}

/// A one-second 440 Hz tone as a 16 kHz WAV.
fn tone(seconds: usize) -> Vec<u8> {
    let samples: Vec<f32> = (0..16_000 * seconds)
        .map(|i| (i as f32 * 440.0 * std::f32::consts::TAU / 16_000.0).sin() * 0.3)
        .collect();
    crate::speech::Audio::new(samples).to_wav()
}

/// A multipart upload of `audio` with the given text fields.
fn upload(f: &Fixture, audio: &[u8], fields: &[(&str, &str)]) -> Request<Body> {
    let boundary = "souz-test-boundary";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(audio);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    f.authed("/v1/speech/transcriptions")
        .method("POST")
        .header(
            header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(Body::from(body))
        .unwrap()
}

async fn russian(f: &Fixture) {
    let request = f
        .authed("/v1/me/settings")
        .method("PATCH")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"interfaceLanguage":"ru"}"#))
        .unwrap();
    assert_eq!(f.send(request).await.0, StatusCode::OK);
}

/// An OpenAI-compatible server: the request is a multipart form with the WAV, model,
/// language and response_format; its text comes back with the engine and timings. Then its
/// 401, 429 (Retry-After passed on) and a server too slow, in Russian.
#[tokio::test]
async fn a_transcription_server_is_heard_and_its_failures_are_said() {
    let fake = Fake::default();
    fake.answer(200, r#"{"text":"  hello from the server "}"#, None);
    let base = Fake::serve(
        axum::Router::new()
            .route("/v1/audio/transcriptions", post(transcriptions))
            .with_state(fake.clone()),
    )
    .await;
    let server = format!("{base}/v1");
    let f = Fixture::with(move |config| {
        config.speech.engine = "server".into();
        config.speech.server_url = server;
        config.speech.timeout_seconds = 1;
    })
    .await;

    let (status, body) = f.send(upload(&f, &tone(1), &[("language", "en")])).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"], "hello from the server");
    assert_eq!(body["engine"], "server");
    assert_eq!(
        body["cloud"], false,
        "a server on loopback keeps audio home"
    );
    assert_eq!(body["language"], "en");
    assert_eq!(body["audioMs"], 1000);
    assert!(
        body["timings"]["totalMs"].as_u64().unwrap()
            >= body["timings"]["transcribeMs"].as_u64().unwrap()
    );
    let (path, headers, sent) = fake.seen.lock().unwrap()[0].clone();
    assert_eq!(path, "/v1/audio/transcriptions");
    assert!(
        headers.contains("content-type: multipart/form-data; boundary="),
        "{headers}"
    );
    let sent = String::from_utf8_lossy(&sent);
    for part in [
        "name=\"model\"\r\n\r\nwhisper-1\r\n",
        "name=\"language\"\r\n\r\nen\r\n",
        "name=\"response_format\"\r\n\r\njson\r\n",
        "name=\"file\"; filename=\"audio.wav\"",
        "RIFF",
    ] {
        assert!(sent.contains(part), "{part} not sent");
    }

    russian(&f).await;
    fake.script.lock().unwrap().clear();
    fake.answer(
        401,
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
        None,
    );
    let (status, body) = f.send(upload(&f, &tone(1), &[])).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(code(&body), "conflict");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("не принял ключ"), "{message}");

    fake.script.lock().unwrap().clear();
    fake.answer(
        429,
        r#"{"error":{"message":"Rate limit reached"}}"#,
        Some("7"),
    );
    let response = f.app().oneshot(upload(&f, &tone(1), &[])).await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()[header::RETRY_AFTER], "7");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("через 7 с"),
        "{body}"
    );
    // The language defaulted to the interface's (Russian now).
    let (_, _, sent) = fake.seen.lock().unwrap().last().cloned().unwrap();
    assert!(String::from_utf8_lossy(&sent).contains("name=\"language\"\r\n\r\nru\r\n"));

    fake.script.lock().unwrap().clear();
    fake.answer(200, r#"{"text":"late"}"#, None);
    *fake.delay.lock().unwrap() = 3;
    let started = std::time::Instant::now();
    let (status, body) = f.send(upload(&f, &tone(1), &[])).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("не ответил за 1 с"),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// Audio Souz refuses before any engine runs: too long, not audio, no audio, a bad engine.
#[tokio::test]
async fn unreadable_or_too_long_audio_is_refused_before_any_engine() {
    let f = Fixture::with(|config| {
        config.speech.engine = "server".into();
        // Nothing listens here: the refusals must come before any request.
        config.speech.server_url = "http://127.0.0.1:9/v1".into();
    })
    .await;
    let long = crate::speech::Audio::new(vec![0.0; 16_000 * 121]).to_wav();
    let (status, body) = f.send(upload(&f, &long, &[])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 120 seconds")
    );
    russian(&f).await;
    let (status, body) = f.send(upload(&f, &long, &[])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("не больше 120 секунд"),
        "{body}"
    );
    let (status, body) = f.send(upload(&f, b"ID3 not audio", &[])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("WAV, OGG/Opus или WebM/Opus"),
        "{body}"
    );
    let (status, _) = f.send(upload(&f, b"", &[])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = f.send(upload(&f, &tone(1), &[("engine", "google")])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("google")
    );
    // Over 25 MiB: refused by its length before the body is read.
    let huge = vec![0u8; (25 << 20) + (128 << 10)];
    let (status, _) = f.send(upload(&f, &huge, &[])).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    // A plain JSON body is not an upload.
    let request = f
        .authed("/v1/speech/transcriptions")
        .method("POST")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{}"))
        .unwrap();
    assert_eq!(f.send(request).await.0, StatusCode::BAD_REQUEST);
}

/// SaluteSpeech: the key is exchanged once (Basic auth, RqUID, scope) and the token reused;
/// recognition gets 16-bit PCM with its content type and the language; a 401 from
/// recognition fetches a fresh token once; a refused key is said as such.
#[tokio::test]
async fn salute_speech_exchanges_its_key_once_and_recognises_pcm() {
    let auth = Fake::default();
    let far = chrono::Utc::now().timestamp_millis() + 30 * 60 * 1000;
    auth.answer(
        200,
        &format!(r#"{{"access_token":"salute-token-1","expires_at":{far}}}"#),
        None,
    );
    let speech = Fake::default();
    speech.answer(200, r#"{"result":["привет мир"],"emotions":[{"negative":0.1,"neutral":0.8,"positive":0.1}],"status":200}"#, None);
    let auth_base = Fake::serve(
        axum::Router::new()
            .route("/oauth", post(oauth))
            .with_state(auth.clone()),
    )
    .await;
    let speech_base = Fake::serve(
        axum::Router::new()
            .route("/rest/v1/speech:recognize", post(recognize))
            .with_state(speech.clone()),
    )
    .await;
    let f = Fixture::with(move |config| {
        config.speech.engine = "salute".into();
        config.speech.salute_auth_url = format!("{auth_base}/oauth");
        config.speech.salute_url = format!("{speech_base}/rest/v1");
    })
    .await;
    // No key yet: said, nothing sent.
    let (status, body) = f.send(upload(&f, &tone(1), &[("language", "ru")])).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("salute_speech")
    );
    f.runtime
        .handle()
        .set_service_key("salute_speech", "c2FsdXRlLWF1dGgta2V5")
        .await
        .unwrap();

    for _ in 0..2 {
        let (status, body) = f.send(upload(&f, &tone(1), &[("language", "ru")])).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["text"], "привет мир");
        assert_eq!(body["engine"], "salute");
        assert_eq!(body["cloud"], true);
    }
    let exchanges = auth.seen.lock().unwrap().clone();
    assert_eq!(exchanges.len(), 1, "the token is reused");
    let (_, headers, form) = &exchanges[0];
    assert!(
        headers.contains("authorization: Basic c2FsdXRlLWF1dGgta2V5"),
        "{headers}"
    );
    assert!(headers.contains("rquid: "), "{headers}");
    assert_eq!(String::from_utf8_lossy(form), "scope=SALUTE_SPEECH_PERS");
    let (path, headers, pcm) = speech.seen.lock().unwrap()[0].clone();
    assert_eq!(path, "/speech:recognize?language=ru-RU");
    assert!(
        headers.contains("authorization: Bearer salute-token-1"),
        "{headers}"
    );
    assert!(
        headers.contains("content-type: audio/x-pcm;bit=16;rate=16000"),
        "{headers}"
    );
    assert_eq!(pcm.len(), 32_000, "one second of 16-bit samples, no header");

    // The token was revoked early: one fresh exchange, then success.
    speech.script.lock().unwrap().clear();
    speech.answer(401, r#"{"status":401,"message":"token expired"}"#, None);
    speech.answer(
        200,
        r#"{"result":["снова"],"emotions":[],"status":200}"#,
        None,
    );
    let (status, body) = f.send(upload(&f, &tone(1), &[("language", "ru")])).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"], "снова");
    assert_eq!(auth.seen.lock().unwrap().len(), 2);

    // A key SaluteSpeech refuses.
    f.runtime
        .handle()
        .set_service_key("salute_speech", "d3Jvbmcta2V5LXZhbHVl")
        .await
        .unwrap();
    auth.script.lock().unwrap().clear();
    auth.answer(
        401,
        r#"{"code":6,"message":"credentials doesn't match db data"}"#,
        None,
    );
    let (status, body) = f.send(upload(&f, &tone(1), &[("language", "ru")])).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("salute refused the key"),
        "{body}"
    );
    // A language it does not know.
    let (status, _) = f.send(upload(&f, &tone(1), &[("language", "de")])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// The in-process engine: not ready without its model (said by `GET /v1/speech` and by a
/// transcription), then the test model placed in the home hears espeak's English.
#[tokio::test]
async fn the_local_engine_needs_its_model_then_hears() {
    let f = Fixture::with(|config| {
        config.speech.local_model = "whisper-tiny-en".into();
        config.speech.language = "en".into();
    })
    .await;
    let (status, body) = f
        .send(f.authed("/v1/speech").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["engine"], "local");
    assert_eq!(body["cloud"], false);
    assert_eq!(body["ready"], false);
    assert_eq!(body["model"], "whisper-tiny-en");
    assert_eq!(body["languages"], serde_json::json!(["en"]));
    assert!(body["reason"].as_str().unwrap().contains("not downloaded"));
    let wav = crate::testing::spoken_wav(
        "The train to London leaves from platform number nine.",
        "en-us",
    );
    let (status, body) = f.send(upload(&f, &wav, &[])).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    let dir = f
        .runtime
        .home()
        .path()
        .join("models/speech/whisper-tiny-en");
    std::fs::create_dir_all(&dir).unwrap();
    for name in crate::speech::catalog::FILES {
        std::fs::copy(
            crate::testing::whisper_model_dir().join(name),
            dir.join(name),
        )
        .unwrap();
    }
    let (_, body) = f
        .send(f.authed("/v1/speech").body(Body::empty()).unwrap())
        .await;
    assert_eq!(body["ready"], true, "{body}");
    let (status, body) = f.send(upload(&f, &wav, &[])).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let text = body["text"].as_str().unwrap().to_lowercase();
    assert!(text.contains("platform"), "{text}");
    assert_eq!(body["engine"], "local");
    assert_eq!(body["cloud"], false);
    assert!(f.runtime.handle().speech().loaded());
}

/// A model folder whose files do not load (a cut-short weights file) is the person's to mend,
/// not an internal error: 409 saying which file and what to do; weights behind a link are no
/// model at all (409, where its files belong), in the person's language.
#[tokio::test]
async fn a_broken_local_model_is_said_as_a_conflict_to_mend() {
    let f = Fixture::with(|config| {
        config.speech.local_model = "whisper-tiny-en".into();
        config.speech.language = "en".into();
    })
    .await;
    let dir = f
        .runtime
        .home()
        .path()
        .join("models/speech/whisper-tiny-en");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["config.json", "tokenizer.json"] {
        std::fs::copy(
            crate::testing::whisper_model_dir().join(name),
            dir.join(name),
        )
        .unwrap();
    }
    std::fs::write(dir.join("model.safetensors"), b"not the weights").unwrap();
    let wav = tone(1);
    let (status, body) = f.send(upload(&f, &wav, &[])).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("could not be loaded"), "{body}");
    assert!(message.contains("replace its files"), "{body}");

    // The weights as a link to good ones elsewhere: not the model at all (no link followed),
    // said as a model still to be placed, in the person's language.
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    std::os::unix::fs::symlink(
        crate::testing::whisper_model_dir().join("model.safetensors"),
        dir.join("model.safetensors"),
    )
    .unwrap();
    russian(&f).await;
    let (status, body) = f.send(upload(&f, &wav, &[])).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("не загружена"), "{body}");
    assert!(message.contains("model.safetensors"), "{body}");
}

/// `[speech] keep_audio` keeps the upload, owner-only, under the Souz home; off (the default,
/// the other tests) nothing is written.
#[tokio::test]
async fn recordings_are_kept_only_when_asked() {
    let fake = Fake::default();
    fake.answer(200, r#"{"text":"kept"}"#, None);
    let base = Fake::serve(
        axum::Router::new()
            .route("/v1/audio/transcriptions", post(transcriptions))
            .with_state(fake.clone()),
    )
    .await;
    let f = Fixture::with(move |config| {
        config.speech.engine = "server".into();
        config.speech.server_url = format!("{base}/v1");
        config.speech.keep_audio = true;
    })
    .await;
    let wav = tone(1);
    let (status, body) = f.send(upload(&f, &wav, &[("language", "en")])).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let folder = f.runtime.home().path().join("speech");
    let kept: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].extension().unwrap(), "wav");
    assert_eq!(std::fs::read(&kept[0]).unwrap(), wav);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "owner-only: {mode:o}");
}
