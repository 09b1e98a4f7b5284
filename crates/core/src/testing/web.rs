//! The web fixtures of issue 18 for tests and benchmarks: [`FixtureSite`], a loopback server
//! speaking DuckDuckGo's HTML endpoint, SearXNG's and Brave's JSON APIs and serving a small
//! static site (the files in `crates/core/tests/fixtures/web/`); [`ScriptedModel`], a model that
//! answers from a queue and records what it was asked; and entry points of the web tools for
//! benchmarks ([`readable_text`], [`web_tools`]).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::future::BoxFuture;
use souz_protocol::Requester;
use tokio_util::sync::CancellationToken;

use crate::config::WebConfig;
use crate::store::Store;
use crate::tools::builtin::internet::{ImageInput, ModelAccess, WebServices};
use crate::tools::{Catalog, CatalogBuilder};

/// The Brave key the fixture site accepts.
pub const FIXTURE_BRAVE_KEY: &str = "brave-test-key";

/// The folder of the web fixtures.
pub fn fixtures_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/web")
}

fn fixture(name: &str) -> String {
    let path = fixtures_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[derive(Default)]
struct SiteState {
    base: String,
    requests: Mutex<Vec<String>>,
    flaky_failed: Mutex<bool>,
}

/// A running fixture site on 127.0.0.1; stops when dropped. Routes:
/// - `/ddg/html/?q=`: DuckDuckGo's results page (`q` containing `nothing`: its "No results."
///   page; `redirect`: the second result leads to `/site/private-redirect.html`);
/// - `/ddg-blocked/html/`: the anti-bot page, HTTP 202; `/ddg-down/html/`: HTTP 503;
///   `/ddg-flaky/html/`: HTTP 429 with `Retry-After: 0` once, then the results page;
/// - `/searxng/search?format=json`: SearXNG's JSON (403 without `format=json`);
/// - `/brave/res/v1/web/search`: Brave's JSON for [`FIXTURE_BRAVE_KEY`], 401 otherwise;
/// - `/site/<name>.html`: the site's pages; `/site/private-redirect.html` redirects to
///   `http://10.255.255.1/admin`.
pub struct FixtureSite {
    /// Where it listens.
    pub address: SocketAddr,
    state: Arc<SiteState>,
    task: tokio::task::JoinHandle<()>,
}

impl FixtureSite {
    /// Starts the site on `127.0.0.1:0`.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("its address");
        let state = Arc::new(SiteState {
            base: format!("http://{address}"),
            ..SiteState::default()
        });
        let router = Router::new()
            .route("/ddg/html/", get(ddg))
            .route("/ddg-blocked/html/", get(ddg_blocked))
            .route("/ddg-down/html/", get(ddg_down))
            .route("/ddg-flaky/html/", get(ddg_flaky))
            .route("/searxng/search", get(searxng))
            .route("/brave/res/v1/web/search", get(brave))
            .route("/site/{name}", get(site_page))
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&state),
                record,
            ))
            .with_state(Arc::clone(&state));
        let task = crate::tasks::spawn_in_test(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self {
            address,
            state,
            task,
        }
    }

    /// `http://<address><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// `host:port`, for `[sandbox] network_allow_hosts`.
    pub fn allow_entry(&self) -> String {
        self.address.to_string()
    }

    /// Requests whose path starts with `prefix`.
    pub fn hits(&self, prefix: &str) -> usize {
        self.state
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|path| path.starts_with(prefix))
            .count()
    }

    /// `[web]` pointing every backend at this site, without pacing.
    pub fn web_config(&self) -> WebConfig {
        WebConfig {
            duckduckgo_urls: vec![self.url("/ddg/html/")],
            searxng_url: String::new(),
            brave_url: self.url("/brave/res/v1/web/search"),
            host_pacing_ms: 0,
            ..WebConfig::default()
        }
    }
}

impl Drop for FixtureSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn record(
    State(state): State<Arc<SiteState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    state
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(request.uri().path().to_owned());
    next.run(request).await
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=UTF-8")],
        body,
    )
        .into_response()
}

fn json(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn results_page(state: &SiteState, query: &str) -> String {
    if query.contains("nothing") {
        return fixture("ddg_no_results.html");
    }
    let encoded: String = url_encode(&state.base);
    let mut page = fixture("ddg_results.html").replace("{{SITE_ENC}}", &encoded);
    if query.contains("redirect") {
        page = page.replace("%2Fsite%2Fwatering.html", "%2Fsite%2Fprivate-redirect.html");
    }
    page
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

async fn ddg(
    State(state): State<Arc<SiteState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let q = query.get("q").cloned().unwrap_or_default();
    html(StatusCode::OK, results_page(&state, &q))
}

async fn ddg_blocked() -> Response {
    html(StatusCode::ACCEPTED, fixture("ddg_anomaly.html"))
}

async fn ddg_down() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "0")],
        "down",
    )
        .into_response()
}

async fn ddg_flaky(
    State(state): State<Arc<SiteState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let failed = {
        let mut failed = state
            .flaky_failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *failed, true)
    };
    if !failed {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "0")],
            "slow down",
        )
            .into_response();
    }
    let q = query.get("q").cloned().unwrap_or_default();
    html(StatusCode::OK, results_page(&state, &q))
}

