//! Review mode end to end (issue 45): the real daemon, its real agent against the fake OpenAI
//! server, and a raw MCP client over `/mcp` with its own token. Writes are staged, not
//! applied; the person applies or discards each one in one review; applied changes are in the
//! history; a file changed while staged is a conflict; two edits of one file stage on each
//! other, and a discarded first is a conflict of its own kind.

use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use souz_e2e::{Daemon, http};
use souz_testkit::openai;
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message as Frame, WebSocket};

use crate::chats::{COMPLETIONS, daemon, new_chat, post, provider, wait_event};

/// The `type`s of the runtime events stored so far (replayed over `WS /v1/events`).
fn runtime_events(daemon: &Daemon) -> Vec<Value> {
    let mut request = format!("ws://{}/v1/events?after_seq=0", daemon.address)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", daemon.token).parse().unwrap(),
    );
    let (mut socket, _): (WebSocket<MaybeTlsStream<TcpStream>>, _) =
        tungstenite::connect(request).unwrap();
    if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
    }
    let mut events = Vec::new();
    loop {
        match socket.read().unwrap() {
            Frame::Text(text) => {
                let frame: Value = serde_json::from_str(&text).unwrap();
                if frame["type"] == "live" {
                    return events;
                }
                events.push(frame["event"].clone());
            }
            Frame::Close(_) => return events,
            _ => {}
        }
    }
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

fn skill_call(id: &str, tool: &str, arguments: Value) -> (String, String, String) {
    (
        id.to_owned(),
        "RunSkillCommand".to_owned(),
        json!({"skillId": tool, "arguments": arguments}).to_string(),
    )
}

fn review_mode(daemon: &Daemon, body: Value) {
    let set = daemon.put("/v1/review-mode", &body);
    assert_eq!(set.status, 200, "{}", set.body);
}

fn decide(daemon: &Daemon, review: i64, body: Value) -> Value {
    let decided = daemon.post(&format!("/v1/reviews/{review}/decisions"), &body);
    assert_eq!(decided.status, 200, "{}", decided.body);
    decided.json()
}

