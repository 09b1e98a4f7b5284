//! Crash loop: `kill -9` the daemon at random points while chat turns stream, tool calls run
//! and approvals are decided, restart it in the same home, and check that nothing the daemon
//! acknowledged is lost and nothing is left half-done.
//!
//! After every kill: the database passes `PRAGMA integrity_check`; after every restart: every
//! event a WebSocket follower saw (a stored event has a `seq`) is in the replay with the same
//! type, every message a `POST` acknowledged is stored, no execution, agent turn or tool call
//! is left running and no approval pending (the daemon fails or expires them at start).
//!
//! `SOUZ_CRASH_ROUNDS` sets the number of kills (20 by default; `scripts/crash-loop.sh 100` for
//! the closing note), `SOUZ_CRASH_SEED` replays a run's kill points (the seed is printed).

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use souz_e2e::{Daemon, Rng, env_number, http};
use souz_testkit::openai;
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message as Frame, WebSocket};

use crate::chats::{COMPLETIONS, daemon_configured, new_chat, provider};

/// What the daemon acknowledged during one round, collected by the load threads.
#[derive(Default)]
struct Acknowledged {
    /// Stored chat events a follower received: seq → type.
    events: BTreeMap<i64, String>,
    /// Messages a `POST /messages` answered 200 for.
    messages: Vec<String>,
    /// Calls with side effects the daemon answered for (waiting for approval).
    calls: Vec<String>,
    /// Read-only calls the daemon answered. Their records are stored in batches after the
    /// answer (the gate's throughput design, `tools/gate.rs`): a kill can lose the last few.
    reads: Vec<String>,
    /// Answers no run of the daemon should give (a status outside the expected ones).
    unexpected: Vec<String>,
}

#[test]
fn kill_nine_at_random_points_loses_nothing_acknowledged() {
    let rounds = env_number("SOUZ_CRASH_ROUNDS").unwrap_or(20);
    let seed = Rng::seed_from_env("SOUZ_CRASH_SEED");
    println!("crash loop: {rounds} rounds, SOUZ_CRASH_SEED={seed}");
    let mut rng = Rng::new(seed);
    let setup = provider();
    // Every turn streams for a while, so kills land before, during and after it.
    let pieces = ["The ", "answer ", "comes ", "in ", "pieces."];
    setup.provider.set_fallback(
        COMPLETIONS,
        openai::text_frames(&pieces)
            .delay(Duration::from_millis(15))
            .data(openai::chunk(json!({}), Some("stop")))
            .data(openai::usage_chunk(10, 5, 0))
            .data("[DONE]")
            .end(),
    );
    let mut daemon = daemon_configured(&setup, "", with_key);
    let chat = new_chat(&daemon);
    let mut seen: BTreeMap<i64, String> = BTreeMap::new();
    let mut messages = Vec::new();
    let mut calls = Vec::new();
    let (mut reads, mut reads_lost) = (0, 0);
    for round in 0..rounds {
        let acknowledged = Arc::new(Mutex::new(Acknowledged::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let after = seen.keys().next_back().copied().unwrap_or(0);
        let load = start_load(&daemon, (&chat, round), after, &acknowledged, &stop);
        std::thread::sleep(Duration::from_millis(20 + rng.below(600)));
        let stopped = daemon.stop("KILL");
        stop.store(true, Ordering::SeqCst);
        for thread in load {
            let _ = thread.join();
        }
        check_integrity(&stopped.home.path().join("souz.db"));
        daemon = Daemon::restart_with(stopped, with_key);
        setup.provider.clear_records();
        let acknowledged = std::mem::take(&mut *acknowledged.lock().unwrap());
        assert!(
            acknowledged.unexpected.is_empty(),
            "round {round}: {:?}",
            acknowledged.unexpected
        );
        seen.extend(acknowledged.events);
        messages.extend(acknowledged.messages);
        calls.extend(acknowledged.calls);
        check_nothing_lost(&daemon, &chat, (&seen, &messages, &calls), round);
        reads += acknowledged.reads.len();
        reads_lost += unrecorded(&daemon.home.path().join("souz.db"), &acknowledged.reads);
        check_nothing_stuck(&daemon.home.path().join("souz.db"), round);
    }
    assert!(
        seen.len() > rounds as usize,
        "the load hardly ran: {} events in {rounds} rounds",
        seen.len()
    );
    println!(
        "crash loop: {rounds} kills, {} acknowledged events, {} messages, {} approved or denied \
         writes: none lost; {reads_lost} of {reads} read-only call records lost (stored in \
         batches after the answer, by design)",
        seen.len(),
        messages.len(),
        calls.len()
    );
}

fn with_key(command: &mut std::process::Command) {
    command.env("OPENAI_API_KEY", "sk-test-e2e-key");
}

/// The load of one round: chat turns, a follower of the chat, tool calls with approvals.
fn start_load(
    daemon: &Daemon,
    (chat, round): (&str, u64),
    after: i64,
    acknowledged: &Arc<Mutex<Acknowledged>>,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<()>> {
    let target = Target {
        address: daemon.address.clone(),
        token: daemon.token.clone(),
    };
    let mut threads = Vec::new();
    {
        let (target, chat, acknowledged) = (target.clone(), chat.to_owned(), acknowledged.clone());
        threads.push(std::thread::spawn(move || {
            follow(&target, &chat, after, &acknowledged);
        }));
    }
    {
        let (target, chat, acknowledged, stop) = (
            target.clone(),
            chat.to_owned(),
            acknowledged.clone(),
            stop.clone(),
        );
        threads.push(std::thread::spawn(move || {
            post_turns(&target, &chat, &acknowledged, &stop);
        }));
    }
    {
        let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            call_tools(&target, round, &acknowledged, &stop);
        }));
    }
    threads
}

