//! Unit tests of the MCP server's pieces; the whole server is tested end to end with real
//! clients in `tests/e2e/mcp.rs`.

use axum::body::Bytes;
use axum::http::StatusCode;
use souz_protocol::{Action, ToolResult};

use super::calls::{META_APPROVAL_ID, META_STATUS, pending_result, tool_result};
use super::front::check;
use super::listing::{Listing, REQUIRES_USER_INTERACTION, mcp_tool, title};
use super::*;
use crate::config::RuleConfig;
use crate::testing::TestRuntime;
use crate::token::Credential;
use crate::token::clients::ClientIdentity;
use crate::tools::gate::CallState;

mod direct;
mod fast_path_equivalence;
mod memory;
mod schedules;
mod shortcut;
mod undo;

/// A client holding a token named `name` (and calling itself that too).
fn client(name: &str) -> Requester {
    let credential = Credential::Client(ClientIdentity {
        id: format!("id-{name}"),
        name: name.to_owned(),
        scope: souz_protocol::ClientScope::Mcp,
    });
    requester_for(
        Some(&credential),
        Some(&Implementation::new(name, "1.0")),
        "s".to_owned(),
    )
}

fn asks(tool: &rmcp::model::Tool) -> bool {
    tool.meta
        .as_ref()
        .and_then(|meta| meta.0.get(REQUIRES_USER_INTERACTION))
        == Some(&serde_json::Value::Bool(true))
}

fn rule(action: Action, tool: &str, requester: &str) -> RuleConfig {
    RuleConfig {
        action,
        tool: Some(tool.into()),
        path: None,
        command: None,
        domain: None,
        risk: None,
        requester: Some(requester.into()),
        note: None,
    }
}

#[tokio::test]
async fn the_listing_follows_the_policy_for_each_client() {
    let runtime = TestRuntime::builder()
        .flat_home()
        .with_config(|config| {
            config.approvals.rules.extend([
                rule(Action::Deny, "RunCommand", "mcp:claude-ai"),
                rule(Action::Allow, "RunCommand", "mcp:trusted"),
            ]);
        })
        .start()
        .await;
    let handle = runtime.handle();
    let listing = Listing::new(handle.tool_specs());
    let names = |tools: &[rmcp::model::Tool]| -> Vec<String> {
        tools.iter().map(|tool| tool.name.to_string()).collect()
    };

    let for_code = listing.tools(&handle, &client("claude-code"));
    let for_desktop = listing.tools(&handle, &client("claude-ai"));
    assert!(names(&for_code).contains(&"RunCommand".to_owned()));
    assert!(
        !names(&for_desktop).contains(&"RunCommand".to_owned()),
        "a tool denied for a client is not listed to it"
    );
    assert_eq!(
        names(&for_code).last().map(String::as_str),
        Some("AwaitApproval")
    );

    let by_name = |name: &str| for_code.iter().find(|tool| tool.name == name).unwrap();
    assert!(
        !asks(by_name("ListFiles")),
        "read-only tools run without asking"
    );
    assert!(asks(by_name("NewFile")), "writing tools ask");
    assert!(asks(by_name("RunCommand")));
    assert!(!asks(by_name("AwaitApproval")));
    let annotations = by_name("ListFiles").annotations.clone().unwrap();
    assert_eq!(annotations.read_only_hint, Some(true));
    assert_eq!(annotations.destructive_hint, Some(false));
    let run = by_name("RunCommand").annotations.clone().unwrap();
    assert_eq!(run.destructive_hint, Some(true));
    assert_eq!(run.open_world_hint, Some(true));
    assert_eq!(
        by_name("ListFiles").input_schema.get("type"),
        Some(&serde_json::Value::String("object".into()))
    );
    assert!(listing.tool("AwaitApproval").is_some());
    assert!(listing.tool("Nope").is_none());

    // Output schemas: an allowed tool keeps its own; a tool that asks has none, since its
    // answer may be the "waiting for approval" notice.
    assert!(by_name("ListFiles").output_schema.is_some());
    assert!(
        by_name("RunCommand").output_schema.is_none(),
        "RunCommand asks claude-code, so it is listed without an output schema"
    );
    let for_trusted = listing.tools(&handle, &client("trusted"));
    let run_trusted = for_trusted
        .iter()
        .find(|tool| tool.name == "RunCommand")
        .unwrap();
    assert!(!asks(run_trusted));
    assert!(
        run_trusted.output_schema.is_some(),
        "RunCommand is allowed for `trusted`, so it keeps its output schema"
    );
    assert!(listing.tool("RunCommand").unwrap().output_schema.is_some());
    // A client is its token: calling itself `trusted` does not bring `trusted`'s rule along.
    let spoof = requester_for(
        Some(&Credential::Client(ClientIdentity {
            id: "id-claude-code".into(),
            name: "claude-code".into(),
            scope: souz_protocol::ClientScope::Mcp,
        })),
        Some(&Implementation::new("trusted", "9.9")),
        "s".to_owned(),
    );
    let for_spoof = listing.tools(&handle, &spoof);
    let run_spoof = for_spoof
        .iter()
        .find(|tool| tool.name == "RunCommand")
        .unwrap();
    assert!(asks(run_spoof), "a spoofed clientInfo inherits nothing");

    // The signature (what decides `tools/list_changed`) differs exactly where the lists do.
    let code = listing.signature(&handle, &client("claude-code"));
    let desktop = listing.signature(&handle, &client("claude-ai"));
    assert_ne!(code, desktop);
    assert_eq!(code, listing.signature(&handle, &client("Claude-Code")));
    runtime.shutdown("test").await.unwrap();
}