#[test]
fn a_chat_turn_in_review_mode_stages_three_writes_and_the_person_applies_two() {
    let setup = provider();
    let daemon = daemon(&setup);
    let home = daemon.user_home();
    std::fs::write(home.join("notes.txt"), "milk\nbread\n").unwrap();
    std::fs::write(home.join("old.txt"), "keep me\n").unwrap();
    let chat = new_chat(&daemon);
    review_mode(&daemon, json!({"chatId": chat, "on": true}));
    let modes = daemon.get("/v1/review-mode").json();
    assert_eq!(modes["chats"], json!([chat]));

    let calls = [
        skill_call(
            "w1",
            "NewFile",
            json!({"path": "new.txt", "text": "fresh\n"}),
        ),
        skill_call(
            "w2",
            "EditFile",
            json!({"path": "notes.txt", "oldString": "bread", "newString": "butter"}),
        ),
        skill_call("w3", "DeleteFile", json!({"path": "old.txt"})),
    ];
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, name, arguments)| (id.as_str(), name.as_str(), arguments.as_str()))
        .collect();
    setup
        .provider
        .push(COMPLETIONS, openai::tool_calls(&calls, 3));
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Staged three changes."]));
    post(&daemon, &chat, json!({"content": "Tidy my files"}));
    wait_event(&daemon, &chat, "execution.finished");

    // Nothing was written and nobody was asked.
    assert!(!home.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(home.join("notes.txt")).unwrap(),
        "milk\nbread\n"
    );
    assert!(home.join("old.txt").exists());
    let pending = daemon.get("/v1/approvals?status=pending").json();
    assert_eq!(pending["items"], json!([]), "a staged write asks nobody");
    // The model was told the truth about each write.
    let request = setup
        .provider
        .requests_to(COMPLETIONS)
        .last()
        .unwrap()
        .json();
    let results: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    for result in &results {
        assert!(
            result.contains("Staged for review, not written"),
            "{result}"
        );
    }

    // One review, opened at the end of the turn, with the three changes and their diffs.
    let reviews = daemon.get("/v1/reviews").json();
    let items = reviews["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{reviews}");
    assert_eq!(items[0]["chatId"], chat);
    assert_eq!(items[0]["client"], "souz");
    assert_eq!(items[0]["changes"], 3);
    let review_id = items[0]["id"].as_i64().unwrap();
    let review = daemon.get(&format!("/v1/reviews/{review_id}")).json();
    let changes = review["items"].as_array().unwrap();
    let tools: Vec<&str> = changes
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["NewFile", "EditFile", "DeleteFile"]);
    assert!(
        changes[1]["diff"].as_str().unwrap().contains("+butter"),
        "{review}"
    );
    assert!(changes.iter().all(|change| change["conflict"] == false));
    let events = runtime_events(&daemon);
    let opened = of_type(&events, "review.opened");
    assert_eq!(opened.len(), 1, "{events:?}");
    assert_eq!(opened[0]["review_id"], review_id);
    assert_eq!(opened[0]["execution_id"], items[0]["executionId"]);

    // Discard the delete, apply the other two.
    let ids: Vec<i64> = changes.iter().map(|c| c["id"].as_i64().unwrap()).collect();
    let outcome = decide(
        &daemon,
        review_id,
        json!({"decisions": [{"changeId": ids[2], "action": "discard"}], "all": "apply"}),
    );
    assert_eq!(outcome["conflicts"], json!([]));
    let decided: Vec<&str> = outcome["review"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decided, ["applied", "applied", "discarded"], "{outcome}");
    assert_eq!(outcome["review"]["status"], "closed");
    assert_eq!(
        std::fs::read_to_string(home.join("new.txt")).unwrap(),
        "fresh\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("notes.txt")).unwrap(),
        "milk\nbutter\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("old.txt")).unwrap(),
        "keep me\n"
    );
    assert_eq!(daemon.get("/v1/reviews").json()["items"], json!([]));

    // Applied changes are in the history (so they can be undone), named after the chat.
    let history = daemon.get("/v1/history").json();
    let recorded: Vec<&str> = history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| change["tool"].as_str().unwrap())
        .collect();
    assert_eq!(recorded, ["EditFile", "NewFile"], "{history}");
    let events = runtime_events(&daemon);
    assert_eq!(of_type(&events, "review.decided").len(), 3);
    assert_eq!(of_type(&events, "review.closed").len(), 1);

    // Review mode off: the next write asks as usual.
    review_mode(&daemon, json!({"chatId": chat, "on": false}));
    assert_eq!(daemon.get("/v1/review-mode").json()["chats"], json!([]));
}

/// An MCP client with its own token (named `name`).
struct McpClient {
    address: String,
    token: String,
    session: String,
}

impl McpClient {
    fn connect(daemon: &Daemon, name: &str) -> Self {
        let created = daemon.post("/v1/clients", &json!({"name": name}));
        assert_eq!(created.status, 201, "{}", created.body);
        let token = created.json()["token"].as_str().unwrap().to_owned();
        let mut client = Self {
            address: daemon.address.clone(),
            token,
            session: String::new(),
        };
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "claude-code", "version": "1"}}});
        let response = client.post(&initialize);
        assert_eq!(response.status, 200, "{}", response.body);
        client.session = response
            .head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_owned())
            })
            .expect("a session id");
        let initialized =
            client.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(initialized.status < 300, "{}", initialized.body);
        client
    }

    fn post(&self, body: &Value) -> souz_e2e::HttpResponse {
        let auth = format!("Bearer {}", self.token);
        let mut headers = vec![
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if !self.session.is_empty() {
            headers.push(("Mcp-Session-Id", self.session.as_str()));
        }
        http(
            &self.address,
            "POST",
            "/mcp",
            &headers,
            body.to_string().as_bytes(),
        )
        .unwrap()
    }

    /// Calls `tool`; returns the text of its result.
    fn call(&self, id: u64, tool: &str, arguments: Value) -> String {
        let response = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
        assert_eq!(response.status, 200, "{}", response.body);
        let message = response
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|message| message["id"] == id)
            .unwrap_or_else(|| panic!("an answer to {id}: {}", response.body));
        message["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{message}"))
            .to_owned()
    }
}

