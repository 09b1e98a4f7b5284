//! Chats end to end: the real daemon, the real agent (skills agent) against the fake OpenAI
//! server, HTTP and the chat WebSocket.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use souz_e2e::Daemon;
use souz_testkit::{FakeServer, openai};
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message as Frame, WebSocket};

pub(crate) const COMPLETIONS: &str = "/v1/chat/completions";

pub(crate) struct Setup {
    // Keeps the fake provider serving for the whole test.
    _runtime: tokio::runtime::Runtime,
    pub(crate) provider: FakeServer,
}

pub(crate) fn provider() -> Setup {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let provider = runtime.block_on(FakeServer::start());
    Setup {
        _runtime: runtime,
        provider,
    }
}

pub(crate) fn daemon(setup: &Setup) -> Daemon {
    daemon_with(setup, "")
}

/// A daemon over the fake provider, with its key in the environment and `extra` appended to
/// its `config.toml`.
fn daemon_with(setup: &Setup, extra: &str) -> Daemon {
    daemon_configured(setup, extra, |command| {
        command.env("OPENAI_API_KEY", "sk-test-e2e-key");
    })
}

/// A daemon over the fake provider with `extra` appended to its `config.toml`; `prepare` sets
/// its environment.
pub(crate) fn daemon_configured(
    setup: &Setup,
    extra: &str,
    prepare: impl FnOnce(&mut std::process::Command),
) -> Daemon {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\nopenai_base_url = \"{}/v1\"\n\n[agent]\ndefault_agent = \"skills\"\n{extra}",
            setup.provider.url()
        ),
    )
    .unwrap();
    Daemon::start_in(home, prepare)
}

pub(crate) fn new_chat(daemon: &Daemon) -> String {
    let response = daemon.post("/v1/chats", &json!({"title": "e2e"}));
    assert_eq!(response.status, 201, "{}", response.body);
    response.json()["chat"]["id"].as_str().unwrap().to_owned()
}

pub(crate) fn post(daemon: &Daemon, chat: &str, body: Value) -> souz_e2e::HttpResponse {
    daemon.post(&format!("/v1/chats/{chat}/messages"), &body)
}

pub(crate) fn events(daemon: &Daemon, chat: &str) -> Vec<Value> {
    daemon
        .get(&format!("/v1/chats/{chat}/events?limit=1000"))
        .json()["items"]
        .as_array()
        .unwrap()
        .clone()
}

