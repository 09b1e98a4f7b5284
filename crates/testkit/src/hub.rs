//! A fake model hub on loopback that speaks the Hugging Face Hub's API as Souz uses it:
//! `GET /api/models/{owner}/{name}/tree/{revision}[/{folder}]` lists a commit's folder (each
//! file with `type`, `oid`, `size`, `path` and, for large files, `lfs: {oid, size,
//! pointerSize}`; a small file's `oid` is its real git blob id, the SHA-1 of `blob <size>\0`
//! and its bytes; folders as `type: "directory"`), paged with `Link: <…?cursor=N>;
//! rel="next"` when a page size is set; an unknown repository or revision answers 404 with the
//! hub's error JSON; `GET /{owner}/{name}/resolve/{revision}/{path}` redirects (302, with
//! `X-Repo-Commit` and `X-Linked-Etag`) to a second listener standing for the hub's CDN, which
//! serves the bytes with `Range` support (206 and `Content-Range`), and can cut its first
//! answer short after a number of bytes, as a dropped connection does, or serve other bytes
//! than the listing describes (a tampered file).
//!
//! ```no_run
//! # async fn example() {
//! use souz_testkit::hub::FakeHub;
//! let hub = FakeHub::start().await;
//! hub.commit("org/model-GGUF", &"a".repeat(40))
//!     .lfs("model.gguf", b"GGUF...".to_vec(), "<sha256>");
//! // ... point `[llm] local_model_hub` at hub.url(), then:
//! let ranges = hub.ranges();
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

/// One file of a commit.
#[derive(Clone)]
struct File {
    bytes: Arc<Vec<u8>>,
    /// The LFS object id the listing announces (`None`: a small file kept in git).
    lfs_oid: Option<String>,
    /// What the CDN sends instead of `bytes` (`None`: `bytes`).
    served: Option<Arc<Vec<u8>>>,
}

impl File {
    fn new(bytes: Vec<u8>, lfs_oid: Option<String>) -> Self {
        Self {
            bytes: Arc::new(bytes),
            lfs_oid,
            served: None,
        }
    }

    /// What the CDN sends.
    fn served(&self) -> &Arc<Vec<u8>> {
        self.served.as_ref().unwrap_or(&self.bytes)
    }
}

/// The git blob id of `bytes` (what `git hash-object` prints).
pub fn git_blob_id(bytes: &[u8]) -> String {
    use sha1::Digest as _;
    let mut hasher = sha1::Sha1::new();
    hasher.update(format!("blob {}\0", bytes.len()).as_bytes());
    hasher.update(bytes);
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[derive(Default)]
struct Hub {
    /// (repo, revision) → path → file.
    commits: HashMap<(String, String), HashMap<String, File>>,
    /// Entries per listing page (`None`: one page).
    page_size: Option<usize>,
    /// Bytes the CDN sends of its next answer (for the path, when one is named) before
    /// cutting the connection.
    cut_next_after: Option<(Option<String>, usize)>,
    /// The `Range` header of every CDN request (`None` when it had none).
    ranges: Vec<Option<String>>,
    /// Every listing request's path and query.
    listings: Vec<String>,
    /// The CDN's address, for redirects.
    cdn: String,
}

type Shared = Arc<Mutex<Hub>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Hub> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running fake hub (and its CDN); both stop when it is dropped.
pub struct FakeHub {
    url: String,
    shared: Shared,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for FakeHub {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl FakeHub {
    /// Starts the hub and its CDN on `127.0.0.1:0`.
    ///
    /// # Panics
    /// If no loopback port can be bound (a broken test machine).
    #[allow(clippy::expect_used)]
    pub async fn start() -> Self {
        let shared: Shared = Arc::default();
        let cdn_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake CDN");
        let cdn_address = cdn_listener.local_addr().expect("CDN address");
        lock(&shared).cdn = format!("http://{cdn_address}");
        let cdn = Router::new()
            .route("/blob/{owner}/{name}/{revision}/{*path}", get(blob))
            .with_state(Arc::clone(&shared));
        let hub = Router::new()
            .route("/api/models/{owner}/{name}/tree/{revision}", get(tree_root))
            .route(
                "/api/models/{owner}/{name}/tree/{revision}/{*folder}",
                get(tree_folder),
            )
            .route("/{owner}/{name}/resolve/{revision}/{*path}", get(resolve))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake hub");
        let address = listener.local_addr().expect("hub address");
        #[allow(
            clippy::disallowed_methods,
            reason = "the servers' tasks are owned by the FakeHub, which aborts them when dropped"
        )]
        let tasks = vec![
            tokio::spawn(async move {
                let _ = axum::serve(cdn_listener, cdn).await;
            }),
            tokio::spawn(async move {
                let _ = axum::serve(listener, hub).await;
            }),
        ];
        Self {
            url: format!("http://{address}"),
            shared,
            tasks,
        }
    }

    /// The hub's base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The `host:port` entries `[sandbox] network_allow_hosts` needs for the hub and its CDN.
    pub fn allow_entries(&self) -> Vec<String> {
        let cdn = lock(&self.shared).cdn.clone();
        [self.url.as_str(), cdn.as_str()]
            .iter()
            .map(|url| url.trim_start_matches("http://").to_owned())
            .collect()
    }

    /// The commit `revision` of `repo`, to add files to.
    pub fn commit<'a>(&'a self, repo: &str, revision: &str) -> Commit<'a> {
        Commit {
            hub: self,
            key: (repo.to_owned(), revision.to_owned()),
        }
    }

    /// Lists at most `entries` per page from now on, with a `Link` to the next.
    pub fn page_size(&self, entries: usize) {
        lock(&self.shared).page_size = Some(entries.max(1));
    }

    /// The CDN's next answer stops after `bytes` bytes, its connection dropped.
    pub fn cut_next_after(&self, bytes: usize) {
        lock(&self.shared).cut_next_after = Some((None, bytes));
    }

    /// The CDN's next answer for the file `path` stops after `bytes` bytes, its connection
    /// dropped (other files are sent whole meanwhile).
    pub fn cut_next_of(&self, path: &str, bytes: usize) {
        lock(&self.shared).cut_next_after = Some((Some(path.to_owned()), bytes));
    }

    /// The `Range` header of every CDN request so far, in order.
    pub fn ranges(&self) -> Vec<Option<String>> {
        lock(&self.shared).ranges.clone()
    }

    /// Every listing request so far (path and query), in order.
    pub fn listings(&self) -> Vec<String> {
        lock(&self.shared).listings.clone()
    }
}

