//! A client that goes away withdraws what it asked for, over real HTTP: the end of a session
//! (`DELETE /mcp`) cancels its calls, followed or already answered "waiting for approval", and
//! a `tools/call` whose response stream is dropped withdraws its approval. Nothing runs after,
//! even when the person approves a moment later.

use std::io::{BufRead, BufReader, Read};
use std::net::{Shutdown, TcpStream};

use super::*;

fn new_file_call(id: u64, path: &str) -> Vec<u8> {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "NewFile", "arguments": {"path": path, "text": "should never be written"}},
    })
    .to_string()
    .into_bytes()
}

/// POSTs `body` in `session` on a connection of its own and returns it once the answer's head
/// has arrived: the SSE body (the call's answer) is still to come.
fn post_streaming(daemon: &Daemon, session: &str, body: &[u8]) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(&daemon.address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        daemon.address,
        daemon.token,
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    assert!(status.contains(" 200 "), "{status}");
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            return reader;
        }
    }
}

/// The pending approval of the call that writes `path`, once there is one.
fn pending_for(daemon: &Daemon, path: &str) -> Value {
    let pending = daemon.wait_until("/v1/approvals?status=pending", |body| {
        body["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|item| item["arguments"]["path"] == path))
    });
    pending["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|item| item["arguments"]["path"] == path)
                .cloned()
        })
        .unwrap()
}

/// The person says yes; the answer may be that it is too late (409).
fn approve(daemon: &Daemon, approval_id: &str) {
    let decided = daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "approve", "scope": "once", "via": "e2e"}),
    );
    assert!(
        decided.status == 200 || decided.status == 409,
        "{}",
        decided.body
    );
}

/// Waits until the call behind `approval` is over; asserts it was cancelled.
fn assert_cancelled(daemon: &Daemon, approval: &Value) {
    let call_id = approval["call_id"].as_str().unwrap();
    let call = daemon.wait_until(&format!("/v1/tool-calls/{call_id}"), |call| {
        call["finished_at"].is_string()
    });
    assert_eq!(call["status"], "cancelled", "{call}");
}

#[test]
fn ending_a_session_withdraws_its_calls_followed_or_waiting() {
    let daemon = mcp_daemon();
    let session = open_session(&daemon);

    // Answered "waiting for approval" after the 3 s budget: the call stays in the queue.
    let waiting = mcp_post(
        &daemon,
        &[("Mcp-Session-Id", &session)],
        &new_file_call(2, "~/waiting.txt"),
    );
    assert!(
        waiting.body.contains("Waiting for approval"),
        "{}",
        waiting.body
    );
    let detached = pending_for(&daemon, "~/waiting.txt");

    // Still followed: its POST is open when the session ends.
    let mut followed_stream =
        post_streaming(&daemon, &session, &new_file_call(3, "~/followed.txt"));
    let followed = pending_for(&daemon, "~/followed.txt");

    let deleted = http(
        &daemon.address,
        "DELETE",
        "/mcp",
        &[
            ("Authorization", &format!("Bearer {}", daemon.token)),
            ("Mcp-Session-Id", &session),
        ],
        b"",
    )
    .unwrap();
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    // The person approves both right after: too late, the client is gone.
    for approval in [&detached, &followed] {
        approve(&daemon, approval["id"].as_str().unwrap());
    }
    for approval in [&detached, &followed] {
        assert_cancelled(&daemon, approval);
    }
    for file in ["waiting.txt", "followed.txt"] {
        assert!(
            !daemon.user_home().join(file).exists(),
            "{file} was written"
        );
    }
    // The followed call's stream ends with the session.
    let mut rest = String::new();
    let _ = followed_stream.read_to_string(&mut rest);

    // The session is gone for good; a new one works.
    let after = mcp_post(
        &daemon,
        &[("Mcp-Session-Id", &session)],
        br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#,
    );
    assert_eq!(after.status, 404, "{}", after.body);
    let again = open_session(&daemon);
    assert_ne!(again, session);
}

#[test]
fn a_dropped_call_stream_withdraws_its_approval_and_keeps_the_session() {
    let daemon = Daemon::start();
    let session = open_session(&daemon);
    let stream = post_streaming(&daemon, &session, &new_file_call(2, "~/dropped.txt"));
    let approval = pending_for(&daemon, "~/dropped.txt");

    // The client goes away from this call (not from the session).
    stream.get_ref().shutdown(Shutdown::Both).unwrap();
    drop(stream);
    let id = approval["id"].as_str().unwrap();
    let withdrawn = daemon.wait_until(&format!("/v1/approvals/{id}"), |approval| {
        approval["status"] != "pending"
    });
    assert_eq!(withdrawn["status"], "expired", "{withdrawn}");
    assert_eq!(withdrawn["expiry_reason"], "withdrawn", "{withdrawn}");
    approve(&daemon, id);
    assert_cancelled(&daemon, &approval);
    assert!(!daemon.user_home().join("dropped.txt").exists());

    // The session itself goes on.
    let listed = mcp_post(
        &daemon,
        &[("Mcp-Session-Id", &session)],
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
    );
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains("AwaitApproval"), "{}", listed.body);
}
