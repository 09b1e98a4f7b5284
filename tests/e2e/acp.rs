//! `souz acp` end to end with a client nobody here wrote: the reference ACP client (the
//! `agent-client-protocol` Python package, `tests/clients/python/acp_editor.py`) spawns the
//! real `souz acp` against the real daemon, whose agent talks to the fake OpenAI server. Turns
//! whose tool call needs approval are answered from the editor (allow: the tool ran; reject:
//! it did not) and from the Souz API while the editor's permission request is open (the
//! request is withdrawn, the editor's late answer ignored, the turn goes on); a turn cancelled
//! mid-answer ends with `cancelled`. The script reports what it saw; this test asserts.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use souz_e2e::{clients, installed};
use souz_testkit::openai;

use crate::chats::{COMPLETIONS, daemon, provider};

fn write(path: &str) -> String {
    json!({"skillId": "NewFile", "arguments": {"path": path, "text": "hello\n"}}).to_string()
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

    // The person gives `souz acp` its token and gets the editor's entry; the entry holds no
    // token, the Souz home does.
    let configured = daemon.cli().arg("acp-config").output().unwrap();
    assert!(configured.status.success(), "{configured:?}");
    let entry: Value = serde_json::from_slice(&configured.stdout).unwrap();
    assert_eq!(
        entry["agent_servers"]["Souz"]["args"],
        json!(["acp"]),
        "{entry}"
    );
    assert!(!entry.to_string().contains("souz_client_"), "{entry}");
    let token = std::fs::read_to_string(daemon.home.path().join("clients/acp.token")).unwrap();
    let listed = daemon.get("/v1/clients").json();
    assert_eq!(listed["items"][0]["name"], "acp", "{listed}");
    assert_eq!(listed["items"][0]["scope"], "chats", "{listed}");

    // The editor runs `souz acp` as the person would: their environment, their Souz home.
    let cli = daemon.cli();
    let mut editor = Command::new(installed(clients().join(".venv/bin/python")));
    for (key, value) in cli.get_envs() {
        match value {
            Some(value) => editor.env(key, value),
            None => editor.env_remove(key),
        };
    }
    let mut editor = editor
        .arg(clients().join("python/acp_editor.py"))
        .arg(&home)
        .arg(cli.get_program())
        .arg("acp")
        .current_dir(&home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut to_editor = editor.stdin.take().unwrap();
    let mut lines = BufReader::new(editor.stdout.take().unwrap()).lines();
    let mut next = || -> Value {
        let line = lines
            .next()
            .expect("the editor script ended early")
            .unwrap();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    };

    // (b) While the editor holds its permission request open, the person approves in Souz.
    let holding = next();
    assert_eq!(holding["event"], "holding", "{holding}");
    let pending = daemon.get("/v1/approvals?status=pending").json();
    let approval_id = pending["items"][0]["id"].as_str().unwrap().to_owned();
    let decided = daemon.post(
        &format!("/v1/approvals/{approval_id}/decision"),
        &json!({"decision": "approve", "via": "ui"}),
    );
    assert_eq!(decided.status, 200, "{}", decided.body);
    writeln!(to_editor, "decided").unwrap();

    let report = next();
    assert_eq!(report["event"], "report", "{report}");
    let exited = next();
    assert_eq!(exited["event"], "exited", "{exited}");
    assert!(editor.wait().unwrap().success());
    // `souz acp` ended when the editor closed its stdin.
    assert_eq!(exited["code"], 0, "{exited}");

    assert_eq!(report["agent"], "souz", "{report}");
    assert_eq!(report["protocolVersion"], 1, "{report}");
    let session = report["session"].as_str().unwrap();
    let chats = daemon.get("/v1/chats?limit=100").json().to_string();
    assert!(
        chats.contains(session) && chats.contains("test-editor: "),
        "the session's chat, titled for the editor: {chats}"
    );
    let turn = |name: &str| report["turns"][name].clone();
    let statuses = |name: &str| -> Vec<String> {
        turn(name)["statuses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|status| status.as_str().unwrap().to_owned())
            .collect()
    };

    // (a) Allowed from the editor: the tool ran and the turn says so.
    let allowed = turn("allowed");
    assert_eq!(allowed["stopReason"], "end_turn", "{allowed}");
    assert_eq!(allowed["text"], "Wrote it.");
    assert_eq!(
        std::fs::read_to_string(home.join("allowed.txt")).unwrap(),
        "hello\n"
    );
    let seen = statuses("allowed");
    assert_eq!(
        seen.first().map(String::as_str),
        Some("pending"),
        "{seen:?}"
    );
    assert_eq!(
        seen.last().map(String::as_str),
        Some("completed"),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|status| status == "in_progress"),
        "{seen:?}"
    );

    // (a) Rejected from the editor: the tool did not run.
    let rejected = turn("rejected");
    assert_eq!(rejected["stopReason"], "end_turn", "{rejected}");
    assert_eq!(rejected["text"], "Not written.");
    assert!(!home.join("rejected.txt").exists());
    let seen = statuses("rejected");
    assert_eq!(seen.last().map(String::as_str), Some("failed"), "{seen:?}");

    // (b) Approved in Souz: the turn went on, the editor saw the call through.
    let from_souz = turn("fromSouz");
    assert_eq!(from_souz["stopReason"], "end_turn", "{from_souz}");
    assert_eq!(from_souz["text"], "Written after all.");
    assert_eq!(
        std::fs::read_to_string(home.join("from-souz.txt")).unwrap(),
        "hello\n"
    );
    let seen = statuses("fromSouz");
    assert!(
        seen.iter().any(|status| status == "in_progress"),
        "{seen:?}"
    );
    assert_eq!(
        seen.last().map(String::as_str),
        Some("completed"),
        "{seen:?}"
    );
    // The editor was asked three times, with the three options; the third request was
    // withdrawn, and its late "reject" changed nothing: the decision stays the UI's.
    let asked = report["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert_eq!(
        asked[0]["options"],
        json!([
            ["allow_once", "allow_once"],
            ["allow_suggested", "allow_always"],
            ["reject", "reject_once"]
        ])
    );
    assert_eq!(report["withdrawn"].as_array().unwrap().len(), 1, "{report}");
    let approval = daemon.get(&format!("/v1/approvals/{approval_id}")).json();
    assert_eq!(approval["status"], "approved", "{approval}");
    assert_eq!(approval["decision"]["via"], "ui", "{approval}");

    // The editor's approvals were answered with its own token, which reaches its chats only.
    let allowed_approval = daemon.get("/v1/approvals?limit=10").json();
    assert!(
        allowed_approval.to_string().contains("\"via\":\"acp\""),
        "{allowed_approval}"
    );
    let theirs = daemon
        .post("/v1/chats", &json!({"title": "Private"}))
        .json();
    let theirs = theirs["chat"]["id"].as_str().unwrap();
    let auth = format!("Bearer {}", token.trim());
    let status = |path: &str| {
        souz_e2e::http(
            &daemon.address,
            "GET",
            path,
            &[("Authorization", &auth)],
            b"",
        )
        .unwrap()
        .status
    };
    assert_eq!(status(&format!("/v1/chats/{session}/messages")), 200);
    assert_eq!(status(&format!("/v1/chats/{theirs}/messages")), 404);
    assert_eq!(status("/v1/chats"), 403);
    assert_eq!(status("/v1/config"), 403);

    // Cancelled mid-turn: the prompt ended with `cancelled`.
    let cancelled = turn("cancelled");
    assert_eq!(cancelled["stopReason"], "cancelled", "{cancelled}");
    assert!(
        cancelled["text"].as_str().unwrap().contains("Thinking"),
        "{cancelled}"
    );
}

/// When the daemon is not running, `souz acp` says so on stderr (and how to start it), writes
/// nothing on stdout, and exits with a failure.
#[test]
fn without_a_running_daemon_it_fails_clearly_and_keeps_stdout_clean() {
    let stopped = souz_e2e::Daemon::start().stop("TERM");
    let output = souz_e2e::souz(stopped.home.path())
        .arg("acp")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("souz serve"), "{stderr}");
}
