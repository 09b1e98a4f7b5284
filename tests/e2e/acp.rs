//! `souz acp` end to end: an ACP client from the `agent-client-protocol` crate (its client
//! side) spawns the real `souz acp` against the real daemon, whose agent talks to the fake
//! OpenAI server. Turns whose tool call needs approval are answered from the editor (allow:
//! the tool ran; reject: it did not) and from the Souz API while the editor's permission
//! request is open (the turn goes on and the editor sees the call's updates); a turn cancelled
//! mid-answer ends with `cancelled`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, Implementation, InitializeRequest, NewSessionRequest,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, StopReason, ToolCallStatus,
};
use agent_client_protocol::{ByteStreams, Client};
use serde_json::json;
use souz_testkit::openai;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::chats::{COMPLETIONS, daemon, provider};

/// How the test editor answers a permission request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Answer {
    Allow,
    Reject,
    /// Keeps the request open (the person answers in Souz instead).
    Hold,
}

/// What the test editor saw.
#[derive(Default)]
struct Seen {
    updates: Vec<SessionUpdate>,
    asked: Vec<RequestPermissionRequest>,
}

fn write(path: &str) -> String {
    json!({"skillId": "NewFile", "arguments": {"path": path, "text": "hello\n"}}).to_string()
}

/// The text the agent streamed, and the statuses each tool call went through, from `from` on.
fn text_and_statuses(seen: &Seen, from: usize) -> (String, Vec<(String, ToolCallStatus)>) {
    let mut text = String::new();
    let mut statuses = Vec::new();
    for update in &seen.updates[from..] {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let ContentBlock::Text(piece) = &chunk.content {
                    text.push_str(&piece.text);
                }
            }
            SessionUpdate::ToolCall(call) => {
                statuses.push((call.tool_call_id.0.to_string(), call.status));
            }
            SessionUpdate::ToolCallUpdate(update) => {
                if let Some(status) = update.fields.status {
                    statuses.push((update.tool_call_id.0.to_string(), status));
                }
            }
            _ => {}
        }
    }
    (text, statuses)
}

