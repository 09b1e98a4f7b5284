//! Credentials by capability: MCP client tokens reach `/mcp` only, the operator token
//! everything; the identity proof; the web UI's one-time codes.

use super::*;
use crate::token::proof;

impl Fixture {
    async fn request_as(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, BOUND)
            .header(header::AUTHORIZATION, format!("Bearer {token}"));
        let request = match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => request.body(Body::empty()),
        };
        self.send(request.unwrap()).await
    }

    /// The status of an MCP `initialize` sent with `token` (the body, a stream, is not read).
    async fn mcp_initialize_status(&self, token: &str) -> StatusCode {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "the souz CLI", "version": "1"},
            },
        });
        let request = Request::post("/mcp")
            .header(header::HOST, BOUND)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        self.app().oneshot(request).await.unwrap().status()
    }

    async fn new_client(&self, name: &str) -> Value {
        let (status, created) = self
            .request_as(
                &self.token,
                "POST",
                "/v1/clients",
                Some(serde_json::json!({"name": name})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created
    }
}

#[tokio::test]
async fn a_client_token_reaches_mcp_only() {
    let f = Fixture::new().await;
    let created = f.new_client("claude-code").await;
    let token = created["token"].as_str().unwrap().to_owned();
    assert_eq!(created["name"], "claude-code");
    let missing = uuid::Uuid::now_v7();
    let decision = serde_json::json!({"decision": "approve"});
    let config = serde_json::json!({});
    let forbidden: Vec<(&str, String, Option<Value>)> = vec![
        (
            "POST",
            format!("/v1/approvals/{missing}/decision"),
            Some(decision.clone()),
        ),
        ("GET", "/v1/approvals".into(), None),
        ("PUT", "/v1/config".into(), Some(config.clone())),
        ("PATCH", "/v1/config".into(), Some(config.clone())),
        ("GET", "/v1/config".into(), None),
        ("GET", "/v1/grants".into(), None),
        ("DELETE", format!("/v1/grants/{missing}"), None),
        (
            "PUT",
            "/v1/pause".into(),
            Some(serde_json::json!({"paused": true})),
        ),
        ("GET", "/v1/clients".into(), None),
        (
            "POST",
            "/v1/clients".into(),
            Some(serde_json::json!({"name": "x"})),
        ),
        ("POST", "/v1/ui-codes".into(), None),
        (
            "POST",
            "/v1/speech/models/whisper-tiny/pull".into(),
            Some(serde_json::json!({})),
        ),
        ("DELETE", "/v1/speech/models/whisper-tiny".into(), None),
        ("GET", "/v1/bootstrap".into(), None),
        ("GET", "/v1/setup".into(), None),
        (
            "PUT",
            "/v1/setup".into(),
            Some(serde_json::json!({"completed": true})),
        ),
        ("GET", "/v1/setup/local-servers".into(), None),
        ("GET", "/v1/connect".into(), None),
        ("POST", "/v1/restart".into(), None),
        ("POST", "/v1/connect/claude-code".into(), None),
        ("GET", "/v1/connect/claude-desktop".into(), None),
        (
            "POST",
            "/v1/connect/claude-desktop".into(),
            Some(serde_json::json!({"revision": "x"})),
        ),
    ];
    for (method, path, body) in forbidden {
        let (status, answer) = f.request_as(&token, method, &path, body.clone()).await;
        assert_eq!(
            (status, code(&answer)),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{method} {path}: {answer}"
        );
    }
    // The operator token still reaches them (a missing approval is 404, not 403).
    let (status, _) = f
        .request_as(
            &f.token,
            "POST",
            &format!("/v1/approvals/{missing}/decision"),
            Some(decision),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    assert_eq!(f.mcp_initialize_status(&token).await, StatusCode::OK);
    assert_eq!(f.mcp_initialize_status(&f.token).await, StatusCode::OK);

    // Listed without the token; revoked, it is unknown (401), not forbidden.
    let (_, list) = f.request_as(&f.token, "GET", "/v1/clients", None).await;
    assert_eq!(list["items"][0]["id"], created["id"]);
    assert!(!list.to_string().contains(&token));
    let id = created["id"].as_str().unwrap();
    let (status, _) = f
        .request_as(&f.token, "DELETE", &format!("/v1/clients/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        f.mcp_initialize_status(&token).await,
        StatusCode::UNAUTHORIZED
    );
    let (status, answer) = f.request_as(&token, "GET", "/v1/grants", None).await;
    assert_eq!(
        (status, code(&answer)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    let (status, _) = f
        .request_as(&f.token, "DELETE", &format!("/v1/clients/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn client_names_are_checked() {
    let f = Fixture::new().await;
    f.new_client("claude-code").await;
    for (name, expected) in [
        ("claude-code", StatusCode::CONFLICT),
        ("operator", StatusCode::BAD_REQUEST),
        ("a b", StatusCode::BAD_REQUEST),
    ] {
        let (status, body) = f
            .request_as(
                &f.token,
                "POST",
                "/v1/clients",
                Some(serde_json::json!({"name": name})),
            )
            .await;
        assert_eq!(status, expected, "{name}: {body}");
    }
}

#[tokio::test]
async fn the_daemon_proves_its_identity_for_operator_and_client_tokens() {
    let f = Fixture::new().await;
    let client = f.new_client("claude-desktop").await;
    let nonce = proof::new_nonce().unwrap();
    for token in [
        f.token.clone(),
        client["token"].as_str().unwrap().to_owned(),
    ] {
        let digest = proof::digest(&token);
        let key = proof::key_id(&digest);
        // Public: no Authorization header.
        let (status, answer) = f
            .send(
                f.get(&format!("/v1/identity?nonce={nonce}&key={key}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let answer = answer["proof"].as_str().unwrap();
        assert!(souz_protocol::identity::verify(
            &digest, &nonce, BOUND, answer
        ));
        assert!(!souz_protocol::identity::verify(
            &digest,
            &nonce,
            "127.0.0.1:9999",
            answer
        ));
        assert!(!answer.contains(&token));
    }
    let unknown = proof::key_id(&proof::digest("not-a-token-of-this-daemon"));
    let (status, _) = f
        .send(
            f.get(&format!("/v1/identity?nonce={nonce}&key={unknown}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = f
        .send(
            f.get(&format!("/v1/identity?nonce=short&key={unknown}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_ui_code_signs_in_once_and_only_from_a_page() {
    let f = Fixture::new().await;
    let (status, issued) = f.request_as(&f.token, "POST", "/v1/ui-codes", None).await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    let sign_in = issued["code"].as_str().unwrap();
    assert!(!sign_in.contains(&f.token));
    let without_origin = |code: &str| {
        f.get("/v1/ui-codes/exchange")
            .method("POST")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::json!({"code": code}).to_string()))
            .unwrap()
    };
    let exchange = |code: &str| {
        f.get("/v1/ui-codes/exchange")
            .method("POST")
            .header(header::ORIGIN, format!("http://{BOUND}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::json!({"code": code}).to_string()))
            .unwrap()
    };
    // Not from a page (a script that read the code somewhere): refused, the code kept.
    let (status, refused) = f.send(without_origin(sign_in)).await;
    assert_eq!(
        (status, code(&refused)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    let (status, session) = f.send(exchange(sign_in)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(session["token"], f.token.as_str());
    let (status, again) = f.send(exchange(sign_in)).await;
    assert_eq!(
        (status, code(&again)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    let (status, _) = f.send(exchange("0123456789abcdef0123456789abcdef")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn connect_claude_code_gives_a_working_command_and_revokes_the_previous_one() {
    let f = Fixture::new().await;
    let (status, listed) = f.request_as(&f.token, "GET", "/v1/connect", None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["clients"], serde_json::json!([]));
    assert_eq!(listed["desktopConfigured"], false);

    let command = |answer: &Value| {
        let safe = answer["command"].as_str().unwrap();
        assert!(
            safe.starts_with("claude mcp add-json --scope user souz '"),
            "{safe}"
        );
        assert!(safe.contains("mcp-headers"), "{safe}");
        assert!(
            !safe.contains("souz_client_"),
            "no token in the command: {safe}"
        );
        let command = answer["headerCommand"].as_str().unwrap().to_owned();
        let prefix = format!(
            "claude mcp add --transport http souz http://{BOUND}/mcp --header \"Authorization: Bearer "
        );
        assert!(command.starts_with(&prefix), "{command}");
        command[prefix.len()..command.len() - 1].to_owned()
    };
    let (status, first) = f
        .request_as(&f.token, "POST", "/v1/connect/claude-code", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let first = command(&first);
    assert_eq!(f.mcp_initialize_status(&first).await, StatusCode::OK);
    let (_, second) = f
        .request_as(&f.token, "POST", "/v1/connect/claude-code", None)
        .await;
    let second = command(&second);
    assert_eq!(f.mcp_initialize_status(&second).await, StatusCode::OK);
    assert_eq!(
        f.mcp_initialize_status(&first).await,
        StatusCode::UNAUTHORIZED,
        "the previous command's token is revoked"
    );
    let (_, listed) = f.request_as(&f.token, "GET", "/v1/connect", None).await;
    let clients = listed["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 1, "{listed}");
    assert_eq!(clients[0]["name"], "claude-code");
    assert_eq!(clients[0]["calls"], 0);
    assert!(
        !listed.to_string().contains(&second),
        "tokens are never listed"
    );
    let home = f.runtime.handle().config().paths.clone();
    let file = std::fs::read_to_string(home.client_token("claude-code")).unwrap();
    assert_eq!(
        file.trim(),
        second,
        "souz mcp-headers reads the current token"
    );
    assert_eq!(
        clients[0]["memory"], "ask",
        "reading memory asks once by default"
    );

    // The choice about reading memory, per client.
    let id = clients[0]["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/connect/clients/{id}/memory");
    for access in ["deny", "allow", "ask"] {
        let body = serde_json::json!({ "access": access });
        let (status, answer) = f.request_as(&f.token, "PUT", &path, Some(body)).await;
        assert_eq!(
            (status, answer["access"].as_str()),
            (StatusCode::OK, Some(access))
        );
        let (_, listed) = f.request_as(&f.token, "GET", "/v1/connect", None).await;
        assert_eq!(listed["clients"][0]["memory"], access, "{listed}");
    }
    let (_, grants) = f.request_as(&f.token, "GET", "/v1/grants", None).await;
    assert_eq!(
        grants["items"],
        serde_json::json!([]),
        "ask leaves no grant: {grants}"
    );
    let (status, _) = f
        .request_as(
            &f.token,
            "PUT",
            "/v1/connect/clients/nobody/memory",
            Some(serde_json::json!({"access": "allow"})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn claude_desktop_is_not_touched_without_the_bridge_binary_or_with_a_stale_revision() {
    // The test runtime names no `souz` binary: nothing can be added, and nothing is written.
    let f = Fixture::new().await;
    let path =
        crate::runtime::connect::desktop_config_path(f.runtime.handle().config().paths.user_home());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{\"mcpServers\": {\"files\": {}}}").unwrap();
    let (status, answer) = f
        .request_as(&f.token, "GET", "/v1/connect/claude-desktop", None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    let (status, _) = f
        .request_as(
            &f.token,
            "POST",
            "/v1/connect/claude-desktop",
            Some(serde_json::json!({"revision": "0"})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"mcpServers\": {\"files\": {}}}"
    );
}

/// A pending approval asked by a turn of `chat_id` (as the gate asks one).
async fn pending_approval_of_chat(f: &Fixture, chat_id: &str) -> String {
    use crate::approvals::NewApproval;
    use souz_protocol::{ArgumentMatch, Requester, Risk, ScopeKind, SuggestedScope};
    let handle = f.runtime.handle();
    let call_id = uuid::Uuid::now_v7().to_string();
    let row = call_id.clone();
    handle
        .store()
        .write(move |tx| {
            tx.execute(
                "INSERT INTO tool_calls (id, tool, requester, arguments, status, created_at) \
                 VALUES (?1, 'NewFile', '{\"kind\":\"cli\"}', '{}', 'waiting_approval', 'now')",
                rusqlite::params![row],
            )
            .map_err(crate::store::StoreError::from)
        })
        .await
        .unwrap();
    let pending = handle
        .approvals()
        .request(NewApproval {
            call_id,
            requester: Requester::Chat {
                chat_id: chat_id.to_owned(),
            },
            tool: "NewFile".into(),
            server: None,
            risk: Risk::Write,
            arguments: serde_json::json!({"path": "~/a.txt"}),
            summary: "NewFile ~/a.txt".into(),
            diff: None,
            reason: "writing tools ask by default".into(),
            suggested: SuggestedScope {
                scope: ScopeKind::Requester,
                minutes: None,
                argument_match: ArgumentMatch::default(),
                tool_group: None,
                label: "x".into(),
            },
            parked: None,
        })
        .await
        .unwrap();
    pending.approval.id.clone()
}

/// A `chats` client `zed`, a chat of the person's (made with request id `r-1`) and one the
/// client made: (its token, its id, the person's chat, the client's chat).
async fn a_chats_client_and_two_chats(f: &Fixture) -> (String, String, String, String) {
    let (status, created) = f
        .request_as(
            &f.token,
            "POST",
            "/v1/clients",
            Some(serde_json::json!({"name": "zed", "scope": "chats"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["scope"], "chats");
    let token = created["token"].as_str().unwrap().to_owned();
    let (_, list) = f.request_as(&f.token, "GET", "/v1/clients", None).await;
    assert_eq!(list["items"][0]["scope"], "chats", "{list}");

    // The person's own chat, and one the client makes (the person sees both).
    let (_, theirs) = f
        .request_as(
            &f.token,
            "POST",
            "/v1/chats",
            Some(serde_json::json!({"title": "Private", "requestId": "r-1"})),
        )
        .await;
    let theirs = theirs["chat"]["id"].as_str().unwrap().to_owned();
    let (status, made) = f
        .request_as(
            &token,
            "POST",
            "/v1/chats",
            Some(serde_json::json!({"title": "Zed: souz"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let mine = made["chat"]["id"].as_str().unwrap().to_owned();
    let (_, listed) = f
        .request_as(&f.token, "GET", "/v1/chats?limit=100", None)
        .await;
    assert!(listed.to_string().contains(&mine), "{listed}");
    (
        token,
        created["id"].as_str().unwrap().to_owned(),
        theirs,
        mine,
    )
}

#[tokio::test]
async fn a_chats_client_reaches_the_chats_it_made_only() {
    let f = Fixture::new().await;
    let (token, _, theirs, mine) = a_chats_client_and_two_chats(&f).await;
    // Replaying the person's request id does not hand the client the person's chat.
    let (status, replayed) = f
        .request_as(
            &token,
            "POST",
            "/v1/chats",
            Some(serde_json::json!({"title": "Private", "requestId": "r-1"})),
        )
        .await;
    assert_eq!(
        (status, code(&replayed)),
        (StatusCode::CONFLICT, "idempotency_conflict"),
        "{replayed}"
    );

    // Its own chat: read, cancel (nothing runs: the handler says so).
    for (method, path, expected) in [
        ("GET", format!("/v1/chats/{mine}/messages"), StatusCode::OK),
        (
            "GET",
            format!("/v1/chats/{mine}/events?afterSeq=0"),
            StatusCode::OK,
        ),
        ("GET", format!("/v1/chats/{mine}/threads"), StatusCode::OK),
        (
            "POST",
            format!("/v1/chats/{mine}/cancel-active"),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let body = (method == "POST").then(|| serde_json::json!({}));
        let (status, answer) = f.request_as(&token, method, &path, body).await;
        assert_eq!(status, expected, "{method} {path}: {answer}");
    }
    // The person's chat is not found, as a missing one is.
    let missing = uuid::Uuid::now_v7();
    for chat in [theirs.as_str(), &missing.to_string()] {
        for (method, path) in [
            ("GET", format!("/v1/chats/{chat}/messages")),
            ("POST", format!("/v1/chats/{chat}/cancel-active")),
            ("POST", format!("/v1/chats/{chat}/messages")),
        ] {
            let body = (method == "POST").then(|| serde_json::json!({"content": "hi"}));
            let (status, answer) = f.request_as(&token, method, &path, body).await;
            assert_eq!(
                (status, code(&answer)),
                (StatusCode::NOT_FOUND, "chat_not_found"),
                "{method} {path}: {answer}"
            );
        }
    }
    // Everything else is closed, its own chat's other routes included.
    for (method, path, body) in [
        ("GET", "/v1/chats".to_owned(), None),
        ("GET", "/v1/approvals".to_owned(), None),
        ("GET", "/v1/turns".to_owned(), None),
        ("GET", "/v1/me/settings".to_owned(), None),
        ("GET", "/v1/config".to_owned(), None),
        ("GET", "/v1/clients".to_owned(), None),
        ("GET", "/v1/bootstrap".to_owned(), None),
        ("DELETE", format!("/v1/chats/{mine}"), None),
        (
            "PUT",
            format!("/v1/chats/{mine}/settings"),
            Some(serde_json::json!({})),
        ),
        ("GET", format!("/v1/chats/{mine}/settings"), None),
        ("POST", "/v1/restart".to_owned(), None),
    ] {
        let (status, answer) = f.request_as(&token, method, &path, body).await;
        assert_eq!(
            (status, code(&answer)),
            (StatusCode::FORBIDDEN, "forbidden"),
            "{method} {path}: {answer}"
        );
    }
    assert_eq!(f.mcp_initialize_status(&token).await, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_chats_client_reads_and_decides_its_own_chats_approvals_only() {
    let f = Fixture::new().await;
    let (token, id, theirs, mine) = a_chats_client_and_two_chats(&f).await;
    let missing = uuid::Uuid::now_v7();
    // Approvals: its chat's are its to read and decide; the person's are not found.
    let asked_mine = pending_approval_of_chat(&f, &mine).await;
    let asked_theirs = pending_approval_of_chat(&f, &theirs).await;
    let (_, absent) = f
        .request_as(&f.token, "GET", &format!("/v1/approvals/{missing}"), None)
        .await;
    for path in [
        format!("/v1/approvals/{asked_theirs}"),
        format!("/v1/approvals/{missing}"),
    ] {
        let (status, answer) = f.request_as(&token, "GET", &path, None).await;
        assert_eq!(
            (status, code(&answer)),
            (StatusCode::NOT_FOUND, code(&absent)),
            "{path}: {answer}"
        );
    }
    let decide = |approval: String, decision: &'static str| {
        let (f, token) = (&f, token.clone());
        async move {
            f.request_as(
                &token,
                "POST",
                &format!("/v1/approvals/{approval}/decision"),
                Some(serde_json::json!({"decision": decision, "via": "acp"})),
            )
            .await
        }
    };
    let (status, answer) = decide(asked_theirs.clone(), "approve").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    let (_, still) = f
        .request_as(
            &f.token,
            "GET",
            &format!("/v1/approvals/{asked_theirs}"),
            None,
        )
        .await;
    assert_eq!(still["status"], "pending", "untouched: {still}");
    let (status, seen) = f
        .request_as(&token, "GET", &format!("/v1/approvals/{asked_mine}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{seen}");
    let (status, decided) = decide(asked_mine.clone(), "deny").await;
    assert_eq!(status, StatusCode::OK, "{decided}");

    // Revoked, the token is unknown.
    f.request_as(&f.token, "DELETE", &format!("/v1/clients/{id}"), None)
        .await;
    let (status, _) = f
        .request_as(&token, "GET", &format!("/v1/chats/{mine}/messages"), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_chats_client_follows_the_events_of_its_own_chats_only() {
    let f = Fixture::new().await;
    let (_, created) = f
        .request_as(
            &f.token,
            "POST",
            "/v1/clients",
            Some(serde_json::json!({"name": "zed", "scope": "chats"})),
        )
        .await;
    let token = created["token"].as_str().unwrap().to_owned();
    let chat_as = |token: String| {
        let f = &f;
        async move {
            let (status, made) = f
                .request_as(&token, "POST", "/v1/chats", Some(serde_json::json!({})))
                .await;
            assert_eq!(status, StatusCode::CREATED, "{made}");
            made["chat"]["id"].as_str().unwrap().to_owned()
        }
    };
    let theirs = chat_as(f.token.clone()).await;
    let mine = chat_as(token.clone()).await;

    let served = serve(&f).await;
    let follow = |token: String| async move {
        let mut request = format!("ws://{}/v1/turns/ws", served.address)
            .into_client_request()
            .unwrap();
        request.headers_mut().insert(
            header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        assert_eq!(next_json(&mut socket).await["kind"], "live");
        socket
    };
    let mut client = follow(token).await;
    let mut person = follow(f.token.clone()).await;
    super::chat_stream::store_event(&f, &theirs, 1).await;
    super::chat_stream::store_event(&f, &mine, 2).await;
    // The person sees both; the client only its own (the first event it gets is the second).
    assert_eq!(next_json(&mut person).await["chatId"], theirs);
    assert_eq!(next_json(&mut person).await["chatId"], mine);
    let seen = next_json(&mut client).await;
    assert_eq!(seen["chatId"], mine, "{seen}");
    assert_eq!(seen["payload"]["n"], 2, "{seen}");
}
