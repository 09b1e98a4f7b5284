//! Resource bounds of the real daemon: a connection cap (503 `unavailable` over it), a
//! header-read timeout that drops silent and slow clients, and large pending calls that do not
//! stay in memory while they wait.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use souz_e2e::{Daemon, http, status_kib};

/// A daemon with `extra` as its `config.toml`.
fn daemon_configured(extra: &str) -> Daemon {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), extra).unwrap();
    Daemon::start_in(home, |_| {})
}

/// Waits until the server closes `stream` (reads EOF); false if it is still open at `limit`.
fn closed_by_server(stream: &mut TcpStream, limit: Duration) -> bool {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            // A 408 or similar before the close is fine: keep reading to the end.
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// True when the server has already answered or closed `stream` (a connection it refused at
/// the cap gets its 503 at once), false while it still waits for the client.
fn answered_or_closed(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let answered = match stream.peek(&mut byte) {
        Ok(_) => true,
        Err(error) => error.kind() != std::io::ErrorKind::WouldBlock,
    };
    stream.set_nonblocking(false).unwrap();
    answered
}

/// A connection that never finishes its headers: silent, or (`slow`) a slowloris that sent
/// half of them.
fn idle_connection(address: &str, slow: bool) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    if slow {
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .unwrap();
    }
    stream
}

#[test]
fn connections_over_the_cap_get_503_and_slow_headers_are_dropped() {
    let daemon =
        daemon_configured("[server]\nmax_connections = 4\nheader_read_timeout_seconds = 8\n");
    // Four connections that never finish their headers: two silent, two slow (slowloris).
    let mut idle: Vec<TcpStream> = (0..4)
        .map(|index| idle_connection(&daemon.address, index % 2 == 1))
        .collect();
    let opened = Instant::now();

    // The cap is reached: the next connection is told so at once, and closed. Two races on a
    // loaded machine are waited out, not asserted away: `connect` returns once the kernel has
    // the connection, maybe before the daemon accepted it, so a request can slip in until all
    // four are counted; and the daemon may not yet have noticed that the start-up health check
    // closed its connection, so one of the four can itself be refused (it then has its 503
    // already, and is replaced by a fresh idle connection).
    let mut refused = http(&daemon.address, "GET", "/health", &[], b"").unwrap();
    // The header timeout is long enough (8 s) that a loaded machine still gets there well
    // before the first of the four is dropped and gives its place back.
    while refused.status != 503 && opened.elapsed() < Duration::from_millis(6500) {
        for (index, stream) in idle.iter_mut().enumerate() {
            if answered_or_closed(stream) {
                *stream = idle_connection(&daemon.address, index % 2 == 1);
            }
        }
        std::thread::sleep(Duration::from_millis(25));
        refused = http(&daemon.address, "GET", "/health", &[], b"").unwrap();
    }
    assert!(
        opened.elapsed() < Duration::from_secs(8),
        "the machine was too slow to check the cap before the header timeout"
    );
    assert_eq!(refused.status, 503, "{}", refused.head);
    let body = refused.json();
    assert_eq!(body["error"]["code"], "unavailable");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_connections"), "{message}");

    // Clients that do not send their headers in time are disconnected...
    for stream in &mut idle {
        assert!(
            closed_by_server(stream, Duration::from_secs(20)),
            "a connection without complete headers was kept open"
        );
    }
    // ...which gives their places back.
    let served = http(&daemon.address, "GET", "/health", &[], b"").unwrap();
    assert_eq!(served.status, 200, "{}", served.body);
}

/// The daemon's resident memory, in bytes.
fn rss(pid: u32) -> u64 {
    status_kib(pid, "VmRSS").expect("the daemon's VmRSS") * 1024
}

const MIB: u64 = 1024 * 1024;

