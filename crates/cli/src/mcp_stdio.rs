//! `souz mcp-stdio`: a stdio MCP server for clients that only speak stdio (Claude Desktop),
//! forwarding every message to the running daemon's `/mcp` with a client token of its own:
//! `<SOUZ_HOME>/clients/<name>.token` (`--client`, default `claude-desktop`), written by
//! `souz mcp-config claude-desktop`. Never the operator token: the bridge's client can reach
//! `/mcp` and nothing else, and is named by that token to the person deciding.
//!
//! Invariants:
//! - No token leaves the bridge before the listener proved it is the daemon that knows it
//!   ([`verify_listener`]); the proof is checked again whenever the address is read again
//!   (after a failure), so a squatter on a freed port gets nothing.
//! - stdout carries protocol bytes only: one JSON-RPC message per line, exactly as the daemon
//!   sent it (messages are forwarded as raw JSON, never re-serialized through typed models, so
//!   no field a client needs can be dropped). Everything else goes to stderr. One task writes
//!   stdout ([`write_lines`]), so lines never interleave. The client's messages go to the
//!   daemon as the text they arrived as ([`message`]).
//! - Messages are forwarded concurrently, each as its own POST over the client's pool of
//!   keep-alive connections, and answered as they complete: a call waiting for approval does
//!   not hold up a `ping`, another call, or the `notifications/cancelled` that withdraws it.
//! - The daemon's address and proof are reused while `daemon.json` is unchanged and its
//!   process lives, checked before every request with a stat and a signal-0 probe.
//! - The daemon is not started by the bridge. When it is not running, each request gets a
//!   JSON-RPC error that says so and how to start it; the bridge keeps running and connects on
//!   the next request.
//! - A daemon restart ends the HTTP session; the next request that meets the daemon's 404
//!   replays the client's `initialize` (under a bridge-internal id, its answer not forwarded)
//!   and `notifications/initialized`, then goes through — unless the client's input has
//!   ended: then the session is closed (`DELETE`) and never opened again, and the bridge exits
//!   once the answers in flight are written.
//! - When the client's input ends (`… | souz mcp-stdio`), every request already read is
//!   answered before the session is closed: the forwards in flight are awaited first.
//! - If the daemon goes away while a request is in flight (the answer's stream or body breaks
//!   off before the answer), that request is answered with a JSON-RPC error saying Souz stopped
//!   and how to start it: every request from the client gets an answer.
//! - Lines from the client are capped at [`MAX_LINE`] bytes while they are read ([`lines`]): a
//!   longer one is skipped to its end, never held, and answered with `-32600`.
//! - The bridge speaks the session-based protocol versions (through 2025-11-25), which is what
//!   stdio clients use; a `server/discover` probe gets `-32601`, so clients fall back to
//!   `initialize`.

mod lines;
mod message;
mod pipes;
mod posting;

use self::posting::{messages, not_running};

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use souz_client::ClientError;
use souz_client::home::Home;
use souz_client::identity::verify_listener;
use souz_core::config::SouzPaths;
use souz_core::runtime::discovery;
use souz_protocol::DaemonInfo;

