//! The MCP server end to end with clients nobody here wrote: the official Python SDK over
//! streamable HTTP and through `souz mcp-stdio`, the official conformance suite behind an
//! authenticating proxy, and raw requests for the security perimeter. The clients are
//! installed by `scripts/test.sh` into `tests/clients/`. [`sessions`]: what a client that goes
//! away withdraws.

mod client_conformance;
mod sessions;
mod shortcut;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use souz_e2e::{Daemon, clients, http, installed, souz_bin};

fn python() -> PathBuf {
    installed(clients().join(".venv/bin/python"))
}

fn node() -> PathBuf {
    installed(clients().join("node_modules/.bin/node"))
}

/// A daemon whose MCP wait budget and progress interval are short enough for tests.
fn mcp_daemon() -> Daemon {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp]\napproval_wait_seconds = 3\nprogress_interval_seconds = 1\n",
    )
    .unwrap();
    let daemon = Daemon::start_in(home, |_| {});
    std::fs::write(daemon.user_home().join("seed.txt"), "seed").unwrap();
    daemon
}

fn run_python_scenarios(daemon: &Daemon, transport: &str) {
    let url = format!("http://{}", daemon.address);
    let mut command = Command::new(python());
    command
        .arg(clients().join("python/scenarios.py"))
        .arg(transport)
        .arg(&url)
        .arg(&daemon.token)
        .env("HOME", daemon.user_home())
        .env("SOUZ_HOME", daemon.home.path())
        .env_remove("SOUZ_PORT")
        .current_dir(daemon.user_home());
    if transport == "stdio" {
        configure_desktop(daemon.home.path());
        command.arg(souz_bin());
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "Python SDK scenarios failed over {transport}:\n{stdout}\n{stderr}"
    );
    for scenario in [
        "initialize",
        "tools-list",
        "read-only-call",
        "approved-call",
        "denied-call",
        "await-approval",
        "cancelled-call",
        "list-changed",
    ] {
        assert!(
            stdout.lines().any(|line| line == format!("ok {scenario}")),
            "scenario {scenario} did not run over {transport}:\n{stdout}"
        );
    }

    // What the calls did on disk, and what the audit says about who asked.
    let home = daemon.user_home();
    for (file, written) in [
        ("approved.txt", true),
        ("denied.txt", false),
        ("later.txt", true),
        ("cancelled.txt", false),
        ("granted.txt", true),
    ] {
        assert_eq!(home.join(file).exists(), written, "{file} over {transport}");
    }
    let audit = daemon.get("/v1/audit?limit=100").json();
    let items = audit["items"].as_array().unwrap();
    let by_client: Vec<&Value> = items
        .iter()
        .filter(|entry| entry["requester"]["client_name"] == "souz-e2e-python")
        .collect();
    for outcome in ["succeeded", "denied", "cancelled"] {
        assert!(
            by_client.iter().any(|entry| entry["outcome"] == outcome),
            "an audited {outcome} call by the Python client over {transport}: {audit}"
        );
    }
    // Who asked is the token's identity: the operator token over HTTP here, the bridge's
    // own client token through the bridge.
    let identity = if transport == "stdio" {
        "claude-desktop"
    } else {
        "operator"
    };
    for entry in &by_client {
        assert_eq!(entry["requester"]["token_name"], identity, "{entry}");
    }
}

#[test]
fn python_sdk_over_http() {
    let daemon = mcp_daemon();
    run_python_scenarios(&daemon, "http");
}

