//! `/v1/speech/models`: pulling an in-process speech model's three files from a fake model hub
//! (`souz_testkit::hub`) at the commit the catalog pins — `model.safetensors` as an LFS file
//! listed by its SHA-256, the JSON files as plain git blobs listed by their blob id — in the
//! background with ordered progress events, resumed after a dropped transfer, into a `0700`
//! folder; a tampered file refused with nothing of it left and the model never complete; a hub
//! whose listing disagrees with the catalog's own pins refused before any byte is fetched;
//! pulls refused without touching anything (the tests' model, an unknown id); removal.

use std::time::Duration;

use souz_testkit::hub::{FakeHub, git_blob_id};

use super::*;
use crate::speech::catalog::{self, FILES, SpeechModel};

async fn call(f: &Fixture, method: &str, path: &str) -> (StatusCode, Value) {
    f.send(f.bare(method, path)).await
}

/// `GET /v1/speech`'s entry of the model `id`.
async fn listed(f: &Fixture, id: &str) -> Value {
    let (status, body) = call(f, "GET", "/v1/speech").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|model| model["id"] == id)
        .cloned()
        .unwrap()
}

/// Polls `GET /v1/speech` until the model `id` is no longer downloading; answers its entry.
async fn settled(f: &Fixture, id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let model = listed(f, id).await;
        if model["state"] != "downloading" {
            return model;
        }
        assert!(tokio::time::Instant::now() < deadline, "{model}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The stored `speech.model.download.*` events once the download's end is stored.
async fn ended_events(f: &Fixture) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let events = f.runtime_events("speech.model.download.").await;
        let last = events.last().and_then(|event| event["type"].as_str());
        if last.is_some_and(|kind| !kind.ends_with(".progress")) {
            return events;
        }
        assert!(tokio::time::Instant::now() < deadline, "{events:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn model(id: &str) -> &'static SpeechModel {
    catalog::find(id).unwrap()
}

fn folder(f: &Fixture, id: &str) -> std::path::PathBuf {
    model(id).dir(&f.runtime.handle().config().paths.home().join("models"))
}

/// `whisper-tiny`'s files as the fake hub serves them: small JSON files and three MiB of
/// weights that are not all alike.
fn tiny_files() -> [(&'static str, Vec<u8>); 3] {
    let weights: Vec<u8> = (0..3u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    [
        (
            "config.json",
            br#"{"d_model": 384, "encoder_layers": 4}"#.to_vec(),
        ),
        ("tokenizer.json", br#"{"model": {"type": "BPE"}}"#.to_vec()),
        ("model.safetensors", weights),
    ]
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A fake hub serving `whisper-tiny` at its pinned commit: the weights in LFS, the JSON files
/// in git.
async fn tiny_hub() -> FakeHub {
    let hub = FakeHub::start().await;
    let pin = model("whisper-tiny").pins[0].hub;
    let commit = hub.commit(pin.repo, pin.revision);
    for (name, bytes) in tiny_files() {
        if name == "model.safetensors" {
            commit.lfs(name, bytes.clone(), &sha256(&bytes));
        } else {
            commit.plain(name, bytes);
        }
    }
    hub
}

async fn with_hub(hub: &FakeHub, local_model: &str) -> Fixture {
    let url = hub.url().to_owned();
    let local_model = local_model.to_owned();
    Fixture::with(move |config| {
        config.llm.local_model_hub = url;
        config.sandbox.network_allow_hosts = vec!["127.0.0.1".into()];
        config.speech.engine = "local".into();
        config.speech.local_model = local_model;
    })
    .await
}

/// The events of a pull that failed and then completed: progress counts toward all three files'
/// sizes as the hub lists them and only rises within the second download, and each download
/// ends with exactly one event.
fn check_progress(events: &[Value]) {
    let total: usize = tiny_files().iter().map(|(_, bytes)| bytes.len()).sum();
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|kind| !kind.ends_with(".progress"))
            .collect::<Vec<_>>(),
        [
            &"speech.model.download.failed",
            &"speech.model.download.completed"
        ],
        "{kinds:?}"
    );
    let second: Vec<&Value> = events
        .iter()
        .skip_while(|event| event["type"] != "speech.model.download.failed")
        .skip(1)
        .filter(|event| event["type"] == "speech.model.download.progress")
        .collect();
    assert!(!second.is_empty(), "{events:?}");
    for event in &second {
        assert_eq!(event["model"], "whisper-tiny");
        assert_eq!(event["total"], total, "{event}");
    }
    let received: Vec<u64> = second
        .iter()
        .map(|event| event["received"].as_u64().unwrap())
        .collect();
    assert!(
        received.windows(2).all(|pair| pair[0] < pair[1]),
        "{received:?}"
    );
    assert_eq!(received.last().copied(), Some(total as u64));
}

#[tokio::test]
async fn a_speech_model_pull_fetches_its_three_pinned_files_resumes_and_verifies() {
    let hub = tiny_hub().await;
    // The weights' first transfer drops after one MiB, as a broken connection does.
    hub.cut_next_of("model.safetensors", 1 << 20);
    let f = with_hub(&hub, "whisper-tiny").await;
    let (_, status) = call(&f, "GET", "/v1/speech").await;
    assert_eq!(status["ready"], false, "{status}");
    let reason = status["reason"].as_str().unwrap();
    assert!(reason.contains("souz models pull whisper-tiny"), "{reason}");
    let entry = listed(&f, "whisper-tiny").await;
    assert_eq!(
        (&entry["state"], &entry["pullable"], &entry["selected"]),
        (
            &Value::from("missing"),
            &Value::from(true),
            &Value::from(true)
        ),
        "{entry}"
    );
    let pin = model("whisper-tiny").pins[0].hub;
    assert_eq!(
        entry["source"],
        format!("{}/{}/tree/{}", hub.url(), pin.repo, pin.revision)
    );

    let path = "/v1/speech/models/whisper-tiny/pull";
    let (status, started) = call(&f, "POST", path).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    assert_eq!(started["state"], "downloading", "{started}");
    let failed = settled(&f, "whisper-tiny").await;
    assert_eq!(failed["state"], "failed", "{failed}");
    let dir = folder(&f, "whisper-tiny");
    // The JSON files arrived verified; the weights are partial, so the model is not complete.
    assert!(dir.join("config.json").is_file() && dir.join("tokenizer.json").is_file());
    assert!(!dir.join("model.safetensors").exists());
    let kept = std::fs::metadata(dir.join("model.safetensors.part")).map_or(0, |m| m.len());
    assert!(kept > 0, "the partial weights are kept for the next pull");
    assert!(!SpeechModel::present(&dir));
    assert_eq!(call(&f, "GET", "/v1/speech").await.1["ready"], false);
    ended_events(&f).await;

    // The next pull keeps the verified files and continues the weights where they stopped.
    let (status, started) = call(&f, "POST", path).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let ready = settled(&f, "whisper-tiny").await;
    assert_eq!(ready["state"], "ready", "{ready}");
    for (name, bytes) in tiny_files() {
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), bytes, "{name}");
        assert!(!dir.join(format!("{name}.part")).exists(), "{name}.part");
    }
    assert_eq!(
        hub.ranges(),
        [None, None, None, Some(format!("bytes={kept}-"))],
        "each JSON file once, the weights twice: the second time only the rest"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }
    // Only the pinned commit's listing was asked for, never a branch.
    let listings = hub.listings();
    assert!(!listings.is_empty());
    for listing in &listings {
        assert_eq!(
            listing,
            &format!("/api/models/{}/tree/{}", pin.repo, pin.revision)
        );
    }
    let (_, status) = call(&f, "GET", "/v1/speech").await;
    assert_eq!(status["ready"], true, "{status}");

    check_progress(&ended_events(&f).await);
    // The local models' events say nothing of it.
    assert!(f.runtime_events("local.model.download.").await.is_empty());

    // A pull of a model that is there answers at once; removing it deletes its files.
    let (status, again) = call(&f, "POST", path).await;
    assert_eq!(
        (status, &again["state"]),
        (StatusCode::OK, &Value::from("ready"))
    );
    let (status, removed) = call(&f, "DELETE", "/v1/speech/models/whisper-tiny").await;
    assert_eq!(status, StatusCode::OK, "{removed}");
    assert_eq!(removed["state"], "missing", "{removed}");
    for name in FILES {
        assert!(!dir.join(name).exists(), "{name}");
    }
}

#[tokio::test]
async fn a_tampered_file_is_refused_and_leaves_nothing_of_itself() {
    let [_, (_, tokenizer), (_, weights)] = tiny_files();
    let pin = model("whisper-tiny").pins[0].hub;
    let path = "/v1/speech/models/whisper-tiny/pull";
    // A plain file whose bytes are not its listed blob id (same length).
    let hub = tiny_hub().await;
    let mut other = tokenizer.clone();
    other[0] ^= 1;
    hub.commit(pin.repo, pin.revision)
        .serve_instead("tokenizer.json", other.clone());
    let f = with_hub(&hub, "whisper-tiny").await;
    assert_eq!(call(&f, "POST", path).await.0, StatusCode::ACCEPTED);
    let failed = settled(&f, "whisper-tiny").await;
    assert_eq!(failed["state"], "failed", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("tokenizer.json")
            && error.contains("does not match its checksum")
            && error.contains(&format!("git blob {}", git_blob_id(&tokenizer))),
        "{error}"
    );
    let dir = folder(&f, "whisper-tiny");
    assert!(!dir.join("tokenizer.json").exists());
    assert!(!dir.join("tokenizer.json.part").exists());
    assert!(!dir.join("model.safetensors").exists(), "nothing after it");
    assert!(!SpeechModel::present(&dir));
    let events = ended_events(&f).await;
    assert_eq!(
        events.last().unwrap()["type"],
        "speech.model.download.failed"
    );

    // LFS weights whose bytes are not their listed SHA-256.
    let hub = tiny_hub().await;
    let mut other = weights.clone();
    other[1000] ^= 1;
    hub.commit(pin.repo, pin.revision)
        .serve_instead("model.safetensors", other);
    let f = with_hub(&hub, "whisper-tiny").await;
    assert_eq!(call(&f, "POST", path).await.0, StatusCode::ACCEPTED);
    let failed = settled(&f, "whisper-tiny").await;
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("model.safetensors") && error.contains(&sha256(&weights)),
        "{error}"
    );
    let dir = folder(&f, "whisper-tiny");
    assert!(!dir.join("model.safetensors").exists());
    assert!(!dir.join("model.safetensors.part").exists());
    assert!(!SpeechModel::present(&dir));
    assert_eq!(call(&f, "GET", "/v1/speech").await.1["ready"], false);

    // A plain file served longer than it is listed: its size is part of its id, so the
    // transfer stops there.
    let hub = tiny_hub().await;
    let [(_, config), ..] = tiny_files();
    let mut longer = config.clone();
    longer.extend_from_slice(&[b' '; 4096]);
    hub.commit(pin.repo, pin.revision)
        .serve_instead("config.json", longer);
    let f = with_hub(&hub, "whisper-tiny").await;
    assert_eq!(call(&f, "POST", path).await.0, StatusCode::ACCEPTED);
    let failed = settled(&f, "whisper-tiny").await;
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains(&format!(
            "config.json is longer than the {} bytes",
            config.len()
        )),
        "{error}"
    );
    let dir = folder(&f, "whisper-tiny");
    assert!(!dir.join("config.json").exists());
    assert!(!dir.join("config.json.part").exists());
}