use message::Message;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const ACCEPT: &str = "application/json, text/event-stream";
/// The longest line accepted from the client (the daemon's own body limit applies as well).
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Runs the bridge, with the client token named `client`, until stdin closes.
pub fn run(client: String) -> ExitCode {
    // One thread: the bridge only moves bytes, and a second worker costs a cross-thread wake-up
    // for every message (measured: most of the bridge's time at 16 requests in flight).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("souz mcp-stdio: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(client)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("souz mcp-stdio: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// What the bridge knows about its session with the daemon.
#[derive(Default)]
struct SessionState {
    /// The client's `initialize` request, replayed after a daemon restart.
    initialize: Option<Message>,
    /// The client's `notifications/initialized`, replayed with it.
    initialized: Option<Message>,
    /// The daemon's session id.
    session_id: Option<String>,
    /// The negotiated protocol version.
    protocol_version: Option<String>,
    /// Bumped at each (re)initialization, so concurrent 404s re-initialize once.
    generation: u64,
}

/// Where the daemon is, as last read from the Souz home.
struct Target {
    base: String,
    token: String,
    /// `daemon.json` as it was when the listener proved itself. The proof is reused only
    /// while that file is unchanged and its process lives: when the daemon stops, is killed or
    /// restarts, the listener must prove itself again before the next request, so a squatter
    /// that takes over the port gets no token.
    daemon: Option<LiveDaemon>,
}

/// A `daemon.json` naming a living process, and which version of the file it was.
struct LiveDaemon {
    stamp: FileStamp,
    info: DaemonInfo,
}

impl LiveDaemon {
    /// The daemon file of `home`, if it names a living process.
    fn read(home: &Home) -> Option<Self> {
        let stamp = file_stamp(home)?;
        let info = home.daemon_info().filter(discovery::process_exists)?;
        Some(Self { stamp, info })
    }

    /// Whether the daemon file is still this version and its process still lives: a stat and
    /// a signal-0 probe, cheap enough for every request.
    fn is_current(&self, home: &Home) -> bool {
        file_stamp(home) == Some(self.stamp) && discovery::process_exists(&self.info)
    }
}

/// What tells one version of a file from another.
type FileStamp = (std::time::SystemTime, u64);

fn file_stamp(home: &Home) -> Option<FileStamp> {
    let metadata = std::fs::metadata(home.daemon_file()).ok()?;
    Some((metadata.modified().ok()?, metadata.len()))
}

struct Bridge {
    http: reqwest::Client,
    /// The name of the client token to use.
    client: String,
    /// The Souz home (from the environment, read once).
    paths: Result<SouzPaths, String>,
    /// Read from the Souz home on first use and again after a failure (the daemon may have
    /// restarted on another port, or its token changed).
    target: Mutex<Option<Arc<Target>>>,
    state: Mutex<SessionState>,
    /// Serializes re-initializations.
    reinitializing: tokio::sync::Mutex<()>,
    /// Set when the client's input ended: the session is being closed and is not opened again
    /// (a message still in flight that meets the closed session would otherwise start a new
    /// one, whose event stream kept the bridge running after its client left).
    closing: AtomicBool,
    out: mpsc::UnboundedSender<String>,
}

async fn serve(client: String) -> Result<()> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .context("cannot build an HTTP client")?;
    let (out, lines) = mpsc::unbounded_channel::<String>();
    #[allow(
        clippy::disallowed_methods,
        reason = "the bridge's stdout writer, owned by run() which awaits it after stdin closes"
    )]
    let writer = tokio::spawn(write_lines(lines, pipes::stdout()));
    let bridge = Arc::new(Bridge {
        http,
        client,
        paths: crate::client::paths().map_err(|error| format!("{error:#}")),
        target: Mutex::new(None),
        state: Mutex::new(SessionState::default()),
        reinitializing: tokio::sync::Mutex::new(()),
        closing: AtomicBool::new(false),
        out,
    });
    if let Err(message) = bridge.check_daemon().await {
        eprintln!("souz mcp-stdio: {message}");
    }

    let mut stdin = BufReader::new(pipes::stdin());
    let mut line = Vec::new();
    // The forwards in flight, awaited when the input ends (finished ones are reaped as lines
    // arrive, so the set holds only what is still running).
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        while in_flight.try_join_next().is_some() {}
        let read = lines::read_line(&mut stdin, &mut line, MAX_LINE)
            .await
            .context("cannot read stdin")?;
        match read {
            lines::Read::End => break,
            lines::Read::TooLong => {
                bridge.send_error(
                    &Value::Null,
                    -32600,
                    &format!("The message is larger than the {MAX_LINE}-byte limit."),
                );
                continue;
            }
            lines::Read::Line => {}
        }
        let text = match std::str::from_utf8(&line) {
            Ok(text) => text.trim(),
            Err(error) => {
                bridge.send_error(&Value::Null, -32700, &format!("Parse error: {error}"));
                continue;
            }
        };
        if text.is_empty() {
            continue;
        }
        let message = match Message::read(text) {
            Ok(message) => message,
            Err(error) => {
                bridge.send_error(&Value::Null, -32700, &format!("Parse error: {error}"));
                continue;
            }
        };
        match message.method() {
            // The handshake runs before anything else is read, so later messages find the
            // session.
            Some("initialize") => {
                bridge.initialize(message).await;
                listen(&bridge);
            }
            Some("server/discover") => bridge.send_error(
                &message.id,
                -32601,
                "Method not found: server/discover. Start with `initialize`.",
            ),
            _ => {
                let bridge = Arc::clone(&bridge);
                in_flight.spawn(async move { bridge.forward(message).await });
            }
        }
    }
    while in_flight.join_next().await.is_some() {}
    bridge.closing.store(true, Ordering::SeqCst);
    bridge.close_session().await;
    drop(bridge);
    let _ = writer.await;
    Ok(())
}