#[test]
fn python_sdk_with_protocol_2026_07_28() {
    let daemon = mcp_daemon();
    let output = Command::new(python())
        .arg(clients().join("python/scenarios.py"))
        .args([
            "modern",
            &format!("http://{}", daemon.address),
            &daemon.token,
        ])
        .env("HOME", daemon.user_home())
        .current_dir(daemon.user_home())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success()
            && stdout.contains("ok modern-protocol")
            && stdout.contains("ok modern-list-changed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(daemon.user_home().join("modern.txt").exists());
    assert!(daemon.user_home().join("modern-granted.txt").exists());
}

#[test]
fn python_sdk_through_the_stdio_bridge() {
    let daemon = mcp_daemon();
    run_python_scenarios(&daemon, "stdio");
}

/// The conformance scenarios that apply to Souz's default build (see the README). The others
/// call tools, resources and prompts the suite expects a test server to define; they are
/// listed as expected failures, so a scenario that starts passing (or one of these failing)
/// fails the test.
const APPLICABLE_SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "prompts-list",
    "resources-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

#[test]
fn conformance_suite_passes_every_applicable_scenario() {
    let daemon = Daemon::start();
    let proxy = AuthProxy::start(&daemon);
    let output_dir = tempfile::tempdir().unwrap();
    let suite = installed(clients().join("node_modules/@modelcontextprotocol/conformance"));
    let output = Command::new(node())
        .arg(suite.join("dist/index.js"))
        .args(["server", "--url", &format!("{}/mcp", proxy.url)])
        .args(["--suite", "active", "--expected-failures"])
        .arg(clients().join("conformance-baseline.yml"))
        .arg("-o")
        .arg(output_dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "conformance suite:\n{stdout}\n{stderr}"
    );
    for scenario in APPLICABLE_SCENARIOS {
        assert!(
            stdout
                .lines()
                .any(|line| line.starts_with(&format!("✓ {scenario}:"))),
            "{scenario} did not pass:\n{stdout}"
        );
    }
    // The server kept serving through all of it.
    assert_eq!(
        http(&daemon.address, "GET", "/health", &[], b"")
            .unwrap()
            .status,
        200
    );
}

/// The build with the suite's fixtures (the `conformance` feature; `scripts/test.sh` builds it
/// as `souz-conformance` next to `souz`) passes the whole active suite: logging, progress,
/// sampling, elicitation, resources, prompts and completion through Souz's own stack.
#[test]
fn the_fixture_build_passes_the_whole_active_conformance_suite() {
    let program = souz_bin().with_file_name("souz-conformance");
    assert!(
        program.exists(),
        "{} is missing: run scripts/test.sh, which builds it with `--features conformance`",
        program.display()
    );
    let daemon = Daemon::start_program(&program);
    let proxy = AuthProxy::start(&daemon);
    let output_dir = tempfile::tempdir().unwrap();
    let suite = installed(clients().join("node_modules/@modelcontextprotocol/conformance"));
    let output = Command::new(node())
        .arg(suite.join("dist/index.js"))
        .args(["server", "--url", &format!("{}/mcp", proxy.url)])
        .args(["--suite", "active", "-o"])
        .arg(output_dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "conformance suite:\n{stdout}\n{stderr}"
    );
    let total = stdout
        .lines()
        .find(|line| line.starts_with("Total:"))
        .unwrap_or_default();
    assert!(total.ends_with(" 0 failed"), "{total}\n{stdout}");
    let scenarios = stdout.lines().filter(|line| line.starts_with("✓ ")).count();
    assert!(
        scenarios >= 30,
        "every active scenario ran and passed:\n{stdout}"
    );
}

/// `tests/clients/auth-proxy.mjs` in front of the daemon: adds the bearer token for clients
/// that cannot send headers.
struct AuthProxy {
    url: String,
    child: Child,
}

impl AuthProxy {
    fn start(daemon: &Daemon) -> Self {
        let mut child = Command::new(node())
            .arg(clients().join("auth-proxy.mjs"))
            .arg(&daemon.address)
            .arg(&daemon.token)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("listening ").unwrap().to_owned();
        Self {
            url: format!("http://127.0.0.1:{port}"),
            child,
        }
    }
}

impl Drop for AuthProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// Starts an MCP session with the raw handshake; returns its id.
fn open_session(daemon: &Daemon) -> String {
    let response = mcp_post(daemon, &[], INITIALIZE.as_bytes());
    assert_eq!(response.status, 200, "{}", response.body);
    let session = response
        .head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("a session id");
    let initialized = mcp_post(
        daemon,
        &[("Mcp-Session-Id", &session)],
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert!(initialized.status < 300, "{}", initialized.body);
    session
}

fn mcp_post(daemon: &Daemon, headers: &[(&str, &str)], body: &[u8]) -> souz_e2e::HttpResponse {
    let auth = format!("Bearer {}", daemon.token);
    let mut all = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    for (name, value) in headers {
        all.retain(|(existing, _)| !existing.eq_ignore_ascii_case(name));
        all.push((name, value));
    }
    http(&daemon.address, "POST", "/mcp", &all, body).unwrap()
}

#[test]
fn the_perimeter_and_the_front_door_refuse_bad_requests_and_keep_serving() {
    let daemon = Daemon::start();
    let own_port = daemon.address.rsplit(':').next().unwrap().to_owned();

    // Foreign Host and foreign Origin, each on its own (the suite only sends both at once).
    let foreign_host = format!("evil.example:{own_port}");
    let response = mcp_post(&daemon, &[("Host", &foreign_host)], INITIALIZE.as_bytes());
    assert_eq!(response.status, 403, "{}", response.body);
    let response = mcp_post(
        &daemon,
        &[("Origin", "http://evil.example")],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(response.status, 403, "{}", response.body);
    let response = mcp_post(
        &daemon,
        &[("Origin", &format!("http://{}", daemon.address))],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(
        response.status, 200,
        "the daemon's own origin: {}",
        response.body
    );

    // No token, a wrong token.
    let response = http(
        &daemon.address,
        "POST",
        "/mcp",
        &[("Content-Type", "application/json")],
        INITIALIZE.as_bytes(),
    )
    .unwrap();
    assert_eq!(response.status, 401, "{}", response.body);
    let response = mcp_post(
        &daemon,
        &[("Authorization", "Bearer not-the-token")],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(response.status, 401, "{}", response.body);

    // An oversized body (the default limit is 10 MiB): refused from its declared length,
    // before it is read.
    assert_eq!(oversized_post_status(&daemon, 11 * 1024 * 1024), 413);

    // Malformed JSON, a batch of garbage, a message that is not JSON-RPC, bad params: JSON-RPC
    // errors, not plain text, not 5xx.
    for (body, code) in [
        (&b"{not json"[..], -32700),
        (&b"[1, \"two\", {\"three\": 3}]"[..], -32600),
        (&b"{\"id\": 4, \"method\": \"ping\"}"[..], -32600),
        (
            &b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{}}"[..],
            -32602,
        ),
    ] {
        let response = mcp_post(&daemon, &[], body);
        assert_eq!(response.status, 400, "{}", response.body);
        assert_eq!(response.json()["error"]["code"], code, "{}", response.body);
    }

    // An unknown method before initialize (what the newest clients send first) is answered at
    // once with -32601, so they fall back to initialize.
    let response = mcp_post(
        &daemon,
        &[],
        br#"{"jsonrpc":"2.0","id":6,"method":"server/discover","params":{}}"#,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.json()["error"]["code"], -32601);
    assert_eq!(response.json()["id"], 6);
    let response = mcp_post(
        &daemon,
        &[],
        br#"{"jsonrpc":"2.0","id":"x","method":"souz/unknown"}"#,
    );
    assert_eq!(
        response.json()["error"]["code"],
        -32601,
        "{}",
        response.body
    );

    // Inside a session, a bare discover probe gets the same prompt -32601 (not rmcp's 400).
    let session = open_session(&daemon);
    let response = mcp_post(
        &daemon,
        &[("Mcp-Session-Id", &session)],
        br#"{"jsonrpc":"2.0","id":8,"method":"server/discover","params":{}}"#,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(
        response.json()["error"]["code"],
        -32601,
        "{}",
        response.body
    );
    assert_eq!(response.json()["id"], 8);

    // An unsupported protocol version header.
    let response = mcp_post(
        &daemon,
        &[("MCP-Protocol-Version", "1999-01-01")],
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
    );
    assert_eq!(response.status, 400, "{}", response.body);

    // Still serving: a proper handshake works and names a supported version.
    let response = mcp_post(&daemon, &[], INITIALIZE.as_bytes());
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response
            .head
            .to_ascii_lowercase()
            .contains("mcp-session-id")
    );
    assert!(
        response.body.contains("\"protocolVersion\":\"2025-06-18\""),
        "{}",
        response.body
    );
}

/// Declares a `length`-byte body, sends only its first bytes, and returns the status the
/// daemon answers with.
fn oversized_post_status(daemon: &Daemon, length: usize) -> u16 {
    let mut stream = std::net::TcpStream::connect(&daemon.address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {length}\r\nConnection: close\r\n\r\n{{",
        daemon.address, daemon.token
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = BufReader::new(stream).read_line(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// A `souz mcp-stdio` child driven line by line.
struct Bridge {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

/// Makes the client token the bridge uses (`souz mcp-config claude-desktop` writes it into
/// the Souz home); the daemon of `daemon_home` must be running.
fn configure_desktop(daemon_home: &Path) {
    let output = Command::new(souz_bin())
        .args(["mcp-config", "claude-desktop"])
        .env("SOUZ_HOME", daemon_home)
        .env_remove("SOUZ_PORT")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
}

impl Bridge {
    fn start(daemon_home: &Path) -> Self {
        configure_desktop(daemon_home);
        let mut child = Command::new(souz_bin())
            .arg("mcp-stdio")
            .env("SOUZ_HOME", daemon_home)
            .env_remove("SOUZ_PORT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message from the bridge with `id` (every line must be JSON-RPC).
    fn answer(&mut self, id: i64) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(20))
                .expect("the bridge answered");
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("stdout carries only JSON-RPC, got {line:?}"));
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if message["id"] == id {
                return message;
            }
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bridge reads pipes without a thread of its own; stdin and stdout that are not pipes (a
/// file of requests, as someone trying the bridge by hand might give it) go through tokio's
/// blocking ends instead, and still carry the protocol: the handshake is answered in a file
/// that holds only JSON-RPC lines, and the end of the input ends the bridge.
#[test]
fn the_bridge_reads_and_writes_files_that_are_not_pipes() {
    let daemon = Daemon::start();
    configure_desktop(daemon.home.path());
    let dir = tempfile::tempdir().unwrap();
    let requests = dir.path().join("requests.jsonl");
    std::fs::write(
        &requests,
        format!(
            "{INITIALIZE}\n{}\n{}\n{}\n",
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            json!({"jsonrpc":"2.0","id":2,"method":"ping"}),
            json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
        ),
    )
    .unwrap();
    let answers = dir.path().join("answers.jsonl");
    let mut bridge = Command::new(souz_bin())
        .arg("mcp-stdio")
        .env("SOUZ_HOME", daemon.home.path())
        .env_remove("SOUZ_PORT")
        .stdin(std::fs::File::open(&requests).unwrap())
        .stdout(std::fs::File::create(&answers).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The end of its input ends the bridge (it closes the session): a bridge still running
    // after 20 s is a failure, not a hung test.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = bridge.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = bridge.kill();
            let _ = bridge.wait();
            panic!("the bridge kept running after the end of its input");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let written = std::fs::read_to_string(&answers).unwrap();
    let messages: Vec<Value> = written
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|_| panic!("stdout carries only JSON-RPC, got {line:?}"))
        })
        .collect();
    let initialized = messages
        .iter()
        .find(|message| message["id"] == 1)
        .unwrap_or_else(|| panic!("the handshake is answered: {written}"));
    assert_eq!(
        initialized["result"]["serverInfo"]["name"], "souz",
        "{initialized}"
    );
    // Every call read before the input ended is answered before the bridge exits.
    for id in [2, 3] {
        let answer = messages
            .iter()
            .find(|message| message["id"] == id)
            .unwrap_or_else(|| panic!("call {id} is answered: {written}"));
        assert!(answer.get("result").is_some(), "{answer}");
    }
}

#[test]
fn the_bridge_says_when_souz_is_down_and_survives_a_restart() {
    let daemon = Daemon::start();
    let mut bridge = Bridge::start(daemon.home.path());
    bridge.send(&serde_json::from_str::<Value>(INITIALIZE).unwrap());
    let initialized = bridge.answer(1);
    assert_eq!(
        initialized["result"]["serverInfo"]["name"], "souz",
        "{initialized}"
    );
    bridge.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    bridge.send(&json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    let listed = bridge.answer(2);
    assert!(
        listed["result"]["tools"].as_array().unwrap().len() > 5,
        "{listed}"
    );

    // The daemon stops: requests get a clear JSON-RPC error; the bridge stays up.
    let stopped = daemon.stop("TERM");
    bridge.send(&json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}));
    let down = bridge.answer(3);
    let message = down["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Souz is not running"), "{down}");
    assert!(
        message.contains("souz serve"),
        "says how to start it: {down}"
    );

    // It comes back (on another port): the bridge finds it and initializes again.
    let daemon = Daemon::restart(stopped);
    bridge.send(&json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}));
    let again = bridge.answer(4);
    assert!(again["result"]["tools"].as_array().is_some(), "{again}");
    bridge.send(&json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ListFiles","arguments":{"path":"~"}}}));
    let called = bridge.answer(5);
    assert_eq!(called["result"]["isError"], false, "{called}");
    drop(daemon);
}

#[test]
fn the_bridge_answers_a_call_in_flight_when_souz_dies() {
    let daemon = Daemon::start();
    let mut bridge = Bridge::start(daemon.home.path());
    bridge.send(&serde_json::from_str::<Value>(INITIALIZE).unwrap());
    assert_eq!(bridge.answer(1)["result"]["serverInfo"]["name"], "souz");
    bridge.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    bridge.send(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"NewFile","arguments":{"path":"~/never.txt","text":"no"}}}));
    // The call waits for a person (the budget is 50 s) when the daemon is killed.
    daemon.wait_until("/v1/approvals?status=pending", |body| {
        body["items"]
            .as_array()
            .is_some_and(|items| !items.is_empty())
    });
    let _stopped = daemon.stop("KILL");
    let answer = bridge.answer(2);
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Souz stopped"), "{answer}");
    assert!(
        message.contains("souz serve"),
        "says how to start it: {answer}"
    );
    // The bridge is still there and says Souz is down.
    bridge.send(&json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}));
    let down = bridge.answer(3);
    assert!(
        down["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("Souz is not running")),
        "{down}"
    );
}

/// Sixteen requests in flight through one bridge: a call that waits for a person holds up
/// none of the fifteen sent after it; each answer comes back whole on its own line, and the
/// waiting call is answered once the person decides.
#[test]
fn the_bridge_answers_requests_in_flight_as_they_complete() {
    let daemon = Daemon::start();
    let mut bridge = Bridge::start(daemon.home.path());
    bridge.send(&serde_json::from_str::<Value>(INITIALIZE).unwrap());
    assert_eq!(bridge.answer(1)["result"]["serverInfo"]["name"], "souz");
    bridge.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    bridge.send(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"NewFile","arguments":{"path":"~/slow.txt","text":"late"}}}));
    let pending = daemon.wait_until("/v1/approvals?status=pending", |body| {
        body["items"]
            .as_array()
            .is_some_and(|items| !items.is_empty())
    });
    for id in 3..18 {
        let request = match id % 3 {
            0 => json!({"jsonrpc":"2.0","id":id,"method":"ping"}),
            1 => json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}),
            _ => {
                json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"Calculator","arguments":{"expression":format!("{id} * 2")}}})
            }
        };
        bridge.send(&request);
    }
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < 15 {
        let line = bridge
            .lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the requests behind the waiting call are answered");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("one JSON-RPC message per line, got {line:?}"));
        if message.get("method").is_some() {
            continue;
        }
        let id = message["id"].as_i64().unwrap();
        assert_ne!(
            id, 2,
            "the waiting call was answered before the person decided"
        );
        assert!(message.get("error").is_none(), "{message}");
        if id % 3 == 2 {
            let text = message["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.contains(&(id * 2).to_string()), "{id}: {message}");
        }
        assert!(answered.insert(id), "{id} answered twice");
    }
    assert_eq!(answered, (3..18).collect());
    let approval = pending["items"][0]["id"].as_str().unwrap();
    let decided = daemon.post(
        &format!("/v1/approvals/{approval}/decision"),
        &json!({"decision": "approve"}),
    );
    assert_eq!(decided.status, 200, "{}", decided.body);
    let slow = bridge.answer(2);
    assert_eq!(slow["result"]["isError"], false, "{slow}");
    assert_eq!(
        std::fs::read_to_string(daemon.user_home().join("slow.txt")).unwrap(),
        "late"
    );
}

