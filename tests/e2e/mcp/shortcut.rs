//! The door's shortcut for a plain `tools/call` in a session, over real HTTP: its answer reads
//! exactly as rmcp's answer to the same call (head and bytes), and every request rmcp would
//! refuse or treat differently is still rmcp's to answer.

use super::*;

fn header<'a>(response: &'a souz_e2e::HttpResponse, name: &str) -> Option<&'a str> {
    response.head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

fn calculator(id: u64) -> Vec<u8> {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "Calculator", "arguments": {"expression": "2 + 3 * 4"}},
    })
    .to_string()
    .into_bytes()
}

#[test]
fn the_shortcut_answers_as_rmcp_does_and_leaves_it_the_rest() {
    let daemon = Daemon::start();
    let session = open_session(&daemon);
    let in_session = [("Mcp-Session-Id", session.as_str())];

    // The same call through the shortcut (plain headers) and through rmcp (an `Accept` with a
    // weight, which only rmcp reads): the same head and the same bytes.
    let shortcut = mcp_post(&daemon, &in_session, &calculator(7));
    let through_rmcp = mcp_post(
        &daemon,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("Accept", "application/json;q=1, text/event-stream"),
        ],
        &calculator(7),
    );
    assert_eq!(shortcut.status, 200, "{}", shortcut.body);
    assert_eq!(through_rmcp.status, 200, "{}", through_rmcp.body);
    for name in [
        "content-type",
        "cache-control",
        "x-accel-buffering",
        "transfer-encoding",
    ] {
        assert_eq!(
            header(&shortcut, name),
            header(&through_rmcp, name),
            "{name}:\n{}\n{}",
            shortcut.head,
            through_rmcp.head
        );
    }
    assert_eq!(header(&shortcut, "content-type"), Some("text/event-stream"));
    assert_eq!(shortcut.body, through_rmcp.body);
    let data = shortcut
        .body
        .strip_prefix("data: ")
        .and_then(|rest| rest.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("one SSE event: {:?}", shortcut.body));
    let message: Value = serde_json::from_str(data).unwrap();
    assert_eq!(message["id"], 7);
    assert_eq!(message["result"]["content"][0]["text"], "14");

    // What rmcp refuses, it still refuses.
    let cases: [(&[(&str, &str)], u16); 6] = [
        (&[("Mcp-Session-Id", "no-such-session")], 404),
        (
            &[
                ("Mcp-Session-Id", session.as_str()),
                ("Accept", "application/json"),
            ],
            406,
        ),
        (
            &[
                ("Mcp-Session-Id", session.as_str()),
                ("Content-Type", "text/plain"),
            ],
            415,
        ),
        (
            &[
                ("Mcp-Session-Id", session.as_str()),
                ("MCP-Protocol-Version", "1999-01-01"),
            ],
            400,
        ),
        // The 2026-07-28 revision needs the request's `_meta`.
        (
            &[
                ("Mcp-Session-Id", session.as_str()),
                ("MCP-Protocol-Version", "2026-07-28"),
            ],
            400,
        ),
        // A version with sessions, named: answered.
        (
            &[
                ("Mcp-Session-Id", session.as_str()),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
            200,
        ),
    ];
    for (headers, status) in cases {
        let response = mcp_post(&daemon, headers, &calculator(8));
        assert_eq!(response.status, status, "{headers:?}: {}", response.body);
    }

    // A session that ended is gone for the shortcut too.
    let ended = mcp_delete(&daemon, &session);
    assert!(ended < 300, "{ended}");
    let response = mcp_post(&daemon, &in_session, &calculator(9));
    assert_eq!(response.status, 404, "{}", response.body);
}

fn mcp_delete(daemon: &Daemon, session: &str) -> u16 {
    let auth = format!("Bearer {}", daemon.token);
    http(
        &daemon.address,
        "DELETE",
        "/mcp",
        &[
            ("Authorization", auth.as_str()),
            ("Mcp-Session-Id", session),
        ],
        b"",
    )
    .unwrap()
    .status
}