#[test]
fn titles_and_output_schemas() {
    assert_eq!(title("EditFile"), "Edit file");
    assert_eq!(title("FindFilesByName"), "Find files by name");
    assert_eq!(title("X"), "X");
    let spec = crate::tools::ToolSpec {
        name: "Odd",
        description: "odd",
        category: souz_protocol::ToolCategory::Souz,
        risk: souz_protocol::Risk::ReadOnly,
        annotations: souz_protocol::ToolAnnotations::for_risk(souz_protocol::Risk::ReadOnly),
        input_schema: serde_json::json!({"type": "object", "properties": {}}),
        output_schema: Some(serde_json::json!({"type": "array"})),
        always_asks: false,
    };
    assert!(
        mcp_tool(&spec).output_schema.is_none(),
        "MCP output schemas describe objects; others are left out"
    );
}

#[test]
fn results_keep_text_structure_and_error_flag() {
    let ok = tool_result(&ToolResult {
        text: "{\"a\":1}".into(),
        structured: Some(serde_json::json!({"a": 1})),
        is_error: false,
    });
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(ok.structured_content, Some(serde_json::json!({"a": 1})));
    let failed = tool_result(&ToolResult {
        text: "The person denied this call".into(),
        structured: None,
        is_error: true,
    });
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(
        failed.content[0].as_text().map(|text| text.text.as_str()),
        Some("The person denied this call")
    );
}