#[tokio::test]
async fn a_hub_that_disagrees_with_the_catalogs_pins_or_lists_a_large_plain_file_gets_no_request() {
    // whisper-base pins its files' SHA-256s and sizes: a hub listing other files at the pinned
    // commit is refused before any byte is fetched.
    let hub = FakeHub::start().await;
    let base = model("whisper-base");
    let pin = base.pins[0].hub;
    for (name, bytes) in tiny_files() {
        let commit = hub.commit(pin.repo, pin.revision);
        if name == "model.safetensors" {
            commit.lfs(name, bytes.clone(), &sha256(&bytes));
        } else {
            commit.plain(name, bytes);
        }
    }
    let f = with_hub(&hub, "whisper-base").await;
    assert_eq!(
        call(&f, "POST", "/v1/speech/models/whisper-base/pull")
            .await
            .0,
        StatusCode::ACCEPTED
    );
    let failed = settled(&f, "whisper-base").await;
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("config.json") && error.contains("1983 bytes") && error.contains("refused"),
        "{error}"
    );
    assert!(hub.ranges().is_empty(), "{:?}", hub.ranges());
    assert!(!folder(&f, "whisper-base").exists());

    // A plain (non-LFS) entry over the limit is refused, whatever its blob id.
    let hub = FakeHub::start().await;
    let pin = model("whisper-tiny").pins[0].hub;
    let large = usize::try_from(crate::llm::local::hub::MAX_GIT_BLOB_BYTES).unwrap() + 1;
    for (name, bytes) in tiny_files() {
        let bytes = if name == "model.safetensors" {
            vec![0; large]
        } else {
            bytes
        };
        hub.commit(pin.repo, pin.revision).plain(name, bytes);
    }
    let f = with_hub(&hub, "whisper-tiny").await;
    assert_eq!(
        call(&f, "POST", "/v1/speech/models/whisper-tiny/pull")
            .await
            .0,
        StatusCode::ACCEPTED
    );
    let failed = settled(&f, "whisper-tiny").await;
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("model.safetensors") && error.contains("LFS"),
        "{error}"
    );
    assert!(hub.ranges().is_empty(), "{:?}", hub.ranges());
}

#[tokio::test]
async fn pulls_without_a_source_are_refused_and_change_nothing() {
    let f = Fixture::with(|config| {
        config.speech.local_model = "whisper-tiny-en".into();
    })
    .await;
    let entry = listed(&f, "whisper-tiny-en").await;
    assert_eq!(entry["pullable"], false, "{entry}");
    assert_eq!(entry["testModel"], true, "{entry}");
    assert!(entry.get("source").is_none(), "{entry}");
    let (_, status) = call(&f, "GET", "/v1/speech").await;
    let reason = status["reason"].as_str().unwrap();
    assert!(reason.contains("tests' model"), "{reason}");

    let (status, body) = call(&f, "POST", "/v1/speech/models/whisper-tiny-en/pull").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("tests' model") && message.contains("model.safetensors"),
        "{message}"
    );
    let (status, body) = call(&f, "POST", "/v1/speech/models/whisper-large/pull").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("whisper-base"), "{message}");
    assert_eq!(
        call(&f, "DELETE", "/v1/speech/models/nope").await.0,
        StatusCode::NOT_FOUND
    );
    assert!(
        !f.runtime
            .handle()
            .config()
            .paths
            .home()
            .join("models/speech")
            .exists()
    );
}
