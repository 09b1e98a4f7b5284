//! `tools/call` throughput and latency: Souz's MCP server against the Node reference server
//! (`@modelcontextprotocol/server-everything`), measured side by side in one run.
//!
//! Rows: streamable HTTP with 1 and 16 concurrent clients (each its own session, one request
//! in flight at a time), 16 again while 200 more sessions stay open and quiet (what a call
//! costs must not grow with the sessions a server keeps), and stdio with 1 request in flight and with 16 in flight from one
//! client (Souz through `souz mcp-stdio`, the reference server over its native stdio). Souz
//! calls `Calculator` (`2 + 3 * 4`) through the approval gate; the reference server calls
//! `echo`. The same Rust client code drives both.
//!
//! HTTP rows also print the server process's CPU time per call over the measured time
//! (`/proc/<pid>/stat`): on two cores the client takes its share of the CPU, so that is the
//! steadier figure of what a call costs the server.
//!
//! Run with `scripts/bench.sh mcp` (release build), or `scripts/bench.sh mcp-stdio` for the
//! stdio rows only (the bench's argument `http` or `stdio` picks a group). `SOUZ_BENCH_SECONDS`
//! sets the measured time per row (default 5).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use serde_json::{Value, json};
use souz_e2e::{Daemon, souz_bin};

const ACCEPT: &str = "application/json, text/event-stream";
/// Sessions left open and quiet during the last HTTP row.
const IDLE_SESSIONS: usize = 200;

fn clients() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients")
}

fn node() -> PathBuf {
    let node = clients().join("node_modules/.bin/node");
    assert!(
        node.exists(),
        "{} is missing: run scripts/bench.sh, which installs the reference server",
        node.display()
    );
    node
}

fn everything_entry() -> PathBuf {
    clients().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// One server under test.
#[derive(Clone)]
struct Target {
    name: &'static str,
    /// The server's process, for its CPU time.
    pid: u32,
    url: String,
    token: Option<String>,
    tool: &'static str,
    arguments: Value,
    /// A process a stdio row runs through besides its own (Souz's bridge forwards each call
    /// to the daemon).
    behind_stdio: Option<u32>,
}

/// Latencies of one row.
struct Row {
    label: String,
    requests: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    /// CPU time each process taking part used over the measured time, by role: the server
    /// (HTTP rows); the client, the stdio process and, behind the bridge, the daemon (stdio
    /// rows).
    cpu: Vec<(String, Duration)>,
    /// The measured time the CPU times are over.
    cpu_elapsed: Duration,
}

/// User plus system CPU time of process `pid` so far (Linux `/proc`; `None` elsewhere).
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(
        ticks as f64 / *CLOCK_TICKS.as_ref()?,
    ))
}

/// Clock ticks per second, the unit of `/proc/<pid>/stat`'s CPU times.
static CLOCK_TICKS: std::sync::LazyLock<Option<f64>> = std::sync::LazyLock::new(|| {
    let output = Command::new("getconf").arg("CLK_TCK").output().ok()?;
    let ticks: f64 = String::from_utf8(output.stdout).ok()?.trim().parse().ok()?;
    (ticks > 0.0).then_some(ticks)
});

impl Row {
    fn throughput(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, fraction: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
        sorted.get(index).copied().unwrap_or_default()
    }
}

/// The `params` of a call to `target`'s tool, serialized once per row.
fn call_params(target: &Target) -> String {
    json!({"name": target.tool, "arguments": target.arguments}).to_string()
}

/// A `tools/call` request with `params` from [`call_params`].
fn call_body(params: &str, id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
}

fn check_answer(text: &str, target: &Target) {
    assert!(
        text.contains("\"result\"") && !text.contains("\"isError\":true"),
        "{} answered: {text}",
        target.name
    );
}

/// One keep-alive HTTP/1 connection (hyper's) to `target`'s endpoint, with the fixed headers
/// made once, so the load generator, which shares the two cores with the server under test,
/// spends little CPU per call.
struct Connection {
    sender: hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>,
    path: http::Uri,
    headers: http::HeaderMap,
}