#[test]
fn a_pending_result_names_the_approval_and_how_to_continue() {
    let state = CallState {
        status: souz_protocol::ToolCallStatus::WaitingApproval,
        summary: Some("Create ~/notes.md (3 lines)".into()),
        approval_id: Some("0190-abc".into()),
        result: None,
        progress: None,
    };
    let result = pending_result("NewFile", &state);
    assert_eq!(
        result.is_error,
        Some(false),
        "the notice is a normal result"
    );
    let text = &result.content[0].as_text().unwrap().text;
    for part in [
        "0190-abc",
        "Create ~/notes.md",
        "AwaitApproval",
        "Nothing has run",
        "\"approval_id\"",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    let meta = result.meta.unwrap();
    assert_eq!(meta.0[META_APPROVAL_ID], "0190-abc");
    assert_eq!(meta.0[META_STATUS], "waiting_approval");
    let running = CallState {
        status: souz_protocol::ToolCallStatus::Running,
        ..state
    };
    let result = pending_result("RunCommand", &running);
    assert_eq!(result.is_error, Some(false));
    let text = &result.content[0].as_text().unwrap().text;
    assert!(
        text.contains("still running") && text.contains("\"approval_id\""),
        "{text}"
    );
}

#[test]
fn await_approval_advertises_snake_case_and_accepts_camel_case() {
    let tool = super::calls::await_approval_tool();
    let properties = tool.input_schema["properties"].as_object().unwrap();
    let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["approval_id", "wait_seconds"]);
    assert_eq!(
        tool.input_schema["required"],
        serde_json::json!(["approval_id"])
    );
    for arguments in [
        serde_json::json!({"approval_id": "a", "wait_seconds": 3}),
        serde_json::json!({"approvalId": "a", "waitSeconds": 3}),
    ] {
        let parsed: super::calls::AwaitArgs =
            crate::tools::parse_arguments(arguments.clone()).unwrap();
        assert_eq!(parsed.approval_id, "a", "{arguments}");
        assert_eq!(parsed.wait_seconds, Some(3), "{arguments}");
    }
    assert!(
        crate::tools::parse_arguments::<super::calls::AwaitArgs>(
            serde_json::json!({"approval_id": "a", "extra": 1})
        )
        .is_err()
    );
}

/// The answer the door gives instead of passing the message on, as status and JSON body.
fn rejected(body: &str, in_session: bool) -> Option<(StatusCode, serde_json::Value)> {
    let rejection = check(&Bytes::from(body.to_owned()), in_session).err()?;
    let response = axum::response::IntoResponse::into_response(rejection);
    let status = response.status();
    let body =
        futures::executor::block_on(axum::body::to_bytes(response.into_body(), 1 << 20)).unwrap();
    Some((status, serde_json::from_slice(&body).unwrap()))
}

#[test]
fn the_front_door_answers_protocol_problems_with_json_rpc_errors() {
    let cases = [
        ("{oops", -32700, serde_json::Value::Null),
        ("[]", -32600, serde_json::Value::Null),
        ("\"text\"", -32600, serde_json::Value::Null),
        (r#"{"id":3,"method":"ping"}"#, -32600, serde_json::json!(3)),
        (
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"arguments":1}}"#,
            -32602,
            serde_json::json!("a"),
        ),
    ];
    for (body, code, id) in cases {
        let (status, error) = rejected(body, true).unwrap_or_else(|| panic!("{body} passed"));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(error["error"]["code"], code, "{body}: {error}");
        assert_eq!(error["id"], id, "{body}");
        assert_eq!(error["jsonrpc"], "2.0");
    }

    // Unknown methods and a bare discover probe outside a session: -32601 at once.
    for body in [
        r#"{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"souz/nothing"}"#,
    ] {
        let (status, error) = rejected(body, false).unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(error["error"]["code"], -32601, "{body}");
        assert_eq!(error["id"], 9);
    }
    // Inside a session rmcp answers unknown methods itself, but a bare discover probe is
    // answered here as well (rmcp would say 400 -32602).
    assert!(rejected(r#"{"jsonrpc":"2.0","id":9,"method":"souz/nothing"}"#, true).is_none());
    let (status, error) = rejected(
        r#"{"jsonrpc":"2.0","id":10,"method":"server/discover","params":{}}"#,
        true,
    )
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(error["error"]["code"], -32601, "{error}");
    assert_eq!(error["id"], 10);
    // A discover that names its protocol version is the 2026-07-28 handshake: rmcp's.
    assert!(
        rejected(
            r#"{"jsonrpc":"2.0","id":11,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            false,
        )
        .is_none()
    );

    // Well-formed messages pass untouched.
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ListFiles","arguments":{}}}"#,
    ] {
        assert!(rejected(body, true).is_none(), "{body}");
    }
}

