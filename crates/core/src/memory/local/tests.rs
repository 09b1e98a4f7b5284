//! The local embedder on a real small model (all-MiniLM-L6-v2 from the PyPI package the test
//! scripts install; see `testing::embedding_model_dir`), and the model download against a local
//! HTTP server serving the same files: resume after a cut, checksum mismatch.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::*;
use crate::memory::download::{DownloadError, FileDigest, ModelFile, fetch_file, sha256_file};
use crate::memory::embedder::cosine;
use crate::memory::model::{Context, Kind, Scope};
use crate::memory::{Memory, MemoryParts, NewFact, NoWriter};
use crate::testing::{TestHome, embedding_model_dir};

fn minilm() -> &'static ModelProfile {
    profile("local/all-minilm-l6-v2").expect("profile")
}

fn embedder(idle: Duration) -> LocalEmbedder {
    LocalEmbedder::new(LocalOptions {
        profile: minilm(),
        dir: embedding_model_dir(),
        client: None,
        mirror: None,
        idle_unload: idle,
        retry_after: Duration::from_secs(60),
        on_status: None,
    })
}

#[test]
fn every_profile_is_a_known_config_value_and_pins_three_files() {
    let names: Vec<&str> = PROFILES.iter().map(|profile| profile.name).collect();
    assert_eq!(names, crate::config::memory::LOCAL_MODELS);
    assert!(names.contains(&DEFAULT_LOCAL_MODEL));
    assert_eq!(
        crate::config::memory::MemoryConfig::default().embeddings_model,
        format!("{LOCAL_PREFIX}{DEFAULT_LOCAL_MODEL}"),
        "memory uses the default local model unless told otherwise"
    );
    for profile in PROFILES {
        let files: Vec<&str> = profile.files.iter().map(|file| file.name).collect();
        assert_eq!(
            files,
            ["config.json", "tokenizer.json", "model.safetensors"]
        );
        for file in profile.files {
            assert_eq!(
                file.digest.sha256().map(str::len),
                Some(64),
                "{}",
                file.name
            );
            assert!(file.url.starts_with("https://"), "{}", file.url);
        }
    }
    assert_eq!(minilm().name, "all-minilm-l6-v2");
    assert_eq!(profile("all-minilm-l6-v2"), None);
}

#[tokio::test]
async fn the_test_model_is_the_pinned_one() {
    for file in minilm().files {
        let path = embedding_model_dir().join(file.name);
        assert_eq!(
            Some(sha256_file(&path).await.unwrap().as_str()),
            file.digest.sha256(),
            "{}",
            file.name
        );
    }
}

#[tokio::test]
async fn related_sentences_are_closer_than_an_unrelated_one() {
    let embedder = embedder(Duration::from_secs(600));
    let texts = [
        "The cat is sleeping on the sofa",
        "A kitten naps on the couch",
        "The quarterly tax report is due on Friday",
    ];
    let vectors = embedder
        .embed(
            texts.iter().map(|t| (*t).to_owned()).collect(),
            EmbedRole::Document,
        )
        .await
        .unwrap();
    assert_eq!(vectors.len(), 3);
    for vector in &vectors {
        assert_eq!(vector.len(), 384);
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }
    let related = cosine(&vectors[0], &vectors[1]);
    let unrelated = cosine(&vectors[0], &vectors[2]);
    assert!(
        related > unrelated + 0.3,
        "related {related}, unrelated {unrelated}"
    );
    // A batch gives what one text at a time gives (padding is masked out).
    let alone = embedder
        .embed(vec![texts[1].to_owned()], EmbedRole::Document)
        .await
        .unwrap();
    assert!(cosine(&alone[0], &vectors[1]) > 0.999);
}

#[tokio::test]
async fn dense_recall_finds_a_fact_that_shares_no_word_with_the_query() {
    let home = TestHome::new();
    let store = home.store().await;
    let memory = Memory::new(MemoryParts {
        store,
        embedder: Some(Arc::new(embedder(Duration::from_secs(600)))),
        writer: Arc::new(NoWriter),
    });
    for (title, body) in [
        ("Morning drink", "Green tea every morning, never coffee"),
        ("Car", "Drives a red Toyota Corolla"),
        ("Job", "Works as a backend engineer in Berlin"),
        ("Sport", "Runs a marathon every spring"),
    ] {
        memory
            .create_fact(NewFact {
                owner: "local".into(),
                scope: Scope::global(),
                kind: Kind::Semantic,
                title: title.into(),
                body: body.into(),
                canonical_key: None,
                confidence: 1.0,
                importance: None,
                pinned: false,
            })
            .await
            .unwrap();
    }
    let context = Context {
        owner: "local".into(),
        session: None,
        project: None,
    };
    let query = "which beverage do I prefer";
    let (selected, trace) = memory
        .select(crate::memory::recall::Query {
            context: &context,
            semantic_query: query,
            lexical_hints: &[query.to_owned()],
            max_facts: 3,
            token_budget: 700,
            scopes: None,
        })
        .await
        .unwrap();
    assert_eq!(trace.lexical, 0, "no shared word: {trace:?}");
    assert_eq!(trace.exact, 0, "{trace:?}");
    let first = selected.first().expect("a dense hit");
    assert_eq!(first.fact.title, "Morning drink", "{selected:?}");
    assert_eq!(first.sources, ["dense"]);
}

