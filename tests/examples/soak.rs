//! Soak: hours of mixed load on the real daemon, with nothing lost.
//!
//! `scripts/soak.sh --minutes N` (release build) or `--seconds N`. The load, all at once:
//! - MCP `tools/call` (`Calculator`, through the whole approval gate) from `--workers` clients,
//!   each its own streamable-HTTP session, paced to `--rate` calls per second in total;
//! - chat turns against a fake OpenAI server (`souz-testkit`), one after another;
//! - approvals: a write tool call waits for approval and this driver approves or denies it;
//! - WebSocket followers of the chat: one from the start that reconnects after `afterSeq` when
//!   closed, one that reconnects every 10 s.
//!
//! The fake provider's usage counts the prompt it got, as a real provider's does, so the one
//! chat's history is summarized whenever it nears the context window (the run reports how
//! often) and a long run holds a steady history, as a long real chat does.
//!
//! Every minute: MCP calls, their p99, chat turns, approvals, errors, and the daemon's RSS (all
//! and anonymous). At the end: RSS growth after warm-up (the first tenth of the run), and
//! whether events were lost — every stored event a follower acknowledged must be in the replay
//! with its type, and the first follower must have seen every seq from 1 without a gap. Exits 1
//! on any error or lost event.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use souz_e2e::{Daemon, http, status_kib};
use souz_testkit::{FakeServer, openai};
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message as Frame, WebSocket};

const ACCEPT: &str = "application/json, text/event-stream";

/// The driver's options.
struct Options {
    duration: Duration,
    rate: u64,
    workers: u64,
}

fn options() -> Options {
    let mut options = Options {
        duration: Duration::from_secs(60),
        rate: 1200,
        workers: 8,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || -> u64 {
            args.next()
                .and_then(|value| value.parse().ok())
                .unwrap_or_else(|| panic!("{arg} takes a number"))
        };
        match arg.as_str() {
            "--minutes" => options.duration = Duration::from_secs(value() * 60),
            "--seconds" => options.duration = Duration::from_secs(value()),
            "--rate" => options.rate = value().max(1),
            "--workers" => options.workers = value().max(1),
            other => {
                panic!("unknown option {other} (--minutes N | --seconds N, --rate R, --workers W)")
            }
        }
    }
    options
}

/// What one minute saw.
#[derive(Default, Clone)]
struct Minute {
    calls: Vec<Duration>,
    errors: u64,
    turns: u64,
    approvals: u64,
    rss_kib: u64,
    anon_kib: u64,
}

/// Shared counters of the run.
#[derive(Default)]
struct Stats {
    minutes: Mutex<BTreeMap<u64, Minute>>,
    errors: Mutex<Vec<String>>,
}

impl Stats {
    fn minute(&self, started: Instant, update: impl FnOnce(&mut Minute)) {
        let index = started.elapsed().as_secs() / 60;
        update(self.minutes.lock().unwrap().entry(index).or_default());
    }

    fn error(&self, started: Instant, what: String) {
        self.minute(started, |minute| minute.errors += 1);
        let mut errors = self.errors.lock().unwrap();
        if errors.len() < 20 {
            errors.push(what);
        }
    }
}