/// Waits up to 30 s for the first stored event for which `wanted` holds (`what` it is).
fn wait_matching(
    daemon: &Daemon,
    chat: &str,
    what: &str,
    wanted: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(event) = events(daemon, chat).into_iter().find(&wanted) {
            return event;
        }
        assert!(
            Instant::now() < deadline,
            "no {what} in {:?}",
            events(daemon, chat)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the first stored event of type `kind`.
pub(crate) fn wait_event(daemon: &Daemon, chat: &str, kind: &str) -> Value {
    wait_matching(daemon, chat, kind, |event| event["type"] == kind)
}

/// Waits up to 10 s for `done` to hold.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "waited 10 s for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The `AskUser` call `q1` with `arguments`, as the model streams it.
pub(crate) fn ask_user(arguments: Value) -> souz_testkit::Reply {
    openai::tool_calls(&[("q1", "AskUser", &arguments.to_string())], 3)
}

/// The latest model request, and the content of the last user message in it.
pub(crate) fn last_request(setup: &Setup) -> (Value, String) {
    let request = setup
        .provider
        .requests_to(COMPLETIONS)
        .last()
        .expect("a model request")
        .json();
    let last_user = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .expect("a user message")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    (request, last_user)
}

fn kinds(daemon: &Daemon, chat: &str) -> Vec<String> {
    events(daemon, chat)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

fn socket(daemon: &Daemon, chat: &str, after: i64) -> WebSocket<MaybeTlsStream<TcpStream>> {
    let mut request = format!(
        "ws://{}/v1/chats/{chat}/ws?afterSeq={after}",
        daemon.address
    )
    .into_client_request()
    .unwrap();
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", daemon.token).parse().unwrap(),
    );
    let (socket, _) = tungstenite::connect(request).unwrap();
    if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
    }
    socket
}

fn next_frame(socket: &mut WebSocket<MaybeTlsStream<TcpStream>>) -> Value {
    loop {
        match socket.read().unwrap() {
            Frame::Text(text) => return serde_json::from_str(&text).unwrap(),
            Frame::Close(frame) => return json!({"closed": frame.map(|f| u16::from(f.code))}),
            _ => {}
        }
    }
}

#[test]
fn a_streamed_turn_arrives_live_and_is_stored() {
    let setup = provider();
    setup.provider.push(
        COMPLETIONS,
        openai::text_frames(&["Hello", ", ", "world"])
            .delay(Duration::from_millis(30))
            .data(openai::chunk(json!({"content": "!"}), None))
            .data(openai::chunk(json!({}), Some("stop")))
            .data(openai::usage_chunk(12, 4, 0))
            .data("[DONE]")
            .end(),
    );
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut ws = socket(&daemon, &chat, 0);
    assert_eq!(next_frame(&mut ws), json!({"kind": "live", "lastSeq": 0}));

    let posted = post(&daemon, &chat, json!({"content": "Say hello"}));
    assert_eq!(posted.status, 200, "{}", posted.body);
    let posted = posted.json();
    assert_eq!(posted["execution"]["status"], "running");
    assert_eq!(posted["message"]["content"], "Say hello");

    let mut seen = Vec::new();
    let mut text = String::new();
    let mut delta_ids = std::collections::BTreeSet::new();
    loop {
        let frame = next_frame(&mut ws);
        let kind = frame["type"].as_str().unwrap_or_default().to_owned();
        if kind == "message.delta" {
            assert!(frame["seq"].is_null(), "deltas are live-only");
            text.push_str(frame["payload"]["delta"].as_str().unwrap());
            assert_eq!(frame["payload"]["executionId"], posted["execution"]["id"]);
            delta_ids.insert(frame["payload"]["messageId"].as_str().unwrap().to_owned());
        }
        seen.push(kind.clone());
        if kind == "execution.finished" {
            break;
        }
    }
    assert_eq!(text, "Hello, world!");
    assert_eq!(seen.first().map(String::as_str), Some("message.created"));
    assert!(seen.contains(&"message.delta".to_owned()));
    let stored = kinds(&daemon, &chat);
    assert_eq!(
        stored,
        [
            "message.created",
            "execution.started",
            "message.created",
            "message.completed",
            "execution.finished"
        ]
    );
    let finished = events(&daemon, &chat).pop().unwrap();
    assert_eq!(finished["payload"]["promptTokens"], 12);
    let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
    assert_eq!(messages["items"][1]["content"], "Hello, world!");
    // Every delta named the answer by the id it was then stored under (original §1.8).
    let answer_id = messages["items"][1]["id"].as_str().unwrap().to_owned();
    assert_eq!(delta_ids.iter().collect::<Vec<_>>(), [&answer_id]);
    assert_eq!(
        finished["payload"]["assistantMessageId"],
        answer_id.as_str()
    );
    // What the model received: the person's message, with the skills agent's tools.
    let request = setup.provider.requests_to(COMPLETIONS).remove(0).json();
    assert_eq!(request["stream"], true);
    let tools: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"RunSkillCommand") && tools.contains(&"AskUser"),
        "{tools:?}"
    );
}

