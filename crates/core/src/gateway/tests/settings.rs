//! The routes the menu-bar app and the web UI add: the settings editor, the pause switch, live
//! turns, the embedded UI, and the browser's WebSocket token subprotocol.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::chat::turns::{Turn, TurnEngine, TurnEvent, TurnOutcome};

fn request(f: &Fixture, method: &str, path: &str, body: Option<&Value>) -> Request<Body> {
    let builder = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, BOUND)
        .header(header::AUTHORIZATION, format!("Bearer {}", f.token));
    match body {
        Some(body) => builder
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
        None => builder.body(Body::empty()).unwrap(),
    }
}

fn config_file(f: &Fixture) -> std::path::PathBuf {
    f.runtime.handle().config().paths.config_file()
}

#[tokio::test]
async fn config_document_lists_the_schema_and_what_applies_live() {
    let f = Fixture::new().await;
    std::fs::write(config_file(&f), "[approvals]\nwrite = \"allow\" # mine\n").unwrap();
    let (status, _) = f
        .send(f.get("/v1/config").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, doc) = f.send(request(&f, "GET", "/v1/config", None)).await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    assert_eq!(doc["text"], "[approvals]\nwrite = \"allow\" # mine\n");
    assert_eq!(doc["revision"].as_str().unwrap().len(), 64);
    let approvals = doc["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "approvals")
        .unwrap();
    let write = approvals["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "write")
        .unwrap();
    assert_eq!(write["value"], "allow");
    assert_eq!(write["setInFile"], true);
    assert_eq!(write["live"], true);
    let server = doc["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "server")
        .unwrap();
    let port = server["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "port")
        .unwrap();
    assert_eq!(port["kind"], "integer");
    assert_eq!(port["live"], false);
    assert_eq!(port["setInFile"], false);
    assert!(
        doc["liveKeys"]
            .as_array()
            .unwrap()
            .contains(&json!("approvals.rules"))
    );
}

#[tokio::test]
async fn invalid_config_is_rejected_with_positions_and_nothing_is_written() {
    let f = Fixture::new().await;
    let original = "[server]\nport = 9000\n";
    std::fs::write(config_file(&f), original).unwrap();
    let body = json!({"text": "[server]\nport = \"x\"\n\n[log]\nlevel = \"loud\"\n"});
    let (status, rejected) = f.send(request(&f, "PUT", "/v1/config", Some(&body))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{rejected}");
    assert_eq!(code(&rejected), "invalid_request");
    let problems = rejected["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(
        (problems[0]["line"].as_u64(), problems[0]["column"].as_u64()),
        (Some(2), Some(8))
    );
    assert_eq!(problems[1]["line"], 5);
    assert!(problems[1]["message"].as_str().unwrap().contains("loud"));
    assert!(
        problems[0]["display"]
            .as_str()
            .unwrap()
            .contains("config.toml:2:8:")
    );
    assert_eq!(std::fs::read_to_string(config_file(&f)).unwrap(), original);
    assert!(!config_file(&f).with_extension("toml.bak").exists());

    // Not TOML at all: one problem at the syntax error.
    let body = json!({"text": "[server\nport = 1\n"});
    let (status, rejected) = f.send(request(&f, "PUT", "/v1/config", Some(&body))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(rejected["problems"][0]["line"], 1);
    assert_eq!(std::fs::read_to_string(config_file(&f)).unwrap(), original);
}

#[tokio::test]
async fn saving_applies_approval_rules_live_and_reports_restarts() {
    let f = Fixture::new().await;
    let original = "# keep me\n[server]\nport = 9000\n";
    std::fs::write(config_file(&f), original).unwrap();
    let handle = f.runtime.handle();
    let before = handle
        .approvals()
        .effective("NewFile", souz_protocol::Risk::Write, true);
    assert_eq!(before.action, souz_protocol::Action::Ask);

    let (_, doc) = f.send(request(&f, "GET", "/v1/config", None)).await;
    let text = "# keep me\n[server]\nport = 9001\n\n[approvals]\nwrite = \"allow\"\n";
    let body = json!({"text": text, "revision": doc["revision"]});
    let (status, saved) = f.send(request(&f, "PUT", "/v1/config", Some(&body))).await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    assert_eq!(saved["applied"], json!(["approvals.write"]));
    assert_eq!(saved["restartRequired"], json!(["server.port"]));
    assert_eq!(std::fs::read_to_string(config_file(&f)).unwrap(), text);
    assert_eq!(
        std::fs::read_to_string(config_file(&f).with_extension("toml.bak")).unwrap(),
        original
    );
    let after = handle
        .approvals()
        .effective("NewFile", souz_protocol::Risk::Write, true);
    assert_eq!(
        after.action,
        souz_protocol::Action::Allow,
        "applied without a restart"
    );
    let (_, doc) = f.send(request(&f, "GET", "/v1/config", None)).await;
    assert_eq!(doc["pendingRestart"], json!(["server.port"]));

    // A stale revision is refused and nothing is written.
    let body = json!({"text": "", "revision": saved["revision"].as_str().unwrap().replace('a', "b").replace('0', "1")});
    let (status, conflict) = f.send(request(&f, "PUT", "/v1/config", Some(&body))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{conflict}");
    assert_eq!(std::fs::read_to_string(config_file(&f)).unwrap(), text);
}

#[tokio::test]
async fn a_change_sends_back_the_revision_by_the_name_get_gives_it() {
    let f = Fixture::new().await;
    std::fs::write(config_file(&f), "[approvals]\ntimeout_seconds = 60\n").unwrap();
    let (_, doc) = f.send(request(&f, "GET", "/v1/config", None)).await;
    let current = doc["revision"].as_str().unwrap().to_owned();
    let stale = "not-the-current-revision";
    let text = "[approvals]\ntimeout_seconds = 90\n";
    for (name, method, body) in [
        ("revision", "PUT", json!({"text": text})),
        (
            "revision",
            "PATCH",
            json!({"set": [{"section": "approvals", "key": "timeout_seconds", "value": 90}]}),
        ),
        // The former name, accepted for one release.
        ("baseRevision", "PUT", json!({"text": text})),
    ] {
        let mut stale_body = body.clone();
        stale_body[name] = json!(stale);
        let (status, conflict) = f
            .send(request(&f, method, "/v1/config", Some(&stale_body)))
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{method} {name}: {conflict}");
        let (_, doc) = f.send(request(&f, "GET", "/v1/config", None)).await;
        let mut body = body;
        body[name] = doc["revision"].clone();
        let (status, saved) = f.send(request(&f, method, "/v1/config", Some(&body))).await;
        assert_eq!(status, StatusCode::OK, "{method} {name}: {saved}");
        assert!(saved["revision"].is_string(), "{saved}");
    }
    let both = json!({"text": text, "revision": current, "baseRevision": current});
    let (status, _) = f.send(request(&f, "PUT", "/v1/config", Some(&both))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "one name at a time");
}

#[tokio::test]
async fn patch_sets_and_resets_keys_keeping_comments() {
    let f = Fixture::new().await;
    std::fs::write(
        config_file(&f),
        "# mine\n[approvals]\n# why\nexec = \"deny\"\n",
    )
    .unwrap();
    let body = json!({"set": [
        {"section": "approvals", "key": "timeout_seconds", "value": 60},
        {"section": "approvals", "key": "exec", "value": null},
        {"section": "sandbox", "key": "network_allow_hosts", "value": ["intranet.example"]},
        {"section": "server", "key": "port", "value": 9111},
    ]});
    let (status, saved) = f
        .send(request(&f, "PATCH", "/v1/config", Some(&body)))
        .await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    assert_eq!(
        saved["applied"],
        json!([
            "approvals.exec",
            "approvals.timeout_seconds",
            "sandbox.network_allow_hosts"
        ])
    );
    assert_eq!(saved["restartRequired"], json!(["server.port"]));
    let written = std::fs::read_to_string(config_file(&f)).unwrap();
    assert!(written.starts_with("# mine\n[approvals]\n"), "{written}");
    assert!(written.contains("timeout_seconds = 60"), "{written}");
    assert!(!written.contains("exec ="), "{written}");
    assert!(
        written.contains("network_allow_hosts = [\"intranet.example\"]"),
        "{written}"
    );
    assert_eq!(f.runtime.handle().approvals().timeout().as_secs(), 60);

    // An invalid value: 400 with the position in the resulting text, nothing written.
    let body =
        json!({"set": [{"section": "approvals", "key": "timeout_seconds", "value": "soon"}]});
    let (status, rejected) = f
        .send(request(&f, "PATCH", "/v1/config", Some(&body)))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{rejected}");
    let line = rejected["problems"][0]["line"].as_u64().unwrap() as usize;
    let text = rejected["text"].as_str().unwrap();
    assert!(
        text.lines()
            .nth(line - 1)
            .unwrap()
            .contains("timeout_seconds = \"soon\"")
    );
    assert_eq!(std::fs::read_to_string(config_file(&f)).unwrap(), written);

    // Unknown keys are refused before anything is tried.
    let body = json!({"set": [{"section": "approvals", "key": "nope", "value": 1}]});
    let (status, rejected) = f
        .send(request(&f, "PATCH", "/v1/config", Some(&body)))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        rejected["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope")
    );
}

/// Starts a call that asks and returns its approval id once it waits for a person.
async fn start_asking_call(f: &Fixture, call: &Value) -> String {
    let (status, started) = f
        .send(request(f, "POST", "/v1/tool-calls", Some(call)))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let call_id = started["id"].as_str().unwrap().to_owned();
    for _ in 0..200 {
        let (_, call) = f
            .send(request(
                f,
                "GET",
                &format!("/v1/tool-calls/{call_id}"),
                None,
            ))
            .await;
        if let Some(id) = call["approval_id"].as_str() {
            return id.to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the call never asked");
}

/// Turns that wait until cancelled, streaming one delta first.
struct Waiting;

impl TurnEngine for Waiting {
    fn run(
        &self,
        _: Turn,
        events: mpsc::UnboundedSender<TurnEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, TurnOutcome> {
        Box::pin(async move {
            let _ = events.send(TurnEvent::Delta {
                attempt: 0,
                text: "thinking".into(),
            });
            cancel.cancelled().await;
            TurnOutcome::Cancelled {
                usage: Default::default(),
            }
        })
    }
}

#[tokio::test]
#[allow(clippy::too_many_lines, reason = "one scenario, step by step")]
async fn pause_denies_asks_stops_turns_and_refuses_new_ones_until_resumed() {
    let f = Fixture::with(|config| config.llm.local_models = vec!["ollama/llama3.2".into()]).await;
    let handle = f.runtime.handle();
    handle.chats().set_engine(Arc::new(Waiting));
    let (_, chat) = f
        .send(request(
            &f,
            "POST",
            "/v1/chats",
            Some(&json!({"title": "t"})),
        ))
        .await;
    let chat_id = chat["chat"]["id"].as_str().unwrap().to_owned();
    let (status, posted) = f
        .send(request(
            &f,
            "POST",
            &format!("/v1/chats/{chat_id}/messages"),
            Some(&json!({"content": "work"})),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{posted}");
    let (_, turns) = f.send(request(&f, "GET", "/v1/turns", None)).await;
    assert_eq!(turns["items"].as_array().unwrap().len(), 1, "{turns}");
    assert_eq!(turns["items"][0]["chatTitle"], "t");
    assert_eq!(turns["items"][0]["afterSeq"], 0);

    // A call that asks, waiting for a person.
    let home = handle.config().paths.user_home().to_owned();
    let target = home.join("note.txt");
    let call = json!({"tool": "NewFile", "arguments": {"path": target, "text": "x"}, "wait_ms": 0});
    let approval_id = start_asking_call(&f, &call).await;

    let (status, paused) = f
        .send(request(
            &f,
            "PUT",
            "/v1/pause",
            Some(&json!({"paused": true, "via": "ui"})),
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!(paused["paused"], true);
    let (_, approval) = f
        .send(request(
            &f,
            "GET",
            &format!("/v1/approvals/{approval_id}"),
            None,
        ))
        .await;
    assert_eq!(approval["status"], "expired");
    assert_eq!(approval["expiry_reason"], "paused");
    // The running turn was cancelled.
    let mut cancelled = false;
    for _ in 0..100 {
        let (_, turns) = f.send(request(&f, "GET", "/v1/turns", None)).await;
        if turns["items"].as_array().unwrap().is_empty() {
            cancelled = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(cancelled, "the turn was not stopped");
    // New asks are denied without asking; new turns are refused.
    let mut waited = call.clone();
    waited["wait_ms"] = json!(10_000);
    let (status, denied) = f
        .send(request(&f, "POST", "/v1/tool-calls", Some(&waited)))
        .await;
    assert_eq!(status, StatusCode::OK, "{denied}");
    assert_eq!(denied["status"], "denied");
    assert!(denied["approval_id"].is_null());
    assert!(!target.exists());
    let (status, refused) = f
        .send(request(
            &f,
            "POST",
            &format!("/v1/chats/{chat_id}/messages"),
            Some(&json!({"content": "again"})),
        ))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(code(&refused), "paused");
    // The pause survives a restart of the runtime's view (it is stored).
    let stored = handle.store().read(crate::bus::pause::load).await.unwrap();
    assert!(stored.is_some());

    let (_, resumed) = f
        .send(request(
            &f,
            "PUT",
            "/v1/pause",
            Some(&json!({"paused": false})),
        ))
        .await;
    assert_eq!(resumed["paused"], false);
    let again = start_asking_call(&f, &call).await;
    assert_ne!(again, approval_id, "asks again after resuming");
    let events = handle.events().replay(0, 1000).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.event.kind()).collect();
    assert!(
        kinds.contains(&"daemon.paused") && kinds.contains(&"daemon.resumed"),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn the_web_ui_is_public_with_a_strict_policy_behind_the_host_check() {
    let f = Fixture::new().await;
    let response = f
        .app()
        .oneshot(f.get("/app").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(response.headers()[header::LOCATION], "/app/");

    for (path, kind) in [
        ("/app/", "text/html"),
        ("/app/app.js", "text/javascript"),
        ("/app/app.css", "text/css"),
    ] {
        let response = f
            .app()
            .oneshot(f.get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let headers = response.headers();
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with(kind)
        );
        let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"));
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    }
    let response = f
        .app()
        .oneshot(f.get("/app/").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let html = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let html = String::from_utf8(html.to_vec()).unwrap();
    assert!(html.contains("<script type=\"module\" src=\"app.js\">"));
    assert!(
        !html.contains("https://"),
        "the UI loads nothing from elsewhere"
    );

    let (status, body) = f
        .send(f.get("/app/secret.txt").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code(&body), "not_found");
    let foreign = Request::get("/app/")
        .header(header::HOST, "evil.example:8383")
        .body(Body::empty())
        .unwrap();
    assert_eq!(f.send(foreign).await.0, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn browsers_present_the_token_as_a_websocket_subprotocol() {
    let f = Fixture::new().await;
    let served = serve(&f).await;
    let connect = |protocols: String, origin: Option<&'static str>| {
        let url = format!("ws://{}/v1/events?tail=true", served.address);
        let mut request = url.into_client_request().unwrap();
        request
            .headers_mut()
            .insert(header::SEC_WEBSOCKET_PROTOCOL, protocols.parse().unwrap());
        if let Some(origin) = origin {
            request
                .headers_mut()
                .insert(header::ORIGIN, origin.parse().unwrap());
        }
        tokio_tungstenite::connect_async(request)
    };

    let origin = Some("tauri://localhost");
    let (mut socket, response) = connect(format!("souz, souz.token.{}", f.token), origin)
        .await
        .unwrap();
    assert_eq!(response.headers()[header::SEC_WEBSOCKET_PROTOCOL], "souz");
    let first = next_json(&mut socket).await;
    assert_eq!(first["type"], "live", "tail=true replays nothing: {first}");

    match connect(format!("souz, souz.token.{}x", f.token), origin).await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 401),
        other => panic!("expected 401, got {other:?}"),
    }
    // A foreign page is refused before its token is looked at.
    match connect(
        format!("souz, souz.token.{}", f.token),
        Some("https://evil.example"),
    )
    .await
    {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 403),
        other => panic!("expected 403, got {other:?}"),
    }
    // The subprotocol is not a way to authenticate plain requests.
    let plain = Request::get("/v1/pause")
        .header(header::HOST, BOUND)
        .header(
            header::SEC_WEBSOCKET_PROTOCOL,
            format!("souz, souz.token.{}", f.token),
        )
        .body(Body::empty())
        .unwrap();
    assert_eq!(f.send(plain).await.0, StatusCode::UNAUTHORIZED);
    let _ = served.stop.send(());
    let _ = served.server.await;
}

#[tokio::test]
async fn the_all_chats_stream_carries_deltas_of_the_users_turns() {
    let f = Fixture::with(|config| config.llm.local_models = vec!["ollama/llama3.2".into()]).await;
    f.runtime.handle().chats().set_engine(Arc::new(Waiting));
    let served = serve(&f).await;
    let mut upgrade = format!("ws://{}/v1/turns/ws", served.address)
        .into_client_request()
        .unwrap();
    upgrade.headers_mut().insert(
        header::AUTHORIZATION,
        format!("Bearer {}", f.token).parse().unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(upgrade).await.unwrap();
    assert_eq!(next_json(&mut socket).await["kind"], "live");
    let (_, chat) = f
        .send(request(&f, "POST", "/v1/chats", Some(&json!({}))))
        .await;
    let chat_id = chat["chat"]["id"].as_str().unwrap().to_owned();
    let (status, _) = f
        .send(request(
            &f,
            "POST",
            &format!("/v1/chats/{chat_id}/messages"),
            Some(&json!({"content": "go"})),
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    let mut kinds = Vec::new();
    while kinds.len() < 3 {
        let frame = next_json(&mut socket).await;
        assert_eq!(frame["kind"], "event");
        assert_eq!(frame["chatId"], chat_id.as_str());
        kinds.push(frame["type"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        kinds,
        ["message.created", "execution.started", "message.delta"]
    );
    let _ = served.stop.send(());
    let _ = served.server.await;
}
