//! The public client protocol end to end (`docs/protocol.md`): a device's WebSocket on the real
//! daemon, turns answered by the fake OpenAI server. The page's example session is run frame by
//! frame, then what a session cannot show: steering a running thread, cancel races, replay then
//! live under concurrent writes, and a thread whose daemon was killed.

use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use souz_e2e::Daemon;
use souz_testkit::openai;
use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message as Frame, WebSocket};

use crate::chats::{COMPLETIONS, daemon, events, new_chat, post, provider, wait_event};

type Socket = WebSocket<MaybeTlsStream<TcpStream>>;

/// A device's socket on `chat` (`clientType=mobile_app`), replaying after `after`.
fn device(daemon: &Daemon, chat: &str, after: i64) -> Socket {
    connect(
        daemon,
        chat,
        &format!("clientType=mobile_app&afterSeq={after}"),
    )
}

fn connect(daemon: &Daemon, chat: &str, query: &str) -> Socket {
    let mut request = format!("ws://{}/v1/chats/{chat}/ws?{query}", daemon.address)
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

/// The next text frame as JSON, or `{"closed": code}`.
fn next(socket: &mut Socket) -> Value {
    loop {
        match socket.read() {
            Ok(Frame::Text(text)) => return serde_json::from_str(&text).unwrap(),
            Ok(Frame::Close(frame)) => return json!({"closed": frame.map(|f| u16::from(f.code))}),
            Ok(_) => {}
            Err(error) => panic!("the socket failed: {error}"),
        }
    }
}

fn send(socket: &mut Socket, frame: &Value) {
    socket.send(Frame::Text(frame.to_string().into())).unwrap();
}

/// A `message.submit` from the kitchen speaker.
fn submit(chat: &str, request: &str, thread: Option<&str>, text: &str) -> Value {
    let mut frame = json!({
        "kind": "message.submit", "chatId": chat, "requestId": request,
        "payload": {
            "device": {"userId": "local", "deviceId": "kitchen-speaker",
                       "deviceType": "smart_speaker", "capabilities": ["speech"]},
            "content": {"type": "text", "source": "voice", "text": text}
        }
    });
    if let Some(thread) = thread {
        frame["threadId"] = json!(thread);
    }
    frame
}

/// Sends `frame` and reads its ack (skipping events that arrive first).
fn ask(socket: &mut Socket, frame: &Value) -> Value {
    send(socket, frame);
    loop {
        let answer = next(socket);
        if answer["kind"] == "ack" {
            return answer;
        }
        assert_eq!(answer["kind"], "event", "{answer}");
    }
}

/// Whether `actual` has exactly the fields of `expected` (recursively, for objects), and the
/// same values where the protocol fixes them: `kind`, `type`, `duplicate`, error `code`, and
/// an ack's `status`.
fn same_shape(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    let (Some(expected), Some(actual)) = (expected.as_object(), actual.as_object()) else {
        return Ok(());
    };
    let keys = |map: &serde_json::Map<String, Value>| map.keys().cloned().collect::<Vec<_>>();
    if keys(expected) != keys(actual) {
        return Err(format!(
            "{path}: fields {:?} != {:?}",
            keys(expected),
            keys(actual)
        ));
    }
    let is_ack = expected.get("kind") == Some(&json!("ack"));
    for (key, value) in expected {
        let fixed = matches!(key.as_str(), "kind" | "type" | "duplicate" | "code")
            || (is_ack && key == "status");
        if fixed && actual[key] != *value {
            return Err(format!("{path}.{key}: {} != {}", value, actual[key]));
        }
        if value.is_object() != actual[key].is_object() {
            return Err(format!("{path}.{key}: {value} != {}", actual[key]));
        }
        same_shape(value, &actual[key], &format!("{path}.{key}"))?;
    }
    Ok(())
}

#[test]
fn the_protocol_page_session_runs_against_the_daemon() {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/protocol.md"),
    )
    .unwrap();
    let session = page
        .split("```json transcript\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the page has its example session");
    let setup = provider();
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Hi there."]));
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut socket = device(&daemon, &chat, 0);
    let mut thread = String::from("{threadId}");
    for (number, line) in session.lines().enumerate() {
        let at = format!("line {}", number + 1);
        if let Some(frame) = line.strip_prefix("> ") {
            let frame = frame
                .replace("{chatId}", &chat)
                .replace("{threadId}", &thread);
            socket.send(Frame::Text(frame.into())).unwrap();
        } else if let Some(expected) = line.strip_prefix("< ") {
            let actual = next(&mut socket);
            if let Some(code) = expected.strip_prefix("close ") {
                assert_eq!(
                    actual,
                    json!({"closed": code.parse::<u16>().unwrap()}),
                    "{at}"
                );
                continue;
            }
            let expected: Value = serde_json::from_str(expected).unwrap();
            if let Err(difference) = same_shape(&expected, &actual, "") {
                panic!("{at}: {difference}\nexpected {expected}\nactual   {actual}");
            }
            assert_eq!(actual["chatId"], chat.as_str(), "{at}");
            if let Some(id) = actual["thread"]["id"].as_str() {
                thread = id.to_owned();
            }
            if expected["type"] == "thread.completed" {
                assert_eq!(actual["payload"]["response"], "Hi there.", "{at}");
                assert_eq!(actual["threadId"], thread.as_str(), "{at}");
            }
        }
    }
    let threads = daemon.get(&format!("/v1/chats/{chat}/threads")).json();
    assert_eq!(threads["items"].as_array().unwrap().len(), 1, "{threads}");
    assert_eq!(threads["items"][0]["id"], thread.as_str());
    assert_eq!(threads["items"][0]["status"], "completed");
}