#[tokio::test]
async fn the_model_is_unloaded_when_idle_and_loaded_again_on_use() {
    let embedder = embedder(Duration::from_millis(50));
    assert_eq!(embedder.status(), ModelStatus::Ready);
    embedder
        .embed(vec!["hello".into()], EmbedRole::Query)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while embedder.is_loaded() {
        assert!(tokio::time::Instant::now() < deadline, "never unloaded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(embedder.status(), ModelStatus::Ready);
    let again = embedder
        .embed(vec!["hello".into()], EmbedRole::Query)
        .await
        .unwrap();
    assert_eq!(again[0].len(), 384);
}

#[tokio::test]
async fn a_missing_model_answers_not_ready_without_a_client() {
    let home = TestHome::new();
    let embedder = LocalEmbedder::new(LocalOptions {
        profile: minilm(),
        dir: home.paths().home().join("models/none"),
        client: None,
        mirror: None,
        idle_unload: Duration::from_secs(600),
        retry_after: Duration::from_secs(60),
        on_status: None,
    });
    assert_eq!(embedder.status(), ModelStatus::Missing);
    let error = embedder
        .embed(vec!["x".into()], EmbedRole::Query)
        .await
        .unwrap_err();
    assert_eq!(error.code, crate::memory::vectors::NOT_READY);
}

/// Serves the test model's files with `Range` support; the first request for
/// `model.safetensors` is cut after `cut` bytes (the connection ends early).
#[derive(Clone)]
struct Files {
    cut: usize,
    requests: Arc<AtomicUsize>,
    ranges: Arc<std::sync::Mutex<Vec<String>>>,
}

async fn serve(
    State(files): State<Files>,
    axum::extract::Path(name): axum::extract::Path<String>,
    headers: HeaderMap,
) -> Response {
    let Ok(bytes) = std::fs::read(embedding_model_dir().join(&name)) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let range = headers
        .get(header::RANGE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let nth = files.requests.fetch_add(1, Ordering::SeqCst);
    if let Some(range) = &range {
        files.ranges.lock().unwrap().push(range.clone());
        let start: usize = range
            .trim_start_matches("bytes=")
            .trim_end_matches('-')
            .parse()
            .unwrap();
        return (
            StatusCode::PARTIAL_CONTENT,
            [(
                header::CONTENT_RANGE,
                format!("bytes {start}-{}/{}", bytes.len() - 1, bytes.len()),
            )],
            bytes[start..].to_vec(),
        )
            .into_response();
    }
    if name == "model.safetensors" && nth == 0 && files.cut > 0 {
        // Promise everything, send the first `cut` bytes, then fail the stream (after a pause,
        // so the bytes sent are on their way before the connection breaks).
        let head = bytes[..files.cut].to_vec();
        let stream = futures::StreamExt::chain(
            futures::stream::iter(vec![Ok::<_, std::io::Error>(bytes::Bytes::from(head))]),
            futures::stream::once(async {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                Err(std::io::Error::other("cut"))
            }),
        );
        return (
            [(header::CONTENT_LENGTH, bytes.len().to_string())],
            axum::body::Body::from_stream(stream),
        )
            .into_response();
    }
    bytes.into_response()
}

async fn file_server(cut: usize) -> (std::net::SocketAddr, Files, tokio::task::JoinHandle<()>) {
    let files = Files {
        cut,
        requests: Arc::default(),
        ranges: Arc::default(),
    };
    let router = Router::new()
        .route("/{name}", get(serve))
        .with_state(files.clone());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let address = listener.local_addr().unwrap();
    let task = crate::tasks::spawn_in_test(async move {
        let _ = axum::serve(listener, router).await;
    });
    (address, files, task)
}

fn local_client() -> WebClient {
    WebClient::new(&["127.0.0.1".to_owned()]).unwrap()
}

fn leak_file(
    url: String,
    name: &'static str,
    digest: FileDigest<'static>,
    bytes: u64,
) -> ModelFile<'static> {
    ModelFile {
        name,
        url: Box::leak(url.into_boxed_str()),
        digest,
        bytes,
    }
}

#[tokio::test]
async fn a_cut_download_resumes_with_a_range_request_and_verifies() {
    let (address, files, _server) = file_server(1 << 20).await;
    let pinned = minilm().files[2];
    let file = leak_file(
        format!("http://{address}/model.safetensors"),
        "model.safetensors",
        pinned.digest,
        pinned.bytes,
    );
    let home = TestHome::new();
    let dir = home.paths().home().join("models/all-minilm-l6-v2");
    let client = local_client();
    let cancel = CancellationToken::new();
    let seen = std::sync::Mutex::new(Vec::new());
    let progress = |_: &ModelFile, received: u64| seen.lock().unwrap().push(received);
    let first = fetch_file(&client, &dir, &file, &progress, &cancel).await;
    assert!(first.is_err(), "the cut must fail the first attempt");
    assert!(!dir.join("model.safetensors").exists());
    let part = std::fs::metadata(dir.join("model.safetensors.part"))
        .unwrap()
        .len();
    // Whatever arrived before the cut is kept (how much depends on the socket, not on Souz).
    assert!(part > 0 && part <= 1 << 20, "{part}");

    fetch_file(&client, &dir, &file, &progress, &cancel)
        .await
        .unwrap();
    assert_eq!(
        files.ranges.lock().unwrap().as_slice(),
        [format!("bytes={part}-")]
    );
    assert!(!dir.join("model.safetensors.part").exists());
    assert_eq!(
        Some(
            sha256_file(&dir.join("model.safetensors"))
                .await
                .unwrap()
                .as_str()
        ),
        pinned.digest.sha256()
    );
    assert_eq!(seen.lock().unwrap().last().copied(), Some(pinned.bytes));
}

/// A link planted at the `.part` file is neither measured for a resume nor appended to.
#[cfg(unix)]
#[tokio::test]
async fn a_link_at_the_part_file_is_not_written_through() {
    let (address, _files, _server) = file_server(0).await;
    let pinned = minilm().files[0];
    let file = leak_file(
        format!("http://{address}/config.json"),
        "config.json",
        pinned.digest,
        pinned.bytes,
    );
    let home = TestHome::new();
    let dir = home.paths().home().join("models/linked");
    std::fs::create_dir_all(&dir).unwrap();
    let canary = home.path().join("canary");
    std::fs::write(&canary, "keep").unwrap();
    std::os::unix::fs::symlink(&canary, dir.join("config.json.part")).unwrap();
    let error = fetch_file(
        &local_client(),
        &dir,
        &file,
        &|_: &ModelFile, _| {},
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "keep");
    assert!(!dir.join("config.json").exists());
}

#[tokio::test]
async fn a_checksum_mismatch_removes_the_file_and_says_so() {
    let (address, _files, _server) = file_server(0).await;
    let file = leak_file(
        format!("http://{address}/config.json"),
        "config.json",
        FileDigest::Sha256("0000000000000000000000000000000000000000000000000000000000000000"),
        612,
    );
    let home = TestHome::new();
    let dir = home.paths().home().join("models/bad");
    let error = fetch_file(
        &local_client(),
        &dir,
        &file,
        &|_: &ModelFile, _| {},
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, DownloadError::Checksum { .. }), "{error}");
    assert!(error.to_string().contains("config.json"), "{error}");
    assert!(!dir.join("config.json").exists());
    assert!(!dir.join("config.json.part").exists());
}

#[tokio::test]
async fn first_use_downloads_in_the_background_and_reports_progress() {
    let (address, _files, _server) = file_server(0).await;
    let files: Vec<ModelFile> = minilm()
        .files
        .iter()
        .map(|file| {
            leak_file(
                format!("http://{address}/{}", file.name),
                file.name,
                file.digest,
                file.bytes,
            )
        })
        .collect();
    let profile: &'static ModelProfile = Box::leak(Box::new(ModelProfile {
        files: Box::leak(files.into_boxed_slice()),
        ..*minilm()
    }));
    let home = TestHome::new();
    let statuses = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&statuses);
    let embedder = LocalEmbedder::new(LocalOptions {
        profile,
        dir: home.paths().home().join("models/all-minilm-l6-v2"),
        client: Some(local_client()),
        mirror: None,
        idle_unload: Duration::from_secs(600),
        retry_after: Duration::from_secs(60),
        on_status: Some(Arc::new(move |_: &str, status: &ModelStatus| {
            sink.lock().unwrap().push(status.clone());
        })),
    });
    let error = embedder
        .embed(vec!["x".into()], EmbedRole::Query)
        .await
        .unwrap_err();
    assert_eq!(error.code, crate::memory::vectors::NOT_READY);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while embedder.status() != ModelStatus::Ready {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            embedder.status()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let statuses = statuses.lock().unwrap().clone();
    assert!(
        statuses
            .iter()
            .any(|status| matches!(status, ModelStatus::Downloading { received, total } if received < total)),
        "{statuses:?}"
    );
    let vectors = embedder
        .embed(vec!["x".into()], EmbedRole::Query)
        .await
        .unwrap();
    assert_eq!(vectors[0].len(), 384);
}