#[test]
fn origins_get_explicit_ports_for_rmcp() {
    assert_eq!(
        explicit_port("http://127.0.0.1:8383"),
        "http://127.0.0.1:8383"
    );
    assert_eq!(
        explicit_port("http://tauri.localhost"),
        "http://tauri.localhost:80"
    );
    assert_eq!(
        explicit_port("https://example.com"),
        "https://example.com:443"
    );
    assert_eq!(explicit_port("tauri://localhost"), "tauri://localhost:*");
    assert_eq!(explicit_port("http://[::1]:9000"), "http://[::1]:9000");
}

#[test]
fn requesters_are_their_token_with_client_info_as_a_detail() {
    let credential = Credential::Client(ClientIdentity {
        id: "c1".into(),
        name: "claude-code".into(),
        scope: souz_protocol::ClientScope::Mcp,
    });
    let requester = requester_for(
        Some(&credential),
        Some(&Implementation::new(" the souz CLI ", "2.1.0")),
        "sess".to_owned(),
    );
    assert_eq!(
        requester,
        Requester::Mcp {
            client_name: "the souz CLI".into(),
            client_version: "2.1.0".into(),
            session_id: "sess".into(),
            token_id: "c1".into(),
            token_name: "claude-code".into(),
        }
    );
    assert_eq!(
        requester.label(),
        "claude-code (MCP client \"the souz CLI 2.1.0\")"
    );
    let operator = requester_for(Some(&Credential::Operator), None, String::new());
    assert_eq!(
        operator.label(),
        "operator (MCP client \"an unnamed MCP client\")"
    );
    // Without a credential (the perimeter always adds one) the requester is nobody's.
    let anonymous = requester_for(None, None, String::new());
    assert!(matches!(&anonymous, Requester::Mcp { token_id, .. } if token_id.is_empty()));
}

#[test]
fn instructions_explain_souz_and_the_wait() {
    let settings = Settings::from_config(&crate::config::McpConfig::default());
    assert_eq!(settings.approval_wait.as_secs(), 50);
    let text = instructions(&settings);
    for part in [
        "Souz",
        "approval",
        "50 seconds",
        "AwaitApproval",
        "`approval_id`",
        "denied",
    ] {
        assert!(text.contains(part), "{part}");
    }
}

/// The misbehaving Python SDK server of `tests/clients` (installed by `scripts/test.sh`).
fn external_server(state: &std::path::Path, expose: bool) -> crate::config::McpServerConfig {
    let clients = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/clients");
    let python = clients.join(".venv/bin/python");
    assert!(
        python.exists(),
        "run scripts/test.sh to install the MCP test servers"
    );
    crate::config::McpServerConfig {
        command: python.display().to_string(),
        args: vec![
            clients
                .join("python/misbehaving_server.py")
                .display()
                .to_string(),
            state.display().to_string(),
        ],
        expose_to_mcp_clients: expose,
        ..crate::config::McpServerConfig::default()
    }
}

