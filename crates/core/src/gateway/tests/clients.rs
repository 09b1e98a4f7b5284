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
