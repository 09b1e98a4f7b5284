//! Trusted-proxy mode isolates users: a proxied user's agent works only in that user's folder
//! (never the operator's home or another user's folder), cannot run commands, does not decide
//! its own chat's approvals (the operator does) unless `proxy_users_decide` is on, and `/mcp`
//! refuses any request carrying proxy headers.

use super::*;

/// A model reply calling the built-in tool `tool` through `RunSkillCommand`.
fn uses(id: &str, tool: &str, arguments: Value) -> souz_testkit::Reply {
    let arguments = json!({"skillId": tool, "arguments": arguments});
    openai::tool_calls(&[(id, "RunSkillCommand", &arguments.to_string())], 2)
}

/// Runs one agent turn of `user` that calls `tool` once; returns the tool result the model was
/// given (the last `tool` message of the turn's second request).
#[allow(
    clippy::too_many_arguments,
    reason = "a test step: which daemon and model, who asks in which chat, which tool with what"
)]
async fn tool_result(
    f: &Fixture,
    provider: &FakeServer,
    user: &str,
    chat: &str,
    tool: &str,
    arguments: Value,
) -> String {
    let before = provider.requests_to(openai::CHAT_PATH).len();
    provider.push(openai::CHAT_PATH, uses("t1", tool, arguments));
    provider.push(openai::CHAT_PATH, openai::text(&["Done."]));
    post_message(f, user, chat, "Go").await;
    for _ in 0..1500 {
        let requests = provider.requests_to(openai::CHAT_PATH);
        if requests.len() >= before + 2 {
            // The second request of the turn carries the tool's result.
            let body = requests[before + 1].json();
            let result = body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .find(|message| message["role"] == "tool")
                .map(|message| message["content"].to_string());
            return result.unwrap_or_else(|| panic!("no tool result in {body}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the turn of {user} did not reach the model twice");
}

async fn settle(f: &Fixture, user: &str, chat: &str) {
    let path = format!("/v1/chats/{chat}/events?afterSeq=0&limit=1000");
    for _ in 0..1500 {
        let events = ok(f, call(f, Some(user), "GET", &path, None)).await;
        let finished = events["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|event| event["type"] == "execution.finished")
            .count();
        let started = events["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|event| event["type"] == "execution.started")
            .count();
        if finished > 0 && finished >= started {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the turn of {user} did not finish");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxied_users_agent_reaches_only_that_users_folder() {
    let provider = FakeServer::start().await;
    let f = daemon_with(&provider, |_| {}).await;
    store_key(&f, "alice", ALICE_KEY).await;
    store_key(&f, "bob", BOB_KEY).await;
    let home = f.runtime.home().path().canonicalize().unwrap();
    std::fs::write(home.join("operator-secret.txt"), "OPERATOR-SECRET-1").unwrap();
    let (alice_chat, bob_chat) = (new_chat(&f, "alice").await, new_chat(&f, "bob").await);

    // Bob's agent works in bob's folder (created on first use, owner-only).
    let told = tool_result(
        &f,
        &provider,
        "bob",
        &bob_chat,
        "ListFiles",
        json!({"path": "~"}),
    )
    .await;
    settle(&f, "bob", &bob_chat).await;
    assert!(!told.contains("operator-secret"), "{told}");
    let bob_folder = home.join("users/bob");
    assert!(bob_folder.is_dir());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&bob_folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    std::fs::write(bob_folder.join("bob-secret.txt"), "BOB-SECRET-2").unwrap();

    // Alice's own file: read (so a refusal below is a refusal, not a broken fixture).
    let alice_folder = home.join("users/alice");
    std::fs::create_dir_all(&alice_folder).unwrap();
    std::fs::write(alice_folder.join("mine.txt"), "ALICE-OWN-3").unwrap();
    let read = |path: String| json!({"filePath": path});
    let told = tool_result(
        &f,
        &provider,
        "alice",
        &alice_chat,
        "ExtractTextFromFile",
        read("~/mine.txt".into()),
    )
    .await;
    settle(&f, "alice", &alice_chat).await;
    assert!(told.contains("ALICE-OWN-3"), "{told}");

    // The operator's and bob's files, by every spelling: refused, never read.
    let operator_file = home.join("operator-secret.txt").display().to_string();
    let bob_file = bob_folder.join("bob-secret.txt").display().to_string();
    for path in [
        operator_file,
        bob_file,
        "~/../bob/bob-secret.txt".to_owned(),
        "../bob/bob-secret.txt".to_owned(),
        "~/../../operator-secret.txt".to_owned(),
    ] {
        let told = tool_result(
            &f,
            &provider,
            "alice",
            &alice_chat,
            "ExtractTextFromFile",
            read(path.clone()),
        )
        .await;
        settle(&f, "alice", &alice_chat).await;
        assert!(
            !told.contains("OPERATOR-SECRET-1") && !told.contains("BOB-SECRET-2"),
            "{path}: {told}"
        );
    }
    let told = tool_result(
        &f,
        &provider,
        "alice",
        &alice_chat,
        "ListFiles",
        json!({"path": home.display().to_string()}),
    )
    .await;
    settle(&f, "alice", &alice_chat).await;
    assert!(!told.contains("operator-secret"), "{told}");

    // Commands could read anything the daemon can: refused for proxied users.
    let told = tool_result(
        &f,
        &provider,
        "alice",
        &alice_chat,
        "RunCommand",
        json!({"command": "cat ../../operator-secret.txt"}),
    )
    .await;
    settle(&f, "alice", &alice_chat).await;
    assert!(!told.contains("OPERATOR-SECRET-1"), "{told}");
    assert!(told.contains("Commands are not available"), "{told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_decides_proxied_users_approvals_unless_users_may() {
    let provider = FakeServer::start().await;
    let f = daemon_with(&provider, |_| {}).await;
    store_key(&f, "alice", ALICE_KEY).await;
    let chat = new_chat(&f, "alice").await;
    provider.push(openai::CHAT_PATH, writes("a1", "alice.txt"));
    post_message(&f, "alice", &chat, "Write alice.txt").await;
    let asked = wait_event(&f, "alice", &chat, "approval.requested").await;
    let approval = asked["payload"]["approvalId"].as_str().unwrap().to_owned();

    // Alice sees her approval but cannot decide it, in any scope.
    let show = format!("/v1/approvals/{approval}");
    let seen = ok(&f, call(&f, Some("alice"), "GET", &show, None)).await;
    assert_eq!(seen["status"], "pending");
    let decide = format!("/v1/approvals/{approval}/decision");
    for body in [
        json!({"decision": "approve"}),
        json!({"decision": "approve", "scope": "requester"}),
        json!({"decision": "deny"}),
    ] {
        let (status, reply) = f
            .send(call(&f, Some("alice"), "POST", &decide, Some(body)))
            .await;
        assert_eq!(
            (status, code(&reply)),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{reply}"
        );
    }
    let seen = ok(&f, call(&f, Some("alice"), "GET", &show, None)).await;
    assert_eq!(seen["status"], "pending", "nothing was decided");

    // The operator sees it and decides it; the file lands in alice's folder.
    let list = ok(
        &f,
        call(&f, None, "GET", "/v1/approvals?status=pending", None),
    )
    .await;
    assert_eq!(ids(&list), std::slice::from_ref(&approval));
    provider.push(openai::CHAT_PATH, openai::text(&["Saved."]));
    let approve = json!({"decision": "approve"});
    ok(&f, call(&f, None, "POST", &decide, Some(approve))).await;
    wait_event(&f, "alice", &chat, "execution.finished").await;
    let home = f.runtime.home().path();
    assert_eq!(
        std::fs::read_to_string(home.join("users/alice/alice.txt")).unwrap(),
        "milk\n"
    );
    assert!(
        !home.join("alice.txt").exists(),
        "never in the operator's home"
    );
}

#[tokio::test]
async fn mcp_refuses_requests_with_proxy_headers() {
    let provider = FakeServer::start().await;
    let f = daemon_with(&provider, |_| {}).await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "1"}}
    });
    let post = |headers: &[(&str, &str)]| {
        let mut request = Request::post("/mcp")
            .header(header::HOST, BOUND)
            .header(header::AUTHORIZATION, format!("Bearer {}", f.token))
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(Body::from(initialize.to_string())).unwrap()
    };
    for headers in [
        &[("X-Souz-Proxy-Auth", SECRET), ("X-User-Id", "alice")][..],
        &[("X-User-Id", "alice")][..],
        &[("X-Souz-Proxy-Auth", "wrong")][..],
    ] {
        let (status, body) = f.send(post(headers)).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{headers:?}"
        );
    }
    // Without them, the operator's MCP client is served.
    let response = f.app().oneshot(post(&[])).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executions_trace_shows_its_turn_to_its_user_alone() {
    let provider = FakeServer::start().await;
    let f = daemon_with(&provider, |_| {}).await;
    store_key(&f, "alice", ALICE_KEY).await;
    store_key(&f, "bob", BOB_KEY).await;
    let bob_chat = new_chat(&f, "bob").await;
    tool_result(
        &f,
        &provider,
        "bob",
        &bob_chat,
        "ListFiles",
        json!({"path": "~"}),
    )
    .await;
    settle(&f, "bob", &bob_chat).await;
    let finished = wait_event(&f, "bob", &bob_chat, "execution.finished").await;
    let execution = finished["executionId"].as_str().unwrap();
    let path = format!("/v1/chats/{bob_chat}/executions/{execution}/trace");

    let trace = ok(&f, call(&f, Some("bob"), "GET", &path, None)).await;
    assert_eq!(trace["executionId"], execution);
    let turns = trace["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{trace}");
    assert_eq!(turns[0]["status"], "completed");
    let steps = turns[0]["steps"].as_array().unwrap();
    let models: Vec<&Value> = steps.iter().filter(|s| s["kind"] == "model").collect();
    assert_eq!(models.len(), 2, "two model requests: {trace}");
    assert_eq!(
        models[0]["added"][0]["toolCalls"][0]["name"], "RunSkillCommand",
        "{trace}"
    );
    assert!(
        models[1]["prompt"]
            .as_array()
            .unwrap()
            .iter()
            .any(|message| message["role"] == "tool" && message["tool"] == "RunSkillCommand"),
        "the second request was sent with the tool's result: {trace}"
    );
    assert!(
        !trace.to_string().contains(BOB_KEY),
        "no provider key in a trace"
    );

    // Another user does not see the chat, so not its executions either.
    let (status, body) = f.send(call(&f, Some("alice"), "GET", &path, None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(code(&body), "chat_not_found");
    let absent =
        format!("/v1/chats/{bob_chat}/executions/0190f5a0-0000-7000-8000-000000000000/trace");
    let (status, body) = f.send(call(&f, Some("bob"), "GET", &absent, None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(code(&body), "execution_not_found");
}