impl Connection {
    async fn open(target: &Target) -> Self {
        let url: http::Uri = target.url.parse().unwrap();
        let authority = url.authority().unwrap().clone();
        let stream = tokio::net::TcpStream::connect(authority.as_str())
            .await
            .unwrap();
        stream.set_nodelay(true).unwrap();
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(connection);
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::HOST, authority.as_str().parse().unwrap());
        headers.insert(http::header::ACCEPT, ACCEPT.parse().unwrap());
        headers.insert(
            http::header::CONTENT_TYPE,
            "application/json".parse().unwrap(),
        );
        if let Some(token) = &target.token {
            headers.insert(
                http::header::AUTHORIZATION,
                format!("Bearer {token}").parse().unwrap(),
            );
        }
        Self {
            sender,
            path: url.path().parse().unwrap(),
            headers,
        }
    }

    /// Sends one request in `session` (none: the fixed headers alone); returns the session id
    /// the answer names and the whole body.
    async fn send(
        &mut self,
        method: http::Method,
        session: Option<&Session>,
        body: String,
    ) -> (Option<http::HeaderValue>, bytes::Bytes) {
        let mut request = http::Request::new(http_body_util::Full::new(bytes::Bytes::from(body)));
        *request.method_mut() = method;
        *request.uri_mut() = self.path.clone();
        *request.headers_mut() = session.map_or_else(|| self.headers.clone(), |s| s.0.clone());
        let response = self.sender.send_request(request).await.unwrap();
        let session = response.headers().get("mcp-session-id").cloned();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (session, body)
    }

    /// Opens a session as a client does (`initialize`, then `notifications/initialized`).
    async fn start_session(&mut self) -> Session {
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "souz-bench", "version": "1"}},
        });
        let (id, _) = self
            .send(http::Method::POST, None, initialize.to_string())
            .await;
        let mut headers = self.headers.clone();
        headers.insert("mcp-session-id", id.expect("a session id"));
        headers.insert("mcp-protocol-version", "2025-06-18".parse().unwrap());
        let session = Session(headers);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = self
            .send(http::Method::POST, Some(&session), initialized.to_string())
            .await;
        session
    }

    /// Ends `session` (`DELETE`).
    async fn end_session(&mut self, session: Session) {
        let _ = self
            .send(http::Method::DELETE, Some(&session), String::new())
            .await;
    }
}

/// A session: the connection's fixed headers with its id and protocol version.
struct Session(http::HeaderMap);

/// One HTTP client: its own session over its own connection, one request at a time.
async fn http_worker(target: Target, until: Instant, warmup: Instant) -> Vec<Duration> {
    let mut connection = Connection::open(&target).await;
    let session = connection.start_session().await;
    let params = call_params(&target);
    let mut latencies = Vec::new();
    let mut id = 1;
    while Instant::now() < until {
        let started = Instant::now();
        let body = call_body(&params, id);
        let (_, answer) = connection
            .send(http::Method::POST, Some(&session), body)
            .await;
        let took = started.elapsed();
        check_answer(&String::from_utf8_lossy(&answer), &target);
        if started >= warmup {
            latencies.push(took);
        }
        id += 1;
    }
    connection.end_session(session).await;
    latencies
}

/// `workers` clients for `seconds` after a second of warm-up, while `idle` other sessions
/// stay open without a request (clients that connected and went quiet, as editors leave them).
fn http_row(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    workers: usize,
    idle: usize,
    seconds: u64,
) -> Row {
    let (mut quiet, idle_sessions) = runtime.block_on(async {
        let mut connection = Connection::open(target).await;
        let mut sessions = Vec::with_capacity(idle);
        for _ in 0..idle {
            sessions.push(connection.start_session().await);
        }
        (connection, sessions)
    });
    let warmup = Instant::now() + Duration::from_secs(1);
    let until = warmup + Duration::from_secs(seconds);
    let (latencies, server_cpu) = runtime.block_on(async {
        let tasks: Vec<_> = (0..workers)
            .map(|_| tokio::spawn(http_worker(target.clone(), until, warmup)))
            .collect();
        let pid = target.pid;
        let cpu = tokio::spawn(async move {
            tokio::time::sleep_until(warmup.into()).await;
            let start = cpu_time(pid)?;
            tokio::time::sleep_until(until.into()).await;
            Some(cpu_time(pid)?.saturating_sub(start))
        });
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        (all, cpu.await.unwrap())
    });
    runtime.block_on(async {
        for session in idle_sessions {
            quiet.end_session(session).await;
        }
    });
    let label = match idle {
        0 => format!("{} HTTP c{workers}", target.name),
        idle => format!("{} HTTP c{workers}+{idle} idle", target.name),
    };
    Row {
        label,
        requests: latencies.len(),
        elapsed: Duration::from_secs(seconds),
        latencies,
        cpu: server_cpu
            .map(|cpu| vec![("server".to_owned(), cpu)])
            .unwrap_or_default(),
        cpu_elapsed: Duration::from_secs(seconds),
    }
}