async fn searxng(
    State(state): State<Arc<SiteState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if query.get("format").map(String::as_str) != Some("json") {
        return (StatusCode::FORBIDDEN, "403 Forbidden").into_response();
    }
    json(fixture("searxng.json").replace("{{SITE}}", &state.base))
}

async fn brave(State(state): State<Arc<SiteState>>, headers: HeaderMap) -> Response {
    let key = headers
        .get("x-subscription-token")
        .and_then(|value| value.to_str().ok());
    if key != Some(FIXTURE_BRAVE_KEY) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"type":"ErrorResponse","error":{"id":"x","status":401,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."}}"#,
        )
            .into_response();
    }
    json(fixture("brave.json").replace("{{SITE}}", &state.base))
}

async fn site_page(UrlPath(name): UrlPath<String>) -> Response {
    if name == "private-redirect.html" {
        return (
            StatusCode::FOUND,
            [(header::LOCATION, "http://10.255.255.1/admin")],
        )
            .into_response();
    }
    let path = fixtures_dir().join("site").join(&name);
    match (
        name.contains('/') || name.contains(".."),
        std::fs::read_to_string(path),
    ) {
        (false, Ok(page)) => html(StatusCode::OK, page),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// What a [`ScriptedModel`] was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The system prompt (or `view_image` / `generate_image`).
    pub system: String,
    /// The user message (the question or prompt).
    pub user: String,
}

/// A model answering from a queue: each `complete` takes the next answer (`Err` for a failure;
/// an empty queue fails), images get `vision_answer`, generation gets `image`.
#[derive(Default)]
pub struct ScriptedModel {
    answers: Mutex<VecDeque<Result<String, String>>>,
    asked: Mutex<Vec<Asked>>,
    images: Mutex<Vec<(String, usize)>>,
    secrets: HashMap<String, String>,
    vision_answer: String,
    image: Vec<u8>,
}

impl ScriptedModel {
    /// Stores the secret `name` (the Brave key is `brave`).
    pub fn with_secret(mut self, name: &str, value: &str) -> Self {
        self.secrets.insert(name.to_owned(), value.to_owned());
        self
    }

    /// What `view_image` answers.
    pub fn with_vision_answer(mut self, answer: &str) -> Self {
        self.vision_answer = answer.to_owned();
        self
    }

    /// What `generate_image` returns.
    pub fn with_image(mut self, image: &[u8]) -> Self {
        self.image = image.to_vec();
        self
    }

    /// Queues an answer.
    pub fn push(&self, answer: Result<&str, &str>) {
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(answer.map(str::to_owned).map_err(str::to_owned));
    }

    /// Everything it was asked, in order.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Images it was shown: (media type, bytes).
    pub fn images(&self) -> Vec<(String, usize)> {
        self.images
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn note(&self, system: &str, user: &str) {
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Asked {
                system: system.to_owned(),
                user: user.to_owned(),
            });
    }
}

impl ModelAccess for ScriptedModel {
    fn complete<'a>(
        &'a self,
        _requester: &'a Requester,
        system: &'a str,
        user: &'a str,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, String>> {
        self.note(system, user);
        let answer = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .unwrap_or_else(|| Err("no scripted answer left".to_owned()));
        Box::pin(async move { answer })
    }

    fn view_image<'a>(
        &'a self,
        _requester: &'a Requester,
        question: &'a str,
        image: &'a ImageInput,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, String>> {
        self.note("view_image", question);
        self.images
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((image.media_type.clone(), image.bytes.len()));
        let answer = self.vision_answer.clone();
        Box::pin(async move { Ok(answer) })
    }

    fn generate_image<'a>(
        &'a self,
        _requester: &'a Requester,
        prompt: &'a str,
        _size: &'a str,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        self.note("generate_image", prompt);
        let image = self.image.clone();
        Box::pin(async move { Ok(image) })
    }

    fn secret<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<String>, String>> {
        let secret = self.secrets.get(name).cloned();
        Box::pin(async move { Ok(secret) })
    }
}

/// The catalog of the model-backed web and image tools over `config`, the cache in `store`
/// (none: no cache) and `model`.
pub fn web_tools(
    config: WebConfig,
    store: Option<Store>,
    model: Option<Arc<ScriptedModel>>,
) -> Catalog {
    let model = model.map(|model| model as Arc<dyn ModelAccess>);
    let services = Arc::new(WebServices::new(config, store, model));
    let mut builder = CatalogBuilder::default();
    crate::tools::builtin::internet::register(&mut builder, &services)
        .expect("the web tools register");
    builder.build()
}

/// The title and readable text `WebPageText` and the research tools extract from `html`
/// served at `url`.
pub fn readable_text(html: &str, url: &str) -> (Option<String>, String) {
    let fetched = crate::sandbox::net::Fetched {
        url: reqwest::Url::parse(url).expect("a URL"),
        status: 200,
        content_type: Some("text/html; charset=utf-8".to_owned()),
        body: bytes::Bytes::from(html.to_owned()),
    };
    let stop = crate::tools::builtin::worker::Stop::default();
    match crate::tools::builtin::web::readable_text(&fetched, &stop) {
        Ok(page) => (page.title, page.text),
        Err(_) => (None, String::new()),
    }
}