#[test]
fn an_editor_runs_turns_answers_permissions_and_cancels_over_acp() {
    let setup = provider();
    for (call, path, answer) in [
        ("w1", "allowed.txt", "Wrote it."),
        ("w2", "rejected.txt", "Not written."),
        ("w3", "from-souz.txt", "Written after all."),
    ] {
        setup.provider.push(
            COMPLETIONS,
            openai::tool_calls(&[(call, "RunSkillCommand", &write(path))], 2),
        );
        setup.provider.push(COMPLETIONS, openai::text(&[answer]));
    }
    // The fourth turn starts answering, then the model goes silent until cancelled.
    setup
        .provider
        .push(COMPLETIONS, openai::text_frames(&["Thinking"]).hang());
    let daemon = daemon(&setup);
    let home = daemon.user_home();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut child = tokio::process::Command::from(daemon.cli())
            .arg("acp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let transport = ByteStreams::new(
            child.stdin.take().unwrap().compat_write(),
            child.stdout.take().unwrap().compat(),
        );
        let seen = Arc::new(Mutex::new(Seen::default()));
        let answer = Arc::new(Mutex::new(Answer::Allow));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (on_update, on_permission) = (seen.clone(), seen.clone());
        let (answering, holding) = (answer.clone(), held.clone());
        Client
            .v1()
            .name("test-editor")
            .on_receive_notification(
                async move |notification: SessionNotification, _connection| {
                    on_update.lock().unwrap().updates.push(notification.update);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .on_receive_request(
                async move |request: RequestPermissionRequest, responder, _connection| {
                    on_permission.lock().unwrap().asked.push(request.clone());
                    let kind = *answering.lock().unwrap();
                    let option = match kind {
                        Answer::Allow => "allow_once",
                        Answer::Reject => "reject",
                        Answer::Hold => {
                            holding.lock().unwrap().push(responder);
                            return Ok(());
                        }
                    };
                    assert!(
                        request
                            .options
                            .iter()
                            .any(|o| o.option_id.0.as_ref() == option),
                        "{:?}",
                        request.options
                    );
                    responder.respond(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                            option.to_owned(),
                        )),
                    ))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_with(transport, async |connection| {
                let initialized = connection
                    .send_request(
                        InitializeRequest::new(ProtocolVersion::V1)
                            .client_info(Implementation::new("test-editor", "1.0")),
                    )
                    .block_task()
                    .await?;
                assert_eq!(
                    initialized.agent_info.map(|info| info.name).as_deref(),
                    Some("souz")
                );
                let session = connection
                    .send_request(NewSessionRequest::new(home.clone()))
                    .block_task()
                    .await?
                    .session_id;
                let chats = daemon.get("/v1/chats?limit=100").json();
                assert!(
                    chats.to_string().contains(&*session.0)
                        && chats.to_string().contains("test-editor: "),
                    "the session's chat, titled for the editor: {chats}"
                );
                let prompt = |text: &str| {
                    connection
                        .send_request(PromptRequest::new(
                            session.clone(),
                            vec![ContentBlock::from(text.to_owned())],
                        ))
                        .block_task()
                };

                // (a) Allowed from the editor: the tool ran and the turn says so.
                let from = seen.lock().unwrap().updates.len();
                let ended = prompt("Write allowed.txt").await?;
                assert_eq!(ended.stop_reason, StopReason::EndTurn);
                assert_eq!(
                    std::fs::read_to_string(home.join("allowed.txt")).unwrap(),
                    "hello\n"
                );
                let (text, statuses) = text_and_statuses(&seen.lock().unwrap(), from);
                assert_eq!(text, "Wrote it.");
                let kinds: Vec<_> = statuses.iter().map(|(_, status)| *status).collect();
                assert_eq!(
                    kinds.first(),
                    Some(&ToolCallStatus::Pending),
                    "{statuses:?}"
                );
                assert_eq!(
                    kinds.last(),
                    Some(&ToolCallStatus::Completed),
                    "{statuses:?}"
                );
                assert!(kinds.contains(&ToolCallStatus::InProgress), "{statuses:?}");
                assert_eq!(seen.lock().unwrap().asked.len(), 1);

                // (a) Rejected from the editor: the tool did not run.
                *answer.lock().unwrap() = Answer::Reject;
                let from = seen.lock().unwrap().updates.len();
                let ended = prompt("Write rejected.txt").await?;
                assert_eq!(ended.stop_reason, StopReason::EndTurn);
                assert!(!home.join("rejected.txt").exists());
                let (text, statuses) = text_and_statuses(&seen.lock().unwrap(), from);
                assert_eq!(text, "Not written.");
                assert_eq!(
                    statuses.last().map(|(_, status)| *status),
                    Some(ToolCallStatus::Failed),
                    "{statuses:?}"
                );
                assert_eq!(seen.lock().unwrap().asked.len(), 2);

                // (b) Answered from the Souz API while the editor's request is open.
                *answer.lock().unwrap() = Answer::Hold;
                let from = seen.lock().unwrap().updates.len();
                let running = prompt("Write from-souz.txt");
                let decide = async {
                    let deadline = Instant::now() + Duration::from_secs(30);
                    while held.lock().unwrap().is_empty() {
                        assert!(Instant::now() < deadline, "the editor was never asked");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    let pending = daemon.get("/v1/approvals?status=pending").json();
                    let id = pending["items"][0]["id"].as_str().unwrap().to_owned();
                    let decided = daemon.post(
                        &format!("/v1/approvals/{id}/decision"),
                        &json!({"decision": "approve", "via": "ui"}),
                    );
                    assert_eq!(decided.status, 200, "{}", decided.body);
                    id
                };
                let (ended, approval_id) = tokio::join!(running, decide);
                assert_eq!(ended?.stop_reason, StopReason::EndTurn);
                assert_eq!(
                    std::fs::read_to_string(home.join("from-souz.txt")).unwrap(),
                    "hello\n"
                );
                let (text, statuses) = text_and_statuses(&seen.lock().unwrap(), from);
                assert_eq!(text, "Written after all.");
                let kinds: Vec<_> = statuses.iter().map(|(_, status)| *status).collect();
                assert!(kinds.contains(&ToolCallStatus::InProgress), "{statuses:?}");
                assert_eq!(
                    kinds.last(),
                    Some(&ToolCallStatus::Completed),
                    "{statuses:?}"
                );
                // The editor's request was withdrawn, and its late answer is ignored: the
                // decision stays the UI's.
                let late = held.lock().unwrap().pop().unwrap();
                tokio::time::timeout(Duration::from_secs(10), late.cancellation().cancelled())
                    .await
                    .expect("the permission request was never withdrawn");
                let _ = late.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        "reject".to_owned(),
                    )),
                ));
                tokio::time::sleep(Duration::from_millis(200)).await;
                let approval = daemon.get(&format!("/v1/approvals/{approval_id}")).json();
                assert_eq!(approval["status"], "approved", "{approval}");
                assert_eq!(approval["decision"]["via"], "ui", "{approval}");

                // Cancelled mid-turn: the prompt ends with `cancelled`.
                let from = seen.lock().unwrap().updates.len();
                let running = prompt("Think hard");
                let cancel = async {
                    let deadline = Instant::now() + Duration::from_secs(30);
                    while !text_and_statuses(&seen.lock().unwrap(), from)
                        .0
                        .contains("Thinking")
                    {
                        assert!(Instant::now() < deadline, "no answer streamed");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    connection
                        .send_notification(CancelNotification::new(session.clone()))
                        .unwrap();
                };
                let (ended, ()) = tokio::time::timeout(Duration::from_secs(30), async {
                    tokio::join!(running, cancel)
                })
                .await
                .expect("the cancelled prompt never ended");
                assert_eq!(ended?.stop_reason, StopReason::Cancelled);
                Ok(())
            })
            .await
            .unwrap();
        drop(child);
    });
}

/// When the daemon is not running, `souz acp` says so on stderr (and how to start it), writes
/// nothing on stdout, and exits with a failure.
#[test]
fn without_a_running_daemon_it_fails_clearly_and_keeps_stdout_clean() {
    let stopped = souz_e2e::Daemon::start().stop("TERM");
    let output = souz_e2e::souz(stopped.home.path())
        .arg("acp")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("souz serve"), "{stderr}");
}