#[test]
fn a_tool_call_waits_for_approval_through_the_api() {
    let setup = provider();
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let file = daemon.user_home().join("groceries.txt");
    let call = |id: &str| {
        openai::tool_calls(
            &[(
                id,
                "RunSkillCommand",
                r#"{"skillId":"NewFile","arguments":{"path":"groceries.txt","text":"milk\n"}}"#,
            )],
            3,
        )
    };

    // Approved: the file appears and the agent answers.
    setup.provider.push(COMPLETIONS, call("c1"));
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Saved your list."]));
    post(&daemon, &chat, json!({"content": "Write my list"}));
    let asked = wait_event(&daemon, &chat, "approval.requested");
    let approval_id = asked["payload"]["approvalId"].as_str().unwrap().to_owned();
    let approval = daemon.get(&format!("/v1/approvals/{approval_id}")).json();
    assert_eq!(
        approval["requester"],
        json!({"kind": "chat", "chat_id": chat})
    );
    assert_eq!(approval["tool"], "NewFile");
    assert!(!file.exists());
    let decided = daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "approve"}),
    );
    assert_eq!(decided.status, 200, "{}", decided.body);
    wait_event(&daemon, &chat, "execution.finished");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "milk\n");
    let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
    assert_eq!(
        messages["items"].as_array().unwrap().last().unwrap()["content"],
        "Saved your list."
    );

    // Denied: nothing is written; the model reads the refusal and answers.
    std::fs::remove_file(&file).unwrap();
    setup.provider.push(COMPLETIONS, call("c2"));
    setup.provider.push(
        COMPLETIONS,
        openai::text(&["Understood, I did not save it."]),
    );
    let chat = new_chat(&daemon);
    post(&daemon, &chat, json!({"content": "Write my list again"}));
    let asked = wait_event(&daemon, &chat, "approval.requested");
    let approval_id = asked["payload"]["approvalId"].as_str().unwrap().to_owned();
    daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "deny"}),
    );
    wait_event(&daemon, &chat, "execution.finished");
    assert!(!file.exists());
    let second_request = setup
        .provider
        .requests_to(COMPLETIONS)
        .last()
        .unwrap()
        .json();
    let tool_result = second_request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        tool_result["content"].as_str().unwrap().contains("denied"),
        "{tool_result}"
    );
}

#[test]
fn cancel_conflict_and_idempotent_retry() {
    let setup = provider();
    setup
        .provider
        .push(COMPLETIONS, openai::text_frames(&["Thinking"]).hang());
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let first = post(
        &daemon,
        &chat,
        json!({"content": "Take your time", "clientMessageId": "m-1"}),
    )
    .json();
    let execution = first["execution"]["id"].as_str().unwrap().to_owned();

    let again = post(
        &daemon,
        &chat,
        json!({"content": "Take your time", "clientMessageId": "m-1"}),
    );
    assert_eq!(again.status, 200);
    assert_eq!(
        again.json()["execution"]["id"],
        execution.as_str(),
        "the retry is the same execution"
    );
    let busy = post(&daemon, &chat, json!({"content": "something else"}));
    assert_eq!(busy.status, 409, "{}", busy.body);
    assert_eq!(
        busy.json()["error"]["code"],
        "chat_already_has_active_execution"
    );

    // Cancel once the model's answer is streaming, so there is a request to abort.
    eventually("the model answer to start streaming", || {
        !setup.provider.first_byte_times().is_empty()
    });
    let cancelled = daemon.post(&format!("/v1/chats/{chat}/cancel-active"), &json!({}));
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    wait_event(&daemon, &chat, "execution.cancelled");
    let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
    assert_eq!(
        messages["items"].as_array().unwrap().len(),
        1,
        "no partial answer is stored"
    );
    let terminal = kinds(&daemon, &chat)
        .iter()
        .filter(|k| {
            [
                "execution.finished",
                "execution.failed",
                "execution.cancelled",
            ]
            .contains(&k.as_str())
        })
        .count();
    assert_eq!(terminal, 1);
    // The fake server sees the dropped connection a moment after the client lets go.
    eventually("the model request to be aborted", || {
        setup.provider.streams_dropped_early() >= 1
    });

    setup.provider.push(COMPLETIONS, openai::text(&["Back."]));
    let next = post(&daemon, &chat, json!({"content": "Hi again"}));
    assert_eq!(
        next.status, 200,
        "a cancelled turn frees the chat: {}",
        next.body
    );
}