#[test]
fn an_mcp_clients_writes_are_staged_with_the_client_named_and_applied_from_its_review() {
    let daemon = Daemon::start();
    let home = daemon.user_home();
    std::fs::write(home.join("plan.md"), "# Plan\n- one\n").unwrap();
    review_mode(&daemon, json!({"client": "claude-code", "on": true}));
    let client = McpClient::connect(&daemon, "claude-code");

    let first = client.call(
        2,
        "NewFile",
        json!({"path": "~/from-claude.txt", "text": "hi\n"}),
    );
    assert!(first.contains("Staged for review, not written"), "{first}");
    let second = client.call(
        3,
        "EditFile",
        json!({"path": "~/plan.md", "oldString": "- one", "newString": "- one\n- two"}),
    );
    assert!(second.contains("Staged for review"), "{second}");
    let third = client.call(
        4,
        "NewFile",
        json!({"path": "~/unwanted.txt", "text": "no\n"}),
    );
    assert!(third.contains("Staged for review"), "{third}");
    assert!(!home.join("from-claude.txt").exists());
    assert_eq!(
        std::fs::read_to_string(home.join("plan.md")).unwrap(),
        "# Plan\n- one\n"
    );

    // The client's staged writes are one open review, named after its token.
    let reviews = daemon.get("/v1/reviews").json();
    let items = reviews["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{reviews}");
    assert_eq!(items[0]["client"], "claude-code");
    assert_eq!(items[0]["chatId"], Value::Null);
    assert_eq!(items[0]["changes"], 3);
    let review_id = items[0]["id"].as_i64().unwrap();
    let review = daemon.get(&format!("/v1/reviews/{review_id}")).json();
    let ids: Vec<i64> = review["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        review["items"][0]["requester"]["token_name"], "claude-code",
        "{review}"
    );

    // Discard one, then apply the rest.
    let outcome = decide(
        &daemon,
        review_id,
        json!({"decisions": [{"changeId": ids[2], "action": "discard"}]}),
    );
    assert_eq!(outcome["review"]["status"], "open");
    let outcome = decide(&daemon, review_id, json!({"all": "apply"}));
    assert_eq!(outcome["review"]["status"], "closed", "{outcome}");
    assert_eq!(
        std::fs::read_to_string(home.join("from-claude.txt")).unwrap(),
        "hi\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("plan.md")).unwrap(),
        "# Plan\n- one\n- two\n"
    );
    assert!(!home.join("unwanted.txt").exists());
    let history = daemon.get("/v1/history?client=claude-code").json();
    assert_eq!(history["changes"].as_array().unwrap().len(), 2, "{history}");

    // A decided review is closed: the next write opens a new one.
    client.call(
        5,
        "NewFile",
        json!({"path": "~/later.txt", "text": "later\n"}),
    );
    let reviews = daemon.get("/v1/reviews").json();
    assert_eq!(reviews["items"].as_array().unwrap().len(), 1);
    assert_ne!(reviews["items"][0]["id"], review_id);
    let events = runtime_events(&daemon);
    assert!(of_type(&events, "review.opened").len() >= 2);
}

