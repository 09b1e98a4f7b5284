//! A git smart-HTTP server for tests: `git http-backend` (CGI/1.1) behind a loopback axum
//! server, serving the bare repositories of a folder, with helpers that make and publish
//! repositories. The outside world of a skill installed from a git URL.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use tokio::io::AsyncWriteExt;

/// A loopback git server over `git http-backend`, serving the bare repositories in `root`.
pub struct GitServer {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The request paths it served.
    pub requests: Arc<Mutex<Vec<String>>>,
    _task: tokio_util::sync::DropGuard,
}

#[derive(Clone)]
struct Served {
    root: PathBuf,
    requests: Arc<Mutex<Vec<String>>>,
}

impl GitServer {
    pub async fn start(root: &Path) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("git test server");
        let base = format!("http://{}", listener.local_addr().expect("git test server"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let served = Served {
            root: root.to_owned(),
            requests: Arc::clone(&requests),
        };
        let app = axum::Router::new().fallback(cgi).with_state(served);
        let stop = tokio_util::sync::CancellationToken::new();
        let token = stop.clone();
        crate::tasks::spawn_in_test(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(token.cancelled_owned())
                .await;
        });
        Self {
            base,
            requests,
            _task: stop.drop_guard(),
        }
    }
}

/// One request through `git http-backend` (CGI/1.1).
async fn cgi(
    State(served): State<Served>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    served
        .requests
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(uri.path().to_owned());
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let mut command = tokio::process::Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env(
            "PATH",
            crate::sandbox::environment::command_search_path(
                crate::config::env::process_environment_os(),
            ),
        )
        .env("GIT_PROJECT_ROOT", &served.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", method.as_str())
        .env("PATH_INFO", uri.path())
        .env("QUERY_STRING", uri.query().unwrap_or_default())
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().expect("git test server");
    let mut stdin = child.stdin.take().expect("git test server");
    let writing = crate::tasks::spawn_in_test(async move {
        let _ = stdin.write_all(&body).await;
    });
    let output = child.wait_with_output().await.expect("git test server");
    let _ = writing.await;
    let out = output.stdout;
    let split = out
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|at| (at, at + 4))
        .or_else(|| {
            out.windows(2)
                .position(|w| w == b"\n\n")
                .map(|at| (at, at + 2))
        })
        .unwrap_or((0, 0));
    let head = String::from_utf8_lossy(&out[..split.0]).into_owned();
    let mut status = StatusCode::OK;
    let mut response_headers = HeaderMap::new();
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            status = value
                .split_whitespace()
                .next()
                .and_then(|code| code.parse::<u16>().ok())
                .and_then(|code| StatusCode::from_u16(code).ok())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        } else if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::try_from(name.trim()),
            axum::http::HeaderValue::try_from(value),
        ) {
            response_headers.insert(name, value);
        }
    }
    (status, response_headers, out[split.1..].to_vec()).into_response()
}

/// Runs git in `dir` with a fixed identity; panics with its message on failure.
pub fn git(dir: &Path, args: &[&str]) {
    let output = std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Tester")
        .env("GIT_AUTHOR_EMAIL", "tester@example.com")
        .env("GIT_COMMITTER_NAME", "Tester")
        .env("GIT_COMMITTER_EMAIL", "tester@example.com")
        .output()
        .expect("git test server");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A work tree at `dir` with `files` (path → text) committed.
pub fn commit(dir: &Path, files: &[(&str, &str)], message: &str) {
    if !dir.join(".git").exists() {
        std::fs::create_dir_all(dir).expect("git test server");
        git(dir, &["init", "--quiet"]);
    }
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("git test server")).expect("git test server");
        std::fs::write(path, text).expect("git test server");
    }
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "--quiet", "-m", message]);
}

/// Publishes the work tree `dir` as the bare repository `<root>/<name>.git`.
pub fn publish(dir: &Path, root: &Path, name: &str) {
    let bare = root.join(format!("{name}.git"));
    if bare.exists() {
        std::fs::remove_dir_all(&bare).expect("git test server");
    }
    git(
        root,
        &[
            "clone",
            "--quiet",
            "--bare",
            dir.to_str().expect("git test server"),
            bare.to_str().expect("git test server"),
        ],
    );
}

/// A `SKILL.md` of `name`.
pub fn skill_md(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: Keeps notes for {name}.\n---\n{body}\n")
}