fn main() {
    let options = options();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let provider = runtime.block_on(FakeServer::start());
    // The usage counts the prompt the provider got (a token per four bytes of the request), as
    // a real one does: the chat's history is summarized when it nears the context window, and
    // a soak of thousands of turns runs at a steady history length, not an ever longer one.
    // The summaries it was asked for are counted (the agent's summary prompt, quoted here).
    provider.record_requests(false);
    let summaries = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&summaries);
    provider.set_responder("/v1/chat/completions", move |request| {
        if request
            .text()
            .contains("must be compressed into a save point")
        {
            counted.fetch_add(1, Ordering::Relaxed);
        }
        openai::text_frames(&["Soak ", "answer ", "in ", "pieces."])
            .delay(Duration::from_millis(5))
            .data(openai::chunk(json!({}), Some("stop")))
            .data(openai::usage_chunk(request.body.len() as u64 / 4, 4, 0))
            .data("[DONE]")
            .end()
    });
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\nopenai_base_url = \"{}/v1\"\n\n[agent]\ndefault_agent = \"skills\"\n",
            provider.url()
        ),
    )
    .unwrap();
    let daemon = Daemon::start_in(home, |command| {
        command
            .env("OPENAI_API_KEY", "sk-soak")
            .env("SOUZ_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
    });
    let chat = daemon.post("/v1/chats", &json!({"title": "soak"})).json()["chat"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let target = Target {
        address: daemon.address.clone(),
        token: daemon.token.clone(),
    };
    let stats = Arc::new(Stats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let followers_stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    println!(
        "soak: {} s, MCP {} calls/s from {} clients, chat turns, approvals, 2 followers; daemon pid {}",
        options.duration.as_secs(),
        options.rate,
        options.workers,
        daemon.pid()
    );

    let mcp: Vec<_> = (0..options.workers)
        .map(|_| {
            let pause = Duration::from_secs_f64(options.workers as f64 / options.rate as f64);
            runtime.spawn(mcp_worker(
                target.clone(),
                pause,
                Arc::clone(&stats),
                Arc::clone(&stop),
                started,
            ))
        })
        .collect();
    let followers: Vec<_> = [None, Some(Duration::from_secs(10))]
        .into_iter()
        .map(|reconnect_every| {
            let (target, chat, stop) = (target.clone(), chat.clone(), Arc::clone(&followers_stop));
            std::thread::spawn(move || follow(&target, &chat, reconnect_every, &stop))
        })
        .collect();
    let workers = [
        {
            let (target, chat, stats, stop) = (
                target.clone(),
                chat.clone(),
                Arc::clone(&stats),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || chat_turns(&target, &chat, &stats, &stop, started))
        },
        {
            let (target, stats, stop) = (target.clone(), Arc::clone(&stats), Arc::clone(&stop));
            std::thread::spawn(move || approvals(&target, &stats, &stop, started))
        },
    ];

    let mut reported = 0;
    while started.elapsed() < options.duration {
        std::thread::sleep(Duration::from_secs(1).min(options.duration - started.elapsed()));
        // All resident memory, and its anonymous part (heap and stacks: what a leak grows; the
        // rest is code and mapped files the kernel can drop).
        let rss = status_kib(daemon.pid(), "VmRSS").unwrap_or_default();
        let anon = status_kib(daemon.pid(), "RssAnon").unwrap_or_default();
        stats.minute(started, |minute| {
            minute.rss_kib = minute.rss_kib.max(rss);
            minute.anon_kib = minute.anon_kib.max(anon);
        });
        let current = started.elapsed().as_secs() / 60;
        if current > reported {
            report_minute(&stats, reported);
            reported = current;
        }
    }
    stop.store(true, Ordering::SeqCst);
    for task in mcp {
        let _ = runtime.block_on(task);
    }
    for worker in workers {
        worker.join().unwrap();
    }
    // The last turn has ended: the followers get a moment to receive its last events.
    std::thread::sleep(Duration::from_secs(1));
    followers_stop.store(true, Ordering::SeqCst);
    let seen: Vec<BTreeMap<i64, String>> = followers
        .into_iter()
        .map(|follower| follower.join().unwrap())
        .collect();
    let replay = daemon.chat_events(&chat);
    let failed_turns = replay
        .values()
        .filter(|kind| kind.as_str() == "execution.failed")
        .count();
    if failed_turns > 0 {
        stats.error(started, format!("{failed_turns} chat turns failed"));
    }
    if !started.elapsed().as_secs().is_multiple_of(60) || reported == 0 {
        report_minute(&stats, reported);
    }
    let lost = lost_events(&replay, &seen);
    // `summarize` exits the process, which runs no destructors: stop the daemon first, or it
    // outlives the soak (and keeps a core busy through the steps after it).
    drop(daemon);
    let summaries = summaries.load(Ordering::Relaxed);
    summarize(&stats, &replay, lost, summaries, options.duration)
}

/// Prints one minute's row.
fn report_minute(stats: &Stats, index: u64) {
    let minute = stats
        .minutes
        .lock()
        .unwrap()
        .get(&index)
        .cloned()
        .unwrap_or_default();
    let mut calls = minute.calls.clone();
    calls.sort();
    let p99 = calls
        .get(((calls.len() as f64 - 1.0) * 0.99).round().max(0.0) as usize)
        .copied()
        .unwrap_or_default();
    println!(
        "minute {:>3}: MCP {:>7} calls ({:>6.0}/s) p99 {:>6.2} ms | turns {:>5} | approvals {:>5} | errors {} | RSS {:.1} MiB ({:.1} anonymous)",
        index + 1,
        calls.len(),
        calls.len() as f64 / 60.0,
        p99.as_secs_f64() * 1e3,
        minute.turns,
        minute.approvals,
        minute.errors,
        minute.rss_kib as f64 / 1024.0,
        minute.anon_kib as f64 / 1024.0
    );
}

/// Events the followers acknowledged that the replay does not hold, plus seqs the continuous
/// follower skipped.
fn lost_events(replay: &BTreeMap<i64, String>, seen: &[BTreeMap<i64, String>]) -> Vec<String> {
    let mut lost = Vec::new();
    for (follower, events) in seen.iter().enumerate() {
        for (seq, kind) in events {
            if replay.get(seq) != Some(kind) {
                lost.push(format!(
                    "follower {follower}: seq {seq} ({kind}) not in the replay"
                ));
            }
        }
    }
    if let Some(continuous) = seen.first() {
        for seq in replay.keys() {
            if !continuous.contains_key(seq) {
                lost.push(format!("follower 0 never received seq {seq}"));
            }
        }
    }
    lost
}

fn summarize(
    stats: &Stats,
    replay: &BTreeMap<i64, String>,
    lost: Vec<String>,
    summaries: u64,
    duration: Duration,
) -> ! {
    let minutes = stats.minutes.lock().unwrap().clone();
    let calls: usize = minutes.values().map(|minute| minute.calls.len()).sum();
    let turns: u64 = minutes.values().map(|minute| minute.turns).sum();
    let approvals: u64 = minutes.values().map(|minute| minute.approvals).sum();
    let errors: u64 = minutes.values().map(|minute| minute.errors).sum();
    let rss: Vec<u64> = minutes.values().map(|minute| minute.rss_kib).collect();
    let anon: Vec<u64> = minutes.values().map(|minute| minute.anon_kib).collect();
    // Warm-up: the first tenth of the run (at least its first minute), while caches fill (the
    // readers' page caches, the mapped database, the allocator's arenas). Growth: the last
    // minute's peak against the last warm-up minute's.
    let warm_up = (rss.len() / 10).max(1);
    let growth = |series: &[u64]| match (series.get(warm_up - 1), series.last()) {
        (Some(first), Some(last)) => (*last as f64 - *first as f64) / 1024.0,
        _ => 0.0,
    };
    let mib = |series: &[u64], index: usize| {
        series.get(index).copied().unwrap_or_default() as f64 / 1024.0
    };
    let last = rss.len().saturating_sub(1);
    println!(
        "\nsoak: {:.0} s | MCP {calls} calls ({:.0}/s) | {turns} chat turns ({summaries} history summaries) | {approvals} approvals decided | {} stored chat events | errors {errors} | lost events {} | RSS after warm-up (minute {warm_up}) {:.1} MiB ({:.1} anonymous), last {:.1} MiB ({:.1} anonymous), growth {:+.1} MiB ({:+.1} anonymous)",
        duration.as_secs_f64(),
        calls as f64 / duration.as_secs_f64(),
        replay.len(),
        lost.len(),
        mib(&rss, warm_up - 1),
        mib(&anon, warm_up - 1),
        mib(&rss, last),
        mib(&anon, last),
        growth(&rss),
        growth(&anon),
    );
    for error in stats.errors.lock().unwrap().iter() {
        println!("error: {error}");
    }
    for lost in lost.iter().take(20) {
        println!("lost: {lost}");
    }
    let failed = errors > 0 || !lost.is_empty() || turns == 0 || approvals == 0;
    std::process::exit(i32::from(failed))
}

#[derive(Clone)]
struct Target {
    address: String,
    token: String,
}

impl Target {
    fn send(&self, method: &str, path: &str, body: &Value) -> Result<(u16, Value), String> {
        let auth = format!("Bearer {}", self.token);
        let body = if method == "GET" {
            String::new()
        } else {
            body.to_string()
        };
        let response = http(
            &self.address,
            method,
            path,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body.as_bytes(),
        )
        .map_err(|error| format!("{method} {path}: {error}"))?;
        let parsed = serde_json::from_str(&response.body)
            .map_err(|error| format!("{method} {path}: {error}: {}", response.body))?;
        Ok((response.status, parsed))
    }
}

/// One MCP client: its own session, a call every `pause`.
async fn mcp_worker(
    target: Target,
    pause: Duration,
    stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
    started: Instant,
) {
    let (url, token) = (format!("http://{}/mcp", target.address), target.token);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let post = |body: String, session: Option<&str>| {
        let mut request = client
            .post(&url)
            .bearer_auth(&token)
            .header("accept", ACCEPT)
            .header("content-type", "application/json")
            .body(body);
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18");
        }
        request
    };
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "souz-soak", "version": "1"}},
    });
    let session = match post(initialize.to_string(), None).send().await {
        Ok(response) => {
            let session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let _ = response.text().await;
            session
        }
        Err(error) => {
            stats.error(started, format!("MCP initialize: {error}"));
            return;
        }
    };
    let Some(session) = session else {
        stats.error(started, "MCP initialize: no session id".to_owned());
        return;
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = post(initialized.to_string(), Some(&session)).send().await;
    let mut ticks = tokio::time::interval(pause);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let sequence = AtomicU64::new(1);
    while !stop.load(Ordering::SeqCst) {
        ticks.tick().await;
        let id = sequence.fetch_add(1, Ordering::Relaxed);
        let a = id % 1000;
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "Calculator", "arguments": {"expression": format!("{a} + 1")}},
        });
        let began = Instant::now();
        let answer = match post(body.to_string(), Some(&session)).send().await {
            Ok(response) => response.text().await.map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        let took = began.elapsed();
        match answer {
            Ok(text) if text.contains("\"result\"") && text.contains(&(a + 1).to_string()) => {
                stats.minute(started, |minute| minute.calls.push(took));
            }
            Ok(text) => stats.error(started, format!("MCP tools/call answered: {text}")),
            Err(error) => stats.error(started, format!("MCP tools/call: {error}")),
        }
    }
    let _ = client
        .delete(&url)
        .bearer_auth(&token)
        .header("mcp-session-id", &session)
        .send()
        .await;
}