#[test]
fn a_question_waits_for_the_answer_and_the_turn_resumes() {
    let setup = provider();
    setup.provider.push(
        COMPLETIONS,
        ask_user(json!({"question": "Red or blue?", "choices": ["Red", "Blue"]})),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Blue", " it is."]));
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let posted = post(&daemon, &chat, json!({"content": "Pick a color for me"})).json();
    let execution = posted["execution"]["id"].as_str().unwrap().to_owned();
    let asked = wait_event(&daemon, &chat, "option.requested");
    assert_eq!(asked["payload"]["title"], "Red or blue?");
    let choices = asked["payload"]["options"].as_array().unwrap();
    let blue = choices.iter().find(|c| c["label"] == "Blue").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let option = asked["payload"]["optionId"].as_str().unwrap().to_owned();
    let first_model = setup.provider.requests_to(COMPLETIONS)[0].json()["model"].clone();
    // The default model changes meanwhile; the resumed turn keeps the execution's snapshot.
    let changed = daemon.patch(
        "/v1/me/settings",
        &json!({"defaultModel": "openai/gpt-5.2"}),
    );
    assert_eq!(changed.status, 200, "{}", changed.body);

    let bad = daemon.post(
        &format!("/v1/options/{option}/answer"),
        &json!({"selectedOptionIds": ["nope"]}),
    );
    assert_eq!(bad.status, 400);
    let answered = daemon.post(
        &format!("/v1/options/{option}/answer"),
        &json!({"selectedOptionIds": [blue]}),
    );
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(answered.json()["execution"]["id"], execution.as_str());
    wait_event(&daemon, &chat, "execution.finished");
    let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
    assert_eq!(
        messages["items"].as_array().unwrap().last().unwrap()["content"],
        "Blue it is."
    );
    // The resumed request carries the answer, with the snapshot's model.
    let (resumed, last_user) = last_request(&setup);
    assert_eq!(resumed["model"], first_model);
    assert_ne!(resumed["model"], "gpt-5.2");
    assert!(last_user.contains("Blue"), "{last_user}");
}

#[test]
fn kill_9_mid_turn_loses_nothing_acknowledged_and_recovers() {
    let setup = provider();
    setup
        .provider
        .push(COMPLETIONS, openai::text_frames(&["Partial"]).hang());
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let posted = post(&daemon, &chat, json!({"content": "Remember this message"})).json();
    let execution = posted["execution"]["id"].as_str().unwrap().to_owned();
    wait_event(&daemon, &chat, "execution.started");
    // Kill only once the model has the request, so the hanging reply is the one consumed.
    eventually("the model request to arrive", || {
        !setup.provider.first_byte_times().is_empty()
    });
    let before: Vec<Value> = events(&daemon, &chat);

    let stopped = daemon.stop("KILL");
    assert!(!stopped.status.success());
    let daemon = Daemon::restart_with(stopped, |command| {
        command.env("OPENAI_API_KEY", "sk-test-e2e-key");
    });
    let after = events(&daemon, &chat);
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "every acknowledged event survived"
    );
    let failed = after.last().unwrap();
    assert_eq!(failed["type"], "execution.failed");
    assert_eq!(failed["payload"]["errorCode"], "process_restarted");
    assert_eq!(failed["executionId"], execution.as_str());
    let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
    assert_eq!(messages["items"][0]["content"], "Remember this message");

    setup
        .provider
        .push(COMPLETIONS, openai::text(&["I am back."]));
    let next = post(&daemon, &chat, json!({"content": "Are you there?"}));
    assert_eq!(next.status, 200, "the chat is not stuck: {}", next.body);
    wait_event(&daemon, &chat, "execution.finished");
}

/// The `RunSkillCommand` call `id` of `skill` with `arguments`, as the model streams it.
pub(crate) fn run_skill(id: &str, skill: &str, arguments: Value) -> souz_testkit::Reply {
    let call = json!({"skillId": skill, "arguments": arguments}).to_string();
    openai::tool_calls(&[(id, "RunSkillCommand", &call)], 3)
}