/// One stdio client of `command` keeping `in_flight` requests outstanding: a new request is
/// written as soon as an answer comes, answers are matched to requests by id.
fn stdio_row(
    label: &str,
    mut command: Command,
    target: &Target,
    seconds: u64,
    in_flight: usize,
) -> Row {
    let mut child: Child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // The next answer to a request (notifications and other messages are skipped).
    let mut answer = |line: &mut String| -> Value {
        loop {
            line.clear();
            assert!(stdout.read_line(line).unwrap() > 0, "{label} closed stdout");
            let value: Value = serde_json::from_str(line).unwrap();
            if value.get("method").is_none() && !value["id"].is_null() {
                return value;
            }
        }
    };
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "souz-bench", "version": "1"}},
    });
    writeln!(stdin, "{initialize}").unwrap();
    stdin.flush().unwrap();
    assert_eq!(answer(&mut line)["id"], 0);
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    let warmup = Instant::now() + Duration::from_secs(1);
    let until = warmup + Duration::from_secs(seconds);
    let mut sent: HashMap<u64, Instant> = HashMap::new();
    let mut latencies = Vec::new();
    let mut next_id = 1;
    let params = call_params(target);
    let mut send = |stdin: &mut std::process::ChildStdin, sent: &mut HashMap<u64, Instant>| {
        writeln!(stdin, "{}", call_body(&params, next_id)).unwrap();
        stdin.flush().unwrap();
        sent.insert(next_id, Instant::now());
        next_id += 1;
    };
    for _ in 0..in_flight {
        send(&mut stdin, &mut sent);
    }
    // The client (this process), the stdio process, and the daemon behind a bridge.
    let mut watched = vec![
        ("client".to_owned(), std::process::id()),
        (command_name(&command), child.id()),
    ];
    watched.extend(target.behind_stdio.map(|pid| ("daemon".to_owned(), pid)));
    let cpu_now = |watched: &[(String, u32)]| -> Vec<Option<Duration>> {
        watched.iter().map(|(_, pid)| cpu_time(*pid)).collect()
    };
    let mut cpu_from: Option<(Instant, Vec<Option<Duration>>)> = None;
    let mut cpu_to: Option<(Instant, Vec<Option<Duration>>)> = None;
    let mut measured_from = None;
    let mut measured_to = warmup;
    while !sent.is_empty() {
        let value = answer(&mut line);
        let id = value["id"].as_u64().expect("a numeric id");
        let started = sent.remove(&id).expect("an answer to a request in flight");
        let now = Instant::now();
        check_answer(line.trim_end(), target);
        if started >= warmup {
            latencies.push(now - started);
            measured_from.get_or_insert(started);
            measured_to = now;
        }
        if now >= warmup && cpu_from.is_none() {
            cpu_from = Some((now, cpu_now(&watched)));
        }
        if now < until {
            send(&mut stdin, &mut sent);
        } else if cpu_to.is_none() {
            cpu_to = Some((now, cpu_now(&watched)));
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    Row {
        label: label.to_owned(),
        requests: latencies.len(),
        elapsed: measured_to - measured_from.unwrap_or(warmup),
        latencies,
        cpu_elapsed: match (&cpu_from, &cpu_to) {
            (Some((from, _)), Some((to, _))) => *to - *from,
            _ => Duration::ZERO,
        },
        cpu: match (cpu_from, cpu_to) {
            (Some((_, from)), Some((_, to))) => watched
                .into_iter()
                .zip(from.into_iter().zip(to))
                .filter_map(|((who, _), (from, to))| Some((who, to?.saturating_sub(from?))))
                .collect(),
            _ => Vec::new(),
        },
    }
}

/// What a command runs, for the CPU lines: its program's file name and its first argument.
fn command_name(command: &Command) -> String {
    let program = Path::new(command.get_program())
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    match command.get_args().next() {
        Some(_) if program == "node" => "node server".to_owned(),
        Some(argument) => format!("{program} {}", argument.to_string_lossy()),
        None => program,
    }
}

/// The reference server in streamable HTTP mode on a free port.
struct Everything {
    child: Child,
    port: u16,
}

impl Everything {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(node())
            .arg(everything_entry())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the reference server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, port }
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn micros(duration: Duration) -> String {
    format!("{:.0}", duration.as_secs_f64() * 1e6)
}

fn main() {
    let seconds: u64 = std::env::var("SOUZ_BENCH_SECONDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(5);
    let daemon = Daemon::start();
    let everything = Everything::start();
    let souz = Target {
        name: "Souz",
        pid: daemon.pid(),
        url: format!("http://{}/mcp", daemon.address),
        token: Some(daemon.token.clone()),
        tool: "Calculator",
        arguments: json!({"expression": "2 + 3 * 4"}),
        behind_stdio: Some(daemon.pid()),
    };
    let reference = Target {
        name: "server-everything",
        pid: everything.child.id(),
        url: format!("http://127.0.0.1:{}/mcp", everything.port),
        token: None,
        tool: "echo",
        arguments: json!({"message": "hello"}),
        behind_stdio: None,
    };

    // The HTTP clients share one thread: the load generator takes at most one of the two cores.
    let http_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // `http`, `stdio` or nothing (both): the groups of rows to run.
    let group = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with('-'))
        .unwrap_or_default();
    let mut rows = Vec::new();
    if group.is_empty() || group == "http" {
        for (workers, idle) in [(1, 0), (16, 0), (16, IDLE_SESSIONS)] {
            rows.push((
                http_row(&http_runtime, &souz, workers, idle, seconds),
                http_row(&http_runtime, &reference, workers, idle, seconds),
            ));
        }
    }
    if group.is_empty() || group == "stdio" {
        // The bridge uses a client token of its own, which `souz mcp-config` leaves in the home.
        let configured = Command::new(souz_bin())
            .args(["mcp-config", "claude-desktop"])
            .env("SOUZ_HOME", daemon.home.path())
            .env_remove("SOUZ_PORT")
            .output()
            .unwrap();
        assert!(configured.status.success(), "{configured:?}");
        let bridge = || {
            let mut bridge = Command::new(souz_bin());
            bridge
                .arg("mcp-stdio")
                .env("SOUZ_HOME", daemon.home.path())
                .env_remove("SOUZ_PORT");
            bridge
        };
        let native = || {
            let mut native = Command::new(node());
            native.arg(everything_entry()).arg("stdio");
            native
        };
        for in_flight in [1, 16] {
            rows.push((
                stdio_row(
                    &format!("Souz via mcp-stdio f{in_flight}"),
                    bridge(),
                    &souz,
                    seconds,
                    in_flight,
                ),
                stdio_row(
                    &format!("server-everything stdio f{in_flight}"),
                    native(),
                    &reference,
                    seconds,
                    in_flight,
                ),
            ));
        }
    }

    println!(
        "\nMCP tools/call, {seconds} s per row after 1 s warm-up (Souz: Calculator through the \
         approval gate; reference: echo). cN: N HTTP clients with a request each in flight \
         (+M idle: M more sessions open and quiet); fN: one stdio client with N requests in \
         flight.\n"
    );
    println!(
        "{:<36} {:>10} {:>10} {:>10}",
        "row", "req/s", "p50 µs", "p99 µs"
    );
    for (ours, theirs) in &rows {
        for row in [ours, theirs] {
            println!(
                "{:<36} {:>10.0} {:>10} {:>10}",
                row.label,
                row.throughput(),
                micros(row.percentile(0.5)),
                micros(row.percentile(0.99)),
            );
        }
        println!(
            "{:<36} {:>9.1}x {:>9.2}x {:>9.2}x   (Souz / reference; latency < 1 is better)",
            "ratio",
            ours.throughput() / theirs.throughput(),
            ours.percentile(0.5).as_secs_f64() / theirs.percentile(0.5).as_secs_f64(),
            ours.percentile(0.99).as_secs_f64() / theirs.percentile(0.99).as_secs_f64(),
        );
        // What each call cost each process (HTTP rows: the server's alone; the client's CPU
        // is not in it). Stdio rows add up the client, the stdio process and the daemon: on
        // two cores their sum is what bounds the row.
        for row in [ours, theirs] {
            let calls = row.latencies.len() as f64;
            if row.cpu.is_empty() || calls == 0.0 || row.cpu_elapsed.is_zero() {
                continue;
            }
            let name = row.label.split(' ').next().unwrap_or_default();
            let per_call = |cpu: Duration| {
                cpu.as_secs_f64() * 1e6 / calls * row.elapsed.as_secs_f64()
                    / row.cpu_elapsed.as_secs_f64()
            };
            for (who, cpu) in &row.cpu {
                println!(
                    "{:<36} {:>10.2} CPUs {:>6.0} µs of {who} CPU per call",
                    format!("  {name} {who}"),
                    cpu.as_secs_f64() / row.cpu_elapsed.as_secs_f64(),
                    per_call(*cpu),
                );
            }
            if row.cpu.len() > 1 {
                let all: Duration = row.cpu.iter().map(|(_, cpu)| *cpu).sum();
                println!(
                    "{:<36} {:>10.2} CPUs {:>6.0} µs of CPU per call in all",
                    format!("  {name} all"),
                    all.as_secs_f64() / row.cpu_elapsed.as_secs_f64(),
                    per_call(all),
                );
            }
        }
        println!();
    }
    drop(everything);
    drop(daemon);
}