/// A commit of a [`FakeHub`]'s repository, to add files to.
pub struct Commit<'a> {
    hub: &'a FakeHub,
    key: (String, String),
}

impl Commit<'_> {
    fn add(&self, path: &str, file: File) -> &Self {
        lock(&self.hub.shared)
            .commits
            .entry(self.key.clone())
            .or_default()
            .insert(path.to_owned(), file);
        self
    }

    /// Adds a large file, announced with LFS object id `oid` (pass another file's digest to
    /// play a hub whose metadata and bytes disagree).
    pub fn lfs(&self, path: &str, bytes: Vec<u8>, oid: &str) -> &Self {
        self.add(path, File::new(bytes, Some(oid.to_owned())))
    }

    /// Adds a small file kept in git (no LFS entry: the listing gives its git blob id).
    pub fn plain(&self, path: &str, bytes: Vec<u8>) -> &Self {
        self.add(path, File::new(bytes, None))
    }

    /// The CDN sends `bytes` for `path` from now on, while the listing still describes the
    /// file as added (a tampered file, or a CDN that serves something else).
    pub fn serve_instead(&self, path: &str, bytes: Vec<u8>) -> &Self {
        if let Some(file) = lock(&self.hub.shared)
            .commits
            .get_mut(&self.key)
            .and_then(|files| files.get_mut(path))
        {
            file.served = Some(Arc::new(bytes));
        }
        self
    }
}

/// The `cursor` of a listing's query.
fn cursor(query: Option<String>) -> Option<usize> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("cursor="))?
        .parse()
        .ok()
}

fn not_found(message: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        [("x-error-code", "RevisionNotFound")],
        axum::Json(json!({ "error": message })),
    )
        .into_response()
}