/// A mirror that answers 503 while `down`, and the model's files otherwise.
#[derive(Clone, Default)]
struct Mirror {
    down: Arc<std::sync::atomic::AtomicBool>,
    requests: Arc<AtomicUsize>,
}

async fn mirror_file(
    State(mirror): State<Mirror>,
    axum::extract::Path((_model, name)): axum::extract::Path<(String, String)>,
) -> Response {
    mirror.requests.fetch_add(1, Ordering::SeqCst);
    if mirror.down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "mirror down").into_response();
    }
    match std::fs::read(embedding_model_dir().join(&name)) {
        Ok(bytes) => bytes.into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn wait_for(embedder: &LocalEmbedder, done: impl Fn(&ModelStatus) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while !done(&embedder.status()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            embedder.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// No network (a mirror that is down): the failure is reported once, every use meanwhile
/// answers `model_not_ready` (memory recalls by words) without starting another download, a
/// use after the wait tries again quietly, and once the files can be had they are.
#[tokio::test]
async fn a_failed_download_is_reported_once_and_retried_after_a_wait_not_in_a_loop() {
    let mirror = Mirror::default();
    mirror.down.store(true, Ordering::SeqCst);
    let router = Router::new()
        .route("/{model}/{name}", get(mirror_file))
        .with_state(mirror.clone());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let address = listener.local_addr().unwrap();
    let _server = crate::tasks::spawn_in_test(async move {
        let _ = axum::serve(listener, router).await;
    });
    let home = TestHome::new();
    let statuses = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&statuses);
    let retry_after = Duration::from_millis(400);
    let embedder = LocalEmbedder::new(LocalOptions {
        profile: minilm(),
        dir: home.paths().home().join("models/all-minilm-l6-v2"),
        client: Some(local_client()),
        mirror: Some(format!("http://{address}")),
        idle_unload: Duration::from_secs(600),
        retry_after,
        on_status: Some(Arc::new(move |_: &str, status: &ModelStatus| {
            sink.lock().unwrap().push(status.clone());
        })),
    });
    let use_it = || embedder.embed(vec!["x".into()], EmbedRole::Query);
    let error = use_it().await.unwrap_err();
    assert_eq!(error.code, crate::memory::vectors::NOT_READY);
    assert!(error.message.contains("recalls by words"), "{error:?}");
    wait_for(&embedder, |status| {
        matches!(status, ModelStatus::Failed { .. })
    })
    .await;
    let tried = mirror.requests.load(Ordering::SeqCst);
    assert_eq!(
        tried, 1,
        "the first file failed, the rest were not asked for"
    );
    // Uses before the wait is over start nothing.
    for _ in 0..5 {
        assert_eq!(
            use_it().await.unwrap_err().code,
            crate::memory::vectors::NOT_READY
        );
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        mirror.requests.load(Ordering::SeqCst),
        tried,
        "no retry loop"
    );
    // After the wait, one use tries again, and fails again quietly.
    tokio::time::sleep(retry_after).await;
    let _ = use_it().await;
    wait_for(&embedder, |_| mirror.requests.load(Ordering::SeqCst) == 2).await;
    wait_for(&embedder, |status| {
        matches!(status, ModelStatus::Failed { .. })
    })
    .await;
    let failures = |statuses: &[ModelStatus]| {
        statuses
            .iter()
            .filter(|status| matches!(status, ModelStatus::Failed { .. }))
            .count()
    };
    assert_eq!(failures(&statuses.lock().unwrap()), 1, "{statuses:?}");
    // The wait doubled; once the mirror is back, the next try after it gets the files.
    mirror.down.store(false, Ordering::SeqCst);
    let _ = use_it().await;
    assert_eq!(mirror.requests.load(Ordering::SeqCst), 2, "still waiting");
    tokio::time::sleep(retry_after * 2).await;
    let _ = use_it().await;
    wait_for(&embedder, |status| *status == ModelStatus::Ready).await;
    let statuses = statuses.lock().unwrap().clone();
    assert_eq!(failures(&statuses), 1, "{statuses:?}");
    assert!(
        statuses.iter().any(
            |status| matches!(status, ModelStatus::Downloading { received, .. } if *received > 0)
        ),
        "the retry that got going was shown: {statuses:?}"
    );
    assert_eq!(use_it().await.unwrap()[0].len(), 384);
}