#[test]
fn mcp_config_prints_what_to_paste() {
    let daemon = Daemon::start();
    let output = daemon
        .cli()
        .args(["mcp-config", "claude-code"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    // A client token of its own, kept in the Souz home, never in the command (see
    // `credentials.rs`): Claude Code's headersHelper asks `souz mcp-headers` for it.
    let binary = std::fs::canonicalize(souz_bin()).unwrap();
    let expected = json!({
        "type": "http",
        "url": format!("http://{}/mcp", daemon.address),
        "headersHelper": format!(
            "SOUZ_HOME='{}' '{}' mcp-headers",
            daemon.home.path().display(),
            binary.display()
        ),
    });
    let entry = text
        .trim()
        .strip_prefix("claude mcp add-json --scope user souz '")
        .and_then(|rest| rest.strip_suffix('\''))
        .unwrap_or_else(|| panic!("{text}"));
    let entry: Value = serde_json::from_str(&entry.replace("'\\''", "'")).unwrap();
    assert_eq!(entry, expected);
    assert!(!text.contains("souz_client_"), "{text}");
    assert!(!text.contains(&daemon.token), "{text}");

    let output = daemon
        .cli()
        .args(["mcp-config", "claude-desktop"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let config: Value = serde_json::from_slice(&output.stdout).unwrap();
    let server = &config["mcpServers"]["souz"];
    let binary = std::fs::canonicalize(souz_bin()).unwrap();
    assert_eq!(server["command"], binary.to_string_lossy().as_ref());
    assert!(Path::new(server["command"].as_str().unwrap()).is_absolute());
    assert_eq!(server["args"], json!(["mcp-stdio"]));
    assert_eq!(
        server["env"]["SOUZ_HOME"],
        daemon.home.path().to_string_lossy().as_ref()
    );
}