/// The single writer of stdout: each message whole on its own line, in the order they were
/// sent to it. Lines that are already waiting go out in one write; stdout is flushed whenever
/// none is waiting, so no answer is held back.
async fn write_lines<W>(mut lines: mpsc::UnboundedReceiver<String>, out: W)
where
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut out = tokio::io::BufWriter::with_capacity(64 * 1024, out);
    while let Some(mut line) = lines.recv().await {
        let written = async {
            loop {
                out.write_all(line.as_bytes()).await?;
                out.write_all(b"\n").await?;
                match lines.try_recv() {
                    Ok(next) => line = next,
                    Err(_) => break,
                }
            }
            out.flush().await
        };
        if written.await.is_err() {
            break;
        }
    }
}

/// Starts following the current session's event stream.
fn listen(bridge: &Arc<Bridge>) {
    let generation = bridge.state().generation;
    let bridge = Arc::clone(bridge);
    #[allow(
        clippy::disallowed_methods,
        reason = "the CLI bridge's event follower for one session generation; it stops when the generation changes or the process exits"
    )]
    tokio::spawn(async move { bridge.follow_events(generation).await });
}

/// How one POST went.
enum Posted {
    /// Answered; the answer was forwarded.
    Done,
    /// The daemon does not know the session (it restarted, or the session expired).
    SessionGone,
    /// The daemon could not be reached.
    Unreachable(String),
}

