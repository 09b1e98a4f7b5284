//! `/v1/models/local`: the profiles and their states, removing a model's file, pulls that are
//! refused (no source, no such profile) without touching anything, and pulls of the real test
//! model from a local mirror: in the background with ordered progress events, stopped by
//! removing the model, and a file that is not the pinned one never taking its name; pulls from
//! a fake model hub at the profile's pinned commit (resumed after a dropped transfer, checked
//! against the hub's SHA-256, a commit the hub does not have).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use super::*;

async fn call(f: &Fixture, method: &str, path: &str) -> (StatusCode, Value) {
    f.send(f.bare(method, path)).await
}

/// Where the test profile's file lives in the fixture's Souz home.
fn model_folder(f: &Fixture) -> std::path::PathBuf {
    f.runtime
        .handle()
        .config()
        .paths
        .home()
        .join("models/smollm2-135m-instruct")
}

fn smollm2(list: &Value) -> Value {
    item(list, "smollm2-135m-instruct")
}

fn item(list: &Value, name: &str) -> Value {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["name"] == name)
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn profiles_list_with_their_state_and_a_removed_file_is_missing() {
    let f = Fixture::new().await;
    let (status, list) = call(&f, "GET", "/v1/models/local").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    // The engine is there exactly when built with `local-llm` (the default).
    assert_eq!(
        list.get("engine").is_some(),
        cfg!(feature = "local-llm"),
        "{list}"
    );
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"qwen3-4b-instruct-2507"), "{names:?}");
    let model = smollm2(&list);
    assert_eq!(model["state"], "missing");
    assert_eq!(model["kind"], "chat");
    assert_eq!(model["pullable"], false, "no source configured");

    let dir = model_folder(&f);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SmolLM2-135M-Instruct.Q4_1.gguf"), b"gguf").unwrap();
    std::fs::write(dir.join("SmolLM2-135M-Instruct.Q4_1.gguf.part"), b"gg").unwrap();
    let (_, list) = call(&f, "GET", "/v1/models/local").await;
    assert_eq!(smollm2(&list)["state"], "ready");

    let (status, removed) = call(&f, "DELETE", "/v1/models/local/smollm2-135m-instruct").await;
    assert_eq!(status, StatusCode::OK, "{removed}");
    assert_eq!(removed["state"], "missing");
    assert!(!dir.join("SmolLM2-135M-Instruct.Q4_1.gguf").exists());
    assert!(!dir.join("SmolLM2-135M-Instruct.Q4_1.gguf.part").exists());
}