#[tokio::test]
async fn external_tools_are_re_exported_per_server_and_called_as_the_client() {
    let exposed = tempfile::tempdir().unwrap();
    let hidden = tempfile::tempdir().unwrap();
    let (exposed_config, hidden_config) = (
        external_server(exposed.path(), true),
        external_server(hidden.path(), false),
    );
    let runtime = TestRuntime::builder()
        .flat_home()
        .with_config(move |config| {
            config.mcp.servers.insert("odd".into(), exposed_config);
            config.mcp.servers.insert("hidden".into(), hidden_config);
            config
                .approvals
                .rules
                .push(rule(Action::Allow, "mcp__odd__*", "mcp:trusted"));
        })
        .start()
        .await;
    let handle = runtime.handle();
    for _ in 0..600 {
        let names: Vec<String> = handle.tools().into_iter().map(|tool| tool.name).collect();
        if names.iter().any(|name| name == "mcp__odd__echo")
            && names.iter().any(|name| name == "mcp__hidden__echo")
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let listing = Listing::new(handle.tool_specs());
    let listed = listing.tools(&handle, &client("claude-code"));
    let echo = listed
        .iter()
        .find(|tool| tool.name == "mcp__odd__echo")
        .expect("the exposed server's tool is listed");
    assert!(asks(echo), "an external tool asks by default");
    assert!(
        listed
            .iter()
            .all(|tool| !tool.name.starts_with("mcp__hidden__"))
    );
    let trusted = listing.tools(&handle, &client("trusted"));
    let echo = trusted
        .iter()
        .find(|tool| tool.name == "mcp__odd__echo")
        .unwrap();
    assert!(
        !asks(echo),
        "a rule allows the server's tools for this client"
    );

    let call = |tool: &str, requester: Requester| {
        let handle = handle.clone();
        let request = crate::tools::gate::CallRequest {
            tool: tool.to_owned(),
            arguments: serde_json::json!({"text": "via souz"}),
            requester,
        };
        async move {
            let mut call = handle.start_call(request).await.unwrap();
            call.wait_for(std::time::Duration::from_secs(30)).await
        }
    };
    let done = call("mcp__odd__echo", client("trusted")).await;
    assert_eq!(
        done.status,
        souz_protocol::ToolCallStatus::Succeeded,
        "{done:?}"
    );
    assert_eq!(done.result.unwrap().text, "via souz");
    let refused = call("mcp__hidden__echo", client("trusted")).await;
    assert_eq!(refused.status, souz_protocol::ToolCallStatus::Failed);
    assert!(refused.result.unwrap().text.contains("no tool named"));
    runtime.shutdown("test").await.unwrap();
}

/// Usable skills are prompts (their instructions as the text); a disabled one is neither listed
/// nor served; an install and a disable are announced to a following session.
#[tokio::test]
async fn usable_skills_are_prompts_and_their_changes_are_announced() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let runtime = TestRuntime::builder().flat_home().start().await;
    let handle = runtime.handle();
    let folder = runtime.home().path().join("sources").join("notes");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        "---\nname: notes\ndescription: Take notes.\n---\nWrite Markdown files.\n",
    )
    .unwrap();
    assert!(prompts::list(&handle).await.unwrap().is_empty());

    let told = Arc::new(AtomicUsize::new(0));
    let wake = Arc::new(tokio::sync::Notify::new());
    let stop = tokio_util::sync::CancellationToken::new();
    let followed = prompts::start(&handle).await;
    let follower = {
        let (handle, told, wake, stop) = (handle.clone(), told.clone(), wake.clone(), stop.clone());
        crate::tasks::spawn_in_test(async move {
            let notify = || async {
                told.fetch_add(1, Ordering::SeqCst);
                wake.notify_one();
                true
            };
            prompts::follow_from(&handle, followed, stop.cancelled(), notify).await;
        })
    };
    handle
        .install_skill(folder.to_str().unwrap())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), wake.notified())
        .await
        .expect("the install is announced");
    let listed = prompts::list(&handle).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "notes");
    assert_eq!(listed[0].description.as_deref(), Some("Take notes."));
    let got = prompts::get(&handle, "notes").await.unwrap().unwrap();
    let text = serde_json::to_value(&got.messages[0]).unwrap();
    assert_eq!(
        text["content"]["text"],
        "Skill `notes`: Take notes.\n\nWrite Markdown files."
    );
    assert_eq!(text["role"], "user");

    handle.set_skill_enabled("notes", false).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), wake.notified())
        .await
        .expect("the disable is announced");
    assert!(prompts::list(&handle).await.unwrap().is_empty());
    assert!(prompts::get(&handle, "notes").await.unwrap().is_none());
    assert_eq!(told.load(Ordering::SeqCst), 2);
    stop.cancel();
    follower.await.unwrap();
}