impl Bridge {
    fn state(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The daemon's address and the client token, once the listener there proved it is the
    /// daemon that knows the token (cached until a failure).
    async fn target(&self) -> Result<Arc<Target>, String> {
        let paths = self.paths.as_ref().map_err(Clone::clone)?;
        let home = crate::client::home(paths);
        if let Some(target) = self
            .target
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            && target
                .daemon
                .as_ref()
                .is_some_and(|daemon| daemon.is_current(&home))
        {
            return Ok(target);
        }
        let daemon = LiveDaemon::read(&home);
        let token = home.client_token(&self.client).map_err(|error| {
            format!(
                "no usable client token for `{}` ({error}); make one with `souz mcp-config \
                 claude-desktop` while Souz runs",
                self.client
            )
        })?;
        let base = home.base(|| crate::client::configured_base(paths));
        match verify_listener(&self.http, &base, &token).await {
            Ok(()) => {}
            Err(ClientError::Unreachable { .. }) => return Err(not_running(&base)),
            Err(error) => return Err(error.to_string()),
        }
        let target = Arc::new(Target {
            base,
            token,
            daemon,
        });
        *self.target.lock().unwrap_or_else(PoisonError::into_inner) = Some(target.clone());
        Ok(target)
    }

    /// Forgets the cached address and token, so the next request reads them again.
    fn forget_target(&self) {
        *self.target.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Writes one message to stdout.
    fn send(&self, message: String) {
        let _ = self.out.send(message);
    }

    fn send_error(&self, id: &Value, code: i32, message: &str) {
        if id.is_null() && code != -32700 && code != -32600 {
            return;
        }
        let error = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code, "message": message },
        });
        self.send(error.to_string());
    }

    async fn check_daemon(&self) -> Result<(), String> {
        let endpoint = self.target().await?;
        let url = format!("{}/health", endpoint.base);
        match self.http.get(&url).send().await {
            Ok(response) if response.status().is_success() => Ok(()),
            _ => Err(not_running(&endpoint.base)),
        }
    }

    /// Forwards the client's `initialize` and remembers it (and the session) for replays.
    async fn initialize(&self, message: Message) {
        {
            let mut state = self.state();
            state.initialize = Some(message.clone());
            state.session_id = None;
            state.protocol_version = None;
        }
        let id = message.id.clone();
        match self.post(&message, None, true).await {
            Posted::Done => {}
            Posted::SessionGone => {
                self.send_error(&id, -32603, "Souz refused the session; try again.");
            }
            Posted::Unreachable(reason) => self.send_error(&id, -32603, &reason),
        }
    }

    /// Forwards one message other than `initialize`, re-initializing once if the daemon lost
    /// the session.
    async fn forward(self: Arc<Self>, message: Message) {
        let id = message.id.clone();
        let is_request = message.request_id().is_some();
        if message.method() == Some("notifications/initialized") {
            self.state().initialized = Some(message.clone());
        }
        for attempt in 0..2 {
            let (session, generation, known) = {
                let state = self.state();
                (
                    state.session_id.clone(),
                    state.generation,
                    state.initialize.is_some(),
                )
            };
            if session.is_none() && known && attempt == 0 {
                if let Err(reason) = self.reinitialize(generation).await {
                    if is_request {
                        self.send_error(&id, -32603, &reason);
                    }
                    return;
                }
                listen(&self);
                continue;
            }
            match self.post(&message, session.as_deref(), false).await {
                Posted::Done => return,
                Posted::SessionGone if attempt == 0 && known => {
                    if let Err(reason) = self.reinitialize(generation).await {
                        if is_request {
                            self.send_error(&id, -32603, &reason);
                        }
                        return;
                    }
                    listen(&self);
                }
                Posted::SessionGone => {
                    if is_request {
                        self.send_error(
                            &id,
                            -32603,
                            "Souz no longer knows this session; restart the MCP client.",
                        );
                    }
                    return;
                }
                Posted::Unreachable(reason) => {
                    eprintln!("souz mcp-stdio: {reason}");
                    self.state().session_id = None;
                    if is_request {
                        self.send_error(&id, -32603, &reason);
                    }
                    return;
                }
            }
        }
    }

    /// Replays the client's handshake after the daemon lost the session. `seen` is the
    /// generation the caller saw; if another task re-initialized since, nothing is done.
    async fn reinitialize(&self, seen: u64) -> Result<(), String> {
        let _serial = self.reinitializing.lock().await;
        if self.closing.load(Ordering::SeqCst) {
            return Err("The MCP client closed its input: the session is over.".to_owned());
        }
        let (initialize, initialized) = {
            let state = self.state();
            if state.generation != seen && state.session_id.is_some() {
                return Ok(());
            }
            (state.initialize.clone(), state.initialized.clone())
        };
        let Some(initialize) = initialize else {
            return Err("The MCP client has not initialized yet.".to_owned());
        };
        eprintln!("souz mcp-stdio: the daemon lost the session (restart?); initializing again");
        let mut initialize: Value = serde_json::from_str(&initialize.text)
            .map_err(|error| format!("The client's initialize is not JSON: {error}"))?;
        initialize["id"] = json!(format!("souz-bridge-reinitialize-{}", seen + 1));
        let initialize = Message::from_value(&initialize);
        {
            let mut state = self.state();
            state.session_id = None;
        }
        match self.post(&initialize, None, false).await {
            Posted::Done => {}
            Posted::SessionGone => return Err("Souz refused the session.".to_owned()),
            Posted::Unreachable(reason) => return Err(reason),
        }
        if self.state().session_id.is_none() {
            return Err("Souz did not start a session.".to_owned());
        }
        if let Some(initialized) = initialized {
            let session = self.state().session_id.clone();
            let _ = self.post(&initialized, session.as_deref(), false).await;
        }
        Ok(())
    }

    /// Follows the session's own event stream (`GET /mcp`: tool list changes and other
    /// messages not tied to a request) until the session of `generation` ends.
    async fn follow_events(&self, generation: u64) {
        loop {
            if self.closing.load(Ordering::SeqCst) {
                return;
            }
            let session = {
                let state = self.state();
                if state.generation != generation {
                    return;
                }
                state.session_id.clone()
            };
            let Some(session) = session else { return };
            let Ok(endpoint) = self.target().await else {
                return;
            };
            let mut request = self
                .http
                .get(format!("{}/mcp", endpoint.base))
                .bearer_auth(&endpoint.token)
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .header(SESSION_HEADER, session);
            if let Some(version) = self.state().protocol_version.clone() {
                request = request.header(VERSION_HEADER, version);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => {
                    let mut events = std::pin::pin!(messages(response.bytes_stream()));
                    while let Some(event) = events.next().await {
                        self.send(event);
                    }
                }
                // The session is gone (or the daemon offers no stream): the next request
                // re-initializes and starts a new listener.
                Ok(_) => return,
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::posting::answers;
    use super::*;

    #[test]
    fn answers_are_told_from_other_messages() {
        let id = json!(7);
        assert!(answers(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, &id));
        assert!(answers(
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"x"}}"#,
            &id
        ));
        assert!(!answers(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#, &id));
        assert!(!answers(r#"{"jsonrpc":"2.0","id":"7","result":{}}"#, &id));
        assert!(!answers(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            &id
        ));
        assert!(!answers("not json", &id));
    }

    #[tokio::test]
    async fn events_are_split_and_empty_ones_skipped() {
        // Chunks cut anywhere, LF and CRLF separators, a priming event without data.
        let chunks: Vec<Result<&[u8], std::io::Error>> = vec![
            Ok(b"data: \nid: 0\nretry: 3000\n\ndata: {\"a\":1}\n\nda"),
            Ok(b"ta: {\"b\":\r\n\r\ndata: par"),
            Ok(b"tial\n\n"),
        ];
        let messages: Vec<String> = messages(futures::stream::iter(chunks)).collect().await;
        assert_eq!(messages, ["{\"a\":1}", "{\"b\":", "partial"]);
    }

    #[tokio::test]
    async fn lines_are_written_whole_and_in_order() {
        let (sender, receiver) = mpsc::unbounded_channel();
        let sent: Vec<String> = (0..2000)
            .map(|n| format!("{{\"id\":{n},\"text\":\"{}\"}}", "x".repeat(n % 97)))
            .collect();
        for line in &sent {
            sender.send(line.clone()).unwrap();
        }
        drop(sender);
        let mut out = Vec::new();
        write_lines(receiver, &mut out).await;
        let written = String::from_utf8(out).unwrap();
        assert_eq!(written, sent.join("\n") + "\n");
    }

    #[tokio::test]
    async fn a_transport_error_ends_the_messages() {
        let chunks: Vec<Result<&[u8], std::io::Error>> = vec![
            Ok(b"data: 1\n\n"),
            Err(std::io::Error::other("reset")),
            Ok(b"data: 2\n\n"),
        ];
        let messages: Vec<String> = messages(futures::stream::iter(chunks)).collect().await;
        assert_eq!(messages, ["1"]);
    }
}