/// Chat turns one after another: a new message as soon as the chat takes it (409 while the
/// previous turn runs). Failed turns are counted from the replay at the end.
fn chat_turns(target: &Target, chat: &str, stats: &Stats, stop: &AtomicBool, started: Instant) {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let body = json!({"content": format!("soak turn {n}")});
        match target.send("POST", &format!("/v1/chats/{chat}/messages"), &body) {
            Ok((200, _)) => stats.minute(started, |minute| minute.turns += 1),
            Ok((409, _)) => {}
            Ok((status, answer)) => {
                stats.error(started, format!("POST message: {status} {answer}"))
            }
            Err(error) => stats.error(started, error),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // The last turn ends before the followers stop.
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok((status, _)) = target.send(
            "POST",
            &format!("/v1/chats/{chat}/cancel-active"),
            &json!({}),
        ) && status != 200
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A write that waits for approval, decided by this script (approve, deny, approve, ...), and
/// checked to reach the matching end.
fn approvals(target: &Target, stats: &Stats, stop: &AtomicBool, started: Instant) {
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let write = json!({
            "tool": "NewFile",
            "arguments": {"path": format!("soak/{n}.txt"), "text": "x"},
            "wait_ms": 0,
        });
        let call = match target.send("POST", "/v1/tool-calls", &write) {
            Ok((202, call)) => call,
            Ok((status, call)) => {
                stats.error(started, format!("NewFile: {status} {call}"));
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            Err(error) => {
                stats.error(started, error);
                continue;
            }
        };
        let Some(id) = call["id"].as_str() else {
            stats.error(started, format!("NewFile answered without an id: {call}"));
            continue;
        };
        // Answered while still planning: the approval comes a moment later.
        let Some(approval) = approval_of(target, id) else {
            stats.error(
                started,
                format!("NewFile did not wait for approval: {call}"),
            );
            continue;
        };
        let approve = !n.is_multiple_of(2);
        let decision = json!({"decision": if approve { "approve" } else { "deny" }});
        match target.send(
            "POST",
            &format!("/v1/approvals/{approval}/decision"),
            &decision,
        ) {
            Ok((200, _)) => {}
            Ok((status, answer)) => stats.error(started, format!("decision: {status} {answer}")),
            Err(error) => stats.error(started, error),
        }
        let wanted = if approve { "succeeded" } else { "denied" };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match target.send("GET", &format!("/v1/tool-calls/{id}"), &Value::Null) {
                Ok((200, call)) if call["status"] == wanted => {
                    stats.minute(started, |minute| minute.approvals += 1);
                    break;
                }
                Ok((200, call))
                    if call["status"] != "waiting_approval" && call["status"] != "running" =>
                {
                    stats.error(started, format!("approved call ended as {call}"));
                    break;
                }
                Ok((200, _)) => {}
                Ok((status, call)) => {
                    stats.error(started, format!("GET tool call: {status} {call}"));
                    break;
                }
                Err(error) => {
                    stats.error(started, error);
                    break;
                }
            }
            if Instant::now() > deadline {
                stats.error(started, format!("call {id} did not end in 30 s"));
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The approval a call waits for, once it asks (10 s at most).
fn approval_of(target: &Target, id: &str) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let (_, call) = target
            .send("GET", &format!("/v1/tool-calls/{id}"), &Value::Null)
            .ok()?;
        if let Some(approval) = call["approval_id"].as_str() {
            return Some(approval.to_owned());
        }
        if call["status"] != "planning" {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    None
}

/// Follows the chat until `stop`, reconnecting after the last seq it saw when the socket
/// closes (or every `reconnect_every`); returns every stored event it received.
fn follow(
    target: &Target,
    chat: &str,
    reconnect_every: Option<Duration>,
    stop: &AtomicBool,
) -> BTreeMap<i64, String> {
    let mut seen = BTreeMap::new();
    let mut last = 0;
    while !stop.load(Ordering::SeqCst) {
        let Some(mut socket) = socket(target, chat, last) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let connected = Instant::now();
        loop {
            if stop.load(Ordering::SeqCst)
                || reconnect_every.is_some_and(|every| connected.elapsed() >= every)
            {
                break;
            }
            let frame = match socket.read() {
                Ok(frame) => frame,
                Err(tungstenite::Error::Io(error))
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue;
                }
                Err(_) => break,
            };
            let Frame::Text(text) = frame else {
                continue;
            };
            let Ok(event) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            if let (Some(seq), Some(kind)) = (event["seq"].as_i64(), event["type"].as_str()) {
                seen.insert(seq, kind.to_owned());
                last = last.max(seq);
            }
        }
        let _ = socket.close(None);
    }
    seen
}

fn socket(target: &Target, chat: &str, after: i64) -> Option<WebSocket<MaybeTlsStream<TcpStream>>> {
    let mut request = format!(
        "ws://{}/v1/chats/{chat}/ws?afterSeq={after}",
        target.address
    )
    .into_client_request()
    .ok()?;
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", target.token).parse().ok()?,
    );
    let (socket, _) = tungstenite::connect(request).ok()?;
    if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .ok()?;
    }
    Some(socket)
}