#[test]
fn approvals_and_results_of_a_turn_are_chat_events_with_their_payloads() {
    let setup = provider();
    // The expired case waits for the approval timeout: the shortest allowed.
    let daemon = daemon_with(&setup, "\n[approvals]\ntimeout_seconds = 5\n");
    let home = daemon.user_home();
    std::fs::write(
        home.join("notes.txt"),
        "shopping list; api_key=sk-abcdefghijklmnopqrstu and more\n",
    )
    .unwrap();
    let provider = &setup.provider;
    provider.push(
        COMPLETIONS,
        run_skill(
            "c0",
            "ExtractTextFromFile",
            json!({"filePath": "~/notes.txt"}),
        ),
    );
    for (id, file) in [
        ("c1", "approved.txt"),
        ("c2", "denied.txt"),
        ("c3", "expired.txt"),
    ] {
        provider.push(
            COMPLETIONS,
            run_skill(id, "NewFile", json!({"path": file, "text": "x\n"})),
        );
    }
    provider.push(COMPLETIONS, openai::text(&["Done."]));
    let chat = new_chat(&daemon);
    post(
        &daemon,
        &chat,
        json!({"content": "Read my notes, then write three files"}),
    );

    let asked = |id: &str| {
        wait_matching(
            &daemon,
            &chat,
            &format!("approval.requested of {id}"),
            |e| e["type"] == "approval.requested" && e["payload"]["toolCallId"] == id,
        )
    };
    let decide = |event: &Value, decision: &str| {
        let approval_id = event["payload"]["approvalId"].as_str().unwrap();
        let decided = daemon.post(
            &format!("/v1/approvals/{approval_id}/decision"),
            &json!({"decision": decision, "via": "cli"}),
        );
        assert_eq!(decided.status, 200, "{}", decided.body);
    };
    let first = asked("c1");
    decide(&first, "approve");
    let second = asked("c2");
    decide(&second, "deny");
    let third = asked("c3");
    // Nobody answers c3: it expires after 5 s, and the turn goes on.
    wait_event(&daemon, &chat, "execution.finished");

    let stored = events(&daemon, &chat);
    let of = |id: &str| -> Vec<Value> {
        stored
            .iter()
            .filter(|e| e["payload"]["toolCallId"] == id)
            .cloned()
            .collect()
    };
    let types = |list: &[Value]| -> Vec<String> {
        list.iter()
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect()
    };

    // A read-only call runs at once; its result preview is redacted (original §1.17).
    let read = of("c0");
    assert_eq!(types(&read), ["tool.call.started", "tool.call.finished"]);
    let preview = read[1]["payload"]["resultPreview"].to_string();
    assert!(preview.contains("shopping list"), "{preview}");
    assert!(preview.contains("[REDACTED]"), "{preview}");
    assert!(!preview.contains("sk-abcdefghijklmnopqrstu"), "{preview}");
    assert_eq!(read[1]["payload"]["name"], "RunSkillCommand");

    // Approved: asked with what it will do, decided with the scope and where, then finished.
    let approved = of("c1");
    assert_eq!(
        types(&approved),
        [
            "tool.call.started",
            "approval.requested",
            "approval.decided",
            "tool.call.finished"
        ]
    );
    let requested = &approved[1]["payload"];
    let approval_id = requested["approvalId"].as_str().unwrap();
    let approval = daemon.get(&format!("/v1/approvals/{approval_id}")).json();
    assert_eq!(requested["name"], "NewFile");
    assert_eq!(requested["callId"], approval["call_id"]);
    assert_eq!(requested["summary"], approval["summary"]);
    assert!(
        requested["summary"]
            .as_str()
            .unwrap()
            .contains("approved.txt"),
        "{requested}"
    );
    let decided = &approved[2]["payload"];
    assert_eq!(decided["approvalId"], approval_id);
    assert_eq!(decided["status"], "approved");
    assert_eq!(decided["scope"], "once");
    assert_eq!(decided["via"], "cli");
    assert_eq!(decided["decidedAt"], approval["decision"]["decided_at"]);
    let result = approved[3]["payload"]["resultPreview"].as_str().unwrap();
    assert!(!result.is_empty());
    assert!(home.join("approved.txt").exists());

    // Denied: decided as denied, then the call failed.
    let denied = of("c2");
    assert_eq!(
        types(&denied),
        [
            "tool.call.started",
            "approval.requested",
            "approval.decided",
            "tool.call.failed"
        ]
    );
    assert_eq!(denied[2]["payload"]["status"], "denied");
    assert_eq!(denied[2]["payload"]["via"], "cli");
    assert!(!home.join("denied.txt").exists());

    // Expired: its own event, with the reason, then the call failed.
    let expired = of("c3");
    assert_eq!(
        types(&expired),
        [
            "tool.call.started",
            "approval.requested",
            "approval.expired",
            "tool.call.failed"
        ]
    );
    let payload = &expired[2]["payload"];
    assert_eq!(payload["approvalId"], third["payload"]["approvalId"]);
    assert_eq!(payload["status"], "expired");
    assert_eq!(payload["reason"], "timeout");
    assert!(payload.get("via").is_none(), "{payload}");
    assert!(!home.join("expired.txt").exists());
    assert_ne!(
        first["payload"]["approvalId"],
        second["payload"]["approvalId"]
    );
}