#[test]
fn an_unknown_client_type_and_frames_before_any_kind_close_with_1008() {
    let setup = provider();
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut socket = connect(&daemon, &chat, "clientType=toaster");
    assert_eq!(next(&mut socket), json!({"closed": 1008}));
    for frame in ["not json", "[1, 2]", r#"{"chatId": "x"}"#] {
        let mut socket = device(&daemon, &chat, 0);
        socket.send(Frame::Text(frame.into())).unwrap();
        assert_eq!(next(&mut socket), json!({"closed": 1008}), "{frame}");
    }
    // A known kind with a field it does not declare is answered, not closed.
    let mut socket = device(&daemon, &chat, 0);
    let mut frame = submit(&chat, "r-1", None, "Hello");
    frame["priority"] = json!("high");
    let ack = ask(&mut socket, &frame);
    assert_eq!(ack["status"], "rejected");
    assert_eq!(ack["error"]["code"], "invalid_request");
    assert_eq!(ack["requestId"], "r-1");
    let other = submit("00000000-0000-0000-0000-000000000000", "r-2", None, "Hello");
    assert_eq!(ask(&mut socket, &other)["error"]["code"], "invalid_request");
    // A frame fifty times the socket's read buffer arrives whole and is answered.
    let mut large = submit(&chat, "r-3", None, "Hello");
    large["padding"] = json!("x".repeat(200 << 10));
    let ack = ask(&mut socket, &large);
    assert_eq!(ack["error"]["code"], "invalid_request", "{ack}");
    assert_eq!(ack["requestId"], "r-3");
    // A frame over the sockets' limit (1 MiB) ends that socket; the daemon serves on.
    let mut huge = submit(&chat, "r-4", None, "Hello");
    huge["padding"] = json!("x".repeat(2 << 20));
    let _ = socket.send(Frame::Text(huge.to_string().into()));
    loop {
        match socket.read() {
            Ok(Frame::Close(_)) | Err(_) => break,
            Ok(Frame::Text(text)) => panic!("the over-long frame was answered: {text}"),
            Ok(_) => {}
        }
    }
    let mut again = device(&daemon, &chat, 0);
    let ack = ask(&mut again, &submit(&chat, "r-5", None, "Hello"));
    assert_eq!(ack["status"], "accepted", "{ack}");
}