#[test]
fn a_file_changed_while_staged_is_a_conflict_that_only_force_applies() {
    let daemon = Daemon::start();
    let home = daemon.user_home();
    std::fs::write(home.join("list.txt"), "alpha\nbeta\n").unwrap();
    review_mode(&daemon, json!({"client": "claude-code", "on": true}));
    let client = McpClient::connect(&daemon, "claude-code");
    client.call(
        2,
        "EditFile",
        json!({"path": "~/list.txt", "oldString": "alpha", "newString": "ALPHA"}),
    );
    let review_id = daemon.get("/v1/reviews").json()["items"][0]["id"]
        .as_i64()
        .unwrap();

    // Someone else changes the file while the edit waits.
    std::fs::write(home.join("list.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let review = daemon.get(&format!("/v1/reviews/{review_id}")).json();
    assert_eq!(review["items"][0]["conflict"], true, "{review}");
    assert_eq!(review["items"][0]["paths"][0]["changed"], true);

    // Applying refuses it and leaves it undecided; nothing is written.
    let outcome = decide(&daemon, review_id, json!({"all": "apply"}));
    let change_id = review["items"][0]["id"].clone();
    assert_eq!(outcome["conflicts"], json!([change_id]));
    assert_eq!(outcome["review"]["items"][0]["decision"], Value::Null);
    assert_eq!(outcome["review"]["status"], "open");
    assert_eq!(
        std::fs::read_to_string(home.join("list.txt")).unwrap(),
        "alpha\nbeta\ngamma\n"
    );

    // Forced, it is planned again against the file as it is now.
    let outcome = decide(&daemon, review_id, json!({"all": "apply", "force": true}));
    assert_eq!(
        outcome["review"]["items"][0]["decision"], "applied",
        "{outcome}"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("list.txt")).unwrap(),
        "ALPHA\nbeta\ngamma\n"
    );
}

#[test]
fn two_edits_of_one_file_stage_on_each_other_and_a_discarded_first_is_its_own_conflict() {
    let daemon = Daemon::start();
    let home = daemon.user_home();
    std::fs::write(home.join("todo.md"), "- milk\n- bread\n").unwrap();
    review_mode(&daemon, json!({"client": "claude-code", "on": true}));
    let client = McpClient::connect(&daemon, "claude-code");
    for (id, old, new) in [(2, "milk", "oat milk"), (3, "oat milk", "oat milk (2 l)")] {
        let text = client.call(
            id,
            "EditFile",
            json!({"path": "~/todo.md", "oldString": old, "newString": new}),
        );
        assert!(text.starts_with("Staged for review"), "{text}");
    }
    let review_id = daemon.get("/v1/reviews").json()["items"][0]["id"]
        .as_i64()
        .unwrap();
    let review = daemon.get(&format!("/v1/reviews/{review_id}")).json();
    assert_eq!(review["items"].as_array().unwrap().len(), 2, "{review}");
    assert_eq!(review["items"][1]["conflict"], false, "{review}");
    assert!(
        review["items"][1]["diff"]
            .as_str()
            .unwrap()
            .contains("-- oat milk\n+- oat milk (2 l)"),
        "{review}"
    );

    // Discard the first: the second, staged on it, is refused as such, not as an outside change.
    let (first, second) = (
        review["items"][0]["id"].clone(),
        review["items"][1]["id"].clone(),
    );
    let outcome = decide(
        &daemon,
        review_id,
        json!({"decisions": [
            {"changeId": first, "action": "discard"},
            {"changeId": second, "action": "apply"}]}),
    );
    assert_eq!(
        outcome["conflictReasons"],
        json!([{"changeId": second, "reason": "earlier_change"}]),
        "{outcome}"
    );
    assert_eq!(
        outcome["review"]["items"][1]["conflictReason"],
        "earlier_change"
    );
    assert_eq!(
        std::fs::read_to_string(home.join("todo.md")).unwrap(),
        "- milk\n- bread\n"
    );

    // Once it is decided too, the file takes staged writes again, and they apply in order.
    let outcome = decide(&daemon, review_id, json!({"all": "discard"}));
    assert_eq!(outcome["review"]["status"], "closed", "{outcome}");
    for (id, old, new) in [(4, "milk", "oat milk"), (5, "oat milk", "oat milk (2 l)")] {
        let text = client.call(
            id,
            "EditFile",
            json!({"path": "~/todo.md", "oldString": old, "newString": new}),
        );
        assert!(text.starts_with("Staged for review"), "{text}");
    }
    let next = daemon.get("/v1/reviews").json()["items"][0]["id"]
        .as_i64()
        .unwrap();
    assert_ne!(next, review_id);
    let outcome = decide(&daemon, next, json!({"all": "apply"}));
    assert_eq!(outcome["conflicts"], json!([]), "{outcome}");
    assert_eq!(
        std::fs::read_to_string(home.join("todo.md")).unwrap(),
        "- oat milk (2 l)\n- bread\n"
    );
}
