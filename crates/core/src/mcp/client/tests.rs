//! The MCP client against servers nobody here wrote: a misbehaving server built with the
//! official Python SDK (`tests/clients/python/misbehaving_server.py`: crashes, hangs, fails)
//! and `@modelcontextprotocol/server-everything` over stdio and streamable HTTP, each inside a
//! whole runtime, every call through the gate. The servers are installed by `scripts/test.sh`
//! into `tests/clients/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use souz_protocol::{DecisionRequest, Requester, ToolCallStatus, Verdict};

use crate::approvals::Audience;
use crate::config::McpServerConfig;
use crate::testing::TestRuntime;
use crate::tools::gate::{CallRequest, CallState};

fn clients() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/clients")
}

fn installed(path: PathBuf) -> String {
    assert!(
        path.exists(),
        "{} is missing: run scripts/test.sh, which installs the MCP test servers",
        path.display()
    );
    path.display().to_string()
}

fn misbehaving(state: &Path) -> McpServerConfig {
    McpServerConfig {
        command: installed(clients().join(".venv/bin/python")),
        args: vec![
            installed(clients().join("python/misbehaving_server.py")),
            state.display().to_string(),
        ],
        tool_timeout_seconds: 2,
        ..McpServerConfig::default()
    }
}

pub(crate) fn everything_script() -> String {
    installed(clients().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
}

pub(crate) fn node() -> String {
    installed(clients().join("node_modules/.bin/node"))
}

async fn runtime_with(servers: Vec<(&'static str, McpServerConfig)>) -> TestRuntime {
    TestRuntime::builder()
        .with_config(move |config| {
            for (name, server) in servers {
                config.mcp.servers.insert(name.to_owned(), server);
            }
        })
        .start()
        .await
}

/// Waits (bounded) until the gate lists `name`.
pub(crate) async fn wait_for_tool(runtime: &TestRuntime, name: &str) {
    let handle = runtime.handle();
    for _ in 0..600 {
        if handle.tools().iter().any(|tool| tool.name == name) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{name} was never listed; servers: {:?}",
        handle.mcp_servers().await
    );
}

async fn start(
    runtime: &TestRuntime,
    tool: &str,
    arguments: Value,
) -> crate::tools::gate::CallHandle {
    runtime
        .handle()
        .start_call(CallRequest {
            tool: tool.to_owned(),
            arguments,
            requester: Requester::Api,
        })
        .await
        .unwrap()
}

/// Approves (or denies) the call's pending approval once it is asked, then waits for its end.
async fn decide_and_finish(
    runtime: &TestRuntime,
    call: &mut crate::tools::gate::CallHandle,
    verdict: Verdict,
) -> CallState {
    let mut approval = None;
    for _ in 0..400 {
        approval = call.state().approval_id;
        if approval.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let approval = approval.expect("the call never asked");
    runtime
        .handle()
        .decide_approval(
            &approval,
            DecisionRequest::once(verdict, "test"),
            &Audience::Everyone,
        )
        .await
        .unwrap();
    call.wait_for(Duration::from_secs(60)).await
}

fn text(state: &CallState) -> &str {
    state
        .result
        .as_ref()
        .map_or("", |result| result.text.as_str())
}

#[tokio::test]
async fn tools_are_discovered_and_every_call_asks_first() {
    let state = tempfile::tempdir().unwrap();
    // No timeout is tested here: a loaded machine (other tests' servers) may take over 2 s.
    let server = McpServerConfig {
        tool_timeout_seconds: 20,
        ..misbehaving(state.path())
    };
    let runtime = runtime_with(vec![("odd", server)]).await;
    let handle = runtime.handle();
    wait_for_tool(&runtime, "mcp__odd__echo").await;
    let names: Vec<String> = handle
        .tools()
        .into_iter()
        .map(|tool| tool.name)
        .filter(|name| name.starts_with("mcp__"))
        .collect();
    assert_eq!(
        names,
        [
            "mcp__odd__crash_once",
            "mcp__odd__echo",
            "mcp__odd__fail",
            "mcp__odd__hang"
        ]
    );
    let echo = handle
        .tools()
        .into_iter()
        .find(|tool| tool.name == "mcp__odd__echo")
        .unwrap();
    assert_eq!(echo.description, "[MCP:odd] Echoes the text back.");
    assert_eq!(echo.policy.action, souz_protocol::Action::Ask);

    let mut call = start(&runtime, "mcp__odd__echo", json!({"text": "hi there"})).await;
    let approved = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(approved.status, ToolCallStatus::Succeeded, "{approved:?}");
    assert_eq!(text(&approved), "hi there");

    let mut call = start(&runtime, "mcp__odd__echo", json!({"text": "never"})).await;
    let denied = decide_and_finish(&runtime, &mut call, Verdict::Deny).await;
    assert_eq!(denied.status, ToolCallStatus::Denied, "{denied:?}");

    let mut call = start(&runtime, "mcp__odd__fail", json!({})).await;
    let failed = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(failed.status, ToolCallStatus::Failed, "{failed:?}");
    // The SDK hides the exception; its error result says which tool failed.
    assert!(
        text(&failed).contains("Error executing tool fail"),
        "{failed:?}"
    );

    let servers = handle.mcp_servers().await.servers;
    assert_eq!(servers.len(), 1);
    assert!(servers[0].connected && servers[0].tools == 4, "{servers:?}");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_crashed_server_is_restarted_and_the_call_sent_once_more() {
    let state = tempfile::tempdir().unwrap();
    let runtime = runtime_with(vec![("odd", misbehaving(state.path()))]).await;
    wait_for_tool(&runtime, "mcp__odd__crash_once").await;
    let mut call = start(&runtime, "mcp__odd__crash_once", json!({})).await;
    let done = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    assert_eq!(text(&done), "recovered");
    let starts = std::fs::read_to_string(state.path().join("starts")).unwrap();
    assert_eq!(
        starts.lines().count(),
        2,
        "one start, one restart: {starts}"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_hanging_call_is_cut_by_its_timeout_and_the_server_stays_usable() {
    let state = tempfile::tempdir().unwrap();
    let runtime = runtime_with(vec![("odd", misbehaving(state.path()))]).await;
    wait_for_tool(&runtime, "mcp__odd__hang").await;
    let mut call = start(&runtime, "mcp__odd__hang", json!({})).await;
    let cut = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(cut.status, ToolCallStatus::Failed, "{cut:?}");
    assert!(text(&cut).contains("did not answer within 2 s"), "{cut:?}");
    assert!(state.path().join("hanging").exists());

    let mut call = start(&runtime, "mcp__odd__echo", json!({"text": "still here"})).await;
    let echoed = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(text(&echoed), "still here", "{echoed:?}");
    let starts = std::fs::read_to_string(state.path().join("starts")).unwrap();
    assert_eq!(
        starts.lines().count(),
        1,
        "no restart for a timeout: {starts}"
    );
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn a_server_that_cannot_start_is_reported_and_others_still_work() {
    let state = tempfile::tempdir().unwrap();
    let broken = McpServerConfig {
        command: "/nonexistent/mcp-server".into(),
        ..McpServerConfig::default()
    };
    let runtime = runtime_with(vec![("odd", misbehaving(state.path())), ("gone", broken)]).await;
    let handle = runtime.handle();
    wait_for_tool(&runtime, "mcp__odd__echo").await;
    let test = handle.test_mcp_server("gone").await.unwrap();
    assert!(!test.ok);
    assert!(
        test.error
            .as_deref()
            .unwrap_or("")
            .contains("/nonexistent/mcp-server"),
        "{test:?}"
    );
    let status = handle.mcp_servers().await.servers;
    let gone = status.iter().find(|server| server.name == "gone").unwrap();
    assert!(!gone.connected && gone.error.is_some(), "{gone:?}");
    assert!(handle.test_mcp_server("nobody").await.is_err());
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn server_everything_over_stdio_echoes_through_the_gate() {
    let runtime = runtime_with(vec![(
        "everything",
        McpServerConfig {
            command: node(),
            args: vec![everything_script()],
            ..McpServerConfig::default()
        },
    )])
    .await;
    wait_for_tool(&runtime, "mcp__everything__echo").await;
    let mut call = start(
        &runtime,
        "mcp__everything__echo",
        json!({"message": "ping"}),
    )
    .await;
    // The approval says which server the tool belongs to (Queue page, notifications, tray).
    let state = call.settled().await;
    let approval_id = state.approval_id.expect("the call asks");
    let approval = runtime.handle().approval(&approval_id).await.unwrap();
    assert_eq!(
        approval.server.as_deref(),
        Some("everything"),
        "{approval:?}"
    );
    let done = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    assert!(text(&done).contains("ping"), "{done:?}");
    runtime.shutdown("test").await.unwrap();
}

#[tokio::test]
async fn server_everything_over_streamable_http_needs_private_network_allowed() {
    let port = free_port();
    let mut server = tokio::process::Command::new(node())
        .arg(everything_script())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let refused = McpServerConfig {
        url: url.clone(),
        ..McpServerConfig::default()
    };
    let allowed = McpServerConfig {
        url,
        allow_private_network: true,
        ..McpServerConfig::default()
    };
    let runtime = runtime_with(vec![("loopback", refused), ("everything", allowed)]).await;
    let handle = runtime.handle();
    wait_for_tool(&runtime, "mcp__everything__echo").await;
    let test = handle.test_mcp_server("loopback").await.unwrap();
    assert!(!test.ok, "{test:?}");
    assert!(test.error.unwrap_or_default().contains("refused"));

    let mut call = start(
        &runtime,
        "mcp__everything__echo",
        json!({"message": "over http"}),
    )
    .await;
    let done = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    assert!(text(&done).contains("over http"), "{done:?}");
    runtime.shutdown("test").await.unwrap();
    server.kill().await.unwrap();
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

pub(crate) fn allow_rule(tool: &str) -> crate::config::RuleConfig {
    crate::config::RuleConfig {
        action: souz_protocol::Action::Allow,
        tool: Some(tool.into()),
        path: None,
        command: None,
        domain: None,
        risk: None,
        requester: None,
        note: None,
    }
}

/// server-everything's long-running operation reports progress under the token Souz sends;
/// each report reaches whoever follows the gate's call, in order, with its total.
#[tokio::test]
async fn progress_of_an_external_call_reaches_the_caller() {
    let runtime = TestRuntime::builder()
        .with_config(|config| {
            config.mcp.servers.insert(
                "everything".into(),
                McpServerConfig {
                    command: node(),
                    args: vec![everything_script()],
                    ..McpServerConfig::default()
                },
            );
            config.approvals.rules.push(allow_rule(
                "mcp__everything__trigger-long-running-operation",
            ));
        })
        .start()
        .await;
    let tool = "mcp__everything__trigger-long-running-operation";
    wait_for_tool(&runtime, tool).await;
    let mut call = start(&runtime, tool, json!({"duration": 1, "steps": 4})).await;
    let mut seen: Vec<(f64, Option<f64>)> = Vec::new();
    let mut last = None;
    let done = loop {
        let state = tokio::time::timeout(Duration::from_secs(30), call.progressed(last.as_ref()))
            .await
            .expect("the call neither ended nor reported progress");
        if state.status.is_final() {
            break state;
        }
        if let Some(report) = &state.progress {
            seen.push((report.progress, report.total));
        }
        last = state.progress;
    };
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    assert!(text(&done).contains("Steps: 4"), "{done:?}");
    // A watch may skip a report overwritten before it looked (the last step is followed at
    // once by the result); what it saw is the server's steps, in order, with their total.
    assert!(
        seen.len() >= 2,
        "progress did not reach the caller: {seen:?}"
    );
    assert!(
        seen.windows(2).all(|pair| pair[0].0 < pair[1].0),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|(step, total)| (1.0..=4.0).contains(step) && *total == Some(4.0)),
        "{seen:?}"
    );
    runtime.shutdown("test").await.unwrap();
}

mod bounds;
mod oauth;
mod oauth_mock;
mod trust;

/// Waits (bounded) until the status of `name` satisfies `settled`; the last status.
async fn wait_status(
    runtime: &TestRuntime,
    name: &str,
    settled: impl Fn(Option<&souz_protocol::McpServerStatus>) -> bool,
) {
    let handle = runtime.handle();
    for _ in 0..600 {
        let servers = handle.mcp_servers().await.servers;
        if settled(servers.iter().find(|server| server.name == name)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name} never settled: {:?}", handle.mcp_servers().await);
}

#[tokio::test]
async fn servers_added_changed_turned_off_and_removed_apply_without_a_restart() {
    let runtime = runtime_with(Vec::new()).await;
    let handle = runtime.handle();
    let put = |extra: Value| {
        let mut settings = json!({"command": node(), "args": [everything_script()]});
        if let (Some(settings), Some(extra)) = (settings.as_object_mut(), extra.as_object()) {
            settings.extend(extra.clone());
        }
        souz_protocol::McpServerPut {
            settings: settings.as_object().cloned().unwrap_or_default(),
            revision: None,
        }
    };
    let listed = |name: &str| handle.tools().iter().any(|tool| tool.name == name);

    // Added: started and its tools listed, nothing waits for a restart.
    let saved = handle
        .put_mcp_server("everything", put(json!({})))
        .await
        .unwrap();
    assert!(saved.restart_required.is_empty(), "{saved:?}");
    wait_for_tool(&runtime, "mcp__everything__echo").await;
    wait_status(&runtime, "everything", |status| {
        status.is_some_and(|s| s.connected && s.tools > 0 && !s.restart_required)
    })
    .await;
    let mut call = start(
        &runtime,
        "mcp__everything__echo",
        json!({"message": "live"}),
    )
    .await;
    let done = decide_and_finish(&runtime, &mut call, Verdict::Approve).await;
    assert_eq!(done.status, ToolCallStatus::Succeeded, "{done:?}");
    assert!(text(&done).contains("live"), "{done:?}");

    // Changed: the running server is replaced by one with the new settings.
    handle
        .put_mcp_server("everything", put(json!({"tool_timeout_seconds": 7})))
        .await
        .unwrap();
    wait_status(&runtime, "everything", |status| {
        status.is_some_and(|s| {
            s.settings["tool_timeout_seconds"] == 7 && s.connected && !s.restart_required
        })
    })
    .await;
    wait_for_tool(&runtime, "mcp__everything__echo").await;

    // Off: stopped, its tools gone from every listing.
    let saved = handle
        .set_mcp_server_enabled("everything", false)
        .await
        .unwrap();
    assert!(saved.restart_required.is_empty(), "{saved:?}");
    wait_status(&runtime, "everything", |status| {
        status.is_some_and(|s| !s.enabled && !s.connected && s.tools == 0 && !s.restart_required)
    })
    .await;
    assert!(!listed("mcp__everything__echo"));

    // On again, then removed.
    handle
        .set_mcp_server_enabled("everything", true)
        .await
        .unwrap();
    wait_for_tool(&runtime, "mcp__everything__echo").await;
    handle.remove_mcp_server("everything").await.unwrap();
    wait_status(&runtime, "everything", |status| status.is_none()).await;
    for _ in 0..600 {
        if !listed("mcp__everything__echo") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !listed("mcp__everything__echo"),
        "a removed server's tools go"
    );
    runtime.shutdown("test").await.unwrap();
}