#[derive(Clone)]
struct Target {
    address: String,
    token: String,
}

impl Target {
    fn send(&self, method: &str, path: &str, body: &Value) -> Option<(u16, Value)> {
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
        .ok()?;
        // A connection cut mid-answer (the kill) reads as no answer.
        let parsed = serde_json::from_str(&response.body).ok()?;
        Some((response.status, parsed))
    }
}

/// Posts messages one after another (a new one as soon as the chat takes it).
fn post_turns(target: &Target, chat: &str, acknowledged: &Mutex<Acknowledged>, stop: &AtomicBool) {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let body = json!({"content": format!("turn {n}")});
        let Some((status, answer)) =
            target.send("POST", &format!("/v1/chats/{chat}/messages"), &body)
        else {
            return;
        };
        let mut acknowledged = acknowledged.lock().unwrap();
        match status {
            // Taken: a new turn, or input the running turn takes (or queues).
            200 | 202 => {
                if let Some(id) = answer["message"]["id"].as_str() {
                    acknowledged.messages.push(id.to_owned());
                }
            }
            // The previous turn still runs: try again shortly.
            409 => {}
            _ => acknowledged
                .unexpected
                .push(format!("POST message: {status} {answer}")),
        }
        drop(acknowledged);
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs tool calls: a read that runs at once, and a write that waits for approval, which this
/// thread then approves or denies.
fn call_tools(target: &Target, round: u64, acknowledged: &Mutex<Acknowledged>, stop: &AtomicBool) {
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let read = json!({"tool": "ListFiles", "arguments": {"path": "~"}});
        let Some((status, call)) = target.send("POST", "/v1/tool-calls", &read) else {
            return;
        };
        record_call(acknowledged, status, &call, 200, |ack| &mut ack.reads);
        let write = json!({
            "tool": "NewFile",
            "arguments": {"path": format!("crash/{round}-{n}.txt"), "text": "x"},
            "wait_ms": 0,
        });
        let Some((status, call)) = target.send("POST", "/v1/tool-calls", &write) else {
            return;
        };
        record_call(acknowledged, status, &call, 202, |ack| &mut ack.calls);
        let Some(approval) = call["approval_id"].as_str() else {
            continue;
        };
        let decision = if n.is_multiple_of(2) {
            "approve"
        } else {
            "deny"
        };
        let Some((status, answer)) = target.send(
            "POST",
            &format!("/v1/approvals/{approval}/decision"),
            &json!({"decision": decision}),
        ) else {
            return;
        };
        if status != 200 {
            acknowledged
                .lock()
                .unwrap()
                .unexpected
                .push(format!("decision: {status} {answer}"));
        }
    }
}