#[tokio::test]
async fn pulls_without_a_source_are_refused_and_change_nothing() {
    let f = Fixture::new().await;
    // Every real profile is pinned to a commit on the hub; the tests' model only to a SHA-256,
    // which needs a mirror.
    let (_, list) = call(&f, "GET", "/v1/models/local").await;
    for item in list["items"].as_array().unwrap() {
        let expected = item["name"] != "smollm2-135m-instruct";
        assert_eq!(item["pullable"], expected, "{item}");
    }
    let (status, body) = call(&f, "POST", "/v1/models/local/smollm2-135m-instruct/pull").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("local_model_mirror"), "{message}");
    assert!(message.contains(FILE), "{message}");
    let (status, body) = call(&f, "POST", "/v1/models/local/gpt-5/pull").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(!model_folder(&f).exists());
    let (status, _) = call(&f, "DELETE", "/v1/models/local/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// A mirror on loopback serving `<profile>/<file>`: the real test model (or, with `corrupt`,
/// bytes of the same length that are not it) in 1 MiB chunks, `pause` apart.
async fn mirror(corrupt: bool, pause: Duration) -> (String, tokio::task::JoinHandle<()>) {
    use axum::response::IntoResponse;

    let bytes = std::fs::read(crate::testing::local_llm_model()).unwrap();
    let bytes = if corrupt {
        vec![7u8; bytes.len()]
    } else {
        bytes
    };
    let body = Arc::new(bytes);
    let router = Router::new().route(
        &format!("/smollm2-135m-instruct/{FILE}"),
        axum::routing::get(move || {
            let body = Arc::clone(&body);
            async move {
                let length = body.len();
                let chunks = futures::stream::unfold(0usize, move |at| {
                    let body = Arc::clone(&body);
                    async move {
                        if at >= body.len() {
                            return None;
                        }
                        if at > 0 {
                            tokio::time::sleep(pause).await;
                        }
                        let end = (at + (1 << 20)).min(body.len());
                        let chunk = bytes::Bytes::copy_from_slice(&body[at..end]);
                        Some((Ok::<_, std::io::Error>(chunk), end))
                    }
                });
                (
                    [(header::CONTENT_LENGTH, length.to_string())],
                    axum::body::Body::from_stream(chunks),
                )
                    .into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let address = listener.local_addr().unwrap();
    let task = crate::tasks::spawn_in_test(async move {
        let _ = axum::serve(listener, router).await;
    });
    (format!("http://{address}"), task)
}

async fn with_mirror(url: String) -> Fixture {
    Fixture::with(move |config| {
        config.llm.local_model_mirror = url;
        config.sandbox.network_allow_hosts = vec!["127.0.0.1".into()];
    })
    .await
}

/// Polls the list until smollm2 is no longer downloading; answers its entry.
async fn settled(f: &Fixture) -> Value {
    settled_named(f, "smollm2-135m-instruct").await
}

/// Polls the list until the profile `name` is no longer downloading; answers its entry.
async fn settled_named(f: &Fixture, name: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let (_, list) = call(f, "GET", "/v1/models/local").await;
        let model = item(&list, name);
        if model["state"] != "downloading" {
            return model;
        }
        assert!(tokio::time::Instant::now() < deadline, "{model}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The stored `local.model.download.*` events, as sent.
async fn download_events(f: &Fixture) -> Vec<Value> {
    f.runtime_events("local.model.download.").await
}

/// The download's events once its end (completed, failed or cancelled) is stored: the list
/// shows the end as soon as the download's entry goes, and the events that say so are stored
/// a moment later, after the progress ahead of them.
async fn ended_events(f: &Fixture) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let events = download_events(f).await;
        let last = events.last().and_then(|event| event["type"].as_str());
        if last.is_some_and(|kind| !kind.ends_with(".progress")) {
            return events;
        }
        assert!(tokio::time::Instant::now() < deadline, "{events:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_pull_runs_in_the_background_reports_progress_in_order_and_verifies() {
    let (url, _server) = mirror(false, Duration::ZERO).await;
    let f = with_mirror(url).await;
    let (status, model) = call(&f, "POST", "/v1/models/local/smollm2-135m-instruct/pull").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{model}");
    assert_eq!(model["state"], "downloading", "{model}");
    assert_eq!(model["pullable"], true);
    assert_eq!(settled(&f).await["state"], "ready");

    let path = model_folder(&f).join(FILE);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        std::fs::metadata(crate::testing::local_llm_model())
            .unwrap()
            .len()
    );
    assert!(!path.with_file_name(format!("{FILE}.part")).exists());

    // Progress from 0 up to every byte, rising, at most once per percent; then `completed`.
    let events = ended_events(&f).await;
    let (last, progress) = events.split_last().unwrap();
    assert_eq!(last["type"], "local.model.download.completed", "{events:?}");
    assert_eq!(last["model"], "smollm2-135m-instruct");
    let received: Vec<u64> = progress
        .iter()
        .map(|event| {
            assert_eq!(event["type"], "local.model.download.progress", "{event}");
            assert_eq!(event["total"], 98_362_432);
            event["received"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(received.first(), Some(&0), "{received:?}");
    assert_eq!(received.last(), Some(&98_362_432), "{received:?}");
    assert!(
        received.windows(2).all(|pair| pair[0] < pair[1]),
        "{received:?}"
    );
    assert!(received.len() >= 3 && received.len() <= 101, "{received:?}");

    // Pulling what is there answers at once and fetches nothing.
    let (status, model) = call(&f, "POST", "/v1/models/local/smollm2-135m-instruct/pull").await;
    assert_eq!(status, StatusCode::OK, "{model}");
    assert_eq!(model["state"], "ready");
    assert_eq!(download_events(&f).await.len(), events.len());
}

#[tokio::test]
async fn removing_a_model_while_it_downloads_stops_the_download_and_leaves_nothing() {
    // About 100 chunks 50 ms apart: five seconds, stopped long before.
    let (url, _server) = mirror(false, Duration::from_millis(50)).await;
    let f = with_mirror(url).await;
    let (status, _) = call(&f, "POST", "/v1/models/local/smollm2-135m-instruct/pull").await;
    assert_eq!(status, StatusCode::ACCEPTED);
    // A second pull while it runs answers its state and starts nothing more.
    let (status, again) = call(&f, "POST", "/v1/models/local/smollm2-135m-instruct/pull").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    let dir = model_folder(&f);
    let part = dir.join(format!("{FILE}.part"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(&part).map_or(0, |metadata| metadata.len()) < 2 << 20 {
        assert!(tokio::time::Instant::now() < deadline, "nothing arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let (status, removed) = call(&f, "DELETE", "/v1/models/local/smollm2-135m-instruct").await;
    assert_eq!(status, StatusCode::OK, "{removed}");
    assert_eq!(removed["state"], "missing", "{removed}");
    assert!(!part.exists() && !dir.join(FILE).exists());
    // Nothing writes the file after the removal answered.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!part.exists() && !dir.join(FILE).exists());

    let events = ended_events(&f).await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.first(),
        Some(&"local.model.download.progress"),
        "{kinds:?}"
    );
    assert_eq!(
        kinds.last(),
        Some(&"local.model.download.cancelled"),
        "{kinds:?}"
    );
    assert_eq!(
        kinds
            .iter()
            .filter(|kind| **kind != "local.model.download.progress")
            .count(),
        1,
        "one download, one end: {kinds:?}"
    );
}

#[tokio::test]
async fn a_file_that_is_not_the_pinned_one_fails_and_never_takes_its_name() {
    let (url, _server) = mirror(true, Duration::ZERO).await;
    let f = with_mirror(url).await;
    let (status, _) = call(&f, "POST", "/v1/models/local/smollm2-135m-instruct/pull").await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let model = settled(&f).await;
    assert_eq!(model["state"], "failed", "{model}");
    let error = model["error"].as_str().unwrap();
    assert!(error.contains("does not match its checksum"), "{error}");
    let dir = model_folder(&f);
    assert!(!dir.join(FILE).exists());
    assert!(!dir.join(format!("{FILE}.part")).exists());
    let events = ended_events(&f).await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "local.model.download.failed", "{events:?}");
    assert_eq!(last["error"], error);
    // Removing the model forgets the failure.
    let (_, removed) = call(&f, "DELETE", "/v1/models/local/smollm2-135m-instruct").await;
    assert_eq!(removed["state"], "missing", "{removed}");
}

/// The Qwen profile's pin, which the fake hub serves with small bytes of its own.
const QWEN: &str = "qwen3-4b-instruct-2507";

fn qwen_pin() -> crate::llm::local::hub::HubPin {
    crate::llm::local::profiles::find(QWEN)
        .unwrap()
        .hub
        .unwrap()
}

fn qwen_file(f: &Fixture) -> std::path::PathBuf {
    let profile = crate::llm::local::profiles::find(QWEN).unwrap();
    let home = f.runtime.handle().config().paths.home().join("models");
    profile.path(&home)
}

/// Three MiB that are not all alike, and their SHA-256.
fn weights() -> (Vec<u8>, String) {
    use sha2::Digest;
    let bytes: Vec<u8> = (0..3u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let digest = hex::encode(sha2::Sha256::digest(&bytes));
    (bytes, digest)
}

async fn with_hub(hub: &souz_testkit::hub::FakeHub) -> Fixture {
    let url = hub.url().to_owned();
    Fixture::with(move |config| {
        config.llm.local_model_hub = url;
        config.sandbox.network_allow_hosts = vec!["127.0.0.1".into()];
    })
    .await
}

#[tokio::test]
async fn a_hub_pull_asks_for_the_pinned_commit_resumes_a_dropped_transfer_and_verifies() {
    let hub = souz_testkit::hub::FakeHub::start().await;
    let pin = qwen_pin();
    let (bytes, digest) = weights();
    hub.commit(pin.repo, pin.revision)
        .lfs(pin.path, bytes.clone(), &digest);
    hub.commit(pin.repo, pin.revision)
        .plain("README.md", b"# Qwen".to_vec());
    // The first transfer drops after one MiB, as a broken connection does.
    hub.cut_next_after(1 << 20);
    let f = with_hub(&hub).await;
    let path = format!("/v1/models/local/{QWEN}/pull");

    let (status, model) = call(&f, "POST", &path).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{model}");
    let model = settled_named(&f, QWEN).await;
    assert_eq!(model["state"], "failed", "{model}");
    let part = qwen_file(&f).with_extension("gguf.part");
    let kept = std::fs::metadata(&part).map_or(0, |metadata| metadata.len());
    assert!(kept > 0, "the partial file is kept for the next pull");
    ended_events(&f).await;

    // The next pull continues from what the partial file holds.
    let (status, model) = call(&f, "POST", &path).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{model}");
    let model = settled_named(&f, QWEN).await;
    assert_eq!(model["state"], "ready", "{model}");
    assert_eq!(std::fs::read(qwen_file(&f)).unwrap(), bytes);
    assert!(!part.exists());
    assert_eq!(
        hub.ranges(),
        [None, Some(format!("bytes={kept}-"))],
        "the second transfer asked for the rest only"
    );
    // Only the pinned commit's listing was asked for, never a branch.
    let listings = hub.listings();
    assert!(!listings.is_empty());
    for listing in &listings {
        assert_eq!(
            listing,
            &format!("/api/models/{}/tree/{}", pin.repo, pin.revision),
            "{listings:?}"
        );
    }
    // Progress counts toward the size the hub gave, not the profile's estimate.
    let events = download_events(&f).await;
    let totals: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "local.model.download.progress")
        .map(|event| &event["total"])
        .collect();
    assert!(
        totals.iter().all(|total| **total == bytes.len()),
        "{totals:?}"
    );
    assert_eq!(
        events.last().unwrap()["type"],
        "local.model.download.completed",
        "{events:?}"
    );
}

#[tokio::test]
async fn bytes_that_are_not_the_hubs_digest_never_take_the_name_and_a_missing_commit_says_so() {
    let hub = souz_testkit::hub::FakeHub::start().await;
    let pin = qwen_pin();
    let (bytes, _) = weights();
    let (_, other) = {
        use sha2::Digest;
        ((), hex::encode(sha2::Sha256::digest(b"other bytes")))
    };
    hub.commit(pin.repo, pin.revision)
        .lfs(pin.path, bytes, &other);
    let f = with_hub(&hub).await;
    let path = format!("/v1/models/local/{QWEN}/pull");
    let (status, _) = call(&f, "POST", &path).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let model = settled_named(&f, QWEN).await;
    assert_eq!(model["state"], "failed", "{model}");
    let error = model["error"].as_str().unwrap();
    assert!(error.contains("does not match its checksum"), "{error}");
    assert!(!qwen_file(&f).exists());
    assert!(!qwen_file(&f).with_extension("gguf.part").exists());

    // A hub without the pinned commit: the pull fails with the hub's reason, nothing fetched.
    let empty = souz_testkit::hub::FakeHub::start().await;
    let f = with_hub(&empty).await;
    let (status, _) = call(&f, "POST", &path).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let model = settled_named(&f, QWEN).await;
    assert_eq!(model["state"], "failed", "{model}");
    let error = model["error"].as_str().unwrap();
    assert!(
        error.contains(pin.revision) && error.contains(pin.repo),
        "{error}"
    );
    assert!(empty.ranges().is_empty());
    let events = ended_events(&f).await;
    assert_eq!(
        events.last().unwrap()["type"],
        "local.model.download.failed",
        "{events:?}"
    );
}