#[cfg(target_os = "linux")]
#[test]
fn twenty_pending_large_writes_stay_out_of_memory() {
    let daemon = daemon_configured("[server]\nbody_limit = \"10MiB\"\n");
    let pid = daemon.pid();
    // Warm up the paths a call takes, so the baseline includes their code and caches.
    let warm = daemon.post(
        "/v1/tool-calls",
        &json!({"tool": "NewFile", "arguments": {"path": "warm.txt", "text": "x"}, "wait_ms": 200}),
    );
    assert_eq!(warm.status, 202, "{}", warm.body);
    let warm_id = warm.json()["id"].as_str().unwrap().to_owned();
    let warm = daemon.wait_until(&format!("/v1/tool-calls/{warm_id}"), |call| {
        call["status"] == "waiting_approval"
    });
    let warm_approval = warm["approval_id"].as_str().unwrap().to_owned();
    let deny = json!({"decision": "deny"});
    let decided = daemon.post(&format!("/v1/approvals/{warm_approval}/decision"), &deny);
    assert_eq!(decided.status, 200, "{}", decided.body);
    let before = rss(pid);

    let text_of = |index: usize| {
        let line = format!("line {index:02} of a large file that waits for approval\n");
        line.repeat((9 * MIB as usize) / line.len())
    };
    let mut approvals = Vec::new();
    let mut calls = Vec::new();
    for index in 0..20 {
        let body = json!({
            "tool": "NewFile",
            "arguments": {"path": format!("big-{index:02}.txt"), "text": text_of(index)},
            "wait_ms": 200,
        });
        let response = daemon.post("/v1/tool-calls", &body);
        assert_eq!(response.status, 202, "{}", response.body);
        let id = response.json()["id"].as_str().unwrap().to_owned();
        let call = daemon.wait_until(&format!("/v1/tool-calls/{id}"), |call| {
            call["status"] != "planning"
        });
        assert_eq!(call["status"], "waiting_approval", "{call}");
        approvals.push(call["approval_id"].as_str().unwrap().to_owned());
        calls.push(id);
    }
    let pending = rss(pid);
    let grown = pending.saturating_sub(before);
    eprintln!(
        "RSS: {} MiB before, {} MiB with 20 pending 9 MiB writes",
        before / MIB,
        pending / MIB
    );
    // One copy of the twenty texts would be 180 MiB; measured here: under 10 MiB.
    assert!(
        grown < 100 * MIB,
        "20 pending 9 MiB writes raised RSS by {} MiB",
        grown / MIB
    );

    // The person can still read every whole call.
    let shown = daemon.get(&format!("/v1/approvals/{}", approvals[3]));
    assert_eq!(
        shown.json()["arguments"]["text"].as_str().map(str::len),
        Some(text_of(3).len())
    );

    // Approve one, deny the rest.
    let approve = json!({"decision": "approve"});
    let decided = daemon.post(
        &format!("/v1/approvals/{}/decision", approvals[0]),
        &approve,
    );
    assert_eq!(decided.status, 200, "{}", decided.body);
    for approval in &approvals[1..] {
        let decided = daemon.post(&format!("/v1/approvals/{approval}/decision"), &deny);
        assert_eq!(decided.status, 200, "{}", decided.body);
    }
    for call in &calls {
        daemon.wait_until(&format!("/v1/tool-calls/{call}"), |call| {
            matches!(call["status"].as_str(), Some("succeeded" | "denied"))
        });
    }
    let first = daemon.get(&format!("/v1/tool-calls/{}", calls[0]));
    assert_eq!(first.json()["status"], "succeeded", "{}", first.body);
    let written = std::fs::read_to_string(daemon.user_home().join("big-00.txt")).unwrap();
    assert!(
        written == text_of(0),
        "the approved write has the whole text"
    );
    for index in 1..20 {
        assert!(
            !daemon
                .user_home()
                .join(format!("big-{index:02}.txt"))
                .exists()
        );
    }
    let after = rss(pid);
    eprintln!("RSS: {} MiB after the decisions", after / MIB);
    assert!(
        after.saturating_sub(before) < 100 * MIB,
        "RSS stayed {} MiB above where it started after the decisions",
        after.saturating_sub(before) / MIB
    );
}