#[test]
fn a_continuation_steers_the_running_thread_and_is_refused_after_it_ends() {
    let setup = provider();
    // The first answer streams slowly, so the thread is still running when more input comes.
    setup.provider.push(
        COMPLETIONS,
        openai::text_frames(&["Let", " me", " think", " about", " it"])
            .delay(Duration::from_millis(400))
            .data(openai::chunk(json!({}), Some("stop")))
            .data("[DONE]")
            .end(),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Both noted."]));
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut socket = device(&daemon, &chat, 0);
    let first = ask(&mut socket, &submit(&chat, "r-1", None, "Remember milk"));
    assert_eq!(first["status"], "accepted", "{first}");
    let thread = first["thread"]["id"].as_str().unwrap().to_owned();
    let status = next(&mut socket);
    assert_eq!(status["kind"], "status");
    assert_eq!(status["acceptsInput"], true, "{status}");
    assert!(status["runtimeLeaseExpiresAt"].is_string(), "{status}");

    let more = ask(
        &mut socket,
        &submit(&chat, "r-2", Some(&thread), "and eggs"),
    );
    assert_eq!(more["status"], "accepted", "{more}");
    assert_eq!(more["thread"]["created"], false);
    assert_eq!(more["thread"]["id"], thread.as_str());
    assert_eq!(more["thread"]["revision"], 2);
    assert_eq!(more["submission"]["inputSeq"], 2);
    let status = next(&mut socket);
    assert_eq!(status["revision"], 2, "{status}");

    let end = loop {
        let frame = next(&mut socket);
        if frame["kind"] == "event" {
            break frame;
        }
    };
    assert_eq!(end["type"], "thread.completed", "{end}");
    assert_eq!(end["threadId"], thread.as_str());
    let asked: Vec<String> = setup
        .provider
        .requests_to(COMPLETIONS)
        .iter()
        .map(|request| request.json()["messages"].to_string())
        .collect();
    assert!(
        asked.iter().any(|messages| messages.contains("and eggs")),
        "the model saw the continuation: {asked:?}"
    );
    let messages = daemon.get(&format!("/v1/chats/{chat}/messages")).json();
    let texts: Vec<&str> = messages["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap())
        .collect();
    assert!(texts.contains(&"and eggs"), "stored: {texts:?}");

    let late = ask(
        &mut socket,
        &submit(&chat, "r-3", Some(&thread), "and bread"),
    );
    assert_eq!(late["error"]["code"], "thread_already_terminal", "{late}");
    let threads = daemon.get(&format!("/v1/chats/{chat}/threads")).json();
    assert_eq!(threads["items"][0]["revision"], 2, "{threads}");
}

#[test]
fn racing_cancels_end_the_thread_once() {
    let setup = provider();
    setup
        .provider
        .push(COMPLETIONS, openai::text_frames(&["Working"]).hang());
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut first = device(&daemon, &chat, 0);
    let mut second = device(&daemon, &chat, 0);
    let started = ask(&mut first, &submit(&chat, "r-1", None, "Take your time"));
    let thread = started["thread"]["id"].as_str().unwrap().to_owned();
    let _ = next(&mut first);
    let cancel = |request: &str| {
        json!({"kind": "thread.cancel", "chatId": chat, "requestId": request,
               "threadId": thread, "reason": "superseded"})
    };
    // Both sockets cancel at once, and a continuation races them.
    send(&mut first, &cancel("c-1"));
    send(&mut second, &cancel("c-2"));
    send(&mut second, &submit(&chat, "r-2", Some(&thread), "wait"));
    // Each socket: its acks, and the thread's end (once).
    let read = |socket: &mut Socket, wanted: usize| {
        let (mut acks, mut ends) = (Vec::new(), Vec::new());
        while acks.len() < wanted || ends.is_empty() {
            let frame = next(socket);
            match frame["kind"].as_str() {
                Some("ack") => acks.push(frame),
                Some("event") => ends.push(frame),
                _ => {}
            }
        }
        (acks, ends)
    };
    let (mut acks, mut ends) = read(&mut first, 1);
    let (more_acks, more_ends) = read(&mut second, 2);
    acks.extend(more_acks);
    ends.extend(more_ends);
    for ack in &acks {
        let code = &ack["error"]["code"];
        assert!(
            ack["status"] == "accepted"
                || code == "thread_already_terminal"
                || code == "message_rejected",
            "{ack}"
        );
    }
    let accepted = acks
        .iter()
        .find(|ack| {
            ack["requestId"].as_str().unwrap().starts_with("c-") && ack["status"] == "accepted"
        })
        .expect("one of the cancels was accepted")["requestId"]
        .as_str()
        .unwrap()
        .to_owned();
    for end in &ends {
        assert_eq!(end["type"], "thread.cancelled", "{end}");
        assert_eq!(end["threadId"], thread.as_str());
    }
    let stored: Vec<Value> = events(&daemon, &chat)
        .into_iter()
        .filter(|event| event["type"] == "execution.cancelled")
        .collect();
    assert_eq!(stored.len(), 1, "exactly one terminal event: {stored:?}");
    let again = ask(&mut first, &cancel("c-3"));
    assert_eq!(again["error"]["code"], "thread_already_terminal", "{again}");
    // The same cancel again: its original ack, marked duplicate.
    let duplicate = ask(&mut first, &cancel(&accepted));
    assert_eq!(duplicate["status"], "accepted", "{duplicate}");
    assert_eq!(duplicate["duplicate"], true);
}

#[test]
fn replay_then_live_has_no_gap_or_duplicate_under_concurrent_writes() {
    const TURNS: usize = 12;
    let setup = provider();
    for turn in 0..TURNS {
        setup
            .provider
            .push(COMPLETIONS, openai::text(&[&format!("Answer {turn}")]));
    }
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for turn in 0..TURNS {
                let posted = post(
                    &daemon,
                    &chat,
                    json!({"content": format!("Question {turn}")}),
                );
                assert_eq!(posted.status, 200, "{}", posted.body);
                let id = posted.json()["execution"]["id"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                daemon.wait_until(&format!("/v1/chats/{chat}/threads"), |threads| {
                    threads["items"][0]["id"] == id.as_str()
                        && threads["items"][0]["status"] == "completed"
                });
            }
        });
        // Devices connect while the turns run, each from another point of the stream.
        let mut followers = Vec::new();
        for after in [0, 3, 9] {
            std::thread::sleep(Duration::from_millis(150));
            followers.push((after, device(&daemon, &chat, after)));
        }
        writer.join().unwrap();
        let stored: Vec<(i64, String)> = events(&daemon, &chat)
            .into_iter()
            .filter(|event| event["type"] == "execution.finished")
            .map(|event| {
                (
                    event["seq"].as_i64().unwrap(),
                    event["executionId"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(stored.len(), TURNS);
        for (after, mut socket) in followers {
            let expected: Vec<(i64, String)> = stored
                .iter()
                .filter(|(seq, _)| *seq > after)
                .cloned()
                .collect();
            let mut seen = Vec::new();
            while seen.len() < expected.len() {
                let frame = next(&mut socket);
                assert_eq!(frame["kind"], "event", "{frame}");
                assert_eq!(frame["type"], "thread.completed", "{frame}");
                seen.push((
                    frame["seq"].as_i64().unwrap(),
                    frame["threadId"].as_str().unwrap().to_owned(),
                ));
            }
            assert_eq!(
                seen, expected,
                "after {after}: every thread end once, in order"
            );
        }
    });
}

#[test]
fn a_thread_whose_daemon_was_killed_fails_once_with_process_restarted() {
    let setup = provider();
    setup
        .provider
        .push(COMPLETIONS, openai::text_frames(&["Partial"]).hang());
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut socket = device(&daemon, &chat, 0);
    let started = ask(
        &mut socket,
        &submit(&chat, "r-1", None, "Start something long"),
    );
    let thread = started["thread"]["id"].as_str().unwrap().to_owned();
    wait_event(&daemon, &chat, "execution.started");
    let threads = daemon.get(&format!("/v1/chats/{chat}/threads")).json();
    assert_eq!(threads["items"][0]["status"], "running");
    assert!(threads["items"][0]["runtimeLeaseExpiresAt"].is_string());

    let stopped = daemon.stop("KILL");
    assert!(!stopped.status.success());
    let daemon = Daemon::restart_with(stopped, |command| {
        command.env("OPENAI_API_KEY", "sk-test-e2e-key");
    });
    let threads = daemon.get(&format!("/v1/chats/{chat}/threads")).json();
    let failed = &threads["items"][0];
    assert_eq!(failed["id"], thread.as_str());
    assert_eq!(failed["status"], "failed", "{threads}");
    assert_eq!(failed["error"]["code"], "process_restarted");
    assert!(failed["runtimeLeaseExpiresAt"].is_null());
    let mut socket = device(&daemon, &chat, 0);
    let end = next(&mut socket);
    assert_eq!(end["type"], "thread.failed", "{end}");
    assert_eq!(end["payload"]["error"]["code"], "process_restarted");
    let terminals = events(&daemon, &chat)
        .iter()
        .filter(|event| {
            event["executionId"] == thread.as_str()
                && matches!(
                    event["type"].as_str(),
                    Some("execution.finished" | "execution.failed" | "execution.cancelled")
                )
        })
        .count();
    assert_eq!(terminals, 1, "exactly one terminal event");
    // The retried submit is a duplicate of the thread that failed, not a new one.
    let again = ask(
        &mut socket,
        &submit(&chat, "r-1", None, "Start something long"),
    );
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["thread"]["id"], thread.as_str());
}

/// A `message.submit` from a device with `capabilities`.
fn submit_from(chat: &str, request: &str, text: &str, capabilities: &[&str]) -> Value {
    let mut frame = submit(chat, request, None, text);
    frame["payload"]["device"]["capabilities"] = json!(capabilities);
    frame
}

/// A `tool.result` that succeeded with `result`.
fn tool_result(chat: &str, thread: &str, call: &str, result: Value) -> Value {
    json!({"kind": "tool.result", "chatId": chat, "threadId": thread, "toolCallId": call,
           "status": "succeeded", "result": result})
}

/// Reads frames until an event of `kind`.
fn until_event(socket: &mut Socket, kind: &str) -> Value {
    loop {
        let frame = next(socket);
        if frame["kind"] == "event" && frame["type"] == kind {
            return frame;
        }
        assert!(frame["closed"].is_null(), "closed before {kind}: {frame}");
    }
}

/// The tool names offered in a captured request to the model.
fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The model calls the device's `user.ask`: the device sees `tool.call.started`, drops its
/// socket, reconnects and answers; the answer is acked (then acked as a duplicate, and another
/// one refused), and the model's next request carries the raw answer.
#[test]
fn a_client_tool_runs_on_the_device_and_its_answer_reaches_the_model() {
    let setup = provider();
    setup.provider.push(
        COMPLETIONS,
        openai::tool_calls(
            &[("call-ask-1", "user-ask", r#"{"question": "Which room?"}"#)],
            2,
        ),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["The kitchen light is on."]));
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut socket = device(&daemon, &chat, 0);
    let started = ask(
        &mut socket,
        &submit_from(&chat, "r-1", "Turn on the light", &["speech"]),
    );
    assert_eq!(started["status"], "accepted", "{started}");
    let thread = started["thread"]["id"].as_str().unwrap().to_owned();
    let call = until_event(&mut socket, "tool.call.started");
    assert_eq!(call["threadId"], thread.as_str(), "{call}");
    // The protocol page's example of this event has exactly its fields.
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/protocol.md"),
    )
    .unwrap();
    let example: Value = serde_json::from_str(
        page.split("```json event\n")
            .nth(1)
            .and_then(|rest| rest.split("\n```").next())
            .expect("the page shows a tool.call.started"),
    )
    .unwrap();
    if let Err(difference) = same_shape(&example, &call, "") {
        panic!("{difference}\nexpected {example}\nactual   {call}");
    }
    assert_eq!(call["payload"]["name"], example["payload"]["name"]);
    let payload = &call["payload"];
    assert_eq!(payload["toolCallId"], "call-ask-1", "{call}");
    assert_eq!(payload["name"], "user.ask");
    assert_eq!(payload["target"], "client");
    assert_eq!(payload["deviceId"], "kitchen-speaker");
    assert_eq!(payload["arguments"], json!({"question": "Which room?"}));
    assert!(payload["deadlineAt"].is_string(), "{call}");
    let requests = setup.provider.requests_to(COMPLETIONS);
    let tools = offered(&requests[0].json());
    assert!(tools.contains(&"user-ask".to_owned()), "{tools:?}");
    assert!(
        !tools.contains(&"device-media-open".to_owned()),
        "{tools:?}"
    );

    // The device goes away while the call waits, comes back and answers.
    let seq = call["seq"].as_i64().unwrap();
    drop(socket);
    std::thread::sleep(Duration::from_millis(200));
    let mut socket = device(&daemon, &chat, seq);
    let answer = json!({"answer": "Kitchen"});
    let ack = ask(
        &mut socket,
        &tool_result(&chat, &thread, "call-ask-1", answer.clone()),
    );
    assert_eq!(ack["status"], "accepted", "{ack}");
    assert_eq!(ack["duplicate"], false);
    assert_eq!(ack["toolCallId"], "call-ask-1");
    let again = ask(
        &mut socket,
        &tool_result(&chat, &thread, "call-ask-1", answer.clone()),
    );
    assert_eq!(again["status"], "accepted", "{again}");
    assert_eq!(again["duplicate"], true);
    let other = ask(
        &mut socket,
        &tool_result(&chat, &thread, "call-ask-1", json!({"answer": "Hall"})),
    );
    assert_eq!(other["error"]["code"], "idempotency_conflict", "{other}");
    let end = until_event(&mut socket, "thread.completed");
    assert_eq!(
        end["payload"]["response"], "The kitchen light is on.",
        "{end}"
    );

    let requests = setup.provider.requests_to(COMPLETIONS);
    let messages = requests.last().unwrap().json()["messages"].clone();
    let tool_message = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool message: {messages}"));
    let content: Value = serde_json::from_str(tool_message["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, answer, "the model reads the raw result");
    assert_eq!(tool_message["tool_call_id"], "call-ask-1");
}

/// A device's turn that asked the person a question goes on, once answered, with the device's
/// client tools still offered: the model calls `user.ask` after the answer and the device runs it.
#[test]
fn a_devices_turn_keeps_its_client_tools_after_a_question_is_answered() {
    let setup = provider();
    setup.provider.push(
        COMPLETIONS,
        crate::chats::ask_user(json!({"question": "Which floor?", "choices": ["Up", "Down"]})),
    );
    setup.provider.push(
        COMPLETIONS,
        openai::tool_calls(
            &[("call-ask-2", "user-ask", r#"{"question": "Which room?"}"#)],
            2,
        ),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["Upstairs kitchen, done."]));
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut socket = device(&daemon, &chat, 0);
    let started = ask(
        &mut socket,
        &submit_from(&chat, "r-q", "Turn on the light", &["speech"]),
    );
    assert_eq!(started["status"], "accepted", "{started}");
    let thread = started["thread"]["id"].as_str().unwrap().to_owned();
    let asked = wait_event(&daemon, &chat, "option.requested");
    let up = asked["payload"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|choice| choice["label"] == "Up")
        .unwrap()["id"]
        .clone();
    let option = asked["payload"]["optionId"].as_str().unwrap();
    let answered = daemon.post(
        &format!("/v1/options/{option}/answer"),
        &json!({"selectedOptionIds": [up]}),
    );
    assert_eq!(answered.status, 200, "{}", answered.body);

    // The resumed turn offers the device's tool again, and the call reaches the device.
    let call = until_event(&mut socket, "tool.call.started");
    assert_eq!(call["payload"]["toolCallId"], "call-ask-2", "{call}");
    assert_eq!(call["payload"]["deviceId"], "kitchen-speaker", "{call}");
    let requests = setup.provider.requests_to(COMPLETIONS);
    let tools = offered(&requests.last().unwrap().json());
    assert!(tools.contains(&"user-ask".to_owned()), "{tools:?}");
    let ack = ask(
        &mut socket,
        &tool_result(&chat, &thread, "call-ask-2", json!({"answer": "Kitchen"})),
    );
    assert_eq!(ack["status"], "accepted", "{ack}");
    let end = until_event(&mut socket, "thread.completed");
    assert_eq!(
        end["payload"]["response"], "Upstairs kitchen, done.",
        "{end}"
    );
}

/// No answer by the deadline (shortened for the test): the model is told the call timed out,
/// and a late result is refused `client_tool_timed_out`.
#[test]
fn a_client_tool_without_an_answer_times_out_and_refuses_a_late_result() {
    let setup = provider();
    setup.provider.push(
        COMPLETIONS,
        openai::tool_calls(
            &[("call-ask-1", "user-ask", r#"{"question": "Which room?"}"#)],
            1,
        ),
    );
    setup
        .provider
        .push(COMPLETIONS, openai::text(&["No answer, so I stopped."]));
    let daemon = crate::chats::daemon_configured(&setup, "", |command| {
        command
            .env("OPENAI_API_KEY", "sk-test-e2e-key")
            .env("SOUZ_TEST_CLIENT_TOOL_TIMEOUT_MS", "700");
    });
    let chat = new_chat(&daemon);
    let mut socket = device(&daemon, &chat, 0);
    let started = ask(
        &mut socket,
        &submit_from(&chat, "r-1", "Turn on the light", &["screen"]),
    );
    let thread = started["thread"]["id"].as_str().unwrap().to_owned();
    until_event(&mut socket, "tool.call.started");
    until_event(&mut socket, "thread.completed");
    let requests = setup.provider.requests_to(COMPLETIONS);
    let messages = requests.last().unwrap().json()["messages"].clone();
    let tool_message = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool message: {messages}"));
    let content: Value = serde_json::from_str(tool_message["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["status"], "timed_out", "{content}");
    assert_eq!(
        content["error"]["code"], "client_tool_timed_out",
        "{content}"
    );
    let late = ask(
        &mut socket,
        &tool_result(&chat, &thread, "call-ask-1", json!({"answer": "Kitchen"})),
    );
    assert_eq!(late["status"], "rejected", "{late}");
    assert_eq!(late["error"]["code"], "client_tool_timed_out", "{late}");
}

/// A device offers the model only the client tools its capabilities allow; a turn no device
/// submitted offers none.
#[test]
fn client_tools_are_offered_by_the_device_capabilities() {
    let setup = provider();
    for answer in ["One.", "Two.", "Three."] {
        setup.provider.push(COMPLETIONS, openai::text(&[answer]));
    }
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut socket = device(&daemon, &chat, 0);
    ask(&mut socket, &submit_from(&chat, "r-1", "Hello", &["oauth"]));
    until_event(&mut socket, "thread.completed");
    ask(
        &mut socket,
        &submit_from(&chat, "r-2", "Hello", &["device_tools"]),
    );
    until_event(&mut socket, "thread.completed");
    let posted = post(&daemon, &chat, json!({"content": "Hello"}));
    assert_eq!(posted.status, 200, "{}", posted.body);
    wait_event(&daemon, &chat, "execution.finished");
    daemon.wait_until(&format!("/v1/chats/{chat}/threads"), |threads| {
        threads["items"]
            .as_array()
            .is_some_and(|items| items.iter().all(|thread| thread["status"] == "completed"))
            && threads["items"]
                .as_array()
                .is_some_and(|items| items.len() == 3)
    });
    let requests = setup.provider.requests_to(COMPLETIONS);
    assert_eq!(requests.len(), 3);
    let client = |tools: Vec<String>| {
        tools
            .into_iter()
            .filter(|name| name == "user-ask" || name == "device-media-open")
            .collect::<Vec<_>>()
    };
    assert!(client(offered(&requests[0].json())).is_empty());
    assert_eq!(client(offered(&requests[1].json())), ["device-media-open"]);
    assert!(client(offered(&requests[2].json())).is_empty());
}

/// A device that speaks for another user than the chat's owner is refused.
#[test]
fn a_submit_for_another_user_is_rejected() {
    let setup = provider();
    let daemon = daemon(&setup);
    let chat = new_chat(&daemon);
    let mut socket = device(&daemon, &chat, 0);
    let mut frame = submit(&chat, "r-1", None, "Hello");
    frame["payload"]["device"]["userId"] = json!("someone-else");
    let ack = ask(&mut socket, &frame);
    assert_eq!(ack["status"], "rejected", "{ack}");
    assert_eq!(ack["error"]["code"], "invalid_request");
    let threads = daemon.get(&format!("/v1/chats/{chat}/threads")).json();
    assert!(threads["items"].as_array().unwrap().is_empty(), "{threads}");
}