#[test]
fn the_settings_snapshot_limits_tools_and_bounds_model_requests() {
    let setup = provider();
    let daemon = daemon(&setup);
    let patched = daemon.patch(
        "/v1/me/settings",
        &json!({"enabledTools": ["Calculator", "ListFiles"]}),
    );
    assert_eq!(patched.status, 200, "{}", patched.body);

    // enabledTools: the inventory lists only those, and anything else is refused unasked.
    setup.provider.push(
        COMPLETIONS,
        run_skill("c1", "NewFile", json!({"path": "nope.txt", "text": "x"})),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["NewFile is switched off."]));
    let chat = new_chat(&daemon);
    post(&daemon, &chat, json!({"content": "Write nope.txt"}));
    wait_event(&daemon, &chat, "execution.finished");
    let requests = setup.provider.requests_to(COMPLETIONS);
    let system = requests[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("Calculator") && system.contains("ListFiles"),
        "{system}"
    );
    for hidden in ["NewFile", "DeleteFile", "RunCommand"] {
        assert!(!system.contains(hidden), "{hidden} is listed: {system}");
    }
    let refusal = requests[1].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(refusal.contains("skill_disabled"), "{refusal}");
    assert!(!daemon.user_home().join("nope.txt").exists());
    let pending = daemon.get("/v1/approvals?status=pending").json();
    assert_eq!(pending["items"], json!([]), "nobody was asked");

    // requestTimeoutMillis: a model that takes longer is cut off at the limit.
    let patched = daemon.patch("/v1/me/settings", &json!({"requestTimeoutMillis": 1000}));
    assert_eq!(patched.status, 200, "{}", patched.body);
    setup.provider.push(
        COMPLETIONS,
        souz_testkit::Reply::sse()
            .delay(Duration::from_secs(6))
            .data(openai::chunk(json!({"content": "Too late"}), None))
            .data(openai::chunk(json!({}), Some("stop")))
            .data("[DONE]")
            .end(),
    );
    let chat = new_chat(&daemon);
    let started = Instant::now();
    post(&daemon, &chat, json!({"content": "Are you slow?"}));
    let finished = wait_event(&daemon, &chat, "execution.finished");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(finished["type"], "execution.finished");
    let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
    assert_eq!(
        messages["items"][1]["content"], "The model request timed out.",
        "{messages}"
    );
    eventually("the model request to be aborted", || {
        setup.provider.streams_dropped_early() >= 1
    });
}