fn record_call(
    acknowledged: &Mutex<Acknowledged>,
    status: u16,
    call: &Value,
    expected: u16,
    into: impl FnOnce(&mut Acknowledged) -> &mut Vec<String>,
) {
    let mut acknowledged = acknowledged.lock().unwrap();
    if status == expected {
        if let Some(id) = call["id"].as_str() {
            into(&mut acknowledged).push(id.to_owned());
        }
    } else {
        acknowledged
            .unexpected
            .push(format!("tool call: {status} {call}"));
    }
}

/// Follows the chat from `after` and records every stored event it receives.
fn follow(target: &Target, chat: &str, after: i64, acknowledged: &Mutex<Acknowledged>) {
    let Some(mut socket) = socket(target, chat, after) else {
        return;
    };
    while let Ok(frame) = socket.read() {
        let Frame::Text(text) = frame else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if let (Some(seq), Some(kind)) = (event["seq"].as_i64(), event["type"].as_str()) {
            acknowledged
                .lock()
                .unwrap()
                .events
                .insert(seq, kind.to_owned());
        }
    }
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
            .set_read_timeout(Some(Duration::from_secs(30)))
            .ok()?;
    }
    Some(socket)
}

/// What the daemon acknowledged so far: events a follower saw, messages, writes.
type Ledger<'a> = (&'a BTreeMap<i64, String>, &'a [String], &'a [String]);

fn check_nothing_lost(daemon: &Daemon, chat: &str, ledger: Ledger<'_>, round: u64) {
    let (seen, messages, calls) = ledger;
    let stored = daemon.chat_events(chat);
    for (seq, kind) in seen {
        assert_eq!(
            stored.get(seq),
            Some(kind),
            "round {round}: acknowledged event {seq} ({kind}) is not in the replay"
        );
    }
    let database = open(&daemon.home.path().join("souz.db"));
    for id in messages {
        let count: i64 = database
            .query_row("SELECT count(*) FROM messages WHERE id = ?1", [id], |row| {
                row.get(0)
            })
            .unwrap();
        assert_eq!(count, 1, "round {round}: acknowledged message {id} is lost");
    }
    for id in calls {
        let count: i64 = database
            .query_row(
                "SELECT count(*) FROM tool_calls WHERE id = ?1",
                [id],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(
            count, 1,
            "round {round}: acknowledged tool call {id} is lost"
        );
    }
}

/// How many of `ids` have no row in `tool_calls`.
fn unrecorded(path: &Path, ids: &[String]) -> usize {
    let database = open(path);
    ids.iter()
        .filter(|id| {
            let count: i64 = database
                .query_row(
                    "SELECT count(*) FROM tool_calls WHERE id = ?1",
                    [id],
                    |row| row.get(0),
                )
                .unwrap();
            count == 0
        })
        .count()
}

/// After a restart (and before any new load): nothing runs, nothing waits for a decision.
fn check_nothing_stuck(path: &Path, round: u64) {
    let database = open(path);
    let count = |sql: &str| -> i64 { database.query_row(sql, [], |row| row.get(0)).unwrap() };
    let checks = [
        (
            "executions left running",
            "SELECT count(*) FROM executions WHERE status IN ('queued', 'running', 'cancelling')",
        ),
        (
            "agent turns left running",
            "SELECT count(*) FROM agent_turns WHERE status = 'running'",
        ),
        (
            "tool calls left unfinished",
            "SELECT count(*) FROM tool_calls WHERE finished_at IS NULL",
        ),
        (
            "approvals left pending",
            "SELECT count(*) FROM approvals WHERE status = 'pending'",
        ),
    ];
    for (what, sql) in checks {
        assert_eq!(count(sql), 0, "round {round}: {what}");
    }
}

/// Checks a copy of the database as the kill left it (the daemon's next start, not this check,
/// recovers its write-ahead log).
fn check_integrity(path: &Path) {
    let copy = tempfile::tempdir().unwrap();
    for suffix in ["", "-wal"] {
        let from = format!("{}{suffix}", path.display());
        if Path::new(&from).exists() {
            std::fs::copy(&from, copy.path().join(format!("souz.db{suffix}"))).unwrap();
        }
    }
    let database = open(&copy.path().join("souz.db"));
    let verdict: String = database
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(verdict, "ok", "integrity_check after kill -9");
}

fn open(path: &Path) -> rusqlite::Connection {
    let database = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    database.busy_timeout(Duration::from_secs(10)).unwrap();
    database
}