async fn tree_root(
    State(shared): State<Shared>,
    Path((owner, name, revision)): Path<(String, String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    listing(
        &shared,
        &format!("{owner}/{name}"),
        &revision,
        "",
        cursor(query),
    )
}

async fn tree_folder(
    State(shared): State<Shared>,
    Path((owner, name, revision, folder)): Path<(String, String, String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    listing(
        &shared,
        &format!("{owner}/{name}"),
        &revision,
        &folder,
        cursor(query),
    )
}

fn listing(
    shared: &Shared,
    repo: &str,
    revision: &str,
    folder: &str,
    cursor: Option<usize>,
) -> Response {
    let mut hub = lock(shared);
    let suffix = if folder.is_empty() {
        String::new()
    } else {
        format!("/{folder}")
    };
    let query = cursor.map(|at| format!("?cursor={at}")).unwrap_or_default();
    hub.listings
        .push(format!("/api/models/{repo}/tree/{revision}{suffix}{query}"));
    let Some(files) = hub.commits.get(&(repo.to_owned(), revision.to_owned())) else {
        return not_found(&format!("Invalid rev id: {revision}"));
    };
    let prefix = if folder.is_empty() {
        String::new()
    } else {
        format!("{folder}/")
    };
    let mut entries: Vec<Value> = Vec::new();
    let mut folders: Vec<String> = Vec::new();
    let mut paths: Vec<&String> = files.keys().collect();
    paths.sort();
    for path in paths {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        if let Some((sub, _)) = rest.split_once('/') {
            let sub = format!("{prefix}{sub}");
            if !folders.contains(&sub) {
                entries.push(
                    json!({"type": "directory", "oid": "0".repeat(40), "size": 0, "path": sub}),
                );
                folders.push(sub);
            }
            continue;
        }
        let file = &files[path];
        let size = file.bytes.len();
        let mut entry = json!({"type": "file", "size": size, "path": path});
        match &file.lfs_oid {
            Some(oid) => {
                // The git object is the LFS pointer; its id is not the content's.
                let pointer = format!(
                    "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"
                );
                entry["oid"] = json!(git_blob_id(pointer.as_bytes()));
                entry["lfs"] = json!({"oid": oid, "size": size, "pointerSize": pointer.len()});
            }
            None => entry["oid"] = json!(git_blob_id(&file.bytes)),
        }
        entries.push(entry);
    }
    let Some(page_size) = hub.page_size else {
        return axum::Json(entries).into_response();
    };
    let start = cursor.unwrap_or(0).min(entries.len());
    let end = (start + page_size).min(entries.len());
    let page: Vec<Value> = entries.get(start..end).unwrap_or_default().to_vec();
    let mut response = axum::Json(page).into_response();
    if end < entries.len() {
        let link =
            format!("</api/models/{repo}/tree/{revision}{suffix}?cursor={end}>; rel=\"next\"");
        if let Ok(value) = link.parse() {
            response.headers_mut().insert(header::LINK, value);
        }
    }
    response
}

async fn resolve(
    State(shared): State<Shared>,
    Path((owner, name, revision, path)): Path<(String, String, String, String)>,
) -> Response {
    let hub = lock(&shared);
    let repo = format!("{owner}/{name}");
    let Some(file) = hub
        .commits
        .get(&(repo.clone(), revision.clone()))
        .and_then(|files| files.get(&path))
    else {
        return not_found("Entry not found");
    };
    let location = format!("{}/blob/{repo}/{revision}/{path}", hub.cdn);
    let etag = file.lfs_oid.clone().unwrap_or_default();
    (
        StatusCode::FOUND,
        [
            (header::LOCATION.as_str(), location),
            ("x-repo-commit", revision),
            ("x-linked-etag", format!("\"{etag}\"")),
        ],
    )
        .into_response()
}

async fn blob(
    State(shared): State<Shared>,
    Path((owner, name, revision, path)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let mut hub = lock(&shared);
    let range = headers
        .get(header::RANGE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    hub.ranges.push(range.clone());
    let for_another = matches!(&hub.cut_next_after, Some((Some(only), _)) if *only != path);
    let cut = if for_another {
        None
    } else {
        hub.cut_next_after.take().map(|(_, bytes)| bytes)
    };
    let Some(file) = hub
        .commits
        .get(&(format!("{owner}/{name}"), revision))
        .and_then(|files| files.get(&path))
        .cloned()
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    drop(hub);
    let served = Arc::clone(file.served());
    let total = served.len();
    let start = range
        .as_deref()
        .and_then(|range| range.strip_prefix("bytes="))
        .and_then(|range| range.strip_suffix('-'))
        .and_then(|start| start.parse::<usize>().ok());
    let (status, from) = match start {
        Some(start) if start >= total => {
            return (
                StatusCode::RANGE_NOT_SATISFIABLE,
                [(header::CONTENT_RANGE, format!("bytes */{total}"))],
            )
                .into_response();
        }
        Some(start) => (StatusCode::PARTIAL_CONTENT, start),
        None => (StatusCode::OK, 0),
    };
    let body = served.get(from..).unwrap_or_default().to_vec();
    let length = body.len();
    let body = match cut {
        // Announce the whole length, send part of it, then drop the connection.
        Some(cut) => {
            let part = body.get(..cut.min(length)).unwrap_or_default().to_vec();
            let stream = futures::stream::iter(vec![
                Ok::<_, std::io::Error>(axum::body::Bytes::from(part)),
                Err(std::io::Error::other("fake CDN: connection dropped")),
            ]);
            Body::from_stream(stream)
        }
        None => Body::from(body),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_LENGTH, length.into());
    headers.insert(
        header::ACCEPT_RANGES,
        header::HeaderValue::from_static("bytes"),
    );
    if status == StatusCode::PARTIAL_CONTENT
        && let Ok(value) = format!("bytes {from}-{}/{total}", total - 1).parse()
    {
        headers.insert(header::CONTENT_RANGE, value);
    }
    response
}
